//! Plain TCP channel (std::net, blocking, with read and write timeouts).
//!
//! Plain TCP carries no authentication or secrecy of its own; use it on loopback, in tests, or
//! inside a network you trust. Frames are written whole and flushed at once (`TCP_NODELAY`), so
//! no frame waits in a buffer while the sender computes.

use super::{Channel, FRAME_HEADER_LEN, FrameReceiver, FrameSender, check_frame_len};
use crate::{Error, Result};
use std::io::{self, BufRead, BufReader, BufWriter, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

const BUF_LEN: usize = 1 << 18;

/// Frames at least this long bypass the buffers: the sender writes the header and the payload to
/// the socket in one vectored write, and the receiver reads the payload past what is already
/// buffered straight into the caller's vector.
const DIRECT_LEN: usize = 1 << 14;

/// The receiving half of a [`TcpChannel`].
#[derive(Debug)]
pub struct TcpReceiver {
    stream: BufReader<TcpStream>,
    timeout: Duration,
}

/// The sending half of a [`TcpChannel`].
#[derive(Debug)]
pub struct TcpSender {
    stream: BufWriter<TcpStream>,
    timeout: Duration,
}

/// A framed channel over one TCP connection.
#[derive(Debug)]
pub struct TcpChannel {
    rx: TcpReceiver,
    tx: TcpSender,
    peer: Option<SocketAddr>,
}

fn map_io(err: io::Error, during: &'static str, timeout: Duration) -> Error {
    match err.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => Error::Timeout {
            during,
            secs: timeout.as_secs(),
        },
        ErrorKind::UnexpectedEof
        | ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted
        | ErrorKind::BrokenPipe => Error::PeerClosed { during },
        _ => Error::io(format!("network error during {during}"), err),
    }
}

impl TcpChannel {
    /// Wraps a connected stream; every read and write waits at most `timeout`.
    pub fn new(stream: TcpStream, timeout: Duration) -> Result<Self> {
        let setup = |e| Error::io("cannot configure the TCP connection", e);
        stream.set_nodelay(true).map_err(setup)?;
        stream.set_read_timeout(Some(timeout)).map_err(setup)?;
        stream.set_write_timeout(Some(timeout)).map_err(setup)?;
        let peer = stream.peer_addr().ok();
        let write_half = stream.try_clone().map_err(setup)?;
        Ok(TcpChannel {
            rx: TcpReceiver {
                stream: BufReader::with_capacity(BUF_LEN, stream),
                timeout,
            },
            tx: TcpSender {
                stream: BufWriter::with_capacity(BUF_LEN, write_half),
                timeout,
            },
            peer,
        })
    }

    /// Connects to `addr`, retrying a refused connection until `wait` has passed (the peer may
    /// not be listening yet).
    pub fn connect(addr: &str, wait: Duration, timeout: Duration) -> Result<Self> {
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|e| Error::io(format!("cannot resolve {addr}"), e))?
            .collect();
        let deadline = Instant::now() + wait;
        loop {
            let mut last = io::Error::new(ErrorKind::NotFound, "no address");
            for a in &addrs {
                match TcpStream::connect_timeout(a, timeout) {
                    Ok(s) => return TcpChannel::new(s, timeout),
                    Err(e) => last = e,
                }
            }
            let retry = matches!(last.kind(), ErrorKind::ConnectionRefused);
            if !retry || Instant::now() >= deadline {
                return Err(Error::io(format!("cannot connect to {addr}"), last));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Accepts one connection on `listener`, waiting at most `wait`.
    pub fn accept(listener: &TcpListener, wait: Duration, timeout: Duration) -> Result<Self> {
        let setup = |e| Error::io("cannot wait for a connection", e);
        listener.set_nonblocking(true).map_err(setup)?;
        let deadline = Instant::now() + wait;
        loop {
            match listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).map_err(setup)?;
                    return TcpChannel::new(s, timeout);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(Error::Timeout {
                            during: "a peer to connect",
                            secs: wait.as_secs(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(setup(e)),
            }
        }
    }

    /// The peer's address, if the socket knows it.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }
}

impl FrameSender for TcpSender {
    fn send(&mut self, _msg: &'static str, frame: &[u8]) -> Result<()> {
        let len = u32::try_from(frame.len()).map_err(|_| Error::InvalidParam {
            field: "frame",
            reason: format!("{} bytes do not fit one frame", frame.len()),
        })?;
        let header: [u8; FRAME_HEADER_LEN] = len.to_le_bytes();
        let timeout = self.timeout;
        if frame.len() >= DIRECT_LEN {
            return self
                .stream
                .flush()
                .and_then(|()| write_all_vectored(self.stream.get_mut(), &header, frame))
                .map_err(|e| map_io(e, "a send", timeout));
        }
        self.stream
            .write_all(&header)
            .and_then(|()| self.stream.write_all(frame))
            .and_then(|()| self.stream.flush())
            .map_err(|e| map_io(e, "a send", timeout))
    }

    fn close(&mut self) {
        // Best effort: the connection may already be gone, which is what we want anyway.
        let _ = self.stream.flush();
        let _ = self.stream.get_ref().shutdown(std::net::Shutdown::Write);
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
        let mut header = [0u8; FRAME_HEADER_LEN];
        self.stream
            .read_exact(&mut header)
            .map_err(|e| map_io(e, what, self.timeout))?;
        let len = check_frame_len(what, u32::from_le_bytes(header).into(), max_len)?;
        buf.clear();
        buf.resize(len, 0);
        let read = if len >= DIRECT_LEN {
            // What is buffered, then the rest straight from the socket (no copy through the
            // buffer).
            let have = self.stream.buffer().len().min(len);
            buf[..have].copy_from_slice(&self.stream.buffer()[..have]);
            self.stream.consume(have);
            self.stream.get_mut().read_exact(&mut buf[have..])
        } else {
            self.stream.read_exact(buf)
        };
        read.map_err(|e| map_io(e, what, self.timeout))
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
}
