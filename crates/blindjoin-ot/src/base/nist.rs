//! The Chou-Orlandi base OT on NIST P-384 and P-521, with 256-bit keys: the base OTs of the
//! κ = 192 and κ = 256 OT extension ([`crate::ext::high`]).
//!
//! The flow, checks and key derivation are those of the Ristretto255 protocol of the
//! [parent module](super) (CO15, semi-honest, CDH in the curve's prime-order group), with three
//! differences:
//! - the group is P-384 (κ = 192) or P-521 (κ = 256), DCW13 Tab. 2's base-OT curves for those
//!   levels, from RustCrypto's `p384` and `p521` (constant-time scalar multiplication, complete
//!   formulas); points travel as compressed SEC1 encodings (49 or 67 bytes), and a peer's point
//!   is refused unless it decodes to a point other than the identity;
//! - the key derivation H is SHA-384 (P-384) or SHA-512 (P-521) of
//!   `domain ‖ curve ‖ sid ‖ S ‖ le64(i) ‖ R_i ‖ DH` (every field of fixed length for the curve),
//!   truncated to 32 bytes: a key of 256 bits, so that the PRGs it seeds are not the weakest
//!   part at κ = 256;
//! - the receiver's points travel in one frame (the extensions ask for 256 base OTs).
//!
//! ```text
//! sender                                              receiver (choices c_i)
//!   a ← [1, n)                    ── S = a·G ──>        refuse S unless it decodes, S ≠ O
//!                                                       b_i ← [1, n); R_i = b_i·G + c_i·S
//!   refuse R_i unless it decodes,  <── R_0..R_{k-1} ──  (constant-time select)
//!   R_i ≠ O, R_i ≠ S; T = a·S
//!   k_i⁰ = H(.., i, R_i, a·R_i)                         k_i = H(.., i, R_i, b_i·S)
//!   k_i¹ = H(.., i, R_i, a·R_i − T)
//! ```

use super::{MAX_BASE_OTS, MSG_RECEIVER_POINTS, MSG_SENDER_POINT, check_count, close_on_err};
use blindjoin_core::channel::Channel;
use blindjoin_core::{Error, Result};
use p384::elliptic_curve::ff::{Field, PrimeField};
use p384::elliptic_curve::group::{Curve, Group, GroupEncoding};
use p384::elliptic_curve::subtle::{Choice, ConditionallySelectable};
use p384::elliptic_curve::{CurveArithmetic, FieldBytes};
use rand::CryptoRng;
use rayon::prelude::*;
use sha2::Digest;
use zeroize::{Zeroize, Zeroizing};

/// Bytes of one output key.
pub const WIDE_KEY_LEN: usize = 32;

/// Domain label of the key derivation.
const KDF_DOMAIN: &[u8] = b"blindjoin/ot/base/co15-nist/v1";

/// A curve of the κ = 192 / 256 base OT.
pub trait NistBaseCurve: CurveArithmetic {
    /// The curve's name, which also enters the key derivation.
    const NAME: &'static str;
    /// Bytes of a compressed SEC1 point.
    const POINT_LEN: usize;
    /// The key derivation's hash.
    type Hash: Digest + Clone + Send + Sync;
}

impl NistBaseCurve for p384::NistP384 {
    const NAME: &'static str = "P-384";
    const POINT_LEN: usize = 49;
    type Hash = sha2::Sha384;
}

impl NistBaseCurve for p521::NistP521 {
    const NAME: &'static str = "P-521";
    const POINT_LEN: usize = 67;
    type Hash = sha2::Sha512;
}

/// A uniform scalar in [1, n), by rejection sampling on the scalar's width; wiped on drop.
struct Secret<C: CurveArithmetic>(C::Scalar);

impl<C: CurveArithmetic> Drop for Secret<C> {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl<C: CurveArithmetic> Secret<C> {
    fn random(rng: &mut impl CryptoRng) -> Self {
        let mut repr = FieldBytes::<C>::default();
        let excess = repr.len() * 8 - C::Scalar::NUM_BITS as usize;
        loop {
            rng.fill_bytes(&mut repr);
            repr[0] &= 0xff >> excess;
            let k: Option<C::Scalar> = C::Scalar::from_repr(repr).into();
            if let Some(k) = k
                && !bool::from(k.is_zero())
            {
                repr.zeroize();
                return Secret(k);
            }
        }
    }
}

/// The compressed SEC1 encoding of a point.
fn encode<C: CurveArithmetic>(p: &C::ProjectivePoint) -> Vec<u8> {
    p.to_affine().to_bytes().as_ref().to_vec()
}

/// Decodes a peer's compressed point other than the identity; `Malformed` naming the element.
fn decode<C: NistBaseCurve>(
    what: &'static str,
    index: usize,
    bytes: &[u8],
) -> Result<C::ProjectivePoint> {
    let bad = || {
        Error::malformed(
            what,
            format!(
                "element {index} is not a valid {} point (compressed SEC1, not the identity)",
                C::NAME
            ),
        )
    };
    if !matches!(bytes.first(), Some(0x02 | 0x03)) {
        return Err(bad());
    }
    let mut repr = <C::AffinePoint as GroupEncoding>::Repr::default();
    if repr.as_ref().len() != bytes.len() {
        return Err(bad());
    }
    repr.as_mut().copy_from_slice(bytes);
    let point: C::AffinePoint = Option::from(C::AffinePoint::from_bytes(&repr)).ok_or_else(bad)?;
    let point: C::ProjectivePoint = point.into();
    if bool::from(point.is_identity()) {
        return Err(bad());
    }
    Ok(point)
}

/// H(sid, S, i, R_i, DH) truncated to [`WIDE_KEY_LEN`] bytes, with the prefix absorbed once.
struct Kdf<C: NistBaseCurve> {
    prefix: C::Hash,
}

impl<C: NistBaseCurve> Kdf<C> {
    fn new(sid: &[u8; 32], s: &[u8]) -> Self {
        let mut prefix = C::Hash::new();
        prefix.update(KDF_DOMAIN);
        prefix.update(C::NAME.as_bytes());
        prefix.update(sid);
        prefix.update(s);
        Kdf { prefix }
    }

    /// Wipes `dh` and its encoding.
    fn key(&self, index: usize, r: &[u8], dh: &mut C::ProjectivePoint) -> [u8; WIDE_KEY_LEN] {
        let mut enc = Zeroizing::new(encode::<C>(dh));
        *dh = C::ProjectivePoint::identity();
        let mut h = self.prefix.clone();
        h.update((index as u64).to_le_bytes());
        h.update(r);
        h.update(&enc[..]);
        enc.zeroize();
        let mut digest = h.finalize();
        let mut key = [0u8; WIDE_KEY_LEN];
        key.copy_from_slice(&digest[..WIDE_KEY_LEN]);
        digest.as_mut_slice().zeroize();
        key
    }
}

/// Runs `n` random OTs as the sender on curve `C` under session id `sid`; returns `[k_i⁰, k_i¹]`
/// for each. Errors as for [`super::BaseOtSender`]; after an error the sending half of `ch` is
/// closed.
pub fn send_random<C: NistBaseCurve, Ch: Channel + ?Sized>(
    ch: &mut Ch,
    sid: &[u8; 32],
    n: usize,
    rng: &mut impl CryptoRng,
) -> Result<Vec<[[u8; WIDE_KEY_LEN]; 2]>> {
    let result = (|| {
        check_count(n, MAX_BASE_OTS)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let a = Secret::<C>::random(rng);
        let s = C::ProjectivePoint::generator() * a.0;
        let s_bytes = encode::<C>(&s);
        ch.send(MSG_SENDER_POINT, &s_bytes)?;
        let len = C::POINT_LEN;
        let points = ch.recv(MSG_RECEIVER_POINTS, n * len)?;
        if points.len() != n * len {
            return Err(Error::malformed(
                MSG_RECEIVER_POINTS,
                format!("{} bytes, {} expected ({n} points)", points.len(), n * len),
            ));
        }
        let t = s * a.0;
        let kdf = Kdf::<C>::new(sid, &s_bytes);
        points
            .par_chunks(len)
            .enumerate()
            .map(|(i, r_bytes)| {
                let r = decode::<C>(MSG_RECEIVER_POINTS, i, r_bytes)?;
                if r_bytes == s_bytes.as_slice() {
                    return Err(Error::malformed(
                        MSG_RECEIVER_POINTS,
                        format!("element {i} is the sender's point S"),
                    ));
                }
                let mut dh0 = r * a.0;
                let mut dh1 = dh0 - t;
                Ok([kdf.key(i, r_bytes, &mut dh0), kdf.key(i, r_bytes, &mut dh1)])
            })
            .collect::<Result<Vec<_>>>()
    })();
    close_on_err(ch, result)
}

/// Runs `choices.len()` random OTs as the receiver on curve `C` under session id `sid`;
/// returns `k_i^{choices[i]}` for each. Errors as for [`super::BaseOtReceiver`]; after an
/// error the sending half of `ch` is closed.
pub fn receive_random<C: NistBaseCurve, Ch: Channel + ?Sized>(
    ch: &mut Ch,
    sid: &[u8; 32],
    choices: &[bool],
    rng: &mut impl CryptoRng,
) -> Result<Vec<[u8; WIDE_KEY_LEN]>> {
    let result = (|| {
        check_count(choices.len(), MAX_BASE_OTS)?;
        if choices.is_empty() {
            return Ok(Vec::new());
        }
        let s_bytes = ch.recv(MSG_SENDER_POINT, C::POINT_LEN)?;
        let s = decode::<C>(MSG_SENDER_POINT, 0, &s_bytes)?;
        let kdf = Kdf::<C>::new(sid, &s_bytes);
        let secrets: Vec<Secret<C>> = choices.iter().map(|_| Secret::random(rng)).collect();
        let (points, keys): (Vec<Vec<u8>>, Vec<[u8; WIDE_KEY_LEN]>) = secrets
            .par_iter()
            .zip(choices.par_iter())
            .enumerate()
            .map(|(i, (b, &c))| {
                let r0 = C::ProjectivePoint::generator() * b.0;
                let r1 = r0 + s;
                let r = C::ProjectivePoint::conditional_select(&r0, &r1, Choice::from(u8::from(c)));
                let r_bytes = encode::<C>(&r);
                let mut dh = s * b.0;
                let key = kdf.key(i, &r_bytes, &mut dh);
                (r_bytes, key)
            })
            .unzip();
        ch.send(MSG_RECEIVER_POINTS, &points.concat())?;
        Ok(keys)
    })();
    close_on_err(ch, result)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_testkit::{rng, run_two_party};

    fn round<C: NistBaseCurve>() {
        let choices: Vec<bool> = (0..37).map(|i| i % 3 == 1).collect();
        let sid = [9u8; 32];
        let (sent, got) = run_two_party(
            |ch| send_random::<C, _>(ch, &sid, choices.len(), &mut rng(1)).unwrap(),
            |ch| receive_random::<C, _>(ch, &sid, &choices, &mut rng(2)).unwrap(),
        );
        for (i, ((pair, key), &c)) in sent.iter().zip(&got).zip(&choices).enumerate() {
            assert_eq!(*key, pair[usize::from(c)], "OT {i}");
            assert_ne!(*key, pair[usize::from(!c)], "OT {i}");
        }
    }

    #[test]
    fn receiver_learns_the_key_of_its_choice() {
        round::<p384::NistP384>();
        round::<p521::NistP521>();
    }

    #[test]
    fn point_lengths_are_the_compressed_sec1_ones() {
        fn len<C: NistBaseCurve>() -> usize {
            encode::<C>(&C::ProjectivePoint::generator()).len()
        }
        assert_eq!(len::<p384::NistP384>(), p384::NistP384::POINT_LEN);
        assert_eq!(len::<p521::NistP521>(), p521::NistP521::POINT_LEN);
    }

    #[test]
    fn invalid_points_are_refused_naming_the_element() {
        let g = encode::<p384::NistP384>(&p384::ProjectivePoint::GENERATOR);
        assert!(decode::<p384::NistP384>("m", 0, &g).is_ok());
        let mut bad = g.clone();
        bad[0] = 0x04;
        let e = decode::<p384::NistP384>("m", 5, &bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("element 5") && e.contains("P-384"), "{e}");
        assert!(decode::<p384::NistP384>("m", 0, &g[..48]).is_err());
        // x = 2^384 − 1 is not below p.
        let mut big = vec![0xffu8; 49];
        big[0] = 0x02;
        assert!(decode::<p384::NistP384>("m", 0, &big).is_err());
    }
}
