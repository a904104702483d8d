//! Bytes on the wire of the base OT and of the OT extensions, framing included, as functions
//! of their sizes: the terms the PSI protocols' communication formulas add up. Each is tested
//! against the metered traffic of a real run.

use crate::base::{FRAME_POINTS, MSG_RECEIVER_POINTS, MSG_SENDER_POINT, POINT_LEN};
use crate::ext::{CHUNK, KAPPA, kk13, kos, row_bytes};
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};

/// The Chou-Orlandi base OT's two messages for `n` OTs: the sender's point S (one frame) and
/// the receiver's points R_i (frames of [`FRAME_POINTS`]); nothing at all for n = 0.
pub fn co15(n: usize) -> [(&'static str, u64); 2] {
    let s = if n == 0 {
        0
    } else {
        (POINT_LEN + FRAME_HEADER_LEN) as u64
    };
    [
        (MSG_SENDER_POINT, s),
        (
            MSG_RECEIVER_POINTS,
            framed_bytes(n as u64, POINT_LEN, FRAME_POINTS),
        ),
    ]
}

/// Masny-Rindal endemic OT ([`crate::base::endemic`]) for `n` OTs: the sender's point A (one
/// frame) and the receiver's pairs of points (frames of [`FRAME_POINTS`] pairs); nothing at all
/// for n = 0.
pub fn endemic(n: usize) -> [(&'static str, u64); 2] {
    use crate::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT, PAIR_LEN};
    let a = if n == 0 {
        0
    } else {
        (POINT_LEN + FRAME_HEADER_LEN) as u64
    };
    [
        (MSG_ENDEMIC_SENDER_POINT, a),
        (
            MSG_ENDEMIC_RECEIVER_PAIRS,
            framed_bytes(n as u64, PAIR_LEN, FRAME_POINTS),
        ),
    ]
}

/// The Chou-Orlandi base OT on a NIST curve ([`crate::base::nist`]) for `n` OTs with points of
/// `point_len` bytes: the sender's point S and the receiver's points R_i in one frame each;
/// nothing at all for n = 0.
pub fn co15_nist(n: usize, point_len: usize) -> [(&'static str, u64); 2] {
    if n == 0 {
        return [(MSG_SENDER_POINT, 0), (MSG_RECEIVER_POINTS, 0)];
    }
    [
        (MSG_SENDER_POINT, (point_len + FRAME_HEADER_LEN) as u64),
        (
            MSG_RECEIVER_POINTS,
            (n * point_len + FRAME_HEADER_LEN) as u64,
        ),
    ]
}

/// The u columns of one extension call of `m` OTs with `columns` base OTs (κ, κ' or k): one
/// frame of `columns · row_bytes(len)` bytes per chunk of at most [`CHUNK`] OTs.
pub fn u_columns(m: usize, columns: usize) -> u64 {
    let full = (m / CHUNK) as u64 * (columns * row_bytes(CHUNK) + FRAME_HEADER_LEN) as u64;
    let rest = m % CHUNK;
    let last = if rest == 0 {
        0
    } else {
        (columns * row_bytes(rest) + FRAME_HEADER_LEN) as u64
    };
    full + last
}

/// The u columns of one KK13 call of `m` 1-out-of-2^η OTs.
pub fn kk13_u_columns(m: usize, eta: u32) -> u64 {
    u_columns(m, kk13::code_len(eta))
}

/// The u columns of one KKRT OPRF call of `m` instances with a code of `width` blocks.
pub fn kkrt_u_columns(m: usize, width: usize) -> u64 {
    u_columns(m, 128 * width)
}

/// One KOS batch ([`crate::ext::kos`]) of `m` OTs, by message: the receiver's commitment, its
/// u columns (those of the m OTs in frames of at most [`CHUNK`] OTs, then one frame for the
/// [`kos::EXTRA`] OTs), its opening and its check values, and the sender's seed share; nothing
/// at all for m = 0.
pub fn kos(m: usize) -> [(&'static str, u64); 5] {
    let short = |len: usize| {
        if m == 0 {
            0
        } else {
            (len + FRAME_HEADER_LEN) as u64
        }
    };
    let u = if m == 0 {
        0
    } else {
        u_columns(m, KAPPA) + u_columns(kos::EXTRA, KAPPA)
    };
    [
        (kos::MSG_COMMITMENT, short(kos::COMMITMENT_LEN)),
        (crate::ext::iknp::MSG_U_COLUMNS, u),
        (kos::MSG_SEED, short(kos::SEED_LEN)),
        (kos::MSG_OPENING, short(kos::OPENING_LEN)),
        (kos::MSG_PROOF, short(kos::PROOF_LEN)),
    ]
}
