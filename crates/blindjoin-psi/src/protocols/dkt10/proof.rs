//! The two Fiat-Shamir proofs of `dkt10` and their batched checks (see the module doc).
//!
//! π_R, the receiver's: for every i, g·φ − ĝ·φ_i = A − B_i + e·(X − M_i − N_i), a proof of
//! knowledge of R_c and R_i with X − M_i − N_i = g·R_c − ĝ·R_i (one R_c for all i).
//!
//! π_S, the sender's: g'·s = A' + c·Z and, for every i, M_i·s = A'_i + c·M'_i: one k is the
//! discrete log of Z to the base g' and of every M'_i to the base M_i.
//!
//! Each verifier checks a random linear combination of its n per-item equations, with weights w_i
//! uniform in [0, 2^128) that it draws itself and never reveals. Both combinations are linear in
//! the per-item points, so each verifier adds up Σ w_i·P_i as the points arrive (before the
//! challenge is known) and finishes with a handful of scalar multiplications.

use super::group::{generators, weighted_sum};
use blindjoin_core::{Error, Result};
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, IsIdentity, VartimeMultiscalarMul};

/// The halves of the receiver's points for item i: M_i/2 = E(x_i) + g'·r_i,
/// N_i/2 = (PCH/2 − E(x_i)) + g''·r_i and B_i/2 = ĝ·β_i, where E(x_i) = H(x_i)/2,
/// PCH/2 = Σ E(x_j), R_i = 2·r_i and D_i = 2·β_i. The receiver sends the encodings of their
/// doubles.
pub(crate) fn receiver_halves(
    e_half: &RistrettoPoint,
    half_sum: &RistrettoPoint,
    r: &Scalar,
    beta: &Scalar,
) -> [RistrettoPoint; 3] {
    let gens = generators();
    [
        e_half + &gens.g1 * r,
        (half_sum - e_half) + &gens.g2 * r,
        &gens.g12 * beta,
    ]
}

/// The receiver's response for item i: φ_i = D_i + e·R_i = 2·(β_i + e·r_i).
pub(crate) fn receiver_response(beta: &Scalar, r: &Scalar, e: &Scalar) -> Scalar {
    let half = beta + e * r;
    half + half
}

/// The sender's running check of π_R: W = Σ w_i, S_B = Σ w_i·B_i, S_MN = Σ w_i·(M_i + N_i) and
/// Φ = Σ w_i·φ_i.
pub(crate) struct ReceiverProofCheck {
    w_sum: Scalar,
    s_b: RistrettoPoint,
    s_mn: RistrettoPoint,
    phi_sum: Scalar,
}

impl ReceiverProofCheck {
    pub(crate) fn new() -> Self {
        ReceiverProofCheck {
            w_sum: Scalar::ZERO,
            s_b: RistrettoPoint::identity(),
            s_mn: RistrettoPoint::identity(),
            phi_sum: Scalar::ZERO,
        }
    }

    /// The part of one piece of items: (Σ w_i·B_i, Σ w_i·(M_i + N_i)) over the piece.
    pub(crate) fn piece(
        weights: &[Scalar],
        b: &[RistrettoPoint],
        m_plus_n: &[RistrettoPoint],
    ) -> (RistrettoPoint, RistrettoPoint) {
        (weighted_sum(weights, b), weighted_sum(weights, m_plus_n))
    }

    /// Adds the weights of a frame of items and the parts of its pieces.
    pub(crate) fn add_points(
        &mut self,
        weights: &[Scalar],
        s_b: RistrettoPoint,
        s_mn: RistrettoPoint,
    ) {
        self.w_sum += weights.iter().sum::<Scalar>();
        self.s_b += s_b;
        self.s_mn += s_mn;
    }

    /// Adds the responses φ_i of items whose weights are `weights`.
    pub(crate) fn add_responses(&mut self, weights: &[Scalar], phis: &[Scalar]) {
        self.phi_sum += weights.iter().zip(phis).map(|(w, p)| w * p).sum::<Scalar>();
    }

    /// Checks W·φ·g − Φ·ĝ − W·A − W·e·X + S_B + e·S_MN = 0, the weighted sum of π_R's
    /// equations; `CheckFailed` otherwise.
    pub(crate) fn verify(
        &self,
        x: &RistrettoPoint,
        a: &RistrettoPoint,
        phi: &Scalar,
        e: &Scalar,
    ) -> Result<()> {
        let gens = generators();
        let w = self.w_sum;
        let sum = RistrettoPoint::vartime_multiscalar_mul(
            [w * phi, -self.phi_sum, -w, -(w * e), Scalar::ONE, *e],
            [
                gens.g.basepoint(),
                gens.g12.basepoint(),
                *a,
                *x,
                self.s_b,
                self.s_mn,
            ],
        );
        if sum.is_identity() {
            Ok(())
        } else {
            Err(Error::CheckFailed(
                "the receiver's proof of knowledge of its blinding exponents does not verify \
                 (an M_i, N_i pair inconsistent with X, or a wrong response)"
                    .into(),
            ))
        }
    }
}

/// The receiver's running check of π_S: S_M = Σ w_i·M_i (its own points), S_A = Σ w_i·A'_i and
/// S_M' = Σ w_i·M'_i.
pub(crate) struct SenderProofCheck {
    s_m: RistrettoPoint,
    s_a: RistrettoPoint,
    s_mp: RistrettoPoint,
}

impl SenderProofCheck {
    /// A check of the answers to points whose weighted sum is `s_m`.
    pub(crate) fn new(s_m: RistrettoPoint) -> Self {
        SenderProofCheck {
            s_m,
            s_a: RistrettoPoint::identity(),
            s_mp: RistrettoPoint::identity(),
        }
    }

    /// Adds (Σ w_i·A'_i, Σ w_i·M'_i) over some of the answers.
    pub(crate) fn add_answers(&mut self, s_a: RistrettoPoint, s_mp: RistrettoPoint) {
        self.s_a += s_a;
        self.s_mp += s_mp;
    }

    /// Checks Z ≠ 0, g'·s = A' + c·Z and s·S_M − S_A − c·S_M' = 0; `CheckFailed` naming the
    /// failed equation otherwise.
    pub(crate) fn verify(
        &self,
        z: &RistrettoPoint,
        a1: &RistrettoPoint,
        s: &Scalar,
        c: &Scalar,
    ) -> Result<()> {
        if z.is_identity() {
            return Err(Error::CheckFailed(
                "the sender's key commitment Z is the identity (a zero key)".into(),
            ));
        }
        let key = RistrettoPoint::vartime_multiscalar_mul(
            [*s, -Scalar::ONE, -c],
            [generators().g1.basepoint(), *a1, *z],
        );
        if !key.is_identity() {
            return Err(Error::CheckFailed(
                "the sender's proof of its key (Z = g'·k) does not verify".into(),
            ));
        }
        let answers = RistrettoPoint::vartime_multiscalar_mul(
            [*s, -Scalar::ONE, -c],
            [self.s_m, self.s_a, self.s_mp],
        );
        if !answers.is_identity() {
            return Err(Error::CheckFailed(
                "the sender's proof that every answer M'_i is M_i·k under the key of Z does not \
                 verify"
                    .into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::group::{generator, random_scalar, random_weights};
    use super::*;
    use blindjoin_testkit::rng;

    /// An honest receiver's statement and proof for `n` random items, with an optional change
    /// to N_0 (added before the responses, which the receiver then computes honestly).
    struct ReceiverRun {
        x: RistrettoPoint,
        a: RistrettoPoint,
        m: Vec<RistrettoPoint>,
        n: Vec<RistrettoPoint>,
        b: Vec<RistrettoPoint>,
        phi: Scalar,
        phis: Vec<Scalar>,
        e: Scalar,
    }

    fn receiver_run(n: usize, shift_n0: Option<RistrettoPoint>, seed: u64) -> ReceiverRun {
        let mut rng = rng(seed);
        let gens = generators();
        let halves: Vec<RistrettoPoint> = (0..n)
            .map(|i| generator(&format!("item {seed} {i}")))
            .collect();
        let half_sum: RistrettoPoint = halves.iter().sum();
        let (r_c, d) = (random_scalar(&mut rng), random_scalar(&mut rng));
        let x = half_sum + half_sum + &gens.g * &r_c;
        let a = &gens.g * &d;
        let (mut m, mut nn, mut b, mut r, mut beta) = (vec![], vec![], vec![], vec![], vec![]);
        for e_half in &halves {
            let (ri, bi) = (random_scalar(&mut rng), random_scalar(&mut rng));
            let [mh, nh, bh] = receiver_halves(e_half, &half_sum, &ri, &bi);
            m.push(mh + mh);
            nn.push(nh + nh);
            b.push(bh + bh);
            r.push(ri);
            beta.push(bi);
        }
        if let Some(shift) = shift_n0 {
            nn[0] += shift;
        }
        // Any challenge the prover cannot choose.
        let e = random_scalar(&mut rng);
        let phi = d + e * r_c;
        let phis = r
            .iter()
            .zip(&beta)
            .map(|(ri, bi)| receiver_response(bi, ri, &e))
            .collect();
        ReceiverRun {
            x,
            a,
            m,
            n: nn,
            b,
            phi,
            phis,
            e,
        }
    }

    fn check_receiver(run: &ReceiverRun, seed: u64) -> Result<()> {
        let w = random_weights(&mut rng(seed), run.m.len());
        let mn: Vec<RistrettoPoint> = run.m.iter().zip(&run.n).map(|(m, n)| m + n).collect();
        let mut check = ReceiverProofCheck::new();
        // In two frames, as the sender adds them up.
        let half = w.len() / 2;
        for (lo, hi) in [(0, half), (half, w.len())] {
            let (sb, smn) = ReceiverProofCheck::piece(&w[lo..hi], &run.b[lo..hi], &mn[lo..hi]);
            check.add_points(&w[lo..hi], sb, smn);
            check.add_responses(&w[lo..hi], &run.phis[lo..hi]);
        }
        check.verify(&run.x, &run.a, &run.phi, &run.e)
    }

    #[test]
    fn an_honest_receiver_proof_verifies() {
        for n in [0, 1, 2, 9] {
            check_receiver(&receiver_run(n, None, 3), 4).unwrap();
        }
    }

    #[test]
    fn a_receiver_proof_of_an_inconsistent_statement_fails() {
        // N_0 off by g: X − M_0 − N_0 has another g-exponent than X's; off by g'' or by a point of
        // unknown representation: no representation in (g, ĝ) with the receiver's R_0.
        for shift in [generator("g"), generator("g2"), generator("elsewhere")] {
            let e = check_receiver(&receiver_run(5, Some(shift), 5), 6).unwrap_err();
            assert!(
                matches!(e, Error::CheckFailed(ref m) if m.contains("receiver's proof")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_wrong_receiver_response_fails() {
        let mut run = receiver_run(6, None, 7);
        run.phis[3] += Scalar::ONE;
        assert!(check_receiver(&run, 8).is_err());
        let mut run = receiver_run(6, None, 7);
        run.phi += Scalar::ONE;
        assert!(check_receiver(&run, 8).is_err());
        // Swapped responses.
        let mut run = receiver_run(6, None, 7);
        run.phis.swap(0, 1);
        assert!(check_receiver(&run, 8).is_err());
    }

    /// A sender's answers and proof for `m`, keyed by `k`, with the first answer keyed by `k0`
    /// (k0 = k for an honest sender) and Z = g'·k_z.
    fn sender_check(
        m: &[RistrettoPoint],
        k: Scalar,
        k0: Scalar,
        k_z: Scalar,
        s_shift: Scalar,
        seed: u64,
    ) -> Result<()> {
        let mut rng = rng(seed);
        let gens = generators();
        let d = random_scalar(&mut rng);
        let z = &gens.g1 * &k_z;
        let a1 = &gens.g1 * &d;
        let answers: Vec<RistrettoPoint> = m
            .iter()
            .enumerate()
            .map(|(i, p)| p * if i == 0 { k0 } else { k })
            .collect();
        let commits: Vec<RistrettoPoint> = m.iter().map(|p| p * d).collect();
        let c = random_scalar(&mut rng);
        let s = d + c * k + s_shift;
        let w = random_weights(&mut rng, m.len());
        let mut check = SenderProofCheck::new(weighted_sum(&w, m));
        check.add_answers(weighted_sum(&w, &commits), weighted_sum(&w, &answers));
        check.verify(&z, &a1, &s, &c)
    }

    #[test]
    fn the_sender_proof_verifies_exactly_for_one_key() {
        let mut r = rng(9);
        let m: Vec<RistrettoPoint> = (0..7).map(|i| generator(&format!("M {i}"))).collect();
        let (k, k2) = (random_scalar(&mut r), random_scalar(&mut r));
        sender_check(&m, k, k, k, Scalar::ZERO, 10).unwrap();
        sender_check(&[], k, k, k, Scalar::ZERO, 10).unwrap();
        let failed = |r: Result<()>, what: &str| match r {
            Err(Error::CheckFailed(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("{other:?}"),
        };
        // A wrong M'_0, a wrong Z, a forged response, a zero key.
        failed(sender_check(&m, k, k2, k, Scalar::ZERO, 10), "every answer");
        failed(sender_check(&m, k, k, k2, Scalar::ZERO, 10), "Z = g'");
        failed(sender_check(&m, k, k, k, Scalar::ONE, 10), "Z = g'");
        failed(
            sender_check(
                &m,
                Scalar::ZERO,
                Scalar::ZERO,
                Scalar::ZERO,
                Scalar::ZERO,
                10,
            ),
            "identity",
        );
    }
}
