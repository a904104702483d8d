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

use blindjoin_core::handshake::Session;
use blindjoin_core::item::{Item, update_prefixed};
use rayon::prelude::*;
use sha2::Digest;

/// Protocol id in the handshake.
pub const NAME: &str = "naive";

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
