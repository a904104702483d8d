//! The sender's side of `kkrt16` (see the module doc for the message flow).

use super::{
    BIN_CHUNK, HASHES, MSG_SETUP, MSG_TAGS, PROTOCOL, Setup, code_width, hash_seed, oprf_input,
};
use crate::hashing::{BinHasher, CuckooParams, HashedItems};
use crate::protocols::common::{
    CHUNK, put_tag, set_size, shuffle_elements,
};
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::{Channel, recv_msg, send_elements};
use blindjoin_core::handshake::{Role, expect_same};
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Result};
use blindjoin_ot::ext::kkrt::KkrtSender;
use rand::CryptoRng;

/// Runs the sender with `items` (distinct) on `ch`.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let n1 = run.session.receiver_size;
    let tag_len = run.tag_len()?;
    let bins = CuckooParams::kkrt(set_size(n1)?, run.session.lambda)?.num_bins();
    // b follows the receiver's announced size; the only structure it sizes before the
    // receiver's data arrives is the index of the chunks of bins (`bucket_queries`).
    opts.check_memory(
        "the sender's chunk index of the receiver's bins",
        index_bytes(bins),
    )?;
    let setup: Setup = recv_msg(ch, MSG_SETUP, 16)?;
    expect_same(&[("bins", bins as u64, setup.bins)])?;
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    let hashed = BinHasher::new(hash_seed(&run.session), HASHES, bins)?.hash_items(&blocks)?;
    drop(blocks);
    run.lap("hash");
    let queries = bucket_queries(items, &hashed, bins);
    drop(hashed);

    let mut oprf = KkrtSender::setup(
        &mut run.base_ot(),
        code_width(run.session.kappa, run.session.lambda),
        ch,
        &run.session.id,
        rng,
    )?;
    run.lap("base OT");

    // Set j's tags in the order of evaluation, shuffled when complete.
    let mut tags: [Vec<u8>; HASHES] = Default::default();
    for set in &mut tags {
        set.reserve_exact(items.len() * tag_len);
    }
    let (mut batch, mut out, mut sorted, mut counts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (c, chunk) in queries.iter().enumerate() {
        let lo = c * BIN_CHUNK;
        let hi = (lo + BIN_CHUNK).min(bins);
        // In bin order, so that the evaluations read the chunk's OPRF rows sequentially
        // (before the chunk's columns arrive, while the receiver computes them).
        sort_by_bin(chunk, hi - lo, &mut counts, &mut sorted);
        let chunk = &sorted;
        let keys = oprf.send(ch, hi - lo)?;
        batch.clear();
        batch.extend(chunk.iter().map(|q| (q.bin as usize, q.input)));
        out.resize(batch.len(), Block::ZERO);
        keys.evals(&batch, &mut out)?;
        for (q, v) in chunk.iter().zip(&out) {
            let set = &mut tags[q.j as usize];
            let at = set.len();
            set.resize(at + tag_len, 0);
            put_tag(&mut set[at..], v.0);
        }
        oprf.recycle(keys);
        opts.report("oprf", hi as u64, bins as u64);
    }
    run.lap("oprf");
    // Each set in its own uniformly random order, so that a tag's position says nothing about
    // its item or its bin.
    for set in &mut tags {
        shuffle_elements(set, tag_len, rng);
    }
    run.lap("shuffle");
    for set in &tags {
        send_elements(ch, MSG_TAGS, set, tag_len, CHUNK)?;
    }
    run.lap("send");
    Ok(run.sender_output())
}

/// One OPRF evaluation of the sender: `input` = y ⊕ j at bin `bin` (relative to its chunk),
/// its tag going to set `j`.
#[derive(Clone, Copy)]
struct Query {
    input: Block,
    bin: u32,
    j: u32,
}

/// Bytes of [`bucket_queries`]'s index for `bins` bins: a count and an (empty unless used)
/// vector per chunk of [`BIN_CHUNK`] bins.
fn index_bytes(bins: usize) -> u64 {
    let per_chunk = std::mem::size_of::<usize>() + std::mem::size_of::<Vec<Query>>();
    bins.div_ceil(BIN_CHUNK) as u64 * per_chunk as u64
}

/// Every (y, j) as a [`Query`], bucketed by the chunk of bins its OPRF key arrives in.
///
/// A counting sort by chunk, not by bin: items are read in order and each of the few chunk
/// buckets is written sequentially, where a table sorted by bin would scatter every entry to a
/// random place. When h_j(y) = h_j'(y), both (y, j) and (y, j') are evaluated: the sender
/// cannot know which of them the receiver's table holds.
fn bucket_queries(items: &[Item], hashed: &HashedItems, bins: usize) -> Vec<Vec<Query>> {
    let chunks = bins.div_ceil(BIN_CHUNK);
    let mut counts = vec![0usize; chunks];
    for &b in hashed.as_slice() {
        counts[b as usize / BIN_CHUNK] += 1;
    }
    let mut buckets: Vec<Vec<Query>> = counts.iter().map(|&c| Vec::with_capacity(c)).collect();
    for (y, item) in items.iter().enumerate() {
        for (j, &b) in hashed.bins(y).iter().enumerate() {
            let b = b as usize;
            buckets[b / BIN_CHUNK].push(Query {
                input: oprf_input(&item.0, j as u8),
                bin: (b % BIN_CHUNK) as u32,
                j: j as u32,
            });
        }
    }
    buckets
}

/// `chunk` (bins below `bins`) in bin order, by a counting sort into `out`.
fn sort_by_bin(chunk: &[Query], bins: usize, counts: &mut Vec<u32>, out: &mut Vec<Query>) {
    counts.clear();
    counts.resize(bins + 1, 0);
    for q in chunk {
        counts[q.bin as usize + 1] += 1;
    }
    for b in 0..bins {
        counts[b + 1] += counts[b];
    }
    out.clear();
    out.resize(
        chunk.len(),
        Query {
            input: Block::ZERO,
            bin: 0,
            j: 0,
        },
    );
    for q in chunk {
        let c = &mut counts[q.bin as usize];
        out[*c as usize] = *q;
        *c += 1;
    }
}
