//! The fuzz targets' smoke test: every target on freshly generated seeds (each of which must
//! end as its name says), on its committed corpus (each file that is not a generated seed) and
//! on deterministic mutants of both, with oversized allocations refused. A few seconds in all;
//! `docs/FUZZING.md` has the campaigns.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_fuzz::alloc::CappedAlloc;
use blindjoin_fuzz::seeds::Seed;
use blindjoin_fuzz::{TARGETS, mutate, seeds};
use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: CappedAlloc = CappedAlloc;

/// Mutants per target in the smoke run.
const MUTANTS: u64 = 300;

/// Mutants of the targets whose inputs cost milliseconds each (public-key base OTs, the
/// server-aided runs with their threads and the server's run timeout, a directory per input):
/// their campaigns are AFL's.
const FEW_MUTANTS: u64 = 40;

/// The targets of [`FEW_MUTANTS`].
const SLOW: [&str; 7] = [
    "cm20_mal_endemic",
    "rr17_de_endemic",
    "rr17_ec_endemic",
    "aided_server",
    "aided_client",
    "aided_key",
    "rundir",
];

/// Mutants of `rr17a`'s targets, whose sender seeds run the cut-and-choose over thousands of
/// OTs (tens to hundreds of milliseconds each).
const RR17A_MUTANTS: u64 = 10;

/// The mutants of target `name`.
fn mutants(name: &str) -> u64 {
    if name.starts_with("rr17a") {
        RR17A_MUTANTS
    } else if SLOW.contains(&name) {
        FEW_MUTANTS
    } else {
        MUTANTS
    }
}

/// The slowest one input may be (a hang shows as far more).
const SLOWEST: Duration = Duration::from_secs(3);

/// The generated seeds, generated once for both tests.
fn generated() -> &'static [Seed] {
    static SEEDS: OnceLock<Vec<Seed>> = OnceLock::new();
    SEEDS.get_or_init(seeds::generate)
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

#[test]
fn generated_seeds_end_as_named() {
    let all = generated();
    for t in TARGETS {
        assert!(
            all.iter().any(|s| s.target == t.name),
            "{}: no generated seed",
            t.name
        );
    }
    // Every seed that does not end as named, all listed at once.
    let mut wrong = Vec::new();
    for s in all {
        let t = blindjoin_fuzz::target(s.target).unwrap();
        let got = (t.run)(&s.data);
        if s.expect_ok().is_some_and(|ok| got.is_ok() != ok) {
            wrong.push(format!("{}/{}: {got:?}", s.target, s.name));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_target_survives_its_corpus_and_mutants() {
    for (i, t) in TARGETS.iter().enumerate() {
        let committed = corpus(t.name);
        assert!(!committed.is_empty(), "{}: empty corpus", t.name);
        let generated: Vec<Vec<u8>> = generated()
            .iter()
            .filter(|s| s.target == t.name)
            .map(|s| s.data.clone())
            .collect();
        // The generated seeds run in `generated_seeds_end_as_named`: here the committed inputs
        // that are not among them (a stale corpus), and the mutants of both.
        let fresh: HashSet<&Vec<u8>> = generated.iter().collect();
        let stale: Vec<Vec<u8>> = committed
            .iter()
            .filter(|c| !fresh.contains(c))
            .cloned()
            .collect();
        let mut inputs = committed.clone();
        inputs.extend(generated.iter().filter(|g| !committed.contains(g)).cloned());
        let start = Instant::now();
        let mut r = mutate::run(t, &stale, 0, 0);
        mutate::run_mutants(t, &inputs, mutants(t.name), 1000 + i as u64, &mut r);
        assert!(
            r.slowest.0 < SLOWEST,
            "{}: an input took {:?}: {:02x?}",
            t.name,
            r.slowest.0,
            r.slowest.1
        );
        println!(
            "{}: {} inputs in {:?}, {} ok, {} clean errors, slowest {:?}",
            t.name,
            r.inputs,
            start.elapsed(),
            r.ok,
            r.err,
            r.slowest.0
        );
    }
}
