//! SHA-256 block compressions: `sha2`'s `compress256` on one message at a time against
//! `blindjoin_core::sha256x::compress256_x2` on two at a time, for messages of 1, 2 and 3 blocks
//! (the OT row hashes' sizes), and keyed BLAKE3 of one-block messages
//! (`blindjoin_core::blake3x::Blake3Blocks`, sixteen at a time with AVX-512F). Throughput is in
//! 64-byte blocks, so criterion's time per element is the cost of one block compression.
//!
//! `cargo bench -p blindjoin-core --bench sha256x`
#![allow(missing_docs)]

use blindjoin_core::blake3x::Blake3Blocks;
use blindjoin_core::sha256x::{accelerated, compress256_x2};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sha2::block_api::compress256;
use std::hint::black_box;

/// Messages per iteration (even).
const MSGS: usize = 64;

fn bench(c: &mut Criterion) {
    let state: [u32; 8] = core::array::from_fn(|i| 0x9e37_79b9u32.wrapping_mul(i as u32 + 1));
    let x2_path = if accelerated() { "sha-ni" } else { "portable" };
    for blocks in 1..=3 {
        let msgs: Vec<Vec<[u8; 64]>> = (0..MSGS)
            .map(|i| {
                (0..blocks)
                    .map(|b| core::array::from_fn(|j| (i * 131 + b * 64 + j) as u8))
                    .collect()
            })
            .collect();
        let mut g = c.benchmark_group(format!("sha256_compress_{blocks}_block_messages"));
        g.throughput(Throughput::Elements((MSGS * blocks) as u64));
        g.bench_function(BenchmarkId::new("single", "sha2"), |b| {
            b.iter(|| {
                let mut acc = 0u32;
                for m in &msgs {
                    let mut s = black_box(state);
                    compress256(&mut s, m);
                    acc ^= s[0];
                }
                acc
            })
        });
        g.bench_function(BenchmarkId::new("x2", x2_path), |b| {
            b.iter(|| {
                let mut acc = 0u32;
                for m in msgs.chunks_exact(2) {
                    let mut s = [black_box(state); 2];
                    compress256_x2(&mut s, [&m[0], &m[1]]);
                    acc ^= s[0][0] ^ s[1][0];
                }
                acc
            })
        });
        g.finish();
    }
    let h = Blake3Blocks::new(&[7; 32]);
    let blocks: Vec<[u8; 64]> = (0..MSGS)
        .map(|i| core::array::from_fn(|j| (i * 131 + j) as u8))
        .collect();
    let counters: Vec<u64> = (0..MSGS as u64).collect();
    let mut out = vec![[0u32; 8]; MSGS];
    let mut g = c.benchmark_group("blake3_keyed_1_block_messages");
    g.throughput(Throughput::Elements(MSGS as u64));
    g.bench_function("blake3x", |b| {
        b.iter(|| {
            h.hash(black_box(&blocks), &counters, &mut out);
            out[0][0] ^ out[MSGS - 1][0]
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
