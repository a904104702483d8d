//! The fuzz targets' smoke test: every target on its committed corpus, on freshly generated
//! seeds (each of which must end as its name says) and on deterministic mutants of both, with
//! oversized allocations refused. A few seconds in all; `docs/FUZZING.md` has the campaigns.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_fuzz::alloc::CappedAlloc;
use blindjoin_fuzz::{TARGETS, mutate, seeds};
use std::path::Path;
use std::time::Duration;

#[global_allocator]
static ALLOC: CappedAlloc = CappedAlloc;

/// Mutants per target in the smoke run.
const MUTANTS: u64 = 300;

/// The slowest one input may be (a hang shows as far more).
const SLOWEST: Duration = Duration::from_secs(3);

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
    let all = seeds::generate();
    for t in TARGETS {
        assert!(
            all.iter().any(|s| s.target == t.name),
            "{}: no generated seed",
            t.name
        );
    }
    for s in &all {
        let t = blindjoin_fuzz::target(s.target).unwrap();
        let got = (t.run)(&s.data);
        if let Some(ok) = s.expect_ok() {
            assert_eq!(got.is_ok(), ok, "{}/{}: {got:?}", s.target, s.name);
        }
    }
}

#[test]
fn every_target_survives_its_corpus_and_mutants() {
    let generated = seeds::generate();
    for (i, t) in TARGETS.iter().enumerate() {
        let mut inputs = corpus(t.name);
        assert!(!inputs.is_empty(), "{}: empty corpus", t.name);
        inputs.extend(
            generated
                .iter()
                .filter(|s| s.target == t.name)
                .map(|s| s.data.clone()),
        );
        let r = mutate::run(t, &inputs, MUTANTS, 1000 + i as u64);
        assert!(
            r.slowest.0 < SLOWEST,
            "{}: an input took {:?}: {:02x?}",
            t.name,
            r.slowest.0,
            r.slowest.1
        );
        println!(
            "{}: {} inputs, {} ok, {} clean errors, slowest {:?}",
            t.name, r.inputs, r.ok, r.err, r.slowest.0
        );
    }
}
