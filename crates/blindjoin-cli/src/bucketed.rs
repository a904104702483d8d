//! A two-party run split into buckets (`send`/`receive --buckets B [--parallel K]`): DCW13
//! §6.4's scale-out, with the buckets padded to a public maximum ([`crate::bucket`]).
//!
//! **Flow**, after the connection (lane 0) is open:
//!
//! 1. **Run handshake** on lane 0: the ordinary session handshake
//!    ([`blindjoin_core::handshake`]) under the protocol id `bucketed/<protocol>`, with B, K,
//!    κ, λ, the key parameters and each party's real number of distinct items. Its session id
//!    is the run id; the partition key is derived from it.
//! 2. **Lanes**: with K > 1 the connector opens K − 1 more connections one after the other and
//!    the listener accepts them in that order; each starts with a handshake naming the run id
//!    and its lane number, so a crossed or foreign connection is refused.
//! 3. **Partition**: each party maps its items to buckets ([`Partition`]) and checks that no
//!    bucket holds more than its public maximum ([`max_load`] of its own n; the run stops with
//!    an error naming the bucket if one does, with probability at most 2^-λ).
//! 4. **Buckets**: lane w runs buckets w, w + K, w + 2K, … in order, each an ordinary session of
//!    the protocol on the bucket's items and random dummies up to the maximum, with the peer's
//!    set size required to be the peer's maximum, and the run id and bucket number as
//!    handshake parameters. A bucket's session runs with λ + ⌈log2 B⌉, so that a false match
//!    in any of the B sessions has probability at most 2^-λ, as in one session.
//! 5. **Result**: the receiver's matches at real items (a match at a dummy's position is
//!    dropped), mapped back to its items, are the union. Lanes 1.. end with the transcript
//!    confirmation of [`blindjoin_core::finish`]; lane 0 carries the run's confirmation and
//!    final verdict, after the output is in place, as a single session does.
//!
//! **Leakage.** The peer learns B, K and our number of distinct items, as it learns the latter
//! in one session; every bucket's announced size is the public maximum. A run that would need
//! more than the maximum in a bucket fails rather than announce it. An aggregate result
//! (cardinality, sum) would be learned per bucket, so it is refused with buckets.
//!
//! **Cost.** Padding adds B · max − n dummies per party (the report gives them); at 2^20 items
//! in 16 buckets the maximum is 2.8 % above the mean.

use crate::bucket::{Partition, dummies, max_load};
use crate::error::{CliError, CliResult};
use crate::report::hex;
use blindjoin_core::channel::Channel;
use blindjoin_core::channel::metered::{Metered, Traffic};
use blindjoin_core::channel::transcript::Transcript;
use blindjoin_core::handshake::{Role, Session, SessionConfig, handshake};
use blindjoin_core::item::Item;
use blindjoin_core::transport::Link;
use blindjoin_core::{Error, finish};
use blindjoin_psi::{Protocol, ResultKind, RunOptions};
use std::time::Instant;

/// How a run is split: `count` buckets over `parallel` connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buckets {
    /// Number of buckets, B (1: one ordinary session).
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
    /// Whether the run is split at all.
    pub fn split(&self) -> bool {
        self.count > 1
    }

    /// Refuses what a bucketed run cannot do, before anything is read or connected.
    pub fn check(&self, opts: &RunOptions) -> CliResult<()> {
        if self.count == 0 || self.parallel == 0 {
            return Err(CliError::Usage(
                "--buckets and --parallel must be at least 1".into(),
            ));
        }
        if self.parallel > 1 && !self.split() {
            return Err(CliError::Usage("--parallel needs --buckets above 1".into()));
        }
        if self.parallel as u64 > u64::from(self.count) {
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
    /// The receiver's matched items (indices into its items, ascending); `None` for the sender.
    pub indices: Option<Vec<usize>>,
    /// Seconds per phase.
    pub phases: Vec<(String, f64)>,
    /// The dummies this party added (B · max − n).
    pub dummies: u64,
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

/// The handshake parameter naming a bucketed run.
fn run_config(
    protocol: &Protocol,
    receiver: bool,
    n: u64,
    b: Buckets,
    opts: &RunOptions,
) -> SessionConfig {
    let role = if receiver {
        Role::Receiver
    } else {
        Role::Sender
    };
    let mut cfg = SessionConfig::new(&format!("bucketed/{}", protocol.name), role, n);
    cfg.kappa = opts.kappa;
    cfg.lambda = opts.lambda;
    cfg.max_peer_set_size = opts.max_peer_set_size;
    cfg.expected_peer_set_size = opts.expected_peer_set_size;
    cfg.params = vec![
        ("buckets".into(), b.count.to_string()),
        ("parallel".into(), b.parallel.to_string()),
    ];
    cfg.params.extend(opts.key_params.iter().cloned());
    cfg
}

/// Runs one party's bucketed run: the run handshake on `ch` (lane 0), `open_lane` for each
/// further lane (called K − 1 times, in order), then the buckets (see the [module doc](self)).
/// The caller ends lane 0 with the run's confirmation, as after one session.
pub fn run<C: Channel>(
    ch: &mut C,
    open_lane: &mut dyn FnMut() -> CliResult<Link>,
    protocol: &'static Protocol,
    receiver: bool,
    items: &[Item],
    opts: &RunOptions,
    b: Buckets,
) -> CliResult<Outcome> {
    let mut phases = Vec::new();
    let t = Instant::now();
    let mut rng = rand::rng();
    let session = handshake(
        ch,
        &run_config(protocol, receiver, items.len() as u64, b, opts),
        &mut rng,
    )?;
    if let Some(hook) = &opts.on_session {
        hook(&session);
    }
    let run_id = hex(&session.id);
    let mut lanes = Vec::with_capacity(b.parallel.saturating_sub(1));
    for w in 1..b.parallel {
        let mut lane = Transcript::new(Metered::new(open_lane()?));
        let mut cfg = SessionConfig::new("bucketed lane", session.role, 0);
        cfg.params = vec![
            ("run".into(), run_id.clone()),
            ("lane".into(), w.to_string()),
        ];
        cfg.expected_peer_set_size = Some(0);
        handshake(&mut lane, &cfg, &mut rng)?;
        lanes.push(lane);
    }
    phases.push((
        "run handshake and lanes".to_owned(),
        t.elapsed().as_secs_f64(),
    ));

    // Partition and pad.
    let t = Instant::now();
    let key = session
        .block("blindjoin/bucketed run/partition key")
        .to_bytes();
    let partition = Partition::new(key, b.count);
    let mut assigned = vec![0u32; items.len()];
    partition.assign(items, &mut assigned);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); b.count as usize];
    for (i, &p) in assigned.iter().enumerate() {
        members[p as usize].push(i);
    }
    drop(assigned);
    let lambda = f64::from(opts.lambda);
    let own_max = max_load(items.len() as u64, b.count, lambda);
    let peer_max = max_load(session.peer_size(), b.count, lambda);
    if let Some((p, m)) = members
        .iter()
        .enumerate()
        .find(|(_, m)| m.len() as u64 > own_max)
    {
        return Err(Error::InvalidParam {
            field: "buckets",
            reason: format!(
                "bucket {p} holds {} items, more than the public maximum of {own_max} \
                 (which happens with probability below 2^-{}); run again for another partition",
                m.len(),
                opts.lambda
            ),
        }
        .into());
    }
    let dummy_count = own_max * u64::from(b.count) - items.len() as u64;
    phases.push(("partition".to_owned(), t.elapsed().as_secs_f64()));

    let mut bucket_opts = opts.clone();
    bucket_opts.on_session = None;
    bucket_opts.progress = None;
    bucket_opts.expected_peer_set_size = Some(peer_max);
    bucket_opts.max_peer_set_size = peer_max;
    bucket_opts.lambda = opts.lambda + b.count.next_power_of_two().trailing_zeros();
    bucket_opts
        .key_params
        .push(("run".to_owned(), run_id.clone()));

    let t = Instant::now();
    let threads = (rayon::current_num_threads() / b.parallel).max(1);
    let run_lane = |ch: &mut dyn Channel, w: usize| -> CliResult<Vec<usize>> {
        let mut rng = rand::rng();
        let mut found = Vec::new();
        for p in (w..b.count as usize).step_by(b.parallel) {
            let real = &members[p];
            let mut set: Vec<Item> = real.iter().map(|&i| items[i]).collect();
            set.extend(dummies((own_max - real.len() as u64) as usize, &mut rng));
            let mut o = bucket_opts.clone();
            o.key_params.push(("bucket".to_owned(), p.to_string()));
            if receiver {
                let out = protocol.receive(ch, &set, &o, &mut rng)?;
                found.extend(
                    out.indices
                        .into_iter()
                        .filter(|&i| i < real.len())
                        .map(|i| real[i]),
                );
            } else {
                protocol.send(ch, &set, &o, &mut rng)?;
            }
        }
        Ok(found)
    };
    let mut found = std::thread::scope(|s| -> CliResult<Vec<usize>> {
        let others: Vec<_> = lanes
            .iter_mut()
            .enumerate()
            .map(|(k, lane)| {
                let run_lane = &run_lane;
                s.spawn(move || -> CliResult<Vec<usize>> {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .map_err(|e| {
                            CliError::Usage(format!("cannot start the worker threads: {e}"))
                        })?;
                    let found = pool.install(|| run_lane(lane, k + 1))?;
                    if receiver {
                        finish::receiver_confirm(lane, None)?;
                        finish::receiver_final(lane, None)?;
                    } else {
                        finish::sender_confirm(lane)?;
                    }
                    Ok(found)
                })
            })
            .collect();
        let first = if b.parallel > 1 {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| CliError::Usage(format!("cannot start the worker threads: {e}")))?;
            pool.install(|| run_lane(ch, 0))
        } else {
            run_lane(ch, 0)
        };
        let mut all = first?;
        for h in others {
            match h.join() {
                Ok(r) => all.extend(r?),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok(all)
    })?;
    phases.push(("buckets".to_owned(), t.elapsed().as_secs_f64()));
    found.sort_unstable();
    let mut other_lanes = Traffic::default();
    for lane in &lanes {
        let t = lane.get_ref().traffic();
        other_lanes.bytes_sent += t.bytes_sent;
        other_lanes.bytes_received += t.bytes_received;
        other_lanes.frames_sent += t.frames_sent;
        other_lanes.frames_received += t.frames_received;
        other_lanes.flights_sent += t.flights_sent;
    }
    Ok(Outcome {
        session,
        indices: receiver.then_some(found),
        phases,
        dummies: dummy_count,
        other_lanes,
        lanes,
    })
}
