//! One module per protocol, named by its paper tag.

pub mod cm20;
pub mod ecdh;
pub mod kkrt16;
pub mod naive;

pub(crate) mod common;
