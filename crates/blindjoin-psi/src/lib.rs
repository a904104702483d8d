//! blindjoin-psi: the private set intersection protocols of blindjoin.
//!
//! Every protocol lives in its own directory under [`protocols`], named by its paper tag, with a
//! module doc that names the paper, section and figure it implements, its security model, its
//! message flow and every deviation, and one descriptor, `PROTOCOL` ([`Protocol`]), that the
//! registry ([`protocols::ALL`]) lists and the CLI and the benchmarks read.
//!
//! Roles are *sender* and *receiver*; the receiver learns the intersection, as the sorted indices
//! of its own items ([`ReceiverOutput::indices`]). Both roles take `(channel, items, options,
//! rng)`, open with one prologue (`run::Run::start`: security parameters, the session
//! handshake of `blindjoin_core::handshake`), and check every length the peer sends against the
//! sizes agreed there.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod circuit;
pub mod hashing;
pub mod params;
pub mod protocol;
pub mod protocols;
mod run;

pub use protocol::{Party, Protocol, ResultKind, Security};
pub use run::{
    Aggregate, BaseOt, DEFAULT_MEMORY_BUDGET, MAX_LAMBDA, MIN_LAMBDA, Phases, Progress,
    ReceiverOutput, RunOptions, SenderOutput, check_security,
};
