//! OOS16: 1-out-of-N OT extension (an oblivious PRF on 76-bit inputs) secure against a
//! malicious receiver.
//!
//! **Paper.** Orrù, Orsini, Scholl, *Actively Secure 1-out-of-N OT Extension with Application
//! to Private Set Intersection* (CT-RSA 2017, "OOS16"), §3-§4: KKRT16's batched OPRF with a
//! *linear* code in place of the pseudorandom code, which makes a KOS-style consistency check
//! on the receiver's rows possible. The code is the BCH code [511, 76, ≥ 171] of [`super::bch`]
//! (the one of OOS16's implementation in libOTe, `OosNcoOtSender`), so inputs are at most 76
//! bits and the 511-bit codewords occupy rows of four blocks (k = 512 base OTs).
//!
//! **Construction.** As in [`super::kkrt`]: the receiver R has inputs w_i (one per instance),
//! the sender S a random s ∈ {0,1}^512, and instance i's PRF is
//!
//! ```text
//! F_i(x) = H(i, q_i ⊕ (C(x) ∧ s)),   q_i = t_i ⊕ (C(w_i) ∧ s)
//! ```
//!
//! so R, who knows t_i, learns F_i(w_i) = H(i, t_i), and S can evaluate F_i anywhere. Since C
//! has minimum distance ≥ 171 ≥ κ, F_i(x) for x ≠ w_i hides at least κ bits of s from R.
//!
//! **Message flow** of one batch of m instances (the wide IKNP core of `wide.rs`):
//!
//! ```text
//! setup:  512 base OTs in reversed roles (R sends, S chooses with s)
//! R: u^j = G(k_j^0) ⊕ G(k_j^1) ⊕ C^j for m + λ rows: the m inputs, then λ random check inputs
//! R → S: u columns                                  (one frame per 2^16 rows, 512 bits per row)
//! S → R: a fresh random challenge seed (16 bytes); both expand it by AES-CTR into
//!        χ_i ∈ {0,1}^λ for each of the m rows
//! R → S: for l < λ: T_l = t_{m+l} ⊕ ⊕_i χ_{i,l}·t_i  and  W_l = w_{m+l} ⊕ ⊕_i χ_{i,l}·w_i
//! S: Q_l = q_{m+l} ⊕ ⊕_i χ_{i,l}·q_i, and checks T_l ⊕ Q_l = C(W_l) ∧ s for every l
//!    (`CheckFailed` otherwise; W_l with bits above 76 is `Malformed`)
//! ```
//!
//! An honest R passes since q_i ⊕ t_i = C(w_i) ∧ s and C is linear. A receiver whose rows are
//! not of that form (u^j not built from one codeword per row) passes each of the λ independent
//! checks with probability at most 1/2 unless the check is consistent with a codeword, which is
//! OOS16's Lemma (soundness 2^-λ, λ = [`CHECK_ROWS`] = 40). The λ extra rows mask T_l and W_l,
//! so S learns nothing about the w_i from the check. The check rows are not used as OPRF
//! instances.
//!
//! **Hash.** H(i, x) is BLAKE3 in keyed mode on the 64-byte row x as the one-block chunk at
//! chunk index i, under a key derived from the session id (`OosHash`,
//! `blindjoin_core::blake3x`): one compression per row, sixteen rows at a time with AVX-512F,
//! 128- or 256-bit outputs; a random oracle as in OOS16. The instance index counts across
//! batches (and over the check rows).
//!
//! **Phases.** A batch runs in three steps that a caller may interleave with other traffic
//! (a protocol that runs the extension in both directions at once, say): the receiver's
//! [`OosReceiver::extend`] sends the u columns, the sender's [`OosSender::absorb`] receives
//! them and draws the challenge, the receiver's [`OosReceiverBatch::prove`] answers it and the
//! sender's [`OosSenderBatch::verify`] checks the answer. [`OosReceiver::receive`] and
//! [`OosSender::send`] run the three steps on one channel.
//!
//! **Security model.** Malicious receiver (the check), semi-honest-equivalent sender: a
//! sender cannot deviate in a way that matters, since it sends only the challenge seed, and
//! its input to the base OTs is s.
//!
//! **Deviations.** (1) The check runs per batch instead of once at the end: each batch is an
//! execution of OOS16's extension with its own λ masking rows and a fresh challenge, on the
//! same base OTs. A cheating receiver must pass every batch's check; its chance of passing
//! while learning k bits of s stays 2^-k overall, since one failed check ends the session.
//! Checking per batch lets the caller use a batch's outputs as soon as it is checked and keep
//! only one batch's rows. (2) The challenge seed is chosen by S alone (as in OOS16 and libOTe):
//! S is the party the check protects, and T_l, W_l are masked whatever χ is. (3) H takes the
//! instance index as a tweak, as in [`super::kkrt`].

use super::bch::{self, Bch511, MESSAGE_MASK, WIDTH};
use super::wide::{WideReceiver, WideSender, rows_to_columns};
use super::{check_out_len, grow_wiping};
use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::blake3x::Blake3Blocks;
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use blindjoin_core::prg::AesPrg;
use blindjoin_core::subset_xor::xor_rows_by_bits;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use std::sync::Arc;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// λ: the statistical security of the consistency check, and the number of check rows per
/// batch.
pub const CHECK_ROWS: usize = 40;
/// Largest input, in bits.
pub const INPUT_BITS: u32 = bch::MESSAGE_BITS;

/// Name of the receiver's u columns (one frame per chunk of ≤ 2^16 rows).
pub const MSG_U_COLUMNS: &str = "the OOS16 OT's u columns";
/// Name of the sender's challenge seed.
pub const MSG_CHALLENGE: &str = "the OOS16 challenge seed";
/// Name of the receiver's answer to the challenge.
pub const MSG_PROOF: &str = "the OOS16 consistency proof";

/// The names of one extension's three messages (a protocol that runs the extension in both
/// directions gives each direction its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Names {
    /// The receiver's u columns.
    pub u: &'static str,
    /// The sender's challenge seed.
    pub challenge: &'static str,
    /// The receiver's proof.
    pub proof: &'static str,
}

/// The default names.
pub const NAMES: Names = Names {
    u: MSG_U_COLUMNS,
    challenge: MSG_CHALLENGE,
    proof: MSG_PROOF,
};

/// Bytes on the wire of one batch of `m` instances, by message: (u columns, challenge, proof).
pub fn traffic(m: usize) -> [u64; 3] {
    let h = blindjoin_core::channel::FRAME_HEADER_LEN as u64;
    [
        crate::traffic::u_columns(m + CHECK_ROWS, 128 * WIDTH),
        16 + h,
        PROOF_BYTES as u64 + h,
    ]
}

/// Instances per batch whose u columns travel in one frame (the λ check rows included in
/// the [`super::CHUNK`] rows of a frame).
pub const ONE_FRAME: usize = super::CHUNK - CHECK_ROWS;

/// Bytes of the u-columns frame of a batch of `m` ≤ [`ONE_FRAME`] instances (512 columns of
/// m + λ bits, padded to whole blocks).
pub fn u_frame_len(m: usize) -> usize {
    128 * WIDTH * super::row_bytes(m + CHECK_ROWS)
}

/// Bytes of the receiver's proof.
pub const PROOF_LEN: usize = PROOF_BYTES;

/// Label of the random oracle H.
const RO_LABEL: &str = "blindjoin/ot/oos/ro/v3";
/// Bytes of the proof: λ rows T_l (four blocks) and λ values W_l (one block).
const PROOF_BYTES: usize = CHECK_ROWS * (WIDTH + 1) * 16;

/// λ sums of four-block rows.
type Acc = [[Block; WIDTH]; CHECK_ROWS];

/// Rows per rayon task of the check's sums and of the receiver's output hashes (8192 rows:
/// 512 KiB).
const PAR_CHECK_ROWS: usize = 1 << 13;

/// χ_i for rows 0..m: the low λ bits of one 64-bit word per row of AES-CTR under `seed`.
fn challenge_bits(seed: Block, m: usize) -> Vec<u64> {
    let mut prg = AesPrg::new(seed);
    let mut blocks = vec![Block::ZERO; m.div_ceil(2)];
    prg.fill_blocks(&mut blocks);
    let mask = (1u64 << CHECK_ROWS) - 1;
    blocks
        .iter()
        .flat_map(|b| [b.0 as u64 & mask, (b.0 >> 64) as u64 & mask])
        .take(m)
        .collect()
}

/// acc_l = rows[m + l] ⊕ ⊕_i χ_{i,l}·rows[i] over the `m` rows before the check rows.
fn combine(rows: &[Block], m: usize, chi: &[u64]) -> Acc {
    let mut acc = [[Block::ZERO; WIDTH]; CHECK_ROWS];
    for (l, a) in acc.iter_mut().enumerate() {
        a.copy_from_slice(&rows[(m + l) * WIDTH..(m + l + 1) * WIDTH]);
    }
    // χ is public, so walking its set bits (half of λ on average) leaks nothing. Parts of
    // the rows are summed on the current rayon pool and their sums added.
    let sums = rows[..m * WIDTH]
        .par_chunks(PAR_CHECK_ROWS * WIDTH)
        .zip(chi[..m].par_chunks(PAR_CHECK_ROWS))
        .map(|(rows, chi)| {
            let mut part = Zeroizing::new([[Block::ZERO; WIDTH]; CHECK_ROWS]);
            xor_rows_by_bits(rows, chi, &mut *part);
            part
        })
        .collect::<Vec<_>>();
    for part in &sums {
        for (a, p) in acc.iter_mut().zip(part.iter()) {
            for (x, y) in a.iter_mut().zip(p) {
                *x ^= *y;
            }
        }
    }
    acc
}

/// W_l = w[m + l] ⊕ ⊕_i χ_{i,l}·w_i.
fn combine_inputs(inputs: &[Block], m: usize, chi: &[u64]) -> [u128; CHECK_ROWS] {
    let mut acc = [0u128; CHECK_ROWS];
    for (l, a) in acc.iter_mut().enumerate() {
        *a = inputs[m + l].0;
    }
    let sums = inputs[..m]
        .par_chunks(PAR_CHECK_ROWS)
        .zip(chi[..m].par_chunks(PAR_CHECK_ROWS))
        .map(|(inputs, chi)| {
            let mut part = Zeroizing::new([0u128; CHECK_ROWS]);
            for (w, &c) in inputs.iter().zip(chi) {
                let mut c = c;
                while c != 0 {
                    let l = c.trailing_zeros() as usize;
                    c &= c - 1;
                    if let Some(a) = part.get_mut(l) {
                        *a ^= w.0;
                    }
                }
            }
            part
        })
        .collect::<Vec<_>>();
    for part in &sums {
        for (a, p) in acc.iter_mut().zip(part.iter()) {
            *a ^= *p;
        }
    }
    acc
}

/// H(i, x) = BLAKE3's keyed chaining value of the one-block chunk x (the row's 64 bytes, its
/// four blocks in order, each little-endian) at chunk index i, under a key derived from the
/// session id ([`Blake3Blocks`]): one BLAKE3 compression per row, sixteen rows at a time with
/// AVX-512F. BLAKE3's chunk counter separates the instances, the key the sessions; modelled as
/// a random oracle on (i, x), as OOS16's H is.
#[derive(Clone)]
pub(crate) struct OosHash {
    h: Blake3Blocks,
}

/// Rows per call of the hash.
const LANES: usize = 16;

#[cfg(target_endian = "big")]
compile_error!("the OOS16 row hash reads blocks as their little-endian bytes in memory");

impl OosHash {
    pub(crate) fn new(sid: &[u8; 32]) -> Self {
        OosHash {
            h: Blake3Blocks::derived(RO_LABEL, sid),
        }
    }

    /// `out[k] = H(index(k), row(k))` for every k, sixteen rows per compression batch;
    /// `row(k)` writes row k's four blocks into its argument (each block's little-endian bytes
    /// are the row's bytes: the in-memory layout on the little-endian targets this crate
    /// supports, which the `compile_error!` below enforces).
    #[inline]
    pub(crate) fn rows<T: OosOutput>(
        &self,
        out: &mut [T],
        index: impl Fn(usize) -> u64,
        row: impl Fn(usize, &mut [Block; WIDTH]),
    ) {
        let mut rows = [[Block::ZERO; WIDTH]; LANES];
        let mut counters = [0u64; LANES];
        let mut cvs = [[0u32; 8]; LANES];
        for (g, outs) in out.chunks_mut(LANES).enumerate() {
            for (k, (r, c)) in rows
                .iter_mut()
                .zip(counters.iter_mut())
                .take(outs.len())
                .enumerate()
            {
                let at = LANES * g + k;
                row(at, r);
                *c = index(at);
            }
            // The rows' bytes in place: each block's little-endian encoding (the targets this
            // code builds for are little-endian; see `blindjoin_core::block::as_bytes`).
            let (blocks, _) =
                blindjoin_core::block::as_bytes(rows.as_flattened()).as_chunks::<64>();
            if let Ok(blocks) = <&[[u8; 64]; LANES]>::try_from(blocks) {
                self.h.hash16(blocks, &counters, outs.len(), &mut cvs);
            }
            for (o, cv) in outs.iter_mut().zip(&cvs) {
                *o = T::from_state(cv);
            }
        }
        rows.as_flattened_mut().zeroize();
        cvs.as_flattened_mut().zeroize();
    }

    /// H(i, row) for one row of four blocks.
    #[cfg(test)]
    pub(crate) fn one<T: OosOutput>(&self, i: u64, row: &[Block]) -> T {
        let mut out = [T::default()];
        self.rows(&mut out, |_| i, |_, r| r.copy_from_slice(&row[..WIDTH]));
        out[0]
    }
}

/// An output of the OPRF: [`Block`], the first 128 bits of the hash's output, or [`Wide`], all
/// 256 bits (for protocols that need more than 128 bits per evaluation).
pub trait OosOutput: Copy + Default + Send + Zeroize + private::Sealed {
    /// The output from the hash's eight words.
    #[doc(hidden)]
    fn from_state(s: &[u32; 8]) -> Self;
}

/// A 256-bit output: words 0..4 of the hash's output (the [`Block`] output) and words 4..8.
pub type Wide = [Block; 2];

impl OosOutput for Block {
    #[inline]
    fn from_state(s: &[u32; 8]) -> Self {
        output(&s[..4])
    }
}

impl OosOutput for Wide {
    #[inline]
    fn from_state(s: &[u32; 8]) -> Self {
        [output(&s[..4]), output(&s[4..])]
    }
}

mod private {
    pub trait Sealed {}
    impl Sealed for blindjoin_core::Block {}
    impl Sealed for [blindjoin_core::Block; 2] {}
}

/// Four words of the state, word k at bits 32k..32k + 32.
#[inline]
fn output(s: &[u32]) -> Block {
    Block(
        u128::from(s[0])
            | (u128::from(s[1]) << 32)
            | (u128::from(s[2]) << 64)
            | (u128::from(s[3]) << 96),
    )
}

/// What every batch of sender outputs needs besides its rows.
struct SenderShared {
    s: [Block; WIDTH],
    code: Bch511,
    ro: OosHash,
}

impl Drop for SenderShared {
    fn drop(&mut self) {
        self.s.zeroize();
    }
}

/// s is wiped by `Drop`; the code and the hash's key are public.
impl ZeroizeOnDrop for SenderShared {}

/// OOS16 sender (the OPRF key holder). [`setup`](Self::setup) runs the base OTs and is the
/// only way to get one.
pub struct OosSender {
    core: WideSender,
    shared: Arc<SenderShared>,
    /// The PRG of the challenge seeds.
    seeds: AesPrg,
    names: Names,
    spare: Vec<Block>,
}

impl Drop for OosSender {
    fn drop(&mut self) {
        self.spare.zeroize();
    }
}

/// The spare buffer is wiped by `Drop`, the core and the shared part by their own.
impl ZeroizeOnDrop for OosSender {}

impl std::fmt::Debug for OosSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OosSender").finish_non_exhaustive()
    }
}

/// A batch whose rows the sender has, before the receiver's proof is checked: the challenge
/// goes to the receiver, and [`verify`](Self::verify) checks the answer.
pub struct OosSenderBatch {
    rows: Vec<Block>,
    shared: Arc<SenderShared>,
    first: u64,
    len: usize,
    seed: Block,
    proof_name: &'static str,
}

impl std::fmt::Debug for OosSenderBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OosSenderBatch")
            .field("first", &self.first)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Drop for OosSenderBatch {
    fn drop(&mut self) {
        self.rows.zeroize();
    }
}

/// The rows are wiped by `Drop`.
impl ZeroizeOnDrop for OosSenderBatch {}

impl OosSenderBatch {
    /// The challenge seed to send to the receiver (16 bytes).
    pub fn challenge(&self) -> [u8; 16] {
        self.seed.to_bytes()
    }

    /// Receives the receiver's proof and checks it: the keys of the batch, or
    /// `Err(CheckFailed)` if the receiver's rows are inconsistent, `Err(Malformed)` on a proof
    /// of the wrong length or with an input sum above 76 bits.
    pub fn verify<C: FrameReceiver + ?Sized>(mut self, ch: &mut C) -> Result<OosSenderOutputs> {
        let m = self.len;
        let proof_name = self.proof_name;
        let proof = ch.recv(proof_name, PROOF_BYTES)?;
        if proof.len() != PROOF_BYTES {
            return Err(Error::malformed(
                proof_name,
                format!("{} bytes, {PROOF_BYTES} expected", proof.len()),
            ));
        }
        let chi = challenge_bits(self.seed, m);
        let q = combine(&self.rows, m, &chi);
        let (t_bytes, w_bytes) = proof.split_at(CHECK_ROWS * WIDTH * 16);
        let sh = &*self.shared;
        let mut bad = false;
        for l in 0..CHECK_ROWS {
            let w = u128::from_le_bytes(
                w_bytes[16 * l..16 * (l + 1)]
                    .try_into()
                    .map_err(|_| Error::malformed(proof_name, "short input sum"))?,
            );
            if w & !MESSAGE_MASK != 0 {
                return Err(Error::malformed(
                    proof_name,
                    format!("input sum {l} has bits above {INPUT_BITS}"),
                ));
            }
            let c = sh.code.encode(Block(w));
            for k in 0..WIDTH {
                let at = (l * WIDTH + k) * 16;
                let t = u128::from_le_bytes(
                    t_bytes[at..at + 16]
                        .try_into()
                        .map_err(|_| Error::malformed(proof_name, "short row sum"))?,
                );
                bad |= (t ^ q[l][k].0) != (c[k].0 & sh.s[k].0);
            }
        }
        if bad {
            return Err(Error::CheckFailed(
                "the OOS16 consistency check on the receiver's rows failed".into(),
            ));
        }
        let mut rows = std::mem::take(&mut self.rows);
        rows.truncate(m * WIDTH);
        Ok(OosSenderOutputs {
            rows,
            shared: Arc::clone(&self.shared),
            first: self.first,
            len: m,
        })
    }
}

/// The sender's keys for a checked batch of OPRF instances.
pub struct OosSenderOutputs {
    rows: Vec<Block>,
    shared: Arc<SenderShared>,
    first: u64,
    len: usize,
}

impl std::fmt::Debug for OosSenderOutputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OosSenderOutputs")
            .field("first", &self.first)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Drop for OosSenderOutputs {
    fn drop(&mut self) {
        self.rows.zeroize();
    }
}

/// The rows are wiped by `Drop`; s when the last holder of the shared part is dropped.
impl ZeroizeOnDrop for OosSenderOutputs {}

/// C(x) ∧ s for one input: what the sender adds to an instance's row to evaluate it at x.
/// Reused across the instances an input is evaluated at ([`OosSenderOutputs::eval_masked`]).
pub struct MaskedCode([Block; WIDTH]);

impl Drop for MaskedCode {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

/// The value is wiped by `Drop`.
impl ZeroizeOnDrop for MaskedCode {}

impl OosSenderOutputs {
    /// Number of instances in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// C(x) ∧ s for `x` (bits above 76 are ignored).
    pub fn masked_code(&self, x: Block) -> MaskedCode {
        let sh = &*self.shared;
        let mut c = sh.code.encode(x);
        for (c, s) in c.iter_mut().zip(&sh.s) {
            *c &= *s;
        }
        MaskedCode(c)
    }

    /// F_{start+k}(x) into `out[k]` for k < `out.len()`: one input evaluated at consecutive
    /// instances of this batch (a bin's slots). Bits of x above 76 are ignored.
    /// `Err(InvalidParam)` if the range leaves the batch.
    pub fn eval_range(&self, x: Block, start: usize, out: &mut [Block]) -> Result<()> {
        self.eval_masked(&self.masked_code(x), start, out)
    }

    /// [`eval_range`](Self::eval_range) with C(x) ∧ s computed once by
    /// [`masked_code`](Self::masked_code).
    pub fn eval_masked<T: OosOutput>(
        &self,
        c: &MaskedCode,
        start: usize,
        out: &mut [T],
    ) -> Result<()> {
        let end = start.saturating_add(out.len());
        if end > self.len {
            return Err(Error::InvalidParam {
                field: "instance",
                reason: format!("instances {start}..{end} of a batch of {}", self.len),
            });
        }
        let c = &c.0;
        let (rows, first) = (&self.rows, self.first);
        self.shared.ro.rows(
            out,
            |k| first + (start + k) as u64,
            |k, r| {
                let q = &rows[(start + k) * WIDTH..(start + k + 1) * WIDTH];
                for ((r, q), c) in r.iter_mut().zip(q).zip(c) {
                    *r = *q ^ *c;
                }
            },
        );
        Ok(())
    }

    /// F_i(x) for instance `i` of this batch.
    pub fn eval(&self, i: usize, x: Block) -> Result<Block> {
        let mut out = [Block::ZERO];
        self.eval_range(x, i, &mut out)?;
        Ok(out[0])
    }
}

impl OosSender {
    /// Runs the 512 base OTs with `base` (as their receiver, with a random s) and returns the
    /// ready sender.
    pub fn setup<B: BaseOtReceiver, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let seeds = AesPrg::new(Block::random(rng));
        let core = WideSender::setup(base, ch, sid, WIDTH, rng)?;
        Self::from_core(core, sid, seeds)
    }

    /// The sender on 512 base OTs run by the caller (as their receiver): `choices` is s, bit j
    /// at index j, and `keys[j]` is k_j^{s_j}. Messages are named by `names`.
    pub fn from_base(
        choices: &[bool],
        keys: &[[u8; 16]],
        names: Names,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        if choices.len() != 128 * WIDTH || keys.len() != choices.len() {
            return Err(Error::InvalidParam {
                field: "base OT",
                reason: format!(
                    "{} choices and {} keys, 512 expected",
                    choices.len(),
                    keys.len()
                ),
            });
        }
        let mut s = vec![Block::ZERO; WIDTH];
        for (j, &c) in choices.iter().enumerate() {
            s[j / 128].0 |= u128::from(c) << (j % 128);
        }
        let prgs = keys.iter().map(super::prg_from_key).collect();
        let core = WideSender::from_parts(s, prgs)?;
        let mut sender = Self::from_core(core, sid, AesPrg::new(Block::random(rng)))?;
        sender.names = names;
        Ok(sender)
    }

    /// The same sender with its messages named by `names`.
    pub fn named(mut self, names: Names) -> Self {
        self.names = names;
        self
    }

    fn from_core(core: WideSender, sid: &[u8; 32], seeds: AesPrg) -> Result<Self> {
        let mut s = [Block::ZERO; WIDTH];
        s.copy_from_slice(core.s());
        Ok(OosSender {
            core,
            shared: Arc::new(SenderShared {
                s,
                code: Bch511::new(),
                ro: OosHash::new(sid),
            }),
            seeds,
            names: NAMES,
            spare: Vec::new(),
        })
    }

    /// Receives the u columns of `m` OPRF instances and their λ check rows (one frame per chunk
    /// of [`super::CHUNK`] rows, from `ch`) and draws the batch's challenge.
    /// `Err(Malformed)` on a frame of the wrong size.
    pub fn absorb<C: FrameReceiver + ?Sized>(
        &mut self,
        ch: &mut C,
        m: usize,
    ) -> Result<OosSenderBatch> {
        let mut rows = Zeroizing::new(std::mem::take(&mut self.spare));
        rows.clear();
        let first = self
            .core
            .extend(ch, m + CHECK_ROWS, self.names.u, &mut rows)?;
        Ok(OosSenderBatch {
            rows: std::mem::take(&mut *rows),
            shared: Arc::clone(&self.shared),
            first,
            len: m,
            seed: self.seeds.next_block(),
            proof_name: self.names.proof,
        })
    }

    /// `m` OPRF instances on one channel: [`absorb`](Self::absorb), the challenge, and
    /// [`OosSenderBatch::verify`]. `Err(CheckFailed)` if the receiver's rows are inconsistent,
    /// `Err(Malformed)` on a frame of the wrong size.
    pub fn send<C: Channel + ?Sized>(&mut self, ch: &mut C, m: usize) -> Result<OosSenderOutputs> {
        let batch = self.absorb(ch, m)?;
        ch.send(self.names.challenge, &batch.challenge())?;
        batch.verify(ch)
    }

    /// Hands a finished batch back so that its (zeroised) buffer serves the next batch.
    pub fn recycle(&mut self, mut outputs: OosSenderOutputs) {
        super::keep_spare(&mut self.spare, std::mem::take(&mut outputs.rows));
    }
}

/// OOS16 receiver. [`setup`](Self::setup) runs the base OTs and is the only way to get one.
pub struct OosReceiver {
    core: WideReceiver,
    code: Bch511,
    ro: OosHash,
    /// The PRG of the check rows' inputs.
    check_inputs: AesPrg,
    names: Names,
    codes: Vec<Block>,
    spare: Vec<Block>,
}

impl Drop for OosReceiver {
    fn drop(&mut self) {
        self.codes.zeroize();
        self.spare.zeroize();
    }
}

/// The buffers are wiped by `Drop`; the core wipes its PRGs and buffers.
impl ZeroizeOnDrop for OosReceiver {}

impl std::fmt::Debug for OosReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OosReceiver").finish_non_exhaustive()
    }
}

/// A batch whose u columns the receiver has sent: [`prove`](Self::prove) answers the sender's
/// challenge, and [`outputs`](Self::outputs) gives F_i(w_i).
pub struct OosReceiverBatch {
    rows: Vec<Block>,
    inputs: Vec<Block>,
    ro: OosHash,
    first: u64,
    len: usize,
    names: Names,
}

impl std::fmt::Debug for OosReceiverBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OosReceiverBatch")
            .field("first", &self.first)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Drop for OosReceiverBatch {
    fn drop(&mut self) {
        self.rows.zeroize();
        self.inputs.zeroize();
    }
}

/// The rows and inputs are wiped by `Drop`.
impl ZeroizeOnDrop for OosReceiverBatch {}

impl OosReceiverBatch {
    /// Receives the sender's challenge seed from `rx` and sends the proof on `tx`.
    /// `Err(Malformed)` if the seed is not 16 bytes.
    pub fn prove<R: FrameReceiver + ?Sized, S: FrameSender + ?Sized>(
        &self,
        rx: &mut R,
        tx: &mut S,
    ) -> Result<()> {
        let seed = rx.recv(self.names.challenge, 16)?;
        let seed = Block::from_slice(&seed).ok_or_else(|| {
            Error::malformed(
                self.names.challenge,
                format!("{} bytes, 16 expected", seed.len()),
            )
        })?;
        let m = self.len;
        let chi = challenge_bits(seed, m);
        let t = combine(&self.rows, m, &chi);
        let w = combine_inputs(&self.inputs, m, &chi);
        let mut proof = Zeroizing::new(Vec::with_capacity(PROOF_BYTES));
        for row in &t {
            for b in row {
                proof.extend_from_slice(&b.to_bytes());
            }
        }
        for v in &w {
            proof.extend_from_slice(&v.to_le_bytes());
        }
        tx.send(self.names.proof, &proof)
    }

    /// Number of instances in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `out[k] = F_{wanted[k]}(w_{wanted[k]})`. `Err(InvalidParam)` if a wanted index is out
    /// of range or `out.len() != wanted.len()`.
    pub fn outputs<T: OosOutput>(&self, wanted: &[usize], out: &mut [T]) -> Result<()> {
        check_out_len(wanted.len(), out.len())?;
        if let Some(&i) = wanted.iter().find(|&&i| i >= self.len) {
            return Err(Error::InvalidParam {
                field: "instance",
                reason: format!("instance {i} of a batch of {}", self.len),
            });
        }
        let (rows, first, ro) = (&self.rows, self.first, &self.ro);
        // The hashes are independent: spread over the current rayon pool.
        out.par_chunks_mut(PAR_CHECK_ROWS)
            .zip(wanted.par_chunks(PAR_CHECK_ROWS))
            .for_each(|(out, wanted)| {
                ro.rows(
                    out,
                    |k| first + wanted[k] as u64,
                    |k, r| r.copy_from_slice(&rows[wanted[k] * WIDTH..(wanted[k] + 1) * WIDTH]),
                );
            });
        Ok(())
    }
}

impl OosReceiver {
    /// Runs the 512 base OTs with `base` (as their sender) and returns the ready receiver.
    pub fn setup<B: BaseOtSender, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let check_inputs = AesPrg::new(Block::random(rng));
        let core = WideReceiver::setup(base, ch, sid, WIDTH, rng)?;
        Self::from_core(core, sid, check_inputs)
    }

    /// The receiver on 512 base OTs run by the caller (as their sender): `pairs[j]` is
    /// (k_j^0, k_j^1). Messages are named by `names`.
    pub fn from_base(
        pairs: &[[[u8; 16]; 2]],
        names: Names,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let prgs = pairs
            .iter()
            .map(|[k0, k1]| [super::prg_from_key(k0), super::prg_from_key(k1)])
            .collect();
        let core = WideReceiver::from_parts(WIDTH, prgs)?;
        let mut r = Self::from_core(core, sid, AesPrg::new(Block::random(rng)))?;
        r.names = names;
        Ok(r)
    }

    /// The same receiver with its messages named by `names`.
    pub fn named(mut self, names: Names) -> Self {
        self.names = names;
        self
    }

    fn from_core(core: WideReceiver, sid: &[u8; 32], check_inputs: AesPrg) -> Result<Self> {
        Ok(OosReceiver {
            core,
            code: Bch511::new(),
            ro: OosHash::new(sid),
            check_inputs,
            names: NAMES,
            codes: Vec::new(),
            spare: Vec::new(),
        })
    }

    /// One OPRF instance per input (at most 76 bits each) and λ check rows: sends their u
    /// columns on `ch` (one frame per chunk of [`super::CHUNK`] rows) and returns the batch.
    /// `Err(InvalidParam)` (before anything is sent) if an input has more than 76 bits.
    pub fn extend<C: FrameSender + ?Sized>(
        &mut self,
        ch: &mut C,
        inputs: &[Block],
    ) -> Result<OosReceiverBatch> {
        let m = inputs.len();
        if let Some(i) = inputs.iter().position(|w| w.0 & !MESSAGE_MASK != 0) {
            return Err(Error::InvalidParam {
                field: "input",
                reason: format!("input {i} has more than {INPUT_BITS} bits"),
            });
        }
        let mut all = Vec::new();
        grow_wiping(&mut all, m + CHECK_ROWS);
        all.extend_from_slice(inputs);
        for _ in 0..CHECK_ROWS {
            let w = self.check_inputs.next_block();
            all.push(Block(w.0 & MESSAGE_MASK));
        }
        let mut rows = std::mem::take(&mut self.spare);
        rows.clear();
        let (code, codes) = (&self.code, &mut self.codes);
        let first = self.core.extend(
            ch,
            m + CHECK_ROWS,
            self.names.u,
            |start, len, rb, cols| {
                code.encode_into(&all[start..start + len], codes);
                rows_to_columns(codes, WIDTH, rb, cols);
            },
            &mut rows,
        );
        self.codes.zeroize();
        let first = match first {
            Ok(f) => f,
            Err(e) => {
                rows.zeroize();
                all.zeroize();
                return Err(e);
            }
        };
        Ok(OosReceiverBatch {
            rows,
            inputs: all,
            ro: self.ro.clone(),
            first,
            len: m,
            names: self.names,
        })
    }

    /// Hands a finished batch back so that its (zeroised) row buffer serves the next batch.
    pub fn recycle(&mut self, mut batch: OosReceiverBatch) {
        super::keep_spare(&mut self.spare, std::mem::take(&mut batch.rows));
    }

    /// One OPRF instance per input on one channel: [`extend`](Self::extend), the proof, and
    /// the outputs of the instances listed in `wanted`:
    /// `out[k] = F_{wanted[k]}(inputs[wanted[k]])` (instances the caller fills with dummies
    /// need no output). `Err(InvalidParam)` (before anything is sent) if an input has more
    /// than 76 bits, a wanted index is out of range or `out.len() != wanted.len()`.
    pub fn receive<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        inputs: &[Block],
        wanted: &[usize],
        out: &mut [Block],
    ) -> Result<()> {
        check_out_len(wanted.len(), out.len())?;
        if let Some(&i) = wanted.iter().find(|&&i| i >= inputs.len()) {
            return Err(Error::InvalidParam {
                field: "instance",
                reason: format!("instance {i} of a batch of {}", inputs.len()),
            });
        }
        let batch = self.extend(ch, inputs)?;
        let (mut rx, mut tx) = ch.split();
        batch.prove(&mut *rx, &mut *tx)?;
        drop((rx, tx));
        batch.outputs(wanted, out)?;
        self.recycle(batch);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_secrets_zeroize_on_drop() {
        fn assert_zod<T: zeroize::ZeroizeOnDrop>() {}
        assert_zod::<SenderShared>();
        assert_zod::<OosSender>();
        assert_zod::<OosReceiver>();
        assert_zod::<OosSenderOutputs>();
        assert_zod::<OosSenderBatch>();
        assert_zod::<OosReceiverBatch>();
        assert_zod::<MaskedCode>();
    }

    #[test]
    fn the_row_hash_is_keyed_blake3_of_the_row_at_the_instance_index() {
        let sid = [7u8; 32];
        let h = OosHash::new(&sid);
        let mut prg = AesPrg::new(Block(11));
        let mut rows = vec![Block::ZERO; 40 * WIDTH];
        prg.fill_blocks(&mut rows);
        let key = Blake3Blocks::derived(RO_LABEL, &sid);
        for i in [0u64, 1, 0x1234_5678_9abc] {
            let mut block = [[0u8; 64]; 1];
            for (k, b) in rows[..WIDTH].iter().enumerate() {
                block[0][16 * k..16 * (k + 1)].copy_from_slice(&b.to_bytes());
            }
            let mut cv = [[0u32; 8]; 1];
            key.hash(&block, &[i], &mut cv);
            let want = (0..4).fold(0u128, |a, k| a | u128::from(cv[0][k]) << (32 * k));
            let one: Block = h.one(i, &rows[..WIDTH]);
            assert_eq!(one, Block(want));
            assert_ne!(one, h.one::<Block>(i + 1, &rows[..WIDTH]));
        }
        // 40 rows (two full batches of sixteen and a partial one) agree with one at a time.
        let mut out = vec![[Block::ZERO; 2]; 40];
        h.rows(
            &mut out,
            |k| 3 * k as u64,
            |k, r| r.copy_from_slice(&rows[k * WIDTH..(k + 1) * WIDTH]),
        );
        for (k, o) in out.iter().enumerate() {
            assert_eq!(
                *o,
                h.one::<Wide>(3 * k as u64, &rows[k * WIDTH..(k + 1) * WIDTH])
            );
            assert_eq!(
                o[0],
                h.one::<Block>(3 * k as u64, &rows[k * WIDTH..(k + 1) * WIDTH])
            );
        }
        assert_ne!(
            OosHash::new(&[8; 32]).one::<Block>(0, &rows[..WIDTH]),
            h.one::<Block>(0, &rows[..WIDTH])
        );
    }

    #[test]
    fn combine_is_the_linear_combination() {
        let mut prg = AesPrg::new(Block(3));
        let m = 37;
        let mut rows = vec![Block::ZERO; (m + CHECK_ROWS) * WIDTH];
        prg.fill_blocks(&mut rows);
        let chi = challenge_bits(Block(9), m);
        assert!(chi.iter().all(|c| c >> CHECK_ROWS == 0));
        let acc = combine(&rows, m, &chi);
        for l in [0, 7, CHECK_ROWS - 1] {
            let mut want = [Block::ZERO; WIDTH];
            want.copy_from_slice(&rows[(m + l) * WIDTH..(m + l + 1) * WIDTH]);
            for i in 0..m {
                if (chi[i] >> l) & 1 == 1 {
                    let r = &rows[i * WIDTH..(i + 1) * WIDTH];
                    want.iter_mut().zip(r).for_each(|(a, b)| *a ^= *b);
                }
            }
            assert_eq!(acc[l], want);
        }
    }
}
