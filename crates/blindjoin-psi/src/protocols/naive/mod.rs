//! `naive`: hash-and-compare. **INSECURE: a baseline for benchmarks only.**
//!
//! **Paper.** PSZ, *Scalable Private Set Intersection Based on OT Extension*, §1.1 ("naive
//! hashing"): both parties hash their items, the sender sends its hashes, the receiver compares.
//!
//! **Security model.** None. A receiver holding a guessable domain (emails, phone numbers) learns
//! the sender's whole set by hashing candidates: the "hashes" leak every sender item with low
//! entropy. It exists as the floor every private protocol is measured against; the CLI refuses it
//! outside `bench` unless `--insecure` is given.
//!
//! **Message flow** (after the handshake, which fixes n1, n2 and `sid`):
//!
//! ```text
//! T(x) = SHA-256(sid, "naive/tag", x) truncated to ℓ = λ + ⌈log2(n1·n2)⌉ bits (whole bytes)
//! sender ── { T(y) : y ∈ Y } in random order, n2·⌈ℓ/8⌉ bytes ──> receiver
//! receiver outputs { i : T(x_i) received }
//! ```
//!
//! **Deviations.** Hashes are truncated to ℓ bits (PSZ's naive protocol sends full hashes; ℓ is
//! the length PSZ §6.2 uses for its masks and keeps false positives at most 2^-λ), and salted
//! with the session id, so hashes from one run cannot be replayed in another.

mod receiver;
mod sender;

pub use receiver::receive;
pub use sender::send;

use crate::protocol::{
    Count, Message, Party, Protocol, Reference, RoleSpec, Security, Sizes, Traffic, two_party,
};
use crate::protocols::common::{CHUNK, PSZ14, tag_len};
use blindjoin_core::Result;
use blindjoin_core::channel::framed_bytes;
use blindjoin_core::handshake::Session;
use blindjoin_core::item::{Item, update_prefixed};
use rayon::prelude::*;
use sha2::Digest;

/// Protocol id in the handshake.
pub const NAME: &str = "naive";

/// The descriptor of `naive`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "hash and compare: the sender sends truncated hashes of its items",
    references: &[Reference {
        part: "§1.1 (naive hashing)",
        ..PSZ14
    }],
    security: Security::Insecure,
    assumptions: "the receiver can test any guess against the sender's hashes (a benchmark floor)",
    roles: &[
        RoleSpec {
            party: Party::Receiver,
            count: Count::One,
            learns: "the intersection, and every sender item it can guess",
        },
        RoleSpec {
            party: Party::Sender,
            count: Count::One,
            learns: "the receiver's set size",
        },
    ],
    kappa: &[128],
    params: |_| params(),
    // hello ‖ hello; verdict ‖ verdict; the sender's hashes.
    flights: 3,
    flow: &[Message::sender(MSG_HASHES)],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: two_party!(receiver::receive, sender::send),
};

/// The bytes of each message: n2 tags of λ + ⌈log2(n1·n2)⌉ bits in frames of 2^14.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let tag_len = tag_len(s.lambda, s.n_recv, s.n_send)?;
    Ok(vec![(MSG_HASHES, framed_bytes(s.n_send, tag_len, CHUNK))])
}

/// Name of the sender's hashes.
pub const MSG_HASHES: &str = "the sender's hashes";

pub(crate) fn params() -> Vec<(String, String)> {
    vec![("tag_hash".into(), "sha256".into())]
}

/// `T(x)` for each item, `tag_len` bytes each, appended to `out` in the items' order.
pub(crate) fn tags(session: &Session, items: &[Item], tag_len: usize, out: &mut Vec<u8>) {
    let base = session.hasher("naive/tag");
    let digests: Vec<[u8; 32]> = items
        .par_iter()
        .map(|x| {
            let mut h = base.clone();
            update_prefixed(&mut h, &x.0);
            h.finalize().into()
        })
        .collect();
    out.reserve(items.len() * tag_len);
    for d in &digests {
        out.extend_from_slice(&d[..tag_len]);
    }
}
