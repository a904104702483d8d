//! The CLI's error type: one line for the user, then a non-zero exit.

use std::path::PathBuf;

/// Everything that ends a `blindjoin` command with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A file could not be opened, read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The input's header lacks the requested column.
    #[error("{path}: no column `{column}`; the columns are: {available}")]
    MissingColumn {
        /// The file.
        path: PathBuf,
        /// The requested column.
        column: String,
        /// The columns that exist, comma-separated.
        available: String,
    },
    /// A line of the input cannot be parsed.
    #[error("{path}: line {line}: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// A command-line value is not acceptable.
    #[error("{0}")]
    Usage(String),
    /// The protocol run failed.
    #[error(transparent)]
    Protocol(#[from] blindjoin_core::Error),
    /// A result check failed (the demo's self-verification).
    #[error("verification failed: {0}")]
    Verification(String),
    /// The run was cancelled (a signal, or the Python package's Ctrl-C; see
    /// [`crate::signals`]).
    #[error("cancelled")]
    Cancelled,
}

/// Result alias of the CLI.
pub type CliResult<T> = Result<T, CliError>;
