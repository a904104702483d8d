//! `rr17a` over an in-memory channel: exact intersection indices against a `HashSet` oracle,
//! the traffic formula message by message, and the deviations of a malicious receiver (an
//! opening that does not match its commitment or its choices, a map that names an OT twice or
//! one that does not exist) and of a malicious sender (altered summary values), each ending in
//! an error naming what was wrong or in the output an ideal sender with some input gives.

use crate::common;
use crate::common::{Outcome, assert_malformed, assert_subset, fast};
use blindjoin_core::Error;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::rr17a;
use blindjoin_psi::{Party, Protocol, Security};
use blindjoin_testkit::{Attack, Target};

static P: &Protocol = &rr17a::PROTOCOL;

#[test]
fn exact_indices() {
    common::exact_suite(P, &[(3000, 2000, 777), (2000, 3000, 1999)], 1700);
}

#[test]
fn descriptor_claims_malicious_security() {
    assert_eq!(P.security, Security::Malicious);
    assert_eq!(P.kappa, &[128]);
}

#[test]
fn communication_at_2_20() {
    // N_ot = 2.60·10^8 random OTs (16 bytes of u columns each), a map of N_bf = 2.57·10^8
    // 4-byte entries, 16-byte summary values.
    let n = 1u64 << 20;
    let traffic = (P.traffic)(&Sizes::new(n, n)).unwrap();
    let bytes = |name: &str| traffic.iter().find(|(m, _)| *m == name).unwrap().1;
    let map = bytes(rr17a::MSG_PERMUTATION);
    assert!((1_029_000_000..1_031_000_000).contains(&map), "{map}");
    assert_eq!(bytes(rr17a::MSG_TAGS), 16 * n + 64 * 4);
    // 16·N_ot + 4·N_bf + 16·n_S, plus framing, the base OTs and KOS's checks: 5.20·10^9 bytes.
    let p = blindjoin_psi::hashing::cnc_bloom_params(n, 40, 128).unwrap();
    let total: u64 = traffic.iter().map(|t| t.1).sum();
    let bulk = 16 * p.ots + 4 * p.bits + 16 * n;
    assert!(total > bulk && total < bulk + bulk / 1000, "{total} {bulk}");
    assert!((5_190_000_000..5_210_000_000).contains(&total), "{total}");
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

#[test]
fn an_opening_that_does_not_open_the_commitment_is_refused() {
    // The last 32 bytes of the opening are the hash-key share and its nonce.
    let ((ro, so), _) = attack_receiver(
        Target::first(rr17a::MSG_OPENING),
        Attack::Edit(|f| *f.last_mut().unwrap() ^= 1),
    );
    check_failed(&so.unwrap_err(), "commitment");
    assert!(ro.is_err());
}

#[test]
fn a_proof_that_does_not_match_the_opened_choices_is_refused() {
    // The 16 bytes before the share are the XOR of the opened messages; flipping one opened
    // choice from 0 to 1 claims a message the receiver does not have.
    let ((_, so), _) = attack_receiver(
        Target::first(rr17a::MSG_OPENING),
        Attack::Edit(|f| {
            let n = f.len();
            f[n - 48] ^= 1;
        }),
    );
    check_failed(&so.unwrap_err(), "proof");
    let ((_, so), _) = attack_receiver(
        Target::first(rr17a::MSG_OPENING),
        Attack::Edit(|f| {
            // The first opened choice that is 0, claimed as 1.
            let k = (0..(f.len() - 48) * 8 - 8)
                .find(|k| f[k / 8] >> (k % 8) & 1 == 0)
                .unwrap();
            f[k / 8] |= 1 << (k % 8);
        }),
    );
    check_failed(&so.unwrap_err(), "proof");
}

#[test]
fn a_receiver_that_claims_too_many_ones_is_refused() {
    // Every opened choice but the last byte's claimed as 1: more than τ.
    let ((_, so), _) = attack_receiver(
        Target::first(rr17a::MSG_OPENING),
        Attack::Edit(|f| {
            let n = f.len() - 48;
            f[..n - 1].fill(0xff);
        }),
    );
    check_failed(&so.unwrap_err(), "choices of 1");
}

#[test]
fn a_map_naming_a_missing_or_repeated_ot_is_refused() {
    let ((ro, so), _) = attack_receiver(
        Target::first(rr17a::MSG_PERMUTATION),
        Attack::Edit(|f| f[..4].fill(0xff)),
    );
    let e = so.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("entry 0 names OT 4294967295"), "{e}");
    assert!(ro.is_err());
    let ((_, so), _) = attack_receiver(
        Target::first(rr17a::MSG_PERMUTATION),
        Attack::Edit(|f| {
            let first: [u8; 4] = f[..4].try_into().unwrap();
            f[4..8].copy_from_slice(&first);
        }),
    );
    let e = so.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("entry 1"), "{e}");
    assert!(e.to_string().contains("named before"), "{e}");
}

#[test]
fn altered_summary_values_give_what_an_ideal_sender_gives() {
    // 60 values of 16 bytes: a flipped bit removes exactly the item it belongs to.
    for at in [0, 16 * 13 + 2, 16 * 59 + 15] {
        let ((ro, so), expected) =
            attack_sender(Target::first(rr17a::MSG_TAGS), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, 1);
    }
    // Values not computed from the OT messages match nothing.
    let ((ro, so), _) = attack_sender(
        Target::first(rr17a::MSG_TAGS),
        Attack::Edit(|f| {
            for (i, b) in f.iter_mut().enumerate() {
                *b = (i as u8).wrapping_mul(37).wrapping_add(11);
            }
        }),
    );
    so.unwrap();
    assert_eq!(ro.unwrap().indices, Vec::<usize>::new());
}

#[test]
fn a_challenge_of_the_wrong_length_is_refused() {
    for attack in [Attack::Truncate(31), Attack::Extend(vec![0])] {
        let ((ro, _), _) = attack_sender(Target::first(rr17a::MSG_CHALLENGE), attack.clone());
        let e = ro.unwrap_err();
        assert_malformed(&e);
        assert!(
            e.to_string().contains("cut-and-choose seed"),
            "{attack:?}: {e}"
        );
    }
}
