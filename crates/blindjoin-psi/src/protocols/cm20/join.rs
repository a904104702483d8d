//! The receiver's last step: which own OPRF values occur among the sender's. A partitioned hash
//! join: both sides are split by the low bits of the value into buckets of about 2^10 own
//! values, and each bucket is joined with a small hash table that stays in the cache (one table
//! over 2^20 16-byte values would miss the cache on every insert and lookup).

use crate::params::ceil_log2;
use crate::protocols::common::tag_from_bytes;
use rayon::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Own values per bucket, about.
const BUCKET_LOG: u32 = 10;

/// The most buckets (2^12).
const MAX_BUCKETS_LOG: u32 = 12;

/// Sorted indices of the own values (`own`: one `tag_len`-byte value per own item) that occur
/// among the peer's values (`peer`: frames of whole `tag_len`-byte values). Equal own values
/// all match.
pub(crate) fn matches(own: &[u8], peer: &[Vec<u8>], tag_len: usize) -> Vec<usize> {
    let n = own.len() / tag_len.max(1);
    let log_b = ceil_log2(n as u128)
        .saturating_sub(BUCKET_LOG)
        .min(MAX_BUCKETS_LOG);
    let mask = (1usize << log_b) - 1;
    let bucket = |t: u128| t as usize & mask;

    let own = partition(
        own.chunks_exact(tag_len)
            .enumerate()
            .map(|(i, t)| (tag_from_bytes(t), i as u32)),
        n,
        mask,
        |e| bucket(e.0),
    );
    let peer_count = peer.iter().map(|f| f.len() / tag_len).sum();
    let peer = partition(
        peer.iter()
            .flat_map(|f| f.chunks_exact(tag_len))
            .map(tag_from_bytes),
        peer_count,
        mask,
        |t| bucket(*t),
    );

    let mut found: Vec<usize> = (0..=mask)
        .into_par_iter()
        .flat_map_iter(|k| {
            let mine = own.bucket(k);
            let mut map: HashMap<u128, u32, BuildHasherDefault<TagHasher>> =
                HashMap::with_capacity_and_hasher(mine.len(), BuildHasherDefault::default());
            let mut dup: Vec<(u128, u32)> = Vec::new();
            for &(t, i) in mine {
                if let Some(prev) = map.insert(t, i) {
                    dup.push((t, prev));
                }
            }
            let mut out = Vec::new();
            for t in peer.bucket(k) {
                if let Some(&i) = map.get(t) {
                    out.push(i as usize);
                    out.extend(dup.iter().filter(|(x, _)| x == t).map(|(_, j)| *j as usize));
                }
            }
            out
        })
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// Elements grouped by bucket (a counting sort).
struct Partition<T> {
    starts: Vec<usize>,
    items: Vec<T>,
}

impl<T> Partition<T> {
    fn bucket(&self, k: usize) -> &[T] {
        &self.items[self.starts[k]..self.starts[k + 1]]
    }
}

fn partition<T: Copy + Default>(
    items: impl Iterator<Item = T> + Clone,
    count: usize,
    mask: usize,
    bucket: impl Fn(&T) -> usize,
) -> Partition<T> {
    let mut starts = vec![0usize; mask + 2];
    for t in items.clone() {
        starts[bucket(&t) + 1] += 1;
    }
    for k in 1..starts.len() {
        starts[k] += starts[k - 1];
    }
    let mut next = starts.clone();
    let mut out = vec![T::default(); count];
    for t in items {
        let k = bucket(&t);
        out[next[k]] = t;
        next[k] += 1;
    }
    Partition { starts, items: out }
}

/// Hashes a value (a pseudorandom H2 output, up to 128 bits) with the splitmix64 finaliser over
/// its two halves, so that the bucket bits (which are equal within a bucket) do not decide the
/// table slot.
#[derive(Default)]
struct TagHasher(u64);

impl Hasher for TagHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u128(&mut self, v: u128) {
        self.0 = v as u64 ^ ((v >> 64) as u64).rotate_left(32);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn finds_exactly_the_common_values() {
        for (n_own, n_peer, tag_len) in [(0, 5, 3), (5, 0, 3), (1, 1, 1), (5000, 3000, 10)] {
            let own: Vec<u8> = (0..n_own * tag_len)
                .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3])
                .collect();
            // The peer holds every third own value, plus values of its own.
            let mut peer: Vec<u8> = own
                .chunks_exact(tag_len)
                .step_by(3)
                .flatten()
                .copied()
                .collect();
            peer.extend((0..n_peer * tag_len).map(|i| (i % 251) as u8 ^ 0x5a));
            let frames: Vec<Vec<u8>> = peer.chunks(7 * tag_len).map(<[u8]>::to_vec).collect();
            let peer_set: std::collections::HashSet<&[u8]> = peer.chunks_exact(tag_len).collect();
            let want: Vec<usize> = own
                .chunks_exact(tag_len)
                .enumerate()
                .filter(|(_, t)| peer_set.contains(t))
                .map(|(i, _)| i)
                .collect();
            assert!(want.len() >= n_own / 3);
            assert_eq!(matches(&own, &frames, tag_len), want, "{n_own} {n_peer}");
        }
        // Equal own values both match.
        assert_eq!(matches(&[1, 2, 1], &[vec![1]], 1), vec![0, 2]);
    }
}
