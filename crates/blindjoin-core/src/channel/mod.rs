//! Framed, message-oriented channels between the two parties.
//!
//! A frame is a length-prefixed byte string: on a byte stream it travels as a 4-byte
//! little-endian length followed by the payload ([`FRAME_HEADER_LEN`]). Every receive names the
//! message it expects and the largest length that message may have at that point of the
//! protocol; a longer announced length is an error *before* anything is allocated
//! ([`Error::FrameTooLong`]). No frame is ever longer than [`MAX_FRAME_LEN`].
//!
//! Control messages are encoded with `postcard` ([`send_msg`], [`recv_msg`]); bulk data (points,
//! tags) travels as raw frames of fixed-width elements, read with [`BulkReader`].
//!
//! A [`Channel`] can be [split](Channel::split) into a receiving and a sending half, so a
//! protocol can stream its own messages while a second thread drains the peer's: neither party
//! then blocks on a full socket buffer while the other computes. Transports are pluggable: TCP
//! ([`tcp`]), TLS 1.3 with pinned peers ([`tls`]), in-memory ([`memory`]), and the wrappers
//! [`metered`] (counts bytes by message), [`transcript`] (hashes everything, for the run's
//! final confirmation) and [`renamed`] (gives a sub-protocol's messages other names) over any of
//! them. Network channels live under the run's time
//! [`clock::Limits`], and a receive allocates only as the payload's bytes arrive, whatever the
//! frame's header announced.

pub mod clock;
pub mod memory;
pub mod metered;
pub mod renamed;
pub mod tcp;
pub mod tls;
pub mod transcript;

use crate::{Error, Result};
use serde::{Serialize, de::DeserializeOwned};

/// Bytes of framing in front of every payload on a byte-stream transport.
pub const FRAME_HEADER_LEN: usize = 4;

/// The hard upper bound on one frame's payload, whatever a protocol asks for (64 MiB).
pub const MAX_FRAME_LEN: usize = 64 << 20;

/// The sending half of a channel.
pub trait FrameSender: Send {
    /// Sends one frame of the message named `msg` and pushes it to the peer (no frame is held
    /// back in a buffer). `msg` is the name the peer's receive uses for the same message (the
    /// protocol's flow names every message); it does not travel, but wrappers count traffic
    /// by it ([`metered`]) and test channels pick their target by it.
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()>;

    /// Ends this direction: the peer's next receive reports [`Error::PeerClosed`] once it has
    /// read what was sent before. Later sends fail. Used to unblock a peer after a local error.
    fn close(&mut self);
}

/// The receiving half of a channel.
pub trait FrameReceiver: Send {
    /// Receives one frame. `what` names the expected message for error reports; a frame longer
    /// than `max_len` (or [`MAX_FRAME_LEN`]) is rejected without being read.
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>>;

    /// Receives one frame into `buf`, replacing its contents, with the checks of
    /// [`FrameReceiver::recv`]: a caller that receives many large frames reuses one allocation.
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        *buf = self.recv(what, max_len)?;
        Ok(())
    }
}

/// A bidirectional framed channel.
pub trait Channel: FrameSender + FrameReceiver {
    /// Borrows the two directions separately, so that one thread can receive while another sends.
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>);

    /// A value both ends of this connection derive and no relay between two connections can
    /// make equal (TLS exporter keying material, RFC 8446 §7.5), or `None` for a transport
    /// without one (plain TCP, in-memory). The handshake binds it into the session id.
    fn binding(&self) -> Option<[u8; 32]> {
        None
    }

    /// The SHA-256 fingerprint of the certificate the peer authenticated with (TLS), or `None`
    /// for a transport without peer authentication (plain TCP, in-memory). A server binds a
    /// party's slot to it.
    fn peer_identity(&self) -> Option<[u8; 32]> {
        None
    }

    /// Moves the deadline of every later blocking read and write (`None`: no deadline; the idle
    /// timeout stays). A server narrows a connection's time to its run's; transports without
    /// time limits (in-memory) ignore it.
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        let _ = deadline;
    }
}

/// Reads the rest of a `len`-byte payload into `buf` (which may already hold its first bytes),
/// growing `buf` only as bytes arrive: a header that announces a large frame commits no memory
/// until its payload comes.
pub(crate) fn read_payload(
    r: &mut impl std::io::Read,
    buf: &mut Vec<u8>,
    len: usize,
) -> std::io::Result<()> {
    const FIRST_STEP: usize = 1 << 16;
    while buf.len() < len {
        let have = buf.len();
        // Within capacity the buffer is already ours; beyond it, at most double what arrived.
        let step = if buf.capacity() >= len {
            len - have
        } else {
            (len - have).min(have.max(FIRST_STEP))
        };
        buf.resize(have + step, 0);
        if let Err(e) = r.read_exact(&mut buf[have..]) {
            buf.truncate(have);
            return Err(e);
        }
    }
    Ok(())
}

impl<T: FrameSender + ?Sized> FrameSender for &mut T {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        (**self).send(msg, frame)
    }

    fn close(&mut self) {
        (**self).close();
    }
}

impl<T: FrameReceiver + ?Sized> FrameReceiver for &mut T {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        (**self).recv(what, max_len)
    }
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        (**self).recv_into(what, max_len, buf)
    }
}

impl<T: FrameSender + ?Sized> FrameSender for Box<T> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        (**self).send(msg, frame)
    }

    fn close(&mut self) {
        (**self).close();
    }
}

impl<T: FrameReceiver + ?Sized> FrameReceiver for Box<T> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        (**self).recv(what, max_len)
    }
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        (**self).recv_into(what, max_len, buf)
    }
}

impl<T: Channel + ?Sized> Channel for &mut T {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        (**self).split()
    }
    fn binding(&self) -> Option<[u8; 32]> {
        (**self).binding()
    }
    fn peer_identity(&self) -> Option<[u8; 32]> {
        (**self).peer_identity()
    }
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        (**self).set_deadline(deadline);
    }
}

impl<T: Channel + ?Sized> Channel for Box<T> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        (**self).split()
    }
    fn binding(&self) -> Option<[u8; 32]> {
        (**self).binding()
    }
    fn peer_identity(&self) -> Option<[u8; 32]> {
        (**self).peer_identity()
    }
    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        (**self).set_deadline(deadline);
    }
}

/// Checks an announced frame length against the message's bound and [`MAX_FRAME_LEN`].
pub fn check_frame_len(what: &'static str, len: u64, max_len: usize) -> Result<usize> {
    let max = max_len.min(MAX_FRAME_LEN);
    if len > max as u64 {
        return Err(Error::FrameTooLong {
            message: what,
            len,
            max: max as u64,
        });
    }
    // `len <= max <= MAX_FRAME_LEN`, so it fits a usize.
    Ok(len as usize)
}

/// Sends a control message `value` encoded with postcard, as message `msg`.
pub fn send_msg<T: Serialize>(
    ch: &mut (impl FrameSender + ?Sized),
    msg: &'static str,
    value: &T,
) -> Result<()> {
    let bytes = postcard::to_stdvec(value).map_err(|e| Error::InvalidParam {
        field: "message",
        reason: format!("cannot encode {msg}: {e}"),
    })?;
    ch.send(msg, &bytes)
}

/// Bytes on a byte stream, framing included, of `value` sent by [`send_msg`].
pub fn msg_bytes<T: Serialize>(value: &T) -> Result<u64> {
    let len = postcard::experimental::serialized_size(value).map_err(|e| Error::InvalidParam {
        field: "message",
        reason: format!("cannot encode: {e}"),
    })?;
    Ok((len + FRAME_HEADER_LEN) as u64)
}

/// Receives a postcard-encoded control message of at most `max_len` bytes. Trailing bytes after
/// the message are an error, so a message cannot carry hidden extra data.
pub fn recv_msg<T: DeserializeOwned>(
    ch: &mut (impl FrameReceiver + ?Sized),
    what: &'static str,
    max_len: usize,
) -> Result<T> {
    let frame = ch.recv(what, max_len)?;
    let (msg, rest) = postcard::take_from_bytes(&frame)
        .map_err(|e| Error::malformed(what, format!("it does not decode ({e})")))?;
    if !rest.is_empty() {
        return Err(Error::malformed(
            what,
            format!("{} unexpected trailing bytes", rest.len()),
        ));
    }
    Ok(msg)
}

/// Sends the fixed-width elements laid out in `data` as message `msg`, in frames of at most
/// `per_frame` elements each (no frame at all for no data; [`framed_bytes`] counts the bytes).
pub fn send_elements(
    ch: &mut (impl FrameSender + ?Sized),
    msg: &'static str,
    data: &[u8],
    elem_len: usize,
    per_frame: usize,
) -> Result<()> {
    let step = elem_len.saturating_mul(per_frame.max(1)).max(1);
    for frame in data.chunks(step) {
        ch.send(msg, frame)?;
    }
    Ok(())
}

/// Bytes on a byte stream, framing included, of `count` elements of `elem_len` bytes sent by
/// [`send_elements`] with `per_frame` elements per frame.
pub fn framed_bytes(count: u64, elem_len: usize, per_frame: usize) -> u64 {
    let frames = count.div_ceil(per_frame.max(1) as u64);
    count * elem_len as u64 + frames * FRAME_HEADER_LEN as u64
}

/// Reads a stream of fixed-width elements whose total count was agreed in the handshake.
///
/// Each frame must hold a whole, non-zero number of elements and never more than remain; the
/// reader therefore allocates at most what the agreed count allows, and only as data arrives.
#[derive(Debug)]
pub struct BulkReader {
    what: &'static str,
    elem_len: usize,
    remaining: u64,
}

impl BulkReader {
    /// Expects `count` elements of `elem_len` bytes each, as message `what`.
    pub fn new(what: &'static str, elem_len: usize, count: u64) -> Self {
        BulkReader {
            what,
            elem_len: elem_len.max(1),
            remaining: count,
        }
    }

    /// Elements still expected.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Receives the next frame of elements, or `None` once all expected elements have arrived.
    pub fn next_frame(
        &mut self,
        ch: &mut (impl FrameReceiver + ?Sized),
    ) -> Result<Option<Vec<u8>>> {
        let mut frame = Vec::new();
        Ok(self.next_frame_into(ch, &mut frame)?.then_some(frame))
    }

    /// [`BulkReader::next_frame`] into `frame`, reusing its allocation; `false` once all
    /// expected elements have arrived.
    pub fn next_frame_into(
        &mut self,
        ch: &mut (impl FrameReceiver + ?Sized),
        frame: &mut Vec<u8>,
    ) -> Result<bool> {
        if self.remaining == 0 {
            return Ok(false);
        }
        let max_elems = (MAX_FRAME_LEN / self.elem_len) as u64;
        let max_len = self.remaining.min(max_elems) as usize * self.elem_len;
        ch.recv_into(self.what, max_len, frame)?;
        if frame.is_empty() || !frame.len().is_multiple_of(self.elem_len) {
            return Err(Error::malformed(
                self.what,
                format!(
                    "a frame of {} bytes is not a whole number of {}-byte elements",
                    frame.len(),
                    self.elem_len
                ),
            ));
        }
        self.remaining -= (frame.len() / self.elem_len) as u64;
        Ok(true)
    }
}
