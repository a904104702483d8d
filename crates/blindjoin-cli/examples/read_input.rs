//! Times reading, normalising and hashing an input file, as `send` and `receive` do before the
//! protocol: `cargo run --release -p blindjoin-cli --example read_input -- FILE COLUMN
//! NORMALIZE THREADS [REPS]`. Prints the median seconds and MB/s.

use blindjoin_cli::input::{InputSpec, read_input};
use blindjoin_cli::normalize::{Normalize, Normalizer};
use clap::ValueEnum;
use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, column, normalize, threads, rest @ ..] = args.as_slice() else {
        return Err("usage: read_input FILE COLUMN NORMALIZE THREADS [REPS]".into());
    };
    let reps: usize = rest.first().map_or(Ok(5), |r| r.parse())?;
    let kind = Normalize::from_str(normalize, true)?;
    let normalizer = Normalizer {
        kind,
        country_code: None,
    };
    let columns: Vec<String> = if column == "-" {
        Vec::new()
    } else {
        column.split(',').map(str::to_owned).collect()
    };
    let path = PathBuf::from(path);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.parse()?)
        .build()?;
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..reps {
        let t = Instant::now();
        let input = pool.install(|| {
            read_input(
                &InputSpec {
                    path: &path,
                    format: None,
                    columns: &columns,
                    normalizer: &normalizer,
                },
                &|_| {},
            )
        })?;
        times.push(t.elapsed().as_secs_f64());
        bytes = input.bytes;
        eprintln!(
            "{:.3} s: {} rows, {} distinct keys",
            t.elapsed().as_secs_f64(),
            input.keyed.rows(),
            input.keyed.items.len()
        );
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "median {median:.3} s, {:.0} MB/s ({} bytes, {threads} threads)",
        bytes as f64 / median / 1e6,
        bytes
    );
    Ok(())
}
