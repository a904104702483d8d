//! The sort-compare-shuffle (SCS) circuit for PSI of Huang, Evans and Katz (NDSS 2012, §4), as
//! PSZ14 App. D.1 counts it, with the depth-optimised comparator of App. D.2 as an option
//! ([`Comparator`]), and two variants on the same merge: the intersection's size
//! ([`scs_cardinality`]) and the sum of the sender's payloads over the intersection
//! ([`scs_sum`]).
//!
//! **Sort** ([`bitonic_merge`]). Each party sorts its set ascending; the circuit forms the
//! bitonic sequence sender ascending, receiver reversed (a free [`Backend::gather`]) and runs
//! Batcher's bitonic merger (AFIPS 1968): log2 N stages of N/2 comparators, each a comparison
//! and a [`cond_swap`] that puts the smaller value first. All comparators of a stage are the
//! lanes of one set of gate calls. Sizes need not be powers of two: the sequence is padded to
//! N = 2^⌈log2(n_s + n_r)⌉ with a *public* +∞ between the two lists, whose positions are tracked
//! in plain data; a comparator that meets a +∞ has a known outcome and costs no gates. For
//! n_s = n_r = n a power of two there is no padding and the merge has n·log2(2n) comparators,
//! 2σ·n·log2(2n) AND gates with [`Comparator::Size`].
//!
//! **Compare** ([`compare`]). On the merged a_0 … a_{L−1}: e_i = [a_i = a_{i+1}] for
//! i < L − 1 ([`neighbour_equal`], σ − 1 AND gates each); output lane k < ⌊L/2⌋ has flag
//! f_k = e_{2k} ∨ e_{2k+1} ([`pair_flags`]; just e_{2k} when 2k + 1 = L − 1; a ∨ b =
//! a ⊕ b ⊕ (a ∧ b), one AND gate) and value f_k ∧ a_{2k+1} (one vector AND of width σ). As
//! each set's values are distinct, a matched pair (i, i + 1) holds exactly one odd index, and
//! each output lane sees at most one match. For n_s = n_r = n: σ(3n − 1) − n AND gates.
//! **A lane without a match reads 0, so 0 must not be an element** (callers map their items to
//! nonzero values).
//!
//! **Shuffle** ([`waksman`]). The ⌊L/2⌋ compare outputs pass through a Waksman network of
//! [`shuffle_lanes`] = ⌊L/2⌋ inputs (any size; for n_s = n_r = n a power of two, n inputs and
//! σ(n·log2 n − n + 1) AND gates), its switches the shuffling party's input.
//!
//! **Totals** for n_s = n_r = n a power of two, σ-bit values, [`Comparator::Size`]:
//! σ(3n·log2 n + 4n) − n AND gates, of which 2n·log2 n + n + 1 vector ANDs (multiplexers) of
//! width σ (PSZ14 §3.2); the tests check every term.
//!
//! **Lane layouts.** Inputs: a [`Word`] per party, one value per lane, sorted ascending by the
//! key bits (the low `key_bits` planes). [`bitonic_merge`] returns n_s + n_r lanes ascending.
//! [`scs_intersection`] returns ⌊(n_s + n_r)/2⌋ lanes of σ bits: output lane `perm[k]` holds
//! compare lane `k` (see [`super::waksman`]). [`scs_cardinality`] and [`scs_sum`] return one
//! lane, of ⌈log2 ⌊L/2⌋⌉ + 1 and value_bits + ⌈log2(L − 1)⌉ bits.

use std::slice;

use blindjoin_core::{Error, Result};

use super::gadgets::{Comparator, cond_swap, sum_lanes};
use super::waksman::waksman;
use super::{Backend, Word, gadgets};

/// A position of the merge holding the public +∞.
const INF: usize = usize::MAX;

fn invalid(field: &'static str, reason: String) -> Error {
    Error::InvalidParam { field, reason }
}

/// Sorts the union of two ascending lists by Batcher's bitonic merger (module doc, **Sort**):
/// `sender` (n_s lanes) and `receiver` (n_r lanes) are words of the same width, each sorted
/// ascending by their low `key_bits` planes; the result is their n_s + n_r values in ascending
/// order of those planes, the further planes (a payload) moved with their key.
///
/// With n = (n_s + n_r)/2 a power of two: n·log2(2n) comparators, each one comparison of
/// `key_bits` bits and a conditional swap of the whole width; log2(2n) stages of depth
/// `cmp.depth(key_bits) + 1`. Padding positions cost nothing.
pub fn bitonic_merge<B: Backend>(
    b: &mut B,
    cmp: Comparator,
    sender: &[B::Bits],
    receiver: &[B::Bits],
    key_bits: usize,
) -> Result<Word<B>> {
    let width = sender.len();
    if width != receiver.len() || key_bits == 0 || key_bits > width {
        return Err(invalid(
            "merge width",
            format!(
                "words of {width} and {} bits with {key_bits} key bits",
                receiver.len()
            ),
        ));
    }
    let ns = b.lanes(&sender[0]);
    let nr = b.lanes(&receiver[0]);
    let total = ns + nr;
    if ns == 0 || nr == 0 {
        // One list alone is already sorted.
        return Ok(sender
            .iter()
            .zip(receiver)
            .map(|(s, r)| b.concat(&[s, r]))
            .collect());
    }
    let rev: Vec<usize> = (0..nr).rev().collect();
    let mut cur: Word<B> = sender
        .iter()
        .zip(receiver)
        .map(|(s, r)| {
            let r = b.gather(r, &rev);
            b.concat(&[s, &r])
        })
        .collect();
    // Position → lane of `cur` (or INF): sender ascending, +∞ padding, receiver descending.
    let size = total.next_power_of_two();
    let mut lane_of = vec![INF; size];
    for (p, l) in lane_of.iter_mut().take(ns).enumerate() {
        *l = p;
    }
    for (k, l) in lane_of[size - nr..].iter_mut().enumerate() {
        *l = ns + k;
    }
    let mut lo_idx: Vec<usize> = Vec::with_capacity(size / 2);
    let mut hi_idx: Vec<usize> = Vec::with_capacity(size / 2);
    let mut idx: Vec<usize> = Vec::with_capacity(total);
    let mut h = size / 2;
    while h >= 1 {
        lo_idx.clear();
        hi_idx.clear();
        for start in (0..size).step_by(2 * h) {
            for i in start..start + h {
                let j = i + h;
                match (lane_of[i] == INF, lane_of[j] == INF) {
                    // A real value meets +∞ above it: it moves down, publicly.
                    (true, false) => lane_of.swap(i, j),
                    (false, false) => {
                        lo_idx.push(lane_of[i]);
                        hi_idx.push(lane_of[j]);
                    }
                    _ => {}
                }
            }
        }
        if !lo_idx.is_empty() {
            let xs: Word<B> = cur.iter().map(|p| b.gather(p, &lo_idx)).collect();
            let ys: Word<B> = cur.iter().map(|p| b.gather(p, &hi_idx)).collect();
            let c = cmp.greater(b, &xs[..key_bits], &ys[..key_bits])?;
            let (mn, mx) = cond_swap(b, &c, &xs, &ys)?;
            // The smaller value stays in the lower position's lane, the larger in the upper's.
            let t = lo_idx.len();
            idx.clear();
            idx.extend(0..total);
            for (k, (&lo, &hi)) in lo_idx.iter().zip(&hi_idx).enumerate() {
                idx[lo] = total + k;
                idx[hi] = total + t + k;
            }
            cur = cur
                .iter()
                .zip(mn.iter().zip(&mx))
                .map(|(p, (x, y))| {
                    let all = b.concat(&[p, x, y]);
                    b.gather(&all, &idx)
                })
                .collect();
        }
        h /= 2;
    }
    let order: Vec<usize> = lane_of.iter().copied().filter(|&l| l != INF).collect();
    Ok(cur.iter().map(|p| b.gather(p, &order)).collect())
}

/// e_i = [a_i = a_{i+1}] on the low `key_bits` planes of `sorted` (L lanes), for i < L − 1, as
/// L − 1 lanes; `None` when L < 2. (σ − 1 AND gates per lane, depth ⌈log2 σ⌉.)
pub fn neighbour_equal<B: Backend>(
    b: &mut B,
    sorted: &[B::Bits],
    key_bits: usize,
) -> Result<Option<B::Bits>> {
    if key_bits == 0 || key_bits > sorted.len() {
        return Err(invalid(
            "compare width",
            format!("{key_bits} key bits of a {}-bit word", sorted.len()),
        ));
    }
    let l = b.lanes(&sorted[0]);
    if l < 2 {
        return Ok(None);
    }
    let lo: Vec<usize> = (0..l - 1).collect();
    let hi: Vec<usize> = (1..l).collect();
    let xs: Word<B> = sorted[..key_bits]
        .iter()
        .map(|p| b.gather(p, &lo))
        .collect();
    let ys: Word<B> = sorted[..key_bits]
        .iter()
        .map(|p| b.gather(p, &hi))
        .collect();
    gadgets::equal(b, &xs, &ys).map(Some)
}

/// The flags f_k = e_{2k} ∨ e_{2k+1} of the compare stage, k < ⌊L/2⌋ where `e` has L − 1 lanes
/// (f_k = e_{2k} when e_{2k+1} does not exist): ⌊(L − 1)/2⌋ AND gates in one call.
pub fn pair_flags<B: Backend>(b: &mut B, e: &B::Bits) -> Result<B::Bits> {
    let ne = b.lanes(e);
    let with_or = ne / 2;
    let flags = ne.div_ceil(2);
    let even: Vec<usize> = (0..with_or).map(|k| 2 * k).collect();
    let odd: Vec<usize> = (0..with_or).map(|k| 2 * k + 1).collect();
    let ea = b.gather(e, &even);
    let eb = b.gather(e, &odd);
    let ored = if with_or > 0 {
        let prod = b.and(&[(&ea, &eb)])?;
        let x = b.xor(&ea, &eb);
        match prod.first() {
            Some(p) => b.xor(&x, p),
            None => return Err(invalid("backend", "an AND layer lost its output".into())),
        }
    } else {
        ea
    };
    if flags > with_or {
        let tail = b.gather(e, &[ne - 1]);
        Ok(b.concat(&[&ored, &tail]))
    } else {
        Ok(ored)
    }
}

/// The compare stage (module doc, **Compare**) on the merged list `sorted` (L lanes): ⌊L/2⌋
/// lanes of `key_bits` bits, lane k holding a_{2k+1} if it equals a neighbour and 0 otherwise.
///
/// For L = 2n: σ(3n − 1) − n AND gates (n vector ANDs of width σ), depth ⌈log2 σ⌉ + 2.
pub fn compare<B: Backend>(b: &mut B, sorted: &[B::Bits], key_bits: usize) -> Result<Word<B>> {
    let Some(e) = neighbour_equal(b, sorted, key_bits)? else {
        return Ok((0..key_bits).map(|_| b.constant(false, 0)).collect());
    };
    let flags = pair_flags(b, &e)?;
    let k = b.lanes(&flags);
    let odd: Vec<usize> = (0..k).map(|k| 2 * k + 1).collect();
    let values: Word<B> = sorted[..key_bits]
        .iter()
        .map(|p| b.gather(p, &odd))
        .collect();
    b.and_vector(&[(&flags, &values)])?
        .into_iter()
        .next()
        .ok_or_else(|| invalid("backend", "a vector AND layer lost its output".into()))
}

/// The number of inputs of the shuffle of [`scs_intersection`]: the ⌊(n_s + n_r)/2⌋ compare
/// outputs (its switches are `waksman_switch_count(shuffle_lanes(n_s, n_r))` lanes).
pub fn shuffle_lanes(n_s: usize, n_r: usize) -> usize {
    (n_s + n_r) / 2
}

/// The SCS intersection circuit: merge, compare, shuffle (module doc). `sender_sorted` and
/// `receiver_sorted` are σ-bit words (σ ≥ 1), each sorted ascending with distinct nonzero
/// values; `switches` has `waksman_switch_count(shuffle_lanes(n_s, n_r))` lanes. Returns
/// [`shuffle_lanes`] lanes of σ bits: the intersection's values in some lanes, 0 in the others
/// (output lane `perm[k]` holds compare lane `k` when `switches = waksman_switches(perm)`).
///
/// For n_s = n_r = n a power of two and [`Comparator::Size`]: σ(3n·log2 n + 4n) − n AND gates.
pub fn scs_intersection<B: Backend>(
    b: &mut B,
    cmp: Comparator,
    sender_sorted: &[B::Bits],
    receiver_sorted: &[B::Bits],
    switches: &B::Bits,
) -> Result<Word<B>> {
    let sigma = sender_sorted.len();
    let merged = bitonic_merge(b, cmp, sender_sorted, receiver_sorted, sigma)?;
    let found = compare(b, &merged, sigma)?;
    waksman(b, &found, switches)
}

/// The number of lanes of `flags` that hold 1, in one lane, as a (1 + ⌈log2 M⌉)-bit word for M
/// lanes: [`sum_lanes`] of the 1-bit values. Fewer than 2M AND gates.
pub fn count_ones<B: Backend>(b: &mut B, flags: &B::Bits) -> Result<Word<B>> {
    sum_lanes(b, slice::from_ref(flags))
}

/// The size of the intersection: merge, the compare stage's flags ([`pair_flags`]) and
/// [`count_ones`] of them; no shuffle. One lane of 1 + ⌈log2 ⌊L/2⌋⌉ bits (one bit of 0 for
/// L < 2), L = n_s + n_r.
pub fn scs_cardinality<B: Backend>(
    b: &mut B,
    cmp: Comparator,
    sender_sorted: &[B::Bits],
    receiver_sorted: &[B::Bits],
) -> Result<Word<B>> {
    let sigma = sender_sorted.len();
    let merged = bitonic_merge(b, cmp, sender_sorted, receiver_sorted, sigma)?;
    let Some(e) = neighbour_equal(b, &merged, sigma)? else {
        return Ok(vec![b.constant(false, 1)]);
    };
    let flags = pair_flags(b, &e)?;
    count_ones(b, &flags)
}

/// The sum of the sender's payloads over the intersection. `sender` and `receiver` are words
/// of `key_bits` + value_bits planes (value_bits ≥ 1), sorted ascending by their keys (the low
/// `key_bits` planes) with distinct keys; the payload planes hold the sender's value, and 0 in
/// the receiver's word. The merge carries the payloads; for every i < L − 1,
/// e_i ∧ (p_i ⊕ p_{i+1}) is the sender's payload of a matched pair (one vector AND of width
/// value_bits per lane, one call), and [`sum_lanes`] adds them up.
///
/// Returns one lane of value_bits + ⌈log2(L − 1)⌉ bits (value_bits zero bits for L < 2), which
/// cannot overflow.
pub fn scs_sum<B: Backend>(
    b: &mut B,
    cmp: Comparator,
    sender: &[B::Bits],
    receiver: &[B::Bits],
    key_bits: usize,
) -> Result<Word<B>> {
    if key_bits >= sender.len() {
        return Err(invalid(
            "sum width",
            format!(
                "{key_bits} key bits leave no payload in {} bits",
                sender.len()
            ),
        ));
    }
    let merged = bitonic_merge(b, cmp, sender, receiver, key_bits)?;
    let Some(e) = neighbour_equal(b, &merged, key_bits)? else {
        return Ok(merged[key_bits..]
            .iter()
            .map(|_| b.constant(false, 1))
            .collect());
    };
    let l = b.lanes(&merged[0]);
    let lo: Vec<usize> = (0..l - 1).collect();
    let hi: Vec<usize> = (1..l).collect();
    let d: Word<B> = merged[key_bits..]
        .iter()
        .map(|p| {
            let x = b.gather(p, &lo);
            let y = b.gather(p, &hi);
            b.xor(&x, &y)
        })
        .collect();
    let Some(paid) = b.and_vector(&[(&e, &d)])?.into_iter().next() else {
        return Err(invalid(
            "backend",
            "a vector AND layer lost its output".into(),
        ));
    };
    sum_lanes(b, &paid)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::circuit::count::Count;
    use crate::circuit::gadgets::ceil_log2;
    use crate::circuit::plain::{Plain, PlainBits};
    use crate::circuit::waksman::{waksman_layers, waksman_switch_count, waksman_switches};
    use rand::rngs::StdRng;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    use std::collections::{BTreeMap, BTreeSet};

    const CMPS: [Comparator; 2] = [Comparator::Size, Comparator::Depth];

    /// Two sorted sets of distinct nonzero σ-bit values with `common` values in both.
    fn sets(
        rng: &mut StdRng,
        sigma: usize,
        ns: usize,
        nr: usize,
        common: usize,
    ) -> (Vec<u64>, Vec<u64>) {
        let max = if sigma >= 64 {
            u64::MAX
        } else {
            (1u64 << sigma) - 1
        };
        let mut pool = BTreeSet::new();
        while pool.len() < ns + nr - common {
            pool.insert(rng.random_range(1..=max));
        }
        let mut pool: Vec<u64> = pool.into_iter().collect();
        pool.shuffle(rng);
        let (shared, rest) = pool.split_at(common);
        let (only_s, only_r) = rest.split_at(ns - common);
        let mut s: Vec<u64> = shared.iter().chain(only_s).copied().collect();
        let mut r: Vec<u64> = shared.iter().chain(only_r).copied().collect();
        s.sort_unstable();
        r.sort_unstable();
        (s, r)
    }

    fn intersection(s: &[u64], r: &[u64]) -> Vec<u64> {
        let r: BTreeSet<u64> = r.iter().copied().collect();
        s.iter().copied().filter(|v| r.contains(v)).collect()
    }

    fn nonzero_sorted(v: &[u64]) -> Vec<u64> {
        let mut v: Vec<u64> = v.iter().copied().filter(|&x| x != 0).collect();
        v.sort_unstable();
        v
    }

    const SIZES: [(usize, usize); 16] = [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (0, 5),
        (3, 0),
        (3, 7),
        (7, 3),
        (8, 8),
        (1, 100),
        (100, 1),
        (7, 8),
        (64, 64),
        (100, 37),
        (128, 128),
        (200, 300),
    ];

    #[test]
    fn merge_sorts_the_union() {
        let mut rng = StdRng::seed_from_u64(31);
        for sigma in [5usize, 32, 64] {
            for (ns, nr) in SIZES {
                if sigma == 5 && ns + nr > 31 {
                    continue;
                }
                let common = rng.random_range(0..=ns.min(nr));
                let (s, r) = sets(&mut rng, sigma, ns, nr, common);
                let mut want: Vec<u64> = s.iter().chain(&r).copied().collect();
                want.sort_unstable();
                for cmp in CMPS {
                    let out = bitonic_merge(
                        &mut Plain,
                        cmp,
                        &Plain::word(&s, sigma),
                        &Plain::word(&r, sigma),
                        sigma,
                    )
                    .unwrap();
                    assert_eq!(out.len(), sigma);
                    assert_eq!(Plain::values(&out), want, "{cmp:?} σ={sigma} {ns}+{nr}");
                }
            }
        }
    }

    #[test]
    fn merge_moves_the_payload_with_its_key() {
        let mut rng = StdRng::seed_from_u64(32);
        let (s, r) = sets(&mut rng, 20, 50, 70, 30);
        // Payload (bits 20..28) = low 8 bits of the key times 3, per party.
        let tag = |v: &u64, m: u64| v | ((((v & 0xff) * m) & 0xff) << 20);
        let sw: Vec<u64> = s.iter().map(|v| tag(v, 3)).collect();
        let rw: Vec<u64> = r.iter().map(|v| tag(v, 5)).collect();
        let out = bitonic_merge(
            &mut Plain,
            Comparator::Size,
            &Plain::word(&sw, 28),
            &Plain::word(&rw, 28),
            20,
        )
        .unwrap();
        let got = Plain::values(&out);
        let keys: Vec<u64> = got.iter().map(|v| v & 0xfffff).collect();
        let mut want_keys: Vec<u64> = s.iter().chain(&r).copied().collect();
        want_keys.sort_unstable();
        assert_eq!(keys, want_keys);
        let mut got_sorted = got.clone();
        got_sorted.sort_unstable();
        let mut all: Vec<u64> = sw.iter().chain(&rw).copied().collect();
        all.sort_unstable();
        assert_eq!(got_sorted, all);
    }

    #[test]
    fn compare_stage_finds_the_intersection() {
        let mut rng = StdRng::seed_from_u64(33);
        for (ns, nr) in SIZES {
            for common in [0, ns.min(nr) / 2, ns.min(nr)] {
                let (s, r) = sets(&mut rng, 32, ns, nr, common);
                let mut merged: Vec<u64> = s.iter().chain(&r).copied().collect();
                merged.sort_unstable();
                let out = compare(&mut Plain, &Plain::word(&merged, 32), 32).unwrap();
                let out = Plain::values(&out);
                assert_eq!(out.len(), (ns + nr) / 2);
                assert_eq!(nonzero_sorted(&out), intersection(&s, &r));
            }
        }
    }

    #[test]
    fn intersection_end_to_end_on_plain() {
        let mut rng = StdRng::seed_from_u64(34);
        for sigma in [5usize, 32] {
            for (ns, nr) in SIZES {
                if sigma == 5 && ns + nr > 31 {
                    continue;
                }
                for common in [0, ns.min(nr) / 3, ns.min(nr)] {
                    let (s, r) = sets(&mut rng, sigma, ns, nr, common);
                    let m = shuffle_lanes(ns, nr);
                    let mut perm: Vec<usize> = (0..m).collect();
                    perm.shuffle(&mut rng);
                    let sw = PlainBits::from_bools(&waksman_switches(&perm).unwrap());
                    let (sw_, rw_) = (Plain::word(&s, sigma), Plain::word(&r, sigma));
                    for cmp in CMPS {
                        let out = scs_intersection(&mut Plain, cmp, &sw_, &rw_, &sw).unwrap();
                        let out = Plain::values(&out);
                        assert_eq!(out.len(), m);
                        assert_eq!(nonzero_sorted(&out), intersection(&s, &r));
                        // Exactly the compare stage's lanes, moved by the permutation.
                        let mut merged: Vec<u64> = s.iter().chain(&r).copied().collect();
                        merged.sort_unstable();
                        let found = Plain::values(
                            &compare(&mut Plain, &Plain::word(&merged, sigma), sigma).unwrap(),
                        );
                        for k in 0..m {
                            assert_eq!(out[perm[k]], found[k]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn intersection_of_4096_items_each_on_plain() {
        let mut rng = StdRng::seed_from_u64(37);
        let n = 4096;
        let (s, r) = sets(&mut rng, 32, n, n, 1000);
        let mut perm: Vec<usize> = (0..n).collect();
        perm.shuffle(&mut rng);
        let sw = PlainBits::from_bools(&waksman_switches(&perm).unwrap());
        for cmp in CMPS {
            let out = scs_intersection(
                &mut Plain,
                cmp,
                &Plain::word(&s, 32),
                &Plain::word(&r, 32),
                &sw,
            )
            .unwrap();
            assert_eq!(nonzero_sorted(&Plain::values(&out)), intersection(&s, &r));
        }
        let short = PlainBits::from_bools(&[false; 3]);
        let err = scs_intersection(
            &mut Plain,
            Comparator::Size,
            &Plain::word(&s, 32),
            &Plain::word(&r, 32),
            &short,
        );
        assert!(err.is_err());
    }

    #[test]
    fn cardinality_and_count_ones() {
        let mut rng = StdRng::seed_from_u64(35);
        for m in [0usize, 1, 2, 3, 8, 63, 64, 65, 1000] {
            let bits: Vec<bool> = (0..m).map(|_| rng.random()).collect();
            let got = count_ones(&mut Plain, &PlainBits::from_bools(&bits)).unwrap();
            assert_eq!(got.len(), 1 + ceil_log2(m) as usize);
            assert_eq!(
                Plain::values(&got),
                [bits.iter().filter(|&&x| x).count() as u64]
            );
        }
        for (ns, nr) in SIZES {
            for common in [0, ns.min(nr) / 2, ns.min(nr)] {
                let (s, r) = sets(&mut rng, 32, ns, nr, common);
                for cmp in CMPS {
                    let got = scs_cardinality(
                        &mut Plain,
                        cmp,
                        &Plain::word(&s, 32),
                        &Plain::word(&r, 32),
                    )
                    .unwrap();
                    assert_eq!(Plain::values(&got), [common as u64], "{ns}+{nr}");
                }
            }
        }
    }

    #[test]
    fn sum_over_the_intersection() {
        let mut rng = StdRng::seed_from_u64(36);
        let (kb, vb) = (24usize, 16usize);
        for (ns, nr) in SIZES {
            for common in [0, ns.min(nr) / 2, ns.min(nr)] {
                let (s, r) = sets(&mut rng, kb, ns, nr, common);
                let pay: Vec<u64> = (0..ns).map(|_| rng.random_range(0..1u64 << vb)).collect();
                let sw: Vec<u64> = s.iter().zip(&pay).map(|(k, p)| k | (p << kb)).collect();
                let rset: BTreeSet<u64> = r.iter().copied().collect();
                let want: u64 = s
                    .iter()
                    .zip(&pay)
                    .filter(|(k, _)| rset.contains(k))
                    .map(|(_, p)| p)
                    .sum();
                for cmp in CMPS {
                    let got = scs_sum(
                        &mut Plain,
                        cmp,
                        &Plain::word(&sw, kb + vb),
                        &Plain::word(&r, kb + vb),
                        kb,
                    )
                    .unwrap();
                    let l = ns + nr;
                    let width = if l < 2 {
                        vb
                    } else {
                        vb + ceil_log2(l - 1) as usize
                    };
                    assert_eq!(got.len(), width);
                    assert_eq!(Plain::values(&got), [want], "{ns}+{nr}");
                }
            }
        }
        // All payloads at their maximum, every key shared: the width holds the sum.
        let keys: Vec<u64> = (1..=300).collect();
        let sw: Vec<u64> = keys.iter().map(|k| k | (0xffff << kb)).collect();
        let got = scs_sum(
            &mut Plain,
            Comparator::Size,
            &Plain::word(&sw, kb + vb),
            &Plain::word(&keys, kb + vb),
            kb,
        )
        .unwrap();
        assert_eq!(Plain::values(&got), [300 * 0xffff]);
    }

    /// Gate counts of the three stages and the whole circuit on `Count`, σ = 32, n_s = n_r = n.
    struct Stages {
        sort: Count,
        compare: Count,
        shuffle: Count,
        total: Count,
    }

    fn stages(cmp: Comparator, n: usize) -> Stages {
        let sigma = 32;
        let w = vec![n; sigma];
        let mut sort = Count::new();
        bitonic_merge(&mut sort, cmp, &w, &w, sigma).unwrap();
        let mut cmp_count = Count::new();
        compare(&mut cmp_count, &vec![2 * n; sigma], sigma).unwrap();
        let mut shuffle = Count::new();
        waksman(&mut shuffle, &w, &waksman_switch_count(n)).unwrap();
        let mut total = Count::new();
        scs_intersection(&mut total, cmp, &w, &w, &waksman_switch_count(n)).unwrap();
        Stages {
            sort,
            compare: cmp_count,
            shuffle,
            total,
        }
    }

    #[test]
    fn size_optimised_gate_counts_match_psz14_app_d1() {
        let sigma = 32u64;
        for k in (1..=12u64).chain([16]) {
            let n = 1u64 << k;
            let st = stages(Comparator::Size, n as usize);
            assert_eq!(
                st.sort.and_gates,
                2 * sigma * n * (k + 1),
                "sort, n = 2^{k}"
            );
            assert_eq!(st.compare.and_gates, sigma * (3 * n - 1) - n, "compare");
            assert_eq!(st.shuffle.and_gates, sigma * (n * k - n + 1), "shuffle");
            assert_eq!(st.total.and_gates, sigma * (3 * n * k + 4 * n) - n, "total");
            assert_eq!(st.total.multiplexers(), 2 * n * k + n + 1, "multiplexers");
            assert_eq!(
                st.total.vector_triples,
                BTreeMap::from([(32, 2 * n * k + n + 1)])
            );
            assert_eq!(
                st.total.scalar_ands,
                st.total.and_gates - sigma * st.total.multiplexers()
            );
            // Rounds: log2(2n) merge stages of σ + 1, compare ⌈log2 σ⌉ + 2, shuffle 2k − 1.
            assert_eq!(st.total.rounds, 33 * (k + 1) + 7 + (2 * k - 1));
            assert_eq!(st.shuffle.rounds, waksman_layers(n as usize) as u64);
            // The widest layer: a merge stage's swaps, n comparators of σ.
            assert_eq!(st.total.widest_layer, sigma * n);
        }
    }

    #[test]
    fn depth_optimised_gate_counts_and_rounds() {
        // Each comparator: 3σ − log2 σ − 2 = 89 AND gates at depth 6, plus a swap of σ = 32.
        let sigma = 32u64;
        for k in (1..=12u64).chain([16]) {
            let n = 1u64 << k;
            let st = stages(Comparator::Depth, n as usize);
            assert_eq!(
                st.sort.and_gates,
                (89 + 32) * n * (k + 1),
                "sort, n = 2^{k}"
            );
            assert_eq!(st.compare.and_gates, sigma * (3 * n - 1) - n);
            assert_eq!(st.shuffle.and_gates, sigma * (n * k - n + 1));
            // Total 121n(k + 1) + 96n − 32 − n + 32(nk − n + 1) = 153nk + 184n.
            assert_eq!(
                st.total.and_gates,
                153 * n * k + 184 * n,
                "total, n = 2^{k}"
            );
            assert_eq!(st.total.multiplexers(), 2 * n * k + n + 1);
            // Rounds: log2(2n) merge stages of 6 + 1, compare 5 + 2, shuffle 2k − 1.
            assert_eq!(st.total.rounds, 7 * (k + 1) + 7 + (2 * k - 1));
            assert_eq!(st.total.rounds, 9 * k + 13);
        }
    }

    #[test]
    fn unequal_sizes_cost_no_gates_for_padding() {
        // n_s = 3, n_r = 2: padded to 8; only comparators between real values cost gates.
        let mut c = Count::new();
        bitonic_merge(&mut c, Comparator::Size, &[3; 4], &[2; 4], 4).unwrap();
        // The bitonic sequence s s s ∞ ∞ ∞ r r meets 1, 2 and 2 comparators between real values
        // in its three stages.
        assert_eq!(c.multiplexers(), 5);
        assert_eq!(c.and_gates, 5 * 8);
        assert_eq!(c.rounds, 3 * 5);
        // One list alone is sorted already.
        for (ns, nr) in [(0, 9), (9, 0), (0, 0)] {
            let mut c = Count::new();
            let out = bitonic_merge(&mut c, Comparator::Size, &[ns; 4], &[nr; 4], 4).unwrap();
            assert_eq!(out, vec![ns + nr; 4]);
            assert_eq!(c.and_gates, 0);
        }
    }
}
