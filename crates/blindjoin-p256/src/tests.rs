//! Tests of the batch engine: the eight-lane field against crypto-bigint's modular arithmetic,
//! and both entry points against `p256`, bit for bit.

use super::field::{self, Fe, Limbs, consts};
use super::*;
use p256::U256;
use p256::elliptic_curve::bigint::NonZero;
use rand::{Rng, RngCore};

/// Whether the engine can run here; prints a note (or fails under `BLINDJOIN_REQUIRE_IFMA`).
fn engine(test: &str) -> bool {
    if simd_available() {
        return true;
    }
    assert!(
        std::env::var_os("BLINDJOIN_REQUIRE_IFMA").is_none(),
        "{test}: the CPU has no AVX-512 IFMA and BLINDJOIN_REQUIRE_IFMA is set"
    );
    eprintln!("SKIPPED (CPU has no AVX-512 IFMA): {test}");
    false
}

// ----------------------------------------------------------------------------------------------
// The field against crypto-bigint.
// ----------------------------------------------------------------------------------------------

fn p() -> U256 {
    U256::from_be_hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
}

fn pnz() -> NonZero<U256> {
    NonZero::new(p()).unwrap()
}

/// Radix-2^52 limbs of a number below 2^260.
fn to_limbs(x: &U256) -> Limbs {
    let w = x.as_words();
    let bit = |i: usize| -> u64 {
        if i >= 256 {
            0
        } else {
            (w[i / 64] >> (i % 64)) & 1
        }
    };
    core::array::from_fn(|j| (0..52).fold(0u64, |acc, b| acc | (bit(52 * j + b) << b)))
}

/// The number of normalised limbs whose value is below 2^256.
fn from_limbs(l: &Limbs) -> U256 {
    let mut w = [0u64; 4];
    for (j, &limb) in l.iter().enumerate() {
        assert!(limb < 1 << 52, "limb {j} not normalised: {limb:x}");
        for b in 0..52 {
            let i = 52 * j + b;
            if (limb >> b) & 1 == 1 {
                assert!(i < 256, "value above 2^256");
                w[i / 64] |= 1 << (i % 64);
            }
        }
    }
    U256::from_words(w)
}

fn r_mod_p() -> U256 {
    // R = 2^260: 2^256 mod p times 16.
    let two256 = U256::MAX.wrapping_sub(&p()).wrapping_add(&U256::ONE);
    let mut r = two256;
    for _ in 0..4 {
        r = r.add_mod(&r, &pnz());
    }
    r
}

fn run1(lanes: &[U256; 8], f: impl Fn(&Fe) -> Fe) -> [U256; 8] {
    // SAFETY: the tests call this only after `engine` found the features.
    unsafe {
        let v = field::from_lanes(&core::array::from_fn(|l| to_limbs(&lanes[l])));
        let out = field::lanes(&f(&v));
        core::array::from_fn(|l| from_limbs(&out[l]))
    }
}

fn run2(a: &[U256; 8], b: &[U256; 8], f: impl Fn(&Fe, &Fe) -> Fe) -> [U256; 8] {
    // SAFETY: as in `run1`.
    unsafe {
        let va = field::from_lanes(&core::array::from_fn(|l| to_limbs(&a[l])));
        let vb = field::from_lanes(&core::array::from_fn(|l| to_limbs(&b[l])));
        let out = field::lanes(&f(&va, &vb));
        core::array::from_fn(|l| from_limbs(&out[l]))
    }
}

/// Values below 2p (as U256 they must fit 256 bits: up to 2^256 − 1), edges included.
fn samples(rng: &mut impl RngCore, n: usize) -> Vec<U256> {
    let p = p();
    let mut v = vec![
        U256::ZERO,
        U256::ONE,
        p.wrapping_sub(&U256::ONE),
        p,
        p.wrapping_add(&U256::ONE),
        U256::MAX,
    ];
    while v.len() < n {
        let mut w = [0u64; 4];
        for x in &mut w {
            *x = rng.next_u64();
        }
        v.push(U256::from_words(w));
    }
    v
}

#[test]
fn field_matches_reference() {
    if !engine("field_matches_reference") {
        return;
    }
    let mut rng = blindjoin_testkit::rng(1);
    let p = p();
    let r = r_mod_p();
    let xs = samples(&mut rng, 800);
    let ys = samples(&mut rng, 800);
    let modp = |x: &U256| x.mul_mod(&U256::ONE, &pnz());
    for (ca, cb) in xs.chunks_exact(8).zip(ys.chunks_exact(8)) {
        let a: [U256; 8] = core::array::from_fn(|l| ca[l]);
        let b: [U256; 8] = core::array::from_fn(|l| cb[l]);
        // Values up to 2^256 − 1 are below 2p: every function accepts them.
        // SAFETY (all closures): the features were checked by `engine`.
        let s = run2(&a, &b, |x, y| unsafe {
            field::canonical(&field::add(x, y))
        });
        let d = run2(&a, &b, |x, y| unsafe {
            field::canonical(&field::sub(x, y))
        });
        let m = run2(&a, &b, |x, y| unsafe {
            field::canonical(&field::mul(&field::mul(x, y), &field::splat(&consts::R2)))
        });
        let mont = run1(&a, |x| unsafe { field::canonical(&field::to_mont(x)) });
        let back = run1(&a, |x| unsafe { field::from_mont(&field::to_mont(x)) });
        let inv = run1(&a, |x| unsafe {
            field::from_mont(&field::invert(&field::to_mont(x)))
        });
        let below = {
            // SAFETY: as above.
            unsafe {
                let v = field::from_lanes(&core::array::from_fn(|l| to_limbs(&a[l])));
                field::below_p(&v)
            }
        };
        for l in 0..8 {
            let (x, y) = (modp(&a[l]), modp(&b[l]));
            assert_eq!(s[l], x.add_mod(&y, &pnz()), "add {:?} {:?}", a[l], b[l]);
            assert_eq!(d[l], x.sub_mod(&y, &pnz()), "sub {:?} {:?}", a[l], b[l]);
            assert_eq!(m[l], x.mul_mod(&y, &pnz()), "mul {:?} {:?}", a[l], b[l]);
            assert_eq!(mont[l], x.mul_mod(&r, &pnz()), "to_mont {:?}", a[l]);
            assert_eq!(back[l], x, "from_mont {:?}", a[l]);
            if x == U256::ZERO {
                assert_eq!(inv[l], U256::ZERO);
            } else {
                assert_eq!(inv[l].mul_mod(&x, &pnz()), U256::ONE, "invert {:?}", a[l]);
            }
            assert_eq!((below >> l) & 1 == 1, a[l] < p, "below_p {:?}", a[l]);
        }
    }
}

#[test]
fn constants_match_their_definitions() {
    if !engine("constants_match_their_definitions") {
        return;
    }
    let p = p();
    let r = r_mod_p();
    let mont = |x: &U256| x.mul_mod(&r, &pnz());
    let b = U256::from_be_hex("5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b");
    assert_eq!(from_limbs(&consts::P), p);
    assert_eq!(from_limbs(&consts::ONE), r);
    assert_eq!(from_limbs(&consts::R2), mont(&r));
    let two192 = U256::ONE.shl_vartime(192);
    assert_eq!(from_limbs(&consts::C192), mont(&mont(&two192)));
    assert_eq!(from_limbs(&consts::B), mont(&b));
    assert_eq!(
        from_limbs(&consts::A),
        mont(&p.wrapping_sub(&U256::from_u64(3)))
    );
    assert_eq!(
        from_limbs(&consts::Z),
        mont(&p.wrapping_sub(&U256::from_u64(10)))
    );
    let c2 = from_limbs(&consts::C2);
    // C2 = sqrt(10)·R: C2² = 10·R².
    assert_eq!(c2.mul_mod(&c2, &pnz()), mont(&mont(&U256::from_u64(10))));
    // 2p in five limbs.
    let l2 = consts::P2;
    let lp = consts::P;
    let mut carry = 0u64;
    for j in 0..5 {
        let s = 2 * lp[j] + carry;
        assert_eq!(s & ((1 << 52) - 1), l2[j]);
        carry = s >> 52;
    }
}

// ----------------------------------------------------------------------------------------------
// The entry points against p256.
// ----------------------------------------------------------------------------------------------

fn p256_hash(msgs: &[Vec<u8>], dst: &[u8], k: &Scalar) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        let p = (NistP256::hash_from_bytes(&[m], &[dst]).unwrap() * k).to_affine();
        out.extend_from_slice(&p.to_bytes());
    }
    out
}

fn p256_reblind(points: &[u8], k: &Scalar) -> Vec<u8> {
    let mut out = Vec::new();
    for c in points.chunks(33) {
        let p = decode(c).unwrap();
        out.extend_from_slice(&(ProjectivePoint::from(p) * k).to_affine().to_bytes());
    }
    out
}

fn scalars(rng: &mut impl RngCore) -> Vec<Scalar> {
    let mut v = vec![
        Scalar::ZERO,
        Scalar::ONE,
        Scalar::from(2u64),
        -Scalar::ONE,
        -Scalar::from(2u64),
        Scalar::from(8u64),
        Scalar::from(0x0888_8888u64),
    ];
    for _ in 0..4 {
        v.push(random_scalar(rng));
    }
    v
}

/// A uniform nonzero scalar below n (rejection sampling on 32 random bytes).
fn random_scalar(rng: &mut impl RngCore) -> Scalar {
    let mut b = p256::FieldBytes::default();
    loop {
        rng.fill_bytes(&mut b);
        if let Some(s) = Option::<Scalar>::from(Scalar::from_repr(b)) {
            return s;
        }
    }
}

fn messages(rng: &mut impl RngCore, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let len = rng.random_range(0..80);
            let mut m = vec![0u8; len];
            rng.fill_bytes(&mut m);
            m
        })
        .collect()
}

#[test]
fn hash_mul_compress_matches_p256() {
    if !engine("hash_mul_compress_matches_p256") {
        return;
    }
    let mut rng = blindjoin_testkit::rng(2);
    let dst = b"blindjoin-p256-test-dst";
    for k in scalars(&mut rng) {
        for n in [0usize, 1, 7, 8, 9, 65, 130] {
            let msgs = messages(&mut rng, n);
            let want = p256_hash(&msgs, dst, &k);
            for simd in [true, false] {
                let mut got = Vec::new();
                hash_mul_compress_with(&msgs, dst, &k, &mut got, simd).unwrap();
                assert_eq!(got, want, "n = {n}, simd = {simd}");
            }
        }
    }
    // Thousands of items with one random scalar.
    let k = scalars(&mut rng)[8];
    let msgs = messages(&mut rng, 3000);
    let mut got = Vec::new();
    hash_mul_compress(&msgs, dst, &k, &mut got).unwrap();
    assert_eq!(got, p256_hash(&msgs, dst, &k));
    // An empty tag is refused by both paths, with nothing appended.
    for simd in [true, false] {
        let mut out = Vec::new();
        assert!(hash_mul_compress_with(&msgs[..3], b"", &k, &mut out, simd).is_err());
        assert!(out.is_empty());
    }
}

fn random_points(rng: &mut impl RngCore, n: usize) -> Vec<u8> {
    let msgs = messages(rng, n);
    p256_hash(&msgs, b"points", &Scalar::ONE)
}

#[test]
fn decompress_mul_compress_matches_p256() {
    if !engine("decompress_mul_compress_matches_p256") {
        return;
    }
    let mut rng = blindjoin_testkit::rng(3);
    for k in scalars(&mut rng) {
        for n in [0usize, 1, 7, 8, 9, 16, 17, 65, 130] {
            let pts = random_points(&mut rng, n);
            let want = p256_reblind(&pts, &k);
            for simd in [true, false] {
                let mut got = Vec::new();
                decompress_mul_compress_with(&pts, &k, &mut got, simd).unwrap();
                assert_eq!(got, want, "n = {n}, simd = {simd}");
            }
        }
    }
    let k = scalars(&mut rng)[9];
    let pts = random_points(&mut rng, 3000);
    let mut got = Vec::new();
    decompress_mul_compress(&pts, &k, &mut got).unwrap();
    assert_eq!(got, p256_reblind(&pts, &k));
}

/// x = 1, 2, ...: the first one for which x³ − 3x + b is not a square.
fn off_curve() -> Vec<u8> {
    (1u8..)
        .map(|x| {
            let mut e = vec![0u8; 33];
            e[0] = 0x02;
            e[32] = x;
            e
        })
        .find(|e| decode(e).is_none())
        .unwrap()
}

#[test]
fn invalid_encodings_are_reported_at_their_index() {
    if !engine("invalid_encodings_are_reported_at_their_index") {
        return;
    }
    let mut rng = blindjoin_testkit::rng(4);
    let k = scalars(&mut rng)[7];
    let p_be: Vec<u8> = {
        let mut v = vec![0xffu8; 32];
        v[4..8].copy_from_slice(&[0, 0, 0, 1]);
        v[8..20].fill(0);
        v
    };
    let valid = random_points(&mut rng, 1);
    let mut bad: Vec<Vec<u8>> = Vec::new();
    bad.push(vec![0; 33]);
    for tag in [0x00, 0x01, 0x04, 0x05, 0x06, 0x07, 0x12, 0x82, 0xff] {
        let mut e = valid.clone();
        e[0] = tag;
        bad.push(e);
    }
    bad.push([&[0x02][..], &p_be].concat());
    bad.push([&[0x03][..], &p_be].concat());
    bad.push([&[0x02][..], &[0xff; 32]].concat());
    bad.push(off_curve());
    let mut off3 = off_curve();
    off3[0] = 0x03;
    bad.push(off3);
    for e in &bad {
        assert!(decode(e).is_none());
    }
    for n in [1usize, 7, 8, 9, 17, 65, 130] {
        let pts = random_points(&mut rng, n);
        for at in [0, n / 2, n - 1] {
            for e in &bad {
                let mut f = pts.clone();
                f[at * 33..(at + 1) * 33].copy_from_slice(e);
                for simd in [true, false] {
                    let r = decompress_mul_compress_with(&f, &k, &mut Vec::new(), simd);
                    assert_eq!(r, Err(at), "n = {n}, at = {at}, {e:02x?}");
                }
            }
        }
        // A trailing short chunk, and a frame one byte too long.
        for simd in [true, false] {
            let r = decompress_mul_compress_with(&pts[..pts.len() - 1], &k, &mut Vec::new(), simd);
            assert_eq!(r, Err(n - 1));
            let long = [pts.as_slice(), &[2]].concat();
            let r = decompress_mul_compress_with(&long, &k, &mut Vec::new(), simd);
            assert_eq!(r, Err(n));
        }
    }
}

/// RFC 9380 Appendix J.1.1, P256_XMD:SHA-256_SSWU_RO_: with k = 1 the output is the
/// compressed encoding of the suite's hash_to_curve result (x, and the parity of y).
#[test]
fn rfc9380_j11_known_answers_both_engines() {
    const DST: &[u8] = b"QUUX-V01-CS02-with-P256_XMD:SHA-256_SSWU_RO_";
    let q128 = format!("q128_{}", "q".repeat(128));
    let a512 = format!("a512_{}", "a".repeat(512));
    let vectors: [(&[u8], &str, &str); 5] = [
        (
            b"",
            "2c15230b26dbc6fc9a37051158c95b79656e17a1a920b11394ca91c44247d3e4",
            "8a7a74985cc5c776cdfe4b1f19884970453912e9d31528c060be9ab5c43e8415",
        ),
        (
            b"abc",
            "0bb8b87485551aa43ed54f009230450b492fead5f1cc91658775dac4a3388a0f",
            "5c41b3d0731a27a7b14bc0bf0ccded2d8751f83493404c84a88e71ffd424212e",
        ),
        (
            b"abcdef0123456789",
            "65038ac8f2b1def042a5df0b33b1f4eca6bff7cb0f9c6c1526811864e544ed80",
            "cad44d40a656e7aff4002a8de287abc8ae0482b5ae825822bb870d6df9b56ca3",
        ),
        (
            q128.as_bytes(),
            "4be61ee205094282ba8a2042bcb48d88dfbb609301c49aa8b078533dc65a0b5d",
            "98f8df449a072c4721d241a3b1236d3caccba603f916ca680f4539d2bfb3c29e",
        ),
        (
            a512.as_bytes(),
            "457ae2981f70ca85d8e24c308b14db22f3e3862c5ea0f652ca38b5e49cd64bc5",
            "ecb9f0eadc9aeed232dabc53235368c1394c78de05dd96893eefa62b0f4757dc",
        ),
    ];
    let unhex = |s: &str| -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    };
    let msgs: Vec<&[u8]> = vectors.iter().map(|v| v.0).collect();
    let mut want = Vec::new();
    for (_, x, y) in &vectors {
        let y = unhex(y);
        want.push(0x02 | (y[31] & 1));
        want.extend_from_slice(&unhex(x));
    }
    for simd in [true, false] {
        if simd && !engine("rfc9380_j11_known_answers_both_engines") {
            continue;
        }
        let mut got = Vec::new();
        hash_mul_compress_with(&msgs, DST, &Scalar::ONE, &mut got, simd).unwrap();
        assert_eq!(got, want, "simd = {simd}");
        // Each vector in every lane position of a group.
        for pos in 0..8 {
            let mut batch: Vec<&[u8]> = vec![b"filler"; 9];
            batch[pos] = msgs[pos % 5];
            let mut got = Vec::new();
            hash_mul_compress_with(&batch, DST, &Scalar::ONE, &mut got, simd).unwrap();
            assert_eq!(
                got[pos * 33..(pos + 1) * 33],
                want[(pos % 5) * 33..(pos % 5 + 1) * 33]
            );
        }
    }
}

#[test]
fn identity_encodes_as_zeros_in_p256() {
    // The engine writes 33 zero bytes for the identity (k = 0); p256 does the same.
    assert_eq!(AffinePoint::IDENTITY.to_bytes().as_slice(), &[0u8; 33]);
}

#[test]
fn digits_recompose_k() {
    let mut rng = blindjoin_testkit::rng(6);
    for k in scalars(&mut rng) {
        let d = scalar_digits(&k);
        assert!(d.iter().all(|&x| (-8..=8).contains(&x)));
        let mut acc = Scalar::ZERO;
        for &x in d.iter().rev() {
            acc *= Scalar::from(16u64);
            let m = Scalar::from(u64::from(x.unsigned_abs()));
            acc += if x < 0 { -m } else { m };
        }
        assert_eq!(acc, k);
    }
}
