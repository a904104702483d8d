//! Eight elements of GF(p), p = 2^256 − 2^224 + 2^192 + 2^96 − 1, one per 64-bit lane of five
//! AVX-512 vectors, in Montgomery form with R = 2^260.
//!
//! An element is `Σ l_j · 2^(52·j)` for limbs `l_0..l_4`; vector `j` holds limb `j` of the
//! eight elements. The value stored for x is `x·R mod p` up to a multiple of p.
//!
//! # Bounds
//!
//! Every [`Fe`] has limbs `< 2^52` (IFMA reads only the low 52 bits of a factor) and a value
//! `< 2p`; every operation keeps both:
//!
//! - [`mul`]: operand-scanning Montgomery multiplication with `vpmadd52luq`/`vpmadd52huq`.
//!   With `−p^(−1) ≡ 1 (mod 2^52)` (p ≡ −1 mod 2^96) each round's quotient digit is the low 52
//!   bits of the lowest accumulator. The result is `(a·b + m·p)/R` with `m < R`, so below
//!   `a·b/R + p`; for `a, b < 2p` that is `< 4p²/2^260 + p < 2p`, with no final subtraction.
//!   (It stays below 2p for any `a·b < 16p²`, which no caller needs.) The accumulators stay
//!   below 2^57 (at most 4 half-products of `< 2^52` per limb per round, 5 rounds, and the
//!   carries), and one serial carry round normalises the limbs at the end.
//! - [`add`], [`sub`]: limb by limb (`a + b`, or `a + 2p − b`, both in `(0, 4p)`), a signed
//!   carry round, then one conditional subtraction of 2p by mask.
//! - [`canonical`] brings a value `< 2p` to `[0, p)` (one conditional subtraction of p).
//!
//! The unit tests compare every function with a big-integer reference, at random values and
//! at the edges (0, p − 1, p, 2p − 1).

use core::arch::x86_64::{
    __m512i, __mmask8, _mm512_add_epi64, _mm512_and_si512, _mm512_cmpeq_epi64_mask,
    _mm512_loadu_si512, _mm512_madd52hi_epu64, _mm512_madd52lo_epu64, _mm512_mask_blend_epi64,
    _mm512_movepi64_mask, _mm512_or_si512, _mm512_set1_epi64, _mm512_setzero_si512,
    _mm512_slli_epi64, _mm512_srai_epi64, _mm512_srli_epi64, _mm512_storeu_si512, _mm512_sub_epi64,
    _mm512_test_epi64_mask, _mm512_testn_epi64_mask,
};

/// `2^52 − 1`.
const MASK: u64 = (1 << 52) - 1;

/// A field element as five radix-2^52 limbs, as a constant to broadcast.
pub(crate) type Limbs = [u64; 5];

/// Eight field elements (see the module doc for the bounds).
pub(crate) type Fe = [__m512i; 5];

/// The constants, radix 2^52 (checked in the tests against their definitions).
pub(crate) mod consts {
    use super::Limbs;

    /// p.
    pub(crate) const P: Limbs = [
        0xfffffffffffff,
        0xfffffffffff,
        0x0,
        0x1000000000,
        0xffffffff0000,
    ];
    /// 2p.
    pub(crate) const P2: Limbs = [
        0xffffffffffffe,
        0x1fffffffffff,
        0x0,
        0x2000000000,
        0x1fffffffe0000,
    ];
    /// R² mod p (Montgomery form of R, to convert into Montgomery form).
    pub(crate) const R2: Limbs = [
        0x300,
        0xffffffff00000,
        0xffffefffffffb,
        0xfdfffffffffff,
        0x4ffffff,
    ];
    /// 2^192·R² mod p: the Montgomery form of `d·2^192` from a plain `d`.
    pub(crate) const C192: Limbs = [
        0xff7fffffff7ff,
        0xfffff9fffff,
        0xb00000006,
        0xd0100000b000,
        0xfffffcff0000,
    ];
    /// 1 (R mod p).
    pub(crate) const ONE: Limbs = [
        0x10,
        0xf000000000000,
        0xfffffffffffff,
        0xffeffffffffff,
        0xfffff,
    ];
    /// The curve's b.
    pub(crate) const B: Limbs = [
        0xdf6229c4bddfd,
        0xca8843090d89c,
        0x212ed6acf005c,
        0x83415a220abf7,
        0xc30061dd4874,
    ];
    /// The curve's a = −3.
    pub(crate) const A: Limbs = [
        0xfffffffffffcf,
        0x30fffffffffff,
        0x0,
        0x31000000000,
        0xffffffcf0000,
    ];
    /// Z = −10 of the P-256 SSWU suite (RFC 9380 §8.2).
    pub(crate) const Z: Limbs = [
        0xfffffffffff5f,
        0xa0fffffffffff,
        0x0,
        0xa1000000000,
        0xffffff5f0000,
    ];
    /// sqrt(−Z) = sqrt(10), the `c2` of RFC 9380 App. F.2.1.2.
    pub(crate) const C2: Limbs = [
        0x38ee98a195fd9,
        0x6b23dcf70a1fd,
        0xa8dfee78400ad,
        0x303d913c88f9e,
        0x51d26ea2a8f,
    ];
}

/// Loads eight `u64` into a vector.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn load(a: &[u64; 8]) -> __m512i {
    // SAFETY: `a` is 64 readable bytes and the unaligned load has no alignment requirement.
    unsafe { _mm512_loadu_si512(a.as_ptr().cast()) }
}

/// Stores a vector as eight `u64`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn store(v: __m512i) -> [u64; 8] {
    let mut a = [0u64; 8];
    // SAFETY: `a` is 64 writable bytes and the unaligned store has no alignment requirement.
    unsafe { _mm512_storeu_si512(a.as_mut_ptr().cast(), v) };
    a
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn splat1(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

/// The same constant in all eight lanes.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn splat(c: &Limbs) -> Fe {
    [
        splat1(c[0]),
        splat1(c[1]),
        splat1(c[2]),
        splat1(c[3]),
        splat1(c[4]),
    ]
}

/// Zero in all lanes.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn zero() -> Fe {
    [_mm512_setzero_si512(); 5]
}

/// Eight elements from their limbs, lane by lane.
#[cfg(test)]
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn from_lanes(lanes: &[Limbs; 8]) -> Fe {
    let mut v = zero();
    for (j, limb) in v.iter_mut().enumerate() {
        let mut t = [0u64; 8];
        for (l, lane) in lanes.iter().enumerate() {
            t[l] = lane[j];
        }
        *limb = load(&t);
    }
    v
}

/// The limbs, lane by lane.
#[cfg(test)]
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn lanes(a: &Fe) -> [Limbs; 8] {
    let mut out = [[0u64; 5]; 8];
    for (j, &v) in a.iter().enumerate() {
        let t = store(v);
        for (l, lane) in out.iter_mut().enumerate() {
            lane[j] = t[l];
        }
    }
    out
}

/// Montgomery product `a·b/R` (module doc: inputs and output `< 2p`, limbs `< 2^52`).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn mul(a: &Fe, b: &Fe) -> Fe {
    let p = splat(&consts::P);
    let m52 = splat1(MASK);
    let z = _mm512_setzero_si512();
    let mut t = [z; 6];
    for &ai in a.iter() {
        for j in 0..5 {
            t[j] = _mm512_madd52lo_epu64(t[j], ai, b[j]);
        }
        for j in 0..5 {
            t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], ai, b[j]);
        }
        // −p^(−1) ≡ 1 mod 2^52: the quotient digit is t_0's low 52 bits.
        let m = _mm512_and_si512(t[0], m52);
        for j in 0..5 {
            // p's limb 2 is zero.
            if j != 2 {
                t[j] = _mm512_madd52lo_epu64(t[j], m, p[j]);
                t[j + 1] = _mm512_madd52hi_epu64(t[j + 1], m, p[j]);
            }
        }
        // t_0 ≡ 0 mod 2^52 now: carry it into t_1 and shift down one limb.
        t[1] = _mm512_add_epi64(t[1], _mm512_srli_epi64::<52>(t[0]));
        t = [t[1], t[2], t[3], t[4], t[5], z];
    }
    carry([t[0], t[1], t[2], t[3], t[4]])
}

/// `a²`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn sqr(a: &Fe) -> Fe {
    mul(a, a)
}

/// One serial carry round with unsigned limbs: limbs 0..3 below 2^52, limb 4 takes the rest.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn carry(mut t: Fe) -> Fe {
    let m52 = splat1(MASK);
    for j in 0..4 {
        t[j + 1] = _mm512_add_epi64(t[j + 1], _mm512_srli_epi64::<52>(t[j]));
        t[j] = _mm512_and_si512(t[j], m52);
    }
    t
}

/// One serial carry round with signed limbs (arithmetic shifts): limbs 0..3 in `[0, 2^52)`,
/// limb 4 takes the rest, negative exactly when the value is.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn carry_signed(mut t: Fe) -> Fe {
    let m52 = splat1(MASK);
    for j in 0..4 {
        t[j + 1] = _mm512_add_epi64(t[j + 1], _mm512_srai_epi64::<52>(t[j]));
        t[j] = _mm512_and_si512(t[j], m52);
    }
    t
}

/// `x − m` where that is not negative, else `x`; `x` normalised, `m` a constant's limbs.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn cond_sub(x: &Fe, m: &Limbs) -> Fe {
    let mut d = *x;
    for j in 0..5 {
        d[j] = _mm512_sub_epi64(x[j], splat1(m[j]));
    }
    let d = carry_signed(d);
    let negative = _mm512_movepi64_mask(d[4]);
    select(negative, &d, x)
}

/// `a + b` (inputs and output `< 2p`).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn add(a: &Fe, b: &Fe) -> Fe {
    let mut s = *a;
    for j in 0..5 {
        s[j] = _mm512_add_epi64(a[j], b[j]);
    }
    cond_sub(&carry(s), &consts::P2)
}

/// `a − b` (inputs and output `< 2p`).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn sub(a: &Fe, b: &Fe) -> Fe {
    let mut s = *a;
    for j in 0..5 {
        s[j] = _mm512_sub_epi64(_mm512_add_epi64(a[j], splat1(consts::P2[j])), b[j]);
    }
    cond_sub(&carry_signed(s), &consts::P2)
}

/// `−a`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn neg(a: &Fe) -> Fe {
    sub(&zero(), a)
}

/// Lane by lane, `b` where `mask` is set, else `a`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn select(mask: __mmask8, a: &Fe, b: &Fe) -> Fe {
    let mut out = *a;
    for (o, &bj) in out.iter_mut().zip(b.iter()) {
        *o = _mm512_mask_blend_epi64(mask, *o, bj);
    }
    out
}

/// The representative in `[0, p)` of a value `< 2p` (not leaving Montgomery form).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn canonical(a: &Fe) -> Fe {
    cond_sub(a, &consts::P)
}

/// Into Montgomery form: `a·R mod p` for a plain value `a < 2p`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn to_mont(a: &Fe) -> Fe {
    mul(a, &splat(&consts::R2))
}

/// Out of Montgomery form, canonical: the plain value in `[0, p)`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn from_mont(a: &Fe) -> Fe {
    let mut one = zero();
    one[0] = splat1(1);
    // a·1/R < 2p/R + p, so the product is at most p and one subtraction makes it canonical.
    canonical(&mul(a, &one))
}

/// Lanes where the canonical limbs `a` and `b` are equal.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn limbs_eq(a: &Fe, b: &Fe) -> __mmask8 {
    let mut m: __mmask8 = 0xff;
    for j in 0..5 {
        m &= _mm512_cmpeq_epi64_mask(a[j], b[j]);
    }
    m
}

/// Lanes where `a ≡ b (mod p)`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn eq(a: &Fe, b: &Fe) -> __mmask8 {
    limbs_eq(&canonical(a), &canonical(b))
}

/// Lanes where `a ≡ 0 (mod p)`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn is_zero(a: &Fe) -> __mmask8 {
    let c = canonical(a);
    let any = _mm512_or_si512(
        _mm512_or_si512(c[0], c[1]),
        _mm512_or_si512(_mm512_or_si512(c[2], c[3]), c[4]),
    );
    _mm512_testn_epi64_mask(any, any)
}

/// Lanes whose plain value (canonical limbs, out of Montgomery form) is odd.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn is_odd_plain(c: &Fe) -> __mmask8 {
    _mm512_test_epi64_mask(c[0], splat1(1))
}

/// Lanes where the plain limbs `a` (limbs `< 2^52`) are below p.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn below_p(a: &Fe) -> __mmask8 {
    let mut d = *a;
    for j in 0..5 {
        d[j] = _mm512_sub_epi64(a[j], splat1(consts::P[j]));
    }
    _mm512_movepi64_mask(carry_signed(d)[4])
}

/// Eight big-endian 256-bit numbers as plain limbs, lane by lane.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn from_be_bytes(bytes: &[[u8; 32]; 8]) -> Fe {
    let mut w = [[0u64; 8]; 4];
    for (l, b) in bytes.iter().enumerate() {
        for (i, word) in w.iter_mut().enumerate() {
            let mut be = [0u8; 8];
            be.copy_from_slice(&b[32 - 8 * (i + 1)..32 - 8 * i]);
            word[l] = u64::from_be_bytes(be);
        }
    }
    let [w0, w1, w2, w3] = [load(&w[0]), load(&w[1]), load(&w[2]), load(&w[3])];
    let m = splat1(MASK);
    [
        _mm512_and_si512(w0, m),
        _mm512_and_si512(
            _mm512_or_si512(_mm512_srli_epi64::<52>(w0), _mm512_slli_epi64::<12>(w1)),
            m,
        ),
        _mm512_and_si512(
            _mm512_or_si512(_mm512_srli_epi64::<40>(w1), _mm512_slli_epi64::<24>(w2)),
            m,
        ),
        _mm512_and_si512(
            _mm512_or_si512(_mm512_srli_epi64::<28>(w2), _mm512_slli_epi64::<36>(w3)),
            m,
        ),
        _mm512_srli_epi64::<16>(w3),
    ]
}

/// The big-endian 32-byte encodings of eight canonical plain values, lane by lane.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn to_be_bytes(c: &Fe) -> [[u8; 32]; 8] {
    let w = [
        _mm512_or_si512(c[0], _mm512_slli_epi64::<52>(c[1])),
        _mm512_or_si512(_mm512_srli_epi64::<12>(c[1]), _mm512_slli_epi64::<40>(c[2])),
        _mm512_or_si512(_mm512_srli_epi64::<24>(c[2]), _mm512_slli_epi64::<28>(c[3])),
        _mm512_or_si512(_mm512_srli_epi64::<36>(c[3]), _mm512_slli_epi64::<16>(c[4])),
    ];
    let w = [store(w[0]), store(w[1]), store(w[2]), store(w[3])];
    let mut out = [[0u8; 32]; 8];
    for (l, o) in out.iter_mut().enumerate() {
        for (i, word) in w.iter().enumerate() {
            o[32 - 8 * (i + 1)..32 - 8 * i].copy_from_slice(&word[l].to_be_bytes());
        }
    }
    out
}

/// `x^(2^n)` for each of the `N` independent elements, interleaved.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn sqr_n<const N: usize>(x: &[Fe; N], n: u32) -> [Fe; N] {
    let mut y = *x;
    for _ in 0..n {
        for e in y.iter_mut() {
            *e = sqr(e);
        }
    }
    y
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn mul_all<const N: usize>(x: &[Fe; N], y: &[Fe; N]) -> [Fe; N] {
    let mut z = *x;
    for (e, f) in z.iter_mut().zip(y.iter()) {
        *e = mul(e, f);
    }
    z
}

/// The common start of the exponent chains: `x`, `x^(2^30 − 1)`, `x^(2^32 − 1)` and the
/// 64-bit prefix `x^0xffffffff00000001` shared by p − 2, (p + 1)/4 and (p − 3)/4.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn chain_start<const N: usize>(x: &[Fe; N]) -> ([Fe; N], [Fe; N], [Fe; N]) {
    // x_k = x^(2^k − 1).
    let x2 = mul_all(&sqr_n(x, 1), x);
    let x3 = mul_all(&sqr_n(&x2, 1), x);
    let x6 = mul_all(&sqr_n(&x3, 3), &x3);
    let x12 = mul_all(&sqr_n(&x6, 6), &x6);
    let x15 = mul_all(&sqr_n(&x12, 3), &x3);
    let x30 = mul_all(&sqr_n(&x15, 15), &x15);
    let x32 = mul_all(&sqr_n(&x30, 2), &x2);
    // 32 ones, 31 zeros, a one.
    let top = mul_all(&sqr_n(&x32, 32), x);
    (x30, x32, top)
}

/// `x^(p − 2) = 1/x` (0 for 0). p − 2 in binary: 32 ones, 31 zeros, a one, 96 zeros, 94 ones,
/// then 01.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn invert(x: &Fe) -> Fe {
    let xs = [*x];
    let (x30, x32, top) = chain_start(&xs);
    let t = sqr_n(&top, 96);
    let t = mul_all(&sqr_n(&t, 32), &x32);
    let t = mul_all(&sqr_n(&t, 32), &x32);
    let t = mul_all(&sqr_n(&t, 30), &x30);
    mul_all(&sqr_n(&t, 2), &xs)[0]
}

/// `x^((p + 1)/4)`, a square root of x when there is one. (p + 1)/4 in binary: 32 ones, 31
/// zeros, a one, 95 zeros, a one, 94 zeros.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn pow_sqrt<const N: usize>(x: &[Fe; N]) -> [Fe; N] {
    let (_, _, top) = chain_start(x);
    let t = mul_all(&sqr_n(&top, 96), x);
    sqr_n(&t, 94)
}

/// `x^((p − 3)/4)`, the `c1` power of RFC 9380 App. F.2.1.2. (p − 3)/4 in binary: 32 ones, 31
/// zeros, a one, 96 zeros, 94 ones.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn pow_c1<const N: usize>(x: &[Fe; N]) -> [Fe; N] {
    let (x30, x32, top) = chain_start(x);
    let t = sqr_n(&top, 96);
    let t = mul_all(&sqr_n(&t, 32), &x32);
    let t = mul_all(&sqr_n(&t, 32), &x32);
    mul_all(&sqr_n(&t, 30), &x30)
}
