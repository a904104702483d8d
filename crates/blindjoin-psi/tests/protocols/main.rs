//! The protocols end to end over in-memory channels, in one test binary: `registry` runs every
//! registered protocol through its descriptor; one module per protocol runs its exact-index
//! suite and its own attacks; `common` holds what they share.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cm20;
mod common;
mod ecdh;
mod gbf;
mod kkrt16;
mod naive;
mod psz14;
mod registry;
mod rgbf;
mod server_aided;
