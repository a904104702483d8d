//! The bytes of a `circuit_gmw` run, message by message: the engine's openings are counted
//! layer by layer by running the circuit on [`Openings`], a backend that evaluates nothing and
//! adds up what [`crate::circuit::gmw`] sends for each call.

use super::flow::{COMPARATOR, Triples, triple_counts};
use crate::circuit::Backend;
use crate::circuit::gmw::{self, FRAME_BYTES};
use crate::circuit::triples::{self, BATCH};
use crate::protocol::{Sizes, Traffic};
use crate::protocols::circuit_psi::{self, Shape};
use blindjoin_core::Result;
use blindjoin_core::channel::{framed_bytes, msg_bytes};
use blindjoin_ot::base::{MSG_RECEIVER_POINTS, MSG_SENDER_POINT};
use blindjoin_ot::ext::iknp::MSG_U_COLUMNS;
use blindjoin_ot::traffic as ot;

/// Bytes of one bit-string message of `bits` bits in frames of [`FRAME_BYTES`].
pub(crate) fn stream(bits: u64) -> u64 {
    framed_bytes(bits.div_ceil(8), 1, FRAME_BYTES)
}

/// A backend that counts the bytes each party sends for the openings of every AND layer (the
/// same both ways); its `Bits` is a lane count.
pub(crate) struct Openings {
    vectorised: bool,
    width: usize,
    /// Bytes of [`gmw::MSG_OPEN_AND`] messages.
    pub(crate) and_bytes: u64,
    /// Bytes of [`gmw::MSG_OPEN_VECTOR`] messages.
    pub(crate) vector_bytes: u64,
}

impl Backend for Openings {
    type Bits = usize;

    fn lanes(&self, a: &usize) -> usize {
        *a
    }

    fn xor(&mut self, a: &usize, _: &usize) -> usize {
        *a
    }

    fn not(&mut self, a: &usize) -> usize {
        *a
    }

    fn constant(&mut self, _: bool, lanes: usize) -> usize {
        lanes
    }

    fn and(&mut self, pairs: &[(&usize, &usize)]) -> Result<Vec<usize>> {
        let bits: u64 = pairs.iter().map(|(a, _)| 2 * **a as u64).sum();
        self.and_bytes += stream(bits);
        Ok(pairs.iter().map(|(a, _)| **a).collect())
    }

    fn and_vector(&mut self, items: &[(&usize, &[usize])]) -> Result<Vec<Vec<usize>>> {
        if self.vectorised {
            let bits: u64 = items
                .iter()
                .map(|(s, v)| {
                    let chunks = v.len().div_ceil(self.width) as u64;
                    **s as u64 * (chunks + v.len() as u64)
                })
                .sum();
            self.vector_bytes += stream(bits);
        } else {
            let bits: u64 = items
                .iter()
                .map(|(s, v)| 2 * **s as u64 * v.len() as u64)
                .sum();
            self.and_bytes += stream(bits);
        }
        Ok(items.iter().map(|(s, v)| vec![**s; v.len()]).collect())
    }

    fn gather(&mut self, _: &usize, idx: &[usize]) -> usize {
        idx.len()
    }

    fn concat(&mut self, parts: &[&usize]) -> usize {
        parts.iter().map(|p| **p).sum()
    }
}

/// The u columns of `n` random OTs in batches of [`BATCH`].
fn batched_u_columns(n: u64) -> u64 {
    let full = n / BATCH as u64;
    let rest = (n % BATCH as u64) as usize;
    full * ot::u_columns(BATCH, 128) + ot::u_columns(rest, 128)
}

/// The bytes of every message of a run at `s` (intersection, σ derived from the sizes and λ,
/// sets without σ-bit collisions).
pub(crate) fn traffic(s: &Sizes, triples: Triples) -> Result<Traffic> {
    let shape = Shape::of_sizes(s)?;
    let counts = triple_counts(&shape, triples)?;
    let mut b = Openings {
        vectorised: counts.vectorised,
        width: counts.width,
        and_bytes: 0,
        vector_bytes: 0,
    };
    let sender = vec![shape.n_s; shape.sender_planes()];
    let receiver = vec![shape.n_r; shape.sigma];
    let switches = shape.switches();
    let out = circuit_psi::evaluate(
        &mut b,
        &shape,
        COMPARATOR,
        &sender,
        &receiver,
        Some(&switches),
    )?;
    let out_bits: u64 = out.iter().map(|l| *l as u64).sum();
    let any_triples = counts.scalar + counts.vector > 0;
    let [base_s, base_r] = if any_triples {
        ot::co15(128)
    } else {
        [(MSG_SENDER_POINT, 0), (MSG_RECEIVER_POINTS, 0)]
    };
    let u = batched_u_columns(counts.scalar) + batched_u_columns(counts.vector);
    let sender_inputs =
        stream((shape.n_s * shape.sender_planes()) as u64) + stream(switches as u64);
    let mut t = vec![
        (
            circuit_psi::MSG_SENDER_SETUP,
            msg_bytes(&(shape.n_s as u64))?,
        ),
        (
            circuit_psi::MSG_RECEIVER_SETUP,
            msg_bytes(&(shape.n_r as u64))?,
        ),
        base_s,
        base_r,
        (triples::MSG_SENDER_POINT_REVERSE, base_s.1),
        (triples::MSG_RECEIVER_POINTS_REVERSE, base_r.1),
        (MSG_U_COLUMNS, u),
        (triples::MSG_U_COLUMNS_REVERSE, u),
        (gmw::MSG_INPUT_SHARES[0], sender_inputs),
        (
            gmw::MSG_INPUT_SHARES[1],
            stream((shape.n_r * shape.sigma) as u64),
        ),
        (gmw::MSG_OPEN_AND[0], b.and_bytes),
        (gmw::MSG_OPEN_AND[1], b.and_bytes),
        (gmw::MSG_OPEN_VECTOR[0], b.vector_bytes),
        (gmw::MSG_OPEN_VECTOR[1], b.vector_bytes),
        (gmw::MSG_OUTPUT_SHARES[0], stream(out_bits)),
    ];
    if triples == Triples::Scalar {
        // Plain GMW has no vector openings in its flow.
        t.retain(|(name, _)| !gmw::MSG_OPEN_VECTOR.contains(name));
    }
    Ok(t)
}
