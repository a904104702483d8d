//! End to end: `blindjoin` processes over loopback TCP on files, with the output rows compared
//! to rows computed independently here; and every bad-input path ends with one error line, a
//! non-zero exit and no output file.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_testkit::relay::{Direction, Fault, FaultAt, Relay};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blindjoin"));
    c.arg("--threads").arg("1");
    c
}

/// Starts a party that listens on an ephemeral loopback port; returns it and the address.
fn spawn_listener(args: &[&str]) -> (Child, String, BufReader<std::process::ChildStderr>) {
    // A deadline of 60 s unless the test gives its own.
    let limits: &[&str] = if args.contains(&"--deadline") {
        &["--idle-timeout", "20s"]
    } else {
        &["--deadline", "60s", "--idle-timeout", "20s"]
    };
    let mut child = bin()
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .args(limits)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .strip_prefix("listening on ")
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_owned();
    (child, addr, err)
}

fn finish(mut child: Child, mut err: BufReader<std::process::ChildStderr>) -> (bool, String) {
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    (status.success(), rest)
}

/// Runs a listening party with `listener` and a party that connects to it with `connector`
/// (its subcommand first; `--connect ADDR` is added); returns the connector's output and
/// whether the listener succeeded, with its stderr.
fn listen_and_connect(listener: &[&str], connector: &[&str]) -> (Output, bool, String) {
    let (child, addr, err) = spawn_listener(listener);
    let mut args = vec![connector[0], "--connect", &addr];
    args.extend_from_slice(&connector[1..]);
    let out = run(&args);
    let (ok, rest) = finish(child, err);
    (out, ok, rest)
}

/// [`listen_and_connect`] for a run both parties must finish successfully; returns the
/// connector's stderr.
fn run_pair(listener: &[&str], connector: &[&str]) -> String {
    let (out, ok, listener_err) = listen_and_connect(listener, connector);
    let connector_err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{connector:?}: {connector_err}");
    assert!(ok, "{listener:?}: {listener_err}");
    connector_err
}

/// A receiver on `a` that listens and writes the matched rows to `out` and its report to
/// `json`, and a sender on `b` that connects, both with `common`; both must succeed. Returns the
/// sender's stderr.
fn join(a: &Path, b: &Path, out: &Path, json: &Path, common: &[&str]) -> String {
    let mut rargs = vec![
        "receive",
        "--input",
        s(a),
        "--output",
        s(out),
        "--json",
        s(json),
    ];
    rargs.extend(common);
    let mut sargs = vec!["send", "--input", s(b)];
    sargs.extend(common);
    run_pair(&rargs, &sargs)
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Reads a CSV file as (header, records).
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header = r.headers().unwrap().iter().map(str::to_owned).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(str::to_owned).collect())
        .collect();
    (header, rows)
}

/// The rows of `a` whose trimmed, lower-cased `email` occurs in `b`, in file order.
fn expected_email_rows(a: &Path, b: &Path) -> Vec<Vec<String>> {
    let (ha, ra) = read_csv(a);
    let (hb, rb) = read_csv(b);
    let ca = ha.iter().position(|h| h == "email").unwrap();
    let cb = hb.iter().position(|h| h == "email").unwrap();
    let key = |v: &str| v.trim().to_lowercase();
    let theirs: HashSet<String> = rb
        .iter()
        .map(|r| key(&r[cb]))
        .filter(|k| !k.is_empty())
        .collect();
    ra.into_iter()
        .filter(|r| {
            let k = key(&r[ca]);
            !k.is_empty() && theirs.contains(&k)
        })
        .collect()
}

fn generate(dir: &Path, size: &str, other: &str, overlap: &str, seed: &str) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("a.csv"), dir.join("b.csv"));
    let out = run(&[
        "gen",
        "--size",
        size,
        "--other-size",
        other,
        "--overlap",
        overlap,
        "--seed",
        seed,
        s(&a),
        s(&b),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (a, b)
}

/// The sum of column `value` over the rows of `b` whose trimmed, lower-cased `email` occurs
/// in `a`, and the number of such distinct emails.
fn expected_sum_and_cardinality(a: &Path, b: &Path, value: &str) -> (u64, usize) {
    let (ha, ra) = read_csv(a);
    let (hb, rb) = read_csv(b);
    let ca = ha.iter().position(|h| h == "email").unwrap();
    let cb = hb.iter().position(|h| h == "email").unwrap();
    let cv = hb.iter().position(|h| h == value).unwrap();
    let key = |v: &str| v.trim().to_lowercase();
    let ours: HashSet<String> = ra
        .iter()
        .map(|r| key(&r[ca]))
        .filter(|k| !k.is_empty())
        .collect();
    let matched: Vec<&Vec<String>> = rb.iter().filter(|r| ours.contains(&key(&r[cb]))).collect();
    let sum = matched.iter().map(|r| r[cv].parse::<u64>().unwrap()).sum();
    let distinct: HashSet<String> = matched.iter().map(|r| key(&r[cb])).collect();
    (sum, distinct.len())
}

/// `--result cardinality` and `--result sum --value-column` over a circuit protocol: the
/// receiver learns exactly the number, reported in its summary line and JSON, and no rows.
#[test]
fn circuit_results_give_the_exact_cardinality_and_sum() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "300", "400", "90", "17");
    let (sum, distinct) = expected_sum_and_cardinality(&a, &b, "spend");
    assert_eq!(distinct, 90);
    let json = dir.path().join("r.json");
    let keys = ["--column", "email", "--normalize", "email"];
    for (protocol, result) in [
        ("circuit_gmw", "cardinality"),
        ("circuit_yao", "sum"),
        ("circuit_gmw_scalar", "sum"),
    ] {
        let common = [&keys[..], &["--protocol", protocol, "--result", result]].concat();
        let mut rargs = vec!["receive", "--input", s(&a), "--json", s(&json)];
        rargs.extend(&common);
        let mut sargs = vec!["send", "--input", s(&b)];
        sargs.extend(&common);
        if result == "sum" {
            sargs.extend(["--value-column", "spend"]);
        }
        let (out, ok, receiver_err) = listen_and_connect(&rargs, &sargs);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(ok, "{receiver_err}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(report["intersection"], serde_json::Value::Null);
        let line = receiver_err.lines().last().unwrap();
        if result == "sum" {
            assert_eq!(report["aggregate"]["sum"], sum, "{protocol}");
            assert!(
                line.contains(&format!(
                    "the sender's values over the matched keys sum to {sum}"
                )),
                "{line}"
            );
        } else {
            assert_eq!(report["aggregate"]["cardinality"], 90, "{protocol}");
            assert!(
                line.contains("90 of 300 distinct keys matched (the cardinality only)"),
                "{line}"
            );
        }
    }

    // A Parquet sender whose value column is an integer column (its row index).
    let (hb, rb) = read_csv(&b);
    let pb = dir.path().join("b.parquet");
    write_parquet(&pb, &hb, &rb, Some("spend"));
    let (ha, ra) = read_csv(&a);
    let ours: HashSet<String> = ra
        .iter()
        .map(|r| r[2].trim().to_lowercase())
        .filter(|k| !k.is_empty())
        .collect();
    let by_index: u64 = (0..rb.len() as u64)
        .filter(|&i| ours.contains(&rb[i as usize][2].trim().to_lowercase()))
        .sum();
    assert_eq!(ha[2], "email");
    let common = [&keys[..], &["--protocol", "circuit_gmw", "--result", "sum"]].concat();
    let mut rargs = vec!["receive", "--input", s(&a), "--json", s(&json)];
    rargs.extend(&common);
    let mut sargs = vec!["send", "--input", s(&pb), "--value-column", "spend"];
    sargs.extend(&common);
    run_pair(&rargs, &sargs);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["aggregate"]["sum"], by_index);
}

/// What a sum or cardinality run refuses, each with one line before connecting.
#[test]
fn circuit_result_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "50", "50", "10", "3");
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "email,spend\nx@example.com,5\ny@example.com,five\n").unwrap();
    let peer = ["--connect", "127.0.0.1:9", "--deadline", "20s"];
    let cases: [(Vec<&str>, &str); 6] = [
        (
            vec![
                "send",
                "--input",
                s(&b),
                "--column",
                "email",
                "--protocol",
                "circuit_gmw",
                "--result",
                "sum",
            ],
            "--result sum adds up a column of the sender's: name it with --value-column",
        ),
        (
            vec![
                "send",
                "--input",
                s(&b),
                "--column",
                "email",
                "--value-column",
                "spend",
            ],
            "--value-column is used by --result sum only, not --result intersection",
        ),
        (
            vec![
                "receive",
                "--input",
                s(&a),
                "--column",
                "email",
                "--protocol",
                "circuit_gmw",
                "--result",
                "cardinality",
                "--output",
                "o.csv",
            ],
            "--output writes matched rows, and with --result cardinality the receiver learns only a number",
        ),
        (
            vec![
                "receive",
                "--input",
                s(&a),
                "--column",
                "email",
                "--result",
                "cardinality",
            ],
            "invalid parameter `result`: ecdh computes intersection only, cardinality was asked",
        ),
        (
            vec![
                "receive",
                "--input",
                s(&a),
                "--column",
                "email",
                "--result",
                "median",
            ],
            "unknown result `median`; known: intersection, cardinality, sum",
        ),
        (
            vec![
                "send",
                "--input",
                s(&bad),
                "--column",
                "email",
                "--protocol",
                "circuit_yao",
                "--result",
                "sum",
                "--value-column",
                "spend",
            ],
            "bad.csv: line 3: column `spend`: `five` is not a whole number from 0 to 4294967295",
        ),
    ];
    for (args, want) in cases {
        let out = bin().args(&args).args(peer).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
        // Our errors are one line; clap's (an unknown value) add a hint to try --help.
        if err.starts_with("blindjoin: error:") {
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        }
    }
    assert!(!dir.path().join("o.csv").exists());
}

#[test]
fn receiver_listens_sender_connects_email_rows_match_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "400", "900", "150", "11");
    let (out, json) = (dir.path().join("out.csv"), dir.path().join("r.json"));
    let common = ["--column", "email", "--normalize", "email"];
    let sender_line = join(&a, &b, &out, &json, &common);

    let expected = expected_email_rows(&a, &b);
    // Duplicates: more rows than distinct shared emails.
    assert!(expected.len() > 150, "{}", expected.len());
    let (header, rows) = read_csv(&out);
    assert_eq!(header, ["id", "name", "email", "phone", "spend"]);
    assert_eq!(rows, expected);

    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["intersection"]["distinct_keys"], 150);
    assert_eq!(report["intersection"]["rows"], expected.len());
    assert_eq!(report["input"]["distinct_keys"], 400);
    assert_eq!(report["peer_set_size"], 900);
    assert_eq!(report["protocol"], "ecdh");
    assert_eq!(report["kappa"], 128);
    assert_eq!(report["lambda"], 40);
    assert!(report["traffic"]["bytes_sent"].as_u64().unwrap() >= 400 * 32);
    assert!(
        sender_line.contains("the receiver had 400"),
        "{sender_line}"
    );
}

#[test]
fn bucketed_runs_write_the_rows_of_one_session() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "3000", "2000", "700", "21");
    let expected = expected_email_rows(&a, &b);
    for (protocol, buckets, parallel) in [("kkrt16", 8u32, "1"), ("ecdh", 4, "2")] {
        let (out, json) = (dir.path().join("out.csv"), dir.path().join("r.json"));
        let b_text = buckets.to_string();
        let common = [
            "--column",
            "email",
            "--normalize",
            "email",
            "--protocol",
            protocol,
            "--buckets",
            &b_text,
            "--parallel",
            parallel,
        ];
        join(&a, &b, &out, &json, &common);
        let (_, rows) = read_csv(&out);
        assert_eq!(rows, expected, "{protocol}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(report["intersection"]["distinct_keys"], 700, "{protocol}");
        assert_eq!(report["peer_set_size"], 2000);
        assert_eq!(report["buckets"]["buckets"], buckets);
        let max = blindjoin_cli::bucket::max_load(3000, buckets, 40.0);
        assert_eq!(
            report["buckets"]["dummies"],
            max * u64::from(buckets) - 3000,
            "{protocol}"
        );
        std::fs::remove_file(&out).unwrap();
    }

    // `auto`: each party proposes from its input's size and its --memory, the larger is taken.
    let (out, json) = (dir.path().join("out.csv"), dir.path().join("r.json"));
    let per_item = blindjoin_cli::bucket::session_bytes_per_item("kkrt16");
    let proposal = |input: &Path, budget: u64| {
        let rows = blindjoin_cli::input::estimate_rows(input, blindjoin_cli::input::Format::Csv);
        blindjoin_cli::bucket::propose(rows.unwrap(), per_item, 1, budget, 40.0).unwrap()
    };
    // 400 KiB above the fixed reserve: a few hundred kkrt16 items per session.
    let budget = blindjoin_cli::bucket::RESERVE_BYTES + (400 << 10);
    let want = proposal(&a, budget).max(proposal(&b, 4 << 30));
    assert!(want > 1, "{want}");
    let auto = [
        "--column",
        "email",
        "--normalize",
        "email",
        "--protocol",
        "kkrt16",
        "--buckets",
        "auto",
    ];
    let mut rargs = vec![
        "receive",
        "--input",
        s(&a),
        "--output",
        s(&out),
        "--json",
        s(&json),
    ];
    rargs.extend(auto);
    let budget_text = budget.to_string();
    rargs.extend(["--memory", &budget_text]);
    let (recv, addr, err) = spawn_listener(&rargs);
    let mut sargs = vec!["send", "--connect", &addr, "--input", s(&b)];
    sargs.extend(auto);
    let sent = run(&sargs);
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let (ok, stderr) = finish(recv, err);
    assert!(ok, "{stderr}");
    assert_eq!(read_csv(&out).1, expected);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["buckets"]["buckets"], want);
    std::fs::remove_file(&out).unwrap();

    // Both must split alike: the run handshake names the field.
    let out = dir.path().join("out.csv");
    let (recv, addr, err) = spawn_listener(&[
        "receive",
        "--input",
        s(&a),
        "--column",
        "email",
        "--output",
        s(&out),
        "--buckets",
        "4",
    ]);
    let send = run(&[
        "send",
        "--connect",
        &addr,
        "--input",
        s(&b),
        "--column",
        "email",
        "--buckets",
        "8",
    ]);
    assert_one_line_error(&send, &["`buckets`", "4", "8"]);
    assert!(!finish(recv, err).0);
    assert!(!out.exists());
    // A bucketed run against one session: the protocols differ.
    let (recv, addr, err) = spawn_listener(&[
        "receive",
        "--input",
        s(&a),
        "--column",
        "email",
        "--output",
        s(&out),
        "--buckets",
        "4",
    ]);
    let send = run(&[
        "send",
        "--connect",
        &addr,
        "--input",
        s(&b),
        "--column",
        "email",
    ]);
    assert_one_line_error(&send, &["`protocol`", "bucketed/ecdh"]);
    assert!(!finish(recv, err).0);
    assert!(!out.exists());
    // An aggregate would be learned per bucket; more lanes than buckets is meaningless.
    for args in [
        &[
            "--protocol",
            "circuit_gmw",
            "--result",
            "cardinality",
            "--buckets",
            "4",
        ][..],
        &["--buckets", "2", "--parallel", "3"][..],
    ] {
        let mut all = vec!["receive", "--listen", "127.0.0.1:0", "--input", s(&a)];
        all.extend(["--column", "email"]);
        all.extend_from_slice(args);
        assert_one_line_error(&run(&all), &["--"]);
    }
}

/// The bucket records a run directory holds.
fn finished_buckets(run_dir: &Path) -> HashSet<String> {
    match std::fs::read_dir(run_dir.join("done")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".bin"))
            .collect(),
        Err(_) => HashSet::new(),
    }
}

#[test]
fn a_killed_bucketed_run_resumes_and_runs_only_its_unfinished_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "6000", "5000", "1500", "33");
    let expected = expected_email_rows(&a, &b);
    let (rdir, sdir) = (dir.path().join("r-run"), dir.path().join("s-run"));
    let (out, json) = (dir.path().join("out.csv"), dir.path().join("r.json"));
    let common = [
        "--column",
        "email",
        "--normalize",
        "email",
        "--protocol",
        "ecdh",
        "--buckets",
        "32",
    ];
    let receiver_args = |rdir: &Path| -> Vec<String> {
        let mut v: Vec<String> = ["receive", "--input", s(&a), "--output", s(&out)]
            .map(str::to_owned)
            .to_vec();
        v.extend(["--json", s(&json), "--resume", s(rdir)].map(str::to_owned));
        v.extend(common.map(str::to_owned));
        v
    };
    let sender_args = |addr: &str| -> Vec<String> {
        let mut v: Vec<String> = ["send", "--connect", addr, "--input", s(&b), "--resume"]
            .map(str::to_owned)
            .to_vec();
        v.push(s(&sdir).to_owned());
        // The bucket the sender was serving when the receiver died is served again.
        v.push("--allow-rerun".to_owned());
        v.extend(common.map(str::to_owned));
        v
    };

    // The receiver is killed once it has finished 8 of the 32 buckets.
    let rargs = receiver_args(&rdir);
    let rargs: Vec<&str> = rargs.iter().map(String::as_str).collect();
    let (mut recv, addr, _err) = spawn_listener(&rargs);
    let send = bin()
        .args(sender_args(&addr))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while finished_buckets(&rdir).len() < 8 {
        assert!(
            recv.try_wait().unwrap().is_none(),
            "the receiver ended early"
        );
        assert!(t.elapsed().as_secs() < 60, "no progress");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    recv.kill().unwrap();
    recv.wait().unwrap();
    let sent = send.wait_with_output().unwrap();
    assert!(!sent.status.success());
    assert!(!out.exists());
    let (rdone, sdone) = (finished_buckets(&rdir), finished_buckets(&sdir));
    assert!(rdone.len() >= 8 && rdone.len() < 32, "{}", rdone.len());
    let both = rdone.intersection(&sdone).count() as u64;
    // The sender finished every bucket the receiver started another after.
    assert!(both >= 7, "{both}");

    // Resumed by one side only: the run handshake names the field.
    let (recv, addr, err) = spawn_listener(&rargs);
    let mut fresh = vec!["send", "--connect", &addr, "--input", s(&b)];
    fresh.extend(common);
    assert_one_line_error(&run(&fresh), &["`resume`"]);
    assert!(!finish(recv, err).0);
    assert!(!out.exists());
    assert_eq!(
        finished_buckets(&rdir),
        rdone,
        "a refused resume keeps the run"
    );

    // Resumed by both: the buckets both finished are kept, the rest run again.
    let (recv, addr, err) = spawn_listener(&rargs);
    let sent = bin().args(sender_args(&addr)).output().unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let (ok, stderr) = finish(recv, err);
    assert!(ok, "{stderr}");
    let (_, rows) = read_csv(&out);
    assert_eq!(rows, expected);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["buckets"]["kept"], both);
    assert_eq!(report["intersection"]["distinct_keys"], 1500);
    assert_eq!(report["input"]["rows"], read_csv(&a).1.len());
    // A finished run leaves nothing behind.
    assert!(!rdir.exists() && !sdir.exists());
}

#[test]
fn sender_listens_receiver_connects_on_plain_lines_with_trim() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        dir.path().join("a.txt"),
        dir.path().join("b.txt"),
        dir.path().join("m.txt"),
    );
    // Receiver lines: duplicates, surrounding spaces, an empty line (never matches), CRLF.
    std::fs::write(&a, "alice\r\n  bob \n\ncarol\nbob\ndave\nAlice\n").unwrap();
    std::fs::write(&b, "bob\nalice\nzed\n  \n").unwrap();
    for protocol in ["ecdh", "naive"] {
        let (sender, addr, err) = spawn_listener(&[
            "send",
            "--input",
            s(&b),
            "--normalize",
            "trim",
            "--protocol",
            protocol,
            "--insecure",
        ]);
        let recv = run(&[
            "receive",
            "--connect",
            &addr,
            "--input",
            s(&a),
            "--normalize",
            "trim",
            "--output",
            s(&out),
            "--protocol",
            protocol,
            "--insecure",
        ]);
        assert!(
            recv.status.success(),
            "{}",
            String::from_utf8_lossy(&recv.stderr)
        );
        let (ok, serr) = finish(sender, err);
        assert!(ok, "{serr}");
        // "Alice" differs from "alice" under trim; the empty line never matches.
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "alice\n  bob \nbob\n",
            "{protocol}"
        );
    }
}

/// The registry as `blindjoin protocols --json` prints it.
fn registry_json() -> Vec<serde_json::Value> {
    let out = run(&["protocols", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().unwrap().clone()
}

#[test]
fn protocols_json_lists_the_registry() {
    let json = registry_json();
    let ours = blindjoin_psi::protocols::ALL;
    assert_eq!(json.len(), ours.len());
    for (j, p) in json.iter().zip(ours) {
        assert_eq!(j["name"], p.name);
        assert_eq!(j["summary"], p.summary);
        assert_eq!(
            j["security"],
            serde_json::to_value(p.security).unwrap(),
            "{p}"
        );
        assert_eq!(j["assumptions"], p.assumptions);
        let refs = j["references"].as_array().unwrap();
        assert_eq!(refs.len(), p.references.len());
        for (r, q) in refs.iter().zip(p.references) {
            for (k, v) in [
                ("tag", q.tag),
                ("authors", q.authors),
                ("title", q.title),
                ("venue", q.venue),
                ("part", q.part),
            ] {
                assert_eq!(r[k], v, "{p} {k}");
            }
        }
        assert_eq!(j["flights"], p.flights);
        let flow: Vec<&str> = j["flow"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(flow, p.flow.iter().map(|m| m.name).collect::<Vec<_>>());
        for (k, v) in (p.params)(&blindjoin_psi::RunOptions::default()) {
            assert_eq!(j["params"][&k], v.as_str(), "{p} {k}");
        }
        let roles = if p.is_two_party() {
            ["receiver", "sender"]
        } else {
            ["client", "server"]
        };
        assert_eq!(j["roles"][0]["party"], roles[0], "{p}");
        assert_eq!(j["roles"][1]["party"], roles[1], "{p}");
    }
    let models: Vec<&str> = json
        .iter()
        .map(|j| j["security"]["model"].as_str().unwrap())
        .collect();
    assert!(
        models.contains(&"insecure") && models.contains(&"semi-honest"),
        "{models:?}"
    );
}

#[test]
fn every_registered_protocol_writes_the_exact_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        dir.path().join("a.csv"),
        dir.path().join("b.csv"),
        dir.path().join("m.csv"),
    );
    // A BOM, CRLF, a quoted field with a comma, an empty key (never matches), keys that repeat
    // after normalisation (every row of a matched key is written), a key only on one side.
    std::fs::write(
        &a,
        "\u{feff}id,email,note\r\n1,Alice@X.org,first\r\n2,bob@y.org,\r\n3,,empty key\r\n\
         4,alice@x.org,repeats 1\r\n5,\"carol@z.org\",\"quoted, comma\"\r\n6,dave@w.org,only here\r\n\
         7, BOB@y.org ,repeats 2\r\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        "\u{feff}email,id\nalice@x.org,9\ncarol@z.org,8\n,7\nerin@v.org,6\nALICE@x.org ,5\n",
    )
    .unwrap();
    let expected = [
        ["1", "Alice@X.org", "first"],
        ["4", "alice@x.org", "repeats 1"],
        ["5", "carol@z.org", "quoted, comma"],
    ];
    let names: Vec<String> = registry_json()
        .iter()
        .filter(|j| j["roles"][0]["party"] == "receiver")
        .map(|j| j["name"].as_str().unwrap().to_owned())
        .collect();
    let two_party = blindjoin_psi::protocols::ALL
        .iter()
        .filter(|p| p.is_two_party());
    assert_eq!(names.len(), two_party.count());
    for name in &names {
        let _ = std::fs::remove_file(&out);
        let json = dir.path().join(format!("{name}.json"));
        let common = [
            "--column",
            "email",
            "--normalize",
            "email",
            "--protocol",
            name,
            "--insecure",
        ];
        join(&a, &b, &out, &json, &common);
        let (header, rows) = read_csv(&out);
        assert_eq!(header, ["id", "email", "note"], "{name}");
        assert_eq!(rows, expected, "{name}");
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(report["protocol"], name.as_str());
        assert_eq!(report["input"]["rows"], 7, "{name}");
        assert_eq!(report["input"]["distinct_keys"], 4, "{name}");
        assert_eq!(report["input"]["empty_keys"], 1, "{name}");
        assert_eq!(report["input"]["duplicate_rows"], 2, "{name}");
        assert_eq!(report["peer_set_size"], 3, "{name}");
        assert_eq!(report["intersection"]["distinct_keys"], 2, "{name}");
        assert_eq!(report["intersection"]["rows"], 3, "{name}");
    }
}

fn assert_one_line_error(out: &Output, needles: &[&str]) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // Notes (where it listens, what it waits for) may come first; the error is one last line.
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

#[test]
fn bad_inputs_fail_with_one_line_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let csv = dir.path().join("in.csv");
    std::fs::write(&csv, "id,email\n1,a@x.org\n2,b@x.org\n3\n4,d@x.org\n").unwrap();
    let base = [
        "receive",
        "--connect",
        "127.0.0.1:9",
        "--deadline",
        "1s",
        "--output",
        s(&out),
    ];

    let missing = dir.path().join("nope.csv");
    let mut args = base.to_vec();
    args.extend(["--input", s(&missing), "--column", "email"]);
    assert_one_line_error(&run(&args), &["nope.csv"]);

    let mut args = base.to_vec();
    args.extend(["--input", s(&csv), "--column", "mail"]);
    assert_one_line_error(&run(&args), &["no column `mail`", "id, email"]);

    let mut args = base.to_vec();
    args.extend(["--input", s(&csv), "--column", "email"]);
    assert_one_line_error(&run(&args), &["line 4"]);

    std::fs::write(&csv, "id,email\n1,a@x.org\n").unwrap();
    let mut args = base.to_vec();
    args.extend(["--input", s(&csv), "--column", "email"]);
    assert_one_line_error(
        &run(&args),
        &["deadline passed while waiting for the peer to accept our connection"],
    );

    let mut args = base.to_vec();
    args.extend([
        "--input",
        s(&csv),
        "--column",
        "email",
        "--protocol",
        "naive",
    ]);
    assert_one_line_error(&run(&args), &["insecure", "--insecure"]);

    // λ below 40 without consent, refused before connecting.
    let mut args = base.to_vec();
    args.extend(["--input", s(&csv), "--column", "email", "--lambda", "20"]);
    assert_one_line_error(&run(&args), &["`lambda`", "below 40", "--allow-weak"]);

    // A κ the protocol does not offer, refused naming the levels it does.
    let mut args = base.to_vec();
    args.extend(["--input", s(&csv), "--column", "email", "--kappa", "256"]);
    assert_one_line_error(
        &run(&args),
        &["`kappa`", "ecdh provides κ = 128 only", "256"],
    );
    assert!(!out.exists());
}

#[test]
fn protocol_mismatch_fails_both_sides_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "50", "50", "10", "3");
    let out = dir.path().join("out.csv");
    let (recv, addr, err) = spawn_listener(&[
        "receive",
        "--input",
        s(&a),
        "--column",
        "email",
        "--output",
        s(&out),
    ]);
    let send = run(&[
        "send",
        "--connect",
        &addr,
        "--input",
        s(&b),
        "--column",
        "email",
        "--protocol",
        "naive",
        "--insecure",
    ]);
    assert_one_line_error(&send, &["`protocol`", "naive", "ecdh"]);
    let (ok, rerr) = finish(recv, err);
    assert!(!ok);
    assert!(
        rerr.contains("`protocol`") && rerr.lines().count() == 1,
        "{rerr}"
    );
    assert!(!out.exists());

    // λ differs: named, with both values.
    let (recv, addr, err) = spawn_listener(&[
        "receive",
        "--input",
        s(&a),
        "--column",
        "email",
        "--output",
        s(&out),
        "--lambda",
        "50",
    ]);
    let send = run(&[
        "send",
        "--connect",
        &addr,
        "--input",
        s(&b),
        "--column",
        "email",
    ]);
    assert_one_line_error(&send, &["`lambda`", "40", "50"]);
    assert!(!finish(recv, err).0);
    assert!(!out.exists());
}

#[test]
fn a_peer_that_is_not_blindjoin_is_dropped_and_the_listener_waits_for_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "20", "20", "5", "4");
    let (recv, addr, mut err) = spawn_listener(&["receive", "--input", s(&a), "--column", "email"]);
    let mut sock = std::net::TcpStream::connect(&addr).unwrap();
    std::io::Write::write_all(&mut sock, &[16, 0, 0, 0]).unwrap();
    std::io::Write::write_all(&mut sock, b"GET / HTTP/1.1\r\n").unwrap();
    // The right peer comes after the listener has refused the wrong one (the listener takes
    // the first candidate that passes, and would not wait for a slower refusal to log it).
    let mut first = String::new();
    while !first.starts_with("refused a connection from 127.0.0.1:") {
        first.clear();
        assert!(err.read_line(&mut first).unwrap() > 0, "the listener ended");
    }
    let silent = std::net::TcpStream::connect(&addr).unwrap();
    let out = run(&[
        "send",
        "--connect",
        &addr,
        "--input",
        s(&b),
        "--column",
        "email",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (ok, rest) = finish(recv, err);
    let rerr = format!("{first}{rest}");
    assert!(ok, "{rerr}");
    let refusals: Vec<&str> = rerr
        .lines()
        .filter(|l| l.starts_with("refused a connection from 127.0.0.1:"))
        .collect();
    // The silent connection is still being given its 10 s when the right peer passes.
    assert_eq!(refusals.len(), 1, "{rerr}");
    assert!(
        refusals[0].ends_with(
            "malformed link hello from the peer: the peer is not a blindjoin endpoint of this \
             version (it sent `GET / HTTP/1.1\\u{d}\\u{a}`)"
        ),
        "{rerr}"
    );
    drop((sock, silent));
}

#[test]
fn gen_takes_sizes_in_the_bench_notation() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let out = run(&["gen", "--size", "2^10", "--overlap", "1e2", s(&a), s(&b)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.ends_with("100 people in both (column `email` or `phone`)\n"),
        "{err}"
    );
    // The same files as the plain notation writes.
    let (c, d) = (dir.path().join("c.csv"), dir.path().join("d.csv"));
    let out = run(&["gen", "--size", "1024", "--overlap", "100", s(&c), s(&d)]);
    assert!(out.status.success());
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap());
    assert_eq!(std::fs::read(&b).unwrap(), std::fs::read(&d).unwrap());
}

#[test]
fn demo_verifies_itself() {
    let out = run(&["demo", "--size", "600"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("150 emails in common"), "{text}");
    assert!(
        text.contains("verified against the generator's ground truth"),
        "{text}"
    );
    let refused = run(&["demo", "--size", "10", "--protocol", "naive"]);
    assert_one_line_error(&refused, &["insecure"]);
    // A server-aided protocol is refused by the two-party commands, before any work.
    for cmd in [
        &["demo", "--size", "10", "--protocol", "kmrs_semi"][..],
        &["bench", "--sizes", "10", "--protocol", "kmrs_semi"],
        &[
            "send",
            "--connect",
            "127.0.0.1:9",
            "--input",
            "nowhere.csv",
            "--protocol",
            "kmrs_semi",
        ],
    ] {
        assert_one_line_error(&run(cmd), &["`kmrs_semi` is server-aided"]);
    }
    assert!(
        run(&["demo", "--size", "10", "--protocol", "naive", "--insecure"])
            .status
            .success()
    );
}

/// Runs `bench --suite NAME --budget BUDGET --reps 1` into `out` and returns its results.json.
fn run_suite(name: &str, budget: &str, out: &Path) -> serde_json::Value {
    let o = run(&[
        "bench",
        "--suite",
        name,
        "--budget",
        budget,
        "--reps",
        "1",
        "--out",
        s(out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json = std::fs::read(out.join(name).join("results.json")).unwrap();
    serde_json::from_slice(&json).unwrap()
}

/// `bench --suite` measures a paper's settings smallest first within the budget, reports each
/// against the paper (the speed-up is the paper's time over ours), lists what the budget left
/// out, and draws the plots.
#[test]
fn a_suite_measures_within_its_budget_and_reports_against_the_paper() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_suite("psz-tab5", "6s", dir.path());
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        report["suite"]["rows"].as_array().unwrap().len()
    );
    let (measured, skipped): (Vec<_>, Vec<_>) = rows.iter().partition(|r| !r["ours"].is_null());
    assert!(!measured.is_empty() && !skipped.is_empty(), "{report}");
    for r in &measured {
        let ours = r["ours"]["wall_seconds"].as_f64().unwrap();
        if let Some(paper) = r["paper"]["seconds"].as_f64() {
            assert!(
                (r["speedup"].as_f64().unwrap() - paper / ours).abs() < 1e-9,
                "{r}"
            );
        }
        // Smallest sets first: of one protocol and κ, nothing skipped is smaller than what ran.
        let n = r["paper"]["n_recv"].as_u64().unwrap();
        for k in &skipped {
            if k["paper"]["protocol"] == r["paper"]["protocol"]
                && k["paper"]["kappa"] == r["paper"]["kappa"]
            {
                assert!(
                    k["paper"]["n_recv"].as_u64().unwrap() >= n,
                    "{k} before {r}"
                );
            }
        }
    }
    for k in &skipped {
        assert!(
            k["skipped"]
                .as_str()
                .unwrap()
                .starts_with("over the budget: about "),
            "{k}"
        );
    }
    let md = std::fs::read_to_string(dir.path().join("psz-tab5/README.md")).unwrap();
    assert!(md.starts_with("# psz-tab5: PSZ14 Tab. 5"), "{md}");
    assert_eq!(
        md.lines().filter(|l| l.starts_with("| `")).count(),
        rows.len(),
        "{md}"
    );
    for png in ["time-vs-n.png", "bytes-vs-n.png"] {
        if md.contains(png) {
            let bytes = std::fs::read(dir.path().join("psz-tab5").join(png)).unwrap();
            assert_eq!(&bytes[..4], b"\x89PNG");
        }
    }
}

/// A KMRS14 suite runs its server-aided rows as `bench-aided` runs (two clients and a server)
/// on a `redis-server` of its own: the plaintext baseline and the protocol are each measured
/// with one client's bytes, and the paper's time over ours is the speed-up.
#[test]
fn a_server_aided_suite_runs_on_its_own_redis() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_suite("kmrs14-tab4", "5s", dir.path());
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 15);
    // The smallest plaintext and SHPSI rows fit any budget; each ran on Redis, as its mode.
    for (label, mode) in [("Plain", "plaintext"), ("SHPSI", "kmrs_semi")] {
        let r = rows
            .iter()
            .find(|r| r["paper"]["label"] == label && r["paper"]["n_recv"] == 1000)
            .unwrap();
        let ours = &r["ours"];
        assert_eq!(ours["mode"], mode, "{r}");
        assert!(
            ours["store"].as_str().unwrap().starts_with("redis://"),
            "{r}"
        );
        assert_eq!(
            (ours["n"].as_u64(), ours["clients"].as_u64()),
            (Some(1000), Some(2))
        );
        let bytes = ours["bytes_to_server"].as_u64().unwrap();
        // 1000 labels (ℓ bytes each) or 16-byte elements go to the server, and a bit vector
        // comes back.
        assert!(bytes >= 1000 * 8, "{r}");
        let speedup = r["speedup"].as_f64().unwrap();
        let paper = r["paper"]["seconds"].as_f64().unwrap();
        assert!(
            (speedup - paper / ours["wall_seconds"].as_f64().unwrap()).abs() < 1e-9,
            "{r}"
        );
    }
    let md = std::fs::read_to_string(dir.path().join("kmrs14-tab4/README.md")).unwrap();
    assert!(md.contains("two client processes"), "{md}");
    assert!(md.contains("| `plaintext` | Plain | 1000 |"), "{md}");
}

/// `params` predicts from the traffic formula and the loopback calibration `bench` wrote.
#[test]
fn params_predicts_from_the_formula_and_the_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let args = |extra: &[&str]| {
        let mut v = vec![
            "params",
            "--protocol",
            "ecdh",
            "--n1",
            "256",
            "--network",
            "8mbit/100ms",
        ];
        v.extend(["--calibration", s(dir.path()), "--json"]);
        v.extend(extra);
        let out = run(&v);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let before = args(&[]);
    assert_eq!(before["prediction"]["seconds"], serde_json::Value::Null);
    let out = run(&[
        "bench",
        "--protocol",
        "ecdh",
        "--sizes",
        "256",
        "--reps",
        "1",
        "--out",
        s(dir.path()),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("ecdh-1t.json")).unwrap()).unwrap();
    let p = args(&[])["prediction"].clone();
    // The formula's bytes are the metered ones but the handshake's hello and verdict (a few
    // hundred bytes each way), which it leaves out.
    for dir in ["bytes_receiver_to_sender", "bytes_sender_to_receiver"] {
        let extra = rows[0][dir].as_u64().unwrap() - p[dir].as_u64().unwrap();
        assert!((1..512).contains(&extra), "{dir}: {extra}");
    }
    // ecdh's parties send their blinded sets at once: the bulk takes the larger direction's
    // time.
    let bytes = p["bytes_receiver_to_sender"]
        .as_f64()
        .unwrap()
        .max(p["bytes_sender_to_receiver"].as_f64().unwrap());
    assert!(
        (p["transfer_seconds"].as_f64().unwrap() - bytes / 1e6).abs() < 1e-9,
        "{p}"
    );
    let compute = rows[0]["wall_seconds"].as_f64().unwrap();
    let want = compute.max(bytes / 1e6) + p["flights"].as_f64().unwrap() * 0.05;
    assert!((p["seconds"].as_f64().unwrap() - want).abs() < 1e-9, "{p}");
}

/// `bench --network` runs the parties through the shaping relay: 2^8 ecdh items each way
/// take at least the link's round trips, and the report names the network.
#[test]
fn bench_runs_over_a_shaped_network() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "bench",
        "--protocol",
        "ecdh",
        "--sizes",
        "2^8",
        "--reps",
        "1",
        "--network",
        "20mbit/200ms",
        "--out",
        s(dir.path()),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("ecdh-20mbit-200ms-1t.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rows[0]["network"]["rate_bits"], 20e6);
    assert_eq!(rows[0]["network"]["rtt"], 200.0);
    // Flights counted where frames leave each party. The receiver: hello, its blinded keys,
    // verdict. The sender: hello, its blinded keys (at once with the receiver's), the
    // re-blinded ones, verdict; its two directions run on threads of their own, so when its
    // last blinded keys leave after it has read all of the receiver's, those and the
    // re-blinded keys are one run of sends (3 flights: a loaded machine). On the critical path
    // that is the descriptor's 4 flights: at least 4 one-way delays of the 200 ms link.
    assert_eq!(rows[0]["flights_sent_receiver"], 3, "{rows}");
    let sender_flights = rows[0]["flights_sent_sender"].as_u64().unwrap();
    assert!((3..=4).contains(&sender_flights), "{rows}");
    assert_eq!(rows[0]["rounds"], 4, "{rows}");
    let wall = rows[0]["wall_seconds"].as_f64().unwrap();
    assert!(wall >= 0.4, "{rows}");
    // CM20 §5.2's B2B cost: the wall time on two 0.096 USD/h machines plus 0.03 USD/GiB.
    let wall = rows[0]["wall_seconds"].as_f64().unwrap();
    let bytes = rows[0]["bytes_receiver_to_sender"].as_f64().unwrap()
        + rows[0]["bytes_sender_to_receiver"].as_f64().unwrap();
    let b2b = 1000.0 * (wall * 2.0 * 0.096 / 3600.0 + bytes * 0.03 / (1u64 << 30) as f64);
    let got = rows[0]["cost_per_1000_runs"]["b2b_usd"].as_f64().unwrap();
    assert!((got - b2b).abs() < 1e-9, "{got} {b2b}");
    let md = std::fs::read_to_string(dir.path().join("ecdh-20mbit-200ms-1t.md")).unwrap();
    assert!(
        md.starts_with(
            "Network 20mbit/200ms: 20 Mbit/s per direction, 200 ms RTT; shaped in user space"
        ),
        "{md}"
    );
    assert!(
        md.contains("| ecdh @ 20mbit/200ms | 256 | 256 | 1 |"),
        "{md}"
    );
}

/// `bench --result sum` checks the receiver's sum against the exact one (it fails otherwise)
/// and names its results after the result.
#[test]
fn bench_checks_a_circuit_sum() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "bench",
        "--protocol",
        "circuit_yao",
        "--sizes",
        "100",
        "--sender-sizes",
        "150",
        "--reps",
        "1",
        "--result",
        "sum",
        "--out",
        s(dir.path()),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(dir.path().join("circuit_yao-sum-1t.md")).unwrap();
    assert!(
        md.lines()
            .nth(2)
            .unwrap()
            .starts_with("| circuit_yao (sum) | 100 | 150 | 1 |"),
        "{md}"
    );
}

#[test]
fn bench_runs_two_processes_and_checks_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ecdh-1t.json");
    let out = run(&[
        "bench",
        "--protocol",
        "ecdh",
        "--sizes",
        "2^8,100",
        "--sender-sizes",
        "300,2^7",
        "--reps",
        "1",
        "--transport",
        "tcp,tls",
        "--out",
        s(dir.path()),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("ecdh-1t.md")).unwrap();
    // Two sizes, each over plain TCP and over TLS.
    assert_eq!(md.lines().count(), 6, "{md}");
    assert!(
        md.lines()
            .nth(2)
            .unwrap()
            .starts_with("| ecdh | 256 | 300 | 1 |"),
        "{md}"
    );
    assert!(
        md.lines()
            .nth(3)
            .unwrap()
            .starts_with("| ecdh (TLS) | 256 | 300 | 1 |"),
        "{md}"
    );
    assert_eq!(rows[0]["n_recv"], 256);
    assert_eq!(rows[0]["n_send"], 300);
    assert_eq!(rows[0]["transport"], "tcp");
    assert_eq!(rows[1]["transport"], "tls");
    // The protocol's bytes do not depend on the transport (TLS records are below the frames).
    assert_eq!(
        rows[0]["bytes_sender_to_receiver"],
        rows[1]["bytes_sender_to_receiver"]
    );
    assert_eq!(rows[2]["n_send"], 128);
    // Receiver sends its hello and 256 points; tags are 40 + ⌈log2(256·300)⌉ = 57 bits = 8 bytes.
    let hello = rows[0]["bytes_receiver_to_sender"].as_u64().unwrap() - (256 * 32 + 4);
    assert_eq!(
        rows[0]["bytes_sender_to_receiver"].as_u64().unwrap(),
        hello + (300 * 32 + 4) + (256 * 8 + 4)
    );
}

#[test]
fn bench_runs_a_bucketed_protocol_and_checks_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "bench",
        "--protocol",
        "kkrt16",
        "--sizes",
        "2^12",
        "--reps",
        "1",
        "--buckets",
        "4",
        "--parallel",
        "2",
        "--out",
        s(dir.path()),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("kkrt16-b4p2-1t.json")).unwrap())
            .unwrap();
    assert_eq!(rows[0]["buckets"], 4);
    assert_eq!(rows[0]["parallel"], 2);
    let md = std::fs::read_to_string(dir.path().join("kkrt16-b4p2-1t.md")).unwrap();
    assert!(
        md.lines()
            .nth(2)
            .unwrap()
            .starts_with("| kkrt16 [4 buckets, 2 at once] | 4096 | 4096 | 1 |"),
        "{md}"
    );
}

#[test]
fn empty_inputs_give_an_empty_intersection_with_the_header_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        dir.path().join("a.csv"),
        dir.path().join("b.csv"),
        dir.path().join("o.csv"),
    );
    std::fs::write(&a, "id,email\n").unwrap();
    std::fs::write(&b, "id,email\n1,x@y.org\n").unwrap();
    run_pair(
        &[
            "receive",
            "--input",
            s(&a),
            "--column",
            "email",
            "--output",
            s(&out),
        ],
        &["send", "--input", s(&b), "--column", "email"],
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "id,email\n");
}

#[test]
fn phone_numbers_match_across_formats() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "120", "80", "30", "21");
    let out = dir.path().join("o.csv");
    let json = dir.path().join("r.json");
    let phone = ["--column", "phone", "--normalize", "phone"];
    join(&a, &b, &out, &json, &phone);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // The generator writes each shared person's phone in a different format in each file.
    assert_eq!(report["intersection"]["distinct_keys"], 30);
    let (_, rows) = read_csv(&out);
    let (_, ra) = read_csv(&a);
    let (_, rb) = read_csv(&b);
    // Independent check on the digits only (country code always present in some form).
    let digits = |p: &str| {
        let d: String = p.chars().filter(char::is_ascii_digit).collect();
        d.strip_prefix("00").map(str::to_owned).unwrap_or(d)
    };
    let theirs: HashSet<String> = rb.iter().map(|r| digits(&r[3])).collect();
    let expected: Vec<Vec<String>> = ra
        .into_iter()
        .filter(|r| !r[3].trim().is_empty() && theirs.contains(&digits(&r[3])))
        .collect();
    assert_eq!(rows, expected);
}

#[test]
fn bench_ot_runs_both_extensions_over_tcp() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["iknp", "kos", "kk13"] {
        let out = run(&[
            "bench-ot",
            "--kind",
            kind,
            "--count",
            "1000",
            "--reps",
            "1",
            "--out",
            s(dir.path()),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = dir.path().join(format!("ot-{kind}.json"));
        let row: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(row["count"], 1000);
        // κ = 128 bits per OT (κ' = 256 for KK13 with η = 8), rounded up to 1024 OTs (plus
        // KOS's 256 extra), and the base OTs.
        let u_bytes = match kind {
            "kos" => (1024 + 256) * 16,
            "kk13" => 1024 * 32,
            _ => 1024 * 16,
        };
        let sent = row["bytes_receiver_to_sender"].as_u64().unwrap();
        assert!(
            sent >= u_bytes && sent < u_bytes + 128 * 40,
            "{kind}: {sent}"
        );
    }
}

#[test]
fn help_lists_every_protocol_of_the_registry() {
    let subcommands = [
        &["--help"][..],
        &["demo", "--help"],
        &["send", "--help"],
        &["receive", "--help"],
        &["bench", "--help"],
    ];
    for sub in subcommands {
        let out = run(sub);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let listed = &text[text.find("Protocols (--protocol):").expect("protocol list")..];
        for p in blindjoin_psi::protocols::ALL {
            assert!(
                listed.contains(&format!("\n  {:<8}", p.name)),
                "{p} missing from {sub:?}:\n{listed}"
            );
            let flat = listed.split_whitespace().collect::<Vec<_>>().join(" ");
            let r = &p.references[0];
            let security = format!("{}: {}", p.security, p.assumptions);
            let paper = format!("[{} {}]", r.tag, r.part);
            for needle in [p.summary, &security, &paper] {
                let needle = needle.split_whitespace().collect::<Vec<_>>().join(" ");
                assert!(flat.contains(&needle), "{p}: {needle} not in {listed}");
            }
        }
    }
}

/// `blindjoin keygen --out DIR/NAME`: the private key (mode 0600), the certificate, and the
/// fingerprint printed on stdout.
fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
    let base = dir.join(name);
    let out = run(&["keygen", "--out", s(&base)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fp = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (base.with_extension("key"), base.with_extension("crt"), fp)
}

#[test]
fn keygen_writes_a_private_key_and_a_certificate_with_its_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let (key, crt, fp) = keygen(dir.path(), "org-a");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(
        std::fs::read_to_string(&key)
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );
    let pem = std::fs::read_to_string(&crt).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
    // The fingerprint is SHA-256 of the certificate's DER, as `openssl x509 -fingerprint` shows.
    let cert = blindjoin_core::channel::tls::load_cert(&crt).unwrap();
    assert_eq!(
        fp,
        blindjoin_core::channel::tls::Fingerprint::of(&cert).to_string()
    );
    // An existing identity is never overwritten by accident.
    let again = run(&["keygen", "--out", s(&dir.path().join("org-a"))]);
    assert_one_line_error(&again, &["org-a.key: exists; give --force to replace it"]);
}

#[test]
fn pinned_tls_parties_join_and_a_wrong_pin_is_refused_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "300", "300", "70", "9");
    let (ka, ca, fa) = keygen(dir.path(), "a");
    let (kb, cb, fb) = keygen(dir.path(), "b");
    let (_, _, fc) = keygen(dir.path(), "c");
    let out = dir.path().join("out.csv");
    let recv_tls = [
        "--tls-cert",
        s(&ca),
        "--tls-key",
        s(&ka),
        "--peer-fingerprint",
        &fb,
    ];
    let mut rargs = vec![
        "receive",
        "--input",
        s(&a),
        "--column",
        "email",
        "--normalize",
        "email",
        "--output",
        s(&out),
    ];
    rargs.extend(recv_tls);
    let mut sargs = vec![
        "send",
        "--input",
        s(&b),
        "--column",
        "email",
        "--normalize",
        "email",
    ];
    sargs.extend([
        "--tls-cert",
        s(&cb),
        "--tls-key",
        s(&kb),
        "--peer-cert",
        s(&ca),
    ]);
    run_pair(&rargs, &sargs);
    let (_, rows) = read_csv(&out);
    assert_eq!(rows, expected_email_rows(&a, &b));
    std::fs::remove_file(&out).unwrap();

    // The sender pins c: it refuses a's certificate and exits at once; the receiver logs the
    // refused connection and ends at its deadline; no protocol message was sent.
    let mut rshort = rargs.clone();
    rshort.extend(["--deadline", "3s"]);
    let (child, addr, err) = spawn_listener(&rshort);
    let mut wrong = vec![
        "send",
        "--connect",
        &addr,
        "--input",
        s(&b),
        "--column",
        "email",
    ];
    wrong.extend([
        "--tls-cert",
        s(&cb),
        "--tls-key",
        s(&kb),
        "--peer-fingerprint",
        &fc,
    ]);
    let sent = run(&wrong);
    assert_one_line_error(
        &sent,
        &[&format!(
            "TLS: the peer's certificate is {fa}, not the pinned {fc}"
        )],
    );
    let (ok, rerr) = finish(child, err);
    assert!(!ok);
    assert!(
        rerr.contains("refused a connection from 127.0.0.1:"),
        "{rerr}"
    );
    assert!(
        rerr.lines().last().unwrap().starts_with(
            "blindjoin: error: no acceptable peer connected before the run's deadline; 1 connection(s) refused"
        ),
        "{rerr}"
    );
    assert!(!out.exists());
}

#[test]
fn plain_tcp_off_loopback_needs_plaintext_and_tls_options_must_be_complete() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = generate(dir.path(), "20", "20", "5", "4");
    let base = ["send", "--input", s(&a), "--column", "email"];
    let mut args = base.to_vec();
    args.extend(["--listen", "0.0.0.0:0"]);
    assert_one_line_error(
        &run(&args),
        &["0.0.0.0:0 is not a loopback address, so the connection needs TLS"],
    );
    let (key, crt, _) = keygen(dir.path(), "me");
    let mut args = base.to_vec();
    args.extend([
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        s(&crt),
        "--tls-key",
        s(&key),
    ]);
    assert_one_line_error(
        &run(&args),
        &["TLS needs the peer to accept: give --peer-fingerprint"],
    );
    let mut args = base.to_vec();
    args.extend([
        "--connect",
        "127.0.0.1:9",
        "--tls-cert",
        s(&crt),
        "--tls-key",
        s(&key),
        "--peer-fingerprint",
        "sha256:00",
    ]);
    let out = run(&args);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a certificate fingerprint"));
    // --plaintext off loopback warns, then runs (here it finds nobody before its deadline).
    let mut args = base.to_vec();
    args.extend([
        "--connect",
        "192.0.2.1:9",
        "--plaintext",
        "--deadline",
        "1s",
    ]);
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("warning: --plaintext: the connection to 192.0.2.1:9 is neither encrypted nor authenticated"), "{err}");
    assert!(!out.status.success());
}

#[test]
fn a_normalisation_difference_is_refused_in_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "50", "50", "10", "5");
    let out = dir.path().join("out.csv");
    let (o, ok, lerr) = listen_and_connect(
        &[
            "receive",
            "--input",
            s(&a),
            "--column",
            "email",
            "--normalize",
            "email",
            "--output",
            s(&out),
        ],
        &["send", "--input", s(&b), "--column", "email"],
    );
    assert_one_line_error(
        &o,
        &["parameter mismatch on `normalize`: ours is none, the peer's is email"],
    );
    assert!(!ok);
    assert!(
        lerr.contains("parameter mismatch on `normalize`: ours is email, the peer's is none"),
        "{lerr}"
    );
    assert!(!out.exists());
}

#[test]
fn output_problems_are_found_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = generate(dir.path(), "20", "20", "5", "4");
    // Nobody listens at 127.0.0.1:9: each case must fail on its own, long before the deadline.
    let base = [
        "receive",
        "--connect",
        "127.0.0.1:9",
        "--deadline",
        "30s",
        "--input",
        s(&a),
        "--column",
        "email",
    ];
    let started = std::time::Instant::now();
    let missing = dir.path().join("no/such/dir/out.csv");
    let mut args = base.to_vec();
    args.extend(["--output", s(&missing)]);
    assert_one_line_error(
        &run(&args),
        &["no/such/dir/out.csv: the directory", "does not exist"],
    );
    let mut args = base.to_vec();
    args.extend(["--output", s(&a)]);
    assert_one_line_error(&run(&args), &["is also an input of this run"]);
    let json = dir.path().join("nodir/report.json");
    let out = dir.path().join("out.csv");
    let mut args = base.to_vec();
    args.extend(["--output", s(&out), "--json", s(&json)]);
    assert_one_line_error(&run(&args), &["nodir/report.json: the directory"]);
    assert!(!out.exists());
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn a_hello_changed_in_transit_fails_both_sides_before_the_protocol() {
    // A relay flips the last byte of the sender's hello (its nonce): both parties see
    // different transcripts and refuse.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "40", "40", "10", "6");
    let out = dir.path().join("out.csv");
    let (child, addr, err) = spawn_listener(&[
        "receive",
        "--input",
        s(&a),
        "--column",
        "email",
        "--output",
        s(&out),
    ]);
    // Frame 0 is the link hello, frame 1 the hello.
    let relay = Relay::start(
        addr.parse().unwrap(),
        Some(FaultAt {
            direction: Direction::ToListener,
            frame: 1,
            fault: Fault::FlipLastByte,
        }),
    )
    .unwrap();
    let relay_addr = relay.addr().to_string();
    let o = run(&[
        "send",
        "--connect",
        &relay_addr,
        "--input",
        s(&b),
        "--column",
        "email",
    ]);
    assert_one_line_error(&o, &["the two sides saw different handshakes"]);
    let (ok, rerr) = finish(child, err);
    assert!(!ok);
    assert!(
        rerr.lines()
            .last()
            .unwrap()
            .contains("the two sides saw different handshakes"),
        "{rerr}"
    );
    assert!(!out.exists());
    assert!(relay.finish().applied);
}

/// Peak resident memory of a child until it exits (its `VmHWM`, read every 10 ms while it
/// runs; wait4's `ru_maxrss` would also count the test process's pages the child shared
/// between fork and exec), in bytes, and whether it exited 0.
#[cfg(target_os = "linux")]
fn wait_with_peak_rss(child: &Child) -> (bool, u64) {
    let pid = child.id() as libc::pid_t;
    let mut peak = 0u64;
    let mut status = 0;
    loop {
        if let Some(hwm) = proc_status_kb(child.id(), "VmHWM:") {
            peak = peak.max(hwm * 1024);
        }
        // SAFETY: a valid pointer to a status word; the pid is our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        assert_eq!(r, 0);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    (
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        peak,
    )
}

/// A `kB` field of `/proc/<pid>/status` (absent once the process has exited).
#[cfg(target_os = "linux")]
fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

#[cfg(target_os = "linux")]
fn rss_now(pid: u32) -> u64 {
    proc_status_kb(pid, "VmRSS:").unwrap() * 1024
}

/// A receiver that announces 2^30 keys (accepted: the sender raised --max-peer-size) and then
/// sends nothing: the sender stays within 64 MiB of its memory before the connection and ends
/// at its deadline, for every protocol.
#[cfg(target_os = "linux")]
#[test]
fn a_peer_that_claims_2_30_keys_and_sends_nothing_costs_no_memory() {
    use blindjoin_core::channel::clock::Limits;
    use blindjoin_core::handshake::{Role, SessionConfig, handshake};
    use blindjoin_core::transport::{LinkConfig, connect};
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = generate(dir.path(), "1000", "1000", "10", "3");
    for p in blindjoin_psi::protocols::ALL
        .iter()
        .filter(|p| p.is_two_party())
    {
        let (mut child, addr, mut err) = {
            let mut args = vec![
                "send",
                "--input",
                s(&b),
                "--column",
                "email",
                "--protocol",
                p.name,
            ];
            // What a receiver of 2^30 keys can test (more than 2^30 where the protocol leaves
            // slack): the sender accepts exactly that.
            let budget = (p.queries)(&blindjoin_psi::protocol::Sizes::new(1 << 30, 1000))
                .unwrap_or(1 << 30)
                .to_string();
            args.extend(["--insecure", "--max-peer-size", &budget, "--deadline", "4s"]);
            if !p.is_insecure() {
                args.retain(|a| *a != "--insecure");
            }
            spawn_listener(&args)
        };
        let idle = rss_now(child.id());
        let started = std::time::Instant::now();
        let mut link = connect(
            &addr,
            &LinkConfig::plain(Limits::new(
                std::time::Duration::from_secs(10),
                std::time::Duration::from_secs(10),
            )),
            &mut |_| {},
        )
        .unwrap();
        let opts = blindjoin_psi::RunOptions::default();
        let mut cfg = SessionConfig::new(p.name, Role::Receiver, 1 << 30);
        cfg.params = (p.params)(&opts);
        cfg.params.push(("normalize".into(), "none".into()));
        cfg.params
            .push(blindjoin_cli::party::key_source_param(false));
        let session = handshake(&mut link, &cfg, &mut rand::rng());
        assert!(session.is_ok(), "{}: {:?}", p.name, session.err());
        let (ok, peak) = wait_with_peak_rss(&child);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        child.stdout.take();
        drop(link);
        assert!(!ok, "{}: {rest}", p.name);
        // The run waits for the silent peer until its deadline, or, for a protocol whose
        // structures cannot serve 2^30 keys (a Bloom filter has at most 2^32 - 1 positions,
        // cm20_mal's values at most 128 bits), refuses the size at once.
        let last = rest.lines().last().unwrap();
        assert!(
            last.starts_with("blindjoin: error: the run's deadline passed")
                || last.starts_with("blindjoin: error: invalid parameter `set size`")
                || last.starts_with("blindjoin: error: invalid parameter `receiver set size`"),
            "{}: {rest}",
            p.name
        );
        assert!(
            rest.contains("the receiver announced 1073741824 distinct keys"),
            "{rest}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(8),
            "{}",
            p.name
        );
        eprintln!(
            "{}: peak RSS {:.1} MiB, {:.1} MiB before the connection, exit after {:.1} s",
            p.name,
            peak as f64 / 1048576.0,
            idle as f64 / 1048576.0,
            started.elapsed().as_secs_f64()
        );
        assert!(
            peak.saturating_sub(idle) <= 64 << 20,
            "{}: peak {} MiB, {} MiB before the connection",
            p.name,
            peak >> 20,
            idle >> 20
        );
    }
}

/// Writes `rows` under `header` as a Parquet file of string columns, except `id_as_int`'s
/// column, written as 64-bit integers (the row number) to show non-text key columns work too.
fn write_parquet(path: &Path, header: &[String], rows: &[Vec<String>], int_column: Option<&str>) {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let columns: Vec<ArrayRef> = header
        .iter()
        .enumerate()
        .map(|(c, name)| -> ArrayRef {
            if Some(name.as_str()) == int_column {
                Arc::new(Int64Array::from_iter_values(0..rows.len() as i64))
            } else {
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| r[c].clone()),
                ))
            }
        })
        .collect();
    let batch = RecordBatch::try_from_iter(header.iter().cloned().zip(columns)).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    // Several record batches and row groups.
    for start in (0..batch.num_rows()).step_by(100) {
        let len = 100.min(batch.num_rows() - start);
        w.write(&batch.slice(start, len)).unwrap();
        w.flush().unwrap();
    }
    w.close().unwrap();
}

/// A Parquet file's rows as text.
fn read_parquet(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    use arrow_array::Array;
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut header = Vec::new();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        header = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let text: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| arrow_cast::cast(c, &arrow_schema::DataType::Utf8).unwrap())
            .collect();
        for i in 0..batch.num_rows() {
            rows.push(
                text.iter()
                    .map(|c| {
                        let s = c
                            .as_any()
                            .downcast_ref::<arrow_array::StringArray>()
                            .unwrap();
                        if s.is_null(i) {
                            String::new()
                        } else {
                            s.value(i).to_owned()
                        }
                    })
                    .collect(),
            );
        }
    }
    (header, rows)
}

#[test]
fn parquet_inputs_and_outputs_give_the_rows_of_the_csv_join() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "600", "500", "200", "21");
    let expected = expected_email_rows(&a, &b);
    let (ha, ra) = read_csv(&a);
    let (hb, rb) = read_csv(&b);
    let (pa, pb) = (dir.path().join("a.parquet"), dir.path().join("b.pq"));
    write_parquet(&pa, &ha, &ra, None);
    write_parquet(&pb, &hb, &rb, Some("id"));
    let common = [
        "--column",
        "email",
        "--normalize",
        "email",
        "--protocol",
        "kkrt16",
    ];

    // Parquet in, Parquet out (by extension), against a Parquet sender.
    let (out, json) = (dir.path().join("out.parquet"), dir.path().join("r.json"));
    join(&pa, &pb, &out, &json, &common);
    let (header, rows) = read_parquet(&out);
    assert_eq!(header, ["id", "name", "email", "phone", "spend"]);
    assert_eq!(rows, expected);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["intersection"]["distinct_keys"], 200);
    assert!(report["peak_rss_bytes"].as_u64().unwrap() > 1 << 20);

    // Parquet in, CSV out; and only the row ids.
    let out_csv = dir.path().join("out.csv");
    join(&pa, &b, &out_csv, &json, &common);
    assert_eq!(read_csv(&out_csv), (header.clone(), expected.clone()));
    let ids = dir.path().join("ids.csv");
    let mut rargs = vec!["receive", "--input", s(&a), "--output", s(&ids)];
    rargs.extend(["--output-columns", "row-id"]);
    rargs.extend(common);
    let mut sargs = vec!["send", "--input", s(&pb)];
    sargs.extend(common);
    run_pair(&rargs, &sargs);
    let want: Vec<Vec<String>> = ra
        .iter()
        .enumerate()
        .filter(|(_, r)| expected.contains(r))
        .map(|(i, _)| vec![i.to_string()])
        .collect();
    assert_eq!(read_csv(&ids), (vec!["row".to_owned()], want));
}

#[test]
fn composite_keys_match_on_every_field_and_must_agree() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    std::fs::write(
        &a,
        "id,first,last,dob\n1,Anna,Nowak,1990-01-02\n2,anna,nowak,1991-01-02\n3,Bo,Li,\n\
         4,AnnaN,owak,1990-01-02\n5, ANNA ,Nowak,1990-01-02\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        "last,dob,first\nnowak,1990-01-02,anna\nLi,,Bo\nowak,1990-01-02,Anna\n",
    )
    .unwrap();
    let out = dir.path().join("out.csv");
    let json = dir.path().join("r.json");
    let common = [
        "--column",
        "first,last,dob",
        "--normalize",
        "lower",
        "--protocol",
        "cm20",
    ];
    join(&a, &b, &out, &json, &common);
    let (_, rows) = read_csv(&out);
    let ids: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    // Row 2 differs in dob, row 3 has an empty field, row 4 splits the same letters differently.
    assert_eq!(ids, ["1", "5"]);

    // One party with a composite key, the other with one column: refused, naming the field.
    let (o, ok, listener_err) = listen_and_connect(
        &[
            "receive",
            "--input",
            s(&a),
            "--column",
            "first,last",
            "-o",
            s(&out),
        ],
        &["send", "--input", s(&b), "--column", "first"],
    );
    assert!(!o.status.success() && !ok);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("key_fields"), "{err}");
    assert!(listener_err.contains("key_fields"), "{listener_err}");
}
