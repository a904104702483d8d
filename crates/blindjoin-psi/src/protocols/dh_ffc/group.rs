//! The groups of `dh_ffc`: the quadratic residues modulo a standard safe prime p = 2q + 1,
//! written as signed residues, with exponents of 2κ bits.
//!
//! For a safe prime, p ≡ 3 (mod 4), so −1 is not a square and each pair {x, p − x} holds
//! exactly one quadratic residue: the map y ↦ min(y, p − y) is an isomorphism from QR_p (order q,
//! prime) onto the integers 1..=q with the product "multiply, then take the smaller of ±".
//! Exponentiation needs no decoding, since (±x)^e = ±x^e: raise any representative and
//! re-encode. An element from the peer is in the group exactly when 1 ≤ x ≤ q, a comparison,
//! instead of a Legendre symbol (crypto-bigint's takes 1.09 ms at 3072 bits, four times an
//! exponentiation here) or x^q = 1 (a 3072-bit exponent). The group has no element of order 2
//! or any other small order, so no exponent bit can leak through a peer's choice of element.

use blindjoin_core::handshake::Session;
use blindjoin_core::item::{Item, update_prefixed};
use crate::protocols::dh_psi::{DhGroup, invalid_element, par_append};
use blindjoin_core::Result;
use blindjoin_modexp::{Exponent, Modulus};
use crypto_bigint::{BoxedUint, CtGt, CtSelect, NonZero};
use rand::CryptoRng;
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

/// A security level's group: the prime's source, its size and the exponent length.
#[derive(Debug, PartialEq, Eq)]
pub struct Level {
    /// κ in bits.
    pub kappa: u32,
    /// The group's name in its RFC.
    pub name: &'static str,
    /// Where the prime is published.
    pub source: &'static str,
    /// The modulus size PSZ14 Tab. 2 / DCW13 Tab. 2 ask for at this level.
    pub asked_bits: u32,
    /// Bits of p.
    pub bits: u32,
    /// Bits of the secret exponents: 2κ.
    pub exp_bits: u32,
    /// p in hexadecimal.
    p_hex: &'static str,
}

/// The levels `dh_ffc` offers. κ = 256 asks for a 15360-bit modulus, and no published
/// standard group reaches it (RFC 3526 and RFC 7919 stop at 8192 bits).
pub static LEVELS: &[Level] = &[
    Level {
        kappa: 80,
        name: "Second Oakley Group (modp1024)",
        source: "RFC 2409 §6.2",
        asked_bits: 1024,
        bits: 1024,
        exp_bits: 160,
        p_hex: MODP1024,
    },
    Level {
        kappa: 128,
        name: "ffdhe3072",
        source: "RFC 7919 App. A.2",
        asked_bits: 3072,
        bits: 3072,
        exp_bits: 256,
        p_hex: FFDHE3072,
    },
    Level {
        kappa: 192,
        name: "ffdhe8192",
        source: "RFC 7919 App. A.5",
        asked_bits: 7680,
        bits: 8192,
        exp_bits: 384,
        p_hex: FFDHE8192,
    },
];

/// The group of a level, ready to hash, exponentiate and check elements.
pub(crate) struct FfcGroup {
    pub(crate) level: &'static Level,
    p: Modulus,
    p_nz: NonZero<BoxedUint>,
    /// q = (p − 1)/2 at p's precision.
    q: BoxedUint,
    /// q as a big-endian element, for the peer's elements (variable time: they are public).
    q_be: Vec<u8>,
}

/// A secret exponent of 2κ bits, not zero.
pub(crate) struct FfcKey(Exponent);

/// Elements per unit of parallel work (eight-lane groups of the batch engine).
const PAR_ELEMENTS: usize = 64;

impl FfcGroup {
    /// H(x): SHA-256 in counter mode under the session's domain, ⌈log2 p⌉ + 128 bits reduced
    /// mod p (statistical distance 2^-128 from uniform), as a signed residue.
    fn hash(&self, base: &Sha256, item: &Item) -> BoxedUint {
        let wide_len = self.element_len() + 16;
        let mut wide = Zeroizing::new(Vec::with_capacity(wide_len.div_ceil(32) * 32));
        for counter in 0u8.. {
            if wide.len() >= wide_len {
                break;
            }
            let mut h = base.clone();
            h.update([counter]);
            update_prefixed(&mut h, &item.0);
            wide.extend_from_slice(&h.finalize());
        }
        let precision = (wide.len() as u32 * 8).div_ceil(64) * 64;
        let x = BoxedUint::from_be_slice(&wide, precision)
            .map(|x| x.rem(&self.p_nz))
            .unwrap_or_else(|_| BoxedUint::zero_with_precision(self.q.bits_precision()));
        self.signed(&x)
    }

    /// min(x, p − x) in constant time, for x < p.
    fn signed(&self, x: &BoxedUint) -> BoxedUint {
        let neg = self.p.value().as_ref().wrapping_sub(x);
        x.ct_select(&neg, x.ct_gt(&self.q))
    }

    /// `x^k` for each element of `bases` (each below p), re-encoded as signed residues.
    fn pow_signed(&self, bases: &[u8], key: &FfcKey, out: &mut Vec<u8>) {
        let start = out.len();
        self.p.pow_batch(bases, &key.0, out);
        for e in out[start..].chunks_exact_mut(self.element_len()) {
            if let Some(x) = self.p.from_element(e) {
                let mut s = self.p.to_element(&self.signed(&x));
                e.copy_from_slice(&s);
                s.zeroize();
            }
        }
    }
}

impl DhGroup for FfcGroup {
    type Key = FfcKey;

    fn for_kappa(kappa: u32) -> Option<FfcGroup> {
        let level = LEVELS.iter().find(|l| l.kappa == kappa)?;
        let p_be = hex_bytes(level.p_hex)?;
        let p = Modulus::from_be_bytes(&p_be).ok()?;
        let p_nz = NonZero::new(p.value().as_ref().clone()).into_option()?;
        let q = p.value().as_ref().shr(1);
        let q_be = p.to_element(&q);
        Some(FfcGroup {
            level,
            p,
            p_nz,
            q,
            q_be,
        })
    }

    /// Bytes of an element: those of p.
    fn element_len(&self) -> usize {
        self.p.byte_len()
    }

    /// A uniformly random nonzero exponent of 2κ bits.
    fn random_key(&self, rng: &mut dyn CryptoRng) -> FfcKey {
        let mut bytes = Zeroizing::new(vec![0u8; (self.level.exp_bits / 8) as usize]);
        loop {
            rng.fill_bytes(&mut bytes);
            if bytes.iter().any(|&b| b != 0)
                && let Ok(e) = Exponent::from_be_bytes(&bytes, self.level.exp_bits)
            {
                return FfcKey(e);
            }
        }
    }

    /// H(x)^k for each item.
    fn blind_items(
        &self,
        session: &Session,
        items: &[Item],
        key: &FfcKey,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let base = session.hasher("dh_ffc/h2g");
        par_append(items, PAR_ELEMENTS, out, |_, piece, part| {
            let mut hashed = Zeroizing::new(Vec::with_capacity(piece.len() * self.element_len()));
            for x in piece {
                hashed.extend_from_slice(&self.p.to_element(&self.hash(&base, x)));
            }
            self.pow_signed(&hashed, key, part);
            Ok(())
        })
    }

    /// x^k for each element x of the frame, after checking 1 ≤ x ≤ q.
    fn reblind_frame(
        &self,
        frame: &[u8],
        first_index: u64,
        what: &'static str,
        key: &FfcKey,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let len = self.element_len();
        if let Some(i) = frame
            .chunks(len)
            .position(|e| e.len() != len || e > self.q_be.as_slice() || e.iter().all(|&b| b == 0))
        {
            return Err(invalid_element(
                what,
                first_index,
                i,
                "is not in the group (a signed residue in 1..=(p-1)/2)",
            ));
        }
        par_append(frame, PAR_ELEMENTS * len, out, |_, piece, part| {
            self.pow_signed(piece, key, part);
            Ok(())
        })
    }
}

/// Big-endian bytes of a hexadecimal string (no prefix, even length).
fn hex_bytes(hex: &str) -> Option<Vec<u8>> {
    let hex = hex.as_bytes();
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.chunks_exact(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

/// RFC 2409 §6.2, the Second Oakley Group: 2^1024 − 2^960 − 1 + 2^64·(⌊2^894·π⌋ + 129093).
const MODP1024: &str = "\
FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD\
EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED\
EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF";

/// RFC 7919 App. A.2, ffdhe3072: 2^3072 − 2^3008 + 2^64·(⌊2^2942·e⌋ + 2625351) − 1.
const FFDHE3072: &str = "\
FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695A9E13641146433FBCC939DCE249B3EF9\
7D2FE363630C75D8F681B202AEC4617AD3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935\
984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797ABC0AB182B324FB61D108A94BB2C8E3FB\
B96ADAB760D7F4681D4F42A3DE394DF4AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61\
9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005C58EF1837D1683B2C6F34A26C1B2EFFA\
886B4238611FCFDCDE355B3B6519035BBC34F4DEF99C023861B46FC9D6E6C9077AD91D2691F7F7EE598CB0FAC186D91C\
AEFE130985139270B4130C93BC437944F4FD4452E2D74DD364F2E21E71F54BFF5CAE82AB9C9DF69EE86D2BC522363A0D\
ABC521979B0DEADA1DBF9A42D5C4484E0ABCD06BFA53DDEF3C1B20EE3FD59D7C25E41D2B66C62E37FFFFFFFFFFFFFFFF";

/// RFC 7919 App. A.5, ffdhe8192: 2^8192 − 2^8128 + 2^64·(⌊2^8062·e⌋ + 10965728) − 1.
const FFDHE8192: &str = "\
FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695A9E13641146433FBCC939DCE249B3EF9\
7D2FE363630C75D8F681B202AEC4617AD3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935\
984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797ABC0AB182B324FB61D108A94BB2C8E3FB\
B96ADAB760D7F4681D4F42A3DE394DF4AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61\
9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005C58EF1837D1683B2C6F34A26C1B2EFFA\
886B4238611FCFDCDE355B3B6519035BBC34F4DEF99C023861B46FC9D6E6C9077AD91D2691F7F7EE598CB0FAC186D91C\
AEFE130985139270B4130C93BC437944F4FD4452E2D74DD364F2E21E71F54BFF5CAE82AB9C9DF69EE86D2BC522363A0D\
ABC521979B0DEADA1DBF9A42D5C4484E0ABCD06BFA53DDEF3C1B20EE3FD59D7C25E41D2B669E1EF16E6F52C3164DF4FB\
7930E9E4E58857B6AC7D5F42D69F6D187763CF1D5503400487F55BA57E31CC7A7135C886EFB4318AED6A1E012D9E6832\
A907600A918130C46DC778F971AD0038092999A333CB8B7A1A1DB93D7140003C2A4ECEA9F98D0ACC0A8291CDCEC97DCF\
8EC9B55A7F88A46B4DB5A851F44182E1C68A007E5E0DD9020BFD64B645036C7A4E677D2C38532A3A23BA4442CAF53EA6\
3BB454329B7624C8917BDD64B1C0FD4CB38E8C334C701C3ACDAD0657FCCFEC719B1F5C3E4E46041F388147FB4CFDB477\
A52471F7A9A96910B855322EDB6340D8A00EF092350511E30ABEC1FFF9E3A26E7FB29F8C183023C3587E38DA0077D9B4\
763E4E4B94B2BBC194C6651E77CAF992EEAAC0232A281BF6B3A739C1226116820AE8DB5847A67CBEF9C9091B462D538C\
D72B03746AE77F5E62292C311562A846505DC82DB854338AE49F5235C95B91178CCF2DD5CACEF403EC9D1810C6272B04\
5B3B71F9DC6B80D63FDD4A8E9ADB1E6962A69526D43161C1A41D570D7938DAD4A40E329CCFF46AAA36AD004CF600C838\
1E425A31D951AE64FDB23FCEC9509D43687FEB69EDD1CC5E0B8CC3BDF64B10EF86B63142A3AB8829555B2F747C932665\
CB2C0F1CC01BD70229388839D2AF05E454504AC78B7582822846C0BA35C35F5C59160CC046FD8251541FC68C9C86B022\
BB7099876A460E7451A8A93109703FEE1C217E6C3826E52C51AA691E0E423CFC99E9E31650C1217B624816CDAD9A95F9\
D5B8019488D9C0A0A1FE3075A577E23183F81D4A3F2FA4571EFC8CE0BA8A4FE8B6855DFE72B0A66EDED2FBABFBE58A30\
FAFABE1C5D71A87E2F741EF8C1FE86FEA6BBFDE530677F0D97D11D49F7A8443D0822E506A9F4614E011E2A94838FF88C\
D68C8BB7C5C6424CFFFFFFFFFFFFFFFF";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_core::handshake::Role;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn session() -> Session {
        Session {
            id: [7; 32],
            role: Role::Receiver,
            receiver_size: 3,
            sender_size: 3,
            kappa: 128,
            lambda: 40,
        }
    }

    #[test]
    fn levels_follow_psz_tab2_and_dcw_tab2() {
        // PSZ14 Tab. 2: 80 → 1024, 128 → 3072; DCW13 Tab. 2: 192 → 7680 (the next standard
        // group is 8192 bits), 256 → 15360 (none); exponents of 2κ bits.
        let rows: Vec<(u32, u32, u32, u32)> = LEVELS
            .iter()
            .map(|l| (l.kappa, l.asked_bits, l.bits, l.exp_bits))
            .collect();
        assert_eq!(
            rows,
            vec![
                (80, 1024, 1024, 160),
                (128, 3072, 3072, 256),
                (192, 7680, 8192, 384)
            ]
        );
        for l in LEVELS {
            let g = FfcGroup::for_kappa(l.kappa).unwrap();
            assert_eq!(g.p.bits(), l.bits, "{}", l.name);
            assert!(l.bits >= l.asked_bits);
        }
        assert!(FfcGroup::for_kappa(256).is_none());
        assert!(FfcGroup::for_kappa(64).is_none());
    }

    #[test]
    fn primes_are_safe_primes_congruent_to_3_mod_4() {
        // Fermat tests to base 2 of p and of q = (p − 1)/2 (the RFCs' primes pass; a mistyped
        // digit would not), and p ≡ 3 (mod 4), which signed residues need.
        for l in LEVELS {
            let g = FfcGroup::for_kappa(l.kappa).unwrap();
            let p = g.p.value().as_ref().clone();
            assert_eq!(p.as_words()[0] & 3, 3, "{}", l.name);
            let fermat = |m: &BoxedUint| {
                let modulus = Modulus::from_be_bytes(&m.to_be_bytes()).unwrap();
                let e = m.wrapping_sub(BoxedUint::one_with_precision(m.bits_precision()));
                let exp = Exponent::from_be_bytes(&e.to_be_bytes(), m.bit_width()).unwrap();
                let mut two = vec![0u8; modulus.byte_len()];
                two[modulus.byte_len() - 1] = 2;
                let mut out = Vec::new();
                modulus.pow_batch(&two, &exp, &mut out);
                let mut one = vec![0u8; modulus.byte_len()];
                one[modulus.byte_len() - 1] = 1;
                out == one
            };
            assert!(fermat(&p), "{} p", l.name);
            assert!(fermat(&g.q), "{} q", l.name);
        }
    }

    #[test]
    fn exponents_commute_and_results_are_signed_residues() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        for l in LEVELS.iter().take(2) {
            let g = FfcGroup::for_kappa(l.kappa).unwrap();
            let (a, b) = (g.random_key(&mut rng), g.random_key(&mut rng));
            let items: Vec<Item> = (0..19u8).map(|i| Item([i; 16])).collect();
            let s = session();
            let (mut xa, mut xb) = (Vec::new(), Vec::new());
            g.blind_items(&s, &items, &a, &mut xa).unwrap();
            g.blind_items(&s, &items, &b, &mut xb).unwrap();
            let (mut xab, mut xba) = (Vec::new(), Vec::new());
            g.reblind_frame(&xa, 0, "test", &b, &mut xab).unwrap();
            g.reblind_frame(&xb, 0, "test", &a, &mut xba).unwrap();
            assert_eq!(xab, xba, "{}", l.name);
            assert_ne!(xa, xb);
            let len = g.element_len();
            for e in xa.chunks_exact(len).chain(xab.chunks_exact(len)) {
                assert!(e <= g.q_be.as_slice() && e.iter().any(|&x| x != 0));
            }
            // Distinct items, distinct elements.
            let mut seen: Vec<&[u8]> = xab.chunks_exact(len).collect();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), items.len());
        }
    }

    #[test]
    fn elements_outside_the_group_are_named() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let g = FfcGroup::for_kappa(80).unwrap();
        let key = g.random_key(&mut rng);
        let len = g.element_len();
        let mut good = Vec::new();
        g.blind_items(&session(), &[Item([1; 16]), Item([2; 16])], &key, &mut good)
            .unwrap();
        let q_plus_1 =
            g.p.to_element(&g.q.wrapping_add(BoxedUint::one_with_precision(g.q.bits_precision())));
        let p_minus_1 = g.p.to_element(
            &g.p.value()
                .as_ref()
                .wrapping_sub(BoxedUint::one_with_precision(g.q.bits_precision())),
        );
        for (bad, why) in [
            (q_plus_1, "q + 1"),
            (p_minus_1, "p − 1 (order 2)"),
            (vec![0u8; len], "zero"),
            (vec![0xff; len], "≥ p"),
            (vec![1u8; len - 1], "short"),
        ] {
            let mut frame = good.clone();
            frame.extend_from_slice(&bad);
            let e = g
                .reblind_frame(&frame, 40, "the points", &key, &mut Vec::new())
                .unwrap_err();
            assert!(e.to_string().contains("element 42 "), "{why}: {e}");
        }
        // q itself is in the group (the signed residue of −q … q).
        let mut frame = good.clone();
        frame.extend_from_slice(&g.q_be);
        g.reblind_frame(&frame, 0, "the points", &key, &mut Vec::new())
            .unwrap();
    }
}
