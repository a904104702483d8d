//! Both roles of the Chou-Orlandi base OT (see the module doc of [`crate::base`] for the
//! message flow and the security model).
//!
//! The sender decodes the `R_i` and computes the encodings of `a·R_i` and `a·R_i − T` with
//! [`blindjoin_ristretto::decompress_mul_pair_compress`]: eight OTs per AVX-512 IFMA instruction
//! stream on CPUs that have it, dalek point by point elsewhere, the same bytes either way.

use super::{
    BaseOtReceiver, BaseOtSender, FRAME_POINTS, KDF_DOMAIN, KEY_LEN, MAX_BASE_OTS,
    MSG_RECEIVER_POINTS, MSG_SENDER_POINT, POINT_LEN, check_count, close_on_err,
};
use blindjoin_core::channel::{BulkReader, Channel, FrameReceiver, FrameSender};
use blindjoin_core::item::{domain_hasher, update_prefixed};
use blindjoin_core::{Error, Result};
use blindjoin_ristretto::decompress_mul_pair_compress;
use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoBasepointTable, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use rand::CryptoRng;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::fmt;
use subtle::{Choice, ConditionallySelectable};
use zeroize::{Zeroize, Zeroizing};

/// OTs per unit of parallel work. One OT costs tens of microseconds, so even small batches are
/// worth spreading over rayon's pool.
const PAR_OTS: usize = 16;

/// The sender's OTs per unit of parallel work when the eight-lane engine runs: one call of it,
/// whose fixed cost per call (`T/2`, one inversion per 16 groups of 8 points) wants many points,
/// while a few hundred base OTs should still spread over rayon's pool. (Without the engine each
/// OT is a dalek scalar multiplication, and [`PAR_OTS`] applies.)
const PAR_SENDER_OTS: usize = 128;

/// The canonical encoding of the identity point (RFC 9496 §4.3.2 encodes it as all zeros).
const IDENTITY: [u8; POINT_LEN] = [0u8; POINT_LEN];

/// Sender of random base OTs with the Chou-Orlandi protocol (CO15). Holds no state: every call
/// draws a fresh secret. Create it with `ChouOrlandiSender::default()` (it is non-exhaustive so
/// that state can be added without breaking callers).
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct ChouOrlandiSender;

/// Receiver of random base OTs with the Chou-Orlandi protocol (CO15). Holds no state. Create it
/// with `ChouOrlandiReceiver::default()`.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct ChouOrlandiReceiver;

/// A secret scalar in `Z_q \ {0}`, zeroized on drop, with an opaque `Debug`.
struct SecretScalar(Scalar);

impl SecretScalar {
    fn random(rng: &mut impl CryptoRng) -> Self {
        SecretScalar(random_nonzero_scalar(rng))
    }
}

impl Drop for SecretScalar {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for SecretScalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretScalar(..)")
    }
}

/// A uniform scalar in `Z_q \ {0}` from 64 uniform bytes (bias below 2⁻²⁵⁰).
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

/// The key derivation `H(sid, S, i, R_i, P)`, with the prefix `(domain, sid, S)` absorbed once.
struct Kdf {
    prefix: Sha256,
}

impl Kdf {
    fn new(sid: &[u8; 32], s: &[u8; POINT_LEN]) -> Self {
        let mut prefix = domain_hasher(KDF_DOMAIN);
        update_prefixed(&mut prefix, sid);
        update_prefixed(&mut prefix, s);
        Kdf { prefix }
    }

    /// The key of OT `index` with receiver point `r` (its encoding) and Diffie-Hellman value
    /// `dh`. Zeroizes `dh`, its encoding and the digest.
    fn key(&self, index: usize, r: &[u8], dh: &mut RistrettoPoint) -> [u8; KEY_LEN] {
        let mut enc = dh.compress();
        dh.zeroize();
        let key = self.key_from_encoding(index, r, enc.as_bytes());
        enc.zeroize();
        key
    }

    /// The key of OT `index` with receiver point `r` and the encoding `dh` of the
    /// Diffie-Hellman value (zeroizing it is the caller's). Zeroizes the digest.
    fn key_from_encoding(&self, index: usize, r: &[u8], dh: &[u8]) -> [u8; KEY_LEN] {
        let mut h = self.prefix.clone();
        update_prefixed(&mut h, &(index as u64).to_le_bytes());
        update_prefixed(&mut h, r);
        update_prefixed(&mut h, dh);
        let mut digest: [u8; 32] = h.finalize().into();
        let mut key = [0u8; KEY_LEN];
        key.copy_from_slice(&digest[..KEY_LEN]);
        digest.zeroize();
        key
    }
}

/// Decodes a point from the peer: it must be a canonical Ristretto255 encoding of a point other
/// than the identity. `index` names the element in the error.
fn decode_peer_point(what: &'static str, index: usize, bytes: &[u8]) -> Result<RistrettoPoint> {
    let point = CompressedRistretto::from_slice(bytes)
        .ok()
        .and_then(|c| c.decompress())
        .ok_or_else(|| {
            Error::malformed(
                what,
                format!("element {index} is not a valid Ristretto255 point encoding"),
            )
        })?;
    if bytes == IDENTITY {
        return Err(Error::malformed(
            what,
            format!("element {index} is the identity point"),
        ));
    }
    Ok(point)
}

impl BaseOtSender for ChouOrlandiSender {
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        n: usize,
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[[u8; 16]; 2]>> {
        let result = send(ch, sid, n, rng);
        close_on_err(ch, result)
    }
}

impl BaseOtReceiver for ChouOrlandiReceiver {
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        choices: &[bool],
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[u8; 16]>> {
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
    // S = a·G with a fresh a.
    let a = SecretScalar::random(rng);
    let s = RistrettoPoint::mul_base(&a.0);
    let s_enc = s.compress().to_bytes();
    FrameSender::send(ch, MSG_SENDER_POINT, &s_enc)?;

    // T = a·S, then the keys of each frame of R_i as it arrives.
    let t = Zeroizing::new(s * a.0);
    let kdf = Kdf::new(sid, &s_enc);
    // Wiped if an error ends the batch; allocated once for all n pairs, so that growing it
    // leaves no copy of a key behind.
    let mut keys: Zeroizing<Vec<[[u8; KEY_LEN]; 2]>> = Zeroizing::new(Vec::with_capacity(n));
    let per_chunk = if blindjoin_ristretto::simd_available() {
        PAR_SENDER_OTS
    } else {
        PAR_OTS
    };
    let mut reader = BulkReader::new(MSG_RECEIVER_POINTS, POINT_LEN, n as u64);
    while let Some(frame) = reader.next_frame(ch)? {
        // The reader bounds the total by n, so this grows `keys` to at most n entries.
        let first = keys.len();
        keys.resize(first + frame.len() / POINT_LEN, [[0u8; KEY_LEN]; 2]);
        keys[first..]
            .par_chunks_mut(per_chunk)
            .zip(frame.par_chunks(per_chunk * POINT_LEN))
            .enumerate()
            .try_for_each(|(c, (out, points))| -> Result<()> {
                let first_index = first + c * per_chunk;
                // The R_i are public: the first one that is the identity or S (both valid
                // encodings) ends the chunk, unless an invalid encoding comes before it, which
                // the engine reports. This rejects the same first element as checking each R_i
                // in turn would.
                let special = points
                    .chunks_exact(POINT_LEN)
                    .position(|r| r == IDENTITY || r == s_enc);
                let checked = &points[..special.unwrap_or(out.len()) * POINT_LEN];
                // Capacity for every output up front, so the engine's appends never reallocate
                // and leave an unzeroized copy behind.
                let mut dh0 = Zeroizing::new(Vec::with_capacity(checked.len()));
                let mut dh1 = Zeroizing::new(Vec::with_capacity(checked.len()));
                decompress_mul_pair_compress(checked, &a.0, &t, &mut dh0, &mut dh1).map_err(
                    |j| {
                        Error::malformed(
                            MSG_RECEIVER_POINTS,
                            format!(
                                "element {} is not a valid Ristretto255 point encoding",
                                first_index + j
                            ),
                        )
                    },
                )?;
                if let Some(j) = special {
                    let index = first_index + j;
                    let what = if points[j * POINT_LEN..(j + 1) * POINT_LEN] == IDENTITY {
                        "is the identity point"
                    } else {
                        "equals the sender's point S"
                    };
                    return Err(Error::malformed(
                        MSG_RECEIVER_POINTS,
                        format!("element {index} {what}"),
                    ));
                }
                for (j, ((pair, r_enc), (e0, e1))) in out
                    .iter_mut()
                    .zip(points.chunks_exact(POINT_LEN))
                    .zip(dh0.chunks_exact(POINT_LEN).zip(dh1.chunks_exact(POINT_LEN)))
                    .enumerate()
                {
                    let index = first_index + j;
                    pair[0] = kdf.key_from_encoding(index, r_enc, e0);
                    pair[1] = kdf.key_from_encoding(index, r_enc, e1);
                }
                Ok(())
            })?;
    }
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
    let frame = FrameReceiver::recv(ch, MSG_SENDER_POINT, POINT_LEN)?;
    let s_enc: [u8; POINT_LEN] = frame.as_slice().try_into().map_err(|_| {
        Error::malformed(
            MSG_SENDER_POINT,
            format!(
                "{} bytes instead of one {POINT_LEN}-byte point",
                frame.len()
            ),
        )
    })?;
    let s = decode_peer_point(MSG_SENDER_POINT, 0, &s_enc)?;
    let s_table = RistrettoBasepointTable::create(&s);
    let kdf = Kdf::new(sid, &s_enc);

    // Wiped if an error ends the batch.
    let mut keys = Zeroizing::new(vec![[0u8; KEY_LEN]; choices.len()]);
    let mut points = Vec::with_capacity(choices.len().min(FRAME_POINTS) * POINT_LEN);
    for (f, (chunk, keys)) in choices
        .chunks(FRAME_POINTS)
        .zip(keys.chunks_mut(FRAME_POINTS))
        .enumerate()
    {
        let first = f * FRAME_POINTS;
        // The b_i are drawn in order from the caller's RNG, which need not be shareable.
        let b: Zeroizing<Vec<Scalar>> = Zeroizing::new(
            (0..chunk.len())
                .map(|_| random_nonzero_scalar(rng))
                .collect(),
        );

        // R_i = b_i·G + c_i·S, sent before the keys are derived so that the sender starts early.
        points.clear();
        points.resize(chunk.len() * POINT_LEN, 0);
        points
            .par_chunks_mut(PAR_OTS * POINT_LEN)
            .zip(b.par_chunks(PAR_OTS))
            .zip(chunk.par_chunks(PAR_OTS))
            .for_each(|((out, b), c)| {
                for ((enc, b), &c) in out.chunks_exact_mut(POINT_LEN).zip(b).zip(c) {
                    let mut r0 = RISTRETTO_BASEPOINT_TABLE * b;
                    let mut r1 = r0 + s;
                    let r = RistrettoPoint::conditional_select(&r0, &r1, Choice::from(u8::from(c)));
                    enc.copy_from_slice(r.compress().as_bytes());
                    r0.zeroize();
                    r1.zeroize();
                }
            });
        FrameSender::send(ch, MSG_RECEIVER_POINTS, &points)?;

        // k_i = H(sid, S, i, R_i, b_i·S).
        keys.par_chunks_mut(PAR_OTS)
            .zip(points.par_chunks(PAR_OTS * POINT_LEN))
            .zip(b.par_chunks(PAR_OTS))
            .enumerate()
            .for_each(|(c, ((out, encs), b))| {
                for (j, ((key, r_enc), b)) in out
                    .iter_mut()
                    .zip(encs.chunks_exact(POINT_LEN))
                    .zip(b)
                    .enumerate()
                {
                    let mut dh = &s_table * b;
                    *key = kdf.key(first + c * PAR_OTS + j, r_enc, &mut dh);
                }
            });
    }
    Ok(std::mem::take(&mut *keys))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn secret_debug_is_opaque() {
        let s = SecretScalar::random(&mut StdRng::seed_from_u64(1));
        assert_eq!(format!("{s:?}"), "SecretScalar(..)");
    }

    #[test]
    fn identity_encodes_as_zeros() {
        assert_eq!(
            RistrettoPoint::default().compress().to_bytes(),
            IDENTITY,
            "the identity check compares against its canonical encoding"
        );
    }

    #[test]
    fn keys_depend_on_every_input() {
        let mut rng = StdRng::seed_from_u64(2);
        let p = RistrettoPoint::mul_base(&random_nonzero_scalar(&mut rng));
        let r = [7u8; POINT_LEN];
        let key = |sid: [u8; 32], s: [u8; 32], i: usize, r: &[u8]| {
            Kdf::new(&sid, &s).key(i, r, &mut p.clone())
        };
        let base = key([1; 32], [2; 32], 3, &r);
        assert_ne!(base, key([9; 32], [2; 32], 3, &r));
        assert_ne!(base, key([1; 32], [9; 32], 3, &r));
        assert_ne!(base, key([1; 32], [2; 32], 4, &r));
        assert_ne!(base, key([1; 32], [2; 32], 3, &[8u8; POINT_LEN]));
        assert_eq!(base, key([1; 32], [2; 32], 3, &r));
    }

    type SenderKeys = Vec<[[u8; KEY_LEN]; 2]>;

    /// Runs the sender on `n` OTs against a stand-in receiver that sends `points` (in frames
    /// of [`FRAME_POINTS`]); returns S's encoding and the sender's result.
    fn send_against(points: &[u8], n: usize, seed: u64) -> (Vec<u8>, Result<SenderKeys>) {
        let (keys, s_enc) = blindjoin_testkit::run_two_party(
            |ch| send(ch, &[3; 32], n, &mut StdRng::seed_from_u64(seed)),
            |ch| {
                let s_enc = FrameReceiver::recv(ch, MSG_SENDER_POINT, POINT_LEN);
                for frame in points.chunks(FRAME_POINTS * POINT_LEN) {
                    // The sender may stop reading after an error.
                    if FrameSender::send(ch, MSG_RECEIVER_POINTS, frame).is_err() {
                        break;
                    }
                }
                s_enc
            },
        );
        (s_enc.unwrap_or_default(), keys)
    }

    fn random_points(n: usize, rng: &mut StdRng) -> Vec<u8> {
        (0..n)
            .flat_map(|_| {
                RistrettoPoint::mul_base(&random_nonzero_scalar(rng))
                    .compress()
                    .to_bytes()
            })
            .collect()
    }

    #[test]
    fn sender_keys_are_the_kdf_of_a_r_and_a_r_minus_t() {
        // Both keys of every OT against the formula computed point by point with dalek, over
        // two frames and several parallel chunks, with the sender's a recomputed from its seed.
        let mut rng = StdRng::seed_from_u64(4);
        let n = FRAME_POINTS + PAR_SENDER_OTS + 3;
        let points = random_points(n, &mut rng);
        let (s_enc, keys) = send_against(&points, n, 5);
        let keys = keys.unwrap_or_default();
        assert_eq!(keys.len(), n);
        let a = random_nonzero_scalar(&mut StdRng::seed_from_u64(5));
        let s = RistrettoPoint::mul_base(&a);
        assert_eq!(s_enc, s.compress().to_bytes());
        let t = s * a;
        let kdf = Kdf::new(&[3; 32], &s.compress().to_bytes());
        for (i, (pair, r_enc)) in keys.iter().zip(points.chunks_exact(POINT_LEN)).enumerate() {
            let r = decode_peer_point(MSG_RECEIVER_POINTS, i, r_enc);
            assert!(r.is_ok());
            let r = r.unwrap_or_default();
            assert_eq!(pair[0], kdf.key(i, r_enc, &mut (r * a)), "k0 of OT {i}");
            assert_eq!(pair[1], kdf.key(i, r_enc, &mut (r * a - t)), "k1 of OT {i}");
        }
    }

    #[test]
    fn sender_rejects_the_first_bad_point_whatever_its_kind() {
        let mut rng = StdRng::seed_from_u64(6);
        let n = 2 * PAR_SENDER_OTS;
        let points = random_points(n, &mut rng);
        let a = random_nonzero_scalar(&mut StdRng::seed_from_u64(7));
        let s_enc = RistrettoPoint::mul_base(&a).compress().to_bytes();
        // Not a valid encoding: the low bit of s set (a negative field element).
        let mut invalid = points[..POINT_LEN].to_vec();
        invalid[0] ^= 1;
        let kinds: [(&[u8], &str); 3] = [
            (&invalid, "is not a valid Ristretto255 point encoding"),
            (&IDENTITY, "is the identity point"),
            (&s_enc, "equals the sender's point S"),
        ];
        // Each kind first, with each other kind later in the same chunk; and in the second
        // chunk.
        for (k1, (bad1, why1)) in kinds.iter().enumerate() {
            for (k2, (bad2, _)) in kinds.iter().enumerate() {
                for (at1, at2) in [(3, 9), (PAR_SENDER_OTS + 1, PAR_SENDER_OTS + 2)] {
                    let mut input = points.clone();
                    input[at1 * POINT_LEN..(at1 + 1) * POINT_LEN].copy_from_slice(bad1);
                    input[at2 * POINT_LEN..(at2 + 1) * POINT_LEN].copy_from_slice(bad2);
                    let (_, r) = send_against(&input, n, 7);
                    let reason = match r {
                        Err(Error::Malformed { message, reason }) => {
                            assert_eq!(message, MSG_RECEIVER_POINTS);
                            reason
                        }
                        other => format!("{:?}", other.map(|k| k.len())),
                    };
                    assert_eq!(
                        reason,
                        format!("element {at1} {why1}"),
                        "kinds {k1} then {k2}"
                    );
                }
            }
        }
    }
}
