//! The protocol registry: every protocol the CLI and the benchmarks can run.

use crate::protocols::{cm20, ecdh, kkrt16, naive, psz14};
use crate::{ReceiverOutput, RunOptions, SenderOutput};
use blindjoin_core::channel::Channel;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use rand::CryptoRng;
use std::fmt;
use std::str::FromStr;

/// A protocol of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Protocol {
    /// Hash-and-compare; insecure, a benchmark floor ([`naive`]).
    Naive,
    /// Diffie-Hellman PSI on Ristretto255, semi-honest ([`ecdh`]).
    Ecdh,
    /// KKRT16 OPRF PSI with 3-way Cuckoo hashing, semi-honest ([`kkrt16`]).
    Kkrt16,
    /// PSZ14 OT-based set-inclusion PSI with Cuckoo hashing and a stash, semi-honest
    /// ([`psz14`]).
    Psz14,
    /// CM20 multi-point OPRF PSI, semi-honest ([`cm20`]).
    Cm20,
}

impl Protocol {
    /// Every protocol, in the order the CLI lists them.
    pub const ALL: &'static [Protocol] = &[
        Protocol::Kkrt16,
        Protocol::Cm20,
        Protocol::Psz14,
        Protocol::Ecdh,
        Protocol::Naive,
    ];

    /// The protocol id (also the name on the command line).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Naive => naive::NAME,
            Protocol::Ecdh => ecdh::NAME,
            Protocol::Kkrt16 => kkrt16::NAME,
            Protocol::Psz14 => psz14::NAME,
            Protocol::Cm20 => cm20::NAME,
        }
    }

    /// The security model in one line.
    pub fn security(self) -> &'static str {
        match self {
            Protocol::Naive => {
                "INSECURE: the receiver can test any guess against the sender's hashes (benchmark floor)"
            }
            Protocol::Ecdh => {
                "semi-honest, DDH on Ristretto255 in the random-oracle model; the sender learns only the receiver's set size"
            }
            Protocol::Kkrt16 => {
                "semi-honest, OT extension (CO15 base OTs, CDH) and a random-oracle hash; the sender learns only the receiver's set size"
            }
            Protocol::Psz14 => {
                "semi-honest, KK13 1-out-of-256 OT extension (CO15 base OTs, CDH) and random-oracle hashes; the sender learns only the receiver's set size"
            }
            Protocol::Cm20 => {
                "semi-honest (CM20's one-sided malicious variant not claimed), CO15 base OTs (CDH), AES as a PRF and random-oracle hashes; the sender learns only the receiver's set size"
            }
        }
    }

    /// The paper and section the protocol follows.
    pub fn reference(self) -> &'static str {
        match self {
            Protocol::Naive => "PSZ14 §1.1 (naive hashing)",
            Protocol::Ecdh => "PSZ14 §3, Tab. 5-7 \"DH-based ECC\" (Meadows86, HFH99)",
            Protocol::Kkrt16 => "KKRT16 §5 (batched OPRF PSI); CM20 §1.2",
            Protocol::Psz14 => {
                "PSZ14 §5-6, Tab. 4 \"Cuckoo Hashing\", Tab. 5-6 \"Set Inclusion §5 + Hashing §6\""
            }
            Protocol::Cm20 => "CM20 §3 Fig. 3 with Fig. 4 (multi-point OPRF PSI), §3.3, §4.2",
        }
    }

    /// Communication rounds: message flights on the critical path, the handshake's simultaneous
    /// hello exchange and verdict exchange counted as one each. Messages that the two parties send at the same time (as
    /// `ecdh`'s two streams of points) count once.
    pub fn flights(self) -> u32 {
        match self {
            // hello ‖ hello; verdict ‖ verdict; sender's hashes.
            Protocol::Naive => 3,
            // hello ‖ hello; verdict ‖ verdict; A_i ‖ B_j; tags of A_i^b.
            Protocol::Ecdh => 4,
            // hello ‖ hello; verdict ‖ verdict; bins + base-OT S; base-OT R_i; u columns;
            // tags.
            Protocol::Kkrt16 => 6,
            // hello ‖ hello; verdict ‖ verdict; table parameters + base-OT S; base-OT R_i;
            // u columns; masks.
            Protocol::Psz14 => 6,
            // hello ‖ hello; verdict ‖ verdict; setup + base-OT S; base-OT R_j; PRF key + Δ
            // columns; OPRF values.
            Protocol::Cm20 => 6,
        }
    }

    /// Whether the protocol leaks the sender's set and must be asked for explicitly.
    pub fn is_insecure(self) -> bool {
        matches!(self, Protocol::Naive)
    }

    /// Runs the receiver.
    pub fn receive<C: Channel + ?Sized>(
        self,
        ch: &mut C,
        items: &[Item],
        opts: &RunOptions,
        rng: &mut impl CryptoRng,
    ) -> Result<ReceiverOutput> {
        match self {
            Protocol::Naive => naive::receive(ch, items, opts, rng),
            Protocol::Ecdh => ecdh::receive(ch, items, opts, rng),
            Protocol::Kkrt16 => kkrt16::receive(ch, items, opts, rng),
            Protocol::Psz14 => psz14::receive(ch, items, opts, rng),
            Protocol::Cm20 => cm20::receive(ch, items, opts, rng),
        }
    }

    /// Runs the sender.
    pub fn send<C: Channel + ?Sized>(
        self,
        ch: &mut C,
        items: &[Item],
        opts: &RunOptions,
        rng: &mut impl CryptoRng,
    ) -> Result<SenderOutput> {
        match self {
            Protocol::Naive => naive::send(ch, items, opts, rng),
            Protocol::Ecdh => ecdh::send(ch, items, opts, rng),
            Protocol::Kkrt16 => kkrt16::send(ch, items, opts, rng),
            Protocol::Psz14 => psz14::send(ch, items, opts, rng),
            Protocol::Cm20 => cm20::send(ch, items, opts, rng),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Protocol {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Protocol::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| Error::InvalidParam {
                field: "protocol",
                reason: format!(
                    "unknown protocol `{s}`; known: {}",
                    Protocol::ALL
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }
}
