//! Per-point cost of the batched P-256 engine of `blindjoin_p256` against RustCrypto's `p256`,
//! on 4096 points and one thread: hash-to-curve then multiply and compress, and decompress then
//! multiply and compress. Divide the time per iteration by 4096 (or read the throughput).
//!
//! `cargo bench -p blindjoin-p256 --bench p256_batch`
#![allow(missing_docs)]

use blindjoin_p256::{decompress_mul_compress, hash_mul_compress, simd_available};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use p256::elliptic_curve::ff::PrimeField;
use p256::elliptic_curve::group::{Curve, GroupEncoding};
use p256::hash2curve::GroupDigest;
use p256::{AffinePoint, NistP256, ProjectivePoint, Scalar};
use rand::RngCore;
use std::hint::black_box;
use std::time::Duration;

const N: usize = 4096;
const DST: &[u8] = b"blindjoin-p256-bench";

fn inputs() -> (Vec<[u8; 32]>, Vec<u8>, Scalar) {
    let mut rng = blindjoin_testkit::rng(7);
    let msgs: Vec<[u8; 32]> = (0..N)
        .map(|_| {
            let mut m = [0u8; 32];
            rng.fill_bytes(&mut m);
            m
        })
        .collect();
    let k = loop {
        let mut b = p256::FieldBytes::default();
        rng.fill_bytes(&mut b);
        if let Some(k) = Option::<Scalar>::from(Scalar::from_repr(b)) {
            break k;
        }
    };
    let points = p256_hash(&msgs, &Scalar::ONE);
    (msgs, points, k)
}

/// The `p256` path: hash, multiply, and one batch normalisation for the encodings.
fn p256_hash(msgs: &[[u8; 32]], k: &Scalar) -> Vec<u8> {
    let pts: Vec<ProjectivePoint> = msgs
        .iter()
        .map(|m| NistP256::hash_from_bytes(&[m], &[DST]).unwrap_or_default() * k)
        .collect();
    encode(&pts)
}

/// The `p256` path: decode, multiply, one batch normalisation (invalid points skipped).
fn p256_reblind(points: &[u8], k: &Scalar) -> Vec<u8> {
    let pts: Vec<ProjectivePoint> = points
        .chunks_exact(33)
        .filter_map(|c| {
            let mut repr = <AffinePoint as GroupEncoding>::Repr::default();
            repr.copy_from_slice(c);
            Option::<AffinePoint>::from(AffinePoint::from_bytes(&repr))
        })
        .map(|p| ProjectivePoint::from(p) * k)
        .collect();
    encode(&pts)
}

fn encode(pts: &[ProjectivePoint]) -> Vec<u8> {
    let mut affine = vec![AffinePoint::default(); pts.len()];
    ProjectivePoint::batch_normalize(pts, &mut affine);
    affine.iter().flat_map(|a| a.to_bytes()).collect()
}

/// A group of N points per iteration, 10 samples of 5 s.
fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    g
}

fn bench(c: &mut Criterion) {
    let (msgs, points, k) = inputs();
    // The engine must agree with p256 before its speed means anything.
    let mut hashed = Vec::new();
    let ok1 = hash_mul_compress(&msgs, DST, &k, &mut hashed).is_ok();
    let mut reblinded = Vec::new();
    let ok2 = decompress_mul_compress(&points, &k, &mut reblinded).is_ok();
    assert!(ok1 && ok2 && hashed == p256_hash(&msgs, &k) && reblinded == p256_reblind(&points, &k));

    let engine = if simd_available() {
        "batch_avx512ifma"
    } else {
        "batch_portable"
    };

    let mut g = group(c, "hash_mul_compress");
    g.bench_function(engine, |b| {
        let mut out = Vec::with_capacity(N * 33);
        b.iter(|| {
            out.clear();
            let r = hash_mul_compress(black_box(&msgs), DST, &k, &mut out);
            black_box((r.is_ok(), &out));
        })
    });
    g.bench_function("p256", |b| {
        b.iter(|| black_box(p256_hash(black_box(&msgs), &k)))
    });
    g.finish();

    let mut g = group(c, "decompress_mul_compress");
    g.bench_function(engine, |b| {
        let mut out = Vec::with_capacity(N * 33);
        b.iter(|| {
            out.clear();
            let r = decompress_mul_compress(black_box(&points), &k, &mut out);
            black_box((r.is_ok(), &out));
        })
    });
    g.bench_function("p256", |b| {
        b.iter(|| black_box(p256_reblind(black_box(&points), &k)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
