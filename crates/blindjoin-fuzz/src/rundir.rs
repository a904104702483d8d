//! The resumable run directory's target ([`fuzz_rundir`]): the input is a run directory's
//! files, which the target writes to a fresh directory and opens as a resume would
//! (`blindjoin_cli::rundir::RunDir::open`, which reads `spill.json`, `run.json` and every
//! `done/bucket-NNNNN.bin`), then reads what a resume reads from it: the partition key, the
//! bucket files' digests, the recorded buckets and the spill's bucket files.

use crate::Outcome;
use crate::frames::{join, split};
use crate::seeds::Seed;
use crate::targets::outcome;
use blindjoin_cli::bucketed::Split;
use blindjoin_cli::error::{CliError, CliResult};
use blindjoin_cli::report::hex;
use blindjoin_cli::rundir::{
    ResumeOptions, RunDir, RunState, SpillState, digests_of, file_digest, key_of, seal,
};
use blindjoin_cli::spill::SpillSplit;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The buckets of the input: a frame pair (record, spill file) each after the manifests.
pub const MAX_BUCKETS: usize = 16;

/// A run directory's configuration, from the target's first byte: bit 0 seals the records
/// (the target appends each record's checksum trailer as the run writes it, so that the
/// content reaches the decoders; else the files are written as given), bit 1 makes `done/`,
/// bit 2 gives the directory mode 0750 (which a resume refuses), bit 3 the sender's
/// `--allow-rerun`, bit 4 sets the spill manifest's digests to those of the given bucket files
/// (if it decodes; so that their records reach the spill's reader).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunDirCase {
    /// Seal the records.
    pub seal: bool,
    /// Make `done/`.
    pub done: bool,
    /// Mode 0750 instead of 0700.
    pub open_mode: bool,
    /// `--allow-rerun`.
    pub allow_rerun: bool,
    /// Digests of the given bucket files in the spill manifest.
    pub digests: bool,
}

impl RunDirCase {
    /// The case of a selector byte.
    pub fn from_byte(b: u8) -> Self {
        RunDirCase {
            seal: b & 1 != 0,
            done: b & 2 != 0,
            open_mode: b & 4 != 0,
            allow_rerun: b & 8 != 0,
            digests: b & 16 != 0,
        }
    }

    /// The selector byte of this case.
    pub fn to_byte(self) -> u8 {
        u8::from(self.seal)
            | u8::from(self.done) << 1
            | u8::from(self.open_mode) << 2
            | u8::from(self.allow_rerun) << 3
            | u8::from(self.digests) << 4
    }
}

/// A run directory's files as an input's frames: `spill.json`, `run.json`, then for each bucket
/// p from 0 its record `done/bucket-NNNNN.bin` and its spill file `spill/bucket-NNNNN.bin`
/// (an empty frame: no such file), at most [`MAX_BUCKETS`] buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunDirFiles {
    /// `spill.json`.
    pub spill: Vec<u8>,
    /// `run.json`.
    pub run: Vec<u8>,
    /// Per bucket: its record and its spill file.
    pub buckets: Vec<(Vec<u8>, Vec<u8>)>,
}

impl RunDirFiles {
    /// The files of an input's frames.
    pub fn from_frames(frames: &[&[u8]]) -> Self {
        let at = |k: usize| frames.get(k).map_or_else(Vec::new, |f| f.to_vec());
        let buckets = frames
            .get(2..)
            .unwrap_or_default()
            .chunks(2)
            .take(MAX_BUCKETS)
            .map(|pair| {
                (
                    pair[0].to_vec(),
                    pair.get(1).map_or_else(Vec::new, |f| f.to_vec()),
                )
            })
            .collect();
        RunDirFiles {
            spill: at(0),
            run: at(1),
            buckets,
        }
    }

    /// The input's frames of these files.
    pub fn frames(&self) -> Vec<Vec<u8>> {
        let mut out = vec![self.spill.clone(), self.run.clone()];
        for (rec, file) in &self.buckets {
            out.push(rec.clone());
            out.push(file.clone());
        }
        out
    }
}

/// A directory of its own for one run of the target, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> CliResult<Scratch> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // In memory where the system has a tmpfs there (a directory per input on a disk costs
        // milliseconds), else in the temporary directory.
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let path = base.join(format!(
            "blindjoin-fuzz-rundir-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // What a run killed before its cleanup left.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| file_error(&path, e))?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn file_error(path: &Path, source: std::io::Error) -> CliError {
    CliError::File {
        path: path.to_path_buf(),
        source,
    }
}

fn write(path: &Path, bytes: &[u8]) -> CliResult<()> {
    std::fs::write(path, bytes).map_err(|e| file_error(path, e))
}

fn mkdir(path: &Path) -> CliResult<()> {
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|e| file_error(path, e))
}

/// The record `name` with `content`: sealed as the run seals it, or as given.
fn record(case: RunDirCase, name: &str, content: &[u8]) -> Vec<u8> {
    if case.seal {
        seal(name, content.to_vec())
    } else {
        content.to_vec()
    }
}

/// Writes `files` into the run directory `dir` as `case` says.
pub(crate) fn write_dir(case: RunDirCase, files: &RunDirFiles, dir: &Path) -> CliResult<()> {
    mkdir(dir)?;
    if case.open_mode {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o750))
            .map_err(|e| file_error(dir, e))?;
    }
    let mut spill = files.spill.clone();
    if case.digests
        && let Ok(mut state) = serde_json::from_slice::<SpillState>(&spill)
    {
        for (p, d) in state.digests.iter_mut().enumerate() {
            if let Some((_, file)) = files.buckets.get(p) {
                *d = hex(&file_digest(file));
            }
        }
        if let Ok(mut bytes) = serde_json::to_vec_pretty(&state) {
            bytes.push(b'\n');
            spill = bytes;
        }
    }
    if !spill.is_empty() {
        write(&dir.join("spill.json"), &record(case, "spill.json", &spill))?;
    }
    if !files.run.is_empty() {
        write(&dir.join("run.json"), &record(case, "run.json", &files.run))?;
    }
    // A bucket's record is sealed under the run id of `run.json`, as the run seals it.
    let run_id = serde_json::from_slice::<RunState>(&files.run)
        .map(|r| r.run_id)
        .unwrap_or_default();
    let (done, spill_dir) = (dir.join("done"), dir.join("spill"));
    if case.done {
        mkdir(&done)?;
    }
    if files.buckets.iter().any(|(_, f)| !f.is_empty()) {
        mkdir(&spill_dir)?;
    }
    for (p, (rec, file)) in files.buckets.iter().enumerate() {
        let name = format!("bucket-{p:05}.bin");
        if case.done && !rec.is_empty() {
            let sealed = record(case, &format!("{run_id}/{name}"), rec);
            write(&done.join(&name), &sealed)?;
        }
        if !file.is_empty() {
            write(&spill_dir.join(&name), file)?;
        }
    }
    Ok(())
}

/// What a resume reads from the run directory `dir` (see the module doc).
pub(crate) fn open_as_resume(case: RunDirCase, dir: &Path) -> CliResult<()> {
    let options = ResumeOptions {
        allow_rerun: case.allow_rerun,
        note: None,
    };
    let d = RunDir::open_with(dir, options)?;
    let Some((spill, run)) = d.resuming() else {
        return Ok(());
    };
    let _key = key_of(spill, d.path())?;
    let digests = digests_of(spill, d.path())?;
    let finished = d.finished(run.buckets);
    for (p, _) in finished.iter().enumerate().filter(|(_, f)| **f) {
        d.load(p)?;
    }
    let split = SpillSplit::reopen(d.spill_dir(), spill.counts.clone(), digests);
    for p in 0..(spill.buckets as usize).min(MAX_BUCKETS) {
        if !finished.get(p).copied().unwrap_or(false) {
            split.load(p)?;
        }
    }
    Ok(())
}

/// A resumable run's directory, opened as a resume opens it: after a selector byte
/// ([`RunDirCase`]), the directory's files ([`RunDirFiles`]), written to a fresh directory.
pub fn fuzz_rundir(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = RunDirCase::from_byte(sel);
    let files = RunDirFiles::from_frames(&split(rest));
    let run = || -> CliResult<()> {
        let scratch = Scratch::new()?;
        let dir = scratch.0.join("run");
        write_dir(case, &files, &dir)?;
        open_as_resume(case, &dir)
    };
    outcome(run())
}

/// The bytes of a spill bucket file: `rows` records of an item (16 bytes) and its row
/// (8 bytes, big-endian), as the spill writes them.
fn spill_file(p: usize, rows: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for r in 0..rows {
        let mut item = [0u8; 16];
        item[0] = p as u8;
        item[15] = (r / 2) as u8;
        out.extend_from_slice(&item);
        out.extend_from_slice(&(10 * r + p as u64).to_be_bytes());
    }
    out
}

/// A run directory written by the run's own code (`RunDir::save_spill`, `save_run`,
/// `record`): 4 buckets, bucket 0 and 2 recorded, as the party `receiver` or the sender; its
/// files as [`RunDirFiles`] as written (`sealed: false`) or without their trailers.
fn written(receiver: bool, sealed: bool) -> CliResult<RunDirFiles> {
    let scratch = Scratch::new()?;
    let path = scratch.0.join("run");
    let mut d = RunDir::open(&path)?;
    // The input's path and fingerprint as the spill recorded them (a resume compares them with
    // the input's before it reopens the spill, which `RunDir::open` does not): fixed, so that
    // the seeds are the same in every process.
    let input = PathBuf::from("input.csv");
    let files: Vec<Vec<u8>> = (0..4).map(|p| spill_file(p, 2 + p as u64)).collect();
    d.save_spill(SpillState {
        key: hex(&[0x4b; 16]),
        buckets: 4,
        counts: (0..4).map(|p| 1 + p / 2).collect(),
        rows: 14,
        empty_keys: 0,
        duplicate_rows: 4,
        source: blindjoin_cli::input::RowSource {
            path: input.clone(),
            format: blindjoin_cli::input::Format::Csv,
            columns: vec!["id".into()],
            key_columns: vec![0],
            chunks: Vec::new(),
            rows: 14,
        },
        input: blindjoin_cli::rundir::Fingerprint {
            path: input,
            len: 7,
            modified_ns: 1_764_000_000_000_000_000,
        },
        digests: files.iter().map(|f| hex(&file_digest(f))).collect(),
    })?;
    d.save_run(RunState {
        run_id: "5eed".repeat(16),
        protocol: "kkrt16".into(),
        receiver,
        buckets: 4,
        n: 6,
        peer_n: 9,
    })?;
    for p in [0, 2] {
        let f = if receiver {
            blindjoin_cli::rundir::Finished {
                session: [p as u8 + 1; 32],
                matched: 1,
                values: vec![10 + p as u64],
            }
        } else {
            blindjoin_cli::rundir::Finished {
                session: [0; 32],
                matched: 0,
                values: Vec::new(),
            }
        };
        d.record(p, &f)?;
    }
    let read = |path: &Path| -> CliResult<Vec<u8>> {
        let bytes = std::fs::read(path).map_err(|e| file_error(path, e))?;
        Ok(if sealed {
            bytes[..bytes.len().saturating_sub(TRAILER)].to_vec()
        } else {
            bytes
        })
    };
    let mut out = RunDirFiles {
        spill: read(&path.join("spill.json"))?,
        run: read(&path.join("run.json"))?,
        buckets: Vec::new(),
    };
    for (p, file) in files.into_iter().enumerate() {
        let rec = path.join("done").join(format!("bucket-{p:05}.bin"));
        let rec = if rec.exists() {
            read(&rec)?
        } else {
            Vec::new()
        };
        out.buckets.push((rec, file));
    }
    Ok(out)
}

/// The bytes of a record's trailer: `sha256:`, 64 hex digits, a newline.
const TRAILER: usize = 7 + 64 + 1;

/// The seeds of `rundir`: the directories of a receiver's and a sender's run as the run wrote
/// them (checked as they are) and without their trailers (sealed by the target), and edits
/// that a resume refuses: changed records, manifests and spill files, a wrong mode, a missing
/// `done/`, records without manifests.
pub(crate) fn seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    let mut push = |name: &str, case: RunDirCase, files: &RunDirFiles| {
        let mut data = vec![case.to_byte()];
        data.extend(join(&files.frames()));
        out.push(Seed {
            target: "rundir",
            name: name.to_owned(),
            data,
        });
    };
    let plain = RunDirCase {
        seal: false,
        done: true,
        open_mode: false,
        allow_rerun: false,
        digests: false,
    };
    let sealing = RunDirCase {
        seal: true,
        ..plain
    };
    let (Ok(receiver), Ok(sender), Ok(receiver_open), Ok(sender_open)) = (
        written(true, false),
        written(false, false),
        written(true, true),
        written(false, true),
    ) else {
        return out;
    };
    push("ok-receiver-as-written", plain, &receiver);
    push("ok-sender-as-written", plain, &sender);
    push("ok-receiver", sealing, &receiver_open);
    push("ok-sender", sealing, &sender_open);
    push(
        "ok-receiver-rerun",
        RunDirCase {
            allow_rerun: true,
            ..sealing
        },
        &receiver_open,
    );
    push("ok-new-run", sealing, &RunDirFiles::default());
    push(
        "ok-unfinished-start",
        sealing,
        &RunDirFiles {
            spill: receiver_open.spill.clone(),
            ..RunDirFiles::default()
        },
    );
    push(
        "ok-receiver-no-done",
        RunDirCase {
            done: false,
            ..sealing
        },
        &RunDirFiles {
            buckets: receiver_open
                .buckets
                .iter()
                .map(|(_, f)| (Vec::new(), f.clone()))
                .collect(),
            ..receiver_open.clone()
        },
    );
    push(
        "err-sender-no-done",
        RunDirCase {
            done: false,
            ..sealing
        },
        &sender_open,
    );
    push(
        "err-open-mode",
        RunDirCase {
            open_mode: true,
            ..sealing
        },
        &receiver_open,
    );
    let with = |files: &RunDirFiles, edit: &dyn Fn(&mut RunDirFiles)| {
        let mut f = files.clone();
        edit(&mut f);
        f
    };
    let flip = |v: &mut Vec<u8>, k: usize| {
        if let Some(b) = v.get_mut(k) {
            *b ^= 1;
        }
    };
    // As written: a changed byte, a cut record, a record renamed to another bucket's name.
    push(
        "err-spill-changed",
        plain,
        &with(&receiver, &|f| flip(&mut f.spill, 20)),
    );
    push(
        "err-run-changed",
        plain,
        &with(&receiver, &|f| flip(&mut f.run, 20)),
    );
    push(
        "err-record-changed",
        plain,
        &with(&receiver, &|f| flip(&mut f.buckets[2].0, 45)),
    );
    push(
        "err-sender-record-changed",
        plain,
        &with(&sender, &|f| flip(&mut f.buckets[0].0, 0)),
    );
    push(
        "err-record-cut",
        plain,
        &with(&receiver, &|f| {
            let n = f.buckets[0].0.len();
            f.buckets[0].0.truncate(n - 3);
        }),
    );
    push(
        "err-record-renamed",
        plain,
        &with(&receiver, &|f| f.buckets.swap(0, 1)),
    );
    push(
        "err-records-without-manifests",
        plain,
        &with(&receiver, &|f| {
            f.spill.clear();
            f.run.clear();
        }),
    );
    // Sealed by the target: content the decoders refuse.
    let json = |f: &mut Vec<u8>, from: &str, to: &str| {
        let text = String::from_utf8_lossy(f).replacen(from, to, 1);
        *f = text.into_bytes();
    };
    let edits: Vec<(&str, RunDirFiles)> = vec![
        (
            "err-spill-not-json",
            with(&receiver_open, &|f| f.spill = b"{".to_vec()),
        ),
        (
            "err-run-not-json",
            with(&receiver_open, &|f| f.run = b"[]\n".to_vec()),
        ),
        (
            "err-key-short",
            with(&receiver_open, &|f| json(&mut f.spill, "4b4b\"", "\"")),
        ),
        (
            "err-key-not-hex",
            with(&receiver_open, &|f| json(&mut f.spill, "\"4b", "\"x4")),
        ),
        (
            "err-digests-count",
            with(&receiver_open, &|f| {
                json(&mut f.spill, "\"buckets\": 4", "\"buckets\": 5")
            }),
        ),
        (
            "err-digest-not-hex",
            with(&receiver_open, &|f| {
                json(
                    &mut f.spill,
                    "\"digests\": [\n    \"",
                    "\"digests\": [\n    \"z",
                )
            }),
        ),
        (
            "err-record-short",
            with(&receiver_open, &|f| f.buckets[0].0.truncate(39)),
        ),
        (
            "err-record-odd",
            with(&receiver_open, &|f| f.buckets[2].0.push(0)),
        ),
        (
            "err-spill-file-changed",
            with(&receiver_open, &|f| flip(&mut f.buckets[1].1, 3)),
        ),
        (
            "err-spill-file-missing",
            with(&receiver_open, &|f| f.buckets[3].1.clear()),
        ),
    ];
    for (name, files) in &edits {
        push(name, sealing, files);
    }
    // With the digests of the given spill files: records the spill's reader refuses.
    let fixed = RunDirCase {
        digests: true,
        ..sealing
    };
    push("ok-receiver-digests", fixed, &receiver_open);
    push(
        "err-spill-file-partial",
        fixed,
        &with(&receiver_open, &|f| f.buckets[1].1.push(0)),
    );
    // Counts above what the files hold, and whose sum overflows: the files' items are loaded.
    for (name, count) in [
        ("ok-spill-count-huge", "1152921504606846976"),
        ("ok-spill-count-max", "18446744073709551615"),
    ] {
        push(
            name,
            fixed,
            &with(&receiver_open, &|f| {
                json(
                    &mut f.spill,
                    "\"counts\": [\n    1,\n    1",
                    &format!("\"counts\": [\n    1,\n    {count}"),
                )
            }),
        );
    }
    out
}
