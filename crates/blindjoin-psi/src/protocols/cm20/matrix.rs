//! The column-block machinery both parties share: which columns are processed together, the
//! gather kernel that reads one bit per item and column, the 128-column slabs of gathered bits
//! and their transposition into per-item rows, and H2 over those rows.

use super::{Params, Prf};
use crate::RunOptions;
use blindjoin_core::cache::prefetch;
use blindjoin_core::prefix_hash::PrefixHash;
use blindjoin_core::transpose::transpose_128xn;
use blindjoin_core::{Block, Result};
use rayon::prelude::*;
use std::ops::Range;
use zeroize::Zeroize;

/// Items per inner chunk of [`gather`]: their F blocks (32 KiB) stay in L1 while every column
/// of the span reads them. A multiple of 64 (one output word per 64 items).
const ITEM_CHUNK: usize = 2048;

/// Column state (bytes) one span may keep: the columns of a span are read at random positions
/// for every item, so together they should fit the L2 cache.
const SPAN_BYTES: usize = 768 << 10;

/// Items per rayon task in [`tags`].
const PAR_ITEMS: usize = 1 << 12;

/// A column whose bit at a row index can be read (and, for the receiver, whose D bit is
/// cleared at the same time).
pub(crate) trait Column: Send {
    /// The bit at row `idx` (< m), as 0 or 1.
    fn read(&mut self, idx: usize) -> u64;
}

/// Consecutive columns processed together: within one AES block of F and one 128-column slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    /// The first column.
    pub first: usize,
    /// Columns in the span.
    pub len: usize,
}

/// Columns per span for columns of `column_mem` bytes of state each: as many as fit
/// [`SPAN_BYTES`], at least 1, at most q.
pub(crate) fn span_len(p: &Params, column_mem: usize) -> usize {
    (SPAN_BYTES / column_mem.max(1)).clamp(1, p.per_block)
}

/// The spans of all w columns, in order, of at most `max_len` columns each.
pub(crate) fn spans(p: &Params, max_len: usize) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for j in 0..p.w {
        match out.last_mut() {
            Some(s) if j % p.per_block != 0 && j % 128 != 0 && s.len < max_len => s.len += 1,
            _ => out.push(Span { first: j, len: 1 }),
        }
    }
    out
}

/// Groups spans into batches of at most `per_batch` spans that never cross a slab; returns
/// index ranges into `spans`.
fn batches(spans: &[Span], per_batch: usize) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        match out.last_mut() {
            Some(r) if r.len() < per_batch && spans[r.start].first / 128 == s.first / 128 => {
                r.end = i + 1;
            }
            _ => out.push(i..i + 1),
        }
    }
    out
}

/// Spans per batch: two per thread, so that every thread has work while spans differ in size.
pub(crate) fn spans_per_batch() -> usize {
    2 * rayon::current_num_threads().max(1)
}

/// The most columns of `column_mem` bytes one span holds.
pub(crate) fn span_max(p: &Params, column_mem: usize) -> usize {
    spans(p, span_len(p, column_mem))
        .iter()
        .map(|s| s.len)
        .max()
        .unwrap_or(1)
}

/// Runs all w columns for `n` items, span by span, and returns the gathered bits as slabs of
/// 128 columns (block i of slab s = item i's bits of columns 128s…128s+127).
///
/// Spans hold columns of `column_mem` bytes of state each; a batch of at most `per_batch`
/// spans ([`spans_per_batch`], or fewer to bound memory) runs at a time, one slot (made by
/// `slot(span_max)`, reused from batch to batch) per span. For each batch,
/// `prepare` sees every slot and its span in order on the calling thread (the sender takes the
/// Δ frames here), `run` fills the span's rows in parallel (bit i of `rows[k]` = the party's
/// bit of column `span.first + k` at item i's index), and `finish` sees them in order again
/// (the receiver sends its Δ columns here). Reports progress as phase "matrix".
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive<S: Send>(
    p: &Params,
    n: usize,
    column_mem: usize,
    per_batch: usize,
    slot: impl Fn(usize) -> S,
    mut prepare: impl FnMut(&mut S, Span) -> Result<()>,
    run: impl Fn(&mut S, Span, &mut [&mut [u8]]) + Sync,
    mut finish: impl FnMut(&mut S, Span) -> Result<()>,
    opts: &RunOptions,
) -> Result<Vec<Vec<Block>>> {
    let spans = spans(p, span_len(p, column_mem));
    let per_batch = per_batch.max(1);
    let span_max = spans.iter().map(|s| s.len).max().unwrap_or(1);
    let mut slots: Vec<S> = (0..per_batch).map(|_| slot(span_max)).collect();
    let mut slabs = Vec::with_capacity(p.slabs());
    let mut slab = Slab::new(n);
    for batch in batches(&spans, per_batch) {
        let batch = &spans[batch];
        let (first, last) = (batch[0].first, batch[batch.len() - 1]);
        let slab_first = first / 128 * 128;
        if first == slab_first && first > 0 {
            let full = std::mem::replace(&mut slab, Slab::new(n));
            slabs.push(full.transpose()?);
        }
        for (slot, span) in slots.iter_mut().zip(batch) {
            prepare(slot, *span)?;
        }
        let rows = slab.rows(first - slab_first..last.first + last.len - slab_first);
        let rows = split_rows(rows, batch);
        slots
            .par_iter_mut()
            .zip(batch.par_iter())
            .zip(rows.into_par_iter())
            .for_each(|((slot, span), mut rows)| run(slot, *span, &mut rows));
        for (slot, span) in slots.iter_mut().zip(batch) {
            finish(slot, *span)?;
        }
        opts.report("matrix", (last.first + last.len) as u64, p.w as u64);
    }
    slabs.push(slab.transpose()?);
    Ok(slabs)
}

/// For every item i (inputs `z`) and column `first + k`, bit i of `rows[k]` =
/// `cols[k].read(v_{first+k}(item i))`, where v is F's index of that column. The span must lie
/// in one AES block of F; `rows[k]` must hold at least ⌈|z|/64⌉·8 bytes.
pub(crate) fn gather<C: Column>(
    p: &Params,
    prf: &Prf,
    z: &[Block],
    first: usize,
    cols: &mut [C],
    rows: &mut [&mut [u8]],
    buf: &mut Vec<Block>,
) {
    let (block, _) = p.locate(first);
    let mask = p.m - 1;
    buf.resize(ITEM_CHUNK, Block::ZERO);
    for (c, zc) in z.chunks(ITEM_CHUNK).enumerate() {
        let v = &mut buf[..zc.len()];
        prf.block_into(block, zc, v);
        // The next chunk's inputs, fetched from memory while this chunk's columns are read
        // (otherwise every pass stalls on them: z is read once per pass, 16 bytes per item).
        let next = z.get((c + 1) * ITEM_CHUNK..).unwrap_or(&[]);
        let next = &next[..next.len().min(ITEM_CHUNK)];
        let at = c * ITEM_CHUNK / 8;
        for (k, (col, row)) in cols.iter_mut().zip(rows.iter_mut()).enumerate() {
            let (_, shift) = p.locate(first + k);
            let out = &mut row[at..];
            let pf = if k == 0 { next } else { &[] };
            // The index lies in the low half of the block, the high half, or across both: one
            // loop for each, so that an index costs a load, a shift and a mask.
            if shift + p.log_m <= 64 {
                read_column(col, v, out, pf, |x| (x.0 as u64 >> shift) as usize & mask);
            } else if shift >= 64 {
                let s = shift - 64;
                read_column(col, v, out, pf, |x| {
                    ((x.0 >> 64) as u64 >> s) as usize & mask
                });
            } else {
                read_column(col, v, out, pf, |x| (x.0 >> shift) as usize & mask);
            }
        }
    }
    buf.zeroize();
}

/// Bit i of `out` (8 bytes per 64 items) = `col.read(index(v[i]))`; prefetches `next` along
/// the way.
#[inline(always)]
fn read_column<C: Column>(
    col: &mut C,
    v: &[Block],
    out: &mut [u8],
    next: &[Block],
    index: impl Fn(&Block) -> usize,
) {
    for (w, (word, vs)) in out.chunks_exact_mut(8).zip(v.chunks(64)).enumerate() {
        // 64 blocks of the next chunk, 16 cache lines.
        for line in next.get(64 * w..).unwrap_or(&[]).iter().take(64).step_by(4) {
            prefetch(line);
        }
        // Item i's bit ends at bit i: shift in from the last item down (one shift and one OR
        // per item, no variable shift).
        let mut acc = 0u64;
        for x in vs.iter().rev() {
            acc = (acc << 1) | col.read(index(x));
        }
        word.copy_from_slice(&acc.to_le_bytes());
    }
}

/// The gathered bits of one 128-column slab: 128 rows (columns) of `row_bytes` bytes (items).
struct Slab {
    bits: Vec<u8>,
    row_bytes: usize,
}

impl Slab {
    /// An all-zero slab for `n` items (rows padded to a multiple of 128 items, at least 128).
    pub(crate) fn new(n: usize) -> Slab {
        let row_bytes = n.div_ceil(128).max(1) * 16;
        Slab {
            bits: vec![0u8; 128 * row_bytes],
            row_bytes,
        }
    }

    /// The rows of columns `cols` (slab-relative, < 128).
    pub(crate) fn rows(&mut self, cols: Range<usize>) -> Vec<&mut [u8]> {
        self.bits
            .chunks_exact_mut(self.row_bytes)
            .skip(cols.start)
            .take(cols.len())
            .collect()
    }

    /// The per-item rows: block i holds item i's bits of this slab's 128 columns.
    pub(crate) fn transpose(mut self) -> Result<Vec<Block>> {
        let mut out = vec![Block::ZERO; self.row_bytes * 8];
        transpose_128xn(&self.bits, self.row_bytes, &mut out)?;
        self.bits.zeroize();
        Ok(out)
    }
}

/// Splits the rows of a batch among its spans: `rows` are the rows of the batch's columns in
/// order.
fn split_rows<'a>(mut rows: Vec<&'a mut [u8]>, spans: &[Span]) -> Vec<Vec<&'a mut [u8]>> {
    let mut out = Vec::with_capacity(spans.len());
    for s in spans.iter().rev() {
        let at = rows.len().saturating_sub(s.len);
        out.push(rows.split_off(at));
    }
    out.reverse();
    out
}

/// H2 of the first `n` items' rows (`slabs[s][i]` = item i's bits of columns 128s..128s+127),
/// truncated to ℓ2 bytes, into `out` (n·ℓ2 bytes), in parallel.
pub(crate) fn tags(p: &Params, h2: &PrefixHash, slabs: &[Vec<Block>], n: usize, out: &mut [u8]) {
    let (tag_len, row_bytes) = (p.tag_len, p.row_bytes());
    out.par_chunks_mut(PAR_ITEMS * tag_len)
        .enumerate()
        .for_each(|(c, out)| {
            let mut scratch = h2.scratch();
            let first = c * PAR_ITEMS;
            let count = out.len() / tag_len;
            let fill = |lane: &mut [u8], i: usize| {
                for (s, slab) in slabs.iter().enumerate() {
                    let lo = 16 * s;
                    let hi = (lo + 16).min(row_bytes);
                    lane[lo..hi].copy_from_slice(&slab[i].to_bytes()[..hi - lo]);
                }
            };
            let mut k = 0;
            while k + 1 < count {
                fill(h2.lane(&mut scratch, 0), first + k);
                fill(h2.lane(&mut scratch, 1), first + k + 1);
                let [a, b] = h2.pair_filled(&scratch);
                out[k * tag_len..(k + 1) * tag_len].copy_from_slice(&a[..tag_len]);
                out[(k + 1) * tag_len..(k + 2) * tag_len].copy_from_slice(&b[..tag_len]);
                k += 2;
            }
            if k < count {
                fill(h2.lane(&mut scratch, 0), first + k);
                let a = h2.one_filled(&scratch);
                out[k * tag_len..(k + 1) * tag_len].copy_from_slice(&a[..tag_len]);
            }
        });
    debug_assert_eq!(out.len(), n * tag_len);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn spans_stay_in_one_prf_block_and_one_slab() {
        let p = Params::new(128, 40, 1 << 20, 1 << 20).unwrap();
        for max in [1, 3, 6] {
            let s = spans(&p, max);
            assert_eq!(s.iter().map(|s| s.len).sum::<usize>(), p.w);
            let mut next = 0;
            for s in &s {
                assert_eq!(s.first, next);
                next += s.len;
                assert!(s.len <= max);
                let last = s.first + s.len - 1;
                assert_eq!(s.first / p.per_block, last / p.per_block);
                assert_eq!(s.first / 128, last / 128);
            }
            for b in batches(&s, 4) {
                assert!(b.len() <= 4);
                let (a, z) = (&s[b.start], &s[b.end - 1]);
                assert_eq!(a.first / 128, (z.first + z.len - 1) / 128);
            }
        }
        // 768 KiB of state: 3 interleaved receiver columns or 6 sender columns at m = 2^20.
        assert_eq!(span_len(&p, p.m / 4), 3);
        assert_eq!(span_len(&p, p.m / 8), 6);
    }

    struct Plain(Vec<u64>);

    impl Column for Plain {
        fn read(&mut self, idx: usize) -> u64 {
            (self.0[idx / 64] >> (idx % 64)) & 1
        }
    }

    #[test]
    fn gather_reads_the_prf_indices_and_transposes_into_rows() {
        // 300 items, m = 512 (L = 9, q = 14): gather every column and compare each item's row
        // with a direct evaluation.
        let p = Params::new(128, 40, 300, 300).unwrap();
        assert_eq!((p.m, p.per_block), (512, 14));
        let prf = Prf::new(&[1u8; 16], p.prf_blocks);
        let z: Vec<Block> = (0..300u128)
            .map(|i| Block(i * 0x9e37_79b9_7f4a_7c15))
            .collect();
        let columns: Vec<Vec<u64>> = (0..p.w)
            .map(|j| {
                (0..p.m / 64)
                    .map(|k| (j * 31 + k * 7) as u64 * 0x2545_f491)
                    .collect()
            })
            .collect();
        let mut slabs = Vec::new();
        let all = spans(&p, 5);
        let mut buf = Vec::new();
        for s in 0..p.slabs() {
            let mut slab = Slab::new(z.len());
            for span in all.iter().filter(|sp| sp.first / 128 == s) {
                let mut cols: Vec<Plain> = (span.first..span.first + span.len)
                    .map(|j| Plain(columns[j].clone()))
                    .collect();
                let off = span.first % 128;
                let mut rows = slab.rows(off..off + span.len);
                gather(&p, &prf, &z, span.first, &mut cols, &mut rows, &mut buf);
            }
            slabs.push(slab.transpose().unwrap());
        }
        for (i, zi) in z.iter().enumerate() {
            for j in 0..p.w {
                let (b, shift) = p.locate(j);
                let mut v = [Block::ZERO];
                prf.block_into(b, &[*zi], &mut v);
                let idx = (v[0].0 >> shift) as usize & (p.m - 1);
                let want = (columns[j][idx / 64] >> (idx % 64)) & 1 == 1;
                assert_eq!(slabs[j / 128][i].bit(j % 128), want, "item {i} column {j}");
            }
            // Columns past w stay 0.
            if !p.w.is_multiple_of(128) {
                assert_eq!(slabs[p.slabs() - 1][i].0 >> (p.w % 128), 0);
            }
        }
    }
}
