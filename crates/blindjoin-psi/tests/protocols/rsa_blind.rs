//! `rsa_blind` over an in-memory channel: exact intersection indices against a `HashSet` oracle
//! (at κ = 80, where key generation is quick, and once at κ = 128), elements not below N from
//! either side and signatures that do not verify refused naming the element, a bad public key
//! refused naming the field, and the traffic formula next to PSZ Tab. 6's "2nρ + 2nκ".

use crate::common;
use crate::common::{assert_malformed, fast, real};
use blindjoin_core::channel::FRAME_HEADER_LEN;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::rsa_blind;
use blindjoin_psi::{Party, Protocol, RunOptions};
use blindjoin_testkit::{Attack, Target};

static P: &Protocol = &rsa_blind::PROTOCOL;

/// Bytes of an element at κ = 80 (ρ = 1024).
const LEN_80: usize = 128;

/// [`fast`] at κ = 80.
fn k80() -> RunOptions {
    RunOptions {
        kappa: 80,
        ..fast()
    }
}

#[test]
fn exact_indices_at_kappa_80() {
    // The base cases (empty, single, tiny, unbalanced both ways), then several frames of 8192
    // elements with a partial last one, unbalanced both ways.
    let extra = [(20_000, 9_000, 3_000), (300, 17_000, 100)];
    for (i, &case) in common::BASE_CASES.iter().chain(&extra).enumerate() {
        common::check_exact(P, case, 300 + i as u64, &k80(), false);
    }
}

#[test]
fn exact_indices_at_kappa_128() {
    common::check_exact(P, (10, 10, 3), 320, &real(), true);
    // Two frames of 2048 elements each way.
    common::check_exact(P, (2_500, 3_000, 1_000), 321, &fast(), false);
}

/// A frame rewritten by a test.
type Edit = fn(&mut Vec<u8>);

/// Sets element 3 of the frame (κ = 80) to 2^1024 − 1, which is not below any 1024-bit N.
const ELEMENT_3_ALL_ONES: Edit = |frame| frame[3 * LEN_80..4 * LEN_80].fill(0xff);

#[test]
fn blinded_item_not_below_n_is_malformed() {
    let target = Target::first(rsa_blind::MSG_BLINDED);
    let attack = Attack::Edit(ELEMENT_3_ALL_ONES);
    let ((_, so), _) = common::attacked(P, Party::Receiver, target, attack, &k80());
    let e = so.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("element 3 is not below"), "{e}");
}

#[test]
fn signature_not_below_n_is_malformed() {
    let target = Target::first(rsa_blind::MSG_SIGNATURES);
    let attack = Attack::Edit(ELEMENT_3_ALL_ONES);
    let ((ro, _), _) = common::attacked(P, Party::Sender, target, attack, &k80());
    let e = ro.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("element 3 is not below"), "{e}");
}

#[test]
fn signature_with_a_flipped_bit_fails_its_check() {
    // The last byte of element 5: s ± 1, which stays below N but is no signature.
    let target = Target::first(rsa_blind::MSG_SIGNATURES);
    let attack = Attack::FlipBit(6 * LEN_80 - 1);
    let ((ro, _), _) = common::attacked(P, Party::Sender, target, attack, &k80());
    let e = ro.unwrap_err();
    assert_malformed(&e);
    assert!(
        e.to_string().contains("element 5 is not a signature"),
        "{e}"
    );
}

#[test]
fn wrong_length_frames_are_malformed() {
    for (party, msg) in [
        (Party::Receiver, rsa_blind::MSG_BLINDED),
        (Party::Sender, rsa_blind::MSG_SIGNATURES),
        (Party::Sender, rsa_blind::MSG_TAGS),
    ] {
        let target = Target::first(msg);
        let ((ro, so), _) = common::attacked(P, party, target, Attack::DropTail(1), &k80());
        let e = match party {
            Party::Receiver => so.unwrap_err(),
            _ => ro.unwrap_err(),
        };
        assert_malformed(&e);
        assert!(e.to_string().contains("whole number"), "{msg}: {e}");
    }
}

#[test]
fn flipped_tag_bit_gives_a_subset() {
    // A semi-honest protocol cannot detect a wrong tag, but it must still finish cleanly.
    let target = Target::first(rsa_blind::MSG_TAGS);
    let ((ro, so), expected) =
        common::attacked(P, Party::Sender, target, Attack::FlipBit(0), &k80());
    so.unwrap();
    common::assert_subset(&ro.unwrap().indices, &expected, 1);
}

#[test]
fn bad_public_key_is_refused_naming_the_field() {
    let cases: [(Edit, &str); 4] = [
        // The low bit of N's last byte.
        (|f| f[LEN_80 - 1] ^= 1, "the modulus N is even"),
        // N's top byte cleared: 1016 bits or fewer.
        (|f| f[0] = 0, "the modulus N has"),
        (
            |f| f[LEN_80..].copy_from_slice(&3u32.to_be_bytes()),
            "the public exponent e is 3; only 65537",
        ),
        // One byte of N missing.
        (
            |f| {
                f.remove(0);
            },
            "131 bytes",
        ),
    ];
    for (edit, needle) in cases {
        let target = Target::first(rsa_blind::MSG_KEY);
        let ((ro, so), _) = common::attacked(P, Party::Sender, target, Attack::Edit(edit), &k80());
        let e = ro.unwrap_err();
        assert_malformed(&e);
        assert!(e.to_string().contains(needle), "{needle}: {e}");
        assert!(e.to_string().contains(rsa_blind::MSG_KEY), "{needle}: {e}");
        // The sender learns that the receiver has gone.
        assert!(so.is_err(), "{needle}");
    }
}

/// PSZ Tab. 6, row "RSA-based" (MB = MiB), verbatim: n = 2^10 … 2^18 at κ = 80 and 128.
const PSZ_TAB6: [(u32, [f64; 5]); 2] = [
    (80, [0.3, 1.1, 4.3, 17.3, 69.0]),
    (128, [0.8, 3.1, 12.5, 50.0, 200.0]),
];

#[test]
fn traffic_formula_next_to_psz_tab_6() {
    const MIB: f64 = (1 << 20) as f64;
    for (kappa, row) in PSZ_TAB6 {
        let rho = u64::from(rsa_blind::modulus_bits(kappa).unwrap());
        let per = rsa_blind::frame_elements(rho as u32) as u64;
        for (k, psz) in [10u32, 12, 14, 16, 18].into_iter().zip(row) {
            let n = 1u64 << k;
            // PSZ's asymptotic formula, in bits: n elements each way and n tags of 2κ bits.
            let psz_bits = 2 * n * rho + 2 * n * u64::from(kappa);
            let psz_mib = psz_bits as f64 / 8.0 / MIB;
            assert_eq!((psz_mib * 10.0).round() / 10.0, psz, "κ {kappa} n 2^{k}");
            // Ours: the same elements, ℓ-bit tags, the public key and 4 bytes per frame.
            let sizes = Sizes {
                n_recv: n,
                n_send: n,
                kappa,
                lambda: 40,
                sigma: None,
            };
            let traffic = (P.traffic)(&sizes).unwrap();
            let total: u64 = traffic.iter().map(|(_, b)| b).sum();
            let tag_len = u64::from((40 + 2 * k).div_ceil(8));
            let framing = 3 * n.div_ceil(per) * FRAME_HEADER_LEN as u64;
            let key = rho / 8 + 4 + FRAME_HEADER_LEN as u64;
            assert_eq!(total, 2 * n * rho / 8 + n * tag_len + framing + key);
            // With untruncated 2κ-bit tags and without key and framing, ours is PSZ's formula.
            let untruncated = total - n * tag_len + n * 2 * u64::from(kappa) / 8 - framing - key;
            assert_eq!(untruncated * 8, psz_bits, "κ {kappa} n 2^{k}");
            eprintln!(
                "κ {kappa}, n = 2^{k}: PSZ Tab. 6 {psz:.1} MiB, rsa_blind {:.2} MiB",
                total as f64 / MIB
            );
            assert!(total as f64 / MIB < psz_mib);
        }
    }
}
