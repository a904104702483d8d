//! One module per protocol, named by its paper tag.

pub mod cm20;
pub mod ecdh;
pub mod kkrt16;
pub mod naive;
pub mod psz14;

pub(crate) mod common;
