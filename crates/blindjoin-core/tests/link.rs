//! Connections between parties: TLS 1.3 with pinned certificates both ways, the channel
//! binding, a relay between two TLS sessions caught by the handshake, a listener that drops
//! wrong, silent and garbage connections and still accepts the right peer (also with 1,000
//! silent connections held from another address, 200 from the peer's own, or every slot taken),
//! a silent candidate dropped after the first-byte wait, a connector that retries when it is
//! dropped before TLS and gives up soon when the listener it reached stops listening, a plain
//! connector told that the listener speaks TLS, and the deadline against a peer that trickles
//! bytes.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_core::Error;
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::tls::{Fingerprint, Identity, PeerCheck, TlsConfig};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use blindjoin_core::handshake::{Role, SessionConfig, handshake};
use blindjoin_core::transport::{self, Link, LinkConfig};
use blindjoin_testkit::rng;
use socket2::{Domain, Socket, Type};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

const MSG: &str = "a test frame";

fn limits(total_ms: u64) -> Limits {
    Limits::new(Duration::from_millis(total_ms), Duration::from_secs(5))
}

fn identity(name: &str) -> Identity {
    Identity::generate(name).unwrap().0
}

fn tls(me: &Identity, peer: Fingerprint, total_ms: u64) -> LinkConfig {
    let mut c = LinkConfig::tls(
        TlsConfig::new(me, &PeerCheck::Pinned(peer)).unwrap(),
        limits(total_ms),
    );
    c.candidate_wait = Duration::from_millis(500);
    c
}

/// Runs `listen` on a fresh loopback listener and `connect` against it, in two threads.
fn pair<A: Send, B: Send>(
    listen: impl FnOnce(TcpListener) -> A + Send,
    connect: impl FnOnce(String) -> B + Send,
) -> (A, B) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::scope(|s| {
        let a = s.spawn(move || listen(l));
        let b = connect(addr);
        (a.join().unwrap(), b)
    })
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 7 + len) as u8).collect()
}

#[test]
fn pinned_tls_carries_frames_both_ways_at_once_with_one_binding() {
    let (a, b) = (identity("a.example"), identity("b.example"));
    let (fa, fb) = (a.fingerprint(), b.fingerprint());
    let lens = [0usize, 1, 100, 16383, 16384, 1 << 17, 3, (1 << 20) + 5];
    let run = |mut link: Link| {
        assert!(link.is_tls());
        let binding = link.binding().unwrap();
        let (mut rx, mut tx) = link.split();
        std::thread::scope(|s| {
            let h = s.spawn(move || {
                for &len in &lens {
                    tx.send(MSG, &pattern(len)).unwrap();
                }
            });
            for &len in &lens {
                assert_eq!(rx.recv(MSG, 1 << 21).unwrap(), pattern(len), "{len} bytes");
            }
            h.join().unwrap();
        });
        binding
    };
    let (ba, bb) = pair(
        |l| run(transport::accept(&l, &tls(&a, fb, 10_000), &mut |_| {}).unwrap()),
        |addr| run(transport::connect(&addr, &tls(&b, fa, 10_000), &mut |_| {}).unwrap()),
    );
    assert_eq!(ba, bb);
}

#[test]
fn a_wrong_pin_is_refused_by_both_sides_before_any_message() {
    let (a, b, c) = (identity("a"), identity("b"), identity("c"));
    // The connector pins c but meets a.
    let mut log = Vec::new();
    let (le, ce) = pair(
        |l| {
            transport::accept(&l, &tls(&a, b.fingerprint(), 1500), &mut |s| {
                log.push(s.to_owned())
            })
        },
        |addr| transport::connect(&addr, &tls(&b, c.fingerprint(), 1500), &mut |_| {}),
    );
    let ce = ce.unwrap_err().to_string();
    assert_eq!(
        ce,
        format!(
            "TLS: the peer's certificate is {}, not the pinned {}",
            a.fingerprint(),
            c.fingerprint()
        )
    );
    let le = le.unwrap_err().to_string();
    assert!(
        le.starts_with(
            "no acceptable peer connected before the run's deadline; 1 connection(s) refused"
        ),
        "{le}"
    );
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(
        log[0].contains("refused a connection from 127.0.0.1:"),
        "{log:?}"
    );

    // The listener pins c but meets b: the connector learns that its certificate was refused.
    let (le, ce) = pair(
        |l| transport::accept(&l, &tls(&a, c.fingerprint(), 1500), &mut |_| {}),
        |addr| transport::connect(&addr, &tls(&b, a.fingerprint(), 1500), &mut |_| {}),
    );
    assert_eq!(
        ce.unwrap_err().to_string(),
        "TLS: the peer refused our certificate (is it the one the peer pinned?)"
    );
    assert!(le.unwrap_err().to_string().contains("not the pinned"));
}

#[test]
fn a_relay_between_two_tls_sessions_is_caught_by_the_handshake() {
    // M holds a certificate that both A and B accept, and joins A's connection to B's.
    let (a, b, m) = (identity("a"), identity("b"), identity("m"));
    let fm = m.fingerprint();
    let l_b = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr_b = l_b.local_addr().unwrap().to_string();
    let l_m = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr_m = l_m.local_addr().unwrap().to_string();
    let cfg = |role| SessionConfig::new("ecdh", role, 10);
    std::thread::scope(|s| {
        let hb = s.spawn(|| {
            let mut link = transport::accept(&l_b, &tls(&b, fm, 10_000), &mut |_| {}).unwrap();
            handshake(&mut link, &cfg(Role::Sender), &mut rng(2))
        });
        s.spawn(|| {
            let mut from_a =
                transport::accept(&l_m, &tls(&m, a.fingerprint(), 10_000), &mut |_| {}).unwrap();
            let mut to_b =
                transport::connect(&addr_b, &tls(&m, b.fingerprint(), 10_000), &mut |_| {})
                    .unwrap();
            // Hellos, then verdicts, passed on unchanged.
            for _ in 0..2 {
                let x = from_a.recv(MSG, 1 << 16).unwrap();
                to_b.send(MSG, &x).unwrap();
                let y = to_b.recv(MSG, 1 << 16).unwrap();
                from_a.send(MSG, &y).unwrap();
            }
        });
        let mut link = transport::connect(&addr_m, &tls(&a, fm, 10_000), &mut |_| {}).unwrap();
        let ra = handshake(&mut link, &cfg(Role::Receiver), &mut rng(1));
        let rb = hb.join().unwrap();
        for r in [ra, rb] {
            let e = r.unwrap_err();
            assert!(matches!(e, Error::CheckFailed(_)), "{e}");
            assert!(
                e.to_string().contains("relayed between two TLS sessions"),
                "{e}"
            );
        }
    });
}

#[test]
fn the_listener_drops_garbage_silent_and_plain_connections_then_accepts_the_peer() {
    let (a, b) = (identity("a"), identity("b"));
    let mut log = Vec::new();
    let (link, ()) = pair(
        |l| {
            transport::accept(&l, &tls(&a, b.fingerprint(), 20_000), &mut |s| {
                log.push(s.to_owned())
            })
        },
        |addr| {
            // 30 connections that send garbage, 30 that close at once, one that stays silent,
            // one that speaks plain TCP.
            for k in 0..60 {
                let mut s = TcpStream::connect(&addr).unwrap();
                if k % 2 == 0 {
                    let _ = s.write_all(b"GET / HTTP/1.1\r\n\r\n");
                }
            }
            let _silent = TcpStream::connect(&addr).unwrap();
            let plain = LinkConfig::plain(limits(3000));
            assert_eq!(
                transport::connect(&addr, &plain, &mut |_| {})
                    .unwrap_err()
                    .to_string(),
                "TLS: the peer speaks TLS and this side plain TCP (give both sides the same TLS \
                 options)"
            );
            let mut link =
                transport::connect(&addr, &tls(&b, a.fingerprint(), 20_000), &mut |_| {}).unwrap();
            link.send(MSG, b"hi").unwrap();
        },
    );
    let mut link = link.unwrap();
    assert_eq!(link.recv(MSG, 10).unwrap(), b"hi");
    assert!(log.len() >= 20, "{}", log.len());
    assert!(
        log.iter()
            .all(|l| l.starts_with("refused a connection from 127.0.0.1:") && !l.contains('\n'))
    );
    assert!(log[19].ends_with("(further refusals are counted, one line per 1000)"));
}

/// `n` connections to `addr` from the loopback address `from` (all of 127/8 is loopback on
/// Linux), each bound there before connecting; they send nothing. They are opened in bursts of
/// 50 with a pause between: a burst fits the listen queue (128), where an unbroken stream would
/// outpace the accept loop, and the kernel would drop connections, each retried after a second.
fn silent_from(from: &str, addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let local: SocketAddr = format!("{from}:0").parse().unwrap();
    (0..n)
        .map(|k| {
            if k % 50 == 49 {
                std::thread::sleep(Duration::from_millis(20));
            }
            let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            s.bind(&local.into()).unwrap();
            s.connect(&addr.into()).unwrap();
            s.into()
        })
        .collect()
}

/// What a listener saw: `accept_each`'s result, the first link with its address, the log.
type Heard = (
    blindjoin_core::Result<()>,
    Option<(Link, SocketAddr)>,
    Vec<String>,
);

/// Runs `accept_each` on `l` in a thread until the first link passes.
fn listen(l: TcpListener, cfg: LinkConfig) -> std::thread::JoinHandle<Heard> {
    std::thread::spawn(move || {
        let (mut log, mut got) = (Vec::new(), None);
        let r = transport::accept_each(
            &l,
            &cfg,
            &mut |s| log.push(s.to_owned()),
            &mut |link, from| {
                got = Some((link, from));
                ControlFlow::Break(())
            },
        );
        (r, got, log)
    })
}

/// Connects the right peer (`me`, pinning `listener`) to `addr` and checks that the listener's
/// link is this connection: the same address and port, and a frame sent over it arrives.
fn the_peer_gets_in(
    me: &Identity,
    listener: &Identity,
    addr: SocketAddr,
    heard: std::thread::JoinHandle<Heard>,
) -> (Duration, Vec<String>) {
    let start = Instant::now();
    let mut link = transport::connect(
        &addr.to_string(),
        &tls(me, listener.fingerprint(), 30_000),
        &mut |_| {},
    )
    .unwrap();
    let took = start.elapsed();
    let ours = link.socket().unwrap().local_addr().unwrap();
    link.send(MSG, b"in").unwrap();
    let (r, got, log) = heard.join().unwrap();
    r.unwrap();
    let (mut theirs, from) = got.unwrap();
    assert_eq!(from, ours);
    assert_eq!(theirs.recv(MSG, 10).unwrap(), b"in");
    (took, log)
}

/// A listener configuration with the candidate wait of a real run (10 s).
fn listening(me: &Identity, peer: &Identity) -> LinkConfig {
    let mut cfg = tls(me, peer.fingerprint(), 60_000);
    cfg.candidate_wait = Duration::from_secs(10);
    cfg
}

#[test]
fn a_thousand_silent_connections_from_another_address_do_not_keep_the_peer_out() {
    let (a, b) = (identity("a"), identity("b"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let heard = listen(l, listening(&a, &b));
    let silent = silent_from("127.0.0.2", addr, 1000);
    let (took, log) = the_peer_gets_in(&b, &a, addr, heard);
    eprintln!(
        "the peer connected in {:.1} ms while 1000 silent connections from 127.0.0.2 were held",
        took.as_secs_f64() * 1e3
    );
    // 992 of them were pushed out by newer ones from their address (20 lines shown); none
    // delayed the peer, whose address had none pending.
    assert!(log.len() >= 20, "{log:?}");
    let dropped = "dropped: 8 newer connections from 127.0.0.2 are waiting to be checked";
    for (k, line) in log.iter().take(20).enumerate() {
        let port = silent[k].local_addr().unwrap().port();
        let mut want = format!("refused a connection from 127.0.0.2:{port}: {dropped}");
        if k == 19 {
            want.push_str(" (further refusals are counted, one line per 1000)");
        }
        assert_eq!(*line, want);
    }
    assert!(
        log.iter()
            .all(|l| l.starts_with("refused a connection from 127.0.0.2:")),
        "{log:?}"
    );
    drop(silent);
}

#[test]
fn silent_connections_from_the_peers_own_address_are_pushed_out_by_the_peer() {
    let (a, b) = (identity("a"), identity("b"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let heard = listen(l, listening(&a, &b));
    // Opened before the peer connects, from its address: the peer's connection is the newest.
    let silent = silent_from("127.0.0.1", addr, 200);
    let (took, log) = the_peer_gets_in(&b, &a, addr, heard);
    eprintln!(
        "the peer connected in {:.1} ms after 200 silent connections from its own address",
        took.as_secs_f64() * 1e3
    );
    let dropped = "dropped: 8 newer connections from 127.0.0.1 are waiting to be checked";
    assert!(log.len() >= 20, "{log:?}");
    for (k, line) in log.iter().take(19).enumerate() {
        let port = silent[k].local_addr().unwrap().port();
        assert_eq!(
            *line,
            format!("refused a connection from 127.0.0.1:{port}: {dropped}")
        );
    }
    drop(silent);
}

#[test]
fn with_every_slot_taken_the_peer_pushes_out_the_oldest_candidate() {
    // Eight silent connections from each of eight addresses fill the 64 slots; the peer comes
    // from a ninth and evicts the oldest of all.
    let (a, b) = (identity("a"), identity("b"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let heard = listen(l, listening(&a, &b));
    let silent: Vec<TcpStream> = (2..=9)
        .flat_map(|k| silent_from(&format!("127.0.0.{k}"), addr, 8))
        .collect();
    let (_, log) = the_peer_gets_in(&b, &a, addr, heard);
    let oldest = silent[0].local_addr().unwrap();
    assert_eq!(
        log[0],
        format!(
            "refused a connection from {oldest}: dropped: 64 newer connections are waiting to \
             be checked"
        )
    );
    // Only a slow machine (more than 3 s for these connections) shows more: silent ones
    // dropped for want of a first byte.
    assert!(
        log[1..]
            .iter()
            .all(|l| l
                .ends_with("dropped: no byte arrived within 3 s (a blindjoin peer speaks first)")),
        "{log:?}"
    );
    drop(silent);
}

#[test]
fn a_silent_candidate_is_dropped_after_the_first_byte_wait() {
    // One connection sends nothing, another one byte: the first is dropped after 3 s, the
    // second is given until its candidate wait (here cut by the run's deadline, 4.5 s).
    let (a, b) = (identity("a"), identity("b"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut cfg = tls(&a, b.fingerprint(), 4500);
    cfg.candidate_wait = Duration::from_secs(10);
    let heard = listen(l, cfg);
    let silent = TcpStream::connect(addr).unwrap();
    let mut one = TcpStream::connect(addr).unwrap();
    one.write_all(&[0x16]).unwrap();
    let (r, got, log) = heard.join().unwrap();
    assert!(got.is_none());
    let last = "the run's deadline passed while waiting for the TLS handshake";
    assert_eq!(
        log,
        [
            format!(
                "refused a connection from {}: dropped: no byte arrived within 3 s (a blindjoin \
                 peer speaks first)",
                silent.local_addr().unwrap()
            ),
            format!(
                "refused a connection from {}: {last}",
                one.local_addr().unwrap()
            ),
        ]
    );
    match r {
        Err(Error::NoAcceptablePeer {
            refused: 2,
            last: l,
        }) => assert_eq!(l, last),
        other => panic!("expected no acceptable peer, got {other:?}"),
    }
}

#[test]
fn a_plain_listener_names_a_tls_peer() {
    let (a, b) = (identity("a"), identity("b"));
    let mut log = Vec::new();
    let (le, ce) = pair(
        |l| {
            transport::accept(&l, &LinkConfig::plain(limits(1500)), &mut |s| {
                log.push(s.to_owned())
            })
        },
        |addr| transport::connect(&addr, &tls(&b, a.fingerprint(), 1500), &mut |_| {}),
    );
    assert!(le.is_err());
    // The listener answers with its plain link hello before it closes: the connector's error
    // is final, not a retry.
    assert_eq!(
        ce.unwrap_err().to_string(),
        "TLS: the peer does not speak TLS 1.3 (is it running with --plaintext?)"
    );
    assert!(
        log[0].ends_with("TLS: the peer speaks TLS and this side plain TCP (give both sides the same TLS options)"),
        "{log:?}"
    );
}

#[test]
fn a_plain_connector_names_a_tls_listener() {
    // The TLS listener answers the plain link hello with an alert record (15 03 03 ..), which
    // the connector reads as a frame header: it names the mismatch, not a frame length.
    let (a, b) = (identity("a"), identity("b"));
    let mut log = Vec::new();
    let (le, ce) = pair(
        |l| {
            transport::accept(&l, &tls(&a, b.fingerprint(), 1500), &mut |s| {
                log.push(s.to_owned())
            })
        },
        |addr| transport::connect(&addr, &LinkConfig::plain(limits(1500)), &mut |_| {}),
    );
    assert_eq!(
        ce.unwrap_err().to_string(),
        "TLS: the peer speaks TLS and this side plain TCP (give both sides the same TLS options)"
    );
    assert!(le.is_err());
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(
        log[0].ends_with("TLS: the peer does not speak TLS 1.3 (is it running with --plaintext?)"),
        "{log:?}"
    );
}

#[test]
fn a_connector_dropped_before_tls_retries_and_gets_in() {
    // The listening port accepts and closes the first connection (a listener shedding it),
    // then the real listener takes the next one.
    let (a, b) = (identity("a"), identity("b"));
    let mut lines = Vec::new();
    let mut got = None;
    let (link, ()) = pair(
        |l| {
            drop(l.accept().unwrap());
            transport::accept(&l, &tls(&a, b.fingerprint(), 10_000), &mut |_| {})
        },
        |addr| {
            let mut link = transport::connect(&addr, &tls(&b, a.fingerprint(), 10_000), &mut |s| {
                lines.push(s.to_owned())
            })
            .unwrap();
            link.send(MSG, b"again").unwrap();
            got = Some(addr);
        },
    );
    assert_eq!(link.unwrap().recv(MSG, 10).unwrap(), b"again");
    let addr = got.unwrap();
    assert_eq!(
        lines,
        [format!(
            "the listener at {addr} dropped our connection before the link was set up (the peer \
             closed the connection while we waited for the TLS handshake); retrying until the \
             deadline"
        )]
    );
}

#[test]
fn a_connector_ends_soon_when_the_listener_it_reached_stops_listening() {
    // The listening port accepts one connection, closes it and stops listening (a peer that
    // failed): the connector retries for its contact wait, not until its deadline.
    let (a, b) = (identity("a"), identity("b"));
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let fake = std::thread::spawn(move || drop(l.accept().unwrap()));
    let mut cfg = tls(&b, a.fingerprint(), 30_000);
    cfg.contact_wait = Duration::from_secs(1);
    let mut lines = Vec::new();
    let start = Instant::now();
    let e = transport::connect(&addr, &cfg, &mut |s| lines.push(s.to_owned())).unwrap_err();
    let took = start.elapsed();
    fake.join().unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "the peer stopped listening at {addr} after it was reached; it may have failed (see \
             its log)"
        )
    );
    assert!(matches!(e, Error::PeerStopped { .. }), "{e:?}");
    // About the contact wait (1 s), far from the deadline (30 s).
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!(
            "the listener at {addr} dropped our connection before the link was set up"
        )),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with(&format!("nobody accepts connections at {addr} any more (")),
        "{lines:?}"
    );
    assert!(lines[1].ends_with("); retrying for up to 1 s"), "{lines:?}");
}

#[test]
fn a_trickling_peer_is_stopped_by_the_deadline() {
    let (l, addr) = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap().to_string();
        (l, a)
    };
    let start = Instant::now();
    let (r, ()) = pair(
        move |_unused| {
            let (s, _) = l.accept().unwrap();
            let mut ch = blindjoin_core::channel::tcp::TcpChannel::new(
                s,
                Limits::new(Duration::from_millis(1200), Duration::from_millis(400)),
            )
            .unwrap();
            ch.recv("tags", 1 << 20)
        },
        move |_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            // Announce 1 MiB, then one byte every 100 ms: never idle, never done.
            s.write_all(&(1u32 << 20).to_le_bytes()).unwrap();
            for _ in 0..20 {
                if s.write_all(&[1]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        },
    );
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Deadline { during: "tags" }), "{e}");
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[test]
fn fingerprints_parse_as_written_by_keygen_and_openssl() {
    let id = identity("x");
    let f = id.fingerprint();
    let s = f.to_string();
    assert!(s.starts_with("sha256:") && s.len() == 7 + 64);
    assert_eq!(s.parse::<Fingerprint>().unwrap(), f);
    let colons =
        f.0.iter()
            .map(|b| format!("{b:02X}"))
            .collect::<Vec<_>>()
            .join(":");
    assert_eq!(
        format!("SHA256:{colons}").parse::<Fingerprint>().unwrap(),
        f
    );
    assert!("sha256:abcd".parse::<Fingerprint>().is_err());
    assert!("md5:00".parse::<Fingerprint>().is_err());
}
