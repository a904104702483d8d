//! Eight points of the twisted Edwards curve −x² + y² = 1 + d·x²·y² at once, and the
//! multiplication of all eight by one shared scalar.
//!
//! Formulas of Hisil, Wong, Carter and Dawson (2008) as in dalek's serial `curve_models`:
//! doubling "dbl-2008-hwcd" from projective coordinates and addition "add-2008-hwcd-3" of an
//! extended point and a cached point `(Y+X, Y−X, Z, 2d·T)`, both into the completed
//! ("P1×P1") model `((X:Z), (Y:T))`.

use core::arch::x86_64::__mmask8;

use super::field::{Fe8, Fe8L, consts};

/// Extended coordinates `(X:Y:Z:T)`, `x = X/Z`, `y = Y/Z`, `x·y = T/Z`; tight.
#[derive(Clone, Copy)]
pub(super) struct Ext8 {
    pub(super) x: Fe8,
    pub(super) y: Fe8,
    pub(super) z: Fe8,
    pub(super) t: Fe8,
}

/// Projective coordinates `(X:Y:Z)`; tight.
#[derive(Clone, Copy)]
struct Proj8 {
    x: Fe8,
    y: Fe8,
    z: Fe8,
}

/// Completed coordinates `((X:Z), (Y:T))`, `x = X/Z`, `y = Y/T`; loose (each limb below
/// `2^62`: at most three products plus one subtraction bias).
#[derive(Clone, Copy)]
pub(super) struct Completed8 {
    pub(super) x: Fe8L,
    pub(super) y: Fe8L,
    pub(super) z: Fe8L,
    pub(super) t: Fe8L,
}

/// Cached coordinates `(Y+X, Y−X, Z, 2d·T)` of an extended point; tight.
#[derive(Clone, Copy)]
pub(super) struct Cached8 {
    ypx: Fe8,
    ymx: Fe8,
    z: Fe8,
    t2d: Fe8,
}

/// An extended point as the first operand of an addition: `(Y+X, Y−X, Z, T)`; tight.
#[derive(Clone, Copy)]
struct ExtAdd8 {
    ypx: Fe8,
    ymx: Fe8,
    z: Fe8,
    t: Fe8,
}

impl Completed8 {
    /// `(X·T : Y·Z : Z·T)`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    fn to_proj(self) -> Proj8 {
        let (x, y, z, t) = (
            self.x.carry(),
            self.y.carry(),
            self.z.carry(),
            self.t.carry(),
        );
        Proj8 {
            x: x.mul(&t),
            y: y.mul(&z),
            z: z.mul(&t),
        }
    }

    /// The extended point `(X·T : Y·Z : Z·T : X·Y)` as the first operand of an addition:
    /// `Y·Z ± X·T` are formed from the unreduced products, one carry each.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    fn to_ext_add(self) -> ExtAdd8 {
        let (x, y, z, t) = (
            self.x.carry(),
            self.y.carry(),
            self.z.carry(),
            self.t.carry(),
        );
        let xt = x.mul_l(&t);
        let yz = y.mul_l(&z);
        ExtAdd8 {
            ypx: yz.add(&xt).carry(),
            ymx: yz.sub(&xt).carry(),
            z: z.mul(&t),
            t: x.mul(&y),
        }
    }

    /// `(X·T : Y·Z : Z·T : X·Y)`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn to_ext(self) -> Ext8 {
        let (x, y, z, t) = (
            self.x.carry(),
            self.y.carry(),
            self.z.carry(),
            self.t.carry(),
        );
        Ext8 {
            x: x.mul(&t),
            y: y.mul(&z),
            z: z.mul(&t),
            t: x.mul(&y),
        }
    }
}

impl Proj8 {
    /// `2·self` (dbl-2008-hwcd with a = −1, dalek's `ProjectivePoint::double`).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    fn double(&self) -> Completed8 {
        let xx = self.x.sqr_l();
        let yy = self.y.sqr_l();
        let zz = self.z.sqr_l();
        let xpy2 = self.x.add(&self.y).carry().sqr_l();
        let yy_plus_xx = yy.add(&xx);
        Completed8 {
            // (X+Y)² − (Y² + X²) = 2XY
            x: xpy2.sub(&yy_plus_xx),
            y: yy_plus_xx,
            z: yy.sub(&xx),
            // 2Z² − (Y² − X²), written so the subtrahend is one product
            t: zz.add(&zz).add(&xx).sub(&yy),
        }
    }
}

impl Ext8 {
    /// The identity `(0 : 1 : 1 : 0)`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn identity() -> Ext8 {
        let zero = Fe8::splat(&[0; 5]);
        let one = Fe8::splat(&consts::ONE);
        Ext8 {
            x: zero,
            y: one,
            z: one,
            t: zero,
        }
    }

    /// The cached form `(Y+X, Y−X, Z, 2d·T)`.
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn cached(&self) -> Cached8 {
        Cached8 {
            ypx: self.y.add(&self.x).carry(),
            ymx: self.y.sub(&self.x).carry(),
            z: self.z,
            t2d: self.t.mul(&Fe8::splat(&consts::EDWARDS_D2)),
        }
    }

    /// `self + q` if `neg` is 0, `self − q` if `neg` is all ones (the same for every lane).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    pub(super) fn add_cached(&self, q: &Cached8, neg: __mmask8) -> Completed8 {
        ExtAdd8 {
            ypx: self.y.add(&self.x).carry(),
            ymx: self.y.sub(&self.x).carry(),
            z: self.z,
            t: self.t,
        }
        .add_cached(q, neg)
    }
}

impl ExtAdd8 {
    /// add-2008-hwcd-3: `self + q` if `neg` is 0, `self − q` if `neg` is all ones (the same for
    /// every lane).
    #[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
    #[inline]
    fn add_cached(&self, q: &Cached8, neg: __mmask8) -> Completed8 {
        // −(Y+X, Y−X, Z, 2dT) = (Y−X, Y+X, Z, −2dT): swap the first two coordinates before
        // the products and the signs of 2dT·T afterwards.
        let q_ypx = Fe8::select(neg, &q.ypx, &q.ymx);
        let q_ymx = Fe8::select(neg, &q.ymx, &q.ypx);
        let pp = self.ypx.mul_l(&q_ypx);
        let mm = self.ymx.mul_l(&q_ymx);
        let tt2d = self.t.mul_l(&q.t2d);
        let zz = self.z.mul_l(&q.z);
        let zz2 = zz.add(&zz);
        let z_plus = zz2.add(&tt2d);
        let z_minus = zz2.sub(&tt2d);
        Completed8 {
            x: pp.sub(&mm),
            y: pp.add(&mm),
            z: Fe8L::select(neg, &z_plus, &z_minus),
            t: Fe8L::select(neg, &z_minus, &z_plus),
        }
    }
}

/// `k·P` for the eight points of `p`, with `k = Σ digits_i·16^i`.
///
/// A table of `1P..8P` per lane in cached form; then from the top digit down, four doublings
/// and the addition of `±|d_i|·P`, selected by scanning the whole table with blend masks
/// (every lane uses the same index, and which one never shows in the memory accesses or
/// branches) and negated with blends. (Interleaving two groups step by step measured slower:
/// the extra register pressure costs more than the latency it hides.)
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
pub(super) fn mul_by_digits(p: &Ext8, digits: &[i8; 64]) -> Ext8 {
    let mut table = [p.cached(); 8];
    let mut acc = *p;
    for j in 1..8 {
        acc = acc.add_cached(&table[0], 0).to_ext();
        table[j] = acc.cached();
    }

    let (masks, neg) = select_masks(digits[63]);
    let mut c = Ext8::identity().add_cached(&select(&table, &masks), neg);
    for &d in digits[..63].iter().rev() {
        // One call site per step, so that the compiler inlines them into this loop.
        for _ in 0..4 {
            c = c.to_proj().double();
        }
        let (masks, neg) = select_masks(d);
        c = c.to_ext_add().add_cached(&select(&table, &masks), neg);
    }
    c.to_ext()
}

/// For a digit `d ∈ [−8, 8]`: the masks that pick table entry `j` (all ones exactly when
/// `|d| = j + 1`) and the negation mask (all ones if `d < 0`), computed without branches and
/// hidden from the optimiser so that the blends that use them stay blends.
#[inline]
fn select_masks(d: i8) -> ([__mmask8; 8], __mmask8) {
    let m = (d >> 7) as u8; // all ones if d < 0
    let abs = ((d as u8) ^ m).wrapping_sub(m);
    let mut masks = [0; 8];
    for (j, mask) in masks.iter_mut().enumerate() {
        // x = 0 exactly when abs = j + 1; (x | −x) has its top bit set exactly when x ≠ 0.
        let x = abs ^ (j as u8 + 1);
        let eq = (((x | x.wrapping_neg()) >> 7) ^ 1).wrapping_neg();
        *mask = core::hint::black_box(eq);
    }
    (masks, core::hint::black_box(m))
}

/// The table entry the masks pick (the identity when none does), by a constant-time scan.
#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
#[inline]
fn select(table: &[Cached8; 8], masks: &[__mmask8; 8]) -> Cached8 {
    let zero = Fe8::splat(&[0; 5]);
    let one = Fe8::splat(&consts::ONE);
    let mut out = Cached8 {
        ypx: one,
        ymx: one,
        z: one,
        t2d: zero,
    };
    for (entry, &mask) in table.iter().zip(masks.iter()) {
        out.ypx = Fe8::select(mask, &out.ypx, &entry.ypx);
        out.ymx = Fe8::select(mask, &out.ymx, &entry.ymx);
        out.z = Fe8::select(mask, &out.z, &entry.z);
        out.t2d = Fe8::select(mask, &out.t2d, &entry.t2d);
    }
    out
}
