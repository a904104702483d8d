//! The mutational loop without AFL++: `cargo run --profile fuzz -p blindjoin-fuzz --example
//! fuzz -- TARGET [INPUTS [SEED]]` runs TARGET on its corpus and then on mutants of it
//! ([`blindjoin_fuzz::mutate`]) until INPUTS inputs (default 100000) have run, and prints what
//! it saw. A panic ends the run with the input that caused it written to `crash-TARGET`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_fuzz::alloc::CappedAlloc;
use blindjoin_fuzz::mutate::Mutator;
use std::path::Path;
use std::time::Instant;

#[global_allocator]
static ALLOC: CappedAlloc = CappedAlloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("", String::as_str);
    let Some(target) = blindjoin_fuzz::target(name) else {
        let names: Vec<&str> = blindjoin_fuzz::TARGETS.iter().map(|t| t.name).collect();
        eprintln!(
            "usage: fuzz TARGET [INPUTS [SEED]], TARGET one of: {}",
            names.join(" ")
        );
        std::process::exit(2);
    };
    let inputs: u64 = args.get(2).map_or(100_000, |s| s.parse().unwrap());
    let seed: u64 = args.get(3).map_or(1, |s| s.parse().unwrap());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let mut corpus: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    corpus.sort();
    let others: Vec<Vec<u8>> = corpus.clone();
    let others: Vec<&[u8]> = others.iter().map(Vec::as_slice).collect();
    let mut m = Mutator::new(seed);
    let (mut ok, mut err, mut slowest) = (0u64, 0u64, (0f64, Vec::new()));
    let start = Instant::now();
    for k in 0..inputs {
        let input = match corpus.get(k as usize) {
            Some(c) => c.clone(),
            None => {
                let i = m.below(corpus.len());
                m.mutate(&corpus[i], &others)
            }
        };
        let t = Instant::now();
        let outcome = std::panic::catch_unwind(|| (target.run)(&input));
        let took = t.elapsed().as_secs_f64();
        match outcome {
            Ok(Ok(())) => ok += 1,
            Ok(Err(_)) => err += 1,
            Err(_) => {
                std::fs::write(format!("crash-{name}"), &input).unwrap();
                eprintln!("{name}: panic on input {k}, written to crash-{name}");
                std::process::exit(1);
            }
        }
        if took > slowest.0 {
            slowest = (took, input);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{name}: {inputs} inputs in {secs:.0} s ({:.0}/s), {ok} ok, {err} clean errors, \
         slowest {:.1} ms, 0 panics",
        inputs as f64 / secs,
        slowest.0 * 1e3
    );
}
