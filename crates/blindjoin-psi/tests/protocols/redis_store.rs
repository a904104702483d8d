//! `RedisStore` against a real `redis-server` (each test starts its own on a free loopback port
//! and stops it at the end): the same bit vectors as `MemoryStore`, a whole `kmrs_semi` run on a
//! `Server` over Redis, no key left after a run or `remove`, every key with a time to live.
//!
//! `redis-server` must be on PATH (`bash scripts/test.sh` installs it on Debian).

use crate::server_aided::{expected, quick, raw_submit, refusal_after_waiting, run_clients, sized};
use blindjoin_core::Error;
use blindjoin_core::channel::FrameSender;
use blindjoin_psi::protocols::server_aided::redis_store::{
    LABELS_PER_COMMAND, RedisStore, segment_labels,
};
use blindjoin_psi::protocols::server_aided::server::Server;
use blindjoin_psi::protocols::server_aided::store::{MemoryStore, Store};
use blindjoin_psi::protocols::server_aided::wire::{MSG_LABELS, Status};
use blindjoin_testkit::{oracle, sets_with_overlap};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A `redis-server` of this test's own (see `blindjoin_testkit::redis`), with the store's
/// view of it.
struct RedisServer(blindjoin_testkit::redis::RedisServer);

impl RedisServer {
    fn start() -> RedisServer {
        RedisServer(blindjoin_testkit::redis::RedisServer::start().unwrap())
    }

    fn url(&self) -> String {
        self.0.url()
    }

    fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    fn store(&self, ttl: Duration) -> RedisStore {
        RedisStore::connect(&self.url(), ttl).unwrap()
    }

    /// Every key in the server, sorted.
    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut self.conn()).unwrap();
        keys.sort();
        keys
    }

    fn dbsize(&self) -> u64 {
        redis::cmd("DBSIZE").query(&mut self.conn()).unwrap()
    }
}

const HOUR: Duration = Duration::from_secs(3600);

struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn label(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// `parties` sorted label sets of `len`-byte labels: `shared` labels in all, each set with up to
/// `own` more (some shared by two sets only); the smallest and the largest possible label in
/// all sets when `ends`.
fn label_sets(
    rng: &mut Xorshift,
    parties: usize,
    len: usize,
    shared: usize,
    own: usize,
    ends: bool,
) -> Vec<Vec<Vec<u8>>> {
    let common: Vec<Vec<u8>> = (0..shared).map(|_| rng.label(len)).collect();
    let pairs: Vec<Vec<u8>> = (0..own / 2).map(|_| rng.label(len)).collect();
    (0..parties)
        .map(|p| {
            let mut s: BTreeSet<Vec<u8>> = common.iter().cloned().collect();
            let mine = rng.below(own as u64 + 1);
            s.extend((0..mine).map(|_| rng.label(len)));
            // Labels in this set and the next one.
            s.extend(pairs.iter().skip(p % 2).step_by(2).cloned());
            if ends {
                s.insert(vec![0; len]);
                s.insert(vec![0xff; len]);
            }
            s.into_iter().collect()
        })
        .collect()
}

/// Writes every party's labels into `store` for `run`, in frames of random sizes up to
/// `max_frame` labels.
fn store_all(
    store: &dyn Store,
    run: &str,
    sets: &[Vec<Vec<u8>>],
    max_frame: u64,
    rng: &mut Xorshift,
) {
    for (p, set) in sets.iter().enumerate() {
        let len = set.first().map_or(8, Vec::len);
        let mut w = store
            .writer(run, p as u32 + 1, len, set.len() as u64)
            .unwrap();
        let mut rest = set.as_slice();
        while !rest.is_empty() {
            let n = (1 + rng.below(max_frame) as usize).min(rest.len());
            w.write(&rest[..n].concat()).unwrap();
            rest = &rest[n..];
        }
        w.finish().unwrap();
    }
}

/// The bit vectors of `sets` from `store` (written in random frames first).
fn bits_of(
    store: &dyn Store,
    run: &str,
    len: usize,
    sets: &[Vec<Vec<u8>>],
    max_frame: u64,
    rng: &mut Xorshift,
) -> Vec<Vec<u8>> {
    store_all(store, run, sets, max_frame, rng);
    let counts: Vec<u64> = sets.iter().map(|s| s.len() as u64).collect();
    store.intersect(run, len, &counts).unwrap()
}

/// Labels every set holds.
fn common_count(sets: &[Vec<Vec<u8>>]) -> u64 {
    let all: Vec<BTreeSet<&Vec<u8>>> = sets.iter().map(|s| s.iter().collect()).collect();
    sets[0]
        .iter()
        .filter(|l| all.iter().all(|s| s.contains(l)))
        .count() as u64
}

fn ones(bits: &[u8]) -> u64 {
    bits.iter().map(|b| u64::from(b.count_ones())).sum()
}

#[test]
fn redis_and_memory_give_the_same_bit_vectors() {
    let redis = RedisServer::start();
    let store = redis.store(HOUR);
    let memory = MemoryStore::new();
    let mut rng = Xorshift(0x2545_f491_4f6c_dd1d);
    let mut case = 0;
    for len in 5..=16 {
        for parties in [2, 3] {
            for (shared, own, ends) in [
                (0, 0, false),
                (0, 30, false),
                (1, 0, false),
                (5, 40, true),
                (60, 20, false),
                (0, 0, true),
            ] {
                let mut sets = label_sets(&mut rng, parties, len, shared, own, ends);
                // Now and then one party has no label at all.
                if case % 5 == 4 {
                    sets[case % parties].clear();
                }
                let run = format!("same-{case}");
                let want = bits_of(&memory, &run, len, &sets, 50, &mut rng);
                let got = bits_of(&store, &run, len, &sets, 50, &mut rng);
                assert_eq!(got, want, "len {len}, {parties} parties, case {case}");
                let matches = common_count(&sets);
                for b in &got {
                    assert_eq!(ones(b), matches, "case {case}");
                }
                if ends && sets.iter().all(|s| !s.is_empty()) {
                    // The first and the last label of every set match.
                    for (p, b) in got.iter().enumerate() {
                        let last = sets[p].len() - 1;
                        assert_eq!(b[0] & 1, 1, "case {case}");
                        assert_eq!(b[last / 8] >> (last % 8) & 1, 1, "case {case}");
                    }
                }
                store.remove(&run);
                memory.remove(&run);
                case += 1;
            }
        }
    }
    assert_eq!(case, 144);
    assert_eq!(redis.dbsize(), 0);
}

#[test]
fn redis_matches_memory_on_a_hundred_thousand_labels_in_many_segments() {
    let redis = RedisServer::start();
    let store = redis.store(HOUR);
    let memory = MemoryStore::new();
    let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
    let len = 16;
    let sets = label_sets(&mut rng, 3, len, 125_000, 40_000, true);
    let per = segment_labels(len) as u64;
    // Several sequence keys and many SADD and SMISMEMBER commands per party.
    assert_eq!(per, 65_532);
    assert!(
        sets.iter().all(|s| s.len() as u64 > 2 * per),
        "{}",
        sets[0].len()
    );
    assert!(sets.iter().all(|s| s.len() > 10 * LABELS_PER_COMMAND));
    let want = bits_of(&memory, "big", len, &sets, 70_000, &mut rng);
    store_all(&store, "big", &sets, 70_000, &mut rng);
    // Party 1's set and count, and each party's sequence keys.
    let segments: u64 = sets.iter().map(|s| (s.len() as u64).div_ceil(per)).sum();
    assert_eq!(redis.dbsize(), 1 + 3 + segments);
    let counts: Vec<u64> = sets.iter().map(|s| s.len() as u64).collect();
    let got = store.intersect("big", len, &counts).unwrap();
    assert_eq!(got, want);
    let matches = common_count(&sets);
    assert!(matches >= 125_002);
    for b in &got {
        assert_eq!(ones(b), matches);
    }
    store.remove("big");
    assert_eq!(redis.dbsize(), 0);
}

#[test]
fn labels_not_all_stored_fail_as_in_memory() {
    let redis = RedisServer::start();
    let store = redis.store(HOUR);
    let memory = MemoryStore::new();
    let labels: Vec<u8> = (0u8..40).collect();
    for s in [&store as &dyn Store, &memory] {
        let mut w = s.writer("part", 1, 4, 10).unwrap();
        w.write(&labels).unwrap();
        w.finish().unwrap();
        // Party 2 sends 2 of its 3 labels and never finishes.
        let mut w = s.writer("part", 2, 4, 3).unwrap();
        w.write(&labels[..8]).unwrap();
        drop(w);
    }
    for counts in [&[10u64, 3][..], &[11, 0], &[10, 2, 1]] {
        let r = store.intersect("part", 4, counts).unwrap_err();
        let m = memory.intersect("part", 4, counts).unwrap_err();
        assert_eq!(r.to_string(), m.to_string(), "{counts:?}");
        assert!(matches!(r, Error::InvalidParam { field: "run", .. }));
    }
    assert_eq!(
        store
            .intersect("part", 4, &[10, 3])
            .unwrap_err()
            .to_string(),
        "invalid parameter `run`: the labels of party 2 are not all stored"
    );
    assert_eq!(
        store
            .intersect("part", 4, &[11, 3])
            .unwrap_err()
            .to_string(),
        "invalid parameter `run`: the labels of party 1 are not all stored"
    );
}

#[test]
fn kmrs_semi_over_redis_gives_the_rows_of_the_memory_run() {
    let redis = RedisServer::start();
    let on_redis = Server::new(Arc::new(redis.store(HOUR)), quick());
    let in_memory = Server::new(Arc::new(MemoryStore::new()), quick());
    for (k, &(n1, n2, overlap)) in [(0, 0, 0), (1, 1, 1), (10, 1000, 7), (3000, 2500, 1200)]
        .iter()
        .enumerate()
    {
        let (a, b) = sets_with_overlap(n1, n2, overlap, 700 + k as u64);
        let sets = [a.clone(), b.clone()];
        let r = run_clients(&on_redis, &format!("two-{k}"), &sets);
        let m = run_clients(&in_memory, &format!("two-{k}"), &sets);
        let (r1, r2) = (r[0].as_ref().unwrap(), r[1].as_ref().unwrap());
        assert_eq!(r1.indices, oracle(&a, &b), "{n1} {n2} {overlap}");
        assert_eq!(r2.indices, oracle(&b, &a), "{n1} {n2} {overlap}");
        assert_eq!(r1.indices, m[0].as_ref().unwrap().indices);
        assert_eq!(r2.indices, m[1].as_ref().unwrap().indices);
        assert_eq!(redis.dbsize(), 0, "run {k} left keys");
    }
    // Three clients: 50 rows in all three, 30 in two of them, own rows.
    let rec = |tag: &str, i: usize| format!("{tag}{i}@example.org").into_bytes();
    let mut sets: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 3];
    for (c, s) in sets.iter_mut().enumerate() {
        s.extend((0..50).map(|i| rec("all", i)));
        s.extend((0..30).map(|i| rec(&format!("pair{}", c / 2), i)));
        s.extend((0..20 + 7 * c).map(|i| rec(&format!("own{c}-"), i)));
        s.rotate_left(11 * (c + 1));
    }
    let r = run_clients(&on_redis, "three", &sets);
    let m = run_clients(&in_memory, "three", &sets);
    for i in 0..3 {
        let got = &r[i].as_ref().unwrap().indices;
        assert_eq!(got, &expected(&sets, i), "client {}", i + 1);
        assert_eq!(got, &m[i].as_ref().unwrap().indices);
        assert_eq!(got.len(), 50);
    }
    assert_eq!(on_redis.runs(), 0);
    assert_eq!(redis.dbsize(), 0);
}

#[test]
fn a_failed_run_leaves_no_key() {
    let redis = RedisServer::start();
    let srv = Arc::new(Server::new(Arc::new(redis.store(HOUR)), quick()));
    // Party 1 sends its labels and waits; party 2 is accepted, then its connection drops.
    let (mut c1, st, h1) = raw_submit(&srv, &sized("gone", 1, &[2, 1]));
    assert_eq!(st, Status::Accepted);
    c1.send(MSG_LABELS, &[[1u8; 8], [2; 8]].concat()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    // Party 1's set, its count and its one sequence key.
    while redis.dbsize() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(redis.dbsize(), 3);
    let (c2, st, h2) = raw_submit(&srv, &sized("gone", 2, &[2, 1]));
    assert_eq!(st, Status::Accepted);
    drop(c2);
    h2.join().unwrap();
    let why = refusal_after_waiting(&mut c1);
    assert!(why.contains("party 2 did not deliver its labels"), "{why}");
    h1.join().unwrap();
    assert_eq!(srv.runs(), 0);
    assert_eq!(redis.dbsize(), 0);
}

#[test]
fn remove_deletes_the_run_and_nothing_else() {
    let redis = RedisServer::start();
    let store = redis.store(HOUR);
    let mut rng = Xorshift(77);
    // Run ids with the characters that mean something in a key or a SCAN pattern.
    let runs = ["a", "a*", "a:1", "a%3A1", "[a]?", "a\\"];
    for run in runs {
        let sets = label_sets(&mut rng, 2, 8, 5, 5, false);
        store_all(&store, run, &sets, 4, &mut rng);
    }
    // Party 1 of run "half" sends two segments and a bit more, and never finishes.
    let mut w = store.writer("half", 1, 16, 200_000).unwrap();
    let labels: Vec<u8> = (0u32..140_000)
        .flat_map(|i| {
            let mut l = [0u8; 16];
            l[12..].copy_from_slice(&i.to_be_bytes());
            l
        })
        .collect();
    w.write(&labels).unwrap();
    drop(w);
    let prefix = |run: &str| store.run_prefix(run);
    let of = |run: &str| -> usize {
        redis
            .keys()
            .iter()
            .filter(|k| k.starts_with(&prefix(run)))
            .count()
    };
    // Per finished run: party 1's set, two counts, two sequence keys.
    for run in runs {
        assert_eq!(of(run), 5, "{run}");
    }
    assert_eq!(of("half"), 3, "the set and two sequence keys");
    assert_eq!(redis.dbsize(), 6 * 5 + 3);
    for (i, run) in runs.iter().enumerate() {
        store.remove(run);
        assert_eq!(of(run), 0, "{run}");
        assert_eq!(redis.dbsize() as usize, (5 - i) * 5 + 3, "after {run}");
    }
    store.remove("half");
    assert_eq!(redis.dbsize(), 0);
    // Every key of the store starts with its prefix.
    assert!(store.prefix().starts_with("blindjoin:"));
    assert_eq!(store.prefix().len(), "blindjoin:".len() + 17);
    assert_eq!(store.run_prefix("a:1"), format!("{}a%3A1:", store.prefix()));
}

#[test]
fn every_key_has_a_time_to_live_and_an_abandoned_run_expires() {
    let redis = RedisServer::start();
    let store = redis.store(Duration::from_secs(60));
    let mut rng = Xorshift(5);
    let sets = label_sets(&mut rng, 3, 12, 100, 100, true);
    store_all(&store, "ttl", &sets, 30, &mut rng);
    let check = |stage: &str| {
        let keys = redis.keys();
        assert!(!keys.is_empty(), "{stage}");
        for k in keys {
            let pttl: i64 = redis::cmd("PTTL").arg(&k).query(&mut redis.conn()).unwrap();
            assert!(pttl > 50_000 && pttl <= 60_000, "{stage}: {k} {pttl}");
        }
    };
    check("stored");
    let counts: Vec<u64> = sets.iter().map(|s| s.len() as u64).collect();
    store.intersect("ttl", 12, &counts).unwrap();
    // Party 1's set is consumed by the intersection; the sequences and counts remain.
    assert_eq!(redis.dbsize(), 6);
    check("intersected");
    store.remove("ttl");
    assert_eq!(redis.dbsize(), 0);

    // A server that dies mid-run: its keys expire after the time to live.
    let short = redis.store(Duration::from_secs(1));
    store_all(&short, "abandoned", &sets[..2], 30, &mut rng);
    let mut w = short.writer("abandoned", 3, 12, 10).unwrap();
    w.write(&sets[2][..3].concat()).unwrap();
    w.finish().unwrap();
    assert_eq!(redis.dbsize(), 6 + 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    while redis.dbsize() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(redis.dbsize(), 0);
}

#[test]
fn connect_fails_with_one_clear_line() {
    let redis = RedisServer::start();
    assert!(redis.store(HOUR).describe().starts_with(&format!(
        "redis at 127.0.0.1:{} (keys blindjoin:",
        redis.0.port()
    )));
    // A port nothing listens on: the one of a server just stopped.
    let port = redis.0.port();
    drop(redis);
    let e = RedisStore::connect(&format!("redis://127.0.0.1:{port}"), HOUR)
        .err()
        .unwrap();
    let msg = e.to_string();
    assert!(matches!(e, Error::Store(_)), "{e:?}");
    assert!(
        msg.starts_with(&format!(
            "label store: cannot reach Redis at 127.0.0.1:{port}: "
        )),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");
    let e = RedisStore::connect("http://example.invalid", HOUR)
        .err()
        .unwrap();
    assert!(
        e.to_string().starts_with("label store: not a Redis URL: "),
        "{e}"
    );
    let e = RedisStore::connect(
        &format!("redis://127.0.0.1:{port}"),
        Duration::from_millis(10),
    )
    .err()
    .unwrap();
    assert_eq!(
        e.to_string(),
        "invalid parameter `ttl`: 10 ms; the labels' time to live is at least 1 s"
    );
}
