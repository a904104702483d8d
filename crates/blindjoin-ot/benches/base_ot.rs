//! Time of n = 512 Chou-Orlandi random base OTs, each party on a rayon pool of one thread:
//!
//! - `base_ot_co15/both_parties`: sender and receiver over the in-memory channel, in two threads
//!   (so the time is about that of the slower party, the sender, plus the receiver's part that
//!   precedes its message);
//! - `base_ot_co15/sender_only`: the sender alone against a stand-in channel that discards `S`
//!   and answers with one precomputed frame of 512 receiver points: `S = a·G`, `T = a·S` and the
//!   decoding and key derivation of every `R_i`, with no receiver work in the time;
//! - `base_ot_endemic/both_parties`: the same n Masny-Rindal endemic OTs, both parties.
//!
//! `cargo bench -p blindjoin-ot --bench base_ot`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_ot::base::endemic::{EndemicReceiver, EndemicSender};
use blindjoin_ot::base::{BaseOtReceiver, BaseOtSender, ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_testkit::{Replay, rng, run_two_party};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand::{Rng, RngCore};
use std::hint::black_box;
use std::time::Duration;

const N: usize = 512;
const SID: [u8; 32] = [7; 32];

fn one_thread_pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
}

/// N encodings of random points `b_i·G`, as an honest receiver's message looks to the sender.
fn receiver_points() -> Vec<u8> {
    let mut r = rng(3);
    (0..N)
        .flat_map(|_| {
            let mut wide = [0u8; 64];
            r.fill_bytes(&mut wide);
            RistrettoPoint::mul_base(&Scalar::from_bytes_mod_order_wide(&wide))
                .compress()
                .to_bytes()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let sender_pool = one_thread_pool();
    let receiver_pool = one_thread_pool();
    let mut choice_rng = rng(1);
    let choices: Vec<bool> = (0..N).map(|_| choice_rng.random()).collect();

    let run = |seed: u64| {
        run_two_party(
            |ch| {
                sender_pool.install(|| {
                    ChouOrlandiSender::default().send_random(ch, &SID, N, &mut rng(seed))
                })
            },
            |ch| {
                receiver_pool.install(|| {
                    ChouOrlandiReceiver::default().receive_random(
                        ch,
                        &SID,
                        &choices,
                        &mut rng(seed + 1),
                    )
                })
            },
        )
    };
    // The keys must be right before their speed means anything.
    let (s, r) = run(10);
    let (s, r) = (s.unwrap(), r.unwrap());
    for ((pair, key), &c) in s.iter().zip(&r).zip(&choices) {
        assert_eq!(pair[usize::from(c)], *key);
        assert_ne!(pair[usize::from(!c)], *key);
    }

    let mut g = c.benchmark_group("base_ot_co15");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(10));
    let mut seed = 100;
    g.bench_function("both_parties", |b| {
        b.iter(|| {
            seed += 2;
            let (s, r) = run(seed);
            black_box((s.unwrap(), r.unwrap()))
        })
    });

    let points = receiver_points();
    g.bench_function("sender_only", |b| {
        b.iter(|| {
            seed += 1;
            let mut ch = Replay::new(points.clone());
            let keys = sender_pool.install(|| {
                ChouOrlandiSender::default().send_random(&mut ch, &SID, N, &mut rng(seed))
            });
            black_box(keys.unwrap())
        })
    });
    g.finish();

    // Masny-Rindal endemic OT, the malicious-secure base OT, both parties as above.
    let run_endemic = |seed: u64| {
        run_two_party(
            |ch| {
                sender_pool
                    .install(|| EndemicSender::default().send_random(ch, &SID, N, &mut rng(seed)))
            },
            |ch| {
                receiver_pool.install(|| {
                    EndemicReceiver::default().receive_random(
                        ch,
                        &SID,
                        &choices,
                        &mut rng(seed + 1),
                    )
                })
            },
        )
    };
    let (s, r) = run_endemic(10);
    let (s, r) = (s.unwrap(), r.unwrap());
    for ((pair, key), &c) in s.iter().zip(&r).zip(&choices) {
        assert_eq!(pair[usize::from(c)], *key);
    }
    let mut g = c.benchmark_group("base_ot_endemic");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("both_parties", |b| {
        b.iter(|| {
            seed += 2;
            let (s, r) = run_endemic(seed);
            black_box((s.unwrap(), r.unwrap()))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
