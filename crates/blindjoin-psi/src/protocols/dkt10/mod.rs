//! `dkt10`: De Cristofaro-Kim-Tsudik's Diffie-Hellman PSI with zero-knowledge proofs, secure
//! against a malicious receiver and a malicious sender in the random-oracle model, on
//! Ristretto255.
//!
//! **Paper.** De Cristofaro, Kim, Tsudik, *Linear-Complexity Private Set Intersection Protocols
//! Secure in Malicious Model* (ASIACRYPT 2010, "DKT10"): the protocol in the random-oracle model
//! under the one-more-gap-Diffie-Hellman assumption, whose proofs are Fiat-Shamir sigma
//! protocols. It is the public-key malicious baseline of Rindal and Rosulek, *Malicious-Secure
//! Private Set Intersection via Dual Execution* (CCS 2017, "RR17", §7, Fig. 6-8: "two rounds of
//! communication over which 5n exponentiations and 2n zero knowledge proofs are performed",
//! Curve25519, the comb method for fixed bases, streamed; Fig. 8: 6nφ + 6φ + nβ bits). DKT10's
//! own text is not in this project's copy of the papers: the flow below is the one RR17
//! measured, libPSI's `DktMPsiReceiver` (the client, our receiver) and `DktMPsiSender` (the
//! server, our sender), read, not copied, with the deviations listed at the end.
//!
//! **Security model.** Malicious receiver and malicious sender (either may deviate arbitrarily),
//! random-oracle model (H, the tag hash T and the two challenges), one-more-gap-DH in
//! Ristretto255 (κ = 128: a group of prime order ℓ ≈ 2^252, so every decoded point is in the
//! group). The receiver's proof π_R lets a simulator extract the receiver's items (from the
//! representation of each M_i and the receiver's queries to H); the sender's proof π_S forces
//! one key k for every answer, so its tags fix its set. The receiver learns the intersection and
//! n2; the sender learns n1. Either party may abort; a check that fails ends the run with
//! `Error::CheckFailed` naming it, a point or scalar that does not decode with
//! `Error::Malformed` naming its element.
//!
//! **Message flow** (after the handshake, which fixes n1 = |X| of the receiver, n2 = |Y| of the
//! sender and the session id `sid`):
//!
//! ```text
//! g, g', g''  = Elligator2(SHA-512("blindjoin/psi/dkt10/generator/" ‖ name)), names g, g1, g2:
//!               nobody knows the discrete log of one to another; ĝ = g' + g''
//! E(x)        = Ristretto255 from_uniform_bytes(u_0 ‖ u_1), u_b = SHA-256(sid, "dkt10/h2g", b, x)
//! H(x)        = 2·E(x)  (doubling is a bijection of a group of odd order)
//! T(K, x)     = SHA-256(sid, "dkt10/tag", enc(2·K), x), truncated to λ + ⌈log2(n1·n2)⌉ bits
//!               (whole bytes)
//!
//! receiver (X = {x_i})                                 sender (Y = {y_j}, key k ≠ 0, nonce d)
//!                                     <── Z ‖ A' ───── Z = g'·k, A' = g'·d
//!   PCH = Σ_i H(x_i); R_c, D random
//!   X = PCH + g·R_c, A = g·D          ── X ‖ A ─────>
//!   per item, R_i, D_i random:
//!   M_i = H(x_i) + g'·R_i
//!   N_i = (PCH − H(x_i)) + g''·R_i
//!   B_i = ĝ·D_i                       ── (M_i ‖ N_i ‖ B_i)_i ──>
//!                                                      per frame, as it arrives:
//!                                     <── (M'_i ‖ A'_i)_i ──  M'_i = k·M_i, A'_i = d·M_i
//!   e = SHA-512(sid, X ‖ A ‖ (M_i ‖ N_i ‖ B_i)_i) mod ℓ
//!   φ = D + e·R_c, φ_i = D_i + e·R_i  ── φ ‖ (φ_i)_i ──>
//!                                                      c = SHA-512(sid, e's digest, h_S) mod ℓ,
//!                                                      h_S = SHA-512(sid, Z ‖ A' ‖ (M'_i‖A'_i)_i)
//!                                     <── s ────────── s = d + c·k
//!                                                      check π_R (below), else CheckFailed
//!                                     <── tags ─────── T(k·H(y), y), y ∈ Y in a random order
//!   check Z ≠ 0 and π_S, else CheckFailed
//!   K_i = M'_i − Z·R_i = k·H(x_i); output { i : T(K_i, x_i) is among the tags }
//! ```
//!
//! π_R: g·φ − ĝ·φ_i = A − B_i + e·(X − M_i − N_i) for every i, a proof of knowledge of R_c and
//! the R_i with X − M_i − N_i = g·R_c − ĝ·R_i (DKT10's ZKPK{R_c, R_ci : X/(M_i·N_i) =
//! g^R_c/(g'·g'')^R_ci}). π_S: g'·s = A' + c·Z and M_i·s = A'_i + c·M'_i for every i, one proof
//! that the same k is the discrete log of Z to the base g' and of every M'_i to the base M_i.
//! The challenges hash the session id, the statement and the commitments. Each verifier checks
//! π's per-item equations as one random linear combination (`proof`): it draws weights w_i
//! uniform in [0, 2^128), never sent, adds up Σ w_i·B_i and Σ w_i·(M_i + N_i) (the sender) or
//! Σ w_i·M_i, Σ w_i·A'_i and Σ w_i·M'_i (the receiver) with variable-time multi-scalar
//! multiplications as the points arrive, and ends with a few scalar multiplications.
//!
//! **Computation.** The receiver per item: one hash to the group, three fixed-base
//! multiplications with its per-item exponents (g'·R_i, g''·R_i, and its commitment ĝ·D_i) on
//! curve25519-dalek's precomputed radix-16 tables (constant time; RR17's \[DKT10\] ran Miracl's
//! comb method), one on a table of Z (Z·R_i),
//! and a share of two batched checks. The sender per item: two multiplications of the receiver's
//! points M_i by one secret scalar each (k, and its commitment's d) and one of its own items'
//! E(y) by 4k, eight points at a time on the batch engine of `blindjoin_ristretto`, and a share
//! of one batched check. Without the proofs' commitments that is DKT10's 5n exponentiations
//! (three for the receiver, two for the sender); with them, 7n and two proofs of n statements
//! each. The receiver draws R_i = 2·r_i and D_i = 2·β_i and computes the halves E(x_i) + g'·r_i,
//! (PCH/2 − E(x_i)) + g''·r_i and ĝ·β_i, whose doubles it encodes with dalek's
//! `double_and_compress_batch` (one inversion per batch, no inverse square root per point); the
//! same for enc(2·K_i). Both parties stream in frames of 2^14 items while a second thread
//! receives (`protocols::common::pipelined`); within a frame the work is spread over rayon's pool
//! in pieces of 512 items (`PIECE`).
//!
//! **Communication** (`traffic`): the receiver sends 64 + 96·n1 + 32 + 32·n1 bytes (X ‖ A,
//! three points per item, φ, one scalar per item), the sender 64 + 64·n1 + 32 + n2·β/8 (Z ‖ A',
//! two points per item, s, one tag per item of β = 8·⌈(λ + ⌈log2(n1·n2)⌉)/8⌉ bits), plus 4 bytes
//! of framing per frame. With n1 = n2 = n that is exactly RR17 Fig. 8's 6nφ + 6φ + nβ bits for
//! φ = 256 (a compressed point or a scalar), plus 4·(4 + 4·⌈n/2^14⌉) bytes of frame headers: 0.82
//! MB at 2^12 and 13.2 MB at 2^16, where Fig. 8 reports 0.8 and 14 MB with φ = 283.
//!
//! **Deviations from DKT10 as libPSI implements it.**
//! - The generators g, g', g'' are hashed to the group under distinct labels. libPSI takes the
//!   curve's generator for g and points of fixed seeds for g', g''; its code sets g' twice and
//!   never g'' (`gg.randomize(OneBlock)` where `ggg` is meant), so ĝ = g' + g'' is not what the
//!   paper asks for.
//! - The challenges hash the session id, the statements and the commitments (X, A, every M_i,
//!   N_i, B_i; for c also e's digest, Z, A' and every M'_i, A'_i). libPSI hashes only the
//!   commitments (sigmaA and the sigmaB_i; sigma2A and the sigma2A_i), a "weak" Fiat-Shamir
//!   transform under which a prover can choose its statement after seeing the challenge.
//! - A failed proof ends the run. libPSI's sender prints "Bad sigma Proof" and goes on.
//! - Batch verification: each verifier checks one random combination of the n per-item
//!   equations of a proof instead of each equation, the small-exponent test of Bellare, Garay and
//!   Rabin (*Fast Batch Verification for Modular Exponentiation and Digital Signatures*,
//!   EUROCRYPT 1998). In a group of prime order, if some equation fails, a combination with
//!   weights uniform in [0, 2^128) that the prover does not know vanishes with probability at
//!   most 2^-128: a false proof passes with probability ≤ 2^-128 per check (the receiver's π_S
//!   adds its key equation g'·s = A' + c·Z, checked on its own).
//! - The sender answers each frame of M_i as it arrives and checks π_R before it sends its tags,
//!   not before its answers (DKT10's server checks π before it answers; libPSI streams its proof
//!   commitments M_i·d as frames arrive too). What it sends before the check
//!   (Z, A', M'_i, A'_i, s) depends only on k and d, which are independent of its set, so a
//!   receiver whose proof fails learns nothing about Y: the tags, the only message that depends
//!   on Y, come after the check.
//! - Message order: the sender's Z and A' come first, its answers interleaved with its
//!   commitments (M'_i ‖ A'_i), then s. libPSI sends sigma2A, the sigma2A_i per frame, Z with its
//!   response, then the M'_i. The bits are the same.
//! - The receiver checks Z ≠ 0 (a sender with k = 0 would answer every query with the identity).
//! - The tags are T(K, x) = SHA-256(sid, enc(2·K), x) truncated to λ + ⌈log2(n1·n2)⌉ bits.
//!   DKT10's and libPSI's H'(K, H(x), x) hash H(x) as well, a function of x, and libPSI keeps 128
//!   bits; enc(2·K) is an injective encoding of K, chosen so that both sides compute it cheaply
//!   (the receiver by a batch double-and-encode, the sender as (4k)·E(y) on the batch engine).
//! - H(x) = 2·E(x), E by Elligator 2 on 512 bits of SHA-256 output under the session id.
//!   libPSI seeds a point sampler with 128 bits of a hash of x.
//! - Ristretto255 instead of Curve25519 in Miracl (RR17 Fig. 8's φ = 283 is not Curve25519's
//!   256 bits): a prime-order group with canonical encodings, so a point from the peer either
//!   decodes into the group or is `Malformed`, and a scalar above ℓ is `Malformed`.

mod group;
mod proof;
mod receiver;
mod sender;

pub use group::{POINT_LEN, SCALAR_LEN};

use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{CHUNK, PSI_ROLES, tag_len};
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};
use blindjoin_core::{Error, Result};

/// Protocol id in the handshake.
pub const NAME: &str = "dkt10";

/// Name of the receiver's X ‖ A.
pub const MSG_RECEIVER_COMMIT: &str = "the receiver's X and proof commitment";
/// Name of the receiver's M_i ‖ N_i ‖ B_i, one element per item.
pub const MSG_RECEIVER_POINTS: &str = "the receiver's blinded items and proof commitments";
/// Name of the receiver's response φ.
pub const MSG_RECEIVER_RESPONSE: &str = "the receiver's proof response for X";
/// Name of the receiver's responses φ_i, one element per item.
pub const MSG_RECEIVER_RESPONSES: &str = "the receiver's proof responses";
/// Name of the sender's Z ‖ A'.
pub const MSG_SENDER_COMMIT: &str = "the sender's key commitment and proof commitment";
/// Name of the sender's M'_i ‖ A'_i, one element per item of the receiver.
pub const MSG_SENDER_POINTS: &str = "the sender's answers and proof commitments";
/// Name of the sender's response s.
pub const MSG_SENDER_RESPONSE: &str = "the sender's proof response";
/// Name of the sender's tags.
pub const MSG_TAGS: &str = "the sender's tags";

/// Bytes of one element of [`MSG_RECEIVER_POINTS`]: M_i ‖ N_i ‖ B_i.
pub const RECEIVER_ITEM_LEN: usize = 3 * POINT_LEN;
/// Bytes of one element of [`MSG_SENDER_POINTS`]: M'_i ‖ A'_i.
pub const SENDER_ITEM_LEN: usize = 2 * POINT_LEN;

/// Items per unit of parallel work: enough points that a multi-scalar multiplication runs
/// Pippenger's method and a batch encoding shares one inversion, few enough that rayon has
/// work to spread over a frame of 2^14.
pub(crate) const PIECE: usize = 512;

/// Per item and party, the multiplications of a point by a secret scalar that each role
/// performs (the batched checks' multi-scalar multiplications aside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cost {
    /// The receiver's: g'·R_i, g''·R_i and Z·R_i.
    pub receiver_exps: u32,
    /// The sender's: k·M_i and k·H(y_j).
    pub sender_exps: u32,
    /// The receiver's proof commitment per item, ĝ·D_i.
    pub receiver_proof_exps: u32,
    /// The sender's proof commitment per item, d·M_i.
    pub sender_proof_exps: u32,
    /// Proofs of n statements each: π_R and π_S.
    pub proofs: u32,
}

/// What each role computes per item (the module doc's "Computation").
pub const COST: Cost = Cost {
    receiver_exps: 3,
    sender_exps: 2,
    receiver_proof_exps: 1,
    sender_proof_exps: 1,
    proofs: 2,
};

/// The descriptor of `dkt10`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Diffie-Hellman PSI with Fiat-Shamir proofs on Ristretto255: the receiver proves its blinded items consistent, the sender proves one key answered them all",
    references: &[
        Reference {
            tag: "DKT10",
            authors: "De Cristofaro, Kim, Tsudik",
            title: "Linear-Complexity Private Set Intersection Protocols Secure in Malicious Model",
            venue: "ASIACRYPT 2010",
            part: "the random-oracle protocol (one-more-gap-DH, Fiat-Shamir ZKPKs), as libPSI's DktMPsi implements it",
        },
        Reference {
            tag: "RR17",
            authors: "Rindal, Rosulek",
            title: "Malicious-Secure Private Set Intersection via Dual Execution",
            venue: "CCS 2017",
            part: "§7, Fig. 6-8, the [DKT10] baseline",
        },
    ],
    security: Security::Malicious,
    assumptions: "one-more-gap-DH on Ristretto255, random-oracle model (SHA-256, SHA-512), Fiat-Shamir proofs checked in batches with 128-bit weights",
    roles: PSI_ROLES,
    kappa: &[128],
    params: |_| params(),
    // hello ‖ hello; verdict ‖ verdict; the receiver's points and proof ‖ the sender's answers,
    // proof and tags (the sender's tags wait for the receiver's proof).
    flights: 4,
    flow: &[
        Message::sender(MSG_SENDER_COMMIT),
        Message::receiver(MSG_RECEIVER_COMMIT),
        Message::receiver(MSG_RECEIVER_POINTS),
        Message::sender(MSG_SENDER_POINTS),
        Message::receiver(MSG_RECEIVER_RESPONSE),
        Message::receiver(MSG_RECEIVER_RESPONSES),
        Message::sender(MSG_SENDER_RESPONSE),
        Message::sender(MSG_TAGS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: two_party!(receiver::receive, sender::send),
};

/// The handshake parameters.
fn params() -> Vec<(String, String)> {
    vec![
        ("group".into(), "ristretto255".into()),
        (
            "generators".into(),
            "elligator2(sha512(label)) for g, g1, g2".into(),
        ),
        (
            "hash_to_group".into(),
            "2*elligator2(sha256x2(sid, item))".into(),
        ),
        (
            "proofs".into(),
            "fiat-shamir sha512(sid, statement, commitments)".into(),
        ),
        ("tag_hash".into(), "sha256(sid, enc(2K), item)".into()),
    ]
}

/// The bytes of each message: four fixed messages and four streams in frames of 2^14 items
/// (the sender answers each frame of the receiver's points with one frame).
fn traffic(s: &Sizes) -> Result<Traffic> {
    if s.kappa != 128 {
        return Err(Error::InvalidParam {
            field: "kappa",
            reason: format!("dkt10 runs on Ristretto255 (κ = 128), not κ = {}", s.kappa),
        });
    }
    let tag_len = tag_len(s.lambda, s.n_recv, s.n_send)?;
    let h = FRAME_HEADER_LEN as u64;
    let (n1, n2) = (s.n_recv, s.n_send);
    Ok(vec![
        (MSG_SENDER_COMMIT, 2 * POINT_LEN as u64 + h),
        (MSG_RECEIVER_COMMIT, 2 * POINT_LEN as u64 + h),
        (
            MSG_RECEIVER_POINTS,
            framed_bytes(n1, RECEIVER_ITEM_LEN, CHUNK),
        ),
        (MSG_SENDER_POINTS, framed_bytes(n1, SENDER_ITEM_LEN, CHUNK)),
        (MSG_RECEIVER_RESPONSE, SCALAR_LEN as u64 + h),
        (MSG_RECEIVER_RESPONSES, framed_bytes(n1, SCALAR_LEN, CHUNK)),
        (MSG_SENDER_RESPONSE, SCALAR_LEN as u64 + h),
        (MSG_TAGS, framed_bytes(n2, tag_len, CHUNK)),
    ])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    /// RR17 Fig. 8's online bits for [DKT10], 6nφ + 6φ + nβ, with n = n1 = n2.
    fn fig8_bits(n: u64, phi: u64, beta: u64) -> u64 {
        6 * n * phi + 6 * phi + n * beta
    }

    #[test]
    fn communication_is_rr17_fig_8_with_256_bit_points() {
        for log_n in [0u32, 8, 12, 14, 16, 20] {
            let n = 1u64 << log_n;
            let t = traffic(&Sizes::new(n, n)).unwrap();
            let total: u64 = t.iter().map(|(_, b)| b).sum();
            let beta = 8 * crate::params::tag_bytes(40, n, n) as u64;
            let frames = n.div_ceil(CHUNK as u64);
            let headers = (4 + 4 * frames) * FRAME_HEADER_LEN as u64;
            assert_eq!(
                8 * (total - headers),
                fig8_bits(n, 256, beta),
                "n = 2^{log_n}"
            );
        }
        // Against Fig. 8's [DKT10] column (φ = 283 there): 0.8 MB at 2^12, 14 MB at 2^16.
        let mb = |n: u64| {
            let t = traffic(&Sizes::new(n, n)).unwrap();
            t.iter().map(|(_, b)| b).sum::<u64>() as f64 / 1e6
        };
        assert!((0.75..0.85).contains(&mb(1 << 12)), "{}", mb(1 << 12));
        assert!((13.0..14.0).contains(&mb(1 << 16)), "{}", mb(1 << 16));
        // With Fig. 8's φ = 283 and β = 72 at 2^16 the formula gives 14.5 MB.
        let fig8_mb = fig8_bits(1 << 16, 283, 72) as f64 / 8e6;
        assert!((14.4..14.6).contains(&fig8_mb), "{fig8_mb}");
    }

    #[test]
    fn computation_is_rr17s_count_for_dkt10() {
        // RR17 §7: "5n exponentiations and 2n zero knowledge proofs" (n per party's proof).
        assert_eq!(COST.receiver_exps + COST.sender_exps, 5);
        assert_eq!(COST.proofs, 2);
        // Each proof adds one commitment per item; its check is batched (no per-item
        // exponentiation).
        assert_eq!(COST.receiver_proof_exps + COST.sender_proof_exps, 2);
    }

    #[test]
    fn traffic_refuses_other_levels() {
        let s = Sizes {
            kappa: 80,
            ..Sizes::new(10, 10)
        };
        assert!(traffic(&s).is_err());
    }
}
