//! `blindjoin`: private set intersection between two organisations' files.
//!
//! See `blindjoin --help`. Every command ends with a one-line error and a non-zero exit on bad
//! input, and writes its output files completely or not at all.

use blindjoin_cli::cli;
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
