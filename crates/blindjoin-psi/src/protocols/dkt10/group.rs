//! The group side of `dkt10` (see the module doc): the generators g, g', g'' and their tables,
//! hashing items to the group and to tags, decoding the peer's points and scalars, the
//! Fiat-Shamir transcripts, random scalars and batch weights.

use blindjoin_core::handshake::{Session, session_hasher};
use blindjoin_core::item::{Item, update_prefixed};
use blindjoin_core::{Error, Result};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoBasepointTable, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, VartimeMultiscalarMul};
use rand::CryptoRng;
use sha2::{Digest, Sha256, Sha512};
use std::sync::OnceLock;
use zeroize::Zeroizing;

/// Bytes of a compressed Ristretto255 point.
pub const POINT_LEN: usize = 32;
/// Bytes of an encoded scalar (little-endian, canonical: below the group order ℓ).
pub const SCALAR_LEN: usize = 32;

/// The independent generators g, g', g'' and ĝ = g' + g'', each with its table of multiples for
/// constant-time fixed-base multiplication.
pub(crate) struct Generators {
    /// g: the base of X's blinding and of the receiver's commitment A.
    pub g: RistrettoBasepointTable,
    /// g': the base of M_i's blinding, of Z = g'·k and of the sender's commitment A'.
    pub g1: RistrettoBasepointTable,
    /// g'': the base of N_i's blinding.
    pub g2: RistrettoBasepointTable,
    /// ĝ = g' + g'': the base of the receiver's per-item commitments B_i.
    pub g12: RistrettoBasepointTable,
}

/// A generator hashed to the group from its name: Elligator 2 on SHA-512 of a fixed label
/// (`RistrettoPoint::from_uniform_bytes`), so that nobody knows the discrete log of one
/// generator to another.
pub(crate) fn generator(name: &str) -> RistrettoPoint {
    let mut h = Sha512::new();
    h.update(b"blindjoin/psi/dkt10/generator/");
    h.update(name.as_bytes());
    RistrettoPoint::from_uniform_bytes(&h.finalize().into())
}

/// The generators, hashed and tabulated once per process (they do not depend on the session).
pub(crate) fn generators() -> &'static Generators {
    static GENERATORS: OnceLock<Generators> = OnceLock::new();
    GENERATORS.get_or_init(|| {
        let (g1, g2) = (generator("g1"), generator("g2"));
        Generators {
            g: RistrettoBasepointTable::create(&generator("g")),
            g1: RistrettoBasepointTable::create(&g1),
            g2: RistrettoBasepointTable::create(&g2),
            g12: RistrettoBasepointTable::create(&(g1 + g2)),
        }
    })
}

/// Hashes items to the group and to tags under the session's domain.
pub(crate) struct ItemHash {
    h2g: Sha256,
    tag: Sha256,
}

impl ItemHash {
    pub(crate) fn new(session: &Session) -> Self {
        Self::for_sid(&session.id)
    }

    /// The hashes of the session whose id is `sid`.
    pub(crate) fn for_sid(sid: &[u8; 32]) -> Self {
        ItemHash {
            h2g: session_hasher(sid, "dkt10/h2g"),
            tag: session_hasher(sid, "dkt10/tag"),
        }
    }

    /// The 64 uniform bytes of `x` that Elligator 2 maps to E(x) (RFC 9496 §4.3.4, applied
    /// twice): SHA-256(sid, "dkt10/h2g", 0, x) ‖ SHA-256(sid, "dkt10/h2g", 1, x).
    pub(crate) fn uniform(&self, x: &Item) -> [u8; 64] {
        let mut wide = [0u8; 64];
        for (half, out) in wide.chunks_exact_mut(32).enumerate() {
            let mut h = self.h2g.clone();
            h.update([half as u8]);
            update_prefixed(&mut h, &x.0);
            out.copy_from_slice(&h.finalize());
        }
        wide
    }

    /// E(x) for each item x. The protocol's hash to the group is H(x) = 2·E(x).
    ///
    /// The Elligator maps and the encoding of E(x) run eight items at a time on the batch engine
    /// (`hash_mul_compress` with k = 1); decoding that encoding costs one inverse square root,
    /// where `RistrettoPoint::from_uniform_bytes` costs two.
    pub(crate) fn half_points(&self, items: &[Item]) -> Vec<RistrettoPoint> {
        let uniform: Zeroizing<Vec<[u8; 64]>> =
            Zeroizing::new(items.iter().map(|x| self.uniform(x)).collect());
        let mut enc = Zeroizing::new(Vec::with_capacity(items.len() * POINT_LEN));
        blindjoin_ristretto::hash_mul_compress(&uniform, &Scalar::ONE, &mut enc);
        enc.chunks_exact(POINT_LEN)
            .zip(uniform.iter())
            .map(|(e, u)| {
                CompressedRistretto::from_slice(e)
                    .ok()
                    .and_then(|c| c.decompress())
                    // The engine's encodings always decode; dalek's map is the same point.
                    .unwrap_or_else(|| RistrettoPoint::from_uniform_bytes(u))
            })
            .collect()
    }

    /// Appends T(K, x) = SHA-256(sid, "dkt10/tag", enc(2·K), x), truncated to `tag_len` bytes,
    /// to `out`, given `double_k = enc(2·K)`.
    pub(crate) fn tag(&self, double_k: &[u8], x: &Item, tag_len: usize, out: &mut Vec<u8>) {
        let mut h = self.tag.clone();
        h.update(double_k);
        update_prefixed(&mut h, &x.0);
        out.extend_from_slice(&h.finalize()[..tag_len]);
    }
}

/// A uniformly random scalar (64 random bytes reduced modulo ℓ).
pub(crate) fn random_scalar(rng: &mut (impl CryptoRng + ?Sized)) -> Scalar {
    let mut wide = Zeroizing::new([0u8; 64]);
    rng.fill_bytes(&mut wide[..]);
    Scalar::from_bytes_mod_order_wide(&wide)
}

/// A uniformly random nonzero scalar, wiped when dropped.
pub(crate) fn random_key(rng: &mut (impl CryptoRng + ?Sized)) -> Zeroizing<Scalar> {
    loop {
        let k = Zeroizing::new(random_scalar(rng));
        if *k != Scalar::ZERO {
            return k;
        }
    }
}

/// `count` batch-verification weights, uniform in [0, 2^128).
pub(crate) fn random_weights(rng: &mut (impl CryptoRng + ?Sized), count: usize) -> Vec<Scalar> {
    let mut bytes = vec![0u8; 16 * count];
    rng.fill_bytes(&mut bytes);
    bytes
        .chunks_exact(16)
        .map(|b| {
            let mut w = [0u8; 16];
            w.copy_from_slice(b);
            Scalar::from(u128::from_le_bytes(w))
        })
        .collect()
}

/// Σ w_i·P_i, in variable time: the points are public, the weights are used once.
pub(crate) fn weighted_sum(weights: &[Scalar], points: &[RistrettoPoint]) -> RistrettoPoint {
    if points.is_empty() {
        return RistrettoPoint::identity();
    }
    RistrettoPoint::vartime_multiscalar_mul(weights, points)
}

/// Decodes the point at `bytes` (32 bytes; canonical encodings only), element `index` of
/// message `what`; `Malformed` naming the element otherwise.
pub(crate) fn decode_point(bytes: &[u8], what: &'static str, index: u64) -> Result<RistrettoPoint> {
    CompressedRistretto::from_slice(bytes)
        .ok()
        .and_then(|c| c.decompress())
        .ok_or_else(|| {
            Error::malformed(
                what,
                format!("element {index} is not a valid Ristretto255 point"),
            )
        })
}

/// Decodes the scalar at `bytes` (32 bytes, canonical: below ℓ), element `index` of message
/// `what`; `Malformed` naming the element otherwise.
pub(crate) fn decode_scalar(bytes: &[u8], what: &'static str, index: u64) -> Result<Scalar> {
    let malformed = || {
        Error::malformed(
            what,
            format!("element {index} is not a canonical scalar modulo the group order"),
        )
    };
    let b: [u8; SCALAR_LEN] = bytes.try_into().map_err(|_| malformed())?;
    Option::from(Scalar::from_canonical_bytes(b)).ok_or_else(malformed)
}

/// A Fiat-Shamir transcript: SHA-512 of a label, the session id and the messages, in order.
/// Every message has a length the handshake fixed, so their concatenation is unambiguous.
pub(crate) struct Transcript(Sha512);

impl Transcript {
    pub(crate) fn new(label: &str, sid: &[u8; 32]) -> Self {
        let mut h = Sha512::new();
        h.update((label.len() as u64).to_le_bytes());
        h.update(label.as_bytes());
        h.update(sid);
        Transcript(h)
    }

    pub(crate) fn absorb(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub(crate) fn digest(self) -> [u8; 64] {
        self.0.finalize().into()
    }
}

/// The challenge of a transcript's digest: the digest reduced modulo ℓ.
pub(crate) fn challenge(digest: &[u8; 64]) -> Scalar {
    Scalar::from_bytes_mod_order_wide(digest)
}

/// Label of the receiver's proof's transcript (its challenge e).
pub(crate) const RECEIVER_PROOF: &str = "blindjoin/psi/dkt10/receiver-proof";
/// Label of the transcript of the sender's messages Z ‖ A' ‖ (M'_i ‖ A'_i).
pub(crate) const SENDER_MESSAGES: &str = "blindjoin/psi/dkt10/sender-messages";
/// Label of the sender's proof's challenge c.
pub(crate) const SENDER_PROOF: &str = "blindjoin/psi/dkt10/sender-proof";

/// The sender's challenge c = SHA-512(label, sid, the digest of the receiver's transcript, the
/// digest of the sender's messages) mod ℓ: it binds the bases M_i through the receiver's
/// transcript.
pub(crate) fn sender_challenge(
    sid: &[u8; 32],
    receiver_digest: &[u8; 64],
    sender_digest: &[u8; 64],
) -> Scalar {
    let mut t = Transcript::new(SENDER_PROOF, sid);
    t.absorb(receiver_digest);
    t.absorb(sender_digest);
    challenge(&t.digest())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn half_points_are_elligator_of_the_uniform_bytes() {
        let h = ItemHash::for_sid(&[7; 32]);
        let items: Vec<Item> = (0..20u8).map(|i| Item([i; 16])).collect();
        let points = h.half_points(&items);
        assert_eq!(points.len(), items.len());
        for (x, p) in items.iter().zip(&points) {
            assert_eq!(*p, RistrettoPoint::from_uniform_bytes(&h.uniform(x)));
        }
        // Another session, other points.
        let other = ItemHash::for_sid(&[8; 32]).half_points(&items[..1]);
        assert_ne!(other[0], points[0]);
    }

    #[test]
    fn generators_are_distinct_and_tabulated() {
        let g = generators();
        let (a, b, c) = (g.g.basepoint(), g.g1.basepoint(), g.g2.basepoint());
        assert!(a != b && b != c && a != c);
        assert_eq!(g.g12.basepoint(), b + c);
        assert_eq!(a, generator("g"));
        let k = Scalar::from(12345u64);
        assert_eq!(&g.g1 * &k, b * k);
    }

    #[test]
    fn decoding_refuses_non_canonical_encodings() {
        let p = generator("g").compress();
        assert!(decode_point(p.as_bytes(), "m", 0).is_ok());
        let mut neg = p.to_bytes();
        neg[0] |= 1;
        let e = decode_point(&neg, "m", 9).unwrap_err();
        assert!(e.to_string().contains("element 9"), "{e}");
        assert!(decode_point(&[0u8; 31], "m", 0).is_err());
        assert!(decode_scalar(Scalar::ONE.as_bytes(), "m", 0).is_ok());
        assert!(decode_scalar(&[0xff; 32], "m", 3).is_err());
        assert!(decode_scalar(&[0u8; 33], "m", 3).is_err());
    }
}
