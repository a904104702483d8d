//! The protocol descriptor: one [`Protocol`] value per protocol directory, holding everything
//! the rest of the system knows about the protocol (its name, paper, security model, parties,
//! handshake parameters, rounds, message flow, communication formula and entry points).
//!
//! The registry ([`crate::protocols::ALL`]) lists the descriptors once; the CLI (`--protocol`,
//! `--help`, `blindjoin protocols [--json]`), the benchmark and the tests read everything from
//! there. Adding a protocol is its directory (whose `mod.rs` defines `pub static PROTOCOL:
//! Protocol`) plus one line in the registry.

use crate::protocols::server_aided::client::{AidedLinks, ClientOutput};
use crate::{ReceiverOutput, RunOptions, SenderOutput};
use blindjoin_core::channel::Channel;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use rand::CryptoRng;
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A party of a protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Party {
    /// Learns the intersection (P2 in the papers).
    Receiver,
    /// Helps the receiver; learns at most the receiver's set size.
    Sender,
    /// The untrusted server of a server-aided protocol.
    Server,
    /// A client of a server-aided protocol.
    Client,
}

impl fmt::Display for Party {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Party::Receiver => "receiver",
            Party::Sender => "sender",
            Party::Server => "server",
            Party::Client => "client",
        })
    }
}

/// The security model a protocol is proven in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Security {
    /// No privacy at all: a benchmark floor, refused outside benchmarks unless asked for.
    Insecure,
    /// Secure against semi-honest parties (they follow the protocol and analyse what they see).
    SemiHonest,
    /// Secure against a malicious `malicious` party and a semi-honest other party.
    OneSidedMalicious {
        /// The party that may deviate arbitrarily.
        malicious: Party,
    },
    /// Secure against malicious parties.
    Malicious,
    /// Covert: a cheating party is caught with probability at least `deterrence`.
    Covert {
        /// The deterrence factor ε.
        deterrence: f64,
    },
}

impl fmt::Display for Security {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Security::Insecure => f.write_str("INSECURE"),
            Security::SemiHonest => f.write_str("semi-honest"),
            Security::OneSidedMalicious { malicious } => {
                write!(f, "malicious {malicious}, semi-honest otherwise")
            }
            Security::Malicious => f.write_str("malicious"),
            Security::Covert { deterrence } => write!(f, "covert (deterrence {deterrence})"),
        }
    }
}

/// What a run computes for the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultKind {
    /// The intersection, as the indices of the receiver's items (every protocol).
    #[default]
    Intersection,
    /// Only the size of the intersection.
    Cardinality,
    /// Only the sum, over the intersection, of a value the sender holds for each of its items.
    Sum,
}

impl ResultKind {
    /// The name on the command line and in the handshake.
    pub fn name(self) -> &'static str {
        match self {
            ResultKind::Intersection => "intersection",
            ResultKind::Cardinality => "cardinality",
            ResultKind::Sum => "sum",
        }
    }
}

impl fmt::Display for ResultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ResultKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        [
            ResultKind::Intersection,
            ResultKind::Cardinality,
            ResultKind::Sum,
        ]
        .into_iter()
        .find(|r| r.name() == s)
        .ok_or_else(|| Error::InvalidParam {
            field: "result",
            reason: format!(
                "unknown result `{}`; known: intersection, cardinality, sum",
                s.escape_debug()
            ),
        })
    }
}

/// The results of a protocol that computes the intersection only.
pub const ONLY_INTERSECTION: &[ResultKind] = &[ResultKind::Intersection];

/// How many parties play a role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Count {
    /// Exactly one.
    One,
    /// At least this many.
    AtLeast(u32),
    /// Exactly this many (more than one).
    Exactly(u32),
}

/// One role of a protocol: who plays it, how many, and what it learns.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RoleSpec {
    /// The party.
    pub party: Party,
    /// How many parties play it.
    pub count: Count,
    /// What the party learns, besides its own input.
    pub learns: &'static str,
}

/// A paper a protocol follows.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Reference {
    /// The short tag used in comments (e.g. `KKRT16`).
    pub tag: &'static str,
    /// The authors.
    pub authors: &'static str,
    /// The title.
    pub title: &'static str,
    /// Venue and year (e.g. `CCS 2016`).
    pub venue: &'static str,
    /// The part of the paper implemented (sections, figures, tables).
    pub part: &'static str,
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}, \"{}\", {}",
            self.tag, self.part, self.authors, self.title, self.venue
        )
    }
}

/// One message of a protocol's flow after the handshake: its name (as both parties' sends and
/// receives name it) and the party that sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    /// The message's name.
    pub name: &'static str,
    /// The party that sends it.
    pub from: Party,
}

impl Message {
    /// A message the receiver sends.
    pub const fn receiver(name: &'static str) -> Message {
        Message {
            name,
            from: Party::Receiver,
        }
    }

    /// A message the sender sends.
    pub const fn sender(name: &'static str) -> Message {
        Message {
            name,
            from: Party::Sender,
        }
    }
}

/// The inputs of a protocol's communication formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// The receiver's set size n1.
    pub n_recv: u64,
    /// The sender's set size n2.
    pub n_send: u64,
    /// κ in bits.
    pub kappa: u32,
    /// λ in bits.
    pub lambda: u32,
    /// The item length σ a run is given ([`crate::RunOptions::sigma`]; `psz14` and the
    /// circuit protocols), `None` for the one they derive.
    pub sigma: Option<u32>,
}

impl Sizes {
    /// Sizes at κ = 128, λ = 40, σ derived.
    pub fn new(n_recv: u64, n_send: u64) -> Sizes {
        Sizes {
            n_recv,
            n_send,
            kappa: 128,
            lambda: 40,
            sigma: None,
        }
    }
}

/// A two-party receiver: `(channel, items, options, rng)`.
pub type ReceiveFn =
    fn(&mut dyn Channel, &[Item], &RunOptions, &mut dyn CryptoRng) -> Result<ReceiverOutput>;

/// A two-party sender: `(channel, items, options, rng)`.
pub type SendFn =
    fn(&mut dyn Channel, &[Item], &RunOptions, &mut dyn CryptoRng) -> Result<SenderOutput>;

/// A server-aided client: `(links, items, options, rng)`.
pub type ClientFn =
    fn(&mut AidedLinks<'_>, &[Item], &RunOptions, &mut dyn CryptoRng) -> Result<ClientOutput>;

/// How a protocol's roles are run.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Entry {
    /// A receiver and a sender over one channel.
    TwoParty {
        /// Runs the receiver.
        receive: ReceiveFn,
        /// Runs the sender.
        send: SendFn,
    },
    /// n clients, each with a link to the server and to the other clients; the server is
    /// `protocols::server_aided::server`, common to these protocols.
    ServerAided {
        /// Runs a client.
        client: ClientFn,
    },
}

/// The [`Entry::TwoParty`] of a protocol whose roles are `fn(ch, items, opts, rng)` generic over
/// the channel and the RNG: `two_party!(receiver::receive, sender::send)`.
macro_rules! two_party {
    ($receive:path, $send:path) => {
        $crate::protocol::Entry::TwoParty {
            receive: |ch, items, opts, mut rng| $receive(ch, items, opts, &mut rng),
            send: |ch, items, opts, mut rng| $send(ch, items, opts, &mut rng),
        }
    };
}
pub(crate) use two_party;

/// Bytes per message name, framing included (the output of [`Protocol::traffic`]).
pub type Traffic = Vec<(&'static str, u64)>;

/// A protocol of the suite: the descriptor every protocol directory exports as `PROTOCOL`.
#[derive(Serialize)]
pub struct Protocol {
    /// The protocol id: its name on the command line and in the handshake.
    pub name: &'static str,
    /// What the protocol does, in one line.
    pub summary: &'static str,
    /// The papers it follows, the main one first.
    pub references: &'static [Reference],
    /// The security model.
    pub security: Security,
    /// The assumptions and the model's details, in one line.
    pub assumptions: &'static str,
    /// The parties and what each learns.
    pub roles: &'static [RoleSpec],
    /// The values of κ the protocol provides.
    pub kappa: &'static [u32],
    /// The protocol's own handshake parameters for the run's options (κ, λ, the base OT): the
    /// rules from which both parties derive the run's parameters; any difference ends the
    /// handshake naming the field.
    #[serde(rename = "params", serialize_with = "default_params")]
    pub params: fn(&RunOptions) -> Vec<(String, String)>,
    /// Communication rounds: message flights on the critical path, counting the handshake's
    /// simultaneous hello exchange and verdict exchange as one each, and messages the two
    /// parties send at the same time once.
    pub flights: u32,
    /// The messages after the handshake, in the order they first appear.
    pub flow: &'static [Message],
    /// The results the protocol can compute (the intersection first).
    pub results: &'static [ResultKind],
    /// The bytes of every message of the flow for the given sizes (with the Chou-Orlandi
    /// base OT where the protocol runs base OTs), framing included; `Err` for sizes the
    /// protocol refuses. Tests compare it with the metered traffic of real runs.
    #[serde(skip)]
    pub traffic: fn(&Sizes) -> Result<Traffic>,
    /// The most items a receiver that announced `n_recv` items can test against the sender's
    /// set in one run if it deviates: `n_recv` ([`announced`]) where the protocol holds it to
    /// its announced set, more where its bound has slack (`rr17a`'s filter, the dual-execution
    /// protocols' empty slots). A sender's [`RunOptions::max_peer_set_size`](crate::RunOptions)
    /// bounds it. Protocols whose deviating receiver can test any key offline (`gbf`, `rgbf`,
    /// `cm20`, `cm20_mal`, `naive`) have no such bound (docs/SECURITY.md); theirs is the
    /// announced size, what an honest receiver tests.
    #[serde(skip)]
    pub queries: fn(&Sizes) -> Result<u64>,
    /// How the roles are run.
    #[serde(skip)]
    pub entry: Entry,
}

/// [`Protocol::queries`] of a protocol that holds the receiver to its announced set.
pub fn announced(s: &Sizes) -> Result<u64> {
    Ok(s.n_recv)
}

/// The handshake parameters with the default options, as a JSON object.
fn default_params<S: Serializer>(
    f: &fn(&RunOptions) -> Vec<(String, String)>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_map(f(&RunOptions::default()))
}

impl fmt::Debug for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Protocol")
            .field("name", &self.name)
            .field("security", &self.security)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Protocol {
    fn eq(&self, other: &Protocol) -> bool {
        self.name == other.name
    }
}

impl Eq for Protocol {}

impl Protocol {
    /// The registered protocol called `name`.
    pub fn named(name: &str) -> Result<&'static Protocol> {
        crate::protocols::ALL
            .iter()
            .copied()
            .find(|p| p.name == name)
            .ok_or_else(|| Error::InvalidParam {
                field: "protocol",
                reason: format!(
                    "unknown protocol `{}`; known: {}",
                    name.escape_debug(),
                    crate::protocols::ALL
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    }

    /// Whether the protocol leaks the sender's set and must be asked for explicitly.
    pub fn is_insecure(&self) -> bool {
        self.security == Security::Insecure
    }

    /// Whether the protocol runs as a receiver and a sender (`send` / `receive`).
    pub fn is_two_party(&self) -> bool {
        matches!(self.entry, Entry::TwoParty { .. })
    }

    /// The messages `party` sends after the handshake.
    pub fn messages_from(&self, party: Party) -> impl Iterator<Item = &'static str> + '_ {
        self.flow
            .iter()
            .filter(move |m| m.from == party)
            .map(|m| m.name)
    }

    /// Runs the receiver with `items` (distinct) on `ch`.
    pub fn receive(
        &self,
        ch: &mut dyn Channel,
        items: &[Item],
        opts: &RunOptions,
        rng: &mut dyn CryptoRng,
    ) -> Result<ReceiverOutput> {
        match self.entry {
            Entry::TwoParty { receive, .. } => receive(ch, items, opts, rng),
            Entry::ServerAided { .. } => Err(self.not_two_party()),
        }
    }

    /// Runs the sender with `items` (distinct) on `ch`.
    pub fn send(
        &self,
        ch: &mut dyn Channel,
        items: &[Item],
        opts: &RunOptions,
        rng: &mut dyn CryptoRng,
    ) -> Result<SenderOutput> {
        match self.entry {
            Entry::TwoParty { send, .. } => send(ch, items, opts, rng),
            Entry::ServerAided { .. } => Err(self.not_two_party()),
        }
    }

    /// Runs a client of a server-aided protocol with `items` (distinct) on `links`.
    pub fn client(
        &self,
        links: &mut AidedLinks<'_>,
        items: &[Item],
        opts: &RunOptions,
        rng: &mut dyn CryptoRng,
    ) -> Result<ClientOutput> {
        match self.entry {
            Entry::ServerAided { client } => client(links, items, opts, rng),
            Entry::TwoParty { .. } => Err(Error::InvalidParam {
                field: "protocol",
                reason: format!(
                    "{} is a two-party protocol: run it with `send` and `receive`",
                    self.name
                ),
            }),
        }
    }

    fn not_two_party(&self) -> Error {
        Error::InvalidParam {
            field: "protocol",
            reason: format!(
                "{} is server-aided: run its clients with `blindjoin aided` and a `blindjoin \
                 server`",
                self.name
            ),
        }
    }
}

impl FromStr for &'static Protocol {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Protocol::named(s)
    }
}
