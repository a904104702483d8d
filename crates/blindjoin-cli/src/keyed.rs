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
//! row order. Nothing per row is kept but a 4-byte item index.

use crate::normalize::Normalizer;
use blindjoin_core::item::{ITEM_DOMAIN, ITEM_LEN, Item, domain_hasher, update_prefixed};
use sha2::{Digest, Sha256};
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
    base: Sha256,
    field: Vec<u8>,
    key: Vec<u8>,
}

impl<'a> KeyHasher<'a> {
    /// A hasher that normalises every field with `normalizer`.
    pub fn new(normalizer: &'a Normalizer) -> Self {
        KeyHasher {
            normalizer,
            base: domain_hasher(ITEM_DOMAIN),
            field: Vec::new(),
            key: Vec::new(),
        }
    }

    /// The item of a one-field key, or `None` if it is empty or invalid after normalisation.
    pub fn one(&mut self, raw: &[u8]) -> Option<Item> {
        if !self.normalizer.apply_into(raw, &mut self.field) {
            return None;
        }
        Some(self.finish_with(FieldOrKey::Field))
    }

    /// The item of a composite key (see the module doc), or `None` if any field is empty or
    /// invalid after normalisation. One field is the same as [`KeyHasher::one`].
    pub fn composite<'f>(
        &mut self,
        fields: impl ExactSizeIterator<Item = &'f [u8]>,
    ) -> Option<Item> {
        if fields.len() == 1 {
            let mut fields = fields;
            return fields.next().and_then(|f| self.one(f));
        }
        self.key.clear();
        for raw in fields {
            if !self.normalizer.apply_into(raw, &mut self.field) {
                return None;
            }
            self.key
                .extend_from_slice(&(self.field.len() as u64).to_le_bytes());
            self.key.extend_from_slice(&self.field);
        }
        Some(self.finish_with(FieldOrKey::Key))
    }

    fn finish_with(&mut self, which: FieldOrKey) -> Item {
        let bytes = match which {
            FieldOrKey::Field => &self.field,
            FieldOrKey::Key => &self.key,
        };
        let mut h = self.base.clone();
        update_prefixed(&mut h, bytes);
        let digest = h.finalize();
        let mut out = [0u8; ITEM_LEN];
        out.copy_from_slice(&digest[..ITEM_LEN]);
        Item(out)
    }
}

enum FieldOrKey {
    Field,
    Key,
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

/// Assigns item indices in row order (see the module doc).
#[derive(Default)]
pub struct Dedup {
    index: HashMap<Item, u32, BuildHasherDefault<ItemBytesHasher>>,
    keyed: Keyed,
}

/// More distinct keys than [`MAX_DISTINCT_KEYS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyKeys;

impl Dedup {
    /// An empty table with room for about `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        let mut d = Dedup::default();
        d.keyed.row_item.reserve(rows);
        d.index.reserve(rows);
        d.keyed.items.reserve(rows);
        d
    }

    /// Appends the next rows' items (`None` for a row without a key).
    pub fn extend(&mut self, rows: &[Option<Item>]) -> Result<(), TooManyKeys> {
        self.keyed.row_item.reserve(rows.len());
        for row in rows {
            let k = match row {
                None => {
                    self.keyed.empty_keys += 1;
                    NO_KEY
                }
                Some(item) => {
                    let next = self.keyed.items.len();
                    match self.index.entry(*item) {
                        std::collections::hash_map::Entry::Occupied(e) => {
                            self.keyed.duplicate_rows += 1;
                            *e.get()
                        }
                        std::collections::hash_map::Entry::Vacant(e) => {
                            if next >= MAX_DISTINCT_KEYS {
                                return Err(TooManyKeys);
                            }
                            self.keyed.items.push(*item);
                            *e.insert(next as u32)
                        }
                    }
                }
            };
            self.keyed.row_item.push(k);
        }
        Ok(())
    }

    /// The keyed rows.
    pub fn finish(mut self) -> Keyed {
        self.keyed.items.shrink_to_fit();
        self.keyed
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
    fn dedup_in_row_order() {
        let it = |b: &[u8]| Some(items_from_records(&[b])[0]);
        let mut d = Dedup::with_capacity(2);
        d.extend(&[it(b"a"), None, it(b"b")]).unwrap();
        d.extend(&[it(b"a"), it(b"c"), None, it(b"b")]).unwrap();
        let k = d.finish();
        assert_eq!(k.items, items_from_records(&[b"a".as_slice(), b"b", b"c"]));
        assert_eq!(k.row_item, vec![0, NO_KEY, 1, 0, 2, NO_KEY, 1]);
        assert_eq!((k.empty_keys, k.duplicate_rows), (2, 2));
        assert_eq!(k.rows(), 7);
        assert_eq!(k.rows_of_items(&[]), Vec::<usize>::new());
        assert_eq!(k.rows_of_items(&[0]), vec![0, 3]);
        assert_eq!(k.rows_of_items(&[2, 1, 9]), vec![2, 4, 6]);
    }
}
