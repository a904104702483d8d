//! `psz14` end to end over an in-memory channel: exact indices against a `HashSet` oracle on
//! independently shuffled, balanced and unbalanced sets; a full stash and overloaded sender bins
//! built for a known session; the code's communication against PSZ Tab. 4's formula; parameter
//! mismatches naming the field; tampered masks and OT columns giving a subset of the true
//! result (semi-honest tampering cannot be detected), later mask frames refused when cut.

use crate::common;
use crate::common::{Outcome, assert_malformed, assert_subset, fast, field_of};
use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};
use blindjoin_core::handshake::MSG_HELLO;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::kk13;
use blindjoin_psi::hashing::{BinHasher, CuckooParams, CuckooTable, SimpleTable, max_bin_size};
use blindjoin_psi::params::ceil_log2;
use blindjoin_psi::protocol::Sizes;
use blindjoin_psi::protocols::psz14::{
    self, STASH, bin_seed, ot_blocks, sigma_bits, stash_mask_bits,
};
use blindjoin_psi::{Party, Protocol, RunOptions};
use blindjoin_testkit::{Attack, Target, rng, run_two_party};
use rand::Rng;
use std::collections::HashSet;

static P: &Protocol = &psz14::PROTOCOL;

fn run(recv: &[Item], send: &[Item]) -> Outcome {
    let o = common::fast();
    common::run(P, recv, send, &o, &o)
}

fn item_oracle(recv: &[Item], send: &[Item]) -> Vec<usize> {
    let s: HashSet<[u8; 16]> = send.iter().map(|x| x.0).collect();
    (0..recv.len())
        .filter(|&i| s.contains(&recv[i].0))
        .collect()
}

#[test]
fn exact_indices() {
    let extra = [
        // b = 96,000 bins: 11 KK13 calls of 8192 virtual bins, the stash in the last; two
        // frames per mask set.
        (40_000, 20_001, 12_345),
        // More than 2^16 receiver items placed by h_0: that set is matched by sort-merge, the
        // other by binary search.
        (150_000, 3000, 1500),
    ];
    common::exact_suite(P, &extra, 200);
}

#[test]
fn a_callers_sigma_is_agreed_and_below_the_formula_needs_allow_weak() {
    let (r, s, expected) = common::small_sets();
    // PSZ14's σ = 32 (4 OT blocks per bin instead of the formula's 7 at these sizes).
    let weak = RunOptions {
        sigma: Some(32),
        allow_weak: true,
        ..fast()
    };
    let (ro, so) = common::run(P, &r, &s, &weak, &weak);
    assert_eq!(ro.unwrap().indices, expected);
    so.unwrap();
    // Without allow_weak it is refused before any OT, naming σ.
    let refused = RunOptions {
        allow_weak: false,
        ..weak.clone()
    };
    let (ro, _) = common::run(P, &r, &s, &refused, &refused);
    let e = ro.unwrap_err();
    assert!(
        matches!(e, Error::InvalidParam { field: "sigma", .. }),
        "{e}"
    );
    // Above the formula needs nothing more; a peer with the formula's σ is a mismatch.
    let strong = RunOptions {
        sigma: Some(80),
        ..fast()
    };
    let (ro, so) = common::run(P, &r, &s, &strong, &strong);
    assert_eq!(ro.unwrap().indices, expected);
    so.unwrap();
    let (ro, so) = common::run(P, &r, &s, &strong, &fast());
    assert!(ro.is_err());
    assert_eq!(field_of(&so.unwrap_err()), Some("sigma"));
}

#[test]
fn kappa_80_runs_the_same_code() {
    // The Walsh-Hadamard code of length 256 has distance 128 ≥ κ at both of PSZ14 Tab. 2's
    // levels: κ = 80 gives the exact indices with the same traffic formula as κ = 128.
    let at80 = blindjoin_psi::RunOptions {
        kappa: 80,
        ..common::fast()
    };
    common::check_exact(P, (3_000, 2_000, 777), 230, &at80, false);
    let sizes = |kappa| blindjoin_psi::protocol::Sizes {
        kappa,
        ..blindjoin_psi::protocol::Sizes::new(1 << 16, 1 << 16)
    };
    assert_eq!(
        (P.traffic)(&sizes(80)).unwrap(),
        (P.traffic)(&sizes(128)).unwrap()
    );
}

fn random_items(n: usize, seed: u64) -> Vec<Item> {
    let mut r = rng(seed);
    (0..n).map(|_| Item(r.random())).collect()
}

/// The bin hash functions of the session that `rng(1)`/`rng(2)` produce for these set sizes:
/// the handshake nonces come from those generators, and the session id hashes both hellos
/// (sizes, parameters, nonces), not the items. So a first run with any sets of the same sizes
/// reveals the id, and a second run with chosen items gets the same session.
fn session_hasher(n_recv: usize, n_send: usize) -> (BinHasher, Block, [u8; 32]) {
    let (ro, _) = run(&random_items(n_recv, 90), &random_items(n_send, 91));
    let session = ro.unwrap().session;
    let seed = bin_seed(&session);
    let bins = CuckooParams::psz(n_recv).unwrap().num_bins();
    (BinHasher::new(seed, 2, bins).unwrap(), seed, session.id)
}

/// `count` random items whose two bins satisfy `keep`.
fn items_in_bins(
    h: &BinHasher,
    count: usize,
    seed: u64,
    keep: impl Fn(u32, u32) -> bool,
) -> Vec<Item> {
    let mut r = rng(seed);
    let mut out = Vec::new();
    while out.len() < count {
        let x: [u8; 16] = r.random();
        let b = h.bins(Block::from_bytes(x));
        if keep(b[0], b[1]) {
            out.push(Item(x));
        }
    }
    out
}

fn blocks(items: &[Item]) -> Vec<Block> {
    items.iter().map(|x| Block::from_bytes(x.0)).collect()
}

#[test]
fn full_stash_and_overloaded_sender_bins() {
    // n1 = 7 → b = 17 bins. Six receiver items live only in bins {0, 1}: two fit, four fill the
    // stash. The seventh lives elsewhere.
    let (n1, n2) = (7, 60);
    let (h, seed, id) = session_hasher(n1, n2);
    assert_eq!(h.num_bins(), 17);
    let crowded = items_in_bins(&h, 6 + 30, 5, |a, b| a < 2 && b < 2);
    let elsewhere = items_in_bins(&h, 1 + 10, 6, |a, b| a >= 2 && b >= 2);
    // Sender items whose two hash functions name one bin (entries (y, 0) and (y, 1) there).
    let doubled = items_in_bins(&h, 4, 7, |a, b| a == b && a >= 2);
    let mut recv: Vec<Item> = crowded[..6].to_vec();
    recv.push(elsewhere[0]);
    recv.swap(0, 6);
    let table = CuckooTable::build(&CuckooParams::psz(n1).unwrap(), seed, &blocks(&recv)).unwrap();
    let stashed: Vec<usize> = table.stash().iter().map(|&i| i as usize).collect();
    assert_eq!(stashed.len(), STASH, "the stash must be full");
    let in_bins: Vec<usize> = (0..n1).filter(|i| !stashed.contains(i)).collect();
    assert_eq!(in_bins.len(), 3);
    // The sender holds two stashed receiver items, one crowded item in a bin, the receiver's
    // seventh item, 30 more items crowding bins 0 and 1, the doubled items and fillers.
    let mut send: Vec<Item> = vec![recv[stashed[0]], recv[stashed[3]], recv[0]];
    send.extend(
        in_bins
            .iter()
            .filter(|&&i| i != 0)
            .take(1)
            .map(|&i| recv[i]),
    );
    send.extend_from_slice(&crowded[6..]);
    send.extend_from_slice(&doubled);
    send.extend_from_slice(&elsewhere[1..]);
    send.extend(random_items(n2 - send.len(), 8));
    assert_eq!(send.len(), n2);
    send.swap(0, 40);
    send.swap(2, 33);

    // The sender's bins 0 and 1 hold far more than a padded PSZ bin would (the maximum bin size
    // for 2·n2 balls in 17 bins at λ = 40): no padding is involved, so nothing fails.
    let simple = SimpleTable::build(&h, &blocks(&send)).unwrap();
    let bound = max_bin_size(2 * n2 as u64, 17, 40).unwrap();
    assert!(
        simple.max_load() > bound,
        "{} vs {bound}",
        simple.max_load()
    );

    let (ro, so) = run(&recv, &send);
    let ro = ro.unwrap();
    so.unwrap();
    assert_eq!(ro.session.id, id, "the second run must reuse the session");
    let expected = item_oracle(&recv, &send);
    assert_eq!(expected.len(), 4);
    assert_eq!(ro.indices, expected);

    // The same sets with every crowded item on the receiver's side in the intersection.
    let mut send2: Vec<Item> = recv.clone();
    send2.extend_from_slice(&crowded[6..]);
    send2.extend_from_slice(&doubled);
    send2.extend(random_items(n2 - send2.len(), 9));
    send2.swap(1, 45);
    send2.swap(5, 20);
    let (ro, so) = run(&recv, &send2);
    so.unwrap();
    let ro = ro.unwrap();
    assert_eq!(ro.session.id, id);
    assert_eq!(ro.indices, (0..n1).collect::<Vec<_>>());
}

#[test]
fn communication_follows_table_4() {
    // PSZ Tab. 4's row "Cuckoo Hashing" in bits: (2(1+ε)·n1 + s)·t OTs of 2κ = 256 bits, plus
    // s·n2 stash masks of ℓ1 and 2·n2 bin masks of ℓ2 bits, at our t = ⌈σ/8⌉ and exact
    // (unrounded) ℓ1, ℓ2. The code's bytes (the formula the traffic tests check against real
    // runs) exceed it only by the masks' rounding to whole bytes, the padding rows of the last
    // OT chunk, framing and the base OTs.
    for log_n in [16u32, 18, 20] {
        let n = 1u64 << log_n;
        let traffic = (P.traffic)(&Sizes::new(n, n)).unwrap();
        let ours = 8.0 * traffic.iter().map(|(_, b)| *b as f64).sum::<f64>();
        let t = ot_blocks(sigma_bits(40, n, STASH)) as f64;
        let l1 = f64::from(stash_mask_bits(40, n));
        let l2 = f64::from(40 + ceil_log2(u128::from(n) * u128::from(n)));
        let nf = n as f64;
        let tab4 = (2.4 * nf + STASH as f64) * t * 256.0 + STASH as f64 * nf * l1 + 2.0 * nf * l2;
        let ratio = ours / tab4;
        assert!((1.0..1.03).contains(&ratio), "n = 2^{log_n}: {ratio}");
    }
}

fn attack_sender(target: Target, attack: Attack) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Sender, target, attack, &fast())
}

fn attack_receiver(target: Target, attack: Attack) -> (Outcome, Vec<usize>) {
    common::attacked(P, Party::Receiver, target, attack, &fast())
}

#[test]
fn setup_mismatch_names_the_field() {
    // The receiver's table parameters are (bins, stash, sigma) as postcard varints of one byte
    // each here (b = 120, s = 4, σ = 40 + ⌈log2(6·60)⌉ = 49): flip each.
    for (byte, field) in [(0, "bins"), (1, "stash"), (2, "sigma")] {
        let ((ro, so), _) = attack_receiver(Target::first(psz14::MSG_SETUP), Attack::FlipBit(byte));
        let e = so.unwrap_err();
        assert_eq!(field_of(&e), Some(field), "{e}");
        assert!(ro.is_err());
    }
}

/// Rewrites the first occurrence of `from` in the hello.
struct Rewrite<C> {
    inner: C,
    from: &'static [u8],
    to: &'static [u8],
}

impl<C: Channel> FrameSender for Rewrite<C> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        if msg == MSG_HELLO {
            let at = frame
                .windows(self.from.len())
                .position(|w| w == self.from)
                .expect("pattern in the hello");
            let mut f = frame.to_vec();
            f[at..at + self.to.len()].copy_from_slice(self.to);
            return self.inner.send(msg, &f);
        }
        self.inner.send(msg, frame)
    }

    fn close(&mut self) {
        self.inner.close();
    }
}

impl<C: Channel> FrameReceiver for Rewrite<C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        self.inner.recv(what, max_len)
    }
}

impl<C: Channel> Channel for Rewrite<C> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        self.inner.split()
    }
}

#[test]
fn handshake_parameter_mismatch_names_the_field() {
    let (r, s, _) = common::small_sets();
    let o = RunOptions::default();
    // Postcard strings are length-prefixed: "eta" then "8"; "stash" then "4".
    for (from, to, field) in [
        (&b"\x03eta\x018"[..], &b"\x03eta\x019"[..], "eta"),
        (&b"\x05stash\x014"[..], &b"\x05stash\x015"[..], "stash"),
    ] {
        let (ro, so) = run_two_party(
            |ch| {
                let mut w = Rewrite {
                    inner: ch,
                    from,
                    to,
                };
                P.receive(&mut w, &r, &o, &mut rng(1))
            },
            |ch| P.send(ch, &s, &o, &mut rng(2)),
        );
        // The sender sees the altered hello and names the field; the receiver, whose own
        // checks pass, learns it from the sender's verdict.
        assert_eq!(field_of(&so.unwrap_err()), Some(field));
        let e = ro.unwrap_err();
        assert!(
            matches!(e, Error::PeerRefused(_)) && e.to_string().contains(field),
            "{e}"
        );
    }
}

#[test]
fn tampered_masks_give_a_subset_and_bad_frames_are_refused() {
    // The two bin-mask sets (60 masks each, one frame each) and the four stash-mask sets.
    for target in [
        Target::frame(psz14::MSG_BIN_MASKS, 0),
        Target::frame(psz14::MSG_BIN_MASKS, 1),
        Target::frame(psz14::MSG_STASH_MASKS, 0),
        Target::frame(psz14::MSG_STASH_MASKS, 3),
    ] {
        for at in [0, 17, 200] {
            let ((ro, so), expected) = attack_sender(target, Attack::FlipBit(at));
            so.unwrap();
            assert_subset(&ro.unwrap().indices, &expected, 1);
        }
        // Later frames than the first, which the registry's tests attack.
        let ((ro, _), _) = attack_sender(target, Attack::Truncate(3));
        assert_malformed(&ro.unwrap_err());
        let ((ro, _), _) = attack_sender(target, Attack::Extend(vec![0; 16 * 10]));
        assert_malformed(&ro.unwrap_err());
    }
    let ((ro, so), _) = attack_sender(Target::frame(psz14::MSG_STASH_MASKS, 1), Attack::HangUp);
    assert!(matches!(ro.unwrap_err(), Error::PeerClosed { .. }));
    assert!(so.is_err());
}

#[test]
fn tampered_ot_columns_give_a_subset_and_bad_frames_are_refused() {
    // A flipped bit in the u columns changes OT rows the sender cannot check (semi-honest).
    for at in [3, 5000, 40_000] {
        let ((ro, so), expected) =
            attack_receiver(Target::first(kk13::MSG_U_COLUMNS), Attack::FlipBit(at));
        so.unwrap();
        assert_subset(&ro.unwrap().indices, &expected, 2);
    }
    let ((_, so), _) = attack_receiver(
        Target::first(psz14::MSG_SETUP),
        Attack::Replace(vec![0xff; 40]),
    );
    assert!(so.is_err());
}
