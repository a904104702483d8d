//! Every protocol of the registry, both roles over an in-memory channel: exact intersection
//! indices against a `HashSet` oracle on independently shuffled, balanced and unbalanced sets,
//! and errors (never panics or hangs) for mismatched, tampered, truncated and vanishing peers.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use blindjoin_core::Error;
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::MSG_HELLO;
use blindjoin_core::item::{Item, items_from_records};
use blindjoin_ot::ext::kkrt;
use blindjoin_psi::protocols;
use blindjoin_psi::protocols::{ecdh, kkrt16, naive};
use blindjoin_psi::{Protocol, ReceiverOutput, RunOptions, SenderOutput};
use blindjoin_testkit::{Attack, Tamper, Target, oracle, rng, run_two_party, sets_with_overlap};

fn run(
    p: &Protocol,
    recv: &[Item],
    send: &[Item],
    ro: &RunOptions,
    so: &RunOptions,
) -> (
    blindjoin_core::Result<ReceiverOutput>,
    blindjoin_core::Result<SenderOutput>,
) {
    run_two_party(
        |ch| p.receive(ch, recv, ro, &mut rng(1)),
        |ch| p.send(ch, send, so, &mut rng(2)),
    )
}

/// Several bulk frames (2^14 elements each) with a partial last one.
const FRAMES: [(usize, usize, usize); 1] = [(40_000, 20_001, 12_345)];

#[test]
fn ecdh_exact_indices() {
    common::exact_suite(&protocols::ecdh::PROTOCOL, &FRAMES, 100);
}

#[test]
fn kkrt16_exact_indices() {
    common::exact_suite(&protocols::kkrt16::PROTOCOL, &FRAMES, 100);
}

#[test]
fn naive_exact_indices() {
    common::exact_suite(&protocols::naive::PROTOCOL, &FRAMES, 100);
}

fn small_sets() -> (Vec<Item>, Vec<Item>, Vec<usize>) {
    let (r, s) = sets_with_overlap(50, 60, 20, 7);
    let expected = oracle(&r, &s);
    (items_from_records(&r), items_from_records(&s), expected)
}

fn field_of(e: &Error) -> Option<&str> {
    match e {
        Error::ParamMismatch { field, .. } => Some(field),
        _ => None,
    }
}

#[test]
fn protocol_mismatch_names_the_field_on_both_sides() {
    let (r, s, _) = small_sets();
    let o = RunOptions::default();
    let (ro, so) = run_two_party(
        |ch| protocols::ecdh::PROTOCOL.receive(ch, &r, &o, &mut rng(1)),
        |ch| protocols::naive::PROTOCOL.send(ch, &s, &o, &mut rng(2)),
    );
    let (re, se) = (ro.unwrap_err(), so.unwrap_err());
    assert_eq!(field_of(&re), Some("protocol"), "{re}");
    assert_eq!(field_of(&se), Some("protocol"), "{se}");
    assert!(
        re.to_string().contains("ecdh") && re.to_string().contains("naive"),
        "{re}"
    );
}

#[test]
fn lambda_mismatch_and_size_expectations_are_refused() {
    for p in protocols::ALL.iter().copied() {
        let (r, s, _) = small_sets();
        let o = RunOptions::default();
        let lam = RunOptions {
            lambda: 41,
            ..RunOptions::default()
        };
        let (ro, so) = run(p, &r, &s, &o, &lam);
        assert_eq!(field_of(&ro.unwrap_err()), Some("lambda"));
        assert_eq!(field_of(&so.unwrap_err()), Some("lambda"));

        // The receiver expected 61 sender items; the sender has 60.
        let expect = RunOptions {
            expected_peer_set_size: Some(61),
            ..RunOptions::default()
        };
        let (ro, so) = run(p, &r, &s, &expect, &o);
        let e = ro.unwrap_err();
        assert_eq!(field_of(&e), Some("sender set size"), "{e}");
        assert!(
            e.to_string().contains("61") && e.to_string().contains("60"),
            "{e}"
        );
        // The sender's own checks pass; it learns of the refusal from the verdict exchange.
        let e = so.unwrap_err();
        assert!(matches!(e, Error::PeerRefused(_)), "{e}");
        assert!(e.to_string().contains("sender set size"), "{e}");

        // A sender claiming more than the receiver admits.
        let bound = RunOptions {
            max_peer_set_size: 59,
            ..RunOptions::default()
        };
        let (ro, _) = run(p, &r, &s, &bound, &o);
        assert_eq!(field_of(&ro.unwrap_err()), Some("sender set size"));
    }
}

#[test]
fn both_receivers_is_a_role_mismatch() {
    let (r, s, _) = small_sets();
    let o = RunOptions::default();
    let (a, b) = run_two_party(
        |ch| protocols::ecdh::PROTOCOL.receive(ch, &r, &o, &mut rng(1)),
        |ch| protocols::ecdh::PROTOCOL.receive(ch, &s, &o, &mut rng(2)),
    );
    assert_eq!(field_of(&a.unwrap_err()), Some("role"));
    assert_eq!(field_of(&b.unwrap_err()), Some("role"));
}

#[test]
fn lowered_or_unsupported_security_is_refused_before_connecting() {
    let (r, _, _) = small_sets();
    for (kappa, lambda, field) in [(80, 40, "kappa"), (128, 0, "lambda"), (128, 81, "lambda")] {
        let o = RunOptions {
            kappa,
            lambda,
            ..RunOptions::default()
        };
        let (mut ch, _peer) =
            blindjoin_core::channel::memory::memory_pair(std::time::Duration::from_secs(1));
        let e = protocols::ecdh::PROTOCOL
            .receive(&mut ch, &r, &o, &mut rng(1))
            .unwrap_err();
        assert!(
            matches!(e, Error::InvalidParam { field: f, .. } if f == field),
            "{e}"
        );
    }
}

/// Runs `p` with the sender's `target` frame attacked; returns (receiver result, sender result).
fn attack_sender(
    p: &Protocol,
    target: Target,
    attack: Attack,
) -> (
    blindjoin_core::Result<ReceiverOutput>,
    blindjoin_core::Result<SenderOutput>,
    Vec<usize>,
) {
    let (r, s, expected) = small_sets();
    let o = RunOptions::default();
    let (ro, so) = run_two_party(
        |ch| p.receive(ch, &r, &o, &mut rng(1)),
        |ch| {
            let mut t = Tamper::new(ch, target, attack);
            let out = p.send(&mut t, &s, &o, &mut rng(2));
            assert!(t.applied(), "{p}: {target:?} was never sent");
            out
        },
    );
    (ro, so, expected)
}

/// Same with the receiver's frame attacked.
fn attack_receiver(
    p: &Protocol,
    target: Target,
    attack: Attack,
) -> (
    blindjoin_core::Result<ReceiverOutput>,
    blindjoin_core::Result<SenderOutput>,
) {
    let (r, s, _) = small_sets();
    let o = RunOptions::default();
    run_two_party(
        |ch| {
            let mut t = Tamper::new(ch, target, attack);
            let out = p.receive(&mut t, &r, &o, &mut rng(1));
            assert!(t.applied(), "{p}: {target:?} was never sent");
            out
        },
        |ch| p.send(ch, &s, &o, &mut rng(2)),
    )
}

fn assert_malformed(e: &Error) {
    assert!(
        matches!(e, Error::Malformed { .. } | Error::FrameTooLong { .. }),
        "expected a malformed-message error, got: {e}"
    );
}

#[test]
fn garbage_hello_is_refused() {
    for p in protocols::ALL.iter().copied() {
        let (ro, _, _) = attack_sender(
            p,
            Target::first(MSG_HELLO),
            Attack::Replace(b"GET / HTTP/1.1\r\n".to_vec()),
        );
        let e = ro.unwrap_err();
        assert!(e.to_string().contains("not a blindjoin endpoint"), "{e}");
        let (ro, _, _) = attack_sender(p, Target::first(MSG_HELLO), Attack::Truncate(12));
        assert_malformed(&ro.unwrap_err());
        let (ro, _, _) = attack_sender(p, Target::first(MSG_HELLO), Attack::Extend(vec![0; 3]));
        assert_malformed(&ro.unwrap_err());
        // The wire version sits right after the 8 magic bytes.
        let (ro, _, _) = attack_sender(p, Target::first(MSG_HELLO), Attack::FlipBit(8));
        assert_eq!(field_of(&ro.unwrap_err()), Some("wire_version"));
    }
}

#[test]
fn ecdh_invalid_point_from_sender_is_malformed() {
    // Flipping bit 0 of a Ristretto encoding in the sender's first frame of blinded points
    // makes it non-canonical ("negative"), which must not decode.
    let (ro, _, _) = attack_sender(
        &protocols::ecdh::PROTOCOL,
        Target::first(ecdh::MSG_SENDER_POINTS),
        Attack::FlipBit(32 * 5),
    );
    let e = ro.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("element 5"), "{e}");
}

#[test]
fn ecdh_invalid_point_from_receiver_is_malformed() {
    let (_, so) = attack_receiver(
        &protocols::ecdh::PROTOCOL,
        Target::first(ecdh::MSG_RECEIVER_POINTS),
        Attack::FlipBit(0),
    );
    let e = so.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("element 0"), "{e}");
}

#[test]
fn truncated_and_overlong_bulk_frames_are_refused() {
    for p in protocols::ALL.iter().copied() {
        // Half an element.
        let (ro, _, _) = attack_sender(p, common::first_message(p, false), Attack::Truncate(5));
        assert_malformed(&ro.unwrap_err());
        // More elements than the handshake announced.
        let (ro, _, _) = attack_sender(
            p,
            common::first_message(p, false),
            Attack::Extend(vec![0; 32 * 100]),
        );
        assert_malformed(&ro.unwrap_err());
    }
    // The tags frame of ecdh: 7-byte tags (40 + ⌈log2(50·60)⌉ = 52 bits),
    // cut inside the sixth tag.
    let (ro, _, _) = attack_sender(
        &protocols::ecdh::PROTOCOL,
        Target::first(ecdh::MSG_TAGS),
        Attack::Truncate(7 * 5 + 3),
    );
    assert_malformed(&ro.unwrap_err());
}

#[test]
fn tampered_tags_change_the_result_but_never_panic() {
    // A semi-honest protocol cannot detect a wrong tag, but it must still finish cleanly.
    let (ro, so, expected) = attack_sender(
        &protocols::naive::PROTOCOL,
        Target::first(naive::MSG_HASHES),
        Attack::FlipBit(0),
    );
    so.unwrap();
    let got = ro.unwrap().indices;
    assert!(got.len() + 1 >= expected.len() && got.iter().all(|i| expected.contains(i)));
}

#[test]
fn peer_hanging_up_mid_protocol_is_an_error_on_both_sides() {
    for p in protocols::ALL.iter().copied() {
        let (ro, so, _) = attack_sender(p, common::first_message(p, false), Attack::HangUp);
        let e = ro.unwrap_err();
        assert!(matches!(e, Error::PeerClosed { .. }), "{p}: {e}");
        assert!(so.is_err());
    }
    let (ro, so) = attack_receiver(
        &protocols::ecdh::PROTOCOL,
        Target::first(ecdh::MSG_RECEIVER_POINTS),
        Attack::HangUp,
    );
    assert!(ro.is_err());
    assert!(matches!(so.unwrap_err(), Error::PeerClosed { .. }));
}

#[test]
fn metered_bytes_match_the_formula() {
    // n1 = 300, n2 = 500: tags of 40 + ⌈log2(150000)⌉ = 58 bits = 8 bytes.
    let (r, s) = sets_with_overlap(300, 500, 100, 9);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let (_, rt, st) = common::metered(&protocols::ecdh::PROTOCOL, &ri, &si);
    let hello = rt.bytes_sent - (32 * 300 + 4);
    // Receiver: hello + one frame of 300 points. Sender: hello + one frame of 500 points + one
    // frame of 300 tags; both hellos have the same length.
    assert_eq!(st.bytes_sent, hello + (32 * 500 + 4) + (8 * 300 + 4));
    assert!(hello < 200, "hello is {hello} bytes");
}

fn _assert_channel_object_safe(_: &mut dyn Channel) {}

#[test]
fn kkrt16_metered_bytes_match_the_formula() {
    use blindjoin_psi::hashing::CuckooParams;
    // n1 = 300, n2 = 500: tags of 40 + ⌈log2(150000)⌉ = 58 bits = 8 bytes; k = 512.
    let (r, s) = sets_with_overlap(300, 500, 100, 9);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let (_, rt, st) = common::metered(&protocols::kkrt16::PROTOCOL, &ri, &si);
    let bins = CuckooParams::kkrt(300, 40).unwrap().num_bins() as u64;
    assert!(bins < 1 << 14, "the bin count is a 2-byte varint");
    let u_columns = 512 * bins.div_ceil(128) * 16;
    // Receiver: hello, bins (postcard varint), base-OT S, one frame of u columns.
    let rest = (2 + 4) + (32 + 4) + (u_columns + 4);
    let hello = rt.bytes_sent - rest;
    assert!(hello < 250, "hello is {hello} bytes");
    // Sender: hello (same length), 512 base-OT points in one frame, three sets of 500 tags.
    assert_eq!(st.bytes_sent, hello + (512 * 32 + 4) + 3 * (8 * 500 + 4));
}

#[test]
fn kkrt16_bin_count_mismatch_names_the_field() {
    // The receiver's bin count (a postcard varint); change it.
    let (r, s, _) = small_sets();
    let o = RunOptions::default();
    let (ro, so) = run_two_party(
        |ch| {
            let mut t = Tamper::new(ch, Target::first(kkrt16::MSG_SETUP), Attack::FlipBit(0));
            protocols::kkrt16::PROTOCOL.receive(&mut t, &r, &o, &mut rng(1))
        },
        |ch| protocols::kkrt16::PROTOCOL.send(ch, &s, &o, &mut rng(2)),
    );
    assert_eq!(field_of(&so.unwrap_err()), Some("bins"));
    assert!(ro.is_err());
}

#[test]
fn kkrt16_tampered_oprf_matrix_is_an_error_or_a_subset() {
    // A flipped bit in the u columns changes one bin's OPRF key; the
    // sender cannot notice (semi-honest), the run finishes, and no wrong index appears.
    let (r, s, expected) = small_sets();
    let o = RunOptions::default();
    let (ro, so) = run_two_party(
        |ch| {
            let mut t = Tamper::new(ch, Target::first(kkrt::MSG_U_COLUMNS), Attack::FlipBit(3));
            protocols::kkrt16::PROTOCOL.receive(&mut t, &r, &o, &mut rng(1))
        },
        |ch| protocols::kkrt16::PROTOCOL.send(ch, &s, &o, &mut rng(2)),
    );
    so.unwrap();
    let got = ro.unwrap().indices;
    assert!(got.len() + 1 >= expected.len() && got.iter().all(|i| expected.contains(i)));
    // A truncated u frame is refused by the sender.
    let (_, so) = run_two_party(
        |ch| {
            let mut t = Tamper::new(
                ch,
                Target::first(kkrt::MSG_U_COLUMNS),
                Attack::Truncate(100),
            );
            protocols::kkrt16::PROTOCOL.receive(&mut t, &r, &o, &mut rng(1))
        },
        |ch| protocols::kkrt16::PROTOCOL.send(ch, &s, &o, &mut rng(2)),
    );
    assert_malformed(&so.unwrap_err());
}

#[test]
fn kkrt16_long_tags_are_compared_whole() {
    // λ = 80 with 300 × 500 items: 80 + ⌈log2(150000)⌉ = 98-bit tags, 13 bytes, beyond the
    // 96 bits the receiver's tag table stores.
    let (r, s) = sets_with_overlap(300, 500, 120, 11);
    let expected = oracle(&r, &s);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let o = RunOptions {
        lambda: 80,
        ..RunOptions::default()
    };
    let (ro, so) = run(&protocols::kkrt16::PROTOCOL, &ri, &si, &o, &o);
    so.unwrap();
    assert_eq!(ro.unwrap().indices, expected);
}
