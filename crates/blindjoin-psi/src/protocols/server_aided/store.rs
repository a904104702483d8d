//! Where the server keeps the clients' labels until every party of a run has sent its own, and
//! how it intersects them.
//!
//! Every client sends its labels in ascending order (checked by the server before a label
//! reaches a store), so a store holds sorted runs and intersects by merging: one pass over
//! every party's labels, no hash table, and each party's bit vector comes out in the order of
//! its own labels. [`MemoryStore`] keeps the labels in memory (ℓ bytes per label);
//! `redis_store::RedisStore` (feature `redis-store`) keeps them in Redis.

use blindjoin_core::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A store of label sets, keyed by (run, party). Shared by every connection of the server.
pub trait Store: Send + Sync {
    /// A short description for logs (e.g. `memory`).
    fn describe(&self) -> String;

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
/// vector of every set, bit k set iff its label k is in every set. One merge pass: the
/// cursors advance to the largest current label; where all agree, every set has it.
pub fn merge(sets: &[&[u8]], label_len: usize) -> Vec<Vec<u8>> {
    let counts: Vec<usize> = sets.iter().map(|s| s.len() / label_len).collect();
    let mut bits: Vec<Vec<u8>> = counts.iter().map(|c| vec![0u8; c.div_ceil(8)]).collect();
    if sets.is_empty() || counts.contains(&0) {
        return bits;
    }
    let label = |p: usize, k: usize| &sets[p][k * label_len..(k + 1) * label_len];
    let mut pos = vec![0usize; sets.len()];
    'merge: loop {
        let max = (0..sets.len())
            .map(|p| label(p, pos[p]))
            .max()
            .unwrap_or_default();
        let mut all = true;
        for p in 0..sets.len() {
            while label(p, pos[p]) < max {
                pos[p] += 1;
                if pos[p] == counts[p] {
                    break 'merge;
                }
            }
            all &= label(p, pos[p]) == max;
        }
        if all {
            for p in 0..sets.len() {
                bits[p][pos[p] / 8] |= 1 << (pos[p] % 8);
                pos[p] += 1;
            }
            if (0..sets.len()).any(|p| pos[p] == counts[p]) {
                break;
            }
        }
    }
    bits
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
