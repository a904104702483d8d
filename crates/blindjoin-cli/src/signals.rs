//! `send`, `receive` and `aided` end cleanly on SIGINT (Ctrl-C) and SIGTERM.
//!
//! [`install`] makes the first of these signals set the process's cancel flag ([`flag`]) and
//! remember which signal it was, instead of killing the process at once. The run observes the
//! flag: it is the run's `LinkConfig::cancel`, so a connection attempt stops and the run's
//! connections are shut down (blocked reads and writes end with an error); the spill of a
//! bucketed run and the writer of the matched rows check it ([`check`]) between pieces, and
//! the receiver checks it again before it puts its output in place. The run then ends through
//! its ordinary error path, so every temporary file is removed as on any failure (the spill's
//! directory, the output's temporary file beside the output), and `main` prints one line,
//! `blindjoin: error: cancelled (SIGINT)`, and exits with 128 + the signal's number (130 for
//! SIGINT, 143 for SIGTERM), as a shell reports a process the signal ended.
//!
//! A second signal ends the process at once, with the same code, for a run that does not stop
//! soon enough (a long computation between two messages); its temporary files then stay, as
//! after SIGKILL.

use crate::error::{CliError, CliResult};
use signal_hook::consts::signal::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

/// Set by the first SIGINT or SIGTERM once [`install`] ran.
static FLAG: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The number of the last signal caught (0: none).
static CAUGHT: LazyLock<Arc<AtomicUsize>> = LazyLock::new(|| Arc::new(AtomicUsize::new(0)));

/// Whether the handlers are installed (and the error, if that failed).
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Installs the handlers of SIGINT and SIGTERM (once per process; see the module doc).
pub fn install() -> CliResult<()> {
    INSTALLED
        .get_or_init(|| {
            for sig in [SIGINT, SIGTERM] {
                // The exit on a second signal goes first: on the first, the flag is not set yet.
                signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, FLAG.clone())
                    .and_then(|_| {
                        signal_hook::flag::register_usize(sig, CAUGHT.clone(), sig as usize)
                    })
                    .and_then(|_| signal_hook::flag::register(sig, FLAG.clone()))
                    .map_err(|e| format!("cannot handle {}: {e}", name(sig)))?;
            }
            Ok(())
        })
        .clone()
        .map_err(CliError::Usage)
}

/// The process's cancel flag (set by a caught signal).
pub fn flag() -> Arc<AtomicBool> {
    FLAG.clone()
}

/// The signal that cancelled the run, if one did.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        sig => i32::try_from(sig).ok(),
    }
}

/// The name of signal `sig`.
pub fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// The exit code of a process a signal `sig` ended: 128 + its number.
pub fn exit_code(sig: i32) -> u8 {
    u8::try_from(128 + sig).unwrap_or(u8::MAX)
}

/// [`CliError::Cancelled`] once a signal was caught.
pub fn check() -> CliResult<()> {
    if FLAG.load(Ordering::Relaxed) {
        Err(CliError::Cancelled)
    } else {
        Ok(())
    }
}
