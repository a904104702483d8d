//! Multiplication triples for [`gmw`](super::gmw), generated from random OT (PSZ14 §3.1 and
//! §3.2), and the packed bit vectors they and the GMW shares are stored in.
//!
//! **Scalar triple** (PSZ14 §3.1, with the garbles of the text corrected as in the notes on
//! the paper, §8.2): party i holds bits (α_i, β_i, γ_i) with
//! (α_0 ⊕ α_1) ∧ (β_0 ⊕ β_1) = γ_0 ⊕ γ_1. Two random OTs on one-bit strings make one: in the OT
//! where P_i is the sender it obtains (x^i_0, x^i_1) and P_j receives x^i_{α_j} for a random
//! choice α_j; then β_i = x^i_0 ⊕ x^i_1 and γ_i = (α_i ∧ β_i) ⊕ x^i_0 ⊕ x^j_{α_i}. (Check:
//! x^j_{α_i} = x^j_0 ⊕ α_i·β_j, so γ_0 ⊕ γ_1 = α_0β_0 ⊕ α_0β_1 ⊕ α_1β_1 ⊕ α_1β_0.)
//!
//! **Vector triple** (PSZ14 §3.2): the same with σ-bit strings β_i, γ_i ∈ {0,1}^σ and one bit
//! α_i: (α_0 ⊕ α_1) ∧ (β_0\[j\] ⊕ β_1\[j\]) = γ_0\[j\] ⊕ γ_1\[j\] for every j < σ, from two
//! random OTs on σ-bit strings instead of 2σ one-bit OTs.
//!
//! **From the OT outputs.** The random OTs are IKNP with the ALSZ optimisations
//! (`blindjoin_ot::ext::iknp`), two instances: in direction A party 0 is the OT sender, in
//! direction B party 1 is; each instance's session id is SHA-256 of the caller's session id
//! under its own label. Direction B runs over [`Renamed`] with its own message names
//! ([`MSG_SENDER_POINT_REVERSE`], [`MSG_RECEIVER_POINTS_REVERSE`], [`MSG_U_COLUMNS_REVERSE`]),
//! so that each name has one sending party. An OT's one-bit string is bit 0 of its 128-bit random-OT output, a
//! σ-bit string bits 0..σ (σ ≤ 128): the outputs are hashes (TCCR) of the extension's rows, so
//! any of their bits are uniform and independent in the random-oracle model.
//!
//! **Layout.** The triples are consumed in order. Scalar triple t is bit t of three packed bit
//! vectors (α, β, γ: 3 bits per triple). Vector triple t is bit t of the packed α vector and
//! bit t of plane j of β and of γ for j < σ (1 + 2σ bits per triple): a layer of L vector ANDs
//! reads L consecutive bits of each plane, the layout the bit-sliced online phase wants. The
//! OTs run in batches of at most [`BATCH`], each packed (and its OT outputs wiped) before the
//! next, so memory is that of the packed triples plus two batches.
//!
//! **Both directions at once.** In a batch each party is the OT receiver of one direction (it
//! only sends u columns) and the OT sender of the other (it only reads them). Both parties
//! first send their columns, through a writer thread that never waits for the peer to read
//! ([`with_outbox`]), and then read the peer's: the two directions' columns share the wire's
//! time instead of taking turns, and a shaped link's time for the triples is one direction's
//! bytes, not both. The receiver side runs one batch ahead of the sender side (two batches'
//! buffers), so the next batch's columns travel while this one is read and packed: on a
//! shaped link the triples take about the larger of the computation and the transfer, not
//! their sum. All computation stays on the calling thread, in the caller's pool.

use crate::protocols::common::with_outbox;
use blindjoin_core::channel::renamed::Renamed;
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use blindjoin_core::handshake::session_hasher;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_ot::base::{MSG_RECEIVER_POINTS, MSG_SENDER_POINT};
use blindjoin_ot::ext::iknp::{IknpReceiver, IknpSender, MSG_U_COLUMNS};
use rand::CryptoRng;
use sha2::Digest;
use zeroize::{Zeroize, Zeroizing};

/// Name of the base-OT sender's point in direction B (party 0 the base-OT sender).
pub const MSG_SENDER_POINT_REVERSE: &str = "the base-OT sender's point S (reverse OT direction)";

/// Name of the base-OT receiver's points in direction B (party 1 the base-OT receiver).
pub const MSG_RECEIVER_POINTS_REVERSE: &str =
    "the base-OT receiver's points R_i (reverse OT direction)";

/// Name of the IKNP u columns in direction B (party 0 the OT receiver).
pub const MSG_U_COLUMNS_REVERSE: &str = "the IKNP receiver's u columns (reverse OT direction)";

/// The names of direction B's messages: each party sends the base OTs' and IKNP's messages in
/// one direction under their own names and in the other under these, so every message name
/// has one sending party.
fn reverse_name(name: &'static str) -> &'static str {
    match name {
        n if n == MSG_SENDER_POINT => MSG_SENDER_POINT_REVERSE,
        n if n == MSG_RECEIVER_POINTS => MSG_RECEIVER_POINTS_REVERSE,
        n if n == MSG_U_COLUMNS => MSG_U_COLUMNS_REVERSE,
        n => n,
    }
}

/// `ch` with direction B's message names.
fn reverse<C: Channel + ?Sized>(ch: &mut C) -> Renamed<'_, C> {
    Renamed::new(ch, reverse_name)
}

/// Random OTs per batch and direction: one chunk of the OT extension, so that a batch's
/// outputs are packed while they are in cache (a multiple of 64, so every batch but the last
/// fills whole words of the packed triples).
pub const BATCH: usize = 1 << 16;

/// Largest σ of a vector triple: the bits of one random-OT output.
pub const MAX_WIDTH: usize = 128;

/// Which of the two GMW parties this is. Party 0 adds the public term d∧e of every AND gate
/// and holds the public constants and negations; party 1 does not (PSZ14 §3.1: P1 and P2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GmwParty {
    /// Party 0: the random-OT sender of direction A, the receiver of direction B.
    P0,
    /// Party 1: the random-OT receiver of direction A, the sender of direction B.
    P1,
}

impl GmwParty {
    /// 0 or 1.
    pub fn index(self) -> usize {
        match self {
            GmwParty::P0 => 0,
            GmwParty::P1 => 1,
        }
    }
}

/// How many triples the precomputation makes, and how the online phase uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TripleCounts {
    /// Scalar triples (one per AND gate of [`Backend::and`](super::Backend::and), and in
    /// non-vectorised mode one per AND gate of
    /// [`Backend::and_vector`](super::Backend::and_vector)).
    pub scalar: u64,
    /// Vector triples (one per lane and per chunk of at most `width` wires of an
    /// [`Backend::and_vector`](super::Backend::and_vector) item; none in non-vectorised mode).
    pub vector: u64,
    /// σ, the bits of a vector triple (1 to [`MAX_WIDTH`]; ignored if `vector` is 0).
    pub width: usize,
    /// Whether [`Backend::and_vector`](super::Backend::and_vector) uses vector triples (PSZ14
    /// §3.2) or one scalar triple per AND gate (plain GMW, PSZ14 Tab. 5 "GMW").
    pub vectorised: bool,
}

impl TripleCounts {
    /// Counts for a circuit of `ands` scalar AND gates and `muxes` vector ANDs of `width` wires
    /// each (a multiplexer's select wire and its `width` data wires, per lane): vectorised, one
    /// vector triple per multiplexer; otherwise `width` scalar triples per multiplexer.
    pub fn for_circuit(ands: u64, muxes: u64, width: usize, vectorised: bool) -> Self {
        if vectorised {
            TripleCounts {
                scalar: ands,
                vector: muxes,
                width,
                vectorised,
            }
        } else {
            TripleCounts {
                scalar: ands.saturating_add(muxes.saturating_mul(width as u64)),
                vector: 0,
                width,
                vectorised,
            }
        }
    }
}

/// Words of 64 bits that hold `n` bits.
pub(crate) fn words_for(n: usize) -> usize {
    n.div_ceil(64)
}

/// The mask of the bits of the last of `words_for(n)` words that are among the first `n`.
pub(crate) fn last_mask(n: usize) -> u64 {
    match n % 64 {
        0 => u64::MAX,
        r => (1u64 << r) - 1,
    }
}

/// Bits `off..off + n` of the packed `src` (bit i at word i/64, position i%64), written to
/// `dst[..words_for(n)]` from bit 0 with the padding bits zero. `src` holds at least
/// `words_for(off + n)` words.
pub(crate) fn extract_into(src: &[u64], off: usize, n: usize, dst: &mut [u64]) {
    let nw = words_for(n);
    let w0 = off / 64;
    let s = off % 64;
    let dst = &mut dst[..nw];
    if s == 0 {
        dst.copy_from_slice(&src[w0..w0 + nw]);
    } else {
        for (i, d) in dst.iter_mut().enumerate() {
            let lo = src[w0 + i] >> s;
            let hi = src.get(w0 + i + 1).map_or(0, |&h| h << (64 - s));
            *d = lo | hi;
        }
    }
    if let Some(last) = dst.last_mut() {
        *last &= last_mask(n);
    }
}

/// XORs the `n` bits of `src` (from bit 0; its padding bits zero) into the packed `dst` at
/// bits `off..off + n`.
pub(crate) fn xor_at(dst: &mut [u64], off: usize, src: &[u64], n: usize) {
    let nw = words_for(n);
    let w0 = off / 64;
    let s = off % 64;
    if s == 0 {
        for (d, x) in dst[w0..w0 + nw].iter_mut().zip(&src[..nw]) {
            *d ^= x;
        }
    } else {
        for (i, &x) in src[..nw].iter().enumerate() {
            dst[w0 + i] ^= x << s;
            let hi = x >> (64 - s);
            if hi != 0
                && let Some(d) = dst.get_mut(w0 + i + 1)
            {
                *d ^= hi;
            }
        }
    }
}

/// Transposes a 64×64 bit matrix in place: bit j of `a[i]` becomes bit i of `a[j]`.
pub(crate) fn transpose64(a: &mut [u64; 64]) {
    let mut j = 32;
    let mut m: u64 = 0x0000_0000_FFFF_FFFF;
    while j != 0 {
        let mut k = 0;
        while k < 64 {
            let t = ((a[k] >> j) ^ a[k + j]) & m;
            a[k] ^= t << j;
            a[k + j] ^= t;
            k = (k + j + 1) & !j;
        }
        j >>= 1;
        m ^= m << j;
    }
}

/// Consumes triples of a kind in order: how many there are and how many are used.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    len: usize,
    used: usize,
}

impl Cursor {
    /// Reserves the next `n` triples and returns the index of the first, or an error if fewer
    /// than `n` are left.
    fn take(&mut self, n: usize, kind: &'static str) -> Result<usize> {
        let left = self.len - self.used;
        if n > left {
            return Err(Error::InvalidParam {
                field: kind,
                reason: format!(
                    "{n} needed by a layer, {left} of the {} precomputed are left",
                    self.len
                ),
            });
        }
        let first = self.used;
        self.used += n;
        Ok(first)
    }
}

/// Scalar triples: bit t of `a`, `b`, `c` is (α, β, γ) of triple t. Wiped on drop.
#[derive(Default)]
pub(crate) struct ScalarTriples {
    pub(crate) a: Vec<u64>,
    pub(crate) b: Vec<u64>,
    pub(crate) c: Vec<u64>,
    cursor: Cursor,
}

impl Drop for ScalarTriples {
    fn drop(&mut self) {
        self.a.zeroize();
        self.b.zeroize();
        self.c.zeroize();
    }
}

impl ScalarTriples {
    /// Reserves the next `n` triples; the index of the first.
    pub(crate) fn take(&mut self, n: usize) -> Result<usize> {
        self.cursor.take(n, "scalar multiplication triples")
    }

    /// Triples not yet used.
    pub(crate) fn remaining(&self) -> usize {
        self.cursor.len - self.cursor.used
    }
}

/// Vector triples of `width` bits: bit t of `a` is α of triple t; bit t of `b[j]` and `c[j]`
/// are β\[j\] and γ\[j\]. Wiped on drop.
#[derive(Default)]
pub(crate) struct VectorTriples {
    pub(crate) width: usize,
    pub(crate) a: Vec<u64>,
    pub(crate) b: Vec<Vec<u64>>,
    pub(crate) c: Vec<Vec<u64>>,
    cursor: Cursor,
}

impl Drop for VectorTriples {
    fn drop(&mut self) {
        self.a.zeroize();
        self.b.iter_mut().for_each(Zeroize::zeroize);
        self.c.iter_mut().for_each(Zeroize::zeroize);
    }
}

impl VectorTriples {
    /// Reserves the next `n` triples; the index of the first.
    pub(crate) fn take(&mut self, n: usize) -> Result<usize> {
        self.cursor.take(n, "vector multiplication triples")
    }

    /// Triples not yet used.
    pub(crate) fn remaining(&self) -> usize {
        self.cursor.len - self.cursor.used
    }
}

/// The session id of one direction's OT extension: SHA-256 of `sid` under `label`.
fn direction_sid(sid: &[u8; 32], label: &str) -> [u8; 32] {
    session_hasher(sid, label).finalize().into()
}

/// The two random-OT extensions of one party and the buffers of two batches (wiped on drop).
struct OtPair {
    party: GmwParty,
    sender: IknpSender,
    receiver: IknpReceiver,
    prg: AesPrg,
    /// This party's own sender outputs (x^i_0, x^i_1) of the batch being packed.
    pairs: Zeroizing<Vec<[Block; 2]>>,
    /// α_i, one bool per OT (the form the IKNP receiver takes).
    choices: Zeroizing<Vec<bool>>,
    /// Per slot (batches alternate between two): what this party received, x^j_{α_i}, and
    /// α_i packed.
    slots: [Slot; 2],
}

/// The receiver's side of one batch.
#[derive(Default)]
struct Slot {
    got: Zeroizing<Vec<Block>>,
    alpha: Zeroizing<Vec<u64>>,
}

impl OtPair {
    /// Sets up both directions' extensions (direction A first; the κ base OTs of each).
    fn setup<C, BS, BR>(
        ch: &mut C,
        party: GmwParty,
        sid: &[u8; 32],
        base_send: &mut BS,
        base_recv: &mut BR,
        rng: &mut impl CryptoRng,
    ) -> Result<Self>
    where
        C: Channel + ?Sized,
        BS: BaseOtSender,
        BR: BaseOtReceiver,
    {
        let sid_a = direction_sid(sid, "circuit/gmw/random OT, party 0 sends");
        let sid_b = direction_sid(sid, "circuit/gmw/random OT, party 1 sends");
        let (sender, receiver) = match party {
            GmwParty::P0 => {
                let s = IknpSender::setup(base_recv, ch, &sid_a, rng)?;
                let r = IknpReceiver::setup(base_send, &mut reverse(ch), &sid_b, rng)?;
                (s, r)
            }
            GmwParty::P1 => {
                let r = IknpReceiver::setup(base_send, ch, &sid_a, rng)?;
                let s = IknpSender::setup(base_recv, &mut reverse(ch), &sid_b, rng)?;
                (s, r)
            }
        };
        Ok(OtPair {
            party,
            sender,
            receiver,
            prg: AesPrg::new(Block::random(rng)),
            pairs: Zeroizing::new(Vec::new()),
            choices: Zeroizing::new(Vec::new()),
            slots: Default::default(),
        })
    }

    /// This party's receiver side of a batch of `n` ≤ [`BATCH`] random OTs, into `slot`: draws
    /// the choices α (packed, padding zero), sends the u columns to `tx` (an outbox that never
    /// waits for the peer) and keeps x^j_{α_i}.
    fn receive(&mut self, tx: &mut dyn FrameSender, n: usize, slot: usize) -> Result<()> {
        let Slot { got, alpha } = &mut self.slots[slot];
        got.resize(n, Block::ZERO);
        self.choices.resize(n, false);
        let nw = words_for(n);
        alpha.resize(nw, 0);
        let mut bytes = Zeroizing::new(vec![0u8; 8 * nw]);
        self.prg.fill_bytes(&mut bytes);
        for ((w, b), c) in alpha
            .iter_mut()
            .zip(bytes.chunks_exact(8))
            .zip(self.choices[..n].chunks_mut(64))
        {
            let mut word = [0u8; 8];
            word.copy_from_slice(b);
            *w = u64::from_le_bytes(word) & last_mask(c.len());
            let v = *w;
            c.iter_mut()
                .enumerate()
                .for_each(|(i, c)| *c = (v >> i) & 1 == 1);
        }
        let choices = &self.choices[..n];
        match self.party {
            GmwParty::P0 => {
                self.receiver
                    .receive_random(&mut Renamed::new(tx, reverse_name), choices, got)
            }
            GmwParty::P1 => self.receiver.receive_random(tx, choices, got),
        }
    }

    /// This party's sender side of a batch of `n` random OTs: reads the peer's u columns from
    /// `rx` and fills `pairs[..n]`.
    fn send(&mut self, rx: &mut dyn FrameReceiver, n: usize) -> Result<()> {
        self.pairs.resize(n, [Block::ZERO; 2]);
        match self.party {
            GmwParty::P0 => self.sender.send_random(rx, &mut self.pairs),
            GmwParty::P1 => self
                .sender
                .send_random(&mut Renamed::new(rx, reverse_name), &mut self.pairs),
        }
    }

    /// The `n` OTs of the batch in `slot` whose sender side ran last.
    fn view(&self, n: usize, slot: usize) -> Batch<'_> {
        Batch {
            pairs: &self.pairs[..n],
            alpha: &self.slots[slot].alpha,
            got: &self.slots[slot].got[..n],
        }
    }
}

/// The low 64 bits of a block.
fn low(b: Block) -> u64 {
    b.0 as u64
}

/// The high 64 bits of a block.
fn high(b: Block) -> u64 {
    (b.0 >> 64) as u64
}

/// Generates the triples `counts` asks for, as `party`, over `ch` (PSZ14 §3.1-3.2; see the
/// [module doc](self)). With no triple asked for, nothing is sent.
///
/// Errors: `InvalidParam` for a width outside 1..=[`MAX_WIDTH`] with vector triples asked
/// for, or counts that do not fit memory's index type; the OT layer's and the channel's.
/// After an error the sending half of `ch` is closed, so that the peer's next receive fails.
pub(crate) fn generate<C, BS, BR>(
    ch: &mut C,
    party: GmwParty,
    sid: &[u8; 32],
    base_send: &mut BS,
    base_recv: &mut BR,
    counts: &TripleCounts,
    rng: &mut impl CryptoRng,
) -> Result<(ScalarTriples, VectorTriples)>
where
    C: Channel + ?Sized,
    BS: BaseOtSender,
    BR: BaseOtReceiver,
{
    let result = generate_inner(ch, party, sid, base_send, base_recv, counts, rng);
    if result.is_err() {
        FrameSender::close(ch);
    }
    result
}

fn to_len(n: u64, field: &'static str) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::InvalidParam {
        field,
        reason: format!("{n} does not fit this machine's memory"),
    })
}

fn generate_inner<C, BS, BR>(
    ch: &mut C,
    party: GmwParty,
    sid: &[u8; 32],
    base_send: &mut BS,
    base_recv: &mut BR,
    counts: &TripleCounts,
    rng: &mut impl CryptoRng,
) -> Result<(ScalarTriples, VectorTriples)>
where
    C: Channel + ?Sized,
    BS: BaseOtSender,
    BR: BaseOtReceiver,
{
    let n_scalar = to_len(counts.scalar, "scalar triples")?;
    let n_vector = to_len(counts.vector, "vector triples")?;
    let width = if n_vector == 0 { 0 } else { counts.width };
    if n_vector > 0 && !(1..=MAX_WIDTH).contains(&width) {
        return Err(Error::InvalidParam {
            field: "width",
            reason: format!("{width} bits; vector triples have 1 to {MAX_WIDTH}"),
        });
    }
    let mut scalar = ScalarTriples::default();
    let mut vector = VectorTriples::default();
    vector.width = width;
    if n_scalar == 0 && n_vector == 0 {
        return Ok((scalar, vector));
    }
    let mut ots = OtPair::setup(ch, party, sid, base_send, base_recv, rng)?;

    let sw = words_for(n_scalar);
    scalar.a = vec![0; sw];
    scalar.b = vec![0; sw];
    scalar.c = vec![0; sw];
    let vw = words_for(n_vector);
    vector.a = vec![0; vw];
    vector.b = vec![vec![0; vw]; width];
    vector.c = vec![vec![0; vw]; width];
    // The batches: the scalar triples', then the vector triples'.
    let batches = |total: usize| {
        (0..total)
            .step_by(BATCH)
            .map(move |s| (s, BATCH.min(total - s)))
    };
    let plan: Vec<(bool, usize, usize)> = batches(n_scalar)
        .map(|(s, n)| (false, s, n))
        .chain(batches(n_vector).map(|(s, n)| (true, s, n)))
        .collect();
    with_outbox(ch, |rx, tx| {
        // The receiver side runs one batch ahead: batch k + 1's columns are on the wire while
        // this party reads and packs batch k.
        ots.receive(tx, plan[0].2, 0)?;
        for (k, &(is_vector, start, n)) in plan.iter().enumerate() {
            if let Some(&(_, _, next)) = plan.get(k + 1) {
                ots.receive(tx, next, (k + 1) % 2)?;
            }
            ots.send(rx, n)?;
            let batch = ots.view(n, k % 2);
            if is_vector {
                pack_vector(&batch, start / 64, &mut vector);
            } else {
                pack_scalar(&batch, start / 64, &mut scalar);
            }
        }
        Ok(())
    })?;
    scalar.cursor.len = n_scalar;
    vector.cursor.len = n_vector;
    Ok((scalar, vector))
}

/// One batch's OT outputs, as the packing reads them.
struct Batch<'a> {
    pairs: &'a [[Block; 2]],
    alpha: &'a [u64],
    got: &'a [Block],
}

/// Packs the OTs of one batch into scalar triples from word `w0` on: β = x_0 ⊕ x_1,
/// γ = (α ∧ β) ⊕ x_0 ⊕ received (bit 0 of each OT output).
fn pack_scalar(ots: &Batch<'_>, w0: usize, out: &mut ScalarTriples) {
    let (pairs, got) = (ots.pairs, ots.got);
    for (k, (pairs, got)) in pairs.chunks(64).zip(got.chunks(64)).enumerate() {
        let mut beta = 0u64;
        let mut mask = 0u64;
        for (i, ([x0, x1], r)) in pairs.iter().zip(got).enumerate() {
            let x0 = low(*x0);
            beta |= ((x0 ^ low(*x1)) & 1) << i;
            mask |= ((x0 ^ low(*r)) & 1) << i;
        }
        let alpha = ots.alpha[k];
        out.a[w0 + k] = alpha;
        out.b[w0 + k] = beta;
        out.c[w0 + k] = (alpha & beta) ^ mask;
    }
}

/// Packs the OTs of one batch into vector triples from word `w0` on, as [`pack_scalar`]
/// with σ-bit strings: 64 OTs at a time, their low (and high) 64 output bits transposed into
/// planes.
fn pack_vector(ots: &Batch<'_>, w0: usize, out: &mut VectorTriples) {
    let width = out.width;
    let mut beta = Zeroizing::new([0u64; 64]);
    let mut mask = Zeroizing::new([0u64; 64]);
    let (pairs, got) = (ots.pairs, ots.got);
    for (k, (pairs, got)) in pairs.chunks(64).zip(got.chunks(64)).enumerate() {
        let alpha = ots.alpha[k];
        out.a[w0 + k] = alpha;
        for half in 0..width.div_ceil(64) {
            let part = if half == 0 { low } else { high };
            beta.fill(0);
            mask.fill(0);
            for (i, ([x0, x1], r)) in pairs.iter().zip(got).enumerate() {
                beta[i] = part(*x0 ^ *x1);
                mask[i] = part(*x0 ^ *r);
            }
            transpose64(&mut beta);
            transpose64(&mut mask);
            let planes = (64 * half)..width.min(64 * half + 64);
            for (j, (b, m)) in planes.clone().zip(beta.iter().zip(mask.iter())) {
                out.b[j][w0 + k] = *b;
                out.c[j][w0 + k] = (alpha & b) ^ m;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use rand::Rng;

    fn bit(v: &[u64], i: usize) -> bool {
        (v[i / 64] >> (i % 64)) & 1 == 1
    }

    #[test]
    fn transpose_moves_bit_ij_to_ji() {
        let mut r = blindjoin_testkit::rng(1);
        let orig: [u64; 64] = std::array::from_fn(|_| r.random());
        let mut t = orig;
        transpose64(&mut t);
        for (i, row) in orig.iter().enumerate() {
            for (j, col) in t.iter().enumerate() {
                assert_eq!((row >> j) & 1, (col >> i) & 1);
            }
        }
    }

    #[test]
    fn extract_and_xor_at_any_offset() {
        let mut r = blindjoin_testkit::rng(2);
        let src: Vec<u64> = (0..8).map(|_| r.random()).collect();
        for off in [0, 1, 63, 64, 65, 100, 200] {
            for n in [0, 1, 5, 63, 64, 65, 128, 250] {
                if off + n > 512 {
                    continue;
                }
                let mut dst = vec![0u64; words_for(n)];
                extract_into(&src, off, n, &mut dst);
                for i in 0..n {
                    assert_eq!(bit(&dst, i), bit(&src, off + i));
                }
                if let Some(l) = dst.last() {
                    assert_eq!(l & !last_mask(n), 0);
                }
                let mut back = vec![0u64; 8];
                xor_at(&mut back, off, &dst, n);
                for i in 0..512 {
                    let inside = i >= off && i < off + n;
                    assert_eq!(bit(&back, i), inside && bit(&src, i));
                }
            }
        }
    }
}
