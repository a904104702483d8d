//! What the two Bloom-filter protocols (`gbf`, `rgbf`) share: the filter parameters both
//! parties derive and check, the walk over the m positions chunk by chunk in passes of bounded
//! memory, and the per-element accumulators.

use crate::RunOptions;
use crate::hashing::bloom::{BloomHasher, BloomPairs, ChunkPairs, bloom_bits};
use blindjoin_core::channel::{Channel, recv_msg, send_msg};
use blindjoin_core::handshake::{Session, expect_same};
use blindjoin_core::{Block, Error, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Positions per chunk: one OT-extension call and one frame of u columns.
pub(crate) const CHUNK: usize = blindjoin_ot::ext::CHUNK;

/// Most (position, element) pairs a party holds at once (2^26: 384 MiB at 6 bytes a pair); more
/// pairs are covered in several passes over the positions.
pub(crate) const MAX_PASS_PAIRS: u64 = 1 << 26;

/// The filter parameters each party sends after the handshake (both derive them from the
/// sizes, κ and λ; a difference is reported naming the field).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Setup {
    /// m, the filter's positions.
    pub bits: u64,
    /// k, its hash functions.
    pub hashes: u32,
    /// ℓ in bits: the GBF's share length (`gbf`) or the masks' length (`rgbf`).
    pub ell: u32,
}

impl Setup {
    /// `Err(ParamMismatch)` naming the first field of the peer's setup (`self`) that differs
    /// from `ours`.
    pub(crate) fn check(&self, ours: &Setup) -> Result<()> {
        expect_same(&[
            ("bloom_bits", ours.bits, self.bits),
            (
                "bloom_hashes",
                u64::from(ours.hashes),
                u64::from(self.hashes),
            ),
            ("ell", u64::from(ours.ell), u64::from(self.ell)),
        ])
    }
}

/// What both parties of a Bloom-filter protocol derive from (κ, λ, n1, n2): k, m and the
/// protocol's ℓ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FilterParams {
    /// k, the hash functions.
    pub k: usize,
    /// m, the positions.
    pub m: u64,
    /// ℓ in bytes.
    pub ell: usize,
}

impl FilterParams {
    /// k and m from [`filter_size`], with the protocol's ℓ in bytes.
    pub(crate) fn new(kappa: u32, n1: u64, n2: u64, ell: usize) -> Result<Self> {
        let (k, m) = filter_size(kappa, n1, n2)?;
        Ok(FilterParams { k, m, ell })
    }

    /// The setup message of these parameters.
    pub(crate) fn setup(&self) -> Setup {
        Setup {
            bits: self.m,
            hashes: self.k as u32,
            ell: 8 * self.ell as u32,
        }
    }

    /// Chunks of positions.
    pub(crate) fn chunks(&self) -> usize {
        self.m.div_ceil(CHUNK as u64) as usize
    }

    /// Sends our setup as `ours`, receives the peer's as `theirs` and checks it against ours.
    pub(crate) fn exchange<C: Channel + ?Sized>(
        &self,
        ch: &mut C,
        ours: &'static str,
        theirs: &'static str,
    ) -> Result<()> {
        send_msg(ch, ours, &self.setup())?;
        let peer: Setup = recv_msg(ch, theirs, 64)?;
        peer.check(&self.setup())
    }
}

/// k = κ and m = roundup8(⌈1.44·k·max(n1, n2)⌉) (DCW13 §4.3 step 1 and §6.2, PSZ14 §4.1 and
/// Tab. 3's m ≈ 1.44κ·max(n1, n2)); `InvalidParam` if m exceeds the 2^32 − 1 positions a
/// filter supports (n above about 2^24 at κ = 128).
pub(crate) fn filter_size(kappa: u32, n1: u64, n2: u64) -> Result<(usize, u64)> {
    let m = bloom_bits(kappa, n1.max(n2));
    if m > crate::hashing::bloom::MAX_BITS {
        return Err(Error::InvalidParam {
            field: "set size",
            reason: format!(
                "a Bloom filter for {} items at k = {kappa} needs {m} positions; at most 2^32 - 1 \
                 are supported",
                n1.max(n2)
            ),
        });
    }
    Ok((kappa as usize, m))
}

/// The hash functions of a session's filters (keyed by the session id, fresh every run).
pub(crate) fn hasher(session: &Session, label: &str, k: usize, m: u64) -> Result<BloomHasher> {
    let seed = session.block(label);
    // m = 0 (both sets empty): a one-position filter that nobody uses.
    Ok(BloomHasher::new(seed, k, m.max(1))?)
}

/// The chunk ranges of the passes over the m positions for `n` own elements: at most
/// [`MAX_PASS_PAIRS`] pairs per pass, and pairs of at most a quarter of the run's memory budget
/// (6 bytes each).
pub(crate) fn passes(k: usize, n: usize, m: u64, opts: &RunOptions) -> Vec<Range<usize>> {
    let budget = opts.memory_budget.map_or(u64::MAX, |b| b / 24).max(1);
    BloomPairs::passes(k, n, m, CHUNK, MAX_PASS_PAIRS.min(budget))
}

/// Positions in chunk `c` of a filter of m positions.
pub(crate) fn chunk_len(m: u64, c: usize) -> usize {
    (m - (c * CHUNK) as u64).min(CHUNK as u64) as usize
}

/// The Bloom-filter bits of chunk `c` (packed: bit i at byte i/8, position i%8) from the
/// pairs: 1 where some element has a position.
pub(crate) fn chunk_bits(pairs: &BloomPairs, c: usize, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(len.div_ceil(8), 0);
    for g in pairs.chunk(c) {
        for &o in g.offsets {
            out[usize::from(o) / 8] |= 1 << (o % 8);
        }
    }
}

/// acc[e] ^= value[o] for every pair (o, e) of chunk `c`, the groups of elements in parallel
/// (each group owns a contiguous range of the accumulators).
pub(crate) fn accumulate(pairs: &BloomPairs, c: usize, value: &[Block], acc: &mut [Block]) {
    let groups: Vec<ChunkPairs<'_>> = pairs.chunk(c).collect();
    let mut slices = Vec::with_capacity(groups.len());
    let mut rest = acc;
    for g in &groups {
        let (head, tail) = rest.split_at_mut(g.items_len);
        slices.push(head);
        rest = tail;
    }
    let add = |(g, a): (&ChunkPairs<'_>, &mut &mut [Block])| {
        for (&o, &e) in g.offsets.iter().zip(g.items) {
            a[e as usize - g.first_item] ^= value[usize::from(o)];
        }
    };
    if groups.len() > 1 {
        groups.par_iter().zip(slices.par_iter_mut()).for_each(add);
    } else {
        groups.iter().zip(slices.iter_mut()).for_each(add);
    }
}

/// The low `len` bytes of each block as a `u128` (a tag or share of `len` bytes).
pub(crate) fn truncate(b: Block, len: usize) -> u128 {
    b.0 & crate::protocols::common::tag_mask(len)
}
