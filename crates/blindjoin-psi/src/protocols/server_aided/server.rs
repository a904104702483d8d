//! The untrusted server: runs by id, each client's labels into a [`Store`], the intersection
//! once every party is in, each client's bit vector out (KMRS14 §3.2).
//!
//! [`Server::serve`] handles one client connection from its submit hello to its receipt; the
//! caller (the CLI's `blindjoin server`) accepts connections and runs each on a thread of its
//! own. A run lives while one of its clients is connected: it is created by its first client,
//! intersected by the thread of the last client whose labels arrive, and forgotten (table and
//! store) once every client has had its result, or as soon as it fails: a client that
//! disconnects or sends malformed labels before the result, a different parameter, or a run
//! not complete within the run timeout. Clients still waiting then receive the reason.

use super::store::Store;
use super::wire::{
    BITS_PER_FRAME, LABELS_PER_FRAME, MAX_SUBMIT_LEN, MSG_BITS, MSG_LABELS, MSG_RECEIVED,
    MSG_SUBMIT, Status, Submit, check_submit, send_status,
};
use blindjoin_core::channel::{BulkReader, Channel, recv_msg};
use blindjoin_core::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The protocols whose runs this server intersects.
pub const SERVED: &[&str] = &[super::kmrs_semi::NAME, super::kmrs_mal::NAME];

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
    /// Why the run failed.
    failed: Option<String>,
    /// Parties whose connection has ended after the result.
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
        if let Err(e) = self.receive_labels(ch, &run, &submit) {
            guard.fail(format!("party {party} did not deliver its labels: {e}"));
            return Err(e);
        }
        self.wait_and_answer(ch, &run, party)?;
        guard.finished();
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
                    created: Instant::now(),
                    inner: Mutex::new(RunInner {
                        joined: vec![false; n],
                        stored: vec![None; n],
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

    fn receive_labels(&self, ch: &mut dyn Channel, run: &RunState, s: &Submit) -> Result<()> {
        let len = s.label_len as usize;
        let mut writer = self.store.writer(&run.store_key, s.party, len, s.count)?;
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
            writer.write(&frame)?;
        }
        writer.finish()?;
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
                Ok(bits) => inner.results = Some(Arc::new(bits)),
                Err(e) => inner.failed = Some(format!("the intersection failed: {e}")),
            }
            run.changed.notify_all();
        } else {
            run.changed.notify_all();
        }
        Ok(())
    }

    fn wait_and_answer(&self, ch: &mut dyn Channel, run: &RunState, party: u32) -> Result<()> {
        let bits = loop {
            let inner = lock(&run.inner);
            if let Some(why) = &inner.failed {
                let why = why.clone();
                drop(inner);
                let _ = send_status(ch, &Status::Refused(why.clone()));
                return Err(Error::PeerRefused(why));
            }
            if let Some(r) = &inner.results {
                break r.clone();
            }
            let (inner, _) = run
                .changed
                .wait_timeout(inner, self.cfg.keepalive)
                .unwrap_or_else(PoisonError::into_inner);
            if inner.results.is_some() || inner.failed.is_some() {
                continue;
            }
            let joined = inner.stored.iter().filter(|c| c.is_some()).count() as u32;
            drop(inner);
            if run.created.elapsed() >= self.cfg.run_timeout {
                self.fail(
                    run,
                    format!(
                        "{} of {} parties sent their labels within the run timeout of {} s",
                        joined,
                        run.first.parties,
                        self.cfg.run_timeout.as_secs()
                    ),
                );
                continue;
            }
            send_status(ch, &Status::Waiting { joined })?;
        };
        let mine = &bits[party as usize - 1];
        let matches = mine.iter().map(|b| u64::from(b.count_ones())).sum();
        send_status(ch, &Status::Result { matches })?;
        for frame in mine.chunks(BITS_PER_FRAME) {
            ch.send(MSG_BITS, frame)?;
        }
        let receipt = ch.recv(MSG_RECEIVED, 16)?;
        if !receipt.is_empty() {
            return Err(Error::malformed(MSG_RECEIVED, "not empty"));
        }
        Ok(())
    }

    /// Marks `run` failed (waiting clients are told `why`) and forgets it.
    fn fail(&self, run: &RunState, why: String) {
        {
            let mut inner = lock(&run.inner);
            if inner.failed.is_none() && inner.results.is_none() {
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

/// A client's part of a run: when the connection ends, after the result it counts as done (the
/// last one done forgets the run); before the result it fails the run.
struct PartyGuard<'a> {
    server: &'a Server,
    run: Arc<RunState>,
    party: u32,
}

impl PartyGuard<'_> {
    fn fail(&mut self, why: String) {
        self.server.fail(&self.run, why);
    }

    fn finished(self) {}
}

impl Drop for PartyGuard<'_> {
    fn drop(&mut self) {
        let all_done = {
            let mut inner = lock(&self.run.inner);
            if inner.results.is_none() {
                None
            } else {
                inner.done[self.party as usize - 1] = true;
                Some(inner.done.iter().all(|&d| d))
            }
        };
        match all_done {
            // Before any result: this party's leaving ends the run.
            None => self.server.fail(
                &self.run,
                format!("party {} disconnected before the result", self.party),
            ),
            Some(true) => self.server.forget(&self.run),
            Some(false) => {}
        }
    }
}
