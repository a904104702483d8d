//! The sender's side of `psz14` (see the module doc for the message flow).

use super::{
    HASHES, MSG_BIN_MASKS, MSG_SETUP, MSG_STASH_MASKS, PAR_BATCH, PROTOCOL, Params, STASH,
    STASH_TWEAK, Setup, bin_seed, block_of, domain_aes, mask_aes, short_values,
};
use crate::hashing::{BinHasher, HashedItems};
use crate::protocols::common::CHUNK;
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::{Channel, recv_msg, send_elements};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Result};
use blindjoin_ot::ext::kk13::Kk13Sender;
use rand::CryptoRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// Messages per 1-out-of-256 OT.
const N: usize = 1 << super::ETA;

/// Bits of [`EntryInput::slot`] holding the position (the top bit is j).
const SLOT_MASK: u32 = (1 << 31) - 1;

/// What the OT evaluation needs of one simple-hashing entry (y, j): its bin h_j(y), the short
/// value D_j(y) and where its mask goes (position `perms[j][y]` of set j, with j in the top
/// bit).
#[derive(Clone, Copy, Default)]
struct EntryInput {
    short: u128,
    bin: u32,
    slot: u32,
}

/// Every simple-hashing entry (y, j) of the sender, grouped by the KK13 call that evaluates its
/// bin (chunk c holds the bins `c·chunk .. (c+1)·chunk`) and in bin order within a chunk.
///
/// This is simple hashing without a table of the b bins: b follows the receiver's announced
/// size, so a per-bin array would be allocated for a set that may never be sent. The index has
/// one entry per chunk instead (4 bytes per `chunk_bins` bins), and the entries are our own
/// 2·n2.
struct Entries {
    /// `starts[c] .. starts[c + 1]`: the entries of chunk c (2·n2 ≤ 2^31 entries).
    starts: Vec<u32>,
    entries: Vec<EntryInput>,
}

impl Entries {
    /// Bytes of the chunk index for `bins` bins in chunks of `chunk` (what the receiver's
    /// announced size decides before its data arrives).
    fn index_bytes(bins: usize, chunk: usize) -> u64 {
        (bins.div_ceil(chunk.max(1)) as u64 + 1) * 4
    }

    /// The entries of every (y, j): items are read in order, each entry goes to the end of its
    /// chunk's run (one sequential stream per chunk), then each chunk is put in bin order.
    fn build(
        p: &Params,
        hashed: &HashedItems,
        blocks: &[Block],
        dom: &FixedKeyAes,
        perms: &[Vec<u32>; HASHES],
    ) -> Entries {
        const B: usize = 1024;
        let mask = p.short_mask();
        let chunks = p.bins.div_ceil(p.chunk);
        let mut starts = vec![0u32; chunks + 1];
        for &b in hashed.as_slice() {
            starts[b as usize / p.chunk + 1] += 1;
        }
        for c in 0..chunks {
            starts[c + 1] += starts[c];
        }
        let mut cursor: Vec<u32> = starts[..chunks].to_vec();
        let mut entries = vec![EntryInput::default(); hashed.as_slice().len()];
        let mut buf = [[Block::ZERO; B]; HASHES];
        for (c, chunk) in blocks.chunks(B).enumerate() {
            for (j, buf) in buf.iter_mut().enumerate() {
                let buf = &mut buf[..chunk.len()];
                buf.copy_from_slice(chunk);
                dom.tccr_hash_with(buf, |_| j as u128);
            }
            for (k, y) in (c * B..c * B + chunk.len()).enumerate() {
                for (j, &b) in hashed.bins(y).iter().enumerate() {
                    let e = &mut cursor[b as usize / p.chunk];
                    entries[*e as usize] = EntryInput {
                        short: buf[j][k].0 & mask,
                        bin: b,
                        slot: perms[j][y] | ((j as u32) << 31),
                    };
                    *e += 1;
                }
            }
        }
        drop(cursor);
        let (mut counts, mut scratch) = (Vec::new(), Vec::new());
        for c in 0..chunks {
            let run = &mut entries[starts[c] as usize..starts[c + 1] as usize];
            sort_by_bin(run, c * p.chunk, p.chunk, &mut counts, &mut scratch);
        }
        Entries { starts, entries }
    }

    /// The entries of the bins of chunk `c` (none past the bins: the stash's chunks).
    fn chunk(&self, c: usize) -> &[EntryInput] {
        match (self.starts.get(c), self.starts.get(c + 1)) {
            (Some(&s), Some(&e)) => &self.entries[s as usize..e as usize],
            _ => &[],
        }
    }
}

/// Puts `run`, the entries of the `chunk` bins from `first`, in bin order (their order within
/// a bin kept): a counting sort when the run fills its bins, else a comparison sort, so that a
/// chunk costs no more than its entries where few of our items fall into many bins.
fn sort_by_bin(
    run: &mut [EntryInput],
    first: usize,
    chunk: usize,
    counts: &mut Vec<u32>,
    scratch: &mut Vec<EntryInput>,
) {
    if run.len() < chunk / 4 {
        run.sort_unstable_by_key(|e| e.bin);
        return;
    }
    counts.clear();
    counts.resize(chunk + 1, 0);
    for e in run.iter() {
        counts[e.bin as usize - first + 1] += 1;
    }
    for b in 0..chunk {
        counts[b + 1] += counts[b];
    }
    scratch.clear();
    scratch.extend_from_slice(run);
    for e in scratch.iter() {
        let at = &mut counts[e.bin as usize - first];
        run[*at as usize] = *e;
        *at += 1;
    }
}

/// A random permutation of `0..n` as positions: item `y` goes to `perm[y]`.
fn permutation(n: usize, rng: &mut impl CryptoRng) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    p.shuffle(rng);
    p
}

/// Runs the sender with `items` (distinct) on `ch`.
///
/// Errors: the handshake's; `ParamMismatch` naming `bins`, `stash` or `sigma` if the receiver's
/// table parameters differ from ours; `InvalidParam` for sizes the parameters cannot serve;
/// `Malformed`, `FrameTooLong` or `PeerClosed` when the receiver's messages are not what the
/// agreed sizes imply.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;

    let (n1, n2) = (run.session.receiver_size, items.len() as u64);
    let p = Params::new(run.session.lambda, n1, n2, opts.sigma, opts.allow_weak)?;
    opts.check_memory(
        "the sender's chunk index of the receiver's bins",
        Entries::index_bytes(p.bins, p.chunk),
    )?;
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    let hashed = BinHasher::new(bin_seed(&run.session), HASHES, p.bins)?.hash_items(&blocks)?;
    let dom = domain_aes(&run.session);
    let mask = p.short_mask();
    // Each set j goes out in its own random order: item y's mask at position perms[j][y].
    let perms: [Vec<u32>; HASHES] = [permutation(items.len(), rng), permutation(items.len(), rng)];
    let entries = Entries::build(&p, &hashed, &blocks, &dom, &perms);
    drop(hashed);
    // The table parameters arrive while we hash (the receiver builds its Cuckoo table first).
    let setup: Setup = recv_msg(ch, MSG_SETUP, 32)?;
    setup.check(&Setup::of(&p))?;
    run.lap("hash");

    let mut kk = Kk13Sender::setup(&mut run.base_ot(), super::ETA, ch, &run.session.id, rng)?;
    run.lap("base OT");

    let (tb, l2) = (p.blocks, p.bin_mask_len);
    let hmask = mask_aes(&run.session);
    let mut sets = [vec![0u8; items.len() * l2], vec![0u8; items.len() * l2]];
    // All 256 outputs of each stash OT: stash_out[(k·t + i)·N + w]. OT outputs and their sums
    // are wiped when dropped.
    let mut stash_out = Zeroizing::new(vec![Block::ZERO; STASH * tb * N]);
    let total = p.virtual_bins();
    let (mut queries, mut tweaks) = (Vec::new(), Vec::new());
    let (mut out, mut sums) = (Zeroizing::new(Vec::new()), Zeroizing::new(Vec::new()));
    let mut lo = 0usize;
    while lo < total {
        let hi = (lo + p.chunk).min(total);
        let ots = kk.send_random(ch, (hi - lo) * tb)?;
        queries.clear();
        tweaks.clear();
        // The chunk's entries, in bin order (chunks start at multiples of p.chunk).
        let here = entries.chunk(lo / p.chunk);
        for en in here {
            let short = Block(en.short);
            let b = en.bin as usize - lo;
            queries.extend((0..tb).map(|i| (b * tb + i, block_of(short, i))));
            tweaks.push(en.bin);
        }
        let bin_queries = queries.len();
        for vb in lo.max(p.bins)..hi {
            for i in 0..tb {
                queries.extend((0..N as u32).map(|w| ((vb - lo) * tb + i, w)));
            }
        }
        out.resize(queries.len(), Block::ZERO);
        ots.outputs(&queries, &mut out)?;
        kk.recycle(ots);
        // Bin masks: H(β, ⊕_i r_{β,i}(D_j(y)_i)), truncated to ℓ2 bytes, at their positions.
        sums.clear();
        sums.resize(here.len(), Block::ZERO);
        sums.par_chunks_mut(PAR_BATCH)
            .zip(out[..bin_queries].par_chunks(PAR_BATCH * tb))
            .zip(tweaks.par_chunks(PAR_BATCH))
            .for_each(|((s, o), tw)| {
                for (v, r) in s.iter_mut().zip(o.chunks_exact(tb)) {
                    *v = r.iter().fold(Block::ZERO, |a, b| a ^ *b);
                }
                hmask.tccr_hash_with(s, |k| u128::from(tw[k]));
            });
        for (en, v) in here.iter().zip(sums.iter()) {
            let (j, pos) = ((en.slot >> 31) as usize, (en.slot & SLOT_MASK) as usize);
            sets[j][pos * l2..(pos + 1) * l2].copy_from_slice(&v.to_bytes()[..l2]);
        }
        let first_stash = lo.max(p.bins) - p.bins;
        let stash_here = &out[bin_queries..];
        stash_out[first_stash * tb * N..first_stash * tb * N + stash_here.len()]
            .copy_from_slice(stash_here);
        opts.report("ot", hi as u64, total as u64);
        lo = hi;
    }
    drop(out);
    drop(entries);
    run.lap("ot");

    for set in &sets {
        send_elements(ch, MSG_BIN_MASKS, set, l2, CHUNK)?;
    }
    drop(sets);
    // The stash sets: the masks of all items under each slot's OTs, in one random order shared
    // by the s sets (an item matches at most one stash slot, so the shared order links nothing
    // the receiver could not simulate), a frame at a time.
    let l1 = p.stash_mask_len;
    let order = permutation(items.len(), rng);
    let mut short2: Vec<Block> = vec![Block::ZERO; items.len()];
    for (&pos, x) in order.iter().zip(&blocks) {
        short2[pos as usize] = *x;
    }
    drop(blocks);
    let short2 = short_values(&dom, STASH_TWEAK, &short2, mask);
    let mut frame = Vec::with_capacity(CHUNK * l1);
    for k in 0..STASH {
        let tables = &stash_out[k * tb * N..(k + 1) * tb * N];
        let tweak = u128::from((p.bins + k) as u64);
        for part in short2.chunks(CHUNK) {
            sums.clear();
            sums.extend(part.iter().map(|&short| {
                (0..tb).fold(Block::ZERO, |a, i| {
                    a ^ tables[i * N + block_of(short, i) as usize]
                })
            }));
            hmask.tccr_hash_with(&mut sums, |_| tweak);
            frame.clear();
            for v in sums.iter() {
                frame.extend_from_slice(&v.to_bytes()[..l1]);
            }
            ch.send(MSG_STASH_MASKS, &frame)?;
        }
    }
    run.lap("send");
    Ok(run.sender_output())
}
