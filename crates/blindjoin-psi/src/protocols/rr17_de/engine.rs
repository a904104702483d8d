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
//! tells the receiver nothing a random permutation would not. The receiver sorts its values
//! of position l by the same bits and joins bucket by bucket ([`BucketJoin`]): the values of
//! one bucket go into a small table that stays in the L2 cache while that bucket's masks are
//! looked up, so neither side makes a random access to main memory. Masks out of bucket order
//! are refused as malformed.

use super::{DeParams, Placement};
use crate::protocols::common::queue_closed;
use blindjoin_core::cache::prefetch;
use blindjoin_core::channel::{FrameReceiver, FrameSender};
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::oos::{
    self, Names, OosReceiver, OosReceiverBatch, OosSender, OosSenderOutputs,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use zeroize::Zeroizing;

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
fn duplex_chunk(
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

/// The duplex phase, chunk by chunk of `p`'s bins: our inputs fill `my_slots` slots per bin
/// (`pl.fill_slots`), the peer's `their_slots`. Chunk k's outputs go to `eval(b0, b1, batch,
/// keys)`, run as a task on the rayon pool while chunk k + 1's exchange runs on this thread
/// (with one thread, one after the other), then `done(b1)`; the batches are recycled after.
#[allow(clippy::too_many_arguments)]
pub(crate) fn duplex_chunks(
    tx: &mut dyn FrameSender,
    rx: &mut Queued,
    mine: &mut OosReceiver,
    theirs: &mut OosSender,
    their_challenge: &'static str,
    p: &DeParams,
    pl: &Placement,
    (my_slots, their_slots): (usize, usize),
    mut eval: impl FnMut(usize, usize, &OosReceiverBatch, &OosSenderOutputs) -> Result<()> + Send,
    mut done: impl FnMut(usize),
) -> Result<()> {
    let list: Vec<(usize, usize)> = super::chunks(p).collect();
    let mut slot_buf = Zeroizing::new(Vec::new());
    let mut ready: Option<(usize, usize, OosReceiverBatch, OosSenderOutputs)> = None;
    for k in 0..=list.len() {
        let job = ready.take();
        let mut evaluated: Result<()> = Ok(());
        let mut finished = None;
        let next = rayon::in_place_scope(|scope| -> Result<_> {
            if let Some((b0, b1, batch, keys)) = job {
                let (eval, evaluated, finished) = (&mut eval, &mut evaluated, &mut finished);
                scope.spawn(move |_| {
                    *evaluated = eval(b0, b1, &batch, &keys);
                    *finished = Some((b1, batch, keys));
                });
            }
            let Some(&(b0, b1)) = list.get(k) else {
                return Ok(None);
            };
            pl.fill_slots(b0, b1, my_slots, &mut slot_buf);
            let (batch, keys) = duplex_chunk(
                tx,
                rx,
                mine,
                theirs,
                their_challenge,
                &slot_buf,
                (b1 - b0) * their_slots,
            )?;
            Ok(Some((b0, b1, batch, keys)))
        })?;
        evaluated?;
        if let Some((b1, batch, keys)) = finished {
            mine.recycle(batch);
            theirs.recycle(keys);
            done(b1);
        }
        ready = next;
    }
    Ok(())
}

/// A mask of at most 96 bits in 12 bytes (the sender keeps n2·B_R of them until its last
/// chunk: 12 bytes each instead of 16 is a quarter less memory).
#[derive(Clone, Copy)]
pub(crate) struct Mask([u32; 3]);

impl Mask {
    #[inline]
    pub(crate) fn new(v: u128) -> Mask {
        Mask([v as u32, (v >> 32) as u32, (v >> 64) as u32])
    }

    #[inline]
    pub(crate) fn value(self) -> u128 {
        u128::from(self.0[0]) | (u128::from(self.0[1]) << 32) | (u128::from(self.0[2]) << 64)
    }
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

/// Values partitioned by receiver slot position and bucket (their low `bits` bits), appended
/// as they are produced, so that neither party sorts them afterwards.
pub(crate) struct Buckets<T> {
    bits: u32,
    parts: Vec<Vec<T>>,
}

impl<T: Copy> Buckets<T> {
    /// Empty buckets for `expected.len()` positions, each bucket of position l with room for
    /// about `expected[l]`/2^bits values (and a margin, so that few of them grow).
    pub(crate) fn new(bits: u32, expected: &[usize]) -> Buckets<T> {
        let per = 1usize << bits;
        let parts = expected
            .iter()
            .flat_map(|&e| {
                // The mean, and room for some 5 standard deviations above it at the sizes
                // where memory matters (a bucket that fills up grows).
                let cap = e / per + e / per / 16 + 64;
                (0..per).map(move |_| Vec::with_capacity(cap))
            })
            .collect();
        Buckets { bits, parts }
    }

    /// Appends `v`, whose low bits are `low`, to position `position`.
    #[inline]
    pub(crate) fn push(&mut self, position: usize, low: u64, v: T) {
        let j = (low & ((1u64 << self.bits) - 1)) as usize;
        self.parts[(position << self.bits) | j].push(v);
    }

    /// The buckets of `position`, in order (their memory stays with `self` until dropped).
    pub(crate) fn position(&mut self, position: usize) -> &mut [Vec<T>] {
        let per = 1usize << self.bits;
        &mut self.parts[position * per..(position + 1) * per]
    }
}

/// Shuffles `bucket` uniformly at random (Fisher-Yates on random words drawn in bulk into
/// `random`).
pub(crate) fn shuffle<T>(bucket: &mut [T], prg: &mut AesPrg, random: &mut Vec<u8>) {
    random.clear();
    random.resize(8 * bucket.len(), 0);
    prg.fill_bytes(random);
    for (k, r) in (1..bucket.len()).rev().zip(random.chunks_exact(8)) {
        let r = u64::from_le_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]]);
        bucket.swap(k, (r % (k as u64 + 1)) as usize);
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

    /// The low 64 bits of the value (its bucket's bits among them).
    #[inline]
    pub(crate) fn low(&self) -> u64 {
        self.lo
    }

    #[inline]
    fn value(&self) -> u128 {
        u128::from(self.lo) | (u128::from(self.hi) << 64)
    }

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

/// Lookups and insertions whose slots are prefetched ahead of their turn.
const AHEAD: usize = 16;

/// An empty slot of [`MaskTable`].
const EMPTY_ENTRY: Entry = Entry {
    lo: 0,
    hi: 0,
    item: Entry::EMPTY,
};

/// A table of entries by value (linear probing at load ≤ 1/2), for lookups of values in no
/// particular order (`rr17_ec`'s tags).
pub(crate) struct MaskTable {
    slots: Vec<Entry>,
}

impl MaskTable {
    /// An empty table (its buffer is reused by [`fill`](Self::fill)).
    pub(crate) fn new() -> MaskTable {
        MaskTable { slots: Vec::new() }
    }

    #[inline]
    fn index(&self, v: u128) -> usize {
        v as usize & (self.slots.len() - 1)
    }

    /// Replaces the contents with `entries`.
    pub(crate) fn fill(&mut self, entries: &[Entry]) {
        let size = (2 * entries.len().max(1)).next_power_of_two();
        self.slots.clear();
        self.slots.resize(size, EMPTY_ENTRY);
        let mask = size - 1;
        for (k, e) in entries.iter().enumerate() {
            if let Some(next) = entries.get(k + AHEAD) {
                prefetch(&self.slots[self.index(next.value())]);
            }
            let mut i = self.index(e.value());
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

/// The receiver's values of one slot position joined with the sender's masks of that
/// position, which arrive in bucket order: a small table of the current bucket's values.
pub(crate) struct BucketJoin {
    bits: u32,
    /// The bucket in `table`, if any.
    current: Option<usize>,
    table: Vec<Entry>,
}

impl BucketJoin {
    pub(crate) fn new(bits: u32) -> BucketJoin {
        BucketJoin {
            bits,
            current: None,
            table: Vec::new(),
        }
    }

    /// The table of bucket `j` of `buckets`: its values at their hash (the bits above the
    /// bucket's), linear probing at load ≤ 1/2.
    fn build(&mut self, buckets: &[Vec<Entry>], j: usize) {
        let values = &buckets[j];
        let size = (2 * values.len().max(1)).next_power_of_two();
        self.table.clear();
        self.table.resize(size, EMPTY_ENTRY);
        let mask = size - 1;
        for e in values {
            let mut i = (e.value() >> self.bits) as usize & mask;
            while self.table[i].item != Entry::EMPTY {
                i = (i + 1) & mask;
            }
            self.table[i] = *e;
        }
        self.current = Some(j);
    }

    /// Starts the next slot position.
    pub(crate) fn reset(&mut self) {
        self.current = None;
    }

    /// Calls `hit(item)` for every value of `buckets` (one position's) equal to each mask of
    /// `frame` (`len` ≤ 16 bytes each, little-endian). `Err(Malformed)` naming `what` if a
    /// mask's bucket is below the previous mask's.
    pub(crate) fn probe_frame(
        &mut self,
        buckets: &[Vec<Entry>],
        frame: &[u8],
        len: usize,
        what: &'static str,
        mut hit: impl FnMut(u32),
    ) -> Result<()> {
        let low = (1u128 << self.bits) - 1;
        let keep = crate::protocols::common::tag_mask(len);
        for (k, m) in frame.chunks_exact(len).enumerate() {
            // One 16-byte load where the frame has the bytes (no copy call per mask).
            let v = match frame.get(k * len..k * len + 16) {
                Some(b) => u128::from_le_bytes(b.try_into().unwrap_or([0; 16])) & keep,
                None => crate::protocols::common::tag_from_bytes(m),
            };
            let j = (v & low) as usize;
            match self.current {
                Some(c) if c == j => {}
                Some(c) if c > j => {
                    return Err(Error::malformed(what, "masks out of bucket order"));
                }
                _ => self.build(buckets, j),
            }
            let mask = self.table.len() - 1;
            let (lo, hi) = (v as u64, (v >> 64) as u32);
            let mut i = (v >> self.bits) as usize & mask;
            loop {
                let s = self.table[i];
                if s.item == Entry::EMPTY {
                    break;
                }
                if s.lo == lo && s.hi == hi {
                    hit(s.item);
                }
                i = (i + 1) & mask;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The masks of one position as the sender sends them: bucket by bucket, each shuffled.
    fn wire_order(masks: &[u128], bits: u32) -> Vec<u128> {
        let mut b: Buckets<u128> = Buckets::new(bits, &[masks.len()]);
        for &m in masks {
            b.push(0, m as u64, m);
        }
        let (mut prg, mut random) = (AesPrg::new(Block(4)), Vec::new());
        let mut out = Vec::new();
        for bucket in b.position(0) {
            shuffle(bucket, &mut prg, &mut random);
            out.extend_from_slice(bucket);
        }
        out
    }

    #[test]
    fn masks_go_out_by_bucket_shuffled_within_and_kept_whole() {
        let mut prg = AesPrg::new(Block(3));
        let masks: Vec<u128> = (0..5000).map(|_| prg.next_block().0 >> 40).collect();
        let out = wire_order(&masks, 4);
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
    fn the_bucket_join_finds_every_value_in_order_and_refuses_disorder() {
        let bits = 5;
        let mut prg = AesPrg::new(Block(21));
        let values: Vec<u128> = (0..3000).map(|_| prg.next_block().0 >> 40).collect();
        let mut entries: Buckets<Entry> = Buckets::new(bits, &[3001]);
        for (i, &v) in values.iter().enumerate() {
            entries.push(0, v as u64, Entry::new(v, i as u32));
        }
        // Items 6 and 3000 share a value.
        entries.push(0, values[6] as u64, Entry::new(values[6], 3000));
        let mut masks: Vec<u128> = values.iter().step_by(3).copied().collect();
        masks.push(values[1] ^ (1 << 60));
        let ordered = wire_order(&masks, bits);
        let frame = |ms: &[u128]| -> Vec<u8> {
            ms.iter()
                .flat_map(|m| m.to_le_bytes()[..11].to_vec())
                .collect()
        };
        let mut join = BucketJoin::new(bits);
        let mut hits = Vec::new();
        join.probe_frame(entries.position(0), &frame(&ordered), 11, "masks", |i| {
            hits.push(i)
        })
        .unwrap();
        hits.sort_unstable();
        let mut want: Vec<u32> = (0..3000).step_by(3).collect();
        want.push(3000);
        want.sort_unstable();
        assert_eq!(hits, want);
        // The same masks in an order that is not the buckets'.
        let mut reversed = ordered.clone();
        reversed.reverse();
        join.reset();
        assert!(
            join.probe_frame(entries.position(0), &frame(&reversed), 11, "masks", |_| {})
                .is_err()
        );
    }

    #[test]
    fn the_table_finds_every_entry_and_only_equal_values() {
        let mut prg = AesPrg::new(Block(9));
        let values: Vec<u128> = (0..3000).map(|_| prg.next_block().0 >> 32).collect();
        let mut entries: Vec<Entry> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| Entry::new(v, i as u32))
            .collect();
        // Two items with one value.
        entries.push(Entry::new(values[7], 3000));
        let mut t = MaskTable::new();
        t.fill(&entries);
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
