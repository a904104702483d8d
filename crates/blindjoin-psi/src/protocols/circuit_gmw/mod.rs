//! `circuit_gmw`: circuit-based PSI, the sort-compare-shuffle circuit evaluated under GMW with
//! vector multiplication triples, semi-honest.
//!
//! **Papers.** Pinkas, Schneider, Zohner, *Scalable Private Set Intersection Based on OT
//! Extension* (USENIX Security 2014, full version): GMW with multiplication triples from two
//! random OTs of one bit (§3.1), vector multiplication triples for the multiplexers (§3.2), the
//! SCS circuit with depth-optimised comparators (App. D.1-D.2), the short-domain mapping
//! (App. A); Huang, Evans, Katz, *Private Set Intersection: Are Garbled Circuits Better than
//! Custom Protocols?* (NDSS 2012), the sort-compare-shuffle circuit; Goldreich, Micali,
//! Wigderson (STOC 1987). PSZ14 measures this as "Vector-MT GMW §3.2" in Tab. 5-7 and the same
//! circuit with scalar triples only as "GMW \[1\]"; `circuit_gmw_scalar` is that row.
//!
//! **Security model.** Semi-honest sender and receiver; the random OTs under the triples are
//! IKNP/ALSZ extensions of Chou-Orlandi base OTs (CDH, random-oracle model, PSZ14 App. B). The
//! receiver learns n2, the values of the intersection (in a random order, which the sender
//! chose: the Waksman network's switches are its private input) and so the intersection; or,
//! with [`crate::ResultKind::Cardinality`], only its size, or with
//! [`crate::ResultKind::Sum`], only the sum of the sender's values over it. The sender learns
//! n1. Both learn the number of distinct σ-bit values of the other's set (see *Deviations*).
//!
//! **Message flow** (receiver R = GMW party P1 with n1 items, sender S = party P0 with n2;
//! the engine's messages are in [`crate::circuit::gmw`] and [`crate::circuit::triples`]):
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict        (handshake: n1, n2, κ, λ, σ rule, result, triples)
//! both: σ from n1, n2, λ (PSZ14 App. A) unless set; map items to σ-bit values, keep the
//!       distinct ones, sorted
//! S ‖ R: the number of distinct values n_s, n_r                           (MSG_SETUP)
//! both: count the circuit's AND gates and multiplexers for (n_s, n_r, σ, result)
//! triples (precomputation, reported as its own phase):
//!   κ base OTs each way (CO15), then per batch the IKNP u columns each way;
//!   scalar triples for the comparators, equality tests and ORs, vector triples (σ bits,
//!   σ + 32 in a sum) for the multiplexers
//! S → R: shares of S's values (σ planes, n_s lanes; plus 32 planes of values in a sum)
//! S → R: shares of S's Waksman switches for a random permutation (intersection only)
//! R → S: shares of R's values (σ planes, n_r lanes)
//! S ↔ R: one exchange of openings per AND layer, in lockstep frames of 32 KiB:
//!   merge (⌈log2(n_s+n_r)⌉ stages: comparator ⌈log2 σ⌉ + 1 layers, swap 1 layer),
//!   compare (equality ⌈log2 σ⌉ layers, OR 1, select 1), then
//!   intersection: Waksman shuffle (2·log2 m − 1 layers, m = ⌊(n_s+n_r)/2⌋),
//!   cardinality: adder tree; sum: select 1, adder tree
//! S → R: S's shares of the output (intersection: σ planes, m lanes; else one lane)
//! R: intersection: the nonzero output values, mapped back to R's items; cardinality or sum:
//!    the one output value
//! ```
//!
//! **Parameters.** σ = ⌈2·log2(n1 + n2) − 1 + λ⌉ (PSZ14 App. A, [`circuit_psi::derived_sigma`];
//! 73 at n1 = n2 = 2^16, λ = 40), or `RunOptions::sigma` (PSZ14's experiments: 32, which needs
//! `allow_weak`); comparators depth-optimised (PSZ14 App. D.2, as PSZ ran GMW): 3σ − ⌈log2 σ⌉
//! − 2 AND gates, ⌈log2 σ⌉ + 1 rounds. The circuit has σ(3n·log2 n + 4n) − n AND gates with
//! size-optimised comparators and about 4.8·nσ·log2 n with depth-optimised ones (PSZ14: "about
//! 5nσ log2 n"), 2n·log2 n + n + 1 of them in multiplexers, for n_s = n_r = n (tests in
//! `circuit::scs`).
//!
//! **Cost.** Per AND gate two random OTs of one bit (κ = 128 bits of u columns each way) and
//! 2 bits opened each way; per multiplexer two random OTs of σ bits and 1 + σ bits opened
//! each way instead of 4σ (PSZ14 §3.2). PSZ14 Tab. 6: 6nκσ·log2 n bits for "Vector-MT GMW",
//! 10nκσ·log2 n for "GMW". The traffic formula ([`PROTOCOL`]'s `traffic`) counts the exact
//! bytes of our circuit, layer by layer.
//!
//! **Deviations.**
//! - σ derived from the set sizes and λ by default, where PSZ14 fixes σ = 32 (App. A gives the
//!   rule; σ = 32 collides at n = 2^16 with probability about 1/2).
//! - Each party's distinct σ-bit values go into the circuit, and their number is sent
//!   (MSG_SETUP): at the derived σ it equals the set size except with probability 2^-λ.
//! - Any n1, n2: the merger pads to a power of two with a public +∞ that costs no gates, and
//!   the Waksman network has any number of lanes.
//! - The shuffle's output lanes are the ⌊(n_s + n_r)/2⌋ odd positions of the merged list
//!   (every matched pair holds one), as in HEK12; a lane without a match holds 0, which is
//!   outside the domain.
//! - Cardinality and sum are our additions (the circuit approach allows them; PSZ14 §1 names
//!   such functions as its advantage).

mod flow;
mod traffic;

use crate::protocol::{Message, Protocol, Reference, ResultKind, Security, two_party};
use crate::protocols::circuit_psi::{self, HEK12};
use crate::protocols::common::{PSI_ROLES, PSZ14};
use crate::{BaseOt, RunOptions};
use blindjoin_core::Result;
use blindjoin_core::channel::Channel;
use blindjoin_core::item::Item;
use rand::CryptoRng;

pub(crate) use flow::{Triples, receive as receive_with, send as send_with};
pub(crate) use traffic::traffic;

/// Protocol id in the handshake.
pub const NAME: &str = "circuit_gmw";

/// The results the circuit protocols compute.
pub(crate) const RESULTS: &[ResultKind] = &[
    ResultKind::Intersection,
    ResultKind::Cardinality,
    ResultKind::Sum,
];

/// The descriptor of `circuit_gmw`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "sort-compare-shuffle circuit under GMW with vector multiplication triples; intersection, cardinality or sum",
    references: &[
        Reference {
            part: "§3.1-3.2 (vector multiplication triples), App. A, D.1-D.2; Tab. 5-7 \"Vector-MT GMW §3.2\"",
            ..PSZ14
        },
        HEK12,
    ],
    security: Security::SemiHonest,
    assumptions: "IKNP/ALSZ random OT on Chou-Orlandi base OTs (CDH), random-oracle hashes",
    roles: PSI_ROLES,
    kappa: &[128],
    params: |o| params(o, Triples::Vector),
    flights: FLIGHTS,
    flow: FLOW,
    results: RESULTS,
    traffic: |s| traffic(s, Triples::Vector),
    queries: crate::protocol::announced,
    entry: two_party!(receive, send),
};

/// hello ‖ hello; verdict ‖ verdict; setup ‖ setup; base OTs (2 flights); u columns; inputs;
/// the AND layers (counted as one flight here: their number follows the sizes, see
/// [`circuit_psi`]); the output.
pub(crate) const FLIGHTS: u32 = 9;

/// The messages after the handshake, in order.
pub(crate) const FLOW: &[Message] = &flow::FLOW;

/// `circuit_gmw_scalar`'s messages after the handshake.
pub(crate) const FLOW_SCALAR: &[Message] = &flow::FLOW_SCALAR;

/// The handshake parameters: how σ is chosen, the result, the comparator, the triples, the
/// base OT.
pub(crate) fn params(o: &RunOptions, triples: Triples) -> Vec<(String, String)> {
    vec![
        ("circuit".into(), "hek12-scs/depth-optimised".into()),
        ("sigma".into(), circuit_psi::sigma_param(o.sigma)),
        ("result".into(), o.result.name().into()),
        ("triples".into(), triples.name().into()),
        ("ot".into(), "iknp".into()),
        ("base_ot".into(), BaseOt::name(o.base_ot).into()),
    ]
}

fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<crate::ReceiverOutput> {
    flow::receive(&PROTOCOL, Triples::Vector, ch, items, opts, rng)
}

fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<crate::SenderOutput> {
    flow::send(&PROTOCOL, Triples::Vector, ch, items, opts, rng)
}
