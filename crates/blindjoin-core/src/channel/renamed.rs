//! [`Renamed`]: a channel whose messages go by other names.
//!
//! A protocol that runs a sub-protocol in both directions at once (GMW's random OTs, each
//! party an OT sender in one direction and an OT receiver in the other) would otherwise send
//! messages of the same name from both parties; the names do not travel, but the flow, the
//! [`metered`](super::metered) counts and the test channels tell messages apart by name and
//! sending party. Running one direction over `Renamed` gives its messages names of their own.

use super::{Channel, FrameReceiver, FrameSender};
use crate::Result;

/// A name map: the name a message goes by on the channel underneath.
pub type Rename = fn(&'static str) -> &'static str;

/// `inner`, with every message name passed through `rename` (sends and receives alike).
pub struct Renamed<'a, C: ?Sized> {
    inner: &'a mut C,
    rename: Rename,
}

impl<'a, C: ?Sized> Renamed<'a, C> {
    /// Wraps `inner`.
    pub fn new(inner: &'a mut C, rename: Rename) -> Self {
        Renamed { inner, rename }
    }
}

impl<C: FrameSender + ?Sized> FrameSender for Renamed<'_, C> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.inner.send((self.rename)(msg), frame)
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<C: FrameReceiver + ?Sized> FrameReceiver for Renamed<'_, C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        self.inner.recv((self.rename)(what), max_len)
    }

    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.recv_into((self.rename)(what), max_len, buf)
    }
}

/// One half of a split [`Renamed`].
struct Half<T> {
    inner: T,
    rename: Rename,
}

impl<T: FrameSender> FrameSender for Half<T> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.inner.send((self.rename)(msg), frame)
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<T: FrameReceiver> FrameReceiver for Half<T> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        self.inner.recv((self.rename)(what), max_len)
    }

    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.recv_into((self.rename)(what), max_len, buf)
    }
}

impl<C: Channel + ?Sized> Channel for Renamed<'_, C> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        let rename = self.rename;
        let (rx, tx) = self.inner.split();
        (
            Box::new(Half { inner: rx, rename }),
            Box::new(Half { inner: tx, rename }),
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::channel::memory::memory_pair;
    use crate::channel::metered::Metered;
    use std::time::Duration;

    fn reverse(name: &'static str) -> &'static str {
        match name {
            "a" => "a (reverse)",
            other => other,
        }
    }

    #[test]
    fn names_are_mapped_both_ways_and_in_halves() {
        let (a, mut b) = memory_pair(Duration::from_secs(5));
        let mut a = Metered::new(a);
        {
            let mut r = Renamed::new(&mut a, reverse);
            r.send("a", b"xy").unwrap();
            r.send("b", b"z").unwrap();
            let (_, mut tx) = r.split();
            tx.send("a", b"w").unwrap();
        }
        assert_eq!(b.recv("a", 8).unwrap(), b"xy");
        assert_eq!(b.recv("b", 8).unwrap(), b"z");
        assert_eq!(b.recv("a", 8).unwrap(), b"w");
        let sent = a.messages_sent();
        assert_eq!(sent.get("a (reverse)").map(|t| t.frames), Some(2));
        assert_eq!(sent.get("b").map(|t| t.frames), Some(1));
        assert!(!sent.contains_key("a"));
    }
}
