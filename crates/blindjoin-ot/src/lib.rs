//! blindjoin-ot: oblivious transfer, the layer under the fast PSI protocols.
//!
//! - [`base`]: base OT on Ristretto255;
//! - [`ext`]: IKNP/ALSZ random, correlated and chosen-message OT extension, KOS, KK13
//!   1-out-of-N OT and the KKRT16 batched OPRF;
//! - [`traffic`]: the bytes each of them puts on the wire, as functions of their sizes.
//!
//! Every role is generic over the channel and the RNG; extensions are generic over their base OT.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod base;
pub mod ext;
pub mod traffic;
