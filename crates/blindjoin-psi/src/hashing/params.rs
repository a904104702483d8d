//! Table sizes and their failure probabilities (see the module doc of [`super`] for sources).

use super::error::HashingError;
use super::{MAX_HASHES, MAX_ITEMS, MIN_BINS};

/// PSZ's ε in b = 2(1+ε)n for 2-hash Cuckoo hashing (PSZ14 §7, App. E, after KMW).
pub const PSZ_EPSILON: f64 = 0.2;

/// PSZ's stash size s (PSZ14 §7, App. E).
pub const PSZ_STASH: usize = 4;

/// Largest λ accepted by the functions of this module.
pub const MAX_LAMBDA: u32 = 128;

fn check_lambda(lambda: u32) -> Result<(), HashingError> {
    if (1..=MAX_LAMBDA).contains(&lambda) {
        Ok(())
    } else {
        Err(HashingError::invalid(
            "lambda",
            format!("λ = {lambda}; 1 to {MAX_LAMBDA} are supported"),
        ))
    }
}

fn check_items(n: usize) -> Result<(), HashingError> {
    if n > MAX_ITEMS {
        Err(HashingError::TooManyItems {
            items: n,
            max: MAX_ITEMS,
        })
    } else {
        Ok(())
    }
}

/// `⌈x⌉` as a bin count, at least [`MIN_BINS`], at most `u32::MAX`.
fn bins_from_f64(field: &'static str, x: f64) -> Result<usize, HashingError> {
    let b = x.ceil();
    if !b.is_finite() || b > f64::from(u32::MAX) {
        return Err(HashingError::invalid(
            field,
            format!("{x} bins exceed the supported 2^32 - 1"),
        ));
    }
    Ok((b as usize).max(MIN_BINS))
}

/// What the analysis behind a table's parameters says about the probability that building it
/// fails (some item finds no place).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureBound {
    /// The stash holds every item: building cannot fail.
    Impossible,
    /// About 2^-`log2`.
    About {
        /// The bound's exponent (rounded down).
        log2: u32,
    },
    /// Explicit parameters without an analysis.
    Unknown,
}

impl std::fmt::Display for FailureBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailureBound::Impossible => f.write_str("0 (the stash holds every item)"),
            FailureBound::About { log2 } => write!(f, "about 2^-{log2}"),
            FailureBound::Unknown => f.write_str("not bounded by an analysis"),
        }
    }
}

/// The shape of a Cuckoo table: k hash functions, b bins, a stash of s items, the bound on
/// the eviction walk before the breadth-first fallback (see [`super::CuckooTable`]), and the
/// failure probability its analysis gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuckooParams {
    num_hashes: usize,
    num_bins: usize,
    stash_size: usize,
    max_evictions: usize,
    failure: FailureBound,
}

impl CuckooParams {
    /// PSZ14's parameters for n items: k = 2, b = ⌈2(1+ε)n⌉ with ε = 0.2 (at least
    /// [`MIN_BINS`]), stash s = 4. Failure probability ≈ n^-s (PSZ14 §6.1 and App. E, citing
    /// KMW): 2^-40 at n = 2^10, 2^-80 at n = 2^20, but *above* 2^-40 for n < 2^10 (2^-11 at
    /// n = 7); [`failure`](Self::failure) states it, and a failed build reports it.
    ///
    /// Errors: n > [`MAX_ITEMS`].
    pub fn psz(n: usize) -> Result<Self, HashingError> {
        check_items(n)?;
        // 2(1 + ε)·n = 12n/5, rounded up in integers (2.4 is not exact in f64).
        let bins = (12 * n).div_ceil(5).max(MIN_BINS);
        let failure = if n <= PSZ_STASH {
            FailureBound::Impossible
        } else {
            FailureBound::About {
                log2: (PSZ_STASH as f64 * (n as f64).log2()).floor() as u32,
            }
        };
        Ok(CuckooParams {
            failure,
            ..CuckooParams::new(2, bins, PSZ_STASH)?
        })
    }

    /// The stash-less 3-hash table of KKRT16-style PSI for n items and failure probability
    /// 2^-λ: k = 3, s = 0, b = ⌈e·n⌉ (at least [`MIN_BINS`]) with e = [`kkrt_bin_factor`]`(n,
    /// λ)`, PSWW18's fitted bound.
    ///
    /// Errors: n > [`MAX_ITEMS`], λ outside `1..=`[`MAX_LAMBDA`].
    pub fn kkrt(n: usize, lambda: u32) -> Result<Self, HashingError> {
        check_items(n)?;
        check_lambda(lambda)?;
        let bins = if n == 0 {
            MIN_BINS
        } else {
            bins_from_f64("num_bins", kkrt_bin_factor(n as u64, lambda) * n as f64)?
        };
        let failure = if n == 0 {
            FailureBound::Impossible
        } else {
            FailureBound::About { log2: lambda }
        };
        Ok(CuckooParams {
            failure,
            ..CuckooParams::new(3, bins, 0)?
        })
    }

    /// Explicit parameters (a protocol that argues its own bound, or a test). The eviction bound
    /// is [`default_max_evictions`]`(num_bins)`.
    ///
    /// Errors: `num_hashes` outside `2..=3`, `num_bins` outside `1..2^32`, `stash_size` above
    /// [`MAX_ITEMS`].
    pub fn new(
        num_hashes: usize,
        num_bins: usize,
        stash_size: usize,
    ) -> Result<Self, HashingError> {
        if !(2..=MAX_HASHES).contains(&num_hashes) {
            return Err(HashingError::invalid(
                "num_hashes",
                format!("{num_hashes} hash functions; Cuckoo hashing takes 2 or 3"),
            ));
        }
        if num_bins == 0 || num_bins > u32::MAX as usize {
            return Err(HashingError::invalid(
                "num_bins",
                format!("{num_bins} bins; 1 to 2^32 - 1 are supported"),
            ));
        }
        if stash_size > MAX_ITEMS {
            return Err(HashingError::invalid(
                "stash_size",
                format!("a stash of {stash_size}; at most {MAX_ITEMS}"),
            ));
        }
        Ok(CuckooParams {
            num_hashes,
            num_bins,
            stash_size,
            max_evictions: default_max_evictions(num_bins),
            failure: FailureBound::Unknown,
        })
    }

    /// The failure probability the parameters' analysis gives.
    pub fn failure(&self) -> FailureBound {
        self.failure
    }

    /// The same table with another bound on the eviction walk (0 means: breadth-first search
    /// right away). Only speed depends on it: whether an insertion succeeds does not (see
    /// [`super::CuckooTable`]).
    pub fn with_max_evictions(mut self, max_evictions: usize) -> Self {
        self.max_evictions = max_evictions;
        self
    }

    /// Number of hash functions k.
    pub fn num_hashes(&self) -> usize {
        self.num_hashes
    }

    /// Number of bins b.
    pub fn num_bins(&self) -> usize {
        self.num_bins
    }

    /// Stash capacity s.
    pub fn stash_size(&self) -> usize {
        self.stash_size
    }

    /// Evictions of the random walk before the breadth-first fallback.
    pub fn max_evictions(&self) -> usize {
        self.max_evictions
    }
}

/// The default bound on an eviction walk: `64 + 8·⌈log2 b⌉` (232 at b = 2^21, 264 at
/// b = 2^25). Random-walk insertion needs O(1) evictions on average and O(log n) with high
/// probability well below the load threshold; the rare longer walk hands over to the exact
/// breadth-first search, so the bound trades time only.
pub fn default_max_evictions(num_bins: usize) -> usize {
    let log = usize::BITS - num_bins.saturating_sub(1).leading_zeros();
    64 + 8 * log as usize
}

/// Φ, the standard normal CDF, as `(1 + erf(z/√2))/2`.
fn normal_cdf(z: f64) -> f64 {
    0.5 * (1.0 + erf(z / core::f64::consts::SQRT_2))
}

/// erf(x), to about 1e-15 relative error.
///
/// For |x| < 6: the everywhere-positive series erf(x) = 2/√π · e^{-x²} · Σ_{m≥0} 2^m x^{2m+1} /
/// (1·3·…·(2m+1)) (Abramowitz & Stegun 7.1.6), which has no cancellation; beyond, erf(x) = ±1
/// within 2^-60.
fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let a = x.abs();
    if a >= 6.0 {
        return x.signum();
    }
    let x2 = a * a;
    let mut term = a;
    let mut sum = a;
    let mut m = 0.0f64;
    // The terms grow until 2m+1 ≈ 2x² and then shrink geometrically; 200 terms suffice
    // for |x| < 6 (x² < 36).
    for _ in 0..200 {
        m += 1.0;
        term *= 2.0 * x2 / (2.0 * m + 1.0);
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    let r = 2.0 / core::f64::consts::PI.sqrt() * (-x2).exp() * sum;
    r.min(1.0).copysign(x)
}

/// PSWW18's expansion factor e = b/n for stash-less Cuckoo hashing with 3 hash functions and
/// failure probability 2^-λ.
///
/// PSWW18 fit λ ≈ a_n·e + b_n to their experiments, with slope and intercept shaped like the
/// normal CDF Φ in log2 n:
///
/// ```text
///   a_n = 123.5 · Φ((log2 n − 6.3) / 2.3)
///   b_n = −130 · Φ((log2 n − 6.45) / 2.18) − log2 n
///   e   = (λ − b_n) / a_n
/// ```
///
/// For large n this is e = (λ + 130 + log2 n)/123.5: at λ = 40, 1.478 (n = 2^12), 1.506 (2^16),
/// 1.538 (2^20), 1.571 (2^24). The constants are those of osu-crypto's cryptoTools
/// (`CuckooIndex::selectParams`, the stash-less 3-hash case), which implements PSWW18's fit;
/// they were checked against that implementation, not against the paper's text. The factor is
/// meaningless for n = 0 (the caller uses [`MIN_BINS`]).
pub fn kkrt_bin_factor(n: u64, lambda: u32) -> f64 {
    let log_n = (n.max(1) as f64).log2();
    let a = 123.5 * normal_cdf((log_n - 6.3) / 2.3);
    let b = -130.0 * normal_cdf((log_n - 6.45) / 2.18) - log_n;
    (f64::from(lambda) - b) / a
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: about 1e-15 relative error).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        let pi = core::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let mut a = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * core::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// ln C(n, i).
fn ln_choose(n: u64, i: u64) -> f64 {
    if i == 0 || i == n {
        return 0.0;
    }
    let (n, i) = (n as f64, i as f64);
    ln_gamma(n + 1.0) - ln_gamma(i + 1.0) - ln_gamma(n - i + 1.0)
}

/// ln Pr[X = i] for X ~ Binomial(n, p), 0 < p < 1.
fn ln_pmf(n: u64, p: f64, i: u64) -> f64 {
    ln_choose(n, i) + i as f64 * p.ln() + (n - i) as f64 * (-p).ln_1p()
}

/// ln Pr[X > m] for X ~ Binomial(n, p), 0 < p < 1.
///
/// Above the mean (m ≥ ⌊np⌋) the terms Pr[X = i], i > m, have ratios
/// r_i = (n−i)p / ((i+1)(1−p)) < 1 that decrease in i, so the sum is taken relative to its first
/// term (no underflow) and stopped once the geometric bound on the rest, term·r/(1−r), is below
/// 10^-17 of the sum. Below the mean the tail is at least 1/2 and is computed as 1 − Pr[X ≤ m]
/// the same way, walking down.
fn ln_upper_tail(n: u64, p: f64, m: u64) -> f64 {
    if m >= n {
        return f64::NEG_INFINITY;
    }
    let q = 1.0 - p;
    let floor_mean = (n as f64 * p).floor() as u64;
    if m >= floor_mean {
        let mut i = m + 1;
        let (mut sum, mut term) = (1.0f64, 1.0f64);
        while i < n {
            let r = (n - i) as f64 * p / ((i + 1) as f64 * q);
            term *= r;
            sum += term;
            i += 1;
            if term == 0.0 || (r < 1.0 && term * r / (1.0 - r) < sum * 1e-17) {
                break;
            }
        }
        ln_pmf(n, p, m + 1) + sum.ln()
    } else {
        // Pr[X ≤ m] = Σ_{i ≤ m}; ratios downward Pr[X=i-1]/Pr[X=i] = i(1−p)/((n−i+1)p) < 1.
        let mut i = m;
        let (mut sum, mut term) = (1.0f64, 1.0f64);
        while i > 0 {
            let r = i as f64 * q / ((n - i + 1) as f64 * p);
            term *= r;
            sum += term;
            i -= 1;
            if term == 0.0 || (r < 1.0 && term * r / (1.0 - r) < sum * 1e-17) {
                break;
            }
        }
        let cdf = (ln_pmf(n, p, m) + sum.ln()).exp();
        (-cdf.min(1.0)).ln_1p()
    }
}

/// log2 of the union bound `b · Pr[Binomial(balls, 1/b) > max]` on the probability that some
/// bin of simple hashing receives more than `max` of `balls` independent uniform balls
/// (−∞ when `max ≥ balls`). With k hash functions and n items, balls = k·n.
///
/// Errors: `bins` = 0.
pub fn overflow_log2(balls: u64, bins: u64, max: u64) -> Result<f64, HashingError> {
    if bins == 0 {
        return Err(HashingError::invalid("bins", "0 bins"));
    }
    if max >= balls {
        return Ok(f64::NEG_INFINITY);
    }
    if bins == 1 {
        return Ok(0.0);
    }
    let p = 1.0 / bins as f64;
    Ok(((bins as f64).ln() + ln_upper_tail(balls, p, max)) / core::f64::consts::LN_2)
}

/// The smallest maximum bin size M of simple hashing such that `balls` independent uniform
/// balls (k·n for n items under k hash functions) overflow some of `bins` bins with probability
/// at most 2^-λ by the union bound: b · Pr[Binomial(balls, 1/b) > M] ≤ 2^-λ.
///
/// The tail is computed in log space in f64 (see [`overflow_log2`]); its error is far below
/// 0.01 in log2, so M is exact except when the bound lies within that distance of 2^-λ.
/// Because the last bit of `ln` may differ between platforms' math libraries, a protocol
/// should exchange M (e.g. in the handshake's named parameters) rather than assume that both
/// parties computed the same value.
///
/// Errors: `bins` = 0, λ outside `1..=`[`MAX_LAMBDA`].
pub fn max_bin_size(balls: u64, bins: u64, lambda: u32) -> Result<usize, HashingError> {
    check_lambda(lambda)?;
    if bins == 0 {
        return Err(HashingError::invalid("bins", "0 bins"));
    }
    if balls == 0 || bins == 1 {
        return usize::try_from(balls).map_err(|_| {
            HashingError::invalid("balls", format!("{balls} balls exceed the address space"))
        });
    }
    let target = -f64::from(lambda);
    let ok = |m: u64| -> bool { overflow_log2(balls, bins, m).is_ok_and(|l| l <= target) };
    // Below ⌊balls/bins⌋ the tail is at least 1/2, so b·tail ≥ 1 > 2^-λ: search above it.
    let (mut lo, mut hi) = (balls / bins, balls);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    usize::try_from(lo).map_err(|_| {
        HashingError::invalid("balls", format!("{balls} balls exceed the address space"))
    })
}

/// PSZ14's d_c: the root x > c of f(x) = 1 + x(ln c − ln x + 1) − c (PSZ14 §6.1, App. E, after
/// Raab and Steger). f(c) = 1 and f'(x) = ln(c/x) < 0 for x > c, so the root is unique; it is
/// found by bisection to full f64 precision.
///
/// Errors: c not finite and positive.
pub fn psz_dc(c: f64) -> Result<f64, HashingError> {
    if !(c.is_finite() && c > 0.0) {
        return Err(HashingError::invalid(
            "c",
            format!("c = {c}; must be positive"),
        ));
    }
    let f = |x: f64| 1.0 + x * (c.ln() - x.ln() + 1.0) - c;
    let mut lo = c;
    let mut hi = 2.0 * c + 2.0;
    while f(hi) > 0.0 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(0.5 * (lo + hi))
}

/// PSZ14's number of bins for simple hashing of n items with one hash function: the b with
/// c·b·ln b = n (App. E), rounded up, at least [`MIN_BINS`].
///
/// Errors: c not finite and positive, or the result above `u32::MAX`.
pub fn psz_simple_bins(n: u64, c: f64) -> Result<usize, HashingError> {
    if !(c.is_finite() && c > 0.0) {
        return Err(HashingError::invalid(
            "c",
            format!("c = {c}; must be positive"),
        ));
    }
    let target = n as f64 / c;
    // g(b) = b ln b is increasing for b ≥ 1; bisection on [1, max(target, e)].
    let (mut lo, mut hi) = (1.0f64, target.max(core::f64::consts::E));
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if mid * mid.ln() < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    bins_from_f64("num_bins", hi)
}

/// PSZ14's maximum bin size for simple hashing into b bins at load c (n = c·b·ln b):
/// ⌈(d_c − 1 + α)·ln b⌉ (App. E; PSZ take α = 2, i.e. (d_c + 1)·ln b).
///
/// PSZ give no bound on its failure probability; they measured it (Table 10: 0 in 10^5 runs for
/// c ≤ 1, 0.4% at c = 2, 2.1% at c = 4, 100% at c = 8, n = 2^18). [`max_bin_size`] gives a
/// proven one.
///
/// Errors: c not finite and positive, α not finite, `bins` < 2.
pub fn psz_max_bin_size(bins: u64, c: f64, alpha: f64) -> Result<usize, HashingError> {
    if bins < 2 {
        return Err(HashingError::invalid(
            "bins",
            format!("{bins} bins; need at least 2"),
        ));
    }
    if !alpha.is_finite() {
        return Err(HashingError::invalid("alpha", format!("α = {alpha}")));
    }
    let m = (psz_dc(c)? - 1.0 + alpha) * (bins as f64).ln();
    Ok(m.ceil().max(0.0) as usize)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn erf_and_ln_gamma_known_values() {
        // Reference values: Python's math.erf and math.lgamma.
        let cases = [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_7),
            (-1.0, -0.842_700_792_949_714_9),
        ];
        for (x, want) in cases {
            assert!((erf(x) - want).abs() < 1e-14, "erf({x}) = {}", erf(x));
        }
        for (x, want) in [
            (1.0, 0.0),
            (2.0, 0.0),
            (0.5, 0.572_364_942_924_700_4),
            (10.0, 12.801_827_480_081_467),
            (1e6, 12_815_504.569_147_611),
        ] {
            let got = ln_gamma(x);
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "lnΓ({x}) = {got}"
            );
        }
    }

    #[test]
    fn table_10_dc_and_ots_rows() {
        // PSZ14 Table 10. The printed "dc" row is d_c + 1 (the factor of ln b in the maximum
        // bin size with α = 2), and "#OTs" is the printed dc divided by c: 2.2/0.25 = 8.8, while
        // the unrounded (d_c + 1)/c = 8.97 would print as 9.0. All other columns agree either
        // way.
        let cs = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];
        let dc_row = [2.2, 2.8, 3.7, 5.3, 8.1, 13.3];
        let ots_row = [8.8, 5.6, 3.7, 2.7, 2.0, 1.7];
        let round1 = |x: f64| (x * 10.0 + 1e-9).round() / 10.0;
        for ((&c, &dc_printed), &ots_printed) in cs.iter().zip(&dc_row).zip(&ots_row) {
            let dc = psz_dc(c).unwrap();
            assert!(dc > c);
            // d_c is a root of f.
            assert!((1.0 + dc * (c.ln() - dc.ln() + 1.0) - c).abs() < 1e-9);
            assert_eq!(round1(dc + 1.0), dc_printed, "c = {c}: d_c = {dc}");
            assert_eq!(round1(dc_printed / c), ots_printed, "c = {c}");
            assert!(((dc + 1.0) / c - ots_printed).abs() < 0.2, "c = {c}");
        }
        // d_1 = e exactly: f(x) = 1 + x(1 − ln x) − 1 = 0 at x = e.
        assert!((psz_dc(1.0).unwrap() - core::f64::consts::E).abs() < 1e-12);
    }

    #[test]
    fn psz_simple_hashing_sizes() {
        // n = 2^18, c = 1: b ln b = 2^18 gives b ≈ 24,415; max bin = ⌈(e + 1)·ln b⌉ = 38.
        let b = psz_simple_bins(1 << 18, 1.0).unwrap();
        let bf = b as f64;
        assert!(bf * bf.ln() >= f64::from(1u32 << 18));
        assert!((bf - 1.0) * (bf - 1.0).ln() < f64::from(1u32 << 18));
        let m = psz_max_bin_size(b as u64, 1.0, 2.0).unwrap();
        assert_eq!(m, ((core::f64::consts::E + 1.0) * bf.ln()).ceil() as usize);
        // Number of OTs per element and bit: b·M/n ≈ 3.7 (Table 10, c = 1).
        let ots = bf * m as f64 / f64::from(1u32 << 18);
        assert!((3.6..3.9).contains(&ots), "{ots}");
        assert!(psz_dc(0.0).is_err());
        assert!(psz_dc(f64::NAN).is_err());
        assert!(psz_max_bin_size(1, 1.0, 2.0).is_err());
    }

    #[test]
    fn kkrt_bin_factor_matches_the_published_fit() {
        // Expected values: e = (λ − b_n)/a_n with a_n, b_n as in PSWW18's fit (constants of
        // cryptoTools' CuckooIndex::selectParams), evaluated with Python's math.erf.
        let cases = [
            (1u64 << 8, 40, 1.545_543_505_664_29),
            (1 << 12, 40, 1.477_701_737_461_556_2),
            (1 << 16, 40, 1.506_085_260_282_502_3),
            (1 << 20, 40, 1.538_461_540_174_454_6),
            (1 << 24, 40, 1.570_850_202_429_160_6),
            (1 << 20, 20, 1.376_518_220_127_764),
            (1 << 20, 80, 1.862_348_180_267_835_7),
        ];
        for (n, lambda, want) in cases {
            let got = kkrt_bin_factor(n, lambda);
            assert!((got - want).abs() < 1e-9, "n = {n}, λ = {lambda}: {got}");
        }
        // For large n the fit is (λ + 130 + log2 n)/123.5.
        assert!((kkrt_bin_factor(1 << 24, 40) - 194.0 / 123.5).abs() < 1e-9);
        let p = CuckooParams::kkrt(1 << 20, 40).unwrap();
        assert_eq!(p.num_hashes(), 3);
        assert_eq!(p.stash_size(), 0);
        assert_eq!(
            p.num_bins(),
            (1.538_461_540_174_454_6 * f64::from(1u32 << 20)).ceil() as usize
        );
        // Tiny sets still get a usable table.
        for n in [0usize, 1, 2, 3, 10] {
            let p = CuckooParams::kkrt(n, 40).unwrap();
            assert!(p.num_bins() >= n.max(MIN_BINS));
        }
        assert!(CuckooParams::kkrt(10, 0).is_err());
        assert!(CuckooParams::kkrt(MAX_ITEMS + 1, 40).is_err());
    }

    #[test]
    fn psz_cuckoo_params() {
        let p = CuckooParams::psz(1 << 20).unwrap();
        assert_eq!(
            (p.num_hashes(), p.num_bins(), p.stash_size()),
            (2, 2_516_583, 4)
        );
        assert_eq!(CuckooParams::psz(1000).unwrap().num_bins(), 2400);
        assert_eq!(CuckooParams::psz(0).unwrap().num_bins(), MIN_BINS);
        assert!(CuckooParams::new(1, 10, 0).is_err());
        assert!(CuckooParams::new(4, 10, 0).is_err());
        assert!(CuckooParams::new(2, 0, 0).is_err());
    }

    #[test]
    fn binomial_tail_against_exact_sums() {
        // Small cases where the exact tail is a short sum of exactly computed terms.
        fn exact_tail(n: u64, p: f64, m: u64) -> f64 {
            let mut s = 0.0;
            for i in (m + 1)..=n {
                let mut c = 1.0f64;
                for t in 0..i {
                    c = c * (n - t) as f64 / (t + 1) as f64;
                }
                s += c * p.powi(i as i32) * (1.0 - p).powi((n - i) as i32);
            }
            s
        }
        for (n, b, m) in [
            (20u64, 4u64, 3u64),
            (20, 4, 8),
            (50, 10, 1),
            (50, 10, 12),
            (30, 2, 20),
        ] {
            let p = 1.0 / b as f64;
            let got = ln_upper_tail(n, p, m).exp();
            let want = exact_tail(n, p, m);
            assert!(
                (got - want).abs() <= 1e-12 * want.max(1e-300),
                "n={n} b={b} m={m}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn max_bin_size_is_the_smallest_safe_value_and_monotone() {
        for &(balls, bins) in &[
            (3u64 << 20, 1_614_249u64),
            (2 << 20, 2_516_583),
            (3 << 16, 98_705),
            (30, 13),
            (1000, 2),
        ] {
            let mut prev = 0;
            for lambda in [20, 30, 40, 60, 80, 128] {
                let m = max_bin_size(balls, bins, lambda).unwrap();
                assert!(overflow_log2(balls, bins, m as u64).unwrap() <= -f64::from(lambda));
                if m > 0 {
                    assert!(overflow_log2(balls, bins, m as u64 - 1).unwrap() > -f64::from(lambda));
                }
                assert!(m >= prev, "not monotone in λ");
                prev = m;
            }
        }
        // Monotone in the number of items at a fixed number of bins, and bounded by it.
        let mut prev = 0;
        for balls in [0u64, 1, 2, 10, 100, 1000, 1 << 16, 1 << 20, 3 << 20] {
            let m = max_bin_size(balls, 1 << 16, 40).unwrap();
            assert!(m >= prev && m as u64 <= balls);
            prev = m;
        }
        // One bin holds everything.
        assert_eq!(max_bin_size(17, 1, 40).unwrap(), 17);
        assert!(max_bin_size(17, 0, 40).is_err());
        assert!(max_bin_size(17, 4, 0).is_err());
    }
}
