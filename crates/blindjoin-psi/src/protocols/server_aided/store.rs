//! Where the server keeps the clients' labels until every party of a run has sent its own, and
//! how it intersects them.
//!
//! Every client sends its labels in ascending order (checked by the server before a label
//! reaches a store), so a store holds sorted runs and intersects by merging: one pass over
//! every party's labels, no hash table, and each party's bit vector comes out in the order of
//! its own labels. [`MemoryStore`] keeps the labels in memory (ℓ bytes per label),
//! [`DiskStore`](super::disk_store::DiskStore) in files; both intersect with [`merge_sources`],
//! which reads every party's labels through a [`LabelSource`], a block at a time.
//! `redis_store::RedisStore` (feature `redis-store`) keeps them in Redis and intersects there.

use blindjoin_core::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A store of label sets, keyed by (run, party). Shared by every connection of the server.
pub trait Store: Send + Sync {
    /// A short description for logs (e.g. `memory`).
    fn describe(&self) -> String;

    /// Whether the labels are kept in this process's memory (the server counts them against
    /// its memory budget).
    fn in_memory(&self) -> bool {
        false
    }

    /// Starts storing party `party`'s `count` labels of `label_len` bytes for `run` (a key
    /// unique to the run on this server).
    fn writer(
        &self,
        run: &str,
        party: u32,
        label_len: usize,
        count: u64,
    ) -> Result<Box<dyn LabelWriter>>;

    /// With the labels of parties 1..=`counts.len()` stored: each party's bit vector, bit k
    /// (byte k/8, bit k%8) set iff its k-th label is in every party's set. The server calls it
    /// once per run; a store may use up what it built for it (`RedisStore` drops party 1's set).
    fn intersect(&self, run: &str, label_len: usize, counts: &[u64]) -> Result<Vec<Vec<u8>>>;

    /// Forgets everything of `run` (also of a half-finished run).
    fn remove(&self, run: &str);

    /// The server stops with runs in progress: forgets what outlives the process (a disk
    /// store's files). Nothing by default: memory ends with the process, and a Redis store's
    /// keys expire a minute after the run timeout.
    fn stop(&self) {}
}

/// Receives one party's labels, in ascending order, in batches.
pub trait LabelWriter: Send {
    /// Appends whole labels (a multiple of the label length, ascending, after those before).
    fn write(&mut self, labels: &[u8]) -> Result<()>;

    /// All labels are in.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// Labels in memory: one byte string per (run, party), ℓ bytes per label.
#[derive(Default)]
pub struct MemoryStore {
    sets: Arc<Mutex<Sets>>,
}

type Sets = HashMap<(String, u32), Vec<u8>>;

fn lock(sets: &Mutex<Sets>) -> std::sync::MutexGuard<'_, Sets> {
    sets.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Label sets held (for tests: a finished run leaves none behind).
    pub fn len(&self) -> usize {
        lock(&self.sets).len()
    }

    /// Whether the store holds no label set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One party's labels on their way into a [`MemoryStore`].
struct MemoryWriter {
    sets: Arc<Mutex<Sets>>,
    key: (String, u32),
    labels: Vec<u8>,
}

impl Store for MemoryStore {
    fn describe(&self) -> String {
        "memory".into()
    }

    fn in_memory(&self) -> bool {
        true
    }

    fn writer(
        &self,
        run: &str,
        party: u32,
        _label_len: usize,
        _count: u64,
    ) -> Result<Box<dyn LabelWriter>> {
        // Grown as labels arrive: a client that announces many labels and sends few costs
        // little.
        Ok(Box::new(MemoryWriter {
            sets: self.sets.clone(),
            key: (run.to_owned(), party),
            labels: Vec::new(),
        }))
    }

    fn intersect(&self, run: &str, label_len: usize, counts: &[u64]) -> Result<Vec<Vec<u8>>> {
        let sets = lock(&self.sets);
        let mut views = Vec::with_capacity(counts.len());
        for (p, &c) in counts.iter().enumerate() {
            let set = sets
                .get(&(run.to_owned(), p as u32 + 1))
                .filter(|s| s.len() as u64 == c * label_len as u64)
                .ok_or_else(|| Error::InvalidParam {
                    field: "run",
                    reason: format!("the labels of party {} are not all stored", p + 1),
                })?;
            views.push(set.as_slice());
        }
        Ok(merge(&views, label_len))
    }

    fn remove(&self, run: &str) {
        lock(&self.sets).retain(|(r, _), _| r != run);
    }
}

impl LabelWriter for MemoryWriter {
    fn write(&mut self, labels: &[u8]) -> Result<()> {
        self.labels.extend_from_slice(labels);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<()> {
        let MemoryWriter { sets, key, labels } = *self;
        lock(&sets).insert(key, labels);
        Ok(())
    }
}

/// Intersects sorted label sets (each `label_len`-byte labels, strictly ascending): the bit
/// vector of every set, bit k set iff its label k is in every set. [`merge_sources`] over the
/// sets in memory.
pub fn merge(sets: &[&[u8]], label_len: usize) -> Vec<Vec<u8>> {
    let counts: Vec<u64> = sets
        .iter()
        .map(|s| (s.len() / label_len.max(1)) as u64)
        .collect();
    let sources = sets.iter().map(|s| SliceSource::new(s)).collect();
    match merge_sources(sources, &counts, label_len) {
        Ok(bits) => bits,
        Err(never) => match never {},
    }
}

/// One party's sorted labels, read block by block: each block holds whole labels of the
/// store's label length, ascending, and follows the previous one. What [`merge_sources`] reads,
/// from memory ([`SliceSource`]) or from a file (the disk store's).
pub trait LabelSource {
    /// What reading a block can fail with.
    type Error;

    /// Moves to the next block; `false` once the labels are exhausted.
    fn next_block(&mut self) -> std::result::Result<bool, Self::Error>;

    /// The current block (empty before the first [`next_block`](Self::next_block)).
    fn block(&self) -> &[u8];
}

/// Labels in one slice: a single block.
pub struct SliceSource<'a> {
    labels: &'a [u8],
    started: bool,
}

impl<'a> SliceSource<'a> {
    /// The labels of `labels`, as one block.
    pub fn new(labels: &'a [u8]) -> Self {
        SliceSource {
            labels,
            started: false,
        }
    }
}

impl LabelSource for SliceSource<'_> {
    type Error = std::convert::Infallible;

    fn next_block(&mut self) -> std::result::Result<bool, Self::Error> {
        let first = !self.started;
        self.started = true;
        Ok(first)
    }

    fn block(&self) -> &[u8] {
        if self.started { self.labels } else { &[] }
    }
}

/// A position in one party's labels: the current label as a big-endian integer (a label of
/// ℓ ≤ 16 bytes compares as its u128 value, so the merge compares integers, not slices).
struct Cursor<S> {
    src: S,
    len: usize,
    /// 128 − 8ℓ: the bits below a label read as 16 bytes.
    shift: u32,
    /// Byte offset of the current label in the block.
    off: usize,
    /// The block's length in bytes.
    end: usize,
    /// Index of the current label in the party's whole set.
    pos: u64,
    key: u128,
}

impl<S: LabelSource> Cursor<S> {
    /// At the first label; `None` if there is none.
    fn start(src: S, len: usize) -> std::result::Result<Option<Self>, S::Error> {
        let mut c = Cursor {
            src,
            len,
            shift: 128 - 8 * len as u32,
            off: 0,
            end: 0,
            pos: 0,
            key: 0,
        };
        Ok(c.refill()?.then_some(c))
    }

    /// The label at byte `off` of the block: 16 bytes read at once where the block has them.
    #[inline(always)]
    fn decode(&self) -> u128 {
        let block = self.src.block();
        match block.get(self.off..).and_then(<[u8]>::first_chunk::<16>) {
            Some(b) => u128::from_be_bytes(*b) >> self.shift,
            None => {
                let mut b = [0u8; 16];
                b[..self.len].copy_from_slice(&block[self.off..self.off + self.len]);
                u128::from_be_bytes(b) >> self.shift
            }
        }
    }

    /// Moves to the next label; `false` at the end.
    #[inline(always)]
    fn step(&mut self) -> std::result::Result<bool, S::Error> {
        self.pos += 1;
        self.off += self.len;
        if self.off + self.len <= self.end {
            self.key = self.decode();
            return Ok(true);
        }
        self.refill()
    }

    /// Moves to the first label of the next non-empty block.
    #[cold]
    fn refill(&mut self) -> std::result::Result<bool, S::Error> {
        loop {
            if !self.src.next_block()? {
                return Ok(false);
            }
            self.end = self.src.block().len();
            self.off = 0;
            if self.len <= self.end {
                self.key = self.decode();
                return Ok(true);
            }
        }
    }
}

/// Intersects sorted label sets read from `sources` (party p's `counts[p]` labels of
/// `label_len` ≤ 16 bytes, strictly ascending): every party's bit vector, bit k (byte k/8, bit
/// k%8) set iff its label k is in every set. One merge pass: the cursors advance to the largest
/// current label; where all agree, every set has it; the pass ends with the first set
/// exhausted. Memory: the bit vectors and the sources' blocks.
pub fn merge_sources<S: LabelSource>(
    sources: Vec<S>,
    counts: &[u64],
    label_len: usize,
) -> std::result::Result<Vec<Vec<u8>>, S::Error> {
    let mut bits: Vec<Vec<u8>> = counts
        .iter()
        .map(|&c| vec![0u8; c.div_ceil(8) as usize])
        .collect();
    if !(1..=16).contains(&label_len) || sources.is_empty() {
        return Ok(bits);
    }
    let mut cursors = Vec::with_capacity(sources.len());
    for src in sources {
        match Cursor::start(src, label_len)? {
            Some(c) => cursors.push(c),
            None => return Ok(bits),
        }
    }
    // Two parties, the usual case, as an array: the loops over the cursors unroll.
    match <[Cursor<S>; 2]>::try_from(cursors) {
        Ok(mut two) => merge_cursors(&mut two, &mut bits)?,
        Err(mut any) => merge_cursors(&mut any, &mut bits)?,
    }
    Ok(bits)
}

/// The merge pass of [`merge_sources`] from the cursors' first labels.
#[inline(always)]
fn merge_cursors<S: LabelSource>(
    cursors: &mut [Cursor<S>],
    bits: &mut [Vec<u8>],
) -> std::result::Result<(), S::Error> {
    loop {
        let max = cursors.iter().map(|c| c.key).max().unwrap_or_default();
        let mut all = true;
        for c in cursors.iter_mut() {
            while c.key < max {
                if !c.step()? {
                    return Ok(());
                }
            }
            all &= c.key == max;
        }
        if all {
            let mut ended = false;
            for (c, b) in cursors.iter_mut().zip(bits.iter_mut()) {
                if let Some(byte) = b.get_mut((c.pos / 8) as usize) {
                    *byte |= 1 << (c.pos % 8);
                }
                ended |= !c.step()?;
            }
            if ended {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The merge against set membership, on random sorted sets of 1 to 4 parties, including
    /// matches at the first and last labels and empty sets.
    #[test]
    fn merge_marks_exactly_the_labels_every_set_has() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..400 {
            let parties = 1 + case % 4;
            let universe = 1 + next() % 40;
            let sets: Vec<BTreeSet<u16>> = (0..parties)
                .map(|_| (0..universe as u16).filter(|_| next() % 3 != 0).collect())
                .collect();
            let bytes: Vec<Vec<u8>> = sets
                .iter()
                .map(|s| s.iter().flat_map(|v| v.to_be_bytes()).collect())
                .collect();
            let views: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
            let bits = merge(&views, 2);
            for (p, s) in sets.iter().enumerate() {
                assert_eq!(bits[p].len(), s.len().div_ceil(8));
                for (k, v) in s.iter().enumerate() {
                    let want = sets.iter().all(|o| o.contains(v));
                    assert_eq!(bits[p][k / 8] >> (k % 8) & 1 == 1, want, "case {case}");
                }
            }
        }
    }
}
