//! The protocols end to end over in-memory channels, in one test binary: `registry` runs every
//! registered protocol through its descriptor; one module per protocol runs its exact-index
//! suite and its own attacks; `common` holds what they share; `redis_store` runs the
//! server-aided server's Redis store against a `redis-server` of its own.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod circuit_gmw;
mod cm20;
mod cm20_mal;
mod common;
mod dh_ffc;
mod dkt10;
mod ecdh;
mod ecdh_nist;
mod gbf;
mod kkrt16;
mod naive;
mod psz14;
#[cfg(feature = "redis-store")]
mod redis_store;
mod registry;
mod rgbf;
mod rr17_de;
mod rr17_ec;
mod rr17a;
mod rsa_blind;
mod server_aided;
