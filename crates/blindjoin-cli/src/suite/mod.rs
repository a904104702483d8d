//! `blindjoin bench --suite NAME`: a paper's table re-measured with our protocols.
//!
//! A suite is a list of the paper's figures ([`PaperRow`]): a protocol of ours, the setting
//! the paper measured it in (set sizes, network, threads, κ, σ) and the paper's runtime and
//! communication there. The runner measures each setting with `bench`'s machinery (two party
//! processes, the exact result checked), smallest sets first, skipping what would not fit the
//! `--budget`, and writes `bench/out/<suite>/` with JSON, a Markdown table of the paper's
//! figure beside ours with their ratio, and plots.

pub mod plot;
pub mod run;
pub mod tables;

/// How a paper counts bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Unit {
    /// 2^20 bytes (PSZ14 writes MB and means MiB, its Pitfall 7.B).
    MiB,
    /// 10^6 bytes.
    MB,
}

/// One figure of a paper's table: how the paper measured one of our protocols, and what it
/// got.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PaperRow {
    /// Our protocol that reproduces the row (a name in `blindjoin_psi::protocols::ALL`).
    pub protocol: &'static str,
    /// The paper's name of the row, verbatim.
    pub label: &'static str,
    /// The receiver's set size.
    pub n_recv: u64,
    /// The sender's set size.
    pub n_send: u64,
    /// The network the paper measured on: a profile of `crate::netem::PROFILES`, or `None`
    /// for a LAN faster than any profile (run on plain loopback).
    pub network: Option<&'static str>,
    /// Threads per party.
    pub threads: usize,
    /// κ in bits.
    pub kappa: u32,
    /// The item length σ of the paper's circuit and short-domain runs (PSZ14: 32), `None` for
    /// ours derived from n and λ.
    pub sigma: Option<u32>,
    /// The paper's runtime in seconds (`None`: the paper gives none, e.g. out of memory).
    pub seconds: Option<f64>,
    /// The paper's communication, both directions, in `unit` (`None`: not given).
    pub bytes: Option<f64>,
    /// The unit of `bytes`.
    pub unit: Unit,
    /// For a server-aided protocol (KMRS14): the server's store and whether the row is the
    /// plaintext baseline. `bytes` is then one client's (to and from the server), as KMRS14
    /// reports it.
    pub aided: Option<Aided>,
}

/// How a server-aided row runs: two clients and a `blindjoin server`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Aided {
    /// The server's store.
    pub store: Store,
    /// The plaintext server-aided intersection (raw elements through the same server) rather
    /// than the protocol.
    pub plaintext: bool,
}

/// A server store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Store {
    /// The server's own memory.
    Memory,
    /// A `redis-server` the suite starts on a free loopback port.
    Redis,
}

impl PaperRow {
    /// The row's series in plots and its name in the table: the protocol, or `plaintext` for
    /// a server-aided baseline row.
    pub fn series(&self) -> &'static str {
        match self.aided {
            Some(Aided {
                plaintext: true, ..
            }) => "plaintext",
            _ => self.protocol,
        }
    }
}

/// A paper's table as a suite.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Suite {
    /// The suite's name on the command line (`psz-tab7`).
    pub name: &'static str,
    /// The paper and table, e.g. "PSZ14 Tab. 7 (USENIX Security 2014)".
    pub source: &'static str,
    /// What the table measures and how the paper measured it (machine, network), one or two
    /// sentences from the paper or its note.
    pub setting: &'static str,
    /// The rows, in the paper's order.
    pub rows: &'static [PaperRow],
}
