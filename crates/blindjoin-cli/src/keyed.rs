//! A party's rows as the protocols see them: every row's key normalised and hashed to an
//! [`Item`], the distinct items in order of first appearance, and per row the index of its item.
//!
//! A key is one field or several (a composite key, `--column first_name,last_name,dob`). One
//! field's key is its normalised bytes. Several fields are joined unambiguously: each normalised
//! field is written as its length (8 bytes, little endian) followed by its bytes, so
//! `("ab", "c")` and `("a", "bc")` are different keys. A row whose key (or any field of a
//! composite key) is empty or invalid after normalisation has no item and never matches.
//!
//! Rows are hashed in parallel chunks ([`KeyHasher`]); [`Dedup`] then assigns item indices in
//! order of first appearance, in parallel. What is kept per row is a 4-byte item index.

use crate::normalize::Normalizer;
use blindjoin_core::item::{Item, RecordHasher};
use rayon::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The item index of a row without a key.
pub const NO_KEY: u32 = u32::MAX;

/// The most distinct keys one input may hold (item indices are `u32`, [`NO_KEY`] excluded).
pub const MAX_DISTINCT_KEYS: usize = (u32::MAX - 1) as usize;

/// A party's keyed rows (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keyed {
    /// Distinct items, in order of first appearance.
    pub items: Vec<Item>,
    /// Per row: index into `items`, or [`NO_KEY`].
    pub row_item: Vec<u32>,
    /// Rows whose key is empty or invalid after normalisation.
    pub empty_keys: u64,
    /// Rows whose key repeats an earlier row's key.
    pub duplicate_rows: u64,
}

impl Keyed {
    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.row_item.len()
    }

    /// The rows (indices, ascending) whose item index is in `matched` (item indices, in any
    /// order; indices out of range are ignored).
    pub fn rows_of_items(&self, matched: &[usize]) -> Vec<usize> {
        let mut hit = vec![false; self.items.len()];
        for &k in matched {
            if let Some(m) = hit.get_mut(k) {
                *m = true;
            }
        }
        self.row_item
            .iter()
            .enumerate()
            .filter(|&(_, &k)| hit.get(k as usize).copied().unwrap_or(false))
            .map(|(i, _)| i)
            .collect()
    }
}

/// Normalises and hashes keys to items; one per thread (it holds scratch buffers).
#[derive(Clone)]
pub struct KeyHasher<'a> {
    normalizer: &'a Normalizer,
    records: RecordHasher,
    field: Vec<u8>,
    keys: [Vec<u8>; 2],
}

impl<'a> KeyHasher<'a> {
    /// A hasher that normalises every field with `normalizer`.
    pub fn new(normalizer: &'a Normalizer) -> Self {
        KeyHasher {
            normalizer,
            records: RecordHasher::new(),
            field: Vec::new(),
            keys: [Vec::new(), Vec::new()],
        }
    }

    /// Writes the key of `fields` (see the module doc) into `keys[slot]`; false if it is
    /// empty or invalid.
    fn key_into<'f>(
        &mut self,
        fields: impl ExactSizeIterator<Item = &'f [u8]>,
        slot: usize,
    ) -> bool {
        let mut key = std::mem::take(&mut self.keys[slot]);
        let ok = if fields.len() == 1 {
            let mut fields = fields;
            fields
                .next()
                .is_some_and(|f| self.normalizer.apply_into(f, &mut key))
        } else {
            key.clear();
            let mut ok = true;
            for raw in fields {
                if !self.normalizer.apply_into(raw, &mut self.field) {
                    ok = false;
                    break;
                }
                key.extend_from_slice(&(self.field.len() as u64).to_le_bytes());
                key.extend_from_slice(&self.field);
            }
            ok
        };
        self.keys[slot] = key;
        ok
    }

    /// The item of a one-field key, or `None` if it is empty or invalid after normalisation.
    pub fn one(&mut self, raw: &[u8]) -> Option<Item> {
        self.composite(std::iter::once(raw))
    }

    /// The item of a composite key (see the module doc), or `None` if any field is empty or
    /// invalid after normalisation. One field is the same as [`KeyHasher::one`].
    pub fn composite<'f>(
        &mut self,
        fields: impl ExactSizeIterator<Item = &'f [u8]>,
    ) -> Option<Item> {
        self.key_into(fields, 0)
            .then(|| self.records.one(&self.keys[0]))
    }

    /// Appends to `out` the items of rows `0..rows`, whose fields `fields(i)` gives; two keys
    /// are hashed at a time.
    pub fn rows<'f, I>(
        &mut self,
        rows: usize,
        mut fields: impl FnMut(usize) -> I,
        out: &mut Vec<Option<Item>>,
    ) where
        I: ExactSizeIterator<Item = &'f [u8]>,
    {
        out.reserve(rows);
        // The entry of `out` whose key waits in slot 0 for a partner.
        let mut waiting: Option<usize> = None;
        for i in 0..rows {
            let slot = usize::from(waiting.is_some());
            let ok = self.key_into(fields(i), slot);
            out.push(None);
            if !ok {
                continue;
            }
            let at = out.len() - 1;
            match waiting.take() {
                None => waiting = Some(at),
                Some(first) => {
                    let [a, b] = self.records.pair(&self.keys[0], &self.keys[1]);
                    out[first] = Some(a);
                    out[at] = Some(b);
                }
            }
        }
        if let Some(first) = waiting {
            out[first] = Some(self.records.one(&self.keys[0]));
        }
    }
}

/// Items are SHA-256 output: their first 8 bytes are already a uniform hash.
#[derive(Default)]
struct ItemBytesHasher(u64);

impl Hasher for ItemBytesHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut b = [0u8; 8];
        let n = bytes.len().min(8);
        b[..n].copy_from_slice(&bytes[..n]);
        self.0 ^= u64::from_le_bytes(b);
    }
    fn write_usize(&mut self, _: usize) {
        // The array length `Hash` writes first: the same for every item.
    }
}

/// Shards of the deduplication: items go to a shard by their first byte's top bits.
const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;

fn shard_of(item: &Item) -> usize {
    usize::from(item.0[0] >> (8 - SHARD_BITS))
}

/// Assigns item indices in order of first appearance (see the module doc).
///
/// Rows are collected as they come; [`Dedup::finish`] then deduplicates them in parallel: the
/// rows are split by their item's first bits into 64 shards, each shard finds its distinct
/// items with a hash table small enough to stay in cache, and the distinct items are put in
/// order of their first row with one sort.
#[derive(Default)]
pub struct Dedup {
    rows: Vec<Option<Item>>,
}

/// More distinct keys than [`MAX_DISTINCT_KEYS`], or more rows than `u32` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyKeys;

impl Dedup {
    /// An empty table with room for about `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        Dedup {
            rows: Vec::with_capacity(rows),
        }
    }

    /// Makes room for about `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        self.rows.reserve(rows);
    }

    /// Appends the next rows' items (`None` for a row without a key).
    pub fn extend(&mut self, rows: &[Option<Item>]) -> Result<(), TooManyKeys> {
        if self.rows.len() + rows.len() >= NO_KEY as usize {
            return Err(TooManyKeys);
        }
        self.rows.extend_from_slice(rows);
        Ok(())
    }

    /// The keyed rows.
    pub fn finish(self) -> Result<Keyed, TooManyKeys> {
        let rows = self.rows;
        let n = rows.len();
        // 1. (row, item) per shard, in row order: pieces of rows split in parallel.
        let piece = n
            .div_ceil(rayon::current_num_threads().max(1) * 4)
            .max(1 << 14);
        let pieces: Vec<Vec<Vec<(u32, Item)>>> = rows
            .par_chunks(piece)
            .enumerate()
            .map(|(p, chunk)| {
                let mut by_shard: Vec<Vec<(u32, Item)>> = (0..SHARDS)
                    .map(|_| Vec::with_capacity(chunk.len() / SHARDS * 2))
                    .collect();
                for (i, row) in chunk.iter().enumerate() {
                    if let Some(item) = row {
                        by_shard[shard_of(item)].push(((p * piece + i) as u32, *item));
                    }
                }
                by_shard
            })
            .collect();
        drop(rows);
        // 2. Per shard: its distinct items in order of first appearance and each row's local
        //    index, with a hash table of the shard's items only.
        struct Shard {
            rows: Vec<u32>,
            local: Vec<u32>,
            items: Vec<Item>,
        }
        let shards: Vec<Shard> = (0..SHARDS)
            .into_par_iter()
            .map(|s| {
                let len: usize = pieces.iter().map(|p| p[s].len()).sum();
                let mut index: HashMap<Item, u32, BuildHasherDefault<ItemBytesHasher>> =
                    HashMap::with_capacity_and_hasher(len, Default::default());
                let mut shard = Shard {
                    rows: Vec::with_capacity(len),
                    local: Vec::with_capacity(len),
                    items: Vec::new(),
                };
                for &(r, item) in pieces.iter().flat_map(|p| &p[s]) {
                    let next = shard.items.len() as u32;
                    let items = &mut shard.items;
                    let l = *index.entry(item).or_insert_with(|| {
                        items.push(item);
                        next
                    });
                    shard.rows.push(r);
                    shard.local.push(l);
                }
                shard
            })
            .collect();
        drop(pieces);
        let distinct: usize = shards.iter().map(|s| s.items.len()).sum();
        if distinct > MAX_DISTINCT_KEYS || shards.iter().any(|s| s.items.len() >= 1 << 26) {
            return Err(TooManyKeys);
        }
        // 3. Each row's (shard, local index), packed; then one pass in row order numbers the
        //    items by first appearance: a row holds its item's first appearance exactly when
        //    its local index is the next one of its shard.
        let mut row_item = vec![NO_KEY; n];
        for (s, shard) in shards.iter().enumerate() {
            for (&r, &l) in shard.rows.iter().zip(&shard.local) {
                row_item[r as usize] = ((s as u32) << 26) | l;
            }
        }
        let mut global: Vec<Vec<u32>> = shards.iter().map(|s| vec![0u32; s.items.len()]).collect();
        let mut next = [0u32; SHARDS];
        let mut items = Vec::with_capacity(distinct);
        for slot in row_item.iter_mut().filter(|k| **k != NO_KEY) {
            let (s, l) = ((*slot >> 26) as usize, *slot & ((1 << 26) - 1));
            if l == next[s] {
                global[s][l as usize] = items.len() as u32;
                items.push(shards[s].items[l as usize]);
                next[s] += 1;
            }
            *slot = global[s][l as usize];
        }
        let keyed_rows: usize = shards.iter().map(|s| s.rows.len()).sum();
        Ok(Keyed {
            items,
            row_item,
            empty_keys: (n - keyed_rows) as u64,
            duplicate_rows: (keyed_rows - distinct) as u64,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::normalize::Normalize;
    use blindjoin_core::item::items_from_records;

    fn norm(kind: Normalize) -> Normalizer {
        Normalizer {
            kind,
            country_code: None,
        }
    }

    #[test]
    fn one_field_items_are_the_record_items() {
        let n = norm(Normalize::Email);
        let mut h = KeyHasher::new(&n);
        let want = items_from_records(&[b"anna@x.org".as_slice()]);
        assert_eq!(h.one(b"  Anna@X.org "), Some(want[0]));
        assert_eq!(h.one(b" "), None);
        assert_eq!(
            h.composite([b" ANNA@x.org".as_slice()].into_iter()),
            Some(want[0])
        );
    }

    #[test]
    fn composite_keys_are_length_prefixed() {
        let n = norm(Normalize::Lower);
        let mut h = KeyHasher::new(&n);
        let key = |a: &[u8], b: &[u8]| {
            let mut k = Vec::new();
            k.extend_from_slice(&(a.len() as u64).to_le_bytes());
            k.extend_from_slice(a);
            k.extend_from_slice(&(b.len() as u64).to_le_bytes());
            k.extend_from_slice(b);
            items_from_records(&[k])[0]
        };
        let ab_c = h.composite([b"AB".as_slice(), b" c"].into_iter());
        let a_bc = h.composite([b"a".as_slice(), b"BC"].into_iter());
        assert_eq!(ab_c, Some(key(b"ab", b"c")));
        assert_eq!(a_bc, Some(key(b"a", b"bc")));
        assert_ne!(ab_c, a_bc);
        // An empty field makes the whole key empty.
        assert_eq!(h.composite([b"a".as_slice(), b"  "].into_iter()), None);
    }

    #[test]
    fn rows_hash_in_pairs_as_one_by_one() {
        let n = norm(Normalize::Email);
        let keys: Vec<&[u8]> = vec![b"A@x", b"", b"b@x", b"  ", b"c@X ", b"d@x", b"e@x"];
        for len in 0..=keys.len() {
            let mut h = KeyHasher::new(&n);
            let mut out = vec![None];
            h.rows(len, |i| std::iter::once(keys[i]), &mut out);
            let want: Vec<Option<Item>> = std::iter::once(None)
                .chain(keys[..len].iter().map(|k| KeyHasher::new(&n).one(k)))
                .collect();
            assert_eq!(out, want, "{len}");
        }
    }

    #[test]
    fn dedup_in_row_order() {
        let it = |b: &[u8]| Some(items_from_records(&[b])[0]);
        let mut d = Dedup::with_capacity(2);
        d.extend(&[it(b"a"), None, it(b"b")]).unwrap();
        d.extend(&[it(b"a"), it(b"c"), None, it(b"b")]).unwrap();
        let k = d.finish().unwrap();
        assert_eq!(k.items, items_from_records(&[b"a".as_slice(), b"b", b"c"]));
        assert_eq!(k.row_item, vec![0, NO_KEY, 1, 0, 2, NO_KEY, 1]);
        assert_eq!((k.empty_keys, k.duplicate_rows), (2, 2));
        assert_eq!(k.rows(), 7);
        assert_eq!(k.rows_of_items(&[]), Vec::<usize>::new());
        assert_eq!(k.rows_of_items(&[0]), vec![0, 3]);
        assert_eq!(k.rows_of_items(&[2, 1, 9]), vec![2, 4, 6]);
    }
}
