//! KOS: IKNP/ALSZ random OT extension secure against a malicious receiver.
//!
//! **Paper.** Keller, Orsini, Scholl, *Actively Secure OT Extension with Optimal Overhead*,
//! CRYPTO 2015, Fig. 7. After the receiver has sent its u columns for m' = m + [`EXTRA`] OTs
//! (the extra κ + λ rounded up to whole 128-bit columns, with random choices), the sender picks
//! a random seed; both expand it into χ_1..χ_m' ∈ GF(2^128), and the receiver sends
//!
//! ```text
//! x = Σ χ_i·r_i,   t = Σ χ_i·t_i        (products in GF(2^128), r_i ∈ {0,1})
//! ```
//!
//! The sender accepts only if `t = Σ χ_i·q_i ⊕ x·s`, which holds when every row satisfies
//! q_i = t_i ⊕ r_i·s, i.e. when the receiver used one consistent choice bit per OT in all κ
//! columns. The extra OTs are discarded, so x leaks nothing about the real choices.
//!
//! **Lifecycle.** [`KosSender::setup`] / [`KosReceiver::setup`] run IKNP's setup (the κ base
//! OTs, with the base OT they are given), seed the PRG of the challenge seeds (sender) or of the
//! extra OTs' choices (receiver) from the caller's RNG, and return the ready extension; there is
//! no other constructor. Everything secret is wiped when the value is dropped.
//!
//! **Deviation.** The seed of χ is chosen by the sender after it has received all u columns
//! (instead of a coin toss): only the receiver is checked, and it is committed to u by then. The
//! random-OT outputs use the same TCCR hash as IKNP (KOS model H as a random oracle).

use super::check_out_len;
use super::iknp::{IknpReceiver, IknpSender, random_outputs};
use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::block::gf128_inner_product;
use blindjoin_core::channel::Channel;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use zeroize::{ZeroizeOnDrop, Zeroizing};

/// Extra OTs for the check: κ + λ = 168 rounded up to whole columns.
pub const EXTRA: usize = 256;

/// Name of the sender's challenge seed.
pub const MSG_SEED: &str = "the KOS challenge seed";
/// Name of the receiver's check values (x, t).
pub const MSG_PROOF: &str = "the KOS check values";

/// KOS sender (the party that checks). [`setup`](Self::setup) runs the base OTs and is the only
/// way to get one. It holds IKNP's sender (whose Δ is wiped on drop) and the PRG of the
/// challenge seeds; `Debug` shows neither.
pub struct KosSender {
    iknp: IknpSender,
    /// The PRG of the challenge seeds.
    prg: AesPrg,
}

/// KOS receiver (the party that proves consistency). [`setup`](Self::setup) runs the base OTs
/// and is the only way to get one. It holds IKNP's receiver and the PRG of the extra OTs'
/// choices, both wiped on drop; `Debug` shows neither.
pub struct KosReceiver {
    iknp: IknpReceiver,
    /// The PRG of the extra OTs' choices.
    prg: AesPrg,
}

/// Every field wipes its secrets when dropped.
impl ZeroizeOnDrop for KosSender {}

/// Every field wipes its secrets when dropped.
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

fn challenges(seed: Block, m: usize) -> Vec<Block> {
    let mut chi = vec![Block::ZERO; m];
    AesPrg::new(seed).fill_blocks(&mut chi);
    chi
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
        })
    }

    /// `out.len()` random OTs; fails with [`Error::CheckFailed`] if the receiver was
    /// inconsistent.
    pub fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        out: &mut [[Block; 2]],
    ) -> Result<()> {
        let m = out.len();
        let seed = self.prg.next_block();
        let (first, q) = self.iknp.extend(ch, m + EXTRA)?;
        ch.send(MSG_SEED, &seed.to_bytes())?;
        let proof = ch.recv(MSG_PROOF, 32)?;
        let (x, t) = match (
            Block::from_slice(proof.get(..16).unwrap_or_default()),
            Block::from_slice(proof.get(16..).unwrap_or_default()),
        ) {
            (Some(x), Some(t)) => (x, t),
            _ => {
                return Err(Error::malformed(
                    MSG_PROOF,
                    format!("{} bytes, 32 expected", proof.len()),
                ));
            }
        };
        let chi = challenges(seed, m + EXTRA);
        let s = self.iknp.delta();
        let expect = gf128_inner_product(&chi, &q) ^ x.gf128_mul(s);
        if expect != t {
            return Err(Error::CheckFailed(
                "the OT receiver's columns are inconsistent (KOS correlation check)".into(),
            ));
        }
        random_outputs(self.iknp.aes(), s, first, &q[..m], out);
        Ok(())
    }
}

impl KosReceiver {
    /// Runs the base OTs with `base` (as their sender), seeds, from `rng`, the PRG of the extra
    /// OTs' choices, and returns the ready receiver.
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
        })
    }

    /// Random OTs: `out[i] = x_i^{choices[i]}`.
    pub fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        check_out_len(choices.len(), out.len())?;
        let mut all = Zeroizing::new(choices.to_vec());
        let mut extra = Zeroizing::new([Block::ZERO; EXTRA / 128]);
        self.prg.fill_blocks(&mut extra[..]);
        all.extend((0..EXTRA).map(|j| extra[j / 128].bit(j % 128)));
        let (first, mut t) = self.iknp.extend(ch, &all)?;
        let seed_bytes = ch.recv(MSG_SEED, 16)?;
        let seed = Block::from_slice(&seed_bytes).ok_or_else(|| {
            Error::malformed(MSG_SEED, format!("{} bytes, 16 expected", seed_bytes.len()))
        })?;
        let chi = challenges(seed, all.len());
        // x = Σ χ_i·r_i with r_i a bit: the XOR of the χ_i whose choice is 1 (constant time).
        let x = chi
            .iter()
            .zip(all.iter())
            .fold(Block::ZERO, |acc, (c, &r)| acc ^ (*c & Block::mask(r)));
        let tt = gf128_inner_product(&chi, &t);
        let mut proof = x.to_bytes().to_vec();
        proof.extend_from_slice(&tt.to_bytes());
        ch.send(MSG_PROOF, &proof)?;
        let rows = &mut t[..choices.len()];
        self.iknp.aes().tccr_hash(first, rows);
        out.copy_from_slice(rows);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::base::{ChouOrlandiReceiver, ChouOrlandiSender};
    use blindjoin_testkit::{rng, run_two_party};

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
                s.send_random(ch, &mut out)
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
        assert!(matches!(e, Error::CheckFailed(_)), "{e}");
        // A receiver whose x does not match its (consistent) columns is caught as well.
        let e = run(Some((17, 128))).unwrap_err();
        assert!(matches!(e, Error::CheckFailed(_)), "{e}");
        run(None).unwrap();
    }
}
