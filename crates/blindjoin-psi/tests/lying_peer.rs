//! A peer that announces a huge set in the handshake and then sends little or nothing must not
//! make the honest party allocate for the data it announced.
//!
//! Every protocol of the registry runs in each role with 1000 own items and
//! `max_peer_set_size = 2^30` against a fake peer on an in-memory channel. The fake performs the
//! real handshake with `set_size = 2^30` and the protocol's parameters, then either sends nothing
//! at all or a modest amount of correctly sized but meaningless data (the messages the honest
//! party expects from it, in order), and then closes its sending direction. A counting global
//! allocator tracks the live and peak heap bytes of the whole test process; the tests run one at
//! a time, so the rise of the peak during the honest run is the honest party's (plus the fake's
//! frames in flight, which are part of what it sent).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use blindjoin_core::Error;
use blindjoin_core::channel::memory::{MemoryChannel, memory_pair};
use blindjoin_core::channel::{FrameReceiver, FrameSender, send_msg};
use blindjoin_core::handshake::{Role, Session, SessionConfig, handshake};
use blindjoin_core::item::Item;
use blindjoin_ot::base::BaseOtSender;
use blindjoin_ot::base::ideal::IdealBaseOtSender;
use blindjoin_psi::hashing::CuckooParams;
use blindjoin_psi::protocols::{ALL, cm20, dkt10, ecdh, kkrt16, naive, psz14};
use blindjoin_psi::{BaseOt, Party, Protocol, RunOptions};
use blindjoin_testkit::rng;
use rand::RngCore;
use serde::Serialize;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Heap bytes live now.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most heap bytes live since the last [`reset_peak`].
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting live and peak bytes.
struct Counting;

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn shrank(n: usize) {
    LIVE.fetch_sub(n, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` with the caller's arguments; the counters only
// observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test at a time: the counters are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// The set size the fake peer announces.
const CLAIM: u64 = 1 << 30;

/// The honest party's own items.
const OWN: usize = 1000;

/// The most the honest party's peak may rise above its starting level when the peer sends
/// nothing (the goal: 64 MiB).
const SILENT_LIMIT: usize = 64 << 20;

/// How long the fake peer stays silent before it closes its sending direction.
const SILENCE: Duration = Duration::from_secs(1);

const MIB: usize = 1 << 20;

/// The honest party's options: its own bound on the peer's size admits the claim.
fn honest_options() -> RunOptions {
    RunOptions {
        base_ot: BaseOt::Ideal,
        // Every protocol's budget for the claim (more than 2^30 for the dual-execution ones).
        max_peer_set_size: u64::MAX,
        ..RunOptions::default()
    }
}

fn own_items() -> Vec<Item> {
    let mut r = rng(11);
    (0..OWN)
        .map(|_| {
            let mut x = [0u8; 16];
            r.fill_bytes(&mut x);
            Item(x)
        })
        .collect()
}

fn role_of(party: Party) -> Role {
    match party {
        Party::Receiver => Role::Receiver,
        _ => Role::Sender,
    }
}

/// Whether `p`'s flow has any message that `role`'s peer sends (if not, the honest party needs
/// nothing from the peer and its run succeeds whatever the peer does after the handshake).
fn expects_data(p: &Protocol, role: Role) -> bool {
    p.flow.iter().any(|m| role_of(m.from) == role.peer())
}

/// What the honest party's run ended with, and how far the heap's peak rose above its level
/// before the run.
struct Outcome {
    result: blindjoin_core::Result<()>,
    rise: usize,
}

/// Runs the honest party of `p` in `role` against `fake`, which gets the other end of the
/// channel and the session of its own handshake; measures the honest party's peak.
fn run_against(
    p: &'static Protocol,
    role: Role,
    opts: &RunOptions,
    fake: impl FnOnce(&mut MemoryChannel, &Session) + Send,
) -> Outcome {
    let items = own_items();
    let (mut honest, mut peer) = memory_pair(Duration::from_secs(120));
    let peer_cfg = SessionConfig {
        protocol: p.name.to_owned(),
        role: role.peer(),
        set_size: CLAIM,
        kappa: opts.kappa,
        lambda: opts.lambda,
        params: (p.params)(opts),
        max_peer_set_size: 1 << 32,
        expected_peer_set_size: None,
        peer_queries: None,
    };
    std::thread::scope(|s| {
        let start = LIVE.load(Ordering::Relaxed);
        PEAK.store(start, Ordering::Relaxed);
        let fake = s.spawn(move || {
            if let Ok(session) = handshake(&mut peer, &peer_cfg, &mut rng(7)) {
                fake(&mut peer, &session);
            }
            // Hang up: nothing more from us; drain what the honest party still sends until it
            // is done, so that its sends never fail for a reason of ours.
            FrameSender::close(&mut peer);
            while FrameReceiver::recv(&mut peer, "anything", usize::MAX).is_ok() {}
        });
        let result = match role {
            Role::Receiver => p
                .receive(&mut honest, &items, opts, &mut rng(1))
                .map(|_| ()),
            Role::Sender => p.send(&mut honest, &items, opts, &mut rng(1)).map(|_| ()),
        };
        let rise = PEAK.load(Ordering::Relaxed).saturating_sub(start);
        drop(honest);
        if let Err(e) = fake.join() {
            std::panic::resume_unwind(e);
        }
        Outcome { result, rise }
    })
}

fn check_silent(p: &'static Protocol, role: Role) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = run_against(p, role, &honest_options(), |_, _| {
        std::thread::sleep(SILENCE)
    });
    eprintln!(
        "{p} {role}, peer claims 2^{} and sends nothing: {:?}, peak +{:.1} MiB",
        CLAIM.ilog2(),
        out.result.as_ref().map_err(ToString::to_string),
        out.rise as f64 / MIB as f64
    );
    if expects_data(p, role) {
        match &out.result {
            Err(Error::PeerClosed { .. }) => {}
            // A protocol whose structures cannot serve the claim refuses it before anything
            // else (the Bloom-filter protocols: at most 2^32 - 1 filter positions; rr17a: at
            // most 2^32 OTs; cm20_mal: OPRF values of at most 128 bits), or refuses structures
            // sized by the claim that exceed the memory budget (the RR17 protocols: every
            // party encodes all bins of the larger set).
            Err(Error::InvalidParam {
                field: "set size" | "receiver set size" | "memory_budget",
                ..
            }) => {}
            other => panic!("{p} {role}: expected PeerClosed, got {other:?}"),
        }
    } else {
        assert!(out.result.is_ok(), "{p} {role}: {:?}", out.result);
    }
    assert!(
        out.rise <= SILENT_LIMIT,
        "{p} {role}: the peak rose by {} bytes",
        out.rise
    );
}

#[test]
fn every_protocol_survives_a_silent_peer_claiming_2_30_items() {
    for p in ALL.iter().filter(|p| p.is_two_party()) {
        for role in [Role::Receiver, Role::Sender] {
            check_silent(p, role);
        }
    }
}

// ---- A peer that sends some correctly sized garbage -------------------------------------------

/// Sends `total` bytes as frames of `frame_len` bytes of message `msg`, each frame filled by
/// `fill` (so the fake holds one frame at a time).
fn send_frames(
    ch: &mut MemoryChannel,
    msg: &'static str,
    frame_len: usize,
    total: usize,
    mut fill: impl FnMut(&mut [u8]),
) {
    let mut frame = vec![0u8; frame_len];
    let mut sent = 0;
    while sent < total {
        fill(&mut frame);
        if ch.send(msg, &frame).is_err() {
            return;
        }
        sent += frame_len;
    }
}

fn random_fill(seed: u64) -> impl FnMut(&mut [u8]) {
    let mut r = rng(seed);
    move |f| r.fill_bytes(f)
}

/// The bound on the peak's rise when the peer sent `sent` bytes: four times what was sent (a
/// received tag of 10 bytes is kept as a 16-byte value in a hash table by `naive`, which grows
/// by doubling), plus 16 MiB of working buffers that do not depend on the peer's size (one
/// chunk of OT extension rows and columns).
fn garbage_limit(sent: usize) -> usize {
    4 * sent + 16 * MIB
}

fn check_garbage(
    p: &'static Protocol,
    role: Role,
    sent: usize,
    fake: impl FnOnce(&mut MemoryChannel, &Session) + Send,
) -> Outcome {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = run_against(p, role, &honest_options(), fake);
    eprintln!(
        "{p} {role}, peer claims 2^{} and sends {:.1} MiB: {:?}, peak +{:.1} MiB",
        CLAIM.ilog2(),
        sent as f64 / MIB as f64,
        out.result.as_ref().map_err(ToString::to_string),
        out.rise as f64 / MIB as f64
    );
    assert!(
        out.rise <= garbage_limit(sent),
        "{p} {role}: the peak rose by {} bytes after {sent} bytes sent",
        out.rise
    );
    out
}

fn assert_peer_closed(out: &Outcome, during: &str) {
    match &out.result {
        Err(Error::PeerClosed { during: d }) => assert_eq!(*d, during),
        other => panic!("expected PeerClosed during {during}, got {other:?}"),
    }
}

/// A tag of λ + ⌈log2(n1·n2)⌉ bits at the honest party's own size and the claim.
fn claimed_tag_len() -> usize {
    blindjoin_psi::params::tag_bytes(40, OWN as u64, CLAIM)
}

/// Bulk elements per frame (the protocols' 2^14).
const PER_FRAME: usize = 1 << 14;

#[test]
fn naive_receiver_grows_only_with_the_hashes_sent() {
    let sent = 8 * MIB;
    let out = check_garbage(&naive::PROTOCOL, Role::Receiver, sent, |ch, _| {
        let len = claimed_tag_len();
        send_frames(ch, naive::MSG_HASHES, PER_FRAME * len, sent, random_fill(3));
    });
    assert_peer_closed(&out, naive::MSG_HASHES);
}

#[test]
fn naive_sender_needs_nothing_from_the_receiver() {
    // The receiver sends nothing in `naive`: the sender's run is the silent case.
    let out = check_garbage(&naive::PROTOCOL, Role::Sender, 0, |_, _| {});
    assert!(out.result.is_ok(), "{:?}", out.result);
}

/// A frame of valid compressed Ristretto255 points (the base point, repeated).
fn point_fill(f: &mut [u8]) {
    let b = curve25519_dalek::constants::RISTRETTO_BASEPOINT_COMPRESSED.to_bytes();
    for p in f.chunks_exact_mut(ecdh::POINT_LEN) {
        p.copy_from_slice(&b);
    }
}

#[test]
fn ecdh_receiver_grows_only_with_the_points_sent() {
    let sent = 2 * PER_FRAME * ecdh::POINT_LEN;
    let out = check_garbage(&ecdh::PROTOCOL, Role::Receiver, sent, |ch, _| {
        send_frames(
            ch,
            ecdh::MSG_SENDER_POINTS,
            PER_FRAME * ecdh::POINT_LEN,
            sent,
            point_fill,
        );
    });
    assert_peer_closed(&out, ecdh::MSG_SENDER_POINTS);
}

#[test]
fn ecdh_sender_grows_only_with_the_points_sent() {
    let sent = 2 * PER_FRAME * ecdh::POINT_LEN;
    let out = check_garbage(&ecdh::PROTOCOL, Role::Sender, sent, |ch, _| {
        send_frames(
            ch,
            ecdh::MSG_RECEIVER_POINTS,
            PER_FRAME * ecdh::POINT_LEN,
            sent,
            point_fill,
        );
    });
    assert_peer_closed(&out, ecdh::MSG_RECEIVER_POINTS);
}

#[test]
fn dkt10_sender_grows_only_with_the_points_sent() {
    // The sender answers each frame as it arrives (two points per item, kept until the peer
    // reads them) and keeps one weight per item for the receiver's responses.
    let sent = 2 * PER_FRAME * dkt10::RECEIVER_ITEM_LEN;
    let out = check_garbage(&dkt10::PROTOCOL, Role::Sender, sent, |ch, _| {
        let mut commit = vec![0u8; 2 * dkt10::POINT_LEN];
        point_fill(&mut commit);
        if ch.send(dkt10::MSG_RECEIVER_COMMIT, &commit).is_err() {
            return;
        }
        send_frames(
            ch,
            dkt10::MSG_RECEIVER_POINTS,
            PER_FRAME * dkt10::RECEIVER_ITEM_LEN,
            sent,
            point_fill,
        );
    });
    assert_peer_closed(&out, dkt10::MSG_RECEIVER_POINTS);
}

/// The fake receiver's base OTs as their sender, over the ideal functionality.
fn ideal_base_ots(ch: &mut MemoryChannel, session: &Session, n: usize) {
    IdealBaseOtSender::default()
        .send_random(ch, &session.id, n, &mut rng(5))
        .unwrap();
}

fn send_setup<T: Serialize>(ch: &mut MemoryChannel, msg: &'static str, value: &T) {
    send_msg(ch, msg, value).unwrap();
}

#[test]
fn kkrt16_receiver_grows_only_with_the_tags_sent() {
    let sent = 8 * MIB;
    let out = check_garbage(&kkrt16::PROTOCOL, Role::Receiver, sent, |ch, _| {
        let len = claimed_tag_len();
        send_frames(ch, kkrt16::MSG_TAGS, PER_FRAME * len, sent, random_fill(3));
    });
    assert_peer_closed(&out, kkrt16::MSG_TAGS);
}

#[test]
fn kkrt16_sender_grows_only_with_the_u_columns_sent() {
    #[derive(Serialize)]
    struct Setup {
        bins: u64,
    }
    let width = blindjoin_ot::ext::kkrt::code_blocks(128, 40, 3 << 32);
    let chunk = blindjoin_ot::ext::CHUNK;
    let frame_len = 128 * width * blindjoin_ot::ext::row_bytes(chunk);
    let sent = 2 * frame_len;
    let out = check_garbage(&kkrt16::PROTOCOL, Role::Sender, sent, |ch, session| {
        let bins = CuckooParams::kkrt(CLAIM as usize, 40).unwrap().num_bins();
        send_setup(ch, kkrt16::MSG_SETUP, &Setup { bins: bins as u64 });
        ideal_base_ots(ch, session, 128 * width);
        send_frames(
            ch,
            blindjoin_ot::ext::kkrt::MSG_U_COLUMNS,
            frame_len,
            sent,
            random_fill(4),
        );
    });
    assert_peer_closed(&out, blindjoin_ot::ext::kkrt::MSG_U_COLUMNS);
}

#[test]
fn cm20_receiver_grows_only_with_the_values_sent() {
    let sent = 8 * MIB;
    let out = check_garbage(&cm20::PROTOCOL, Role::Receiver, sent, |ch, _| {
        let len = claimed_tag_len();
        send_frames(ch, cm20::MSG_TAGS, PER_FRAME * len, sent, random_fill(3));
    });
    assert_peer_closed(&out, cm20::MSG_TAGS);
}

#[test]
fn cm20_sender_grows_only_with_the_columns_sent() {
    #[derive(Serialize)]
    struct Setup {
        m: u64,
        w: u64,
        tag_bits: u32,
    }
    #[derive(Serialize)]
    struct PrfKey {
        key: [u8; 16],
    }
    // m = 2^30 rows: a column is 128 MiB, sent in frames of 1 MiB; the fake sends 16 of them.
    let frame_len = MIB;
    let sent = 16 * frame_len;
    let out = check_garbage(&cm20::PROTOCOL, Role::Sender, sent, |ch, session| {
        let w = cm20::width(128, 40, CLAIM, CLAIM, OWN as u64).unwrap();
        let setup = Setup {
            m: CLAIM,
            w: u64::from(w),
            tag_bits: blindjoin_psi::params::tag_bits(40, CLAIM, OWN as u64),
        };
        send_setup(ch, cm20::MSG_SETUP, &setup);
        ideal_base_ots(ch, session, w as usize);
        send_setup(ch, cm20::MSG_KEY, &PrfKey { key: [9; 16] });
        send_frames(ch, cm20::MSG_DELTA, frame_len, sent, random_fill(4));
    });
    assert_peer_closed(&out, cm20::MSG_DELTA);
}

#[test]
fn psz14_receiver_grows_only_with_the_masks_sent() {
    let sent = 8 * MIB;
    let out = check_garbage(&psz14::PROTOCOL, Role::Receiver, sent, |ch, _| {
        let len = claimed_tag_len();
        send_frames(
            ch,
            psz14::MSG_BIN_MASKS,
            PER_FRAME * len,
            sent,
            random_fill(3),
        );
    });
    assert_peer_closed(&out, psz14::MSG_BIN_MASKS);
}

#[test]
fn psz14_sender_grows_only_with_the_u_columns_sent() {
    #[derive(Serialize)]
    struct Setup {
        bins: u64,
        stash: u32,
        sigma: u32,
    }
    let sigma = psz14::sigma_bits(40, OWN as u64, psz14::STASH);
    let blocks = psz14::ot_blocks(sigma);
    let ots = psz14::chunk_bins(blocks) * blocks;
    let kappa = blindjoin_ot::ext::kk13::code_len(psz14::ETA);
    let frame_len = kappa * blindjoin_ot::ext::row_bytes(ots);
    let sent = 4 * frame_len;
    let out = check_garbage(&psz14::PROTOCOL, Role::Sender, sent, |ch, session| {
        let bins = CuckooParams::psz(CLAIM as usize).unwrap().num_bins();
        let setup = Setup {
            bins: bins as u64,
            stash: psz14::STASH as u32,
            sigma,
        };
        send_setup(ch, psz14::MSG_SETUP, &setup);
        ideal_base_ots(ch, session, kappa);
        send_frames(
            ch,
            blindjoin_ot::ext::kk13::MSG_U_COLUMNS,
            frame_len,
            sent,
            random_fill(4),
        );
    });
    assert_peer_closed(&out, blindjoin_ot::ext::kk13::MSG_U_COLUMNS);
}

// ---- The memory budget ------------------------------------------------------------------------

/// Runs the honest sender of `p` with `budget` against a silent peer claiming 2^30 items, and
/// checks that it refuses with `InvalidParam` naming `memory_budget`, having allocated next to
/// nothing.
fn check_budget_refusal(p: &'static Protocol, budget: u64) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let opts = RunOptions {
        memory_budget: Some(budget),
        ..honest_options()
    };
    let out = run_against(p, Role::Sender, &opts, |_, _| {});
    match &out.result {
        Err(Error::InvalidParam { field, reason }) => {
            assert_eq!(*field, "memory_budget", "{p}: {reason}");
            assert!(reason.contains(&budget.to_string()), "{p}: {reason}");
        }
        other => panic!("{p}: expected InvalidParam(memory_budget), got {other:?}"),
    }
    assert!(out.rise <= MIB, "{p}: the peak rose by {} bytes", out.rise);
}

#[test]
fn senders_refuse_what_exceeds_the_memory_budget_before_allocating_it() {
    // cm20: one Δ column at m = 2^30 is 128 MiB (twice that with its frames).
    check_budget_refusal(&cm20::PROTOCOL, 64 * MIB as u64);
    // kkrt16 and psz14: the chunk index of 1.6·2^30 and 2.4·2^30 bins.
    check_budget_refusal(&kkrt16::PROTOCOL, 64 << 10);
    check_budget_refusal(&psz14::PROTOCOL, 64 << 10);
}

#[test]
fn the_default_budget_admits_the_claim_and_none_means_no_limit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let o = RunOptions::default();
    assert_eq!(o.memory_budget, Some(blindjoin_psi::DEFAULT_MEMORY_BUDGET));
    assert_eq!(blindjoin_psi::DEFAULT_MEMORY_BUDGET, 4 << 30);
    assert!(o.check_memory("x", 4 << 30).is_ok());
    match o.check_memory("x", (4 << 30) + 1) {
        Err(Error::InvalidParam { field, .. }) => assert_eq!(field, "memory_budget"),
        other => panic!("{other:?}"),
    }
    let unlimited = RunOptions {
        memory_budget: None,
        ..RunOptions::default()
    };
    assert!(unlimited.check_memory("x", u64::MAX).is_ok());
}
