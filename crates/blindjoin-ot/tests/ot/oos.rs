//! OOS16 1-out-of-N OT over the in-memory channel: every wanted instance's output equals the
//! sender's evaluation at the receiver's input and differs from evaluations at other inputs;
//! counts around the 128-row and 2^16-chunk boundaries; several batches after one setup; a
//! receiver whose rows are not codewords, a forged proof, an input sum above 76 bits, a
//! truncated frame and a hang-up are errors, not panics or hangs.

use blindjoin_core::channel::memory::MemoryChannel;
use blindjoin_core::{Block, Error};
use blindjoin_ot::base::{ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_ot::ext::oos::{
    CHECK_ROWS, MSG_PROOF, MSG_U_COLUMNS, OosReceiver, OosSender, OosSenderOutputs,
};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
use rand::Rng;

const SID: [u8; 32] = [5; 32];
const MASK: u128 = (1 << 76) - 1;

fn receiver(ch: &mut MemoryChannel) -> blindjoin_core::Result<OosReceiver> {
    OosReceiver::setup(&mut ChouOrlandiSender::default(), ch, &SID, &mut rng(1))
}

fn sender(ch: &mut MemoryChannel) -> blindjoin_core::Result<OosSender> {
    OosSender::setup(&mut ChouOrlandiReceiver::default(), ch, &SID, &mut rng(2))
}

fn inputs(n: usize, seed: u64) -> Vec<Block> {
    let mut r = rng(seed);
    (0..n).map(|_| Block(r.random::<u128>() & MASK)).collect()
}

/// Every third instance is wanted (plus the last), the rest are dummies.
fn wanted(n: usize) -> Vec<usize> {
    let mut w: Vec<usize> = (0..n).step_by(3).collect();
    if n > 0 && w.last() != Some(&(n - 1)) {
        w.push(n - 1);
    }
    w
}

#[test]
fn outputs_match_evaluations_across_batches() {
    let counts = [1usize, 127, 128, 129, 1000, 65_537];
    let all: Vec<Vec<Block>> = counts
        .iter()
        .enumerate()
        .map(|(k, &n)| inputs(n, 30 + k as u64))
        .collect();
    let (recv, send) = run_two_party(
        |ch| {
            let mut r = receiver(ch).unwrap();
            all.iter()
                .map(|x| {
                    let w = wanted(x.len());
                    let mut out = vec![Block::ZERO; w.len()];
                    r.receive(ch, x, &w, &mut out).unwrap();
                    out
                })
                .collect::<Vec<_>>()
        },
        |ch| {
            let mut s = sender(ch).unwrap();
            counts
                .iter()
                .map(|&n| s.send(ch, n).unwrap())
                .collect::<Vec<OosSenderOutputs>>()
        },
    );
    for ((x, got), s) in all.iter().zip(&recv).zip(&send) {
        assert_eq!(s.len(), x.len());
        for (&i, g) in wanted(x.len()).iter().zip(got) {
            assert_eq!(*g, s.eval(i, x[i]).unwrap(), "instance {i}");
            assert_ne!(*g, s.eval(i, Block(x[i].0 ^ 1)).unwrap());
            assert_ne!(*g, s.eval(i, Block(x[i].0 ^ (1 << 75))).unwrap());
            // Bits above 76 are not part of the input.
            assert_eq!(*g, s.eval(i, Block(x[i].0 ^ (1 << 100))).unwrap());
        }
        // eval_range over a bin of consecutive instances.
        if x.len() >= 8 {
            let mut out = [Block::ZERO; 5];
            s.eval_range(x[3], 1, &mut out).unwrap();
            for (k, o) in out.iter().enumerate() {
                assert_eq!(*o, s.eval(1 + k, x[3]).unwrap());
            }
            assert_eq!(out[2], got[1], "instance 3 is wanted and in the range");
        }
    }
    // Out of range is an error.
    let mut out = [Block::ZERO; 2];
    assert!(matches!(
        send[1].eval_range(Block(1), 126, &mut out),
        Err(Error::InvalidParam { .. })
    ));
}

/// Flips bit 0 of row 0 in the first 256 of the 512 columns: the row is no longer the
/// receiver's codeword plus its PRG outputs, by a non-codeword difference.
#[allow(clippy::ptr_arg)] // the signature of `Attack::Edit`
fn corrupt_row_0(frame: &mut Vec<u8>) {
    let rb = frame.len() / 512;
    for j in 0..256 {
        frame[j * rb] ^= 1;
    }
}

/// Sets bit 100 of the first input sum W_0.
#[allow(clippy::ptr_arg)] // the signature of `Attack::Edit`
fn oversized_input_sum(frame: &mut Vec<u8>) {
    let at = CHECK_ROWS * 4 * 16 + 12;
    frame[at] |= 0x10;
}

fn attacked(target: Target, attack: Attack) -> Error {
    let x = inputs(500, 7);
    let (_, send) = run_two_party(
        |ch| {
            let mut r = receiver(ch).unwrap();
            let mut t = Tamper::new(ch, target, attack);
            let w = wanted(x.len());
            let mut out = vec![Block::ZERO; w.len()];
            let _ = r.receive(&mut t, &x, &w, &mut out);
        },
        |ch| {
            let mut s = sender(ch).unwrap();
            s.send(ch, 500)
        },
    );
    send.unwrap_err()
}

#[test]
fn a_receiver_whose_rows_are_not_codewords_is_caught() {
    let e = attacked(Target::first(MSG_U_COLUMNS), Attack::Edit(corrupt_row_0));
    assert!(matches!(e, Error::CheckFailed(_)), "{e:?}");
}

#[test]
fn a_forged_proof_is_caught() {
    let e = attacked(Target::first(MSG_PROOF), Attack::FlipBit(40));
    assert!(matches!(e, Error::CheckFailed(_)), "{e:?}");
    let e = attacked(
        Target::first(MSG_PROOF),
        Attack::FlipBit(CHECK_ROWS * 64 + 3),
    );
    assert!(matches!(e, Error::CheckFailed(_)), "{e:?}");
}

#[test]
fn malformed_frames_are_errors() {
    let e = attacked(Target::first(MSG_PROOF), Attack::Edit(oversized_input_sum));
    assert!(matches!(e, Error::Malformed { .. }), "{e:?}");
    let e = attacked(Target::first(MSG_PROOF), Attack::Truncate(100));
    assert!(matches!(e, Error::Malformed { .. }), "{e:?}");
    let e = attacked(Target::first(MSG_U_COLUMNS), Attack::Truncate(100));
    assert!(matches!(e, Error::Malformed { .. }), "{e:?}");
    let e = attacked(Target::first(MSG_PROOF), Attack::HangUp);
    assert!(!matches!(e, Error::CheckFailed(_)), "{e:?}");
}

#[test]
fn oversized_inputs_are_refused_before_anything_is_sent() {
    let (recv, _) = run_two_party(
        |ch| {
            let mut r = receiver(ch).unwrap();
            let mut out = [Block::ZERO];
            r.receive(ch, &[Block(1 << 76)], &[0], &mut out)
        },
        |ch| {
            let _ = sender(ch);
        },
    );
    assert!(matches!(recv, Err(Error::InvalidParam { .. })));
}

/// Timing of 2^20 instances and 16·2^20 single-input evaluations in bins of 16
/// (both parties, in-memory channel): `cargo test --release -p blindjoin-ot --test ot oos:: --
/// --ignored --nocapture`.
#[test]
#[ignore = "timing"]
fn timing_2_20_instances() {
    let m = 1usize << 20;
    let x = inputs(m, 5);
    let w: Vec<usize> = (0..m).collect();
    let start = std::time::Instant::now();
    let (_, (t_ext, t_eval)) = run_two_party(
        |ch| {
            let mut r = receiver(ch).unwrap();
            for part in x.chunks(1 << 16) {
                let mut out = vec![Block::ZERO; part.len()];
                r.receive(ch, part, &w[..part.len()], &mut out).unwrap();
            }
        },
        |ch| {
            let mut s = sender(ch).unwrap();
            let mut outs = Vec::new();
            for part in x.chunks(1 << 16) {
                outs.push(s.send(ch, part.len()).unwrap());
            }
            let t_ext = start.elapsed();
            let mut out = [Block::ZERO; 16];
            let mut acc = 0u128;
            for o in &outs {
                for (b, &xb) in x.iter().enumerate().take(o.len() / 16) {
                    o.eval_range(xb, b * 16, &mut out).unwrap();
                    acc ^= out[0].0;
                }
            }
            assert_ne!(acc, 0);
            (t_ext, start.elapsed() - t_ext)
        },
    );
    println!("OOS16 2^20 instances: {t_ext:?}; 2^20 evaluations: {t_eval:?}");
}
