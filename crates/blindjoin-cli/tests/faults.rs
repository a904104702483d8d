//! Faults on the wire between two real `blindjoin` processes: a relay
//! (`blindjoin_testkit::relay`) between a listening receiver and a connecting sender flips,
//! cuts, drops, repeats, delays or withholds one frame, chosen by the message it carries, for
//! every protocol of the registry and every message of its run in each direction. Every case
//! must end both parties within the deadline with a non-zero exit, exactly one final
//! `blindjoin: error: ...` line, no panic, no output file and a bounded peak RSS.
//!
//! Which frame on the wire carries which message is learnt in two steps: the same protocol run
//! in-process on the same items through `Metered::with_frame_log` names every protocol frame,
//! and one clean run of the two processes through a pass-through relay gives the frame lengths
//! on the wire; the in-process lengths sit at one offset in the wire's. Frames before them
//! belong to the transport ("transport"), frames after them to the run's closing exchange
//! ("confirmation"); both are targets of their own.
//!
//! Besides the matrix: a peer that trickles one byte a second, a peer that connects and sends
//! nothing, and 10,000 refused connections before the real peer.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_cli::input::{InputSpec, read_input};
use blindjoin_cli::normalize::{Normalize, Normalizer};
use blindjoin_core::channel::metered::{self, Metered};
use blindjoin_core::channel::transcript::Transcript;
use blindjoin_core::finish;
use blindjoin_core::item::Item;
use blindjoin_psi::{Protocol, RunOptions};
use blindjoin_testkit::relay::{Direction, Fault, FaultAt, Relay, RelayReport};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Silence that ends a run in the matrix (`--idle-timeout`).
const IDLE: Duration = Duration::from_secs(1);
/// The whole run in the matrix (`--deadline`).
const DEADLINE: Duration = Duration::from_secs(5);
/// How long a held frame waits: past the idle timeout.
const DELAY: Duration = Duration::from_secs(2);
/// Limits of the runs that must succeed (calibration, the real peer after bad ones).
const CLEAN: Timing = Timing {
    idle: Duration::from_secs(10),
    deadline: Duration::from_secs(60),
};
/// Protocols whose sender computes for longer than `IDLE` before its first message, with the
/// factor by which their matrix runs scale the idle timeout, the deadline and the held frame's
/// delay: `rsa_blind`'s sender generates a 3072-bit RSA key first (about 0.2 s with one thread
/// on an idle core; with the matrix's eight processes on two cores, and a build beside them,
/// it was measured at over 3 s). Scaled together, a fault still ends their runs and the key
/// generation does not.
const SLOW_START: &[(&str, u32)] = &[("rsa_blind", 5)];

/// The factor of [`SLOW_START`] for `p` (1 for the others).
fn slow_start(p: &Protocol) -> u32 {
    SLOW_START
        .iter()
        .find(|(name, _)| *name == p.name)
        .map_or(1, |(_, k)| *k)
}

/// A party still running this long after its deadline hangs; it is killed.
const GRACE: Duration = Duration::from_secs(10);
/// Cases run at once.
const WORKERS: usize = 4;
/// The peak resident set size a party may reach, in KiB (`ru_maxrss`).
const MAX_RSS_KIB: i64 = 200 * 1024;
/// Rows of each generated input.
const ROWS: &str = "200";

/// Faults whose effect only the sender can see, after the receiver has finished: the
/// receiver's final verdict (any fault) and a copy of the receiver's confirmation injected after
/// it. Some message of a run has to come last, and its sender cannot learn whether it arrived
/// (the two generals' problem; `blindjoin_core::finish` orders the run so that the receiver
/// writes its output only after both digests agreed and the sender's stream ended). For these
/// the expected outcome is exact: the receiver exits 0 with the complete, correct output, and
/// the sender ends with one error line. Every other case must fail both parties.
const AFTER_THE_RECEIVER_FINISHED: &[(&str, Direction, &str)] = &[
    (finish::MSG_FINAL_VERDICT, Direction::ToConnector, "*"),
    (
        finish::MSG_CONFIRMATION,
        Direction::ToConnector,
        "duplicate",
    ),
];

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blindjoin"));
    c.arg("--threads").arg("1");
    c
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The time limits given to both parties.
#[derive(Clone, Copy, Debug)]
struct Timing {
    idle: Duration,
    deadline: Duration,
}

impl Timing {
    /// The limits of `p`'s runs in the matrix.
    fn matrix(p: &Protocol) -> Timing {
        Timing {
            idle: IDLE * slow_start(p),
            deadline: DEADLINE * slow_start(p),
        }
    }

    fn flags(&self) -> Vec<String> {
        vec![
            "--idle-timeout".into(),
            format!("{}s", self.idle.as_secs()),
            "--deadline".into(),
            format!("{}s", self.deadline.as_secs()),
            "--plaintext".into(),
        ]
    }
}

/// The two generated inputs.
struct Inputs {
    _dir: tempfile::TempDir,
    a: PathBuf,
    b: PathBuf,
}

fn inputs() -> Inputs {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let out = bin()
        .args(["gen", "--size", ROWS, s(&a), s(&b)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Inputs { _dir: dir, a, b }
}

fn protocol_args(p: &Protocol) -> Vec<String> {
    let mut v = vec!["--protocol".to_owned(), p.name.to_owned()];
    if p.is_insecure() {
        v.push("--insecure".into());
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Processes

/// How a process ended.
#[derive(Debug)]
enum Exit {
    Code(i32),
    Signal(i32),
    /// Still running after its deadline and the grace period; killed.
    Hung,
}

/// One ended party.
#[derive(Debug)]
struct Ended {
    role: &'static str,
    exit: Exit,
    stderr: String,
    max_rss_kib: i64,
}

impl Ended {
    fn succeeded(&self) -> bool {
        matches!(self.exit, Exit::Code(0))
    }

    /// The last few lines of stderr, for reports.
    fn tail(&self) -> String {
        let lines: Vec<&str> = self.stderr.lines().collect();
        let from = lines.len().saturating_sub(3);
        lines[from..].join(" | ")
    }

    /// What is wrong with this party's end of a run that must fail.
    fn failure_problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        let who = self.role;
        match self.exit {
            Exit::Code(0) => p.push(format!("{who} exited 0")),
            Exit::Code(_) => {}
            Exit::Signal(sig) => p.push(format!("{who} killed by signal {sig}")),
            Exit::Hung => p.push(format!("{who} still running past its deadline (killed)")),
        }
        if self.stderr.contains("panicked") {
            p.push(format!("{who} panicked"));
        }
        let errors = self
            .stderr
            .lines()
            .filter(|l| l.contains("blindjoin: error:"))
            .count();
        let last = self.stderr.lines().rev().find(|l| !l.trim().is_empty());
        let last_is_error = last.is_some_and(|l| l.starts_with("blindjoin: error: "));
        if matches!(self.exit, Exit::Code(c) | Exit::Signal(c) if c != 0)
            && (errors != 1 || !last_is_error)
        {
            p.push(format!(
                "{who} did not end with exactly one `blindjoin: error:` line ({errors} error lines)"
            ));
        }
        p.extend(self.rss_problem());
        p
    }

    fn rss_problem(&self) -> Option<String> {
        (self.max_rss_kib > MAX_RSS_KIB).then(|| {
            format!(
                "{} peak RSS {} MiB over {} MiB",
                self.role,
                self.max_rss_kib / 1024,
                MAX_RSS_KIB / 1024
            )
        })
    }
}

/// A running `blindjoin` process whose stderr is collected by a thread. Killed and reaped if
/// dropped before it ended.
struct Running {
    role: &'static str,
    pid: libc::pid_t,
    reaped: bool,
    /// The largest VmHWM read while the process ran (KiB; 0 if never read).
    hwm_kib: i64,
    stderr: Option<JoinHandle<String>>,
    first_line: String,
}

/// The peak resident memory (VmHWM, KiB) of a running process, if it can be read.
fn hwm_kib(pid: libc::pid_t) -> Option<i64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

impl Running {
    /// Starts `blindjoin args`; with `first_line`, reads the first stderr line before the
    /// collecting thread takes over.
    // The child is reaped with `wait4` (for its rusage), not `Child::wait`.
    #[allow(clippy::zombie_processes)]
    fn start(role: &'static str, args: &[String], first_line: bool) -> Running {
        let mut child = bin()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        if first_line {
            let _ = err.read_line(&mut line);
        }
        let stderr = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = err.read_to_string(&mut rest);
            rest
        });
        Running {
            role,
            pid: child.id() as libc::pid_t,
            reaped: false,
            hwm_kib: 0,
            stderr: Some(stderr),
            first_line: line,
        }
    }

    /// The address in a listener's first line, `listening on ADDR, ...`.
    fn listening_addr(&self) -> Option<SocketAddr> {
        self.first_line
            .strip_prefix("listening on ")
            .and_then(|r| r.split(',').next())
            .and_then(|a| a.trim().parse().ok())
    }

    /// Reaps the process if it has ended (`block`: waits for it).
    fn try_reap(&mut self, block: bool) -> Option<(Exit, i64)> {
        // The peak resident memory of the program itself (VmHWM, read while it runs): wait4's
        // ru_maxrss would also count the test process's own pages that the child held between
        // fork and exec.
        if let Some(kib) = hwm_kib(self.pid) {
            self.hwm_kib = self.hwm_kib.max(kib);
        }
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: wait4 writes only to the two valid pointers it is given.
        let r = unsafe { libc::wait4(self.pid, &mut status, flags, &mut usage) };
        if r != self.pid {
            return None;
        }
        self.reaped = true;
        let exit = if libc::WIFEXITED(status) {
            Exit::Code(libc::WEXITSTATUS(status))
        } else {
            Exit::Signal(libc::WTERMSIG(status))
        };
        let rss = if self.hwm_kib > 0 {
            self.hwm_kib
        } else {
            usage.ru_maxrss
        };
        Some((exit, rss))
    }

    fn kill(&mut self) -> i64 {
        // SAFETY: the process is our unreaped child, so the pid is still its own.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        self.try_reap(true).map_or(0, |(_, rss)| rss)
    }

    fn ended(&mut self, exit: Exit, max_rss_kib: i64) -> Ended {
        let rest = self
            .stderr
            .take()
            .map(|h| h.join().unwrap())
            .unwrap_or_default();
        Ended {
            role: self.role,
            exit,
            stderr: format!("{}{rest}", self.first_line),
            max_rss_kib,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
        }
    }
}

/// Waits for every process until `limit`, then kills those still running.
fn wait_all(mut procs: Vec<Running>, limit: Instant) -> Vec<Ended> {
    let mut done: Vec<Option<Ended>> = procs.iter().map(|_| None).collect();
    loop {
        for (p, d) in procs.iter_mut().zip(done.iter_mut()) {
            if d.is_none()
                && let Some((exit, rss)) = p.try_reap(false)
            {
                *d = Some(p.ended(exit, rss));
            }
        }
        if done.iter().all(Option::is_some) {
            break;
        }
        if Instant::now() >= limit {
            for (p, d) in procs.iter_mut().zip(done.iter_mut()) {
                if d.is_none() {
                    let rss = p.kill();
                    *d = Some(p.ended(Exit::Hung, rss));
                }
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done.into_iter().map(Option::unwrap).collect()
}

/// `receive --listen 127.0.0.1:0 --input A --column email --output OUT` with `timing`.
fn start_receiver(p: &Protocol, a: &Path, out: &Path, timing: Timing) -> Running {
    let mut args: Vec<String> = [
        "receive",
        "--listen",
        "127.0.0.1:0",
        "--input",
        s(a),
        "--column",
        "email",
        "--output",
        s(out),
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(protocol_args(p));
    args.extend(timing.flags());
    Running::start("receiver", &args, true)
}

/// `send --connect ADDR --input B --column email` with `timing`.
fn start_sender(p: &Protocol, b: &Path, addr: SocketAddr, timing: Timing) -> Running {
    let mut args: Vec<String> = [
        "send",
        "--connect",
        &addr.to_string(),
        "--input",
        s(b),
        "--column",
        "email",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(protocol_args(p));
    args.extend(timing.flags());
    Running::start("sender", &args, false)
}

/// One run of both parties through a relay.
struct PairRun {
    receiver: Ended,
    sender: Ended,
    relay: RelayReport,
    /// What the receiver's output directory holds afterwards.
    leftovers: Vec<String>,
    /// The receiver's output rows, if it wrote the file.
    output: Option<Vec<Vec<String>>>,
}

/// Runs a listening receiver and a sender that connects through a relay with `fault`.
fn run_through_relay(
    p: &Protocol,
    files: &Inputs,
    fault: Option<FaultAt>,
    timing: Timing,
) -> Result<PairRun, String> {
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out.csv");
    let receiver = start_receiver(p, &files.a, &out, timing);
    let Some(addr) = receiver.listening_addr() else {
        let line = receiver.first_line.clone();
        let ended = wait_all(vec![receiver], Instant::now() + GRACE);
        return Err(format!(
            "the receiver did not start listening: {line} {}",
            ended[0].tail()
        ));
    };
    let relay = Relay::start(addr, fault).unwrap();
    let sender = start_sender(p, &files.b, relay.addr(), timing);
    let limit = Instant::now() + timing.deadline + GRACE;
    let mut ended = wait_all(vec![receiver, sender], limit).into_iter();
    let (receiver, sender) = (ended.next().unwrap(), ended.next().unwrap());
    let relay = relay.finish();
    let leftovers = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let output = out.exists().then(|| read_csv(&out));
    Ok(PairRun {
        receiver,
        sender,
        relay,
        leftovers,
        output,
    })
}

// ---------------------------------------------------------------------------------------------
// Naming the frames on the wire

/// The items the CLI hashes from `path`'s `email` column (no normalisation).
fn items(path: &Path) -> Vec<Item> {
    read_input(
        &InputSpec {
            path,
            format: None,
            columns: &["email".to_owned()],
            normalizer: &Normalizer {
                kind: Normalize::None,
                country_code: None,
            },
        },
        &|_| {},
    )
    .unwrap()
    .keyed
    .items
}

/// The protocol's frames in each direction between the receiver and the sender, in-process on
/// the same items and options as the CLI: (message name, payload length).
type Named = BTreeMap<Direction, Vec<(&'static str, u64)>>;

fn named_frames(p: &'static Protocol, files: &Inputs) -> Named {
    let (a, b) = (items(&files.a), items(&files.b));
    // As the CLI sets them for `--normalize none` and each party's set size.
    let opts = |own: &[Item]| RunOptions {
        key_params: vec![
            ("normalize".into(), "none".into()),
            blindjoin_cli::party::key_source_param(false),
        ],
        max_peer_set_size: blindjoin_cli::bucketed::default_max_queries(
            p,
            own.len() as u64,
            1,
            &RunOptions::default(),
        ),
        ..RunOptions::default()
    };
    let (opts_a, opts_b) = (opts(&a), opts(&b));
    // The CLI's channel stack and its closing exchange (`blindjoin_core::finish`).
    let (log, sent) = blindjoin_testkit::run_two_party(
        |ch| {
            let mut t = Transcript::new(Metered::with_frame_log(ch));
            p.receive(&mut t, &a, &opts_a, &mut blindjoin_testkit::rng(1))
                .unwrap();
            finish::receiver_confirm(&mut t, None).unwrap();
            finish::receiver_final(&mut t, None).unwrap();
            t.into_inner().frame_log()
        },
        |ch| {
            let mut t = Transcript::new(ch);
            p.send(&mut t, &b, &opts_b, &mut blindjoin_testkit::rng(2))?;
            finish::sender_confirm(&mut t)
        },
    );
    sent.unwrap();
    let mut named = Named::new();
    for (dir, name, len) in log {
        // The receiver listens: what it sends travels to the connector.
        let d = match dir {
            metered::Direction::Sent => Direction::ToConnector,
            metered::Direction::Received => Direction::ToListener,
        };
        named.entry(d).or_default().push((name, len));
    }
    named
}

/// Where `named` sits in `wire`: the first offset at which the lengths agree.
fn align(wire: &[u64], named: &[(&'static str, u64)]) -> Option<usize> {
    let lens: Vec<u64> = named.iter().map(|(_, l)| *l).collect();
    (0..=wire.len().checked_sub(lens.len())?).find(|&o| wire[o..o + lens.len()] == lens[..])
}

/// A frame to attack: its direction, the message it starts, its index on the wire.
#[derive(Clone, Copy, Debug)]
struct Target {
    dir: Direction,
    message: &'static str,
    frame: usize,
}

/// The first frame of every message in each direction, with the transport's and the closing
/// exchange's frames, from a clean run through a pass-through relay.
fn targets(p: &'static Protocol, files: &Inputs) -> Result<Vec<Target>, String> {
    let named = named_frames(p, files);
    let run = run_through_relay(p, files, None, CLEAN)?;
    if !run.receiver.succeeded() || !run.sender.succeeded() {
        return Err(format!(
            "{}: the clean run failed: receiver: {}; sender: {}",
            p.name,
            run.receiver.tail(),
            run.sender.tail()
        ));
    }
    let mut out = Vec::new();
    for dir in Direction::BOTH {
        let wire = run.relay.frames(dir);
        let ours = named.get(&dir).map_or(&[][..], Vec::as_slice);
        let offset = align(wire, ours).ok_or_else(|| {
            format!(
                "{}, {dir}: the in-process frames {ours:?} are not in the wire's {wire:?}",
                p.name
            )
        })?;
        let mut add = |message, frame| {
            out.push(Target {
                dir,
                message,
                frame,
            })
        };
        if offset > 0 {
            add("transport", 0);
        }
        let mut seen = Vec::new();
        for (i, (name, _)) in ours.iter().enumerate() {
            if !seen.contains(name) {
                seen.push(*name);
                add(name, offset + i);
            }
        }
        if wire.len() > offset + ours.len() {
            add("confirmation", offset + ours.len());
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The matrix

const FAULTS: [(&str, Fault); 6] = [
    ("flip", Fault::FlipByte),
    ("truncate", Fault::Truncate),
    ("drop", Fault::Drop),
    ("duplicate", Fault::Duplicate),
    ("delay", Fault::Delay(DELAY)),
    ("close", Fault::Close),
];

#[derive(Clone, Copy, Debug)]
struct Case {
    protocol: &'static Protocol,
    target: Target,
    fault: (&'static str, Fault),
}

impl Case {
    fn key(&self) -> (&'static str, &'static str, Direction, &'static str) {
        (
            self.protocol.name,
            self.target.message,
            self.target.dir,
            self.fault.0,
        )
    }

    fn label(&self) -> String {
        format!(
            "{} | {} (frame {}) | {} | {}",
            self.protocol.name,
            self.target.message,
            self.target.frame,
            self.target.dir,
            self.fault.0
        )
    }

    /// Cases likely to run into the idle timeout or the deadline go first, so the pool's last
    /// cases are short ones.
    fn expected_cost(&self) -> u8 {
        match (self.target.message, self.target.dir, self.fault.1) {
            ("transport", Direction::ToListener, _) => 0,
            (_, _, Fault::Delay(_) | Fault::Drop) => 1,
            _ => 2,
        }
    }
}

/// What is wrong with a case's run (nothing: the case passed).
fn problems(run: &PairRun) -> Vec<String> {
    let mut p = run.receiver.failure_problems();
    p.extend(run.sender.failure_problems());
    if !run.leftovers.is_empty() {
        p.push(format!(
            "files left in the output directory: {:?}",
            run.leftovers
        ));
    }
    if !run.relay.applied {
        p.push("the relay never saw the target frame (harness)".into());
    }
    p
}

/// What is wrong with a run whose fault only the sender can see: the receiver must exit 0 with
/// exactly `expected` as its output, the sender must fail cleanly.
fn problems_after_finish(run: &PairRun, expected: &[Vec<String>]) -> Vec<String> {
    let mut p = run.sender.failure_problems();
    if !matches!(run.receiver.exit, Exit::Code(0)) {
        p.push(format!(
            "the receiver did not exit 0 ({:?}): {}",
            run.receiver.exit,
            run.receiver.tail()
        ));
    }
    p.extend(run.receiver.rss_problem());
    if run.output.as_deref() != Some(expected) {
        p.push("the receiver's output is not the clean run's".into());
    }
    if run.leftovers != ["out.csv"] {
        p.push(format!("output directory holds {:?}", run.leftovers));
    }
    if !run.relay.applied {
        p.push("the relay never saw the target frame (harness)".into());
    }
    p
}

/// Runs `jobs` on `WORKERS` threads, in order of the slice; results in the same order.
fn pool<T: Sync, R: Send>(jobs: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(jobs.iter().map(|_| None).collect());
    std::thread::scope(|sc| {
        for _ in 0..WORKERS {
            sc.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else { break };
                    let r = f(job);
                    results.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect()
}

#[test]
fn every_fault_on_every_message_ends_both_parties_with_one_error_line() {
    let start = Instant::now();
    let files = inputs();
    let expected = expected_rows(&files);
    // The two-party protocols (the server-aided ones have no `send` and `receive`).
    let protocols: Vec<&'static blindjoin_psi::Protocol> = blindjoin_psi::protocols::ALL
        .iter()
        .copied()
        .filter(|p| p.is_two_party())
        .collect();
    let protocols = protocols.as_slice();
    let calibrated = pool(protocols, |p| targets(p, &files));
    let mut cases = Vec::new();
    for (p, t) in protocols.iter().zip(calibrated) {
        let t = t.unwrap_or_else(|e| panic!("{e}"));
        for dir in Direction::BOTH {
            let names: Vec<String> = t
                .iter()
                .filter(|t| t.dir == dir)
                .map(|t| format!("{} @{}", t.message, t.frame))
                .collect();
            eprintln!("{} {dir}: {}", p.name, names.join(", "));
        }
        for target in t {
            for (name, fault) in FAULTS {
                let fault = match fault {
                    Fault::Delay(d) => (name, Fault::Delay(d * slow_start(p))),
                    other => (name, other),
                };
                cases.push(Case {
                    protocol: p,
                    target,
                    fault,
                });
            }
        }
    }
    cases.sort_by_key(Case::expected_cost);
    let outcomes = pool(&cases, |c| {
        let fault = FaultAt {
            direction: c.target.dir,
            frame: c.target.frame,
            fault: c.fault.1,
        };
        let (_, message, dir, name) = c.key();
        let after_finish = AFTER_THE_RECEIVER_FINISHED
            .iter()
            .any(|&(m, d, f)| m == message && d == dir && (f == "*" || f == name));
        match run_through_relay(c.protocol, &files, Some(fault), Timing::matrix(c.protocol)) {
            Ok(run) => {
                let p = if after_finish {
                    problems_after_finish(&run, &expected)
                } else {
                    problems(&run)
                };
                let detail = format!(
                    "receiver: {:?}: {}\n        sender: {:?}: {}",
                    run.receiver.exit,
                    run.receiver.tail(),
                    run.sender.exit,
                    run.sender.tail()
                );
                (p, detail)
            }
            Err(e) => (vec![e], String::new()),
        }
    });
    let wall = start.elapsed();

    let mut failed = Vec::new();
    for (c, (p, detail)) in cases.iter().zip(&outcomes) {
        if !p.is_empty() {
            failed.push(format!("{}: {}\n        {detail}", c.label(), p.join("; ")));
        }
    }
    eprintln!(
        "fault matrix: {} cases ({} protocols) in {:.1} s wall time",
        cases.len(),
        protocols.len(),
        wall.as_secs_f64()
    );
    let report = if failed.is_empty() {
        String::new()
    } else {
        format!("{} cases failed:\n  {}", failed.len(), failed.join("\n  "))
    };
    assert!(report.is_empty(), "{report}");
}

// ---------------------------------------------------------------------------------------------
// Slow, silent and bad peers

fn ecdh() -> &'static Protocol {
    Protocol::named("ecdh").unwrap()
}

#[test]
fn a_peer_that_trickles_one_byte_a_second_ends_by_the_deadline() {
    let files = inputs();
    let p = ecdh();
    let t = targets(p, &files).unwrap();
    // The sender's transport opening, and its first message after the handshake.
    let first_after_handshake = t
        .iter()
        .find(|t| {
            t.dir == Direction::ToListener
                && !["transport", "hello message", "handshake verdict"].contains(&t.message)
        })
        .unwrap();
    let timing = Timing {
        idle: Duration::from_secs(3),
        deadline: Duration::from_secs(8),
    };
    let faults = [0, first_after_handshake.frame].map(|frame| FaultAt {
        direction: Direction::ToListener,
        frame,
        fault: Fault::Trickle,
    });
    let runs = pool(&faults, |f| run_through_relay(p, &files, Some(*f), timing));
    for (f, run) in faults.iter().zip(runs) {
        let run = run.unwrap();
        let problems = problems(&run);
        assert!(
            problems.is_empty(),
            "trickle from frame {}: {problems:?}\n{}\n{}",
            f.frame,
            run.receiver.stderr,
            run.sender.stderr
        );
        // Bytes keep arriving within the idle timeout, so only the deadline ends the receiver.
        assert!(
            run.receiver.stderr.contains("deadline"),
            "trickle from frame {}: {}",
            f.frame,
            run.receiver.stderr
        );
        eprintln!(
            "trickle from frame {}: receiver: {}; sender: {}",
            f.frame,
            run.receiver.tail(),
            run.sender.tail()
        );
    }
}

/// A listening receiver with `timing` and its address.
fn listening_receiver(files: &Inputs, out: &Path, timing: Timing) -> (Running, SocketAddr) {
    let r = start_receiver(ecdh(), &files.a, out, timing);
    let addr = r
        .listening_addr()
        .unwrap_or_else(|| panic!("unexpected first line: {}", r.first_line));
    (r, addr)
}

/// A CSV file as records, the header first.
fn read_csv(path: &Path) -> Vec<Vec<String>> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .unwrap();
    r.records()
        .map(|rec| rec.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// The rows the receiver must write: the header and every row of `a` whose email (exactly, as
/// with `--normalize none`) is in `b`, in file order.
fn expected_rows(files: &Inputs) -> Vec<Vec<String>> {
    let (a, b) = (read_csv(&files.a), read_csv(&files.b));
    let col = |rows: &[Vec<String>]| rows[0].iter().position(|h| h == "email").unwrap();
    let (ca, cb) = (col(&a), col(&b));
    let theirs: std::collections::HashSet<&str> = b[1..]
        .iter()
        .map(|r| r[cb].as_str())
        .filter(|k| !k.is_empty())
        .collect();
    let mut rows = vec![a[0].clone()];
    rows.extend(
        a[1..]
            .iter()
            .filter(|r| theirs.contains(r[ca].as_str()))
            .cloned(),
    );
    rows
}

#[test]
fn a_silent_peer_does_not_keep_the_listener_from_the_real_one() {
    let files = inputs();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let timing = Timing {
        idle: Duration::from_secs(3),
        deadline: Duration::from_secs(15),
    };
    let (receiver, addr) = listening_receiver(&files, &out, timing);
    // Connects and sends nothing, and stays connected until both parties have ended.
    let silent = TcpStream::connect(addr).unwrap();
    let sender = start_sender(ecdh(), &files.b, addr, timing);
    let ended = wait_all(
        vec![receiver, sender],
        Instant::now() + timing.deadline + GRACE,
    );
    drop(silent);
    let (r, snd) = (&ended[0], &ended[1]);
    eprintln!(
        "silent peer: receiver {:?}: {}; sender {:?}: {}",
        r.exit,
        r.tail(),
        snd.exit,
        snd.tail()
    );
    if r.succeeded() {
        assert!(snd.succeeded(), "{}", snd.stderr);
        assert_eq!(read_csv(&out), expected_rows(&files));
    } else {
        // Otherwise it ends at its deadline, with one error line, as does the sender.
        let mut p = r.failure_problems();
        p.extend(snd.failure_problems());
        assert!(p.is_empty(), "{p:?}\n{}\n{}", r.stderr, snd.stderr);
        assert!(r.stderr.contains("deadline"), "{}", r.stderr);
        assert!(!out.exists());
    }
    for e in &ended {
        assert!(e.rss_problem().is_none(), "{:?}", e.rss_problem());
    }
}

/// Connection `i` of the refused ones: closed at once, garbage, a header announcing a huge
/// frame, or a frame of random bytes; then it waits for the listener to drop it.
fn bad_connection(addr: SocketAddr, i: u32) {
    let Ok(mut c) = TcpStream::connect(addr) else {
        return;
    };
    let bytes: Vec<u8> = match i % 4 {
        0 => return,
        1 => b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        2 => u32::MAX.to_le_bytes().to_vec(),
        _ => {
            let mut f = 40u32.to_le_bytes().to_vec();
            f.extend(
                (0..40u32).map(|k| (k.wrapping_mul(2_654_435_761).wrapping_add(i) >> 7) as u8),
            );
            f
        }
    };
    let _ = c.write_all(&bytes);
    let _ = c.shutdown(std::net::Shutdown::Write);
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    let mut sink = Vec::new();
    let _ = c.read_to_end(&mut sink);
}

#[test]
fn ten_thousand_refused_connections_then_the_real_peer() {
    const BAD: u32 = 10_000;
    let files = inputs();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    // The listener's deadline covers the refused connections too.
    let timing = Timing {
        idle: CLEAN.idle,
        deadline: Duration::from_secs(180),
    };
    let (receiver, addr) = listening_receiver(&files, &out, timing);
    let started = Instant::now();
    let limit = started + timing.deadline;
    for i in 0..BAD {
        if Instant::now() >= limit {
            break;
        }
        bad_connection(addr, i);
    }
    eprintln!(
        "{BAD} refused connections in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let sender = start_sender(ecdh(), &files.b, addr, CLEAN);
    let ended = wait_all(vec![receiver, sender], limit + GRACE);
    eprintln!(
        "after them: receiver {:?}, peak RSS {} MiB, {} stderr lines: {}",
        ended[0].exit,
        ended[0].max_rss_kib / 1024,
        ended[0].stderr.lines().count(),
        ended[0].tail()
    );
    let (r, snd) = (&ended[0], &ended[1]);
    let tail = |e: &Ended| {
        e.stderr
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(r.succeeded(), "{:?}: {}", r.exit, tail(r));
    assert!(snd.succeeded(), "{:?}: {}", snd.exit, tail(snd));
    assert_eq!(read_csv(&out), expected_rows(&files));
    // Refusals are logged (the first ones, then one line per thousand), never a panic.
    assert!(
        r.stderr.contains("refused a connection"),
        "no refusal logged: {}",
        tail(r)
    );
    assert!(!r.stderr.contains("panicked"));
    for e in &ended {
        assert!(e.rss_problem().is_none(), "{:?}", e.rss_problem());
    }
}
