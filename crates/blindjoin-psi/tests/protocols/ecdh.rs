//! `ecdh` over an in-memory channel: exact intersection indices against a `HashSet` oracle, and
//! invalid Ristretto255 encodings from either side refused naming the element.

use crate::common;
use crate::common::{assert_malformed, fast};
use blindjoin_psi::protocols::ecdh;
use blindjoin_psi::{Party, Protocol};
use blindjoin_testkit::{Attack, Target};

static P: &Protocol = &ecdh::PROTOCOL;

#[test]
fn exact_indices() {
    // Several point frames (2^14 points each) with a partial last one.
    common::exact_suite(P, &[(40_000, 20_001, 12_345)], 100);
}

#[test]
fn invalid_point_from_sender_is_malformed() {
    // Flipping bit 0 of a Ristretto255 encoding makes it non-canonical ("negative"), which must
    // not decode.
    let target = Target::first(ecdh::MSG_SENDER_POINTS);
    let ((ro, _), _) = common::attacked(P, Party::Sender, target, Attack::FlipBit(32 * 5), &fast());
    let e = ro.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("element 5"), "{e}");
}

#[test]
fn invalid_point_from_receiver_is_malformed() {
    let target = Target::first(ecdh::MSG_RECEIVER_POINTS);
    let ((_, so), _) = common::attacked(P, Party::Receiver, target, Attack::FlipBit(0), &fast());
    let e = so.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("element 0"), "{e}");
}

#[test]
fn flipped_tag_bit_gives_a_subset() {
    // A semi-honest protocol cannot detect a wrong tag, but it must still finish cleanly.
    let target = Target::first(ecdh::MSG_TAGS);
    let ((ro, so), expected) =
        common::attacked(P, Party::Sender, target, Attack::FlipBit(0), &fast());
    so.unwrap();
    common::assert_subset(&ro.unwrap().indices, &expected, 1);
}
