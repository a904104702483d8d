//! `rgbf`: PSZ14's random garbled Bloom filter PSI, semi-honest.
//!
//! **Paper.** Pinkas, Schneider, Zohner, *Scalable Private Set Intersection Based on OT
//! Extension* (USENIX Security 2014, full version), §4.3 "Random Garbled Bloom Filter" (the
//! oblivious pseudorandom generator, message flow, correctness and efficiency), Tab. 3 (row
//! "Random GBF-based PSI"), Tab. 5-8 (row "Random Garbled Bloom Filter"), App. B and C.2 (random
//! OT extension, roles as below), on the garbled Bloom filters of Dong, Chen, Wen (CCS 2013,
//! §3.2, §4.1) and their pipelined and parallel modes (§6.1-6.2).
//!
//! **Security model.** Semi-honest receiver and sender (PSZ14 §2.1, §4.3 "Security"); the hash
//! of the random OT extension and the Bloom filter's hash functions are random oracles (keyed
//! fixed-key AES; PSZ14 App. B: random OT needs a random oracle, not only correlation
//! robustness); IKNP/ALSZ random OT extension on Chou-Orlandi base OTs (CDH). The sender learns
//! n1; the receiver learns n2 and the intersection, as indices of its own items. A mask of an
//! element outside the intersection is independent of the receiver's view unless the receiver's
//! Bloom filter has a false positive for it (probability 2^-k).
//!
//! **Message flow** (receiver R = PSZ's P2 with n1 items y; sender S = P1 with n2 items x;
//! h_0..h_{k-1} keyed by the session id; positions are an element's *distinct* h_i values):
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict                  (handshake: n1, n2, κ, λ, the rules below)
//! R → S: (m, k, ℓ)   and   S → R: (m, k, ℓ)         (each checks the other's; a difference names
//!                                                    the field)
//! κ = 128 base OTs (CO15, R is the base-OT sender: roles as App. C.1-C.2)
//! S: Bloom filter F_X of its items;  R: Bloom filter F_Y of its items (chunk by chunk)
//! for each chunk of 2^16 positions i:
//!   R → S: the IKNP u columns with choice bits F_Y[i]      (m·κ bits in all)
//!   S: where F_X[i] = 1, G_X[i] = TCCR(i, q_i ⊕ s)         (the OPRG: the random OT's message
//!   R: where F_Y[i] = 1, G_Y[i] = TCCR(i, t_i)              for choice 1; equal where both are 1)
//!   each: for every own element with a position in the chunk, acc ^= G[i]
//! S → R: the masks acc[x] of its items, ℓ bits each, in random order   (n2·ℓ bits)
//! R: y ∈ X ∩ Y iff acc[y] is among the sender's masks (hash table)
//! ```
//!
//! **Parameters.**
//! - k = κ and m = roundup8(⌈1.44·k·max(n1, n2)⌉) (PSZ14 Tab. 3: m ≈ 1.44κ·max(n1, n2), k
//!   = log2(1/ε) with ε = 2^-κ; footnote 4: κ, not λ), DCW13 §6.2's rounding (`hashing::bloom`).
//! - ℓ = λ + ⌈log2(n1·n2)⌉ bits rounded up to whole bytes (§4.3 "Correctness":
//!   ℓ = λ + log2 n1 + log2 n2 bounds the n1·n2 comparisons' false matches by 2^-λ).
//!
//! **Cost.** R sends m·κ bits of u columns, S n2·ℓ bits of masks (PSZ14 Tab. 3: P2 mκ, P1 n1ℓ in
//! their numbering; Tab. 6: 1.44nκ² + n(λ + 2 log2 n) bits), plus the κ base OTs and the two
//! setup messages; the descriptor's traffic formula gives every message's bytes (test
//! `communication_follows_psz_table_6`). Each party hashes only the rows where its own filter
//! has a 1 (about m/2, Tab. 3's "m/2 calls to H").
//!
//! **Pipelining and memory** (DCW13 §6.1-6.2). The positions are walked in chunks of 2^16 (one
//! OT-extension call); neither party holds its Bloom filter or the m OT outputs. Per pass over a
//! range of chunks each lists the (offset, element) pairs of its own elements (6 bytes each, at
//! most 2^26 per pass and a quarter of `--memory`, `hashing::bloom::BloomPairs`), builds each
//! chunk's filter bits from them, and adds each chunk's G values into one accumulator per
//! element: memory is the pairs of a pass, 16 bytes per element and one chunk, not m. S reads
//! R's u columns as they arrive and
//! sends its masks after the last chunk (a set in random order can only be sent complete), so
//! the two streams never run at once. `--threads` (rayon) parallelises the hashing of positions,
//! the pairs, the OT extension within each chunk (column PRGs, transposition, hashing) and the
//! accumulation over groups of elements. One thread and several give the
//! same result. Unlike DCW's GBF, the random GBF has no share reuse, so its construction is
//! fully parallel (§4.3).
//!
//! **Deviations.**
//! 1. *Distinct positions* in the filters and in the masks' XOR (a repeated index would cancel on
//!    both sides alike; PSZ14 do not say; see `hashing::bloom`).
//! 2. *Row index in the hash.* PSZ14 write H(q_i); we use TCCR(i, ·), the OT extension's hash
//!    with the OT index as tweak (GKWY20), as DCW13 App. A's H(j, ·).
//! 3. *Setup messages.* Both parties send (m, k, ℓ) after the handshake so that a disagreement is
//!    reported naming the field, and so that R's OT work, which follows S's announced n2, starts
//!    only once S has sent something.
//! 4. *Role names.* PSZ14's P1 (GBF side, mask sender) is our sender with n2 items, P2 our
//!    receiver with n1: PSZ's "n1ℓ" for P1's masks is our n2·ℓ.

mod receiver;
mod sender;

pub use receiver::receive;
pub use sender::send;

use super::filters::FilterParams;
use crate::BaseOt;
use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{CHUNK as MASK_FRAME, PSI_ROLES, PSZ14, tag_len};
use crate::protocols::gbf::DCW13;
use blindjoin_core::Result;
use blindjoin_core::channel::{framed_bytes, msg_bytes};
use blindjoin_ot::ext::iknp;
use blindjoin_ot::{base, traffic};

/// Protocol id in the handshake.
pub const NAME: &str = "rgbf";

/// The descriptor of `rgbf`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "random garbled Bloom filters from m = 1.44κn random OTs chosen by both parties' Bloom filters; the sender's masks in random order",
    references: &[
        Reference {
            part: "§4.3, App. B, C.2; Tab. 3 \"Random GBF-based PSI\", Tab. 5-8 \"Random Garbled Bloom Filter\"",
            ..PSZ14
        },
        Reference {
            part: "§3.2, §4.1 (Bloom and garbled Bloom filters), §6.1-6.2 (pipelined and parallel modes)",
            ..DCW13
        },
    ],
    security: Security::SemiHonest,
    assumptions: "IKNP/ALSZ random OT extension on Chou-Orlandi base OTs (CDH), hash functions as random oracles (fixed-key AES)",
    roles: PSI_ROLES,
    kappa: &[80, 128],
    params: |o| params(o.base_ot),
    // hello ‖ hello; verdict ‖ verdict; setups + base-OT S; base-OT R_i; u columns; masks.
    flights: 6,
    flow: &[
        Message::receiver(MSG_RECEIVER_SETUP),
        Message::sender(MSG_SENDER_SETUP),
        Message::receiver(base::MSG_SENDER_POINT),
        Message::sender(base::MSG_RECEIVER_POINTS),
        Message::receiver(iknp::MSG_U_COLUMNS),
        Message::sender(MSG_MASKS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: two_party!(receiver::receive, sender::send),
};

/// Name of the receiver's filter parameters.
pub const MSG_RECEIVER_SETUP: &str = "the receiver's filter parameters";
/// Name of the sender's filter parameters.
pub const MSG_SENDER_SETUP: &str = "the sender's filter parameters";
/// Name of the sender's masks, in random order.
pub const MSG_MASKS: &str = "the sender's masks";

/// k, m and ℓ (see the module doc) from (κ, λ, n1, n2).
pub(crate) fn filter_params(kappa: u32, lambda: u32, n1: u64, n2: u64) -> Result<FilterParams> {
    FilterParams::new(kappa, n1, n2, tag_len(lambda, n1, n2)?)
}

/// The handshake parameters: the rules both sides apply to the sizes.
pub(crate) fn params(base_ot: BaseOt) -> Vec<(String, String)> {
    vec![
        ("ot".into(), "iknp-alsz/random/tccr(i)".into()),
        ("base_ot".into(), base_ot.name().into()),
        ("bloom".into(), "k=kappa/m=roundup8(ceil(1.44*k*max(n1,n2)))/distinct".into()),
        ("ell".into(), "lambda+ceil(log2(n1*n2))/bytes".into()),
    ]
}

/// The bytes of each message: two setups, κ = 128 base OTs, m OTs of u columns in calls of
/// 2^16, and n2 masks of ℓ bytes in frames of 2^14.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let p = filter_params(s.kappa, s.lambda, s.n_recv, s.n_send)?;
    let setup = msg_bytes(&p.setup())?;
    let [base_s, base_r] = traffic::co15(blindjoin_ot::ext::KAPPA);
    Ok(vec![
        (MSG_RECEIVER_SETUP, setup),
        (MSG_SENDER_SETUP, setup),
        base_s,
        base_r,
        (iknp::MSG_U_COLUMNS, traffic::u_columns(p.m as usize, blindjoin_ot::ext::KAPPA)),
        (MSG_MASKS, framed_bytes(s.n_send, p.ell, MASK_FRAME)),
    ])
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn parameters() {
        // PSZ14 §4.3: ℓ = λ + log2 n1 + log2 n2: 76 bits at 2^18, 80 at 2^20 (whole bytes).
        let p = filter_params(128, 40, 1 << 18, 1 << 18).unwrap();
        assert_eq!((p.k, p.m, p.ell), (128, 48_318_384, 10));
        let p = filter_params(128, 40, 1 << 20, 1 << 20).unwrap();
        assert_eq!((p.k, p.m, p.ell), (128, 193_273_536, 10));
        let p = filter_params(128, 40, 0, 0).unwrap();
        assert_eq!((p.m, p.chunks()), (0, 0));
    }
}
