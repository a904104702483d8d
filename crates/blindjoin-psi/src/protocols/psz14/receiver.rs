//! The receiver's side of `psz14` (see the module doc for the message flow).

use super::{
    HASHES, MSG_BIN_MASKS, MSG_SETUP, MSG_STASH_MASKS, PAR_BATCH, PROTOCOL, Params, STASH,
    STASH_TWEAK, Setup, bin_seed, block_of, domain_aes, mask_aes,
};
use crate::hashing::{CuckooParams, CuckooTable};
use crate::protocols::common::{found_indices, tag_from_bytes};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::{BulkReader, Channel, send_msg};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Result};
use blindjoin_ot::ext::kk13::Kk13Receiver;
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// Most own masks of one hash function for which the receiver looks the sender's masks up by
/// binary search instead of sorting them (2^16 masks: 2 MiB, within the cache).
const SEARCH_MAX: usize = 1 << 16;

/// An occupied virtual bin: which item, and its domain-hash tweak (j for a bin, 2 for the stash).
#[derive(Clone, Copy)]
struct Occupant {
    vbin: u32,
    item: u32,
    tweak: u8,
}

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
///
/// Errors: the handshake's; `InvalidParam` for sizes the parameters cannot serve;
/// `HashingFailed` if the Cuckoo table's stash overflows (probability about n1^-4); `Malformed`,
/// `FrameTooLong` or `PeerClosed` when the sender's messages are not what the agreed sizes
/// imply.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;

    let (n1, n2) = (items.len() as u64, run.session.sender_size);
    let p = Params::new(run.session.lambda, n1, n2, opts.sigma, opts.allow_weak)?;
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    let table = CuckooTable::build(
        &CuckooParams::psz(items.len())?,
        bin_seed(&run.session),
        &blocks,
    )?;
    send_msg(ch, MSG_SETUP, &Setup::of(&p))?;

    // Occupied virtual bins in order (bins, then stash slots) and their short values.
    let mut occ: Vec<Occupant> = Vec::with_capacity(items.len());
    for (b, e) in table.iter().enumerate() {
        if let Some(e) = e {
            occ.push(Occupant {
                vbin: b as u32,
                item: e.item,
                tweak: e.hash,
            });
        }
    }
    for (k, &i) in table.stash().iter().enumerate() {
        occ.push(Occupant {
            vbin: (p.bins + k) as u32,
            item: i,
            tweak: STASH_TWEAK,
        });
    }
    let dom = domain_aes(&run.session);
    let mut shorts: Vec<Block> = occ.iter().map(|o| blocks[o.item as usize]).collect();
    let mask = p.short_mask();
    shorts
        .par_chunks_mut(PAR_BATCH * 16)
        .zip(occ.par_chunks(PAR_BATCH * 16))
        .for_each(|(s, o)| {
            dom.tccr_hash_with(s, |k| u128::from(o[k].tweak));
            for v in s.iter_mut() {
                v.0 &= mask;
            }
        });
    drop(blocks);
    run.lap("hash");

    let mut kk = Kk13Receiver::setup(&mut run.base_ot(), super::ETA, ch, &run.session.id, rng)?;
    run.lap("base OT");

    // One chunk of virtual bins per KK13 call: choices (random for empty bins), outputs, and
    // the masks of the occupied bins of the chunk.
    let tb = p.blocks;
    let hmask = mask_aes(&run.session);
    // Own bin masks by the j that placed the item: (mask, item).
    let mut own: [Vec<(u128, u32)>; HASHES] = Default::default();
    let mut stash_own: [Option<(u128, u32)>; STASH] = [None; STASH];
    let total = p.virtual_bins();
    // The choices (blocks of our items' short values), the OT outputs and their sums are wiped
    // when dropped.
    let (mut choices, mut rand_bytes) = (Zeroizing::new(Vec::new()), Zeroizing::new(Vec::new()));
    let (mut out, mut sums) = (Zeroizing::new(Vec::new()), Zeroizing::new(Vec::new()));
    let mut cursor = 0usize;
    let mut lo = 0usize;
    while lo < total {
        let hi = (lo + p.chunk).min(total);
        let m = (hi - lo) * tb;
        rand_bytes.resize(m, 0u8);
        rng.fill_bytes(&mut rand_bytes);
        choices.clear();
        choices.extend(rand_bytes.iter().map(|&b| u32::from(b)));
        let first = cursor;
        while cursor < occ.len() && (occ[cursor].vbin as usize) < hi {
            let o = &occ[cursor];
            let at = (o.vbin as usize - lo) * tb;
            for (i, c) in choices[at..at + tb].iter_mut().enumerate() {
                *c = block_of(shorts[cursor], i);
            }
            cursor += 1;
        }
        out.resize(m, Block::ZERO);
        kk.receive_random(ch, &choices, &mut out)?;
        // Masks of this chunk's occupants: H(β, ⊕_i r_{β,i}).
        let here = &occ[first..cursor];
        sums.clear();
        sums.extend(here.iter().map(|o| {
            let at = (o.vbin as usize - lo) * tb;
            out[at..at + tb].iter().fold(Block::ZERO, |a, b| a ^ *b)
        }));
        hmask.tccr_hash_with(&mut sums, |k| u128::from(here[k].vbin));
        for (o, s) in here.iter().zip(sums.iter()) {
            let bytes = s.to_bytes();
            if (o.vbin as usize) < p.bins {
                let tag = tag_from_bytes(&bytes[..p.bin_mask_len]);
                own[usize::from(o.tweak)].push((tag, o.item));
            } else {
                let tag = tag_from_bytes(&bytes[..p.stash_mask_len]);
                stash_own[o.vbin as usize - p.bins] = Some((tag, o.item));
            }
        }
        opts.report("ot", hi as u64, total as u64);
        lo = hi;
    }
    drop(out);
    run.lap("ot");

    let mut found = vec![false; items.len()];
    // Set j against the items placed by j. With many own items: both sorted, then merged
    // (sequential memory access, where a hash table's random probes cost more at 2^20 items);
    // with few, a binary search in our sorted masks per received mask, without storing the set.
    let mut theirs: Vec<u128> = Vec::new();
    for mine in &mut own {
        mine.sort_unstable_by_key(|&(tag, _)| tag);
        let merge = mine.len() > SEARCH_MAX;
        theirs.clear();
        let mut reader = BulkReader::new(MSG_BIN_MASKS, p.bin_mask_len, n2);
        while let Some(frame) = reader.next_frame(ch)? {
            let tags = frame.chunks_exact(p.bin_mask_len).map(tag_from_bytes);
            if merge {
                theirs.extend(tags);
            } else {
                for tag in tags {
                    if let Ok(k) = mine.binary_search_by_key(&tag, |&(t, _)| t) {
                        found[mine[k].1 as usize] = true;
                    }
                }
            }
        }
        theirs.sort_unstable();
        let mut k = 0;
        for &(tag, i) in mine.iter().filter(|_| merge) {
            while k < theirs.len() && theirs[k] < tag {
                k += 1;
            }
            if k < theirs.len() && theirs[k] == tag {
                found[i as usize] = true;
            }
        }
    }
    for slot in &stash_own {
        let mut reader = BulkReader::new(MSG_STASH_MASKS, p.stash_mask_len, n2);
        while let Some(frame) = reader.next_frame(ch)? {
            if let Some((own_tag, i)) = *slot
                && frame
                    .chunks_exact(p.stash_mask_len)
                    .any(|tag| tag_from_bytes(tag) == own_tag)
            {
                found[i as usize] = true;
            }
        }
    }
    let indices = found_indices(&found);
    run.lap("match");
    Ok(run.receiver_output(indices))
}
