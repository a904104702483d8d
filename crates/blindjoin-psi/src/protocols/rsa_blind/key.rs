//! The RSA key of `rsa_blind`: generation (crypto-primes), the public key's wire form and its
//! checks, CRT signing with the fault check, and the batch inversion of the blinding factors.

use super::{E, MSG_KEY, wide_len};
use blindjoin_core::{Error, Result};
use blindjoin_modexp::{Exponent, Modulus};
use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
use crypto_bigint::rand_core as rand_core_010;
use crypto_bigint::{BoxedUint, ConcatenatingMul, Limb, NonZero, Odd, Resize};
use crypto_primes::hazmat::{SetBits, SmallFactorsSieveFactory};
use crypto_primes::{Flavor, is_prime, sieve_and_find};
use rand::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::convert::Infallible;
use zeroize::{Zeroize, Zeroizing};

/// Bytes of the public-key message: N (big-endian, ρ/8 bytes) then e (big-endian, 4 bytes).
pub(crate) fn key_msg_len(modulus_bits: u32) -> usize {
    modulus_bits as usize / 8 + 4
}

/// The public exponent as a [`blindjoin_modexp`] exponent (17 bits).
fn public_exponent() -> Result<Exponent> {
    Exponent::from_be_bytes(&E.to_be_bytes(), 17).map_err(|e| Error::InvalidParam {
        field: "public exponent",
        reason: e.to_string(),
    })
}

/// The public key (N, e = 65537) with what both parties compute with it.
pub(crate) struct PublicKey {
    /// N for the batch engine (and its crypto-bigint Montgomery parameters).
    pub n: Modulus,
    /// N as a divisor, for reductions of wider values.
    n_nz: NonZero<BoxedUint>,
    /// e for the batch engine.
    e: Exponent,
}

impl PublicKey {
    fn new(n: Modulus) -> Result<PublicKey> {
        let n_nz = NonZero::new(n.value().as_ref().clone())
            .into_option()
            .ok_or_else(|| Error::malformed(MSG_KEY, "the modulus N is zero"))?;
        Ok(PublicKey {
            n,
            n_nz,
            e: public_exponent()?,
        })
    }

    /// Bytes of an element mod N (ρ/8).
    pub fn len(&self) -> usize {
        self.n.byte_len()
    }

    /// The public-key message: N ‖ e.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.n.to_element(self.n.value().as_ref());
        out.extend_from_slice(&E.to_be_bytes());
        out
    }

    /// Reads and checks the sender's public key for a `modulus_bits`-bit modulus: the message
    /// has exactly ρ/8 + 4 bytes, N has exactly ρ bits and is odd, and e is 65537; otherwise a
    /// malformed-message error naming the field.
    pub fn decode(frame: &[u8], modulus_bits: u32) -> Result<PublicKey> {
        let len = modulus_bits as usize / 8;
        if frame.len() != len + 4 {
            return Err(Error::malformed(
                MSG_KEY,
                format!(
                    "{} bytes; a {modulus_bits}-bit modulus N and the exponent e take {}",
                    frame.len(),
                    len + 4
                ),
            ));
        }
        let (n, e) = frame.split_at(len);
        let bits = n
            .iter()
            .position(|&b| b != 0)
            .map_or(0, |i| (len - i) as u32 * 8 - n[i].leading_zeros());
        if bits != modulus_bits {
            return Err(Error::malformed(
                MSG_KEY,
                format!("the modulus N has {bits} bits; this level needs exactly {modulus_bits}"),
            ));
        }
        if n.last().is_none_or(|b| b & 1 == 0) {
            return Err(Error::malformed(MSG_KEY, "the modulus N is even"));
        }
        let e = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
        if e != E {
            return Err(Error::malformed(
                MSG_KEY,
                format!("the public exponent e is {e}; only {E} is accepted"),
            ));
        }
        let n = Modulus::from_be_bytes(n)
            .map_err(|err| Error::malformed(MSG_KEY, format!("the modulus N: {err}")))?;
        PublicKey::new(n)
    }

    /// `x mod N` for a big-endian `x` of any length (constant time in the value).
    pub fn reduce(&self, be: &[u8]) -> BoxedUint {
        let x = Zeroizing::new(BoxedUint::from_be_slice_truncated(
            be,
            (be.len() as u32 * 8).div_ceil(64) * 64,
        ));
        x.rem(&self.n_nz)
    }

    /// `x^e mod N` for each element of `xs` (ρ/8 bytes each), appended to `out`.
    pub fn pow_e(&self, xs: &[u8], out: &mut Vec<u8>) {
        self.n.pow_batch(xs, &self.e, out);
    }

    /// The Montgomery parameters of N.
    pub fn params(&self) -> &BoxedMontyParams {
        self.n.params()
    }
}

/// One secret prime with its CRT exponent.
struct Prime {
    /// The prime for the batch engine (and crypto-bigint's Montgomery parameters).
    modulus: Modulus,
    /// The prime as a divisor (for `x mod p`).
    nz: NonZero<BoxedUint>,
    /// d mod (p − 1) = e^{-1} mod (p − 1), zeroised on drop.
    d: Exponent,
}

impl Drop for Prime {
    fn drop(&mut self) {
        // `Modulus` keeps its own copies (not zeroised: its type has no such hook).
        self.nz.zeroize();
    }
}

impl Prime {
    fn new(p: &BoxedUint) -> Result<Prime> {
        let fail = |what: &str| Error::InvalidParam {
            field: "rsa key",
            reason: format!("key generation: {what}"),
        };
        let bits = p.bits_precision();
        let mut be = Zeroizing::new(p.to_be_bytes().to_vec());
        let modulus = Modulus::from_be_bytes(&be).map_err(|e| fail(&e.to_string()))?;
        be.zeroize();
        let nz = NonZero::new(p.clone())
            .into_option()
            .ok_or_else(|| fail("a zero prime"))?;
        let p_1 = Zeroizing::new(p.wrapping_sub(Limb::ONE));
        let p_1 = NonZero::new((*p_1).clone())
            .into_option()
            .ok_or_else(|| fail("p − 1 is zero"))?;
        let e = BoxedUint::from(u64::from(E)).resize_unchecked(bits);
        let mut d = Zeroizing::new(
            e.invert_mod(&p_1)
                .into_option()
                .ok_or_else(|| fail("e is not invertible mod p − 1"))?,
        );
        let mut d_be = Zeroizing::new(d.to_be_bytes().to_vec());
        let d_exp = Exponent::from_be_bytes(&d_be, bits).map_err(|e| fail(&e.to_string()));
        d_be.zeroize();
        d.zeroize();
        Ok(Prime {
            modulus,
            nz,
            d: d_exp?,
        })
    }

    /// `x mod p` for each of `xs`, as elements of p's byte length.
    fn residues(&self, xs: &[Zeroizing<BoxedUint>]) -> Zeroizing<Vec<u8>> {
        let mut out = Zeroizing::new(Vec::with_capacity(xs.len() * self.modulus.byte_len()));
        for x in xs {
            let r = Zeroizing::new(x.rem(&self.nz));
            let mut e = self.modulus.to_element(&r);
            out.extend_from_slice(&e);
            e.zeroize();
        }
        out
    }

    /// `(x mod p)^(d mod (p − 1))` for each of `xs`, as elements of p's byte length.
    fn pow_d(&self, xs: &[Zeroizing<BoxedUint>]) -> Zeroizing<Vec<u8>> {
        let bases = self.residues(xs);
        let mut out = Zeroizing::new(Vec::with_capacity(bases.len()));
        self.modulus.pow_batch(&bases, &self.d, &mut out);
        out
    }
}

/// The sender's private key: the primes p and q with their CRT exponents, q^{-1} mod p, and
/// the public key. d itself is never formed: CRT signing needs only d mod (p − 1) and
/// d mod (q − 1). Everything secret is zeroised on drop, except the copies of p and q inside
/// the batch engine's [`Modulus`], which has no zeroising hook.
pub(crate) struct PrivateKey {
    pub public: PublicKey,
    p: Prime,
    q: Prime,
    /// q^{-1} mod p in Montgomery form mod p.
    qinv: BoxedMontyForm,
}

impl Drop for PrivateKey {
    fn drop(&mut self) {
        self.qinv.zeroize();
    }
}

/// rand_core 0.10's RNG traits (what crypto-primes takes) over a rand 0.9 CSPRNG (what the
/// workspace uses): every call forwards to the wrapped generator, so the primes come from our
/// CSPRNG's output and nothing else.
struct RandCore010<R>(R);

impl<R: RngCore> rand_core_010::TryRng for RandCore010<R> {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> std::result::Result<u32, Infallible> {
        Ok(self.0.next_u32())
    }

    fn try_next_u64(&mut self) -> std::result::Result<u64, Infallible> {
        Ok(self.0.next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> std::result::Result<(), Infallible> {
        self.0.fill_bytes(dst);
        Ok(())
    }
}

impl<R: CryptoRng> rand_core_010::TryCryptoRng for RandCore010<R> {}

/// A random prime p of exactly `bits` bits with its two top bits set (so that the product of
/// two has exactly 2·`bits` bits) and p ≢ 1 mod e (so that gcd(e, p − 1) = 1, e being prime):
/// crypto-primes' sieve over random odd starting points, then Miller-Rabin base 2 and the
/// strengthened Lucas test (BPSW'21).
fn random_prime(bits: u32, rng: &mut impl CryptoRng) -> Result<BoxedUint> {
    let fail = |what: String| Error::InvalidParam {
        field: "rsa key",
        reason: format!("key generation: {what}"),
    };
    let factory = SmallFactorsSieveFactory::<BoxedUint>::new(Flavor::Any, bits, SetBits::TwoMsb)
        .map_err(|e| fail(e.to_string()))?;
    let e = NonZero::new(Limb::from(E)).into_option();
    let mut rng = RandCore010(rng);
    let found = sieve_and_find(&mut rng, factory, |_, c: &BoxedUint| {
        e.is_some_and(|e| c.rem_limb(e) != Limb::ONE) && is_prime(Flavor::Any, c)
    })
    .map_err(|e| fail(e.to_string()))?;
    found.ok_or_else(|| fail("the prime sieve ran dry".into()))
}

impl PrivateKey {
    /// A fresh key with a `modulus_bits`-bit N = p·q (p, q of `modulus_bits`/2 bits each,
    /// p ≠ q, both ≢ 1 mod e). p and q are searched in parallel on rayon's pool, each from a
    /// ChaCha20 generator seeded with 32 bytes of `rng`.
    pub fn generate(modulus_bits: u32, rng: &mut impl CryptoRng) -> Result<PrivateKey> {
        let half = modulus_bits / 2;
        loop {
            let mut seeds = Zeroizing::new([[0u8; 32]; 2]);
            rng.fill_bytes(&mut seeds[0]);
            rng.fill_bytes(&mut seeds[1]);
            let (p, q) = rayon::join(
                || random_prime(half, &mut ChaCha20Rng::from_seed(seeds[0])),
                || random_prime(half, &mut ChaCha20Rng::from_seed(seeds[1])),
            );
            let (p, q) = (Zeroizing::new(p?), Zeroizing::new(q?));
            if *p == *q {
                continue;
            }
            return PrivateKey::from_primes(&p, &q, modulus_bits);
        }
    }

    /// The key with primes `p` and `q` (of equal precision, each ≢ 1 mod e).
    fn from_primes(p: &BoxedUint, q: &BoxedUint, modulus_bits: u32) -> Result<PrivateKey> {
        let fail = |what: &str| Error::InvalidParam {
            field: "rsa key",
            reason: format!("key generation: {what}"),
        };
        let n = p.concatenating_mul(q);
        if n.bit_width_vartime() != modulus_bits {
            return Err(fail("N does not have the requested size"));
        }
        let n = Modulus::from_be_bytes(&n.to_be_bytes()).map_err(|e| fail(&e.to_string()))?;
        let public = PublicKey::new(n)?;
        let p_odd = Odd::new(p.clone())
            .into_option()
            .ok_or_else(|| fail("p is even"))?;
        let mut qinv = Zeroizing::new(
            q.invert_odd_mod(&p_odd)
                .into_option()
                .ok_or_else(|| fail("q is not invertible mod p"))?,
        );
        let p = Prime::new(p)?;
        let q = Prime::new(q)?;
        let qinv_m = BoxedMontyForm::new((*qinv).clone(), p.modulus.params());
        qinv.zeroize();
        Ok(PrivateKey {
            public,
            p,
            q,
            qinv: qinv_m,
        })
    }

    /// `x^d mod N` for each of `xs` (any precision; read mod N), by CRT: s_p = x^(d mod (p−1))
    /// mod p and s_q likewise through the batch engine, then Garner's recombination
    /// s = s_q + q·((s_p − s_q)·q^{-1} mod p), which is below N. Appends ρ/8 bytes per value
    /// to `out`.
    pub fn sign(&self, xs: &[Zeroizing<BoxedUint>], out: &mut Vec<u8>) {
        let sp = self.p.pow_d(xs);
        let sq = self.q.pow_d(xs);
        let (lp, lq) = (self.p.modulus.byte_len(), self.q.modulus.byte_len());
        let p_params = self.p.modulus.params();
        let p_bits = self.p.nz.bits_precision();
        let n_bits = self.public.n.value().bits_precision();
        out.reserve(xs.len() * self.public.len());
        for (sp, sq) in sp.chunks_exact(lp).zip(sq.chunks_exact(lq)) {
            // Elements of p's and q's byte length always fit their precision.
            let sp = Zeroizing::new(BoxedUint::from_be_slice_truncated(sp, p_bits));
            let sq = Zeroizing::new(BoxedUint::from_be_slice_truncated(sq, p_bits));
            let sq_p = Zeroizing::new(sq.rem(&self.p.nz));
            let mut t = BoxedMontyForm::new((*sp).clone(), p_params);
            let mut u = BoxedMontyForm::new((*sq_p).clone(), p_params);
            let mut v = t.sub(&u).mul(&self.qinv);
            let h = Zeroizing::new(v.retrieve());
            t.zeroize();
            u.zeroize();
            v.zeroize();
            let qh = Zeroizing::new(self.q.nz.as_ref().concatenating_mul(&*h));
            let s = Zeroizing::new(
                (&*qh)
                    .resize_unchecked(n_bits)
                    .wrapping_add((&*sq).resize_unchecked(n_bits)),
            );
            let mut be = self.public.n.to_element(&s);
            out.extend_from_slice(&be);
            be.zeroize();
        }
    }
}

/// The inverses of `xs` (all mod one modulus) with one inversion and 3(n − 1)
/// multiplications (Montgomery's trick), in constant time; `None` if any is not invertible.
pub(crate) fn batch_invert(xs: &[BoxedMontyForm]) -> Option<Vec<BoxedMontyForm>> {
    let first = xs.first()?;
    let mut prefix = Zeroizing::new(Vec::with_capacity(xs.len()));
    prefix.push(first.clone());
    for x in &xs[1..] {
        let next = prefix[prefix.len() - 1].mul(x);
        prefix.push(next);
    }
    let mut inv = prefix[prefix.len() - 1].invert().into_option()?;
    let mut out = vec![first.clone(); xs.len()];
    for i in (1..xs.len()).rev() {
        out[i] = inv.mul(&prefix[i - 1]);
        inv = inv.mul(&xs[i]);
    }
    out[0] = inv;
    Some(out)
}

/// The wide value ρ + 128 bits long whose big-endian bytes are `be`, at a whole number of
/// 64-bit words.
pub(crate) fn wide(be: &[u8], modulus_bits: u32) -> Zeroizing<BoxedUint> {
    let bits = (wide_len(modulus_bits) as u32 * 8).div_ceil(64) * 64;
    Zeroizing::new(BoxedUint::from_be_slice_truncated(be, bits))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn rng(seed: u64) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(seed)
    }

    #[test]
    fn crt_signatures_verify_and_match_plain_exponentiation() {
        let key = PrivateKey::generate(1024, &mut rng(1)).unwrap();
        assert_eq!(key.public.n.bits(), 1024);
        let n = key.public.n.value().as_ref();
        let mut r = rng(2);
        let xs: Vec<Zeroizing<BoxedUint>> = (0..21)
            .map(|_| {
                let mut b = vec![0u8; wide_len(1024)];
                r.fill_bytes(&mut b);
                wide(&b, 1024)
            })
            .collect();
        let mut s = Vec::new();
        key.sign(&xs, &mut s);
        assert_eq!(s.len(), 21 * 128);
        let mut check = Vec::new();
        key.public.pow_e(&s, &mut check);
        for (i, (x, c)) in xs.iter().zip(check.chunks_exact(128)).enumerate() {
            let x_mod_n = key.public.reduce(&x.to_be_bytes());
            assert_eq!(key.public.n.to_element(&x_mod_n), c, "{i}");
            assert!(bool::from(
                crypto_bigint::CtLt::ct_lt(&key.public.n.from_element(c).unwrap(), n)
            ));
        }
    }

    #[test]
    fn generated_primes_have_the_promised_form() {
        let mut r = rng(3);
        for bits in [256, 512] {
            let p = random_prime(bits, &mut r).unwrap();
            assert_eq!(p.bit_width_vartime(), bits);
            assert!(p.bit_vartime(bits - 2), "the second bit is set");
            assert_ne!(p.rem_limb(NonZero::new(Limb::from(E)).unwrap()), Limb::ONE);
            assert!(is_prime(Flavor::Any, &p));
        }
    }

    #[test]
    fn public_key_round_trips_and_bad_fields_are_named() {
        let key = PrivateKey::generate(1024, &mut rng(4)).unwrap();
        let msg = key.public.encode();
        assert_eq!(msg.len(), key_msg_len(1024));
        let back = PublicKey::decode(&msg, 1024).unwrap();
        assert_eq!(back.n.value(), key.public.n.value());
        let err = |m: &[u8]| PublicKey::decode(m, 1024).err().unwrap().to_string();
        let mut even = msg.clone();
        even[127] ^= 1;
        assert!(err(&even).contains("even"));
        let mut short = msg.clone();
        short[0] = 0x7f;
        assert!(err(&short).contains("N has 1023 bits"));
        let mut e3 = msg.clone();
        e3[128..].copy_from_slice(&3u32.to_be_bytes());
        assert!(err(&e3).contains("exponent e is 3"));
        assert!(err(&msg[1..]).contains("bytes"));
        assert!(PublicKey::decode(&msg, 3072).is_err());
    }

    #[test]
    fn batch_inversion_inverts_each_and_refuses_zero() {
        let key = PrivateKey::generate(1024, &mut rng(5)).unwrap();
        let params = key.public.params();
        let xs: Vec<BoxedMontyForm> = (1..=9u64)
            .map(|v| BoxedMontyForm::new(BoxedUint::from(v).resize_unchecked(1024), params))
            .collect();
        let inv = batch_invert(&xs).unwrap();
        for (x, y) in xs.iter().zip(&inv) {
            assert_eq!(x.mul(y).retrieve(), BoxedUint::one_with_precision(1024));
        }
        let mut with_zero = xs.clone();
        with_zero[4] = BoxedMontyForm::zero(params);
        assert!(batch_invert(&with_zero).is_none());
        assert!(batch_invert(&[]).is_none());
    }
}

