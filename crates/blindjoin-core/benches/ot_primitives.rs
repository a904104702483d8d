//! Micro-benchmarks of the OT-extension primitives: the 128×128 and 128×n bit transposes (every
//! implementation this CPU runs), fixed-key AES as π and the CR / TCCR hashes on it, the AES-CTR
//! PRG, and GF(2^128) products.
//!
//! `cargo bench -p blindjoin-core --bench ot_primitives -- --warm-up-time 1 --measurement-time 3`
#![allow(missing_docs)]

use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::block::{Block, gf128_inner_product};
use blindjoin_core::prg::AesPrg;
use blindjoin_core::transpose::{TransposeImpl, transpose_128xn_with, transpose128_with};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn random_blocks(n: usize, seed: u128) -> Vec<Block> {
    let mut v = vec![Block::ZERO; n];
    AesPrg::new(Block(seed)).fill_blocks(&mut v);
    v
}

fn available() -> impl Iterator<Item = TransposeImpl> {
    TransposeImpl::ALL.into_iter().filter(|i| i.is_available())
}

fn transpose(c: &mut Criterion) {
    let mut g = c.benchmark_group("transpose128");
    g.throughput(Throughput::Elements(1));
    let start: [Block; 128] =
        core::array::from_fn(|i| Block((i as u128 + 1) * 0x9e37_79b9_7f4a_7c15));
    for imp in available() {
        let mut m = start;
        g.bench_function(BenchmarkId::from_parameter(imp.name()), |b| {
            b.iter(|| transpose128_with(imp, black_box(&mut m)))
        });
    }
    g.finish();

    // 2^16 columns (the OT crate's chunk: 1 MiB in, 1 MiB out) and 2^20 columns (128 rows of
    // 128 KiB in, 16 MiB out), in ns per column.
    for log_cols in [16, 20] {
        transpose_columns(c, log_cols);
    }
}

fn transpose_columns(c: &mut Criterion, log_cols: u32) {
    let cols = 1usize << log_cols;
    let row_bytes = cols / 8;
    let mut input = vec![0u8; 128 * row_bytes];
    AesPrg::new(Block(1)).fill_bytes(&mut input);
    let mut out = vec![Block::ZERO; cols];
    let mut g = c.benchmark_group(format!("transpose_128xn_2^{log_cols}_columns"));
    g.throughput(Throughput::Elements(cols as u64));
    g.sample_size(20);
    for imp in available() {
        g.bench_function(BenchmarkId::from_parameter(imp.name()), |b| {
            b.iter(|| transpose_128xn_with(imp, black_box(&input), row_bytes, &mut out))
        });
    }
    // The memory floor: copying the same 16 MiB into the output without transposing.
    g.bench_function(BenchmarkId::from_parameter("memcpy-reference"), |b| {
        b.iter(|| {
            for (o, c) in out.iter_mut().zip(black_box(&input).as_chunks::<16>().0) {
                *o = Block::from_bytes(*c);
            }
        })
    });
    g.finish();
}

fn aes_hashes(c: &mut Criterion) {
    let aes = FixedKeyAes::new(Block(0x5eed));
    let mut g = c.benchmark_group("fixed_key_aes");
    for n in [1usize << 14, 1 << 20] {
        let mut v = random_blocks(n, 2);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new("permute", n), |b| {
            b.iter(|| aes.permute(black_box(&mut v)))
        });
        g.bench_function(BenchmarkId::new("cr_hash", n), |b| {
            b.iter(|| aes.cr_hash(black_box(&mut v)))
        });
        g.bench_function(BenchmarkId::new("tccr_hash", n), |b| {
            b.iter(|| aes.tccr_hash(0, black_box(&mut v)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("aes_prg");
    let n = 1usize << 14;
    let mut v = vec![Block::ZERO; n];
    let mut prg = AesPrg::new(Block(3));
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("fill_blocks", n), |b| {
        b.iter(|| prg.fill_blocks(black_box(&mut v)))
    });
    let mut bytes = vec![0u8; 16 * n];
    g.bench_function(BenchmarkId::new("fill_bytes_16x", n), |b| {
        b.iter(|| prg.fill_bytes(black_box(&mut bytes)))
    });
    g.finish();
}

fn gf128(c: &mut Criterion) {
    let n = 1usize << 14;
    let a = random_blocks(n, 4);
    let x = random_blocks(n, 5);
    let mut g = c.benchmark_group("gf128");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("gf128_mul", n), |b| {
        b.iter(|| {
            a.iter()
                .zip(&x)
                .fold(Block::ZERO, |acc, (p, q)| acc ^ p.gf128_mul(*q))
        })
    });
    g.bench_function(BenchmarkId::new("clmul_accumulate_reduce", n), |b| {
        b.iter(|| {
            let (mut lo, mut hi) = (Block::ZERO, Block::ZERO);
            for (p, q) in a.iter().zip(&x) {
                let (l, h) = p.clmul(*q);
                lo ^= l;
                hi ^= h;
            }
            Block::gf128_reduce(lo, hi)
        })
    });
    g.bench_function(BenchmarkId::new("gf128_inner_product", n), |b| {
        b.iter(|| gf128_inner_product(black_box(&a), black_box(&x)))
    });
    g.finish();
}

criterion_group!(benches, transpose, aes_hashes, gf128);
criterion_main!(benches);
