//! Fixed-key AES as a random permutation π, and the hashes built on it.
//!
//! Cite: Guo, Katz, Wang, Yu, "Efficient and Secure Multiparty Computation from Fixed-Key Block
//! Ciphers", IEEE S&P 2020 (ePrint 2019/074), §7. In the random-permutation model, π = AES-128
//! under a key that is public but chosen per session gives, for the OT-extension layer:
//!
//! - [`FixedKeyAes::cr_hash`]: a correlation-robust hash `CR(x) = π(σ(x)) ⊕ σ(x)` (§7.2, MMO
//!   with the orthomorphism σ): for rows whose correlated queries are `x` and `x ⊕ Δ` with one
//!   secret Δ, as in semi-honest IKNP/ALSZ;
//! - [`FixedKeyAes::tccr_hash`]: a tweakable circular-correlation-robust hash
//!   `TCCR(i, x) = π(π(x) ⊕ i) ⊕ π(x)` (§7.4), for rows hashed under distinct tweaks (the OT
//!   index) whose inputs may be correlated with the secret in more general ways, as in
//!   malicious KOS.
//!
//! Which property a protocol needs (KKRT's code-correlated rows, for instance) is for the
//! protocol's module to argue; this module only implements the two constructions exactly.
//!
//! **Key per session.** GKWY20 analyse π as a public random permutation with a fixed key. We
//! key π per session ([`FixedKeyAes::new`]; the caller derives the key from the session id), so
//! that nothing an attacker computes on π ahead of time or in one session carries over to
//! another. The key is still public: nothing here relies on its secrecy.
//!
//! **Byte order.** A [`Block`] enters AES as its little-endian bytes
//! ([`Block::to_bytes`]): AES byte `k` is bits `8k..8k+7` of the `u128`, and the ciphertext is
//! read back the same way. So `Block::from_bytes(plaintext)` encrypts to
//! `Block::from_bytes(ciphertext)` exactly as in FIPS-197.
//!
//! **Speed.** Blocks go to the `aes` crate's multi-block API, which picks AES-NI, 256-bit VAES
//! or 512-bit VAES (64 blocks in flight) at run time, with a constant-time bitsliced fallback.

use crate::block::Block;
use ::aes::Aes128;
use ::aes::cipher::{BlockCipherEncrypt, KeyInit};

/// Blocks processed per stack buffer in [`FixedKeyAes::cr_hash`] / [`FixedKeyAes::tccr_hash`]
/// (a multiple of the 64 blocks that the VAES-512 backend pipelines).
const CHUNK: usize = 256;

/// AES-128 under a per-session public key, used as a random permutation π.
#[derive(Clone)]
pub struct FixedKeyAes {
    cipher: Aes128,
}

impl core::fmt::Debug for FixedKeyAes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("FixedKeyAes { .. }")
    }
}

impl FixedKeyAes {
    /// π with a key chosen per session (callers derive it from the session id, so no
    /// precomputation across sessions helps an attacker). The key's bytes are
    /// `key.to_bytes()`.
    pub fn new(key: Block) -> Self {
        let key = ::aes::cipher::Key::<Aes128>::from(key.to_bytes());
        FixedKeyAes {
            cipher: Aes128::new(&key),
        }
    }

    /// π(x) for every block, in place (the cipher's multi-block API, so AES-NI/VAES pipelines
    /// 8 to 64 blocks at a time).
    pub fn permute(&self, blocks: &mut [Block]) {
        #[cfg(target_endian = "little")]
        self.cipher.encrypt_blocks(as_aes_blocks_mut(blocks));
        #[cfg(not(target_endian = "little"))]
        self.permute_buffered(blocks);
    }

    /// `out[i] = π(input[i])` (equal lengths; in release builds the shorter length is used):
    /// [`FixedKeyAes::permute`] without first copying the input into the output.
    pub fn permute_b2b(&self, input: &[Block], out: &mut [Block]) {
        debug_assert_eq!(input.len(), out.len());
        let n = input.len().min(out.len());
        let (input, out) = (&input[..n], &mut out[..n]);
        #[cfg(target_endian = "little")]
        {
            // The lengths are equal, so `encrypt_blocks_b2b` cannot fail.
            let _ = self
                .cipher
                .encrypt_blocks_b2b(as_aes_blocks(input), as_aes_blocks_mut(out));
        }
        #[cfg(not(target_endian = "little"))]
        {
            out.copy_from_slice(input);
            self.permute_buffered(out);
        }
    }

    /// Counter mode into bytes: `out[k]` = the little-endian bytes of π(Block(first + k)), as
    /// [`FixedKeyAes::permute`] of the counters would give them, written and encrypted in
    /// place (no buffer, no copy).
    pub fn ctr_bytes(&self, first: u128, out: &mut [[u8; 16]]) {
        for (k, b) in out.iter_mut().enumerate() {
            *b = first.wrapping_add(k as u128).to_le_bytes();
        }
        // SAFETY: `[u8; 16]` and `aes::Block` (`hybrid_array::Array<u8, U16>`,
        // `repr(transparent)` over `[u8; 16]`) have the same size and alignment 1, and every
        // bit pattern is valid for both; the slice keeps its length and reborrows `out`
        // mutably for its lifetime.
        let blocks = unsafe {
            core::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<::aes::Block>(), out.len())
        };
        self.cipher.encrypt_blocks(blocks);
    }

    /// π(x) for one block.
    #[inline]
    pub fn permute_block(&self, x: Block) -> Block {
        let mut b = ::aes::Block::from(x.to_bytes());
        self.cipher.encrypt_block(&mut b);
        Block::from_bytes(b.into())
    }

    /// The byte-order-independent path of [`FixedKeyAes::permute`], through a stack buffer
    /// of AES blocks. Used on big-endian targets; tested against the direct path.
    #[cfg_attr(target_endian = "little", allow(dead_code))]
    fn permute_buffered(&self, blocks: &mut [Block]) {
        let mut buf = [::aes::Block::default(); CHUNK];
        for chunk in blocks.chunks_mut(CHUNK) {
            let buf = &mut buf[..chunk.len()];
            for (b, x) in buf.iter_mut().zip(chunk.iter()) {
                *b = x.to_bytes().into();
            }
            self.cipher.encrypt_blocks(buf);
            for (x, b) in chunk.iter_mut().zip(buf.iter()) {
                *x = Block::from_bytes((*b).into());
            }
        }
    }

    /// Correlation-robust hash `CR(x) = π(σ(x)) ⊕ σ(x)` with `σ(x_L‖x_R) = (x_L ⊕ x_R)‖x_L`
    /// (GKWY20 §7.2, "MMO with orthomorphism σ"), in place.
    ///
    /// Halves: `x_L` is the **high** 64 bits of the `u128` (bits 64..127, bytes 8..15 of
    /// `to_bytes`) and `x_R` the low 64 bits, so `σ(x) = ((hi ⊕ lo) << 64) | hi` — the same σ
    /// as swanky's `scuttlebutt::AesHash::cr_hash` (`shuffle_epi32(x, 78) ⊕ (x ∧ 1^64‖0^64)`).
    /// σ is linear and both σ and `x ↦ σ(x) ⊕ x` are permutations, as §7.2 requires.
    pub fn cr_hash(&self, blocks: &mut [Block]) {
        let mut tmp = [Block::ZERO; CHUNK];
        for chunk in blocks.chunks_mut(CHUNK) {
            let tmp = &mut tmp[..chunk.len()];
            sigma_blocks(chunk, tmp);
            self.permute_b2b(tmp, chunk);
            crate::block::xor_in_place(chunk, tmp);
        }
    }

    /// Tweakable circular-correlation-robust hash `TCCR(i, x) = π(π(x) ⊕ i) ⊕ π(x)`
    /// (GKWY20 §7.4), in place, with tweak `i = first_tweak + j` for `blocks[j]`.
    ///
    /// The tweak enters as the block `Block(first_tweak as u128 + j as u128)` (its value in the
    /// low bits): the sum is taken in `u128`, so tweaks never wrap and are distinct for
    /// distinct `j` even when `first_tweak + j` exceeds `u64::MAX`.
    pub fn tccr_hash(&self, first_tweak: u64, blocks: &mut [Block]) {
        let mut tweak = u128::from(first_tweak);
        self.tccr_chunks(blocks, |chunk, tmp| {
            xor_tweaks(chunk, tweak, tmp);
            tweak += chunk.len() as u128;
        });
    }

    /// [`tccr_hash`](Self::tccr_hash) out of place: `out[j] = TCCR(first_tweak + j,
    /// input[j])`, `input` unchanged (equal lengths; in release builds the shorter length is
    /// used). For a caller that keeps the rows it hashes: no copy of them is made first.
    pub fn tccr_hash_b2b(&self, first_tweak: u64, input: &[Block], out: &mut [Block]) {
        debug_assert_eq!(input.len(), out.len());
        let mut tweak = u128::from(first_tweak);
        let mut tmp = [Block::ZERO; CHUNK];
        for (x, chunk) in input.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let n = x.len().min(chunk.len());
            let (x, chunk, tmp) = (&x[..n], &mut chunk[..n], &mut tmp[..n]);
            self.permute_b2b(x, chunk);
            xor_tweaks(chunk, tweak, tmp);
            tweak += n as u128;
            self.permute(tmp);
            crate::block::xor_in_place(chunk, tmp);
        }
    }

    /// [`tccr_hash`](Self::tccr_hash) with an arbitrary tweak per block: `blocks[j]` is hashed
    /// under `tweak(j)`, in place (for protocols whose tweak is a bin or slot number rather
    /// than a running index).
    pub fn tccr_hash_with(&self, blocks: &mut [Block], tweak: impl Fn(usize) -> u128) {
        let mut first = 0usize;
        self.tccr_chunks(blocks, |chunk, tmp| {
            for (k, (t, x)) in tmp.iter_mut().zip(chunk.iter()).enumerate() {
                *t = Block(x.0 ^ tweak(first + k));
            }
            first += chunk.len();
        });
    }

    /// The TCCR skeleton over stack-buffered chunks: π(x) in place, `tweak_into(π(x), tmp)`
    /// writes π(x) ⊕ i into `tmp`, then x ← π(tmp) ⊕ π(x).
    fn tccr_chunks(
        &self,
        blocks: &mut [Block],
        mut tweak_into: impl FnMut(&[Block], &mut [Block]),
    ) {
        let mut tmp = [Block::ZERO; CHUNK];
        for chunk in blocks.chunks_mut(CHUNK) {
            let tmp = &mut tmp[..chunk.len()];
            self.permute(chunk);
            tweak_into(chunk, tmp);
            self.permute(tmp);
            crate::block::xor_in_place(chunk, tmp);
        }
    }
}

impl FixedKeyAes {
    /// [`tccr_hash`](Self::tccr_hash) on pairs: both blocks of `pairs[j]` are hashed with the
    /// tweak `first_tweak + j` (the two messages of one random OT), in place.
    pub fn tccr_hash_pairs(&self, first_tweak: u64, pairs: &mut [[Block; 2]]) {
        // CHUNK is even, so every chunk of the flattened pairs holds whole pairs.
        let mut tweak = u128::from(first_tweak);
        self.tccr_chunks(pairs.as_flattened_mut(), |flat, tmp| {
            xor_pair_tweaks(flat, tweak, tmp);
            tweak += (flat.len() / 2) as u128;
        });
    }
}

/// `dst[2j + b] = src[2j + b] ⊕ Block(first + j)` (equal, even lengths).
fn xor_pair_tweaks(src: &[Block], first: u128, dst: &mut [Block]) {
    let mut t = first;
    for (d, s) in dst.chunks_exact_mut(2).zip(src.chunks_exact(2)) {
        d[0] = Block(s[0].0 ^ t);
        d[1] = Block(s[1].0 ^ t);
        t = t.wrapping_add(1);
    }
}

/// GKWY20's orthomorphism `σ(x_L‖x_R) = (x_L ⊕ x_R)‖x_L`, `x_L` the high half.
#[inline(always)]
pub(crate) const fn sigma(x: Block) -> Block {
    let hi = x.0 >> 64;
    let lo = x.0 & (u64::MAX as u128);
    Block(((hi ^ lo) << 64) | hi)
}

#[cfg(target_arch = "x86_64")]
cpufeatures::new!(cpuid_avx2, "avx2");

/// `dst[j] = σ(src[j])` (equal lengths), with AVX2 when the CPU has it.
fn sigma_blocks(src: &[Block], dst: &mut [Block]) {
    #[cfg(target_arch = "x86_64")]
    if cpuid_avx2::get() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { x86::sigma_avx2(src, dst) };
    }
    sigma_blocks_portable(src, dst);
}

fn sigma_blocks_portable(src: &[Block], dst: &mut [Block]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = sigma(*s);
    }
}

/// `dst[j] = src[j] ⊕ Block(first + j)` (equal lengths), with AVX2 when the CPU has it.
fn xor_tweaks(src: &[Block], first: u128, dst: &mut [Block]) {
    #[cfg(target_arch = "x86_64")]
    if cpuid_avx2::get() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { x86::xor_tweaks_avx2(src, first, dst) };
    }
    xor_tweaks_portable(src, first, dst);
}

fn xor_tweaks_portable(src: &[Block], first: u128, dst: &mut [Block]) {
    let mut t = first;
    for (d, s) in dst.iter_mut().zip(src) {
        *d = Block(s.0 ^ t);
        t = t.wrapping_add(1);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Block, xor_tweaks_portable};
    use core::ptr;
    use std::arch::x86_64::*;

    /// σ on two blocks per 256-bit register: swap the 64-bit halves of each lane
    /// (`vpshufd` 0x4e), XOR in the high half.
    #[target_feature(enable = "avx2")]
    pub(super) fn sigma_avx2(src: &[Block], dst: &mut [Block]) {
        let (s2, s1) = src.as_chunks::<2>();
        let (d2, d1) = dst.as_chunks_mut::<2>();
        let high = _mm256_set_epi64x(-1, 0, -1, 0);
        for (s, d) in s2.iter().zip(d2.iter_mut()) {
            // SAFETY: `s` is a reference to 32 readable bytes; unaligned load.
            let v = unsafe { _mm256_loadu_si256(ptr::from_ref(s).cast()) };
            let r = _mm256_xor_si256(_mm256_shuffle_epi32::<0x4e>(v), _mm256_and_si256(v, high));
            // SAFETY: `d` is a reference to 32 writable bytes; unaligned store.
            unsafe { _mm256_storeu_si256(ptr::from_mut(d).cast(), r) };
        }
        for (d, s) in d1.iter_mut().zip(s1) {
            *d = super::sigma(*s);
        }
    }

    /// The tweaks `first + j` as two 64-bit lanes per block when they all fit in 64 bits
    /// (every real call); otherwise the portable loop, which carries into the high half.
    #[target_feature(enable = "avx2")]
    pub(super) fn xor_tweaks_avx2(src: &[Block], first: u128, dst: &mut [Block]) {
        let n = src.len().min(dst.len());
        let Ok(start) = u64::try_from(first) else {
            return xor_tweaks_portable(src, first, dst);
        };
        if start.checked_add(n as u64).is_none() {
            return xor_tweaks_portable(src, first, dst);
        }
        let (s2, s1) = src.as_chunks::<2>();
        let (d2, d1) = dst.as_chunks_mut::<2>();
        let mut t = _mm256_set_epi64x(0, start.wrapping_add(1) as i64, 0, start as i64);
        let two = _mm256_set_epi64x(0, 2, 0, 2);
        for (s, d) in s2.iter().zip(d2.iter_mut()) {
            // SAFETY: `s` is a reference to 32 readable bytes; unaligned load.
            let v = unsafe { _mm256_loadu_si256(ptr::from_ref(s).cast()) };
            // SAFETY: `d` is a reference to 32 writable bytes; unaligned store.
            unsafe { _mm256_storeu_si256(ptr::from_mut(d).cast(), _mm256_xor_si256(v, t)) };
            t = _mm256_add_epi64(t, two);
        }
        let done = 2 * s2.len();
        xor_tweaks_portable(s1, first + done as u128, d1);
    }
}

/// Views blocks as AES blocks without copying, as [`as_aes_blocks_mut`].
#[cfg(target_endian = "little")]
#[inline(always)]
fn as_aes_blocks(blocks: &[Block]) -> &[::aes::Block] {
    // SAFETY: as in `as_aes_blocks_mut` (same size, smaller alignment, every bit pattern valid),
    // for a shared borrow.
    unsafe { core::slice::from_raw_parts(blocks.as_ptr().cast::<::aes::Block>(), blocks.len()) }
}

/// Views blocks as AES blocks without copying (little-endian targets, where the in-memory
/// bytes of a `u128` are its little-endian encoding).
#[cfg(target_endian = "little")]
#[inline(always)]
fn as_aes_blocks_mut(blocks: &mut [Block]) -> &mut [::aes::Block] {
    // SAFETY: `Block` is `repr(transparent)` over `u128` (16 bytes, alignment 16);
    // `aes::Block` is `hybrid_array::Array<u8, U16>`, `repr(transparent)` over `[u8; 16]`
    // (16 bytes, alignment 1). Every bit pattern is valid for both, the pointer is suitably
    // aligned for the smaller alignment, the length in 16-byte elements is unchanged, and the
    // returned slice reborrows `blocks` mutably for its whole lifetime, so nothing else can
    // observe the bytes while it lives.
    unsafe {
        core::slice::from_raw_parts_mut(blocks.as_mut_ptr().cast::<::aes::Block>(), blocks.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    fn hex16(s: &str) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0xff);
        }
        out
    }

    fn random_blocks(seed: u64, n: usize) -> Vec<Block> {
        let mut r = StdRng::seed_from_u64(seed);
        (0..n).map(|_| Block(r.random())).collect()
    }

    #[test]
    fn fips197_appendix_c1_vector() {
        // FIPS-197 Appendix C.1 (AES-128).
        let key = Block::from_bytes(hex16("000102030405060708090a0b0c0d0e0f"));
        let pt = Block::from_bytes(hex16("00112233445566778899aabbccddeeff"));
        let ct = Block::from_bytes(hex16("69c4e0d86a7b0430d8cdb78070b4c55a"));
        let aes = FixedKeyAes::new(key);
        let mut v = vec![pt; 100];
        aes.permute(&mut v);
        assert!(v.iter().all(|&c| c == ct));
        assert_eq!(aes.permute_block(pt), ct);
        let mut w = vec![pt; 100];
        aes.permute_buffered(&mut w);
        assert_eq!(v, w);
        // FIPS-197 Appendix B as a second vector.
        let aes = FixedKeyAes::new(Block::from_bytes(hex16("2b7e151628aed2a6abf7158809cf4f3c")));
        assert_eq!(
            aes.permute_block(Block::from_bytes(hex16("3243f6a8885a308d313198a2e0370734"))),
            Block::from_bytes(hex16("3925841d02dc09fbdc118597196a0b32"))
        );
    }

    #[test]
    fn permute_paths_agree_on_every_length() {
        let aes = FixedKeyAes::new(Block(7));
        for n in [0, 1, 7, 8, 9, 63, 64, 65, 255, 256, 257, 1000] {
            let v = random_blocks(n as u64, n);
            let mut a = v.clone();
            aes.permute(&mut a);
            let mut b = v.clone();
            aes.permute_buffered(&mut b);
            assert_eq!(a, b, "n = {n}");
            for (x, y) in v.iter().zip(&a) {
                assert_eq!(aes.permute_block(*x), *y);
            }
        }
    }

    #[test]
    fn cr_hash_matches_definition() {
        let aes = FixedKeyAes::new(Block(0x1234));
        for n in [0, 1, 5, 256, 257, 600] {
            let v = random_blocks(100 + n as u64, n);
            let mut got = v.clone();
            aes.cr_hash(&mut got);
            for (x, y) in v.iter().zip(&got) {
                let (xl, xr) = (x.0 >> 64, x.0 & (u64::MAX as u128));
                let s = Block(((xl ^ xr) << 64) | xl);
                let mut p = [s];
                aes.permute(&mut p);
                assert_eq!(*y, p[0] ^ s);
            }
        }
    }

    #[test]
    fn sigma_is_an_orthomorphism_on_samples() {
        // σ is linear; σ and σ ⊕ id are invertible: σ⁻¹(a‖b) = b‖(a ⊕ b), and
        // (σ ⊕ id)(x_L‖x_R) = x_R‖(x_L ⊕ x_R), whose inverse is (a‖b) ↦ (a ⊕ b)‖a.
        for x in random_blocks(9, 100) {
            let s = sigma(x);
            let (a, b) = (s.0 >> 64, s.0 & (u64::MAX as u128));
            assert_eq!(Block((b << 64) | (a ^ b)), x);
            let t = s ^ x;
            let (a, b) = (t.0 >> 64, t.0 & (u64::MAX as u128));
            assert_eq!(Block(((a ^ b) << 64) | a), x);
        }
        // x_L is the high half: σ(x_L = 1, x_R = 0) = (1 ⊕ 0)‖1.
        assert_eq!(sigma(Block(1 << 64)), Block((1 << 64) | 1));
    }

    #[test]
    fn sigma_and_tweak_paths_agree() {
        for n in [0usize, 1, 2, 3, 255, 256] {
            let v = random_blocks(77 + n as u64, n);
            let want: Vec<Block> = v.iter().map(|x| sigma(*x)).collect();
            let mut got = vec![Block::ZERO; n];
            sigma_blocks(&v, &mut got);
            assert_eq!(got, want);
            for first in [0u128, 5, u128::from(u64::MAX) - 1, u128::from(u64::MAX) + 3] {
                let want: Vec<Block> = v
                    .iter()
                    .enumerate()
                    .map(|(j, x)| Block(x.0 ^ (first + j as u128)))
                    .collect();
                let mut got = vec![Block::ZERO; n];
                xor_tweaks(&v, first, &mut got);
                assert_eq!(got, want, "first {first}");
                let mut got = vec![Block::ZERO; n];
                xor_tweaks_portable(&v, first, &mut got);
                assert_eq!(got, want, "portable, first {first}");
                #[cfg(target_arch = "x86_64")]
                if cpuid_avx2::get() {
                    let mut got = vec![Block::ZERO; n];
                    // SAFETY: AVX2 is present, checked just above.
                    unsafe { x86::xor_tweaks_avx2(&v, first, &mut got) };
                    assert_eq!(got, want, "avx2, first {first}");
                }
            }
            let mut got = vec![Block::ZERO; n];
            sigma_blocks_portable(&v, &mut got);
            assert_eq!(got, v.iter().map(|x| sigma(*x)).collect::<Vec<_>>());
            #[cfg(target_arch = "x86_64")]
            if cpuid_avx2::get() {
                let mut got = vec![Block::ZERO; n];
                // SAFETY: AVX2 is present, checked just above.
                unsafe { x86::sigma_avx2(&v, &mut got) };
                assert_eq!(got, v.iter().map(|x| sigma(*x)).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn tccr_hash_matches_definition() {
        let aes = FixedKeyAes::new(Block(0x5678));
        for (first, n) in [(0u64, 0usize), (0, 1), (42, 300), (u64::MAX - 3, 9)] {
            let v = random_blocks(first ^ n as u64, n);
            let mut got = v.clone();
            aes.tccr_hash(first, &mut got);
            for (j, (x, y)) in v.iter().zip(&got).enumerate() {
                let i = Block(u128::from(first) + j as u128);
                let px = aes.permute_block(*x);
                assert_eq!(*y, aes.permute_block(px ^ i) ^ px, "first {first} j {j}");
            }
        }
        // Distinct tweaks give distinct outputs on the same input.
        let mut v = vec![Block(5); 2];
        aes.tccr_hash(0, &mut v);
        assert_ne!(v[0], v[1]);
    }

    #[test]
    fn tccr_hash_b2b_equals_the_in_place_hash() {
        let aes = FixedKeyAes::new(Block(0x9abc));
        for (first, n) in [
            (0u64, 0usize),
            (3, 1),
            (42, 256),
            (7, 700),
            (u64::MAX - 3, 9),
        ] {
            let v = random_blocks(first ^ n as u64, n);
            let mut want = v.clone();
            aes.tccr_hash(first, &mut want);
            let mut got = vec![Block::ZERO; n];
            aes.tccr_hash_b2b(first, &v, &mut got);
            assert_eq!(got, want, "first {first} n {n}");
        }
    }

    #[test]
    fn tccr_hash_with_uses_each_blocks_own_tweak() {
        let aes = FixedKeyAes::new(Block(0x1234));
        for n in [0usize, 1, 255, 256, 700] {
            let v = random_blocks(n as u64 + 7, n);
            let tweak = |j: usize| (j as u128 * 0x9e37_79b9) ^ (1u128 << 100);
            let mut got = v.clone();
            aes.tccr_hash_with(&mut got, tweak);
            for (j, (x, y)) in v.iter().zip(&got).enumerate() {
                let px = aes.permute_block(*x);
                assert_eq!(
                    *y,
                    aes.permute_block(px ^ Block(tweak(j))) ^ px,
                    "n {n} j {j}"
                );
            }
            // With consecutive tweaks it is tccr_hash.
            let mut a = v.clone();
            aes.tccr_hash_with(&mut a, |j| 5 + j as u128);
            let mut b = v.clone();
            aes.tccr_hash(5, &mut b);
            assert_eq!(a, b);
        }
    }

    #[test]
    fn tccr_hash_pairs_uses_one_tweak_per_pair() {
        let aes = FixedKeyAes::new(Block(0x9abc));
        // 300 pairs cross the 128-pair buffer boundary.
        for (first, n) in [(0u64, 0usize), (7, 1), (42, 300)] {
            let v = random_blocks(first + n as u64, 2 * n);
            let mut pairs: Vec<[Block; 2]> = v.chunks_exact(2).map(|p| [p[0], p[1]]).collect();
            aes.tccr_hash_pairs(first, &mut pairs);
            for (j, pair) in pairs.iter().enumerate() {
                for b in 0..2 {
                    let mut one = [v[2 * j + b]];
                    aes.tccr_hash(first + j as u64, &mut one);
                    assert_eq!(pair[b], one[0], "first {first} pair {j} block {b}");
                }
            }
        }
    }
}
