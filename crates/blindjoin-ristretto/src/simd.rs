//! The eight-lane pipeline over whole batches.
//!
//! Points go in groups of eight (the last one padded), two groups at a time through the
//! inverse square roots of DECODE and the Elligator map (so their latencies overlap), one group
//! at a time through `k/2 · P`, and up to [`MAX_BATCH`] groups at a time through the
//! double-and-compress step that shares one inversion (for the pair entry point, two such steps
//! over the same groups: `(k/2)·P` and `(k/2)·P − T/2`).

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_COMPRESSED;

use zeroize::Zeroize;

use super::edwards::{Cached8, Ext8, mul_by_digits};
use super::field::fe_from_bytes;
use super::ristretto::{DoubleCompress8, MAX_BATCH, decode, double_and_compress, elligator};
use super::{LANES, POINT_LEN};

/// The two 32-byte halves of up to eight uniform strings, lane by lane; missing lanes are
/// zero (a valid input whose result is dropped).
fn halves(group: &[[u8; 64]]) -> ([[u8; 32]; LANES], [[u8; 32]; LANES]) {
    let mut first = [[0u8; 32]; LANES];
    let mut second = [[0u8; 32]; LANES];
    for ((u, a), b) in group.iter().zip(first.iter_mut()).zip(second.iter_mut()) {
        a.copy_from_slice(&u[..32]);
        b.copy_from_slice(&u[32..]);
    }
    (first, second)
}

/// Up to eight encodings, lane by lane; missing lanes hold the basepoint (valid; dropped).
fn lanes_of(chunks: &[u8]) -> [[u8; 32]; LANES] {
    let mut lanes = [RISTRETTO_BASEPOINT_COMPRESSED.to_bytes(); LANES];
    for (lane, c) in lanes.iter_mut().zip(chunks.chunks_exact(POINT_LEN)) {
        lane.copy_from_slice(c);
    }
    lanes
}

/// Appends the first `used[i]` encodings of each group `i`.
fn append(encodings: &[[[u8; 32]; LANES]], used: &[usize], out: &mut Vec<u8>) {
    for (enc, &n) in encodings.iter().zip(used) {
        for e in enc.iter().take(n) {
            out.extend_from_slice(e);
        }
    }
}

/// See [`super::hash_mul_compress`]; `half_digits` are the signed radix-16 digits of k/2.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
pub(super) fn hash_mul_compress(uniform: &[[u8; 64]], half_digits: &[i8; 64], out: &mut Vec<u8>) {
    let mut states = Vec::with_capacity(MAX_BATCH);
    let mut used = Vec::with_capacity(MAX_BATCH);
    let mut encodings = [[[0u8; 32]; LANES]; MAX_BATCH];
    for batch in uniform.chunks(LANES * MAX_BATCH) {
        states.clear();
        used.clear();
        for pair in batch.chunks(2 * LANES) {
            let p: [Ext8; 2];
            let groups = if pair.len() > LANES {
                let (a1, a2) = halves(&pair[..LANES]);
                let (b1, b2) = halves(&pair[LANES..]);
                let [ra1, ra2, rb1, rb2] = elligator(&[
                    fe_from_bytes(&a1),
                    fe_from_bytes(&a2),
                    fe_from_bytes(&b1),
                    fe_from_bytes(&b2),
                ]);
                p = [
                    ra1.add_cached(&ra2.cached(), 0).to_ext(),
                    rb1.add_cached(&rb2.cached(), 0).to_ext(),
                ];
                used.push(LANES);
                used.push(pair.len() - LANES);
                2
            } else {
                let (a1, a2) = halves(pair);
                let [r1, r2] = elligator(&[fe_from_bytes(&a1), fe_from_bytes(&a2)]);
                let pa = r1.add_cached(&r2.cached(), 0).to_ext();
                p = [pa, pa];
                used.push(pair.len());
                1
            };
            for pg in p.iter().take(groups) {
                let q = mul_by_digits(pg, half_digits);
                states.push(DoubleCompress8::new(&q));
            }
        }
        double_and_compress(&states, &mut encodings);
        append(&encodings[..states.len()], &used, out);
    }
}

/// See [`super::decompress_mul_compress`]; `half_digits` are the signed radix-16 digits of k/2.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
pub(super) fn decompress_mul_compress(
    points: &[u8],
    half_digits: &[i8; 64],
    out: &mut Vec<u8>,
) -> Result<(), usize> {
    decompress_mul(points, half_digits, out, None)
}

/// See [`super::decompress_mul_pair_compress`]; `half_digits` are the signed radix-16 digits of
/// k/2 and `half_t` is the encoding of T/2.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
pub(super) fn decompress_mul_pair_compress(
    points: &[u8],
    half_digits: &[i8; 64],
    half_t: &[u8; 32],
    out0: &mut Vec<u8>,
    out1: &mut Vec<u8>,
) -> Result<(), usize> {
    // T/2 in every lane. It is the encoding of a point, so every lane decodes; the validity
    // mask is not looked at (T is secret, so nothing may depend on it anyway).
    let ([half_t], _) = decode(&[[*half_t; LANES]]);
    decompress_mul(points, half_digits, out0, Some((&half_t.cached(), out1)))
}

/// The pipeline of both decoding entry points: for each valid encoding P, appends
/// `ENCODE(2·((k/2)·P))` to `out` and, with `minus = Some((c, out1))` where `c` is the cached
/// form of T/2, `ENCODE(2·((k/2)·P − T/2))` to `out1`. Stops at the first invalid encoding.
/// The encodings pass through two stack buffers, which are zeroised before returning.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn decompress_mul(
    points: &[u8],
    half_digits: &[i8; 64],
    out: &mut Vec<u8>,
    mut minus: Option<(&Cached8, &mut Vec<u8>)>,
) -> Result<(), usize> {
    let whole = points.len() / POINT_LEN * POINT_LEN;
    let (points, tail) = points.split_at(whole);
    let mut states = Vec::with_capacity(MAX_BATCH);
    let mut states1 = Vec::with_capacity(if minus.is_some() { MAX_BATCH } else { 0 });
    let mut used = Vec::with_capacity(MAX_BATCH);
    let mut encodings = [[[0u8; 32]; LANES]; MAX_BATCH];
    let mut encodings1 = [[[0u8; 32]; LANES]; MAX_BATCH];
    let mut first_index = 0;
    let result = 'run: {
        for batch in points.chunks(POINT_LEN * LANES * MAX_BATCH) {
            states.clear();
            states1.clear();
            used.clear();
            for pair in batch.chunks(2 * POINT_LEN * LANES) {
                let n = pair.len() / POINT_LEN;
                let (p, valid, groups) = if n > LANES {
                    let (a, b) = pair.split_at(POINT_LEN * LANES);
                    let (p, [va, vb]) = decode(&[lanes_of(a), lanes_of(b)]);
                    (p, [va, vb], 2)
                } else {
                    let ([p], [v]) = decode(&[lanes_of(pair)]);
                    (([p, p]), [v, 0xff], 1)
                };
                // Which encodings are valid is public: report the first invalid one.
                for (g, v) in valid.iter().enumerate().take(groups) {
                    let in_group = (n - g * LANES).min(LANES);
                    let used_mask = (0xffu16 >> (LANES - in_group)) as u8;
                    let invalid = !v & used_mask;
                    if invalid != 0 {
                        break 'run Err(first_index
                            + g * LANES
                            + invalid.trailing_zeros() as usize);
                    }
                    used.push(in_group);
                }
                for pg in p.iter().take(groups) {
                    let q = mul_by_digits(pg, half_digits);
                    states.push(DoubleCompress8::new(&q));
                    if let Some((half_t, _)) = &minus {
                        // (k/2)·P − T/2, the same subtraction in every lane.
                        let q1 = q.add_cached(half_t, 0xff).to_ext();
                        states1.push(DoubleCompress8::new(&q1));
                    }
                }
                first_index += n;
            }
            double_and_compress(&states, &mut encodings);
            append(&encodings[..states.len()], &used, out);
            if let Some((_, out1)) = &mut minus {
                double_and_compress(&states1, &mut encodings1);
                append(&encodings1[..states1.len()], &used, out1);
            }
        }
        if tail.is_empty() {
            Ok(())
        } else {
            Err(first_index)
        }
    };
    encodings.zeroize();
    encodings1.zeroize();
    result
}
