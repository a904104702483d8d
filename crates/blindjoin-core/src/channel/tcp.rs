//! Plain TCP channel (std::net, blocking, under the run's [`Limits`]).
//!
//! Plain TCP carries no authentication or secrecy of its own: anyone on the path can read and
//! change the bytes. Use it on loopback, in tests, or inside a network you trust; between
//! organisations use [`tls`](super::tls). Frames are written whole and flushed at once
//! (`TCP_NODELAY`), so no frame waits in a buffer while the sender computes.
//!
//! Connections are opened by [`transport`](crate::transport), which also runs the link hello.

use super::clock::{Clocked, Limits, map_io, map_send_io};
use super::{Channel, FRAME_HEADER_LEN, FrameReceiver, FrameSender, check_frame_len, read_payload};
use crate::{Error, Result};
use std::io::{self, BufRead, BufReader, BufWriter, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};

const BUF_LEN: usize = 1 << 18;

/// Frames at least this long bypass the buffers: the sender writes the header and the payload to
/// the socket in one vectored write, and the receiver reads the payload past what is already
/// buffered straight into the caller's vector.
const DIRECT_LEN: usize = 1 << 14;

/// The receiving half of a [`TcpChannel`].
#[derive(Debug)]
pub struct TcpReceiver {
    stream: BufReader<Clocked>,
}

/// The sending half of a [`TcpChannel`].
#[derive(Debug)]
pub struct TcpSender {
    stream: BufWriter<Clocked>,
}

/// A framed channel over one TCP connection.
#[derive(Debug)]
pub struct TcpChannel {
    rx: TcpReceiver,
    tx: TcpSender,
    peer: Option<SocketAddr>,
}

impl TcpChannel {
    /// A second handle to the socket, to shut it down from another thread (which ends a
    /// blocked read or write of this channel with an error).
    pub fn socket(&self) -> std::io::Result<TcpStream> {
        self.rx.stream.get_ref().get_ref().try_clone()
    }

    /// Wraps a connected stream; every read and write waits as `limits` allow.
    pub fn new(stream: TcpStream, limits: Limits) -> Result<Self> {
        let setup = |e| Error::io("cannot configure the TCP connection", e);
        stream.set_nodelay(true).map_err(setup)?;
        let peer = stream.peer_addr().ok();
        let write_half = stream.try_clone().map_err(setup)?;
        Ok(TcpChannel {
            rx: TcpReceiver {
                stream: BufReader::with_capacity(BUF_LEN, Clocked::new(stream, limits)),
            },
            tx: TcpSender {
                stream: BufWriter::with_capacity(BUF_LEN, Clocked::new(write_half, limits)),
            },
            peer,
        })
    }

    /// Replaces the time limits (after the listener's checks of a candidate peer).
    pub fn set_limits(&mut self, limits: Limits) {
        self.rx.stream.get_mut().set_limits(limits);
        self.tx.stream.get_mut().set_limits(limits);
    }

    /// The peer's address, if the socket knows it.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }
}

impl FrameSender for TcpSender {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        let len = u32::try_from(frame.len()).map_err(|_| Error::InvalidParam {
            field: "frame",
            reason: format!("{} bytes do not fit one frame", frame.len()),
        })?;
        let header: [u8; FRAME_HEADER_LEN] = len.to_le_bytes();
        let limits = *self.stream.get_ref().limits();
        if frame.len() >= DIRECT_LEN {
            return self
                .stream
                .flush()
                .and_then(|()| write_all_vectored(self.stream.get_mut(), &header, frame))
                .map_err(|e| map_send_io(e, msg, &limits));
        }
        self.stream
            .write_all(&header)
            .and_then(|()| self.stream.write_all(frame))
            .and_then(|()| self.stream.flush())
            .map_err(|e| map_send_io(e, msg, &limits))
    }

    fn close(&mut self) {
        // Best effort: the connection may already be gone, which is what we want anyway.
        let _ = self.stream.flush();
        let _ = self
            .stream
            .get_ref()
            .get_ref()
            .shutdown(std::net::Shutdown::Write);
    }
}

/// Writes `head` then `body` to `w` whole, with as few system calls as the socket allows.
fn write_all_vectored(w: &mut impl Write, head: &[u8], body: &[u8]) -> io::Result<()> {
    let mut done = 0;
    let total = head.len() + body.len();
    while done < total {
        let written = if done < head.len() {
            w.write_vectored(&[io::IoSlice::new(&head[done..]), io::IoSlice::new(body)])
        } else {
            w.write(&body[done - head.len()..])
        };
        match written {
            Ok(0) => return Err(io::Error::from(ErrorKind::WriteZero)),
            Ok(k) => done += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl FrameReceiver for TcpReceiver {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let mut frame = Vec::new();
        self.recv_into(what, max_len, &mut frame)?;
        Ok(frame)
    }

    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        let limits = *self.stream.get_ref().limits();
        let mut header = [0u8; FRAME_HEADER_LEN];
        self.stream
            .read_exact(&mut header)
            .map_err(|e| map_io(e, what, &limits))?;
        let len = check_frame_len(what, u32::from_le_bytes(header).into(), max_len)?;
        buf.clear();
        let read = if len >= DIRECT_LEN {
            // What is buffered, then the rest straight from the socket (no copy through the
            // buffer).
            let have = self.stream.buffer().len().min(len);
            buf.extend_from_slice(&self.stream.buffer()[..have]);
            self.stream.consume(have);
            read_payload(self.stream.get_mut(), buf, len)
        } else {
            read_payload(&mut self.stream, buf, len)
        };
        read.map_err(|e| map_io(e, what, &limits))
    }
}

impl FrameSender for TcpChannel {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.tx.send(msg, frame)
    }

    fn close(&mut self) {
        self.tx.close();
    }
}

impl FrameReceiver for TcpChannel {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        self.rx.recv(what, max_len)
    }
    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.rx.recv_into(what, max_len, buf)
    }
}

impl Channel for TcpChannel {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        (Box::new(&mut self.rx), Box::new(&mut self.tx))
    }

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        let idle = self.rx.stream.get_ref().limits().idle;
        self.set_limits(Limits { deadline, idle });
    }
}
