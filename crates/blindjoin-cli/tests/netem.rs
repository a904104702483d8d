//! The shaped link of `bench --network`, measured: for every named profile, the throughput of
//! each direction while both carry data at once is within 5 % of the profile's rate, and the
//! round-trip time of a small message is within 5 % (or 1 ms) of the profile's RTT.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_cli::netem::{PROFILES, Profile, ShapedRelay, parse_profile};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

/// Reads exactly `n` bytes; returns the instants of the first and the last read and the size
/// of the first read.
fn read_timed(s: &mut TcpStream, n: usize) -> (Instant, Instant, usize) {
    let mut buf = vec![0u8; 256 << 10];
    let (mut got, mut first, mut first_len) = (0, None, 0);
    let mut last = Instant::now();
    while got < n {
        let k = s.read(&mut buf[..(n - got).min(256 << 10)]).unwrap();
        assert!(k > 0, "the relay closed early");
        last = Instant::now();
        if first.is_none() {
            first = Some(last);
            first_len = k;
        }
        got += k;
    }
    (first.unwrap(), last, first_len)
}

fn write_all(s: &mut TcpStream, n: usize) {
    let block = vec![7u8; 64 << 10];
    let mut left = n;
    while left > 0 {
        let k = left.min(block.len());
        s.write_all(&block[..k]).unwrap();
        left -= k;
    }
}

/// Bytes per second of a timed read of `n` bytes.
fn rate_of((first, last, first_len): (Instant, Instant, usize), n: usize) -> f64 {
    (n - first_len) as f64 / last.duration_since(first).as_secs_f64()
}

/// Sends `seconds` of the rate each way at once through a relay, then ping-pongs one byte;
/// returns (rate forward, rate backward, median RTT).
fn measure(p: &Profile, seconds: f64, pings: usize) -> (f64, f64, Duration) {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay = ShapedRelay::start(server.local_addr().unwrap(), p).unwrap();
    let n = (p.rate_bytes() * seconds) as usize;
    let mut client = TcpStream::connect(relay.addr()).unwrap();
    client.set_nodelay(true).unwrap();
    let (mut far, _) = server.accept().unwrap();
    far.set_nodelay(true).unwrap();

    let mut far_w = far.try_clone().unwrap();
    let mut client_w = client.try_clone().unwrap();
    let w1 = thread::spawn(move || write_all(&mut client_w, n));
    let w2 = thread::spawn(move || write_all(&mut far_w, n));
    let mut far_r = far.try_clone().unwrap();
    let forward = thread::spawn(move || read_timed(&mut far_r, n));
    let backward = read_timed(&mut client, n);
    let forward = forward.join().unwrap();
    w1.join().unwrap();
    w2.join().unwrap();

    let mut rtts = Vec::new();
    let mut byte = [0u8; 1];
    for _ in 0..pings {
        let t = Instant::now();
        client.write_all(&[1]).unwrap();
        far.read_exact(&mut byte).unwrap();
        far.write_all(&[2]).unwrap();
        client.read_exact(&mut byte).unwrap();
        rtts.push(t.elapsed());
    }
    rtts.sort();
    (
        rate_of(forward, n),
        rate_of(backward, n),
        rtts[rtts.len() / 2],
    )
}

fn check(p: &Profile, (fwd, bwd, rtt): (f64, f64, Duration)) {
    eprintln!(
        "{}: {:.3} {:.3} Mbit/s, RTT {:.3} ms",
        p.name,
        fwd * 8e-6,
        bwd * 8e-6,
        rtt.as_secs_f64() * 1e3
    );
    let want = p.rate_bytes();
    for (dir, got) in [("forward", fwd), ("backward", bwd)] {
        assert!(
            (got / want - 1.0).abs() <= 0.05,
            "{}: {dir} {:.3} Mbit/s against {:.3}",
            p.name,
            got * 8e-6,
            want * 8e-6
        );
    }
    let (got, set) = (rtt.as_secs_f64(), p.rtt.as_secs_f64());
    assert!(
        (got - set).abs() <= (0.05 * set).max(1e-3),
        "{}: RTT {:.3} ms against {:.3} ms",
        p.name,
        got * 1e3,
        set * 1e3
    );
}

#[test]
fn every_profile_holds_its_rate_and_rtt_both_ways_at_once() {
    let profiles: Vec<Profile> = PROFILES
        .iter()
        .map(|p| parse_profile(p.0).unwrap())
        .collect();
    // The slow links need little CPU and run together; the fast ones alone.
    let (fast, slow): (Vec<&Profile>, Vec<&Profile>) =
        profiles.iter().partition(|p| p.rate_bits > 100e6);
    thread::scope(|s| {
        let runs: Vec<_> = slow
            .iter()
            .map(|&p| {
                let pings = if p.rtt >= Duration::from_millis(500) {
                    3
                } else {
                    7
                };
                s.spawn(move || (p, measure(p, 2.0, pings)))
            })
            .collect();
        for r in runs {
            let (p, m) = r.join().unwrap();
            check(p, m);
        }
    });
    for p in fast {
        check(p, measure(p, 1.0, 15));
    }
}
