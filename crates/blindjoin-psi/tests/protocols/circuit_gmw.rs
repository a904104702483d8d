//! `circuit_gmw`, `circuit_gmw_scalar` and `circuit_yao` end to end over in-memory channels:
//! exact indices against a `HashSet` oracle; the cardinality and the sum of the sender's values
//! over the intersection, exactly; σ = 32 only with consent; a result or σ that the two
//! parties do not share refused naming the field; a protocol without aggregates refusing
//! them; the circuit's gate count against PSZ14 App. D.1 and the bytes against 32 per AND gate
//! (half-gates) and against the triples and openings (GMW); tampered openings and tables give
//! a wrong result or an error, never a panic.

use crate::common::{self, fast, field_of, run};
use blindjoin_core::Error;
use blindjoin_core::item::items_from_records;
use blindjoin_psi::circuit::gadgets::Comparator;
use blindjoin_psi::circuit::gmw::{MSG_OPEN_AND, MSG_OPEN_VECTOR};
use blindjoin_psi::circuit::yao::MSG_TABLES;
use blindjoin_psi::protocols::circuit_psi::{self, Shape};
use blindjoin_psi::protocols::{circuit_gmw, circuit_gmw_scalar, circuit_yao, ecdh};
use blindjoin_psi::{Aggregate, Party, Protocol, ResultKind, RunOptions};
use blindjoin_testkit::{Attack, Target, oracle, sets_with_overlap};
use std::sync::Arc;

static GMW: &Protocol = &circuit_gmw::PROTOCOL;
static SCALAR: &Protocol = &circuit_gmw_scalar::PROTOCOL;
static YAO: &Protocol = &circuit_yao::PROTOCOL;
static ALL: [&Protocol; 3] = [GMW, SCALAR, YAO];

#[test]
fn exact_indices_gmw() {
    common::exact_suite(GMW, &[(300, 37, 20), (37, 300, 37)], 700);
}

#[test]
fn exact_indices_gmw_scalar() {
    common::exact_suite(SCALAR, &[(300, 37, 20)], 720);
}

#[test]
fn exact_indices_yao() {
    common::exact_suite(YAO, &[(300, 37, 20), (37, 300, 37)], 740);
}

/// The sender's value of record k: 1000·k + 7 (so every sum is checked exactly).
fn value_of(record: &[u8]) -> u64 {
    let k: u64 = String::from_utf8_lossy(record)
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse::<u64>()
        .unwrap_or(0)
        % 1_000_000;
    1000 * k + 7
}

#[test]
fn cardinality_and_sum_are_exact() {
    for (nr, ns, overlap, seed) in [
        (200, 150, 60, 1),
        (1, 1, 1, 2),
        (10, 30, 0, 3),
        (64, 64, 64, 4),
    ] {
        let (r, s) = sets_with_overlap(nr, ns, overlap, seed);
        let expected = oracle(&r, &s);
        let s_set: std::collections::HashSet<&Vec<u8>> = s.iter().collect();
        let sum: u128 = r
            .iter()
            .filter(|x| s_set.contains(x))
            .map(|x| u128::from(value_of(x)))
            .sum();
        let values: Arc<[u64]> = s.iter().map(|x| value_of(x)).collect();
        let (ri, si) = (items_from_records(&r), items_from_records(&s));
        for p in ALL {
            let card = RunOptions {
                result: ResultKind::Cardinality,
                ..fast()
            };
            let (ro, so) = run(p, &ri, &si, &card, &card);
            so.unwrap();
            let out = ro.unwrap();
            assert!(out.indices.is_empty());
            assert_eq!(
                out.aggregate,
                Some(Aggregate::Cardinality(expected.len() as u64)),
                "{p} {nr}x{ns}"
            );
            let ro_sum = RunOptions {
                result: ResultKind::Sum,
                ..fast()
            };
            let so_sum = RunOptions {
                values: Some(values.clone()),
                ..ro_sum.clone()
            };
            let (ro, so) = run(p, &ri, &si, &ro_sum, &so_sum);
            so.unwrap();
            assert_eq!(
                ro.unwrap().aggregate,
                Some(Aggregate::Sum(sum)),
                "{p} {nr}x{ns}"
            );
        }
    }
}

#[test]
fn a_sum_without_values_or_with_a_value_too_large_is_refused() {
    let (r, s, _) = common::small_sets();
    let opts = RunOptions {
        result: ResultKind::Sum,
        ..fast()
    };
    for values in [None, Some(vec![1u64; 59]), Some(vec![1u64 << 32; 60])] {
        let so = RunOptions {
            values: values.map(Arc::from),
            ..opts.clone()
        };
        let (ro, so) = run(GMW, &r, &s, &opts, &so);
        let e = so.unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidParam {
                    field: "values",
                    ..
                }
            ),
            "{e}"
        );
        assert!(ro.is_err());
    }
}

#[test]
fn sigma_32_needs_consent_and_then_runs_exactly() {
    let (r, s, expected) = common::small_sets();
    let weak = RunOptions {
        sigma: Some(32),
        ..fast()
    };
    for p in ALL {
        let (ro, so) = run(p, &r, &s, &weak, &weak);
        let e = ro.unwrap_err();
        assert!(
            matches!(e, Error::InvalidParam { field: "sigma", .. }),
            "{p}: {e}"
        );
        assert!(so.is_err());
        let allowed = RunOptions {
            allow_weak: true,
            ..weak.clone()
        };
        let (ro, so) = run(p, &r, &s, &allowed, &allowed);
        so.unwrap();
        assert_eq!(ro.unwrap().indices, expected, "{p}");
    }
}

#[test]
fn result_and_sigma_must_match() {
    let (r, s, _) = common::small_sets();
    let card = RunOptions {
        result: ResultKind::Cardinality,
        ..fast()
    };
    let sigma = RunOptions {
        sigma: Some(90),
        ..fast()
    };
    for p in ALL {
        for (ro, field) in [(&card, "result"), (&sigma, "sigma")] {
            let (r_out, s_out) = run(p, &r, &s, ro, &fast());
            assert_eq!(field_of(&r_out.unwrap_err()), Some(field), "{p}");
            assert_eq!(field_of(&s_out.unwrap_err()), Some(field), "{p}");
        }
    }
    // A protocol that computes only the intersection refuses an aggregate before connecting.
    let (r_out, _) = run(&ecdh::PROTOCOL, &r, &s, &card, &card);
    let e = r_out.unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidParam {
                field: "result",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn gate_counts_follow_psz14() {
    // n1 = n2 = n = 2^10 at σ = 32: σ(3n·log2 n + 4n) − n AND gates with the size-optimised
    // comparators of Yao; PSZ14 App. D.1.
    let n = 1024u64;
    let shape = Shape {
        result: ResultKind::Intersection,
        sigma: 32,
        n_s: n as usize,
        n_r: n as usize,
    };
    let yao = circuit_psi::count(&shape, Comparator::Size).unwrap();
    assert_eq!(yao.and_gates, 32 * (3 * n * 10 + 4 * n) - n);
    assert_eq!(yao.multiplexers(), 2 * n * 10 + n + 1);
    let gmw = circuit_psi::count(&shape, Comparator::Depth).unwrap();
    // Depth-optimised comparators: 89 AND gates instead of 32 per comparison.
    assert_eq!(gmw.and_gates - yao.and_gates, (89 - 32) * n * 11);
}

#[test]
fn yao_sends_two_kappa_bits_per_and_gate() {
    // PSZ14 Tab. 6's Yao row counts 3κ per AND gate (GRR); half-gates send 2κ, and the
    // tables are everything but the inputs, the OT and the decoding bits.
    let (r, s) = sets_with_overlap(1000, 1000, 300, 9);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let m = common::metered(YAO, &ri, &si, &fast());
    assert_eq!(m.indices, oracle(&r, &s));
    let sigma = circuit_psi::derived_sigma(40, 1000, 1000) as usize;
    let shape = Shape {
        result: ResultKind::Intersection,
        sigma,
        n_s: 1000,
        n_r: 1000,
    };
    let gates = circuit_psi::count(&shape, Comparator::Size)
        .unwrap()
        .and_gates;
    let tables = m.sender_sent.get(MSG_TABLES).unwrap().bytes;
    let frames = m.sender_sent.get(MSG_TABLES).unwrap().frames;
    assert_eq!(tables, 32 * gates + 4 * frames);
    let total: u64 = m
        .sender_sent
        .values()
        .chain(m.receiver_sent.values())
        .map(|t| t.bytes)
        .sum();
    // The inputs: 16 bytes per label of the sender's values and switches, 32 per bit of the
    // receiver's (u column and y value); the rest (setup, base OTs, framing, decoding bits)
    // stays within 5 %.
    let inputs = 16 * (1000 * sigma as u64 + shape.switches() as u64) + 32 * 1000 * sigma as u64;
    let floor = 32 * gates + inputs;
    assert!(
        total >= floor && (total as f64) < 1.05 * floor as f64,
        "{total} {floor}"
    );
}

#[test]
fn tampered_openings_and_tables_never_panic() {
    // Neither GMW nor a garbled circuit against semi-honest parties detects a flipped bit of an
    // opening or a table: the result may be wrong, but the run ends, with an error or with
    // indices of the receiver's own items.
    for (p, party, target) in [
        (GMW, Party::Sender, Target::first(MSG_OPEN_AND[0])),
        (GMW, Party::Receiver, Target::frame(MSG_OPEN_AND[1], 3)),
        (GMW, Party::Sender, Target::first(MSG_OPEN_VECTOR[0])),
        (SCALAR, Party::Receiver, Target::first(MSG_OPEN_AND[1])),
        (YAO, Party::Sender, Target::first(MSG_TABLES)),
    ] {
        for attack in [Attack::FlipBit(0), Attack::FlipBit(77)] {
            let ((ro, so), _) = common::attacked(p, party, target, attack.clone(), &fast());
            if let (Ok(out), Ok(_)) = (&ro, &so) {
                let idx = &out.indices;
                assert!(idx.windows(2).all(|w| w[0] < w[1]), "{p}: {idx:?}");
                assert!(idx.iter().all(|i| *i < 50), "{p}: {idx:?}");
            }
        }
    }
}
