//! A failed run as a Python exception: the CLI's one-line message (`str(CliError)`) in one of
//! the classes of `blindjoin._errors` (`InputError` for the data, `PeerError` for the peer and
//! the connection, `BlindjoinError` for the rest).

use blindjoin_cli::error::CliError;
use blindjoin_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The class of `blindjoin._errors` an error is raised as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The data cannot be read or keyed.
    Input,
    /// The peer or the connection ended the run.
    Peer,
    /// Anything else.
    Other,
}

impl Kind {
    /// The class name in `blindjoin._errors`.
    pub fn class(self) -> &'static str {
        match self {
            Kind::Input => "InputError",
            Kind::Peer => "PeerError",
            Kind::Other => "BlindjoinError",
        }
    }

    /// The kind of a CLI error.
    pub fn of(e: &CliError) -> Kind {
        match e {
            CliError::File { .. } | CliError::MissingColumn { .. } | CliError::Malformed { .. } => {
                Kind::Input
            }
            CliError::Protocol(
                Error::PeerClosed { .. }
                | Error::SendFailed { .. }
                | Error::NoAcceptablePeer { .. }
                | Error::PeerStopped { .. }
                | Error::Timeout { .. }
                | Error::Deadline { .. }
                | Error::Tls(_)
                | Error::FrameTooLong { .. }
                | Error::Malformed { .. }
                | Error::ParamMismatch { .. }
                | Error::PeerRefused(_)
                | Error::CheckFailed(_)
                | Error::ServerCheated(_)
                | Error::PeerFailed(_),
            ) => Kind::Peer,
            _ => Kind::Other,
        }
    }
}

/// Raises `message` as the class of `kind` (a `RuntimeError` if the package's Python part is
/// missing).
pub fn raise(py: Python<'_>, kind: Kind, message: String) -> PyErr {
    let class = py
        .import("blindjoin._errors")
        .and_then(|m| m.getattr(kind.class()))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(c) => PyErr::from_type(c, (message,)),
        Err(_) => PyRuntimeError::new_err(message),
    }
}

/// A CLI error as the Python exception of its kind.
pub fn to_py(py: Python<'_>, e: &CliError) -> PyErr {
    raise(py, Kind::of(e), e.to_string())
}
