//! Base OTs drawn from a running IKNP extension: for a run split into many sessions over one
//! connection (a bucketed run's lane), so that each session's base OTs cost a few AES calls
//! and κ bits per OT instead of public-key work.
//!
//! **Flow.** On first use both parties set up one [`IknpSender`] and one [`IknpReceiver`]
//! over the connection, the two directions in an order fixed by their roles (the party with
//! `lead` set first as IKNP sender, the other first as IKNP receiver), each on κ = 128
//! Chou-Orlandi base OTs ([`crate::base::ChouOrlandiSender`]). After that, a batch of n random
//! base OTs is n random OTs of the running extension: the base-OT sender's pairs are the IKNP
//! sender's `(x_i⁰, x_i¹)`, the base-OT receiver's keys the IKNP receiver's `x_i^{c_i}` for its
//! choices c_i. The base-OT receiver sends its u columns (κ · n bits) and the sender only
//! reads, so the flow turns receiver-first; nothing else changes for the protocol on top.
//!
//! **Security.** Semi-honest, as IKNP (correlation-robust hashing, [`crate::ext::iknp`]) and
//! CO15 under it: the outputs of distinct OT indices are independent random keys, and the
//! extension's OT index runs on over the sessions, so no two sessions share a key. The
//! session id passed to each batch is not used: the keys are bound to the pool's own session
//! id (the connection's), under which the extension's hash is keyed. Malicious-secure
//! protocols do not draw from a pool (their base OTs must be endemic OT).

use crate::base::{BaseOtReceiver, BaseOtSender, ChouOrlandiReceiver, ChouOrlandiSender};
use crate::ext::iknp::{IknpReceiver, IknpSender};
use blindjoin_core::channel::Channel;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use std::sync::Mutex;

/// The two directions of a pool's extension, once set up.
struct Directions {
    sender: IknpSender,
    receiver: IknpReceiver,
}

/// Base OTs of one connection drawn from a running IKNP extension (see the
/// [module doc](self)). Shared by the sessions on the connection, one at a time.
pub struct BasePool {
    sid: [u8; 32],
    lead: bool,
    directions: Mutex<Option<Directions>>,
}

impl std::fmt::Debug for BasePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasePool")
            .field("lead", &self.lead)
            .finish_non_exhaustive()
    }
}

impl BasePool {
    /// A pool for the connection with session id `sid`; exactly one of the two parties sets
    /// `lead`. Nothing runs until the first batch.
    pub fn new(sid: [u8; 32], lead: bool) -> Self {
        BasePool {
            sid,
            lead,
            directions: Mutex::new(None),
        }
    }

    /// Runs `f` on the set-up directions, setting them up on `ch` first if needed.
    fn with<C: Channel + ?Sized, T>(
        &self,
        ch: &mut C,
        rng: &mut impl CryptoRng,
        f: impl FnOnce(&mut Directions, &mut C) -> Result<T>,
    ) -> Result<T> {
        let mut guard = self.directions.lock().map_err(|_| Error::InvalidParam {
            field: "base OT pool",
            reason: "an earlier batch failed midway".into(),
        })?;
        if guard.is_none() {
            let mut sid_s = self.sid;
            sid_s[31] ^= 1;
            let (sender, receiver) = if self.lead {
                let s = IknpSender::setup(&mut ChouOrlandiReceiver::default(), ch, &self.sid, rng)?;
                let r = IknpReceiver::setup(&mut ChouOrlandiSender::default(), ch, &sid_s, rng)?;
                (s, r)
            } else {
                let r = IknpReceiver::setup(&mut ChouOrlandiSender::default(), ch, &self.sid, rng)?;
                let s = IknpSender::setup(&mut ChouOrlandiReceiver::default(), ch, &sid_s, rng)?;
                (s, r)
            };
            *guard = Some(Directions { sender, receiver });
        }
        match guard.as_mut() {
            Some(d) => f(d, ch),
            None => unreachable!("set up above"),
        }
    }
}

/// A pool in the base-OT sender's role.
impl BaseOtSender for &BasePool {
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        _sid: &[u8; 32],
        n: usize,
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[[u8; 16]; 2]>> {
        self.with(ch, rng, |d, ch| {
            let mut out = vec![[Block::ZERO; 2]; n];
            d.sender.send_random(ch, &mut out)?;
            Ok(out
                .iter()
                .map(|[a, b]| [a.to_bytes(), b.to_bytes()])
                .collect())
        })
    }
}

/// A pool in the base-OT receiver's role.
impl BaseOtReceiver for &BasePool {
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        _sid: &[u8; 32],
        choices: &[bool],
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[u8; 16]>> {
        self.with(ch, rng, |d, ch| {
            let mut out = vec![Block::ZERO; choices.len()];
            d.receiver.receive_random(ch, choices, &mut out)?;
            Ok(out.iter().map(|b| b.to_bytes()).collect())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use blindjoin_core::channel::memory::memory_pair;

    #[test]
    fn pooled_base_ots_are_random_ots_in_both_directions_and_never_repeat() {
        let (mut a, mut b) = memory_pair(std::time::Duration::from_secs(20));
        let sid = [5u8; 32];
        let choices: Vec<bool> = (0..300).map(|i| i % 3 == 0).collect();
        let peer_choices = choices.clone();
        let t = std::thread::spawn(move || {
            let pool = BasePool::new(sid, false);
            let mut rng = blindjoin_testkit::rng(2);
            let mut p = &pool;
            // A's sender batch, then B's, then A's again.
            let first = p
                .receive_random(&mut b, &sid, &peer_choices, &mut rng)
                .unwrap();
            let pairs = p.send_random(&mut b, &sid, 200, &mut rng).unwrap();
            let again = p
                .receive_random(&mut b, &sid, &peer_choices, &mut rng)
                .unwrap();
            (first, pairs, again)
        });
        let pool = BasePool::new(sid, true);
        let mut rng = blindjoin_testkit::rng(1);
        let mut p = &pool;
        let first = p.send_random(&mut a, &sid, 300, &mut rng).unwrap();
        let theirs: Vec<bool> = (0..200).map(|i| i % 5 == 1).collect();
        let keys = p.receive_random(&mut a, &sid, &theirs, &mut rng).unwrap();
        let again = p.send_random(&mut a, &sid, 300, &mut rng).unwrap();
        let (got_first, pairs, got_again) = t.join().unwrap();
        for (i, &c) in choices.iter().enumerate() {
            assert_eq!(got_first[i], first[i][usize::from(c)]);
            assert_ne!(got_first[i], first[i][usize::from(!c)]);
            assert_eq!(got_again[i], again[i][usize::from(c)]);
        }
        for (i, &c) in theirs.iter().enumerate() {
            assert_eq!(keys[i], pairs[i][usize::from(c)]);
            assert_ne!(keys[i], pairs[i][usize::from(!c)]);
        }
        // A later batch draws fresh OTs.
        assert!(first.iter().zip(&again).all(|(x, y)| x != y));
    }
}
