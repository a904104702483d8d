//! Both engines against crypto-bigint's exponentiation, on moduli of every size the protocols
//! use and on the bases at the edges.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crypto_bigint::modular::BoxedMontyForm;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A random odd modulus of exactly `bits` bits.
fn modulus(rng: &mut ChaCha20Rng, bits: u32) -> (Modulus, Vec<u8>) {
    let len = bits.div_ceil(8) as usize;
    let mut be = vec![0u8; len];
    rng.fill_bytes(&mut be);
    let top = bits - 8 * (len as u32 - 1);
    be[0] &= ((1u16 << top) - 1) as u8;
    be[0] |= 1 << (top - 1);
    be[len - 1] |= 1;
    (Modulus::from_be_bytes(&be).unwrap(), be)
}

/// x^e mod N straight from crypto-bigint, as a big-endian element.
fn reference(m: &Modulus, base: &[u8], exp: &Exponent) -> Vec<u8> {
    let p = m.value().bits_precision();
    let x = BoxedUint::from_be_slice(base, p).unwrap();
    let x = x.rem(&NonZero::new(m.value().as_ref().clone()).unwrap());
    let y = BoxedMontyForm::new(x, m.params())
        .pow_bounded_exp(&exp.value, exp.bits)
        .retrieve();
    m.to_element(&y)
}

fn bases(rng: &mut ChaCha20Rng, m: &Modulus, n_be: &[u8], count: usize) -> Vec<u8> {
    let len = m.byte_len();
    let mut out = Vec::new();
    // The edges: 0, 1, 2, N − 1, N, all ones (≥ N), then random values below N.
    let mut one = vec![0u8; len];
    one[len - 1] = 1;
    let mut two = vec![0u8; len];
    two[len - 1] = 2;
    let mut n_minus_1 = n_be.to_vec();
    n_minus_1[len - 1] -= 1;
    for e in [
        vec![0u8; len],
        one,
        two,
        n_minus_1,
        n_be.to_vec(),
        vec![0xff; len],
    ] {
        out.extend_from_slice(&e);
    }
    while out.len() < count * len {
        let mut e = vec![0u8; len];
        rng.fill_bytes(&mut e);
        e[0] &= n_be[0] >> 1;
        out.extend_from_slice(&e);
    }
    out.truncate(count * len);
    out
}

fn check(bits: u32, exp_bits: u32, count: usize, seed: u64) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (m, n_be) = modulus(&mut rng, bits);
    let mut e = vec![0u8; exp_bits.div_ceil(8) as usize];
    rng.fill_bytes(&mut e);
    let spare = 8 * e.len() as u32 - exp_bits;
    e[0] &= 0xff >> spare;
    let exp = Exponent::from_be_bytes(&e, exp_bits).unwrap();
    let xs = bases(&mut rng, &m, &n_be, count);
    let expected: Vec<u8> = xs
        .chunks_exact(m.byte_len())
        .flat_map(|x| reference(&m, x, &exp))
        .collect();
    let mut portable = Vec::new();
    m.pow_batch_with(&xs, &exp, &mut portable, false);
    assert_eq!(portable, expected, "portable, {bits}-bit modulus");
    let mut simd = Vec::new();
    m.pow_batch_with(&xs, &exp, &mut simd, true);
    assert_eq!(simd, expected, "eight lanes, {bits}-bit modulus");
}

#[test]
fn engines_equal_crypto_bigint_on_every_protocol_size() {
    // DH moduli with 2κ-bit exponents, and RSA CRT halves with full-length exponents.
    for (i, &(bits, exp_bits, count)) in [
        (1024, 160, 19),
        (3072, 256, 17),
        (512, 512, 9),
        (1536, 1536, 8),
        (7680, 384, 9),
        (8192, 384, 3),
        (3840, 3840, 2),
    ]
    .iter()
    .enumerate()
    {
        check(bits, exp_bits, count, i as u64);
    }
}

#[test]
fn engines_equal_on_odd_sizes_and_short_exponents() {
    for (i, bits) in [61u32, 64, 65, 100, 127, 520, 1000, 1025, 2047]
        .into_iter()
        .enumerate()
    {
        for exp_bits in [1u32, 2, 3, 17, 64, 65] {
            check(
                bits,
                exp_bits,
                11,
                100 + i as u64 * 10 + u64::from(exp_bits),
            );
        }
    }
}

#[test]
fn exponent_zero_gives_one_and_declared_length_is_enforced() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let (m, n_be) = modulus(&mut rng, 1024);
    let xs = bases(&mut rng, &m, &n_be, 9);
    let zero = Exponent::from_be_bytes(&[0, 0], 16).unwrap();
    let mut one = vec![0u8; m.byte_len()];
    one[m.byte_len() - 1] = 1;
    for simd in [false, true] {
        let mut out = Vec::new();
        m.pow_batch_with(&xs, &zero, &mut out, simd);
        assert!(
            out.chunks_exact(m.byte_len()).all(|y| y == one),
            "simd {simd}"
        );
    }
    assert_eq!(
        Exponent::from_be_bytes(&[1, 0], 8).err(),
        Some(Error::BadExponent(8))
    );
    assert!(Exponent::from_be_bytes(&[0, 0xff], 8).is_ok());
}

#[test]
fn moduli_must_be_odd_and_bounded() {
    assert_eq!(
        Modulus::from_be_bytes(&[0x10, 0x00]).err(),
        Some(Error::BadModulus)
    );
    assert_eq!(Modulus::from_be_bytes(&[1]).err(), Some(Error::BadModulus));
    assert_eq!(Modulus::from_be_bytes(&[]).err(), Some(Error::BadModulus));
    let mut big = vec![0xffu8; (MAX_BITS / 8) as usize + 1];
    big[0] = 1;
    assert_eq!(Modulus::from_be_bytes(&big).err(), Some(Error::BadModulus));
    let m = Modulus::from_be_bytes(&[0, 0, 0x80, 0x01]).unwrap();
    assert_eq!((m.bits(), m.byte_len()), (16, 2));
}

#[test]
fn first_not_below_names_the_element() {
    let m = Modulus::from_be_bytes(&[0x80, 0x01]).unwrap();
    assert_eq!(m.first_not_below(&[0x80, 0x00, 0x7f, 0xff]), None);
    assert_eq!(m.first_not_below(&[0x80, 0x00, 0x80, 0x01]), Some(1));
    assert_eq!(m.first_not_below(&[0x80, 0x00, 0x90]), Some(1));
    assert_eq!(m.from_element(&[0x80, 0x01]), None);
    assert!(m.from_element(&[0x80, 0x00]).is_some());
    let x = m.from_element(&[0x12, 0x34]).unwrap();
    assert_eq!(m.to_element(&x), vec![0x12, 0x34]);
}

#[test]
fn random_batches_of_every_length_up_to_three_groups() {
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let (m, n_be) = modulus(&mut rng, 2048);
    let exp = Exponent::from_be_bytes(&rng.random::<[u8; 32]>(), 256).unwrap();
    for count in 0..=3 * LANES {
        let xs = bases(&mut rng, &m, &n_be, count);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        m.pow_batch_with(&xs, &exp, &mut a, false);
        m.pow_batch_with(&xs, &exp, &mut b, true);
        assert_eq!(a.len(), count * m.byte_len());
        assert_eq!(a, b, "{count} bases");
    }
}
