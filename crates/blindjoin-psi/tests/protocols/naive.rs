//! `naive` over an in-memory channel: exact intersection indices against a `HashSet` oracle, and
//! a tampered hash that changes the result but never panics.

use crate::common;
use crate::common::fast;
use blindjoin_psi::protocols::naive;
use blindjoin_psi::{Party, Protocol};
use blindjoin_testkit::{Attack, Target};

static P: &Protocol = &naive::PROTOCOL;

#[test]
fn exact_indices() {
    // Several frames of hashes (2^14 each) with a partial last one.
    common::exact_suite(P, &[(40_000, 20_001, 12_345)], 100);
}

#[test]
fn flipped_hash_bit_gives_a_subset() {
    let target = Target::first(naive::MSG_HASHES);
    let ((ro, so), expected) =
        common::attacked(P, Party::Sender, target, Attack::FlipBit(0), &fast());
    so.unwrap();
    common::assert_subset(&ro.unwrap().indices, &expected, 1);
}
