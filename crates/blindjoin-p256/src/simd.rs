//! The eight-lane pipeline over whole batches.
//!
//! Items go in groups of eight (the last one padded), the two field elements of each item
//! (hash path) or two groups of points (decoding path) at a time through the exponent chains
//! of SSWU's `sqrt_ratio` or of the square root (so their latencies overlap), one group at a
//! time through `k·P`, and up to [`MAX_GROUPS`] groups at a time through the conversion to
//! affine coordinates that shares one inversion.

use core::arch::x86_64::__mmask8;

use zeroize::Zeroize;

use super::field::{
    Fe, add, consts, from_be_bytes, from_mont, is_odd_plain, mul, splat, to_be_bytes,
};
use super::point::{P8, decode, map_to_curve, mul_by_digits, to_affine};
use super::{LANES, POINT_LEN, UNIFORM_LEN};

/// Groups per shared inversion.
pub(crate) const MAX_GROUPS: usize = 8;

/// Appends the compressed encodings of the points of `groups` (the first `used[g]` lanes of
/// group g) to `out`, with one inversion for all of them. A lane holding the identity gets 33
/// zero bytes, as RustCrypto's encoding of the identity (its x is 0; the first byte is masked).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn encode(groups: &[P8], used: &[usize], out: &mut Vec<u8>) {
    let n = groups.len();
    let z = [splat(&consts::ONE); MAX_GROUPS];
    let mut xs: [Fe; MAX_GROUPS] = z;
    let mut y_odd = [0 as __mmask8; MAX_GROUPS];
    let mut ident = [0 as __mmask8; MAX_GROUPS];
    to_affine(groups, &mut xs[..n], &mut y_odd[..n], &mut ident[..n]);
    for g in 0..n {
        let mut bytes = to_be_bytes(&xs[g]);
        for (l, x) in bytes.iter().enumerate().take(used[g]) {
            let odd = (y_odd[g] >> l) & 1;
            let not_ident = ((ident[g] >> l) & 1) ^ 1;
            out.push((2 | odd) * not_ident);
            out.extend_from_slice(x);
        }
        bytes.zeroize();
    }
}

/// The field element of a 48-byte string `d0 ‖ d1` (big-endian), `d0·2^192 + d1 mod p`
/// (RFC 9380 §5.2), in Montgomery form, for eight strings; and the lanes where it is odd.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn field_of(strings: &[&[u8]; LANES]) -> (Fe, __mmask8) {
    let mut d0 = [[0u8; 32]; LANES];
    let mut d1 = [[0u8; 32]; LANES];
    for l in 0..LANES {
        d0[l][8..].copy_from_slice(&strings[l][..24]);
        d1[l][8..].copy_from_slice(&strings[l][24..48]);
    }
    let u = add(
        &mul(&from_be_bytes(&d0), &splat(&consts::C192)),
        &mul(&from_be_bytes(&d1), &splat(&consts::R2)),
    );
    d0.zeroize();
    d1.zeroize();
    (u, is_odd_plain(&from_mont(&u)))
}

/// See [`super::hash_mul_compress`]: `uniform` holds each item's `expand_message_xmd` output
/// (`u0 ‖ u1`, 48 bytes each); `digits` are the signed radix-16 digits of k.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
pub(crate) fn hash_mul_compress(
    uniform: &[[u8; UNIFORM_LEN]],
    digits: &[i8; 65],
    out: &mut Vec<u8>,
) {
    let pad = [0u8; UNIFORM_LEN];
    let mut groups = Vec::with_capacity(MAX_GROUPS);
    let mut used = Vec::with_capacity(MAX_GROUPS);
    for batch in uniform.chunks(LANES * MAX_GROUPS) {
        groups.clear();
        used.clear();
        for group in batch.chunks(LANES) {
            let lane = |l: usize| group.get(l).unwrap_or(&pad);
            let (u0, odd0) = field_of(&core::array::from_fn(|l| &lane(l)[..48]));
            let (u1, odd1) = field_of(&core::array::from_fn(|l| &lane(l)[48..]));
            let [q0, q1] = map_to_curve(&[u0, u1], &[odd0, odd1]);
            groups.push(mul_by_digits(&q0.add(&q1), digits));
            used.push(group.len());
        }
        encode(&groups, &used, out);
    }
}

/// See [`super::decompress_mul_compress`]; `digits` are the signed radix-16 digits of k.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
pub(crate) fn decompress_mul_compress(
    points: &[u8],
    digits: &[i8; 65],
    out: &mut Vec<u8>,
) -> Result<(), usize> {
    let whole = points.len() / POINT_LEN * POINT_LEN;
    let (points, tail) = points.split_at(whole);
    let mut groups = Vec::with_capacity(MAX_GROUPS);
    let mut used = Vec::with_capacity(MAX_GROUPS);
    let mut first_index = 0;
    for batch in points.chunks(POINT_LEN * LANES * MAX_GROUPS) {
        groups.clear();
        used.clear();
        for pair in batch.chunks(2 * POINT_LEN * LANES) {
            let n = pair.len() / POINT_LEN;
            let mut xb = [[[0u8; 32]; LANES]; 2];
            let mut odd = [0 as __mmask8; 2];
            let mut tag_ok = [0 as __mmask8; 2];
            for (i, enc) in pair.chunks(POINT_LEN).enumerate() {
                let (g, l) = (i / LANES, i % LANES);
                // 0x02 or 0x03, computed without a branch.
                let ok = u8::from((enc[0] & 0xfe) == 2);
                tag_ok[g] |= ok << l;
                odd[g] |= (enc[0] & 1) << l;
                xb[g][l].copy_from_slice(&enc[1..]);
            }
            let x = [from_be_bytes(&xb[0]), from_be_bytes(&xb[1])];
            let (p, valid) = decode(&x, &odd);
            let groups_here = n.div_ceil(LANES);
            // Which encodings are valid is public: report the first invalid one.
            for g in 0..groups_here {
                let in_group = (n - g * LANES).min(LANES);
                let used_mask = (0xffu16 >> (LANES - in_group)) as u8;
                let invalid = !(valid[g] & tag_ok[g]) & used_mask;
                if invalid != 0 {
                    return Err(first_index + g * LANES + invalid.trailing_zeros() as usize);
                }
                used.push(in_group);
            }
            for pg in p.iter().take(groups_here) {
                groups.push(mul_by_digits(pg, digits));
            }
            first_index += n;
        }
        encode(&groups, &used, out);
    }
    if tail.is_empty() {
        Ok(())
    } else {
        Err(first_index)
    }
}
