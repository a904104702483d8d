//! Compares SHA-256 and BLAKE3 for `hash_to_item` on identifier-sized records, to justify the
//! choice recorded in `blindjoin_core::item`.
#![allow(missing_docs)]

use blindjoin_core::item::items_from_records;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

/// BLAKE3 with the domain as a derive-key context (precomputed once), the record length-prefixed.
fn blake3_items(records: &[String]) -> Vec<[u8; 16]> {
    let base = blake3::Hasher::new_derive_key("blindjoin/item/v1");
    records
        .iter()
        .map(|r| {
            let mut h = base.clone();
            h.update(&(r.len() as u64).to_le_bytes());
            h.update(r.as_bytes());
            let mut out = [0u8; 16];
            out.copy_from_slice(&h.finalize().as_bytes()[..16]);
            out
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let records: Vec<String> = (0..1024)
        .map(|i| format!("user.{i:06}@example.com"))
        .collect();
    let mut g = c.benchmark_group("hash_to_item");
    g.throughput(Throughput::Elements(records.len() as u64));
    g.bench_function("sha256", |b| {
        b.iter(|| black_box(items_from_records(&records)))
    });
    g.bench_function("blake3", |b| b.iter(|| black_box(blake3_items(&records))));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
