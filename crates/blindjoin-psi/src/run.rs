//! Options and outputs shared by all protocols, and the prologue every run starts with.

use crate::protocol::{Protocol, ResultKind};
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::{Role, Session, SessionConfig, handshake};
use blindjoin_core::{Error, Result};
use blindjoin_ot::base::endemic::{EndemicReceiver, EndemicSender};
use blindjoin_ot::base::{BaseOtReceiver, BaseOtSender, ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_ot::ext::base_pool::BasePool;
use rand::CryptoRng;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// The statistical security parameter below which a run is refused unless
/// [`RunOptions::allow_weak`] is set.
pub const MIN_LAMBDA: u32 = 40;

/// The largest λ any protocol accepts (a larger one would not fit the 16-byte tags at large
/// set sizes).
pub const MAX_LAMBDA: u32 = 80;

/// A progress callback: `(phase, done, total)` in items.
pub type Progress = Arc<dyn Fn(&'static str, u64, u64) + Send + Sync>;

/// Options of one protocol run.
#[derive(Clone)]
pub struct RunOptions {
    /// Computational security parameter κ in bits (default 128).
    pub kappa: u32,
    /// Statistical security parameter λ in bits (default 40).
    pub lambda: u32,
    /// The largest set the peer may announce (default 2³², and never more than the hashing
    /// layer's 2³⁰; the CLI's default is max(2^20, 4 × its own set size)). A receiver learns,
    /// for every key it announces, whether the sender has it.
    pub max_peer_set_size: u64,
    /// If given, the peer must announce exactly this many items.
    pub expected_peer_set_size: Option<u64>,
    /// Called as long phases advance.
    pub progress: Option<Progress>,
    /// Run even with λ below [`MIN_LAMBDA`] (never silently: the caller asked for it).
    pub allow_weak: bool,
    /// The base OT under the protocols' OT extensions (both parties must choose the same; the
    /// handshake compares it).
    pub base_ot: BaseOt,
    /// Base OTs drawn from a running OT extension of the connection instead of `base_ot`
    /// (`blindjoin_ot::ext::base_pool`), for the semi-honest protocols of a run split into
    /// many sessions over one connection; both parties must draw from one (the caller agrees
    /// on it). `None`: each session runs its own base OTs.
    pub base_pool: Option<Arc<BasePool>>,
    /// How the caller prepared its keys (normalisation), as handshake parameters: a difference
    /// would make equal records hash to different items, so the handshake refuses it.
    pub key_params: Vec<(String, String)>,
    /// Called once the handshake has succeeded, before any protocol message (e.g. to show the
    /// peer's set size).
    pub on_session: Option<SessionHook>,
    /// The most bytes (default [`DEFAULT_MEMORY_BUDGET`], 4 GiB; `None`: no limit) a run may
    /// commit on the strength of the *peer's* announced set size alone. The protocols allocate
    /// for the peer's data only as it arrives, so a peer that announces a large set and then
    /// sends nothing costs next to nothing; what the peer's size must decide before its data
    /// arrives is checked against this budget first: the chunk indexes of the receiver's bins
    /// of the `psz14` and `kkrt16` senders (4 bytes per 2^12 to 2^14 bins, 32 bytes per 2^16
    /// bins), and the Δ columns the `cm20` sender holds at once (m/8 bytes each, twice with
    /// their frames; the budget also caps how many it processes in parallel). A run that would
    /// exceed it is refused with `Error::InvalidParam` naming `memory_budget` before anything is
    /// allocated.
    pub memory_budget: Option<u64>,
    /// KMRS14's λ for `kmrs_mal` (Fig. 2): the copies of each element a client labels (default
    /// 3, at least 2). Every client of a run must choose the same (a handshake parameter).
    pub copies: u32,
    /// KMRS14's t for `kmrs_mal` (Fig. 2): the labels in each dummy set (default 2^20, at least
    /// 2). Every client of a run must choose the same (a handshake parameter).
    pub dummies: u64,
    /// Accept `copies` and `dummies` whose bound (1/t)^(λ−1) on a cheating server's escape is
    /// above 2^-λ (statistical λ, [`RunOptions::lambda`]): covert security, the server caught
    /// with probability at least 1 − (1/t)^(λ−1), the deterrence (KMRS14 §2.2: t = λ = 2 gives
    /// 1/2). Without it such parameters are refused.
    pub covert: bool,
    /// What the receiver learns (default: the intersection). Both parties must choose the
    /// same; a protocol refuses a result its descriptor does not list
    /// ([`Protocol::results`]).
    pub result: ResultKind,
    /// The sender's value of each of its items (aligned with its items), for
    /// [`ResultKind::Sum`]; ignored otherwise.
    pub values: Option<Arc<[u64]>>,
    /// The bit length σ to which the circuit protocols map items (PSZ14 App. A), and of
    /// `psz14`'s short values; `None` (default) derives it from the set sizes and λ, so that
    /// a collision (a false match) has probability at most 2^-λ. A smaller σ (PSZ14's experiments use σ = 32)
    /// raises that probability and is refused unless [`RunOptions::allow_weak`] is set.
    pub sigma: Option<u32>,
}

/// A callback given the session right after the handshake.
pub type SessionHook = Arc<dyn Fn(&Session) + Send + Sync>;

/// The default of [`RunOptions::memory_budget`]: 4 GiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 4 << 30;

/// The base OT a protocol runs under its OT extension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaseOt {
    /// Chou-Orlandi on Ristretto255 (`blindjoin_ot::base`): the default, and the only choice
    /// outside the tests.
    #[default]
    ChouOrlandi,
    /// The insecure ideal functionality (`blindjoin_ot::base::ideal`: the receiver learns both
    /// keys), for tests of the protocols only; compiled only with the `ideal-base-ot` feature.
    #[cfg(feature = "ideal-base-ot")]
    Ideal,
}

impl BaseOt {
    /// The name in the handshake parameters.
    pub fn name(self) -> &'static str {
        match self {
            BaseOt::ChouOrlandi => "co15",
            #[cfg(feature = "ideal-base-ot")]
            BaseOt::Ideal => "ideal-insecure",
        }
    }

    /// The name in the handshake parameters of a malicious-secure protocol, which runs
    /// Masny-Rindal endemic OT where the semi-honest ones run Chou-Orlandi
    /// (`Run::malicious_base_ot`).
    pub fn malicious_name(self) -> &'static str {
        match self {
            BaseOt::ChouOrlandi => "endemic-ristretto255",
            #[cfg(feature = "ideal-base-ot")]
            BaseOt::Ideal => "ideal-insecure",
        }
    }
}

/// The base OT of a malicious-secure protocol in either role: Masny-Rindal endemic OT
/// (`blindjoin_ot::base::endemic`, secure against a malicious sender or receiver in the
/// random-oracle model) in place of Chou-Orlandi, or the ideal functionality in tests.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MaliciousBaseOt(pub BaseOt);

impl BaseOtSender for MaliciousBaseOt {
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        n: usize,
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[[u8; 16]; 2]>> {
        match self.0 {
            BaseOt::ChouOrlandi => EndemicSender::default().send_random(ch, sid, n, rng),
            #[cfg(feature = "ideal-base-ot")]
            BaseOt::Ideal => AnyBaseOt(self.0, None).send_random(ch, sid, n, rng),
        }
    }
}

impl BaseOtReceiver for MaliciousBaseOt {
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        choices: &[bool],
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[u8; 16]>> {
        match self.0 {
            BaseOt::ChouOrlandi => EndemicReceiver::default().receive_random(ch, sid, choices, rng),
            #[cfg(feature = "ideal-base-ot")]
            BaseOt::Ideal => AnyBaseOt(self.0, None).receive_random(ch, sid, choices, rng),
        }
    }
}

/// The base OT of [`RunOptions::base_ot`] in either role, or the run's pool
/// ([`RunOptions::base_pool`]).
#[derive(Clone, Debug)]
pub(crate) struct AnyBaseOt(pub BaseOt, pub Option<Arc<BasePool>>);

impl BaseOtSender for AnyBaseOt {
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        n: usize,
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[[u8; 16]; 2]>> {
        if let Some(pool) = &self.1 {
            return (&**pool).send_random(ch, sid, n, rng);
        }
        match self.0 {
            BaseOt::ChouOrlandi => ChouOrlandiSender::default().send_random(ch, sid, n, rng),
            #[cfg(feature = "ideal-base-ot")]
            BaseOt::Ideal => {
                blindjoin_ot::base::ideal::IdealBaseOtSender::default().send_random(ch, sid, n, rng)
            }
        }
    }
}

impl BaseOtReceiver for AnyBaseOt {
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        choices: &[bool],
        rng: &mut impl CryptoRng,
    ) -> Result<Vec<[u8; 16]>> {
        if let Some(pool) = &self.1 {
            return (&**pool).receive_random(ch, sid, choices, rng);
        }
        match self.0 {
            BaseOt::ChouOrlandi => {
                ChouOrlandiReceiver::default().receive_random(ch, sid, choices, rng)
            }
            #[cfg(feature = "ideal-base-ot")]
            BaseOt::Ideal => blindjoin_ot::base::ideal::IdealBaseOtReceiver::default()
                .receive_random(ch, sid, choices, rng),
        }
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            kappa: 128,
            lambda: 40,
            max_peer_set_size: 1 << 32,
            expected_peer_set_size: None,
            progress: None,
            allow_weak: false,
            base_ot: BaseOt::default(),
            base_pool: None,
            key_params: Vec::new(),
            on_session: None,
            memory_budget: Some(DEFAULT_MEMORY_BUDGET),
            copies: crate::protocols::server_aided::kmrs_mal::DEFAULT_COPIES,
            dummies: crate::protocols::server_aided::kmrs_mal::DEFAULT_DUMMIES,
            covert: false,
            result: ResultKind::Intersection,
            values: None,
            sigma: None,
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
            .field("allow_weak", &self.allow_weak)
            .field("base_ot", &self.base_ot)
            .field("base_pool", &self.base_pool.is_some())
            .field("key_params", &self.key_params)
            .field("memory_budget", &self.memory_budget)
            .field("copies", &self.copies)
            .field("dummies", &self.dummies)
            .field("covert", &self.covert)
            .field("result", &self.result)
            .field("sigma", &self.sigma)
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
        mut params: Vec<(String, String)>,
    ) -> SessionConfig {
        params.extend(self.key_params.iter().cloned());
        SessionConfig {
            protocol: protocol.to_owned(),
            role,
            set_size: set_size as u64,
            kappa: self.kappa,
            lambda: self.lambda,
            params,
            // No protocol handles more items than the hashing layer indexes: a larger claim is
            // the peer's to explain, refused in the handshake.
            max_peer_set_size: self.max_peer_set_size.min(crate::hashing::MAX_ITEMS as u64),
            expected_peer_set_size: self.expected_peer_set_size,
            peer_queries: None,
        }
    }

    /// Reports progress, if anyone listens.
    pub fn report(&self, phase: &'static str, done: u64, total: u64) {
        if let Some(p) = &self.progress {
            p(phase, done, total);
        }
    }

    /// `Ok` if `bytes` for `what`, a structure sized by the peer's announced set size, fit
    /// [`RunOptions::memory_budget`]; otherwise `InvalidParam` naming `memory_budget`.
    pub fn check_memory(&self, what: &str, bytes: u64) -> Result<()> {
        match self.memory_budget {
            Some(budget) if bytes > budget => Err(Error::InvalidParam {
                field: "memory_budget",
                reason: format!(
                    "{what} needs {bytes} bytes for the peer's announced set size before its \
                     data arrives; the memory budget is {budget} bytes"
                ),
            }),
            _ => Ok(()),
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

/// The receiver's result when it is not the intersection itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregate {
    /// The size of the intersection ([`ResultKind::Cardinality`]).
    Cardinality(u64),
    /// The sum of the sender's values over the intersection ([`ResultKind::Sum`]).
    Sum(u128),
}

/// What the receiver learns.
#[derive(Clone, Debug)]
pub struct ReceiverOutput {
    /// Sorted indices of the receiver's items that are in the intersection (empty when the
    /// run computed an aggregate instead).
    pub indices: Vec<usize>,
    /// The cardinality or sum, when the run computed one instead of the intersection.
    pub aggregate: Option<Aggregate>,
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

/// Refuses security parameters `p` cannot provide or that are weaker than the defaults without
/// the caller's explicit consent: κ must be one `p` offers, λ must lie in 1..=[`MAX_LAMBDA`],
/// and λ below [`MIN_LAMBDA`] needs [`RunOptions::allow_weak`].
pub fn check_security(p: &Protocol, opts: &RunOptions) -> Result<()> {
    if !p.kappa.contains(&opts.kappa) {
        let offered: Vec<String> = p.kappa.iter().map(u32::to_string).collect();
        return Err(Error::InvalidParam {
            field: "kappa",
            reason: format!(
                "{} provides κ = {} only, {} was asked",
                p.name,
                offered.join(", "),
                opts.kappa
            ),
        });
    }
    if !(1..=MAX_LAMBDA).contains(&opts.lambda) {
        return Err(Error::InvalidParam {
            field: "lambda",
            reason: format!(
                "λ must be between 1 and {MAX_LAMBDA}, {} was asked",
                opts.lambda
            ),
        });
    }
    if !p.results.contains(&opts.result) {
        let offered: Vec<&str> = p.results.iter().map(|r| r.name()).collect();
        return Err(Error::InvalidParam {
            field: "result",
            reason: format!(
                "{} computes {} only, {} was asked",
                p.name,
                offered.join(", "),
                opts.result
            ),
        });
    }
    if opts.lambda < MIN_LAMBDA && !opts.allow_weak {
        return Err(Error::InvalidParam {
            field: "lambda",
            reason: format!(
                "λ = {} is below {MIN_LAMBDA} (false matches and failed runs up to 2^-{}); \
                 allow weak parameters (--allow-weak) to run anyway",
                opts.lambda, opts.lambda
            ),
        });
    }
    Ok(())
}

/// A protocol run after its prologue: the negotiated session, the options and the phase clock.
pub(crate) struct Run<'a> {
    /// The negotiated session.
    pub session: Session,
    /// The caller's options.
    pub opts: &'a RunOptions,
    phases: Phases,
    last: Instant,
}

impl<'a> Run<'a> {
    /// The prologue every protocol's `send` and `receive` opens with: checks the security
    /// parameters against what `p` provides ([`check_security`]), runs the handshake (hello,
    /// verdict, session id) with `p`'s parameters, and starts the phase clock with the
    /// handshake as the first phase.
    pub fn start<C: Channel + ?Sized>(
        ch: &mut C,
        p: &Protocol,
        role: Role,
        set_size: usize,
        opts: &'a RunOptions,
        rng: &mut impl CryptoRng,
    ) -> Result<Run<'a>> {
        check_security(p, opts)?;
        let start = Instant::now();
        let params = (p.params)(opts);
        let mut cfg = opts.session_config(p.name, role, set_size, params);
        // A sender bounds what the receiver can test, which for some protocols is more than
        // the receiver announces (`Protocol::queries`; a size the protocol refuses counts as
        // announced: the protocol refuses it itself).
        if role == Role::Sender {
            let queries = p.queries;
            let (n_send, kappa, lambda, sigma) =
                (set_size as u64, opts.kappa, opts.lambda, opts.sigma);
            cfg.peer_queries = Some(blindjoin_core::handshake::PeerQueries {
                protocol: p.name.to_owned(),
                bound: opts.max_peer_set_size,
                of: std::sync::Arc::new(move |n_recv| {
                    let sizes = crate::protocol::Sizes {
                        n_recv,
                        n_send,
                        kappa,
                        lambda,
                        sigma,
                    };
                    queries(&sizes).unwrap_or(n_recv)
                }),
            });
        }
        let session = handshake(ch, &cfg, rng)?;
        if let Some(hook) = &opts.on_session {
            hook(&session);
        }
        let mut run = Run {
            session,
            opts,
            phases: Phases::default(),
            last: start,
        };
        run.lap("handshake");
        Ok(run)
    }

    /// Records the phase `name` as having run since the previous one ended.
    pub fn lap(&mut self, name: &'static str) {
        self.last = self.phases.lap(name, self.last);
    }

    /// (n1, n2): the receiver's and the sender's set sizes.
    pub fn sizes(&self) -> (u64, u64) {
        (self.session.receiver_size, self.session.sender_size)
    }

    /// Bytes of a comparison tag for this run's sizes (λ + ⌈log2(n1·n2)⌉ bits), at most 16.
    pub fn tag_len(&self) -> Result<usize> {
        let (n1, n2) = self.sizes();
        crate::protocols::common::tag_len(self.session.lambda, n1, n2)
    }

    /// The base OT the options chose.
    pub fn base_ot(&self) -> AnyBaseOt {
        AnyBaseOt(self.opts.base_ot, self.opts.base_pool.clone())
    }

    /// The base OT of a malicious-secure protocol ([`MaliciousBaseOt`]).
    pub fn malicious_base_ot(&self) -> MaliciousBaseOt {
        MaliciousBaseOt(self.opts.base_ot)
    }

    /// Reports progress, if anyone listens.
    pub fn report(&self, phase: &'static str, done: u64, total: u64) {
        self.opts.report(phase, done, total);
    }

    /// The receiver's output with `indices` (sorted).
    pub fn receiver_output(self, indices: Vec<usize>) -> ReceiverOutput {
        ReceiverOutput {
            indices,
            aggregate: None,
            session: self.session,
            phases: self.phases,
        }
    }

    /// The receiver's output when the run computed `aggregate` instead of the intersection.
    pub fn receiver_aggregate(self, aggregate: Aggregate) -> ReceiverOutput {
        ReceiverOutput {
            indices: Vec::new(),
            aggregate: Some(aggregate),
            session: self.session,
            phases: self.phases,
        }
    }

    /// The sender's output.
    pub fn sender_output(self) -> SenderOutput {
        SenderOutput {
            session: self.session,
            phases: self.phases,
        }
    }
}
