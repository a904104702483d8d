//! Masny-Rindal endemic OT on Ristretto255: a base OT secure against malicious parties in the
//! random-oracle model, for the malicious-secure protocols.
//!
//! **Paper.** Masny, Rindal, *Endemic Oblivious Transfer* (CCS 2019, ePrint 2019/706): OT from a
//! two-round key agreement whose messages are uniform in a group, §5 (the receiver hides its
//! key-agreement message B in one of two group elements, r_c = B − H(r_{1−c}), the other
//! uniform), instantiated with Diffie-Hellman in a prime-order group.
//!
//! **Security model.** UC-secure endemic OT against a malicious sender or receiver, static
//! corruption, with `H_G` a programmable random oracle into the group and CDH hard in
//! Ristretto255 (MR19 Thm 5.1 with DH key agreement). "Endemic": a corrupted party may choose
//! its own output keys (the receiver its k_c, the sender its pair), which is what an OT
//! extension seeded by random base OTs needs; the honest party's keys stay uniform and, for the
//! sender's k_{1−c}, unknown to the receiver.
//!
//! **Message flow** (n random OTs under session id `sid`; G the Ristretto255 base point):
//!
//! ```text
//! sender                                          receiver (choices c_i)
//!   a ← Z_q \ {0}, A = a·G      ── A (32 bytes) ──>  refuse A unless it decodes and A ≠ O
//!                                                    b_i ← Z_q \ {0}, B_i = b_i·G
//!                                                    x_i uniform point, y_i = B_i − H_G(sid, i, x_i)
//!                                                    (r_i0, r_i1) = (y_i, x_i) if c_i = 0,
//!                                                                   (x_i, y_i) if c_i = 1
//!                                 <── r_i0 ‖ r_i1 ──  (64 bytes per OT, frames of FRAME_POINTS)
//!   refuse r_ij unless it decodes
//!   B_ij = r_ij + H_G(sid, i, r_i(1−j))
//!   k_i^j = H(sid, A, i, r_i0, r_i1, a·B_ij)          k_i = H(sid, A, i, r_i0, r_i1, b_i·A)
//! ```
//!
//! Correctness: B_ic = y_i + H_G(sid, i, x_i) = B_i, and a·B_i = b_i·A. `H_G` is Ristretto255's
//! hash to the group (`from_uniform_bytes`, RFC 9496 §4.3.4) of SHA-512 over a domain label,
//! `sid`, the index and the other element's encoding; `H` is SHA-256 over a second label and the
//! listed fields (all of fixed length), truncated to 128 bits.
//!
//! **Deviations.** The sender's message A goes first, as in the Chou-Orlandi batch shape of
//! the extensions (MR19's two messages are independent, so the order does not matter for the
//! proof); the index and session id enter both hashes, so that OTs of a batch and of two sessions
//! are independent; random OT only (the keys are the output).
//!
//! **Cost** per OT: the receiver two fixed-base multiplications' worth (B_i, and the uniform x_i
//! from 64 random bytes through the Elligator map), one hash to the group and one variable-base
//! multiplication (b_i·A); the sender two hashes to the group, two decodings and two
//! variable-base multiplications. 64 bytes from the receiver per OT, against Chou-Orlandi's 32.

use super::{
    BaseOtReceiver, BaseOtSender, FRAME_POINTS, KEY_LEN, MAX_BASE_OTS, POINT_LEN, check_count,
    close_on_err,
};
use blindjoin_core::channel::{BulkReader, Channel, FrameReceiver, FrameSender};
use blindjoin_core::{Error, Result};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use rand::CryptoRng;
use rayon::prelude::*;
use sha2::{Digest, Sha256, Sha512};
use subtle::{Choice, ConditionallySelectable};
use zeroize::{Zeroize, Zeroizing};

/// Name of the sender's message in errors.
pub const MSG_ENDEMIC_SENDER_POINT: &str = "the endemic-OT sender's point A";
/// Name of the receiver's message in errors.
pub const MSG_ENDEMIC_RECEIVER_PAIRS: &str = "the endemic-OT receiver's pairs (r_i0, r_i1)";

/// Bytes of one receiver pair on the wire.
pub const PAIR_LEN: usize = 2 * POINT_LEN;

const HASH_TO_GROUP_DOMAIN: &[u8] = b"blindjoin/ot/base/endemic/h_g/v1";
const KDF_DOMAIN: &[u8] = b"blindjoin/ot/base/endemic/kdf/v1";

/// OTs per unit of parallel work.
const PAR_OTS: usize = 16;

/// Sender of Masny-Rindal endemic OT. Holds no state; every call draws a fresh secret.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct EndemicSender;

/// Receiver of Masny-Rindal endemic OT. Holds no state.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct EndemicReceiver;

/// A uniform scalar in Z_q \ {0} from 64 uniform bytes.
fn random_nonzero_scalar(rng: &mut impl CryptoRng) -> Scalar {
    let mut wide = Zeroizing::new([0u8; 64]);
    loop {
        rng.fill_bytes(&mut wide[..]);
        let s = Scalar::from_bytes_mod_order_wide(&wide);
        if s != Scalar::ZERO {
            return s;
        }
    }
}

/// H_G(sid, i, x): the hash of the other element's encoding into the group.
fn hash_to_group(sid: &[u8; 32], index: usize, other: &[u8]) -> RistrettoPoint {
    let mut h = Sha512::new();
    h.update(HASH_TO_GROUP_DOMAIN);
    h.update(sid);
    h.update((index as u64).to_le_bytes());
    h.update(other);
    let wide: [u8; 64] = h.finalize().into();
    RistrettoPoint::from_uniform_bytes(&wide)
}

/// H(sid, A, i, r_i0 ‖ r_i1, dh): the key of OT `index`. Wipes `dh` and the digest.
fn kdf(
    sid: &[u8; 32],
    a: &[u8],
    index: usize,
    pair: &[u8],
    dh: &mut RistrettoPoint,
) -> [u8; KEY_LEN] {
    let mut enc = dh.compress().to_bytes();
    dh.zeroize();
    let mut h = Sha256::new();
    h.update(KDF_DOMAIN);
    h.update(sid);
    h.update(a);
    h.update((index as u64).to_le_bytes());
    h.update(pair);
    h.update(enc);
    enc.zeroize();
    let mut digest: [u8; 32] = h.finalize().into();
    let mut key = [0u8; KEY_LEN];
    key.copy_from_slice(&digest[..KEY_LEN]);
    digest.zeroize();
    key
}

/// Decodes a peer's point; `Malformed` naming the element if it is not a canonical encoding.
fn decode(what: &'static str, index: usize, bytes: &[u8]) -> Result<RistrettoPoint> {
    CompressedRistretto::from_slice(bytes)
        .ok()
        .and_then(|c| c.decompress())
        .ok_or_else(|| {
            Error::malformed(
                what,
                format!("element {index} is not a valid Ristretto255 point encoding"),
            )
        })
}

impl BaseOtSender for EndemicSender {
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        n: usize,
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[[u8; KEY_LEN]; 2]>> {
        let result = send(ch, sid, n, rng);
        close_on_err(ch, result)
    }
}

impl BaseOtReceiver for EndemicReceiver {
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        choices: &[bool],
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[u8; KEY_LEN]>> {
        let result = receive(ch, sid, choices, rng);
        close_on_err(ch, result)
    }
}

fn send<C: Channel + ?Sized>(
    ch: &mut C,
    sid: &[u8; 32],
    n: usize,
    rng: &mut impl CryptoRng,
) -> Result<Vec<[[u8; KEY_LEN]; 2]>> {
    check_count(n, MAX_BASE_OTS)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut a = random_nonzero_scalar(rng);
    let a_enc = RistrettoPoint::mul_base(&a).compress().to_bytes();
    FrameSender::send(ch, MSG_ENDEMIC_SENDER_POINT, &a_enc)?;

    let mut keys: Zeroizing<Vec<[[u8; KEY_LEN]; 2]>> = Zeroizing::new(Vec::with_capacity(n));
    let mut reader = BulkReader::new(MSG_ENDEMIC_RECEIVER_PAIRS, PAIR_LEN, n as u64);
    let result = (|| {
        while let Some(frame) = reader.next_frame(ch)? {
            let first = keys.len();
            keys.resize(first + frame.len() / PAIR_LEN, [[0u8; KEY_LEN]; 2]);
            keys[first..]
                .par_chunks_mut(PAR_OTS)
                .zip(frame.par_chunks(PAR_OTS * PAIR_LEN))
                .enumerate()
                .try_for_each(|(c, (out, pairs))| -> Result<()> {
                    for (j, (keys, pair)) in
                        out.iter_mut().zip(pairs.chunks_exact(PAIR_LEN)).enumerate()
                    {
                        let index = first + c * PAR_OTS + j;
                        let (e0, e1) = pair.split_at(POINT_LEN);
                        // Element numbers count points: 2i and 2i + 1 for OT i.
                        let r0 = decode(MSG_ENDEMIC_RECEIVER_PAIRS, 2 * index, e0)?;
                        let r1 = decode(MSG_ENDEMIC_RECEIVER_PAIRS, 2 * index + 1, e1)?;
                        let b0 = r0 + hash_to_group(sid, index, e1);
                        let b1 = r1 + hash_to_group(sid, index, e0);
                        let (mut d0, mut d1) = (a * b0, a * b1);
                        keys[0] = kdf(sid, &a_enc, index, pair, &mut d0);
                        keys[1] = kdf(sid, &a_enc, index, pair, &mut d1);
                    }
                    Ok(())
                })?;
        }
        Ok(())
    })();
    a.zeroize();
    result?;
    Ok(std::mem::take(&mut *keys))
}

fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    sid: &[u8; 32],
    choices: &[bool],
    rng: &mut impl CryptoRng,
) -> Result<Vec<[u8; KEY_LEN]>> {
    check_count(choices.len(), MAX_BASE_OTS)?;
    if choices.is_empty() {
        return Ok(Vec::new());
    }
    let frame = FrameReceiver::recv(ch, MSG_ENDEMIC_SENDER_POINT, POINT_LEN)?;
    if frame.len() != POINT_LEN {
        return Err(Error::malformed(
            MSG_ENDEMIC_SENDER_POINT,
            format!(
                "{} bytes instead of one {POINT_LEN}-byte point",
                frame.len()
            ),
        ));
    }
    let a = decode(MSG_ENDEMIC_SENDER_POINT, 0, &frame)?;
    if frame.iter().all(|&b| b == 0) {
        return Err(Error::malformed(
            MSG_ENDEMIC_SENDER_POINT,
            "element 0 is the identity point".to_owned(),
        ));
    }
    let mut keys = Zeroizing::new(vec![[0u8; KEY_LEN]; choices.len()]);
    let mut pairs = Vec::with_capacity(choices.len().min(FRAME_POINTS) * PAIR_LEN);
    for (f, (chunk, keys)) in choices
        .chunks(FRAME_POINTS)
        .zip(keys.chunks_mut(FRAME_POINTS))
        .enumerate()
    {
        let first = f * FRAME_POINTS;
        // Secrets and the uniform points' seeds in order from the caller's RNG.
        let b: Zeroizing<Vec<Scalar>> =
            Zeroizing::new(chunk.iter().map(|_| random_nonzero_scalar(rng)).collect());
        let mut seeds: Zeroizing<Vec<[u8; 64]>> = Zeroizing::new(vec![[0u8; 64]; chunk.len()]);
        for s in seeds.iter_mut() {
            rng.fill_bytes(s);
        }
        pairs.clear();
        pairs.resize(chunk.len() * PAIR_LEN, 0);
        pairs
            .par_chunks_mut(PAR_OTS * PAIR_LEN)
            .zip(b.par_chunks(PAR_OTS))
            .zip(seeds.par_chunks(PAR_OTS))
            .zip(chunk.par_chunks(PAR_OTS))
            .enumerate()
            .for_each(|(p, (((out, b), seeds), c))| {
                for (j, (((pair, b), seed), &c)) in out
                    .chunks_exact_mut(PAIR_LEN)
                    .zip(b)
                    .zip(seeds)
                    .zip(c)
                    .enumerate()
                {
                    let index = first + p * PAR_OTS + j;
                    let x = RistrettoPoint::from_uniform_bytes(seed)
                        .compress()
                        .to_bytes();
                    let mut big_b = RistrettoPoint::mul_base(b);
                    let mut y = (big_b - hash_to_group(sid, index, &x))
                        .compress()
                        .to_bytes();
                    big_b.zeroize();
                    // (r0, r1) = (y, x) for c = 0, (x, y) for c = 1, without a branch on c.
                    let mut r0 = y;
                    let mut r1 = x;
                    let swap = Choice::from(u8::from(c));
                    for (u, v) in r0.iter_mut().zip(r1.iter_mut()) {
                        u8::conditional_swap(u, v, swap);
                    }
                    pair[..POINT_LEN].copy_from_slice(&r0);
                    pair[POINT_LEN..].copy_from_slice(&r1);
                    y.zeroize();
                }
            });
        FrameSender::send(ch, MSG_ENDEMIC_RECEIVER_PAIRS, &pairs)?;
        keys.par_chunks_mut(PAR_OTS)
            .zip(pairs.par_chunks(PAR_OTS * PAIR_LEN))
            .zip(b.par_chunks(PAR_OTS))
            .enumerate()
            .for_each(|(p, ((out, prs), b))| {
                for (j, ((key, pair), b)) in out
                    .iter_mut()
                    .zip(prs.chunks_exact(PAIR_LEN))
                    .zip(b)
                    .enumerate()
                {
                    let index = first + p * PAR_OTS + j;
                    let mut dh = a * b;
                    *key = kdf(sid, &frame, index, pair, &mut dh);
                }
            });
    }
    Ok(std::mem::take(&mut *keys))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_testkit::{rng, run_two_party};

    fn run(choices: &[bool], sid: [u8; 32]) -> (Vec<[[u8; 16]; 2]>, Vec<[u8; 16]>) {
        let n = choices.len();
        run_two_party(
            |ch| EndemicSender.send_random(ch, &sid, n, &mut rng(1)).unwrap(),
            |ch| {
                EndemicReceiver
                    .receive_random(ch, &sid, choices, &mut rng(2))
                    .unwrap()
            },
        )
    }

    #[test]
    fn receiver_learns_the_key_of_its_choice_only() {
        // Two frames of pairs, to cross a frame boundary.
        let choices: Vec<bool> = (0..FRAME_POINTS + 37).map(|i| (i * 7) % 5 < 2).collect();
        let (pairs, keys) = run(&choices, [3; 32]);
        assert_eq!(pairs.len(), choices.len());
        for (i, ((pair, key), &c)) in pairs.iter().zip(&keys).zip(&choices).enumerate() {
            assert_eq!(*key, pair[usize::from(c)], "OT {i}");
            assert_ne!(*key, pair[usize::from(!c)], "OT {i}");
        }
        // Keys of distinct OTs differ, and another session gives other keys.
        let distinct: std::collections::HashSet<_> = pairs.iter().flat_map(|p| p.iter()).collect();
        assert_eq!(distinct.len(), 2 * pairs.len());
        let (other, _) = run(&choices[..4], [4; 32]);
        assert!(other.iter().zip(&pairs).all(|(a, b)| a != b));
    }

    #[test]
    fn bytes_equal_the_traffic_formula() {
        use blindjoin_core::channel::metered::Metered;
        for n in [1usize, FRAME_POINTS, FRAME_POINTS + 1] {
            let choices = vec![true; n];
            let (s, r) = run_two_party(
                |ch| {
                    let mut m = Metered::new(ch);
                    EndemicSender
                        .send_random(&mut m, &[0; 32], n, &mut rng(1))
                        .unwrap();
                    m.messages_sent()
                },
                |ch| {
                    let mut m = Metered::new(ch);
                    EndemicReceiver
                        .receive_random(&mut m, &[0; 32], &choices, &mut rng(2))
                        .unwrap();
                    m.messages_sent()
                },
            );
            let [(a_name, a_bytes), (p_name, p_bytes)] = crate::traffic::endemic(n);
            assert_eq!(s[a_name].bytes, a_bytes, "n = {n}");
            assert_eq!(r[p_name].bytes, p_bytes, "n = {n}");
            assert_eq!((s.len(), r.len()), (1, 1));
        }
    }

    #[test]
    fn bad_points_are_refused_naming_the_element() {
        // A receiver pair whose second point is not a canonical encoding (y ≥ p): element 2i+1.
        let sid = [1u8; 32];
        let (s, _) = run_two_party(
            |ch| EndemicSender.send_random(ch, &sid, 3, &mut rng(1)),
            |ch| {
                let _ = ch.recv(MSG_ENDEMIC_SENDER_POINT, POINT_LEN);
                let mut pairs = vec![0u8; 3 * PAIR_LEN];
                pairs[PAIR_LEN + POINT_LEN..2 * PAIR_LEN].fill(0xff);
                ch.send(MSG_ENDEMIC_RECEIVER_PAIRS, &pairs)
            },
        );
        let e = s.unwrap_err().to_string();
        assert!(e.contains("element 3 is not a valid Ristretto255"), "{e}");
        // The identity as A is refused by the receiver.
        let (_, r) = run_two_party(
            |ch| ch.send(MSG_ENDEMIC_SENDER_POINT, &[0u8; POINT_LEN]),
            |ch| EndemicReceiver.receive_random(ch, &sid, &[true], &mut rng(2)),
        );
        assert!(r.unwrap_err().to_string().contains("identity"));
        // Fewer bytes than the agreed pairs: refused.
        let (s, _) = run_two_party(
            |ch| EndemicSender.send_random(ch, &sid, 3, &mut rng(1)),
            |ch| {
                let _ = ch.recv(MSG_ENDEMIC_SENDER_POINT, POINT_LEN);
                ch.send(MSG_ENDEMIC_RECEIVER_PAIRS, &[0u8; PAIR_LEN + 5])
            },
        );
        assert!(s.is_err());
    }
}
