//! `dkt10` over an in-memory channel: exact intersection indices against a `HashSet` oracle,
//! the traffic formula (every run of the suite), and deviations of either party: a receiver
//! whose proof response is wrong, whose points do not fit its X or its proof, or whose encodings
//! are not canonical (a response for X refused before any tag is sent); a sender whose answers,
//! key commitment or proof are wrong, or whose encodings are not canonical; truncated
//! messages; altered tags, which can only lose matches. Each ends in an error naming the failed
//! check or the malformed element, or in a subset of the true intersection.

use crate::common;
use crate::common::{Outcome, assert_malformed, assert_malformed_as, assert_subset, fast};
use blindjoin_core::Error;
use blindjoin_core::channel::metered::Metered;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::dkt10::{
    self, MSG_RECEIVER_COMMIT, MSG_RECEIVER_POINTS, MSG_RECEIVER_RESPONSE, MSG_RECEIVER_RESPONSES,
    MSG_SENDER_COMMIT, MSG_SENDER_POINTS, MSG_SENDER_RESPONSE, MSG_TAGS, RECEIVER_ITEM_LEN,
    SENDER_ITEM_LEN,
};
use blindjoin_psi::{Party, Protocol, Security};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};

static P: &Protocol = &dkt10::PROTOCOL;

#[test]
fn exact_indices() {
    // Unbalanced both ways, one against many, and two frames of 2^14 with a partial last one.
    common::exact_suite(
        P,
        &[
            (3000, 2000, 777),
            (2000, 3000, 1999),
            (1, 5000, 1),
            (5000, 1, 1),
            (20_000, 17_000, 6_000),
        ],
        1010,
    );
}

#[test]
fn descriptor_claims_malicious_security() {
    assert_eq!(P.security, Security::Malicious);
    assert_eq!(P.kappa, &[128]);
}

#[test]
fn communication_at_2_16_is_six_points_per_item_and_a_tag() {
    // RR17 Fig. 8's 6nφ + 6φ + nβ with φ = 256 bits and β = 72 (λ = 40, n = 2^16), plus 4
    // bytes of framing for each of 4 fixed messages and 4 streams of 4 frames.
    let n = 1u64 << 16;
    let traffic = (P.traffic)(&Sizes::new(n, n)).unwrap();
    let total: u64 = traffic.iter().map(|(_, b)| b).sum();
    assert_eq!(
        total,
        (6 * n * 256 + 6 * 256 + n * 72) / 8 + 4 * (4 + 4 * 4)
    );
    let bytes = |name: &str| traffic.iter().find(|(m, _)| *m == name).unwrap().1;
    assert_eq!(bytes(MSG_RECEIVER_POINTS), n * 96 + 4 * 4);
    assert_eq!(bytes(MSG_SENDER_POINTS), n * 64 + 4 * 4);
    assert_eq!(bytes(MSG_TAGS), n * 9 + 4 * 4);
}

fn attack_receiver(target: Target, attack: Attack) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Receiver, target, attack, &fast())
}

fn attack_sender(target: Target, attack: Attack) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Sender, target, attack, &fast())
}

fn check_failed(e: &Error, what: &str) {
    match e {
        Error::CheckFailed(m) => assert!(m.contains(what), "{m}"),
        e => panic!("expected a failed check about {what}, got: {e}"),
    }
}

/// Swaps bytes `a..a + 32` and `b..b + 32` of a frame (two encoded points).
fn swap32(f: &mut [u8], a: usize, b: usize) {
    for j in 0..32 {
        f.swap(a + j, b + j);
    }
}

#[test]
fn a_wrong_receiver_response_is_caught() {
    // Changing a response by one keeps it canonical; it no longer answers the challenge.
    for (msg, at) in [
        (MSG_RECEIVER_RESPONSES, 0),
        (MSG_RECEIVER_RESPONSES, 32 * 7),
        (MSG_RECEIVER_RESPONSE, 0),
    ] {
        let ((ro, so), _) = attack_receiver(Target::first(msg), Attack::FlipBit(at));
        check_failed(&so.unwrap_err(), "receiver's proof");
        assert!(ro.is_err(), "{msg}");
    }
    // Two responses swapped.
    let ((_, so), _) = attack_receiver(
        Target::first(MSG_RECEIVER_RESPONSES),
        Attack::Edit(|f| swap32(f, 0, 32)),
    );
    check_failed(&so.unwrap_err(), "receiver's proof");
}

#[test]
fn receiver_points_that_do_not_fit_its_proof_are_caught() {
    let edits: [fn(&mut Vec<u8>); 4] = [
        // N_0 and N_1 swapped: M_0 + N_1 no longer opens X with item 0's exponents.
        |f| swap32(f, 32, RECEIVER_ITEM_LEN + 32),
        // M_2 and N_2 swapped (their sum is unchanged, the transcript is not).
        |f| swap32(f, 2 * RECEIVER_ITEM_LEN, 2 * RECEIVER_ITEM_LEN + 32),
        // Two whole items swapped.
        |f| {
            for j in 0..RECEIVER_ITEM_LEN {
                f.swap(j, RECEIVER_ITEM_LEN + j);
            }
        },
        // A commitment B_3 replaced by B_4.
        |f| {
            let b4: Vec<u8> = f[4 * RECEIVER_ITEM_LEN + 64..5 * RECEIVER_ITEM_LEN].to_vec();
            f[3 * RECEIVER_ITEM_LEN + 64..4 * RECEIVER_ITEM_LEN].copy_from_slice(&b4);
        },
    ];
    for edit in edits {
        let ((ro, so), _) = attack_receiver(Target::first(MSG_RECEIVER_POINTS), Attack::Edit(edit));
        check_failed(&so.unwrap_err(), "receiver's proof");
        assert!(ro.is_err());
    }
    // X and A swapped.
    let ((_, so), _) = attack_receiver(
        Target::first(MSG_RECEIVER_COMMIT),
        Attack::Edit(|f| swap32(f, 0, 32)),
    );
    check_failed(&so.unwrap_err(), "receiver's proof");
}

#[test]
fn non_canonical_receiver_encodings_are_malformed() {
    // Bit 0 of an encoding set makes it negative, which Ristretto255 refuses.
    for (target, attack, element) in [
        (
            Target::first(MSG_RECEIVER_POINTS),
            Attack::FlipBit(5 * RECEIVER_ITEM_LEN),
            "element 5",
        ),
        (
            Target::first(MSG_RECEIVER_POINTS),
            Attack::FlipBit(7 * RECEIVER_ITEM_LEN + 32),
            "element 7",
        ),
        (
            Target::first(MSG_RECEIVER_POINTS),
            Attack::FlipBit(9 * RECEIVER_ITEM_LEN + 64),
            "element 9",
        ),
        (
            Target::first(MSG_RECEIVER_COMMIT),
            Attack::FlipBit(32),
            "element 1",
        ),
    ] {
        let ((_, so), _) = attack_receiver(target, attack);
        let e = so.unwrap_err();
        assert_malformed(&e);
        assert!(e.to_string().contains(element), "{e}");
    }
    // A response of ℓ or more.
    let ((_, so), _) = attack_receiver(
        Target::first(MSG_RECEIVER_RESPONSES),
        Attack::Edit(|f| f[32 * 3 + 31] = 0xff),
    );
    let e = so.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("element 3"), "{e}");
}

#[test]
fn non_canonical_commitments_are_malformed_naming_the_element() {
    // Bit 0 of an encoding set: X (element 0 of the receiver's commitment), A' (element 1 of
    // the sender's).
    let ((_, so), _) = attack_receiver(Target::first(MSG_RECEIVER_COMMIT), Attack::FlipBit(0));
    assert_malformed_as(
        &so.unwrap_err(),
        MSG_RECEIVER_COMMIT,
        "element 0 is not a valid Ristretto255 point",
    );
    let ((ro, _), _) = attack_sender(Target::first(MSG_SENDER_COMMIT), Attack::FlipBit(32));
    assert_malformed_as(
        &ro.unwrap_err(),
        MSG_SENDER_COMMIT,
        "element 1 is not a valid Ristretto255 point",
    );
}

/// The receiver's response φ for X with its top byte 0xff (at least ℓ): the sender refuses it
/// before its check of π_R, and sends no tag.
#[test]
fn a_non_canonical_response_for_x_is_refused_before_any_tag() {
    let (r, s, _) = common::small_sets();
    let ((ro, applied), (so, sent)) = run_two_party(
        |ch| {
            let mut t = Tamper::new(
                ch,
                Target::first(MSG_RECEIVER_RESPONSE),
                Attack::Edit(|f| f[31] = 0xff),
            );
            let out = P.receive(&mut t, &r, &fast(), &mut rng(1));
            (out, t.applied())
        },
        |ch| {
            let mut m = Metered::new(ch);
            let out = P.send(&mut m, &s, &fast(), &mut rng(2));
            (out, m.messages_sent())
        },
    );
    assert_malformed_as(
        &so.unwrap_err(),
        MSG_RECEIVER_RESPONSE,
        "element 0 is not a canonical scalar modulo the group order",
    );
    assert!(applied);
    assert!(!sent.contains_key(MSG_TAGS), "{:?}", sent.keys());
    assert!(sent.contains_key(MSG_SENDER_RESPONSE));
    assert!(ro.is_err());
}

#[test]
fn a_wrong_sender_answer_is_caught() {
    // Two answers swapped, an answer replaced by its commitment.
    let edits: [fn(&mut Vec<u8>); 2] = [
        |f| swap32(f, 0, SENDER_ITEM_LEN),
        |f| {
            let a: Vec<u8> = f[32..64].to_vec();
            f[..32].copy_from_slice(&a);
        },
    ];
    for edit in edits {
        let ((ro, _), _) = attack_sender(Target::first(MSG_SENDER_POINTS), Attack::Edit(edit));
        check_failed(&ro.unwrap_err(), "sender's proof");
    }
}

#[test]
fn a_forged_sender_proof_is_caught() {
    let ((ro, _), _) = attack_sender(Target::first(MSG_SENDER_RESPONSE), Attack::FlipBit(0));
    check_failed(&ro.unwrap_err(), "sender's proof");
    let ((ro, _), _) = attack_sender(
        Target::first(MSG_SENDER_POINTS),
        Attack::Edit(|f| swap32(f, 32, 32 + SENDER_ITEM_LEN)),
    );
    check_failed(&ro.unwrap_err(), "sender's proof");
}

#[test]
fn a_wrong_sender_key_commitment_is_caught() {
    // Z and A' swapped.
    let ((ro, _), _) = attack_sender(
        Target::first(MSG_SENDER_COMMIT),
        Attack::Edit(|f| swap32(f, 0, 32)),
    );
    check_failed(&ro.unwrap_err(), "sender's proof");
    // Z the identity (a zero key).
    let ((ro, _), _) = attack_sender(
        Target::first(MSG_SENDER_COMMIT),
        Attack::Edit(|f| f[..32].fill(0)),
    );
    check_failed(&ro.unwrap_err(), "identity");
}

#[test]
fn non_canonical_sender_encodings_are_malformed() {
    for (target, attack, element) in [
        (
            Target::first(MSG_SENDER_COMMIT),
            Attack::FlipBit(0),
            "element 0",
        ),
        (
            Target::first(MSG_SENDER_POINTS),
            Attack::FlipBit(3 * SENDER_ITEM_LEN),
            "element 3",
        ),
        (
            Target::first(MSG_SENDER_POINTS),
            Attack::FlipBit(4 * SENDER_ITEM_LEN + 32),
            "element 4",
        ),
    ] {
        let ((ro, _), _) = attack_sender(target, attack);
        let e = ro.unwrap_err();
        assert_malformed(&e);
        assert!(e.to_string().contains(element), "{e}");
    }
    let ((ro, _), _) = attack_sender(
        Target::first(MSG_SENDER_RESPONSE),
        Attack::Edit(|f| f[31] = 0xff),
    );
    assert_malformed(&ro.unwrap_err());
}

#[test]
fn truncated_messages_are_malformed() {
    for msg in [
        MSG_RECEIVER_COMMIT,
        MSG_RECEIVER_POINTS,
        MSG_RECEIVER_RESPONSE,
        MSG_RECEIVER_RESPONSES,
    ] {
        let ((ro, so), _) = attack_receiver(Target::first(msg), Attack::Truncate(20));
        assert_malformed(&so.unwrap_err());
        assert!(ro.is_err(), "{msg}");
    }
    for msg in [
        MSG_SENDER_COMMIT,
        MSG_SENDER_POINTS,
        MSG_SENDER_RESPONSE,
        MSG_TAGS,
    ] {
        let ((ro, _), _) = attack_sender(Target::first(msg), Attack::Truncate(20));
        assert_malformed(&ro.unwrap_err());
    }
}

#[test]
fn altered_tags_only_lose_matches() {
    let edits: [fn(&mut Vec<u8>); 3] = [
        |f| f.iter_mut().for_each(|b| *b ^= 0x5a),
        |f| f[5] ^= 1,
        |f| f.reverse(),
    ];
    for edit in edits {
        let ((ro, so), expected) = attack_sender(Target::first(MSG_TAGS), Attack::Edit(edit));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, expected.len());
    }
    let ((ro, so), expected) = attack_sender(Target::first(MSG_TAGS), Attack::FlipBit(0));
    so.unwrap();
    assert_subset(&ro.unwrap().indices, &expected, 1);
}
