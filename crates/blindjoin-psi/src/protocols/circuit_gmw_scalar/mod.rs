//! `circuit_gmw_scalar`: `circuit_gmw` with a scalar multiplication triple for every AND gate,
//! the multiplexers' too: the plain GMW that PSZ14 measures as "GMW \[1\]" in Tab. 5-6, against
//! which its vector multiplication triples (§3.2) save about 40 % of the time at 2^18.
//!
//! Everything else (paper, security model, flow, parameters, deviations) is `circuit_gmw`'s
//! (its module doc); only the triples differ: a multiplexer of σ AND gates takes σ scalar
//! triples (2σ random OTs of one bit) and opens 2σ bits each way, where `circuit_gmw` takes one
//! vector triple (two random OTs of σ bits) and opens 1 + σ bits. PSZ14 Tab. 6 puts the
//! communication at 10nκσ·log2 n bits against 6nκσ·log2 n.

use crate::RunOptions;
use crate::protocol::{Protocol, Reference, Security, two_party};
use crate::protocols::circuit_gmw::{self, FLIGHTS, FLOW_SCALAR, RESULTS, Triples};
use crate::protocols::circuit_psi::HEK12;
use crate::protocols::common::{PSI_ROLES, PSZ14};
use blindjoin_core::Result;
use blindjoin_core::channel::Channel;
use blindjoin_core::item::Item;
use rand::CryptoRng;

/// Protocol id in the handshake.
pub const NAME: &str = "circuit_gmw_scalar";

/// The descriptor of `circuit_gmw_scalar`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "sort-compare-shuffle circuit under plain GMW (a scalar triple per AND gate): PSZ14's baseline for vector triples",
    references: &[
        Reference {
            part: "§3.1, App. A, D.1-D.2; Tab. 5-6 \"GMW [1]\"",
            ..PSZ14
        },
        HEK12,
    ],
    security: Security::SemiHonest,
    assumptions: "IKNP/ALSZ random OT on Chou-Orlandi base OTs (CDH), random-oracle hashes",
    roles: PSI_ROLES,
    kappa: &[128],
    params: |o| circuit_gmw::params(o, Triples::Scalar),
    flights: FLIGHTS,
    flow: FLOW_SCALAR,
    results: RESULTS,
    traffic: |s| circuit_gmw::traffic(s, Triples::Scalar),
    queries: crate::protocol::announced,
    entry: two_party!(receive, send),
};

fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<crate::ReceiverOutput> {
    circuit_gmw::receive_with(&PROTOCOL, Triples::Scalar, ch, items, opts, rng)
}

fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<crate::SenderOutput> {
    circuit_gmw::send_with(&PROTOCOL, Triples::Scalar, ch, items, opts, rng)
}
