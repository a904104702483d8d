//! `kkrt16` over an in-memory channel: exact intersection indices against a `HashSet` oracle,
//! tags longer than the receiver's table stores, the bin count mismatch naming its field, and
//! tampered OPRF columns that change the result but never panic.

use crate::common;
use crate::common::{assert_malformed, fast, field_of};
use blindjoin_core::item::items_from_records;
use blindjoin_ot::ext::kkrt;
use blindjoin_psi::protocols::kkrt16;
use blindjoin_psi::{Party, Protocol, RunOptions};
use blindjoin_testkit::{Attack, Target, oracle, sets_with_overlap};

static P: &Protocol = &kkrt16::PROTOCOL;

#[test]
fn exact_indices() {
    // Several tag frames (2^14 each) with a partial last one; b > 2^16, so several OPRF chunks.
    common::exact_suite(P, &[(40_000, 20_001, 12_345)], 100);
}

#[test]
fn bin_count_mismatch_names_the_field() {
    // The bin count is a postcard varint; change it.
    let target = Target::first(kkrt16::MSG_SETUP);
    let ((ro, so), _) = common::attacked(P, Party::Receiver, target, Attack::FlipBit(0), &fast());
    assert_eq!(field_of(&so.unwrap_err()), Some("bins"));
    assert!(ro.is_err());
}

#[test]
fn tampered_oprf_matrix_gives_a_subset() {
    // A flipped bit in the u columns changes one bin's OPRF key; the sender cannot notice
    // (semi-honest), the run finishes, and no wrong index appears.
    let target = Target::first(kkrt::MSG_U_COLUMNS);
    let ((ro, so), expected) =
        common::attacked(P, Party::Receiver, target, Attack::FlipBit(3), &fast());
    so.unwrap();
    common::assert_subset(&ro.unwrap().indices, &expected, 1);
    // A truncated u frame is refused by the sender.
    let ((_, so), _) = common::attacked(P, Party::Receiver, target, Attack::Truncate(100), &fast());
    assert_malformed(&so.unwrap_err());
}

#[test]
fn long_tags_are_compared_whole() {
    // λ = 80 with 300 × 500 items: 80 + ⌈log2(150000)⌉ = 98-bit tags, 13 bytes, beyond the
    // 96 bits the receiver's tag table stores.
    let (r, s) = sets_with_overlap(300, 500, 120, 11);
    let expected = oracle(&r, &s);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let o = RunOptions {
        lambda: 80,
        ..common::fast()
    };
    let (ro, so) = common::run(P, &ri, &si, &o, &o);
    so.unwrap();
    assert_eq!(ro.unwrap().indices, expected);
}

#[test]
fn kappa_80_narrows_the_code_to_three_blocks() {
    // PSZ14 Tab. 2's 80-bit level: Hamming distance 80 over 3·2^32 evaluations needs 334 code
    // bits (`kkrt::min_code_len`), three AES blocks: 384 bits of u columns per bin instead of
    // 512, which the traffic check of `check_exact` holds the metered run to.
    let at80 = RunOptions {
        kappa: 80,
        ..common::fast()
    };
    let code_bits = |o: &RunOptions| {
        (P.params)(o)
            .into_iter()
            .find(|(k, _)| k == "code_bits")
            .map(|(_, v)| v)
    };
    assert_eq!(code_bits(&at80).as_deref(), Some("384"));
    assert_eq!(code_bits(&common::fast()).as_deref(), Some("512"));
    common::check_exact(P, (3_000, 2_500, 1_111), 120, &at80, false);
    common::check_exact(
        P,
        (10, 10, 3),
        121,
        &RunOptions {
            kappa: 80,
            ..common::real()
        },
        true,
    );
    // Both parties must ask for the same level.
    let (r, s, _) = common::small_sets();
    let (ro, so) = common::run(P, &r, &s, &at80, &common::fast());
    for e in [ro.unwrap_err(), so.unwrap_err()] {
        assert!(
            field_of(&e) == Some("kappa") || e.to_string().contains("kappa"),
            "{e}"
        );
    }
}
