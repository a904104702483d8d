//! The receiver's side of `rr17_de` (see the module doc for the message flow).

use super::{
    BASE_OTS, FORWARD, MSG_COMMIT, MSG_MASKS, MSG_OPENING, MSG_SHARE, PROTOCOL, REVERSE,
    bin_key, commitment, de_params, place,
};
use crate::protocols::common::{CHUNK, TagTable, tag_from_bytes};
use crate::protocols::rr17a::recv_exact;
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::oos::{OosReceiver, OosSender};
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// Items whose values one rayon task computes.
const PAR_ITEMS: usize = 1 << 10;

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
///
/// Errors: the handshake's; `HashingFailed` if a bin overflows (probability at most 2^-λ);
/// OOS16's errors (`CheckFailed` if the sender's rows fail the consistency check); `Malformed`
/// for a message of the wrong length.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let sid = run.session.id;
    let (n1, n2) = run.sizes();
    let p = de_params(run.session.lambda, n1, n2)?;

    let (mut share, mut nonce) = (Zeroizing::new([0u8; 16]), Zeroizing::new([0u8; 16]));
    rng.fill_bytes(&mut share[..]);
    rng.fill_bytes(&mut nonce[..]);
    ch.send(MSG_COMMIT, &commitment(&sid, &share, &nonce))?;
    let theirs: [u8; 16] = recv_exact(ch, MSG_SHARE, 16)?
        .try_into()
        .map_err(|_| Error::malformed(MSG_SHARE, "16 bytes expected"))?;
    let mut opening = Zeroizing::new([0u8; 32]);
    opening[..16].copy_from_slice(&share[..]);
    opening[16..].copy_from_slice(&nonce[..]);
    ch.send(MSG_OPENING, &opening[..])?;
    let key = bin_key(&sid, &theirs, &share);

    let mut fwd = OosReceiver::setup(&mut run.malicious_base_ot(), ch, &sid, rng)?.named(FORWARD);
    // The reverse direction's base OTs: forward instances on random bits.
    let choices: Zeroizing<Vec<bool>> =
        Zeroizing::new((0..BASE_OTS).map(|_| rng.next_u32() & 1 == 1).collect());
    let bits: Zeroizing<Vec<Block>> =
        Zeroizing::new(choices.iter().map(|&c| Block(u128::from(c))).collect());
    let all: Vec<usize> = (0..BASE_OTS).collect();
    let mut keys = Zeroizing::new(vec![Block::ZERO; BASE_OTS]);
    fwd.receive(ch, &bits, &all, &mut keys)?;
    let key_bytes: Zeroizing<Vec<[u8; 16]>> =
        Zeroizing::new(keys.iter().map(|k| k.to_bytes()).collect());
    let mut rev = OosSender::from_base(&choices, &key_bytes, REVERSE, &sid, rng)?;
    run.lap("base OT");

    let mut prg = AesPrg::new(Block::random(rng));
    let pl = place(items, key, &p, p.slots_r, &mut prg)?;
    run.lap("bins");

    let (br, bs) = (p.slots_r, p.slots_s);
    let tag_mask = if p.mask_len >= 16 {
        u128::MAX
    } else {
        (1u128 << (8 * p.mask_len)) - 1
    };
    let mut table = TagTable::with_capacity(items.len() * bs);
    let mut own = Zeroizing::new(Vec::new());
    let mut entries: Vec<(u128, u32)> = Vec::new();
    for b0 in (0..p.bins).step_by(p.chunk_bins) {
        let b1 = (b0 + p.chunk_bins).min(p.bins);
        let members =
            &pl.by_bin[pl.bin_start[b0] as usize..pl.bin_start[b1] as usize];
        let wanted: Vec<usize> = members
            .iter()
            .map(|&i| pl.slot_of[i as usize] as usize - b0 * br)
            .collect();
        own.clear();
        own.resize(members.len(), Block::ZERO);
        fwd.receive(ch, &pl.slot_inputs[b0 * br..b1 * br], &wanted, &mut own)?;
        let keys = rev.send(ch, (b1 - b0) * bs)?;
        entries.clear();
        entries.resize(members.len() * bs, (0, 0));
        let result: Result<()> = entries
            .par_chunks_mut(PAR_ITEMS * bs)
            .zip(members.par_chunks(PAR_ITEMS))
            .zip(own.par_chunks(PAR_ITEMS))
            .try_for_each(|((e, m), r)| {
                let mut v = vec![Block::ZERO; bs];
                for ((e, &i), r) in e.chunks_exact_mut(bs).zip(m).zip(r) {
                    let bin = pl.slot_of[i as usize] as usize / br;
                    keys.eval_range(pl.inputs[i as usize], (bin - b0) * bs, &mut v)?;
                    for (e, v) in e.iter_mut().zip(&v) {
                        *e = ((v.0 ^ r.0) & tag_mask, i);
                    }
                }
                Ok(())
            });
        result?;
        table.insert_all(&entries);
        rev.recycle(keys);
        run.report("encodings", b1 as u64, p.bins as u64);
    }
    drop(entries);
    run.lap("encodings");

    let item_len = br * p.mask_len;
    let total = usize::try_from(n2).map_err(|_| Error::InvalidParam {
        field: "sender set size",
        reason: format!("{n2} items do not fit this machine"),
    })?;
    let mut hit = vec![false; items.len()];
    let mut got = 0usize;
    while got < total {
        let count = CHUNK.min(total - got);
        let frame = recv_exact(ch, MSG_MASKS, count * item_len)?;
        for masks in frame.chunks_exact(item_len) {
            for (l, m) in masks.chunks_exact(p.mask_len).enumerate() {
                let tag = tag_from_bytes(m);
                if let Some(i) = table.find(tag, |i| pl.slot_of[i as usize] as usize % br == l) {
                    hit[i as usize] = true;
                }
            }
        }
        got += count;
    }
    run.lap("match");
    let indices = hit
        .iter()
        .enumerate()
        .filter_map(|(i, &h)| h.then_some(i))
        .collect();
    Ok(run.receiver_output(indices))
}
