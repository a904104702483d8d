//! Test helpers for blindjoin (a dev-dependency only).
//!
//! - [`run_two_party`] runs the two roles in two threads over an in-memory channel pair;
//! - [`rng`] gives seeded, reproducible RNGs;
//! - [`sets_with_overlap`] makes two record sets with a chosen overlap, each shuffled
//!   independently, and [`oracle`] computes the exact expected receiver indices;
//! - [`Tamper`] wraps a channel and corrupts, truncates or drops one frame it sends, chosen by
//!   the message's name ([`Target`]);
//! - [`relay::Relay`] sits between two real parties on TCP and injects one fault (a flipped
//!   bit, a cut, a dropped, repeated, delayed or trickled frame, a disconnect) into frame k of
//!   one direction.
#![deny(missing_docs)]

pub mod redis;
pub mod relay;

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
///
/// Called inside a rayon pool (`pool.install`), `a` runs on that pool and `b` on a pool of its
/// own with as many threads, so that each party's parallel steps use the chosen number of
/// threads (outside a pool both use rayon's global pool).
pub fn run_two_party<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce(&mut MemoryChannel) -> RA + Send,
    B: FnOnce(&mut MemoryChannel) -> RB + Send,
    RA: Send,
    RB: Send,
{
    let (mut ca, mut cb) = memory_pair(Duration::from_secs(60));
    // (If the pool cannot be built, `b` falls back to the global pool.)
    let pool_b = rayon::current_thread_index().and_then(|_| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .build()
            .ok()
    });
    std::thread::scope(|s| {
        let hb = s.spawn(move || {
            let run = move || {
                let r = b(&mut cb);
                drop(cb);
                r
            };
            match pool_b {
                Some(pool) => pool.install(run),
                None => run(),
            }
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
    /// Drop the last `n` bytes (all of them if the frame is shorter).
    DropTail(usize),
    /// Append these bytes.
    Extend(Vec<u8>),
    /// Send these bytes instead.
    Replace(Vec<u8>),
    /// Send nothing and fail the send, so the party hangs up mid-protocol.
    HangUp,
    /// Send the frame as this function rewrites it (a party that deviates in a way the test
    /// computes from what it would have sent).
    Edit(fn(&mut Vec<u8>)),
}

/// Which frame a [`Tamper`] attacks: frame `frame` (0-based) of the message named `msg`, as
/// the protocol names it in its sends (and in its flow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// The message's name.
    pub msg: &'static str,
    /// Which frame of that message.
    pub frame: usize,
}

impl Target {
    /// The first frame of message `msg`.
    pub fn first(msg: &'static str) -> Target {
        Target { msg, frame: 0 }
    }

    /// Frame `frame` (0-based) of message `msg`.
    pub fn frame(msg: &'static str, frame: usize) -> Target {
        Target { msg, frame }
    }
}

/// What a [`Tamper`] has seen: the frames sent per message, and whether the attack happened.
#[derive(Debug, Default)]
struct Seen {
    /// `(message, frame length)` of every frame sent, in order.
    frames: Vec<(&'static str, usize)>,
    applied: bool,
}

impl Seen {
    /// Records a frame of `msg`; whether it is the target.
    fn record(&mut self, msg: &'static str, len: usize, target: Target) -> bool {
        let index = self.frames.iter().filter(|(m, _)| *m == msg).count();
        self.frames.push((msg, len));
        let hit = msg == target.msg && index == target.frame;
        self.applied |= hit;
        hit
    }
}

/// A channel that applies an [`Attack`] to one frame it sends, chosen by message name
/// ([`Target`]); every other frame passes unchanged.
#[derive(Debug)]
pub struct Tamper<C> {
    inner: C,
    target: Target,
    attack: Attack,
    seen: Seen,
}

impl<C> Tamper<C> {
    /// Wraps `inner`.
    pub fn new(inner: C, target: Target, attack: Attack) -> Self {
        Tamper {
            inner,
            target,
            attack,
            seen: Seen::default(),
        }
    }

    /// Whether the target frame was sent (and so attacked).
    pub fn applied(&self) -> bool {
        self.seen.applied
    }

    /// `(message, frame length)` of every frame sent, in order (the original lengths).
    pub fn frames(&self) -> &[(&'static str, usize)] {
        &self.seen.frames
    }
}

fn tampered_send(
    tx: &mut dyn FrameSender,
    msg: &'static str,
    frame: &[u8],
    hit: bool,
    attack: &Attack,
) -> Result<()> {
    if !hit {
        return tx.send(msg, frame);
    }
    match attack {
        Attack::FlipBit(at) => {
            let mut f = frame.to_vec();
            if !f.is_empty() {
                let i = at % f.len();
                f[i] ^= 1;
            }
            tx.send(msg, &f)
        }
        Attack::Truncate(n) => tx.send(msg, &frame[..(*n).min(frame.len())]),
        Attack::DropTail(n) => tx.send(msg, &frame[..frame.len().saturating_sub(*n)]),
        Attack::Extend(extra) => {
            let mut f = frame.to_vec();
            f.extend_from_slice(extra);
            tx.send(msg, &f)
        }
        Attack::Replace(bytes) => tx.send(msg, bytes),
        Attack::HangUp => Err(blindjoin_core::Error::PeerClosed {
            during: "a send (test hang-up)",
        }),
        Attack::Edit(f) => {
            let mut v = frame.to_vec();
            f(&mut v);
            tx.send(msg, &v)
        }
    }
}

impl<C: Channel> FrameSender for Tamper<C> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        let hit = self.seen.record(msg, frame.len(), self.target);
        tampered_send(&mut self.inner, msg, frame, hit, &self.attack)
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
    seen: &'a mut Seen,
    target: Target,
    attack: &'a Attack,
}

impl FrameSender for TamperSender<'_> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        let hit = self.seen.record(msg, frame.len(), self.target);
        tampered_send(&mut *self.tx, msg, frame, hit, self.attack)
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
                seen: &mut self.seen,
                target: self.target,
                attack: &self.attack,
            }),
        )
    }
}

/// A channel for benchmarks of one party alone: every frame sent is discarded (after
/// [`std::hint::black_box`], so its computation is kept), and every receive returns a copy of
/// one recorded frame, whatever the message.
#[derive(Debug)]
pub struct Replay {
    frame: Vec<u8>,
}

impl Replay {
    /// A channel whose every receive returns `frame`.
    pub fn new(frame: Vec<u8>) -> Self {
        Replay { frame }
    }
}

/// The sending half of a [`Replay`].
struct Discard;

impl FrameSender for Discard {
    fn send(&mut self, _msg: &'static str, frame: &[u8]) -> Result<()> {
        std::hint::black_box(frame);
        Ok(())
    }

    fn close(&mut self) {}
}

/// The receiving half of a [`Replay`].
struct ReplayReceiver<'a>(&'a [u8]);

impl FrameReceiver for ReplayReceiver<'_> {
    fn recv(&mut self, _what: &'static str, _max_len: usize) -> Result<Vec<u8>> {
        Ok(self.0.to_vec())
    }
}

impl FrameSender for Replay {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        Discard.send(msg, frame)
    }

    fn close(&mut self) {}
}

impl FrameReceiver for Replay {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        ReplayReceiver(&self.frame).recv(what, max_len)
    }
}

impl Channel for Replay {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        (Box::new(ReplayReceiver(&self.frame)), Box::new(Discard))
    }
}
