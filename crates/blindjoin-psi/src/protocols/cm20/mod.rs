//! `cm20`: PSI from the Chase-Miao multi-point OPRF, semi-honest.
//!
//! **Paper.** Chase, Miao, *Private Set Intersection in the Internet Setting From Lightweight
//! Oblivious PRF* (CRYPTO 2020): the PSI protocol of §3.1, Fig. 3, with its step 2 by random OT
//! as in Fig. 4; parameters m, w, ℓ1, ℓ2 as in §3.3 and §4.1 (Table 1); F, H1, H2 as in §4.2.
//!
//! **Roles.** Our *receiver* (learns the intersection) is CM20's P2: it holds Y, builds the
//! matrix D and is the sender of the w random OTs. Our *sender* is P1: it holds X, chooses
//! s ∈ {0,1}^w as its OT choice bits and sends the OPRF values ψ = H2(…). Below n_R = |Y| is
//! the receiver's set size (the paper's n2) and n_S = |X| the sender's (the paper's n1; note
//! that the rest of this crate calls the receiver's size n1).
//!
//! **Security model.** Semi-honest sender and receiver (Thm. 3.1), with CO15 base OTs
//! (semi-honest, CDH, random-oracle key derivation: `blindjoin_ot::base`), F a PRF (AES), H1 a
//! collision-resistant hash and H2 a d-Hamming correlation robust hash (both SHA-256, modelled
//! as random oracles). The sender learns n_R, the receiver n_S and the intersection. CM20 also
//! prove security against a *malicious P1* (Thm. 3.2) if the OT is secure against a malicious
//! OT receiver and H1, H2 are random oracles, with ℓ2 = σ + log2(Q2·n2) for Q2 queries to H2.
//! This implementation does **not** claim it: CO15 as used here is only semi-honest (see the
//! base-OT module and its `AUDIT.md`: no uniform-output guarantee against a malicious OT
//! receiver, which is exactly the party Thm. 3.2 lets cheat), the tags are the semi-honest
//! ℓ2 = λ + ⌈log2(n_R·n_S)⌉ bits, and the receiver does not check that the sender's values
//! are distinct or even well formed. A tampered Δ column or tag therefore goes undetected: the
//! run ends with a subset of the true intersection (a wrong tag matches an own tag only with
//! probability 2^-ℓ2 per pair), never a panic.
//!
//! **Message flow** (`sid` the session id, `q = ⌊128/L⌋`, t = ⌈w/q⌉, see *Parameters*):
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict                     (handshake: n_R, n_S, κ, λ and the rules below)
//! R → S: Setup { m, w, ℓ2 }                            (S recomputes them; a difference names the field)
//! w random OTs, CO15, R = OT sender, S = OT receiver with choice bits s:
//!   R → S: base-OT point S;  S → R: w points R_j      R gets (k_j^0, k_j^1), S gets k_j^{s_j}
//! R → S: PRF key k (16 bytes, random)                  (right after the base OTs, as in §4.2)
//! R: for every y ∈ Y, v = F_k(H1(y)) ∈ [m]^w; D_j = 1^m with D_j[v_j] = 0 (Fig. 3, step 1c)
//!    A_j = r_j^0 = G(k_j^0), B_j = A_j ⊕ D_j, Δ_j = B_j ⊕ r_j^1 with r_j^1 = G(k_j^1) (Fig. 4)
//! R → S: Δ_1 … Δ_w                                    (m/8 bytes each, streamed per column block)
//! S: C_j = G(k_j^{s_j}) ⊕ s_j·Δ_j  (= A_j if s_j = 0, B_j if s_j = 1)
//! S → R: ψ(x) = H2(C_1[v_1] ‖ … ‖ C_w[v_w]) for every x ∈ X, v = F_k(H1(x)), in random order
//! R: output the indices of the y with H2(A_1[v_1] ‖ … ‖ A_w[v_w]) among the ψ
//! ```
//!
//! G is AES-128 in counter mode (`blindjoin_core::prg::AesPrg`) keyed by the base-OT key. For
//! y ∈ Y every D_j[v_j(y)] is 0, so C and A agree on y's row; for x ∉ Y at least d of the
//! D_j[v_j(x)] are 1 (except with probability 2^-λ, by the choice of w), so x's row differs
//! from A's in at least d positions chosen by the secret s.
//!
//! **Primitives** (§4.2).
//! - H1(x) = SHA-256(D1 ‖ x), 256 bits = ℓ1 (§4.1), D1 one 64-byte block binding the label
//!   `blindjoin/psi/cm20/h1` and `sid` (`blindjoin_core::prefix_hash::PrefixHash`).
//! - F_k(x0‖x1) = G_{k_1}(z) ‖ … ‖ G_{k_t}(z) with z = G_{k_0}(x0) ⊕ x1, G = AES-128 and
//!   k_0‖…‖k_t = AES-CTR(k): the paper's parallel construction (App. A). Every output block
//!   G_{k_b}(z) carries q indices of L bits, index i of block b at bits [i·L, (i+1)·L); column
//!   j uses block 1 + ⌊j/q⌋, index j mod q.
//! - H2(row) = SHA-256(D2 ‖ row) truncated to ℓ2 bits (whole bytes), row the w bits as ⌈w/8⌉
//!   bytes (bit j = bit j mod 8 of byte ⌊j/8⌋, the rest of the last byte 0) and D2 binding
//!   `blindjoin/psi/cm20/h2`, `sid` and w. The paper uses BLAKE2 for H1 and H2; SHA-256 is the
//!   hash of this workspace (SHA-NI, two lanes at a time with `blindjoin_core::sha256x`). The
//!   fixed-key AES hashes of `blindjoin_core::aes` are not used: they are correlation robust for
//!   128-bit inputs under one Δ, not d-Hamming correlation robust for w-bit rows, and they are
//!   not collision resistant.
//!
//! **Parameters.**
//! - m = 2^L rows with L = max(⌈log2 n_R⌉, 7): the receiver's set size rounded up to a power
//!   of two. §3.3 fixes m first and derives w from p = (1 − 1/m)^{n2}, where n2 is P2's (our
//!   receiver's) set size: m follows the receiver's set, the sender's size enters w only through
//!   the union bound. §4.1 takes m = n1 = n2 = n; at the powers of two of Table 1 ours is the
//!   same m.
//! - w: the least w ≥ d with n_S · Σ_{k<d} C(w,k) p^k (1−p)^{w−k} ≤ 2^-λ (§3.3), d = κ and
//!   σ = λ (§4.1: d = 128, σ = 40). This gives Table 1 exactly: 609, 615, 621, 627, 633 for
//!   n = m = 2^16…2^24, and 717, 571, 349 for m = 0.9n, 1.1n, 2n at n = 2^24 (unit test). At
//!   κ = 80 (PSZ14 Tab. 2's short-term level; CM20 fix d = 128 only) the same rule gives 436,
//!   446 and 457 columns at 2^16, 2^20 and 2^24. κ = 192 and 256 are refused: the base OTs
//!   (Ristretto255), F's AES and the PRGs give 128 bits.
//! - ℓ1 = 256 (§4.1); ℓ2 = λ + ⌈log2(n_R·n_S)⌉ bits, sent as ⌈ℓ2/8⌉ bytes
//!   (`params::tag_bytes`; §3.3's semi-honest σ + log(n1·n2)).
//!
//! The handshake carries the rules (d, L's floor, the w bound, ℓ1, the ℓ2 rule, F, H1, H2, the
//! base OT), which are all either side knows before it learns the peer's size; the concrete m,
//! w and ℓ2 depend on both sizes, so the receiver sends them in `Setup` and the sender compares
//! them with its own (`Error::ParamMismatch` naming `m`, `w` or `tag_bits`).
//!
//! **Communication** (bytes, 4 bytes of framing per frame): receiver → sender: Setup, 32 (S),
//! 16 (k), w·m/8 (Δ, frames of min(m/8, 2^20) bytes); sender → receiver: 32·w (the R_j, frames
//! of 1024 points) and n_S·⌈ℓ2/8⌉ (tags, frames of 2^14); plus the handshake. At n = 2^20:
//! 621·2^17 + 10·2^20 = 91.9 MB, CM20 Table 2's 87.6 "MB" (MiB).
//!
//! **Implementation.** Neither party stores the m × w matrix. Both evaluate F's first step
//! (H1, G_{k_0}) once per item and keep z (16 bytes per item). The columns are then processed
//! a few at a time (`matrix`: a *span* of columns whose state fits the L2 cache, within one AES
//! block of F and one 128-column slab: 3 receiver or 6 sender columns at m = 2^20), items in
//! chunks of 2048: one AES call per item gives the span's indices, and per column and item one
//! random access. The receiver expands A_j, sets D_j's bit to 0 at v_j(y) and reads A_j[v_j(y)]
//! in the same cache line (A_j and D_j interleaved by 64-bit words), then sends Δ_j; the
//! sender, as each block of Δ columns arrives (a second thread drains the channel into a queue
//! of at most 8 MiB, `protocols::common::pipelined`), forms C_j and reads C_j[v_j(x)]. The next chunk's z is prefetched while a chunk is processed (z is
//! read once per span). The bits read go into a 128 × n bit slab per 128 columns, transposed
//! (`blindjoin_core::transpose`) into per-item rows when the slab is complete; H2 runs over the
//! rows at the end, and the receiver matches the sender's values with a partitioned hash join
//! (`join`). Memory is O(n·w) bits for the rows plus the columns of a few spans. The spans of a
//! batch run in parallel on the rayon pool; the results do not depend on the thread count.
//!
//! m follows the receiver's announced size, so the sender allocates a span's columns only once
//! the span's Δ frames have arrived: a receiver that announces a large set and sends no Δ costs
//! it nothing. It runs at most as many spans at once as `RunOptions::memory_budget` leaves room
//! for (each span's columns twice, with their Δ frames), and refuses a run whose single span
//! exceeds the budget before the base OTs, with `InvalidParam` naming `memory_budget`.
//!
//! The sender's choice bits s are secret: it applies Δ_j to every column under a mask derived
//! from s_j (no branch or memory access depends on s), and s, the base-OT keys and the
//! columns are wiped when dropped.
//!
//! The cost is one random access per (item, column) on each side, n·w ≈ 6.5·10^8 at
//! n = 2^20, which bounds the running time: at m = 2^20 a column does not fit the L1 cache, and
//! the receiver's access is a read-modify-write.
//!
//! **Deviations from the paper.**
//! 1. m is a power of two (see *Parameters*), so each index is an exact L-bit field of F's
//!    output: the paper leaves the parse of F's output into \[m\] open, and for any other m a
//!    reduction modulo m would bias the indices.
//! 2. F's output is parsed per AES block (q = ⌊128/L⌋ indices per block, 128 − q·L bits
//!    unused): t = ⌈w/q⌉ blocks instead of ⌈w·L/128⌉ (104 instead of 98 at L = 20), so each
//!    column block needs one AES call per item. F is the same PRF; only the choice of its output
//!    bits differs.
//! 3. The random OTs of Fig. 4 are CO15 base OTs on 128-bit keys expanded by AES-CTR, exactly
//!    as in the paper's implementation (which uses Naor-Pinkas base OTs); CO15 gives one flight
//!    per direction.
//! 4. The receiver sends m, w and ℓ2 explicitly (see above), and the sender sends its values in
//!    a random order (Fig. 3 sends the set Ψ; an order would tie each value to the sender's
//!    input order).
//! 5. The one-sided malicious security of Thm. 3.2 is not claimed (see *Security model*).

mod join;
mod matrix;
mod receiver;
mod sender;

pub use receiver::receive;
pub(crate) use receiver::receive_as;
pub use sender::send;
pub(crate) use sender::send_as;

use crate::params::{ceil_log2, tag_bits};
use crate::protocol::{
    Message, Protocol, Reference, Security, Sizes, Traffic, two_party,
};
use crate::BaseOt;
use crate::protocols::common::{CHUNK, CM20, PSI_ROLES, tag_len};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes, msg_bytes};
use blindjoin_ot::{base, traffic};
use blindjoin_core::handshake::expect_same;
use blindjoin_core::item::Item;
use blindjoin_core::prefix_hash::PrefixHash;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use zeroize::Zeroize;

/// Protocol id in the handshake.
pub const NAME: &str = "cm20";

/// The descriptor of `cm20`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "multi-point-OPRF PSI: an m × w matrix of random-OT columns, one AES PRF per item",
    references: &[Reference {
        part: "§3 Fig. 3 with Fig. 4, §3.3 Table 1, §4.2",
        ..CM20
    }],
    security: Security::SemiHonest,
    assumptions: "Chou-Orlandi base OTs (CDH), AES as a PRF, random-oracle hashes; CM20's one-sided malicious variant is not claimed",
    roles: PSI_ROLES,
    kappa: &[80, 128],
    params: |o| params(o.kappa, o.base_ot, Model::SemiHonest),
    // hello ‖ hello; verdict ‖ verdict; setup + base-OT S; base-OT R_j; PRF key + Δ columns;
    // OPRF values.
    flights: 6,
    flow: &[
        Message::receiver(MSG_SETUP),
        Message::receiver(base::MSG_SENDER_POINT),
        Message::sender(base::MSG_RECEIVER_POINTS),
        Message::receiver(MSG_KEY),
        Message::receiver(MSG_DELTA),
        Message::sender(MSG_TAGS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic: |s| traffic(s, Model::SemiHonest),
    queries: crate::protocol::announced,
    entry: two_party!(receiver::receive, sender::send),
};

/// The security model a run of the CM20 protocol follows: the same message flow with the
/// semi-honest parameters and base OT (`cm20`), or with those of Thm. 3.2 (`cm20_mal`: ℓ2 for
/// Q2 = 2^64 random-oracle queries and base OTs secure against a malicious OT receiver).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Model {
    /// Thm. 3.1: semi-honest sender and receiver.
    SemiHonest,
    /// Thm. 3.2: a malicious sender (P1), a semi-honest receiver.
    MaliciousSender,
}

impl Model {
    /// The descriptor of the protocol this model is run as.
    pub(crate) fn protocol(self) -> &'static Protocol {
        match self {
            Model::SemiHonest => &PROTOCOL,
            Model::MaliciousSender => &crate::protocols::cm20_mal::PROTOCOL,
        }
    }
}

/// log2 of CM20 §4.1's Q2: the queries to H2 a malicious sender is assumed to make at most.
pub const LOG_Q2: u32 = 64;

/// ℓ2 in bits: σ + log2(n1·n2) for semi-honest parties (§3.3), σ + log2(Q2·n2) against a
/// malicious sender (§3.3, §4.1: Q2 = 2^64), with n2 = n_R the receiver's size (CM20's P2)
/// and σ = λ.
pub(crate) fn tag_bits_for(model: Model, lambda: u32, n_recv: u64, n_send: u64) -> u32 {
    match model {
        Model::SemiHonest => tag_bits(lambda, n_recv, n_send),
        Model::MaliciousSender => lambda + LOG_Q2 + ceil_log2(u128::from(n_recv)),
    }
}

/// The bytes of each message: (m, w, ℓ2), w base OTs, the PRF key, w Δ columns of m/8 bytes
/// (frames of at most [`DELTA_FRAME`]) and n_S OPRF values of ℓ2 bits (frames of 2^14).
pub(crate) fn traffic(s: &Sizes, model: Model) -> Result<Traffic> {
    let p = Params::with_model(model, s.kappa, s.lambda, s.n_recv, s.n_send)?;
    let [base_s, base_r] = match model {
        Model::SemiHonest => traffic::co15(p.w),
        Model::MaliciousSender => traffic::endemic(p.w),
    };
    let delta = (p.w * p.frames_per_column() * (p.frame_len() + FRAME_HEADER_LEN)) as u64;
    Ok(vec![
        (MSG_SETUP, msg_bytes(&p.setup())?),
        base_s,
        base_r,
        (MSG_KEY, msg_bytes(&PrfKey { key: [0; 16] })?),
        (MSG_DELTA, delta),
        (MSG_TAGS, framed_bytes(s.n_send, p.tag_len, CHUNK)),
    ])
}

/// The floor of L = log2 m: at least 128 rows (one block per column).
pub const LOG_M_MIN: u32 = 7;

/// The ceiling of L: row indices are 32-bit (n_R ≤ 2^32, the handshake's default bound).
pub const LOG_M_MAX: u32 = 32;

/// The largest width [`width`] searches; no admissible size comes near it (w ≤ 1000 for every
/// n_R ≤ m, n_S ≤ 2^64 at λ ≤ 80).
const W_MAX: u32 = 1 << 14;

/// Bytes per Δ frame at most (2^20: one column at m = 2^23).
pub(crate) const DELTA_FRAME: usize = 1 << 20;

/// Label of H1 (with the session id).
pub(crate) const H1_LABEL: &str = "blindjoin/psi/cm20/h1";

/// Label of H2 (with the session id and w).
pub(crate) const H2_LABEL: &str = "blindjoin/psi/cm20/h2";

/// H1 of a session: SHA-256 of a 16-byte item behind the one-block prefix of [`H1_LABEL`].
pub(crate) fn h1(sid: &[u8; 32]) -> PrefixHash {
    PrefixHash::new(H1_LABEL, sid, 16, 16)
}

/// Name of the receiver's `Setup` (m, w, ℓ2).
pub const MSG_SETUP: &str = "the receiver's parameters (m, w, ℓ2)";
/// Name of the receiver's PRF key k.
pub const MSG_KEY: &str = "the receiver's PRF key";
/// Name of the receiver's Δ columns.
pub const MSG_DELTA: &str = "the receiver's Δ columns";
/// Name of the sender's OPRF values ψ.
pub const MSG_TAGS: &str = "the sender's OPRF values";

/// The handshake parameters: the rules from which both sides derive m, w and ℓ2.
pub(crate) fn params(kappa: u32, base_ot: BaseOt, model: Model) -> Vec<(String, String)> {
    let (l2, base_ot) = match model {
        Model::SemiHonest => ("lambda+ceil(log2(n_R*n_S)) bits, whole bytes", base_ot.name()),
        Model::MaliciousSender => (
            "lambda+64+ceil(log2 n_R) bits (Q2 = 2^64), whole bytes",
            base_ot.malicious_name(),
        ),
    };
    vec![
        ("oprf".into(), "cm20-fig3-fig4".into()),
        ("d".into(), kappa.to_string()),
        (
            "m".into(),
            format!("2^max(ceil(log2 n_R),{LOG_M_MIN}) rows, <= 2^{LOG_M_MAX}"),
        ),
        ("w".into(), "least w: n_S*P[Bin(w,p)<d] <= 2^-lambda".into()),
        ("l1".into(), "256 (sha256)".into()),
        ("l2".into(), l2.into()),
        (
            "prf".into(),
            "aes128: G_k0(x0)^x1 then G_kb, k=aes-ctr(k); floor(128/L) L-bit indices per block"
                .into(),
        ),
        ("h1".into(), "sha256".into()),
        ("h2".into(), "sha256".into()),
        ("base_ot".into(), base_ot.into()),
        ("delta_frame".into(), DELTA_FRAME.to_string()),
    ]
}

/// The receiver's first message after the handshake: the parameters it derived.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Setup {
    /// Rows m of the matrix.
    pub m: u64,
    /// Columns w of the matrix (random OTs).
    pub w: u64,
    /// Bits ℓ2 of the OPRF values.
    pub tag_bits: u32,
}

/// The PRF key k, sent by the receiver after the base OTs.
#[derive(Serialize, Deserialize)]
pub(crate) struct PrfKey {
    /// The 16 key bytes.
    pub key: [u8; 16],
}

impl Drop for PrfKey {
    fn drop(&mut self) {
        self.key.zeroize();
    }
}

/// The least w ≥ d such that `n_send · P[Bin(w, p) < d] ≤ 2^-sigma`, p = (1 − 1/m)^n_recv
/// (CM20 §3.3): every item of the sender outside the receiver's set meets at least d ones of D,
/// except with probability 2^-σ. `n_send = 0` counts as 1. `None` if no w up to 2^14 suffices
/// (only for m = 1 or absurd σ).
pub fn width(d: u32, sigma: u32, m: u64, n_recv: u64, n_send: u64) -> Option<u32> {
    if m == 0 {
        return None;
    }
    // ln p = n_recv · ln(1 − 1/m), ln(1 − p).
    let ln_p = n_recv as f64 * (-1.0 / m as f64).ln_1p();
    let p = ln_p.exp();
    if p <= 0.0 {
        // Every row index of D is hit: no 1 is left to meet.
        return None;
    }
    let ln_q = (-p).ln_1p();
    let target = -f64::from(sigma) * std::f64::consts::LN_2 - (n_send.max(1) as f64).ln();
    let mut terms = vec![0f64; d as usize];
    for w in d.max(1)..=W_MAX {
        let wf = f64::from(w);
        // ln of C(w,k) p^k (1−p)^(w−k) for k < d, summed in the log domain.
        let mut ln_c = 0f64;
        for (k, term) in terms.iter_mut().enumerate() {
            let kf = k as f64;
            if k > 0 {
                ln_c += (wf - kf + 1.0).ln() - kf.ln();
            }
            // (1 − p)^(w−k) with p = 1 is 0 (ln = −∞), which exp() maps to 0 below.
            *term = ln_c + kf * ln_p + (wf - kf) * ln_q;
        }
        let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if max == f64::NEG_INFINITY {
            return Some(w);
        }
        let ln_sum = max + terms.iter().map(|t| (t - max).exp()).sum::<f64>().ln();
        if ln_sum <= target {
            return Some(w);
        }
    }
    None
}

/// The parameters of one run, derived from κ, λ and both set sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    /// L = log2 m.
    pub log_m: u32,
    /// Rows m = 2^L.
    pub m: usize,
    /// Columns w.
    pub w: usize,
    /// Indices per AES block of F: q = ⌊128/L⌋.
    pub per_block: usize,
    /// AES blocks of F after the first: t = ⌈w/q⌉.
    pub prf_blocks: usize,
    /// ℓ2 in bits.
    pub tag_bits: u32,
    /// ℓ2 in whole bytes.
    pub tag_len: usize,
}

impl Params {
    /// The semi-honest parameters for `d` = κ, σ = λ, n_R = `n_recv`, n_S = `n_send`.
    #[cfg(test)]
    pub(crate) fn new(d: u32, lambda: u32, n_recv: u64, n_send: u64) -> Result<Params> {
        Params::with_model(Model::SemiHonest, d, lambda, n_recv, n_send)
    }

    /// The parameters of `model` for `d` = κ, σ = λ, n_R = `n_recv`, n_S = `n_send`: the same
    /// m and w in both models (§3.3: (1/2 + 1/(2m))^w ≤ 2^-λ holds for them), ℓ2 by
    /// [`tag_bits_for`].
    pub(crate) fn with_model(
        model: Model,
        d: u32,
        lambda: u32,
        n_recv: u64,
        n_send: u64,
    ) -> Result<Params> {
        let log_m = ceil_log2(u128::from(n_recv)).max(LOG_M_MIN);
        if log_m > LOG_M_MAX {
            return Err(Error::InvalidParam {
                field: "receiver set size",
                reason: format!("{n_recv} items; cm20 supports at most 2^{LOG_M_MAX}"),
            });
        }
        let m = 1usize
            .checked_shl(log_m)
            .ok_or_else(|| Error::InvalidParam {
                field: "receiver set size",
                reason: format!("2^{log_m} rows do not fit this machine"),
            })?;
        let w = width(d, lambda, m as u64, n_recv, n_send).ok_or_else(|| Error::InvalidParam {
            field: "w",
            reason: format!("no width up to {W_MAX} meets d = {d}, λ = {lambda} at m = {m}"),
        })? as usize;
        let tag_bits = tag_bits_for(model, lambda, n_recv, n_send);
        let tag_len = match model {
            Model::SemiHonest => tag_len(lambda, n_recv, n_send)?,
            Model::MaliciousSender if tag_bits <= 128 => tag_bits.div_ceil(8) as usize,
            Model::MaliciousSender => {
                return Err(Error::InvalidParam {
                    field: "receiver set size",
                    reason: format!(
                        "{n_recv} items need ℓ2 = λ + {LOG_Q2} + ⌈log2 n_R⌉ = {tag_bits} bits \
                         against a malicious sender; the OPRF values hold at most 128 (at most \
                         2^{} receiver items at λ = {lambda})",
                        128u32.saturating_sub(lambda + LOG_Q2)
                    ),
                });
            }
        };
        let per_block = (128 / log_m) as usize;
        Ok(Params {
            log_m,
            m,
            w,
            per_block,
            prf_blocks: w.div_ceil(per_block),
            tag_bits,
            tag_len,
        })
    }

    /// The message that announces these parameters.
    pub(crate) fn setup(&self) -> Setup {
        Setup {
            m: self.m as u64,
            w: self.w as u64,
            tag_bits: self.tag_bits,
        }
    }

    /// Checks the receiver's announced parameters against ours.
    pub(crate) fn check(&self, peer: &Setup) -> Result<()> {
        let ours = self.setup();
        expect_same(&[
            ("m", ours.m, peer.m),
            ("w", ours.w, peer.w),
            (
                "tag_bits",
                u64::from(ours.tag_bits),
                u64::from(peer.tag_bits),
            ),
        ])
    }

    /// Bytes of one column (m/8).
    pub(crate) fn column_bytes(&self) -> usize {
        self.m / 8
    }

    /// Bytes of one Δ frame: a column, or [`DELTA_FRAME`] if a column is longer (both powers of
    /// two, so a column is a whole number of frames).
    pub(crate) fn frame_len(&self) -> usize {
        self.column_bytes().min(DELTA_FRAME)
    }

    /// Δ frames per column.
    pub(crate) fn frames_per_column(&self) -> usize {
        self.column_bytes() / self.frame_len()
    }

    /// H2 of a session: SHA-256 of a row of [`row_bytes`](Self::row_bytes) bytes behind the
    /// one-block prefix of [`H2_LABEL`] (which binds the row length, hence w).
    pub(crate) fn h2(&self, sid: &[u8; 32]) -> PrefixHash {
        let len = self.row_bytes();
        PrefixHash::new(H2_LABEL, sid, len as u64, len)
    }

    /// Bytes of an H2 input: ⌈w/8⌉.
    pub(crate) fn row_bytes(&self) -> usize {
        self.w.div_ceil(8)
    }

    /// 128-column slabs of the row matrix: ⌈w/128⌉.
    pub(crate) fn slabs(&self) -> usize {
        self.w.div_ceil(128)
    }

    /// The AES block of F (0-based, after G_{k_0}) and the bit offset of column `j`'s index.
    #[inline]
    pub(crate) fn locate(&self, j: usize) -> (usize, u32) {
        (j / self.per_block, (j % self.per_block) as u32 * self.log_m)
    }
}

/// F of §4.2 under one key: G_{k_0} for the inputs, G_{k_1..k_t} for the output blocks.
pub(crate) struct Prf {
    first: FixedKeyAes,
    blocks: Vec<FixedKeyAes>,
}

/// Items per rayon task when hashing and encrypting inputs.
const PAR_ITEMS: usize = 1 << 12;

impl Prf {
    /// k_0‖…‖k_t = AES-CTR(k), t = `blocks`.
    pub(crate) fn new(key: &[u8; 16], blocks: usize) -> Prf {
        let mut keys = vec![Block::ZERO; blocks + 1];
        AesPrg::new(Block::from_bytes(*key)).fill_blocks(&mut keys);
        let prf = Prf {
            first: FixedKeyAes::new(keys[0]),
            blocks: keys[1..].iter().map(|k| FixedKeyAes::new(*k)).collect(),
        };
        keys.zeroize();
        prf
    }

    /// z = G_{k_0}(x0) ⊕ x1 with x0‖x1 = H1(item), for every item (in parallel).
    pub(crate) fn inputs(&self, h1: &PrefixHash, items: &[Item]) -> Vec<Block> {
        let mut z = vec![Block::ZERO; items.len()];
        z.par_chunks_mut(PAR_ITEMS)
            .zip(items.par_chunks(PAR_ITEMS))
            .for_each(|(z, items)| {
                let mut x1 = vec![Block::ZERO; items.len()];
                let mut scratch = h1.scratch();
                let mut put = |k: usize, d: &[u8; 32]| {
                    let mut lo = [0u8; 16];
                    let mut hi = [0u8; 16];
                    lo.copy_from_slice(&d[..16]);
                    hi.copy_from_slice(&d[16..]);
                    z[k] = Block::from_bytes(lo);
                    x1[k] = Block::from_bytes(hi);
                };
                let (pairs, rest) = items.as_chunks::<2>();
                for (p, [a, b]) in pairs.iter().enumerate() {
                    let [da, db] = h1.pair(&mut scratch, [&a.0, &b.0]);
                    put(2 * p, &da);
                    put(2 * p + 1, &db);
                }
                if let Some(a) = rest.first() {
                    let d = h1.one(&mut scratch, &a.0);
                    put(2 * pairs.len(), &d);
                }
                self.first.permute(z);
                for (z, x1) in z.iter_mut().zip(&x1) {
                    *z ^= *x1;
                }
            });
        z
    }

    /// `out[i]` = block `b` (0-based) of F's output on `z[i]`, i.e. G_{k_{b+1}}(z[i]) (equal
    /// lengths).
    #[inline]
    pub(crate) fn block_into(&self, b: usize, z: &[Block], out: &mut [Block]) {
        match self.blocks.get(b) {
            Some(g) => g.permute_b2b(z, out),
            None => out.copy_from_slice(z),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn width_reproduces_table_1() {
        // CM20 Table 1, d = 128, σ = 40, n1 = n2 = n: m = n at 2^16 … 2^24.
        for (log_n, want) in [(16, 609), (18, 615), (20, 621), (22, 627), (24, 633)] {
            let n = 1u64 << log_n;
            assert_eq!(width(128, 40, n, n, n), Some(want), "n = m = 2^{log_n}");
        }
        // n = 2^24 with m = 0.9n, 1.1n, 2n.
        let n = 1u64 << 24;
        for (m, want) in [(n * 9 / 10, 717), (n * 11 / 10, 571), (2 * n, 349)] {
            assert_eq!(width(128, 40, m, n, n), Some(want), "m = {m}");
        }
    }

    #[test]
    fn width_at_kappa_80() {
        // d = κ = 80 (PSZ14 Tab. 2's SYM column at 80-bit security), the rule of Table 1;
        // values from the same sum in 50-digit arithmetic (mpmath).
        for (log_n, want) in [(16, 436), (20, 446), (24, 457)] {
            let n = 1u64 << log_n;
            assert_eq!(width(80, 40, n, n, n), Some(want), "n = m = 2^{log_n}");
        }
        for kappa in PROTOCOL.kappa {
            let p = Params::new(*kappa, 40, 1 << 20, 1 << 20).unwrap();
            assert!(p.w >= *kappa as usize);
            assert!(params(*kappa, BaseOt::default(), Model::SemiHonest).contains(&("d".into(), kappa.to_string())));
        }
    }

    #[test]
    fn width_edge_cases() {
        // No receiver items: D is all ones, so w = d suffices.
        assert_eq!(width(128, 40, 128, 0, 1000), Some(128));
        // More sender items need (slightly) more columns; no sender items count as one.
        let a = width(128, 40, 1 << 20, 1 << 20, 1).unwrap();
        let b = width(128, 40, 1 << 20, 1 << 20, 1 << 30).unwrap();
        assert!(a < b && b < a + 100, "{a} {b}");
        assert_eq!(width(128, 40, 1 << 20, 1 << 20, 0), Some(a));
        // m = 1 with an item leaves no one in D.
        assert_eq!(width(128, 40, 1, 1, 1), None);
        assert_eq!(width(128, 40, 0, 1, 1), None);
    }

    #[test]
    fn params_follow_the_receivers_size() {
        let p = Params::new(128, 40, 1 << 20, 1 << 20).unwrap();
        assert_eq!((p.log_m, p.m, p.w), (20, 1 << 20, 621));
        assert_eq!((p.per_block, p.prf_blocks), (6, 104));
        assert_eq!((p.tag_bits, p.tag_len), (80, 10));
        assert_eq!(
            (p.column_bytes(), p.frame_len(), p.frames_per_column()),
            (1 << 17, 1 << 17, 1)
        );
        assert_eq!((p.row_bytes(), p.slabs()), (78, 5));
        assert_eq!(p.locate(0), (0, 0));
        assert_eq!(p.locate(5), (0, 100));
        assert_eq!(p.locate(6), (1, 0));
        // Just above a power of two: m doubles, w drops (Table 1's m = 2n row, smaller n).
        let q = Params::new(128, 40, (1 << 20) + 1, 1 << 20).unwrap();
        assert_eq!(q.m, 1 << 21);
        assert!(q.w < 400, "{}", q.w);
        // Small and empty sets use 128 rows.
        for n in [0, 1, 2, 100, 128] {
            assert_eq!(Params::new(128, 40, n, 5).unwrap().m, 128);
        }
        assert_eq!(Params::new(128, 40, 129, 5).unwrap().m, 256);
        assert_eq!(Params::new(128, 40, 0, 0).unwrap().w, 128);
        // Long columns span several frames.
        let big = Params::new(128, 40, 1 << 24, 1).unwrap();
        assert_eq!((big.frame_len(), big.frames_per_column()), (DELTA_FRAME, 2));
        assert!(Params::new(128, 40, (1 << 32) + 1, 1).is_err());
    }

    #[test]
    fn setup_mismatch_names_the_field() {
        let p = Params::new(128, 40, 1000, 2000).unwrap();
        assert!(p.check(&p.setup()).is_ok());
        for (s, field) in [
            (
                Setup {
                    m: 2048,
                    ..p.setup()
                },
                "m",
            ),
            (Setup { w: 1, ..p.setup() }, "w"),
            (
                Setup {
                    tag_bits: 1,
                    ..p.setup()
                },
                "tag_bits",
            ),
        ] {
            match p.check(&s) {
                Err(Error::ParamMismatch { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn prf_is_the_cbc_mac_then_per_block_keys() {
        let key = [7u8; 16];
        let prf = Prf::new(&key, 3);
        let mut ks = [Block::ZERO; 4];
        AesPrg::new(Block::from_bytes(key)).fill_blocks(&mut ks);
        let sid = [9u8; 32];
        let h1 = h1(&sid);
        let items: Vec<Item> = (0..5u8).map(|i| Item([i; 16])).collect();
        let z = prf.inputs(&h1, &items);
        for (item, z) in items.iter().zip(&z) {
            let d = h1.digest(&item.0);
            let (x0, x1) = (
                Block::from_slice(&d[..16]).unwrap(),
                Block::from_slice(&d[16..]).unwrap(),
            );
            let want = FixedKeyAes::new(ks[0]).permute_block(x0).0 ^ x1.0;
            assert_eq!(z.0, want);
            for b in 0..3 {
                let mut v = [Block::ZERO];
                prf.block_into(b, &[*z], &mut v);
                assert_eq!(v[0], FixedKeyAes::new(ks[b + 1]).permute_block(*z));
            }
        }
    }
}
