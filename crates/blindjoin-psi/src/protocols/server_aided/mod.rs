//! Server-aided PSI: Kamara, Mohassel, Raykova, Sadeghian, "Scaling Private Set Intersection
//! to Billion-Element Sets" (FC 2014), KMRS14.
//!
//! n ≥ 2 clients and one untrusted server. The clients share a key K that the server never
//! sees, send the server their elements' labels F_K(x), and the server, which sees only
//! pseudorandom labels, intersects them and tells each client which of its labels every client
//! has. The server does no cryptography; its store is pluggable ([`store`]: in memory;
//! [`disk_store`] for label sets larger than memory; in Redis with the `redis-store` feature).
//!
//! | protocol | paper | security |
//! | --- | --- | --- |
//! | [`semi`] `kmrs_semi` | §2.1, Fig. 1 | semi-honest server (or honest server and malicious clients) |
//!
//! **Message flow** (Fig. 1; [`wire`] has the frames):
//!
//! | step | from → to | content |
//! | --- | --- | --- |
//! | 1 | P1 → every P_i | the key K (and every set size), over the direct client link |
//! | 2 | every client → server | T_i = its labels, in ascending order |
//! | 3 | server → every client | a bit vector over T_i: which labels are in every T_j |
//! | 4 | every client | the rows whose labels' bits are set |
//!
//! **What the server learns**: every client's set size |T_i|, the intersection's size, and,
//! with n > 2 clients, the size of every sub-intersection (labels are deterministic under K,
//! so it sees which labels any subset of clients share). Nothing else: the labels are PRP
//! outputs under a key it does not have. A fresh K per run keeps runs unlinkable. The clients
//! learn the intersection and every client's set size.
//!
//! **Deviations and decisions** (spec A7):
//! 1. *Key* (A7.1): P1 samples K and sends it to each client over the direct link (TLS between
//!    organisations, as the figure has it); with it, every set size, from the handshakes.
//! 2. *Result* (A7.2): a bit vector per client over its own labels, as the paper's
//!    implementation (§3.2, §4), not the set I of the figure; the clients keep the label to
//!    row map.
//! 3. *Label length* (A7.3): λ + ⌈log2 C(N, 2)⌉ bits over all N labels of the run
//!    ([`labels`]), not the paper's |S|/2^(ℓ/2) rule; both are compared in a test.
//! 4. *Order* (A7.4): labels in ascending order instead of the paper's biased shuffle; sorted
//!    labels reveal nothing beyond the set, and let the server intersect by merging.
//! 5. *F*: AES-128 on the 16-byte item (the item is a domain-separated hash of the record, so
//!    any record length is covered), as the paper's PRP; labels truncated to ℓ bits.

pub mod client;
pub mod disk_store;
pub mod kmrs_semi;
pub mod labels;
pub mod plain;
#[cfg(feature = "redis-store")]
pub mod redis_store;
pub mod server;
pub mod store;
pub mod wire;

use crate::protocol::{Count, Party, Reference, RoleSpec};

/// Kamara, Mohassel, Raykova, Sadeghian (FC 2014); `part` set by each user.
pub(crate) const KMRS14: Reference = Reference {
    tag: "KMRS14",
    authors: "Kamara, Mohassel, Raykova, Sadeghian",
    title: "Scaling Private Set Intersection to Billion-Element Sets",
    venue: "Financial Cryptography 2014",
    part: "",
};

/// The roles of a server-aided PSI.
pub(crate) const SERVER_AIDED_ROLES: &[RoleSpec] = &[
    RoleSpec {
        party: Party::Client,
        count: Count::AtLeast(2),
        learns: "the intersection of all clients' sets (as its own rows) and every set size",
    },
    RoleSpec {
        party: Party::Server,
        count: Count::One,
        learns: "every set size and the size of every sub-intersection, never an element",
    },
];
