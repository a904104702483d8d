//! An input partitioned into a bucketed run's buckets on disk, so that a party's memory is one
//! bucket's, whatever the input's size ([`crate::bucketed`]).
//!
//! The input streams through [`read_rows`] once: each row with a key becomes a record of 24
//! bytes (its 16-byte item, then its row number, big-endian) appended to its bucket's file in a
//! temporary directory. Then each bucket's file is read, sorted (by item, then row: records
//! compare as byte strings) and written back, which counts its distinct items. A bucket's
//! session loads its sorted file: the distinct items in order, and for each the rows carrying
//! it, which are what a match at the item stands for. The directory is removed when the split
//! is dropped, so also when the run fails or a signal cancels it ([`crate::signals`]: reading
//! and sorting stop at the next piece).
//!
//! The records are unsalted hashes of the input's keys, so the directory is private: created
//! with mode 0700, each bucket's file with mode 0600. The SHA-256 of each sorted bucket file is
//! kept; a kept spill (a resumable run's) checks it each time it loads the bucket, so a file
//! changed on disk is refused rather than read as other items.

use crate::bucket::Partition;
use crate::bucketed::{Loaded, Split};
use crate::error::{CliError, CliResult};
use crate::input::Format;
use crate::input::{InputSpec, RowSink, RowSource, read_rows};
use crate::normalize::Normalizer;
use crate::report::Phase;
use crate::rundir::{create_private_dir, create_private_file, file_digest};
use blindjoin_core::item::{ITEM_LEN, Item};
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Bytes of one record: the item, then the row number (big-endian, so that records sort by
/// row within an item).
const RECORD: usize = ITEM_LEN + 8;

/// Buffer of each bucket's writer.
const WRITE_BUFFER: usize = 1 << 18;

/// What to read, owned (the reading happens after the run handshake).
#[derive(Clone, Debug)]
pub struct SpillInput {
    /// The input file.
    pub path: PathBuf,
    /// Its format (`None`: by extension).
    pub format: Option<Format>,
    /// Key columns.
    pub columns: Vec<String>,
    /// Key normalisation.
    pub normalizer: Normalizer,
    /// Where the bucket files go.
    pub place: Place,
}

/// Where a spill's bucket files go.
#[derive(Clone, Debug)]
pub enum Place {
    /// A temporary directory in the given directory (`None`: the system's), removed with the
    /// split.
    Temp(Option<PathBuf>),
    /// This directory (created if missing), kept: a resumable run's ([`crate::rundir`]).
    Kept(PathBuf),
}

/// The directory of a split's bucket files.
enum Dir {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

impl Dir {
    fn path(&self) -> &Path {
        match self {
            Dir::Temp(t) => t.path(),
            Dir::Kept(p) => p,
        }
    }
}

/// An input spilled into buckets: the [`Split`] of a bucketed run on a file.
pub struct SpillSplit {
    dir: Dir,
    counts: Vec<u64>,
    distinct: u64,
    /// The SHA-256 of each bucket's file.
    digests: Vec<[u8; 32]>,
}

/// What spilling an input gives: the split, where the rows are, and the input's statistics.
pub struct Spilled {
    /// The buckets on disk.
    pub split: SpillSplit,
    /// Where the input's rows are, to write the matched ones.
    pub source: RowSource,
    /// Rows read.
    pub rows: u64,
    /// Rows with an empty or invalid key.
    pub empty_keys: u64,
    /// Rows whose key repeats an earlier row's.
    pub duplicate_rows: u64,
    /// Seconds spent, by phase.
    pub phases: Vec<Phase>,
}

fn io_error(path: &Path, source: std::io::Error) -> CliError {
    CliError::File {
        path: path.to_path_buf(),
        source,
    }
}

fn bucket_path(dir: &Path, p: usize) -> PathBuf {
    dir.join(format!("bucket-{p:05}.bin"))
}

/// The sink that appends each keyed row to its bucket's file.
struct SpillSink<'a> {
    partition: &'a Partition,
    dir: &'a Path,
    writers: Vec<BufWriter<File>>,
    next_row: u64,
    empty: u64,
    items: Vec<Item>,
    rows: Vec<u64>,
    assigned: Vec<u32>,
}

impl RowSink for SpillSink<'_> {
    fn take(&mut self, keys: &[Option<Item>]) -> CliResult<()> {
        crate::signals::check()?;
        self.items.clear();
        self.rows.clear();
        for (k, key) in keys.iter().enumerate() {
            match key {
                Some(item) => {
                    self.items.push(*item);
                    self.rows.push(self.next_row + k as u64);
                }
                None => self.empty += 1,
            }
        }
        self.next_row += keys.len() as u64;
        self.assigned.resize(self.items.len(), 0);
        self.partition.assign(&self.items, &mut self.assigned);
        for ((item, row), &p) in self.items.iter().zip(&self.rows).zip(&self.assigned) {
            let w = &mut self.writers[p as usize];
            let written = w
                .write_all(&item.0)
                .and_then(|()| w.write_all(&row.to_be_bytes()));
            written.map_err(|e| io_error(&bucket_path(self.dir, p as usize), e))?;
        }
        Ok(())
    }
}

/// Reads bucket `p`'s file whole.
fn read_bucket(dir: &Path, p: usize) -> CliResult<Vec<u8>> {
    let path = bucket_path(dir, p);
    let mut bytes = Vec::new();
    File::open(&path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| io_error(&path, e))?;
    if bytes.len() % RECORD != 0 {
        return Err(CliError::Usage(format!(
            "{}: not whole records; the bucket directory was changed",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Streams `input` into `partition`'s buckets (see the [module doc](self)); `progress` is told
/// the bytes read so far.
pub fn spill(
    input: &SpillInput,
    partition: &Partition,
    progress: &(dyn Fn(u64) + Sync),
) -> CliResult<Spilled> {
    let t = Instant::now();
    let dir = match &input.place {
        Place::Temp(d) => {
            let base = d.clone().unwrap_or_else(std::env::temp_dir);
            tempfile::Builder::new()
                .prefix("blindjoin-buckets-")
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir_in(&base)
                .map(Dir::Temp)
                .map_err(|e| io_error(&base, e))?
        }
        Place::Kept(d) => {
            create_private_dir(d)?;
            Dir::Kept(d.clone())
        }
    };
    let b = partition.buckets() as usize;
    let mut writers = Vec::with_capacity(b);
    for p in 0..b {
        let f = create_private_file(&bucket_path(dir.path(), p))?;
        writers.push(BufWriter::with_capacity(WRITE_BUFFER, f));
    }
    let mut sink = SpillSink {
        partition,
        dir: dir.path(),
        writers,
        next_row: 0,
        empty: 0,
        items: Vec::new(),
        rows: Vec::new(),
        assigned: Vec::new(),
    };
    let spec = InputSpec {
        path: &input.path,
        format: input.format,
        columns: &input.columns,
        normalizer: &input.normalizer,
    };
    let (source, _) = read_rows(&spec, &mut sink, progress)?;
    let (rows, empty) = (sink.next_row, sink.empty);
    for (p, w) in sink.writers.into_iter().enumerate() {
        w.into_inner()
            .map_err(|e| io_error(&bucket_path(dir.path(), p), e.into_error()))?
            .sync_all()
            .map_err(|e| io_error(&bucket_path(dir.path(), p), e))?;
    }
    let mut phases = vec![Phase {
        name: "read input into buckets".to_owned(),
        seconds: t.elapsed().as_secs_f64(),
    }];

    // Sort each bucket and count its distinct items.
    let t = Instant::now();
    let mut counts = Vec::with_capacity(b);
    let mut digests = Vec::with_capacity(b);
    for p in 0..b {
        crate::signals::check()?;
        let mut bytes = read_bucket(dir.path(), p)?;
        let records: &mut [[u8; RECORD]] = bytemuck_records(&mut bytes);
        records.par_sort_unstable();
        let distinct = records
            .windows(2)
            .filter(|w| w[0][..ITEM_LEN] != w[1][..ITEM_LEN])
            .count() as u64
            + u64::from(!records.is_empty());
        counts.push(distinct);
        digests.push(file_digest(&bytes));
        let path = bucket_path(dir.path(), p);
        std::fs::write(&path, &bytes).map_err(|e| io_error(&path, e))?;
    }
    phases.push(Phase {
        name: "sort buckets".to_owned(),
        seconds: t.elapsed().as_secs_f64(),
    });
    let distinct: u64 = counts.iter().sum();
    let keyed_rows = rows - empty;
    Ok(Spilled {
        split: SpillSplit {
            dir,
            counts,
            distinct,
            digests,
        },
        source: RowSource { rows, ..source },
        rows,
        empty_keys: empty,
        duplicate_rows: keyed_rows - distinct,
        phases,
    })
}

impl SpillSplit {
    /// The split a finished spill left in `dir` (a resumable run's), with each bucket's
    /// distinct count and its file's digest as the spill recorded them.
    pub fn reopen(dir: PathBuf, counts: Vec<u64>, digests: Vec<[u8; 32]>) -> SpillSplit {
        // The counts come from a file: their sum saturates rather than wraps (a resume then
        // compares it with the run manifest's count, which no saturated sum matches).
        let distinct = counts.iter().fold(0u64, |sum, &c| sum.saturating_add(c));
        SpillSplit {
            dir: Dir::Kept(dir),
            counts,
            distinct,
            digests,
        }
    }

    /// Each bucket's distinct items.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The SHA-256 of each bucket's file, hex (as a spill manifest holds them).
    pub fn digests_hex(&self) -> Vec<String> {
        self.digests.iter().map(|d| crate::report::hex(d)).collect()
    }
}

/// The bytes of whole records as records.
fn bytemuck_records(bytes: &mut [u8]) -> &mut [[u8; RECORD]] {
    let (records, rest) = bytes.as_chunks_mut::<RECORD>();
    debug_assert!(rest.is_empty());
    records
}

impl Split for SpillSplit {
    fn distinct(&self) -> u64 {
        self.distinct
    }

    fn count(&self, p: usize) -> u64 {
        self.counts[p]
    }

    fn load(&self, p: usize) -> CliResult<Loaded> {
        let mut bytes = read_bucket(self.dir.path(), p)?;
        // A kept spill outlives the process: check that its file is the one the spill wrote.
        if let Dir::Kept(d) = &self.dir
            && self.digests.get(p) != Some(&file_digest(&bytes))
        {
            let run = d.parent().unwrap_or(d);
            return Err(CliError::Usage(format!(
                "{}: not the bucket file this run wrote (its checksum differs); remove the run \
                 directory {} to start a new run",
                bucket_path(d, p).display(),
                run.display()
            )));
        }
        let records = bytemuck_records(&mut bytes);
        // At most one item per record, whatever count a kept spill's manifest gives.
        let distinct =
            usize::try_from(self.counts[p]).map_or(records.len(), |c| c.min(records.len()));
        let mut items = Vec::with_capacity(distinct);
        let mut values = Vec::with_capacity(records.len());
        let mut ends = Vec::with_capacity(distinct);
        for (k, r) in records.iter().enumerate() {
            let mut item = [0u8; ITEM_LEN];
            item.copy_from_slice(&r[..ITEM_LEN]);
            if items.last().is_none_or(|last: &Item| last.0 != item) {
                if k > 0 {
                    ends.push(values.len());
                }
                items.push(Item(item));
            }
            let mut row = [0u8; 8];
            row.copy_from_slice(&r[ITEM_LEN..]);
            values.push(u64::from_be_bytes(row));
        }
        if !items.is_empty() {
            ends.push(values.len());
        }
        Ok(Loaded {
            items,
            values,
            ends,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::normalize::Normalize;

    #[test]
    fn a_spilled_input_gives_each_bucket_its_distinct_items_and_their_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.txt");
        // Rows 0..300: key k % 100, so every key is on three rows; row 300 is empty.
        let mut text = String::new();
        for r in 0..300 {
            text.push_str(&format!("key{}\n", r % 100));
        }
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        let input = SpillInput {
            path: path.clone(),
            format: Some(Format::Lines),
            columns: Vec::new(),
            normalizer: Normalizer {
                kind: Normalize::None,
                country_code: None,
            },
            place: Place::Temp(Some(dir.path().to_path_buf())),
        };
        let partition = Partition::new([3; 16], 4);
        let s = spill(&input, &partition, &|_| {}).unwrap();
        assert_eq!((s.rows, s.empty_keys, s.duplicate_rows), (301, 1, 200));
        assert_eq!(s.split.distinct(), 100);
        let mut seen = 0;
        for p in 0..4 {
            let b = s.split.load(p).unwrap();
            assert_eq!(b.items.len() as u64, s.split.count(p));
            let mut assigned = vec![0; b.items.len()];
            partition.assign(&b.items, &mut assigned);
            assert!(assigned.iter().all(|&q| q as usize == p));
            for (k, item) in b.items.iter().enumerate() {
                let mut rows = Vec::new();
                b.values_at(&[k], &mut rows);
                // The three rows of the key, ascending.
                let key = rows[0] % 100;
                assert_eq!(rows, [key, key + 100, key + 200]);
                let want =
                    blindjoin_core::item::items_from_records(&[format!("key{key}").into_bytes()]);
                assert_eq!(*item, want[0]);
            }
            seen += b.items.len();
        }
        assert_eq!(seen, 100);
    }

    #[test]
    fn a_kept_spill_whose_manifest_claims_more_items_than_its_file_holds_loads_the_file() {
        // The manifest's counts are read from a resumable run's directory; a count above what
        // the bucket's file holds (or counts whose sum overflows) must not become a huge
        // allocation or an overflow.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("spill");
        create_private_dir(&dir).unwrap();
        let mut file = Vec::new();
        for (item, row) in [(1u8, 7u64), (1, 9), (2, 3)] {
            file.extend_from_slice(&[item; ITEM_LEN]);
            file.extend_from_slice(&row.to_be_bytes());
        }
        for p in 0..2 {
            std::fs::write(bucket_path(&dir, p), &file).unwrap();
        }
        let digest = file_digest(&file);
        let split = SpillSplit::reopen(dir, vec![1 << 60, u64::MAX], vec![digest, digest]);
        assert_eq!(split.distinct(), u64::MAX);
        for p in 0..2 {
            let b = split.load(p).unwrap();
            assert_eq!(b.items, [Item([1; ITEM_LEN]), Item([2; ITEM_LEN])]);
            assert_eq!((b.values, b.ends), (vec![7, 9, 3], vec![2, 3]));
        }
    }
}
