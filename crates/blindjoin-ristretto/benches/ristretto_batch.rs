//! Per-point cost of the batched Ristretto255 engine of `blindjoin_ristretto` against dalek,
//! on 4096 points and one thread: hash-to-group then multiply and compress, decompress then
//! multiply and compress, and decompress then both `compress(k·P)` and `compress(k·P − T)` (the
//! base-OT sender's pair). Divide the time per iteration by 4096 (or read the throughput).
//!
//! `cargo bench -p blindjoin-ristretto --bench ristretto_batch`
#![allow(missing_docs)]

use blindjoin_ristretto::{
    decompress_mul_compress, decompress_mul_pair_compress, hash_mul_compress, simd_available,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use rand::RngCore;
use std::hint::black_box;
use std::time::Duration;

const N: usize = 4096;

fn inputs() -> (Vec<[u8; 64]>, Vec<u8>, Scalar) {
    let mut rng = blindjoin_testkit::rng(7);
    let uniform: Vec<[u8; 64]> = (0..N)
        .map(|_| {
            let mut u = [0u8; 64];
            rng.fill_bytes(&mut u);
            u
        })
        .collect();
    let points: Vec<u8> = uniform
        .iter()
        .flat_map(|u| RistrettoPoint::from_uniform_bytes(u).compress().to_bytes())
        .collect();
    let mut wide = [0u8; 64];
    rng.fill_bytes(&mut wide);
    (uniform, points, Scalar::from_bytes_mod_order_wide(&wide))
}

/// The dalek path: `compress(k · from_uniform_bytes(u))` point by point.
fn dalek_hash(uniform: &[[u8; 64]], k: &Scalar) -> Vec<u8> {
    let mut out = Vec::with_capacity(uniform.len() * 32);
    for u in uniform {
        let p = RistrettoPoint::from_uniform_bytes(u) * k;
        out.extend_from_slice(p.compress().as_bytes());
    }
    out
}

/// The dalek path: `compress(k · decompress(P))` point by point (invalid points skipped).
fn dalek_reblind(points: &[u8], k: &Scalar) -> Vec<u8> {
    let mut out = Vec::with_capacity(points.len());
    for chunk in points.chunks_exact(32) {
        let p = CompressedRistretto::from_slice(chunk)
            .ok()
            .and_then(|c| c.decompress());
        if let Some(p) = p {
            out.extend_from_slice((p * k).compress().as_bytes());
        }
    }
    out
}

/// The dalek path of the pair: `compress(k·P)` and `compress(k·P − T)` point by point.
fn dalek_pair(points: &[u8], k: &Scalar, t: &RistrettoPoint) -> (Vec<u8>, Vec<u8>) {
    let mut out0 = Vec::with_capacity(points.len());
    let mut out1 = Vec::with_capacity(points.len());
    for chunk in points.chunks_exact(32) {
        let p = CompressedRistretto::from_slice(chunk)
            .ok()
            .and_then(|c| c.decompress());
        if let Some(p) = p {
            let kp = p * k;
            out0.extend_from_slice(kp.compress().as_bytes());
            out1.extend_from_slice((kp - t).compress().as_bytes());
        }
    }
    (out0, out1)
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
    let (uniform, points, k) = inputs();
    // The engine must agree with dalek before its speed means anything.
    let mut hashed = Vec::new();
    hash_mul_compress(&uniform, &k, &mut hashed);
    let mut reblinded = Vec::new();
    let ok = decompress_mul_compress(&points, &k, &mut reblinded).is_ok();
    assert!(ok && hashed == dalek_hash(&uniform, &k) && reblinded == dalek_reblind(&points, &k));

    let engine = if simd_available() {
        "batch_avx512ifma"
    } else {
        "batch_portable"
    };

    let mut g = group(c, "hash_mul_compress");
    g.bench_function(engine, |b| {
        let mut out = Vec::with_capacity(N * 32);
        b.iter(|| {
            out.clear();
            hash_mul_compress(black_box(&uniform), &k, &mut out);
            black_box(&out);
        })
    });
    g.bench_function("dalek", |b| {
        b.iter(|| black_box(dalek_hash(black_box(&uniform), &k)))
    });
    g.finish();

    let mut g = group(c, "decompress_mul_compress");
    g.bench_function(engine, |b| {
        let mut out = Vec::with_capacity(N * 32);
        b.iter(|| {
            out.clear();
            let r = decompress_mul_compress(black_box(&points), &k, &mut out);
            black_box((r.is_ok(), &out));
        })
    });
    g.bench_function("dalek", |b| {
        b.iter(|| black_box(dalek_reblind(black_box(&points), &k)))
    });
    g.finish();

    let t = RistrettoPoint::mul_base(&(k * k));
    let (mut out0, mut out1) = (Vec::new(), Vec::new());
    let ok = decompress_mul_pair_compress(&points, &k, &t, &mut out0, &mut out1).is_ok();
    assert!(ok && (out0, out1) == dalek_pair(&points, &k, &t));
    let mut g = group(c, "decompress_mul_pair_compress");
    g.bench_function(engine, |b| {
        let mut out0 = Vec::with_capacity(N * 32);
        let mut out1 = Vec::with_capacity(N * 32);
        b.iter(|| {
            out0.clear();
            out1.clear();
            let r = decompress_mul_pair_compress(black_box(&points), &k, &t, &mut out0, &mut out1);
            black_box((r.is_ok(), &out0, &out1));
        })
    });
    g.bench_function("dalek", |b| {
        b.iter(|| black_box(dalek_pair(black_box(&points), &k, &t)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
