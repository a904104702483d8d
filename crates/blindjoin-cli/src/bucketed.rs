//! A two-party run split into buckets (`send`/`receive --buckets B [--parallel K]`): DCW13
//! §6.4's scale-out, with the buckets padded to a public maximum ([`crate::bucket`]).
//!
//! **Flow**, after the connection (lane 0) is open:
//!
//! 1. **Run handshake** on lane 0: the ordinary session handshake
//!    ([`blindjoin_core::handshake`]) under the protocol id `bucketed/<protocol>`, with B, K,
//!    κ, λ and the key parameters (set sizes 0: an input that streams through its buckets is
//!    counted only once it is partitioned). Its session id is the run id; the partition key
//!    is derived from it. With `--buckets auto` (B = `auto` in the handshake) both parties
//!    then send their proposal of B ([`crate::bucket::propose`]: the fewest buckets whose
//!    sessions fit in the party's memory budget for its input's estimated size; the
//!    receiver's first), and the run takes the larger.
//! 2. **Lanes**: with K > 1 the connector opens K − 1 more connections one after the other and
//!    the listener accepts them in that order; each starts with a handshake naming the run id
//!    and its lane number, so a crossed or foreign connection is refused.
//! 3. **Partition**: each party maps its items to buckets ([`Partition`]; a [`Split`] in memory
//!    or spilled to files), then both send their number of distinct items n (the receiver's
//!    first), checked against the largest and the expected peer size as a session's
//!    handshake checks them. Each checks that no bucket of its own holds more than its public
//!    maximum ([`max_load`] of its own n; the run stops with an error naming the bucket if one
//!    does, with probability at most 2^-λ).
//! 4. **Buckets**: lane w runs buckets w, w + K, w + 2K, … in order, each an ordinary session of
//!    the protocol on the bucket's items and random dummies up to the maximum, with the peer's
//!    set size required to be the peer's maximum, and the run id and bucket number as
//!    handshake parameters. A bucket's session runs with λ + ⌈log2 B⌉, so that a false match
//!    in any of the B sessions has probability at most 2^-λ, as in one session. The
//!    semi-honest protocols' base OTs come from one IKNP extension per lane
//!    ([`blindjoin_ot::ext::base_pool`], set up by the lane's first session that needs base
//!    OTs, on 2 × 128 Chou-Orlandi OTs) instead of each session's own public-key base OTs
//!    (handshake parameter `base_ots = lane-iknp`); the malicious-secure ones run their own.
//! 5. **Result**: the receiver's matches at real items (a match at a dummy's position is
//!    dropped), mapped back to its items, are the union. Lanes 1.. end with the transcript
//!    confirmation of [`blindjoin_core::finish`]; lane 0 carries the run's confirmation and
//!    final verdict, after the output is in place, as a single session does.
//!
//! **Resume** ([`crate::rundir`]): a resumable run records each bucket (the receiver once it
//! has its matches, the sender before it serves it). A run that resumes one names the old run
//! id in the run handshake (parameter `resume`), partitions under the old key, checks that both
//! counts are the recorded ones, and then both parties exchange which buckets they recorded
//! (the receiver's first; the sender's answer also says whether it serves again what it served
//! and the receiver has no record of). The buckets both recorded are kept; a bucket only the
//! sender recorded is served again only if the sender allows it (`--allow-rerun`), and
//! otherwise both parties stop there with an error naming it; the others run, as sessions of
//! the new run.
//!
//! **Leakage.** The peer learns B, K and our number of distinct items, as it learns the latter
//! in one session; every bucket's announced size is the public maximum. A run that would need
//! more than the maximum in a bucket fails rather than announce it. An aggregate result
//! (cardinality, sum) would be learned per bucket, so it is refused with buckets.
//!
//! **Cost.** Padding adds B · max − n dummies per party (the report gives them); at 2^20 items
//! in 16 buckets the maximum is 2.8 % above the mean.

use crate::bucket::{
    MAX_AUTO_BUCKETS, Partition, dummies, max_load, propose, session_bytes_per_item,
};
use crate::error::{CliError, CliResult};
use crate::party::default_max_peer_size;
use crate::report::hex;
use crate::rundir::{Finished, RunDir, RunState, key_of};
use blindjoin_core::channel::metered::{Metered, Traffic};
use blindjoin_core::channel::transcript::Transcript;
use blindjoin_core::channel::{Channel, recv_msg, send_msg};
use blindjoin_core::handshake::{Role, Session, SessionConfig, handshake};
use blindjoin_core::item::Item;
use blindjoin_core::transport::Link;
use blindjoin_core::{Error, finish};
use blindjoin_ot::ext::base_pool::BasePool;
use blindjoin_psi::{Protocol, ResultKind, RunOptions};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Name of the receiver's number of distinct items, sent after the partition.
pub const MSG_RECEIVER_SIZE: &str = "the receiver's distinct items (bucketed run)";

/// Name of the sender's number of distinct items, sent after the partition.
pub const MSG_SENDER_SIZE: &str = "the sender's distinct items (bucketed run)";

/// Name of the receiver's proposal of B (`--buckets auto`).
pub const MSG_RECEIVER_BUCKETS: &str = "the receiver's proposed number of buckets";

/// Name of the sender's proposal of B (`--buckets auto`).
pub const MSG_SENDER_BUCKETS: &str = "the sender's proposed number of buckets";

/// Name of the receiver's finished buckets, sent when a run resumes.
pub const MSG_RECEIVER_FINISHED: &str = "the receiver's finished buckets (resumed run)";

/// Name of the sender's finished buckets, sent when a run resumes.
pub const MSG_SENDER_FINISHED: &str = "the sender's finished buckets (resumed run)";

/// A party's items split into the run's buckets.
pub trait Split: Sync {
    /// Distinct items over all buckets.
    fn distinct(&self) -> u64;
    /// Distinct items in bucket `p`.
    fn count(&self, p: usize) -> u64;
    /// Bucket `p`'s distinct items and what a match at each stands for.
    fn load(&self, p: usize) -> CliResult<Loaded>;
}

/// One bucket's distinct items, each with the values a match at it stands for (an item index
/// of the caller's, or the input rows that carry the item).
pub struct Loaded {
    /// The distinct items.
    pub items: Vec<Item>,
    /// The values of item k are `values[ends[k - 1]..ends[k]]` (from 0 for k = 0).
    pub values: Vec<u64>,
    /// See `values`.
    pub ends: Vec<usize>,
}

impl Loaded {
    /// The values of the items at `positions` (positions past the real items, the dummies',
    /// are ignored).
    pub(crate) fn values_at(&self, positions: &[usize], out: &mut Vec<u64>) {
        for &k in positions {
            if k < self.items.len() {
                let start = if k == 0 { 0 } else { self.ends[k - 1] };
                out.extend_from_slice(&self.values[start..self.ends[k]]);
            }
        }
    }
}

/// [`Split`] of items in memory: a match stands for the item's index in `items`.
pub struct MemorySplit<'a> {
    items: &'a [Item],
    members: Vec<Vec<u32>>,
}

impl<'a> MemorySplit<'a> {
    /// Splits `items` (distinct; fewer than 2^32) by `partition`.
    pub fn new(items: &'a [Item], partition: &Partition) -> Self {
        let mut assigned = vec![0u32; items.len()];
        partition.assign(items, &mut assigned);
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); partition.buckets() as usize];
        for (i, &p) in assigned.iter().enumerate() {
            members[p as usize].push(i as u32);
        }
        MemorySplit { items, members }
    }
}

impl Split for MemorySplit<'_> {
    fn distinct(&self) -> u64 {
        self.items.len() as u64
    }

    fn count(&self, p: usize) -> u64 {
        self.members[p].len() as u64
    }

    fn load(&self, p: usize) -> CliResult<Loaded> {
        let m = &self.members[p];
        Ok(Loaded {
            items: m.iter().map(|&i| self.items[i as usize]).collect(),
            values: m.iter().map(|&i| u64::from(i)).collect(),
            ends: (1..=m.len()).collect(),
        })
    }
}

/// How a run is split: `count` buckets over `parallel` connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buckets {
    /// Number of buckets, B (1: one ordinary session; 0: `auto`, chosen by both parties from
    /// their inputs' sizes and memory budgets, see [`crate::bucket::propose`]).
    pub count: u32,
    /// Connections that run buckets at once, K (at most B).
    pub parallel: usize,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            count: 1,
            parallel: 1,
        }
    }
}

impl Buckets {
    /// Whether the run is split at all (`auto` always is, if only into one bucket).
    pub fn split(&self) -> bool {
        self.count != 1
    }

    /// Whether B is chosen by the parties (`--buckets auto`).
    pub fn auto(&self) -> bool {
        self.count == 0
    }

    /// Refuses what a bucketed run cannot do, before anything is read or connected.
    pub fn check(&self, opts: &RunOptions) -> CliResult<()> {
        if self.parallel == 0 {
            return Err(CliError::Usage("--parallel must be at least 1".into()));
        }
        if self.parallel > 1 && !self.split() {
            return Err(CliError::Usage("--parallel needs --buckets above 1".into()));
        }
        if !self.auto() && self.parallel as u64 > u64::from(self.count) {
            return Err(CliError::Usage(format!(
                "--parallel {} is more than --buckets {}",
                self.parallel, self.count
            )));
        }
        if self.split() && opts.result != ResultKind::Intersection {
            return Err(CliError::Usage(format!(
                "--result {} cannot be split into buckets: the receiver would learn it per \
                 bucket",
                opts.result
            )));
        }
        Ok(())
    }
}

/// What a bucketed run gives the caller.
pub struct Outcome {
    /// The run handshake's session (its id is the run id; the peer size is its real one).
    pub session: Session,
    /// The receiver's matches: the values ([`Loaded`]) of its matched items, ascending; `None`
    /// for the sender.
    pub matches: Option<Vec<u64>>,
    /// Seconds per phase.
    pub phases: Vec<(String, f64)>,
    /// The receiver's matched distinct items.
    pub matched_items: u64,
    /// How the run was split (B as agreed, for `--buckets auto`).
    pub buckets: Buckets,
    /// The dummies this party added (B · max − n).
    pub dummies: u64,
    /// Buckets kept from the run this one resumed (not run again).
    pub kept: u64,
    /// Buckets the sender served again on this resume, though it had served them before
    /// (`--allow-rerun`), ascending.
    pub rerun: Vec<u32>,
    /// Traffic of the lanes other than lane 0 (lane 0's is the caller's channel's).
    pub other_lanes: Traffic,
    /// The open lanes 1.. (already confirmed), to close after lane 0's final verdict.
    lanes: Vec<Transcript<Metered<Link>>>,
}

impl Outcome {
    /// Closes the other lanes (after lane 0's verdict).
    pub fn close(self) {
        drop(self.lanes);
    }
}

/// The worker threads of one lane.
fn lane_pool(threads: usize) -> CliResult<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the worker threads: {e}")))
}

/// Who runs a bucketed run, and how.
#[derive(Clone, Copy)]
pub struct Party<'o> {
    /// The protocol of every bucket.
    pub protocol: &'static Protocol,
    /// Whether this party receives the intersection.
    pub receiver: bool,
    /// The protocol options.
    pub opts: &'o RunOptions,
    /// How the run is split.
    pub buckets: Buckets,
    /// The most distinct items the peer may announce, or for a receiver the most guessed keys
    /// it may test ([`receiver_queries`]; `None`: [`default_max_queries`] of ours).
    pub max_peer: Option<u64>,
}

/// What a receiver announcing `n_recv` distinct keys can test against a sender of `n_send` in
/// a run of `buckets` buckets of `protocol`: one session's query budget
/// ([`Protocol::queries`]), or with B > 1 buckets, B sessions each padded to the public
/// maximum (at the buckets' λ).
pub fn receiver_queries(
    protocol: &Protocol,
    (n_recv, n_send): (u64, u64),
    buckets: u32,
    opts: &RunOptions,
) -> u64 {
    let lambda = if buckets > 1 {
        opts.lambda + buckets.next_power_of_two().trailing_zeros()
    } else {
        opts.lambda
    };
    let sizes = |n_recv, n_send| blindjoin_psi::protocol::Sizes {
        n_recv,
        n_send,
        kappa: opts.kappa,
        lambda,
        sigma: opts.sigma,
    };
    if buckets <= 1 {
        return (protocol.queries)(&sizes(n_recv, n_send)).unwrap_or(n_recv);
    }
    let f = f64::from(opts.lambda);
    let (r, s) = (max_load(n_recv, buckets, f), max_load(n_send, buckets, f));
    (protocol.queries)(&sizes(r, s))
        .unwrap_or(r)
        .saturating_mul(u64::from(buckets))
}

/// The default bound on what a receiver may test: what one announcing max(2^20, 4 × our
/// distinct keys) could ([`default_max_peer_size`], [`receiver_queries`]).
pub fn default_max_queries(protocol: &Protocol, own: u64, buckets: u32, opts: &RunOptions) -> u64 {
    receiver_queries(
        protocol,
        (default_max_peer_size(own as usize), own),
        buckets,
        opts,
    )
}

/// The handshake parameters naming a bucketed run (`extra`: further parameters both sides must
/// hold, such as how the lanes are run).
fn run_config(party: &Party<'_>, extra: &[(String, String)]) -> SessionConfig {
    let role = if party.receiver {
        Role::Receiver
    } else {
        Role::Sender
    };
    let opts = party.opts;
    let mut cfg = SessionConfig::new(&format!("bucketed/{}", party.protocol.name), role, 0);
    cfg.kappa = opts.kappa;
    cfg.lambda = opts.lambda;
    cfg.expected_peer_set_size = Some(0);
    cfg.params = vec![
        ("buckets".into(), buckets_param(party.buckets)),
        ("parallel".into(), party.buckets.parallel.to_string()),
    ];
    cfg.params.extend(extra.iter().cloned());
    cfg.params.extend(opts.key_params.iter().cloned());
    cfg
}

/// The handshake's value of B.
fn buckets_param(b: Buckets) -> String {
    if b.auto() {
        "auto".to_owned()
    } else {
        b.count.to_string()
    }
}

/// For `--buckets auto`: sends our proposal of B and receives the peer's (the receiver's
/// first); the run takes the larger.
pub fn agree_buckets<C: Channel + ?Sized>(ch: &mut C, receiver: bool, mine: u32) -> CliResult<u32> {
    let peer: u32 = if receiver {
        send_msg(ch, MSG_RECEIVER_BUCKETS, &mine)?;
        recv_msg(ch, MSG_SENDER_BUCKETS, 16)?
    } else {
        let peer = recv_msg(ch, MSG_RECEIVER_BUCKETS, 16)?;
        send_msg(ch, MSG_SENDER_BUCKETS, &mine)?;
        peer
    };
    if peer == 0 || peer > MAX_AUTO_BUCKETS {
        return Err(Error::Malformed {
            message: if receiver {
                MSG_SENDER_BUCKETS
            } else {
                MSG_RECEIVER_BUCKETS
            },
            reason: format!("{peer} buckets; at most {MAX_AUTO_BUCKETS} may be proposed"),
        }
        .into());
    }
    Ok(mine.max(peer))
}

/// Step 1: the run handshake on `ch` (parameters `extra` besides B, K, κ, λ and the key
/// parameters). Returns the run's session (its id is the run id) and the partition it keys.
pub fn start<C: Channel + ?Sized>(
    ch: &mut C,
    party: &Party<'_>,
    extra: &[(String, String)],
) -> CliResult<(Session, Partition)> {
    start_with(ch, party, extra, &mut rand::rng())
}

/// [`start`] with the handshake's nonce drawn from `rng` (the fuzz targets' seeded one).
pub fn start_with<C: Channel + ?Sized>(
    ch: &mut C,
    party: &Party<'_>,
    extra: &[(String, String)],
    rng: &mut impl rand::CryptoRng,
) -> CliResult<(Session, Partition)> {
    let session = handshake(ch, &run_config(party, extra), rng)?;
    let key = session
        .block("blindjoin/bucketed run/partition key")
        .to_bytes();
    let partition = Partition::new(key, party.buckets.count);
    Ok((session, partition))
}

/// The hex run id of a run's session.
pub fn run_id(session: &Session) -> String {
    hex(&session.id)
}

/// Step 2: lane `w`'s handshake on a new connection, naming the run and the lane.
pub fn open_lane(
    link: Link,
    role: Role,
    run_id: &str,
    w: usize,
) -> CliResult<Transcript<Metered<Link>>> {
    open_lane_on(link, role, run_id, w, &mut rand::rng())
}

/// [`open_lane`] on any channel, with the handshake's nonce drawn from `rng` (the fuzz
/// targets' lanes are in-memory channels with a seeded RNG).
pub fn open_lane_on<C: Channel>(
    ch: C,
    role: Role,
    run_id: &str,
    w: usize,
    rng: &mut impl rand::CryptoRng,
) -> CliResult<Transcript<Metered<C>>> {
    let mut lane = Transcript::new(Metered::new(ch));
    let mut cfg = SessionConfig::new("bucketed lane", role, 0);
    cfg.params = vec![
        ("run".into(), run_id.to_owned()),
        ("lane".into(), w.to_string()),
    ];
    cfg.expected_peer_set_size = Some(0);
    handshake(&mut lane, &cfg, rng)?;
    Ok(lane)
}

/// What both parties of a run know once the sizes are exchanged: each bucket session's
/// options and the public maxima.
#[derive(Clone)]
pub struct Plan {
    /// How the run is split.
    pub buckets: Buckets,
    /// This party's public bucket maximum.
    pub own_max: u64,
    /// The peer's public bucket maximum.
    pub peer_max: u64,
    /// The options of every bucket's session (λ + ⌈log2 B⌉, the peer size fixed to its
    /// maximum, the run id as a key parameter).
    opts: RunOptions,
}

impl Plan {
    /// The plan of a run with id `run_id` whose maxima are `own_max` and `peer_max`.
    pub fn new(
        opts: &RunOptions,
        run_id: &str,
        buckets: Buckets,
        own_max: u64,
        peer_max: u64,
    ) -> Plan {
        let mut o = opts.clone();
        o.on_session = None;
        o.progress = None;
        o.expected_peer_set_size = Some(peer_max);
        // The run bounded the receiver's queries over all buckets (`agree`); a bucket's session
        // accepts its pinned size whatever that size's budget.
        o.max_peer_set_size = u64::MAX;
        o.lambda = opts.lambda + buckets.count.next_power_of_two().trailing_zeros();
        o.key_params.push(("run".to_owned(), run_id.to_owned()));
        Plan {
            buckets,
            own_max,
            peer_max,
            opts: o,
        }
    }

    /// The buckets lane `w` runs, in order: w, w + K, w + 2K, …
    pub fn lane_buckets(&self, w: usize) -> impl Iterator<Item = usize> + use<> {
        (w..self.buckets.count as usize).step_by(self.buckets.parallel)
    }
}

/// Step 3: sends our distinct count `n` and receives the peer's (the receiver's first), checks
/// the peer's against the bounds and our buckets' `counts` against our public maximum, and
/// records both sizes in `session`. Returns the run's [`Plan`].
pub fn agree<C: Channel + ?Sized>(
    ch: &mut C,
    party: &Party<'_>,
    session: &mut Session,
    n: u64,
    counts: &dyn Fn(usize) -> u64,
) -> CliResult<Plan> {
    let Party {
        receiver,
        opts,
        buckets: b,
        max_peer,
        ..
    } = *party;
    let peer_n: u64 = if receiver {
        send_msg(ch, MSG_RECEIVER_SIZE, &n)?;
        recv_msg(ch, MSG_SENDER_SIZE, 16)?
    } else {
        let peer = recv_msg(ch, MSG_RECEIVER_SIZE, 16)?;
        send_msg(ch, MSG_SENDER_SIZE, &n)?;
        peer
    };
    let peer_role = if receiver { "sender" } else { "receiver" };
    let max_peer =
        max_peer.unwrap_or_else(|| default_max_queries(party.protocol, n, b.count, opts));
    // The sender bounds what the receiver can test: every bucket padded to its public
    // maximum, each a session of the protocol's query budget.
    let tested = if receiver {
        peer_n
    } else {
        receiver_queries(party.protocol, (peer_n, n), b.count, opts)
    };
    if tested > max_peer {
        return Err(Error::ParamMismatch {
            field: format!("{peer_role} set size"),
            ours: if tested > peer_n {
                format!(
                    "a receiver that can test at most {max_peer} guessed keys (this one could \
                     test {tested} in {} buckets of {})",
                    b.count, party.protocol.name
                )
            } else {
                format!("at most {max_peer}")
            },
            peer: peer_n.to_string(),
        }
        .into());
    }
    if let Some(expected) = opts.expected_peer_set_size
        && peer_n != expected
    {
        return Err(Error::ParamMismatch {
            field: format!("{peer_role} set size"),
            ours: expected.to_string(),
            peer: peer_n.to_string(),
        }
        .into());
    }
    (session.receiver_size, session.sender_size) = if receiver { (n, peer_n) } else { (peer_n, n) };
    if let Some(hook) = &opts.on_session {
        hook(session);
    }
    let lambda = f64::from(opts.lambda);
    let own_max = max_load(n, b.count, lambda);
    let peer_max = max_load(peer_n, b.count, lambda);
    if let Some(p) = (0..b.count as usize).find(|&p| counts(p) > own_max) {
        return Err(Error::InvalidParam {
            field: "buckets",
            reason: format!(
                "bucket {p} holds {} items, more than the public maximum of {own_max} \
                 (which happens with probability below 2^-{}); run again for another partition",
                counts(p),
                opts.lambda
            ),
        }
        .into());
    }
    Ok(Plan::new(opts, &run_id(session), b, own_max, peer_max))
}

/// Step 4, one bucket: runs bucket `p`'s session on `ch` with `items` (bucket p's distinct
/// items, at most the public maximum) and random dummies up to the maximum. Returns the
/// receiver's matched positions in `items` (ascending; empty for the sender).
pub fn bucket_session(
    ch: &mut dyn Channel,
    protocol: &Protocol,
    receiver: bool,
    plan: &Plan,
    p: usize,
    items: &mut Vec<Item>,
) -> CliResult<Vec<usize>> {
    run_bucket(ch, protocol, receiver, plan, None, p, items).map(|(positions, _)| positions)
}

/// The base-OT pool of lane `w` of a run (see [`blindjoin_ot::ext::base_pool`]): keyed by the
/// run's session and the lane; the receiver leads.
fn lane_base_ots(session: &Session, w: usize, receiver: bool) -> Arc<BasePool> {
    let mut sid = [0u8; 32];
    for (half, out) in sid.chunks_mut(16).enumerate() {
        let label = format!("blindjoin/bucketed run/base OT pool/lane {w}/{half}");
        out.copy_from_slice(&session.block(&label).to_bytes());
    }
    Arc::new(BasePool::new(sid, receiver))
}

/// [`bucket_session`], also giving the id of the bucket's session.
fn run_bucket(
    ch: &mut dyn Channel,
    protocol: &Protocol,
    receiver: bool,
    plan: &Plan,
    pool: Option<&Arc<BasePool>>,
    p: usize,
    items: &mut Vec<Item>,
) -> CliResult<(Vec<usize>, [u8; 32])> {
    let mut rng = rand::rng();
    let real = items.len();
    if real as u64 > plan.own_max {
        return Err(CliError::Usage(format!(
            "bucket {p} holds {real} items, more than its public maximum of {}",
            plan.own_max
        )));
    }
    items.extend(dummies((plan.own_max - real as u64) as usize, &mut rng));
    let mut o = plan.opts.clone();
    o.key_params.push(("bucket".to_owned(), p.to_string()));
    o.base_pool = pool.cloned();
    let result = if receiver {
        protocol.receive(ch, items, &o, &mut rng).map(|out| {
            let positions = out.indices.into_iter().filter(|&i| i < real).collect();
            (positions, out.session.id)
        })
    } else {
        protocol
            .send(ch, items, &o, &mut rng)
            .map(|out| (Vec::new(), out.session.id))
    };
    items.truncate(real);
    Ok(result?)
}

/// The buckets `bits` marks (bit p % 8 of byte p / 8), of `buckets`.
fn unpack(bits: &[u8], buckets: usize) -> Vec<bool> {
    (0..buckets)
        .map(|p| bits[p / 8] & (1 << (p % 8)) != 0)
        .collect()
}

/// `buckets` as a list for a line: "bucket 3", "buckets 3, 7", the first 20 and how many more.
pub fn bucket_list(buckets: &[usize]) -> String {
    const SHOWN: usize = 20;
    let shown: Vec<String> = buckets.iter().take(SHOWN).map(|p| p.to_string()).collect();
    let more = buckets.len().saturating_sub(SHOWN);
    let noun = if buckets.len() == 1 {
        "bucket"
    } else {
        "buckets"
    };
    if more == 0 {
        format!("{noun} {}", shown.join(", "))
    } else {
        format!("{noun} {} and {more} more", shown.join(", "))
    }
}

/// What a resumed run does with the buckets of the run it resumes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resumed {
    /// Both parties recorded the bucket: its result is kept.
    pub kept: Vec<bool>,
    /// The sender recorded it and the receiver did not: served again (`--allow-rerun`).
    pub rerun: Vec<usize>,
}

/// Exchanges which buckets each party of a resumed run has recorded (the receiver's first;
/// the sender answers with its own and whether it serves again what only it recorded). The
/// sender's record is authoritative ([`crate::rundir`]): a bucket it recorded and the receiver
/// did not is served again only if the sender allows it (`allow_rerun`, the sender's); else
/// both parties end here, with errors naming the buckets.
pub fn agree_finished<C: Channel + ?Sized>(
    ch: &mut C,
    receiver: bool,
    mine: &[bool],
    allow_rerun: bool,
) -> CliResult<Resumed> {
    let mut bits = vec![0u8; mine.len().div_ceil(8)];
    for (p, &f) in mine.iter().enumerate() {
        if f {
            bits[p / 8] |= 1 << (p % 8);
        }
    }
    let limit = bits.len() + 16;
    let wrong_length = |message: &'static str, len: usize| -> CliError {
        Error::Malformed {
            message,
            reason: format!("{len} bytes for {} buckets", mine.len()),
        }
        .into()
    };
    let (theirs, allowed) = if receiver {
        send_msg(ch, MSG_RECEIVER_FINISHED, &bits)?;
        let (peer, allowed): (Vec<u8>, bool) = recv_msg(ch, MSG_SENDER_FINISHED, limit)?;
        if peer.len() != bits.len() {
            return Err(wrong_length(MSG_SENDER_FINISHED, peer.len()));
        }
        (peer, allowed)
    } else {
        let peer: Vec<u8> = recv_msg(ch, MSG_RECEIVER_FINISHED, limit)?;
        if peer.len() != bits.len() {
            return Err(wrong_length(MSG_RECEIVER_FINISHED, peer.len()));
        }
        send_msg(ch, MSG_SENDER_FINISHED, &(&bits, allow_rerun))?;
        (peer, allow_rerun)
    };
    let theirs = unpack(&theirs, mine.len());
    let (sent, got) = if receiver {
        (&theirs[..], mine)
    } else {
        (mine, &theirs[..])
    };
    let kept = (0..mine.len()).map(|p| sent[p] && got[p]).collect();
    let rerun: Vec<usize> = (0..mine.len()).filter(|&p| sent[p] && !got[p]).collect();
    if !rerun.is_empty() && !allowed {
        let list = bucket_list(&rerun);
        return Err(CliError::Usage(if receiver {
            format!(
                "the sender refuses to serve {list} again: it served them before and this side \
                 has no record of them, so this side would query them twice; the sender may \
                 pass --allow-rerun to serve them again, or start a new run"
            )
        } else {
            format!(
                "the receiver has no record of {list}, which this side served: serving them \
                 again would let the receiver query them twice; pass --allow-rerun to serve \
                 them again, or start a new run"
            )
        }));
    }
    Ok(Resumed { kept, rerun })
}

/// The end of a lane other than the run's first connection: the transcript confirmation of
/// [`blindjoin_core::finish`] (the receiver's verdict included).
pub fn end_lane<C: Channel>(ch: &mut Transcript<Metered<C>>, receiver: bool) -> CliResult<()> {
    if receiver {
        finish::receiver_confirm(ch, None)?;
        finish::receiver_final(ch, None)?;
    } else {
        finish::sender_confirm(ch)?;
    }
    Ok(())
}

/// This party's proposal of B for `--buckets auto` from `estimate` items and its memory
/// budget ([`propose`]).
fn proposal(party: &Party<'_>, estimate: u64) -> CliResult<u32> {
    let per_item = session_bytes_per_item(party.protocol.name);
    let lambda = f64::from(party.opts.lambda);
    let parallel = party.buckets.parallel;
    match party.opts.memory_budget {
        None => Ok((parallel as u32).next_power_of_two()),
        Some(budget) => propose(estimate, per_item, parallel, budget, lambda).map_err(|need| {
            CliError::Usage(format!(
                "--memory {} MiB cannot hold {parallel} bucket session(s) of {estimate} keys \
                 split {MAX_AUTO_BUCKETS} ways ({} MiB needed); give more memory or fewer \
                 --parallel",
                budget >> 20,
                need.div_ceil(1 << 20)
            ))
        }),
    }
}

/// The run directory, locked.
fn lock(d: &Mutex<RunDir>) -> CliResult<std::sync::MutexGuard<'_, RunDir>> {
    d.lock()
        .map_err(|_| CliError::Usage("the run directory's state was lost".into()))
}

/// Runs one party's bucketed run: the run handshake on `ch` (lane 0), `open_lane` for each
/// further lane (called K − 1 times, in order), `split` to partition this party's items, then
/// the buckets (see the [module doc](self)). `estimate` is this party's number of distinct
/// items, or an estimate from which `--buckets auto` proposes B. With `resume`, the run is
/// resumable, or resumes the run the directory holds ([`crate::rundir`]; `split` must then
/// reopen its spill). The caller ends lane 0 with the run's confirmation, as after one
/// session.
pub fn run<'a, C: Channel>(
    ch: &mut C,
    open_link: &mut dyn FnMut() -> CliResult<Link>,
    estimate: u64,
    split: impl FnOnce(&Partition) -> CliResult<Box<dyn Split + 'a>>,
    party: &Party<'_>,
    resume: Option<&Mutex<RunDir>>,
) -> CliResult<Outcome> {
    let (protocol, receiver, mut b) = (party.protocol, party.receiver, party.buckets);
    let resumed = match resume {
        Some(d) => {
            let d = lock(d)?;
            d.resuming()
                .map(|(s, r)| -> CliResult<_> { Ok((s.clone(), r.clone(), key_of(s, d.path())?)) })
                .transpose()?
        }
        None => None,
    };
    if let Some((_, r, _)) = &resumed {
        let differs = |field: &str, now: String, then: String| {
            CliError::Usage(format!(
                "{field} is {now}, but the run being resumed has {then}; resume with the \
                 same, or remove the run directory to start a new run"
            ))
        };
        if !b.auto() && r.buckets != b.count {
            return Err(differs(
                "--buckets",
                b.count.to_string(),
                r.buckets.to_string(),
            ));
        }
        if r.protocol != protocol.name {
            return Err(differs(
                "the protocol",
                protocol.name.to_owned(),
                r.protocol.clone(),
            ));
        }
        if r.receiver != receiver {
            let role = |r: bool| if r { "receive" } else { "send" }.to_owned();
            return Err(differs("the role", role(receiver), role(r.receiver)));
        }
    }
    let mut phases = Vec::new();
    let t = Instant::now();
    // Every lane's semi-honest sessions draw their base OTs from one extension per lane.
    let mut extra = vec![("base_ots".to_owned(), "lane-iknp".to_owned())];
    if let Some((_, r, _)) = &resumed {
        extra.push(("resume".to_owned(), r.run_id.clone()));
    }
    let (mut session, mut partition) = start(ch, party, &extra)?;
    if b.auto() {
        let mine = match &resumed {
            Some((_, r, _)) => r.buckets,
            None => proposal(party, estimate)?,
        };
        b.count = agree_buckets(ch, receiver, mine)?;
        if let Some((_, r, _)) = &resumed
            && r.buckets != b.count
        {
            return Err(CliError::Usage(format!(
                "the peer proposes {} buckets, but the run being resumed has {}",
                b.count, r.buckets
            )));
        }
        partition = Partition::new(partition.key(), b.count);
    }
    if let Some((_, _, key)) = &resumed {
        partition = Partition::new(*key, b.count);
    }
    let party = &Party {
        buckets: b,
        ..*party
    };
    let id = run_id(&session);
    let mut lanes = Vec::with_capacity(b.parallel.saturating_sub(1));
    for w in 1..b.parallel {
        lanes.push(open_lane(open_link()?, session.role, &id, w)?);
    }
    phases.push((
        "run handshake and lanes".to_owned(),
        t.elapsed().as_secs_f64(),
    ));

    // Partition, then the sizes.
    let t = Instant::now();
    let split = split(&partition)?;
    phases.push(("partition".to_owned(), t.elapsed().as_secs_f64()));
    let n = split.distinct();
    let plan = agree(ch, party, &mut session, n, &|p| split.count(p))?;
    let peer_n = if receiver {
        session.sender_size
    } else {
        session.receiver_size
    };
    let dummy_count = plan.own_max * u64::from(b.count) - n;

    // A resumed run keeps the buckets both parties recorded, and serves again those only the
    // sender recorded only if the sender allows it; a new resumable run records itself.
    let mut kept = vec![false; b.count as usize];
    let mut rerun = Vec::new();
    if let Some(d) = resume {
        let mut d = lock(d)?;
        match &resumed {
            Some((_, r, _)) => {
                if (r.n, r.peer_n) != (n, peer_n) {
                    return Err(CliError::Usage(format!(
                        "the distinct items are {n} here and {peer_n} at the peer, but the \
                         run being resumed had {} and {}",
                        r.n, r.peer_n
                    )));
                }
                let agreed = agree_finished(ch, receiver, &d.finished(b.count), d.allow_rerun())?;
                if !agreed.rerun.is_empty() {
                    let list = bucket_list(&agreed.rerun);
                    d.note(&if receiver {
                        format!(
                            "the sender serves {list} again (its --allow-rerun): this side has \
                             no record of them"
                        )
                    } else {
                        format!(
                            "serving {list} again (--allow-rerun): this side served them \
                             before, and the receiver has no record of them"
                        )
                    });
                }
                kept = agreed.kept;
                rerun = agreed.rerun;
            }
            None => d.save_run(RunState {
                run_id: id.clone(),
                protocol: protocol.name.to_owned(),
                receiver,
                buckets: b.count,
                n,
                peer_n,
            })?,
        }
    }
    let todo: Vec<usize> = (0..b.count as usize).filter(|&p| !kept[p]).collect();

    let t = Instant::now();
    let threads = (rayon::current_num_threads() / b.parallel).max(1);
    let split = &*split;
    let plan = &plan;
    let todo = &todo;
    let session_ref = &session;
    // Progress counts buckets, kept ones included (a bucket's session reports nothing).
    let done = std::sync::atomic::AtomicU64::new(b.count as u64 - todo.len() as u64);
    let tick = |n: u64| {
        if let Some(progress) = &party.opts.progress {
            progress("buckets", n, u64::from(b.count));
        }
    };
    tick(done.load(std::sync::atomic::Ordering::Relaxed));
    let run_lane = |ch: &mut dyn Channel, w: usize| -> CliResult<(Vec<u64>, u64)> {
        let mut found = Vec::new();
        let mut matched = 0u64;
        let pool = lane_base_ots(session_ref, w, receiver);
        for &p in todo.iter().skip(w).step_by(b.parallel) {
            let mut bucket = split.load(p)?;
            // The sender records a bucket before serving it: from here on the receiver may
            // learn its result, however the session ends.
            if let Some(d) = resume
                && !receiver
            {
                lock(d)?.record(
                    p,
                    &Finished {
                        session: [0; 32],
                        matched: 0,
                        values: Vec::new(),
                    },
                )?;
            }
            let (positions, bucket_id) = run_bucket(
                ch,
                protocol,
                receiver,
                plan,
                Some(&pool),
                p,
                &mut bucket.items,
            )?;
            let start = found.len();
            bucket.values_at(&positions, &mut found);
            matched += positions.len() as u64;
            tick(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
            if let Some(d) = resume
                && receiver
            {
                lock(d)?.record(
                    p,
                    &Finished {
                        session: bucket_id,
                        matched: positions.len() as u64,
                        values: found[start..].to_vec(),
                    },
                )?;
            }
        }
        Ok((found, matched))
    };
    let (mut found, mut matched_items) = std::thread::scope(|s| -> CliResult<(Vec<u64>, u64)> {
        let others: Vec<_> = lanes
            .iter_mut()
            .enumerate()
            .map(|(k, lane)| {
                let run_lane = &run_lane;
                s.spawn(move || -> CliResult<(Vec<u64>, u64)> {
                    let pool = lane_pool(threads)?;
                    let found = pool.install(|| run_lane(lane, k + 1))?;
                    end_lane(lane, receiver)?;
                    Ok(found)
                })
            })
            .collect();
        let first = if b.parallel > 1 {
            let pool = lane_pool(threads)?;
            pool.install(|| run_lane(ch, 0))
        } else {
            run_lane(ch, 0)
        };
        let (mut all, mut matched) = first?;
        for h in others {
            match h.join() {
                Ok(r) => {
                    let (f, m) = r?;
                    all.extend(f);
                    matched += m;
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok((all, matched))
    })?;
    let kept_count = kept.iter().filter(|&&k| k).count() as u64;
    if let Some(d) = resume {
        let d = lock(d)?;
        for p in (0..b.count as usize).filter(|&p| kept[p]) {
            let rec = d.load(p)?;
            matched_items += rec.matched;
            found.extend(rec.values);
        }
    }
    phases.push(("buckets".to_owned(), t.elapsed().as_secs_f64()));
    found.sort_unstable();
    let mut other_lanes = Traffic::default();
    for lane in &lanes {
        other_lanes += lane.get_ref().traffic();
    }
    Ok(Outcome {
        session,
        matches: receiver.then_some(found),
        matched_items,
        phases,
        buckets: b,
        dummies: dummy_count,
        kept: kept_count,
        rerun: rerun.into_iter().map(|p| p as u32).collect(),
        other_lanes,
        lanes,
    })
}
