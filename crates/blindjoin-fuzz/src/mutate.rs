//! A deterministic mutational loop: the smoke test's driver, and a fuzzer of its own where
//! AFL++ is not available (`examples/fuzz.rs`).
//!
//! Each mutant is a corpus input with one to four edits: a flipped bit, a byte set to a random
//! or an interesting value (0, 1, 0x7f, 0x80, 0xff), a little-endian length (2 or 4 bytes) set
//! to an interesting value, bytes inserted, deleted, duplicated or overwritten with a piece of
//! another input, or the input cut short. The RNG is a seeded xorshift, so a run is
//! reproducible from its seed.

use crate::{Outcome, Target};
use std::time::{Duration, Instant};

/// A seeded mutator.
#[derive(Clone, Debug)]
pub struct Mutator {
    state: u64,
}

const INTERESTING: [u8; 5] = [0, 1, 0x7f, 0x80, 0xff];
const INTERESTING_LENS: [u32; 8] = [0, 1, 16, 31, 32, 33, 0xffff, u32::MAX];

impl Mutator {
    /// A mutator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Mutator {
            state: seed ^ 0x9e37_79b9_7f4a_7c15 | 1,
        }
    }

    /// The next pseudo-random value (xorshift64*).
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value below `n` (0 if `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// `input` with one to four edits; `others` are inputs to splice from.
    pub fn mutate(&mut self, input: &[u8], others: &[&[u8]]) -> Vec<u8> {
        let mut d = input.to_vec();
        for _ in 0..1 + self.below(4) {
            self.edit(&mut d, others);
        }
        d
    }

    fn edit(&mut self, d: &mut Vec<u8>, others: &[&[u8]]) {
        let len = d.len();
        match self.below(9) {
            0 if len > 0 => {
                let i = self.below(len);
                d[i] ^= 1 << self.below(8);
            }
            1 if len > 0 => {
                let i = self.below(len);
                d[i] = if self.below(2) == 0 {
                    INTERESTING[self.below(INTERESTING.len())]
                } else {
                    self.next_u64() as u8
                };
            }
            2 if len >= 4 => {
                let i = self.below(len - 3);
                let v = INTERESTING_LENS[self.below(INTERESTING_LENS.len())];
                let w = if self.below(2) == 0 { 2 } else { 4 };
                d[i..i + w].copy_from_slice(&v.to_le_bytes()[..w]);
            }
            3 => {
                let i = self.below(len + 1);
                let n = 1 + self.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| self.next_u64() as u8).collect();
                d.splice(i..i, bytes);
            }
            4 if len > 0 => {
                let i = self.below(len);
                let n = 1 + self.below((len - i).min(64));
                d.drain(i..i + n);
            }
            5 if len > 0 => {
                let i = self.below(len);
                let n = 1 + self.below((len - i).min(64));
                let piece = d[i..i + n].to_vec();
                let at = self.below(len + 1);
                d.splice(at..at, piece);
            }
            6 if !others.is_empty() => {
                let o = others[self.below(others.len())];
                if !o.is_empty() {
                    let i = self.below(o.len());
                    let n = 1 + self.below((o.len() - i).min(256));
                    let at = self.below(len + 1);
                    let end = (at + n).min(len);
                    d.splice(at..end, o[i..i + n].iter().copied());
                }
            }
            7 if len > 1 => d.truncate(self.below(len)),
            _ => {
                // Few bytes or an edit that did not apply: a random byte at a random place.
                let i = self.below(len + 1);
                d.insert(i, self.next_u64() as u8);
            }
        }
    }
}

/// What one run of [`run`] saw.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Inputs run.
    pub inputs: u64,
    /// Inputs on which the target returned `Ok`.
    pub ok: u64,
    /// Inputs on which the target returned a clean error.
    pub err: u64,
    /// The longest time one input took, and that input.
    pub slowest: (Duration, Vec<u8>),
}

impl Report {
    fn add(&mut self, input: &[u8], outcome: &Outcome, took: Duration) {
        self.inputs += 1;
        match outcome {
            Ok(()) => self.ok += 1,
            Err(_) => self.err += 1,
        }
        if took > self.slowest.0 {
            self.slowest = (took, input.to_vec());
        }
    }
}

/// Runs `target` on every corpus input and then on `mutants` mutants of them (picked in turn,
/// each mutated by a [`Mutator`] seeded with `seed`). A panic of the target propagates: it is
/// a finding, and the caller (a test, the fuzz example) reports it.
pub fn run(target: &Target, corpus: &[Vec<u8>], mutants: u64, seed: u64) -> Report {
    let mut report = Report::default();
    for input in corpus {
        let start = Instant::now();
        let outcome = (target.run)(input);
        report.add(input, &outcome, start.elapsed());
    }
    run_mutants(target, corpus, mutants, seed, &mut report);
    report
}

/// [`run`] without the corpus inputs themselves: only the `mutants` mutants of them, added to
/// `report` (for a caller that ran the corpus already).
pub fn run_mutants(
    target: &Target,
    corpus: &[Vec<u8>],
    mutants: u64,
    seed: u64,
    report: &mut Report,
) {
    let mut m = Mutator::new(seed);
    let others: Vec<&[u8]> = corpus.iter().map(Vec::as_slice).collect();
    for k in 0..mutants {
        let base = corpus
            .get((k % corpus.len().max(1) as u64) as usize)
            .map_or(&[][..], Vec::as_slice);
        let input = m.mutate(base, &others);
        let start = Instant::now();
        let outcome = (target.run)(&input);
        report.add(&input, &outcome, start.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_are_reproducible_and_differ() {
        let input = b"\x05\x00hello\x03\x00abc".to_vec();
        let a: Vec<Vec<u8>> = {
            let mut m = Mutator::new(7);
            (0..50).map(|_| m.mutate(&input, &[b"xyz"])).collect()
        };
        let b: Vec<Vec<u8>> = {
            let mut m = Mutator::new(7);
            (0..50).map(|_| m.mutate(&input, &[b"xyz"])).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().filter(|x| **x != input).count() > 40);
        // An empty input and no other inputs: every edit still applies to something.
        let mut m = Mutator::new(1);
        for _ in 0..200 {
            m.mutate(b"", &[]);
        }
    }
}
