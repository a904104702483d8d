//! Options and outputs shared by all protocols.

use blindjoin_core::handshake::{Role, Session, SessionConfig};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// A progress callback: `(phase, done, total)` in items.
pub type Progress = Arc<dyn Fn(&'static str, u64, u64) + Send + Sync>;

/// Options of one protocol run.
#[derive(Clone)]
pub struct RunOptions {
    /// Computational security parameter κ in bits (default 128).
    pub kappa: u32,
    /// Statistical security parameter λ in bits (default 40).
    pub lambda: u32,
    /// The largest set the peer may announce (default 2³²).
    pub max_peer_set_size: u64,
    /// If given, the peer must announce exactly this many items.
    pub expected_peer_set_size: Option<u64>,
    /// Called as long phases advance.
    pub progress: Option<Progress>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            kappa: 128,
            lambda: 40,
            max_peer_set_size: 1 << 32,
            expected_peer_set_size: None,
            progress: None,
        }
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("kappa", &self.kappa)
            .field("lambda", &self.lambda)
            .field("max_peer_set_size", &self.max_peer_set_size)
            .field("expected_peer_set_size", &self.expected_peer_set_size)
            .finish_non_exhaustive()
    }
}

impl RunOptions {
    /// The handshake configuration for `protocol` in `role` with `set_size` items.
    pub fn session_config(
        &self,
        protocol: &str,
        role: Role,
        set_size: usize,
        params: Vec<(String, String)>,
    ) -> SessionConfig {
        SessionConfig {
            protocol: protocol.to_owned(),
            role,
            set_size: set_size as u64,
            kappa: self.kappa,
            lambda: self.lambda,
            params,
            max_peer_set_size: self.max_peer_set_size,
            expected_peer_set_size: self.expected_peer_set_size,
        }
    }

    /// Reports progress, if anyone listens.
    pub fn report(&self, phase: &'static str, done: u64, total: u64) {
        if let Some(p) = &self.progress {
            p(phase, done, total);
        }
    }
}

/// Wall time per named phase, in the order the phases ran.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Phases(pub Vec<(&'static str, f64)>);

impl Phases {
    /// Records `name` as having run since `start`, and returns the current instant.
    pub fn lap(&mut self, name: &'static str, start: Instant) -> Instant {
        let now = Instant::now();
        self.0.push((name, now.duration_since(start).as_secs_f64()));
        now
    }
}

/// What the receiver learns.
#[derive(Clone, Debug)]
pub struct ReceiverOutput {
    /// Sorted indices of the receiver's items that are in the intersection.
    pub indices: Vec<usize>,
    /// The negotiated session.
    pub session: Session,
    /// Time per phase.
    pub phases: Phases,
}

/// What the sender learns: only the session (and so the receiver's set size).
#[derive(Clone, Debug)]
pub struct SenderOutput {
    /// The negotiated session.
    pub session: Session,
    /// Time per phase.
    pub phases: Phases,
}
