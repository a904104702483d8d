//! Tests of the batch engine: the eight-lane field against a plain big-integer reference, and
//! both entry points against dalek, bit for bit.

use super::*;
use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use rand::{Rng, RngCore};

// ----------------------------------------------------------------------------------------------
// Reference arithmetic mod p = 2^255 − 19 on little-endian 64-bit words (slow and obvious).
// ----------------------------------------------------------------------------------------------

type U256 = [u64; 4];

const P: U256 = [
    0xffff_ffff_ffff_ffed,
    u64::MAX,
    u64::MAX,
    0x7fff_ffff_ffff_ffff,
];

/// (p − 5)/8 = 2^252 − 3.
const P58: U256 = [
    0xffff_ffff_ffff_fffd,
    u64::MAX,
    u64::MAX,
    0x0fff_ffff_ffff_ffff,
];

fn geq(a: &U256, b: &U256) -> bool {
    for i in (0..4).rev() {
        if a[i] != b[i] {
            return a[i] > b[i];
        }
    }
    true
}

fn sub_raw(a: &U256, b: &U256) -> U256 {
    let mut out = [0u64; 4];
    let mut borrow = 0u64;
    for i in 0..4 {
        let (d, b1) = a[i].overflowing_sub(b[i]);
        let (d, b2) = d.overflowing_sub(borrow);
        out[i] = d;
        borrow = (b1 | b2) as u64;
    }
    out
}

/// Reduces any number given as little-endian words (at most 2^512) mod p.
fn r_reduce(words: &[u64]) -> U256 {
    let mut w = [0u64; 8];
    w[..words.len()].copy_from_slice(words);
    // lo + 2^256·hi ≡ lo + 38·hi
    let mut t = [0u64; 5];
    let mut carry = 0u128;
    for i in 0..4 {
        let s = w[i] as u128 + 38 * w[i + 4] as u128 + carry;
        t[i] = s as u64;
        carry = s >> 64;
    }
    t[4] = carry as u64;
    // fold bits ≥ 255: 2^255 ≡ 19
    let c = (t[4] << 1) | (t[3] >> 63);
    t[3] &= (1 << 63) - 1;
    let mut carry = 19 * c as u128;
    let mut out = [0u64; 4];
    for i in 0..4 {
        let s = t[i] as u128 + carry;
        out[i] = s as u64;
        carry = s >> 64;
    }
    while geq(&out, &P) {
        out = sub_raw(&out, &P);
    }
    out
}

fn r_add(a: &U256, b: &U256) -> U256 {
    let mut w = [0u64; 5];
    let mut carry = 0u128;
    for i in 0..4 {
        let s = a[i] as u128 + b[i] as u128 + carry;
        w[i] = s as u64;
        carry = s >> 64;
    }
    w[4] = carry as u64;
    r_reduce(&w)
}

fn r_neg(a: &U256) -> U256 {
    r_reduce(&sub_raw(&P, &r_reduce(a)))
}

fn r_sub(a: &U256, b: &U256) -> U256 {
    r_add(a, &r_neg(b))
}

fn r_mul(a: &U256, b: &U256) -> U256 {
    let mut w = [0u128; 9];
    for i in 0..4 {
        let mut carry = 0u128;
        for j in 0..4 {
            let s = w[i + j] + a[i] as u128 * b[j] as u128 + carry;
            w[i + j] = s & u64::MAX as u128;
            carry = s >> 64;
        }
        w[i + 4] += carry;
    }
    let words: Vec<u64> = w[..8].iter().map(|&x| x as u64).collect();
    r_reduce(&words)
}

fn r_pow(a: &U256, e: &U256) -> U256 {
    let mut acc = r_from_u64(1);
    for i in (0..256).rev() {
        acc = r_mul(&acc, &acc);
        if (e[i / 64] >> (i % 64)) & 1 == 1 {
            acc = r_mul(&acc, a);
        }
    }
    acc
}

fn r_from_u64(x: u64) -> U256 {
    [x, 0, 0, 0]
}

fn r_is_negative(a: &U256) -> bool {
    r_reduce(a)[0] & 1 == 1
}

/// dalek's `FieldElement::sqrt_ratio_i`, transcribed with the reference arithmetic.
fn r_sqrt_ratio_i(u: &U256, v: &U256) -> (bool, U256) {
    let i = r_from_limbs(&field::consts::SQRT_M1);
    let v3 = r_mul(&r_mul(v, v), v);
    let v7 = r_mul(&r_mul(&v3, &v3), v);
    let mut r = r_mul(&r_mul(u, &v3), &r_pow(&r_mul(u, &v7), &P58));
    let check = r_mul(v, &r_mul(&r, &r));
    let correct = check == r_reduce(u);
    let flipped = check == r_neg(u);
    let flipped_i = check == r_neg(&r_mul(u, &i));
    if flipped || flipped_i {
        r = r_mul(&r, &i);
    }
    if r_is_negative(&r) {
        r = r_neg(&r);
    }
    (correct || flipped, r)
}

/// The value of radix-2^51 limbs (each below 2^64), mod p.
fn r_from_limbs(l: &[u64; 5]) -> U256 {
    let mut w = [0u64; 8];
    for (j, &limb) in l.iter().enumerate() {
        let shift = 51 * j;
        let v = (limb as u128) << (shift % 64);
        let k = shift / 64;
        let mut carry = 0u128;
        for (t, part) in [v as u64, (v >> 64) as u64, 0].into_iter().enumerate() {
            let s = w[k + t] as u128 + part as u128 + carry;
            w[k + t] = s as u64;
            carry = s >> 64;
        }
    }
    r_reduce(&w)
}

/// Canonical radix-2^51 limbs of a reduced value.
fn r_to_limbs(a: &U256) -> [u64; 5] {
    let m = field::MASK51;
    [
        a[0] & m,
        ((a[0] >> 51) | (a[1] << 13)) & m,
        ((a[1] >> 38) | (a[2] << 26)) & m,
        ((a[2] >> 25) | (a[3] << 39)) & m,
        a[3] >> 12,
    ]
}

fn r_to_bytes(a: &U256) -> [u8; 32] {
    let mut out = [0u8; 32];
    for i in 0..4 {
        out[8 * i..8 * i + 8].copy_from_slice(&a[i].to_le_bytes());
    }
    out
}

fn r_from_bytes(b: &[u8; 32]) -> U256 {
    let mut w = [0u64; 4];
    for (i, word) in w.iter_mut().enumerate() {
        let mut le = [0u8; 8];
        le.copy_from_slice(&b[8 * i..8 * i + 8]);
        *word = u64::from_le_bytes(le);
    }
    w
}

#[test]
fn reference_arithmetic_is_sane() {
    let minus_one = sub_raw(&P, &r_from_u64(1));
    assert_eq!(r_mul(&minus_one, &minus_one), r_from_u64(1));
    assert_eq!(r_add(&minus_one, &r_from_u64(1)), [0; 4]);
    assert_eq!(r_reduce(&P), [0; 4]);
    // Fermat: a^(p−1) = 1
    let a = r_from_u64(123456789);
    assert_eq!(r_pow(&a, &sub_raw(&P, &r_from_u64(1))), r_from_u64(1));
    assert_eq!(r_from_limbs(&r_to_limbs(&minus_one)), minus_one);
}

#[test]
fn constants_satisfy_their_definitions() {
    use field::consts::*;
    let r = |l: &[u64; 5]| {
        for (j, &limb) in l.iter().enumerate() {
            assert!(limb < 1 << 51, "limb {j} of a constant not canonical");
        }
        r_from_limbs(l)
    };
    let one = r_from_u64(1);
    let d = r(&EDWARDS_D);
    assert_eq!(r(&MINUS_ONE), r_neg(&one));
    assert_eq!(r(&ONE), one);
    // d = −121665/121666
    assert_eq!(r_mul(&d, &r_from_u64(121666)), r_neg(&r_from_u64(121665)));
    assert_eq!(r(&EDWARDS_D2), r_add(&d, &d));
    assert_eq!(r(&ONE_MINUS_EDWARDS_D_SQUARED), r_sub(&one, &r_mul(&d, &d)));
    let dm1 = r_sub(&d, &one);
    assert_eq!(r(&EDWARDS_D_MINUS_ONE_SQUARED), r_mul(&dm1, &dm1));
    let sq = r(&SQRT_M1);
    assert_eq!(r_mul(&sq, &sq), r_neg(&one));
    // a·d − 1 = −d − 1 and a − d = −1 − d
    let minus_d_minus_one = r_sub(&r_neg(&d), &one);
    let s = r(&SQRT_AD_MINUS_ONE);
    assert_eq!(r_mul(&s, &s), minus_d_minus_one);
    let inv = r(&INVSQRT_A_MINUS_D);
    assert_eq!(r_mul(&r_mul(&inv, &inv), &minus_d_minus_one), one);
}

// ----------------------------------------------------------------------------------------------
// The eight-lane field against the reference.
// ----------------------------------------------------------------------------------------------

/// The environment variable that turns a skipped IFMA-only test into a failure.
const REQUIRE_IFMA: &str = "BLINDJOIN_REQUIRE_IFMA";

/// Whether a test of the eight-lane engine can run here. On a CPU without the features it
/// fails the test if [`REQUIRE_IFMA`] is set, and otherwise writes
/// `SKIPPED (CPU has no AVX-512 IFMA): <test>` to standard error (through the handle, which
/// libtest does not capture, unlike `eprintln!`) and returns false.
fn ifma_or_skip(test: &str) -> bool {
    ifma_check(
        simd_available(),
        std::env::var_os(REQUIRE_IFMA).is_some(),
        test,
        &mut std::io::stderr(),
    )
}

/// The decision of [`ifma_or_skip`], with the CPU, the environment and the output as inputs.
fn ifma_check(available: bool, required: bool, test: &str, log: &mut impl std::io::Write) -> bool {
    if available {
        return true;
    }
    assert!(
        !required,
        "{REQUIRE_IFMA} is set but this CPU has no AVX-512 IFMA: {test}"
    );
    // A failed write to stderr leaves nothing better to report it to.
    let _ = writeln!(log, "SKIPPED (CPU has no AVX-512 IFMA): {test}");
    false
}

/// The engines a test compares with dalek: the eight-lane one (`true`) when
/// [`ifma_or_skip`] allows it, and the portable one (`false`).
fn engines(test: &str) -> Vec<bool> {
    if ifma_or_skip(&format!("{test} (eight-lane engine)")) {
        vec![true, false]
    } else {
        vec![false]
    }
}

#[test]
fn ifma_check_skips_visibly_or_fails_when_required() {
    let mut log = Vec::new();
    assert!(ifma_check(true, true, "t", &mut log));
    assert!(log.is_empty());
    assert!(!ifma_check(false, false, "some_test", &mut log));
    assert_eq!(
        String::from_utf8(log).ok().as_deref(),
        Some("SKIPPED (CPU has no AVX-512 IFMA): some_test\n")
    );
    let required = std::panic::catch_unwind(|| ifma_check(false, true, "t", &mut Vec::new()));
    assert!(required.is_err());
}

/// Declares a test that runs a target-feature body when the CPU has the features (see
/// [`ifma_or_skip`] for what happens when it does not).
macro_rules! simd_test {
    ($name:ident, $body:ident) => {
        #[test]
        fn $name() {
            if !ifma_or_skip(concat!(module_path!(), "::", stringify!($name))) {
                return;
            }
            // SAFETY: the CPU supports avx512f, avx512ifma, avx512vl and avx512dq (checked above).
            unsafe { $body() }
        }
    };
}

use field::{Fe8, Fe8L, Limbs};

const M51: u64 = (1 << 51) - 1;
/// The tight bound on every limb.
const TIGHT: u64 = (1 << 51) + (1 << 17);
/// The largest tight element: every limb at its bound.
const MAX_TIGHT: Limbs = [TIGHT - 1; 5];

fn p_plus(j: u64) -> Limbs {
    let mut l = r_to_limbs(&P);
    l[0] += j;
    l
}

/// Tight inputs: edge cases first, then random tight limbs and random canonical values.
fn tight_samples(rng: &mut impl RngCore, n: usize) -> Vec<Limbs> {
    let minus_one = sub_raw(&P, &r_from_u64(1));
    let mut v = vec![
        [0; 5],
        [1, 0, 0, 0, 0],
        [2, 0, 0, 0, 0],
        r_to_limbs(&minus_one),
        r_to_limbs(&P),
        p_plus(1),
        p_plus(18),
        // 2^255 − 1
        [M51; 5],
        MAX_TIGHT,
        [TIGHT - 1, 0, TIGHT - 1, 0, TIGHT - 1],
        [0, TIGHT - 1, 0, TIGHT - 1, 0],
        [M51, TIGHT - 1, M51, TIGHT - 1, M51],
        field::consts::SQRT_M1,
        [1 << 51; 5],
        [0, 0, 0, 0, 1],
        [TIGHT - 1, 0, 0, 0, 0],
        [0, 0, 0, 0, TIGHT - 1],
    ];
    while v.len() < n {
        if rng.random::<bool>() {
            let mut l = [0u64; 5];
            for limb in l.iter_mut() {
                *limb = rng.next_u64() % TIGHT;
            }
            v.push(l);
        } else {
            let mut b = [0u8; 32];
            rng.fill_bytes(&mut b);
            v.push(r_to_limbs(&r_reduce(&r_from_bytes(&b))));
        }
    }
    v
}

fn lanes(v: &[Limbs], offset: usize) -> [Limbs; 8] {
    let mut out = [[0u64; 5]; 8];
    for (l, o) in out.iter_mut().enumerate() {
        *o = v[(offset + l) % v.len()];
    }
    out
}

fn assert_tight(x: &[Limbs; 8]) {
    for l in x {
        for (j, &limb) in l.iter().enumerate() {
            assert!(limb < TIGHT, "limb {j} = {limb:#x} not tight");
        }
    }
}

fn assert_below(x: &[Limbs; 8], bound: u64) {
    for l in x {
        for &limb in l {
            assert!(limb < bound, "limb {limb:#x} above {bound:#x}");
        }
    }
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn field_mul_sqr_body() {
    let mut rng = blindjoin_testkit::rng(1);
    let xs = tight_samples(&mut rng, 600);
    for off in 0..xs.len() {
        let a_l = lanes(&xs, off);
        // b runs through the samples at another stride, so edge cases meet each other.
        let b_l = lanes(&xs, off * 7 + 3);
        let (a, b) = (Fe8::from_lanes(&a_l), Fe8::from_lanes(&b_l));
        let prod = a.mul_l(&b).lanes();
        assert_below(&prod, 1 << 59);
        let sq = a.sqr_l().lanes();
        assert_below(&sq, 1 << 59);
        let prod_t = a.mul(&b).l().lanes();
        assert_tight(&prod_t);
        let sq_t = a.sqr().l().lanes();
        assert_tight(&sq_t);
        for l in 0..8 {
            let (ra, rb) = (r_from_limbs(&a_l[l]), r_from_limbs(&b_l[l]));
            assert_eq!(r_from_limbs(&prod[l]), r_mul(&ra, &rb));
            assert_eq!(r_from_limbs(&prod_t[l]), r_mul(&ra, &rb));
            assert_eq!(r_from_limbs(&sq[l]), r_mul(&ra, &ra));
            assert_eq!(r_from_limbs(&sq_t[l]), r_mul(&ra, &ra));
        }
    }
}
simd_test!(field_mul_and_square_match_reference, field_mul_sqr_body);

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn field_add_sub_body() {
    let mut rng = blindjoin_testkit::rng(2);
    let xs = tight_samples(&mut rng, 400);
    // The largest subtrahends allowed: products (< 2^59) and sums of up to three.
    let big: Limbs = [(3 << 59) - 1; 5];
    for off in 0..xs.len() {
        let a_l = lanes(&xs, off);
        let b_l = lanes(&xs, off * 5 + 1);
        let (a, b) = (Fe8::from_lanes(&a_l), Fe8::from_lanes(&b_l));
        let prod = a.mul_l(&b);
        let sum = a.add(&b).carry().l().lanes();
        let diff = a.sub(&b).carry().l().lanes();
        let neg = a.neg().l().lanes();
        // product − (product + product) and its negation, through a carry
        let two = prod.add(&prod);
        let pd = prod.sub(&two).carry().l().lanes();
        let bigl = Fe8L::from_lanes(&[big; 8]);
        let loose = two.add(&bigl).sub(&bigl).sub(&two).carry().l().lanes();
        for x in [&sum, &diff, &neg, &pd, &loose] {
            assert_tight(x);
        }
        for l in 0..8 {
            let (ra, rb) = (r_from_limbs(&a_l[l]), r_from_limbs(&b_l[l]));
            let rp = r_mul(&ra, &rb);
            assert_eq!(r_from_limbs(&sum[l]), r_add(&ra, &rb));
            assert_eq!(r_from_limbs(&diff[l]), r_sub(&ra, &rb));
            assert_eq!(r_from_limbs(&neg[l]), r_neg(&ra));
            assert_eq!(r_from_limbs(&pd[l]), r_neg(&rp));
            assert_eq!(r_from_limbs(&loose[l]), [0; 4]);
        }
    }
}
simd_test!(field_add_sub_neg_match_reference, field_add_sub_body);

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn field_carry_canonical_body() {
    let mut rng = blindjoin_testkit::rng(3);
    let mut inputs: Vec<Limbs> = tight_samples(&mut rng, 200);
    // Loose limbs up to the 2^63 the carry accepts, and every limb at that bound.
    inputs.push([(1 << 63) - 1; 5]);
    inputs.push([0, 0, 0, 0, (1 << 63) - 1]);
    inputs.push([(1 << 63) - 1, 0, 0, 0, 0]);
    for _ in 0..300 {
        let mut l = [0u64; 5];
        for limb in l.iter_mut() {
            *limb = rng.next_u64() >> 1;
        }
        inputs.push(l);
    }
    // Values just below and above multiples of p, where the final reduction decides.
    for j in 0..40u64 {
        let mut l = r_to_limbs(&P);
        l[0] = l[0] + j - 20;
        inputs.push(l);
        let mut l2 = l;
        l2[4] += 1 << 51; // + 2^255 ≡ + 19
        inputs.push(l2);
    }
    for off in (0..inputs.len()).step_by(3) {
        let x_l = lanes(&inputs, off);
        let x = Fe8L::from_lanes(&x_l);
        let c = x.carry().l().lanes();
        assert_tight(&c);
        for l in &c {
            assert!(l[1..].iter().all(|&limb| limb < (1 << 51) + (1 << 12)));
        }
        let canon = Fe8L(x.canonical()).lanes();
        let bytes = field::bytes_from_canonical(&x.canonical());
        let neg = x.is_negative();
        let zero = x.is_zero();
        for l in 0..8 {
            let r = r_from_limbs(&x_l[l]);
            assert_eq!(r_from_limbs(&c[l]), r);
            assert_eq!(canon[l], r_to_limbs(&r), "lane {l} of {:x?}", x_l[l]);
            assert_eq!(bytes[l], r_to_bytes(&r));
            assert_eq!((neg >> l) & 1 == 1, r_is_negative(&r));
            assert_eq!((zero >> l) & 1 == 1, r == [0; 4]);
        }
    }
}
simd_test!(
    field_carry_and_canonical_match_reference,
    field_carry_canonical_body
);

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn field_bytes_body() {
    let mut rng = blindjoin_testkit::rng(4);
    let mut strings: Vec<[u8; 32]> = vec![[0; 32], [0xff; 32], r_to_bytes(&P)];
    let mut top = [0u8; 32];
    top[31] = 0x80;
    strings.push(top);
    while strings.len() < 800 {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        strings.push(b);
    }
    for group in strings.chunks_exact(8) {
        let mut b = [[0u8; 32]; 8];
        b.copy_from_slice(group);
        let fe = field::fe_from_bytes(&b);
        let raw = Fe8L(field::limbs_from_bytes(&b)).lanes();
        let canon = field::bytes_from_canonical(&fe.l().canonical());
        for l in 0..8 {
            let mut masked = b[l];
            masked[31] &= 0x7f;
            let r = r_reduce(&r_from_bytes(&masked));
            assert_eq!(canon[l], r_to_bytes(&r));
            assert_eq!(r_from_limbs(&raw[l]), r_reduce(&r_from_bytes(&b[l])));
        }
    }
}
simd_test!(field_bytes_round_trip, field_bytes_body);

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn field_sqrt_ratio_body() {
    let mut rng = blindjoin_testkit::rng(5);
    let xs = tight_samples(&mut rng, 160);
    // Squares and nonsquares on purpose: u = w²·v, u = i·w²·v.
    let i = r_from_limbs(&field::consts::SQRT_M1);
    let mut pairs: Vec<(Limbs, Limbs)> = Vec::new();
    for (j, x) in xs.iter().enumerate() {
        let y = xs[(j * 3 + 1) % xs.len()];
        let (rx, ry) = (r_from_limbs(x), r_from_limbs(&y));
        pairs.push((*x, y));
        let sq = r_mul(&r_mul(&ry, &ry), &rx);
        pairs.push((r_to_limbs(&sq), *x));
        pairs.push((r_to_limbs(&r_mul(&sq, &i)), *x));
    }
    pairs.push(([0; 5], [0; 5]));
    pairs.push(([1, 0, 0, 0, 0], [0; 5]));
    pairs.push(([0; 5], [1, 0, 0, 0, 0]));
    pairs.push(([1, 0, 0, 0, 0], r_to_limbs(&P)));
    for group in pairs.chunks(16) {
        // Two interleaved chains, as in the Elligator map.
        let mut u = [[[0u64; 5]; 8]; 2];
        let mut v = [[[0u64; 5]; 8]; 2];
        for (k, (uu, vv)) in group.iter().enumerate() {
            u[k / 8][k % 8] = *uu;
            v[k / 8][k % 8] = *vv;
        }
        let (ok, r) = field::sqrt_ratio_i(
            &[Fe8::from_lanes(&u[0]), Fe8::from_lanes(&u[1])],
            &[Fe8::from_lanes(&v[0]), Fe8::from_lanes(&v[1])],
        );
        for h in 0..2 {
            let r_l = r[h].l().lanes();
            assert_tight(&r_l);
            for l in 0..8 {
                let (eok, er) = r_sqrt_ratio_i(&r_from_limbs(&u[h][l]), &r_from_limbs(&v[h][l]));
                assert_eq!((ok[h] >> l) & 1 == 1, eok);
                assert_eq!(r_from_limbs(&r_l[l]), er);
                // And the defining property, independently of the transcription.
                let (ru, rv) = (r_from_limbs(&u[h][l]), r_from_limbs(&v[h][l]));
                assert!(!r_is_negative(&er));
                let vr2 = r_mul(&rv, &r_mul(&er, &er));
                if rv != [0; 4] {
                    assert_eq!(vr2, if eok { ru } else { r_mul(&i, &ru) });
                }
            }
        }
    }
}
simd_test!(field_sqrt_ratio_i_matches_reference, field_sqrt_ratio_body);

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn field_invert_body() {
    let mut rng = blindjoin_testkit::rng(13);
    let xs = tight_samples(&mut rng, 64);
    let p_minus_2 = sub_raw(&P, &r_from_u64(2));
    for off in (0..xs.len()).step_by(8) {
        let a_l = lanes(&xs, off);
        let inv = field::invert(&Fe8::from_lanes(&a_l)).l().lanes();
        assert_tight(&inv);
        for l in 0..8 {
            // a^(p−2): the inverse, and 0 for 0 (edge cases 0 and p are among the samples).
            let expect = r_pow(&r_from_limbs(&a_l[l]), &p_minus_2);
            assert_eq!(r_from_limbs(&inv[l]), expect);
        }
    }
}
simd_test!(field_invert_matches_reference, field_invert_body);

// ----------------------------------------------------------------------------------------------
// Scalar digits and the end-to-end functions against dalek.
// ----------------------------------------------------------------------------------------------

fn random_scalar(rng: &mut impl RngCore) -> Scalar {
    let mut wide = [0u8; 64];
    rng.fill_bytes(&mut wide);
    Scalar::from_bytes_mod_order_wide(&wide)
}

/// 0, 1, 2, ℓ − 1, ℓ − 2, 2^252 and random scalars.
fn scalars(rng: &mut impl RngCore) -> Vec<Scalar> {
    let mut two252 = [0u8; 32];
    two252[31] = 0x10;
    let mut v = vec![
        Scalar::ZERO,
        Scalar::ONE,
        Scalar::from(2u8),
        -Scalar::ONE,
        -Scalar::from(2u8),
        Scalar::from_bytes_mod_order(two252),
        Scalar::from(0x0888_8888_8888_8888u64),
    ];
    for _ in 0..3 {
        v.push(random_scalar(rng));
    }
    v
}

#[test]
fn scalar_digits_recompose() {
    let mut rng = blindjoin_testkit::rng(6);
    let half = Scalar::from_bytes_mod_order(HALF);
    assert_eq!(half + half, Scalar::ONE);
    for k in scalars(&mut rng) {
        assert_eq!(half_digits(&k), scalar_digits(&(k * half)));
        let d = scalar_digits(&k);
        let mut acc = Scalar::ZERO;
        for &di in d.iter().rev() {
            assert!((-8..=8).contains(&di));
            acc *= Scalar::from(16u8);
            let m = Scalar::from(di.unsigned_abs());
            acc += if di < 0 { -m } else { m };
        }
        assert_eq!(acc, k);
    }
}

fn dalek_hash(uniform: &[[u8; 64]], k: &Scalar) -> Vec<u8> {
    uniform
        .iter()
        .flat_map(|u| {
            (RistrettoPoint::from_uniform_bytes(u) * k)
                .compress()
                .to_bytes()
        })
        .collect()
}

fn dalek_reblind(points: &[u8], k: &Scalar) -> Result<Vec<u8>, usize> {
    let mut out = Vec::new();
    for (i, c) in points.chunks(32).enumerate() {
        let p = CompressedRistretto::from_slice(c)
            .ok()
            .and_then(|c| c.decompress())
            .ok_or(i)?;
        out.extend_from_slice((p * k).compress().as_bytes());
    }
    Ok(out)
}

fn uniform_strings(rng: &mut impl RngCore, n: usize) -> Vec<[u8; 64]> {
    let mut v = vec![[0u8; 64], [0xff; 64]];
    // Halves that encode p, p + 1 and 2^255 − 1 (non-canonical field elements), with and
    // without bit 255.
    let mut special = [0u8; 64];
    special[..32].copy_from_slice(&r_to_bytes(&P));
    special[32..].copy_from_slice(&r_to_bytes(&P));
    special[32] += 1;
    v.push(special);
    special[31] |= 0x80;
    v.push(special);
    let mut s = [0u8; 64];
    s[0] = 1;
    s[32] = 1;
    v.push(s);
    while v.len() < n {
        let mut u = [0u8; 64];
        rng.fill_bytes(&mut u);
        v.push(u);
    }
    v.truncate(n);
    v
}

/// Encodings of random points, plus the identity and the basepoint.
fn valid_encodings(rng: &mut impl RngCore, n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&[0u8; 32]);
    v.extend_from_slice(RISTRETTO_BASEPOINT_POINT.compress().as_bytes());
    for u in uniform_strings(rng, n) {
        if v.len() >= n * 32 {
            break;
        }
        v.extend_from_slice(RistrettoPoint::from_uniform_bytes(&u).compress().as_bytes());
    }
    v
}

/// Batch sizes: empty, partial groups, pairs of groups, and around the 128 points (16 groups)
/// that share one inversion.
const SIZES: [usize; 12] = [0, 1, 7, 8, 9, 16, 17, 24, 128, 129, 136, 1000];

#[test]
fn hash_mul_compress_matches_dalek() {
    let engines = engines("hash_mul_compress_matches_dalek");
    let mut rng = blindjoin_testkit::rng(7);
    let ks = scalars(&mut rng);
    let uniform = uniform_strings(&mut rng, 1200);
    for (ki, k) in ks.iter().enumerate() {
        // All sizes for the first scalars, 1200 points for the others.
        let sizes: &[usize] = if ki < 4 { &SIZES } else { &[1200] };
        for &n in sizes {
            let input = &uniform[..n];
            let expect = dalek_hash(input, k);
            for &use_simd in &engines {
                let mut out = vec![0xaa; 3];
                hash_mul_compress_with(input, k, &mut out, use_simd);
                assert_eq!(&out[..3], &[0xaa; 3], "existing output kept");
                assert!(
                    out[3..] == expect[..],
                    "k #{ki}, n = {n}, simd = {use_simd}"
                );
            }
            let mut out = Vec::new();
            hash_mul_compress(input, k, &mut out);
            assert!(out == expect);
        }
    }
}

#[test]
fn decompress_mul_compress_matches_dalek() {
    let engines = engines("decompress_mul_compress_matches_dalek");
    let mut rng = blindjoin_testkit::rng(8);
    let ks = scalars(&mut rng);
    let points = valid_encodings(&mut rng, 1200);
    for (ki, k) in ks.iter().enumerate() {
        let sizes: &[usize] = if ki < 4 { &SIZES } else { &[1200] };
        for &n in sizes {
            let input = &points[..n * 32];
            let expect = dalek_reblind(input, k);
            assert!(expect.is_ok());
            for &use_simd in &engines {
                let mut out = vec![0xaa; 3];
                let r = decompress_mul_compress_with(input, k, &mut out, use_simd);
                assert_eq!(r, Ok(()));
                assert!(
                    Ok(out[3..].to_vec()) == expect,
                    "k #{ki}, n = {n}, simd = {use_simd}"
                );
            }
            let mut out = Vec::new();
            assert_eq!(decompress_mul_compress(input, k, &mut out), Ok(()));
            assert!(Ok(out) == expect);
        }
    }
}

/// Strings that are not valid encodings, of every kind dalek rejects.
fn invalid_encodings(rng: &mut impl RngCore) -> Vec<[u8; 32]> {
    let mut v = Vec::new();
    // s ≥ p: p + j for j = 0..19 (p + 19 = 2^255 is not 32 bytes below 2^255 any more).
    for j in 0..19u64 {
        v.push(r_to_bytes(&[P[0] + j, P[1], P[2], P[3]]));
    }
    // Bit 255 set on valid encodings.
    let valid = valid_encodings(rng, 20);
    for c in valid.chunks_exact(32).skip(1) {
        let mut b = [0u8; 32];
        b.copy_from_slice(c);
        b[31] |= 0x80;
        v.push(b);
        // Negative s (the low bit set, still below p).
        let mut n = [0u8; 32];
        n.copy_from_slice(c);
        n[0] ^= 1;
        v.push(n);
    }
    // Random strings that dalek rejects for the other reasons (not square, t negative, ...).
    let mut other = 0;
    while other < 40 {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        b[31] &= 0x7f;
        b[0] &= 0xfe;
        if CompressedRistretto(b).decompress().is_none() {
            v.push(b);
            other += 1;
        }
    }
    for b in &v {
        assert!(CompressedRistretto(*b).decompress().is_none());
    }
    v
}

#[test]
fn decompress_mul_compress_reports_first_invalid_index() {
    let engines = engines("decompress_mul_compress_reports_first_invalid_index");
    let mut rng = blindjoin_testkit::rng(9);
    let k = random_scalar(&mut rng);
    let n = 260;
    let valid = valid_encodings(&mut rng, n);
    let bad = invalid_encodings(&mut rng);
    let positions = [
        0usize,
        1,
        6,
        7,
        8,
        9,
        15,
        16,
        17,
        39,
        127,
        128,
        135,
        200,
        n - 1,
    ];
    for (bi, b) in bad.iter().enumerate() {
        let pos = positions[bi % positions.len()];
        let mut input = valid.clone();
        input[pos * 32..pos * 32 + 32].copy_from_slice(b);
        // A second invalid string later must not change the answer.
        if pos + 3 < n {
            let later = &bad[(bi + 1) % bad.len()];
            input[(pos + 3) * 32..(pos + 3) * 32 + 32].copy_from_slice(later);
        }
        assert_eq!(dalek_reblind(&input, &k), Err(pos));
        for &use_simd in &engines {
            let mut out = Vec::new();
            let r = decompress_mul_compress_with(&input, &k, &mut out, use_simd);
            assert_eq!(r, Err(pos), "string #{bi} at {pos}, simd = {use_simd}");
        }
    }
    // A trailing partial chunk is invalid, after any invalid full chunk.
    for &use_simd in &engines {
        let mut out = Vec::new();
        let r = decompress_mul_compress_with(&valid[..9 * 32 + 5], &k, &mut out, use_simd);
        assert_eq!(r, Err(9));
        let r = decompress_mul_compress_with(&valid[..130 * 32 + 31], &k, &mut out, use_simd);
        assert_eq!(r, Err(130));
        let mut input = valid[..9 * 32 + 5].to_vec();
        input[32..64].copy_from_slice(&bad[0]);
        let r = decompress_mul_compress_with(&input, &k, &mut out, use_simd);
        assert_eq!(r, Err(1));
    }
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn decode_validity_body() {
    // Random strings (valid about 1/8 of the time once the sign bit is clear), lane by lane
    // against dalek's decompress.
    let mut rng = blindjoin_testkit::rng(10);
    let mut strings: Vec<[u8; 32]> = invalid_encodings(&mut rng);
    let valid = valid_encodings(&mut rng, 64);
    for c in valid.chunks_exact(32) {
        let mut b = [0u8; 32];
        b.copy_from_slice(c);
        strings.push(b);
    }
    for j in 0..4000 {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        if j % 2 == 0 {
            b[31] &= 0x7f;
            b[0] &= 0xfe;
        }
        strings.push(b);
    }
    let mut n_valid = 0;
    for pair in strings.chunks_exact(16) {
        let mut b = [[[0u8; 32]; 8]; 2];
        b[0].copy_from_slice(&pair[..8]);
        b[1].copy_from_slice(&pair[8..]);
        let (p, valid) = ristretto::decode(&b);
        // One group alone goes through the same steps.
        let (p1, valid1) = ristretto::decode(&[b[1]]);
        assert_eq!(valid1[0], valid[1]);
        assert_eq!(ristretto::encode(&p1[0]), ristretto::encode(&p[1]));
        for g in 0..2 {
            let enc = ristretto::encode(&p[g]);
            for l in 0..8 {
                let expect = CompressedRistretto(b[g][l]).decompress();
                assert_eq!((valid[g] >> l) & 1 == 1, expect.is_some(), "{:x?}", b[g][l]);
                if expect.is_some() {
                    // A valid encoding re-encodes to itself.
                    assert_eq!(enc[l], b[g][l]);
                    n_valid += 1;
                }
            }
        }
    }
    assert!(n_valid > 300);
}
simd_test!(decode_validity_matches_dalek, decode_validity_body);

#[test]
fn random_points_many_scalars() {
    // Many short batches with fresh scalars: exercises every digit pattern.
    let mut rng = blindjoin_testkit::rng(11);
    for round in 0..40 {
        let k = random_scalar(&mut rng);
        let n = rng.random_range(1..=24);
        let uniform = uniform_strings(&mut rng, n + 5);
        let uniform = &uniform[5..];
        let mut out = Vec::new();
        hash_mul_compress(uniform, &k, &mut out);
        assert!(out == dalek_hash(uniform, &k), "round {round}");
        let mut out2 = Vec::new();
        assert_eq!(decompress_mul_compress(&out, &k, &mut out2), Ok(()));
        let expect = dalek_reblind(&out, &k);
        assert!(Ok(out2) == expect, "round {round}");
    }
}

#[target_feature(enable = "avx512f,avx512ifma,avx512vl,avx512dq")]
fn double_and_compress_body() {
    // Batches of 1..=MAX_BATCH groups of decoded points, with identity lanes (whose product
    // e·f·g·h is 0) mixed in, against dalek's compress(P + P).
    let mut rng = blindjoin_testkit::rng(12);
    let valid = valid_encodings(&mut rng, 8 * ristretto::MAX_BATCH);
    let mut groups: Vec<[[u8; 32]; 8]> = valid
        .chunks_exact(256)
        .map(|c| {
            let mut g = [[0u8; 32]; 8];
            for (l, e) in g.iter_mut().zip(c.chunks_exact(32)) {
                l.copy_from_slice(e);
            }
            g
        })
        .collect();
    groups[1] = [[0u8; 32]; 8];
    groups[3][5] = [0u8; 32];
    for n in [1, 2, 5, ristretto::MAX_BATCH] {
        let mut states = Vec::new();
        for g in &groups[..n] {
            let ([p], [v]) = ristretto::decode(&[*g]);
            assert_eq!(v, 0xff);
            states.push(ristretto::DoubleCompress8::new(&p));
        }
        let mut enc = [[[0u8; 32]; 8]; ristretto::MAX_BATCH];
        ristretto::double_and_compress(&states, &mut enc);
        for (g, e) in groups[..n].iter().zip(enc.iter()) {
            for l in 0..8 {
                let p = CompressedRistretto(g[l]).decompress();
                let expect = p.map(|p| (p + p).compress().to_bytes());
                assert_eq!(Some(e[l]), expect);
            }
        }
    }
}
simd_test!(double_and_compress_matches_dalek, double_and_compress_body);

/// RFC 9496 Appendix A.1: encodings of B, 2B, .., 15B (and the identity at index 0), as printed
/// in the RFC (the same table as curve25519-dalek's `encodings_of_small_multiples_of_basepoint`).
const RFC9496_MULTIPLES: [&str; 16] = [
    "0000000000000000000000000000000000000000000000000000000000000000",
    "e2f2ae0a6abc4e71a884a961c500515f58e30b6aa582dd8db6a65945e08d2d76",
    "6a493210f7499cd17fecb510ae0cea23a110e8d5b901f8acadd3095c73a3b919",
    "94741f5d5d52755ece4f23f044ee27d5d1ea1e2bd196b462166b16152a9d0259",
    "da80862773358b466ffadfe0b3293ab3d9fd53c5ea6c955358f568322daf6a57",
    "e882b131016b52c1d3337080187cf768423efccbb517bb495ab812c4160ff44e",
    "f64746d3c92b13050ed8d80236a7f0007c3b3f962f5ba793d19a601ebb1df403",
    "44f53520926ec81fbd5a387845beb7df85a96a24ece18738bdcfa6a7822a176d",
    "903293d8f2287ebe10e2374dc1a53e0bc887e592699f02d077d5263cdd55601c",
    "02622ace8f7303a31cafc63f8fc48fdc16e1c8c8d234b2f0d6685282a9076031",
    "20706fd788b2720a1ed2a5dad4952b01f413bcf0e7564de8cdc816689e2db95f",
    "bce83f8ba5dd2fa572864c24ba1810f9522bc6004afe95877ac73241cafdab42",
    "e4549ee16b9aa03099ca208c67adafcafa4c3f3e4e5303de6026e3ca8ff84460",
    "aa52e000df2e16f55fb1032fc33bc42742dad6bd5a8fc0be0167436c5948501f",
    "46376b80f409b29dc2b5f6f0c52591990896e5716f41477cd30085ab7f10301e",
    "e0c418f7c8d9c4cdd7395b93ea124f3ad99021bb681dfc3302a9d99a2e53e64e",
];

#[allow(clippy::panic)]
fn unhex<const N: usize>(s: &str) -> [u8; N] {
    assert_eq!(s.len(), 2 * N, "{s}");
    let mut b = [0u8; N];
    for (i, out) in b.iter_mut().enumerate() {
        *out = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_else(|e| panic!("{e}"));
    }
    b
}

#[test]
fn rfc9496_multiples_of_the_generator_both_engines() {
    let base = unhex::<32>(RFC9496_MULTIPLES[1]);
    for use_simd in engines("rfc9496_multiples_of_the_generator_both_engines") {
        for (j, expect) in RFC9496_MULTIPLES.iter().enumerate() {
            // Decode B, multiply by j, encode: must print jB exactly as the RFC does.
            let mut out = Vec::new();
            let r =
                decompress_mul_compress_with(&base, &Scalar::from(j as u64), &mut out, use_simd);
            assert_eq!(r, Ok(()));
            assert_eq!(out, unhex::<32>(expect), "j = {j}, simd = {use_simd}");
            // Every listed encoding decodes, and times one re-encodes to itself.
            let mut again = Vec::new();
            let r = decompress_mul_compress_with(
                &unhex::<32>(expect),
                &Scalar::ONE,
                &mut again,
                use_simd,
            );
            assert_eq!(r, Ok(()));
            assert_eq!(again, unhex::<32>(expect));
        }
    }
}

// ----------------------------------------------------------------------------------------------
// The pair entry point (the Chou-Orlandi sender's k·P and k·P − T) against dalek.
// ----------------------------------------------------------------------------------------------

fn dalek_pair(points: &[u8], k: &Scalar, t: &RistrettoPoint) -> Result<(Vec<u8>, Vec<u8>), usize> {
    let mut out0 = Vec::new();
    let mut out1 = Vec::new();
    for (i, c) in points.chunks(32).enumerate() {
        let p = CompressedRistretto::from_slice(c)
            .ok()
            .and_then(|c| c.decompress())
            .ok_or(i)?;
        out0.extend_from_slice((p * k).compress().as_bytes());
        out1.extend_from_slice((p * k - t).compress().as_bytes());
    }
    Ok((out0, out1))
}

#[test]
fn decompress_mul_pair_compress_matches_dalek() {
    let engines = engines("decompress_mul_pair_compress_matches_dalek");
    let mut rng = blindjoin_testkit::rng(14);
    let points = valid_encodings(&mut rng, 300);
    let first = CompressedRistretto::from_slice(&points[32..64])
        .ok()
        .and_then(|c| c.decompress());
    assert!(first.is_some());
    let first = first.unwrap_or_default();
    // 0, 1, 2, ℓ − 1 and a random scalar.
    let ks = [
        Scalar::ZERO,
        Scalar::ONE,
        Scalar::from(2u8),
        -Scalar::ONE,
        random_scalar(&mut rng),
    ];
    for (ki, k) in ks.iter().enumerate() {
        // T: a random point, the identity, the basepoint, and k·P for the point at index 1 (so
        // that its second output is the identity).
        let ts = [
            RistrettoPoint::mul_base(&random_scalar(&mut rng)),
            RistrettoPoint::default(),
            RISTRETTO_BASEPOINT_POINT,
            first * k,
        ];
        for (ti, t) in ts.iter().enumerate() {
            // Every batch size (partial groups, several groups of 16) for the first scalar and
            // T; two sizes with a partial group for the other combinations.
            let sizes: &[usize] = if ki == 0 && ti == 0 {
                &[0, 1, 7, 8, 9, 17, 100, 129, 300]
            } else {
                &[9, 17]
            };
            for &n in sizes {
                let input = &points[..n * 32];
                let expect = dalek_pair(input, k, t);
                assert!(expect.is_ok());
                for &use_simd in &engines {
                    let mut out0 = vec![0xaa; 3];
                    let mut out1 = vec![0xbb; 5];
                    let r = decompress_mul_pair_compress_with(
                        input, k, t, &mut out0, &mut out1, use_simd,
                    );
                    assert_eq!(r, Ok(()));
                    assert_eq!(&out0[..3], &[0xaa; 3], "existing output kept");
                    assert_eq!(&out1[..5], &[0xbb; 5], "existing output kept");
                    assert!(
                        Ok((out0[3..].to_vec(), out1[5..].to_vec())) == expect,
                        "k #{ki}, T #{ti}, n = {n}, simd = {use_simd}"
                    );
                }
                let mut out0 = Vec::new();
                let mut out1 = Vec::new();
                let r = decompress_mul_pair_compress(input, k, t, &mut out0, &mut out1);
                assert_eq!(r, Ok(()));
                assert!(Ok((out0, out1)) == expect);
            }
        }
    }
}

#[test]
fn decompress_mul_pair_compress_reports_first_invalid_index() {
    let engines = engines("decompress_mul_pair_compress_reports_first_invalid_index");
    let mut rng = blindjoin_testkit::rng(15);
    let k = random_scalar(&mut rng);
    let t = RistrettoPoint::mul_base(&random_scalar(&mut rng));
    let n = 140;
    let valid = valid_encodings(&mut rng, n);
    let bad = invalid_encodings(&mut rng);
    let positions = [0usize, 1, 7, 8, 9, 16, 17, 100, 127, 128, n - 1];
    // One invalid string per position (the decoder is the one `decompress_mul_compress` uses,
    // tested on every invalid string there).
    for (bi, b) in bad.iter().enumerate().take(positions.len()) {
        let pos = positions[bi];
        let mut input = valid.clone();
        input[pos * 32..pos * 32 + 32].copy_from_slice(b);
        if pos + 2 < n {
            input[(pos + 2) * 32..(pos + 2) * 32 + 32].copy_from_slice(&bad[(bi + 1) % bad.len()]);
        }
        assert_eq!(dalek_pair(&input, &k, &t), Err(pos));
        for &use_simd in &engines {
            let (mut out0, mut out1) = (Vec::new(), Vec::new());
            let r =
                decompress_mul_pair_compress_with(&input, &k, &t, &mut out0, &mut out1, use_simd);
            assert_eq!(r, Err(pos), "string #{bi} at {pos}, simd = {use_simd}");
        }
    }
    for &use_simd in &engines {
        let (mut out0, mut out1) = (Vec::new(), Vec::new());
        let r = decompress_mul_pair_compress_with(
            &valid[..17 * 32 + 1],
            &k,
            &t,
            &mut out0,
            &mut out1,
            use_simd,
        );
        assert_eq!(r, Err(17), "trailing partial chunk, simd = {use_simd}");
    }
}

// ----------------------------------------------------------------------------------------------
// Known answers of RFC 9496 Appendix A.2 and A.3.
// ----------------------------------------------------------------------------------------------

/// RFC 9496 Appendix A.2, "Invalid Encodings" for ristretto255: every one must be rejected.
/// (curve25519-dalek 5.0.0's own tests do not carry this list; the strings are the RFC's, as
/// in its draft in the CFRG repository, draft-irtf-cfrg-ristretto255-decaf448.)
const RFC9496_INVALID: [&str; 33] = [
    // Non-canonical field encodings.
    "00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "f3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    // Negative field elements.
    "0100000000000000000000000000000000000000000000000000000000000000",
    "01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "ed57ffd8c914fb201471d1c3d245ce3c746fcbe63a3679d51b6a516ebebe0e20",
    "c34c4e1826e5d403b78e246e88aa051c36ccf0aafebffe137d148a2bf9104562",
    "c940e5a4404157cfb1628b108db051a8d439e1a421394ec4ebccb9ec92a8ac78",
    "47cfc5497c53dc8e61c91d17fd626ffb1c49e2bca94eed052281b510b1117a24",
    "f1c6165d33367351b0da8f6e4511010c68174a03b6581212c71c0e1d026c3c72",
    "87260f7a2f12495118360f02c26a470f450dadf34a413d21042b43b9d93e1309",
    // Non-square x^2.
    "26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371",
    "4eac077a713c57b4f4397629a4145982c661f48044dd3f96427d40b147d9742f",
    "de6a7b00deadc788eb6b6c8d20c0ae96c2f2019078fa604fee5b87d6e989ad7b",
    "bcab477be20861e01e4a0e295284146a510150d9817763caf1a6f4b422d67042",
    "2a292df7e32cababbd9de088d1d1abec9fc0440f637ed2fba145094dc14bea08",
    "f4a9e534fc0d216c44b218fa0c42d99635a0127ee2e53c712f70609649fdff22",
    "8268436f8c4126196cf64b3c7ddbda90746a378625f9813dd9b8457077256731",
    "2810e5cbc2cc4d4eece54f61c6f69758e289aa7ab440b3cbeaa21995c2f4232b",
    // Negative xy value.
    "3eb858e78f5a7254d8c9731174a94f76755fd3941c0ac93735c07ba14579630e",
    "a45fdc55c76448c049a1ab33f17023edfb2be3581e9c7aade8a6125215e04220",
    "d483fe813c6ba647ebbfd3ec41adca1c6130c2beeee9d9bf065c8d151c5f396e",
    "8a2e1d30050198c65a54483123960ccc38aef6848e1ec8f5f780e8523769ba32",
    "32888462f8b486c68ad7dd9610be5192bbeaf3b443951ac1a8118419d9fa097b",
    "227142501b9d4355ccba290404bde41575b037693cef1f438c47f8fbf35d1165",
    "5c37cc491da847cfeb9281d407efc41e15144c876e0170b499a96a22ed31e01e",
    "445425117cb8c90edcbc7c1cc0e74f747f2c1efa5630a967c64f287792a48a4b",
    // s = −1, which causes y = 0.
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    // The following are not in the RFC's list: its non-canonical strings with bit 255 set, and
    // p + 1 (the first non-canonical encoding of an even s).
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "f3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
];

#[test]
fn rfc9496_invalid_encodings_rejected_both_engines() {
    let engines = engines("rfc9496_invalid_encodings_rejected_both_engines");
    let mut rng = blindjoin_testkit::rng(16);
    let n = 20;
    let valid = valid_encodings(&mut rng, n);
    let t = RistrettoPoint::mul_base(&random_scalar(&mut rng));
    for (j, hex) in RFC9496_INVALID.iter().enumerate() {
        let bad = unhex::<32>(hex);
        assert!(CompressedRistretto(bad).decompress().is_none(), "{hex}");
        // Alone, and at every position of a batch of valid points (so in every lane of the
        // first group, in the partial second group, and after valid points).
        let mut cases = vec![(bad.to_vec(), 0)];
        for pos in [0, j % 8, 8 + j % 8, 16 + j % 4, n - 1] {
            let mut input = valid.clone();
            input[pos * 32..pos * 32 + 32].copy_from_slice(&bad);
            cases.push((input, pos));
        }
        for (input, pos) in &cases {
            for &use_simd in &engines {
                let k = Scalar::from(3u8);
                let mut out = Vec::new();
                let r = decompress_mul_compress_with(input, &k, &mut out, use_simd);
                assert_eq!(r, Err(*pos), "{hex} at {pos}, simd = {use_simd}");
                let (mut out0, mut out1) = (Vec::new(), Vec::new());
                let r = decompress_mul_pair_compress_with(
                    input, &k, &t, &mut out0, &mut out1, use_simd,
                );
                assert_eq!(r, Err(*pos), "pair: {hex} at {pos}, simd = {use_simd}");
            }
        }
    }
}

/// RFC 9496 Appendix A.3, "Group Elements from Uniform Byte Strings" for ristretto255: each
/// input is SHA-512 of the ASCII label, listed as well so the hash is checked too, then the
/// encoding of `from_uniform_bytes` of it. (Not among curve25519-dalek 5.0.0's tests; the
/// strings are the RFC's, as in its draft in the CFRG repository.)
const RFC9496_UNIFORM: [(&str, &str, &str); 7] = [
    (
        "Ristretto is traditionally a short shot of espresso coffee",
        "5d1be09e3d0c82fc538112490e35701979d99e06ca3e2b5b54bffe8b4dc772c1\
         4d98b696a1bbfb5ca32c436cc61c16563790306c79eaca7705668b47dffe5bb6",
        "3066f82a1a747d45120d1740f14358531a8f04bbffe6a819f86dfe50f44a0a46",
    ),
    (
        "made with the normal amount of ground coffee but extracted with",
        "f116b34b8f17ceb56e8732a60d913dd10cce47a6d53bee9204be8b44f6678b27\
         0102a56902e2488c46120e9276cfe54638286b9e4b3cdb470b542d46c2068d38",
        "f26e5b6f7d362d2d2a94c5d0e7602cb4773c95a2e5c31a64f133189fa76ed61b",
    ),
    (
        "about half the amount of water in the same amount of time",
        "8422e1bbdaab52938b81fd602effb6f89110e1e57208ad12d9ad767e2e25510c\
         27140775f9337088b982d83d7fcf0b2fa1edffe51952cbe7365e95c86eaf325c",
        "006ccd2a9e6867e6a2c5cea83d3302cc9de128dd2a9a57dd8ee7b9d7ffe02826",
    ),
    (
        "by using a finer grind.",
        "ac22415129b61427bf464e17baee8db65940c233b98afce8d17c57beeb7876c2\
         150d15af1cb1fb824bbd14955f2b57d08d388aab431a391cfc33d5bafb5dbbaf",
        "f8f0c87cf237953c5890aec3998169005dae3eca1fbb04548c635953c817f92a",
    ),
    (
        "This produces a concentrated shot of coffee per volume.",
        "165d697a1ef3d5cf3c38565beefcf88c0f282b8e7dbd28544c483432f1cec767\
         5debea8ebb4e5fe7d6f6e5db15f15587ac4d4d4a1de7191e0c1ca6664abcc413",
        "ae81e7dedf20a497e10c304a765c1767a42d6e06029758d2d7e8ef7cc4c41179",
    ),
    (
        "Just pulling a normal shot short will produce a weaker shot",
        "a836e6c9a9ca9f1e8d486273ad56a78c70cf18f0ce10abb1c7172ddd605d7fd2\
         979854f47ae1ccf204a33102095b4200e5befc0465accc263175485f0e17ea5c",
        "e2705652ff9f5e44d3e841bf1c251cf7dddb77d140870d1ab2ed64f1a9ce8628",
    ),
    (
        "and is not a Ristretto as some believe.",
        "2cdc11eaeb95daf01189417cdddbf95952993aa9cb9c640eb5058d09702c7462\
         2c9965a697a3b345ec24ee56335b556e677b30e6f90ac77d781064f866a3c982",
        "80bd07262511cdde4863f8a7434cef696750681cb9510eea557088f76d9e5065",
    ),
];

/// RFC 9496 Appendix A.3, second part: four inputs with non-canonical or high-bit halves that
/// all map to the same element.
const RFC9496_UNIFORM_SAME: ([&str; 4], &str) = (
    [
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\
         1200000000000000000000000000000000000000000000000000000000000000",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f\
         ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        "0000000000000000000000000000000000000000000000000000000000000080\
         ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000\
         1200000000000000000000000000000000000000000000000000000000000080",
    ],
    "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
);

#[test]
fn rfc9496_uniform_bytes_both_engines() {
    use sha2::{Digest, Sha512};
    let mut inputs: Vec<[u8; 64]> = Vec::new();
    let mut expect: Vec<u8> = Vec::new();
    for (label, input, output) in RFC9496_UNIFORM {
        let hashed: [u8; 64] = Sha512::digest(label.as_bytes()).into();
        assert_eq!(hashed, unhex::<64>(input), "SHA-512 of {label:?}");
        inputs.push(hashed);
        expect.extend_from_slice(&unhex::<32>(output));
    }
    let (same, output) = RFC9496_UNIFORM_SAME;
    for input in same {
        inputs.push(unhex::<64>(input));
        expect.extend_from_slice(&unhex::<32>(output));
    }
    assert!(dalek_hash(&inputs, &Scalar::ONE) == expect);
    // Alone (one partial group) and twice over (a full group and a partial one).
    let twice: Vec<[u8; 64]> = inputs.iter().chain(inputs.iter()).copied().collect();
    let expect_twice: Vec<u8> = expect.iter().chain(expect.iter()).copied().collect();
    for use_simd in engines("rfc9496_uniform_bytes_both_engines") {
        let mut out = Vec::new();
        hash_mul_compress_with(&inputs, &Scalar::ONE, &mut out, use_simd);
        assert!(out == expect, "simd = {use_simd}");
        let mut out = Vec::new();
        hash_mul_compress_with(&twice, &Scalar::ONE, &mut out, use_simd);
        assert!(out == expect_twice, "twice, simd = {use_simd}");
    }
}
