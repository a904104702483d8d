//! KK13 random 1-out-of-N OT extension, N = 2^η, semi-honest.
//!
//! **Paper.** Kolesnikov, Kumaresan, *Improved OT Extension for Transferring Short Secrets*
//! (CRYPTO 2013), as described in Pinkas, Schneider, Zohner, *Scalable Private Set Intersection
//! Based on OT Extension* (PSZ), App. C.3 "1-out-of-N OT Extension", with the parameter
//! trade-off of PSZ Table 9 ([`table9_factor`]).
//!
//! **Code.** The receiver's choice v ∈ [0, N) is encoded with the Walsh-Hadamard code: bit w of
//! c(v) is parity(popcount(v & w)) for w ∈ [0, N), so two codewords are at distance N/2. The
//! code is repeated r = ⌈κ / 2^(η-1)⌉ times so that the distance is at least κ = 128; bit j of
//! the repeated codeword is bit (j mod N) of c(v). Its length κ' = r·N ([`code_len`]) is a
//! multiple of 128: 256 for η ≤ 8, 512 for η = 9, 1024 for η = 10.
//!
//! **Message flow** (receiver R with choices v_i, sender S):
//!
//! ```text
//! setup:  κ' random base OTs in reversed roles: R is the base-OT sender with (k_j^0, k_j^1),
//!         S the base-OT receiver with a random choice vector s ∈ {0,1}^κ', learning k_j^{s_j}.
//! per chunk of ≤ 2^16 OTs (padded to a multiple of 128 rows with the codeword c(0)):
//!   R: t^j = G(k_j^0), u^j = t^j ⊕ G(k_j^1) ⊕ C^j    (C^j: column j of the m×κ' matrix with
//!                                                     rows c(v_i); G = AES-CTR, one stream per j)
//!   R → S: u^1..u^κ'                                 (one frame of κ'·⌈m/128⌉·16 bytes)
//!   S: q^j = G(k_j^{s_j}) ⊕ s_j·u^j, so that row q_i = t_i ⊕ (c(v_i) ∧ s)
//! random OT: R outputs H(i, t_i); S can compute H(i, q_i ⊕ (c(w) ∧ s)) for any w ∈ [0, N),
//!            which equals R's output exactly for w = v_i.
//! ```
//!
//! **Lifecycle.** [`Kk13Sender::setup`] / [`Kk13Receiver::setup`] check η (before anything is
//! sent), run the κ' base OTs with the base OT they are given and return the ready extension;
//! there is no other constructor, so extending before setup does not compile. The PRG streams
//! continue from chunk to chunk and the OT index i counts across calls, so the value one setup
//! returns serves any number of OTs. s, the table of c(w) ∧ s, the PRG keys and the row buffers
//! are wiped when the value (or a batch of outputs) is dropped.
//!
//! The sender does not materialise all N outputs per OT: it keeps the rows q_i in a
//! [`Kk13SenderOutputs`] and hashes on demand.
//!
//! **Hash.** H(i, x) = SHA-256(D ‖ le64(i) ‖ x) truncated to 16 bytes, where D is a 64-byte
//! block derived from a fixed label, the session id and the row width, i the 64-bit OT index and
//! x the κ'/8 bytes of the row (`RowHash` in `wide.rs`, one SHA-256 compression per row for
//! κ' = 256). H is modelled as a **random oracle**: KK13's security needs H to be correlation
//! robust for the code's correlations (x ⊕ (c(w) ∧ s) for codewords c(w)), and PSZ App. C.3
//! uses the random-oracle variant for random OT.
//!
//! **Security model.** Semi-honest (honest-but-curious) sender and receiver. The receiver's
//! choices are hidden because every u^j is masked by G(k_j^{1-s_j}), which S never learns (PRG
//! security); the sender's messages for w ≠ v_i are pseudorandom to the receiver because
//! q_i ⊕ (c(w) ∧ s) = t_i ⊕ ((c(v_i) ⊕ c(w)) ∧ s) involves at least κ bits of s unknown to R
//! (the code's distance is ≥ κ), under the random oracle H. No protection against a malicious
//! party.
//!
//! **Parameters.** κ = 128; η ∈ 1..=[`MAX_ETA`] (PSZ picks η = 8, i.e. N = 256, κ' = 256);
//! chunks of [`CHUNK`](super::CHUNK) OTs.
//!
//! **Deviations.** (1) The code is padded by repetition (PSZ and KK13 allow any code with
//! distance ≥ κ; KK13 suggests WH for short codewords, and repetition keeps the distance
//! argument trivial). (2) H is SHA-256 rather than fixed-key AES, since the rows are wider than
//! one block. (3) [`Kk13SenderOutputs::output`] returns a `Result` (out-of-range OT index or
//! message index is an `InvalidParam` error instead of a panic). (4) The sender's table of
//! c(w) ∧ s is indexed by w, a memory access that depends on the sender's own query (not on
//! anything the receiver sees).

use super::wide::{RowHash, WideReceiver, WideSender};
use super::{KAPPA, check_out_len};
use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::channel::Channel;
use blindjoin_core::prefix_hash::HashScratch;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Name of the receiver's u columns (one frame per chunk of OTs).
pub const MSG_U_COLUMNS: &str = "the KK13 extension's u columns";

/// Label of the random oracle H (with the session id and the row width).
const RO_LABEL: &str = "blindjoin/ot/kk13/ro/v2";

/// The largest supported η (N = 2^η = 1024, κ' = 1024).
pub const MAX_ETA: u32 = 10;

/// OTs hashed per rayon task.
const HASH_BATCH: usize = 1024;

/// Length κ' of the repeated Walsh-Hadamard codeword for N = 2^η: r·2^η with
/// r = ⌈κ / 2^(η-1)⌉, rounded up to a multiple of 128. An `eta` outside 1..=[`MAX_ETA`] is
/// clamped into that range.
pub fn code_len(eta: u32) -> usize {
    let eta = eta.clamp(1, MAX_ETA);
    let n = 1usize << eta;
    let reps = KAPPA.div_ceil(n / 2);
    (reps * n).div_ceil(128) * 128
}

/// PSZ Table 9: the communication of PSZ's OT-based PSI with 1-out-of-2^η OT, per n·κ·σ,
/// which is κ'(η) / (η·κ) (κ' bits sent per OT, each OT covering η bits of an element). An `eta`
/// outside 1..=[`MAX_ETA`] is clamped into that range.
pub fn table9_factor(eta: u32) -> f64 {
    let eta = eta.clamp(1, MAX_ETA);
    code_len(eta) as f64 / (f64::from(eta) * KAPPA as f64)
}

/// The repeated Walsh-Hadamard codeword of `v` for N = 2^η (η clamped as in [`code_len`]), as
/// κ'/128 blocks: bit j (bit j % 128 of block j / 128) is parity(v & (j mod N)). Only the low η
/// bits of `v` are used.
pub fn codeword(eta: u32, v: u32) -> Vec<Block> {
    let eta = eta.clamp(1, MAX_ETA);
    let n_mask = (1u32 << eta) - 1;
    let v = v & n_mask;
    let kp = code_len(eta);
    (0..kp / 128)
        .map(|g| {
            let mut b = 0u128;
            for k in 0..128u32 {
                let w = (g as u32 * 128 + k) & n_mask;
                b |= u128::from((v & w).count_ones() & 1) << k;
            }
            Block(b)
        })
        .collect()
}

fn check_eta(eta: u32) -> Result<()> {
    if !(1..=MAX_ETA).contains(&eta) {
        return Err(Error::InvalidParam {
            field: "eta",
            reason: format!("η = {eta}, expected 1..={MAX_ETA}"),
        });
    }
    Ok(())
}

/// KK13 1-out-of-2^η OT-extension sender. [`setup`](Self::setup) runs the base OTs and is the
/// only way to get one. Its secret s (in the extension core and in the table of c(w) ∧ s) and
/// its buffers are wiped when it is dropped; `Debug` shows only η.
pub struct Kk13Sender {
    eta: u32,
    core: WideSender,
    /// c(w) ∧ s for every w, κ'/128 blocks each.
    masks: Vec<Block>,
    ro: RowHash,
    /// The rows buffer of a recycled batch (zeroised, capacity kept).
    spare: Vec<Block>,
}

impl Drop for Kk13Sender {
    fn drop(&mut self) {
        self.masks.zeroize();
        self.spare.zeroize();
    }
}

/// The table and the spare buffer are wiped by `Drop`; the core wipes s and its PRGs.
impl ZeroizeOnDrop for Kk13Sender {}

/// KK13 1-out-of-2^η OT-extension receiver. [`setup`](Self::setup) runs the base OTs and is the
/// only way to get one. Its PRG keys and buffers are wiped when it is dropped; `Debug` shows only
/// η.
pub struct Kk13Receiver {
    eta: u32,
    core: WideReceiver,
    ro: RowHash,
    rows: Vec<Block>,
}

impl Drop for Kk13Receiver {
    fn drop(&mut self) {
        self.rows.zeroize();
    }
}

/// The rows are wiped by `Drop`; the core wipes its PRGs and buffers.
impl ZeroizeOnDrop for Kk13Receiver {}

impl std::fmt::Debug for Kk13Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kk13Sender")
            .field("eta", &self.eta)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Kk13Receiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kk13Receiver")
            .field("eta", &self.eta)
            .finish_non_exhaustive()
    }
}

/// The sender's side of a batch of random 1-out-of-N OTs: the rows q_i = t_i ⊕ (c(v_i) ∧ s),
/// from which [`output`](Self::output) computes the message H(i, q_i ⊕ (c(w) ∧ s)) of any
/// w ∈ [0, N) on demand. Secret material is zeroised on drop.
pub struct Kk13SenderOutputs {
    /// Rows q_i, κ'/128 blocks each.
    rows: Vec<Block>,
    /// c(w) ∧ s for every w ∈ [0, N), κ'/128 blocks each.
    masks: Vec<Block>,
    eta: u32,
    first: u64,
    len: usize,
    ro: RowHash,
}

impl std::fmt::Debug for Kk13SenderOutputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kk13SenderOutputs")
            .field("eta", &self.eta)
            .field("first", &self.first)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Drop for Kk13SenderOutputs {
    fn drop(&mut self) {
        self.rows.zeroize();
        self.masks.zeroize();
    }
}

/// The rows and the table of c(w) ∧ s are wiped by `Drop`.
impl ZeroizeOnDrop for Kk13SenderOutputs {}

impl Kk13SenderOutputs {
    /// Number of OTs in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// η of the OTs (N = 2^η messages per OT).
    pub fn eta(&self) -> u32 {
        self.eta
    }

    /// The global OT index of the batch's first OT (indices count across calls).
    pub fn first_index(&self) -> u64 {
        self.first
    }

    fn check(&self, i: usize, w: u32) -> Result<()> {
        if i >= self.len {
            return Err(Error::InvalidParam {
                field: "i",
                reason: format!("OT {i} of a batch of {}", self.len),
            });
        }
        if w >> self.eta != 0 {
            return Err(Error::InvalidParam {
                field: "w",
                reason: format!("message {w} of a 1-out-of-{} OT", 1u32 << self.eta),
            });
        }
        Ok(())
    }

    fn output_unchecked(&self, scratch: &mut HashScratch, i: usize, w: u32) -> Block {
        let nb = code_len(self.eta) / 128;
        let mut row = [Block::ZERO; MAX_ETA_BLOCKS];
        let q = &self.rows[i * nb..(i + 1) * nb];
        let m = &self.masks[w as usize * nb..(w as usize + 1) * nb];
        for ((r, a), b) in row.iter_mut().zip(q).zip(m) {
            *r = *a ^ *b;
        }
        let out = self
            .ro
            .hash_with(scratch, self.first + i as u64, &row[..nb]);
        row.zeroize();
        out
    }

    /// The sender's message w ∈ [0, N) of OT `i` of this batch: H(first + i, q_i ⊕ (c(w) ∧ s)).
    /// The receiver's output for OT `i` is `output(i, v_i)`. `Err(InvalidParam)` if
    /// `i >= self.len()` or `w >= N`.
    pub fn output(&self, i: usize, w: u32) -> Result<Block> {
        self.check(i, w)?;
        Ok(self.output_unchecked(&mut self.ro.scratch(), i, w))
    }

    /// Batch variant of [`output`](Self::output): `out[k] = output(queries[k].0, queries[k].1)`,
    /// hashed in parallel, two queries at a time with their SHA-NI streams interleaved. Checks every query before hashing; `Err(InvalidParam)` on a bad
    /// query or if `out.len() != queries.len()`.
    pub fn outputs(&self, queries: &[(usize, u32)], out: &mut [Block]) -> Result<()> {
        check_out_len(queries.len(), out.len())?;
        for &(i, w) in queries {
            self.check(i, w)?;
        }
        out.par_chunks_mut(HASH_BATCH)
            .zip(queries.par_chunks(HASH_BATCH))
            .for_each(|(o, q)| {
                let mut scratch = self.ro.scratch();
                // Two queries at a time, their SHA-NI streams interleaved.
                let (pairs, rest) = o.as_chunks_mut::<2>();
                for (o, q) in pairs.iter_mut().zip(q.chunks_exact(2)) {
                    *o = self.output_pair_unchecked(&mut scratch, [q[0], q[1]]);
                }
                if let (Some(o), Some(&(i, w))) = (rest.first_mut(), q.get(2 * pairs.len())) {
                    *o = self.output_unchecked(&mut scratch, i, w);
                }
            });
        Ok(())
    }

    fn output_pair_unchecked(&self, scratch: &mut HashScratch, q: [(usize, u32); 2]) -> [Block; 2] {
        let nb = code_len(self.eta) / 128;
        let mut rows = [[Block::ZERO; MAX_ETA_BLOCKS]; 2];
        for (row, &(i, w)) in rows.iter_mut().zip(&q) {
            let a = &self.rows[i * nb..(i + 1) * nb];
            let b = &self.masks[w as usize * nb..(w as usize + 1) * nb];
            for ((r, a), b) in row.iter_mut().zip(a).zip(b) {
                *r = *a ^ *b;
            }
        }
        let out = self.ro.hash_pair(
            scratch,
            [self.first + q[0].0 as u64, self.first + q[1].0 as u64],
            [&rows[0][..nb], &rows[1][..nb]],
        );
        rows.zeroize();
        out
    }
}

/// κ'/128 for η = [`MAX_ETA`]: the largest row in blocks.
const MAX_ETA_BLOCKS: usize = 1024 / 128;

impl Kk13Sender {
    /// Runs the κ' base OTs of 1-out-of-2^η OT with `base` (as their receiver, with a random
    /// choice vector s) and returns the ready sender. `Err(InvalidParam)`, before anything is
    /// sent, unless 1 ≤ η ≤ [`MAX_ETA`].
    pub fn setup<B: BaseOtReceiver, C: Channel + ?Sized>(
        base: &mut B,
        eta: u32,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        check_eta(eta)?;
        let nb = code_len(eta) / 128;
        let ro = RowHash::new(RO_LABEL, sid, nb)?;
        let core = WideSender::setup(base, ch, sid, nb, rng)?;
        // Allocated once at its final size, so that no reallocation leaves a copy behind.
        let mut masks = Vec::with_capacity(nb << eta);
        for w in 0..1u32 << eta {
            masks.extend(
                codeword(eta, w)
                    .into_iter()
                    .zip(core.s())
                    .map(|(c, s)| c & *s),
            );
        }
        Ok(Kk13Sender {
            eta,
            core,
            masks,
            ro,
            spare: Vec::new(),
        })
    }

    /// η of the OTs.
    pub fn eta(&self) -> u32 {
        self.eta
    }

    /// `m` random 1-out-of-N OTs: receives the receiver's u columns (one frame per chunk of
    /// ≤ [`CHUNK`](super::CHUNK) OTs, each of exactly κ'·row_bytes bytes, else `Err(Malformed)`)
    /// and returns the rows from which any of the N messages of each OT can be computed.
    pub fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        m: usize,
    ) -> Result<Kk13SenderOutputs> {
        // Wiped if an error ends the batch.
        let mut rows = Zeroizing::new(std::mem::take(&mut self.spare));
        let first = self.core.extend(ch, m, MSG_U_COLUMNS, &mut rows)?;
        Ok(Kk13SenderOutputs {
            rows: std::mem::take(&mut *rows),
            masks: self.masks.clone(),
            eta: self.eta,
            first,
            len: m,
            ro: self.ro.clone(),
        })
    }

    /// Hands a finished batch back: its outputs are zeroised and its buffer serves the next
    /// [`send_random`](Self::send_random), which then needs no fresh (page-faulting)
    /// allocation.
    pub fn recycle(&mut self, mut outputs: Kk13SenderOutputs) {
        super::keep_spare(&mut self.spare, std::mem::take(&mut outputs.rows));
    }
}

/// Writes the first N columns (each `rb` bytes) of the codeword matrix with rows c(v_i) into
/// `cols`, then repeats them up to κ' columns.
/// Transposes the 8×8 bit matrix with bit c of byte r at position 8r + c (delta swaps on 2×2,
/// 4×4 and 8×8 blocks; Warren, *Hacker's Delight*, §7-3).
fn transpose8x8(mut x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^ t ^ (t << 28)
}

fn code_columns(eta: u32, choices: &[u32], rb: usize, cols: &mut [u8]) {
    let n = 1usize << eta;
    // Column 0 (w = 0) is all zero; every other column is written below.
    cols[..rb].fill(0);
    // Column 2^b holds bit b of every choice: for the low 8 bits, 8 choices at a time by one
    // 8×8 bit transpose (byte t of the word is choice t; afterwards byte b holds bit b of the
    // 8 choices), where a bit-by-bit loop would take 64 read-modify-writes.
    for k in 0..rb {
        let mut x = 0u64;
        for t in 0..8 {
            let v = choices.get(8 * k + t).copied().unwrap_or(0);
            x |= u64::from(v as u8) << (8 * t);
        }
        x = transpose8x8(x);
        for b in 0..eta.min(8) {
            cols[(1usize << b) * rb + k] = (x >> (8 * b)) as u8;
        }
    }
    for b in 8..eta {
        let col = &mut cols[(1usize << b) * rb..][..rb];
        col.fill(0);
        for (i, &v) in choices.iter().enumerate() {
            col[i / 8] |= (((v >> b) & 1) as u8) << (i % 8);
        }
    }
    // Column w = column (w without its lowest set bit) ⊕ column (its lowest set bit), by
    // linearity of w ↦ parity(v & w).
    for w in 3..n {
        let low = w & w.wrapping_neg();
        if low == w {
            continue;
        }
        let (lo, hi) = cols.split_at_mut(w * rb);
        let a = &lo[(w ^ low) * rb..][..rb];
        let b = &lo[low * rb..][..rb];
        for ((d, x), y) in hi[..rb].iter_mut().zip(a).zip(b) {
            *d = x ^ y;
        }
    }
    let kp = cols.len() / rb;
    for j in n..kp {
        let (lo, hi) = cols.split_at_mut(j * rb);
        hi[..rb].copy_from_slice(&lo[(j % n) * rb..][..rb]);
    }
}

impl Kk13Receiver {
    /// Runs the κ' base OTs of 1-out-of-2^η OT with `base` (as their sender) and returns the
    /// ready receiver. `Err(InvalidParam)`, before anything is sent, unless
    /// 1 ≤ η ≤ [`MAX_ETA`].
    pub fn setup<B: BaseOtSender, C: Channel + ?Sized>(
        base: &mut B,
        eta: u32,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        check_eta(eta)?;
        let nb = code_len(eta) / 128;
        let ro = RowHash::new(RO_LABEL, sid, nb)?;
        Ok(Kk13Receiver {
            eta,
            core: WideReceiver::setup(base, ch, sid, nb, rng)?,
            ro,
            rows: Vec::new(),
        })
    }

    /// η of the OTs.
    pub fn eta(&self) -> u32 {
        self.eta
    }

    /// Random 1-out-of-N OTs: `out[i]` = the sender's message `choices[i]` of OT i, i.e.
    /// `H(i, t_i)`. `Err(InvalidParam)` (before anything is sent) if a choice is ≥ N = 2^η or
    /// `out.len() != choices.len()`.
    pub fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[u32],
        out: &mut [Block],
    ) -> Result<()> {
        check_out_len(choices.len(), out.len())?;
        let eta = self.eta;
        if let Some((i, v)) = choices.iter().enumerate().find(|(_, v)| **v >> eta != 0) {
            return Err(Error::InvalidParam {
                field: "choices",
                reason: format!("choice {v} of OT {i} is not below N = {}", 1u32 << eta),
            });
        }
        let nb = code_len(eta) / 128;
        // Rows of one batch of chunks at a time, so memory stays bounded for any m.
        const PART: usize = 1 << 18;
        for (part, o) in choices.chunks(PART).zip(out.chunks_mut(PART)) {
            self.rows.clear();
            let first = self.core.extend(
                ch,
                part.len(),
                MSG_U_COLUMNS,
                |start, len, rb, cols| code_columns(eta, &part[start..start + len], rb, cols),
                &mut self.rows,
            )?;
            let ro = &self.ro;
            o.par_chunks_mut(HASH_BATCH)
                .zip(self.rows.par_chunks(HASH_BATCH * nb))
                .enumerate()
                .for_each(|(k, (o, r))| ro.hash_rows(first + (k * HASH_BATCH) as u64, r, o));
            self.rows.zeroize();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn distance(a: &[Block], b: &[Block]) -> u32 {
        a.iter().zip(b).map(|(x, y)| (x.0 ^ y.0).count_ones()).sum()
    }

    #[test]
    fn code_lengths() {
        let expect = [256, 256, 256, 256, 256, 256, 256, 256, 512, 1024];
        for (eta, &e) in (1..=MAX_ETA).zip(&expect) {
            assert_eq!(code_len(eta), e, "η = {eta}");
            assert_eq!(codeword(eta, 1).len() * 128, e);
        }
    }

    #[test]
    fn table9_row_as_printed() {
        let printed = [
            "2.0", "1.0", "0.67", "0.50", "0.40", "0.33", "0.29", "0.25", "0.44",
        ];
        for (eta, p) in (1..=9).zip(printed) {
            let f = table9_factor(eta);
            let want: f64 = p.parse().unwrap();
            assert!(
                ((f * 100.0).round() / 100.0 - want).abs() < 1e-9,
                "η = {eta}: {f}"
            );
            assert_eq!(
                format!("{f:.2}").trim_end_matches('0'),
                p.trim_end_matches('0')
            );
        }
    }

    #[test]
    fn walsh_hadamard_bits() {
        // c(v) bit w = parity(v & w); c(0) = 0; repetition with period N.
        assert!(codeword(8, 0).iter().all(|b| *b == Block::ZERO));
        let c = codeword(2, 0b11);
        // w = 0,1,2,3 → 0,1,1,0, repeated.
        assert_eq!(c[0].0 & 0xff, 0b0110_0110);
        assert_eq!(c[1], c[0]);
    }

    #[test]
    fn distance_at_least_kappa_all_pairs() {
        for eta in 1..=6 {
            let n = 1u32 << eta;
            let cws: Vec<Vec<Block>> = (0..n).map(|v| codeword(eta, v)).collect();
            for a in 0..n as usize {
                for b in a + 1..n as usize {
                    assert!(distance(&cws[a], &cws[b]) >= 128, "η = {eta}, {a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn distance_at_least_kappa_sampled() {
        for eta in [7u32, 8, 9, 10] {
            let n = 1u32 << eta;
            let mut x = 0x9e37_79b9u32;
            for _ in 0..2000 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let a = (x >> 8) % n;
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let b = (x >> 8) % n;
                if a == b {
                    continue;
                }
                let d = distance(&codeword(eta, a), &codeword(eta, b));
                assert!(d >= 128, "η = {eta}, {a} vs {b}: {d}");
            }
        }
    }

    #[test]
    fn code_columns_match_codewords() {
        for (eta, count) in [(1u32, 200u32), (3, 203), (8, 200), (8, 131), (9, 205)] {
            let choices: Vec<u32> = (0..count).map(|i| (i * 37 + 5) % (1 << eta)).collect();
            let rb = crate::ext::row_bytes(choices.len());
            let kp = code_len(eta);
            // A reused buffer holds old data: every byte must be written.
            let mut cols = vec![0xa5u8; kp * rb];
            code_columns(eta, &choices, rb, &mut cols);
            let mut rows = Vec::new();
            crate::ext::wide::columns_to_rows(
                &cols,
                rb,
                choices.len(),
                kp / 128,
                &mut Vec::new(),
                &mut rows,
            )
            .unwrap();
            for (i, &v) in choices.iter().enumerate() {
                assert_eq!(
                    &rows[i * kp / 128..(i + 1) * kp / 128],
                    &codeword(eta, v)[..]
                );
            }
        }
    }

    #[test]
    fn transpose8x8_moves_bit_rc_to_cr() {
        for r in 0..8 {
            for c in 0..8 {
                assert_eq!(transpose8x8(1 << (8 * r + c)), 1 << (8 * c + r));
            }
        }
    }
}
