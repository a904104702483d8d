//! Bit-matrix transposition for OT extension (IKNP03 §4; PSZ App. C).
//!
//! IKNP's receiver builds a matrix of 128 rows (one per base OT) and `n` columns (one per
//! extended OT) and both parties need its columns as 128-bit [`Block`]s: [`transpose_128xn`]
//! does that by 128×128 tiles, each transposed by [`transpose128`].
//!
//! Bit conventions: bit `j` of a block is `(b.0 >> j) & 1` (see [`crate::block`]); bit `j` of a
//! byte row is bit `j % 8` of byte `j / 8`. With these, the two agree: a row of 16 bytes is the
//! block `Block::from_bytes(row)`.
//!
//! # Implementations (chosen at run time, detection cached by `cpufeatures`)
//!
//! | [`TransposeImpl`] | CPU features | method |
//! |---|---|---|
//! | `Avx512Gfni` | AVX-512 F/BW/VBMI + GFNI | 16×16 byte transposes by `vpunpck*`, a `vpermb` that groups 8 rows per 64-bit word, one `vgf2p8affineqb` per register to transpose all 8×8 bit blocks, and a `vpermt2b` that lays out the output rows |
//! | `Avx2` | AVX2 | 16×16 byte transposes in both 128-bit lanes (32 rows), then `vpmovmskb` + `vpaddb` ×8 per register (32 bits per movemask) |
//! | `Sse2` | SSE2 (every x86-64) | the same with 16 rows per `pmovmskb`, as libOTe's `sse_transpose128` |
//! | `Portable` | none | Eklundh's recursive block swap on `u128` rows (7 rounds of shift/mask/XOR) |
//!
//! Every implementation is tested against a naive bit-by-bit transpose; the benchmark
//! `cargo bench -p blindjoin-core --bench ot_primitives` times each one available.
//!
//! # Memory
//!
//! Rows longer than 256 bytes are gathered 256 bytes at a time into a buffer (with the next
//! pass prefetched) before their tiles are transposed: rows a power of two apart share one
//! cache set, and reading each tile's 16 bytes per row straight from `input` would evict every
//! line before the next tile uses it. Even so, a matrix far larger than the L2 cache runs at
//! memory speed, several times slower per column than one that fits: callers should transpose
//! in chunks of about 2^16 columns (1 MiB) and consume each chunk while it is in cache.

use crate::block::Block;
use crate::error::{Error, Result};
use zeroize::Zeroize;

/// One implementation of the 128×128 transpose. [`TransposeImpl::detect`] picks the fastest
/// that the CPU supports; the others exist for testing and benchmarking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransposeImpl {
    /// Portable Rust (Eklundh's algorithm on `u128` rows).
    Portable,
    /// x86-64 SSE2, 16-byte `pmovmskb`.
    Sse2,
    /// x86-64 AVX2, 32-byte `vpmovmskb`.
    Avx2,
    /// x86-64 AVX-512 (F, BW, VBMI) with GFNI's `vgf2p8affineqb` for the 8×8 bit blocks.
    Avx512Gfni,
}

#[cfg(target_arch = "x86_64")]
cpufeatures::new!(cpuid_avx2, "avx2");
#[cfg(target_arch = "x86_64")]
cpufeatures::new!(
    cpuid_avx512gfni,
    "avx512f",
    "avx512bw",
    "avx512vbmi",
    "gfni"
);

impl TransposeImpl {
    /// Every implementation, slowest first.
    pub const ALL: [TransposeImpl; 4] = [
        TransposeImpl::Portable,
        TransposeImpl::Sse2,
        TransposeImpl::Avx2,
        TransposeImpl::Avx512Gfni,
    ];

    /// The fastest implementation this CPU supports (CPU features are detected once and
    /// cached).
    #[inline]
    pub fn detect() -> TransposeImpl {
        #[cfg(target_arch = "x86_64")]
        {
            if cpuid_avx512gfni::get() {
                return TransposeImpl::Avx512Gfni;
            }
            if cpuid_avx2::get() {
                return TransposeImpl::Avx2;
            }
            TransposeImpl::Sse2
        }
        #[cfg(not(target_arch = "x86_64"))]
        TransposeImpl::Portable
    }

    /// Whether this CPU can run the implementation.
    pub fn is_available(self) -> bool {
        match self {
            TransposeImpl::Portable => true,
            #[cfg(target_arch = "x86_64")]
            TransposeImpl::Sse2 => true,
            #[cfg(target_arch = "x86_64")]
            TransposeImpl::Avx2 => cpuid_avx2::get(),
            #[cfg(target_arch = "x86_64")]
            TransposeImpl::Avx512Gfni => cpuid_avx512gfni::get(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// A short name for reports ("portable", "sse2", "avx2", "avx512-gfni").
    pub fn name(self) -> &'static str {
        match self {
            TransposeImpl::Portable => "portable",
            TransposeImpl::Sse2 => "sse2",
            TransposeImpl::Avx2 => "avx2",
            TransposeImpl::Avx512Gfni => "avx512-gfni",
        }
    }

    fn check(self) -> Result<()> {
        if self.is_available() {
            Ok(())
        } else {
            Err(Error::InvalidParam {
                field: "transpose implementation",
                reason: format!("this CPU lacks the features of `{}`", self.name()),
            })
        }
    }
}

/// Transposes a 128×128 bit matrix in place: afterwards bit j of `m[i]` is the old bit i of
/// `m[j]`. Uses the fastest implementation of [`TransposeImpl::detect`].
#[inline]
pub fn transpose128(m: &mut [Block; 128]) {
    let imp = TransposeImpl::detect();
    let p = m.as_mut_ptr();
    // SAFETY: `imp` is available (it was detected). The source is the 128 rows of `m` (16
    // bytes each, stride 16) and the destination the same 128 blocks: `p` is valid for reads
    // and writes of all of them, and every tile function reads all of its source before it
    // writes, so the overlap is fine. Both pointers derive from the one `&mut m`.
    unsafe { tile(imp, p.cast::<u8>().cast_const(), 16, p) }
}

/// [`transpose128`] with a chosen implementation; `Err(InvalidParam)` if this CPU cannot run it.
pub fn transpose128_with(imp: TransposeImpl, m: &mut [Block; 128]) -> Result<()> {
    imp.check()?;
    let p = m.as_mut_ptr();
    // SAFETY: as in `transpose128`; `imp` was checked to be available just above.
    unsafe { tile(imp, p.cast::<u8>().cast_const(), 16, p) };
    Ok(())
}

/// The IKNP transpose: `input` holds 128 rows of `row_bytes` bytes each (row-major, row i at
/// `input[i*row_bytes..]`); bit j of row i is `(input[i*row_bytes + j/8] >> (j%8)) & 1`.
/// Writes `row_bytes*8` blocks to `out`: bit i of `out[j]` = bit j of row i.
///
/// # Errors
///
/// [`Error::InvalidParam`] if `row_bytes` is not a multiple of 16 (128 columns per tile), if
/// `input.len() != 128 * row_bytes`, or if `out.len() != 8 * row_bytes`. `row_bytes = 0` is
/// valid and writes nothing.
pub fn transpose_128xn(input: &[u8], row_bytes: usize, out: &mut [Block]) -> Result<()> {
    transpose_128xn_with(TransposeImpl::detect(), input, row_bytes, out)
}

/// [`transpose_128xn`] with a chosen implementation; also `Err(InvalidParam)` if this CPU
/// cannot run it.
pub fn transpose_128xn_with(
    imp: TransposeImpl,
    input: &[u8],
    row_bytes: usize,
    out: &mut [Block],
) -> Result<()> {
    imp.check()?;
    check_dims(input, row_bytes, out)?;
    let (tiles, _) = out.as_chunks_mut::<128>();
    if row_bytes <= SPAN {
        // SAFETY: `imp` is available (checked above); `input` holds exactly 128 rows of
        // `row_bytes` bytes (checked above), and `tiles` has `row_bytes / 16` tiles.
        unsafe { tiles_from_rows(imp, input, row_bytes, tiles) };
        return Ok(());
    }
    let mut buf = vec![0u8; 128 * STRIDE];
    for (s, tiles) in tiles.chunks_mut(SPAN / 16).enumerate() {
        // SAFETY: `imp` is available and the dimensions are consistent (checked above).
        unsafe { span_tiles(imp, input, row_bytes, s * SPAN, tiles, &mut buf) };
    }
    Ok(())
}

/// The columns of a matrix given by its rows of `width` blocks (the inverse layout of
/// [`transpose_128xn`], as an OT-extension receiver turns its codewords into columns):
/// `rows` holds r ≤ 8·`row_bytes` rows, row i at blocks `i·width..(i + 1)·width` (rows from r
/// on are zero); writes 128·`width` columns of `row_bytes` bytes into `cols`, bit i of column j
/// being bit j of row i. Full tiles of 128 rows are read in place (stride `16·width` bytes),
/// the last partial one through a buffer.
///
/// # Errors
///
/// [`Error::InvalidParam`] if `row_bytes` is not a multiple of 16, `width` is 0,
/// `rows.len()` is not a multiple of `width` or exceeds `8·row_bytes·width` blocks, or
/// `cols.len() != 128·width·row_bytes`.
pub fn rows_to_columns(
    rows: &[Block],
    width: usize,
    row_bytes: usize,
    cols: &mut [u8],
) -> Result<()> {
    let bad = |reason: String| {
        Err(Error::InvalidParam {
            field: "transpose dimensions",
            reason,
        })
    };
    if !row_bytes.is_multiple_of(16) || width == 0 {
        return bad(format!("{row_bytes} bytes per column, width {width}"));
    }
    if !rows.len().is_multiple_of(width) || rows.len() > 8 * row_bytes * width {
        return bad(format!(
            "{} blocks for width {width} and {row_bytes} bytes per column",
            rows.len()
        ));
    }
    if cols.len() != 128 * width * row_bytes {
        return bad(format!(
            "{} column bytes, {} expected",
            cols.len(),
            128 * width * row_bytes
        ));
    }
    let imp = TransposeImpl::detect();
    let r = rows.len() / width;
    let mut out = [Block::ZERO; 128];
    let mut partial = [Block::ZERO; 128];
    for t in 0..row_bytes / 16 {
        for g in 0..width {
            if (t + 1) * 128 <= r {
                // SAFETY: `imp` is available (detected). Row i of the tile is block
                // `(128t + i)·width + g` of `rows`, 16·width bytes after row i − 1: every one
                // of the 128 rows is inside `rows` (128(t + 1) ≤ r). `out` is a distinct local.
                unsafe {
                    tile(
                        imp,
                        rows.as_ptr().add(128 * t * width + g).cast::<u8>(),
                        16 * width,
                        out.as_mut_ptr(),
                    )
                };
            } else {
                for (i, p) in partial.iter_mut().enumerate() {
                    let row = 128 * t + i;
                    *p = if row < r {
                        rows[row * width + g]
                    } else {
                        Block::ZERO
                    };
                }
                // SAFETY: `imp` is available; the source is the 128 blocks of `partial`
                // (stride 16) and the destination the distinct local `out`.
                unsafe { tile(imp, partial.as_ptr().cast::<u8>(), 16, out.as_mut_ptr()) };
            }
            for (j, b) in out.iter().enumerate() {
                let at = (g * 128 + j) * row_bytes + 16 * t;
                cols[at..at + 16].copy_from_slice(&b.to_bytes());
            }
        }
    }
    out.zeroize();
    partial.zeroize();
    Ok(())
}

/// [`transpose_128xn`] spread over the current rayon pool: each task transposes
/// [`PAR_SPANS`] spans of 256 bytes per row (2,048 columns each) through its own buffer. The
/// output is the same as [`transpose_128xn`]'s whatever the number of threads.
pub fn transpose_128xn_par(input: &[u8], row_bytes: usize, out: &mut [Block]) -> Result<()> {
    use rayon::prelude::*;
    let imp = TransposeImpl::detect();
    imp.check()?;
    check_dims(input, row_bytes, out)?;
    if row_bytes <= SPAN * PAR_SPANS || rayon::current_num_threads() == 1 {
        return transpose_128xn_with(imp, input, row_bytes, out);
    }
    let (tiles, _) = out.as_chunks_mut::<128>();
    tiles
        .par_chunks_mut(PAR_SPANS * SPAN / 16)
        .enumerate()
        .for_each_init(
            || vec![0u8; 128 * STRIDE],
            |buf, (p, part)| {
                for (s, tiles) in part.chunks_mut(SPAN / 16).enumerate() {
                    let start = (p * PAR_SPANS + s) * SPAN;
                    // SAFETY: `imp` is available and the dimensions are consistent (checked
                    // above); `start` is the first byte column of these tiles.
                    unsafe { span_tiles(imp, input, row_bytes, start, tiles, buf) };
                }
            },
        );
    Ok(())
}

/// Spans of 256 bytes per row that one task of [`transpose_128xn_par`] transposes.
const PAR_SPANS: usize = 4;

/// Checks that `input` is 128 rows of `row_bytes` bytes (a multiple of 16) and `out` has one
/// block per column.
fn check_dims(input: &[u8], row_bytes: usize, out: &[Block]) -> Result<()> {
    if !row_bytes.is_multiple_of(16) {
        return Err(Error::InvalidParam {
            field: "row_bytes",
            reason: format!("{row_bytes} is not a multiple of 16 (whole 128-column tiles)"),
        });
    }
    if row_bytes.checked_mul(128) != Some(input.len()) {
        return Err(Error::InvalidParam {
            field: "input",
            reason: format!(
                "{} bytes given, but 128 rows of {row_bytes} bytes are expected",
                input.len()
            ),
        });
    }
    // row_bytes * 128 did not overflow, so row_bytes * 8 does not either.
    if out.len() != row_bytes * 8 {
        return Err(Error::InvalidParam {
            field: "out",
            reason: format!(
                "{} blocks given, but {row_bytes}-byte rows have {} columns",
                out.len(),
                row_bytes * 8
            ),
        });
    }
    Ok(())
}

/// Long rows: the tiles of byte columns `start..start + 16·tiles.len()` (at most one span),
/// through `buf` (128 rows [`STRIDE`] bytes apart). SPAN bytes of every row are gathered into
/// the buffer first: row starts `row_bytes` apart (a large power of two, typically) share one
/// cache set, so reading 16 bytes per row per tile straight from `input` evicts each line
/// before the next tile uses it. The buffer's rows are SPAN + 64 bytes apart, so that its own
/// rows spread over the sets.
///
/// # Safety
///
/// `imp` must be available; `input` must be 128 rows of `row_bytes` bytes with
/// `start + 16·tiles.len() <= row_bytes`, `tiles.len() <= SPAN / 16`, and
/// `buf.len() == 128 * STRIDE`.
unsafe fn span_tiles(
    imp: TransposeImpl,
    input: &[u8],
    row_bytes: usize,
    start: usize,
    tiles: &mut [[Block; 128]],
    buf: &mut [u8],
) {
    let width = 16 * tiles.len();
    for (i, dst) in buf.chunks_exact_mut(STRIDE).enumerate() {
        let from = i * row_bytes + start;
        let src = &input[from..from + width];
        match (dst.first_chunk_mut::<SPAN>(), src.first_chunk::<SPAN>()) {
            // A whole span: a fixed-size copy that compiles to vector moves, not a call.
            (Some(d), Some(s)) => *d = *s,
            _ => dst[..width].copy_from_slice(src),
        }
        // Ask for the same row's bytes of the next pass now: 128 rows far apart defeat the
        // hardware prefetchers, and a pass of SPAN/16 tiles hides the latency.
        crate::cache::prefetch_span(&input[(from + SPAN).min(input.len())..], SPAN);
    }
    // SAFETY: `imp` is available (caller); `buf` holds 128 rows STRIDE bytes apart, of which
    // the first `width = 16 * tiles.len() <= SPAN < STRIDE` bytes are read.
    unsafe { tiles_from_rows(imp, buf, STRIDE, tiles) };
}

/// Distance between the rows of [`span_tiles`]'s buffer.
const STRIDE: usize = SPAN + 64;

/// Bytes of every row gathered per pass by [`transpose_128xn`] for long rows (16 tiles; the
/// 32 KiB buffer stays in L1/L2).
const SPAN: usize = 256;

/// Transposes 128 rows, `stride` bytes apart in `rows`, into `tiles`: tile t from bytes
/// `16t..16t+16` of every row.
///
/// # Safety
///
/// `imp` must be available, `16 * tiles.len() <= stride` and
/// `rows.len() >= 127 * stride + 16 * tiles.len()`.
unsafe fn tiles_from_rows(
    imp: TransposeImpl,
    rows: &[u8],
    stride: usize,
    tiles: &mut [[Block; 128]],
) {
    debug_assert!(16 * tiles.len() <= stride);
    debug_assert!(tiles.is_empty() || rows.len() >= 127 * stride + 16 * tiles.len());
    for (t, tile_out) in tiles.iter_mut().enumerate() {
        // SAFETY: `imp` is available (caller). Tile t reads, for each row i < 128, the 16 bytes
        // at `rows[i*stride + 16t ..][..16]`; the last byte read is at
        // `127*stride + 16t + 15 < rows.len()` by the caller's bound. The destination is the
        // 128 blocks of `tile_out`, a distinct, exclusively borrowed allocation.
        unsafe {
            tile(
                imp,
                rows.as_ptr().add(16 * t),
                stride,
                tile_out.as_mut_ptr(),
            )
        }
    }
}

/// Transposes one 128×128 tile: row i of the source is the 16 bytes at `src + i*stride`;
/// writes `dst[j]` (j < 128) with bit i = bit j of source row i.
///
/// # Safety
///
/// `imp` must be available on this CPU; `src + i*stride .. +16` must be valid for reads for
/// every i < 128 and `dst .. dst+128` valid for writes. Source and destination may overlap:
/// every implementation reads its whole source before its first write.
#[inline]
unsafe fn tile(imp: TransposeImpl, src: *const u8, stride: usize, dst: *mut Block) {
    match imp {
        // SAFETY (all arms): the caller's contract, and the CPU features `imp` needs.
        #[cfg(target_arch = "x86_64")]
        TransposeImpl::Avx512Gfni => unsafe { x86::tile_avx512_gfni(src, stride, dst) },
        #[cfg(target_arch = "x86_64")]
        TransposeImpl::Avx2 => unsafe { x86::tile_avx2(src, stride, dst) },
        #[cfg(target_arch = "x86_64")]
        TransposeImpl::Sse2 => unsafe { x86::tile_sse2(src, stride, dst) },
        _ => unsafe { tile_portable(src, stride, dst) },
    }
}

/// Portable tile: Eklundh's algorithm. At level `j` (64, 32, …, 1), for each pair of rows
/// `(i, i + j)` in a 2j-row group, the top row's high j-bit halves (of each 2j-bit group)
/// swap with the bottom row's low halves.
///
/// # Safety
///
/// As [`tile`].
unsafe fn tile_portable(src: *const u8, stride: usize, dst: *mut Block) {
    let mut m = [0u128; 128];
    for (i, row) in m.iter_mut().enumerate() {
        // SAFETY: the caller guarantees that row i (16 bytes at src + i*stride) is readable;
        // `read_unaligned` has no alignment requirement.
        let bytes = unsafe { src.add(i * stride).cast::<[u8; 16]>().read_unaligned() };
        *row = u128::from_le_bytes(bytes);
    }
    eklundh(&mut m);
    for (j, row) in m.iter().enumerate() {
        // SAFETY: the caller guarantees dst..dst+128 is writable; `Block` is `u128`-aligned
        // there because it comes from a `&mut [Block]`.
        unsafe { dst.add(j).write(Block(*row)) };
    }
}

fn eklundh(m: &mut [u128; 128]) {
    let mut j = 64usize;
    let mut mask = u128::from(u64::MAX);
    while j != 0 {
        let mut k = 0;
        while k < 128 {
            for i in k..k + j {
                let t = ((m[i] >> j) ^ m[i + j]) & mask;
                m[i + j] ^= t;
                m[i] ^= t << j;
            }
            k += 2 * j;
        }
        j >>= 1;
        mask ^= mask << j;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Block;
    use std::arch::x86_64::*;

    /// `dst[j] = out[j]` for the 128 output rows.
    ///
    /// # Safety
    ///
    /// `dst..dst+128` valid for writes.
    #[inline(always)]
    unsafe fn write_rows(out: &[[u8; 16]; 128], dst: *mut Block) {
        for (j, o) in out.iter().enumerate() {
            // SAFETY: the caller guarantees dst..dst+128 is writable.
            unsafe { dst.add(j).write(Block::from_bytes(*o)) };
        }
    }

    /// One round of the 16×16 byte transpose: `new[2i], new[2i+1]` = the low and high byte
    /// interleaves of `old[i], old[i+8]`. Identifying (register j, byte c) with the 8-bit
    /// string j‖c, a round rotates it left by one bit, so four rounds map (j, c) to (c, j).
    #[inline]
    #[target_feature(enable = "sse2")]
    fn round_sse2(r: &mut [__m128i; 16]) {
        let old = *r;
        for i in 0..8 {
            r[2 * i] = _mm_unpacklo_epi8(old[i], old[i + 8]);
            r[2 * i + 1] = _mm_unpackhi_epi8(old[i], old[i + 8]);
        }
    }

    /// SSE2 tile: per group of 16 rows, a 16×16 byte transpose puts byte column c of the 16
    /// rows in one register; `pmovmskb` then reads its bit 7 (output row 8c+7, 16 bits), and
    /// each `paddb` (a left shift by one) brings the next bit to the top.
    ///
    /// # Safety
    ///
    /// As `super::tile`.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn tile_sse2(src: *const u8, stride: usize, dst: *mut Block) {
        let mut out = [[0u8; 16]; 128];
        for g in 0..8 {
            let mut r = [_mm_setzero_si128(); 16];
            for (j, rj) in r.iter_mut().enumerate() {
                // SAFETY: row 16g + j is readable (caller); `loadu` is unaligned.
                *rj = unsafe { _mm_loadu_si128(src.add((16 * g + j) * stride).cast()) };
            }
            for _ in 0..4 {
                round_sse2(&mut r);
            }
            for (c, v) in r.iter().enumerate() {
                let mut v = *v;
                for b in (0..8).rev() {
                    let bits = _mm_movemask_epi8(v) as u16;
                    out[8 * c + b][2 * g..2 * g + 2].copy_from_slice(&bits.to_le_bytes());
                    v = _mm_add_epi8(v, v);
                }
            }
        }
        // SAFETY: dst..dst+128 is writable (caller).
        unsafe { write_rows(&out, dst) }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn round_avx2(r: &mut [__m256i; 16]) {
        let old = *r;
        for i in 0..8 {
            r[2 * i] = _mm256_unpacklo_epi8(old[i], old[i + 8]);
            r[2 * i + 1] = _mm256_unpackhi_epi8(old[i], old[i + 8]);
        }
    }

    /// AVX2 tile: as SSE2 with 32 rows per register (rows 32g..32g+15 in the low lane,
    /// 32g+16..32g+31 in the high lane), so one `vpmovmskb` yields 32 bits of an output row.
    ///
    /// # Safety
    ///
    /// As `super::tile`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn tile_avx2(src: *const u8, stride: usize, dst: *mut Block) {
        let mut out = [[0u8; 16]; 128];
        for g in 0..4 {
            let mut r = [_mm256_setzero_si256(); 16];
            for (j, rj) in r.iter_mut().enumerate() {
                // SAFETY: rows 32g + j and 32g + 16 + j are readable (caller).
                let (lo, hi) = unsafe {
                    (
                        _mm_loadu_si128(src.add((32 * g + j) * stride).cast()),
                        _mm_loadu_si128(src.add((32 * g + 16 + j) * stride).cast()),
                    )
                };
                *rj = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(lo), hi);
            }
            for _ in 0..4 {
                round_avx2(&mut r);
            }
            for (c, v) in r.iter().enumerate() {
                let mut v = *v;
                for b in (0..8).rev() {
                    let bits = _mm256_movemask_epi8(v) as u32;
                    out[8 * c + b][4 * g..4 * g + 4].copy_from_slice(&bits.to_le_bytes());
                    v = _mm256_add_epi8(v, v);
                }
            }
        }
        // SAFETY: dst..dst+128 is writable (caller).
        unsafe { write_rows(&out, dst) }
    }

    /// After the byte transpose of a 64-row half, register c holds byte c of row `4k + L` at
    /// position `16L + k`. This permutation moves it so that 64-bit word R holds rows
    /// `8R..8R+7` with row `8R + i` in byte `7 - i` (the order `vgf2p8affineqb` wants).
    const GROUP_ROWS: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut p = 0;
        while p < 64 {
            let r = 8 * (p / 8) + 7 - (p % 8);
            t[p] = (16 * (r % 4) + r / 4) as u8;
            p += 1;
        }
        t
    };

    /// After `vgf2p8affineqb`, byte `8R + j` of half h's register c is byte `8h + R` of output
    /// row `8c + j`. These two-source permutations (half 0 in the first source, half 1 in the
    /// second) assemble output rows 8c..8c+3 (`first = 0`) or 8c+4..8c+7 (`first = 4`),
    /// byte B of row `8c + first + jj` at position `16jj + B`.
    const fn output_rows(first: usize) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut p = 0;
        while p < 64 {
            let (jj, b) = (p / 16, p % 16);
            let (h, r) = (b / 8, b % 8);
            t[p] = (64 * h + 8 * r + first + jj) as u8;
            p += 1;
        }
        t
    }
    const OUT_LO: [u8; 64] = output_rows(0);
    const OUT_HI: [u8; 64] = output_rows(4);

    /// `vgf2p8affineqb(x = IDENTITY, A = data)`: byte j of each output word is, in bit i, the
    /// parity of `A.byte[7-i] & (1 << j)` = bit j of data byte `7 - i`. With rows stored in
    /// reverse (`GROUP_ROWS`), that is bit `8c + j` of row `8R + i`: an 8×8 bit transpose.
    const IDENTITY: i64 = 0x8040_2010_0804_0201_u64 as i64;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn round_avx512(r: &mut [__m512i; 16]) {
        let old = *r;
        for i in 0..8 {
            r[2 * i] = _mm512_unpacklo_epi8(old[i], old[i + 8]);
            r[2 * i + 1] = _mm512_unpackhi_epi8(old[i], old[i + 8]);
        }
    }

    /// One 64-row half of the AVX-512 tile: loads rows `4q..4q+3` (of the half) into register
    /// q, transposes 16×16 bytes in each 128-bit lane (register c then holds byte column c
    /// of all 64 rows, row `4k + L` at byte `16L + k`), regroups the bytes with `vpermb` so that
    /// word R holds rows `8R..8R+7` reversed, and transposes every 8×8 bit block with one
    /// `vgf2p8affineqb`: byte `8R + j` of register c is then byte R of output row `8c + j`
    /// restricted to this half's rows.
    ///
    /// # Safety
    ///
    /// Rows `src + i*stride .. +16` readable for i < 64; `stride == 16` if `CONTIGUOUS`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    unsafe fn half_avx512_gfni<const CONTIGUOUS: bool>(
        src: *const u8,
        stride: usize,
    ) -> [__m512i; 16] {
        let mut z: [__m512i; 16] = core::array::from_fn(|q| {
            let row = src.wrapping_add(4 * q * stride);
            if CONTIGUOUS {
                // SAFETY: rows 4q..4q+3 are readable (caller) and, with stride 16,
                // contiguous: 64 bytes from `row`.
                unsafe { _mm512_loadu_si512(row.cast()) }
            } else {
                // SAFETY: rows 4q+l (l < 4) are readable (caller), 16 bytes each.
                unsafe {
                    let a = _mm512_castsi128_si512(_mm_loadu_si128(row.cast()));
                    let a = _mm512_inserti32x4::<1>(a, _mm_loadu_si128(row.add(stride).cast()));
                    let a = _mm512_inserti32x4::<2>(a, _mm_loadu_si128(row.add(2 * stride).cast()));
                    _mm512_inserti32x4::<3>(a, _mm_loadu_si128(row.add(3 * stride).cast()))
                }
            }
        });
        for _ in 0..4 {
            round_avx512(&mut z);
        }
        // SAFETY: the table is 64 bytes; `loadu` is unaligned.
        let group = unsafe { _mm512_loadu_si512(GROUP_ROWS.as_ptr().cast()) };
        let identity = _mm512_set1_epi64(IDENTITY);
        z.map(|v| _mm512_gf2p8affine_epi64_epi8::<0>(identity, _mm512_permutexvar_epi8(group, v)))
    }

    /// AVX-512 + GFNI tile: two 64-row halves ([`half_avx512_gfni`]), then per byte column c
    /// one `vpermt2b` per four output rows merges the halves. 32 loads, 128 unpacks, 32 + 32
    /// permutes, 32 affine ops, 32 stores.
    ///
    /// # Safety
    ///
    /// As `super::tile`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    pub(super) unsafe fn tile_avx512_gfni(src: *const u8, stride: usize, dst: *mut Block) {
        let second = src.wrapping_add(64 * stride);
        // SAFETY: rows 0..64 and 64..128 of the source are readable (caller); the contiguous
        // variant is used only when stride is 16.
        let (first, second) = unsafe {
            if stride == 16 {
                (
                    half_avx512_gfni::<true>(src, 16),
                    half_avx512_gfni::<true>(second, 16),
                )
            } else {
                (
                    half_avx512_gfni::<false>(src, stride),
                    half_avx512_gfni::<false>(second, stride),
                )
            }
        };
        // SAFETY: the tables are 64 bytes each; `loadu` is unaligned.
        let (out_lo, out_hi) = unsafe {
            (
                _mm512_loadu_si512(OUT_LO.as_ptr().cast()),
                _mm512_loadu_si512(OUT_HI.as_ptr().cast()),
            )
        };
        for (c, (a, b)) in first.into_iter().zip(second).enumerate() {
            let lo = _mm512_permutex2var_epi8(a, out_lo, b);
            let hi = _mm512_permutex2var_epi8(a, out_hi, b);
            // SAFETY: blocks 8c..8c+7 of dst are writable (caller); `storeu` is unaligned.
            // Every source row was loaded above, before this first store.
            unsafe {
                _mm512_storeu_si512(dst.add(8 * c).cast(), lo);
                _mm512_storeu_si512(dst.add(8 * c + 4).cast(), hi);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_to_columns_is_the_transpose_of_the_rows() {
        let mut prg = crate::prg::AesPrg::new(Block(8));
        for (width, r, rb) in [
            (3usize, 300usize, 48usize),
            (4, 256, 32),
            (1, 1, 16),
            (2, 0, 16),
        ] {
            let mut rows = vec![Block::ZERO; r * width];
            prg.fill_blocks(&mut rows);
            let mut cols = vec![0u8; 128 * width * rb];
            assert!(rows_to_columns(&rows, width, rb, &mut cols).is_ok());
            for j in 0..128 * width {
                for i in 0..8 * rb {
                    let want = i < r && rows[i * width + j / 128].bit(j % 128);
                    let got = (cols[j * rb + i / 8] >> (i % 8)) & 1 == 1;
                    assert_eq!(got, want, "width {width}, column {j}, row {i}");
                }
            }
        }
        assert!(rows_to_columns(&[Block::ZERO; 3], 2, 16, &mut [0u8; 4096]).is_err());
    }
    use rand::{Rng, RngCore, SeedableRng, rngs::StdRng};

    fn naive128(m: &[Block; 128]) -> [Block; 128] {
        core::array::from_fn(|i| {
            let mut v = 0u128;
            for (j, row) in m.iter().enumerate() {
                v |= ((row.0 >> i) & 1) << j;
            }
            Block(v)
        })
    }

    fn naive_128xn(input: &[u8], row_bytes: usize) -> Vec<Block> {
        (0..row_bytes * 8)
            .map(|j| {
                let mut v = 0u128;
                for i in 0..128 {
                    let bit = (input[i * row_bytes + j / 8] >> (j % 8)) & 1;
                    v |= u128::from(bit) << i;
                }
                Block(v)
            })
            .collect()
    }

    fn available() -> Vec<TransposeImpl> {
        TransposeImpl::ALL
            .into_iter()
            .filter(|i| i.is_available())
            .collect()
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn detection_picks_the_fastest_available_path() {
        // The development and CI machines (Zen 4) have all four paths, so every path is tested
        // against the naive transpose below; on other CPUs the unavailable ones are skipped.
        let best = [
            TransposeImpl::Avx512Gfni,
            TransposeImpl::Avx2,
            TransposeImpl::Sse2,
        ]
        .into_iter()
        .find(|i| i.is_available());
        assert_eq!(Some(TransposeImpl::detect()), best);
        eprintln!("transpose paths available: {:?}", available());
    }

    #[test]
    fn transpose128_every_path_matches_naive() {
        let mut r = StdRng::seed_from_u64(128);
        let mut cases: Vec<[Block; 128]> = vec![
            [Block::ZERO; 128],
            [Block::ONES; 128],
            core::array::from_fn(|i| Block(1 << i)),
            core::array::from_fn(|i| Block(1 << (127 - i))),
            core::array::from_fn(|i| Block(i as u128 * 0x0101_0101_0101_0101_0101_0101_0101_0101)),
        ];
        cases.extend((0..20).map(|_| core::array::from_fn(|_| Block(r.random()))));
        for imp in available() {
            for m in &cases {
                let want = naive128(m);
                let mut got = *m;
                transpose128_with(imp, &mut got)
                    .map_err(|e| e.to_string())
                    .ok();
                assert_eq!(got, want, "{}", imp.name());
                // An involution.
                transpose128_with(imp, &mut got).ok();
                assert_eq!(&got, m, "{} twice", imp.name());
            }
        }
        let mut m = cases[7];
        transpose128(&mut m);
        assert_eq!(m, naive128(&cases[7]));
    }

    #[test]
    fn transpose_128xn_every_path_matches_naive() {
        let mut r = StdRng::seed_from_u64(7);
        for row_bytes in [0usize, 16, 32, 48, 272, 528, 1024] {
            let mut input = vec![0u8; 128 * row_bytes];
            r.fill_bytes(&mut input);
            let want = naive_128xn(&input, row_bytes);
            for imp in available() {
                let mut out = vec![Block::ONES; row_bytes * 8];
                let res = transpose_128xn_with(imp, &input, row_bytes, &mut out);
                assert!(res.is_ok(), "{} {row_bytes}", imp.name());
                assert_eq!(out, want, "{} {row_bytes}", imp.name());
            }
            let mut out = vec![Block::ZERO; row_bytes * 8];
            assert!(transpose_128xn(&input, row_bytes, &mut out).is_ok());
            assert_eq!(out, want);
        }
    }

    #[test]
    fn transpose_128xn_par_matches_naive_on_any_pool() {
        let mut r = StdRng::seed_from_u64(9);
        // Shorter than one task, one task and a partial one, many tasks and a partial span.
        for row_bytes in [16usize, 1024, 1040 + 256, 8192 + 48] {
            let mut input = vec![0u8; 128 * row_bytes];
            r.fill_bytes(&mut input);
            let want = naive_128xn(&input, row_bytes);
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
                assert!(pool.is_ok(), "{threads} threads");
                let Ok(pool) = pool else { return };
                let mut out = vec![Block::ONES; row_bytes * 8];
                let res = pool.install(|| transpose_128xn_par(&input, row_bytes, &mut out));
                assert!(res.is_ok(), "{row_bytes} {threads}");
                assert_eq!(out, want, "{row_bytes} {threads}");
            }
        }
        let mut out = vec![Block::ZERO; 255];
        assert!(matches!(
            transpose_128xn_par(&[0u8; 128 * 32], 32, &mut out),
            Err(Error::InvalidParam { field: "out", .. })
        ));
    }

    #[test]
    fn transpose_128xn_rejects_bad_sizes() {
        let field = |r: Result<()>| match r {
            Err(Error::InvalidParam { field, .. }) => field,
            _ => "not InvalidParam",
        };
        let input = vec![0u8; 128 * 32];
        let mut out = vec![Block::ZERO; 256];
        // row_bytes not a multiple of 16.
        assert_eq!(
            field(transpose_128xn(&input[..128 * 8], 8, &mut out[..64])),
            "row_bytes"
        );
        assert_eq!(field(transpose_128xn(&input, 17, &mut out)), "row_bytes");
        // Input too short or too long.
        assert_eq!(field(transpose_128xn(&input[1..], 32, &mut out)), "input");
        assert_eq!(field(transpose_128xn(&input, 16, &mut out[..128])), "input");
        // Output of the wrong length.
        assert_eq!(field(transpose_128xn(&input, 32, &mut out[..255])), "out");
        let mut big = vec![Block::ZERO; 257];
        assert_eq!(field(transpose_128xn(&input, 32, &mut big)), "out");
        // Overflowing sizes are rejected, not wrapped.
        assert_eq!(
            field(transpose_128xn(&input, usize::MAX - 15, &mut out)),
            "input"
        );
        // The output is untouched on error.
        assert!(out.iter().all(|b| *b == Block::ZERO));
    }

    #[test]
    fn unavailable_implementation_is_an_error() {
        for imp in TransposeImpl::ALL {
            let mut m = [Block::ZERO; 128];
            assert_eq!(transpose128_with(imp, &mut m).is_ok(), imp.is_available());
        }
    }
}
