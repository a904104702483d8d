//! `rr17_ec` over an in-memory channel: exact intersection indices against a `HashSet` oracle,
//! the traffic formula, and deviations of either party: an opening that does not open its
//! commitment, undecodable base-OT points, a KOS opening or check value that does not verify,
//! OOS16 rows that are not codewords, a forged OOS16 proof or one with an input sum above 76
//! bits, and altered commitments or entries (which can only lose matches), each ending in an
//! error or a subset of the true intersection.

use crate::common;
use crate::common::{
    Outcome, assert_check_failed_as, assert_malformed, assert_malformed_as, assert_subset, fast,
    real,
};
use blindjoin_core::Error;
use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};
use blindjoin_ot::ext::{kos, oos};
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::rr17_ec;
use blindjoin_psi::{Party, Protocol, Security};
use blindjoin_testkit::{Attack, Target};

static P: &Protocol = &rr17_ec::PROTOCOL;

#[test]
fn exact_indices() {
    common::exact_suite(
        P,
        &[(3000, 2000, 777), (2000, 3000, 1999), (1, 5000, 1)],
        1818,
    );
}

#[test]
fn descriptor_claims_malicious_security() {
    assert_eq!(P.security, Security::Malicious);
    assert_eq!(P.kappa, &[128]);
}

#[test]
fn communication_at_2_20() {
    // 2^17 bins of B slots for the receiver's items; 64 bytes of u columns per OOS16 instance;
    // n2 commitments of 32 bytes and n2·B entries of 20 bytes.
    let n = 1u64 << 20;
    let traffic = (P.traffic)(&Sizes::new(n, n)).unwrap();
    let bytes = |name: &str| traffic.iter().find(|(m, _)| *m == name).unwrap().1;
    let b = blindjoin_psi::hashing::max_bin_size(n, n / 8, 40).unwrap() as u64;
    let slots = (n / 8) * b;
    let u = bytes(oos::MSG_U_COLUMNS);
    assert!(u >= 64 * slots && u < 64 * slots + slots / 8, "{u}");
    assert_eq!(bytes(rr17_ec::MSG_COMMITMENTS), 32 * n + 4 * (n >> 14));
    assert_eq!(bytes(rr17_ec::MSG_ENTRIES), b * (20 * n + 4 * (n >> 16)));
    // RR17 Fig. 8 reports 1322 MB for EC-ROM at 2^20 (both parties): within 10 %.
    let total: u64 = traffic.iter().map(|(_, b)| b).sum();
    assert!((1_189_800_000..1_454_200_000).contains(&total), "{total}");
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

/// Flips bit 0 of the first row in the first 256 of the 512 u columns.
#[allow(clippy::ptr_arg)] // the signature of `Attack::Edit`
fn corrupt_row(frame: &mut Vec<u8>) {
    let rb = frame.len() / 512;
    for j in 0..256 {
        frame[j * rb] ^= 1;
    }
}

#[test]
fn an_opening_that_does_not_open_the_commitment_is_refused() {
    let ((ro, so), _) = attack_receiver(
        Target::first(rr17_ec::MSG_OPENING),
        Attack::Edit(|f| *f.last_mut().unwrap() ^= 1),
    );
    check_failed(&so.unwrap_err(), "commitment");
    assert!(ro.is_err());
}

#[test]
fn rows_that_are_not_codewords_and_forged_proofs_are_caught() {
    let ((ro, so), _) =
        attack_receiver(Target::first(oos::MSG_U_COLUMNS), Attack::Edit(corrupt_row));
    check_failed(&so.unwrap_err(), "OOS16");
    assert!(ro.is_err());
    let ((_, so), _) = attack_receiver(Target::first(oos::MSG_PROOF), Attack::FlipBit(17));
    check_failed(&so.unwrap_err(), "OOS16");
}

/// The receiver's proof with bit 127 of its first input sum W_0 set (the last 640 bytes of a
/// proof are the 40 input sums, 16 bytes each, little-endian): above the code's 76 bits.
#[test]
fn an_input_sum_above_76_bits_is_malformed() {
    let ((ro, so), _) = attack_receiver(
        Target::first(oos::MSG_PROOF),
        Attack::Edit(|f| {
            let w0 = f.len() - 40 * 16;
            f[w0 + 15] |= 0x80;
        }),
    );
    assert_malformed_as(
        &so.unwrap_err(),
        oos::MSG_PROOF,
        "input sum 0 has bits above 76",
    );
    assert!(ro.is_err());
}

/// The sender is the KOS receiver of the 512 base OTs: the receiver checks its coin toss and
/// its columns.
#[test]
fn a_kos_receiver_that_does_not_open_its_seed_or_fails_the_correlation_check_is_caught() {
    let ((ro, so), _) = attack_sender(Target::first(kos::MSG_OPENING), Attack::FlipBit(0));
    assert_check_failed_as(
        &ro.unwrap_err(),
        "the OT receiver's opening does not match its commitment to its challenge seed \
         (KOS coin toss)",
    );
    assert!(so.is_err());
    // The check value t (the second 16 bytes) flipped.
    let ((ro, so), _) = attack_sender(Target::first(kos::MSG_PROOF), Attack::FlipBit(16));
    assert_check_failed_as(
        &ro.unwrap_err(),
        "the OT receiver's columns are inconsistent (KOS correlation check)",
    );
    assert!(so.is_err());
}

#[test]
fn undecodable_endemic_points_are_refused() {
    // The sender is the endemic-OT sender: its A, not a canonical encoding, or the identity.
    for (bad, reason) in [
        (
            [0xffu8; 32],
            "element 0 is not a valid Ristretto255 point encoding",
        ),
        ([0u8; 32], "element 0 is the identity point"),
    ] {
        let ((ro, so), _) = common::attacked(
            P,
            Party::Sender,
            Target::first(MSG_ENDEMIC_SENDER_POINT),
            Attack::Replace(bad.to_vec()),
            &real(),
        );
        assert_malformed_as(&ro.unwrap_err(), MSG_ENDEMIC_SENDER_POINT, reason);
        assert!(so.is_err());
    }
    let ((_, so), _) = common::attacked(
        P,
        Party::Receiver,
        Target::first(MSG_ENDEMIC_RECEIVER_PAIRS),
        Attack::Edit(|f| f[..32].fill(0xff)),
        &real(),
    );
    assert_malformed_as(
        &so.unwrap_err(),
        MSG_ENDEMIC_RECEIVER_PAIRS,
        "element 0 is not a valid Ristretto255 point encoding",
    );
}

#[test]
fn truncated_messages_are_malformed() {
    let ((_, so), _) = attack_receiver(Target::first(oos::MSG_U_COLUMNS), Attack::Truncate(100));
    assert_malformed(&so.unwrap_err());
    for msg in [rr17_ec::MSG_COMMITMENTS, rr17_ec::MSG_ENTRIES] {
        let ((ro, _), _) = attack_sender(Target::first(msg), Attack::Truncate(100));
        assert_malformed(&ro.unwrap_err());
    }
}

#[test]
fn altered_commitments_and_entries_only_lose_matches() {
    for msg in [rr17_ec::MSG_COMMITMENTS, rr17_ec::MSG_ENTRIES] {
        for edit in [
            (|f: &mut Vec<u8>| f.iter_mut().for_each(|b| *b ^= 0x5a)) as fn(&mut Vec<u8>),
            |f: &mut Vec<u8>| f[5] ^= 1,
            |f: &mut Vec<u8>| f.reverse(),
        ] {
            let ((ro, so), expected) = attack_sender(Target::first(msg), Attack::Edit(edit));
            so.unwrap();
            let got = ro.unwrap().indices;
            assert_subset(&got, &expected, expected.len());
        }
    }
}
