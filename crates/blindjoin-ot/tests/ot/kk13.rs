//! KK13 random 1-out-of-2^η OT extension over the in-memory channel: for every OT the receiver's
//! output equals the sender's message at the choice and differs from the other messages; counts
//! around the 128-row and 2^16-chunk boundaries; several batches after one setup; a truncated
//! u frame, a choice ≥ N and an η out of range return errors.

use blindjoin_core::Block;
use blindjoin_core::Error;
use blindjoin_core::channel::memory::MemoryChannel;
use blindjoin_ot::base::{ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_ot::ext::kk13::{
    Kk13Receiver, Kk13Sender, Kk13SenderOutputs, MAX_ETA, MSG_U_COLUMNS,
};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
use rand::Rng;

const SID: [u8; 32] = [9; 32];

/// A KK13 receiver with parameter `eta` set up over the Chou-Orlandi base OT (the tests'
/// session id, seed 1).
fn receiver(ch: &mut MemoryChannel, eta: u32) -> blindjoin_core::Result<Kk13Receiver> {
    Kk13Receiver::setup(
        &mut ChouOrlandiSender::default(),
        eta,
        ch,
        &SID,
        &mut rng(1),
    )
}

/// The matching sender (seed 2).
fn sender(ch: &mut MemoryChannel, eta: u32) -> blindjoin_core::Result<Kk13Sender> {
    Kk13Sender::setup(
        &mut ChouOrlandiReceiver::default(),
        eta,
        ch,
        &SID,
        &mut rng(2),
    )
}

/// Choices covering every value of [0, N) first (cyclically), then random.
fn choices(eta: u32, n: usize, seed: u64) -> Vec<u32> {
    let big_n = 1u32 << eta;
    let mut r = rng(seed);
    (0..n)
        .map(|i| {
            if i < 2 * big_n as usize {
                (i as u32).wrapping_mul(7).wrapping_add(seed as u32) % big_n
            } else {
                r.random_range(0..big_n)
            }
        })
        .collect()
}

/// Runs one setup and one batch per entry of `counts`.
fn run(eta: u32, counts: &[usize]) -> (Vec<Vec<u32>>, Vec<Vec<Block>>, Vec<Kk13SenderOutputs>) {
    let all: Vec<Vec<u32>> = counts
        .iter()
        .enumerate()
        .map(|(k, &n)| choices(eta, n, k as u64 + 100 * u64::from(eta)))
        .collect();
    let (recv, send) = run_two_party(
        |ch| {
            let mut r = receiver(ch, eta).unwrap();
            all.iter()
                .map(|c| {
                    let mut out = vec![Block::ZERO; c.len()];
                    r.receive_random(ch, c, &mut out).unwrap();
                    out
                })
                .collect::<Vec<_>>()
        },
        |ch| {
            let mut s = sender(ch, eta).unwrap();
            counts
                .iter()
                .map(|&n| s.send_random(ch, n).unwrap())
                .collect::<Vec<_>>()
        },
    );
    (all, recv, send)
}

fn check(eta: u32, c: &[u32], got: &[Block], s: &Kk13SenderOutputs, others: usize) {
    let big_n = 1u32 << eta;
    assert_eq!(s.len(), c.len());
    assert_eq!(got.len(), c.len());
    let mut seen = vec![false; big_n as usize];
    for (i, (&v, g)) in c.iter().zip(got).enumerate() {
        seen[v as usize] = true;
        assert_eq!(*g, s.output(i, v).unwrap(), "η = {eta}, OT {i}, choice {v}");
        if big_n <= 16 {
            for w in (0..big_n).filter(|&w| w != v) {
                assert_ne!(*g, s.output(i, w).unwrap(), "η = {eta}, OT {i}, w = {w}");
            }
        } else {
            for k in 1..=others as u32 {
                let w = (v + k * 37) % big_n;
                if w != v {
                    assert_ne!(*g, s.output(i, w).unwrap(), "η = {eta}, OT {i}, w = {w}");
                }
            }
        }
    }
    if c.len() >= 2 * big_n as usize {
        assert!(seen.iter().all(|&x| x), "η = {eta}: every choice exercised");
    }
}

const COUNTS: [usize; 5] = [1, 127, 128, 129, 1000];

#[test]
fn small_eta_all_other_messages_differ() {
    for eta in [1u32, 2, 4] {
        let (all, recv, send) = run(eta, &COUNTS);
        for ((c, g), s) in all.iter().zip(&recv).zip(&send) {
            check(eta, c, g, s, 0);
        }
        // Batches after one setup continue the OT index and are fresh.
        assert_eq!(send[1].first_index(), 1);
        assert_eq!(send[4].first_index(), 1 + 127 + 128 + 129);
        assert_ne!(send[0].output(0, 0).unwrap(), send[1].output(0, 0).unwrap());
    }
}

#[test]
fn eta8_counts_and_chunk_boundary() {
    let counts = [1usize, 127, 128, 129, 1000, 65_537];
    let (all, recv, send) = run(8, &counts);
    for ((c, g), s) in all.iter().zip(&recv).zip(&send) {
        check(8, c, g, s, 8);
    }
    // The batch variant agrees with `output`.
    let s = &send[5];
    let q: Vec<(usize, u32)> = (0..s.len()).map(|i| (i, all[5][i] ^ 1)).collect();
    let mut out = vec![Block::ZERO; q.len()];
    s.outputs(&q, &mut out).unwrap();
    for (k, &(i, w)) in q.iter().enumerate() {
        assert_eq!(out[k], s.output(i, w).unwrap());
    }
    let ok: Vec<(usize, u32)> = (0..s.len()).map(|i| (i, all[5][i])).collect();
    s.outputs(&ok, &mut out).unwrap();
    assert_eq!(out, recv[5]);
    // Out-of-range queries are errors, not panics.
    assert!(matches!(
        s.output(s.len(), 0),
        Err(Error::InvalidParam { .. })
    ));
    assert!(matches!(s.output(0, 256), Err(Error::InvalidParam { .. })));
}

#[test]
fn eta9_once() {
    let (all, recv, send) = run(9, &[1000, 129]);
    for ((c, g), s) in all.iter().zip(&recv).zip(&send) {
        check(9, c, g, s, 8);
    }
}

#[test]
fn eta10_and_empty_batches() {
    let (all, recv, send) = run(10, &[0, 2100, 0, 5]);
    for ((c, g), s) in all.iter().zip(&recv).zip(&send) {
        check(10, c, g, s, 8);
    }
    assert!(send[0].is_empty());
    assert_eq!(send[3].first_index(), 2100);
}

#[test]
fn truncated_u_frame_is_malformed() {
    let c = choices(8, 500, 3);
    let (_, send) = run_two_party(
        |ch| {
            let mut r = receiver(ch, 8).unwrap();
            // After setup, the receiver's first frame is its u columns; cut it.
            let mut t = Tamper::new(ch, Target::first(MSG_U_COLUMNS), Attack::Truncate(100));
            let mut out = vec![Block::ZERO; c.len()];
            let _ = r.receive_random(&mut t, &c, &mut out);
        },
        |ch| {
            let mut s = sender(ch, 8).unwrap();
            s.send_random(ch, 500)
        },
    );
    assert!(matches!(send.unwrap_err(), Error::Malformed { .. }));
}

#[test]
fn choice_out_of_range_is_invalid() {
    for eta in [1u32, 4, 8] {
        let (recv, _) = run_two_party(
            |ch| {
                let mut r = receiver(ch, eta).unwrap();
                let mut c = vec![0u32; 10];
                c[7] = 1 << eta;
                let mut out = vec![Block::ZERO; c.len()];
                r.receive_random(ch, &c, &mut out)
            },
            |ch| {
                sender(ch, eta).unwrap();
            },
        );
        assert!(matches!(recv.unwrap_err(), Error::InvalidParam { .. }));
    }
}

#[test]
fn bad_eta_is_invalid_before_anything_is_sent() {
    for eta in [0u32, MAX_ETA + 1] {
        let (recv, send) = run_two_party(
            |ch| {
                let mut t = Tamper::new(ch, Target::first(MSG_U_COLUMNS), Attack::HangUp);
                let r = Kk13Receiver::setup(
                    &mut ChouOrlandiSender::default(),
                    eta,
                    &mut t,
                    &SID,
                    &mut rng(1),
                );
                (r.map(|_| ()), t.frames().to_vec())
            },
            |ch| {
                let mut t = Tamper::new(ch, Target::first(MSG_U_COLUMNS), Attack::HangUp);
                let s = Kk13Sender::setup(
                    &mut ChouOrlandiReceiver::default(),
                    eta,
                    &mut t,
                    &SID,
                    &mut rng(2),
                );
                (s.map(|_| ()), t.frames().to_vec())
            },
        );
        for (result, frames) in [recv, send] {
            match result {
                Err(Error::InvalidParam { field, .. }) => assert_eq!(field, "eta"),
                other => panic!("η = {eta}: expected InvalidParam(eta), got {other:?}"),
            }
            assert_eq!(frames, [], "η = {eta}: nothing is sent");
        }
    }
}

/// Timing of 10^6 random 1-out-of-256 OTs (both parties, in-memory channel, setup included):
/// `cargo test --release -p blindjoin-ot --test ot kk13:: -- --ignored --nocapture`.
#[test]
#[ignore = "timing"]
fn timing_one_million_1_out_of_256() {
    let m = 1_000_000usize;
    let c = choices(8, m, 5);
    let start = std::time::Instant::now();
    let (got, (send, t_ext)) = run_two_party(
        |ch| {
            let mut r = receiver(ch, 8).unwrap();
            let mut out = vec![Block::ZERO; m];
            r.receive_random(ch, &c, &mut out).unwrap();
            out
        },
        |ch| {
            let mut s = sender(ch, 8).unwrap();
            let o = s.send_random(ch, m).unwrap();
            (o, start.elapsed())
        },
    );
    let t_both = start.elapsed();
    let q: Vec<(usize, u32)> = (0..m).map(|i| (i, c[i])).collect();
    let mut out = vec![Block::ZERO; m];
    let t0 = std::time::Instant::now();
    send.outputs(&q, &mut out).unwrap();
    let t_hash = t0.elapsed();
    assert_eq!(out, got);
    println!(
        "KK13 η = 8, 10^6 OTs: extension + receiver outputs {t_both:?} (sender rows ready at \
         {t_ext:?}); sender 10^6 outputs (one per OT) {t_hash:?}"
    );
}
