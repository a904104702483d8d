//! Channels and the handshake: frames round-trip; bad lengths, closed peers, timeouts and every
//! kind of parameter mismatch end in the right error, on both sides where both can see it; a
//! connector dropped before the link hello retries.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_core::Error;
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::tcp::TcpChannel;
use blindjoin_core::channel::{BulkReader, FrameReceiver, FrameSender, recv_msg, send_msg};
use blindjoin_core::transport::{self, LinkConfig};

/// The message name of the frames these tests send.
const MSG: &str = "a test frame";
use blindjoin_core::handshake::{MSG_VERDICT, Role, Session, SessionConfig, handshake};
use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

fn tcp_pair(limits: Limits) -> (TcpChannel, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let raw = TcpStream::connect(addr).unwrap();
    let (s, _) = l.accept().unwrap();
    (TcpChannel::new(s, limits).unwrap(), raw)
}

fn idle(d: Duration) -> Limits {
    Limits::idle_only(d)
}

fn plain() -> LinkConfig {
    LinkConfig::plain(Limits::new(Duration::from_secs(10), Duration::from_secs(5)))
}

/// A listener and a connected peer over plain TCP, both past the link hello.
fn link_pair() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    (l, addr)
}

/// Frame lengths on both sides of the sender's direct-write threshold (16 KiB), small frames
/// between large ones, and one larger than the 256 KiB buffers.
const LENS: &[usize] = &[0, 1, 1000, 16383, 16384, 5, 1 << 17, 3, 1 << 20, 16385];

/// Bytes that differ from position to position and from frame to frame.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 31 + len) as u8).collect()
}

#[test]
fn tcp_frames_round_trip_in_order() {
    let (l, addr) = link_pair();
    let t = std::thread::spawn(move || {
        let mut c = transport::connect(&addr, &plain(), &mut |_| {}).unwrap();
        for &len in LENS {
            c.send(MSG, &pattern(len)).unwrap();
        }
        c.recv("ack", 3).unwrap()
    });
    let mut s = transport::accept(&l, &plain(), &mut |_| {}).unwrap();
    for &len in LENS {
        assert_eq!(
            s.recv("frame", 1 << 20).unwrap(),
            pattern(len),
            "frame of {len} bytes"
        );
    }
    s.send(MSG, b"ok!").unwrap();
    assert_eq!(t.join().unwrap(), b"ok!");
}

#[test]
fn tcp_recv_into_reuses_one_buffer_for_frames_of_every_size() {
    let (l, addr) = link_pair();
    let t = std::thread::spawn(move || {
        let mut c = transport::connect(&addr, &plain(), &mut |_| {}).unwrap();
        for &len in LENS.iter().chain(LENS.iter().rev()) {
            c.send(MSG, &pattern(len)).unwrap();
        }
        c.send(MSG, &[7u8; 40000]).unwrap();
    });
    let mut s = transport::accept(&l, &plain(), &mut |_| {}).unwrap();
    let mut buf = vec![0xffu8; 123];
    for &len in LENS.iter().chain(LENS.iter().rev()) {
        s.recv_into("frame", 1 << 20, &mut buf).unwrap();
        assert_eq!(buf, pattern(len), "frame of {len} bytes");
    }
    // A frame over the caller's bound is refused from its header.
    match s.recv_into("frame", 39999, &mut buf) {
        Err(Error::FrameTooLong {
            len: 40000,
            max: 39999,
            ..
        }) => {}
        other => panic!("expected FrameTooLong, got {other:?}"),
    }
    t.join().unwrap();
}

#[test]
fn tcp_overlong_announced_frame_is_refused_before_reading() {
    let (mut ch, mut raw) = tcp_pair(idle(Duration::from_secs(5)));
    // Announce 4 GiB - 1 and send nothing more: the receiver must not try to allocate or wait.
    raw.write_all(&u32::MAX.to_le_bytes()).unwrap();
    let e = ch.recv("points", 1000).unwrap_err();
    assert!(
        matches!(
            e,
            Error::FrameTooLong {
                len: 4294967295,
                max: 1000,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("points"));
}

#[test]
fn tcp_peer_closing_mid_frame_is_peer_closed() {
    let (mut ch, mut raw) = tcp_pair(idle(Duration::from_secs(5)));
    raw.write_all(&100u32.to_le_bytes()).unwrap();
    raw.write_all(&[7; 10]).unwrap();
    drop(raw);
    let e = ch.recv("tags", 1000).unwrap_err();
    assert!(matches!(e, Error::PeerClosed { during: "tags" }), "{e}");
}

#[test]
fn tcp_silent_peer_times_out() {
    let (mut ch, _raw) = tcp_pair(idle(Duration::from_millis(200)));
    let e = ch.recv("hello message", 1000).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Timeout {
                during: "hello message",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn tcp_connection_refused_is_a_clear_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    // Nobody listens: the connector says so once and retries until the deadline.
    let short = LinkConfig::plain(Limits::new(
        Duration::from_millis(500),
        Duration::from_secs(1),
    ));
    let mut lines = Vec::new();
    let e = transport::connect(&format!("127.0.0.1:{port}"), &short, &mut |l| {
        lines.push(l.to_owned())
    })
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Deadline {
                during: "the peer to accept our connection"
            }
        ),
        "{e}"
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with(&format!(
        "nobody accepts connections at 127.0.0.1:{port} yet"
    )));
    // Nobody connects: the listener ends at its deadline.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let short = LinkConfig::plain(Limits::new(
        Duration::from_millis(100),
        Duration::from_secs(1),
    ));
    let e = transport::accept(&l, &short, &mut |_| {}).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Deadline {
                during: "a peer to connect"
            }
        ),
        "{e}"
    );
}

#[test]
fn a_plain_connector_dropped_before_the_link_hello_retries_and_gets_in() {
    let (l, addr) = link_pair();
    let a = addr.clone();
    let t = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut c = transport::connect(&a, &plain(), &mut |s| lines.push(s.to_owned())).unwrap();
        c.send(MSG, b"again").unwrap();
        lines
    });
    // The first connection is accepted and closed at once, the next one accepted properly.
    drop(l.accept().unwrap());
    let mut s = transport::accept(&l, &plain(), &mut |_| {}).unwrap();
    assert_eq!(s.recv(MSG, 10).unwrap(), b"again");
    let lines = t.join().unwrap();
    assert_eq!(lines.len(), 1, "{lines:?}");
    // Closed or reset, found while sending our link hello or waiting for the listener's.
    let line = &lines[0];
    let prefix =
        format!("the listener at {addr} dropped our connection before the link was set up (the ");
    assert!(line.starts_with(&prefix), "{line}");
    assert!(
        line.ends_with(" link hello); retrying until the deadline")
            || line.ends_with(" link hello (did the peer stop?)); retrying until the deadline"),
        "{line}"
    );
}

#[test]
fn a_listener_answers_a_wrong_link_hello_with_its_own_before_closing() {
    // A connector of another version learns of the mismatch (a final error), not of a dropped
    // connection (which it would retry).
    let (l, addr) = link_pair();
    let t = std::thread::spawn(move || {
        let mut log = Vec::new();
        let short = LinkConfig::plain(Limits::new(
            Duration::from_millis(1500),
            Duration::from_secs(1),
        ));
        let e = transport::accept(&l, &short, &mut |s| log.push(s.to_owned())).unwrap_err();
        (e, log)
    });
    let mut raw = TcpStream::connect(&addr).unwrap();
    raw.write_all(&16u32.to_le_bytes()).unwrap();
    raw.write_all(b"blindjoin/link/9").unwrap();
    let mut answer = Vec::new();
    std::io::Read::read_to_end(&mut raw, &mut answer).unwrap();
    let mut want = 16u32.to_le_bytes().to_vec();
    want.extend_from_slice(transport::LINK_HELLO);
    assert_eq!(answer, want);
    let (e, log) = t.join().unwrap();
    assert!(
        matches!(e, Error::NoAcceptablePeer { refused: 1, .. }),
        "{e}"
    );
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(
        log[0].ends_with(
            "malformed link hello from the peer: the peer is not a blindjoin endpoint of this \
             version (it sent `blindjoin/link/9`)"
        ),
        "{log:?}"
    );
}

#[test]
fn a_burst_of_connectors_from_one_address_all_get_in_and_keep_their_links() {
    // 100 connectors at once from one address: far more than the listener checks at once from
    // one source, so it evicts candidates all along; each evicted connector retries. Every one
    // gets in exactly once, and the link each one holds is the one the listener accepted (a
    // candidate whose check has finished is never evicted).
    const N: usize = 100;
    let (l, addr) = link_pair();
    let cfg = LinkConfig::plain(Limits::new(
        Duration::from_secs(60),
        Duration::from_secs(20),
    ));
    let server_cfg = cfg.clone();
    let server = std::thread::spawn(move || {
        let mut echoes = Vec::new();
        transport::accept_each(&l, &server_cfg, &mut |_| {}, &mut |mut link, _| {
            echoes.push(std::thread::spawn(move || {
                let got = link.recv(MSG, 8).unwrap();
                link.send(MSG, &got).unwrap();
            }));
            if echoes.len() == N {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        })
        .unwrap();
        for e in echoes {
            e.join().unwrap();
        }
    });
    let clients: Vec<_> = (0..N as u64)
        .map(|k| {
            let (addr, cfg) = (addr.clone(), cfg.clone());
            std::thread::spawn(move || {
                let mut c = transport::connect(&addr, &cfg, &mut |_| {}).unwrap();
                c.send(MSG, &k.to_le_bytes()).unwrap();
                c.recv(MSG, 8).unwrap() == k.to_le_bytes()
            })
        })
        .collect();
    let echoed = clients
        .into_iter()
        .filter_map(|c| c.join().unwrap().then_some(()))
        .count();
    assert_eq!(echoed, N);
    server.join().unwrap();
}

#[test]
fn bulk_reader_enforces_whole_elements_and_the_agreed_count() {
    let (mut a, mut b) = blindjoin_core::channel::memory::memory_pair(Duration::from_secs(5));
    a.send(MSG, &[1; 64]).unwrap();
    a.send(MSG, &[2; 32]).unwrap();
    let mut r = BulkReader::new("points", 32, 3);
    assert_eq!(r.next_frame(&mut b).unwrap().unwrap().len(), 64);
    assert_eq!(r.next_frame(&mut b).unwrap().unwrap().len(), 32);
    assert!(r.next_frame(&mut b).unwrap().is_none());

    a.send(MSG, &[1; 33]).unwrap();
    let e = BulkReader::new("points", 32, 3)
        .next_frame(&mut b)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Malformed {
                message: "points",
                ..
            }
        ),
        "{e}"
    );
    a.send(MSG, &[1; 128]).unwrap();
    let e = BulkReader::new("points", 32, 3)
        .next_frame(&mut b)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::FrameTooLong {
                len: 128,
                max: 96,
                ..
            }
        ),
        "{e}"
    );
    a.send(MSG, &[]).unwrap();
    let e = BulkReader::new("points", 32, 3)
        .next_frame(&mut b)
        .unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
}

#[test]
fn control_messages_reject_trailing_bytes() {
    let (mut a, mut b) = blindjoin_core::channel::memory::memory_pair(Duration::from_secs(5));
    send_msg(&mut a, MSG, &(7u32, 9u64)).unwrap();
    assert_eq!(recv_msg::<(u32, u64)>(&mut b, "pair", 100).unwrap(), (7, 9));
    a.send(MSG, &[7, 9, 0]).unwrap();
    let e = recv_msg::<(u32, u64)>(&mut b, "pair", 100).unwrap_err();
    assert!(e.to_string().contains("trailing"), "{e}");
}

fn cfg(role: Role, n: u64) -> SessionConfig {
    let mut c = SessionConfig::new("ecdh", role, n);
    c.params = vec![("group".into(), "ristretto255".into())];
    c
}

fn pair(
    r: SessionConfig,
    s: SessionConfig,
) -> (
    blindjoin_core::Result<Session>,
    blindjoin_core::Result<Session>,
) {
    run_two_party(
        move |ch| handshake(ch, &r, &mut rng(1)),
        move |ch| handshake(ch, &s, &mut rng(2)),
    )
}

fn mismatch(e: Error) -> (String, String, String) {
    match e {
        Error::ParamMismatch { field, ours, peer } => (field, ours, peer),
        other => panic!("expected a parameter mismatch, got {other}"),
    }
}

#[test]
fn matching_handshake_agrees_on_sizes_and_session_id() {
    let (r, s) = pair(cfg(Role::Receiver, 10), cfg(Role::Sender, 20));
    let (r, s) = (r.unwrap(), s.unwrap());
    assert_eq!(r.id, s.id);
    assert_eq!((r.receiver_size, r.sender_size), (10, 20));
    assert_eq!((s.receiver_size, s.sender_size), (10, 20));
    assert_eq!((r.peer_size(), s.peer_size()), (20, 10));
    // Fresh nonces give a fresh session id.
    let (r2, _) = run_two_party(
        |ch| handshake(ch, &cfg(Role::Receiver, 10), &mut rng(3)),
        |ch| handshake(ch, &cfg(Role::Sender, 20), &mut rng(2)),
    );
    assert_ne!(r2.unwrap().id, r.id);
}

#[test]
fn every_field_mismatch_is_named_on_both_sides_with_both_values() {
    type Edit = fn(&mut SessionConfig);
    let cases: [(&str, Edit, &str, &str); 5] = [
        ("protocol", |c| c.protocol = "naive".into(), "ecdh", "naive"),
        ("kappa", |c| c.kappa = 256, "128", "256"),
        ("lambda", |c| c.lambda = 60, "40", "60"),
        (
            "group",
            |c| c.params[0].1 = "p256".into(),
            "ristretto255",
            "p256",
        ),
        (
            "tag_bits",
            |c| c.params.push(("tag_bits".into(), "72".into())),
            "<absent>",
            "72",
        ),
    ];
    for (field, edit, base, changed) in cases {
        let mut s = cfg(Role::Sender, 5);
        edit(&mut s);
        let (re, se) = pair(cfg(Role::Receiver, 5), s);
        assert_eq!(
            mismatch(re.unwrap_err()),
            (field.into(), base.into(), changed.into())
        );
        assert_eq!(
            mismatch(se.unwrap_err()),
            (field.into(), changed.into(), base.into())
        );
    }
}

#[test]
fn peer_text_in_errors_is_escaped() {
    // A sender whose protocol name, parameter name or value carries a line break, a terminal
    // escape sequence and a right-to-left override: the receiver's error shows them escaped, on
    // one line.
    let evil = "x\n\u{1b}[31mFAKE\u{202e}";
    let check = |e: &Error| {
        let e = e.to_string();
        assert!(!e.contains(['\n', '\u{1b}', '\u{202e}']), "{e:?}");
        assert!(e.contains("x\\u{a}\\u{1b}[31mFAKE\\u{202e}"), "{e:?}");
    };
    for edit in [
        |c: &mut SessionConfig, e: &str| c.protocol = e.into(),
        |c: &mut SessionConfig, e: &str| c.params[0].1 = e.into(),
        |c: &mut SessionConfig, e: &str| c.params.push((e.into(), "1".into())),
    ] {
        let mut s = cfg(Role::Sender, 5);
        edit(&mut s, evil);
        let (re, _) = pair(cfg(Role::Receiver, 5), s);
        check(&re.unwrap_err());
    }
    // A verdict that refuses with such a reason.
    let mut verdict = vec![1u8, evil.len() as u8];
    verdict.extend_from_slice(evil.as_bytes());
    verdict.extend_from_slice(&[0; 32]);
    let (re, _) = run_two_party(
        |ch| handshake(ch, &cfg(Role::Receiver, 5), &mut rng(1)),
        |ch| {
            let mut t = Tamper::new(ch, Target::first(MSG_VERDICT), Attack::Replace(verdict));
            handshake(&mut t, &cfg(Role::Sender, 5), &mut rng(2))
        },
    );
    let e = re.unwrap_err();
    assert!(matches!(e, Error::PeerRefused(_)), "{e}");
    check(&e);
}

#[test]
fn same_roles_and_unacceptable_sizes_are_refused() {
    let (a, b) = pair(cfg(Role::Sender, 5), cfg(Role::Sender, 5));
    assert_eq!(mismatch(a.unwrap_err()).0, "role");
    assert_eq!(mismatch(b.unwrap_err()).0, "role");

    let mut r = cfg(Role::Receiver, 5);
    r.expected_peer_set_size = Some(6);
    let (re, _) = pair(r, cfg(Role::Sender, 5));
    assert_eq!(
        mismatch(re.unwrap_err()),
        ("sender set size".into(), "6".into(), "5".into())
    );

    let mut s = cfg(Role::Sender, 5);
    s.max_peer_set_size = 1000;
    let (_, se) = pair(cfg(Role::Receiver, 1001), s);
    assert_eq!(
        mismatch(se.unwrap_err()),
        (
            "receiver set size".into(),
            "at most 1000".into(),
            "1001".into()
        )
    );
}
