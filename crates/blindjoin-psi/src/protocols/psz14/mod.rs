//! `psz14`: OT-based set-inclusion PSI with Cuckoo hashing and a stash, semi-honest.
//!
//! **Paper.** Pinkas, Schneider, Zohner, *Scalable Private Set Intersection Based on OT
//! Extension* (USENIX Security 2014, full version): the private
//! equality test with 1-out-of-N OT (§5.1), the set-inclusion protocol (§5.2) run once per bin
//! (§5.3), Cuckoo hashing with a stash for the receiver and simple hashing with both hash
//! functions for the sender (§6.1, §6.2 "PSI based on Cuckoo hashing", App. E), masks of real
//! items only, sent in random order (§6.2), hashing items to a short domain (App. A, §6.2
//! footnote 7), and KK13's 1-out-of-2^η random OT (App. C.3, η = 8), `blindjoin_ot::ext::kk13`.
//! The paper has no figure for the protocol; Tab. 4 (row "Cuckoo Hashing") and Tab. 6 (row "Set
//! Inclusion §5 + Hashing §6") give its cost (see *Cost*).
//!
//! **Security model.** Semi-honest receiver and sender, in the random-oracle model (KK13's row
//! hash, the domain hash and the mask hash below; PSZ14 App. B) with CO15 base OTs (CDH). The
//! sender learns n1; the receiver learns n2 and the intersection, as indices of its own items.
//!
//! **Message flow** (receiver R = PSZ's P2 with n1 items x, sender S = P1 with n2 items y;
//! h_0, h_1 the bin hash functions and D_τ(·) the domain hash into ση = η·t bits, both keyed by
//! the session id; t = ⌈σ/η⌉ blocks of η = 8 bits; s = 4 stash slots):
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict                 (handshake: n1, n2, κ, λ, η, k, ε, s, rules)
//! R: Cuckoo-hash x into b = ⌈2(1+ε)·n1⌉ bins with h_0, h_1 (ε = 0.2) and a stash of s;
//!    bin β holds (x, j) with h_j(x) = β, or nothing; stash slot k holds x, or nothing
//! S: simple-hashes y with h_0, h_1 into the b bins (b follows from n1; the entries grouped by
//!    chunk of bins, see *Memory*), meanwhile
//! R → S: b, s, σ                                   (S checks each; a difference names it)
//! κ' = 256 base OTs (CO15, R is the base-OT sender)  (2 flights)
//! R → S: KK13 u columns for t random 1-out-of-256 OTs per "virtual bin" β ∈ [0, b+s) (the b
//!    bins, then the s stash slots), in chunks of ~2^16 OTs. R's choice in OT (β, i) is block i
//!    of D_j(x) for a bin holding (x, j), of D_2(x) for a stash slot holding x, random if empty
//! S, chunk by chunk: for every (y, j) in bin β (simple hashing with h_0 and h_1), the mask
//!    M_β(D_j(y)) where M_β(v) = H(β, ⊕_i r_{β,i}(v_i)) truncated to ℓ2 bits, r_{β,i}(w) being
//!    S's output w of OT (β, i); for stash slot k the 256 outputs of each of its OTs
//! S → R: set 0 = {M_{h_0(y)}(D_0(y))}_y, set 1 = {M_{h_1(y)}(D_1(y))}_y   (n2 masks of ℓ2 bits
//!    each, each set in its own random order); then for k < s, stash set k =
//!    {M_{b+k}(D_2(y))}_y (n2 masks of ℓ1 bits; the s stash sets share one random order)
//! R: x placed by j in bin β is in Y iff M_β(D_j(x)), which R computes from its own OT outputs,
//!    is in set j (R sorts its masks of each j and the set, then merges); a stash item in slot
//!    k iff its mask is in stash set k
//! ```
//!
//! **Parameters.**
//! - b = ⌈2.4·n1⌉ bins (at least 8), 2 hash functions, stash s = 4: `CuckooParams::psz`, PSZ's
//!   ε = 0.2 and s = 4 (§7, App. E, after KMW). Failure (a full stash) ends the run with an
//!   error; its probability is about n1^-4 (below 2^-40 from n1 = 2^10 on, see `hashing`).
//! - σ = λ + ⌈log2((s+2)·n2)⌉ ([`sigma_bits`]): short values of t = ⌈σ/η⌉ blocks of η = 8
//!   bits, all ηt bits used. A false match through equal short values needs a receiver item and a
//!   *different* sender item compared in the same OT instance: each sender pair (y, j) meets at
//!   most the one occupant of its bin, and each stash slot meets all n2 items, so at most
//!   (s+2)·n2 pairs are ever compared, and each has equal short values with probability
//!   2^-ηt ≤ 2^-σ. PSZ App. A's bound d = 2·log2 n − 1 + λ instead keeps all n1 + n2 items
//!   collision-free (81 bits at n1 = n2 = 2^20 and λ = 40, i.e. 11 blocks, against our 63 bits
//!   and 8 blocks); §6.2's footnote 7 makes the same point that only items in one bin need
//!   distinct short values. The test `sigma_values` has both. A caller's σ
//!   ([`crate::RunOptions::sigma`]; PSZ14's experiments take σ = 32, Tab. 5-8) replaces the
//!   formula and goes into the handshake, so both parties must give the same; one below the
//!   formula is refused unless [`crate::RunOptions::allow_weak`] is set, since a false match
//!   then has probability up to (s+2)·n2·2^-σ (2^-13.4 at σ = 32 and n2 = 2^16).
//! - ℓ2 = λ + ⌈log2(n1·n2)⌉ bits for bin masks and ℓ1 = λ + ⌈log2 n2⌉ bits for stash masks
//!   (§6.2: "ℓ1 = λ + log2 n1", "ℓ2 = λ + log2 n1 + log2 n2", with PSZ's P1 our sender), each
//!   rounded up to whole bytes on the wire (`params::tag_bytes`). R compares each of its bin
//!   items with the n2 masks of one set only, so at most n1·n2 bin comparisons (false match
//!   ≤ 2^-λ) and n2 per stash slot (≤ 2^-λ each); with the short-value bound the total false-match
//!   probability is at most (s+2)·2^-λ.
//! - KK13 with η = 8: κ' = 256 bits of u columns per OT (PSZ Tab. 9: 0.25·κσ bits per item and
//!   σ bits), (b+s)·t OTs in all.
//! - κ ∈ {80, 128} (PSZ14 Tab. 2's two levels, both measured in PSZ Tab. 5): the
//!   Walsh-Hadamard code of length 2^η = 256 has distance 128 ≥ κ at both, so the run is the
//!   same at 80 as at 128 (PSZ's κ = 80 rows use the same code). κ = 192 and 256 are refused:
//!   the base OTs (Ristretto255), the PRGs and the hashes' AES keys give 128 bits.
//!
//! **Cost.** R sends (b+s)·t·256 bits of u columns (plus one partial 128-row block per chunk and
//! the base OTs), S sends 2·n2·ℓ2 + s·n2·ℓ1 bits of masks: PSZ Tab. 4's Cuckoo row,
//! (2(1+ε)n + s)·t OTs and s·n·ℓ1 + 2n·ℓ2 bits. Tab. 6 states the same cost as
//! 0.5nκσ + 6n(λ + 2 log2 n), which counts 2n bins instead of 2.4n (and rounds the mask terms
//! up), so our traffic is about 15-20% above Tab. 6's formula at equal σ. The descriptor's
//! traffic formula gives every message's bytes (checked against metered runs); at n = 2^16 to
//! 2^20 it is within 3% above Tab. 4's formula at our t (test `communication_follows_table_4`).
//!
//! **Pipelining.** The receiver processes [`chunk_bins`] virtual bins per KK13 call (t·chunk ≤
//! 2^16 OTs, one frame of u columns), computes its masks and drops the OT outputs; the sender
//! evaluates each chunk as its frame arrives, so the two overlap and memory for the OTs stays
//! bounded by one chunk. The sender prepares each simple-hashing entry's OT inputs beforehand,
//! grouped by chunk and in bin order within a chunk (one scatter pass into one stream per
//! chunk, then a sort of each chunk), so the per-chunk work reads memory sequentially, and it
//! hashes its KK13 outputs two at a time (`Kk13SenderOutputs::outputs`). The sender's masks go
//! out only after the last chunk: a set in random order can only be sent once it is complete,
//! and the sender sends nothing while the receiver may still be writing (so neither blocks the
//! other on a full socket buffer).
//!
//! **Memory.** b follows the receiver's announced n1, so the sender keeps no array over the b
//! bins (no per-bin table of simple hashing): only its own 2·n2 entries and one 4-byte index
//! entry per chunk of bins, checked against `RunOptions::memory_budget`. Everything else that
//! n1 sizes is allocated a chunk at a time as the receiver's u columns arrive, so a receiver
//! that announces a large set and sends nothing costs the sender next to nothing.
//!
//! **Deviations.**
//! 1. *Mask hash.* PSZ's mask is the XOR of the OT outputs (§5.1, §5.2). Ours hashes that XOR
//!    once more, M_β(v) = H(β, ⊕_i r_{β,i}(v_i)) with H = TCCR under a session key (GKWY20 §7.4,
//!    fixed-key AES; tweak β). Reason: a stash slot's OTs are evaluated on all n2 sender items,
//!    and plain XOR masks of one instance are GF(2) combinations of only t·2^η OT strings; for
//!    n2 ≫ t·2^η they satisfy linear relations that mirror the block structure of the sender's
//!    short values, which the simulation of §5.1 does not account for. §5.2 avoids this by
//!    giving every sender element its own substring of n1·ℓ-bit OT strings, which would make the
//!    receiver compute n2 masks per stash slot (and `maxb` per bin); the hash gives the same
//!    independence in the random-oracle model for one AES pair per mask.
//! 2. *Domain hash per hash function.* The short value of an item depends on the function that
//!    placed it (D_0, D_1 for bins, D_2 for the stash; TCCR with tweak j), so an item with
//!    h_0(y) = h_1(y) does not produce two equal masks, and bin and stash instances never share
//!    an input.
//! 3. *No bin padding.* PSZ pad every bin to the maximum bin size with dummies so that bin loads
//!    stay hidden, but §6.2 (and App. E, "no masks are sent for dummy elements") send only the
//!    masks of real items, in permuted order: the receiver sees exactly 2·n2 bin masks whatever
//!    the loads, and the sender's OT work does not depend on a padded size either (the random
//!    OTs are evaluated per item). So no maximum bin size is needed, none is negotiated, and no
//!    load can make the run fail; the masks of each hash function form one set in random order
//!    (so a position says nothing about an item or its bin), and R compares an item placed by
//!    h_j with set j only, which is what makes ℓ2 = λ + log2 n1 + log2 n2 sufficient.
//! 4. *σ.* From the compared pairs rather than from all items (see Parameters).
//! 5. *Stash order.* The s stash sets are sent in one random order (fresh per run, independent of
//!    the bin sets' orders) rather than one order each: position p holds the s masks of one
//!    item, which the receiver could simulate, since an item matches at most one stash slot
//!    (stash items are distinct). One order costs one pass of random memory access instead of
//!    s, about 0.5 s of the sender's time at n2 = 2^20.
//! 6. The receiver sends b, s and σ after the handshake so that a disagreement is reported as a
//!    parameter mismatch naming the field; the handshake itself carries the rules (η, k, ε, s,
//!    the σ and mask-length formulas), since b and σ depend on both set sizes.
//!
//! Timing: the sender's work per chunk depends on its bins' loads, and it reads the receiver's
//! chunks as fast as it evaluates them; like PSZ we do not hide timing.

mod receiver;
mod sender;

pub use receiver::receive;
pub use sender::send;

use crate::BaseOt;
use crate::hashing::{CuckooParams, PSZ_STASH};
use crate::params::ceil_log2;
use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{CHUNK, PSI_ROLES, PSZ14, check_tag_len, set_size, tag_len};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::{framed_bytes, msg_bytes};
use blindjoin_core::handshake::{Session, expect_same};
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::kk13;
use blindjoin_ot::{base, traffic};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Protocol id in the handshake.
pub const NAME: &str = "psz14";

/// The descriptor of `psz14`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "OT-based set inclusion per bin of the receiver's Cuckoo table (2 hashes, stash of 4), KK13 1-out-of-256 OT",
    references: &[Reference {
        part: "§5-6, App. A, C.3, E; Tab. 4 \"Cuckoo Hashing\", Tab. 5-6 \"Set Inclusion §5 + Hashing §6\"",
        ..PSZ14
    }],
    security: Security::SemiHonest,
    assumptions: "KK13 1-out-of-256 OT extension on Chou-Orlandi base OTs (CDH), random-oracle hashes",
    roles: PSI_ROLES,
    kappa: &[80, 128],
    params: |o| params(o.base_ot, o.sigma),
    // hello ‖ hello; verdict ‖ verdict; table parameters + base-OT S; base-OT R_i; u columns;
    // masks.
    flights: 6,
    flow: &[
        Message::receiver(MSG_SETUP),
        Message::receiver(base::MSG_SENDER_POINT),
        Message::sender(base::MSG_RECEIVER_POINTS),
        Message::receiver(kk13::MSG_U_COLUMNS),
        Message::sender(MSG_BIN_MASKS),
        Message::sender(MSG_STASH_MASKS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: two_party!(receiver::receive, sender::send),
};

/// The bytes of each message: (b, s, σ), κ' = 256 base OTs, t KK13 OTs per virtual bin in
/// calls of [`chunk_bins`] virtual bins, 2 sets of n2 bin masks (ℓ2) and s sets of n2 stash
/// masks (ℓ1), frames of 2^14 masks.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let p = Params::new(s.lambda, s.n_recv, s.n_send, s.sigma, true)?;
    let [base_s, base_r] = traffic::co15(kk13::code_len(ETA));
    let total = p.virtual_bins();
    let u: u64 = (0..total)
        .step_by(p.chunk)
        .map(|lo| traffic::kk13_u_columns(((lo + p.chunk).min(total) - lo) * p.blocks, ETA))
        .sum();
    Ok(vec![
        (MSG_SETUP, msg_bytes(&Setup::of(&p))?),
        base_s,
        base_r,
        (kk13::MSG_U_COLUMNS, u),
        (
            MSG_BIN_MASKS,
            2 * framed_bytes(s.n_send, p.bin_mask_len, CHUNK),
        ),
        (
            MSG_STASH_MASKS,
            STASH as u64 * framed_bytes(s.n_send, p.stash_mask_len, CHUNK),
        ),
    ])
}

/// η: bits per block of a short value, i.e. 1-out-of-2^η OT (PSZ App. C.3 choose η = 8).
pub const ETA: u32 = 8;

/// Hash functions of the Cuckoo table (PSZ §6.1).
pub const HASHES: usize = 2;

/// Stash slots s (PSZ §7, App. E).
pub const STASH: usize = PSZ_STASH;

/// KK13 OTs per call and frame of u columns.
const OT_CHUNK: usize = blindjoin_ot::ext::CHUNK;

/// Virtual bins hashed per rayon task.
const PAR_BATCH: usize = 1024;

/// Name of the receiver's table parameters (b, s, σ).
pub const MSG_SETUP: &str = "the receiver's table parameters";
/// Name of the sender's two sets of bin masks.
pub const MSG_BIN_MASKS: &str = "the sender's bin masks";
/// Name of the sender's s sets of stash masks.
pub const MSG_STASH_MASKS: &str = "the sender's stash masks";

/// Domain-hash tweak of the stash (bins use the hash-function index j ∈ {0, 1}).
pub(crate) const STASH_TWEAK: u8 = 2;

/// σ in bits: λ + ⌈log2((s+2)·n2)⌉ for a sender with n2 items and a stash of s slots (see the
/// module doc: at most (s+2)·n2 pairs of a receiver item and a different sender item ever meet in
/// one OT instance).
pub fn sigma_bits(lambda: u32, n2: u64, stash: usize) -> u32 {
    lambda + ceil_log2((stash as u128 + 2) * u128::from(n2))
}

/// t = ⌈σ/η⌉: OTs (blocks of η bits) per bin and per stash slot.
pub fn ot_blocks(sigma: u32) -> usize {
    sigma.div_ceil(ETA) as usize
}

/// ℓ1 in bits, the stash masks': λ + ⌈log2 n2⌉ (PSZ §6.2, one item against n2).
pub fn stash_mask_bits(lambda: u32, n2: u64) -> u32 {
    lambda + ceil_log2(u128::from(n2))
}

/// Virtual bins per KK13 call for t blocks per bin: ⌊2^16/t⌋ rounded down to a multiple of 128,
/// so that each call is one frame of u columns with no padding row block except in the last.
pub fn chunk_bins(blocks: usize) -> usize {
    ((OT_CHUNK / blocks.max(1)) / 128 * 128).max(128)
}

/// Everything both parties derive from (λ, n1, n2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    /// b, the receiver's Cuckoo bins.
    pub bins: usize,
    /// σ in bits.
    pub sigma: u32,
    /// t = ⌈σ/η⌉.
    pub blocks: usize,
    /// ℓ2 in bytes.
    pub bin_mask_len: usize,
    /// ℓ1 in bytes.
    pub stash_mask_len: usize,
    /// Virtual bins per KK13 call.
    pub chunk: usize,
}

impl Params {
    /// `sigma`: the caller's σ ([`RunOptions::sigma`]), else [`sigma_bits`]; one below
    /// [`sigma_bits`] only with `allow_weak`.
    pub(crate) fn new(
        lambda: u32,
        n1: u64,
        n2: u64,
        sigma: Option<u32>,
        allow_weak: bool,
    ) -> Result<Self> {
        let n1 = set_size(n1)?;
        let bins = CuckooParams::psz(n1)?.num_bins();
        let derived = sigma_bits(lambda, n2, STASH);
        let sigma = sigma.unwrap_or(derived);
        let bad = |reason: String| {
            Err(Error::InvalidParam {
                field: "sigma",
                reason,
            })
        };
        if !(1..=128).contains(&sigma) {
            return bad(format!("σ = {sigma} bits; 1 to 128 are supported"));
        }
        if sigma < derived && !allow_weak {
            return bad(format!(
                "σ = {sigma} bits is below the {derived} bits that keep a false match through \
                 equal short values below 2^-λ; allow weak parameters (--allow-weak) to run \
                 anyway"
            ));
        }
        let blocks = ot_blocks(sigma);
        let bin_mask_len = tag_len(lambda, n1 as u64, n2)?;
        let stash_mask_len = stash_mask_bits(lambda, n2).div_ceil(8) as usize;
        check_tag_len(stash_mask_len)?;
        Ok(Params {
            bins,
            sigma,
            blocks,
            bin_mask_len,
            stash_mask_len,
            chunk: chunk_bins(blocks),
        })
    }

    /// Virtual bins: the b bins, then the s stash slots.
    pub(crate) fn virtual_bins(&self) -> usize {
        self.bins + STASH
    }

    /// The mask keeping the ηt bits of a short value.
    pub(crate) fn short_mask(&self) -> u128 {
        let bits = ETA as usize * self.blocks;
        if bits >= 128 {
            u128::MAX
        } else {
            (1u128 << bits) - 1
        }
    }
}

/// The handshake parameters: the rules both sides apply to the sizes.
pub(crate) fn params(base_ot: BaseOt, sigma: Option<u32>) -> Vec<(String, String)> {
    vec![
        ("ot".into(), "kk13".into()),
        ("eta".into(), ETA.to_string()),
        ("base_ot".into(), base_ot.name().into()),
        ("cuckoo".into(), format!("{HASHES}-hash/eps=0.2")),
        ("stash".into(), STASH.to_string()),
        (
            "sigma".into(),
            sigma.map_or_else(|| "lambda+ceil(log2((s+2)*n2))".into(), |s| s.to_string()),
        ),
        (
            "mask".into(),
            "tccr(xor)/l2=lambda+ceil(log2(n1*n2))/l1=lambda+ceil(log2(n2))".into(),
        ),
    ]
}

/// The receiver's message after the handshake.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Setup {
    /// Bins of the Cuckoo table.
    pub bins: u64,
    /// Stash slots.
    pub stash: u32,
    /// σ in bits.
    pub sigma: u32,
}

impl Setup {
    pub(crate) fn of(p: &Params) -> Self {
        Setup {
            bins: p.bins as u64,
            stash: STASH as u32,
            sigma: p.sigma,
        }
    }

    /// `Err(ParamMismatch)` naming the first field that differs from `ours`.
    pub(crate) fn check(&self, ours: &Setup) -> Result<()> {
        expect_same(&[
            ("bins", ours.bins, self.bins),
            ("stash", u64::from(ours.stash), u64::from(self.stash)),
            ("sigma", u64::from(ours.sigma), u64::from(self.sigma)),
        ])
    }
}

/// The seed of the bin hash functions h_0, h_1 of a session (both parties derive it from the
/// session id, after both sets are fixed). Public so that tests can build sets with chosen bin
/// collisions for a session whose id they know.
pub fn bin_seed(session: &Session) -> Block {
    session.block("psz14/bins")
}

/// π of the domain hash D_τ.
pub(crate) fn domain_aes(session: &Session) -> FixedKeyAes {
    FixedKeyAes::new(session.block("psz14/domain"))
}

/// π of the mask hash H.
pub(crate) fn mask_aes(session: &Session) -> FixedKeyAes {
    FixedKeyAes::new(session.block("psz14/mask"))
}

/// The short values D_τ(x) of `items` under one tweak τ, keeping the low `mask` bits; in
/// parallel for large inputs.
pub(crate) fn short_values(
    aes: &FixedKeyAes,
    tweak: u8,
    items: &[Block],
    mask: u128,
) -> Vec<Block> {
    let mut out = items.to_vec();
    out.par_chunks_mut(PAR_BATCH * 16).for_each(|c| {
        aes.tccr_hash_with(c, |_| u128::from(tweak));
        for v in c.iter_mut() {
            v.0 &= mask;
        }
    });
    out
}

/// Block i (η = 8 bits) of a short value: the OT choice.
#[inline]
pub(crate) fn block_of(short: Block, i: usize) -> u32 {
    ((short.0 >> (8 * i)) & 0xff) as u32
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// PSZ App. A: bits d so that n random items collide with probability p ≈ n²/2^(d+1):
    /// d = 2·log2 n − 1 − log2 p, rounded up.
    fn app_a_bits(n: f64, log2_p: f64) -> u32 {
        (2.0 * n.log2() - 1.0 - log2_p).ceil() as u32
    }

    #[test]
    fn sigma_values() {
        // App. A's examples: n = 90, p = 2^-20 → 32 bits; p = 2^-40 → 52; n = 10^6: 59 and 79.
        assert_eq!(app_a_bits(90.0, -20.0), 32);
        assert_eq!(app_a_bits(90.0, -40.0), 52);
        assert_eq!(app_a_bits(1e6, -20.0), 59);
        assert_eq!(app_a_bits(1e6, -40.0), 79);
        // App. A for all n1 + n2 = 2^21 items at λ = 40: 81 bits, 11 blocks of 8.
        assert_eq!(app_a_bits(f64::from(1u32 << 21), -40.0), 81);
        // Ours: λ + ⌈log2(6·n2)⌉.
        assert_eq!(sigma_bits(40, 1 << 20, 4), 40 + 23);
        assert_eq!(ot_blocks(sigma_bits(40, 1 << 20, 4)), 8);
        assert_eq!(sigma_bits(40, 1 << 16, 4), 59);
        assert_eq!(sigma_bits(40, 1000, 4), 40 + 13);
        assert_eq!(sigma_bits(40, 1, 4), 43);
        assert_eq!(sigma_bits(40, 0, 4), 40);
        assert_eq!(ot_blocks(40), 5);
        assert_eq!(ot_blocks(41), 6);
        // The largest sizes the handshake admits still fit 16 blocks.
        assert!(ot_blocks(sigma_bits(80, 1 << 32, 4)) <= 16);
        // Masks: ℓ2 = λ + ⌈log2(n1·n2)⌉, ℓ1 = λ + ⌈log2 n2⌉.
        let p = Params::new(40, 1 << 20, 1 << 20, None, false).unwrap();
        assert_eq!(
            (p.bins, p.sigma, p.blocks, p.bin_mask_len, p.stash_mask_len),
            (2_516_583, 63, 8, 10, 8)
        );
        assert_eq!(p.chunk, 8192);
        assert_eq!(p.short_mask(), u128::from(u64::MAX));
        // A caller's σ: PSZ14's 32 only with allow_weak; above the formula freely.
        let p = Params::new(40, 1 << 16, 1 << 16, Some(32), true).unwrap();
        assert_eq!(
            (p.sigma, p.blocks, p.short_mask()),
            (32, 4, u128::from(u32::MAX))
        );
        assert!(Params::new(40, 1 << 16, 1 << 16, Some(32), false).is_err());
        assert_eq!(
            Params::new(40, 1 << 16, 1 << 16, Some(64), false)
                .unwrap()
                .blocks,
            8
        );
        assert!(Params::new(40, 1 << 16, 1 << 16, Some(129), true).is_err());
        let p = Params::new(40, 10, 1000, None, false).unwrap();
        assert_eq!(
            (p.bins, p.sigma, p.blocks, p.bin_mask_len, p.stash_mask_len),
            (24, 53, 7, 7, 7)
        );
        assert_eq!(stash_mask_bits(40, 1 << 18), 58);
        assert_eq!(chunk_bins(7), 9344);
        assert_eq!(chunk_bins(15), 4352);
    }

    #[test]
    fn setup_mismatch_names_the_field() {
        let p = Params::new(40, 100, 200, None, false).unwrap();
        let ours = Setup::of(&p);
        assert!(ours.check(&Setup::of(&p)).is_ok());
        for (peer, field) in [
            (
                Setup {
                    bins: ours.bins + 1,
                    ..Setup::of(&p)
                },
                "bins",
            ),
            (
                Setup {
                    stash: 3,
                    ..Setup::of(&p)
                },
                "stash",
            ),
            (
                Setup {
                    sigma: 64,
                    ..Setup::of(&p)
                },
                "sigma",
            ),
        ] {
            match peer.check(&ours) {
                Err(Error::ParamMismatch { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn short_values_are_masked_tweaked_hashes() {
        let aes = FixedKeyAes::new(Block(77));
        let xs: Vec<Block> = (0..700u128)
            .map(|i| Block(i * 0x9e37_79b9_7f4a_7c15 + 3))
            .collect();
        // Short values: distinct tweaks give unrelated values, the mask keeps the low bits.
        let s0 = short_values(&aes, 0, &xs, u128::from(u64::MAX));
        let s1 = short_values(&aes, 1, &xs, u128::from(u64::MAX));
        assert!(s0.iter().zip(&s1).all(|(x, y)| x != y && x.0 >> 64 == 0));
        assert_eq!(block_of(Block(0xab_cd), 0), 0xcd);
        assert_eq!(block_of(Block(0xab_cd), 1), 0xab);
    }
}
