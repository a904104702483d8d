//! Opening the connection between the two parties: TCP or TLS, the link hello, and a listener
//! that waits for the right peer.
//!
//! ```text
//! connector                                  listener
//!   TCP connect (retried while refused) ───▶ accept: a candidate, on a thread of its own
//!   first byte (ClientHello/link hello) ───▶ within 3 s, or dropped
//!   TLS 1.3 handshake, both certificates checked (pinned or CA)     [TLS only]
//!   link hello "blindjoin/link/1"       ───▶ checked
//!                                       ◀─── link hello (the candidate has passed)
//! ```
//!
//! **The listener** keeps accepting until the run's deadline and checks each connection, a
//! candidate, on a thread of its own, so a slow or silent one does not delay the right peer. A
//! candidate that has sent no byte within [`FIRST_BYTE_WAIT`] (3 s; the connector always speaks
//! first) is dropped, and one that fails TCP set-up, TLS, the certificate check or the link hello
//! within [`LinkConfig::candidate_wait`] (10 s unless set) is refused; either is reported through
//! the caller's log (one line, peer text escaped) and the next connection is tried. The first
//! connection that passes becomes the channel, with the run's full limits.
//!
//! At most [`MAX_PENDING`] (64) candidates are checked at once, and at most
//! [`MAX_PENDING_PER_SOURCE`] (8) from one source: an IPv4 address, or an IPv6 /64. A new
//! connection beyond a cap evicts the oldest candidate, of its own source when that source's cap
//! is reached and of all sources otherwise: its socket is shut down and the log names it as
//! dropped. The newest connections are therefore always checked, and connections opened and
//! left silent cannot keep the right peer out: those from other sources take at most their
//! sources' slots, and those from the peer's own address are pushed out by the peer's
//! connection. A candidate that has passed is never evicted: the listener reads the connector's
//! link hello before it sends its own, and sends it only once the candidate is out of
//! eviction's reach, so a connector that has the listener's hello holds a link the listener
//! keeps. A right peer pushed out before it passes (by eight newer connections from its source,
//! or 64 in all) retries, as below. Candidates still being checked when the listener returns
//! are shut down.
//!
//! **The connector** retries every 200 ms until the deadline while nobody listens at the
//! address (connection refused), and also when the listener drops the connection before the
//! link is set up: it is closed or reset, with no TLS alert, during TLS or before the listener's
//! link hello arrived. Such a connection was shed by a busy listener, not refused; the connector
//! logs one line the first time and tries again. Once it has reached a listener so, a refused
//! connection means the peer stopped listening, most likely because it failed: the connector
//! then retries only for [`LinkConfig::contact_wait`] (30 s unless set), or until the deadline
//! if that is nearer, and ends with [`Error::PeerStopped`], which points the user to the peer's
//! log. A connection the peer refuses (a TLS alert, a certificate other than the one pinned, a
//! wrong link hello) is final: the peer was reached and refused.
//!
//! Everything after the link hello (the session handshake, the protocol) runs over the returned
//! [`Link`]; a failure there ends the run.

use crate::channel::clock::{Limits, map_io};
use crate::channel::tcp::TcpChannel;
use crate::channel::tls::{TlsChannel, TlsConfig};
use crate::channel::{Channel, FrameReceiver, FrameSender};
use crate::error::peer_text;
use crate::{Error, Result};
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// The link hello: the first frame each way on every connection.
pub const LINK_HELLO: &[u8] = b"blindjoin/link/1";

/// Name of the link hello message.
pub const MSG_LINK_HELLO: &str = "link hello";

/// How long a connector that reached the listener once keeps retrying while nobody listens
/// there any more ([`LinkConfig::contact_wait`]'s default).
pub const CONTACT_WAIT: Duration = Duration::from_secs(30);

/// The pause between two connection attempts.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// How a party connects.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    /// TLS settings, or `None` for plain TCP.
    pub tls: Option<Arc<TlsConfig>>,
    /// The run's time limits.
    pub limits: Limits,
    /// How long a candidate connection may take to pass TLS and the link hello.
    pub candidate_wait: Duration,
    /// How long [`connect`] keeps retrying while nobody listens at the address after it reached
    /// a listener there once (which then dropped the connection): the peer has most likely
    /// failed, and waiting for the whole deadline would only hide it. [`CONTACT_WAIT`] unless
    /// set.
    pub contact_wait: Duration,
    /// Set to stop [`connect`] or [`accept`] while they wait for the peer (they end with
    /// [`Error::Cancelled`] within about 200 ms).
    pub cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl LinkConfig {
    /// Plain TCP under `limits`, candidates given 10 s, a contact wait of [`CONTACT_WAIT`].
    pub fn plain(limits: Limits) -> Self {
        LinkConfig {
            tls: None,
            limits,
            candidate_wait: Duration::from_secs(10),
            contact_wait: CONTACT_WAIT,
            cancel: None,
        }
    }

    /// Whether [`LinkConfig::cancel`] is set.
    pub fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// TLS with `tls` under `limits`, candidates given 10 s, a contact wait of [`CONTACT_WAIT`].
    pub fn tls(tls: TlsConfig, limits: Limits) -> Self {
        LinkConfig {
            tls: Some(Arc::new(tls)),
            limits,
            candidate_wait: Duration::from_secs(10),
            contact_wait: CONTACT_WAIT,
            cancel: None,
        }
    }
}

/// An open connection to the peer: plain TCP or TLS.
#[derive(Debug)]
pub enum Link {
    /// Plain TCP.
    Tcp(TcpChannel),
    /// TLS 1.3.
    Tls(TlsChannel),
}

impl Link {
    /// Replaces the link's time limits (a server gives each client connection its own).
    pub fn set_limits(&mut self, limits: Limits) {
        match self {
            Link::Tcp(c) => c.set_limits(limits),
            Link::Tls(c) => c.set_limits(limits),
        }
    }

    /// A second handle to the link's socket: shutting it down (`shutdown(Both)`) from another
    /// thread ends the run's blocked reads and writes with an error, e.g. when the user stops
    /// the run.
    pub fn socket(&self) -> std::io::Result<std::net::TcpStream> {
        match self {
            Link::Tcp(c) => c.socket(),
            Link::Tls(c) => c.socket(),
        }
    }

    /// Whether the link is TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self, Link::Tls(_))
    }

    /// Whether the peer authenticated with a certificate that carries the DNS name `name`.
    pub fn peer_is_named(&self, name: &str) -> bool {
        match self {
            Link::Tcp(_) => false,
            Link::Tls(c) => c.peer_is_named(name),
        }
    }
}

impl FrameSender for Link {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        match self {
            Link::Tcp(c) => c.send(msg, frame),
            Link::Tls(c) => c.send(msg, frame),
        }
    }

    fn close(&mut self) {
        match self {
            Link::Tcp(c) => c.close(),
            Link::Tls(c) => c.close(),
        }
    }
}

impl FrameReceiver for Link {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        match self {
            Link::Tcp(c) => c.recv(what, max_len),
            Link::Tls(c) => c.recv(what, max_len),
        }
    }

    fn recv_into(&mut self, what: &'static str, max_len: usize, buf: &mut Vec<u8>) -> Result<()> {
        match self {
            Link::Tcp(c) => c.recv_into(what, max_len, buf),
            Link::Tls(c) => c.recv_into(what, max_len, buf),
        }
    }
}

impl Channel for Link {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        match self {
            Link::Tcp(c) => c.split(),
            Link::Tls(c) => c.split(),
        }
    }

    fn binding(&self) -> Option<[u8; 32]> {
        match self {
            Link::Tcp(c) => c.binding(),
            Link::Tls(c) => c.binding(),
        }
    }

    fn peer_identity(&self) -> Option<[u8; 32]> {
        match self {
            Link::Tcp(c) => c.peer_identity(),
            Link::Tls(c) => c.peer_identity(),
        }
    }

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        match self {
            Link::Tcp(c) => c.set_deadline(deadline),
            Link::Tls(c) => c.set_deadline(deadline),
        }
    }
}

/// The connector's link hello: ours, then the listener's.
fn link_hello(link: &mut Link) -> Result<()> {
    link.send(MSG_LINK_HELLO, LINK_HELLO)?;
    recv_link_hello(link)
}

/// The listener's link hello: the connector's first (a connector always speaks first), then
/// ours once `commit` agrees. The connector takes the link as set up only when our hello
/// arrives, so a candidate evicted before `commit` is one its connector sees dropped (and
/// retries), never one it believes is set up. A wrong hello is answered with ours all the same,
/// so that a connector of another version, or speaking TLS to a plain listener, meets the
/// mismatch (a final error) rather than a dropped connection.
fn listener_hello(link: &mut Link, commit: &dyn Fn() -> bool) -> Result<()> {
    match recv_link_hello(link) {
        Ok(()) if commit() => link.send(MSG_LINK_HELLO, LINK_HELLO),
        Ok(()) => Err(Error::Dropped(
            "evicted while its link hello was checked".into(),
        )),
        Err(e @ (Error::Malformed { .. } | Error::FrameTooLong { .. } | Error::Tls(_))) => {
            // Best effort: the connection is refused either way.
            let _ = link.send(MSG_LINK_HELLO, LINK_HELLO);
            Err(e)
        }
        Err(e) => Err(e),
    }
}

/// Reads and checks the peer's link hello.
fn recv_link_hello(link: &mut Link) -> Result<()> {
    let peer = match link.recv(MSG_LINK_HELLO, 64) {
        Ok(p) => p,
        // A TLS record header read as a frame length: the peer speaks TLS. Its content type is
        // 0x16 (a handshake record: a TLS connector's ClientHello) or 0x15 (an alert: a TLS
        // listener refusing our plain link hello), its version 0x03 0x0n.
        Err(Error::FrameTooLong { len, .. }) if matches!(len & 0xffff, 0x0316 | 0x0315) => {
            return Err(Error::Tls(
                "the peer speaks TLS and this side plain TCP (give both sides the same TLS \
                 options)"
                    .into(),
            ));
        }
        Err(e) => return Err(e),
    };
    check_link_hello(&peer)
}

/// Checks the peer's link hello frame.
pub fn check_link_hello(frame: &[u8]) -> Result<()> {
    if frame != LINK_HELLO {
        return Err(Error::malformed(
            MSG_LINK_HELLO,
            format!(
                "the peer is not a blindjoin endpoint of this version (it sent `{}`)",
                peer_text(&String::from_utf8_lossy(frame))
            ),
        ));
    }
    Ok(())
}

/// TLS (if configured) on a connected stream, under `limits`: as the client naming
/// `server_name`, or as the server (`None`).
fn secure(
    stream: TcpStream,
    cfg: &LinkConfig,
    server_name: Option<&str>,
    limits: Limits,
) -> Result<Link> {
    Ok(match (&cfg.tls, server_name) {
        (None, _) => Link::Tcp(TcpChannel::new(stream, limits)?),
        (Some(tls), Some(name)) => Link::Tls(TlsChannel::client(stream, tls, name, limits)?),
        (Some(tls), None) => Link::Tls(TlsChannel::server(stream, tls, limits)?),
    })
}

/// The connector's side of a connected stream: TLS (if configured) and the link hello.
fn open(stream: TcpStream, cfg: &LinkConfig, server_name: &str) -> Result<Link> {
    let mut link = secure(stream, cfg, Some(server_name), cfg.limits)?;
    link_hello(&mut link)?;
    Ok(link)
}

/// Whether `e`, met by [`open`] on the connecting side, means the listener dropped the
/// connection before the link was set up: closed or reset, with no TLS alert (that would be
/// [`Error::Tls`]), before its link hello arrived. Every step of [`open`] that can meet a closed
/// connection comes before that hello is read (TLS, sending ours, reading the listener's), and
/// a listener that refuses our hello sends its own first, so the refusal shows as a mismatch.
/// Such a connection was shed (a busy listener, a candidate evicted for newer connections, a
/// listener restarting), not refused.
fn dropped_early(e: &Error) -> bool {
    matches!(e, Error::PeerClosed { .. } | Error::SendFailed { .. })
}

/// Connects to `addr` and runs TLS and the link hello, retrying every 200 ms until the deadline
/// while nobody listens there or the listener drops the connection before the link is set up
/// (see the module doc); once the listener was reached, a refused connection is retried only for
/// [`LinkConfig::contact_wait`]. `log` receives one line the first time each of these happens.
pub fn connect(addr: &str, cfg: &LinkConfig, log: &mut dyn FnMut(&str)) -> Result<Link> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| Error::io(format!("cannot resolve {addr}"), e))?
        .collect();
    let host = addr
        .rsplit_once(':')
        .map_or(addr, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let (mut told_refused, mut told_dropped, mut told_gone) = (false, false, false);
    // Whether a connection reached the listener (and was dropped before the link was set up).
    let mut reached = false;
    // Since when the address refuses connections, after it was reached.
    let mut gone_since: Option<Instant> = None;
    let give_up = |gone: bool| {
        if gone {
            Error::PeerStopped {
                addr: addr.to_owned(),
            }
        } else {
            Error::Deadline {
                during: "the peer to accept our connection",
            }
        }
    };
    loop {
        let mut last = std::io::Error::new(ErrorKind::NotFound, "no address");
        let mut dropped = None;
        for a in &addrs {
            let wait = cfg
                .limits
                .next_wait()
                .ok_or_else(|| give_up(gone_since.is_some()))?
                .min(Duration::from_secs(10))
                .max(Duration::from_millis(1));
            match TcpStream::connect_timeout(a, wait) {
                Ok(s) => match open(s, cfg, host) {
                    Err(e) if dropped_early(&e) => {
                        dropped = Some(e);
                        break;
                    }
                    other => return other,
                },
                Err(e) => last = e,
            }
        }
        if let Some(e) = dropped {
            reached = true;
            gone_since = None;
            if !told_dropped {
                log(&format!(
                    "the listener at {addr} dropped our connection before the link was set up \
                     ({e}); retrying until the deadline"
                ));
                told_dropped = true;
            }
        } else {
            let retry = matches!(
                last.kind(),
                ErrorKind::ConnectionRefused | ErrorKind::TimedOut | ErrorKind::WouldBlock
            );
            if !retry {
                return Err(Error::io(format!("cannot connect to {addr}"), last));
            }
            if reached && last.kind() == ErrorKind::ConnectionRefused {
                let since = *gone_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= cfg.contact_wait {
                    return Err(give_up(true));
                }
                if !told_gone {
                    log(&format!(
                        "nobody accepts connections at {addr} any more ({last}); retrying for \
                         up to {} s",
                        cfg.contact_wait.as_secs_f64()
                    ));
                    told_gone = true;
                }
            } else if !told_refused && !reached {
                log(&format!(
                    "nobody accepts connections at {addr} yet ({last}); retrying until the \
                     deadline"
                ));
                told_refused = true;
            }
        }
        if cfg.limits.expired() {
            return Err(give_up(gone_since.is_some()));
        }
        if cfg.cancelled() {
            return Err(Error::Cancelled);
        }
        std::thread::sleep(RETRY_PAUSE);
    }
}

/// Lines of refused connections shown before the listener only counts them.
const SHOWN_REFUSALS: u64 = 20;

/// Candidate connections checked at once. A new connection beyond it evicts the oldest
/// candidate (see the module doc).
pub const MAX_PENDING: usize = 64;

/// Candidate connections from one source (an IPv4 address, or an IPv6 /64) checked at once. A
/// new connection from a source that has this many evicts that source's oldest candidate.
pub const MAX_PENDING_PER_SOURCE: usize = 8;

/// How long a candidate may stay silent before its first byte. The connector always speaks
/// first (the TLS ClientHello, or the plain link hello, sent as soon as TCP connects), so a
/// connection that has sent nothing after this long is not a peer; it is dropped well before
/// [`LinkConfig::candidate_wait`], which bounds the whole TLS handshake and link hello.
pub const FIRST_BYTE_WAIT: Duration = Duration::from_secs(3);

/// What the listener counts candidates by: the IPv4 address a connection comes from, or the /64
/// of its IPv6 address (one host commonly holds a whole /64, so a per-address cap would not
/// bind it). An IPv4 address mapped into IPv6 counts as that IPv4 address.
fn source_of(from: &SocketAddr) -> IpAddr {
    match from.ip() {
        IpAddr::V4(a) => IpAddr::V4(a),
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(a) & !u128::from(u64::MAX))),
        },
    }
}

/// A source as the log names it.
fn show_source(source: &IpAddr) -> String {
    match source {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("{a}/64"),
    }
}

/// Waits up to [`FIRST_BYTE_WAIT`] (or less, as `limits` allow) for the candidate's first byte,
/// without consuming it.
fn first_byte(s: &TcpStream, limits: &Limits, run: &Limits) -> Result<()> {
    const DURING: &str = "the peer's first byte";
    let window = limits
        .capped(FIRST_BYTE_WAIT)
        .next_wait()
        .ok_or(Error::Deadline { during: DURING })?;
    let until = Instant::now() + window;
    let io = |e| Error::io(format!("network error during {DURING}"), e);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        // A zero timeout would mean "block forever".
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .map_err(io)?;
        match s.peek(&mut [0u8; 1]) {
            Ok(0) => return Err(Error::PeerClosed { during: DURING }),
            Ok(_) => return Ok(()),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(map_io(e, DURING, limits)),
        }
    }
    if run.expired() {
        return Err(Error::Deadline { during: DURING });
    }
    // In whole milliseconds: the window was measured from a deadline set just before.
    let ms = (window.as_secs_f64() * 1e3).round() / 1e3;
    Err(Error::Dropped(format!(
        "no byte arrived within {ms} s (a blindjoin peer speaks first)"
    )))
}

/// Checks one accepted connection as a candidate peer: its first byte within
/// [`FIRST_BYTE_WAIT`], then TLS and the link hello within the candidate wait. A candidate that
/// runs out of that time (not the run's) is reported as a timeout of its own.
fn check_candidate(s: TcpStream, cfg: &LinkConfig, state: &AtomicU8) -> Result<Link> {
    let limits = cfg.limits.capped(cfg.candidate_wait);
    let checked = (|| {
        s.set_nonblocking(false)
            .map_err(|e| Error::io("cannot configure the connection", e))?;
        first_byte(&s, &limits, &cfg.limits)?;
        let mut link = secure(s, cfg, None, limits)?;
        let commit = || {
            state
                .compare_exchange(CHECKING, COMMITTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        };
        listener_hello(&mut link, &commit)?;
        Ok(link)
    })();
    match checked {
        Err(Error::Deadline { during }) if !cfg.limits.expired() => Err(Error::Timeout {
            during,
            secs: cfg.candidate_wait.as_secs_f64(),
        }),
        other => other,
    }
}

/// A candidate still being checked: the accept loop may evict it.
const CHECKING: u8 = 0;
/// A candidate that passed and is sending the listener's link hello: its connector is about to
/// take the link as set up, so it is no longer evicted.
const COMMITTED: u8 = 1;
/// A candidate the accept loop evicted: its thread must not send the listener's link hello.
const EVICTED: u8 = 2;

/// A connection being checked by a thread of its own.
struct Candidate {
    /// Its number, in the order of acceptance.
    id: u64,
    from: SocketAddr,
    source: IpAddr,
    /// A second handle to its socket, to shut it down when it is evicted.
    socket: TcpStream,
    /// [`CHECKING`], [`COMMITTED`] or [`EVICTED`], shared with its thread.
    state: Arc<AtomicU8>,
}

impl Candidate {
    /// Evicts the candidate unless it has committed, and shuts its socket down if so.
    fn evict(&self) -> bool {
        let evicted = self
            .state
            .compare_exchange(CHECKING, EVICTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if evicted {
            // Its thread's next read or write fails, and the thread ends. Best effort: the
            // connection may be gone already.
            let _ = self.socket.shutdown(Shutdown::Both);
        }
        evicted
    }
}

/// The candidates being checked, oldest first. Those still being checked when the listener
/// returns are shut down, so their threads end at once.
#[derive(Default)]
struct Candidates(VecDeque<Candidate>);

impl Drop for Candidates {
    fn drop(&mut self) {
        for c in &self.0 {
            c.evict();
        }
    }
}

impl Candidates {
    /// Takes candidate `id` off the list (`None`: it was evicted).
    fn take(&mut self, id: u64) -> Option<Candidate> {
        let at = self.0.iter().position(|c| c.id == id)?;
        self.0.remove(at)
    }

    /// Evicts the oldest candidate that `pick` chooses and has not committed, and takes it off
    /// the list.
    fn evict_oldest(&mut self, pick: impl Fn(&Candidate) -> bool) -> Option<Candidate> {
        let at = self.0.iter().position(|c| pick(c) && c.evict())?;
        self.0.remove(at)
    }

    /// Makes room for a new connection from `source`: evicts the source's oldest candidate if
    /// it has [`MAX_PENDING_PER_SOURCE`] pending, the oldest of all if [`MAX_PENDING`] are, and
    /// returns it with the reason. Candidates that have committed are passed over (they end
    /// within one send); if all have, none is evicted and the caps are exceeded briefly.
    fn make_room(&mut self, source: &IpAddr) -> Option<(Candidate, String)> {
        let mine = self.0.iter().filter(|c| c.source == *source).count();
        if mine >= MAX_PENDING_PER_SOURCE
            && let Some(c) = self.evict_oldest(|c| c.source == *source)
        {
            let why = format!(
                "{MAX_PENDING_PER_SOURCE} newer connections from {} are waiting to be checked",
                show_source(source)
            );
            return Some((c, why));
        }
        if self.0.len() < MAX_PENDING {
            return None;
        }
        let c = self.evict_oldest(|_| true)?;
        Some((
            c,
            format!("{MAX_PENDING} newer connections are waiting to be checked"),
        ))
    }
}

/// Accepts connections on `listener` until one passes TLS and the link hello (see the module
/// doc), or the deadline passes. Candidates are checked concurrently, so a connection that
/// stays silent does not delay the right peer; refused candidates are reported through `log`.
pub fn accept(listener: &TcpListener, cfg: &LinkConfig, log: &mut dyn FnMut(&str)) -> Result<Link> {
    let mut links = accept_many(listener, cfg, 1, log)?;
    links.pop().ok_or(Error::Deadline {
        during: "a peer to connect",
    })
}

/// Accepts connections on `listener` until `n` have passed TLS and the link hello (in the
/// order they passed), as [`accept`] does for one: e.g. the first client of a server-aided run
/// waiting for the others.
pub fn accept_many(
    listener: &TcpListener,
    cfg: &LinkConfig,
    n: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Link>> {
    let mut links = Vec::with_capacity(n);
    if n == 0 {
        return Ok(links);
    }
    accept_each(listener, cfg, log, &mut |link, _| {
        links.push(link);
        if links.len() == n {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(links)
}

/// Accepts connections on `listener` and hands each that passes TLS and the link hello to
/// `on_link` (with its address, under the run's limits) until `on_link` breaks, the deadline
/// passes or the configuration is cancelled; a server's accept loop. Candidates are checked
/// concurrently, within the caps of [`MAX_PENDING`] and [`MAX_PENDING_PER_SOURCE`] (a new
/// connection evicts the oldest candidate beyond them); refused and evicted ones are reported
/// through `log`.
pub fn accept_each(
    listener: &TcpListener,
    cfg: &LinkConfig,
    log: &mut dyn FnMut(&str),
    on_link: &mut dyn FnMut(Link, SocketAddr) -> ControlFlow<()>,
) -> Result<()> {
    let setup = |e| Error::io("cannot wait for a connection", e);
    listener.set_nonblocking(true).map_err(setup)?;
    let (done_tx, done_rx) = std::sync::mpsc::channel::<(u64, Result<Link>)>();
    let mut pending = Candidates::default();
    let mut next_id = 0u64;
    let mut refused = 0u64;
    let mut accepted = 0u64;
    let mut last_refusal = String::new();
    let mut refuse = |from: SocketAddr, e: &Error, refused: &mut u64| {
        *refused += 1;
        last_refusal = e.to_string();
        if *refused <= SHOWN_REFUSALS || refused.is_multiple_of(1000) {
            log(&format!(
                "refused a connection from {from}: {e}{}",
                if *refused == SHOWN_REFUSALS {
                    " (further refusals are counted, one line per 1000)"
                } else {
                    ""
                }
            ));
        }
    };
    loop {
        // Results of the candidates checked so far; an evicted candidate's is dropped (it was
        // reported when it was evicted).
        while let Ok((id, result)) = done_rx.try_recv() {
            let Some(c) = pending.take(id) else {
                continue;
            };
            match result {
                Ok(mut link) => {
                    link.set_limits(cfg.limits);
                    accepted += 1;
                    if on_link(link, c.from).is_break() {
                        return Ok(());
                    }
                }
                Err(e) => refuse(c.from, &e, &mut refused),
            }
        }
        match listener.accept() {
            Ok((s, from)) => {
                let source = source_of(&from);
                if let Some((old, why)) = pending.make_room(&source) {
                    refuse(old.from, &Error::Dropped(why), &mut refused);
                }
                let socket = match s.try_clone() {
                    Ok(socket) => socket,
                    Err(e) => {
                        let e = Error::io("cannot keep a handle to the connection", e);
                        refuse(from, &e, &mut refused);
                        continue;
                    }
                };
                let id = next_id;
                next_id += 1;
                let state = Arc::new(AtomicU8::new(CHECKING));
                let (cfg, tx, shared) = (cfg.clone(), done_tx.clone(), state.clone());
                let check = move || {
                    // If the listener has returned, the candidate is dropped.
                    let _ = tx.send((id, check_candidate(s, &cfg, &shared)));
                };
                let spawned = std::thread::Builder::new()
                    .name("candidate".into())
                    .spawn(check);
                match spawned {
                    Ok(_) => pending.0.push_back(Candidate {
                        id,
                        from,
                        source,
                        socket,
                        state,
                    }),
                    Err(e) => {
                        let e = Error::io("cannot start a thread to check the connection", e);
                        refuse(from, &e, &mut refused);
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if cfg.cancelled() {
                    return Err(Error::Cancelled);
                }
                if cfg.limits.expired() && pending.0.is_empty() {
                    if refused > 0 && accepted == 0 {
                        return Err(Error::NoAcceptablePeer {
                            refused,
                            last: last_refusal,
                        });
                    }
                    return Err(Error::Deadline {
                        during: "a peer to connect",
                    });
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            // A connection that failed between the kernel's accept and ours (reset): go on.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionAborted
                        | ErrorKind::ConnectionReset
                        | ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(setup(e)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn candidates_count_by_ipv4_address_or_ipv6_64() {
        let src = |s: &str| source_of(&s.parse().unwrap());
        assert_eq!(src("192.0.2.7:443"), src("192.0.2.7:50000"));
        assert_ne!(src("192.0.2.7:443"), src("192.0.2.8:443"));
        // One /64, whatever the interface part; the next /64 is another source.
        assert_eq!(src("[2001:db8:1:2::1]:9"), src("[2001:db8:1:2:ffff::5]:9"));
        assert_ne!(src("[2001:db8:1:2::1]:9"), src("[2001:db8:1:3::1]:9"));
        // A mapped IPv4 address is that IPv4 address.
        assert_eq!(src("[::ffff:192.0.2.7]:1"), src("192.0.2.7:2"));
        assert_eq!(show_source(&src("192.0.2.7:443")), "192.0.2.7");
        assert_eq!(
            show_source(&src("[2001:db8:1:2:3:4:5:6]:9")),
            "2001:db8:1:2::/64"
        );
    }
}
