//! IKNP OT extension with the ALSZ optimisations: random, correlated and chosen-message
//! 1-out-of-2 OT, semi-honest (see the [parent module](super) for the message flow).
//!
//! **Lifecycle.** [`IknpSender::setup`] / [`IknpReceiver::setup`] run the κ base OTs with the
//! base OT they are given and return the ready extension, which then serves any number of
//! batches; there is no other constructor, so extending before setup does not compile. Δ, the
//! PRG keys and the row buffers are wiped when the value is dropped.

use super::{
    CHUNK, KAPPA, check_out_len, grow_wiping, pack_bits, row_bytes, seed_prg_pairs, seed_prgs,
    session_aes,
};
use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::{BulkReader, Channel, FrameReceiver, FrameSender, send_elements};
use blindjoin_core::prg::AesPrg;
use blindjoin_core::transpose::transpose_128xn_par;
use blindjoin_core::{Block, Error, Result, block};
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Name of the receiver's u columns (one frame per chunk of OTs).
pub const MSG_U_COLUMNS: &str = "the OT extension's u columns";
/// Name of the sender's masked messages of correlated and chosen-message OT.
pub const MSG_Y_VALUES: &str = "the OT sender's masked messages";

/// IKNP/ALSZ OT-extension sender. [`setup`](Self::setup) runs the base OTs and is the only way
/// to get one, so every value of this type is ready to extend. Its correlation Δ = s, the PRG
/// keys and its buffers are wiped when it is dropped; `Debug` shows none of them.
///
/// An extension cannot be used before its setup, because there is nothing to call it on:
///
/// ```compile_fail,E0599
/// use blindjoin_core::Block;
/// use blindjoin_core::channel::Channel;
/// use blindjoin_ot::ext::iknp::IknpSender;
///
/// fn extend(ch: &mut impl Channel) -> blindjoin_core::Result<()> {
///     let mut sender = IknpSender::new(); // no constructor but `setup` exists
///     let mut out = [[Block::ZERO; 2]; 4];
///     sender.send_random(ch, &mut out)
/// }
/// ```
///
/// whereas the same call on the value `setup` returns compiles:
///
/// ```
/// use blindjoin_core::Block;
/// use blindjoin_core::channel::Channel;
/// use blindjoin_ot::base::ChouOrlandiReceiver;
/// use blindjoin_ot::ext::iknp::IknpSender;
///
/// fn extend(ch: &mut impl Channel, sid: &[u8; 32]) -> blindjoin_core::Result<()> {
///     let mut base = ChouOrlandiReceiver::default();
///     let mut sender = IknpSender::setup(&mut base, ch, sid, &mut blindjoin_testkit::rng(1))?;
///     let mut out = [[Block::ZERO; 2]; 4];
///     sender.send_random(ch, &mut out)
/// }
/// ```
pub struct IknpSender {
    /// The global correlation Δ = s (also the base-OT choice vector).
    s: Block,
    prgs: Vec<AesPrg>,
    aes: FixedKeyAes,
    next_index: u64,
    /// The q columns of one chunk, reused from chunk to chunk.
    columns: Vec<u8>,
    /// One chunk's rows q_i, reused by `send_random`.
    rows: Vec<Block>,
}

impl Drop for IknpSender {
    fn drop(&mut self) {
        self.s.zeroize();
        self.columns.zeroize();
        self.rows.zeroize();
    }
}

/// Δ and the buffers are wiped by `Drop`; the PRGs wipe their own keys.
impl ZeroizeOnDrop for IknpSender {}

/// IKNP/ALSZ OT-extension receiver. [`setup`](Self::setup) runs the base OTs and is the only
/// way to get one. Its PRG keys and buffers are wiped when it is dropped; `Debug` shows none of
/// them.
pub struct IknpReceiver {
    prgs: Vec<[AesPrg; 2]>,
    aes: FixedKeyAes,
    next_index: u64,
    /// The t and u columns of one chunk, reused from chunk to chunk.
    columns: [Vec<u8>; 2],
    /// Test hook for a cheating receiver: flip choice bit `.0` in the first `.1` columns only.
    #[cfg(test)]
    pub(crate) cheat: Option<(usize, usize)>,
}

impl Drop for IknpReceiver {
    fn drop(&mut self) {
        self.columns.iter_mut().for_each(Zeroize::zeroize);
    }
}

/// The buffers are wiped by `Drop`; the PRGs wipe their own keys.
impl ZeroizeOnDrop for IknpReceiver {}

impl std::fmt::Debug for IknpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IknpSender").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for IknpReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IknpReceiver").finish_non_exhaustive()
    }
}

/// Rows hashed per rayon task (64 KiB of blocks): enough AES per task to pay for the task,
/// and 16 tasks per chunk of OTs to share out.
pub(crate) const PAR_ROWS: usize = 4096;

/// Applies TCCR(first + i, · ⊕ xor) to every block, spread over the current rayon pool.
fn hash_rows(aes: &FixedKeyAes, first: u64, xor: Block, rows: &mut [Block]) {
    rows.par_chunks_mut(PAR_ROWS)
        .enumerate()
        .for_each(|(p, rows)| {
            if xor != Block::ZERO {
                rows.iter_mut().for_each(|r| *r ^= xor);
            }
            aes.tccr_hash(first + (p * PAR_ROWS) as u64, rows);
        });
}

impl IknpSender {
    /// Runs the κ base OTs with `base` (as their receiver, with a random choice vector s) and
    /// returns the ready sender.
    pub fn setup<B: BaseOtReceiver, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let s = Block::random(rng);
        let choices: Zeroizing<Vec<bool>> = Zeroizing::new((0..KAPPA).map(|j| s.bit(j)).collect());
        // Built before the base OTs so that an error there drops (and wipes) s.
        let mut sender = IknpSender {
            s,
            prgs: Vec::new(),
            aes: session_aes(sid, "ot/iknp/tccr"),
            next_index: 0,
            columns: Vec::new(),
            rows: Vec::new(),
        };
        sender.prgs = seed_prgs(base, ch, sid, &choices, rng)?;
        Ok(sender)
    }

    /// The global correlation s (KOS needs it for its check).
    pub(crate) fn delta(&self) -> Block {
        self.s
    }

    /// The TCCR hash of the outputs.
    pub(crate) fn aes(&self) -> &FixedKeyAes {
        &self.aes
    }

    /// Reserves the OT indices of `n` OTs and returns the first (for a caller that extends
    /// them with [`extend_chunk`](Self::extend_chunk)).
    pub(crate) fn reserve(&mut self, n: usize) -> u64 {
        let first = self.next_index;
        self.next_index += n as u64;
        first
    }

    /// Receives one chunk's u columns and writes its rows q_i = t_i ⊕ r_i·s into `dest`
    /// (at most [`CHUNK`] of them). Does not advance `next_index`.
    pub(crate) fn extend_chunk<C: FrameReceiver + ?Sized>(
        &mut self,
        ch: &mut C,
        dest: &mut [Block],
    ) -> Result<()> {
        let rb = row_bytes(dest.len());
        let u = ch.recv(MSG_U_COLUMNS, KAPPA * rb)?;
        if u.len() != KAPPA * rb {
            return Err(Error::malformed(
                MSG_U_COLUMNS,
                format!("{} bytes, {} expected", u.len(), KAPPA * rb),
            ));
        }
        let q = &mut self.columns;
        grow_wiping(q, KAPPA * rb);
        q.resize(KAPPA * rb, 0);
        let s = self.s;
        // Each column comes from its own PRG: the columns are filled in parallel.
        self.prgs
            .par_iter_mut()
            .zip(q.par_chunks_exact_mut(rb))
            .zip(u.par_chunks_exact(rb))
            .enumerate()
            .for_each(|(j, ((prg, qj), uj))| {
                prg.fill_bytes(qj);
                // Constant time in s: XOR u^j under an all-ones or all-zero mask.
                let mask = 0u8.wrapping_sub(u8::from(s.bit(j)));
                qj.iter_mut().zip(uj).for_each(|(a, b)| *a ^= b & mask);
            });
        transpose_rows(q, rb, dest)
    }

    /// `out.len()` random OTs: `out[i] = (x_i^0, x_i^1)`; the receiver learns `x_i^{r_i}`.
    /// Each chunk is extended and hashed while its rows are in cache.
    pub fn send_random<C: FrameReceiver + ?Sized>(
        &mut self,
        ch: &mut C,
        out: &mut [[Block; 2]],
    ) -> Result<()> {
        let first = self.next_index;
        // Wiped if an error ends the batch; handed back to `self.rows` otherwise.
        let mut q = Zeroizing::new(std::mem::take(&mut self.rows));
        grow_wiping(&mut q, CHUNK.min(out.len()));
        q.resize(CHUNK.min(out.len()), Block::ZERO);
        let s = self.s;
        for (k, o) in out.chunks_mut(CHUNK).enumerate() {
            let q = &mut q[..o.len()];
            self.extend_chunk(ch, q)?;
            random_outputs(&self.aes, s, first + (k * CHUNK) as u64, q, o);
        }
        self.rows = std::mem::take(&mut *q);
        self.next_index += out.len() as u64;
        Ok(())
    }

    /// `out.len()` random OTs of which only the messages x_i^1 are computed:
    /// `out[i] = x_i^1 = TCCR(i, q_i ⊕ s)` where bit i of `select` is set (bit i at byte i/8,
    /// position i%8; every i if `select` is `None`) and `Block::ZERO` elsewhere. The x_i^0 are
    /// never computed, so a protocol that needs only some x_i^1 hashes only those: PSZ14
    /// §4.3's random garbled Bloom filter, whose sender hashes the rows where its own Bloom
    /// filter has a 1, and the GBF PSI whose sender masks its GBF with every x_i^1 (PSZ14
    /// §4.2, "Optimization": x_i^0 = 0). The OTs are extended chunk by chunk as the receiver's
    /// u columns arrive on `rx` (one frame per chunk of at most [`CHUNK`] OTs).
    ///
    /// Errors: `InvalidParam` if `select` has fewer than ⌈out.len()/8⌉ bytes; the channel's and
    /// `Malformed` for a frame of u columns of the wrong length.
    pub fn send_ones<C: FrameReceiver + ?Sized>(
        &mut self,
        rx: &mut C,
        select: Option<&[u8]>,
        out: &mut [Block],
    ) -> Result<()> {
        if let Some(sel) = select {
            check_packed_len(sel.len(), out.len())?;
        }
        let first = self.next_index;
        for (k, o) in out.chunks_mut(CHUNK).enumerate() {
            self.extend_chunk(rx, o)?;
            let base = first + (k * CHUNK) as u64;
            match select {
                None => hash_rows(&self.aes, base, self.s, o),
                Some(sel) => hash_selected(&self.aes, base, &sel[k * CHUNK / 8..], self.s, o),
            }
        }
        self.next_index += out.len() as u64;
        Ok(())
    }

    /// `out.len()` correlated OTs with correlation `delta`: `out[i] = x_i^0` random and the
    /// receiver learns `x_i^0 ⊕ r_i·delta`.
    pub fn send_correlated<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        delta: Block,
        out: &mut [Block],
    ) -> Result<()> {
        let mut pairs = Zeroizing::new(vec![[Block::ZERO; 2]; out.len()]);
        self.send_random(ch, &mut pairs)?;
        let y: Vec<Block> = pairs.iter().map(|[x0, x1]| *x0 ^ delta ^ *x1).collect();
        send_elements(ch, MSG_Y_VALUES, &block::blocks_to_bytes(&y), 16, CHUNK)?;
        for (o, [x0, _]) in out.iter_mut().zip(pairs.iter()) {
            *o = *x0;
        }
        Ok(())
    }

    /// Chosen-message OTs: the receiver learns `messages[i][r_i]`.
    pub fn send_chosen<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        messages: &[[Block; 2]],
    ) -> Result<()> {
        let mut pairs = Zeroizing::new(vec![[Block::ZERO; 2]; messages.len()]);
        self.send_random(ch, &mut pairs)?;
        let mut y = Vec::with_capacity(2 * messages.len());
        for ([m0, m1], [x0, x1]) in messages.iter().zip(pairs.iter()) {
            y.push(*m0 ^ *x0);
            y.push(*m1 ^ *x1);
        }
        send_elements(ch, MSG_Y_VALUES, &block::blocks_to_bytes(&y), 32, CHUNK)
    }
}

/// Transposes 128 columns of `rb` bytes into the rows `dest` (at most `8·rb` of them), straight
/// into `dest` when the chunk fills whole 128-row tiles.
fn transpose_rows(columns: &[u8], rb: usize, dest: &mut [Block]) -> Result<()> {
    if dest.len() == rb * 8 {
        return transpose_128xn_par(columns, rb, dest);
    }
    let mut all = Zeroizing::new(vec![Block::ZERO; rb * 8]);
    transpose_128xn_par(columns, rb, &mut all)?;
    let n = dest.len();
    dest.copy_from_slice(&all[..n]);
    Ok(())
}

/// Checks that packed bits cover `len` OTs.
fn check_packed_len(bytes: usize, len: usize) -> Result<()> {
    if bytes < len.div_ceil(8) {
        return Err(Error::InvalidParam {
            field: "choices",
            reason: format!("{bytes} bytes of packed bits for {len} OTs"),
        });
    }
    Ok(())
}

/// For every row i with bit i of `select` set: `rows[i] = TCCR(first + i, rows[i] ⊕ xor)`;
/// every other row becomes `Block::ZERO`. Spread over the current rayon pool, [`PAR_ROWS`]
/// rows per task (`select` has at least ⌈rows.len()/8⌉ bytes).
fn hash_selected(aes: &FixedKeyAes, first: u64, select: &[u8], xor: Block, rows: &mut [Block]) {
    let select = &select[..rows.len().div_ceil(8)];
    rows.par_chunks_mut(PAR_ROWS)
        .zip(select.par_chunks(PAR_ROWS / 8))
        .enumerate()
        .for_each_init(
            || (Vec::new(), Zeroizing::new(Vec::new())),
            |(picked, gathered), (p, (rows, select))| {
                let first = first + (p * PAR_ROWS) as u64;
                hash_selected_part(aes, first, select, xor, rows, picked, gathered);
            },
        );
}

/// [`hash_selected`] on one task's rows. The selected rows are gathered into `gathered` (the
/// AES pipeline needs consecutive blocks), hashed under their own OT index, and put back;
/// `picked` and `gathered` are scratch buffers the task reuses.
fn hash_selected_part(
    aes: &FixedKeyAes,
    first: u64,
    select: &[u8],
    xor: Block,
    rows: &mut [Block],
    picked: &mut Vec<u32>,
    gathered: &mut Vec<Block>,
) {
    picked.clear();
    gathered.clear();
    // The set bits, 64 at a time (no branch per row on a random bit).
    let n = rows.len();
    for (w, bytes) in select[..n.div_ceil(8)].chunks(8).enumerate() {
        let mut word = [0u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        let mut bits = u64::from_le_bytes(word);
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            if i >= n {
                break;
            }
            picked.push(i as u32);
            gathered.push(rows[i] ^ xor);
            bits &= bits - 1;
        }
    }
    rows.fill(Block::ZERO);
    aes.tccr_hash_with(gathered, |k| u128::from(first) + u128::from(picked[k]));
    for (&i, g) in picked.iter().zip(gathered.iter()) {
        rows[i as usize] = *g;
    }
    gathered.zeroize();
}

/// Random-OT outputs from the rows q_i: (TCCR(i, q_i), TCCR(i, q_i ⊕ s)).
pub(crate) fn random_outputs(
    aes: &FixedKeyAes,
    s: Block,
    first: u64,
    q: &[Block],
    out: &mut [[Block; 2]],
) {
    out.par_chunks_mut(PAR_ROWS / 2)
        .zip(q.par_chunks(PAR_ROWS / 2))
        .enumerate()
        .for_each(|(p, (out, q))| {
            for (o, q) in out.iter_mut().zip(q) {
                *o = [*q, *q ^ s];
            }
            aes.tccr_hash_pairs(first + (p * PAR_ROWS / 2) as u64, out);
        });
}

impl IknpReceiver {
    /// The TCCR hash of the outputs.
    pub(crate) fn aes(&self) -> &FixedKeyAes {
        &self.aes
    }

    /// The index of the next OT.
    pub(crate) fn next_index(&self) -> u64 {
        self.next_index
    }

    /// Runs the κ base OTs with `base` (as their sender) and returns the ready receiver.
    pub fn setup<B: BaseOtSender, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        Ok(IknpReceiver {
            prgs: seed_prg_pairs(base, ch, sid, KAPPA, rng)?,
            aes: session_aes(sid, "ot/iknp/tccr"),
            next_index: 0,
            columns: [Vec::new(), Vec::new()],
            #[cfg(test)]
            cheat: None,
        })
    }

    /// Sends the u columns for `choices` (one frame per chunk of at most [`CHUNK`] OTs) and
    /// writes the rows t_i into `rows` (one per choice); returns the first OT index.
    pub(crate) fn extend_into<C: FrameSender + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        rows: &mut [Block],
    ) -> Result<u64> {
        let first = self.next_index;
        for (chunk, dest) in choices.chunks(CHUNK).zip(rows.chunks_mut(CHUNK)) {
            let r = Zeroizing::new(pack_bits(chunk));
            self.extend_packed_chunk(ch, &r, dest)?;
        }
        self.next_index += choices.len() as u64;
        Ok(first)
    }

    /// Random OTs with packed choice bits (bit i at byte i/8, position i%8) of which only the
    /// outputs of choice 1 are computed: `out[i] = x_i^1 = TCCR(i, t_i)` where bit i of
    /// `choices` is set, `Block::ZERO` where it is not (the x_i^0 are never hashed: PSZ14 §4.3
    /// and Tab. 3, "m/2" calls to H). The counterpart of [`IknpSender::send_ones`]; the u
    /// columns go out on `tx`, one frame per chunk of at most [`CHUNK`] OTs.
    ///
    /// Errors: `InvalidParam` if `choices` has fewer than ⌈out.len()/8⌉ bytes; the channel's.
    pub fn receive_ones<C: FrameSender + ?Sized>(
        &mut self,
        tx: &mut C,
        choices: &[u8],
        out: &mut [Block],
    ) -> Result<()> {
        check_packed_len(choices.len(), out.len())?;
        let first = self.next_index;
        let mut r = Zeroizing::new(Vec::new());
        for (k, dest) in out.chunks_mut(CHUNK).enumerate() {
            let rb = row_bytes(dest.len());
            let bits = &choices[k * CHUNK / 8..];
            let bytes = dest.len().div_ceil(8);
            r.clear();
            r.extend_from_slice(&bits[..bytes]);
            // Bits past the last OT of the chunk are padding: zero.
            if dest.len() % 8 != 0 {
                r[bytes - 1] &= (1u8 << (dest.len() % 8)) - 1;
            }
            r.resize(rb, 0);
            self.extend_packed_chunk(tx, &r, dest)?;
            let base = first + (k * CHUNK) as u64;
            hash_selected(&self.aes, base, &r, Block::ZERO, dest);
        }
        self.next_index += out.len() as u64;
        Ok(())
    }

    /// Sends the u columns of one chunk of `dest.len()` (at most [`CHUNK`]) OTs with the packed
    /// choice bits `r` (`row_bytes(dest.len())` bytes) and writes the rows t_i into `dest`.
    /// Does not advance `next_index`.
    fn extend_packed_chunk<C: FrameSender + ?Sized>(
        &mut self,
        ch: &mut C,
        r: &[u8],
        dest: &mut [Block],
    ) -> Result<()> {
        #[cfg(test)]
        let cheat = self.cheat;
        {
            let rb = row_bytes(dest.len());
            #[cfg(test)]
            let r_cheat = {
                let mut rc = r.to_vec();
                if let Some((row, _)) = cheat {
                    rc[row / 8] ^= 1 << (row % 8);
                }
                rc
            };
            let [t, u] = &mut self.columns;
            grow_wiping(t, KAPPA * rb);
            grow_wiping(u, KAPPA * rb);
            t.resize(KAPPA * rb, 0);
            u.resize(KAPPA * rb, 0);
            // Each column comes from its own pair of PRGs: the columns are filled in parallel.
            self.prgs
                .par_iter_mut()
                .zip(t.par_chunks_exact_mut(rb))
                .zip(u.par_chunks_exact_mut(rb))
                .enumerate()
                .for_each(|(j, (([p0, p1], tj), uj))| {
                    p0.fill_bytes(tj);
                    p1.fill_bytes(uj);
                    #[cfg(test)]
                    let r: &[u8] = if cheat.is_some_and(|(_, cols)| j < cols) {
                        &r_cheat
                    } else {
                        r
                    };
                    #[cfg(not(test))]
                    let _ = j;
                    for ((a, b), c) in uj.iter_mut().zip(tj.iter()).zip(r.iter()) {
                        *a ^= b ^ c;
                    }
                });
            ch.send(MSG_U_COLUMNS, u)?;
            transpose_rows(t, rb, dest)?;
        }
        Ok(())
    }

    /// Random OTs: `out[i] = x_i^{choices[i]}`.
    pub fn receive_random<C: FrameSender + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        check_out_len(choices.len(), out.len())?;
        let first = self.extend_into(ch, choices, out)?;
        hash_rows(&self.aes, first, Block::ZERO, out);
        Ok(())
    }

    /// Correlated OTs: `out[i] = x_i^0 ⊕ choices[i]·delta`.
    pub fn receive_correlated<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        self.receive_random(ch, choices, out)?;
        let y = recv_blocks(ch, choices.len(), 1)?;
        for ((o, &c), y) in out.iter_mut().zip(choices).zip(y) {
            *o ^= y & Block::mask(c);
        }
        Ok(())
    }

    /// Chosen-message OTs: `out[i] = messages[i][choices[i]]` of the sender.
    pub fn receive_chosen<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        choices: &[bool],
        out: &mut [Block],
    ) -> Result<()> {
        self.receive_random(ch, choices, out)?;
        let y = recv_blocks(ch, choices.len(), 2)?;
        for (i, (o, &c)) in out.iter_mut().zip(choices).enumerate() {
            let m = Block::mask(c);
            *o ^= (y[2 * i + 1] & m) ^ (y[2 * i] & !m);
        }
        Ok(())
    }
}

/// Receives `m·per_ot` blocks.
fn recv_blocks<C: Channel + ?Sized>(ch: &mut C, m: usize, per_ot: usize) -> Result<Vec<Block>> {
    let mut reader = BulkReader::new(MSG_Y_VALUES, 16 * per_ot, m as u64);
    let mut out = Vec::with_capacity(m * per_ot);
    while let Some(frame) = reader.next_frame(ch)? {
        out.extend(
            block::blocks_from_bytes(&frame)
                .ok_or_else(|| Error::malformed(MSG_Y_VALUES, "not whole blocks"))?,
        );
    }
    Ok(out)
}
