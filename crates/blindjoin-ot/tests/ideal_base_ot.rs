//! The ideal-functionality base OT (feature `ideal-base-ot`, enabled for these tests by the
//! crate's dev-dependency on itself): the receiver's key is the sender's key at its choice;
//! zero OTs exchange nothing; a truncated or overlong keys frame is an error.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_core::Error;
use blindjoin_ot::base::ideal::{
    IdealBaseOtReceiver, IdealBaseOtSender, MAX_IDEAL_BASE_OTS, MSG_IDEAL_KEYS,
};
use blindjoin_ot::base::{BaseOtReceiver, BaseOtSender, KEY_LEN};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
use rand::Rng;

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
