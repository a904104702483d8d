//! blindjoin-p256: NIST P-256 scalar multiplication of many points by *one* secret scalar k,
//! eight points per AVX-512 IFMA instruction stream, bit-exact with RustCrypto's `p256`.
//!
//! # What it computes
//!
//! - [`hash_mul_compress`]: for each message m, the compressed SEC1 encoding (33 bytes) of
//!   `k · H(m)`, H the RFC 9380 hash-to-curve of suite `P256_XMD:SHA-256_SSWU_RO_` with the
//!   given domain separation tag (`p256`'s `NistP256::hash_from_bytes(&[m], &[dst])`).
//! - [`decompress_mul_compress`]: for each 33-byte compressed SEC1 point P (first byte 0x02 or
//!   0x03, x big-endian below p, x³ − 3x + b a square), the compressed encoding of `k·P`, or
//!   the index of the first string that is not such an encoding.
//!
//! Each gives exactly the bytes `p256` gives for the same inputs, so parties on CPUs with and
//! without IFMA interoperate.
//!
//! # Chosen at run time
//!
//! Every entry point checks once per process ([`simd_available`]) whether the CPU has
//! AVX-512F, AVX-512 IFMA, AVX-512VL and AVX-512DQ and then runs the eight-lane engine;
//! otherwise, on other architectures, and when the environment variable
//! `BLINDJOIN_P256_PORTABLE` is set to a non-empty value, it runs `p256`'s own functions point
//! by point (with one inversion per 64 points for the encodings).
//!
//! # Why eight lanes
//!
//! `p256` computes each `k·P` on its own in serial 64-bit Montgomery arithmetic. This crate
//! runs eight independent points in the eight 64-bit lanes of AVX-512 vectors: since k is
//! shared, the control flow (and the table entry chosen for each digit of k) is the same in
//! every lane, so nothing moves between lanes.
//!
//! # Design
//!
//! - **Field** (`field`): GF(p) in radix 2^52, five limbs, limb j of the eight elements in one
//!   `__m512i`, in Montgomery form with R = 2^260: operand-scanning Montgomery multiplication
//!   with `vpmadd52luq`/`vpmadd52huq` (as `blindjoin-modexp`'s IFMA engine), where
//!   `−p^(−1) ≡ 1 mod 2^52` makes each quotient digit a mask and p's zero limb saves two
//!   multiply-adds per round. Every element stays below 2p with limbs below 2^52, so products
//!   need no final subtraction and additions one masked subtraction (bounds in that module).
//!   Inversion (`x^(p−2)`), square root (`x^((p+1)/4)`, p ≡ 3 mod 4) and the `c1` power of
//!   RFC 9380's `sqrt_ratio` are fixed addition chains sharing the prefix `x^0xffffffff00000001`.
//! - **Curve** (`point`): homogeneous projective coordinates with the complete formulas of
//!   Renes-Costello-Batina 2016 for a = −3 (Alg. 4 addition, Alg. 6 doubling), written step by
//!   step as `primeorder`'s, so there are no exceptional cases and no branches on the points.
//!   `k·P` uses the signed radix-16 digits of k (65 digits in [−8, 8]), a per-lane table of
//!   1P..8P, four doublings and one addition per digit.
//! - **Hash to curve**: `expand_message_xmd` with SHA-256 is `p256`'s own (scalar, per item);
//!   the two 48-byte strings become field elements in the lanes (`d0·2^192 + d1` by two
//!   Montgomery products), both go through the simplified SWU map (RFC 9380 §6.6.2, the
//!   straight-line `sqrt_ratio` of App. F.2.1.2) two at a time, and are added (cofactor 1). The
//!   map's point stays projective (Z = the denominator of x), so it needs no inversion.
//! - **Encoding**: one inversion per batch of up to 64 points (Montgomery's trick, lane by
//!   lane) gives affine x and the parity of y.
//! - **Decoding**: x < p, y = (x³ − 3x + b)^((p+1)/4), refused unless y² = x³ − 3x + b; y
//!   negated by mask to the parity of the first byte. The identity has no compressed encoding,
//!   so it is refused with everything else that is not one.
//!
//! The tests compare the field with a big-integer reference and both entry points with `p256`
//! on thousands of inputs, and check the known answers of RFC 9380 Appendix J.1.1.
//!
//! # Constant time
//!
//! The secrets are k and, for [`hash_mul_compress`], the items and their points. No branch or
//! memory address depends on them: each digit's table entry is found by scanning all eight
//! entries with blend masks, negation is a blend, and every per-lane choice (signs, square or
//! not, zero or not) is a mask. What is public by design: the batch length, and for
//! [`decompress_mul_compress`] whether (and where) an encoding is invalid. The portable
//! fallback inherits `p256`'s guarantees. The digits of k and the engine's stack copies of the
//! hashed strings are zeroised after use; intermediate vectors are not (as in `p256`).
//! `AUDIT.md` next to this file lists the evidence and what would close each remaining concern.
#![deny(missing_docs)]

#[cfg(target_arch = "x86_64")]
mod field;
#[cfg(target_arch = "x86_64")]
mod point;
#[cfg(target_arch = "x86_64")]
mod simd;

#[cfg(all(test, target_arch = "x86_64"))]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;

use core::num::NonZeroU16;
use p256::elliptic_curve::ff::PrimeField;
use p256::elliptic_curve::group::{Curve, GroupEncoding};
use p256::hash2curve::{ExpandMsg, Expander, GroupDigest, MapToCurve};
use p256::{AffinePoint, NistP256, ProjectivePoint, Scalar};
use std::sync::OnceLock;
use zeroize::Zeroize;

pub use p256::hash2curve::ExpandMsgXmdError;

/// Points per group of the eight-lane engine.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const LANES: usize = 8;
/// Bytes of a compressed point.
const POINT_LEN: usize = 33;
/// Bytes of `expand_message_xmd` per item: two field elements of 48 bytes (RFC 9380 §8.2,
/// L = 48).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const UNIFORM_LEN: usize = 96;
/// Items per batch of the portable path (one inversion each).
const PORTABLE_BATCH: usize = 64;

/// For each message `m` of `msgs`, appends the compressed SEC1 encoding of `k · H(m)` (33
/// bytes) to `out`, H the RFC 9380 hash-to-curve of suite `P256_XMD:SHA-256_SSWU_RO_` with
/// domain separation tag `dst`.
///
/// The results are those of `p256`: `(NistP256::hash_from_bytes(&[m], &[dst])? * k)` encoded
/// with `GroupEncoding::to_bytes` (33 zero bytes for the identity).
///
/// # Errors
///
/// Those of `expand_message_xmd` (an empty `dst`), before anything is appended.
pub fn hash_mul_compress<M: AsRef<[u8]>>(
    msgs: &[M],
    dst: &[u8],
    k: &Scalar,
    out: &mut Vec<u8>,
) -> Result<(), ExpandMsgXmdError> {
    hash_mul_compress_with(msgs, dst, k, out, simd_available())
}

/// For each 33-byte chunk of `points`: decodes it as a compressed SEC1 point of P-256 (first
/// byte 0x02 or 0x03, x below p, on the curve), multiplies it by k and appends the compressed
/// encoding of `k·P` to `out`.
///
/// `Err(i)` names the first chunk that is not a valid encoding (a trailing chunk shorter than
/// 33 bytes counts as one); `out` then holds an unspecified prefix of the results.
pub fn decompress_mul_compress(points: &[u8], k: &Scalar, out: &mut Vec<u8>) -> Result<(), usize> {
    decompress_mul_compress_with(points, k, out, simd_available())
}

/// Whether the eight-lane engine runs: the CPU has AVX-512F, AVX-512 IFMA, AVX-512VL and
/// AVX-512DQ, and the environment variable `BLINDJOIN_P256_PORTABLE` is unset or empty
/// (decided once per process). Setting it runs `p256`'s own arithmetic instead, which gives the
/// same bytes: for measuring the two paths with one binary.
pub fn simd_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let portable = std::env::var_os("BLINDJOIN_P256_PORTABLE").is_some_and(|v| !v.is_empty());
        #[cfg(target_arch = "x86_64")]
        {
            !portable
                && std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512ifma")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx512dq")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = portable;
            false
        }
    })
}

/// `expand_message_xmd(m, dst, 96)` of the suite (RFC 9380 §5.3.1), `p256`'s own expander.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn expand(m: &[u8], dst: &[u8]) -> Result<[u8; UNIFORM_LEN], ExpandMsgXmdError> {
    const LEN: NonZeroU16 = match NonZeroU16::new(UNIFORM_LEN as u16) {
        Some(n) => n,
        None => NonZeroU16::MIN,
    };
    let dsts = [dst];
    let mut e = <<NistP256 as GroupDigest>::ExpandMsg as ExpandMsg<
        <NistP256 as MapToCurve>::SecurityLevel,
    >>::expand_message(&[m], &dsts, LEN)?;
    let mut okm = [0u8; UNIFORM_LEN];
    // 96 bytes of an expander made for 96 bytes: cannot run out.
    let _ = e.fill_bytes(&mut okm);
    Ok(okm)
}

/// [`hash_mul_compress`] with the engine chosen by the caller (`use_simd` is ignored when the
/// CPU lacks the features).
fn hash_mul_compress_with<M: AsRef<[u8]>>(
    msgs: &[M],
    dst: &[u8],
    k: &Scalar,
    out: &mut Vec<u8>,
    use_simd: bool,
) -> Result<(), ExpandMsgXmdError> {
    // The tag is checked before anything is computed or appended.
    let _ = <<NistP256 as GroupDigest>::ExpandMsg as ExpandMsg<
        <NistP256 as MapToCurve>::SecurityLevel,
    >>::expand_message(&[], &[dst], NonZeroU16::MIN)?;
    out.reserve(msgs.len() * POINT_LEN);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = use_simd;
    #[cfg(target_arch = "x86_64")]
    if use_simd && simd_available() {
        let mut digits = scalar_digits(k);
        let mut uniform = Vec::with_capacity(LANES * simd::MAX_GROUPS);
        let mut result = Ok(());
        for batch in msgs.chunks(LANES * simd::MAX_GROUPS) {
            uniform.clear();
            for m in batch {
                match expand(m.as_ref(), dst) {
                    Ok(u) => uniform.push(u),
                    Err(e) => result = Err(e),
                }
            }
            if result.is_err() {
                break;
            }
            // SAFETY: the CPU supports avx512f, avx512ifma, avx512vl and avx512dq (checked
            // just above), the only requirement of the target-feature function.
            unsafe { simd::hash_mul_compress(&uniform, &digits, out) };
        }
        uniform.zeroize();
        digits.zeroize();
        return result;
    }
    let mut points = Vec::with_capacity(PORTABLE_BATCH.min(msgs.len()));
    for batch in msgs.chunks(PORTABLE_BATCH) {
        points.clear();
        for m in batch {
            points.push(NistP256::hash_from_bytes(&[m.as_ref()], &[dst])? * k);
        }
        encode(&points, out);
    }
    Ok(())
}

/// Appends the compressed encodings of `points` to `out`, with one field inversion for all.
fn encode(points: &[ProjectivePoint], out: &mut Vec<u8>) {
    let mut affine = vec![AffinePoint::default(); points.len()];
    ProjectivePoint::batch_normalize(points, &mut affine);
    for a in &affine {
        out.extend_from_slice(&a.to_bytes());
    }
}

/// Decodes a compressed SEC1 point other than the identity (`p256`); `None` for anything
/// else, a wrong length included.
fn decode(bytes: &[u8]) -> Option<AffinePoint> {
    if !matches!(bytes.first(), Some(0x02 | 0x03)) || bytes.len() != POINT_LEN {
        return None;
    }
    let mut repr = <AffinePoint as GroupEncoding>::Repr::default();
    repr.copy_from_slice(bytes);
    let point: AffinePoint = Option::from(AffinePoint::from_bytes(&repr))?;
    if bool::from(point.is_identity()) {
        return None;
    }
    Some(point)
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
        let mut digits = scalar_digits(k);
        // SAFETY: the CPU supports avx512f, avx512ifma, avx512vl and avx512dq (checked just
        // above), the only requirement of the target-feature function.
        let result = unsafe { simd::decompress_mul_compress(points, &digits, out) };
        digits.zeroize();
        return result;
    }
    let mut batch = Vec::with_capacity(PORTABLE_BATCH);
    for (c, chunk) in points.chunks(POINT_LEN * PORTABLE_BATCH).enumerate() {
        batch.clear();
        for (i, bytes) in chunk.chunks(POINT_LEN).enumerate() {
            let p = decode(bytes).ok_or(c * PORTABLE_BATCH + i)?;
            batch.push(ProjectivePoint::from(p) * k);
        }
        encode(&batch, out);
    }
    Ok(())
}

/// The signed radix-16 digits `d_0..d_64 ∈ [−8, 8]` of k (constant time), with
/// `k = Σ d_i·16^i`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn scalar_digits(k: &Scalar) -> [i8; 65] {
    let mut be = k.to_repr();
    let mut d = [0i8; 65];
    for (i, b) in be.iter().rev().enumerate() {
        d[2 * i] = (b & 15) as i8;
        d[2 * i + 1] = (b >> 4) as i8;
    }
    for i in 0..64 {
        let carry = (d[i] + 8) >> 4;
        d[i] -= carry << 4;
        d[i + 1] += carry;
    }
    be.zeroize();
    d
}
