//! KKRT16 OPRF over the in-memory channel: for every instance the receiver's output equals the
//! sender's evaluation at the receiver's input and differs from its evaluations at other inputs
//! (including inputs of other instances); counts around the 128-row and 2^16-chunk boundaries;
//! several batches after one setup; code widths 1..=8; a truncated u frame, a width mismatch and
//! a width out of range return errors.

use blindjoin_core::channel::memory::MemoryChannel;
use blindjoin_core::{Block, Error};
use blindjoin_ot::base::{ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_ot::ext::kkrt::{
    DEFAULT_CODE_BLOCKS, KkrtReceiver, KkrtSender, KkrtSenderOutputs, MSG_U_COLUMNS,
};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
use rand::Rng;

const SID: [u8; 32] = [3; 32];

/// A KKRT receiver with parameter `width` set up over the Chou-Orlandi base OT (the tests'
/// session id, seed 1).
fn receiver(ch: &mut MemoryChannel, width: usize) -> blindjoin_core::Result<KkrtReceiver> {
    KkrtReceiver::setup(
        &mut ChouOrlandiSender::default(),
        width,
        ch,
        &SID,
        &mut rng(1),
    )
}

/// The matching sender (seed 2).
fn sender(ch: &mut MemoryChannel, width: usize) -> blindjoin_core::Result<KkrtSender> {
    KkrtSender::setup(
        &mut ChouOrlandiReceiver::default(),
        width,
        ch,
        &SID,
        &mut rng(2),
    )
}

fn inputs(n: usize, seed: u64) -> Vec<Block> {
    let mut r = rng(seed);
    (0..n).map(|_| Block(r.random::<u128>())).collect()
}

/// One setup, one batch per entry of `counts`.
fn run(
    width: usize,
    counts: &[usize],
) -> (Vec<Vec<Block>>, Vec<Vec<Block>>, Vec<KkrtSenderOutputs>) {
    let all: Vec<Vec<Block>> = counts
        .iter()
        .enumerate()
        .map(|(k, &n)| inputs(n, 10 * width as u64 + k as u64))
        .collect();
    let (recv, send) = run_two_party(
        |ch| {
            let mut r = receiver(ch, width).unwrap();
            all.iter()
                .map(|x| {
                    let mut out = vec![Block::ZERO; x.len()];
                    r.receive(ch, x, &mut out).unwrap();
                    out
                })
                .collect::<Vec<_>>()
        },
        |ch| {
            let mut s = sender(ch, width).unwrap();
            counts
                .iter()
                .map(|&n| s.send(ch, n).unwrap())
                .collect::<Vec<_>>()
        },
    );
    (all, recv, send)
}

fn check(x: &[Block], got: &[Block], s: &KkrtSenderOutputs) {
    assert_eq!(s.len(), x.len());
    assert_eq!(got.len(), x.len());
    let mut queries = Vec::new();
    for (i, &xi) in x.iter().enumerate() {
        queries.push((i, xi));
        // Other inputs: a neighbour, a one-bit change, and another instance's input.
        queries.push((i, Block(xi.0 ^ 1)));
        queries.push((i, Block(xi.0.wrapping_add(1 << 100))));
        queries.push((i, x[(i + 1) % x.len()]));
    }
    let mut out = vec![Block::ZERO; queries.len()];
    s.evals(&queries, &mut out).unwrap();
    for (i, (g, ev)) in got.iter().zip(out.chunks_exact(4)).enumerate() {
        assert_eq!(*g, ev[0], "instance {i}: equal input");
        assert_eq!(
            *g,
            s.eval(i, x[i]).unwrap(),
            "instance {i}: eval agrees with evals"
        );
        assert_ne!(*g, ev[1], "instance {i}: x ^ 1");
        assert_ne!(*g, ev[2], "instance {i}: x + 2^100");
        if x.len() > 1 && x[(i + 1) % x.len()] != x[i] {
            assert_ne!(*g, ev[3], "instance {i}: another instance's input");
        }
    }
}

#[test]
fn batches_on_a_recycled_buffer_match() {
    // Each batch's buffer serves the next one: the rows must start afresh, whatever the
    // previous batch left in it (sizes across the 2^16 chunk boundary, larger then smaller).
    let counts = [70_000usize, 3, 70_000, 1000];
    let all: Vec<Vec<Block>> = counts
        .iter()
        .enumerate()
        .map(|(k, &n)| inputs(n, 77 + k as u64))
        .collect();
    let (recv, evals) = run_two_party(
        |ch| {
            let mut r = receiver(ch, DEFAULT_CODE_BLOCKS).unwrap();
            all.iter()
                .map(|x| {
                    let mut out = vec![Block::ZERO; x.len()];
                    r.receive(ch, x, &mut out).unwrap();
                    out
                })
                .collect::<Vec<_>>()
        },
        |ch| {
            let mut s = sender(ch, DEFAULT_CODE_BLOCKS).unwrap();
            all.iter()
                .map(|x| {
                    let o = s.send(ch, x.len()).unwrap();
                    let ev: Vec<Block> = x
                        .iter()
                        .enumerate()
                        .map(|(i, &xi)| o.eval(i, xi).unwrap())
                        .collect();
                    s.recycle(o);
                    ev
                })
                .collect::<Vec<_>>()
        },
    );
    assert_eq!(recv, evals);
}

#[test]
fn default_width_counts_and_chunk_boundary() {
    let counts = [1usize, 127, 128, 129, 1000, 65_537];
    let (all, recv, send) = run(DEFAULT_CODE_BLOCKS, &counts);
    for ((x, g), s) in all.iter().zip(&recv).zip(&send) {
        check(x, g, s);
    }
    // Batches after one setup continue the instance index and are fresh.
    assert_eq!(send[1].first_index(), 1);
    assert_eq!(send[5].first_index(), 1 + 127 + 128 + 129 + 1000);
    let y = all[0][0];
    assert_ne!(send[0].eval(0, y).unwrap(), send[1].eval(0, y).unwrap());
    // Out of range is an error, not a panic.
    assert!(matches!(
        send[2].eval(128, y),
        Err(Error::InvalidParam { .. })
    ));
    let mut out = vec![Block::ZERO; 2];
    assert!(matches!(
        send[2].evals(&[(0, y)], &mut out),
        Err(Error::InvalidParam { .. })
    ));
}

#[test]
fn equal_inputs_in_different_instances_give_different_outputs() {
    let x = vec![Block(42); 300];
    let (recv, send) = run_two_party(
        |ch| {
            let mut r = receiver(ch, 4).unwrap();
            let mut out = vec![Block::ZERO; x.len()];
            r.receive(ch, &x, &mut out).unwrap();
            out
        },
        |ch| {
            let mut s = sender(ch, 4).unwrap();
            s.send(ch, 300).unwrap()
        },
    );
    check(&x, &recv, &send);
    let distinct: std::collections::HashSet<u128> = recv.iter().map(|b| b.0).collect();
    assert_eq!(distinct.len(), x.len());
}

#[test]
fn every_width_and_empty_batches() {
    for width in 1..=8 {
        let (all, recv, send) = run(width, &[0, 129, 0, 7]);
        for ((x, g), s) in all.iter().zip(&recv).zip(&send) {
            if !x.is_empty() {
                check(x, g, s);
            }
        }
        assert!(send[0].is_empty());
        assert_eq!(send[3].first_index(), 129);
    }
}

#[test]
fn bad_width_is_invalid_before_anything_is_sent() {
    for width in [0usize, 9] {
        let (recv, send) = run_two_party(
            |ch| {
                let mut t = Tamper::new(ch, Target::first(MSG_U_COLUMNS), Attack::HangUp);
                let r = KkrtReceiver::setup(
                    &mut ChouOrlandiSender::default(),
                    width,
                    &mut t,
                    &SID,
                    &mut rng(1),
                );
                (r.map(|_| ()), t.frames().to_vec())
            },
            |ch| {
                let mut t = Tamper::new(ch, Target::first(MSG_U_COLUMNS), Attack::HangUp);
                let s = KkrtSender::setup(
                    &mut ChouOrlandiReceiver::default(),
                    width,
                    &mut t,
                    &SID,
                    &mut rng(2),
                );
                (s.map(|_| ()), t.frames().to_vec())
            },
        );
        for (result, frames) in [recv, send] {
            match result {
                Err(Error::InvalidParam { field, .. }) => assert_eq!(field, "width"),
                other => panic!("width {width}: expected InvalidParam(width), got {other:?}"),
            }
            assert_eq!(frames, [], "width {width}: nothing is sent");
        }
    }
}

#[test]
fn truncated_u_frame_is_malformed() {
    let x = inputs(500, 7);
    let (_, send) = run_two_party(
        |ch| {
            let mut r = receiver(ch, 4).unwrap();
            let mut t = Tamper::new(ch, Target::first(MSG_U_COLUMNS), Attack::Truncate(100));
            let mut out = vec![Block::ZERO; x.len()];
            let _ = r.receive(&mut t, &x, &mut out);
        },
        |ch| {
            let mut s = sender(ch, 4).unwrap();
            s.send(ch, 500)
        },
    );
    assert!(matches!(send.unwrap_err(), Error::Malformed { .. }));
}

#[test]
fn width_mismatch_is_an_error_not_a_hang() {
    // The receiver runs 4·128 base OTs, the sender expects 5·128: the base OT's bounded reader
    // or the u frame's length check must fail on one side, and the other side must not hang.
    let x = inputs(100, 8);
    let (recv, send) = run_two_party(
        |ch| {
            let mut r = receiver(ch, 4)?;
            let mut out = vec![Block::ZERO; x.len()];
            r.receive(ch, &x, &mut out)
        },
        |ch| {
            let mut s = sender(ch, 5)?;
            s.send(ch, 100).map(|_| ())
        },
    );
    assert!(recv.is_err() || send.is_err());
    assert!(
        send.is_err(),
        "the sender cannot accept a mismatched matrix"
    );
}

/// Timing of 2^20 receiver instances and 3·2^20 sender evaluations (both parties, in-memory
/// channel, setup included): `cargo test --release -p blindjoin-ot --test ot kkrt:: -- --ignored
/// --nocapture`.
#[test]
#[ignore = "timing"]
fn timing_2_20_instances() {
    let m = 1usize << 20;
    let x = inputs(m, 5);
    let start = std::time::Instant::now();
    let (got, (ev, t_ext)) = run_two_party(
        |ch| {
            let mut r = receiver(ch, 4).unwrap();
            let mut out = vec![Block::ZERO; m];
            r.receive(ch, &x, &mut out).unwrap();
            out
        },
        |ch| {
            let mut s = sender(ch, 4).unwrap();
            let o = s.send(ch, m).unwrap();
            let t_ext = start.elapsed();
            let q: Vec<(usize, Block)> = (0..3 * m).map(|k| (k / 3, x[k / 3])).collect();
            let mut out = vec![Block::ZERO; q.len()];
            o.evals(&q, &mut out).unwrap();
            (out, t_ext)
        },
    );
    println!(
        "KKRT 2^20 instances + 3·2^20 evaluations: {:?} (sender rows at {t_ext:?})",
        start.elapsed()
    );
    for (k, e) in ev.iter().enumerate() {
        assert_eq!(*e, got[k / 3]);
    }
}
