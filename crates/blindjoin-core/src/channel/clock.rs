//! The two time limits of a network run: a deadline for the whole run and an idle timeout for
//! silence, applied to every blocking read and write of a socket.
//!
//! A per-call timeout alone lets a peer that sends one byte just before each timeout hold a
//! party forever; the deadline ends the run however slowly the bytes arrive. [`Clocked`] wraps a
//! socket and arms its timeout before each system call to the smaller of the idle timeout and
//! the time left before the deadline.

use crate::Error;
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The time limits of a run.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// When the whole run must be over; `None` for no deadline.
    pub deadline: Option<Instant>,
    /// The longest silence (no byte received or sent) a run accepts.
    pub idle: Duration,
}

impl Limits {
    /// A deadline `total` from now and an idle timeout `idle`.
    pub fn new(total: Duration, idle: Duration) -> Self {
        Limits {
            deadline: Instant::now().checked_add(total),
            idle,
        }
    }

    /// An idle timeout and no deadline.
    pub fn idle_only(idle: Duration) -> Self {
        Limits {
            deadline: None,
            idle,
        }
    }

    /// The time left before the deadline (`None`: no deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.remaining() == Some(Duration::ZERO)
    }

    /// The timeout for the next blocking call: the idle timeout, or less if the deadline is
    /// nearer; `None` once the deadline has passed.
    pub fn next_wait(&self) -> Option<Duration> {
        match self.remaining() {
            None => Some(self.idle),
            Some(Duration::ZERO) => None,
            Some(left) => Some(left.min(self.idle)),
        }
    }

    /// A copy whose deadline is at most `wait` from now (for a step that must not use the
    /// whole run's time, such as a candidate peer's first message).
    pub fn capped(&self, wait: Duration) -> Limits {
        let cap = Instant::now().checked_add(wait);
        let deadline = match (self.deadline, cap) {
            (Some(d), Some(c)) => Some(d.min(c)),
            (d, c) => d.or(c),
        };
        Limits {
            deadline,
            idle: self.idle.min(wait),
        }
    }

    /// The error for a call that waited `during` and timed out: the deadline's if it has
    /// passed, the idle timeout's otherwise.
    pub fn timed_out(&self, during: &'static str) -> Error {
        if self.expired() {
            Error::Deadline { during }
        } else {
            Error::Timeout {
                during,
                secs: self.idle.as_secs_f64(),
            }
        }
    }
}

/// Marks an `io::Error` as a passed deadline (so the mapping to [`Error`] can tell it from an
/// idle timeout after the fact).
#[derive(Debug)]
struct DeadlinePassed;

impl std::fmt::Display for DeadlinePassed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the run's deadline has passed")
    }
}

impl std::error::Error for DeadlinePassed {}

/// Maps an I/O error of a send of message `msg` on a clocked socket to the library's error.
pub fn map_send_io(err: io::Error, msg: &'static str, limits: &Limits) -> Error {
    as_send_error(map_io(err, msg, limits))
}

/// An error met while sending: a closed connection is a failed send of that message.
pub fn as_send_error(e: Error) -> Error {
    match e {
        Error::PeerClosed { during } => Error::SendFailed { sending: during },
        other => other,
    }
}

/// Maps an I/O error of a clocked socket to the library's error.
pub fn map_io(err: io::Error, during: &'static str, limits: &Limits) -> Error {
    if err.get_ref().is_some_and(|e| e.is::<DeadlinePassed>()) {
        return Error::Deadline { during };
    }
    match err.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => limits.timed_out(during),
        ErrorKind::UnexpectedEof
        | ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted
        | ErrorKind::BrokenPipe => Error::PeerClosed { during },
        _ => Error::io(format!("network error during {during}"), err),
    }
}

/// A TCP stream whose every read and write waits at most [`Limits::next_wait`].
#[derive(Debug)]
pub struct Clocked {
    stream: TcpStream,
    limits: Limits,
    read_set: Option<Duration>,
    write_set: Option<Duration>,
}

impl Clocked {
    /// Wraps `stream` (blocking mode) with `limits`.
    pub fn new(stream: TcpStream, limits: Limits) -> Self {
        Clocked {
            stream,
            limits,
            read_set: None,
            write_set: None,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Replaces the limits.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
        self.read_set = None;
        self.write_set = None;
    }

    /// The socket.
    pub fn get_ref(&self) -> &TcpStream {
        &self.stream
    }

    fn wait(&self) -> io::Result<Duration> {
        self.limits
            .next_wait()
            // A zero timeout means "block forever" to the socket; never set it.
            .map(|d| d.max(Duration::from_millis(1)))
            .ok_or_else(|| io::Error::new(ErrorKind::TimedOut, DeadlinePassed))
    }

    fn arm_read(&mut self) -> io::Result<()> {
        let w = self.wait()?;
        // The socket's timeout changes only when the deadline is nearer than the idle timeout
        // (or on the first call), so bulk transfers cost no extra system calls.
        if self.read_set != Some(w) {
            self.stream.set_read_timeout(Some(w))?;
            self.read_set = Some(w);
        }
        Ok(())
    }

    fn arm_write(&mut self) -> io::Result<()> {
        let w = self.wait()?;
        if self.write_set != Some(w) {
            self.stream.set_write_timeout(Some(w))?;
            self.write_set = Some(w);
        }
        Ok(())
    }
}

impl Read for Clocked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.arm_read()?;
        self.stream.read(buf)
    }
}

impl Write for Clocked {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.arm_write()?;
        self.stream.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.arm_write()?;
        self.stream.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearer_limit_sets_the_wait() {
        let l = Limits::new(Duration::from_secs(3600), Duration::from_secs(5));
        assert_eq!(l.next_wait(), Some(Duration::from_secs(5)));
        let near = Limits::new(Duration::from_millis(200), Duration::from_secs(5));
        assert!(
            near.next_wait()
                .is_some_and(|w| w <= Duration::from_millis(200))
        );
        let past = Limits {
            deadline: Some(Instant::now()),
            idle: Duration::from_secs(5),
        };
        assert_eq!(past.next_wait(), None);
        assert!(matches!(
            past.timed_out("x"),
            Error::Deadline { during: "x" }
        ));
        assert!(matches!(
            l.timed_out("x"),
            Error::Timeout { during: "x", .. }
        ));
        assert_eq!(Limits::idle_only(Duration::from_secs(2)).remaining(), None);
        let capped = l.capped(Duration::from_secs(1));
        assert_eq!(capped.idle, Duration::from_secs(1));
        assert!(
            capped
                .remaining()
                .is_some_and(|r| r <= Duration::from_secs(1))
        );
    }
}
