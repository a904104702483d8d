//! Redis memory per label of the server-aided PSI server's `RedisStore`: `used_memory` of
//! `INFO memory` before and after storing two parties' random sorted labels, and after each
//! step of the intersection; with the time of each step.
//!
//! ```sh
//! redis-server --port 6390 --save '' --appendonly no &
//! cargo run --release -p blindjoin-psi --features redis-store --example redis_memory -- \
//!     redis://127.0.0.1:6390 1000000 10
//! ```
//!
//! Arguments: the Redis URL (the database must be empty: the numbers are the whole server's),
//! labels per party (default 10^6), label length in bytes (default 10). Party 1's labels go
//! into a set and a sequence, party 2's into a sequence only; half of party 2's labels are
//! party 1's. Memory is read once Redis has freed what `UNLINK` handed its background thread.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_psi::protocols::server_aided::redis_store::RedisStore;
use blindjoin_psi::protocols::server_aided::store::Store;
use std::time::{Duration, Instant};

/// A field of `INFO memory`.
fn memory_info(url: &str, field: &str) -> u64 {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let info: String = redis::cmd("INFO").arg("memory").query(&mut conn).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// `used_memory` once the objects given to `UNLINK` are freed.
fn used_memory(url: &str) -> u64 {
    while memory_info(url, "lazyfree_pending_objects") > 0 {
        std::thread::sleep(Duration::from_millis(10));
    }
    memory_info(url, "used_memory")
}

fn reset_peak(url: &str) {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query::<()>(&mut conn)
        .unwrap();
}

/// `count` distinct random labels of `len` bytes, sorted; every second one from `shared`.
fn labels(count: usize, len: usize, seed: u64, shared: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out: Vec<Vec<u8>> = (0..count)
        .map(|k| match shared.get(k) {
            Some(l) if k % 2 == 0 => l.clone(),
            _ => (0..len).map(|_| next() as u8).collect(),
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .map_or("redis://127.0.0.1:6390", String::as_str);
    let count: usize = args.get(1).map_or(1_000_000, |a| a.parse().unwrap());
    let len: usize = args.get(2).map_or(10, |a| a.parse().unwrap());
    let store = RedisStore::connect(url, Duration::from_secs(3600)).unwrap();
    let p1 = labels(count, len, 1, &[]);
    let p2 = labels(count, len, 2, &p1);
    let base = used_memory(url);
    println!(
        "{} and {} labels of {len} bytes; used_memory {base} B before",
        p1.len(),
        p2.len()
    );
    let mut last = base;
    let mut report = |what: &str, labels: usize, t: Instant| {
        let now = used_memory(url);
        let delta = now as i64 - last as i64;
        println!(
            "{what}: {:.2} s, used_memory {now} B ({delta:+} B, {:+.1} B per label)",
            t.elapsed().as_secs_f64(),
            delta as f64 / labels as f64
        );
        last = now;
    };
    for (party, set) in [(1u32, &p1), (2, &p2)] {
        let t = Instant::now();
        let mut w = store.writer("m", party, len, set.len() as u64).unwrap();
        for frame in set.chunks(1 << 16) {
            w.write(&frame.concat()).unwrap();
        }
        w.finish().unwrap();
        let what = if party == 1 {
            "party 1 stored (set + sequence)"
        } else {
            "party 2 stored (sequence only)"
        };
        report(what, set.len(), t);
    }
    reset_peak(url);
    let t = Instant::now();
    let bits = store
        .intersect("m", len, &[p1.len() as u64, p2.len() as u64])
        .unwrap();
    let matches: u32 = bits[1].iter().map(|b| b.count_ones()).sum();
    let peak = memory_info(url, "used_memory_peak");
    report(
        &format!("intersected ({matches} matches; party 1's set dropped)"),
        p1.len(),
        t,
    );
    println!(
        "peak during the intersection: used_memory {peak} B ({:+} B over the base, {:.1} B per label of party 1)",
        peak as i64 - base as i64,
        (peak as i64 - base as i64) as f64 / p1.len() as f64
    );
    let t = Instant::now();
    store.remove("m");
    report("removed", p1.len() + p2.len(), t);
}
