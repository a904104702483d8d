//! blindjoin-core: what every blindjoin protocol stands on.
//!
//! - [`channel`]: the [`Channel`](channel::Channel) trait for length-prefixed frames, with TCP,
//!   in-memory and metered implementations;
//! - [`handshake`]: the session handshake that both parties run before any protocol message;
//! - [`item`]: domain-separated hashing of input records to fixed-width [`Item`](item::Item)s;
//! - [`error`]: the one error type of the library.
//!
//! This crate knows nothing of OT or PSI. It never panics on peer input: every length read from
//! the peer is checked against a caller-given bound before anything is allocated.
#![deny(missing_docs)]

pub mod channel;
pub mod error;
pub mod handshake;
pub mod item;

pub use error::{Error, Result};
