//! `rr17_de` over an in-memory channel: exact intersection indices against a `HashSet` oracle,
//! the traffic formula, and deviations of either party: an opening that does not open its
//! commitment, undecodable base-OT points, a KOS opening or check value that does not verify,
//! OOS16 rows that are not codewords, forged OOS16 proofs and input sums above 76 bits in each
//! direction, masks out of bucket order, altered masks (which can only lose matches), each
//! ending in an error or a subset of the true intersection.

use crate::common;
use crate::common::{
    Outcome, assert_check_failed_as, assert_malformed, assert_malformed_as, assert_subset, fast,
    real,
};
use blindjoin_core::Error;
use blindjoin_core::item::items_from_records;
use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};
use blindjoin_ot::ext::kos;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::rr17_de::{self, FORWARD, REVERSE};
use blindjoin_psi::{Party, Protocol, Security};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party, sets_with_overlap};

static P: &Protocol = &rr17_de::PROTOCOL;

#[test]
fn exact_indices() {
    common::exact_suite(
        P,
        &[(3000, 2000, 777), (2000, 3000, 1999), (1, 5000, 1)],
        1717,
    );
}

#[test]
fn descriptor_claims_malicious_security() {
    assert_eq!(P.security, Security::Malicious);
    assert_eq!(P.kappa, &[128]);
}

#[test]
fn communication_at_2_20() {
    // 2^17 bins; B slots per bin and side; 64 bytes of u columns per OOS16 instance in each
    // direction; n2·B_R masks of ⌈(80 + ⌈log2 B_S⌉)/8⌉ bytes.
    let n = 1u64 << 20;
    let traffic = (P.traffic)(&Sizes::new(n, n)).unwrap();
    let bytes = |name: &str| traffic.iter().find(|(m, _)| *m == name).unwrap().1;
    let b = blindjoin_psi::hashing::max_bin_size(n, n / 8, 40).unwrap() as u64;
    let slots = (n / 8) * b;
    let fwd = bytes(FORWARD.u);
    assert!(
        fwd >= 64 * (slots + 512) && fwd < 64 * (slots + 512) + slots / 8,
        "{fwd}"
    );
    let rev = bytes(REVERSE.u);
    assert!(rev >= 64 * slots && rev < 64 * slots + slots / 8, "{rev}");
    let mask_len = (80 + u64::from((b as u32).next_power_of_two().trailing_zeros())).div_ceil(8);
    // One frame per 2^16 masks of each receiver slot position.
    let masks = bytes(rr17_de::MSG_MASKS);
    assert_eq!(masks, n * b * mask_len + 4 * b * (n / (1 << 16)), "{masks}");
    // RR17 Fig. 8 reports 1092 MB for DE-ROM at 2^20 (both parties): within 10 %.
    let total: u64 = traffic.iter().map(|(_, b)| b).sum();
    assert!((1_092_000_000..1_201_200_000).contains(&total), "{total}");
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

/// Flips bit 0 of the first row in the first 256 of the 512 u columns: the row is the
/// receiver's codeword plus a non-codeword difference.
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
        Target::first(rr17_de::MSG_OPENING),
        Attack::Edit(|f| *f.last_mut().unwrap() ^= 1),
    );
    check_failed(&so.unwrap_err(), "commitment");
    assert!(ro.is_err());
}

#[test]
fn rows_that_are_not_codewords_are_caught_in_both_directions() {
    // Frame 0 of the forward u columns is the reverse direction's base OTs, frame 1 the first
    // chunk of the receiver's slots.
    for frame in [0, 1] {
        let ((ro, so), _) = attack_receiver(
            Target {
                msg: FORWARD.u,
                frame,
            },
            Attack::Edit(corrupt_row),
        );
        check_failed(&so.unwrap_err(), "OOS16");
        assert!(ro.is_err());
    }
    // The receiver checks the sender's rows after the sender's last message of the chunk, so
    // the sender may finish first: only the receiver's error is certain (the CLI's final
    // verdict then fails the sender's run too).
    let ((ro, _), _) = attack_sender(Target::first(REVERSE.u), Attack::Edit(corrupt_row));
    check_failed(&ro.unwrap_err(), "OOS16");
}

#[test]
fn forged_proofs_are_caught_in_both_directions() {
    let ((_, so), _) = attack_receiver(Target::first(FORWARD.proof), Attack::FlipBit(17));
    check_failed(&so.unwrap_err(), "OOS16");
    let ((ro, _), _) = attack_sender(Target::first(REVERSE.proof), Attack::FlipBit(17));
    check_failed(&ro.unwrap_err(), "OOS16");
}

/// Sets bit 127 of the first input sum W_0 (the last 640 bytes of a proof are the 40 input
/// sums, 16 bytes each, little-endian): above the code's 76 bits.
#[allow(clippy::ptr_arg)] // the signature of `Attack::Edit`
fn input_sum_above_76_bits(proof: &mut Vec<u8>) {
    let w0 = proof.len() - 40 * 16;
    proof[w0 + 15] |= 0x80;
}

#[test]
fn an_input_sum_above_76_bits_is_malformed_in_both_directions() {
    let ((ro, so), _) = attack_receiver(
        Target::first(FORWARD.proof),
        Attack::Edit(input_sum_above_76_bits),
    );
    assert_malformed_as(
        &so.unwrap_err(),
        FORWARD.proof,
        "input sum 0 has bits above 76",
    );
    assert!(ro.is_err());
    // As for the rows, only the receiver's error is certain in this direction.
    let ((ro, _), _) = attack_sender(
        Target::first(REVERSE.proof),
        Attack::Edit(input_sum_above_76_bits),
    );
    assert_malformed_as(
        &ro.unwrap_err(),
        REVERSE.proof,
        "input sum 0 has bits above 76",
    );
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

/// 5000 sender items make two buckets of masks per slot position (one bucket bit): the first
/// and the last mask of position 0 swapped put a mask of bucket 1 before those of bucket 0.
#[test]
fn masks_out_of_bucket_order_are_malformed() {
    const N_S: usize = 5000;
    let (r, s) = sets_with_overlap(20, N_S, 5, 17);
    let (r, s) = (items_from_records(&r), items_from_records(&s));
    let (ro, so) = run_two_party(
        |ch| P.receive(ch, &r, &fast(), &mut rng(1)),
        |ch| {
            let mut t = Tamper::new(
                ch,
                Target::first(rr17_de::MSG_MASKS),
                Attack::Edit(|f| {
                    let len = f.len() / N_S;
                    assert_eq!(f.len(), N_S * len, "one frame of position 0's masks");
                    for k in 0..len {
                        f.swap(k, (N_S - 1) * len + k);
                    }
                }),
            );
            let out = P.send(&mut t, &s, &fast(), &mut rng(2));
            assert!(t.applied());
            out
        },
    );
    // The receiver stops at position 0, so the sender may still be sending the masks of the
    // other positions when the receiver hangs up.
    match so {
        Ok(_) => {}
        Err(Error::SendFailed { sending }) => assert_eq!(sending, rr17_de::MSG_MASKS),
        Err(e) => panic!("{e}"),
    }
    assert_malformed_as(
        &ro.unwrap_err(),
        rr17_de::MSG_MASKS,
        "masks out of bucket order",
    );
}

#[test]
fn truncated_messages_are_malformed() {
    let ((_, so), _) = attack_receiver(Target::first(FORWARD.u), Attack::Truncate(100));
    assert_malformed(&so.unwrap_err());
    let ((ro, _), _) = attack_sender(Target::first(rr17_de::MSG_MASKS), Attack::Truncate(100));
    assert_malformed(&ro.unwrap_err());
}

#[test]
fn altered_masks_only_lose_matches() {
    for at in [0usize, 5, 1000] {
        let ((ro, so), expected) = attack_sender(
            Target::first(rr17_de::MSG_MASKS),
            Attack::Edit(match at {
                0 => |f: &mut Vec<u8>| f.iter_mut().for_each(|b| *b ^= 0x5a),
                5 => |f: &mut Vec<u8>| f[5] ^= 1,
                _ => |f: &mut Vec<u8>| f.reverse(),
            }),
        );
        so.unwrap();
        let got = ro.unwrap().indices;
        assert_subset(&got, &expected, expected.len());
    }
}

/// A receiver may fill the empty slots of its bins, so it can test m·B_R items, not the n1 it
/// announced: a sender bounds that, not the announced size. Bounded at exactly m·B_R of an
/// announced 1000 the run goes on; bounded at 1000 the sender refuses the receiver in the
/// handshake, naming the budget.
#[test]
fn the_senders_bound_is_on_what_the_receiver_can_test() {
    let (r, s) = blindjoin_testkit::sets_with_overlap(1000, 1200, 300, 5);
    let recv = blindjoin_core::item::items_from_records(&r);
    let send = blindjoin_core::item::items_from_records(&s);
    let budget = (P.queries)(&Sizes::new(1000, 1200)).unwrap();
    // m = ⌈1200/8⌉ bins of B_R slots.
    let slots = blindjoin_psi::hashing::max_bin_size(1000, 150, 40).unwrap() as u64;
    assert_eq!(budget, 150 * slots);
    assert!(budget > 1000, "{budget}");
    let bounded = |max| blindjoin_psi::RunOptions {
        max_peer_set_size: max,
        ..fast()
    };
    let (r, s) = common::run(P, &recv, &send, &fast(), &bounded(budget));
    assert!(r.is_ok() && s.is_ok(), "{r:?} {s:?}");
    let (r, s) = common::run(P, &recv, &send, &fast(), &bounded(1000));
    let want = format!(
        "parameter mismatch on `receiver set size`: ours is a receiver that can test at most \
         1000 guessed keys (this one could test {budget} in a rr17_de run), the peer's is 1000"
    );
    assert_eq!(s.unwrap_err().to_string(), want);
    assert!(r.is_err());
}
