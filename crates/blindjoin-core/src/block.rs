//! The 128-bit [`Block`] of the OT-extension layer, and arithmetic in GF(2^128).
//!
//! A block is a `u128`. **Bit `j`** of a block is `(block.0 >> j) & 1`; its **bytes** are the
//! little-endian encoding of the `u128` ([`Block::to_bytes`]), so byte `k` holds bits
//! `8k..8k+7` and bit `j` is bit `j % 8` of byte `j / 8`. This is the order in which the bit
//! matrices of [`crate::transpose`] are laid out, and the byte order in which [`crate::aes`]
//! hands a block to AES.
//!
//! # GF(2^128)
//!
//! [`Block::gf128_mul`] multiplies in GF(2)\[x\] / (x^128 + x^7 + x^2 + x + 1) with the
//! *natural* bit order: bit `i` of the `u128` is the coefficient of x^i, so `Block(1)` is the
//! field's one and `Block(2)` is x. This is the convention of libOTe's `gf128Mul`, used for
//! the consistency check of KOS (Keller, Orsini, Scholl, CRYPTO 2015); it is **not** GCM's
//! bit-reflected order. The product uses PCLMULQDQ when the CPU has it (detected once at run
//! time and cached) and otherwise a portable constant-time carry-less multiplication (integer
//! multiplications with holes, as in BearSSL's `ghash_ctmul`): both paths are branch-free in
//! the data and give bit-identical results.
//!
//! For a sum of many products, [`Block::clmul`] returns the unreduced 256-bit product so that
//! the caller can XOR-accumulate and call [`Block::gf128_reduce`] once;
//! [`gf128_inner_product`] does exactly that for two slices with one feature check.

use std::ops::{BitAnd, BitAndAssign, BitXor, BitXorAssign, Not};

/// A 128-bit block. Bit j is `(self.0 >> j) & 1`. Byte order of `to_bytes`/`from_bytes`:
/// little-endian.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Block(pub u128);

/// The memory of `blocks` as 32-bit words, four per block, to reuse a buffer of blocks whose
/// contents are no longer needed as scratch space (its pages are already mapped).
pub fn as_words_mut(blocks: &mut [Block]) -> &mut [u32] {
    // SAFETY: `Block` is `repr(transparent)` over `u128`: 16 bytes, aligned to at least 4, and
    // every bit pattern is a valid `u128` and a valid `u32`. The slice covers exactly the
    // blocks' bytes and borrows them exclusively for its lifetime.
    unsafe { core::slice::from_raw_parts_mut(blocks.as_mut_ptr().cast::<u32>(), blocks.len() * 4) }
}

/// The memory of `blocks` as bytes: block k's little-endian encoding at `16k..16k + 16` on a
/// little-endian machine, as [`Block::to_bytes`] gives it (only little-endian targets may rely
/// on that; the bytes are the `u128`s' in-memory representation).
pub fn as_bytes(blocks: &[Block]) -> &[u8] {
    // SAFETY: `Block` is `repr(transparent)` over `u128`: 16 bytes without padding, and any
    // initialised memory is valid as `u8`. The slice covers exactly the blocks' bytes and
    // borrows them for its lifetime.
    unsafe { core::slice::from_raw_parts(blocks.as_ptr().cast::<u8>(), blocks.len() * 16) }
}

impl Block {
    /// The all-zero block (the field's zero).
    pub const ZERO: Block = Block(0);
    /// A uniformly random block: two 64-bit draws from `rng`, the first in the low half.
    pub fn random(rng: &mut (impl rand::RngCore + ?Sized)) -> Block {
        let lo = u128::from(rng.next_u64());
        Block(lo | (u128::from(rng.next_u64()) << 64))
    }

    /// The all-ones block.
    pub const ONES: Block = Block(u128::MAX);

    /// The block whose little-endian encoding is `b`.
    #[inline]
    pub const fn from_bytes(b: [u8; 16]) -> Block {
        Block(u128::from_le_bytes(b))
    }

    /// The little-endian encoding of the block (byte `k` holds bits `8k..8k+7`).
    #[inline]
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_le_bytes()
    }

    /// The block encoded by `b`, or `None` unless `b` is exactly 16 bytes long.
    #[inline]
    pub fn from_slice(b: &[u8]) -> Option<Block> {
        <[u8; 16]>::try_from(b).ok().map(Block::from_bytes)
    }

    /// Bit `i` of the block, `(self.0 >> i) & 1`. An index `i >= 128` returns `false` (and
    /// fails a debug assertion).
    #[inline]
    pub fn bit(self, i: usize) -> bool {
        debug_assert!(i < 128, "bit index {i} out of range");
        u32::try_from(i)
            .ok()
            .and_then(|i| self.0.checked_shr(i))
            .is_some_and(|v| v & 1 == 1)
    }

    /// Bit 0 of the block.
    #[inline]
    pub const fn lsb(self) -> bool {
        self.0 & 1 == 1
    }

    /// All-ones if `bit` is true, else zero (constant time: computed as `0 - bit`, no branch).
    #[inline]
    pub const fn mask(bit: bool) -> Block {
        Block(0u128.wrapping_sub(bit as u128))
    }

    /// GF(2^128) multiplication modulo x^128 + x^7 + x^2 + x + 1, bit `i` of the `u128` being
    /// the coefficient of x^i (see the [module documentation](self)). Uses PCLMULQDQ when the
    /// CPU has it (detected once, cached), else a portable constant-time fallback.
    #[inline]
    pub fn gf128_mul(self, rhs: Block) -> Block {
        let (lo, hi) = self.clmul(rhs);
        Block::gf128_reduce(lo, hi)
    }

    /// The carry-less 128×128 → 256-bit product `(lo, hi)` (the polynomial product
    /// `lo + x^128·hi`), unreduced: XOR-accumulate many of them and reduce once with
    /// [`Block::gf128_reduce`]. PCLMULQDQ when available, else portable.
    #[inline]
    pub fn clmul(self, rhs: Block) -> (Block, Block) {
        let (lo, hi) = clmul_dispatch(self.0, rhs.0);
        (Block(lo), Block(hi))
    }

    /// Reduces the 256-bit polynomial `lo + x^128·hi` modulo x^128 + x^7 + x^2 + x + 1.
    /// Branch-free shifts and XORs (as fast as a PCLMULQDQ reduction, and the same on every CPU).
    #[inline]
    pub const fn gf128_reduce(lo: Block, hi: Block) -> Block {
        Block(reduce(lo.0, hi.0))
    }
}

/// `Block: Zeroize` (by writing [`Block::ZERO`], its `Default`), so that buffers of secret
/// blocks can be wiped.
impl zeroize::DefaultIsZeroes for Block {}

impl BitXor for Block {
    type Output = Block;
    #[inline]
    fn bitxor(self, rhs: Block) -> Block {
        Block(self.0 ^ rhs.0)
    }
}

impl BitXorAssign for Block {
    #[inline]
    fn bitxor_assign(&mut self, rhs: Block) {
        self.0 ^= rhs.0;
    }
}

impl BitAnd for Block {
    type Output = Block;
    #[inline]
    fn bitand(self, rhs: Block) -> Block {
        Block(self.0 & rhs.0)
    }
}

impl BitAndAssign for Block {
    #[inline]
    fn bitand_assign(&mut self, rhs: Block) {
        self.0 &= rhs.0;
    }
}

impl Not for Block {
    type Output = Block;
    #[inline]
    fn not(self) -> Block {
        Block(!self.0)
    }
}

impl From<u128> for Block {
    #[inline]
    fn from(v: u128) -> Block {
        Block(v)
    }
}

impl From<Block> for u128 {
    #[inline]
    fn from(b: Block) -> u128 {
        b.0
    }
}

/// The little-endian encodings of `blocks`, 16 bytes each, concatenated.
pub fn blocks_to_bytes(blocks: &[Block]) -> Vec<u8> {
    let mut out = Vec::with_capacity(blocks.len() * 16);
    for b in blocks {
        out.extend_from_slice(&b.to_bytes());
    }
    out
}

/// The blocks encoded by `bytes` (16 little-endian bytes each), or `None` unless
/// `bytes.len()` is a multiple of 16.
pub fn blocks_from_bytes(bytes: &[u8]) -> Option<Vec<Block>> {
    let (chunks, rest) = bytes.as_chunks::<16>();
    rest.is_empty()
        .then(|| chunks.iter().map(|c| Block::from_bytes(*c)).collect())
}

/// `dst[i] ^= src[i]` for every `i`. The slices must have equal lengths (checked by a debug
/// assertion; in release builds the shorter length is used). On x86-64, AVX2 (two blocks per
/// `vpxor`) when the CPU has it, else SSE2 (LLVM lowers a plain `u128` XOR loop to split
/// 64-bit stores).
#[inline]
pub fn xor_in_place(dst: &mut [Block], src: &[Block]) {
    debug_assert_eq!(dst.len(), src.len(), "xor_in_place: length mismatch");
    #[cfg(target_arch = "x86_64")]
    {
        if avx2_cpuid::get() {
            // SAFETY: the CPU has AVX2, checked just above.
            unsafe { x86::xor_avx2(dst, src) }
        } else {
            x86::xor_sse2(dst, src);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    xor_portable(dst, src);
}

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn xor_portable(dst: &mut [Block], src: &[Block]) {
    for (d, s) in dst.iter_mut().zip(src) {
        d.0 ^= s.0;
    }
}

/// `Σ a[i]·b[i]` in GF(2^128) (same field and convention as [`Block::gf128_mul`]),
/// accumulated unreduced and reduced once: the KOS consistency check's sums. One CPU feature
/// check for the whole slice. The slices must have equal lengths (debug assertion; in release
/// builds the shorter length is used).
pub fn gf128_inner_product(a: &[Block], b: &[Block]) -> Block {
    debug_assert_eq!(a.len(), b.len(), "gf128_inner_product: length mismatch");
    #[cfg(target_arch = "x86_64")]
    if pclmul_cpuid::get() {
        // SAFETY: the CPU supports PCLMULQDQ and SSE2, checked just above.
        return unsafe { x86::inner_product_pclmul(a, b) };
    }
    inner_product_portable(a, b)
}

// ---------------------------------------------------------------------------------------------
// Implementation.

#[cfg(target_arch = "x86_64")]
cpufeatures::new!(pclmul_cpuid, "pclmulqdq", "sse2");
#[cfg(target_arch = "x86_64")]
cpufeatures::new!(avx2_cpuid, "avx2");

/// The run-time selected carry-less product.
#[inline]
fn clmul_dispatch(a: u128, b: u128) -> (u128, u128) {
    #[cfg(target_arch = "x86_64")]
    if pclmul_cpuid::get() {
        // SAFETY: the CPU supports PCLMULQDQ and SSE2, checked just above.
        return unsafe { x86::clmul_pclmul(a, b) };
    }
    clmul_portable(a, b)
}

/// `lo + x^128·hi` mod x^128 + x^7 + x^2 + x + 1: `x^128 ≡ x^7 + x^2 + x + 1`, so `hi·x^128`
/// folds to `hi·(x^7+x^2+x+1)`, whose at most 7 bits of degree ≥ 128 fold once more.
#[inline]
const fn reduce(lo: u128, hi: u128) -> u128 {
    let folded = hi ^ (hi << 1) ^ (hi << 2) ^ (hi << 7);
    let over = (hi >> 127) ^ (hi >> 126) ^ (hi >> 121);
    let over_folded = over ^ (over << 1) ^ (over << 2) ^ (over << 7);
    lo ^ folded ^ over_folded
}

/// Carry-less 32×32 → 64-bit product in constant time: each operand is split into four
/// "holed" words (every fourth bit), so that every integer product has at most 8 terms at a
/// bit position and its carries never reach the next position of the same residue class
/// (BearSSL, `ghash_ctmul.c`).
#[inline]
const fn clmul32(x: u32, y: u32) -> u64 {
    const M0: u64 = 0x1111_1111_1111_1111;
    const M1: u64 = M0 << 1;
    const M2: u64 = M0 << 2;
    const M3: u64 = M0 << 3;
    let (x, y) = (x as u64, y as u64);
    let (x0, x1, x2, x3) = (x & M0, x & M1, x & M2, x & M3);
    let (y0, y1, y2, y3) = (y & M0, y & M1, y & M2, y & M3);
    let z0 = x0.wrapping_mul(y0) ^ x1.wrapping_mul(y3) ^ x2.wrapping_mul(y2) ^ x3.wrapping_mul(y1);
    let z1 = x0.wrapping_mul(y1) ^ x1.wrapping_mul(y0) ^ x2.wrapping_mul(y3) ^ x3.wrapping_mul(y2);
    let z2 = x0.wrapping_mul(y2) ^ x1.wrapping_mul(y1) ^ x2.wrapping_mul(y0) ^ x3.wrapping_mul(y3);
    let z3 = x0.wrapping_mul(y3) ^ x1.wrapping_mul(y2) ^ x2.wrapping_mul(y1) ^ x3.wrapping_mul(y0);
    (z0 & M0) | (z1 & M1) | (z2 & M2) | (z3 & M3)
}

/// Carry-less 64×64 → 128-bit product (Karatsuba over [`clmul32`]).
#[inline]
const fn clmul64(x: u64, y: u64) -> u128 {
    let (x0, x1) = (x as u32, (x >> 32) as u32);
    let (y0, y1) = (y as u32, (y >> 32) as u32);
    let lo = clmul32(x0, y0);
    let hi = clmul32(x1, y1);
    let mid = clmul32(x0 ^ x1, y0 ^ y1) ^ lo ^ hi;
    (lo as u128) ^ ((mid as u128) << 32) ^ ((hi as u128) << 64)
}

/// Portable constant-time carry-less 128×128 → 256-bit product `(lo, hi)` (Karatsuba over
/// [`clmul64`]).
#[inline]
pub(crate) const fn clmul_portable(a: u128, b: u128) -> (u128, u128) {
    let (a0, a1) = (a as u64, (a >> 64) as u64);
    let (b0, b1) = (b as u64, (b >> 64) as u64);
    let lo = clmul64(a0, b0);
    let hi = clmul64(a1, b1);
    let mid = clmul64(a0 ^ a1, b0 ^ b1) ^ lo ^ hi;
    (lo ^ (mid << 64), hi ^ (mid >> 64))
}

fn inner_product_portable(a: &[Block], b: &[Block]) -> Block {
    let (mut lo, mut hi) = (0u128, 0u128);
    for (x, y) in a.iter().zip(b) {
        let (l, h) = clmul_portable(x.0, y.0);
        lo ^= l;
        hi ^= h;
    }
    Block(reduce(lo, hi))
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Block, reduce};
    use core::ptr;
    use std::arch::x86_64::*;

    #[inline(always)]
    fn to_m128(x: u128) -> __m128i {
        // SAFETY: `u128` and `__m128i` are both 16 bytes of plain data with no invalid bit
        // patterns; on x86-64 (little-endian) bits 0..63 of the u128 become the low lane.
        unsafe { core::mem::transmute::<u128, __m128i>(x) }
    }

    #[inline(always)]
    fn from_m128(x: __m128i) -> u128 {
        // SAFETY: as in `to_m128`, the inverse reinterpretation.
        unsafe { core::mem::transmute::<__m128i, u128>(x) }
    }

    /// Schoolbook 128×128 with four PCLMULQDQ, returning unreduced `(lo, hi)`.
    #[inline]
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(super) fn clmul_pclmul(a: u128, b: u128) -> (u128, u128) {
        let (x, y) = (to_m128(a), to_m128(b));
        let lo = from_m128(_mm_clmulepi64_si128::<0x00>(x, y));
        let hi = from_m128(_mm_clmulepi64_si128::<0x11>(x, y));
        let mid = from_m128(_mm_xor_si128(
            _mm_clmulepi64_si128::<0x01>(x, y),
            _mm_clmulepi64_si128::<0x10>(x, y),
        ));
        (lo ^ (mid << 64), hi ^ (mid >> 64))
    }

    /// `dst ^= src`, one SSE2 `pxor` per block (SSE2 is part of the x86-64 baseline).
    pub(super) fn xor_sse2(dst: &mut [Block], src: &[Block]) {
        for (d, s) in dst.iter_mut().zip(src) {
            let (dp, sp) = (ptr::from_mut(d).cast(), ptr::from_ref(s).cast());
            // SAFETY: `dp` and `sp` come from references to 16-byte blocks, valid for a
            // 16-byte read (and `dp` for a write); unaligned load/store. SSE2 is baseline.
            unsafe {
                _mm_storeu_si128(dp, _mm_xor_si128(_mm_loadu_si128(dp), _mm_loadu_si128(sp)))
            };
        }
    }

    /// `dst ^= src`, two blocks per AVX2 `vpxor`.
    #[target_feature(enable = "avx2")]
    pub(super) fn xor_avx2(dst: &mut [Block], src: &[Block]) {
        let (d2, d1) = dst.as_chunks_mut::<2>();
        let (s2, s1) = src.as_chunks::<2>();
        for (d, s) in d2.iter_mut().zip(s2) {
            let (dp, sp) = (ptr::from_mut(d).cast(), ptr::from_ref(s).cast());
            // SAFETY: references to 32 bytes, readable (and `dp` writable); unaligned access.
            unsafe {
                _mm256_storeu_si256(
                    dp,
                    _mm256_xor_si256(_mm256_loadu_si256(dp), _mm256_loadu_si256(sp)),
                )
            };
        }
        for (d, s) in d1.iter_mut().zip(s1) {
            d.0 ^= s.0;
        }
    }

    /// `Σ a[i]·b[i]` by Karatsuba: per pair, three carry-less products (low halves, high
    /// halves, and the XORs of the halves) are accumulated in three vector registers; the
    /// middle term `Σ (a0⊕a1)(b0⊕b1) ⊕ Σ lo ⊕ Σ hi` is formed once, then reduced once.
    #[target_feature(enable = "pclmulqdq,sse2")]
    pub(super) fn inner_product_pclmul(a: &[Block], b: &[Block]) -> Block {
        let (mut lo, mut hi, mut mid) = (
            _mm_setzero_si128(),
            _mm_setzero_si128(),
            _mm_setzero_si128(),
        );
        for (x, y) in a.iter().zip(b) {
            let (x, y) = (to_m128(x.0), to_m128(y.0));
            lo = _mm_xor_si128(lo, _mm_clmulepi64_si128::<0x00>(x, y));
            hi = _mm_xor_si128(hi, _mm_clmulepi64_si128::<0x11>(x, y));
            let xs = _mm_xor_si128(x, _mm_shuffle_epi32::<0x4e>(x));
            let ys = _mm_xor_si128(y, _mm_shuffle_epi32::<0x4e>(y));
            mid = _mm_xor_si128(mid, _mm_clmulepi64_si128::<0x00>(xs, ys));
        }
        let mid = _mm_xor_si128(mid, _mm_xor_si128(lo, hi));
        let (lo, hi, mid) = (from_m128(lo), from_m128(hi), from_m128(mid));
        Block(reduce(lo ^ (mid << 64), hi ^ (mid >> 64)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn words_of_blocks_are_their_little_endian_quarters() {
        let mut b = vec![Block(0x0403_0201_0000_0000_0000_0000_0000_0000), Block(5)];
        let w = super::as_words_mut(&mut b);
        assert_eq!(w.len(), 8);
        assert_eq!(w[3], 0x0403_0201);
        assert_eq!(w[4], 5);
        w[0] = 9;
        assert_eq!(b[0].0 & 0xffff_ffff, 9);
    }

    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// Bit-serial reference: Horner's rule over the bits of `b`, multiplying by x with the
    /// explicit modulus.
    fn naive_mul(a: Block, b: Block) -> Block {
        let mut r = 0u128;
        for i in (0..128).rev() {
            let carry = r >> 127;
            r <<= 1;
            if carry == 1 {
                r ^= 0x87;
            }
            if (b.0 >> i) & 1 == 1 {
                r ^= a.0;
            }
        }
        Block(r)
    }

    /// Schoolbook carry-less product, bit by bit.
    fn naive_clmul(a: u128, b: u128) -> (u128, u128) {
        let (mut lo, mut hi) = (0u128, 0u128);
        for i in 0..128 {
            if (b >> i) & 1 == 1 {
                lo ^= a << i;
                if i > 0 {
                    hi ^= a >> (128 - i);
                }
            }
        }
        (lo, hi)
    }

    fn rng() -> StdRng {
        StdRng::seed_from_u64(0xb10c)
    }

    fn rand_block(r: &mut StdRng) -> Block {
        Block(r.random())
    }

    #[test]
    fn bytes_round_trip_and_bit_order() {
        let b = Block::from_bytes([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80]);
        assert_eq!(b.0, 1 | (1u128 << 127));
        assert!(b.bit(0) && b.bit(127) && !b.bit(1) && b.lsb());
        assert_eq!(Block::from_bytes(b.to_bytes()), b);
        let x = Block(0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100);
        assert_eq!(x.to_bytes(), core::array::from_fn(|i| i as u8));
        assert_eq!(Block::from_slice(&x.to_bytes()), Some(x));
        assert_eq!(Block::from_slice(&[0u8; 15]), None);
        assert_eq!(Block::from_slice(&[0u8; 17]), None);
    }

    #[test]
    fn bit_matches_shift_for_every_index() {
        let mut r = rng();
        let x = rand_block(&mut r);
        for i in 0..128 {
            assert_eq!(x.bit(i), (x.0 >> i) & 1 == 1);
        }
    }

    #[test]
    fn operators_and_masks() {
        let mut r = rng();
        let (a, b) = (rand_block(&mut r), rand_block(&mut r));
        assert_eq!((a ^ b).0, a.0 ^ b.0);
        assert_eq!((a & b).0, a.0 & b.0);
        assert_eq!((!a).0, !a.0);
        let mut c = a;
        c ^= b;
        assert_eq!(c, a ^ b);
        c &= a;
        assert_eq!(c, (a ^ b) & a);
        assert_eq!(Block::mask(true), Block::ONES);
        assert_eq!(Block::mask(false), Block::ZERO);
        assert_eq!(a & Block::mask(true), a);
        assert_eq!(!Block::ZERO, Block::ONES);
        assert_eq!(u128::from(Block::from(5u128)), 5);
        assert_eq!(Block::default(), Block::ZERO);
    }

    #[test]
    fn bulk_bytes_and_xor() {
        let mut r = rng();
        let v: Vec<Block> = (0..37).map(|_| rand_block(&mut r)).collect();
        let bytes = blocks_to_bytes(&v);
        assert_eq!(bytes.len(), 37 * 16);
        assert_eq!(&bytes[16..32], &v[1].to_bytes());
        assert_eq!(blocks_from_bytes(&bytes), Some(v.clone()));
        assert_eq!(blocks_from_bytes(&bytes[1..]), None);
        assert_eq!(blocks_from_bytes(&[]), Some(vec![]));
        let w: Vec<Block> = (0..37).map(|_| rand_block(&mut r)).collect();
        let want: Vec<Block> = v.iter().zip(&w).map(|(a, b)| *a ^ *b).collect();
        let mut x = v.clone();
        xor_in_place(&mut x, &w);
        assert_eq!(x, want);
        let mut x = v.clone();
        xor_portable(&mut x, &w);
        assert_eq!(x, want);
        #[cfg(target_arch = "x86_64")]
        {
            let mut x = v.clone();
            x86::xor_sse2(&mut x, &w);
            assert_eq!(x, want);
            if avx2_cpuid::get() {
                let mut x = v.clone();
                // SAFETY: AVX2 is present, checked just above.
                unsafe { x86::xor_avx2(&mut x, &w) };
                assert_eq!(x, want);
            }
        }
    }

    #[test]
    fn clmul_paths_match_naive() {
        let mut r = rng();
        let mut cases = vec![
            (0, 0),
            (u128::MAX, u128::MAX),
            (1, u128::MAX),
            (1 << 127, 1 << 127),
        ];
        cases.extend((0..2000).map(|_| (r.random::<u128>(), r.random::<u128>())));
        for (a, b) in cases {
            let want = naive_clmul(a, b);
            assert_eq!(clmul_portable(a, b), want, "portable {a:x} {b:x}");
            let (lo, hi) = Block(a).clmul(Block(b));
            assert_eq!((lo.0, hi.0), want, "dispatched {a:x} {b:x}");
            #[cfg(target_arch = "x86_64")]
            if pclmul_cpuid::get() {
                // SAFETY: PCLMULQDQ and SSE2 are present, checked just above.
                assert_eq!(unsafe { x86::clmul_pclmul(a, b) }, want, "pclmul");
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn pclmul_path_is_exercised_on_this_machine() {
        // The CI and development machines have PCLMULQDQ; if this fails the fast path above is
        // silently untested.
        assert!(pclmul_cpuid::get());
    }

    #[test]
    fn gf128_mul_matches_naive_and_field_identities() {
        let mut r = rng();
        for _ in 0..1000 {
            let (a, b, c) = (rand_block(&mut r), rand_block(&mut r), rand_block(&mut r));
            let want = naive_mul(a, b);
            assert_eq!(a.gf128_mul(b), want);
            let (lo, hi) = clmul_portable(a.0, b.0);
            assert_eq!(
                Block::gf128_reduce(Block(lo), Block(hi)),
                want,
                "portable path"
            );
            let (lo, hi) = a.clmul(b);
            assert_eq!(Block::gf128_reduce(lo, hi), want, "clmul + reduce");
            assert_eq!(a.gf128_mul(Block(1)), a, "x·1 = x");
            assert_eq!(a.gf128_mul(Block::ZERO), Block::ZERO);
            assert_eq!(a.gf128_mul(b), b.gf128_mul(a), "commutative");
            assert_eq!(
                a.gf128_mul(b ^ c),
                a.gf128_mul(b) ^ a.gf128_mul(c),
                "distributive"
            );
            assert_eq!(
                a.gf128_mul(b).gf128_mul(c),
                a.gf128_mul(b.gf128_mul(c)),
                "associative"
            );
        }
        // x · x^127 = x^128 = x^7 + x^2 + x + 1.
        assert_eq!(Block(2).gf128_mul(Block(1 << 127)), Block(0x87));
        // Reducing x^255 = x^128·x^127 agrees with the bit-serial reference.
        assert_eq!(
            Block::gf128_reduce(Block::ZERO, Block(1 << 127)),
            naive_mul(Block(1 << 127), Block(1 << 127)).gf128_mul(Block(2))
        );
    }

    #[test]
    fn inner_product_both_paths() {
        let mut r = rng();
        for n in [0usize, 1, 2, 65, 1000] {
            let a: Vec<Block> = (0..n).map(|_| rand_block(&mut r)).collect();
            let b: Vec<Block> = (0..n).map(|_| rand_block(&mut r)).collect();
            let want = a
                .iter()
                .zip(&b)
                .fold(Block::ZERO, |acc, (x, y)| acc ^ naive_mul(*x, *y));
            assert_eq!(gf128_inner_product(&a, &b), want);
            assert_eq!(inner_product_portable(&a, &b), want);
            #[cfg(target_arch = "x86_64")]
            if pclmul_cpuid::get() {
                // SAFETY: PCLMULQDQ and SSE2 are present, checked just above.
                assert_eq!(unsafe { x86::inner_product_pclmul(&a, &b) }, want);
            }
        }
    }
}
