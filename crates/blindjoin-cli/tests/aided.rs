//! End to end: `blindjoin server` and `blindjoin aided` clients as processes over loopback,
//! each client's output rows compared to rows computed independently here; a server that
//! restarts mid-run; and many runs on one server process without its memory growing.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_testkit::relay::{Direction, Fault, FaultAt, Relay};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::Duration;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blindjoin"));
    c.arg("--threads").arg("1");
    c
}

/// A process whose first stderr line names the address it listens on.
struct Listening {
    child: Child,
    addr: String,
    err: BufReader<ChildStderr>,
}

impl Listening {
    /// Starts `args` and reads the address from its first line (after `prefix`).
    fn start(args: &[&str], prefix: &str) -> Listening {
        let mut child = bin()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let addr = line
            .strip_prefix(prefix)
            .and_then(|r| r.split([',', ' ']).next())
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_owned();
        Listening { child, addr, err }
    }

    fn server(extra: &[&str]) -> Listening {
        Listening::server_at("127.0.0.1:0", extra)
    }

    fn server_at(addr: &str, extra: &[&str]) -> Listening {
        let mut args = vec!["server", "--listen", addr];
        args.extend_from_slice(extra);
        Listening::start(&args, "server listening on ")
    }

    /// Waits for the process; returns whether it succeeded and the rest of its stderr.
    fn finish(mut self) -> (bool, String) {
        let status = self.child.wait().unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.err, &mut rest).unwrap();
        (status.success(), rest)
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Writes `id,email` rows, one per key (`extra` rows repeat keys under another id).
fn write_csv(path: &Path, keys: &[u32], extra: &[u32]) {
    let mut text = String::from("id,email\n");
    for (i, k) in keys.iter().chain(extra).enumerate() {
        text.push_str(&format!("{i},user{k}@example.org\n"));
    }
    std::fs::write(path, text).unwrap();
}

/// The lines of `path`'s rows (header first) whose key every set holds, computed here.
fn expected_rows(path: &Path, sets: &[HashSet<u32>]) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    for line in lines {
        let email = line.split(',').nth(1).unwrap();
        let k: u32 = email
            .trim_start_matches("user")
            .trim_end_matches("@example.org")
            .parse()
            .unwrap();
        if sets.iter().all(|s| s.contains(&k)) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The arguments of client `party` of `of` on `input`, writing `output`.
fn client_args(
    server: &str,
    run: &str,
    party: u32,
    of: u32,
    input: &Path,
    output: &Path,
) -> Vec<String> {
    let mut a: Vec<String> = [
        "aided",
        "-q",
        "--server",
        server,
        "--run",
        run,
        "-i",
        s(input),
        "-c",
        "email",
        "-o",
        s(output),
        "--deadline",
        "60s",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    a.extend([
        "--party".into(),
        party.to_string(),
        "--of".into(),
        of.to_string(),
    ]);
    a
}

/// Runs clients 1..=n on `inputs` against `server`; returns their outputs (party 1 first).
fn run_clients(
    server: &str,
    run: &str,
    inputs: &[PathBuf],
    outputs: &[PathBuf],
    extra: &[&str],
) -> Vec<Output> {
    let n = inputs.len() as u32;
    let mut leader_args = client_args(server, run, 1, n, &inputs[0], &outputs[0]);
    leader_args.extend(extra.iter().map(|x| x.to_string()));
    leader_args.extend(["--peers-listen".into(), "127.0.0.1:0".into()]);
    let refs: Vec<&str> = leader_args.iter().map(String::as_str).collect();
    let leader = Listening::start(&refs, "party 1: listening on ");
    let members: Vec<Child> = (2..=n)
        .map(|i| {
            let mut a = client_args(
                server,
                run,
                i,
                n,
                &inputs[i as usize - 1],
                &outputs[i as usize - 1],
            );
            a.extend(["--peer".into(), leader.addr.clone()]);
            a.extend(extra.iter().map(|x| x.to_string()));
            bin()
                .args(&a)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let Listening {
        mut child, mut err, ..
    } = leader;
    let status = child.wait().unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut err, &mut rest).unwrap();
    let mut outs = vec![Output {
        status,
        stdout: Vec::new(),
        stderr: rest,
    }];
    outs.extend(members.into_iter().map(|m| m.wait_with_output().unwrap()));
    outs
}

fn assert_ok(outs: &[Output]) {
    for (i, o) in outs.iter().enumerate() {
        assert!(
            o.status.success(),
            "party {}: {}",
            i + 1,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A failed client: a non-zero exit and one error line, the last, with every needle.
fn assert_one_line_error(out: &Output, needles: &[&str]) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("blindjoin: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "expected one error line, got: {err}");
    assert_eq!(err.lines().last(), Some(errors[0]), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(errors[0].contains(n), "`{n}` missing from: {err}");
    }
}

/// Key sets of three clients with every kind of overlap (all three, two of three, one).
fn three_sets() -> Vec<Vec<u32>> {
    vec![
        (0..300).collect(),
        (100..400).chain(1000..1050).collect(),
        (0..50).chain(150..250).chain(380..500).collect(),
    ]
}

/// Runs of 2 and 3 clients on a server with `store`: every client's exact rows.
fn exact_rows_on(store: &str) {
    exact_rows_of(store, &[], &[2, 3]);
}

/// Runs of each number of clients in `clients` with `extra` client arguments (e.g. the
/// protocol) on a server with `store`: every client's exact rows.
fn exact_rows_of(store: &str, extra: &[&str], clients: &[usize]) {
    let dir = tempfile::tempdir().unwrap();
    let sets = three_sets();
    let inputs: Vec<PathBuf> = (0..3)
        .map(|i| {
            let p = dir.path().join(format!("in{i}.csv"));
            // Every client repeats some keys on other rows: each such row is matched too.
            write_csv(&p, &sets[i], &sets[i][..5]);
            p
        })
        .collect();
    let server = Listening::server(&["-q", "--store", store]);
    for &n in clients {
        let outputs: Vec<PathBuf> = (0..n)
            .map(|i| dir.path().join(format!("out{n}-{i}.csv")))
            .collect();
        let outs = run_clients(
            &server.addr,
            &format!("run-{n}"),
            &inputs[..n],
            &outputs,
            extra,
        );
        assert_ok(&outs);
        let hs: Vec<HashSet<u32>> = sets[..n]
            .iter()
            .map(|s| s.iter().copied().collect())
            .collect();
        for i in 0..n {
            let want = expected_rows(&inputs[i], &hs);
            let got = std::fs::read_to_string(&outputs[i]).unwrap();
            assert_eq!(got, want, "{n} clients, party {}", i + 1);
        }
        // Two clients share 200 keys; three share 150 (100..250 minus 50..150).
        let shared = if n == 2 { 200 } else { 100 };
        let err = String::from_utf8_lossy(&outs[0].stderr);
        assert!(
            err.contains(&format!("{shared} of 300 distinct keys in every set")),
            "{err}"
        );
    }
    server.kill();
}

#[test]
fn two_and_three_clients_write_the_exact_rows() {
    exact_rows_on("memory");
}

#[test]
fn kmrs_mal_clients_write_the_exact_rows_with_the_default_and_the_covert_parameters() {
    exact_rows_of("memory", &["-p", "kmrs_mal"], &[2, 3]);
    exact_rows_of(
        "memory",
        &[
            "-p",
            "kmrs_mal",
            "--copies",
            "2",
            "--dummies",
            "2",
            "--covert",
        ],
        &[2, 3],
    );
}

/// `--sort-dir` (labels sorted on disk in many small buckets) writes the rows of the
/// in-memory client, and leaves the directory empty.
#[test]
fn a_client_that_sorts_on_disk_writes_the_same_rows() {
    let sort = tempfile::tempdir().unwrap();
    let dir = s(sort.path()).to_owned();
    exact_rows_of(
        "memory",
        &["--sort-dir", &dir, "--bucket-labels", "16"],
        &[2, 3],
    );
    assert_eq!(std::fs::read_dir(sort.path()).unwrap().count(), 0);
}

#[test]
fn kmrs_fair_and_kmrs_size_clients_write_the_exact_rows() {
    exact_rows_of("memory", &["-p", "kmrs_fair"], &[2]);
    exact_rows_of("memory", &["-p", "kmrs_size"], &[2]);
}

/// Server-aided PET: `kmrs_size` with one key each writes the row (and says "1 of 1") exactly
/// when the keys are equal, at the default copies and dummies.
#[test]
fn kmrs_size_on_one_key_each_is_an_equality_test() {
    let dir = tempfile::tempdir().unwrap();
    let server = Listening::server(&["-q"]);
    for (k1, k2) in [(7u32, 7u32), (7, 8)] {
        let inputs: Vec<PathBuf> = [k1, k2]
            .iter()
            .enumerate()
            .map(|(i, &k)| {
                let p = dir.path().join(format!("pet{k1}{k2}-{i}.csv"));
                write_csv(&p, &[k], &[]);
                p
            })
            .collect();
        let outputs: Vec<PathBuf> = (0..2)
            .map(|i| dir.path().join(format!("eq{k1}{k2}-{i}.csv")))
            .collect();
        let outs = run_clients(
            &server.addr,
            &format!("pet-{k1}-{k2}"),
            &inputs,
            &outputs,
            &["-p", "kmrs_size"],
        );
        assert_ok(&outs);
        let equal = k1 == k2;
        for (i, output) in outputs.iter().enumerate() {
            let row = if equal {
                format!("0,user{k1}@example.org\n")
            } else {
                String::new()
            };
            let got = std::fs::read_to_string(output).unwrap();
            assert_eq!(got, format!("id,email\n{row}"), "party {}", i + 1);
        }
        let err = String::from_utf8_lossy(&outs[0].stderr);
        let m = if equal { 1 } else { 0 };
        assert!(
            err.contains(&format!("{m} of 1 distinct keys in every set")),
            "{err}"
        );
    }
    server.kill();
}

#[test]
fn the_redis_store_gives_the_same_rows() {
    let redis = blindjoin_testkit::redis::RedisServer::start().unwrap();
    exact_rows_on(&redis.url());
}

#[test]
fn the_disk_store_gives_the_same_rows_and_keeps_no_labels() {
    let dir = tempfile::tempdir().unwrap();
    exact_rows_on(&format!("disk:{}", s(dir.path())));
    let runs = dir.path().join("blindjoin-runs");
    let left: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".labels"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A run "r" of two clients on `server` (inputs `a` and `b`, outputs `o1.csv` and `o2.csv` in
/// `dir`) whose party 2 reaches the server through a relay that holds its submit (its second
/// frame) for 30 s: party 1 sends its labels and then waits. Returns the relay, party 1,
/// party 2 and the two output paths.
fn held_run(
    server: &Listening,
    dir: &Path,
    a: &Path,
    b: &Path,
) -> (Relay, Listening, Child, PathBuf, PathBuf) {
    let relay = Relay::start(
        server.addr.parse().unwrap(),
        Some(FaultAt {
            direction: Direction::ToListener,
            frame: 1,
            fault: Fault::Delay(Duration::from_secs(30)),
        }),
    )
    .unwrap();
    let relay_addr = relay.addr().to_string();
    let (o1, o2) = (dir.join("o1.csv"), dir.join("o2.csv"));
    let mut leader_args = client_args(&server.addr, "r", 1, 2, a, &o1);
    leader_args.extend(["--peers-listen".into(), "127.0.0.1:0".into()]);
    let refs: Vec<&str> = leader_args.iter().map(String::as_str).collect();
    let leader = Listening::start(&refs, "party 1: listening on ");
    let mut member_args = client_args(&relay_addr, "r", 2, 2, b, &o2);
    member_args.extend(["--peer".into(), leader.addr.clone()]);
    let member = bin()
        .args(&member_args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (relay, leader, member, o1, o2)
}

#[test]
fn a_server_that_restarts_mid_run_fails_the_clients_cleanly_and_serves_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    write_csv(&a, &(0..200).collect::<Vec<_>>(), &[]);
    write_csv(&b, &(100..300).collect::<Vec<_>>(), &[]);
    let server = Listening::server(&["-q"]);
    // Party 1 has sent its labels and waits for party 2 when the server goes away.
    let (relay, leader, member, o1, o2) = held_run(&server, dir.path(), &a, &b);
    std::thread::sleep(Duration::from_secs(3));
    let addr = server.addr.clone();
    server.kill();
    let (ok, err) = leader.finish();
    assert!(!ok);
    let last = err.lines().last().unwrap_or_default();
    assert!(last.starts_with("blindjoin: error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = member.wait_with_output().unwrap();
    assert_one_line_error(&out, &[]);
    assert!(!o1.exists() && !o2.exists());
    drop(relay);

    // The restarted server (same address) knows nothing of the old run and serves a new one.
    let server = Listening::server_at(&addr, &[]);
    let outs = run_clients(
        &server.addr,
        "r",
        &[a.clone(), b.clone()],
        &[o1.clone(), o2.clone()],
        &[],
    );
    assert_ok(&outs);
    let hs: Vec<HashSet<u32>> = vec![(0..200).collect(), (100..300).collect()];
    assert_eq!(
        std::fs::read_to_string(&o1).unwrap(),
        expected_rows(&a, &hs)
    );
    assert_eq!(
        std::fs::read_to_string(&o2).unwrap(),
        expected_rows(&b, &hs)
    );
    server.kill();
}

#[test]
fn a_server_stopped_by_sigterm_deletes_its_label_files_and_says_so_in_one_line() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    write_csv(&a, &(0..200).collect::<Vec<_>>(), &[]);
    write_csv(&b, &(100..300).collect::<Vec<_>>(), &[]);
    let store = dir.path().join("store");
    let server = Listening::server(&["-q", "--store", &format!("disk:{}", s(&store))]);
    let runs = store.join("blindjoin-runs");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&runs), 0o700);
    // Party 1's labels are on the server's disk when it is stopped.
    let (relay, leader, member, o1, o2) = held_run(&server, dir.path(), &a, &b);
    let labels = || -> Vec<PathBuf> {
        std::fs::read_dir(&runs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".labels"))
            .collect()
    };
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while labels().is_empty() {
        assert!(
            std::time::Instant::now() < until,
            "party 1's labels never reached the disk"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for f in labels() {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
    let pid = libc::pid_t::try_from(server.child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut server = server;
    let status = server.child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut server.err, &mut rest).unwrap();
    assert_eq!(status.code(), Some(143), "{rest}");
    assert_eq!(
        rest.lines().last(),
        Some("blindjoin: server stopped (SIGTERM); its runs in progress ended"),
        "{rest}"
    );
    assert_eq!(labels(), Vec::<PathBuf>::new());
    let (ok, err) = leader.finish();
    assert!(!ok);
    assert!(
        err.lines()
            .last()
            .unwrap_or_default()
            .starts_with("blindjoin: error: "),
        "{err}"
    );
    drop(relay);
    let out = member.wait_with_output().unwrap();
    assert_one_line_error(&out, &[]);
    assert!(!o1.exists() && !o2.exists());
}

#[test]
fn usage_errors_end_with_one_line_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    write_csv(&a, &[1, 2, 3], &[]);
    let o = dir.path().join("o.csv");
    let base = |extra: &[&str]| {
        let mut args = vec![
            "aided",
            "--server",
            "127.0.0.1:9",
            "--run",
            "r",
            "-i",
            s(&a),
            "-c",
            "email",
            "-o",
            s(&o),
        ];
        args.extend_from_slice(extra);
        bin().args(&args).output().unwrap()
    };
    let cases: &[(&[&str], &str)] = &[
        (
            &["--party", "1", "--of", "2", "--peer", "127.0.0.1:9"],
            "party 1 listens for the other clients",
        ),
        (
            &["--party", "2", "--of", "2", "--peers-listen", "127.0.0.1:0"],
            "party 2 connects to party 1",
        ),
        (
            &["--party", "3", "--of", "2", "--peer", "127.0.0.1:9"],
            "--party 3 --of 2",
        ),
        (
            &[
                "--party",
                "2",
                "--of",
                "2",
                "--peer",
                "127.0.0.1:9",
                "-p",
                "kkrt16",
            ],
            "two-party protocol",
        ),
        (
            &[
                "--party",
                "2",
                "--of",
                "3",
                "--peer",
                "127.0.0.1:9",
                "-p",
                "kmrs_size",
            ],
            "--of 3: protocol `kmrs_size` runs with exactly 2 clients",
        ),
        (
            &["--party", "2", "--of", "2", "--peer", "10.0.0.1:9"],
            "not a loopback address",
        ),
        (
            &[
                "--party",
                "2",
                "--of",
                "2",
                "--peer",
                "127.0.0.1:9",
                "-c",
                "nope",
            ],
            "no column `nope`",
        ),
    ];
    for (extra, needle) in cases {
        let out = base(extra);
        assert_one_line_error(&out, &[needle]);
        assert!(!o.exists());
    }
    // A server-aided protocol is refused by the two-party commands.
    let out = bin()
        .args([
            "receive",
            "--listen",
            "127.0.0.1:0",
            "-i",
            s(&a),
            "-p",
            "kmrs_semi",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, &["server-aided"]);
    // A server on a store that does not exist.
    let out = bin()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "tape:/dev/st0",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, &["--store"]);
    // Redis over TLS: refused in one line, pointing at the safe deployment.
    let out = bin()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "rediss://cache.example:6380",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, &["does not speak TLS to Redis", "redis+unix://"]);
    // CA mode without the clients' names: refused by the option parser.
    let out = bin()
        .args(["server", "--listen", "127.0.0.1:0", "--client-ca", s(&a)])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--client-name <NAME>"));
}

/// A connection to the server, tried again (up to 50 times, 100 ms apart) while the server
/// sheds it: `blindjoin server` closes a new connection at once while 64 others are still
/// being checked, which 200 simultaneous connections reach when the machine is busy.
fn connect_retrying(
    addr: &str,
    cfg: &blindjoin_core::transport::LinkConfig,
) -> blindjoin_core::transport::Link {
    let mut tries = 0;
    loop {
        match blindjoin_core::transport::connect(addr, cfg, &mut |_| {}) {
            Err(blindjoin_core::Error::PeerClosed { .. }) if tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return other.unwrap(),
        }
    }
}

/// The server's resident memory after `rounds` rounds of `parallel` concurrent two-client runs
/// of 100 keys each (clients in this process, over TCP).
fn drive(addr: &str, first_run: usize, rounds: usize, parallel: usize) {
    use blindjoin_core::channel::Channel;
    use blindjoin_core::channel::clock::Limits;
    use blindjoin_core::channel::memory::memory_pair;
    use blindjoin_core::item::items_from_records;
    use blindjoin_core::transport::LinkConfig;
    use blindjoin_psi::protocols::server_aided::client::{AidedLinks, Peers};
    use blindjoin_psi::{Protocol, RunOptions};
    let p: &'static Protocol = "kmrs_semi".parse().unwrap();
    let cfg = LinkConfig::plain(Limits::new(
        Duration::from_secs(60),
        Duration::from_secs(20),
    ));
    let set =
        |lo: u32| -> Vec<Vec<u8>> { (lo..lo + 100).map(|k| k.to_le_bytes().to_vec()).collect() };
    let (s1, s2) = (items_from_records(&set(0)), items_from_records(&set(50)));
    for round in 0..rounds {
        std::thread::scope(|sc| {
            for j in 0..parallel {
                let run = format!("run-{}", first_run + round * parallel + j);
                let (cfg, s1, s2, run) = (&cfg, &s1, &s2, run);
                sc.spawn(move || {
                    let (mut l, mut m) = memory_pair(Duration::from_secs(60));
                    let run2 = run.clone();
                    let member = std::thread::spawn({
                        let cfg = cfg.clone();
                        let s2 = s2.clone();
                        let addr = addr.to_owned();
                        move || {
                            let mut server = connect_retrying(&addr, &cfg);
                            let mut links =
                                AidedLinks::new(run2, (2, 2), Peers::Member(&mut m), &mut server);
                            p.client(&mut links, &s2, &RunOptions::default(), &mut rand::rng())
                                .unwrap()
                                .indices
                        }
                    });
                    let mut server = connect_retrying(addr, cfg);
                    let mut links = AidedLinks::new(
                        run,
                        (1, 2),
                        Peers::Leader(vec![&mut l as &mut dyn Channel]),
                        &mut server,
                    );
                    let got = p
                        .client(&mut links, s1, &RunOptions::default(), &mut rand::rng())
                        .unwrap()
                        .indices;
                    assert_eq!(got, (50..100).collect::<Vec<_>>());
                    assert_eq!(member.join().unwrap(), (0..50).collect::<Vec<_>>());
                });
            }
        });
    }
}

#[cfg(target_os = "linux")]
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// 1,000 runs, 100 of them at once, on one server process: every client gets its exact
/// indices, and the server's memory after the last run is within 8 MiB of where it was after
/// the first 100 (runs are forgotten, threads end).
#[cfg(target_os = "linux")]
#[test]
fn a_thousand_runs_on_one_server_leave_its_memory_where_it_was() {
    let server = Listening::server(&["-q", "--max-client-connections", "256"]);
    drive(&server.addr, 0, 1, 100);
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kb(server.child.id());
    drive(&server.addr, 100, 90, 10);
    std::thread::sleep(Duration::from_millis(300));
    let after = rss_kb(server.child.id());
    assert!(
        after <= before + 8 * 1024,
        "server RSS grew from {before} kB to {after} kB over 900 runs"
    );
    server.kill();
}

/// `blindjoin keygen --out DIR/NAME`: the key, the certificate and the printed fingerprint.
fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
    let base = dir.join(name);
    let out = bin().args(["keygen", "--out", s(&base)]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fp = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (base.with_extension("key"), base.with_extension("crt"), fp)
}

/// Clients and a server that authenticate each other by pinned certificates: a three-client
/// run whose party 1 binds parties 2 and 3 to their certificates writes the exact rows; a
/// client that connects twice with one certificate (to play parties 2 and 3 and learn its
/// two-way intersection with party 1) is refused by party 1 before any key is sent, and no
/// client writes an output; a client that claims party 2's slot on the server with its own
/// certificate is refused, and the run it tried to take completes.
#[test]
fn party_slots_are_bound_to_certificates_on_the_links_and_the_server() {
    use blindjoin_core::channel::clock::Limits;
    use blindjoin_core::channel::tls::{Identity, PeerCheck, TlsConfig};
    use blindjoin_core::channel::{FrameReceiver, recv_msg, send_msg};
    use blindjoin_core::transport::{self, LinkConfig};
    use blindjoin_psi::protocols::server_aided::wire::{
        MSG_STATUS, MSG_SUBMIT, Status, Submit, WIRE_VERSION,
    };
    let dir = tempfile::tempdir().unwrap();
    let (srv_key, srv_crt, srv_fp) = keygen(dir.path(), "srv");
    let ids: Vec<(PathBuf, PathBuf, String)> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| keygen(dir.path(), n))
        .collect();
    let pins = ids
        .iter()
        .map(|i| i.2.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let server = Listening::server(&[
        "-q",
        "--tls-cert",
        s(&srv_crt),
        "--tls-key",
        s(&srv_key),
        "--client-fingerprint",
        &pins,
    ]);
    let sets = three_sets();
    let inputs: Vec<PathBuf> = (0..3)
        .map(|i| {
            let p = dir.path().join(format!("in{i}.csv"));
            write_csv(&p, &sets[i], &[]);
            p
        })
        .collect();
    // Client `who` (index into ids) as party `party` of `of`.
    let tls = |who: usize, extra: &mut Vec<String>| {
        extra.extend(
            [
                "--tls-cert",
                s(&ids[who].1),
                "--tls-key",
                s(&ids[who].0),
                "--server-fingerprint",
                &srv_fp,
            ]
            .map(str::to_owned),
        );
    };
    let start = |run: &str, players: &[usize], outputs: &[PathBuf]| -> Vec<Output> {
        let n = players.len() as u32;
        let mut leader = client_args(&server.addr, run, 1, n, &inputs[0], &outputs[0]);
        tls(players[0], &mut leader);
        let bound: Vec<String> = (2..=n)
            .map(|p| format!("{p}={}", ids[p as usize - 1].2))
            .collect();
        leader.extend(["--peer-fingerprint".into(), bound.join(",")]);
        leader.extend(["--peers-listen".into(), "127.0.0.1:0".into()]);
        let refs: Vec<&str> = leader.iter().map(String::as_str).collect();
        let leader = Listening::start(&refs, "party 1: listening on ");
        let members: Vec<Child> = (2..=n)
            .map(|p| {
                let i = p as usize - 1;
                let mut a = client_args(&server.addr, run, p, n, &inputs[i], &outputs[i]);
                tls(players[i], &mut a);
                a.extend(["--peer-fingerprint".into(), ids[players[0]].2.clone()]);
                a.extend(["--peer".into(), leader.addr.clone()]);
                bin()
                    .args(&a)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let Listening {
            mut child, mut err, ..
        } = leader;
        let status = child.wait().unwrap();
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut rest).unwrap();
        let mut outs = vec![Output {
            status,
            stdout: Vec::new(),
            stderr: rest,
        }];
        outs.extend(members.into_iter().map(|m| m.wait_with_output().unwrap()));
        outs
    };
    let hs: Vec<HashSet<u32>> = sets.iter().map(|s| s.iter().copied().collect()).collect();

    // The honest three-client run.
    let outputs: Vec<PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("ok{i}.csv")))
        .collect();
    let outs = start("bound", &[0, 1, 2], &outputs);
    assert_ok(&outs);
    for i in 0..3 {
        let got = std::fs::read_to_string(&outputs[i]).unwrap();
        assert_eq!(got, expected_rows(&inputs[i], &hs), "party {}", i + 1);
    }

    // Client b plays parties 2 and 3.
    let outputs: Vec<PathBuf> = (0..3)
        .map(|i| dir.path().join(format!("sybil{i}.csv")))
        .collect();
    let outs = start("sybil", &[0, 1, 1], &outputs);
    let leader_err = String::from_utf8_lossy(&outs[0].stderr);
    assert!(!outs[0].status.success());
    assert!(
        leader_err.contains(&format!(
            "the client with certificate {} claimed party 3's slot, but it is party 2",
            ids[1].2
        )) || leader_err.contains(&format!("is {}, not the pinned", ids[1].2)),
        "{leader_err}"
    );
    for (i, o) in outs.iter().enumerate() {
        assert!(!o.status.success(), "party {} succeeded", i + 1);
        assert!(!outputs[i].exists(), "party {} wrote an output", i + 1);
    }

    // Client d, pinned by the server but not part of run `squat`, claims party 2's slot before
    // the clients come: with the run's certificates as its own claim it is refused; with
    // certificates of its own it lands in a run of its own.
    let me = Identity::load(&ids[3].1, &ids[3].0).unwrap();
    let cfg = LinkConfig::tls(
        TlsConfig::new(&me, &PeerCheck::Pinned(srv_fp.parse().unwrap())).unwrap(),
        Limits::new(Duration::from_secs(30), Duration::from_secs(30)),
    );
    let fp = |i: usize| {
        ids[i]
            .2
            .parse::<blindjoin_core::channel::tls::Fingerprint>()
            .unwrap()
            .0
    };
    let squat = |identities: Vec<[u8; 32]>| {
        let mut link = transport::connect(&server.addr, &cfg, &mut |_| {}).unwrap();
        let submit = Submit {
            version: WIRE_VERSION,
            protocol: "kmrs_semi".into(),
            run: "squat".into(),
            party: 2,
            parties: 2,
            label_len: 6,
            count: 300,
            params: vec![
                ("parties".into(), "2".into()),
                ("run".into(), "squat".into()),
            ],
            sizes: vec![300, 300],
            identities,
        };
        send_msg(&mut link, MSG_SUBMIT, &submit).unwrap();
        let status: Status = recv_msg(&mut link, MSG_STATUS, 1024).unwrap();
        (link, status)
    };
    let (_, refused) = squat(vec![fp(0), fp(1)]);
    assert_eq!(
        refused,
        Status::Refused(format!(
            "party 2 of run squat is bound to the certificate {}, and this connection is \
             authenticated by {}",
            ids[1].2, ids[3].2
        ))
    );
    let (mut held, accepted) = squat(vec![fp(0), fp(3)]);
    assert_eq!(accepted, Status::Accepted);
    let outputs: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("squat{i}.csv")))
        .collect();
    let outs = start("squat", &[0, 1], &outputs);
    assert_ok(&outs);
    for i in 0..2 {
        let got = std::fs::read_to_string(&outputs[i]).unwrap();
        assert_eq!(got, expected_rows(&inputs[i], &hs[..2]), "party {}", i + 1);
    }
    let _ = held.recv(MSG_STATUS, 0);
    drop(held);
    server.kill();
}

/// One client (here: every connection from 127.0.0.2, as plain TCP counts clients by address)
/// opens as many connections as the server allows it and trickles a byte of labels every
/// 200 ms on each; one more is refused at once. Meanwhile 100 two-client runs at once from
/// another address all get their exact results, and every trickling connection is cut at its
/// deadline (the run timeout from the run's creation, plus as much again for the answer).
#[cfg(target_os = "linux")]
#[test]
fn a_trickling_client_holds_only_its_own_connections_and_is_cut_at_its_deadline() {
    use blindjoin_core::channel::clock::Limits;
    use blindjoin_core::channel::tcp::TcpChannel;
    use blindjoin_core::channel::{FrameReceiver, FrameSender, recv_msg, send_msg};
    use blindjoin_core::transport::{LINK_HELLO, MSG_LINK_HELLO};
    use blindjoin_psi::protocols::server_aided::wire::{
        MSG_STATUS, MSG_SUBMIT, Status, Submit, WIRE_VERSION,
    };
    use std::io::Write;
    const ALLOWED: usize = 256;
    let server = Listening::server(&[
        "-q",
        "--run-timeout",
        "3s",
        "--max-client-connections",
        &ALLOWED.to_string(),
    ]);
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();
    let open = |k: usize| -> (TcpChannel, Status) {
        let sock = socket2_bind_connect(addr);
        let mut ch = TcpChannel::new(
            sock,
            Limits::new(Duration::from_secs(60), Duration::from_secs(60)),
        )
        .unwrap();
        ch.send(MSG_LINK_HELLO, LINK_HELLO).unwrap();
        assert_eq!(ch.recv(MSG_LINK_HELLO, 64).unwrap(), LINK_HELLO);
        let run = format!("trickle-{k}");
        let submit = Submit {
            version: WIRE_VERSION,
            protocol: "kmrs_semi".into(),
            run: run.clone(),
            party: 1,
            parties: 2,
            label_len: 8,
            count: 1000,
            params: vec![("parties".into(), "2".into()), ("run".into(), run)],
            sizes: vec![1000, 1000],
            identities: Vec::new(),
        };
        send_msg(&mut ch, MSG_SUBMIT, &submit).unwrap();
        let status: Status = recv_msg(&mut ch, MSG_STATUS, 1024).unwrap();
        (ch, status)
    };
    let start = std::time::Instant::now();
    let mut trickling = Vec::new();
    for k in 0..ALLOWED {
        let (ch, status) = open(k);
        assert_eq!(status, Status::Accepted, "connection {k}");
        trickling.push(ch);
    }
    let (_, refused) = open(ALLOWED);
    assert_eq!(
        refused,
        Status::Refused(format!(
            "this client already has {ALLOWED} connections to the server, its limit"
        ))
    );
    // The trickle: a frame header of 8000 bytes, then a byte every 200 ms on each connection,
    // until the server cuts it.
    let sockets: Vec<std::net::TcpStream> = trickling.iter().map(|c| c.socket().unwrap()).collect();
    let trickler = std::thread::spawn(move || {
        let mut open: Vec<std::net::TcpStream> = sockets;
        for s in &mut open {
            let _ = s.write_all(&8000u32.to_le_bytes());
        }
        let mut rounds = 0;
        while !open.is_empty() && rounds < 300 {
            open.retain_mut(|s| s.write_all(&[1]).is_ok());
            std::thread::sleep(Duration::from_millis(200));
            rounds += 1;
        }
        (open.len(), rounds)
    });
    // 100 honest runs at once, from 127.0.0.1.
    drive(&server.addr, 0, 1, 100);
    let honest = start.elapsed();
    let (still_open, rounds) = trickler.join().unwrap();
    assert_eq!(
        still_open, 0,
        "trickling connections left open after {rounds} rounds"
    );
    // Each trickling connection ends with its run's refusal or the deadline's cut.
    for mut ch in trickling {
        while let Ok(Status::Waiting { .. }) = recv_msg::<Status>(&mut ch, MSG_STATUS, 1024) {}
    }
    eprintln!(
        "100 honest runs beside {ALLOWED} trickling connections: {:.2} s; trickling cut after {:.1} s",
        honest.as_secs_f64(),
        f64::from(rounds) * 0.2
    );
    server.kill();
}

/// A TCP connection to `addr` from 127.0.0.2 (Linux routes all of 127/8 to loopback).
fn socket2_bind_connect(addr: std::net::SocketAddr) -> std::net::TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let from: std::net::SocketAddr = "127.0.0.2:0".parse().unwrap();
    sock.bind(&from.into()).unwrap();
    sock.connect(&addr.into()).unwrap();
    sock.into()
}

/// A client that claims 2^32 labels of 16 bytes (a consistent claim: the set size that makes
/// them, announced) for each server-aided protocol is refused in one status line when it joins;
/// the server's resident memory stays within 16 MiB of where it was, and a run after them
/// completes with its exact result.
#[cfg(target_os = "linux")]
#[test]
fn claims_of_2_32_labels_are_refused_in_one_line_and_cost_the_server_nothing() {
    use blindjoin_core::channel::clock::Limits;
    use blindjoin_core::channel::{recv_msg, send_msg};
    use blindjoin_core::transport::{self, LinkConfig};
    use blindjoin_psi::protocols::server_aided::kmrs_mal::label_count;
    use blindjoin_psi::protocols::server_aided::wire::{
        MSG_STATUS, MSG_SUBMIT, Status, Submit, WIRE_VERSION,
    };
    let server = Listening::server(&["-q"]);
    drive(&server.addr, 0, 1, 2);
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kb(server.child.id());
    let cfg = LinkConfig::plain(Limits::new(
        Duration::from_secs(30),
        Duration::from_secs(30),
    ));
    let mal = |p: &str| {
        vec![
            ("copies".to_owned(), "3".to_owned()),
            ("dummies".to_owned(), (1u64 << 20).to_string()),
            ("parties".to_owned(), "2".to_owned()),
            ("run".to_owned(), format!("claim-{p}")),
        ]
    };
    for protocol in ["kmrs_semi", "kmrs_mal", "kmrs_fair", "kmrs_size"] {
        // The size whose labels come closest to 2^32 without passing it.
        let (size, count, params) = if protocol == "kmrs_semi" {
            let n = (1u64 << 32) - 1;
            let params = vec![
                ("parties".to_owned(), "2".to_owned()),
                ("run".to_owned(), "claim-kmrs_semi".to_owned()),
            ];
            (n, n, params)
        } else {
            let n = ((1u64 << 32) - (1 << 21)) / 3;
            (n, label_count(n, 3, 1 << 20, 2).unwrap(), mal(protocol))
        };
        let mut link = transport::connect(&server.addr, &cfg, &mut |_| {}).unwrap();
        let submit = Submit {
            version: WIRE_VERSION,
            protocol: protocol.into(),
            run: format!("claim-{protocol}"),
            party: 1,
            parties: 2,
            label_len: 16,
            count,
            params,
            sizes: vec![size, 1],
            identities: Vec::new(),
        };
        send_msg(&mut link, MSG_SUBMIT, &submit).unwrap();
        let status: Status = recv_msg(&mut link, MSG_STATUS, 1024).unwrap();
        match status {
            Status::Refused(why) => assert!(
                why.starts_with("the run needs ") && why.contains("of this server's memory"),
                "{protocol}: {why}"
            ),
            other => panic!("{protocol}: {other:?}"),
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let after = rss_kb(server.child.id());
    eprintln!("server RSS {before} kB before the claims, {after} kB after");
    assert!(
        after <= before + 16 * 1024,
        "server RSS grew from {before} kB to {after} kB"
    );
    drive(&server.addr, 10, 1, 2);
    server.kill();
}
