//! OT extension: 1-out-of-2 IKNP with the ALSZ optimisations (semi-honest, [`iknp`]) and the
//! KOS consistency check (malicious receiver, [`kos`]), both behind the role traits
//! [`RandomOtSender`] / [`RandomOtReceiver`]; KK13 1-out-of-2^η OT ([`kk13`]) and the KKRT16
//! batched OPRF ([`kkrt`]), which share the wide-row core of `wide.rs`; and IKNP at κ = 192 and
//! 256 on that core ([`high`]: 256 columns, base OTs on P-384/P-521, AES-256 PRGs, SHA-384/512).
//!
//! **Lifecycle (typestate).** Every extension type is created only by its `setup`
//! (`IknpSender::setup(base, ch, sid, rng)`, `Kk13Sender::setup(base, eta, ch, sid, rng)`, …),
//! which checks its parameters before anything is sent, runs the base OTs with the base OT
//! passed as `base` (any [`BaseOtSender`] / [`BaseOtReceiver`] from `crate::base`, so tests and
//! callers inject the one they want) and returns the ready extension. There is no other
//! constructor, so a send or receive before setup is a compile error, not a run-time one. The
//! base OT is used only during setup; the extension types are not generic over it. Each type
//! wipes its correlation Δ, its PRG keys and its buffers of secret rows when dropped (it
//! implements `zeroize::ZeroizeOnDrop`), and its `Debug` shows no secret.
//!
//! The rest of this doc is the 1-out-of-2 extension's; [`kk13`] and [`kkrt`] have their own.
//!
//! **Papers.** Ishai, Kilian, Nissim, Petrank, *Extending Oblivious Transfers Efficiently*
//! (CRYPTO 2003); Asharov, Lindell, Schneider, Zohner, *More Efficient Oblivious Transfer and
//! Extensions for Faster Secure Computation* (CCS 2013), as summarised in PSZ App. C.1-C.2;
//! Keller, Orsini, Scholl, *Actively Secure OT Extension with Optimal Overhead* (CRYPTO 2015),
//! Fig. 7 (the correlation check). Hashes: the tweakable circular-correlation-robust hash
//! `TCCR(i, x) = π(π(x) ⊕ i) ⊕ π(x)` of Guo, Katz, Wang, Yu (S&P 2020, §7.4), with π fixed-key
//! AES under a key derived from the session id.
//!
//! **Message flow** (κ = 128; the extension receiver R has choice bits r, the extension
//! sender S a random s ∈ {0,1}^κ):
//!
//! ```text
//! setup:  κ random base OTs in reversed roles: R is the base-OT sender with (k_j^0, k_j^1),
//!         S the base-OT receiver with choices s, learning k_j^{s_j}.
//! per chunk of m OTs (m a multiple of 128 after padding):
//!   R: t^j = G(k_j^0), u^j = t^j ⊕ G(k_j^1) ⊕ r          (G = AES-CTR, one stream per j)
//!   R → S: u^1..u^κ                                       (κ bits per OT: ALSZ)
//!   S: q^j = G(k_j^{s_j}) ⊕ s_j·u^j, so that row q_i = t_i ⊕ r_i·s
//!   random OT: S outputs (TCCR(i, q_i), TCCR(i, q_i ⊕ s)), R outputs TCCR(i, t_i)
//! ```
//!
//! Correlated OT (sender's messages x_i and x_i ⊕ Δ) and chosen-message OT are built on the
//! random OTs with one further message from S (PSZ App. C.1's y-values). The PRG streams continue
//! from chunk to chunk, so the value one setup returns serves any number of OTs, processed in
//! chunks of at most [`CHUNK`] OTs with memory bounded by the chunk.

pub mod base_pool;
pub mod bch;
pub mod high;
pub mod iknp;
pub mod kk13;
pub mod kkrt;
pub mod kos;
pub mod oos;
mod wide;

use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::session_block;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use zeroize::{Zeroize, Zeroizing};

/// A 1-out-of-2 random-OT extension sender: [`setup`](Self::setup) runs the base OTs once per
/// session and returns the ready sender, which then serves any number of
/// [`send_random`](Self::send_random) batches, whose OT indices and PRG streams continue from
/// batch to batch. Implemented by [`iknp::IknpSender`] and [`kos::KosSender`]; the base OT is
/// the `base` argument of `setup`.
pub trait RandomOtSender {
    /// Runs the base OTs with `base` (as their receiver) under session id `sid` and returns the
    /// set-up sender; `rng` supplies every secret of the session.
    fn setup<B: BaseOtReceiver, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self>
    where
        Self: Sized;

    /// `out.len()` random OTs: `out[i] = (x_i^0, x_i^1)`.
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        out: &mut [[Block; 2]],
    ) -> Result<()>;
}

/// The receiver of a [`RandomOtSender`]: learns `x_i^{choices[i]}`.
pub trait RandomOtReceiver {
    /// Runs the base OTs with `base` (as their sender) under session id `sid` and returns the
    /// set-up receiver; `rng` supplies every secret of the session.
    fn setup<B: BaseOtSender, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self>
    where
        Self: Sized;

    /// Random OTs: `out[i] = x_i^{choices[i]}`; `Err(InvalidParam)` if the lengths differ.
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()>;
}

/// Implements the role traits by the types' inherent functions of the same names.
macro_rules! impl_random_ot {
    ($sender:ident, $receiver:ident) => {
        impl RandomOtSender for $sender {
            fn setup<B: BaseOtReceiver, C: Channel + ?Sized>(
                base: &mut B,
                ch: &mut C,
                sid: &[u8; 32],
                rng: &mut impl CryptoRng,
            ) -> Result<Self> {
                $sender::setup(base, ch, sid, rng)
            }

            fn send_random<C: Channel + ?Sized>(
                &mut self,
                ch: &mut C,
                out: &mut [[Block; 2]],
            ) -> Result<()> {
                $sender::send_random(self, ch, out)
            }
        }

        impl RandomOtReceiver for $receiver {
            fn setup<B: BaseOtSender, C: Channel + ?Sized>(
                base: &mut B,
                ch: &mut C,
                sid: &[u8; 32],
                rng: &mut impl CryptoRng,
            ) -> Result<Self> {
                $receiver::setup(base, ch, sid, rng)
            }

            fn receive_random<C: Channel + ?Sized>(
                &mut self,
                ch: &mut C,
                choices: &[bool],
                out: &mut [Block],
            ) -> Result<()> {
                $receiver::receive_random(self, ch, choices, out)
            }
        }
    };
}

use iknp::{IknpReceiver, IknpSender};
use kos::{KosReceiver, KosSender};
impl_random_ot!(IknpSender, IknpReceiver);
impl_random_ot!(KosSender, KosReceiver);

/// OTs per chunk: 2^16, i.e. 1 MiB of `u` columns per frame.
pub const CHUNK: usize = 1 << 16;

/// κ, the number of base OTs and the width of the extension matrix's rows.
pub const KAPPA: usize = 128;

/// The fixed-key AES permutation of a session and role-independent label.
pub(crate) fn session_aes(sid: &[u8; 32], label: &str) -> FixedKeyAes {
    FixedKeyAes::new(session_block(sid, label))
}

/// Runs `n` random base OTs as their *sender* (the extension receiver's side) and seeds one PRG
/// pair (G(k_j^0), G(k_j^1)) per OT. The base-OT keys are wiped once the PRGs are keyed.
pub(crate) fn seed_prg_pairs<B: BaseOtSender, C: Channel + ?Sized>(
    base: &mut B,
    ch: &mut C,
    sid: &[u8; 32],
    n: usize,
    rng: &mut impl CryptoRng,
) -> Result<Vec<[AesPrg; 2]>> {
    let keys = Zeroizing::new(base.send_random(ch, sid, n, rng)?);
    check_base_count(keys.len(), n)?;
    Ok(keys
        .iter()
        .map(|[k0, k1]| [prg_from_key(k0), prg_from_key(k1)])
        .collect())
}

/// Runs random base OTs as their *receiver* with `choices` (the extension sender's s) and seeds
/// one PRG G(k_j^{s_j}) per OT. The base-OT keys are wiped once the PRGs are keyed.
pub(crate) fn seed_prgs<B: BaseOtReceiver, C: Channel + ?Sized>(
    base: &mut B,
    ch: &mut C,
    sid: &[u8; 32],
    choices: &[bool],
    rng: &mut impl CryptoRng,
) -> Result<Vec<AesPrg>> {
    let keys = Zeroizing::new(base.receive_random(ch, sid, choices, rng)?);
    check_base_count(keys.len(), choices.len())?;
    Ok(keys.iter().map(prg_from_key).collect())
}

/// The PRG G(k) keyed by a base-OT key (the key's copy in a block is wiped after use; the PRG
/// wipes its AES round keys when dropped).
pub(crate) fn prg_from_key(key: &[u8; 16]) -> AesPrg {
    let mut seed = Block::from_bytes(*key);
    let prg = AesPrg::new(seed);
    seed.zeroize();
    prg
}

/// Makes room for `capacity` elements in a buffer of secrets, keeping its contents: if that needs
/// a new allocation, the old one is wiped before it is freed (a plain `resize` or `reserve` would
/// free it with its contents in place). Called before a buffer is resized or appended to.
pub(crate) fn grow_wiping<T: Zeroize + Copy>(buf: &mut Vec<T>, capacity: usize) {
    if capacity > buf.capacity() {
        let mut grown = Vec::with_capacity(capacity);
        grown.extend_from_slice(buf);
        buf.zeroize();
        *buf = grown;
    }
}

/// Keeps a finished batch's row buffer, emptied, as the spare of the next batch (if it is the
/// larger of the two), so that batches reuse memory instead of page-faulting fresh
/// allocations. The kept buffer's memory is overwritten by the next batch and wiped with its
/// owner (every owner wipes its spare on drop); the other one is wiped before it is freed.
pub(crate) fn keep_spare(spare: &mut Vec<Block>, mut rows: Vec<Block>) {
    if rows.capacity() > spare.capacity() {
        std::mem::swap(spare, &mut rows);
    }
    // Empty, as the next batch expects it (its contents stay until overwritten or dropped).
    spare.clear();
    rows.zeroize();
}

/// Checks that the caller gave one output slot per OT.
pub(crate) fn check_out_len(expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(Error::InvalidParam {
            field: "out",
            reason: format!("{got} output slots for {expected} OTs"),
        });
    }
    Ok(())
}

fn check_base_count(got: usize, expected: usize) -> Result<()> {
    if got != expected {
        return Err(Error::InvalidParam {
            field: "base OT",
            reason: format!("{got} base OTs, {expected} expected"),
        });
    }
    Ok(())
}

/// Bytes of one column of the extension matrix for `m` OTs: m rounded up to 128 bits.
pub fn row_bytes(m: usize) -> usize {
    m.div_ceil(128) * 16
}

/// Packs choice bits into `row_bytes(len)` bytes, bit i at byte i/8, position i%8.
pub(crate) fn pack_bits(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; row_bytes(bits.len())];
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= u8::from(b) << (i % 8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_spare_leaves_the_larger_buffer_empty() {
        let mut spare = Vec::with_capacity(4);
        spare.extend_from_slice(&[Block(1), Block(2)]);
        let rows = vec![Block(3); 10];
        keep_spare(&mut spare, rows);
        assert!(spare.is_empty() && spare.capacity() >= 10);
        keep_spare(&mut spare, vec![Block(4); 2]);
        assert!(spare.is_empty() && spare.capacity() >= 10);
    }

    #[test]
    fn grow_wiping_keeps_the_contents_and_the_capacity_it_has() {
        let mut v: Vec<u8> = Vec::with_capacity(4);
        v.extend_from_slice(&[1, 2, 3]);
        let ptr = v.as_ptr();
        grow_wiping(&mut v, 4);
        assert_eq!((v.as_ptr(), v.as_slice()), (ptr, &[1u8, 2, 3][..]));
        grow_wiping(&mut v, 100);
        assert_eq!(v, [1, 2, 3]);
        assert!(v.capacity() >= 100);
    }

    #[test]
    fn packing_pads_to_whole_blocks() {
        assert_eq!(row_bytes(1), 16);
        assert_eq!(row_bytes(128), 16);
        assert_eq!(row_bytes(129), 32);
        let p = pack_bits(&[true, false, true, true, false, false, false, false, true]);
        assert_eq!(&p[..2], &[0b1101, 1]);
        assert_eq!(p.len(), 16);
    }
}
