//! The receiver's side of `gbf` (see the module doc for the message flow).

use super::{OtReceiver, MSG_RECEIVER_SETUP, MSG_SENDER_SETUP, MSG_SHARES, PROTOCOL, filter_params, encode, encoder};
use crate::hashing::bloom::BloomPairs;
use crate::protocols::common::{
    found_indices, pipelined, queue_closed, queue_frames, tag_from_bytes,
};
use crate::protocols::filters::{self, CHUNK, accumulate, chunk_bits, chunk_len, truncate};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use zeroize::Zeroizing;

/// Chunks whose OT the receiver may run ahead of the sender's strings it has processed.
const AHEAD: usize = 4;

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
///
/// Errors: the handshake's; `ParamMismatch` naming `bloom_bits`, `bloom_hashes` or `ell` if the
/// sender's filter parameters differ from ours; `InvalidParam` for sizes a filter cannot serve;
/// `Malformed`, `FrameTooLong` or `PeerClosed` when the sender's strings are not what the agreed
/// sizes imply.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let p = filter_params(run.session.kappa, run.session.lambda, n1, n2)?;
    p.exchange(ch, MSG_RECEIVER_SETUP, MSG_SENDER_SETUP)?;
    let hasher = filters::hasher(&run.session, "gbf/bloom", p.k, p.m)?;
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    let mut enc = blocks.clone();
    encode(&encoder(&run.session), &mut enc, p.ell);
    run.lap("hash");

    let mut ot = OtReceiver::setup(&run, ch, rng)?;
    run.lap("base OT");

    let (m, ell, chunks) = (p.m, p.ell, p.chunks());
    let passes = filters::passes(p.k, items.len(), m, opts);
    let groups = rayon::current_num_threads();
    let acc = pipelined(
        ch,
        queue_frames(CHUNK * ell),
        move |rx, queue, aborted| {
            // One frame per chunk, of exactly its strings.
            for c in 0..chunks {
                if aborted.load(Ordering::Relaxed) {
                    break;
                }
                let want = chunk_len(m, c) * ell;
                let frame = rx.recv(MSG_SHARES, want)?;
                if frame.len() != want {
                    return Err(Error::malformed(
                        MSG_SHARES,
                        format!("a frame of {} bytes for chunk {c}, {want} expected", frame.len()),
                    ));
                }
                if queue.send(frame).is_err() {
                    break;
                }
            }
            Ok(())
        },
        |tx, frames| {
            // One accumulator per element: the XOR of its positions' strings; wiped on drop.
            let mut acc = Zeroizing::new(vec![Block::ZERO; items.len()]);
            let mut bits = Zeroizing::new(Vec::new());
            // The OT outputs of the chunks sent and not yet processed, oldest first.
            let mut ahead: VecDeque<(usize, Zeroizing<Vec<Block>>)> = VecDeque::new();
            let mut values = Zeroizing::new(vec![Block::ZERO; CHUNK]);
            let mut process = |c: usize, ones: &[Block], pairs: &BloomPairs, acc: &mut [Block]| {
                // The reader checked the frame's length.
                let frame = frames.recv().map_err(|_| queue_closed(MSG_SHARES))?;
                // GBF^π[i] = y_i ⊕ x_i^1 where our bit is 1 (elsewhere no element reads it).
                for ((v, y), o) in values.iter_mut().zip(frame.chunks_exact(ell)).zip(ones) {
                    *v = Block(tag_from_bytes(y) ^ truncate(*o, ell));
                }
                accumulate(pairs, c, &values, acc);
                Ok::<(), Error>(())
            };
            for pass in passes {
                let pairs = BloomPairs::build(&hasher, &blocks, pass.clone(), CHUNK, groups);
                for c in pass {
                    let len = chunk_len(m, c);
                    chunk_bits(&pairs, c, len, &mut bits);
                    let mut ones = Zeroizing::new(vec![Block::ZERO; len]);
                    ot.receive_ones(tx, &bits, &mut ones)?;
                    ahead.push_back((c, ones));
                    if ahead.len() > AHEAD
                        && let Some((c, ones)) = ahead.pop_front()
                    {
                        process(c, &ones, &pairs, &mut acc)?;
                    }
                    run.report("ot", (c + 1) as u64, chunks as u64);
                }
                // The pairs of this pass serve the chunks still ahead.
                while let Some((c, ones)) = ahead.pop_front() {
                    process(c, &ones, &pairs, &mut acc)?;
                }
            }
            Ok(acc)
        },
    )?
    .1;
    run.lap("ot");

    let found: Vec<bool> = acc.iter().zip(&enc).map(|(a, e)| a.0 == e.0).collect();
    let indices = found_indices(&found);
    run.lap("match");
    Ok(run.receiver_output(indices))
}
