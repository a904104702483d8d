//! An in-memory channel pair for tests and single-process runs.
//!
//! Frames are moved between the two ends through `std::sync::mpsc` queues, so the ends can live
//! in two threads. Receives honour a timeout, and a dropped peer shows as
//! [`Error::PeerClosed`], exactly as with TCP.

use super::{Channel, FrameReceiver, FrameSender, check_frame_len};
use crate::{Error, Result};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// The sending half of a [`MemoryChannel`].
#[derive(Debug)]
pub struct MemorySender {
    tx: Option<Sender<Vec<u8>>>,
}

/// The receiving half of a [`MemoryChannel`].
#[derive(Debug)]
pub struct MemoryReceiver {
    rx: Receiver<Vec<u8>>,
    timeout: Duration,
}

/// One end of an in-memory channel pair.
#[derive(Debug)]
pub struct MemoryChannel {
    rx: MemoryReceiver,
    tx: MemorySender,
}

/// Creates two connected ends; a receive waits at most `timeout`.
pub fn memory_pair(timeout: Duration) -> (MemoryChannel, MemoryChannel) {
    let (tx_a, rx_b) = mpsc::channel();
    let (tx_b, rx_a) = mpsc::channel();
    let end = |tx, rx| MemoryChannel {
        rx: MemoryReceiver { rx, timeout },
        tx: MemorySender { tx: Some(tx) },
    };
    (end(tx_a, rx_a), end(tx_b, rx_b))
}

impl FrameSender for MemorySender {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.tx
            .as_ref()
            .ok_or(Error::SendFailed { sending: msg })?
            .send(frame.to_vec())
            .map_err(|_| Error::SendFailed { sending: msg })
    }

    fn close(&mut self) {
        self.tx = None;
    }
}

impl FrameReceiver for MemoryReceiver {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.rx.recv_timeout(self.timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => Error::Timeout {
                during: what,
                secs: self.timeout.as_secs_f64(),
            },
            RecvTimeoutError::Disconnected => Error::PeerClosed { during: what },
        })?;
        check_frame_len(what, frame.len() as u64, max_len)?;
        Ok(frame)
    }
}

impl FrameSender for MemoryChannel {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.tx.send(msg, frame)
    }

    fn close(&mut self) {
        self.tx.close();
    }
}

impl FrameReceiver for MemoryChannel {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        self.rx.recv(what, max_len)
    }
}

impl Channel for MemoryChannel {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        (Box::new(&mut self.rx), Box::new(&mut self.tx))
    }
}
