//! `ecdh_nist`: Diffie-Hellman-based PSI on the NIST curves P-256, P-384 and P-521
//! (semi-honest).
//!
//! **Paper.** The DH-based protocol of Huberman, Franklin and Hogg (EC'99) and Meadows (S&P'86),
//! on the elliptic curves Pinkas, Schneider and Zohner benchmark as "DH-based ECC"
//! (*Scalable Private Set Intersection Based on OT Extension*, §3 and Tab. 5-7); the same flow
//! as `ecdh`, on standard NIST curves instead of Ristretto255.
//!
//! **Security model.** Semi-honest parties, random-oracle model (RFC 9380 hash-to-curve, SHA-2),
//! DDH on the curve of the run's κ. The receiver learns the intersection and the sender's set
//! size; the sender learns only the receiver's set size.
//!
//! **Curves** ([`LEVELS`]; PSZ14 Tab. 2 for κ = 128, DCW13 Tab. 2 for 192 and 256):
//!
//! | κ | asked | curve | RFC 9380 suite | point |
//! | --- | --- | --- | --- | --- |
//! | 128 | K-283 (PSZ14 Tab. 2) | P-256 | `P256_XMD:SHA-256_SSWU_RO_` | 33 bytes |
//! | 192 | P-384 (DCW13 Tab. 2) | P-384 | `P384_XMD:SHA-384_SSWU_RO_` | 49 bytes |
//! | 256 | P-521 (DCW13 Tab. 2) | P-521 | `P521_XMD:SHA-512_SSWU_RO_` | 67 bytes |
//!
//! Both parties must run at the same κ: the handshake compares κ, and the parameters name the
//! curve (`group`) and the hash-to-curve suite (`hash_to_group`). Other values of κ are refused
//! before connecting, naming the three levels.
//!
//! **Message flow** (after the handshake, which fixes the sizes n1 = |X| of the receiver and
//! n2 = |Y| of the sender, κ and the session id `sid`):
//!
//! ```text
//! H(x)   = hash_to_curve(x) of the curve's suite (RFC 9380 §3, random-oracle variant), with
//!          DST = "blindjoin-ecdh_nist-" ‖ suite id ‖ sid (32 bytes)
//! T(P)   = SHA-256(sid, "ecdh/tag", compress(P)) truncated to ℓ = λ + ⌈log2(n1·n2)⌉ bits (whole bytes)
//!
//! receiver (X, secret a)                          sender (Y, secret b)
//!   A_i = H(x_i)^a, in X's order   ── n1 points ──>
//!                                  <── n2 points ──  B_j = H(y_π(j))^b, π a random permutation
//!                                  <── n1 tags ────  T(A_i^b), in the order received
//!   S = { T(B_j^a) }; output { i : T(A_i^b) ∈ S }
//! ```
//!
//! Points are SEC1 compressed (0x02 or 0x03, then x). The secret scalars are uniform in 1..n
//! and wiped when dropped. A point from the peer that is not a compressed point of the curve
//! (a wrong first byte, x not below p, x off the curve, the identity) ends the run naming its
//! index in the message (`group`). The roles are the DH-PSI flow of `protocols::dh_psi` on
//! `group::NistGroup`: both parties stream their points in frames of 2^14 while a second thread
//! receives, so the two parties' scalar multiplications overlap.
//!
//! **Communication** per run: ρ·(n1 + n2) bytes of compressed points (ρ = 33, 49 or 67) plus
//! n1·⌈ℓ/8⌉ bytes of tags (and 4 bytes of framing per 2^14 elements): at n1 = n2 two points and
//! one tag per element, against the three group elements of PSZ Tab. 6.
//!
//! **Deviations from the paper.**
//! - NIST P-curves instead of PSZ14's Koblitz curves: PSZ14 Tab. 2 asks for K-283 at κ = 128,
//!   which RustCrypto does not offer; P-256 gives κ = 128 with 2κ = 256 bits (NIST SP 800-57,
//!   DCW13 Tab. 2). For κ = 192 and 256, DCW13 Tab. 2's P-384 and P-521.
//! - The sender returns the re-blinded values A_i^b hashed and truncated to ℓ bits instead of as
//!   group elements (as `ecdh`): the receiver only compares them, and ℓ bits keep the
//!   false-positive probability over all n1·n2 comparisons at most 2^-λ.
//! - Hashing to the curve is RFC 9380's `hash_to_curve` (two SSWU maps), a random oracle onto
//!   the group; PSZ14 does not say how its implementation hashes to the curve.

pub(crate) mod group;

use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{HFH99, PSI_ROLES, PSZ14};
use crate::protocols::dh_psi::{self, DhFlow};
use crate::protocols::gbf::DCW13;
use crate::{ReceiverOutput, RunOptions, SenderOutput};
use blindjoin_core::Result;
use blindjoin_core::channel::Channel;
use blindjoin_core::item::Item;
use group::NistGroup;
use p256::NistP256;
use p384::NistP384;
use p521::NistP521;
use rand::CryptoRng;

pub use crate::protocols::ecdh::{MSG_RECEIVER_POINTS, MSG_SENDER_POINTS, MSG_TAGS};

/// Protocol id in the handshake.
pub const NAME: &str = "ecdh_nist";

/// The descriptor of `ecdh_nist`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Diffie-Hellman PSI on NIST P-256, P-384 or P-521 (by κ): both sets blinded by both secret exponents",
    references: &[
        HFH99,
        Reference {
            part: "§3 and Tab. 5-7, \"DH-based ECC\"; Tab. 2 (the curve for κ = 128)",
            ..PSZ14
        },
        Reference {
            part: "Tab. 2 (the curves for κ = 192 and 256)",
            ..DCW13
        },
    ],
    security: Security::SemiHonest,
    assumptions: "DDH on NIST P-256, P-384 or P-521 (κ = 128, 192, 256), random-oracle model (RFC 9380 hash-to-curve)",
    roles: PSI_ROLES,
    kappa: &[128, 192, 256],
    params: |o| params(o.kappa),
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

/// The DH-PSI flow of `ecdh_nist`: its descriptor and message names.
static FLOW: DhFlow = DhFlow {
    protocol: &PROTOCOL,
    receiver_elements: MSG_RECEIVER_POINTS,
    sender_elements: MSG_SENDER_POINTS,
    tags: MSG_TAGS,
};

/// A security level: the curve that provides it and its hash-to-curve suite.
#[derive(Debug, PartialEq, Eq)]
pub struct Level {
    /// κ in bits.
    pub kappa: u32,
    /// The curve the papers' tables ask for at this level.
    pub asked: &'static str,
    /// The curve (FIPS 186-5 name).
    pub curve: &'static str,
    /// Bits of the curve's field (and of its order n).
    pub bits: u32,
    /// The RFC 9380 suite id of the hash to the curve.
    pub suite: &'static str,
    /// Bytes of a compressed SEC1 point: 1 + the field's bytes.
    pub point_len: usize,
}

const LEVEL_P256: Level = Level {
    kappa: 128,
    asked: "K-283",
    curve: "P-256",
    bits: 256,
    suite: "P256_XMD:SHA-256_SSWU_RO_",
    point_len: 33,
};

const LEVEL_P384: Level = Level {
    kappa: 192,
    asked: "P-384",
    curve: "P-384",
    bits: 384,
    suite: "P384_XMD:SHA-384_SSWU_RO_",
    point_len: 49,
};

const LEVEL_P521: Level = Level {
    kappa: 256,
    asked: "P-521",
    curve: "P-521",
    bits: 521,
    suite: "P521_XMD:SHA-512_SSWU_RO_",
    point_len: 67,
};

/// The levels `ecdh_nist` offers, one curve each.
pub static LEVELS: &[Level] = &[LEVEL_P256, LEVEL_P384, LEVEL_P521];

/// Runs the receiver with `items` (distinct) on `ch` on the curve of `opts.kappa`; returns the
/// indices of `items` in the intersection.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    // A κ without a curve runs into the prologue's refusal on P-256's flow.
    match opts.kappa {
        192 => dh_psi::receive::<NistGroup<NistP384>, C>(&FLOW, ch, items, opts, rng),
        256 => dh_psi::receive::<NistGroup<NistP521>, C>(&FLOW, ch, items, opts, rng),
        _ => dh_psi::receive::<NistGroup<NistP256>, C>(&FLOW, ch, items, opts, rng),
    }
}

/// Runs the sender with `items` (distinct) on `ch` on the curve of `opts.kappa`.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    match opts.kappa {
        192 => dh_psi::send::<NistGroup<NistP384>, C>(&FLOW, ch, items, opts, rng),
        256 => dh_psi::send::<NistGroup<NistP521>, C>(&FLOW, ch, items, opts, rng),
        _ => dh_psi::send::<NistGroup<NistP256>, C>(&FLOW, ch, items, opts, rng),
    }
}

/// The bytes of each message: n1 and n2 compressed points of the curve of κ and n1 tags,
/// frames of 2^14 elements; `InvalidParam` naming κ for a κ without a curve.
fn traffic(s: &Sizes) -> Result<Traffic> {
    match s.kappa {
        192 => dh_psi::traffic::<NistGroup<NistP384>>(&FLOW, s),
        256 => dh_psi::traffic::<NistGroup<NistP521>>(&FLOW, s),
        _ => dh_psi::traffic::<NistGroup<NistP256>>(&FLOW, s),
    }
}

/// The protocol parameters both sides must agree on at κ: the curve, the hash-to-curve suite
/// and the tag hash.
pub(crate) fn params(kappa: u32) -> Vec<(String, String)> {
    match LEVELS.iter().find(|l| l.kappa == kappa) {
        Some(l) => vec![
            ("group".into(), l.curve.into()),
            ("hash_to_group".into(), l.suite.into()),
            ("tag_hash".into(), "sha256".into()),
        ],
        None => vec![("group".into(), format!("none at κ = {kappa}"))],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_psz_tab2_and_dcw_tab2() {
        // PSZ14 Tab. 2: κ = 128 → K-283 (not in RustCrypto; P-256 here); DCW13 Tab. 2:
        // 192 → P-384, 256 → P-521. Each curve's order has at least 2κ bits (Pollard's rho
        // takes about 2^(bits/2) steps).
        let rows: Vec<(u32, &str, &str, u32, usize)> = LEVELS
            .iter()
            .map(|l| (l.kappa, l.asked, l.curve, l.bits, l.point_len))
            .collect();
        assert_eq!(
            rows,
            vec![
                (128, "K-283", "P-256", 256, 33),
                (192, "P-384", "P-384", 384, 49),
                (256, "P-521", "P-521", 521, 67),
            ]
        );
        for l in LEVELS {
            assert!(l.bits >= 2 * l.kappa, "{}", l.curve);
            assert_eq!(l.point_len, 1 + (l.bits as usize).div_ceil(8), "{}", l.curve);
            assert!(PROTOCOL.kappa.contains(&l.kappa));
            let p = params(l.kappa);
            assert!(p.contains(&("group".into(), l.curve.into())), "{p:?}");
            assert!(p.contains(&("hash_to_group".into(), l.suite.into())), "{p:?}");
        }
        assert_eq!(PROTOCOL.kappa.len(), LEVELS.len());
        assert!(traffic(&Sizes { kappa: 80, ..Sizes::new(10, 10) }).is_err());
    }
}
