//! blindjoin-core: what every blindjoin protocol stands on.
//!
//! - [`channel`]: the [`Channel`](channel::Channel) trait for length-prefixed frames, with TCP,
//!   TLS, in-memory, metered and transcript-hashing implementations, under the run's time limits;
//! - [`transport`]: opening the connection (TLS, the link hello, a listener that waits for the
//!   right peer);
//! - [`handshake`]: the session handshake that both parties run before any protocol message;
//! - [`finish`]: the confirmation that ends a network run (same bytes seen on both sides, the
//!   receiver's final verdict to the sender);
//! - [`item`]: domain-separated hashing of input records to fixed-width [`Item`](item::Item)s;
//! - [`error`]: the one error type of the library;
//! - [`block`]: the 128-bit [`Block`] of the OT-extension layer and GF(2^128) arithmetic;
//! - [`aes`]: fixed-key AES as a random permutation and the correlation-robust hashes built on it;
//! - [`prg`]: the AES-CTR pseudorandom generator [`AesPrg`](prg::AesPrg) that expands OT seeds;
//! - [`transpose`]: 128×128 and 128×n bit-matrix transposition (IKNP's transpose);
//! - [`sha256x`] and [`prefix_hash`]: two-lane SHA-256 compression, and SHA-256 of fixed-length
//!   messages behind a domain-prefix block (the row hashes of OT extension, CM20's H1 and H2);
//! - [`cache`]: prefetch hints for random-access loops.
//!
//! This crate implements no OT or PSI protocol, only the primitives they share. It never panics on peer input: every length read from
//! the peer is checked against a caller-given bound before anything is allocated.
#![deny(missing_docs)]

pub mod aes;
pub mod blake3x;
pub mod block;
pub mod cache;
pub mod channel;
pub mod error;
pub mod finish;
pub mod handshake;
pub mod item;
pub mod prefix_hash;
pub mod prg;
pub mod sha256x;
pub mod subset_xor;
pub mod transport;
pub mod transpose;

pub use block::Block;
pub use error::{Error, Result};
