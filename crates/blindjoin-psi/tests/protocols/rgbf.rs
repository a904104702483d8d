//! `rgbf` end to end over an in-memory channel: exact indices against a `HashSet` oracle
//! (balanced, unbalanced both ways, 0/1/2 elements, several chunks of positions, several passes
//! of pairs); one thread and three give the same messages and result; traffic equal to the
//! formula and to PSZ14 Tab. 6's row "Random GBF" (which it reproduces); filter parameter
//! mismatches naming the field; tampered masks and OT columns giving a subset of the true
//! result, cut frames refused.

use crate::common;
use crate::common::{Outcome, assert_malformed, assert_subset, fast, field_of};
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};
use blindjoin_core::item::items_from_records;
use blindjoin_ot::ext::iknp;
use blindjoin_psi::hashing::bloom::bloom_bits;
use blindjoin_psi::params::tag_bytes;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::rgbf;
use blindjoin_psi::{Party, Protocol, RunOptions};
use blindjoin_testkit::{Attack, Target, oracle, sets_with_overlap};

static P: &Protocol = &rgbf::PROTOCOL;

#[test]
fn exact_indices() {
    // 3000 items: m = 552,960 positions, 9 chunks; unbalanced beyond one chunk both ways.
    let extra = [(3000, 2000, 1234), (20, 5000, 20), (5000, 20, 19)];
    common::exact_suite(P, &extra, 400);
}

#[test]
fn passes_of_pairs_and_threads_give_the_same_run() {
    let (r, s) = sets_with_overlap(3000, 2500, 1111, 42);
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
fn communication_follows_psz_table_6() {
    // PSZ14 Tab. 6, "Random GBF" at κ = 128 (MiB): 1.44nκ² + n(λ + 2 log2 n) bits.
    for (log_n, tab6) in [
        (10u32, 2.9),
        (12, 11.6),
        (14, 46.2),
        (16, 184.9),
        (18, 739.7),
    ] {
        let n = 1u64 << log_n;
        let formula = (1.44 * n as f64 * 128.0 * 128.0 + n as f64 * f64::from(40 + 2 * log_n))
            / 8.0
            / f64::from(1 << 20);
        assert!(
            (formula - tab6).abs() < 0.05,
            "2^{log_n}: {formula} vs {tab6}"
        );
        let sizes = Sizes {
            n_recv: n,
            n_send: n,
            kappa: 128,
            lambda: 40,
            sigma: None,
        };
        let t = (P.traffic)(&sizes).unwrap();
        let get = |name: &str| t.iter().find(|(m, _)| *m == name).unwrap().1;
        // Exactly: m·κ bits of u columns (each chunk padded to whole 128-row blocks, one frame
        // per chunk) and n masks of ℓ = λ + ⌈log2(n·n)⌉ bits in whole bytes, frames of 2^14.
        let m = bloom_bits(128, n);
        let pad = m.next_multiple_of(128) - m;
        let chunks = m.div_ceil(1 << 16);
        assert_eq!(
            get(iknp::MSG_U_COLUMNS),
            (m + pad) * 16 + chunks * FRAME_HEADER_LEN as u64
        );
        let ell = tag_bytes(40, n, n);
        assert_eq!(get(rgbf::MSG_MASKS), framed_bytes(n, ell, 1 << 14));
        // Within 5% of the table (the masks' whole bytes and the framing are the difference).
        let ours = (get(iknp::MSG_U_COLUMNS) + get(rgbf::MSG_MASKS)) as f64 / f64::from(1 << 20);
        assert!(
            (ours / tab6 - 1.0).abs() < 0.05,
            "2^{log_n}: {ours} MiB vs {tab6}"
        );
    }
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
            Target::first(rgbf::MSG_RECEIVER_SETUP),
            Attack::FlipBit(byte),
        );
        assert_eq!(field_of(&so.unwrap_err()), Some(field));
        assert!(ro.is_err());
        let ((ro, so), _) =
            attack_sender(Target::first(rgbf::MSG_SENDER_SETUP), Attack::FlipBit(byte));
        assert_eq!(field_of(&ro.unwrap_err()), Some(field));
        assert!(so.is_err());
    }
}

#[test]
fn tampered_masks_and_columns_give_a_subset_and_bad_frames_are_refused() {
    // A flipped mask bit loses that element; a flipped bit of the u columns changes random OT
    // outputs nobody can check (semi-honest): elements are lost, none added.
    for at in [0, 99, 503] {
        let ((ro, so), expected) =
            attack_sender(Target::first(rgbf::MSG_MASKS), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, 1);
    }
    for at in [0, 999, 50_000] {
        let ((ro, so), expected) =
            attack_receiver(Target::first(iknp::MSG_U_COLUMNS), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, 1);
    }
    let ((ro, _), _) = attack_sender(Target::first(rgbf::MSG_MASKS), Attack::Truncate(13));
    assert_malformed(&ro.unwrap_err());
    let ((ro, _), _) = attack_sender(Target::first(rgbf::MSG_MASKS), Attack::Extend(vec![0; 7]));
    assert_malformed(&ro.unwrap_err());
    let ((_, so), _) = attack_receiver(Target::first(iknp::MSG_U_COLUMNS), Attack::DropTail(16));
    assert_malformed(&so.unwrap_err());
}
