//! `blindjoin demo`: both parties in one process over loopback, on generated files, with the
//! result checked against the generator's ground truth: the matched rows, or with `--result` the
//! intersection's cardinality or the sum of the sender's `spend` column over it. The parties talk TLS 1.3, each pinning
//! the other's freshly generated certificate, exactly as two organisations would.

use crate::error::{CliError, CliResult};
use crate::link::{Endpoint, paired_identities, pinned};
use crate::normalize::{Normalize, Normalizer};
use crate::output::OutputSpec;
use crate::party::{CliRole, FileParty, Party, run_file_party, write_json};
use crate::progress::Bars;
use crate::report::{RunReport, human_bytes, process_cpu_seconds};
use crate::synth::{GenSpec, generate, write_csv};
use blindjoin_core::channel::clock::Limits;
use blindjoin_core::transport::LinkConfig;
use blindjoin_psi::{Aggregate, Protocol, ResultKind, RunOptions};
use std::collections::HashSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the demo runs.
#[derive(Debug)]
pub struct DemoSpec {
    /// Distinct people per side.
    pub size: usize,
    /// The protocol.
    pub protocol: &'static Protocol,
    /// κ in bits.
    pub kappa: u32,
    /// What the receiver learns.
    pub result: ResultKind,
    /// Keep the files here instead of a temporary directory.
    pub keep: Option<PathBuf>,
    /// Write both reports here.
    pub json: Option<PathBuf>,
}

/// Runs the demo and prints its summary.
pub fn run(spec: &DemoSpec) -> CliResult<()> {
    let tmp;
    let dir = match &spec.keep {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|source| CliError::File {
                path: d.clone(),
                source,
            })?;
            d.clone()
        }
        None => {
            tmp = tempfile::tempdir().map_err(|source| CliError::File {
                path: std::env::temp_dir(),
                source,
            })?;
            tmp.path().to_path_buf()
        }
    };
    let (a_path, b_path, out_path) = (
        dir.join("receiver.csv"),
        dir.join("sender.csv"),
        dir.join("matched.csv"),
    );
    let gen_spec = GenSpec {
        size: spec.size,
        other_size: spec.size,
        overlap: spec.size / 4,
        seed: 2026,
    };
    let g = generate(&gen_spec)?;
    write_csv(&a_path, &g.a)?;
    write_csv(&b_path, &g.b)?;

    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| blindjoin_core::Error::io("cannot listen on loopback", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| blindjoin_core::Error::io("cannot read the loopback address", e))?;
    let bars = Bars::new();
    let (id_r, id_s) = paired_identities()?;
    let limits = Limits::new(Duration::from_secs(3600), Duration::from_secs(300));
    let (link_r, link_s) = (pinned(&id_r, &id_s, limits)?, pinned(&id_s, &id_r, limits)?);
    let party = |role: CliRole,
                 endpoint: Endpoint,
                 link: LinkConfig,
                 input: PathBuf,
                 label: &'static str| {
        let opts = RunOptions {
            progress: Some(bars.party(label)),
            kappa: spec.kappa,
            result: spec.result,
            ..RunOptions::default()
        };
        let value_column =
            (spec.result == ResultKind::Sum && matches!(role, CliRole::Sender)).then_some("spend");
        move || {
            let receiver = matches!(role, CliRole::Receiver { .. });
            run_file_party(FileParty {
                role,
                party: Party {
                    receiver,
                    endpoint,
                    link,
                    normalizer: Normalizer {
                        kind: Normalize::Email,
                        country_code: None,
                    },
                    key_fields: 1,
                    whole_records: false,
                    protocol: spec.protocol,
                    opts,
                    max_peer_size: None,
                    alone_in_process: false,
                    buckets: Default::default(),
                },
                input: &input,
                resume: None,
                format: None,
                columns: &["email".to_owned()],
                value_column,
                output: OutputSpec::default(),
                read_progress: None,
                write_progress: None,
            })
        }
    };
    let rows_out = (spec.result == ResultKind::Intersection).then(|| out_path.clone());
    let recv = party(
        CliRole::Receiver { output: rows_out },
        Endpoint::Listener(listener),
        link_r,
        a_path.clone(),
        "receiver",
    );
    let send = party(
        CliRole::Sender,
        Endpoint::Connect(addr.to_string()),
        link_s,
        b_path.clone(),
        "sender",
    );
    let start = Instant::now();
    let cpu0 = process_cpu_seconds();
    // The receiver runs on this thread (a worker of the `--threads` pool), the sender on a
    // pool of its own of the same size: each party gets `--threads` workers, as in two
    // processes.
    let sender_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the worker threads: {e}")))?;
    let (r, s) = std::thread::scope(|sc| {
        let hs = sc.spawn(|| sender_pool.install(send));
        let r = recv();
        let s = hs.join();
        (r, s)
    });
    let wall = start.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds() - cpu0;
    bars.clear();
    let s = match s {
        Ok(s) => s,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    let rr = r?.report;
    let sr = s?.report;

    let shared = |p: &crate::synth::Person| {
        p.canonical_email
            .as_ref()
            .is_some_and(|e| g.shared_emails.contains(e))
    };
    if spec.result != ResultKind::Intersection {
        // Ground truth: the shared emails, and the sender's spend over its rows carrying one.
        let expected = match spec.result {
            ResultKind::Sum => Aggregate::Sum(
                g.b.iter()
                    .filter(|p| shared(p))
                    .map(|p| u128::from(p.spend()))
                    .sum(),
            ),
            _ => Aggregate::Cardinality(g.shared_emails.len() as u64),
        };
        if rr.aggregate != Some(expected) {
            return Err(CliError::Verification(format!(
                "the receiver learned {:?}, the generator's truth is {expected:?}",
                rr.aggregate
            )));
        }
        print_summary(spec, &rr, &sr, wall, cpu, &dir, 0);
        if let Some(path) = &spec.json {
            write_json(
                path,
                &serde_json::json!({ "receiver": rr, "sender": sr, "wall_seconds": wall, "cpu_seconds": cpu }),
            )?;
        }
        return Ok(());
    }
    // Ground truth: the receiver's rows whose canonical email the generator put in both files.
    let expected: Vec<String> =
        g.a.iter()
            .filter(|p| {
                p.canonical_email
                    .as_ref()
                    .is_some_and(|e| g.shared_emails.contains(e))
            })
            .map(|p| p.id.clone())
            .collect();
    let got = first_column(&out_path)?;
    if got != expected {
        let e: HashSet<&String> = expected.iter().collect();
        let missing = expected.iter().filter(|x| !got.contains(x)).count();
        let extra = got.iter().filter(|x| !e.contains(x)).count();
        return Err(CliError::Verification(format!(
            "{} rows written, {} expected ({missing} missing, {extra} unexpected)",
            got.len(),
            expected.len()
        )));
    }
    print_summary(spec, &rr, &sr, wall, cpu, &dir, expected.len());
    if let Some(path) = &spec.json {
        write_json(
            path,
            &serde_json::json!({ "receiver": rr, "sender": sr, "wall_seconds": wall, "cpu_seconds": cpu }),
        )?;
    }
    Ok(())
}

fn print_summary(
    spec: &DemoSpec,
    r: &RunReport,
    s: &RunReport,
    wall: f64,
    cpu: f64,
    dir: &std::path::Path,
    verified_rows: usize,
) {
    let p = spec.protocol;
    println!("blindjoin demo: {} — {}", p.name, p.summary);
    println!("  security: {}: {}", p.security, p.assumptions);
    if let Some(r) = p.references.first() {
        println!(
            "  paper:    {} {} ({}, {})",
            r.tag, r.part, r.authors, r.venue
        );
    }
    for (name, rep) in [("receiver", r), ("sender", s)] {
        if let Some(i) = &rep.input {
            println!(
                "  {name:<9} {:>8} rows, {:>8} distinct emails, {} empty, {} duplicate rows",
                i.rows, i.distinct_keys, i.empty_keys, i.duplicate_rows
            );
        }
    }
    match r.aggregate {
        Some(Aggregate::Cardinality(c)) => println!(
            "  result:   {c} emails in common (the cardinality only: no rows are revealed) — \
             verified against the generator's ground truth"
        ),
        Some(Aggregate::Sum(sum)) => println!(
            "  result:   the sender's spend over the emails in common sums to {sum} (the sum \
             only: no rows are revealed) — verified against the generator's ground truth"
        ),
        None => {}
    }
    if let Some(i) = &r.intersection {
        println!(
            "  result:   {} emails in common, {} receiver rows written{} — verified against the generator's ground truth",
            i.distinct_keys,
            verified_rows,
            if spec.keep.is_some() {
                format!(" to {}", dir.join("matched.csv").display())
            } else {
                String::new()
            }
        );
    }
    let total = r.traffic.bytes_sent + r.traffic.bytes_received;
    let items = (r.own_set_size + s.own_set_size).max(1);
    println!("  link:     TLS 1.3 over loopback, each party pinning the other's certificate");
    println!(
        "  traffic:  receiver→sender {}, sender→receiver {}, total {} ({:.1} bytes per item), {} rounds",
        human_bytes(r.traffic.bytes_sent),
        human_bytes(r.traffic.bytes_received),
        human_bytes(total),
        total as f64 / (items as f64 / 2.0),
        spec.protocol.flights
    );
    for (name, rep) in [("receiver", r), ("sender", s)] {
        let phases: Vec<String> = rep
            .phases
            .iter()
            .map(|ph| format!("{} {:.3}", ph.name, ph.seconds))
            .collect();
        println!("  {name:<9} {} s", phases.join(", "));
    }
    println!(
        "  total:    {wall:.2} s wall, {cpu:.2} s CPU (both parties), {} threads per party",
        rayon::current_num_threads()
    );
}

/// The first column of a CSV file's data rows.
fn first_column(path: &Path) -> CliResult<Vec<String>> {
    let mut rdr = csv::Reader::from_path(path)
        .map_err(|e| CliError::Verification(format!("{}: {e}", path.display())))?;
    let mut out = Vec::new();
    for row in rdr.records() {
        let row = row.map_err(|e| CliError::Verification(format!("{}: {e}", path.display())))?;
        out.push(row.get(0).unwrap_or_default().to_owned());
    }
    Ok(out)
}
