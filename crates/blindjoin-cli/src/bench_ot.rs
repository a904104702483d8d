//! `blindjoin bench-ot`: OT extension end to end, both parties as two processes over loopback
//! TCP, one handshake, the base OTs and `--count` random OTs in batches of 2^20. KOS, the
//! malicious-secure extension, runs over the malicious-secure Masny-Rindal endemic base OT; the
//! semi-honest extensions over Chou-Orlandi.

use crate::bench::{
    BenchTls, Transport, median, open_party_link, party_link, print_result, run_pair, write_results,
};
use crate::cli::parse_size;
use crate::error::{CliError, CliResult};
use crate::report::process_cpu_seconds;
use blindjoin_core::Block;
use blindjoin_core::channel::metered::{Metered, Traffic};
use blindjoin_core::handshake::{Role, SessionConfig, handshake};
use blindjoin_ot::base::endemic::{EndemicReceiver, EndemicSender};
use blindjoin_ot::base::{ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_ot::ext::iknp::{IknpReceiver, IknpSender};
use blindjoin_ot::ext::kk13::{Kk13Receiver, Kk13Sender};
use blindjoin_ot::ext::kkrt::{DEFAULT_CODE_BLOCKS, KkrtReceiver, KkrtSender};
use blindjoin_ot::ext::kos::{KosReceiver, KosSender};
use clap::{Args, ValueEnum};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// OTs per call of the extension (bounds both parties' memory).
const BATCH: usize = 1 << 20;

/// OPRF instances per call in the KKRT benchmark: the sender evaluates one batch while the
/// receiver extends the next, as a pipelined PSI sender does.
const KKRT_BATCH: usize = 1 << 16;

/// Which OT extension to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OtKind {
    /// IKNP with the ALSZ optimisations, random 1-out-of-2 OT (semi-honest).
    Iknp,
    /// KOS: IKNP plus the coin-tossed correlation check (malicious receiver), over the
    /// malicious-secure endemic base OT (the others run over Chou-Orlandi).
    Kos,
    /// KK13 random 1-out-of-256 OT (η = 8, PSZ App. C.3), semi-honest.
    Kk13,
    /// KKRT16 OPRF (k = 512): `--count` receiver instances and 3·count sender evaluations, as
    /// in KKRT16 PSI with three hash functions.
    Kkrt,
}

impl OtKind {
    fn name(self) -> &'static str {
        match self {
            OtKind::Iknp => "iknp",
            OtKind::Kos => "kos",
            OtKind::Kk13 => "kk13",
            OtKind::Kkrt => "kkrt",
        }
    }
}

/// `blindjoin bench-ot` options.
#[derive(Debug, Args)]
pub struct BenchOtArgs {
    /// The OT extension.
    #[arg(long, value_enum, default_value = "iknp")]
    kind: OtKind,
    /// Number of random OTs, e.g. 1e7 or 2^20.
    #[arg(long, value_parser = parse_size, default_value = "1e7")]
    count: usize,
    /// Repetitions (medians are reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Directory for `ot-<kind>.json` and `.md`.
    #[arg(long, value_name = "DIR", default_value = "bench/out")]
    out: PathBuf,
    /// The connection: plain TCP, or TLS 1.3 with pinned certificates.
    #[arg(long, value_enum, default_value = "tcp")]
    transport: Transport,
}

/// Hidden `bench-ot-party` options.
#[derive(Debug, Args)]
pub struct OtPartyArgs {
    #[arg(long)]
    role: String,
    #[arg(long)]
    connect: Option<String>,
    #[arg(long, value_enum)]
    kind: OtKind,
    #[arg(long)]
    count: usize,
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    #[arg(long)]
    tls_dir: Option<PathBuf>,
}

#[derive(Debug, Serialize, Deserialize)]
struct OtPartyResult {
    wall_seconds: f64,
    cpu_seconds: f64,
    setup_seconds: f64,
    traffic: Traffic,
}

#[derive(Debug, Serialize)]
struct OtRow {
    kind: &'static str,
    count: usize,
    reps: usize,
    wall_seconds: f64,
    setup_seconds: f64,
    cpu_receiver_seconds: f64,
    cpu_sender_seconds: f64,
    ots_per_second_wall: f64,
    bytes_receiver_to_sender: u64,
    bytes_sender_to_receiver: u64,
    bits_per_ot_receiver_to_sender: f64,
}

/// One party of `bench-ot` (the hidden `bench-ot-party` command).
pub fn run_party(a: &OtPartyArgs) -> CliResult<()> {
    let timeout = Duration::from_secs(a.timeout);
    let is_receiver = a.role == "receiver";
    let mut rng = rand::rng();
    let choices: Vec<bool> = if is_receiver {
        (0..a.count).map(|_| rng.random::<bool>()).collect()
    } else {
        Vec::new()
    };
    let choices_256: Vec<u32> = if is_receiver && a.kind == OtKind::Kk13 {
        (0..a.count).map(|_| rng.random_range(0..256)).collect()
    } else {
        Vec::new()
    };
    let link = party_link(a.tls_dir.as_deref(), is_receiver, timeout)?;
    let ch = open_party_link(&link, is_receiver, a.connect.as_deref())?;
    let mut ch = Metered::new(ch);
    let (cpu0, t0) = (process_cpu_seconds(), Instant::now());
    let role = if is_receiver {
        Role::Receiver
    } else {
        Role::Sender
    };
    let mut cfg = SessionConfig::new(&format!("ot-{}", a.kind.name()), role, a.count as u64);
    cfg.expected_peer_set_size = Some(a.count as u64);
    let session = handshake(&mut ch, &cfg, &mut rng)?;
    let sid = session.id;
    let setup_seconds;
    match (a.kind, is_receiver) {
        (OtKind::Iknp, true) => {
            let mut r =
                IknpReceiver::setup(&mut ChouOrlandiSender::default(), &mut ch, &sid, &mut rng)?;
            setup_seconds = t0.elapsed().as_secs_f64();
            let mut out = vec![Block::ZERO; BATCH];
            for c in choices.chunks(BATCH) {
                r.receive_random(&mut ch, c, &mut out[..c.len()])?;
            }
        }
        (OtKind::Iknp, false) => {
            let mut s =
                IknpSender::setup(&mut ChouOrlandiReceiver::default(), &mut ch, &sid, &mut rng)?;
            setup_seconds = t0.elapsed().as_secs_f64();
            let mut out = vec![[Block::ZERO; 2]; BATCH];
            for start in (0..a.count).step_by(BATCH) {
                let n = BATCH.min(a.count - start);
                s.send_random(&mut ch, &mut out[..n])?;
            }
        }
        (OtKind::Kos, true) => {
            let mut r = KosReceiver::setup(&mut EndemicSender::default(), &mut ch, &sid, &mut rng)?;
            setup_seconds = t0.elapsed().as_secs_f64();
            let mut out = vec![Block::ZERO; BATCH];
            for c in choices.chunks(BATCH) {
                r.receive_random(&mut ch, c, &mut out[..c.len()])?;
            }
        }
        (OtKind::Kk13, true) => {
            let mut r = Kk13Receiver::setup(
                &mut ChouOrlandiSender::default(),
                8,
                &mut ch,
                &sid,
                &mut rng,
            )?;
            setup_seconds = t0.elapsed().as_secs_f64();
            let mut out = vec![Block::ZERO; BATCH];
            for c in choices_256.chunks(BATCH) {
                r.receive_random(&mut ch, c, &mut out[..c.len()])?;
            }
        }
        (OtKind::Kk13, false) => {
            let mut s = Kk13Sender::setup(
                &mut ChouOrlandiReceiver::default(),
                8,
                &mut ch,
                &sid,
                &mut rng,
            )?;
            setup_seconds = t0.elapsed().as_secs_f64();
            for start in (0..a.count).step_by(BATCH) {
                let n = BATCH.min(a.count - start);
                // The sender's outputs are computed on demand (PSI evaluates one per item);
                // the benchmark measures the extension.
                std::hint::black_box(s.send_random(&mut ch, n)?);
            }
        }
        (OtKind::Kkrt, true) => {
            let inputs: Vec<Block> = (0..a.count).map(|_| Block(rng.random())).collect();
            let mut r = KkrtReceiver::setup(
                &mut ChouOrlandiSender::default(),
                DEFAULT_CODE_BLOCKS,
                &mut ch,
                &sid,
                &mut rng,
            )?;
            setup_seconds = t0.elapsed().as_secs_f64();
            let mut out = vec![Block::ZERO; KKRT_BATCH];
            for x in inputs.chunks(KKRT_BATCH) {
                r.receive(&mut ch, x, &mut out[..x.len()])?;
            }
        }
        (OtKind::Kkrt, false) => {
            let mut s = KkrtSender::setup(
                &mut ChouOrlandiReceiver::default(),
                DEFAULT_CODE_BLOCKS,
                &mut ch,
                &sid,
                &mut rng,
            )?;
            setup_seconds = t0.elapsed().as_secs_f64();
            let mut queries = Vec::with_capacity(3 * KKRT_BATCH);
            let mut out = vec![Block::ZERO; 3 * KKRT_BATCH];
            for start in (0..a.count).step_by(KKRT_BATCH) {
                let n = KKRT_BATCH.min(a.count - start);
                let keys = s.send(&mut ch, n)?;
                // Three evaluations per instance, at inputs the sender draws (it cannot know
                // the receiver's); what is measured is the cost of evaluating.
                queries.clear();
                queries.extend((0..3 * n).map(|k| (k / 3, Block(rng.random()))));
                keys.evals(&queries, &mut out[..3 * n])?;
                std::hint::black_box(&out);
            }
        }
        (OtKind::Kos, false) => {
            let mut s = KosSender::setup(&mut EndemicReceiver::default(), &mut ch, &sid, &mut rng)?;
            setup_seconds = t0.elapsed().as_secs_f64();
            let mut out = vec![[Block::ZERO; 2]; BATCH];
            for start in (0..a.count).step_by(BATCH) {
                let n = BATCH.min(a.count - start);
                s.send_random(&mut ch, &mut out[..n])?;
            }
        }
    }
    let result = OtPartyResult {
        wall_seconds: t0.elapsed().as_secs_f64(),
        cpu_seconds: process_cpu_seconds() - cpu0,
        setup_seconds,
        traffic: ch.traffic(),
    };
    print_result(&result)
}

const HEAD: &str = "| OT | count | wall (s) | setup (s) | CPU recv (s) | CPU send (s) | OT/s (wall) | recv→send (B) | send→recv (B) | bits/OT recv→send |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |";

fn row_md(r: &OtRow) -> String {
    format!(
        "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3e} | {} | {} | {:.1} |",
        r.kind,
        r.count,
        r.wall_seconds,
        r.setup_seconds,
        r.cpu_receiver_seconds,
        r.cpu_sender_seconds,
        r.ots_per_second_wall,
        r.bytes_receiver_to_sender,
        r.bytes_sender_to_receiver,
        r.bits_per_ot_receiver_to_sender
    )
}

/// Runs `bench-ot`.
pub fn run(a: &BenchOtArgs, threads: Option<usize>) -> CliResult<()> {
    if a.reps == 0 || a.count == 0 {
        return Err(CliError::Usage(
            "--reps and --count must be at least 1".into(),
        ));
    }
    let tls = match a.transport {
        Transport::Tls => Some(BenchTls::new()?),
        Transport::Tcp => None,
    };
    let mut args: Vec<String> = vec![
        "--kind".into(),
        a.kind.name().into(),
        "--count".into(),
        a.count.to_string(),
    ];
    if let Some(t) = &tls {
        args.extend(t.args());
    }
    let mut reps: Vec<(OtPartyResult, OtPartyResult)> = Vec::new();
    for _ in 0..a.reps {
        reps.push(run_pair(
            threads.unwrap_or(1),
            "bench-ot-party",
            &args,
            None,
        )?);
    }
    let m =
        |f: &dyn Fn(&(OtPartyResult, OtPartyResult)) -> f64| median(reps.iter().map(f).collect());
    let wall = m(&|(r, s)| r.wall_seconds.max(s.wall_seconds));
    let (r0, s0) = &reps[0];
    let row = OtRow {
        kind: a.kind.name(),
        count: a.count,
        reps: a.reps,
        wall_seconds: wall,
        setup_seconds: m(&|(r, s)| r.setup_seconds.max(s.setup_seconds)),
        cpu_receiver_seconds: m(&|(r, _)| r.cpu_seconds),
        cpu_sender_seconds: m(&|(_, s)| s.cpu_seconds),
        ots_per_second_wall: a.count as f64 / wall,
        bytes_receiver_to_sender: r0.traffic.bytes_sent,
        bytes_sender_to_receiver: s0.traffic.bytes_sent,
        bits_per_ot_receiver_to_sender: r0.traffic.bytes_sent as f64 * 8.0 / a.count as f64,
    };
    println!("{HEAD}\n{}", row_md(&row));
    write_results(
        &a.out,
        &format!("ot-{}", a.kind.name()),
        &row,
        &format!("{HEAD}\n{}\n", row_md(&row)),
    )
}
