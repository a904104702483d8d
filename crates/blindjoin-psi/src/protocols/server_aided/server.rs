//! The untrusted server: runs by id, each client's labels into a [`Store`], the intersection
//! once every party is in, each client's bit vector out (KMRS14 §3.2).
//!
//! [`Server::serve`] handles one client connection from its submit hello to its receipt; the
//! caller (the CLI's `blindjoin server`) accepts connections and runs each on a thread of its
//! own. What the server does in a run depends on its protocol:
//!
//! - `kmrs_semi`, `kmrs_mal`: labels into the store, intersected by the thread of the last
//!   client whose labels arrive, each client's bit vector out;
//! - `kmrs_fair` (Fig. 3): the same intersection, then a hash commitment to each client's bit
//!   vector; each client's opening (K2 and its first-layer values) checked against the labels
//!   it sent; the bit vectors and the commitments' openings only once every opening passed;
//! - `kmrs_size` (Fig. 4): no store and no intersection. Party 2 tosses K2 with the server;
//!   party 1's labels are relabelled under K2 and returned sorted; the permutation π3 goes to
//!   party 1 once party 2 approves the result.
//!
//! **What a client may claim.** Every client's submit hello carries the parameters all clients
//! of the run agreed on over their direct links: every set size and every client's certificate
//! fingerprint as party 1 bound them ([`Submit`]). A run is keyed by its id and a digest of
//! all of them, so a client that submits other parameters (a squatter who knows the run id, a
//! client that was not part of the key agreement) lands in a run of its own and cannot take an
//! honest client's slot or block its run. The server accepts party i's labels only
//!
//! - over a connection authenticated by the certificate `identities[i − 1]` (one certificate,
//!   one slot; refused when the clients' links were not authenticated but the server's is);
//! - in the number the protocol gives for the announced size `sizes[i − 1]` ([`expected_labels`]):
//!   no client tests more guesses than it announced to the others;
//! - within the server's byte budget ([`ServerConfig::memory`]) for what it holds in its own
//!   memory (the memory store's labels, `kmrs_fair`'s openings, `kmrs_size`'s relabelling),
//!   reserved when the client joins, before any label arrives, and allocated only as the labels
//!   arrive;
//! - within the run's time: a connection's deadline is the run timeout (plus a grace for the
//!   server's answer) from the run's creation until the result is fixed, then the run timeout
//!   again for the answer, so a client that trickles is cut at its deadline; and at most
//!   [`ServerConfig::max_client_connections`] connections per client (per certificate, or per
//!   address on plain TCP), which bounds its runs too (a run lives only while one of its
//!   clients is connected).
//!
//! A run lives while one of its clients is connected: it is created by its first client and
//! forgotten (table and store) once every client has had its final answer, or as soon as it
//! fails: a client that disconnects or sends malformed messages before the outcome is fixed, a
//! different parameter, an opening that does not match (`kmrs_fair`), a rejection by party 2
//! (`kmrs_size`), or a run not complete within the run timeout. Clients still waiting then
//! receive the reason.

use super::store::Store;
use super::wire::{
    BITS_PER_FRAME, LABELS_PER_FRAME, MAX_SUBMIT_LEN, MSG_BITS, MSG_FAIR_NONCE, MSG_LABELS,
    MSG_RECEIVED, MSG_SUBMIT, MSG_VERDICT, Status, Submit, Verdict, check_submit, send_status,
};
use super::{kmrs_fair, kmrs_size};
use blindjoin_core::channel::{BulkReader, Channel, recv_msg};
use blindjoin_core::{Error, Result};
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// What a connection may take beyond the run timeout to hear the server's answer (the run's
/// failure included) before its deadline cuts it: the run timeout itself, at most 30 s.
fn answer_grace(run_timeout: Duration) -> Duration {
    run_timeout.min(Duration::from_secs(30))
}

/// The protocols whose runs this server serves.
pub const SERVED: &[&str] = &[
    super::kmrs_semi::NAME,
    super::kmrs_mal::NAME,
    kmrs_fair::NAME,
    kmrs_size::NAME,
];

/// What the server does in a run (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    /// `kmrs_semi`, `kmrs_mal`.
    Intersect,
    /// `kmrs_fair`.
    Fair,
    /// `kmrs_size`.
    Size,
}

impl Flow {
    fn of(protocol: &str) -> Flow {
        match protocol {
            kmrs_fair::NAME => Flow::Fair,
            kmrs_size::NAME => Flow::Size,
            _ => Flow::Intersect,
        }
    }
}

/// `d` for a message: whole seconds, or milliseconds below one.
fn show_duration(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// How the server treats runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// A run whose parties have not all sent their labels this long after it was created fails.
    pub run_timeout: Duration,
    /// The most labels one client may announce.
    pub max_labels: u64,
    /// How often a waiting client is told that the run still waits.
    pub keepalive: Duration,
    /// The most bytes the server holds in its own memory for all runs together (`None`: no
    /// limit): the labels of a store that keeps them in memory, `kmrs_fair`'s openings and
    /// `kmrs_size`'s relabelling. A client whose run would exceed it is refused when it joins.
    pub memory: Option<u64>,
    /// The most connections one client (one certificate; on plain TCP, one address) may have
    /// open at once.
    pub max_client_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            run_timeout: Duration::from_secs(600),
            max_labels: 1 << 32,
            keepalive: Duration::from_secs(5),
            memory: Some(4 << 30),
            max_client_connections: 64,
        }
    }
}

/// Bytes reserved against the server's memory budget; released when dropped.
struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// The server's memory budget ([`ServerConfig::memory`]).
struct Budget {
    limit: Option<u64>,
    used: AtomicU64,
}

impl Budget {
    /// Reserves `bytes`, or says why not.
    fn reserve(self: &Arc<Self>, bytes: u64) -> std::result::Result<Reservation, String> {
        let mut used = self.used.load(Ordering::SeqCst);
        loop {
            let after = used.saturating_add(bytes);
            if let Some(limit) = self.limit
                && after > limit
            {
                return Err(format!(
                    "the run needs {} of this server's memory for this client, and {} of its {} \
                     are free (the server's --memory): try again later or with fewer keys",
                    show_bytes(bytes),
                    show_bytes(limit.saturating_sub(used)),
                    show_bytes(limit)
                ));
            }
            match self
                .used
                .compare_exchange(used, after, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    return Ok(Reservation {
                        budget: self.clone(),
                        bytes,
                    });
                }
                Err(now) => used = now,
            }
        }
    }
}

/// `bytes` for a message: B, KiB, MiB or GiB.
fn show_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The labels party `s.party` must send for the set sizes every client announced (see the
/// module doc), or why the submit hello's parameters do not give a count.
pub fn expected_labels(s: &Submit) -> std::result::Result<u64, String> {
    let size = s
        .sizes
        .get((s.party as usize).wrapping_sub(1))
        .copied()
        .ok_or_else(|| format!("no set size for party {}", s.party))?;
    let param = |name: &str| {
        s.params
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .ok_or_else(|| format!("no valid `{name}` among the run's parameters"))
    };
    let mal = |parties: u32| -> std::result::Result<u64, String> {
        let copies =
            u32::try_from(param("copies")?).map_err(|_| "`copies` too large".to_owned())?;
        super::kmrs_mal::label_count(size, copies, param("dummies")?, parties)
            .map_err(|e| e.to_string())
    };
    match Flow::of(&s.protocol) {
        Flow::Intersect if s.protocol == super::kmrs_semi::NAME => Ok(size),
        Flow::Intersect => mal(s.parties),
        Flow::Fair => mal(2),
        Flow::Size if s.party == 2 => Ok(0),
        Flow::Size => mal(2),
    }
}

/// The bytes the server holds in its own memory for party `s.party` of a run of `flow` (see
/// [`ServerConfig::memory`]): its labels if the store keeps them in memory, with its bit
/// vector; `kmrs_fair`'s opened values (16 bytes per element) and recomputed labels (32 bytes
/// each); `kmrs_size`'s labels and their relabelling (32 bytes each).
fn held_bytes(flow: Flow, s: &Submit, store_in_memory: bool) -> u64 {
    let count = s.count;
    let labels = count.saturating_mul(u64::from(s.label_len));
    let stored = if store_in_memory {
        labels.saturating_add(count.div_ceil(8))
    } else {
        count.div_ceil(8)
    };
    let size = s.sizes.get(s.party as usize - 1).copied().unwrap_or(0);
    match flow {
        Flow::Intersect => stored,
        Flow::Fair => stored
            .saturating_add(size.saturating_mul(16))
            .saturating_add(count.saturating_mul(32)),
        Flow::Size => labels.saturating_add(count.saturating_mul(32)),
    }
}

/// Who a connection is for the per-client limits: its certificate's fingerprint, or on plain
/// TCP the address the caller gives.
fn client_key(ch: &dyn Channel, addr: &str) -> String {
    match ch.peer_identity() {
        Some(fp) => format!("sha256:{}", hex_of(&fp)),
        None => addr.to_owned(),
    }
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks that the connection may play the party the submit hello names: over an
/// authenticated connection, the certificate the clients bound to that party.
fn check_identity(s: &Submit, peer: Option<[u8; 32]>) -> std::result::Result<(), String> {
    let Some(peer) = peer else {
        return Ok(());
    };
    let Some(bound) = s.identities.get(s.party as usize - 1) else {
        return Err(format!(
            "the clients of run {} did not bind their party slots to certificates (their links \
             to party 1 are not authenticated), so this server, which authenticates its \
             clients, cannot tell which client may play party {}: run the clients with TLS",
            s.run, s.party
        ));
    };
    if *bound != peer {
        return Err(format!(
            "party {} of run {} is bound to the certificate sha256:{}, and this connection is \
             authenticated by sha256:{}",
            s.party,
            s.run,
            hex_of(bound),
            hex_of(&peer)
        ));
    }
    Ok(())
}

/// A digest of every parameter the clients of a run agree on (parties, label length, the
/// protocol's parameters, every set size and every client's certificate): the second half of
/// the run's key in the server's table.
fn run_digest(s: &Submit) -> String {
    let mut h = Sha256::new();
    h.update(b"blindjoin/kmrs/run");
    h.update(s.parties.to_le_bytes());
    h.update(s.label_len.to_le_bytes());
    h.update((s.params.len() as u64).to_le_bytes());
    for (k, v) in &s.params {
        for part in [k, v] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
    }
    h.update((s.sizes.len() as u64).to_le_bytes());
    for size in &s.sizes {
        h.update(size.to_le_bytes());
    }
    h.update((s.identities.len() as u64).to_le_bytes());
    for id in &s.identities {
        h.update(id);
    }
    hex_of(&h.finalize()[..8])
}

/// The server's state: its store and the runs in progress.
pub struct Server {
    store: Arc<dyn Store>,
    cfg: ServerConfig,
    runs: Mutex<HashMap<String, Arc<RunState>>>,
    serial: AtomicU64,
    budget: Arc<Budget>,
    /// Connections being served, per client ([`client_key`]).
    clients: Mutex<HashMap<String, usize>>,
    /// The seed of the server's random values ([`Server::seeded`]).
    #[cfg(feature = "seeded-server")]
    seed: Option<[u8; 32]>,
}

/// A client's connection counted against its limit; uncounted when dropped.
struct ClientSlot<'a> {
    server: &'a Server,
    key: String,
}

impl Drop for ClientSlot<'_> {
    fn drop(&mut self) {
        let mut clients = lock(&self.server.clients);
        if let Some(n) = clients.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                clients.remove(&self.key);
            }
        }
    }
}

/// One run: its parameters (from its first client) and its progress.
struct RunState {
    /// The key in the run table: protocol and run id.
    id: String,
    /// The key in the store: the table key and a serial, unique for the server's life.
    store_key: String,
    /// The run id as the clients gave it.
    name: String,
    first: Submit,
    flow: Flow,
    created: Instant,
    inner: Mutex<RunInner>,
    changed: Condvar,
}

#[derive(Default)]
struct RunInner {
    /// Parties that connected (slots taken).
    joined: Vec<bool>,
    /// Label counts of the parties whose labels are all stored.
    stored: Vec<Option<u64>>,
    /// Every party's bit vector, once intersected.
    results: Option<Arc<Vec<Vec<u8>>>>,
    /// `kmrs_fair`: parties whose opening matched their labels.
    verified: Vec<bool>,
    /// `kmrs_size`: K2, once tossed with party 2.
    key2: Option<Zeroizing<[u8; 16]>>,
    /// The run's outcome is fixed, and every party may have its final answer: the
    /// intersection (`kmrs_semi`, `kmrs_mal`), every opening checked (`kmrs_fair`), party 2's
    /// approval (`kmrs_size`). From then on a party that leaves ends only its own part.
    released: bool,
    /// Why the run failed.
    failed: Option<String>,
    /// Parties whose connection has ended after the outcome was fixed.
    done: Vec<bool>,
    /// What each party holds in the server's memory.
    held: Vec<Option<Reservation>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    /// A server on `store`.
    pub fn new(store: Arc<dyn Store>, cfg: ServerConfig) -> Self {
        Server {
            store,
            budget: Arc::new(Budget {
                limit: cfg.memory,
                used: AtomicU64::new(0),
            }),
            cfg,
            runs: Mutex::new(HashMap::new()),
            serial: AtomicU64::new(0),
            clients: Mutex::new(HashMap::new()),
            #[cfg(feature = "seeded-server")]
            seed: None,
        }
    }

    /// The same server with its random values (`kmrs_fair`'s commitment nonces, `kmrs_size`'s
    /// key share) derived from `seed`, the run id and the party instead of drawn from the
    /// operating system, so that a recorded run repeats exactly whatever the order of its
    /// connections. **Insecure** (the values are predictable): compiled only with the
    /// `seeded-server` feature, which only the fuzz targets' recorded runs enable.
    #[cfg(feature = "seeded-server")]
    pub fn seeded(mut self, seed: [u8; 32]) -> Self {
        self.seed = Some(seed);
        self
    }

    /// 32 uniform bytes for `what` of party `party` in run `run`: from the operating system,
    /// or derived from the seed of a [`Server::seeded`] server.
    fn random(&self, what: &str, run: &str, party: u32) -> Zeroizing<[u8; 32]> {
        let mut out = Zeroizing::new([0u8; 32]);
        #[cfg(feature = "seeded-server")]
        if let Some(seed) = &self.seed {
            *out = super::client::hash(&[
                b"blindjoin/kmrs/seeded-server",
                seed,
                what.as_bytes(),
                run.as_bytes(),
                &party.to_le_bytes(),
            ]);
            return out;
        }
        let _ = (what, run, party);
        rand::rng().fill_bytes(&mut *out);
        out
    }

    /// Runs in progress.
    pub fn runs(&self) -> usize {
        lock(&self.runs).len()
    }

    /// The store's description.
    pub fn describe_store(&self) -> String {
        self.store.describe()
    }

    /// Bytes of the memory budget in use ([`ServerConfig::memory`]).
    pub fn memory_used(&self) -> u64 {
        self.budget.used.load(Ordering::SeqCst)
    }

    /// Counts a connection of the client `key` against its limit, or says why not.
    fn admit(&self, key: String) -> std::result::Result<ClientSlot<'_>, String> {
        let mut clients = lock(&self.clients);
        let n = clients.entry(key.clone()).or_insert(0);
        if *n >= self.cfg.max_client_connections {
            return Err(format!(
                "this client already has {} connections to the server, its limit",
                self.cfg.max_client_connections
            ));
        }
        *n += 1;
        Ok(ClientSlot { server: self, key })
    }

    /// Serves one client on `ch` (see the module doc); `addr` names the client for the
    /// per-client limits when the connection has no certificate (plain TCP). Returns the
    /// client's run id and party on success; an error says why this client's part ended (the
    /// client was told, if it can still hear).
    pub fn serve(&self, ch: &mut dyn Channel, addr: &str) -> Result<(String, u32)> {
        ch.set_deadline(
            Instant::now().checked_add(self.cfg.run_timeout + answer_grace(self.cfg.run_timeout)),
        );
        let _slot = match self.admit(client_key(ch, addr)) {
            Ok(slot) => slot,
            Err(reason) => {
                let _ = send_status(ch, &Status::Refused(reason.clone()));
                return Err(Error::PeerRefused(reason));
            }
        };
        let submit: Submit = match recv_msg(ch, MSG_SUBMIT, MAX_SUBMIT_LEN) {
            Ok(s) => s,
            Err(e) => {
                if matches!(e, Error::Malformed { .. } | Error::FrameTooLong { .. }) {
                    let _ = send_status(ch, &Status::Refused(e.to_string()));
                }
                return Err(e);
            }
        };
        if let Err(reason) = self
            .check(&submit)
            .and_then(|()| check_identity(&submit, ch.peer_identity()))
        {
            let _ = send_status(ch, &Status::Refused(reason.clone()));
            return Err(Error::PeerRefused(reason));
        }
        let run = match self.join(&submit) {
            Ok(r) => r,
            Err(reason) => {
                let _ = send_status(ch, &Status::Refused(reason.clone()));
                return Err(Error::PeerRefused(reason));
            }
        };
        let party = submit.party;
        let mut guard = PartyGuard {
            server: self,
            run: run.clone(),
            party,
        };
        // The labels must be in within the run timeout from the run's creation.
        ch.set_deadline(
            run.created
                .checked_add(self.cfg.run_timeout + answer_grace(self.cfg.run_timeout)),
        );
        send_status(ch, &Status::Accepted)?;
        let served = match run.flow {
            Flow::Intersect => self.serve_intersect(ch, &run, &submit),
            Flow::Fair => self.serve_fair(ch, &run, &submit),
            Flow::Size => self.serve_size(ch, &run, &submit),
        };
        if let Err(e) = served {
            guard.fail(format!("party {party} left the run: {e}"));
            return Err(e);
        }
        Ok((submit.run, party))
    }

    fn check(&self, s: &Submit) -> std::result::Result<(), String> {
        check_submit(s, self.cfg.max_labels)?;
        if !SERVED.contains(&s.protocol.as_str()) {
            return Err(format!(
                "this server runs {}, not `{}`",
                SERVED.join(", "),
                blindjoin_core::error::peer_text(&s.protocol)
            ));
        }
        let flow = Flow::of(&s.protocol);
        if flow != Flow::Intersect && s.parties != 2 {
            return Err(format!(
                "{} runs have 2 clients, not {}",
                s.protocol, s.parties
            ));
        }
        let expected = expected_labels(s)?;
        if s.count != expected {
            return Err(format!(
                "party {} announced {} distinct keys to the other clients, which make {expected} \
                 labels in a {} run, not {}",
                s.party,
                s.sizes[s.party as usize - 1],
                s.protocol,
                s.count
            ));
        }
        Ok(())
    }

    /// Joins (or creates) the client's run and takes its party's slot, reserving what the
    /// party will hold in the server's memory. A run is keyed by its protocol, its id and a
    /// digest of every parameter its clients agreed on ([`run_digest`]), so a client with other
    /// parameters joins a run of its own.
    fn join(&self, s: &Submit) -> std::result::Result<Arc<RunState>, String> {
        let id = format!("{}/{}#{}", s.protocol, s.run, run_digest(s));
        let flow = Flow::of(&s.protocol);
        let held = self
            .budget
            .reserve(held_bytes(flow, s, self.store.in_memory()))?;
        let mut runs = lock(&self.runs);
        let run = runs
            .entry(id.clone())
            .or_insert_with(|| {
                let serial = self.serial.fetch_add(1, Ordering::Relaxed);
                let n = s.parties as usize;
                Arc::new(RunState {
                    store_key: format!("{id}#{serial}"),
                    id,
                    name: s.run.clone(),
                    first: s.clone(),
                    flow,
                    created: Instant::now(),
                    inner: Mutex::new(RunInner {
                        joined: vec![false; n],
                        stored: vec![None; n],
                        verified: vec![false; n],
                        done: vec![false; n],
                        held: (0..n).map(|_| None).collect(),
                        ..RunInner::default()
                    }),
                    changed: Condvar::new(),
                })
            })
            .clone();
        drop(runs);
        let mut inner = lock(&run.inner);
        if let Some(why) = &inner.failed {
            return Err(format!("run {} failed: {why}", s.run));
        }
        let p = s.party as usize - 1;
        if inner.joined[p] {
            return Err(format!(
                "party {} of run {} has already joined",
                s.party, s.run
            ));
        }
        inner.joined[p] = true;
        inner.held[p] = Some(held);
        drop(inner);
        Ok(run)
    }

    /// Other runs in the table with the same protocol and id as `run` but other parameters.
    fn namesakes(&self, run: &RunState) -> usize {
        let prefix = format!("{}/{}#", run.first.protocol, run.name);
        lock(&self.runs)
            .keys()
            .filter(|k| k.starts_with(&prefix) && **k != run.id)
            .count()
    }

    /// Receives the client's labels (ascending, checked) into `sink`, frame by frame.
    fn receive_labels(
        ch: &mut dyn Channel,
        s: &Submit,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let len = s.label_len as usize;
        let mut reader = BulkReader::new(MSG_LABELS, len, s.count);
        let mut last: Option<Vec<u8>> = None;
        while let Some(frame) = reader.next_frame(ch)? {
            if frame.len() > LABELS_PER_FRAME * len {
                return Err(Error::malformed(
                    MSG_LABELS,
                    "a frame of more than 2^16 labels",
                ));
            }
            let mut prev = last.as_deref();
            for l in frame.chunks_exact(len) {
                if prev.is_some_and(|p| p >= l) {
                    return Err(Error::malformed(
                        MSG_LABELS,
                        "the labels are not in strictly ascending order",
                    ));
                }
                prev = Some(l);
            }
            last = Some(frame[frame.len() - len..].to_vec());
            sink(&frame)?;
        }
        Ok(())
    }

    /// `kmrs_semi`, `kmrs_mal` and `kmrs_fair`: the client's labels into the store; the thread
    /// of the last party whose labels arrive intersects. Returns the SHA-256 of the labels as
    /// received if `digest`.
    fn store_labels(
        &self,
        ch: &mut dyn Channel,
        run: &RunState,
        s: &Submit,
        digest: bool,
    ) -> Result<Option<[u8; 32]>> {
        let len = s.label_len as usize;
        let mut writer = self.store.writer(&run.store_key, s.party, len, s.count)?;
        let mut hasher = digest.then(Sha256::new);
        let received = Self::receive_labels(ch, s, |frame| {
            if let Some(h) = &mut hasher {
                h.update(frame);
            }
            writer.write(frame)
        })
        .and_then(|()| writer.finish());
        self.undelivered(run, s, received)?;
        let n = {
            let mut inner = lock(&run.inner);
            inner.stored[s.party as usize - 1] = Some(s.count);
            inner.stored.iter().all(Option::is_some).then(|| {
                inner
                    .stored
                    .iter()
                    .map(|c| c.unwrap_or(0))
                    .collect::<Vec<u64>>()
            })
        };
        if let Some(counts) = n {
            // The last party's thread intersects; the others wait for it.
            let result = self.store.intersect(&run.store_key, len, &counts);
            let mut inner = lock(&run.inner);
            match result {
                Ok(bits) => {
                    inner.results = Some(Arc::new(bits));
                    inner.released |= run.flow == Flow::Intersect;
                }
                Err(e) => inner.failed = Some(format!("the intersection failed: {e}")),
            }
        }
        run.changed.notify_all();
        Ok(hasher.map(|h| h.finalize().into()))
    }

    /// Fails the run if the client's labels did not all arrive.
    fn undelivered(&self, run: &RunState, s: &Submit, received: Result<()>) -> Result<()> {
        if let Err(e) = &received {
            self.fail(
                run,
                format!("party {} did not deliver its labels: {e}", s.party),
            );
        }
        received
    }

    /// Waits until `ready` gives a value, telling the client every keepalive that the run
    /// still waits (and how many parties' labels are in); fails the run once the run timeout
    /// has passed, saying what was missing (`missing`), and refuses the client if the run
    /// fails.
    fn wait_for<T>(
        &self,
        ch: &mut dyn Channel,
        run: &RunState,
        ready: impl Fn(&RunInner) -> Option<T>,
        missing: impl Fn(&RunInner) -> String,
    ) -> Result<T> {
        loop {
            let inner = lock(&run.inner);
            if let Some(why) = &inner.failed {
                let why = why.clone();
                drop(inner);
                let _ = send_status(ch, &Status::Refused(why.clone()));
                return Err(Error::PeerRefused(why));
            }
            if let Some(v) = ready(&inner) {
                return Ok(v);
            }
            let (inner, _) = run
                .changed
                .wait_timeout(inner, self.cfg.keepalive)
                .unwrap_or_else(PoisonError::into_inner);
            if inner.failed.is_some() || ready(&inner).is_some() {
                continue;
            }
            let joined = inner.stored.iter().filter(|c| c.is_some()).count() as u32;
            let what = missing(&inner);
            drop(inner);
            if run.created.elapsed() >= self.cfg.run_timeout {
                let others = self.namesakes(run);
                let hint = if others > 0 {
                    format!(
                        "; {others} other submission(s) for run {} differ in set sizes, \
                         certificates or parameters: give every client the same options",
                        run.name
                    )
                } else {
                    String::new()
                };
                self.fail(
                    run,
                    format!(
                        "{what} within the run timeout of {}{hint}",
                        show_duration(self.cfg.run_timeout)
                    ),
                );
                continue;
            }
            send_status(ch, &Status::Waiting { joined })?;
        }
    }

    /// The outcome is fixed: the client has the run timeout again (and the grace) for the
    /// rest of its part (its result, `kmrs_fair`'s opening).
    fn answer_time(&self, ch: &mut dyn Channel) {
        ch.set_deadline(
            Instant::now().checked_add(self.cfg.run_timeout + answer_grace(self.cfg.run_timeout)),
        );
    }

    /// Waits for the intersection: every party's bit vector.
    fn wait_results(&self, ch: &mut dyn Channel, run: &RunState) -> Result<Arc<Vec<Vec<u8>>>> {
        self.wait_for(
            ch,
            run,
            |inner| inner.results.clone(),
            |inner| {
                format!(
                    "{} of {} parties sent their labels",
                    inner.stored.iter().filter(|c| c.is_some()).count(),
                    run.first.parties
                )
            },
        )
    }

    /// Sends the client its bit vector (after the status announcing its matches) and takes
    /// its receipt.
    fn send_bits(ch: &mut dyn Channel, mine: &[u8]) -> Result<()> {
        let matches = mine.iter().map(|b| u64::from(b.count_ones())).sum();
        send_status(ch, &Status::Result { matches })?;
        for frame in mine.chunks(BITS_PER_FRAME) {
            ch.send(MSG_BITS, frame)?;
        }
        Ok(())
    }

    fn receipt(ch: &mut dyn Channel) -> Result<()> {
        let receipt = ch.recv(MSG_RECEIVED, 16)?;
        if !receipt.is_empty() {
            return Err(Error::malformed(MSG_RECEIVED, "not empty"));
        }
        Ok(())
    }

    /// `kmrs_semi` and `kmrs_mal` (KMRS14 §3.2): labels in, bit vector out.
    fn serve_intersect(&self, ch: &mut dyn Channel, run: &RunState, s: &Submit) -> Result<()> {
        self.store_labels(ch, run, s, false)?;
        let bits = self.wait_results(ch, run)?;
        self.answer_time(ch);
        Self::send_bits(ch, &bits[s.party as usize - 1])?;
        Self::receipt(ch)
    }

    /// `kmrs_fair` (Fig. 3 steps 5-9): labels in; once intersected, a commitment to the
    /// client's bit vector; the client's opening (K2 and its first-layer values), checked
    /// against its labels; once every party's opening has passed, the bit vector and the
    /// commitment's opening.
    fn serve_fair(&self, ch: &mut dyn Channel, run: &RunState, s: &Submit) -> Result<()> {
        let party = s.party;
        let digest = self.store_labels(ch, run, s, true)?.unwrap_or_default();
        let bits = self.wait_results(ch, run)?;
        self.answer_time(ch);
        let mine = &bits[party as usize - 1];
        let nonce = self.random("fair nonce", &s.run, party);
        let commitment = kmrs_fair::commit_result(&s.run, party, &nonce, mine);
        send_status(ch, &Status::Committed(commitment))?;
        let values = kmrs_fair::receive_opening(ch, s)?;
        if let Err(why) = kmrs_fair::check_opening(s, &values, &digest) {
            let why = format!("party {party}'s labels are not well formed: {why}");
            self.fail(run, why.clone());
            let _ = send_status(ch, &Status::Refused(why.clone()));
            return Err(Error::PeerRefused(why));
        }
        drop(values);
        {
            let mut inner = lock(&run.inner);
            inner.verified[party as usize - 1] = true;
            inner.released = inner.verified.iter().all(|&v| v);
            run.changed.notify_all();
        }
        self.wait_for(
            ch,
            run,
            |inner| inner.released.then_some(()),
            |inner| {
                format!(
                    "{} of {} parties opened their labels",
                    inner.verified.iter().filter(|&&v| v).count(),
                    run.first.parties
                )
            },
        )?;
        Self::send_bits(ch, mine)?;
        ch.send(MSG_FAIR_NONCE, &*nonce)?;
        Self::receipt(ch)
    }

    /// `kmrs_size` (Fig. 4): party 1's labels in, relabelled under K2 once party 2 has tossed
    /// it with the server, out sorted; π3 once party 2 approves. Party 2: the coin toss for
    /// K2 (the server commits first), then its verdict.
    fn serve_size(&self, ch: &mut dyn Channel, run: &RunState, s: &Submit) -> Result<()> {
        if s.party == 2 {
            let share = self.random("size share", &s.run, 2);
            let key2 = kmrs_size::server_toss(ch, &s.run, share)?;
            {
                let mut inner = lock(&run.inner);
                inner.key2 = Some(key2);
                run.changed.notify_all();
            }
            let verdict: Verdict = recv_msg(ch, MSG_VERDICT, 1024)?;
            match verdict {
                Verdict::Approve => {
                    let mut inner = lock(&run.inner);
                    // Party 2 judges party 1's bit vector, which needs party 1's labels: an
                    // approval before they are in judges nothing, and would fix the outcome of
                    // a run whose party 1 may never join (nothing would then forget it).
                    if inner.stored[0].is_none() {
                        drop(inner);
                        let why = "party 2 approved the result before party 1's labels were in";
                        self.fail(run, why.to_owned());
                        return Err(Error::malformed(MSG_VERDICT, why));
                    }
                    inner.released = inner.failed.is_none();
                    run.changed.notify_all();
                    Ok(())
                }
                Verdict::Abort(why) => {
                    let why = format!(
                        "party 2 rejected the result: {}",
                        blindjoin_core::error::peer_text(&why)
                    );
                    self.fail(run, why.clone());
                    Err(Error::PeerRefused(why))
                }
            }
        } else {
            let len = s.label_len as usize;
            // Grown as the labels arrive (their bytes were reserved when party 1 joined).
            let mut labels = Vec::new();
            let received = Self::receive_labels(ch, s, |frame| {
                labels.extend_from_slice(frame);
                Ok(())
            });
            self.undelivered(run, s, received)?;
            {
                let mut inner = lock(&run.inner);
                inner.stored[0] = Some(s.count);
            }
            let key2 = self.wait_for(
                ch,
                run,
                |inner| inner.key2.clone(),
                |_| "party 2 did not toss the key with the server".to_owned(),
            )?;
            self.answer_time(ch);
            let relabelled = kmrs_size::relabel(&key2, &labels, len);
            drop(labels);
            let relabelled = match relabelled {
                Ok(r) => r,
                Err(e) => {
                    let why = e.to_string();
                    self.fail(run, why.clone());
                    let _ = send_status(ch, &Status::Refused(why));
                    return Err(e);
                }
            };
            send_status(ch, &Status::Relabelled)?;
            kmrs_size::send_relabelled(ch, &relabelled, len)?;
            self.wait_for(
                ch,
                run,
                |inner| inner.released.then_some(()),
                |_| "party 2 did not judge the result".to_owned(),
            )?;
            send_status(ch, &Status::Opened)?;
            kmrs_size::send_permutation(ch, &relabelled)?;
            Self::receipt(ch)
        }
    }

    /// Marks `run` failed (waiting clients are told `why`) and forgets it.
    fn fail(&self, run: &RunState, why: String) {
        {
            let mut inner = lock(&run.inner);
            if inner.failed.is_none() && !inner.released {
                inner.failed = Some(why);
            }
            run.changed.notify_all();
        }
        self.forget(run);
    }

    /// Removes `run` from the table (if this state is still the one there) and the store.
    fn forget(&self, run: &RunState) {
        let mut runs = lock(&self.runs);
        if runs
            .get(&run.id)
            .is_some_and(|r| std::ptr::eq(Arc::as_ptr(r), run))
        {
            runs.remove(&run.id);
        }
        drop(runs);
        self.store.remove(&run.store_key);
    }
}

/// A client's part of a run: when the connection ends, after the outcome is fixed it counts as
/// done (the last one done forgets the run); before, it fails the run.
struct PartyGuard<'a> {
    server: &'a Server,
    run: Arc<RunState>,
    party: u32,
}

impl PartyGuard<'_> {
    fn fail(&mut self, why: String) {
        self.server.fail(&self.run, why);
    }
}

impl Drop for PartyGuard<'_> {
    fn drop(&mut self) {
        let all_done = {
            let mut inner = lock(&self.run.inner);
            if !inner.released {
                None
            } else {
                inner.done[self.party as usize - 1] = true;
                Some(inner.done.iter().all(|&d| d))
            }
        };
        match all_done {
            // Before the outcome is fixed: this party's leaving ends the run.
            None => self.server.fail(
                &self.run,
                format!("party {} disconnected before the result", self.party),
            ),
            Some(true) => self.server.forget(&self.run),
            Some(false) => {}
        }
    }
}
