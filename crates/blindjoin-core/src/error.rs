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
    /// The connection broke while we sent a message.
    #[error("the connection broke while we sent {sending} (did the peer stop?)")]
    SendFailed {
        /// The message we were sending.
        sending: &'static str,
    },
    /// A listener dropped a connection before checking it to the end: it sent nothing in time,
    /// or newer connections needed its place (the text says which).
    #[error("dropped: {0}")]
    Dropped(String),
    /// A connector reached the peer's listener, was dropped before the link was set up, and then
    /// found nobody listening there for the whole contact wait: the peer most likely failed.
    #[error(
        "the peer stopped listening at {addr} after it was reached; it may have failed (see its log)"
    )]
    PeerStopped {
        /// The address connected to.
        addr: String,
    },
    /// A listener's deadline passed and every connection it received was refused.
    #[error(
        "no acceptable peer connected before the run's deadline; {refused} connection(s) refused, the last: {last}"
    )]
    NoAcceptablePeer {
        /// Connections refused.
        refused: u64,
        /// Why the last one was refused.
        last: String,
    },
    /// No data arrived (or could be sent) within the idle timeout.
    #[error(
        "no data moved for {secs} s while waiting for {during} (idle timeout; is the peer still running?)"
    )]
    Timeout {
        /// The message we were waiting for or sending.
        during: &'static str,
        /// The idle timeout in seconds.
        secs: f64,
    },
    /// The run's deadline passed.
    #[error("the run's deadline passed while waiting for {during}")]
    Deadline {
        /// What we were waiting for or sending.
        during: &'static str,
    },
    /// The secure channel could not be set up or broke (TLS, the peer's certificate).
    #[error("TLS: {0}")]
    Tls(String),
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
    /// A server-aided run's result fails the clients' check (KMRS14 Fig. 2 step 6): the server
    /// altered the intersection; the text says what was seen.
    #[error("the server cheated: {0}")]
    ServerCheated(String),
    /// The peer ended the run with an error after the protocol (it names its reason, as
    /// [`peer_failure`](crate::finish::peer_failure) words it from this side).
    #[error("the peer stopped the run: {0}")]
    PeerFailed(String),
    /// A hashing structure could not hold the items (e.g. Cuckoo hashing found no placement);
    /// the message states the probability the parameters give this event.
    #[error("{0}")]
    HashingFailed(String),
    /// The server's label store (e.g. Redis) is unreachable or failed a command; the message
    /// names the store and what it was doing.
    #[error("label store: {0}")]
    Store(String),
    /// The run was stopped on our side before the peer was reached (an input error, or the
    /// user interrupted it).
    #[error("stopped before the peer was reached")]
    Cancelled,
}

/// The longest text from the peer an error message quotes, in characters.
pub const MAX_PEER_TEXT: usize = 200;

/// Text the peer sent, made safe to print in an error or a log line: control characters (line
/// breaks, terminal escape sequences) and invisible formatting characters (bidirectional
/// overrides, zero-width characters) are shown escaped (`\u{1b}`), and text longer than
/// [`MAX_PEER_TEXT`] characters is cut with an ellipsis. A peer therefore cannot forge log
/// lines, move the cursor or hide text in our output.
pub fn peer_text(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == MAX_PEER_TEXT {
            out.push('…');
            break;
        }
        let invisible = matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}' | '\u{feff}');
        if c.is_control() || invisible {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_text_escapes_what_could_fool_a_reader() {
        assert_eq!(peer_text("ecdh"), "ecdh");
        assert_eq!(peer_text("λ = 40, ü"), "λ = 40, ü");
        assert_eq!(peer_text("a\nb"), "a\\u{a}b");
        assert_eq!(peer_text("\u{1b}[2J"), "\\u{1b}[2J");
        assert_eq!(peer_text("x\u{202e}y\u{200b}"), "x\\u{202e}y\\u{200b}");
        let long = "z".repeat(MAX_PEER_TEXT + 50);
        let cut = peer_text(&long);
        assert_eq!(cut.chars().count(), MAX_PEER_TEXT + 1);
        assert!(cut.ends_with('…'));
    }
}
