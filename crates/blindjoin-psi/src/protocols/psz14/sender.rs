//! The sender's side of `psz14` (see the module doc for the message flow).

use super::{
    HASHES, MSG_SETUP, NAME, PAR_BATCH, Params, STASH, STASH_TWEAK, Setup, bin_seed, block_of,
    domain_aes, mask_aes, params, short_values, tccr_tweaked,
};
use crate::hashing::{BinHasher, SimpleTable};
use crate::protocols::common::{CHUNK, validate_security};
use crate::{Phases, RunOptions, SenderOutput};
use blindjoin_core::channel::{Channel, recv_msg, send_elements};
use blindjoin_core::handshake::{Role, handshake};
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Result};
use blindjoin_ot::base::ChouOrlandiReceiver;
use blindjoin_ot::ext::kk13::Kk13Sender;
use rand::CryptoRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use std::time::Instant;

/// Messages per 1-out-of-256 OT.
const N: usize = 1 << super::ETA;

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
    validate_security(opts, NAME)?;
    let start = Instant::now();
    let mut phases = Phases::default();
    let cfg = opts.session_config(NAME, Role::Sender, items.len(), params());
    let session = handshake(ch, &cfg, rng)?;
    let t = phases.lap("handshake", start);

    let (n1, n2) = (session.receiver_size, items.len() as u64);
    let p = Params::new(session.lambda, n1, n2)?;
    let setup: Setup = recv_msg(ch, MSG_SETUP, 32)?;
    setup.check(&Setup::of(&p))?;

    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    let table = SimpleTable::build(
        &BinHasher::new(bin_seed(&session), HASHES, p.bins)?,
        &blocks,
    )?;
    let dom = domain_aes(&session);
    let mask = p.short_mask();
    let shorts: [Vec<Block>; HASHES] = [
        short_values(&dom, 0, &blocks, mask),
        short_values(&dom, 1, &blocks, mask),
    ];
    // Each set j goes out in its own random order: item y's mask at position perms[j][y].
    let perms: [Vec<u32>; HASHES] = [permutation(items.len(), rng), permutation(items.len(), rng)];
    let t = phases.lap("hash", t);

    let mut kk = Kk13Sender::new(ChouOrlandiReceiver::default(), super::ETA)?;
    kk.setup(ch, &session.id, rng)?;
    let t = phases.lap("base OT", t);

    let (tb, l2) = (p.blocks, p.bin_mask_len);
    let hmask = mask_aes(&session);
    let mut sets = [vec![0u8; items.len() * l2], vec![0u8; items.len() * l2]];
    // All 256 outputs of each stash OT: stash_out[(k·t + i)·N + w].
    let mut stash_out = vec![Block::ZERO; STASH * tb * N];
    let total = p.virtual_bins();
    let (mut queries, mut dest, mut out, mut sums) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut lo = 0usize;
    while lo < total {
        let hi = (lo + p.chunk).min(total);
        let ots = kk.send_random(ch, (hi - lo) * tb)?;
        queries.clear();
        dest.clear();
        for b in lo..hi.min(p.bins) {
            for e in table.bin(b) {
                let (y, j) = (e.item() as usize, usize::from(e.hash()));
                let short = shorts[j][y];
                queries.extend((0..tb).map(|i| ((b - lo) * tb + i, block_of(short, i))));
                dest.push((b as u32, j as u8, perms[j][y]));
            }
        }
        let bin_queries = queries.len();
        for vb in lo.max(p.bins)..hi {
            for i in 0..tb {
                queries.extend((0..N as u32).map(|w| ((vb - lo) * tb + i, w)));
            }
        }
        out.resize(queries.len(), Block::ZERO);
        ots.outputs(&queries, &mut out)?;
        drop(ots);
        // Bin masks: H(β, ⊕_i r_{β,i}(D_j(y)_i)), truncated to ℓ2 bytes, at their positions.
        sums.clear();
        sums.resize(dest.len(), Block::ZERO);
        sums.par_chunks_mut(PAR_BATCH)
            .zip(out[..bin_queries].par_chunks(PAR_BATCH * tb))
            .zip(dest.par_chunks(PAR_BATCH))
            .for_each(|((s, o), d)| {
                for (v, r) in s.iter_mut().zip(o.chunks_exact(tb)) {
                    *v = r.iter().fold(Block::ZERO, |a, b| a ^ *b);
                }
                tccr_tweaked(&hmask, s, |k| u128::from(d[k].0));
            });
        for (&(_, j, pos), v) in dest.iter().zip(&sums) {
            let at = pos as usize * l2;
            sets[usize::from(j)][at..at + l2].copy_from_slice(&v.to_bytes()[..l2]);
        }
        let first_stash = lo.max(p.bins) - p.bins;
        let stash_here = &out[bin_queries..];
        stash_out[first_stash * tb * N..first_stash * tb * N + stash_here.len()]
            .copy_from_slice(stash_here);
        opts.report("ot", hi as u64, total as u64);
        lo = hi;
    }
    drop(out);
    let t = phases.lap("ot", t);

    for set in &sets {
        send_elements(ch, set, l2, CHUNK)?;
    }
    drop(sets);
    // Stash slot k: the masks of all items, in a fresh random order per slot, a frame at a time.
    let l1 = p.stash_mask_len;
    let short2 = short_values(&dom, STASH_TWEAK, &blocks, mask);
    let mut frame = Vec::with_capacity(CHUNK * l1);
    for k in 0..STASH {
        let mut order: Vec<u32> = (0..items.len() as u32).collect();
        order.shuffle(rng);
        let tables = &stash_out[k * tb * N..(k + 1) * tb * N];
        let tweak = u128::from((p.bins + k) as u64);
        for part in order.chunks(CHUNK) {
            sums.clear();
            sums.extend(part.iter().map(|&y| {
                let short = short2[y as usize];
                (0..tb).fold(Block::ZERO, |a, i| {
                    a ^ tables[i * N + block_of(short, i) as usize]
                })
            }));
            tccr_tweaked(&hmask, &mut sums, |_| tweak);
            frame.clear();
            for v in &sums {
                frame.extend_from_slice(&v.to_bytes()[..l1]);
            }
            ch.send(&frame)?;
        }
    }
    phases.lap("send", t);
    Ok(SenderOutput { session, phases })
}
