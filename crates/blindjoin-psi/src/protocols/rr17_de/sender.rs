//! The sender's side of `rr17_de` (see the module doc for the message flow).

use super::{
    BASE_OTS, FORWARD, MSG_COMMIT, MSG_MASKS, MSG_OPENING, MSG_SHARE, PROTOCOL, REVERSE,
    bin_key, commitment, de_params, place,
};
use crate::protocols::common::CHUNK;
use crate::protocols::rr17a::recv_exact;
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::oos::{OosReceiver, OosSender};
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// Items whose masks one rayon task computes.
const PAR_ITEMS: usize = 1 << 10;

/// Runs the sender with `items` (distinct) on `ch`.
///
/// Errors: the handshake's; `CheckFailed` if the receiver's opening does not match its
/// commitment or its rows fail OOS16's consistency check; `HashingFailed` if a bin overflows
/// (probability at most 2^-λ); `Malformed` for a message of the wrong length.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let sid = run.session.id;
    let (n1, n2) = run.sizes();
    let p = de_params(run.session.lambda, n1, n2)?;

    let commit = recv_exact(ch, MSG_COMMIT, 32)?;
    let mut share = Zeroizing::new([0u8; 16]);
    rng.fill_bytes(&mut share[..]);
    ch.send(MSG_SHARE, &share[..])?;
    let opening = recv_exact(ch, MSG_OPENING, 32)?;
    let (theirs, nonce): ([u8; 16], [u8; 16]) = (
        opening[..16]
            .try_into()
            .map_err(|_| Error::malformed(MSG_OPENING, "short"))?,
        opening[16..]
            .try_into()
            .map_err(|_| Error::malformed(MSG_OPENING, "short"))?,
    );
    if commitment(&sid, &theirs, &nonce)[..] != commit[..] {
        return Err(Error::CheckFailed(
            "the receiver's bin-key share does not open its commitment".into(),
        ));
    }
    let key = bin_key(&sid, &share, &theirs);

    let mut fwd = OosSender::setup(&mut run.malicious_base_ot(), ch, &sid, rng)?.named(FORWARD);
    let base = fwd.send(ch, BASE_OTS)?;
    let mut pairs = Zeroizing::new(Vec::with_capacity(BASE_OTS));
    for i in 0..BASE_OTS {
        pairs.push([
            base.eval(i, Block(0))?.to_bytes(),
            base.eval(i, Block(1))?.to_bytes(),
        ]);
    }
    fwd.recycle(base);
    let mut rev = OosReceiver::from_base(&pairs, REVERSE, &sid, rng)?;
    run.lap("base OT");

    let mut prg = AesPrg::new(Block::random(rng));
    let pl = place(items, key, &p, p.slots_s, &mut prg)?;
    // The masks go out in a random order of the items.
    let mut order: Vec<u32> = (0..items.len() as u32).collect();
    for k in (1..order.len()).rev() {
        let r = (prg.next_block().0 as u64 % (k as u64 + 1)) as usize;
        order.swap(k, r);
    }
    run.lap("bins");

    let (br, bs) = (p.slots_r, p.slots_s);
    let item_len = br * p.mask_len;
    let mut masks = vec![0u8; items.len() * item_len];
    let mut own = Zeroizing::new(Vec::new());
    let mut local: Vec<u8> = Vec::new();
    for b0 in (0..p.bins).step_by(p.chunk_bins) {
        let b1 = (b0 + p.chunk_bins).min(p.bins);
        let keys = fwd.send(ch, (b1 - b0) * br)?;
        let members =
            &pl.by_bin[pl.bin_start[b0] as usize..pl.bin_start[b1] as usize];
        let wanted: Vec<usize> = members
            .iter()
            .map(|&i| pl.slot_of[i as usize] as usize - b0 * bs)
            .collect();
        own.clear();
        own.resize(members.len(), Block::ZERO);
        rev.receive(ch, &pl.slot_inputs[b0 * bs..b1 * bs], &wanted, &mut own)?;
        local.clear();
        local.resize(members.len() * item_len, 0);
        let result: Result<()> = local
            .par_chunks_mut(PAR_ITEMS * item_len)
            .zip(members.par_chunks(PAR_ITEMS))
            .zip(own.par_chunks(PAR_ITEMS))
            .try_for_each(|((out, m), r)| {
                let mut v = vec![Block::ZERO; br];
                for ((out, &i), r) in out.chunks_exact_mut(item_len).zip(m).zip(r) {
                    let bin = pl.slot_of[i as usize] as usize / bs;
                    keys.eval_range(pl.inputs[i as usize], (bin - b0) * br, &mut v)?;
                    for (o, v) in out.chunks_exact_mut(p.mask_len).zip(&v) {
                        o.copy_from_slice(&(v.0 ^ r.0).to_le_bytes()[..p.mask_len]);
                    }
                }
                Ok(())
            });
        result?;
        for (&i, m) in members.iter().zip(local.chunks_exact(item_len)) {
            let at = order[i as usize] as usize * item_len;
            masks[at..at + item_len].copy_from_slice(m);
        }
        fwd.recycle(keys);
        run.report("encodings", b1 as u64, p.bins as u64);
    }
    run.lap("encodings");
    for frame in masks.chunks(CHUNK * item_len) {
        ch.send(MSG_MASKS, frame)?;
    }
    run.lap("masks");
    Ok(run.sender_output())
}
