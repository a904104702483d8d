//! KKRT16 batched oblivious PRF ("1-out-of-∞ OT"), semi-honest.
//!
//! **Paper.** Kolesnikov, Kumaresan, Rosulek, Trieu, *Efficient Batched Oblivious PRF with
//! Applications to Private Set Intersection* (CCS 2016, "KKRT16"), §3 (the batched OPRF from
//! IKNP with a pseudorandom code in place of the repetition code). CM20 §1.2 ("Single-Point
//! OPRF") restates it in the notation used here.
//!
//! **Construction.** The receiver R has inputs x_0..x_{m-1} (one per OPRF instance), the sender
//! S a random s ∈ {0,1}^k. With C: {0,1}^128 → {0,1}^k a pseudorandom code, instance i's PRF is
//!
//! ```text
//! F_i(y) = H(i, q_i ⊕ (C(y) ∧ s)),   q_i = t_i ⊕ (C(x_i) ∧ s)
//! ```
//!
//! so R, who knows t_i, learns F_i(x_i) = H(i, t_i) and nothing about F_i(y) for y ≠ x_i, and S,
//! who knows (q_i, s), can evaluate F_i anywhere. The message flow is the wide IKNP core of
//! `wide.rs` with k = 128·w base OTs and codewords C(x_i):
//!
//! ```text
//! setup:  k random base OTs in reversed roles (R sends, S chooses with s)
//! per chunk of ≤ 2^16 instances:
//!   R: u^j = G(k_j^0) ⊕ G(k_j^1) ⊕ C^j   (C^j: column j of the matrix with rows C(x_i))
//!   R → S: u^1..u^k                      (k bits per instance)
//!   S: q^j = G(k_j^{s_j}) ⊕ s_j·u^j
//! R outputs H(i, t_i); S keeps (q_i, s) and evaluates F_i(y) on demand.
//! ```
//!
//! **Lifecycle.** [`KkrtSender::setup`] / [`KkrtReceiver::setup`] check the code width (before
//! anything is sent), run the k base OTs with the base OT they are given and return the ready
//! OPRF, which serves any number of batches (the instance index counts across calls); there is
//! no other constructor, so a batch before setup does not compile. s, the PRG keys and the row
//! and codeword buffers are wiped when the value (or the last batch of keys sharing s) is
//! dropped.
//!
//! **Code.** C(y) = AES_{K_1}(y) ‖ … ‖ AES_{K_w}(y), w = k/128 AES keys derived from the session
//! id (so they are fixed only after both parties' inputs are: the session id hashes both hello
//! messages and their fresh nonces). This is KKRT16's instantiation of the pseudorandom code by
//! a PRF, and the multi-key AES of their implementation.
//!
//! **Code width.** F_i(y) for y ≠ x_i is pseudorandom as long as C(x_i) and C(y) differ in at
//! least κ positions, since then (C(x_i) ⊕ C(y)) ∧ s hides κ bits of s from R. With C a PRF the
//! distance is Binomial(k, 1/2), and a union bound over the sender's evaluations E (each is
//! compared with the receiver's input of its own instance) gives failure probability
//! E · Pr[Binomial(k, 1/2) < κ], which must be ≤ 2^-λ. [`min_code_len`] computes the smallest
//! such k and [`code_blocks`] rounds it up to whole AES blocks: for κ = 128, λ = 40 it is 415
//! bits at E = 3·2^8, 447 at E = 3·2^24 and 462 at E = 3·2^32, so w = 4 (k = 512) for every set
//! size this system handles, which is the width KKRT16's implementation uses. KKRT16's own
//! table of k is not among this project's papers; what is, CM20 Table 2, prints KKRT's receiver
//! communication as 1.2n·512 bits (4.82 MB at n = 2^16 up to 1,229 MB at 2^24), which the unit
//! test `cm20_table2_kkrt_receiver_column` reproduces from [`code_blocks`]. At κ = 80 (PSZ14
//! Tab. 2's short-term level) the bound gives 334 bits at E = 3·2^32, so w = 3 (k = 384).
//!
//! **Hash.** H(i, x) = SHA-256(D ‖ le64(i) ‖ x) truncated to 128 bits (see `RowHash` in
//! `wide.rs`: two SHA-256 compressions for k = 512), modelled as a random oracle as in
//! KKRT16 (which needs H to be correlation robust for Hamming-distance-κ correlations).
//!
//! **Security model.** Semi-honest sender and receiver. No protection against a malicious
//! party (KKRT16 is semi-honest; the malicious PSI protocols use other constructions).
//!
//! **Deviations.** (1) H takes the instance index i as a tweak (KKRT16's H has no index; the
//! rows q_i are independent, and the index only separates instances explicitly). (2) The PRF
//! outputs are 128 bits; callers truncate (PSI sends λ + log2(n1·n2) bits). (3) Evaluation at an
//! out-of-range instance is an `InvalidParam` error, not a panic.

use super::wide::{RowHash, WideReceiver, WideSender, check_width, rows_to_columns};
use super::{KAPPA, check_out_len, grow_wiping, session_aes};
use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::Channel;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use std::sync::{Arc, Mutex, PoisonError};
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Name of the receiver's u columns (one frame per chunk of OTs).
pub const MSG_U_COLUMNS: &str = "the KKRT OPRF's u columns";

/// Label of the random oracle H.
const RO_LABEL: &str = "blindjoin/ot/kkrt/ro/v1";

/// Evaluations per rayon task and per batch of AES calls.
const BATCH: usize = 1024;

/// Instances extended and hashed per part by the receiver (bounds its memory).
const PART: usize = 1 << 18;

/// The code width KKRT16's implementation uses and [`code_blocks`] yields for κ = 128, λ = 40
/// and up to 3·2^32 evaluations: 4 blocks, k = 512 bits.
pub const DEFAULT_CODE_BLOCKS: usize = 4;

/// log2 of Pr[Binomial(k, 1/2) < d].
fn log2_binomial_half_tail_below(k: u32, d: u32) -> f64 {
    if d == 0 {
        return f64::NEG_INFINITY;
    }
    if d > k {
        return 0.0;
    }
    // ln C(k, i) from ln-factorials, summed in log space from the largest term (i = d - 1).
    let ln_fact: Vec<f64> = std::iter::once(0.0)
        .chain((1..=k).scan(0.0, |acc, j| {
            *acc += f64::from(j).ln();
            Some(*acc)
        }))
        .collect();
    let ln_c = |i: u32| ln_fact[k as usize] - ln_fact[i as usize] - ln_fact[(k - i) as usize];
    let top = ln_c(d - 1);
    let sum: f64 = (0..d).map(|i| (ln_c(i) - top).exp()).sum();
    (top + sum.ln()) / std::f64::consts::LN_2 - f64::from(k)
}

/// The smallest code length k (bits) with `evaluations · Pr[Binomial(k, 1/2) < kappa] ≤
/// 2^-lambda` (the module doc's bound). `evaluations` is clamped to at least 1.
///
/// The search takes milliseconds (hundreds of candidate lengths, each a sum of exponentials)
/// and every run asks for the same few values, so the answers are kept for the process.
pub fn min_code_len(kappa: u32, lambda: u32, evaluations: u64) -> usize {
    /// `((kappa, lambda, evaluations), k)` pairs.
    type Known = Vec<((u32, u32, u64), usize)>;
    static KNOWN: Mutex<Known> = Mutex::new(Vec::new());
    let key = (kappa, lambda, evaluations);
    let lock = || KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&(_, k)) = lock().iter().find(|(q, _)| *q == key) {
        return k;
    }
    let k = search_code_len(kappa, lambda, evaluations);
    let mut known = lock();
    if known.len() < 64 {
        known.push((key, k));
    }
    k
}

/// [`min_code_len`] without the kept answers: a scan up from k = `kappa`.
fn search_code_len(kappa: u32, lambda: u32, evaluations: u64) -> usize {
    let log_e = (evaluations.max(1) as f64).log2();
    let mut k = kappa;
    while log_e + log2_binomial_half_tail_below(k, kappa) > -f64::from(lambda) {
        k += 1;
    }
    k as usize
}

/// The code width in 128-bit blocks for computational security `kappa` (capped at 128: the
/// base OTs, the PRGs and the code's AES keys are 128-bit), statistical security `lambda` and
/// at most `evaluations` sender evaluations: ⌈[`min_code_len`] / 128⌉.
pub fn code_blocks(kappa: u32, lambda: u32, evaluations: u64) -> usize {
    min_code_len(kappa.min(KAPPA as u32), lambda, evaluations).div_ceil(128)
}

/// The pseudorandom code C(y) = AES_{K_1}(y) ‖ … ‖ AES_{K_w}(y).
#[derive(Clone, Debug)]
struct Prc {
    keys: Vec<FixedKeyAes>,
}

impl Prc {
    fn new(sid: &[u8; 32], width: usize) -> Self {
        Prc {
            keys: (0..width)
                .map(|g| session_aes(sid, &format!("ot/kkrt/prc/{g}")))
                .collect(),
        }
    }

    /// Codewords of `inputs` into `out` (w blocks per input, row-major).
    fn encode(&self, inputs: &[Block], tmp: &mut Vec<Block>, out: &mut Vec<Block>) {
        let w = self.keys.len();
        out.clear();
        grow_wiping(out, inputs.len() * w);
        out.resize(inputs.len() * w, Block::ZERO);
        for (g, aes) in self.keys.iter().enumerate() {
            tmp.clear();
            grow_wiping(tmp, inputs.len());
            tmp.extend_from_slice(inputs);
            aes.permute(tmp);
            for (row, c) in out.chunks_exact_mut(w).zip(tmp.iter()) {
                row[g] = *c;
            }
        }
    }
}

/// What every batch of sender outputs needs besides its rows.
struct SenderShared {
    s: Vec<Block>,
    prc: Prc,
    ro: RowHash,
}

impl Drop for SenderShared {
    fn drop(&mut self) {
        self.s.zeroize();
    }
}

/// s is wiped by `Drop`; the code's and the hash's keys are public.
impl ZeroizeOnDrop for SenderShared {}

/// KKRT16 OPRF sender. [`setup`](Self::setup) runs the base OTs and is the only way to get one.
/// Its secret s (in the extension core and in the part shared with its outputs) and its buffers
/// are wiped when the last of it and its outputs is dropped; `Debug` shows only the code width.
pub struct KkrtSender {
    width: usize,
    core: WideSender,
    shared: Arc<SenderShared>,
    /// The rows buffer of a recycled batch (zeroised, capacity kept).
    spare: Vec<Block>,
}

impl Drop for KkrtSender {
    fn drop(&mut self) {
        self.spare.zeroize();
    }
}

/// The spare buffer is wiped by `Drop`, the core and the shared part by their own.
impl ZeroizeOnDrop for KkrtSender {}

/// KKRT16 OPRF receiver. [`setup`](Self::setup) runs the base OTs and is the only way to get
/// one. Its PRG keys and its buffers (which hold rows and codewords of its inputs) are wiped when
/// it is dropped; `Debug` shows only the code width.
pub struct KkrtReceiver {
    width: usize,
    core: WideReceiver,
    prc: Prc,
    ro: RowHash,
    rows: Vec<Block>,
    codes: Vec<Block>,
    tmp: Vec<Block>,
}

impl Drop for KkrtReceiver {
    fn drop(&mut self) {
        self.rows.zeroize();
        self.codes.zeroize();
        self.tmp.zeroize();
    }
}

/// The buffers are wiped by `Drop`; the core wipes its PRGs and buffers.
impl ZeroizeOnDrop for KkrtReceiver {}

impl std::fmt::Debug for KkrtSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KkrtSender")
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for KkrtReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KkrtReceiver")
            .field("width", &self.width)
            .finish_non_exhaustive()
    }
}

/// The sender's keys for a batch of OPRF instances: the rows q_i, with which
/// [`eval`](Self::eval) computes F_i(y) for any y. Secret material is zeroised on drop.
pub struct KkrtSenderOutputs {
    rows: Vec<Block>,
    shared: Arc<SenderShared>,
    width: usize,
    first: u64,
    len: usize,
}

impl std::fmt::Debug for KkrtSenderOutputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KkrtSenderOutputs")
            .field("width", &self.width)
            .field("first", &self.first)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Drop for KkrtSenderOutputs {
    fn drop(&mut self) {
        self.rows.zeroize();
    }
}

/// The rows are wiped by `Drop`; s when the last holder of the shared part is dropped.
impl ZeroizeOnDrop for KkrtSenderOutputs {}

impl KkrtSenderOutputs {
    /// Number of instances in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The global index of the batch's first instance (indices count across calls).
    pub fn first_index(&self) -> u64 {
        self.first
    }

    fn check(&self, i: usize) -> Result<()> {
        if i >= self.len {
            return Err(Error::InvalidParam {
                field: "i",
                reason: format!("OPRF instance {i} of a batch of {}", self.len),
            });
        }
        Ok(())
    }

    /// F_i(y) for instance `i` of this batch: H(first + i, q_i ⊕ (C(y) ∧ s)); equals the
    /// receiver's output for instance `i` exactly when y is its input. `Err(InvalidParam)` if
    /// `i >= self.len()`.
    pub fn eval(&self, i: usize, y: Block) -> Result<Block> {
        let mut out = [Block::ZERO];
        self.evals(&[(i, y)], &mut out)?;
        Ok(out[0])
    }

    /// `out[k] = eval(queries[k].0, queries[k].1)`, in parallel batches. Checks every query
    /// first; `Err(InvalidParam)` on an out-of-range instance or if `out.len() !=
    /// queries.len()`.
    pub fn evals(&self, queries: &[(usize, Block)], out: &mut [Block]) -> Result<()> {
        check_out_len(queries.len(), out.len())?;
        for &(i, _) in queries {
            self.check(i)?;
        }
        out.par_chunks_mut(BATCH)
            .zip(queries.par_chunks(BATCH))
            .for_each(|(o, q)| self.eval_batch(q, o));
        Ok(())
    }

    fn eval_batch(&self, queries: &[(usize, Block)], out: &mut [Block]) {
        let w = self.width;
        let sh = &*self.shared;
        EVAL_SCRATCH.with_borrow_mut(|(ys, tmp, rows)| {
            ys.clear();
            ys.extend(queries.iter().map(|&(_, y)| y));
            sh.prc.encode(ys, tmp, rows);
            // rows[k] = q_i ⊕ (C(y) ∧ s) in place of the codeword C(y).
            for (x, &(i, _)) in rows.chunks_exact_mut(w).zip(queries) {
                let q = &self.rows[i * w..(i + 1) * w];
                for ((x, q), s) in x.iter_mut().zip(q).zip(&sh.s) {
                    *x = *q ^ (*x & *s);
                }
            }
            sh.ro
                .hash_indexed(|k| self.first + queries[k].0 as u64, rows, out);
            // Zeroised in place; the capacity stays for the thread's next batch.
            rows.iter_mut().for_each(Zeroize::zeroize);
            tmp.iter_mut().for_each(Zeroize::zeroize);
        });
    }
}

thread_local! {
    /// Per-thread buffers of [`KkrtSenderOutputs::evals`]: the inputs, the code's AES outputs
    /// and the rows being hashed (at most [`BATCH`]·w blocks each, zeroised after each batch).
    static EVAL_SCRATCH: std::cell::RefCell<(Vec<Block>, Vec<Block>, Vec<Block>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new(), Vec::new())) };
}

impl KkrtSender {
    /// Runs the k = 128·`width` base OTs with `base` (as their receiver, with a random s) and
    /// returns the ready sender of a code of `width` blocks (see [`code_blocks`]).
    /// `Err(InvalidParam)`, before anything is sent, unless 1 ≤ width ≤ 8.
    pub fn setup<B: BaseOtReceiver, C: Channel + ?Sized>(
        base: &mut B,
        width: usize,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        check_width(width)?;
        let ro = RowHash::new(RO_LABEL, sid, width)?;
        let core = WideSender::setup(base, ch, sid, width, rng)?;
        let shared = Arc::new(SenderShared {
            s: core.s().to_vec(),
            prc: Prc::new(sid, width),
            ro,
        });
        Ok(KkrtSender {
            width,
            core,
            shared,
            spare: Vec::new(),
        })
    }

    /// `m` OPRF instances: receives the receiver's u columns (one frame per chunk of ≤ 2^16
    /// instances, each exactly k·row_bytes bytes, else `Err(Malformed)`) and returns the keys.
    pub fn send<C: Channel + ?Sized>(&mut self, ch: &mut C, m: usize) -> Result<KkrtSenderOutputs> {
        // Wiped if an error ends the batch.
        let mut rows = Zeroizing::new(std::mem::take(&mut self.spare));
        let first = self.core.extend(ch, m, MSG_U_COLUMNS, &mut rows)?;
        Ok(KkrtSenderOutputs {
            rows: std::mem::take(&mut *rows),
            shared: Arc::clone(&self.shared),
            width: self.width,
            first,
            len: m,
        })
    }

    /// Hands a finished batch back: its keys are zeroised and its buffer serves the next
    /// [`send`](Self::send), which then needs no fresh (page-faulting) allocation.
    pub fn recycle(&mut self, mut outputs: KkrtSenderOutputs) {
        super::keep_spare(&mut self.spare, std::mem::take(&mut outputs.rows));
    }
}

impl KkrtReceiver {
    /// Runs the k = 128·`width` base OTs with `base` (as their sender) and returns the ready
    /// receiver of a code of `width` blocks. `Err(InvalidParam)`, before anything is sent,
    /// unless 1 ≤ width ≤ 8.
    pub fn setup<B: BaseOtSender, C: Channel + ?Sized>(
        base: &mut B,
        width: usize,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        check_width(width)?;
        let ro = RowHash::new(RO_LABEL, sid, width)?;
        Ok(KkrtReceiver {
            width,
            core: WideReceiver::setup(base, ch, sid, width, rng)?,
            prc: Prc::new(sid, width),
            ro,
            rows: Vec::new(),
            codes: Vec::new(),
            tmp: Vec::new(),
        })
    }

    /// One OPRF instance per input: `out[i] = F_i(inputs[i])`. `Err(InvalidParam)` (before
    /// anything is sent) if `out.len() != inputs.len()`.
    pub fn receive<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        inputs: &[Block],
        out: &mut [Block],
    ) -> Result<()> {
        check_out_len(inputs.len(), out.len())?;
        let w = self.width;
        for (part, o) in inputs.chunks(PART).zip(out.chunks_mut(PART)) {
            self.rows.clear();
            let (prc, codes, tmp) = (&self.prc, &mut self.codes, &mut self.tmp);
            let first = self.core.extend(
                ch,
                part.len(),
                MSG_U_COLUMNS,
                |start, len, rb, cols| {
                    prc.encode(&part[start..start + len], tmp, codes);
                    rows_to_columns(codes, w, rb, cols);
                },
                &mut self.rows,
            )?;
            let ro = &self.ro;
            o.par_chunks_mut(BATCH)
                .zip(self.rows.par_chunks(BATCH * w))
                .enumerate()
                .for_each(|(k, (o, r))| ro.hash_rows(first + (k * BATCH) as u64, r, o));
            self.rows.zeroize();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_shared_secret_zeroizes_on_drop() {
        fn assert_zod<T: zeroize::ZeroizeOnDrop>() {}
        assert_zod::<SenderShared>();
    }

    #[test]
    fn code_width_from_the_bound() {
        // The bound's k for κ = 128, λ = 40 and E = 3n sender evaluations.
        let k: Vec<usize> = [8u32, 12, 16, 20, 24, 28, 32]
            .iter()
            .map(|&l| min_code_len(128, 40, 3 << l))
            .collect();
        assert_eq!(k, [415, 423, 431, 439, 447, 454, 462]);
        for l in [8u32, 16, 20, 24, 32] {
            assert_eq!(code_blocks(128, 40, 3 << l), DEFAULT_CODE_BLOCKS);
        }
        // Larger λ needs a wider code, never a narrower one.
        assert_eq!(min_code_len(128, 80, 3 << 32), 531);
        assert_eq!(code_blocks(128, 80, 3 << 32), 5);
        // κ = 80: Hamming distance 80 needs 334 bits, three blocks.
        assert_eq!(min_code_len(80, 40, 3 << 32), 334);
        assert_eq!(code_blocks(80, 40, 3 << 32), 3);
        assert!(min_code_len(128, 41, 3 << 20) >= min_code_len(128, 40, 3 << 20));
    }

    #[test]
    fn binomial_tail_exact_small_cases() {
        // Pr[Bin(4, 1/2) < 2] = (1 + 4) / 16.
        let p = log2_binomial_half_tail_below(4, 2);
        assert!((p - (5.0f64 / 16.0).log2()).abs() < 1e-12);
        assert_eq!(log2_binomial_half_tail_below(4, 5), 0.0);
        assert_eq!(log2_binomial_half_tail_below(4, 0), f64::NEG_INFINITY);
    }

    #[test]
    fn cm20_table2_kkrt_receiver_column() {
        // CM20 Table 2, KKRT, "Comm. (MB)" of the party sending the OT matrix: 1.2n bins of
        // k = 128·code_blocks bits, in MiB. The printed values are that within rounding, except
        // at 2^16, where about 20 KiB of fixed base-OT traffic shows up (4.82 vs 4.80), hence
        // the 0.5% tolerance.
        let printed = [
            (16u32, 4.82),
            (18, 19.2),
            (20, 76.8),
            (22, 307.0),
            (24, 1229.0),
        ];
        for (l, want) in printed {
            let n = 1u64 << l;
            let k = 128 * code_blocks(128, 40, 3 * n) as u64;
            let mib = 1.2 * n as f64 * k as f64 / 8.0 / f64::from(1u32 << 20);
            assert!(
                (mib - want).abs() / want < 0.005,
                "n = 2^{l}: {mib} vs {want}"
            );
        }
    }
}
