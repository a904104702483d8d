//! blindjoin-ot: oblivious transfer, the layer under the fast PSI protocols.
//!
//! - [`base`]: base OT on Ristretto255 (and, with the test-only `ideal-base-ot` feature, an
//!   insecure ideal-functionality base OT that lets tests skip the public-key work);
//! - [`ext`]: IKNP/ALSZ random, correlated and chosen-message OT extension, KOS, KK13
//!   1-out-of-N OT and the KKRT16 batched OPRF;
//! - [`traffic`]: the bytes each of them puts on the wire, as functions of their sizes.
//!
//! Every role is generic over the channel and the RNG. An extension is created only by its
//! `setup`, which runs the base OTs with the base OT it is given and returns the ready
//! extension, so extending before setup does not compile. Every base-OT key, every extension's
//! correlation Δ and every buffer of secret rows is wiped when dropped (`zeroize`).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod base;
pub mod ext;
pub mod traffic;
