//! `blindjoin`: private set intersection between two organisations' files.
//!
//! See `blindjoin --help`. Every command ends with a one-line error and a non-zero exit on bad
//! input, and writes its output files completely or not at all.
#![deny(missing_docs)]

mod bench;
mod bench_ot;
mod cli;
mod demo;
mod error;
mod input;
mod normalize;
mod output;
mod party;
mod progress;
mod report;
mod synth;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("blindjoin: error: {e}");
            ExitCode::FAILURE
        }
    }
}
