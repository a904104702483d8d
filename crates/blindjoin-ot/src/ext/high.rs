//! IKNP OT extension at κ = 192 and κ = 256, with DCW13 Tab. 2's primitives for those levels:
//! base OTs on NIST P-384 / P-521 ([`crate::base::nist`]) and the OT hash SHA-384 / SHA-512.
//!
//! The flow is IKNP's (the [parent module](super)), on the wide-row core of KK13 and KKRT
//! (`wide.rs`) with rows of two blocks, in the form the garbled-Bloom-filter PSI uses: random
//! OTs of which only the messages of choice 1 are computed (PSZ14 §4.2, x_i^0 = 0).
//!
//! ```text
//! extension receiver R (choice bits r)                 extension sender S
//!   256 base OTs as their sender (P-384 or P-521)       s ← {0,1}^256, the base OTs' choices
//!   per chunk of ≤ 2^16 OTs:
//!   t^j = G(k_j^0), u^j = t^j ⊕ G(k_j^1) ⊕ r  ── u^1..u^256 ──>  q^j = G(k_j^{s_j}) ⊕ s_j·u^j
//!   x_i^1 = H(i, t_i) where r_i = 1                     x_i^1 = H(i, q_i ⊕ s)
//! ```
//!
//! - G is AES-256 in counter mode ([`Aes256Prg`]) keyed by the 256-bit base-OT keys, so that
//!   the extension receiver's choice bits are hidden from the sender up to 2^256 work per
//!   column, not 2^128.
//! - H(i, x) = SHA-384 (κ = 192) or SHA-512 (κ = 256) of `domain ‖ sid ‖ le64(i) ‖ x`, x the
//!   row's 32 bytes, truncated to 128 bits (the callers' strings are at most 128 bits; DCW13
//!   §6.1 truncates as NIST SP 800-107 allows).
//!
//! **Deviation.** κ = 192 runs 256 columns, not 192: the transposition works on groups of 128
//! columns. The 64 extra base OTs and u columns cost traffic, not security; the level is that of
//! its weakest part, P-384 and SHA-384 at 192.

use super::iknp::MSG_U_COLUMNS;
use super::wide::{ColumnPrg, WideReceiver, WideSender};
use super::{CHUNK, row_bytes};
use crate::base::nist::{self, NistBaseCurve, WIDE_KEY_LEN};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use sha2::Digest;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

/// Columns of the extension matrix (base OTs) at κ = 192 and 256.
pub const HIGH_COLUMNS: usize = 256;

/// Rows hashed per unit of parallel work.
const PAR_ROWS: usize = 1 << 10;

/// Domain label of the OT hash H.
const HASH_DOMAIN: &[u8] = b"blindjoin/ot/iknp-high/v1";

/// The primitives of a level above 128 (DCW13 Tab. 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HighLevel {
    /// κ.
    pub kappa: u32,
    /// The base-OT curve.
    pub curve: &'static str,
    /// The OT hash.
    pub hash: &'static str,
    /// Bytes of one base-OT point on the wire (compressed SEC1).
    pub point_len: usize,
}

/// κ = 192: P-384, SHA-384.
pub const LEVEL_192: HighLevel = HighLevel {
    kappa: 192,
    curve: <p384::NistP384 as NistBaseCurve>::NAME,
    hash: "SHA-384",
    point_len: <p384::NistP384 as NistBaseCurve>::POINT_LEN,
};

/// κ = 256: P-521, SHA-512.
pub const LEVEL_256: HighLevel = HighLevel {
    kappa: 256,
    curve: <p521::NistP521 as NistBaseCurve>::NAME,
    hash: "SHA-512",
    point_len: <p521::NistP521 as NistBaseCurve>::POINT_LEN,
};

/// The level of `kappa` if it is 192 or 256.
pub fn level(kappa: u32) -> Option<&'static HighLevel> {
    match kappa {
        192 => Some(&LEVEL_192),
        256 => Some(&LEVEL_256),
        _ => None,
    }
}

fn level_or_err(kappa: u32) -> Result<&'static HighLevel> {
    level(kappa).ok_or_else(|| Error::InvalidParam {
        field: "kappa",
        reason: format!("the κ = 192/256 extension was asked for κ = {kappa}"),
    })
}

/// AES-256 in counter mode: block j of the stream is AES_key(le128(j)), j from 0. Byte calls
/// must ask for whole blocks (the core's columns are multiples of 16 bytes). The round keys
/// are wiped on drop (the `aes` crate's `zeroize` feature).
pub struct Aes256Prg {
    cipher: aes::Aes256,
    counter: u128,
}

impl ZeroizeOnDrop for Aes256Prg {}

impl Aes256Prg {
    /// The generator keyed by `key`.
    pub fn new(key: &[u8; WIDE_KEY_LEN]) -> Self {
        use aes::cipher::KeyInit;
        let mut k = aes::cipher::Key::<aes::Aes256>::from(*key);
        let cipher = aes::Aes256::new(&k);
        k.as_mut_slice().zeroize();
        Aes256Prg { cipher, counter: 0 }
    }
}

impl ColumnPrg for Aes256Prg {
    fn fill_bytes(&mut self, out: &mut [u8]) {
        use aes::cipher::BlockCipherEncrypt;
        debug_assert_eq!(out.len() % 16, 0);
        let mut buf = [aes::Block::default(); 64];
        for piece in out.chunks_mut(16 * buf.len()) {
            let n = piece.len().div_ceil(16);
            for b in &mut buf[..n] {
                *b = aes::Block::from(self.counter.to_le_bytes());
                self.counter = self.counter.wrapping_add(1);
            }
            self.cipher.encrypt_blocks(&mut buf[..n]);
            for (dst, b) in piece.chunks_mut(16).zip(&buf[..n]) {
                dst.copy_from_slice(&b[..dst.len()]);
            }
        }
        for b in &mut buf {
            b.as_mut_slice().zeroize();
        }
    }
}

/// H(i, row) of the level: SHA-384/512 of `domain ‖ sid ‖ le64(i) ‖ row`, truncated to a block.
#[derive(Clone)]
struct RowHash<D> {
    prefix: D,
}

impl<D: Digest + Clone + Send + Sync> RowHash<D> {
    fn new(sid: &[u8; 32]) -> Self {
        let mut prefix = D::new();
        prefix.update(HASH_DOMAIN);
        prefix.update(sid);
        RowHash { prefix }
    }

    fn hash(&self, index: u64, row: &[Block]) -> Block {
        let mut h = self.prefix.clone();
        h.update(index.to_le_bytes());
        for b in row {
            h.update(b.to_bytes());
        }
        let mut d = h.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&d[..16]);
        d.as_mut_slice().zeroize();
        Block::from_bytes(out)
    }

    /// `out[i] = H(first + i, rows_i ⊕ mask)` where bit i of `select` is set (all i if `None`),
    /// `Block::ZERO` elsewhere; rows of two blocks.
    fn hash_rows(
        &self,
        first: u64,
        rows: &[Block],
        mask: [Block; 2],
        select: Option<&[u8]>,
        out: &mut [Block],
    ) {
        out.par_chunks_mut(PAR_ROWS)
            .zip(rows.par_chunks(2 * PAR_ROWS))
            .enumerate()
            .for_each(|(p, (out, rows))| {
                for (k, (o, row)) in out.iter_mut().zip(rows.chunks_exact(2)).enumerate() {
                    let i = p * PAR_ROWS + k;
                    *o = if select.is_none_or(|s| (s[i / 8] >> (i % 8)) & 1 == 1) {
                        let mut x = [row[0] ^ mask[0], row[1] ^ mask[1]];
                        let h = self.hash(first + i as u64, &x);
                        x.zeroize();
                        h
                    } else {
                        Block::ZERO
                    };
                }
            });
    }
}

/// The level's hash, by κ.
#[derive(Clone)]
enum LevelHash {
    K192(RowHash<sha2::Sha384>),
    K256(RowHash<sha2::Sha512>),
}

impl LevelHash {
    fn new(level: &HighLevel, sid: &[u8; 32]) -> Self {
        if level.kappa == 192 {
            LevelHash::K192(RowHash::new(sid))
        } else {
            LevelHash::K256(RowHash::new(sid))
        }
    }

    fn hash_rows(
        &self,
        first: u64,
        rows: &[Block],
        mask: [Block; 2],
        select: Option<&[u8]>,
        out: &mut [Block],
    ) {
        match self {
            LevelHash::K192(h) => h.hash_rows(first, rows, mask, select, out),
            LevelHash::K256(h) => h.hash_rows(first, rows, mask, select, out),
        }
    }
}

/// The extension sender at κ = 192 or 256: holds s and the PRGs G(k_j^{s_j}), wiped on drop.
pub struct HighSender {
    core: WideSender<Aes256Prg>,
    hash: LevelHash,
    rows: Vec<Block>,
}

impl Drop for HighSender {
    fn drop(&mut self) {
        self.rows.zeroize();
    }
}

impl HighSender {
    /// Runs the [`HIGH_COLUMNS`] base OTs of the level of `kappa` (192 or 256) as their
    /// receiver with a random s.
    pub fn setup<C: Channel + ?Sized>(
        kappa: u32,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let level = level_or_err(kappa)?;
        let s: Vec<Block> = (0..HIGH_COLUMNS / 128)
            .map(|_| Block::random(rng))
            .collect();
        let choices: Zeroizing<Vec<bool>> =
            Zeroizing::new((0..HIGH_COLUMNS).map(|j| s[j / 128].bit(j % 128)).collect());
        let keys = Zeroizing::new(if kappa == 192 {
            nist::receive_random::<p384::NistP384, _>(ch, sid, &choices, rng)?
        } else {
            nist::receive_random::<p521::NistP521, _>(ch, sid, &choices, rng)?
        });
        let prgs = keys.iter().map(Aes256Prg::new).collect();
        Ok(HighSender {
            core: WideSender::from_parts(s, prgs)?,
            hash: LevelHash::new(level, sid),
            rows: Vec::new(),
        })
    }

    /// `out.len()` random OTs of which only the messages of choice 1 are computed:
    /// `out[i] = x_i^1 = H(i, q_i ⊕ s)`, the counterpart of [`HighReceiver::receive_ones`]. The
    /// receiver's u columns arrive on `rx`, one frame per chunk of at most [`CHUNK`] OTs.
    ///
    /// Errors: the channel's, and `Malformed` for a frame of u columns of the wrong length.
    pub fn send_ones<C: FrameReceiver + ?Sized>(
        &mut self,
        rx: &mut C,
        out: &mut [Block],
    ) -> Result<()> {
        let s = [self.core.s()[0], self.core.s()[1]];
        for o in out.chunks_mut(CHUNK) {
            self.rows.zeroize();
            self.rows.clear();
            let first = self
                .core
                .extend(rx, o.len(), MSG_U_COLUMNS, &mut self.rows)?;
            self.hash.hash_rows(first, &self.rows, s, None, o);
        }
        self.rows.zeroize();
        Ok(())
    }
}

/// The extension receiver at κ = 192 or 256: holds the PRG pairs, wiped on drop.
pub struct HighReceiver {
    core: WideReceiver<Aes256Prg>,
    hash: LevelHash,
    rows: Vec<Block>,
}

impl Drop for HighReceiver {
    fn drop(&mut self) {
        self.rows.zeroize();
    }
}

impl HighReceiver {
    /// Runs the [`HIGH_COLUMNS`] base OTs of the level of `kappa` (192 or 256) as their sender.
    pub fn setup<C: Channel + ?Sized>(
        kappa: u32,
        ch: &mut C,
        sid: &[u8; 32],
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let level = level_or_err(kappa)?;
        let keys = Zeroizing::new(if kappa == 192 {
            nist::send_random::<p384::NistP384, _>(ch, sid, HIGH_COLUMNS, rng)?
        } else {
            nist::send_random::<p521::NistP521, _>(ch, sid, HIGH_COLUMNS, rng)?
        });
        let prgs = keys
            .iter()
            .map(|[k0, k1]| [Aes256Prg::new(k0), Aes256Prg::new(k1)])
            .collect();
        Ok(HighReceiver {
            core: WideReceiver::from_parts(HIGH_COLUMNS / 128, prgs)?,
            hash: LevelHash::new(level, sid),
            rows: Vec::new(),
        })
    }

    /// Random OTs with packed choice bits (bit i at byte i/8, position i%8) of which only the
    /// outputs of choice 1 are computed: `out[i] = H(i, t_i)` where bit i is set,
    /// `Block::ZERO` where it is not. The u columns go out on `tx`, one frame per chunk of at
    /// most [`CHUNK`] OTs.
    ///
    /// Errors: `InvalidParam` if `choices` has fewer than ⌈out.len()/8⌉ bytes; the channel's.
    pub fn receive_ones<C: FrameSender + ?Sized>(
        &mut self,
        tx: &mut C,
        choices: &[u8],
        out: &mut [Block],
    ) -> Result<()> {
        if choices.len() < out.len().div_ceil(8) {
            return Err(Error::InvalidParam {
                field: "choices",
                reason: format!(
                    "{} bytes of choice bits for {} OTs",
                    choices.len(),
                    out.len()
                ),
            });
        }
        for (k, o) in out.chunks_mut(CHUNK).enumerate() {
            let len = o.len();
            let bytes = len.div_ceil(8);
            // The chunk's bits, the padding past its last OT zero.
            let mut r = Zeroizing::new(vec![0u8; row_bytes(len)]);
            r[..bytes].copy_from_slice(&choices[k * CHUNK / 8..][..bytes]);
            if len % 8 != 0 {
                r[bytes - 1] &= (1u8 << (len % 8)) - 1;
            }
            self.rows.zeroize();
            self.rows.clear();
            // IKNP: every column of the code matrix is r.
            let first = self.core.extend(
                tx,
                len,
                MSG_U_COLUMNS,
                |_, _, rb, cols| {
                    for c in cols.chunks_exact_mut(rb) {
                        c.copy_from_slice(&r);
                    }
                },
                &mut self.rows,
            )?;
            self.hash
                .hash_rows(first, &self.rows, [Block::ZERO; 2], Some(&r[..]), o);
        }
        self.rows.zeroize();
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_testkit::{rng, run_two_party};

    #[test]
    fn levels_follow_dcw13_table_2() {
        // DCW13 Tab. 2, column "Ours": 192 → SHA-384 (OT), P-384; 256 → SHA-512 (OT), P-521.
        let l = level(192).unwrap();
        assert_eq!((l.curve, l.hash, l.point_len), ("P-384", "SHA-384", 49));
        let l = level(256).unwrap();
        assert_eq!((l.curve, l.hash, l.point_len), ("P-521", "SHA-512", 67));
        assert!(level(128).is_none() && level(80).is_none());
    }

    #[test]
    fn aes256_prg_is_ctr_mode_from_zero() {
        use aes::cipher::{BlockCipherEncrypt, KeyInit};
        let key = [3u8; 32];
        let mut prg = Aes256Prg::new(&key);
        let mut out = vec![0u8; 16 * 70];
        prg.fill_bytes(&mut out[..16 * 65]);
        prg.fill_bytes(&mut out[16 * 65..]);
        let aes = aes::Aes256::new(&key.into());
        for j in [0usize, 1, 63, 64, 65, 69] {
            let mut b = aes::Block::from((j as u128).to_le_bytes());
            aes.encrypt_block(&mut b);
            assert_eq!(&out[16 * j..16 * (j + 1)], &b[..], "block {j}");
        }
    }

    /// The receiver's outputs equal the sender's where its bit is 1, and are zero elsewhere;
    /// the sender's differ from a hash of the wrong row.
    fn check(kappa: u32, m: usize) {
        let bits: Vec<u8> = (0..m.div_ceil(8))
            .map(|i| (i as u8).wrapping_mul(0x9d) ^ 0x35)
            .collect();
        let sid = [4u8; 32];
        let (sent, got) = run_two_party(
            |ch| {
                let mut s = HighSender::setup(kappa, ch, &sid, &mut rng(1)).unwrap();
                let mut out = vec![Block::ZERO; m];
                s.send_ones(ch, &mut out).unwrap();
                out
            },
            |ch| {
                let mut r = HighReceiver::setup(kappa, ch, &sid, &mut rng(2)).unwrap();
                let mut out = vec![Block::ZERO; m];
                r.receive_ones(ch, &bits, &mut out).unwrap();
                out
            },
        );
        for i in 0..m {
            if (bits[i / 8] >> (i % 8)) & 1 == 1 {
                assert_eq!(got[i], sent[i], "OT {i}");
            } else {
                assert_eq!(got[i], Block::ZERO, "OT {i}");
                assert_ne!(sent[i], Block::ZERO, "OT {i}");
            }
        }
    }

    #[test]
    fn receiver_gets_the_choice_one_messages() {
        check(192, 1000);
        check(256, CHUNK + 13);
    }

    #[test]
    fn other_levels_are_refused() {
        let (a, _) = run_two_party(
            |ch| {
                HighSender::setup(128, ch, &[0; 32], &mut rng(1))
                    .err()
                    .map(|e| e.to_string())
            },
            |_| (),
        );
        assert!(a.unwrap().contains("kappa"));
    }
}
