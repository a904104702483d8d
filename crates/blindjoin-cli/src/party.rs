//! One party's run: read and hash the keys while the connection is made, run the protocol,
//! write the matched rows (receiver), report.
//!
//! [`run_party`] is the run on keys from anywhere (the Python package calls it with Arrow
//! data); [`run_file_party`] is the run on a file, as `send` and `receive` do it.

use crate::bucket::Partition;
use crate::bucketed::{Buckets, MemorySplit, Split};
use crate::cli::{KeyOpts, PartyOpts, SecurityOpts};
use crate::error::{CliError, CliResult};
use crate::input::{Format, Input, InputSpec, read_input};
use crate::keyed::Keyed;
use crate::link::Endpoint;
use crate::normalize::Normalizer;
use crate::output::{
    OutputSpec, Prepared, check_output, check_output_spec, prepare_output, same_file, write_atomic,
};
use crate::progress::Bars;
use crate::report::{
    BucketStats, InputStats, IntersectionStats, Phase, RunReport, hex, human_bytes, peak_rss_bytes,
    process_cpu_seconds,
};
use crate::rundir::{Fingerprint, ResumeOptions, RunDir, SpillState, digests_of, key_hex};
use crate::spill::SpillSplit;
use blindjoin_core::channel::metered::Metered;
use blindjoin_core::channel::transcript::Transcript;
use blindjoin_core::finish;
use blindjoin_core::item::{Item, items_from_records};
use blindjoin_core::transport::LinkConfig;
use blindjoin_psi::{Aggregate, Protocol, RunOptions};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The role on the command line, with the receiver's output file.
#[derive(Debug, Clone)]
pub enum CliRole {
    /// Learns the intersection and may write the matched rows.
    Receiver {
        /// Where to write the matched rows.
        output: Option<PathBuf>,
    },
    /// Learns only the receiver's set size.
    Sender,
}

/// Everything a party needs but its keys.
pub struct Party {
    /// Whether this party receives the intersection.
    pub receiver: bool,
    /// How to reach the peer.
    pub endpoint: Endpoint,
    /// TLS or plain TCP, the time limits and the cancel flag.
    pub link: LinkConfig,
    /// Key normalisation (named in the handshake).
    pub normalizer: Normalizer,
    /// Key fields joined into a key (named in the handshake when more than one).
    pub key_fields: usize,
    /// Whether each key is a whole record (a line of a text file, a value of a list) rather than
    /// a table's columns (named, or a Parquet file's only one): named in the handshake
    /// (`keys`), so that a party reading whole lines of a CSV file does not meet one reading its
    /// `email` column.
    pub whole_records: bool,
    /// The protocol.
    pub protocol: &'static Protocol,
    /// Protocol options (progress included).
    pub opts: RunOptions,
    /// The largest peer set accepted; `None` for max(2^20, 4 × our distinct keys).
    pub max_peer_size: Option<u64>,
    /// Whether this process runs only this party (so its CPU time is this party's).
    pub alone_in_process: bool,
    /// How the run is split into buckets ([`crate::bucketed`]; one session by default).
    pub buckets: Buckets,
}

/// What the keys came from, for the report.
pub struct KeysRead {
    /// The keyed rows.
    pub keyed: Keyed,
    /// The input's statistics line of the report (rows and keys are filled in from `keyed`).
    pub path: String,
    /// Seconds spent reading, normalising and hashing (phases, in order).
    pub phases: Vec<Phase>,
    /// The sender's value per item of `keyed` (in its order) in a sum run
    /// ([`RunOptions::values`]); `None` otherwise.
    pub values: Option<Vec<u64>>,
    /// In a bucketed run, keys read only once the run's partition is known (`keyed` is then
    /// empty): the input streams into its buckets on disk ([`crate::spill`]), and a match
    /// stands for its rows. `None`: the keys are `keyed`.
    pub stream: Option<Stream>,
}

/// Reads an input into a bucketed run's buckets, given the run's partition.
pub type ReadStream = Box<dyn FnOnce(&Partition) -> CliResult<Streamed> + Send>;

/// An input read only once a bucketed run's partition is known.
pub struct Stream {
    /// Reads the input (or reopens a resumed run's spill).
    pub read: ReadStream,
    /// A resumable run's directory ([`crate::rundir`]).
    pub run_dir: Option<Arc<Mutex<RunDir>>>,
    /// An estimate of the input's distinct keys (its rows), from which `--buckets auto`
    /// proposes B.
    pub estimate: u64,
}

/// What a [`Stream`] read.
pub struct Streamed {
    /// The buckets.
    pub split: Box<dyn Split + Send>,
    /// Rows read.
    pub rows: u64,
    /// Rows with an empty or invalid key.
    pub empty_keys: u64,
    /// Rows whose key repeats an earlier row's.
    pub duplicate_rows: u64,
}

/// A party's result: its report and, for the receiver, the matched rows (ascending).
pub struct PartyResult {
    /// The report.
    pub report: RunReport,
    /// The receiver's matched rows.
    pub rows: Option<Vec<usize>>,
}

/// Everything one file-based party needs.
pub struct FileParty<'a> {
    /// Role and output.
    pub role: CliRole,
    /// The party but its keys.
    pub party: Party,
    /// Input file.
    pub input: &'a Path,
    /// A resumable bucketed run's directory (`--resume`; [`crate::rundir`]) and what its
    /// resume may do.
    pub resume: Option<(&'a Path, ResumeOptions)>,
    /// The input's format (`None`: by [`Format::of_input`]).
    pub format: Option<Format>,
    /// Key columns (empty: one key per line, or the only column of a Parquet file).
    pub columns: &'a [String],
    /// The sender's value column in a sum run ([`crate::values`]).
    pub value_column: Option<&'a str>,
    /// How the matched rows are written.
    pub output: OutputSpec,
    /// Told the bytes read so far.
    pub read_progress: Option<Arc<dyn Fn(u64) + Send + Sync>>,
    /// Given the number of rows to write, returns what is told the rows written so far.
    pub write_progress: Option<WriteProgress>,
}

/// A progress display for writing: given the rows to write, returns what is told the rows
/// written so far.
pub type WriteProgress = Arc<dyn Fn(u64) -> Arc<dyn Fn(u64) + Send + Sync> + Send + Sync>;

/// The default bound on the peer's set size: what a data owner would accept without thinking
/// twice, max(2^20, 4 × our own set size). A larger claim lets a fake receiver test that many
/// guesses against the sender's set in one run.
pub fn default_max_peer_size(own: usize) -> u64 {
    (1u64 << 20).max(4 * own as u64)
}

/// The handshake parameter saying where the keys come from: whole records (lines, list
/// values) or named columns.
pub fn key_source_param(whole_records: bool) -> (String, String) {
    let v = if whole_records {
        "whole records (lines or values)"
    } else {
        "columns"
    };
    ("keys".to_owned(), v.to_owned())
}

/// Maps distinct keys to items, in parallel.
pub fn items_of(keys: &[Vec<u8>]) -> Vec<Item> {
    keys.par_chunks(1 << 12)
        .flat_map_iter(items_from_records)
        .collect()
}

/// Runs one party on a file (see the module doc). The receiver's output file is put in place
/// only after the protocol and the final confirmation succeeded.
pub fn run_file_party(p: FileParty<'_>) -> CliResult<PartyResult> {
    crate::input::check_key_source(p.input, p.format, p.columns)?;
    let format = Format::of_input(p.format, p.input, !p.columns.is_empty());
    if let CliRole::Receiver { output: Some(out) } = &p.role {
        check_output(out, &[p.input])?;
        check_output_spec(out, &p.output, format, p.columns.len())?;
    }
    let normalizer = p.party.normalizer.clone();
    let spec = InputSpec {
        path: p.input,
        format: p.format,
        columns: p.columns,
        normalizer: &normalizer,
    };
    let progress = p.read_progress.clone();
    let write_progress = p.write_progress.clone();
    let source = Arc::new(std::sync::OnceLock::new());
    let out_path = match &p.role {
        CliRole::Receiver { output } => output.clone(),
        CliRole::Sender => None,
    };
    let output_spec = p.output;
    // A bucketed run streams the input into its buckets once the run's partition is known, so
    // memory is one bucket's whatever the input's size.
    let streaming = p.party.buckets.split();
    if p.resume.is_some() && !streaming {
        return Err(CliError::Usage("--resume needs --buckets above 1".into()));
    }
    let spill_input = crate::spill::SpillInput {
        path: p.input.to_path_buf(),
        format: p.format,
        columns: p.columns.to_vec(),
        normalizer: normalizer.clone(),
        place: crate::spill::Place::Temp(None),
    };
    let run_dir = match p.resume {
        Some((dir, options)) => Some(Arc::new(Mutex::new(RunDir::open_with(dir, options)?))),
        None => None,
    };
    let stream_source = source.clone();
    let result = run_party(
        p.party,
        || {
            if streaming {
                let dir = run_dir.clone();
                let spill_progress = progress.clone();
                let read = move |partition: &Partition| -> CliResult<Streamed> {
                    let read_bytes = |b: u64| {
                        if let Some(f) = &spill_progress {
                            f(b);
                        }
                    };
                    let Some(dir) = dir else {
                        let s = crate::spill::spill(&spill_input, partition, &read_bytes)?;
                        let _ = stream_source.set(s.source);
                        return Ok(Streamed {
                            split: Box::new(s.split),
                            rows: s.rows,
                            empty_keys: s.empty_keys,
                            duplicate_rows: s.duplicate_rows,
                        });
                    };
                    let mut dir = dir.lock().map_err(|_| {
                        CliError::Usage("the run directory's state was lost".into())
                    })?;
                    let (split, state) = match dir.resuming() {
                        Some((state, _)) => {
                            if Fingerprint::of(&spill_input.path)? != state.input {
                                return Err(CliError::Usage(format!(
                                    "{}: the input changed since the run began (its length or \
                                     modification time differs); remove the run directory {} \
                                     to start a new run",
                                    spill_input.path.display(),
                                    dir.path().display()
                                )));
                            }
                            let digests = digests_of(state, dir.path())?;
                            let split =
                                SpillSplit::reopen(dir.spill_dir(), state.counts.clone(), digests);
                            (split, state.clone())
                        }
                        None => {
                            let input = Fingerprint::of(&spill_input.path)?;
                            let input_spec = crate::spill::SpillInput {
                                place: crate::spill::Place::Kept(dir.spill_dir()),
                                ..spill_input.clone()
                            };
                            let s = crate::spill::spill(&input_spec, partition, &read_bytes)?;
                            let state = SpillState {
                                key: key_hex(&partition.key()),
                                buckets: partition.buckets(),
                                counts: s.split.counts().to_vec(),
                                digests: s.split.digests_hex(),
                                rows: s.rows,
                                empty_keys: s.empty_keys,
                                duplicate_rows: s.duplicate_rows,
                                source: s.source,
                                input,
                            };
                            dir.save_spill(state.clone())?;
                            (s.split, state)
                        }
                    };
                    let _ = stream_source.set(state.source);
                    Ok(Streamed {
                        split: Box::new(split),
                        rows: state.rows,
                        empty_keys: state.empty_keys,
                        duplicate_rows: state.duplicate_rows,
                    })
                };
                return Ok(KeysRead {
                    keyed: Keyed::default(),
                    path: p.input.display().to_string(),
                    phases: Vec::new(),
                    values: None,
                    stream: Some(Stream {
                        read: Box::new(read),
                        run_dir: run_dir.clone(),
                        estimate: crate::input::estimate_rows(p.input, format)?,
                    }),
                });
            }
            let t = Instant::now();
            let input = read_input(&spec, &|b| {
                if let Some(f) = &progress {
                    f(b);
                }
            })?;
            let mut phases = vec![Phase {
                name: "read input".to_owned(),
                seconds: t.elapsed().as_secs_f64(),
            }];
            let Input {
                keyed,
                source: rows,
                ..
            } = input;
            let values = match p.value_column {
                Some(column) => {
                    let t = Instant::now();
                    let v = crate::values::read_values(&rows, &keyed, column)?;
                    phases.push(Phase {
                        name: "read values".to_owned(),
                        seconds: t.elapsed().as_secs_f64(),
                    });
                    Some(v)
                }
                None => None,
            };
            let _ = source.set(rows);
            Ok(KeysRead {
                keyed,
                path: p.input.display().to_string(),
                phases,
                values,
                stream: None,
            })
        },
        |rows| match (&out_path, source.get()) {
            (Some(path), Some(source)) => {
                let bar = write_progress.as_ref().map(|b| b(rows.len() as u64));
                prepare_output(path, source, rows, &output_spec, &|n| {
                    if let Some(f) = &bar {
                        f(n);
                    }
                })
                .map(Some)
            }
            _ => Ok(None),
        },
    )?;
    Ok(result)
}

/// Runs one party (see the module doc): `read` gives the keys and runs while the connection
/// is made; on the receiver, `output` prepares the output of the matched rows (ascending
/// indices), which is put in place only after the final confirmation. A failure of `read`
/// stops the connection attempt.
pub fn run_party(
    p: Party,
    read: impl FnOnce() -> CliResult<KeysRead>,
    output: impl FnOnce(&[usize]) -> CliResult<Option<Prepared>>,
) -> CliResult<PartyResult> {
    // What would fail late is refused before reading or connecting.
    blindjoin_psi::check_security(p.protocol, &p.opts)?;
    p.buckets.check(&p.opts)?;
    let start = Instant::now();
    let mut link_cfg = p.link.clone();
    let cancel = Arc::new(AtomicBool::new(false));
    let outer_cancel = link_cfg.cancel.clone();
    link_cfg.cancel = Some(cancel.clone());
    // The connection is made while the keys are read.
    let done = AtomicBool::new(false);
    let mut endpoint = p.endpoint;
    let lanes = if p.buckets.parallel > 1 {
        Some(endpoint.lanes()?)
    } else {
        None
    };
    let (keys, link) = std::thread::scope(|s| {
        let cfg = link_cfg.clone();
        let watcher_cancel = cancel.clone();
        let connecting = s.spawn(move || {
            let t = Instant::now();
            (endpoint.open(&cfg), t.elapsed().as_secs_f64())
        });
        // Forward an outer cancel (a signal caught by the command, the Python package's
        // Ctrl-C) to the connection attempt.
        let done_ref = &done;
        if let Some(outer) = outer_cancel.clone() {
            s.spawn(move || {
                while !done_ref.load(Ordering::Relaxed) {
                    if outer.load(Ordering::Relaxed) {
                        watcher_cancel.store(true, Ordering::Relaxed);
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            });
        }
        let keys = read();
        if keys.is_err() {
            cancel.store(true, Ordering::Relaxed);
        }
        let link = connecting.join();
        done.store(true, Ordering::Relaxed);
        (keys, link)
    });
    let mut keys = keys?;
    let (stream, run_dir, estimate) = match keys.stream.take() {
        Some(Stream {
            read,
            run_dir,
            estimate,
        }) => (Some(read), run_dir, estimate),
        None => (None, None, keys.keyed.items.len() as u64),
    };
    let (link, connect_seconds) = match link {
        Ok(l) => l,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    let link = link?;
    // An outer cancel (a signal caught by the command, the Python package's Ctrl-C) during the
    // protocol shuts the run's connections down, lane 0's and each further lane's, which ends
    // their blocked reads and writes with an error; further lanes are not opened.
    let sockets = LaneSockets::new(cancel.clone());
    sockets.add(&link);
    let _watch = outer_cancel.clone().map(|outer| {
        let finished = Arc::new(AtomicBool::new(false));
        let f = finished.clone();
        let watched = sockets.clone();
        std::thread::spawn(move || {
            while !f.load(Ordering::Relaxed) {
                if outer.load(Ordering::Relaxed) {
                    watched.shut_down();
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        Watch {
            finished,
            sockets: sockets.clone(),
        }
    });
    let cancelled = || {
        outer_cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    };
    let mut phases = keys.phases;
    let items = &keys.keyed.items;
    phases.push(Phase {
        name: "connect (while reading)".to_owned(),
        seconds: connect_seconds,
    });

    let mut opts = p.opts.clone();
    if let Some(values) = keys.values {
        opts.values = Some(values.into());
    }
    opts.key_params = p.normalizer.handshake_params();
    opts.key_params.push(key_source_param(p.whole_records));
    if p.key_fields > 1 {
        opts.key_params
            .push(("key_fields".to_owned(), p.key_fields.to_string()));
    }
    opts.max_peer_set_size = p.max_peer_size.unwrap_or_else(|| {
        crate::bucketed::default_max_queries(p.protocol, items.len() as u64, 1, &opts)
    });
    let mut ch = Transcript::new(Metered::new(link));
    let mut rng = rand::rng();
    let mut bucketed = None;
    let mut streamed = None;
    let streaming = stream.is_some();
    let (session, proto_phases, indices, aggregate) = if p.buckets.split() {
        let mut open_lane = || match &lanes {
            Some(l) => {
                let lane = l.open(&link_cfg)?;
                sockets.add(&lane);
                Ok(lane)
            }
            None => Err(CliError::Usage(
                "a bucketed run's lanes need --parallel".into(),
            )),
        };
        let split = |partition: &Partition| -> CliResult<Box<dyn Split + '_>> {
            match stream {
                Some(read) => {
                    let s = read(partition)?;
                    streamed = Some((s.rows, s.empty_keys, s.duplicate_rows));
                    Ok(s.split)
                }
                None => Ok(Box::new(MemorySplit::new(items, partition))),
            }
        };
        // Streamed keys are counted only once partitioned: the default bound on the peer
        // follows our count then.
        let max_peer = if streaming {
            p.max_peer_size
        } else {
            Some(opts.max_peer_set_size)
        };
        let mut out = crate::bucketed::run(
            &mut ch,
            &mut open_lane,
            estimate,
            split,
            &crate::bucketed::Party {
                protocol: p.protocol,
                receiver: p.receiver,
                opts: &opts,
                buckets: p.buckets,
                max_peer,
            },
            run_dir.as_deref(),
        )?;
        let phases = out.phases.clone();
        // The matches are rows of a streamed input, item indices otherwise.
        // (Converted in place: at 10^8 rows the matches are hundreds of megabytes.)
        let indices = out
            .matches
            .take()
            .map(|m| m.into_iter().map(|i| i as usize).collect());
        let session = out.session.clone();
        bucketed = Some(out);
        (session, phases, indices, None)
    } else if p.receiver {
        let out = p.protocol.receive(&mut ch, items, &opts, &mut rng)?;
        let phases = named(out.phases.0);
        match out.aggregate {
            // Only a number was learned: no rows to find or write.
            Some(a) => (out.session, phases, Some(Vec::new()), Some(a)),
            None => (out.session, phases, Some(out.indices), None),
        }
    } else {
        let out = p.protocol.send(&mut ch, items, &opts, &mut rng)?;
        (out.session, named(out.phases.0), None, None)
    };
    for (name, secs) in proto_phases {
        phases.push(Phase {
            name,
            seconds: secs,
        });
    }
    let t = Instant::now();

    let (intersection, rows) = match indices {
        Some(_) if aggregate.is_some() => {
            finish::receiver_confirm(&mut ch, None)?;
            finish::receiver_final(&mut ch, None)?;
            (None, None)
        }
        Some(idx) => {
            let (distinct, rows) = match &bucketed {
                Some(b) if streaming => (b.matched_items, idx),
                _ => (idx.len() as u64, keys.keyed.rows_of_items(&idx)),
            };
            let prepared = match output(&rows) {
                Ok(prep) => prep,
                Err(e) => {
                    // The sender learns that the run failed; our error is the one to show.
                    let _ = finish::receiver_confirm(&mut ch, Some(&e.to_string()));
                    return Err(e);
                }
            };
            if let Err(e) = finish::receiver_confirm(&mut ch, None) {
                // The sender waits for our verdict: tell it why we stop (best effort).
                let _ = finish::receiver_final(&mut ch, Some(&e.to_string()));
                return Err(e.into());
            }
            let mut target = None;
            if let Some(prep) = prepared {
                // Cancelled after the confirmation: the output is not put in place (the
                // temporary file goes when `prep` is dropped).
                if cancelled() {
                    let e = CliError::Cancelled;
                    let _ = finish::receiver_final(&mut ch, Some(&e.to_string()));
                    return Err(e);
                }
                target = Some(prep.path().display().to_string());
                if let Err(e) = prep.persist() {
                    let _ = finish::receiver_final(&mut ch, Some(&e.to_string()));
                    return Err(e);
                }
                lap(&mut phases, "write output", t);
            }
            finish::receiver_final(&mut ch, None)?;
            let stats = IntersectionStats {
                distinct_keys: distinct,
                rows: rows.len() as u64,
                output: target,
            };
            (Some(stats), Some(rows))
        }
        None => {
            finish::sender_confirm(&mut ch)?;
            (None, None)
        }
    };
    // The run succeeded and the output is in place: a resumable run's state goes.
    if let Some(dir) = &run_dir {
        dir.lock()
            .map_err(|_| CliError::Usage("the run directory's state was lost".into()))?
            .finish()?;
    }
    let mut traffic = ch.get_ref().traffic();
    drop(ch);
    let own_size = match session.role {
        blindjoin_core::handshake::Role::Receiver => session.receiver_size,
        blindjoin_core::handshake::Role::Sender => session.sender_size,
    };
    let buckets = bucketed.map(|b| {
        traffic += b.other_lanes;
        let stats = BucketStats {
            buckets: b.buckets.count,
            parallel: b.buckets.parallel,
            dummies: b.dummies,
            kept: b.kept,
            rerun: b.rerun.clone(),
        };
        b.close();
        stats
    });
    let report = RunReport {
        protocol: p.protocol.name,
        security: format!("{}: {}", p.protocol.security, p.protocol.assumptions),
        role: session.role.to_string(),
        kappa: session.kappa,
        lambda: session.lambda,
        session_id: hex(&session.id),
        input: Some(match streamed {
            Some((rows, empty_keys, duplicate_rows)) => InputStats {
                path: keys.path,
                rows,
                distinct_keys: own_size,
                empty_keys,
                duplicate_rows,
            },
            None => InputStats {
                path: keys.path,
                rows: keys.keyed.rows() as u64,
                distinct_keys: keys.keyed.items.len() as u64,
                empty_keys: keys.keyed.empty_keys,
                duplicate_rows: keys.keyed.duplicate_rows,
            },
        }),
        own_set_size: own_size,
        peer_set_size: session.peer_size(),
        intersection,
        aggregate,
        traffic,
        phases,
        wall_seconds: start.elapsed().as_secs_f64(),
        cpu_seconds: p.alone_in_process.then(process_cpu_seconds),
        peak_rss_bytes: p.alone_in_process.then(peak_rss_bytes),
        threads: rayon::current_num_threads(),
        buckets,
    };
    Ok(PartyResult { report, rows })
}

/// Phases with `&'static` names as owned ones.
fn named(phases: Vec<(&'static str, f64)>) -> Vec<(String, f64)> {
    phases.into_iter().map(|(n, s)| (n.to_owned(), s)).collect()
}

/// The connections of a run, to shut down when it is cancelled.
#[derive(Clone)]
struct LaneSockets {
    /// The run's own cancel flag: set when the connections are shut down, so that a lane being
    /// opened is not opened, or is shut down as soon as it is added.
    cancel: Arc<AtomicBool>,
    sockets: Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl LaneSockets {
    fn new(cancel: Arc<AtomicBool>) -> Self {
        LaneSockets {
            cancel,
            sockets: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Adds a connection of the run (shut down at once if the run is already cancelled).
    fn add(&self, link: &blindjoin_core::transport::Link) {
        let Ok(socket) = link.socket() else {
            return;
        };
        if let Ok(mut v) = self.sockets.lock() {
            v.push(socket);
        }
        if self.cancel.load(Ordering::SeqCst) {
            self.shut_down();
        }
    }

    /// Shuts every connection down.
    fn shut_down(&self) {
        self.cancel.store(true, Ordering::SeqCst);
        if let Ok(v) = self.sockets.lock() {
            for s in v.iter() {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// Ends the watcher thread of a run however the run ends, and lets go of the run's
/// connections (the watcher's copies would otherwise keep them open until it wakes).
struct Watch {
    finished: Arc<AtomicBool>,
    sockets: LaneSockets,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.finished.store(true, Ordering::Relaxed);
        if let Ok(mut v) = self.sockets.sockets.lock() {
            v.clear();
        }
    }
}

fn lap(phases: &mut Vec<Phase>, name: &str, since: Instant) -> Instant {
    let now = Instant::now();
    phases.push(Phase {
        name: name.to_owned(),
        seconds: now.duration_since(since).as_secs_f64(),
    });
    now
}

/// Protocol options from the command line.
pub fn run_options(o: &PartyOpts) -> RunOptions {
    RunOptions {
        expected_peer_set_size: o.expect_peer_size,
        memory_budget: o.memory.0,
        result: o.result,
        ..o.security.run_options()
    }
}

/// `blindjoin send` and `blindjoin receive`; `value_column` is the sender's in a sum run.
pub fn run_cli(
    o: &PartyOpts,
    role: CliRole,
    output: OutputSpec,
    value_column: Option<&str>,
) -> CliResult<()> {
    let endpoint = o.net.endpoint()?;
    let normalizer = o.keys.normalizer()?;
    if let Some(json) = &o.json {
        let mut inputs = vec![o.keys.input.as_path()];
        if let CliRole::Receiver { output: Some(out) } = &role {
            if same_file(out, json) {
                return Err(CliError::Usage(format!(
                    "{}: given as both --output and --json",
                    json.display()
                )));
            }
            inputs.push(out);
        }
        check_output(json, &inputs)?;
    }
    // SIGINT and SIGTERM cancel the run: it ends through its error path ([`crate::signals`]).
    crate::signals::install()?;
    let mut link = o.net.link_config()?;
    link.cancel = Some(crate::signals::flag());
    o.security.warn_weak();
    o.keys.check_columns()?;
    let bars = if o.quiet { Bars::hidden() } else { Bars::new() };
    let label = match role {
        CliRole::Receiver { .. } => "receiver",
        CliRole::Sender => "sender",
    };
    let mut opts = run_options(o);
    opts.progress = Some(bars.party(label));
    if matches!(role, CliRole::Sender) {
        let b = bars.clone();
        let (protocol, buckets, budget_opts) = (o.protocol, o.buckets, opts.clone());
        opts.on_session = Some(Arc::new(move |s| {
            b.println(&announced_line(protocol, s, buckets, &budget_opts));
        }));
    }
    let receiver = matches!(role, CliRole::Receiver { .. });
    let result = run_file_party(FileParty {
        role,
        party: Party {
            receiver,
            endpoint,
            link,
            normalizer,
            key_fields: o.keys.column.len(),
            whole_records: crate::input::Format::of_input(
                o.keys.format,
                &o.keys.input,
                !o.keys.column.is_empty(),
            ) == crate::input::Format::Lines,
            protocol: o.protocol,
            opts,
            max_peer_size: o.max_peer_size,
            alone_in_process: true,
            buckets: Buckets {
                count: o.buckets,
                parallel: o.parallel,
            },
        },
        input: &o.keys.input,
        resume: o.resume.as_deref().map(|dir| {
            let b = bars.clone();
            let note: crate::rundir::Note = Arc::new(move |line: &str| b.println(line));
            let options = ResumeOptions {
                allow_rerun: o.allow_rerun,
                note: Some(note),
            };
            (dir, options)
        }),
        format: o.keys.format,
        columns: &o.keys.column,
        value_column,
        output,
        read_progress: Some(bars.reading(
            label,
            std::fs::metadata(&o.keys.input).map_or(0, |m| m.len()),
        )),
        write_progress: Some(bars.writing(label)),
    });
    bars.clear();
    let report = result?.report;
    if let Some(path) = &o.json {
        write_json(path, &report)?;
    }
    eprintln!("{}", summary_line(&report));
    Ok(())
}

/// The sender's line once the receiver's size is known: the size it announced and, where the
/// protocol or the buckets let a receiver test more, how many guessed keys it can test.
pub fn announced_line(
    protocol: &Protocol,
    s: &blindjoin_core::handshake::Session,
    buckets: u32,
    opts: &RunOptions,
) -> String {
    let n = s.receiver_size;
    let tested =
        crate::bucketed::receiver_queries(protocol, (n, s.sender_size), buckets.max(1), opts);
    if tested > n {
        format!(
            "the receiver announced {n} distinct keys, so it can test up to {tested} guessed keys \
             against ours ({}{}); running the protocol",
            protocol.name,
            if buckets > 1 {
                format!(", {buckets} buckets")
            } else {
                String::new()
            }
        )
    } else {
        format!("the receiver announced {n} distinct keys; running the protocol")
    }
}

/// Writes a report as pretty JSON, atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> CliResult<()> {
    let json = serde_json::to_vec_pretty(value)
        .map_err(|e| CliError::Usage(format!("cannot encode the report: {e}")))?;
    write_atomic(path, &json)
}

/// One line a person reads at the end of `send` or `receive`.
pub fn summary_line(r: &RunReport) -> String {
    let what = match (&r.intersection, &r.aggregate) {
        (_, Some(Aggregate::Cardinality(c))) => format!(
            "{c} of {} distinct keys matched (the cardinality only)",
            r.own_set_size
        ),
        (_, Some(Aggregate::Sum(s))) => format!(
            "the sender's values over the matched keys sum to {s} (the sum only; {} distinct \
             keys of ours)",
            r.own_set_size
        ),
        (Some(i), None) => format!(
            "{} of {} distinct keys matched ({} rows{})",
            i.distinct_keys,
            r.own_set_size,
            i.rows,
            i.output
                .as_ref()
                .map(|o| format!(" written to {o}"))
                .unwrap_or_default()
        ),
        (None, None) => format!(
            "sent {} distinct keys; the receiver had {}",
            r.own_set_size, r.peer_set_size
        ),
    };
    format!(
        "{} ({}): {what}; sent {}, received {}, {:.2} s",
        r.role,
        r.protocol,
        human_bytes(r.traffic.bytes_sent),
        human_bytes(r.traffic.bytes_received),
        r.wall_seconds
    )
}

impl KeyOpts {
    /// The key normalisation, with the country code checked.
    pub fn normalizer(&self) -> CliResult<Normalizer> {
        if let Some(cc) = &self.country_code
            && (cc.is_empty() || !cc.bytes().all(|b| b.is_ascii_digit()) || cc.len() > 3)
        {
            return Err(CliError::Usage(format!(
                "--country-code must be 1 to 3 digits, not `{cc}`"
            )));
        }
        Ok(Normalizer {
            kind: self.normalize,
            country_code: self.country_code.clone(),
        })
    }

    /// Refuses a column named twice.
    pub fn check_columns(&self) -> CliResult<()> {
        let c = &self.column;
        match c
            .iter()
            .enumerate()
            .find(|(i, x)| c[..*i].iter().any(|d| d.trim() == x.trim()))
        {
            Some((_, dup)) => Err(CliError::Usage(format!(
                "--column names `{}` twice",
                dup.trim()
            ))),
            None => Ok(()),
        }
    }
}

impl SecurityOpts {
    /// Run options with this κ and λ.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            kappa: self.kappa,
            lambda: self.lambda,
            allow_weak: self.allow_weak,
            sigma: self.sigma,
            ..RunOptions::default()
        }
    }

    /// Warns on stderr when κ is below 128 or `--allow-weak` lowers λ below the default floor.
    pub fn warn_weak(&self) {
        if self.kappa < 128 {
            eprintln!(
                "warning: κ = {} is below the default of 128 bits",
                self.kappa
            );
        }
        if self.allow_weak && self.lambda < blindjoin_psi::MIN_LAMBDA {
            eprintln!(
                "warning: λ = {} is below {}: false matches and failed runs have probability up \
                 to 2^-{} (--allow-weak)",
                self.lambda,
                blindjoin_psi::MIN_LAMBDA,
                self.lambda
            );
        }
    }
}
