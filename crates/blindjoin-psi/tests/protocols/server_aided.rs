//! The server-aided protocols end to end over in-memory channels: n clients, their direct
//! links, and one [`Server`] serving every client connection on a thread of its own; the
//! server's refusals and its bookkeeping (runs forgotten, store emptied), on the memory and the
//! disk store; for `kmrs_mal`, servers that cheat (a [`Store`] that alters the intersection) and
//! the rate at which a covert one is caught; for `kmrs_mal`, `kmrs_fair` and `kmrs_size`, a
//! client, the server or a party's direct link that deviates in one message, each check ending
//! the run with its exact error (frames altered in transit by [`Tamper`], or by a [`Rewrite`]
//! that can decode the message, compute from what it saw and wait for another party).

use crate::common::BASE_CASES;
use blindjoin_core::Error;
use blindjoin_core::channel::memory::{MemoryChannel, memory_pair};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender, recv_msg, send_msg};
use blindjoin_core::item::items_from_records;
use blindjoin_psi::protocols::server_aided::client::{AidedLinks, ClientOutput, Peers};
use blindjoin_psi::protocols::server_aided::disk_store::DiskStore;
use blindjoin_psi::protocols::server_aided::server::{Server, ServerConfig};
use blindjoin_psi::protocols::server_aided::store::{LabelWriter, MemoryStore, Store};
use blindjoin_psi::protocols::server_aided::wire::{
    MSG_BITS, MSG_FAIR_OPEN, MSG_LABELS, MSG_PERMUTATION, MSG_RELABELLED, MSG_SERVER_SHARE,
    MSG_STATUS, MSG_SUBMIT, Status, Submit, WIRE_VERSION, recv_status,
};
use blindjoin_psi::protocols::server_aided::{kmrs_fair, kmrs_mal, kmrs_semi, kmrs_size, labels};
use blindjoin_psi::{Protocol, RunOptions};
use blindjoin_testkit::{Attack, Tamper, Target, oracle, rng, sets_with_overlap};
use rand::Rng;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const P: &Protocol = &kmrs_semi::PROTOCOL;

type Records = Vec<Vec<u8>>;

fn server(cfg: ServerConfig) -> (Arc<Server>, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    (Arc::new(Server::new(store.clone(), cfg)), store)
}

/// A server that tells waiting clients often, and whose runs time out after 30 s rather than
/// 10 minutes (a test whose client fails before the other joins waits that long at most).
pub(crate) fn quick() -> ServerConfig {
    ServerConfig {
        keepalive: Duration::from_millis(50),
        run_timeout: Duration::from_secs(30),
        ..ServerConfig::default()
    }
}

/// Runs one `kmrs_semi` run of `sets.len()` clients on `server` (client i's records
/// `sets[i]`), each client's server connection served on a thread of its own.
pub(crate) fn run_clients(
    server: &Server,
    run: &str,
    sets: &[Vec<Vec<u8>>],
) -> Vec<blindjoin_core::Result<ClientOutput>> {
    let opts = vec![RunOptions::default(); sets.len()];
    run_protocol(server, P, run, sets, &opts, 0)
}

/// Runs one run of `p` with `sets.len()` clients on `server`, client i with records `sets[i]`,
/// options `opts[i]` and RNG seed `seed + i + 1`.
fn run_protocol(
    server: &Server,
    p: &'static Protocol,
    run: &str,
    sets: &[Vec<Vec<u8>>],
    opts: &[RunOptions],
    seed: u64,
) -> Vec<blindjoin_core::Result<ClientOutput>> {
    run_tampered(server, p, run, sets, opts, seed, None)
}

/// Who alters frames in [`run_tampered`] and [`run_rewritten`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// Client i (0-based), in what it sends to the server.
    Client(usize),
    /// The server, in what it sends to client i (0-based).
    Server(usize),
    /// Client i (0-based), in what it sends to the other clients on its direct links.
    Link(usize),
}

/// [`run_protocol`] with one frame of one connection altered in transit (client 1's links:
/// the same frame on each).
fn run_tampered(
    server: &Server,
    p: &'static Protocol,
    run: &str,
    sets: &[Vec<Vec<u8>>],
    opts: &[RunOptions],
    seed: u64,
    tamper: Option<(Side, Target, Attack)>,
) -> Vec<blindjoin_core::Result<ClientOutput>> {
    let mut wrap = |side: Side, ch: MemoryChannel| -> Box<dyn Channel + Send> {
        match &tamper {
            Some((s, target, attack)) if *s == side => {
                Box::new(Tamper::new(ch, *target, attack.clone()))
            }
            _ => Box::new(ch),
        }
    };
    run_wrapped(server, p, run, sets, opts, seed, &mut wrap)
}

/// What a side does to each frame it sends ([`run_rewritten`]): it may change the frame, or
/// fail the send, as a party that hangs up.
type Rewrite<'a> =
    Box<dyn FnMut(&'static str, &mut Vec<u8>) -> blindjoin_core::Result<()> + Send + 'a>;

/// A memory channel whose frames pass through a [`Rewrite`] on their way out.
struct Rewritten<'a> {
    inner: MemoryChannel,
    rewrite: Rewrite<'a>,
}

fn rewritten_send(
    tx: &mut dyn FrameSender,
    rewrite: &mut Rewrite<'_>,
    msg: &'static str,
    frame: &[u8],
) -> blindjoin_core::Result<()> {
    let mut frame = frame.to_vec();
    rewrite(msg, &mut frame)?;
    tx.send(msg, &frame)
}

impl FrameSender for Rewritten<'_> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> blindjoin_core::Result<()> {
        rewritten_send(&mut self.inner, &mut self.rewrite, msg, frame)
    }
    fn close(&mut self) {
        self.inner.close();
    }
}

impl FrameReceiver for Rewritten<'_> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> blindjoin_core::Result<Vec<u8>> {
        self.inner.recv(what, max_len)
    }
}

/// The sending half of a split [`Rewritten`].
struct RewrittenSender<'s, 'a> {
    tx: Box<dyn FrameSender + 's>,
    rewrite: &'s mut Rewrite<'a>,
}

impl FrameSender for RewrittenSender<'_, '_> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> blindjoin_core::Result<()> {
        rewritten_send(&mut *self.tx, self.rewrite, msg, frame)
    }
    fn close(&mut self) {
        self.tx.close();
    }
}

impl Channel for Rewritten<'_> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        let (rx, tx) = self.inner.split();
        (
            rx,
            Box::new(RewrittenSender {
                tx,
                rewrite: &mut self.rewrite,
            }),
        )
    }
}

/// Runs `p` for `sets.len()` clients with the same options, each side of `rewrites` passing
/// what it sends through its [`Rewrite`] (client 1's links: the first of them only).
fn run_rewritten<'w>(
    server: &Server,
    p: &'static Protocol,
    run: &str,
    sets: &[Records],
    opts: &RunOptions,
    rewrites: Vec<(Side, Rewrite<'w>)>,
) -> Vec<blindjoin_core::Result<ClientOutput>> {
    let opts = vec![opts.clone(); sets.len()];
    run_rewritten_with(server, p, run, sets, &opts, rewrites)
}

/// [`run_rewritten`] with options `opts[i]` for client i.
fn run_rewritten_with<'w>(
    server: &Server,
    p: &'static Protocol,
    run: &str,
    sets: &[Records],
    opts: &[RunOptions],
    mut rewrites: Vec<(Side, Rewrite<'w>)>,
) -> Vec<blindjoin_core::Result<ClientOutput>> {
    let mut wrap = |side: Side, ch: MemoryChannel| -> Box<dyn Channel + Send + 'w> {
        match rewrites.iter().position(|(s, _)| *s == side) {
            Some(k) => {
                let (_, rewrite) = rewrites.remove(k);
                Box::new(Rewritten { inner: ch, rewrite })
            }
            None => Box::new(ch),
        }
    };
    run_wrapped(server, p, run, sets, opts, 0, &mut wrap)
}

/// Runs one run of `p` with `sets.len()` clients on `server` (client i with records `sets[i]`,
/// options `opts[i]` and RNG seed `seed + i + 1`), each client's server connection served on a
/// thread of its own; every connection's sending end is first passed to `wrap` with the side
/// that sends on it.
fn run_wrapped<'w>(
    server: &Server,
    p: &'static Protocol,
    run: &str,
    sets: &[Vec<Vec<u8>>],
    opts: &[RunOptions],
    seed: u64,
    wrap: &mut dyn FnMut(Side, MemoryChannel) -> Box<dyn Channel + Send + 'w>,
) -> Vec<blindjoin_core::Result<ClientOutput>> {
    let n = sets.len();
    let wait = Duration::from_secs(60);
    let mut leader_ends = Vec::new();
    let mut member_ends = Vec::new();
    for i in 1..n {
        let (a, b) = memory_pair(wait);
        leader_ends.push(wrap(Side::Link(0), a));
        member_ends.push(wrap(Side::Link(i), b));
    }
    let mut server_ends = Vec::new();
    let mut client_ends = Vec::new();
    for i in 0..n {
        let (c, s) = memory_pair(wait);
        client_ends.push(wrap(Side::Client(i), c));
        server_ends.push(wrap(Side::Server(i), s));
    }
    std::thread::scope(|s| {
        for (i, mut end) in server_ends.drain(..).enumerate() {
            // Each client its own address for the server's per-client limit.
            let addr = format!("{run}/{i}");
            s.spawn(move || {
                let _ = server.serve(&mut *end, &addr);
            });
        }
        let mut handles = Vec::new();
        let mut member_ends = member_ends.into_iter();
        let mut leader_ends = Some(leader_ends);
        for (i, mut to_server) in client_ends.drain(..).enumerate() {
            let items = items_from_records(&sets[i]);
            let party = i as u32 + 1;
            let leader = if i == 0 { leader_ends.take() } else { None };
            let member = if i == 0 { None } else { member_ends.next() };
            let opts = &opts[i];
            handles.push(s.spawn(move || {
                let mut leader = leader;
                let mut member = member;
                let peers = match (&mut leader, &mut member) {
                    (Some(l), _) => {
                        Peers::Leader(l.iter_mut().map(|c| &mut **c as &mut dyn Channel).collect())
                    }
                    (_, Some(m)) => Peers::Member(&mut **m),
                    _ => unreachable!(),
                };
                let mut links =
                    AidedLinks::new(run.to_owned(), (party, n as u32), peers, &mut *to_server);
                let out = p.client(&mut links, &items, opts, &mut rng(seed + party as u64));
                // A failed client closes its links, as a process that exits would.
                drop(links);
                drop(leader);
                drop(member);
                drop(to_server);
                out
            }));
        }
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The indices of `sets[i]`'s records that every set holds.
pub(crate) fn expected(sets: &[Vec<Vec<u8>>], i: usize) -> Vec<usize> {
    let others: Vec<HashSet<&Vec<u8>>> = sets.iter().map(|s| s.iter().collect()).collect();
    sets[i]
        .iter()
        .enumerate()
        .filter(|(_, r)| others.iter().all(|o| o.contains(r)))
        .map(|(k, _)| k)
        .collect()
}

#[test]
fn two_clients_learn_the_exact_rows() {
    let (srv, store) = server(quick());
    for (k, &(n1, n2, overlap)) in BASE_CASES.iter().enumerate() {
        let (a, b) = sets_with_overlap(n1, n2, overlap, 500 + k as u64);
        let out = run_clients(&srv, &format!("two-{k}"), &[a.clone(), b.clone()]);
        let o1 = out[0].as_ref().unwrap();
        let o2 = out[1].as_ref().unwrap();
        assert_eq!(o1.indices, oracle(&a, &b), "{n1} {n2} {overlap}: client 1");
        assert_eq!(o2.indices, oracle(&b, &a), "{n1} {n2} {overlap}: client 2");
        assert_eq!(o1.sizes, vec![n1 as u64, n2 as u64]);
        assert_eq!(o2.sizes, o1.sizes);
        assert_eq!(o1.label_len, labels::label_len(&o1.sizes, 40).unwrap());
    }
    assert_eq!(srv.runs(), 0, "finished runs are forgotten");
    assert!(store.is_empty(), "finished runs leave no labels");
}

/// Three sets: in all three 0..40; in 1 and 2 only 40..70; in 2 and 3 only 70..90; in 1 and
/// 3 only 90..95; own 30, 20, 10; each rotated so that the matches are not a prefix. Sizes
/// 105, 110, 75.
fn three_sets() -> Vec<Records> {
    let rec = |tag: &str, i: usize| format!("{tag}{i}@example.org").into_bytes();
    let mut sets = vec![Vec::new(), Vec::new(), Vec::new()];
    for i in 0..40 {
        for s in &mut sets {
            s.push(rec("all", i));
        }
    }
    for i in 40..70 {
        sets[0].push(rec("ab", i));
        sets[1].push(rec("ab", i));
    }
    for i in 70..90 {
        sets[1].push(rec("bc", i));
        sets[2].push(rec("bc", i));
    }
    for i in 90..95 {
        sets[0].push(rec("ac", i));
        sets[2].push(rec("ac", i));
    }
    for (c, own) in [30, 20, 10].into_iter().enumerate() {
        for i in 0..own {
            sets[c].push(rec(&format!("own{c}-"), i));
        }
    }
    // Shuffle each set's rows so that the matches are not a prefix.
    for (c, s) in sets.iter_mut().enumerate() {
        let k = s.len();
        s.rotate_left(7 * (c + 1) % k);
    }
    sets
}

#[test]
fn three_clients_learn_the_rows_all_three_hold() {
    let sets = three_sets();
    let (srv, store) = server(quick());
    let out = run_clients(&srv, "three", &sets);
    for (i, o) in out.iter().enumerate() {
        let o = o.as_ref().unwrap();
        assert_eq!(o.indices, expected(&sets, i), "client {}", i + 1);
        assert_eq!(o.indices.len(), 40);
        assert_eq!(o.sizes, vec![105, 110, 75]);
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

#[test]
fn a_hundred_concurrent_runs_each_get_their_own_result() {
    let (srv, store) = server(quick());
    let runs: Vec<(Records, Records)> = (0..100)
        .map(|r| sets_with_overlap(50 + r, 60, 20 + r % 7, 9000 + r as u64))
        .collect();
    std::thread::scope(|s| {
        let hs: Vec<_> = runs
            .iter()
            .enumerate()
            .map(|(r, (a, b))| {
                let srv = &srv;
                s.spawn(move || {
                    (
                        r,
                        run_clients(srv, &format!("run-{r}"), &[a.clone(), b.clone()]),
                    )
                })
            })
            .collect();
        for h in hs {
            let (r, out) = h.join().unwrap();
            let (a, b) = &runs[r];
            assert_eq!(out[0].as_ref().unwrap().indices, oracle(a, b), "run {r}");
            assert_eq!(out[1].as_ref().unwrap().indices, oracle(b, a), "run {r}");
        }
    });
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// A raw client: sends `submit` and returns the channel after the server's first status.
pub(crate) fn raw_submit(
    srv: &Arc<Server>,
    submit: &Submit,
) -> (MemoryChannel, Status, std::thread::JoinHandle<()>) {
    let (mut c, mut s) = memory_pair(Duration::from_secs(10));
    let srv = srv.clone();
    let h = std::thread::spawn(move || {
        let _ = srv.serve(&mut s, "test");
    });
    send_msg(&mut c, MSG_SUBMIT, submit).unwrap();
    let st = recv_status(&mut c).unwrap();
    (c, st, h)
}

/// A `kmrs_semi` submit hello of party `party` of 2 in run `run`, both parties announcing
/// `count` keys.
pub(crate) fn submit(run: &str, party: u32, count: u64) -> Submit {
    sized(run, party, &[count, count])
}

/// A `kmrs_semi` submit hello of party `party` of `sizes.len()` in run `run`, the parties
/// announcing `sizes` (party `party` sends its own count of labels).
pub(crate) fn sized(run: &str, party: u32, sizes: &[u64]) -> Submit {
    Submit {
        version: WIRE_VERSION,
        protocol: kmrs_semi::NAME.to_owned(),
        run: run.to_owned(),
        party,
        parties: sizes.len() as u32,
        label_len: 8,
        count: sizes.get(party as usize - 1).copied().unwrap_or(0),
        params: vec![
            ("parties".into(), sizes.len().to_string()),
            ("run".into(), run.into()),
        ],
        sizes: sizes.to_vec(),
        identities: Vec::new(),
    }
}

/// The refusal a waiting client receives after its keep-alives.
pub(crate) fn refusal_after_waiting(c: &mut MemoryChannel) -> String {
    loop {
        match recv_status(c).unwrap() {
            Status::Waiting { .. } => {}
            other => return refusal(other),
        }
    }
}

fn refusal(st: Status) -> String {
    match st {
        Status::Refused(why) => why,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn the_server_refuses_what_does_not_fit_the_run() {
    let (srv, store) = server(quick());
    // Party 1 joins and waits.
    let (c1, st, h1) = raw_submit(&srv, &submit("r", 1, 2));
    assert_eq!(st, Status::Accepted);
    // A second party 1, n without a size for each party, the version, an unknown protocol, a
    // party outside 1..=n, a run id with a space, a count over the server's limit.
    let (_, st, _) = raw_submit(&srv, &submit("r", 1, 2));
    assert!(refusal(st).contains("party 1 of run r has already joined"));
    let (_, st, _) = raw_submit(
        &srv,
        &Submit {
            parties: 3,
            ..submit("r", 2, 2)
        },
    );
    assert_eq!(refusal(st), "2 set sizes for 3 parties");
    let (_, st, _) = raw_submit(
        &srv,
        &Submit {
            version: 9,
            ..submit("r", 2, 2)
        },
    );
    assert!(refusal(st).contains("wire version 9"));
    let (_, st, _) = raw_submit(
        &srv,
        &Submit {
            protocol: "ecdh".into(),
            ..submit("r", 2, 2)
        },
    );
    assert!(refusal(st).contains("not `ecdh`"));
    let (_, st, _) = raw_submit(&srv, &submit("r", 3, 2));
    assert!(refusal(st).contains("party 3 of 2"));
    let (_, st, _) = raw_submit(&srv, &submit("bad id", 1, 2));
    assert!(refusal(st).contains("printable"));
    let limited = Arc::new(Server::new(
        Arc::new(MemoryStore::new()),
        ServerConfig {
            max_labels: 10,
            ..quick()
        },
    ));
    let (_, st, _) = raw_submit(&limited, &submit("r", 1, 11));
    assert!(refusal(st).contains("limit of 10"));
    // Party 1 leaves before sending its labels: the run is gone, with its labels.
    drop(c1);
    h1.join().unwrap();
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// A client submits exactly the labels its announced set size makes, whatever else it
/// claims: 10 keys announced to the other clients, 2^32 labels (or 11) submitted, is refused
/// before any label arrives (`kmrs_semi`: one label per key; `kmrs_mal`: copies per key and the
/// dummy sets).
#[test]
fn a_client_cannot_submit_more_labels_than_its_announced_size_makes() {
    let (srv, store) = server(quick());
    for count in [11, 1 << 32] {
        let (_, st, h) = raw_submit(
            &srv,
            &Submit {
                count,
                ..sized("guess", 1, &[10, 10])
            },
        );
        h.join().unwrap();
        assert_eq!(
            refusal(st),
            format!(
                "party 1 announced 10 distinct keys to the other clients, which make 10 labels \
                 in a kmrs_semi run, not {count}"
            )
        );
    }
    let mal = |party: u32, count: u64| Submit {
        protocol: kmrs_mal::NAME.into(),
        count,
        params: vec![
            ("copies".into(), "3".into()),
            ("dummies".into(), "4".into()),
            ("parties".into(), "2".into()),
            ("run".into(), "guess".into()),
        ],
        ..sized("guess", party, &[10, 20])
    };
    // 3 copies of each key and the dummy sets D0 and D_i of 4 labels each.
    assert_eq!(kmrs_mal::label_count(20, 3, 4, 2).unwrap(), 68);
    let (_, st, h) = raw_submit(&srv, &mal(2, 69));
    h.join().unwrap();
    assert!(
        refusal(st).contains("party 2 announced 20 distinct keys to the other clients, which make 68 labels in a kmrs_mal run, not 69"),
    );
    let (c, st, h) = raw_submit(&srv, &mal(2, 68));
    assert_eq!(st, Status::Accepted);
    drop(c);
    h.join().unwrap();
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// A client that claims 2^32 labels of 16 bytes for a `kmrs_size` run (64 GiB, and its
/// relabelling) is refused when it joins, in one line, before any label arrives; the server
/// has reserved nothing afterwards and serves the next run.
#[test]
fn a_claim_beyond_the_servers_memory_is_refused_when_the_client_joins() {
    let (srv, store) = server(quick());
    // The largest kmrs_size party-1 set below 2^32 labels at the defaults (3 copies, 2^20
    // dummies in each of 2 sets).
    let size = ((1u64 << 32) - (1 << 21)) / 3;
    let count = kmrs_mal::label_count(size, 3, 1 << 20, 2).unwrap();
    let claim = Submit {
        protocol: kmrs_size::NAME.into(),
        label_len: 16,
        count,
        params: vec![
            ("copies".into(), "3".into()),
            ("dummies".into(), (1u64 << 20).to_string()),
            ("parties".into(), "2".into()),
            ("run".into(), "huge".into()),
        ],
        ..sized("huge", 1, &[size, 1])
    };
    let (_, st, h) = raw_submit(&srv, &claim);
    h.join().unwrap();
    let why = refusal(st);
    assert!(
        why.starts_with("the run needs 192.0 GiB of this server's memory for this client, and 4.0 GiB of its 4.0 GiB are free"),
        "{why}"
    );
    assert_eq!(srv.memory_used(), 0);
    assert_eq!(srv.runs(), 0);
    // The server goes on: an honest run completes with its exact rows.
    let (a, b) = sets_with_overlap(40, 30, 12, 7);
    let out = run_clients(&srv, "after", &[a.clone(), b.clone()]);
    assert_eq!(out[0].as_ref().unwrap().indices, oracle(&a, &b));
    assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a));
    assert_eq!(srv.memory_used(), 0);
    assert!(store.is_empty());
}

/// A client whose parameters differ from the run's (another label length, another run
/// parameter, other set sizes: what a squatter who knows the run id submits) lands in a run of
/// its own: it takes no honest client's slot, and the honest run completes.
#[test]
fn a_client_with_other_parameters_cannot_take_a_slot_of_the_run() {
    let (srv, store) = server(quick());
    let squatters = [
        Submit {
            label_len: 9,
            ..submit("r", 2, 2)
        },
        {
            let mut other = submit("r", 2, 2);
            other
                .params
                .push(("key check".into(), "0000000000000000".into()));
            other
        },
        sized("r", 2, &[2, 3]),
    ];
    let mut held = Vec::new();
    for s in &squatters {
        let (c, st, h) = raw_submit(&srv, s);
        assert_eq!(st, Status::Accepted);
        held.push((c, h));
    }
    assert_eq!(srv.runs(), 3);
    let (mut c1, st, h1) = raw_submit(&srv, &submit("r", 1, 2));
    assert_eq!(st, Status::Accepted);
    let (mut c2, st, h2) = raw_submit(&srv, &submit("r", 2, 2));
    assert_eq!(st, Status::Accepted);
    c1.send(MSG_LABELS, &[[1u8; 8], [3; 8]].concat()).unwrap();
    c2.send(MSG_LABELS, &[[2u8; 8], [3; 8]].concat()).unwrap();
    for c in [&mut c1, &mut c2] {
        loop {
            match recv_status(c).unwrap() {
                Status::Waiting { .. } => {}
                Status::Result { matches } => {
                    assert_eq!(matches, 1);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            blindjoin_core::channel::FrameReceiver::recv(c, MSG_BITS, 16).unwrap(),
            vec![0b10]
        );
        c.send(
            blindjoin_psi::protocols::server_aided::wire::MSG_RECEIVED,
            &[],
        )
        .unwrap();
    }
    h1.join().unwrap();
    h2.join().unwrap();
    for (c, h) in held {
        drop(c);
        h.join().unwrap();
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// A run that times out while clients with other parameters wait for the same run id says
/// so: the likely cause is a client started with other options. A run times out only while
/// it waits after a client's labels: the first client sends its labels once the second has
/// joined, and the second once the first run has failed, so the first run is the one that
/// times out, while the other is still there.
#[test]
fn a_timed_out_run_names_the_submissions_with_other_parameters() {
    let (srv, _) = server(ServerConfig {
        run_timeout: Duration::from_millis(300),
        ..quick()
    });
    let (mut c1, st, h1) = raw_submit(&srv, &submit("x", 1, 2));
    assert_eq!(st, Status::Accepted);
    let (mut c2, st, h2) = raw_submit(&srv, &sized("x", 2, &[2, 3]));
    assert_eq!(st, Status::Accepted);
    c1.send(MSG_LABELS, &[[1u8; 8], [3; 8]].concat()).unwrap();
    let why = refusal_after_waiting(&mut c1);
    assert_eq!(
        why,
        "1 of 2 parties sent their labels within the run timeout of 300 ms; 1 other \
         submission(s) for run x differ in set sizes, certificates or parameters: give \
         every client the same options"
    );
    h1.join().unwrap();
    c2.send(MSG_LABELS, &[[2u8; 8], [3; 8], [4; 8]].concat())
        .unwrap();
    assert_eq!(
        refusal_after_waiting(&mut c2),
        "1 of 2 parties sent their labels within the run timeout of 300 ms"
    );
    h2.join().unwrap();
    assert_eq!(srv.runs(), 0);
}

#[test]
fn labels_out_of_order_fail_the_run_for_everyone() {
    let (srv, store) = server(quick());
    let (mut c1, st, h1) = raw_submit(&srv, &submit("o", 1, 2));
    assert_eq!(st, Status::Accepted);
    c1.send(
        MSG_LABELS,
        &[1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2],
    )
    .unwrap();
    let (mut c2, st, h2) = raw_submit(&srv, &submit("o", 2, 2));
    assert_eq!(st, Status::Accepted);
    // Descending: refused; party 1, waiting, hears why.
    c2.send(
        MSG_LABELS,
        &[3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2],
    )
    .unwrap();
    h2.join().unwrap();
    let why = refusal_after_waiting(&mut c1);
    assert!(why.contains("party 2 did not deliver its labels"), "{why}");
    assert!(why.contains("strictly ascending"), "{why}");
    assert!(matches!(
        recv_status(&mut c2),
        Err(Error::PeerClosed { .. })
    ));
    h1.join().unwrap();
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

#[test]
fn a_run_that_does_not_complete_in_time_fails_and_is_forgotten() {
    let (srv, store) = server(ServerConfig {
        run_timeout: Duration::from_millis(300),
        ..quick()
    });
    let (mut c1, st, h1) = raw_submit(&srv, &submit("t", 1, 1));
    assert_eq!(st, Status::Accepted);
    c1.send(MSG_LABELS, &[7; 8]).unwrap();
    let mut waits = 0;
    let why = loop {
        match recv_status(&mut c1).unwrap() {
            Status::Waiting { joined } => {
                assert_eq!(joined, 1);
                waits += 1;
            }
            other => break refusal(other),
        }
    };
    assert!(waits >= 1, "keep-alives while waiting");
    assert!(
        why.contains("1 of 2 parties sent their labels within the run timeout"),
        "{why}"
    );
    h1.join().unwrap();
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
    // The id is free again.
    let (_, st, _) = raw_submit(&srv, &submit("t", 1, 1));
    assert_eq!(st, Status::Accepted);
}

/// Party 1 has sent its labels and waits; party 2 is accepted, sends 100 of its 1000 labels,
/// then its connection drops: party 1 hears why, and `held` (the label sets or files the
/// store holds), `before` while both parties are in, is 0 afterwards.
fn disconnect_mid_labels(store: Arc<dyn Store>, held: &dyn Fn() -> usize, before: usize) {
    let srv = Arc::new(Server::new(store, quick()));
    let (mut c1, st, h1) = raw_submit(&srv, &sized("d", 1, &[1, 1000]));
    assert_eq!(st, Status::Accepted);
    c1.send(MSG_LABELS, &[5; 8]).unwrap();
    let (mut c2, st, h2) = raw_submit(&srv, &sized("d", 2, &[1, 1000]));
    assert_eq!(st, Status::Accepted);
    let labels: Vec<u8> = (0..100u64).flat_map(|v| v.to_be_bytes()).collect();
    c2.send(MSG_LABELS, &labels).unwrap();
    while held() < before {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(c2);
    h2.join().unwrap();
    let why = refusal_after_waiting(&mut c1);
    assert!(why.contains("party 2 did not deliver its labels"), "{why}");
    assert!(why.contains("closed the connection"), "{why}");
    h1.join().unwrap();
    assert_eq!(srv.runs(), 0);
    assert_eq!(held(), 0);
}

#[test]
fn a_client_that_disconnects_ends_the_run_with_a_clear_error() {
    // In memory, party 1's finished set; on disk, its file and party 2's partial one.
    let memory = Arc::new(MemoryStore::new());
    disconnect_mid_labels(memory.clone(), &|| memory.len(), 1);
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(DiskStore::with_buffer(dir.path(), 64).unwrap());
    disconnect_mid_labels(disk.clone(), &|| disk.files().unwrap(), 2);
}

/// The same runs on a server over a [`DiskStore`] (read buffers of a few labels, so that a set
/// spans many blocks) and over a [`MemoryStore`]: the same rows; no label file left behind.
#[test]
fn a_disk_store_gives_the_rows_of_the_memory_store() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(DiskStore::with_buffer(dir.path(), 100).unwrap());
    let on_disk = Server::new(disk.clone(), quick());
    let (in_memory, _) = server(quick());
    let mut cases: Vec<Vec<Records>> = BASE_CASES
        .iter()
        .enumerate()
        .map(|(k, &(n1, n2, overlap))| {
            let (a, b) = sets_with_overlap(n1, n2, overlap, 700 + k as u64);
            vec![a, b]
        })
        .collect();
    let (a, b) = sets_with_overlap(300, 200, 120, 800);
    let (c, _) = sets_with_overlap(250, 1, 0, 801);
    let mut seen = HashSet::new();
    let third: Records = a[..150]
        .iter()
        .chain(&b[..60])
        .chain(&c)
        .filter(|r| seen.insert(r.to_vec()))
        .cloned()
        .collect();
    cases.push(vec![a, b, third]);
    for (k, sets) in cases.iter().enumerate() {
        let run = format!("disk-{k}");
        let want = run_clients(&in_memory, &run, sets);
        let got = run_clients(&on_disk, &run, sets);
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            let (w, g) = (w.as_ref().unwrap(), g.as_ref().unwrap());
            assert_eq!(g.indices, w.indices, "case {k}, client {}", i + 1);
            assert_eq!(g.indices, expected(sets, i), "case {k}, client {}", i + 1);
        }
        assert_eq!(disk.files().unwrap(), 0, "case {k}");
    }
    assert_eq!(on_disk.runs(), 0);
}

#[test]
fn receive_and_send_refuse_a_server_aided_protocol() {
    let (mut a, _b) = memory_pair(Duration::from_secs(1));
    let err = P
        .receive(&mut a, &[], &RunOptions::default(), &mut rng(1))
        .unwrap_err();
    assert!(err.to_string().contains("server-aided"), "{err}");
}

// `kmrs_mal`: the same runs, and servers that cheat.

const MAL: &Protocol = &kmrs_mal::PROTOCOL;

/// `kmrs_mal` options with `copies` and `dummies` (covert, so that small dummy sets run).
fn mal(copies: u32, dummies: u64) -> RunOptions {
    RunOptions {
        copies,
        dummies,
        covert: true,
        ..RunOptions::default()
    }
}

/// Runs `kmrs_mal` with the same options for every client.
fn run_mal(
    server: &Server,
    run: &str,
    sets: &[Records],
    opts: &RunOptions,
    seed: u64,
) -> Vec<blindjoin_core::Result<ClientOutput>> {
    run_protocol(
        server,
        MAL,
        run,
        sets,
        &vec![opts.clone(); sets.len()],
        seed,
    )
}

#[test]
fn mal_two_clients_learn_the_exact_rows() {
    let (srv, store) = server(quick());
    let opts = mal(3, 16);
    for (k, &(n1, n2, overlap)) in BASE_CASES.iter().enumerate() {
        let (a, b) = sets_with_overlap(n1, n2, overlap, 600 + k as u64);
        let out = run_mal(&srv, &format!("mal-{k}"), &[a.clone(), b.clone()], &opts, 0);
        let o1 = out[0].as_ref().unwrap();
        let o2 = out[1].as_ref().unwrap();
        assert_eq!(o1.indices, oracle(&a, &b), "{n1} {n2} {overlap}: client 1");
        assert_eq!(o2.indices, oracle(&b, &a), "{n1} {n2} {overlap}: client 2");
        assert_eq!(o1.sizes, vec![n1 as u64, n2 as u64]);
        let counts = [3 * n1 as u64 + 32, 3 * n2 as u64 + 32];
        assert_eq!(o1.label_len, labels::label_len(&counts, 40).unwrap());
        assert_eq!(o2.label_len, o1.label_len);
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

#[test]
fn mal_three_clients_learn_the_rows_all_three_hold() {
    let sets = three_sets();
    let (srv, store) = server(quick());
    for (copies, dummies) in [(3, 16), (2, 2)] {
        let out = run_mal(&srv, "mal-three", &sets, &mal(copies, dummies), 0);
        for (i, o) in out.iter().enumerate() {
            let o = o.as_ref().unwrap();
            assert_eq!(o.indices, expected(&sets, i), "client {}", i + 1);
            assert_eq!(o.indices.len(), 40);
            assert_eq!(o.sizes, vec![105, 110, 75]);
        }
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// The defaults (3 copies, 2^20 dummies per set: 2^-40) at a small size.
#[test]
fn mal_runs_with_the_default_parameters() {
    let (srv, _) = server(quick());
    let (a, b) = sets_with_overlap(100, 80, 30, 77);
    let out = run_mal(
        &srv,
        "mal-default",
        &[a.clone(), b.clone()],
        &RunOptions::default(),
        0,
    );
    let o1 = out[0].as_ref().unwrap();
    assert_eq!(o1.indices, oracle(&a, &b));
    assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a));
    let counts = [300 + (2 << 20), 240 + (2 << 20)];
    assert_eq!(o1.label_len, labels::label_len(&counts, 40).unwrap());
}

#[test]
fn mal_clients_must_agree_on_copies_and_dummies() {
    let (srv, store) = server(quick());
    let (a, b) = sets_with_overlap(10, 10, 3, 5);
    for (theirs, field) in [(mal(4, 16), "copies"), (mal(3, 17), "dummies")] {
        let out = run_protocol(
            &srv,
            MAL,
            "mismatch",
            &[a.clone(), b.clone()],
            &[mal(3, 16), theirs],
            0,
        );
        for o in out {
            match o {
                Err(Error::ParamMismatch { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
    // Parameters short of 2^-λ are refused before anything is sent, unless covert.
    let weak = RunOptions {
        covert: false,
        ..mal(3, 16)
    };
    for o in run_protocol(
        &srv,
        MAL,
        "weak",
        &[a.clone(), b.clone()],
        &[weak.clone(), weak],
        0,
    ) {
        assert!(
            matches!(
                o,
                Err(Error::InvalidParam {
                    field: "dummies",
                    ..
                })
            ),
            "{o:?}"
        );
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// How a cheating server changes the honest bit vectors: `(bits per party, labels per party,
/// label length)`.
type Cheat = Box<dyn FnMut(&mut [Vec<u8>], &[Vec<u8>], usize) + Send>;

/// Every party's labels by (run, party), as a [`CheatingStore`] copies them.
type Copies = Arc<Mutex<HashMap<(String, u32), Vec<u8>>>>;

/// A store that keeps a copy of every party's labels and lets `cheat` alter the honest
/// intersection before the server answers.
struct CheatingStore {
    inner: MemoryStore,
    labels: Copies,
    cheat: Mutex<Cheat>,
}

impl CheatingStore {
    fn new(cheat: Cheat) -> Self {
        CheatingStore {
            inner: MemoryStore::new(),
            labels: Arc::default(),
            cheat: Mutex::new(cheat),
        }
    }
}

struct TeeWriter {
    inner: Box<dyn LabelWriter>,
    copy: Vec<u8>,
    key: (String, u32),
    labels: Copies,
}

impl LabelWriter for TeeWriter {
    fn write(&mut self, labels: &[u8]) -> blindjoin_core::Result<()> {
        self.copy.extend_from_slice(labels);
        self.inner.write(labels)
    }

    fn finish(self: Box<Self>) -> blindjoin_core::Result<()> {
        let TeeWriter {
            inner,
            copy,
            key,
            labels,
        } = *self;
        labels.lock().unwrap().insert(key, copy);
        inner.finish()
    }
}

impl Store for CheatingStore {
    fn describe(&self) -> String {
        "cheating".into()
    }

    fn writer(
        &self,
        run: &str,
        party: u32,
        label_len: usize,
        count: u64,
    ) -> blindjoin_core::Result<Box<dyn LabelWriter>> {
        Ok(Box::new(TeeWriter {
            inner: self.inner.writer(run, party, label_len, count)?,
            copy: Vec::new(),
            key: (run.to_owned(), party),
            labels: self.labels.clone(),
        }))
    }

    fn intersect(
        &self,
        run: &str,
        label_len: usize,
        counts: &[u64],
    ) -> blindjoin_core::Result<Vec<Vec<u8>>> {
        let mut bits = self.inner.intersect(run, label_len, counts)?;
        let labels = self.labels.lock().unwrap();
        let sets: Vec<Vec<u8>> = (1..=counts.len() as u32)
            .map(|p| labels[&(run.to_owned(), p)].clone())
            .collect();
        (self.cheat.lock().unwrap())(&mut bits, &sets, label_len);
        Ok(bits)
    }

    fn remove(&self, run: &str) {
        self.inner.remove(run);
        self.labels.lock().unwrap().retain(|(r, _), _| r != run);
    }
}

fn bit(bits: &[u8], k: usize) -> bool {
    bits[k / 8] >> (k % 8) & 1 == 1
}

fn flip(bits: &mut [u8], k: usize) {
    bits[k / 8] ^= 1 << (k % 8);
}

/// Each way of cheating party 1 is caught by party 1, every time, in runs of two and three
/// clients; the other clients, answered honestly, get their exact rows.
#[test]
fn mal_a_cheating_server_is_caught() {
    type Alter = fn(&mut Vec<u8>, usize);
    let cheats: [(&str, Alter); 4] = [
        ("omits one label of the intersection", |b, n| {
            let k = (0..n).find(|&k| bit(b, k)).unwrap();
            flip(b, k);
        }),
        ("adds one label not in the intersection", |b, n| {
            let k = (0..n).rev().find(|&k| !bit(b, k)).unwrap();
            flip(b, k);
        }),
        ("drops the whole set", |b, _| {
            b.iter_mut().for_each(|x| *x = 0)
        }),
        ("marks every label", |b, n| {
            for k in 0..n {
                if !bit(b, k) {
                    flip(b, k);
                }
            }
        }),
    ];
    let (a, b) = sets_with_overlap(40, 50, 12, 31);
    let (c, d) = sets_with_overlap(40, 50, 0, 32);
    let cases: Vec<Vec<Records>> = vec![vec![a, b], vec![c, d], three_sets()];
    for (name, alter) in cheats {
        let store = Arc::new(CheatingStore::new(Box::new(move |bits, sets, len| {
            alter(&mut bits[0], sets[0].len() / len)
        })));
        let srv = Server::new(store.clone(), quick());
        for (k, sets) in cases.iter().enumerate() {
            for (copies, dummies) in [(3, 16), (2, 2)] {
                let out = run_mal(
                    &srv,
                    &format!("c{k}"),
                    sets,
                    &mal(copies, dummies),
                    k as u64,
                );
                match &out[0] {
                    Err(e @ Error::ServerCheated(_)) => {
                        assert!(e.to_string().starts_with("the server cheated: "), "{e}")
                    }
                    other => panic!("{name}, case {k}: {other:?}"),
                }
                for (i, o) in out.iter().enumerate().skip(1) {
                    assert_eq!(o.as_ref().unwrap().indices, expected(sets, i), "{name}");
                }
            }
        }
        assert_eq!(srv.runs(), 0);
        assert!(store.inner.is_empty() && store.labels.lock().unwrap().is_empty());
    }
}

/// With three clients the server sees which clients share each label. Clients 1 and 2 share
/// one element that client 3 lacks; a server that marks every label only 1 and 2 share (so that
/// the element looks common to all three) would succeed for certain against dummy sets D0 and
/// D_i alone. The dummy set of {1, 2} gives that pattern t more labels, which the server marks
/// too: 1 and 2 catch it; 3, answered honestly, gets its row.
#[test]
fn mal_a_server_that_uses_the_sub_intersections_is_caught() {
    let store = Arc::new(CheatingStore::new(Box::new(|bits, sets, len| {
        let has = |p: usize, l: &[u8]| sets[p].chunks_exact(len).position(|x| x == l);
        let pair: Vec<Vec<u8>> = sets[0]
            .chunks_exact(len)
            .filter(|l| has(1, l).is_some() && has(2, l).is_none())
            .map(<[u8]>::to_vec)
            .collect();
        // The element's 3 copies and D_{1,2}'s 16 dummies.
        assert_eq!(pair.len(), 3 + 16);
        for l in &pair {
            for (p, b) in bits.iter_mut().enumerate().take(2) {
                let k = has(p, l).unwrap();
                assert!(!bit(b, k));
                flip(b, k);
            }
        }
    })));
    let srv = Server::new(store.clone(), quick());
    let r = |s: &str| s.as_bytes().to_vec();
    let sets: Vec<Records> = vec![
        vec![r("all"), r("one and two"), r("only one")],
        vec![r("only two"), r("one and two"), r("all")],
        vec![r("all"), r("only three")],
    ];
    let out = run_mal(&srv, "pattern", &sets, &mal(3, 16), 0);
    for o in &out[..2] {
        match o {
            Err(e @ Error::ServerCheated(_)) => assert!(
                e.to_string()
                    .contains("16 of the 48 labels of the dummy sets that not every client sends"),
                "{e}"
            ),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(out[2].as_ref().unwrap().indices, vec![0]);
}

/// The probability of catching the server, measured. Covert parameters λ = t = 2, two clients
/// sharing k = 1 element: the intersection holds 2k + t = 4 labels (the element's 2 copies and
/// D0's 2), which the server cannot tell apart. A server that omits a uniformly random pair of
/// them from every client's answer escapes only when the pair is the element's two copies:
/// probability k / C(2k + t, 2) = 1/6 (the paper's bound (1/t)^(λ−1) = 1/2 holds for every
/// strategy; this one does better). Over N = 3000 seeded runs the number of escapes is checked
/// against the exact binomial(3000, 1/6) distribution: it must lie in the central interval
/// outside of which the binomial puts at most 2^-30 on each side.
#[test]
fn mal_a_covert_server_is_caught_with_the_stated_probability() {
    const N: u64 = 3000;
    let p_escape: f64 = 1.0 / 6.0;
    let rng_state = Arc::new(Mutex::new(rng(2024)));
    let r = rng_state.clone();
    let store = Arc::new(CheatingStore::new(Box::new(move |bits, sets, len| {
        // The intersection's labels, from party 1's answer.
        let n1 = sets[0].len() / len;
        let inter: Vec<&[u8]> = (0..n1)
            .filter(|&k| bit(&bits[0], k))
            .map(|k| &sets[0][k * len..(k + 1) * len])
            .collect();
        assert_eq!(inter.len(), 4);
        let mut r = r.lock().unwrap();
        let i = r.random_range(0..4);
        let j = (i + 1 + r.random_range(0..3)) % 4;
        for label in [inter[i], inter[j]] {
            for (p, set) in sets.iter().enumerate() {
                let k = set.chunks_exact(len).position(|l| l == label).unwrap();
                flip(&mut bits[p], k);
            }
        }
    })));
    let srv = Server::new(store.clone(), quick());
    let a: Records = vec![b"shared".to_vec(), b"only a".to_vec()];
    let b: Records = vec![
        b"only b".to_vec(),
        b"shared".to_vec(),
        b"also only b".to_vec(),
    ];
    let mut escapes = 0u64;
    for trial in 0..N {
        let out = run_mal(
            &srv,
            "covert",
            &[a.clone(), b.clone()],
            &mal(2, 2),
            10 * trial,
        );
        match (&out[0], &out[1]) {
            (Ok(x), Ok(y)) => {
                // Undetected: the shared element is gone from both results.
                assert!(x.indices.is_empty() && y.indices.is_empty());
                escapes += 1;
            }
            (Err(Error::ServerCheated(_)), Err(Error::ServerCheated(_))) => {}
            other => panic!("trial {trial}: {other:?}"),
        }
    }
    // Exact binomial tails: pmf(x + 1) = pmf(x)·(N − x)/(x + 1)·p/(1 − p).
    let mut pmf = vec![(1.0 - p_escape).powi(N as i32)];
    for x in 0..N {
        let next = pmf[x as usize] * (N - x) as f64 / (x + 1) as f64 * p_escape / (1.0 - p_escape);
        pmf.push(next);
    }
    let tail = 2f64.powi(-30);
    let (mut lo, mut below) = (0u64, 0.0);
    while below + pmf[lo as usize] <= tail {
        below += pmf[lo as usize];
        lo += 1;
    }
    let (mut hi, mut above) = (N, 0.0);
    while above + pmf[hi as usize] <= tail {
        above += pmf[hi as usize];
        hi -= 1;
    }
    // Mean 500, standard deviation 20.4: the interval is [381, 626], about ±6 standard
    // deviations (this seed gives 527 escapes, a detection rate of 0.824 against 5/6).
    assert!(lo > 350 && hi < 650, "[{lo}, {hi}]");
    assert!(
        (lo..=hi).contains(&escapes),
        "{escapes} escapes in {N} runs, outside [{lo}, {hi}]"
    );
    // The measured detection rate is far above the deterrence 1/2 the paper states.
    assert!(escapes < N / 2);
    assert_eq!(srv.runs(), 0);
    drop(rng_state);
}

// `kmrs_fair` and `kmrs_size`: two clients each; cheating servers and clients.

const FAIR: &Protocol = &kmrs_fair::PROTOCOL;
const SIZE: &Protocol = &kmrs_size::PROTOCOL;

/// Runs `p` for two clients with the same options, one frame altered if `tamper`.
fn run_two(
    server: &Server,
    p: &'static Protocol,
    run: &str,
    sets: &[Records],
    opts: &RunOptions,
    tamper: Option<(Side, Target, Attack)>,
) -> Vec<blindjoin_core::Result<ClientOutput>> {
    run_tampered(
        server,
        p,
        run,
        sets,
        &[opts.clone(), opts.clone()],
        0,
        tamper,
    )
}

/// The reason a server refusal gives, or a panic naming what came instead.
fn refused_with(out: &blindjoin_core::Result<ClientOutput>) -> String {
    match out {
        Err(Error::PeerRefused(why)) => why.clone(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn fair_and_size_two_clients_learn_the_exact_rows() {
    let (srv, store) = server(quick());
    let opts = mal(3, 16);
    for p in [FAIR, SIZE] {
        for (k, &(n1, n2, overlap)) in BASE_CASES.iter().enumerate() {
            let (a, b) = sets_with_overlap(n1, n2, overlap, 700 + k as u64);
            let out = run_two(
                &srv,
                p,
                &format!("{k}"),
                &[a.clone(), b.clone()],
                &opts,
                None,
            );
            let o1 = out[0].as_ref().unwrap();
            let o2 = out[1].as_ref().unwrap();
            assert_eq!(
                o1.indices,
                oracle(&a, &b),
                "{p} {n1} {n2} {overlap}: client 1"
            );
            assert_eq!(
                o2.indices,
                oracle(&b, &a),
                "{p} {n1} {n2} {overlap}: client 2"
            );
            assert_eq!(o2.sizes, vec![n1 as u64, n2 as u64]);
            let counts = [3 * n1 as u64 + 32, 3 * n2 as u64 + 32];
            // kmrs_size truncates twice, so it asks λ + 1 of each truncation.
            let lambda = if p.name == kmrs_size::NAME { 41 } else { 40 };
            assert_eq!(o1.label_len, labels::label_len(&counts, lambda).unwrap());
        }
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// Server-aided PET (KMRS14 §1.2): `kmrs_size` on one element each, at the default copies
/// and dummies (2^-40).
#[test]
fn size_with_one_element_each_is_an_equality_test() {
    let (srv, _) = server(quick());
    let one = |s: &str| vec![s.as_bytes().to_vec()];
    for (x, y, equal) in [
        ("alice@example.org", "alice@example.org", true),
        ("a", "b", false),
    ] {
        let out = run_two(
            &srv,
            SIZE,
            "pet",
            &[one(x), one(y)],
            &RunOptions::default(),
            None,
        );
        let want: Vec<usize> = if equal { vec![0] } else { vec![] };
        assert_eq!(out[0].as_ref().unwrap().indices, want, "{x} {y}");
        assert_eq!(out[1].as_ref().unwrap().indices, want, "{x} {y}");
    }
    assert_eq!(srv.runs(), 0);
}

#[test]
fn fair_and_size_refuse_more_than_two_clients() {
    let (srv, _) = server(quick());
    for p in [FAIR, SIZE] {
        let out = run_protocol(&srv, p, "three", &three_sets(), &vec![mal(3, 16); 3], 0);
        for o in &out {
            assert!(
                matches!(
                    o,
                    Err(Error::InvalidParam {
                        field: "parties",
                        ..
                    })
                ),
                "{p}: {o:?}"
            );
        }
    }
    assert_eq!(srv.runs(), 0);
}

/// `kmrs_fair` and `kmrs_size` take `kmrs_mal`'s copies and dummies: short of 2^-λ they are
/// refused before anything is sent, unless covert security was asked for.
#[test]
fn fair_and_size_refuse_parameters_short_of_lambda_unless_covert() {
    let (srv, _) = server(quick());
    let (a, b) = sets_with_overlap(10, 10, 3, 5);
    let weak = RunOptions {
        covert: false,
        ..mal(3, 16)
    };
    for p in [FAIR, SIZE] {
        for o in run_two(&srv, p, "weak", &[a.clone(), b.clone()], &weak, None) {
            match o {
                Err(Error::InvalidParam { field, reason }) => {
                    assert_eq!(field, "dummies", "{p}");
                    assert_eq!(
                        reason,
                        "copies = 3 and dummies = 16 let a cheating server escape with \
                         probability (1/t)^(copies-1) = 2^-8.00, above 2^-40; raise them (3 and \
                         2^20 give 2^-40) or accept covert security (deterrence 1 - 2^-8.00)",
                        "{p}"
                    );
                }
                other => panic!("{p}: {other:?}"),
            }
        }
    }
    assert_eq!(srv.runs(), 0);
}

/// `kmrs_fair` against a cheating server: the alterations of `kmrs_mal`'s test are caught by
/// the client cheated; one that opens another bit vector than it committed to is caught by the
/// commitment.
#[test]
fn fair_a_cheating_server_is_caught() {
    type Alter = fn(&mut Vec<u8>, usize);
    let cheats: [(&str, Alter); 3] = [
        ("omits one label of the intersection", |b, n| {
            let k = (0..n).find(|&k| bit(b, k)).unwrap();
            flip(b, k);
        }),
        ("adds one label not in the intersection", |b, n| {
            let k = (0..n).rev().find(|&k| !bit(b, k)).unwrap();
            flip(b, k);
        }),
        ("drops the whole set", |b, _| {
            b.iter_mut().for_each(|x| *x = 0)
        }),
    ];
    let (a, b) = sets_with_overlap(40, 50, 12, 31);
    for (name, alter) in cheats {
        let store = Arc::new(CheatingStore::new(Box::new(move |bits, sets, len| {
            alter(&mut bits[0], sets[0].len() / len)
        })));
        let srv = Server::new(store.clone(), quick());
        let out = run_two(&srv, FAIR, "c", &[a.clone(), b.clone()], &mal(3, 16), None);
        assert!(
            matches!(&out[0], Err(Error::ServerCheated(_))),
            "{name}: {:?}",
            out[0]
        );
        assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a), "{name}");
        assert_eq!(srv.runs(), 0);
        assert!(store.inner.is_empty());
    }
    let (srv, _) = server(quick());
    let out = run_two(
        &srv,
        FAIR,
        "equivocate",
        &[a.clone(), b.clone()],
        &mal(3, 16),
        // Other bits, as many set: the count it announced still holds.
        Some((
            Side::Server(0),
            Target::first(MSG_BITS),
            Attack::Edit(|f| {
                let b = f.iter_mut().find(|b| **b != 0 && **b != 0xff).unwrap();
                *b = b.rotate_left(1);
            }),
        )),
    );
    match &out[0] {
        Err(e @ Error::ServerCheated(_)) => {
            assert!(e.to_string().contains("not the one it committed to"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a));
}

/// Fairness (Thm. 5): a client whose labels are not λ copies of its values and its own dummy
/// set, or whose opening does not match them, is caught by the server before anyone has a
/// result; both clients are refused, with the reason.
#[test]
fn fair_a_client_with_malformed_labels_leaves_both_without_a_result() {
    let (a, b) = sets_with_overlap(40, 50, 12, 33);
    // The last label of party 2's only label frame raised by one: still ascending, no longer a
    // copy of anything it will open.
    let raise_last: fn(&mut Vec<u8>) = |f| {
        let last = f.len() - 1;
        f[last] = f[last].wrapping_add(1);
    };
    let attacks = [
        (Target::first(MSG_LABELS), Attack::Edit(raise_last)),
        (Target::first(MSG_FAIR_OPEN), Attack::FlipBit(0)),
    ];
    for (target, attack) in attacks {
        let (srv, store) = server(quick());
        let out = run_two(
            &srv,
            FAIR,
            "malformed",
            &[a.clone(), b.clone()],
            &mal(3, 16),
            Some((Side::Client(1), target, attack)),
        );
        for o in &out {
            let why = refused_with(o);
            assert!(
                why.contains("party 2's labels are not well formed"),
                "{why}"
            );
        }
        assert_eq!(srv.runs(), 0);
        assert!(store.is_empty());
    }
}

/// `kmrs_size` against a cheating server: T′1 under another key (the whole intersection
/// dropped) is caught by party 2, which refuses to let the server open π3, so party 1 ends
/// with party 2's reason; a wrong π3 is caught by party 1; a key share that does not match the
/// server's commitment is caught by party 2.
#[test]
fn size_a_cheating_server_is_caught() {
    let (a, b) = sets_with_overlap(40, 50, 12, 35);
    let len = labels::label_len(&[3 * 40 + 32, 3 * 50 + 32], 41).unwrap();
    assert_eq!(len, 8, "the edits below assume 8-byte labels");
    // Every label of T′1 plus one in its last byte: still ascending, none equal to T′2's.
    let shift: fn(&mut Vec<u8>) = |f| {
        for l in f.chunks_exact_mut(8) {
            let v = u64::from_be_bytes(l.try_into().unwrap()) + 1;
            l.copy_from_slice(&v.to_be_bytes());
        }
    };
    let reverse: fn(&mut Vec<u8>) = |f| {
        let mut idx: Vec<[u8; 4]> = f.chunks_exact(4).map(|c| c.try_into().unwrap()).collect();
        idx.reverse();
        *f = idx.concat();
    };
    // A client that fails before the other joins leaves it waiting for the run timeout (the
    // server cannot tell that it will not come back): short here.
    let srv = Server::new(
        Arc::new(MemoryStore::new()),
        ServerConfig {
            run_timeout: Duration::from_secs(3),
            ..quick()
        },
    );
    let run = |side, target, attack| {
        run_two(
            &srv,
            SIZE,
            "cheat",
            &[a.clone(), b.clone()],
            &mal(3, 16),
            Some((side, target, attack)),
        )
    };
    let out = run(
        Side::Server(0),
        Target::first(MSG_RELABELLED),
        Attack::Edit(shift),
    );
    match &out[1] {
        Err(e @ Error::ServerCheated(_)) => assert!(e.to_string().contains("D0"), "{e}"),
        other => panic!("{other:?}"),
    }
    let why = refused_with(&out[0]);
    assert!(
        why.contains("party 2 rejected the result: the server cheated"),
        "{why}"
    );

    let out = run(
        Side::Server(0),
        Target::first(MSG_PERMUTATION),
        Attack::Edit(reverse),
    );
    assert!(
        matches!(&out[0], Err(Error::ServerCheated(_))),
        "{:?}",
        out[0]
    );
    // Party 2 judged a correct result.
    assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a));

    let out = run(
        Side::Server(1),
        Target::first(MSG_SERVER_SHARE),
        Attack::FlipBit(3),
    );
    match &out[1] {
        Err(e @ Error::ServerCheated(_)) => {
            assert!(
                e.to_string().contains("does not match its commitment"),
                "{e}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(out[0].is_err());
    assert_eq!(srv.runs(), 0);
}

/// Party 2 of `kmrs_size` sends the server no labels (the server never sees its set); the
/// server refuses one that announces any, and a run of either protocol with other than two
/// clients.
#[test]
fn size_the_server_refuses_labels_from_party_2() {
    let (srv, _) = server(quick());
    let hello = |protocol: &str, party, parties: u32, count| Submit {
        protocol: protocol.into(),
        party,
        parties,
        count,
        params: vec![
            ("copies".into(), "3".into()),
            ("dummies".into(), "4".into()),
        ],
        ..sized("r", party, &vec![10; parties as usize])
    };
    let (_c, st, h) = raw_submit(&srv, &hello(kmrs_size::NAME, 2, 2, 10));
    h.join().unwrap();
    let why = refusal(st);
    assert!(
        why.contains(
            "party 2 announced 10 distinct keys to the other clients, which make 0 labels in a \
             kmrs_size run, not 10"
        ),
        "{why}"
    );
    for p in [kmrs_size::NAME, kmrs_fair::NAME] {
        let (_c, st, h) = raw_submit(&srv, &hello(p, 1, 3, 10));
        h.join().unwrap();
        let why = refusal(st);
        assert!(
            why.contains(&format!("{p} runs have 2 clients, not 3")),
            "{why}"
        );
    }
    assert_eq!(srv.runs(), 0);
}

/// Party 2 of `kmrs_size` that approves a result before party 1's labels are in (party 1
/// never joins): the server refuses the approval and forgets the run, rather than fix the
/// run's outcome and keep it, with no connection left to end it, for the server's life.
#[test]
fn size_an_approval_before_party_1s_labels_is_refused_and_the_run_forgotten() {
    use blindjoin_core::channel::{FrameReceiver, recv_msg};
    use blindjoin_psi::protocols::server_aided::wire::{
        MSG_SERVER_SHARE, MSG_SHARE, MSG_STATUS, MSG_VERDICT, ShareMsg, Verdict,
    };
    let (srv, _) = server(quick());
    let hello = Submit {
        protocol: kmrs_size::NAME.into(),
        count: 0,
        params: vec![
            ("copies".into(), "3".into()),
            ("dummies".into(), "4".into()),
        ],
        ..sized("early", 2, &[10, 10])
    };
    let (mut c, st, h) = raw_submit(&srv, &hello);
    assert_eq!(st, Status::Accepted);
    assert!(matches!(recv_status(&mut c).unwrap(), Status::Committed(_)));
    let share = ShareMsg {
        party: 2,
        share: [7; 32],
    };
    send_msg(&mut c, MSG_SHARE, &share).unwrap();
    let _: [u8; 32] = recv_msg(&mut c, MSG_SERVER_SHARE, 64).unwrap();
    send_msg(&mut c, MSG_VERDICT, &Verdict::Approve).unwrap();
    FrameSender::close(&mut c);
    h.join().unwrap();
    // Whatever the server answered, the run is gone once the connection is.
    while FrameReceiver::recv(&mut c, MSG_STATUS, 1024).is_ok() {}
    assert_eq!(srv.runs(), 0, "the run of a party 2 alone is kept");
}

// The external-sort client of `kmrs_semi`.

/// Party 1 sorts its labels on disk (`external::run_semi_external`, many small buckets),
/// party 2 in memory, on one server: both get their exact rows, and the sort directory is
/// empty afterwards.
#[test]
fn an_external_sort_client_gets_the_rows_of_the_in_memory_client() {
    use blindjoin_psi::protocols::server_aided::external::{
        External, SliceSource, run_semi_external,
    };
    let (srv, store) = server(quick());
    let tmp = tempfile::tempdir().unwrap();
    for (k, &(n1, n2, overlap, per_bucket)) in [
        (0usize, 5usize, 0usize, 1u64),
        (1, 1, 1, 1),
        (5000, 4000, 1234, 300),
        (5000, 4000, 1234, 1 << 20),
        (70_000, 1000, 999, 4096),
    ]
    .iter()
    .enumerate()
    {
        let (a, b) = sets_with_overlap(n1, n2, overlap, 900 + k as u64);
        let (ia, ib) = (items_from_records(&a), items_from_records(&b));
        let (mut l1, mut l2) = memory_pair(Duration::from_secs(30));
        let (mut s1, mut e1) = memory_pair(Duration::from_secs(30));
        let (mut s2, mut e2) = memory_pair(Duration::from_secs(30));
        let ext = External {
            dir: tmp.path().to_owned(),
            bucket_labels: per_bucket,
        };
        let run = format!("ext-{k}");
        let (o1, o2) = std::thread::scope(|s| {
            let srv = &srv;
            s.spawn(move || srv.serve(&mut e1, "test"));
            s.spawn(move || srv.serve(&mut e2, "test"));
            let run1 = run.clone();
            let h1 = s.spawn(move || {
                let mut links =
                    AidedLinks::new(run1, (1, 2), Peers::Leader(vec![&mut l1]), &mut s1);
                run_semi_external(
                    &mut links,
                    &mut SliceSource::new(&ia),
                    &RunOptions::default(),
                    &ext,
                    &mut rng(1),
                )
            });
            let h2 = s.spawn(move || {
                let mut links = AidedLinks::new(run, (2, 2), Peers::Member(&mut l2), &mut s2);
                P.client(&mut links, &ib, &RunOptions::default(), &mut rng(2))
            });
            (h1.join().unwrap(), h2.join().unwrap())
        });
        let (o1, o2) = (o1.unwrap(), o2.unwrap());
        let want: Vec<u32> = oracle(&a, &b).into_iter().map(|i| i as u32).collect();
        assert_eq!(o1.rows, want, "case {k}");
        assert_eq!(o2.indices, oracle(&b, &a), "case {k}");
        assert_eq!(o1.label_len, o2.label_len);
        let want_buckets = (n1 as u64).div_ceil(per_bucket).next_power_of_two().max(1);
        assert_eq!(o1.buckets as u64, want_buckets, "case {k}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// Every message of `kmrs_fair` and `kmrs_size` on a connection to the server, altered in
/// transit in each direction (cut short, lengthened, a bit flipped, never sent): every client
/// ends promptly, never with a panic, and a client that still succeeds has its exact rows (a
/// tampered message never changes a result unnoticed). A client refused before it joins
/// leaves the other waiting for the run timeout (the server cannot tell that it will not come
/// back), 1 s here.
#[test]
fn fair_and_size_messages_attacked_in_transit_end_cleanly_or_change_nothing() {
    use blindjoin_psi::protocols::server_aided::wire::{
        MSG_FAIR_NONCE, MSG_FAIR_VALUES, MSG_RECEIVED, MSG_SHARE, MSG_VERDICT,
    };
    let (a, b) = sets_with_overlap(30, 40, 9, 41);
    let messages = [
        MSG_SUBMIT,
        MSG_STATUS,
        MSG_LABELS,
        MSG_BITS,
        MSG_FAIR_OPEN,
        MSG_FAIR_VALUES,
        MSG_FAIR_NONCE,
        MSG_RECEIVED,
        MSG_SHARE,
        MSG_SERVER_SHARE,
        MSG_RELABELLED,
        MSG_PERMUTATION,
        MSG_VERDICT,
    ];
    let attacks = [
        Attack::Truncate(1),
        Attack::Extend(vec![0; 7]),
        Attack::FlipBit(5),
        Attack::HangUp,
    ];
    let (srv, store) = server(ServerConfig {
        run_timeout: Duration::from_secs(1),
        ..quick()
    });
    let mut hung = 0;
    for p in [FAIR, SIZE] {
        for side in [
            Side::Client(0),
            Side::Client(1),
            Side::Server(0),
            Side::Server(1),
        ] {
            for msg in messages {
                for attack in &attacks {
                    let t = std::time::Instant::now();
                    let out = run_two(
                        &srv,
                        p,
                        "attacked",
                        &[a.clone(), b.clone()],
                        &mal(3, 16),
                        Some((side, Target::first(msg), attack.clone())),
                    );
                    let case = format!("{p} {msg} {attack:?}");
                    assert!(t.elapsed() < Duration::from_secs(10), "{case}: slow");
                    if let Ok(o) = &out[0] {
                        assert_eq!(o.indices, oracle(&a, &b), "{case}");
                    }
                    if let Ok(o) = &out[1] {
                        assert_eq!(o.indices, oracle(&b, &a), "{case}");
                    }
                    // A message that side sends and never delivers ends the run.
                    let sends: &[&str] = match (p.name, side) {
                        ("kmrs_fair", Side::Client(_)) => {
                            &[MSG_SUBMIT, MSG_LABELS, MSG_FAIR_OPEN, MSG_FAIR_VALUES]
                        }
                        ("kmrs_fair", Side::Server(_)) => &[MSG_STATUS, MSG_BITS, MSG_FAIR_NONCE],
                        (_, Side::Client(0)) => &[MSG_SUBMIT, MSG_LABELS],
                        (_, Side::Client(_)) => &[MSG_SUBMIT, MSG_SHARE, MSG_VERDICT],
                        (_, Side::Server(0)) => &[MSG_STATUS, MSG_RELABELLED, MSG_PERMUTATION],
                        (_, Side::Server(_)) => &[MSG_STATUS, MSG_SERVER_SHARE],
                        // The direct links are not attacked here.
                        (_, Side::Link(_)) => &[],
                    };
                    if matches!(attack, Attack::HangUp) && sends.contains(&msg) {
                        assert!(out.iter().any(Result::is_err), "{case}: not noticed");
                        hung += 1;
                    }
                }
            }
        }
    }
    assert_eq!(hung, 2 * 4 + 2 * 3 + 2 + 3 + 3 + 2);
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

// Party slots bound to certificates.

/// A memory channel whose peer authenticated with the certificate `id`, as a TLS channel
/// reports it.
struct Identified<C = MemoryChannel> {
    inner: C,
    id: [u8; 32],
}

impl<C: Channel> FrameSender for Identified<C> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> blindjoin_core::Result<()> {
        self.inner.send(msg, frame)
    }
    fn close(&mut self) {
        self.inner.close();
    }
}

impl<C: Channel> FrameReceiver for Identified<C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> blindjoin_core::Result<Vec<u8>> {
        self.inner.recv(what, max_len)
    }
}

impl<C: Channel> Channel for Identified<C> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        self.inner.split()
    }
    fn peer_identity(&self) -> Option<[u8; 32]> {
        Some(self.id)
    }
}

/// Sends `submit` on a connection the server sees as authenticated by `id`; returns the
/// client's end after the server's first status.
fn identified_submit(
    srv: &Arc<Server>,
    submit: &Submit,
    id: [u8; 32],
) -> (MemoryChannel, Status, std::thread::JoinHandle<()>) {
    let (mut c, s) = memory_pair(Duration::from_secs(10));
    let srv = srv.clone();
    let h = std::thread::spawn(move || {
        let mut s = Identified { inner: s, id };
        let _ = srv.serve(&mut s, "unused");
    });
    // A server that refuses the connection before its hello (the client's connection limit)
    // may have hung up before the hello is sent; its refusal is still there to read.
    match send_msg(&mut c, MSG_SUBMIT, submit) {
        Ok(()) | Err(Error::SendFailed { .. }) => {}
        Err(e) => panic!("{e}"),
    }
    let st = recv_status(&mut c).unwrap();
    (c, st, h)
}

/// The server accepts party i only over a connection authenticated by the certificate the
/// clients bound to party i, and only from clients that bound every slot to a distinct
/// certificate.
#[test]
fn the_server_binds_each_party_to_its_certificate() {
    let (srv, store) = server(quick());
    let (a, b) = ([0xaa; 32], [0xbb; 32]);
    let bound = |party| Submit {
        identities: vec![a, b],
        ..submit("r", party, 2)
    };
    // Client B plays party 1: refused, naming both certificates.
    let (_, st, h) = identified_submit(&srv, &bound(1), b);
    h.join().unwrap();
    assert_eq!(
        refusal(st),
        format!(
            "party 1 of run r is bound to the certificate sha256:{}, and this connection is \
             authenticated by sha256:{}",
            "aa".repeat(32),
            "bb".repeat(32)
        )
    );
    // Slots not bound, over an authenticated connection: refused.
    let (_, st, h) = identified_submit(&srv, &submit("r", 1, 2), a);
    h.join().unwrap();
    assert!(
        refusal(st).contains("did not bind their party slots to certificates"),
        "unbound slots"
    );
    // One certificate for two slots: refused.
    let (_, st, h) = identified_submit(
        &srv,
        &Submit {
            identities: vec![a, a],
            ..submit("r", 1, 2)
        },
        a,
    );
    h.join().unwrap();
    assert_eq!(
        refusal(st),
        "party 2 has the certificate of another party: one certificate, one party"
    );
    // The right certificates: the run completes.
    let (mut c1, st, h1) = identified_submit(&srv, &bound(1), a);
    assert_eq!(st, Status::Accepted);
    let (mut c2, st, h2) = identified_submit(&srv, &bound(2), b);
    assert_eq!(st, Status::Accepted);
    c1.send(MSG_LABELS, &[[1u8; 8], [3; 8]].concat()).unwrap();
    c2.send(MSG_LABELS, &[[3u8; 8], [4; 8]].concat()).unwrap();
    for (c, bits) in [(&mut c1, 0b10u8), (&mut c2, 0b01)] {
        loop {
            match recv_status(c).unwrap() {
                Status::Waiting { .. } => {}
                Status::Result { matches } => {
                    assert_eq!(matches, 1);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            blindjoin_core::channel::FrameReceiver::recv(c, MSG_BITS, 16).unwrap(),
            vec![bits]
        );
        c.send(
            blindjoin_psi::protocols::server_aided::wire::MSG_RECEIVED,
            &[],
        )
        .unwrap();
    }
    h1.join().unwrap();
    h2.join().unwrap();
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// One client (one certificate, or one address without TLS) may hold at most
/// `max_client_connections` connections: the next is refused at once, and a connection that
/// ends frees its place.
#[test]
fn a_client_holds_at_most_its_connections() {
    let (srv, _) = server(ServerConfig {
        max_client_connections: 2,
        ..quick()
    });
    let (c1, st, h1) = identified_submit(&srv, &submit("one", 1, 2), [7; 32]);
    let st1 = st;
    let (c2, st, h2) = identified_submit(&srv, &submit("two", 1, 2), [7; 32]);
    // Unbound slots over an authenticated connection are refused, but only once the client
    // is counted: hold the two places with connections that have not sent their hello.
    drop((c1, c2, st1, st));
    h1.join().unwrap();
    h2.join().unwrap();
    let held: Vec<_> = (0..2)
        .map(|_| {
            let (c, s) = memory_pair(Duration::from_secs(10));
            let srv = srv.clone();
            let h = std::thread::spawn(move || {
                let mut s = Identified {
                    inner: s,
                    id: [7; 32],
                };
                srv.serve(&mut s, "unused").map(|_| ())
            });
            (c, h)
        })
        .collect();
    // A third connection is refused at the limit once both are counted (each waits for its
    // hello); until then it is counted itself, refused for its unbound slots, and uncounted.
    loop {
        let (_, st, h) = identified_submit(&srv, &submit("three", 1, 2), [7; 32]);
        h.join().unwrap();
        let why = refusal(st);
        if why == "this client already has 2 connections to the server, its limit" {
            break;
        }
        assert!(why.contains("did not bind their party slots"), "{why}");
    }
    // Another client is not affected.
    let (_, st, h) = identified_submit(
        &srv,
        &Submit {
            identities: vec![[8; 32], [9; 32]],
            ..submit("other", 1, 2)
        },
        [8; 32],
    );
    assert_eq!(st, Status::Accepted);
    h.join().unwrap();
    for (c, h) in held {
        drop(c);
        assert!(h.join().unwrap().is_err());
    }
    // The places are free again.
    let (_, st, h) = identified_submit(&srv, &submit("four", 1, 2), [7; 32]);
    h.join().unwrap();
    assert!(refusal(st).contains("did not bind their party slots"));
    assert_eq!(srv.runs(), 0);
}

/// Party 1 binds each client certificate to one party: a client that connects twice (playing
/// parties 2 and 3 with one certificate, to learn its two-way intersection with party 1) or
/// claims another party's slot ends the key agreement before any key is sent.
#[test]
fn party_1_gives_each_certificate_one_slot() {
    let (b, c) = ([0xbb; 32], [0xcc; 32]);
    let sets = three_test_sets();
    for (slots, ids, want) in [
        // No bindings given: one certificate still plays one party.
        (
            vec![],
            [b, b],
            format!(
                "the client with certificate sha256:{} claimed party 3's slot and already plays \
                 party 2: one certificate, one party",
                "bb".repeat(32)
            ),
        ),
        // Bindings given: B is party 2, so it may not claim party 3.
        (
            vec![(b, 2), (c, 3)],
            [b, b],
            format!(
                "the client with certificate sha256:{} claimed party 3's slot, but it is party 2",
                "bb".repeat(32)
            ),
        ),
        // A certificate without a binding.
        (
            vec![(b, 2), (c, 3)],
            [b, [0xdd; 32]],
            format!(
                "the client with certificate sha256:{} has no party index",
                "dd".repeat(32)
            ),
        ),
    ] {
        let (l2, m2) = memory_pair(Duration::from_secs(10));
        let (l3, m3) = memory_pair(Duration::from_secs(10));
        let mut leader_links = [
            Identified {
                inner: l2,
                id: ids[0],
            },
            Identified {
                inner: l3,
                id: ids[1],
            },
        ];
        let out = std::thread::scope(|s| {
            for (i, m) in [(2u32, m2), (3, m3)] {
                let set = items_from_records(&sets[i as usize - 1]);
                s.spawn(move || {
                    let mut m = m;
                    let (mut to_server, _srv) = memory_pair(Duration::from_secs(10));
                    let mut links = AidedLinks::new(
                        "sybil".into(),
                        (i, 3),
                        Peers::Member(&mut m),
                        &mut to_server,
                    );
                    let _ = P.client(&mut links, &set, &RunOptions::default(), &mut rng(i as u64));
                });
            }
            let (mut to_server, _srv) = memory_pair(Duration::from_secs(10));
            let peers = Peers::Leader(
                leader_links
                    .iter_mut()
                    .map(|l| l as &mut dyn Channel)
                    .collect(),
            );
            let mut links = AidedLinks::new("sybil".into(), (1, 3), peers, &mut to_server);
            links.identity = Some([0xaa; 32]);
            links.slots = slots.clone();
            let out = P.client(
                &mut links,
                &items_from_records(&sets[0]),
                &RunOptions::default(),
                &mut rng(1),
            );
            drop(links);
            drop(leader_links);
            out
        });
        match out {
            Err(Error::CheckFailed(why)) => assert!(why.starts_with(&want), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}

// The clients' and the server's checks through `kmrs_mal`, `kmrs_fair` and `kmrs_size`, with
// a party deviating on the direct client links or on a connection to the server.

/// `value` as `send_msg` encodes it.
fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    let (mut a, mut b) = memory_pair(Duration::from_secs(1));
    send_msg(&mut a, "a message", value).unwrap();
    b.recv("a message", 1 << 20).unwrap()
}

/// A frame decoded as `recv_msg` decodes it.
fn decode<T: serde::de::DeserializeOwned>(frame: &[u8]) -> T {
    let (mut a, mut b) = memory_pair(Duration::from_secs(1));
    a.send("a message", frame).unwrap();
    recv_msg(&mut b, "a message", 1 << 20).unwrap()
}

/// For [`Side::Server`]: the server's first status after its acceptance that is not a
/// keep-alive (the one that follows the client's labels) replaced by `by`.
fn status_after_the_labels(by: Status) -> Rewrite<'static> {
    let mut seen = 0;
    Box::new(move |msg, frame| {
        if msg == MSG_STATUS && !matches!(decode::<Status>(frame), Status::Waiting { .. }) {
            seen += 1;
            if seen == 2 {
                *frame = encode(&by);
            }
        }
        Ok(())
    })
}

/// For [`Side::Client`]: the client hangs up instead of sending its submit hello (a cheating
/// client that has nothing to gain from the server once the other clients have left).
fn hang_up_before_the_server() -> Rewrite<'static> {
    Box::new(|msg, _| match msg {
        MSG_SUBMIT => Err(Error::SendFailed {
            sending: MSG_SUBMIT,
        }),
        _ => Ok(()),
    })
}

/// Asserts that `out` is the `Malformed` error on `message` with exactly `reason`.
fn malformed(out: &blindjoin_core::Result<ClientOutput>, message: &str, reason: &str) {
    match out {
        Err(e) => crate::common::assert_malformed_as(e, message, reason),
        Ok(o) => panic!("expected a malformed {message}, got rows {:?}", o.indices),
    }
}

/// Asserts that `out` is the server's refusal with exactly `reason` (as the client quotes it).
fn refused_as(out: &blindjoin_core::Result<ClientOutput>, reason: &str) {
    assert_eq!(
        refused_with(out),
        format!("the server: {}", blindjoin_core::error::peer_text(reason))
    );
}

/// Asserts that a client whose peer left ended on the closed connection: while it sent
/// `sending`, or while it waited for `waiting`.
fn peer_left(out: &blindjoin_core::Result<ClientOutput>, sending: &str, waiting: &str) {
    match out {
        Err(Error::SendFailed { sending: s }) => assert_eq!(*s, sending),
        Err(Error::PeerClosed { during }) => assert_eq!(*during, waiting),
        other => panic!("expected the peer to have left, got {other:?}"),
    }
}

/// Party 1 takes each share from a party of 2..=n it still waits for: party 2 naming itself
/// party 1, or party 3 naming itself party 2 after party 2 did, ends the coin toss at party 1
/// before it opens its share; the other clients see it leave.
#[test]
fn party_1_refuses_a_share_from_a_party_it_does_not_wait_for() {
    use blindjoin_psi::protocols::server_aided::wire::{MSG_OPEN, MSG_SHARE, ShareMsg};
    let (srv, store) = server(quick());
    let as_party = |claim: u32| -> Rewrite<'static> {
        Box::new(move |msg, frame| {
            if msg == MSG_SHARE {
                let mut share: ShareMsg = decode(frame);
                share.party = claim;
                *frame = encode(&share);
            }
            Ok(())
        })
    };
    let (a, b) = sets_with_overlap(40, 50, 12, 51);
    let out = run_rewritten(
        &srv,
        MAL,
        "slots",
        &[a, b],
        &mal(3, 16),
        vec![(Side::Link(1), as_party(1))],
    );
    malformed(
        &out[0],
        MSG_SHARE,
        "party 1: not one of 2..=2 still missing",
    );
    peer_left(&out[1], MSG_SHARE, MSG_OPEN);
    let out = run_rewritten(
        &srv,
        MAL,
        "slots",
        &three_test_sets(),
        &mal(3, 16),
        vec![(Side::Link(2), as_party(2))],
    );
    malformed(
        &out[0],
        MSG_SHARE,
        "party 2: not one of 2..=3 still missing",
    );
    for o in &out[1..] {
        peer_left(o, MSG_SHARE, MSG_OPEN);
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// Party 2 checks party 1's opening of the coin toss: one share per party, the set sizes the
/// handshakes announced, party 1's share against its commitment, and its own share passed on
/// unchanged. Party 1, caught, hangs up rather than submit.
#[test]
fn a_member_checks_party_1s_opening() {
    use blindjoin_psi::protocols::server_aided::wire::{MSG_OPEN, OpenMsg};
    let (srv, store) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 53);
    type Edit = fn(&mut OpenMsg);
    let cases: [(Edit, Error); 4] = [
        (
            |o| o.shares.truncate(1),
            Error::malformed(MSG_OPEN, "1 shares for 2 parties"),
        ),
        (
            |o| o.sizes[1] += 1,
            Error::malformed(
                MSG_OPEN,
                "the set sizes do not match the parties' announcements",
            ),
        ),
        (
            |o| o.shares[0][0] ^= 1,
            Error::CheckFailed("party 1's opened key share does not match its commitment".into()),
        ),
        (
            |o| o.shares[1][0] ^= 1,
            Error::CheckFailed("party 1 did not pass on our key share unchanged".into()),
        ),
    ];
    for (edit, want) in cases {
        let open: Rewrite<'static> = Box::new(move |msg, frame| {
            if msg == MSG_OPEN {
                let mut o: OpenMsg = decode(frame);
                edit(&mut o);
                *frame = encode(&o);
            }
            Ok(())
        });
        let out = run_rewritten(
            &srv,
            MAL,
            "opening",
            &[a.clone(), b.clone()],
            &mal(3, 16),
            vec![
                (Side::Link(0), open),
                (Side::Client(0), hang_up_before_the_server()),
            ],
        );
        match (&out[1], &want) {
            (Err(e @ Error::Malformed { .. }), Error::Malformed { message, reason }) => {
                crate::common::assert_malformed_as(e, message, reason)
            }
            (Err(e @ Error::CheckFailed(_)), Error::CheckFailed(text)) => {
                crate::common::assert_check_failed_as(e, text)
            }
            (other, _) => panic!("expected {want}, got {other:?}"),
        }
        assert!(
            matches!(&out[0], Err(Error::SendFailed { sending }) if *sending == MSG_SUBMIT),
            "{:?}",
            out[0]
        );
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// Clients whose coin tosses ended with different keys announce different key checks, so the
/// server keys their submissions to different runs: neither completes, and the run that times
/// out while the other still waits names it. Party 2 here announces another key check; the
/// order of the two runs' timeouts is fixed (party 1's first, while party 2's run holds its
/// slot), so that each run's refusal is the one below whatever the threads' timing.
#[test]
fn clients_with_different_keys_land_in_runs_of_their_own() {
    let (srv, store) = server(ServerConfig {
        run_timeout: Duration::from_millis(200),
        ..quick()
    });
    // Each client's labels wait until the other has joined (sent its hello and been
    // accepted); party 2's then wait until party 1's run has failed and is forgotten.
    let (p1_joined, p1_joined_rx) = std::sync::mpsc::channel::<()>();
    let (p2_joined, p2_joined_rx) = std::sync::mpsc::channel::<()>();
    let srv_ref: &Server = &srv;
    let mut p2_waited = false;
    let p2: Rewrite<'_> = Box::new(move |msg, frame| {
        match msg {
            MSG_SUBMIT => {
                let mut hello: Submit = decode(frame);
                let check = hello
                    .params
                    .iter_mut()
                    .find(|(k, _)| k == "key check")
                    .map(|(_, v)| v)
                    .unwrap();
                let other = if check.starts_with('0') { "1" } else { "0" };
                check.replace_range(..1, other);
                *frame = encode(&hello);
            }
            MSG_LABELS if !p2_waited => {
                p2_waited = true;
                let _ = p2_joined.send(());
                p1_joined_rx.recv_timeout(Duration::from_secs(60)).unwrap();
                while srv_ref.runs() > 1 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            _ => {}
        }
        Ok(())
    });
    let mut p1_waited = false;
    let p1: Rewrite<'_> = Box::new(move |msg, _| {
        if msg == MSG_LABELS && !p1_waited {
            p1_waited = true;
            let _ = p1_joined.send(());
            p2_joined_rx.recv_timeout(Duration::from_secs(60)).unwrap();
        }
        Ok(())
    });
    let (a, b) = sets_with_overlap(40, 50, 12, 55);
    let out = run_rewritten(
        &srv,
        MAL,
        "keys",
        &[a, b],
        &mal(3, 16),
        vec![(Side::Client(0), p1), (Side::Client(1), p2)],
    );
    refused_as(
        &out[0],
        "1 of 2 parties sent their labels within the run timeout of 200 ms; 1 other \
         submission(s) for run keys differ in set sizes, certificates or parameters: give \
         every client the same options",
    );
    refused_as(
        &out[1],
        "1 of 2 parties sent their labels within the run timeout of 200 ms",
    );
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// A run has 2 to 64 clients: a submit hello for 1 or 65 is refused.
#[test]
fn the_server_refuses_a_party_count_outside_2_to_64() {
    let (srv, _) = server(quick());
    for parties in [1, 65] {
        let (_, st, h) = raw_submit(
            &srv,
            &Submit {
                parties,
                ..submit("r", 1, 2)
            },
        );
        h.join().unwrap();
        assert_eq!(
            refusal(st),
            format!("parties = {parties}: a run has 2 to 64 clients")
        );
    }
    assert_eq!(srv.runs(), 0);
}

/// A `kmrs_mal` client refuses a status other than the result after its labels; the other
/// client, answered honestly, gets its exact rows.
#[test]
fn mal_an_unexpected_status_after_the_labels_is_malformed() {
    let (srv, store) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 57);
    let out = run_rewritten(
        &srv,
        MAL,
        "status",
        &[a.clone(), b.clone()],
        &mal(3, 16),
        vec![(Side::Server(0), status_after_the_labels(Status::Accepted))],
    );
    malformed(&out[0], MSG_STATUS, "Accepted after the labels");
    assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a));
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// The bit vector of `kmrs_mal` and `kmrs_fair`: party 1's 3·41 + 32 = 155 labels leave 5
/// padding bits in the last byte, none of which may be set, and the server announced 3·12 + 16
/// = 52 matches (the 12 shared elements' copies and D0), which the bit vector must hold.
#[test]
fn a_bit_vector_with_a_bit_past_the_last_label_or_another_count_is_malformed() {
    let (srv, store) = server(quick());
    let (a, b) = sets_with_overlap(41, 50, 12, 59);
    for p in [MAL, FAIR] {
        let past_the_end: Rewrite<'static> = Box::new(|msg, frame| {
            if msg == MSG_BITS {
                assert_eq!(frame.len(), 20);
                frame[19] |= 0x80;
            }
            Ok(())
        });
        let ones = Arc::new(Mutex::new(None));
        let seen = ones.clone();
        let one_flipped: Rewrite<'static> = Box::new(move |msg, frame| {
            if msg == MSG_BITS {
                frame[0] ^= 1;
                let n: u32 = frame.iter().map(|b| b.count_ones()).sum();
                *seen.lock().unwrap() = Some(n);
            }
            Ok(())
        });
        let out = run_rewritten(
            &srv,
            p,
            "bits",
            &[a.clone(), b.clone()],
            &mal(3, 16),
            vec![(Side::Server(0), past_the_end)],
        );
        malformed(&out[0], MSG_BITS, "bits set past the last label");
        assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a), "{p}");
        let out = run_rewritten(
            &srv,
            p,
            "bits",
            &[a.clone(), b.clone()],
            &mal(3, 16),
            vec![(Side::Server(0), one_flipped)],
        );
        let n = ones.lock().unwrap().unwrap();
        assert!(n == 51 || n == 53, "{n}");
        malformed(&out[0], MSG_BITS, &format!("{n} bits set, 52 announced"));
        assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a), "{p}");
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// A `kmrs_fair` client refuses a status other than the server's commitment after its labels;
/// having left, it fails the run for the other client, which the server refuses with why.
#[test]
fn fair_a_status_after_the_labels_that_is_not_a_commitment_is_malformed() {
    let (srv, store) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 61);
    let out = run_rewritten(
        &srv,
        FAIR,
        "status",
        &[a, b],
        &mal(3, 16),
        vec![(
            Side::Server(0),
            status_after_the_labels(Status::Result { matches: 0 }),
        )],
    );
    malformed(
        &out[0],
        MSG_STATUS,
        "Result { matches: 0 } after the labels",
    );
    refused_as(
        &out[1],
        "party 1 left the run: the peer closed the connection while we waited for the client's \
         opening",
    );
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// The server reads a `kmrs_fair` client's opening against what it sent: an element count
/// that does not make its label count, or first-layer values out of order, end the run, and
/// the other client is refused with the reason (neither learns a result).
#[test]
fn fair_an_opening_that_does_not_fit_the_labels_fails_the_run() {
    use blindjoin_psi::protocols::server_aided::wire::{FairOpen, MSG_FAIR_VALUES};
    let (srv, store) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 63);
    let one_more: Rewrite<'static> = Box::new(|msg, frame| {
        if msg == MSG_FAIR_OPEN {
            let mut open: FairOpen = decode(frame);
            open.items += 1;
            *frame = encode(&open);
        }
        Ok(())
    });
    let out = run_rewritten(
        &srv,
        FAIR,
        "opening",
        &[a.clone(), b.clone()],
        &mal(3, 16),
        vec![(Side::Client(1), one_more)],
    );
    // Party 2: 50 elements, 3·50 + 32 labels.
    refused_as(
        &out[0],
        "party 2 left the run: malformed the client's opening from the peer: 51 elements do not \
         make the 182 labels sent",
    );
    peer_left(&out[1], MSG_FAIR_VALUES, MSG_STATUS);
    let out = run_two(
        &srv,
        FAIR,
        "values",
        &[a, b],
        &mal(3, 16),
        Some((
            Side::Client(1),
            Target::first(MSG_FAIR_VALUES),
            Attack::Edit(|f| {
                for k in 0..16 {
                    f.swap(k, 16 + k);
                }
            }),
        )),
    );
    refused_as(
        &out[0],
        "party 2 left the run: malformed the client's first-layer values from the peer: the \
         values are not in strictly ascending order",
    );
    assert!(
        matches!(&out[1], Err(Error::PeerClosed { during }) if *during == MSG_STATUS),
        "{:?}",
        out[1]
    );
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// The server's opening of its commitment is its 32-byte nonce: 31 bytes are refused; the
/// other client gets its exact rows.
#[test]
fn fair_a_nonce_of_31_bytes_is_malformed() {
    use blindjoin_psi::protocols::server_aided::wire::MSG_FAIR_NONCE;
    let (srv, store) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 65);
    let out = run_two(
        &srv,
        FAIR,
        "nonce",
        &[a.clone(), b.clone()],
        &mal(3, 16),
        Some((
            Side::Server(0),
            Target::first(MSG_FAIR_NONCE),
            Attack::Truncate(31),
        )),
    );
    malformed(&out[0], MSG_FAIR_NONCE, "not 32 bytes");
    assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a));
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// Party 2 tosses K2 with the server as party 2: a share naming party 1 is refused and the
/// run fails; party 1, which joined before (party 2's share waits for its labels), is refused
/// with the reason.
#[test]
fn size_the_server_takes_the_key_share_only_from_party_2() {
    use blindjoin_psi::protocols::server_aided::wire::{MSG_SHARE, ShareMsg};
    let (srv, _) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 67);
    let (joined_tx, joined_rx) = std::sync::mpsc::channel::<()>();
    let p1: Rewrite<'static> = Box::new(move |msg, _| {
        if msg == MSG_LABELS {
            let _ = joined_tx.send(());
        }
        Ok(())
    });
    let p2: Rewrite<'static> = Box::new(move |msg, frame| {
        if msg == MSG_SHARE {
            joined_rx.recv_timeout(Duration::from_secs(60)).unwrap();
            let mut share: ShareMsg = decode(frame);
            assert_eq!(share.party, 2);
            share.party = 1;
            *frame = encode(&share);
        }
        Ok(())
    });
    let out = run_rewritten(
        &srv,
        SIZE,
        "toss",
        &[a, b],
        &mal(3, 16),
        vec![(Side::Client(0), p1), (Side::Client(1), p2)],
    );
    refused_as(
        &out[0],
        "party 2 left the run: malformed the client's key share from the peer: party 1 tossing K2",
    );
    assert!(
        matches!(&out[1], Err(Error::PeerClosed { during }) if *during == MSG_SERVER_SHARE),
        "{:?}",
        out[1]
    );
    assert_eq!(srv.runs(), 0);
}

/// Party 1 of `kmrs_size` refuses the server's "Opened" in place of "Relabelled", and T′1
/// with two labels swapped; party 2, whose partner left, ends on the closed link.
#[test]
fn size_party_1_checks_the_servers_status_and_relabelled_labels() {
    use blindjoin_psi::protocols::server_aided::wire::{MSG_SIZE_BITS, MSG_SIZE_LABELS};
    let (srv, _) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 69);
    let len = labels::label_len(&[3 * 40 + 32, 3 * 50 + 32], 41).unwrap();
    assert_eq!(len, 8, "the edit below swaps 8-byte labels");
    let out = run_rewritten(
        &srv,
        SIZE,
        "relabelled",
        &[a.clone(), b.clone()],
        &mal(3, 16),
        vec![(Side::Server(0), status_after_the_labels(Status::Opened))],
    );
    malformed(&out[0], MSG_STATUS, "Opened after the labels");
    peer_left(&out[1], MSG_SIZE_LABELS, MSG_SIZE_BITS);
    let out = run_two(
        &srv,
        SIZE,
        "relabelled",
        &[a, b],
        &mal(3, 16),
        Some((
            Side::Server(0),
            Target::first(MSG_RELABELLED),
            Attack::Edit(|f| {
                for k in 0..8 {
                    f.swap(k, 8 + k);
                }
            }),
        )),
    );
    malformed(
        &out[0],
        MSG_RELABELLED,
        "the labels are not in strictly ascending order",
    );
    peer_left(&out[1], MSG_SIZE_LABELS, MSG_SIZE_BITS);
    assert_eq!(srv.runs(), 0);
}

/// On the direct link of `kmrs_size`: party 1 refuses party 2's labels out of order; party 2
/// refuses a bit vector with a bit past its 3·50 + 32 = 182 labels, which fails the run, and
/// party 1 is refused with the reason.
#[test]
fn size_the_clients_check_each_others_messages_on_their_link() {
    use blindjoin_psi::protocols::server_aided::wire::{MSG_SIZE_BITS, MSG_SIZE_LABELS};
    let (srv, _) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 71);
    let out = run_two(
        &srv,
        SIZE,
        "link",
        &[a.clone(), b.clone()],
        &mal(3, 16),
        Some((
            Side::Link(1),
            Target::first(MSG_SIZE_LABELS),
            Attack::Edit(|f| {
                for k in 0..8 {
                    f.swap(k, 8 + k);
                }
            }),
        )),
    );
    malformed(
        &out[0],
        MSG_SIZE_LABELS,
        "the labels are not in strictly ascending order",
    );
    assert!(
        matches!(&out[1], Err(Error::PeerClosed { during }) if *during == MSG_SIZE_BITS),
        "{:?}",
        out[1]
    );
    let out = run_two(
        &srv,
        SIZE,
        "link",
        &[a, b],
        &mal(3, 16),
        Some((
            Side::Link(0),
            Target::first(MSG_SIZE_BITS),
            Attack::Edit(|f| {
                assert_eq!(f.len(), 23);
                f[22] |= 0x80;
            }),
        )),
    );
    malformed(&out[1], MSG_SIZE_BITS, "bits set past the last label");
    refused_as(
        &out[0],
        "party 2 left the run: the peer closed the connection while we waited for party 2's \
         verdict",
    );
    assert_eq!(srv.runs(), 0);
}

/// SHA-256 of `parts`, each preceded by its length (8 bytes, little-endian), as the clients
/// and the server derive K and K2 (`kmrs_size`'s module doc, decision 4).
fn kmrs_hash(parts: &[&[u8]]) -> [u8; 16] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    let full: [u8; 32] = h.finalize().into();
    full[..16].try_into().unwrap()
}

/// What a party 1 of `kmrs_size` that knows both keys sees of party 2's labels (T′2, sorted):
/// each label with its tag (the element's row for a copy, a dummy set's tag otherwise).
#[derive(Default)]
struct SizeKeys {
    k1_shares: Vec<[u8; 32]>,
    server_share: Option<[u8; 32]>,
    party2_share: Option<[u8; 32]>,
}

impl SizeKeys {
    fn party2_labels(
        &self,
        run: &str,
        items: &[blindjoin_core::item::Item],
        len: usize,
    ) -> Vec<(u128, u32)> {
        use blindjoin_core::Block;
        use blindjoin_core::aes::FixedKeyAes;
        let mut k1_parts: Vec<&[u8]> = vec![b"blindjoin/kmrs/key", run.as_bytes()];
        k1_parts.extend(self.k1_shares.iter().map(|s| &s[..]));
        let k1 = kmrs_hash(&k1_parts);
        let k2 = kmrs_hash(&[
            b"blindjoin/kmrs/size-key2",
            run.as_bytes(),
            &self.server_share.unwrap(),
            &self.party2_share.unwrap(),
        ]);
        let aes = FixedKeyAes::new(Block::from_bytes(k2));
        let mut out: Vec<(u128, u32)> =
            kmrs_mal::mal_labels(Block::from_bytes(k1), items, 3, 16, (2, 2), len)
                .unwrap()
                .into_iter()
                .map(|(l, tag)| {
                    let b = aes.permute_block(Block::from_bytes(l.to_be_bytes()));
                    (labels::truncate(b, len), tag)
                })
                .collect();
        out.sort_unstable();
        out
    }
}

/// Fig. 4 step 10 catches party 1 as well as the server: party 1 clears one bit of its bit
/// vector over T′2 (a copy of a shared element, which it finds with both keys, as a party 1
/// colluding with the server could), party 2's check finds the element's copies marked
/// unequally and rejects the result, and the server refuses party 1 with party 2's reason.
#[test]
fn size_party_2_catches_a_party_1_that_alters_its_bit_vector() {
    use blindjoin_psi::protocols::server_aided::wire::{
        MSG_OPEN, MSG_SHARE, MSG_SIZE_BITS, MSG_SIZE_LABELS, OpenMsg, ShareMsg,
    };
    let (srv, _) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 73);
    let len = labels::label_len(&[3 * 40 + 32, 3 * 50 + 32], 41).unwrap();
    let items2 = items_from_records(&b);
    let keys = Arc::new(Mutex::new(SizeKeys::default()));
    let sent_t2 = Arc::new(Mutex::new(Vec::new()));
    let (k, t2) = (keys.clone(), sent_t2.clone());
    let items = items2.clone();
    let party1: Rewrite<'static> = Box::new(move |msg, frame| {
        match msg {
            MSG_OPEN => k.lock().unwrap().k1_shares = decode::<OpenMsg>(frame).shares.clone(),
            MSG_SIZE_BITS => {
                let theirs = k.lock().unwrap().party2_labels("flip", &items, len);
                // The replica of party 2's relabelling is T′2 exactly.
                let sent: Vec<u128> = t2.lock().unwrap().clone();
                assert_eq!(theirs.iter().map(|&(l, _)| l).collect::<Vec<_>>(), sent);
                let bit = |k: usize| frame[k / 8] >> (k % 8) & 1 == 1;
                let k = (0..theirs.len())
                    .find(|&k| (theirs[k].1 as usize) < items.len() && bit(k))
                    .unwrap();
                frame[k / 8] ^= 1 << (k % 8);
            }
            _ => {}
        }
        Ok(())
    });
    let k = keys.clone();
    let party2_server: Rewrite<'static> = Box::new(move |msg, frame| {
        if msg == MSG_SHARE {
            k.lock().unwrap().party2_share = Some(decode::<ShareMsg>(frame).share);
        }
        Ok(())
    });
    let k = keys.clone();
    let server_to_party2: Rewrite<'static> = Box::new(move |msg, frame| {
        if msg == MSG_SERVER_SHARE {
            k.lock().unwrap().server_share = Some(decode(frame));
        }
        Ok(())
    });
    let t2 = sent_t2.clone();
    let party2_link: Rewrite<'static> = Box::new(move |msg, frame| {
        if msg == MSG_SIZE_LABELS {
            t2.lock()
                .unwrap()
                .extend(frame.chunks_exact(len).map(labels::decode_label));
        }
        Ok(())
    });
    let out = run_rewritten(
        &srv,
        SIZE,
        "flip",
        &[a, b],
        &mal(3, 16),
        vec![
            (Side::Link(0), party1),
            (Side::Client(1), party2_server),
            (Side::Server(1), server_to_party2),
            (Side::Link(1), party2_link),
        ],
    );
    let why = "2 of 3 copies of an element marked in the intersection";
    match &out[1] {
        Err(Error::ServerCheated(m)) => assert_eq!(m, why),
        other => panic!("{other:?}"),
    }
    refused_as(
        &out[0],
        &format!("party 2 rejected the result: the server cheated: {why}"),
    );
    assert_eq!(srv.runs(), 0);
}

/// π3 with index 1 equal to index 0 is not a permutation: party 1 refuses it, naming the
/// repeated index; party 2 judged a correct result and has its exact rows.
#[test]
fn size_a_permutation_that_repeats_an_index_is_malformed() {
    let (srv, _) = server(quick());
    let (a, b) = sets_with_overlap(40, 50, 12, 75);
    let repeated = Arc::new(Mutex::new(None));
    let seen = repeated.clone();
    let out = run_rewritten(
        &srv,
        SIZE,
        "perm",
        &[a.clone(), b.clone()],
        &mal(3, 16),
        vec![(
            Side::Server(0),
            Box::new(move |msg, frame| {
                if msg == MSG_PERMUTATION {
                    let first: [u8; 4] = frame[..4].try_into().unwrap();
                    frame[4..8].copy_from_slice(&first);
                    *seen.lock().unwrap() = Some(u32::from_le_bytes(first));
                }
                Ok(())
            }),
        )],
    );
    let i = repeated.lock().unwrap().unwrap();
    // Party 1's 3·40 + 32 labels.
    malformed(
        &out[0],
        MSG_PERMUTATION,
        &format!("not a permutation of 152 positions (index {i})"),
    );
    assert_eq!(out[1].as_ref().unwrap().indices, oracle(&b, &a));
    assert_eq!(srv.runs(), 0);
}

/// A member accepts the other members' set sizes, which only party 1's handshakes checked,
/// up to its own `max_peer_set_size`: party 3, accepting 105 keys, refuses party 2's 110 (a
/// client may test as many guesses as it announces). Parties 1 and 2 then hang up rather than
/// wait for it at the server.
#[test]
fn a_member_bounds_the_other_members_set_sizes() {
    let (srv, store) = server(quick());
    let sets = three_sets();
    let strict = RunOptions {
        max_peer_set_size: 105,
        ..mal(3, 16)
    };
    let out = run_rewritten_with(
        &srv,
        MAL,
        "sizes",
        &sets,
        &[mal(3, 16), mal(3, 16), strict],
        vec![
            (Side::Client(0), hang_up_before_the_server()),
            (Side::Client(1), hang_up_before_the_server()),
        ],
    );
    match &out[2] {
        Err(Error::InvalidParam { field, reason }) => {
            assert_eq!(*field, "peer set size");
            assert_eq!(
                reason,
                "party 2 announced 110 distinct keys, more than the 105 we accept (a client may \
                 test as many guessed keys as it announces; raise --max-peer-size only for a \
                 partner whose set size you know)"
            );
        }
        other => panic!("{other:?}"),
    }
    for o in &out[..2] {
        assert!(
            matches!(o, Err(Error::SendFailed { sending }) if *sending == MSG_SUBMIT),
            "{o:?}"
        );
    }
    assert_eq!(srv.runs(), 0);
    assert!(store.is_empty());
}

/// A member checks the certificates party 1 announces for the submit hello against its own
/// links: on authenticated links, its own certificate at its index and party 1's at index 1,
/// for every party; on plain links, none or one per party. Party 1, whose opening is edited
/// here, finds no server.
#[test]
fn a_member_checks_the_certificates_party_1_announces() {
    use blindjoin_psi::protocols::server_aided::wire::{MSG_OPEN, OpenMsg};
    let (a_id, b_id) = ([0xaa; 32], [0xbb; 32]);
    let sets = three_test_sets();
    type Edit = fn(&mut OpenMsg);
    let cases: [(bool, Edit, &str); 3] = [
        (
            true,
            |o| o.identities.reverse(),
            "the client certificates do not match the parties' links",
        ),
        (
            true,
            |o| o.identities.truncate(1),
            "the client certificates do not match the parties' links",
        ),
        (
            false,
            |o| o.identities = vec![[0xcc; 32]],
            "1 client certificates for 2 parties",
        ),
    ];
    for (tls, edit, want) in cases {
        let (l, m) = memory_pair(Duration::from_secs(10));
        let open: Rewrite<'static> = Box::new(move |msg, frame| {
            if msg == MSG_OPEN {
                let mut o: OpenMsg = decode(frame);
                edit(&mut o);
                *frame = encode(&o);
            }
            Ok(())
        });
        let l = Rewritten {
            inner: l,
            rewrite: open,
        };
        let (leader, member) = std::thread::scope(|s| {
            let (items1, items2) = (items_from_records(&sets[0]), items_from_records(&sets[1]));
            let h = s.spawn(move || {
                let mut l: Box<dyn Channel + Send> = if tls {
                    Box::new(Identified { inner: l, id: b_id })
                } else {
                    Box::new(l)
                };
                let (mut to_server, server_end) = memory_pair(Duration::from_secs(10));
                drop(server_end);
                let mut links = AidedLinks::new(
                    "ids".into(),
                    (1, 2),
                    Peers::Leader(vec![&mut *l]),
                    &mut to_server,
                );
                if tls {
                    links.identity = Some(a_id);
                    links.slots = vec![(b_id, 2)];
                }
                MAL.client(&mut links, &items1, &mal(3, 16), &mut rng(1))
            });
            let mut m: Box<dyn Channel + Send> = if tls {
                Box::new(Identified { inner: m, id: a_id })
            } else {
                Box::new(m)
            };
            let (mut to_server, server_end) = memory_pair(Duration::from_secs(10));
            drop(server_end);
            let mut links =
                AidedLinks::new("ids".into(), (2, 2), Peers::Member(&mut *m), &mut to_server);
            if tls {
                links.identity = Some(b_id);
            }
            let member = MAL.client(&mut links, &items2, &mal(3, 16), &mut rng(2));
            drop(links);
            drop(m);
            (h.join().unwrap(), member)
        });
        malformed(&member, MSG_OPEN, want);
        assert!(
            matches!(&leader, Err(Error::SendFailed { sending }) if *sending == MSG_SUBMIT),
            "{leader:?}"
        );
    }
}

/// The server refuses a submit hello whose certificates are not one per party.
#[test]
fn the_server_refuses_certificates_that_are_not_one_per_party() {
    let (srv, _) = server(quick());
    let (_, st, h) = raw_submit(
        &srv,
        &Submit {
            identities: vec![[0xaa; 32]],
            ..submit("r", 1, 2)
        },
    );
    h.join().unwrap();
    assert_eq!(refusal(st), "1 client certificates for 2 parties");
    assert_eq!(srv.runs(), 0);
}

fn three_test_sets() -> Vec<Records> {
    let (a, b) = sets_with_overlap(30, 30, 10, 71);
    vec![a.clone(), b, a]
}
