//! Input records as fixed-width items, by domain-separated hashing.
//!
//! A record is any byte string (after the caller's normalisation). [`hash_to_item`] maps it to a
//! 128-bit [`Item`] as `SHA-256(len(domain) ‖ domain ‖ pad ‖ len(bytes) ‖ bytes)` truncated, with
//! 64-bit little-endian lengths and `pad` the zero bytes that complete the domain's 64-byte
//! block: every input has exactly one encoding, so `"ab"` and `"ab\0"`
//! (or a domain/record split moved by one byte) can never collide by construction, only by a
//! SHA-256 collision. Two distinct records of a run map to the same item with probability at
//! most n²/2¹²⁹, which is below 2⁻⁴⁰ for any n < 2⁴⁴.
//!
//! SHA-256 was chosen over BLAKE3 by measurement on identifier-sized records (`cargo bench -p
//! blindjoin-core --bench item_hash`, docs/BENCHMARKS.md): with the domain block precomputed,
//! a record under 47 bytes costs one SHA-256 compression, which the SHA extensions of current
//! x86-64 CPUs make faster than BLAKE3's single-chunk path.
//!
//! Items do not depend on the session: the receiver computes them once and keeps the map back to
//! its rows. Every hash a protocol computes *from* items mixes in the session id
//! ([`crate::handshake::Session::hasher`]).

use sha2::{Digest, Sha256};

/// Width of an item in bytes.
pub const ITEM_LEN: usize = 16;

/// The domain of [`hash_to_item`] for blindjoin's input records.
pub const ITEM_DOMAIN: &[u8] = b"blindjoin/item/v1";

/// A fixed-width item derived from one distinct input record.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Item(pub [u8; ITEM_LEN]);

/// Feeds `bytes` into `hasher` preceded by its 64-bit little-endian length.
pub fn update_prefixed(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

/// A SHA-256 state that has absorbed the length-prefixed `domain`, zero-padded to a whole
/// number of 64-byte blocks. The padding is fixed by the domain's length, so the encoding stays
/// injective; it lets a cloned state hash a short record with a single block compression.
pub fn domain_hasher(domain: &[u8]) -> Sha256 {
    let mut h = Sha256::new();
    update_prefixed(&mut h, domain);
    let used = (8 + domain.len()) % 64;
    if used != 0 {
        h.update(&[0u8; 64][..64 - used]);
    }
    h
}

/// Maps `bytes` to an item under `domain` (length-prefixed, domain-separated SHA-256).
pub fn hash_to_item(domain: &[u8], bytes: &[u8]) -> Item {
    let mut h = domain_hasher(domain);
    update_prefixed(&mut h, bytes);
    let digest = h.finalize();
    let mut out = [0u8; ITEM_LEN];
    out.copy_from_slice(&digest[..ITEM_LEN]);
    Item(out)
}

/// Maps input records to items under [`ITEM_DOMAIN`].
pub fn items_from_records<R: AsRef<[u8]>>(records: &[R]) -> Vec<Item> {
    let base = domain_hasher(ITEM_DOMAIN);
    records
        .iter()
        .map(|r| {
            let mut h = base.clone();
            update_prefixed(&mut h, r.as_ref());
            let digest = h.finalize();
            let mut out = [0u8; ITEM_LEN];
            out.copy_from_slice(&digest[..ITEM_LEN]);
            Item(out)
        })
        .collect()
}

/// Items of records of any length, two at a time: bit for bit [`items_from_records`], with the
/// state after the domain block computed once and two records' SHA-256 compressions
/// interleaved ([`crate::sha256x::compress256_x2`]) when they take the same number of blocks
/// (a record of up to 47 bytes takes one).
#[derive(Clone, Debug)]
pub struct RecordHasher {
    state: [u32; 8],
    lanes: [Vec<[u8; 64]>; 2],
}

impl Default for RecordHasher {
    fn default() -> Self {
        RecordHasher::new()
    }
}

impl RecordHasher {
    /// A hasher under [`ITEM_DOMAIN`].
    pub fn new() -> Self {
        let mut block = [0u8; 64];
        block[..8].copy_from_slice(&(ITEM_DOMAIN.len() as u64).to_le_bytes());
        block[8..8 + ITEM_DOMAIN.len()].copy_from_slice(ITEM_DOMAIN);
        let mut state = crate::sha256x::SHA256_IV;
        sha2::block_api::compress256(&mut state, &[block]);
        RecordHasher {
            state,
            lanes: [Vec::new(), Vec::new()],
        }
    }

    /// Writes `le64(len) ‖ record` and the SHA-256 padding (after the one domain block) into
    /// lane `l`; returns its number of blocks.
    fn fill(&mut self, l: usize, record: &[u8]) -> usize {
        let body = 8 + record.len();
        let blocks = (body + 9).div_ceil(64);
        let lane = &mut self.lanes[l];
        lane.clear();
        lane.resize(blocks, [0u8; 64]);
        let flat = lane.as_flattened_mut();
        flat[..8].copy_from_slice(&(record.len() as u64).to_le_bytes());
        flat[8..body].copy_from_slice(record);
        flat[body] = 0x80;
        let bits = ((64 + body) as u64) * 8;
        let end = flat.len();
        flat[end - 8..].copy_from_slice(&bits.to_be_bytes());
        blocks
    }

    fn item(state: &[u32; 8]) -> Item {
        let mut out = [0u8; ITEM_LEN];
        for (o, w) in out.chunks_exact_mut(4).zip(state) {
            o.copy_from_slice(&w.to_be_bytes());
        }
        Item(out)
    }

    /// The item of one record.
    pub fn one(&mut self, record: &[u8]) -> Item {
        self.fill(0, record);
        let mut state = self.state;
        sha2::block_api::compress256(&mut state, &self.lanes[0]);
        Self::item(&state)
    }

    /// The items of two records.
    pub fn pair(&mut self, a: &[u8], b: &[u8]) -> [Item; 2] {
        self.fill(0, a);
        self.fill(1, b);
        let mut states = [self.state; 2];
        crate::sha256x::compress256_x2(&mut states, [&self.lanes[0], &self.lanes[1]]);
        [Self::item(&states[0]), Self::item(&states[1])]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_and_boundary_shifts_do_not_collide() {
        let d = b"d";
        assert_ne!(hash_to_item(d, b"ab"), hash_to_item(d, b"ab\0"));
        assert_ne!(hash_to_item(b"da", b"b"), hash_to_item(b"d", b"ab"));
        assert_ne!(hash_to_item(b"", b""), hash_to_item(b"", b"\0"));
        assert_ne!(hash_to_item(b"x", b"same"), hash_to_item(b"y", b"same"));
    }

    #[test]
    fn records_map_like_single_calls() {
        let recs = ["alice@example.com", "", "bob"];
        let items = items_from_records(&recs);
        for (r, i) in recs.iter().zip(&items) {
            assert_eq!(*i, hash_to_item(ITEM_DOMAIN, r.as_bytes()));
        }
    }

    #[test]
    fn known_answer() {
        // SHA-256(le64(3) ‖ "dom" ‖ 53 zero bytes ‖ le64(3) ‖ "abc"), first 16 bytes, computed
        // independently with Python's hashlib:
        // p = (3).to_bytes(8,'little') + b'dom'; p += bytes(-len(p) % 64)
        // hashlib.sha256(p + (3).to_bytes(8,'little') + b'abc').hexdigest()[:32]
        let expect = "e41c23f318b71e3fc0326c9478d15720";
        let got: String = hash_to_item(b"dom", b"abc")
            .0
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, expect);
    }

    #[test]
    fn record_hasher_is_items_from_records() {
        let records: Vec<Vec<u8>> = (0..200usize)
            .map(|n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        let want = items_from_records(&records);
        let mut h = RecordHasher::new();
        for (r, w) in records.iter().zip(&want) {
            assert_eq!(h.one(r), *w, "{}", r.len());
        }
        for (i, pair) in records.windows(2).enumerate() {
            assert_eq!(h.pair(&pair[0], &pair[1]), [want[i], want[i + 1]]);
        }
        assert_eq!(h.pair(&records[3], &records[150]), [want[3], want[150]]);
    }
}
