//! Eight P-256 points in homogeneous projective coordinates `(X : Y : Z)` (`x = X/Z`,
//! `y = Y/Z`, the identity `(0 : 1 : 0)`), with the complete formulas of Renes, Costello and
//! Batina 2016 for a = −3, the SSWU map of RFC 9380 and SEC1 decoding.

use core::arch::x86_64::__mmask8;
use std::hint::black_box;

use super::field::{
    Fe, add, below_p, consts, eq, from_mont, invert, is_odd_plain, is_zero, mul, neg, pow_c1,
    pow_sqrt, select, splat, sqr, sub, to_mont, zero,
};

/// Eight points, one per lane.
#[derive(Clone, Copy)]
pub(crate) struct P8 {
    pub(crate) x: Fe,
    pub(crate) y: Fe,
    pub(crate) z: Fe,
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn dbl_fe(a: &Fe) -> Fe {
    add(a, a)
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn triple(a: &Fe) -> Fe {
    add(&add(a, a), a)
}

impl P8 {
    /// The identity in every lane.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(crate) fn identity() -> P8 {
        P8 {
            x: zero(),
            y: splat(&consts::ONE),
            z: zero(),
        }
    }

    /// Lane by lane, `b` where `mask` is set, else `a`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(crate) fn select(mask: __mmask8, a: &P8, b: &P8) -> P8 {
        P8 {
            x: select(mask, &a.x, &b.x),
            y: select(mask, &a.y, &b.y),
            z: select(mask, &a.z, &b.z),
        }
    }

    /// `self + rhs`: RCB16 Algorithm 4 (a = −3), step by step as RustCrypto's `primeorder`
    /// (`EquationAIsMinusThree::add_assign`). Complete: no exceptional inputs.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(crate) fn add(&self, rhs: &P8) -> P8 {
        let b = splat(&consts::B);
        let xx = mul(&self.x, &rhs.x);
        let yy = mul(&self.y, &rhs.y);
        let zz = mul(&self.z, &rhs.z);
        let xy_pairs = sub(
            &mul(&add(&self.x, &self.y), &add(&rhs.x, &rhs.y)),
            &add(&xx, &yy),
        );
        let yz_pairs = sub(
            &mul(&add(&self.y, &self.z), &add(&rhs.y, &rhs.z)),
            &add(&yy, &zz),
        );
        let xz_pairs = sub(
            &mul(&add(&self.x, &self.z), &add(&rhs.x, &rhs.z)),
            &add(&xx, &zz),
        );
        let bzz_part = sub(&xz_pairs, &mul(&b, &zz));
        let bzz3_part = triple(&bzz_part);
        let yy_m_bzz3 = sub(&yy, &bzz3_part);
        let yy_p_bzz3 = add(&yy, &bzz3_part);
        let zz3 = triple(&zz);
        let bxz_part = sub(&mul(&b, &xz_pairs), &add(&zz3, &xx));
        let bxz3_part = triple(&bxz_part);
        let xx3_m_zz3 = sub(&triple(&xx), &zz3);
        P8 {
            x: sub(&mul(&yy_p_bzz3, &xy_pairs), &mul(&yz_pairs, &bxz3_part)),
            y: add(&mul(&yy_p_bzz3, &yy_m_bzz3), &mul(&xx3_m_zz3, &bxz3_part)),
            z: add(&mul(&yy_m_bzz3, &yz_pairs), &mul(&xy_pairs, &xx3_m_zz3)),
        }
    }

    /// `2·self`: RCB16 Algorithm 6 (a = −3), step by step as `primeorder`'s
    /// `EquationAIsMinusThree::double_in_place`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(crate) fn double(&self) -> P8 {
        let b = splat(&consts::B);
        let xx = sqr(&self.x);
        let yy = sqr(&self.y);
        let zz = sqr(&self.z);
        let xy2 = dbl_fe(&mul(&self.x, &self.y));
        let xz2 = dbl_fe(&mul(&self.x, &self.z));
        let bzz_part = sub(&mul(&b, &zz), &xz2);
        let bzz3_part = triple(&bzz_part);
        let yy_m_bzz3 = sub(&yy, &bzz3_part);
        let yy_p_bzz3 = add(&yy, &bzz3_part);
        let y_frag = mul(&yy_p_bzz3, &yy_m_bzz3);
        let x_frag = mul(&yy_m_bzz3, &xy2);
        let zz3 = triple(&zz);
        let bxz2_part = sub(&mul(&b, &xz2), &add(&zz3, &xx));
        let bxz6_part = triple(&bxz2_part);
        let xx3_m_zz3 = sub(&triple(&xx), &zz3);
        let y = add(&y_frag, &mul(&xx3_m_zz3, &bxz6_part));
        let yz2 = dbl_fe(&mul(&self.y, &self.z));
        let x = sub(&x_frag, &mul(&bxz6_part, &yz2));
        let z = dbl_fe(&dbl_fe(&mul(&yz2, &yy)));
        P8 { x, y, z }
    }

    /// `−self` where `mask` is set.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    fn cond_neg(&self, mask: __mmask8) -> P8 {
        P8 {
            x: self.x,
            y: select(mask, &self.y, &neg(&self.y)),
            z: self.z,
        }
    }
}

/// An all-lanes mask from a condition on public-shape data, computed without a branch:
/// `0xff` when `a == b`, else 0 (for small non-negative `a`, `b`).
#[inline]
fn mask_eq(a: u32, b: u32) -> __mmask8 {
    let d = a ^ b;
    // d == 0 exactly when d − 1 borrows into bit 31 (d < 2^31).
    let is_zero = (d.wrapping_sub(1) >> 31) & 1;
    black_box((is_zero as u8).wrapping_neg())
}

/// `k·P` lane by lane, with `digits` the signed radix-16 digits `d_0..d_64 ∈ [−8, 8]` of k
/// (`k = Σ d_i·16^i`): a table of 1P..8P per lane, then from the top digit down four doublings
/// and one addition of `±|d_i|·P`. Every table entry is read for every digit (selection by
/// masks), and the sign is applied by mask.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline(never)]
pub(crate) fn mul_by_digits(p: &P8, digits: &[i8; 65]) -> P8 {
    let mut table = [*p; 8];
    table[1] = p.double();
    for j in 2..8 {
        table[j] = table[j - 1].add(p);
    }
    let lookup = |d: i8| -> P8 {
        let d = i32::from(d);
        // |d| and the sign without branches.
        let sign = (d >> 31) as u32 & 1;
        let abs = ((d ^ -(sign as i32)) + sign as i32) as u32;
        let mut r = P8::identity();
        for (j, entry) in table.iter().enumerate() {
            r = P8::select(mask_eq(abs, j as u32 + 1), &r, entry);
        }
        r.cond_neg(black_box((sign as u8).wrapping_neg()))
    };
    let mut acc = lookup(digits[64]);
    for &d in digits[..64].iter().rev() {
        acc = acc.double().double().double().double();
        acc = acc.add(&lookup(d));
    }
    acc
}

/// The simplified SWU map of RFC 9380 §6.6.2 (straight-line version of App. F.2) for P-256,
/// `u` in Montgomery form and `u_odd` the lanes where the plain u is odd (`sgn0(u)`), as a
/// projective point: the map's affine `(x, y)` is `(X/Z, Y/Z)` with `Z` the denominator of x
/// (`tv4`, never zero), so no inversion is needed here.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn map_to_curve<const N: usize>(u: &[Fe; N], u_odd: &[__mmask8; N]) -> [P8; N] {
    let a = splat(&consts::A);
    let b = splat(&consts::B);
    let z = splat(&consts::Z);
    let one = splat(&consts::ONE);
    let mut tv1s = *u;
    let mut tv3s = *u;
    let mut tv4s = *u;
    let mut tv2s = *u;
    let mut tv6s = *u;
    for i in 0..N {
        let tv1 = mul(&z, &sqr(&u[i])); // 1, 2
        let tv2 = add(&sqr(&tv1), &tv1); // 3, 4
        let tv3 = mul(&b, &add(&tv2, &one)); // 5, 6
        let tv4 = select(is_zero(&tv2), &neg(&tv2), &z); // 7
        let tv4 = mul(&a, &tv4); // 8
        let tv2b = sqr(&tv3); // 9
        let tv6 = sqr(&tv4); // 10
        let tv5 = mul(&a, &tv6); // 11
        let tv2b = mul(&add(&tv2b, &tv5), &tv3); // 12, 13
        let tv6 = mul(&tv6, &tv4); // 14
        let tv5 = mul(&b, &tv6); // 15
        let tv2b = add(&tv2b, &tv5); // 16
        tv1s[i] = tv1;
        tv2s[i] = tv2b;
        tv3s[i] = tv3;
        tv4s[i] = tv4;
        tv6s[i] = tv6;
    }
    let (is_square, y1) = sqrt_ratio(&tv2s, &tv6s); // 18
    let mut out = [P8::identity(); N];
    for i in 0..N {
        let x = mul(&tv1s[i], &tv3s[i]); // 17
        let y = mul(&mul(&tv1s[i], &u[i]), &y1[i]); // 19, 20
        let x = select(is_square[i], &x, &tv3s[i]); // 21
        let y = select(is_square[i], &y, &y1[i]); // 22
        let y_odd = is_odd_plain(&from_mont(&y));
        let y = select(!(u_odd[i] ^ y_odd), &neg(&y), &y); // 23, 24
        // 25: x/tv4, kept projective.
        out[i] = P8 {
            x,
            y: mul(&y, &tv4s[i]),
            z: tv4s[i],
        };
    }
    out
}

/// `sqrt_ratio(u, v)` for p ≡ 3 (mod 4), RFC 9380 App. F.2.1.2: the lanes where `u/v` is a
/// square, and `sqrt(u/v)` there, `sqrt(Z·u/v)` elsewhere.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn sqrt_ratio<const N: usize>(u: &[Fe; N], v: &[Fe; N]) -> ([__mmask8; N], [Fe; N]) {
    let c2 = splat(&consts::C2);
    let mut tv1 = *u;
    let mut tv2 = *u;
    for i in 0..N {
        tv2[i] = mul(&u[i], &v[i]); // 2
        tv1[i] = mul(&sqr(&v[i]), &tv2[i]); // 1, 3
    }
    let y1 = pow_c1(&tv1); // 4
    let mut ok = [0; N];
    let mut y = y1;
    for i in 0..N {
        let y1 = mul(&y1[i], &tv2[i]); // 5
        let y2 = mul(&y1, &c2); // 6
        let tv3 = mul(&sqr(&y1), &v[i]); // 7, 8
        ok[i] = eq(&tv3, &u[i]); // 9
        y[i] = select(ok[i], &y2, &y1); // 10
    }
    (ok, y)
}

/// Decodes eight compressed SEC1 points given as their x (plain limbs, any value below 2^256)
/// and the lanes whose first byte asks for an odd y: the points in Montgomery form, and the
/// lanes where x is below p and x³ − 3x + b is a square (elsewhere the point is meaningless).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn decode<const N: usize>(
    x: &[Fe; N],
    y_odd: &[__mmask8; N],
) -> ([P8; N], [__mmask8; N]) {
    let b = splat(&consts::B);
    let mut xm = *x;
    let mut rhs = *x;
    let mut ok = [0; N];
    for i in 0..N {
        ok[i] = below_p(&x[i]);
        // An x ≥ p lane is refused; reduce it anyway so the arithmetic stays in bounds.
        xm[i] = to_mont(&x[i]);
        let x3 = mul(&sqr(&xm[i]), &xm[i]);
        let three_x = add(&add(&xm[i], &xm[i]), &xm[i]);
        rhs[i] = add(&sub(&x3, &three_x), &b);
    }
    let y = pow_sqrt(&rhs);
    let mut out = [P8::identity(); N];
    for i in 0..N {
        ok[i] &= eq(&sqr(&y[i]), &rhs[i]);
        let odd = is_odd_plain(&from_mont(&y[i]));
        let y = select(odd ^ y_odd[i], &y[i], &neg(&y[i]));
        out[i] = P8 {
            x: xm[i],
            y,
            z: splat(&consts::ONE),
        };
    }
    (out, ok)
}

/// Affine coordinates of up to `MAX_GROUPS` groups with one inversion (Montgomery's trick,
/// lane by lane): for each group the canonical plain x, the lanes where y is odd, and the lanes
/// holding the identity (whose Z = 0 is replaced by 1 for the trick).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(crate) fn to_affine(
    points: &[P8],
    xs: &mut [Fe],
    y_odd: &mut [__mmask8],
    ident: &mut [__mmask8],
) {
    let one = splat(&consts::ONE);
    let n = points.len();
    let mut prefix = Vec::with_capacity(n);
    let mut acc = one;
    let mut zs = Vec::with_capacity(n);
    for (g, p) in points.iter().enumerate() {
        ident[g] = is_zero(&p.z);
        let z = select(ident[g], &p.z, &one);
        prefix.push(acc);
        acc = mul(&acc, &z);
        zs.push(z);
    }
    let mut inv = invert(&acc);
    for g in (0..n).rev() {
        let zi = mul(&inv, &prefix[g]);
        inv = mul(&inv, &zs[g]);
        let p = &points[g];
        xs[g] = from_mont(&mul(&p.x, &zi));
        y_odd[g] = is_odd_plain(&from_mont(&mul(&p.y, &zi)));
    }
}
