//! `dh_ffc`: Diffie-Hellman-based PSI over finite fields (semi-honest).
//!
//! **Paper.** The DH-based protocol of Huberman, Franklin and Hogg (EC'99) and Meadows (S&P'86)
//! in the finite-field setting that Pinkas, Schneider and Zohner measure as "DH-based FFC"
//! (*Scalable Private Set Intersection Based on OT Extension*, §3, §7.1 and Tab. 5-8), with the
//! message flow of the implementation note's §7.2 (PSZ14 gives only the cost: 2n exponentiations
//! per party, 3nρ bits).
//!
//! **Security model.** Semi-honest parties, random-oracle model, DDH in the group of quadratic
//! residues modulo a safe prime. The receiver learns the intersection and the sender's set
//! size; the sender learns only the receiver's set size.
//!
//! **Groups** (`group::LEVELS`; PSZ14 Tab. 2 for κ = 80 and 128, DCW13 Tab. 2 for 192):
//!
//! | κ | asked (ρ) | group | exponent |
//! | --- | --- | --- | --- |
//! | 80 | 1024 | RFC 2409 §6.2 Second Oakley Group, 1024 bits | 160 bits |
//! | 128 | 3072 | RFC 7919 ffdhe3072 | 256 bits |
//! | 192 | 7680 | RFC 7919 ffdhe8192 (no standard group of 7680 bits; the next larger) | 384 bits |
//!
//! κ = 256 asks for 15360 bits, beyond every published standard group (RFC 3526 and RFC 7919
//! end at 8192), so `dh_ffc` refuses it and names the levels it offers. Each group is the
//! subgroup of order q = (p − 1)/2 of Z_p*, written as signed residues (`group`): an element is
//! min(y, p − y), in 1..=q, and a peer's element is in the group exactly when it is in that
//! range.
//!
//! **Message flow** (after the handshake, which fixes n1 = |X| of the receiver, n2 = |Y| of the
//! sender, κ and the session id `sid`; ρ = bytes of p):
//!
//! ```text
//! H(x)   = ±(SHA-256(sid, "dh_ffc/h2g", c, x) for c = 0, 1, … : ρ + 16 bytes) mod p, signed
//! T(e)   = SHA-256(sid, "ecdh/tag", e) truncated to ℓ = λ + ⌈log2(n1·n2)⌉ bits (whole bytes)
//!
//! receiver (X, secret a of 2κ bits)               sender (Y, secret b of 2κ bits)
//!   A_i = H(x_i)^a, in X's order   ── n1 elements ──>
//!                                  <── n2 elements ──  B_j = H(y_π(j))^b, π a random permutation
//!                                  <── n1 tags ──────  T(A_i^b), in the order received
//!   S = { T(B_j^a) }; output { i : T(A_i^b) ∈ S }
//! ```
//!
//! Every element received is checked to be in the group (1 ≤ x ≤ q, ρ bytes) before it is
//! raised to a secret exponent; one that is not ends the run naming its index. The flow, the
//! frames (2^11 to 2^13 elements, at most 2 MiB) and the threads are those of `dh_psi`, shared
//! with `ecdh`; the exponentiations run eight at a time in AVX-512 IFMA lanes
//! ([`blindjoin_modexp`]), in pieces of 64 elements on rayon's pool (`--threads`).
//!
//! **Communication:** ρ·(n1 + n2) bytes of elements plus n1·⌈ℓ/8⌉ bytes of tags (and 4 bytes of
//! framing per frame), against PSZ14 Tab. 6's 3nρ bits ([`psz_tab6_bits`]).
//!
//! **Deviations from the paper.**
//! - The re-blinded values A_i^b return hashed and truncated to ℓ bits instead of as group
//!   elements (as in `ecdh`; the implementation note's §7.2 tag length).
//! - Standard published groups instead of PSZ14's own 1024- and 3072-bit parameters, and 8192
//!   bits at κ = 192 (see the table).
//! - Signed residues instead of a Legendre-symbol or x^q membership check (same group, same
//!   DDH problem; see `group`).

pub mod group;

use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{HFH99, PSI_ROLES, PSZ14};
use crate::protocols::dh_psi::{self, DhFlow};
use crate::{ReceiverOutput, RunOptions, SenderOutput};
use blindjoin_core::Result;
use blindjoin_core::channel::Channel;
use blindjoin_core::item::Item;
use group::{FfcGroup, LEVELS};
use rand::CryptoRng;

/// Protocol id in the handshake.
pub const NAME: &str = "dh_ffc";

/// The descriptor of `dh_ffc`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Diffie-Hellman PSI over finite fields (RFC 2409/7919 safe-prime groups by κ)",
    references: &[
        HFH99,
        Reference {
            part: "§3, Tab. 2 and Tab. 5-8, \"DH-based FFC\"",
            ..PSZ14
        },
    ],
    security: Security::SemiHonest,
    assumptions: "DDH in the quadratic residues modulo a safe prime, random-oracle model",
    roles: PSI_ROLES,
    kappa: &[80, 128, 192],
    params,
    // hello ‖ hello; verdict ‖ verdict; A_i ‖ B_j; tags of A_i^b.
    flights: 4,
    flow: &[
        Message::receiver(MSG_RECEIVER_ELEMENTS),
        Message::sender(MSG_SENDER_ELEMENTS),
        Message::sender(MSG_TAGS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: two_party!(receive, send),
};

/// The DH-PSI flow of `dh_ffc`: its descriptor and message names.
static FLOW: DhFlow = DhFlow {
    protocol: &PROTOCOL,
    receiver_elements: MSG_RECEIVER_ELEMENTS,
    sender_elements: MSG_SENDER_ELEMENTS,
    tags: MSG_TAGS,
};

/// Name of the receiver's blinded elements A_i.
pub const MSG_RECEIVER_ELEMENTS: &str = "the receiver's blinded elements";
/// Name of the sender's blinded elements B_j.
pub const MSG_SENDER_ELEMENTS: &str = "the sender's blinded elements";
/// Name of the sender's tags of the re-blinded A_i^b.
pub const MSG_TAGS: &str = "the re-blinded tags";

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    dh_psi::receive::<FfcGroup, C>(&FLOW, ch, items, opts, rng)
}

/// Runs the sender with `items` (distinct) on `ch`.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    dh_psi::send::<FfcGroup, C>(&FLOW, ch, items, opts, rng)
}

/// The bytes of each message: n1 and n2 elements of ρ bytes and n1 tags.
fn traffic(s: &Sizes) -> Result<Traffic> {
    dh_psi::traffic::<FfcGroup>(&FLOW, s)
}

/// The protocol parameters both sides must agree on at the run's κ.
fn params(opts: &RunOptions) -> Vec<(String, String)> {
    let level = LEVELS.iter().find(|l| l.kappa == opts.kappa);
    vec![
        (
            "group".into(),
            level.map_or_else(|| "none".into(), |l| format!("{} ({})", l.name, l.source)),
        ),
        (
            "exponent_bits".into(),
            level.map_or(0, |l| l.exp_bits).to_string(),
        ),
        ("encoding".into(), "signed-residue".into()),
        ("hash_to_group".into(), "sha256-ctr-mod-p".into()),
        ("tag_hash".into(), "sha256".into()),
    ]
}

/// PSZ14 Tab. 6's communication of DH-based FFC PSI, 3nρ bits (n = n1 = n2, ρ the modulus
/// size of PSZ14 Tab. 2), next to which our [`Protocol::traffic`] sends 2nρ plus n tags.
pub fn psz_tab6_bits(n: u64, kappa: u32) -> Option<u64> {
    let level = LEVELS.iter().find(|l| l.kappa == kappa)?;
    Some(3 * n * u64::from(level.asked_bits))
}
