//! The extension core shared by KK13 ([`super::kk13`]) and KKRT ([`super::kkrt`]): IKNP's
//! matrix with rows of `w` blocks (w·128 base OTs) instead of one, and the hash of such a row.
//!
//! With κ' = 128·w base OTs in reversed roles (the extension receiver R is the base-OT sender
//! with seeds (k_j^0, k_j^1), the extension sender S the base-OT receiver with a random choice
//! vector s ∈ {0,1}^κ'), each chunk of m ≤ [`CHUNK`] OTs runs:
//!
//! ```text
//! R: t^j = G(k_j^0), u^j = t^j ⊕ G(k_j^1) ⊕ C^j     (C^j: column j of the m×κ' matrix whose
//!                                                     row i is the codeword C_i; G = AES-CTR,
//!                                                     one stream per j, continued across chunks)
//! R → S: u^1..u^κ'                                  (one frame of κ'·⌈m/128⌉·16 bytes)
//! S: q^j = G(k_j^{s_j}) ⊕ s_j·u^j                   so that row q_i = t_i ⊕ (C_i ∧ s)
//! ```
//!
//! Both parties then hash rows with [`RowHash`]: R outputs H(i, t_i), and S can compute
//! H(i, q_i ⊕ (C ∧ s)) for any codeword C, which equals R's output exactly when C = C_i. What the
//! codewords are (Walsh-Hadamard for KK13, a pseudorandom code for KKRT) is the caller's.
//!
//! Buffers for one chunk's columns are kept between chunks and calls, so the steady state
//! allocates only the caller's rows.

use super::{CHUNK, grow_wiping, row_bytes, seed_prg_pairs, seed_prgs};
use crate::base::{BaseOtReceiver, BaseOtSender};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use blindjoin_core::prefix_hash::{HashScratch, PrefixHash};
use blindjoin_core::prg::AesPrg;
use blindjoin_core::transpose::transpose_128xn;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Columns per rayon task of an extension chunk (64 columns of a full chunk are 512 KiB of
/// AES output: enough work per task to pay for it).
const PAR_COLUMNS: usize = 64;

/// The most blocks per row [`RowHash`] and the cores accept (κ' = 1024).
pub(crate) const MAX_WIDTH: usize = 8;

/// H(i, x) for rows x of a fixed width w: SHA-256(D ‖ le64(i) ‖ x) truncated to 128 bits, where
/// D is the one-block prefix of [`PrefixHash`] under the label, the session id and w, and x is
/// the row's 16·w bytes, blocks in order, each little-endian.
///
/// Every input of one `RowHash` has the same length (8 + 16w bytes), so the plain
/// concatenation is an injective encoding; D separates labels, sessions and widths. Each row
/// costs ⌈(8 + 16w + 9)/64⌉ SHA-256 compressions after D (one for w = 2, two for w = 4), two
/// rows at a time with interleaved SHA-NI streams. The result is bit for bit
/// `Sha256::digest(D ‖ le64(i) ‖ x)[..16]` (tested).
#[derive(Clone)]
pub(crate) struct RowHash {
    h: PrefixHash,
    width: usize,
}

impl RowHash {
    /// The hash for rows of `width` blocks (1..=[`MAX_WIDTH`]) under `label` and `sid`.
    pub(crate) fn new(label: &str, sid: &[u8; 32], width: usize) -> Result<Self> {
        check_width(width)?;
        Ok(RowHash {
            h: PrefixHash::new(label, sid, width as u64, 8 + 16 * width),
            width,
        })
    }

    /// A scratch buffer for [`hash_with`](Self::hash_with) and
    /// [`hash_pair`](Self::hash_pair). It holds the last rows hashed until it is dropped (and
    /// wiped).
    pub(crate) fn scratch(&self) -> HashScratch {
        self.h.scratch()
    }

    /// Writes le64(index) ‖ row into lane `l` of `scratch`.
    #[inline]
    fn fill(&self, scratch: &mut HashScratch, l: usize, index: u64, row: &[Block]) {
        let lane = self.h.lane(scratch, l);
        lane[..8].copy_from_slice(&index.to_le_bytes());
        for (dst, b) in lane[8..].chunks_exact_mut(16).zip(row) {
            dst.copy_from_slice(&b.to_bytes());
        }
    }

    /// H(index, row) using `scratch` (from [`scratch`](Self::scratch) of this hash); `row` has
    /// the hash's width (only its first `width` blocks are read).
    #[inline]
    pub(crate) fn hash_with(&self, scratch: &mut HashScratch, index: u64, row: &[Block]) -> Block {
        self.fill(scratch, 0, index, row);
        first_block(&self.h.one_filled(scratch))
    }

    /// Two rows at once, their SHA-NI instruction streams interleaved
    /// (`blindjoin_core::sha256x`): `[H(i0, r0), H(i1, r1)]`.
    #[inline]
    pub(crate) fn hash_pair(
        &self,
        scratch: &mut HashScratch,
        index: [u64; 2],
        rows: [&[Block]; 2],
    ) -> [Block; 2] {
        self.fill(scratch, 0, index[0], rows[0]);
        self.fill(scratch, 1, index[1], rows[1]);
        let [a, b] = self.h.pair_filled(scratch);
        [first_block(&a), first_block(&b)]
    }

    /// `out[k] = H(index(k), rows[k·w..(k+1)·w])` for every k, two rows at a time.
    pub(crate) fn hash_indexed(
        &self,
        index: impl Fn(usize) -> u64,
        rows: &[Block],
        out: &mut [Block],
    ) {
        let w = self.width;
        let mut scratch = self.scratch();
        let (pairs, rest) = out.as_chunks_mut::<2>();
        for (p, o) in pairs.iter_mut().enumerate() {
            let k = 2 * p;
            *o = self.hash_pair(
                &mut scratch,
                [index(k), index(k + 1)],
                [&rows[k * w..(k + 1) * w], &rows[(k + 1) * w..(k + 2) * w]],
            );
        }
        if let Some(o) = rest.first_mut() {
            let k = 2 * pairs.len();
            *o = self.hash_with(&mut scratch, index(k), &rows[k * w..(k + 1) * w]);
        }
    }

    /// `out[k] = H(first + k, rows[k·w..(k+1)·w])`.
    pub(crate) fn hash_rows(&self, first: u64, rows: &[Block], out: &mut [Block]) {
        self.hash_indexed(|k| first + k as u64, rows, out);
    }

    /// H(index, row) (a fresh scratch buffer per call; batches use [`hash_rows`](Self::hash_rows)
    /// or [`hash_with`](Self::hash_with)).
    #[cfg(test)]
    pub(crate) fn hash(&self, index: u64, row: &[Block]) -> Block {
        self.hash_with(&mut self.scratch(), index, row)
    }
}

/// The first 128 bits of a digest, as a block of its bytes.
#[inline]
fn first_block(digest: &[u8; 32]) -> Block {
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    Block::from_bytes(out)
}

pub(crate) fn check_width(width: usize) -> Result<()> {
    if !(1..=MAX_WIDTH).contains(&width) {
        return Err(Error::InvalidParam {
            field: "width",
            reason: format!("{width} blocks per row, expected 1..={MAX_WIDTH}"),
        });
    }
    Ok(())
}

/// Transposes the 128·w columns (each `rb` bytes) in `cols` and appends the first `len` rows
/// (w blocks each) to `rows`. `tiles` is scratch space.
pub(crate) fn columns_to_rows(
    cols: &[u8],
    rb: usize,
    len: usize,
    width: usize,
    tiles: &mut Vec<Block>,
    rows: &mut Vec<Block>,
) -> Result<()> {
    let tile_len = rb * 8;
    grow_wiping(tiles, width * tile_len);
    // The tiles are scratch space kept by the core (which wipes them on drop): each call
    // overwrites them completely.
    tiles.resize(width * tile_len, Block::ZERO);
    for (g, tile) in tiles.chunks_exact_mut(tile_len).enumerate() {
        transpose_128xn(&cols[g * 128 * rb..(g + 1) * 128 * rb], rb, tile)?;
    }
    grow_wiping(rows, rows.len() + len * width);
    match width {
        2 => gather_rows::<2>(tiles, tile_len, len, rows),
        4 => gather_rows::<4>(tiles, tile_len, len, rows),
        _ => {
            let mut row = [Block::ZERO; MAX_WIDTH];
            for i in 0..len {
                for (g, r) in row.iter_mut().take(width).enumerate() {
                    *r = tiles[g * tile_len + i];
                }
                rows.extend_from_slice(&row[..width]);
            }
            row.zeroize();
        }
    }
    Ok(())
}

/// Appends rows `0..len` of W blocks each, block g of row i at `tiles[g·tile_len + i]`.
fn gather_rows<const W: usize>(
    tiles: &[Block],
    tile_len: usize,
    len: usize,
    rows: &mut Vec<Block>,
) {
    for i in 0..len {
        let row: [Block; W] = std::array::from_fn(|g| tiles[g * tile_len + i]);
        rows.extend_from_slice(&row);
    }
}

/// Writes the columns of the matrix whose rows are the codewords `codes` (w blocks each, at
/// most `8·rb` rows; missing rows are zero) into `cols` (128·w columns of `rb` bytes).
pub(crate) fn rows_to_columns(codes: &[Block], width: usize, rb: usize, cols: &mut [u8]) {
    // The dimensions are the core's own (checked there); an error here would be a bug.
    let r = blindjoin_core::transpose::rows_to_columns(codes, width, rb, cols);
    debug_assert!(r.is_ok(), "{r:?}");
}

/// The column PRG G of the core: AES-128 in counter mode ([`AesPrg`]) under 128-bit base-OT
/// keys, AES-256 ([`super::high::Aes256Prg`]) under the 256-bit keys of κ = 192 and 256.
pub(crate) trait ColumnPrg: Send {
    /// The next `out.len()` bytes of the stream.
    fn fill_bytes(&mut self, out: &mut [u8]);
}

impl ColumnPrg for AesPrg {
    fn fill_bytes(&mut self, out: &mut [u8]) {
        AesPrg::fill_bytes(self, out);
    }
}

/// The extension sender's side of the core after setup.
pub(crate) struct WideSender<P = AesPrg> {
    width: usize,
    /// s as w blocks.
    s: Vec<Block>,
    prgs: Vec<P>,
    next_index: u64,
    /// One chunk's q columns, reused.
    cols: Vec<u8>,
    tiles: Vec<Block>,
}

impl<P> Drop for WideSender<P> {
    fn drop(&mut self) {
        self.s.zeroize();
        self.cols.zeroize();
        self.tiles.zeroize();
    }
}

/// s and the buffers are wiped by `Drop`; the PRGs wipe their own keys.
impl<P: ZeroizeOnDrop> ZeroizeOnDrop for WideSender<P> {}

impl WideSender {
    /// Runs the 128·`width` base OTs as their receiver with a random s.
    pub(crate) fn setup<B: BaseOtReceiver, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        width: usize,
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        check_width(width)?;
        // Built before the base OTs so that an error there drops (and wipes) s.
        let mut sender = WideSender {
            width,
            s: (0..width).map(|_| Block::random(rng)).collect(),
            prgs: Vec::new(),
            next_index: 0,
            cols: Vec::new(),
            tiles: Vec::new(),
        };
        let choices: Zeroizing<Vec<bool>> = Zeroizing::new(
            (0..128 * width)
                .map(|j| sender.s[j / 128].bit(j % 128))
                .collect(),
        );
        sender.prgs = seed_prgs(base, ch, sid, &choices, rng)?;
        Ok(sender)
    }
}

impl<P: ColumnPrg> WideSender<P> {
    /// The core of a sender whose s (`width` blocks) and PRGs G(k_j^{s_j}) (one per bit of s)
    /// come from base OTs run by the caller.
    pub(crate) fn from_parts(s: Vec<Block>, prgs: Vec<P>) -> Result<Self> {
        let width = s.len();
        check_width(width)?;
        if prgs.len() != 128 * width {
            return Err(Error::InvalidParam {
                field: "base OT",
                reason: format!("{} PRGs for {} columns", prgs.len(), 128 * width),
            });
        }
        Ok(WideSender {
            width,
            s,
            prgs,
            next_index: 0,
            cols: Vec::new(),
            tiles: Vec::new(),
        })
    }

    /// The sender's secret s (w blocks).
    pub(crate) fn s(&self) -> &[Block] {
        &self.s
    }

    /// Receives the u columns of `m` OTs (one frame per chunk of ≤ [`CHUNK`], each exactly
    /// 128·w·row_bytes bytes, else `Err(Malformed)` naming `what`) and appends the rows q_i to
    /// `rows`. Returns the global index of the first OT.
    pub(crate) fn extend<C: FrameReceiver + ?Sized>(
        &mut self,
        ch: &mut C,
        m: usize,
        what: &'static str,
        rows: &mut Vec<Block>,
    ) -> Result<u64> {
        let first = self.next_index;
        let kp = 128 * self.width;
        grow_wiping(rows, rows.len() + m * self.width);
        let mut left = m;
        while left > 0 {
            let len = left.min(CHUNK);
            let rb = row_bytes(len);
            let u = ch.recv(what, kp * rb)?;
            if u.len() != kp * rb {
                return Err(Error::malformed(
                    what,
                    format!("{} bytes, {} expected", u.len(), kp * rb),
                ));
            }
            grow_wiping(&mut self.cols, kp * rb);
            self.cols.resize(kp * rb, 0);
            let s = &self.s;
            // The columns are independent: spread over the current rayon pool.
            self.cols
                .par_chunks_mut(rb * PAR_COLUMNS)
                .zip(u.par_chunks(rb * PAR_COLUMNS))
                .zip(self.prgs.par_chunks_mut(PAR_COLUMNS))
                .enumerate()
                .for_each(|(g, ((q, u), prgs))| {
                    for (k, ((qj, uj), prg)) in q
                        .chunks_exact_mut(rb)
                        .zip(u.chunks_exact(rb))
                        .zip(prgs)
                        .enumerate()
                    {
                        let j = g * PAR_COLUMNS + k;
                        prg.fill_bytes(qj);
                        // Constant time in s: XOR u^j under an all-ones or all-zero mask.
                        let mask = 0u8.wrapping_sub(u8::from(s[j / 128].bit(j % 128)));
                        qj.iter_mut().zip(uj).for_each(|(a, b)| *a ^= b & mask);
                    }
                });
            columns_to_rows(&self.cols, rb, len, self.width, &mut self.tiles, rows)?;
            left -= len;
        }
        self.next_index += m as u64;
        Ok(first)
    }
}

/// The extension receiver's side of the core after setup.
pub(crate) struct WideReceiver<P = AesPrg> {
    width: usize,
    prgs: Vec<[P; 2]>,
    next_index: u64,
    /// One chunk's t and u columns, reused.
    t: Vec<u8>,
    u: Vec<u8>,
    tiles: Vec<Block>,
}

impl<P> Drop for WideReceiver<P> {
    fn drop(&mut self) {
        self.t.zeroize();
        self.u.zeroize();
        self.tiles.zeroize();
    }
}

/// The buffers are wiped by `Drop`; the PRGs wipe their own keys.
impl<P: ZeroizeOnDrop> ZeroizeOnDrop for WideReceiver<P> {}

impl WideReceiver {
    /// Runs the 128·`width` base OTs as their sender.
    pub(crate) fn setup<B: BaseOtSender, C: Channel + ?Sized>(
        base: &mut B,
        ch: &mut C,
        sid: &[u8; 32],
        width: usize,
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        check_width(width)?;
        let prgs = seed_prg_pairs(base, ch, sid, 128 * width, rng)?;
        Ok(WideReceiver {
            width,
            prgs,
            next_index: 0,
            t: Vec::new(),
            u: Vec::new(),
            tiles: Vec::new(),
        })
    }
}

impl<P: ColumnPrg> WideReceiver<P> {
    /// The core of a receiver whose PRG pairs (G(k_j^0), G(k_j^1)), 128·w of them, come from
    /// base OTs run by the caller.
    pub(crate) fn from_parts(width: usize, prgs: Vec<[P; 2]>) -> Result<Self> {
        check_width(width)?;
        if prgs.len() != 128 * width {
            return Err(Error::InvalidParam {
                field: "base OT",
                reason: format!("{} PRG pairs for {} columns", prgs.len(), 128 * width),
            });
        }
        Ok(WideReceiver {
            width,
            prgs,
            next_index: 0,
            t: Vec::new(),
            u: Vec::new(),
            tiles: Vec::new(),
        })
    }

    /// Extends `m` OTs: for each chunk `[start, start + len)` of ≤ [`CHUNK`] OTs, `code(start,
    /// len, rb, cols)` must overwrite `cols` (128·w columns of `rb` bytes) with the columns of
    /// the chunk's codewords; the u columns are sent as message `what` and the rows t_i
    /// appended to `rows`. Returns the global index of the first OT.
    pub(crate) fn extend<C: FrameSender + ?Sized>(
        &mut self,
        ch: &mut C,
        m: usize,
        what: &'static str,
        mut code: impl FnMut(usize, usize, usize, &mut [u8]),
        rows: &mut Vec<Block>,
    ) -> Result<u64> {
        let first = self.next_index;
        let kp = 128 * self.width;
        grow_wiping(rows, rows.len() + m * self.width);
        let mut start = 0;
        while start < m {
            let len = (m - start).min(CHUNK);
            let rb = row_bytes(len);
            grow_wiping(&mut self.t, kp * rb);
            grow_wiping(&mut self.u, kp * rb);
            self.t.resize(kp * rb, 0);
            self.u.resize(kp * rb, 0);
            code(start, len, rb, &mut self.u);
            // The columns are independent: spread over the current rayon pool, each task with
            // one column of G(k_j^1) as scratch (wiped when the task ends).
            self.t
                .par_chunks_mut(rb * PAR_COLUMNS)
                .zip(self.u.par_chunks_mut(rb * PAR_COLUMNS))
                .zip(self.prgs.par_chunks_mut(PAR_COLUMNS))
                .for_each_init(
                    || Zeroizing::new(vec![0u8; rb]),
                    |scratch, ((t, u), prgs)| {
                        for ((tj, uj), [p0, p1]) in
                            t.chunks_exact_mut(rb).zip(u.chunks_exact_mut(rb)).zip(prgs)
                        {
                            p0.fill_bytes(tj);
                            p1.fill_bytes(scratch);
                            for ((a, b), c) in uj.iter_mut().zip(tj.iter()).zip(scratch.iter()) {
                                *a ^= b ^ c;
                            }
                        }
                    },
                );
            ch.send(what, &self.u)?;
            columns_to_rows(&self.t, rb, len, self.width, &mut self.tiles, rows)?;
            start += len;
        }
        self.next_index += m as u64;
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn the_cores_zeroize_on_drop() {
        fn assert_zod<T: zeroize::ZeroizeOnDrop>() {}
        assert_zod::<WideSender>();
        assert_zod::<WideReceiver>();
    }

    #[test]
    fn row_hash_is_sha256_of_the_documented_input() {
        let sid = [7u8; 32];
        for w in 1..=MAX_WIDTH {
            let h = RowHash::new("test/label", &sid, w).unwrap();
            let row: Vec<Block> = (0..w as u128)
                .map(|k| Block(k * 0x0123_4567_89ab_cdef_0011_2233_4455_6677 + 1))
                .collect();
            for index in [0u64, 1, 0xdead_beef_0000_0001] {
                let mut msg = PrefixHash::prefix("test/label", &sid, w as u64).to_vec();
                msg.extend_from_slice(&index.to_le_bytes());
                for b in &row {
                    msg.extend_from_slice(&b.to_bytes());
                }
                let d = Sha256::digest(&msg);
                let mut want = [0u8; 16];
                want.copy_from_slice(&d[..16]);
                assert_eq!(h.hash(index, &row), Block::from_bytes(want), "w = {w}");
            }
        }
    }

    #[test]
    fn hash_rows_pairs_agree_with_single_rows() {
        for w in [1usize, 2, 4, 8] {
            let h = RowHash::new("pairs", &[2; 32], w).unwrap();
            for n in [0usize, 1, 2, 5] {
                let rows: Vec<Block> = (0..(n * w) as u128).map(|k| Block(k * 77 + 3)).collect();
                let mut out = vec![Block::ZERO; n];
                h.hash_rows(10, &rows, &mut out);
                for (k, o) in out.iter().enumerate() {
                    assert_eq!(*o, h.hash(10 + k as u64, &rows[k * w..(k + 1) * w]));
                }
            }
        }
    }

    #[test]
    fn row_hash_separates_labels_sessions_and_widths() {
        let row = [Block(5), Block(6)];
        let a = RowHash::new("a", &[0; 32], 2).unwrap().hash(0, &row);
        assert_ne!(a, RowHash::new("b", &[0; 32], 2).unwrap().hash(0, &row));
        assert_ne!(a, RowHash::new("a", &[1; 32], 2).unwrap().hash(0, &row));
        assert_ne!(a, RowHash::new("a", &[0; 32], 2).unwrap().hash(1, &row));
        assert!(RowHash::new("a", &[0; 32], 0).is_err());
        assert!(RowHash::new("a", &[0; 32], MAX_WIDTH + 1).is_err());
    }

    #[test]
    fn rows_to_columns_inverts_columns_to_rows() {
        for (width, len) in [(1usize, 1usize), (2, 127), (4, 128), (4, 300), (5, 129)] {
            let rb = row_bytes(len);
            let codes: Vec<Block> = (0..(len * width) as u128)
                .map(|k| Block(k.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835) ^ k))
                .collect();
            let mut cols = vec![0u8; 128 * width * rb];
            rows_to_columns(&codes, width, rb, &mut cols);
            // Bit i of column j is bit j of row i.
            for i in [0, len / 2, len - 1] {
                for j in [0, 1, 127, 128 * width - 1] {
                    let bit = (cols[j * rb + i / 8] >> (i % 8)) & 1;
                    assert_eq!(bit == 1, codes[i * width + j / 128].bit(j % 128));
                }
            }
            let (mut tiles, mut rows) = (Vec::new(), Vec::new());
            columns_to_rows(&cols, rb, len, width, &mut tiles, &mut rows).unwrap();
            assert_eq!(rows, codes);
        }
    }
}
