//! The building blocks of the sort-compare-shuffle circuit (PSZ14 App. D.1 and D.2; Huang,
//! Evans, Katz, NDSS 2012, §4), generic over a [`Backend`] and vectorised over lanes: unsigned
//! comparison, equality, conditional swap and multiplexer, ripple-carry addition and the sum of
//! all lanes.
//!
//! - [`greater_size`]: the size-optimised comparator of Kolesnikov, Sadeghi and Schneider
//!   (CANS 2009, §3.1), σ AND gates at depth σ.
//! - [`greater_depth`]: the depth-optimised comparator PSZ14 App. D.2 uses for GMW (from
//!   Schneider and Zohner, FC 2013), a tree of (greater, equal) pairs, 3σ − ⌈log2 σ⌉ − 2 AND
//!   gates at depth ⌈log2 σ⌉ + 1.
//! - [`equal`]: σ − 1 AND gates at depth ⌈log2 σ⌉.
//! - [`cond_swap`] and [`mux`]: the multiplexers of PSZ14 §3.2, one vector AND of width σ per
//!   lane (σ AND gates, one vector multiplication triple in GMW).
//! - [`add`] and [`sum_lanes`]: ripple-carry adders with one AND gate per full adder
//!   (c' = ((a ⊕ c) ∧ (b ⊕ c)) ⊕ c) and a vectorised adder tree over the lanes.
//!
//! Words are least significant bit first. Every function acts on all lanes at once and each
//! layer of AND gates is one call of [`Backend::and`] or [`Backend::and_vector`] (one GMW round).

use blindjoin_core::{Error, Result};

use super::{Backend, Word};

/// The comparator of the sort stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparator {
    /// [`greater_size`]: σ AND gates, depth σ (the choice for Yao).
    Size,
    /// [`greater_depth`]: 3σ − ⌈log2 σ⌉ − 2 AND gates, depth ⌈log2 σ⌉ + 1 (the choice for GMW).
    Depth,
}

impl Comparator {
    /// `x > y` (unsigned), lane by lane, with this comparator.
    pub fn greater<B: Backend>(self, b: &mut B, x: &[B::Bits], y: &[B::Bits]) -> Result<B::Bits> {
        match self {
            Comparator::Size => greater_size(b, x, y),
            Comparator::Depth => greater_depth(b, x, y),
        }
    }

    /// The AND gates of one comparison of σ-bit values (σ ≥ 1).
    pub fn and_gates(self, sigma: usize) -> u64 {
        match self {
            Comparator::Size => sigma as u64,
            Comparator::Depth => 3 * sigma as u64 - u64::from(ceil_log2(sigma)) - 2,
        }
    }

    /// The AND depth (GMW rounds) of one comparison of σ-bit values (σ ≥ 1).
    pub fn depth(self, sigma: usize) -> u64 {
        match self {
            Comparator::Size => sigma as u64,
            Comparator::Depth => u64::from(ceil_log2(sigma)) + 1,
        }
    }
}

/// ⌈log2 n⌉ (0 for n ≤ 1).
pub fn ceil_log2(n: usize) -> u32 {
    if n <= 1 {
        0
    } else {
        usize::BITS - (n - 1).leading_zeros()
    }
}

fn check_operands<B: Backend>(x: &[B::Bits], y: &[B::Bits], what: &'static str) -> Result<()> {
    if x.is_empty() || x.len() != y.len() {
        return Err(Error::InvalidParam {
            field: what,
            reason: format!("operands of {} and {} bits", x.len(), y.len()),
        });
    }
    Ok(())
}

fn one<T>(v: Vec<T>) -> Result<T> {
    v.into_iter().next().ok_or_else(|| Error::InvalidParam {
        field: "backend",
        reason: "an AND layer returned fewer outputs than it was given".into(),
    })
}

/// `x > y` for unsigned σ-bit `x`, `y` (σ ≥ 1), lane by lane: the size-optimised comparator of
/// Kolesnikov, Sadeghi and Schneider, c_{i+1} = x_i ⊕ ((x_i ⊕ c_i) ∧ (y_i ⊕ c_i)) from c_0 = 0
/// (the carry of x + ¬y), whose first step is c_1 = x_0 ∧ ¬y_0.
///
/// σ AND gates per lane, depth σ (σ calls of [`Backend::and`]).
pub fn greater_size<B: Backend>(b: &mut B, x: &[B::Bits], y: &[B::Bits]) -> Result<B::Bits> {
    check_operands::<B>(x, y, "comparison width")?;
    let ny0 = b.not(&y[0]);
    let mut c = one(b.and(&[(&x[0], &ny0)])?)?;
    for (xi, yi) in x.iter().zip(y).skip(1) {
        let xc = b.xor(xi, &c);
        let yc = b.xor(yi, &c);
        let t = one(b.and(&[(&xc, &yc)])?)?;
        c = b.xor(xi, &t);
    }
    Ok(c)
}

/// `x > y` for unsigned σ-bit `x`, `y` (σ ≥ 1), lane by lane, at logarithmic depth: the leaves
/// are (gt_i, eq_i) = (x_i ∧ ¬y_i, ¬(x_i ⊕ y_i)), and each tree level joins neighbouring
/// (high, low) nodes into (gt_h ⊕ (eq_h ∧ gt_l), eq_h ∧ eq_l) (the XOR is an OR: gt_h and eq_h
/// exclude each other). The nodes that contain bit 0 never need their `eq`, which is not
/// computed. A node without a neighbour moves up a level unchanged, so any σ works.
///
/// 3σ − ⌈log2 σ⌉ − 2 AND gates per lane; depth ⌈log2 σ⌉ + 1: the leaves, then one
/// [`Backend::and`] call per tree level with all of its pairs. (A comparator of σ-bit values
/// cannot have depth ⌈log2 σ⌉: x > y has algebraic degree σ + 1, and depth d reaches degree at
/// most 2^d.)
pub fn greater_depth<B: Backend>(b: &mut B, x: &[B::Bits], y: &[B::Bits]) -> Result<B::Bits> {
    check_operands::<B>(x, y, "comparison width")?;
    let ny: Vec<B::Bits> = y.iter().map(|yi| b.not(yi)).collect();
    let pairs: Vec<(&B::Bits, &B::Bits)> = x.iter().zip(&ny).collect();
    let gt = b.and(&pairs)?;
    // Node k: (gt, eq); eq is None for the node holding bit 0.
    let mut nodes: Vec<(B::Bits, Option<B::Bits>)> = gt
        .into_iter()
        .enumerate()
        .map(|(i, g)| {
            let eq = (i > 0).then(|| {
                let d = b.xor(&x[i], &y[i]);
                b.not(&d)
            });
            (g, eq)
        })
        .collect();
    while nodes.len() > 1 {
        let joins = nodes.len() / 2;
        let mut ands: Vec<(&B::Bits, &B::Bits)> = Vec::with_capacity(2 * joins);
        for k in 0..joins {
            let (lo, hi) = (&nodes[2 * k], &nodes[2 * k + 1]);
            let Some(eq_h) = hi.1.as_ref() else {
                return Err(Error::InvalidParam {
                    field: "comparison tree",
                    reason: "a high node lacks its equality wire".into(),
                });
            };
            ands.push((eq_h, &lo.0));
            if let Some(eq_l) = lo.1.as_ref() {
                ands.push((eq_h, eq_l));
            }
        }
        let mut outs = b.and(&ands)?.into_iter();
        let mut next = Vec::with_capacity(nodes.len().div_ceil(2));
        for k in 0..joins {
            let (lo, hi) = (&nodes[2 * k], &nodes[2 * k + 1]);
            let t = outs.next();
            let eq = if lo.1.is_some() { outs.next() } else { None };
            let Some(t) = t else {
                return Err(Error::InvalidParam {
                    field: "backend",
                    reason: "an AND layer returned fewer outputs than it was given".into(),
                });
            };
            next.push((b.xor(&hi.0, &t), eq));
        }
        if nodes.len() % 2 == 1
            && let Some(last) = nodes.pop()
        {
            next.push(last);
        }
        nodes = next;
    }
    nodes
        .pop()
        .map(|(g, _)| g)
        .ok_or_else(|| Error::InvalidParam {
            field: "comparison width",
            reason: "no bits".into(),
        })
}

/// `x = y` for σ-bit `x`, `y` (σ ≥ 1), lane by lane: the AND of the σ bits ¬(x_i ⊕ y_i) by a
/// balanced tree.
///
/// σ − 1 AND gates per lane; depth ⌈log2 σ⌉, one [`Backend::and`] call per tree level.
pub fn equal<B: Backend>(b: &mut B, x: &[B::Bits], y: &[B::Bits]) -> Result<B::Bits> {
    check_operands::<B>(x, y, "equality width")?;
    let mut level: Vec<B::Bits> = x
        .iter()
        .zip(y)
        .map(|(xi, yi)| {
            let d = b.xor(xi, yi);
            b.not(&d)
        })
        .collect();
    while level.len() > 1 {
        let pairs: Vec<(&B::Bits, &B::Bits)> =
            level.chunks_exact(2).map(|p| (&p[0], &p[1])).collect();
        let mut next = b.and(&pairs)?;
        if level.len() % 2 == 1
            && let Some(last) = level.pop()
        {
            next.push(last);
        }
        level = next;
    }
    level.pop().ok_or_else(|| Error::InvalidParam {
        field: "equality width",
        reason: "no bits".into(),
    })
}

/// Swaps `x` and `y` in the lanes where `c` = 1: t = c ∧ (x ⊕ y) by one
/// [`Backend::and_vector`] call, x' = x ⊕ t, y' = y ⊕ t. Returns (x', y').
///
/// σ AND gates per lane (one vector multiplication triple of width σ), depth 1.
pub fn cond_swap<B: Backend>(
    b: &mut B,
    c: &B::Bits,
    x: &[B::Bits],
    y: &[B::Bits],
) -> Result<(Word<B>, Word<B>)> {
    check_operands::<B>(x, y, "swap width")?;
    let d: Vec<B::Bits> = x.iter().zip(y).map(|(xi, yi)| b.xor(xi, yi)).collect();
    let t = one(b.and_vector(&[(c, &d)])?)?;
    let x2 = x.iter().zip(&t).map(|(xi, ti)| b.xor(xi, ti)).collect();
    let y2 = y.iter().zip(&t).map(|(yi, ti)| b.xor(yi, ti)).collect();
    Ok((x2, y2))
}

/// `s ? y : x`, lane by lane: x ⊕ (s ∧ (x ⊕ y)), by one [`Backend::and_vector`] call.
///
/// σ AND gates per lane (one vector multiplication triple of width σ), depth 1.
pub fn mux<B: Backend>(b: &mut B, s: &B::Bits, x: &[B::Bits], y: &[B::Bits]) -> Result<Word<B>> {
    check_operands::<B>(x, y, "multiplexer width")?;
    let d: Vec<B::Bits> = x.iter().zip(y).map(|(xi, yi)| b.xor(xi, yi)).collect();
    let t = one(b.and_vector(&[(s, &d)])?)?;
    Ok(x.iter().zip(&t).map(|(xi, ti)| b.xor(xi, ti)).collect())
}

/// `x + y` for unsigned w-bit `x`, `y` (w ≥ 1), lane by lane, as a (w + 1)-bit word: a
/// ripple-carry adder, a half adder (one AND) for bit 0 and for every further bit a full adder
/// with one AND, c' = ((a ⊕ c) ∧ (b ⊕ c)) ⊕ c.
///
/// w AND gates per lane, depth w (one [`Backend::and`] call per bit).
pub fn add<B: Backend>(b: &mut B, x: &[B::Bits], y: &[B::Bits]) -> Result<Word<B>> {
    check_operands::<B>(x, y, "adder width")?;
    let mut out = Vec::with_capacity(x.len() + 1);
    out.push(b.xor(&x[0], &y[0]));
    let mut c = one(b.and(&[(&x[0], &y[0])])?)?;
    for (xi, yi) in x.iter().zip(y).skip(1) {
        let xc = b.xor(xi, &c);
        let yc = b.xor(yi, &c);
        out.push(b.xor(&xc, yi));
        let t = one(b.and(&[(&xc, &yc)])?)?;
        c = b.xor(&t, &c);
    }
    out.push(c);
    Ok(out)
}

/// The sum of the w-bit values (w ≥ 1) of all M lanes of `word`, in one lane, as a
/// (w + ⌈log2 M⌉)-bit word (M = 0 gives w zero bits in one lane).
///
/// An adder tree: each level adds the first ⌊M/2⌋ lanes to the next ⌊M/2⌋ with [`add`]
/// (vectorised over those lanes) and, for odd M, carries the last lane up, widened by a
/// public 0. Fewer than w·M + M·⌈log2 M⌉ AND gates; depth w + (w + 1) + … over the
/// ⌈log2 M⌉ levels.
pub fn sum_lanes<B: Backend>(b: &mut B, word: &[B::Bits]) -> Result<Word<B>> {
    let Some(first) = word.first() else {
        return Err(Error::InvalidParam {
            field: "sum width",
            reason: "no bits".into(),
        });
    };
    let mut lanes = b.lanes(first);
    if lanes == 0 {
        return Ok(word.iter().map(|_| b.constant(false, 1)).collect());
    }
    let mut cur: Word<B> = word.iter().map(|p| b.concat(&[p])).collect();
    while lanes > 1 {
        let h = lanes / 2;
        let lo_idx: Vec<usize> = (0..h).collect();
        let hi_idx: Vec<usize> = (h..2 * h).collect();
        let xs: Word<B> = cur.iter().map(|p| b.gather(p, &lo_idx)).collect();
        let ys: Word<B> = cur.iter().map(|p| b.gather(p, &hi_idx)).collect();
        let mut sum = add(b, &xs, &ys)?;
        if lanes % 2 == 1 {
            let last = [2 * h];
            for (j, s) in sum.iter_mut().enumerate() {
                let carried = match cur.get(j) {
                    Some(p) => b.gather(p, &last),
                    None => b.constant(false, 1),
                };
                *s = b.concat(&[s, &carried]);
            }
        }
        cur = sum;
        lanes = h + lanes % 2;
    }
    Ok(cur)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::circuit::count::Count;
    use crate::circuit::plain::{Plain, PlainBits};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const WIDTHS: [usize; 9] = [1, 2, 3, 5, 7, 8, 17, 32, 64];
    const LANES: usize = 300;

    fn mask(sigma: usize) -> u64 {
        if sigma >= 64 {
            u64::MAX
        } else {
            (1u64 << sigma) - 1
        }
    }

    /// Random σ-bit values with many equal pairs and equal high parts (the hard cases of a
    /// comparator).
    fn operands(rng: &mut StdRng, sigma: usize) -> (Vec<u64>, Vec<u64>) {
        let m = mask(sigma);
        let x: Vec<u64> = (0..LANES).map(|_| rng.random::<u64>() & m).collect();
        let y = x
            .iter()
            .map(|&v| match rng.random_range(0..4) {
                0 => v,
                1 => v ^ (1u64 << rng.random_range(0..sigma)),
                2 => v ^ (rng.random::<u64>() & mask(rng.random_range(0..=sigma))),
                _ => rng.random::<u64>() & m,
            })
            .collect();
        (x, y)
    }

    fn count_of(sigma: usize, f: impl FnOnce(&mut Count, &[usize], &[usize])) -> Count {
        let mut c = Count::new();
        let w = vec![1usize; sigma];
        f(&mut c, &w, &w);
        c
    }

    #[test]
    fn comparators_match_unsigned_greater_than() {
        let mut rng = StdRng::seed_from_u64(11);
        for sigma in WIDTHS {
            let (xv, yv) = operands(&mut rng, sigma);
            let (x, y) = (Plain::word(&xv, sigma), Plain::word(&yv, sigma));
            let want: Vec<bool> = xv.iter().zip(&yv).map(|(a, b)| a > b).collect();
            for cmp in [Comparator::Size, Comparator::Depth] {
                let got = cmp.greater(&mut Plain, &x, &y).unwrap();
                assert_eq!(got.to_bools(), want, "{cmp:?} σ = {sigma}");
            }
        }
    }

    #[test]
    fn comparator_gate_counts_and_rounds() {
        for sigma in 1..=70 {
            for cmp in [Comparator::Size, Comparator::Depth] {
                let c = count_of(sigma, |c, x, y| {
                    cmp.greater(c, x, y).unwrap();
                });
                assert_eq!(c.and_gates, cmp.and_gates(sigma), "{cmp:?} σ = {sigma}");
                assert_eq!(c.rounds, cmp.depth(sigma), "{cmp:?} σ = {sigma}");
                assert_eq!(c.scalar_ands, c.and_gates);
            }
        }
        let c = count_of(32, |c, x, y| {
            greater_depth(c, x, y).unwrap();
        });
        assert_eq!((c.and_gates, c.rounds), (89, 6));
        let c = count_of(64, |c, x, y| {
            greater_depth(c, x, y).unwrap();
        });
        assert_eq!((c.and_gates, c.rounds), (184, 7));
        let c = count_of(32, |c, x, y| {
            greater_size(c, x, y).unwrap();
        });
        assert_eq!((c.and_gates, c.rounds), (32, 32));
    }

    #[test]
    fn equality_matches_and_costs_sigma_minus_one() {
        let mut rng = StdRng::seed_from_u64(12);
        for sigma in WIDTHS {
            let (xv, yv) = operands(&mut rng, sigma);
            let got = equal(
                &mut Plain,
                &Plain::word(&xv, sigma),
                &Plain::word(&yv, sigma),
            )
            .unwrap();
            let want: Vec<bool> = xv.iter().zip(&yv).map(|(a, b)| a == b).collect();
            assert_eq!(got.to_bools(), want, "σ = {sigma}");
            let c = count_of(sigma, |c, x, y| {
                equal(c, x, y).unwrap();
            });
            assert_eq!(c.and_gates, sigma as u64 - 1);
            assert_eq!(c.rounds, u64::from(ceil_log2(sigma)));
        }
    }

    #[test]
    fn cond_swap_and_mux_select_by_lane() {
        let mut rng = StdRng::seed_from_u64(13);
        for sigma in WIDTHS {
            let (xv, yv) = operands(&mut rng, sigma);
            let cv: Vec<bool> = (0..LANES).map(|_| rng.random()).collect();
            let (x, y) = (Plain::word(&xv, sigma), Plain::word(&yv, sigma));
            let c = PlainBits::from_bools(&cv);
            let (x2, y2) = cond_swap(&mut Plain, &c, &x, &y).unwrap();
            let m = mux(&mut Plain, &c, &x, &y).unwrap();
            let (x2, y2, m) = (Plain::values(&x2), Plain::values(&y2), Plain::values(&m));
            for i in 0..LANES {
                let (a, b) = if cv[i] {
                    (yv[i], xv[i])
                } else {
                    (xv[i], yv[i])
                };
                assert_eq!((x2[i], y2[i]), (a, b));
                assert_eq!(m[i], if cv[i] { yv[i] } else { xv[i] });
            }
            let mut cnt = Count::new();
            let w = vec![LANES; sigma];
            cond_swap(&mut cnt, &LANES, &w, &w).unwrap();
            mux(&mut cnt, &LANES, &w, &w).unwrap();
            assert_eq!(cnt.and_gates, 2 * (sigma * LANES) as u64);
            assert_eq!(cnt.rounds, 2);
            assert_eq!(cnt.scalar_ands, 0);
            assert_eq!(
                cnt.vector_triples,
                std::collections::BTreeMap::from([(sigma, 2 * LANES as u64)])
            );
        }
    }

    #[test]
    fn adder_and_lane_sum() {
        let mut rng = StdRng::seed_from_u64(14);
        for w in [1usize, 2, 5, 31, 40] {
            let xv: Vec<u64> = (0..LANES).map(|_| rng.random::<u64>() & mask(w)).collect();
            let yv: Vec<u64> = (0..LANES).map(|_| rng.random::<u64>() & mask(w)).collect();
            let s = add(&mut Plain, &Plain::word(&xv, w), &Plain::word(&yv, w)).unwrap();
            assert_eq!(s.len(), w + 1);
            let want: Vec<u64> = xv.iter().zip(&yv).map(|(a, b)| a + b).collect();
            assert_eq!(Plain::values(&s), want);
            let c = count_of(w, |c, x, y| {
                add(c, x, y).unwrap();
            });
            assert_eq!((c.and_gates, c.rounds), (w as u64, w as u64));
            for m in [0usize, 1, 2, 3, 7, 8, 9, 100, 255, 256, 257] {
                let v: Vec<u64> = (0..m).map(|_| rng.random::<u64>() & mask(w)).collect();
                let s = sum_lanes(&mut Plain, &Plain::word(&v, w)).unwrap();
                assert_eq!(s.len(), w + ceil_log2(m) as usize, "w = {w}, M = {m}");
                assert_eq!(Plain::values(&s), vec![v.iter().sum::<u64>()]);
            }
        }
    }
}
