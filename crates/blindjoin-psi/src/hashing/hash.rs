//! The hash functions h_0, …, h_{k-1}: one fixed-key AES call per item gives all k bin indices.
//!
//! `H(x) = π(x) ⊕ x` with π = AES-128 under the caller's seed ([`FixedKeyAes`]); hash function
//! `j` reads bits `42j .. 42j+42` of `H(x)` (as a `u128`, little-endian block order) and maps the
//! 42-bit value `v` to a bin by multiply-shift, `⌊v·b / 2^42⌋`. Each bin receives `⌊2^42/b⌋` or
//! `⌈2^42/b⌉` of the 2^42 values, so the distribution is uniform up to a relative error of
//! `b / 2^42` (below 2^-10 for the largest table, b < 2^32) — no modulo step, no rejection.
//! The three slices do not overlap, so in the random-permutation model of π the k indices of one
//! item are independent, and those of distinct items are independent up to the negligible
//! distance between a random permutation and a random function.

use super::error::HashingError;
use super::{MAX_HASHES, MAX_ITEMS};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::block::Block;
use rayon::prelude::*;

/// Bits of `H(x)` that each hash function reads (3 · 42 = 126 ≤ 128).
pub const SLICE_BITS: u32 = 42;

const SLICE_MASK: u128 = (1u128 << SLICE_BITS) - 1;

/// Items hashed per AES batch (a stack buffer of 16 KiB).
const CHUNK: usize = 1024;

/// Below this many items [`BinHasher::hash_into`] stays on the calling thread.
const PAR_THRESHOLD: usize = 1 << 14;

/// Maps `v < 2^42` to `[0, num_bins)` by multiply-shift.
#[inline]
fn reduce(v: u64, num_bins: u32) -> u32 {
    // v < 2^42 and num_bins < 2^32, so the product is below 2^74 and the result below num_bins.
    ((u128::from(v) * u128::from(num_bins)) >> SLICE_BITS) as u32
}

/// The k hash functions of one table: `k` ∈ {1, 2, 3} bin indices in `[0, num_bins)` per item.
///
/// Both parties build it from the same seed and the same `(num_hashes, num_bins)`, so they
/// compute the same bins. The seed must be derived from the session id (for instance from
/// `Session::hasher("psi/cuckoo")`) *after* both inputs are fixed, and must not key any other
/// use of fixed-key AES in the protocol.
#[derive(Clone, Debug)]
pub struct BinHasher {
    aes: FixedKeyAes,
    num_hashes: usize,
    num_bins: u32,
}

impl BinHasher {
    /// Hash functions `h_0..h_{num_hashes}` onto `num_bins` bins, keyed by `seed`.
    ///
    /// Errors: `num_hashes` outside `1..=3`, or `num_bins` outside `1..2^32`.
    pub fn new(seed: Block, num_hashes: usize, num_bins: usize) -> Result<Self, HashingError> {
        if !(1..=MAX_HASHES).contains(&num_hashes) {
            return Err(HashingError::invalid(
                "num_hashes",
                format!("{num_hashes} hash functions; 1 to {MAX_HASHES} are supported"),
            ));
        }
        let num_bins = match u32::try_from(num_bins) {
            Ok(b) if b >= 1 => b,
            _ => {
                return Err(HashingError::invalid(
                    "num_bins",
                    format!("{num_bins} bins; 1 to 2^32 - 1 are supported"),
                ));
            }
        };
        Ok(BinHasher {
            aes: FixedKeyAes::new(seed),
            num_hashes,
            num_bins,
        })
    }

    /// Number of hash functions k.
    pub fn num_hashes(&self) -> usize {
        self.num_hashes
    }

    /// Number of bins b.
    pub fn num_bins(&self) -> usize {
        self.num_bins as usize
    }

    /// The k bin indices of a hash block `H(x)`.
    #[inline]
    fn split(&self, h: u128, out: &mut [u32]) {
        for (j, o) in out.iter_mut().enumerate().take(self.num_hashes) {
            let v = ((h >> (SLICE_BITS as usize * j)) & SLICE_MASK) as u64;
            *o = reduce(v, self.num_bins);
        }
    }

    /// The bins `h_0(x), …, h_{k-1}(x)` of one item (one AES call). For many items use
    /// [`BinHasher::hash_items`], which pipelines the AES calls.
    pub fn bins(&self, item: Block) -> ItemBins {
        let h = self.aes.permute_block(item) ^ item;
        let mut idx = [0u32; MAX_HASHES];
        self.split(h.0, &mut idx);
        ItemBins {
            idx,
            len: self.num_hashes as u8,
        }
    }

    /// The bins of every item, `num_hashes` per item (item `i`'s at `out[i*k .. (i+1)*k]`),
    /// into a caller-provided buffer. Runs on rayon's pool for large inputs.
    ///
    /// Errors: `out.len() != items.len() * num_hashes`, or more than [`MAX_ITEMS`] items.
    pub fn hash_into(&self, items: &[Block], out: &mut [u32]) -> Result<(), HashingError> {
        if items.len() > MAX_ITEMS {
            return Err(HashingError::TooManyItems {
                items: items.len(),
                max: MAX_ITEMS,
            });
        }
        let k = self.num_hashes;
        if out.len() != items.len() * k {
            return Err(HashingError::invalid(
                "out",
                format!(
                    "buffer of {} indices for {} items × {k} hash functions",
                    out.len(),
                    items.len()
                ),
            ));
        }
        if items.len() >= PAR_THRESHOLD {
            items
                .par_chunks(CHUNK)
                .zip(out.par_chunks_mut(CHUNK * k))
                .for_each(|(inp, o)| self.hash_chunk(inp, o));
        } else {
            for (inp, o) in items.chunks(CHUNK).zip(out.chunks_mut(CHUNK * k)) {
                self.hash_chunk(inp, o);
            }
        }
        Ok(())
    }

    /// [`BinHasher::hash_into`] for at most [`CHUNK`] items, through a stack buffer.
    fn hash_chunk(&self, items: &[Block], out: &mut [u32]) {
        let mut buf = [Block::ZERO; CHUNK];
        let n = items.len().min(CHUNK);
        let buf = &mut buf[..n];
        buf.copy_from_slice(&items[..n]);
        self.aes.permute(buf);
        let k = self.num_hashes;
        for ((h, x), o) in buf.iter().zip(items).zip(out.chunks_exact_mut(k)) {
            self.split((*h ^ *x).0, o);
        }
    }

    /// The bins of every item, in a new [`HashedItems`].
    ///
    /// Errors: more than [`MAX_ITEMS`] items.
    pub fn hash_items(&self, items: &[Block]) -> Result<HashedItems, HashingError> {
        if items.len() > MAX_ITEMS {
            return Err(HashingError::TooManyItems {
                items: items.len(),
                max: MAX_ITEMS,
            });
        }
        let mut bins = vec![0u32; items.len() * self.num_hashes];
        self.hash_into(items, &mut bins)?;
        Ok(HashedItems {
            num_hashes: self.num_hashes,
            num_bins: self.num_bins,
            bins,
        })
    }
}

/// The k bin indices of one item (dereferences to a slice of length k).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemBins {
    idx: [u32; MAX_HASHES],
    len: u8,
}

impl core::ops::Deref for ItemBins {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.idx[..usize::from(self.len)]
    }
}

/// The k bin indices of each of n items, in one flat vector (item-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashedItems {
    num_hashes: usize,
    num_bins: u32,
    bins: Vec<u32>,
}

impl HashedItems {
    /// Wraps precomputed indices (`bins.len()` must be a multiple of `num_hashes`, every index
    /// below `num_bins`); mainly for tests that need chosen collisions.
    ///
    /// Errors: a shape or range violation, or more than [`MAX_ITEMS`] items.
    pub fn from_raw(
        num_hashes: usize,
        num_bins: usize,
        bins: Vec<u32>,
    ) -> Result<Self, HashingError> {
        if !(1..=MAX_HASHES).contains(&num_hashes) || !bins.len().is_multiple_of(num_hashes) {
            return Err(HashingError::invalid(
                "num_hashes",
                format!(
                    "{num_hashes} hash functions for {} indices (1 to {MAX_HASHES}, dividing the \
                     number of indices)",
                    bins.len()
                ),
            ));
        }
        let num_bins = match u32::try_from(num_bins) {
            Ok(b) if b >= 1 => b,
            _ => {
                return Err(HashingError::invalid(
                    "num_bins",
                    format!("{num_bins} bins; 1 to 2^32 - 1 are supported"),
                ));
            }
        };
        if let Some(bad) = bins.iter().find(|&&b| b >= num_bins) {
            return Err(HashingError::invalid(
                "bins",
                format!("bin index {bad} is not below {num_bins}"),
            ));
        }
        let items = bins.len() / num_hashes;
        if items > MAX_ITEMS {
            return Err(HashingError::TooManyItems {
                items,
                max: MAX_ITEMS,
            });
        }
        Ok(HashedItems {
            num_hashes,
            num_bins,
            bins,
        })
    }

    /// Number of items n.
    pub fn len(&self) -> usize {
        self.bins.len() / self.num_hashes
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.bins.is_empty()
    }

    /// Number of hash functions k.
    pub fn num_hashes(&self) -> usize {
        self.num_hashes
    }

    /// Number of bins b.
    pub fn num_bins(&self) -> usize {
        self.num_bins as usize
    }

    /// The bins `h_0(x_i), …, h_{k-1}(x_i)` of item `i` (empty if `i` is out of range).
    #[inline]
    pub fn bins(&self, i: usize) -> &[u32] {
        let k = self.num_hashes;
        self.bins.get(i * k..(i + 1) * k).unwrap_or(&[])
    }

    /// All indices, item-major (`k` per item).
    pub fn as_slice(&self) -> &[u32] {
        &self.bins
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn batch_matches_single_and_is_in_range() {
        let mut rng = blindjoin_testkit::rng(1);
        for &(k, b) in &[
            (1, 1),
            (2, 7),
            (3, 1000),
            (3, 1 << 20),
            (2, u32::MAX as usize),
        ] {
            let hasher = BinHasher::new(Block(rng.random()), k, b).unwrap();
            for n in [0usize, 1, 2, 10, CHUNK - 1, CHUNK + 1, PAR_THRESHOLD + 5] {
                let items: Vec<Block> = (0..n).map(|_| Block(rng.random())).collect();
                let hashed = hasher.hash_items(&items).unwrap();
                assert_eq!(hashed.len(), n);
                for (i, x) in items.iter().enumerate() {
                    let single = hasher.bins(*x);
                    assert_eq!(&*single, hashed.bins(i));
                    assert!(single.iter().all(|&v| (v as usize) < b));
                }
            }
        }
    }

    #[test]
    fn slices_are_independent_hash_functions() {
        // With 2^16 items into 16 bins, each function is close to uniform and the functions
        // disagree as often as independent ones would (15/16 of the time).
        let hasher = BinHasher::new(Block(7), 3, 16).unwrap();
        let items: Vec<Block> = (0..1u128 << 16).map(Block).collect();
        let hashed = hasher.hash_items(&items).unwrap();
        for j in 0..3 {
            let mut counts = [0usize; 16];
            for i in 0..items.len() {
                counts[hashed.bins(i)[j] as usize] += 1;
            }
            // Mean 4096, σ ≈ 62: ±6σ.
            assert!(
                counts.iter().all(|&c| (3700..4500).contains(&c)),
                "{counts:?}"
            );
        }
        let equal01 = (0..items.len())
            .filter(|&i| hashed.bins(i)[0] == hashed.bins(i)[1])
            .count();
        // Mean 4096 again.
        assert!((3700..4500).contains(&equal01), "{equal01}");
    }

    #[test]
    fn the_seed_changes_the_functions() {
        let items: Vec<Block> = (0..64u128).map(Block).collect();
        let a = BinHasher::new(Block(1), 3, 1 << 20).unwrap();
        let b = BinHasher::new(Block(2), 3, 1 << 20).unwrap();
        assert_ne!(a.hash_items(&items).unwrap(), b.hash_items(&items).unwrap());
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert!(BinHasher::new(Block(0), 0, 10).is_err());
        assert!(BinHasher::new(Block(0), 4, 10).is_err());
        assert!(BinHasher::new(Block(0), 2, 0).is_err());
        assert!(BinHasher::new(Block(0), 2, 1 << 32).is_err());
        let h = BinHasher::new(Block(0), 2, 10).unwrap();
        let mut out = vec![0u32; 3];
        assert!(matches!(
            h.hash_into(&[Block(1), Block(2)], &mut out),
            Err(HashingError::InvalidParam { field: "out", .. })
        ));
        assert!(HashedItems::from_raw(2, 4, vec![0, 1, 2]).is_err());
        assert!(HashedItems::from_raw(2, 4, vec![0, 4]).is_err());
        assert!(HashedItems::from_raw(2, 4, vec![0, 3]).is_ok());
    }
}
