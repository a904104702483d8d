//! The bytes of a `circuit_yao` run, message by message, from the circuit's gate count.

use super::flow::COMPARATOR;
use crate::circuit::count::Count;
use crate::circuit::yao::{
    self, BITS_BYTES_PER_FRAME, LABELS_PER_FRAME, TABLE_BYTES_PER_AND, TABLE_FRAME_LEN,
};
use crate::protocol::{Sizes, Traffic};
use crate::protocols::circuit_psi::{self, Shape};
use blindjoin_core::Result;
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};
use blindjoin_ot::ext::CHUNK;
use blindjoin_ot::ext::iknp::{MSG_U_COLUMNS, MSG_Y_VALUES};
use blindjoin_ot::traffic as ot;

/// The garbled tables of `gates` AND gates in one segment: frames of [`TABLE_FRAME_LEN`]
/// bytes and a last, shorter (possibly empty) one; nothing for no gates.
fn tables(gates: u64) -> u64 {
    if gates == 0 {
        return 0;
    }
    let bytes = gates * TABLE_BYTES_PER_AND as u64;
    let frames = bytes / TABLE_FRAME_LEN as u64 + 1;
    bytes + frames * FRAME_HEADER_LEN as u64
}

/// The bytes of every message of a run at `s` (intersection, σ derived from the sizes and λ,
/// sets without σ-bit collisions).
pub(crate) fn traffic(s: &Sizes) -> Result<Traffic> {
    let shape = Shape::of_sizes(s)?;
    let mut count = Count::new();
    let sender = vec![shape.n_s; shape.sender_planes()];
    let receiver = vec![shape.n_r; shape.sigma];
    let switches = shape.switches();
    let out = circuit_psi::evaluate(
        &mut count,
        &shape,
        COMPARATOR,
        &sender,
        &receiver,
        Some(&switches),
    )?;
    let out_bits: u64 = out.iter().map(|l| *l as u64).sum();
    let own_bits = (shape.n_r * shape.sigma) as u64;
    let labels = framed_bytes(
        (shape.n_s * shape.sender_planes()) as u64,
        16,
        LABELS_PER_FRAME,
    ) + framed_bytes(switches as u64, 16, LABELS_PER_FRAME);
    let [base_s, base_r] = ot::co15(128);
    Ok(vec![
        (
            circuit_psi::MSG_SENDER_SETUP,
            blindjoin_core::channel::msg_bytes(&(shape.n_s as u64))?,
        ),
        (
            circuit_psi::MSG_RECEIVER_SETUP,
            blindjoin_core::channel::msg_bytes(&(shape.n_r as u64))?,
        ),
        (yao::MSG_CONSTANT_LABEL, 16 + FRAME_HEADER_LEN as u64),
        base_s,
        base_r,
        (yao::MSG_GARBLER_LABELS, labels),
        (MSG_U_COLUMNS, ot::u_columns(own_bits as usize, 128)),
        (MSG_Y_VALUES, framed_bytes(own_bits, 16, CHUNK)),
        (yao::MSG_TABLES, tables(count.and_gates)),
        (
            yao::MSG_DECODING_BITS,
            framed_bytes(out_bits.div_ceil(8), 1, BITS_BYTES_PER_FRAME),
        ),
    ])
}
