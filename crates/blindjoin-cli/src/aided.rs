//! `blindjoin aided`: one client of a server-aided run (KMRS14). It reads its keys while it
//! connects to the server and to the other clients (party 1 listens for them, the others
//! connect to party 1), runs the protocol's client, and writes its own matched rows, atomically,
//! as `receive` does.

use crate::cli::{KeyOpts, OutputOpts, SecurityOpts, parse_count};
use crate::error::{CliError, CliResult};
use crate::input::{Input, InputSpec, read_input};
use crate::link::{TlsChoice, parse_duration};
use crate::output::{check_output, check_output_spec, prepare_output};
use crate::party::{default_max_peer_size, write_json};
use crate::progress::Bars;
use crate::report::{human_bytes, peak_rss_bytes};
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::metered::{Metered, Traffic};
use blindjoin_core::channel::tls::{self, Fingerprint, PeerCheck};
use blindjoin_core::transport::{self, Link, LinkConfig};
use blindjoin_psi::Protocol;
use blindjoin_psi::protocols::server_aided::client::{AidedLinks, ClientOutput, Peers};
use blindjoin_psi::protocols::server_aided::external::{External, SliceSource, run_semi_external};
use blindjoin_psi::protocols::server_aided::wire::MAX_RUN_ID;
use clap::Args;
use serde::Serialize;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `blindjoin aided`: one client of a server-aided run.
#[derive(Debug, Args)]
pub struct AidedArgs {
    /// The server (`blindjoin server`) every client of the run connects to.
    #[arg(long, value_name = "ADDR")]
    pub server: String,
    /// The run's id, the same for every client of the run (e.g. a date and a dataset name).
    #[arg(long, value_name = "ID")]
    pub run: String,
    /// This client's party index, 1 to --of; party 1 listens for the others (--peers-listen).
    #[arg(long, value_name = "I")]
    pub party: u32,
    /// The number of clients of the run.
    #[arg(long, value_name = "N")]
    pub of: u32,
    /// The server-aided protocol (every client must choose the same).
    #[arg(long, short, default_value = "kmrs_semi")]
    pub protocol: &'static Protocol,
    /// Party 1: listen here for the other clients (the direct links that carry the run's key).
    #[arg(long, value_name = "ADDR", conflicts_with = "peer")]
    pub peers_listen: Option<String>,
    /// Parties 2 to N: party 1's --peers-listen address.
    #[arg(long, value_name = "ADDR")]
    pub peer: Option<String>,
    /// The input and its keys.
    #[command(flatten)]
    pub keys: KeyOpts,
    /// The matched rows.
    #[command(flatten)]
    pub output: OutputOpts,
    /// κ and λ.
    #[command(flatten)]
    pub security: SecurityOpts,
    /// kmrs_semi: sort the labels on disk under DIR (a fresh directory per run, removed
    /// afterwards) instead of in memory: (ℓ + 4) bytes per key of disk, one bucket of
    /// --bucket-labels labels in memory.
    #[arg(long, value_name = "DIR")]
    pub sort_dir: Option<PathBuf>,
    /// With --sort-dir: the most labels sorted in memory at once (32 bytes each).
    #[arg(long, value_name = "N", default_value = "2^25", value_parser = parse_count, requires = "sort_dir")]
    pub bucket_labels: u64,
    /// kmrs_mal, kmrs_fair, kmrs_size: copies of each element (KMRS14's λ; every client the
    /// same).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub copies: u32,
    /// kmrs_mal, kmrs_fair, kmrs_size: labels in each dummy set (KMRS14's t; every client the
    /// same).
    #[arg(long, value_name = "N", default_value = "2^20", value_parser = parse_count)]
    pub dummies: u64,
    /// kmrs_mal, kmrs_fair, kmrs_size: accept --copies and --dummies that catch a cheating server with probability
    /// below 1 − 2^-λ (covert security: e.g. --copies 2 --dummies 2 catches it with
    /// probability 1/2).
    #[arg(long)]
    pub covert: bool,
    /// Our certificate (PEM), from `blindjoin keygen`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Our private key (PEM), from `blindjoin keygen`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Accept only the server with this certificate fingerprint (sha256:HEX).
    #[arg(long, value_name = "sha256:HEX", conflicts_with = "server_ca")]
    pub server_fingerprint: Option<Fingerprint>,
    /// Accept a server whose certificate this CA (PEM) issued for --server-name (needs it; no
    /// revocation is checked).
    #[arg(long, value_name = "FILE", requires = "server_name")]
    pub server_ca: Option<PathBuf>,
    /// With --server-ca: the DNS name the server's certificate must carry.
    #[arg(long, value_name = "NAME", requires = "server_ca")]
    pub server_name: Option<String>,
    /// Accept only clients with these certificate fingerprints. Party 1: one per other client,
    /// each with the party index it plays (`2=sha256:HEX,3=sha256:HEX`; the index may be left
    /// out with 2 clients); repeat the option or separate by commas. Parties 2 to N: party 1's
    /// (`sha256:HEX` or `1=sha256:HEX`).
    #[arg(
        long,
        value_name = "[I=]sha256:HEX",
        value_delimiter = ',',
        conflicts_with = "peer_ca"
    )]
    pub peer_fingerprint: Vec<PeerPin>,
    /// Accept clients whose certificates this CA (PEM) issued for the names of --peer-name
    /// (needs it; no revocation is checked).
    #[arg(long, value_name = "FILE", requires = "peer_name")]
    pub peer_ca: Option<PathBuf>,
    /// With --peer-ca: the DNS name each other client's certificate must carry. Party 1: one per
    /// other client with the party index it plays (`2=b.example,3=c.example`; the index may be
    /// left out with 2 clients). Parties 2 to N: party 1's name.
    #[arg(
        long,
        value_name = "[I=]NAME",
        value_delimiter = ',',
        requires = "peer_ca"
    )]
    pub peer_name: Vec<String>,
    /// Use plain TCP (no TLS) on non-loopback addresses.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key", "server_fingerprint", "server_ca", "server_name", "peer_fingerprint", "peer_ca", "peer_name"])]
    pub plaintext: bool,
    /// The whole run (waiting for the other clients and the server included) must end within
    /// this time.
    #[arg(long, value_name = "DURATION", default_value = "2h", value_parser = parse_duration)]
    pub deadline: Duration,
    /// End the run when no data has moved for this long.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// Refuse a run where another client announces more distinct keys than this [default:
    /// max(2^20, 4 × ours)]; a client may test as many guessed keys as it announces.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub max_peer_size: Option<u64>,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write a JSON run report to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// A pinned client certificate, with the party index it plays if given (`2=sha256:HEX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerPin {
    /// The party index bound to the certificate.
    pub party: Option<u32>,
    /// The certificate's fingerprint.
    pub fingerprint: Fingerprint,
}

impl std::str::FromStr for PeerPin {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once('=') {
            Some((i, fp)) => {
                let party = i
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&i| i >= 1)
                    .ok_or_else(|| {
                        format!(
                            "`{}` is not a party index (write I=sha256:HEX, I from 1)",
                            blindjoin_core::error::peer_text(i)
                        )
                    })?;
                Ok(PeerPin {
                    party: Some(party),
                    fingerprint: fp.parse()?,
                })
            }
            None => Ok(PeerPin {
                party: None,
                fingerprint: s.parse()?,
            }),
        }
    }
}

/// The report of one client's run (`--json`).
#[derive(Debug, Serialize)]
pub struct AidedReport {
    /// The protocol.
    pub protocol: &'static str,
    /// The run id.
    pub run: String,
    /// This client's party index.
    pub party: u32,
    /// The number of clients.
    pub parties: u32,
    /// Every client's number of distinct keys, party 1 first.
    pub set_sizes: Vec<u64>,
    /// Rows of the input.
    pub rows: u64,
    /// Distinct keys of ours in every client's set.
    pub matched_keys: u64,
    /// Rows with those keys.
    pub matched_rows: u64,
    /// Where they were written.
    pub output: Option<String>,
    /// Bytes per label.
    pub label_len: usize,
    /// Traffic with the server.
    pub server_traffic: Traffic,
    /// Seconds per phase.
    pub phases: Vec<(String, f64)>,
    /// Seconds from start to output.
    pub wall_seconds: f64,
    /// Peak resident memory of this process.
    pub peak_rss_bytes: u64,
}

/// The links this client opens: to the server, and to the other clients.
struct Connections {
    server: Link,
    peers: Vec<Link>,
}

impl AidedArgs {
    fn check(&self) -> CliResult<()> {
        if self.protocol.is_two_party() {
            return Err(CliError::Usage(format!(
                "protocol `{}` is a two-party protocol: run it with `send` and `receive`",
                self.protocol
            )));
        }
        if self.of < 2 || self.party == 0 || self.party > self.of {
            return Err(CliError::Usage(format!(
                "--party {} --of {}: a run has at least 2 clients, numbered 1 to --of",
                self.party, self.of
            )));
        }
        let clients = self
            .protocol
            .roles
            .iter()
            .find(|r| r.party == blindjoin_psi::Party::Client)
            .map(|r| r.count);
        if self.sort_dir.is_some() && self.protocol.name != "kmrs_semi" {
            return Err(CliError::Usage(format!(
                "--sort-dir sorts kmrs_semi's labels on disk; protocol `{}` sorts in memory",
                self.protocol
            )));
        }
        if let Some(blindjoin_psi::protocol::Count::Exactly(k)) = clients
            && self.of != k
        {
            return Err(CliError::Usage(format!(
                "--of {}: protocol `{}` runs with exactly {k} clients",
                self.of, self.protocol
            )));
        }
        match (self.party, &self.peers_listen, &self.peer) {
            (1, Some(_), None) => {}
            (1, _, _) => {
                return Err(CliError::Usage(
                    "party 1 listens for the other clients: give --peers-listen ADDR".into(),
                ));
            }
            (_, None, Some(_)) => {}
            (i, _, _) => {
                return Err(CliError::Usage(format!(
                    "party {i} connects to party 1: give --peer ADDR (party 1's --peers-listen)"
                )));
            }
        }
        self.slots()?;
        self.names()?;
        if self.run.is_empty()
            || self.run.len() > MAX_RUN_ID
            || !self.run.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(CliError::Usage(format!(
                "--run must be 1 to {MAX_RUN_ID} printable ASCII characters without spaces"
            )));
        }
        self.keys.check_columns()
    }

    /// Party 1: the party index bound to each pinned client certificate. With 2 clients an
    /// unindexed pin is party 2's; with more, every pin needs its index, each index from 2 to N
    /// once, and one certificate plays one party. Parties 2 to N pin party 1 only.
    pub fn slots(&self) -> CliResult<Vec<([u8; 32], u32)>> {
        let pins = &self.peer_fingerprint;
        if self.party != 1 {
            if pins.len() > 1 || pins.iter().any(|p| p.party.is_some_and(|i| i != 1)) {
                return Err(CliError::Usage(format!(
                    "party {} connects to party 1 only: give party 1's certificate, \
                     --peer-fingerprint sha256:HEX",
                    self.party
                )));
            }
            return Ok(Vec::new());
        }
        if pins.is_empty() {
            return Ok(Vec::new());
        }
        let mut slots = Vec::with_capacity(pins.len());
        for pin in pins {
            let party = match pin.party {
                Some(i) => i,
                None if self.of == 2 && pins.len() == 1 => 2,
                None => {
                    return Err(CliError::Usage(format!(
                        "party 1 of {} binds each client's certificate to the party it plays: \
                         give --peer-fingerprint 2=sha256:HEX,3=sha256:HEX…",
                        self.of
                    )));
                }
            };
            if !(2..=self.of).contains(&party) {
                return Err(CliError::Usage(format!(
                    "--peer-fingerprint {party}=…: the other clients are parties 2 to {}",
                    self.of
                )));
            }
            if slots.iter().any(|&(_, p)| p == party) {
                return Err(CliError::Usage(format!(
                    "--peer-fingerprint names party {party} twice"
                )));
            }
            if slots.iter().any(|&(f, _)| f == pin.fingerprint.0) {
                return Err(CliError::Usage(format!(
                    "--peer-fingerprint gives {} to two parties: one certificate, one party",
                    pin.fingerprint
                )));
            }
            slots.push((pin.fingerprint.0, party));
        }
        if slots.len() != self.of as usize - 1 {
            return Err(CliError::Usage(format!(
                "party 1 of {} pins the {} other clients: give --peer-fingerprint for each \
                 (I=sha256:HEX)",
                self.of,
                self.of - 1
            )));
        }
        Ok(slots)
    }

    /// With --peer-ca: the name each other client's certificate must carry, with the party
    /// index it plays (party 1; parties 2 to N name party 1, index 1), checked as
    /// [`AidedArgs::slots`] checks pins.
    pub fn names(&self) -> CliResult<Vec<(u32, String)>> {
        let mut out: Vec<(u32, String)> = Vec::new();
        for entry in &self.peer_name {
            let (party, name) = match entry.split_once('=') {
                Some((i, name)) => (
                    Some(i.trim().parse::<u32>().map_err(|_| {
                        CliError::Usage(format!(
                            "--peer-name {entry}: write I=NAME, I a party index"
                        ))
                    })?),
                    name.trim().to_owned(),
                ),
                None => (None, entry.trim().to_owned()),
            };
            let party = match (self.party, party) {
                (1, Some(i)) if (2..=self.of).contains(&i) => i,
                (1, None) if self.of == 2 && self.peer_name.len() == 1 => 2,
                (1, _) => {
                    return Err(CliError::Usage(format!(
                        "party 1 of {} names each other client with the party it plays: give \
                         --peer-name 2=NAME,3=NAME… (parties 2 to {})",
                        self.of, self.of
                    )));
                }
                (_, None | Some(1)) if self.peer_name.len() == 1 => 1,
                (i, _) => {
                    return Err(CliError::Usage(format!(
                        "party {i} connects to party 1 only: give party 1's name, --peer-name NAME"
                    )));
                }
            };
            if out.iter().any(|(p, n)| *p == party || *n == name) {
                return Err(CliError::Usage(format!(
                    "--peer-name gives party {party} or the name {name} twice: one name, one party"
                )));
            }
            out.push((party, name));
        }
        if self.peer_ca.is_some() && self.party == 1 && out.len() != self.of as usize - 1 {
            return Err(CliError::Usage(format!(
                "party 1 of {} names the {} other clients: give --peer-name I=NAME for each",
                self.of,
                self.of - 1
            )));
        }
        Ok(out)
    }

    /// The link configurations: to the server, and between the clients.
    fn link_configs(&self) -> CliResult<(LinkConfig, LinkConfig)> {
        let limits = Limits::new(self.deadline, self.idle_timeout);
        let identity = (self.tls_cert.as_deref(), self.tls_key.as_deref());
        let server_peer = match (&self.server_fingerprint, &self.server_ca) {
            (Some(f), _) => Some(PeerCheck::Pinned(*f)),
            (_, Some(ca)) => Some(PeerCheck::Ca {
                roots: tls::load_certs(ca)?,
                names: self.server_name.iter().cloned().collect(),
            }),
            _ => None,
        };
        let server = TlsChoice {
            identity,
            peer: server_peer,
            plaintext: self.plaintext,
            peer_flags: "--server-fingerprint (from the server's `blindjoin keygen`) or \
                         --server-ca",
        }
        .config(&self.server, limits)?;
        let client_peer = match (&self.peer_fingerprint[..], &self.peer_ca) {
            ([], Some(ca)) => Some(PeerCheck::Ca {
                roots: tls::load_certs(ca)?,
                names: self.names()?.into_iter().map(|(_, n)| n).collect(),
            }),
            ([], None) => None,
            ([one], _) => Some(PeerCheck::Pinned(one.fingerprint)),
            (many, _) => Some(PeerCheck::AnyOf(
                many.iter().map(|p| p.fingerprint).collect(),
            )),
        };
        let addr = self
            .peers_listen
            .as_deref()
            .or(self.peer.as_deref())
            .unwrap_or("");
        let peers = TlsChoice {
            identity,
            peer: client_peer,
            plaintext: self.plaintext,
            peer_flags: "--peer-fingerprint (the other clients' `blindjoin keygen`) or --peer-ca",
        }
        .config(addr, limits)?;
        Ok((server, peers))
    }
}

/// Opens this client's links: the server's and, at once, the other clients'.
fn connect(
    a: &AidedArgs,
    server_cfg: &LinkConfig,
    peer_cfg: &LinkConfig,
) -> CliResult<Connections> {
    let note = |line: &str| eprintln!("{line}");
    let listener = match &a.peers_listen {
        Some(addr) => {
            let l = TcpListener::bind(addr)
                .map_err(|e| blindjoin_core::Error::io(format!("cannot listen on {addr}"), e))?;
            if let Ok(at) = l.local_addr() {
                note(&format!(
                    "party 1: listening on {at} for the {} other clients",
                    a.of - 1
                ));
            }
            Some(l)
        }
        None => None,
    };
    std::thread::scope(|s| {
        let peers = s.spawn(|| -> CliResult<Vec<Link>> {
            let mut log = |line: &str| eprintln!("{line}");
            Ok(match (&listener, &a.peer) {
                (Some(l), _) => transport::accept_many(l, peer_cfg, a.of as usize - 1, &mut log)?,
                (None, Some(addr)) => vec![transport::connect(addr, peer_cfg, &mut log)?],
                (None, None) => Vec::new(),
            })
        });
        let mut log = |line: &str| eprintln!("{line}");
        let server = transport::connect(&a.server, server_cfg, &mut log);
        if server.is_err() {
            // Stop waiting for the other clients: the run cannot go on.
            if let Some(c) = &peer_cfg.cancel {
                c.store(true, Ordering::Relaxed);
            }
        }
        let peers = peers
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        Ok(Connections {
            server: server?,
            peers: peers?,
        })
    })
}

/// Forwards a caught SIGINT or SIGTERM to a client's run: sets its cancel flag and shuts its
/// links' sockets down. Stops when dropped.
struct SignalWatch(Arc<AtomicBool>);

impl SignalWatch {
    fn start(
        cancel: Arc<AtomicBool>,
        sockets: Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    ) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let signal = crate::signals::flag();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if signal.load(Ordering::Relaxed) {
                    cancel.store(true, Ordering::Relaxed);
                    if let Ok(held) = sockets.lock() {
                        for s in held.iter() {
                            let _ = s.shutdown(std::net::Shutdown::Both);
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        SignalWatch(done)
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Party 1 with --peer-ca: the party each client's link plays, by the name its certificate
/// carries (each link authenticated under the CA for one of the names).
fn named_slots(links: &[Link], names: &[(u32, String)]) -> CliResult<Vec<([u8; 32], u32)>> {
    use blindjoin_core::channel::Channel;
    let mut slots = Vec::with_capacity(links.len());
    for link in links {
        let Some(id) = link.peer_identity() else {
            continue;
        };
        let Some(&(party, _)) = names.iter().find(|(_, n)| link.peer_is_named(n)) else {
            return Err(CliError::Usage(
                "a client's certificate carries none of the names of --peer-name".into(),
            ));
        };
        slots.push((id, party));
    }
    Ok(slots)
}

/// Runs `blindjoin aided`.
pub fn run(a: &AidedArgs) -> CliResult<()> {
    let start = Instant::now();
    a.check()?;
    let normalizer = a.keys.normalizer()?;
    let spec = a.output.spec();
    crate::input::check_key_source(&a.keys.input, a.keys.format, &a.keys.column)?;
    let format =
        crate::input::Format::of_input(a.keys.format, &a.keys.input, !a.keys.column.is_empty());
    if let Some(out) = &a.output.output {
        check_output(out, &[&a.keys.input])?;
        check_output_spec(out, &spec, format, a.keys.column.len())?;
    }
    if let Some(json) = &a.json {
        let mut inputs = vec![a.keys.input.as_path()];
        inputs.extend(a.output.output.as_deref());
        check_output(json, &inputs)?;
    }
    let (mut server_cfg, mut peer_cfg) = a.link_configs()?;
    a.security.warn_weak();
    let mut opts = a.security.run_options();
    opts.copies = a.copies;
    opts.dummies = a.dummies;
    opts.covert = a.covert;
    blindjoin_psi::check_security(a.protocol, &opts)?;
    let cancel = Arc::new(AtomicBool::new(false));
    server_cfg.cancel = Some(cancel.clone());
    peer_cfg.cancel = Some(cancel.clone());
    // SIGINT and SIGTERM stop the connection attempt and, once the links are open, shut them
    // down: the run ends through its error path ([`crate::signals`]).
    crate::signals::install()?;
    let sockets: Arc<std::sync::Mutex<Vec<std::net::TcpStream>>> = Arc::default();
    let _watch = SignalWatch::start(cancel.clone(), sockets.clone());

    let bars = if a.quiet { Bars::hidden() } else { Bars::new() };
    let label = "client";
    let input_spec = InputSpec {
        path: &a.keys.input,
        format: a.keys.format,
        columns: &a.keys.column,
        normalizer: &normalizer,
    };
    let mut phases: Vec<(String, f64)> = Vec::new();
    let reading = bars.reading(
        label,
        std::fs::metadata(&a.keys.input).map_or(0, |m| m.len()),
    );
    // The keys are read while the links are opened.
    let (input, links) = std::thread::scope(|s| {
        let linking = s.spawn(|| {
            let t = Instant::now();
            (
                connect(a, &server_cfg, &peer_cfg),
                t.elapsed().as_secs_f64(),
            )
        });
        let t = Instant::now();
        let input = read_input(&input_spec, &|b| reading(b));
        let read_seconds = t.elapsed().as_secs_f64();
        if input.is_err() {
            cancel.store(true, Ordering::Relaxed);
        }
        let links = linking
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (input.map(|i| (i, read_seconds)), links)
    });
    let (Input { keyed, source, .. }, read_seconds) = input?;
    let (links, connect_seconds) = links;
    let Connections { server, mut peers } = links?;
    if let Ok(mut held) = sockets.lock() {
        held.extend(server.socket().ok());
        held.extend(peers.iter().filter_map(|p| p.socket().ok()));
    }
    crate::signals::check()?;
    phases.push(("read input".into(), read_seconds));
    phases.push(("connect (while reading)".into(), connect_seconds));

    opts.key_params = normalizer.handshake_params();
    opts.key_params.push(crate::party::key_source_param(
        format == crate::input::Format::Lines,
    ));
    if a.keys.column.len() > 1 {
        opts.key_params
            .push(("key_fields".to_owned(), a.keys.column.len().to_string()));
    }
    opts.max_peer_set_size = a
        .max_peer_size
        .unwrap_or_else(|| default_max_peer_size(keyed.items.len()));
    opts.progress = Some(bars.party(label));
    let mut server = Metered::new(server);
    let slots = match a.peer_ca {
        Some(_) if a.party == 1 => named_slots(&peers, &a.names()?)?,
        _ => a.slots()?,
    };
    let peer_links = Peers::of(a.party, &mut peers);
    let mut aided = AidedLinks::new(a.run.clone(), (a.party, a.of), peer_links, &mut server);
    aided.identity = peer_cfg.tls.as_ref().map(|t| t.ours.0);
    aided.slots = slots;
    let out = match &a.sort_dir {
        Some(dir) => {
            let ext = External {
                dir: dir.clone(),
                bucket_labels: a.bucket_labels,
            };
            let mut source = SliceSource::new(&keyed.items);
            let out = run_semi_external(&mut aided, &mut source, &opts, &ext, &mut rand::rng())?;
            ClientOutput {
                indices: out.rows.into_iter().map(|r| r as usize).collect(),
                sizes: out.sizes,
                label_len: out.label_len,
                phases: out.phases,
            }
        }
        None => a
            .protocol
            .client(&mut aided, &keyed.items, &opts, &mut rand::rng())?,
    };
    drop(aided);
    let server_traffic = server.traffic();
    drop(server);
    drop(peers);
    for (name, secs) in out.phases.0 {
        phases.push((name.to_owned(), secs));
    }
    let rows = keyed.rows_of_items(&out.indices);
    let mut written = None;
    if let Some(path) = &a.output.output {
        let t = Instant::now();
        let bar = bars.writing(label)(rows.len() as u64);
        let prepared = prepare_output(path, &source, &rows, &spec, &|n| bar(n))?;
        prepared.persist()?;
        written = Some(path.display().to_string());
        phases.push(("write output".into(), t.elapsed().as_secs_f64()));
    }
    bars.clear();
    let report = AidedReport {
        protocol: a.protocol.name,
        run: a.run.clone(),
        party: a.party,
        parties: a.of,
        set_sizes: out.sizes,
        rows: keyed.rows() as u64,
        matched_keys: out.indices.len() as u64,
        matched_rows: rows.len() as u64,
        output: written,
        label_len: out.label_len,
        server_traffic,
        phases,
        wall_seconds: start.elapsed().as_secs_f64(),
        peak_rss_bytes: peak_rss_bytes(),
    };
    if let Some(path) = &a.json {
        write_json(path, &report)?;
    }
    eprintln!(
        "party {} of {} ({}): {} of {} distinct keys in every set ({} rows{}); sent {} to the \
         server, received {}, {:.2} s",
        report.party,
        report.parties,
        report.protocol,
        report.matched_keys,
        keyed.items.len(),
        report.matched_rows,
        report
            .output
            .as_ref()
            .map(|o| format!(" written to {o}"))
            .unwrap_or_default(),
        human_bytes(report.server_traffic.bytes_sent),
        human_bytes(report.server_traffic.bytes_received),
        report.wall_seconds
    );
    Ok(())
}
