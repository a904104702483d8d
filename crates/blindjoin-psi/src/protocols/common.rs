//! Pieces several protocols share: the papers they cite, comparison tags and the pipelined
//! receive loop with its bounded queue.

use crate::protocol::{Count, Party, Reference, RoleSpec};
use blindjoin_core::channel::{BulkReader, Channel, FrameReceiver, FrameSender};
use blindjoin_core::{Error, Result};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// Pinkas, Schneider, Zohner (USENIX Security 2014), the comparison platform; `part` set by
/// each user.
pub(crate) const PSZ14: Reference = Reference {
    tag: "PSZ14",
    authors: "Pinkas, Schneider, Zohner",
    title: "Scalable Private Set Intersection Based on OT Extension",
    venue: "USENIX Security 2014 (full version)",
    part: "",
};

/// Huberman, Franklin, Hogg (EC 1999), the Diffie-Hellman PSI protocol (also Meadows, 1986).
pub(crate) const HFH99: Reference = Reference {
    tag: "HFH99",
    authors: "Huberman, Franklin, Hogg",
    title: "Enhancing Privacy and Trust in Electronic Communities",
    venue: "ACM EC 1999",
    part: "the DH-based protocol (also Meadows, IEEE S&P 1986)",
};

/// Kolesnikov, Kumaresan, Rosulek, Trieu (CCS 2016), the batched OPRF.
pub(crate) const KKRT16: Reference = Reference {
    tag: "KKRT16",
    authors: "Kolesnikov, Kumaresan, Rosulek, Trieu",
    title: "Efficient Batched Oblivious PRF with Applications to Private Set Intersection",
    venue: "CCS 2016",
    part: "",
};

/// Chase, Miao (CRYPTO 2020), the multi-point OPRF.
pub(crate) const CM20: Reference = Reference {
    tag: "CM20",
    authors: "Chase, Miao",
    title: "Private Set Intersection in the Internet Setting From Lightweight Oblivious PRF",
    venue: "CRYPTO 2020",
    part: "",
};

/// The receiver's and the sender's roles of a two-party PSI in which the sender learns only
/// the receiver's set size and the receiver the intersection and the sender's set size.
pub(crate) const PSI_ROLES: &[RoleSpec] = &[
    RoleSpec {
        party: Party::Receiver,
        count: Count::One,
        learns: "the intersection (as its own rows) and the sender's set size",
    },
    RoleSpec {
        party: Party::Sender,
        count: Count::One,
        learns: "the receiver's set size",
    },
];

/// A set size from the handshake as a `usize`, or `InvalidParam` on a machine where it does
/// not fit.
pub(crate) fn set_size(n: u64) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::InvalidParam {
        field: "set size",
        reason: format!("{n} items do not fit this machine"),
    })
}

/// Elements per bulk frame: 2^14 (512 KiB of points), small enough to pipeline, large enough
/// that framing costs nothing.
pub(crate) const CHUNK: usize = 1 << 14;

/// A comparison tag of at most 16 bytes, read little-endian into a `u128`.
pub(crate) fn tag_from_bytes(bytes: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = bytes.len().min(16);
    b[..n].copy_from_slice(&bytes[..n]);
    u128::from_le_bytes(b)
}

/// Writes the low `dst.len()` (at most 16) bytes of `tag`, little-endian, into `dst`.
///
/// Lengths from 4 bytes on are written as two overlapping fixed-size copies, which compile to
/// plain moves, where a variable-length `copy_from_slice` would call `memcpy` for every tag.
#[inline]
pub(crate) fn put_tag(dst: &mut [u8], tag: u128) {
    let b = tag.to_le_bytes();
    let n = dst.len().min(16);
    if n >= 8 {
        dst[..8].copy_from_slice(&b[..8]);
        dst[n - 8..n].copy_from_slice(&b[n - 8..n]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&b[..4]);
        dst[n - 4..n].copy_from_slice(&b[n - 4..n]);
    } else {
        dst[..n].copy_from_slice(&b[..n]);
    }
}

/// Shuffles the `elem_len`-byte elements of `data` into a uniformly random order.
///
/// Sanders' two-level shuffle (*Random permutations on distributed, external and hierarchical
/// memory*, IPL 1998): every element goes to one of B buckets chosen uniformly at random, each
/// bucket is Fisher-Yates shuffled, and the buckets are concatenated; the result is a uniform
/// permutation. B is chosen so that a bucket fits the L2 cache, so the scatter writes B
/// sequential streams and the shuffles stay in cache, where one Fisher-Yates pass over a large
/// buffer would take a cache miss per element.
pub(crate) fn shuffle_elements(data: &mut Vec<u8>, elem_len: usize, rng: &mut impl rand::Rng) {
    shuffle_elements_in(data, elem_len, 256 << 10, rng);
}

/// [`shuffle_elements`] with buckets of about `bucket_bytes`.
fn shuffle_elements_in(
    data: &mut Vec<u8>,
    elem_len: usize,
    bucket_bytes: usize,
    rng: &mut impl rand::Rng,
) {
    use rand::seq::SliceRandom;
    if elem_len == 0 {
        return;
    }
    let n = data.len() / elem_len;
    let buckets = (data.len() / bucket_bytes.max(1))
        .clamp(1, 1 << 12)
        .next_power_of_two();
    let mask = (buckets - 1) as u32;
    let choice: Vec<u16> = (0..n).map(|_| (rng.next_u32() & mask) as u16).collect();
    let mut start = vec![0usize; buckets + 1];
    for &c in &choice {
        start[usize::from(c) + 1] += 1;
    }
    for b in 0..buckets {
        start[b + 1] += start[b];
    }
    let mut out = vec![0u8; data.len()];
    let mut cursor = start.clone();
    for (e, &c) in data.chunks_exact(elem_len).zip(&choice) {
        let at = cursor[usize::from(c)] * elem_len;
        out[at..at + elem_len].copy_from_slice(e);
        cursor[usize::from(c)] += 1;
    }
    drop(choice);
    let mut order: Vec<u32> = Vec::new();
    let mut scratch: Vec<u8> = Vec::new();
    for b in 0..buckets {
        let seg = &mut out[start[b] * elem_len..start[b + 1] * elem_len];
        let len = start[b + 1] - start[b];
        order.clear();
        order.extend(0..len as u32);
        order.shuffle(rng);
        scratch.clear();
        scratch.extend_from_slice(seg);
        for (dst, &src) in seg.chunks_exact_mut(elem_len).zip(&order) {
            let src = src as usize * elem_len;
            dst.copy_from_slice(&scratch[src..src + elem_len]);
        }
    }
    *data = out;
}

/// The mask that keeps the low `len` bytes of a `u128`: a block's tag of `len` bytes is
/// `block.0 & tag_mask(len)` (blocks encode little-endian, as [`tag_from_bytes`] reads).
pub(crate) fn tag_mask(len: usize) -> u128 {
    if len >= 16 {
        u128::MAX
    } else {
        (1u128 << (8 * len)) - 1
    }
}

/// Bytes of a comparison tag of λ + ⌈log2(n1·n2)⌉ bits ([`crate::params::tag_bytes`]), or
/// `InvalidParam` if that exceeds the 16 bytes the protocols store.
pub(crate) fn tag_len(lambda: u32, n1: u64, n2: u64) -> Result<usize> {
    let len = crate::params::tag_bytes(lambda, n1, n2);
    check_tag_len(len)?;
    Ok(len)
}

/// Checks that a tag of `len` bytes fits the 16 bytes the protocols store.
pub(crate) fn check_tag_len(len: usize) -> Result<()> {
    if len > 16 {
        return Err(Error::InvalidParam {
            field: "lambda",
            reason: format!(
                "λ + log2(n1·n2) needs {len}-byte tags; at most 16 bytes (128 bits) are supported"
            ),
        });
    }
    Ok(())
}

/// An open-addressing table from comparison tags to one `u32` value each (an own item),
/// for the receiver's matching step.
///
/// Tags are pseudorandom, so their low bits index the table directly (no hashing). A slot
/// holds bits 0..96 of the tag and the value: 16 bytes, four slots per cache line. Longer tags
/// (λ + log2(n1·n2) > 96) are confirmed by the caller. Linear probing at load ≤ 1/2. Only the
/// receiver's own (pseudorandom) tags are inserted, so a peer's tags cannot lengthen the probe
/// sequences: a lookup stops at the first empty slot.
///
/// A lookup at 2^20 entries is a cache and TLB miss; [`TagTable::prefetch`] lets a caller
/// overlap the misses of the next few lookups with the current one.
pub(crate) struct TagTable {
    slots: Vec<TagSlot>,
    mask: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct TagSlot {
    lo: u64,
    hi: u32,
    /// `EMPTY` or the value.
    value: u32,
}

impl TagTable {
    const EMPTY: u32 = u32::MAX;

    /// Lookups [`TagTable::find_all`] keeps in flight.
    const AHEAD: usize = 16;

    /// A table for at most `capacity` entries.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let size = (2 * capacity.max(1)).next_power_of_two();
        TagTable {
            slots: vec![
                TagSlot {
                    lo: 0,
                    hi: 0,
                    value: Self::EMPTY,
                };
                size
            ],
            mask: size - 1,
        }
    }

    fn split(tag: u128) -> (u64, u32) {
        (tag as u64, (tag >> 64) as u32)
    }

    /// Inserts `tag` (at most 16 bytes, read as by [`tag_from_bytes`]) with `value`
    /// (`< u32::MAX`). Equal tags are kept side by side; lookups see all of them.
    pub(crate) fn insert(&mut self, tag: u128, value: u32) {
        debug_assert!(value != Self::EMPTY);
        let (lo, hi) = Self::split(tag);
        let mut i = lo as usize & self.mask;
        while self.slots[i].value != Self::EMPTY {
            i = (i + 1) & self.mask;
        }
        self.slots[i] = TagSlot { lo, hi, value };
    }

    /// Inserts every `(tag, value)` of `entries` as [`insert`](Self::insert) does, with the
    /// slots of the next insertions prefetched.
    pub(crate) fn insert_all(&mut self, entries: &[(u128, u32)]) {
        for &(tag, _) in entries.iter().take(Self::AHEAD) {
            self.prefetch(tag);
        }
        for (k, &(tag, value)) in entries.iter().enumerate() {
            if let Some(&(next, _)) = entries.get(k + Self::AHEAD) {
                self.prefetch(next);
            }
            self.insert(tag, value);
        }
    }

    /// Asks the CPU to load the slot where a lookup of `tag` starts.
    #[inline]
    pub(crate) fn prefetch(&self, tag: u128) {
        blindjoin_core::cache::prefetch(&self.slots[tag as u64 as usize & self.mask]);
    }

    /// The first value stored under a tag whose bits 0..96 are those of `tag` and for which
    /// `confirm(value)` holds (callers with longer tags compare the rest there).
    #[inline]
    pub(crate) fn find(&self, tag: u128, mut confirm: impl FnMut(u32) -> bool) -> Option<u32> {
        let (lo, hi) = Self::split(tag);
        let mut i = lo as usize & self.mask;
        loop {
            let s = self.slots[i];
            if s.value == Self::EMPTY {
                return None;
            }
            if s.lo == lo && s.hi == hi && confirm(s.value) {
                return Some(s.value);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Looks up every tag of `frame` (`tag_len` ≤ 16 bytes each) and calls `hit(value)` for
    /// each found, with the next lookups' slots prefetched.
    pub(crate) fn find_all(
        &self,
        frame: &[u8],
        tag_len: usize,
        mut confirm: impl FnMut(u32, u128) -> bool,
        mut hit: impl FnMut(u32),
    ) {
        let count = frame.len() / tag_len;
        let mask = tag_mask(tag_len);
        // Tag k read as one unaligned 16-byte load where the frame allows (no call to a
        // variable-length copy per tag).
        let tag = |k: usize| {
            let at = k * tag_len;
            match frame.get(at..at + 16) {
                Some(b) => {
                    let mut w = [0u8; 16];
                    w.copy_from_slice(b);
                    u128::from_le_bytes(w) & mask
                }
                None => tag_from_bytes(&frame[at..at + tag_len]),
            }
        };
        let mut ring = [0u128; Self::AHEAD];
        for (k, r) in ring.iter_mut().enumerate().take(count) {
            *r = tag(k);
            self.prefetch(*r);
        }
        for k in 0..count {
            let t = ring[k % Self::AHEAD];
            if k + Self::AHEAD < count {
                let next = tag(k + Self::AHEAD);
                ring[k % Self::AHEAD] = next;
                self.prefetch(next);
            }
            if let Some(v) = self.find(t, |v| confirm(v, t)) {
                hit(v);
            }
        }
    }
}

/// Sorted indices of `tags` (one per own item, `tag_len` bytes each) that occur in `peer`.
pub(crate) fn match_tags(tags: &[u8], tag_len: usize, peer: &HashSet<u128>) -> Vec<usize> {
    tags.chunks_exact(tag_len)
        .enumerate()
        .filter(|(_, t)| peer.contains(&tag_from_bytes(t)))
        .map(|(i, _)| i)
        .collect()
}

/// Bytes of the peer's frames that may wait at once between a reader thread and the protocol
/// thread of [`pipelined`] (8 MiB): the reader stops reading while the queue is full, so the
/// peer's data waits in its own buffers, not in ours.
pub(crate) const QUEUE_BYTES: usize = 8 << 20;

/// Frames of `frame_len` bytes that fit [`QUEUE_BYTES`], at least 2.
pub(crate) fn queue_frames(frame_len: usize) -> usize {
    (QUEUE_BYTES / frame_len.max(1)).max(2)
}

/// Streams the frames of a bulk message into `queue` until the message is complete, `aborted`
/// is set or the consumer has stopped.
pub(crate) fn forward_bulk(
    rx: &mut dyn FrameReceiver,
    reader: &mut BulkReader,
    queue: &mpsc::SyncSender<Vec<u8>>,
    aborted: &AtomicBool,
) -> Result<()> {
    while !aborted.load(Ordering::Relaxed) {
        match reader.next_frame(rx)? {
            Some(frame) => {
                if queue.send(frame).is_err() {
                    // The consumer stopped; it reports why.
                    return Ok(());
                }
            }
            None => return Ok(()),
        }
    }
    Ok(())
}

/// What the protocol thread of [`pipelined`] hands its writer thread.
enum Outgoing {
    /// A frame of the named message.
    Frame(&'static str, Vec<u8>),
    /// Close the sending direction after the frames before.
    Close,
}

/// The sending half [`pipelined`] lends the protocol thread: frames go to the writer thread in
/// order, so a send never waits for the peer to read.
struct Outbox {
    queue: mpsc::Sender<Outgoing>,
    /// Set when a frame could not be queued because the writer had stopped (on an error of its
    /// own, which is then the one reported).
    writer_gone: bool,
}

impl FrameSender for Outbox {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.queue
            .send(Outgoing::Frame(msg, frame.to_vec()))
            .map_err(|_| {
                self.writer_gone = true;
                Error::PeerClosed { during: msg }
            })
    }

    fn close(&mut self) {
        // A writer that has stopped has closed the direction already.
        let _ = self.queue.send(Outgoing::Close);
    }
}

/// The writer thread: sends the queued frames in order until the queue ends or asks to close.
fn write_queued(tx: &mut dyn FrameSender, queue: mpsc::Receiver<Outgoing>) -> Result<()> {
    for out in queue {
        match out {
            Outgoing::Frame(msg, frame) => {
                if let Err(e) = tx.send(msg, &frame) {
                    tx.close();
                    return Err(e);
                }
            }
            Outgoing::Close => {
                tx.close();
                break;
            }
        }
    }
    Ok(())
}

/// Runs `reader` on the receiving half of `ch` in its own thread while `main` computes, so that
/// neither party stalls on a full socket buffer while the other computes.
///
/// `reader` forwards the peer's frames into a queue of at most `queue` frames (the sending end
/// it gets), which `main` drains (the receiving end it gets, dropped when `main` returns, so a
/// reader blocked on a full queue then stops). `main` sends through an outbox: a third thread
/// writes its frames to the sending half in order, so `main` never waits for the peer to read.
/// So no cycle of waits can form when both parties stream at once: a reader blocked on a full
/// queue waits for its own `main`, which waits for nothing but that queue, and a writer blocked
/// on the transport waits for the peer's reader, which waits only for the peer's `main` in turn.
/// The writer's queue holds what `main` sent and the peer has not read yet: our own messages,
/// whose size follows our own set size or the data received, never the peer's announcement.
///
/// If `main` fails, the reader is asked to stop at its next frame, and the writer sends what
/// `main` queued and then closes the sending direction, so that the peer stops waiting. When
/// several fail, the reader's error is returned (the cause: a closed or misbehaving peer), then
/// `main`'s, then the writer's; but if `main` failed only because the writer had stopped, the
/// writer's.
pub(crate) fn pipelined<C, R, M>(
    ch: &mut C,
    queue: usize,
    reader: impl FnOnce(&mut dyn FrameReceiver, mpsc::SyncSender<Vec<u8>>, &AtomicBool) -> Result<R>
    + Send,
    main: impl FnOnce(&mut dyn FrameSender, mpsc::Receiver<Vec<u8>>) -> Result<M>,
) -> Result<(R, M)>
where
    C: Channel + ?Sized,
    R: Send,
{
    let (mut rx, mut tx) = ch.split();
    let aborted = AtomicBool::new(false);
    let (frames_tx, frames_rx) = mpsc::sync_channel(queue.max(1));
    let (out_tx, out_rx) = mpsc::channel();
    std::thread::scope(|s| {
        let read = s.spawn(|| reader(&mut *rx, frames_tx, &aborted));
        let write = s.spawn(move || write_queued(&mut *tx, out_rx));
        let mut outbox = Outbox {
            queue: out_tx,
            writer_gone: false,
        };
        let m = main(&mut outbox, frames_rx);
        if m.is_err() {
            // Stop our reader at its next frame, and tell the peer we are gone (after what we
            // sent) so that its reader (and then ours) stops waiting.
            aborted.store(true, Ordering::Relaxed);
            outbox.close();
        }
        let writer_gone = outbox.writer_gone;
        drop(outbox);
        let w = match write.join() {
            Ok(w) => w,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let r = match read.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match (r, w, m) {
            (Ok(r), Ok(()), Ok(m)) => Ok((r, m)),
            (Err(e), _, _) => Err(e),
            (Ok(_), Err(e), Err(_)) if writer_gone => Err(e),
            (Ok(_), _, Err(e)) | (Ok(_), Err(e), Ok(_)) => Err(e),
        }
    })
}

/// Runs `main` with the receiving half of `ch` and an outbox for the sending half: a writer
/// thread sends `main`'s frames in order, so a send never waits for the peer to read, while
/// `main` receives on the calling thread (and all computation stays on it, in the caller's
/// thread pool). For a protocol whose parties both send a message and then read the peer's,
/// at once (a lockstep of large frames), whatever the transport buffers: a writer blocked on
/// the transport waits for the peer's `main`, which waits only for our writer.
///
/// If `main` fails, the writer sends what `main` queued and then closes the sending direction,
/// so that the peer stops waiting. `main`'s error is returned, or the writer's if `main` failed
/// only because the writer had stopped.
pub(crate) fn with_outbox<C, M>(
    ch: &mut C,
    main: impl FnOnce(&mut dyn FrameReceiver, &mut dyn FrameSender) -> Result<M>,
) -> Result<M>
where
    C: Channel + ?Sized,
{
    let (mut rx, mut tx) = ch.split();
    let (out_tx, out_rx) = mpsc::channel();
    std::thread::scope(|s| {
        let write = s.spawn(move || write_queued(&mut *tx, out_rx));
        let mut outbox = Outbox {
            queue: out_tx,
            writer_gone: false,
        };
        let m = main(&mut *rx, &mut outbox);
        if m.is_err() {
            outbox.close();
        }
        let writer_gone = outbox.writer_gone;
        drop(outbox);
        let w = match write.join() {
            Ok(w) => w,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match (w, m) {
            (Err(e), Err(_)) if writer_gone => Err(e),
            (_, Err(e)) | (Err(e), Ok(_)) => Err(e),
            (Ok(()), Ok(m)) => Ok(m),
        }
    })
}

/// The positions of the `true` entries of `found`, in increasing order: the receiver's
/// intersection indices from its per-item flags.
pub(crate) fn found_indices(found: &[bool]) -> Vec<usize> {
    found
        .iter()
        .enumerate()
        .filter(|(_, f)| **f)
        .map(|(i, _)| i)
        .collect()
}

/// The error `main` reports when the reader's queue closed early (the reader's own error wins).
pub(crate) fn queue_closed(what: &'static str) -> Error {
    Error::PeerClosed { during: what }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// One direction of a transport that holds at most `cap` frames in flight, like a socket
    /// with full buffers: a send waits until the peer has read.
    struct Pipe {
        tx: Option<mpsc::SyncSender<Vec<u8>>>,
    }

    struct Tap {
        rx: mpsc::Receiver<Vec<u8>>,
    }

    impl FrameSender for Pipe {
        fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
            let tx = self.tx.as_ref().ok_or(Error::PeerClosed { during: msg })?;
            tx.send(frame.to_vec())
                .map_err(|_| Error::PeerClosed { during: msg })
        }

        fn close(&mut self) {
            self.tx = None;
        }
    }

    impl FrameReceiver for Tap {
        fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
            let frame = self
                .rx
                .recv()
                .map_err(|_| Error::PeerClosed { during: what })?;
            blindjoin_core::channel::check_frame_len(what, frame.len() as u64, max_len)?;
            Ok(frame)
        }
    }

    struct End {
        tap: Tap,
        pipe: Pipe,
    }

    impl FrameSender for End {
        fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
            self.pipe.send(msg, frame)
        }

        fn close(&mut self) {
            self.pipe.close();
        }
    }

    impl FrameReceiver for End {
        fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
            self.tap.recv(what, max_len)
        }
    }

    impl Channel for End {
        fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
            (Box::new(&mut self.tap), Box::new(&mut self.pipe))
        }
    }

    /// Two ends joined by pipes of `cap` frames each way.
    fn pipes(cap: usize) -> (End, End) {
        let (a_tx, b_rx) = mpsc::sync_channel(cap);
        let (b_tx, a_rx) = mpsc::sync_channel(cap);
        let end = |tx, rx| End {
            tap: Tap { rx },
            pipe: Pipe { tx: Some(tx) },
        };
        (end(a_tx, a_rx), end(b_tx, b_rx))
    }

    /// The pattern of `ecdh`: each party sends all its frames before it processes the peer's,
    /// over a transport and queues far smaller than the data. Both finish: the bounded queue
    /// stops only the reader, and the sends do not wait for the peer.
    #[test]
    fn pipelined_streams_both_ways_through_bounded_queues() {
        const FRAMES: usize = 200;
        let party = |ch: &mut End, tag: u8| {
            pipelined(
                ch,
                2,
                |rx, queue, aborted| {
                    let mut reader = BulkReader::new("frames", 4, FRAMES as u64);
                    forward_bulk(rx, &mut reader, &queue, aborted)
                },
                |tx, queue| {
                    for i in 0..FRAMES {
                        tx.send("frames", &[tag, i as u8, 0, 0])?;
                    }
                    let mut got = Vec::new();
                    for _ in 0..FRAMES {
                        got.push(queue.recv().map_err(|_| queue_closed("frames"))?);
                    }
                    Ok(got)
                },
            )
        };
        let (mut a, mut b) = pipes(1);
        let (ra, rb) = std::thread::scope(|s| {
            let hb = s.spawn(|| party(&mut b, 2));
            (party(&mut a, 1), hb.join().unwrap())
        });
        let (_, got_a) = ra.unwrap();
        let (_, got_b) = rb.unwrap();
        for (i, (x, y)) in got_a.iter().zip(&got_b).enumerate() {
            assert_eq!(x, &[2, i as u8, 0, 0]);
            assert_eq!(y, &[1, i as u8, 0, 0]);
        }
        assert_eq!((got_a.len(), got_b.len()), (FRAMES, FRAMES));
    }

    /// A failing `main` closes the sending direction after what it sent, and the reader's
    /// error (the peer's hang-up) does not hide `main`'s own when the reader succeeded.
    #[test]
    fn pipelined_reports_mains_error_and_closes_after_its_frames() {
        let (mut a, mut b) = pipes(4);
        let r = pipelined(
            &mut a,
            2,
            |_, _, _| Ok(()),
            |tx, _| -> Result<()> {
                tx.send("frames", &[1])?;
                Err(Error::malformed("frames", "local"))
            },
        );
        match r {
            Err(Error::Malformed { .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(b.recv("frames", 1).unwrap(), vec![1]);
        match b.recv("frames", 1) {
            Err(Error::PeerClosed { .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tags_read_little_endian_and_match_exactly() {
        assert_eq!(tag_from_bytes(&[1, 2]), 0x0201);
        let peer: HashSet<u128> = [0x0201, 0x0403].into_iter().collect();
        let own = [1, 2, 9, 9, 3, 4, 1, 2];
        assert_eq!(match_tags(&own, 2, &peer), vec![0, 2, 3]);
        assert!(check_tag_len(16).is_ok());
        assert!(check_tag_len(17).is_err());
    }

    #[test]
    fn shuffle_elements_permutes_uniformly() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        // Many buckets (3 MiB of 3-byte elements): a permutation of the input.
        let n = 1 << 20;
        let mut data: Vec<u8> = (0..n as u32)
            .flat_map(|i| i.to_le_bytes()[..3].to_vec())
            .collect();
        let before = data.clone();
        shuffle_elements(&mut data, 3, &mut rng);
        assert_ne!(data, before);
        let mut a: Vec<&[u8]> = data.chunks_exact(3).collect();
        let mut b: Vec<&[u8]> = before.chunks_exact(3).collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        // Uniformity, with one bucket and with four: each of the 6 orders of 3 elements in
        // about 1/6 of 60000 runs (10000 ± 6 standard deviations).
        for bucket_bytes in [1 << 10, 1] {
            let mut counts = std::collections::HashMap::new();
            for _ in 0..60_000 {
                let mut d = vec![0u8, 1, 2];
                shuffle_elements_in(&mut d, 1, bucket_bytes, &mut rng);
                *counts.entry(d).or_insert(0u32) += 1;
            }
            assert_eq!(counts.len(), 6);
            assert!(
                counts.values().all(|&c| (9_450..10_550).contains(&c)),
                "{bucket_bytes}: {counts:?}"
            );
        }
        // Empty input and empty elements are left alone.
        let mut e = Vec::new();
        shuffle_elements(&mut e, 4, &mut rng);
        assert!(e.is_empty());
    }

    #[test]
    fn put_tag_writes_exactly_the_low_bytes() {
        let tag = 0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100u128;
        for len in 0..=16 {
            let mut dst = vec![0xaau8; len + 2];
            put_tag(&mut dst[1..=len], tag);
            assert_eq!(dst[0], 0xaa);
            assert_eq!(dst[len + 1], 0xaa);
            assert_eq!(&dst[1..=len], &tag.to_le_bytes()[..len], "len {len}");
        }
    }

    #[test]
    fn tag_table_confirms_whole_tags_and_sees_equal_keys() {
        let mut t = TagTable::with_capacity(4);
        // Two tags with equal low 64 bits and one that shares the slot index only.
        let (a, b, c) = (5u128 | 1 << 100, 5u128 | 2 << 100, 5u128 + (1 << 40));
        t.insert(a, 0);
        t.insert(b, 1);
        t.insert(c, 2);
        let tags = [a, b, c];
        for (v, &tag) in tags.iter().enumerate() {
            assert_eq!(t.find(tag, |x| tags[x as usize] == tag), Some(v as u32));
        }
        assert_eq!(
            t.find(5 | 3 << 100, |x| tags[x as usize] == 5 | 3 << 100),
            None
        );
        // Bits 64..96 are compared by the table itself.
        assert_eq!(t.find(5 | 1 << 64, |_| true), None);
        assert_eq!(t.find(6, |_| true), None);
        // A full table of random-looking keys finds every key and nothing else.
        let n = 1000u32;
        let key = |i: u32| u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        let mut t = TagTable::with_capacity(n as usize);
        let entries: Vec<(u128, u32)> = (0..n).map(|i| (key(i), i)).collect();
        t.insert_all(&entries);
        for i in 0..n {
            assert_eq!(t.find(key(i), |v| key(v) == key(i)), Some(i));
            assert_eq!(t.find(key(i + n), |v| key(v) == key(i + n)), None);
        }
        // The batched lookup over 9-byte tags finds the same.
        let frame: Vec<u8> = (0..2 * n)
            .flat_map(|i| key(i).to_le_bytes()[..9].to_vec())
            .collect();
        let mask = tag_mask(9);
        let mut t = TagTable::with_capacity(n as usize);
        for i in 0..n {
            t.insert(key(i) & mask, i);
        }
        let mut hits = Vec::new();
        t.find_all(&frame, 9, |v, tag| key(v) & mask == tag, |v| hits.push(v));
        assert_eq!(hits, (0..n).collect::<Vec<_>>());
    }
}
