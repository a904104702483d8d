//! Base OT and OT extension over in-memory channels, in one test binary: one module per
//! primitive.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod base_ot;
mod ext;
mod ideal_base_ot;
mod kk13;
mod kkrt;
mod oos;
mod zeroize;
