//! The server-aided PSI targets (`kmrs_semi`, KMRS14): the server ([`fuzz_aided_server`]), a
//! client's exchange with the server ([`fuzz_aided_client`]) and the key agreement between
//! the clients ([`fuzz_aided_key`]).
//!
//! Their honest parties replay what the same parties received or sent in a real run, recorded
//! once per process ([`recording`]): 2 or 3 clients (`Protocol::client` with seeded RNGs and
//! fixed items) and a real [`Server`], over in-memory channels. A client is a function of its
//! RNG seed, its items and the frames it receives, so a client of the target with the same
//! seed and items sends the same hello as in the recorded run, and the recorded frames of its
//! peers fit it.

use crate::Outcome;
use crate::frames::split;
use crate::peer::{queued, rng};
use crate::seeds::Recorder;
use crate::targets::{items, outcome};
use blindjoin_core::channel::memory::{MemoryChannel, memory_pair};
use blindjoin_core::channel::{Channel, FrameSender, recv_msg};
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use blindjoin_psi::RunOptions;
use blindjoin_psi::protocols::server_aided::client::{AidedLinks, Peers};
use blindjoin_psi::protocols::server_aided::kmrs_semi::PROTOCOL;
use blindjoin_psi::protocols::server_aided::server::{Server, ServerConfig};
use blindjoin_psi::protocols::server_aided::store::MemoryStore;
use blindjoin_psi::protocols::server_aided::wire::{
    MAX_SUBMIT_LEN, MSG_STATUS, MSG_SUBMIT, Status, Submit, recv_status,
};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A client of a recorded run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AidedCase {
    /// Its party index, 1-based.
    pub(crate) party: u32,
    /// The run's number of clients.
    pub(crate) parties: u32,
}

/// The clients that `aided_client` and `aided_key` put under test, by selector byte modulo 5:
/// P2 and P1 of 2, P2, P3 and P1 of 3.
pub(crate) const CLIENT_CASES: [AidedCase; 5] = [
    AidedCase {
        party: 2,
        parties: 2,
    },
    AidedCase {
        party: 1,
        parties: 2,
    },
    AidedCase {
        party: 2,
        parties: 3,
    },
    AidedCase {
        party: 3,
        parties: 3,
    },
    AidedCase {
        party: 1,
        parties: 3,
    },
];

/// The fuzzed client of `aided_server`, by selector byte modulo 5: the four clients of
/// [`CLIENT_CASES`] whose other parties are honest (P2 and P1 of 2, P3 and P1 of 3), or
/// (`None`) a client alone on the server.
pub(crate) const SERVER_CASES: [Option<AidedCase>; 5] = [
    Some(AidedCase {
        party: 2,
        parties: 2,
    }),
    Some(AidedCase {
        party: 1,
        parties: 2,
    }),
    Some(AidedCase {
        party: 3,
        parties: 3,
    }),
    Some(AidedCase {
        party: 1,
        parties: 3,
    }),
    None,
];

/// The run id of the recorded run of `parties` clients.
pub(crate) fn run_id(parties: u32) -> String {
    format!("fuzz-{parties}")
}

/// The items of client `party` (13, 21 and 8 items; all three hold `key-5` to `key-10`).
pub(crate) fn client_items(party: u32) -> Vec<Item> {
    match party {
        1 => items(13, 0),
        2 => items(21, 5),
        _ => items(8, 3),
    }
}

/// Runs client `party` of `parties` (its [`client_items`], RNG seed `party`) on its links to
/// the other clients (P1: one per other client, in party order; the others: the one to P1) and
/// its connection to the server.
pub(crate) fn run_client<C: Channel>(
    case: AidedCase,
    links: &mut [C],
    server: &mut dyn Channel,
) -> Result<()> {
    let peers = if case.party == 1 {
        Peers::Leader(links.iter_mut().map(|c| c as &mut dyn Channel).collect())
    } else {
        let Some(link) = links.first_mut() else {
            return Err(Error::InvalidParam {
                field: "peers",
                reason: "no link to P1".to_owned(),
            });
        };
        Peers::Member(link)
    };
    let mut links = AidedLinks::new(
        run_id(case.parties),
        (case.party, case.parties),
        peers,
        server,
    );
    PROTOCOL
        .client(
            &mut links,
            &client_items(case.party),
            &RunOptions::default(),
            &mut rng(u64::from(case.party)),
        )
        .map(|_| ())
}

/// What every endpoint of a real run received (index: party − 1).
pub(crate) struct Recording {
    /// The frames the server received from each client: submit hello, labels, receipt.
    pub(crate) to_server: Vec<Vec<Vec<u8>>>,
    /// The frames each client received from the server: statuses (without `Waiting`) and bit
    /// vector.
    pub(crate) from_server: Vec<Vec<Vec<u8>>>,
    /// The frames each client received on each of its links to the other clients (as in
    /// [`run_client`]): the peer's hello and verdict, then P2's party index or P1's key.
    pub(crate) links: Vec<Vec<Vec<Vec<u8>>>>,
    /// Each client's result.
    pub(crate) results: Vec<std::result::Result<(), String>>,
}

impl Recording {
    /// What client `party` sent the server (nothing if there is no such client).
    pub(crate) fn sent_to_server(&self, party: u32) -> &[Vec<u8>] {
        at(&self.to_server, party).map_or(&[], Vec::as_slice)
    }

    /// What client `party` received from the server.
    pub(crate) fn received_from_server(&self, party: u32) -> &[Vec<u8>] {
        at(&self.from_server, party).map_or(&[], Vec::as_slice)
    }

    /// What client `party` received on each of its links.
    pub(crate) fn received_on_links(&self, party: u32) -> &[Vec<Vec<u8>>] {
        at(&self.links, party).map_or(&[], Vec::as_slice)
    }
}

fn at<T>(v: &[T], party: u32) -> Option<&T> {
    v.get((party as usize).checked_sub(1)?)
}

/// The recorded run of `parties` (2 or 3) clients, recorded on first use.
pub(crate) fn recording(parties: u32) -> &'static Recording {
    static TWO: OnceLock<Recording> = OnceLock::new();
    static THREE: OnceLock<Recording> = OnceLock::new();
    if parties == 2 {
        TWO.get_or_init(|| record_run(2))
    } else {
        THREE.get_or_init(|| record_run(3))
    }
}

/// Joins a thread, passing its panic on.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn record_run(parties: u32) -> Recording {
    let wait = Duration::from_secs(30);
    let n = parties as usize;
    // No keepalive within the run: the recorded statuses are the same on every run.
    let cfg = ServerConfig {
        keepalive: Duration::from_secs(60),
        ..ServerConfig::default()
    };
    let server = Server::new(Arc::new(MemoryStore::new()), cfg);
    let (leader_ends, member_ends): (Vec<MemoryChannel>, Vec<MemoryChannel>) =
        (1..n).map(|_| memory_pair(wait)).unzip();
    let (client_ends, server_ends): (Vec<MemoryChannel>, Vec<MemoryChannel>) =
        (0..n).map(|_| memory_pair(wait)).unzip();
    std::thread::scope(|s| {
        let server = &server;
        let served: Vec<_> = server_ends
            .into_iter()
            .map(|end| {
                s.spawn(move || {
                    let mut rec = Recorder::new(end);
                    let _ = server.serve(&mut rec, "fuzz");
                    rec.received
                })
            })
            .collect();
        let mut leader_ends = Some(leader_ends);
        let mut member_ends = member_ends.into_iter();
        let clients: Vec<_> = client_ends
            .into_iter()
            .enumerate()
            .map(|(i, end)| {
                let links: Vec<MemoryChannel> = if i == 0 {
                    leader_ends.take().unwrap_or_default()
                } else {
                    member_ends.next().into_iter().collect()
                };
                let case = AidedCase {
                    party: i as u32 + 1,
                    parties,
                };
                s.spawn(move || {
                    let mut to_server = Recorder::new(end);
                    let mut links: Vec<Recorder<MemoryChannel>> =
                        links.into_iter().map(Recorder::new).collect();
                    let r = run_client(case, &mut links, &mut to_server);
                    // A client that ends closes its connections, as a process would.
                    (
                        r.map_err(|e| e.to_string()),
                        to_server.received,
                        links.into_iter().map(|l| l.received).collect::<Vec<_>>(),
                    )
                })
            })
            .collect();
        let mut rec = Recording {
            to_server: Vec::new(),
            from_server: Vec::new(),
            links: Vec::new(),
            results: Vec::new(),
        };
        for h in clients {
            let (r, from_server, links) = join(h);
            rec.results.push(r);
            // The server tells a waiting client when another client's labels are in, so the
            // `Waiting` statuses depend on the threads' timing: they are left out.
            rec.from_server.push(
                from_server
                    .into_iter()
                    .filter(|f| !matches!(decode_status(f), Some(Status::Waiting { .. })))
                    .collect(),
            );
            rec.links.push(links);
        }
        for h in served {
            rec.to_server.push(join(h));
        }
        rec
    })
}

/// The client case of `aided_client` and `aided_key` a selector byte picks.
fn client_case(sel: u8) -> AidedCase {
    CLIENT_CASES[usize::from(sel) % CLIENT_CASES.len()]
}

/// Runs client `case` on links that carry `link_frames` and a server connection that carries
/// `server_frames`.
fn client_against<'a>(
    case: AidedCase,
    link_frames: Vec<Vec<&'a [u8]>>,
    server_frames: Vec<&'a [u8]>,
) -> Result<()> {
    let mut links = Vec::new();
    let mut keep = Vec::new();
    for frames in link_frames {
        let (ours, peer) = queued(frames)?;
        links.push(ours);
        keep.push(peer);
    }
    let (mut server, server_peer) = queued(server_frames)?;
    let out = run_client(case, &mut links, &mut server);
    drop((keep, server_peer));
    out
}

/// A `kmrs_semi` client (`Protocol::client`) against a fake server whose frames (statuses, bit
/// vector) are the input's after a selector byte ([`CLIENT_CASES`]: which client of which
/// recorded run); its links to the other clients replay the recorded run, so that its key
/// agreement succeeds.
pub fn fuzz_aided_client(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = client_case(sel);
    let rec = recording(case.parties);
    let links = rec.received_on_links(case.party);
    let link_frames = links
        .iter()
        .map(|l| l.iter().map(Vec::as_slice).collect())
        .collect();
    outcome(client_against(case, link_frames, split(rest)))
}

/// A `kmrs_semi` client's key agreement (`agree_key`): after a selector byte
/// ([`CLIENT_CASES`]), the frames its peer sends after a real handshake on its (first) link
/// to the other clients: P1's key and set sizes to a member, P2's party index to P1. Its other
/// link (P1 of 3) and the server replay the recorded run, so the run can go on to its end.
pub fn fuzz_aided_key(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = client_case(sel);
    let rec = recording(case.parties);
    let links = rec.received_on_links(case.party);
    let fuzzed = split(rest);
    let link_frames = links
        .iter()
        .enumerate()
        .map(|(j, l)| {
            if j == 0 {
                // The handshake's hello and verdict, then the input's frames.
                l.iter()
                    .take(2)
                    .map(Vec::as_slice)
                    .chain(fuzzed.iter().copied())
                    .collect()
            } else {
                l.iter().map(Vec::as_slice).collect()
            }
        })
        .collect();
    let server = rec.received_from_server(case.party);
    outcome(client_against(
        case,
        link_frames,
        server.iter().map(Vec::as_slice).collect(),
    ))
}

/// The run timeout of `aided_server` when the fuzzed client's submit names a run of its own
/// (or it is alone): it then waits this long before its run fails.
pub(crate) const SHORT_RUN_TIMEOUT: Duration = Duration::from_millis(10);

/// The run timeout of `aided_server` when the fuzzed client's submit names the honest
/// clients' run: that run then ends once the fuzzed client's connection does (see
/// [`fuzz_aided_server`]), so the timeout is never reached, only a bound if that changed. It
/// is long so that a slow machine does not change an honest run's outcome.
pub(crate) const LONG_RUN_TIMEOUT: Duration = Duration::from_millis(1000);

/// How often `aided_server` tells a waiting client that its run still waits.
pub(crate) const KEEPALIVE: Duration = Duration::from_millis(3);

/// How long `aided_server` waits for an honest client's acceptance.
const ACCEPT_WAIT: Duration = Duration::from_secs(1);

/// The submit hello in `frame`, decoded as the server decodes it.
pub(crate) fn decode_submit(frame: &[u8]) -> Option<Submit> {
    let (mut a, mut b) = memory_pair(ACCEPT_WAIT);
    b.send(MSG_SUBMIT, frame).ok()?;
    recv_msg(&mut a, MSG_SUBMIT, MAX_SUBMIT_LEN).ok()
}

/// The status in `frame`, decoded as a client decodes it.
fn decode_status(frame: &[u8]) -> Option<Status> {
    let (mut a, mut b) = memory_pair(ACCEPT_WAIT);
    b.send(MSG_STATUS, frame).ok()?;
    recv_status(&mut a).ok()
}

/// `Server::serve` (a [`MemoryStore`]-backed server) on a client connection whose frames
/// (submit hello, labels, receipt) are the input's after a selector byte ([`SERVER_CASES`]).
///
/// The recorded run's other clients are honest: each replays what it sent in the recorded run
/// on a connection served on a thread of its own, and is accepted (so holds its slot and has
/// set the run's parameters) before the fuzzed client is served. Once the fuzzed client's
/// connection has ended, a client that submits for the fuzzed client's slot and then
/// disconnects ends the run if that slot is still free (otherwise it is refused). A run is
/// then over as soon as its connections are, and the check that follows finds no run and no
/// label set left on the server (a finding if it does). The run timeout is
/// [`SHORT_RUN_TIMEOUT`] if the fuzzed client is alone or its submit names another run than
/// the honest clients' (it waits alone), [`LONG_RUN_TIMEOUT`] otherwise.
pub fn fuzz_aided_server(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = SERVER_CASES[usize::from(sel) % SERVER_CASES.len()];
    let frames = split(rest);
    let (rec, honest): (&Recording, Vec<u32>) = match case {
        Some(c) => (
            recording(c.parties),
            (1..=c.parties).filter(|&p| p != c.party).collect(),
        ),
        None => (recording(2), Vec::new()),
    };
    let in_honest_run = case.is_some_and(|c| {
        frames
            .first()
            .and_then(|f| decode_submit(f))
            .is_some_and(|s| s.run == run_id(c.parties))
    });
    let cfg = ServerConfig {
        run_timeout: if in_honest_run {
            LONG_RUN_TIMEOUT
        } else {
            SHORT_RUN_TIMEOUT
        },
        keepalive: KEEPALIVE,
        ..ServerConfig::default()
    };
    let store = Arc::new(MemoryStore::new());
    let server = Server::new(store.clone(), cfg);
    let out = std::thread::scope(|s| -> Result<()> {
        let server = &server;
        let mut handles = Vec::new();
        let mut honest_ends = Vec::new();
        for p in honest {
            let sent = rec.sent_to_server(p);
            let (mut client, mut server_end) = memory_pair(ACCEPT_WAIT);
            for f in sent {
                client.send(MSG_SUBMIT, f)?;
            }
            client.close();
            handles.push(s.spawn(move || {
                let _ = server.serve(&mut server_end, "fuzz");
            }));
            // The acceptance (or, if the recording were wrong, a refusal).
            let _ = recv_status(&mut client);
            honest_ends.push(client);
        }
        let (mut ours, peer) = queued(frames)?;
        let out = server.serve(&mut ours, "fuzz").map(|_| ());
        drop((ours, peer));
        if let Some(c) = case {
            let submit = rec.sent_to_server(c.party);
            let (mut end, peer) = queued(submit.first().map(Vec::as_slice))?;
            let _ = server.serve(&mut end, "fuzz");
            drop((end, peer));
        }
        for h in handles {
            join(h);
        }
        drop(honest_ends);
        out
    });
    // Every connection has ended: a run or a label set still held is a leak.
    assert_eq!(server.runs(), 0, "a run is left on the server");
    assert!(store.is_empty(), "labels are left in the store");
    outcome(out)
}
