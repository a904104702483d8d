//! The directory of a resumable bucketed run (`send`/`receive --buckets B --resume DIR`).
//!
//! A resumable run keeps on disk what an interrupted run needs to go on:
//!
//! - `spill/`: the input spilled into its buckets ([`crate::spill`]), instead of a temporary
//!   directory;
//! - `spill.json`: the partition key, B, each bucket's distinct count and its file's SHA-256,
//!   the input's statistics, where its rows are ([`RowSource`]) and its fingerprint (length
//!   and modification time), written once the spill is complete;
//! - `run.json`: the run id, the protocol, the role and both distinct counts, written once the
//!   counts are exchanged;
//! - `done/bucket-NNNNN.bin`: a bucket's record: the receiver's once the bucket's session has
//!   given its matches (the id of the session, the matched items and the values (rows) they
//!   stand for), the sender's before it serves the bucket. Each is written to a temporary name
//!   and renamed, so a file that exists is whole.
//!
//! **Integrity.** Every record (`spill.json`, `run.json`, `done/bucket-NNNNN.bin`) ends with a
//! line `sha256:` and the hex SHA-256 of its content, domain-separated and bound to the file's
//! name (a done record's to the run id too, so a record renamed or copied from another run
//! fails); the spill manifest holds the SHA-256 of each bucket file, checked each time the
//! bucket is loaded. A record that fails its check is refused with a line naming the file: a
//! changed byte must not become a missing or wrong row. The check catches corruption and edits,
//! not an adversary who can write the directory (who could recompute it); that is what the
//! directory's mode keeps out. The way out: remove the run directory to start a new run; on the
//! receiver, or remove the one record to run that bucket again. A sender's record that fails
//! is not read as "not served": the sender refuses the run.
//!
//! The directory holds a hash of every key of the input and the receiver's matched rows, so it
//! is private: the directory and every directory under it are created with mode 0700, every
//! file with mode 0600 (at creation, never widened). A `--resume DIR` that already exists must
//! be a directory of ours that neither group nor others may use (mode 0700 or narrower); any
//! other is refused with a line saying so, rather than changed under the user's feet.
//!
//! A run given a directory with both manifests **resumes** the run they describe: it names the
//! old run id in the run handshake (parameter `resume`), so both parties must resume the same
//! run; it reuses the spill and the partition key without reading the input again (the input
//! must have the same length and modification time); after the counts (which must be the
//! recorded ones) both parties exchange which buckets they have recorded (the receiver's
//! first), and the buckets both recorded are kept. A directory without both manifests starts
//! a new run (whatever an earlier, unfinished start left there is removed). When the run has
//! succeeded and the output is in place, the directory's contents are removed.
//!
//! **The sender's record is authoritative.** The receiver records a bucket once its session has
//! given its matches; the sender records it before its session begins, since from then on the
//! receiver may learn the bucket's result. A bucket the sender recorded is therefore one the
//! receiver may already have queried, whatever the receiver's record says, and the receiver's
//! record cannot be checked: a receiver that removes its records would get a fresh session for
//! each bucket it removed, another query of the sender's bucket with items of its choosing,
//! which multiplies the bound the malicious-secure protocols put on what one session lets a
//! receiver query.
//! So a bucket the sender recorded and the receiver did not is not served again: the sender
//! refuses the resume with one line naming the buckets, and the receiver fails with the
//! sender's reason, unless the sender's operator passes `--allow-rerun`; then both name the
//! buckets served again (in a line, and in the report's `rerun`). Buckets neither party
//! recorded, or only the receiver, run again from scratch (the sender never began them), with
//! fresh randomness and fresh dummies, as sessions of the new run. An honest run interrupted
//! mid-bucket leaves at most one such bucket per lane: its resume needs `--allow-rerun`, which
//! the sender's operator grants knowing the run was interrupted, not tampered with.
//!
//! A receiver whose `done/` is missing has no record (it is created again, 0700); a sender's
//! missing `done/` would forget what it served, so that run is refused (start a new run).

use crate::error::{CliError, CliResult};
use crate::input::RowSource;
use crate::report::hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Manifest of the spill (see the [module doc](self)).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SpillState {
    /// The partition key, hex.
    pub key: String,
    /// Buckets.
    pub buckets: u32,
    /// Distinct items of each bucket.
    pub counts: Vec<u64>,
    /// Rows read.
    pub rows: u64,
    /// Rows with an empty or invalid key.
    pub empty_keys: u64,
    /// Rows whose key repeats an earlier row's.
    pub duplicate_rows: u64,
    /// Where the input's rows are.
    pub source: RowSource,
    /// The input's fingerprint.
    pub input: Fingerprint,
    /// The SHA-256 of each bucket's file, hex.
    pub digests: Vec<String>,
}

/// What identifies an input file cheaply: its length and modification time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The file.
    pub path: PathBuf,
    /// Length in bytes.
    pub len: u64,
    /// Modification time, nanoseconds since the epoch.
    pub modified_ns: u128,
}

impl Fingerprint {
    /// The fingerprint of `path` now.
    pub fn of(path: &Path) -> CliResult<Fingerprint> {
        let meta = std::fs::metadata(path).map_err(|e| file_error(path, e))?;
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Ok(Fingerprint {
            path: path.to_path_buf(),
            len: meta.len(),
            modified_ns,
        })
    }
}

/// Manifest of the run (see the [module doc](self)).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunState {
    /// The run id, hex.
    pub run_id: String,
    /// The protocol.
    pub protocol: String,
    /// Whether this party receives.
    pub receiver: bool,
    /// Buckets.
    pub buckets: u32,
    /// Our distinct items.
    pub n: u64,
    /// The peer's distinct items.
    pub peer_n: u64,
}

/// A finished bucket, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// The id of the bucket's session (zeros in the sender's record, written before the session
    /// begins).
    pub session: [u8; 32],
    /// The receiver's matched distinct items.
    pub matched: u64,
    /// The values they stand for (the receiver's; empty for the sender).
    pub values: Vec<u64>,
}

/// Told one line for the user (a note beside the progress display).
pub type Note = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// What a resumed run may do, and where it says what it does.
#[derive(Clone, Default)]
pub struct ResumeOptions {
    /// Serve again the buckets this party (the sender) recorded but the receiver did not
    /// (`--allow-rerun`; the receiver's has no effect: the sender decides).
    pub allow_rerun: bool,
    /// Told the line naming the buckets served again.
    pub note: Option<Note>,
}

impl std::fmt::Debug for ResumeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeOptions")
            .field("allow_rerun", &self.allow_rerun)
            .finish_non_exhaustive()
    }
}

/// A resumable run's directory.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    spill: Option<SpillState>,
    run: Option<RunState>,
    options: ResumeOptions,
    /// Which buckets the run being resumed recorded (records checked when opened).
    recorded: Vec<bool>,
}

fn file_error(path: &Path, source: std::io::Error) -> CliError {
    CliError::File {
        path: path.to_path_buf(),
        source,
    }
}

/// A manifest that is not what the run wrote.
fn corrupt(path: &Path, what: &str) -> CliError {
    let dir = path.parent().unwrap_or(Path::new("."));
    CliError::Usage(format!(
        "{}: {what}; the run directory was changed since the run wrote it: remove it ({}) to \
         start a new run",
        path.display(),
        dir.display()
    ))
}

/// The last line of every record: `sha256:`, 64 hex digits, a newline.
const TRAILER: usize = 7 + 64 + 1;

/// The digest that seals a record's `content` under `name` (the file's name, and for a
/// bucket's record the run id before it).
fn digest(name: &str, content: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"blindjoin/run directory/record\0");
    h.update(name.as_bytes());
    h.update([0]);
    h.update(content);
    h.finalize().into()
}

/// `content` followed by its trailer (see the [module doc](self)): the record `name` as the
/// run writes it (`spill.json`, `run.json`, or for a bucket's record the run id, `/` and the
/// file's name). Public for the fuzz target, which writes run directories of its input.
pub fn seal(name: &str, mut content: Vec<u8>) -> Vec<u8> {
    let d = digest(name, &content);
    content.extend_from_slice(b"sha256:");
    content.extend_from_slice(hex(&d).as_bytes());
    content.push(b'\n');
    content
}

/// The content of a sealed record, if its trailer is the digest of its content under `name`.
fn unseal<'a>(name: &str, bytes: &'a [u8]) -> Option<&'a [u8]> {
    let (content, trailer) = bytes.split_at(bytes.len().checked_sub(TRAILER)?);
    let given = trailer.strip_prefix(b"sha256:")?.strip_suffix(b"\n")?;
    (given == hex(&digest(name, content)).as_bytes()).then_some(content)
}

/// The SHA-256 of a spill's bucket file, as [`SpillState::digests`] holds it.
pub fn file_digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Creates the directory `path` and its missing parents, each private to the user (mode 0700);
/// a directory that exists is left as it is.
pub fn create_private_dir(path: &Path) -> CliResult<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|e| file_error(path, e))
}

/// Creates the new file `path` private to the user (mode 0600); an existing file is an error,
/// so the mode is always the one given here.
pub fn create_private_file(path: &Path) -> CliResult<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| file_error(path, e))
}

/// Writes `bytes` to `path` whole or not at all (a new private file under a temporary name,
/// synced, then renamed, and the directory synced).
fn write_whole(path: &Path, bytes: &[u8]) -> CliResult<()> {
    let tmp = path.with_extension("tmp");
    // What an interrupted write left; created anew so that its mode is ours.
    remove_if_present(&tmp)?;
    let mut f = create_private_file(&tmp)?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| file_error(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| file_error(path, e))?;
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(dir)
    {
        // Best effort: the record is in place; this makes its name durable.
        let _ = d.sync_all();
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> CliResult<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(file_error(path, e)),
    }
}

/// Refuses an existing run directory that is not private to this user.
fn check_private(path: &Path, meta: &std::fs::Metadata) -> CliResult<()> {
    if !meta.is_dir() {
        return Err(CliError::Usage(format!(
            "{}: not a directory; --resume names the directory of a run's state",
            path.display()
        )));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(CliError::Usage(format!(
            "{}: owned by another user; a run directory must be this user's own (name a new \
             directory)",
            path.display()
        )));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(CliError::Usage(format!(
            "{}: group or others have access (mode {mode:04o}), and a run directory holds a \
             hash of every key and the matched rows: make it private (chmod 700 {}) or name a \
             new directory",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path, name: &str) -> CliResult<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let content = unseal(name, &bytes).ok_or_else(|| {
                corrupt(
                    path,
                    "not the manifest this run wrote (its checksum differs)",
                )
            })?;
            serde_json::from_slice(content)
                .map(Some)
                .map_err(|e| corrupt(path, &format!("not a manifest ({e})")))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(file_error(path, e)),
    }
}

fn write_json<T: Serialize>(path: &Path, name: &str, value: &T) -> CliResult<()> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| CliError::Usage(format!("cannot encode {}: {e}", path.display())))?;
    bytes.push(b'\n');
    write_whole(path, &seal(name, bytes))
}

const SPILL_JSON: &str = "spill.json";
const RUN_JSON: &str = "run.json";

impl RunDir {
    /// Opens (creating it if missing) the run directory `path`. With both manifests it is a
    /// run to resume; otherwise whatever an unfinished start left is removed.
    pub fn open(path: &Path) -> CliResult<RunDir> {
        RunDir::open_with(path, ResumeOptions::default())
    }

    /// [`RunDir::open`] with what a resume may do.
    pub fn open_with(path: &Path, options: ResumeOptions) -> CliResult<RunDir> {
        match std::fs::metadata(path) {
            Ok(meta) => check_private(path, &meta)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_private_dir(path)?,
            Err(e) => return Err(file_error(path, e)),
        }
        let spill: Option<SpillState> = read_json(&path.join(SPILL_JSON), SPILL_JSON)?;
        let run: Option<RunState> = read_json(&path.join(RUN_JSON), RUN_JSON)?;
        let mut dir = RunDir {
            path: path.to_path_buf(),
            spill,
            run,
            options,
            recorded: Vec::new(),
        };
        match &dir.run {
            Some(run) if dir.spill.is_some() => {
                // `done/` is made with the run's manifest: if it is gone, so are the records.
                let done = dir.done_dir();
                if !done.is_dir() {
                    if !run.receiver {
                        return Err(CliError::Usage(format!(
                            "{}: missing, so which buckets this side served is unknown, and \
                             serving them again would let the receiver query them twice; remove \
                             the run directory {} to start a new run",
                            done.display(),
                            path.display()
                        )));
                    }
                    create_private_dir(&done)?;
                }
                // Every record is checked now, before anything is connected or served.
                dir.recorded = (0..run.buckets as usize)
                    .map(|p| dir.check_record(p, run))
                    .collect::<CliResult<_>>()?;
            }
            _ => {
                // Records without both manifests are not an unfinished start: keep them.
                if dir.done_dir().is_dir() && dir.recorded_any()? {
                    return Err(CliError::Usage(format!(
                        "{}: buckets are recorded finished, but the run's manifests ({RUN_JSON}, \
                         {SPILL_JSON}) are missing; remove the run directory to start a new run",
                        path.display()
                    )));
                }
                dir.clear()?;
            }
        }
        Ok(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this party serves again the buckets it recorded but the receiver did not.
    pub fn allow_rerun(&self) -> bool {
        self.options.allow_rerun
    }

    /// Tells the user `line` (beside the progress display), if anyone listens.
    pub fn note(&self, line: &str) {
        if let Some(note) = &self.options.note {
            note(line);
        }
    }

    /// Whether `done/` holds any bucket's record.
    fn recorded_any(&self) -> CliResult<bool> {
        let done = self.done_dir();
        let entries = std::fs::read_dir(&done).map_err(|e| file_error(&done, e))?;
        for e in entries {
            let e = e.map_err(|e| file_error(&done, e))?;
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("bucket-") && name.ends_with(".bin") {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The run being resumed: both manifests, if the directory holds them.
    pub fn resuming(&self) -> Option<(&SpillState, &RunState)> {
        self.spill.as_ref().zip(self.run.as_ref())
    }

    /// Where the spill's bucket files go.
    pub fn spill_dir(&self) -> PathBuf {
        self.path.join("spill")
    }

    fn done_dir(&self) -> PathBuf {
        self.path.join("done")
    }

    fn done_path(&self, p: usize) -> PathBuf {
        self.done_dir().join(format!("bucket-{p:05}.bin"))
    }

    /// Records the finished spill.
    pub fn save_spill(&mut self, state: SpillState) -> CliResult<()> {
        write_json(&self.path.join(SPILL_JSON), SPILL_JSON, &state)?;
        self.spill = Some(state);
        Ok(())
    }

    /// Records the run once the counts are exchanged.
    pub fn save_run(&mut self, state: RunState) -> CliResult<()> {
        create_private_dir(&self.done_dir())?;
        write_json(&self.path.join(RUN_JSON), RUN_JSON, &state)?;
        self.run = Some(state);
        Ok(())
    }

    /// The name a bucket's record is sealed under: the run id and the file's name.
    fn record_name(run: &RunState, p: usize) -> String {
        format!("{}/bucket-{p:05}.bin", run.run_id)
    }

    fn run_state(&self) -> CliResult<&RunState> {
        self.run.as_ref().ok_or_else(|| {
            CliError::Usage(format!(
                "{}: the run's manifest is not written yet",
                self.path.display()
            ))
        })
    }

    /// Records bucket `p` as finished (on the sender: as served).
    pub fn record(&mut self, p: usize, finished: &Finished) -> CliResult<()> {
        let run = self.run_state()?;
        let mut bytes = Vec::with_capacity(40 + 8 * finished.values.len() + TRAILER);
        bytes.extend_from_slice(&finished.session);
        bytes.extend_from_slice(&finished.matched.to_le_bytes());
        for v in &finished.values {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        write_whole(&self.done_path(p), &seal(&Self::record_name(run, p), bytes))?;
        if self.recorded.len() <= p {
            self.recorded.resize(p + 1, false);
        }
        self.recorded[p] = true;
        Ok(())
    }

    /// Whether bucket `p` is recorded, its record checked (see [`RunDir::load`]).
    fn check_record(&self, p: usize, run: &RunState) -> CliResult<bool> {
        match self.read_record(p, run) {
            Ok(_) => Ok(true),
            Err(None) => Ok(false),
            Err(Some(e)) => Err(e),
        }
    }

    /// Which of the `buckets` buckets are recorded (the records found when the directory was
    /// opened were checked then).
    pub fn finished(&self, buckets: u32) -> Vec<bool> {
        (0..buckets as usize)
            .map(|p| self.recorded.get(p).copied().unwrap_or(false))
            .collect()
    }

    /// Bucket `p`'s record, checked.
    pub fn load(&self, p: usize) -> CliResult<Finished> {
        let run = self.run_state()?;
        self.read_record(p, run).map_err(|e| {
            e.unwrap_or_else(|| {
                file_error(
                    &self.done_path(p),
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                )
            })
        })
    }

    /// Bucket `p`'s record; `Err(None)` if there is none.
    fn read_record(&self, p: usize, run: &RunState) -> Result<Finished, Option<CliError>> {
        let path = self.done_path(p);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
            Err(e) => return Err(Some(file_error(&path, e))),
        };
        let bad = || {
            let what = "not the record this run wrote (its checksum differs)";
            Some(CliError::Usage(if run.receiver {
                format!(
                    "{}: {what}: remove it to run bucket {p} again (the sender must allow that \
                     with --allow-rerun), or remove the run directory {} to start a new run",
                    path.display(),
                    self.path.display()
                )
            } else {
                format!(
                    "{}: {what}, and it records that this side served bucket {p}, which must \
                     not be taken for a bucket never served: remove the run directory {} to \
                     start a new run",
                    path.display(),
                    self.path.display()
                )
            }))
        };
        let content = unseal(&Self::record_name(run, p), &bytes).ok_or_else(bad)?;
        if content.len() < 40 || (content.len() - 40) % 8 != 0 {
            return Err(bad());
        }
        let (head, rest) = content.split_at(40);
        let mut session = [0u8; 32];
        session.copy_from_slice(&head[..32]);
        let word = |c: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            u64::from_le_bytes(w)
        };
        let matched = word(&head[32..40]);
        let values = rest.chunks_exact(8).map(word).collect();
        Ok(Finished {
            session,
            matched,
            values,
        })
    }

    /// Removes what the run keeps (the manifests, the spill, the finished buckets), and the
    /// directory itself if that leaves it empty.
    pub fn clear(&mut self) -> CliResult<()> {
        for name in [RUN_JSON, SPILL_JSON, "run.tmp", "spill.tmp"] {
            remove_if_present(&self.path.join(name))?;
        }
        for dir in [self.spill_dir(), self.done_dir()] {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(file_error(&dir, e)),
            }
        }
        self.spill = None;
        self.run = None;
        Ok(())
    }

    /// Removes the directory's contents after a run that succeeded.
    pub fn finish(&mut self) -> CliResult<()> {
        self.clear()?;
        // Only if empty: the directory may hold what the user put there.
        let _ = std::fs::remove_dir(&self.path);
        Ok(())
    }
}

/// The partition key recorded in a spill manifest.
pub fn key_of(state: &SpillState, path: &Path) -> CliResult<[u8; 16]> {
    let bad = || {
        corrupt(
            &path.join(SPILL_JSON),
            "the partition key is not 32 hex digits",
        )
    };
    if state.key.len() != 32 {
        return Err(bad());
    }
    let mut key = [0u8; 16];
    for (i, k) in key.iter_mut().enumerate() {
        let pair = state.key.get(2 * i..2 * i + 2).ok_or_else(bad)?;
        *k = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
    }
    Ok(key)
}

/// The bucket files' digests recorded in a spill manifest.
pub fn digests_of(state: &SpillState, path: &Path) -> CliResult<Vec<[u8; 32]>> {
    let bad = || {
        corrupt(
            &path.join(SPILL_JSON),
            "the bucket counts and file digests are not one per bucket",
        )
    };
    let buckets = state.buckets as usize;
    if state.digests.len() != buckets || state.counts.len() != buckets {
        return Err(bad());
    }
    state
        .digests
        .iter()
        .map(|h| {
            let mut d = [0u8; 32];
            if h.len() != 64 {
                return Err(bad());
            }
            for (i, b) in d.iter_mut().enumerate() {
                *b = u8::from_str_radix(h.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16)
                    .map_err(|_| bad())?;
            }
            Ok(d)
        })
        .collect()
}

/// The hex form of a partition key, as [`SpillState::key`] holds it.
pub fn key_hex(key: &[u8; 16]) -> String {
    hex(key)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_keeps_finished_buckets_and_resumes_only_with_both_manifests() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run");
        let mut dir = RunDir::open(&path).unwrap();
        assert!(dir.resuming().is_none());
        let key = [7u8; 16];
        let input = tmp.path().join("in.csv");
        std::fs::write(&input, "id\n1\n").unwrap();
        let spill = SpillState {
            key: key_hex(&key),
            buckets: 4,
            counts: vec![1, 0, 0, 0],
            rows: 1,
            empty_keys: 0,
            duplicate_rows: 0,
            source: RowSource {
                path: input.clone(),
                format: crate::input::Format::Csv,
                columns: vec!["id".into()],
                key_columns: vec![0],
                chunks: Vec::new(),
                rows: 1,
            },
            input: Fingerprint::of(&input).unwrap(),
            digests: (0..4u8).map(|p| hex(&file_digest(&[p]))).collect(),
        };
        dir.save_spill(spill.clone()).unwrap();
        // A spill without a run manifest is an unfinished start: opened again, it is cleared.
        let dir2 = RunDir::open(&path).unwrap();
        assert!(dir2.resuming().is_none());
        assert!(!path.join(SPILL_JSON).exists());

        let mut dir = dir2;
        dir.save_spill(spill).unwrap();
        dir.save_run(RunState {
            run_id: "ab".repeat(32),
            protocol: "kkrt16".into(),
            receiver: true,
            buckets: 4,
            n: 1,
            peer_n: 3,
        })
        .unwrap();
        let rec = Finished {
            session: [9u8; 32],
            matched: 2,
            values: vec![5, 6, 11],
        };
        dir.record(2, &rec).unwrap();
        assert_eq!(dir.finished(4), vec![false, false, true, false]);

        let mut again = RunDir::open(&path).unwrap();
        let (s, r) = again.resuming().expect("both manifests");
        assert_eq!(key_of(s, again.path()).unwrap(), key);
        assert_eq!(s.counts, vec![1, 0, 0, 0]);
        assert_eq!(r.peer_n, 3);
        assert_eq!(again.load(2).unwrap(), rec);
        assert_eq!(again.finished(4), vec![false, false, true, false]);

        assert_eq!(digests_of(s, again.path()).unwrap()[3], file_digest(&[3]));

        // A record cut short or with one byte changed is refused, not read as other values;
        // so is one renamed to another bucket's name.
        let rec_path = path.join("done").join("bucket-00002.bin");
        let bytes = std::fs::read(&rec_path).unwrap();
        let refused = |dir: &RunDir| {
            let e = dir.load(2).unwrap_err().to_string();
            assert!(
                e.contains("bucket-00002.bin: not the record this run wrote"),
                "{e}"
            );
            assert!(e.contains("remove it to run bucket 2 again"), "{e}");
            let e = RunDir::open(&path).unwrap_err().to_string();
            assert!(
                e.contains("bucket-00002.bin: not the record this run wrote"),
                "{e}"
            );
        };
        std::fs::write(&rec_path, &bytes[..bytes.len() - 3]).unwrap();
        refused(&again);
        let mut flipped = bytes.clone();
        flipped[45] ^= 1;
        std::fs::write(&rec_path, &flipped).unwrap();
        refused(&again);
        again.record(1, &rec).unwrap();
        std::fs::rename(path.join("done").join("bucket-00001.bin"), &rec_path).unwrap();
        refused(&again);
        std::fs::write(&rec_path, &bytes).unwrap();
        assert_eq!(RunDir::open(&path).unwrap().load(2).unwrap(), rec);

        // A manifest with one byte changed is refused, and the directory kept.
        for name in [RUN_JSON, SPILL_JSON] {
            let m = path.join(name);
            let text = std::fs::read(&m).unwrap();
            let mut changed = text.clone();
            changed[10] ^= 1;
            std::fs::write(&m, &changed).unwrap();
            let e = RunDir::open(&path).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{name}: not the manifest this run wrote")),
                "{e}"
            );
            assert!(e.contains("remove it"), "{e}");
            std::fs::write(&m, &text).unwrap();
        }

        let mut again = RunDir::open(&path).unwrap();
        again.finish().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_senders_record_that_fails_its_check_is_not_taken_for_a_bucket_never_served() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run");
        let mut dir = RunDir::open(&path).unwrap();
        let input = tmp.path().join("in.txt");
        std::fs::write(&input, "1\n").unwrap();
        dir.save_spill(SpillState {
            key: key_hex(&[1; 16]),
            buckets: 2,
            counts: vec![1, 0],
            rows: 1,
            empty_keys: 0,
            duplicate_rows: 0,
            source: RowSource {
                path: input.clone(),
                format: crate::input::Format::Lines,
                columns: Vec::new(),
                key_columns: Vec::new(),
                chunks: Vec::new(),
                rows: 1,
            },
            input: Fingerprint::of(&input).unwrap(),
            digests: vec![hex(&[0; 32]), hex(&[0; 32])],
        })
        .unwrap();
        dir.save_run(RunState {
            run_id: "cd".repeat(32),
            protocol: "ecdh".into(),
            receiver: false,
            buckets: 2,
            n: 1,
            peer_n: 1,
        })
        .unwrap();
        let served = Finished {
            session: [0; 32],
            matched: 0,
            values: Vec::new(),
        };
        dir.record(1, &served).unwrap();
        assert_eq!(RunDir::open(&path).unwrap().finished(2), vec![false, true]);
        let rec = path.join("done").join("bucket-00001.bin");
        let mut bytes = std::fs::read(&rec).unwrap();
        bytes[0] ^= 0x80;
        std::fs::write(&rec, &bytes).unwrap();
        let e = RunDir::open(&path).unwrap_err().to_string();
        assert!(e.contains("this side served bucket 1"), "{e}");
        assert!(e.contains("to start a new run"), "{e}");
        assert!(rec.exists() && path.join(RUN_JSON).exists());
        // Its records gone with `done/`, a sender's run is refused, not run again.
        std::fs::remove_dir_all(path.join("done")).unwrap();
        let e = RunDir::open(&path).unwrap_err().to_string();
        assert!(
            e.contains("done: missing, so which buckets this side served"),
            "{e}"
        );
    }
}
