//! The network options of `send` and `receive` (address, TLS identity and pinned peer, time
//! limits) and opening the connection with them.

use crate::error::{CliError, CliResult};
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::tls::{self, Fingerprint, Identity, PeerCheck, TlsConfig};
use blindjoin_core::transport::{self, Link, LinkConfig};
use clap::Args;
use std::net::{IpAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Parses durations written `500ms`, `30s`, `10m`, `2h` or `1d` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a duration (use e.g. 30s, 10m, 2h)");
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(bad)
}

/// Writes a duration the way [`parse_duration`] reads it.
pub fn show_duration(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_millis() != 0 || s == 0 {
        format!("{}ms", d.as_millis())
    } else if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// How a party reaches its peer, and what it accepts.
#[derive(Debug, Clone, Args)]
pub struct NetOpts {
    /// Listen on this address (e.g. 0.0.0.0:7878) and wait for the peer.
    #[arg(
        long,
        value_name = "ADDR",
        conflicts_with = "connect",
        required_unless_present = "connect"
    )]
    pub listen: Option<String>,
    /// Connect to the peer at this address (e.g. partner.example:7878).
    #[arg(long, value_name = "ADDR")]
    pub connect: Option<String>,
    /// Our certificate (PEM), from `blindjoin keygen`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Our private key (PEM), from `blindjoin keygen`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Accept only the peer with this certificate (PEM file it sent you).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["peer_fingerprint", "peer_ca"])]
    pub peer_cert: Option<PathBuf>,
    /// Accept only the peer whose certificate has this fingerprint (sha256:HEX, printed by
    /// the peer's `blindjoin keygen`).
    #[arg(long, value_name = "sha256:HEX", conflicts_with = "peer_ca")]
    pub peer_fingerprint: Option<Fingerprint>,
    /// Accept a peer whose certificate this CA (PEM) issued for --peer-name (needs it; no
    /// revocation is checked).
    #[arg(long, value_name = "FILE", requires = "peer_name")]
    pub peer_ca: Option<PathBuf>,
    /// With --peer-ca: the DNS name the peer's certificate must carry (its subjectAltName),
    /// whichever side listens.
    #[arg(long, value_name = "NAME", requires = "peer_ca")]
    pub peer_name: Option<String>,
    /// Use plain TCP (no TLS) on a non-loopback address: anyone on the path can read and change
    /// the traffic, and anyone who connects first becomes the peer.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key", "peer_cert", "peer_fingerprint", "peer_ca"])]
    pub plaintext: bool,
    /// The whole run (waiting for the peer included) must end within this time.
    #[arg(long, value_name = "DURATION", default_value = "2h", value_parser = parse_duration)]
    pub deadline: Duration,
    /// End the run when no data has moved for this long.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub idle_timeout: Duration,
}

/// Where the connection comes from.
#[derive(Debug)]
pub enum Endpoint {
    /// Listen on an address.
    Listen(String),
    /// Wait on an already bound listener.
    Listener(TcpListener),
    /// Connect to an address.
    Connect(String),
}

impl NetOpts {
    /// The endpoint from `--listen` / `--connect`.
    pub fn endpoint(&self) -> CliResult<Endpoint> {
        match (&self.listen, &self.connect) {
            (Some(l), None) => Ok(Endpoint::Listen(l.clone())),
            (None, Some(c)) => Ok(Endpoint::Connect(c.clone())),
            _ => Err(CliError::Usage(
                "give exactly one of --listen and --connect".into(),
            )),
        }
    }

    /// The link configuration: TLS if any TLS option is given (then all that TLS needs must
    /// be), plain TCP on loopback or with `--plaintext`; anything else is refused. Checked
    /// before any input is read.
    pub fn link_config(&self) -> CliResult<LinkConfig> {
        let limits = Limits::new(self.deadline, self.idle_timeout);
        let peer = match (&self.peer_fingerprint, &self.peer_cert, &self.peer_ca) {
            (Some(f), _, _) => Some(PeerCheck::Pinned(*f)),
            (_, Some(p), _) => Some(PeerCheck::Pinned(Fingerprint::of(&tls::load_cert(p)?))),
            (_, _, Some(ca)) => Some(PeerCheck::Ca {
                roots: tls::load_certs(ca)?,
                names: self.peer_name.iter().cloned().collect(),
            }),
            _ => None,
        };
        let addr = self
            .listen
            .as_deref()
            .or(self.connect.as_deref())
            .unwrap_or("");
        let identity = (self.tls_cert.as_deref(), self.tls_key.as_deref());
        let tls = TlsChoice {
            identity,
            peer,
            plaintext: self.plaintext,
            peer_flags: "--peer-fingerprint (from the peer's `blindjoin keygen`), --peer-cert or \
                         --peer-ca with --peer-name",
        };
        tls.config(addr, limits)
    }
}

/// What a connection's TLS options say: our identity files, the peer check, `--plaintext`.
pub struct TlsChoice<'a> {
    /// `--tls-cert` and `--tls-key`.
    pub identity: (Option<&'a Path>, Option<&'a Path>),
    /// The peer check, if one was given.
    pub peer: Option<PeerCheck>,
    /// `--plaintext`.
    pub plaintext: bool,
    /// The options that name the peer, for the error when none was given.
    pub peer_flags: &'static str,
}

impl TlsChoice<'_> {
    /// The link configuration for a connection at `addr` (where we listen or connect): TLS if
    /// any TLS option is given (then all that TLS needs must be), plain TCP on loopback or with
    /// `--plaintext`; anything else is refused.
    pub fn config(self, addr: &str, limits: Limits) -> CliResult<LinkConfig> {
        let any_tls = self.identity.0.is_some() || self.peer.is_some();
        if !any_tls {
            if !self.plaintext && !is_loopback(addr) {
                return Err(CliError::Usage(format!(
                    "{addr} is not a loopback address, so the connection needs TLS: give \
                     --tls-cert and --tls-key (make them with `blindjoin keygen`) and {}; or \
                     --plaintext to send in the clear",
                    self.peer_flags
                )));
            }
            if self.plaintext && !is_loopback(addr) {
                eprintln!(
                    "warning: --plaintext: the connection to {addr} is neither encrypted nor \
                     authenticated; anyone on the path can read and change it, and whoever \
                     connects first becomes the peer"
                );
            }
            return Ok(LinkConfig::plain(limits));
        }
        let (Some(cert), Some(key)) = self.identity else {
            return Err(CliError::Usage(
                "TLS needs our certificate and key: give --tls-cert and --tls-key (make them \
                 with `blindjoin keygen`)"
                    .into(),
            ));
        };
        let Some(peer) = self.peer else {
            return Err(CliError::Usage(format!(
                "TLS needs the peer to accept: give {}",
                self.peer_flags
            )));
        };
        let id = Identity::load(cert, key)?;
        Ok(LinkConfig::tls(TlsConfig::new(&id, &peer)?, limits))
    }
}

/// Whether every address `addr` (host:port, or a host) resolves to is a loopback address.
pub fn is_loopback(addr: &str) -> bool {
    let with_port = if addr.contains(':') && !addr.ends_with(']') {
        addr.to_owned()
    } else {
        format!("{addr}:0")
    };
    match with_port.to_socket_addrs() {
        Ok(addrs) => {
            let ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
            !ips.is_empty() && ips.iter().all(IpAddr::is_loopback)
        }
        Err(_) => false,
    }
}

fn note(line: &str) {
    eprintln!("{line}");
}

impl Endpoint {
    /// Opens the connection (see [`transport`]): a listener says where it listens and keeps
    /// waiting for the right peer until the deadline; a connector retries while nobody listens.
    pub fn open(self, cfg: &LinkConfig) -> CliResult<Link> {
        let until = cfg.limits.remaining().map_or_else(String::new, |r| {
            format!(" (deadline in {})", show_duration(round(r)))
        });
        let security = if cfg.tls.is_some() {
            "TLS, pinned peer"
        } else {
            "plain TCP"
        };
        Ok(match self {
            Endpoint::Listen(addr) => {
                let l = TcpListener::bind(&addr).map_err(|e| {
                    blindjoin_core::Error::io(format!("cannot listen on {addr}"), e)
                })?;
                if let Ok(a) = l.local_addr() {
                    note(&format!(
                        "listening on {a}, {security}, waiting for the peer{until}"
                    ));
                }
                transport::accept(&l, cfg, &mut note)?
            }
            Endpoint::Listener(l) => transport::accept(&l, cfg, &mut note)?,
            Endpoint::Connect(addr) => transport::connect(&addr, cfg, &mut note)?,
        })
    }
}

/// Where a bucketed run's further connections come from ([`Endpoint::lanes`]).
#[derive(Debug)]
pub enum Lanes {
    /// The listener of the first connection, kept to accept the others.
    Listener(TcpListener),
    /// The address the first connection went to.
    Connect(String),
}

impl Endpoint {
    /// Keeps what opens further connections to the same peer after this one (a bucketed run's
    /// lanes): a `Listen` endpoint is bound here (and becomes `Listener`), a connector keeps its
    /// address.
    pub fn lanes(&mut self) -> CliResult<Lanes> {
        Ok(match self {
            Endpoint::Listen(addr) => {
                let l = TcpListener::bind(&*addr).map_err(|e| {
                    blindjoin_core::Error::io(format!("cannot listen on {addr}"), e)
                })?;
                if let Ok(a) = l.local_addr() {
                    note(&format!("listening on {a}, waiting for the peer"));
                }
                let lanes = l
                    .try_clone()
                    .map_err(|e| blindjoin_core::Error::io("cannot share the listener", e))?;
                *self = Endpoint::Listener(l);
                Lanes::Listener(lanes)
            }
            Endpoint::Listener(l) => Lanes::Listener(
                l.try_clone()
                    .map_err(|e| blindjoin_core::Error::io("cannot share the listener", e))?,
            ),
            Endpoint::Connect(addr) => Lanes::Connect(addr.clone()),
        })
    }
}

impl Lanes {
    /// Opens the next connection (the listener accepts, the connector connects).
    pub fn open(&self, cfg: &LinkConfig) -> CliResult<Link> {
        Ok(match self {
            Lanes::Listener(l) => transport::accept(l, cfg, &mut |_| ())?,
            Lanes::Connect(addr) => transport::connect(addr, cfg, &mut |_| ())?,
        })
    }
}

fn round(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs_f64().round() as u64).max(Duration::from_secs(1))
}

/// Two fresh identities that pin each other, for runs where both parties are ours (demo,
/// benchmarks): TLS exactly as between two organisations.
pub fn paired_identities() -> CliResult<(Identity, Identity)> {
    let (a, _) = Identity::generate("receiver.blindjoin")?;
    let (b, _) = Identity::generate("sender.blindjoin")?;
    Ok((a, b))
}

/// The link configuration of `me` pinning `peer`, under `limits`.
pub fn pinned(me: &Identity, peer: &Identity, limits: Limits) -> CliResult<LinkConfig> {
    Ok(LinkConfig::tls(
        TlsConfig::new(me, &PeerCheck::Pinned(peer.fingerprint()))?,
        limits,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_every_unit() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        for bad in ["", "s", "10x", "-1s", "0s", "1e400s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(show_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(show_duration(Duration::from_secs(300)), "5m");
        assert_eq!(show_duration(Duration::from_secs(45)), "45s");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn loopback_is_recognised_by_name_and_address() {
        assert!(is_loopback("127.0.0.1:7878"));
        assert!(is_loopback("localhost:7878"));
        assert!(is_loopback("[::1]:7878"));
        assert!(!is_loopback("0.0.0.0:7878"));
        assert!(!is_loopback("10.1.2.3:7878"));
    }
}
