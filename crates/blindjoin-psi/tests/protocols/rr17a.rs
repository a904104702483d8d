//! `rr17a` over an in-memory channel: exact intersection indices against a `HashSet` oracle,
//! the traffic formula message by message, and the deviations of a malicious receiver (an
//! opening that does not match its commitment or its choices or sets padding bits, a map that
//! names an OT twice or one that does not exist, an undecodable base-OT point, a KOS opening
//! or check value that does not verify) and of a malicious sender (altered summary values,
//! undecodable base-OT pairs), each ending in an error naming what was wrong or in the output
//! an ideal sender with some input gives.

use crate::common;
use crate::common::{
    Outcome, assert_check_failed_as, assert_malformed, assert_malformed_as, assert_subset, fast,
    real,
};
use blindjoin_core::Error;
use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};
use blindjoin_ot::ext::kos;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::rr17a;
use blindjoin_psi::{Party, Protocol, RunOptions, Security};
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

fn attack_with(
    party: Party,
    target: Target,
    attack: Attack,
    opts: &RunOptions,
) -> (Outcome, Vec<usize>) {
    common::attacked(P, party, target, attack, opts)
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
fn bits_after_the_last_opened_choice_are_refused() {
    // The attack runs' 50 receiver items open o OTs, o not a multiple of 8: the top bit of the
    // last byte of the packed choices is padding. The hash-key share and nonce, the last 32
    // bytes, are unchanged, so the commitment opens and the padding check is what fails.
    let p = blindjoin_psi::hashing::cnc_bloom_params(50, 40, 128).unwrap();
    let opened = p.ots * u64::from(p.open_per_mille) / 1000;
    assert_ne!(opened % 8, 0, "{opened} opened OTs");
    let ((ro, so), _) = attack_receiver(
        Target::first(rr17a::MSG_OPENING),
        Attack::Edit(|f| {
            let packed = f.len() - 48;
            f[packed - 1] |= 0x80;
        }),
    );
    assert_malformed_as(
        &so.unwrap_err(),
        rr17a::MSG_OPENING,
        "bits set after the last opened choice",
    );
    assert!(ro.is_err());
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

#[test]
fn undecodable_endemic_points_are_refused() {
    // The receiver is the endemic-OT sender: its A, not a canonical encoding, or the identity.
    for (bad, reason) in [
        (
            [0xffu8; 32],
            "element 0 is not a valid Ristretto255 point encoding",
        ),
        ([0u8; 32], "element 0 is the identity point"),
    ] {
        let ((ro, so), _) = attack_with(
            Party::Receiver,
            Target::first(MSG_ENDEMIC_SENDER_POINT),
            Attack::Replace(bad.to_vec()),
            &real(),
        );
        assert_malformed_as(&so.unwrap_err(), MSG_ENDEMIC_SENDER_POINT, reason);
        assert!(ro.is_err());
    }
    // The sender's first pair with its first point not a canonical encoding.
    let ((ro, _), _) = attack_with(
        Party::Sender,
        Target::first(MSG_ENDEMIC_RECEIVER_PAIRS),
        Attack::Edit(|f| f[..32].fill(0xff)),
        &real(),
    );
    assert_malformed_as(
        &ro.unwrap_err(),
        MSG_ENDEMIC_RECEIVER_PAIRS,
        "element 0 is not a valid Ristretto255 point encoding",
    );
}

#[test]
fn a_kos_receiver_that_does_not_open_its_seed_or_fails_the_correlation_check_is_caught() {
    // The receiver is the KOS receiver: its seed share or nonce changed after its commitment.
    let ((ro, so), _) = attack_receiver(Target::first(kos::MSG_OPENING), Attack::FlipBit(0));
    assert_check_failed_as(
        &so.unwrap_err(),
        "the OT receiver's opening does not match its commitment to its challenge seed \
         (KOS coin toss)",
    );
    assert!(ro.is_err());
    // Its check value t (the second 16 bytes) no longer Σχ_i·q_i ⊕ x·s: what columns with
    // more than one choice bit per OT give.
    let ((ro, so), _) = attack_receiver(Target::first(kos::MSG_PROOF), Attack::FlipBit(16));
    assert_check_failed_as(
        &so.unwrap_err(),
        "the OT receiver's columns are inconsistent (KOS correlation check)",
    );
    assert!(ro.is_err());
}
