//! Every protocol of the registry, through its descriptor: the descriptor is consistent with
//! what a run does (its flow names every message sent, its traffic formula gives every message's
//! bytes); every message of every flow, attacked in transit (cut short, lengthened, never sent),
//! ends the run with an error on the side that receives it (never a panic or a hang); and
//! mismatched parameters, roles and sizes are refused on both sides, naming the field.

use crate::common;
use crate::common::{assert_malformed, fast, field_of, real, small_sets};
use blindjoin_core::Error;
use blindjoin_core::handshake::MSG_HELLO;
use blindjoin_core::item::items_from_records;
use blindjoin_psi::protocol::{Count, Sizes};
use blindjoin_psi::{Party, Protocol, RunOptions, protocols};
use blindjoin_testkit::{Attack, Target, rng, run_two_party, sets_with_overlap};
use std::collections::HashSet;

#[test]
fn descriptors_are_consistent() {
    let names: HashSet<&str> = protocols::ALL.iter().map(|p| p.name).collect();
    assert_eq!(
        names.len(),
        protocols::ALL.len(),
        "protocol names are unique"
    );
    for p in protocols::ALL {
        assert!(!p.summary.is_empty() && !p.assumptions.is_empty(), "{p}");
        assert!(!p.references.is_empty(), "{p}");
        assert!(p.kappa.contains(&128), "{p}: κ = 128 is the default");
        assert!(p.flights >= 3, "{p}: the handshake alone is two flights");
        let parties: Vec<(Party, Count)> = p.roles.iter().map(|r| (r.party, r.count)).collect();
        let expected = if p.is_two_party() {
            [(Party::Receiver, Count::One), (Party::Sender, Count::One)]
        } else {
            // Fig. 3 and 4 of KMRS14 have two clients, Fig. 1 and 2 any number.
            let clients = if ["kmrs_fair", "kmrs_size"].contains(&p.name) {
                Count::Exactly(2)
            } else {
                Count::AtLeast(2)
            };
            [(Party::Client, clients), (Party::Server, Count::One)]
        };
        assert_eq!(parties, expected, "{p}");
        // Message names are unique within a flow and never the handshake's.
        let flow: HashSet<&str> = p.flow.iter().map(|m| m.name).collect();
        assert_eq!(flow.len(), p.flow.len(), "{p}");
        assert!(!flow.contains(MSG_HELLO), "{p}");
        // The parameters name each rule once.
        let params = (p.params)(&blindjoin_psi::RunOptions::default());
        let keys: HashSet<&String> = params.iter().map(|(k, _)| k).collect();
        assert_eq!(keys.len(), params.len(), "{p}");
        assert_eq!(protocols::ALL.iter().find(|q| q.name == p.name), Some(p));
        assert_eq!(blindjoin_psi::Protocol::named(p.name).unwrap(), *p);
    }
    let e = blindjoin_psi::Protocol::named("nope\u{1b}[31m").unwrap_err();
    assert!(!e.to_string().contains('\u{1b}'), "{e}");
}

/// Sizes at which the traffic formulas are checked against real runs: empty sides, a single
/// item, unbalanced sets, and several bulk frames of 2^14 elements; the real base OT at
/// (300, 500), the ideal one (and so every message but the base OT's) elsewhere.
const TRAFFIC_CASES: [(usize, usize, usize); 5] = [
    (0, 0, 0),
    (0, 7, 0),
    (1, 1, 1),
    (300, 500, 100),
    (1000, 16_385, 200),
];

#[test]
fn traffic_formulas_match_real_runs_message_by_message() {
    for p in two_party() {
        for (i, case) in TRAFFIC_CASES.into_iter().enumerate() {
            let real_base_ot = case.0 == 300;
            let opts = if real_base_ot { real() } else { fast() };
            common::check_exact(p, case, 40 + i as u64, &opts, real_base_ot);
        }
    }
}

#[test]
fn traffic_formulas_refuse_what_the_protocols_refuse() {
    for p in two_party() {
        let ok = (p.traffic)(&Sizes::new(1 << 20, 1 << 20)).unwrap();
        assert!(ok.iter().all(|(_, b)| *b > 0), "{p}: {ok:?}");
        // λ beyond 16-byte tags at the largest sizes.
        let bad = Sizes {
            lambda: 200,
            ..Sizes::new(1 << 32, 1 << 32)
        };
        assert!((p.traffic)(&bad).is_err(), "{p}");
    }
}

/// For every protocol and every message of its flow, `attack` on that message's first frame
/// by the party that sends it; `check` sees the receiving party's error. Runs with the real
/// base OT when the message is the base OT's, with the ideal one otherwise.
fn every_message(attack: Attack, check: impl Fn(&str, &Error)) {
    for p in two_party() {
        for m in p.flow {
            let opts = if common::is_base_ot(m.name) {
                real()
            } else {
                fast()
            };
            let ((ro, so), _) =
                common::attacked(p, m.from, Target::first(m.name), attack.clone(), &opts);
            let (theirs, ours) = match m.from {
                Party::Receiver => (so.map(|_| ()), ro.map(|_| ())),
                _ => (ro.map(|_| ()), so.map(|_| ())),
            };
            let e = theirs.expect_err(&format!("{p}: {} {attack:?} went unnoticed", m.name));
            check(&format!("{p} {} {attack:?}", m.name), &e);
            if matches!(attack, Attack::HangUp) {
                assert!(ours.is_err(), "{p}: the party that hung up reports it");
            }
        }
    }
}

#[test]
fn every_message_cut_short_is_malformed() {
    every_message(Attack::DropTail(1), |what, e| {
        assert!(
            matches!(e, Error::Malformed { .. } | Error::FrameTooLong { .. }),
            "{what}: {e}"
        );
    });
}

#[test]
fn every_message_lengthened_is_malformed() {
    every_message(Attack::Extend(vec![0]), |what, e| {
        assert!(
            matches!(e, Error::Malformed { .. } | Error::FrameTooLong { .. }),
            "{what}: {e}"
        );
    });
}

#[test]
fn every_message_never_sent_ends_both_sides() {
    every_message(Attack::HangUp, |what, e| {
        // The peer's receive finds the connection closed, or its next send finds it broken.
        assert!(
            matches!(e, Error::PeerClosed { .. } | Error::SendFailed { .. }),
            "{what}: {e}"
        );
    });
}

#[test]
fn protocol_mismatch_names_the_field_on_both_sides() {
    let (r, s, _) = small_sets();
    let o = RunOptions::default();
    let (ecdh, naive) = (&protocols::ecdh::PROTOCOL, &protocols::naive::PROTOCOL);
    let (ro, so) = run_two_party(
        |ch| ecdh.receive(ch, &r, &o, &mut rng(1)),
        |ch| naive.send(ch, &s, &o, &mut rng(2)),
    );
    let (re, se) = (ro.unwrap_err(), so.unwrap_err());
    assert_eq!(field_of(&re), Some("protocol"), "{re}");
    assert_eq!(field_of(&se), Some("protocol"), "{se}");
    assert!(
        re.to_string().contains("ecdh") && re.to_string().contains("naive"),
        "{re}"
    );
}

#[test]
fn lambda_mismatch_and_size_expectations_are_refused() {
    for p in two_party() {
        let (r, s, _) = small_sets();
        let o = RunOptions::default();
        let lam = RunOptions {
            lambda: 41,
            ..RunOptions::default()
        };
        let (ro, so) = common::run(p, &r, &s, &o, &lam);
        assert_eq!(field_of(&ro.unwrap_err()), Some("lambda"), "{p}");
        assert_eq!(field_of(&so.unwrap_err()), Some("lambda"), "{p}");

        // The receiver expected 61 sender items; the sender has 60.
        let expect = RunOptions {
            expected_peer_set_size: Some(61),
            ..RunOptions::default()
        };
        let (ro, so) = common::run(p, &r, &s, &expect, &o);
        let e = ro.unwrap_err();
        assert_eq!(field_of(&e), Some("sender set size"), "{e}");
        assert!(
            e.to_string().contains("61") && e.to_string().contains("60"),
            "{e}"
        );
        // The sender's own checks pass; it learns of the refusal from the verdict exchange.
        let e = so.unwrap_err();
        assert!(matches!(e, Error::PeerRefused(_)), "{e}");
        assert!(e.to_string().contains("sender set size"), "{e}");

        // A sender claiming more than the receiver admits.
        let bound = RunOptions {
            max_peer_set_size: 59,
            ..RunOptions::default()
        };
        let (ro, _) = common::run(p, &r, &s, &bound, &o);
        assert_eq!(field_of(&ro.unwrap_err()), Some("sender set size"));
    }
}

#[test]
fn both_receivers_is_a_role_mismatch() {
    let (r, s, _) = small_sets();
    let o = RunOptions::default();
    for p in two_party() {
        let (a, b) = run_two_party(
            |ch| p.receive(ch, &r, &o, &mut rng(1)),
            |ch| p.receive(ch, &s, &o, &mut rng(2)),
        );
        assert_eq!(field_of(&a.unwrap_err()), Some("role"), "{p}");
        assert_eq!(field_of(&b.unwrap_err()), Some("role"), "{p}");
    }
}

#[test]
fn lowered_or_unsupported_security_is_refused_before_connecting() {
    let (r, _, _) = small_sets();
    for p in two_party() {
        // A κ the protocol does not offer (80 for most; none offers 64).
        let unsupported = if p.kappa.contains(&80) { 64 } else { 80 };
        for (kappa, lambda, allow_weak, field) in [
            (unsupported, 40, false, "kappa"),
            (128, 0, true, "lambda"),
            (128, 81, false, "lambda"),
            (128, 39, false, "lambda"),
            (128, 20, false, "lambda"),
        ] {
            let o = RunOptions {
                kappa,
                lambda,
                allow_weak,
                ..RunOptions::default()
            };
            // The peer end stays silent: the refusal comes before anything is sent.
            let (mut ch, _peer) =
                blindjoin_core::channel::memory::memory_pair(std::time::Duration::from_secs(1));
            let e = p.receive(&mut ch, &r, &o, &mut rng(1)).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidParam { field: f, .. } if *f == field),
                "{p} κ = {kappa} λ = {lambda}: {e}"
            );
            if lambda == 39 {
                assert!(e.to_string().contains("below 40"), "{e}");
            }
        }
    }
}

#[test]
fn weak_lambda_runs_when_allowed() {
    // λ = 20 on both sides with the explicit consent: exact result.
    let (r, s) = sets_with_overlap(200, 300, 50, 3);
    let expected = blindjoin_testkit::oracle(&r, &s);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let weak = RunOptions {
        lambda: 20,
        allow_weak: true,
        ..RunOptions::default()
    };
    for p in two_party() {
        let (ro, so) = common::run(p, &ri, &si, &weak, &weak);
        so.unwrap();
        let ro = ro.unwrap();
        assert_eq!(ro.indices, expected, "{p}");
        assert_eq!(ro.session.lambda, 20);
    }
}

#[test]
fn garbage_hello_is_refused() {
    for p in two_party() {
        let hello = Target::first(MSG_HELLO);
        let sender = |attack| {
            common::attacked(p, Party::Sender, hello, attack, &fast())
                .0
                .0
        };
        let e = sender(Attack::Replace(b"GET / HTTP/1.1\r\n".to_vec())).unwrap_err();
        assert!(e.to_string().contains("not a blindjoin endpoint"), "{e}");
        assert_malformed(&sender(Attack::Truncate(12)).unwrap_err());
        assert_malformed(&sender(Attack::Extend(vec![0; 3])).unwrap_err());
        // The wire version sits right after the 8 magic bytes.
        assert_eq!(
            field_of(&sender(Attack::FlipBit(8)).unwrap_err()),
            Some("wire_version")
        );
    }
}

#[test]
fn security_levels_follow_psz14_and_dcw13_table_2() {
    // The levels each protocol offers (anything else is refused naming them, test above).
    let levels: Vec<(&str, &[u32])> = protocols::ALL.iter().map(|p| (p.name, p.kappa)).collect();
    let want: &[(&str, &[u32])] = &[
        ("rsa_blind", &[80, 128, 192, 256]),
        ("dh_ffc", &[80, 128, 192]),
        ("ecdh_nist", &[128, 192, 256]),
        ("gbf", &[80, 128, 192, 256]),
        ("rgbf", &[80, 128]),
        ("psz14", &[80, 128]),
        ("kkrt16", &[80, 128]),
        ("cm20", &[80, 128]),
        ("ecdh", &[128]),
        ("dkt10", &[128]),
    ];
    for (name, kappa) in want {
        assert!(levels.contains(&(name, kappa)), "{name}: {levels:?}");
    }
    // The group element the receiver sends per item, from the traffic formula at n = 2^12:
    // PSZ14 Tab. 2's ρ (FFC and IFC: 1024 bits at κ = 80, 3072 at 128), DCW13 Tab. 2's for 192
    // and 256 (RSA 7680 and 15360; for DH the next standard group, 8192, since none has 7680),
    // and the NIST curves of DCW13 Tab. 2 (P-256 for PSZ14's K-283, P-384, P-521) compressed.
    let rho_bytes = [
        (&protocols::dh_ffc::PROTOCOL, 80, 128),
        (&protocols::dh_ffc::PROTOCOL, 128, 384),
        (&protocols::dh_ffc::PROTOCOL, 192, 1024),
        (&protocols::rsa_blind::PROTOCOL, 80, 128),
        (&protocols::rsa_blind::PROTOCOL, 128, 384),
        (&protocols::rsa_blind::PROTOCOL, 192, 960),
        (&protocols::rsa_blind::PROTOCOL, 256, 1920),
        (&protocols::ecdh_nist::PROTOCOL, 128, 33),
        (&protocols::ecdh_nist::PROTOCOL, 192, 49),
        (&protocols::ecdh_nist::PROTOCOL, 256, 67),
        (&protocols::ecdh::PROTOCOL, 128, 32),
    ];
    let n = 1u64 << 12;
    for (p, kappa, bytes) in rho_bytes {
        let t = (p.traffic)(&Sizes {
            n_recv: n,
            n_send: n,
            kappa,
            lambda: 40,
            sigma: None,
        })
        .unwrap();
        let sent: u64 = t
            .iter()
            .filter(|(name, _)| {
                p.flow
                    .iter()
                    .any(|f| f.name == *name && f.from == Party::Receiver)
            })
            .map(|(_, b)| b)
            .sum();
        assert_eq!(sent / n, bytes, "{p} at κ = {kappa}: {sent} bytes");
    }
}

/// The registered two-party protocols (the server-aided ones have their own tests:
/// `server_aided.rs`).
fn two_party() -> impl Iterator<Item = &'static &'static Protocol> {
    protocols::ALL.iter().filter(|p| p.is_two_party())
}
