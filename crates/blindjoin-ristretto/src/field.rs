//! Eight elements of GF(2^255 − 19) at once, one per 64-bit lane of five AVX-512 vectors.
//!
//! An element is `Σ l_j · 2^(51·j)` for limbs `l_0..l_4`; vector `j` holds limb `j` of the eight
//! elements. Products use the 52-bit multiply-accumulate instructions of AVX-512 IFMA
//! (`vpmadd52luq`/`vpmadd52huq`), which read only the low 52 bits of each factor. Radix 2^51
//! (as in dalek's `backend::vector::ifma`) leaves one bit of slack below those 52 bits, so a
//! single *parallel* carry round brings any loose element back to valid factors. (A first
//! version in radix 2^52, reducing with `2^260 ≡ 608`, needed a serial carry chain after every
//! product; its scalar multiplication measured 6.4 µs per point against 5.9 µs for this one
//! with the same `×19` by shifts, on Zen 4.)
//!
//! # Bounds
//!
//! - **Tight** ([`Fe8`]): every limb `< 2^51 + 2^17` — the outputs of [`Fe8L::carry`] and the
//!   constants (canonical, `< 2^51`). Valid factors for [`Fe8::mul_l`] / [`Fe8::sqr_l`]
//!   (`< 2^52`). The value is below `2^255 + 2^222 < 2p`.
//! - **Product**: [`Fe8::mul_l`] and [`Fe8::sqr_l`] give limbs `< 2^59` (see `reduce_product`).
//! - **Loose** ([`Fe8L`]): limbs `< 2^63`, what [`Fe8L::carry`] accepts.
//! - Subtraction `a − b` computes `a + 1024p − b` limb by limb, with `1024p` written with every
//!   limb close to `2^61` ([`BIAS`]): it needs `b_j ≤ BIAS_j` (`≥ 2^61 − 19456`), which holds
//!   for tight elements, products and sums of up to three products; the result is
//!   `< a_j + 2^61`, so `a` may be anything below `2^62`.
//!
//! Every function states which of these it needs; the unit tests drive each one with limbs at
//! their bounds, and the point formulas state theirs.

use core::arch::x86_64::{
    __m512i, __mmask8, _mm512_add_epi64, _mm512_and_si512, _mm512_cmpeq_epi64_mask,
    _mm512_loadu_si512, _mm512_madd52hi_epu64, _mm512_madd52lo_epu64, _mm512_mask_blend_epi64,
    _mm512_mullo_epi64, _mm512_or_si512, _mm512_set1_epi64, _mm512_setzero_si512,
    _mm512_slli_epi64, _mm512_srli_epi64, _mm512_storeu_si512, _mm512_sub_epi64,
    _mm512_test_epi64_mask, _mm512_testn_epi64_mask,
};

/// `2^51 − 1`.
pub(super) const MASK51: u64 = (1 << 51) - 1;

/// `1024·p` with every limb close to `2^61`: the bias added before a subtraction so that no
/// limb goes negative.
const BIAS: [u64; 5] = [
    (1 << 61) - 19 * 1024,
    (1 << 61) - 1024,
    (1 << 61) - 1024,
    (1 << 61) - 1024,
    (1 << 61) - 1024,
];

/// A field element in radix 2^51 (canonical limbs), as a constant to broadcast.
pub(super) type Limbs = [u64; 5];

/// The field constants, the radix-2^51 limbs of `curve25519-dalek`'s
/// `backend::serial::u64::constants` (checked in the tests against their defining equations).
pub(super) mod consts {
    use super::Limbs;

    /// 1.
    pub(crate) const ONE: Limbs = [1, 0, 0, 0, 0];
    /// −1 = p − 1.
    pub(crate) const MINUS_ONE: Limbs = [
        2251799813685228,
        2251799813685247,
        2251799813685247,
        2251799813685247,
        2251799813685247,
    ];
    /// d = −121665/121666.
    pub(crate) const EDWARDS_D: Limbs = [
        929955233495203,
        466365720129213,
        1662059464998953,
        2033849074728123,
        1442794654840575,
    ];
    /// 2d.
    pub(crate) const EDWARDS_D2: Limbs = [
        1859910466990425,
        932731440258426,
        1072319116312658,
        1815898335770999,
        633789495995903,
    ];
    /// 1 − d².
    pub(crate) const ONE_MINUS_EDWARDS_D_SQUARED: Limbs = [
        1136626929484150,
        1998550399581263,
        496427632559748,
        118527312129759,
        45110755273534,
    ];
    /// (d − 1)².
    pub(crate) const EDWARDS_D_MINUS_ONE_SQUARED: Limbs = [
        1507062230895904,
        1572317787530805,
        683053064812840,
        317374165784489,
        1572899562415810,
    ];
    /// sqrt(a·d − 1) with a = −1.
    pub(crate) const SQRT_AD_MINUS_ONE: Limbs = [
        2241493124984347,
        425987919032274,
        2207028919301688,
        1220490630685848,
        974799131293748,
    ];
    /// 1/sqrt(a − d) with a = −1.
    pub(crate) const INVSQRT_A_MINUS_D: Limbs = [
        278908739862762,
        821645201101625,
        8113234426968,
        1777959178193151,
        2118520810568447,
    ];
    /// sqrt(−1).
    pub(crate) const SQRT_M1: Limbs = [
        1718705420411056,
        234908883556509,
        2233514472574048,
        2117202627021982,
        765476049583133,
    ];
}

/// Loads eight `u64` into a vector.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn load(a: &[u64; 8]) -> __m512i {
    // SAFETY: `a` is 64 readable bytes and the unaligned load has no alignment requirement.
    unsafe { _mm512_loadu_si512(a.as_ptr().cast()) }
}

/// Stores a vector as eight `u64`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn store(v: __m512i) -> [u64; 8] {
    let mut a = [0u64; 8];
    // SAFETY: `a` is 64 writable bytes and the unaligned store has no alignment requirement.
    unsafe { _mm512_storeu_si512(a.as_mut_ptr().cast(), v) };
    a
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn splat(x: u64) -> __m512i {
    _mm512_set1_epi64(x as i64)
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn lo(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
    _mm512_madd52lo_epu64(acc, a, b)
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn hi(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
    _mm512_madd52hi_epu64(acc, a, b)
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn add(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi64(a, b)
}

/// Eight field elements with tight limbs (each `< 2^51 + 2^17`).
#[derive(Clone, Copy)]
pub(super) struct Fe8(pub(super) [__m512i; 5]);

/// Eight field elements with loose limbs (each `< 2^63`; see the module doc).
#[derive(Clone, Copy)]
pub(super) struct Fe8L(pub(super) [__m512i; 5]);

/// `19·x` for `x < 2^59` (`vpmullq`: measured faster here than `x + 2x + 16x`, whose shifts
/// and adds compete with the rest of the reduction for the vector ALUs).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn times19(x: __m512i) -> __m512i {
    _mm512_mullo_epi64(x, splat(19))
}

/// Folds the ten product limbs `z_0..z_9` (weights `2^(51k)`) of a product of tight elements
/// into five, with `2^255 ≡ 19`.
///
/// With tight factors every `a_i·b_j < 2^102.01`, so its low half is `< 2^52` and its high
/// half `< 2^50.01`; `z_k` sums `n_k` low halves and twice `n_{k−1}` high halves
/// (`n = 1, 2, 3, 4, 5, 4, 3, 2, 1, 0`): `z_k < (1, 2.5, 4, 5.5, 7, 6.5, 5, 3.5, 2, 0.5)·2^52`.
/// The result `z_k + 19·z_{k+5}` is below `124.5·2^52 < 2^59`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn reduce_product(z: [__m512i; 10]) -> Fe8L {
    Fe8L([
        add(z[0], times19(z[5])),
        add(z[1], times19(z[6])),
        add(z[2], times19(z[7])),
        add(z[3], times19(z[8])),
        add(z[4], times19(z[9])),
    ])
}

impl Fe8 {
    /// The same constant in all eight lanes.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn splat(c: &Limbs) -> Fe8 {
        Fe8([
            splat(c[0]),
            splat(c[1]),
            splat(c[2]),
            splat(c[3]),
            splat(c[4]),
        ])
    }

    /// Eight elements from their limbs, lane by lane; the caller guarantees the tight bounds.
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn from_lanes(lanes: &[Limbs; 8]) -> Fe8 {
        Fe8(Fe8L::from_lanes(lanes).0)
    }

    /// The same elements, viewed as loose.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn l(self) -> Fe8L {
        Fe8L(self.0)
    }

    /// `self · rhs`, limbs `< 2^59`: schoolbook 5×5 with IFMA, then `reduce_product`.
    ///
    /// The high half of `a_i·b_j` has weight `2^(51(i+j)+52) = 2·2^(51(i+j+1))`: each product
    /// limb first accumulates its high halves, is doubled, then accumulates its low halves.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn mul_l(&self, rhs: &Fe8) -> Fe8L {
        let a = &self.0;
        let b = &rhs.0;
        let zero = _mm512_setzero_si512();
        let mut z = [zero; 10];
        // In program order, consecutive multiply-adds go to different accumulators.
        for j in 0..5 {
            for i in 0..5 {
                z[i + j + 1] = hi(z[i + j + 1], a[i], b[j]);
            }
        }
        for zk in z.iter_mut().skip(1) {
            *zk = add(*zk, *zk);
        }
        for j in 0..5 {
            for i in 0..5 {
                z[i + j] = lo(z[i + j], a[i], b[j]);
            }
        }
        reduce_product(z)
    }

    /// `self²`, limbs `< 2^59`; the limbs are exactly those of `self.mul_l(self)`.
    ///
    /// With `XH`, `XL` the high and low halves of the products `a_i·a_j` with `i < j` and `DH`,
    /// `DL` those of the squares `a_i²`, product limb k is `4·XH + 2·(XL + DH) + DL`: each
    /// accumulator takes its `XH` terms, is doubled, takes its `XL` and `DH` terms, is doubled
    /// again and takes its `DL` term.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn sqr_l(&self) -> Fe8L {
        let a = &self.0;
        let zero = _mm512_setzero_si512();
        let mut z = [zero; 10];
        for i in 0..5 {
            for j in (i + 1)..5 {
                z[i + j + 1] = hi(z[i + j + 1], a[i], a[j]);
            }
        }
        for zk in z.iter_mut().skip(2).take(7) {
            *zk = add(*zk, *zk);
        }
        for i in 0..5 {
            for j in (i + 1)..5 {
                z[i + j] = lo(z[i + j], a[i], a[j]);
            }
            z[2 * i + 1] = hi(z[2 * i + 1], a[i], a[i]);
        }
        for zk in z.iter_mut().skip(1) {
            *zk = add(*zk, *zk);
        }
        for i in 0..5 {
            z[2 * i] = lo(z[2 * i], a[i], a[i]);
        }
        reduce_product(z)
    }

    /// `self · rhs`, carried to tight limbs.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn mul(&self, rhs: &Fe8) -> Fe8 {
        self.mul_l(rhs).carry()
    }

    /// `self²`, carried to tight limbs.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn sqr(&self) -> Fe8 {
        self.sqr_l().carry()
    }

    /// `self + rhs` (loose, limbs `< 2^52.01`).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn add(&self, rhs: &Fe8) -> Fe8L {
        self.l().add(&rhs.l())
    }

    /// `self − rhs` (loose, limbs `< 2^61.01`).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn sub(&self, rhs: &Fe8) -> Fe8L {
        self.l().sub(&rhs.l())
    }

    /// `−self`, carried.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn neg(&self) -> Fe8 {
        self.l().neg().carry()
    }

    /// Lane by lane, `b` where `mask` is set, else `a`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn select(mask: __mmask8, a: &Fe8, b: &Fe8) -> Fe8 {
        Fe8(Fe8L::select(mask, &a.l(), &b.l()).0)
    }

    /// Lane by lane, `−self` where `mask` is set, else `self`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn cond_neg(&self, mask: __mmask8) -> Fe8 {
        Fe8::select(mask, self, &self.neg())
    }

    /// Lanes whose value is odd once fully reduced ("negative" in RFC 9496 §4.1).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn is_negative(&self) -> __mmask8 {
        self.l().is_negative()
    }

    /// Lanes whose value is zero mod p.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn is_zero(&self) -> __mmask8 {
        self.l().is_zero()
    }
}

impl Fe8L {
    /// Eight elements from their limbs, lane by lane.
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn from_lanes(lanes: &[Limbs; 8]) -> Fe8L {
        let zero = _mm512_setzero_si512();
        let mut v = [zero; 5];
        for (j, limb) in v.iter_mut().enumerate() {
            let mut t = [0u64; 8];
            for (l, lane) in lanes.iter().enumerate() {
                t[l] = lane[j];
            }
            *limb = load(&t);
        }
        Fe8L(v)
    }

    /// The limbs, lane by lane.
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn lanes(&self) -> [Limbs; 8] {
        let mut out = [[0u64; 5]; 8];
        for j in 0..5 {
            let t = store(self.0[j]);
            for (l, lane) in out.iter_mut().enumerate() {
                lane[j] = t[l];
            }
        }
        out
    }

    /// Limb-wise sum; the caller keeps the limbs below `2^63`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn add(&self, rhs: &Fe8L) -> Fe8L {
        let (a, b) = (&self.0, &rhs.0);
        Fe8L([
            add(a[0], b[0]),
            add(a[1], b[1]),
            add(a[2], b[2]),
            add(a[3], b[3]),
            add(a[4], b[4]),
        ])
    }

    /// `self + 1024p − rhs`; needs `rhs_j ≤ BIAS_j` (`rhs` tight, a product, or the sum of up
    /// to three products), gives limbs `< self_j + 2^61`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn sub(&self, rhs: &Fe8L) -> Fe8L {
        let (a, b) = (&self.0, &rhs.0);
        let mut out = *a;
        for j in 0..5 {
            out[j] = _mm512_sub_epi64(add(a[j], splat(BIAS[j])), b[j]);
        }
        Fe8L(out)
    }

    /// `1024p − self`; the same condition as [`Fe8L::sub`].
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn neg(&self) -> Fe8L {
        let mut out = self.0;
        for j in 0..5 {
            out[j] = _mm512_sub_epi64(splat(BIAS[j]), self.0[j]);
        }
        Fe8L(out)
    }

    /// One parallel carry round to tight limbs: `l_0 < 2^51 + 2^17`, the others
    /// `< 2^51 + 2^12`. Needs limbs `< 2^63`.
    ///
    /// Every limb keeps its low 51 bits and receives the bits above from the limb below; the
    /// bits above limb 4 have weight `2^255 ≡ 19`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn carry(&self) -> Fe8 {
        let m = splat(MASK51);
        let x = &self.0;
        let c = [
            _mm512_srli_epi64::<51>(x[0]),
            _mm512_srli_epi64::<51>(x[1]),
            _mm512_srli_epi64::<51>(x[2]),
            _mm512_srli_epi64::<51>(x[3]),
            _mm512_srli_epi64::<51>(x[4]),
        ];
        // c_4 < 2^12, so 19·c_4 < 2^52 and the low half of the 52-bit product is exact.
        Fe8([
            lo(_mm512_and_si512(x[0], m), c[4], splat(19)),
            add(_mm512_and_si512(x[1], m), c[0]),
            add(_mm512_and_si512(x[2], m), c[1]),
            add(_mm512_and_si512(x[3], m), c[2]),
            add(_mm512_and_si512(x[4], m), c[3]),
        ])
    }

    /// The unique representative in `[0, p)`, as limbs `< 2^51`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn canonical(&self) -> [__m512i; 5] {
        let m = splat(MASK51);
        // After the carry the value v is below 2^255 + 2^222 < 2p, so v mod p is v − q·p
        // with q = ⌊(v + 19)/2^255⌋ ∈ {0, 1}.
        let [mut x0, mut x1, mut x2, mut x3, mut x4] = self.carry().0;
        let mut q = _mm512_srli_epi64::<51>(add(x0, splat(19)));
        q = _mm512_srli_epi64::<51>(add(x1, q));
        q = _mm512_srli_epi64::<51>(add(x2, q));
        q = _mm512_srli_epi64::<51>(add(x3, q));
        q = _mm512_srli_epi64::<51>(add(x4, q));
        // v − q·p = v + 19q − q·2^255: add 19q, ripple the carries, drop bit 255.
        x0 = lo(x0, q, splat(19));
        x1 = add(x1, _mm512_srli_epi64::<51>(x0));
        x0 = _mm512_and_si512(x0, m);
        x2 = add(x2, _mm512_srli_epi64::<51>(x1));
        x1 = _mm512_and_si512(x1, m);
        x3 = add(x3, _mm512_srli_epi64::<51>(x2));
        x2 = _mm512_and_si512(x2, m);
        x4 = add(x4, _mm512_srli_epi64::<51>(x3));
        x3 = _mm512_and_si512(x3, m);
        x4 = _mm512_and_si512(x4, m);
        [x0, x1, x2, x3, x4]
    }

    /// Lanes whose value is odd once fully reduced.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn is_negative(&self) -> __mmask8 {
        let c = self.canonical();
        _mm512_test_epi64_mask(c[0], splat(1))
    }

    /// Lanes whose value is zero mod p.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn is_zero(&self) -> __mmask8 {
        let c = self.canonical();
        let any = _mm512_or_si512(
            _mm512_or_si512(c[0], c[1]),
            _mm512_or_si512(_mm512_or_si512(c[2], c[3]), c[4]),
        );
        _mm512_testn_epi64_mask(any, any)
    }

    /// Lane by lane, `b` where `mask` is set, else `a`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn select(mask: __mmask8, a: &Fe8L, b: &Fe8L) -> Fe8L {
        let mut out = a.0;
        for (o, &bj) in out.iter_mut().zip(b.0.iter()) {
            *o = _mm512_mask_blend_epi64(mask, *o, bj);
        }
        Fe8L(out)
    }
}

/// Lanes where the canonical limbs `a` and `b` are equal.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn limbs_eq(a: &[__m512i; 5], b: &[__m512i; 5]) -> __mmask8 {
    let mut m: __mmask8 = 0xff;
    for j in 0..5 {
        m &= _mm512_cmpeq_epi64_mask(a[j], b[j]);
    }
    m
}

/// Eight 32-byte strings as the limbs of field elements, lane by lane: limbs 0..3 take bits
/// 0..203 and limb 4 bits 204..255, *including* bit 255 (callers mask it or compare with it).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn limbs_from_bytes(bytes: &[[u8; 32]; 8]) -> [__m512i; 5] {
    let mut w = [[0u64; 8]; 4];
    for (l, b) in bytes.iter().enumerate() {
        for (i, word) in w.iter_mut().enumerate() {
            let mut le = [0u8; 8];
            le.copy_from_slice(&b[8 * i..8 * i + 8]);
            word[l] = u64::from_le_bytes(le);
        }
    }
    let [w0, w1, w2, w3] = [load(&w[0]), load(&w[1]), load(&w[2]), load(&w[3])];
    let m = splat(MASK51);
    [
        _mm512_and_si512(w0, m),
        _mm512_and_si512(
            _mm512_or_si512(_mm512_srli_epi64::<51>(w0), _mm512_slli_epi64::<13>(w1)),
            m,
        ),
        _mm512_and_si512(
            _mm512_or_si512(_mm512_srli_epi64::<38>(w1), _mm512_slli_epi64::<26>(w2)),
            m,
        ),
        _mm512_and_si512(
            _mm512_or_si512(_mm512_srli_epi64::<25>(w2), _mm512_slli_epi64::<39>(w3)),
            m,
        ),
        _mm512_srli_epi64::<12>(w3),
    ]
}

/// Eight field elements from 32 bytes each, ignoring bit 255 (as `FieldElement::from_bytes`
/// in dalek, and the MAP of RFC 9496 §4.3.4).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn fe_from_bytes(bytes: &[[u8; 32]; 8]) -> Fe8 {
    let mut l = limbs_from_bytes(bytes);
    l[4] = _mm512_and_si512(l[4], splat(MASK51));
    Fe8(l)
}

/// The canonical 32-byte encodings of eight canonical limb vectors, lane by lane.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn bytes_from_canonical(c: &[__m512i; 5]) -> [[u8; 32]; 8] {
    let w = [
        _mm512_or_si512(c[0], _mm512_slli_epi64::<51>(c[1])),
        _mm512_or_si512(_mm512_srli_epi64::<13>(c[1]), _mm512_slli_epi64::<38>(c[2])),
        _mm512_or_si512(_mm512_srli_epi64::<26>(c[2]), _mm512_slli_epi64::<25>(c[3])),
        _mm512_or_si512(_mm512_srli_epi64::<39>(c[3]), _mm512_slli_epi64::<12>(c[4])),
    ];
    let w = [store(w[0]), store(w[1]), store(w[2]), store(w[3])];
    let mut out = [[0u8; 32]; 8];
    for (l, o) in out.iter_mut().enumerate() {
        for (i, word) in w.iter().enumerate() {
            o[8 * i..8 * i + 8].copy_from_slice(&word[l].to_le_bytes());
        }
    }
    out
}

/// `(x^(2^250 − 1), x^11)` for each element of `x` (the chain of dalek's `pow22501`); the
/// `N` independent chains are interleaved so their latencies overlap.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn pow22501<const N: usize>(x: &[Fe8; N]) -> ([Fe8; N], [Fe8; N]) {
    let t0 = sqr_n_all(x, 1); //                 1
    let t1 = sqr_n_all(&t0, 2); //               3
    let t2 = mul_all(x, &t1); //                 3,0
    let t3 = mul_all(&t0, &t2); //               3,1,0
    let t4 = sqr_n_all(&t3, 1); //               4,2,1
    let t5 = mul_all(&t2, &t4); //               4..0
    let t6 = sqr_n_all(&t5, 5); //               9..5
    let t7 = mul_all(&t6, &t5); //               9..0
    let t8 = sqr_n_all(&t7, 10); //              19..10
    let t9 = mul_all(&t8, &t7); //               19..0
    let t10 = sqr_n_all(&t9, 20); //             39..20
    let t11 = mul_all(&t10, &t9); //             39..0
    let t12 = sqr_n_all(&t11, 10); //            49..10
    let t13 = mul_all(&t12, &t7); //             49..0
    let t14 = sqr_n_all(&t13, 50); //            99..50
    let t15 = mul_all(&t14, &t13); //            99..0
    let t16 = sqr_n_all(&t15, 100); //           199..100
    let t17 = mul_all(&t16, &t15); //            199..0
    let t18 = sqr_n_all(&t17, 50); //            249..50
    let t19 = mul_all(&t18, &t13); //            249..0
    (t19, t3)
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn sqr_n_all<const N: usize>(x: &[Fe8; N], n: u32) -> [Fe8; N] {
    let mut y = *x;
    for _ in 0..n {
        for e in y.iter_mut() {
            *e = e.sqr();
        }
    }
    y
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn mul_all<const N: usize>(x: &[Fe8; N], y: &[Fe8; N]) -> [Fe8; N] {
    let mut z = *x;
    for (e, f) in z.iter_mut().zip(y.iter()) {
        *e = e.mul(f);
    }
    z
}

/// `x^(p−2) = 1/x` (0 for 0).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn invert(x: &Fe8) -> Fe8 {
    let ([t19], [t3]) = pow22501(&[*x]);
    sqr_n_all(&[t19], 5)[0].mul(&t3)
}

/// `x^((p−5)/8) = x^(2^252 − 3)`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn pow_p58<const N: usize>(x: &[Fe8; N]) -> [Fe8; N] {
    let (t19, _) = pow22501(x);
    let t20 = sqr_n_all(&t19, 2);
    mul_all(x, &t20)
}

/// `sqrt_ratio_i(u, v)` of RFC 9496 §4.2 (dalek's `FieldElement::sqrt_ratio_i`), lane by lane:
/// the mask of lanes where `u/v` was a nonzero square or `u = 0`, and the nonnegative root of
/// `u/v` there, of `i·u/v` where it was a nonsquare, and 0 where `v = 0`.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn sqrt_ratio_i<const N: usize>(
    u: &[Fe8; N],
    v: &[Fe8; N],
) -> ([__mmask8; N], [Fe8; N]) {
    let sqrt_m1 = Fe8::splat(&consts::SQRT_M1);
    let mut v3 = *v;
    let mut uv7 = *v;
    for i in 0..N {
        v3[i] = v[i].sqr().mul(&v[i]);
        uv7[i] = v3[i].sqr().mul(&v[i]).mul(&u[i]);
    }
    let p = pow_p58(&uv7);
    let mut r = p;
    let mut ok = [0 as __mmask8; N];
    for i in 0..N {
        r[i] = u[i].mul(&v3[i]).mul(&p[i]);
        let check = v[i].mul_l(&r[i].sqr());
        let u_l = u[i].l();
        let correct_sign = check.sub(&u_l).is_zero();
        let flipped_sign = check.add(&u_l).is_zero();
        let flipped_sign_i = check.add(&u[i].mul_l(&sqrt_m1)).is_zero();
        let r_prime = r[i].mul(&sqrt_m1);
        r[i] = Fe8::select(flipped_sign | flipped_sign_i, &r[i], &r_prime);
        let neg = r[i].is_negative();
        r[i] = r[i].cond_neg(neg);
        ok[i] = correct_sign | flipped_sign;
    }
    (ok, r)
}
