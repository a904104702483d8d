//! `cm20_mal` over an in-memory channel: exact intersection indices against a `HashSet` oracle
//! (with the ideal and with the real, endemic, base OT), the communication at CM20 Table 2's
//! size, and a malicious sender's deviations: each ends in an error naming the message, or in
//! the output the simulator of CM20 Thm. 3.2 gives (the intersection with the items whose
//! values the sender computed honestly), never in a panic or a hang of the honest receiver.

use crate::common;
use crate::common::{Outcome, assert_malformed, assert_subset, fast, real};
use blindjoin_core::Error;
use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::{cm20, cm20_mal};
use blindjoin_psi::{Party, Protocol, RunOptions, Security};
use blindjoin_testkit::{Attack, Target};

static P: &Protocol = &cm20_mal::PROTOCOL;

/// OPRF values of the attack runs (50 receiver items): 40 + 64 + ⌈log2 50⌉ = 110 bits.
const TAG: usize = 14;

#[test]
fn exact_indices() {
    let extra = [(128, 3000, 100), (129, 3000, 129), (40_000, 20_001, 12_345)];
    common::exact_suite(P, &extra, 900);
    // Endemic base OTs at a size whose w spans two frames of base-OT pairs.
    common::check_exact(P, (3000, 2000, 777), 910, &real(), true);
}

#[test]
fn descriptor_names_the_malicious_party() {
    assert_eq!(
        P.security,
        Security::OneSidedMalicious {
            malicious: Party::Sender
        }
    );
    assert!(P.assumptions.contains("receiver must be semi-honest"));
    assert_eq!(cm20::PROTOCOL.security, Security::SemiHonest);
}

#[test]
fn communication_at_table_2_size() {
    // n = 2^20: w = 621 as in cm20, values of ℓ2 = 124 bits = 16 bytes (Table 1's malicious
    // column) instead of 10, and 64 bytes per endemic base OT.
    let n = 1u64 << 20;
    let traffic = (P.traffic)(&Sizes::new(n, n)).unwrap();
    let bytes = |name: &str| traffic.iter().find(|(m, _)| *m == name).unwrap().1;
    assert_eq!(bytes(cm20::MSG_DELTA), 621 * ((n / 8) + 4));
    assert_eq!(bytes(cm20::MSG_TAGS), 16 * n + 64 * 4);
    assert_eq!(bytes(MSG_ENDEMIC_RECEIVER_PAIRS), 621 * 64 + 4);
    assert_eq!(bytes(MSG_ENDEMIC_SENDER_POINT), 32 + 4);
}

fn attack_sender(target: Target, attack: Attack, opts: &RunOptions) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Sender, target, attack, opts)
}

fn attack_receiver(target: Target, attack: Attack, opts: &RunOptions) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Receiver, target, attack, opts)
}

#[test]
fn undecodable_base_ot_pairs_are_refused() {
    // The sender, as endemic-OT receiver, sends a pair whose first point is not a canonical
    // encoding (all bytes 0xff): the receiver stops before it sends k or any Δ column.
    let ((ro, so), _) = attack_sender(
        Target::first(MSG_ENDEMIC_RECEIVER_PAIRS),
        Attack::Edit(|f| f[..32].fill(0xff)),
        &real(),
    );
    let e = ro.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("(r_i0, r_i1)"), "{e}");
    assert!(so.is_err());
    // A frame cut inside a pair is refused as well.
    let ((ro, _), _) = attack_sender(
        Target::first(MSG_ENDEMIC_RECEIVER_PAIRS),
        Attack::Truncate(64 * 3 + 5),
        &real(),
    );
    assert_malformed(&ro.unwrap_err());
}

#[test]
fn an_undecodable_endemic_point_from_the_receiver_is_refused() {
    // The honest sender refuses the receiver's A unless it decodes to a point other than O.
    for bad in [[0xffu8; 32], [0u8; 32]] {
        let ((ro, so), _) = attack_receiver(
            Target::first(MSG_ENDEMIC_SENDER_POINT),
            Attack::Replace(bad.to_vec()),
            &real(),
        );
        let e = so.unwrap_err();
        assert_malformed(&e);
        assert!(e.to_string().contains("point A"), "{e}");
        assert!(ro.is_err());
    }
}

#[test]
fn the_receiver_reads_exactly_n_s_values() {
    // 60 sender items, 14-byte values in one frame. One value more than announced, or a
    // frame cut inside a value, is refused; five whole values and a hang-up leave the
    // receiver with a closed peer, not waiting.
    for attack in [Attack::Extend(vec![0; TAG]), Attack::Truncate(TAG * 5 + 3)] {
        let ((ro, _), _) = attack_sender(Target::first(cm20::MSG_TAGS), attack.clone(), &fast());
        let e = ro.unwrap_err();
        assert_malformed(&e);
        assert!(e.to_string().contains("OPRF values"), "{attack:?}: {e}");
    }
    let ((ro, _), _) = attack_sender(
        Target::first(cm20::MSG_TAGS),
        Attack::Truncate(TAG * 5),
        &fast(),
    );
    assert!(matches!(ro.unwrap_err(), Error::PeerClosed { .. }));
}

/// A sender that sends 60 values of the semi-honest length (7 bytes at these sizes, 420
/// bytes) where 60 of 14 bytes are due: the receiver reads the frame as 30 whole values and
/// waits for the other 30, so it ends with a closed peer and no output.
#[test]
fn a_sender_with_the_semi_honest_value_length_gives_no_output() {
    let semi = (cm20::PROTOCOL.traffic)(&Sizes::new(50, 60)).unwrap();
    let values = semi.iter().find(|(m, _)| *m == cm20::MSG_TAGS).unwrap().1;
    assert_eq!(values, 60 * 7 + 4, "cm20's values at these sizes");
    let ((ro, so), _) = attack_sender(
        Target::first(cm20::MSG_TAGS),
        Attack::Edit(|f| {
            assert_eq!(f.len(), 60 * TAG);
            f.truncate(60 * 7);
        }),
        &fast(),
    );
    so.unwrap();
    match ro.unwrap_err() {
        Error::PeerClosed { during } => assert_eq!(during, cm20::MSG_TAGS),
        e => panic!("{e}"),
    }
}

#[test]
fn altered_values_give_what_the_simulator_gives() {
    // A value the sender did not obtain from H2 matches none of the receiver's (ℓ2 covers 2^64
    // queries): a flipped bit removes exactly the item it belongs to, whatever bit it is.
    for at in [0, TAG * 13 + 2, TAG * 59 + 13] {
        let ((ro, so), expected) =
            attack_sender(Target::first(cm20::MSG_TAGS), Attack::FlipBit(at), &fast());
        so.unwrap();
        let got = ro.unwrap().indices;
        assert_subset(&got, &expected, 1);
    }
    // Values made up without the OT keys (uniform bytes) match nothing: the simulator's input
    // for such a sender has no item of the receiver's set.
    let ((ro, so), _) = attack_sender(
        Target::first(cm20::MSG_TAGS),
        Attack::Edit(|f| {
            for (i, b) in f.iter_mut().enumerate() {
                *b = (i as u8).wrapping_mul(151).wrapping_add(7);
            }
        }),
        &fast(),
    );
    so.unwrap();
    assert_eq!(ro.unwrap().indices, Vec::<usize>::new());
}

#[test]
fn a_sender_that_repeats_a_value_gains_nothing() {
    // Copying the first value over all others: the receiver finds at most the one item that
    // value belongs to (a sender with input of one item).
    let ((ro, so), expected) = attack_sender(
        Target::first(cm20::MSG_TAGS),
        Attack::Edit(|f| {
            let first = f[..TAG].to_vec();
            for v in f.chunks_exact_mut(TAG) {
                v.copy_from_slice(&first);
            }
        }),
        &fast(),
    );
    so.unwrap();
    let got = ro.unwrap().indices;
    assert!(got.len() <= 1, "{got:?}");
    assert_subset(&got, &expected, expected.len());
}

#[test]
fn parameters_from_the_receiver_are_checked() {
    // ℓ2 is the last byte of Setup (m and w take two bytes each): 110 bits here; a receiver
    // announcing the semi-honest length is refused by name.
    let ((_, so), _) = attack_receiver(Target::first(cm20::MSG_SETUP), Attack::FlipBit(4), &fast());
    assert_eq!(common::field_of(&so.unwrap_err()), Some("tag_bits"));
}
