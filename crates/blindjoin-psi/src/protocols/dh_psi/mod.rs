//! The Diffie-Hellman PSI flow of Huberman-Franklin-Hogg and Meadows over any prime-order
//! group: both roles of `ecdh` (Ristretto255) and `ecdh_nist` (NIST P-256, P-384, P-521), each
//! protocol supplying its group as a [`DhGroup`].
//!
//! ```text
//! receiver (X, secret a)                          sender (Y, secret b)
//!   A_i = H(x_i)^a, in X's order   ── n1 elements ──>
//!                                  <── n2 elements ──  B_j = H(y_π(j))^b, π a random permutation
//!                                  <── n1 tags ──────  T(A_i^b), in the order received
//!   S = { T(B_j^a) }; output { i : T(A_i^b) ∈ S }
//!
//! T(e) = SHA-256(sid, "ecdh/tag", e) truncated to ℓ = λ + ⌈log2(n1·n2)⌉ bits (whole bytes)
//! ```
//!
//! The tag T is the same for every group (its label is `ecdh`'s; the session id `sid` already
//! binds the protocol and its parameters). The group decides everything about its elements:
//! their encoding and length, the secret exponents, H, exponentiation, and which received
//! elements are valid (one that is not ends the run naming its index in the whole message). The
//! flow decides the rest: frames, threads, tags and the match.
//!
//! **Frames.** Elements travel in frames of [`DhGroup::frame_elements`]: 2^14 (`CHUNK`) for
//! elements of up to 128 bytes, fewer for larger ones so that a frame stays within 2 MiB
//! ([`FRAME_BYTES`]; 2^11 elements of 1024 bytes). The sender answers each frame of A_i with one
//! frame of tags.
//!
//! **Threads.** Both parties stream their elements while a second thread receives, so the
//! receiver blinds X while the sender blinds Y, and the receiver re-blinds Y while the sender
//! re-blinds X: two exponentiations of wall time per element with one thread each. The
//! receiving thread hands the peer's frames to the computing one through a queue of at most
//! 8 MiB and stops reading while it is full, and a third thread writes our frames, so that
//! neither party waits for the other to read (`protocols::common::pipelined`): elements that
//! come faster than they are re-blinded wait in the transport, not in our memory. Within a
//! frame, a group spreads its work over rayon's pool ([`par_append`]).
//!
//! **Communication** per run, for elements of ρ bytes: ρ·(n1 + n2) bytes of elements plus
//! n1·⌈ℓ/8⌉ bytes of tags, and 4 bytes of framing per frame ([`traffic`]).

mod receiver;
mod sender;

pub(crate) use receiver::receive;
pub(crate) use sender::send;

use crate::protocol::{Protocol, Sizes, Traffic};
use crate::protocols::common::{CHUNK, tag_len};
use blindjoin_core::channel::framed_bytes;
use blindjoin_core::handshake::Session;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// A prime-order group in which the flow blinds items: the part of a DH-PSI protocol that
/// depends on the group. Implementations: `ecdh::Ristretto`, `ecdh_nist::NistGroup`.
pub(crate) trait DhGroup: Sync + Sized {
    /// A secret exponent, nonzero, wiped when dropped.
    type Key: Send + Sync;

    /// The group at security level κ, or `None` if the protocol has none there.
    fn for_kappa(kappa: u32) -> Option<Self>;

    /// Bytes of one encoded element on the wire.
    fn element_len(&self) -> usize;

    /// Elements per frame: [`frame_elements`] of [`DhGroup::element_len`] unless a group
    /// needs another size.
    fn frame_elements(&self) -> usize {
        frame_elements(self.element_len())
    }

    /// A uniformly random secret exponent.
    fn random_key(&self, rng: &mut dyn CryptoRng) -> Self::Key;

    /// For each item x, hashes x to the group under `session`'s domain and appends the
    /// encoding of H(x)^key to `out`.
    fn blind_items(
        &self,
        session: &Session,
        items: &[Item],
        key: &Self::Key,
        out: &mut Vec<u8>,
    ) -> Result<()>;

    /// Decodes and validates each element of `frame` (a whole number of elements of message
    /// `what`, the first of which is element `first_index` of the message) and appends the
    /// encoding of e^key to `out`. An element that is not in the group is
    /// `Error::Malformed` naming its index in the whole message ([`invalid_element`]).
    fn reblind_frame(
        &self,
        frame: &[u8],
        first_index: u64,
        what: &'static str,
        key: &Self::Key,
        out: &mut Vec<u8>,
    ) -> Result<()>;
}

/// A DH-PSI protocol's descriptor and the names of its three messages.
pub(crate) struct DhFlow {
    /// The descriptor (name, parameters, κ).
    pub(crate) protocol: &'static Protocol,
    /// The receiver's blinded elements A_i.
    pub(crate) receiver_elements: &'static str,
    /// The sender's blinded elements B_j.
    pub(crate) sender_elements: &'static str,
    /// The sender's tags of the re-blinded A_i^b.
    pub(crate) tags: &'static str,
}

/// The most bytes of elements in one frame (2 MiB).
pub(crate) const FRAME_BYTES: usize = 2 << 20;

/// Elements per frame for elements of `element_len` bytes: `CHUNK` (2^14), or the largest power
/// of two whose frame fits [`FRAME_BYTES`] when that is fewer.
pub(crate) fn frame_elements(element_len: usize) -> usize {
    let fit = (FRAME_BYTES / element_len.max(1)).max(1);
    if fit >= CHUNK {
        CHUNK
    } else {
        1 << fit.ilog2()
    }
}

/// The label of the tag hash T under the session.
const TAG_LABEL: &str = "ecdh/tag";

/// The group of `G` at κ, or `InvalidParam` naming κ.
fn group_at<G: DhGroup>(kappa: u32) -> Result<G> {
    G::for_kappa(kappa).ok_or_else(|| Error::InvalidParam {
        field: "kappa",
        reason: format!("this protocol has no group at κ = {kappa}"),
    })
}

/// The bytes of each message of `flow` on group `G`: n1 and n2 elements and n1 tags, in frames
/// of [`DhGroup::frame_elements`].
pub(crate) fn traffic<G: DhGroup>(flow: &DhFlow, s: &Sizes) -> Result<Traffic> {
    let tag_len = tag_len(s.lambda, s.n_recv, s.n_send)?;
    let group: G = group_at(s.kappa)?;
    let (len, per_frame) = (group.element_len(), group.frame_elements());
    Ok(vec![
        (
            flow.receiver_elements,
            framed_bytes(s.n_recv, len, per_frame),
        ),
        (flow.sender_elements, framed_bytes(s.n_send, len, per_frame)),
        (flow.tags, framed_bytes(s.n_recv, tag_len, per_frame)),
    ])
}

/// The error for element `first_index + i` of message `what`, which `reason` (e.g. "is not a
/// valid Ristretto255 point").
pub(crate) fn invalid_element(
    what: &'static str,
    first_index: u64,
    i: usize,
    reason: &str,
) -> Error {
    Error::malformed(what, format!("element {} {reason}", first_index + i as u64))
}

/// Runs `f(k, piece, part)` on the consecutive pieces of `input` of `piece_len` entries each
/// (piece k starts at entry k·`piece_len`) in parallel on rayon's pool, and appends the parts
/// to `out` in order; the first error (in input order) is returned instead.
pub(crate) fn par_append<T: Sync>(
    input: &[T],
    piece_len: usize,
    out: &mut Vec<u8>,
    f: impl Fn(usize, &[T], &mut Vec<u8>) -> Result<()> + Sync,
) -> Result<()> {
    // Collected whole, then read in order: rayon's `collect` into a `Result` returns whichever
    // error a thread met first, not the first in input order.
    let parts: Vec<Result<Vec<u8>>> = input
        .par_chunks(piece_len.max(1))
        .enumerate()
        .map(|(k, piece)| {
            let mut part = Vec::new();
            f(k, piece, &mut part)?;
            Ok(part)
        })
        .collect();
    let parts = parts.into_iter().collect::<Result<Vec<_>>>()?;
    out.reserve(parts.iter().map(Vec::len).sum());
    for p in &parts {
        out.extend_from_slice(p);
    }
    Ok(())
}

/// Appends the truncated tags T(e) of the `element_len`-byte elements of `elements` to `out`;
/// `base` is the session's tag hasher.
fn tags_of(base: &Sha256, elements: &[u8], element_len: usize, tag_len: usize, out: &mut Vec<u8>) {
    let tags: Vec<[u8; 32]> = elements
        .par_chunks_exact(element_len)
        .map(|e| {
            let mut h = base.clone();
            h.update(e);
            h.finalize().into()
        })
        .collect();
    out.reserve(tags.len() * tag_len);
    for t in &tags {
        out.extend_from_slice(&t[..tag_len]);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn frames_hold_chunk_elements_up_to_two_mib() {
        // Ristretto255 and the compressed NIST points: 2^14 per frame.
        for len in [32, 33, 49, 67, 128] {
            assert_eq!(frame_elements(len), CHUNK, "{len}");
        }
        // Finite-field elements: a power of two within 2 MiB.
        for (len, n) in [
            (129, 1 << 13),
            (384, 1 << 12),
            (512, 1 << 12),
            (1024, 1 << 11),
        ] {
            assert_eq!(frame_elements(len), n, "{len}");
            assert!(n * len <= FRAME_BYTES && 2 * n * len > FRAME_BYTES, "{len}");
        }
        assert_eq!(frame_elements(FRAME_BYTES + 1), 1);
        assert_eq!(frame_elements(0), CHUNK);
    }

    #[test]
    fn par_append_keeps_order_and_reports_the_first_error() {
        let input: Vec<u32> = (0..1000).collect();
        let mut out = vec![7];
        par_append(&input, 64, &mut out, |k, piece, part| {
            assert_eq!(piece[0] as usize, 64 * k);
            part.extend(piece.iter().map(|&x| x as u8));
            Ok(())
        })
        .unwrap();
        let expected: Vec<u8> = std::iter::once(7)
            .chain(input.iter().map(|&x| x as u8))
            .collect();
        assert_eq!(out, expected);
        let e = par_append(&input, 10, &mut Vec::new(), |k, _, _| {
            if k >= 3 {
                Err(invalid_element("m", 100, k * 10 + 2, "is bad"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert!(e.to_string().contains("element 132 is bad"), "{e}");
    }
}
