//! A wrapper that counts the traffic of any channel, in bytes.
//!
//! Bytes are counted as they would cross a byte stream: payload plus the
//! [`FRAME_HEADER_LEN`]-byte length prefix of every frame, whatever the transport underneath.
//! A *flight* is a run of frames this party sends with no receive in between. When a protocol
//! receives in one thread while it sends in another, flights interleave arbitrarily, so they
//! count activity, not latency rounds; a protocol's rounds are a property of its message flow
//! (`blindjoin_psi::Protocol::flights`).

use super::{Channel, FRAME_HEADER_LEN, FrameReceiver, FrameSender};
use crate::Result;
use serde::{Deserialize, Serialize};
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

#[derive(Debug, Default)]
struct Counters {
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    frames_sent: AtomicU64,
    frames_received: AtomicU64,
    flights_sent: AtomicU64,
    sending: AtomicBool,
}

impl Counters {
    fn on_send(&self, len: usize) {
        self.bytes_sent
            .fetch_add((len + FRAME_HEADER_LEN) as u64, Ordering::Relaxed);
        self.frames_sent.fetch_add(1, Ordering::Relaxed);
        if !self.sending.swap(true, Ordering::Relaxed) {
            self.flights_sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn on_recv(&self, len: usize) {
        self.bytes_received
            .fetch_add((len + FRAME_HEADER_LEN) as u64, Ordering::Relaxed);
        self.frames_received.fetch_add(1, Ordering::Relaxed);
        self.sending.store(false, Ordering::Relaxed);
    }
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

    /// The wrapped channel.
    pub fn into_inner(self) -> C {
        self.inner
    }
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
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        self.inner.send(frame)?;
        self.counters.on_send(frame.len());
        Ok(())
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<R: FrameReceiver + ?Sized> FrameReceiver for MeteredReceiver<'_, R> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.inner.recv(what, max_len)?;
        self.counters.on_recv(frame.len());
        Ok(frame)
    }
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.recv_into(what, max_len, buf)?;
        self.counters.on_recv(buf.len());
        Ok(())
    }
}

impl<C: Channel> FrameSender for Metered<C> {
    fn send(&mut self, frame: &[u8]) -> Result<()> {
        self.inner.send(frame)?;
        self.counters.on_send(frame.len());
        Ok(())
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<C: Channel> FrameReceiver for Metered<C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.inner.recv(what, max_len)?;
        self.counters.on_recv(frame.len());
        Ok(frame)
    }
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.recv_into(what, max_len, buf)?;
        self.counters.on_recv(buf.len());
        Ok(())
    }
}

impl<C: Channel> Channel for Metered<C> {
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
