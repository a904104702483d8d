//! `ecdh_nist` over an in-memory channel: exact intersection indices against a `HashSet` oracle
//! on each curve (P-256, P-384, P-521 by κ), invalid points from either side refused naming the
//! element, and the curve fixed by κ on both sides.
// The frame edits below have `Attack::Edit`'s signature, `fn(&mut Vec<u8>)`.
#![allow(clippy::ptr_arg)]

use crate::common;
use crate::common::{assert_malformed, fast, field_of, small_sets};
use blindjoin_core::Error;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::ecdh_nist;
use blindjoin_psi::{Party, Protocol, RunOptions};
use blindjoin_testkit::{Attack, Target, rng, run_two_party};
use p256::elliptic_curve::group::GroupEncoding;

static P: &Protocol = &ecdh_nist::PROTOCOL;

/// Bytes of a compressed P-256 point (κ = 128, the default).
const LEN: usize = 33;

fn at_kappa(kappa: u32) -> RunOptions {
    RunOptions { kappa, ..fast() }
}

#[test]
fn exact_indices() {
    // Two frames of the receiver's points (2^14 each, the last partial) and of its tags.
    common::exact_suite(P, &[(16_400, 1_000, 321)], 300);
}

#[test]
fn exact_indices_on_p384_and_p521() {
    for (i, kappa) in [192, 256].into_iter().enumerate() {
        for (j, case) in [
            (0, 0, 0),
            (1, 1, 1),
            (10, 10, 0),
            (200, 150, 60),
            (3, 90, 3),
        ]
        .into_iter()
        .enumerate()
        {
            common::check_exact(
                P,
                case,
                400 + 10 * i as u64 + j as u64,
                &at_kappa(kappa),
                false,
            );
        }
    }
}

#[test]
fn sessions_run_on_the_curve_of_kappa() {
    let (r, s, expected) = small_sets();
    for (kappa, curve, len) in [(128, "P-256", 33), (192, "P-384", 49), (256, "P-521", 67)] {
        let o = at_kappa(kappa);
        let params = (P.params)(&o);
        assert!(
            params.contains(&("group".into(), curve.into())),
            "{params:?}"
        );
        let (ro, so) = common::run(P, &r, &s, &o, &o);
        so.unwrap();
        let ro = ro.unwrap();
        assert_eq!(ro.indices, expected);
        assert_eq!(ro.session.kappa, kappa);
        // The formula's point message is n compressed points of the curve (one frame).
        let t = (P.traffic)(&Sizes {
            kappa,
            ..Sizes::new(50, 60)
        })
        .unwrap();
        assert!(
            t.contains(&(ecdh_nist::MSG_SENDER_POINTS, 60 * len + 4)),
            "{t:?}"
        );
    }
}

/// Element 5 of the frame replaced by a point whose first byte says "uncompressed".
fn uncompressed_tag_at_5(frame: &mut Vec<u8>) {
    frame[5 * LEN] = 0x04;
}

/// Element 0 replaced by x = p (P-256's field modulus): a coordinate that is not below p.
fn x_equal_to_p_at_0(frame: &mut Vec<u8>) {
    let p = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff";
    frame[0] = 0x02;
    for (i, b) in frame[1..LEN].iter_mut().enumerate() {
        *b = u8::from_str_radix(&p[2 * i..2 * i + 2], 16).unwrap();
    }
}

/// Element 7 replaced by the first x = 1, 2, … that is not on P-256.
fn off_curve_at_7(frame: &mut Vec<u8>) {
    let off = (1u8..)
        .map(|x| {
            let mut e = [0u8; LEN];
            e[0] = 0x02;
            e[LEN - 1] = x;
            e
        })
        .find(|e| {
            let repr = p256::CompressedPoint::try_from(&e[..]).unwrap();
            bool::from(p256::AffinePoint::from_bytes(&repr).is_none())
        })
        .unwrap();
    frame[7 * LEN..8 * LEN].copy_from_slice(&off);
}

/// Element 9 replaced by the identity's 33 zero bytes.
fn identity_at_9(frame: &mut Vec<u8>) {
    frame[9 * LEN..10 * LEN].fill(0);
}

#[test]
fn invalid_points_from_the_sender_are_malformed() {
    let target = Target::first(ecdh_nist::MSG_SENDER_POINTS);
    for (edit, at) in [
        (uncompressed_tag_at_5 as fn(&mut Vec<u8>), 5),
        (x_equal_to_p_at_0, 0),
        (off_curve_at_7, 7),
        (identity_at_9, 9),
    ] {
        let ((ro, _), _) = common::attacked(P, Party::Sender, target, Attack::Edit(edit), &fast());
        let e = ro.unwrap_err();
        assert_malformed(&e);
        let text = e.to_string();
        assert!(
            text.contains(&format!("element {at} ")) && text.contains("P-256"),
            "{text}"
        );
    }
}

#[test]
fn invalid_points_from_the_receiver_are_malformed() {
    let target = Target::first(ecdh_nist::MSG_RECEIVER_POINTS);
    for (edit, at) in [
        (x_equal_to_p_at_0 as fn(&mut Vec<u8>), 0),
        (off_curve_at_7, 7),
        (identity_at_9, 9),
    ] {
        let ((_, so), _) =
            common::attacked(P, Party::Receiver, target, Attack::Edit(edit), &fast());
        let e = so.unwrap_err();
        assert_malformed(&e);
        assert!(e.to_string().contains(&format!("element {at} ")), "{e}");
    }
}

#[test]
fn a_frame_of_partial_points_is_malformed() {
    // 50 points less 10 bytes: not a whole number of 33-byte points.
    let target = Target::first(ecdh_nist::MSG_RECEIVER_POINTS);
    let ((_, so), _) = common::attacked(P, Party::Receiver, target, Attack::DropTail(10), &fast());
    let e = so.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("33-byte"), "{e}");
}

#[test]
fn flipped_tag_bit_gives_a_subset() {
    // A semi-honest protocol cannot detect a wrong tag, but it must still finish cleanly.
    let target = Target::first(ecdh_nist::MSG_TAGS);
    let ((ro, so), expected) =
        common::attacked(P, Party::Sender, target, Attack::FlipBit(0), &fast());
    so.unwrap();
    common::assert_subset(&ro.unwrap().indices, &expected, 1);
}

#[test]
fn kappa_mismatch_names_the_field_on_both_sides() {
    let (r, s, _) = small_sets();
    for (kr, ks) in [(128, 192), (256, 128), (192, 256)] {
        let (ro, so) = common::run(P, &r, &s, &at_kappa(kr), &at_kappa(ks));
        let (re, se) = (ro.unwrap_err(), so.unwrap_err());
        assert_eq!(field_of(&re), Some("kappa"), "{re}");
        assert_eq!(field_of(&se), Some("kappa"), "{se}");
        assert!(
            re.to_string().contains(&kr.to_string()) && re.to_string().contains(&ks.to_string()),
            "{re}"
        );
    }
}

#[test]
fn unsupported_kappa_is_refused_naming_the_levels() {
    let (r, _, _) = small_sets();
    for kappa in [80, 64, 112, 384] {
        let (mut ch, _peer) =
            blindjoin_core::channel::memory::memory_pair(std::time::Duration::from_secs(1));
        let e = P
            .receive(&mut ch, &r, &at_kappa(kappa), &mut rng(1))
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidParam { field: "kappa", .. }),
            "{e}"
        );
        assert!(e.to_string().contains("128, 192, 256"), "{e}");
        assert!(
            (P.traffic)(&Sizes {
                kappa,
                ..Sizes::new(10, 10)
            })
            .is_err()
        );
    }
    // Both parties at an unsupported κ: neither starts.
    let (ro, so) = run_two_party(
        |ch| P.receive(ch, &r, &at_kappa(80), &mut rng(1)),
        |ch| P.send(ch, &r, &at_kappa(80), &mut rng(2)),
    );
    for e in [ro.map(|_| ()).unwrap_err(), so.map(|_| ()).unwrap_err()] {
        assert!(
            matches!(&e, Error::InvalidParam { field: "kappa", .. }),
            "{e}"
        );
    }
}
