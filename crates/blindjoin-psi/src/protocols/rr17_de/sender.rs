//! The sender's side of `rr17_de` (see the module doc for the message flow).

use super::engine::{Buckets, Mask, Queued, duplex_chunks, read_chunks, shuffle, truncate};
use super::{
    BASE_OTS, DeParams, FORWARD, MASK_FRAME, MSG_COMMIT, MSG_MASKS, MSG_OPENING, MSG_SHARE,
    PROTOCOL, Placement, REVERSE, bin_key, commitment, de_params, place, place_in_bins,
};
use crate::protocols::common::{pipelined, put_tag, queue_frames};
use crate::protocols::rr17a::recv_exact;
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::kos::KosBase;
use blindjoin_ot::ext::oos::{self, OosReceiver, OosReceiverBatch, OosSender, OosSenderOutputs};
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
    send_encoding(ch, items, None, opts, rng)
}

/// [`send`] with the OOS16 input of each item's slot taken from `slot_items[i]` instead of
/// `items[i]` where given: a party that encodes other items than it evaluates (the tests'
/// cheating party; `None` is the protocol).
pub(crate) fn send_encoding<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    slot_items: Option<&[Item]>,
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let sid = run.session.id;
    let (n1, n2) = run.sizes();
    let p = de_params(run.session.lambda, n1, n2)?;
    run.opts.check_memory(
        "the bins and the sender's masks",
        (p.bins as u64) * 4 + n2 * (p.slots_r as u64) * 13,
    )?;

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

    let mut fwd =
        OosSender::setup(&mut KosBase(run.malicious_base_ot()), ch, &sid, rng)?.named(FORWARD);
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
    let mut pl = place(items, key, &p, p.slots_s, &mut prg)?;
    if let Some(other) = slot_items {
        pl.encoded = Some(place_in_bins(other, key, &p).inputs);
    }
    run.lap("bins");

    let (br, bs) = (p.slots_r, p.slots_s);
    let queue = queue_frames(oos::u_frame_len(p.chunk_bins * br.max(bs)));
    pipelined(
        ch,
        queue,
        |rx: &mut dyn FrameReceiver, q, aborted| {
            read_chunks(rx, &q, aborted, &p, br, FORWARD, REVERSE).map(|_| ())
        },
        |tx: &mut dyn FrameSender, q| -> Result<()> {
            let mut rx = Queued(q);
            // The masks, by receiver slot position, in the order of the bins.
            let mut masks: Buckets<Mask> = Buckets::new(p.bucket_bits, &vec![items.len(); br]);
            let mut own = Zeroizing::new(Vec::new());
            let mut local: Vec<u128> = Vec::new();
            duplex_chunks(
                tx,
                &mut rx,
                &mut rev,
                &mut fwd,
                FORWARD.challenge,
                &p,
                &pl,
                (bs, br),
                |b0, b1, batch, keys| {
                    masks_of_chunk(
                        &pl, &p, b0, b1, batch, keys, &mut masks, &mut own, &mut local,
                    )
                },
                |b1| run.report("encodings", b1 as u64, p.bins as u64),
            )?;
            drop(local);
            run.lap("encodings");
            // Each position's masks bucket by bucket, each bucket in a random order.
            let full = MASK_FRAME * p.mask_len;
            let mut frame = vec![0u8; full];
            let mut at = 0;
            let mut random = Vec::new();
            for l in 0..br {
                for bucket in masks.position(l).iter_mut() {
                    shuffle(bucket, &mut prg, &mut random);
                    for &m in bucket.iter() {
                        put_tag(&mut frame[at..at + p.mask_len], m.value());
                        at += p.mask_len;
                        if at == full {
                            tx.send(MSG_MASKS, &frame)?;
                            at = 0;
                        }
                    }
                    *bucket = Vec::new();
                }
                if at > 0 {
                    tx.send(MSG_MASKS, &frame[..at])?;
                    at = 0;
                }
            }
            run.lap("masks");
            Ok(())
        },
    )?;
    Ok(run.sender_output())
}

/// The sender's masks of the items of bins `b0..b1` (one per receiver slot position of their
/// bin), appended to `masks` by slot position and bucket.
#[allow(clippy::too_many_arguments)]
fn masks_of_chunk(
    pl: &Placement,
    p: &DeParams,
    b0: usize,
    b1: usize,
    batch: &OosReceiverBatch,
    keys: &OosSenderOutputs,
    masks: &mut Buckets<Mask>,
    own: &mut Vec<Block>,
    local: &mut Vec<u128>,
) -> Result<()> {
    let (br, bs) = (p.slots_r, p.slots_s);
    let (k0, k1) = (pl.bin_start[b0] as usize, pl.bin_start[b1] as usize);
    let members = &pl.by_bin[k0..k1];
    let (slots, inputs) = (&pl.bin_slots[k0..k1], &pl.bin_inputs[k0..k1]);
    let wanted: Vec<usize> = slots.iter().map(|&s| s as usize - b0 * bs).collect();
    own.clear();
    own.resize(members.len(), Block::ZERO);
    batch.outputs(&wanted, own)?;
    local.clear();
    local.resize(members.len() * br, 0);
    local
        .par_chunks_mut(PAR_ITEMS * br)
        .zip(own.par_chunks(PAR_ITEMS))
        .zip(
            slots
                .par_chunks(PAR_ITEMS)
                .zip(inputs.par_chunks(PAR_ITEMS)),
        )
        .try_for_each(|((out, r), (sl, xs))| -> Result<()> {
            let mut v = vec![Block::ZERO; br];
            let each = out.chunks_exact_mut(br).zip(r).zip(sl.iter().zip(xs));
            for ((out, r), (&slot, &x)) in each {
                let bin = slot as usize / bs;
                let c = keys.masked_code(x);
                keys.eval_masked(&c, (bin - b0) * br, &mut v)?;
                for (o, v) in out.iter_mut().zip(&v) {
                    *o = truncate(*v ^ *r, p.mask_len);
                }
            }
            Ok(())
        })?;
    for m in local.chunks_exact(br) {
        for (position, &v) in m.iter().enumerate() {
            masks.push(position, v as u64, Mask::new(v));
        }
    }
    Ok(())
}
