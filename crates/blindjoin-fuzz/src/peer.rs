//! The fake peer: a real handshake captured once per run, then frames from the input, queued
//! on an in-memory channel before the party under test starts.

use blindjoin_core::channel::memory::{MemoryChannel, memory_pair};
use blindjoin_core::channel::{FrameReceiver, FrameSender, MAX_FRAME_LEN};
use blindjoin_core::handshake::{SessionConfig, handshake};
use blindjoin_core::{Error, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::time::Duration;

/// How long a receive of the party under test may wait. The peer's frames are all queued and
/// its direction closed before the party starts, so no receive waits at all; this bounds a run
/// only if that ever changes.
const TIMEOUT: Duration = Duration::from_millis(200);

/// The name the fake peer's frames are sent under.
const MSG_FAKE: &str = "the fake peer's frame";

/// The seed of the party under test's RNG (and of the real party in recorded runs).
pub(crate) const OURS_SEED: u64 = 1;

/// The seed of the fake peer's RNG (and of the real peer in recorded runs).
pub(crate) const PEER_SEED: u64 = 2;

/// A seeded RNG.
pub(crate) fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// The frames a party with configuration `cfg` (and RNG seed `seed`) sends in a handshake
/// whose peer sends `peer_frames` and then closes.
fn handshake_frames(cfg: &SessionConfig, seed: u64, peer_frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let (mut a, mut b) = memory_pair(TIMEOUT);
    for f in peer_frames {
        // `a` is alive, so the send succeeds; a failure would only show as a shorter capture.
        let _ = b.send(MSG_FAKE, f);
    }
    b.close();
    // The handshake ends with an error (the peer's frames run out); what it sent is the point.
    let _ = handshake(&mut a, cfg, &mut rng(seed));
    drop(a);
    let mut sent = Vec::new();
    while let Ok(f) = b.recv(MSG_FAKE, MAX_FRAME_LEN) {
        sent.push(f);
    }
    sent
}

/// The hello and the verdict that a real party with configuration `peer` (RNG seed
/// [`PEER_SEED`]) sends to a party with configuration `ours` (RNG seed [`OURS_SEED`]): the first
/// two frames the fake peer queues. Only the hello if `peer` refuses `ours` before a verdict
/// (then the verdict frame is its refusal).
pub(crate) fn peer_handshake(ours: &SessionConfig, peer: &SessionConfig) -> Vec<Vec<u8>> {
    let our_hello: Vec<Vec<u8>> = handshake_frames(ours, OURS_SEED, &[])
        .into_iter()
        .take(1)
        .collect();
    handshake_frames(peer, PEER_SEED, &our_hello)
}

/// A channel pair on which `frames` are queued from the second end to the first, whose
/// sending direction is then closed: the first end is the party's, the second the fake peer's,
/// to be kept until the party is done (what the party sends stays in it, unread).
pub(crate) fn queued<'a>(
    frames: impl IntoIterator<Item = &'a [u8]>,
) -> Result<(MemoryChannel, MemoryChannel)> {
    let (ours, mut peer) = memory_pair(TIMEOUT);
    for f in frames {
        peer.send(MSG_FAKE, f).map_err(|_| Error::PeerClosed {
            during: "queueing the fake peer's frames",
        })?;
    }
    peer.close();
    Ok((ours, peer))
}

/// Runs `party` on a channel on which `frames` are queued from a peer that then closes its
/// direction. What `party` sends is kept (unread) until it returns.
pub(crate) fn against<'a, T>(
    frames: impl IntoIterator<Item = &'a [u8]>,
    party: impl FnOnce(&mut MemoryChannel) -> Result<T>,
) -> Result<T> {
    let (mut ours, peer) = queued(frames)?;
    let out = party(&mut ours);
    drop(peer);
    out
}
