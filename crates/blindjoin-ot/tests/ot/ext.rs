//! IKNP/ALSZ and KOS OT extension over the in-memory channel: for every OT the receiver's output
//! equals the sender's message at the choice bit and differs from the other one; counts around
//! the 128-bit column and the 2^16 chunk boundaries; several batches after one setup; malformed
//! peer messages return errors.

use blindjoin_core::Block;
use blindjoin_core::Error;
use blindjoin_ot::base::endemic::{EndemicReceiver, EndemicSender};
use blindjoin_ot::base::{BaseOtReceiver, BaseOtSender, ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_ot::ext::iknp::{IknpReceiver, IknpSender, MSG_U_COLUMNS};
use blindjoin_ot::ext::kos::{
    self, KosReceiver, KosSender, MSG_COMMITMENT, MSG_OPENING, MSG_PROOF, MSG_SEED,
};
use blindjoin_ot::ext::{CHUNK, RandomOtReceiver, RandomOtSender};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
use rand::Rng;

const SID: [u8; 32] = [7; 32];

fn choices(n: usize, seed: u64) -> Vec<bool> {
    let mut r = rng(seed);
    (0..n).map(|_| r.random::<bool>()).collect()
}

fn check_random(pairs: &[[Block; 2]], got: &[Block], c: &[bool]) {
    assert_eq!(pairs.len(), got.len());
    for (i, ((p, g), &b)) in pairs.iter().zip(got).zip(c).enumerate() {
        assert_eq!(*g, p[usize::from(b)], "OT {i}");
        assert_ne!(*g, p[usize::from(!b)], "OT {i}");
    }
}

/// The generic test of the role traits: one setup over the given base OTs, then one batch per
/// count; every OT's output equals the sender's message at the choice and differs from the
/// other; batches are fresh.
fn random_ot_counts<S: RandomOtSender, R: RandomOtReceiver>(
    mut base_of_r: impl BaseOtSender + Send,
    mut base_of_s: impl BaseOtReceiver + Send,
    counts: &[usize],
) {
    let all: Vec<Vec<bool>> = counts
        .iter()
        .enumerate()
        .map(|(i, &n)| choices(n, i as u64))
        .collect();
    let (recv, send) = run_two_party(
        |ch| {
            let mut r = R::setup(&mut base_of_r, ch, &SID, &mut rng(1)).unwrap();
            all.iter()
                .map(|c| {
                    let mut out = vec![Block::ZERO; c.len()];
                    r.receive_random(ch, c, &mut out).unwrap();
                    out
                })
                .collect::<Vec<_>>()
        },
        |ch| {
            let mut s = S::setup(&mut base_of_s, ch, &SID, &mut rng(2)).unwrap();
            counts
                .iter()
                .map(|&n| {
                    let mut out = vec![[Block::ZERO; 2]; n];
                    s.send_random(ch, &mut out).unwrap();
                    out
                })
                .collect::<Vec<_>>()
        },
    );
    for ((p, g), c) in send.iter().zip(&recv).zip(&all) {
        check_random(p, g, c);
    }
    // Batches after one setup are fresh: no output repeats across batches.
    assert_ne!(send[0][0], send[1][0]);
}

const COUNTS: [usize; 8] = [1, 127, 128, 129, 1000, 65_536, 65_537, 100_000];

#[test]
fn iknp_random_ot_counts_and_chunk_boundaries() {
    random_ot_counts::<IknpSender, IknpReceiver>(
        ChouOrlandiSender::default(),
        ChouOrlandiReceiver::default(),
        &COUNTS,
    );
}

#[test]
fn kos_random_ot_counts_and_chunk_boundaries() {
    random_ot_counts::<KosSender, KosReceiver>(
        ChouOrlandiSender::default(),
        ChouOrlandiReceiver::default(),
        &COUNTS,
    );
}

/// KOS batches on either side of the chunk boundaries, an empty one among them, all in one
/// session over the malicious-secure base OT.
#[test]
fn kos_batches_across_chunk_boundaries_in_one_session() {
    random_ot_counts::<KosSender, KosReceiver>(
        EndemicSender::default(),
        EndemicReceiver::default(),
        &[1, CHUNK - 1, 0, CHUNK, CHUNK + 1, 3 * CHUNK + 5],
    );
}

/// One KOS batch of `m` OTs, the receiver's channel attacked by `r_attack` and the sender's by
/// `s_attack`: the receiver's and the sender's results.
fn kos_attacked(
    m: usize,
    r_attack: Option<(Target, Attack)>,
    s_attack: Option<(Target, Attack)>,
) -> (blindjoin_core::Result<()>, blindjoin_core::Result<()>) {
    let c = choices(m, 11);
    let tamper = |a: Option<(Target, Attack)>| {
        a.unwrap_or((Target::first("no such message"), Attack::HangUp))
    };
    run_two_party(
        |ch| {
            let mut r =
                KosReceiver::setup(&mut ChouOrlandiSender::default(), ch, &SID, &mut rng(1))
                    .unwrap();
            let (target, attack) = tamper(r_attack);
            let mut t = Tamper::new(ch, target, attack);
            let mut out = vec![Block::ZERO; m];
            let res = r.receive_random(&mut t, &c, &mut out);
            if res.is_err() {
                assert!(
                    out.iter().all(|o| *o == Block::ZERO),
                    "receiver outputs wiped"
                );
            }
            res
        },
        |ch| {
            let mut s =
                KosSender::setup(&mut ChouOrlandiReceiver::default(), ch, &SID, &mut rng(2))
                    .unwrap();
            let (target, attack) = tamper(s_attack);
            let mut t = Tamper::new(ch, target, attack);
            let mut out = vec![[Block::ZERO; 2]; m];
            let res = s.send_random(&mut t, &mut out);
            if res.is_err() {
                assert!(
                    out.iter().all(|o| *o == [Block::ZERO; 2]),
                    "sender outputs wiped"
                );
            }
            res
        },
    )
}

#[test]
fn kos_opening_that_does_not_match_the_commitment_is_caught() {
    // A bit of the seed share (bytes 0..16), then of the nonce (16..32).
    for at in [0usize, 5, 16, 31] {
        let (_, sent) = kos_attacked(
            700,
            Some((Target::first(MSG_OPENING), Attack::FlipBit(at))),
            None,
        );
        let e = sent.unwrap_err();
        assert!(
            matches!(&e, Error::CheckFailed(m) if m.contains("commitment")),
            "byte {at}: {e}"
        );
    }
    // The same run untouched succeeds.
    let (r, s) = kos_attacked(700, None, None);
    r.unwrap();
    s.unwrap();
}

#[test]
fn kos_messages_of_the_wrong_length_are_malformed() {
    for attack in [
        Attack::Truncate(5),
        Attack::DropTail(1),
        Attack::Extend(vec![0]),
    ] {
        // The receiver's three short messages, read by the sender.
        for msg in [MSG_COMMITMENT, MSG_OPENING, MSG_PROOF] {
            let (_, sent) = kos_attacked(300, Some((Target::first(msg), attack.clone())), None);
            let e = sent.unwrap_err();
            assert!(
                matches!(&e, Error::Malformed { message, .. } if *message == msg),
                "{msg}, {attack:?}: {e}"
            );
        }
        // The sender's seed share, read by the receiver.
        let (recv, _) = kos_attacked(300, None, Some((Target::first(MSG_SEED), attack.clone())));
        let e = recv.unwrap_err();
        assert!(
            matches!(&e, Error::Malformed { message, .. } if *message == MSG_SEED),
            "{attack:?}: {e}"
        );
    }
    // The frame of the extra OTs' u columns, cut: the sender refuses it as well.
    let frames = 300usize.div_ceil(CHUNK);
    let (_, sent) = kos_attacked(
        300,
        Some((Target::frame(MSG_U_COLUMNS, frames), Attack::Truncate(16))),
        None,
    );
    let e = sent.unwrap_err();
    assert!(
        matches!(&e, Error::Malformed { message, .. } if *message == MSG_U_COLUMNS),
        "{e}"
    );
}

#[test]
fn kos_bytes_equal_the_traffic_formula() {
    use blindjoin_core::channel::metered::Metered;
    for m in [0usize, 1, 129, CHUNK, CHUNK + 1] {
        let c = choices(m, 4);
        let (recv, send) = run_two_party(
            |ch| {
                let mut r =
                    KosReceiver::setup(&mut ChouOrlandiSender::default(), ch, &SID, &mut rng(1))
                        .unwrap();
                let mut ch = Metered::new(ch);
                r.receive_random(&mut ch, &c, &mut vec![Block::ZERO; m])
                    .unwrap();
                ch.messages_sent()
            },
            |ch| {
                let mut s =
                    KosSender::setup(&mut ChouOrlandiReceiver::default(), ch, &SID, &mut rng(2))
                        .unwrap();
                let mut ch = Metered::new(ch);
                s.send_random(&mut ch, &mut vec![[Block::ZERO; 2]; m])
                    .unwrap();
                ch.messages_sent()
            },
        );
        let want = blindjoin_ot::traffic::kos(m);
        for (name, bytes) in want {
            let got = if name == MSG_SEED { &send } else { &recv }
                .get(name)
                .map_or(0, |t| t.bytes);
            assert_eq!(got, bytes, "{name}, m = {m}");
        }
        // Nothing else is sent.
        let total: u64 = want.iter().map(|(_, b)| b).sum();
        let sent: u64 = recv.values().chain(send.values()).map(|t| t.bytes).sum();
        assert_eq!(sent, total, "m = {m}");
        if m > 0 {
            assert_eq!(recv[MSG_U_COLUMNS].frames as usize, m.div_ceil(CHUNK) + 1);
        }
    }
    assert_eq!(kos::EXTRA % 128, 0);
}

/// Packs bits as the `_ones` calls take them: bit i at byte i/8, position i%8.
fn packed(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        out[i / 8] |= u8::from(b) << (i % 8);
    }
    out
}

/// `send_ones` / `receive_ones` are the same OTs as `send_random` / `receive_random` from the
/// same seeds, with only the x^1 messages computed: the sender's where selected, the
/// receiver's where its choice is 1, zero elsewhere; at chunk boundaries and after a batch.
/// The random OTs run on one thread per party, the `_ones` calls on three per party: the parallel
/// column fill, transposition and hashing give the same OTs.
#[test]
fn iknp_ones_are_the_x1_messages_of_random_ot() {
    let pool = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool")
    };
    // A pool per party: a party blocked on the channel holds its pool's threads.
    let (one_r, one_s, three_r, three_s) = (pool(1), pool(1), pool(3), pool(3));
    for n in [1usize, 129, 65_536, 65_537, 140_000] {
        let c = choices(n, 3);
        let sel = choices(n, 4);
        let (pc, ps) = (packed(&c), packed(&sel));
        let random = run_two_party(
            |ch| {
                one_r.install(|| {
                    let mut r = IknpReceiver::setup(
                        &mut ChouOrlandiSender::default(),
                        ch,
                        &SID,
                        &mut rng(1),
                    )
                    .unwrap();
                    let mut out = vec![Block::ZERO; n];
                    r.receive_random(ch, &[true; 5], &mut [Block::ZERO; 5])
                        .unwrap();
                    r.receive_random(ch, &c, &mut out).unwrap();
                    out
                })
            },
            |ch| {
                one_s.install(|| {
                    let mut s = IknpSender::setup(
                        &mut ChouOrlandiReceiver::default(),
                        ch,
                        &SID,
                        &mut rng(2),
                    )
                    .unwrap();
                    let (mut first, mut out) = ([[Block::ZERO; 2]; 5], vec![[Block::ZERO; 2]; n]);
                    s.send_random(ch, &mut first).unwrap();
                    s.send_random(ch, &mut out).unwrap();
                    (first, out)
                })
            },
        );
        let ones = run_two_party(
            |ch| {
                three_r.install(|| {
                    let mut r = IknpReceiver::setup(
                        &mut ChouOrlandiSender::default(),
                        ch,
                        &SID,
                        &mut rng(1),
                    )
                    .unwrap();
                    let mut out = vec![Block::ZERO; n];
                    r.receive_ones(ch, &[0xff], &mut [Block::ZERO; 5]).unwrap();
                    r.receive_ones(ch, &pc, &mut out).unwrap();
                    out
                })
            },
            |ch| {
                three_s.install(|| {
                    let mut s = IknpSender::setup(
                        &mut ChouOrlandiReceiver::default(),
                        ch,
                        &SID,
                        &mut rng(2),
                    )
                    .unwrap();
                    let (mut all, mut some) = (vec![Block::ZERO; 5], vec![Block::ZERO; n]);
                    s.send_ones(ch, None, &mut all).unwrap();
                    s.send_ones(ch, Some(&ps), &mut some).unwrap();
                    (all, some)
                })
            },
        );
        let (r_out, (s_all, s_some)) = ones;
        assert_eq!(s_all, random.1.0.map(|p| p[1]));
        for i in 0..n {
            let want_r = if c[i] { random.0[i] } else { Block::ZERO };
            assert_eq!(r_out[i], want_r, "receiver, OT {i} of {n}");
            let want_s = if sel[i] {
                random.1.1[i][1]
            } else {
                Block::ZERO
            };
            assert_eq!(s_some[i], want_s, "sender, OT {i} of {n}");
        }
    }
}

#[test]
fn ones_refuse_too_few_packed_bits() {
    let (r, s) = run_two_party(
        |ch| {
            let mut r =
                IknpReceiver::setup(&mut ChouOrlandiSender::default(), ch, &SID, &mut rng(1))
                    .unwrap();
            r.receive_ones(ch, &[0u8; 2], &mut [Block::ZERO; 17])
        },
        |ch| {
            let mut s =
                IknpSender::setup(&mut ChouOrlandiReceiver::default(), ch, &SID, &mut rng(2))
                    .unwrap();
            s.send_ones(ch, Some(&[0u8; 1]), &mut [Block::ZERO; 9])
        },
    );
    for e in [r.unwrap_err(), s.unwrap_err()] {
        assert!(
            matches!(
                e,
                Error::InvalidParam {
                    field: "choices",
                    ..
                }
            ),
            "{e}"
        );
    }
}

#[test]
fn iknp_correlated_and_chosen_messages() {
    let c = choices(3000, 9);
    let delta = Block(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
    let msgs: Vec<[Block; 2]> = (0..3000u128)
        .map(|i| [Block(2 * i), Block(2 * i + 1)])
        .collect();
    let ((corr, chosen), x0) = run_two_party(
        |ch| {
            let mut r =
                IknpReceiver::setup(&mut ChouOrlandiSender::default(), ch, &SID, &mut rng(1))
                    .unwrap();
            let mut a = vec![Block::ZERO; c.len()];
            r.receive_correlated(ch, &c, &mut a).unwrap();
            let mut b = vec![Block::ZERO; c.len()];
            r.receive_chosen(ch, &c, &mut b).unwrap();
            (a, b)
        },
        |ch| {
            let mut s =
                IknpSender::setup(&mut ChouOrlandiReceiver::default(), ch, &SID, &mut rng(2))
                    .unwrap();
            let mut x0 = vec![Block::ZERO; 3000];
            s.send_correlated(ch, delta, &mut x0).unwrap();
            s.send_chosen(ch, &msgs).unwrap();
            x0
        },
    );
    for i in 0..3000 {
        let expect = if c[i] { x0[i] ^ delta } else { x0[i] };
        assert_eq!(corr[i], expect, "correlated OT {i}");
        assert_eq!(chosen[i], msgs[i][usize::from(c[i])], "chosen OT {i}");
    }
}

#[test]
fn truncated_u_columns_are_refused() {
    let c = choices(500, 5);
    let (_, send) = run_two_party(
        |ch| {
            // After setup, the extension receiver's first frame is its u columns; cut it.
            let mut r =
                IknpReceiver::setup(&mut ChouOrlandiSender::default(), ch, &SID, &mut rng(1))
                    .unwrap();
            let mut t = Tamper::new(ch, Target::first(MSG_U_COLUMNS), Attack::Truncate(100));
            let mut out = vec![Block::ZERO; c.len()];
            let _ = r.receive_random(&mut t, &c, &mut out);
        },
        |ch| {
            let mut s =
                IknpSender::setup(&mut ChouOrlandiReceiver::default(), ch, &SID, &mut rng(2))
                    .unwrap();
            let mut out = vec![[Block::ZERO; 2]; 500];
            s.send_random(ch, &mut out)
        },
    );
    assert!(matches!(send.unwrap_err(), Error::Malformed { .. }));
}
