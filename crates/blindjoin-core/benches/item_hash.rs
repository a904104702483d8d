//! Compares SHA-256 and BLAKE3 for `hash_to_item` on identifier-sized records, to justify the
//! choice recorded in `blindjoin_core::item`.
#![allow(missing_docs)]

use blindjoin_core::item::{ITEM_DOMAIN, hash_to_item};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn blake3_item(domain: &[u8], bytes: &[u8]) -> [u8; 16] {
    let mut h = blake3::Hasher::new();
    h.update(&(domain.len() as u64).to_le_bytes());
    h.update(domain);
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
    let mut out = [0u8; 16];
    out.copy_from_slice(&h.finalize().as_bytes()[..16]);
    out
}

fn bench(c: &mut Criterion) {
    let records: Vec<String> = (0..1024)
        .map(|i| format!("user.{i:06}@example.com"))
        .collect();
    let mut g = c.benchmark_group("hash_to_item");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.bench_function("sha256", |b| {
        b.iter(|| {
            for r in &records {
                black_box(hash_to_item(ITEM_DOMAIN, r.as_bytes()));
            }
        })
    });
    g.bench_function("blake3", |b| {
        b.iter(|| {
            for r in &records {
                black_box(blake3_item(ITEM_DOMAIN, r.as_bytes()));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
