//! blindjoin-ristretto: Ristretto255 scalar multiplication of many points by *one* secret
//! scalar k, eight points per AVX-512 IFMA instruction stream, bit-exact with curve25519-dalek.
//!
//! # What it computes
//!
//! - [`hash_mul_compress`]: for each 64-byte uniform string `u`,
//!   `compress(k · RistrettoPoint::from_uniform_bytes(u))` (RFC 9496 §4.3.4, then §4.3.2).
//! - [`decompress_mul_compress`]: for each 32-byte string, `compress(k · decompress(P))`
//!   (RFC 9496 §4.3.1), or the index of the first string that is not a valid encoding.
//! - [`decompress_mul_pair_compress`]: the same decoding, and for each point both
//!   `compress(k·P)` and `compress(k·P − T)` for one further point T: the sender's step of a
//!   Chou-Orlandi base OT (`k = a`, `T = a·S`).
//!
//! Each gives exactly the bytes dalek gives for the same inputs, so parties on CPUs with and
//! without IFMA interoperate.
//!
//! # Chosen at run time
//!
//! Every entry point checks once per process ([`simd_available`]) whether the CPU has
//! AVX-512F, AVX-512 IFMA, AVX-512VL and AVX-512DQ (every IFMA CPU so far has all four) and
//! then runs the eight-lane engine; otherwise, and on other architectures, it runs dalek's own
//! functions point by point.
//!
//! # Why eight lanes
//!
//! dalek computes each `k·P` on its own, with the 4-way parallelism of its IFMA backend spread
//! over the coordinates of one point, and its Elligator map, decoding and encoding in serial
//! 64-bit arithmetic. This crate instead runs eight independent points in the eight 64-bit lanes
//! of AVX-512 vectors: since k is shared, the control flow (and the table index chosen for each
//! digit of k) is the same in every lane, so nothing needs shuffling between lanes.
//!
//! # Design
//!
//! - **Field** (`field`): GF(2^255 − 19) in radix 2^51, five limbs, limb j of the eight
//!   elements in one `__m512i`, after the IFMA design of curve25519-dalek's
//!   `backend::vector::ifma` (de Valence, "Accelerating Edwards Curve Arithmetic with Parallel
//!   Formulas"; its `F51x4` field) but with all lanes independent instead of the coordinates of
//!   one point. Products are 5×5 schoolbook `vpmadd52luq`/`vpmadd52huq` (the high halves
//!   weigh twice a limb), folded with `2^255 ≡ 19` (`vpmullq`) and carried in one parallel
//!   round, which the bit of slack below IFMA's 52-bit inputs allows. (Radix 2^52 with
//!   `2^260 ≡ 608` needs a serial carry chain; it measured slower.) The bounds each operation
//!   needs are listed in that module. Inverse square roots are `sqrt_ratio_i` of RFC 9496
//!   §4.2 with the exponent chain of dalek's `pow22501`.
//! - **Curve** (`edwards`): extended twisted Edwards coordinates with a = −1, dbl-2008-hwcd
//!   doubling and add-2008-hwcd-3 addition of a cached point, through completed coordinates as
//!   in dalek's serial `curve_models`. A scalar multiplication uses the signed radix-16 digits
//!   of the scalar (dalek's `Scalar::as_radix_16`), a per-lane table of 1P..8P, four doublings
//!   and one addition per digit.
//! - **Ristretto255** (`ristretto`): DECODE (RFC 9496 §4.3.1) and the Elligator MAP (§4.3.4)
//!   step by step as dalek's `ristretto.rs`, two groups at a time so that the latencies of
//!   their exponent chains overlap. ENCODE (§4.3.2) of `k·P` is computed as ENCODE of
//!   `2·((k/2)·P)` with dalek's `double_and_compress_batch` formulas: no inverse square root per
//!   point, and one inversion for up to 16 groups (Montgomery's trick, lane by lane). For the
//!   pair, `k·P − T = 2·((k/2)·P − T/2)` with `T/2 = ((ℓ + 1)/2)·T` computed once per call: one
//!   more cached-point addition per group, then a second double-and-compress. The
//!   tests compare all of it with dalek on thousands of points and with the known answers of
//!   RFC 9496 Appendix A.
//!
//! # Constant time
//!
//! The secrets are k (and, for [`hash_mul_compress`], the hashed items; for
//! [`decompress_mul_pair_compress`], T and both outputs). No branch or memory address depends
//! on them: each digit's table entry is found by scanning all eight entries with blend masks,
//! negation is a blend, and every per-lane choice in the field and Ristretto maps (signs,
//! square or not, zero or not) is a mask. T/2 enters the lanes through the same mask-only
//! DECODE as the points, and its subtraction is the same in every lane. What is public by
//! design: the batch length, and for the two decoding entry points whether (and where) an
//! encoding is invalid. The portable fallback inherits dalek's guarantees. The digits of k/2,
//! T/2 and its encoding are zeroised after use, and so are the engine's buffers of encodings in
//! the decoding entry points; intermediate vectors on the stack are not (as in dalek). `AUDIT.md` next to this file lists the
//! evidence and what would close each remaining concern.
#![deny(missing_docs)]

#[cfg(target_arch = "x86_64")]
mod edwards;
#[cfg(target_arch = "x86_64")]
mod field;
#[cfg(target_arch = "x86_64")]
mod ristretto;
#[cfg(target_arch = "x86_64")]
mod simd;

#[cfg(all(test, target_arch = "x86_64"))]
mod tests;

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use std::sync::OnceLock;
use zeroize::Zeroize;

/// Points per group of the eight-lane engine.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const LANES: usize = 8;
/// Bytes of a compressed point.
const POINT_LEN: usize = 32;

/// For each 64-byte uniform string `u_i`, appends `compress(k · from_uniform_bytes(u_i))`
/// (32 bytes each) to `out`.
pub fn hash_mul_compress(uniform: &[[u8; 64]], k: &Scalar, out: &mut Vec<u8>) {
    hash_mul_compress_with(uniform, k, out, simd_available());
}

/// For each 32-byte chunk of `points`: decodes it as a Ristretto255 point (RFC 9496 §4.3.1,
/// canonical encodings only), multiplies it by k and appends `compress(k·P)` to `out`.
///
/// `Err(i)` names the first chunk that is not a valid encoding (a trailing chunk shorter than
/// 32 bytes counts as one); `out` then holds an unspecified prefix of the results.
pub fn decompress_mul_compress(points: &[u8], k: &Scalar, out: &mut Vec<u8>) -> Result<(), usize> {
    decompress_mul_compress_with(points, k, out, simd_available())
}

/// For each 32-byte chunk of `points`: decodes it as a Ristretto255 point P (as
/// [`decompress_mul_compress`] does), and appends `compress(k·P)` to `out0` and
/// `compress(k·P − T)` to `out1`.
///
/// This is the sender's step of a Chou-Orlandi base OT (`k = a`, `T = a·S`): both outputs are
/// secret Diffie-Hellman values. Both vectors are reserved for all results before anything is
/// appended, so no result is left behind in a freed buffer, and the engine's stack buffers of
/// encodings are zeroised before it returns; zeroising `out0` and `out1` (for instance as
/// `Zeroizing<Vec<u8>>`) is the caller's.
///
/// `Err(i)` names the first chunk that is not a valid encoding (a trailing chunk shorter than
/// 32 bytes counts as one); `out0` and `out1` then hold an unspecified prefix of the results.
pub fn decompress_mul_pair_compress(
    points: &[u8],
    k: &Scalar,
    t: &RistrettoPoint,
    out0: &mut Vec<u8>,
    out1: &mut Vec<u8>,
) -> Result<(), usize> {
    decompress_mul_pair_compress_with(points, k, t, out0, out1, simd_available())
}

/// Whether the eight-lane engine runs on this CPU: it has AVX-512F, AVX-512 IFMA, AVX-512VL
/// and AVX-512DQ (detected once per process).
pub fn simd_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512ifma")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx512dq")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// [`hash_mul_compress`] with the engine chosen by the caller (`use_simd` is ignored when the
/// CPU lacks the features).
fn hash_mul_compress_with(uniform: &[[u8; 64]], k: &Scalar, out: &mut Vec<u8>, use_simd: bool) {
    out.reserve(uniform.len() * POINT_LEN);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = use_simd;
    #[cfg(target_arch = "x86_64")]
    if use_simd && simd_available() {
        let mut digits = half_digits(k);
        // SAFETY: the CPU supports avx512f, avx512ifma, avx512vl and avx512dq (checked just
        // above), the only requirement of the target-feature function.
        unsafe { simd::hash_mul_compress(uniform, &digits, out) };
        digits.zeroize();
        return;
    }
    for u in uniform {
        let p = RistrettoPoint::from_uniform_bytes(u) * k;
        out.extend_from_slice(p.compress().as_bytes());
    }
}

/// [`decompress_mul_compress`] with the engine chosen by the caller (`use_simd` is ignored
/// when the CPU lacks the features).
fn decompress_mul_compress_with(
    points: &[u8],
    k: &Scalar,
    out: &mut Vec<u8>,
    use_simd: bool,
) -> Result<(), usize> {
    out.reserve(points.len() / POINT_LEN * POINT_LEN);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = use_simd;
    #[cfg(target_arch = "x86_64")]
    if use_simd && simd_available() {
        let mut digits = half_digits(k);
        // SAFETY: the CPU supports avx512f, avx512ifma, avx512vl and avx512dq (checked just
        // above), the only requirement of the target-feature function.
        let result = unsafe { simd::decompress_mul_compress(points, &digits, out) };
        digits.zeroize();
        return result;
    }
    decode_each(points, |p| {
        out.extend_from_slice((p * k).compress().as_bytes())
    })
}

/// Decodes each 32-byte chunk of `points` (dalek, canonical encodings only) and hands the
/// point to `f`; `Err(i)` names the first chunk that is not a valid encoding (a trailing chunk
/// shorter than 32 bytes counts as one). The portable path of the entry points.
fn decode_each(points: &[u8], mut f: impl FnMut(RistrettoPoint)) -> Result<(), usize> {
    let chunks = points.chunks_exact(POINT_LEN);
    let n = chunks.len();
    let has_tail = !chunks.remainder().is_empty();
    for (i, chunk) in chunks.enumerate() {
        let p = CompressedRistretto::from_slice(chunk)
            .ok()
            .and_then(|c| c.decompress())
            .ok_or(i)?;
        f(p);
    }
    if has_tail { Err(n) } else { Ok(()) }
}

/// [`decompress_mul_pair_compress`] with the engine chosen by the caller (`use_simd` is ignored
/// when the CPU lacks the features).
fn decompress_mul_pair_compress_with(
    points: &[u8],
    k: &Scalar,
    t: &RistrettoPoint,
    out0: &mut Vec<u8>,
    out1: &mut Vec<u8>,
    use_simd: bool,
) -> Result<(), usize> {
    let n = points.len() / POINT_LEN * POINT_LEN;
    out0.reserve(n);
    out1.reserve(n);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = use_simd;
    #[cfg(target_arch = "x86_64")]
    if use_simd && simd_available() {
        // k·P − T = 2·((k/2)·P − T/2): the engine subtracts T/2 before its double-and-compress.
        let mut digits = half_digits(k);
        let mut half_t = t * Scalar::from_bytes_mod_order(HALF);
        let mut half_t_enc = half_t.compress().to_bytes();
        half_t.zeroize();
        // SAFETY: the CPU supports avx512f, avx512ifma, avx512vl and avx512dq (checked just
        // above), the only requirement of the target-feature function.
        let result =
            unsafe { simd::decompress_mul_pair_compress(points, &digits, &half_t_enc, out0, out1) };
        digits.zeroize();
        half_t_enc.zeroize();
        return result;
    }
    decode_each(points, |p| {
        let mut p0 = p * k;
        let mut p1 = p0 - t;
        let mut e0 = p0.compress();
        let mut e1 = p1.compress();
        out0.extend_from_slice(e0.as_bytes());
        out1.extend_from_slice(e1.as_bytes());
        p0.zeroize();
        p1.zeroize();
        e0.zeroize();
        e1.zeroize();
    })
}

/// (ℓ + 1)/2, the inverse of 2 modulo the group order ℓ.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const HALF: [u8; 32] = [
    0xf7, 0xe9, 0x7a, 0x2e, 0x8d, 0x31, 0x09, 0x2c, 0x6b, 0xce, 0x7b, 0x51, 0xef, 0x7c, 0x6f, 0x0a,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08,
];

/// The digits of k/2 mod ℓ: the engine computes `k/2 · P` and then encodes its double.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn half_digits(k: &Scalar) -> [i8; 64] {
    let mut half = k * Scalar::from_bytes_mod_order(HALF);
    let d = scalar_digits(&half);
    half.zeroize();
    d
}

/// The signed radix-16 digits `d_0..d_63 ∈ [−8, 8]` of k (dalek's `Scalar::as_radix_16`;
/// constant time), with `k = Σ d_i·16^i`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn scalar_digits(k: &Scalar) -> [i8; 64] {
    // A `Scalar` is reduced unless built by a legacy constructor; reducing again costs little
    // and guarantees k < 2^253, which the recentring needs. (k and k mod ℓ give the same
    // multiple of a Ristretto point.)
    let mut bytes = Scalar::from_bytes_mod_order(k.to_bytes()).to_bytes();
    let mut d = [0i8; 64];
    for (i, b) in bytes.iter().enumerate() {
        d[2 * i] = (b & 15) as i8;
        d[2 * i + 1] = (b >> 4) as i8;
    }
    for i in 0..63 {
        let carry = (d[i] + 8) >> 4;
        d[i] -= carry << 4;
        d[i + 1] += carry;
    }
    bytes.zeroize();
    d
}
