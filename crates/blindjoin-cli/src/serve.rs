//! `blindjoin server`: the untrusted server of server-aided runs (KMRS14 §3.2). It accepts
//! client connections (TLS and the link hello checked as for any peer), serves each on a thread
//! of its own with [`Server::serve`], and keeps the labels in the chosen store. It runs until it
//! is stopped: on SIGINT or SIGTERM it deletes what its store keeps outside the process (a disk
//! store's label files), prints one line and exits with 128 + the signal's number; the clients
//! of its runs in progress see their connections close.

use crate::cli::parse_count;
use crate::error::{CliError, CliResult};
use crate::link::{TlsChoice, parse_duration, show_duration};
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::tls::{self, Fingerprint, PeerCheck};
use blindjoin_core::transport;
use blindjoin_psi::protocols::server_aided::disk_store::DiskStore;
use blindjoin_psi::protocols::server_aided::server::{SERVED, Server, ServerConfig};
use blindjoin_psi::protocols::server_aided::store::{MemoryStore, Store};
use clap::Args;
use std::net::TcpListener;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// `blindjoin server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Listen here for clients (e.g. 0.0.0.0:7900).
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// Where the labels are kept: `memory` (in this process), `disk:DIR` (sorted files in
    /// DIR, for sets larger than memory) or `redis://HOST:PORT` (a Redis server).
    #[arg(long, value_name = "STORE", default_value = "memory")]
    pub store: String,
    /// A run whose clients have not all sent their labels this long after the first joined
    /// fails (its clients are told why) and is forgotten.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub run_timeout: Duration,
    /// The most labels one client may send.
    #[arg(long, value_name = "N", default_value = "2^32", value_parser = parse_count)]
    pub max_labels: u64,
    /// Clients served at once; more are closed at once.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_connections: usize,
    /// Connections one client (one certificate; on plain TCP, one address) may have open at
    /// once; a run lives only while one of its clients is connected, so this bounds the runs a
    /// client can hold open too.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_client_connections: usize,
    /// The most memory the server holds for all runs together: the labels of `--store memory`,
    /// kmrs_fair's openings, kmrs_size's relabelling (e.g. 4G, 512M; `none` for no limit). A
    /// client whose run would exceed it is refused when it joins, before any label arrives.
    #[arg(long, value_name = "BYTES", default_value = "4G", value_parser = crate::cli::parse_budget)]
    pub memory: crate::cli::Budget,
    /// Close a client connection when no data has moved for this long.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// Our certificate (PEM), from `blindjoin keygen`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Our private key (PEM), from `blindjoin keygen`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Accept only clients with these certificate fingerprints (repeat the option or separate
    /// by commas).
    #[arg(
        long,
        value_name = "sha256:HEX",
        value_delimiter = ',',
        conflicts_with = "client_ca"
    )]
    pub client_fingerprint: Vec<Fingerprint>,
    /// Accept clients whose certificates this CA (PEM) issued for one of --client-name (needs
    /// it; no revocation is checked).
    #[arg(long, value_name = "FILE", requires = "client_name")]
    pub client_ca: Option<PathBuf>,
    /// With --client-ca: the DNS names a client's certificate may carry (its subjectAltName);
    /// repeat the option or separate by commas.
    #[arg(
        long,
        value_name = "NAME",
        value_delimiter = ',',
        requires = "client_ca"
    )]
    pub client_name: Vec<String>,
    /// Use plain TCP (no TLS) on a non-loopback address.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key", "client_fingerprint", "client_ca", "client_name"])]
    pub plaintext: bool,
    /// Only errors and the start line on stderr (no line per client).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Opens the store `spec` names.
pub fn open_store(spec: &str, run_timeout: Duration) -> CliResult<Arc<dyn Store>> {
    if spec == "memory" {
        return Ok(Arc::new(MemoryStore::new()));
    }
    if let Some(dir) = spec.strip_prefix("disk:").filter(|d| !d.is_empty()) {
        return Ok(Arc::new(DiskStore::open(Path::new(dir))?));
    }
    if spec.starts_with("rediss://") {
        return Err(CliError::Usage(
            "--store rediss://: this server does not speak TLS to Redis; run Redis on this \
             host and give redis://127.0.0.1:PORT or redis+unix:///PATH (docs/SECURITY.md, \
             \"Redis\")"
                .into(),
        ));
    }
    if spec.starts_with("redis://") || spec.starts_with("redis+unix://") {
        return redis_store(spec, run_timeout);
    }
    Err(CliError::Usage(format!(
        "--store `{spec}`: use memory, disk:DIR or redis://HOST:PORT"
    )))
}

/// A Redis store whose keys outlive a run's timeout by a minute (the first party's labels wait
/// that long for the last party's) and then expire, also if this server dies.
#[cfg(feature = "redis-store")]
fn redis_store(url: &str, run_timeout: Duration) -> CliResult<Arc<dyn Store>> {
    use blindjoin_psi::protocols::server_aided::redis_store::RedisStore;
    let ttl = run_timeout + Duration::from_secs(60);
    Ok(Arc::new(RedisStore::connect(url, ttl)?))
}

#[cfg(not(feature = "redis-store"))]
fn redis_store(_url: &str, _run_timeout: Duration) -> CliResult<Arc<dyn Store>> {
    Err(CliError::Usage(
        "this blindjoin was built without the redis-store feature".into(),
    ))
}

/// On the first SIGINT or SIGTERM: `store.stop()`, one line, and the process's exit with
/// 128 + the signal's number (the accept loop and the client threads end with the process).
fn stop_on_signal(store: Arc<dyn Store>) -> CliResult<()> {
    crate::signals::install()?;
    let flag = crate::signals::flag();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
            store.stop();
            let sig = crate::signals::caught().unwrap_or(signal_hook::consts::signal::SIGTERM);
            eprintln!(
                "blindjoin: server stopped ({}); its runs in progress ended",
                crate::signals::name(sig)
            );
            std::process::exit(i32::from(crate::signals::exit_code(sig)));
        })
        .map_err(|e| CliError::Usage(format!("cannot start the signal thread: {e}")))?;
    Ok(())
}

/// Runs `blindjoin server` until the process is stopped.
pub fn run(a: &ServerArgs) -> CliResult<()> {
    if a.max_connections == 0 || a.max_client_connections == 0 {
        return Err(CliError::Usage(
            "--max-connections and --max-client-connections must be at least 1".into(),
        ));
    }
    let peer = match (&a.client_fingerprint[..], &a.client_ca) {
        ([], Some(ca)) => Some(PeerCheck::Ca {
            roots: tls::load_certs(ca)?,
            names: a.client_name.clone(),
        }),
        ([], None) => None,
        ([one], _) => Some(PeerCheck::Pinned(*one)),
        (many, _) => Some(PeerCheck::AnyOf(many.to_vec())),
    };
    let cfg = TlsChoice {
        identity: (a.tls_cert.as_deref(), a.tls_key.as_deref()),
        peer,
        plaintext: a.plaintext,
        peer_flags: "--client-fingerprint (the clients' `blindjoin keygen`) or --client-ca",
    }
    .config(&a.listen, Limits::idle_only(a.idle_timeout))?;
    let store = open_store(&a.store, a.run_timeout)?;
    stop_on_signal(store.clone())?;
    let server = Arc::new(Server::new(
        store,
        ServerConfig {
            run_timeout: a.run_timeout,
            max_labels: a.max_labels,
            memory: a.memory.0,
            max_client_connections: a.max_client_connections,
            ..ServerConfig::default()
        },
    ));
    let listener = TcpListener::bind(&a.listen)
        .map_err(|e| blindjoin_core::Error::io(format!("cannot listen on {}", a.listen), e))?;
    let at = listener
        .local_addr()
        .map_or_else(|_| a.listen.clone(), |at| at.to_string());
    eprintln!(
        "server listening on {at}, {}, store {}, runs time out after {}; serving {}",
        if cfg.tls.is_some() {
            "TLS, pinned clients"
        } else {
            "plain TCP"
        },
        server.describe_store(),
        show_duration(a.run_timeout),
        SERVED.join(", ")
    );
    let active = Arc::new(AtomicUsize::new(0));
    let quiet = a.quiet;
    let max = a.max_connections;
    let mut log = |line: &str| eprintln!("{line}");
    transport::accept_each(&listener, &cfg, &mut log, &mut |mut link, from| {
        if active.fetch_add(1, Ordering::SeqCst) >= max {
            active.fetch_sub(1, Ordering::SeqCst);
            eprintln!("closed a connection from {from}: {max} clients are being served");
            return ControlFlow::Continue(());
        }
        let (server, done) = (server.clone(), active.clone());
        let spawned = std::thread::Builder::new()
            .name("client".into())
            .spawn(move || {
                match server.serve(&mut link, &from.ip().to_string()) {
                    Ok((run, party)) if !quiet => {
                        eprintln!("run {run}: party {party} ({from}) has its result");
                    }
                    Ok(_) => {}
                    Err(e) => eprintln!("client {from}: {e}"),
                }
                drop(link);
                done.fetch_sub(1, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            active.fetch_sub(1, Ordering::SeqCst);
            eprintln!("closed a connection from {from}: cannot start a thread: {e}");
        }
        ControlFlow::Continue(())
    })?;
    Ok(())
}
