//! Tests across the submodules: both parties' tables together, timings, and an experiment on
//! stash-less three-hash tables.

use super::*;
use blindjoin_core::block::Block;
use rand::Rng;
use rand::seq::SliceRandom;
use std::collections::HashMap;
use std::time::Instant;

fn random_items(rng: &mut impl Rng, n: usize) -> Vec<Block> {
    (0..n).map(|_| Block(rng.random())).collect()
}

/// Receiver (Cuckoo) and sender (simple hashing) on the same seed: every common item sits in
/// the receiver's bin B under some j (or in its stash), and the sender's bin B holds that item
/// under the same j, so a per-bin comparison (PSZ14) or an OPRF on (item, j) (KKRT16) finds it.
#[test]
fn common_items_meet_in_the_same_bin_with_the_same_j() {
    let mut rng = blindjoin_testkit::rng(31);
    for (n_recv, n_send, common) in [
        (0, 5, 0),
        (1, 1, 1),
        (2, 10, 2),
        (1000, 700, 300),
        (5000, 5000, 2500),
    ] {
        let shared = random_items(&mut rng, common);
        let mut recv = [shared.clone(), random_items(&mut rng, n_recv - common)].concat();
        let mut send = [shared.clone(), random_items(&mut rng, n_send - common)].concat();
        recv.shuffle(&mut rng);
        send.shuffle(&mut rng);
        let seed = Block(rng.random());
        for params in [
            CuckooParams::psz(n_recv).unwrap(),
            CuckooParams::kkrt(n_recv, 40).unwrap(),
        ] {
            let cuckoo = CuckooTable::build(&params, seed, &recv).unwrap();
            let hasher = BinHasher::new(seed, params.num_hashes(), params.num_bins()).unwrap();
            let simple = SimpleTable::build(&hasher, &send).unwrap();
            let max = max_bin_size(
                (params.num_hashes() * n_send) as u64,
                params.num_bins() as u64,
                40,
            )
            .unwrap();
            simple.check_max_bin_size(max).unwrap();

            let mut found = 0;
            for (b, e) in cuckoo.iter().enumerate() {
                let Some(e) = e else { continue };
                let x = recv[e.item as usize];
                let hits = simple
                    .bin(b)
                    .iter()
                    .filter(|s| send[s.item() as usize] == x && s.hash() == e.hash)
                    .count();
                found += hits;
                assert!(hits <= 1);
            }
            let send_index: HashMap<Block, usize> =
                send.iter().enumerate().map(|(i, &y)| (y, i)).collect();
            found += cuckoo
                .stash()
                .iter()
                .filter(|&&i| send_index.contains_key(&recv[i as usize]))
                .count();
            assert_eq!(found, common, "n_recv = {n_recv}, params {params:?}");
        }
    }
}

/// Timings for the report (release build recommended):
/// `cargo test --release -p blindjoin-psi --lib hashing::tests::timing -- --ignored --nocapture`.
#[test]
#[ignore = "timing, run by hand"]
fn timing() {
    let mut rng = blindjoin_testkit::rng(41);
    let n = 1usize << 20;
    let items = random_items(&mut rng, n);
    let seed = Block(rng.random());
    for (name, params) in [
        ("psz (k=2, 2.4n, s=4)", CuckooParams::psz(n).unwrap()),
        ("kkrt (k=3, e·n, s=0)", CuckooParams::kkrt(n, 40).unwrap()),
    ] {
        let hasher = BinHasher::new(seed, params.num_hashes(), params.num_bins()).unwrap();
        let mut best = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let t0 = Instant::now();
            let hashed = hasher.hash_items(&items).unwrap();
            let t1 = Instant::now();
            let table = CuckooTable::from_hashed(&params, hashed).unwrap();
            let t2 = Instant::now();
            assert_eq!(table.num_items(), n);
            best.0 = best.0.min((t1 - t0).as_secs_f64());
            best.1 = best.1.min((t2 - t1).as_secs_f64());
        }
        println!(
            "cuckoo {name}: n = 2^20, b = {}: hashing {:.1} ms + insertion {:.1} ms",
            params.num_bins(),
            best.0 * 1e3,
            best.1 * 1e3
        );
    }
    let params = CuckooParams::kkrt(n, 40).unwrap();
    let hasher = BinHasher::new(seed, 3, params.num_bins()).unwrap();
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..5 {
        let t0 = Instant::now();
        let hashed = hasher.hash_items(&items).unwrap();
        let t1 = Instant::now();
        let table = SimpleTable::from_hashed(&hashed);
        let t2 = Instant::now();
        assert_eq!(table.num_entries(), 3 * n);
        best.0 = best.0.min((t1 - t0).as_secs_f64());
        best.1 = best.1.min((t2 - t1).as_secs_f64());
    }
    println!(
        "simple: 2^20 items × 3 functions into {} bins: hashing {:.1} ms + table {:.1} ms",
        params.num_bins(),
        best.0 * 1e3,
        best.1 * 1e3
    );
    let t0 = Instant::now();
    let m = max_bin_size(3 * n as u64, params.num_bins() as u64, 40).unwrap();
    println!(
        "max_bin_size(3·2^20, {}, 40) = {m} in {:.2} ms",
        params.num_bins(),
        t0.elapsed().as_secs_f64() * 1e3
    );
}

/// How often stash-less three-hash tables fail at small factors e, against PSWW18's fit.
/// `cargo test -p blindjoin-psi --lib hashing::tests::stashless_experiment -- --ignored
/// --nocapture`.
#[test]
#[ignore = "experiment, run by hand"]
fn stashless_experiment() {
    let mut rng = blindjoin_testkit::rng(51);
    for (log_n, trials) in [(12u32, 20_000), (16, 2_000)] {
        let n = 1usize << log_n;
        // The fit λ = a·e + b, recovered from the factor at λ = 0 and λ = 1.
        let (e0, e1) = (kkrt_bin_factor(n as u64, 0), kkrt_bin_factor(n as u64, 1));
        let a = 1.0 / (e1 - e0);
        for e in [1.1, 1.15, 1.2, 1.27] {
            let b = (e * n as f64).ceil() as usize;
            let params = CuckooParams::new(3, b, 0).unwrap();
            let mut failures = 0;
            for _ in 0..trials {
                let items = random_items(&mut rng, n);
                if CuckooTable::build(&params, Block(rng.random()), &items).is_err() {
                    failures += 1;
                }
            }
            println!(
                "n = 2^{log_n}, e = {e}: {failures} failures in {trials} trials; fit's λ {:.1}",
                a * (e - e0)
            );
        }
    }
}

/// Parameter values quoted in the module doc.
#[test]
fn documented_values() {
    let n = 1u64 << 20;
    let psz = CuckooParams::psz(n as usize).unwrap();
    let kkrt = CuckooParams::kkrt(n as usize, 40).unwrap();
    assert_eq!(max_bin_size(2 * n, psz.num_bins() as u64, 40).unwrap(), 18);
    assert_eq!(max_bin_size(3 * n, kkrt.num_bins() as u64, 40).unwrap(), 24);
    for (log_n, want) in [
        (8, 1.546),
        (12, 1.478),
        (16, 1.506),
        (20, 1.538),
        (24, 1.571),
    ] {
        assert!((kkrt_bin_factor(1 << log_n, 40) - want).abs() < 5e-4);
    }
    assert!((kkrt_bin_factor(1, 40) - 106.0).abs() < 1.0);
    assert!((kkrt_bin_factor(16, 40) - 3.1).abs() < 0.05);
    assert_eq!(default_max_evictions(1 << 21), 232);
    assert_eq!(default_max_evictions(1 << 25), 264);
    // 2(1 + ε) = 12/5, as CuckooParams::psz computes it.
    assert!((2.0 * (1.0 + PSZ_EPSILON) - 2.4).abs() < 1e-12);
    assert_eq!(PSZ_STASH, 4);
}
