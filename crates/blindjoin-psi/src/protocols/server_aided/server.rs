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
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            run_timeout: Duration::from_secs(600),
            max_labels: 1 << 32,
            keepalive: Duration::from_secs(5),
        }
    }
}

/// The server's state: its store and the runs in progress.
pub struct Server {
    store: Arc<dyn Store>,
    cfg: ServerConfig,
    runs: Mutex<HashMap<String, Arc<RunState>>>,
    serial: AtomicU64,
}

/// One run: its parameters (from its first client) and its progress.
struct RunState {
    /// The key in the run table: protocol and run id.
    id: String,
    /// The key in the store: the table key and a serial, unique for the server's life.
    store_key: String,
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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    /// A server on `store`.
    pub fn new(store: Arc<dyn Store>, cfg: ServerConfig) -> Self {
        Server {
            store,
            cfg,
            runs: Mutex::new(HashMap::new()),
            serial: AtomicU64::new(0),
        }
    }

    /// Runs in progress.
    pub fn runs(&self) -> usize {
        lock(&self.runs).len()
    }

    /// The store's description.
    pub fn describe_store(&self) -> String {
        self.store.describe()
    }

    /// Serves one client on `ch` (see the module doc). Returns the client's run id and party
    /// on success; an error says why this client's part ended (the client was told, if it can
    /// still hear).
    pub fn serve(&self, ch: &mut dyn Channel) -> Result<(String, u32)> {
        let submit: Submit = match recv_msg(ch, MSG_SUBMIT, MAX_SUBMIT_LEN) {
            Ok(s) => s,
            Err(e) => {
                if matches!(e, Error::Malformed { .. } | Error::FrameTooLong { .. }) {
                    let _ = send_status(ch, &Status::Refused(e.to_string()));
                }
                return Err(e);
            }
        };
        if let Err(reason) = self.check(&submit) {
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
        if flow == Flow::Size && s.party == 2 && s.count != 0 {
            return Err(format!(
                "party 2 of a {} run sends the server no labels, not {}",
                s.protocol, s.count
            ));
        }
        Ok(())
    }

    /// Joins (or creates) the client's run and takes its party's slot.
    fn join(&self, s: &Submit) -> std::result::Result<Arc<RunState>, String> {
        let id = format!("{}/{}", s.protocol, s.run);
        let mut runs = lock(&self.runs);
        let run = runs
            .entry(id.clone())
            .or_insert_with(|| {
                let serial = self.serial.fetch_add(1, Ordering::Relaxed);
                let n = s.parties as usize;
                Arc::new(RunState {
                    store_key: format!("{id}#{serial}"),
                    id,
                    first: s.clone(),
                    flow: Flow::of(&s.protocol),
                    created: Instant::now(),
                    inner: Mutex::new(RunInner {
                        joined: vec![false; n],
                        stored: vec![None; n],
                        verified: vec![false; n],
                        done: vec![false; n],
                        ..RunInner::default()
                    }),
                    changed: Condvar::new(),
                })
            })
            .clone();
        drop(runs);
        let f = &run.first;
        let differs = |field: &str, ours: String, theirs: String| {
            format!(
                "run {} has {field} = {ours} from its first client, this client says {theirs}",
                s.run
            )
        };
        if s.parties != f.parties {
            return Err(differs(
                "parties",
                f.parties.to_string(),
                s.parties.to_string(),
            ));
        }
        if s.label_len != f.label_len {
            return Err(differs(
                "label_len",
                f.label_len.to_string(),
                s.label_len.to_string(),
            ));
        }
        if s.params != f.params {
            let field = f
                .params
                .iter()
                .zip(&s.params)
                .find(|(a, b)| a != b)
                .map_or_else(|| "params".to_owned(), |(a, _)| a.0.clone());
            return Err(differs(
                &field,
                format!("{:?}", f.params),
                format!("{:?}", s.params),
            ));
        }
        let mut inner = lock(&run.inner);
        if let Some(why) = &inner.failed {
            return Err(format!("run {} failed: {why}", s.run));
        }
        let slot = &mut inner.joined[s.party as usize - 1];
        if *slot {
            return Err(format!(
                "party {} of run {} has already joined",
                s.party, s.run
            ));
        }
        *slot = true;
        drop(inner);
        Ok(run)
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
                self.fail(
                    run,
                    format!(
                        "{what} within the run timeout of {}",
                        show_duration(self.cfg.run_timeout)
                    ),
                );
                continue;
            }
            send_status(ch, &Status::Waiting { joined })?;
        }
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
        let mine = &bits[party as usize - 1];
        let mut nonce = Zeroizing::new([0u8; 32]);
        rand::rng().fill_bytes(&mut *nonce);
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
            let key2 = kmrs_size::server_toss(ch, &s.run)?;
            {
                let mut inner = lock(&run.inner);
                inner.key2 = Some(key2);
                run.changed.notify_all();
            }
            let verdict: Verdict = recv_msg(ch, MSG_VERDICT, 1024)?;
            match verdict {
                Verdict::Approve => {
                    let mut inner = lock(&run.inner);
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
            let mut labels = Vec::with_capacity(
                usize::try_from(s.count.saturating_mul(len as u64)).unwrap_or(0),
            );
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
