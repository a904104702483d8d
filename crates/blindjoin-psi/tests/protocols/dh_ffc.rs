//! `dh_ffc` over an in-memory channel: exact intersection indices against a `HashSet` oracle at
//! every level it offers, elements outside the group or of the wrong length refused naming the
//! element, and the communication against PSZ14 Tab. 6.

use crate::common;
use crate::common::{BASE_CASES, assert_malformed, check_exact, fast, field_of};
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::dh_ffc;
use blindjoin_psi::{Party, Protocol, RunOptions};
use blindjoin_testkit::{Attack, Target};

static P: &Protocol = &dh_ffc::PROTOCOL;

fn at(kappa: u32) -> RunOptions {
    RunOptions { kappa, ..fast() }
}

#[test]
fn exact_indices_at_kappa_80() {
    // Frames of 2^13 elements of 128 bytes: 20,000 elements make three, the last partial.
    for (i, &case) in BASE_CASES
        .iter()
        .chain(&[(20_000, 9_001, 4_321)])
        .enumerate()
    {
        check_exact(P, case, 300 + i as u64, &at(80), false);
    }
}

#[test]
fn exact_indices_at_kappa_128_and_192() {
    // 384-byte elements in frames of 2^12; 8192-bit elements in frames of 2^11.
    check_exact(P, (5_000, 4_200, 1_234), 400, &at(128), false);
    check_exact(P, (10, 1000, 7), 401, &at(128), false);
    check_exact(P, (40, 30, 12), 402, &at(192), false);
}

#[test]
fn kappa_256_is_refused_naming_the_levels() {
    let (r, s, _) = common::small_sets();
    let (ro, so) = common::run(P, &r, &s, &at(256), &at(256));
    for e in [ro.unwrap_err(), so.unwrap_err()] {
        let text = e.to_string();
        assert!(
            text.contains("80, 128, 192") && text.contains("256"),
            "{text}"
        );
    }
}

#[test]
fn kappa_mismatch_names_the_field() {
    let (r, s, _) = common::small_sets();
    let (ro, so) = common::run(P, &r, &s, &at(80), &at(128));
    for e in [ro.unwrap_err(), so.unwrap_err()] {
        assert!(
            field_of(&e) == Some("kappa") || e.to_string().contains("kappa"),
            "{e}"
        );
    }
}

/// Element 5 of the frame raised above (p − 1)/2: its top byte becomes 0xff (p's is 0xff, q's
/// 0x7f), so it is either ≥ p or a residue's negative, never a signed residue.
#[allow(clippy::ptr_arg)] // the signature of `Attack::Edit`
fn above_q(frame: &mut Vec<u8>) {
    frame[5 * 128] = 0xff;
}

/// Element 3 set to zero, which is in no group.
#[allow(clippy::ptr_arg)]
fn zero(frame: &mut Vec<u8>) {
    frame[3 * 128..4 * 128].fill(0);
}

#[test]
fn elements_outside_the_group_are_refused_naming_the_element() {
    for (party, msg, attack, index) in [
        (
            Party::Sender,
            dh_ffc::MSG_SENDER_ELEMENTS,
            Attack::Edit(above_q),
            5,
        ),
        (
            Party::Receiver,
            dh_ffc::MSG_RECEIVER_ELEMENTS,
            Attack::Edit(above_q),
            5,
        ),
        (
            Party::Sender,
            dh_ffc::MSG_SENDER_ELEMENTS,
            Attack::Edit(zero),
            3,
        ),
        (
            Party::Receiver,
            dh_ffc::MSG_RECEIVER_ELEMENTS,
            Attack::Edit(zero),
            3,
        ),
    ] {
        let ((ro, so), _) = common::attacked(P, party, Target::first(msg), attack, &at(80));
        let e = if party == Party::Sender {
            ro.unwrap_err()
        } else {
            so.unwrap_err()
        };
        assert_malformed(&e);
        assert!(
            e.to_string()
                .contains(&format!("element {index} is not in the group")),
            "{e}"
        );
    }
}

#[test]
fn a_frame_of_the_wrong_length_is_refused() {
    for attack in [Attack::DropTail(1), Attack::Extend(vec![1; 7])] {
        let target = Target::first(dh_ffc::MSG_RECEIVER_ELEMENTS);
        let ((_, so), _) = common::attacked(P, Party::Receiver, target, attack, &at(80));
        assert_malformed(&so.unwrap_err());
    }
}

#[test]
fn flipped_tag_bit_gives_a_subset() {
    let target = Target::first(dh_ffc::MSG_TAGS);
    let ((ro, so), expected) =
        common::attacked(P, Party::Sender, target, Attack::FlipBit(0), &at(80));
    so.unwrap();
    common::assert_subset(&ro.unwrap().indices, &expected, 1);
}

#[test]
fn bytes_follow_psz_tab6_with_truncated_tags() {
    // PSZ14 Tab. 6 "DH-based FFC": 3nρ bits; ours sends 2nρ (ρ of the group used) and n tags of
    // ℓ = λ + 2·log2 n bits, whole bytes, plus 4 bytes per frame.
    for (kappa, n, rho_bytes, tab6_mib) in [
        (80u32, 1u64 << 18, 128u64, 96.0),
        (128, 1 << 18, 384, 288.0),
    ] {
        let tab6 = dh_ffc::psz_tab6_bits(n, kappa).unwrap() as f64 / 8.0 / f64::from(1 << 20);
        assert!((tab6 - tab6_mib).abs() < 0.05, "κ = {kappa}: {tab6} MiB");
        let sizes = Sizes {
            n_recv: n,
            n_send: n,
            kappa,
            lambda: 40,
            sigma: None,
        };
        let total: u64 = (P.traffic)(&sizes).unwrap().iter().map(|(_, b)| b).sum();
        // Frames: the largest power of two of elements within 2 MiB.
        let per_frame = 1u64 << ((2u64 << 20) / rho_bytes).ilog2();
        let frames = n.div_ceil(per_frame.min(1 << 14));
        let tag = (40 + 36u64).div_ceil(8);
        assert_eq!(
            total,
            2 * n * rho_bytes + n * tag + 3 * 4 * frames,
            "κ = {kappa}"
        );
    }
}
