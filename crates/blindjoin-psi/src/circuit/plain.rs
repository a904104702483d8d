//! [`Plain`]: a [`Backend`] that evaluates circuits in the clear, the reference the other
//! backends and the circuits of PSZ14 §3 and App. D.1 are tested against.
//!
//! A [`PlainBits`] packs its lanes 64 to a `u64` (lane `i` is bit `i % 64` of word `i / 64`; the
//! bits past the last lane are kept zero). [`Plain::word`] builds a [`Word`] from one unsigned
//! value per lane and [`Plain::values`] reads the values back.

use blindjoin_core::Result;

use super::{Backend, Word};

/// One clear bit in each of a number of lanes, packed 64 to a `u64`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PlainBits {
    lanes: usize,
    words: Vec<u64>,
}

impl PlainBits {
    /// The bits `bits[0], bits[1], …`, one per lane.
    pub fn from_bools(bits: &[bool]) -> Self {
        let mut out = Self::zeros(bits.len());
        for (i, &bit) in bits.iter().enumerate() {
            out.set(i, bit);
        }
        out
    }

    /// `lanes` lanes of 0.
    pub fn zeros(lanes: usize) -> Self {
        PlainBits {
            lanes,
            words: vec![0; lanes.div_ceil(64)],
        }
    }

    /// The number of lanes.
    pub fn len(&self) -> usize {
        self.lanes
    }

    /// Whether there are no lanes.
    pub fn is_empty(&self) -> bool {
        self.lanes == 0
    }

    /// The bit of lane `i` (`false` past the last lane).
    pub fn get(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| (w >> (i % 64)) & 1 == 1)
    }

    /// Sets the bit of lane `i` (ignored past the last lane).
    pub fn set(&mut self, i: usize, bit: bool) {
        if i >= self.lanes {
            return;
        }
        if let Some(w) = self.words.get_mut(i / 64) {
            let mask = 1u64 << (i % 64);
            if bit {
                *w |= mask;
            } else {
                *w &= !mask;
            }
        }
    }

    /// The bits of all lanes, in order.
    pub fn to_bools(&self) -> Vec<bool> {
        (0..self.lanes).map(|i| self.get(i)).collect()
    }

    /// The number of lanes holding 1.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Clears the bits past the last lane of the last word.
    fn trim(&mut self) {
        let rem = self.lanes % 64;
        if rem != 0
            && let Some(last) = self.words.last_mut()
        {
            *last &= (1u64 << rem) - 1;
        }
    }

    fn zip(&self, other: &Self, f: impl Fn(u64, u64) -> u64) -> Self {
        debug_assert_eq!(self.lanes, other.lanes, "lane counts differ");
        PlainBits {
            lanes: self.lanes,
            words: self
                .words
                .iter()
                .zip(&other.words)
                .map(|(&a, &b)| f(a, b))
                .collect(),
        }
    }
}

/// Evaluates circuits in the clear; infallible.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plain;

impl Plain {
    /// The `width`-bit values `values[0], values[1], …`, one per lane, as a [`Word`] (bits of a
    /// value above `width` are dropped; `width` ≤ 64).
    pub fn word(values: &[u64], width: usize) -> Word<Plain> {
        debug_assert!(width <= 64, "a Plain word holds at most 64 bits");
        (0..width)
            .map(|j| {
                let mut bits = PlainBits::zeros(values.len());
                for (i, v) in values.iter().enumerate() {
                    bits.set(i, (v >> j) & 1 == 1);
                }
                bits
            })
            .collect()
    }

    /// The value of every lane of `word` (at most 64 planes; planes from the 65th on are
    /// ignored). An empty word reads as no lanes.
    pub fn values(word: &[PlainBits]) -> Vec<u64> {
        let lanes = word.first().map_or(0, PlainBits::len);
        (0..lanes)
            .map(|i| {
                word.iter()
                    .take(64)
                    .enumerate()
                    .fold(0u64, |acc, (j, bits)| acc | (u64::from(bits.get(i)) << j))
            })
            .collect()
    }
}

impl Backend for Plain {
    type Bits = PlainBits;

    fn lanes(&self, a: &PlainBits) -> usize {
        a.lanes
    }

    fn xor(&mut self, a: &PlainBits, b: &PlainBits) -> PlainBits {
        a.zip(b, |x, y| x ^ y)
    }

    fn not(&mut self, a: &PlainBits) -> PlainBits {
        let mut out = PlainBits {
            lanes: a.lanes,
            words: a.words.iter().map(|w| !w).collect(),
        };
        out.trim();
        out
    }

    fn constant(&mut self, value: bool, lanes: usize) -> PlainBits {
        let mut out = PlainBits {
            lanes,
            words: vec![if value { u64::MAX } else { 0 }; lanes.div_ceil(64)],
        };
        out.trim();
        out
    }

    fn and(&mut self, pairs: &[(&PlainBits, &PlainBits)]) -> Result<Vec<PlainBits>> {
        Ok(pairs.iter().map(|(a, b)| a.zip(b, |x, y| x & y)).collect())
    }

    fn and_vector(&mut self, items: &[(&PlainBits, &[PlainBits])]) -> Result<Vec<Vec<PlainBits>>> {
        Ok(items
            .iter()
            .map(|(s, v)| v.iter().map(|vj| s.zip(vj, |x, y| x & y)).collect())
            .collect())
    }

    fn gather(&mut self, a: &PlainBits, idx: &[usize]) -> PlainBits {
        let mut out = PlainBits::zeros(idx.len());
        for (chunk, w) in idx.chunks(64).zip(out.words.iter_mut()) {
            for (k, &i) in chunk.iter().enumerate() {
                debug_assert!(i < a.lanes, "gather index {i} past {} lanes", a.lanes);
                *w |= u64::from(a.get(i)) << k;
            }
        }
        out
    }

    fn concat(&mut self, parts: &[&PlainBits]) -> PlainBits {
        let lanes = parts.iter().map(|p| p.lanes).sum();
        let mut out = PlainBits::zeros(lanes);
        let mut at = 0usize;
        for p in parts {
            if at.is_multiple_of(64) {
                // Aligned: copy whole words (the source's tail bits are zero).
                let start = at / 64;
                for (k, &w) in p.words.iter().enumerate() {
                    if let Some(dst) = out.words.get_mut(start + k) {
                        *dst = w;
                    }
                }
            } else {
                let shift = at % 64;
                for (k, &w) in p.words.iter().enumerate() {
                    let pos = at / 64 + k;
                    if let Some(dst) = out.words.get_mut(pos) {
                        *dst |= w << shift;
                    }
                    if let Some(dst) = out.words.get_mut(pos + 1) {
                        *dst |= w >> (64 - shift);
                    }
                }
            }
            at += p.lanes;
        }
        out.trim();
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn random_bits(rng: &mut StdRng, lanes: usize) -> PlainBits {
        let bools: Vec<bool> = (0..lanes).map(|_| rng.random()).collect();
        PlainBits::from_bools(&bools)
    }

    #[test]
    fn gates_act_lane_by_lane() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut b = Plain;
        for lanes in [0usize, 1, 5, 63, 64, 65, 200] {
            let x = random_bits(&mut rng, lanes);
            let y = random_bits(&mut rng, lanes);
            let (xb, yb) = (x.to_bools(), y.to_bools());
            let xor = b.xor(&x, &y).to_bools();
            let not = b.not(&x);
            assert_eq!(not.count_ones(), lanes - x.count_ones());
            let ands = b.and(&[(&x, &y)]).unwrap();
            let vec = b.and_vector(&[(&x, &[y.clone(), x.clone()])]).unwrap();
            for i in 0..lanes {
                assert_eq!(xor[i], xb[i] ^ yb[i]);
                assert_eq!(not.get(i), !xb[i]);
                assert_eq!(ands[0].get(i), xb[i] & yb[i]);
                assert_eq!(vec[0][0].get(i), xb[i] & yb[i]);
                assert_eq!(vec[0][1].get(i), xb[i]);
            }
            assert_eq!(b.constant(true, lanes).count_ones(), lanes);
            assert_eq!(b.constant(false, lanes).count_ones(), 0);
        }
    }

    #[test]
    fn gather_and_concat_move_lanes() {
        let mut rng = StdRng::seed_from_u64(2);
        let mut b = Plain;
        let parts: Vec<PlainBits> = [3usize, 64, 0, 61, 100, 1]
            .iter()
            .map(|&n| random_bits(&mut rng, n))
            .collect();
        let refs: Vec<&PlainBits> = parts.iter().collect();
        let all = b.concat(&refs);
        let expected: Vec<bool> = parts.iter().flat_map(PlainBits::to_bools).collect();
        assert_eq!(all.to_bools(), expected);
        assert_eq!(all.count_ones(), expected.iter().filter(|&&x| x).count());
        let idx: Vec<usize> = (0..300).map(|_| rng.random_range(0..all.len())).collect();
        let g = b.gather(&all, &idx);
        let want: Vec<bool> = idx.iter().map(|&i| expected[i]).collect();
        assert_eq!(g.to_bools(), want);
    }

    #[test]
    fn words_round_trip() {
        let values = [0u64, 1, 0xdead_beef, u64::MAX, 12345];
        assert_eq!(Plain::values(&Plain::word(&values, 64)), values);
        assert_eq!(
            Plain::values(&Plain::word(&values, 8)),
            [0, 1, 0xef, 0xff, 0x39]
        );
    }
}
