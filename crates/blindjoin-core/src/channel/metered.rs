//! A wrapper that counts the traffic of any channel, in bytes, in total and per message.
//!
//! Bytes are counted as they would cross a byte stream: payload plus the
//! [`FRAME_HEADER_LEN`]-byte length prefix of every frame, whatever the transport underneath.
//! Sends and receives name their message, so [`Metered::messages_sent`] and
//! [`Metered::messages_received`] break the traffic down by the protocol's message names.
//! A *flight* is a run of frames this party sends with no receive in between. When a protocol
//! receives in one thread while it sends in another, flights interleave arbitrarily, so they
//! count activity, not latency rounds; a protocol's rounds are a property of its message flow
//! (`blindjoin_psi::Protocol::flights`).
//!
//! [`Metered::with_frame_log`] also keeps every frame's message name and payload length, in
//! order per direction ([`Metered::frame_log`]), so a test can tell which frame on the wire
//! carries which message.

use super::{Channel, FRAME_HEADER_LEN, FrameReceiver, FrameSender};
use crate::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Traffic counters of one party.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// Bytes this party sent, framing included.
    pub bytes_sent: u64,
    /// Bytes this party received, framing included.
    pub bytes_received: u64,
    /// Frames sent.
    pub frames_sent: u64,
    /// Frames received.
    pub frames_received: u64,
    /// Flights sent (runs of sends with no receive in between).
    pub flights_sent: u64,
}

impl std::ops::AddAssign for Traffic {
    /// Adds another connection's counters (a run over several connections).
    fn add_assign(&mut self, other: Traffic) {
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.frames_sent += other.frames_sent;
        self.frames_received += other.frames_received;
        self.flights_sent += other.flights_sent;
    }
}

/// Traffic of one message in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageTraffic {
    /// Frames of the message.
    pub frames: u64,
    /// Bytes of the message, framing included.
    pub bytes: u64,
}

/// Traffic by message name.
pub type ByMessage = BTreeMap<&'static str, MessageTraffic>;

/// The direction of a frame, as the metered party sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Direction {
    /// A frame this party sent.
    Sent,
    /// A frame this party received.
    Received,
}

/// One frame of a [`Metered::frame_log`]: its direction, message name and payload length.
pub type LoggedFrame = (Direction, &'static str, u64);

#[derive(Debug, Default)]
struct Counters {
    sent_by_message: Mutex<ByMessage>,
    received_by_message: Mutex<ByMessage>,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    frames_sent: AtomicU64,
    frames_received: AtomicU64,
    flights_sent: AtomicU64,
    sending: AtomicBool,
    /// Every frame in order, if the log was asked for.
    frame_log: Option<Mutex<Vec<LoggedFrame>>>,
}

impl Counters {
    fn on_send(&self, msg: &'static str, len: usize) {
        count(&self.sent_by_message, msg, len);
        self.bytes_sent
            .fetch_add((len + FRAME_HEADER_LEN) as u64, Ordering::Relaxed);
        self.frames_sent.fetch_add(1, Ordering::Relaxed);
        if !self.sending.swap(true, Ordering::Relaxed) {
            self.flights_sent.fetch_add(1, Ordering::Relaxed);
        }
        self.log(Direction::Sent, msg, len);
    }

    fn on_recv(&self, msg: &'static str, len: usize) {
        count(&self.received_by_message, msg, len);
        self.bytes_received
            .fetch_add((len + FRAME_HEADER_LEN) as u64, Ordering::Relaxed);
        self.frames_received.fetch_add(1, Ordering::Relaxed);
        self.sending.store(false, Ordering::Relaxed);
        self.log(Direction::Received, msg, len);
    }

    fn log(&self, dir: Direction, msg: &'static str, len: usize) {
        if let Some(log) = &self.frame_log {
            log.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((dir, msg, len as u64));
        }
    }
}

fn count(map: &Mutex<ByMessage>, msg: &'static str, len: usize) {
    // A panic elsewhere cannot leave the map half-updated; counting on is safe.
    let mut m = map
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let t = m.entry(msg).or_default();
    t.frames += 1;
    t.bytes += (len + FRAME_HEADER_LEN) as u64;
}

/// A channel that counts what passes through it.
#[derive(Debug)]
pub struct Metered<C> {
    inner: C,
    counters: Counters,
}

impl<C> Metered<C> {
    /// Wraps `inner` with zeroed counters.
    pub fn new(inner: C) -> Self {
        Metered {
            inner,
            counters: Counters::default(),
        }
    }

    /// Wraps `inner` with zeroed counters and a log of every frame ([`Metered::frame_log`]).
    pub fn with_frame_log(inner: C) -> Self {
        Metered {
            inner,
            counters: Counters {
                frame_log: Some(Mutex::new(Vec::new())),
                ..Counters::default()
            },
        }
    }

    /// Every frame sent and received so far, in order within each direction, with its message
    /// name and payload length (framing excluded); empty unless the channel was made with
    /// [`Metered::with_frame_log`]. Frames of the two directions interleave as the two
    /// directions' threads recorded them.
    pub fn frame_log(&self) -> Vec<LoggedFrame> {
        self.counters
            .frame_log
            .as_ref()
            .map_or_else(Vec::new, |log| {
                log.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone()
            })
    }

    /// The traffic so far.
    pub fn traffic(&self) -> Traffic {
        let c = &self.counters;
        Traffic {
            bytes_sent: c.bytes_sent.load(Ordering::Relaxed),
            bytes_received: c.bytes_received.load(Ordering::Relaxed),
            frames_sent: c.frames_sent.load(Ordering::Relaxed),
            frames_received: c.frames_received.load(Ordering::Relaxed),
            flights_sent: c.flights_sent.load(Ordering::Relaxed),
        }
    }

    /// Traffic sent so far, by message name.
    pub fn messages_sent(&self) -> ByMessage {
        snapshot(&self.counters.sent_by_message)
    }

    /// Traffic received so far, by message name.
    pub fn messages_received(&self) -> ByMessage {
        snapshot(&self.counters.received_by_message)
    }

    /// The wrapped channel.
    pub fn into_inner(self) -> C {
        self.inner
    }
}

fn snapshot(map: &Mutex<ByMessage>) -> ByMessage {
    map.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

struct MeteredSender<'a, S: ?Sized> {
    inner: Box<S>,
    counters: &'a Counters,
}

struct MeteredReceiver<'a, R: ?Sized> {
    inner: Box<R>,
    counters: &'a Counters,
}

impl<S: FrameSender + ?Sized> FrameSender for MeteredSender<'_, S> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.inner.send(msg, frame)?;
        self.counters.on_send(msg, frame.len());
        Ok(())
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<R: FrameReceiver + ?Sized> FrameReceiver for MeteredReceiver<'_, R> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.inner.recv(what, max_len)?;
        self.counters.on_recv(what, frame.len());
        Ok(frame)
    }
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.recv_into(what, max_len, buf)?;
        self.counters.on_recv(what, buf.len());
        Ok(())
    }
}

impl<C: Channel> FrameSender for Metered<C> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.inner.send(msg, frame)?;
        self.counters.on_send(msg, frame.len());
        Ok(())
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<C: Channel> FrameReceiver for Metered<C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.inner.recv(what, max_len)?;
        self.counters.on_recv(what, frame.len());
        Ok(frame)
    }
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.recv_into(what, max_len, buf)?;
        self.counters.on_recv(what, buf.len());
        Ok(())
    }
}

impl<C: Channel> Channel for Metered<C> {
    fn binding(&self) -> Option<[u8; 32]> {
        self.inner.binding()
    }

    fn peer_identity(&self) -> Option<[u8; 32]> {
        self.inner.peer_identity()
    }

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.inner.set_deadline(deadline);
    }

    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        let (rx, tx) = self.inner.split();
        let counters = &self.counters;
        (
            Box::new(MeteredReceiver {
                inner: rx,
                counters,
            }),
            Box::new(MeteredSender {
                inner: tx,
                counters,
            }),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::channel::framed_bytes;
    use crate::channel::memory::memory_pair;
    use crate::channel::{BulkReader, send_elements};
    use std::time::Duration;

    #[test]
    fn traffic_is_counted_per_message_with_framing() {
        let (a, b) = memory_pair(Duration::from_secs(5));
        let (mut a, mut b) = (Metered::new(a), Metered::new(b));
        // 10 elements of 3 bytes, 4 per frame: frames of 12, 12 and 6 bytes.
        let data = vec![1u8; 30];
        send_elements(&mut a, "elements", &data, 3, 4).unwrap();
        a.send("note", b"hi").unwrap();
        let mut reader = BulkReader::new("elements", 3, 10);
        while reader.next_frame(&mut b).unwrap().is_some() {}
        b.recv("note", 2).unwrap();
        b.send("reply", &[0; 7]).unwrap();
        a.recv("reply", 7).unwrap();

        let sent = a.messages_sent();
        assert_eq!(
            sent["elements"],
            MessageTraffic {
                frames: 3,
                bytes: 30 + 3 * 4
            }
        );
        assert_eq!(sent["elements"].bytes, framed_bytes(10, 3, 4));
        assert_eq!(
            sent["note"],
            MessageTraffic {
                frames: 1,
                bytes: 6
            }
        );
        assert_eq!(sent.len(), 2);
        assert_eq!(b.messages_received(), sent);
        assert_eq!(
            a.messages_received()["reply"],
            MessageTraffic {
                frames: 1,
                bytes: 11
            }
        );
        let t = a.traffic();
        assert_eq!((t.bytes_sent, t.frames_sent, t.flights_sent), (48, 4, 1));
        assert_eq!((t.bytes_received, t.frames_received), (11, 1));
        assert_eq!(framed_bytes(0, 3, 4), 0);
        assert!(a.frame_log().is_empty());
    }

    #[test]
    fn frame_log_names_every_frame_in_order() {
        let (a, b) = memory_pair(Duration::from_secs(5));
        let (mut a, mut b) = (Metered::with_frame_log(a), Metered::new(b));
        send_elements(&mut a, "elements", &[1u8; 30], 3, 4).unwrap();
        let mut reader = BulkReader::new("elements", 3, 10);
        while reader.next_frame(&mut b).unwrap().is_some() {}
        b.send("empty", &[]).unwrap();
        b.send("reply", &[0; 7]).unwrap();
        {
            // The halves of a split channel log into the same place.
            let (mut rx, _tx) = a.split();
            rx.recv("empty", 0).unwrap();
            let mut buf = Vec::new();
            rx.recv_into("reply", 7, &mut buf).unwrap();
        }
        a.send("note", b"hi").unwrap();
        use Direction::{Received, Sent};
        assert_eq!(
            a.frame_log(),
            [
                (Sent, "elements", 12),
                (Sent, "elements", 12),
                (Sent, "elements", 6),
                (Received, "empty", 0),
                (Received, "reply", 7),
                (Sent, "note", 2),
            ]
        );
        assert!(b.frame_log().is_empty());
    }
}
