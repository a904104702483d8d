//! How fast the server-aided server's disk store intersects: two parties' N random sorted
//! ℓ-byte labels each (half of them shared) written through `DiskStore` writers, then one
//! `intersect`, timed.
//!
//! `cargo run --release -p blindjoin-psi --example disk_merge -- [N] [DIR] [--len=ℓ] [--cold]`
//!
//! N defaults to 10^8, ℓ to 10 (5 to 16; `kmrs_semi` gives two clients of 10^9 labels 13
//! bytes at λ = 40), DIR to `blindjoin-disk-merge` in the temporary directory (deleted
//! afterwards). With `--cold`, the label files are synced and dropped from the page cache
//! (`dd iflag=nocache count=0`) before the intersection, so that it reads from the disk.
//! Run under `/usr/bin/time -v` for the peak RSS.

use blindjoin_psi::protocols::server_aided::disk_store::DiskStore;
use blindjoin_psi::protocols::server_aided::store::{LabelWriter, Store};
use rand::RngCore;
use std::error::Error;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// Labels per write, as the server's frames carry them.
const BATCH: usize = 1 << 16;

/// A party's labels on their way to its writer, a batch at a time.
struct Batched {
    writer: Box<dyn LabelWriter>,
    len: usize,
    buf: Vec<u8>,
}

impl Batched {
    fn push(&mut self, label: u128) -> Result<(), Box<dyn Error>> {
        self.buf
            .extend_from_slice(&label.to_be_bytes()[16 - self.len..]);
        if self.buf.len() == BATCH * self.len {
            self.writer.write(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), Box<dyn Error>> {
        self.writer.write(&self.buf)?;
        self.writer.finish()?;
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cold = args.iter().any(|a| a == "--cold");
    let len: usize = match args.iter().find_map(|a| a.strip_prefix("--len=")) {
        Some(l) => l.parse()?,
        None => 10,
    };
    if !(5..=16).contains(&len) {
        return Err("--len: 5 to 16 bytes".into());
    }
    let mut plain = args.iter().filter(|a| !a.starts_with("--"));
    let n: u64 = match plain.next() {
        Some(s) => s.parse()?,
        None => 100_000_000,
    };
    let dir = plain.next().map_or_else(
        || std::env::temp_dir().join("blindjoin-disk-merge"),
        PathBuf::from,
    );
    let store = DiskStore::open(&dir)?;
    let run = "bench";
    println!(
        "{n} labels per party, {len} bytes each, 2 parties, half shared; store {}",
        store.describe()
    );

    // Shared, own to party 1, own to party 2: picked in proportion to what is left of each
    // quota, so that each party has exactly n labels. Gaps average 2^(8ℓ-1) / 1.5n.
    let t = Instant::now();
    let writer = |party| -> Result<Batched, Box<dyn Error>> {
        Ok(Batched {
            writer: store.writer(run, party, len, n)?,
            len,
            buf: Vec::with_capacity(BATCH * len),
        })
    };
    let (mut a, mut b) = (writer(1)?, writer(2)?);
    let mut quota = [n / 2, n - n / 2, n - n / 2];
    let gap = (1u128 << (8 * len - 1)) / (n as u128 * 3 / 2).max(1);
    let mut rng = blindjoin_testkit::rng(1);
    let mut x = 0u128;
    while quota.iter().any(|&q| q > 0) {
        x += 1 + u128::from(rng.next_u64()) % (2 * gap).max(1);
        let left: u64 = quota.iter().sum();
        let mut pick = rng.next_u64() % left;
        let mut which = 0;
        while pick >= quota[which] {
            pick -= quota[which];
            which += 1;
        }
        quota[which] -= 1;
        if which != 2 {
            a.push(x)?;
        }
        if which != 1 {
            b.push(x)?;
        }
    }
    a.finish()?;
    b.finish()?;
    let write = t.elapsed().as_secs_f64();
    let mut bytes = 0;
    let mut files = Vec::new();
    for e in std::fs::read_dir(store.runs_dir())? {
        let path = e?.path();
        if path.extension().is_some_and(|x| x == "labels") {
            bytes += std::fs::metadata(&path)?.len();
            files.push(path);
        }
    }
    println!(
        "written in {write:.2} s ({:.1} M labels/s with their generation); {} bytes on disk, {:.2} bytes per label",
        2.0 * n as f64 / write / 1e6,
        bytes,
        bytes as f64 / (2 * n) as f64
    );
    if cold {
        for f in &files {
            std::fs::File::open(f)?.sync_all()?;
            let status = Command::new("dd")
                .arg(format!("if={}", f.display()))
                .args(["iflag=nocache", "count=0", "status=none"])
                .status()?;
            if !status.success() {
                return Err("dd could not drop the file from the page cache".into());
            }
        }
    }

    let t = Instant::now();
    let cpu = cpu_seconds();
    let bits = store.intersect(run, len, &[n, n])?;
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    let matches: Vec<u64> = bits
        .iter()
        .map(|v| v.iter().map(|b| u64::from(b.count_ones())).sum())
        .collect();
    println!(
        "intersect ({}): {secs:.2} s ({cpu:.2} s CPU), {:.1} M labels/s ({:.1} M per party stream); matches {:?} (want {})",
        if cold { "from disk" } else { "page cache" },
        2.0 * n as f64 / secs / 1e6,
        n as f64 / secs / 1e6,
        matches,
        n / 2
    );
    store.remove(run);
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// This process's user and system CPU time so far (Linux `/proc/self/stat`, 100 ticks a
/// second); 0 where it cannot be read.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses: utime and stime are the
    // 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}
