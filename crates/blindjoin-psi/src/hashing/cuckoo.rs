//! Cuckoo hashing with an optional stash: each item in exactly one of its k bins or the stash.
//!
//! **Insertion** of item x (one at a time, in index order):
//!
//! 1. if one of x's bins h_0(x), …, h_{k-1}(x) is empty, x goes into the first such bin;
//! 2. otherwise x evicts the occupant of one of its bins and the evicted item is inserted the
//!    same way (a random walk). The evicted item never goes straight back to the bin it was
//!    just evicted from when it has another choice; with k = 2 its next bin is thus its other
//!    one, with k = 3 one of its two others, picked by a SplitMix64 stream with a fixed seed.
//!    Those choices are fixed before, and independent of, the hash functions, which is all
//!    the random-walk analysis asks of them, and they make the table a deterministic function
//!    of (seed, items, parameters);
//! 3. after [`CuckooParams::max_evictions`] evictions the walk stops, and a breadth-first search
//!    over the bins reachable from the homeless item looks for an augmenting path to an empty
//!    bin (each bin is visited at most once, so the search ends). If there is one, the items on
//!    it move one step along it;
//! 4. only if there is none does the homeless item go to the stash, and if the stash is full
//!    insertion stops with [`HashingError::CuckooFailed`].
//!
//! Step 3 makes the outcome independent of the walk: an item is stashed only when no
//! placement of the items so far puts it in a bin (processing items in order and augmenting
//! from each is Kuhn's maximum-matching algorithm, and a vertex without an augmenting path
//! never gains one later), so the stash holds exactly n − ν items for ν the maximum number of
//! items any assignment places in bins. Failure is thus exactly the event that the analyses of
//! KMW (2 hashes, stash) and PSWW18 (3 hashes, no stash) bound. The walk bound only trades
//! time.
//!
//! **Equal bins.** When two hash functions of an item give the same bin, the item still takes
//! one bin; the entry records one `j` with h_j(x) equal to that bin (the first one step 1 or
//! the walk chose).

use super::MAX_HASHES;
use super::error::HashingError;
use super::hash::{BinHasher, HashedItems};
use super::params::CuckooParams;
use blindjoin_core::block::Block;
use blindjoin_core::cache::prefetch;
use std::collections::VecDeque;

const EMPTY: u64 = u64::MAX;
const NO_BIN: u32 = u32::MAX;

/// Items whose bins [`CuckooTable::touch`] reads ahead of insertion.
const LOOKAHEAD: usize = 32;

/// Seed of the walk's SplitMix64 stream ("blindjoi" in ASCII); any fixed value would do.
const WALK_SEED: u64 = 0x626c_696e_646a_6f69;

#[inline]
fn pack(item: u32, hash: usize) -> u64 {
    u64::from(item) | ((hash as u64) << 32)
}

#[inline]
fn unpack(v: u64) -> CuckooEntry {
    CuckooEntry {
        item: v as u32,
        hash: (v >> 32) as u8,
    }
}

/// The occupant of a Cuckoo bin: an item index and the hash function that placed it there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CuckooEntry {
    /// Index of the item in the input slice.
    pub item: u32,
    /// j such that h_j(item) is this bin (the OPRF input of KKRT is the item together with j).
    pub hash: u8,
}

/// Where a Cuckoo table keeps an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// In bin `bin`, placed by hash function `hash`.
    Bin {
        /// The bin.
        bin: u32,
        /// j with h_j(item) = bin.
        hash: u8,
    },
    /// In the stash, at position `slot`.
    Stash {
        /// Position in [`CuckooTable::stash`].
        slot: u32,
    },
}

/// SplitMix64 (Steele, Lea, Flood 2014): the walk's choices.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..count` (count ≤ 3; the multiply-shift bias is 2^-62).
    fn below(&mut self, count: usize) -> usize {
        ((u128::from(self.next()) * count as u128) >> 64) as usize
    }
}

/// One step of a breadth-first search: the item that would move into this bin, by which hash
/// function, and the bin it leaves (`NO_BIN` for the homeless item itself).
#[derive(Clone, Copy, Default)]
struct Via {
    item: u32,
    hash: u8,
    from: u32,
}

/// Scratch space of the search, allocated on first use and reused.
#[derive(Default)]
struct Search {
    stamp: Vec<u32>,
    via: Vec<Via>,
    epoch: u32,
    queue: VecDeque<u32>,
}

/// A filled Cuckoo table: b bins of at most one item each, plus a stash.
#[derive(Clone)]
pub struct CuckooTable {
    params: CuckooParams,
    bins: Vec<u64>,
    stash: Vec<u32>,
    hashed: HashedItems,
}

impl core::fmt::Debug for CuckooTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CuckooTable")
            .field("params", &self.params)
            .field("items", &self.hashed.len())
            .field("stash", &self.stash.len())
            .finish_non_exhaustive()
    }
}

impl CuckooTable {
    /// Hashes `items` with the hash functions keyed by `seed` (see [`BinHasher`]) and inserts
    /// them in order. Item indices are positions in `items`; items must be distinct (two
    /// equal items have equal bins and take two places).
    ///
    /// Errors: [`HashingError::CuckooFailed`] when some item finds no place (reported, never
    /// retried with other hash functions), [`HashingError::TooManyItems`].
    pub fn build(
        params: &CuckooParams,
        seed: Block,
        items: &[Block],
    ) -> Result<Self, HashingError> {
        let hasher = BinHasher::new(seed, params.num_hashes(), params.num_bins())?;
        let hashed = hasher.hash_items(items)?;
        Self::from_hashed(params, hashed)
    }

    /// Inserts items whose bins are already computed (the table keeps them for lookups).
    ///
    /// Errors: as [`CuckooTable::build`], and [`HashingError::InvalidParam`] if `hashed` was
    /// computed for another number of hash functions or bins.
    pub fn from_hashed(params: &CuckooParams, hashed: HashedItems) -> Result<Self, HashingError> {
        if hashed.num_hashes() != params.num_hashes() || hashed.num_bins() != params.num_bins() {
            return Err(HashingError::invalid(
                "hashed",
                format!(
                    "items hashed with {} functions onto {} bins, table has {} onto {}",
                    hashed.num_hashes(),
                    hashed.num_bins(),
                    params.num_hashes(),
                    params.num_bins()
                ),
            ));
        }
        let n = hashed.len();
        let mut table = CuckooTable {
            params: *params,
            bins: vec![EMPTY; params.num_bins()],
            stash: Vec::with_capacity(params.stash_size().min(n)),
            hashed,
        };
        let mut rng = SplitMix64(WALK_SEED);
        let mut search = Search::default();
        for start in (0..n).step_by(LOOKAHEAD) {
            table.touch(start + LOOKAHEAD, n);
            for i in start..(start + LOOKAHEAD).min(n) {
                // n ≤ MAX_ITEMS < 2^32 (checked when the items were hashed).
                table.insert(i as u32, &mut rng, &mut search)?;
            }
        }
        Ok(table)
    }

    /// Prefetches the bins of items `from .. from + LOOKAHEAD` so that their cache misses
    /// overlap while the previous group is inserted. Insertion is bound by these misses once
    /// the table outgrows the cache.
    fn touch(&self, from: usize, n: usize) {
        let k = self.hashed.num_hashes();
        let idx = self.hashed.as_slice();
        let end = (from + LOOKAHEAD).min(n);
        if let Some(group) = idx.get(from * k..end.max(from) * k) {
            for &b in group {
                if let Some(bin) = self.bins.get(b as usize) {
                    prefetch(bin);
                }
            }
        }
    }

    /// The k bins of item `item`, copied out of `hashed` (fewer than k only out of range).
    #[inline]
    fn item_bins(&self, item: u32) -> ([u32; MAX_HASHES], usize) {
        let src = self.hashed.bins(item as usize);
        let mut out = [0u32; MAX_HASHES];
        let k = src.len().min(MAX_HASHES);
        out[..k].copy_from_slice(&src[..k]);
        (out, k)
    }

    fn insert(
        &mut self,
        item: u32,
        rng: &mut SplitMix64,
        search: &mut Search,
    ) -> Result<(), HashingError> {
        let mut cur = item;
        let mut prev_bin = NO_BIN;
        let mut evictions = 0usize;
        loop {
            let (hb, k) = self.item_bins(cur);
            let hb = &hb[..k];
            if let Some((j, &b)) = hb
                .iter()
                .enumerate()
                .find(|&(_, &b)| self.bins[b as usize] == EMPTY)
            {
                self.bins[b as usize] = pack(cur, j);
                return Ok(());
            }
            if evictions >= self.params.max_evictions() || k == 0 {
                break;
            }
            let j = choose(hb, prev_bin, rng);
            let b = hb[j];
            let old = core::mem::replace(&mut self.bins[b as usize], pack(cur, j));
            cur = unpack(old).item;
            prev_bin = b;
            evictions += 1;
        }
        if self.augment(cur, search) {
            return Ok(());
        }
        if self.stash.len() < self.params.stash_size() {
            self.stash.push(cur);
            return Ok(());
        }
        Err(HashingError::CuckooFailed {
            items: self.hashed.len(),
            bins: self.bins.len(),
            stash: self.params.stash_size(),
            homeless: cur,
            bound: self.params.failure(),
        })
    }

    /// Breadth-first search for an augmenting path from the homeless item `root` to an empty
    /// bin; moves the items along it and returns true if there is one.
    fn augment(&mut self, root: u32, s: &mut Search) -> bool {
        let nb = self.bins.len();
        if s.stamp.len() != nb {
            s.stamp = vec![0; nb];
            s.via = vec![Via::default(); nb];
            s.epoch = 0;
        }
        s.epoch = s.epoch.wrapping_add(1);
        if s.epoch == 0 {
            s.stamp.fill(0);
            s.epoch = 1;
        }
        s.queue.clear();
        let mut parent = NO_BIN;
        let mut mover = root;
        loop {
            let (hb, k) = self.item_bins(mover);
            for (j, &b) in hb[..k].iter().enumerate() {
                let bi = b as usize;
                if b == parent || s.stamp[bi] == s.epoch {
                    continue;
                }
                s.stamp[bi] = s.epoch;
                s.via[bi] = Via {
                    item: mover,
                    hash: j as u8,
                    from: parent,
                };
                if self.bins[bi] == EMPTY {
                    self.apply(b, s);
                    return true;
                }
                s.queue.push_back(b);
            }
            match s.queue.pop_front() {
                Some(b) => {
                    parent = b;
                    mover = unpack(self.bins[b as usize]).item;
                }
                None => return false,
            }
        }
    }

    /// Moves the items along the search path that ends in the empty bin `end`.
    fn apply(&mut self, end: u32, s: &Search) {
        let mut cur = end;
        // Each bin on the path was visited once, so the `from` links lead back to the root
        // in at most b steps.
        for _ in 0..self.bins.len() {
            let v = s.via[cur as usize];
            self.bins[cur as usize] = pack(v.item, usize::from(v.hash));
            if v.from == NO_BIN {
                return;
            }
            cur = v.from;
        }
    }

    /// The parameters the table was built with.
    pub fn params(&self) -> &CuckooParams {
        &self.params
    }

    /// Number of bins b.
    pub fn num_bins(&self) -> usize {
        self.bins.len()
    }

    /// Number of items inserted.
    pub fn num_items(&self) -> usize {
        self.hashed.len()
    }

    /// The bins of every item (kept from insertion).
    pub fn hashed(&self) -> &HashedItems {
        &self.hashed
    }

    /// The occupant of bin `bin` (None if it is empty or out of range).
    #[inline]
    pub fn bin(&self, bin: usize) -> Option<CuckooEntry> {
        match self.bins.get(bin) {
            Some(&v) if v != EMPTY => Some(unpack(v)),
            _ => None,
        }
    }

    /// The occupants of all bins, in bin order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Option<CuckooEntry>> + '_ {
        self.bins
            .iter()
            .map(|&v| if v == EMPTY { None } else { Some(unpack(v)) })
    }

    /// Item indices in the stash (at most [`CuckooParams::stash_size`]).
    pub fn stash(&self) -> &[u32] {
        &self.stash
    }

    /// Where item `item` is: one of its k bins, or the stash (None only for an index that was
    /// never inserted).
    pub fn locate(&self, item: u32) -> Option<Location> {
        let (hb, k) = self.item_bins(item);
        for &b in &hb[..k] {
            if let Some(e) = self.bin(b as usize)
                && e.item == item
            {
                return Some(Location::Bin {
                    bin: b,
                    hash: e.hash,
                });
            }
        }
        self.stash
            .iter()
            .position(|&s| s == item)
            .map(|slot| Location::Stash { slot: slot as u32 })
    }
}

/// The hash function an evicted item tries next: one whose bin differs from the bin it was
/// just evicted from (`prev_bin`), uniformly among them; any of them if all coincide.
fn choose(hb: &[u32], prev_bin: u32, rng: &mut SplitMix64) -> usize {
    let mut cand = [0usize; MAX_HASHES];
    let mut c = 0;
    for (j, &b) in hb.iter().enumerate() {
        if b != prev_bin {
            cand[c] = j;
            c += 1;
        }
    }
    match c {
        0 => rng.below(hb.len()),
        1 => cand[0],
        _ => cand[rng.below(c)],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::hashing::FailureBound;
    use rand::Rng;

    /// Every item is in exactly one place, one of its own bins (with the right j) or the stash.
    fn check_invariants(t: &CuckooTable) {
        let n = t.num_items();
        let mut seen = vec![0u32; n];
        for (b, e) in t.iter().enumerate() {
            if let Some(e) = e {
                let i = e.item as usize;
                assert!(i < n, "bin {b} holds unknown item {i}");
                seen[i] += 1;
                assert_eq!(
                    t.hashed().bins(i)[usize::from(e.hash)] as usize,
                    b,
                    "item {i} in bin {b} under the wrong hash function {}",
                    e.hash
                );
            }
        }
        assert!(t.stash().len() <= t.params().stash_size());
        for &s in t.stash() {
            seen[s as usize] += 1;
        }
        for (i, &c) in seen.iter().enumerate() {
            assert_eq!(c, 1, "item {i} stored {c} times");
            let loc = t.locate(i as u32).unwrap();
            match loc {
                Location::Bin { bin, hash } => {
                    assert_eq!(
                        t.bin(bin as usize).unwrap(),
                        CuckooEntry {
                            item: i as u32,
                            hash
                        }
                    );
                }
                Location::Stash { slot } => assert_eq!(t.stash()[slot as usize], i as u32),
            }
        }
    }

    fn random_items(rng: &mut impl Rng, n: usize) -> Vec<Block> {
        (0..n).map(|_| Block(rng.random())).collect()
    }

    #[test]
    fn all_items_placed_for_both_parameter_sets() {
        let mut rng = blindjoin_testkit::rng(11);
        for n in [0usize, 1, 2, 3, 10, 100, 1000, 1 << 16] {
            let reps = if n >= 1 << 16 { 1 } else { 20 };
            for _ in 0..reps {
                let items = random_items(&mut rng, n);
                let seed = Block(rng.random());
                for params in [
                    CuckooParams::psz(n).unwrap(),
                    CuckooParams::kkrt(n, 40).unwrap(),
                ] {
                    let t = CuckooTable::build(&params, seed, &items).unwrap();
                    assert_eq!(t.num_items(), n);
                    check_invariants(&t);
                    // Deterministic: the same inputs give the same table.
                    let again = CuckooTable::build(&params, seed, &items).unwrap();
                    assert!(t.iter().eq(again.iter()) && t.stash() == again.stash());
                }
            }
        }
    }

    /// Maximum number of items that any assignment places in bins (Kuhn's algorithm), the
    /// oracle for how many items must go to the stash.
    fn max_matching(hashed: &HashedItems) -> usize {
        fn try_place(
            i: usize,
            hashed: &HashedItems,
            owner: &mut [Option<usize>],
            seen: &mut [bool],
        ) -> bool {
            for &b in hashed.bins(i) {
                let b = b as usize;
                if seen[b] {
                    continue;
                }
                seen[b] = true;
                if owner[b].is_none_or(|o| try_place(o, hashed, owner, seen)) {
                    owner[b] = Some(i);
                    return true;
                }
            }
            false
        }
        let mut owner = vec![None; hashed.num_bins()];
        (0..hashed.len())
            .filter(|&i| try_place(i, hashed, &mut owner, &mut vec![false; hashed.num_bins()]))
            .count()
    }

    #[test]
    fn many_seeds_small_sizes_against_a_matching_oracle() {
        // Property test over many seeds and sizes, including the walk-free path
        // (max_evictions = 0) and crowded tables that need the search and the stash: the
        // stash holds exactly n − ν items (ν = maximum matching), and the table fails exactly
        // when n − ν exceeds the stash.
        let mut rng = blindjoin_testkit::rng(12);
        let mut outcomes = [0usize; 3];
        for round in 0..600 {
            let n = rng.random_range(0..120usize);
            let k = rng.random_range(2..=3usize);
            let b = rng.random_range(1..(2 * n + 4));
            let s = rng.random_range(0..4usize);
            let params = CuckooParams::new(k, b, s)
                .unwrap()
                .with_max_evictions([0, 5, 200][round % 3]);
            let items = random_items(&mut rng, n);
            let hasher = BinHasher::new(Block(rng.random()), k, b).unwrap();
            let hashed = hasher.hash_items(&items).unwrap();
            let must_stash = n - max_matching(&hashed);
            match CuckooTable::from_hashed(&params, hashed) {
                Ok(t) => {
                    check_invariants(&t);
                    assert_eq!(t.stash().len(), must_stash);
                    outcomes[usize::from(must_stash > 0)] += 1;
                }
                Err(HashingError::CuckooFailed {
                    items: i,
                    bins,
                    stash,
                    homeless,
                    bound,
                }) => {
                    assert_eq!(bound, FailureBound::Unknown);
                    assert_eq!((i, bins, stash), (n, b, s));
                    assert!((homeless as usize) < n);
                    assert!(
                        must_stash > s,
                        "failed although only {must_stash} must be stashed"
                    );
                    outcomes[2] += 1;
                }
                Err(e) => panic!("unexpected {e}"),
            }
        }
        // All three outcomes occurred: no stash, some stash, failure.
        assert!(outcomes.iter().all(|&c| c > 20), "{outcomes:?}");
    }

    #[test]
    fn a_failure_reports_the_probability_its_parameters_give() {
        // PSZ's table for 7 items (17 bins, a stash of 4) whose bins all lie in {0, 1}: two
        // fit, four go to the stash, one is left over. KMW's n^-4 is 2^-11 at n = 7.
        let params = CuckooParams::psz(7).unwrap();
        assert_eq!(params.failure(), FailureBound::About { log2: 11 });
        let hashed =
            HashedItems::from_raw(2, 17, vec![0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1]).unwrap();
        let e = CuckooTable::from_hashed(&params, hashed).unwrap_err();
        assert!(
            matches!(
                e,
                HashingError::CuckooFailed {
                    items: 7,
                    bins: 17,
                    stash: 4,
                    bound: FailureBound::About { log2: 11 },
                    ..
                }
            ),
            "{e}"
        );
        let shown = blindjoin_core::Error::from(e).to_string();
        assert!(
            shown.contains("about 2^-11") && shown.contains("run again"),
            "{shown}"
        );
        assert!(
            !shown.contains("2^-λ") && !shown.contains("2^-40"),
            "{shown}"
        );
        // The bounds of the two parameter sets.
        assert_eq!(
            CuckooParams::psz(4).unwrap().failure(),
            FailureBound::Impossible
        );
        assert_eq!(
            CuckooParams::psz(1 << 10).unwrap().failure(),
            FailureBound::About { log2: 40 }
        );
        assert_eq!(
            CuckooParams::kkrt(1000, 40).unwrap().failure(),
            FailureBound::About { log2: 40 }
        );
        assert_eq!(
            CuckooParams::new(2, 10, 0).unwrap().failure(),
            FailureBound::Unknown
        );
        // A large table's failure is reported as a bug to report, with its bound.
        let e = HashingError::CuckooFailed {
            items: 1 << 20,
            bins: 1 << 21,
            stash: 4,
            homeless: 3,
            bound: FailureBound::About { log2: 80 },
        };
        let shown = blindjoin_core::Error::from(e).to_string();
        assert!(
            shown.contains("about 2^-80") && shown.contains("please report"),
            "{shown}"
        );
    }

    #[test]
    fn forced_collisions_use_eviction_then_stash() {
        // Five items whose two bins are all in {0, 1, 2} of 10 bins: three fit, two go to the
        // stash, whatever the walk does.
        let bins = vec![0, 1, 1, 2, 2, 0, 0, 2, 1, 0];
        let hashed = HashedItems::from_raw(2, 10, bins).unwrap();
        let params = CuckooParams::new(2, 10, 2).unwrap();
        let t = CuckooTable::from_hashed(&params, hashed).unwrap();
        check_invariants(&t);
        assert_eq!(t.stash().len(), 2);
        assert_eq!(t.iter().flatten().count(), 3);
        // A path that the last item must push along: item i < m has bins {i, i+1, …}, item m
        // only bin 0, and there are m + 1 bins. Items 0..m fill bins 0..m-1 at once; item m
        // evicts item 0, which evicts item 1, …, until item m-1 reaches bin m. The walk
        // (bound 1000) does it alone; with bounds 0 and 3 the search finishes the job.
        let m = 50u32;
        for k in [2usize, 3] {
            let mut raw = Vec::new();
            for i in 0..m {
                raw.extend([i, i + 1, i + 1].iter().take(k));
            }
            raw.extend(std::iter::repeat_n(0, k));
            let hashed = HashedItems::from_raw(k, m as usize + 1, raw).unwrap();
            for bound in [0, 3, 1000] {
                let params = CuckooParams::new(k, m as usize + 1, 0)
                    .unwrap()
                    .with_max_evictions(bound);
                let t = CuckooTable::from_hashed(&params, hashed.clone()).unwrap();
                check_invariants(&t);
                assert!(t.stash().is_empty());
                assert_eq!(t.bin(0).map(|e| e.item), Some(m));
                assert_eq!(t.bin(m as usize).map(|e| e.item), Some(m - 1));
            }
        }
    }

    #[test]
    fn full_stash_is_a_typed_error() {
        // Seven items all hashing to bins {0, 1}: two bins + a stash of 4 hold six.
        let raw: Vec<u32> = (0..7).flat_map(|_| [0u32, 1]).collect();
        let hashed = HashedItems::from_raw(2, 8, raw).unwrap();
        let params = CuckooParams::new(2, 8, 4).unwrap();
        let err = CuckooTable::from_hashed(&params, hashed).unwrap_err();
        assert!(matches!(
            err,
            HashingError::CuckooFailed {
                items: 7,
                bins: 8,
                stash: 4,
                ..
            }
        ));
        // Stash-less three-hash table: four items on bins {0, 1, 2}.
        let raw: Vec<u32> = (0..4).flat_map(|_| [0u32, 1, 2]).collect();
        let hashed = HashedItems::from_raw(3, 8, raw).unwrap();
        let err =
            CuckooTable::from_hashed(&CuckooParams::new(3, 8, 0).unwrap(), hashed).unwrap_err();
        assert!(matches!(err, HashingError::CuckooFailed { stash: 0, .. }));
        assert!(err.to_string().contains("4 items do not fit into 8 bins"));
        // Real hashes into a single bin: the third of three items finds no place.
        let items: Vec<Block> = (0..3u128).map(Block).collect();
        let params = CuckooParams::new(2, 1, 1).unwrap();
        assert!(matches!(
            CuckooTable::build(&params, Block(5), &items),
            Err(HashingError::CuckooFailed {
                items: 3,
                bins: 1,
                stash: 1,
                ..
            })
        ));
    }

    #[test]
    fn equal_hash_values_place_the_item_once() {
        // Item 0 has h_0 = h_1 = h_2 = 3; item 1 has h_0 = h_1 = 3, h_2 = 5.
        let hashed = HashedItems::from_raw(3, 8, vec![3, 3, 3, 3, 3, 5]).unwrap();
        let t = CuckooTable::from_hashed(&CuckooParams::new(3, 8, 0).unwrap(), hashed).unwrap();
        check_invariants(&t);
        assert_eq!(t.bin(3), Some(CuckooEntry { item: 0, hash: 0 }));
        assert_eq!(t.bin(5), Some(CuckooEntry { item: 1, hash: 2 }));
        assert_eq!(t.iter().flatten().count(), 2);
    }

    #[test]
    fn mismatched_hashed_items_are_rejected() {
        let hashed = HashedItems::from_raw(2, 8, vec![0, 1]).unwrap();
        assert!(matches!(
            CuckooTable::from_hashed(&CuckooParams::new(3, 8, 0).unwrap(), hashed.clone()),
            Err(HashingError::InvalidParam {
                field: "hashed",
                ..
            })
        ));
        assert!(matches!(
            CuckooTable::from_hashed(&CuckooParams::new(2, 9, 0).unwrap(), hashed),
            Err(HashingError::InvalidParam {
                field: "hashed",
                ..
            })
        ));
    }
}
