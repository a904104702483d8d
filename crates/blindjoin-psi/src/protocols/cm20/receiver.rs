//! The receiver's side of `cm20` (CM20's P2; see the module doc for the message flow).

use super::join;
use super::matrix::{self, Column, Span};
use super::{MSG_DELTA, MSG_KEY, MSG_SETUP, MSG_TAGS, Model, Params, Prf, PrfKey, h1};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::{BulkReader, Channel, FrameSender, send_msg};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Result};
use blindjoin_ot::base::BaseOtSender;
use rand::CryptoRng;
use zeroize::{Zeroize, Zeroizing};

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    receive_as(Model::SemiHonest, ch, items, opts, rng)
}

/// Runs the receiver of `model` (`cm20` or `cm20_mal`).
pub(crate) fn receive_as<C: Channel + ?Sized>(
    model: Model,
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, model.protocol(), Role::Receiver, items.len(), opts, rng)?;

    let (n_recv, n_send) = (items.len() as u64, run.session.sender_size);
    let p = Params::with_model(model, run.session.kappa, run.session.lambda, n_recv, n_send)?;
    send_msg(ch, MSG_SETUP, &p.setup())?;
    // Fig. 4 step 1: w random OTs, we are the OT sender.
    let keys = Zeroizing::new(match model {
        Model::SemiHonest => run.base_ot().send_random(ch, &run.session.id, p.w, rng)?,
        Model::MaliciousSender => {
            run.malicious_base_ot()
                .send_random(ch, &run.session.id, p.w, rng)?
        }
    });
    let mut key = PrfKey { key: [0u8; 16] };
    rng.fill_bytes(&mut key.key);
    send_msg(ch, MSG_KEY, &key)?;
    run.lap("base OT");

    let prf = Prf::new(&key.key, p.prf_blocks);
    let z = prf.inputs(&h1(&run.session.id), items);
    run.lap("prf");

    let slabs = columns(ch, &p, &prf, &z, &keys, opts)?;
    drop(keys);
    run.lap("matrix");

    let h2 = p.h2(&run.session.id);
    let mut own = vec![0u8; items.len() * p.tag_len];
    matrix::tags(&p, &h2, &slabs, items.len(), &mut own);
    drop(slabs);
    run.lap("h2");

    // Exactly n_S values, the size the sender announced in the handshake (|Ψ| = n1: the
    // reader refuses a frame with more values than remain, and a short stream ends in an error).
    let mut peer = Vec::new();
    let mut reader = BulkReader::new(MSG_TAGS, p.tag_len, n_send);
    while let Some(frame) = reader.next_frame(ch)? {
        peer.push(frame);
    }
    let indices = join::matches(&own, &peer, p.tag_len);
    run.lap("match");
    Ok(run.receiver_output(indices))
}

/// Builds D column block by column block, sends every Δ_j, and returns the receiver's rows of A
/// at its own items' indices as slabs of 128 columns (block i of slab s = item i's bits of
/// columns 128s…128s+127).
fn columns(
    ch: &mut (impl FrameSender + ?Sized),
    p: &Params,
    prf: &Prf,
    z: &[Block],
    keys: &[[[u8; 16]; 2]],
    opts: &RunOptions,
) -> Result<Vec<Vec<Block>>> {
    // A_j and D_j interleaved by 64-bit words: 2·m/8 bytes of state per column.
    matrix::drive(
        p,
        z.len(),
        p.m / 4,
        matrix::spans_per_batch(),
        |span_max| Slot::new(p, span_max),
        |_, _| Ok(()),
        |slot, span, rows| slot.run(p, prf, z, keys, span, rows),
        |slot, span| {
            for col in &slot.cols[..span.len] {
                for frame in col.delta.chunks(p.frame_len()) {
                    ch.send(MSG_DELTA, frame)?;
                }
            }
            Ok(())
        },
        opts,
    )
}

/// One column of the receiver: A_j and D_j interleaved (`words[k] = [A_j word k, D_j word k]`),
/// and Δ_j once computed.
struct RecvColumn {
    words: Vec<[u64; 2]>,
    delta: Vec<u8>,
}

impl Column for RecvColumn {
    /// Sets D_j[idx] = 0 (Fig. 3, step 1c) and returns A_j[idx].
    #[inline(always)]
    fn read(&mut self, idx: usize) -> u64 {
        let (k, bit) = (idx / 64, idx % 64);
        let w = &mut self.words[k];
        w[1] &= !(1u64 << bit);
        (w[0] >> bit) & 1
    }
}

/// The buffers of one span, reused from batch to batch.
struct Slot {
    cols: Vec<RecvColumn>,
    prg: Vec<Block>,
    buf: Vec<Block>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        for c in &mut self.cols {
            c.words.as_flattened_mut().zeroize();
        }
        self.prg.zeroize();
    }
}

impl Slot {
    fn new(p: &Params, span_max: usize) -> Slot {
        Slot {
            cols: (0..span_max)
                .map(|_| RecvColumn {
                    words: vec![[0, 0]; p.m / 64],
                    delta: vec![0u8; p.column_bytes()],
                })
                .collect(),
            prg: vec![Block::ZERO; p.m / 128],
            buf: Vec::new(),
        }
    }

    /// Columns `span`: A_j = G(k_j^0), D_j = 1^m, then D_j[v_j(y)] = 0 and the bits A_j[v_j(y)]
    /// for every own y (into `rows`), then Δ_j = A_j ⊕ D_j ⊕ G(k_j^1) (Fig. 4, step 2).
    fn run(
        &mut self,
        p: &Params,
        prf: &Prf,
        z: &[Block],
        keys: &[[[u8; 16]; 2]],
        span: Span,
        rows: &mut [&mut [u8]],
    ) {
        let cols = &mut self.cols[..span.len];
        for (k, col) in cols.iter_mut().enumerate() {
            AesPrg::new(Block::from_bytes(keys[span.first + k][0])).fill_blocks(&mut self.prg);
            for (w, b) in col.words.chunks_exact_mut(2).zip(&self.prg) {
                w[0] = [b.0 as u64, !0];
                w[1] = [(b.0 >> 64) as u64, !0];
            }
        }
        matrix::gather(p, prf, z, span.first, cols, rows, &mut self.buf);
        for (k, col) in cols.iter_mut().enumerate() {
            AesPrg::new(Block::from_bytes(keys[span.first + k][1])).fill_blocks(&mut self.prg);
            for ((out, w), b) in col
                .delta
                .chunks_exact_mut(16)
                .zip(col.words.chunks_exact(2))
                .zip(&self.prg)
            {
                let lo = w[0][0] ^ w[0][1] ^ b.0 as u64;
                let hi = w[1][0] ^ w[1][1] ^ (b.0 >> 64) as u64;
                out[..8].copy_from_slice(&lo.to_le_bytes());
                out[8..].copy_from_slice(&hi.to_le_bytes());
            }
        }
    }
}
