//! The receiver's side of `rr17_de` (see the module doc for the message flow).

use super::engine::{
    BucketJoin, Buckets, Entry, Queued, duplex_chunks, forward, read_chunks, truncate,
};
use super::{
    BASE_OTS, DeParams, FORWARD, MASK_FRAME, MSG_COMMIT, MSG_MASKS, MSG_OPENING, MSG_SHARE,
    PROTOCOL, Placement, REVERSE, bin_key, commitment, de_params, place, place_in_bins,
};
use crate::protocols::common::{pipelined, queue_frames, set_size};
use crate::protocols::rr17a::recv_exact;
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
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
    receive_encoding(ch, items, None, opts, rng)
}

/// [`receive`] with the OOS16 input of each item's slot taken from `slot_items[i]` instead of
/// `items[i]` where given: a party that encodes other items than it evaluates (the tests'
/// cheating party; `None` is the protocol).
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
    let p = de_params(run.session.lambda, n1, n2)?;
    let n2 = set_size(n2)?;
    run.opts.check_memory(
        "the bins and the receiver's values",
        (p.bins as u64) * 4 + n1 * (p.slots_s as u64) * 17,
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

    let mut fwd =
        OosReceiver::setup(&mut KosBase(run.malicious_base_ot()), ch, &sid, rng)?.named(FORWARD);
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
    let mut pl = place(items, key, &p, p.slots_r, &mut prg)?;
    if let Some(other) = slot_items {
        pl.encoded = Some(place_in_bins(other, key, &p).inputs);
    }
    run.lap("bins");

    let (br, bs) = (p.slots_r, p.slots_s);
    let queue = queue_frames(oos::u_frame_len(p.chunk_bins * br.max(bs)));
    let (_, hit) = pipelined(
        ch,
        queue,
        |rx: &mut dyn FrameReceiver, q, aborted| {
            if !read_chunks(rx, &q, aborted, &p, bs, REVERSE, FORWARD)? {
                return Ok(());
            }
            for _ in 0..br {
                let mut got = 0;
                while got < n2 {
                    let count = MASK_FRAME.min(n2 - got);
                    if !forward(rx, &q, aborted, MSG_MASKS, count * p.mask_len)? {
                        return Ok(());
                    }
                    got += count;
                }
            }
            Ok(())
        },
        |tx: &mut dyn FrameSender, q| -> Result<Vec<bool>> {
            let mut rx = Queued(q);
            // The receiver's values, by the slot position of their item.
            let mut count = vec![0usize; br];
            for &s in &pl.slot_of {
                count[s as usize % br] += 1;
            }
            let expected: Vec<usize> = count.iter().map(|&c| c * bs).collect();
            let mut values: Buckets<Entry> = Buckets::new(p.bucket_bits, &expected);
            let mut own = Zeroizing::new(Vec::new());
            let mut local: Vec<Entry> = Vec::new();
            duplex_chunks(
                tx,
                &mut rx,
                &mut fwd,
                &mut rev,
                REVERSE.challenge,
                &p,
                &pl,
                (br, bs),
                |b0, b1, batch, keys| {
                    values_of_chunk(
                        &pl,
                        &p,
                        b0,
                        b1,
                        batch,
                        keys,
                        &mut values,
                        &mut own,
                        &mut local,
                    )
                },
                |b1| run.report("encodings", b1 as u64, p.bins as u64),
            )?;
            drop(local);
            run.lap("encodings");

            let mut hit = vec![false; items.len()];
            let mut join = BucketJoin::new(p.bucket_bits);
            for l in 0..br {
                let buckets = values.position(l);
                join.reset();
                let mut got = 0usize;
                while got < n2 {
                    let count = MASK_FRAME.min(n2 - got);
                    let frame = rx.recv(MSG_MASKS, count * p.mask_len)?;
                    if frame.len() != count * p.mask_len {
                        return Err(Error::malformed(
                            MSG_MASKS,
                            format!("{} bytes, {} expected", frame.len(), count * p.mask_len),
                        ));
                    }
                    join.probe_frame(buckets, &frame, p.mask_len, MSG_MASKS, |i| {
                        hit[i as usize] = true;
                    })?;
                    got += count;
                }
                buckets.iter_mut().for_each(|b| *b = Vec::new());
            }
            run.lap("match");
            Ok(hit)
        },
    )?;
    let indices = hit
        .iter()
        .enumerate()
        .filter_map(|(i, &h)| h.then_some(i))
        .collect();
    Ok(run.receiver_output(indices))
}

/// The receiver's values of the items of bins `b0..b1` (their comparison values at each of
/// the sender's `bs` slots of their bin), appended to `values` by slot position and bucket.
#[allow(clippy::too_many_arguments)]
fn values_of_chunk(
    pl: &Placement,
    p: &DeParams,
    b0: usize,
    b1: usize,
    batch: &OosReceiverBatch,
    keys: &OosSenderOutputs,
    values: &mut Buckets<Entry>,
    own: &mut Vec<Block>,
    local: &mut Vec<Entry>,
) -> Result<()> {
    let (br, bs) = (p.slots_r, p.slots_s);
    let (k0, k1) = (pl.bin_start[b0] as usize, pl.bin_start[b1] as usize);
    let members = &pl.by_bin[k0..k1];
    let (slots, inputs) = (&pl.bin_slots[k0..k1], &pl.bin_inputs[k0..k1]);
    let wanted: Vec<usize> = slots.iter().map(|&s| s as usize - b0 * br).collect();
    own.clear();
    own.resize(members.len(), Block::ZERO);
    batch.outputs(&wanted, own)?;
    local.clear();
    local.resize(members.len() * bs, Entry::new(0, 0));
    local
        .par_chunks_mut(PAR_ITEMS * bs)
        .zip(members.par_chunks(PAR_ITEMS))
        .zip(own.par_chunks(PAR_ITEMS))
        .zip(
            slots
                .par_chunks(PAR_ITEMS)
                .zip(inputs.par_chunks(PAR_ITEMS)),
        )
        .try_for_each(|(((e, m), r), (sl, xs))| -> Result<()> {
            let mut v = vec![Block::ZERO; bs];
            let each = e.chunks_exact_mut(bs).zip(m).zip(r).zip(sl.iter().zip(xs));
            for (((e, &i), r), (&slot, &x)) in each {
                let bin = slot as usize / br;
                let c = keys.masked_code(x);
                keys.eval_masked(&c, (bin - b0) * bs, &mut v)?;
                for (e, v) in e.iter_mut().zip(&v) {
                    *e = Entry::new(truncate(*v ^ *r, p.mask_len), i);
                }
            }
            Ok(())
        })?;
    for (&slot, e) in slots.iter().zip(local.chunks_exact(bs)) {
        let position = slot as usize % br;
        for e in e {
            values.push(position, e.low(), *e);
        }
    }
    Ok(())
}
