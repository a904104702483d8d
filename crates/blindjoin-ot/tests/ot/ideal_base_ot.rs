//! The ideal-functionality base OT (feature `ideal-base-ot`, enabled for these tests by the
//! crate's dev-dependency on itself): the receiver's key is the sender's key at its choice;
//! zero OTs exchange nothing; a truncated or overlong keys frame is an error; IKNP, KOS, KK13
//! and KKRT set up over it give correct OTs, and their setup is timed against CO15's.

use blindjoin_core::{Block, Error};
use blindjoin_ot::base::ideal::{
    IdealBaseOtReceiver, IdealBaseOtSender, MAX_IDEAL_BASE_OTS, MSG_IDEAL_KEYS,
};
use blindjoin_ot::base::{
    BaseOtReceiver, BaseOtSender, ChouOrlandiReceiver, ChouOrlandiSender, KEY_LEN,
};
use blindjoin_ot::ext::iknp::{IknpReceiver, IknpSender};
use blindjoin_ot::ext::kk13::{Kk13Receiver, Kk13Sender};
use blindjoin_ot::ext::kkrt::{DEFAULT_CODE_BLOCKS, KkrtReceiver, KkrtSender};
use blindjoin_ot::ext::kos::{KosBase, KosReceiver, KosSender};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
use rand::Rng;
use std::time::Instant;

const SID: [u8; 32] = [0x1d; 32];

fn random_choices(n: usize, seed: u64) -> Vec<bool> {
    let mut r = rng(seed);
    (0..n).map(|_| r.random()).collect()
}

#[test]
fn receiver_gets_the_chosen_key_and_not_the_other() {
    for n in [1usize, 2, 10, 128, 1025] {
        let choices = random_choices(n, n as u64);
        let (sent, got) = run_two_party(
            |ch| IdealBaseOtSender::default().send_random(ch, &SID, n, &mut rng(1)),
            |ch| IdealBaseOtReceiver::default().receive_random(ch, &SID, &choices, &mut rng(2)),
        );
        let (sent, got) = (sent.unwrap(), got.unwrap());
        assert_eq!(sent.len(), n);
        assert_eq!(got.len(), n);
        for (i, ((pair, key), &c)) in sent.iter().zip(&got).zip(&choices).enumerate() {
            assert_eq!(*key, pair[usize::from(c)], "n = {n}, OT {i}");
            assert_ne!(*key, pair[usize::from(!c)], "n = {n}, OT {i}");
        }
    }
}

#[test]
fn kos_extended_base_ots_give_the_chosen_key_and_not_the_other() {
    // 512 base OTs for a wide extension from 128 inner ones (here the ideal base OT).
    let n = 512;
    let choices = random_choices(n, 5);
    let (sent, got) = run_two_party(
        |ch| KosBase(IdealBaseOtReceiver::default()).send_random(ch, &SID, n, &mut rng(1)),
        |ch| KosBase(IdealBaseOtSender::default()).receive_random(ch, &SID, &choices, &mut rng(2)),
    );
    let (sent, got) = (sent.unwrap(), got.unwrap());
    assert_eq!((sent.len(), got.len()), (n, n));
    for (i, ((pair, key), &c)) in sent.iter().zip(&got).zip(&choices).enumerate() {
        assert_eq!(*key, pair[usize::from(c)], "OT {i}");
        assert_ne!(*key, pair[usize::from(!c)], "OT {i}");
    }
}

#[test]
fn keys_are_fresh_from_the_senders_rng() {
    let choices = random_choices(64, 3);
    let run = |seed: u64| {
        run_two_party(
            |ch| IdealBaseOtSender::default().send_random(ch, &SID, 64, &mut rng(seed)),
            |ch| IdealBaseOtReceiver::default().receive_random(ch, &SID, &choices, &mut rng(9)),
        )
        .0
        .unwrap()
    };
    let (a, b, a2) = (run(1), run(2), run(1));
    assert_eq!(a, a2, "the keys are a function of the sender's RNG");
    assert!(a.iter().zip(&b).all(|(x, y)| x[0] != y[0] && x[1] != y[1]));
}

#[test]
fn zero_ots_exchange_nothing() {
    let (sent, got) = run_two_party(
        |ch| {
            let mut t = Tamper::new(ch, Target::first(MSG_IDEAL_KEYS), Attack::HangUp);
            let keys = IdealBaseOtSender::default().send_random(&mut t, &SID, 0, &mut rng(1));
            (keys, t.frames().to_vec())
        },
        |ch| {
            let mut t = Tamper::new(ch, Target::first(MSG_IDEAL_KEYS), Attack::HangUp);
            let keys =
                IdealBaseOtReceiver::default().receive_random(&mut t, &SID, &[], &mut rng(2));
            (keys, t.frames().to_vec())
        },
    );
    assert_eq!(sent.0.unwrap(), Vec::<[[u8; KEY_LEN]; 2]>::new());
    assert_eq!(sent.1, []);
    assert_eq!(got.0.unwrap(), Vec::<[u8; KEY_LEN]>::new());
    assert_eq!(got.1, []);
}

#[test]
fn all_keys_travel_in_one_frame_of_32_bytes_per_ot() {
    let choices = random_choices(300, 4);
    let (frames, _) = run_two_party(
        |ch| {
            let mut t = Tamper::new(ch, Target::first("no such message"), Attack::HangUp);
            IdealBaseOtSender::default()
                .send_random(&mut t, &SID, 300, &mut rng(1))
                .unwrap();
            t.frames().to_vec()
        },
        |ch| IdealBaseOtReceiver::default().receive_random(ch, &SID, &choices, &mut rng(2)),
    );
    assert_eq!(frames, [(MSG_IDEAL_KEYS, 300 * 32)]);
}

#[test]
fn a_truncated_keys_frame_is_malformed() {
    let choices = random_choices(128, 5);
    let (_, got) = run_two_party(
        |ch| {
            let mut t = Tamper::new(ch, Target::first(MSG_IDEAL_KEYS), Attack::Truncate(100));
            IdealBaseOtSender::default().send_random(&mut t, &SID, 128, &mut rng(1))
        },
        |ch| IdealBaseOtReceiver::default().receive_random(ch, &SID, &choices, &mut rng(2)),
    );
    match got {
        Err(Error::Malformed { message, reason }) => {
            assert_eq!(message, MSG_IDEAL_KEYS);
            assert_eq!(reason, "100 bytes instead of 128 key pairs of 32 bytes");
        }
        other => panic!("expected Malformed({MSG_IDEAL_KEYS}), got {other:?}"),
    }
}

#[test]
fn an_overlong_keys_frame_is_too_long() {
    // The sender runs 129 OTs, the receiver 128.
    let choices = random_choices(128, 6);
    let (_, got) = run_two_party(
        |ch| IdealBaseOtSender::default().send_random(ch, &SID, 129, &mut rng(1)),
        |ch| IdealBaseOtReceiver::default().receive_random(ch, &SID, &choices, &mut rng(2)),
    );
    assert!(
        matches!(got, Err(Error::FrameTooLong { message, len: 4128, max: 4096 }) if message == MSG_IDEAL_KEYS),
        "{got:?}"
    );
}

#[test]
fn too_many_ots_is_an_invalid_parameter() {
    let (sent, got) = run_two_party(
        |ch| {
            IdealBaseOtSender::default().send_random(ch, &SID, MAX_IDEAL_BASE_OTS + 1, &mut rng(1))
        },
        |ch| {
            let choices = vec![false; MAX_IDEAL_BASE_OTS + 1];
            IdealBaseOtReceiver::default().receive_random(ch, &SID, &choices, &mut rng(2))
        },
    );
    assert!(matches!(sent, Err(Error::InvalidParam { .. })), "{sent:?}");
    assert!(matches!(got, Err(Error::InvalidParam { .. })), "{got:?}");
}

#[test]
fn iknp_and_kos_over_the_ideal_base_ot() {
    let c = random_choices(1000, 7);
    let (got, sent) = run_two_party(
        |ch| {
            let mut r =
                IknpReceiver::setup(&mut IdealBaseOtSender::default(), ch, &SID, &mut rng(1))
                    .unwrap();
            let mut k =
                KosReceiver::setup(&mut IdealBaseOtSender::default(), ch, &SID, &mut rng(3))
                    .unwrap();
            let mut a = vec![Block::ZERO; c.len()];
            r.receive_random(ch, &c, &mut a).unwrap();
            let mut b = vec![Block::ZERO; c.len()];
            k.receive_random(ch, &c, &mut b).unwrap();
            (a, b)
        },
        |ch| {
            let mut s =
                IknpSender::setup(&mut IdealBaseOtReceiver::default(), ch, &SID, &mut rng(2))
                    .unwrap();
            let mut k =
                KosSender::setup(&mut IdealBaseOtReceiver::default(), ch, &SID, &mut rng(4))
                    .unwrap();
            let mut a = vec![[Block::ZERO; 2]; c.len()];
            s.send_random(ch, &mut a).unwrap();
            let mut b = vec![[Block::ZERO; 2]; c.len()];
            k.send_random(ch, &mut b).unwrap();
            (a, b)
        },
    );
    for (outs, pairs) in [(&got.0, &sent.0), (&got.1, &sent.1)] {
        for (i, ((o, p), &b)) in outs.iter().zip(pairs).zip(&c).enumerate() {
            assert_eq!(*o, p[usize::from(b)], "OT {i}");
            assert_ne!(*o, p[usize::from(!b)], "OT {i}");
        }
    }
}

#[test]
fn kk13_over_the_ideal_base_ot() {
    let c: Vec<u32> = (0..1000u32).map(|i| (i * 37 + 11) % 256).collect();
    let (got, sent) = run_two_party(
        |ch| {
            let mut r =
                Kk13Receiver::setup(&mut IdealBaseOtSender::default(), 8, ch, &SID, &mut rng(1))
                    .unwrap();
            let mut out = vec![Block::ZERO; c.len()];
            r.receive_random(ch, &c, &mut out).unwrap();
            out
        },
        |ch| {
            let mut s = Kk13Sender::setup(
                &mut IdealBaseOtReceiver::default(),
                8,
                ch,
                &SID,
                &mut rng(2),
            )
            .unwrap();
            s.send_random(ch, c.len()).unwrap()
        },
    );
    for (i, (&v, g)) in c.iter().zip(&got).enumerate() {
        assert_eq!(*g, sent.output(i, v).unwrap(), "OT {i}");
        assert_ne!(*g, sent.output(i, (v + 1) % 256).unwrap(), "OT {i}");
    }
}

#[test]
fn kkrt_over_the_ideal_base_ot() {
    let x: Vec<Block> = (0..1000u128).map(|i| Block(i * 0x9e37_79b9 + 5)).collect();
    let (got, sent) = run_two_party(
        |ch| {
            let mut r = KkrtReceiver::setup(
                &mut IdealBaseOtSender::default(),
                DEFAULT_CODE_BLOCKS,
                ch,
                &SID,
                &mut rng(1),
            )
            .unwrap();
            let mut out = vec![Block::ZERO; x.len()];
            r.receive(ch, &x, &mut out).unwrap();
            out
        },
        |ch| {
            let mut s = KkrtSender::setup(
                &mut IdealBaseOtReceiver::default(),
                DEFAULT_CODE_BLOCKS,
                ch,
                &SID,
                &mut rng(2),
            )
            .unwrap();
            s.send(ch, x.len()).unwrap()
        },
    );
    for (i, (y, g)) in x.iter().zip(&got).enumerate() {
        assert_eq!(*g, sent.eval(i, *y).unwrap(), "instance {i}");
        assert_ne!(*g, sent.eval(i, Block(y.0 ^ 1)).unwrap(), "instance {i}");
    }
}

/// Best-of-`reps` seconds of a KKRT setup (k = 512 base OTs, both parties, in-memory channel)
/// over the given base OTs.
fn time_kkrt_setup<S, R>(
    reps: u64,
    base_of_r: impl Fn() -> S + Sync,
    base_of_s: impl Fn() -> R + Sync,
) -> f64
where
    S: BaseOtSender,
    R: BaseOtReceiver,
{
    let mut best = f64::INFINITY;
    for k in 0..reps {
        let t = Instant::now();
        run_two_party(
            |ch| {
                KkrtReceiver::setup(&mut base_of_r(), DEFAULT_CODE_BLOCKS, ch, &SID, &mut rng(k))
                    .unwrap()
            },
            |ch| {
                KkrtSender::setup(
                    &mut base_of_s(),
                    DEFAULT_CODE_BLOCKS,
                    ch,
                    &SID,
                    &mut rng(k + 99),
                )
                .unwrap()
            },
        );
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

/// The setup of an extension with 512 base OTs (KKRT, w = 4) over the ideal base OT and over
/// CO15: `cargo test --release -p blindjoin-ot --test ot ideal_base_ot:: -- --ignored --nocapture`.
#[test]
#[ignore = "timing"]
fn timing_setup_ideal_vs_co15() {
    let co15 = time_kkrt_setup(10, ChouOrlandiSender::default, ChouOrlandiReceiver::default);
    let ideal = time_kkrt_setup(10, IdealBaseOtSender::default, IdealBaseOtReceiver::default);
    println!(
        "KKRT setup, 512 base OTs, best of 10: CO15 {:.2} ms, ideal {:.3} ms ({:.0}x faster)",
        co15 * 1e3,
        ideal * 1e3,
        co15 / ideal
    );
    assert!(ideal < co15);
}
