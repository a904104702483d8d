//! The server's labels in Redis, as KMRS14 §3.2 also ran its server ("insertion queries …
//! followed by a set intersection query"): [`RedisStore`], made by [`RedisStore::connect`] with
//! a Redis URL and a time to live for its keys. Redis 6.2 or newer (`SMISMEMBER`).
//!
//! **Keys.** `P` = `blindjoin:<16 hex digits>:<run>:`, the digits random per store (two
//! servers on one Redis, or a restarted server and the keys of its predecessor, never meet),
//! the run id with `%` and `:` escaped as `%25` and `%3A` (so `P` is the prefix of this run's
//! keys only). ℓ is the label length, s = ⌊(2^20 − 64) / ℓ⌋ ([`segment_labels`]).
//!
//! | key | type | holds | written with |
//! | --- | --- | --- | --- |
//! | `P1:set` | set | party 1's labels | `SADD`, 8192 labels a command, as they arrive |
//! | `P<i>:seq:<j>` | string | party i's labels j·s to (j+1)·s − 1, in order | one `SET` each |
//! | `P<i>:count` | string | party i's label count, once all its labels are in | `SET` |
//! | `Pand` | set | the intersection so far, during the intersection | `SADD` |
//!
//! A party's labels in order are what makes its bit vector (bit k for its k-th label), so every
//! party has its sequence; a string per 2^20 bytes keeps each value far under Redis's 512 MB
//! string limit, and a value of that size wastes nothing in Redis's allocator (one 1 MiB
//! block). Only party 1 has a set: the intersection starts from one set and narrows it.
//!
//! **Time to live.** Every key is written with one (`SET … PX`, `PEXPIRE`) and refreshed
//! whenever a quarter of it has passed, while its party's labels arrive and while the run is
//! intersected: the keys of a run whose server died disappear after the time to live. The
//! first party's keys wait for the last party's labels, so the time to live must exceed the
//! server's run timeout.
//!
//! **Writing** (one connection per party): one pipelined round trip per segment, its `SET` and,
//! for party 1, its `SADD`s; each `SADD` must report all its labels new (they are strictly
//! ascending). Once all labels are in, `SET P<i>:count`.
//!
//! **Intersection** of n parties (one connection), a cascade:
//! 1. check that every party's labels are all stored: `GET` of its count, `EXISTS` of its
//!    segments, `SCARD` of party 1's set; otherwise the error [`MemoryStore`] gives;
//! 2. for k = 2, …, n: party k's segments (`GET`) against the working set (`SMISMEMBER`, 8192
//!    labels a command, one pipeline per segment) give which of its labels all of parties
//!    1..k−1 have; the working set is dropped (`UNLINK`) and, for k < n, those labels become
//!    the next one (`SADD` to `Pand`). For k = n these are party n's bits, and party n's
//!    marked labels are the intersection;
//! 3. parties 1..n−1: each party's segments merged with party n's (`GET`, both ascending)
//!    against those marks, with no set work in Redis (for two parties this halves the `SADD`s
//!    and the `SMISMEMBER`s of a run); then `UNLINK` of what is left.
//!
//! Redis holds one working set at a time, the largest being party 1's, besides the sequences;
//! the server holds one segment and the bit vectors. The intersection consumes party 1's set:
//! a run is intersected once, as the server does. [`Store::remove`] deletes every key of the
//! run (`SCAN MATCH P*`, `UNLINK`); a remove while the run is being intersected can leave the
//! working set behind until its time to live runs out.
//!
//! **Redis memory per label** (measured 2026-11-24: Redis 7.0.15 of Debian 12, jemalloc;
//! `used_memory` of `INFO memory` before and after, with
//! `cargo run --release -p blindjoin-psi --features redis-store --example redis_memory --
//! redis://127.0.0.1:6390 N L`, two parties of N labels of L bytes, half of them shared):
//!
//! | N, L | party 1 (set and sequence) | any other party (sequence) | peak while intersecting |
//! | --- | --- | --- | --- |
//! | 10^6, 10 | 66.5 B | 10.1 B | the stored labels + 4.6 MB |
//! | 10^6, 12 | 68.5 B | 12.1 B | the stored labels + 1.0 MB |
//! | 10^7, 12 | 80.1 B | 12.0 B | the stored labels + 1.0 MB |
//!
//! The set costs about 56 B a label at 10^6 (a 24-byte hash-table entry in a 32-byte block, the
//! label as a 16-byte string, 8 B of bucket array) and more at 10^7 (the bucket array of
//! 2^24 pointers and, while Redis rehashes incrementally, the old one of 2^23 besides). At
//! 10^8 labels of 12 bytes (the label length of a two-party run of that size) the same parts
//! come to about 59 to 64 B for the set and 12 B for each sequence: some 7.6 GB for party 1 and
//! 1.2 GB for each other party, within a 24 GiB machine for two or three parties. A sequence
//! costs its ℓ bytes a label and nothing more.

#[cfg(doc)]
use super::store::MemoryStore;
use super::store::{LabelWriter, Store};
use blindjoin_core::{Error, Result};
use redis::{Client, Connection, RedisError};
use std::time::{Duration, Instant};

/// Bytes per sequence key: one `SET` of 1 MiB less 64 bytes (Redis's string header and the
/// allocator's size classes: a value of exactly this size wastes nothing), far under Redis's
/// 512 MB string limit (`proto-max-bulk-len`) at any run size.
pub const SEGMENT_BYTES: usize = (1 << 20) - 64;

/// Labels of `label_len` bytes per sequence key.
pub fn segment_labels(label_len: usize) -> usize {
    SEGMENT_BYTES / label_len.max(1)
}

/// Labels per `SADD` or `SMISMEMBER` command; a segment's commands go in one pipeline.
pub const LABELS_PER_COMMAND: usize = 8192;

/// How long [`RedisStore::connect`] and every new connection wait for Redis to accept.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection waits for one reply before the store gives up.
const REPLY_TIMEOUT: Duration = Duration::from_secs(300);

/// The oldest Redis with every command used here (`SMISMEMBER` is 6.2's).
const MIN_VERSION: (u32, u32) = (6, 2);

/// A [`Store`] in a Redis server (see the module doc for the keys and commands).
pub struct RedisStore {
    client: Client,
    /// Where Redis listens, for messages (never the URL: it may hold a password).
    addr: String,
    ttl: Duration,
    /// `blindjoin:<16 hex digits>:`, random per store: two servers on one Redis, or a restarted
    /// server and the keys its predecessor left, never share a key.
    prefix: String,
}

impl RedisStore {
    /// Connects to the Redis at `url` (`redis://HOST:PORT[/DB]`, `redis://:PASSWORD@HOST:PORT`,
    /// `redis+unix:///PATH`), checks that it answers and is 6.2 or newer. Every key the store
    /// writes lives `ttl` after its last write or refresh, so the labels of a run whose server
    /// died disappear on their own; `ttl` must exceed the server's run timeout, for the first
    /// party's labels wait that long for the last party's.
    pub fn connect(url: &str, ttl: Duration) -> Result<RedisStore> {
        if ttl < Duration::from_secs(1) {
            return Err(Error::InvalidParam {
                field: "ttl",
                reason: format!(
                    "{} ms; the labels' time to live is at least 1 s",
                    ttl.as_millis()
                ),
            });
        }
        let client = Client::open(url)
            .map_err(|e| Error::Store(format!("not a Redis URL: {}", one_line(&e))))?;
        let addr = client.get_connection_info().addr().to_string();
        let store = RedisStore {
            client,
            addr,
            ttl,
            prefix: format!("blindjoin:{:016x}:", rand::random::<u64>()),
        };
        let mut conn = store.connection()?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query(&mut conn)
            .map_err(|e| store.fail("INFO server", &e))?;
        let version = info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("")
            .trim()
            .to_owned();
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        if (major, minor) < MIN_VERSION {
            return Err(Error::Store(format!(
                "Redis at {} is version {version}; blindjoin needs {}.{} or newer (SMISMEMBER)",
                store.addr, MIN_VERSION.0, MIN_VERSION.1
            )));
        }
        Ok(store)
    }

    /// The prefix of every key of this store (`blindjoin:<16 hex digits>:`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The prefix of every key of `run`.
    pub fn run_prefix(&self, run: &str) -> String {
        format!("{}{}:", self.prefix, escape_run(run))
    }

    fn connection(&self) -> Result<Connection> {
        let conn = self
            .client
            .get_connection_with_timeout(CONNECT_TIMEOUT)
            .map_err(|e| {
                Error::Store(format!(
                    "cannot reach Redis at {}: {}",
                    self.addr,
                    one_line(&e)
                ))
            })?;
        conn.set_read_timeout(Some(REPLY_TIMEOUT))
            .and_then(|()| conn.set_write_timeout(Some(REPLY_TIMEOUT)))
            .map_err(|e| self.fail("setting the connection's timeouts", &e))?;
        Ok(conn)
    }

    fn fail(&self, doing: &str, e: &RedisError) -> Error {
        fail(&self.addr, doing, e)
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }
}

fn fail(addr: &str, doing: &str, e: &RedisError) -> Error {
    Error::Store(format!("Redis at {addr}: {doing}: {}", one_line(e)))
}

/// A Redis error on one line (a server's reply may span several).
fn one_line(e: &RedisError) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The run id with `%` and `:` percent-escaped: no colon inside, so `<prefix><run>:` is the
/// prefix of this run's keys and of no other run's.
fn escape_run(run: &str) -> String {
    run.replace('%', "%25").replace(':', "%3A")
}

/// `s` as a `SCAN MATCH` pattern that matches `s` literally.
fn glob_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The names of one run's keys.
struct Keys {
    run: String,
}

impl Keys {
    /// Party 1's labels as a set.
    fn set(&self) -> String {
        format!("{}1:set", self.run)
    }

    /// The intersection so far (the cascade's working set).
    fn and(&self) -> String {
        format!("{}and", self.run)
    }

    /// Segment `i` of party `party`'s labels, in their order.
    fn seq(&self, party: u32, i: usize) -> String {
        format!("{}{party}:seq:{i}", self.run)
    }

    /// Party `party`'s label count, written once all its labels are in.
    fn count(&self, party: u32) -> String {
        format!("{}{party}:count", self.run)
    }
}

/// Sequence keys of `count` labels of `label_len` bytes.
fn segments(count: u64, label_len: usize) -> usize {
    count.div_ceil(segment_labels(label_len) as u64) as usize
}

fn not_stored(party: u32) -> Error {
    Error::InvalidParam {
        field: "run",
        reason: format!("the labels of party {party} are not all stored"),
    }
}

/// Refreshes the time to live of a set of keys once a quarter of it has passed.
struct Refresh {
    keys: Vec<String>,
    ttl_ms: u64,
    every: Duration,
    last: Option<Instant>,
}

impl Refresh {
    fn new(ttl: Duration, ttl_ms: u64) -> Self {
        Refresh {
            keys: Vec::new(),
            ttl_ms,
            every: ttl / 4,
            last: None,
        }
    }

    /// Refreshes every key if due (or `now`); a key that does not exist stays absent.
    fn tick(&mut self, conn: &mut Connection, addr: &str, now: bool) -> Result<()> {
        if !now && self.last.is_some_and(|t| t.elapsed() < self.every) {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for k in &self.keys {
            pipe.cmd("PEXPIRE").arg(k).arg(self.ttl_ms).ignore();
        }
        pipe.query::<()>(conn)
            .map_err(|e| fail(addr, "PEXPIRE", &e))?;
        self.last = Some(Instant::now());
        Ok(())
    }
}

/// One party's labels on their way into Redis: whole segments `SET` (and, for party 1, `SADD`
/// to its set), one pipeline per segment.
struct RedisWriter {
    conn: Connection,
    addr: String,
    keys: Keys,
    party: u32,
    label_len: usize,
    ttl_ms: u64,
    /// Labels not yet sent (less than a segment after each write).
    pending: Vec<u8>,
    /// Segments sent.
    sent: usize,
    /// Labels sent.
    written: u64,
    refresh: Refresh,
}

impl RedisWriter {
    /// Sends one segment (at most [`segment_labels`] labels) in one round trip.
    fn send(&mut self, labels: &[u8]) -> Result<()> {
        let seq = self.keys.seq(self.party, self.sent);
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(&seq)
            .arg(labels)
            .arg("PX")
            .arg(self.ttl_ms)
            .ignore();
        let mut commands = Vec::new();
        if self.party == 1 {
            let set = self.keys.set();
            for chunk in labels.chunks(LABELS_PER_COMMAND * self.label_len) {
                let cmd = pipe.cmd("SADD").arg(&set);
                for l in chunk.chunks_exact(self.label_len) {
                    cmd.arg(l);
                }
                commands.push((chunk.len() / self.label_len) as u64);
            }
            pipe.cmd("PEXPIRE").arg(&set).arg(self.ttl_ms).ignore();
        }
        let added: Vec<u64> = pipe
            .query(&mut self.conn)
            .map_err(|e| fail(&self.addr, "SET and SADD of labels", &e))?;
        if added != commands {
            // The labels are strictly ascending (the server checks), so every SADD adds all.
            return Err(Error::Store(format!(
                "Redis at {}: the set {} already held some of party 1's labels",
                self.addr,
                self.keys.set()
            )));
        }
        self.refresh.keys.push(seq);
        self.sent += 1;
        self.written += (labels.len() / self.label_len) as u64;
        self.refresh.tick(&mut self.conn, &self.addr, false)
    }
}

impl LabelWriter for RedisWriter {
    fn write(&mut self, labels: &[u8]) -> Result<()> {
        if !labels.len().is_multiple_of(self.label_len) {
            return Err(Error::InvalidParam {
                field: "labels",
                reason: format!(
                    "{} bytes are not whole labels of {} bytes",
                    labels.len(),
                    self.label_len
                ),
            });
        }
        let segment = segment_labels(self.label_len) * self.label_len;
        let mut rest = labels;
        if !self.pending.is_empty() {
            let take = rest.len().min(segment - self.pending.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() == segment {
                let full = std::mem::take(&mut self.pending);
                self.send(&full)?;
                self.pending = full;
                self.pending.clear();
            }
        }
        while rest.len() >= segment {
            self.send(&rest[..segment])?;
            rest = &rest[segment..];
        }
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        if !self.pending.is_empty() {
            let last = std::mem::take(&mut self.pending);
            self.send(&last)?;
        }
        let count = self.keys.count(self.party);
        redis::cmd("SET")
            .arg(&count)
            .arg(self.written)
            .arg("PX")
            .arg(self.ttl_ms)
            .query::<()>(&mut self.conn)
            .map_err(|e| fail(&self.addr, "SET of the label count", &e))?;
        self.refresh.keys.push(count);
        let addr = self.addr.clone();
        self.refresh.tick(&mut self.conn, &addr, true)
    }
}

impl Store for RedisStore {
    fn describe(&self) -> String {
        format!(
            "redis at {} (keys {}*, time to live {} s)",
            self.addr,
            self.prefix,
            self.ttl.as_secs()
        )
    }

    fn writer(
        &self,
        run: &str,
        party: u32,
        label_len: usize,
        _count: u64,
    ) -> Result<Box<dyn LabelWriter>> {
        if label_len == 0 {
            return Err(Error::InvalidParam {
                field: "label_len",
                reason: "0 bytes".into(),
            });
        }
        let mut refresh = Refresh::new(self.ttl, self.ttl_ms());
        let keys = Keys {
            run: self.run_prefix(run),
        };
        if party == 1 {
            refresh.keys.push(keys.set());
        }
        Ok(Box::new(RedisWriter {
            conn: self.connection()?,
            addr: self.addr.clone(),
            keys,
            party,
            label_len,
            ttl_ms: self.ttl_ms(),
            pending: Vec::new(),
            sent: 0,
            written: 0,
            refresh,
        }))
    }

    fn intersect(&self, run: &str, label_len: usize, counts: &[u64]) -> Result<Vec<Vec<u8>>> {
        let mut conn = self.connection()?;
        let keys = Keys {
            run: self.run_prefix(run),
        };
        let mut job = Intersection {
            conn: &mut conn,
            addr: &self.addr,
            keys: &keys,
            label_len,
            counts,
            refresh: Refresh::new(self.ttl, self.ttl_ms()),
        };
        job.check()?;
        let result = job.run();
        // The working set is of no use after the run, whatever happened.
        let _ = redis::cmd("UNLINK")
            .arg(keys.set())
            .arg(keys.and())
            .query::<()>(&mut conn);
        result
    }

    fn remove(&self, run: &str) {
        // Best effort: whatever is left expires after the time to live.
        let Ok(mut conn) = self.connection() else {
            return;
        };
        let pattern = format!("{}*", glob_literal(&self.run_prefix(run)));
        let mut cursor = 0u64;
        loop {
            let Ok((next, found)) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query::<(u64, Vec<String>)>(&mut conn)
            else {
                return;
            };
            if !found.is_empty()
                && redis::cmd("UNLINK")
                    .arg(&found)
                    .query::<()>(&mut conn)
                    .is_err()
            {
                return;
            }
            if next == 0 {
                return;
            }
            cursor = next;
        }
    }
}

/// One run's intersection, on one connection.
struct Intersection<'a> {
    conn: &'a mut Connection,
    addr: &'a str,
    keys: &'a Keys,
    label_len: usize,
    counts: &'a [u64],
    refresh: Refresh,
}

impl Intersection<'_> {
    /// Every party's labels are all stored: its count key says so and every segment exists;
    /// party 1's set has all its labels. Also lists the run's keys for the refresh.
    fn check(&mut self) -> Result<()> {
        let n = self.counts.len();
        let mut pipe = redis::pipe();
        for p in 1..=n as u32 {
            pipe.cmd("GET").arg(self.keys.count(p));
        }
        for (p, &c) in (1..=n as u32).zip(self.counts) {
            let cmd = pipe.cmd("EXISTS");
            for i in 0..segments(c, self.label_len) {
                cmd.arg(self.keys.seq(p, i));
            }
            if segments(c, self.label_len) == 0 {
                // EXISTS needs a key; this one is never written.
                cmd.arg(self.keys.and());
            }
        }
        pipe.cmd("SCARD").arg(self.keys.set());
        let reply: Vec<redis::Value> = pipe
            .query(self.conn)
            .map_err(|e| fail(self.addr, "checking the stored labels", &e))?;
        let int = |v: &redis::Value| redis::from_redis_value_ref::<Option<u64>>(v).ok().flatten();
        for (p, &c) in self.counts.iter().enumerate() {
            let stored = reply.get(p).and_then(int);
            let exists = reply.get(n + p).and_then(int);
            if stored != Some(c) || exists != Some(segments(c, self.label_len) as u64) {
                return Err(not_stored(p as u32 + 1));
            }
        }
        if n > 0 && reply.get(2 * n).and_then(int) != Some(self.counts[0]) {
            return Err(not_stored(1));
        }
        let mut keys = vec![self.keys.set(), self.keys.and()];
        for (p, &c) in (1..=n as u32).zip(self.counts) {
            keys.push(self.keys.count(p));
            keys.extend((0..segments(c, self.label_len)).map(|i| self.keys.seq(p, i)));
        }
        self.refresh.keys = keys;
        self.refresh.tick(self.conn, self.addr, true)
    }

    /// The cascade: the last party's bits from its labels against the intersection of the
    /// parties before it, built one party at a time; then every other party's bits against
    /// the whole intersection.
    fn run(&mut self) -> Result<Vec<Vec<u8>>> {
        let n = self.counts.len();
        let mut bits: Vec<Vec<u8>> = self
            .counts
            .iter()
            .map(|&c| vec![0u8; c.div_ceil(8) as usize])
            .collect();
        if n == 1 {
            // One party: every label is in every set.
            for k in 0..self.counts[0] as usize {
                bits[0][k / 8] |= 1 << (k % 8);
            }
        }
        if n < 2 {
            return Ok(bits);
        }
        // Working set: party 1's labels, then those of parties 1..=k, for k < n.
        let mut working = self.keys.set();
        let mut size = self.counts[0];
        for k in 2..=n as u32 {
            let mine = self.member_bits(&working, k, size)?;
            self.unlink(&working)?;
            if k < n as u32 {
                working = self.keys.and();
                size = self.store_marked(&working, k, &mine)?;
            }
            bits[k as usize - 1] = mine;
        }
        // The last party's marked labels are the intersection, in ascending order, as every
        // other party's labels are: each of those parties' bits comes from a merge of the two
        // sequences, a segment of each at a time, with no set work in Redis.
        let (last, rest) = bits.split_last_mut().ok_or_else(|| not_stored(1))?;
        for (p, b) in rest.iter_mut().enumerate() {
            *b = self.merged_bits(p as u32 + 1, n as u32, last)?;
        }
        Ok(bits)
    }

    /// `party`'s bit vector against the labels of party `last` whose bits in `marks` are set
    /// (the intersection): both label sequences ascend, so one merge pass marks them.
    fn merged_bits(&mut self, party: u32, last: u32, marks: &[u8]) -> Result<Vec<u8>> {
        let len = self.label_len;
        let count = self.counts[party as usize - 1] as usize;
        let other = self.counts[last as usize - 1] as usize;
        let per = segment_labels(len);
        let mut bits = vec![0u8; count.div_ceil(8)];
        let marked = |k: usize| marks[k / 8] >> (k % 8) & 1 == 1;
        let (mut k, mut j) = (0usize, 0usize);
        let (mut mine, mut theirs): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
        let (mut mine_seg, mut theirs_seg) = (usize::MAX, usize::MAX);
        while k < count {
            // The next intersection label at or after j.
            while j < other && !marked(j) {
                j += 1;
            }
            if j == other {
                break;
            }
            if j / per != theirs_seg {
                theirs_seg = j / per;
                theirs = self.segment(last, theirs_seg)?;
            }
            if k / per != mine_seg {
                mine_seg = k / per;
                mine = self.segment(party, mine_seg)?;
            }
            let a = &mine[(k % per) * len..(k % per + 1) * len];
            let b = &theirs[(j % per) * len..(j % per + 1) * len];
            match a.cmp(b) {
                std::cmp::Ordering::Less => k += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    bits[k / 8] |= 1 << (k % 8);
                    k += 1;
                    j += 1;
                }
            }
        }
        Ok(bits)
    }

    fn unlink(&mut self, key: &str) -> Result<()> {
        redis::cmd("UNLINK")
            .arg(key)
            .query::<()>(self.conn)
            .map_err(|e| fail(self.addr, "UNLINK", &e))
    }

    /// Segment `i` of `party`'s labels, checked to be whole.
    fn segment(&mut self, party: u32, i: usize) -> Result<Vec<u8>> {
        let count = self.counts[party as usize - 1];
        let per = segment_labels(self.label_len);
        let want = (count - (i * per) as u64).min(per as u64);
        self.refresh.tick(self.conn, self.addr, false)?;
        let seg: Option<Vec<u8>> = redis::cmd("GET")
            .arg(self.keys.seq(party, i))
            .query(self.conn)
            .map_err(|e| fail(self.addr, "GET of labels", &e))?;
        match seg {
            Some(s) if s.len() as u64 == want * self.label_len as u64 => Ok(s),
            _ => Err(not_stored(party)),
        }
    }

    /// `party`'s bit vector against the set `set` of `size` labels: bit k iff its k-th label
    /// is a member (`SMISMEMBER`).
    fn member_bits(&mut self, set: &str, party: u32, size: u64) -> Result<Vec<u8>> {
        let count = self.counts[party as usize - 1];
        let mut bits = vec![0u8; count.div_ceil(8) as usize];
        if size == 0 {
            return Ok(bits);
        }
        let len = self.label_len;
        for i in 0..segments(count, len) {
            let seg = self.segment(party, i)?;
            let mut pipe = redis::pipe();
            for chunk in seg.chunks(LABELS_PER_COMMAND * len) {
                let cmd = pipe.cmd("SMISMEMBER").arg(set);
                for l in chunk.chunks_exact(len) {
                    cmd.arg(l);
                }
            }
            let member: Vec<Vec<i64>> = pipe
                .query(self.conn)
                .map_err(|e| fail(self.addr, "SMISMEMBER", &e))?;
            let first = i * segment_labels(len);
            let flat: Vec<i64> = member.into_iter().flatten().collect();
            if flat.len() != seg.len() / len {
                return Err(Error::Store(format!(
                    "Redis at {}: SMISMEMBER answered {} of {} labels",
                    self.addr,
                    flat.len(),
                    seg.len() / len
                )));
            }
            for (j, &m) in flat.iter().enumerate() {
                if m == 1 {
                    let k = first + j;
                    bits[k / 8] |= 1 << (k % 8);
                }
            }
        }
        Ok(bits)
    }

    /// Adds `party`'s labels whose bits are set to the set `set` (`SADD`); returns how many.
    fn store_marked(&mut self, set: &str, party: u32, bits: &[u8]) -> Result<u64> {
        let count = self.counts[party as usize - 1];
        let marked: u64 = bits.iter().map(|b| u64::from(b.count_ones())).sum();
        if marked == 0 {
            return Ok(0);
        }
        let len = self.label_len;
        for i in 0..segments(count, len) {
            let first = i * segment_labels(len);
            let end = (first + segment_labels(len)).min(count as usize);
            if (first..end).all(|k| bits[k / 8] >> (k % 8) & 1 == 0) {
                continue;
            }
            let seg = self.segment(party, i)?;
            let chosen: Vec<&[u8]> = seg
                .chunks_exact(len)
                .enumerate()
                .filter(|(j, _)| {
                    let k = first + j;
                    bits[k / 8] >> (k % 8) & 1 == 1
                })
                .map(|(_, l)| l)
                .collect();
            let mut pipe = redis::pipe();
            for chunk in chosen.chunks(LABELS_PER_COMMAND) {
                pipe.cmd("SADD").arg(set).arg(chunk);
            }
            pipe.cmd("PEXPIRE")
                .arg(set)
                .arg(self.refresh.ttl_ms)
                .ignore();
            let added: Vec<u64> = pipe
                .query(self.conn)
                .map_err(|e| fail(self.addr, "SADD of the intersection", &e))?;
            if added.iter().sum::<u64>() != chosen.len() as u64 {
                return Err(Error::Store(format!(
                    "Redis at {}: the set {set} already held labels of party {party}",
                    self.addr
                )));
            }
        }
        Ok(marked)
    }
}
