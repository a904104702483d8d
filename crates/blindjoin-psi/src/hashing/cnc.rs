//! Parameters of a Bloom filter whose 1 bits are backed by random OTs whose choice bits are
//! checked by cut-and-choose: the parameter analysis of Rindal and Rosulek, *Improved Private
//! Set Intersection against Malicious Adversaries* (Eurocrypt 2017, ePrint 2016/746).
//!
//! **The setting.** The receiver runs N_ot random OTs with random choice bits, N_1 of them 1.
//! The sender opens ⌊p·N_ot⌋ of them, a uniformly random subset, and refuses the receiver if
//! more than τ opened choices are 1. The receiver then backs each 1 bit of its Bloom filter (N_bf bits, h hash
//! functions, at most n·h ones for n items) with an unopened OT of choice 1, and every other bit
//! with any other unopened OT; it learns the sender's 1-message exactly where it holds a 1
//! choice.
//!
//! **The conditions**, each with failure probability at most 2^-λ (t = λ·ln 2; Chernoff bounds
//! on the binomial tails, P[X ≤ μ − a] ≤ e^{−a²/2μ} and P[X ≥ μ + a] ≤ e^{−a²/(2μ + 2a/3)},
//! which hold as well for the opened choices, a sample without replacement (Hoeffding 1963,
//! Thm. 4), and depend only on the mean μ):
//!
//! 1. an honest receiver keeps at least n·h unopened ones:
//!    N_1 = least N with (1 − p)N − √(2t(1 − p)N) ≥ n·h;
//! 2. the honest receiver passes the check:
//!    τ = ⌈p·N_1 + t/3 + √(t²/9 + 2t·p·N_1)⌉;
//! 3. a receiver with M_a or more ones fails the check:
//!    M_a = least M with p·M − √(2t·p·M) ≥ τ;
//! 4. so a receiver that passes holds at most
//!    max_ones = (1 − p)·M_a + √(2t·p·M_a) unopened ones (a receiver with fewer than M_a ones
//!    opens at least p·M − √(2t·p·M) of them);
//! 5. an item outside the receiver's set lands on h bits it holds with probability at most
//!    (max_ones / N_bf)^h ≤ 2^-κ: N_bf = ⌈max_ones · 2^{κ/h}⌉;
//! 6. the honest receiver keeps at least N_bf unopened OTs in all:
//!    N_ot = least N with (1 − p)N − √(2t(1 − p)N) ≥ N_bf.
//!
//! h and p are chosen to minimise N_ot (the OTs dominate the cost): h over 1..=256, p over
//! 0.001, 0.002, …, 0.2. With κ = 128 and λ = 40 the minimum lies at h ≈ 128·ln 2 ≈ 89
//! (where h·2^{κ/h} is least) and N_bf ≈ 245 n.
//!
//! The reference implementation (libPSI, `computeAknBfParams`) tabulates the same quantities
//! with its own bounds (a deviation term √(2λ·x) where these use √(2λ ln 2 · x)); the unit test
//! compares the two tables: N_ot agrees within 1.1 % from n = 2^10 to 2^23.

use super::error::HashingError;

/// The parameters of one cut-and-choose Bloom filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CncBloomParams {
    /// Items n the filter is sized for.
    pub items: u64,
    /// Hash functions h.
    pub hashes: u32,
    /// Probability p that the sender opens an OT, in thousandths.
    pub open_per_mille: u32,
    /// Random OTs N_ot.
    pub ots: u64,
    /// The honest receiver's 1 choices N_1.
    pub ones: u64,
    /// The most opened 1 choices the sender accepts, τ.
    pub max_opened_ones: u64,
    /// Unopened 1 choices a receiver that passes holds at most (except with probability 2^-λ).
    pub max_ones: u64,
    /// Bloom filter bits N_bf.
    pub bits: u64,
}

impl CncBloomParams {
    /// The open probability p.
    pub fn open_probability(&self) -> f64 {
        f64::from(self.open_per_mille) / 1000.0
    }
}

/// The least N with (1 − p)N − √(2t(1 − p)N) ≥ target: with y = √((1 − p)N), y² − √(2t)·y ≥
/// target.
fn enough(target: f64, p: f64, t: f64) -> f64 {
    let y = ((2.0 * t).sqrt() + (2.0 * t + 4.0 * target).sqrt()) / 2.0;
    (y * y / (1.0 - p)).ceil()
}

/// The parameters for `n` items at statistical security `lambda` and computational security
/// `kappa` (see the module doc). Errors if λ or κ is 0 or above 256, or if the OT count exceeds
/// 2^32 (OT indices are 32-bit on the wire; n = 2^24 needs 4.09·10^9 at λ = 40, κ = 128).
pub fn cnc_bloom_params(n: u64, lambda: u32, kappa: u32) -> Result<CncBloomParams, HashingError> {
    for (field, v) in [("lambda", lambda), ("kappa", kappa)] {
        if !(1..=256).contains(&v) {
            return Err(HashingError::invalid(
                field,
                format!("{v}; 1 to 256 are supported"),
            ));
        }
    }
    let t = f64::from(lambda) * std::f64::consts::LN_2;
    let nf = n.max(1) as f64;
    let mut best: Option<CncBloomParams> = None;
    for h in 1..=256u32 {
        let hf = f64::from(h);
        for per_mille in 1..=200u32 {
            let p = f64::from(per_mille) / 1000.0;
            let ones = enough(nf * hf, p, t);
            let pn = p * ones;
            let tau = (pn + t / 3.0 + (t * t / 9.0 + 2.0 * t * pn).sqrt()).ceil();
            let z = ((2.0 * t).sqrt() + (2.0 * t + 4.0 * tau).sqrt()) / 2.0;
            let m_a = (z * z / p).ceil();
            let max_ones = ((1.0 - p) * m_a + (2.0 * t * p * m_a).sqrt()).ceil();
            let bits = (max_ones * (f64::from(kappa) / hf).exp2()).ceil();
            let ots = enough(bits, p, t);
            if best.is_none_or(|b| ots < b.ots as f64) {
                best = Some(CncBloomParams {
                    items: n,
                    hashes: h,
                    open_per_mille: per_mille,
                    ots: ots as u64,
                    ones: ones as u64,
                    max_opened_ones: tau as u64,
                    max_ones: max_ones as u64,
                    bits: bits as u64,
                });
            }
        }
    }
    match best {
        Some(b) if b.ots <= 1 << 32 => Ok(b),
        Some(b) => Err(HashingError::invalid(
            "set size",
            format!(
                "{n} items need {} OTs; at most 2^32 are supported (2^24 items at λ = 40)",
                b.ots
            ),
        )),
        None => Err(HashingError::invalid("set size", "no parameters found")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// libPSI's `computeAknBfParams` table at λ = 40 (the authors' reference implementation):
    /// n, N_ot, N_1, τ, p, h, N_bf.
    const REFERENCE: [(u64, u64, u64, u64, f64, u32, u64); 5] = [
        (1 << 10, 331_450, 105_905, 9_648, 0.083, 94, 302_436),
        (1 << 14, 4_434_188, 1_582_849, 59_137, 0.036, 93, 4_270_964),
        (
            1 << 16,
            16_992_857,
            6_113_957,
            150_181,
            0.024,
            91,
            16_579_297,
        ),
        (
            1 << 20,
            260_252_093,
            95_333_932,
            962_092,
            0.01,
            90,
            257_635_123,
        ),
        (
            1 << 23,
            2_052_497_778,
            758_786_092,
            3_811_372,
            0.005,
            90,
            2_042_206_617,
        ),
    ];

    #[test]
    fn follows_the_reference_table() {
        for (n, ots, ones, tau, p, h, bits) in REFERENCE {
            let ours = cnc_bloom_params(n, 40, 128).unwrap();
            let rel = |a: u64, b: u64| (a as f64 / b as f64 - 1.0).abs();
            assert!(rel(ours.ots, ots) < 0.011, "n = {n}: {ours:?}");
            assert!(rel(ours.bits, bits) < 0.011, "n = {n}: {ours:?}");
            assert!(rel(ours.ones, ones) < 0.05, "n = {n}: {ours:?}");
            assert!(ours.hashes.abs_diff(h) <= 8, "n = {n}: {ours:?}");
            // τ follows p, which both tables pick from a flat optimum: same order of magnitude.
            assert!(ours.open_probability() <= 2.0 * p && p <= 2.0 * ours.open_probability());
            assert!(rel(ours.max_opened_ones, tau) < 1.0, "n = {n}: {ours:?}");
        }
    }

    #[test]
    fn conditions_hold() {
        let t = 40.0 * std::f64::consts::LN_2;
        for n in [1, 100, 1 << 12, 1 << 20, 1 << 24] {
            let c = cnc_bloom_params(n, 40, 128).unwrap();
            let p = c.open_probability();
            let (ones, ots, bits) = (c.ones as f64, c.ots as f64, c.bits as f64);
            let lower = |mu: f64, x: f64| mu - (2.0 * t * mu).sqrt() >= x;
            // 1 and 6: enough unopened ones and OTs; 2: the honest receiver passes.
            assert!(
                lower((1.0 - p) * ones, (n * u64::from(c.hashes)) as f64),
                "{c:?}"
            );
            assert!(lower((1.0 - p) * ots, bits), "{c:?}");
            let a = c.max_opened_ones as f64 - p * ones;
            assert!(a * a / (2.0 * p * ones + 2.0 * a / 3.0) >= t, "{c:?}");
            // 5: 2^-κ for an item outside the receiver's filter.
            let log2 = f64::from(c.hashes) * (c.max_ones as f64 / bits).log2();
            assert!(log2 <= -128.0, "{c:?}");
            assert!(c.ones <= c.ots && c.bits <= c.ots);
        }
        let c = cnc_bloom_params(1 << 24, 40, 128).unwrap();
        assert_eq!((c.hashes, c.open_per_mille), (89, 3));
        assert!((4_080_000_000..4_100_000_000).contains(&c.ots), "{c:?}");
        assert!(c.bits < u64::from(u32::MAX));
    }

    #[test]
    fn refusals_name_the_field() {
        let e = cnc_bloom_params(1 << 25, 40, 128).unwrap_err();
        assert!(e.to_string().contains("2^32"), "{e}");
        assert!(cnc_bloom_params(10, 0, 128).is_err());
        assert!(cnc_bloom_params(10, 40, 300).is_err());
    }
}
