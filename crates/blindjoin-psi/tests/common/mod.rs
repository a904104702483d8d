//! The exact-index check every protocol's test file runs (`mod common;` in each).

use blindjoin_core::channel::metered::{Metered, Traffic};
use blindjoin_core::item::{Item, items_from_records};
use blindjoin_psi::{Protocol, RunOptions};
use blindjoin_testkit::{oracle, rng, run_two_party, sets_with_overlap};

/// (receiver size, sender size, overlap) cases every protocol must get exactly right: empty,
/// singleton, tiny, 2^10 + 1, and unbalanced both ways.
pub const BASE_CASES: [(usize, usize, usize); 13] = [
    (0, 0, 0),
    (0, 5, 0),
    (5, 0, 0),
    (1, 1, 1),
    (1, 1, 0),
    (2, 2, 1),
    (2, 2, 2),
    (10, 10, 3),
    (10, 10, 10),
    (1025, 1025, 500),
    (1025, 1025, 0),
    (10, 1000, 7),
    (1000, 10, 7),
];

/// Runs `p` on independently shuffled sets with `overlap` common records and checks the
/// receiver's indices against the `HashSet` oracle, and the sizes each side learnt.
pub fn check_exact(p: &Protocol, n_recv: usize, n_send: usize, overlap: usize, seed: u64) {
    let (r, s) = sets_with_overlap(n_recv, n_send, overlap, seed);
    let expected = oracle(&r, &s);
    assert_eq!(expected.len(), overlap);
    let (ri, si) = (items_from_records(&r), items_from_records(&s));
    let o = RunOptions::default();
    let (ro, so) = run_two_party(
        |ch| p.receive(ch, &ri, &o, &mut rng(1)),
        |ch| p.send(ch, &si, &o, &mut rng(2)),
    );
    let ro = ro.unwrap_or_else(|e| panic!("{p} receiver {n_recv}x{n_send}: {e}"));
    let so = so.unwrap_or_else(|e| panic!("{p} sender {n_recv}x{n_send}: {e}"));
    assert_eq!(
        ro.indices, expected,
        "{p} {n_recv}x{n_send} overlap {overlap}"
    );
    assert_eq!(ro.session.id, so.session.id);
    assert_eq!(so.session.receiver_size, n_recv as u64);
    assert_eq!(ro.session.sender_size, n_send as u64);
}

/// [`check_exact`] on [`BASE_CASES`] and then `extra`, seeds from `seed` on.
pub fn exact_suite(p: &Protocol, extra: &[(usize, usize, usize)], seed: u64) {
    for (i, &(a, b, k)) in BASE_CASES.iter().chain(extra).enumerate() {
        check_exact(p, a, b, k, seed + i as u64);
    }
}

/// Runs `p` with default options over metered channels; returns the receiver's indices and
/// both sides' traffic, after checking that each side received what the other sent.
#[allow(dead_code)]
pub fn metered(p: &Protocol, recv: &[Item], send: &[Item]) -> (Vec<usize>, Traffic, Traffic) {
    let o = RunOptions::default();
    let ((indices, rt), st) = run_two_party(
        |ch| {
            let mut m = Metered::new(ch);
            let out = p.receive(&mut m, recv, &o, &mut rng(1)).unwrap();
            (out.indices, m.traffic())
        },
        |ch| {
            let mut m = Metered::new(ch);
            p.send(&mut m, send, &o, &mut rng(2)).unwrap();
            m.traffic()
        },
    );
    assert_eq!(rt.bytes_sent, st.bytes_received);
    assert_eq!(st.bytes_sent, rt.bytes_received);
    (indices, rt, st)
}

/// The first message `p`'s receiver (`receiver`) or sender sends after the handshake.
#[allow(dead_code)]
pub fn first_message(p: &Protocol, receiver: bool) -> blindjoin_testkit::Target {
    use blindjoin_ot::base;
    use blindjoin_psi::protocols::{cm20, ecdh, kkrt16, naive, psz14};
    let msg = match (p.name, receiver) {
        ("naive", false) => naive::MSG_HASHES,
        ("ecdh", false) => ecdh::MSG_SENDER_POINTS,
        ("ecdh", true) => ecdh::MSG_RECEIVER_POINTS,
        ("kkrt16", true) => kkrt16::MSG_SETUP,
        ("psz14", true) => psz14::MSG_SETUP,
        ("cm20", true) => cm20::MSG_SETUP,
        (_, false) => base::MSG_RECEIVER_POINTS,
        (name, true) => panic!("{name} has no receiver message"),
    };
    blindjoin_testkit::Target::first(msg)
}

/// Bytes of `v` as a postcard (LEB128) varint.
#[allow(dead_code)]
pub fn varint_len(v: u64) -> u64 {
    u64::from((64 - v.max(1).leading_zeros()).div_ceil(7))
}
