//! Buckets for runs larger than one session: both parties split their items into B buckets by
//! a hash keyed per run, and bucket p of one side runs an ordinary session with bucket p of the
//! other (DCW13 §6.4, "Extremely Big Data Set & Cloud Computing").
//!
//! **The leak DCW13 leaves open, closed by padding** (the notes on the papers, §5.5, 5.A; PSZ14
//! §6 and App. E): a bucket's session announces its set size, so a bucket sized by its real
//! count would tell the peer how many of our items fell into it. Every bucket is therefore
//! padded with random dummy items to a public maximum [`max_load`], a function of the party's
//! own set size (which the peer learns anyway), B and λ only: the number of buckets B and the
//! set sizes are all the peer learns, as in one session. The maximum is the smallest m with
//! B · P[Bin(n, 1/B) > m] ≤ 2^-λ, so a real count above it, which a run would have to refuse,
//! has probability at most 2^-λ (a union bound over the buckets on the binomial tail, computed
//! in log space with an upper bound on the tail; no approximation by a normal law).
//!
//! **The bucket of an item** is the top of `((π(x) ⊕ x).low64 · B) >> 64` for the fixed-key AES
//! permutation π under a key derived from the run's session id, which both parties' nonces
//! make fresh: the key did not exist when either party's data was chosen, so no choice of
//! inputs can crowd an honest party's items into one bucket.
//!
//! **Dummies** are uniformly random 128-bit items: one meets a real item of the peer, or
//! another dummy, with probability below n1·n2 / 2^128 per run; a receiver drops any match at
//! a dummy's position in any case.

use blindjoin_core::Block;
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::item::{ITEM_LEN, Item};
use rand::{CryptoRng, Rng};
use std::f64::consts::{LN_2, PI};

/// ln k! (exact sums below 16; Stirling's series with three correction terms above, whose
/// error is below 10^-12 there).
fn ln_factorial(k: f64) -> f64 {
    if k < 16.0 {
        (2..=k as u64).map(|i| (i as f64).ln()).sum()
    } else {
        k * k.ln() - k + 0.5 * (2.0 * PI * k).ln() + 1.0 / (12.0 * k) - 1.0 / (360.0 * k.powi(3))
            + 1.0 / (1260.0 * k.powi(5))
    }
}

/// ln P[Bin(n, p) = j].
fn ln_pmf(n: f64, j: f64, p: f64) -> f64 {
    ln_factorial(n) - ln_factorial(j) - ln_factorial(n - j) + j * p.ln() + (n - j) * (-p).ln_1p()
}

/// The natural log of an upper bound on P[Bin(n, p) ≥ k], for k above the mean n·p (else
/// `None`): the terms from k on fall at least as fast as their ratio at k,
/// r = (n − k) / (k + 1) · p / (1 − p) < 1, so the tail is at most P[= k] / (1 − r).
fn ln_tail_bound(n: u64, p: f64, k: u64) -> Option<f64> {
    if k > n {
        return Some(f64::NEG_INFINITY);
    }
    let (nf, kf) = (n as f64, k as f64);
    let r = (nf - kf) / (kf + 1.0) * p / (1.0 - p);
    (r < 1.0).then(|| ln_pmf(nf, kf, p) - (-r).ln_1p())
}

/// The public maximum of a bucket's real items: the smallest m such that, with `n` items
/// thrown into `buckets` buckets uniformly and independently, some bucket gets more than m
/// with probability at most 2^-`lambda` (see the [module doc](self)). `n` for one bucket.
pub fn max_load(n: u64, buckets: u32, lambda: f64) -> u64 {
    if buckets <= 1 || n == 0 {
        return n;
    }
    let p = 1.0 / f64::from(buckets);
    let target = -lambda * LN_2 - f64::from(buckets).ln();
    let fits = |m: u64| ln_tail_bound(n, p, m + 1).is_some_and(|t| t <= target);
    // fits is monotone in m; fits(n) holds.
    let (mut lo, mut hi) = (n.div_ceil(u64::from(buckets)), n);
    if fits(lo) {
        return lo;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Largest number of buckets `--buckets auto` proposes.
pub const MAX_AUTO_BUCKETS: u32 = 1 << 16;

/// Memory a party holds besides its bucket sessions: the process, the input's read buffers and
/// the bucket files' write buffers.
pub const RESERVE_BYTES: u64 = 256 << 20;

/// Bytes held per matched row until the output is written (the rows' numbers).
pub const MATCH_BYTES: u64 = 8;

/// Peak memory of one session of `protocol`, per item of its sets, at one thread: the peak RSS
/// of a party on n items against n, less its peak RSS on 1,000 against 1,000, over n; the
/// larger of receiver and sender, rounded up to 64 bytes. Measured 2026-11-28 with
/// `blindjoin --threads 1 receive/send --json` on files of distinct lines, at n = 2^20 (2^18
/// for rr17_de, rr17_ec and ecdh; 2^16 for rr17a, ecdh_nist, dkt10 and circuit_gmw; 2^14 for
/// dh_ffc, rsa_blind, circuit_gmw_scalar and circuit_yao). Other names (the server-aided
/// protocols, which are not bucketed) get 4 KiB.
pub fn session_bytes_per_item(protocol: &str) -> u64 {
    match protocol {
        "naive" => 128,
        "ecdh" | "ecdh_nist" | "cm20" | "cm20_mal" | "psz14" => 192,
        "kkrt16" => 256,
        "dkt10" => 384,
        "rgbf" => 448,
        "gbf" => 512,
        "rsa_blind" | "dh_ffc" => 640,
        "rr17_de" => 1088,
        "rr17_ec" => 1152,
        "circuit_gmw_scalar" => 2112,
        "circuit_gmw" => 2176,
        "rr17a" => 7040,
        "circuit_yao" => 11904,
        _ => 4096,
    }
}

/// The number of buckets a party proposes for `--buckets auto` (the run takes the larger of
/// the two proposals): the smallest power of two B, at least `parallel`, such that
/// [`RESERVE_BYTES`], [`MATCH_BYTES`] per row and `parallel` bucket sessions of
/// `per_item` bytes per item at the public maximum ([`max_load`]) fit in `budget`. `items`
/// is an estimate of the party's distinct items (its rows). `Err` names the memory the
/// smallest sessions would still need.
pub fn propose(
    items: u64,
    per_item: u64,
    parallel: usize,
    budget: u64,
    lambda: f64,
) -> Result<u32, u64> {
    let fixed = RESERVE_BYTES + MATCH_BYTES * items;
    let mut need = u64::MAX;
    let mut b = (parallel.max(1) as u32).next_power_of_two();
    while b <= MAX_AUTO_BUCKETS {
        let m = max_load(items, b, lambda);
        need = fixed.saturating_add((parallel as u64).saturating_mul(m.saturating_mul(per_item)));
        if need <= budget {
            return Ok(b);
        }
        b *= 2;
    }
    Err(need)
}

/// The keyed map from items to buckets of one run.
pub struct Partition {
    pi: FixedKeyAes,
    key: [u8; 16],
    buckets: u32,
}

impl Partition {
    /// The partition into `buckets` (at least 1) under `key` (derived from the run's session id).
    pub fn new(key: [u8; 16], buckets: u32) -> Self {
        Partition {
            pi: FixedKeyAes::new(Block(u128::from_le_bytes(key))),
            key,
            buckets: buckets.max(1),
        }
    }

    /// The key (a resumable run records it).
    pub fn key(&self) -> [u8; 16] {
        self.key
    }

    /// The number of buckets.
    pub fn buckets(&self) -> u32 {
        self.buckets
    }

    /// The bucket of every item of `items`, into `out` (same length).
    pub fn assign(&self, items: &[Item], out: &mut [u32]) {
        let mut blocks = [Block::ZERO; 256];
        for (items, out) in items.chunks(256).zip(out.chunks_mut(256)) {
            let blocks = &mut blocks[..items.len()];
            for (b, it) in blocks.iter_mut().zip(items) {
                *b = Block(u128::from_le_bytes(it.0));
            }
            let plain: Vec<Block> = blocks.to_vec();
            self.pi.permute(blocks);
            for ((o, b), x) in out.iter_mut().zip(blocks.iter()).zip(plain) {
                let h = ((*b ^ x).0 as u64) as u128;
                *o = ((h * u128::from(self.buckets)) >> 64) as u32;
            }
        }
    }
}

/// `count` random dummy items.
pub fn dummies(count: usize, rng: &mut impl CryptoRng) -> Vec<Item> {
    (0..count)
        .map(|_| {
            let mut b = [0u8; ITEM_LEN];
            rng.fill(&mut b[..]);
            Item(b)
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// P[Bin(n, p) > m], summed term by term in f64 (for small n).
    fn exact_over(n: u64, p: f64, m: u64) -> f64 {
        (m + 1..=n)
            .map(|j| ln_pmf(n as f64, j as f64, p).exp())
            .sum()
    }

    #[test]
    fn ln_factorial_matches_the_product() {
        let mut exact = 0.0f64;
        for k in 1..200u64 {
            exact += (k as f64).ln();
            assert!((ln_factorial(k as f64) - exact).abs() < 1e-9, "{k}");
        }
    }

    #[test]
    fn the_maximum_is_the_smallest_that_meets_the_bound() {
        for (n, b, lambda) in [(1000u64, 4u32, 10.0), (5000, 16, 20.0), (300, 2, 40.0)] {
            let m = max_load(n, b, lambda);
            let p = 1.0 / f64::from(b);
            let goal = 2f64.powf(-lambda) / f64::from(b);
            assert!(exact_over(n, p, m) <= goal, "{n} {b}: {m} too small");
            // One less is refused because the tail there is near the goal: the bound on the
            // tail is loose by the factor 1 / (1 − r) only.
            let below = exact_over(n, p, m - 1);
            assert!(
                below > goal / 10.0,
                "{n} {b}: {m} is not the smallest ({below:e})"
            );
        }
    }

    #[test]
    fn edge_cases() {
        assert_eq!(max_load(0, 16, 40.0), 0);
        assert_eq!(max_load(1000, 1, 40.0), 1000);
        // Two items in many buckets: both may land together.
        assert_eq!(max_load(2, 1 << 20, 40.0), 2);
        // The maximum never exceeds n and grows with λ.
        let a = max_load(1 << 20, 16, 20.0);
        let b = max_load(1 << 20, 16, 40.0);
        assert!(a < b && b < 1 << 20);
    }

    #[test]
    fn padding_at_the_sizes_of_the_figures() {
        // 2^20 in 16 buckets: 65,536 per bucket on average, about 7.5 standard deviations
        // (248 each) above it for 2^-40 / 16.
        let m = max_load(1 << 20, 16, 40.0);
        assert!((67_300..67_600).contains(&m), "{m}");
        // 10^8 in 64 buckets: under 1 % padding.
        let m = max_load(100_000_000, 64, 40.0);
        let mean = 100_000_000 / 64;
        assert!(m > mean && m < mean + mean / 100, "{m}");
    }

    #[test]
    fn psz14_table_10_loads_are_within_the_bound() {
        // PSZ14 App. E, Table 10: n = 2^18 items into b bins with n = c·b·ln b; the most
        // items in a bin over 10^5 repetitions was d_c·ln b (no failures for c ≤ 1). A bound
        // at 2^-40 is above every observed maximum, and not absurdly so.
        let n = (1u64 << 18) as f64;
        for (c, d) in [(0.25, 2.2), (0.5, 2.8), (1.0, 3.7), (2.0, 5.3), (4.0, 8.1)] {
            // Solve n = c·b·ln b for b.
            let mut b = n / c / 10.0;
            for _ in 0..50 {
                b = n / (c * b.ln());
            }
            let bins = b.round() as u32;
            let observed = d * b.ln();
            let m = max_load(1 << 18, bins, 40.0) as f64;
            assert!(
                m >= observed && m < 2.0 * observed + 4.0,
                "c = {c}: {m} against {observed}"
            );
        }
    }

    #[test]
    fn the_partition_is_keyed_balanced_and_deterministic() {
        let keys: Vec<[u8; 4]> = (0u32..100_000).map(u32::to_le_bytes).collect();
        let items = blindjoin_core::item::items_from_records(&keys);
        let p = Partition::new([7; 16], 16);
        let mut a = vec![0; items.len()];
        let mut b = vec![0; items.len()];
        p.assign(&items, &mut a);
        Partition::new([7; 16], 16).assign(&items, &mut b);
        assert_eq!(a, b);
        let mut counts = [0u64; 16];
        a.iter().for_each(|&x| counts[x as usize] += 1);
        let max = max_load(100_000, 16, 40.0);
        assert!(
            counts.iter().all(|&c| c <= max && c > 100_000 / 16 - 500),
            "{counts:?}"
        );
        Partition::new([8; 16], 16).assign(&items, &mut b);
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        // Another key: about 1/16 agree.
        assert!((5_000..7_500).contains(&same), "{same}");
    }

    #[test]
    fn a_proposal_is_the_fewest_buckets_whose_sessions_fit() {
        let gib = 1u64 << 30;
        let need = |items: u64, per_item: u64, k: u64, b: u32| {
            RESERVE_BYTES + MATCH_BYTES * items + k * max_load(items, b, 40.0) * per_item
        };
        for (items, per_item, k, budget) in [
            (100_000_000u64, 1024u64, 1usize, 4 * gib),
            (100_000_000, 1024, 2, 4 * gib),
            (1 << 20, 2048, 1, 512 << 20),
            (3_000, 4096, 1, 257 << 20),
        ] {
            let b = propose(items, per_item, k, budget, 40.0).unwrap();
            assert!(b.is_power_of_two() && b as usize >= k);
            assert!(need(items, per_item, k as u64, b) <= budget, "{items} {k}");
            if b as usize > k.next_power_of_two() {
                assert!(
                    need(items, per_item, k as u64, b / 2) > budget,
                    "{items} {k}"
                );
            }
        }
        // Enough memory: one bucket per lane.
        assert_eq!(propose(1000, 4096, 2, 4 * gib, 40.0), Ok(2));
        // Too little for even the reserve: the need is named.
        let err = propose(10, 4096, 1, 1 << 20, 40.0).unwrap_err();
        assert!(err > RESERVE_BYTES);
    }
}
