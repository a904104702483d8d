//! Command-line definition and dispatch.

use crate::error::{CliError, CliResult};
use crate::input::Format;
use crate::link::NetOpts;
use crate::normalize::Normalize;
use crate::output::{OutputColumns, OutputSpec};
use crate::{aided, bench, bench_aided, bench_ot, demo, keygen, params, party, serve, synth};
use blindjoin_psi::{Protocol, ResultKind, protocols};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Appends `text` to `out` wrapped at `width` columns, the first line after `first` and the
/// rest indented by `indent`.
fn wrap_into(out: &mut String, first: &str, text: &str, indent: usize, width: usize) {
    let mut line = first.to_owned();
    for word in text.split_whitespace() {
        if line.chars().count() + 1 + word.chars().count() > width
            && line.trim().chars().count() > first.trim().chars().count()
        {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
        } else if !line.ends_with(' ') {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

/// The protocol list shown under `--help`, from the registry: name, what it does, security
/// model and paper.
fn protocols_help() -> String {
    const INDENT: usize = 10;
    let mut out = String::from("Protocols (--protocol):\n");
    for p in protocols::ALL {
        let r = p.references.first();
        let text = format!(
            "{}. {}: {}. [{} {}]",
            p.summary,
            p.security,
            p.assumptions,
            r.map_or("", |r| r.tag),
            r.map_or("", |r| r.part),
        );
        wrap_into(
            &mut out,
            &format!("  {:<w$}", p.name, w = INDENT - 2),
            &text,
            INDENT,
            96,
        );
    }
    out.push_str(
        "\nSecurity parameters: κ = 128 (computational), λ = 40 (statistical) by default; λ below \
         40 needs --allow-weak. `naive` is refused outside `bench` unless --insecure.",
    );
    out
}

/// blindjoin: find the rows two organisations have in common, revealing nothing else.
///
/// One party (the receiver) learns which of its rows the other party (the sender) also has;
/// the sender learns only how many distinct keys the receiver has.
#[derive(Debug, Parser)]
#[command(name = "blindjoin", version, after_help = protocols_help())]
pub struct Cli {
    /// Worker threads for the cryptography (default: all cores).
    #[arg(long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run both parties on generated data over loopback TLS and print a summary.
    #[command(after_help = protocols_help())]
    Demo(DemoArgs),
    /// Be the receiver: learn which of your rows the sender also has.
    #[command(after_help = protocols_help())]
    Receive(ReceiveArgs),
    /// Be the sender: help the receiver find the common rows; learn only its set size.
    #[command(after_help = protocols_help())]
    Send(SendArgs),
    /// Write two synthetic identifier files (emails and phone numbers) with a known overlap.
    Gen(GenArgs),
    /// Make this party's TLS identity: NAME.key (private, mode 0600) and NAME.crt (self-signed);
    /// prints the certificate's fingerprint to give the peer.
    Keygen(keygen::KeygenArgs),
    /// Benchmark a protocol over loopback (TCP or TLS) against the plaintext hash join.
    #[command(after_help = protocols_help())]
    Bench(bench::BenchArgs),
    /// One party of a benchmark (started by `bench`).
    #[command(hide = true)]
    BenchParty(bench::PartyArgs),
    /// Benchmark OT extension end to end over loopback TCP (two processes).
    BenchOt(bench_ot::BenchOtArgs),
    /// One party of an OT benchmark (started by `bench-ot`).
    #[command(hide = true)]
    BenchOtParty(bench_ot::OtPartyArgs),
    /// List the protocols: what each does, its security model, parties and paper.
    Protocols(ProtocolsArgs),
    /// Predict a protocol's bytes, rounds, time and cloud cost at given set sizes on a
    /// network (the cost model, calibrated by `bench`'s loopback results).
    Params(params::ParamsArgs),
    /// Be one client of a server-aided run: with the other clients and a `blindjoin server`,
    /// learn which of your rows every client has.
    #[command(after_help = protocols_help())]
    Aided(Box<aided::AidedArgs>),
    /// Benchmark a server-aided protocol: the server and every client as processes over
    /// loopback, against the plaintext server-aided intersection.
    BenchAided(bench_aided::BenchAidedArgs),
    /// One client of a server-aided benchmark (started by `bench-aided`).
    #[command(hide = true)]
    BenchAidedClient(bench_aided::AidedClientArgs),
    /// Be the untrusted server of server-aided runs: intersect the clients' labels, learning
    /// only set sizes and the intersection's size.
    Server(serve::ServerArgs),
}

#[derive(Debug, Args)]
struct ProtocolsArgs {
    /// Print the registry as JSON (name, summary, papers, security model, roles, parameters,
    /// rounds, message flow).
    #[arg(long)]
    json: bool,
}

/// Where a party's keys come from and how they are normalised (`send`, `receive`, `aided`).
#[derive(Debug, Args)]
pub struct KeyOpts {
    /// Input file: CSV with a header (with --column), Parquet (`.parquet`, `.pq`), or one key
    /// per line.
    #[arg(long, short)]
    pub input: PathBuf,
    /// The column holding the key; several comma-separated columns make a composite key
    /// (e.g. first_name,last_name,dob). Without it every line is a key (or a one-column
    /// Parquet file's column).
    #[arg(long, short, value_delimiter = ',')]
    pub column: Vec<String>,
    /// The input's format [default: by extension: .parquet and .pq are Parquet; otherwise CSV
    /// with --column, lines without].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Normalise keys before matching (both parties must choose the same).
    #[arg(long, value_enum, default_value = "none")]
    pub normalize: Normalize,
    /// Country calling code for phone numbers written without one (e.g. 44); --normalize phone.
    #[arg(long, value_name = "DIGITS")]
    pub country_code: Option<String>,
}

/// The security parameters (`send`, `receive`, `aided`).
#[derive(Debug, Args)]
pub struct SecurityOpts {
    /// Computational security level κ in bits: 80, 128, 192 or 256, as the protocol offers
    /// (`blindjoin protocols` lists each protocol's levels); both parties must choose the same.
    #[arg(long, default_value_t = 128)]
    pub kappa: u32,
    /// Statistical security parameter λ in bits.
    #[arg(long, default_value_t = 40)]
    pub lambda: u32,
    /// Allow λ below 40 (weaker statistical security than the default; every party must agree
    /// on λ anyway).
    #[arg(long)]
    pub allow_weak: bool,
    /// The item length σ in bits of the circuit protocols (`circuit_gmw`, `circuit_yao`) and
    /// of `psz14`'s short values [default: derived from the set sizes and λ]; a smaller one
    /// needs --allow-weak.
    #[arg(long)]
    pub sigma: Option<u32>,
}

/// Where the matched rows go (`receive`, `aided`).
#[derive(Debug, Args)]
pub struct OutputOpts {
    /// Write the matched rows of the input here (header kept); nothing is written on failure.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// The output's format [default: by extension (.csv, .parquet, .pq); otherwise the
    /// input's, CSV for a Parquet input].
    #[arg(long, value_enum)]
    pub output_format: Option<Format>,
    /// Which columns of the matched rows to write: all, only the key column(s) as written, or
    /// only the row's index in the input (`row`, from 0).
    #[arg(long, value_enum, default_value = "all")]
    pub output_columns: OutputColumns,
}

impl OutputOpts {
    /// How the rows are written.
    pub fn spec(&self) -> OutputSpec {
        OutputSpec {
            format: self.output_format,
            columns: self.output_columns,
        }
    }
}

/// Options both `send` and `receive` take.
#[derive(Debug, Args)]
pub struct PartyOpts {
    /// Where the peer is, how it is authenticated, and the run's time limits.
    #[command(flatten)]
    pub net: NetOpts,
    /// The input and its keys.
    #[command(flatten)]
    pub keys: KeyOpts,
    /// The protocol (both parties must choose the same).
    #[arg(long, short, default_value = "ecdh")]
    pub protocol: &'static Protocol,
    /// Allow the insecure naive-hashing protocol outside benchmarks.
    #[arg(long)]
    pub insecure: bool,
    /// κ and λ.
    #[command(flatten)]
    pub security: SecurityOpts,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
    /// Refuse to run unless the peer has exactly this many distinct keys.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub expect_peer_size: Option<u64>,
    /// The most memory a run may commit on the peer's announced set size before the peer's
    /// data arrives (e.g. 512M, 4G; `none` for no limit); a larger need is refused at once.
    /// With --buckets auto, also the memory the run's bucket sessions are sized to.
    #[arg(long, value_name = "BYTES", default_value = "4G", value_parser = parse_budget)]
    pub memory: Budget,
    /// Refuse a peer announcing more distinct keys than this [default: max(2^20, 4 × ours)].
    /// A receiver may test as many guessed keys as it announces.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub max_peer_size: Option<u64>,
    /// Write a JSON run report to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// What the receiver learns: the matched rows (`intersection`), only their number of
    /// distinct keys (`cardinality`), or only the sum of the sender's --value-column over them
    /// (`sum`). Both parties must choose the same; `cardinality` and `sum` need a circuit
    /// protocol (circuit_gmw, circuit_gmw_scalar, circuit_yao).
    #[arg(long, value_name = "RESULT", default_value = "intersection", value_parser = parse_result)]
    pub result: ResultKind,
    /// Split the run into B buckets by a hash keyed per run: bucket p of each party runs an
    /// ordinary session with the peer's bucket p, padded with random dummies to a public
    /// maximum so that no bucket's size tells anything (both parties must choose the same B).
    /// `auto`: each party proposes the fewest buckets (a power of two) whose sessions fit in
    /// --memory for its input's size, and the run takes the larger proposal.
    #[arg(long, value_name = "B", default_value = "1", value_parser = parse_buckets)]
    pub buckets: u32,
    /// Run K buckets at once, each over its own connection (with --buckets; both parties must
    /// choose the same K).
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub parallel: usize,
    /// Keep the bucketed run's state in DIR (private: mode 0700), so that an interrupted run
    /// can be resumed by running the same command again: buckets both parties finished are
    /// kept, the others run again (both parties must resume, each with its own directory). A
    /// bucket the sender served is not served again unless the sender passes --allow-rerun.
    /// DIR is emptied once the run succeeds.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// With --resume, on the sender: serve again the buckets this side served before but the
    /// receiver has no record of (a run interrupted while a bucket ran leaves such a bucket).
    /// The receiver could then query them twice; without this the sender refuses the resume
    /// and names them. Only the sender's decides; the receiver may pass it too.
    #[arg(long, requires = "resume")]
    pub allow_rerun: bool,
}

/// Parses `--buckets`: a count from 1, or `auto` (0).
pub fn parse_buckets(s: &str) -> Result<u32, String> {
    if s == "auto" {
        return Ok(0);
    }
    match s.parse::<u32>() {
        Ok(b) if b >= 1 => Ok(b),
        _ => Err(format!(
            "`{s}` is not a number of buckets (1 or more, or auto)"
        )),
    }
}

/// Parses `--result`.
pub fn parse_result(s: &str) -> Result<ResultKind, String> {
    s.parse().map_err(|e: blindjoin_core::Error| match e {
        blindjoin_core::Error::InvalidParam { reason, .. } => reason,
        other => other.to_string(),
    })
}

#[derive(Debug, Args)]
struct ReceiveArgs {
    #[command(flatten)]
    party: PartyOpts,
    #[command(flatten)]
    output: OutputOpts,
}

#[derive(Debug, Args)]
struct SendArgs {
    #[command(flatten)]
    party: PartyOpts,
    /// With --result sum: the column of whole numbers (0 to 2^32 − 1) whose sum over the
    /// matched keys the receiver learns; rows sharing a key add their values.
    #[arg(long, value_name = "COLUMN")]
    value_column: Option<String>,
}

#[derive(Debug, Args)]
struct GenArgs {
    /// Distinct people in the first file (e.g. 1000, 2^16, 1e6).
    #[arg(long, value_parser = parse_size)]
    size: usize,
    /// Distinct people in the second file (default: --size).
    #[arg(long, value_parser = parse_size)]
    other_size: Option<usize>,
    /// People in both files (default: a quarter of the smaller file).
    #[arg(long, value_parser = parse_size)]
    overlap: Option<usize>,
    /// Seed of the generator; the same seed writes the same files.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The first file (receiver's side).
    a: PathBuf,
    /// The second file (sender's side).
    b: PathBuf,
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Distinct people on each side (e.g. 10000, 2^16).
    #[arg(long, default_value = "10000", value_parser = parse_size)]
    size: usize,
    /// The protocol to run.
    #[arg(long, short, default_value = "ecdh")]
    protocol: &'static Protocol,
    /// Allow the insecure naive-hashing protocol.
    #[arg(long)]
    insecure: bool,
    /// Computational security level κ in bits (the protocol must offer it).
    #[arg(long, default_value_t = 128)]
    kappa: u32,
    /// What the receiver learns: `intersection`, `cardinality` or `sum` (of the sender's
    /// `spend` column); the last two need a circuit protocol.
    #[arg(long, value_name = "RESULT", default_value = "intersection", value_parser = parse_result)]
    result: ResultKind,
    /// Keep the generated files and the output in this directory.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Write the two parties' JSON run reports to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Parses sizes like `65536`, `2^16` or `1e6`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let bad = || format!("`{s}` is not a size (use e.g. 1000, 2^16 or 1e6)");
    if let Some((b, e)) = s.split_once('^') {
        let b: usize = b.trim().parse().map_err(|_| bad())?;
        let e: u32 = e.trim().parse().map_err(|_| bad())?;
        return b.checked_pow(e).ok_or_else(bad);
    }
    if let Some((m, e)) = s.split_once(['e', 'E']) {
        let m: usize = m.trim().parse().map_err(|_| bad())?;
        let e: u32 = e.trim().parse().map_err(|_| bad())?;
        return 10usize
            .checked_pow(e)
            .and_then(|p| p.checked_mul(m))
            .ok_or_else(bad);
    }
    s.replace('_', "").parse().map_err(|_| bad())
}

/// Parses a memory size: bytes, or with a binary suffix `K`, `M`, `G`, `T` (e.g. `512M`);
/// `none` for no limit.
pub fn parse_bytes(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let bad = || format!("`{s}` is not a memory size (use e.g. 512M, 4G or none)");
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(bad()),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = num.trim().parse().map_err(|_| bad())?;
    n.checked_mul(1u64 << shift).map(Some).ok_or_else(bad)
}

/// A memory budget in bytes (`None`: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget(pub Option<u64>);

/// Parses a memory budget: bytes with a unit (`4G`, `512M`), or `none` for no limit.
pub fn parse_budget(s: &str) -> Result<Budget, String> {
    parse_bytes(s).map(Budget)
}

/// Parses a count like [`parse_size`], as a u64.
pub fn parse_count(s: &str) -> Result<u64, String> {
    parse_size(s).map(|n| n as u64)
}

/// Refuses a server-aided protocol where two parties run alone (`send`, `receive`, `demo`,
/// `bench`).
pub fn check_two_party(protocol: &'static Protocol) -> CliResult<()> {
    if !protocol.is_two_party() {
        return Err(CliError::Usage(format!(
            "protocol `{protocol}` is server-aided (n clients and a server); `send`, `receive`, \
             `demo` and `bench` run the two-party protocols"
        )));
    }
    Ok(())
}

/// Refuses the insecure protocol unless asked for, and a server-aided one.
pub fn check_insecure(protocol: &'static Protocol, insecure: bool) -> CliResult<()> {
    check_two_party(protocol)?;
    if protocol.is_insecure() && !insecure {
        return Err(CliError::Usage(format!(
            "protocol `{protocol}` is insecure (the receiver can test guesses against the \
             sender's hashes); it is meant for benchmarks. Pass --insecure to run it anyway"
        )));
    }
    Ok(())
}

/// Runs the parsed command on a pool of `--threads` workers (all cores by default), with the
/// command itself on a worker: with one thread, parallel steps then run inline instead of being
/// handed to a second, idle-spinning thread.
pub fn run(cli: Cli) -> CliResult<()> {
    if cli.threads == Some(0) {
        return Err(CliError::Usage("--threads must be at least 1".into()));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cli.threads.unwrap_or(0))
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the worker threads: {e}")))?;
    pool.install(|| dispatch(cli.command, cli.threads))
}

fn dispatch(command: Command, threads: Option<usize>) -> CliResult<()> {
    match command {
        Command::Demo(a) => {
            check_insecure(a.protocol, a.insecure)?;
            demo::run(&demo::DemoSpec {
                size: a.size,
                protocol: a.protocol,
                kappa: a.kappa,
                result: a.result,
                keep: a.keep,
                json: a.json,
            })
        }
        Command::Receive(a) => {
            check_insecure(a.party.protocol, a.party.insecure)?;
            if a.party.result != ResultKind::Intersection && a.output.output.is_some() {
                return Err(CliError::Usage(format!(
                    "--output writes matched rows, and with --result {} the receiver learns \
                     only a number (printed, and in --json)",
                    a.party.result
                )));
            }
            party::run_cli(
                &a.party,
                party::CliRole::Receiver {
                    output: a.output.output.clone(),
                },
                a.output.spec(),
                None,
            )
        }
        Command::Send(a) => {
            check_insecure(a.party.protocol, a.party.insecure)?;
            match (a.party.result, &a.value_column) {
                (ResultKind::Sum, None) => {
                    return Err(CliError::Usage(
                        "--result sum adds up a column of the sender's: name it with \
                         --value-column"
                            .into(),
                    ));
                }
                (r, Some(_)) if r != ResultKind::Sum => {
                    return Err(CliError::Usage(format!(
                        "--value-column is used by --result sum only, not --result {r}"
                    )));
                }
                _ => {}
            }
            party::run_cli(
                &a.party,
                party::CliRole::Sender,
                OutputSpec::default(),
                a.value_column.as_deref(),
            )
        }
        Command::Gen(a) => {
            let other = a.other_size.unwrap_or(a.size);
            let spec = synth::GenSpec {
                size: a.size,
                other_size: other,
                overlap: a.overlap.unwrap_or(a.size.min(other) / 4),
                seed: a.seed,
            };
            let g = synth::generate(&spec)?;
            synth::write_csv(&a.a, &g.a)?;
            synth::write_csv(&a.b, &g.b)?;
            eprintln!(
                "wrote {} rows to {} and {} rows to {}; {} people in both (column `email` or `phone`)",
                g.a.len(),
                a.a.display(),
                g.b.len(),
                a.b.display(),
                g.shared_emails.len()
            );
            Ok(())
        }
        Command::Keygen(a) => keygen::run(&a),
        Command::Aided(a) => aided::run(&a),
        Command::Server(a) => serve::run(&a),
        Command::BenchAided(a) => bench_aided::run(&a, threads),
        Command::BenchAidedClient(a) => bench_aided::run_client(&a),
        Command::Bench(a) => bench::run(&a, threads),
        Command::BenchParty(a) => bench::run_party(&a),
        Command::BenchOt(a) => bench_ot::run(&a, threads),
        Command::BenchOtParty(a) => bench_ot::run_party(&a),
        Command::Params(a) => params::run(&a, threads.unwrap_or(1)),
        Command::Protocols(a) => {
            if a.json {
                let json = serde_json::to_string_pretty(protocols::ALL)
                    .map_err(|e| CliError::Usage(format!("cannot encode the registry: {e}")))?;
                println!("{json}");
                return Ok(());
            }
            for p in protocols::ALL {
                let mut text = String::new();
                wrap_into(&mut text, &format!("{:<8}", p.name), p.summary, 8, 96);
                wrap_into(
                    &mut text,
                    "        security:",
                    &format!("{}: {}", p.security, p.assumptions),
                    10,
                    96,
                );
                for r in p.references {
                    wrap_into(&mut text, "        paper:", &r.to_string(), 10, 96);
                }
                print!("{text}");
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_all_notations() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("2^16"), Ok(65536));
        assert_eq!(parse_size("1e6"), Ok(1_000_000));
        assert_eq!(parse_size("1_000"), Ok(1000));
        assert!(parse_size("2^99").is_err());
        assert!(parse_size("lots").is_err());
        assert_eq!(parse_bytes("4G"), Ok(Some(4 << 30)));
        assert_eq!(parse_bytes("512m"), Ok(Some(512 << 20)));
        assert_eq!(parse_bytes("1000"), Ok(Some(1000)));
        assert_eq!(parse_bytes("none"), Ok(None));
        assert!(parse_bytes("4X").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }
}
