//! Server-aided PSI: Kamara, Mohassel, Raykova, Sadeghian, "Scaling Private Set Intersection
//! to Billion-Element Sets" (FC 2014), KMRS14.
//!
//! n ≥ 2 clients and one untrusted server. The clients share a key K that the server never
//! sees, send the server their elements' labels F_K(x), and the server, which sees only
//! pseudorandom labels, intersects them and tells each client which of its labels every client
//! has. For `kmrs_semi` and `kmrs_mal` the server does no cryptography; its store is pluggable
//! ([`store`]: in memory; [`disk_store`] for label sets larger than memory; in Redis with the
//! `redis-store` feature). `kmrs_fair` adds a commitment and a check of each client's labels
//! (two clients); `kmrs_size` has the server compute a keyed relabelling instead of the
//! intersection, so it needs no store (two clients; KMRS14 §3.2: it cannot run on Redis).
//! [`external`] runs a `kmrs_semi` client whose labels are sorted on disk, for sets larger than
//! its memory.
//!
//! | protocol | paper | security |
//! | --- | --- | --- |
//! | [`kmrs_semi`] | §2.1, Fig. 1 | semi-honest server (or honest server and malicious clients, Thm. 1) |
//! | [`kmrs_mal`] | §2.2, Fig. 2 | malicious server, caught but with probability (1/t)^(λ−1) (Thm. 2), or covert; or honest server and malicious clients (Thm. 3) |
//! | [`kmrs_fair`] | §2.3, Fig. 3 | as `kmrs_mal`, and fair against one malicious client with an honest server: both clients learn the result or neither (Thm. 4, 5) |
//! | [`kmrs_size`] | §2.4, Fig. 4 | malicious server that never learns the intersection's size (Thm. 6), or honest server and one malicious client (Thm. 7); server-aided PET with one element each |
//!
//! The message flows and deviations of `kmrs_fair` and `kmrs_size` are in their modules; the
//! tables below are those of `kmrs_semi` and `kmrs_mal`.
//!
//! **Message flow of `kmrs_semi`** (Fig. 1; [`wire`] has the frames):
//!
//! | step | from → to | content |
//! | --- | --- | --- |
//! | 1 | P1 → every P_i | the key K (and every set size), over the direct client link |
//! | 2 | every client → server | T_i = its labels, in ascending order |
//! | 3 | server → every client | a bit vector over T_i: which labels are in every T_j |
//! | 4 | every client | the rows whose labels' bits are set |
//!
//! **Message flow of `kmrs_mal`** (Fig. 2, with KMRS's λ = `copies` and t = `dummies`):
//!
//! | step | from → to | content |
//! | --- | --- | --- |
//! | 1-2 | none | the dummy sets: D_A of t dummies for every set A of clients, derived from K (see step 3); D0 = D_{all n} |
//! | 3 | P1 → every P_i | a hash commitment to P1's key share r_1 |
//! | 3 | every P_i → P1 | its party index and key share r_i |
//! | 3 | P1 → every P_i | r_1, …, r_n (P_i checks r_1 against the commitment, and its own r_i) and every set size; K = H(run, r_1, …, r_n) |
//! | 4 | every client → server | T_i = the labels of λ copies of each element and of D_A for every A that holds i (D0 and D_i for n = 2), ascending, and a key check H'(K) |
//! | 5 | server → every client | a bit vector over T_i |
//! | 6 | every client | aborts with "the server cheated" unless all D0 bits are set, no other dummy bit is set and each element's λ bits are equal |
//! | 7 | every client | the rows whose λ bits are set |
//!
//! **What the server learns** (`kmrs_semi`, `kmrs_mal`; `kmrs_fair` the same for two clients;
//! `kmrs_size` only party 1's set size): every client's set size |T_i| (for `kmrs_mal` λ|S_i| +
//! 2^(n−1)·t, so |S_i|), the intersection's size, and, with n > 2 clients, the size of every
//! sub-intersection (labels are deterministic under K, so it sees which labels any subset of
//! clients share). Nothing else: the labels are PRF outputs under a key it does not have, and
//! the dummies look like elements. A fresh K per run keeps runs unlinkable. The clients learn
//! the intersection and every client's set size.
//!
//! **What a malicious server can do** (`kmrs_mal`): abort, or answer any bit vector. A wrong
//! answer passes a client's check only if it differs from the true one by all λ copies of
//! whole elements and leaves every dummy as it should be; the server cannot tell copies from
//! dummies, so it succeeds with probability at most (1/t)^(λ−1) (2^-40 with the defaults, 1/2
//! with the covert λ = t = 2). With n > 2 clients it can answer one client honestly and cheat
//! another, who then aborts alone.
//!
//! **Deviations and decisions** (spec A7):
//! 1. *Key* (A7.1): `kmrs_semi`: P1 samples K and sends it to each client over the direct link
//!    (TLS between organisations, as Fig. 1 has it); with it, every set size, from the
//!    handshakes. `kmrs_mal`: F_CT of Fig. 2 step 3 is a hash-commitment coin toss over the
//!    same links (`client::coin_toss`), so K is uniform even if a client deviates (Thm. 3);
//!    for n > 2 clients P1 relays the shares, which the paper's two-party figure does not need.
//!    The clients also announce a key check (8 bytes of SHA-256 of K) to the server, which
//!    refuses a run whose clients hold different keys, so that a client that deviated in the
//!    coin toss is not mistaken for a cheating server.
//! 2. *Result* (A7.2): a bit vector per client over its own labels, as the paper's
//!    implementation (§3.2, §4), not the set I of the figure; the clients keep the label to
//!    row map. `kmrs_mal`'s step 6 is checked on that vector (§3.3).
//! 3. *Label length* (A7.3): λ + ⌈log2 C(N, 2)⌉ bits over all N labels of the run
//!    ([`labels`]; for `kmrs_mal` N counts λ|S_i| + 2t per client, spec A5), not the paper's
//!    |S|/2^(ℓ/2) rule; both are compared in a test.
//! 4. *Order* (A7.4): labels in ascending order instead of the paper's biased shuffle; sorted
//!    labels reveal nothing beyond the set, and let the server intersect by merging.
//! 5. *F*: `kmrs_semi`: AES-128 on the 16-byte item (the item is a domain-separated hash of the
//!    record, so any record length is covered), as the paper's PRP; labels truncated to ℓ bits.
//!    `kmrs_mal`: AES-128 CBC-MAC on two blocks, the item (or the dummy's set and index) and
//!    the copy index with the domain bit, a PRF rather than a PRP; the clients never invert it
//!    (they keep the label to row map).
//! 6. *Dummy sets* (A7.5): the §2.2 text variant, not P1's choice checked by P2: the dummies
//!    are PRF values under the coin-tossed K of a domain (top bit set) disjoint from the
//!    elements', so step 2's check holds by construction.
//! 7. *n clients* (`kmrs_mal`): Fig. 2 has two. With n clients the server sees which clients
//!    share each label, so D0 and one D_i per client would leave the labels that some but not
//!    all clients share without dummies (all copies of real elements, which the server could
//!    add to the intersection undetected). Each client therefore sends a dummy set D_A for
//!    every set A of clients that holds it, 2^(n−1) sets of t labels, D_{all n} = D0 in the
//!    intersection and every other D_A in none; for n = 2 that is exactly Fig. 2's D0 and D_i.
//!    The cost doubles with each client (`kmrs_mal::label_count`).
//! 8. *Parameters* (A7.7): [`RunOptions::copies`](crate::RunOptions::copies) and
//!    [`RunOptions::dummies`](crate::RunOptions::dummies), default 3 and 2^20 (§4.4's t = 10^6
//!    gives 2^-39.86, short of λ = 40); parameters above 2^-λ need
//!    [`RunOptions::covert`](crate::RunOptions::covert). The descriptor's `traffic` uses the
//!    defaults.

pub mod client;
pub mod disk_store;
pub mod external;
pub mod kmrs_fair;
pub mod kmrs_mal;
pub mod kmrs_semi;
pub mod kmrs_size;
pub mod labels;
pub mod plain;
#[cfg(feature = "redis-store")]
pub mod redis_store;
pub mod server;
pub mod store;
pub mod wire;

use crate::protocol::{Count, Party, Protocol, Reference, RoleSpec};
use blindjoin_core::{Error, Result};

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

/// Refuses a run of other than two clients (`kmrs_fair`, `kmrs_size`: Fig. 3 and 4 have two).
pub(crate) fn two_clients(p: &Protocol, links: &client::AidedLinks<'_>) -> Result<()> {
    if links.parties != 2 {
        return Err(Error::InvalidParam {
            field: "parties",
            reason: format!("{} runs have 2 clients, not {}", p.name, links.parties),
        });
    }
    Ok(())
}
