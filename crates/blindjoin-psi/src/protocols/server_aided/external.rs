//! A `kmrs_semi` client whose labels do not fit in memory: the labels are sorted on disk.
//!
//! [`run_semi_external`] runs the same protocol as [`kmrs_semi`](super::kmrs_semi) (the same
//! key, labels, messages and result), on items that come from an [`ItemSource`] a chunk at a
//! time, in memory bounded by [`External::bucket_labels`] instead of the set size:
//!
//! 1. *Partition*: each chunk of items is labelled (AES-128 under K, truncated to ℓ bytes) and
//!    every (label, row) record, ℓ + 4 bytes, goes to one of B bucket files by the label's top
//!    log2 B bits, B the least power of two with n/B ≤ `bucket_labels`. Labels are uniform, so
//!    the buckets hold n/B records each give or take a few standard deviations.
//! 2. *Send*: the buckets in order, each read back, sorted in memory and sent: bucket b's
//!    labels all precede bucket b + 1's, so the labels reach the server in ascending order, as
//!    the in-memory client sends them. The rows, in the order of their labels, go to a rows file
//!    (4 bytes each); each bucket file is deleted once sent.
//! 3. *Result*: the bit vector (n/8 bytes) back, then the rows file read along it: the rows
//!    whose bits are set, sorted.
//!
//! Disk: (ℓ + 4)·n bytes of buckets at the peak, then 4n bytes of rows; memory: one bucket
//! (32 bytes per record while sorting), the bit vector, and the matched rows (4 bytes each).
//! Every file is under a fresh directory in [`External::dir`], removed when the run ends,
//! failed or not.

use super::client::{
    AidedLinks, agree_key, key_check, next_status, receive_bits, run_params, send_hello,
    send_sorted, unexpected,
};
use super::kmrs_semi::PROTOCOL;
use super::labels::{decode_label, label_len, sort_unique, truncate};
use super::wire::{MSG_BITS, MSG_LABELS, MSG_RECEIVED, Status};
use crate::run::{Phases, RunOptions, check_security};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Items read a chunk at a time, in row order.
pub trait ItemSource {
    /// How many items the source holds.
    fn len(&self) -> u64;

    /// Whether the source holds no item.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the next items, at most `max`, to `out`; returns how many (0 once all are read).
    fn next_chunk(&mut self, out: &mut Vec<Item>, max: usize) -> Result<usize>;
}

/// Items in memory as an [`ItemSource`].
pub struct SliceSource<'a> {
    items: &'a [Item],
    at: usize,
}

impl<'a> SliceSource<'a> {
    /// A source over `items`.
    pub fn new(items: &'a [Item]) -> Self {
        SliceSource { items, at: 0 }
    }
}

impl ItemSource for SliceSource<'_> {
    fn len(&self) -> u64 {
        self.items.len() as u64
    }

    fn next_chunk(&mut self, out: &mut Vec<Item>, max: usize) -> Result<usize> {
        let end = (self.at + max).min(self.items.len());
        out.extend_from_slice(&self.items[self.at..end]);
        let got = end - self.at;
        self.at = end;
        Ok(got)
    }
}

/// Where and how much the external client sorts.
#[derive(Clone, Debug)]
pub struct External {
    /// The directory under which the run's files go (a fresh subdirectory per run).
    pub dir: PathBuf,
    /// The most labels of one bucket, sorted in memory at once (32 bytes each while sorting).
    pub bucket_labels: u64,
}

/// What an external client learns.
#[derive(Clone, Debug)]
pub struct ExternalOutput {
    /// Sorted rows of the items that every client holds.
    pub rows: Vec<u32>,
    /// The set sizes of parties 1..=n.
    pub sizes: Vec<u64>,
    /// Bytes per label.
    pub label_len: usize,
    /// Buckets the labels were sorted in.
    pub buckets: usize,
    /// Time per phase.
    pub phases: Phases,
}

/// Items labelled per chunk of the partition pass.
const CHUNK_ITEMS: usize = 1 << 22;

/// A directory removed with everything in it when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(parent: &Path) -> Result<TempDir> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = parent.join(format!("blindjoin-external-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::io(
                format!("cannot create the sort directory {}", dir.display()),
                e,
            )
        })?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

/// `kmrs_semi`'s client (Fig. 1) on `source`, its labels sorted on disk (see the module doc).
pub fn run_semi_external(
    links: &mut AidedLinks<'_>,
    source: &mut dyn ItemSource,
    opts: &RunOptions,
    ext: &External,
    rng: &mut dyn CryptoRng,
) -> Result<ExternalOutput> {
    let p = &PROTOCOL;
    check_security(p, opts)?;
    let n = source.len();
    if n > u64::from(u32::MAX) {
        return Err(Error::InvalidParam {
            field: "set size",
            reason: format!("{n} items; at most 2^32 - 1"),
        });
    }
    if ext.bucket_labels == 0 {
        return Err(Error::InvalidParam {
            field: "bucket labels",
            reason: "0 labels per bucket".into(),
        });
    }
    let mut phases = Phases::default();
    let t = Instant::now();
    let (key, sizes) = agree_key(p, links, n as usize, opts, rng)?;
    let t = phases.lap("key agreement", t);
    let len = label_len(&sizes, opts.lambda)?;
    let buckets = n.div_ceil(ext.bucket_labels).next_power_of_two().max(1) as usize;
    let shift = 128 - buckets.trailing_zeros();
    let bucket_of = |l: u128| {
        if buckets == 1 {
            0
        } else {
            (l >> shift) as usize
        }
    };
    let dir = TempDir::new(&ext.dir)?;
    let paths: Vec<PathBuf> = (0..buckets)
        .map(|b| dir.0.join(format!("bucket-{b}")))
        .collect();

    // 1. Partition.
    let mut counts = vec![0u64; buckets];
    {
        let mut files = paths
            .iter()
            .map(|path| {
                File::create(path)
                    .map(|f| BufWriter::with_capacity(1 << 20, f))
                    .map_err(|e| io_err("cannot create", path, e))
            })
            .collect::<Result<Vec<_>>>()?;
        let aes = FixedKeyAes::new(Block::from_bytes(*key));
        let mut chunk = Vec::with_capacity(CHUNK_ITEMS);
        let mut labels = vec![0u128; CHUNK_ITEMS];
        let mut row = 0u64;
        loop {
            chunk.clear();
            let got = source.next_chunk(&mut chunk, CHUNK_ITEMS)?;
            if got == 0 {
                break;
            }
            if row + got as u64 > n {
                return Err(Error::InvalidParam {
                    field: "set size",
                    reason: format!("the source gave more than the {n} items it announced"),
                });
            }
            labels
                .par_chunks_mut(1 << 12)
                .zip(chunk.par_chunks(1 << 12))
                .for_each(|(dst, items)| {
                    let mut blocks: Vec<Block> =
                        items.iter().map(|it| Block::from_bytes(it.0)).collect();
                    aes.permute(&mut blocks);
                    for (d, b) in dst.iter_mut().zip(blocks) {
                        *d = truncate(b, len);
                    }
                });
            for (k, &l) in labels[..got].iter().enumerate() {
                let b = bucket_of(l);
                let f = &mut files[b];
                let r = (row + k as u64) as u32;
                f.write_all(&l.to_be_bytes()[..len])
                    .and_then(|()| f.write_all(&r.to_le_bytes()))
                    .map_err(|e| io_err("cannot write", &paths[b], e))?;
                counts[b] += 1;
            }
            row += got as u64;
        }
        if row != n {
            return Err(Error::InvalidParam {
                field: "set size",
                reason: format!("the source gave {row} of the {n} items it announced"),
            });
        }
        for (f, path) in files.iter_mut().zip(&paths) {
            f.flush().map_err(|e| io_err("cannot write", path, e))?;
        }
    }
    let mut params = run_params(p, opts, links);
    params.push(("key check".into(), key_check(&key)));
    drop(key);
    let t = phases.lap("labels", t);

    // 2. Send, bucket by bucket.
    send_hello(p, links, params, len, n)?;
    let rows_path = dir.0.join("rows");
    let mut rows_file = BufWriter::with_capacity(
        1 << 20,
        File::create(&rows_path).map_err(|e| io_err("cannot create", &rows_path, e))?,
    );
    let record = len + 4;
    for (b, path) in paths.iter().enumerate() {
        let mut bytes = Vec::with_capacity((counts[b] as usize) * record);
        File::open(path)
            .and_then(|f| BufReader::new(f).read_to_end(&mut bytes))
            .map_err(|e| io_err("cannot read", path, e))?;
        std::fs::remove_file(path).map_err(|e| io_err("cannot remove", path, e))?;
        let mut sorted: Vec<(u128, u32)> = bytes
            .par_chunks(record)
            .map(|r| {
                let row = u32::from_le_bytes([r[len], r[len + 1], r[len + 2], r[len + 3]]);
                (decode_label(&r[..len]), row)
            })
            .collect();
        drop(bytes);
        sort_unique(&mut sorted)?;
        send_sorted(
            &mut *links.server,
            MSG_LABELS,
            sorted.iter().map(|&(l, _)| l),
            len,
        )?;
        for &(_, r) in &sorted {
            rows_file
                .write_all(&r.to_le_bytes())
                .map_err(|e| io_err("cannot write", &rows_path, e))?;
        }
        opts.report("server labels", 0, 0);
    }
    rows_file
        .flush()
        .map_err(|e| io_err("cannot write", &rows_path, e))?;
    drop(rows_file);
    let ch = &mut *links.server;
    let bits = match next_status(ch, "the labels")? {
        Status::Result { matches } => receive_bits(ch, MSG_BITS, n as usize, Some(matches))?,
        other => return Err(unexpected(&other, "the labels")),
    };
    ch.send(MSG_RECEIVED, &[])?;
    let t = phases.lap("server", t);

    // 3. The rows whose bits are set.
    let matches: u64 = bits.iter().map(|b| u64::from(b.count_ones())).sum();
    let mut rows = Vec::with_capacity(matches as usize);
    let mut reader = BufReader::with_capacity(
        1 << 20,
        File::open(&rows_path).map_err(|e| io_err("cannot read", &rows_path, e))?,
    );
    let mut buf = vec![0u8; 4 << 16];
    let mut k = 0usize;
    while k < n as usize {
        let take = ((n as usize - k) * 4).min(buf.len());
        reader
            .read_exact(&mut buf[..take])
            .map_err(|e| io_err("cannot read", &rows_path, e))?;
        for r in buf[..take].chunks_exact(4) {
            if bits[k / 8] >> (k % 8) & 1 == 1 {
                rows.push(u32::from_le_bytes([r[0], r[1], r[2], r[3]]));
            }
            k += 1;
        }
    }
    drop(bits);
    rows.par_sort_unstable();
    phases.lap("output", t);
    Ok(ExternalOutput {
        rows,
        sizes,
        label_len: len,
        buckets,
        phases,
    })
}
