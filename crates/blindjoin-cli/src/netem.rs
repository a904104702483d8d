//! Network profiles, and the user-space relay that imposes one on a loopback connection
//! (`blindjoin bench --network NAME|RATE/RTT`).
//!
//! The papers measure their protocols on shaped links: PSZ14 Tab. 7 on five networks (Gigabit
//! LAN to HSDPA), CM20 Tab. 2 at seven bandwidths with 80 ms RTT, RR17 on a 40 Mbit/s, 80 ms
//! WAN. They shaped with `tc netem`, which this machine's kernel lacks, so the shaping happens in
//! user space: the benchmark's sender connects to a [`ShapedRelay`] instead of the receiver, and
//! the relay forwards each direction through a model of a link:
//!
//! - **Bandwidth** (each direction on its own, as PSZ14 used "the same bandwidth for up- and
//!   downlink"): the bytes read from one side leave the link one after the other at the
//!   profile's rate. A chunk of n bytes that arrives at t starts when the link is free, at
//!   max(t, the previous chunk's end), and ends n / rate later: a token bucket without a burst.
//!   Chunks are about a millisecond of the rate (1,500 bytes to 64 KiB), like a NIC's frames.
//! - **Delay**: a chunk is handed to the other side half the round-trip time after it left
//!   the link, by a writer thread that sleeps until that instant (a timed queue).
//! - **Queue**: the link's queue holds at most [`MAX_QUEUE`] of transmission time; a reader
//!   that gets ahead waits, so the sending process feels back-pressure through TCP and the
//!   relay's memory stays at rate × (queue + delay).
//!
//! Deadlines are absolute instants on the model's clock, so a late wake-up of one chunk does not
//! delay the next. The relay's threads run in the benchmark's process, not in the parties'.
//!
//! **Scheduling.** On a machine with as many cores as computing parties, a relay thread that
//! is woken for a chunk waits for a core behind the parties' computation, and a protocol with
//! many small flights (GMW's AND layers) pays that wait in every flight: 3 to 7 ms per flight
//! through the relay, where the modelled link takes 0.2 ms. The relay's threads therefore ask
//! for the real-time policy `SCHED_FIFO` (Linux; needs root or `CAP_SYS_NICE`), which lets them
//! preempt the parties the moment a chunk is due; they only ever block on a socket or sleep,
//! so they never hold a core. Where the policy is refused the relay runs at normal priority,
//! and [`realtime`] says so for the report.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// The longest the link's queue may hold (in transmission time) before the relay stops reading.
pub const MAX_QUEUE: Duration = Duration::from_millis(50);

static REALTIME_REFUSED: AtomicBool = AtomicBool::new(false);

/// Puts the calling thread under `SCHED_FIFO`, or records that the system refused.
fn raise_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 10 };
        // SAFETY: `param` is a valid `sched_param`; pid 0 is the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        if rc != 0 {
            REALTIME_REFUSED.store(true, Ordering::Relaxed);
        }
    }
    #[cfg(not(target_os = "linux"))]
    REALTIME_REFUSED.store(true, Ordering::Relaxed);
}

/// Whether every relay thread so far ran under the real-time policy.
pub fn realtime() -> bool {
    !REALTIME_REFUSED.load(Ordering::Relaxed)
}

/// A network: bandwidth per direction and round-trip time.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Profile {
    /// The profile's name (`wan-inter`), or the `RATE/RTT` it was given as.
    pub name: String,
    /// Bits per second in each direction.
    pub rate_bits: f64,
    /// Round-trip time: twice the one-way delay.
    #[serde(serialize_with = "millis")]
    pub rtt: Duration,
    /// Where the profile comes from.
    pub source: &'static str,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// The named profiles: name, Mbit/s per direction, RTT in ms, source.
pub const PROFILES: &[(&str, f64, f64, &str)] = &[
    (
        "lan",
        1000.0,
        0.4,
        "PSZ14 Tab. 7: Gigabit LAN, 1,000 Mbit/s, 0.2 ms one way",
    ),
    (
        "wifi",
        54.0,
        0.4,
        "PSZ14 Tab. 7: 802.11g WiFi, 54 Mbit/s, 0.2 ms one way",
    ),
    (
        "wan-intra",
        25.0,
        20.0,
        "PSZ14 Tab. 7: intra-country WAN, 25 Mbit/s, 10 ms one way",
    ),
    (
        "wan-inter",
        10.0,
        100.0,
        "PSZ14 Tab. 7: inter-country WAN, 10 Mbit/s, 50 ms one way",
    ),
    (
        "hsdpa",
        3.6,
        1000.0,
        "PSZ14 Tab. 7: mobile Internet (HSDPA), 3.6 Mbit/s, 500 ms one way",
    ),
    (
        "cm20-150",
        150.0,
        80.0,
        "CM20 Tab. 2: 150 Mbit/s, 80 ms RTT",
    ),
    (
        "cm20-100",
        100.0,
        80.0,
        "CM20 Tab. 2: 100 Mbit/s, 80 ms RTT",
    ),
    ("cm20-80", 80.0, 80.0, "CM20 Tab. 2: 80 Mbit/s, 80 ms RTT"),
    ("cm20-50", 50.0, 80.0, "CM20 Tab. 2: 50 Mbit/s, 80 ms RTT"),
    ("cm20-30", 30.0, 80.0, "CM20 Tab. 2: 30 Mbit/s, 80 ms RTT"),
    ("cm20-10", 10.0, 80.0, "CM20 Tab. 2: 10 Mbit/s, 80 ms RTT"),
    ("cm20-1", 1.0, 80.0, "CM20 Tab. 2: 1 Mbit/s, 80 ms RTT"),
    ("rr17-wan", 40.0, 80.0, "RR17 §7: WAN, 40 Mbit/s, 80 ms RTT"),
];

impl Profile {
    /// Bytes per second in each direction.
    pub fn rate_bytes(&self) -> f64 {
        self.rate_bits / 8.0
    }

    /// The one-way delay.
    pub fn one_way(&self) -> Duration {
        self.rtt / 2
    }

    /// One line saying how the link is shaped, for reports.
    pub fn describe(&self) -> String {
        format!(
            "{}: {} per direction, {} ms RTT; shaped in user space by a relay (token bucket per \
             direction, timed delivery queue)",
            self.name,
            rate_text(self.rate_bits),
            trim_float(self.rtt.as_secs_f64() * 1e3)
        )
    }

    /// A chunk: about a millisecond of the rate, 1,500 bytes to 64 KiB.
    fn chunk(&self) -> usize {
        ((self.rate_bytes() / 1000.0) as usize).clamp(1500, 64 << 10)
    }
}

fn trim_float(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn rate_text(bits: f64) -> String {
    if bits >= 1e9 {
        format!("{} Gbit/s", trim_float(bits / 1e9))
    } else if bits >= 1e6 {
        format!("{} Mbit/s", trim_float(bits / 1e6))
    } else {
        format!("{} kbit/s", trim_float(bits / 1e3))
    }
}

/// Parses `--network`: a profile's name ([`PROFILES`]) or `RATE/RTT` such as `50mbit/80ms`,
/// `1gbit/0.4ms` or `512kbit/1s`.
pub fn parse_profile(s: &str) -> Result<Profile, String> {
    let t = s.trim().to_ascii_lowercase();
    if let Some(&(name, mbit, rtt_ms, source)) = PROFILES.iter().find(|p| p.0 == t) {
        return Ok(Profile {
            name: name.to_owned(),
            rate_bits: mbit * 1e6,
            rtt: Duration::from_secs_f64(rtt_ms / 1e3),
            source,
        });
    }
    let names: Vec<&str> = PROFILES.iter().map(|p| p.0).collect();
    let bad = || {
        format!(
            "`{s}` is not a network: use one of {} or RATE/RTT such as 50mbit/80ms",
            names.join(", ")
        )
    };
    let (rate, rtt) = t.split_once('/').ok_or_else(bad)?;
    let number = |x: &str, suffix: &str| -> Option<f64> {
        x.strip_suffix(suffix)?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let rate_bits = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)]
        .iter()
        .find_map(|&(suf, mul)| number(rate, suf).map(|v| v * mul))
        .filter(|&r| r >= 8e3)
        .ok_or_else(bad)?;
    let rtt_secs = number(rtt, "ms")
        .map(|v| v / 1e3)
        .or_else(|| number(rtt, "s"))
        .filter(|&v| v <= 60.0)
        .ok_or_else(bad)?;
    Ok(Profile {
        name: t.clone(),
        rate_bits,
        rtt: Duration::from_secs_f64(rtt_secs),
        source: "given on the command line",
    })
}

/// A relay on a loopback port that forwards every connection to `upstream` through the
/// profile's link (see the module doc). Dropping it stops accepting; connections already
/// relayed run until either side closes.
pub struct ShapedRelay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl ShapedRelay {
    /// Listens on an ephemeral loopback port and relays to `upstream`.
    pub fn start(upstream: SocketAddr, profile: &Profile) -> std::io::Result<ShapedRelay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let profile = profile.clone();
        thread::Builder::new()
            .name("netem-accept".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if stop_flag.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(down) = conn else { continue };
                    let Ok(up) = TcpStream::connect(upstream) else {
                        let _ = down.shutdown(Shutdown::Both);
                        continue;
                    };
                    let _ = relay_pair(down, up, &profile);
                }
            })?;
        Ok(ShapedRelay { addr, stop })
    }

    /// The address to connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ShapedRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Starts both directions between `a` and `b`.
fn relay_pair(a: TcpStream, b: TcpStream, profile: &Profile) -> std::io::Result<()> {
    a.set_nodelay(true)?;
    b.set_nodelay(true)?;
    for (from, to) in [(a.try_clone()?, b.try_clone()?), (b, a)] {
        pump(from, to, profile)?;
    }
    Ok(())
}

/// One direction: a reader thread that puts chunks on the link model and a writer thread that
/// delivers them at their time.
fn pump(mut from: TcpStream, mut to: TcpStream, profile: &Profile) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let rate = profile.rate_bytes();
    let one_way = profile.one_way();
    let chunk = profile.chunk();
    let (from_r, to_r) = (from.try_clone()?, to.try_clone()?);
    thread::Builder::new()
        .name("netem-read".into())
        .spawn(move || {
            raise_priority();
            let mut free = Instant::now();
            loop {
                let mut buf = vec![0u8; chunk];
                let n = match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                buf.truncate(n);
                let now = Instant::now();
                let end = free.max(now) + Duration::from_secs_f64(n as f64 / rate);
                free = end;
                if tx.send((end + one_way, buf)).is_err() {
                    break;
                }
                if let Some(ahead) = end.checked_duration_since(now + MAX_QUEUE) {
                    thread::sleep(ahead);
                }
            }
            // Dropping `tx` lets the writer finish the queue and close its side.
        })?;
    thread::Builder::new()
        .name("netem-write".into())
        .spawn(move || {
            raise_priority();
            for (at, buf) in rx {
                if let Some(wait) = at.checked_duration_since(Instant::now()) {
                    thread::sleep(wait);
                }
                if to.write_all(&buf).is_err() {
                    // The far side is gone: stop reading from the near one too.
                    let _ = from_r.shutdown(Shutdown::Both);
                    return;
                }
            }
            let _ = to_r.shutdown(Shutdown::Write);
        })?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_by_name_and_by_rate_and_rtt() {
        let p = parse_profile("wan-inter").unwrap();
        assert_eq!((p.rate_bits, p.rtt), (10e6, Duration::from_millis(100)));
        let p = parse_profile("50mbit/80ms").unwrap();
        assert_eq!((p.rate_bits, p.rtt), (50e6, Duration::from_millis(80)));
        let p = parse_profile("1Gbit/0.4ms").unwrap();
        assert_eq!(p.rate_bits, 1e9);
        assert_eq!(p.rtt, Duration::from_micros(400));
        let p = parse_profile("512kbit/1s").unwrap();
        assert_eq!((p.rate_bits, p.rtt), (512e3, Duration::from_secs(1)));
        for bad in [
            "fast",
            "50/80ms",
            "50mbit/80",
            "50mbit",
            "-1mbit/1ms",
            "1kbit/1ms",
        ] {
            let e = parse_profile(bad).unwrap_err();
            assert!(e.contains("is not a network"), "{bad}: {e}");
        }
        assert_eq!(
            parse_profile("cm20-50").unwrap().describe(),
            "cm20-50: 50 Mbit/s per direction, 80 ms RTT; shaped in user space by a relay \
             (token bucket per direction, timed delivery queue)"
        );
    }
}
