//! What every protocol's test file shares (`mod common;` in each): the exact-index suite, runs
//! over metered channels whose per-message traffic is checked against the protocol's formula,
//! and runs with one named message of one party attacked.
#![allow(dead_code)]

use blindjoin_core::Result;
use blindjoin_core::channel::Channel;
use blindjoin_core::channel::metered::{ByMessage, Metered};
use blindjoin_core::channel::transcript::{Digests, Transcript};
use blindjoin_core::handshake::{MSG_HELLO, MSG_VERDICT};
use blindjoin_core::item::{Item, items_from_records};
use blindjoin_ot::base;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::{BaseOt, Party, Protocol, ReceiverOutput, RunOptions, SenderOutput};
use blindjoin_testkit::{Attack, Tamper, Target, oracle, rng, run_two_party, sets_with_overlap};

/// (receiver size, sender size, overlap) cases every protocol must get exactly right: empty,
/// singleton, tiny, 2^10 + 1, and unbalanced both ways.
pub const BASE_CASES: [(usize, usize, usize); 13] = [
    (0, 0, 0),
    (0, 5, 0),
    (5, 0, 0),
    (1, 1, 1),
    (1, 1, 0),
    (2, 2, 1),
    (2, 2, 2),
    (10, 10, 3),
    (10, 10, 10),
    (1025, 1025, 500),
    (1025, 1025, 0),
    (10, 1000, 7),
    (1000, 10, 7),
];

/// Both parties' results.
pub type Outcome = (Result<ReceiverOutput>, Result<SenderOutput>);

/// Options with the real (Chou-Orlandi) base OT: the run as a user runs it.
pub fn real() -> RunOptions {
    RunOptions::default()
}

/// Options for the bulk of the exact-index runs: as [`real`], with the base OTs replaced by the
/// ideal functionality where the protocol runs base OTs, so that the suites skip the
/// public-key work.
pub fn fast() -> RunOptions {
    RunOptions {
        base_ot: BaseOt::Ideal,
        ..RunOptions::default()
    }
}

/// Runs `p` with options `ro` / `so` and the default seeds.
pub fn run(
    p: &Protocol,
    recv: &[Item],
    send: &[Item],
    ro: &RunOptions,
    so: &RunOptions,
) -> Outcome {
    run_two_party(
        |ch| p.receive(ch, recv, ro, &mut rng(1)),
        |ch| p.send(ch, send, so, &mut rng(2)),
    )
}

/// One metered run: the receiver's indices and each party's traffic per message.
pub struct MeteredRun {
    pub indices: Vec<usize>,
    pub receiver_sent: ByMessage,
    pub sender_sent: ByMessage,
}

/// Runs `p` with the default seeds over transcript-hashing channels: the receiver's indices and
/// the digests of what each party sent and received (equal digests: equal messages).
pub fn transcript(
    p: &Protocol,
    recv: &[Item],
    send: &[Item],
    opts: &RunOptions,
) -> (Vec<usize>, [Digests; 2]) {
    let ((out, r), s) = run_two_party(
        |ch| {
            let mut t = Transcript::new(ch);
            let out = p.receive(&mut t, recv, opts, &mut rng(1));
            (out, t.digests())
        },
        |ch| {
            let mut t = Transcript::new(ch);
            p.send(&mut t, send, opts, &mut rng(2)).unwrap();
            t.digests()
        },
    );
    (out.unwrap().indices, [r, s])
}

/// Runs `p` over metered channels; checks that each side received exactly what the other sent,
/// message by message.
pub fn metered(p: &Protocol, recv: &[Item], send: &[Item], opts: &RunOptions) -> MeteredRun {
    let ((out, r_sent, r_recv), (s_sent, s_recv)) = run_two_party(
        |ch| {
            let mut m = Metered::new(ch);
            let out = p.receive(&mut m, recv, opts, &mut rng(1));
            (out, m.messages_sent(), m.messages_received())
        },
        |ch| {
            let mut m = Metered::new(ch);
            p.send(&mut m, send, opts, &mut rng(2))
                .unwrap_or_else(|e| panic!("{p} sender: {e}"));
            (m.messages_sent(), m.messages_received())
        },
    );
    let out = out.unwrap_or_else(|e| panic!("{p} receiver: {e}"));
    assert_eq!(
        r_sent, s_recv,
        "{p}: what the receiver sent and the sender got"
    );
    assert_eq!(
        s_sent, r_recv,
        "{p}: what the sender sent and the receiver got"
    );
    MeteredRun {
        indices: out.indices,
        receiver_sent: r_sent,
        sender_sent: s_sent,
    }
}

/// Whether `msg` belongs to the base OT (whose messages differ between the real base OT and
/// the ideal one).
pub fn is_base_ot(msg: &str) -> bool {
    [
        base::MSG_SENDER_POINT,
        base::MSG_RECEIVER_POINTS,
        base::endemic::MSG_ENDEMIC_SENDER_POINT,
        base::endemic::MSG_ENDEMIC_RECEIVER_PAIRS,
        blindjoin_psi::circuit::triples::MSG_SENDER_POINT_REVERSE,
        blindjoin_psi::circuit::triples::MSG_RECEIVER_POINTS_REVERSE,
    ]
    .contains(&msg)
}

/// Checks a metered run against `p`'s traffic formula: every message of the formula carries
/// exactly the formula's bytes from the party the flow names (none at all if the formula says
/// 0), and no party sends a message the formula does not list, besides the handshake's. With
/// `real_base_ot` false, base-OT messages are left out on both sides.
pub fn check_traffic(p: &Protocol, m: &MeteredRun, sizes: &Sizes, real_base_ot: bool) {
    let formula = (p.traffic)(sizes).unwrap_or_else(|e| panic!("{p} formula: {e}"));
    let handshake = |name: &str| name == MSG_HELLO || name == MSG_VERDICT;
    for (party, sent) in [
        (Party::Receiver, &m.receiver_sent),
        (Party::Sender, &m.sender_sent),
    ] {
        let mut expected: Vec<(&str, u64)> = formula
            .iter()
            .filter(|(name, bytes)| {
                let from = p.flow.iter().find(|f| f.name == *name).map(|f| f.from);
                assert!(
                    from.is_some(),
                    "{p}: formula message {name} is not in the flow"
                );
                from == Some(party) && *bytes > 0 && (real_base_ot || !is_base_ot(name))
            })
            .map(|(name, bytes)| (*name, *bytes))
            .collect();
        expected.sort_unstable();
        let mut got: Vec<(&str, u64)> = sent
            .iter()
            .filter(|(name, _)| !handshake(name))
            .filter(|(name, _)| real_base_ot || p.flow.iter().any(|f| f.name == **name))
            .filter(|(name, _)| real_base_ot || !is_base_ot(name))
            .map(|(name, t)| (*name, t.bytes))
            .collect();
        got.sort_unstable();
        assert_eq!(got, expected, "{p} {party} at {sizes:?}");
        // The handshake is one hello and one verdict each.
        for name in [MSG_HELLO, MSG_VERDICT] {
            assert_eq!(
                sent.get(name).map(|t| t.frames),
                Some(1),
                "{p} {party} {name}"
            );
        }
    }
}

/// Runs `p` on independently shuffled sets with `overlap` common records over metered
/// channels, and checks the receiver's indices against the `HashSet` oracle, the sizes each side
/// learnt, and the traffic of every message against the formula.
pub fn check_exact(
    p: &Protocol,
    (n_recv, n_send, overlap): (usize, usize, usize),
    seed: u64,
    opts: &RunOptions,
    real_base_ot: bool,
) {
    let (r, s) = sets_with_overlap(n_recv, n_send, overlap, seed);
    let expected = oracle(&r, &s);
    assert_eq!(expected.len(), overlap);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let m = metered(p, &ri, &si, opts);
    assert_eq!(
        m.indices, expected,
        "{p} {n_recv}x{n_send} overlap {overlap}"
    );
    let sizes = Sizes {
        n_recv: n_recv as u64,
        n_send: n_send as u64,
        kappa: opts.kappa,
        lambda: opts.lambda,
        sigma: None,
    };
    check_traffic(p, &m, &sizes, real_base_ot);
}

/// [`check_exact`] on [`BASE_CASES`] and then `extra` with the ideal base OT, seeds from `seed`
/// on, and the case (10, 10, 3) once more with the real base OT.
pub fn exact_suite(p: &Protocol, extra: &[(usize, usize, usize)], seed: u64) {
    for (i, &case) in BASE_CASES.iter().chain(extra).enumerate() {
        check_exact(p, case, seed + i as u64, &fast(), false);
    }
    check_exact(p, (10, 10, 3), seed, &real(), true);
}

/// Small sets for attack tests: 50 receiver and 60 sender records, 20 in common.
pub fn small_sets() -> (Vec<Item>, Vec<Item>, Vec<usize>) {
    let (r, s) = sets_with_overlap(50, 60, 20, 7);
    let expected = oracle(&r, &s);
    (items_from_records(&r), items_from_records(&s), expected)
}

/// Runs `p` on [`small_sets`] with `target` of `party`'s messages attacked (and asserts that
/// the party sent it); returns both results and the true intersection.
pub fn attacked(
    p: &Protocol,
    party: Party,
    target: Target,
    attack: Attack,
    opts: &RunOptions,
) -> (Outcome, Vec<usize>) {
    let (r, s, expected) = small_sets();
    let tamper = |ch: &mut dyn Channel, f: &mut dyn FnMut(&mut dyn Channel)| {
        let mut t = Tamper::new(ch, target, attack.clone());
        f(&mut t);
        assert!(t.applied(), "{p}: the {party} never sent {target:?}");
    };
    let outcome = run_two_party(
        |ch| {
            let mut out = None;
            let mut go = |c: &mut dyn Channel| out = Some(p.receive(c, &r, opts, &mut rng(1)));
            if party == Party::Receiver {
                tamper(ch, &mut go);
            } else {
                go(ch);
            }
            out.unwrap()
        },
        |ch| {
            let mut out = None;
            let mut go = |c: &mut dyn Channel| out = Some(p.send(c, &s, opts, &mut rng(2)));
            if party == Party::Sender {
                tamper(ch, &mut go);
            } else {
                go(ch);
            }
            out.unwrap()
        },
    );
    (outcome, expected)
}

/// Asserts that `got` is a subset of `expected` missing at most `lost` indices: what a
/// semi-honest protocol gives when one bit of a message is flipped (it cannot detect it, but a
/// wrong value loses a match, except with probability 2^-λ).
pub fn assert_subset(got: &[usize], expected: &[usize], lost: usize) {
    assert!(
        got.iter().all(|i| expected.contains(i)),
        "{got:?} is not a subset of {expected:?}"
    );
    assert!(got.len() + lost >= expected.len(), "{got:?}");
}

/// Asserts that `e` is the error of a malformed or overlong message.
pub fn assert_malformed(e: &blindjoin_core::Error) {
    assert!(
        matches!(
            e,
            blindjoin_core::Error::Malformed { .. } | blindjoin_core::Error::FrameTooLong { .. }
        ),
        "expected a malformed-message error, got: {e}"
    );
}

/// Asserts that `e` is the `Malformed` error on `message` with exactly `reason`.
pub fn assert_malformed_as(e: &blindjoin_core::Error, message: &str, reason: &str) {
    match e {
        blindjoin_core::Error::Malformed {
            message: m,
            reason: r,
        } => assert_eq!((*m, r.as_str()), (message, reason), "{e}"),
        e => panic!("expected a malformed {message}: {reason}; got: {e}"),
    }
}

/// Asserts that `e` is the `CheckFailed` error with exactly `text`.
pub fn assert_check_failed_as(e: &blindjoin_core::Error, text: &str) {
    match e {
        blindjoin_core::Error::CheckFailed(m) => assert_eq!(m, text),
        e => panic!("expected the failed check \"{text}\"; got: {e}"),
    }
}

/// The field a `ParamMismatch` names.
pub fn field_of(e: &blindjoin_core::Error) -> Option<&str> {
    match e {
        blindjoin_core::Error::ParamMismatch { field, .. } => Some(field),
        _ => None,
    }
}
