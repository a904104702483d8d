//! `blindjoin bench-aided`: server-aided PSI (KMRS14) at several set sizes, the server and every
//! client as processes over loopback TCP, against the plaintext server-aided intersection (raw
//! elements through the same server and store, KMRS14 Tab. 3 "Plain T.") measured in the same
//! run.
//!
//! Each repetition starts a fresh `blindjoin server` and one hidden `bench-aided-client`
//! process per client. Client i generates its n 16-byte elements from the seed as KMRS14 §4
//! does (random values; the first `overlap` shared by every client, the rest its own) before
//! its clock starts. A client's wall time runs from its links being open to its result (key
//! agreement, labels, sort, upload, the server's intersection, the bit vector); the run's time
//! is the slowest client's. Every client's result is checked against the exact expected
//! indices (0..overlap). Modes alternate within each repetition, so their ratio is measured
//! under one machine load; figures are medians over the repetitions.

use crate::bench::{median, party_command, print_result, read_result, write_results};
use crate::cli::parse_size;
use crate::error::{CliError, CliResult};
use crate::report::{peak_rss_bytes, process_cpu_seconds};
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::metered::{Metered, Traffic};
use blindjoin_core::item::Item;
use blindjoin_core::transport::{self, LinkConfig};
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::server_aided::client::{AidedLinks, ClientOutput, Peers};
use blindjoin_psi::protocols::server_aided::external::{External, ItemSource, run_semi_external};
use blindjoin_psi::protocols::server_aided::plain::plaintext_baseline;
use blindjoin_psi::protocols::server_aided::wire::{LABELS_PER_FRAME, MSG_LABELS};
use blindjoin_psi::{Protocol, RunOptions};
use clap::Args;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `blindjoin bench-aided` options.
#[derive(Debug, Args)]
pub struct BenchAidedArgs {
    /// The server-aided protocol.
    #[arg(long, short, default_value = "kmrs_semi")]
    pub(crate) protocol: &'static Protocol,
    /// Set sizes (every client), e.g. 1e6,1e7.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "1e5,1e6")]
    pub(crate) sizes: Vec<usize>,
    /// Clients per run.
    #[arg(long, default_value_t = 2)]
    pub(crate) clients: u32,
    /// Repetitions per size (medians are reported).
    #[arg(long, default_value_t = 3)]
    pub(crate) reps: usize,
    /// Fraction of a set that every client has.
    #[arg(long, default_value_t = 0.5)]
    pub(crate) overlap: f64,
    /// Seed of the generated sets.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// The server's store (`blindjoin server --store`).
    #[arg(long, default_value = "memory")]
    pub(crate) store: String,
    /// Skip the plaintext baseline.
    #[arg(long)]
    pub(crate) no_baseline: bool,
    /// kmrs_semi: every client generates its elements as it goes and sorts its labels on disk
    /// under DIR (the external-sort client), for sets larger than memory; implies
    /// --no-baseline.
    #[arg(long, value_name = "DIR")]
    pub(crate) external: Option<PathBuf>,
    /// With --external: the most labels a client sorts in memory at once (32 bytes each).
    #[arg(long, value_name = "N", default_value = "2^25", value_parser = crate::cli::parse_count)]
    pub(crate) bucket_labels: u64,
    /// Directory for the results: `aided-<protocol>-<store>.json` and `.md`.
    #[arg(long, value_name = "DIR", default_value = "bench/out")]
    pub(crate) out: PathBuf,
    /// Measure only the plaintext baseline (a suite's "Plain" rows).
    #[arg(skip)]
    pub(crate) only_plaintext: bool,
}

/// Hidden `bench-aided-client` options: one client of a benchmark run.
#[derive(Debug, Args)]
pub struct AidedClientArgs {
    #[arg(long)]
    protocol: &'static Protocol,
    #[arg(long)]
    plaintext: bool,
    #[arg(long)]
    party: u32,
    #[arg(long)]
    of: u32,
    #[arg(long)]
    size: usize,
    #[arg(long)]
    overlap: usize,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    server: String,
    #[arg(long)]
    run: String,
    #[arg(long)]
    peer: Option<String>,
    #[arg(long)]
    external: Option<PathBuf>,
    #[arg(long, default_value_t = 1 << 25)]
    bucket_labels: u64,
}

/// What one client process reports.
#[derive(Debug, Serialize, Deserialize)]
struct ClientResult {
    wall_seconds: f64,
    cpu_seconds: f64,
    traffic: Traffic,
    label_len: usize,
    phases: Vec<(String, f64)>,
    matched: usize,
    peak_rss_bytes: u64,
}

/// One row of the result table.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) mode: String,
    pub(crate) store: String,
    pub(crate) n: usize,
    pub(crate) clients: u32,
    pub(crate) reps: usize,
    pub(crate) threads: usize,
    pub(crate) wall_seconds: f64,
    pub(crate) label_len: usize,
    pub(crate) bytes_to_server: u64,
    pub(crate) bytes_formula: u64,
    pub(crate) bytes_from_server: u64,
    pub(crate) peak_rss_client_bytes: u64,
    pub(crate) peak_rss_server_bytes: u64,
    pub(crate) server_bytes_per_label: f64,
    pub(crate) wall_over_plaintext: Option<f64>,
    pub(crate) phases_client1: Vec<(String, f64)>,
}

/// Client `party`'s elements: the first `overlap` shared by every client, then its own.
fn client_items(size: usize, overlap: usize, seed: u64, party: u32) -> Vec<Item> {
    let draw = |stream: u64, count: usize| -> Vec<Item> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        (0..count)
            .map(|_| {
                let mut b = [0u8; 16];
                rng.fill_bytes(&mut b);
                Item(b)
            })
            .collect()
    };
    let mut items = draw(0, overlap);
    items.extend(draw(u64::from(party), size - overlap));
    items
}

/// Client `party`'s elements as [`client_items`] draws them, generated a chunk at a time.
struct GeneratedItems {
    size: usize,
    overlap: usize,
    shared: ChaCha20Rng,
    own: ChaCha20Rng,
    at: usize,
}

impl GeneratedItems {
    fn new(size: usize, overlap: usize, seed: u64, party: u32) -> Self {
        let stream = |s: u64| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            rng.set_stream(s);
            rng
        };
        GeneratedItems {
            size,
            overlap,
            shared: stream(0),
            own: stream(u64::from(party)),
            at: 0,
        }
    }
}

impl ItemSource for GeneratedItems {
    fn len(&self) -> u64 {
        self.size as u64
    }

    fn next_chunk(&mut self, out: &mut Vec<Item>, max: usize) -> blindjoin_core::Result<usize> {
        let end = (self.at + max).min(self.size);
        for i in self.at..end {
            let rng = if i < self.overlap {
                &mut self.shared
            } else {
                &mut self.own
            };
            let mut b = [0u8; 16];
            rng.fill_bytes(&mut b);
            out.push(Item(b));
        }
        let got = end - self.at;
        self.at = end;
        Ok(got)
    }
}

/// Runs one client (the hidden `bench-aided-client` command) and prints its result.
pub fn run_client(a: &AidedClientArgs) -> CliResult<()> {
    let items = if a.external.is_some() {
        Vec::new()
    } else {
        client_items(a.size, a.overlap, a.seed, a.party)
    };
    let timeout = Duration::from_secs(3600);
    let cfg = LinkConfig::plain(Limits::new(timeout, timeout));
    let log = &mut |line: &str| eprintln!("{line}");
    let mut peers = if a.plaintext {
        Vec::new()
    } else if a.party == 1 {
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| blindjoin_core::Error::io("cannot listen on loopback", e))?;
        let port = l
            .local_addr()
            .map_err(|e| blindjoin_core::Error::io("no local address", e))?
            .port();
        println!("PORT {port}");
        transport::accept_many(&l, &cfg, a.of as usize - 1, log)?
    } else {
        let peer = a
            .peer
            .as_deref()
            .ok_or_else(|| CliError::Usage("a client but the first needs --peer".into()))?;
        vec![transport::connect(peer, &cfg, log)?]
    };
    if a.plaintext && a.party == 1 {
        println!("PORT 0");
    }
    let server = transport::connect(&a.server, &cfg, log)?;
    let mut server = Metered::new(server);
    let (cpu0, t0) = (process_cpu_seconds(), Instant::now());
    let peer_links = Peers::of(a.party, &mut peers);
    let mut links = AidedLinks::new(a.run.clone(), (a.party, a.of), peer_links, &mut server);
    let opts = RunOptions {
        max_peer_set_size: a.size as u64,
        ..RunOptions::default()
    };
    let out: ClientOutput = if let Some(dir) = &a.external {
        let ext = External {
            dir: dir.clone(),
            bucket_labels: a.bucket_labels,
        };
        let mut source = GeneratedItems::new(a.size, a.overlap, a.seed, a.party);
        let out = run_semi_external(&mut links, &mut source, &opts, &ext, &mut rand::rng())?;
        if out.rows.len() != a.overlap || out.rows.iter().enumerate().any(|(i, &k)| i != k as usize)
        {
            return Err(CliError::Verification(format!(
                "client {}: {} matches, expected exactly the first {}",
                a.party,
                out.rows.len(),
                a.overlap
            )));
        }
        // Checked above; the rows are not copied into indices (4 GB at 10^9 × 1/2).
        ClientOutput {
            indices: Vec::new(),
            sizes: out.sizes,
            label_len: out.label_len,
            phases: out.phases,
        }
    } else if a.plaintext {
        plaintext_baseline(
            &mut links,
            &items,
            &vec![a.size as u64; a.of as usize],
            &opts,
        )?
    } else {
        a.protocol
            .client(&mut links, &items, &opts, &mut rand::rng())?
    };
    drop(links);
    let wall = t0.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds() - cpu0;
    let checked = a.external.is_some();
    if !checked
        && (out.indices.len() != a.overlap || out.indices.iter().enumerate().any(|(i, &k)| i != k))
    {
        return Err(CliError::Verification(format!(
            "client {}: {} matches, expected exactly the first {}",
            a.party,
            out.indices.len(),
            a.overlap
        )));
    }
    print_result(&ClientResult {
        wall_seconds: wall,
        cpu_seconds: cpu,
        traffic: server.traffic(),
        label_len: out.label_len,
        phases: out
            .phases
            .0
            .iter()
            .map(|(n, s)| ((*n).to_owned(), *s))
            .collect(),
        matched: if checked {
            a.overlap
        } else {
            out.indices.len()
        },
        peak_rss_bytes: peak_rss_bytes(),
    })
}

/// A `blindjoin server` process on an ephemeral loopback port.
struct ServerProcess {
    child: Child,
    addr: String,
}

impl ServerProcess {
    fn start(store: &str, threads: usize) -> CliResult<ServerProcess> {
        let exe = std::env::current_exe()
            .map_err(|e| blindjoin_core::Error::io("cannot find the blindjoin executable", e))?;
        let mut child = Command::new(exe)
            .args(["--threads", &threads.to_string(), "server", "-q"])
            .args([
                "--listen",
                "127.0.0.1:0",
                "--store",
                store,
                "--memory",
                "none",
            ])
            .args(["--run-timeout", "1h", "--idle-timeout", "1h"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| blindjoin_core::Error::io("cannot start the server process", e))?;
        let err = child
            .stderr
            .take()
            .ok_or_else(|| CliError::Verification("no server stderr".into()))?;
        let mut lines = BufReader::new(err).lines().map_while(Result::ok);
        let first = lines.next().unwrap_or_default();
        let addr = first
            .strip_prefix("server listening on ")
            .and_then(|r| r.split(',').next())
            .map(str::to_owned);
        // Keep draining the server's stderr so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(|l| eprintln!("server: {l}")));
        match addr {
            Some(addr) => Ok(ServerProcess { child, addr }),
            None => {
                let _ = child.kill();
                Err(CliError::Verification(format!(
                    "the server did not start: {first}"
                )))
            }
        }
    }

    /// The server's peak resident memory so far (Linux; 0 elsewhere).
    fn peak_rss(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .map_or(0, |kb| kb * 1024)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One run of every client on a fresh server; the clients' results and the server's peak RSS.
fn one_run(
    a: &BenchAidedArgs,
    threads: usize,
    n: usize,
    overlap: usize,
    plaintext: bool,
    run: &str,
) -> CliResult<(Vec<ClientResult>, u64)> {
    let server = ServerProcess::start(&a.store, threads)?;
    let common = |party: u32| -> Vec<String> {
        let mut v = vec![
            "--protocol".into(),
            a.protocol.name.into(),
            "--party".into(),
            party.to_string(),
            "--of".into(),
            a.clients.to_string(),
            "--size".into(),
            n.to_string(),
            "--overlap".into(),
            overlap.to_string(),
            "--seed".into(),
            a.seed.to_string(),
            "--server".into(),
            server.addr.clone(),
            "--run".into(),
            run.into(),
        ];
        if plaintext {
            v.push("--plaintext".into());
        }
        if let Some(dir) = &a.external {
            v.push("--external".into());
            v.push(dir.display().to_string());
            v.push("--bucket-labels".into());
            v.push(a.bucket_labels.to_string());
        }
        v
    };
    let mut first = party_command(threads, "bench-aided-client")?;
    first.args(common(1));
    let mut first = first
        .spawn()
        .map_err(|e| blindjoin_core::Error::io("cannot start a client process", e))?;
    let stdout = first
        .stdout
        .take()
        .ok_or_else(|| CliError::Verification("no client stdout".into()))?;
    let mut lines = BufReader::new(stdout).lines().map_while(Result::ok);
    let port = lines
        .next()
        .and_then(|l| l.strip_prefix("PORT ").map(str::to_owned))
        .ok_or_else(|| CliError::Verification("client 1 did not report its port".into()))?;
    let mut others = Vec::new();
    for party in 2..=a.clients {
        let mut c = party_command(threads, "bench-aided-client")?;
        c.args(common(party))
            .args(["--peer", &format!("127.0.0.1:{port}")]);
        let mut child = c
            .spawn()
            .map_err(|e| blindjoin_core::Error::io("cannot start a client process", e))?;
        let out = child
            .stdout
            .take()
            .ok_or_else(|| CliError::Verification("no client stdout".into()))?;
        others.push((child, out));
    }
    let mut results = vec![read_result::<ClientResult>(first, &mut lines, "client 1")?];
    for (i, (child, out)) in others.into_iter().enumerate() {
        let mut l = BufReader::new(out).lines().map_while(Result::ok);
        results.push(read_result(child, &mut l, &format!("client {}", i + 2))?);
    }
    let rss = server.peak_rss();
    Ok((results, rss))
}

/// Measures one size `n` (the `si`-th of the run): the protocol's row, then the plaintext
/// baseline's unless it is skipped (or only the baseline with `only_plaintext`); with both,
/// the protocol's row carries its time over the baseline's.
pub(crate) fn measure(
    a: &BenchAidedArgs,
    threads: usize,
    si: usize,
    n: usize,
) -> CliResult<Vec<Row>> {
    let modes: &[bool] = if a.only_plaintext {
        &[true]
    } else if a.no_baseline || a.external.is_some() {
        &[false]
    } else {
        &[false, true]
    };
    let mut rows = Vec::new();
    let overlap = (n as f64 * a.overlap) as usize;
    let mut per_mode: Vec<Vec<(Vec<ClientResult>, u64)>> =
        modes.iter().map(|_| Vec::new()).collect();
    for rep in 0..a.reps {
        for (mi, &plain) in modes.iter().enumerate() {
            let run = format!("bench-{si}-{rep}-{mi}");
            per_mode[mi].push(one_run(a, threads, n, overlap, plain, &run)?);
        }
    }
    let mut mode_walls = Vec::new();
    for (mi, &plain) in modes.iter().enumerate() {
        let reps = &per_mode[mi];
        let walls: Vec<f64> = reps
            .iter()
            .map(|(r, _)| r.iter().map(|c| c.wall_seconds).fold(0.0, f64::max))
            .collect();
        let wall = median(walls.clone());
        mode_walls.push(wall);
        let (median_rep, _) = walls
            .iter()
            .enumerate()
            .min_by(|x, y| (x.1 - wall).abs().total_cmp(&(y.1 - wall).abs()))
            .unwrap_or((0, &0.0));
        let (clients, server_rss) = &reps[median_rep];
        let c1 = &clients[0];
        let len = c1.label_len;
        // The labels' bytes by the protocol's formula (two clients, default parameters), or
        // the raw 16-byte elements of the baseline.
        let formula = if plain {
            blindjoin_core::channel::framed_bytes(n as u64, 16, LABELS_PER_FRAME)
        } else {
            let sizes = Sizes {
                n_recv: n as u64,
                n_send: n as u64,
                kappa: 128,
                lambda: 40,
                sigma: None,
            };
            (a.protocol.traffic)(&sizes)?
                .iter()
                .filter(|(m, _)| *m == MSG_LABELS)
                .map(|(_, b)| *b)
                .sum()
        };
        let labels_total = (n as u64) * u64::from(a.clients);
        let row = Row {
            mode: if plain {
                "plaintext".into()
            } else {
                a.protocol.name.into()
            },
            store: a.store.clone(),
            n,
            clients: a.clients,
            reps: a.reps,
            threads,
            wall_seconds: wall,
            label_len: len,
            bytes_to_server: c1.traffic.bytes_sent,
            bytes_formula: formula,
            bytes_from_server: c1.traffic.bytes_received,
            peak_rss_client_bytes: clients.iter().map(|c| c.peak_rss_bytes).max().unwrap_or(0),
            peak_rss_server_bytes: *server_rss,
            server_bytes_per_label: *server_rss as f64 / labels_total as f64,
            wall_over_plaintext: None,
            phases_client1: c1.phases.clone(),
        };
        rows.push(row);
    }
    if modes.len() == 2 {
        let ratio = mode_walls[0] / mode_walls[1];
        let k = rows.len() - 2;
        rows[k].wall_over_plaintext = Some(ratio);
    }
    Ok(rows)
}

/// Runs `blindjoin bench-aided`.
pub fn run(a: &BenchAidedArgs, threads: Option<usize>) -> CliResult<()> {
    if a.protocol.is_two_party() {
        return Err(CliError::Usage(format!(
            "protocol `{}` is two-party: benchmark it with `bench`",
            a.protocol
        )));
    }
    if a.clients < 2 || a.reps == 0 || !(0.0..=1.0).contains(&a.overlap) {
        return Err(CliError::Usage(
            "--clients must be at least 2, --reps at least 1, --overlap within 0..1".into(),
        ));
    }
    let threads = threads.unwrap_or_else(rayon::current_num_threads);
    if a.external.is_some() && a.protocol.name != "kmrs_semi" {
        return Err(CliError::Usage(
            "--external runs kmrs_semi's external-sort client; give -p kmrs_semi".into(),
        ));
    }
    let mut rows = Vec::new();
    let mut md = String::from(
        "| mode | store | n | clients | wall (s) | ℓ (B) | to server (B) | formula (B) | from server (B) | client RSS (MiB) | server RSS (MiB) | server B/label | / plaintext |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (si, &n) in a.sizes.iter().enumerate() {
        let size_rows = measure(a, threads, si, n)?;
        for r in &size_rows {
            let line = format!(
                "| {} | {} | {} | {} | {:.3} | {} | {} | {} | {} | {:.0} | {:.0} | {:.1} | {} |\n",
                r.mode,
                r.store,
                r.n,
                r.clients,
                r.wall_seconds,
                r.label_len,
                r.bytes_to_server,
                r.bytes_formula,
                r.bytes_from_server,
                r.peak_rss_client_bytes as f64 / f64::from(1 << 20),
                r.peak_rss_server_bytes as f64 / f64::from(1 << 20),
                r.server_bytes_per_label,
                r.wall_over_plaintext
                    .map_or_else(|| "".to_owned(), |x| format!("{x:.3}"))
            );
            eprint!("{line}");
            md.push_str(&line);
        }
        rows.extend(size_rows);
    }
    let store = a
        .store
        .split([':', '/'])
        .next()
        .unwrap_or("store")
        .to_owned();
    write_results(
        &a.out,
        &format!("aided-{}-{store}-{threads}t", a.protocol.name),
        &rows,
        &md,
    )
}
