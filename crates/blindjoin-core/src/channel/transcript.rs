//! A channel wrapper that hashes every frame it sends and receives, for the confirmation that
//! ends a run ([`finish`](crate::finish)).
//!
//! On plain TCP nothing protects the bytes in transit: a flipped bit in a tag makes the receiver's
//! result silently wrong in a protocol whose parties cannot check each other's data. Both parties
//! therefore hash their two directions (BLAKE3 of each frame, length-prefixed, in order) and
//! compare at the end; any change, drop, duplication or reordering of a frame makes the digests
//! differ and both parties fail. On a TLS channel ([`Channel::binding`] is `Some`) the record
//! layer already authenticates every byte and the exporter binds the session to the connection,
//! so the wrapper hashes nothing and the digests are all zero on both sides.

use super::{Channel, FrameReceiver, FrameSender};
use crate::Result;

/// The digests of both directions of a run, as one party saw them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digests {
    /// Everything this party sent.
    pub sent: [u8; 32],
    /// Everything this party received.
    pub received: [u8; 32],
}

#[derive(Debug)]
struct Hashes {
    sent: Option<blake3::Hasher>,
    received: Option<blake3::Hasher>,
}

fn absorb(h: &mut Option<blake3::Hasher>, frame: &[u8]) {
    if let Some(h) = h {
        h.update(&(frame.len() as u64).to_le_bytes());
        h.update(frame);
    }
}

/// Hashes what travels over `inner` (see the module doc).
#[derive(Debug)]
pub struct Transcript<C> {
    inner: C,
    hashes: Hashes,
}

impl<C: Channel> Transcript<C> {
    /// Wraps `inner`; hashes only if `inner` has no channel binding (is not TLS).
    pub fn new(inner: C) -> Self {
        let on = inner.binding().is_none();
        let new = || on.then(blake3::Hasher::new);
        Transcript {
            inner,
            hashes: Hashes {
                sent: new(),
                received: new(),
            },
        }
    }

    /// The digests so far (all zero when the channel is TLS).
    pub fn digests(&self) -> Digests {
        let d =
            |h: &Option<blake3::Hasher>| h.as_ref().map_or([0; 32], |h| *h.finalize().as_bytes());
        Digests {
            sent: d(&self.hashes.sent),
            received: d(&self.hashes.received),
        }
    }

    /// The wrapped channel.
    pub fn get_ref(&self) -> &C {
        &self.inner
    }

    /// The wrapped channel.
    pub fn into_inner(self) -> C {
        self.inner
    }
}

struct TxHalf<'a, S: ?Sized> {
    inner: Box<S>,
    hash: &'a mut Option<blake3::Hasher>,
}

struct RxHalf<'a, R: ?Sized> {
    inner: Box<R>,
    hash: &'a mut Option<blake3::Hasher>,
}

impl<S: FrameSender + ?Sized> FrameSender for TxHalf<'_, S> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.inner.send(msg, frame)?;
        absorb(self.hash, frame);
        Ok(())
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<R: FrameReceiver + ?Sized> FrameReceiver for RxHalf<'_, R> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.inner.recv(what, max_len)?;
        absorb(self.hash, &frame);
        Ok(frame)
    }

    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.recv_into(what, max_len, buf)?;
        absorb(self.hash, buf);
        Ok(())
    }
}

impl<C: Channel> FrameSender for Transcript<C> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.inner.send(msg, frame)?;
        absorb(&mut self.hashes.sent, frame);
        Ok(())
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<C: Channel> FrameReceiver for Transcript<C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.inner.recv(what, max_len)?;
        absorb(&mut self.hashes.received, &frame);
        Ok(frame)
    }

    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.recv_into(what, max_len, buf)?;
        absorb(&mut self.hashes.received, buf);
        Ok(())
    }
}

impl<C: Channel> Channel for Transcript<C> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        let (rx, tx) = self.inner.split();
        (
            Box::new(RxHalf {
                inner: Box::new(rx),
                hash: &mut self.hashes.received,
            }),
            Box::new(TxHalf {
                inner: Box::new(tx),
                hash: &mut self.hashes.sent,
            }),
        )
    }

    fn binding(&self) -> Option<[u8; 32]> {
        self.inner.binding()
    }

    fn peer_identity(&self) -> Option<[u8; 32]> {
        self.inner.peer_identity()
    }

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.inner.set_deadline(deadline);
    }
}
