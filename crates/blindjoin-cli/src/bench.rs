//! `blindjoin bench`: a protocol at several sizes, both parties as two processes over loopback
//! TCP, against the plaintext hash join of the same sets measured in the same run.
//!
//! Each repetition starts two fresh `blindjoin bench-party` processes (receiver listening on an
//! ephemeral loopback port, sender connecting), each generating its set deterministically from
//! the seed. A party measures its own wall time (handshake to result) and CPU time (user +
//! system of its process over the same span, so set generation is excluded). The receiver's
//! result is checked against the exact expected indices (or, with `--result`, the exact
//! cardinality, or the exact sum of the sender's values [`bench_value`]). Reported figures are
//! medians over the
//! repetitions. With `--transport tcp,tls` the same repetitions run over plain TCP and over
//! TLS 1.3 with pinned certificates (the TLS handshake happens before the clocks start), in
//! alternation, so the TLS overhead is a ratio measured under one machine load. With
//! `--network` the sender reaches the receiver through a relay in this process that shapes the
//! link to the profile's bandwidth and round-trip time ([`crate::netem`]).

use crate::bucketed::Buckets;
use crate::cli::parse_size;
use crate::error::{CliError, CliResult};
use crate::link::Lanes;
use crate::output::write_atomic;
use crate::party::items_of;
use crate::report::{peak_rss_bytes, process_cpu_seconds};
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::channel::metered::{Metered, Traffic};
use blindjoin_core::channel::tls::{self, Fingerprint, Identity, PeerCheck, TlsConfig};
use blindjoin_core::item::items_from_records;
use blindjoin_core::transport::{self, Link, LinkConfig};
use blindjoin_psi::protocols::circuit_psi;
use blindjoin_psi::{Aggregate, Phases, Protocol, ResultKind, RunOptions};
use clap::Args;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `blindjoin bench` options.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The protocol.
    #[arg(long, short, default_value = "ecdh")]
    pub(crate) protocol: &'static Protocol,
    /// Set sizes (both parties), e.g. 2^10,2^12,2^16.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "2^10,2^12,2^16")]
    pub(crate) sizes: Vec<usize>,
    /// The sender's set size, if it differs from the receiver's (same list length as --sizes).
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub(crate) sender_sizes: Option<Vec<usize>>,
    /// Repetitions per size (medians are reported).
    #[arg(long, default_value_t = 3)]
    pub(crate) reps: usize,
    /// Fraction of the smaller set that is in the intersection.
    #[arg(long, default_value_t = 0.5)]
    pub(crate) overlap: f64,
    /// Seed of the generated sets.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Directory for the results: `<protocol>-<threads>t.json` and `.md` (created if missing).
    #[arg(long, value_name = "DIR", default_value = "bench/out")]
    pub(crate) out: PathBuf,
    /// Transports to measure, e.g. `tcp,tls`: with several, their repetitions alternate, so
    /// their ratio is measured in one run under the same machine load.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "tcp")]
    pub(crate) transport: Vec<Transport>,
    /// Computational security parameter κ in bits (the protocol must offer it).
    #[arg(long, default_value_t = 128)]
    pub(crate) kappa: u32,
    /// The item length σ in bits of the circuit protocols and of psz14's short values (PSZ14
    /// ran σ = 32), below the derived one if need be (the parties then run with weak
    /// parameters allowed). The generated sets keep only records whose σ-bit values in the
    /// circuit protocols are all distinct, so their exact intersection is still the expected
    /// result; psz14 hashes items to σ bits under the session's key, so a false match has
    /// probability up to 6·n2·2^-σ per run (2^-13.4 at σ = 32, n2 = 2^16).
    #[arg(long)]
    pub(crate) sigma: Option<u32>,
    /// What the receiver learns: `intersection`, `cardinality` or `sum` (of a value per
    /// sender record, 0..1000); the last two need a circuit protocol. Results go to
    /// `<protocol>-<result>-<threads>t` then.
    #[arg(long, value_name = "RESULT", default_value = "intersection", value_parser = crate::cli::parse_result)]
    pub(crate) result: ResultKind,
    /// Shape the link between the parties: a profile (lan, wifi, wan-intra, wan-inter, hsdpa
    /// from PSZ14 Tab. 7; cm20-150 ... cm20-1 from CM20 Tab. 2; rr17-wan) or RATE/RTT such as
    /// 50mbit/80ms [default: loopback as it is].
    #[arg(long, value_name = "NETWORK", value_parser = crate::netem::parse_profile)]
    pub(crate) network: Option<crate::netem::Profile>,
    /// Cloud prices for the cost of a run (JSON, as `blindjoin params --prices`) [default:
    /// CM20 §5.2.1's AWS prices].
    #[arg(long, value_name = "FILE")]
    pub(crate) prices: Option<PathBuf>,
    /// Seconds each party of a repetition may run and wait for its peer (`rsa_blind` at
    /// κ = 256 needs more than the default: its key generation and 15360-bit signatures take
    /// minutes); with --network, plus twice the time the protocol's bytes take at its rate.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub(crate) timeout: u64,
    /// Re-measure a paper's table with our protocols (psz-tab5, psz-tab7, psz-tab8, cm20-tab2,
    /// dcw13-tab3, rr17-fig6, kmrs14-tab1 to kmrs14-tab4, or all), writing `<--out>/<suite>/`
    /// (JSON, a Markdown table of the paper's figures beside ours, PNG plots); `all` writes
    /// every suite and an index to docs/report unless --out is given. The suite sets protocols, sizes, networks and
    /// threads; --reps applies.
    #[arg(long, value_name = "SUITE")]
    pub(crate) suite: Option<String>,
    /// The time a suite may take (e.g. 30m, 2h); settings that would overrun it are skipped
    /// and listed [default: 30m].
    #[arg(long, value_name = "TIME", value_parser = crate::suite::run::parse_budget)]
    pub(crate) budget: Option<Duration>,
    /// Split each run into this many buckets, padded to the public maximum, as `send` and
    /// `receive --buckets` do. Results go to `<protocol>-b<B>[p<K>]-...` then.
    #[arg(long, value_name = "B", default_value_t = 1)]
    pub(crate) buckets: u32,
    /// With --buckets: run this many buckets at once, each over its own connection.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub(crate) parallel: usize,
}

/// The connection a benchmark runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Plain TCP over loopback.
    Tcp,
    /// TLS 1.3 over loopback, each party pinning the other's certificate (as between two
    /// organisations).
    Tls,
}

/// The two parties' TLS identities of a benchmark, as PEM files in a temporary directory that
/// both party processes load.
pub(crate) struct BenchTls {
    dir: tempfile::TempDir,
}

impl BenchTls {
    /// Generates the identities.
    pub(crate) fn new() -> CliResult<Self> {
        let dir = tempfile::tempdir().map_err(|source| CliError::File {
            path: std::env::temp_dir(),
            source,
        })?;
        for who in ["receiver", "sender"] {
            let (_, pem) = Identity::generate(&format!("{who}.bench.blindjoin"))?;
            write_atomic(&dir.path().join(format!("{who}.crt")), pem.cert.as_bytes())?;
            write_atomic(&dir.path().join(format!("{who}.key")), pem.key.as_bytes())?;
        }
        Ok(BenchTls { dir })
    }

    /// The arguments that make a party process use them.
    pub(crate) fn args(&self) -> Vec<String> {
        vec!["--tls-dir".into(), self.dir.path().display().to_string()]
    }
}

/// The link of a benchmark party: plain TCP, or TLS with the identities in `tls_dir`.
pub(crate) fn party_link(
    tls_dir: Option<&Path>,
    is_receiver: bool,
    timeout: Duration,
) -> CliResult<LinkConfig> {
    let limits = Limits::new(timeout, timeout);
    let Some(d) = tls_dir else {
        return Ok(LinkConfig::plain(limits));
    };
    let (me, peer) = if is_receiver {
        ("receiver", "sender")
    } else {
        ("sender", "receiver")
    };
    let id = Identity::load(&d.join(format!("{me}.crt")), &d.join(format!("{me}.key")))?;
    let peer = Fingerprint::of(&tls::load_cert(&d.join(format!("{peer}.crt")))?);
    Ok(LinkConfig::tls(
        TlsConfig::new(&id, &PeerCheck::Pinned(peer))?,
        limits,
    ))
}

/// Opens a benchmark party's link: the receiver listens on loopback (printing `PORT p`), the
/// sender connects to `connect`.
pub(crate) fn open_party_link(
    cfg: &LinkConfig,
    is_receiver: bool,
    connect: Option<&str>,
) -> CliResult<Link> {
    Ok(open_party_lanes(cfg, is_receiver, connect)?.0)
}

/// [`open_party_link`], keeping what opens further connections to the peer (a bucketed run's
/// lanes).
fn open_party_lanes(
    cfg: &LinkConfig,
    is_receiver: bool,
    connect: Option<&str>,
) -> CliResult<(Link, Lanes)> {
    if is_receiver {
        let l = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| blindjoin_core::Error::io("cannot listen on loopback", e))?;
        let port = l
            .local_addr()
            .map_err(|e| blindjoin_core::Error::io("no local address", e))?
            .port();
        println!("PORT {port}");
        let lanes = l
            .try_clone()
            .map_err(|e| blindjoin_core::Error::io("cannot share the listener", e))?;
        let link = transport::accept(&l, cfg, &mut |line| eprintln!("{line}"))?;
        return Ok((link, Lanes::Listener(lanes)));
    }
    let addr = connect.ok_or_else(|| CliError::Usage("the sender needs --connect".into()))?;
    let link = transport::connect(addr, cfg, &mut |line| eprintln!("{line}"))?;
    Ok((link, Lanes::Connect(addr.to_owned())))
}

/// Hidden `bench-party` options: one party of a benchmark repetition.
#[derive(Debug, Args)]
pub struct PartyArgs {
    #[arg(long)]
    role: String,
    #[arg(long)]
    protocol: &'static Protocol,
    #[arg(long)]
    n_recv: usize,
    #[arg(long)]
    n_send: usize,
    #[arg(long)]
    overlap: usize,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    connect: Option<String>,
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    #[arg(long)]
    tls_dir: Option<PathBuf>,
    #[arg(long, default_value_t = 128)]
    kappa: u32,
    #[arg(long)]
    sigma: Option<u32>,
    #[arg(long, default_value = "intersection", value_parser = crate::cli::parse_result)]
    result: ResultKind,
    #[arg(long, default_value_t = 1)]
    buckets: u32,
    #[arg(long, default_value_t = 1)]
    parallel: usize,
}

/// What one party process reports.
#[derive(Debug, Serialize, Deserialize)]
struct PartyResult {
    wall_seconds: f64,
    cpu_seconds: f64,
    traffic: Traffic,
    phases: Vec<(String, f64)>,
    intersection: Option<Vec<usize>>,
    /// The receiver's cardinality or sum, with `--result`.
    aggregate: Option<u128>,
    peak_rss_bytes: u64,
    threads: usize,
}

/// One row of the result table.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) protocol: &'static str,
    pub(crate) result: ResultKind,
    /// Buckets and parallel connections of a bucketed run (1 and 1: one session).
    pub(crate) buckets: u32,
    pub(crate) parallel: usize,
    /// The shaped network, if any.
    pub(crate) network: Option<crate::netem::Profile>,
    pub(crate) transport: Transport,
    pub(crate) n_recv: usize,
    pub(crate) n_send: usize,
    pub(crate) threads: usize,
    pub(crate) reps: usize,
    pub(crate) wall_seconds: f64,
    pub(crate) cpu_receiver_seconds: f64,
    pub(crate) cpu_sender_seconds: f64,
    pub(crate) cpu_sum_seconds: f64,
    pub(crate) bytes_receiver_to_sender: u64,
    pub(crate) bytes_sender_to_receiver: u64,
    pub(crate) bytes_per_item: f64,
    /// Message flights on the protocol's critical path, the handshake included (the
    /// descriptor's count).
    pub(crate) rounds: u32,
    /// Flights each party sent, counted where the frames leave it (runs of sends with no
    /// receive in between); flights both send at once count for each.
    pub(crate) flights_sent_receiver: u64,
    pub(crate) flights_sent_sender: u64,
    pub(crate) peak_rss_receiver_bytes: u64,
    pub(crate) peak_rss_sender_bytes: u64,
    pub(crate) plaintext_join_seconds: f64,
    pub(crate) wall_over_plaintext: f64,
    /// Wall time per protocol phase of the median repetition, receiver and sender.
    /// The run's cloud cost at `--prices` (CM20 §5.2, [`crate::costmodel::cost`]), USD per
    /// 1000 runs.
    pub(crate) cost_per_1000_runs: crate::costmodel::Cost,
    pub(crate) phases_receiver: Vec<(String, f64)>,
    pub(crate) phases_sender: Vec<(String, f64)>,
}

/// The benchmark's sets: distinct 16-character records, `overlap` shared, each side shuffled.
/// With `sigma`, records whose σ-bit value in the circuit protocols
/// (`blindjoin_psi::protocols::circuit_psi::short_value`) equals an earlier record's are
/// skipped, so that no two records of the sets collide at that σ.
fn bench_sets(
    n_recv: usize,
    n_send: usize,
    overlap: usize,
    seed: u64,
    sigma: Option<u32>,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let record = |k: usize| {
        format!(
            "id{:014x}",
            (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8
        )
        .into_bytes()
    };
    let first = n_recv - overlap;
    let total = first + n_send;
    let pool: Vec<Vec<u8>> = match sigma {
        None => (0..total).map(record).collect(),
        Some(sigma) => {
            let mut seen = HashSet::with_capacity(total);
            (0..)
                .map(record)
                .filter(|r| {
                    let item = items_from_records(&[r])[0];
                    seen.insert(circuit_psi::short_value(&item, sigma))
                })
                .take(total)
                .collect()
        }
    };
    let mut recv: Vec<Vec<u8>> = pool[..n_recv].to_vec();
    let mut send: Vec<Vec<u8>> = pool[first..].to_vec();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    recv.shuffle(&mut rng);
    send.shuffle(&mut rng);
    (recv, send)
}

/// The sender's value of a benchmark record in a sum run ([`crate::synth::value_of`]).
pub fn bench_value(record: &[u8]) -> u64 {
    crate::synth::value_of(record)
}

/// The receiver's expected result: the indices of the intersection, or its cardinality or
/// the sum of the sender's [`bench_value`]s over it.
fn expected_result(recv: &[Vec<u8>], send: &[Vec<u8>], result: ResultKind) -> ExpectedResult {
    let idx = expected_indices(recv, send);
    match result {
        ResultKind::Intersection => ExpectedResult::Indices(idx),
        ResultKind::Cardinality => ExpectedResult::Aggregate(idx.len() as u128),
        ResultKind::Sum => {
            ExpectedResult::Aggregate(idx.iter().map(|&i| u128::from(bench_value(&recv[i]))).sum())
        }
    }
}

/// What the receiver of a repetition must report.
#[derive(Debug, PartialEq, Eq)]
enum ExpectedResult {
    Indices(Vec<usize>),
    Aggregate(u128),
}

fn expected_indices(recv: &[Vec<u8>], send: &[Vec<u8>]) -> Vec<usize> {
    let s: HashSet<&[u8]> = send.iter().map(Vec::as_slice).collect();
    recv.iter()
        .enumerate()
        .filter(|(_, r)| s.contains(r.as_slice()))
        .map(|(i, _)| i)
        .collect()
}

/// Runs one party (the hidden `bench-party` command) and prints its result as JSON.
pub fn run_party(a: &PartyArgs) -> CliResult<()> {
    let (recv, send) = bench_sets(a.n_recv, a.n_send, a.overlap, a.seed, a.sigma);
    let timeout = Duration::from_secs(a.timeout);
    // Both parties are this benchmark's own processes: the memory budget, which bounds what a
    // peer's announced size may commit, does not apply (rr17a's sender holds 5.2 GB at 2^20).
    let opts = RunOptions {
        kappa: a.kappa,
        memory_budget: None,
        sigma: a.sigma,
        allow_weak: a.sigma.is_some(),
        result: a.result,
        values: (a.result == ResultKind::Sum && a.role != "receiver")
            .then(|| send.iter().map(|r| bench_value(r)).collect()),
        ..RunOptions::default()
    };
    let mut rng = rand::rng();
    let is_receiver = a.role == "receiver";
    // Timed: hashing the records to items, and the protocol; not: making the sets, connecting.
    let (cpu0, t0) = (process_cpu_seconds(), Instant::now());
    let items = items_of(if is_receiver { &recv } else { &send });
    let (hash_cpu, hash_wall) = (process_cpu_seconds() - cpu0, t0.elapsed().as_secs_f64());
    drop((recv, send));
    // The records were millions of small allocations. glibc defers the work of freeing them
    // to the next large allocation (`malloc_consolidate`), which would otherwise land inside the
    // timed protocol or, worse, between the sender's connect and its hello, where the receiver's
    // clock counts it (0.3-0.4 s at 2^20). Make that allocation here, untimed.
    std::hint::black_box(vec![0u8; 64 << 10]);
    let link = party_link(a.tls_dir.as_deref(), is_receiver, timeout)?;
    let (ch, lanes) = open_party_lanes(&link, is_receiver, a.connect.as_deref())?;
    let (cpu0, t0) = (process_cpu_seconds(), Instant::now());
    let mut ch = Metered::new(ch);
    let mut bucket_phases = Vec::new();
    let mut other_lanes = Traffic::default();
    let (phases, intersection, aggregate) = if a.buckets > 1 {
        let b = Buckets {
            count: a.buckets,
            parallel: a.parallel,
        };
        b.check(&opts)?;
        let out = crate::bucketed::run(
            &mut ch,
            &mut || lanes.open(&link),
            items.len() as u64,
            |partition| {
                Ok(Box::new(crate::bucketed::MemorySplit::new(
                    &items, partition,
                )))
            },
            &crate::bucketed::Party {
                protocol: a.protocol,
                receiver: is_receiver,
                opts: &opts,
                buckets: b,
                max_peer: Some(opts.max_peer_set_size),
            },
            None,
        )?;
        other_lanes = out.other_lanes;
        // The matches are item indices.
        let matches = out
            .matches
            .as_ref()
            .map(|m| m.iter().map(|&i| i as usize).collect());
        let r = (Phases(Vec::new()), matches, None);
        bucket_phases = out.phases.clone();
        out.close();
        r
    } else if is_receiver {
        let out = a.protocol.receive(&mut ch, &items, &opts, &mut rng)?;
        let aggregate = out.aggregate.map(|g| match g {
            Aggregate::Cardinality(c) => u128::from(c),
            Aggregate::Sum(s) => s,
        });
        (out.phases, Some(out.indices), aggregate)
    } else {
        (
            a.protocol.send(&mut ch, &items, &opts, &mut rng)?.phases,
            None,
            None,
        )
    };
    let wall = hash_wall + t0.elapsed().as_secs_f64();
    let cpu = hash_cpu + process_cpu_seconds() - cpu0;
    let mut traffic = ch.traffic();
    traffic += other_lanes;
    let mut phases: Vec<(String, f64)> = phases
        .0
        .iter()
        .map(|(n, s)| ((*n).to_owned(), *s))
        .collect();
    phases.extend(bucket_phases);
    let result = PartyResult {
        wall_seconds: wall,
        cpu_seconds: cpu,
        traffic,
        phases,
        intersection,
        aggregate,
        peak_rss_bytes: peak_rss_bytes(),
        threads: rayon::current_num_threads(),
    };
    print_result(&result)
}

/// Prints a party's result as the `RESULT {json}` line that [`run_pair`] reads.
pub(crate) fn print_result(result: &impl Serialize) -> CliResult<()> {
    let json = serde_json::to_string(result)
        .map_err(|e| CliError::Usage(format!("cannot encode the result: {e}")))?;
    println!("RESULT {json}");
    Ok(())
}

pub(crate) fn party_command(threads: usize, subcommand: &str) -> CliResult<Command> {
    let exe = std::env::current_exe()
        .map_err(|e| blindjoin_core::Error::io("cannot find the blindjoin executable", e))?;
    let mut c = Command::new(exe);
    c.arg("--threads").arg(threads.to_string()).arg(subcommand);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    Ok(c)
}

pub(crate) fn read_result<T: serde::de::DeserializeOwned>(
    mut child: std::process::Child,
    lines: &mut dyn Iterator<Item = String>,
    who: &str,
) -> CliResult<T> {
    let mut result = None;
    for line in lines {
        if let Some(json) = line.strip_prefix("RESULT ") {
            result =
                Some(serde_json::from_str::<T>(json).map_err(|e| {
                    CliError::Verification(format!("{who} printed a bad result: {e}"))
                })?);
        }
    }
    let status = child
        .wait()
        .map_err(|e| blindjoin_core::Error::io(format!("cannot wait for the {who}"), e))?;
    let mut err = String::new();
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    match result {
        Some(r) if status.success() => Ok(r),
        _ => Err(CliError::Verification(format!(
            "the {who} process failed ({status}): {}",
            err.trim()
        ))),
    }
}

/// Runs `blindjoin <subcommand> --role receiver ARGS` (which prints `PORT p` first) and
/// `blindjoin <subcommand> --role sender --connect 127.0.0.1:p ARGS`, and returns the
/// `RESULT {json}` each printed. With `network`, the sender connects through a
/// [`ShapedRelay`](crate::netem::ShapedRelay) of that profile.
pub(crate) fn run_pair<T: serde::de::DeserializeOwned>(
    threads: usize,
    subcommand: &str,
    args: &[String],
    network: Option<&crate::netem::Profile>,
) -> CliResult<(T, T)> {
    let mut rc = party_command(threads, subcommand)?;
    rc.args(["--role", "receiver"]).args(args);
    let mut receiver = rc
        .spawn()
        .map_err(|e| blindjoin_core::Error::io("cannot start the receiver process", e))?;
    let stdout = receiver
        .stdout
        .take()
        .ok_or_else(|| CliError::Verification("no receiver stdout".into()))?;
    let mut rlines = BufReader::new(stdout).lines().map_while(Result::ok);
    let port = rlines
        .next()
        .and_then(|l| l.strip_prefix("PORT ").map(str::to_owned))
        .ok_or_else(|| CliError::Verification("the receiver did not report its port".into()))?;
    let mut target = format!("127.0.0.1:{port}");
    let relay = match network {
        Some(p) => {
            let upstream = target
                .parse()
                .map_err(|_| CliError::Verification(format!("bad receiver port `{port}`")))?;
            let r = crate::netem::ShapedRelay::start(upstream, p)
                .map_err(|e| blindjoin_core::Error::io("cannot start the shaping relay", e))?;
            target = r.addr().to_string();
            Some(r)
        }
        None => None,
    };
    let mut sc = party_command(threads, subcommand)?;
    sc.args(["--role", "sender", "--connect", &target])
        .args(args);
    let mut sender = sc
        .spawn()
        .map_err(|e| blindjoin_core::Error::io("cannot start the sender process", e))?;
    let sout = sender
        .stdout
        .take()
        .ok_or_else(|| CliError::Verification("no sender stdout".into()))?;
    let mut slines = BufReader::new(sout).lines().map_while(Result::ok);
    let r = read_result(receiver, &mut rlines, "receiver")?;
    let s = read_result(sender, &mut slines, "sender")?;
    drop(relay);
    Ok((r, s))
}

/// One repetition of `a`'s protocol (with its seed and κ) at the given sizes.
fn one_rep(
    a: &BenchArgs,
    n_recv: usize,
    n_send: usize,
    overlap: usize,
    threads: usize,
    tls: Option<&BenchTls>,
) -> CliResult<(PartyResult, PartyResult)> {
    let (p, seed, kappa) = (a.protocol, a.seed, a.kappa);
    // On a shaped link the parties' deadline grows by twice the time the traffic formula's
    // bytes take at its rate.
    let sizes = blindjoin_psi::protocol::Sizes {
        n_recv: n_recv as u64,
        n_send: n_send as u64,
        kappa,
        lambda: 40,
        sigma: a.sigma,
    };
    let transfer = a.network.as_ref().map_or(0.0, |n| {
        crate::costmodel::predict(p, &sizes, Some(n), None, None)
            .map_or(0.0, |t| t.transfer_seconds)
    });
    let timeout = a.timeout + (2.0 * transfer).ceil() as u64;
    let mut args: Vec<String> = [
        "--kappa",
        &kappa.to_string(),
        "--protocol",
        p.name,
        "--n-recv",
        &n_recv.to_string(),
        "--n-send",
        &n_send.to_string(),
        "--overlap",
        &overlap.to_string(),
        "--seed",
        &seed.to_string(),
        "--timeout",
        &timeout.to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    if let Some(sigma) = a.sigma {
        args.extend(["--sigma".to_owned(), sigma.to_string()]);
    }
    args.extend(["--result".to_owned(), a.result.to_string()]);
    if a.buckets > 1 {
        args.extend([
            "--buckets".to_owned(),
            a.buckets.to_string(),
            "--parallel".to_owned(),
            a.parallel.to_string(),
        ]);
    }
    if let Some(t) = tls {
        args.extend(t.args());
    }
    run_pair(threads, "bench-party", &args, a.network.as_ref())
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn plaintext_join_seconds(recv: &[Vec<u8>], send: &[Vec<u8>], reps: usize) -> f64 {
    let times = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            let idx = expected_indices(recv, send);
            std::hint::black_box(idx);
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(times)
}

/// Runs the benchmark and prints (and optionally writes) the table.
pub fn run(a: &BenchArgs, threads: Option<usize>) -> CliResult<()> {
    if let Some(suite) = &a.suite {
        let out = if suite == "all" && a.out == Path::new("bench/out") {
            PathBuf::from("docs/report")
        } else {
            a.out.clone()
        };
        let budget = a.budget.unwrap_or(Duration::from_secs(30 * 60));
        return crate::suite::run::run(suite, budget, a.reps, &out);
    }
    let threads = threads.unwrap_or(1);
    let rows = measure(a, threads)?;
    let mut md = match &a.network {
        Some(n) => format!("Network {} ({}).\n\n{TABLE_HEAD}\n", n.describe(), n.source),
        None => format!("{TABLE_HEAD}\n"),
    };
    for r in &rows {
        md.push_str(&table_row(r));
        md.push('\n');
    }
    let mut name = a.protocol.name.to_owned();
    if a.buckets > 1 {
        name.push_str(&format!("-b{}", a.buckets));
        if a.parallel > 1 {
            name.push_str(&format!("p{}", a.parallel));
        }
    }
    if a.result != ResultKind::Intersection {
        name.push_str(&format!("-{}", a.result));
    }
    if let Some(n) = &a.network {
        name.push_str(&format!("-{}", n.name.replace('/', "-")));
    }
    name.push_str(&format!("-{threads}t"));
    write_results(&a.out, &name, &rows, &md)
}

/// Measures `a`'s protocol at each of its sizes (and transports) with `threads` per party,
/// printing the table's rows as they come.
pub(crate) fn measure(a: &BenchArgs, threads: usize) -> CliResult<Vec<Row>> {
    crate::cli::check_two_party(a.protocol)?;
    blindjoin_psi::check_security(
        a.protocol,
        &RunOptions {
            kappa: a.kappa,
            result: a.result,
            ..RunOptions::default()
        },
    )?;
    if a.reps == 0 || threads == 0 {
        return Err(CliError::Usage(
            "--reps and --threads must be at least 1".into(),
        ));
    }
    if !(0.0..=1.0).contains(&a.overlap) {
        return Err(CliError::Usage(
            "--overlap is a fraction between 0 and 1".into(),
        ));
    }
    let senders = a.sender_sizes.clone().unwrap_or_else(|| a.sizes.clone());
    if senders.len() != a.sizes.len() {
        return Err(CliError::Usage(
            "--sender-sizes needs as many entries as --sizes".into(),
        ));
    }
    let tls = if a.transport.contains(&Transport::Tls) {
        Some(BenchTls::new()?)
    } else {
        None
    };
    let prices = match &a.prices {
        Some(p) => crate::costmodel::Prices::load(p)?,
        None => crate::costmodel::Prices::default(),
    };
    let mut rows = Vec::new();
    if let Some(n) = &a.network {
        println!("network: {} ({})", n.describe(), n.source);
    }
    println!("{}", TABLE_HEAD);
    for (&n_recv, &n_send) in a.sizes.iter().zip(&senders) {
        let overlap = ((n_recv.min(n_send) as f64) * a.overlap) as usize;
        let (recv, send) = bench_sets(n_recv, n_send, overlap, a.seed, a.sigma);
        let expected = expected_result(&recv, &send, a.result);
        let mut by_transport: Vec<Vec<(PartyResult, PartyResult)>> =
            a.transport.iter().map(|_| Vec::new()).collect();
        for rep in 0..a.reps {
            for (t, reps) in a.transport.iter().zip(by_transport.iter_mut()) {
                let tls = (*t == Transport::Tls).then_some(()).and(tls.as_ref());
                let (r, s) = one_rep(a, n_recv, n_send, overlap, threads, tls)?;
                let got = match (r.aggregate, r.intersection.clone()) {
                    (Some(g), _) => Some(ExpectedResult::Aggregate(g)),
                    (None, Some(idx)) => Some(ExpectedResult::Indices(idx)),
                    (None, None) => None,
                };
                if got.as_ref() != Some(&expected) {
                    let want = match &expected {
                        ExpectedResult::Indices(i) => format!("the expected {} indices", i.len()),
                        ExpectedResult::Aggregate(g) => format!("the expected {} {g}", a.result),
                    };
                    return Err(CliError::Verification(format!(
                        "{} at {n_recv}x{n_send} over {t:?}, repetition {rep}: the receiver's {} differs from {want}",
                        a.protocol, a.result
                    )));
                }
                reps.push((r, s));
            }
        }
        let plain = plaintext_join_seconds(&recv, &send, a.reps);
        for (&transport, reps) in a.transport.iter().zip(&by_transport) {
            let m = |f: &dyn Fn(&(PartyResult, PartyResult)) -> f64| {
                median(reps.iter().map(f).collect())
            };
            let wall = m(&|(r, s)| r.wall_seconds.max(s.wall_seconds));
            let (r0, s0) = &reps[0];
            let total = r0.traffic.bytes_sent + s0.traffic.bytes_sent;
            let mut by_wall: Vec<&(PartyResult, PartyResult)> = reps.iter().collect();
            by_wall.sort_by(|a, b| {
                f64::total_cmp(
                    &a.0.wall_seconds.max(a.1.wall_seconds),
                    &b.0.wall_seconds.max(b.1.wall_seconds),
                )
            });
            let (rm, sm) = by_wall[by_wall.len() / 2];
            eprintln!(
                "phases at {n_recv}x{n_send} (median repetition): receiver {}; sender {}",
                format_phases(&rm.phases),
                format_phases(&sm.phases)
            );
            let row = Row {
                protocol: a.protocol.name,
                result: a.result,
                buckets: a.buckets,
                parallel: a.parallel,
                network: a.network.clone(),
                transport,
                n_recv,
                n_send,
                threads,
                reps: a.reps,
                wall_seconds: wall,
                cpu_receiver_seconds: m(&|(r, _)| r.cpu_seconds),
                cpu_sender_seconds: m(&|(_, s)| s.cpu_seconds),
                cpu_sum_seconds: m(&|(r, s)| r.cpu_seconds + s.cpu_seconds),
                bytes_receiver_to_sender: r0.traffic.bytes_sent,
                bytes_sender_to_receiver: s0.traffic.bytes_sent,
                bytes_per_item: total as f64 / ((n_recv + n_send) as f64 / 2.0).max(1.0),
                rounds: a.protocol.flights,
                flights_sent_receiver: r0.traffic.flights_sent,
                flights_sent_sender: s0.traffic.flights_sent,
                peak_rss_receiver_bytes: r0.peak_rss_bytes,
                peak_rss_sender_bytes: s0.peak_rss_bytes,
                plaintext_join_seconds: plain,
                wall_over_plaintext: wall / plain,
                cost_per_1000_runs: {
                    let c = crate::costmodel::cost(
                        &prices,
                        wall,
                        r0.traffic.bytes_sent,
                        s0.traffic.bytes_sent,
                    );
                    crate::costmodel::Cost {
                        b2b_usd: c.b2b_usd * 1000.0,
                        internet_usd: c.internet_usd * 1000.0,
                    }
                },
                phases_receiver: rm.phases.clone(),
                phases_sender: sm.phases.clone(),
            };
            println!("{}", table_row(&row));
            rows.push(row);
        }
    }
    Ok(rows)
}

fn format_phases(phases: &[(String, f64)]) -> String {
    phases
        .iter()
        .map(|(n, s)| format!("{n} {s:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes `<dir>/<name>.json` and `<dir>/<name>.md` (creating `dir`), atomically.
pub(crate) fn write_results(
    dir: &std::path::Path,
    name: &str,
    value: &impl Serialize,
    markdown: &str,
) -> CliResult<()> {
    std::fs::create_dir_all(dir).map_err(|source| CliError::File {
        path: dir.to_path_buf(),
        source,
    })?;
    let stem = dir.join(name);
    let json = serde_json::to_vec_pretty(value)
        .map_err(|e| CliError::Usage(format!("cannot encode the results: {e}")))?;
    write_atomic(&stem.with_extension("json"), &json)?;
    write_atomic(&stem.with_extension("md"), markdown.as_bytes())?;
    eprintln!("wrote {0}.json and {0}.md", stem.display());
    Ok(())
}

const TABLE_HEAD: &str = "| protocol | n1 (recv) | n2 (send) | threads | wall (s) | CPU recv (s) | CPU send (s) | CPU sum (s) | recv→send (B) | send→recv (B) | B/item | rounds | plaintext join (s) | wall / plaintext |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |";

fn table_row(r: &Row) -> String {
    let mut name = match r.transport {
        Transport::Tcp => r.protocol.to_owned(),
        Transport::Tls => format!("{} (TLS)", r.protocol),
    };
    if r.buckets > 1 {
        name.push_str(&format!(" [{} buckets", r.buckets));
        if r.parallel > 1 {
            name.push_str(&format!(", {} at once", r.parallel));
        }
        name.push(']');
    }
    if r.result != ResultKind::Intersection {
        name.push_str(&format!(" ({})", r.result));
    }
    if let Some(n) = &r.network {
        name.push_str(&format!(" @ {}", n.name));
    }
    format!(
        "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {} | {:.1} | {} | {:.4} | {:.1} |",
        name,
        r.n_recv,
        r.n_send,
        r.threads,
        r.wall_seconds,
        r.cpu_receiver_seconds,
        r.cpu_sender_seconds,
        r.cpu_sum_seconds,
        r.bytes_receiver_to_sender,
        r.bytes_sender_to_receiver,
        r.bytes_per_item,
        r.rounds,
        r.plaintext_join_seconds,
        r.wall_over_plaintext
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_sets_have_the_requested_overlap_and_distinct_records() {
        let (r, s) = bench_sets(1000, 700, 300, 5, None);
        assert_eq!(r.iter().collect::<HashSet<_>>().len(), 1000);
        assert_eq!(s.iter().collect::<HashSet<_>>().len(), 700);
        assert_eq!(expected_indices(&r, &s).len(), 300);
        // At σ = 12 (4096 values) about 120 of 1400 records would collide; none are kept.
        let (r, s) = bench_sets(1000, 700, 300, 5, Some(12));
        assert_eq!((r.len(), s.len()), (1000, 700));
        assert_eq!(expected_indices(&r, &s).len(), 300);
        let values: HashSet<u128> = r
            .iter()
            .chain(&s)
            .map(|x| circuit_psi::short_value(&items_from_records(&[x])[0], 12))
            .collect();
        assert_eq!(values.len(), 1400);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
