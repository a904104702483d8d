//! `circuit_yao`: circuit-based PSI, the sort-compare-shuffle circuit as a garbled circuit
//! (half-gates), semi-honest.
//!
//! **Papers.** Pinkas, Schneider, Zohner, *Scalable Private Set Intersection Based on OT
//! Extension* (USENIX Security 2014, full version): the SCS circuit with size-optimised
//! comparators under Yao (§7.1, App. D.1-D.2; Tab. 5-7 "Yao [8, 31]"), the short-domain
//! mapping (App. A); Huang, Evans, Katz (NDSS 2012), the sort-compare-shuffle circuit; Zahur,
//! Rosulek, Evans, *Two Halves Make a Whole* (EUROCRYPT 2015), half-gates garbling with
//! free-XOR and point-and-permute; Guo, Katz, Wang, Yu (S&P 2020), the TCCR hash on fixed-key
//! AES. The engine is [`crate::circuit::yao`].
//!
//! **Security model.** Semi-honest sender (the garbler) and receiver (the evaluator); the
//! evaluator's input labels come by IKNP correlated OT on Chou-Orlandi base OTs (CDH,
//! random-oracle model). The receiver learns n2 and the values of the intersection, in a random
//! order the sender chose (the Waksman switches are the garbler's input), and so the
//! intersection; or, with [`crate::ResultKind::Cardinality`], only its size, or with
//! [`crate::ResultKind::Sum`], only the sum of the sender's values over it. The sender learns
//! n1. Both learn the number of distinct σ-bit values of the other's set.
//!
//! **Message flow** (receiver R = the evaluator with n1 items, sender S = the garbler with n2):
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict        (handshake: n1, n2, κ, λ, σ rule, result)
//! both: σ (PSZ14 App. A) unless set; map items to σ-bit values, keep the distinct ones, sorted
//! S ‖ R: the number of distinct values n_s, n_r                      (MSG_*_SETUP)
//! S → R: the constants' label Z; κ base OTs (R the base-OT sender), IKNP setup
//! S → R: the active labels of S's values (σ planes, n_s lanes; plus 32 planes in a sum)
//! S → R: the active labels of S's Waksman switches (intersection only)
//! R → S: IKNP u columns, S → R: y values   (one correlated OT per bit of R's values)
//! S → R: the garbled tables of every AND gate, streamed in frames of 1 MiB as S garbles:
//!        merge, compare, then shuffle (intersection), adder tree (cardinality, sum)
//! S → R: the output's decoding bits
//! R: intersection: the nonzero output values, mapped back to R's items; cardinality or sum:
//!    the one output value
//! ```
//!
//! **Parameters.** σ as in `circuit_gmw` (`circuit_psi::derived_sigma`, or
//! `RunOptions::sigma` with `allow_weak`); size-optimised comparators (σ AND gates, as PSZ14
//! ran Yao): σ(3n·log2 n + 4n) − n AND gates for n_s = n_r = n (test
//! `size_optimised_gate_counts_match_psz14_app_d1` in `circuit::scs`).
//!
//! **Cost.** 2κ = 256 bits per AND gate (half-gates), against GRR's 3κ in PSZ14 (Tab. 6:
//! 9nκσ·log2 n bits); 128 bits per garbler input bit, 256 per evaluator input bit (u column and
//! y value). The traffic formula counts the exact bytes from the circuit's gate count.
//!
//! **Deviations.**
//! - Half-gates (2 ciphertexts per AND) instead of PSZ14's garbled row reduction (3), and the
//!   TCCR hash instead of PSZ14's fixed-key construction O = AES_C(K) ⊕ K ⊕ T.
//! - The circuit is never built: it is garbled and evaluated as the code that describes it
//!   runs, layer by layer, and the tables are streamed, so memory is the live wires (labels of
//!   the widest layer) and one frame, whatever the number of gates. PSZ14's Yao ran out of
//!   memory at 2^18.
//! - σ, the distinct values, any n1, n2, the output lanes and the added results as in
//!   `circuit_gmw` (its module doc).

mod flow;
mod traffic;

use crate::protocol::{Protocol, Reference, Security, two_party};
use crate::protocols::circuit_gmw::RESULTS;
use crate::protocols::circuit_psi::{self, HEK12};
use crate::protocols::common::{PSI_ROLES, PSZ14};
use crate::{BaseOt, RunOptions};

/// Protocol id in the handshake.
pub const NAME: &str = "circuit_yao";

/// The descriptor of `circuit_yao`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "sort-compare-shuffle circuit garbled with half-gates, tables streamed; intersection, cardinality or sum",
    references: &[
        Reference {
            part: "§7.1, App. A, D.1-D.2; Tab. 5-7 \"Yao [8, 31]\" (half-gates in place of GRR)",
            ..PSZ14
        },
        HEK12,
        Reference {
            tag: "ZRE15",
            authors: "Zahur, Rosulek, Evans",
            title: "Two Halves Make a Whole: Reducing Data Transfer in Garbled Circuits using Half Gates",
            venue: "EUROCRYPT 2015",
            part: "§3, half-gates with free-XOR and point-and-permute",
        },
    ],
    security: Security::SemiHonest,
    assumptions: "half-gates with the TCCR hash on fixed-key AES, IKNP correlated OT on Chou-Orlandi base OTs (CDH), random-oracle hashes",
    roles: PSI_ROLES,
    kappa: &[128],
    params,
    // hello ‖ hello; verdict ‖ verdict; setup ‖ setup; Z and base-OT S; base-OT R_i; S's
    // labels and R's u columns; y values; tables and decoding bits.
    flights: 8,
    flow: &flow::FLOW,
    results: RESULTS,
    traffic: traffic::traffic,
    queries: crate::protocol::announced,
    entry: two_party!(flow::receive, flow::send),
};

/// The handshake parameters: how σ is chosen, the result, the garbling scheme, the base OT.
fn params(o: &RunOptions) -> Vec<(String, String)> {
    vec![
        ("circuit".into(), "hek12-scs/size-optimised".into()),
        ("sigma".into(), circuit_psi::sigma_param(o.sigma)),
        ("result".into(), o.result.name().into()),
        ("garbling".into(), "half-gates/tccr".into()),
        ("ot".into(), "iknp".into()),
        ("base_ot".into(), BaseOt::name(o.base_ot).into()),
    ]
}
