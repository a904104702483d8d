//! Test helpers for blindjoin (a dev-dependency only).
//!
//! - [`run_two_party`] runs the two roles in two threads over an in-memory channel pair;
//! - [`rng`] gives seeded, reproducible RNGs;
//! - [`sets_with_overlap`] makes two record sets with a chosen overlap, each shuffled
//!   independently, and [`oracle`] computes the exact expected receiver indices;
//! - [`Tamper`] wraps a channel and corrupts, truncates or drops one of the frames it sends.
#![deny(missing_docs)]

use blindjoin_core::Result;
use blindjoin_core::channel::memory::{MemoryChannel, memory_pair};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::collections::HashSet;
use std::time::Duration;

/// A seeded cryptographic RNG (ChaCha20) for reproducible tests.
pub fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// Runs `a` and `b` in two threads, each with one end of an in-memory channel, and returns both
/// results. A receive waits at most 60 s, so a protocol bug shows as an error, not a hang.
pub fn run_two_party<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce(&mut MemoryChannel) -> RA + Send,
    B: FnOnce(&mut MemoryChannel) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let (mut ca, mut cb) = memory_pair(Duration::from_secs(60));
    std::thread::scope(|s| {
        let hb = s.spawn(move || {
            let r = b(&mut cb);
            drop(cb);
            r
        });
        let ra = a(&mut ca);
        drop(ca);
        let rb = match hb.join() {
            Ok(r) => r,
            Err(e) => std::panic::resume_unwind(e),
        };
        (ra, rb)
    })
}

/// Two sets of distinct random records: the receiver's `n_recv`, the sender's `n_send`, sharing
/// exactly `overlap` records, each side shuffled independently.
pub fn sets_with_overlap(
    n_recv: usize,
    n_send: usize,
    overlap: usize,
    seed: u64,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    assert!(overlap <= n_recv.min(n_send), "overlap larger than a set");
    let mut r = rng(seed);
    let mut fresh = || {
        // Lengths vary from 1 to 24 bytes so framing and padding are exercised; 8 random bytes
        // plus the counter keep the records distinct.
        let len = 8 + (r.next_u32() % 17) as usize;
        let mut v = vec![0u8; len];
        r.fill_bytes(&mut v);
        v
    };
    let mut seen = HashSet::new();
    let mut distinct = |count: usize| {
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let v = fresh();
            if seen.insert(v.clone()) {
                out.push(v);
            }
        }
        out
    };
    let common = distinct(overlap);
    let mut recv = common.clone();
    recv.extend(distinct(n_recv - overlap));
    let mut send = common;
    send.extend(distinct(n_send - overlap));
    let mut r2 = rng(seed ^ 0x5eed);
    recv.shuffle(&mut r2);
    send.shuffle(&mut r2);
    (recv, send)
}

/// The exact expected result: sorted indices of `recv` whose record is in `send`.
pub fn oracle(recv: &[Vec<u8>], send: &[Vec<u8>]) -> Vec<usize> {
    let s: HashSet<&[u8]> = send.iter().map(Vec::as_slice).collect();
    let mut out: Vec<usize> = recv
        .iter()
        .enumerate()
        .filter(|(_, v)| s.contains(v.as_slice()))
        .map(|(i, _)| i)
        .collect();
    out.sort_unstable();
    out
}

/// How [`Tamper`] damages the frame it targets.
#[derive(Clone, Debug)]
pub enum Attack {
    /// Flip the lowest bit of the byte at this offset (modulo the frame length).
    FlipBit(usize),
    /// Keep only the first `n` bytes.
    Truncate(usize),
    /// Append these bytes.
    Extend(Vec<u8>),
    /// Send these bytes instead.
    Replace(Vec<u8>),
    /// Send nothing and fail the send, so the party hangs up mid-protocol.
    HangUp,
}

/// A channel that applies an [`Attack`] to the `target`-th frame it sends (0-based).
#[derive(Debug)]
pub struct Tamper<C> {
    inner: C,
    target: usize,
    attack: Attack,
    sent: usize,
    /// The original length of every frame sent, in order (for tests that locate a message).
    pub sent_lengths: Vec<usize>,
}

impl<C> Tamper<C> {
    /// Wraps `inner`.
    pub fn new(inner: C, target: usize, attack: Attack) -> Self {
        Tamper {
            inner,
            target,
            attack,
            sent: 0,
            sent_lengths: Vec::new(),
        }
    }
}

fn tampered_send(
    tx: &mut dyn FrameSender,
    frame: &[u8],
    index: usize,
    target: usize,
    attack: &Attack,
) -> Result<()> {
    if index != target {
        return tx.send(frame);
    }
    match attack {
        Attack::FlipBit(at) => {
            let mut f = frame.to_vec();
            if !f.is_empty() {
                let i = at % f.len();
                f[i] ^= 1;
            }
            tx.send(&f)
        }
        Attack::Truncate(n) => tx.send(&frame[..(*n).min(frame.len())]),
        Attack::Extend(extra) => {
            let mut f = frame.to_vec();
            f.extend_from_slice(extra);
            tx.send(&f)
        }
        Attack::Replace(bytes) => tx.send(bytes),
        Attack::HangUp => Err(blindjoin_core::Error::PeerClosed {
            during: "a send (test hang-up)",
        }),
    }
}

impl<C: Channel> FrameSender for Tamper<C> {
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        let i = self.sent;
        self.sent += 1;
        self.sent_lengths.push(frame.len());
        tampered_send(&mut self.inner, frame, i, self.target, &self.attack)
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<C: Channel> FrameReceiver for Tamper<C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        self.inner.recv(what, max_len)
    }
}

struct TamperSender<'a> {
    tx: Box<dyn FrameSender + 'a>,
    sent: &'a mut usize,
    lengths: &'a mut Vec<usize>,
    target: usize,
    attack: &'a Attack,
}

impl FrameSender for TamperSender<'_> {
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        let i = *self.sent;
        *self.sent += 1;
        self.lengths.push(frame.len());
        tampered_send(&mut *self.tx, frame, i, self.target, self.attack)
    }

    fn close(&mut self) {
        self.tx.close();
    }
}

impl<C: Channel> Channel for Tamper<C> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        let (rx, tx) = self.inner.split();
        (
            rx,
            Box::new(TamperSender {
                tx,
                sent: &mut self.sent,
                lengths: &mut self.sent_lengths,
                target: self.target,
                attack: &self.attack,
            }),
        )
    }
}
