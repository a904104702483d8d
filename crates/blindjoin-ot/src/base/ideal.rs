//! An ideal-functionality base OT for tests. **Insecure: never use it outside tests.**
//!
//! The sender draws the n key pairs `(k_i⁰, k_i¹)` from its RNG and sends all of them, in the
//! clear, in one frame ([`MSG_IDEAL_KEYS`], `n·32` bytes: `k_0⁰ ‖ k_0¹ ‖ k_1⁰ ‖ …`); the
//! receiver checks the frame's length and keeps `k_i^{c_i}`. So the receiver learns *both* keys
//! of every OT, and anyone on the wire learns all of them: this is the interface of random OT
//! with none of its security. It exists so that tests of the layers above (OT extension, PSI)
//! can skip the public-key work of [`ChouOrlandiSender`](super::ChouOrlandiSender) /
//! [`ChouOrlandiReceiver`](super::ChouOrlandiReceiver), and is compiled only with the
//! `ideal-base-ot` cargo feature, which only this crate's own tests enable (as a dev-dependency
//! of the crate on itself). No release build contains it.
//!
//! With n = 0 neither party sends anything (as with CO15). The session id is not used: the keys
//! are fresh from the sender's RNG at every call. Errors: [`Error::InvalidParam`] if n exceeds
//! [`MAX_IDEAL_BASE_OTS`] (the keys of one call fit one frame); [`Error::Malformed`] naming
//! [`MSG_IDEAL_KEYS`] if the frame is shorter than n·32 bytes, [`Error::FrameTooLong`] if it is
//! longer; channel errors as they come. After an error the sending half of the channel is
//! closed. The keys are wiped from every buffer of this module after use.

use super::{BaseOtReceiver, BaseOtSender, KEY_LEN, check_count, close_on_err};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender, MAX_FRAME_LEN};
use blindjoin_core::{Error, Result};
use rand::CryptoRng;
use zeroize::Zeroizing;

/// Name of the sender's only message: every key pair, in the clear.
pub const MSG_IDEAL_KEYS: &str = "the ideal base OT's keys";

/// Bytes of one OT's key pair on the wire.
const PAIR_LEN: usize = 2 * KEY_LEN;

/// Largest batch of ideal base OTs one call accepts: as many pairs as fit one frame (2²¹).
pub const MAX_IDEAL_BASE_OTS: usize = MAX_FRAME_LEN / PAIR_LEN;

/// Sender of the insecure ideal base OT (tests only; see the [module doc](self)).
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct IdealBaseOtSender;

/// Receiver of the insecure ideal base OT (tests only; see the [module doc](self)).
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct IdealBaseOtReceiver;

impl BaseOtSender for IdealBaseOtSender {
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        _sid: &[u8; 32],
        n: usize,
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[[u8; 16]; 2]>> {
        let result = send(ch, n, rng);
        close_on_err(ch, result)
    }
}

impl BaseOtReceiver for IdealBaseOtReceiver {
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        _sid: &[u8; 32],
        choices: &[bool],
        _rng: &mut impl CryptoRng,
    ) -> Result<Vec<[u8; 16]>> {
        let result = receive(ch, choices);
        close_on_err(ch, result)
    }
}

fn send<C: Channel + ?Sized>(
    ch: &mut C,
    n: usize,
    rng: &mut impl CryptoRng,
) -> Result<Vec<[[u8; KEY_LEN]; 2]>> {
    check_count(n, MAX_IDEAL_BASE_OTS)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut keys = Zeroizing::new(vec![[[0u8; KEY_LEN]; 2]; n]);
    rng.fill_bytes(keys.as_flattened_mut().as_flattened_mut());
    let frame = Zeroizing::new(keys.as_flattened().as_flattened().to_vec());
    FrameSender::send(ch, MSG_IDEAL_KEYS, &frame)?;
    Ok(std::mem::take(&mut *keys))
}

fn receive<C: Channel + ?Sized>(ch: &mut C, choices: &[bool]) -> Result<Vec<[u8; KEY_LEN]>> {
    check_count(choices.len(), MAX_IDEAL_BASE_OTS)?;
    if choices.is_empty() {
        return Ok(Vec::new());
    }
    let want = choices.len() * PAIR_LEN;
    let frame = Zeroizing::new(FrameReceiver::recv(ch, MSG_IDEAL_KEYS, want)?);
    if frame.len() != want {
        return Err(Error::malformed(
            MSG_IDEAL_KEYS,
            format!(
                "{} bytes instead of {} key pairs of {PAIR_LEN} bytes",
                frame.len(),
                choices.len()
            ),
        ));
    }
    Ok(frame
        .chunks_exact(PAIR_LEN)
        .zip(choices)
        .map(|(pair, &c)| {
            let at = usize::from(c) * KEY_LEN;
            let mut key = [0u8; KEY_LEN];
            key.copy_from_slice(&pair[at..at + KEY_LEN]);
            key
        })
        .collect())
}
