//! Where the keys come from and what the receiver may test, as two `blindjoin` processes see
//! it: a CSV file read without its key column is refused before anything is read, a party
//! reading whole lines does not meet one reading a column, and a sender's line names what the
//! receiver can test where that is more than it announced.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_blindjoin"));
    c.arg("--threads").arg("1");
    c
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `listener` (listening on a loopback port) and `connector` (its subcommand first,
/// `--connect ADDR` added); returns both outputs, the listener's first.
fn pair(listener: &[&str], connector: &[&str]) -> (Output, Output) {
    let mut child = bin()
        .args(listener)
        .args(["--listen", "127.0.0.1:0", "--deadline", "60s"])
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
    let mut args = vec![connector[0], "--connect", &addr, "--deadline", "60s"];
    args.extend_from_slice(&connector[1..]);
    let out = bin().args(&args).output().unwrap();
    let status = child.wait().unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut err, &mut rest).unwrap();
    (
        Output {
            status,
            stdout: Vec::new(),
            stderr: rest,
        },
        out,
    )
}

fn one_line_error(out: &Output, needle: &str) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("blindjoin: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(err.lines().last(), Some(errors[0]), "{err}");
    assert!(errors[0].contains(needle), "`{needle}` missing from: {err}");
}

fn write_emails(path: &Path, keys: impl Iterator<Item = u32>) {
    let mut text = String::from("id,email\n");
    for (i, k) in keys.enumerate() {
        text.push_str(&format!("{i},user{k}@example.org\n"));
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_csv_file_without_its_key_column_is_refused_before_anything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    write_emails(&a, 0..10);
    let out = bin()
        .args(["receive", "--listen", "127.0.0.1:0", "--input", s(&a)])
        .output()
        .unwrap();
    one_line_error(
        &out,
        &format!(
            "{}: a CSV file needs its key column: give --column NAME (several for a composite \
             key); to read every whole line as a key, header included, give --format lines",
            a.display()
        ),
    );
}

#[test]
fn whole_lines_do_not_meet_a_column() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    write_emails(&a, 0..50);
    write_emails(&b, 25..75);
    let out = dir.path().join("m.csv");
    let (recv, send) = pair(
        &["receive", "-i", s(&a), "--format", "lines", "-o", s(&out)],
        &["send", "-i", s(&b), "--column", "email"],
    );
    for o in [&recv, &send] {
        one_line_error(o, "`keys`");
    }
    let err = String::from_utf8_lossy(&recv.stderr);
    assert!(
        err.contains("ours is whole records (lines or values), the peer's is columns"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn the_sender_names_what_a_dual_execution_receiver_can_test() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    write_emails(&a, 0..1000);
    write_emails(&b, 500..1700);
    let (recv, send) = pair(
        &["receive", "-i", s(&a), "-c", "email", "-p", "rr17_de", "-q"],
        &["send", "-i", s(&b), "-c", "email", "-p", "rr17_de", "-q"],
    );
    assert!(
        recv.status.success(),
        "{}",
        String::from_utf8_lossy(&recv.stderr)
    );
    assert!(
        send.status.success(),
        "{}",
        String::from_utf8_lossy(&send.stderr)
    );
    // m = ⌈1200/8⌉ = 150 bins of B_R slots for 1000 items.
    let slots = blindjoin_psi::hashing::max_bin_size(1000, 150, 40).unwrap() as u64;
    let err = String::from_utf8_lossy(&send.stderr);
    assert!(
        err.contains(&format!(
            "the receiver announced 1000 distinct keys, so it can test up to {} guessed keys \
             against ours (rr17_de); running the protocol",
            150 * slots
        )),
        "{err}"
    );
    // With a bound below that, the sender refuses the receiver in the handshake.
    let (recv, send) = pair(
        &["receive", "-i", s(&a), "-c", "email", "-p", "rr17_de", "-q"],
        &[
            "send",
            "-i",
            s(&b),
            "-c",
            "email",
            "-p",
            "rr17_de",
            "-q",
            "--max-peer-size",
            "1000",
        ],
    );
    one_line_error(
        &send,
        &format!(
            "a receiver that can test at most 1000 guessed keys (this one could test {} in a \
             rr17_de run)",
            150 * slots
        ),
    );
    one_line_error(&recv, "receiver set size");
}
