//! Per-party compute of the OT extensions, in OTs per second on one core, without the network:
//! the receiver sends its u columns into a sink, the sender reads a replayed frame of the right
//! length (its outputs are then garbage, but its work is exactly a real chunk's). Each iteration
//! is one chunk of 2^16 OTs after one real setup. End to end over TCP is `blindjoin bench-ot`.
//! The last group times one setup over CO15 and over the tests' ideal base OT.
//!
//! `cargo bench -p blindjoin-ot --bench ot_ext -- --warm-up-time 1 --measurement-time 3`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_core::Block;
use blindjoin_core::prg::AesPrg;
use blindjoin_ot::base::ideal::{IdealBaseOtReceiver, IdealBaseOtSender};
use blindjoin_ot::base::{ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_ot::ext::iknp::{IknpReceiver, IknpSender};
use blindjoin_ot::ext::kk13::{Kk13Receiver, Kk13Sender, code_len};
use blindjoin_ot::ext::kkrt::{DEFAULT_CODE_BLOCKS, KkrtReceiver, KkrtSender};
use blindjoin_testkit::{Replay, rng, run_two_party};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const M: usize = 1 << 16;
const SID: [u8; 32] = [1; 32];

fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    AesPrg::new(Block(99)).fill_bytes(&mut v);
    v
}

fn iknp(c: &mut Criterion) {
    let (mut r, mut s) = run_two_party(
        |ch| IknpReceiver::setup(&mut ChouOrlandiSender::default(), ch, &SID, &mut rng(1)).unwrap(),
        |ch| IknpSender::setup(&mut ChouOrlandiReceiver::default(), ch, &SID, &mut rng(2)).unwrap(),
    );
    let mut g = c.benchmark_group("iknp random OT, 2^16");
    g.throughput(Throughput::Elements(M as u64));
    let choices: Vec<bool> = (0..M).map(|i| (i * 7) % 3 == 0).collect();
    let mut out = vec![Block::ZERO; M];
    let mut sink = Replay::new(Vec::new());
    g.bench_function("receiver", |b| {
        b.iter(|| r.receive_random(&mut sink, &choices, &mut out).unwrap())
    });
    let mut replay = Replay::new(random_bytes(128 * M / 8));
    let mut pairs = vec![[Block::ZERO; 2]; M];
    g.bench_function("sender", |b| {
        b.iter(|| s.send_random(&mut replay, &mut pairs).unwrap())
    });
    g.finish();
}

fn kk13(c: &mut Criterion) {
    let (mut r, mut s) = run_two_party(
        |ch| {
            Kk13Receiver::setup(&mut ChouOrlandiSender::default(), 8, ch, &SID, &mut rng(1))
                .unwrap()
        },
        |ch| {
            Kk13Sender::setup(
                &mut ChouOrlandiReceiver::default(),
                8,
                ch,
                &SID,
                &mut rng(2),
            )
            .unwrap()
        },
    );
    let mut g = c.benchmark_group("kk13 1-out-of-256 OT, 2^16");
    g.throughput(Throughput::Elements(M as u64));
    let choices: Vec<u32> = (0..M as u32).map(|i| (i * 37) % 256).collect();
    let mut out = vec![Block::ZERO; M];
    let mut sink = Replay::new(Vec::new());
    g.bench_function("receiver", |b| {
        b.iter(|| r.receive_random(&mut sink, &choices, &mut out).unwrap())
    });
    let mut replay = Replay::new(random_bytes(code_len(8) * M / 8));
    // The sender's extension, plus the one output per OT a PSI sender computes.
    let queries: Vec<(usize, u32)> = (0..M).map(|i| (i, choices[i])).collect();
    g.bench_function("sender (one output per OT)", |b| {
        b.iter(|| {
            let o = s.send_random(&mut replay, M).unwrap();
            o.outputs(&queries, &mut out).unwrap();
        })
    });
    g.finish();
}

fn kkrt(c: &mut Criterion) {
    let w = DEFAULT_CODE_BLOCKS;
    let (mut r, mut s) = run_two_party(
        |ch| {
            KkrtReceiver::setup(&mut ChouOrlandiSender::default(), w, ch, &SID, &mut rng(1))
                .unwrap()
        },
        |ch| {
            KkrtSender::setup(
                &mut ChouOrlandiReceiver::default(),
                w,
                ch,
                &SID,
                &mut rng(2),
            )
            .unwrap()
        },
    );
    let mut g = c.benchmark_group("kkrt OPRF, 2^16 instances");
    g.throughput(Throughput::Elements(M as u64));
    let inputs: Vec<Block> = (0..M as u128).map(|i| Block(i * 0x9e37_79b9)).collect();
    let mut out = vec![Block::ZERO; 3 * M];
    let mut sink = Replay::new(Vec::new());
    g.bench_function("receiver", |b| {
        b.iter(|| r.receive(&mut sink, &inputs, &mut out[..M]).unwrap())
    });
    let mut replay = Replay::new(random_bytes(128 * w * M / 8));
    let queries: Vec<(usize, Block)> = (0..3 * M).map(|k| (k / 3, inputs[k / 3])).collect();
    g.bench_function("sender (3 evaluations per instance)", |b| {
        b.iter(|| {
            let keys = s.send(&mut replay, M).unwrap();
            keys.evals(&queries, &mut out).unwrap();
        })
    });
    g.finish();
}

/// One KKRT setup (k = 512 base OTs, both parties over the in-memory channel) over CO15 and over
/// the insecure ideal base OT of the tests, which shows how much of a test's time the base OTs
/// take.
fn setup(c: &mut Criterion) {
    let w = DEFAULT_CODE_BLOCKS;
    let mut g = c.benchmark_group("kkrt setup, 512 base OTs");
    g.sample_size(20);
    g.bench_function("co15", |b| {
        b.iter(|| {
            run_two_party(
                |ch| {
                    KkrtReceiver::setup(&mut ChouOrlandiSender::default(), w, ch, &SID, &mut rng(1))
                        .unwrap()
                },
                |ch| {
                    KkrtSender::setup(
                        &mut ChouOrlandiReceiver::default(),
                        w,
                        ch,
                        &SID,
                        &mut rng(2),
                    )
                    .unwrap()
                },
            )
        })
    });
    g.bench_function("ideal (tests only)", |b| {
        b.iter(|| {
            run_two_party(
                |ch| {
                    KkrtReceiver::setup(&mut IdealBaseOtSender::default(), w, ch, &SID, &mut rng(1))
                        .unwrap()
                },
                |ch| {
                    KkrtSender::setup(
                        &mut IdealBaseOtReceiver::default(),
                        w,
                        ch,
                        &SID,
                        &mut rng(2),
                    )
                    .unwrap()
                },
            )
        })
    });
    g.finish();
}

criterion_group!(benches, iknp, kk13, kkrt, setup);
criterion_main!(benches);
