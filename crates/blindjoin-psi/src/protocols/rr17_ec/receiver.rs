//! The receiver's side of `rr17_ec` (see the module doc for the message flow).

use super::{
    COMMIT_FRAME, COMMIT_LEN, ENTRY_FRAME, ENTRY_LEN, MSG_COMMIT, MSG_COMMITMENTS, MSG_ENTRIES,
    MSG_OPENING, MSG_SHARE, PROTOCOL, commit, ec_params,
};
use crate::protocols::common::set_size;
use crate::protocols::rr17_de::engine::{Entry, MaskTable};
use crate::protocols::rr17_de::{bin_key, chunks, commitment, place, place_in_bins};
use crate::protocols::rr17a::recv_exact;
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::kos::KosBase;
use blindjoin_ot::ext::oos::{OosReceiver, Wide};
use rand::CryptoRng;
use zeroize::Zeroizing;

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
///
/// Errors: the handshake's; `HashingFailed` if a bin overflows (probability at most 2^-λ);
/// `Malformed` for a message of the wrong length.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    receive_encoding(ch, items, None, opts, rng)
}

/// [`receive`] with the OOS16 input of each item's slot taken from `slot_items[i]` instead of
/// `items[i]` where given: a receiver that encodes other items than it checks (the tests'
/// cheating receiver; `None` is the protocol).
pub(crate) fn receive_encoding<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    slot_items: Option<&[Item]>,
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let sid = run.session.id;
    let (n1, n2) = run.sizes();
    let p = ec_params(run.session.lambda, n1, n2)?;
    let n2 = set_size(n2)?;
    run.opts.check_memory(
        "the bins and the sender's commitments",
        (p.bins as u64) * 4 + (n2 as u64) * COMMIT_LEN as u64,
    )?;

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

    let mut ot = OosReceiver::setup(&mut KosBase(run.malicious_base_ot()), ch, &sid, rng)?;
    run.lap("base OT");

    let mut prg = AesPrg::new(Block::random(rng));
    let mut pl = place(items, key, &p, p.slots_r, &mut prg)?;
    if let Some(other) = slot_items {
        pl.encoded = Some(place_in_bins(other, key, &p).inputs);
    }
    run.lap("bins");

    let br = p.slots_r;
    // G(e(x)) of each item, and each slot position's items by tag.
    let mut own: Zeroizing<Vec<Wide>> = Zeroizing::new(vec![[Block::ZERO; 2]; items.len()]);
    let mut by_position: Vec<Vec<Entry>> = (0..br).map(|_| Vec::new()).collect();
    let mut out: Zeroizing<Vec<Wide>> = Zeroizing::new(Vec::new());
    let mut slot_buf = Zeroizing::new(Vec::new());
    for (b0, b1) in chunks(&p) {
        pl.fill_slots(b0, b1, br, &mut slot_buf);
        let batch = ot.extend(ch, &slot_buf)?;
        {
            let (mut rx, mut tx) = ch.split();
            batch.prove(&mut *rx, &mut *tx)?;
        }
        let (k0, k1) = (pl.bin_start[b0] as usize, pl.bin_start[b1] as usize);
        let members = &pl.by_bin[k0..k1];
        let slots = &pl.bin_slots[k0..k1];
        let wanted: Vec<usize> = slots.iter().map(|&s| s as usize - b0 * br).collect();
        out.clear();
        out.resize(members.len(), [Block::ZERO; 2]);
        batch.outputs(&wanted, &mut out)?;
        ot.recycle(batch);
        for ((&i, &slot), g) in members.iter().zip(slots).zip(out.iter()) {
            own[i as usize] = *g;
            let tag = u128::from(g[1].0 as u32);
            by_position[slot as usize % br].push(Entry::new(tag, i));
        }
        run.report("encodings", b1 as u64, p.bins as u64);
    }
    run.lap("encodings");

    let mut commitments = Vec::with_capacity(n2);
    let mut got = 0;
    while got < n2 {
        let count = COMMIT_FRAME.min(n2 - got);
        let frame = recv_exact(ch, MSG_COMMITMENTS, count * COMMIT_LEN)?;
        commitments.extend(
            frame
                .chunks_exact(COMMIT_LEN)
                .map(|c| <[u8; COMMIT_LEN]>::try_from(c).unwrap_or([0; COMMIT_LEN])),
        );
        got += count;
    }
    let mut hit = vec![false; items.len()];
    let mut table = MaskTable::new();
    for position in &by_position {
        table.fill(position);
        let mut k = 0;
        while k < n2 {
            let count = ENTRY_FRAME.min(n2 - k);
            let frame = recv_exact(ch, MSG_ENTRIES, count * ENTRY_LEN)?;
            for (e, c) in frame.chunks_exact(ENTRY_LEN).zip(&commitments[k..]) {
                let tag = u128::from(u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
                let mut d = [0u8; 16];
                d.copy_from_slice(&e[4..]);
                let d = Block::from_bytes(d);
                table.find(tag, |i| {
                    let mut r = Zeroizing::new((d ^ own[i as usize][0]).to_bytes());
                    if commit(&sid, &items[i as usize], &r) == *c {
                        hit[i as usize] = true;
                    }
                    r[..].fill(0);
                });
            }
            k += count;
        }
    }
    run.lap("match");
    let indices = hit
        .iter()
        .enumerate()
        .filter_map(|(i, &h)| h.then_some(i))
        .collect();
    Ok(run.receiver_output(indices))
}
