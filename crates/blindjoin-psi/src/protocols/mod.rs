//! One module per protocol, named by its paper tag, and the registry that lists them.
//!
//! Adding a protocol: a directory here whose `mod.rs` documents the protocol and defines
//! `pub static PROTOCOL: Protocol`, plus its name in the `registry!` list below.

/// Declares each protocol module and lists its descriptor in [`ALL`], in the given order.
/// Server-aided protocols, which share one directory, follow after `;`.
macro_rules! registry {
    ($($name:ident),* ; $($aided:ident),* $(,)?) => {
        $(pub mod $name;)*

        /// Every protocol, in the order the CLI lists them.
        pub static ALL: &[&crate::protocol::Protocol] =
            &[$(&$name::PROTOCOL,)* $(&server_aided::$aided::PROTOCOL),*];
    };
}

registry! {
    kkrt16,
    cm20,
    cm20_mal,
    psz14,
    rgbf,
    gbf,
    rr17a,
    rr17_de,
    rr17_ec,
    dkt10,
    circuit_gmw,
    circuit_gmw_scalar,
    circuit_yao,
    ecdh,
    ecdh_nist,
    dh_ffc,
    rsa_blind,
    naive;
    kmrs_semi,
    kmrs_mal,
    kmrs_fair,
    kmrs_size,
}

pub mod circuit_psi;
pub mod server_aided;

pub(crate) mod common;
pub(crate) mod dh_psi;
pub(crate) mod filters;
