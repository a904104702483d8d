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
//! **Hash.** H(i, x) = SHA-256(D ‖ le64(i) ‖ x) truncated to 128 bits (`RowHash` of `wide.rs`
//! at width 4), a random oracle as in OOS16. The instance index counts across batches (and
//! over the check rows).
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
use super::wide::{RowHash, WideReceiver, WideSender, rows_to_columns};
use super::{check_out_len, grow_wiping};
use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::channel::Channel;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
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

/// Label of the random oracle H.
const RO_LABEL: &str = "blindjoin/ot/oos/ro/v1";
/// Bytes of the proof: λ rows T_l (four blocks) and λ values W_l (one block).
const PROOF_BYTES: usize = CHECK_ROWS * (WIDTH + 1) * 16;

/// λ sums of four-block rows, as words.
type Acc = [[u64; 2 * WIDTH]; CHECK_ROWS];

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

/// The row of four blocks as eight words.
#[inline]
fn words(row: &[Block]) -> [u64; 2 * WIDTH] {
    let mut w = [0u64; 2 * WIDTH];
    for (k, b) in row.iter().take(WIDTH).enumerate() {
        w[2 * k] = b.0 as u64;
        w[2 * k + 1] = (b.0 >> 64) as u64;
    }
    w
}

/// acc_l = rows[m + l] ⊕ ⊕_i χ_{i,l}·rows[i] over the `m` rows before the check rows.
fn combine(rows: &[Block], m: usize, chi: &[u64]) -> Acc {
    let mut acc: Acc = [[0u64; 2 * WIDTH]; CHECK_ROWS];
    for (l, a) in acc.iter_mut().enumerate() {
        *a = words(&rows[(m + l) * WIDTH..(m + l + 1) * WIDTH]);
    }
    // χ is public, so walking its set bits (half of λ on average) leaks nothing.
    for (row, &c) in rows.chunks_exact(WIDTH).take(m).zip(chi) {
        let r = words(row);
        let mut c = c;
        while c != 0 {
            let l = c.trailing_zeros() as usize;
            c &= c - 1;
            if let Some(a) = acc.get_mut(l) {
                for (x, y) in a.iter_mut().zip(&r) {
                    *x ^= y;
                }
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
    for (w, &c) in inputs.iter().take(m).zip(chi) {
        let mut c = c;
        while c != 0 {
            let l = c.trailing_zeros() as usize;
            c &= c - 1;
            if let Some(a) = acc.get_mut(l) {
                *a ^= w.0;
            }
        }
    }
    acc
}

/// What every batch of sender outputs needs besides its rows.
struct SenderShared {
    s: [Block; WIDTH],
    code: Bch511,
    ro: RowHash,
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

impl OosSenderOutputs {
    /// Number of instances in the batch.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// F_{start+k}(x) into `out[k]` for k < `out.len()`: one input evaluated at consecutive
    /// instances of this batch (a bin's slots). Bits of x above 76 are ignored.
    /// `Err(InvalidParam)` if the range leaves the batch.
    pub fn eval_range(&self, x: Block, start: usize, out: &mut [Block]) -> Result<()> {
        let end = start.saturating_add(out.len());
        if end > self.len {
            return Err(Error::InvalidParam {
                field: "instance",
                reason: format!("instances {start}..{end} of a batch of {}", self.len),
            });
        }
        let sh = &*self.shared;
        let mut c = sh.code.encode(x);
        for (c, s) in c.iter_mut().zip(&sh.s) {
            *c &= *s;
        }
        let mut rows = [Block::ZERO; 2 * WIDTH];
        let mut scratch = sh.ro.scratch();
        let (pairs, rest) = out.as_chunks_mut::<2>();
        for (p, o) in pairs.iter_mut().enumerate() {
            let i = start + 2 * p;
            for h in 0..2 {
                let q = &self.rows[(i + h) * WIDTH..(i + h + 1) * WIDTH];
                for k in 0..WIDTH {
                    rows[h * WIDTH + k] = q[k] ^ c[k];
                }
            }
            let idx = self.first + i as u64;
            *o = sh.ro.hash_pair(
                &mut scratch,
                [idx, idx + 1],
                [&rows[..WIDTH], &rows[WIDTH..]],
            );
        }
        if let Some(o) = rest.first_mut() {
            let i = start + 2 * pairs.len();
            let q = &self.rows[i * WIDTH..(i + 1) * WIDTH];
            for k in 0..WIDTH {
                rows[k] = q[k] ^ c[k];
            }
            *o = sh
                .ro
                .hash_with(&mut scratch, self.first + i as u64, &rows[..WIDTH]);
        }
        rows.zeroize();
        c.zeroize();
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
        let ro = RowHash::new(RO_LABEL, sid, WIDTH)?;
        let mut s = [Block::ZERO; WIDTH];
        s.copy_from_slice(core.s());
        Ok(OosSender {
            core,
            shared: Arc::new(SenderShared {
                s,
                code: Bch511::new(),
                ro,
            }),
            seeds,
            names: NAMES,
            spare: Vec::new(),
        })
    }

    /// `m` OPRF instances: receives the u columns of m + λ rows, sends a challenge, checks the
    /// receiver's proof and returns the keys. `Err(CheckFailed)` if the receiver's rows are
    /// inconsistent, `Err(Malformed)` on a frame of the wrong size.
    pub fn send<C: Channel + ?Sized>(&mut self, ch: &mut C, m: usize) -> Result<OosSenderOutputs> {
        let mut rows = Zeroizing::new(std::mem::take(&mut self.spare));
        rows.clear();
        let first = self
            .core
            .extend(ch, m + CHECK_ROWS, self.names.u, &mut rows)?;
        let seed = self.seeds.next_block();
        ch.send(self.names.challenge, &seed.to_bytes())?;
        let chi = challenge_bits(seed, m);
        let q = combine(&rows, m, &chi);
        let proof_name = self.names.proof;
        let proof = ch.recv(proof_name, PROOF_BYTES)?;
        if proof.len() != PROOF_BYTES {
            return Err(Error::malformed(
                proof_name,
                format!("{} bytes, {PROOF_BYTES} expected", proof.len()),
            ));
        }
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
                let qk = u128::from(q[l][2 * k]) | (u128::from(q[l][2 * k + 1]) << 64);
                bad |= (t ^ qk) != (c[k].0 & sh.s[k].0);
            }
        }
        if bad {
            return Err(Error::CheckFailed(
                "the OOS16 consistency check on the receiver's rows failed".into(),
            ));
        }
        rows.truncate(m * WIDTH);
        Ok(OosSenderOutputs {
            rows: std::mem::take(&mut *rows),
            shared: Arc::clone(&self.shared),
            first,
            len: m,
        })
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
    ro: RowHash,
    /// The PRG of the check rows' inputs.
    check_inputs: AesPrg,
    names: Names,
    rows: Vec<Block>,
    codes: Vec<Block>,
    inputs: Vec<Block>,
}

impl Drop for OosReceiver {
    fn drop(&mut self) {
        self.rows.zeroize();
        self.codes.zeroize();
        self.inputs.zeroize();
    }
}

/// The buffers are wiped by `Drop`; the core wipes its PRGs and buffers.
impl ZeroizeOnDrop for OosReceiver {}

impl std::fmt::Debug for OosReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OosReceiver").finish_non_exhaustive()
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
            ro: RowHash::new(RO_LABEL, sid, WIDTH)?,
            check_inputs,
            names: NAMES,
            rows: Vec::new(),
            codes: Vec::new(),
            inputs: Vec::new(),
        })
    }

    /// One OPRF instance per input (at most 76 bits each), and the outputs of the instances
    /// listed in `wanted`: `out[k] = F_{wanted[k]}(inputs[wanted[k]])` (instances the caller
    /// fills with dummies need no output). Answers the sender's challenge before returning.
    /// `Err(InvalidParam)` (before anything is sent) if an input has more than 76 bits, a
    /// wanted index is out of range or `out.len() != wanted.len()`.
    pub fn receive<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        inputs: &[Block],
        wanted: &[usize],
        out: &mut [Block],
    ) -> Result<()> {
        check_out_len(wanted.len(), out.len())?;
        let m = inputs.len();
        if let Some(i) = inputs.iter().position(|w| w.0 & !MESSAGE_MASK != 0) {
            return Err(Error::InvalidParam {
                field: "input",
                reason: format!("input {i} has more than {INPUT_BITS} bits"),
            });
        }
        if let Some(&i) = wanted.iter().find(|&&i| i >= m) {
            return Err(Error::InvalidParam {
                field: "instance",
                reason: format!("instance {i} of a batch of {m}"),
            });
        }
        self.inputs.clear();
        grow_wiping(&mut self.inputs, m + CHECK_ROWS);
        self.inputs.extend_from_slice(inputs);
        for _ in 0..CHECK_ROWS {
            let w = self.check_inputs.next_block();
            self.inputs.push(Block(w.0 & MESSAGE_MASK));
        }
        self.rows.clear();
        let (code, codes, all) = (&self.code, &mut self.codes, &self.inputs);
        let first = self.core.extend(
            ch,
            m + CHECK_ROWS,
            self.names.u,
            |start, len, rb, cols| {
                code.encode_into(&all[start..start + len], codes);
                rows_to_columns(codes, WIDTH, rb, cols);
            },
            &mut self.rows,
        )?;
        self.codes.zeroize();
        let seed = ch.recv(self.names.challenge, 16)?;
        let seed = Block::from_slice(&seed).ok_or_else(|| {
            Error::malformed(
                self.names.challenge,
                format!("{} bytes, 16 expected", seed.len()),
            )
        })?;
        let chi = challenge_bits(seed, m);
        let t = combine(&self.rows, m, &chi);
        let w = combine_inputs(&self.inputs, m, &chi);
        let mut proof = Zeroizing::new(Vec::with_capacity(PROOF_BYTES));
        for row in &t {
            for k in 0..WIDTH {
                let v = u128::from(row[2 * k]) | (u128::from(row[2 * k + 1]) << 64);
                proof.extend_from_slice(&v.to_le_bytes());
            }
        }
        for v in &w {
            proof.extend_from_slice(&v.to_le_bytes());
        }
        ch.send(self.names.proof, &proof)?;
        let rows = &self.rows;
        let mut scratch = self.ro.scratch();
        let (pairs, rest) = out.as_chunks_mut::<2>();
        let (wpairs, wrest) = wanted.as_chunks::<2>();
        for (o, &[a, b]) in pairs.iter_mut().zip(wpairs) {
            *o = self.ro.hash_pair(
                &mut scratch,
                [first + a as u64, first + b as u64],
                [
                    &rows[a * WIDTH..(a + 1) * WIDTH],
                    &rows[b * WIDTH..(b + 1) * WIDTH],
                ],
            );
        }
        if let (Some(o), Some(&a)) = (rest.first_mut(), wrest.first()) {
            *o = self.ro.hash_with(
                &mut scratch,
                first + a as u64,
                &rows[a * WIDTH..(a + 1) * WIDTH],
            );
        }
        self.rows.zeroize();
        self.inputs.zeroize();
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
            let mut want = words(&rows[(m + l) * WIDTH..(m + l + 1) * WIDTH]);
            for i in 0..m {
                if (chi[i] >> l) & 1 == 1 {
                    let r = words(&rows[i * WIDTH..(i + 1) * WIDTH]);
                    want.iter_mut().zip(&r).for_each(|(a, b)| *a ^= b);
                }
            }
            assert_eq!(acc[l], want);
        }
    }
}
