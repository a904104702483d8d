//! SHA-256 over fixed-length messages behind a one-block domain prefix: H1 and H2 of `cm20`.

use blindjoin_core::item::{domain_hasher, update_prefixed};
use blindjoin_core::sha256x::compress256_x2;
use sha2::Digest;
use sha2::block_api::compress256;
use zeroize::Zeroize;

/// SHA-256's initial state (FIPS 180-4 §5.3.3).
const SHA256_IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// `H(x) = SHA-256(P ‖ x)` for messages x of one fixed length, where P is one 64-byte block:
/// the SHA-256 digest of the length-prefixed label, session id and message length, then 32 zero
/// bytes. All inputs of one hash have the same length, so the concatenation is injective, and P
/// separates labels, sessions and lengths. The state after P is computed once; a message then
/// costs ⌈(len + 9)/64⌉ compressions, two messages at a time with interleaved SHA-NI streams.
#[derive(Clone, Debug)]
pub(crate) struct PrefixHash {
    state: [u32; 8],
    len: usize,
    nblocks: usize,
}

/// Message blocks of two lanes, padding in place.
pub(crate) struct HashScratch {
    lanes: [Vec<[u8; 64]>; 2],
}

impl Drop for HashScratch {
    fn drop(&mut self) {
        for lane in &mut self.lanes {
            lane.as_flattened_mut().zeroize();
        }
    }
}

impl PrefixHash {
    /// The hash of `len`-byte messages under `label` and `sid`.
    pub(crate) fn new(label: &str, sid: &[u8; 32], len: usize) -> PrefixHash {
        let block = Self::prefix(label, sid, len);
        let mut state = SHA256_IV;
        compress256(&mut state, &[block]);
        PrefixHash {
            state,
            len,
            nblocks: (len + 9).div_ceil(64),
        }
    }

    /// The prefix block P.
    fn prefix(label: &str, sid: &[u8; 32], len: usize) -> [u8; 64] {
        let mut h = domain_hasher(label.as_bytes());
        update_prefixed(&mut h, sid);
        update_prefixed(&mut h, &(len as u64).to_le_bytes());
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&h.finalize());
        block
    }

    /// A scratch buffer with the SHA-256 padding (fixed by the length) in place in both lanes.
    pub(crate) fn scratch(&self) -> HashScratch {
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

    /// The message area of lane `l` (`len` bytes) to fill before [`pair`](Self::pair) or
    /// [`one_filled`](Self::one_filled).
    #[inline]
    pub(crate) fn lane<'a>(&self, scratch: &'a mut HashScratch, l: usize) -> &'a mut [u8] {
        &mut scratch.lanes[l].as_flattened_mut()[..self.len]
    }

    /// The digests of the messages in lanes 0 and 1.
    #[inline]
    pub(crate) fn pair_filled(&self, scratch: &HashScratch) -> [[u8; 32]; 2] {
        let mut states = [self.state; 2];
        compress256_x2(&mut states, [&scratch.lanes[0], &scratch.lanes[1]]);
        [digest(&states[0]), digest(&states[1])]
    }

    /// The digest of the message in lane 0.
    #[inline]
    pub(crate) fn one_filled(&self, scratch: &HashScratch) -> [u8; 32] {
        let mut state = self.state;
        compress256(&mut state, &scratch.lanes[0]);
        digest(&state)
    }

    /// H(a), H(b) for two messages of the hash's length.
    #[inline]
    pub(crate) fn pair(&self, scratch: &mut HashScratch, msgs: [&[u8]; 2]) -> [[u8; 32]; 2] {
        self.lane(scratch, 0).copy_from_slice(msgs[0]);
        self.lane(scratch, 1).copy_from_slice(msgs[1]);
        self.pair_filled(scratch)
    }

    /// H(a) for one message of the hash's length.
    #[inline]
    pub(crate) fn one(&self, scratch: &mut HashScratch, msg: &[u8]) -> [u8; 32] {
        self.lane(scratch, 0).copy_from_slice(msg);
        self.one_filled(scratch)
    }

    /// H(msg) with a fresh scratch buffer (tests).
    #[cfg(test)]
    pub(crate) fn digest(&self, msg: &[u8]) -> [u8; 32] {
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
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use sha2::Sha256;

    #[test]
    fn equals_sha256_of_prefix_and_message() {
        let sid = [3u8; 32];
        for len in [0usize, 1, 16, 54, 55, 56, 63, 64, 78, 119, 120, 200] {
            let h = PrefixHash::new("test/label", &sid, len);
            let a: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let b: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let p = PrefixHash::prefix("test/label", &sid, len);
            let want = |m: &[u8]| {
                let mut s = Sha256::new();
                s.update(p);
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
        }
        // Labels, sessions and lengths separate.
        let m = [0u8; 16];
        let h = PrefixHash::new("a", &sid, 16).digest(&m);
        assert_ne!(h, PrefixHash::new("b", &sid, 16).digest(&m));
        assert_ne!(h, PrefixHash::new("a", &[4u8; 32], 16).digest(&m));
    }
}
