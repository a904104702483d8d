//! The sender's side of `cm20` (CM20's P1; see the module doc for the message flow).

use super::matrix::{self, Column, Span};
use super::{
    MSG_DELTA, MSG_KEY, MSG_SETUP, MSG_TAGS, Model, Params, Prf, PrfKey, Setup, h1,
};
use crate::protocols::common::{CHUNK, pipelined, queue_closed, queue_frames};
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::{Channel, FrameReceiver, recv_msg, send_elements};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::base::BaseOtReceiver;
use rand::CryptoRng;
use rand::seq::SliceRandom;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use zeroize::{Zeroize, Zeroizing};

/// Runs the sender with `items` (distinct) on `ch`.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    send_as(Model::SemiHonest, ch, items, opts, rng)
}

/// Runs the sender of `model` (`cm20` or `cm20_mal`).
pub(crate) fn send_as<C: Channel + ?Sized>(
    model: Model,
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, model.protocol(), Role::Sender, items.len(), opts, rng)?;

    let (n_recv, n_send) = (run.session.receiver_size, items.len() as u64);
    let p = Params::with_model(model, run.session.kappa, run.session.lambda, n_recv, n_send)?;
    // m follows the receiver's size: refuse here, before anything is allocated, if even one
    // span of Δ columns would not fit the memory budget.
    let per_batch = batch_within_budget(&p, opts)?;
    let setup: Setup = recv_msg(ch, MSG_SETUP, 32)?;
    p.check(&setup)?;
    // The values go out in a random order: process the items in one.
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.shuffle(rng);
    let items: Vec<Item> = order.iter().map(|&i| items[i]).collect();
    drop(order);

    // Fig. 4 step 1: w random OTs with random choice bits s, we are the OT receiver.
    let s: Zeroizing<Vec<bool>> =
        Zeroizing::new((0..p.w).map(|_| rng.next_u32() & 1 == 1).collect());
    let keys = Zeroizing::new(match model {
        Model::SemiHonest => run.base_ot().receive_random(ch, &run.session.id, &s, rng)?,
        Model::MaliciousSender => {
            run.malicious_base_ot()
                .receive_random(ch, &run.session.id, &s, rng)?
        }
    });
    let key: PrfKey = recv_msg(ch, MSG_KEY, 16)?;
    let prf = Prf::new(&key.key, p.prf_blocks);
    drop(key);
    run.lap("base OT");

    let (frame_len, frames) = (p.frame_len(), p.w * p.frames_per_column());
    // Frames the matrix is done with go back to the reader, which receives into them.
    let (spare_tx, spare_rx) = mpsc::channel::<Vec<u8>>();
    pipelined(
        ch,
        queue_frames(frame_len),
        move |rx, queue_tx, aborted| {
            read_deltas(rx, frame_len, frames, &queue_tx, &spare_rx, aborted)
        },
        |tx, queue_rx| {
            let z = prf.inputs(&h1(&run.session.id), &items);
            run.lap("prf");
            let queue = Deltas {
                full: queue_rx,
                spare: spare_tx,
            };
            let slabs = columns(&p, &prf, &z, &keys, &s, &queue, per_batch, opts)?;
            drop(z);
            run.lap("matrix");
            let h2 = p.h2(&run.session.id);
            let mut tags = vec![0u8; items.len() * p.tag_len];
            matrix::tags(&p, &h2, &slabs, items.len(), &mut tags);
            drop(slabs);
            run.lap("h2");
            send_elements(tx, MSG_TAGS, &tags, p.tag_len, CHUNK)?;
            run.lap("send");
            Ok(())
        },
    )?;
    Ok(run.sender_output())
}

/// Bytes one span of the sender holds at most: its columns C_j (m/8 bytes each, allocated when
/// the span's Δ frames have arrived), their Δ frames (as many bytes again) and one frame of PRG
/// output.
fn span_bytes(p: &Params) -> u64 {
    let columns = matrix::span_max(p, p.m / 8) as u64;
    columns * 2 * p.column_bytes() as u64 + p.frame_len() as u64
}

/// Spans per batch: [`matrix::spans_per_batch`], fewer if their columns and the reader's queue
/// would exceed the memory budget; `InvalidParam` naming `memory_budget` if not even one span
/// fits.
fn batch_within_budget(p: &Params, opts: &RunOptions) -> Result<usize> {
    let span = span_bytes(p);
    let queue = (queue_frames(p.frame_len()) * p.frame_len()) as u64;
    opts.check_memory("cm20's sender (one span of Δ columns and the queue)", span + queue)?;
    let fit = match opts.memory_budget {
        Some(budget) => (budget.saturating_sub(queue) / span.max(1)).max(1),
        None => u64::MAX,
    };
    Ok(matrix::spans_per_batch().min(usize::try_from(fit).unwrap_or(usize::MAX)))
}

/// The Δ frames between the reader and the matrix: received ones, and used ones on their way
/// back to be received into again.
struct Deltas {
    full: mpsc::Receiver<Vec<u8>>,
    spare: mpsc::Sender<Vec<u8>>,
}

/// Reads the `frames` Δ frames, each exactly `frame_len` bytes, into `queue`, reusing the
/// buffers that come back on `spare`.
fn read_deltas(
    rx: &mut dyn FrameReceiver,
    frame_len: usize,
    frames: usize,
    queue: &mpsc::SyncSender<Vec<u8>>,
    spare: &mpsc::Receiver<Vec<u8>>,
    aborted: &AtomicBool,
) -> Result<()> {
    for i in 0..frames {
        if aborted.load(Ordering::Relaxed) {
            break;
        }
        let mut frame = spare.try_recv().unwrap_or_default();
        rx.recv_into(MSG_DELTA, frame_len, &mut frame)?;
        if frame.len() != frame_len {
            return Err(Error::malformed(
                MSG_DELTA,
                format!("frame {i} has {} bytes, expected {frame_len}", frame.len()),
            ));
        }
        if queue.send(frame).is_err() {
            // The consumer stopped; it reports why.
            break;
        }
    }
    Ok(())
}

/// Receives the Δ columns block by block, forms C_j = G(k_j^{s_j}) ⊕ s_j·Δ_j, and returns the
/// bits C_j[v_j(x)] of every own x as slabs of 128 columns; `per_batch` spans at a time.
#[allow(clippy::too_many_arguments)]
fn columns(
    p: &Params,
    prf: &Prf,
    z: &[Block],
    keys: &[[u8; 16]],
    s: &[bool],
    queue: &Deltas,
    per_batch: usize,
    opts: &RunOptions,
) -> Result<Vec<Vec<Block>>> {
    matrix::drive(
        p,
        z.len(),
        p.m / 8,
        per_batch,
        Slot::new,
        |slot, span| {
            for frames in &mut slot.delta[..span.len] {
                for used in frames.drain(..) {
                    // The reader may be done; then the buffer is simply dropped.
                    let _ = queue.spare.send(used);
                }
                for _ in 0..p.frames_per_column() {
                    frames.push(queue.full.recv().map_err(|_| queue_closed(MSG_DELTA))?);
                }
            }
            Ok(())
        },
        |slot, span, rows| slot.run(p, prf, z, keys, s, span, rows),
        |_, _| Ok(()),
        opts,
    )
}

/// `words ^= frame` (little-endian 64-bit words) if `bit`, else nothing, in constant time: the
/// frame is always read and XORed under an all-ones or all-zero mask, so neither a branch nor
/// the memory traffic depends on the secret choice bit.
fn xor_if(words: &mut [u64], frame: &[u8], bit: bool) {
    let mask = 0u64.wrapping_sub(u64::from(std::hint::black_box(bit)));
    for (w, d) in words.iter_mut().zip(frame.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(d);
        *w ^= u64::from_le_bytes(b) & mask;
    }
}

/// One column C_j of the sender.
struct SendColumn {
    words: Vec<u64>,
}

impl Column for SendColumn {
    #[inline(always)]
    fn read(&mut self, idx: usize) -> u64 {
        (self.words[idx / 64] >> (idx % 64)) & 1
    }
}

/// The buffers of one span, reused from batch to batch. The columns and the PRG buffer are
/// allocated when the span first runs, i.e. once its Δ frames have arrived: m follows the
/// receiver's announced size, and a receiver that announces a large set and sends no Δ must
/// not cost a column.
struct Slot {
    cols: Vec<SendColumn>,
    /// The Δ frames of each column of the span.
    delta: Vec<Vec<Vec<u8>>>,
    /// One frame's worth of G(k_j^{s_j}).
    prg: Vec<Block>,
    buf: Vec<Block>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        for c in &mut self.cols {
            c.words.zeroize();
        }
        self.prg.zeroize();
    }
}

impl Slot {
    fn new(span_max: usize) -> Slot {
        Slot {
            cols: (0..span_max)
                .map(|_| SendColumn { words: Vec::new() })
                .collect(),
            delta: (0..span_max).map(|_| Vec::new()).collect(),
            prg: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// Columns `span`: C_j = G(k_j^{s_j}) ⊕ s_j·Δ_j (Fig. 4, step 3), then the bits C_j[v_j(x)]
    /// for every own x (into `rows`).
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        p: &Params,
        prf: &Prf,
        z: &[Block],
        keys: &[[u8; 16]],
        s: &[bool],
        span: Span,
        rows: &mut [&mut [u8]],
    ) {
        let cols = &mut self.cols[..span.len];
        let words_per_frame = p.frame_len() / 8;
        self.prg.resize(words_per_frame / 2, Block::ZERO);
        for (k, col) in cols.iter_mut().enumerate() {
            let j = span.first + k;
            col.words.resize(p.m / 64, 0);
            // G(k_j^{s_j}) frame by frame (the stream continues across calls), then Δ_j.
            let mut g = AesPrg::new(Block::from_bytes(keys[j]));
            for (words, frame) in col.words.chunks_mut(words_per_frame).zip(&self.delta[k]) {
                g.fill_blocks(&mut self.prg);
                for (w, b) in words.chunks_exact_mut(2).zip(&self.prg) {
                    w[0] = b.0 as u64;
                    w[1] = (b.0 >> 64) as u64;
                }
                xor_if(words, frame, s[j]);
            }
        }
        matrix::gather(p, prf, z, span.first, cols, rows, &mut self.buf);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn columns_longer_than_a_frame_continue_the_prg_stream() {
        // m = 2^24: a column of 2 MiB in two Δ frames; C_j = G(k_j) ⊕ Δ_j over the whole
        // column although G is generated a frame at a time.
        let p = Params::new(128, 40, 1 << 24, 10).unwrap();
        assert_eq!(p.frames_per_column(), 2);
        let keys = vec![[3u8; 16]; p.w];
        let mut slot = Slot::new(1);
        slot.delta[0] = (0..2u8)
            .map(|f| (0..p.frame_len()).map(|i| (i as u8) ^ f).collect())
            .collect();
        let prf = Prf::new(&[1; 16], p.prf_blocks);
        for bit in [true, false] {
            let s = vec![bit; p.w];
            let mut rows: Vec<&mut [u8]> = vec![&mut []];
            slot.run(&p, &prf, &[], &keys, &s, Span { first: 0, len: 1 }, &mut rows);
            let mut g = vec![Block::ZERO; p.m / 128];
            AesPrg::new(Block::from_bytes(keys[0])).fill_blocks(&mut g);
            let words = &slot.cols[0].words;
            assert_eq!(words.len(), p.m / 64);
            for (i, w) in words.iter().enumerate() {
                let b = g[i / 2].0;
                let gw = if i % 2 == 0 { b as u64 } else { (b >> 64) as u64 };
                let (f, at) = (i * 8 / p.frame_len(), i * 8 % p.frame_len());
                let mut d = [0u8; 8];
                d.copy_from_slice(&slot.delta[0][f][at..at + 8]);
                let d = if bit { u64::from_le_bytes(d) } else { 0 };
                assert_eq!(*w, gw ^ d, "word {i}");
            }
        }
    }

    #[test]
    fn xor_if_applies_the_frame_exactly_when_the_bit_is_set() {
        let frame: Vec<u8> = (0..32u8).collect();
        let base = [1u64, 2, 3, 4];
        let mut on = base;
        xor_if(&mut on, &frame, true);
        for (k, w) in on.iter().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&frame[8 * k..8 * k + 8]);
            assert_eq!(*w, base[k] ^ u64::from_le_bytes(b));
        }
        let mut off = base;
        xor_if(&mut off, &frame, false);
        assert_eq!(off, base);
    }
}
