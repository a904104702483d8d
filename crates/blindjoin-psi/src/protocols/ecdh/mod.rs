//! `ecdh`: Diffie-Hellman-based PSI on Ristretto255 (semi-honest).
//!
//! **Paper.** The DH-based protocol of Huberman, Franklin and Hogg (EC'99) and Meadows (S&P'86),
//! as benchmarked by Pinkas, Schneider and Zohner, *Scalable Private Set Intersection Based on OT
//! Extension*, §3 ("Public-key-based PSI", DH-based PSI \[32\]) and Tables 5-7, row "DH-based ECC".
//!
//! **Security model.** Semi-honest parties, random-oracle model, DDH in Ristretto255 (κ = 128:
//! a 252-bit prime-order group). The receiver learns the intersection and the sender's set size;
//! the sender learns only the receiver's set size.
//!
//! **Message flow** (after the handshake of `blindjoin_core::handshake`, which fixes the sizes
//! n1 = |X| of the receiver and n2 = |Y| of the sender and the session id `sid`):
//!
//! ```text
//! H(x)   = Ristretto255 from_uniform_bytes(SHA-256(sid, "ecdh/h2g", 0, x) ‖ SHA-256(sid, "ecdh/h2g", 1, x))
//! T(P)   = SHA-256(sid, "ecdh/tag", compress(P)) truncated to ℓ = λ + ⌈log2(n1·n2)⌉ bits (whole bytes)
//!
//! receiver (X, secret a)                          sender (Y, secret b)
//!   A_i = H(x_i)^a, in X's order   ── n1 points ──>
//!                                  <── n2 points ──  B_j = H(y_π(j))^b, π a random permutation
//!                                  <── n1 tags ────  T(A_i^b), in the order received
//!   S = { T(B_j^a) }; output { i : T(A_i^b) ∈ S }
//! ```
//!
//! The roles are the DH-PSI flow of `protocols::dh_psi` on the group `Ristretto`: both
//! parties stream their points in frames of 2^14 while a second thread receives, so the
//! receiver blinds X while the sender blinds Y, and the receiver re-blinds Y while the sender
//! re-blinds X: two scalar multiplications of wall time per element with one thread each.
//! Points that come faster than they are re-blinded wait in the transport, not in our memory.
//!
//! **Communication** per run: 32·(n1 + n2) bytes of compressed points plus n1·⌈ℓ/8⌉ bytes of
//! tags (and 4 bytes of framing per 2^14 elements): at n1 = n2 that is two points and one tag per
//! element, below the three group elements of PSZ Tab. 6.
//!
//! **Deviations from the paper.**
//! - The sender returns the re-blinded values A_i^b hashed and truncated to ℓ bits instead of as
//!   group elements: the receiver only compares them, and ℓ bits keep the false-positive
//!   probability over all n1·n2 comparisons at most 2^-λ (PSZ §6.2 uses the same bound for its
//!   masks).
//! - Ristretto255 instead of a NIST curve: a prime-order group with canonical encodings, so a
//!   point from the peer either decodes into the group or is rejected (no cofactor or invalid-curve
//!   cases to check).
//! - Hashing to the group, decoding, scalar multiplication and encoding run eight points at a
//!   time in AVX-512 IFMA lanes with the shared secret scalar ([`blindjoin_ristretto`]), with
//!   dalek as the fallback on other CPUs; the bytes are dalek's exactly, so both kinds of CPU
//!   interoperate.

use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{HFH99, PSI_ROLES, PSZ14};
use crate::protocols::dh_psi::{self, DhFlow, DhGroup, invalid_element, par_append};
use crate::{ReceiverOutput, RunOptions, SenderOutput};
use blindjoin_core::Result;
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Session;
use blindjoin_core::item::{Item, update_prefixed};
use curve25519_dalek::scalar::Scalar;
use rand::CryptoRng;
use sha2::{Digest, Sha256};
use zeroize::Zeroize;

/// Protocol id in the handshake.
pub const NAME: &str = "ecdh";

/// The descriptor of `ecdh`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Diffie-Hellman PSI on Ristretto255: both sets blinded by both secret exponents",
    references: &[
        HFH99,
        Reference {
            part: "§3 and Tab. 5-7, \"DH-based ECC\"",
            ..PSZ14
        },
    ],
    security: Security::SemiHonest,
    assumptions: "DDH on Ristretto255, random-oracle model",
    roles: PSI_ROLES,
    kappa: &[128],
    params: |_| params(),
    // hello ‖ hello; verdict ‖ verdict; A_i ‖ B_j; tags of A_i^b.
    flights: 4,
    flow: &[
        Message::receiver(MSG_RECEIVER_POINTS),
        Message::sender(MSG_SENDER_POINTS),
        Message::sender(MSG_TAGS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: two_party!(receive, send),
};

/// The DH-PSI flow of `ecdh`: its descriptor and message names.
static FLOW: DhFlow = DhFlow {
    protocol: &PROTOCOL,
    receiver_elements: MSG_RECEIVER_POINTS,
    sender_elements: MSG_SENDER_POINTS,
    tags: MSG_TAGS,
};

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    dh_psi::receive::<Ristretto, C>(&FLOW, ch, items, opts, rng)
}

/// Runs the sender with `items` (distinct) on `ch`.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    dh_psi::send::<Ristretto, C>(&FLOW, ch, items, opts, rng)
}

/// The bytes of each message: n1 and n2 compressed points and n1 tags, frames of 2^14
/// elements (the sender answers each frame of A_i with one frame of tags).
fn traffic(s: &Sizes) -> Result<Traffic> {
    dh_psi::traffic::<Ristretto>(&FLOW, s)
}

/// Name of the receiver's blinded points A_i.
pub const MSG_RECEIVER_POINTS: &str = "the receiver's blinded points";
/// Name of the sender's blinded points B_j.
pub const MSG_SENDER_POINTS: &str = "the sender's blinded points";
/// Name of the sender's tags of the re-blinded A_i^b.
pub const MSG_TAGS: &str = "the re-blinded tags";

/// Bytes of a compressed Ristretto255 point.
pub const POINT_LEN: usize = 32;

/// The protocol parameters both sides must agree on.
pub(crate) fn params() -> Vec<(String, String)> {
    vec![
        ("group".into(), "ristretto255".into()),
        ("hash_to_group".into(), "sha256x2-elligator2".into()),
        ("tag_hash".into(), "sha256".into()),
    ]
}

/// A secret exponent k ≠ 0.
pub(crate) struct Key(Scalar);

impl Key {
    pub(crate) fn random(rng: &mut (impl CryptoRng + ?Sized)) -> Self {
        loop {
            let mut wide = [0u8; 64];
            rng.fill_bytes(&mut wide);
            let k = Scalar::from_bytes_mod_order_wide(&wide);
            wide.zeroize();
            if k != Scalar::ZERO {
                return Key(k);
            }
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

/// Points per unit of parallel work: 32 groups of the batch engine's 8 lanes, so that one
/// inversion serves many points and rayon still has work to spread.
const PAR_POINTS: usize = 256;

/// Hashes items to the group under the session's domain: the 64 uniform bytes that
/// `RistrettoPoint::from_uniform_bytes` maps to the group (RFC 9496 §4.3.4, applied twice).
pub(crate) struct GroupHash {
    base: Sha256,
}

impl GroupHash {
    pub(crate) fn new(session: &Session) -> Self {
        GroupHash {
            base: session.hasher("ecdh/h2g"),
        }
    }

    fn uniform(&self, item: &Item) -> [u8; 64] {
        let mut wide = [0u8; 64];
        for (half, out) in wide.chunks_exact_mut(32).enumerate() {
            let mut h = self.base.clone();
            h.update([half as u8]);
            update_prefixed(&mut h, &item.0);
            out.copy_from_slice(&h.finalize());
        }
        wide
    }
}

/// Ristretto255 as the group of the DH-PSI flow (κ = 128): hashing, decoding, scalar
/// multiplication and encoding through the batch engine of [`blindjoin_ristretto`], in pieces of
/// 256 points on rayon's pool.
pub(crate) struct Ristretto;

impl DhGroup for Ristretto {
    type Key = Key;

    fn for_kappa(kappa: u32) -> Option<Self> {
        (kappa == 128).then_some(Ristretto)
    }

    fn element_len(&self) -> usize {
        POINT_LEN
    }

    fn random_key(&self, rng: &mut dyn CryptoRng) -> Key {
        Key::random(rng)
    }

    /// `compress(k·H(x))` for each item.
    fn blind_items(
        &self,
        session: &Session,
        items: &[Item],
        key: &Key,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let h = GroupHash::new(session);
        par_append(items, PAR_POINTS, out, |_, piece, part| {
            let uniform: Vec<[u8; 64]> = piece.iter().map(|x| h.uniform(x)).collect();
            part.reserve(piece.len() * POINT_LEN);
            blindjoin_ristretto::hash_mul_compress(&uniform, &key.0, part);
            Ok(())
        })
    }

    /// `compress(k·P)` for each compressed point P of the frame.
    fn reblind_frame(
        &self,
        frame: &[u8],
        first_index: u64,
        what: &'static str,
        key: &Key,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        par_append(frame, PAR_POINTS * POINT_LEN, out, |k, piece, part| {
            part.reserve(piece.len());
            blindjoin_ristretto::decompress_mul_compress(piece, &key.0, part).map_err(|i| {
                invalid_element(
                    what,
                    first_index,
                    k * PAR_POINTS + i,
                    "is not a valid Ristretto255 point",
                )
            })
        })
    }
}
