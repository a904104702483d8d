//! Labels on disk, for label sets larger than memory: [`DiskStore`].
//!
//! **Layout.** [`DiskStore::open`] takes a directory and keeps everything under its
//! subdirectory `blindjoin-runs/`: a file `lock`, locked (`flock`) while the store is open, so
//! a second server on the same directory is refused; and one file per (run, party),
//! `<SHA-256 of the run key, hex>.p<party>.labels`, holding the party's labels exactly as they
//! arrive: ℓ bytes each, ascending, nothing else. Run keys come from clients; hashed, any key
//! (with `/`, `..`, NUL, 200 characters) names a file inside the directory. A server forgets
//! its runs when it stops, so `open` deletes every `*.labels` file an earlier server left in
//! `blindjoin-runs/`; other files there are left alone. `blindjoin-runs/` is private to the
//! server's user (mode 0700, set again if it existed) and its files are 0600: the labels are
//! keyed hashes of the clients' keys, which only the clients can relate to keys, but nobody
//! else on the host needs them. [`DiskStore::remove_all`] deletes every label file, for a
//! server that is stopped (SIGINT, SIGTERM) with runs in progress.
//!
//! **Writing.** A writer streams the labels into its file through a buffer of
//! [`DEFAULT_BUFFER`] bytes (4 MiB; [`DiskStore::with_buffer`] sets another size), so a writer
//! holds one buffer whatever the count. `finish` flushes the buffer and does not fsync: runs do
//! not outlive the process, and the labels are read back through the page cache. A failed
//! write (a full disk: `No space left on device`) is an [`Error::Io`] that fails the run. A
//! writer dropped before `finish` deletes its file; `remove` deletes every file of the run,
//! finished or not (a writer still open writes on into its deleted file, whose space is freed
//! when it closes); a party cannot write more than the labels it announced.
//!
//! **Intersecting.** [`merge_sources`] over one reader per party, each reading its file in
//! blocks of the buffer size: the same merge as [`MemoryStore`](super::store::MemoryStore)'s.
//! Memory: the bit vectors (count/8 bytes per party) and one buffer per party.
//!
//! **Measured** (2026-11-24; `cargo build --release -p blindjoin-psi --example disk_merge`,
//! then `/usr/bin/time -v target/release/examples/disk_merge 100000000 --len=ℓ [--cold]`: two
//! parties of 10^8 random sorted labels, half shared; `--cold` drops the files from the page
//! cache first; the machine's 2 cores were shared with other builds at load 9, so CPU time is
//! the steadier figure):
//!
//! | ℓ | `intersect`, page cache | `intersect`, from disk |
//! | --- | --- | --- |
//! | 10 | 1.85 s CPU (4.64 s wall): 108 M labels per CPU second, 54 M per party stream | 4.08 s CPU (10.1 s wall) |
//! | 13 | 1.83 s CPU (4.53 s wall) | 3.43 s CPU (9.0 s wall) |
//!
//! Peak RSS 34 MB (the two bit vectors, 25 MB, and the buffers); ℓ bytes on disk per label.
//! Two clients of 10^9 labels get ℓ = 13 at λ = 40 ([`label_len`](super::labels::label_len)):
//! 26 GB of files, about 18 s of merge CPU, and 37 s to read the files at this disk's 700 MB/s
//! (`dd iflag=direct`).

use super::store::{LabelSource, LabelWriter, Store, merge_sources};
use blindjoin_core::{Error, Result};
use sha2::{Digest, Sha256};
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The subdirectory of the store's directory that holds its files.
pub const RUNS_DIR: &str = "blindjoin-runs";

/// The suffix of a label file.
pub const LABELS_SUFFIX: &str = ".labels";

/// The lock file that keeps a second server out of the directory.
const LOCK_FILE: &str = "lock";

/// Bytes of buffer per open label file, unless [`DiskStore::with_buffer`] says otherwise.
pub const DEFAULT_BUFFER: usize = 4 << 20;

/// Label sets as files, one per (run, party), under `<dir>/blindjoin-runs/`.
pub struct DiskStore {
    runs: PathBuf,
    buffer: usize,
    /// Held (locked) for the store's life.
    _lock: File,
}

impl DiskStore {
    /// A store in `dir` (created if missing) with buffers of [`DEFAULT_BUFFER`] bytes.
    pub fn open(dir: &Path) -> Result<DiskStore> {
        DiskStore::with_buffer(dir, DEFAULT_BUFFER)
    }

    /// A store in `dir` whose label files are written and read through buffers of `buffer`
    /// bytes (at least 16). Creates `<dir>/blindjoin-runs/`, locks it against a second
    /// server, and deletes the label files an earlier server left there.
    pub fn with_buffer(dir: &Path, buffer: usize) -> Result<DiskStore> {
        let runs = dir.join(RUNS_DIR);
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&runs)
            .and_then(|()| fs::set_permissions(&runs, fs::Permissions::from_mode(0o700)))
            .map_err(|e| {
                Error::io(
                    format!("creating the label store directory {}", runs.display()),
                    e,
                )
            })?;
        let lock_path = runs.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| {
                Error::io(
                    format!(
                        "opening the label store's lock file {}",
                        lock_path.display()
                    ),
                    e,
                )
            })?;
        lock.try_lock().map_err(|e| {
            Error::io(
                format!(
                    "the label store directory {} is in use by another blindjoin server",
                    runs.display()
                ),
                e.into(),
            )
        })?;
        let store = DiskStore {
            runs,
            buffer: buffer.max(16),
            _lock: lock,
        };
        for path in store.label_files("")? {
            fs::remove_file(&path).map_err(|e| {
                Error::io(
                    format!("deleting the leftover label file {}", path.display()),
                    e,
                )
            })?;
        }
        Ok(store)
    }

    /// Deletes every label file of every run (finished or being written; a writer still open
    /// writes on into its deleted file). For a server that stops with runs in progress.
    pub fn remove_all(&self) {
        if let Ok(files) = self.label_files("") {
            for path in files {
                let _ = fs::remove_file(path);
            }
        }
    }

    /// The directory that holds the label files (`<dir>/blindjoin-runs`).
    pub fn runs_dir(&self) -> &Path {
        &self.runs
    }

    /// The label files in the directory (finished or being written), for checks that a run
    /// leaves nothing behind.
    pub fn files(&self) -> Result<usize> {
        Ok(self.label_files("")?.len())
    }

    /// The label files whose names start with `prefix`.
    fn label_files(&self, prefix: &str) -> Result<Vec<PathBuf>> {
        let context = || format!("listing the label store directory {}", self.runs.display());
        let mut files = Vec::new();
        for entry in fs::read_dir(&self.runs).map_err(|e| Error::io(context(), e))? {
            let entry = entry.map_err(|e| Error::io(context(), e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(prefix) && name.ends_with(LABELS_SUFFIX) {
                files.push(entry.path());
            }
        }
        Ok(files)
    }

    /// The file name prefix of `run`: SHA-256 of the run key in hex, so that any key (a
    /// client-chosen string with `/`, `..` or NUL) names a file inside the directory.
    fn prefix(run: &str) -> String {
        let digest = Sha256::digest(run.as_bytes());
        let mut hex = String::with_capacity(65);
        for b in digest.iter() {
            hex.push(char::from(HEX[usize::from(b >> 4)]));
            hex.push(char::from(HEX[usize::from(b & 15)]));
        }
        hex.push('.');
        hex
    }

    fn path(&self, run: &str, party: u32) -> PathBuf {
        self.runs
            .join(format!("{}p{party}{LABELS_SUFFIX}", Self::prefix(run)))
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl Store for DiskStore {
    fn describe(&self) -> String {
        format!("disk ({})", self.runs.display())
    }

    fn writer(
        &self,
        run: &str,
        party: u32,
        label_len: usize,
        count: u64,
    ) -> Result<Box<dyn LabelWriter>> {
        let path = self.path(run, party);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Error::io(format!("creating the label file of party {party}"), e))?;
        Ok(Box::new(DiskWriter {
            out: Some(BufWriter::with_capacity(self.buffer, file)),
            path,
            party,
            left: count.saturating_mul(label_len as u64),
        }))
    }

    fn intersect(&self, run: &str, label_len: usize, counts: &[u64]) -> Result<Vec<Vec<u8>>> {
        let block = (self.buffer / label_len.max(1)).max(1) * label_len;
        let mut sources = Vec::with_capacity(counts.len());
        for (p, &c) in counts.iter().enumerate() {
            let party = p as u32 + 1;
            let bytes = c.saturating_mul(label_len as u64);
            let not_stored = || Error::InvalidParam {
                field: "run",
                reason: format!("the labels of party {party} are not all stored"),
            };
            let file = File::open(self.path(run, party)).map_err(|_| not_stored())?;
            let len = file
                .metadata()
                .map_err(|e| Error::io(format!("reading the label file of party {party}"), e))?
                .len();
            if len != bytes {
                return Err(not_stored());
            }
            sources.push(FileSource {
                file,
                party,
                buf: vec![0u8; block],
                filled: 0,
                left: bytes,
            });
        }
        merge_sources(sources, counts, label_len)
    }

    fn stop(&self) {
        self.remove_all();
    }

    fn remove(&self, run: &str) {
        // Best effort: a file that cannot be deleted now is deleted by the next `open`.
        if let Ok(files) = self.label_files(&Self::prefix(run)) {
            for path in files {
                let _ = fs::remove_file(path);
            }
        }
    }
}

/// One party's labels on their way into a file.
struct DiskWriter {
    /// `None` once finished.
    out: Option<BufWriter<File>>,
    path: PathBuf,
    party: u32,
    /// Bytes the party may still send (its announced count).
    left: u64,
}

impl LabelWriter for DiskWriter {
    fn write(&mut self, labels: &[u8]) -> Result<()> {
        let n = labels.len() as u64;
        if n > self.left {
            return Err(Error::InvalidParam {
                field: "labels",
                reason: format!("party {} sent more labels than it announced", self.party),
            });
        }
        self.left -= n;
        let party = self.party;
        let out = self.out.as_mut().ok_or_else(|| Error::InvalidParam {
            field: "labels",
            reason: format!("the labels of party {party} are already finished"),
        })?;
        out.write_all(labels)
            .map_err(|e| Error::io(format!("writing the labels of party {party} to disk"), e))
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        let party = self.party;
        if let Some(out) = self.out.take() {
            // On failure the file is deleted by `drop`.
            if let Err(e) = out.into_inner() {
                let (e, out) = e.into_parts();
                // Not written again on drop.
                drop(out.into_parts());
                return Err(Error::io(
                    format!("writing the labels of party {party} to disk"),
                    e,
                ));
            }
            self.path = PathBuf::new();
        }
        Ok(())
    }
}

impl Drop for DiskWriter {
    /// Unfinished: the partial file is deleted.
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            if let Some(out) = self.out.take() {
                // Dropping a `BufWriter` writes its buffer out first; discard it instead.
                let (file, _) = out.into_parts();
                drop(file);
            }
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// One party's label file, read a block at a time.
struct FileSource {
    file: File,
    party: u32,
    /// A whole number of labels.
    buf: Vec<u8>,
    filled: usize,
    /// Bytes of the file not yet read.
    left: u64,
}

impl LabelSource for FileSource {
    type Error = Error;

    fn next_block(&mut self) -> Result<bool> {
        if self.left == 0 {
            self.filled = 0;
            return Ok(false);
        }
        let want = self
            .buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        self.file.read_exact(&mut self.buf[..want]).map_err(|e| {
            Error::io(
                format!("reading the labels of party {} from disk", self.party),
                e,
            )
        })?;
        self.left -= want as u64;
        self.filled = want;
        Ok(true)
    }

    fn block(&self) -> &[u8] {
        &self.buf[..self.filled]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::super::store::MemoryStore;
    use super::*;
    use blindjoin_testkit::rng;
    use rand::Rng;
    use std::collections::BTreeSet;

    /// Stores `sets` (sorted labels of `len` bytes) for `run` in batches of random sizes.
    fn put(store: &dyn Store, run: &str, len: usize, sets: &[Vec<u8>], rng: &mut impl Rng) {
        for (p, set) in sets.iter().enumerate() {
            let count = (set.len() / len) as u64;
            let mut w = store.writer(run, p as u32 + 1, len, count).unwrap();
            let mut rest = set.as_slice();
            while !rest.is_empty() {
                let k = (1 + rng.random_range(0..7usize)).min(rest.len() / len) * len;
                w.write(&rest[..k]).unwrap();
                rest = &rest[k..];
            }
            w.finish().unwrap();
        }
    }

    fn counts(sets: &[Vec<u8>], len: usize) -> Vec<u64> {
        sets.iter().map(|s| (s.len() / len) as u64).collect()
    }

    /// Random sorted sets over a pool of labels that share long prefixes (so that labels
    /// differ late), with the pool's first and last labels in every set in some cases.
    fn random_sets(rng: &mut impl Rng, parties: usize, len: usize, case: usize) -> Vec<Vec<u8>> {
        let pool_size = rng.random_range(0..60usize);
        let pool: BTreeSet<Vec<u8>> = (0..pool_size)
            .map(|_| {
                let mut l: Vec<u8> = (0..len).map(|_| rng.random::<u8>()).collect();
                // Mostly a shared prefix; the last bytes vary.
                for b in l.iter_mut().take(len - 1 - rng.random_range(0..3usize)) {
                    *b &= 1;
                }
                l
            })
            .collect();
        let pool: Vec<Vec<u8>> = pool.into_iter().collect();
        let empty = case % 11 == 5;
        (0..parties)
            .map(|p| {
                if empty && p == parties - 1 {
                    return Vec::new();
                }
                pool.iter()
                    .enumerate()
                    .filter(|&(i, _)| {
                        (case.is_multiple_of(3) && (i == 0 || i + 1 == pool.len()))
                            || rng.random_range(0..3) != 0
                    })
                    .flat_map(|(_, l)| l.iter().copied())
                    .collect()
            })
            .collect()
    }

    /// The bit vectors by set membership.
    fn oracle(sets: &[Vec<u8>], len: usize) -> Vec<Vec<u8>> {
        let members: Vec<BTreeSet<&[u8]>> = sets.iter().map(|s| s.chunks(len).collect()).collect();
        sets.iter()
            .map(|s| {
                let mut bits = vec![0u8; (s.len() / len).div_ceil(8)];
                for (k, l) in s.chunks(len).enumerate() {
                    if members.iter().all(|m| m.contains(l)) {
                        bits[k / 8] |= 1 << (k % 8);
                    }
                }
                bits
            })
            .collect()
    }

    /// The disk store, with read buffers of one to several labels (so that a set spans many
    /// blocks) and of the default size, against the memory store and set membership: 1 to 4
    /// parties, labels of 5 to 16 bytes, empty sets, matches at the first and last labels.
    #[test]
    fn disk_and_memory_stores_give_the_same_bit_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = rng(11);
        let mut matched = 0;
        for (b, buffer) in [16, 33, 100, DEFAULT_BUFFER].into_iter().enumerate() {
            let disk = DiskStore::with_buffer(dir.path(), buffer).unwrap();
            for case in 0..300 {
                let parties = 1 + case % 4;
                let len = 5 + case % 12;
                let sets = random_sets(&mut r, parties, len, case);
                let run = format!("case-{b}-{case}");
                let memory = MemoryStore::new();
                put(&memory, &run, len, &sets, &mut r);
                put(&disk, &run, len, &sets, &mut r);
                let c = counts(&sets, len);
                let want = oracle(&sets, len);
                assert_eq!(
                    memory.intersect(&run, len, &c).unwrap(),
                    want,
                    "case {case}"
                );
                assert_eq!(
                    disk.intersect(&run, len, &c).unwrap(),
                    want,
                    "case {case}, buffer {buffer}"
                );
                matched += want[0].iter().map(|b| b.count_ones()).sum::<u32>();
                disk.remove(&run);
                assert_eq!(disk.files().unwrap(), 0, "case {case}");
            }
            drop(disk);
        }
        assert!(matched > 1000, "the cases have matches: {matched}");
    }

    /// The whole path of the directory's entries, recursively.
    fn tree(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(tree(&p));
            }
            out.push(p);
        }
        out.sort();
        out
    }

    #[test]
    fn any_run_id_names_files_inside_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("store");
        let disk = DiskStore::open(&inner).unwrap();
        let long = "r".repeat(200);
        let ids = [
            "a/b",
            "/etc/passwd",
            "..",
            "../../x",
            "x\0y",
            "\0",
            long.as_str(),
            "",
        ];
        for (i, run) in ids.iter().enumerate() {
            let labels: Vec<u8> = (0..3u8).flat_map(|k| [i as u8, k, 0, 0, 0, 0]).collect();
            put(&disk, run, 6, &[labels.clone(), labels], &mut rng(7));
        }
        let files = tree(&inner);
        // The lock, the subdirectory and two files per run, all in the subdirectory.
        assert_eq!(files.len(), 2 + 2 * ids.len(), "{files:?}");
        for f in &files {
            if f != disk.runs_dir() {
                assert_eq!(f.parent(), Some(disk.runs_dir()), "{f:?}");
            }
        }
        for run in ids {
            assert_eq!(disk.intersect(run, 6, &[3, 3]).unwrap(), [[7], [7]]);
            disk.remove(run);
        }
        assert_eq!(disk.files().unwrap(), 0);
    }

    #[test]
    fn an_unfinished_writer_and_a_removed_run_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let disk = DiskStore::with_buffer(dir.path(), 64).unwrap();
        // Dropped before `finish`, with labels in its buffer and on disk.
        let mut w = disk.writer("r", 1, 8, 100).unwrap();
        w.write(&[1; 8 * 20]).unwrap();
        assert_eq!(disk.files().unwrap(), 1);
        drop(w);
        assert_eq!(disk.files().unwrap(), 0);
        // One party finished, one half-way: `remove` deletes both.
        put(&disk, "r", 8, &[vec![2; 8]], &mut rng(3));
        let mut w = disk.writer("r", 2, 8, 100).unwrap();
        w.write(&[3; 8 * 20]).unwrap();
        disk.remove("r");
        assert_eq!(disk.files().unwrap(), 0);
        // The half-way writer still writes into its deleted file; finishing it leaves none.
        w.write(&[4; 8]).unwrap();
        w.finish().unwrap();
        assert_eq!(disk.files().unwrap(), 0);
        // More labels than announced.
        let mut w = disk.writer("s", 1, 8, 2).unwrap();
        w.write(&[1; 16]).unwrap();
        let err = w.write(&[2; 8]).unwrap_err().to_string();
        assert!(err.contains("more labels than it announced"), "{err}");
        drop(w);
        assert_eq!(disk.files().unwrap(), 0);
    }

    #[test]
    fn a_run_without_all_labels_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let disk = DiskStore::open(dir.path()).unwrap();
        put(&disk, "r", 8, &[vec![1; 16]], &mut rng(5));
        let err = disk.intersect("r", 8, &[2, 1]).unwrap_err().to_string();
        assert!(
            err.contains("the labels of party 2 are not all stored"),
            "{err}"
        );
        let err = disk.intersect("r", 8, &[3]).unwrap_err().to_string();
        assert!(
            err.contains("the labels of party 1 are not all stored"),
            "{err}"
        );
        assert_eq!(disk.intersect("r", 8, &[2]).unwrap(), [[3]]);
    }

    #[test]
    fn open_deletes_its_leftovers_and_keeps_out_a_second_server() {
        let dir = tempfile::tempdir().unwrap();
        let disk = DiskStore::open(dir.path()).unwrap();
        put(&disk, "r", 8, &[vec![1; 16], vec![1; 8]], &mut rng(9));
        let err = DiskStore::open(dir.path()).err().unwrap().to_string();
        assert!(
            err.contains("is in use by another blindjoin server"),
            "{err}"
        );
        let other = disk.runs_dir().join("notes.txt");
        fs::write(&other, b"not ours").unwrap();
        drop(disk);
        let disk = DiskStore::open(dir.path()).unwrap();
        assert_eq!(disk.files().unwrap(), 0);
        assert_eq!(fs::read(&other).unwrap(), b"not ours");
    }

    #[test]
    fn the_store_directory_and_its_files_are_private_and_remove_all_empties_it() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join(RUNS_DIR);
        // An existing directory open to others is made private.
        fs::create_dir(&runs).unwrap();
        fs::set_permissions(&runs, fs::Permissions::from_mode(0o755)).unwrap();
        let disk = DiskStore::open(dir.path()).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&runs), 0o700);
        assert_eq!(mode(&runs.join(LOCK_FILE)), 0o600);
        put(&disk, "r", 8, &[vec![1; 16]], &mut rng(4));
        let mut w = disk.writer("s", 2, 8, 100).unwrap();
        w.write(&[5; 8 * 20]).unwrap();
        assert_eq!(mode(&disk.path("r", 1)), 0o600);
        assert_eq!(mode(&disk.path("s", 2)), 0o600);
        assert_eq!(disk.files().unwrap(), 2);
        disk.remove_all();
        assert_eq!(disk.files().unwrap(), 0);
        drop(w);
        assert_eq!(disk.files().unwrap(), 0);
    }

    #[test]
    fn an_unusable_directory_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs::write(&file, b"").unwrap();
        let err = DiskStore::open(&file).err().unwrap().to_string();
        assert!(
            err.starts_with(&format!(
                "creating the label store directory {}",
                file.join(RUNS_DIR).display()
            )),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }
}
