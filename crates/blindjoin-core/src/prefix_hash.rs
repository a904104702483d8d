//! SHA-256 over messages of one fixed length behind a one-block domain prefix:
//! `H(x) = SHA-256(P ‖ x)`.
//!
//! P is one 64-byte block: the SHA-256 digest of the length-prefixed label, session id and one
//! parameter (the message length, or a width that determines it), followed by 32 zero bytes.
//! All inputs of one hash have the same length, so the plain concatenation `P ‖ x` is an
//! injective encoding, and P separates labels, sessions and lengths. The state after P is
//! computed once; a message then costs ⌈(len + 9)/64⌉ compressions, two messages at a time with
//! their SHA-NI instruction streams interleaved ([`crate::sha256x::compress256_x2`]). The result
//! is bit for bit `Sha256::digest(P ‖ x)` (tested).
//!
//! Users: the row hash of the KK13 and KKRT OT extensions (`H(i, row)` with the index and the
//! row as the message) and H1, H2 of the CM20 PSI protocol.

use crate::item::{domain_hasher, update_prefixed};
use crate::sha256x::{SHA256_IV, compress256_x2};
use sha2::Digest;
use sha2::block_api::compress256;
use zeroize::Zeroize;

/// `H(x) = SHA-256(P ‖ x)` for `len`-byte messages x (see the module doc).
#[derive(Clone, Debug)]
pub struct PrefixHash {
    state: [u32; 8],
    len: usize,
    nblocks: usize,
}

/// Message blocks of two lanes with the SHA-256 padding in place; wiped on drop.
pub struct HashScratch {
    lanes: [Vec<[u8; 64]>; 2],
}

impl std::fmt::Debug for HashScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashScratch(..)")
    }
}

impl Drop for HashScratch {
    fn drop(&mut self) {
        for lane in &mut self.lanes {
            lane.as_flattened_mut().zeroize();
        }
    }
}

impl PrefixHash {
    /// The hash of `len`-byte messages under `label`, session id `sid` and `param` (bound into
    /// the prefix block; callers pass the message length or the width that fixes it).
    pub fn new(label: &str, sid: &[u8; 32], param: u64, len: usize) -> PrefixHash {
        let block = Self::prefix(label, sid, param);
        let mut state = SHA256_IV;
        compress256(&mut state, &[block]);
        PrefixHash {
            state,
            len,
            nblocks: (len + 9).div_ceil(64),
        }
    }

    /// The prefix block P.
    pub fn prefix(label: &str, sid: &[u8; 32], param: u64) -> [u8; 64] {
        let mut h = domain_hasher(label.as_bytes());
        update_prefixed(&mut h, sid);
        update_prefixed(&mut h, &param.to_le_bytes());
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&h.finalize());
        block
    }

    /// The message length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether messages are empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A scratch buffer with the SHA-256 padding (fixed by the length) in place in both lanes.
    pub fn scratch(&self) -> HashScratch {
        let mut lane = vec![[0u8; 64]; self.nblocks];
        let flat = lane.as_flattened_mut();
        flat[self.len] = 0x80;
        let bits = ((64 + self.len) as u64) * 8;
        let end = flat.len();
        flat[end - 8..].copy_from_slice(&bits.to_be_bytes());
        HashScratch {
            lanes: [lane.clone(), lane],
        }
    }

    /// The message area of lane `l` (0 or 1; `len` bytes) to fill before
    /// [`pair_filled`](Self::pair_filled) or [`one_filled`](Self::one_filled).
    #[inline]
    pub fn lane<'a>(&self, scratch: &'a mut HashScratch, l: usize) -> &'a mut [u8] {
        &mut scratch.lanes[l].as_flattened_mut()[..self.len]
    }

    /// The digests of the messages in lanes 0 and 1.
    #[inline]
    pub fn pair_filled(&self, scratch: &HashScratch) -> [[u8; 32]; 2] {
        let mut states = [self.state; 2];
        compress256_x2(&mut states, [&scratch.lanes[0], &scratch.lanes[1]]);
        [digest(&states[0]), digest(&states[1])]
    }

    /// The digest of the message in lane 0.
    #[inline]
    pub fn one_filled(&self, scratch: &HashScratch) -> [u8; 32] {
        let mut state = self.state;
        compress256(&mut state, &scratch.lanes[0]);
        digest(&state)
    }

    /// H(a), H(b) for two messages of the hash's length.
    #[inline]
    pub fn pair(&self, scratch: &mut HashScratch, msgs: [&[u8]; 2]) -> [[u8; 32]; 2] {
        self.lane(scratch, 0).copy_from_slice(msgs[0]);
        self.lane(scratch, 1).copy_from_slice(msgs[1]);
        self.pair_filled(scratch)
    }

    /// H(msg) for one message of the hash's length.
    #[inline]
    pub fn one(&self, scratch: &mut HashScratch, msg: &[u8]) -> [u8; 32] {
        self.lane(scratch, 0).copy_from_slice(msg);
        self.one_filled(scratch)
    }

    /// H(msg) with a fresh scratch buffer (batches reuse one with [`one`](Self::one) and
    /// [`pair`](Self::pair)).
    pub fn digest(&self, msg: &[u8]) -> [u8; 32] {
        self.one(&mut self.scratch(), msg)
    }
}

/// The digest bytes of a SHA-256 state.
#[inline]
fn digest(state: &[u32; 8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (dst, word) in out.chunks_exact_mut(4).zip(state) {
        dst.copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::Sha256;

    #[test]
    fn equals_sha256_of_prefix_and_message() {
        let sid = [3u8; 32];
        for len in [0usize, 1, 16, 54, 55, 56, 63, 64, 78, 119, 120, 200] {
            let h = PrefixHash::new("test/label", &sid, len as u64, len);
            let a: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let b: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            // P built by hand: SHA-256(le64(10) ‖ "test/label" ‖ 46 zero bytes ‖ le64(32) ‖ sid
            // ‖ le64(8) ‖ le64(len)) ‖ 32 zero bytes.
            let mut p = Sha256::new();
            p.update(10u64.to_le_bytes());
            p.update(b"test/label");
            p.update([0u8; 46]);
            p.update(32u64.to_le_bytes());
            p.update(sid);
            p.update(8u64.to_le_bytes());
            p.update((len as u64).to_le_bytes());
            let mut prefix = [0u8; 64];
            prefix[..32].copy_from_slice(&p.finalize());
            assert_eq!(PrefixHash::prefix("test/label", &sid, len as u64), prefix);
            let want = |m: &[u8]| {
                let mut s = Sha256::new();
                s.update(prefix);
                s.update(m);
                <[u8; 32]>::from(s.finalize())
            };
            let mut scratch = h.scratch();
            assert_eq!(
                h.pair(&mut scratch, [&a, &b]),
                [want(&a), want(&b)],
                "{len}"
            );
            assert_eq!(h.one(&mut scratch, &b), want(&b), "{len}");
            assert_eq!(h.digest(&a), want(&a), "{len}");
        }
    }

    #[test]
    fn labels_sessions_and_params_separate() {
        let (sid, m) = ([3u8; 32], [0u8; 16]);
        let h = PrefixHash::new("a", &sid, 16, 16).digest(&m);
        assert_ne!(h, PrefixHash::new("b", &sid, 16, 16).digest(&m));
        assert_ne!(h, PrefixHash::new("a", &[4u8; 32], 16, 16).digest(&m));
        assert_ne!(h, PrefixHash::new("a", &sid, 2, 16).digest(&m));
    }
}
