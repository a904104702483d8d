//! The error type of blindjoin. Every variant says what happened in words a user can act on;
//! `Display` is one line.

use std::io;

/// Result alias for blindjoin operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can end a blindjoin session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A local or network I/O operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The peer closed the connection (or the in-memory peer was dropped).
    #[error("the peer closed the connection while we waited for {during}")]
    PeerClosed {
        /// The message we were waiting for.
        during: &'static str,
    },
    /// No data arrived (or could be sent) within the configured timeout.
    #[error("timed out after {secs} s waiting for {during} (is the peer still running?)")]
    Timeout {
        /// The message we were waiting for or sending.
        during: &'static str,
        /// The timeout in seconds.
        secs: u64,
    },
    /// The peer announced a frame longer than the message allows.
    #[error("the peer sent a {len}-byte frame for {message}; at most {max} bytes are allowed")]
    FrameTooLong {
        /// The message we expected.
        message: &'static str,
        /// Announced length.
        len: u64,
        /// Largest length allowed at this point of the protocol.
        max: u64,
    },
    /// The peer sent a message that does not decode or has the wrong shape.
    #[error("malformed {message} from the peer: {reason}")]
    Malformed {
        /// The message we expected.
        message: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The two parties disagree on a session parameter.
    #[error("parameter mismatch on `{field}`: ours is {ours}, the peer's is {peer}")]
    ParamMismatch {
        /// The parameter's name.
        field: String,
        /// Our value.
        ours: String,
        /// The peer's value.
        peer: String,
    },
    /// A locally given parameter is out of range.
    #[error("invalid parameter `{field}`: {reason}")]
    InvalidParam {
        /// The parameter's name.
        field: &'static str,
        /// Why it is rejected.
        reason: String,
    },
    /// The peer refused the session after the hello exchange (it names its reason).
    #[error("the peer refused the session: {0}")]
    PeerRefused(String),
    /// The peer's messages fail a consistency check of the protocol (a cheating or broken peer).
    #[error("the peer failed a protocol check: {0}")]
    CheckFailed(String),
    /// A hashing structure could not hold the items (e.g. Cuckoo hashing found no placement),
    /// an event whose probability the protocol's parameters bound by 2^-λ.
    #[error("{0}; this happens with probability at most 2^-λ, so please report it")]
    HashingFailed(String),
}

impl Error {
    /// Wraps an I/O error with what we were doing.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// A malformed-message error.
    pub fn malformed(message: &'static str, reason: impl Into<String>) -> Self {
        Error::Malformed {
            message,
            reason: reason.into(),
        }
    }
}
