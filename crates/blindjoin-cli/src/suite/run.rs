//! Running a suite within a time budget and writing its report.

use super::plot::{Plot, Series, draw};
use super::tables::SUITES;
use super::{PaperRow, Store, Suite, Unit};
use crate::bench::{BenchArgs, Row, Transport, measure};
use crate::bench_aided::{self, BenchAidedArgs};
use crate::costmodel::{Calibration, predict};
use crate::error::{CliError, CliResult};
use crate::netem::{Profile, parse_profile};
use crate::output::write_atomic;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::{Protocol, ResultKind, protocols};
use blindjoin_testkit::redis::RedisServer;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One paper row with our measurement, or why there is none.
#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    /// The paper's figure and setting.
    pub(crate) paper: PaperRow,
    /// Our run in that setting.
    pub(crate) ours: Option<Ours>,
    /// Why the setting was not run.
    pub(crate) skipped: Option<String>,
    /// The paper's seconds over ours.
    pub(crate) speedup: Option<f64>,
    /// Our bytes over the paper's.
    pub(crate) bytes_ratio: Option<f64>,
    /// The cost model's time for the setting, from our loopback run at the same sizes.
    pub(crate) predicted_seconds: Option<f64>,
    /// Predicted over measured time.
    pub(crate) predicted_over_measured: Option<f64>,
}

/// Our measurement of a setting.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Ours {
    /// A two-party protocol: `bench`'s row.
    Pair(Row),
    /// A server-aided protocol or its plaintext baseline: `bench-aided`'s row.
    Aided(bench_aided::Row),
}

impl Ours {
    pub(crate) fn wall_seconds(&self) -> f64 {
        match self {
            Ours::Pair(r) => r.wall_seconds,
            Ours::Aided(r) => r.wall_seconds,
        }
    }

    /// Both directions of a two-party run; one client's to and from the server.
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Ours::Pair(r) => r.bytes_receiver_to_sender + r.bytes_sender_to_receiver,
            Ours::Aided(r) => r.bytes_to_server + r.bytes_from_server,
        }
    }

    /// The largest peak RSS of any party.
    pub(crate) fn peak_rss(&self) -> u64 {
        match self {
            Ours::Pair(r) => r.peak_rss_receiver_bytes.max(r.peak_rss_sender_bytes),
            Ours::Aided(r) => r.peak_rss_client_bytes.max(r.peak_rss_server_bytes),
        }
    }

    /// The B2B cost of 1000 runs (two-party runs only).
    pub(crate) fn b2b_usd(&self) -> Option<f64> {
        match self {
            Ours::Pair(r) => Some(r.cost_per_1000_runs.b2b_usd),
            Ours::Aided(_) => None,
        }
    }
}

/// A suite's results.
#[derive(Debug, Serialize)]
pub(crate) struct SuiteReport {
    /// The suite.
    pub(crate) suite: Suite,
    /// The machine's cores.
    pub(crate) cores: usize,
    /// The budget it ran in, in seconds.
    pub(crate) budget_seconds: f64,
    /// Seconds it took.
    pub(crate) seconds: f64,
    /// Loopback runs made to calibrate the cost model for shaped settings.
    pub(crate) calibration: Vec<Row>,
    /// The paper's rows with ours.
    pub(crate) rows: Vec<Outcome>,
}

/// A kind of setting: the series (protocol, or a server-aided baseline), threads, κ and σ.
type Kind = (&'static str, usize, u32, Option<u32>);

/// A setting's protocol, set sizes, threads, κ and σ.
type Setting = (&'static str, u64, u64, usize, u32, Option<u32>);

/// Parses a budget: seconds, or with `s`, `m`, `h` (e.g. `30m`).
pub fn parse_budget(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("`{s}` is not a time budget (use e.g. 90s, 30m or 2h)");
    let (num, mul) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(v.is_finite() && v > 0.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(v * mul))
}

/// The suite called `name`.
pub fn find(name: &str) -> CliResult<&'static Suite> {
    SUITES.iter().find(|s| s.name == name).ok_or_else(|| {
        let names: Vec<&str> = SUITES.iter().map(|s| s.name).collect();
        CliError::Usage(format!(
            "no suite `{name}`; the suites are: all, {}",
            names.join(", ")
        ))
    })
}

fn protocol(name: &str) -> CliResult<&'static Protocol> {
    protocols::ALL
        .iter()
        .copied()
        .find(|p| p.name == name)
        .ok_or_else(|| CliError::Usage(format!("the suite names an unknown protocol `{name}`")))
}

/// σ for our run of a paper row: the paper's σ for the circuit protocols, whose circuits work
/// on σ-bit items, and for psz14, whose OTs are over σ-bit short values; the other protocols
/// hash items to lengths of their own whatever the paper's σ.
fn sigma_of(row: &PaperRow) -> Option<u32> {
    (row.protocol.starts_with("circuit_") || row.protocol == "psz14")
        .then_some(row.sigma)
        .flatten()
}

/// The most flights one party of a run sent at the socket.
fn flights_of(r: &Row) -> u64 {
    r.flights_sent_receiver.max(r.flights_sent_sender)
}

/// The bench arguments of one setting.
fn bench_args(row: &PaperRow, network: Option<Profile>, reps: usize) -> CliResult<BenchArgs> {
    Ok(BenchArgs {
        protocol: protocol(row.protocol)?,
        sizes: vec![row.n_recv as usize],
        sender_sizes: Some(vec![row.n_send as usize]),
        reps,
        overlap: 0.5,
        seed: 1,
        out: PathBuf::from("bench/out"),
        transport: vec![Transport::Tcp],
        kappa: row.kappa,
        sigma: sigma_of(row),
        result: ResultKind::Intersection,
        network,
        prices: None,
        timeout: 3600,
        suite: None,
        budget: None,
        buckets: 1,
        parallel: 1,
    })
}

/// The paper's bytes in bytes.
fn paper_bytes(row: &PaperRow) -> Option<f64> {
    row.bytes.map(|b| match row.unit {
        Unit::MiB => b * (1u64 << 20) as f64,
        Unit::MB => b * 1e6,
    })
}

/// Runs `suite` within `budget` with `reps` repetitions per setting and writes
/// `<out>/{results.json, README.md, *.png}`. Settings run smallest first; one whose predicted
/// time would overrun the budget is skipped and says so.
pub(crate) fn run_suite(
    suite: &'static Suite,
    budget: Duration,
    reps: usize,
    out: &Path,
) -> CliResult<SuiteReport> {
    let start = Instant::now();
    let mut order: Vec<usize> = (0..suite.rows.len()).collect();
    order.sort_by_key(|&i| {
        let r = &suite.rows[i];
        (r.n_recv + r.n_send, r.threads, i)
    });
    // Loopback wall times per (protocol, threads, κ, σ), from the calibration runs.
    let mut cal: BTreeMap<Kind, Calibration> = BTreeMap::new();
    // Loopback wall time and the most flights one party sent, per setting.
    let mut loopback: BTreeMap<Setting, (f64, u64)> = BTreeMap::new();
    let mut calibration = Vec::new();
    let mut outcomes: Vec<Option<Outcome>> = suite.rows.iter().map(|_| None).collect();
    // The paper's own times per (protocol, threads, κ, σ), scaled to a setting the paper gives
    // no time for (the row gives only bytes).
    let mut paper: BTreeMap<Kind, Calibration> = BTreeMap::new();
    for row in suite.rows {
        if let Some(t) = row.seconds {
            paper
                .entry((row.series(), row.threads, row.kappa, sigma_of(row)))
                .or_default()
                .add(row.n_recv, row.n_send, t);
        }
    }
    // The time a skipped setting needed, per (protocol, threads, κ, σ): a larger setting of
    // the same kind needs at least as much.
    let mut skipped_need: BTreeMap<Kind, f64> = BTreeMap::new();
    // Server-aided rows run with every core (KMRS14 ran 10 to 100 threads on 8 cores), and
    // the Redis rows on one redis-server started here.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut redis: Option<RedisServer> = None;
    // Unshaped measurements per kind with the paper's time there: (n1 + n2, ours, paper).
    let mut grown: BTreeMap<Kind, Vec<(u64, f64, f64)>> = BTreeMap::new();
    for i in order {
        let row = suite.rows[i];
        let network = row
            .network
            .map(parse_profile)
            .transpose()
            .map_err(CliError::Usage)?;
        let key = (row.series(), row.threads, row.kappa, sigma_of(&row));
        let setting = (
            row.protocol,
            row.n_recv,
            row.n_send,
            row.threads,
            row.kappa,
            sigma_of(&row),
        );
        let p = protocol(row.protocol)?;
        let sizes = Sizes {
            n_recv: row.n_recv,
            n_send: row.n_send,
            kappa: row.kappa,
            lambda: 40,
            sigma: sigma_of(&row),
        };
        let left = budget.saturating_sub(start.elapsed()).as_secs_f64();
        // What the setting should take. Unshaped: our time at the nearest size of the kind
        // measured here, scaled as the paper's own times grow between the two sizes (KMRS14's
        // dummy sets make small runs cost more than n·log n says). Else the model on our
        // loopback time (this run's, else what `bench` left in bench/out), else a quarter of
        // the paper's as a first guess (its time for this row, or scaled from its nearest row
        // with a time).
        let by_paper = || {
            let t = row.seconds?;
            let n = (row.n_recv + row.n_send) as f64;
            grown
                .get(&key)?
                .iter()
                .min_by(|a, b| {
                    let d = |p: &(u64, f64, f64)| (p.0 as f64 / n).ln().abs();
                    d(a).total_cmp(&d(b))
                })
                .map(|&(_, ours, paper)| ours * t / paper)
        };
        let guess_compute = network
            .is_none()
            .then(by_paper)
            .flatten()
            .or_else(|| {
                cal.get(&key)
                    .and_then(|c| c.seconds(row.n_recv, row.n_send))
            })
            .or_else(|| {
                Calibration::load(Path::new("bench/out"), row.protocol, row.threads)
                    .ok()
                    .and_then(|c| c.seconds(row.n_recv, row.n_send))
            })
            .or(row.seconds.map(|s| s / 4.0))
            .or_else(|| {
                paper
                    .get(&key)
                    .and_then(|c| c.seconds(row.n_recv, row.n_send))
                    .map(|s| s / 4.0)
            });
        let guess = match network {
            None => guess_compute,
            Some(_) => predict(p, &sizes, network.as_ref(), guess_compute, None)
                .ok()
                .and_then(|g| g.seconds),
        };
        // The loopback run that calibrates a shaped setting is a median of `reps` too when it
        // is short (a single short run is at the mercy of the machine's noise).
        let cal_reps = if guess_compute.is_none_or(|c| c < CAL_MEDIAN_BELOW) {
            reps
        } else {
            1
        };
        let need = guess
            .map_or(0.0, |g| {
                g * reps as f64
                    + if network.is_some() {
                        guess_compute.unwrap_or(g) * cal_reps as f64
                    } else {
                        0.0
                    }
            })
            .max(skipped_need.get(&key).copied().unwrap_or(0.0));
        let mut outcome = Outcome {
            paper: row,
            ours: None,
            skipped: None,
            speedup: None,
            bytes_ratio: None,
            predicted_seconds: None,
            predicted_over_measured: None,
        };
        if need > left || skipped_need.contains_key(&key) {
            skipped_need.insert(key, need);
            outcome.skipped = Some(format!(
                "over the budget: about {need:.0} s predicted, {left:.0} s left"
            ));
            eprintln!(
                "{}: {} at {}x{}: skipped ({})",
                suite.name,
                row.protocol,
                row.n_recv,
                row.n_send,
                outcome.skipped.as_deref().unwrap_or_default()
            );
            outcomes[i] = Some(outcome);
            continue;
        }
        if let Some(aided) = row.aided {
            let store = match aided.store {
                Store::Memory => "memory".to_owned(),
                Store::Redis => {
                    if !cfg!(feature = "redis-store") {
                        outcome.skipped = Some("this build has no Redis store".into());
                        outcomes[i] = Some(outcome);
                        continue;
                    }
                    if redis.is_none() {
                        match RedisServer::start() {
                            Ok(r) => redis = Some(r),
                            Err(e) => {
                                outcome.skipped = Some(format!("no Redis: {e}"));
                                outcomes[i] = Some(outcome);
                                continue;
                            }
                        }
                    }
                    redis.as_ref().map(RedisServer::url).unwrap_or_default()
                }
            };
            let a = BenchAidedArgs {
                protocol: p,
                sizes: vec![row.n_recv as usize],
                clients: 2,
                reps,
                overlap: 0.5,
                seed: 1,
                store,
                no_baseline: true,
                external: None,
                bucket_labels: 1 << 25,
                out: PathBuf::from("bench/out"),
                only_plaintext: aided.plaintext,
            };
            let ours = bench_aided::measure(&a, cores, 0, row.n_recv as usize)?.remove(0);
            cal.entry(key)
                .or_default()
                .add(row.n_recv, row.n_send, ours.wall_seconds);
            let ours = Ours::Aided(ours);
            if let Some(t) = row.seconds {
                grown.entry(key).or_default().push((
                    row.n_recv + row.n_send,
                    ours.wall_seconds(),
                    t,
                ));
            }
            outcome.speedup = row.seconds.map(|s| s / ours.wall_seconds());
            outcome.bytes_ratio = paper_bytes(&row).map(|b| ours.bytes() as f64 / b);
            outcome.ours = Some(ours);
            outcomes[i] = Some(outcome);
            continue;
        }
        // A shaped setting first gets a loopback run at the same sizes, for the model.
        if network.is_some() && !loopback.contains_key(&setting) {
            let a = bench_args(&row, None, cal_reps)?;
            let r = measure(&a, row.threads)?.remove(0);
            loopback.insert(setting, (r.wall_seconds, flights_of(&r)));
            cal.entry(key)
                .or_default()
                .add(row.n_recv, row.n_send, r.wall_seconds);
            calibration.push(r);
        }
        let a = bench_args(&row, network.clone(), reps)?;
        let ours = measure(&a, row.threads)?.remove(0);
        if network.is_none() {
            if let Some(t) = row.seconds {
                grown
                    .entry(key)
                    .or_default()
                    .push((row.n_recv + row.n_send, ours.wall_seconds, t));
            }
            loopback.insert(setting, (ours.wall_seconds, flights_of(&ours)));
            cal.entry(key)
                .or_default()
                .add(row.n_recv, row.n_send, ours.wall_seconds);
        }
        let bytes = (ours.bytes_receiver_to_sender + ours.bytes_sender_to_receiver) as f64;
        outcome.speedup = row.seconds.map(|s| s / ours.wall_seconds);
        outcome.bytes_ratio = paper_bytes(&row).map(|b| bytes / b);
        if network.is_some() {
            let (compute, flights) = loopback.get(&setting).copied().unzip();
            outcome.predicted_seconds = predict(p, &sizes, network.as_ref(), compute, flights)
                .ok()
                .and_then(|g| g.seconds);
            outcome.predicted_over_measured =
                outcome.predicted_seconds.map(|t| t / ours.wall_seconds);
        }
        outcome.ours = Some(Ours::Pair(ours));
        outcomes[i] = Some(outcome);
    }
    let report = SuiteReport {
        suite: *suite,
        cores,
        budget_seconds: budget.as_secs_f64(),
        seconds: start.elapsed().as_secs_f64(),
        calibration,
        rows: outcomes.into_iter().flatten().collect(),
    };
    write_report(&report, out)?;
    Ok(report)
}

/// Loopback runs expected to take less than this many seconds calibrate the cost model as the
/// median of the suite's repetitions rather than one run.
const CAL_MEDIAN_BELOW: f64 = 10.0;

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".to_owned(), |v| format!("{v:.digits$}"))
}

fn network_name(row: &PaperRow) -> &'static str {
    row.network.unwrap_or("loopback")
}

/// The Markdown report of a suite.
pub(crate) fn markdown(r: &SuiteReport) -> String {
    let s = &r.suite;
    let mut md = format!(
        "# {}: {}\n\n{}\n\nMeasured by `blindjoin bench --suite {}` on {} cores in {:.0} s \
         (budget {:.0} s): {}, the exact intersection checked. Times are medians of the \
         repetitions; the paper's bytes are in its unit ({}). Speed-up is the paper's time \
         over ours{}.\n\n",
        s.name,
        s.source,
        s.setting,
        s.name,
        r.cores,
        r.seconds,
        r.budget_seconds,
        if s.rows.iter().any(|row| row.aided.is_some()) {
            "per run a `blindjoin server` and two client processes over loopback TCP \
             (`bench-aided`), every process with all the machine's cores whatever the paper's \
             thread count; bytes are one client's, to and from the server"
        } else if crate::netem::realtime() {
            "two party processes per run over loopback TCP, shaped networks through the \
             user-space relay of `bench --network` (token bucket per direction, timed delivery \
             queue, relay threads under SCHED_FIFO)"
        } else {
            "two party processes per run over loopback TCP, shaped networks through the \
             user-space relay of `bench --network` (token bucket per direction, timed delivery \
             queue; the system refused SCHED_FIFO, so the relay's threads ran at normal \
             priority)"
        },
        s.rows.first().map_or("MB", |row| match row.unit {
            Unit::MiB => "MiB",
            Unit::MB => "MB",
        }),
        if s.rows.iter().any(|row| row.network.is_some()) {
            "; predicted is the cost model (`blindjoin params`) on our loopback time at the \
             same sizes"
        } else {
            ""
        }
    );
    md.push_str(
        "| protocol | paper's row | n1 | n2 | network | threads | κ | paper (s) | ours (s) | \
         speed-up | predicted (s) | paper bytes | ours (bytes) | ours / paper bytes | peak RSS \
         (MB) | cost B2B (USD/1000 runs) |\n| --- | --- | ---: | ---: | --- | ---: | ---: | \
         ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for o in &r.rows {
        let p = &o.paper;
        let (ours_s, ours_b, rss, cost) = match &o.ours {
            Some(x) => (
                format!("{:.3}", x.wall_seconds()),
                x.bytes().to_string(),
                format!("{:.0}", x.peak_rss() as f64 / 1e6),
                fmt_opt(x.b2b_usd(), 3),
            ),
            None => (
                o.skipped.clone().unwrap_or_default(),
                "–".into(),
                "–".into(),
                "–".into(),
            ),
        };
        md.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            p.series(),
            p.label,
            p.n_recv,
            p.n_send,
            network_name(p),
            p.threads,
            p.kappa,
            fmt_opt(p.seconds, 2),
            ours_s,
            fmt_opt(o.speedup, 1),
            fmt_opt(o.predicted_seconds, 2),
            fmt_opt(p.bytes, 1),
            ours_b,
            fmt_opt(o.bytes_ratio, 2),
            rss,
            cost,
        ));
    }
    md
}

/// Writes `results.json`, `README.md` and the plots of `r` into `dir`.
fn write_report(r: &SuiteReport, dir: &Path) -> CliResult<()> {
    std::fs::create_dir_all(dir).map_err(|source| CliError::File {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut md = markdown(r);
    let mut pngs = Vec::new();
    for (file, plot) in plots(r) {
        if draw(&dir.join(&file), &plot)? {
            pngs.push((file, plot.title));
        }
    }
    if !pngs.is_empty() {
        md.push('\n');
        for (file, title) in pngs {
            md.push_str(&format!("![{title}]({file})\n\n"));
        }
    }
    let json = serde_json::to_vec_pretty(r)
        .map_err(|e| CliError::Usage(format!("cannot encode the results: {e}")))?;
    write_atomic(&dir.join("results.json"), &json)?;
    write_atomic(&dir.join("README.md"), md.as_bytes())?;
    eprintln!("wrote {0}/results.json and {0}/README.md", dir.display());
    Ok(())
}

/// The suite's plots: time and bytes against n per protocol (ours solid, the paper's dashed)
/// where a protocol has several sizes on one network, one plot per network, thread count and
/// κ; and time against bandwidth where it has one size on several networks, one plot per size
/// and thread count.
fn plots(r: &SuiteReport) -> Vec<(String, Plot)> {
    type Group<'a> = BTreeMap<&'a str, Vec<&'a Outcome>>;
    let mut by_n: BTreeMap<(&str, usize, u32), Group> = BTreeMap::new();
    let mut by_net: BTreeMap<(u64, usize), Group> = BTreeMap::new();
    for o in &r.rows {
        let p = &o.paper;
        by_n.entry((network_name(p), p.threads, p.kappa))
            .or_default()
            .entry(p.series())
            .or_default()
            .push(o);
        if p.network.is_some() {
            by_net
                .entry((p.n_recv, p.threads))
                .or_default()
                .entry(p.series())
                .or_default()
                .push(o);
        }
    }
    let colour = |name: &str| {
        protocols::ALL
            .iter()
            .position(|p| p.name == name)
            .unwrap_or(protocols::ALL.len())
    };
    let line = |label: String, points: Vec<(f64, f64)>, dashed: bool, colour: usize| Series {
        label,
        points,
        dashed,
        colour,
    };
    let points =
        |rows: &[&Outcome], x: &dyn Fn(&Outcome) -> f64, y: &dyn Fn(&Outcome) -> Option<f64>| {
            rows.iter()
                .filter_map(|o| y(o).map(|y| (x(o), y)))
                .collect::<Vec<_>>()
        };
    let title = |what: &str| format!("{}: {what}", r.suite.name);
    let mut out = Vec::new();
    let n = |o: &Outcome| (o.paper.n_recv + o.paper.n_send) as f64 / 2.0;
    let several = by_n.len() > 1;
    for ((net, threads, kappa), group) in &by_n {
        let (mut time, mut bytes) = (Vec::new(), Vec::new());
        for (proto, rows) in group.iter().filter(|(_, rows)| rows.len() > 1) {
            let c = colour(proto);
            let ours_t = points(rows, &n, &|o| o.ours.as_ref().map(Ours::wall_seconds));
            let ours_b = points(rows, &n, &|o| o.ours.as_ref().map(|x| x.bytes() as f64));
            time.push(line(format!("{proto} ours"), ours_t, false, c));
            time.push(line(
                format!("{proto} paper"),
                points(rows, &n, &|o| o.paper.seconds),
                true,
                c,
            ));
            bytes.push(line(format!("{proto} ours"), ours_b, false, c));
            bytes.push(line(
                format!("{proto} paper"),
                points(rows, &n, &|o| paper_bytes(&o.paper)),
                true,
                c,
            ));
        }
        if time.is_empty() {
            continue;
        }
        let setting = format!("{net}, {threads} thread(s), κ = {kappa}");
        let suffix = if several {
            format!("-{net}-{threads}t-k{kappa}")
        } else {
            String::new()
        };
        out.push((
            format!("time-vs-n{suffix}.png"),
            Plot {
                title: title(&format!("runtime against n ({setting})")),
                x_label: "n (items per party)".into(),
                y_label: "seconds".into(),
                series: time,
            },
        ));
        out.push((
            format!("bytes-vs-n{suffix}.png"),
            Plot {
                title: title(&format!("bytes against n ({setting})")),
                x_label: "n (items per party)".into(),
                y_label: "bytes".into(),
                series: bytes,
            },
        ));
    }
    let mbit = |o: &Outcome| {
        o.paper
            .network
            .and_then(|name| parse_profile(name).ok())
            .map_or(0.0, |p| p.rate_bits / 1e6)
    };
    let several = by_net.len() > 1;
    for ((size, threads), group) in &by_net {
        let mut time = Vec::new();
        for (proto, rows) in group {
            let mut rates: Vec<u64> = rows.iter().map(|o| mbit(o) as u64).collect();
            rates.sort_unstable();
            rates.dedup();
            if rates.len() < 2 {
                continue;
            }
            let c = colour(proto);
            let ours = points(rows, &mbit, &|o| o.ours.as_ref().map(Ours::wall_seconds));
            time.push(line(format!("{proto} ours"), ours, false, c));
            time.push(line(
                format!("{proto} paper"),
                points(rows, &mbit, &|o| o.paper.seconds),
                true,
                c,
            ));
            let predicted = points(rows, &mbit, &|o| o.predicted_seconds);
            time.push(line(
                format!("{proto} predicted"),
                predicted,
                true,
                c + 1000,
            ));
        }
        if time.is_empty() {
            continue;
        }
        let suffix = if several {
            format!("-n{size}-{threads}t")
        } else {
            String::new()
        };
        out.push((
            format!("time-vs-bandwidth{suffix}.png"),
            Plot {
                title: title(&format!(
                    "runtime against bandwidth (n = {size}, {threads} thread(s))"
                )),
                x_label: "Mbit/s per direction".into(),
                y_label: "seconds".into(),
                series: time,
            },
        ));
    }
    out
}

/// `bench --suite NAME|all`: one suite into `<out>/<name>/`, or every suite into
/// `<out>/<name>/` with an index `<out>/README.md`, the budget shared out as it goes.
pub fn run(name: &str, budget: Duration, reps: usize, out: &Path) -> CliResult<()> {
    if name != "all" {
        let s = find(name)?;
        run_suite(s, budget, reps, &out.join(s.name))?;
        eprintln!("wrote {}", out.join(s.name).display());
        return Ok(());
    }
    let start = Instant::now();
    let mut index = String::from(
        "# blindjoin against the papers' tables\n\nEach suite re-measures one table of the \
         papers with our protocols (`blindjoin bench --suite all`); its page has the paper's \
         figure beside ours, the ratio, the cost model's prediction and the plots.\n\n| suite | \
         table | rows measured | skipped (budget) |\n| --- | --- | ---: | ---: |\n",
    );
    for (k, s) in SUITES.iter().enumerate() {
        let left = budget.saturating_sub(start.elapsed());
        let share = left / (SUITES.len() - k) as u32;
        let r = run_suite(s, share, reps, &out.join(s.name))?;
        let measured = r.rows.iter().filter(|o| o.ours.is_some()).count();
        index.push_str(&format!(
            "| [{}]({}/README.md) | {} | {} | {} |\n",
            s.name,
            s.name,
            s.source,
            measured,
            r.rows.len() - measured
        ));
    }
    write_atomic(&out.join("README.md"), index.as_bytes())?;
    eprintln!("wrote {}", out.join("README.md").display());
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse() {
        assert_eq!(parse_budget("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_budget("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_budget("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_budget("45"), Ok(Duration::from_secs(45)));
        assert!(parse_budget("0m").is_err());
        assert!(parse_budget("soon").is_err());
    }
}
