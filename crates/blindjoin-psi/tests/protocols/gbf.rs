//! `gbf` end to end over an in-memory channel: exact indices against a `HashSet` oracle
//! (balanced, unbalanced both ways, 0/1/2 elements, several chunks of positions, several
//! passes of pairs); one thread and three give the same messages and result; traffic equal to
//! the formula and PSZ14 Tab. 3's row "[19] with OT of [1]"; filter parameter mismatches naming
//! the field; tampered strings and OT columns giving a subset of the true result, cut frames
//! refused.

use crate::common;
use crate::common::{Outcome, assert_malformed, assert_subset, fast, field_of};
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};
use blindjoin_core::item::items_from_records;
use blindjoin_ot::ext::iknp;
use blindjoin_psi::hashing::bloom::bloom_bits;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::gbf::{self, ell_bits};
use blindjoin_psi::{Party, Protocol, RunOptions};
use blindjoin_testkit::{Attack, Target, oracle, sets_with_overlap};

static P: &Protocol = &gbf::PROTOCOL;

#[test]
fn exact_indices() {
    // 3000 items: m = 552,960 positions, 9 chunks; unbalanced beyond one chunk both ways.
    let extra = [(3000, 2000, 1234), (20, 5000, 20), (5000, 20, 19)];
    common::exact_suite(P, &extra, 300);
}

#[test]
fn passes_of_pairs_and_threads_give_the_same_run() {
    let (r, s) = sets_with_overlap(3000, 2500, 1111, 41);
    let expected = oracle(&r, &s);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    // A memory budget of 2.4 MB allows 10^5 pairs per pass: 4 passes of the receiver's 384,000.
    let small = RunOptions {
        memory_budget: Some(2_400_000),
        ..fast()
    };
    let mut runs = Vec::new();
    for (threads, opts) in [(1, fast()), (3, fast()), (1, small.clone()), (2, small)] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let (indices, digests) = pool.install(|| common::transcript(P, &ri, &si, &opts));
        assert_eq!(indices, expected, "{threads} threads");
        runs.push(digests);
    }
    assert!(
        runs.windows(2).all(|w| w[0] == w[1]),
        "the runs' messages differ"
    );
}

#[test]
fn communication_follows_psz_table_3() {
    for (n, kappa) in [
        (1u64 << 16, 128),
        (1 << 18, 128),
        (1 << 20, 128),
        (1 << 18, 80),
    ] {
        let sizes = Sizes {
            n_recv: n,
            n_send: n,
            kappa,
            lambda: 40,
            sigma: None,
        };
        let t = (P.traffic)(&sizes).unwrap();
        let get = |name: &str| t.iter().find(|(m, _)| *m == name).unwrap().1;
        let m = bloom_bits(kappa, n);
        let ell = u64::from(ell_bits(40, n, n) / 8);
        let chunks = m.div_ceil(1 << 16);
        // R: m·κ bits of u columns with κ = 128 (the OT extension's), each chunk padded to
        // whole 128-row blocks, one frame per chunk; S: m·ℓ bits, one frame per chunk.
        let pad = m.next_multiple_of(128) - m;
        assert_eq!(
            get(iknp::MSG_U_COLUMNS),
            (m + pad) * 16 + chunks * FRAME_HEADER_LEN as u64
        );
        assert_eq!(get(gbf::MSG_SHARES), framed_bytes(m, ell as usize, 1 << 16));
        // Tab. 3, "[19] with OT of [1]": P2 sends mκ, P1 mλ bits (ℓ for λ here); within 0.1%.
        let tab3 = m * (128 + 8 * ell) / 8;
        let ours = get(iknp::MSG_U_COLUMNS) + get(gbf::MSG_SHARES);
        assert!(
            (ours as f64 / tab3 as f64 - 1.0).abs() < 1e-3,
            "{n}: {ours} vs {tab3}"
        );
    }
    // Tab. 6's "Garbled Bloom Filter" counts 2.88nκ(κ + λ) bits (original IKNP, both OT
    // messages): 1,935.4 MiB at n = 2^18, κ = 128, which the formula reproduces.
    let tab6 = 2.88 * f64::from(1 << 18) * 128.0 * 168.0 / 8.0 / f64::from(1 << 20);
    assert!((tab6 - 1935.4).abs() < 0.05, "{tab6}");
}

fn attack_sender(target: Target, attack: Attack) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Sender, target, attack, &fast())
}

fn attack_receiver(target: Target, attack: Attack) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Receiver, target, attack, &fast())
}

#[test]
fn setup_mismatch_names_the_field() {
    // (m, k, ℓ) as postcard varints: m = 11,064 (2 bytes), k = 128 (2 bytes), ℓ = 56 (1 byte).
    for (byte, field) in [(0, "bloom_bits"), (2, "bloom_hashes"), (4, "ell")] {
        let ((ro, so), _) = attack_receiver(
            Target::first(gbf::MSG_RECEIVER_SETUP),
            Attack::FlipBit(byte),
        );
        assert_eq!(field_of(&so.unwrap_err()), Some(field));
        assert!(ro.is_err());
        let ((ro, so), _) =
            attack_sender(Target::first(gbf::MSG_SENDER_SETUP), Attack::FlipBit(byte));
        assert_eq!(field_of(&ro.unwrap_err()), Some(field));
        assert!(so.is_err());
    }
}

#[test]
fn tampered_strings_and_columns_give_a_subset_and_bad_frames_are_refused() {
    // A flipped bit of a y value or of the u columns changes strings nobody can check
    // (semi-honest): the elements reading them are lost, nothing is added.
    for at in [0, 999, 50_000] {
        let ((ro, so), expected) =
            attack_sender(Target::first(gbf::MSG_SHARES), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, 1);
        let ((ro, so), expected) =
            attack_receiver(Target::first(iknp::MSG_U_COLUMNS), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, 1);
    }
    let ((ro, _), _) = attack_sender(Target::first(gbf::MSG_SHARES), Attack::Truncate(77));
    assert_malformed(&ro.unwrap_err());
    let ((ro, _), _) = attack_sender(Target::first(gbf::MSG_SHARES), Attack::Extend(vec![0; 7]));
    assert_malformed(&ro.unwrap_err());
    let ((_, so), _) = attack_receiver(Target::first(iknp::MSG_U_COLUMNS), Attack::DropTail(16));
    assert_malformed(&so.unwrap_err());
}

/// Options at level `kappa`.
fn at_kappa(kappa: u32) -> RunOptions {
    RunOptions {
        kappa,
        ..common::real()
    }
}

#[test]
fn kappa_192_and_256_run_on_p384_and_p521() {
    // DCW13 Tab. 2, "Ours": k = κ hash functions, base OTs on P-384 / P-521, SHA-384 / SHA-512
    // for the OT; the traffic, base OTs included, equals the formula.
    for (kappa, cases) in [
        (192, [(300, 200, 77), (0, 5, 0)]),
        (256, [(150, 400, 41), (1, 1, 1)]),
    ] {
        for (i, case) in cases.into_iter().enumerate() {
            common::check_exact(P, case, 60 + i as u64, &at_kappa(kappa), true);
        }
    }
    let params: Vec<(String, String)> = (P.params)(&at_kappa(256));
    let get = |k: &str| params.iter().find(|(n, _)| n == k).unwrap().1.clone();
    assert_eq!(get("base_ot"), "co15-p-521");
    assert_eq!(get("ot"), "iknp-alsz/x0=0/256 columns/aes256/sha-512");
    let params: Vec<(String, String)> = (P.params)(&at_kappa(192));
    assert_eq!(
        params.iter().find(|(n, _)| n == "base_ot").unwrap().1,
        "co15-p-384"
    );
}

#[test]
fn communication_at_kappa_256() {
    // R sends m·256 bits of u columns (256 base OTs' columns), S m·ℓ bits; the base OTs are one
    // P-521 point from R and 256 from S, 67 bytes each.
    let n = 1u64 << 12;
    let sizes = Sizes {
        n_recv: n,
        n_send: n,
        kappa: 256,
        lambda: 40,
        sigma: None,
    };
    let t = (P.traffic)(&sizes).unwrap();
    let get = |name: &str| t.iter().find(|(m, _)| *m == name).unwrap().1;
    let m = bloom_bits(256, n);
    assert_eq!(m, 1_509_952);
    let chunks = m.div_ceil(1 << 16);
    let pad = m.next_multiple_of(128) - m;
    assert_eq!(
        get(iknp::MSG_U_COLUMNS),
        (m + pad) * 32 + chunks * FRAME_HEADER_LEN as u64
    );
    let h = FRAME_HEADER_LEN as u64;
    assert_eq!(get(blindjoin_ot::base::MSG_SENDER_POINT), 67 + h);
    assert_eq!(get(blindjoin_ot::base::MSG_RECEIVER_POINTS), 256 * 67 + h);
}

#[test]
fn bad_base_ot_points_at_kappa_256_are_refused_naming_the_element() {
    use blindjoin_ot::base::{MSG_RECEIVER_POINTS, MSG_SENDER_POINT};
    let opts = at_kappa(256);
    // The sender's R_i (it is the base OTs' receiver): all zero, so element 0 is no point.
    let ((ro, so), _) = common::attacked(
        P,
        Party::Sender,
        Target::first(MSG_RECEIVER_POINTS),
        Attack::Replace(vec![0; 256 * 67]),
        &opts,
    );
    let e = ro.unwrap_err();
    assert_malformed(&e);
    assert!(
        e.to_string()
            .contains("element 0 is not a valid P-521 point"),
        "{e}"
    );
    assert!(so.is_err());
    // Cut short: refused by length.
    let ((ro, _), _) = common::attacked(
        P,
        Party::Sender,
        Target::first(MSG_RECEIVER_POINTS),
        Attack::Truncate(5 * 67 + 10),
        &opts,
    );
    assert_malformed(&ro.unwrap_err());
    // The receiver's S with an invalid prefix byte.
    let mut bad = vec![0x04u8];
    bad.extend_from_slice(&[1; 66]);
    let ((_, so), _) = common::attacked(
        P,
        Party::Receiver,
        Target::first(MSG_SENDER_POINT),
        Attack::Replace(bad),
        &opts,
    );
    let e = so.unwrap_err();
    assert_malformed(&e);
    assert!(e.to_string().contains("P-521"), "{e}");
}
