//! blindjoin-modexp: modular exponentiation of many bases by *one* exponent, eight bases per
//! AVX-512 IFMA instruction stream, bit-exact with crypto-bigint.
//!
//! # What it computes
//!
//! [`Modulus::pow_batch`]: for each base `x_i` (a big-endian string of the modulus's byte
//! length), `x_i^e mod N` as a big-endian string of the same length. The finite-field
//! Diffie-Hellman PSI raises every element of a set to one secret exponent, and RSA
//! blind-signature PSI raises every element to d mod (p − 1) and d mod (q − 1) (CRT); both are
//! this operation with a shared exponent.
//!
//! # Chosen at run time
//!
//! Each call checks once per process ([`simd_available`]) whether the CPU has AVX-512F and
//! AVX-512 IFMA and then runs the eight-lane engine; otherwise, and on other architectures, it
//! runs crypto-bigint's constant-time `BoxedMontyForm::pow_bounded_exp` base by base. Both give
//! the same bytes, so parties on either kind of CPU interoperate.
//!
//! # Why eight lanes
//!
//! A modular exponentiation is a fixed chain of Montgomery squarings and multiplications whose
//! shape depends only on the exponent. With the exponent shared, eight bases follow the same
//! chain, so the engine keeps limb j of eight numbers in one `__m512i` ("vertical" layout) and
//! runs the schoolbook products with `vpmadd52luq`/`vpmadd52huq`, one lane per base: no
//! shuffles and no carries between lanes.
//!
//! # Design (the `ifma` module)
//!
//! - Radix 2^52, L = ⌈(8·len + 2)/52⌉ limbs for a modulus of `len` bytes, so that
//!   R = 2^(52·L) > 4N. Montgomery products are "almost Montgomery": inputs and outputs below
//!   2N, with no final subtraction inside the chain (Walter's bound: if a, b < 2N and 4N < R
//!   then (a·b + m·N)/R < 2N); one constant-time subtraction at the end makes the result
//!   canonical.
//! - A product accumulates the 2L columns in 64-bit lanes without carrying (each column
//!   receives at most 4L values below 2^52, below 2^64 for every L < 1024), then reduces
//!   operand-scanning style, limb by limb, with m_i = t_i · (−N^{−1}) mod 2^52 (IFMA's low half
//!   reads only the low 52 bits of t_i, so no normalisation is needed first), and finally carries
//!   once across the L result limbs. Squarings compute each cross product once and double.
//! - Exponentiation: fixed windows, left to right, of w bits (w from the exponent length,
//!   2^w table entries); every window costs w squarings and one multiplication, digit 0
//!   included (by the Montgomery form of 1), so the sequence of operations depends only on
//!   the exponent's declared bit length.
//!
//! # Constant time
//!
//! The secrets are the exponent and, for the callers, the bases. No branch or memory address
//! depends on them: table entries are chosen by scanning all 2^w entries with compare masks,
//! and the final subtraction is a mask. What is public: the modulus, the exponent's declared
//! bit length and the batch length. The window digits and the table are zeroised after use.
//! The portable path inherits crypto-bigint's constant-time Montgomery exponentiation.
//!
//! A modulus may itself be secret (the primes of an RSA key): [`Modulus::from_be_bytes`]
//! computes its constants in constant time, and a `Modulus` wipes its copies of N and of the
//! engine's constants when dropped, except crypto-bigint's `BoxedMontyParams`, which is shared
//! behind an `Arc` and has no wipe.
#![deny(missing_docs)]

#[cfg(target_arch = "x86_64")]
mod ifma;

#[cfg(test)]
mod tests;

use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::{BoxedUint, CtLt, NonZero, Odd};
use std::sync::OnceLock;
use zeroize::{Zeroize, Zeroizing};

/// Bases per group of the eight-lane engine.
pub const LANES: usize = 8;

/// The largest modulus accepted, in bits (the 15360-bit RSA modulus of κ = 256).
pub const MAX_BITS: u32 = 16384;

/// What can be wrong with a modulus or an exponent.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The modulus is even, below 3, or longer than [`MAX_BITS`].
    #[error("the modulus must be odd, at least 3 and at most {MAX_BITS} bits")]
    BadModulus,
    /// The exponent's declared bit length does not hold its value, or exceeds [`MAX_BITS`].
    #[error("the exponent does not fit its declared {0} bits")]
    BadExponent(u32),
}

/// An odd modulus N with the constants of both engines.
#[derive(Clone)]
pub struct Modulus {
    /// N as a crypto-bigint odd integer (precision: whole 64-bit words).
    n: Odd<BoxedUint>,
    params: BoxedMontyParams,
    len: usize,
    bits: u32,
    #[cfg(target_arch = "x86_64")]
    wide: ifma::Consts,
}

impl Drop for Modulus {
    fn drop(&mut self) {
        self.n.zeroize();
    }
}

impl std::fmt::Debug for Modulus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Modulus")
            .field("bits", &self.bits)
            .finish_non_exhaustive()
    }
}

/// A secret exponent with a public bit length; zeroised on drop.
pub struct Exponent {
    value: BoxedUint,
    bits: u32,
}

impl Drop for Exponent {
    fn drop(&mut self) {
        self.value.zeroize();
    }
}

impl Exponent {
    /// The exponent whose big-endian bytes are `be`, processed as a `bits`-bit number (the
    /// number of squarings does not depend on its value).
    pub fn from_be_bytes(be: &[u8], bits: u32) -> Result<Exponent, Error> {
        if bits == 0 || bits > MAX_BITS {
            return Err(Error::BadExponent(bits));
        }
        let precision = bits.div_ceil(64) * 64;
        let value = BoxedUint::from_be_slice(strip_zeros(be, precision), precision)
            .map_err(|_| Error::BadExponent(bits))?;
        if value.bit_width() > bits {
            return Err(Error::BadExponent(bits));
        }
        Ok(Exponent { value, bits })
    }

    /// The declared bit length.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// The exponent's bits, least significant first, as 64-bit words.
    fn words(&self) -> &[u64] {
        self.value.as_words()
    }
}

/// `be` without leading zero bytes beyond what `precision` bits hold.
fn strip_zeros(be: &[u8], precision: u32) -> &[u8] {
    let keep = (precision / 8) as usize;
    if be.len() <= keep {
        return be;
    }
    let extra = be.len() - keep;
    if be[..extra].iter().all(|&b| b == 0) {
        &be[extra..]
    } else {
        be
    }
}

impl Modulus {
    /// The modulus whose big-endian bytes are `be` (leading zero bytes are ignored).
    pub fn from_be_bytes(be: &[u8]) -> Result<Modulus, Error> {
        let start = be.iter().position(|&b| b != 0).unwrap_or(be.len());
        let be = &be[start..];
        let bits =
            (be.len() as u32 * 8).saturating_sub(be.first().map_or(8, |b| b.leading_zeros()));
        if !(2..=MAX_BITS).contains(&bits) || be.last().is_none_or(|b| b & 1 == 0) {
            return Err(Error::BadModulus);
        }
        let precision = bits.div_ceil(64) * 64;
        let value = BoxedUint::from_be_slice(be, precision).map_err(|_| Error::BadModulus)?;
        let n = Option::<Odd<BoxedUint>>::from(Odd::new(value)).ok_or(Error::BadModulus)?;
        // Constant time: the modulus may be secret (RSA's p and q).
        let params = BoxedMontyParams::new(n.clone());
        let len = bits.div_ceil(8) as usize;
        Ok(Modulus {
            #[cfg(target_arch = "x86_64")]
            wide: ifma::Consts::new(&n, len),
            n,
            params,
            len,
            bits,
        })
    }

    /// Bits of N.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Bytes of N, and of every element this modulus reads and writes.
    pub fn byte_len(&self) -> usize {
        self.len
    }

    /// N as crypto-bigint's odd integer.
    pub fn value(&self) -> &Odd<BoxedUint> {
        &self.n
    }

    /// crypto-bigint's Montgomery parameters of N.
    pub fn params(&self) -> &BoxedMontyParams {
        &self.params
    }

    /// The big-endian element of `byte_len` bytes holding `x` (which must be below N).
    pub fn to_element(&self, x: &BoxedUint) -> Vec<u8> {
        let be = x.to_be_bytes();
        let mut out = vec![0u8; self.len];
        let take = be.len().min(self.len);
        out[self.len - take..].copy_from_slice(&be[be.len() - take..]);
        out
    }

    /// The element `be` (exactly `byte_len` bytes) as an integer, at N's precision; `None`
    /// when it is not below N.
    pub fn from_element(&self, be: &[u8]) -> Option<BoxedUint> {
        if be.len() != self.len {
            return None;
        }
        let x = BoxedUint::from_be_slice(be, self.n.bits_precision()).ok()?;
        bool::from(x.ct_lt(self.n.as_ref())).then_some(x)
    }

    /// The index of the first `byte_len`-byte element of `elements` that is not below N (a
    /// trailing piece shorter than an element counts as one), in variable time: for
    /// public values such as a peer's messages.
    pub fn first_not_below(&self, elements: &[u8]) -> Option<usize> {
        let n = self.n.to_be_bytes();
        let n = &n[n.len() - self.len..];
        elements
            .chunks(self.len)
            .position(|e| e.len() != self.len || e >= n)
    }

    /// For each `byte_len`-byte big-endian base `x_i` of `bases`, appends `x_i^e mod N`
    /// (`byte_len` bytes, big-endian) to `out`. A base not below N counts as `x_i mod N`.
    ///
    /// # Panics
    ///
    /// Never; a trailing piece of `bases` shorter than an element is ignored (callers check
    /// lengths with [`Modulus::first_not_below`]).
    pub fn pow_batch(&self, bases: &[u8], exp: &Exponent, out: &mut Vec<u8>) {
        self.pow_batch_with(bases, exp, out, simd_available());
    }

    /// [`Modulus::pow_batch`] with the engine chosen by the caller (`use_simd` is ignored when
    /// the CPU lacks the features).
    pub fn pow_batch_with(&self, bases: &[u8], exp: &Exponent, out: &mut Vec<u8>, use_simd: bool) {
        let count = bases.len() / self.len;
        out.reserve(count * self.len);
        #[cfg(not(target_arch = "x86_64"))]
        let _ = use_simd;
        #[cfg(target_arch = "x86_64")]
        if use_simd && simd_available() {
            // SAFETY: the CPU supports avx512f and avx512ifma (checked just above), the only
            // requirement of the target-feature function.
            unsafe { ifma::pow_batch(&self.wide, &bases[..count * self.len], exp, out) };
            return;
        }
        let nz = NonZero::new(self.n.as_ref().clone()).into_option();
        let Some(nz) = &nz else { return };
        for base in bases.chunks_exact(self.len) {
            // `len` bytes always fit N's precision (a multiple of 64 bits, at least 8·len).
            let Ok(wide) = BoxedUint::from_be_slice(base, self.n.bits_precision()) else {
                continue;
            };
            let x = Zeroizing::new(wide.rem(nz));
            let y = BoxedMontyForm::new((*x).clone(), &self.params)
                .pow_bounded_exp(&exp.value, exp.bits)
                .retrieve();
            let mut be = Zeroizing::new(self.to_element(&y));
            out.extend_from_slice(&be);
            be.zeroize();
        }
    }
}

/// Whether the eight-lane engine runs on this CPU: it has AVX-512F and AVX-512 IFMA (detected
/// once per process).
pub fn simd_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512ifma")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}
