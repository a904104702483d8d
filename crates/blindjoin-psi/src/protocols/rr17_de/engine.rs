//! What both roles of `rr17_de` share: the duplex OOS16 phase chunk by chunk, and the masks'
//! order on the wire and the receiver's table of its values.
//!
//! **Duplex.** Each party is the OOS16 receiver for its own slots and the key holder for the
//! peer's, and both directions of a chunk run at once: a reader thread takes the peer's frames
//! off the transport into a queue and a writer thread sends ours ([`pipelined`]), so neither
//! party waits for the other to finish computing before it starts. Per chunk each party sends
//! its u columns, the challenge for the peer's, and its proof, in that order, so the peer's
//! frames arrive in that order too ([`read_chunks`]).
//!
//! **Masks.** The sender sends the masks of receiver slot position l = 0, 1, … in turn, each
//! position's n2 masks ordered by their low `bucket_bits` bits and, within a bucket, in a
//! uniformly random order: an order fixed by the masks' values and fresh randomness, which
//! tells the receiver nothing a random permutation would not. The receiver's table for
//! position l ([`MaskTable`]) puts the entries of bucket j in the j-th 1/2^bucket_bits of the
//! table, so the lookups of one bucket stay in a region that fits the L2 cache. The order
//! only makes the lookups fast: masks in any other order are looked up all the same.

use super::DeParams;
use crate::protocols::common::queue_closed;
use blindjoin_core::channel::{FrameReceiver, FrameSender};
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::oos::{
    self, Names, OosReceiver, OosReceiverBatch, OosSender, OosSenderOutputs,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// The receiving end of the reader thread's queue as a [`FrameReceiver`].
pub(crate) struct Queued(pub mpsc::Receiver<Vec<u8>>);

impl FrameReceiver for Queued {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.0.recv().map_err(|_| queue_closed(what))?;
        if frame.len() > max_len {
            return Err(Error::malformed(
                what,
                format!("{} bytes, at most {max_len} expected", frame.len()),
            ));
        }
        Ok(frame)
    }
}

/// Reads one frame of exactly `len` bytes of `what` and queues it; `Ok(false)` if the consumer
/// has stopped or `aborted` is set.
pub(crate) fn forward(
    rx: &mut dyn FrameReceiver,
    q: &mpsc::SyncSender<Vec<u8>>,
    aborted: &AtomicBool,
    what: &'static str,
    len: usize,
) -> Result<bool> {
    if aborted.load(Ordering::Relaxed) {
        return Ok(false);
    }
    let frame = rx.recv(what, len)?;
    if frame.len() != len {
        return Err(Error::malformed(
            what,
            format!("{} bytes, {len} expected", frame.len()),
        ));
    }
    Ok(q.send(frame).is_ok())
}

/// The reader thread's part of the duplex phase: per chunk, the peer's u columns (for
/// `their_slots` slots per bin, named by `theirs`), its challenge for ours (named by `mine`)
/// and its proof. `Ok(false)` if it stopped early (the consumer reports why).
pub(crate) fn read_chunks(
    rx: &mut dyn FrameReceiver,
    q: &mpsc::SyncSender<Vec<u8>>,
    aborted: &AtomicBool,
    p: &DeParams,
    their_slots: usize,
    theirs: Names,
    mine: Names,
) -> Result<bool> {
    for (b0, b1) in super::chunks(p) {
        let m = (b1 - b0) * their_slots;
        if !forward(rx, q, aborted, theirs.u, oos::u_frame_len(m))?
            || !forward(rx, q, aborted, mine.challenge, 16)?
            || !forward(rx, q, aborted, theirs.proof, oos::PROOF_LEN)?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One chunk of the duplex phase: sends the u columns of `my_inputs` (our slots), receives
/// the peer's for `their_m` slots, answers and checks the challenges. Returns our batch (for
/// our outputs) and the checked keys of the peer's slots.
pub(crate) fn duplex_chunk(
    tx: &mut dyn FrameSender,
    rx: &mut Queued,
    mine: &mut OosReceiver,
    theirs: &mut OosSender,
    their_challenge: &'static str,
    my_inputs: &[Block],
    their_m: usize,
) -> Result<(OosReceiverBatch, OosSenderOutputs)> {
    let batch = mine.extend(tx, my_inputs)?;
    let pending = theirs.absorb(rx, their_m)?;
    tx.send(their_challenge, &pending.challenge())?;
    batch.prove(rx, tx)?;
    let keys = pending.verify(rx)?;
    Ok((batch, keys))
}

/// The low 8·`len` bits of a block.
#[inline]
pub(crate) fn truncate(b: Block, len: usize) -> u128 {
    if len >= 16 {
        b.0
    } else {
        b.0 & ((1u128 << (8 * len)) - 1)
    }
}

/// Orders the masks of one receiver slot position for the wire into `out`: by their low `bits`
/// bits, uniformly at random within each bucket (a counting sort, then Fisher-Yates per
/// bucket).
pub(crate) fn order_masks(masks: &[u128], bits: u32, prg: &mut AesPrg, out: &mut Vec<u128>) {
    let buckets = 1usize << bits;
    let low = (buckets - 1) as u128;
    let mut start = vec![0usize; buckets + 1];
    for &m in masks {
        start[(m & low) as usize + 1] += 1;
    }
    for j in 0..buckets {
        start[j + 1] += start[j];
    }
    let mut fill = start.clone();
    out.clear();
    out.resize(masks.len(), 0);
    for &m in masks {
        let j = (m & low) as usize;
        out[fill[j]] = m;
        fill[j] += 1;
    }
    let mut random = Vec::new();
    for j in 0..buckets {
        let bucket = &mut out[start[j]..start[j + 1]];
        // The bucket's random words in one call: the PRG's bulk path, not a block per draw.
        random.clear();
        random.resize(8 * bucket.len(), 0u8);
        prg.fill_bytes(&mut random);
        for (k, r) in (1..bucket.len()).rev().zip(random.chunks_exact(8)) {
            let r = u64::from_le_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]]);
            bucket.swap(k, (r % (k as u64 + 1)) as usize);
        }
    }
}

/// An entry of the receiver's table: 96 bits of a value and the item it belongs to.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Entry {
    lo: u64,
    hi: u32,
    item: u32,
}

impl Entry {
    const EMPTY: u32 = u32::MAX;

    /// The entry of `value` (at most 96 bits) for item `item` (< 2^32 − 1).
    #[inline]
    pub(crate) fn new(value: u128, item: u32) -> Entry {
        Entry {
            lo: value as u64,
            hi: (value >> 64) as u32,
            item,
        }
    }
}

/// An empty slot of [`MaskTable`].
const EMPTY_ENTRY: Entry = Entry {
    lo: 0,
    hi: 0,
    item: Entry::EMPTY,
};

/// The receiver's values of one slot position, in a table whose bucket j (the values whose
/// low `bits` bits are j) occupies the j-th part of the slots; linear probing at load ≤ 1/2.
pub(crate) struct MaskTable {
    slots: Vec<Entry>,
    /// log2 of the number of slots.
    size_bits: u32,
    bits: u32,
}

impl MaskTable {
    /// An empty table (its buffer is reused by [`fill`](Self::fill)).
    pub(crate) fn new(bits: u32) -> MaskTable {
        MaskTable {
            slots: Vec::new(),
            size_bits: 0,
            bits,
        }
    }

    #[inline]
    fn index(&self, v: u128) -> usize {
        let t = self.size_bits;
        if t >= self.bits {
            let low = (v as u64) & ((1u64 << self.bits) - 1);
            let rest = ((v >> self.bits) as u64) & ((1u64 << (t - self.bits)) - 1);
            ((low << (t - self.bits)) | rest) as usize
        } else {
            (v as u64 & ((1u64 << t) - 1)) as usize
        }
    }

    /// Replaces the contents with `entries`, inserted bucket by bucket (a counting sort into
    /// `scratch` first) so that the insertions of one bucket stay in its region of the table.
    pub(crate) fn fill(&mut self, entries: &[Entry], scratch: &mut Vec<Entry>) {
        let size = (2 * entries.len().max(1)).next_power_of_two();
        self.size_bits = size.trailing_zeros();
        self.slots.clear();
        self.slots.resize(size, EMPTY_ENTRY);
        let buckets = 1usize << self.bits;
        let low = (buckets - 1) as u64;
        let mut start = vec![0usize; buckets + 1];
        for e in entries {
            start[(e.lo & low) as usize + 1] += 1;
        }
        for j in 0..buckets {
            start[j + 1] += start[j];
        }
        scratch.clear();
        scratch.resize(entries.len(), EMPTY_ENTRY);
        for e in entries {
            let j = (e.lo & low) as usize;
            scratch[start[j]] = *e;
            start[j] += 1;
        }
        let mask = size - 1;
        for e in scratch.iter() {
            let mut i = self.index(u128::from(e.lo) | (u128::from(e.hi) << 64));
            while self.slots[i].item != Entry::EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = *e;
        }
    }

    /// Calls `hit(item)` for every entry whose value is `v`.
    #[inline]
    pub(crate) fn find(&self, v: u128, mut hit: impl FnMut(u32)) {
        let (lo, hi) = (v as u64, (v >> 64) as u32);
        let mask = self.slots.len() - 1;
        let mut i = self.index(v);
        loop {
            let s = self.slots[i];
            if s.item == Entry::EMPTY {
                return;
            }
            if s.lo == lo && s.hi == hi {
                hit(s.item);
            }
            i = (i + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn masks_are_ordered_by_bucket_and_kept_whole() {
        let mut prg = AesPrg::new(Block(3));
        let masks: Vec<u128> = (0..5000).map(|_| prg.next_block().0 >> 40).collect();
        let mut out = Vec::new();
        order_masks(&masks, 4, &mut AesPrg::new(Block(4)), &mut out);
        assert!(out.windows(2).all(|w| (w[0] & 15) <= (w[1] & 15)));
        let (mut a, mut b) = (masks.clone(), out.clone());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        // The order within a bucket is not the input order.
        let first: Vec<u128> = masks.iter().copied().filter(|m| m & 15 == 0).collect();
        let got: Vec<u128> = out.iter().copied().filter(|m| m & 15 == 0).collect();
        assert_ne!(first, got);
    }

    #[test]
    fn the_table_finds_every_entry_and_only_equal_values() {
        for bits in [0u32, 3, 20] {
            let mut prg = AesPrg::new(Block(u128::from(bits) + 9));
            let values: Vec<u128> = (0..3000).map(|_| prg.next_block().0 >> 32).collect();
            let mut entries: Vec<Entry> = values
                .iter()
                .enumerate()
                .map(|(i, &v)| Entry::new(v, i as u32))
                .collect();
            // Two items with one value.
            entries.push(Entry::new(values[7], 3000));
            let mut t = MaskTable::new(bits);
            t.fill(&entries, &mut Vec::new());
            for (i, &v) in values.iter().enumerate() {
                let mut hits = Vec::new();
                t.find(v, |x| hits.push(x));
                hits.sort_unstable();
                if i == 7 {
                    assert_eq!(hits, [7, 3000]);
                } else {
                    assert_eq!(hits, [i as u32]);
                }
                let mut none = Vec::new();
                t.find(v ^ (1 << 70), |x| none.push(x));
                assert!(none.is_empty());
            }
        }
    }
}
