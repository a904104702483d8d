//! `rsa_blind`: RSA blind-signature PSI (semi-honest).
//!
//! **Paper.** De Cristofaro and Tsudik, *Practical Private Set Intersection Protocols with
//! Linear Complexity* (FC 2010), the blind-RSA protocol (Fig. 4), as benchmarked by Pinkas,
//! Schneider and Zohner, *Scalable Private Set Intersection Based on OT Extension*, §3
//! ("Public-key-based PSI", RSA-based \[16\]) and Tables 5-7, row "RSA-based" (PSZ describe no
//! message flow; the one below is the reconstruction of spec note §7.3, which matches PSZ's
//! "2nρ + 2nκ" bits and DCW13 §6.3's "RSA public exponent").
//!
//! **Security model.** Semi-honest parties, the RSA assumption (one-more RSA inversion) with
//! the full-domain hash FDH modelled as a random oracle. The receiver's items are hidden
//! information-theoretically by the blinding factors; the receiver learns the intersection and
//! the sender's set size, the sender only the receiver's set size. The receiver checks the
//! public key's form (N odd of exactly ρ bits, e = 65537), not that gcd(e, φ(N)) = 1, which the
//! model takes for granted: a sender that chose p ≡ 1 mod e would learn from each μ the class of
//! FDH(x) among the e-th powers mod p (docs/SECURITY.md).
//!
//! **Roles.** The receiver is the client of the paper (it learns the intersection); the sender
//! is the signer and holds a fresh RSA key per run.
//!
//! **Message flow** (after the handshake of `blindjoin_core::handshake`, which fixes the sizes
//! n1 = |X| of the receiver and n2 = |Y| of the sender, κ and the session id `sid`):
//!
//! ```text
//! ρ      = |N| from κ: 80 → 1024, 128 → 3072, 192 → 7680, 256 → 15360 bits; e = 65537
//! FDH(x) = (SHA-256(sid, "rsa_blind/fdh", x, 0) ‖ SHA-256(…, 1) ‖ …), the first ρ/8 + 16
//!          bytes as a big-endian integer, mod N
//! T(σ)   = SHA-256(sid, "rsa_blind/tag", σ) truncated to ℓ = λ + ⌈log2(n1·n2)⌉ bits (whole bytes)
//!
//! receiver (X)                                       sender (Y)
//!                                                      p, q random primes of ρ/2 bits, N = p·q,
//!                                                      dp = e^-1 mod (p−1), dq = e^-1 mod (q−1),
//!                                                      qinv = q^-1 mod p
//!   check: N odd, exactly ρ bits; e = 65537  <── N ‖ e ──
//!   r_i ← [1, N) invertible,
//!   μ_i = FDH(x_i)·r_i^e mod N, in X's order ── n1 elements ──>
//!                                            <── n2 tags ── T(FDH(y_π(j))^d), π a random permutation
//!                                                           s_i = μ_i^d mod N by CRT (Garner),
//!                                                           released only if s_i^e ≡ μ_i (mod N)
//!                                            <── n1 elements ── s_i, in the order received
//!   check s_i < N; σ_i = s_i·r_i^-1 mod N = FDH(x_i)^d; check σ_i^e ≡ FDH(x_i) (mod N)
//!   S = { tags received }; output { i : T(σ_i) ∈ S }
//! ```
//!
//! Each party checks every element it receives: a value not below N (or a frame that is not a
//! whole number of elements) is a malformed-message error naming the element's index, and so is
//! a returned signature whose σ^e is not FDH(x) (cheap with e = 65537: 17 squarings).
//!
//! **Work.** The sender does n1 + n2 private-key operations, each two half-size exponentiations
//! (CRT) of ρ/2-bit exponents, plus one e-exponentiation per released signature (the fault
//! check of Boneh-DeMillo-Lipton: a CRT signature computed with a fault would reveal a factor of
//! N; a failed check is an error and nothing is released). The tags' signatures are not checked:
//! only their hash leaves. The receiver does per item one FDH, one r^e, one multiplication to
//! blind, one multiplication to unblind, one σ^e to check, and its share of one inversion per
//! batch of 64 blinding factors (Montgomery's trick: 3 multiplications each). All batched
//! exponentiations (x^dp mod p, x^dq mod q, s^e, r^e, σ^e) run eight bases per AVX-512 IFMA
//! stream ([`blindjoin_modexp`], crypto-bigint's constant-time Montgomery exponentiation on
//! other CPUs); the rest is crypto-bigint's constant-time arithmetic. Both parties split each
//! frame over the rayon pool of the run (`--threads`) in pieces of 64 elements.
//!
//! The sender signs its own items while the receiver blinds, then answers the receiver's frames
//! as they arrive, while the receiver unblinds the answers to the earlier ones; a second thread
//! receives and a third writes (`protocols::common::pipelined`), so neither party waits for the
//! other to read. The key is generated after the handshake, while the receiver waits; with one
//! thread that takes milliseconds at 1024 bits, about 0.2 s at 3072, 10-25 s at 7680 and
//! 0.3-2.5 minutes at 15360 (the prime search's length is random), and the sender searches p
//! and q in parallel when its pool has two threads or more.
//!
//! **Frames.** Elements travel in frames of 2^k elements, k the largest with 2^k·ρ/8 ≤ 1 MiB
//! (8192 at ρ = 1024, 2048 at 3072, 1024 at 7680, 512 at 15360), so that a frame of 384-byte
//! or larger elements stays near 1 MiB and the parties pipeline; tags travel in frames of the
//! same number of tags. The sender answers each frame of μ with one frame of s.
//!
//! **Communication** per run: ρ/8 + 4 bytes of public key, n1·ρ/8 bytes each way, n2·⌈ℓ/8⌉ bytes
//! of tags, and 4 bytes of framing per frame: 2nρ + nℓ bits at n1 = n2 = n, below PSZ Tab. 6's
//! 2nρ + 2nκ (its tags are whole SHA-1 / SHA-256 outputs, 2κ bits).
//!
//! **Deviations from the paper.**
//! - e = 65537 instead of the e = 3 of De Cristofaro's code (DCW13 §6.3): the receiver's work
//!   (r^e, σ^e) grows from 2 to 17 squarings, which is small next to the sender's private-key
//!   operations, and 65537 is the exponent every RSA standard uses (no small-exponent
//!   pitfalls to argue away).
//! - Tags are truncated to ℓ bits instead of whole hash outputs: the receiver only compares
//!   them, and ℓ bits keep the false-positive probability over all n1·n2 comparisons at most
//!   2^-λ (PSZ §6.2 uses the same bound for its masks).
//! - The receiver matches with a hash table (as PSZ §7.1 did to De Cristofaro's code in place
//!   of the pairwise comparison).
//! - Modulus sizes per κ: PSZ Tab. 2 (80 → 1024, 128 → 3072) and, for the levels PSZ do not
//!   cover, DCW13 Tab. 2 (192 → 7680, 256 → 15360, De Cristofaro's column) ([`LEVELS`]).
//! - One hash for every level: FDH is SHA-256 in counter mode (as MGF1), expanded to 128 bits
//!   beyond ρ before the reduction mod N, so that FDH(x) is within statistical distance 2^-128
//!   of uniform in Z_N (the same for the blinding factors r, drawn as ρ + 128 random bits
//!   reduced mod N and retried if not invertible); the tags are SHA-256 truncated to ℓ ≤ 128
//!   bits. The papers use SHA-1 (DCW13 Tab. 2) or SHA-256 (PSZ Tab. 2) per level.
//! - Every hash input carries the session id, so the FDH values and tags of one run mean
//!   nothing in another (the key is fresh per run as well).
//! - The sender never forms d itself: CRT signing needs only d mod (p − 1) and d mod (q − 1).

mod key;
mod receiver;
mod sender;

pub use receiver::receive;
pub use sender::send;

use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{PSI_ROLES, PSZ14, tag_len};
use crate::run::RunOptions;
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};
use blindjoin_core::handshake::Session;
use blindjoin_core::item::{Item, update_prefixed};
use blindjoin_core::{Error, Result};
use sha2::{Digest, Sha256};

/// Protocol id in the handshake.
pub const NAME: &str = "rsa_blind";

/// The descriptor of `rsa_blind`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "RSA blind-signature PSI: the sender signs the receiver's blinded items and its own",
    references: &[
        Reference {
            tag: "DT10",
            authors: "De Cristofaro, Tsudik",
            title: "Practical Private Set Intersection Protocols with Linear Complexity",
            venue: "Financial Cryptography 2010",
            part: "the blind-RSA protocol (Fig. 4)",
        },
        Reference {
            part: "§3 and Tab. 5-7, \"RSA-based\"",
            ..PSZ14
        },
    ],
    security: Security::SemiHonest,
    assumptions: "RSA (one-more inversion), full-domain hash as a random oracle",
    roles: PSI_ROLES,
    kappa: &[80, 128, 192, 256],
    params,
    // hello ‖ hello; verdict ‖ verdict; N ‖ e; μ_i; s_i (the tags travel alongside).
    flights: 5,
    flow: &[
        Message::sender(MSG_KEY),
        Message::receiver(MSG_BLINDED),
        Message::sender(MSG_TAGS),
        Message::sender(MSG_SIGNATURES),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: two_party!(receiver::receive, sender::send),
};

/// Name of the sender's public key (N, e).
pub const MSG_KEY: &str = "the RSA public key";
/// Name of the receiver's blinded items μ_i.
pub const MSG_BLINDED: &str = "the blinded items";
/// Name of the sender's tags of its own items' signatures.
pub const MSG_TAGS: &str = "the sender's tags";
/// Name of the sender's blind signatures s_i.
pub const MSG_SIGNATURES: &str = "the blind signatures";

/// The public exponent e.
pub const E: u32 = 65537;

/// One security level: κ, the RSA modulus size ρ, the hash the source pairs with them, and the
/// source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// κ in bits.
    pub kappa: u32,
    /// ρ = |N| in bits.
    pub modulus_bits: u32,
    /// The hash the source names for the level (this protocol uses SHA-256 throughout).
    pub paper_hash: &'static str,
    /// Where the pair comes from.
    pub source: &'static str,
}

/// The levels `rsa_blind` provides: PSZ Tab. 2 (IFC column) for κ = 80 and 128; for 192 and
/// 256, which PSZ's table lacks, DCW13 Tab. 2 (the RSA sizes of De Cristofaro's protocol).
pub const LEVELS: [Level; 4] = [
    Level {
        kappa: 80,
        modulus_bits: 1024,
        paper_hash: "SHA-1",
        source: "PSZ14 Tab. 2",
    },
    Level {
        kappa: 128,
        modulus_bits: 3072,
        paper_hash: "SHA-256",
        source: "PSZ14 Tab. 2",
    },
    Level {
        kappa: 192,
        modulus_bits: 7680,
        paper_hash: "SHA-1",
        source: "DCW13 Tab. 2",
    },
    Level {
        kappa: 256,
        modulus_bits: 15360,
        paper_hash: "SHA-1",
        source: "DCW13 Tab. 2",
    },
];

/// ρ = |N| in bits for κ, or `InvalidParam` naming `kappa` for a level not in [`LEVELS`].
pub fn modulus_bits(kappa: u32) -> Result<u32> {
    LEVELS
        .iter()
        .find(|l| l.kappa == kappa)
        .map(|l| l.modulus_bits)
        .ok_or_else(|| Error::InvalidParam {
            field: "kappa",
            reason: format!("{NAME} provides κ = 80, 128, 192, 256 only, {kappa} was asked"),
        })
}

/// The most bytes of elements in one frame (1 MiB).
const FRAME_BYTES: usize = 1 << 20;

/// Elements per frame for a `modulus_bits`-bit modulus: the largest power of two whose elements
/// fit `FRAME_BYTES` (tags travel in frames of as many).
pub fn frame_elements(modulus_bits: u32) -> usize {
    let len = (modulus_bits as usize / 8).max(1);
    1 << (FRAME_BYTES / len).max(1).ilog2()
}

/// Elements per unit of parallel work: eight groups of the batch engine's eight lanes, so that
/// one inversion serves 64 blinding factors and rayon still has pieces to spread.
const PAR_ELEMENTS: usize = 64;

/// Bytes of the FDH expansion before the reduction mod N: ρ/8 + 16 (128 bits of margin, so the
/// reduction's bias is below 2^-128).
pub(crate) fn wide_len(modulus_bits: u32) -> usize {
    modulus_bits as usize / 8 + 16
}

/// The bytes of each message: the key, n1 elements each way and n2 tags, in frames of
/// [`frame_elements`].
fn traffic(s: &Sizes) -> Result<Traffic> {
    let tag_len = tag_len(s.lambda, s.n_recv, s.n_send)?;
    let bits = modulus_bits(s.kappa)?;
    let (len, per) = (bits as usize / 8, frame_elements(bits));
    Ok(vec![
        (MSG_KEY, (key::key_msg_len(bits) + FRAME_HEADER_LEN) as u64),
        (MSG_BLINDED, framed_bytes(s.n_recv, len, per)),
        (MSG_TAGS, framed_bytes(s.n_send, tag_len, per)),
        (MSG_SIGNATURES, framed_bytes(s.n_recv, len, per)),
    ])
}

/// The protocol parameters both sides must agree on for the run's κ.
fn params(opts: &RunOptions) -> Vec<(String, String)> {
    let bits = modulus_bits(opts.kappa).map_or_else(|_| "none".into(), |b| b.to_string());
    vec![
        ("modulus_bits".into(), bits),
        ("public_exponent".into(), E.to_string()),
        ("fdh".into(), "sha256-counter, rho+128 bits mod N".into()),
        ("tag_hash".into(), "sha256".into()),
    ]
}

/// The full-domain hash under the session's domain: the ρ/8 + 16 bytes that, reduced mod N,
/// are FDH(x).
pub(crate) struct Fdh {
    base: Sha256,
    modulus_bits: u32,
}

impl Fdh {
    pub(crate) fn new(session: &Session, modulus_bits: u32) -> Fdh {
        Fdh {
            base: session.hasher("rsa_blind/fdh"),
            modulus_bits,
        }
    }

    /// Writes the expansion of `item` into `out` (`wide_len` bytes): SHA-256 blocks with a
    /// 32-bit big-endian counter after the item.
    pub(crate) fn expand(&self, item: &Item, out: &mut [u8]) {
        let mut h = self.base.clone();
        update_prefixed(&mut h, &item.0);
        for (i, block) in out.chunks_mut(32).enumerate() {
            let mut c = h.clone();
            c.update((i as u32).to_be_bytes());
            let d = c.finalize();
            block.copy_from_slice(&d[..block.len()]);
        }
    }

    /// Bytes of an expansion.
    pub(crate) fn wide_len(&self) -> usize {
        wide_len(self.modulus_bits)
    }
}

/// The comparison tags T(σ) under the session's domain.
pub(crate) struct TagHash {
    base: Sha256,
}

impl TagHash {
    pub(crate) fn new(session: &Session) -> TagHash {
        TagHash {
            base: session.hasher("rsa_blind/tag"),
        }
    }

    /// Appends T(σ) (`tag_len` bytes) for each `len`-byte element of `elements` to `out`.
    pub(crate) fn append(&self, elements: &[u8], len: usize, tag_len: usize, out: &mut Vec<u8>) {
        out.reserve(elements.len() / len.max(1) * tag_len);
        for e in elements.chunks_exact(len) {
            let mut h = self.base.clone();
            h.update(e);
            out.extend_from_slice(&h.finalize()[..tag_len]);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// PSZ Tab. 2 (rows 80-bit and 128-bit, verbatim: SYM, FFC and IFC, ECC, hash) and DCW13
    /// Tab. 2 (rows 192 and 256, De Cristofaro's column, verbatim) give [`LEVELS`].
    #[test]
    fn levels_are_the_papers_tables() {
        let psz = [
            ("80-bit", "80", "1,024", "K-163", "SHA-1"),
            ("128-bit", "128", "3,072", "K-283", "SHA-256"),
        ];
        let dcw = [("192", "RSA 7680, SHA-1"), ("256", "RSA 15360, SHA-1")];
        let mut rows: Vec<(u32, u32, String, &str)> = psz
            .iter()
            .map(|(_, sym, ifc, _, hash)| {
                (
                    sym.parse().unwrap(),
                    ifc.replace(',', "").parse().unwrap(),
                    (*hash).to_owned(),
                    "PSZ14 Tab. 2",
                )
            })
            .collect();
        for (security, cell) in dcw {
            let (rsa, hash) = cell.split_once(", ").unwrap();
            rows.push((
                security.parse().unwrap(),
                rsa.trim_start_matches("RSA ").parse().unwrap(),
                hash.to_owned(),
                "DCW13 Tab. 2",
            ));
        }
        let ours: Vec<(u32, u32, String, &str)> = LEVELS
            .iter()
            .map(|l| (l.kappa, l.modulus_bits, l.paper_hash.to_owned(), l.source))
            .collect();
        assert_eq!(ours, rows);
        assert_eq!(PROTOCOL.kappa, LEVELS.map(|l| l.kappa));
        for l in LEVELS {
            assert_eq!(modulus_bits(l.kappa).unwrap(), l.modulus_bits);
            let opts = RunOptions {
                kappa: l.kappa,
                ..RunOptions::default()
            };
            let p = params(&opts);
            assert!(p.contains(&("modulus_bits".into(), l.modulus_bits.to_string())));
        }
        assert!(modulus_bits(112).is_err());
    }

    #[test]
    fn frames_stay_near_one_mebibyte() {
        let per: Vec<usize> = LEVELS.iter().map(|l| frame_elements(l.modulus_bits)).collect();
        assert_eq!(per, [8192, 2048, 1024, 512]);
        for l in LEVELS {
            let bytes = frame_elements(l.modulus_bits) * l.modulus_bits as usize / 8;
            assert!((FRAME_BYTES / 2..=FRAME_BYTES).contains(&bytes), "{l:?}");
        }
    }
}
