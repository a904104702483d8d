//! Yao's garbled circuits as a [`Backend`]: half-gates with free-XOR and point-and-permute,
//! streamed to the evaluator as they are garbled.
//!
//! **Papers.** Pinkas, Schneider, Zohner, *Scalable Private Set Intersection Based on OT
//! Extension* (USENIX Security 2014), §7.1: circuit-based PSI evaluated with Yao's protocol
//! (garbled row reduction, point-and-permute, free-XOR, pipelining). The AND gates here follow
//! Zahur, Rosulek, Evans, *Two Halves Make a Whole* (EUROCRYPT 2015), §3 and Fig. 2 (half-gates:
//! a generator half-gate and an evaluator half-gate, two ciphertexts per AND gate); XOR and NOT
//! are free by Kolesnikov, Schneider, *Improved Garbled Circuit: Free XOR Gates and
//! Applications* (ICALP 2008); the select bits are point-and-permute (Beaver, Micali, Rogaway,
//! STOC 1990). The hash is H(x, i) = TCCR(i, x) = π(π(x) ⊕ i) ⊕ π(x) with π fixed-key AES
//! (Guo, Katz, Wang, Yu, S&P 2020, §7.4: a tweakable circular-correlation-robust hash, the
//! property of H that they identify as what half-gates needs), [`FixedKeyAes::tccr_hash`],
//! keyed per session from the session id. The evaluator's input labels come from correlated OT extension (IKNP
//! with the ALSZ optimisations, `blindjoin_ot::ext::iknp`) whose correlation is the garbler's
//! global offset Δ.
//!
//! **Security model.** Semi-honest. The garbler is PSI's sender, the evaluator its receiver;
//! only the evaluator learns outputs, and only those the circuit reveals ([`Evaluator::reveal`]).
//! The garbler learns nothing from the run (it receives only OT-extension messages). A
//! malicious garbler can make the evaluator compute a wrong function; it cannot make the
//! evaluator panic or allocate without bound, and the evaluator waits for it no longer than the
//! channel's idle timeout: every frame is read with a maximum length known from public sizes,
//! and the table stream is checked for missing and surplus bytes.
//!
//! **Labels.** Every wire has a zero-label W⁰ and a one-label W¹ = W⁰ ⊕ Δ, where Δ is the
//! garbler's random offset with lsb(Δ) = 1, so lsb(W⁰) (the permute bit) is the public select
//! bit's mask. A [`Labels`] holds one label per lane: the zero-labels at the garbler, the active
//! labels W⁰ ⊕ v·Δ at the evaluator.
//!
//! - XOR: both parties XOR the labels (free-XOR). NOT: the garbler XORs Δ into the zero-label;
//!   the evaluator keeps its active label.
//! - Constants: at setup the garbler draws one random label Z and sends it. Constant v is the
//!   zero-label Z ⊕ v·Δ at the garbler and the active label Z at the evaluator (both values have
//!   the active label Z, so Z reveals nothing the constant does not).
//! - AND (ZRE15 Fig. 2): gate number j (a counter over the whole circuit, in the order gates
//!   are called: pair by pair, lane by lane) uses the tweaks 2j and 2j+1. With pa = lsb(A⁰),
//!   pb = lsb(B⁰):
//!
//!   ```text
//!   T_G = H(A⁰, 2j) ⊕ H(A¹, 2j) ⊕ pb·Δ          W_G⁰ = H(A⁰, 2j) ⊕ pa·T_G
//!   T_E = H(B⁰, 2j+1) ⊕ H(B¹, 2j+1) ⊕ A⁰        W_E⁰ = H(B⁰, 2j+1) ⊕ pb·(T_E ⊕ A⁰)
//!   W⁰ = W_G⁰ ⊕ W_E⁰;  the table of gate j is T_G ‖ T_E (32 bytes)
//!   ```
//!
//!   and the evaluator, with sa = lsb(A), sb = lsb(B), computes
//!   W = H(A, 2j) ⊕ sa·T_G ⊕ H(B, 2j+1) ⊕ sb·(T_E ⊕ A).
//!   Both hash the labels of [`GATE_CHUNK`] gates per call, so AES-NI/VAES pipelines them
//!   (the garbler 4 hashes = 8 AES blocks per gate, the evaluator 2 hashes = 4 AES blocks).
//!   [`Backend::and_vector`] is ordinary AND gates, item by item, then `v[j]` by `v[j]`, lane by
//!   lane.
//! - Inputs of the garbler ([`Garbler::input_own`]): random zero-labels from a PRG seeded by
//!   the garbler's RNG; it sends the active labels W⁰ ⊕ x·Δ. Inputs of the evaluator
//!   ([`Evaluator::input_own`]): one correlated OT per bit with correlation Δ: the garbler's
//!   output x⁰ is the zero-label, the evaluator's x⁰ ⊕ r·Δ the active label.
//! - Outputs ([`Garbler::reveal`]): the garbler sends the decoding bits lsb(W⁰); the evaluator
//!   outputs lsb(W) ⊕ lsb(W⁰).
//!
//! **Message flow** (G the garbler, E the evaluator; the order is that of the calls, which both
//! parties make in the same sequence):
//!
//! ```text
//! G → E: Z                                  (MSG_CONSTANT_LABEL, 16 bytes)
//! κ = 128 base OTs (E is the base-OT sender) and the IKNP setup
//! then, in the order the circuit calls them:
//! G → E: tables                             (MSG_TABLES, streamed: see Wire format)
//! G → E: the active labels of G's inputs    (MSG_GARBLER_LABELS, 16 bytes per bit)
//! E → G: IKNP u columns; G → E: IKNP y values (correlated OT, one per input bit of E)
//! G → E: decoding bits                      (MSG_DECODING_BITS, ⌈bits/8⌉ bytes)
//! ```
//!
//! **Wire format.** Blocks travel as 16 little-endian bytes ([`Block::to_bytes`]). Gate j's
//! table is T_G ‖ T_E. The garbler appends tables to a buffer and sends it as one frame of
//! [`TABLE_FRAME_LEN`] bytes whenever it fills. A *segment* is the tables garbled between two
//! flush points; the garbler flushes before every other message it sends or receives (inputs,
//! OT, decoding bits) and in [`Garbler::finish`]. At a flush point where the segment is not
//! empty it sends the buffer as the segment's last frame, which is always shorter than
//! [`TABLE_FRAME_LEN`] (an empty frame when the segment filled its frames exactly); an empty
//! segment sends nothing. So a table frame is full if and only if it is not the last of its
//! segment, and every frame holds whole tables (the frame length is a multiple of 32). Labels and
//! decoding bits go in frames of at most [`LABELS_PER_FRAME`] labels and [`BITS_BYTES_PER_FRAME`]
//! bytes. Decoding bits are packed in the order of the revealed word (bit p of the word in lane i
//! is bit p·lanes + i), bit k at byte k/8, position k%8, with zero padding.
//!
//! **Streaming.** The evaluator reads a table frame only when it needs table bytes, so garbling
//! and evaluation overlap through the socket, and each party holds at most one frame of tables
//! plus the live wires, whatever the size of the circuit. At each flush point the evaluator
//! checks that it has consumed its segment's frames exactly: a frame that is empty or not a
//! whole number of tables, a frame longer than [`TABLE_FRAME_LEN`], more table bytes needed after
//! a segment's last frame (missing tables), or table bytes left over (surplus), is an error.
//! After an error either party closes its sending half, so the peer's next receive fails.
//!
//! **Cost.** 32 bytes (2κ bits) per AND gate, 16 bytes per garbler input bit, one correlated
//! OT (16 bytes of y value plus IKNP's 16 bytes of u column) per evaluator input bit, one bit
//! per output bit. [`Garbler::and_gates`] / [`Evaluator::and_gates`] count the AND gates, so a
//! caller can check the table bytes against 32 per gate.
//!
//! **Deviations from PSZ14 §7.1.** Half-gates instead of garbled row reduction: 2κ instead of
//! 3κ bits per AND gate, and the TCCR hash on fixed-key AES (GKWY20) instead of a hash function
//! modelled as a random oracle. Pipelining is over the frames of a socket (no separate
//! garbling thread): each party processes a layer [`GATE_CHUNK`] gates at a time. The OT
//! extension (IKNP) runs once at setup (its base OTs), whether or not the evaluator has inputs.
//! Labels are not wiped when a wire is dropped (Δ is, and the PRG that draws input labels).

use super::Backend;
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::{BulkReader, Channel, FrameReceiver, FrameSender, send_elements};
use blindjoin_core::handshake::session_block;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_ot::ext::iknp::{IknpReceiver, IknpSender};
use rand::CryptoRng;
use zeroize::{Zeroize, Zeroizing};

/// Name of the garbler's label Z of the constants (one 16-byte frame at setup).
pub const MSG_CONSTANT_LABEL: &str = "the garbler's label of the constants";
/// Name of the garbled tables (a stream of frames, see the module doc's *Wire format*).
pub const MSG_TABLES: &str = "the garbler's garbled tables";
/// Name of the active labels of the garbler's inputs.
pub const MSG_GARBLER_LABELS: &str = "the garbler's input labels";
/// Name of the decoding bits of revealed wires.
pub const MSG_DECODING_BITS: &str = "the garbler's output decoding bits";

/// Bytes of one AND gate's table: T_G ‖ T_E.
pub const TABLE_BYTES_PER_AND: usize = 32;
/// Bytes of a full frame of tables (1 MiB, 32768 tables).
pub const TABLE_FRAME_LEN: usize = 1 << 20;
/// Input labels per frame of [`MSG_GARBLER_LABELS`] (1 MiB).
pub const LABELS_PER_FRAME: usize = 1 << 16;
/// Bytes per frame of [`MSG_DECODING_BITS`] (1 MiB).
pub const BITS_BYTES_PER_FRAME: usize = 1 << 20;
/// AND gates hashed per batch (the garbler hashes 4, the evaluator 2 labels per gate).
pub const GATE_CHUNK: usize = 1024;
/// Largest number of AND gates of one run: the tweaks 2j + 1 stay below 2^63.
pub const MAX_AND_GATES: u64 = 1 << 62;

/// The label of the session's TCCR permutation (a key derived from the session id).
const AES_LABEL: &str = "psi/circuit/yao/tccr";

/// One wire per lane: the zero-labels (garbler) or the active labels (evaluator). `Debug` shows
/// only the number of lanes.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Labels(Vec<Block>);

impl Labels {
    /// The number of lanes.
    pub fn lanes(&self) -> usize {
        self.0.len()
    }
}

impl std::fmt::Debug for Labels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Labels")
            .field("lanes", &self.0.len())
            .finish_non_exhaustive()
    }
}

/// Closes the sending half of `ch` if `result` is an error, so that the peer stops waiting.
fn close_on_err<C: Channel + ?Sized, T>(ch: &mut C, result: Result<T>) -> Result<T> {
    if result.is_err() {
        FrameSender::close(ch);
    }
    result
}

/// The first gate number of a layer of `n` gates after `done` gates, checked against
/// [`MAX_AND_GATES`].
fn reserve_gates(done: u64, n: usize) -> Result<u64> {
    match done.checked_add(n as u64) {
        Some(end) if end <= MAX_AND_GATES => Ok(done),
        _ => Err(Error::InvalidParam {
            field: "AND gates",
            reason: format!("a circuit of more than {MAX_AND_GATES} AND gates"),
        }),
    }
}

/// The plain input bits of one word, plane by plane, as one flat vector (`bits[p][i]` at
/// `p·lanes + i`); every plane must have `lanes` bits.
fn flatten_planes(bits: &[Vec<bool>]) -> Result<(usize, Zeroizing<Vec<bool>>)> {
    let lanes = bits.first().map_or(0, Vec::len);
    if bits.iter().any(|p| p.len() != lanes) {
        return Err(Error::InvalidParam {
            field: "input bits",
            reason: "the planes of an input word have different numbers of lanes".into(),
        });
    }
    let flat: Vec<bool> = bits.iter().flatten().copied().collect();
    Ok((lanes, Zeroizing::new(flat)))
}

/// `lanes·planes`, or an error if it overflows.
fn word_len(lanes: usize, planes: usize) -> Result<usize> {
    lanes.checked_mul(planes).ok_or(Error::InvalidParam {
        field: "input word",
        reason: format!("{planes} planes of {lanes} lanes"),
    })
}

/// Splits a flat vector of `planes·lanes` labels into planes.
fn into_planes(flat: Vec<Block>, lanes: usize, planes: usize) -> Vec<Labels> {
    if lanes == 0 {
        return vec![Labels::default(); planes];
    }
    flat.chunks(lanes).map(|c| Labels(c.to_vec())).collect()
}

/// The pairs of ANDs that a layer of vector ANDs stands for, item by item, then `v[j]` by `v[j]`.
fn vector_pairs<'b>(items: &[(&'b Labels, &'b [Labels])]) -> Vec<(&'b Labels, &'b Labels)> {
    items
        .iter()
        .flat_map(|(s, v)| v.iter().map(move |x| (*s, x)))
        .collect()
}

/// Regroups the outputs of [`vector_pairs`] by item.
fn regroup(items: &[(&Labels, &[Labels])], outs: Vec<Labels>) -> Vec<Vec<Labels>> {
    let mut outs = outs.into_iter();
    items
        .iter()
        .map(|(_, v)| outs.by_ref().take(v.len()).collect())
        .collect()
}

/// A layer of AND gates walked chunk by chunk in gate order (pair by pair, lane by lane): the
/// inputs of the next chunk, and the outputs written back to their wires.
struct Layer<'p, 'l> {
    pairs: &'p [(&'l Labels, &'l Labels)],
    /// The next input: pair `src.0`, lane `src.1`.
    src: (usize, usize),
    /// The next output's pair.
    dst: usize,
    /// The lanes of each pair's output.
    lens: Vec<usize>,
    outs: Vec<Labels>,
}

impl<'p, 'l> Layer<'p, 'l> {
    /// The layer of `pairs` (each pair's lanes: the shorter operand's) and its number of gates.
    fn new(pairs: &'p [(&'l Labels, &'l Labels)]) -> (Self, usize) {
        debug_assert!(pairs.iter().all(|(a, b)| a.0.len() == b.0.len()));
        let lens: Vec<usize> = pairs
            .iter()
            .map(|(a, b)| a.0.len().min(b.0.len()))
            .collect();
        let outs = lens
            .iter()
            .map(|&n| Labels(Vec::with_capacity(n)))
            .collect();
        let n = lens.iter().sum();
        let layer = Layer {
            pairs,
            src: (0, 0),
            dst: 0,
            lens,
            outs,
        };
        (layer, n)
    }

    /// Calls `take(a, b)` on the input slices of the next chunk of at most `max` gates (one
    /// call per pair it spans); returns the chunk's number of gates (0 at the end).
    fn next_chunk(&mut self, max: usize, mut take: impl FnMut(&[Block], &[Block])) -> usize {
        let mut got = 0;
        while got < max {
            let Some((a, b)) = self.pairs.get(self.src.0) else {
                break;
            };
            let len = a.0.len().min(b.0.len());
            let from = self.src.1.min(len);
            let k = (max - got).min(len - from);
            take(&a.0[from..from + k], &b.0[from..from + k]);
            got += k;
            self.src.1 = from + k;
            if self.src.1 == len {
                self.src = (self.src.0 + 1, 0);
            }
        }
        got
    }

    /// Appends the outputs of a chunk to their wires, in gate order.
    fn put(&mut self, mut w: &[Block]) {
        while !w.is_empty() {
            let (Some(out), Some(&len)) = (self.outs.get_mut(self.dst), self.lens.get(self.dst))
            else {
                break;
            };
            let k = len.saturating_sub(out.0.len()).min(w.len());
            out.0.extend_from_slice(&w[..k]);
            w = &w[k..];
            if out.0.len() >= len {
                self.dst += 1;
            }
        }
    }
}

fn gather_blocks(a: &Labels, idx: &[usize]) -> Labels {
    debug_assert!(idx.iter().all(|&i| i < a.0.len()));
    Labels(
        idx.iter()
            .map(|&i| a.0.get(i).copied().unwrap_or(Block::ZERO))
            .collect(),
    )
}

fn concat_blocks(parts: &[&Labels]) -> Labels {
    Labels(parts.iter().flat_map(|p| p.0.iter().copied()).collect())
}

fn xor_blocks(a: &Labels, b: &Labels) -> Labels {
    debug_assert_eq!(a.0.len(), b.0.len());
    Labels(a.0.iter().zip(&b.0).map(|(x, y)| *x ^ *y).collect())
}

/// The garbler's table stream: full frames as the buffer fills, the rest at flush points.
struct TableWriter {
    /// A frame's worth of bytes, of which `len` are filled.
    buf: Vec<u8>,
    len: usize,
    /// Table bytes of the current segment (since the last flush point).
    segment: u64,
    /// Table bytes of the whole run.
    total: u64,
}

impl TableWriter {
    fn new() -> Self {
        TableWriter {
            buf: vec![0; TABLE_FRAME_LEN],
            len: 0,
            segment: 0,
            total: 0,
        }
    }

    /// Appends tables (`T_G, T_E` of each gate, in gate order), sending each frame that fills.
    fn write<C: FrameSender + ?Sized>(&mut self, ch: &mut C, mut tables: &[Block]) -> Result<()> {
        let bytes = 16 * tables.len() as u64;
        while !tables.is_empty() {
            let room = self.buf.get_mut(self.len..).unwrap_or_default();
            let k = (room.len() / 16).min(tables.len());
            for (d, t) in room.chunks_exact_mut(16).zip(&tables[..k]) {
                d.copy_from_slice(&t.to_bytes());
            }
            self.len += 16 * k;
            tables = &tables[k..];
            if self.len >= TABLE_FRAME_LEN {
                ch.send(MSG_TABLES, &self.buf)?;
                self.len = 0;
            }
        }
        self.segment += bytes;
        self.total += bytes;
        Ok(())
    }

    /// Ends the segment: sends its last (short, possibly empty) frame unless it is empty.
    fn flush<C: FrameSender + ?Sized>(&mut self, ch: &mut C) -> Result<()> {
        if self.segment > 0 {
            ch.send(MSG_TABLES, self.buf.get(..self.len).unwrap_or_default())?;
            self.len = 0;
            self.segment = 0;
        }
        Ok(())
    }
}

/// The evaluator's table stream: reads a frame when it needs table bytes.
struct TableReader {
    buf: Vec<u8>,
    pos: usize,
    /// Whether the current segment's last (short) frame has arrived.
    ended: bool,
    /// Table bytes of the current segment read so far.
    segment: u64,
    /// Table bytes of the whole run.
    total: u64,
}

impl TableReader {
    fn new() -> Self {
        TableReader {
            buf: Vec::new(),
            pos: 0,
            ended: false,
            segment: 0,
            total: 0,
        }
    }

    /// Fills `tables` with the next tables (`T_G, T_E` of each gate, in gate order), reading
    /// frames as needed.
    fn read<C: FrameReceiver + ?Sized>(&mut self, ch: &mut C, tables: &mut [Block]) -> Result<()> {
        let bytes = 16 * tables.len() as u64;
        let mut tables = tables;
        while !tables.is_empty() {
            if self.pos >= self.buf.len() {
                self.fetch(ch)?;
            }
            let have = self.buf.get(self.pos..).unwrap_or_default();
            let k = (have.len() / 16).min(tables.len());
            let (now, rest) = tables.split_at_mut(k);
            for (t, c) in now.iter_mut().zip(have.chunks_exact(16)) {
                *t = Block::from_slice(c).unwrap_or_default();
            }
            self.pos += 16 * k;
            tables = rest;
        }
        self.segment += bytes;
        self.total += bytes;
        Ok(())
    }

    /// Receives the next frame of the segment (the current one being consumed).
    fn fetch<C: FrameReceiver + ?Sized>(&mut self, ch: &mut C) -> Result<()> {
        if self.ended {
            return Err(Error::malformed(
                MSG_TABLES,
                format!(
                    "the tables ended after {} bytes, before the circuit's AND gates did",
                    self.segment
                ),
            ));
        }
        ch.recv_into(MSG_TABLES, TABLE_FRAME_LEN, &mut self.buf)?;
        self.pos = 0;
        let len = self.buf.len();
        if len == 0 || !len.is_multiple_of(TABLE_BYTES_PER_AND) {
            return Err(Error::malformed(
                MSG_TABLES,
                format!(
                    "a frame of {len} bytes where a non-empty whole number of \
                     {TABLE_BYTES_PER_AND}-byte tables is needed"
                ),
            ));
        }
        self.ended = len < TABLE_FRAME_LEN;
        Ok(())
    }

    /// Checks, at a flush point, that the segment's frames were consumed exactly (receiving the
    /// empty last frame of a segment that filled its frames).
    fn end_segment<C: FrameReceiver + ?Sized>(&mut self, ch: &mut C) -> Result<()> {
        if self.segment == 0 {
            return Ok(());
        }
        let left = self.buf.len() - self.pos.min(self.buf.len());
        if left > 0 {
            return Err(Error::malformed(
                MSG_TABLES,
                format!("{left} table bytes more than the circuit's AND gates need"),
            ));
        }
        if !self.ended {
            // The segment filled its frames exactly: its last frame is empty.
            ch.recv_into(MSG_TABLES, 0, &mut self.buf)?;
        }
        self.buf.clear();
        self.pos = 0;
        self.ended = false;
        self.segment = 0;
        Ok(())
    }
}

/// What a garbler or an evaluator did, as [`Garbler::finish`] / [`Evaluator::finish`] return it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct YaoStats {
    /// AND gates garbled (or evaluated).
    pub and_gates: u64,
    /// Bytes of garbled tables sent (or received), framing excluded: 32 per AND gate.
    pub table_bytes: u64,
}

/// The garbler (PSI's sender): holds Δ and the zero-labels, garbles AND gates and streams their
/// tables to the [`Evaluator`]. Δ and the PRG of its input labels are wiped on drop.
pub struct Garbler<'a, C: Channel + ?Sized> {
    ch: &'a mut C,
    delta: Block,
    constant: Block,
    aes: FixedKeyAes,
    prg: AesPrg,
    ot: IknpSender,
    stream: TableWriter,
    gates: u64,
    /// `[A⁰, A¹], [B⁰, B¹]` of a chunk of gates, hashed in place.
    hashes: Vec<[Block; 2]>,
    /// `A⁰` of a chunk of gates.
    a: Vec<Block>,
    /// `B⁰` of a chunk of gates.
    b: Vec<Block>,
    /// The output zero-labels of a chunk of gates.
    w: Vec<Block>,
    /// `T_G, T_E` of a chunk of gates.
    tables: Vec<Block>,
}

impl<C: Channel + ?Sized> Drop for Garbler<'_, C> {
    fn drop(&mut self) {
        self.delta.zeroize();
        self.hashes.zeroize();
        self.a.zeroize();
        self.b.zeroize();
        self.w.zeroize();
    }
}

impl<C: Channel + ?Sized> std::fmt::Debug for Garbler<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Garbler")
            .field("and_gates", &self.gates)
            .finish_non_exhaustive()
    }
}

impl<'a, C: Channel + ?Sized> Garbler<'a, C> {
    /// Draws Δ (lsb 1) and the constants' label Z from `rng`, sends Z, and sets up the OT
    /// extension for the evaluator's inputs (κ base OTs with `base_ot`, the garbler as their
    /// receiver and IKNP's sender). `sid` is the session id: it keys the TCCR hash and the OTs.
    pub fn new<B: BaseOtReceiver>(
        ch: &'a mut C,
        sid: &[u8; 32],
        base_ot: &mut B,
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let delta = Block(Block::random(rng).0 | 1);
        let mut prg = AesPrg::new(Block::random(rng));
        let constant = prg.next_block();
        let setup = ch
            .send(MSG_CONSTANT_LABEL, &constant.to_bytes())
            .and_then(|()| IknpSender::setup(base_ot, ch, sid, rng));
        let ot = close_on_err(ch, setup)?;
        Ok(Garbler {
            ch,
            delta,
            constant,
            aes: FixedKeyAes::new(session_block(sid, AES_LABEL)),
            prg,
            ot,
            stream: TableWriter::new(),
            gates: 0,
            hashes: Vec::with_capacity(2 * GATE_CHUNK),
            a: Vec::with_capacity(GATE_CHUNK),
            b: Vec::with_capacity(GATE_CHUNK),
            w: vec![Block::ZERO; GATE_CHUNK],
            tables: vec![Block::ZERO; 2 * GATE_CHUNK],
        })
    }

    /// AND gates garbled so far.
    pub fn and_gates(&self) -> u64 {
        self.gates
    }

    /// The garbler's own input word: `bits[p][i]` is bit p of lane i (every plane has the same
    /// number of lanes). Draws the zero-labels and sends the active labels
    /// ([`MSG_GARBLER_LABELS`], plane by plane); returns the zero-labels.
    pub fn input_own(&mut self, bits: &[Vec<bool>]) -> Result<Vec<Labels>> {
        let r = self.input_own_inner(bits);
        close_on_err(self.ch, r)
    }

    fn input_own_inner(&mut self, bits: &[Vec<bool>]) -> Result<Vec<Labels>> {
        self.stream.flush(self.ch)?;
        let (lanes, flat) = flatten_planes(bits)?;
        let mut zero = vec![Block::ZERO; flat.len()];
        self.prg.fill_blocks(&mut zero);
        let mut active = Zeroizing::new(Vec::with_capacity(16 * flat.len()));
        for (w, &x) in zero.iter().zip(flat.iter()) {
            active.extend_from_slice(&(*w ^ (Block::mask(x) & self.delta)).to_bytes());
        }
        send_elements(self.ch, MSG_GARBLER_LABELS, &active, 16, LABELS_PER_FRAME)?;
        Ok(into_planes(zero, lanes, bits.len()))
    }

    /// The evaluator's input word of `planes` planes of `lanes` lanes: one correlated OT per bit
    /// with correlation Δ, whose outputs are the zero-labels.
    pub fn input_peer(&mut self, lanes: usize, planes: usize) -> Result<Vec<Labels>> {
        let r = self.input_peer_inner(lanes, planes);
        close_on_err(self.ch, r)
    }

    fn input_peer_inner(&mut self, lanes: usize, planes: usize) -> Result<Vec<Labels>> {
        self.stream.flush(self.ch)?;
        let n = word_len(lanes, planes)?;
        let mut zero = vec![Block::ZERO; n];
        if n > 0 {
            self.ot.send_correlated(self.ch, self.delta, &mut zero)?;
        }
        Ok(into_planes(zero, lanes, planes))
    }

    /// Reveals `word` to the evaluator: sends the decoding bits lsb(W⁰) of every wire, plane by
    /// plane ([`MSG_DECODING_BITS`]). The garbler learns nothing.
    pub fn reveal(&mut self, word: &[Labels]) -> Result<()> {
        let r = self.reveal_inner(word);
        close_on_err(self.ch, r)
    }

    fn reveal_inner(&mut self, word: &[Labels]) -> Result<()> {
        self.stream.flush(self.ch)?;
        let n: usize = word.iter().map(Labels::lanes).sum();
        let mut packed = vec![0u8; n.div_ceil(8)];
        for (k, w) in word.iter().flat_map(|p| p.0.iter()).enumerate() {
            if let Some(b) = packed.get_mut(k / 8) {
                *b |= u8::from(w.lsb()) << (k % 8);
            }
        }
        send_elements(self.ch, MSG_DECODING_BITS, &packed, 1, BITS_BYTES_PER_FRAME)
    }

    /// Sends the tables not yet sent and returns the counts of the run.
    pub fn finish(mut self) -> Result<YaoStats> {
        let r = self.stream.flush(self.ch);
        close_on_err(self.ch, r)?;
        Ok(YaoStats {
            and_gates: self.gates,
            table_bytes: self.stream.total,
        })
    }

    fn and_inner(&mut self, pairs: &[(&Labels, &Labels)]) -> Result<Vec<Labels>> {
        let (mut layer, n) = Layer::new(pairs);
        let mut gate = reserve_gates(self.gates, n)?;
        let delta = self.delta;
        loop {
            let (a, b, hashes) = (&mut self.a, &mut self.b, &mut self.hashes);
            a.clear();
            b.clear();
            hashes.clear();
            let m = layer.next_chunk(GATE_CHUNK, |xa, xb| {
                a.extend_from_slice(xa);
                b.extend_from_slice(xb);
                for (x, y) in xa.iter().zip(xb) {
                    hashes.push([*x, *x ^ delta]);
                    hashes.push([*y, *y ^ delta]);
                }
            });
            if m == 0 {
                break;
            }
            // Pair 2k is hashed with tweak 2(gate + k), pair 2k + 1 with 2(gate + k) + 1.
            self.aes.tccr_hash_pairs(2 * gate, hashes);
            let w = &mut self.w[..m];
            let tables = &mut self.tables[..2 * m];
            for ((((a0, b0), h), w), t) in a
                .iter()
                .zip(b.iter())
                .zip(hashes.chunks_exact(2))
                .zip(w.iter_mut())
                .zip(tables.chunks_exact_mut(2))
            {
                let ([ha0, ha1], [hb0, hb1]) = (h[0], h[1]);
                let pa = Block::mask(a0.lsb());
                let pb = Block::mask(b0.lsb());
                let tg = ha0 ^ ha1 ^ (pb & delta);
                let te = hb0 ^ hb1 ^ *a0;
                let wg = ha0 ^ (pa & tg);
                let we = hb0 ^ (pb & (hb0 ^ hb1));
                *w = wg ^ we;
                t[0] = tg;
                t[1] = te;
            }
            self.stream.write(self.ch, tables)?;
            layer.put(w);
            gate += m as u64;
        }
        self.gates = gate;
        Ok(layer.outs)
    }
}

impl<C: Channel + ?Sized> Backend for Garbler<'_, C> {
    type Bits = Labels;

    fn lanes(&self, a: &Labels) -> usize {
        a.lanes()
    }

    fn xor(&mut self, a: &Labels, b: &Labels) -> Labels {
        xor_blocks(a, b)
    }

    fn not(&mut self, a: &Labels) -> Labels {
        Labels(a.0.iter().map(|x| *x ^ self.delta).collect())
    }

    fn constant(&mut self, value: bool, lanes: usize) -> Labels {
        Labels(vec![
            self.constant ^ (Block::mask(value) & self.delta);
            lanes
        ])
    }

    fn and(&mut self, pairs: &[(&Labels, &Labels)]) -> Result<Vec<Labels>> {
        let r = self.and_inner(pairs);
        close_on_err(self.ch, r)
    }

    fn and_vector(&mut self, items: &[(&Labels, &[Labels])]) -> Result<Vec<Vec<Labels>>> {
        let outs = self.and(&vector_pairs(items))?;
        Ok(regroup(items, outs))
    }

    fn gather(&mut self, a: &Labels, idx: &[usize]) -> Labels {
        gather_blocks(a, idx)
    }

    fn concat(&mut self, parts: &[&Labels]) -> Labels {
        concat_blocks(parts)
    }
}

/// The evaluator (PSI's receiver): holds the active labels, evaluates AND gates with the tables
/// it reads from the [`Garbler`]'s stream, and learns the revealed outputs.
pub struct Evaluator<'a, C: Channel + ?Sized> {
    ch: &'a mut C,
    constant: Block,
    aes: FixedKeyAes,
    ot: IknpReceiver,
    stream: TableReader,
    gates: u64,
    /// `A, B` of each gate of a chunk, flat.
    inputs: Vec<Block>,
    /// `H(A, 2j), H(B, 2j + 1)` of each gate of a chunk, flat.
    hashes: Vec<Block>,
    /// The output labels of a chunk of gates.
    w: Vec<Block>,
    /// `T_G, T_E` of each gate of a chunk, flat.
    tables: Vec<Block>,
}

impl<C: Channel + ?Sized> Drop for Evaluator<'_, C> {
    fn drop(&mut self) {
        self.inputs.zeroize();
        self.hashes.zeroize();
        self.w.zeroize();
    }
}

impl<C: Channel + ?Sized> std::fmt::Debug for Evaluator<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("and_gates", &self.gates)
            .finish_non_exhaustive()
    }
}

impl<'a, C: Channel + ?Sized> Evaluator<'a, C> {
    /// Receives the constants' label Z and sets up the OT extension for its inputs (κ base OTs
    /// with `base_ot`, the evaluator as their sender and IKNP's receiver). `sid` is the session
    /// id, the same as the garbler's.
    pub fn new<B: BaseOtSender>(
        ch: &'a mut C,
        sid: &[u8; 32],
        base_ot: &mut B,
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let setup = ch.recv(MSG_CONSTANT_LABEL, 16).and_then(|z| {
            let z = Block::from_slice(&z)
                .ok_or_else(|| Error::malformed(MSG_CONSTANT_LABEL, "not 16 bytes"))?;
            Ok((z, IknpReceiver::setup(base_ot, ch, sid, rng)?))
        });
        let (constant, ot) = close_on_err(ch, setup)?;
        Ok(Evaluator {
            ch,
            constant,
            aes: FixedKeyAes::new(session_block(sid, AES_LABEL)),
            ot,
            stream: TableReader::new(),
            gates: 0,
            inputs: Vec::with_capacity(2 * GATE_CHUNK),
            hashes: vec![Block::ZERO; 2 * GATE_CHUNK],
            w: vec![Block::ZERO; GATE_CHUNK],
            tables: vec![Block::ZERO; 2 * GATE_CHUNK],
        })
    }

    /// AND gates evaluated so far.
    pub fn and_gates(&self) -> u64 {
        self.gates
    }

    /// The garbler's input word of `planes` planes of `lanes` lanes: receives its active labels.
    pub fn input_peer(&mut self, lanes: usize, planes: usize) -> Result<Vec<Labels>> {
        let r = self.input_peer_inner(lanes, planes);
        close_on_err(self.ch, r)
    }

    fn input_peer_inner(&mut self, lanes: usize, planes: usize) -> Result<Vec<Labels>> {
        self.stream.end_segment(self.ch)?;
        let n = word_len(lanes, planes)?;
        let mut labels = Vec::with_capacity(n);
        let mut reader = BulkReader::new(MSG_GARBLER_LABELS, 16, n as u64);
        let mut frame = Vec::new();
        while reader.next_frame_into(self.ch, &mut frame)? {
            let (chunks, _) = frame.as_chunks::<16>();
            labels.extend(chunks.iter().map(|c| Block::from_bytes(*c)));
        }
        Ok(into_planes(labels, lanes, planes))
    }

    /// The evaluator's own input word: `bits[p][i]` is bit p of lane i (every plane has the
    /// same number of lanes). One correlated OT per bit gives its active label.
    pub fn input_own(&mut self, bits: &[Vec<bool>]) -> Result<Vec<Labels>> {
        let r = self.input_own_inner(bits);
        close_on_err(self.ch, r)
    }

    fn input_own_inner(&mut self, bits: &[Vec<bool>]) -> Result<Vec<Labels>> {
        self.stream.end_segment(self.ch)?;
        let (lanes, flat) = flatten_planes(bits)?;
        let mut active = vec![Block::ZERO; flat.len()];
        if !flat.is_empty() {
            self.ot.receive_correlated(self.ch, &flat, &mut active)?;
        }
        Ok(into_planes(active, lanes, bits.len()))
    }

    /// Learns `word`: receives its decoding bits and returns `out[p][i]` = lsb(W) ⊕ lsb(W⁰),
    /// the plain bit p of lane i.
    pub fn reveal(&mut self, word: &[Labels]) -> Result<Vec<Vec<bool>>> {
        let r = self.reveal_inner(word);
        close_on_err(self.ch, r)
    }

    fn reveal_inner(&mut self, word: &[Labels]) -> Result<Vec<Vec<bool>>> {
        self.stream.end_segment(self.ch)?;
        let n: usize = word.iter().map(Labels::lanes).sum();
        // Every frame has the length `send_elements` gives it: full frames, then the rest; a
        // shorter one is malformed, not the start of more.
        let total = n.div_ceil(8);
        let mut packed = Vec::with_capacity(total);
        while packed.len() < total {
            let want = (total - packed.len()).min(BITS_BYTES_PER_FRAME);
            let frame = self.ch.recv(MSG_DECODING_BITS, want)?;
            if frame.len() != want {
                return Err(Error::malformed(
                    MSG_DECODING_BITS,
                    format!("a frame of {} bytes, {want} expected", frame.len()),
                ));
            }
            packed.extend_from_slice(&frame);
        }
        if !n.is_multiple_of(8) && packed.last().is_some_and(|b| b >> (n % 8) != 0) {
            return Err(Error::malformed(
                MSG_DECODING_BITS,
                "the padding bits of the last byte are not zero",
            ));
        }
        let mut k = 0usize;
        let mut out = Vec::with_capacity(word.len());
        for plane in word {
            let mut bits = Vec::with_capacity(plane.lanes());
            for w in &plane.0 {
                let d = packed.get(k / 8).is_some_and(|b| (b >> (k % 8)) & 1 == 1);
                bits.push(w.lsb() ^ d);
                k += 1;
            }
            out.push(bits);
        }
        Ok(out)
    }

    /// Checks that the garbler's tables ended exactly where the circuit's AND gates did (no
    /// table bytes missing or left over) and returns the counts of the run.
    pub fn finish(mut self) -> Result<YaoStats> {
        let r = self.stream.end_segment(self.ch);
        close_on_err(self.ch, r)?;
        Ok(YaoStats {
            and_gates: self.gates,
            table_bytes: self.stream.total,
        })
    }

    fn and_inner(&mut self, pairs: &[(&Labels, &Labels)]) -> Result<Vec<Labels>> {
        let (mut layer, n) = Layer::new(pairs);
        let mut gate = reserve_gates(self.gates, n)?;
        loop {
            let inputs = &mut self.inputs;
            inputs.clear();
            let m = layer.next_chunk(GATE_CHUNK, |xa, xb| {
                for (x, y) in xa.iter().zip(xb) {
                    inputs.push(*x);
                    inputs.push(*y);
                }
            });
            if m == 0 {
                break;
            }
            let hashes = &mut self.hashes[..2 * m];
            // Block 2k is hashed with tweak 2(gate + k), block 2k + 1 with 2(gate + k) + 1.
            self.aes.tccr_hash_b2b(2 * gate, inputs, hashes);
            let tables = &mut self.tables[..2 * m];
            self.stream.read(self.ch, tables)?;
            let w = &mut self.w[..m];
            for (((ab, h), t), w) in inputs
                .chunks_exact(2)
                .zip(hashes.chunks_exact(2))
                .zip(tables.chunks_exact(2))
                .zip(w.iter_mut())
            {
                let (a, b) = (ab[0], ab[1]);
                let wg = h[0] ^ (Block::mask(a.lsb()) & t[0]);
                let we = h[1] ^ (Block::mask(b.lsb()) & (t[1] ^ a));
                *w = wg ^ we;
            }
            layer.put(w);
            gate += m as u64;
        }
        self.gates = gate;
        Ok(layer.outs)
    }
}

impl<C: Channel + ?Sized> Backend for Evaluator<'_, C> {
    type Bits = Labels;

    fn lanes(&self, a: &Labels) -> usize {
        a.lanes()
    }

    fn xor(&mut self, a: &Labels, b: &Labels) -> Labels {
        xor_blocks(a, b)
    }

    fn not(&mut self, a: &Labels) -> Labels {
        a.clone()
    }

    fn constant(&mut self, _value: bool, lanes: usize) -> Labels {
        Labels(vec![self.constant; lanes])
    }

    fn and(&mut self, pairs: &[(&Labels, &Labels)]) -> Result<Vec<Labels>> {
        let r = self.and_inner(pairs);
        close_on_err(self.ch, r)
    }

    fn and_vector(&mut self, items: &[(&Labels, &[Labels])]) -> Result<Vec<Vec<Labels>>> {
        let outs = self.and(&vector_pairs(items))?;
        Ok(regroup(items, outs))
    }

    fn gather(&mut self, a: &Labels, idx: &[usize]) -> Labels {
        gather_blocks(a, idx)
    }

    fn concat(&mut self, parts: &[&Labels]) -> Labels {
        concat_blocks(parts)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_core::channel::memory::MemoryChannel;
    use blindjoin_core::channel::metered::Metered;
    use blindjoin_ot::base::ideal::{IdealBaseOtReceiver, IdealBaseOtSender};
    use blindjoin_testkit::{rng, run_two_party};
    use rand::{Rng, RngCore};

    const SID: [u8; 32] = [7; 32];

    /// The two revealed words of a [`Plan`], plane by plane.
    type Revealed = (Vec<Vec<bool>>, Vec<Vec<bool>>);

    /// A rewrite of one received table frame.
    type Edit = fn(&mut Vec<u8>);

    /// The circuit in the clear, counting AND gates.
    #[derive(Default)]
    struct Clear {
        ands: u64,
    }

    impl Backend for Clear {
        type Bits = Vec<bool>;

        fn lanes(&self, a: &Vec<bool>) -> usize {
            a.len()
        }
        fn xor(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Vec<bool> {
            a.iter().zip(b).map(|(x, y)| x ^ y).collect()
        }
        fn not(&mut self, a: &Vec<bool>) -> Vec<bool> {
            a.iter().map(|x| !x).collect()
        }
        fn constant(&mut self, value: bool, lanes: usize) -> Vec<bool> {
            vec![value; lanes]
        }
        fn and(&mut self, pairs: &[(&Vec<bool>, &Vec<bool>)]) -> Result<Vec<Vec<bool>>> {
            Ok(pairs
                .iter()
                .map(|(a, b)| {
                    self.ands += a.len() as u64;
                    a.iter().zip(b.iter()).map(|(x, y)| x & y).collect()
                })
                .collect())
        }
        fn and_vector(
            &mut self,
            items: &[(&Vec<bool>, &[Vec<bool>])],
        ) -> Result<Vec<Vec<Vec<bool>>>> {
            Ok(items
                .iter()
                .map(|(s, v)| {
                    v.iter()
                        .map(|x| {
                            self.ands += x.len() as u64;
                            s.iter().zip(x).map(|(a, b)| a & b).collect()
                        })
                        .collect()
                })
                .collect())
        }
        fn gather(&mut self, a: &Vec<bool>, idx: &[usize]) -> Vec<bool> {
            idx.iter().map(|&i| a[i]).collect()
        }
        fn concat(&mut self, parts: &[&Vec<bool>]) -> Vec<bool> {
            parts.iter().flat_map(|p| p.iter().copied()).collect()
        }
    }

    /// A random layered circuit over `pool` (wires of `lanes` lanes each), its structure drawn
    /// from `seed`; returns the wires left in the pool.
    fn random_circuit<B: Backend>(
        b: &mut B,
        mut pool: Vec<B::Bits>,
        lanes: usize,
        seed: u64,
        layers: usize,
    ) -> Result<Vec<B::Bits>> {
        let mut r = rng(seed);
        for _ in 0..layers {
            let n = pool.len();
            let pick = |r: &mut rand_chacha::ChaCha20Rng| r.random_range(0..n);
            let new: Vec<B::Bits> = match r.random_range(0..7) {
                0 => vec![b.xor(&pool[pick(&mut r)], &pool[pick(&mut r)])],
                1 => vec![b.not(&pool[pick(&mut r)])],
                2 => {
                    let c = b.constant(r.random(), lanes);
                    let x = &pool[pick(&mut r)];
                    let and = b.and(&[(&c, x)])?;
                    vec![b.xor(&c, x), and.into_iter().next().unwrap()]
                }
                3 => {
                    let k = r.random_range(1..5);
                    let idx: Vec<(usize, usize)> =
                        (0..k).map(|_| (pick(&mut r), pick(&mut r))).collect();
                    let pairs: Vec<_> = idx.iter().map(|&(i, j)| (&pool[i], &pool[j])).collect();
                    b.and(&pairs)?
                }
                4 => {
                    let k = r.random_range(1..4);
                    let vs: Vec<(usize, Vec<B::Bits>)> = (0..k)
                        .map(|_| {
                            let s = pick(&mut r);
                            let len = r.random_range(1..4);
                            let v = (0..len)
                                .map(|_| b.xor(&pool[pick(&mut r)], &pool[pick(&mut r)]))
                                .collect();
                            (s, v)
                        })
                        .collect();
                    let items: Vec<_> = vs.iter().map(|(s, v)| (&pool[*s], v.as_slice())).collect();
                    b.and_vector(&items)?.into_iter().flatten().collect()
                }
                5 => {
                    let idx: Vec<usize> = (0..lanes).map(|_| r.random_range(0..lanes)).collect();
                    vec![b.gather(&pool[pick(&mut r)], &idx)]
                }
                _ => {
                    let c = b.concat(&[&pool[pick(&mut r)], &pool[pick(&mut r)]]);
                    let idx: Vec<usize> =
                        (0..lanes).map(|_| r.random_range(0..2 * lanes)).collect();
                    vec![b.gather(&c, &idx)]
                }
            };
            pool.extend(new);
            while pool.len() > 12 {
                let i = r.random_range(0..pool.len());
                pool.swap_remove(i);
            }
        }
        Ok(pool)
    }

    fn random_bits(seed: u64, planes: usize, lanes: usize) -> Vec<Vec<bool>> {
        let mut r = rng(seed);
        (0..planes)
            .map(|_| (0..lanes).map(|_| r.next_u32() & 1 == 1).collect())
            .collect()
    }

    /// The plan of one test run: inputs of both parties, a circuit, a reveal, more evaluator
    /// inputs, a second circuit on the revealed wires and the new inputs, a second reveal.
    struct Plan {
        lanes: usize,
        layers: usize,
        g_bits: Vec<Vec<bool>>,
        e_bits: Vec<Vec<bool>>,
        e_more: Vec<Vec<bool>>,
    }

    impl Plan {
        fn new(lanes: usize, layers: usize, seed: u64) -> Plan {
            Plan {
                lanes,
                layers,
                g_bits: random_bits(seed, 3, lanes),
                e_bits: random_bits(seed + 1, 3, lanes),
                e_more: random_bits(seed + 2, 2, lanes),
            }
        }

        /// Runs the plan on `b`, with `own`, `peer`, `peer_more` making the input words and
        /// `reveal` the outputs; returns both revealed words.
        fn run<B: Backend, R>(
            &self,
            b: &mut B,
            inputs: impl Fn(&mut B, usize) -> Result<Vec<B::Bits>>,
            mut reveal: impl FnMut(&mut B, &[B::Bits]) -> Result<R>,
        ) -> Result<(R, R)> {
            let mut pool = inputs(b, 0)?;
            pool.extend(inputs(b, 1)?);
            let out1 = random_circuit(b, pool, self.lanes, 11, self.layers)?;
            let r1 = reveal(b, &out1)?;
            let mut pool = out1;
            pool.extend(inputs(b, 2)?);
            let out2 = random_circuit(b, pool, self.lanes, 12, self.layers)?;
            let r2 = reveal(b, &out2)?;
            Ok((r1, r2))
        }

        fn clear(&self) -> (Revealed, u64) {
            let mut c = Clear::default();
            let words = [&self.g_bits, &self.e_bits, &self.e_more];
            let r = self
                .run(&mut c, |_, k| Ok(words[k].clone()), |_, w| Ok(w.to_vec()))
                .unwrap();
            (r, c.ands)
        }

        fn garble<C: Channel + ?Sized>(&self, ch: &mut C) -> Result<YaoStats> {
            let mut g = Garbler::new(ch, &SID, &mut IdealBaseOtReceiver::default(), &mut rng(1))?;
            self.run(
                &mut g,
                |g, k| match k {
                    0 => g.input_own(&self.g_bits),
                    1 => g.input_peer(self.lanes, self.e_bits.len()),
                    _ => g.input_peer(self.lanes, self.e_more.len()),
                },
                |g, w| g.reveal(w),
            )?;
            g.finish()
        }

        fn evaluate<C: Channel + ?Sized>(&self, ch: &mut C) -> Result<(Revealed, YaoStats)> {
            let mut e = Evaluator::new(ch, &SID, &mut IdealBaseOtSender::default(), &mut rng(2))?;
            let r = self.run(
                &mut e,
                |e, k| match k {
                    0 => e.input_peer(self.lanes, self.g_bits.len()),
                    1 => e.input_own(&self.e_bits),
                    _ => e.input_own(&self.e_more),
                },
                |e, w| e.reveal(w),
            )?;
            Ok((r, e.finish()?))
        }
    }

    #[test]
    fn random_circuits_match_the_clear_computation() {
        for (lanes, layers) in [(1, 60), (7, 60), (64, 60), (1000, 40), (70000, 12)] {
            let plan = Plan::new(lanes, layers, lanes as u64);
            let (want, ands) = plan.clear();
            assert!(ands > 0);
            let (g, e) = run_two_party(
                |ch: &mut MemoryChannel| {
                    let mut m = Metered::new(ch);
                    let stats = plan.garble(&mut m).unwrap();
                    (stats, m.messages_sent())
                },
                |ch: &mut MemoryChannel| plan.evaluate(ch).unwrap(),
            );
            let ((stats, sent), (got, e_stats)) = (g, e);
            assert_eq!(got, want, "lanes {lanes}");
            assert_eq!(stats.and_gates, ands, "lanes {lanes}");
            assert_eq!(stats, e_stats);
            assert_eq!(stats.table_bytes, 32 * ands);
            let t = sent[MSG_TABLES];
            assert_eq!(t.bytes - 4 * t.frames, 32 * ands, "lanes {lanes}");
            let labels = sent[MSG_GARBLER_LABELS];
            assert_eq!(labels.bytes - 4 * labels.frames, 16 * 3 * lanes as u64);
        }
    }

    /// Wraps the evaluator's channel and rewrites frame `nth` of [`MSG_TABLES`] it receives.
    struct EditRecv<'c> {
        inner: &'c mut MemoryChannel,
        nth: usize,
        seen: usize,
        edit: Edit,
    }

    impl FrameSender for EditRecv<'_> {
        fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
            self.inner.send(msg, frame)
        }
        fn close(&mut self) {
            FrameSender::close(self.inner);
        }
    }

    impl FrameReceiver for EditRecv<'_> {
        fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
            let mut f = self
                .inner
                .recv(what, blindjoin_core::channel::MAX_FRAME_LEN)?;
            if what == MSG_TABLES {
                if self.seen == self.nth {
                    (self.edit)(&mut f);
                }
                self.seen += 1;
            }
            blindjoin_core::channel::check_frame_len(what, f.len() as u64, max_len)?;
            Ok(f)
        }
    }

    impl Channel for EditRecv<'_> {
        fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
            self.inner.split()
        }
    }

    /// A small circuit: a garbler input, an evaluator input, `ands` AND gates per lane in
    /// `1000` lanes, one reveal. Runs with the evaluator's table frame `nth` edited; returns
    /// the evaluator's result and the correct output.
    fn run_edited(ands: usize, nth: usize, edit: Edit) -> (Result<Vec<Vec<bool>>>, Vec<Vec<bool>>) {
        let lanes = 1000;
        let xb = random_bits(1, 1, lanes);
        let yb = random_bits(2, 1, lanes);
        fn chain<B: Backend>(b: &mut B, x: &B::Bits, y: &B::Bits, ands: usize) -> Result<B::Bits> {
            let mut w = b.and(&[(x, y)])?.pop().unwrap();
            for _ in 1..ands {
                let nx = b.not(x);
                let z = b.xor(&w, &nx);
                w = b.and(&[(&z, y)])?.pop().unwrap();
            }
            Ok(w)
        }
        let want = vec![chain(&mut Clear::default(), &xb[0], &yb[0], ands).unwrap()];
        let (_, got) = run_two_party(
            |ch: &mut MemoryChannel| -> Result<()> {
                let mut g =
                    Garbler::new(ch, &SID, &mut IdealBaseOtReceiver::default(), &mut rng(1))?;
                let x = g.input_own(&xb)?;
                let y = g.input_peer(lanes, 1)?;
                let w = chain(&mut g, &x[0], &y[0], ands)?;
                g.reveal(&[w])?;
                g.finish().map(|_| ())
            },
            |ch: &mut MemoryChannel| -> Result<Vec<Vec<bool>>> {
                let mut ch = EditRecv {
                    inner: ch,
                    nth,
                    seen: 0,
                    edit,
                };
                let mut e = Evaluator::new(
                    &mut ch,
                    &SID,
                    &mut IdealBaseOtSender::default(),
                    &mut rng(2),
                )?;
                let x = e.input_peer(lanes, 1)?;
                let y = e.input_own(&yb)?;
                let w = chain(&mut e, &x[0], &y[0], ands)?;
                let out = e.reveal(&[w])?;
                e.finish()?;
                Ok(out)
            },
        );
        (got, want)
    }

    #[test]
    fn an_untouched_stream_decodes() {
        // 40 ANDs in 1000 lanes: one full frame of 32768 tables and one of 7232.
        for nth in [0, 1] {
            let (got, want) = run_edited(40, nth, |_| {});
            assert_eq!(got.unwrap(), want);
        }
    }

    #[test]
    fn flipped_table_bits_give_a_wrong_output_or_an_error() {
        #[allow(clippy::ptr_arg)]
        fn flip_tg_lsbs(f: &mut Vec<u8>) {
            for t in f.chunks_mut(32) {
                t[0] ^= 1;
            }
        }
        #[allow(clippy::ptr_arg)]
        fn flip_one(f: &mut Vec<u8>) {
            let n = f.len();
            f[n - 20] ^= 0x80;
        }
        let (got, want) = run_edited(1, 0, flip_tg_lsbs);
        assert!(got.map_or(true, |g| g != want));
        for nth in [0, 1] {
            let (got, want) = run_edited(40, nth, flip_tg_lsbs);
            assert!(got.map_or(true, |g| g != want));
            // A single flipped bit: no panic, whatever comes out.
            let _ = run_edited(40, nth, flip_one);
        }
    }

    #[test]
    fn a_garbler_that_breaks_the_table_stream_gives_an_error() {
        fn drop_table(f: &mut Vec<u8>) {
            f.truncate(f.len().saturating_sub(32));
        }
        fn add_table(f: &mut Vec<u8>) {
            f.extend_from_slice(&[0x5a; 32]);
        }
        fn cut(f: &mut Vec<u8>) {
            f.truncate(f.len() / 2 + 1);
        }
        fn empty(f: &mut Vec<u8>) {
            f.clear();
        }
        fn garbage(f: &mut Vec<u8>) {
            *f = vec![0xff; 77];
        }
        let edits: [(&str, Edit); 5] = [
            ("too few tables", drop_table),
            ("too many tables", add_table),
            ("a short frame", cut),
            ("an empty frame", empty),
            ("garbage", garbage),
        ];
        for (ands, frames) in [(1, 1), (40, 2)] {
            for nth in 0..frames {
                for (name, edit) in edits {
                    let (got, _) = run_edited(ands, nth, edit);
                    assert!(got.is_err(), "{name} in frame {nth} of {frames}");
                }
            }
        }
    }

    #[test]
    fn a_garbler_that_stops_gives_an_error() {
        let lanes = 1000;
        let xb = random_bits(1, 1, lanes);
        for stop in 0..4 {
            let (_, got) = run_two_party(
                |ch: &mut MemoryChannel| -> Result<()> {
                    let mut g =
                        Garbler::new(ch, &SID, &mut IdealBaseOtReceiver::default(), &mut rng(1))?;
                    let x = g.input_own(&xb)?;
                    let mut w = x[0].clone();
                    for k in 0..40 {
                        if k == 10 * stop {
                            // Hangs up with tables garbled but not flushed.
                            return Ok(());
                        }
                        w = g.and(&[(&w, &x[0])])?.pop().unwrap();
                    }
                    g.reveal(&[w])
                },
                |ch: &mut MemoryChannel| -> Result<Vec<Vec<bool>>> {
                    let mut e =
                        Evaluator::new(ch, &SID, &mut IdealBaseOtSender::default(), &mut rng(2))?;
                    let x = e.input_peer(lanes, 1)?;
                    let mut w = x[0].clone();
                    for _ in 0..40 {
                        w = e.and(&[(&w, &x[0])])?.pop().unwrap();
                    }
                    e.reveal(&[w])
                },
            );
            assert!(got.is_err(), "stop {stop}");
        }
    }

    #[test]
    fn an_exactly_full_segment_ends_with_an_empty_frame() {
        // 32768 ANDs fill one frame exactly; the segment's last frame is empty.
        let lanes = TABLE_FRAME_LEN / TABLE_BYTES_PER_AND;
        let xb = random_bits(3, 2, lanes);
        let want: Vec<bool> = xb[0].iter().zip(&xb[1]).map(|(a, b)| a & b).collect();
        let (sent, got) = run_two_party(
            |ch: &mut MemoryChannel| {
                let mut m = Metered::with_frame_log(ch);
                let mut g = Garbler::new(
                    &mut m,
                    &SID,
                    &mut IdealBaseOtReceiver::default(),
                    &mut rng(1),
                )
                .unwrap();
                let x = g.input_own(&xb).unwrap();
                let w = g.and(&[(&x[0], &x[1])]).unwrap();
                g.reveal(&w).unwrap();
                g.finish().unwrap();
                m.frame_log()
            },
            |ch: &mut MemoryChannel| {
                let mut e =
                    Evaluator::new(ch, &SID, &mut IdealBaseOtSender::default(), &mut rng(2))
                        .unwrap();
                let x = e.input_peer(lanes, 2).unwrap();
                let w = e.and(&[(&x[0], &x[1])]).unwrap();
                let out = e.reveal(&w).unwrap();
                e.finish().unwrap();
                out
            },
        );
        assert_eq!(got, vec![want]);
        let tables: Vec<u64> = sent
            .iter()
            .filter(|(_, m, _)| *m == MSG_TABLES)
            .map(|(_, _, len)| *len)
            .collect();
        assert_eq!(tables, vec![TABLE_FRAME_LEN as u64, 0]);
    }

    #[test]
    fn the_constant_label_must_be_16_bytes() {
        for len in [0, 15, 17] {
            let (_, got) = run_two_party(
                |ch: &mut MemoryChannel| ch.send(MSG_CONSTANT_LABEL, &vec![0; len]),
                |ch: &mut MemoryChannel| {
                    Evaluator::new(ch, &SID, &mut IdealBaseOtSender::default(), &mut rng(2))
                        .map(|_| ())
                },
            );
            assert!(got.is_err(), "len {len}");
        }
    }

    /// 96 layers of 2^20 AND gates (≈ 10^8), garbler and evaluator in two threads over the
    /// in-memory channel: prints the time and the bytes of tables.
    #[test]
    #[ignore = "release-mode throughput"]
    fn throughput_1e8_and_gates() {
        const LANES: usize = 1 << 20;
        const LAYERS: usize = 96;
        let xb = random_bits(5, 2, LANES);
        fn layers<B: Backend>(b: &mut B, x: &B::Bits, y: &B::Bits) -> Result<B::Bits>
        where
            B::Bits: Clone,
        {
            let (mut x, mut y) = (x.clone(), y.clone());
            for _ in 0..LAYERS {
                let w = b.and(&[(&x, &y)])?.pop().unwrap();
                let z = b.xor(&w, &x);
                x = y;
                y = z;
            }
            Ok(y)
        }
        let mut clear = Clear::default();
        let want = vec![layers(&mut clear, &xb[0], &xb[1]).unwrap()];
        let start = std::time::Instant::now();
        let ((g_time, g_cpu, stats), (e_time, e_cpu, got)) = run_two_party(
            |ch: &mut MemoryChannel| {
                let mut g =
                    Garbler::new(ch, &SID, &mut IdealBaseOtReceiver::default(), &mut rng(1))
                        .unwrap();
                let x = g.input_own(&xb).unwrap();
                let (t, cpu) = (std::time::Instant::now(), thread_cpu_secs());
                let w = layers(&mut g, &x[0], &x[1]).unwrap();
                let (garble, cpu) = (t.elapsed(), thread_cpu_secs() - cpu);
                g.reveal(&[w]).unwrap();
                (garble, cpu, g.finish().unwrap())
            },
            |ch: &mut MemoryChannel| {
                let mut e =
                    Evaluator::new(ch, &SID, &mut IdealBaseOtSender::default(), &mut rng(2))
                        .unwrap();
                let x = e.input_peer(LANES, 2).unwrap();
                let (t, cpu) = (std::time::Instant::now(), thread_cpu_secs());
                let w = layers(&mut e, &x[0], &x[1]).unwrap();
                let (eval, cpu) = (t.elapsed(), thread_cpu_secs() - cpu);
                let out = e.reveal(&[w]).unwrap();
                e.finish().unwrap();
                (eval, cpu, out)
            },
        );
        let total = start.elapsed();
        assert_eq!(got, want);
        let g = stats.and_gates as f64;
        println!(
            "{} AND gates, {:.3} GB of tables; garbler: {:.2} s wall, {:.2} s CPU \
             ({:.3e} gates per CPU second); evaluator: {:.2} s wall, {:.2} s CPU \
             ({:.3e} gates per CPU second); run {:.2} s wall",
            stats.and_gates,
            stats.table_bytes as f64 / 1e9,
            g_time.as_secs_f64(),
            g_cpu,
            g / g_cpu,
            e_time.as_secs_f64(),
            e_cpu,
            g / e_cpu,
            total.as_secs_f64(),
        );
    }

    /// CPU seconds (user + system) of the calling thread so far, from /proc (Linux; 0 elsewhere).
    fn thread_cpu_secs() -> f64 {
        let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
            return 0.0;
        };
        // Fields after the command name (which ends at the last ')'): utime and stime are the
        // 12th and 13th, in clock ticks of 1/100 s.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<f64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect();
        (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
    }
}
