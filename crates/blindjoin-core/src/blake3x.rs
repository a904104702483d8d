//! Keyed BLAKE3 of many one-block inputs at once, each under its own chunk counter.
//!
//! [`Blake3Blocks::hash`] computes, for every 64-byte input x_k with counter t_k, the BLAKE3
//! chaining value of the one-block chunk x_k at chunk index t_k in keyed mode:
//!
//! ```text
//! H(t, x) = compress(K, x, t, 64, CHUNK_START | CHUNK_END | KEYED_HASH)[0..8]
//! ```
//!
//! (BLAKE3 spec §2.2-2.5: the key words as the chaining value, the chunk counter t as the
//! counter, block length 64, the flags of a keyed chunk of one block). It is exactly what
//! `blake3::Hasher::new_keyed(K)` with `hazmat::HasherExt::set_input_offset(1024·t)`,
//! `update(x)` and `finalize_non_root()` return (tested), one compression per input. The
//! counter is BLAKE3's own domain separation between chunks, so inputs under distinct counters
//! are hashed by independent-looking functions: what the OT-extension row hashes need from
//! their instance index.
//!
//! # Why
//!
//! The OOS16 row hash takes one 64-byte row per evaluation, tens of millions of them in a PSI
//! run. With AVX-512F (detected once at run time by `cpufeatures`) sixteen rows are compressed
//! at once, one row per 32-bit lane: the rows are transposed into sixteen message-word
//! vectors, the seven rounds run on sixteen state vectors, and the chaining values are
//! transposed back. That is about 12 ns per row on this project's test machine, against about
//! 45 ns for one SHA-256 compression with two SHA-NI lanes interleaved
//! (`cargo bench -p blindjoin-core --bench sha256x`). Elsewhere, and for the last rows of a
//! batch that do not fill sixteen lanes, the rows go through the portable compression below.

/// BLAKE3's IV (the SHA-256 IV).
const IV: [u32; 8] = [
    0x6A09_E667,
    0xBB67_AE85,
    0x3C6E_F372,
    0xA54F_F53A,
    0x510E_527F,
    0x9B05_688C,
    0x1F83_D9AB,
    0x5BE0_CD19,
];
/// The message word permutation applied between rounds.
const MSG_PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
const CHUNK_START: u32 = 1;
const CHUNK_END: u32 = 2;
const KEYED_HASH: u32 = 16;
/// The flags of a one-block chunk in keyed mode.
const FLAGS: u32 = CHUNK_START | CHUNK_END | KEYED_HASH;
/// Bytes of an input.
pub const BLOCK_LEN: usize = 64;

/// Keyed BLAKE3 of one-block inputs under per-input chunk counters (see the module doc).
#[derive(Clone)]
pub struct Blake3Blocks {
    key: [u32; 8],
}

impl std::fmt::Debug for Blake3Blocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Blake3Blocks { .. }")
    }
}

impl Blake3Blocks {
    /// The hash under the 32-byte key `key` (its words little-endian, as BLAKE3 reads keys).
    pub fn new(key: &[u8; 32]) -> Self {
        let mut k = [0u32; 8];
        for (w, b) in k.iter_mut().zip(key.chunks_exact(4)) {
            *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Blake3Blocks { key: k }
    }

    /// The hash under the key `blake3::derive_key(context, material)` (BLAKE3's key derivation
    /// mode: a context string per use, the session's material).
    pub fn derived(context: &str, material: &[u8]) -> Self {
        let mut key = blake3::derive_key(context, material);
        let h = Self::new(&key);
        key.fill(0);
        h
    }

    /// `out[k] = H(counters[k], blocks[k])` for k < `n` (≤ 16): one batch of sixteen lanes
    /// (the lanes from `n` on are computed and ignored where sixteen lanes run at once, and
    /// skipped elsewhere).
    pub fn hash16(
        &self,
        blocks: &[[u8; BLOCK_LEN]; 16],
        counters: &[u64; 16],
        n: usize,
        out: &mut [[u32; 8]; 16],
    ) {
        #[cfg(target_arch = "x86_64")]
        if x86::available() {
            // SAFETY: the CPU has AVX-512F (just detected).
            unsafe { x86::compress16(&self.key, blocks, counters, out) };
            return;
        }
        for ((b, &c), o) in blocks.iter().zip(counters).zip(out.iter_mut()).take(n) {
            *o = compress(&self.key, b, c);
        }
    }

    /// `out[k] = H(counters[k], blocks[k])` for every k (the chaining value's eight words).
    /// The three slices must have one length.
    ///
    /// # Panics
    ///
    /// If the lengths differ.
    pub fn hash(&self, blocks: &[[u8; BLOCK_LEN]], counters: &[u64], out: &mut [[u32; 8]]) {
        assert!(blocks.len() == counters.len() && blocks.len() == out.len());
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if x86::available() {
            let (b16, _) = blocks.as_chunks::<16>();
            let (c16, _) = counters.as_chunks::<16>();
            let (o16, _) = out.as_chunks_mut::<16>();
            for ((b, c), o) in b16.iter().zip(c16).zip(o16) {
                // SAFETY: the CPU has AVX-512F (just detected).
                unsafe { x86::compress16(&self.key, b, c, o) };
            }
            done = 16 * b16.len();
        }
        for ((b, &c), o) in blocks[done..]
            .iter()
            .zip(&counters[done..])
            .zip(&mut out[done..])
        {
            *o = compress(&self.key, b, c);
        }
    }
}

#[inline(always)]
fn g(v: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize, x: u32, y: u32) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(12);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
    v[d] = (v[d] ^ v[a]).rotate_right(8);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(7);
}

/// The portable compression of one input: the chaining value's eight words.
fn compress(key: &[u32; 8], block: &[u8; BLOCK_LEN], counter: u64) -> [u32; 8] {
    let mut m = [0u32; 16];
    for (w, b) in m.iter_mut().zip(block.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    let mut v = [
        key[0],
        key[1],
        key[2],
        key[3],
        key[4],
        key[5],
        key[6],
        key[7],
        IV[0],
        IV[1],
        IV[2],
        IV[3],
        counter as u32,
        (counter >> 32) as u32,
        BLOCK_LEN as u32,
        FLAGS,
    ];
    for round in 0..7 {
        g(&mut v, 0, 4, 8, 12, m[0], m[1]);
        g(&mut v, 1, 5, 9, 13, m[2], m[3]);
        g(&mut v, 2, 6, 10, 14, m[4], m[5]);
        g(&mut v, 3, 7, 11, 15, m[6], m[7]);
        g(&mut v, 0, 5, 10, 15, m[8], m[9]);
        g(&mut v, 1, 6, 11, 12, m[10], m[11]);
        g(&mut v, 2, 7, 8, 13, m[12], m[13]);
        g(&mut v, 3, 4, 9, 14, m[14], m[15]);
        if round < 6 {
            let old = m;
            for (w, &p) in m.iter_mut().zip(&MSG_PERMUTATION) {
                *w = old[p];
            }
        }
    }
    let mut out = [0u32; 8];
    for (i, o) in out.iter_mut().enumerate() {
        *o = v[i] ^ v[i + 8];
    }
    out
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{BLOCK_LEN, FLAGS, IV, MSG_PERMUTATION};
    use core::arch::x86_64::*;

    cpufeatures::new!(cpuid_avx512f, "avx512f");

    pub(super) fn available() -> bool {
        cpuid_avx512f::get()
    }

    /// Transposes the 16×16 matrix of 32-bit words whose row i is `r[i]`: afterwards `r[k]`
    /// holds column k. Unpacks of 32- and 64-bit words within 128-bit lanes, then a 4×4
    /// transpose of the 128-bit lanes among each four vectors.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn transpose(r: &mut [__m512i; 16]) {
        let mut t = [_mm512_setzero_si512(); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        // u[4g + c], lane L: column 4L + c of rows 4g..4g + 4.
        let mut u = [_mm512_setzero_si512(); 16];
        for g in 0..4 {
            let (a0, a1, b0, b1) = (t[4 * g], t[4 * g + 1], t[4 * g + 2], t[4 * g + 3]);
            u[4 * g] = _mm512_unpacklo_epi64(a0, b0);
            u[4 * g + 1] = _mm512_unpackhi_epi64(a0, b0);
            u[4 * g + 2] = _mm512_unpacklo_epi64(a1, b1);
            u[4 * g + 3] = _mm512_unpackhi_epi64(a1, b1);
        }
        for c in 0..4 {
            let (a, b, cc, d) = (u[c], u[4 + c], u[8 + c], u[12 + c]);
            let e = _mm512_shuffle_i32x4::<0x88>(a, b);
            let f = _mm512_shuffle_i32x4::<0xDD>(a, b);
            let g = _mm512_shuffle_i32x4::<0x88>(cc, d);
            let h = _mm512_shuffle_i32x4::<0xDD>(cc, d);
            r[c] = _mm512_shuffle_i32x4::<0x88>(e, g);
            r[8 + c] = _mm512_shuffle_i32x4::<0xDD>(e, g);
            r[4 + c] = _mm512_shuffle_i32x4::<0x88>(f, h);
            r[12 + c] = _mm512_shuffle_i32x4::<0xDD>(f, h);
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn g(v: &mut [__m512i; 16], a: usize, b: usize, c: usize, d: usize, x: __m512i, y: __m512i) {
        v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), x);
        v[d] = _mm512_ror_epi32::<16>(_mm512_xor_si512(v[d], v[a]));
        v[c] = _mm512_add_epi32(v[c], v[d]);
        v[b] = _mm512_ror_epi32::<12>(_mm512_xor_si512(v[b], v[c]));
        v[a] = _mm512_add_epi32(_mm512_add_epi32(v[a], v[b]), y);
        v[d] = _mm512_ror_epi32::<8>(_mm512_xor_si512(v[d], v[a]));
        v[c] = _mm512_add_epi32(v[c], v[d]);
        v[b] = _mm512_ror_epi32::<7>(_mm512_xor_si512(v[b], v[c]));
    }

    /// Sixteen inputs, one per 32-bit lane.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn compress16(
        key: &[u32; 8],
        blocks: &[[u8; BLOCK_LEN]; 16],
        counters: &[u64; 16],
        out: &mut [[u32; 8]; 16],
    ) {
        let mut m = [_mm512_setzero_si512(); 16];
        for (v, b) in m.iter_mut().zip(blocks) {
            // SAFETY: `b` is 64 readable bytes; unaligned load.
            *v = unsafe { _mm512_loadu_si512(b.as_ptr().cast()) };
        }
        transpose(&mut m);
        let (mut lo, mut hi) = ([0u32; 16], [0u32; 16]);
        for ((l, h), &c) in lo.iter_mut().zip(hi.iter_mut()).zip(counters) {
            *l = c as u32;
            *h = (c >> 32) as u32;
        }
        // SAFETY: `lo` and `hi` are 16 words, 64 readable bytes each; unaligned loads.
        let (lo, hi) = unsafe {
            (
                _mm512_loadu_si512(lo.as_ptr().cast()),
                _mm512_loadu_si512(hi.as_ptr().cast()),
            )
        };
        let s = |w: u32| _mm512_set1_epi32(w as i32);
        let mut v = [
            s(key[0]),
            s(key[1]),
            s(key[2]),
            s(key[3]),
            s(key[4]),
            s(key[5]),
            s(key[6]),
            s(key[7]),
            s(IV[0]),
            s(IV[1]),
            s(IV[2]),
            s(IV[3]),
            lo,
            hi,
            s(BLOCK_LEN as u32),
            s(FLAGS),
        ];
        for round in 0..7 {
            g(&mut v, 0, 4, 8, 12, m[0], m[1]);
            g(&mut v, 1, 5, 9, 13, m[2], m[3]);
            g(&mut v, 2, 6, 10, 14, m[4], m[5]);
            g(&mut v, 3, 7, 11, 15, m[6], m[7]);
            g(&mut v, 0, 5, 10, 15, m[8], m[9]);
            g(&mut v, 1, 6, 11, 12, m[10], m[11]);
            g(&mut v, 2, 7, 8, 13, m[12], m[13]);
            g(&mut v, 3, 4, 9, 14, m[14], m[15]);
            if round < 6 {
                let old = m;
                for (w, &p) in m.iter_mut().zip(&MSG_PERMUTATION) {
                    *w = old[p];
                }
            }
        }
        let mut cv = [_mm512_setzero_si512(); 16];
        for i in 0..8 {
            cv[i] = _mm512_xor_si512(v[i], v[i + 8]);
        }
        transpose(&mut cv);
        for (o, r) in out.iter_mut().zip(&cv) {
            let mut words = [0u32; 16];
            // SAFETY: `words` is 16 words, 64 writable bytes; unaligned store.
            unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), *r) };
            o.copy_from_slice(&words[..8]);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_transpose_moves_row_i_column_k_to_row_k_column_i() {
            if !available() {
                return;
            }
            let rows: Vec<[u32; 16]> = (0..16u32)
                .map(|i| core::array::from_fn(|k| 100 * i + k as u32))
                .collect();
            // SAFETY: AVX-512F is available (checked above); each row is 64 bytes.
            unsafe {
                let mut r = [_mm512_setzero_si512(); 16];
                for (v, row) in r.iter_mut().zip(&rows) {
                    *v = _mm512_loadu_si512(row.as_ptr().cast());
                }
                transpose(&mut r);
                for (k, v) in r.iter().enumerate() {
                    let mut w = [0u32; 16];
                    _mm512_storeu_si512(w.as_mut_ptr().cast(), *v);
                    let want: [u32; 16] = core::array::from_fn(|i| 100 * i as u32 + k as u32);
                    assert_eq!(w, want, "column {k}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use blake3::hazmat::HasherExt;

    fn reference(key: &[u8; 32], counter: u64, block: &[u8; 64]) -> [u32; 8] {
        let mut h = blake3::Hasher::new_keyed(key);
        h.set_input_offset(counter * 1024);
        h.update(block);
        let cv = h.finalize_non_root();
        core::array::from_fn(|i| u32::from_le_bytes(cv[4 * i..4 * i + 4].try_into().unwrap()))
    }

    #[test]
    fn every_input_is_blake3s_keyed_chunk_chaining_value() {
        let key: [u8; 32] = core::array::from_fn(|i| (7 * i + 3) as u8);
        let h = Blake3Blocks::new(&key);
        // 37 inputs: two batches of sixteen lanes and five inputs on the portable path.
        let n = 37;
        let blocks: Vec<[u8; 64]> = (0..n)
            .map(|k| core::array::from_fn(|i| (k * 31 + i * 5 + 1) as u8))
            .collect();
        let counters: Vec<u64> = (0..n as u64)
            .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (14 + k % 20))
            .collect();
        let mut out = vec![[0u32; 8]; n];
        h.hash(&blocks, &counters, &mut out);
        for k in 0..n {
            assert_eq!(
                out[k],
                reference(&key, counters[k], &blocks[k]),
                "input {k}"
            );
            assert_eq!(
                out[k],
                compress(&h.key, &blocks[k], counters[k]),
                "input {k}"
            );
        }
        // A partial batch of sixteen lanes.
        let mut b16 = [[0u8; 64]; 16];
        let mut c16 = [0u64; 16];
        b16[..5].copy_from_slice(&blocks[..5]);
        c16[..5].copy_from_slice(&counters[..5]);
        let mut o16 = [[0u32; 8]; 16];
        h.hash16(&b16, &c16, 5, &mut o16);
        assert_eq!(o16[..5], out[..5]);
        let d = Blake3Blocks::derived("test context", b"material");
        let key = blake3::derive_key("test context", b"material");
        assert_eq!(d.key, Blake3Blocks::new(&key).key);
    }
}
