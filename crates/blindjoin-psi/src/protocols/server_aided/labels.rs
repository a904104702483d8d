//! The clients' labels: a keyed AES permutation of each item, truncated to a length that
//! bounds false matches, sorted.
//!
//! **PRF.** F_K(x) = AES-128_K(x) on the 16-byte item x (KMRS14 §3.1: AES as the PRP, 16-byte
//! elements). Distinct items have distinct full outputs; only the truncation can collide.
//!
//! **Length.** A client maps a returned bit back to its element through its own labels, so a
//! label must be unique among *all* N = Σ|T_i| labels of the run, its own included: a false
//! match (two parties' different elements) or a false collision (two of one party's elements)
//! needs two of the N labels to agree. Over the C(N, 2) pairs of uniformly random ℓ-bit labels
//! that has probability at most C(N, 2)/2^ℓ, so ℓ = λ + ⌈log2 C(N, 2)⌉ bits (at least 2^-λ,
//! 2^-40 by default), rounded up to whole bytes: [`label_len`]. This is the standard union
//! bound the spec (A7.3) names, with the within-set pairs included. KMRS14 §3.1 instead asks
//! |S|/2^(ℓ/2) ≤ 2^-20 ([`kmrs14_label_bits`]), the square root of a birthday bound, and chose
//! 80 ≤ ℓ ≤ 100; both rules land within a byte of each other at the paper's sizes (test
//! `label_lengths_match_kmrs14_table_1`).
//!
//! **Order.** The labels go to the server in ascending order, which reveals nothing beyond the
//! set of labels (KMRS14 sends π_i(T_i) for a random π_i; any order independent of the
//! elements does, spec A7.4). Sorted order lets the server intersect by merging and answer in
//! the same order, with no hash table (`store`).

use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use rayon::prelude::*;

/// The longest label: one AES block.
pub const MAX_LABEL_LEN: usize = 16;

/// Bytes of a label for a run whose parties hold `sizes` labels each, at statistical security
/// `lambda`: ⌈(λ + ⌈log2 C(N, 2)⌉)/8⌉ with N = Σ sizes (see the module doc), at least 1 byte.
/// `InvalidParam` (field `set size`) if that exceeds 16 bytes.
pub fn label_len(sizes: &[u64], lambda: u32) -> Result<usize> {
    let too_long = |n: u128, bits: String| Error::InvalidParam {
        field: "set size",
        reason: format!(
            "{n} labels need {bits}-bit labels for λ = {lambda}, more than {} bits",
            8 * MAX_LABEL_LEN
        ),
    };
    // The sizes come from the other clients (through P1), so N may be far above any real set.
    let n: u128 = sizes.iter().map(|&s| u128::from(s)).sum();
    // C(N, 2), the even factor halved first; it overflows only from 2^128 pairs, which need
    // more than 128 bits whatever λ.
    let pairs = if n.is_multiple_of(2) {
        (n / 2).checked_mul(n.saturating_sub(1))
    } else {
        n.checked_mul((n - 1) / 2)
    }
    .ok_or_else(|| too_long(n, "more-than-128".to_owned()))?;
    // ⌈log2 pairs⌉ (0 for at most one pair).
    let log = if pairs <= 1 {
        0
    } else {
        128 - (pairs - 1).leading_zeros()
    };
    let bits = lambda.saturating_add(log);
    let bytes = (bits as usize).div_ceil(8).max(1);
    if bytes > MAX_LABEL_LEN {
        return Err(too_long(n, bits.to_string()));
    }
    Ok(bytes)
}

/// KMRS14 §3.1's rule for comparison: the least ℓ with |S|/2^(ℓ/2) ≤ 2^-s, i.e.
/// ℓ = ⌈2(s + log2 |S|)⌉ bits.
pub fn kmrs14_label_bits(set_size: u64, s: u32) -> u32 {
    (2.0 * (f64::from(s) + (set_size as f64).log2())).ceil() as u32
}

/// The labels of `items` under `key`, truncated to `len` bytes, with the index of each
/// label's item, sorted by label (ascending as byte strings). `InvalidParam` (field `labels`)
/// if two items share a label, which [`label_len`] makes happen with probability at most
/// 2^-λ.
pub fn sorted_labels(key: Block, items: &[Item], len: usize) -> Result<Vec<(u128, u32)>> {
    let aes = FixedKeyAes::new(key);
    let mut labels: Vec<(u128, u32)> = items
        .par_chunks(1 << 12)
        .enumerate()
        .flat_map_iter(|(c, chunk)| {
            let mut blocks: Vec<Block> = chunk.iter().map(|it| Block::from_bytes(it.0)).collect();
            aes.permute(&mut blocks);
            blocks
                .into_iter()
                .enumerate()
                .map(move |(k, b)| (truncate(b, len), (c * (1 << 12) + k) as u32))
        })
        .collect();
    sort_unique(&mut labels)?;
    Ok(labels)
}

/// Sorts `(label, tag)` pairs by label; `InvalidParam` (field `labels`) if two share a label,
/// which [`label_len`] makes happen with probability at most 2^-λ.
pub fn sort_unique(labels: &mut [(u128, u32)]) -> Result<()> {
    labels.par_sort_unstable_by_key(|&(l, _)| l);
    if labels.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(Error::InvalidParam {
            field: "labels",
            reason: "two of our labels agree (probability at most 2^-λ); run again".into(),
        });
    }
    Ok(())
}

/// The first `len` bytes of `b`'s byte string, as a big-endian number in the high bytes of a
/// `u128` (the rest zero): numeric order is the byte strings' order.
pub fn truncate(b: Block, len: usize) -> u128 {
    let v = u128::from_be_bytes(b.to_bytes());
    if len >= MAX_LABEL_LEN {
        v
    } else {
        v & !(u128::MAX >> (8 * len))
    }
}

/// A label of `bytes.len()` ≤ 16 bytes, laid out as [`truncate`] does (the bytes high, the
/// rest zero).
pub fn decode_label(bytes: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = bytes.len().min(MAX_LABEL_LEN);
    b[..n].copy_from_slice(&bytes[..n]);
    u128::from_be_bytes(b)
}

/// Appends the first `len` bytes of each label (as [`truncate`] lays them out) to `out`.
pub fn encode_labels(labels: impl Iterator<Item = u128>, len: usize, out: &mut Vec<u8>) {
    for l in labels {
        out.extend_from_slice(&l.to_be_bytes()[..len]);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn label_length_is_the_union_bound_over_all_pairs() {
        // Two labels: one pair, λ bits.
        assert_eq!(label_len(&[1, 1], 40).ok(), Some(5));
        // N = 2^20 + 2^20: C(N, 2) < 2^41, so 81 bits, 11 bytes.
        assert_eq!(label_len(&[1 << 20, 1 << 20], 40).ok(), Some(11));
        // Three parties count every pair too.
        assert_eq!(label_len(&[1000, 1000, 1000], 40).ok(), Some(8));
        // 2^44 labels need 40 + 87 = 127 bits, a block; 2^46 need 131 bits, more.
        assert_eq!(label_len(&[1 << 43, 1 << 43], 40).ok(), Some(16));
        assert!(matches!(
            label_len(&[1 << 45, 1 << 45], 40),
            Err(Error::InvalidParam {
                field: "set size",
                ..
            })
        ));
    }

    /// Set sizes that only P1 vouches for (a third client's, in the key message) may be any
    /// u64: the number of pairs then exceeds u128, which is an error, not an overflow.
    #[test]
    fn label_length_of_huge_announced_sizes_is_an_error() {
        for sizes in [vec![13, 21, u64::MAX], vec![1 << 63, 1 << 63, 1]] {
            assert!(
                matches!(
                    label_len(&sizes, 40),
                    Err(Error::InvalidParam {
                        field: "set size",
                        ..
                    })
                ),
                "{sizes:?}"
            );
        }
        // 2^128 pairs or more: an error even at λ = 0.
        for sizes in [vec![u64::MAX, u64::MAX], vec![u64::MAX; 64]] {
            assert!(label_len(&sizes, 0).is_err(), "{sizes:?}");
        }
        // 2^64 + 1 labels: C(N, 2) = 2^127 + 2^63 < 2^128, 128 bits before λ.
        assert!(label_len(&[u64::MAX, 2], 0).is_ok());
        assert!(label_len(&[u64::MAX, 2], 1).is_err());
        // The exact pair count for odd and even N.
        assert_eq!(label_len(&[2, 1], 0).ok(), Some(1));
        assert_eq!(label_len(&[1 << 20, 1], 40).ok(), Some(10));
    }

    /// KMRS14 Table 1 (SHPSI, communication per client in MB = 10^6 B) against our label
    /// bytes for two equal sets, and the paper's ℓ rule (§3.1: |S|/2^(ℓ/2) ≤ 2^-20, so
    /// 80 ≤ ℓ ≤ 100 for tens to hundreds of millions).
    #[test]
    fn label_lengths_match_kmrs14_table_1() {
        // (set size, Table 1 MB per client, our bytes per label, the paper's rule in bits)
        let rows: [(u64, f64, usize, u32); 5] = [
            (100_000, 1.0, 10, 74),
            (1_000_000, 10.0, 11, 80),
            (10_000_000, 114.0, 11, 87),
            (100_000_000, 1239.0, 12, 94),
            (1_000_000_000, 12397.0, 13, 100),
        ];
        for (n, mb, ours, paper_bits) in rows {
            assert_eq!(label_len(&[n, n], 40).ok(), Some(ours), "{n}");
            assert_eq!(kmrs14_label_bits(n, 20), paper_bits, "{n}");
            // The paper's bytes per element, against ours: within 1.2 bytes.
            let paper = mb * 1e6 / n as f64;
            assert!((paper - ours as f64).abs() <= 1.2, "{n}: {paper} vs {ours}");
        }
    }

    #[test]
    fn labels_are_sorted_truncated_permutation_outputs() {
        let items: Vec<Item> = (0..5000u32)
            .map(|i| {
                let mut b = [0u8; 16];
                b[..4].copy_from_slice(&i.to_le_bytes());
                Item(b)
            })
            .collect();
        let key = Block(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        let got = sorted_labels(key, &items, 6).unwrap();
        assert_eq!(got.len(), items.len());
        let aes = FixedKeyAes::new(key);
        for w in got.windows(2) {
            assert!(w[0].0 < w[1].0);
        }
        for &(l, i) in &got {
            let full = aes.permute_block(Block::from_bytes(items[i as usize].0));
            assert_eq!(l.to_be_bytes()[..6], full.to_bytes()[..6]);
            assert_eq!(l.to_be_bytes()[6..], [0u8; 10]);
        }
        let mut enc = Vec::new();
        encode_labels(got.iter().map(|&(l, _)| l), 6, &mut enc);
        assert_eq!(enc.len(), 6 * items.len());
        assert_eq!(enc[..6], got[0].0.to_be_bytes()[..6]);
    }
}
