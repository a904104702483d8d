//! `gbf`: Dong-Chen-Wen's oblivious Bloom intersection with a garbled Bloom filter,
//! semi-honest.
//!
//! **Paper.** Dong, Chen, Wen, *When Private Set Intersection Meets Big Data: An Efficient and
//! Scalable Protocol* (CCS 2013, extended version): the garbled Bloom filter (§4.1, Alg. 1-2),
//! GBF intersection (§4.2, Alg. 3), the semi-honest protocol π∩ (§4.3, Fig. 2) and its pipelined
//! and parallel implementation (§6.1-6.2); as PSZ14 measure it (§4.2 and Tab. 3, row "\[19\] with
//! OT of \[1\]": DCW's protocol on the OT extension of Asharov et al., with PSZ14 §4.2's
//! optimisation x_i^0 = 0), and PSZ14 App. A's mapping of items to a short domain. DCW13 §5's
//! "enhanced" protocol against malicious parties is not implemented: its own 2016 erratum shows
//! a selective-failure attack (Rindal-Rosulek's repair is a protocol of its own).
//!
//! **Security model.** Semi-honest receiver and sender (DCW13 §3.5, Thm 7), static corruption;
//! the hash functions are random oracles (keyed fixed-key AES, as for the OT extension), the OT
//! extension is IKNP/ALSZ on Chou-Orlandi base OTs (CDH): 128 columns on Ristretto255 at
//! κ = 80 and 128; at κ = 192 and 256 DCW13 Tab. 2's primitives, base OTs on P-384 / P-521 and
//! the OT hash SHA-384 / SHA-512, with AES-256 column PRGs (`blindjoin_ot::ext::high`). The sender learns n1; the receiver
//! learns n2 and the intersection, as indices of its own items. As DCW13 Thm 4 states, the
//! receiver's view is simulated with a GBF of the intersection up to 2·d·ε, d the sender's items
//! outside the intersection and ε = 2^-k the Bloom filter's false-positive rate.
//!
//! **Message flow** (receiver R = DCW's client with set C, n1 items; sender S = DCW's server
//! with set S, n2 items; h_0..h_{k-1} keyed by the session id; enc(x) = π(x) ⊕ x truncated to
//! ℓ bits, π fixed-key AES under a session key):
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict                  (handshake: n1, n2, κ, λ, the rules below)
//! R → S: (m, k, ℓ)   and   S → R: (m, k, ℓ)         (each checks the other's; a difference names
//!                                                    the field)
//! base OTs (CO15, R is the base-OT sender)          (2 flights; 128 on Ristretto255, or 256 on
//!                                                    P-384 / P-521 at κ = 192 / 256)
//! S: GBF_S over {enc(y)} (Alg. 1 on distinct positions)   R: BF_C over its items, chunk by chunk
//! for each chunk of 2^16 positions i (pipelined: R runs up to 4 chunks ahead):
//!   R → S: the IKNP u columns with choice bits BF_C[i]
//!   S → R: y_i = GBF_S[i] ⊕ x_i^1, ℓ bits each      (x_i^1 = TCCR(i, q_i ⊕ s), the OT message
//!                                                    for choice 1; for choice 0 the message is 0)
//!   R: where BF_C[i] = 1, GBF^π[i] = y_i ⊕ TCCR(i, t_i) = GBF_S[i]; for every element x of C
//!      with a position in the chunk, acc[x] ^= GBF^π[i]
//! R: x ∈ C ∩ S iff acc[x] = enc(x) (QueryGBF, Alg. 2, on GBF^π = Alg. 3's output)
//! ```
//!
//! **Parameters** (κ ∈ {80, 128, 192, 256}; DCW13 Tab. 2 gives the primitives of each level,
//! test `kappa_192_and_256_run_on_p384_and_p521` and `blindjoin_ot::ext::high`'s
//! `levels_follow_dcw13_table_2`).
//! - k = κ hash functions (DCW13 §4.3 step 1: "k is set to be the same as the security
//!   parameter"; PSZ14 footnote 4: κ, not the statistical λ) and m = roundup8(⌈1.44·k·n⌉) with
//!   n = max(n1, n2), the rule that reproduces DCW13 §6.2's example m = 120,795,960
//!   (`hashing::bloom`).
//! - ℓ, the share length ([`ell_bits`]): the items (128-bit hashes) are mapped to ℓ bits by
//!   enc, which PSZ14 App. A makes injective on all n1 + n2 items except with probability
//!   2^-λ for d = 2·log2(n1 + n2) − 1 + λ bits; we take ℓ = max(d, λ + ⌈log2 n1⌉) (the second
//!   term bounds the receiver's n1 queries, each a false match with probability 2^-ℓ), rounded
//!   up to whole bytes, at most 128. At n1 = n2 = 2^18 and λ = 40 that is 77 bits (10 bytes), at
//!   2^20 81 bits (11 bytes).
//!
//! **Cost.** R sends m·κ' bits of u columns (κ' = 128 at κ ≤ 128, 256 above) and S m·ℓ bits of y values (PSZ14 Tab. 3, row "\[19\]
//! with OT of \[1\]": P2 mκ, P1 mλ, here with ℓ for λ), plus the κ base OTs and the two setup
//! messages. PSZ14 Tab. 6's row "Garbled Bloom Filter" counts 2.88nκ(κ + λ) = 2m(κ + λ): the
//! original IKNP, whose receiver sends two m×κ matrices, and both OT messages of ℓ = λ bits;
//! on the OT extension of \[1\] the same protocol costs m(κ + ℓ), which the descriptor's traffic
//! formula gives exactly (test `communication_follows_psz_table_3`).
//!
//! **Pipelining and memory** (DCW13 §6.1-6.2). The positions are walked in chunks of 2^16 (one
//! OT-extension call): R's choice bits and S's y values of a chunk exist only while it is
//! processed. S holds the GBF in the compact form of `hashing::bloom` (m/4 bytes of slot state
//! and its n2 final shares; the random shares are a PRF of the position, produced per chunk),
//! not m·ℓ bits. R never holds its Bloom filter: per pass over a range of chunks it lists the
//! (offset, element) pairs of its elements (6 bytes each, at most 2^26 per pass and a quarter
//! of `--memory`), builds each chunk's bits from them and adds the received strings into one
//! accumulator per element. R sends through a writer thread and reads S's y values on a reader
//! thread (`common::pipelined`), at most 4 chunks ahead of what it has processed, so neither party
//! waits for the other's socket buffer and R's queue stays bounded. `--threads` (rayon)
//! parallelises the hashing of positions, the pairs and the accumulation over groups of
//! elements, the OT extension within each chunk (column PRGs, transposition, hashing), and the
//! sender's GBF strings per chunk; the GBF build itself stays sequential
//! (share reuse, DCW13 §6.1, PSZ14 §4.2). One thread and several give the same result.
//!
//! **Deviations.**
//! 1. *Distinct positions.* Alg. 1 as printed loses an element when one of its later indices
//!    repeats the slot it reserved (about 0.69 elements per build); every structure here uses an
//!    element's distinct positions (`hashing::bloom`, test
//!    `printed_alg1_loses_members_with_repeated_indices`).
//! 2. *x_i^0 = 0* (PSZ14 §4.2, "Optimization"): DCW's OT sends (random, GBF_S\[i\]); with the
//!    choice-0 message fixed to 0, S sends one masked string per OT and R hashes only where its
//!    bit is 1. R's intersection GBF then holds 0 instead of a random string where BF_C\[i\] = 0,
//!    positions no query of R's elements reads.
//! 3. *Random shares from a PRF of the position* (a fresh key per run) instead of fresh random
//!    strings, so that the filter can be streamed without being stored (see Pipelining).
//! 4. *OT extension hash* TCCR(i, ·) with the OT index as tweak (GKWY20) where DCW App. A writes
//!    H(j, ·).
//! 5. *OT width.* At κ = 80 the extension keeps its 128 columns and 128-bit primitives (DCW13
//!    Tab. 2 has P-192 and SHA-1 there); at κ = 192 it runs 256 columns, not 192 (the
//!    transposition works on groups of 128), and Chou-Orlandi replaces DCW's Naor-Pinkas base
//!    OT on the same curves.
//! 6. *Setup messages.* Both parties send (m, k, ℓ) after the handshake, so that a disagreement
//!    is reported naming the field, and so that S builds its filter (whose size follows R's
//!    announced n1) only once R has sent something.
//!
//! Timing: the sender's GBF build takes time proportional to its set; like DCW13 and PSZ14 we do
//! not hide timing.

mod receiver;
mod sender;

pub use receiver::receive;
pub use sender::send;

use super::filters::{CHUNK, FilterParams, truncate};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::handshake::Session;
use blindjoin_core::Block;
use rayon::prelude::*;
use crate::BaseOt;
use crate::params::ceil_log2;
use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{PSI_ROLES, PSZ14};
use blindjoin_core::channel::{framed_bytes, msg_bytes};
use blindjoin_core::Result;
use blindjoin_ot::ext::high::{self, HighReceiver, HighSender};
use blindjoin_ot::ext::iknp::{self, IknpReceiver, IknpSender};
use blindjoin_ot::{base, traffic};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use crate::run::Run;
use rand::CryptoRng;

/// Protocol id in the handshake.
pub const NAME: &str = "gbf";

/// Dong, Chen, Wen (CCS 2013).
pub(crate) const DCW13: Reference = Reference {
    tag: "DCW13",
    authors: "Dong, Chen, Wen",
    title: "When Private Set Intersection Meets Big Data: An Efficient and Scalable Protocol",
    venue: "CCS 2013 (extended version)",
    part: "",
};

/// The descriptor of `gbf`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "oblivious Bloom intersection: the sender's garbled Bloom filter sent through m = 1.44κn OTs chosen by the receiver's Bloom filter",
    references: &[
        Reference {
            part: "§4.1-4.3 (Alg. 1-3, Fig. 2), §6.1-6.2 (pipelined and parallel modes)",
            ..DCW13
        },
        Reference {
            part: "§4.2 (GBF on the OT of [1], x^0 = 0), Tab. 3 \"[19] with OT of [1]\", Tab. 5-6 \"Garbled Bloom Filter\", App. A",
            ..PSZ14
        },
    ],
    security: Security::SemiHonest,
    assumptions: "IKNP/ALSZ OT extension on Chou-Orlandi base OTs (CDH), hash functions as random oracles (fixed-key AES)",
    roles: PSI_ROLES,
    kappa: &[80, 128, 192, 256],
    params: |o| params(o.kappa, o.base_ot),
    // hello ‖ hello; verdict ‖ verdict; setups + base-OT S; base-OT R_i; u columns; y values.
    flights: 6,
    flow: &[
        Message::receiver(MSG_RECEIVER_SETUP),
        Message::sender(MSG_SENDER_SETUP),
        Message::receiver(base::MSG_SENDER_POINT),
        Message::sender(base::MSG_RECEIVER_POINTS),
        Message::receiver(iknp::MSG_U_COLUMNS),
        Message::sender(MSG_SHARES),
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
/// Name of the sender's masked GBF strings y_i (one frame per chunk of positions).
pub const MSG_SHARES: &str = "the sender's masked garbled Bloom filter";

/// ℓ in bits for the GBF's shares (see the module doc): max(2·⌈log2(n1 + n2)⌉ − 1 + λ,
/// λ + ⌈log2 n1⌉), rounded up to whole bytes, at most 128.
pub fn ell_bits(lambda: u32, n1: u64, n2: u64) -> u32 {
    let app_a = (2 * ceil_log2(u128::from(n1) + u128::from(n2)) + lambda).saturating_sub(1);
    let queries = lambda + ceil_log2(u128::from(n1));
    (app_a.max(queries).div_ceil(8) * 8).min(128)
}

/// k, m and ℓ (see the module doc) from (κ, λ, n1, n2).
pub(crate) fn filter_params(kappa: u32, lambda: u32, n1: u64, n2: u64) -> Result<FilterParams> {
    FilterParams::new(kappa, n1, n2, ell_bits(lambda, n1, n2) as usize / 8)
}

/// The handshake parameters: the rules both sides apply to the sizes, and the OT extension of
/// the level.
pub(crate) fn params(kappa: u32, base_ot: BaseOt) -> Vec<(String, String)> {
    let (ot, base_ot) = match high::level(kappa) {
        Some(l) => (
            format!("iknp-alsz/x0=0/256 columns/aes256/{}", l.hash.to_lowercase()),
            format!("co15-{}", l.curve.to_lowercase()),
        ),
        None => ("iknp-alsz/x0=0".into(), base_ot.name().into()),
    };
    vec![
        ("ot".into(), ot),
        ("base_ot".into(), base_ot),
        ("bloom".into(), "k=kappa/m=roundup8(ceil(1.44*k*max(n1,n2)))/distinct".into()),
        (
            "ell".into(),
            "max(2*ceil(log2(n1+n2))-1+lambda,lambda+ceil(log2(n1)))/bytes".into(),
        ),
    ]
}

/// The bytes of each message: two setups, the base OTs (128 on Ristretto255 at κ ≤ 128, 256 on
/// P-384 or P-521 above), m OTs of u columns (128 or 256 of them) in calls of 2^16, and m
/// strings of ℓ bytes in one frame per chunk.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let p = filter_params(s.kappa, s.lambda, s.n_recv, s.n_send)?;
    let setup = msg_bytes(&p.setup())?;
    let ([base_s, base_r], columns) = match high::level(s.kappa) {
        Some(l) => (traffic::co15_nist(high::HIGH_COLUMNS, l.point_len), high::HIGH_COLUMNS),
        None => (traffic::co15(blindjoin_ot::ext::KAPPA), blindjoin_ot::ext::KAPPA),
    };
    Ok(vec![
        (MSG_RECEIVER_SETUP, setup),
        (MSG_SENDER_SETUP, setup),
        base_s,
        base_r,
        (iknp::MSG_U_COLUMNS, traffic::u_columns(p.m as usize, columns)),
        (MSG_SHARES, framed_bytes(p.m, p.ell, CHUNK)),
    ])
}

/// The receiver's OT extension: IKNP with 128 columns at κ ≤ 128, the κ = 192/256 extension of
/// `blindjoin_ot::ext::high` above.
pub(crate) enum OtReceiver {
    Standard(IknpReceiver),
    High(HighReceiver),
}

impl OtReceiver {
    /// Runs the base OTs of the run's level.
    pub(crate) fn setup<C: Channel + ?Sized>(
        run: &Run<'_>,
        ch: &mut C,
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let (kappa, sid) = (run.session.kappa, run.session.id);
        Ok(if high::level(kappa).is_some() {
            OtReceiver::High(HighReceiver::setup(kappa, ch, &sid, rng)?)
        } else {
            OtReceiver::Standard(IknpReceiver::setup(&mut run.base_ot(), ch, &sid, rng)?)
        })
    }

    /// x_i^1 where the packed bit i of `choices` is set, zero elsewhere.
    pub(crate) fn receive_ones<C: FrameSender + ?Sized>(
        &mut self,
        tx: &mut C,
        choices: &[u8],
        out: &mut [Block],
    ) -> Result<()> {
        match self {
            OtReceiver::Standard(ot) => ot.receive_ones(tx, choices, out),
            OtReceiver::High(ot) => ot.receive_ones(tx, choices, out),
        }
    }
}

/// The sender's OT extension (see [`OtReceiver`]).
pub(crate) enum OtSender {
    Standard(IknpSender),
    High(HighSender),
}

impl OtSender {
    /// Runs the base OTs of the run's level.
    pub(crate) fn setup<C: Channel + ?Sized>(
        run: &Run<'_>,
        ch: &mut C,
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let (kappa, sid) = (run.session.kappa, run.session.id);
        Ok(if high::level(kappa).is_some() {
            OtSender::High(HighSender::setup(kappa, ch, &sid, rng)?)
        } else {
            OtSender::Standard(IknpSender::setup(&mut run.base_ot(), ch, &sid, rng)?)
        })
    }

    /// x_i^1 for every OT of `out`.
    pub(crate) fn send_ones<C: FrameReceiver + ?Sized>(
        &mut self,
        rx: &mut C,
        out: &mut [Block],
    ) -> Result<()> {
        match self {
            OtSender::Standard(ot) => ot.send_ones(rx, None, out),
            OtSender::High(ot) => ot.send_ones(rx, out),
        }
    }
}

/// π of the item encoding enc(x) = π(x) ⊕ x.
pub(crate) fn encoder(session: &Session) -> FixedKeyAes {
    FixedKeyAes::new(session.block("gbf/encode"))
}

/// enc(x) for every item, in place, truncated to `ell` bytes.
pub(crate) fn encode(aes: &FixedKeyAes, blocks: &mut [Block], ell: usize) {
    blocks.par_chunks_mut(1 << 12).for_each(|c| {
        let orig = c.to_vec();
        aes.permute(c);
        for (x, o) in c.iter_mut().zip(orig) {
            *x = Block(truncate(*x ^ o, ell));
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn share_length() {
        // PSZ14 App. A: n = 2^19 items (both sets of 2^18), λ = 40: 2·19 − 1 + 40 = 77 bits.
        assert_eq!(ell_bits(40, 1 << 18, 1 << 18), 80);
        assert_eq!(ell_bits(40, 1 << 20, 1 << 20), 88);
        // Tiny sets: the receiver's queries decide.
        assert_eq!(ell_bits(40, 1, 0), 40);
        assert_eq!(ell_bits(40, 0, 0), 40);
        assert_eq!(ell_bits(80, 1 << 30, 1 << 30), 128);
        let p = filter_params(128, 40, 1 << 18, 1 << 18).unwrap();
        assert_eq!((p.k, p.m, p.ell), (128, 48_318_384, 10));
        assert_eq!(p.chunks(), 738);
        let p = filter_params(80, 40, 1 << 20, 1000).unwrap();
        assert_eq!((p.k, p.m), (80, 120_795_960));
        assert!(filter_params(128, 40, 1 << 25, 1).is_err());
    }
}
