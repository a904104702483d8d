//! KOS: IKNP/ALSZ random OT extension secure against a malicious receiver, with a coin-tossed
//! challenge.
//!
//! **Paper.** Keller, Orsini, Scholl, *Actively Secure OT Extension with Optimal Overhead*,
//! CRYPTO 2015, Fig. 7. After the receiver has sent its u columns for m' = m + [`EXTRA`] OTs
//! (the extra κ + λ rounded up to whole 128-bit columns, with random choices), both parties
//! expand a challenge seed into χ_1..χ_m' ∈ GF(2^128), and the receiver sends
//!
//! ```text
//! x = Σ χ_i·r_i,   t = Σ χ_i·t_i        (products in GF(2^128), r_i ∈ {0,1})
//! ```
//!
//! The sender accepts only if `t = Σ χ_i·q_i ⊕ x·s`, which holds when every row satisfies
//! q_i = t_i ⊕ r_i·s, i.e. when the receiver used one consistent choice bit per OT in all κ
//! columns. KOS sample χ with a coin-tossing functionality (`F_Rand`); here both parties
//! contribute a share of the χ seed, the receiver's committed to by a hash before the sender
//! picks its own.
//!
//! **Message flow** of one batch (one [`KosSender::send_random`] /
//! [`KosReceiver::receive_random`] call of m ≥ 1 OTs whose first OT index is `first`; a batch
//! of 0 OTs sends nothing):
//!
//! ```text
//! R: seed_R, nonce ← PRG;  c = SHA-256(domain "ot/kos/commit" ‖ sid ‖ first ‖ seed_R ‖ nonce)
//! R → S: c                                     MSG_COMMITMENT (32 bytes)
//! R → S: u columns of the m OTs                MSG_U_COLUMNS (one frame per chunk)
//! R → S: u columns of the EXTRA OTs            MSG_U_COLUMNS (one frame), random choices
//! S → R: seed_S ← PRG                          MSG_SEED (16 bytes), after every u column
//! R → S: seed_R ‖ nonce                        MSG_OPENING (32 bytes)
//! S:     checks the opening against c
//! both:  χ-seed = SHA-256(domain "ot/kos/challenge" ‖ sid ‖ first ‖ seed_S ‖ seed_R)[..16],
//!        χ_i = AES_{χ-seed}(i) for the i-th OT of the batch (the m OTs, then the EXTRA)
//! R → S: x ‖ t                                 MSG_PROOF (32 bytes)
//! S:     checks t = Σ χ_i·q_i ⊕ x·s
//! out:   S (TCCR(first + i, q_i), TCCR(first + i, q_i ⊕ s)), R TCCR(first + i, t_i), i < m
//! ```
//!
//! The receiver computes x and t only once it has seed_S. It sends its opening as soon as
//! seed_S arrives and its proof after its pass over its rows, so that the sender's pass (χ and
//! its sum) runs at the same time as the receiver's.
//!
//! **Security.** A malicious receiver is caught by the check: it is bound to its u columns
//! before seed_S exists, and χ is then uniform to it because seed_S is. A malicious sender
//! cannot bias χ either: when it picks seed_S it has seen only the commitment, which hides
//! seed_R (the 128-bit nonce; SHA-256 as a random oracle), and the receiver's opening must
//! match the commitment it sent before seeing seed_S (binding: SHA-256 collision resistance),
//! so a cheating receiver cannot choose seed_R after seeing seed_S either. The χ-seed, a
//! random-oracle hash of an input holding a 128-bit share that the cheating party neither knows
//! when it fixes its own share nor can change afterwards, is therefore uniform if either party
//! is honest; `sid` and `first` make it fresh per session and per batch. The EXTRA OTs with
//! uniformly random choices mask x: their χ_i·r_i terms make x uniform and independent of the
//! m real choices, and their outputs are discarded. The outputs use the same TCCR hash as IKNP
//! (KOS model H as a random oracle). A failed check or any other error wipes the caller's
//! output buffer.
//!
//! **Cost.** As in IKNP, each chunk of OTs is extended and its outputs hashed while its rows
//! are in cache. Since χ exists only once every u column is in, the batch's rows q_i (sender) or
//! t_i (receiver), the EXTRA included, are also written to a buffer that the extension keeps
//! from batch to batch (16 bytes per OT of the largest batch so far, wiped on drop). After the
//! coin toss, one streaming pass over that buffer makes χ by AES-CTR at each row's counter, a
//! few hundred rows at a time, and accumulates the products unreduced (one reduction per run of
//! rows), spread over the rayon pool like IKNP's hashing; the receiver's pass adds up x as
//! well. Both parties wait on these passes, so they do nothing else: the sender's outputs are
//! computed before the check, and wiped if it fails.
//!
//! **Lifecycle.** [`KosSender::setup`] / [`KosReceiver::setup`] run IKNP's setup (the κ base
//! OTs, with the base OT they are given), seed the PRG of the sender's challenge seeds or of the
//! receiver's challenge seeds, nonces and extra choices from the caller's RNG, keep the session
//! id, and return the ready extension; there is no other constructor. Everything secret is
//! wiped when the value is dropped, and the seeds and nonces of a batch when the batch ends.

use super::iknp::{IknpReceiver, IknpSender, PAR_ROWS, random_outputs};
use super::{CHUNK, check_out_len, grow_wiping};
use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::block::gf128_inner_product;
use blindjoin_core::channel::{Channel, FrameReceiver};
use blindjoin_core::handshake::session_hasher;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use sha2::Digest;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Extra OTs for the check: κ + λ = 168 rounded up to whole columns.
pub const EXTRA: usize = 256;

/// Name of the receiver's commitment to its share of the challenge seed.
pub const MSG_COMMITMENT: &str = "the KOS commitment to the receiver's challenge seed";
/// Name of the sender's share of the challenge seed.
pub const MSG_SEED: &str = "the KOS challenge seed";
/// Name of the receiver's opening of its commitment (its seed share and nonce).
pub const MSG_OPENING: &str = "the KOS opening of the receiver's challenge seed";
/// Name of the receiver's check values (x, t).
pub const MSG_PROOF: &str = "the KOS check values";

/// Bytes of [`MSG_COMMITMENT`].
pub const COMMITMENT_LEN: usize = 32;
/// Bytes of [`MSG_SEED`].
pub const SEED_LEN: usize = 16;
/// Bytes of [`MSG_OPENING`]: the receiver's seed share, then its nonce.
pub const OPENING_LEN: usize = 32;
/// Bytes of [`MSG_PROOF`]: x, then t.
pub const PROOF_LEN: usize = 32;

/// Domain of the commitment hash.
const COMMIT_LABEL: &str = "ot/kos/commit";
/// Domain of the hash that derives the χ seed.
const CHALLENGE_LABEL: &str = "ot/kos/challenge";

/// The longest frame read for the short messages: longer than any of them, so that a frame of
/// the wrong length is reported as malformed (a frame past this bound is refused unread).
const SHORT_FRAME_MAX: usize = 64;

/// Random base OTs for a wide extension (OOS16's 512), extended by KOS from κ = 128 base OTs
/// of the inner base OT `B` run in reversed roles, as libOTe and libPSI seed OOS16 (128
/// public-key OTs, then KOS): secure against a malicious party when `B` is, at the cost of
/// 128 public-key OTs instead of one per base OT.
#[derive(Clone, Copy, Debug)]
pub struct KosBase<B>(pub B);

impl<B: BaseOtReceiver> BaseOtSender for KosBase<B> {
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        n: usize,
        rng: &mut impl rand::CryptoRng,
    ) -> Result<Vec<[[u8; 16]; 2]>> {
        let mut kos = KosSender::setup(&mut self.0, ch, sid, rng)?;
        let mut out = Zeroizing::new(vec![[Block::ZERO; 2]; n]);
        kos.send_random(ch, &mut out)?;
        Ok(out
            .iter()
            .map(|[a, b]| [a.to_bytes(), b.to_bytes()])
            .collect())
    }
}

impl<B: BaseOtSender> BaseOtReceiver for KosBase<B> {
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        choices: &[bool],
        rng: &mut impl rand::CryptoRng,
    ) -> Result<Vec<[u8; 16]>> {
        let mut kos = KosReceiver::setup(&mut self.0, ch, sid, rng)?;
        let mut out = Zeroizing::new(vec![Block::ZERO; choices.len()]);
        kos.receive_random(ch, choices, &mut out)?;
        Ok(out.iter().map(|b| b.to_bytes()).collect())
    }
}

/// KOS sender (the party that checks). [`setup`](Self::setup) runs the base OTs and is the only
/// way to get one. It holds IKNP's sender (whose Δ is wiped on drop), the PRG of its challenge
/// seeds and a chunk's row buffer (wiped on drop); `Debug` shows none of them.
pub struct KosSender {
    iknp: IknpSender,
    /// The PRG of the sender's shares of the challenge seeds.
    prg: AesPrg,
    /// The session id (bound into the commitment and the χ seed).
    sid: [u8; 32],
    /// The rows q_i of a batch, kept for the check; the buffer is reused from batch to batch.
    rows: Vec<Block>,
    /// Test hook for a cheating sender: the share of the challenge seed it sends.
    #[cfg(test)]
    pub(crate) fixed_seed: Option<Block>,
    /// Test hook: the χ seed of the last batch.
    #[cfg(test)]
    pub(crate) last_chi_seed: Option<Block>,
}

/// KOS receiver (the party that proves consistency). [`setup`](Self::setup) runs the base OTs
/// and is the only way to get one. It holds IKNP's receiver and the PRG of its challenge seeds,
/// nonces and the extra OTs' choices, both wiped on drop; `Debug` shows neither.
pub struct KosReceiver {
    iknp: IknpReceiver,
    /// The PRG of the receiver's seed shares, nonces and extra choices.
    prg: AesPrg,
    /// The session id (bound into the commitment and the χ seed).
    sid: [u8; 32],
    /// The rows t_i of a batch, kept for the proof; the buffer is reused from batch to batch.
    rows: Vec<Block>,
    /// Test hook: the χ seed of the last batch.
    #[cfg(test)]
    pub(crate) last_chi_seed: Option<Block>,
}

impl Drop for KosSender {
    fn drop(&mut self) {
        self.rows.zeroize();
    }
}

impl Drop for KosReceiver {
    fn drop(&mut self) {
        self.rows.zeroize();
    }
}

/// The row buffer is wiped by `Drop`; IKNP's sender and the PRG wipe their own secrets.
impl ZeroizeOnDrop for KosSender {}

/// The row buffer is wiped by `Drop`; IKNP's receiver and the PRG wipe their own secrets.
impl ZeroizeOnDrop for KosReceiver {}

impl std::fmt::Debug for KosSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KosSender").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for KosReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KosReceiver").finish_non_exhaustive()
    }
}

/// The receiver's commitment to its seed share: SHA-256 of the domain, `sid`, the batch's
/// first OT index, the share and the nonce (fixed-length fields after the length-prefixed
/// domain and sid).
fn commitment(sid: &[u8; 32], first: u64, seed_r: Block, nonce: Block) -> [u8; COMMITMENT_LEN] {
    let mut h = session_hasher(sid, COMMIT_LABEL);
    h.update(first.to_le_bytes());
    h.update(seed_r.to_bytes());
    h.update(nonce.to_bytes());
    h.finalize().into()
}

/// The χ seed of the batch that starts at OT `first`, from both shares.
fn chi_seed(sid: &[u8; 32], first: u64, seed_s: Block, seed_r: Block) -> Block {
    let mut h = session_hasher(sid, CHALLENGE_LABEL);
    h.update(first.to_le_bytes());
    h.update(seed_s.to_bytes());
    h.update(seed_r.to_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    Block::from_bytes(b)
}

/// χ_i for i = `start`, `start + 1`, … into `out`: block i of the AES-CTR stream of the χ seed
/// (`AesPrg::new(seed)`'s block i, computed at its counter so that any stretch can be made
/// on its own).
fn fill_chi(chi: &FixedKeyAes, start: usize, out: &mut [Block]) {
    for (k, c) in out.iter_mut().enumerate() {
        *c = Block((start + k) as u128);
    }
    chi.permute(out);
}

/// Receives a short message of exactly `N` bytes.
fn recv_exact<const N: usize, C: FrameReceiver + ?Sized>(
    ch: &mut C,
    name: &'static str,
) -> Result<[u8; N]> {
    let v = ch.recv(name, SHORT_FRAME_MAX)?;
    <[u8; N]>::try_from(v.as_slice())
        .map_err(|_| Error::malformed(name, format!("{} bytes, {N} expected", v.len())))
}

/// The two halves of a 32-byte message as blocks.
fn two_blocks(b: &[u8; 32]) -> (Block, Block) {
    let mut lo = [0u8; 16];
    let mut hi = [0u8; 16];
    lo.copy_from_slice(&b[..16]);
    hi.copy_from_slice(&b[16..]);
    (Block::from_bytes(lo), Block::from_bytes(hi))
}

/// Rows per generation of χ in the passes of the check: χ is made this many at a time, so
/// that the AES work and the loads of the (uncached) rows overlap.
const CHI_BATCH: usize = 256;

/// `Σ χ_i·q_i` over the rows `q` (χ_i at counter i), spread over the rayon pool by
/// [`PAR_ROWS`] rows.
fn sender_sum(chi: &FixedKeyAes, q: &[Block]) -> Block {
    q.par_chunks(PAR_ROWS)
        .enumerate()
        .map(|(p, q)| {
            let mut c = [Block::ZERO; CHI_BATCH];
            let mut sum = Block::ZERO;
            for (j, q) in q.chunks(CHI_BATCH).enumerate() {
                let c = &mut c[..q.len()];
                fill_chi(chi, p * PAR_ROWS + j * CHI_BATCH, c);
                sum ^= gf128_inner_product(c, q);
            }
            sum
        })
        .reduce(|| Block::ZERO, |a, b| a ^ b)
}

/// `(Σ χ_i·r_i, Σ χ_i·t_i)` over the rows `t` and the choices r_i (χ_i at counter i), spread
/// over the rayon pool by [`PAR_ROWS`] rows.
fn receiver_sums(chi: &FixedKeyAes, choices: &[bool], t: &[Block]) -> (Block, Block) {
    t.par_chunks(PAR_ROWS)
        .zip(choices.par_chunks(PAR_ROWS))
        .enumerate()
        .map(|(p, (t, r))| {
            let mut c = [Block::ZERO; CHI_BATCH];
            let mut sums = (Block::ZERO, Block::ZERO);
            for (j, (t, r)) in t.chunks(CHI_BATCH).zip(r.chunks(CHI_BATCH)).enumerate() {
                let c = &mut c[..t.len()];
                fill_chi(chi, p * PAR_ROWS + j * CHI_BATCH, c);
                let (x, s) = proof_terms(c, r, t);
                sums = (sums.0 ^ x, sums.1 ^ s);
            }
            sums
        })
        .reduce(|| (Block::ZERO, Block::ZERO), |a, b| (a.0 ^ b.0, a.1 ^ b.1))
}

/// `out[i] = TCCR(first + i, rows[i])`, spread over the rayon pool by [`PAR_ROWS`] rows.
fn hash_rows_into(aes: &FixedKeyAes, first: u64, rows: &[Block], out: &mut [Block]) {
    out.par_chunks_mut(PAR_ROWS)
        .zip(rows.par_chunks(PAR_ROWS))
        .enumerate()
        .for_each(|(p, (o, t))| aes.tccr_hash_b2b(first + (p * PAR_ROWS) as u64, t, o));
}

/// `(Σ χ_i·r_i, Σ χ_i·t_i)`: with r_i a bit, the first sum is the XOR of the χ_i whose choice
/// is 1, selected by masks (constant time in the choices).
fn proof_terms(chi: &[Block], choices: &[bool], rows: &[Block]) -> (Block, Block) {
    let x = chi
        .iter()
        .zip(choices)
        .fold(Block::ZERO, |acc, (c, &r)| acc ^ (*c & Block::mask(r)));
    (x, gf128_inner_product(chi, rows))
}

impl KosSender {
    /// Runs the base OTs with `base` (as their receiver), seeds, from `rng`, the PRG of the
    /// challenge seeds, and returns the ready sender.
    pub fn setup<B: BaseOtReceiver, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let iknp = IknpSender::setup(base, ch, sid, rng)?;
        Ok(KosSender {
            iknp,
            prg: AesPrg::new(Block::random(rng)),
            sid: *sid,
            rows: Vec::new(),
            #[cfg(test)]
            fixed_seed: None,
            #[cfg(test)]
            last_chi_seed: None,
        })
    }

    /// `out.len()` random OTs: `out[i] = (x_i^0, x_i^1)`. Fails with [`Error::CheckFailed`] if
    /// the receiver's opening does not match its commitment or its columns are inconsistent,
    /// and with `Malformed` for a message of the wrong length; on any error `out` is wiped.
    pub fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        out: &mut [[Block; 2]],
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let r = self.batch(ch, out);
        if r.is_err() {
            out.as_flattened_mut().zeroize();
        }
        r
    }

    fn batch<C: Channel + ?Sized>(&mut self, ch: &mut C, out: &mut [[Block; 2]]) -> Result<()> {
        let m = out.len();
        let first = self.iknp.reserve(m + EXTRA);
        let c = recv_exact::<COMMITMENT_LEN, _>(ch, MSG_COMMITMENT)?;
        // The batch's rows q_i (the m OTs, then the EXTRA) stay for the check; each chunk's
        // outputs are hashed while its rows are in cache, and wiped if the check fails.
        let mut q = Zeroizing::new(std::mem::take(&mut self.rows));
        grow_wiping(&mut q, m + EXTRA);
        q.resize(m + EXTRA, Block::ZERO);
        let s = self.iknp.delta();
        for (k, (o, q)) in out.chunks_mut(CHUNK).zip(q.chunks_mut(CHUNK)).enumerate() {
            let q = &mut q[..o.len()];
            self.iknp.extend_chunk(ch, q)?;
            random_outputs(self.iknp.aes(), s, first + (k * CHUNK) as u64, q, o);
        }
        self.iknp.extend_chunk(ch, &mut q[m..])?;

        // The coin toss: our share only now that every u column is in.
        #[cfg(not(test))]
        let seed_s = self.prg.next_block();
        #[cfg(test)]
        let seed_s = {
            let own = self.prg.next_block();
            self.fixed_seed.unwrap_or(own)
        };
        ch.send(MSG_SEED, &seed_s.to_bytes())?;
        let opening = recv_exact::<OPENING_LEN, _>(ch, MSG_OPENING)?;
        let (seed_r, nonce) = two_blocks(&opening);
        if commitment(&self.sid, first, seed_r, nonce) != c {
            return Err(Error::CheckFailed(
                "the OT receiver's opening does not match its commitment to its challenge seed \
                 (KOS coin toss)"
                    .into(),
            ));
        }
        let seed = chi_seed(&self.sid, first, seed_s, seed_r);
        #[cfg(test)]
        {
            self.last_chi_seed = Some(seed);
        }
        let chi = FixedKeyAes::new(seed);

        let sum = sender_sum(&chi, &q);
        self.rows = std::mem::take(&mut *q);

        let proof = recv_exact::<PROOF_LEN, _>(ch, MSG_PROOF)?;
        let (x, t) = two_blocks(&proof);
        if sum ^ x.gf128_mul(s) != t {
            return Err(Error::CheckFailed(
                "the OT receiver's columns are inconsistent (KOS correlation check)".into(),
            ));
        }
        Ok(())
    }
}

impl KosReceiver {
    /// Runs the base OTs with `base` (as their sender), seeds, from `rng`, the PRG of the
    /// challenge seeds, nonces and extra OTs' choices, and returns the ready receiver.
    pub fn setup<B: BaseOtSender, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let iknp = IknpReceiver::setup(base, ch, sid, rng)?;
        Ok(KosReceiver {
            iknp,
            prg: AesPrg::new(Block::random(rng)),
            sid: *sid,
            rows: Vec::new(),
            #[cfg(test)]
            last_chi_seed: None,
        })
    }

    /// Random OTs: `out[i] = x_i^{choices[i]}`; `InvalidParam` if the lengths differ,
    /// `Malformed` for a challenge seed of the wrong length. On an error after the lengths are
    /// checked, `out` is wiped.
    pub fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        check_out_len(choices.len(), out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        let r = self.batch(ch, choices, out);
        if r.is_err() {
            out.zeroize();
        }
        r
    }

    fn batch<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        let m = out.len();
        // Our share of the challenge seed, the nonce that hides it, and the extra choices.
        let mut secrets = Zeroizing::new([Block::ZERO; 2 + EXTRA / 128]);
        self.prg.fill_blocks(&mut secrets[..]);
        let (seed_r, nonce) = (secrets[0], secrets[1]);
        let mut extra_choices = Zeroizing::new([false; EXTRA]);
        for (j, r) in extra_choices.iter_mut().enumerate() {
            *r = secrets[2 + j / 128].bit(j % 128);
        }
        let first = self.iknp.next_index();
        ch.send(MSG_COMMITMENT, &commitment(&self.sid, first, seed_r, nonce))?;
        // The batch's rows t_i (the m OTs, then the EXTRA) stay for the proof; each chunk's
        // outputs are hashed while its rows are in cache.
        let mut t = Zeroizing::new(std::mem::take(&mut self.rows));
        grow_wiping(&mut t, m + EXTRA);
        t.resize(m + EXTRA, Block::ZERO);
        for (k, ((c, o), t)) in choices
            .chunks(CHUNK)
            .zip(out.chunks_mut(CHUNK))
            .zip(t.chunks_mut(CHUNK))
            .enumerate()
        {
            let t = &mut t[..c.len()];
            self.iknp.extend_into(ch, c, t)?;
            hash_rows_into(self.iknp.aes(), first + (k * CHUNK) as u64, t, o);
        }
        self.iknp.extend_into(ch, &extra_choices[..], &mut t[m..])?;

        let seed_s = Block::from_bytes(recv_exact::<SEED_LEN, _>(ch, MSG_SEED)?);
        let mut opening = Zeroizing::new([0u8; OPENING_LEN]);
        opening[..16].copy_from_slice(&seed_r.to_bytes());
        opening[16..].copy_from_slice(&nonce.to_bytes());
        ch.send(MSG_OPENING, &opening[..])?;
        let seed = chi_seed(&self.sid, first, seed_s, seed_r);
        #[cfg(test)]
        {
            self.last_chi_seed = Some(seed);
        }
        let chi = FixedKeyAes::new(seed);

        let (x, tm) = receiver_sums(&chi, choices, &t[..m]);
        let mut chi_extra = [Block::ZERO; EXTRA];
        fill_chi(&chi, m, &mut chi_extra);
        let (xe, te) = proof_terms(&chi_extra, &extra_choices[..], &t[m..]);
        self.rows = std::mem::take(&mut *t);
        let (x, t) = (x ^ xe, tm ^ te);
        let mut proof = [0u8; PROOF_LEN];
        proof[..16].copy_from_slice(&x.to_bytes());
        proof[16..].copy_from_slice(&t.to_bytes());
        ch.send(MSG_PROOF, &proof)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::base::{ChouOrlandiReceiver, ChouOrlandiSender};
    use blindjoin_testkit::{rng, run_two_party};

    /// One batch of 1000 OTs, the receiver cheating as `cheat` says; the sender's result.
    fn run(cheat: Option<(usize, usize)>) -> Result<()> {
        let sid = [3u8; 32];
        let choices: Vec<bool> = (0..1000).map(|i| i % 3 == 0).collect();
        let (_, sent) = run_two_party(
            |ch| {
                let mut r =
                    KosReceiver::setup(&mut ChouOrlandiSender::default(), ch, &sid, &mut rng(1))
                        .unwrap();
                r.iknp.cheat = cheat;
                let mut out = vec![Block::ZERO; choices.len()];
                r.receive_random(ch, &choices, &mut out)
            },
            |ch| {
                let mut s =
                    KosSender::setup(&mut ChouOrlandiReceiver::default(), ch, &sid, &mut rng(2))
                        .unwrap();
                let mut out = vec![[Block::ZERO; 2]; 1000];
                let r = s.send_random(ch, &mut out);
                if r.is_err() {
                    assert!(out.iter().all(|p| *p == [Block::ZERO; 2]), "outputs wiped");
                }
                r
            },
        );
        sent
    }

    #[test]
    fn a_receiver_with_inconsistent_columns_is_caught() {
        // Choice bit 17 differs between the first 64 columns and the rest, and x is computed from
        // the unflipped choices: the check passes only if those 64 bits of s are all 0
        // (probability 2^-64; with x from the flipped bit, only if the other 64 are).
        let e = run(Some((17, 64))).unwrap_err();
        assert!(
            matches!(&e, Error::CheckFailed(m) if m.contains("correlation check")),
            "{e}"
        );
        run(None).unwrap();
    }

    #[test]
    fn a_receiver_whose_x_does_not_match_its_columns_is_caught() {
        // Choice bit 17 is flipped in every column (consistent columns), but x is computed from
        // the unflipped choice.
        let e = run(Some((17, 128))).unwrap_err();
        assert!(
            matches!(&e, Error::CheckFailed(m) if m.contains("correlation check")),
            "{e}"
        );
    }

    /// Two batches (of 300 and 5 OTs) with a sender whose share of every challenge seed is
    /// `fixed` (or its own), against a receiver seeded with `receiver_seed`: the χ seeds of
    /// both parties per batch, and whether both batches gave correct OTs.
    fn chi_seeds(fixed: Option<Block>, receiver_seed: u64) -> Vec<(Block, Block)> {
        let sid = [9u8; 32];
        let sizes = [300usize, 5];
        let (recv, send) = run_two_party(
            |ch| {
                let mut r = KosReceiver::setup(
                    &mut ChouOrlandiSender::default(),
                    ch,
                    &sid,
                    &mut rng(receiver_seed),
                )
                .unwrap();
                sizes
                    .iter()
                    .map(|&n| {
                        let c: Vec<bool> = (0..n).map(|i| i % 2 == 1).collect();
                        let mut out = vec![Block::ZERO; n];
                        r.receive_random(ch, &c, &mut out).unwrap();
                        (r.last_chi_seed.unwrap(), c, out)
                    })
                    .collect::<Vec<_>>()
            },
            |ch| {
                let mut s =
                    KosSender::setup(&mut ChouOrlandiReceiver::default(), ch, &sid, &mut rng(2))
                        .unwrap();
                s.fixed_seed = fixed;
                sizes
                    .iter()
                    .map(|&n| {
                        let mut out = vec![[Block::ZERO; 2]; n];
                        s.send_random(ch, &mut out).unwrap();
                        (s.last_chi_seed.unwrap(), out)
                    })
                    .collect::<Vec<_>>()
            },
        );
        recv.into_iter()
            .zip(send)
            .map(|((rs, c, got), (ss, pairs))| {
                for (i, (g, p)) in got.iter().zip(&pairs).enumerate() {
                    assert_eq!(*g, p[usize::from(c[i])], "OT {i}");
                    assert_ne!(*g, p[usize::from(!c[i])], "OT {i}");
                }
                (rs, ss)
            })
            .collect()
    }

    #[test]
    fn a_sender_with_a_fixed_seed_share_cannot_fix_the_challenge() {
        let a = chi_seeds(Some(Block::ZERO), 1);
        let b = chi_seeds(Some(Block::ZERO), 5);
        for (batch, ((ra, sa), (rb, sb))) in a.iter().zip(&b).enumerate() {
            // Both parties derive the same seed...
            assert_eq!((ra, rb), (sa, sb), "batch {batch}");
            // ...which the receiver's share changes, whatever the sender sent.
            assert_ne!(ra, rb, "batch {batch}");
        }
        // And batches of one session get distinct seeds.
        assert_ne!(a[0].0, a[1].0);
        // An honest sender: the seeds agree too.
        for (r, s) in chi_seeds(None, 1) {
            assert_eq!(r, s);
        }
    }

    #[test]
    fn chi_is_the_aes_ctr_stream_of_its_seed_at_any_offset() {
        let seed = Block(0x1234_5678);
        let mut stream = vec![Block::ZERO; 5000];
        AesPrg::new(seed).fill_blocks(&mut stream);
        let aes = FixedKeyAes::new(seed);
        for (start, n) in [(0usize, 5000usize), (1, 7), (2048, 2048), (4999, 1)] {
            let mut got = vec![Block::ZERO; n];
            fill_chi(&aes, start, &mut got);
            assert_eq!(got, stream[start..start + n]);
        }
    }
}
