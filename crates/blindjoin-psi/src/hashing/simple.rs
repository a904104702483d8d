//! Simple hashing: every item under every hash function, k entries per item.
//!
//! The table is in compressed-sparse-row form: one offset per bin into one flat entry vector,
//! filled by a counting sort (count, prefix sum, scatter), so there is no allocation per bin.
//! Within a bin the entries are in item order, then hash-function order. An entry packs the
//! item index and j into 32 bits (`item << 2 | j`), which is why [`super::MAX_ITEMS`] is 2^30.
//! The offsets take 4 bytes per bin; where the bins follow the *peer's* announced set size, as
//! for a PSI sender, that is memory committed before the peer has sent anything, which is why
//! `psz14`'s sender groups its entries by chunk of bins instead (see its module doc).
//!
//! **Equal bins.** When h_j(x) = h_j'(x) for j ≠ j', the bin holds both (x, j) and (x, j'):
//! the receiver's Cuckoo table recorded one of the two, and the sender cannot know which.

use super::error::HashingError;
use super::hash::{BinHasher, HashedItems};
use blindjoin_core::block::Block;
use blindjoin_core::cache::prefetch;

/// Items whose bin cursors the scatter reads ahead.
const LOOKAHEAD: usize = 32;

/// One entry of a simple-hashing bin: item `item()` under hash function `hash()`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct SimpleEntry(u32);

impl SimpleEntry {
    #[inline]
    fn new(item: u32, hash: usize) -> Self {
        SimpleEntry((item << 2) | hash as u32)
    }

    /// Index of the item in the input slice.
    #[inline]
    pub fn item(self) -> u32 {
        self.0 >> 2
    }

    /// j such that h_j(item) is this bin.
    #[inline]
    pub fn hash(self) -> u8 {
        (self.0 & 3) as u8
    }
}

impl core::fmt::Debug for SimpleEntry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "({}, h{})", self.item(), self.hash())
    }
}

/// A filled simple-hashing table: for each bin, the (item, j) pairs with h_j(item) = bin.
#[derive(Clone)]
pub struct SimpleTable {
    num_hashes: usize,
    /// `offsets[b] .. offsets[b+1]` are bin b's entries; k·n ≤ 3·2^30 < 2^32.
    offsets: Vec<u32>,
    entries: Vec<SimpleEntry>,
}

impl core::fmt::Debug for SimpleTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SimpleTable")
            .field("num_hashes", &self.num_hashes)
            .field("bins", &self.num_bins())
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl SimpleTable {
    /// Hashes `items` with `hasher` and puts every (item, j) into bin h_j(item).
    ///
    /// Errors: [`HashingError::TooManyItems`].
    pub fn build(hasher: &BinHasher, items: &[Block]) -> Result<Self, HashingError> {
        Ok(Self::from_hashed(&hasher.hash_items(items)?))
    }

    /// The table of items whose bins are already computed.
    pub fn from_hashed(hashed: &HashedItems) -> Self {
        let k = hashed.num_hashes();
        let nb = hashed.num_bins();
        let idx = hashed.as_slice();
        // Counting sort. Counts go into offsets[b + 1] so that the prefix sum leaves each
        // bin's start in offsets[b]; the scatter then advances a cursor per bin.
        let mut offsets = vec![0u32; nb + 1];
        for &b in idx {
            offsets[b as usize + 1] += 1;
        }
        for b in 0..nb {
            offsets[b + 1] += offsets[b];
        }
        let mut cursor: Vec<u32> = offsets[..nb].to_vec();
        let mut entries = vec![SimpleEntry(0); idx.len()];
        for (g, group) in idx.chunks(LOOKAHEAD * k).enumerate() {
            // Prefetch the cursors of the next group first, so that their cache misses overlap
            // (the scatter is bound by these misses).
            let next = idx.get((g + 1) * LOOKAHEAD * k..).unwrap_or(&[]);
            for &b in next.iter().take(LOOKAHEAD * k) {
                if let Some(c) = cursor.get(b as usize) {
                    prefetch(c);
                }
            }
            for (t, bins) in group.chunks_exact(k).enumerate() {
                // i < MAX_ITEMS = 2^30 (checked when the items were hashed).
                let i = (g * LOOKAHEAD + t) as u32;
                for (j, &b) in bins.iter().enumerate() {
                    let c = &mut cursor[b as usize];
                    entries[*c as usize] = SimpleEntry::new(i, j);
                    *c += 1;
                }
            }
        }
        SimpleTable {
            num_hashes: k,
            offsets,
            entries,
        }
    }

    /// Number of hash functions k.
    pub fn num_hashes(&self) -> usize {
        self.num_hashes
    }

    /// Number of bins b.
    pub fn num_bins(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Total entries, k·n.
    pub fn num_entries(&self) -> usize {
        self.entries.len()
    }

    /// The entries of bin `bin` (empty if out of range).
    #[inline]
    pub fn bin(&self, bin: usize) -> &[SimpleEntry] {
        match (self.offsets.get(bin), self.offsets.get(bin + 1)) {
            (Some(&s), Some(&e)) => self.entries.get(s as usize..e as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The bins in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[SimpleEntry]> + '_ {
        self.offsets.windows(2).map(|w| {
            self.entries
                .get(w[0] as usize..w[1] as usize)
                .unwrap_or(&[])
        })
    }

    /// All entries, bin after bin (bin b's are `offsets()[b] .. offsets()[b+1]`).
    pub fn entries(&self) -> &[SimpleEntry] {
        &self.entries
    }

    /// The b + 1 bin offsets into [`SimpleTable::entries`].
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// The size of the fullest bin.
    pub fn max_load(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// Checks that no bin holds more than `max` entries (the size the PSZ14 sender pads every
    /// bin to, e.g. from [`super::max_bin_size`]).
    ///
    /// Errors: [`HashingError::BinOverflow`] naming the first bin that does.
    pub fn check_max_bin_size(&self, max: usize) -> Result<(), HashingError> {
        match self
            .offsets
            .windows(2)
            .position(|w| (w[1] - w[0]) as usize > max)
        {
            None => Ok(()),
            Some(bin) => Err(HashingError::BinOverflow {
                bin,
                size: self.bin(bin).len(),
                max,
            }),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::hashing::{CuckooParams, max_bin_size};
    use rand::Rng;

    fn check(table: &SimpleTable, hashed: &HashedItems) {
        let k = hashed.num_hashes();
        assert_eq!(table.num_entries(), hashed.len() * k);
        assert_eq!(table.num_bins(), hashed.num_bins());
        let mut seen = vec![0u8; hashed.len() * k];
        for (b, bin) in table.iter().enumerate() {
            assert_eq!(bin, table.bin(b));
            for e in bin {
                let (i, j) = (e.item() as usize, usize::from(e.hash()));
                assert!(j < k);
                assert_eq!(hashed.bins(i)[j] as usize, b, "({i}, {j}) in the wrong bin");
                seen[i * k + j] += 1;
            }
            // Item order, then hash order, within a bin.
            assert!(
                bin.windows(2)
                    .all(|w| (w[0].item(), w[0].hash()) < (w[1].item(), w[1].hash()))
            );
        }
        assert!(
            seen.iter().all(|&c| c == 1),
            "some (item, j) missing or repeated"
        );
        assert_eq!(
            table.max_load(),
            table.iter().map(<[_]>::len).max().unwrap_or(0)
        );
    }

    #[test]
    fn every_pair_exactly_once_in_its_bin() {
        let mut rng = blindjoin_testkit::rng(21);
        for n in [0usize, 1, 2, 10, 1000, 1 << 16] {
            for k in 1..=3 {
                for b in [1usize, 2, 7, n.max(1) * 2] {
                    let hasher = BinHasher::new(Block(rng.random()), k, b).unwrap();
                    let items: Vec<Block> = (0..n).map(|_| Block(rng.random())).collect();
                    let hashed = hasher.hash_items(&items).unwrap();
                    let table = SimpleTable::build(&hasher, &items).unwrap();
                    check(&table, &hashed);
                    assert_eq!(table.bin(b), &[] as &[SimpleEntry]);
                }
            }
        }
    }

    #[test]
    fn equal_bins_keep_both_entries() {
        let hashed = HashedItems::from_raw(3, 4, vec![2, 2, 2, 1, 3, 1]).unwrap();
        let table = SimpleTable::from_hashed(&hashed);
        check(&table, &hashed);
        assert_eq!(
            table.bin(2),
            &[
                SimpleEntry::new(0, 0),
                SimpleEntry::new(0, 1),
                SimpleEntry::new(0, 2)
            ]
        );
        assert_eq!(
            table.bin(1),
            &[SimpleEntry::new(1, 0), SimpleEntry::new(1, 2)]
        );
        assert_eq!(table.bin(0).len(), 0);
        assert_eq!(table.max_load(), 3);
        assert_eq!(format!("{:?}", table.bin(3)), "[(1, h1)]");
    }

    #[test]
    fn bin_overflow_is_a_typed_error() {
        let hashed = HashedItems::from_raw(2, 4, vec![0, 1, 3, 3, 3, 0]).unwrap();
        let table = SimpleTable::from_hashed(&hashed);
        assert!(table.check_max_bin_size(3).is_ok());
        assert_eq!(
            table.check_max_bin_size(2),
            Err(HashingError::BinOverflow {
                bin: 3,
                size: 3,
                max: 2
            })
        );
        assert_eq!(
            table.check_max_bin_size(1),
            Err(HashingError::BinOverflow {
                bin: 0,
                size: 2,
                max: 1
            })
        );
    }

    #[test]
    fn max_bin_size_bound_holds_for_kkrt_tables() {
        // The sender's 3·n entries into the receiver's KKRT bins stay within the bound.
        let mut rng = blindjoin_testkit::rng(22);
        for n in [10usize, 1000, 1 << 16] {
            let params = CuckooParams::kkrt(n, 40).unwrap();
            let max = max_bin_size(3 * n as u64, params.num_bins() as u64, 40).unwrap();
            let hasher = BinHasher::new(Block(rng.random()), 3, params.num_bins()).unwrap();
            let items: Vec<Block> = (0..n).map(|_| Block(rng.random())).collect();
            let table = SimpleTable::build(&hasher, &items).unwrap();
            table.check_max_bin_size(max).unwrap();
        }
    }
}
