//! Bloom filters and garbled Bloom filters: DCW13 §3.2 and §4.1 (Alg. 1-2), the filters of the
//! `gbf` and `rgbf` protocols.
//!
//! # Parameters ([`bloom_bits`])
//!
//! An (m, n, k, H) Bloom filter holds at most n elements in m bits with k hash functions. With
//! k = κ (PSZ14 §4.1: k = log2(1/ε) for false-positive rate ε = 2^-κ; footnote 4 asks for κ, not
//! the statistical λ, because a party could search for elements that map to 1-bits) the optimal
//! m is k·n·log2 e ≈ 1.44·k·n (DCW13 §3.2, PSZ14 §4.1). DCW13 §6.2 says "m = kn log2 e" and gives
//! the example m = 120,795,960 at k = 80, n = 2^20; that value is not k·n·log2 e
//! (121,022,032) but ⌈1.44·k·n⌉ = 120,795,956 rounded up to whole bytes. We use that rule,
//! m = roundup8(⌈1.44·k·n⌉), computed in integers, so the example is reproduced exactly (test
//! `dcw_example_m`); it is 0.19% below k·n·log2 e, which changes the false-positive rate from
//! 2^-k to 2^-0.9981·k, at k = 128 from 2^-128 to 2^-127.8.
//!
//! # Hash functions ([`BloomHasher`])
//!
//! k keyed hash functions h_0..h_{k-1} onto [0, m), a PRF (fixed-key AES in the random-permutation
//! model) and not MurmurHash (DCW13 footnote 2 allows a non-cryptographic hash, but its own
//! security proof models the h_i as random oracles, and PSZ14 footnote 4's brute-force argument
//! needs them unpredictable): E = π_1(x) ⊕ x, then blocks B_c = π_2(E ⊕ c) ⊕ E ⊕ c for
//! c = 0..⌈k/3⌉, and h_i(x) is the 42-bit slice i mod 3 of B_{⌊i/3⌋}, mapped to [0, m) by
//! multiply-shift (relative bias at most m/2^42 < 2^-10). Both permutations are keyed by seeds
//! the protocol derives from the session id, so the functions are fresh in every run.
//!
//! **Repeated indices.** The k values of one element may repeat (about k²/2m pairs per element,
//! 1/(2.9·n) at optimal m, so about 0.35 elements per filter have one). Every structure here
//! uses the *distinct* positions of an element, in order of first occurrence
//! ([`BloomHasher::positions`]): the Bloom filter, the GBF's build and query, and the random
//! GBF's XOR. DCW13 Alg. 1 as printed does not: when a later h_i(x) equals the slot it reserved
//! for the final share, it writes a random share into that slot, XORs it into the final share
//! and then overwrites the slot, so the query XORs that slot twice and x is lost (about
//! (k−1)/(1.44·k) ≈ 0.69 members per build at any n). The test
//! `printed_alg1_loses_members_with_repeated_indices` shows the printed algorithm losing members
//! on a filter with forced repeats and ours keeping every one.
//!
//! # The garbled Bloom filter ([`GarbledBloomFilter`])
//!
//! An (m, n, k, H, ℓ) GBF is m strings of ℓ bits such that the XOR of the strings at an
//! element's positions is the element itself (DCW13 §4.1). [`GarbledBloomFilter::build`]
//! follows Alg. 1 on distinct positions: for each element in order, the first position whose
//! slot is still empty is reserved for the final share, every other empty slot gets a random
//! share, occupied slots' shares are reused, and the reserved slot receives the element XOR all
//! the others; empty slots left at the end are random. If all of an element's slots are already
//! occupied (Thm 1: probability about 2^-k) the build fails with
//! [`HashingError::GbfFull`], never by skipping the element.
//!
//! *Representation.* A random share is a pseudorandom function of its position,
//! F(j) = π_3(j) (AES under a fresh secret key), so only the n final shares are stored, with one
//! bit of occupancy and one "is final" bit per slot: m/4 bytes plus 32 bytes per element instead
//! of m·ℓ bits (at n = 2^20 and k = 128: 48 MiB and 32 MiB instead of 2 GiB), and the strings
//! of any range of positions are produced on demand ([`GarbledBloomFilter::fill`]) to stream
//! the filter chunk by chunk. Every slot that is not a final share is an independent
//! pseudorandom string, as the random strings of Alg. 1 are, so the filter has Alg. 1's
//! distribution up to the PRF's distinguishing advantage.
//!
//! # Positions by chunk ([`BloomPairs`])
//!
//! The protocols walk the m positions in chunks of the OT extension (2^16 positions) and need,
//! per chunk, which of their elements have a position in it. [`BloomPairs`] lists the
//! (offset, element) pairs of a range of chunks, grouped by chunk: 6 bytes per pair, k·n pairs
//! for all chunks, so a protocol covers the m positions in passes of a bounded number of
//! pairs ([`BloomPairs::passes`]) instead of holding the filter. The elements are split into
//! contiguous groups, one per worker thread; each group lists its pairs in element order, so
//! per-element accumulators can be updated in parallel, each group on its own range.

use super::error::HashingError;
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::block::Block;
use rayon::prelude::*;
use std::ops::Range;

/// Most hash functions per filter (κ ≤ 256).
pub const MAX_K: usize = 256;

/// Most bits (positions) per filter: positions are `u32`.
pub const MAX_BITS: u64 = u32::MAX as u64;

/// Bits of a hash block that one position reads (three per block).
const SLICE_BITS: u32 = 42;
const SLICE_MASK: u128 = (1u128 << SLICE_BITS) - 1;

/// m for k hash functions and n elements: roundup8(⌈1.44·k·n⌉) (see the module doc; DCW13 §6.2's
/// example rule), 0 for n = 0.
pub fn bloom_bits(k: u32, n: u64) -> u64 {
    let bits = (144 * u128::from(k) * u128::from(n)).div_ceil(100);
    (bits.div_ceil(8) * 8) as u64
}

/// The exact optimum k·n·log2 e, rounded up (DCW13 §6.2's formula, for comparison with
/// [`bloom_bits`]).
pub fn optimal_bits(k: u32, n: u64) -> u64 {
    (f64::from(k) * n as f64 * std::f64::consts::LOG2_E).ceil() as u64
}

/// The k hash functions h_0..h_{k-1} of a filter of m bits (see the module doc).
#[derive(Clone, Debug)]
pub struct BloomHasher {
    item: FixedKeyAes,
    index: FixedKeyAes,
    k: usize,
    m: u64,
}

/// Scratch space for [`BloomHasher::positions`]: the raw and the distinct positions of one
/// element and a small table that finds repeats. One per thread; reused from element to element.
#[derive(Clone)]
pub struct PositionScratch {
    blocks: Vec<Block>,
    raw: Vec<u32>,
    distinct: Vec<u32>,
    /// Open addressing over 2·MAX_K slots holding position + 1 (0 = empty); cleared after each
    /// element by visiting the slots it filled.
    table: Vec<u32>,
    filled: Vec<u16>,
}

impl Default for PositionScratch {
    fn default() -> Self {
        PositionScratch {
            blocks: Vec::with_capacity(MAX_K.div_ceil(3)),
            raw: Vec::with_capacity(MAX_K),
            distinct: Vec::with_capacity(MAX_K),
            table: vec![0; 2 * MAX_K],
            filled: Vec::with_capacity(MAX_K),
        }
    }
}

impl BloomHasher {
    /// k hash functions onto m positions, keyed by `seed` (derived from the session id).
    ///
    /// Errors: k outside 1..=[`MAX_K`], m outside 1..=[`MAX_BITS`].
    pub fn new(seed: Block, k: usize, m: u64) -> Result<Self, HashingError> {
        if !(1..=MAX_K).contains(&k) {
            return Err(HashingError::invalid(
                "bloom_hashes",
                format!("{k} hash functions; 1 to {MAX_K} are supported"),
            ));
        }
        if !(1..=MAX_BITS).contains(&m) {
            return Err(HashingError::invalid(
                "bloom_bits",
                format!("a filter of {m} bits; 1 to 2^32 - 1 are supported"),
            ));
        }
        let key = |label: u128| {
            let mut b = [seed ^ Block(label)];
            FixedKeyAes::new(seed).permute(&mut b);
            b[0]
        };
        Ok(BloomHasher {
            item: FixedKeyAes::new(key(1)),
            index: FixedKeyAes::new(key(2)),
            k,
            m,
        })
    }

    /// k, the number of hash functions.
    pub fn k(&self) -> usize {
        self.k
    }

    /// m, the number of positions.
    pub fn m(&self) -> u64 {
        self.m
    }

    /// h_0(x), …, h_{k-1}(x), repeats included, into `scratch.raw`.
    fn raw_into(&self, x: Block, s: &mut PositionScratch) {
        let mut e = [x];
        self.item.permute(&mut e);
        let e = e[0] ^ x;
        let nb = self.k.div_ceil(3);
        s.blocks.clear();
        s.blocks.extend((0..nb).map(|c| e ^ Block(c as u128)));
        let tweaked: [Block; MAX_K.div_ceil(3)] = {
            let mut t = [Block::ZERO; MAX_K.div_ceil(3)];
            t[..nb].copy_from_slice(&s.blocks);
            t
        };
        self.index.permute(&mut s.blocks);
        s.raw.clear();
        let m = u128::from(self.m);
        for (c, b) in s.blocks.iter().enumerate() {
            let h = (*b ^ tweaked[c]).0;
            for slice in 0..3 {
                if s.raw.len() == self.k {
                    break;
                }
                let v = (h >> (SLICE_BITS * slice)) & SLICE_MASK;
                s.raw.push(((v * m) >> SLICE_BITS) as u32);
            }
        }
    }

    /// All k values h_i(x) with repeats, in order i = 0..k: what DCW13 Alg. 1 as printed uses.
    /// The protocols use [`positions`](Self::positions).
    pub fn raw_positions(&self, x: Block) -> Vec<u32> {
        let mut s = PositionScratch::default();
        self.raw_into(x, &mut s);
        s.raw.clone()
    }

    /// The distinct positions of x among h_0(x), …, h_{k-1}(x), in order of first occurrence.
    pub fn positions<'s>(&self, x: Block, s: &'s mut PositionScratch) -> &'s [u32] {
        self.raw_into(x, s);
        s.distinct.clear();
        s.filled.clear();
        let mask = s.table.len() - 1;
        for &p in &s.raw {
            // Positions are pseudorandom: their low bits index the table.
            let mut slot = (p as usize).wrapping_mul(0x9E37_79B9) >> 7 & mask;
            loop {
                let v = s.table[slot];
                if v == 0 {
                    s.table[slot] = p + 1;
                    s.filled.push(slot as u16);
                    s.distinct.push(p);
                    break;
                }
                if v == p + 1 {
                    break;
                }
                slot = (slot + 1) & mask;
            }
        }
        for &slot in &s.filled {
            s.table[usize::from(slot)] = 0;
        }
        &s.distinct
    }
}

/// A plain (m, n, k, H) Bloom filter: m bits, an element's distinct positions set to 1.
#[derive(Clone, Debug)]
pub struct BloomFilter {
    bits: Vec<u64>,
    hasher: BloomHasher,
}

impl BloomFilter {
    /// The filter of `items` under `hasher`.
    pub fn build(hasher: &BloomHasher, items: &[Block]) -> Self {
        let mut bits = vec![0u64; hasher.m.div_ceil(64) as usize];
        let mut s = PositionScratch::default();
        for &x in items {
            for &p in hasher.positions(x, &mut s) {
                bits[p as usize / 64] |= 1 << (p % 64);
            }
        }
        BloomFilter {
            bits,
            hasher: hasher.clone(),
        }
    }

    /// Bit j.
    pub fn bit(&self, j: u64) -> bool {
        self.bits[(j / 64) as usize] >> (j % 64) & 1 == 1
    }

    /// Whether every position of x is 1 (true for every member; for a non-member with
    /// probability about 2^-k at optimal m).
    pub fn contains(&self, x: Block) -> bool {
        let mut s = PositionScratch::default();
        self.hasher
            .positions(x, &mut s)
            .iter()
            .all(|&p| self.bit(u64::from(p)))
    }

    /// The number of 1 bits.
    pub fn ones(&self) -> u64 {
        self.bits.iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

/// An (m, n, k, H, ℓ) garbled Bloom filter (DCW13 §4.1, Alg. 1 on distinct positions), with
/// random shares produced by a PRF of the position (see the module doc).
pub struct GarbledBloomFilter {
    m: u64,
    /// The low ℓ bits of a block.
    mask: u128,
    /// F(j) = π_3(j): the random shares.
    filler: FixedKeyAes,
    occupied: Vec<u64>,
    is_final: Vec<u64>,
    /// The final shares, in order of position once built.
    finals: Vec<(u32, Block)>,
}

impl std::fmt::Debug for GarbledBloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GarbledBloomFilter")
            .field("m", &self.m)
            .field("finals", &self.finals.len())
            .finish_non_exhaustive()
    }
}

/// Elements whose positions are computed in parallel ahead of the sequential fill.
const BUILD_BATCH: usize = 4096;

/// An open-addressing index from final-share positions to their entries, for the build.
struct FinalIndex {
    slots: Vec<u32>,
    mask: usize,
}

impl FinalIndex {
    fn new(n: usize) -> Self {
        let len = (2 * n).next_power_of_two().max(16);
        FinalIndex {
            slots: vec![u32::MAX; len],
            mask: len - 1,
        }
    }

    fn slot(&self, pos: u32) -> usize {
        (pos as usize).wrapping_mul(0x9E37_79B9) >> 5 & self.mask
    }

    fn insert(&mut self, pos: u32, entry: u32) {
        let mut s = self.slot(pos);
        while self.slots[s] != u32::MAX {
            s = (s + 1) & self.mask;
        }
        self.slots[s] = entry;
    }

    fn get(&self, pos: u32, finals: &[(u32, Block)]) -> Block {
        let mut s = self.slot(pos);
        loop {
            let e = self.slots[s];
            // Only positions marked final are looked up, so the entry is there.
            if e == u32::MAX {
                return Block::ZERO;
            }
            if finals[e as usize].0 == pos {
                return finals[e as usize].1;
            }
            s = (s + 1) & self.mask;
        }
    }
}

#[inline]
fn get_bit(bits: &[u64], j: u32) -> bool {
    bits[j as usize / 64] >> (j % 64) & 1 == 1
}

#[inline]
fn set_bit(bits: &mut [u64], j: u32) {
    bits[j as usize / 64] |= 1 << (j % 64);
}

impl GarbledBloomFilter {
    /// Builds the GBF of `items` (element i stored as `values[i]`, its ℓ-bit encoding, in the
    /// low `ell_bits` bits) under `hasher`, with random shares keyed by `secret` (fresh from
    /// the caller's CSPRNG). Element positions are computed in parallel batches on the current
    /// rayon pool; the fill is sequential (share reuse makes it depend on the order, DCW13 §6.1,
    /// PSZ14 §4.2).
    ///
    /// Errors: [`HashingError::GbfFull`] if all slots of an element are already taken (Thm 1,
    /// probability about 2^-k); `InvalidParam` if the lengths differ, ℓ is outside 1..=128 or
    /// there are more than 2^32 − 1 elements.
    pub fn build(
        hasher: &BloomHasher,
        items: &[Block],
        values: &[Block],
        ell_bits: u32,
        secret: Block,
    ) -> Result<Self, HashingError> {
        if items.len() != values.len() {
            return Err(HashingError::invalid(
                "values",
                format!("{} values for {} items", values.len(), items.len()),
            ));
        }
        if !(1..=128).contains(&ell_bits) {
            return Err(HashingError::invalid(
                "ell",
                format!("shares of {ell_bits} bits; 1 to 128 are supported"),
            ));
        }
        if items.len() >= u32::MAX as usize {
            return Err(HashingError::TooManyItems {
                items: items.len(),
                max: u32::MAX as usize - 1,
            });
        }
        let mask = if ell_bits == 128 {
            u128::MAX
        } else {
            (1u128 << ell_bits) - 1
        };
        let words = hasher.m.div_ceil(64) as usize;
        let mut g = GarbledBloomFilter {
            m: hasher.m,
            mask,
            filler: FixedKeyAes::new(secret),
            occupied: vec![0; words],
            is_final: vec![0; words],
            finals: Vec::with_capacity(items.len()),
        };
        let mut index = FinalIndex::new(items.len());
        let mut positions: Vec<Vec<u32>> = Vec::new();
        let mut randoms = Vec::with_capacity(MAX_K);
        let mut fresh = Vec::with_capacity(MAX_K);
        for (b, batch) in items.chunks(BUILD_BATCH).enumerate() {
            batch
                .par_iter()
                .map_init(PositionScratch::default, |s, &x| {
                    hasher.positions(x, s).to_vec()
                })
                .collect_into_vec(&mut positions);
            for (k, pos) in positions.iter().enumerate() {
                let i = b * BUILD_BATCH + k;
                let mut share = values[i].0 & mask;
                let mut reserved = None;
                randoms.clear();
                fresh.clear();
                for &j in pos {
                    if !get_bit(&g.occupied, j) {
                        if reserved.is_none() {
                            reserved = Some(j);
                        } else {
                            fresh.push(j);
                        }
                    } else if get_bit(&g.is_final, j) {
                        share ^= index.get(j, &g.finals).0;
                    } else {
                        randoms.push(j);
                    }
                }
                let Some(slot) = reserved else {
                    return Err(HashingError::GbfFull {
                        item: i,
                        items: items.len(),
                        bits: hasher.m,
                        k: hasher.k,
                    });
                };
                for &j in &fresh {
                    set_bit(&mut g.occupied, j);
                }
                randoms.extend_from_slice(&fresh);
                share ^= g.random_shares_xor(&randoms);
                set_bit(&mut g.occupied, slot);
                set_bit(&mut g.is_final, slot);
                index.insert(slot, g.finals.len() as u32);
                g.finals.push((slot, Block(share)));
            }
        }
        g.finals.par_sort_unstable_by_key(|&(p, _)| p);
        Ok(g)
    }

    /// The XOR of the random shares F(j) of `positions`, truncated to ℓ bits.
    fn random_shares_xor(&self, positions: &[u32]) -> u128 {
        let mut buf = [Block::ZERO; MAX_K];
        let buf = &mut buf[..positions.len()];
        for (b, &j) in buf.iter_mut().zip(positions) {
            *b = Block(u128::from(j));
        }
        self.filler.permute(buf);
        buf.iter().fold(0u128, |a, b| a ^ b.0) & self.mask
    }

    /// m, the number of slots.
    pub fn m(&self) -> u64 {
        self.m
    }

    /// The number of final shares (= elements).
    pub fn len(&self) -> usize {
        self.finals.len()
    }

    /// Whether the filter holds no element.
    pub fn is_empty(&self) -> bool {
        self.finals.is_empty()
    }

    /// Slot j's string (ℓ bits in the low bits of a block).
    pub fn value(&self, j: u64) -> Block {
        let mut out = [Block::ZERO];
        self.fill(j, &mut out);
        out[0]
    }

    /// The strings of slots `first .. first + out.len()` into `out`: the random shares by one
    /// batch of AES, then the final shares of the range over them.
    pub fn fill(&self, first: u64, out: &mut [Block]) {
        for (k, o) in out.iter_mut().enumerate() {
            *o = Block(u128::from(first) + k as u128);
        }
        self.filler.permute(out);
        let mask = Block(self.mask);
        out.iter_mut().for_each(|o| *o &= mask);
        let end = first + out.len() as u64;
        let start = self.finals.partition_point(|&(p, _)| u64::from(p) < first);
        for &(p, v) in self.finals[start..]
            .iter()
            .take_while(|&&(p, _)| u64::from(p) < end)
        {
            out[(u64::from(p) - first) as usize] = v;
        }
    }

    /// QueryGBF (DCW13 Alg. 2) on distinct positions: whether the XOR of x's slots is `value`
    /// (x's ℓ-bit encoding).
    pub fn query(&self, hasher: &BloomHasher, x: Block, value: Block) -> bool {
        let mut s = PositionScratch::default();
        let got = hasher
            .positions(x, &mut s)
            .iter()
            .fold(Block::ZERO, |a, &j| a ^ self.value(u64::from(j)));
        got.0 == value.0 & self.mask
    }
}

/// The (offset, element) pairs of a range of chunks of positions, grouped by chunk (see the
/// module doc): for chunk c, the elements with a position in `c·chunk_len .. (c+1)·chunk_len`
/// and that position's offset in the chunk, each distinct position of an element once.
#[derive(Debug)]
pub struct BloomPairs {
    chunks: Range<usize>,
    groups: Vec<PairGroup>,
}

/// The pairs of one contiguous range of elements, one list per chunk of the range.
#[derive(Debug)]
struct PairGroup {
    first_item: usize,
    items_len: usize,
    offsets: Vec<Vec<u16>>,
    items: Vec<Vec<u32>>,
}

/// The pairs of one chunk in one group: element indices (increasing) and offsets.
#[derive(Clone, Copy, Debug)]
pub struct ChunkPairs<'a> {
    /// The first element of the group (the accumulators of a group are
    /// `first_item .. first_item + items_len`).
    pub first_item: usize,
    /// Elements in the group.
    pub items_len: usize,
    /// Offsets in the chunk.
    pub offsets: &'a [u16],
    /// Element indices (global), in increasing order.
    pub items: &'a [u32],
}

impl BloomPairs {
    /// Most chunks of `chunk_len` positions (at most 2^16) per pass so that one pass holds at
    /// most about `max_pairs` pairs: the chunk ranges of the passes over `0..chunks`. The
    /// expected number of pairs per chunk is k·n·chunk_len/m; the ranges are equal in length.
    pub fn passes(
        k: usize,
        n: usize,
        m: u64,
        chunk_len: usize,
        max_pairs: u64,
    ) -> Vec<Range<usize>> {
        let chunks = m.div_ceil(chunk_len as u64) as usize;
        let pairs = (k as u64).saturating_mul(n as u64);
        let count = pairs
            .div_ceil(max_pairs.max(1))
            .clamp(1, chunks.max(1) as u64) as usize;
        let per = chunks.div_ceil(count).max(1);
        (0..count)
            .map(|p| (p * per).min(chunks)..((p + 1) * per).min(chunks))
            .filter(|r| !r.is_empty() || chunks == 0)
            .collect()
    }

    /// The pairs of `items` in chunks `chunks` of `chunk_len` (≤ 2^16) positions, in `groups`
    /// contiguous groups of elements built in parallel. Each chunk's lists are reserved at their
    /// expected length plus six standard deviations, so they rarely grow.
    pub fn build(
        hasher: &BloomHasher,
        items: &[Block],
        chunks: Range<usize>,
        chunk_len: usize,
        groups: usize,
    ) -> Self {
        debug_assert!(chunk_len <= 1 << 16 && chunk_len > 0);
        let groups = groups.clamp(1, items.len().max(1));
        let per = items.len().div_ceil(groups).max(1);
        let lo = (chunks.start * chunk_len) as u64;
        let hi = (chunks.end * chunk_len) as u64;
        let nchunks = chunks.len();
        let ranges: Vec<Range<usize>> = (0..groups)
            .map(|g| (g * per).min(items.len())..((g + 1) * per).min(items.len()))
            .collect();
        let groups = ranges
            .into_par_iter()
            .map(|r| {
                let mut s = PositionScratch::default();
                let mean = (hasher.k * r.len()) as f64 * chunk_len as f64 / hasher.m as f64;
                let reserve = (mean + 6.0 * mean.sqrt()) as usize + 16;
                let mut offsets: Vec<Vec<u16>> =
                    (0..nchunks).map(|_| Vec::with_capacity(reserve)).collect();
                let mut its: Vec<Vec<u32>> =
                    (0..nchunks).map(|_| Vec::with_capacity(reserve)).collect();
                for (i, &x) in items[r.clone()].iter().enumerate() {
                    for &p in hasher.positions(x, &mut s) {
                        let p = u64::from(p);
                        if p >= lo && p < hi {
                            let c = ((p - lo) / chunk_len as u64) as usize;
                            offsets[c].push(((p - lo) % chunk_len as u64) as u16);
                            its[c].push((r.start + i) as u32);
                        }
                    }
                }
                PairGroup {
                    first_item: r.start,
                    items_len: r.len(),
                    offsets,
                    items: its,
                }
            })
            .collect();
        BloomPairs { chunks, groups }
    }

    /// The chunk range this value covers.
    pub fn chunks(&self) -> Range<usize> {
        self.chunks.clone()
    }

    /// The pairs of chunk `c` (absolute chunk number, inside [`chunks`](Self::chunks)), one
    /// entry per group of elements, groups in element order.
    pub fn chunk(&self, c: usize) -> impl Iterator<Item = ChunkPairs<'_>> + '_ {
        let k = c - self.chunks.start;
        self.groups.iter().map(move |g| ChunkPairs {
            first_item: g.first_item,
            items_len: g.items_len,
            offsets: &g.offsets[k],
            items: &g.items[k],
        })
    }

    /// The element ranges of the groups, in order (they partition the elements).
    pub fn group_ranges(&self) -> Vec<Range<usize>> {
        self.groups
            .iter()
            .map(|g| g.first_item..g.first_item + g.items_len)
            .collect()
    }

    /// Pairs held.
    pub fn len(&self) -> usize {
        self.groups
            .iter()
            .flat_map(|g| &g.items)
            .map(Vec::len)
            .sum()
    }

    /// Whether no pair is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn items(n: usize, seed: u128) -> Vec<Block> {
        (0..n as u128)
            .map(|i| Block((i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) ^ seed))
            .collect()
    }

    #[test]
    fn dcw_example_m() {
        // DCW13 §6.2: k = 80, n = 2^20, m = 120,795,960 = roundup8(⌈1.44·k·n⌉), while
        // k·n·log2 e is 121,022,032.
        assert_eq!(bloom_bits(80, 1 << 20), 120_795_960);
        assert_eq!(optimal_bits(80, 1 << 20), 121_022_032);
        // The sizes derived from the same rule (spec §2.7).
        assert_eq!(bloom_bits(80, 1 << 18), 30_198_992);
        assert_eq!(bloom_bits(256, 1 << 18), 96_636_768);
        assert_eq!(bloom_bits(128, 1 << 20), 193_273_536);
        assert_eq!(bloom_bits(256, 1 << 20), 386_547_064);
        assert_eq!(bloom_bits(128, 0), 0);
        assert_eq!(bloom_bits(128, 1), 192);
        assert!(bloom_bits(128, 1 << 24) <= MAX_BITS);
        assert!(bloom_bits(128, 1 << 25) > MAX_BITS);
    }

    #[test]
    fn positions_are_the_distinct_hash_values_in_first_order() {
        let h = BloomHasher::new(Block(5), 128, 300).unwrap();
        let mut s = PositionScratch::default();
        let mut repeats = 0;
        for x in items(500, 1) {
            let raw = h.raw_positions(x);
            assert_eq!(raw.len(), 128);
            assert!(raw.iter().all(|&p| u64::from(p) < 300));
            let mut seen = BTreeSet::new();
            let want: Vec<u32> = raw.iter().copied().filter(|p| seen.insert(*p)).collect();
            repeats += raw.len() - want.len();
            assert_eq!(h.positions(x, &mut s), &want[..]);
        }
        // m = 300 forces many repeats.
        assert!(repeats > 1000, "{repeats}");
        // Another seed, other functions.
        let h2 = BloomHasher::new(Block(6), 128, 300).unwrap();
        assert_ne!(h.raw_positions(Block(9)), h2.raw_positions(Block(9)));
        assert!(BloomHasher::new(Block(5), 0, 300).is_err());
        assert!(BloomHasher::new(Block(5), 257, 300).is_err());
        assert!(BloomHasher::new(Block(5), 8, 0).is_err());
        assert!(BloomHasher::new(Block(5), 8, 1 << 32).is_err());
    }

    #[test]
    fn bloom_filter_has_no_false_negatives_and_about_2_to_the_minus_k_false_positives() {
        let (k, n) = (10usize, 2000usize);
        let h = BloomHasher::new(Block(3), k, bloom_bits(k as u32, n as u64)).unwrap();
        let xs = items(n, 2);
        let bf = BloomFilter::build(&h, &xs);
        assert!(xs.iter().all(|&x| bf.contains(x)));
        // About half the bits are 1 at optimal m.
        let ones = bf.ones() as f64 / h.m() as f64;
        assert!((0.45..0.55).contains(&ones), "{ones}");
        let fp = items(200_000, 77)
            .iter()
            .filter(|&&y| bf.contains(y))
            .count();
        // 2^-10 · 200,000 ≈ 195 expected.
        assert!((100..400).contains(&fp), "{fp}");
    }

    /// DCW13 Alg. 1 exactly as printed: all k values, repeats included.
    fn printed_alg1(h: &BloomHasher, xs: &[Block], rng: &mut u128) -> Option<Vec<Option<u128>>> {
        let mut g: Vec<Option<u128>> = vec![None; h.m() as usize];
        let mut next = || {
            *rng = rng
                .wrapping_mul(0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645)
                .wrapping_add(1);
            *rng
        };
        for &x in xs {
            let mut empty: Option<usize> = None;
            let mut fin = x.0;
            for j in h.raw_positions(x) {
                let j = j as usize;
                match g[j] {
                    None => {
                        if empty.is_none() {
                            empty = Some(j);
                        } else {
                            let r = next();
                            g[j] = Some(r);
                            fin ^= r;
                        }
                    }
                    Some(v) => fin ^= v,
                }
            }
            g[empty?] = Some(fin);
        }
        Some(g)
    }

    #[test]
    fn printed_alg1_loses_members_with_repeated_indices() {
        // m = 200 and k = 8: about 14% of the elements have a repeated index.
        let (k, m, n) = (8usize, 200u64, 10usize);
        let mut rng = 1u128;
        let (mut printed_lost, mut repeats) = (0, 0);
        for seed in 0..300u128 {
            let h = BloomHasher::new(Block(seed), k, m).unwrap();
            let xs = items(n, seed << 64);
            for &x in &xs {
                let mut s = PositionScratch::default();
                repeats += usize::from(h.positions(x, &mut s).len() < k);
            }
            let ours = GarbledBloomFilter::build(&h, &xs, &xs, 128, Block(seed + 1)).unwrap();
            for &x in &xs {
                assert!(ours.query(&h, x, x), "seed {seed}: a member is lost");
            }
            for y in items(20, (seed << 64) ^ 0xdead) {
                assert!(!ours.query(&h, y, y), "seed {seed}: a false positive");
            }
            let g = printed_alg1(&h, &xs, &mut rng).expect("no build failure at this load");
            for &x in &xs {
                let got = h
                    .raw_positions(x)
                    .iter()
                    .fold(0u128, |a, &j| a ^ g[j as usize].unwrap_or(0));
                printed_lost += usize::from(got != x.0);
            }
        }
        assert!(repeats > 100, "{repeats}");
        // The printed algorithm loses members; ours lost none (asserted above).
        assert!(printed_lost > 10, "{printed_lost}");
    }

    #[test]
    fn a_full_filter_is_a_build_error() {
        // 4 slots and 8 functions: the second element finds its slots taken.
        let h = BloomHasher::new(Block(1), 8, 4).unwrap();
        let xs = items(5, 3);
        match GarbledBloomFilter::build(&h, &xs, &xs, 64, Block(2)) {
            Err(HashingError::GbfFull {
                item,
                items,
                bits,
                k,
            }) => {
                assert!(item >= 1);
                assert_eq!((items, bits, k), (5, 4, 8));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn gbf_members_recover_their_value_and_fill_matches_value() {
        let (k, n) = (40usize, 3000usize);
        let m = bloom_bits(k as u32, n as u64);
        let h = BloomHasher::new(Block(11), k, m).unwrap();
        let xs = items(n, 5);
        let vals: Vec<Block> = items(n, 99);
        let g = GarbledBloomFilter::build(&h, &xs, &vals, 61, Block(12)).unwrap();
        assert_eq!(g.len(), n);
        let mask = Block((1u128 << 61) - 1);
        for (&x, &v) in xs.iter().zip(&vals) {
            assert!(g.query(&h, x, v));
            assert!(!g.query(&h, x, v ^ Block(1)));
        }
        assert!(items(2000, 7).iter().all(|&y| !g.query(&h, y, y)));
        // fill over ranges that cut anywhere equals slot by slot.
        let mut all = vec![Block::ZERO; m as usize];
        let mut at = 0u64;
        for len in [1usize, 7, 1000, 65_536].iter().cycle() {
            if at >= m {
                break;
            }
            let len = (*len as u64).min(m - at) as usize;
            g.fill(at, &mut all[at as usize..at as usize + len]);
            at += len as u64;
        }
        for j in (0..m).step_by(37) {
            assert_eq!(all[j as usize], g.value(j));
            assert_eq!(all[j as usize] & !mask, Block::ZERO);
        }
        // The XOR over every member's slots from the streamed strings.
        let mut s = PositionScratch::default();
        for (&x, &v) in xs.iter().zip(&vals) {
            let got = h
                .positions(x, &mut s)
                .iter()
                .fold(Block::ZERO, |a, &j| a ^ all[j as usize]);
            assert_eq!(got, v & mask);
        }
    }

    #[test]
    fn pairs_list_every_distinct_position_once_by_chunk() {
        let (k, n, chunk) = (16usize, 700usize, 1000usize);
        let m = 10_500u64;
        let h = BloomHasher::new(Block(4), k, m).unwrap();
        let xs = items(n, 8);
        let mut want = BTreeSet::new();
        let mut s = PositionScratch::default();
        for (i, &x) in xs.iter().enumerate() {
            for &p in h.positions(x, &mut s) {
                want.insert((p, i as u32));
            }
        }
        for groups in [1, 3] {
            for max_pairs in [1u64 << 40, 3000] {
                let passes = BloomPairs::passes(k, n, m, chunk, max_pairs);
                assert_eq!(passes.first().unwrap().start, 0);
                assert_eq!(passes.last().unwrap().end, 11);
                let mut got = BTreeSet::new();
                for pass in passes {
                    let pairs = BloomPairs::build(&h, &xs, pass.clone(), chunk, groups);
                    assert_eq!(pairs.group_ranges().len(), groups);
                    for c in pass {
                        for g in pairs.chunk(c) {
                            assert!(g.items.windows(2).all(|w| w[0] <= w[1]));
                            for (&o, &i) in g.offsets.iter().zip(g.items) {
                                assert!(
                                    (g.first_item..g.first_item + g.items_len)
                                        .contains(&(i as usize))
                                );
                                assert!(got.insert((c as u32 * chunk as u32 + u32::from(o), i)));
                            }
                        }
                    }
                }
                assert_eq!(got, want, "groups {groups}, max_pairs {max_pairs}");
            }
        }
        assert_eq!(BloomPairs::passes(16, 0, 0, chunk, 100), vec![0..0]);
    }
}
