//! `kkrt16`: PSI from the KKRT16 batched OPRF and stash-less 3-way Cuckoo hashing, semi-honest.
//!
//! **Paper.** Kolesnikov, Kumaresan, Rosulek, Trieu, *Efficient Batched Oblivious PRF with
//! Applications to Private Set Intersection* (CCS 2016), the PSI protocol of §5 (Cuckoo hashing
//! on the receiver's side, one OPRF instance per bin, the sender's OPRF values under every hash
//! function); CM20 §1.2 ("PSI From Single-Point OPRF") restates it. The OPRF is
//! `blindjoin_ot::ext::kkrt`.
//!
//! **Security model.** Semi-honest receiver and sender (the OPRF's and CO15's model); the sender
//! learns n1, the receiver n2 and the intersection. Tags are ℓ = λ + ⌈log2(n1·n2)⌉ bits, so a
//! false match among the n1·n2 comparisons of each hash function has probability ≤ 2^-λ.
//!
//! **Message flow** (receiver R with n1 items x, sender S with n2 items y; h_0, h_1, h_2 are the
//! session's bin hash functions into b bins, from a seed derived from the session id):
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict                       (handshake: n1, n2, κ, λ, code width k)
//! R: Cuckoo-hash x into b = ⌈e·n1⌉ bins, 3 hash functions, no stash (e from PSWW18's fit,
//!    `hashing::kkrt_bin_factor`); bin j holds (x_i, h-index j) or is empty
//! R → S: b                                               (S checks it against its own b)
//! k base OTs (CO15, R is the base-OT sender)             (2 flights)
//! R → S: OPRF u columns, one OPRF instance per bin, input x_i ⊕ j (a random dummy if empty)
//! S: for every y and j ∈ {0,1,2}: t_{j,y} = F_{h_j(y)}(y ⊕ j) truncated to ℓ bits
//! S → R: {t_{0,y}}, {t_{1,y}}, {t_{2,y}}                 (three sets of n2 tags, each shuffled)
//! R: x_i ∈ Y iff its bin's own output, truncated, is in the set of its h-index j
//! ```
//!
//! The sender evaluates the OPRF chunk by chunk (2^16 bins) as the u columns arrive, so its work
//! overlaps the receiver's; its tags go out only when all are computed, in a random order per
//! set, so a tag's position says nothing about its item's bin.
//!
//! **Parameters.** Code width k = 128·`kkrt::code_blocks(κ, λ, 3·2^32)`: the least whole
//! number of AES blocks whose random code has Hamming distance ≥ κ between the receiver's input
//! and each of the sender's evaluations except with probability 2^-λ (512 bits at κ = 128,
//! λ = 40: the width KKRT16 uses, see `blindjoin_ot::ext::kkrt`; 384 bits at κ = 80, PSZ14
//! Tab. 2's short-term level). κ = 192 and 256 are refused: the base OTs (Ristretto255), the
//! PRGs and the code's AES keys give 128 bits. b = ⌈e(n1, λ)·n1⌉ with e from the fitted
//! stash-less bound of Pinkas, Schneider, Weinert, Wieder (Eurocrypt 2018), about 1.54 at
//! n1 = 2^20 and λ = 40 (`hashing` module doc).
//!
//! **Deviations.** (1) No stash, and 1.5n bins instead of KKRT16's 1.2n with a stash: the
//! stash-less variant saves the sender s·n2 extra tags, and the bin factor is the published
//! bound for failure ≤ 2^-λ rather than an experimental one. A Cuckoo failure ends the run with
//! an error (never silently). (2) The OPRF input is the item XOR its hash-function index j, so
//! one item placed by different functions never gives equal tags; two distinct (item, j) pairs
//! collide only if two items differ by exactly j ⊕ j', probability 2^-128 per pair for hashed
//! items. (3) The sender sends one set per hash function (as KKRT16), each compared only with
//! the receiver's items placed by that function. (4) The receiver sends b explicitly so that a
//! disagreement is reported as a parameter mismatch instead of a corrupted run.

mod receiver;
mod sender;

pub use receiver::receive;
pub use sender::send;

use crate::hashing::CuckooParams;
use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::BaseOt;
use crate::protocols::common::{CHUNK, CM20, KKRT16, PSI_ROLES, set_size, tag_len};
use blindjoin_core::channel::{framed_bytes, msg_bytes};
use blindjoin_core::handshake::Session;
use blindjoin_core::{Block, Result};
use blindjoin_ot::ext::kkrt::{self, code_blocks};
use blindjoin_ot::{base, traffic};
use serde::{Deserialize, Serialize};

/// Protocol id in the handshake.
pub const NAME: &str = "kkrt16";

/// The descriptor of `kkrt16`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "batched-OPRF PSI: one OPRF instance per bin of the receiver's 3-way Cuckoo table",
    references: &[
        Reference {
            part: "§5 (PSI from the batched OPRF)",
            ..KKRT16
        },
        Reference {
            part: "§1.2 (PSI from single-point OPRF)",
            ..CM20
        },
    ],
    security: Security::SemiHonest,
    assumptions: "OT extension on Chou-Orlandi base OTs (CDH), random-oracle hash",
    roles: PSI_ROLES,
    kappa: &[80, 128],
    params: |o| params(o.kappa, o.lambda, o.base_ot),
    // hello ‖ hello; verdict ‖ verdict; bins + base-OT S; base-OT R_i; u columns; tags.
    flights: 6,
    flow: &[
        Message::receiver(MSG_SETUP),
        Message::receiver(base::MSG_SENDER_POINT),
        Message::sender(base::MSG_RECEIVER_POINTS),
        Message::receiver(kkrt::MSG_U_COLUMNS),
        Message::sender(MSG_TAGS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: two_party!(receiver::receive, sender::send),
};

/// The bytes of each message: the bin count b, k = 128·w base OTs, the u columns of b OPRF
/// instances (k bits each), and three sets of n2 tags in frames of 2^14.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let bins = CuckooParams::kkrt(set_size(s.n_recv)?, s.lambda)?.num_bins();
    let width = code_width(s.kappa, s.lambda);
    let tag_len = tag_len(s.lambda, s.n_recv, s.n_send)?;
    let [base_s, base_r] = traffic::co15(128 * width);
    Ok(vec![
        (MSG_SETUP, msg_bytes(&Setup { bins: bins as u64 })?),
        base_s,
        base_r,
        (kkrt::MSG_U_COLUMNS, traffic::kkrt_u_columns(bins, width)),
        (MSG_TAGS, 3 * framed_bytes(s.n_send, tag_len, CHUNK)),
    ])
}

/// Hash functions of the Cuckoo table.
pub const HASHES: usize = 3;

/// Most OPRF instances (bins) per extension call: the OT layer's chunk, so the sender can
/// evaluate each chunk as it arrives.
pub(crate) const BIN_CHUNK: usize = 1 << 16;

/// Name of the receiver's bin count.
pub const MSG_SETUP: &str = "the receiver's bin count";
/// Name of the sender's three sets of OPRF tags.
pub const MSG_TAGS: &str = "the sender's OPRF tags";

/// The code width in blocks for the level κ and statistical security λ, for any set size the
/// handshake admits (3·2^32 sender evaluations).
pub(crate) fn code_width(kappa: u32, lambda: u32) -> usize {
    code_blocks(kappa, lambda, 3u64 << 32)
}

/// The handshake parameters.
pub(crate) fn params(kappa: u32, lambda: u32, base_ot: BaseOt) -> Vec<(String, String)> {
    vec![
        ("oprf".into(), "kkrt16".into()),
        ("code_bits".into(), (128 * code_width(kappa, lambda)).to_string()),
        ("cuckoo".into(), "3-hash/no-stash/psww18".into()),
        ("base_ot".into(), base_ot.name().into()),
    ]
}

/// The receiver's message after the handshake.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Setup {
    /// Bins of the Cuckoo table, i.e. OPRF instances.
    pub bins: u64,
}

/// The seed of the bin hash functions, from the session id.
pub(crate) fn hash_seed(session: &Session) -> Block {
    session.block("kkrt16/bins")
}

/// The OPRF input of an item placed (or evaluated) under hash function `j`.
pub(crate) fn oprf_input(item: &[u8; 16], j: u8) -> Block {
    Block(Block::from_bytes(*item).0 ^ u128::from(j))
}
