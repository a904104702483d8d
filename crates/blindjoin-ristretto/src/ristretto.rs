//! The Ristretto255 maps of RFC 9496 §4.3 on eight points at once: DECODE (§4.3.1), ENCODE
//! (§4.3.2) and the Elligator MAP (§4.3.4), following dalek's `ristretto.rs` step by step so
//! the encodings are bit-identical; ENCODE of doubled points in batches as dalek's
//! `double_and_compress_batch`.

use core::arch::x86_64::__mmask8;

use super::edwards::{Completed8, Ext8};
use super::field::{
    Fe8, bytes_from_canonical, consts, fe_from_bytes, invert, limbs_eq, limbs_from_bytes,
    sqrt_ratio_i,
};

/// The Elligator MAP of each element of `r0` (dalek's `elligator_ristretto_flavor`); the `N`
/// maps run interleaved.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn elligator<const N: usize>(r0: &[Fe8; N]) -> [Ext8; N] {
    let one = Fe8::splat(&consts::ONE);
    let minus_one = Fe8::splat(&consts::MINUS_ONE);
    let d = Fe8::splat(&consts::EDWARDS_D);
    let sqrt_m1 = Fe8::splat(&consts::SQRT_M1);

    let mut r = *r0;
    let mut n_s = *r0;
    let mut den = *r0;
    for i in 0..N {
        r[i] = sqrt_m1.mul(&r0[i].sqr());
        n_s[i] = r[i]
            .add(&one)
            .carry()
            .mul(&Fe8::splat(&consts::ONE_MINUS_EDWARDS_D_SQUARED));
        // D = (−1 − d·r)·(r + d)
        let c_minus_dr = minus_one.l().sub(&d.mul_l(&r[i])).carry();
        den[i] = c_minus_dr.mul(&r[i].add(&d).carry());
    }

    let (was_square, mut s) = sqrt_ratio_i(&n_s, &den);

    let mut out = [Ext8::identity(); N];
    for i in 0..N {
        let s_prime = s[i].mul(&r0[i]);
        let s_prime_is_pos = !s_prime.is_negative();
        let s_prime = s_prime.cond_neg(s_prime_is_pos);
        let not_sq = !was_square[i];
        s[i] = Fe8::select(not_sq, &s[i], &s_prime);
        let c = Fe8::select(not_sq, &minus_one, &r[i]);

        // N_t = c·(r − 1)·(d − 1)² − D
        let n_t = c
            .mul(&r[i].sub(&one).carry())
            .mul_l(&Fe8::splat(&consts::EDWARDS_D_MINUS_ONE_SQUARED))
            .sub(&den[i].l());
        let s_sq = s[i].sqr_l();
        out[i] = Completed8 {
            x: s[i].add(&s[i]).carry().mul_l(&den[i]),
            z: n_t.carry().mul_l(&Fe8::splat(&consts::SQRT_AD_MINUS_ONE)),
            y: one.l().sub(&s_sq),
            t: one.l().add(&s_sq),
        }
        .to_ext();
    }
    out
}

/// DECODE of `N` groups of eight 32-byte strings (their inverse square roots interleaved):
/// the points, and the mask of lanes whose string was a valid encoding (canonical, nonnegative
/// s, and the checks of dalek's `decompress::step_2`). Invalid lanes hold an unspecified point.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
pub(super) fn decode<const N: usize>(bytes: &[[[u8; 32]; 8]; N]) -> ([Ext8; N], [__mmask8; N]) {
    let one = Fe8::splat(&consts::ONE);
    let mut s = [one; N];
    let mut valid = [0 as __mmask8; N];
    let mut u1 = [one; N];
    let mut u2 = [one; N];
    let mut v = [one; N];
    let mut v_u2_sqr = [one; N];
    for g in 0..N {
        let raw = limbs_from_bytes(&bytes[g]);
        s[g] = fe_from_bytes(&bytes[g]);
        // Canonical: re-encoding s (which drops bit 255 and reduces mod p) gives the input
        // back. Nonnegative: s is even.
        let canonical = limbs_eq(&s[g].l().canonical(), &raw);
        valid[g] = canonical & !s[g].is_negative();

        let ss = s[g].sqr_l();
        u1[g] = one.l().sub(&ss).carry(); // 1 + a·s²
        u2[g] = one.l().add(&ss).carry(); // 1 − a·s²
        let u2_sqr = u2[g].sqr();
        // v = a·d·u1² − u2² = −d·u1² − u2²
        v[g] = Fe8::splat(&consts::EDWARDS_D)
            .mul_l(&u1[g].sqr())
            .neg()
            .sub(&u2_sqr.l())
            .carry();
        v_u2_sqr[g] = v[g].mul(&u2_sqr);
    }
    let (ok, inv) = sqrt_ratio_i(&[one; N], &v_u2_sqr);
    let mut out = [Ext8::identity(); N];
    for g in 0..N {
        let dx = inv[g].mul(&u2[g]);
        let dy = inv[g].mul(&dx.mul(&v[g]));
        let x = s[g].add(&s[g]).carry().mul(&dx);
        let x = x.cond_neg(x.is_negative());
        let y = u1[g].mul(&dy);
        let t = x.mul(&y);
        valid[g] &= ok[g] & !t.is_negative() & !y.is_zero();
        out[g] = Ext8 { x, y, z: one, t };
    }
    (out, valid)
}

/// ENCODE of eight points (dalek's `RistrettoPoint::compress`), with an inverse square root
/// per point; the batch path uses [`DoubleCompress8`] instead, this one checks it in the tests.
#[cfg(test)]
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
pub(super) fn encode(p: &Ext8) -> [[u8; 32]; 8] {
    let Ext8 { x, y, z, t } = *p;
    let sqrt_m1 = Fe8::splat(&consts::SQRT_M1);

    let u1 = z.add(&y).carry().mul(&z.sub(&y).carry());
    let u2 = x.mul(&y);
    // Always a square: the validity mask is not needed.
    let (_, invsqrt) = sqrt_ratio_i(&[Fe8::splat(&consts::ONE)], &[u1.mul(&u2.sqr())]);
    let invsqrt = invsqrt[0];
    let i1 = invsqrt.mul(&u1);
    let i2 = invsqrt.mul(&u2);
    let z_inv = i1.mul(&i2.mul(&t));
    let ix = x.mul(&sqrt_m1);
    let iy = y.mul(&sqrt_m1);
    let enchanted_denominator = i1.mul(&Fe8::splat(&consts::INVSQRT_A_MINUS_D));

    let rotate = t.mul(&z_inv).is_negative();
    let x = Fe8::select(rotate, &x, &iy);
    let y = Fe8::select(rotate, &y, &ix);
    let den_inv = Fe8::select(rotate, &i2, &enchanted_denominator);

    let y = y.cond_neg(x.mul(&z_inv).is_negative());
    let s = den_inv.mul(&z.sub(&y).carry());
    let s = s.cond_neg(s.is_negative());
    bytes_from_canonical(&s.l().canonical())
}

/// ENCODE of `2·P` for eight points P without an inverse square root per point: dalek's
/// `RistrettoPoint::double_and_compress_batch`, whose only inversion is shared by a whole
/// batch ([`double_and_compress`]).
#[derive(Clone, Copy)]
pub(super) struct DoubleCompress8 {
    e: Fe8,
    f: Fe8,
    g: Fe8,
    h: Fe8,
    eg: Fe8,
    fh: Fe8,
    efgh: Fe8,
}

impl DoubleCompress8 {
    /// The state of dalek's `BatchCompressState::from(P)`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn new(p: &Ext8) -> DoubleCompress8 {
        let xx = p.x.sqr_l();
        let yy = p.y.sqr_l();
        let zz = p.z.sqr_l();
        let dtt = p.t.sqr().mul_l(&Fe8::splat(&consts::EDWARDS_D));
        let e = p.x.mul(&p.y.add(&p.y).carry()); // 2XY
        let f = zz.add(&dtt).carry(); // Z² + dT²
        let g = yy.add(&xx).carry(); // Y² − aX²
        let h = zz.sub(&dtt).carry(); // Z² − dT²
        let eg = e.mul(&g);
        let fh = f.mul(&h);
        DoubleCompress8 {
            e,
            f,
            g,
            h,
            eg,
            fh,
            efgh: eg.mul(&fh),
        }
    }

    /// The encodings of `2·P`, given `inv = 1/(e·f·g·h)` (0 where that product is 0).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    fn finish(&self, inv: &Fe8) -> [[u8; 32]; 8] {
        let sqrt_m1 = Fe8::splat(&consts::SQRT_M1);
        let z_inv = self.eg.mul(inv);
        let t_inv = self.fh.mul(inv);
        let negcheck1 = self.eg.mul(&z_inv).is_negative();
        let e = Fe8::select(negcheck1, &self.e, &self.g);
        let g = Fe8::select(negcheck1, &self.g, &self.e.neg());
        let h = Fe8::select(negcheck1, &self.h, &self.f.mul(&sqrt_m1));
        let magic = Fe8::select(negcheck1, &Fe8::splat(&consts::INVSQRT_A_MINUS_D), &sqrt_m1);
        let negcheck2 = h.mul(&e).mul(&z_inv).is_negative();
        let g = g.cond_neg(negcheck2);
        let s = h.sub(&g).carry().mul(&magic.mul(&g.mul(&t_inv)));
        let s = s.cond_neg(s.is_negative());
        bytes_from_canonical(&s.l().canonical())
    }
}

/// The encodings of `2·P` for the groups of `states` (at most [`MAX_BATCH`]; `out` needs as
/// many entries), in order, with one inversion for all of them (Montgomery's trick lane by
/// lane; lanes whose product is 0 are skipped and keep 0 as their "inverse", as in dalek's
/// `invert_batch`).
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
pub(super) fn double_and_compress(states: &[DoubleCompress8], out: &mut [[[u8; 32]; 8]]) {
    let one = Fe8::splat(&consts::ONE);
    let zero = Fe8::splat(&[0; 5]);
    let mut acc = one;
    let mut prefix = [one; MAX_BATCH];
    let mut nonzero = [0 as __mmask8; MAX_BATCH];
    let n = states.len().min(MAX_BATCH).min(out.len());
    for i in 0..n {
        prefix[i] = acc;
        nonzero[i] = !states[i].efgh.is_zero();
        acc = Fe8::select(nonzero[i], &acc, &acc.mul(&states[i].efgh));
    }
    acc = invert(&acc);
    for i in (0..n).rev() {
        let inv = Fe8::select(nonzero[i], &zero, &acc.mul(&prefix[i]));
        acc = Fe8::select(nonzero[i], &acc, &acc.mul(&states[i].efgh));
        out[i] = states[i].finish(&inv);
    }
}

/// The most groups [`double_and_compress`] takes at once.
pub(super) const MAX_BATCH: usize = 16;
