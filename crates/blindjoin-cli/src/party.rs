//! One party's run on a file: read and normalise, hash to items, connect, run the protocol,
//! write the matched rows (receiver), report.

use crate::cli::PartyOpts;
use crate::error::{CliError, CliResult};
use crate::input::{InputSpec, Table, read_table};
use crate::link::Endpoint;
use crate::normalize::Normalizer;
use crate::output::{Prepared, check_output, prepare_rows, write_atomic};
use crate::progress::Bars;
use crate::report::{
    InputStats, IntersectionStats, Phase, RunReport, hex, human_bytes, process_cpu_seconds,
};
use blindjoin_core::channel::metered::Metered;
use blindjoin_core::channel::transcript::Transcript;
use blindjoin_core::finish;
use blindjoin_core::item::{Item, items_from_records};
use blindjoin_core::transport::LinkConfig;
use blindjoin_psi::{Protocol, RunOptions};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The role on the command line, with the receiver's output file.
#[derive(Debug, Clone)]
pub enum CliRole {
    /// Learns the intersection and may write the matched rows.
    Receiver {
        /// Where to write the matched rows.
        output: Option<PathBuf>,
    },
    /// Learns only the receiver's set size.
    Sender,
}

/// Everything one file-based party needs.
pub struct FileParty<'a> {
    /// Role and output.
    pub role: CliRole,
    /// How to reach the peer.
    pub endpoint: Endpoint,
    /// TLS or plain TCP, and the time limits.
    pub link: LinkConfig,
    /// Input file.
    pub input: &'a Path,
    /// CSV key column, or `None` for one key per line.
    pub column: Option<&'a str>,
    /// Key normalisation.
    pub normalizer: Normalizer,
    /// The protocol.
    pub protocol: &'static Protocol,
    /// Protocol options (progress included).
    pub opts: RunOptions,
    /// The largest peer set accepted; `None` for max(2^20, 4 × our distinct keys).
    pub max_peer_size: Option<u64>,
    /// Whether this process runs only this party (so its CPU time is this party's).
    pub alone_in_process: bool,
}

/// The default bound on the peer's set size: what a data owner would accept without thinking
/// twice, max(2^20, 4 × our own set size). A larger claim lets a fake receiver test that many
/// guesses against the sender's set in one run.
pub fn default_max_peer_size(own: usize) -> u64 {
    (1u64 << 20).max(4 * own as u64)
}

/// Maps the distinct keys to items, in parallel.
pub fn items_of(keys: &[Vec<u8>]) -> Vec<Item> {
    keys.par_chunks(1 << 12)
        .flat_map_iter(items_from_records)
        .collect()
}

/// Runs one party on a file (see the module doc) and returns its report. The receiver's output
/// file is put in place only after the protocol and the final confirmation succeeded.
pub fn run_file_party(p: FileParty<'_>) -> CliResult<(RunReport, Table, Option<Vec<usize>>)> {
    // What would fail late is refused before reading or connecting.
    blindjoin_psi::check_security(p.protocol, &p.opts)?;
    if let CliRole::Receiver { output: Some(out) } = &p.role {
        check_output(out, &[p.input])?;
    }
    let start = Instant::now();
    let mut phases = Vec::new();
    let table = read_table(&InputSpec {
        path: p.input,
        column: p.column,
        normalizer: &p.normalizer,
    })?;
    let t = lap(&mut phases, "read input", start);
    let items = items_of(&table.keys);
    let t = lap(&mut phases, "hash items", t);

    let mut opts = p.opts.clone();
    opts.key_params = p.normalizer.handshake_params();
    opts.max_peer_set_size = p
        .max_peer_size
        .unwrap_or_else(|| default_max_peer_size(items.len()));
    let link = p.endpoint.open(&p.link)?;
    lap(&mut phases, "connect", t);
    let mut ch = Transcript::new(Metered::new(link));
    let mut rng = rand::rng();
    let (session, proto_phases, indices) = match &p.role {
        CliRole::Receiver { .. } => {
            let out = p.protocol.receive(&mut ch, &items, &opts, &mut rng)?;
            (out.session, out.phases, Some(out.indices))
        }
        CliRole::Sender => {
            let out = p.protocol.send(&mut ch, &items, &opts, &mut rng)?;
            (out.session, out.phases, None)
        }
    };
    for (name, secs) in proto_phases.0 {
        phases.push(Phase {
            name: name.to_owned(),
            seconds: secs,
        });
    }
    let t = Instant::now();

    let intersection = match (&p.role, &indices) {
        (CliRole::Receiver { output }, Some(idx)) => {
            let rows = table.rows_of_keys(idx);
            let prepared: Option<Prepared> = match output {
                Some(path) => match prepare_rows(path, &table, &rows) {
                    Ok(prep) => Some(prep),
                    Err(e) => {
                        // The sender learns that the run failed; our error is the one to show.
                        let _ = finish::receiver_confirm(&mut ch, Some(&e.to_string()));
                        return Err(e);
                    }
                },
                None => None,
            };
            if let Err(e) = finish::receiver_confirm(&mut ch, None) {
                // The sender waits for our verdict: tell it why we stop (best effort).
                let _ = finish::receiver_final(&mut ch, Some(&e.to_string()));
                return Err(e.into());
            }
            if let Some(prep) = prepared {
                if let Err(e) = prep.persist() {
                    let _ = finish::receiver_final(&mut ch, Some(&e.to_string()));
                    return Err(e);
                }
                lap(&mut phases, "write output", t);
            }
            finish::receiver_final(&mut ch, None)?;
            Some(IntersectionStats {
                distinct_keys: idx.len() as u64,
                rows: rows.len() as u64,
                output: output.as_ref().map(|o| o.display().to_string()),
            })
        }
        _ => {
            finish::sender_confirm(&mut ch)?;
            None
        }
    };
    let traffic = ch.get_ref().traffic();
    drop(ch);
    let report = RunReport {
        protocol: p.protocol.name,
        security: format!("{}: {}", p.protocol.security, p.protocol.assumptions),
        role: session.role.to_string(),
        kappa: session.kappa,
        lambda: session.lambda,
        session_id: hex(&session.id),
        input: Some(InputStats {
            path: p.input.display().to_string(),
            rows: table.rows.len() as u64,
            distinct_keys: table.keys.len() as u64,
            empty_keys: table.empty_keys,
            duplicate_rows: table.duplicate_rows,
        }),
        own_set_size: items.len() as u64,
        peer_set_size: session.peer_size(),
        intersection,
        traffic,
        phases,
        wall_seconds: start.elapsed().as_secs_f64(),
        cpu_seconds: p.alone_in_process.then(process_cpu_seconds),
        threads: rayon::current_num_threads(),
    };
    Ok((report, table, indices))
}

fn lap(phases: &mut Vec<Phase>, name: &str, since: Instant) -> Instant {
    let now = Instant::now();
    phases.push(Phase {
        name: name.to_owned(),
        seconds: now.duration_since(since).as_secs_f64(),
    });
    now
}

/// Protocol options from the command line.
pub fn run_options(o: &PartyOpts) -> RunOptions {
    RunOptions {
        lambda: o.lambda,
        expected_peer_set_size: o.expect_peer_size,
        allow_weak: o.allow_weak,
        memory_budget: o.memory.0,
        ..RunOptions::default()
    }
}

/// `blindjoin send` and `blindjoin receive`.
pub fn run_cli(o: &PartyOpts, role: CliRole) -> CliResult<()> {
    let endpoint = o.net.endpoint()?;
    if let Some(cc) = &o.country_code
        && (cc.is_empty() || !cc.bytes().all(|b| b.is_ascii_digit()) || cc.len() > 3)
    {
        return Err(CliError::Usage(format!(
            "--country-code must be 1 to 3 digits, not `{cc}`"
        )));
    }
    let normalizer = Normalizer {
        kind: o.normalize,
        country_code: o.country_code.clone(),
    };
    if let Some(json) = &o.json {
        let mut inputs = vec![o.input.as_path()];
        if let CliRole::Receiver { output: Some(out) } = &role {
            if out == json {
                return Err(CliError::Usage(format!(
                    "{}: given as both --output and --json",
                    json.display()
                )));
            }
            inputs.push(out);
        }
        check_output(json, &inputs)?;
    }
    let link = o.net.link_config()?;
    if o.allow_weak && o.lambda < blindjoin_psi::MIN_LAMBDA {
        eprintln!(
            "warning: λ = {} is below {}: false matches and failed runs have probability up to \
             2^-{} (--allow-weak)",
            o.lambda,
            blindjoin_psi::MIN_LAMBDA,
            o.lambda
        );
    }
    let bars = Bars::new();
    let label = match role {
        CliRole::Receiver { .. } => "receiver",
        CliRole::Sender => "sender",
    };
    let mut opts = run_options(o);
    opts.progress = Some(bars.party(label));
    if matches!(role, CliRole::Sender) {
        let b = bars.clone();
        opts.on_session = Some(Arc::new(move |s| {
            b.println(&format!(
                "the receiver announced {} distinct keys; running the protocol",
                s.receiver_size
            ));
        }));
    }
    let result = run_file_party(FileParty {
        role,
        endpoint,
        link,
        input: &o.input,
        column: o.column.as_deref(),
        normalizer,
        protocol: o.protocol,
        opts,
        max_peer_size: o.max_peer_size,
        alone_in_process: true,
    });
    bars.clear();
    let (report, _, _) = result?;
    if let Some(path) = &o.json {
        write_json(path, &report)?;
    }
    eprintln!("{}", summary_line(&report));
    Ok(())
}

/// Writes a report as pretty JSON, atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> CliResult<()> {
    let json = serde_json::to_vec_pretty(value)
        .map_err(|e| CliError::Usage(format!("cannot encode the report: {e}")))?;
    write_atomic(path, &json)
}

/// One line a person reads at the end of `send` or `receive`.
pub fn summary_line(r: &RunReport) -> String {
    let what = match &r.intersection {
        Some(i) => format!(
            "{} of {} distinct keys matched ({} rows{})",
            i.distinct_keys,
            r.own_set_size,
            i.rows,
            i.output
                .as_ref()
                .map(|o| format!(" written to {o}"))
                .unwrap_or_default()
        ),
        None => format!(
            "sent {} distinct keys; the receiver had {}",
            r.own_set_size, r.peer_set_size
        ),
    };
    format!(
        "{} ({}): {what}; sent {}, received {}, {:.2} s",
        r.role,
        r.protocol,
        human_bytes(r.traffic.bytes_sent),
        human_bytes(r.traffic.bytes_received),
        r.wall_seconds
    )
}
