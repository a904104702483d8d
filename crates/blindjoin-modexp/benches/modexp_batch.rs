//! Exponentiations per second of the eight-lane engine and of the portable one, for the
//! moduli and exponent lengths of dh_ffc and rsa_blind.
#![allow(missing_docs, clippy::unwrap_used)]

use blindjoin_modexp::{Exponent, Modulus};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn bench(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    // dh_ffc at κ = 80, 128, 192 (2κ-bit exponents); rsa_blind's CRT halves at κ = 80, 128,
    // 192 (exponents as long as the half).
    for (bits, exp_bits) in [
        (1024u32, 160u32),
        (3072, 256),
        (8192, 384),
        (512, 512),
        (1536, 1536),
        (3840, 3840),
    ] {
        let len = (bits / 8) as usize;
        let mut n = vec![0u8; len];
        rng.fill_bytes(&mut n);
        n[0] |= 0x80;
        n[len - 1] |= 1;
        let m = Modulus::from_be_bytes(&n).unwrap();
        let mut e = vec![0u8; (exp_bits / 8) as usize];
        rng.fill_bytes(&mut e);
        let exp = Exponent::from_be_bytes(&e, exp_bits).unwrap();
        let count = 64;
        let mut xs = vec![0u8; count * len];
        rng.fill_bytes(&mut xs);
        for x in xs.chunks_exact_mut(len) {
            x[0] &= 0x7f;
        }
        let mut g = c.benchmark_group(format!("pow_{bits}_exp{exp_bits}"));
        g.throughput(Throughput::Elements(count as u64));
        g.sample_size(10);
        for simd in [true, false] {
            g.bench_function(if simd { "ifma8" } else { "crypto-bigint" }, |b| {
                let mut out = Vec::with_capacity(xs.len());
                b.iter(|| {
                    out.clear();
                    m.pow_batch_with(&xs, &exp, &mut out, simd);
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
