//! `blindjoin`: private set intersection between two organisations' files.
//!
//! See `blindjoin --help`. Every command ends with a one-line error and a non-zero exit on bad
//! input, and writes its output files completely or not at all. `send`, `receive` and `aided` cancelled
//! by SIGINT or SIGTERM end with one line and 128 + the signal's number
//! ([`blindjoin_cli::signals`]).

use blindjoin_cli::{cli, signals};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        // Whatever error the cancelled run ended with, the signal is its cause.
        Err(e) => match signals::caught() {
            Some(sig) => {
                eprintln!("blindjoin: error: cancelled ({})", signals::name(sig));
                ExitCode::from(signals::exit_code(sig))
            }
            None => {
                eprintln!("blindjoin: error: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
