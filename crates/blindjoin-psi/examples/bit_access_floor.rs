//! How fast this machine reads and clears single bits at random positions of one CM20 column
//! (m = 2^20 bits, 128 KiB), with nothing else in the loop: the floor under `cm20`'s matrix
//! phase. That phase does one such access per (item, column) on the sender (read C_j) and a read
//! plus a clear on the receiver (read A_j, clear D_j), n·w ≈ 6.5·10^8 of them at n = 2^20.
//! The real kernel also runs F (one AES block per item and span), streams the PRF inputs and
//! switches between the columns of a span, so it can only be slower.
//!
//! `cargo run --release -p blindjoin-psi --example bit_access_floor`
//!
//! Each kernel runs over the same 2^24 random indices, 5 times; the median is printed with what
//! it implies for n·w accesses at n = 2^20, w = 621 (CM20 Table 1).

use std::hint::black_box;
use std::time::Instant;

const LOG_M: u32 = 20;
const ACCESSES: usize = 1 << 24;
const REPS: usize = 5;
const NW: f64 = 621.0 * (1u64 << 20) as f64;

fn main() {
    let m = 1usize << LOG_M;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let idx: Vec<u32> = (0..ACCESSES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 20) as u32 & (m as u32 - 1)
        })
        .collect();
    let column: Vec<u64> = (0..m / 64)
        .map(|k| (k as u64).wrapping_mul(0x2545_f491_4f6c_dd1d))
        .collect();
    let mut out = vec![0u64; ACCESSES / 64];
    let mut d = vec![!0u64; m / 64];
    let mut ad: Vec<[u64; 2]> = column.iter().map(|&a| [a, !0]).collect();

    println!("kernel (one column of 2^20 bits)              ns/access   n·w accesses at 2^20");
    report("read a bit (sender: C_j)", || read(&column, &idx, &mut out));
    report("clear a bit (D_j)", || clear(&mut d, &idx));
    report("read A_j and clear D_j (receiver)", || {
        read_and_clear(&mut ad, &idx, &mut out);
    });
    black_box((&out, &d, &ad));
}

/// Runs `f` [`REPS`] times and prints the median time per access.
fn report(name: &str, mut f: impl FnMut()) {
    let mut times: Vec<f64> = (0..REPS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() / ACCESSES as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let per = times[REPS / 2];
    println!("{name:<46} {:>9.2}   {:>8.2} s", per * 1e9, per * NW);
}

// The loops below are the fastest forms found here. In particular, collecting the bits forward
// (`acc |= bit << j`) ran about 2.5x faster in this program than shifting them in from the last
// item down (`acc = acc << 1 | bit`); in `cm20`'s own kernel the two forms measured the same.

/// Bit i of `out` = bit `idx[i]` of `col` (a power-of-two number of words).
fn read(col: &[u64], idx: &[u32], out: &mut [u64]) {
    let mask = col.len() - 1;
    for (o, is) in out.iter_mut().zip(idx.chunks(64)) {
        let mut acc = 0u64;
        for (j, &i) in is.iter().enumerate() {
            let w = col[(i as usize / 64) & mask];
            acc |= ((w >> (i % 64)) & 1) << j;
        }
        *o = acc;
    }
}

/// Clears bit `idx[i]` of `col` (a power-of-two number of words) for every i.
fn clear(col: &mut [u64], idx: &[u32]) {
    let mask = col.len() - 1;
    for &i in idx {
        col[(i as usize / 64) & mask] &= !(1u64 << (i % 64));
    }
}

/// Bit i of `out` = bit `idx[i]` of the A words, and that bit of the D words cleared (A and D
/// interleaved word by word, as `cm20`'s receiver keeps them).
fn read_and_clear(col: &mut [[u64; 2]], idx: &[u32], out: &mut [u64]) {
    let mask = col.len() - 1;
    for (o, is) in out.iter_mut().zip(idx.chunks(64)) {
        let mut acc = 0u64;
        for (j, &i) in is.iter().enumerate() {
            let w = &mut col[(i as usize / 64) & mask];
            w[1] &= !(1u64 << (i % 64));
            acc |= ((w[0] >> (i % 64)) & 1) << j;
        }
        *o = acc;
    }
}
