//! The Waksman permutation network (A. Waksman, "A permutation network", JACM 15(1), 1968),
//! the shuffle stage of the sort-compare-shuffle circuit (PSZ14 App. D.1; Huang, Evans, Katz,
//! NDSS 2012, §4): n·log2 n − n + 1 conditional swaps for n a power of two, and the
//! arbitrary-size recursion (Beauchemin, 2008; Mohassel and Sadeghi, EUROCRYPT 2013, §3) for
//! any n ≥ 1, with W(1) = 0, W(2) = 1 and W(n) = W(⌊n/2⌋) + W(⌈n/2⌉) + n − 1.
//!
//! **Network.** For n ≥ 3, ⌊n/2⌋ input switches take the inputs (2i, 2i + 1) and send one to
//! input i of the upper subnetwork (size ⌊n/2⌋) and the other to input i of the lower one
//! (size ⌈n/2⌉); for odd n, input n − 1 goes straight to the lower subnetwork's last input.
//! Output switch j joins output j of both subnetworks into outputs (2j, 2j + 1), upper to 2j when
//! straight; for even n the last output switch is left out (upper to n − 2, lower to n − 1),
//! for odd n the lower subnetwork's last output goes straight to output n − 1. A switch set to
//! 1 crosses its two inputs.
//!
//! **Convention.** [`waksman_switches`]`(perm)` gives settings under which output `perm[i]`
//! holds input `i`. Switches are numbered by the recursion: the input switches of a network,
//! then all of its upper subnetwork's, then all of its lower one's, then its output switches.
//!
//! **Layers.** [`waksman`] runs the network one switch layer at a time, the layer's switches
//! as the lanes of one [`cond_swap`] (one [`super::Backend::and_vector`] call): the input
//! switches of all nets of recursion level d in layer d, their output switches in layer
//! 2M − d (M the deepest level), so a network of n = 2^k has 2k − 1 layers (GMW rounds). Every
//! value keeps its lane, and the wiring of each layer is generated when it runs, in O(n)
//! memory.

use blindjoin_core::{Error, Result};

use super::gadgets::cond_swap;
use super::{Backend, Word};

/// The number of switches of the Waksman network on `n` inputs: n·log2 n − n + 1 for n a
/// power of two, W(⌊n/2⌋) + W(⌈n/2⌉) + n − 1 in general, 0 for n ≤ 1.
pub fn waksman_switch_count(n: usize) -> usize {
    counts(n).0
}

/// (W(n), W(n + 1)), from (W(m), W(m + 1)) for m = ⌊n/2⌋: W(2m) = 2W(m) + 2m − 1,
/// W(2m + 1) = W(m) + W(m + 1) + 2m, W(2m + 2) = 2W(m + 1) + 2m + 1 (O(log n) steps).
fn counts(n: usize) -> (usize, usize) {
    if n == 0 {
        return (0, 0);
    }
    let m = n / 2;
    let (a, b) = counts(m);
    if n.is_multiple_of(2) {
        (2 * a + 2 * m - 1, a + b + 2 * m)
    } else {
        (a + b + 2 * m, 2 * b + 2 * m + 1)
    }
}

/// The number of switch layers of the Waksman network on `n` inputs: 2·log2 n − 1 for n a
/// power of two ≥ 2; 0 for n ≤ 1, 1 for n = 2, 2 + layers(⌈n/2⌉) otherwise.
pub fn waksman_layers(n: usize) -> usize {
    match n {
        0 | 1 => 0,
        2 => 1,
        _ => 2 + waksman_layers(n - n / 2),
    }
}

/// The switch settings under which the Waksman network on `perm.len()` inputs sends input `i`
/// to output `perm[i]`, numbered as in the module doc (the looping algorithm, recursively).
/// Fails if `perm` is not a permutation of `0..perm.len()`.
pub fn waksman_switches(perm: &[usize]) -> Result<Vec<bool>> {
    let n = perm.len();
    let mut seen = vec![false; n];
    for &p in perm {
        match seen.get_mut(p) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(Error::InvalidParam {
                    field: "permutation",
                    reason: format!("{p} is out of range or repeated (n = {n})"),
                });
            }
        }
    }
    let mut out = Vec::with_capacity(waksman_switch_count(n));
    route(perm, &mut out);
    Ok(out)
}

const UNSET: u8 = 0;
const UPPER: u8 = 1;
const LOWER: u8 = 2;

/// Appends the settings of the network for `perm` (a permutation) to `out`.
fn route(perm: &[usize], out: &mut Vec<bool>) {
    let n = perm.len();
    match n {
        0 | 1 => return,
        2 => {
            out.push(perm[0] == 1);
            return;
        }
        _ => {}
    }
    let p = n / 2;
    let odd = n % 2 == 1;
    let mut inv = vec![0usize; n];
    for (i, &o) in perm.iter().enumerate() {
        inv[o] = i;
    }
    // Colour every input by the subnetwork it passes through: inputs sharing an input switch,
    // and inputs bound for outputs sharing an output switch, take different subnetworks.
    let mut colour = vec![UNSET; n];
    let mut stack: Vec<(usize, u8)> = Vec::new();
    if odd {
        stack.push((n - 1, LOWER));
    }
    stack.push((inv[n - 1], LOWER));
    let mut next_free = 0usize;
    loop {
        while let Some((i, c)) = stack.pop() {
            if colour[i] != UNSET {
                debug_assert_eq!(colour[i], c, "the looping algorithm met a conflict");
                continue;
            }
            colour[i] = c;
            let other = if c == UPPER { LOWER } else { UPPER };
            if !(odd && i == n - 1) {
                stack.push((i ^ 1, other));
            }
            let o = perm[i];
            if !(odd && o == n - 1) {
                stack.push((inv[o ^ 1], other));
            }
        }
        while next_free < n && colour[next_free] != UNSET {
            next_free += 1;
        }
        if next_free == n {
            break;
        }
        stack.push((next_free, UPPER));
    }
    let mut upper = Vec::with_capacity(p);
    let mut lower = Vec::with_capacity(n - p);
    for i in 0..p {
        let (a, b) = (2 * i, 2 * i + 1);
        let crossed = colour[a] == LOWER;
        out.push(crossed);
        let (u, l) = if crossed { (b, a) } else { (a, b) };
        upper.push(perm[u] / 2);
        lower.push(perm[l] / 2);
    }
    if odd {
        lower.push(perm[n - 1] / 2);
    }
    route(&upper, out);
    route(&lower, out);
    let output_switches = if odd { p } else { p - 1 };
    for j in 0..output_switches {
        out.push(colour[inv[2 * j]] == LOWER);
    }
}

/// A subnetwork of the recursion, one of the nets of its level.
#[derive(Clone, Copy)]
struct Net {
    /// Its number of inputs.
    size: usize,
    /// The number of its first switch (module doc numbering).
    base: usize,
    /// The index, in the next level, of its upper subnetwork (the lower one follows); unused
    /// for size ≤ 2.
    child: usize,
    /// The index of the net it is a subnetwork of, in the previous level (unused at level 0).
    parent: usize,
    /// Whether it is its parent's lower subnetwork.
    lower: bool,
}

/// The nets of every recursion level: level 0 is the whole network; a net of size ≥ 3 has an
/// upper (⌊s/2⌋) and a lower (⌈s/2⌉) subnetwork in the next level. About n nets in all.
fn levels(n: usize) -> Vec<Vec<Net>> {
    let mut levels = vec![vec![Net {
        size: n,
        base: 0,
        child: 0,
        parent: 0,
        lower: false,
    }]];
    loop {
        let mut next = Vec::new();
        if let Some(cur) = levels.last_mut() {
            for (k, net) in cur.iter_mut().enumerate() {
                if net.size >= 3 {
                    let p = net.size / 2;
                    net.child = next.len();
                    next.push(Net {
                        size: p,
                        base: net.base + p,
                        child: 0,
                        parent: k,
                        lower: false,
                    });
                    next.push(Net {
                        size: net.size - p,
                        base: net.base + p + waksman_switch_count(p),
                        child: 0,
                        parent: k,
                        lower: true,
                    });
                }
            }
        }
        if next.is_empty() {
            return levels;
        }
        levels.push(next);
    }
}

const NONE: usize = usize::MAX;

/// Every value stays in its lane: a net whose input `i` is in lane `ins[i]` has its input
/// switch `i` on lanes (ins[2i], ins[2i + 1]), leaves its output `j` in lane `ins[j]`, and so has
/// its output switch `j` on the same lanes as its input switch `j`. Where a lane sits in the
/// nets of each level is tracked per lane, (net, position), going down the levels for the input
/// layers and back up for the output layers; memory O(n) besides the net table.
struct Walk<'a> {
    levels: &'a [Vec<Net>],
    /// Per lane: (net, position) at the current level, or (NONE, _) once its net had size ≤ 2.
    at: Vec<(usize, usize)>,
    /// Per lane: (level, net, position) of the net of size ≤ 2 where it ends.
    leaf: Vec<(usize, usize, usize)>,
    /// Position-major inverse of `at` for the current level, and each net's first position.
    lane_at: Vec<usize>,
    offset: Vec<usize>,
}

impl<'a> Walk<'a> {
    fn new(levels: &'a [Vec<Net>], n: usize) -> Self {
        Walk {
            levels,
            at: (0..n).map(|i| (0, i)).collect(),
            leaf: vec![(NONE, 0, 0); n],
            lane_at: vec![NONE; n],
            offset: Vec::new(),
        }
    }

    /// Fills `lane_at` and `offset` for level `d` from `at`.
    fn index(&mut self, d: usize) {
        let nets = &self.levels[d];
        self.offset.clear();
        let mut o = 0usize;
        for net in nets {
            self.offset.push(o);
            o += net.size;
        }
        for (lane, &(net, pos)) in self.at.iter().enumerate() {
            if net != NONE
                && let Some(slot) = self.lane_at.get_mut(self.offset[net] + pos)
            {
                *slot = lane;
            }
        }
    }

    /// The input switches of level `d`'s nets, as (lane, lane, switch number).
    fn input_layer(&mut self, d: usize, layer: &mut Vec<(usize, usize, usize)>) {
        self.index(d);
        layer.clear();
        for (k, net) in self.levels[d].iter().enumerate() {
            let o = self.offset[k];
            for i in 0..net.size / 2 {
                layer.push((
                    self.lane_at[o + 2 * i],
                    self.lane_at[o + 2 * i + 1],
                    net.base + i,
                ));
            }
        }
    }

    /// The output switches of level `d`'s nets.
    fn output_layer(&mut self, d: usize, layer: &mut Vec<(usize, usize, usize)>) {
        self.index(d);
        layer.clear();
        for (k, net) in self.levels[d].iter().enumerate() {
            if net.size < 3 {
                continue;
            }
            let o = self.offset[k];
            let p = net.size / 2;
            let outs = if net.size % 2 == 1 { p } else { p - 1 };
            let first = net.base + waksman_switch_count(net.size) - outs;
            for j in 0..outs {
                layer.push((
                    self.lane_at[o + 2 * j],
                    self.lane_at[o + 2 * j + 1],
                    first + j,
                ));
            }
        }
    }

    /// From level `d` to level `d + 1`.
    fn down(&mut self, d: usize) {
        let nets = &self.levels[d];
        for (lane, at) in self.at.iter_mut().enumerate() {
            let (k, q) = *at;
            if k == NONE {
                continue;
            }
            let net = nets[k];
            if net.size <= 2 {
                self.leaf[lane] = (d, k, q);
                *at = (NONE, 0);
            } else {
                let lower = q % 2 == 1 || (net.size % 2 == 1 && q == net.size - 1);
                *at = (net.child + usize::from(lower), q / 2);
            }
        }
    }

    /// From level `d + 1` back to level `d`.
    fn up(&mut self, d: usize) {
        let (nets, sub) = (&self.levels[d], &self.levels[d + 1]);
        for (lane, at) in self.at.iter_mut().enumerate() {
            let (k, q) = *at;
            if k == NONE {
                let (ld, lk, lq) = self.leaf[lane];
                if ld == d {
                    *at = (lk, lq);
                }
                continue;
            }
            let child = sub[k];
            let s = nets[child.parent].size;
            let q0 = if !child.lower || (s % 2 == 1 && q == s / 2) {
                2 * q
            } else {
                2 * q + 1
            };
            *at = (child.parent, q0);
        }
    }
}

/// Applies one layer of switches to `cur` in place (lanes keep their values' places).
fn apply<B: Backend>(
    b: &mut B,
    cur: Word<B>,
    switches: &B::Bits,
    layer: &[(usize, usize, usize)],
    idx: &mut Vec<usize>,
) -> Result<Word<B>> {
    if layer.is_empty() {
        return Ok(cur);
    }
    let n = cur.first().map_or(0, |p| b.lanes(p));
    let t = layer.len();
    let a_idx: Vec<usize> = layer.iter().map(|s| s.0).collect();
    let b_idx: Vec<usize> = layer.iter().map(|s| s.1).collect();
    let s_idx: Vec<usize> = layer.iter().map(|s| s.2).collect();
    let c = b.gather(switches, &s_idx);
    let xs: Word<B> = cur.iter().map(|p| b.gather(p, &a_idx)).collect();
    let ys: Word<B> = cur.iter().map(|p| b.gather(p, &b_idx)).collect();
    let (x2, y2) = cond_swap(b, &c, &xs, &ys)?;
    idx.clear();
    idx.extend(0..n);
    for (k, &(la, lb, _)) in layer.iter().enumerate() {
        idx[la] = n + k;
        idx[lb] = n + t + k;
    }
    Ok(cur
        .iter()
        .zip(x2.iter().zip(&y2))
        .map(|(p, (x, y))| {
            let all = b.concat(&[p, x, y]);
            b.gather(&all, idx)
        })
        .collect())
}

/// Applies the Waksman network to the lanes of `values` (n lanes, any width ≥ 1) under
/// `switches` (one lane per switch, [`waksman_switch_count`]`(n)` lanes, numbered as in the
/// module doc): output lane `perm[i]` holds input lane `i` when `switches` are
/// [`waksman_switches`]`(perm)`.
///
/// σ·W(n) AND gates (W(n) vector triples of width σ) in [`waksman_layers`]`(n)` rounds: the
/// input switches of recursion level d in layer d, the output switches of level d in layer
/// 2M − d, M the deepest level. The wiring is generated level by level (memory O(n)).
pub fn waksman<B: Backend>(b: &mut B, values: &[B::Bits], switches: &B::Bits) -> Result<Word<B>> {
    let Some(first) = values.first() else {
        return Err(Error::InvalidParam {
            field: "shuffle width",
            reason: "no bits".into(),
        });
    };
    let n = b.lanes(first);
    let want = waksman_switch_count(n);
    if b.lanes(switches) != want {
        return Err(Error::InvalidParam {
            field: "shuffle switches",
            reason: format!(
                "{} switch lanes for {n} values; the network has {want}",
                b.lanes(switches)
            ),
        });
    }
    let mut cur: Word<B> = values.iter().map(|p| b.concat(&[p])).collect();
    if n <= 1 {
        return Ok(cur);
    }
    let levels = levels(n);
    let deepest = levels.len() - 1;
    let mut walk = Walk::new(&levels, n);
    let mut layer = Vec::with_capacity(n / 2);
    let mut idx = Vec::with_capacity(n);
    for d in 0..=deepest {
        walk.input_layer(d, &mut layer);
        cur = apply(b, cur, switches, &layer, &mut idx)?;
        walk.down(d);
    }
    for (lane, at) in walk.at.iter_mut().enumerate() {
        let (ld, lk, lq) = walk.leaf[lane];
        if ld == deepest {
            *at = (lk, lq);
        }
    }
    for d in (0..deepest).rev() {
        walk.up(d);
        walk.output_layer(d, &mut layer);
        cur = apply(b, cur, switches, &layer, &mut idx)?;
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
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

    fn check(perm: &[usize], rng: &mut StdRng) {
        let n = perm.len();
        let sw = waksman_switches(perm).unwrap();
        assert_eq!(sw.len(), waksman_switch_count(n), "n = {n}");
        let values: Vec<u64> = (0..n).map(|_| rng.random::<u64>() >> 20).collect();
        let out = waksman(
            &mut Plain,
            &Plain::word(&values, 44),
            &PlainBits::from_bools(&sw),
        )
        .unwrap();
        let out = Plain::values(&out);
        for i in 0..n {
            assert_eq!(out[perm[i]], values[i], "n = {n}, perm = {perm:?}");
        }
    }

    fn naive_count(n: usize) -> usize {
        if n <= 1 {
            0
        } else {
            naive_count(n / 2) + naive_count(n - n / 2) + n - 1
        }
    }

    #[test]
    fn switch_counts_and_layers() {
        for n in 0..3000 {
            assert_eq!(waksman_switch_count(n), naive_count(n), "n = {n}");
        }
        for k in 1..=16u32 {
            let n = 1usize << k;
            assert_eq!(waksman_switch_count(n), n * k as usize - n + 1);
            assert_eq!(waksman_layers(n), 2 * k as usize - 1);
        }
        assert_eq!(
            (0..=6).map(waksman_switch_count).collect::<Vec<_>>(),
            [0, 0, 1, 3, 5, 8, 11]
        );
    }

    #[test]
    fn every_permutation_of_small_sizes_is_routed() {
        let mut rng = StdRng::seed_from_u64(21);
        for n in 0..=6usize {
            // All permutations of 0..n by Heap's algorithm.
            let mut perm: Vec<usize> = (0..n).collect();
            let mut c = vec![0usize; n];
            check(&perm, &mut rng);
            let mut i = 0;
            let mut seen = 1;
            while i < n {
                if c[i] < i {
                    if i % 2 == 0 {
                        perm.swap(0, i);
                    } else {
                        perm.swap(c[i], i);
                    }
                    check(&perm, &mut rng);
                    seen += 1;
                    c[i] += 1;
                    i = 0;
                } else {
                    c[i] = 0;
                    i += 1;
                }
            }
            assert_eq!(seen, (1..=n).product::<usize>());
        }
    }

    #[test]
    fn random_permutations_of_many_sizes_are_routed() {
        let mut rng = StdRng::seed_from_u64(22);
        for n in (7..=70).chain([100, 127, 128, 129, 255, 256, 1000, 1024, 4096, 5000]) {
            for _ in 0..3 {
                let mut perm: Vec<usize> = (0..n).collect();
                perm.shuffle(&mut rng);
                check(&perm, &mut rng);
            }
        }
    }

    #[test]
    fn rejects_non_permutations_and_wrong_switch_counts() {
        assert!(waksman_switches(&[0, 0]).is_err());
        assert!(waksman_switches(&[1, 2]).is_err());
        let sw = PlainBits::from_bools(&[true; 4]);
        assert!(waksman(&mut Plain, &Plain::word(&[1, 2, 3, 4], 3), &sw).is_err());
    }

    #[test]
    fn gate_counts_and_rounds_on_count() {
        for n in [2usize, 3, 5, 8, 100, 1024] {
            let mut c = Count::new();
            let w = vec![n; 32];
            waksman(&mut c, &w, &waksman_switch_count(n)).unwrap();
            let sw = waksman_switch_count(n) as u64;
            assert_eq!(c.and_gates, 32 * sw);
            assert_eq!(c.multiplexers(), sw);
            assert_eq!(c.rounds, waksman_layers(n) as u64);
        }
    }
}
