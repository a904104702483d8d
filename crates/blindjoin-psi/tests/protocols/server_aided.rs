//! `kmrs_semi` end to end over in-memory channels: n clients, their direct links, and one
//! [`Server`] serving every client connection on a thread of its own; the server's refusals
//! and its bookkeeping (runs forgotten, store emptied), on the memory and the disk store.

use crate::common::BASE_CASES;
use blindjoin_core::Error;
use blindjoin_core::channel::memory::{MemoryChannel, memory_pair};
use blindjoin_core::channel::{Channel, FrameSender, send_msg};
use blindjoin_core::item::items_from_records;
use blindjoin_psi::protocols::server_aided::client::{AidedLinks, ClientOutput, Peers};
use blindjoin_psi::protocols::server_aided::disk_store::DiskStore;
use blindjoin_psi::protocols::server_aided::server::{Server, ServerConfig};
use blindjoin_psi::protocols::server_aided::store::{MemoryStore, Store};
use blindjoin_psi::protocols::server_aided::wire::{
    MSG_LABELS, MSG_SUBMIT, Status, Submit, WIRE_VERSION, recv_status,
};
use blindjoin_psi::protocols::server_aided::{kmrs_semi, labels};
use blindjoin_psi::{Protocol, RunOptions};
use blindjoin_testkit::{oracle, rng, sets_with_overlap};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

const P: &Protocol = &kmrs_semi::PROTOCOL;

type Records = Vec<Vec<u8>>;

fn server(cfg: ServerConfig) -> (Arc<Server>, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    (Arc::new(Server::new(store.clone(), cfg)), store)
}

pub(crate) fn quick() -> ServerConfig {
    ServerConfig {
        keepalive: Duration::from_millis(50),
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
    let n = sets.len();
    let wait = Duration::from_secs(60);
    let mut leader_ends = Vec::new();
    let mut member_ends = Vec::new();
    for _ in 1..n {
        let (a, b) = memory_pair(wait);
        leader_ends.push(a);
        member_ends.push(b);
    }
    let (mut client_ends, mut server_ends): (Vec<MemoryChannel>, Vec<MemoryChannel>) =
        (0..n).map(|_| memory_pair(wait)).unzip();
    std::thread::scope(|s| {
        for mut end in server_ends.drain(..) {
            s.spawn(move || {
                let _ = server.serve(&mut end);
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
            handles.push(s.spawn(move || {
                let mut leader = leader;
                let mut member = member;
                let peers = match (&mut leader, &mut member) {
                    (Some(l), _) => {
                        Peers::Leader(l.iter_mut().map(|c| c as &mut dyn Channel).collect())
                    }
                    (_, Some(m)) => Peers::Member(m),
                    _ => unreachable!(),
                };
                let mut links = AidedLinks {
                    run: run.to_owned(),
                    party,
                    parties: n as u32,
                    peers,
                    server: &mut to_server,
                };
                let out = P.client(
                    &mut links,
                    &items,
                    &RunOptions::default(),
                    &mut rng(party as u64),
                );
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

#[test]
fn three_clients_learn_the_rows_all_three_hold() {
    let rec = |tag: &str, i: usize| format!("{tag}{i}@example.org").into_bytes();
    // In all three: 0..40; in 1 and 2 only: 40..70; in 2 and 3 only: 70..90; in 1 and 3 only:
    // 90..95; own: 30, 20, 10.
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
        let _ = srv.serve(&mut s);
    });
    send_msg(&mut c, MSG_SUBMIT, submit).unwrap();
    let st = recv_status(&mut c).unwrap();
    (c, st, h)
}

pub(crate) fn submit(run: &str, party: u32, count: u64) -> Submit {
    Submit {
        version: WIRE_VERSION,
        protocol: kmrs_semi::NAME.to_owned(),
        run: run.to_owned(),
        party,
        parties: 2,
        label_len: 8,
        count,
        params: vec![("parties".into(), "2".into()), ("run".into(), run.into())],
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
    // A second party 1, a different label length, a different parameter, n, the version, an
    // unknown protocol, a party outside 1..=n.
    let (_, st, _) = raw_submit(&srv, &submit("r", 1, 2));
    assert!(refusal(st).contains("party 1 of run r has already joined"));
    let (_, st, _) = raw_submit(
        &srv,
        &Submit {
            label_len: 9,
            ..submit("r", 2, 2)
        },
    );
    assert!(refusal(st).contains("label_len = 8"));
    let mut other = submit("r", 2, 2);
    other.params[1].1 = "s".into();
    let (_, st, _) = raw_submit(&srv, &other);
    assert!(refusal(st).contains("has run ="));
    let (_, st, _) = raw_submit(
        &srv,
        &Submit {
            parties: 3,
            ..submit("r", 2, 2)
        },
    );
    assert!(refusal(st).contains("parties = 2"));
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
    let (mut c1, st, h1) = raw_submit(&srv, &submit("d", 1, 1));
    assert_eq!(st, Status::Accepted);
    c1.send(MSG_LABELS, &[5; 8]).unwrap();
    let (mut c2, st, h2) = raw_submit(&srv, &submit("d", 2, 1000));
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
