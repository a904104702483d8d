//! Base OT (Chou-Orlandi on Ristretto255): the receiver's key is the sender's key at its choice
//! and differs from the other one; keys depend on the session id; tampered, truncated, overlong,
//! degenerate and missing messages end in the right error on the side that sees them.

use blindjoin_core::Error;
use blindjoin_core::channel::memory::MemoryChannel;
use blindjoin_core::channel::{FrameReceiver, FrameSender};
use blindjoin_ot::base::{
    BaseOtReceiver, BaseOtSender, ChouOrlandiReceiver, ChouOrlandiSender, FRAME_POINTS,
    MAX_BASE_OTS, MSG_RECEIVER_POINTS, MSG_SENDER_POINT, POINT_LEN,
};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand::Rng;
use std::collections::HashSet;
use std::time::Instant;

type SenderKeys = Vec<[[u8; 16]; 2]>;
type ReceiverKeys = Vec<[u8; 16]>;
type Outcome = (
    blindjoin_core::Result<SenderKeys>,
    blindjoin_core::Result<ReceiverKeys>,
);

const SID: [u8; 32] = [0x5a; 32];

fn random_choices(n: usize, seed: u64) -> Vec<bool> {
    let mut r = rng(seed);
    (0..n).map(|_| r.random()).collect()
}

/// Runs the honest protocol with the given seeds.
fn run(sid: [u8; 32], n: usize, choices: &[bool], seeds: (u64, u64)) -> Outcome {
    run_two_party(
        |ch| ChouOrlandiSender::default().send_random(ch, &sid, n, &mut rng(seeds.0)),
        |ch| ChouOrlandiReceiver::default().receive_random(ch, &sid, choices, &mut rng(seeds.1)),
    )
}

/// Runs the protocol with frame `frame` of the sender's point S (`tamper_sender`) or of the
/// receiver's points R_i damaged by `attack`.
fn run_tampered(n: usize, tamper_sender: bool, frame: usize, attack: Attack) -> Outcome {
    let msg = if tamper_sender {
        MSG_SENDER_POINT
    } else {
        MSG_RECEIVER_POINTS
    };
    let target = Target::frame(msg, frame);
    let choices = random_choices(n, 7);
    let choices = &choices;
    let attack_r = attack.clone();
    run_two_party(
        move |ch| {
            if tamper_sender {
                let mut t = Tamper::new(ch, target, attack);
                ChouOrlandiSender::default().send_random(&mut t, &SID, n, &mut rng(1))
            } else {
                ChouOrlandiSender::default().send_random(ch, &SID, n, &mut rng(1))
            }
        },
        move |ch| {
            if tamper_sender {
                ChouOrlandiReceiver::default().receive_random(ch, &SID, choices, &mut rng(2))
            } else {
                let mut t = Tamper::new(ch, target, attack_r);
                ChouOrlandiReceiver::default().receive_random(&mut t, &SID, choices, &mut rng(2))
            }
        },
    )
}

/// Runs the real sender against a fake receiver that answers `S` with `make_points(S)`.
fn run_fake_receiver(
    n: usize,
    make_points: impl FnOnce(&[u8]) -> Vec<u8> + Send,
) -> blindjoin_core::Result<SenderKeys> {
    run_two_party(
        |ch| ChouOrlandiSender::default().send_random(ch, &SID, n, &mut rng(1)),
        |ch: &mut MemoryChannel| {
            let s = ch.recv(MSG_SENDER_POINT, POINT_LEN).unwrap();
            ch.send(MSG_RECEIVER_POINTS, &make_points(&s)).unwrap();
        },
    )
    .0
}

/// `n` encodings of random valid points.
fn valid_points(n: usize, seed: u64) -> Vec<u8> {
    let mut r = rng(seed);
    let mut out = Vec::with_capacity(n * POINT_LEN);
    for _ in 0..n {
        let mut wide = [0u8; 64];
        r.fill(&mut wide[..]);
        let p = RistrettoPoint::mul_base(&Scalar::from_bytes_mod_order_wide(&wide));
        out.extend_from_slice(p.compress().as_bytes());
    }
    out
}

fn assert_malformed(r: &blindjoin_core::Result<impl std::fmt::Debug>, msg: &str, needle: &str) {
    match r {
        Err(Error::Malformed { message, reason }) => {
            assert_eq!(*message, msg, "reason: {reason}");
            assert!(
                reason.contains(needle),
                "{reason:?} should mention {needle:?}"
            );
        }
        other => panic!("expected Malformed({msg}, ..{needle}..), got {other:?}"),
    }
}

fn assert_peer_closed(r: &blindjoin_core::Result<impl std::fmt::Debug>) {
    assert!(
        matches!(r, Err(Error::PeerClosed { .. })),
        "expected PeerClosed, got {r:?}"
    );
}

#[test]
fn receiver_gets_the_chosen_key_and_not_the_other() {
    // 2·FRAME_POINTS + 1 crosses two frame boundaries of the receiver's message.
    for (k, n) in [1, 2, 127, 128, 129, 1000, 2 * FRAME_POINTS + 1]
        .into_iter()
        .enumerate()
    {
        let choices = random_choices(n, 100 + k as u64);
        let (s, r) = run(SID, n, &choices, (10 + k as u64, 20 + k as u64));
        let (s, r) = (s.unwrap(), r.unwrap());
        assert_eq!((s.len(), r.len()), (n, n));
        for (i, ((pair, key), &c)) in s.iter().zip(&r).zip(&choices).enumerate() {
            assert_eq!(*key, pair[usize::from(c)], "n = {n}, OT {i}: wrong key");
            assert_ne!(
                *key,
                pair[usize::from(!c)],
                "n = {n}, OT {i}: both keys equal"
            );
        }
        // No key repeats across the batch (the OT index enters every key).
        let distinct: HashSet<[u8; 16]> = s.iter().flatten().copied().collect();
        assert_eq!(distinct.len(), 2 * n, "n = {n}: repeated keys");
    }
}

#[test]
fn all_zero_and_all_one_choices() {
    for bit in [false, true] {
        let choices = vec![bit; 65];
        let (s, r) = run(SID, 65, &choices, (3, 4));
        let (s, r) = (s.unwrap(), r.unwrap());
        for (pair, key) in s.iter().zip(&r) {
            assert_eq!(*key, pair[usize::from(bit)]);
        }
    }
}

#[test]
fn zero_ots_exchange_nothing() {
    let (s, r) = run(SID, 0, &[], (1, 2));
    assert!(s.unwrap().is_empty());
    assert!(r.unwrap().is_empty());
}

#[test]
fn keys_depend_on_the_session_id_and_on_fresh_randomness() {
    let n = 128;
    let choices = random_choices(n, 9);
    let (s1, r1) = run(SID, n, &choices, (1, 2));
    let (s2, r2) = run([0xa5; 32], n, &choices, (1, 2));
    let (s1, r1, s2, r2) = (s1.unwrap(), r1.unwrap(), s2.unwrap(), r2.unwrap());
    for i in 0..n {
        assert_ne!(s1[i][0], s2[i][0], "OT {i}");
        assert_ne!(s1[i][1], s2[i][1], "OT {i}");
        assert_ne!(r1[i], r2[i], "OT {i}");
    }
    // The same seeds and sid reproduce the run, so the difference above is the sid's.
    let (s3, r3) = run(SID, n, &choices, (1, 2));
    assert_eq!(s1, s3.unwrap());
    assert_eq!(r1, r3.unwrap());
    // A fresh sender secret under the same sid gives unrelated keys.
    let (s4, _) = run(SID, n, &choices, (77, 2));
    let s4 = s4.unwrap();
    assert!((0..n).all(|i| s1[i][0] != s4[i][0] && s1[i][1] != s4[i][1]));
}

#[test]
fn a_point_that_does_not_decode_is_malformed_naming_its_index() {
    // Flipping the lowest bit of an encoding's first byte makes it "negative" (or
    // non-canonical), which RFC 9496 decoding rejects.
    for (n, frame, at, index) in [
        (1, 0, 0, 0),
        (129, 0, 57, 57),
        (129, 0, 128, 128),
        (FRAME_POINTS + 10, 1, 5, FRAME_POINTS + 5),
    ] {
        let (s, _) = run_tampered(n, false, frame, Attack::FlipBit(at * POINT_LEN));
        assert_malformed(&s, MSG_RECEIVER_POINTS, &format!("element {index} "));
    }
    let (_, r) = run_tampered(16, true, 0, Attack::FlipBit(0));
    assert_malformed(&r, MSG_SENDER_POINT, "element 0 ");
}

#[test]
fn identity_points_are_rejected() {
    // S = identity.
    let (s, r) = run_tampered(8, true, 0, Attack::Replace(vec![0; POINT_LEN]));
    assert_malformed(&r, MSG_SENDER_POINT, "identity");
    // The receiver closed its side, so the sender stops waiting.
    assert_peer_closed(&s);

    // R_i = identity, at the first, a middle and the last position.
    for k in [0, 5, 9] {
        let s = run_fake_receiver(10, |_| {
            let mut pts = valid_points(10, 3);
            pts[k * POINT_LEN..(k + 1) * POINT_LEN].fill(0);
            pts
        });
        assert_malformed(
            &s,
            MSG_RECEIVER_POINTS,
            &format!("element {k} is the identity"),
        );
    }
}

#[test]
fn a_receiver_point_equal_to_s_is_rejected() {
    let s = run_fake_receiver(10, |s| {
        let mut pts = valid_points(10, 4);
        pts[3 * POINT_LEN..4 * POINT_LEN].copy_from_slice(s);
        pts
    });
    assert_malformed(
        &s,
        MSG_RECEIVER_POINTS,
        "element 3 equals the sender's point S",
    );
}

#[test]
fn valid_points_from_a_fake_receiver_are_accepted() {
    // Control for the two tests above: the fake receiver itself is not what fails.
    let s = run_fake_receiver(10, |_| valid_points(10, 5));
    assert_eq!(s.unwrap().len(), 10);
}

#[test]
fn truncated_and_overlong_frames_are_errors() {
    let n = 129;
    // A frame that is not a whole number of points.
    let (s, _) = run_tampered(n, false, 0, Attack::Truncate(n * POINT_LEN - 5));
    assert_malformed(&s, MSG_RECEIVER_POINTS, "not a whole number");
    // A whole point missing: the sender waits for it until the receiver hangs up.
    let (s, r) = run_tampered(n, false, 0, Attack::Truncate((n - 1) * POINT_LEN));
    assert!(r.is_ok());
    assert_peer_closed(&s);
    // One point too many.
    let (s, _) = run_tampered(n, false, 0, Attack::Extend(vec![0; POINT_LEN]));
    assert!(
        matches!(s, Err(Error::FrameTooLong { message, .. }) if message == MSG_RECEIVER_POINTS),
        "{s:?}"
    );
    // S too short or too long.
    let (s, r) = run_tampered(n, true, 0, Attack::Truncate(POINT_LEN - 1));
    assert_malformed(&r, MSG_SENDER_POINT, "31 bytes");
    assert_peer_closed(&s);
    let (_, r) = run_tampered(n, true, 0, Attack::Extend(vec![0]));
    assert!(
        matches!(r, Err(Error::FrameTooLong { message, .. }) if message == MSG_SENDER_POINT),
        "{r:?}"
    );
}

#[test]
fn mismatched_counts_are_errors() {
    // The receiver sends more points than the sender expects.
    let choices = random_choices(129, 1);
    let (s, _) = run_two_party(
        |ch| ChouOrlandiSender::default().send_random(ch, &SID, 128, &mut rng(1)),
        |ch| ChouOrlandiReceiver::default().receive_random(ch, &SID, &choices, &mut rng(2)),
    );
    assert!(matches!(s, Err(Error::FrameTooLong { .. })), "{s:?}");
    // The receiver sends fewer.
    let (s, _) = run_two_party(
        |ch| ChouOrlandiSender::default().send_random(ch, &SID, 130, &mut rng(1)),
        |ch| ChouOrlandiReceiver::default().receive_random(ch, &SID, &choices, &mut rng(2)),
    );
    assert_peer_closed(&s);
}

#[test]
fn peer_hang_up_is_peer_closed() {
    // The sender hangs up instead of sending S.
    let (s, r) = run_tampered(128, true, 0, Attack::HangUp);
    assert!(s.is_err());
    assert_peer_closed(&r);
    // The receiver hangs up instead of sending its points, first or second frame.
    let (s, r) = run_tampered(128, false, 0, Attack::HangUp);
    assert!(r.is_err());
    assert_peer_closed(&s);
    let (s, r) = run_tampered(FRAME_POINTS + 1, false, 1, Attack::HangUp);
    assert!(r.is_err());
    assert_peer_closed(&s);
}

#[test]
fn too_many_ots_is_an_invalid_parameter() {
    let (s, _) = run_two_party(
        |ch| ChouOrlandiSender::default().send_random(ch, &SID, MAX_BASE_OTS + 1, &mut rng(1)),
        |_| (),
    );
    assert!(matches!(s, Err(Error::InvalidParam { .. })), "{s:?}");
}

#[test]
fn time_128_base_ots() {
    let choices = random_choices(128, 5);
    // Warm up (thread pool, dalek's CPU detection), then time the best of five runs.
    run(SID, 128, &choices, (1, 2)).0.unwrap();
    let mut best = f64::INFINITY;
    for k in 0..5 {
        let t = Instant::now();
        let (s, r) = run(SID, 128, &choices, (10 + k, 20 + k));
        let secs = t.elapsed().as_secs_f64();
        s.unwrap();
        r.unwrap();
        best = best.min(secs);
    }
    println!("128 base OTs (both parties, in-memory channel): {best:.4} s (best of 5)");
    assert!(best < 1.0, "128 base OTs took {best} s");
}

/// 2^16 base OTs, the size the module promises to handle; run with `--ignored`.
#[test]
#[ignore = "large size; run explicitly to measure"]
fn time_65536_base_ots() {
    let n = 1 << 16;
    let choices = random_choices(n, 6);
    let t = Instant::now();
    let (s, r) = run(SID, n, &choices, (1, 2));
    let secs = t.elapsed().as_secs_f64();
    let (s, r) = (s.unwrap(), r.unwrap());
    for ((pair, key), &c) in s.iter().zip(&r).zip(&choices) {
        assert_eq!(*key, pair[usize::from(c)]);
    }
    println!("65536 base OTs (both parties, in-memory channel): {secs:.3} s");
}
