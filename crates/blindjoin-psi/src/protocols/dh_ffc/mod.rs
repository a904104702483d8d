//! `dh_ffc`: Diffie-Hellman-based PSI over finite fields (semi-honest).

pub(crate) mod group;
