//! `cm20` over an in-memory channel: exact intersection indices against a `HashSet` oracle on
//! independently shuffled, balanced and unbalanced sets; the metered bytes against the formula;
//! tampered, truncated and mismatched peer messages end in an error (or, for undetectable
//! semi-honest tampering, a subset of the true result), never a panic.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use blindjoin_core::Error;
use blindjoin_core::item::{Item, items_from_records};
use blindjoin_ot::base;
use blindjoin_psi::protocols;
use blindjoin_psi::protocols::cm20;
use blindjoin_psi::{Protocol, ReceiverOutput, RunOptions, SenderOutput};
use blindjoin_testkit::{Attack, Tamper, Target, oracle, rng, run_two_party, sets_with_overlap};

type Results = (
    blindjoin_core::Result<ReceiverOutput>,
    blindjoin_core::Result<SenderOutput>,
);

static P: &Protocol = &protocols::cm20::PROTOCOL;

fn run(recv: &[Item], send: &[Item]) -> Results {
    let o = RunOptions::default();
    run_two_party(
        |ch| P.receive(ch, recv, &o, &mut rng(1)),
        |ch| P.send(ch, send, &o, &mut rng(2)),
    )
}

#[test]
fn exact_indices() {
    let extra = [
        // m = 128 rows, then 256 (just past a power of two).
        (128, 3000, 100),
        (129, 3000, 129),
        // Several tag frames (2^14 each) with a partial last one; m = 2^16.
        (40_000, 20_001, 12_345),
        (20_001, 40_000, 12_345),
    ];
    common::exact_suite(P, &extra, 300);
}

#[test]
fn result_does_not_depend_on_the_thread_count() {
    let (r, s) = sets_with_overlap(3000, 2000, 777, 41);
    let expected = oracle(&r, &s);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let (ro, so) = pool.install(|| run(&ri, &si));
        so.unwrap();
        assert_eq!(ro.unwrap().indices, expected, "{threads} threads");
    }
}

#[test]
fn metered_bytes_match_the_formula() {
    // n_R = 300, n_S = 500: m = 512, tags of 40 + ⌈log2(150000)⌉ = 58 bits = 8 bytes.
    let (r, s) = sets_with_overlap(300, 500, 100, 9);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let (indices, rt, st) = common::metered(P, &ri, &si);
    assert_eq!(indices.len(), 100);
    let (m, tag_bits, tag_len) = (512u64, 58u64, 8u64);
    let w = u64::from(cm20::width(128, 40, m, 300, 500).unwrap());
    assert!((128..400).contains(&w), "w = {w}");
    // Receiver: hello and verdict, Setup {m, w, ℓ2} (postcard varints), the base-OT point S,
    // the PRF key, one frame of m/8 bytes per Δ column.
    let setup = common::varint_len(m) + common::varint_len(w) + common::varint_len(tag_bits);
    let rest = (setup + 4) + (32 + 4) + (16 + 4) + w * (m / 8 + 4);
    let hello = rt.bytes_sent - rest;
    assert!(hello < 600, "hello and verdict are {hello} bytes");
    // Sender: hello and verdict (same length), the w base-OT points R_j in one frame, 500 tags
    // in one frame.
    assert_eq!(st.bytes_sent, hello + (32 * w + 4) + (tag_len * 500 + 4));
    assert_eq!(rt.frames_sent, 2 + 1 + 1 + 1 + w);
    assert_eq!(st.frames_sent, 2 + 1 + 1);
}

#[test]
fn table_2_communication_at_2_pow_20() {
    // The formula of the test above at n = 2^20 (CM20 Table 2: 87.6 MiB in total): below
    // 92 MB with every byte counted but the handshake.
    let (n, m, w, tag_len) = (1u64 << 20, 1u64 << 20, 621u64, 10u64);
    assert_eq!(cm20::width(128, 40, m, n, n), Some(w as u32));
    let recv = (3 + 4) + (32 + 4) + (16 + 4) + w * (m / 8 + 4);
    let send = (32 * w + 4) + tag_len * n + 64 * 4;
    assert!(recv + send < 92_000_000 - 1000, "{}", recv + send);
}

fn small_sets() -> (Vec<Item>, Vec<Item>, Vec<usize>) {
    let (r, s) = sets_with_overlap(50, 60, 20, 7);
    let expected = oracle(&r, &s);
    (items_from_records(&r), items_from_records(&s), expected)
}

/// Runs with the receiver's `target` frame attacked.
fn attack_receiver(target: Target, attack: Attack) -> (Results, Vec<usize>) {
    let (r, s, expected) = small_sets();
    let o = RunOptions::default();
    let res = run_two_party(
        |ch| {
            let mut t = Tamper::new(ch, target, attack);
            let out = P.receive(&mut t, &r, &o, &mut rng(1));
            assert!(t.applied(), "{target:?} was never sent");
            out
        },
        |ch| P.send(ch, &s, &o, &mut rng(2)),
    );
    (res, expected)
}

/// Runs with the sender's `target` frame attacked.
fn attack_sender(target: Target, attack: Attack) -> (Results, Vec<usize>) {
    let (r, s, expected) = small_sets();
    let o = RunOptions::default();
    let res = run_two_party(
        |ch| P.receive(ch, &r, &o, &mut rng(1)),
        |ch| {
            let mut t = Tamper::new(ch, target, attack);
            let out = P.send(&mut t, &s, &o, &mut rng(2));
            assert!(t.applied(), "{target:?} was never sent");
            out
        },
    );
    (res, expected)
}

fn assert_malformed(e: &Error) {
    assert!(
        matches!(e, Error::Malformed { .. } | Error::FrameTooLong { .. }),
        "expected a malformed-message error, got: {e}"
    );
}

fn assert_subset(got: &[usize], expected: &[usize]) {
    assert!(
        got.iter().all(|i| expected.contains(i)),
        "{got:?} is not a subset of {expected:?}"
    );
}

// At m = 128 every Δ column is one frame of 16 bytes.

#[test]
fn setup_mismatch_names_the_field() {
    // m = 128 is the varint 0x80 0x01; flipping bit 0 of its first byte announces m = 129.
    let ((ro, so), _) = attack_receiver(Target::first(cm20::MSG_SETUP), Attack::FlipBit(0));
    match so.unwrap_err() {
        Error::ParamMismatch { field, ours, peer } => {
            assert_eq!(
                (field.as_str(), ours.as_str(), peer.as_str()),
                ("m", "128", "129")
            );
        }
        e => panic!("{e}"),
    }
    assert!(ro.is_err());
    // Setup is 5 bytes (m and w take two each); the last is ℓ2 = 40 + ⌈log2(3000)⌉ = 52.
    let ((_, so), _) = attack_receiver(Target::first(cm20::MSG_SETUP), Attack::FlipBit(4));
    match so.unwrap_err() {
        Error::ParamMismatch { field, .. } => assert_eq!(field, "tag_bits"),
        e => panic!("{e}"),
    }
    // A garbled Setup is malformed.
    let ((_, so), _) = attack_receiver(Target::first(cm20::MSG_SETUP), Attack::Extend(vec![1]));
    assert_malformed(&so.unwrap_err());
}

#[test]
fn bad_prf_key_frame_is_refused() {
    let ((ro, so), _) = attack_receiver(Target::first(cm20::MSG_KEY), Attack::Truncate(15));
    assert_malformed(&so.unwrap_err());
    assert!(ro.is_err());
    let ((_, so), _) = attack_receiver(Target::first(cm20::MSG_KEY), Attack::Extend(vec![0]));
    assert_malformed(&so.unwrap_err());
}

#[test]
fn truncated_or_overlong_delta_column_is_refused() {
    for frame in [0, 4] {
        for attack in [
            Attack::Truncate(15),
            Attack::Truncate(0),
            Attack::Extend(vec![0; 16]),
        ] {
            let ((ro, so), _) =
                attack_receiver(Target::frame(cm20::MSG_DELTA, frame), attack.clone());
            let e = so.unwrap_err();
            assert_malformed(&e);
            assert!(e.to_string().contains("Δ"), "{e}");
            assert!(ro.is_err(), "{attack:?}");
        }
    }
}

#[test]
fn flipped_delta_bit_gives_a_subset() {
    // A semi-honest sender cannot detect a wrong Δ bit: its C_j then differs from A_j ⊕ s_j·D_j
    // in one row, which can only lose matches.
    for (frame, at) in [(0, 0), (1, 7), (35, 15)] {
        let ((ro, so), expected) =
            attack_receiver(Target::frame(cm20::MSG_DELTA, frame), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected);
    }
}

#[test]
fn truncated_or_overlong_tags_are_refused() {
    // 60 tags of 40 + ⌈log2(3000)⌉ = 52 bits = 7 bytes in one frame; cut inside the sixth.
    let ((ro, so), _) = attack_sender(Target::first(cm20::MSG_TAGS), Attack::Truncate(7 * 5 + 3));
    assert_malformed(&ro.unwrap_err());
    so.unwrap();
    // Whole tags missing: the receiver waits for the rest and finds the sender gone.
    let ((ro, _), _) = attack_sender(Target::first(cm20::MSG_TAGS), Attack::Truncate(7 * 5));
    assert!(matches!(ro.unwrap_err(), Error::PeerClosed { .. }));
    let ((ro, _), _) = attack_sender(Target::first(cm20::MSG_TAGS), Attack::Extend(vec![0; 7]));
    assert_malformed(&ro.unwrap_err());
}

#[test]
fn flipped_tag_bit_gives_a_subset() {
    for at in [0, 7 * 13 + 2, 7 * 59 + 6] {
        let ((ro, so), expected) =
            attack_sender(Target::first(cm20::MSG_TAGS), Attack::FlipBit(at));
        so.unwrap();
        let got = ro.unwrap().indices;
        assert_subset(&got, &expected);
        assert!(got.len() + 1 >= expected.len());
    }
}

#[test]
fn bad_base_ot_points_are_refused() {
    let ((ro, so), _) = attack_sender(
        Target::first(base::MSG_RECEIVER_POINTS),
        Attack::Truncate(31),
    );
    assert_malformed(&ro.unwrap_err());
    assert!(so.is_err());
    let ((ro, so), _) =
        attack_receiver(Target::first(base::MSG_SENDER_POINT), Attack::Truncate(31));
    assert_malformed(&so.unwrap_err());
    assert!(ro.is_err());
}

#[test]
fn hang_ups_are_errors_on_both_sides() {
    for target in [
        Target::first(cm20::MSG_SETUP),
        Target::first(base::MSG_SENDER_POINT),
        Target::first(cm20::MSG_KEY),
        Target::frame(cm20::MSG_DELTA, 0),
        Target::frame(cm20::MSG_DELTA, 15),
    ] {
        let frame = target;
        let ((ro, so), _) = attack_receiver(target, Attack::HangUp);
        assert!(ro.is_err(), "{frame:?}");
        let e = so.unwrap_err();
        assert!(matches!(e, Error::PeerClosed { .. }), "{frame:?}: {e}");
    }
    let ((ro, so), _) = attack_sender(Target::first(cm20::MSG_TAGS), Attack::HangUp);
    assert!(matches!(ro.unwrap_err(), Error::PeerClosed { .. }));
    assert!(so.is_err());
}
