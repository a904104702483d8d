//! blindjoin-psi: the private set intersection protocols of blindjoin.
//!
//! Every protocol lives in its own directory under [`protocols`], named by its paper tag, with a
//! module doc that names the paper, section and figure it implements, its security model, its
//! message flow and every deviation. [`Protocol`] is the registry the CLI and the benchmarks use.
//!
//! Roles are *sender* and *receiver*; the receiver learns the intersection, as the sorted indices
//! of its own items ([`ReceiverOutput::indices`]). Both roles take `(channel, items, options,
//! rng)`, start with the session handshake of `blindjoin_core::handshake`, and check every length
//! the peer sends against the sizes agreed there.
#![deny(missing_docs)]

pub mod hashing;
pub mod params;
pub mod protocols;
mod registry;
mod run;

pub use registry::Protocol;
pub use run::{Phases, Progress, ReceiverOutput, RunOptions, SenderOutput};
