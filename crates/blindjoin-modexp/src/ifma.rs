//! The eight-lane engine: Montgomery arithmetic in radix 2^52 with limb j of eight numbers in
//! one `__m512i` (see the crate doc for the design and the bounds).

use crate::{Exponent, LANES};
use crypto_bigint::{BoxedUint, Odd, Resize};
use std::arch::x86_64::{
    __m512i, _mm512_add_epi64, _mm512_and_si512, _mm512_cmpeq_epi64_mask, _mm512_loadu_si512,
    _mm512_madd52hi_epu64, _mm512_madd52lo_epu64, _mm512_mask_mov_epi64, _mm512_set1_epi64,
    _mm512_setzero_si512, _mm512_slli_epi64, _mm512_srli_epi64, _mm512_storeu_si512,
    _mm512_sub_epi64,
};
use zeroize::Zeroize;

/// Bits per limb.
const RADIX: u32 = 52;
/// The low 52 bits.
const MASK: u64 = (1 << RADIX) - 1;

type V = __m512i;

/// The modulus in radix 2^52, with R = 2^(52·L) and the Montgomery constants.
#[derive(Clone, Debug)]
pub(crate) struct Consts {
    /// Limbs L.
    l: usize,
    /// Bytes of an element.
    len: usize,
    /// N, L limbs.
    n: Vec<u64>,
    /// −N^{−1} mod 2^52.
    n0inv: u64,
    /// R mod N (the Montgomery form of 1), L limbs.
    one: Vec<u64>,
    /// R² mod N, L limbs.
    r2: Vec<u64>,
}

impl Consts {
    pub(crate) fn new(n: &Odd<BoxedUint>, len: usize) -> Consts {
        let l = (8 * len + 2).div_ceil(RADIX as usize);
        let r_bits = RADIX * l as u32;
        let precision = (2 * r_bits + 64).div_ceil(64) * 64;
        let nz = n.as_ref().clone().resize(precision);
        let nz = crypto_bigint::NonZero::new(nz).into_option();
        let (one, r2) = match nz {
            Some(nz) => {
                let unit = BoxedUint::one_with_precision(precision);
                (unit.shl(r_bits).rem(&nz), unit.shl(2 * r_bits).rem(&nz))
            }
            // An odd modulus is never zero.
            None => (BoxedUint::zero(), BoxedUint::zero()),
        };
        // Newton's iteration for N^{−1} mod 2^64 (each step doubles the correct low bits).
        let n0 = n.as_ref().as_words()[0];
        let mut inv: u64 = 1;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(n0.wrapping_mul(inv)));
        }
        Consts {
            l,
            len,
            n: words_to_limbs(n.as_ref().as_words(), l),
            n0inv: inv.wrapping_neg() & MASK,
            one: words_to_limbs(one.as_words(), l),
            r2: words_to_limbs(r2.as_words(), l),
        }
    }
}

impl Drop for Consts {
    fn drop(&mut self) {
        self.n.zeroize();
        self.n0inv.zeroize();
        self.one.zeroize();
        self.r2.zeroize();
    }
}

/// Little-endian 64-bit words to `l` limbs of 52 bits (bits beyond 52·l are dropped).
fn words_to_limbs(words: &[u64], l: usize) -> Vec<u64> {
    let mut limbs = vec![0u64; l];
    for (j, limb) in limbs.iter_mut().enumerate() {
        let bit = j * RADIX as usize;
        let (w, s) = (bit / 64, bit % 64);
        let mut v = words.get(w).copied().unwrap_or(0) >> s;
        if s > 64 - RADIX as usize {
            v |= words.get(w + 1).copied().unwrap_or(0) << (64 - s);
        }
        *limb = v & MASK;
    }
    limbs
}

/// A big-endian element into `limbs` (52 bits each, least significant first).
fn be_to_limbs(be: &[u8], limbs: &mut [u64]) {
    limbs.fill(0);
    for (k, &byte) in be.iter().rev().enumerate() {
        let bit = 8 * k;
        let (j, s) = (bit / RADIX as usize, bit % RADIX as usize);
        if let Some(limb) = limbs.get_mut(j) {
            *limb |= (u64::from(byte) << s) & MASK;
        }
        if s > RADIX as usize - 8
            && let Some(limb) = limbs.get_mut(j + 1)
        {
            *limb |= u64::from(byte) >> (RADIX as usize - s);
        }
    }
}

/// Normalised limbs (each below 2^52) into a big-endian element.
fn limbs_to_be(limbs: &[u64], be: &mut [u8]) {
    let len = be.len();
    for (k, byte) in be.iter_mut().rev().enumerate().take(len) {
        let bit = 8 * k;
        let (j, s) = (bit / RADIX as usize, bit % RADIX as usize);
        let mut v = limbs.get(j).copied().unwrap_or(0) >> s;
        if s > RADIX as usize - 8 {
            v |= limbs.get(j + 1).copied().unwrap_or(0) << (RADIX as usize - s);
        }
        *byte = v as u8;
    }
}

/// The window width for an exponent of `bits` bits: the fewest multiplications
/// (⌈bits/w⌉ + 2^w − 2 for the table).
fn window(bits: u32) -> u32 {
    (1..=7u32)
        .min_by_key(|&w| bits.div_ceil(w) + (1 << w))
        .unwrap_or(4)
}

/// The w-bit digits of the exponent, most significant first, over its declared length.
fn digits(exp: &Exponent, w: u32) -> Vec<u8> {
    let words = exp.words();
    let count = exp.bits().div_ceil(w);
    (0..count)
        .rev()
        .map(|k| {
            let mut d = 0u64;
            for b in (0..w).rev() {
                let bit = (k * w + b) as usize;
                let word = words.get(bit / 64).copied().unwrap_or(0);
                d = (d << 1) | ((word >> (bit % 64)) & 1);
            }
            d as u8
        })
        .collect()
}

/// The working vectors of one group of eight.
struct Scratch {
    /// Broadcast N, L vectors.
    n: Vec<V>,
    n0inv: V,
    mask: V,
    /// Product columns, 2L.
    t: Vec<V>,
    /// 2^w table entries of L vectors.
    table: Vec<V>,
    acc: Vec<V>,
    tmp: Vec<V>,
    x: Vec<V>,
}

impl Scratch {
    fn wipe(&mut self) {
        for v in [
            &mut self.t,
            &mut self.table,
            &mut self.acc,
            &mut self.tmp,
            &mut self.x,
        ] {
            // SAFETY: a `__m512i` is 64 plain bytes; the byte view covers exactly the vector.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 64)
            };
            bytes.zeroize();
        }
    }
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn zero() -> V {
    _mm512_setzero_si512()
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn splat(x: u64) -> V {
    _mm512_set1_epi64(x as i64)
}

/// Eight lanes of `[u64; 8]` into a vector.
#[target_feature(enable = "avx512f,avx512ifma")]
fn load(lanes: &[u64; LANES]) -> V {
    // SAFETY: `lanes` is 64 readable bytes; the load is unaligned.
    unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) }
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn store(v: V) -> [u64; LANES] {
    let mut lanes = [0u64; LANES];
    // SAFETY: `lanes` is 64 writable bytes; the store is unaligned.
    unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), v) };
    lanes
}

/// Montgomery reduction of the 2L columns `t` into normalised `out` (L limbs):
/// `out = t / R mod N`, below 2N when `t` < 4N² (see the crate doc).
#[target_feature(enable = "avx512f,avx512ifma")]
fn reduce(s: &mut Scratch, out_acc: bool) {
    let l = s.n.len();
    let z = zero();
    for i in 0..l {
        let (low, high) = s.t.split_at_mut(i + 1);
        let ti = low[i];
        let m = _mm512_madd52lo_epu64(z, ti, s.n0inv);
        // Column i itself: t_i + lo(m·n_0) ≡ 0 mod 2^52; its carry goes to column i + 1.
        let t0 = _mm512_madd52lo_epu64(ti, m, s.n[0]);
        let mut hi = _mm512_madd52hi_epu64(_mm512_srli_epi64(t0, RADIX), m, s.n[0]);
        for (tj, &nj) in high[..l - 1].iter_mut().zip(&s.n[1..]) {
            let x = _mm512_madd52lo_epu64(*tj, m, nj);
            *tj = _mm512_add_epi64(x, hi);
            hi = _mm512_madd52hi_epu64(z, m, nj);
        }
        high[l - 1] = _mm512_add_epi64(high[l - 1], hi);
    }
    let mut carry = z;
    let out = if out_acc { &mut s.acc } else { &mut s.tmp };
    for (o, &tk) in out.iter_mut().zip(&s.t[l..]) {
        let x = _mm512_add_epi64(tk, carry);
        *o = _mm512_and_si512(x, s.mask);
        carry = _mm512_srli_epi64(x, RADIX);
    }
}

/// `t = a · b` (2L columns, not carried).
#[target_feature(enable = "avx512f,avx512ifma")]
fn product(t: &mut [V], a: &[V], b: &[V]) {
    let l = a.len();
    let z = zero();
    t.fill(z);
    for (i, &ai) in a.iter().enumerate() {
        let mut hi = z;
        for (tj, &bj) in t[i..i + l].iter_mut().zip(b) {
            let x = _mm512_madd52lo_epu64(*tj, ai, bj);
            *tj = _mm512_add_epi64(x, hi);
            hi = _mm512_madd52hi_epu64(z, ai, bj);
        }
        t[i + l] = _mm512_add_epi64(t[i + l], hi);
    }
}

/// `t = a²` (2L columns, not carried): cross products once, doubled, plus the squares.
#[target_feature(enable = "avx512f,avx512ifma")]
fn square(t: &mut [V], a: &[V]) {
    let l = a.len();
    let z = zero();
    t.fill(z);
    for (i, &ai) in a.iter().enumerate() {
        let mut hi = z;
        for (tj, &aj) in t[2 * i + 1..i + l].iter_mut().zip(&a[i + 1..]) {
            let x = _mm512_madd52lo_epu64(*tj, ai, aj);
            *tj = _mm512_add_epi64(x, hi);
            hi = _mm512_madd52hi_epu64(z, ai, aj);
        }
        t[i + l] = _mm512_add_epi64(t[i + l], hi);
    }
    for (i, &ai) in a.iter().enumerate() {
        let lo = _mm512_slli_epi64(t[2 * i], 1);
        t[2 * i] = _mm512_madd52lo_epu64(lo, ai, ai);
        let hi = _mm512_slli_epi64(t[2 * i + 1], 1);
        t[2 * i + 1] = _mm512_madd52hi_epu64(hi, ai, ai);
    }
}

/// `acc = acc² / R`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn sqr_acc(s: &mut Scratch) {
    square(&mut s.t, &s.acc);
    reduce(s, true);
}

/// `acc = acc · tmp / R`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn mul_acc_tmp(s: &mut Scratch) {
    product(&mut s.t, &s.acc, &s.tmp);
    reduce(s, true);
}

/// `tmp = table[digit]`, scanning every entry.
#[target_feature(enable = "avx512f,avx512ifma")]
fn select(s: &mut Scratch, digit: u8) {
    let l = s.n.len();
    let target = splat(u64::from(digit));
    s.tmp.fill(zero());
    for (k, entry) in s.table.chunks_exact(l).enumerate() {
        let m = _mm512_cmpeq_epi64_mask(splat(k as u64), target);
        for (o, &e) in s.tmp.iter_mut().zip(entry) {
            *o = _mm512_mask_mov_epi64(*o, m, e);
        }
    }
}

/// `acc = canonical(acc)`: subtracts N from the lanes where acc ≥ N (acc < 2N, normalised).
#[target_feature(enable = "avx512f,avx512ifma")]
fn canonical(s: &mut Scratch) {
    let mut borrow = zero();
    for (d, (&a, &n)) in s.tmp.iter_mut().zip(s.acc.iter().zip(&s.n)) {
        let x = _mm512_sub_epi64(_mm512_sub_epi64(a, n), borrow);
        borrow = _mm512_srli_epi64(x, 63);
        *d = _mm512_and_si512(x, s.mask);
    }
    let keep_diff = _mm512_cmpeq_epi64_mask(borrow, zero());
    for (a, &d) in s.acc.iter_mut().zip(&s.tmp) {
        *a = _mm512_mask_mov_epi64(*a, keep_diff, d);
    }
}

/// See [`crate::Modulus::pow_batch`]; `bases` holds whole elements only.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn pow_batch(c: &Consts, bases: &[u8], exp: &Exponent, out: &mut Vec<u8>) {
    let l = c.l;
    let w = window(exp.bits());
    let mut digits = digits(exp, w);
    let z = zero();
    let mut s = Scratch {
        n: c.n.iter().map(|&x| splat(x)).collect(),
        n0inv: splat(c.n0inv),
        mask: splat(MASK),
        t: vec![z; 2 * l],
        table: vec![z; l << w],
        acc: vec![z; l],
        tmp: vec![z; l],
        x: vec![z; l],
    };
    let r2: Vec<V> = c.r2.iter().map(|&x| splat(x)).collect();
    let one: Vec<V> = c.one.iter().map(|&x| splat(x)).collect();
    let mut lanes = vec![[0u64; LANES]; l];
    let mut limbs = vec![0u64; l];
    let mut element = vec![0u8; c.len];
    for group in bases.chunks(c.len * LANES) {
        // x = the bases, lane by lane (missing lanes are 0).
        for lane in lanes.iter_mut() {
            *lane = [0; LANES];
        }
        for (lane, base) in group.chunks_exact(c.len).enumerate() {
            be_to_limbs(base, &mut limbs);
            for (v, &limb) in lanes.iter_mut().zip(&limbs) {
                v[lane] = limb;
            }
        }
        for (x, v) in s.x.iter_mut().zip(&lanes) {
            *x = load(v);
        }
        // table[0] = 1·R, table[1] = x·R, table[k] = table[k − 1]·x·R.
        s.table[..l].copy_from_slice(&one);
        s.acc.copy_from_slice(&s.x);
        s.tmp.copy_from_slice(&r2);
        mul_acc_tmp(&mut s);
        s.x.copy_from_slice(&s.acc);
        for k in 1..(1usize << w) {
            s.table[k * l..(k + 1) * l].copy_from_slice(&s.acc);
            if k + 1 < 1 << w {
                s.tmp.copy_from_slice(&s.x);
                mul_acc_tmp(&mut s);
            }
        }
        // Left to right: acc = table[d_0]; then w squarings and one product per digit.
        if let Some((&first, rest)) = digits.split_first() {
            select(&mut s, first);
            s.acc.copy_from_slice(&s.tmp);
            for &d in rest {
                for _ in 0..w {
                    sqr_acc(&mut s);
                }
                select(&mut s, d);
                mul_acc_tmp(&mut s);
            }
        } else {
            s.acc.copy_from_slice(&one);
        }
        // Out of Montgomery form (acc · 1 / R ≤ N), then canonical.
        s.tmp.fill(z);
        s.tmp[0] = splat(1);
        mul_acc_tmp(&mut s);
        canonical(&mut s);
        for (v, &a) in lanes.iter_mut().zip(&s.acc) {
            *v = store(a);
        }
        for lane in 0..group.len() / c.len {
            for (limb, v) in limbs.iter_mut().zip(&lanes) {
                *limb = v[lane];
            }
            limbs_to_be(&limbs, &mut element);
            out.extend_from_slice(&element);
        }
    }
    for v in lanes.iter_mut() {
        v.zeroize();
    }
    limbs.zeroize();
    element.zeroize();
    digits.zeroize();
    s.wipe();
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn limbs_round_trip_bytes() {
        let be: Vec<u8> = (0..384u32).map(|i| (i * 37 + 11) as u8).collect();
        let mut limbs = vec![0u64; 60];
        be_to_limbs(&be, &mut limbs);
        assert!(limbs.iter().all(|&x| x <= MASK));
        let mut back = vec![0u8; 384];
        limbs_to_be(&limbs, &mut back);
        assert_eq!(back, be);
        let words: Vec<u64> = be
            .rchunks(8)
            .map(|c| c.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)))
            .collect();
        assert_eq!(words_to_limbs(&words, 60), limbs);
    }

    #[test]
    fn windows_and_digits() {
        assert_eq!(window(256), 4);
        assert_eq!(window(1536), 6);
        let e = Exponent::from_be_bytes(&[0b0001_0110, 0b0101_1100], 13).unwrap();
        // 0x165C over 13 bits in 4-bit digits (top digit 1 bit): 1 0110 0101 1100.
        assert_eq!(digits(&e, 4), vec![0b1, 0b0110, 0b0101, 0b1100]);
    }
}
