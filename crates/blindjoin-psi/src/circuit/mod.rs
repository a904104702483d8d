//! Boolean circuits for circuit-based PSI (PSZ14 §3 and App. D; Huang, Evans, Katz, NDSS 2012):
//! the sort-compare-shuffle circuit and its parts, written once over a [`Backend`] that
//! evaluates them: in the clear ([`plain`]), by counting gates ([`count`]), under GMW
//! ([`gmw`]) or as a garbled circuit ([`yao`]).
//!
//! **Vectorised wires.** A circuit here is straight-line code that calls a backend gate by gate,
//! and each call acts on a vector of wires at once: a [`Backend::Bits`] is one wire in each of
//! many *lanes*, and every gate acts lane by lane. The sort stage, for example, runs all
//! comparators of one bitonic stage as one call per gate of the comparator, with one lane per
//! comparator. A σ-bit value in every lane is a [`Word`]: σ `Bits`, least significant bit
//! first. Nothing keeps the circuit: a gate's output exists only as long as the code that uses
//! it, so a circuit of 10^9 gates costs the memory of its widest layer, and GMW's rounds are the
//! calls to [`Backend::and`] and [`Backend::and_vector`] (one round each, however many lanes and
//! pairs they carry).
//!
//! **Gates.** XOR and NOT are free (local in GMW, free-XOR in Yao). AND gates come in two
//! kinds: [`Backend::and`], independent scalar ANDs (a scalar multiplication triple each in
//! GMW), and [`Backend::and_vector`], the σ ANDs of a multiplexer that share one input wire
//! s ∧ v\[j\] (one vector multiplication triple, PSZ §3.2, in GMW; σ ordinary AND gates in Yao).
//! Moving lanes ([`Backend::gather`], [`Backend::concat`]) is public wiring and costs nothing.

pub mod count;
pub mod gadgets;
pub mod gmw;
pub mod plain;
pub mod scs;
pub mod triples;
pub mod waksman;
pub mod yao;

use blindjoin_core::Result;

/// A σ-bit value in every lane: σ vectors of wires, least significant bit first.
pub type Word<B> = Vec<<B as Backend>::Bits>;

/// Evaluates circuits gate by gate on vectors of wires (one wire per lane).
///
/// Every operation acts lane by lane on operands of the same number of lanes (a mismatch is a
/// bug of the circuit, not of the input, and panics in debug builds). Operations that talk to
/// the peer return `Result`; the others are local.
pub trait Backend {
    /// One wire in each of a number of lanes (a share vector in GMW, labels in Yao, bits in the
    /// clear).
    type Bits;

    /// The number of lanes of `a`.
    fn lanes(&self, a: &Self::Bits) -> usize;

    /// `a ⊕ b`, lane by lane (free).
    fn xor(&mut self, a: &Self::Bits, b: &Self::Bits) -> Self::Bits;

    /// `¬a`, lane by lane (free).
    fn not(&mut self, a: &Self::Bits) -> Self::Bits;

    /// The public constant `value` in `lanes` lanes.
    fn constant(&mut self, value: bool, lanes: usize) -> Self::Bits;

    /// One layer of independent AND gates: `out[k] = pairs[k].0 ∧ pairs[k].1`, lane by lane.
    /// Under GMW the whole layer is one round, whatever the number of pairs and lanes.
    fn and(&mut self, pairs: &[(&Self::Bits, &Self::Bits)]) -> Result<Vec<Self::Bits>>;

    /// One layer of vector ANDs: for every `(s, v)`, `out[k][j] = s ∧ v[j]`, lane by lane: the
    /// `v.len()` AND gates of a lane share their first input (the multiplexer's select wire).
    /// Counted as `v.len()` AND gates per lane; under GMW one vector multiplication triple per
    /// lane (PSZ14 §3.2) and, with [`Backend::and`], one round for the whole layer.
    fn and_vector(
        &mut self,
        items: &[(&Self::Bits, &[Self::Bits])],
    ) -> Result<Vec<Vec<Self::Bits>>>;

    /// Lanes `idx[0], idx[1], …` of `a`, in that order (public wiring, free; an index may repeat).
    fn gather(&mut self, a: &Self::Bits, idx: &[usize]) -> Self::Bits;

    /// The lanes of `parts[0]`, then those of `parts[1]`, … (public wiring, free).
    fn concat(&mut self, parts: &[&Self::Bits]) -> Self::Bits;
}
