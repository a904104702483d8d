//! The seed corpus: valid messages captured from real runs (each target's party under test
//! against a real peer, with the frames it received recorded), and hand-written inputs that
//! end in each kind of error. `examples/seeds.rs` writes them to `corpus/<target>/`; the smoke
//! test regenerates them and checks that each still ends as its name says (`ok-…` or `err-…`).

use crate::aided::{
    AidedCase, CLIENT_CASES, Kmrs, SERVER_CASES, client_selector, decode_submit, recording_of,
    server_selector,
};
use crate::frames::{self, join};
use crate::peer::{OURS_SEED, PEER_SEED, peer_handshake};
use crate::targets::{
    BASE_OT_MODES, BaseOtMode, ENDEMIC_TARGETS, OtExtCase, OtExtMode, ProtocolBase, ProtocolCase,
    base_ot_byte, hello_ours, hello_peer, run_base_ot, run_base_ot_peer, run_ot_ext,
    run_ot_ext_peer, run_party,
};
use blindjoin_core::Result;
use blindjoin_core::channel::memory::{MemoryChannel, memory_pair};
use blindjoin_core::channel::{
    Channel, FrameReceiver, FrameSender, MAX_FRAME_LEN, recv_msg, send_msg,
};
use blindjoin_core::handshake::{MAGIC, Role};
use blindjoin_psi::Protocol;
use blindjoin_psi::protocols::ALL;
use blindjoin_psi::protocols::server_aided::wire::{
    FairOpen, KeyMsg, MAX_SUBMIT_LEN, MSG_FAIR_OPEN, MSG_KEY, MSG_OPEN, MSG_PARTY, MSG_SHARE,
    MSG_STATUS, MSG_SUBMIT, MSG_VERDICT, OpenMsg, ShareMsg, Status, Submit, Verdict, recv_status,
    send_status,
};
use std::time::Duration;

/// One seed input.
#[derive(Clone, Debug)]
pub struct Seed {
    /// The target it is for.
    pub target: &'static str,
    /// Its file name: `ok-…` if the target returns `Ok` on it, `err-…` if a clean error,
    /// `any-…` if either.
    pub name: String,
    /// The input.
    pub data: Vec<u8>,
}

impl Seed {
    /// Whether the target returns `Ok` on this seed (`Some(true)`), a clean error
    /// (`Some(false)`) or either (`None`), by the name's prefix.
    pub fn expect_ok(&self) -> Option<bool> {
        if self.name.starts_with("ok-") {
            Some(true)
        } else if self.name.starts_with("err-") {
            Some(false)
        } else {
            None
        }
    }
}

/// A channel that keeps a copy of every frame it receives, and the name of the message the
/// party expected, through [`Channel::split`] too.
pub(crate) struct Recorder<C> {
    pub(crate) inner: C,
    pub(crate) received: Vec<Vec<u8>>,
    pub(crate) names: Vec<&'static str>,
}

impl<C> Recorder<C> {
    /// A recorder of what `inner` receives.
    pub(crate) fn new(inner: C) -> Self {
        Recorder {
            inner,
            received: Vec::new(),
            names: Vec::new(),
        }
    }
}

impl<C: Channel> FrameSender for Recorder<C> {
    fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
        FrameSender::send(&mut self.inner, msg, frame)
    }

    fn close(&mut self) {
        FrameSender::close(&mut self.inner);
    }
}

impl<C: Channel> FrameReceiver for Recorder<C> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = FrameReceiver::recv(&mut self.inner, what, max_len)?;
        self.received.push(frame.clone());
        self.names.push(what);
        Ok(frame)
    }
}

/// The receiving half of a split [`Recorder`].
struct RecordingHalf<'a> {
    inner: Box<dyn FrameReceiver + 'a>,
    log: &'a mut Vec<Vec<u8>>,
    names: &'a mut Vec<&'static str>,
}

impl FrameReceiver for RecordingHalf<'_> {
    fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
        let frame = self.inner.recv(what, max_len)?;
        self.log.push(frame.clone());
        self.names.push(what);
        Ok(frame)
    }
}

impl<C: Channel> Channel for Recorder<C> {
    fn split(&mut self) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
        let (rx, tx) = self.inner.split();
        let rx = RecordingHalf {
            inner: rx,
            log: &mut self.received,
            names: &mut self.names,
        };
        (Box::new(rx), tx)
    }

    fn binding(&self) -> Option<[u8; 32]> {
        self.inner.binding()
    }

    fn peer_identity(&self) -> Option<[u8; 32]> {
        self.inner.peer_identity()
    }

    fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.inner.set_deadline(deadline);
    }
}

/// Runs `ours` against `peer` (two threads, an in-memory channel) and returns the result of
/// `ours` and every frame it received.
fn record<A, B>(ours: A, peer: B) -> (Result<()>, Vec<Vec<u8>>)
where
    A: FnOnce(&mut dyn Channel) -> Result<()> + Send,
    B: FnOnce(&mut dyn Channel) -> Result<()> + Send,
{
    let (r, frames, _) = record_named(ours, peer);
    (r, frames)
}

/// [`record`], also giving the name of the message each frame was received as.
fn record_named<A, B>(ours: A, peer: B) -> (Result<()>, Vec<Vec<u8>>, Vec<&'static str>)
where
    A: FnOnce(&mut dyn Channel) -> Result<()> + Send,
    B: FnOnce(&mut dyn Channel) -> Result<()> + Send,
{
    let (a, mut b) = memory_pair(Duration::from_secs(30));
    std::thread::scope(|s| {
        let h = s.spawn(move || {
            let r = peer(&mut b);
            drop(b);
            r
        });
        let mut rec = Recorder::new(a);
        let r = ours(&mut rec);
        let frames = std::mem::take(&mut rec.received);
        let names = std::mem::take(&mut rec.names);
        drop(rec);
        // The peer's own result does not matter: what it sent is recorded.
        let _ = h.join();
        (r, frames, names)
    })
}

fn outcome_name(r: &Result<()>, name: &str) -> String {
    format!("{}-{name}", if r.is_ok() { "ok" } else { "err" })
}

/// The size pairs of a protocol target's recorded seeds, as indices into `targets::SIZES`:
/// (3, 5), (5, 3), (0, 2), (21, 8), (1, 1).
const PROTOCOL_SIZES: [(u8, u8); 5] = [(3, 4), (4, 3), (0, 2), (7, 5), (1, 1)];

/// The size pairs of the endemic-OT targets' recorded seeds: their runs differ from the other
/// targets' only in the base OTs, which do not depend on the sizes.
const ENDEMIC_SIZES: [(u8, u8); 2] = [(3, 4), (0, 2)];

/// A recorded run of `p` over `base` in `case` (the peer's items overlap ours): the party's
/// result, and the frames after the handshake (the seed's after its selector byte) with the
/// names of the messages they were received as.
fn recorded_protocol(
    p: &'static Protocol,
    base: ProtocolBase,
    case: ProtocolCase,
    offset: usize,
) -> (Result<()>, Vec<Vec<u8>>, Vec<&'static str>) {
    let (r, frames, names) = record_named(
        |ch| run_party(p, base, case, ch, OURS_SEED, 0),
        |ch| run_party(p, base, case.flipped(), ch, PEER_SEED, offset),
    );
    // The target queues the handshake itself: the seed is what follows it.
    (
        r,
        frames.get(2..).unwrap_or_default().to_vec(),
        names.get(2..).unwrap_or_default().to_vec(),
    )
}

/// Recorded runs of `p` over `base` for `target`: the party under test in both roles, at the
/// size pairs `sizes`.
fn protocol_seeds(
    target: &'static str,
    p: &'static Protocol,
    base: ProtocolBase,
    sizes: &[(u8, u8)],
) -> Vec<Seed> {
    let mut out = Vec::new();
    for we_receive in [true, false] {
        for &(ours, peer) in sizes {
            let case = ProtocolCase {
                we_receive,
                ours,
                peer,
            };
            let (r, frames, _) = recorded_protocol(p, base, case, usize::from(ours));
            let mut data = vec![case.to_byte()];
            data.extend(join(&frames));
            let role = if we_receive { "receiver" } else { "sender" };
            // A frame longer than the input format holds reaches the target cut: the seed then
            // tests the refusal of a short message (no recorded run has one).
            let cut = frames.iter().any(|f| f.len() > frames::MAX_LEN);
            let name = if cut {
                format!("err-{role}-{ours}-{peer}-frame-cut")
            } else {
                outcome_name(&r, &format!("{role}-{ours}-{peer}"))
            };
            out.push(Seed { target, name, data });
        }
    }
    out
}

/// The seeds of a protocol target over the ideal base OT: [`protocol_seeds`] at
/// [`PROTOCOL_SIZES`], and a run whose peer announced other sizes than the party expects
/// (frames of the wrong size).
fn fuzz_protocol_seeds(p: &'static Protocol) -> Vec<Seed> {
    let mut out = protocol_seeds(p.name, p, ProtocolBase::Fuzz, &PROTOCOL_SIZES);
    let case = ProtocolCase {
        we_receive: true,
        ours: 3,
        peer: 4,
    };
    let (_, frames, _) = recorded_protocol(p, ProtocolBase::Fuzz, case, 1);
    let other = ProtocolCase {
        we_receive: true,
        ours: 4,
        peer: 3,
    };
    let mut data = vec![other.to_byte()];
    data.extend(join(&frames));
    out.push(Seed {
        target: p.name,
        name: "any-receiver-sizes-swapped".to_owned(),
        data,
    });
    out
}

/// An edit of a frame.
type Edit = dyn Fn(&mut Vec<u8>);

/// The seeds of an endemic-OT target: [`protocol_seeds`] at [`ENDEMIC_SIZES`] over the real
/// base OT, and edits of the endemic-OT frame the party receives (the sender's point A, or
/// the receiver's pairs) that it refuses.
fn endemic_protocol_seeds(target: &'static str, p: &'static Protocol) -> Vec<Seed> {
    use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};
    let mut out = protocol_seeds(target, p, ProtocolBase::Real, &ENDEMIC_SIZES);
    for we_receive in [true, false] {
        let case = ProtocolCase {
            we_receive,
            ours: 3,
            peer: 4,
        };
        let (_, frames, names) = recorded_protocol(p, ProtocolBase::Real, case, 3);
        let role = if we_receive { "receiver" } else { "sender" };
        let Some(k) = names
            .iter()
            .position(|&n| n == MSG_ENDEMIC_SENDER_POINT || n == MSG_ENDEMIC_RECEIVER_PAIRS)
        else {
            continue;
        };
        let what = if names[k] == MSG_ENDEMIC_SENDER_POINT {
            "a"
        } else {
            "pairs"
        };
        let mut edits: Vec<(&str, &Edit)> = vec![
            // The first point is no canonical encoding (its top bit set).
            ("not-a-point", &|f| {
                if let Some(b) = f.get_mut(31) {
                    *b |= 0x80;
                }
            }),
            ("cut", &|f| {
                f.pop();
            }),
        ];
        if what == "a" {
            // The identity point (the pairs may hold it: a receiver's key is its own).
            edits.push(("identity", &|f| f.iter_mut().for_each(|b| *b = 0)));
            edits.push(("long", &|f| f.push(0)));
        }
        for (edit_name, edit) in edits {
            let mut frames = frames.clone();
            if let Some(f) = frames.get_mut(k) {
                edit(f);
            }
            let mut data = vec![case.to_byte()];
            data.extend(join(&frames));
            out.push(Seed {
                target,
                name: format!("err-{role}-endemic-{what}-{edit_name}"),
                data,
            });
        }
    }
    out
}

fn base_ot_seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    for mode in BASE_OT_MODES {
        for n in [0usize, 1, 4] {
            let (r, frames) = record(
                |ch| run_base_ot(mode, n, ch, OURS_SEED),
                |ch| run_base_ot_peer(mode, n, ch, PEER_SEED),
            );
            let mut data = vec![base_ot_byte(mode, n)];
            data.extend(join(&frames));
            out.push(Seed {
                target: "base_ot",
                name: outcome_name(&r, &format!("{mode:?}-{n}").to_lowercase()),
                data,
            });
        }
    }
    // The refusals of the endemic OT's decoders: the sender's point A (receiver of 4 OTs) and
    // the receiver's pairs (sender of 4 OTs).
    let recorded = |mode: BaseOtMode| {
        record(
            |ch| run_base_ot(mode, 4, ch, OURS_SEED),
            |ch| run_base_ot_peer(mode, 4, ch, PEER_SEED),
        )
        .1
    };
    let a = recorded(BaseOtMode::EndemicReceiver)
        .first()
        .cloned()
        .unwrap_or_default();
    let pairs = recorded(BaseOtMode::EndemicSender)
        .first()
        .cloned()
        .unwrap_or_default();
    let not_a_point = vec![0xffu8; 32];
    let mut bad_second = pairs.clone();
    if let Some(b) = bad_second.get_mut(64 + 63) {
        // The second pair's r_11 with its top bit set, which no canonical encoding has.
        *b |= 0x80;
    }
    let mut one_more = pairs.clone();
    one_more.extend_from_slice(&pairs[..64.min(pairs.len())]);
    let cases: Vec<(&str, BaseOtMode, Vec<Vec<u8>>)> = vec![
        (
            "err-endemic-a-short",
            BaseOtMode::EndemicReceiver,
            vec![a[..31.min(a.len())].to_vec()],
        ),
        (
            "err-endemic-a-long",
            BaseOtMode::EndemicReceiver,
            vec![[&a[..], &[0u8][..]].concat()],
        ),
        (
            "err-endemic-a-not-a-point",
            BaseOtMode::EndemicReceiver,
            vec![not_a_point.clone()],
        ),
        (
            "err-endemic-a-identity",
            BaseOtMode::EndemicReceiver,
            vec![vec![0; 32]],
        ),
        (
            "err-endemic-a-silent",
            BaseOtMode::EndemicReceiver,
            Vec::new(),
        ),
        (
            "err-endemic-pair-not-a-point",
            BaseOtMode::EndemicSender,
            vec![bad_second],
        ),
        (
            "err-endemic-pairs-first-not-a-point",
            BaseOtMode::EndemicSender,
            vec![[&not_a_point[..], pairs.get(32..).unwrap_or_default()].concat()],
        ),
        (
            "err-endemic-pairs-one-more",
            BaseOtMode::EndemicSender,
            vec![one_more],
        ),
        (
            "err-endemic-pairs-partial",
            BaseOtMode::EndemicSender,
            vec![pairs[..pairs.len().saturating_sub(1)].to_vec()],
        ),
        (
            "err-endemic-pairs-split-point",
            BaseOtMode::EndemicSender,
            vec![
                pairs[..40.min(pairs.len())].to_vec(),
                pairs[40.min(pairs.len())..].to_vec(),
            ],
        ),
        (
            "err-endemic-pairs-silent",
            BaseOtMode::EndemicSender,
            Vec::new(),
        ),
    ];
    for (name, mode, frames) in cases {
        let mut data = vec![base_ot_byte(mode, 4)];
        data.extend(join(&frames));
        out.push(Seed {
            target: "base_ot",
            name: name.to_owned(),
            data,
        });
    }
    out
}

fn ot_ext_seeds() -> Vec<Seed> {
    use OtExtMode::*;
    let cases = [
        (IknpSender, 0, [5, 3]),
        (IknpSender, 0, [130, 0]),
        (IknpCorrelated, 0, [5, 3]),
        (IknpChosen, 0, [7, 1]),
        (KosSender, 0, [5, 3]),
        (KosReceiver, 0, [5, 3]),
        (Kk13Sender, 1, [5, 3]),
        (Kk13Sender, 8, [9, 0]),
        (KkrtSender, 1, [5, 3]),
        (KkrtSender, 4, [3, 1]),
        (OosSender, 0, [5, 3]),
        (OosReceiver, 0, [5, 3]),
        (OosSenderReverse, 0, [5, 3]),
        (OosSenderReverse, 0, [200, 0]),
        (OosReceiverReverse, 0, [7, 1]),
    ];
    let mut out = Vec::new();
    for (mode, param, batches) in cases {
        let case = OtExtCase {
            mode,
            param,
            batches,
        };
        let (r, frames) = record(
            |ch| run_ot_ext(case, ch, OURS_SEED),
            |ch| run_ot_ext_peer(case, ch, PEER_SEED),
        );
        let mut data = case.to_bytes().to_vec();
        data.extend(join(&frames));
        let name = format!("{mode:?}-{param}-{}-{}", batches[0], batches[1]).to_lowercase();
        out.push(Seed {
            target: "ot_ext",
            name: outcome_name(&r, &name),
            data,
        });
    }
    out.extend(oos_refusals());
    out
}

/// Edits of recorded OOS16 runs on given base OTs that the party under test refuses: the
/// sender's u columns and proof, the receiver's challenge seed.
fn oos_refusals() -> Vec<Seed> {
    let sender = OtExtCase {
        mode: OtExtMode::OosSenderReverse,
        param: 0,
        batches: [5, 3],
    };
    let receiver = OtExtCase {
        mode: OtExtMode::OosReceiverReverse,
        ..sender
    };
    let recorded = |case: OtExtCase| {
        record(
            |ch| run_ot_ext(case, ch, OURS_SEED),
            |ch| run_ot_ext_peer(case, ch, PEER_SEED),
        )
        .1
    };
    // The sender receives u columns, proof, u columns, proof; the receiver two challenges.
    let s = recorded(sender);
    let r = recorded(receiver);
    let edit = |frames: &[Vec<u8>], k: usize, f: &dyn Fn(&mut Vec<u8>)| {
        let mut frames = frames.to_vec();
        if let Some(frame) = frames.get_mut(k) {
            f(frame);
        }
        frames
    };
    let cases: Vec<(&str, OtExtCase, Vec<Vec<u8>>)> = vec![
        (
            "err-oos-u-short",
            sender,
            edit(&s, 0, &|f| {
                f.pop();
            }),
        ),
        (
            "err-oos-u-long",
            sender,
            edit(&s, 0, &|f| f.extend_from_slice(&[0; 16])),
        ),
        // Row 0 of column 1, a column the sender's s selects (s_j = j % 3 == 1).
        (
            "err-oos-u-flipped",
            sender,
            edit(&s, 0, &|f| {
                let k = f.len() / 512;
                f[k] ^= 1;
            }),
        ),
        (
            "err-oos-proof-flipped",
            sender,
            edit(&s, 1, &|f| f[3] ^= 0x10),
        ),
        (
            "err-oos-proof-w-high-bits",
            sender,
            edit(&s, 1, &|f| {
                let last = f.len() - 1;
                f[last] ^= 0x80;
            }),
        ),
        (
            "err-oos-proof-short",
            sender,
            edit(&s, 1, &|f| {
                f.pop();
            }),
        ),
        (
            "err-oos-second-proof-flipped",
            sender,
            edit(&s, 3, &|f| f[0] ^= 1),
        ),
        ("err-oos-no-proof", sender, s[..1].to_vec()),
        (
            "err-oos-challenge-short",
            receiver,
            edit(&r, 0, &|f| {
                f.pop();
            }),
        ),
        (
            "err-oos-challenge-long",
            receiver,
            edit(&r, 0, &|f| f.push(0)),
        ),
        ("err-oos-no-challenge", receiver, Vec::new()),
    ];
    cases
        .into_iter()
        .map(|(name, case, frames)| {
            let mut data = case.to_bytes().to_vec();
            data.extend(join(&frames));
            Seed {
                target: "ot_ext",
                name: name.to_owned(),
                data,
            }
        })
        .collect()
}

fn hello_seeds() -> Vec<Seed> {
    let ours = hello_ours();
    let hello = |name: &str, edit: &dyn Fn(&mut blindjoin_core::handshake::SessionConfig)| {
        let mut peer = hello_peer();
        edit(&mut peer);
        let data = peer_handshake(&ours, &peer)
            .into_iter()
            .next()
            .unwrap_or_default();
        Seed {
            target: "hello",
            name: name.to_owned(),
            data,
        }
    };
    let mut out = vec![
        hello("ok-valid", &|_| {}),
        hello("err-protocol", &|c| c.protocol = "ecdh".to_owned()),
        hello("err-role", &|c| c.role = Role::Receiver),
        hello("err-kappa", &|c| c.kappa = 256),
        hello("err-lambda", &|c| c.lambda = 41),
        hello("err-param-value", &|c| c.params[1].1 = "three".to_owned()),
        hello("err-param-missing", &|c| {
            c.params.pop();
        }),
        hello("err-param-escapes", &|c| {
            c.params
                .push(("gamma\u{1b}[31m".to_owned(), "x\u{202e}\n".repeat(40)));
        }),
        hello("err-param-twice", &|c| c.params.push(c.params[0].clone())),
        hello("err-set-size", &|c| c.set_size = 1001),
        hello("err-set-size-max", &|c| c.set_size = u64::MAX),
    ];
    let valid = out[0].data.clone();
    let mut version = valid.clone();
    if let Some(v) = version.get_mut(MAGIC.len()) {
        // Another wire version than ours.
        *v = blindjoin_core::handshake::WIRE_VERSION.wrapping_add(1) as u8;
    }
    let mut trailing = valid.clone();
    trailing.push(0);
    let truncated = valid[..valid.len() / 2].to_vec();
    for (name, data) in [
        ("err-version", version),
        ("err-trailing", trailing),
        ("err-truncated", truncated),
        ("err-not-blindjoin", b"GET / HTTP/1.1\r\n\r\n".to_vec()),
        ("err-empty", Vec::new()),
    ] {
        out.push(Seed {
            target: "hello",
            name: name.to_owned(),
            data,
        });
    }
    out
}

fn verdict_seeds() -> Vec<Seed> {
    let go = peer_handshake(&hello_ours(), &hello_peer());
    let mut strict = hello_peer();
    strict.max_peer_set_size = 2;
    let refusal = peer_handshake(&hello_ours(), &strict);
    // postcard's Some(String): 1, the length as a varint (one byte below 128), the bytes.
    let reason = "\u{1b}[2J2026-11-23 ok: \u{202e}fake line\r\n".as_bytes();
    // The verdict is { refusal: Option<String>, confirm: [u8; 32] }.
    let mut escapes = vec![1, reason.len() as u8];
    escapes.extend_from_slice(reason);
    escapes.extend_from_slice(&[0; 32]);
    let mut long = vec![1, 0x90, 0x03];
    long.extend(std::iter::repeat_n(b'x', 400));
    long.extend_from_slice(&[0; 32]);
    [
        ("ok-go", go.get(1).cloned().unwrap_or_default()),
        ("err-refusal", refusal.get(1).cloned().unwrap_or_default()),
        ("err-escapes", escapes),
        ("err-long", long),
        ("err-trailing", vec![0, 0]),
        ("err-not-utf8", vec![1, 2, 0xff, 0xfe]),
        ("err-empty", Vec::new()),
    ]
    .into_iter()
    .map(|(name, data)| Seed {
        target: "verdict",
        name: name.to_owned(),
        data,
    })
    .collect()
}

fn input_seeds() -> Vec<Seed> {
    // Selector: normalisation `b % 6` (none, trim, nfc, lower, email, phone), country code 44
    // if `(b / 6) % 2 == 1`, CSV column `(b / 12) % 4` (email, " email ", id, missing), or the
    // composite key `id,email` from 240.
    let csv: [(&str, u8, &[u8]); 12] = [
        (
            "ok-email",
            4,
            b"id,name,email\n1,\"Kowalski, Anna\",Anna@X.org\n2,\"multi\nline\",\"bob@y.org\"\n3,,\n4,x, ANNA@x.org \n",
        ),
        (
            "ok-bom-crlf-padded",
            4 + 12,
            b"\xEF\xBB\xBF id , email \r\n1,A@x\r\n\r\n2,\"b\"\"q\"\"@y\"\r\n",
        ),
        (
            "ok-phone-cc",
            5 + 6 + 24,
            b"id,name\n+44 20 7946 0958,a\n020 7946 0958,b\n(555) 123-4567,c\n0044 20,d\n",
        ),
        (
            "ok-nfc",
            2,
            "email\nJos\u{e9}\nJose\u{301}\n\u{212b}\n".as_bytes(),
        ),
        ("err-not-utf8", 3, b"email\nAB\xc0C\n\xff\xfe\n"),
        (
            "ok-composite",
            240 + 3,
            b"id,email\n1,A@x\n 1 ,a@X\n2,\n\"3,\",\"4\"\n",
        ),
        ("err-composite-unequal", 240, b"id,email\n1,a\n2,b,c\n"),
        ("ok-header-only", 0, b"id,email\n"),
        ("err-empty", 0, b""),
        ("err-unequal", 0, b"id,email\n1,a\n2\n"),
        ("err-open-quote", 0, b"id,email\n1,\"a\n2,b\n"),
        ("err-missing-column", 36, b"id,email\n1,a\n"),
    ];
    let lines: [(&str, u8, &[u8]); 5] = [
        ("ok-crlf-empty", 0, b"a\r\nb\r\n\r\na\n\nc"),
        (
            "ok-trim-unicode",
            1,
            " \u{a0}Zo\u{eb}\u{3000}\n\t\n".as_bytes(),
        ),
        (
            "ok-email-nfc",
            4,
            "Jose\u{301}@X.org\nJOS\u{c9}@x.org\n".as_bytes(),
        ),
        (
            "ok-phone",
            5,
            b"+1 (555) 123-4567\n0044 20 7946 0958\n12\n+44x\n",
        ),
        ("ok-bom-only", 0, b"\xEF\xBB\xBF"),
    ];
    let mut out = Vec::new();
    for (target, seeds) in [("csv", &csv[..]), ("lines", &lines[..])] {
        for (name, sel, content) in seeds {
            let mut data = vec![*sel];
            data.extend_from_slice(content);
            out.push(Seed {
                target,
                name: (*name).to_owned(),
                data,
            });
        }
    }
    out
}

/// Every seed of every target (protocols of the registry without a target of their own have
/// none). The protocol, base-OT and OT-extension seeds are recorded from
/// real runs (over the ideal base OT with the `ideal-base-ot` feature).
pub fn generate() -> Vec<Seed> {
    let mut out = hello_seeds();
    out.extend(verdict_seeds());
    for p in ALL.iter().filter(|p| crate::target(p.name).is_some()) {
        out.extend(fuzz_protocol_seeds(p));
    }
    for (target, p) in ENDEMIC_TARGETS {
        out.extend(endemic_protocol_seeds(target, p));
    }
    out.extend(base_ot_seeds());
    out.extend(ot_ext_seeds());
    out.extend(input_seeds());
    out.extend(link_seeds());
    out.extend(finish_seeds());
    out.extend(aided_server_seeds());
    out.extend(aided_client_seeds());
    out.extend(aided_key_seeds());
    out.extend(crate::bucketed::seeds());
    out.extend(crate::rundir::seeds());
    out
}

fn link_seeds() -> Vec<Seed> {
    use blindjoin_core::transport::LINK_HELLO;
    let mut other = LINK_HELLO.to_vec();
    if let Some(last) = other.last_mut() {
        *last = b'9';
    }
    [
        ("ok-hello", LINK_HELLO.to_vec()),
        ("err-version", other),
        ("err-http", b"GET / HTTP/1.1\r\n".to_vec()),
        ("err-empty", Vec::new()),
    ]
    .into_iter()
    .map(|(name, data)| Seed {
        target: "link",
        name: name.to_owned(),
        data,
    })
    .collect()
}

fn finish_seeds() -> Vec<Seed> {
    use blindjoin_core::channel::transcript::Transcript;
    use blindjoin_core::finish::{confirmation_frame, final_verdict_frame};
    // The digests of a run in which nothing else was exchanged, as the party under test
    // computes them.
    let (fresh, _keep) = memory_pair(Duration::from_secs(1));
    let none = Transcript::new(fresh).digests();
    let conf = |f: Option<&str>| confirmation_frame(none, f).unwrap_or_default();
    let fin = |f: Option<&str>| final_verdict_frame(f).unwrap_or_default();
    let mut wrong = none;
    wrong.sent[0] ^= 1;
    let bad = confirmation_frame(wrong, None).unwrap_or_default();
    let seed = |name: &str, sel: u8, frames: &[Vec<u8>]| {
        let mut data = vec![sel];
        data.extend(join(frames));
        Seed {
            target: "finish",
            name: name.to_owned(),
            data,
        }
    };
    vec![
        seed("ok-sender", 0, &[conf(None), fin(None)]),
        seed("err-sender-receiver-failed", 0, &[conf(Some("disk full"))]),
        seed(
            "err-sender-final-failure",
            0,
            &[conf(None), fin(Some("disk full"))],
        ),
        seed("err-sender-digests", 0, &[bad.clone(), fin(None)]),
        seed("err-sender-extra", 0, &[conf(None), fin(None), fin(None)]),
        seed("ok-receiver", 1, &[conf(None)]),
        seed("err-receiver-digests", 1, &[bad]),
        seed("err-receiver-extra", 1, &[conf(None), conf(None)]),
        seed("err-receiver-silent", 1, &[]),
    ]
}

// ---------------------------------------------------------------------------------------------
// Server-aided PSI

/// The frame that `send` puts on the wire (empty if it fails).
fn frame_of(send: impl FnOnce(&mut MemoryChannel) -> Result<()>) -> Vec<u8> {
    let (mut a, mut b) = memory_pair(Duration::from_secs(1));
    if send(&mut a).is_err() {
        return Vec::new();
    }
    b.recv("a seed's frame", MAX_FRAME_LEN).unwrap_or_default()
}

/// `frame` decoded by `recv`.
fn decoded<T>(frame: &[u8], recv: impl FnOnce(&mut MemoryChannel) -> Result<T>) -> Option<T> {
    let (mut a, mut b) = memory_pair(Duration::from_secs(1));
    b.send("a seed's frame", frame).ok()?;
    recv(&mut a).ok()
}

fn status(s: &Status) -> Vec<u8> {
    frame_of(|ch| send_status(ch, s))
}

fn aided_seed(target: &'static str, name: &str, sel: u8, frames: &[Vec<u8>]) -> Seed {
    let mut data = vec![sel];
    data.extend(join(frames));
    Seed {
        target,
        name: name.to_owned(),
        data,
    }
}

/// `enc(msg, v)`: the frame of `v` as `send_msg` encodes it.
fn enc<T: serde::Serialize>(msg: &'static str, v: &T) -> Vec<u8> {
    frame_of(|ch| send_msg(ch, msg, v))
}

/// `frames` with frame `k` replaced by what `edit` makes of it.
fn edited(frames: &[Vec<u8>], k: usize, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<Vec<u8>> {
    let mut frames = frames.to_vec();
    if let Some(f) = frames.get_mut(k) {
        edit(f);
    }
    frames
}

/// `frames` with frame `k` decoded as `T` by `recv`, changed by `edit` and encoded again as
/// `msg` (unchanged if it does not decode).
fn edited_msg<T: serde::Serialize>(
    frames: &[Vec<u8>],
    k: usize,
    msg: &'static str,
    recv: impl FnOnce(&mut MemoryChannel) -> Result<T>,
    edit: impl FnOnce(&mut T),
) -> Vec<Vec<u8>> {
    edited(frames, k, |f| {
        if let Some(mut v) = decoded(f, recv) {
            edit(&mut v);
            *f = enc(msg, &v);
        }
    })
}

/// `frames` without frames `k..`.
fn first(frames: &[Vec<u8>], k: usize) -> Vec<Vec<u8>> {
    frames[..k.min(frames.len())].to_vec()
}

/// `frames` followed by `more`.
fn then(frames: &[Vec<u8>], more: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = frames.to_vec();
    out.extend_from_slice(more);
    out
}

/// A frame of labels (or values) of `len` bytes with the first two swapped, so no longer in
/// ascending order.
fn swap_first_two(f: &mut [u8], len: usize) {
    if f.len() >= 2 * len {
        let (a, b) = f.split_at_mut(len);
        a.swap_with_slice(&mut b[..len]);
    }
}

/// Sets the first clear bit and clears the first set bit of a bit vector over `n` labels: as
/// many bits set, another vector.
fn swap_bits(bits: &mut [u8], n: usize) {
    let bit = |bits: &[u8], k: usize| bits.get(k / 8).is_some_and(|b| b >> (k % 8) & 1 == 1);
    let set = (0..n).find(|&k| bit(bits, k));
    let clear = (0..n).find(|&k| !bit(bits, k));
    if let (Some(a), Some(b)) = (set, clear) {
        for k in [a, b] {
            if let Some(byte) = bits.get_mut(k / 8) {
                *byte ^= 1 << (k % 8);
            }
        }
    }
}

/// `aided_server`: what each client sent the server in the recorded runs, and edits that the
/// server refuses: of `kmrs_semi`'s P2 of 2 (selector 0; the submit hello's own fields, the
/// label count against the announced sizes, the labels, the receipt), of `kmrs_mal`'s P2 of 2
/// and P3 of 3 (its parameters; the certificates of an authenticated run), of `kmrs_fair`'s
/// P2 (its opening and first-layer values) and of `kmrs_size`'s P2 and P1 (the coin toss's
/// share, the verdict, the labels).
fn aided_server_seeds() -> Vec<Seed> {
    let t = "aided_server";
    let mut out = Vec::new();
    for (sel, c) in SERVER_CASES.iter().enumerate() {
        let (c, name) = match c {
            Some(c) => (
                *c,
                format!("ok-{}-p{}-of-{}", c.kmrs.short(), c.party, c.parties),
            ),
            // Alone, the client waits for the other party until the run timeout.
            None => (
                AidedCase {
                    kmrs: Kmrs::Semi,
                    party: 1,
                    parties: 2,
                },
                "err-alone".to_owned(),
            ),
        };
        out.push(aided_seed(
            t,
            &name,
            sel as u8,
            recording_of(c).sent_to_server(c.party),
        ));
    }
    let at = |kmrs: Kmrs, party: u32, parties: u32| {
        let c = AidedCase {
            kmrs,
            party,
            parties,
        };
        (
            server_selector(Some(c)),
            recording_of(c).sent_to_server(party).to_vec(),
        )
    };
    let submit_edit = |frames: &[Vec<u8>], edit: &dyn Fn(&mut Submit)| {
        edited_msg(
            frames,
            0,
            MSG_SUBMIT,
            |ch| recv_msg::<Submit>(ch, MSG_SUBMIT, MAX_SUBMIT_LEN),
            |s| edit(s),
        )
    };
    let mut cases: Vec<(&str, u8, Vec<Vec<u8>>)> = Vec::new();

    // kmrs_semi, P2 of 2: submit, labels, receipt.
    let (sel, p2) = at(Kmrs::Semi, 2, 2);
    let len = p2
        .first()
        .and_then(|f| decode_submit(f))
        .map_or(1, |s| s.label_len as usize);
    let labels = p2.get(1).cloned().unwrap_or_default();
    let with_labels = |labels: Vec<u8>| then(&p2[..1], &[labels, Vec::new()]);
    let mut repeated = labels.clone();
    if repeated.len() >= 2 * len {
        repeated.copy_within(0..len, len);
    }
    let mut longer = labels.clone();
    longer.extend_from_slice(&labels[labels.len().saturating_sub(len)..]);
    let mut shorter = labels.clone();
    shorter.pop();
    let semi: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("err-slot-taken", at(Kmrs::Semi, 1, 2).1),
        ("err-descending", edited(&p2, 1, |f| swap_first_two(f, len))),
        ("err-repeated", with_labels(repeated)),
        ("err-too-many-labels", with_labels(longer)),
        ("err-partial-label", with_labels(shorter)),
        ("err-receipt-not-empty", edited(&p2, 2, |f| f.push(0))),
        ("err-no-receipt", first(&p2, 2)),
        ("err-no-labels", first(&p2, 1)),
        (
            "err-count-0",
            then(&submit_edit(&p2[..1], &|s| s.count = 0), &[Vec::new()]),
        ),
        ("err-version", submit_edit(&p2, &|s| s.version += 1)),
        (
            "err-protocol",
            submit_edit(&p2, &|s| s.protocol = "ecdh".to_owned()),
        ),
        ("err-parties", submit_edit(&p2, &|s| s.parties = 3)),
        ("err-party-0", submit_edit(&p2, &|s| s.party = 0)),
        ("err-label-len", submit_edit(&p2, &|s| s.label_len = 17)),
        (
            "err-param",
            submit_edit(&p2, &|s| s.params.push(("x".into(), "1".into()))),
        ),
        (
            "err-run-id-space",
            submit_edit(&p2, &|s| s.run = "fuzz 2".to_owned()),
        ),
        // Another run: alone there, the client waits for its other party until the timeout.
        (
            "err-other-run",
            submit_edit(&p2, &|s| s.run = "fuzz-x".to_owned()),
        ),
        // The same run id with another size for P1: a run of its own (the server keys runs by
        // every announced size), where it waits alone until the timeout.
        (
            "err-other-sizes",
            submit_edit(&p2, &|s| {
                if let Some(x) = s.sizes.first_mut() {
                    *x += 1;
                }
            }),
        ),
        ("err-max-labels", submit_edit(&p2, &|s| s.count = u64::MAX)),
        // More labels than its announced size makes.
        (
            "err-count-above-size",
            submit_edit(&p2, &|s| {
                if let Some(x) = s.sizes.get_mut(1) {
                    *x -= 1;
                }
            }),
        ),
        ("err-sizes-three", submit_edit(&p2, &|s| s.sizes.push(5))),
        ("err-sizes-none", submit_edit(&p2, &|s| s.sizes.clear())),
        (
            "err-identities-one",
            submit_edit(&p2, &|s| s.identities = vec![[1; 32]]),
        ),
        (
            "err-identities-twice",
            submit_edit(&p2, &|s| s.identities = vec![[1; 32], [1; 32]]),
        ),
        (
            "err-submit-garbage",
            vec![b"GET / HTTP/1.1\r\n\r\n".to_vec()],
        ),
        ("err-silent", Vec::new()),
    ];
    cases.extend(semi.into_iter().map(|(n, f)| (n, sel, f)));

    // kmrs_mal, P2 of 2: submit, labels, receipt.
    let (sel, p2) = at(Kmrs::Mal, 2, 2);
    let param = |name: &'static str, value: &'static str| {
        move |s: &mut Submit| {
            for (k, v) in &mut s.params {
                if k == name {
                    *v = value.to_owned();
                }
            }
        }
    };
    let mal: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("err-mal-count", submit_edit(&p2, &|s| s.count += 1)),
        ("err-mal-copies", submit_edit(&p2, &param("copies", "3"))),
        (
            "err-mal-copies-huge",
            submit_edit(&p2, &param("copies", "99999999999")),
        ),
        (
            "err-mal-dummies-garbage",
            submit_edit(&p2, &param("dummies", "x")),
        ),
        (
            "err-mal-dummies-overflow",
            submit_edit(&p2, &param("dummies", "18446744073709551615")),
        ),
        (
            "err-mal-no-copies",
            submit_edit(&p2, &|s| s.params.retain(|(k, _)| k != "copies")),
        ),
        ("err-mal-descending", {
            let len = p2
                .first()
                .and_then(|f| decode_submit(f))
                .map_or(1, |s| s.label_len as usize);
            edited(&p2, 1, |f| swap_first_two(f, len))
        }),
    ];
    cases.extend(mal.into_iter().map(|(n, f)| (n, sel, f)));

    // kmrs_mal, P3 of 3, authenticated: its connection reports P3's certificate.
    let (sel, p3) = at(Kmrs::Mal, 3, 3);
    let auth: Vec<(&str, Vec<Vec<u8>>)> = vec![
        (
            "err-identity-bound-other",
            submit_edit(&p3, &|s| {
                if let Some(id) = s.identities.get_mut(2) {
                    *id = [9; 32];
                }
            }),
        ),
        (
            "err-identity-unbound",
            submit_edit(&p3, &|s| s.identities.clear()),
        ),
        (
            "err-identity-twice",
            submit_edit(&p3, &|s| {
                if s.identities.len() == 3 {
                    s.identities[1] = s.identities[0];
                }
            }),
        ),
        ("err-identity-party-2", submit_edit(&p3, &|s| s.party = 2)),
    ];
    cases.extend(auth.into_iter().map(|(n, f)| (n, sel, f)));

    // kmrs_fair, P2: submit, labels, opening, first-layer values, receipt.
    let (sel, p2) = at(Kmrs::Fair, 2, 2);
    let open_edit = |edit: &dyn Fn(&mut FairOpen)| {
        edited_msg(
            &p2,
            2,
            MSG_FAIR_OPEN,
            |ch| recv_msg::<FairOpen>(ch, MSG_FAIR_OPEN, 64),
            |o| edit(o),
        )
    };
    let fair: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("err-fair-open-items", open_edit(&|o| o.items += 1)),
        (
            "err-fair-open-items-max",
            open_edit(&|o| o.items = u64::MAX),
        ),
        ("err-fair-key2", open_edit(&|o| o.key2[0] ^= 1)),
        (
            "err-fair-open-garbage",
            edited(&p2, 2, |f| *f = vec![0xff; 10]),
        ),
        ("err-fair-open-trailing", edited(&p2, 2, |f| f.push(0))),
        (
            "err-fair-values-descending",
            edited(&p2, 3, |f| swap_first_two(f, 16)),
        ),
        (
            "err-fair-values-short",
            edited(&p2, 3, |f| {
                f.pop();
            }),
        ),
        (
            "err-fair-values-long",
            edited(&p2, 3, |f| f.extend_from_slice(&[0xff; 16])),
        ),
        // The last value made larger: still ascending, but not the values the labels came from.
        (
            "err-fair-values-changed",
            edited(&p2, 3, |f| {
                if let Some(b) = f.last_mut() {
                    *b = b.wrapping_add(1).max(1);
                }
            }),
        ),
        ("err-fair-no-values", first(&p2, 3)),
        ("err-fair-no-opening", first(&p2, 2)),
        ("err-fair-no-receipt", first(&p2, 4)),
    ];
    cases.extend(fair.into_iter().map(|(n, f)| (n, sel, f)));

    // kmrs_size, P2: submit, share, verdict.
    let (sel, p2) = at(Kmrs::Size, 2, 2);
    let share_edit = |edit: &dyn Fn(&mut ShareMsg)| {
        edited_msg(
            &p2,
            1,
            MSG_SHARE,
            |ch| recv_msg::<ShareMsg>(ch, MSG_SHARE, 64),
            |m| edit(m),
        )
    };
    let abort = Verdict::Abort("\u{1b}[2Jthe result did not check\r\n".to_owned());
    let size2: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("err-size-share-party-1", share_edit(&|m| m.party = 1)),
        (
            "err-size-share-garbage",
            edited(&p2, 1, |f| *f = vec![0xff; 5]),
        ),
        (
            "err-size-verdict-abort",
            edited(&p2, 2, |f| *f = enc(MSG_VERDICT, &abort)),
        ),
        (
            "err-size-verdict-garbage",
            edited(&p2, 2, |f| *f = vec![7; 3]),
        ),
        ("err-size-no-verdict", first(&p2, 2)),
        // Alone in a run of its own (another run id), P2 approves before any party 1 joined:
        // refused, and the run forgotten (it was once kept for the server's life).
        (
            "err-size-approval-alone",
            submit_edit(&p2, &|s| s.run = "fuzz-size-x".to_owned()),
        ),
        ("err-size-no-share", first(&p2, 1)),
        ("err-size-p2-labels", submit_edit(&p2, &|s| s.count = 1)),
    ];
    cases.extend(size2.into_iter().map(|(n, f)| (n, sel, f)));

    // kmrs_size, P1: submit, labels, receipt.
    let (sel, p1) = at(Kmrs::Size, 1, 2);
    let len = p1
        .first()
        .and_then(|f| decode_submit(f))
        .map_or(1, |s| s.label_len as usize);
    let size1: Vec<(&str, Vec<Vec<u8>>)> = vec![
        (
            "err-size-descending",
            edited(&p1, 1, |f| swap_first_two(f, len)),
        ),
        (
            "err-size-partial-label",
            edited(&p1, 1, |f| {
                f.pop();
            }),
        ),
        ("err-size-no-receipt", first(&p1, 2)),
    ];
    cases.extend(size1.into_iter().map(|(n, f)| (n, sel, f)));

    for (name, sel, frames) in cases {
        out.push(aided_seed(t, name, sel, &frames));
    }
    out
}

/// `aided_client`: what each client received from the server in the recorded runs, and edits
/// that it refuses: of `kmrs_semi`'s P2 of 2 (selector 0; statuses and bit vector), of
/// `kmrs_mal`'s P2 of 2 (a cheating server's bit vector), of `kmrs_fair`'s P2 (the commitment
/// and its opening) and of `kmrs_size`'s P2 (the server's key share) and P1 (the relabelled
/// labels and π3).
fn aided_client_seeds() -> Vec<Seed> {
    let t = "aided_client";
    let mut out = Vec::new();
    for (sel, c) in CLIENT_CASES.iter().enumerate() {
        out.push(aided_seed(
            t,
            &format!("ok-{}-p{}-of-{}", c.kmrs.short(), c.party, c.parties),
            sel as u8,
            recording_of(*c).received_from_server(c.party),
        ));
    }
    let at = |kmrs: Kmrs, party: u32, parties: u32| {
        let c = AidedCase {
            kmrs,
            party,
            parties,
        };
        (
            client_selector(c),
            recording_of(c).received_from_server(party).to_vec(),
        )
    };
    let accepted = status(&Status::Accepted);
    let result = |m: u64| status(&Status::Result { matches: m });
    let mut cases: Vec<(&str, u8, Vec<Vec<u8>>)> = Vec::new();

    // kmrs_semi, P2 of 2: Accepted, Result { matches }, the bit vector.
    let (sel, got) = at(Kmrs::Semi, 2, 2);
    if let Some(Status::Result { matches }) = got.get(1).and_then(|f| decoded(f, recv_status)) {
        let bits: Vec<Vec<u8>> = got[2..].to_vec();
        let mut past_end = bits.clone();
        if let Some(b) = past_end.last_mut().and_then(|f| f.last_mut()) {
            // 21 labels: bits 5 to 7 of the last byte are past the end.
            *b |= 0x80;
        }
        let mut longer = bits.clone();
        if let Some(f) = longer.last_mut() {
            f.push(0);
        }
        let semi: Vec<(&str, Vec<Vec<u8>>)> = vec![
            (
                "ok-waiting",
                then(
                    &[
                        accepted.clone(),
                        status(&Status::Waiting { joined: 0 }),
                        status(&Status::Waiting { joined: 1 }),
                        result(matches),
                    ],
                    &bits,
                ),
            ),
            (
                "err-refused",
                vec![status(&Status::Refused(
                    "party 2 of run fuzz-2 has already joined".to_owned(),
                ))],
            ),
            (
                "err-refused-escapes",
                vec![
                    accepted.clone(),
                    status(&Status::Refused(
                        "\u{1b}[2J2026-11-24 ok: \u{202e}fake line\r\n".to_owned(),
                    )),
                ],
            ),
            ("err-result-first", then(&[result(matches)], &bits)),
            (
                "err-waiting-first",
                vec![status(&Status::Waiting { joined: 1 })],
            ),
            (
                "err-accepted-twice",
                vec![accepted.clone(), accepted.clone()],
            ),
            (
                "err-matches",
                then(&[accepted.clone(), result(matches + 1)], &bits),
            ),
            (
                "err-bits-past-end",
                then(&[accepted.clone(), result(matches + 1)], &past_end),
            ),
            (
                "err-bits-long",
                then(&[accepted.clone(), result(matches)], &longer),
            ),
            ("err-no-bits", vec![accepted.clone(), result(matches)]),
            (
                "err-empty-bits-frame",
                vec![accepted.clone(), result(0), Vec::new()],
            ),
            (
                "err-committed-in-semi",
                vec![accepted.clone(), status(&Status::Committed([1; 32]))],
            ),
            ("err-status-garbage", vec![accepted.clone(), vec![0xff; 12]]),
            ("err-silent", Vec::new()),
        ];
        cases.extend(semi.into_iter().map(|(n, f)| (n, sel, f)));
    }

    // kmrs_mal, P2 of 2: Accepted, Result { matches }, the bit vector.
    let (sel, got) = at(Kmrs::Mal, 2, 2);
    if let Some(bits) = got.get(2) {
        let n = bits.len();
        let all: u64 = bits.iter().map(|b| u64::from(b.count_ones())).sum();
        // 2·21 copies and 2·4 dummies: 50 labels, bits 2 to 7 of the last byte past the end.
        let mut every = vec![0xffu8; n];
        if let Some(last) = every.last_mut() {
            *last = 0x03;
        }
        let ones: u64 = every.iter().map(|b| u64::from(b.count_ones())).sum();
        let mut one_less = bits.clone();
        if let Some(b) = one_less.iter_mut().find(|b| **b != 0) {
            *b &= *b - 1;
        }
        let mal: Vec<(&str, Vec<Vec<u8>>)> = vec![
            // Nothing marked: D0 missing.
            (
                "err-mal-cheated-nothing",
                vec![accepted.clone(), result(0), vec![0; n]],
            ),
            // Everything marked: P2's own dummy set marked.
            (
                "err-mal-cheated-everything",
                vec![accepted.clone(), result(ones), every],
            ),
            // One marked label dropped: a D0 label or one copy of an element.
            (
                "err-mal-cheated-one-less",
                vec![accepted.clone(), result(all - 1), one_less],
            ),
        ];
        cases.extend(mal.into_iter().map(|(n, f)| (n, sel, f)));
    }

    // kmrs_fair, P2: Accepted, Committed(c), Result { matches }, the bit vector, the nonce.
    let (sel, got) = at(Kmrs::Fair, 2, 2);
    let committed = got.get(1).cloned().unwrap_or_default();
    let fair: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("err-fair-nonce-flipped", edited(&got, 4, |f| f[0] ^= 1)),
        (
            "err-fair-nonce-short",
            edited(&got, 4, |f| {
                f.pop();
            }),
        ),
        ("err-fair-nonce-long", edited(&got, 4, |f| f.push(0))),
        ("err-fair-no-nonce", first(&got, 4)),
        (
            "err-fair-commitment-flipped",
            edited_msg(&got, 1, MSG_STATUS, recv_status, |s| {
                if let Status::Committed(c) = s {
                    c[5] ^= 1;
                }
            }),
        ),
        (
            "err-fair-not-committed",
            then(&got[..1], got.get(2..).unwrap_or_default()),
        ),
        ("err-fair-committed-twice", {
            let mut f = got.clone();
            f.insert(2, committed);
            f
        }),
        // Another bit vector with as many bits set: not the committed one.
        (
            "err-fair-bits-swapped",
            edited(&got, 3, |f| swap_bits(f, 2 * 21 + 2 * 4)),
        ),
    ];
    cases.extend(fair.into_iter().map(|(n, f)| (n, sel, f)));

    // kmrs_size, P2: Accepted, Committed(commitment to r_S), r_S.
    let (sel, got) = at(Kmrs::Size, 2, 2);
    let size2: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("err-size-share-flipped", edited(&got, 2, |f| f[3] ^= 1)),
        (
            "err-size-share-short",
            edited(&got, 2, |f| {
                f.pop();
            }),
        ),
        ("err-size-no-share", first(&got, 2)),
        (
            "err-size-not-committed",
            then(&got[..1], got.get(2..).unwrap_or_default()),
        ),
        (
            "err-size-relabelled-to-p2",
            vec![accepted.clone(), status(&Status::Relabelled)],
        ),
    ];
    cases.extend(size2.into_iter().map(|(n, f)| (n, sel, f)));

    // kmrs_size, P1: Accepted, Relabelled, T′1, Opened, π3.
    let (sel, got) = at(Kmrs::Size, 1, 2);
    let relabelled_at = 2;
    let perm_at = got.len().saturating_sub(1);
    let label_len = got
        .get(relabelled_at)
        .map_or(1, |f| f.len() / (2 * 13 + 2 * 4));
    let index = |f: &mut Vec<u8>, k: usize, v: u32| {
        if let Some(slot) = f.get_mut(4 * k..4 * k + 4) {
            slot.copy_from_slice(&v.to_le_bytes());
        }
    };
    let size1: Vec<(&str, Vec<Vec<u8>>)> = vec![
        (
            "err-size-relabelled-descending",
            edited(&got, relabelled_at, |f| swap_first_two(f, label_len)),
        ),
        (
            "err-size-relabelled-short",
            edited(&got, relabelled_at, |f| f.truncate(f.len() - label_len)),
        ),
        (
            "err-size-perm-out-of-range",
            edited(&got, perm_at, |f| {
                let n = (f.len() / 4) as u32;
                index(f, 0, n);
            }),
        ),
        (
            "err-size-perm-repeated",
            edited(&got, perm_at, |f| {
                let first = u32::from_le_bytes([f[0], f[1], f[2], f[3]]);
                index(f, 1, first);
            }),
        ),
        (
            "err-size-perm-short",
            edited(&got, perm_at, |f| f.truncate(f.len() - 4)),
        ),
        (
            "err-size-perm-partial",
            edited(&got, perm_at, |f| {
                f.pop();
            }),
        ),
        ("err-size-no-perm", first(&got, perm_at)),
        (
            "err-size-refused",
            then(
                &first(&got, perm_at - 1),
                &[status(&Status::Refused(
                    "party 2 rejected the result: 1 of 2 copies of an element marked".to_owned(),
                ))],
            ),
        ),
        (
            "err-size-opened-first",
            vec![accepted.clone(), status(&Status::Opened)],
        ),
    ];
    cases.extend(size1.into_iter().map(|(n, f)| (n, sel, f)));

    for (name, sel, frames) in cases {
        out.push(aided_seed(t, name, sel, &frames));
    }
    out
}

/// `aided_key`: what each client received after the handshake on its (first) link in the
/// recorded runs, and edits that it refuses: `kmrs_semi`'s key and party index, the coin
/// toss's commitment, shares and opening (`kmrs_mal`, and in the authenticated run of 3 the
/// certificates), `kmrs_size`'s labels of P2 and bit vector of P1.
fn aided_key_seeds() -> Vec<Seed> {
    let t = "aided_key";
    let mut out = Vec::new();
    let after = |c: AidedCase| {
        recording_of(c)
            .received_on_links(c.party)
            .first()
            .and_then(|l| l.get(2..))
            .unwrap_or_default()
            .to_vec()
    };
    for (sel, c) in CLIENT_CASES.iter().enumerate() {
        out.push(aided_seed(
            t,
            &format!("ok-{}-p{}-of-{}", c.kmrs.short(), c.party, c.parties),
            sel as u8,
            &after(*c),
        ));
    }
    let sel_of = |kmrs: Kmrs, party: u32, parties: u32| {
        client_selector(AidedCase {
            kmrs,
            party,
            parties,
        })
    };
    let key_of = |parties: u32, party: u32| {
        after(AidedCase {
            kmrs: Kmrs::Semi,
            party,
            parties,
        })
        .first()
        .and_then(|f| decoded(f, |ch| recv_msg::<KeyMsg>(ch, MSG_KEY, 1024)))
    };
    let key = |k: &KeyMsg, sizes: Vec<u64>| {
        let msg = KeyMsg {
            key: k.key,
            sizes,
            identities: Vec::new(),
        };
        vec![enc(MSG_KEY, &msg)]
    };
    let party = |i: u32| vec![enc(MSG_PARTY, &i)];
    let semi2 = sel_of(Kmrs::Semi, 2, 2);
    let semi1 = sel_of(Kmrs::Semi, 1, 2);
    let mut cases: Vec<(&str, u8, Vec<Vec<u8>>)> = vec![
        ("err-party-1", semi1, party(1)),
        ("err-party-3", semi1, party(3)),
        ("err-party-max", semi1, party(u32::MAX)),
        ("err-party-twice", sel_of(Kmrs::Semi, 1, 3), party(3)),
        ("err-party-garbage", semi1, vec![vec![0xff; 6]]),
        ("err-silent", semi2, Vec::new()),
        ("err-key-garbage", semi2, vec![vec![0xff; 40]]),
    ];
    if let Some(k) = key_of(2, 2) {
        let mut trailing = key(&k, k.sizes.clone());
        if let Some(f) = trailing.first_mut() {
            f.push(0);
        }
        let identities = KeyMsg {
            key: k.key,
            sizes: k.sizes.clone(),
            identities: vec![[1; 32]],
        };
        cases.extend([
            ("err-sizes-short", semi2, key(&k, vec![13])),
            ("err-sizes-long", semi2, key(&k, vec![13, 21, 8])),
            ("err-own-size", semi2, key(&k, vec![13, 20])),
            ("err-leader-size", semi2, key(&k, vec![12, 21])),
            ("err-key-trailing", semi2, trailing),
            ("err-key-identities", semi2, vec![enc(MSG_KEY, &identities)]),
        ]);
    }
    if let Some(k) = key_of(3, 2) {
        // A third party's size that only P1 vouches for: far too many labels to label, or more
        // than this member lets a client test.
        let semi23 = sel_of(Kmrs::Semi, 2, 3);
        cases.extend([
            ("err-huge-size", semi23, key(&k, vec![13, 21, u64::MAX])),
            (
                "err-huge-sizes",
                sel_of(Kmrs::Semi, 3, 3),
                key(&k, vec![13, u64::MAX, 8]),
            ),
            ("ok-other-size", semi23, key(&k, vec![13, 21, 1000])),
            ("err-peer-size", semi23, key(&k, vec![13, 21, 1 << 40])),
        ]);
    }

    // The coin toss at a member (kmrs_mal P2 of 2): commitment, opening.
    let mal2 = sel_of(Kmrs::Mal, 2, 2);
    let toss = after(AidedCase {
        kmrs: Kmrs::Mal,
        party: 2,
        parties: 2,
    });
    let open_edit = |frames: &[Vec<u8>], edit: &dyn Fn(&mut OpenMsg)| {
        edited_msg(
            frames,
            1,
            MSG_OPEN,
            |ch| recv_msg::<OpenMsg>(ch, MSG_OPEN, 1024),
            |o| edit(o),
        )
    };
    cases.extend([
        (
            "err-toss-commitment-flipped",
            mal2,
            edited(&toss, 0, |f| {
                if let Some(b) = f.last_mut() {
                    *b ^= 1;
                }
            }),
        ),
        ("err-toss-commitment-short", mal2, vec![vec![0; 31]]),
        (
            "err-toss-share-changed",
            mal2,
            open_edit(&toss, &|o| o.shares[1][0] ^= 1),
        ),
        (
            "err-toss-leader-share-changed",
            mal2,
            open_edit(&toss, &|o| o.shares[0][0] ^= 1),
        ),
        (
            "err-toss-shares-three",
            mal2,
            open_edit(&toss, &|o| o.shares.push([0; 32])),
        ),
        (
            "err-toss-sizes",
            mal2,
            open_edit(&toss, &|o| o.sizes[0] += 1),
        ),
        (
            "err-toss-identities",
            mal2,
            open_edit(&toss, &|o| o.identities = vec![[1; 32]]),
        ),
        (
            "err-toss-open-garbage",
            mal2,
            edited(&toss, 1, |f| *f = vec![0xff; 9]),
        ),
        ("err-toss-no-open", mal2, first(&toss, 1)),
    ]);
    // A member of 3, authenticated: a size beyond its bound; certificates that are not the
    // parties' links'.
    let mal23 = sel_of(Kmrs::Mal, 2, 3);
    let toss3 = after(AidedCase {
        kmrs: Kmrs::Mal,
        party: 2,
        parties: 3,
    });
    cases.extend([
        (
            "err-toss-huge-size",
            mal23,
            open_edit(&toss3, &|o| o.sizes[2] = u64::MAX),
        ),
        (
            "err-toss-identity-swapped",
            mal23,
            open_edit(&toss3, &|o| o.identities.swap(1, 2)),
        ),
        (
            "err-toss-identities-none",
            mal23,
            open_edit(&toss3, &|o| o.identities.clear()),
        ),
    ]);
    // The coin toss at P1: a member's party index and share.
    let share = |party: u32| {
        vec![enc(
            MSG_SHARE,
            &ShareMsg {
                party,
                share: [7; 32],
            },
        )]
    };
    let mal1 = sel_of(Kmrs::Mal, 1, 2);
    cases.extend([
        ("err-toss-share-party-1", mal1, share(1)),
        ("err-toss-share-party-3", mal1, share(3)),
        ("err-toss-share-garbage", mal1, vec![vec![0xff; 7]]),
        ("err-toss-no-share", mal1, Vec::new()),
        // Authenticated, P1 of 3: P2's link claims P3's slot, which P1 bound to another
        // certificate.
        ("err-toss-bound-slot", sel_of(Kmrs::Mal, 1, 3), share(3)),
        // Another share than the recorded run's: another key, so the recorded server's bit
        // vector fails the result check.
        ("err-toss-other-share", mal1, share(2)),
    ]);

    // kmrs_size at P1: P2's share, then P2's labels under both keys.
    let size1 = sel_of(Kmrs::Size, 1, 2);
    let from_p2 = after(AidedCase {
        kmrs: Kmrs::Size,
        party: 1,
        parties: 2,
    });
    let label_len = from_p2.get(1).map_or(1, |f| f.len() / (2 * 21 + 2 * 4));
    cases.extend([
        (
            "err-size-labels-descending",
            size1,
            edited(&from_p2, 1, |f| swap_first_two(f, label_len)),
        ),
        (
            "err-size-labels-partial",
            size1,
            edited(&from_p2, 1, |f| {
                f.pop();
            }),
        ),
        (
            "err-size-labels-long",
            size1,
            edited(&from_p2, 1, |f| {
                f.extend(std::iter::repeat_n(0xff, label_len))
            }),
        ),
        ("err-size-no-labels", size1, first(&from_p2, 1)),
    ]);
    // kmrs_size at P2: the coin toss's commitment and opening, then P1's bit vector.
    let size2 = sel_of(Kmrs::Size, 2, 2);
    let from_p1 = after(AidedCase {
        kmrs: Kmrs::Size,
        party: 2,
        parties: 2,
    });
    let bits_at = 2;
    cases.extend([
        (
            "err-size-bits-past-end",
            size2,
            // 50 labels: bits 2 to 7 of the last byte are past the end.
            edited(&from_p1, bits_at, |f| {
                if let Some(b) = f.last_mut() {
                    *b |= 0x80;
                }
            }),
        ),
        (
            "err-size-bits-long",
            size2,
            edited(&from_p1, bits_at, |f| f.push(0)),
        ),
        (
            "err-size-bits-none-marked",
            size2,
            edited(&from_p1, bits_at, |f| f.iter_mut().for_each(|b| *b = 0)),
        ),
        ("err-size-no-bits", size2, first(&from_p1, bits_at)),
    ]);
    for (name, sel, frames) in cases {
        out.push(aided_seed(t, name, sel, &frames));
    }
    out
}
