//! [`Count`]: a [`Backend`] that evaluates nothing and tallies the AND gates, the vector
//! multiplication triples (PSZ14 §3.2) and the rounds of a circuit, for the gate counts of
//! PSZ14 App. D.1 and for the GMW engine to know how many triples to precompute.
//!
//! A [`Count`]'s `Bits` is just its number of lanes. The tallies:
//! - [`Count::and_gates`]: every AND gate, a scalar one of [`Backend::and`] or one of the
//!   `v.len()` gates per lane of an [`Backend::and_vector`] item;
//! - [`Count::scalar_ands`]: the gates of [`Backend::and`] (one scalar triple each in GMW);
//! - [`Count::vector_triples`]: per width `v.len()`, the lanes of `and_vector` items of that
//!   width (one vector triple each in GMW);
//! - [`Count::rounds`]: the calls of `and` and `and_vector` that carry at least one gate;
//! - [`Count::widest_layer`]: the most AND gates of one call.

use std::collections::BTreeMap;

use blindjoin_core::Result;

use super::Backend;

/// Tallies the gates of a circuit; its `Bits` is a lane count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Count {
    /// Every AND gate: scalar ones and `v.len()` per lane of each vector item.
    pub and_gates: u64,
    /// The AND gates of [`Backend::and`] calls.
    pub scalar_ands: u64,
    /// Width `v.len()` → the number of vector ANDs (lanes of `and_vector` items) of that width.
    pub vector_triples: BTreeMap<usize, u64>,
    /// Calls of `and` and `and_vector` with at least one gate (GMW rounds).
    pub rounds: u64,
    /// The most AND gates carried by one call.
    pub widest_layer: u64,
}

impl Count {
    /// A fresh tally.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of vector ANDs (multiplexers) of all widths.
    pub fn multiplexers(&self) -> u64 {
        self.vector_triples.values().sum()
    }

    fn layer(&mut self, gates: u64) {
        if gates > 0 {
            self.and_gates += gates;
            self.rounds += 1;
            self.widest_layer = self.widest_layer.max(gates);
        }
    }
}

impl Backend for Count {
    type Bits = usize;

    fn lanes(&self, a: &usize) -> usize {
        *a
    }

    fn xor(&mut self, a: &usize, b: &usize) -> usize {
        debug_assert_eq!(a, b, "lane counts differ");
        *a
    }

    fn not(&mut self, a: &usize) -> usize {
        *a
    }

    fn constant(&mut self, _value: bool, lanes: usize) -> usize {
        lanes
    }

    fn and(&mut self, pairs: &[(&usize, &usize)]) -> Result<Vec<usize>> {
        let mut gates = 0u64;
        let out = pairs
            .iter()
            .map(|&(a, b)| {
                debug_assert_eq!(a, b, "lane counts differ");
                gates += *a as u64;
                *a
            })
            .collect();
        self.scalar_ands += gates;
        self.layer(gates);
        Ok(out)
    }

    fn and_vector(&mut self, items: &[(&usize, &[usize])]) -> Result<Vec<Vec<usize>>> {
        let mut gates = 0u64;
        let out = items
            .iter()
            .map(|&(s, v)| {
                debug_assert!(v.iter().all(|l| l == s), "lane counts differ");
                if *s > 0 && !v.is_empty() {
                    *self.vector_triples.entry(v.len()).or_insert(0) += *s as u64;
                }
                gates += (*s as u64) * (v.len() as u64);
                vec![*s; v.len()]
            })
            .collect();
        self.layer(gates);
        Ok(out)
    }

    fn gather(&mut self, _a: &usize, idx: &[usize]) -> usize {
        idx.len()
    }

    fn concat(&mut self, parts: &[&usize]) -> usize {
        parts.iter().copied().sum()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn tallies_gates_triples_rounds_and_widest_layer() {
        let mut c = Count::new();
        let x = c.constant(false, 10);
        let y = c.xor(&x, &x);
        c.and(&[(&x, &y), (&x, &x)]).unwrap();
        let v = vec![x; 3];
        let s = c.gather(&x, &[0, 1, 2, 3]);
        let v4 = vec![s; 5];
        c.and_vector(&[(&x, &v), (&s, &v4)]).unwrap();
        // Calls without gates are not rounds.
        c.and(&[]).unwrap();
        let empty = c.constant(true, 0);
        c.and(&[(&empty, &empty)]).unwrap();
        c.and_vector(&[(&x, &[])]).unwrap();
        assert_eq!(c.and_gates, 20 + 30 + 20);
        assert_eq!(c.scalar_ands, 20);
        assert_eq!(c.vector_triples, BTreeMap::from([(3, 10), (5, 4)]));
        assert_eq!(c.multiplexers(), 14);
        assert_eq!(c.rounds, 2);
        assert_eq!(c.widest_layer, 50);
        assert_eq!(c.concat(&[&x, &s, &empty]), 14);
    }
}
