//! The groups of `ecdh_nist`: NIST P-256, P-384 and P-521 (FIPS 186-5, SEC 2) from RustCrypto's
//! `p256`, `p384` and `p521`, with RFC 9380 hash-to-curve and SEC1 compressed points.
//!
//! Each curve has prime order (cofactor 1), so every point on the curve but the identity
//! generates the whole group: a point from the peer is valid exactly when its encoding is a
//! compressed SEC1 point (first byte 0x02 or 0x03, then x big-endian in the field's bytes) with
//! x below p and x³ − 3x + b a square mod p. Everything else is refused before any scalar
//! multiplication, the identity included (its SEC1 encoding, the single byte 0x00, has no
//! compressed form; 0x00 followed by zeros is refused like any other first byte).
//!
//! Scalar multiplication is the crates' constant-time one (complete projective formulas,
//! signed radix-16 digits); the results of a piece of 64 points share one field inversion on
//! their way to affine coordinates (`batch_normalize`). P-256 runs through `blindjoin-p256`
//! instead: the same formulas and digits, eight points per AVX-512 IFMA instruction stream
//! where the CPU has it (one inversion per piece as well), bit-exact with `p256`.

use super::{LEVEL_P256, LEVEL_P384, LEVEL_P521, Level};
use crate::protocols::dh_psi::{DhGroup, invalid_element, par_append};
use blindjoin_core::handshake::Session;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use p256::elliptic_curve::ff::{Field, PrimeField};
use p256::elliptic_curve::group::{Curve, CurveAffine, GroupEncoding};
use p256::elliptic_curve::{CurveArithmetic, FieldBytes};
use p256::hash2curve::GroupDigest;
use rand::CryptoRng;
use std::marker::PhantomData;
use zeroize::Zeroize;

/// A curve of `ecdh_nist`: RustCrypto's curve with its RFC 9380 suite, and its level.
///
/// The two per-piece operations default to RustCrypto's arithmetic point by point; P-256
/// overrides them with `blindjoin-p256`'s batch engine, which gives the same bytes.
pub(crate) trait NistCurve: GroupDigest {
    /// The security level, curve name and suite.
    const LEVEL: &'static Level;

    /// Appends `compress(k·H(x))` for each item of `piece`, H the suite's hash-to-curve with
    /// tag `dst`.
    fn blind_piece(
        piece: &[Item],
        dst: &[u8],
        k: &<Self as CurveArithmetic>::Scalar,
        part: &mut Vec<u8>,
    ) -> Result<()> {
        let mut points = Vec::with_capacity(piece.len());
        for x in piece {
            let h = Self::hash_from_bytes(&[&x.0], &[dst]).map_err(hash_error)?;
            points.push(h * *k);
        }
        part.reserve(piece.len() * Self::LEVEL.point_len);
        encode::<Self>(&points, part);
        Ok(())
    }

    /// Appends `compress(k·P)` for each compressed point P of `piece`; `Err(i)` names the
    /// first element of the piece that is not a valid point (module doc).
    fn reblind_piece(
        piece: &[u8],
        k: &<Self as CurveArithmetic>::Scalar,
        part: &mut Vec<u8>,
    ) -> std::result::Result<(), usize> {
        let len = Self::LEVEL.point_len;
        let mut points = Vec::with_capacity(piece.len() / len);
        for (i, bytes) in piece.chunks(len).enumerate() {
            let p = decode::<Self>(bytes).ok_or(i)?;
            points.push(p * *k);
        }
        part.reserve(piece.len());
        encode::<Self>(&points, part);
        Ok(())
    }
}

/// The error of a failed hash-to-curve (the tag is refused by `expand_message`).
fn hash_error(e: impl std::fmt::Display) -> Error {
    Error::InvalidParam {
        field: "hash_to_group",
        reason: e.to_string(),
    }
}

/// P-256 through `blindjoin-p256`: eight points per AVX-512 IFMA instruction stream where the
/// CPU has it, RustCrypto's `p256` point by point elsewhere, the same bytes either way.
impl NistCurve for p256::NistP256 {
    const LEVEL: &'static Level = &LEVEL_P256;

    fn blind_piece(
        piece: &[Item],
        dst: &[u8],
        k: &p256::Scalar,
        part: &mut Vec<u8>,
    ) -> Result<()> {
        let msgs: Vec<&[u8]> = piece.iter().map(|x| &x.0[..]).collect();
        blindjoin_p256::hash_mul_compress(&msgs, dst, k, part).map_err(hash_error)
    }

    fn reblind_piece(
        piece: &[u8],
        k: &p256::Scalar,
        part: &mut Vec<u8>,
    ) -> std::result::Result<(), usize> {
        blindjoin_p256::decompress_mul_compress(piece, k, part)
    }
}

impl NistCurve for p384::NistP384 {
    const LEVEL: &'static Level = &LEVEL_P384;
}

impl NistCurve for p521::NistP521 {
    const LEVEL: &'static Level = &LEVEL_P521;
}

/// The group of curve `C` for the DH-PSI flow.
pub(crate) struct NistGroup<C>(PhantomData<fn() -> C>);

/// A secret scalar of curve `C`, uniform in 1..n, wiped when dropped.
pub(crate) struct NistKey<C: CurveArithmetic>(C::Scalar);

impl<C: CurveArithmetic> Drop for NistKey<C> {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

/// Points per unit of parallel work: enough that one inversion serves many points.
const PAR_POINTS: usize = 64;

/// The prefix of the hash-to-curve domain separation tag; the suite id and the 32-byte session
/// id follow.
const DST_PREFIX: &[u8] = b"blindjoin-ecdh_nist-";

impl<C: NistCurve> NistGroup<C> {
    /// The RFC 9380 domain separation tag of a session: "blindjoin-ecdh_nist-", the suite id
    /// (which names the curve), then the session id's 32 bytes (77 to 78 bytes in all).
    fn dst(session: &Session) -> Vec<u8> {
        let mut dst = DST_PREFIX.to_vec();
        dst.extend_from_slice(C::LEVEL.suite.as_bytes());
        dst.extend_from_slice(&session.id);
        dst
    }

    /// The reason an element from the peer is refused.
    fn invalid_reason() -> String {
        format!(
            "is not a valid {} point (compressed SEC1: 0x02 or 0x03, x below p, on the curve)",
            C::LEVEL.curve
        )
    }
}

/// Decodes a compressed SEC1 point of `C` other than the identity; `None` for anything else.
fn decode<C: CurveArithmetic>(bytes: &[u8]) -> Option<C::AffinePoint> {
    if !matches!(bytes.first(), Some(0x02 | 0x03)) {
        return None;
    }
    let mut repr = <C::AffinePoint as GroupEncoding>::Repr::default();
    if repr.as_ref().len() != bytes.len() {
        return None;
    }
    repr.as_mut().copy_from_slice(bytes);
    let point: C::AffinePoint = Option::from(C::AffinePoint::from_bytes(&repr))?;
    if bool::from(point.is_identity()) {
        return None;
    }
    Some(point)
}

/// Appends the compressed SEC1 encodings of `points` to `out`, with one field inversion for
/// all of them.
fn encode<C: CurveArithmetic>(points: &[C::ProjectivePoint], out: &mut Vec<u8>) {
    let mut affine = vec![C::AffinePoint::default(); points.len()];
    C::ProjectivePoint::batch_normalize(points, &mut affine);
    for a in &affine {
        out.extend_from_slice(a.to_bytes().as_ref());
    }
}

impl<C: NistCurve> DhGroup for NistGroup<C> {
    type Key = NistKey<C>;

    fn for_kappa(kappa: u32) -> Option<Self> {
        (kappa == C::LEVEL.kappa).then_some(NistGroup(PhantomData))
    }

    fn element_len(&self) -> usize {
        C::LEVEL.point_len
    }

    /// Rejection sampling: big-endian bytes of the scalar's width with the bits above n's top
    /// bit cleared, until the value is below n and not zero.
    fn random_key(&self, rng: &mut dyn CryptoRng) -> NistKey<C> {
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
                return NistKey(k);
            }
        }
    }

    /// `compress(k·H(x))` for each item, H the RFC 9380 hash-to-curve of the curve's suite
    /// (`_RO_`, the random-oracle variant) with the session's tag ([`NistGroup::dst`]).
    fn blind_items(
        &self,
        session: &Session,
        items: &[Item],
        key: &NistKey<C>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let dst = Self::dst(session);
        par_append(items, PAR_POINTS, out, |_, piece, part| {
            C::blind_piece(piece, &dst, &key.0, part)
        })
    }

    /// `compress(k·P)` for each compressed point P of the frame, which must all be valid
    /// (module doc).
    fn reblind_frame(
        &self,
        frame: &[u8],
        first_index: u64,
        what: &'static str,
        key: &NistKey<C>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let len = C::LEVEL.point_len;
        par_append(frame, PAR_POINTS * len, out, |k, piece, part| {
            C::reblind_piece(piece, &key.0, part).map_err(|i| {
                invalid_element(what, first_index, k * PAR_POINTS + i, &Self::invalid_reason())
            })
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_core::handshake::Role;
    use blindjoin_core::item::ITEM_LEN;
    use rand::SeedableRng;

    fn session(kappa: u32) -> Session {
        Session {
            id: [7; 32],
            role: Role::Receiver,
            receiver_size: 3,
            sender_size: 3,
            kappa,
            lambda: 40,
        }
    }

    fn items(n: usize) -> Vec<Item> {
        (0..n)
            .map(|i| {
                let mut b = [0u8; ITEM_LEN];
                b[..8].copy_from_slice(&(i as u64).to_le_bytes());
                Item(b)
            })
            .collect()
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// p of each curve's field (FIPS 186-5 / SP 800-186 §3.2.1), big-endian in the field's bytes.
    fn field_modulus(curve: &str) -> Vec<u8> {
        match curve {
            "P-256" => unhex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff"),
            "P-384" => unhex(concat!(
                "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
                "feffffff0000000000000000ffffffff"
            )),
            "P-521" => {
                let mut p = vec![0xff; 66];
                p[0] = 0x01;
                p
            }
            _ => panic!("{curve}"),
        }
    }

    /// Big-endian a + b in a's width (no carry out in the cases used).
    fn add_be(a: &[u8], b: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; a.len()];
        let mut carry = 0u16;
        for i in (0..a.len()).rev() {
            let s = u16::from(a[i]) + u16::from(b[i]) + carry;
            out[i] = s as u8;
            carry = s >> 8;
        }
        assert_eq!(carry, 0);
        out
    }

    /// The suite id and point length of the level are the crate's own, the keys commute (the
    /// flow's correctness), results are valid compressed points, and H depends on the session.
    fn blinds_and_reblinds<C: NistCurve>() {
        let level = C::LEVEL;
        assert_eq!(C::HASH_TO_CURVE_ID, level.suite.as_bytes(), "{}", level.curve);
        let g = NistGroup::<C>::for_kappa(level.kappa).unwrap();
        assert!(NistGroup::<C>::for_kappa(level.kappa + 64).is_none());
        assert_eq!(g.element_len(), level.point_len);
        assert_eq!(
            <C::AffinePoint as GroupEncoding>::Repr::default().as_ref().len(),
            level.point_len
        );
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let (a, b) = (g.random_key(&mut rng), g.random_key(&mut rng));
        let s = session(level.kappa);
        // More than one piece of 64 points.
        let xs = items(70);
        let (mut ha, mut hb) = (Vec::new(), Vec::new());
        g.blind_items(&s, &xs, &a, &mut ha).unwrap();
        g.blind_items(&s, &xs, &b, &mut hb).unwrap();
        assert_eq!(ha.len(), 70 * level.point_len);
        assert_ne!(ha, hb);
        let (mut hab, mut hba) = (Vec::new(), Vec::new());
        g.reblind_frame(&ha, 0, "a", &b, &mut hab).unwrap();
        g.reblind_frame(&hb, 0, "b", &a, &mut hba).unwrap();
        assert_eq!(hab, hba, "{}", level.curve);
        for e in hab.chunks(level.point_len) {
            assert!(decode::<C>(e).is_some());
        }
        let mut other = Vec::new();
        let mut s2 = session(level.kappa);
        s2.id[0] ^= 1;
        g.blind_items(&s2, &xs[..1], &a, &mut other).unwrap();
        assert_ne!(other, ha[..level.point_len]);
    }

    #[test]
    fn curves_blind_and_reblind_commutatively() {
        blinds_and_reblinds::<p256::NistP256>();
        blinds_and_reblinds::<p384::NistP384>();
        blinds_and_reblinds::<p521::NistP521>();
    }

    /// Every kind of invalid encoding is refused, and `reblind_frame` names the element's index
    /// in the whole message.
    fn refuses_invalid_encodings<C: NistCurve>() {
        let level = C::LEVEL;
        let len = level.point_len;
        let g = NistGroup::<C>::for_kappa(level.kappa).unwrap();
        let key = g.random_key(&mut rand::rngs::StdRng::seed_from_u64(2));
        let mut valid = Vec::new();
        g.blind_items(&session(level.kappa), &items(1), &key, &mut valid)
            .unwrap();
        assert!(decode::<C>(&valid).is_some());
        let p = field_modulus(level.curve);
        assert_eq!(p.len() + 1, len);

        let mut bad: Vec<(&str, Vec<u8>)> = Vec::new();
        // The identity: all zeros, and the 1-byte SEC1 identity.
        bad.push(("identity", vec![0; len]));
        bad.push(("identity, 1 byte", vec![0]));
        // Other first bytes with a valid x: identity, uncompressed, hybrid tags.
        for tag in [0x00, 0x01, 0x04, 0x06, 0x07, 0xff] {
            let mut e = valid.clone();
            e[0] = tag;
            bad.push(("first byte", e));
        }
        // Too short and too long.
        bad.push(("short", valid[..len - 1].to_vec()));
        bad.push(("long", [valid.as_slice(), &[0]].concat()));
        // x = p and x = 2^(8·(len − 1)) − 1: not below p.
        bad.push(("x = p", [&[0x02][..], &p].concat()));
        bad.push(("x all ones", [&[0x03][..], &vec![0xff; len - 1]].concat()));
        // x + p for a valid x, where it fits the field's bytes (P-521: 528 bits for a 521-bit p).
        if level.curve == "P-521" {
            let x_plus_p = add_be(&valid[1..], &p);
            bad.push(("x + p", [&valid[..1], &x_plus_p].concat()));
        }
        // Not on the curve: the first small x for which x³ − 3x + b is not a square.
        let off = (1u8..)
            .map(|x| {
                let mut e = vec![0u8; len];
                e[0] = 0x02;
                e[len - 1] = x;
                e
            })
            .find(|e| decode::<C>(e).is_none())
            .unwrap();
        bad.push(("not on the curve", off.clone()));
        for (why, e) in &bad {
            assert!(decode::<C>(e).is_none(), "{} {why}", level.curve);
        }

        // In a frame of 70 points starting at element 1000: element 1002 in the first piece,
        // element 1065 in the second.
        let mut frame = Vec::new();
        g.blind_items(&session(level.kappa), &items(70), &key, &mut frame)
            .unwrap();
        for (at, bytes) in [(2, off.as_slice()), (65, &vec![0u8; len])] {
            let mut f = frame.clone();
            f[at * len..(at + 1) * len].copy_from_slice(bytes);
            let e = g
                .reblind_frame(&f, 1000, "points", &key, &mut Vec::new())
                .unwrap_err();
            assert!(matches!(e, Error::Malformed { .. }), "{e}");
            let text = e.to_string();
            assert!(
                text.contains(&format!("element {} ", 1000 + at)) && text.contains(level.curve),
                "{text}"
            );
        }
        // A frame that is not a whole number of points ends in a short element.
        let e = g
            .reblind_frame(&frame[..len * 3 + 5], 0, "points", &key, &mut Vec::new())
            .unwrap_err();
        assert!(e.to_string().contains("element 3 "), "{e}");
    }

    #[test]
    fn invalid_encodings_are_refused_naming_the_element() {
        refuses_invalid_encodings::<p256::NistP256>();
        refuses_invalid_encodings::<p384::NistP384>();
        refuses_invalid_encodings::<p521::NistP521>();
    }

    #[test]
    fn keys_are_nonzero_and_below_n() {
        // The top byte is masked to the order's bit length (P-521: one bit), so rejection is
        // rare; every key decodes back to itself.
        fn check<C: NistCurve>() {
            let g = NistGroup::<C>::for_kappa(C::LEVEL.kappa).unwrap();
            let mut rng = rand::rngs::StdRng::seed_from_u64(3);
            for _ in 0..50 {
                let k = g.random_key(&mut rng);
                assert!(!bool::from(k.0.is_zero()));
                let repr = k.0.to_repr();
                let back: Option<C::Scalar> = C::Scalar::from_repr(repr).into();
                assert_eq!(back, Some(k.0));
            }
        }
        check::<p256::NistP256>();
        check::<p384::NistP384>();
        check::<p521::NistP521>();
    }
}
