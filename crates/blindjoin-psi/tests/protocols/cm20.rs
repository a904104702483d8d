//! `cm20` over an in-memory channel: exact intersection indices against a `HashSet` oracle on
//! independently shuffled, balanced and unbalanced sets, whatever the thread count; the code's
//! communication at CM20 Table 2's size; parameter mismatches naming the field; tampered Δ
//! columns and OPRF values giving a subset of the true result (semi-honest tampering cannot be
//! detected), and the Δ frames of later columns refused when cut.

use crate::common;
use crate::common::{Outcome, assert_malformed, assert_subset, fast};
use blindjoin_core::Error;
use blindjoin_core::item::items_from_records;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::cm20;
use blindjoin_psi::{Party, Protocol, RunOptions};
use blindjoin_testkit::{Attack, Target, oracle, sets_with_overlap};

static P: &Protocol = &cm20::PROTOCOL;

#[test]
fn exact_indices() {
    let extra = [
        // m = 128 rows, then 256 (just past a power of two).
        (128, 3000, 100),
        (129, 3000, 129),
        // Several tag frames (2^14 each) with a partial last one; m = 2^16.
        (40_000, 20_001, 12_345),
        (20_001, 40_000, 12_345),
    ];
    common::exact_suite(P, &extra, 300);
}

#[test]
fn result_does_not_depend_on_the_thread_count() {
    let (r, s) = sets_with_overlap(3000, 2000, 777, 41);
    let expected = oracle(&r, &s);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let o = common::fast();
        let (ro, so) = pool.install(|| common::run(P, &ri, &si, &o, &o));
        so.unwrap();
        assert_eq!(ro.unwrap().indices, expected, "{threads} threads");
    }
}

#[test]
fn communication_at_table_2_size() {
    // CM20 Table 2 at n = 2^20 (d = 128, σ = 40, w = 621): 87.6 "MB" in total, i.e. MiB
    // (91.86·10^6 bytes). Ours, from the formula the traffic tests check against real runs:
    // w·m/8 bytes of Δ, 10-byte values (ℓ2 = 80 bits), the base OTs and framing: 91.9·10^6
    // bytes, within 0.1 % of the paper's.
    let n = 1u64 << 20;
    let traffic = (P.traffic)(&Sizes::new(n, n)).unwrap();
    let total: u64 = traffic.iter().map(|(_, b)| b).sum();
    let bytes = |name: &str| traffic.iter().find(|(m, _)| *m == name).unwrap().1;
    assert_eq!(bytes(cm20::MSG_DELTA), 621 * ((n / 8) + 4));
    assert_eq!(bytes(cm20::MSG_TAGS), 10 * n + 64 * 4);
    assert!((91_800_000..92_000_000).contains(&total), "{total}");
    let paper_mib = 87.6;
    let ratio = total as f64 / (paper_mib * f64::from(1u32 << 20));
    assert!((1.0..1.001).contains(&ratio), "{ratio}");
}

#[test]
fn kappa_80_narrows_the_matrix() {
    // d = κ = 80: w = 446 columns at n = 2^20 instead of 621, the Δ traffic in proportion.
    let n = 1u64 << 20;
    let sizes = Sizes {
        kappa: 80,
        ..Sizes::new(n, n)
    };
    let traffic = (P.traffic)(&sizes).unwrap();
    let bytes = |name: &str| traffic.iter().find(|(m, _)| *m == name).unwrap().1;
    assert_eq!(bytes(cm20::MSG_DELTA), 446 * ((n / 8) + 4));
    // Real runs at κ = 80 hold to that formula message by message (base OTs included in the
    // second) and give the exact indices.
    let at80 = RunOptions {
        kappa: 80,
        ..fast()
    };
    common::check_exact(P, (5_000, 4_000, 1_500), 320, &at80, false);
    common::check_exact(
        P,
        (10, 10, 3),
        321,
        &RunOptions {
            kappa: 80,
            ..common::real()
        },
        true,
    );
}

fn attack_receiver(target: Target, attack: Attack) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Receiver, target, attack, &fast())
}

fn attack_sender(target: Target, attack: Attack) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Sender, target, attack, &fast())
}

#[test]
fn setup_mismatch_names_the_field() {
    // m = 128 is the varint 0x80 0x01; flipping bit 0 of its first byte announces m = 129.
    let ((ro, so), _) = attack_receiver(Target::first(cm20::MSG_SETUP), Attack::FlipBit(0));
    match so.unwrap_err() {
        Error::ParamMismatch { field, ours, peer } => {
            assert_eq!(
                (field.as_str(), ours.as_str(), peer.as_str()),
                ("m", "128", "129")
            );
        }
        e => panic!("{e}"),
    }
    assert!(ro.is_err());
    // Setup is 5 bytes (m and w take two each); the last is ℓ2 = 40 + ⌈log2(3000)⌉ = 52.
    let ((_, so), _) = attack_receiver(Target::first(cm20::MSG_SETUP), Attack::FlipBit(4));
    assert_eq!(common::field_of(&so.unwrap_err()), Some("tag_bits"));
}

#[test]
fn later_delta_columns_cut_or_lengthened_are_refused() {
    // At m = 128 every Δ column is one frame of 16 bytes.
    for frame in [1, 4] {
        for attack in [
            Attack::Truncate(15),
            Attack::Truncate(0),
            Attack::Extend(vec![0; 16]),
        ] {
            let ((ro, so), _) =
                attack_receiver(Target::frame(cm20::MSG_DELTA, frame), attack.clone());
            let e = so.unwrap_err();
            assert_malformed(&e);
            assert!(e.to_string().contains("Δ"), "{e}");
            assert!(ro.is_err(), "{attack:?}");
        }
    }
    let ((_, so), _) = attack_receiver(Target::frame(cm20::MSG_DELTA, 15), Attack::HangUp);
    assert!(matches!(so.unwrap_err(), Error::PeerClosed { .. }));
}

#[test]
fn flipped_delta_bit_gives_a_subset() {
    // A semi-honest sender cannot detect a wrong Δ bit: its C_j then differs from A_j ⊕ s_j·D_j
    // in one row, which can only lose matches.
    for (frame, at) in [(0, 0), (1, 7), (35, 15)] {
        let ((ro, so), expected) =
            attack_receiver(Target::frame(cm20::MSG_DELTA, frame), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, 1);
    }
}

#[test]
fn whole_tags_missing_leave_the_receiver_waiting_for_a_closed_peer() {
    // 60 tags of 40 + ⌈log2(3000)⌉ = 52 bits = 7 bytes in one frame; five whole tags sent.
    let ((ro, _), _) = attack_sender(Target::first(cm20::MSG_TAGS), Attack::Truncate(7 * 5));
    assert!(matches!(ro.unwrap_err(), Error::PeerClosed { .. }));
}

#[test]
fn flipped_tag_bit_gives_a_subset() {
    for at in [0, 7 * 13 + 2, 7 * 59 + 6] {
        let ((ro, so), expected) =
            attack_sender(Target::first(cm20::MSG_TAGS), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, 1);
    }
}
