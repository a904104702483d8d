//! A TCP relay between two real parties that injects one fault into the frames it forwards.
//!
//! On a byte stream a frame is a 4-byte little-endian length followed by that many payload
//! bytes, and the two directions are independent streams of frames. A [`Relay`] listens on
//! `127.0.0.1:0`; on the first connection it accepts it connects to the listening party
//! (`upstream`) and forwards frames both ways, one thread per direction, parsing frame
//! boundaries so a [`Fault`] can hit frame k (0-based) of one [`Direction`]. Every other frame
//! passes unchanged, and a party that closes its sending direction has that close passed on.
//! [`Relay::finish`] stops the relay and reports whether the fault was applied and the frames
//! each direction carried ([`RelayReport`]).
//!
//! Frames are buffered only as their bytes arrive, so a header that announces a huge frame
//! costs the relay nothing until the payload comes.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of the length prefix of a frame.
const HEADER_LEN: usize = 4;

/// How often blocked waits of the relay (accepting, delaying, trickling) look at the stop flag.
const POLL: Duration = Duration::from_millis(5);

/// One direction of the relayed connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// From the party that connected to the relay to the listening party.
    ToListener,
    /// From the listening party to the party that connected to the relay.
    ToConnector,
}

impl Direction {
    /// Both directions.
    pub const BOTH: [Direction; 2] = [Direction::ToListener, Direction::ToConnector];

    fn index(self) -> usize {
        match self {
            Direction::ToListener => 0,
            Direction::ToConnector => 1,
        }
    }
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::ToListener => "to listener",
            Direction::ToConnector => "to connector",
        })
    }
}

/// What the relay does to its target frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Flip the lowest bit of the payload's middle byte, or of the header's first byte when the
    /// payload is empty (the frame then announces one byte, taken from what follows).
    FlipByte,
    /// Flip the lowest bit of the payload's last byte (of the header's first byte when the
    /// payload is empty): e.g. the nonce at the end of a hello.
    FlipLastByte,
    /// Forward the header and half the payload (half the header when the payload is empty),
    /// then close both connections.
    Truncate,
    /// Leave the frame out and go on forwarding the rest.
    Drop,
    /// Forward the frame twice.
    Duplicate,
    /// Hold the frame this long, then forward it and the rest.
    Delay(Duration),
    /// Close both connections instead of forwarding the frame: a disconnect at that message
    /// boundary.
    Close,
    /// From the frame on, forward the direction one byte per second.
    Trickle,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::FlipByte => f.write_str("flip"),
            Fault::FlipLastByte => f.write_str("flip the last byte"),
            Fault::Truncate => f.write_str("truncate"),
            Fault::Drop => f.write_str("drop"),
            Fault::Duplicate => f.write_str("duplicate"),
            Fault::Delay(d) => write!(f, "delay {:.1} s", d.as_secs_f64()),
            Fault::Close => f.write_str("close"),
            Fault::Trickle => f.write_str("trickle"),
        }
    }
}

/// A fault and the frame it hits: frame `frame` (0-based) of `direction`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultAt {
    /// The direction of the target frame.
    pub direction: Direction,
    /// The target frame's index in its direction, counting from 0.
    pub frame: usize,
    /// What happens to it.
    pub fault: Fault,
}

/// What a relay saw, from [`Relay::finish`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelayReport {
    /// Whether a party connected to the relay and the relay reached the listening party.
    pub connected: bool,
    /// Whether the target frame arrived and the fault was applied to it.
    pub applied: bool,
    /// The payload length of every frame whose header arrived, per direction, indexed by
    /// [`Direction::ToListener`] then [`Direction::ToConnector`] (see [`RelayReport::frames`]).
    pub frames: [Vec<u64>; 2],
    /// Why the relay could not relay (accept, connect upstream), if it could not.
    pub error: Option<String>,
}

impl RelayReport {
    /// The payload lengths of the frames seen in `dir`, in order.
    pub fn frames(&self, dir: Direction) -> &[u64] {
        &self.frames[dir.index()]
    }
}

#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    applied: AtomicBool,
    connected: AtomicBool,
    frames: [Mutex<Vec<u64>>; 2],
    /// Clones of both sockets, so either direction (or [`Relay::finish`]) can close them all.
    sockets: Mutex<Vec<TcpStream>>,
    error: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Closes both connections in both directions.
    fn close_all(&self) {
        for s in lock(&self.sockets).iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Sleeps `d`, or less if the relay is stopped; whether it slept the whole time.
    fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.stopped() {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            std::thread::sleep(POLL.min(end - now));
        }
    }
}

/// A running relay (see the module doc).
#[derive(Debug)]
pub struct Relay {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    /// Listens on `127.0.0.1:0`; the first party to connect is relayed to `upstream`, with
    /// `fault` applied (none: a pure pass-through that records the frames).
    pub fn start(upstream: SocketAddr, fault: Option<FaultAt>) -> io::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("relay".into())
            .spawn(move || run(listener, upstream, fault, &s))?;
        Ok(Relay {
            addr,
            shared,
            thread: Some(thread),
        })
    }

    /// The address parties connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the relay: closes both connections (if still open), ends its threads and reports
    /// what it saw. Call it once both parties have ended.
    pub fn finish(mut self) -> RelayReport {
        self.stop();
        let s = &self.shared;
        RelayReport {
            connected: s.connected.load(Ordering::Relaxed),
            applied: s.applied.load(Ordering::Relaxed),
            frames: [lock(&s.frames[0]).clone(), lock(&s.frames[1]).clone()],
            error: lock(&s.error).clone(),
        }
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.close_all();
        if let Some(t) = self.thread.take() {
            // A relay thread never panics on the network's account; if it did, the report
            // still holds what it recorded.
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Accepts one party, connects upstream and forwards both directions until both end.
fn run(listener: TcpListener, upstream: SocketAddr, fault: Option<FaultAt>, shared: &Arc<Shared>) {
    let downstream = loop {
        if shared.stopped() {
            return;
        }
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                std::thread::sleep(POLL);
            }
            Err(e) => {
                *lock(&shared.error) = Some(format!("accept: {e}"));
                return;
            }
        }
    };
    // Later connections are refused.
    drop(listener);
    let up = match TcpStream::connect(upstream) {
        Ok(up) => up,
        Err(e) => {
            *lock(&shared.error) = Some(format!("connect to {upstream}: {e}"));
            let _ = downstream.shutdown(Shutdown::Both);
            return;
        }
    };
    let pair = (|| -> io::Result<_> {
        downstream.set_nonblocking(false)?;
        for s in [&downstream, &up] {
            s.set_nodelay(true)?;
        }
        lock(&shared.sockets).extend([downstream.try_clone()?, up.try_clone()?]);
        Ok((downstream.try_clone()?, up.try_clone()?))
    })();
    let (down2, up2) = match pair {
        Ok(p) => p,
        Err(e) => {
            *lock(&shared.error) = Some(format!("socket set-up: {e}"));
            let _ = downstream.shutdown(Shutdown::Both);
            let _ = up.shutdown(Shutdown::Both);
            return;
        }
    };
    shared.connected.store(true, Ordering::Relaxed);
    let for_dir = |d: Direction| fault.filter(|f| f.direction == d);
    let to_connector = {
        let shared = Arc::clone(shared);
        let fault = for_dir(Direction::ToConnector);
        std::thread::Builder::new()
            .name("relay to connector".into())
            .spawn(move || forward(up2, down2, Direction::ToConnector, fault, &shared))
    };
    forward(
        downstream,
        up,
        Direction::ToListener,
        for_dir(Direction::ToListener),
        shared,
    );
    match to_connector {
        Ok(t) => {
            let _ = t.join();
        }
        Err(_) => shared.close_all(),
    }
}

/// How a read of a frame's bytes ended.
enum Filled {
    /// All bytes arrived.
    Whole,
    /// The stream ended (or failed) after this many bytes.
    Short(usize),
}

/// Reads up to `buf.len()` bytes, stopping early only at the end of the stream or an error.
fn read_full(src: &mut TcpStream, buf: &mut [u8]) -> Filled {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..]) {
            Ok(0) => return Filled::Short(got),
            Ok(k) => got += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Filled::Short(got),
        }
    }
    Filled::Whole
}

/// Reads `len` payload bytes into `buf`, growing it only as bytes arrive; whether all came.
fn read_payload(src: &mut TcpStream, len: u64, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    match src.take(len).read_to_end(buf) {
        Ok(_) => buf.len() as u64 == len,
        Err(_) => false,
    }
}

/// Forwards the frames of one direction from `src` to `dst`, applying `fault` to its frame.
fn forward(
    mut src: TcpStream,
    mut dst: TcpStream,
    dir: Direction,
    fault: Option<FaultAt>,
    shared: &Shared,
) {
    let mut trickle = false;
    let mut payload = Vec::new();
    let mut index = 0usize;
    let send = |dst: &mut TcpStream, bytes: &[u8], trickle: bool| -> bool {
        if trickle {
            for b in bytes {
                if !shared.sleep(Duration::from_secs(1)) || dst.write_all(&[*b]).is_err() {
                    return false;
                }
            }
            true
        } else {
            dst.write_all(bytes).is_ok()
        }
    };
    loop {
        let mut header = [0u8; HEADER_LEN];
        if let Filled::Short(got) = read_full(&mut src, &mut header) {
            // The source ended: pass on what it sent and its close.
            if send(&mut dst, &header[..got], trickle) {
                let _ = dst.shutdown(Shutdown::Write);
            } else {
                shared.close_all();
            }
            return;
        }
        let len = u32::from_le_bytes(header);
        lock(&shared.frames[dir.index()]).push(u64::from(len));
        let whole = read_payload(&mut src, u64::from(len), &mut payload);
        let hit = fault.filter(|f| f.frame == index);
        index += 1;
        if hit.is_some() {
            shared.applied.store(true, Ordering::Relaxed);
        }
        let mut frame = Vec::with_capacity(HEADER_LEN + payload.len());
        frame.extend_from_slice(&header);
        frame.extend_from_slice(&payload);
        let ok = match hit.map(|f| f.fault) {
            None => send(&mut dst, &frame, trickle),
            Some(f @ (Fault::FlipByte | Fault::FlipLastByte)) => {
                let at = match (payload.len(), f) {
                    (0, _) => 0,
                    (n, Fault::FlipLastByte) => HEADER_LEN + n - 1,
                    (n, _) => HEADER_LEN + n / 2,
                };
                frame[at] ^= 1;
                send(&mut dst, &frame, trickle)
            }
            Some(Fault::Truncate) => {
                let keep = if payload.is_empty() {
                    HEADER_LEN / 2
                } else {
                    HEADER_LEN + payload.len() / 2
                };
                let _ = send(&mut dst, &frame[..keep], trickle);
                false
            }
            Some(Fault::Drop) => true,
            Some(Fault::Duplicate) => {
                send(&mut dst, &frame, trickle) && send(&mut dst, &frame, trickle)
            }
            Some(Fault::Delay(d)) => shared.sleep(d) && send(&mut dst, &frame, trickle),
            Some(Fault::Close) => false,
            Some(Fault::Trickle) => {
                trickle = true;
                send(&mut dst, &frame, trickle)
            }
        };
        if !ok {
            shared.close_all();
            return;
        }
        if !whole {
            // The source ended inside this frame; what arrived was passed on above.
            let _ = dst.shutdown(Shutdown::Write);
            return;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(payload);
        f
    }

    /// A listening end, a relay in front of it with `fault`, and a connected end; returns
    /// (connector, listener side, relay).
    fn setup(fault: Option<FaultAt>) -> (TcpStream, TcpStream, Relay) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = Relay::start(l.local_addr().unwrap(), fault).unwrap();
        let c = TcpStream::connect(relay.addr()).unwrap();
        let (s, _) = l.accept().unwrap();
        for x in [&c, &s] {
            x.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        }
        (c, s, relay)
    }

    fn at(direction: Direction, frame: usize, fault: Fault) -> Option<FaultAt> {
        Some(FaultAt {
            direction,
            frame,
            fault,
        })
    }

    /// Everything `s` receives until the stream ends.
    fn drain(s: &mut TcpStream) -> Vec<u8> {
        let mut v = Vec::new();
        s.read_to_end(&mut v).unwrap();
        v
    }

    /// Sends frames of 3, 0 and 5 bytes from the connector, closes, and returns what the
    /// listener side received and the report.
    fn three_frames(fault: Option<FaultAt>) -> (Vec<u8>, RelayReport) {
        let (mut c, mut s, relay) = setup(fault);
        // A fault that closes the connection may do so before the later frames or the
        // shutdown are sent (they then fail: broken pipe, not connected); what the listener
        // side received is what the tests check.
        for p in [&b"abc"[..], b"", b"hello"] {
            let _ = c.write_all(&frame(p));
        }
        let _ = c.shutdown(Shutdown::Write);
        let got = drain(&mut s);
        drop((c, s));
        (got, relay.finish())
    }

    fn concat(frames: &[&[u8]]) -> Vec<u8> {
        frames.iter().flat_map(|p| frame(p)).collect()
    }

    #[test]
    fn pass_through_forwards_both_ways_and_logs_frames() {
        let (mut c, mut s, relay) = setup(None);
        c.write_all(&concat(&[b"ping", b""])).unwrap();
        let mut buf = [0u8; 12];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(buf.to_vec(), concat(&[b"ping", b""]));
        // The other direction, and a large frame that arrives in pieces.
        let big = vec![7u8; 1 << 20];
        let writer = {
            let mut s = s.try_clone().unwrap();
            let f = frame(&big);
            std::thread::spawn(move || {
                s.write_all(&f).unwrap();
                s.shutdown(Shutdown::Write).unwrap();
            })
        };
        let got = drain(&mut c);
        writer.join().unwrap();
        assert_eq!(got, frame(&big));
        c.shutdown(Shutdown::Write).unwrap();
        assert!(drain(&mut s).is_empty());
        let r = relay.finish();
        assert!(r.connected && !r.applied);
        assert_eq!(r.frames(Direction::ToListener), [4, 0]);
        assert_eq!(r.frames(Direction::ToConnector), [1 << 20]);
    }

    #[test]
    fn flip_changes_one_payload_bit() {
        let (got, r) = three_frames(at(Direction::ToListener, 2, Fault::FlipByte));
        assert!(r.applied);
        assert_eq!(got, concat(&[b"abc", b"", b"hemlo"]));
        assert_eq!(r.frames(Direction::ToListener), [3, 0, 5]);
    }

    #[test]
    fn flip_last_changes_the_last_payload_bit() {
        let (got, r) = three_frames(at(Direction::ToListener, 2, Fault::FlipLastByte));
        assert!(r.applied);
        assert_eq!(got, concat(&[b"abc", b"", b"helln"]));
    }

    #[test]
    fn flip_of_an_empty_frame_changes_its_header() {
        let (got, r) = three_frames(at(Direction::ToListener, 1, Fault::FlipByte));
        assert!(r.applied);
        let mut want = concat(&[b"abc", b"", b"hello"]);
        want[7] ^= 1;
        assert_eq!(got, want);
    }

    #[test]
    fn truncate_forwards_part_of_the_frame_then_closes_both() {
        let (mut c, mut s, relay) = setup(at(Direction::ToListener, 1, Fault::Truncate));
        c.write_all(&concat(&[b"abc", b"hello!", b"more"])).unwrap();
        let got = drain(&mut s);
        let mut want = frame(b"abc");
        want.extend_from_slice(&frame(b"hello!")[..HEADER_LEN + 3]);
        assert_eq!(got, want);
        // The connector's side is closed too, though it never closed its own direction.
        assert!(drain(&mut c).is_empty());
        assert!(relay.finish().applied);
    }

    #[test]
    fn truncate_of_an_empty_frame_cuts_its_header() {
        let (got, r) = three_frames(at(Direction::ToListener, 1, Fault::Truncate));
        assert!(r.applied);
        assert_eq!(got, [frame(b"abc"), vec![0, 0]].concat());
    }

    #[test]
    fn drop_skips_one_frame() {
        let (got, r) = three_frames(at(Direction::ToListener, 0, Fault::Drop));
        assert!(r.applied);
        assert_eq!(got, concat(&[b"", b"hello"]));
        assert_eq!(r.frames(Direction::ToListener), [3, 0, 5]);
    }

    #[test]
    fn duplicate_sends_one_frame_twice() {
        let (got, r) = three_frames(at(Direction::ToListener, 2, Fault::Duplicate));
        assert!(r.applied);
        assert_eq!(got, concat(&[b"abc", b"", b"hello", b"hello"]));
    }

    #[test]
    fn delay_holds_one_frame_and_keeps_the_order() {
        let d = Duration::from_millis(300);
        let (mut c, mut s, relay) = setup(at(Direction::ToListener, 0, Fault::Delay(d)));
        let start = Instant::now();
        c.write_all(&concat(&[b"abc", b"de"])).unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        assert_eq!(drain(&mut s), concat(&[b"abc", b"de"]));
        // The relay held the frame at least `d` after it was written.
        assert!(start.elapsed() >= d);
        assert!(relay.finish().applied);
    }

    #[test]
    fn close_ends_both_connections_at_the_frame_boundary() {
        let (mut c, mut s, relay) = setup(at(Direction::ToConnector, 1, Fault::Close));
        s.write_all(&concat(&[b"one", b"two", b"three"])).unwrap();
        assert_eq!(drain(&mut c), frame(b"one"));
        assert!(drain(&mut s).is_empty());
        let r = relay.finish();
        assert!(r.applied);
        assert_eq!(r.frames(Direction::ToConnector), [3, 3]);
        assert!(r.frames(Direction::ToListener).is_empty());
    }

    #[test]
    fn trickle_forwards_one_byte_per_second_from_its_frame() {
        let (mut c, mut s, relay) = setup(at(Direction::ToConnector, 1, Fault::Trickle));
        let start = Instant::now();
        s.write_all(&concat(&[b"fast", b"x"])).unwrap();
        let mut first = [0u8; 8];
        c.read_exact(&mut first).unwrap();
        assert_eq!(first.to_vec(), frame(b"fast"));
        // Each byte of the second frame waits a second before it is sent.
        let mut two = [0u8; 2];
        c.read_exact(&mut two).unwrap();
        assert_eq!(two, [1, 0]);
        assert!(start.elapsed() >= Duration::from_secs(2));
        let r = relay.finish();
        assert!(r.applied);
        assert_eq!(r.frames(Direction::ToConnector), [4, 1]);
        // Stopping the relay closes the connection in the middle of the trickle.
        assert!(drain(&mut c).len() < 3);
    }

    #[test]
    fn a_fault_beyond_the_last_frame_is_not_applied() {
        let (got, r) = three_frames(at(Direction::ToListener, 3, Fault::Close));
        assert!(!r.applied);
        assert_eq!(got, concat(&[b"abc", b"", b"hello"]));
        let (got, r) = three_frames(at(Direction::ToConnector, 0, Fault::Close));
        assert!(!r.applied);
        assert_eq!(got, concat(&[b"abc", b"", b"hello"]));
    }

    #[test]
    fn a_header_announcing_a_huge_frame_costs_nothing_until_it_arrives() {
        let (mut c, mut s, relay) = setup(None);
        c.write_all(&u32::MAX.to_le_bytes()).unwrap();
        c.write_all(b"xy").unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        assert_eq!(drain(&mut s), [&u32::MAX.to_le_bytes()[..], b"xy"].concat());
        assert_eq!(
            relay.finish().frames(Direction::ToListener),
            [u64::from(u32::MAX)]
        );
    }

    #[test]
    fn an_unreachable_upstream_is_reported() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let dead = l.local_addr().unwrap();
        drop(l);
        let relay = Relay::start(dead, None).unwrap();
        let mut c = TcpStream::connect(relay.addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut v = Vec::new();
        let _ = c.read_to_end(&mut v);
        let r = relay.finish();
        assert!(!r.connected);
        assert!(r.error.is_some());
    }

    #[test]
    fn finish_without_a_connection_returns() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = Relay::start(l.local_addr().unwrap(), None).unwrap();
        assert_eq!(relay.finish(), RelayReport::default());
    }
}
