//! Two-lane SHA-256 compression: two independent messages hashed at once.
//!
//! [`compress256_x2`] runs the SHA-256 compression function (FIPS 180-4 §6.2.2) on two
//! independent lanes: lane `l`'s state absorbs lane `l`'s 64-byte blocks, with exactly the result
//! of `sha2::block_api::compress256(&mut states[l], blocks[l])`. The OT-extension row hashes
//! (KK13, KKRT) hash one short fixed-length message per row, so they can feed rows in pairs.
//!
//! # Why
//!
//! With the x86 SHA extensions one block is 32 `sha256rnds2` instructions (two rounds each), and
//! each takes the state the previous one produced, so one message runs at that instruction's
//! latency, not its throughput. On AMD Zen 4 (measured) `sha256rnds2` has a latency of 4 cycles
//! and a throughput of one per cycle, and `sha256msg2` one per 2 cycles: one message costs about
//! 128 cycles per block, and two messages with their instruction streams interleaved cost about
//! 64 cycles per block (their chains overlap). Four lanes gain nothing on Zen 4: the SHA unit's
//! throughput (about 60 cycles per block with the message schedule) is then the limit. With the
//! 16 SSE registers four lanes' states and schedules spill and ran slower than two lanes; with
//! AVX-512's 32 registers they were at most 5% faster. So there is no four-lane function.
//!
//! LLVM's generic x86-64 scheduling model does not know `sha256rnds2`'s latency and reorders the
//! interleaved code into one lane's whole chain followed by the other's, which the out-of-order
//! window cannot overlap; an empty `asm!` that ties the lanes' registers together after every
//! step keeps the order (it emits no instruction).
//!
//! # Implementations (chosen at run time, detection cached by `cpufeatures`)
//!
//! | CPU features | method |
//! |---|---|
//! | SHA, SSE2, SSSE3, SSE4.1 (Intel since Goldmont / Ice Lake, AMD since Zen) | the standard SHA-NI compression (as in the `sha2` crate's `x86_sha` backend) with one copy of every step per lane, the lanes interleaved step by step |
//! | anything else, or lanes with different block counts | `sha2::block_api::compress256` on each lane in turn (which itself uses the SHA extensions when it can) |
//!
//! # Tests and benchmarks
//!
//! The tests compare both paths (and the SHA-NI path with 4 lanes, since its code is generic in
//! the lane count) on random states and messages of 0 to 3 blocks per lane against
//! `compress256` on each lane, lanes of different lengths, and padded messages against
//! `sha2::Sha256::digest`. `cargo bench -p blindjoin-core --bench sha256x` times one block
//! compression by `compress256` one message at a time and by [`compress256_x2`].

use sha2::block_api::compress256;

/// SHA-256's initial hash value H(0) (FIPS 180-4 §5.3.3): the state before the first block.
pub const SHA256_IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

#[cfg(target_arch = "x86_64")]
cpufeatures::new!(cpuid_sha, "sha", "sse2", "ssse3", "sse4.1");

/// Whether this CPU takes the interleaved SHA-NI path (otherwise the lanes are compressed one
/// after the other by `sha2`).
#[inline]
pub fn accelerated() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        cpuid_sha::get()
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Compresses 2 independent messages at once: for each lane `l`, `states[l]` absorbs
/// `blocks[l]`, exactly as `sha2::block_api::compress256(&mut states[l], blocks[l])` would.
///
/// Fast when both lanes have the same number of blocks; otherwise the lanes are compressed one
/// after the other (same result).
#[inline]
pub fn compress256_x2(states: &mut [[u32; 8]; 2], blocks: [&[[u8; 64]]; 2]) {
    compress_lanes(states, blocks);
}

/// The dispatcher: the interleaved SHA-NI path if the CPU has it and every lane has the same
/// number of blocks, the portable path otherwise.
#[inline]
fn compress_lanes<const N: usize>(states: &mut [[u32; 8]; N], blocks: [&[[u8; 64]]; N]) {
    #[cfg(target_arch = "x86_64")]
    {
        let n = blocks.first().map_or(0, |b| b.len());
        if cpuid_sha::get() && blocks.iter().all(|b| b.len() == n) {
            // SAFETY: the CPU supports SHA, SSE2, SSSE3 and SSE4.1 (just detected). (The equal
            // block counts, just checked, are for the result, not for safety.)
            unsafe { x86::compress_lanes(states, blocks) };
            return;
        }
    }
    compress_portable(states, blocks);
}

/// The portable path: `sha2`'s compression function on each lane in turn.
fn compress_portable<const N: usize>(states: &mut [[u32; 8]; N], blocks: [&[[u8; 64]]; N]) {
    for (state, b) in states.iter_mut().zip(blocks) {
        compress256(state, b);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    /// The SHA-256 round constants (FIPS 180-4 §4.2.2) in groups of four, 16-byte aligned.
    #[repr(C, align(16))]
    struct RoundConstants([[u32; 4]; 16]);

    static K: RoundConstants = RoundConstants([
        [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5],
        [0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5],
        [0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3],
        [0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174],
        [0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc],
        [0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da],
        [0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7],
        [0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967],
        [0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13],
        [0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85],
        [0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3],
        [0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070],
        [0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5],
        [0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3],
        [0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208],
        [0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2],
    ]);

    /// Round constants `K[4g..4g+4]` as one vector (g < 16).
    #[inline]
    #[target_feature(enable = "sse2")]
    fn k4(g: usize) -> __m128i {
        let k: *const [u32; 4] = &K.0[g];
        // SAFETY: `k` points to 16 readable bytes, 16-byte aligned since `K` and its rows are.
        unsafe { _mm_load_si128(k.cast()) }
    }

    /// Rounds 4g..4g+4 of every lane (two `sha256rnds2` per lane), given the schedule words
    /// `w[l]` of those rounds. Each lane's pair of instructions is a dependent chain; the lanes'
    /// chains are independent and issued interleaved.
    #[inline]
    #[target_feature(enable = "sha,sse2")]
    fn rounds4<const N: usize>(
        g: usize,
        abef: &mut [__m128i; N],
        cdgh: &mut [__m128i; N],
        w: &[__m128i; N],
    ) {
        let k = k4(g);
        let mut wk = [_mm_setzero_si128(); N];
        for l in 0..N {
            wk[l] = _mm_add_epi32(w[l], k);
        }
        for l in 0..N {
            cdgh[l] = _mm_sha256rnds2_epu32(cdgh[l], abef[l], wk[l]);
        }
        lockstep(cdgh);
        for l in 0..N {
            // sha256rnds2 reads its two words from the low half of the third operand.
            let hi = _mm_shuffle_epi32::<0x0E>(wk[l]);
            abef[l] = _mm_sha256rnds2_epu32(abef[l], cdgh[l], hi);
        }
        lockstep(abef);
    }

    /// Makes the compiler treat the lanes' values as depending on each other, so that it emits
    /// each step of every lane before the next step of any lane: LLVM's generic x86-64 schedule
    /// does not know that `sha256rnds2` has a latency of several cycles and would otherwise emit
    /// one lane's whole chain, then the next, and the out-of-order window is too small to
    /// overlap them. The template is only a comment, so no instruction is emitted and at run
    /// time no dependency exists.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn lockstep<const N: usize>(v: &mut [__m128i; N]) {
        for l in 1..N {
            let (lo, hi) = v.split_at_mut(l);
            if let (Some(a), Some(b)) = (lo.last_mut(), hi.first_mut()) {
                // SAFETY: the template is a comment: the asm touches no memory, stack or flags
                // and leaves both registers as they are.
                unsafe {
                    core::arch::asm!(
                        "/* {0} {1} */",
                        inout(xmm_reg) * a,
                        inout(xmm_reg) * b,
                        options(pure, nomem, nostack, preserves_flags)
                    );
                }
            }
        }
    }

    /// The schedule words of the next four rounds of one lane, from the last 16 words
    /// `w0 ‖ w1 ‖ w2 ‖ w3` (oldest first): W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16].
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3")]
    fn schedule(w0: __m128i, w1: __m128i, w2: __m128i, w3: __m128i) -> __m128i {
        let t = _mm_add_epi32(_mm_sha256msg1_epu32(w0, w1), _mm_alignr_epi8::<4>(w3, w2));
        _mm_sha256msg2_epu32(t, w3)
    }

    /// Loads one 64-byte block as four vectors of big-endian words.
    #[inline]
    #[target_feature(enable = "sse2,ssse3")]
    fn load_block(block: &[u8; 64]) -> [__m128i; 4] {
        let bswap = _mm_set_epi64x(0x0C0D_0E0F_0809_0A0B, 0x0405_0607_0001_0203);
        let p: *const __m128i = block.as_ptr().cast();
        let mut w = [_mm_setzero_si128(); 4];
        for (i, wi) in w.iter_mut().enumerate() {
            // SAFETY: i < 4, so `p + i` is 16 of the 64 bytes of `block`; `loadu` is unaligned.
            *wi = _mm_shuffle_epi8(unsafe { _mm_loadu_si128(p.add(i)) }, bswap);
        }
        w
    }

    /// Compresses lane `l`'s blocks into `states[l]` for every lane, the lanes interleaved.
    ///
    /// # Safety
    ///
    /// The CPU must support SHA, SSE2, SSSE3 and SSE4.1. Lanes should have the same number of
    /// blocks; if not (not a safety issue), each lane absorbs only as many as the shortest has.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    pub(super) unsafe fn compress_lanes<const N: usize>(
        states: &mut [[u32; 8]; N],
        blocks: [&[[u8; 64]]; N],
    ) {
        // The SHA instructions keep the state as ABEF and CDGH (A in the high word).
        let mut abef = [_mm_setzero_si128(); N];
        let mut cdgh = [_mm_setzero_si128(); N];
        for l in 0..N {
            let p: *const __m128i = states[l].as_ptr().cast();
            // SAFETY: `states[l]` is 32 readable bytes; `loadu` is unaligned.
            let (dcba, hgfe) = unsafe { (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1))) };
            let cdab = _mm_shuffle_epi32::<0xB1>(dcba);
            let efgh = _mm_shuffle_epi32::<0x1B>(hgfe);
            abef[l] = _mm_alignr_epi8::<8>(cdab, efgh);
            cdgh[l] = _mm_blend_epi16::<0xF0>(efgh, cdab);
        }

        let n = blocks.iter().map(|b| b.len()).min().unwrap_or(0);
        for b in 0..n {
            let (abef_in, cdgh_in) = (abef, cdgh);
            // w[j][l]: words 4j..4j+4 of lane l's window of the last 16 schedule words.
            let mut w = [[_mm_setzero_si128(); N]; 4];
            for (l, lane) in blocks.iter().enumerate() {
                let m = load_block(&lane[b]);
                for j in 0..4 {
                    w[j][l] = m[j];
                }
            }
            for (g, wg) in w.iter().enumerate() {
                rounds4(g, &mut abef, &mut cdgh, wg);
            }
            for g in 4..16 {
                // Rounds 4g..4g+4 need the next four schedule words; the window moves on by
                // one vector (the moves are register renames).
                let mut next = [_mm_setzero_si128(); N];
                for (l, nl) in next.iter_mut().enumerate() {
                    *nl = schedule(w[0][l], w[1][l], w[2][l], w[3][l]);
                }
                w = [w[1], w[2], w[3], next];
                rounds4(g, &mut abef, &mut cdgh, &next);
            }
            for l in 0..N {
                abef[l] = _mm_add_epi32(abef[l], abef_in[l]);
                cdgh[l] = _mm_add_epi32(cdgh[l], cdgh_in[l]);
            }
        }

        for l in 0..N {
            let feba = _mm_shuffle_epi32::<0x1B>(abef[l]);
            let dchg = _mm_shuffle_epi32::<0xB1>(cdgh[l]);
            let dcba = _mm_blend_epi16::<0xF0>(feba, dchg);
            let hgfe = _mm_alignr_epi8::<8>(dchg, feba);
            let p: *mut __m128i = states[l].as_mut_ptr().cast();
            // SAFETY: `states[l]` is 32 writable bytes; `storeu` is unaligned.
            unsafe {
                _mm_storeu_si128(p, dcba);
                _mm_storeu_si128(p.add(1), hgfe);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, RngCore, SeedableRng, rngs::StdRng};
    use sha2::{Digest, Sha256};

    fn random_lanes<const N: usize>(
        rng: &mut StdRng,
        nblocks: usize,
    ) -> ([[u32; 8]; N], [Vec<[u8; 64]>; N]) {
        let states = core::array::from_fn(|_| rng.random());
        let msgs = core::array::from_fn(|_| {
            let mut v = vec![[0u8; 64]; nblocks];
            rng.fill_bytes(v.as_flattened_mut());
            v
        });
        (states, msgs)
    }

    fn reference<const N: usize>(
        states: &[[u32; 8]; N],
        msgs: &[Vec<[u8; 64]>; N],
    ) -> [[u32; 8]; N] {
        let mut out = *states;
        for (s, m) in out.iter_mut().zip(msgs) {
            compress256(s, m);
        }
        out
    }

    /// A multi-lane compression function under test.
    type Compress<const N: usize> = fn(&mut [[u32; 8]; N], [&[[u8; 64]]; N]);

    /// Both paths, random states and messages of 0..=3 blocks, against per-lane `compress256`.
    fn check_lanes<const N: usize>(f: Compress<N>) {
        let mut rng = StdRng::seed_from_u64(N as u64);
        for nblocks in 0..=3 {
            for _ in 0..20 {
                let (states, msgs) = random_lanes::<N>(&mut rng, nblocks);
                let want = reference(&states, &msgs);
                let refs = core::array::from_fn(|l| msgs[l].as_slice());
                let mut got = states;
                f(&mut got, refs);
                assert_eq!(got, want, "dispatched, {N} lanes, {nblocks} blocks");
                let mut got = states;
                compress_portable(&mut got, refs);
                assert_eq!(got, want, "portable, {N} lanes, {nblocks} blocks");
            }
        }
    }

    #[test]
    fn x2_matches_compress256() {
        check_lanes::<2>(compress256_x2);
    }

    #[test]
    fn sha_ni_path_matches_compress256() {
        #[cfg(target_arch = "x86_64")]
        if accelerated() {
            // SAFETY: the CPU supports the SHA extensions (checked); lanes have equal lengths.
            check_lanes::<2>(|s, b| unsafe { x86::compress_lanes(s, b) });
            // SAFETY: as above.
            check_lanes::<4>(|s, b| unsafe { x86::compress_lanes(s, b) });
        }
    }

    /// Lanes with different block counts take the portable path and still give the right result.
    #[test]
    fn unequal_lanes() {
        let mut rng = StdRng::seed_from_u64(7);
        let (states, a) = random_lanes::<2>(&mut rng, 3);
        for (n0, n1) in [(3, 1), (0, 2), (2, 3)] {
            let msgs = [a[0][..n0].to_vec(), a[1][..n1].to_vec()];
            let want = reference(&states, &msgs);
            let mut got = states;
            compress256_x2(&mut got, [&msgs[0], &msgs[1]]);
            assert_eq!(got, want, "{n0} and {n1} blocks");
        }
    }

    /// Full SHA-256 of two padded 100-byte messages (two blocks each) equals `Sha256::digest`.
    #[test]
    fn matches_sha256_digest() {
        let mut rng = StdRng::seed_from_u64(9);
        let msgs: [Vec<u8>; 2] = core::array::from_fn(|_| {
            let mut m = vec![0u8; 100];
            rng.fill_bytes(&mut m);
            m
        });
        let padded: [Vec<[u8; 64]>; 2] = core::array::from_fn(|l| {
            let mut p = vec![[0u8; 64]; 2];
            let flat = p.as_flattened_mut();
            flat[..100].copy_from_slice(&msgs[l]);
            flat[100] = 0x80;
            flat[120..].copy_from_slice(&(100u64 * 8).to_be_bytes());
            p
        });
        let mut states = [SHA256_IV; 2];
        compress256_x2(&mut states, [&padded[0], &padded[1]]);
        for (l, s) in states.iter().enumerate() {
            let got: Vec<u8> = s.iter().flat_map(|w| w.to_be_bytes()).collect();
            assert_eq!(got, Sha256::digest(&msgs[l]).to_vec(), "lane {l}");
        }
    }
}
