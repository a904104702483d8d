//! The server-aided PSI targets (KMRS14: `kmrs_semi`, `kmrs_mal`, `kmrs_fair`, `kmrs_size`): the
//! server ([`fuzz_aided_server`]), a client's exchange with the server ([`fuzz_aided_client`])
//! and the exchange between the clients: the key agreement or coin toss, and `kmrs_size`'s
//! labels and bit vector ([`fuzz_aided_key`]).
//!
//! Their honest parties replay what the same parties received or sent in a real run, recorded
//! once per process ([`recording`]): 2 or 3 clients (`Protocol::client` with seeded RNGs and
//! fixed items) and a real [`Server`] (with the `seeded-server` feature, its own random values
//! derived from a fixed seed), over in-memory channels. A client is a function of its RNG seed,
//! its items and the frames it receives, so a client of the target with the same seed and
//! items sends the same messages as in the recorded run, and the recorded frames of its peers
//! fit it. The runs of 3 `kmrs_mal` clients are authenticated: every client link and server
//! connection reports a fixed certificate fingerprint per party ([`fingerprint`]), so party 1
//! binds the slots to them and the server checks them.

use crate::Outcome;
use crate::frames::split;
use crate::peer::{queued, rng};
use crate::seeds::Recorder;
use crate::targets::{items, outcome};
use blindjoin_core::channel::memory::{MemoryChannel, memory_pair};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender, MAX_FRAME_LEN, recv_msg};
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use blindjoin_psi::protocols::server_aided::client::{AidedLinks, Peers};
use blindjoin_psi::protocols::server_aided::server::{Server, ServerConfig};
use blindjoin_psi::protocols::server_aided::store::MemoryStore;
use blindjoin_psi::protocols::server_aided::wire::{
    MAX_SUBMIT_LEN, MSG_STATUS, MSG_SUBMIT, Status, Submit, recv_status,
};
use blindjoin_psi::protocols::server_aided::{kmrs_fair, kmrs_mal, kmrs_semi, kmrs_size};
use blindjoin_psi::{Protocol, RunOptions};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The server-aided protocols of the recorded runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kmrs {
    /// `kmrs_semi`: P1 sends the key.
    Semi,
    /// `kmrs_mal`: the coin toss, element copies and dummy sets.
    Mal,
    /// `kmrs_fair`: as `kmrs_mal` for 2 clients, with the server's commitment and each
    /// client's opening.
    Fair,
    /// `kmrs_size`: 2 clients, the server's coin toss with P2, relabelling and π3.
    Size,
}

impl Kmrs {
    /// The protocol's descriptor.
    pub(crate) fn protocol(self) -> &'static Protocol {
        match self {
            Kmrs::Semi => &kmrs_semi::PROTOCOL,
            Kmrs::Mal => &kmrs_mal::PROTOCOL,
            Kmrs::Fair => &kmrs_fair::PROTOCOL,
            Kmrs::Size => &kmrs_size::PROTOCOL,
        }
    }

    /// A short name for seed names.
    pub(crate) fn short(self) -> &'static str {
        match self {
            Kmrs::Semi => "semi",
            Kmrs::Mal => "mal",
            Kmrs::Fair => "fair",
            Kmrs::Size => "size",
        }
    }
}

/// A client of a recorded run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AidedCase {
    /// The run's protocol.
    pub(crate) kmrs: Kmrs,
    /// Its party index, 1-based.
    pub(crate) party: u32,
    /// The run's number of clients.
    pub(crate) parties: u32,
}

const fn case(kmrs: Kmrs, party: u32, parties: u32) -> AidedCase {
    AidedCase {
        kmrs,
        party,
        parties,
    }
}

/// The clients that `aided_client` and `aided_key` put under test, by selector byte modulo
/// 14: `kmrs_semi`'s P2 and P1 of 2, P2, P3 and P1 of 3 (0 to 4), `kmrs_mal`'s the same (5 to
/// 9), `kmrs_fair`'s P2 and P1 (10, 11), `kmrs_size`'s P2 and P1 (12, 13).
pub(crate) const CLIENT_CASES: [AidedCase; 14] = [
    case(Kmrs::Semi, 2, 2),
    case(Kmrs::Semi, 1, 2),
    case(Kmrs::Semi, 2, 3),
    case(Kmrs::Semi, 3, 3),
    case(Kmrs::Semi, 1, 3),
    case(Kmrs::Mal, 2, 2),
    case(Kmrs::Mal, 1, 2),
    case(Kmrs::Mal, 2, 3),
    case(Kmrs::Mal, 3, 3),
    case(Kmrs::Mal, 1, 3),
    case(Kmrs::Fair, 2, 2),
    case(Kmrs::Fair, 1, 2),
    case(Kmrs::Size, 2, 2),
    case(Kmrs::Size, 1, 2),
];

/// The fuzzed client of `aided_server`, by selector byte modulo 13: a client whose other
/// parties are honest (`kmrs_semi`'s P2 and P1 of 2, P3 and P1 of 3: 0 to 3; `kmrs_mal`'s the
/// same: 5 to 8; `kmrs_fair`'s P2 and P1: 9, 10; `kmrs_size`'s P2 and P1: 11, 12), or (`None`,
/// 4) a client alone on the server.
pub(crate) const SERVER_CASES: [Option<AidedCase>; 13] = [
    Some(case(Kmrs::Semi, 2, 2)),
    Some(case(Kmrs::Semi, 1, 2)),
    Some(case(Kmrs::Semi, 3, 3)),
    Some(case(Kmrs::Semi, 1, 3)),
    None,
    Some(case(Kmrs::Mal, 2, 2)),
    Some(case(Kmrs::Mal, 1, 2)),
    Some(case(Kmrs::Mal, 3, 3)),
    Some(case(Kmrs::Mal, 1, 3)),
    Some(case(Kmrs::Fair, 2, 2)),
    Some(case(Kmrs::Fair, 1, 2)),
    Some(case(Kmrs::Size, 2, 2)),
    Some(case(Kmrs::Size, 1, 2)),
];

/// The selector byte of `c` in [`CLIENT_CASES`].
pub(crate) fn client_selector(c: AidedCase) -> u8 {
    CLIENT_CASES.iter().position(|&x| x == c).unwrap_or(0) as u8
}

/// The selector byte of `c` in [`SERVER_CASES`].
pub(crate) fn server_selector(c: Option<AidedCase>) -> u8 {
    SERVER_CASES.iter().position(|&x| x == c).unwrap_or(0) as u8
}

/// The run id of the recorded run of `kmrs` with `parties` clients.
pub(crate) fn run_id(kmrs: Kmrs, parties: u32) -> String {
    match kmrs {
        Kmrs::Semi => format!("fuzz-{parties}"),
        _ => format!("fuzz-{}-{parties}", kmrs.short()),
    }
}

/// The items of client `party` (13, 21 and 8 items; all three hold `key-5` to `key-10`).
pub(crate) fn client_items(party: u32) -> Vec<Item> {
    match party {
        1 => items(13, 0),
        2 => items(21, 5),
        _ => items(8, 3),
    }
}

/// The options of every client of a `kmrs` run: the defaults for `kmrs_semi`; for the others
/// 2 copies and dummy sets of 4 labels (covert), so that a run labels a few dozen labels
/// instead of the default 2^20 dummies per set.
pub(crate) fn aided_options(kmrs: Kmrs) -> RunOptions {
    match kmrs {
        Kmrs::Semi => RunOptions::default(),
        _ => RunOptions {
            copies: 2,
            dummies: 4,
            covert: true,
            ..RunOptions::default()
        },
    }
}

/// Whether the recorded run of `kmrs` with `parties` clients is authenticated (see the module
/// doc): `kmrs_mal`'s of 3.
pub(crate) fn authenticated(kmrs: Kmrs, parties: u32) -> bool {
    kmrs == Kmrs::Mal && parties == 3
}

/// The certificate fingerprint of party `party` in an authenticated run.
pub(crate) fn fingerprint(party: u32) -> [u8; 32] {
    [0xa0 + party as u8; 32]
}

/// The seed of the recorded runs' server (`seeded-server` feature).
#[cfg(feature = "seeded-server")]
const SERVER_SEED: [u8; 32] = [0x5e; 32];

/// A server with `cfg` on `store`, its random values seeded if the `seeded-server` feature
/// is on (so that `kmrs_size`'s key share, and with it the relabelled labels, repeat in every
/// recording).
fn new_server(store: Arc<MemoryStore>, cfg: ServerConfig) -> Server {
    let s = Server::new(store, cfg);
    #[cfg(feature = "seeded-server")]
    let s = s.seeded(SERVER_SEED);
    s
}

/// A channel that reports `peer` as the certificate its peer authenticated with.
pub(crate) struct Authenticated<C> {
    inner: C,
    peer: Option<[u8; 32]>,
}

impl<C> Authenticated<C> {
    /// `inner`, authenticated by `peer` if given.
    pub(crate) fn new(inner: C, peer: Option<[u8; 32]>) -> Self {
        Authenticated { inner, peer }
    }
}

impl<C: Channel> FrameSender for Authenticated<C> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        self.inner.send(msg, frame)
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<C: Channel> FrameReceiver for Authenticated<C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        self.inner.recv(what, max_len)
    }
}

impl<C: Channel> Channel for Authenticated<C> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        self.inner.split()
    }

    fn peer_identity(&self) -> Option<[u8; 32]> {
        self.peer
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.inner.set_deadline(deadline);
    }
}

/// Runs client `case` (its [`client_items`], RNG seed `party`, [`aided_options`]) on its
/// links to the other clients (P1: one per other client, in party order; the others: the one
/// to P1) and its connection to the server; in an authenticated run with its certificate, and
/// its links reporting the peers' ([`fingerprint`]).
pub(crate) fn run_client<C: Channel>(
    case: AidedCase,
    links: &mut [C],
    server: &mut dyn Channel,
) -> Result<()> {
    let auth = authenticated(case.kmrs, case.parties);
    let mut links: Vec<Authenticated<&mut C>> = links
        .iter_mut()
        .enumerate()
        .map(|(j, l)| {
            let peer = if case.party == 1 { j as u32 + 2 } else { 1 };
            Authenticated::new(l, auth.then(|| fingerprint(peer)))
        })
        .collect();
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
        run_id(case.kmrs, case.parties),
        (case.party, case.parties),
        peers,
        server,
    );
    if auth {
        links.identity = Some(fingerprint(case.party));
        if case.party == 1 {
            links.slots = (2..=case.parties).map(|i| (fingerprint(i), i)).collect();
        }
    }
    case.kmrs
        .protocol()
        .client(
            &mut links,
            &client_items(case.party),
            &aided_options(case.kmrs),
            &mut rng(u64::from(case.party)),
        )
        .map(|_| ())
}

/// What every endpoint of a real run received (index: party − 1).
pub(crate) struct Recording {
    /// The frames the server received from each client.
    pub(crate) to_server: Vec<Vec<Vec<u8>>>,
    /// The frames each client received from the server, without `Waiting` statuses.
    pub(crate) from_server: Vec<Vec<Vec<u8>>>,
    /// The frames each client received on each of its links to the other clients (as in
    /// [`run_client`]): the peer's hello and verdict, then the key agreement's messages (and
    /// `kmrs_size`'s labels or bit vector).
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

/// The recorded run of `kmrs` with `parties` clients (2 or 3; `kmrs_fair` and `kmrs_size`
/// only 2), recorded on first use.
pub(crate) fn recording(kmrs: Kmrs, parties: u32) -> &'static Recording {
    static RUNS: [OnceLock<Recording>; 6] = [const { OnceLock::new() }; 6];
    let k = match (kmrs, parties) {
        (Kmrs::Semi, 2) => 0,
        (Kmrs::Semi, _) => 1,
        (Kmrs::Mal, 2) => 2,
        (Kmrs::Mal, _) => 3,
        (Kmrs::Fair, _) => 4,
        (Kmrs::Size, _) => 5,
    };
    let parties = if matches!(kmrs, Kmrs::Fair | Kmrs::Size) {
        2
    } else {
        parties
    };
    RUNS[k].get_or_init(|| record_run(kmrs, parties))
}

/// The recorded run of case `c`.
pub(crate) fn recording_of(c: AidedCase) -> &'static Recording {
    recording(c.kmrs, c.parties)
}

/// Joins a thread, passing its panic on.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn record_run(kmrs: Kmrs, parties: u32) -> Recording {
    let wait = Duration::from_secs(30);
    let n = parties as usize;
    let auth = authenticated(kmrs, parties);
    // No keepalive within the run: the recorded statuses are the same on every run.
    let cfg = ServerConfig {
        keepalive: Duration::from_secs(60),
        ..ServerConfig::default()
    };
    let server = new_server(Arc::new(MemoryStore::new()), cfg);
    let (leader_ends, member_ends): (Vec<MemoryChannel>, Vec<MemoryChannel>) =
        (1..n).map(|_| memory_pair(wait)).unzip();
    let (client_ends, server_ends): (Vec<MemoryChannel>, Vec<MemoryChannel>) =
        (0..n).map(|_| memory_pair(wait)).unzip();
    std::thread::scope(|s| {
        let server = &server;
        let served: Vec<_> = server_ends
            .into_iter()
            .enumerate()
            .map(|(i, end)| {
                let peer = auth.then(|| fingerprint(i as u32 + 1));
                s.spawn(move || {
                    let mut rec = Recorder::new(Authenticated::new(end, peer));
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
                let c = case(kmrs, i as u32 + 1, parties);
                s.spawn(move || {
                    let mut to_server = Recorder::new(end);
                    let mut links: Vec<Recorder<MemoryChannel>> =
                        links.into_iter().map(Recorder::new).collect();
                    let r = run_client(c, &mut links, &mut to_server);
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

/// A server-aided client (`Protocol::client`) against a fake server whose frames are the
/// input's after a selector byte ([`CLIENT_CASES`]: which client of which recorded run):
/// statuses and the bit vector; `kmrs_fair`'s commitment and its opening; `kmrs_size`'s
/// commitment and key share (P2), relabelled labels and π3 (P1). Its links to the other
/// clients replay the recorded run, so that its key agreement succeeds.
pub fn fuzz_aided_client(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = client_case(sel);
    let rec = recording_of(case);
    let links = rec.received_on_links(case.party);
    let link_frames = links
        .iter()
        .map(|l| l.iter().map(Vec::as_slice).collect())
        .collect();
    outcome(client_against(case, link_frames, split(rest)))
}

/// A server-aided client's exchange with the other clients: after a selector byte
/// ([`CLIENT_CASES`]), the frames its peer sends after a real handshake on its (first) link
/// to the other clients: `kmrs_semi`'s key and set sizes to a member, P2's party index to P1;
/// the coin toss's commitment and opening to a member, a member's share to P1; `kmrs_size`'s
/// labels of P2 to P1 and P1's bit vector to P2. Its other link (P1 of 3) and the server
/// replay the recorded run, so the run can go on to its end.
pub fn fuzz_aided_key(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = client_case(sel);
    let rec = recording_of(case);
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

/// The run timeout of `aided_server` when the fuzzed client's submit does not join the honest
/// clients' run (or it is alone): it then waits this long before its run fails.
pub(crate) const SHORT_RUN_TIMEOUT: Duration = Duration::from_millis(10);

/// The run timeout of `aided_server` when the fuzzed client's submit joins the honest clients'
/// run: that run then ends once the fuzzed client's connection does (see
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

/// Whether two submit hellos join the same run on the server: the same protocol, run id and
/// every parameter its run key digests (the server's `run_digest`).
pub(crate) fn same_run(a: &Submit, b: &Submit) -> bool {
    a.protocol == b.protocol
        && a.run == b.run
        && a.parties == b.parties
        && a.label_len == b.label_len
        && a.params == b.params
        && a.sizes == b.sizes
        && a.identities == b.identities
}

/// The status in `frame`, decoded as a client decodes it.
fn decode_status(frame: &[u8]) -> Option<Status> {
    let (mut a, mut b) = memory_pair(ACCEPT_WAIT);
    b.send(MSG_STATUS, frame).ok()?;
    recv_status(&mut a).ok()
}

/// `Server::serve` (a [`MemoryStore`]-backed server) on a client connection whose frames are
/// the input's after a selector byte ([`SERVER_CASES`]): the submit hello, the labels and the
/// receipt; `kmrs_fair`'s opening and first-layer values; `kmrs_size`'s share and verdict (P2).
///
/// The recorded run's other clients are honest: each replays what it sent in the recorded run
/// on a connection served on a thread of its own, and is accepted (so holds its slot and has
/// set the run's parameters) before the fuzzed client is served. Once the fuzzed client's
/// connection has ended, a client that submits for the fuzzed client's slot and then
/// disconnects ends the run if that slot is still free (otherwise it is refused). A run is
/// then over as soon as its connections are, and the check that follows finds no run and no
/// label set left on the server (a finding if it does). The run timeout is
/// [`SHORT_RUN_TIMEOUT`] if the fuzzed client is alone or its submit does not join the honest
/// clients' run (it waits alone), [`LONG_RUN_TIMEOUT`] otherwise. In an authenticated run
/// every connection, the fuzzed client's too, reports its party's certificate.
pub fn fuzz_aided_server(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = SERVER_CASES[usize::from(sel) % SERVER_CASES.len()];
    let frames = split(rest);
    let (rec, honest): (&Recording, Vec<u32>) = match case {
        Some(c) => (
            recording_of(c),
            (1..=c.parties).filter(|&p| p != c.party).collect(),
        ),
        None => (recording(Kmrs::Semi, 2), Vec::new()),
    };
    let auth = case.is_some_and(|c| authenticated(c.kmrs, c.parties));
    let identity = |party: u32| auth.then(|| fingerprint(party));
    let in_honest_run = case.is_some_and(|c| {
        let ours = frames.first().and_then(|f| decode_submit(f));
        let theirs = rec
            .sent_to_server(c.party)
            .first()
            .and_then(|f| decode_submit(f));
        ours.zip(theirs).is_some_and(|(a, b)| same_run(&a, &b))
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
    let server = new_server(store.clone(), cfg);
    let size = case.is_some_and(|c| c.kmrs == Kmrs::Size);
    let out = std::thread::scope(|s| -> Result<()> {
        let server = &server;
        let mut handles = Vec::new();
        let mut honest_ends = Vec::new();
        let mut verdict = None;
        for p in honest {
            let sent = rec.sent_to_server(p);
            // `kmrs_size`'s party 2 judges party 1's result, so its verdict follows party 1's
            // relabelled labels (see below); its submit and share go now.
            let (now, later) = if size && p == 2 {
                sent.split_at(sent.len().min(2))
            } else {
                (sent, &[][..])
            };
            let (mut client, server_end) = memory_pair(ACCEPT_WAIT);
            for f in now {
                client.send(MSG_SUBMIT, f)?;
            }
            if later.is_empty() {
                client.close();
            }
            let mut server_end = Authenticated::new(server_end, identity(p));
            handles.push(s.spawn(move || {
                let _ = server.serve(&mut server_end, "fuzz");
            }));
            // The acceptance (or, if the recording were wrong, a refusal).
            let _ = recv_status(&mut client);
            if size && p == 1 {
                // `kmrs_size`'s party 1: its labels are in once the server waits for party
                // 2's key share (and says so), before the fuzzed party 2 can judge them.
                while let Ok(Status::Waiting { joined: 0 }) = recv_status(&mut client) {}
            }
            if later.is_empty() {
                honest_ends.push(client);
            } else {
                verdict = Some((client, later));
            }
        }
        let fuzzed = case.map_or(1, |c| c.party);
        let (ours, mut peer) = queued(frames)?;
        let served = s.spawn(move || {
            let mut ours = Authenticated::new(ours, identity(fuzzed));
            server.serve(&mut ours, "fuzz").map(|_| ())
        });
        if let Some((mut client, later)) = verdict {
            // The fuzzed party 1's relabelled labels are out (or its part has ended): party 2,
            // honest, sends its verdict, as after it judged party 1's bit vector.
            while let Ok(f) = peer.recv(MSG_STATUS, MAX_FRAME_LEN) {
                if decode_status(&f) == Some(Status::Relabelled) {
                    break;
                }
            }
            for f in later {
                client.send(MSG_SUBMIT, f)?;
            }
            client.close();
            honest_ends.push(client);
        }
        let out = join(served);
        drop(peer);
        if let Some(c) = case {
            let submit = rec.sent_to_server(c.party);
            let (end, peer) = queued(submit.first().map(Vec::as_slice))?;
            let mut end = Authenticated::new(end, identity(c.party));
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
