//! End to end, two `blindjoin` processes over loopback TCP: what a bucketed run keeps on disk
//! (its run directory and its temporary spill) is private, and an interrupted run resumes
//! without serving a bucket twice unless the sender allows it.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blindjoin"));
    c.arg("--threads").arg("1");
    c
}

/// Starts `cmd` with `args`, listening on an ephemeral loopback port; returns it and the
/// address.
fn spawn_listener_cmd(mut cmd: Command, args: &[&str]) -> (Child, String, BufReader<ChildStderr>) {
    let mut child = cmd
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .args(["--deadline", "60s", "--idle-timeout", "20s"])
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

fn spawn_listener(args: &[&str]) -> (Child, String, BufReader<ChildStderr>) {
    spawn_listener_cmd(bin(), args)
}

/// Waits for a listener; returns its exit code and the rest of its stderr.
fn finish(mut child: Child, mut err: BufReader<ChildStderr>) -> (Option<i32>, String) {
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    (status.code(), rest)
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

/// The one error line of a failed command's stderr (the last line; notes may come first).
fn one_error_line(stderr: &str) -> String {
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("blindjoin: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "expected one error line, got: {stderr}");
    assert_eq!(stderr.lines().last(), Some(errors[0]), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    errors[0].to_owned()
}

fn assert_one_line_error(out: &Output, needles: &[&str]) {
    assert!(!out.status.success());
    let line = one_error_line(&String::from_utf8_lossy(&out.stderr));
    for n in needles {
        assert!(line.contains(n), "`{n}` missing from: {line}");
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

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// Checks that `root` and every directory under it has mode 0700 and every file mode 0600;
/// returns the files' paths relative to `root`.
fn assert_private_tree(root: &Path) -> Vec<String> {
    assert_eq!(mode(root), 0o700, "{}", root.display());
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                assert_eq!(mode(&path), 0o700, "{}", path.display());
                stack.push(path);
            } else {
                assert!(meta.is_file(), "{}", path.display());
                assert_eq!(mode(&path), 0o600, "{}", path.display());
                let rel = path.strip_prefix(root).unwrap();
                files.push(rel.to_str().unwrap().to_owned());
            }
        }
    }
    files.sort();
    files
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions; the child has not been reaped.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({}, {sig})", child.id());
}

/// The entries of a directory, by name.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Polls `cond` every millisecond for up to 60 s; `alive` must hold meanwhile.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool, mut alive: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(alive(), "ended before {what}");
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no {what} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

const COMMON: [&str; 8] = [
    "--column",
    "email",
    "--normalize",
    "email",
    "--protocol",
    "ecdh",
    "--buckets",
    "32",
];

#[test]
fn a_bucketed_runs_spill_is_private_and_removed_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "6000", "5000", "1500", "41");
    let expected = expected_email_rows(&a, &b);
    let (rtmp, stmp) = (dir.path().join("r-tmp"), dir.path().join("s-tmp"));
    std::fs::create_dir(&rtmp).unwrap();
    std::fs::create_dir(&stmp).unwrap();
    let out = dir.path().join("out.csv");
    let mut receiver = bin();
    receiver.env("TMPDIR", &rtmp);
    let mut rargs = vec!["receive", "--input", s(&a), "--output", s(&out)];
    rargs.extend(COMMON);
    let (mut recv, addr, err) = spawn_listener_cmd(receiver, &rargs);
    let mut sargs = vec!["send", "--connect", &addr, "--input", s(&b)];
    sargs.extend(COMMON);
    let send = bin()
        .env("TMPDIR", &stmp)
        .args(&sargs)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Once the receiver's 32 bucket files exist, it is stopped while they are looked at.
    let spill = || -> Option<PathBuf> {
        let e = std::fs::read_dir(&rtmp).ok()?.next()?.ok()?;
        Some(e.path())
    };
    let mut alive = || recv.try_wait().unwrap().is_none();
    wait_until(
        "the receiver's spill",
        || spill().is_some_and(|d| std::fs::read_dir(d).is_ok_and(|e| e.count() == 32)),
        &mut alive,
    );
    signal(&recv, libc::SIGSTOP);
    let d = spill().unwrap();
    assert!(
        d.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("blindjoin-buckets-")
    );
    let files = assert_private_tree(&d);
    let want: Vec<String> = (0..32).map(|p| format!("bucket-{p:05}.bin")).collect();
    assert_eq!(files, want);
    signal(&recv, libc::SIGCONT);

    let sent = send.wait_with_output().unwrap();
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let (code, stderr) = finish(recv, err);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(read_csv(&out).1, expected);
    // Both spills are gone with their runs.
    assert_eq!(entries(&rtmp), Vec::<String>::new());
    assert_eq!(entries(&stmp), Vec::<String>::new());
}

/// Starts a resumable run (receiver listening, sender connecting) and kills the receiver once
/// it has recorded `after` buckets finished; the sender then fails.
fn interrupted_run(a: &Path, b: &Path, out: &Path, rdir: &Path, sdir: &Path, after: usize) {
    let mut rargs = vec!["receive", "--input", s(a), "--output", s(out)];
    rargs.extend(["--resume", s(rdir)]);
    rargs.extend(COMMON);
    let (mut recv, addr, _err) = spawn_listener(&rargs);
    let mut sargs = vec!["send", "--connect", &addr, "--input", s(b)];
    sargs.extend(["--resume", s(sdir)]);
    sargs.extend(COMMON);
    let send = bin()
        .args(&sargs)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut alive = || recv.try_wait().unwrap().is_none();
    wait_until(
        "the receiver's records",
        || finished_buckets(rdir).len() >= after,
        &mut alive,
    );
    recv.kill().unwrap();
    recv.wait().unwrap();
    let sent = send.wait_with_output().unwrap();
    assert!(!sent.status.success());
    assert!(!out.exists());
}

#[test]
fn run_directories_are_private_and_a_shared_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "6000", "5000", "1500", "43");
    let (rdir, sdir) = (dir.path().join("r-run"), dir.path().join("s-run"));
    let out = dir.path().join("out.csv");
    interrupted_run(&a, &b, &out, &rdir, &sdir, 4);
    for (side, d) in [("receiver", &rdir), ("sender", &sdir)] {
        let files = assert_private_tree(d);
        for f in [
            "run.json",
            "spill.json",
            "spill/bucket-00000.bin",
            "spill/bucket-00031.bin",
        ] {
            assert!(
                files.contains(&f.to_owned()),
                "{side}: {f} missing: {files:?}"
            );
        }
        assert!(
            files.iter().any(|f| f.starts_with("done/bucket-")),
            "{side}: {files:?}"
        );
    }

    // An existing directory that group or others may use is refused, before connecting, and
    // left as it was.
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o750)).unwrap();
    let started = Instant::now();
    let mut args = vec![
        "receive",
        "--connect",
        "127.0.0.1:9",
        "--deadline",
        "30s",
        "--input",
        s(&a),
        "--output",
        s(&out),
        "--resume",
        s(&shared),
    ];
    args.extend(COMMON);
    let refused = run(&args);
    let shown = format!(
        "{}: group or others have access (mode 0750)",
        shared.display()
    );
    assert_one_line_error(&refused, &[&shown, "chmod 700"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(mode(&shared), 0o750);
    assert!(!out.exists());
    // A new directory is made private, its missing parents too.
    let nested = dir.path().join("p/q/run");
    let mut args = vec![
        "receive",
        "--connect",
        "127.0.0.1:9",
        "--deadline",
        "1s",
        "--input",
        s(&a),
        "--resume",
        s(&nested),
    ];
    args.extend(COMMON);
    assert!(!run(&args).status.success());
    assert_eq!(mode(&dir.path().join("p")), 0o700);
    assert_eq!(mode(&dir.path().join("p/q")), 0o700);
    assert_eq!(mode(&nested), 0o700);
}

/// The bucket numbers of `bucket-NNNNN.bin` names, ascending.
fn bucket_numbers(names: &HashSet<String>) -> Vec<usize> {
    let mut v: Vec<usize> = names
        .iter()
        .map(|n| {
            n.strip_prefix("bucket-")
                .and_then(|n| n.strip_suffix(".bin"))
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    v.sort_unstable();
    v
}

/// Each record of `dir` with its inode and bytes (a record written again is a new inode).
fn snapshot(dir: &Path) -> Vec<(String, u64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    entries(dir)
        .into_iter()
        .map(|n| {
            let path = dir.join(&n);
            let ino = std::fs::metadata(&path).unwrap().ino();
            (n, ino, std::fs::read(&path).unwrap())
        })
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode(from))).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let path = e.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_resume_serves_no_bucket_again_unless_the_sender_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "6000", "5000", "1500", "47");
    let expected = expected_email_rows(&a, &b);
    let (rdir, sdir) = (dir.path().join("r-run"), dir.path().join("s-run"));
    let out = dir.path().join("out.csv");
    let (rjson, sjson) = (dir.path().join("r.json"), dir.path().join("s.json"));
    interrupted_run(&a, &b, &out, &rdir, &sdir, 6);
    let served = bucket_numbers(&finished_buckets(&sdir));
    assert!(served.len() >= 6 && served.len() <= 20, "{served:?}");
    let shown = served
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let named = format!("buckets {shown}");

    // The receiver's records are removed: without --allow-rerun the sender refuses, the
    // receiver fails with its reason, and no bucket runs (the sender records a bucket before
    // serving it, so its records would change).
    for f in entries(&rdir.join("done")) {
        std::fs::remove_file(rdir.join("done").join(f)).unwrap();
    }
    let before = snapshot(&sdir.join("done"));
    let mut rargs = vec!["receive", "--input", s(&a), "--output", s(&out)];
    rargs.extend(["--json", s(&rjson), "--resume", s(&rdir)]);
    rargs.extend(COMMON);
    let (recv, addr, err) = spawn_listener(&rargs);
    let mut sargs = vec!["send", "--connect", &addr, "--input", s(&b)];
    sargs.extend(["--json", s(&sjson), "--resume", s(&sdir)]);
    sargs.extend(COMMON);
    let refused = run(&sargs);
    assert_one_line_error(
        &refused,
        &[
            &format!("the receiver has no record of {named}, which this side served"),
            "would let the receiver query them twice; pass --allow-rerun",
        ],
    );
    let (code, stderr) = finish(recv, err);
    assert_eq!(code, Some(1), "{stderr}");
    let line = one_error_line(&stderr);
    assert!(
        line.contains(&format!("the sender refuses to serve {named} again")),
        "{line}"
    );
    assert!(line.contains("the sender may pass --allow-rerun"), "{line}");
    assert_eq!(snapshot(&sdir.join("done")), before);
    assert_eq!(entries(&rdir.join("done")), Vec::<String>::new());
    assert!(!out.exists() && !rjson.exists() && !sjson.exists());

    // A sender's run directory without its records is refused, before connecting.
    let lost = dir.path().join("s-lost");
    copy_tree(&sdir, &lost);
    std::fs::remove_dir_all(lost.join("done")).unwrap();
    let started = Instant::now();
    let mut args = vec!["send", "--connect", "127.0.0.1:9", "--deadline", "30s"];
    args.extend(["--input", s(&b), "--resume", s(&lost), "--allow-rerun"]);
    args.extend(COMMON);
    let shown_lost = format!(
        "{}: missing, so which buckets this side served is unknown",
        lost.join("done").display()
    );
    assert_one_line_error(&run(&args), &[&shown_lost, "start a new run"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(lost.join("spill.json").exists());

    // The receiver's `done/` itself is gone (it is made again), and the sender allows the
    // buckets to be served again: both name them, and the rows are exact.
    std::fs::remove_dir(rdir.join("done")).unwrap();
    let (recv, addr, err) = spawn_listener(&rargs);
    let mut sargs = vec!["send", "--connect", &addr, "--input", s(&b)];
    sargs.extend(["--json", s(&sjson), "--resume", s(&sdir), "--allow-rerun"]);
    sargs.extend(COMMON);
    let sent = run(&sargs);
    let sent_err = String::from_utf8_lossy(&sent.stderr).into_owned();
    assert!(sent.status.success(), "{sent_err}");
    let (code, stderr) = finish(recv, err);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(read_csv(&out).1, expected);
    let sender_line = format!(
        "serving {named} again (--allow-rerun): this side served them before, and the \
         receiver has no record of them"
    );
    assert_eq!(
        sent_err.lines().filter(|l| *l == sender_line).count(),
        1,
        "{sent_err}"
    );
    let receiver_line = format!(
        "the sender serves {named} again (its --allow-rerun): this side has no record of them"
    );
    assert_eq!(
        stderr.lines().filter(|l| *l == receiver_line).count(),
        1,
        "{stderr}"
    );
    let want: Vec<serde_json::Value> = served.iter().map(|&p| p.into()).collect();
    for report in [json(&rjson), json(&sjson)] {
        assert_eq!(
            report["buckets"]["rerun"],
            serde_json::Value::Array(want.clone())
        );
        assert_eq!(report["buckets"]["kept"], 0);
    }
    assert_eq!(json(&rjson)["intersection"]["distinct_keys"], 1500);
    assert!(!rdir.exists() && !sdir.exists());
}

/// Flips one bit of byte `at` of `path` (from the end if negative); returns the old bytes.
fn flip(path: &Path, at: isize) -> Vec<u8> {
    let old = std::fs::read(path).unwrap();
    let mut bytes = old.clone();
    let i = if at < 0 {
        (bytes.len() as isize + at) as usize
    } else {
        at as usize
    };
    bytes[i] ^= 1;
    std::fs::write(path, &bytes).unwrap();
    old
}

#[test]
fn a_record_changed_on_disk_is_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "6000", "5000", "1500", "53");
    let expected = expected_email_rows(&a, &b);
    let (rdir, sdir) = (dir.path().join("r-run"), dir.path().join("s-run"));
    let out = dir.path().join("out.csv");
    interrupted_run(&a, &b, &out, &rdir, &sdir, 6);
    // Each side alone, with nobody listening: a refused record stops it before connecting.
    let alone = |role: &str, input: &Path, run_dir: &Path| -> Output {
        let mut args = vec![role, "--connect", "127.0.0.1:9", "--deadline", "30s"];
        args.extend(["--input", s(input), "--resume", s(run_dir)]);
        if role == "receive" {
            args.extend(["--output", s(&out)]);
        }
        args.extend(COMMON);
        let started = Instant::now();
        let o = run(&args);
        assert!(started.elapsed() < Duration::from_secs(10));
        o
    };

    // One byte of a receiver's record.
    let rec = rdir.join("done/bucket-00002.bin");
    let old = flip(&rec, 50);
    assert_one_line_error(
        &alone("receive", &a, &rdir),
        &[
            &format!("{}: not the record this run wrote", rec.display()),
            "remove it to run bucket 2 again",
            &format!(
                "or remove the run directory {} to start a new run",
                rdir.display()
            ),
        ],
    );
    assert!(!out.exists());
    std::fs::write(&rec, &old).unwrap();
    // Another bucket's record under its name.
    std::fs::copy(rdir.join("done/bucket-00003.bin"), &rec).unwrap();
    assert_one_line_error(
        &alone("receive", &a, &rdir),
        &[&format!("{}: not the record this run wrote", rec.display())],
    );
    std::fs::write(&rec, &old).unwrap();
    // One byte of a sender's record: it stays served.
    let served = sdir.join("done/bucket-00001.bin");
    let old_served = flip(&served, 3);
    assert_one_line_error(
        &alone("send", &b, &sdir),
        &[
            &format!("{}: not the record this run wrote", served.display()),
            "this side served bucket 1",
            &format!(
                "remove the run directory {} to start a new run",
                sdir.display()
            ),
        ],
    );
    std::fs::write(&served, &old_served).unwrap();
    // One byte of a manifest, on either side.
    for (role, input, run_dir, name) in [
        ("receive", &a, &rdir, "run.json"),
        ("send", &b, &sdir, "spill.json"),
    ] {
        let manifest = run_dir.join(name);
        let old = flip(&manifest, 20);
        assert_one_line_error(
            &alone(role, input, run_dir),
            &[&format!(
                "{}: not the manifest this run wrote (its checksum differs)",
                manifest.display()
            )],
        );
        std::fs::write(&manifest, &old).unwrap();
    }
    assert!(!out.exists());

    // One byte of a bucket file of the receiver's spill: the bucket is refused when it is
    // loaded, and both sides fail with nothing written.
    let bucket = rdir.join("spill/bucket-00031.bin");
    let old_bucket = flip(&bucket, -1);
    let mut rargs = vec!["receive", "--input", s(&a), "--output", s(&out)];
    rargs.extend(["--resume", s(&rdir)]);
    rargs.extend(COMMON);
    let mut sargs = vec![
        "send",
        "--input",
        s(&b),
        "--resume",
        s(&sdir),
        "--allow-rerun",
    ];
    sargs.extend(COMMON);
    let (recv, addr, err) = spawn_listener(&rargs);
    let mut connect = vec![sargs[0], "--connect", &addr];
    connect.extend_from_slice(&sargs[1..]);
    assert!(!run(&connect).status.success());
    let (code, stderr) = finish(recv, err);
    assert_eq!(code, Some(1));
    let line = one_error_line(&stderr);
    assert!(
        line.contains(&format!(
            "{}: not the bucket file this run wrote (its checksum differs)",
            bucket.display()
        )),
        "{line}"
    );
    assert!(!out.exists());

    // Put back, the run resumes and gives the exact rows.
    std::fs::write(&bucket, &old_bucket).unwrap();
    let (recv, addr, err) = spawn_listener(&rargs);
    let mut connect = vec![sargs[0], "--connect", &addr];
    connect.extend_from_slice(&sargs[1..]);
    let sent = run(&connect);
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let (code, stderr) = finish(recv, err);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(read_csv(&out).1, expected);
}

/// A party's command with its temporary directory set to `tmp`.
fn with_tmpdir(tmp: &Path) -> Command {
    let mut c = bin();
    c.env("TMPDIR", tmp);
    c
}

#[test]
fn a_signal_while_waiting_for_the_peer_ends_the_run_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "20", "20", "5", "59");
    let (tmp, out_dir) = (dir.path().join("tmp"), dir.path().join("out"));
    std::fs::create_dir(&tmp).unwrap();
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("out.csv");

    // SIGINT on a listener (bucketed: its spill would go to `tmp`).
    let mut args = vec!["receive", "--input", s(&a), "--output", s(&out)];
    args.extend(COMMON);
    let (recv, _addr, err) = spawn_listener_cmd(with_tmpdir(&tmp), &args);
    let started = Instant::now();
    signal(&recv, libc::SIGINT);
    let (code, stderr) = finish(recv, err);
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(
        one_error_line(&stderr),
        "blindjoin: error: cancelled (SIGINT)"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // SIGTERM on a connector that nobody answers yet.
    let mut send = with_tmpdir(&tmp)
        .args(["send", "--connect", "127.0.0.1:9", "--deadline", "60s"])
        .args(["--input", s(&b)])
        .args(COMMON)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(send.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("nobody accepts connections at 127.0.0.1:9"),
        "{line}"
    );
    let started = Instant::now();
    signal(&send, libc::SIGTERM);
    let (code, stderr) = finish(send, err);
    assert_eq!(code, Some(143), "{stderr}");
    assert_eq!(
        one_error_line(&stderr),
        "blindjoin: error: cancelled (SIGTERM)"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    assert_eq!(entries(&tmp), Vec::<String>::new());
    assert_eq!(entries(&out_dir), Vec::<String>::new());
}

#[test]
fn sigterm_during_the_buckets_removes_the_spill_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = generate(dir.path(), "6000", "5000", "1500", "61");
    let (rtmp, stmp) = (dir.path().join("r-tmp"), dir.path().join("s-tmp"));
    let out_dir = dir.path().join("out");
    for d in [&rtmp, &stmp, &out_dir] {
        std::fs::create_dir(d).unwrap();
    }
    let out = out_dir.join("out.csv");
    // Over two connections: each is shut down.
    let mut rargs = vec!["receive", "--input", s(&a), "--output", s(&out)];
    rargs.extend(COMMON);
    rargs.extend(["--parallel", "2"]);
    let (mut recv, addr, err) = spawn_listener_cmd(with_tmpdir(&rtmp), &rargs);
    let send = with_tmpdir(&stmp)
        .args(["send", "--connect", &addr, "--input", s(&b)])
        .args(COMMON)
        .args(["--parallel", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let spilled = |tmp: &Path| {
        std::fs::read_dir(tmp)
            .unwrap()
            .next()
            .is_some_and(|e| std::fs::read_dir(e.unwrap().path()).is_ok_and(|f| f.count() == 32))
    };
    let mut alive = || recv.try_wait().unwrap().is_none();
    wait_until(
        "both spills",
        || spilled(&rtmp) && spilled(&stmp),
        &mut alive,
    );
    signal(&recv, libc::SIGTERM);
    let (code, stderr) = finish(recv, err);
    assert_eq!(code, Some(143), "{stderr}");
    assert_eq!(
        one_error_line(&stderr),
        "blindjoin: error: cancelled (SIGTERM)"
    );
    let sent = send.wait_with_output().unwrap();
    assert_eq!(sent.status.code(), Some(1));
    one_error_line(&String::from_utf8_lossy(&sent.stderr));
    assert_eq!(entries(&rtmp), Vec::<String>::new());
    assert_eq!(entries(&stmp), Vec::<String>::new());
    assert_eq!(entries(&out_dir), Vec::<String>::new());
}

#[test]
fn sigint_while_the_receiver_writes_its_output_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    // 10^6 rows, all matched: the output takes a while to write.
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let pad = "x".repeat(60);
    let n = 1_000_000;
    let mut text = String::from("id,key,pad\n");
    let mut keys = String::from("key\n");
    for i in 0..n {
        text.push_str(&format!("{i},k{i},{pad}\n"));
        keys.push_str(&format!("k{i}\n"));
    }
    std::fs::write(&a, text).unwrap();
    std::fs::write(&b, keys).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("out.csv");
    let common = ["--protocol", "naive", "--insecure"];
    let mut rargs = vec!["receive", "--input", s(&a), "--column", "key"];
    rargs.extend(["--output", s(&out)]);
    rargs.extend(common);
    let (mut recv, addr, err) = spawn_listener(&rargs);
    let send = bin()
        .args([
            "send",
            "--connect",
            &addr,
            "--input",
            s(&b),
            "--column",
            "key",
        ])
        .args(common)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // The output's temporary file has rows in it: the receiver is stopped there, and it is
    // still there (the output is not in place) when the signal is sent.
    let writing = || {
        entries(&out_dir).into_iter().find(|n| {
            n.starts_with(".out.csv.")
                && n.ends_with(".tmp")
                && std::fs::metadata(out_dir.join(n)).is_ok_and(|m| m.len() > 0)
        })
    };
    let t = Instant::now();
    loop {
        assert!(
            recv.try_wait().unwrap().is_none(),
            "the receiver ended first"
        );
        assert!(!out.exists(), "the output was complete before the signal");
        assert!(t.elapsed() < Duration::from_secs(120), "no output written");
        if writing().is_some() {
            signal(&recv, libc::SIGSTOP);
            if writing().is_some() {
                break;
            }
            signal(&recv, libc::SIGCONT);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    signal(&recv, libc::SIGINT);
    signal(&recv, libc::SIGCONT);
    let (code, stderr) = finish(recv, err);
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(
        one_error_line(&stderr),
        "blindjoin: error: cancelled (SIGINT)"
    );
    let sent = send.wait_with_output().unwrap();
    assert_eq!(sent.status.code(), Some(1));
    assert_eq!(entries(&out_dir), Vec::<String>::new());
}

#[test]
fn the_output_and_the_report_are_compared_as_files() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = generate(dir.path(), "20", "20", "5", "67");
    let input = std::fs::read(&a).unwrap();
    std::fs::create_dir_all(dir.path().join("out/sub")).unwrap();
    let in_dir = |p: &str| dir.path().join(p);
    // Nobody listens at 127.0.0.1:9: each case must fail on its own, long before the deadline.
    let attempt = |output: &Path, json: Option<&Path>| -> Output {
        let mut args = vec!["receive", "--connect", "127.0.0.1:9", "--deadline", "30s"];
        args.extend(["--input", s(&a), "--column", "email", "--output", s(output)]);
        if let Some(j) = json {
            args.extend(["--json", s(j)]);
        }
        bin().current_dir(dir.path()).args(&args).output().unwrap()
    };
    let started = Instant::now();
    for (output, json) in [
        ("out/out.csv", "./out/out.csv"),
        ("out/out.csv", "out/sub/../out.csv"),
    ] {
        assert_one_line_error(
            &attempt(Path::new(output), Some(Path::new(json))),
            &[&format!("{json}: given as both --output and --json")],
        );
    }
    assert_eq!(entries(&in_dir("out")), vec!["sub".to_owned()]);
    // The input under another spelling, or through a link, as the output or the report.
    std::os::unix::fs::symlink(&a, in_dir("link.csv")).unwrap();
    for (output, json) in [
        ("./a.csv", None),
        ("out/../a.csv", None),
        ("link.csv", None),
        ("out/out.csv", Some("out/../a.csv")),
    ] {
        let named = json.unwrap_or(output);
        assert_one_line_error(
            &attempt(Path::new(output), json.map(Path::new)),
            &[&format!("{named}: is also an input of this run")],
        );
    }
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(entries(&in_dir("out")), vec!["sub".to_owned()]);
    assert_eq!(std::fs::read(&a).unwrap(), input);
}
