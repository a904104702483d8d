//! The bucketed run's target ([`fuzz_bucketed`]): the messages of `blindjoin_cli::bucketed`
//! before its bucket sessions begin, in either role: the run handshake (`start`), the
//! proposals of `--buckets auto` (`agree_buckets`), a second lane's handshake (`open_lane`),
//! the distinct counts (`agree`), the finished buckets of a resumed run (`agree_finished`) and
//! the second lane's end (`end_lane`), in the order `bucketed::run` runs them.

use crate::Outcome;
use crate::frames::join;
use crate::frames::split;
use crate::peer::PEER_SEED;
use crate::peer::{OURS_SEED, queued, rng};
use crate::seeds::{Recorder, Seed};
use crate::targets::{items, outcome};
use blindjoin_cli::bucket::{MAX_AUTO_BUCKETS, Partition};
use blindjoin_cli::bucketed::{
    Buckets, MSG_RECEIVER_FINISHED, MSG_SENDER_BUCKETS, MSG_SENDER_FINISHED, MSG_SENDER_SIZE,
    MemorySplit, Party, agree, agree_buckets, agree_finished, end_lane, open_lane_on, run_id,
    start_with,
};
use blindjoin_cli::error::CliResult;
use blindjoin_core::channel::memory::memory_pair;
use blindjoin_core::channel::{Channel, FrameReceiver, MAX_FRAME_LEN, send_msg};
use blindjoin_psi::RunOptions;
use blindjoin_psi::protocols::kkrt16;
use std::time::Duration;

/// B of a run that does not choose it (`--buckets 4`), and this party's proposal with
/// `--buckets auto`.
pub(crate) const BUCKETS: u32 = 4;

/// The run id that a resumed run names (parameter `resume`; both parties give the same).
const RESUMED_RUN: &str = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed";

/// The partition key of the run being resumed.
const RESUMED_KEY: [u8; 16] = [0x4b; 16];

/// A bucketed run's configuration, from the target's first byte: bit 0 the role (0: receiver,
/// 1: sender), bit 1 `--buckets auto` (else 4), bit 2 a resumed run, bit 3 a second lane
/// (`--parallel 2`), bit 4 the sender's `--allow-rerun`, bits 5 to 7 the buckets 0 to 2 this
/// party recorded finished (of a resumed run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketedCase {
    /// Whether the party receives.
    pub receiver: bool,
    /// `--buckets auto`.
    pub auto: bool,
    /// Whether the run resumes one.
    pub resume: bool,
    /// Whether a second lane runs.
    pub lanes: bool,
    /// The sender's `--allow-rerun`.
    pub allow_rerun: bool,
    /// The buckets 0 to 2 this party recorded (bit p: bucket p).
    pub finished: u8,
}

impl BucketedCase {
    /// The case of a selector byte.
    pub fn from_byte(b: u8) -> Self {
        BucketedCase {
            receiver: b & 1 == 0,
            auto: b & 2 != 0,
            resume: b & 4 != 0,
            lanes: b & 8 != 0,
            allow_rerun: b & 16 != 0,
            finished: b >> 5,
        }
    }

    /// The selector byte of this case.
    pub fn to_byte(self) -> u8 {
        u8::from(!self.receiver)
            | u8::from(self.auto) << 1
            | u8::from(self.resume) << 2
            | u8::from(self.lanes) << 3
            | u8::from(self.allow_rerun) << 4
            | (self.finished & 7) << 5
    }

    /// The peer's case in the same run, with `finished` its recorded buckets.
    pub fn peer(self, finished: u8) -> Self {
        BucketedCase {
            receiver: !self.receiver,
            finished,
            ..self
        }
    }

    /// The frames lane 0 carries: hello and verdict, the proposal (auto), the count, the
    /// finished buckets (resumed).
    pub fn lane0_frames(self) -> usize {
        3 + usize::from(self.auto) + usize::from(self.resume)
    }
}

/// One party's run of `case` with `n` items (`key-<offset>` on) and RNG seed `seed`, on lane 0
/// and, if the case has a second lane, `lane1`; it ends where the bucket sessions would begin
/// (then ends the second lane).
pub(crate) fn run_bucketed<C: Channel>(
    case: BucketedCase,
    (n, offset): (usize, usize),
    ch: &mut dyn Channel,
    lane1: Option<C>,
    seed: u64,
) -> CliResult<()> {
    let opts = RunOptions::default();
    let buckets = Buckets {
        count: if case.auto { 0 } else { BUCKETS },
        parallel: if case.lanes { 2 } else { 1 },
    };
    let party = Party {
        protocol: &kkrt16::PROTOCOL,
        receiver: case.receiver,
        opts: &opts,
        buckets,
        max_peer: None,
    };
    let mut extra = vec![("base_ots".to_owned(), "lane-iknp".to_owned())];
    if case.resume {
        extra.push(("resume".to_owned(), RESUMED_RUN.to_owned()));
    }
    let mut r = rng(seed);
    let (mut session, mut partition) = start_with(ch, &party, &extra, &mut r)?;
    let mut b = buckets;
    if case.auto {
        b.count = agree_buckets(ch, case.receiver, BUCKETS)?;
        partition = Partition::new(partition.key(), b.count);
    }
    if case.resume {
        partition = Partition::new(RESUMED_KEY, b.count);
    }
    let party = Party {
        buckets: b,
        ..party
    };
    let id = run_id(&session);
    let mut lane = match lane1 {
        Some(l) if case.lanes => Some(open_lane_on(l, session.role, &id, 1, &mut r)?),
        _ => None,
    };
    let items = items(n, offset);
    let split = MemorySplit::new(&items, &partition);
    let split: &dyn blindjoin_cli::bucketed::Split = &split;
    agree(ch, &party, &mut session, n as u64, &|p| split.count(p))?;
    if case.resume {
        let mine: Vec<bool> = (0..b.count as usize)
            .map(|p| p < 3 && case.finished >> p & 1 == 1)
            .collect();
        agree_finished(ch, case.receiver, &mine, case.allow_rerun)?;
    }
    // The bucket sessions would run here.
    if let Some(lane) = &mut lane {
        end_lane(lane, case.receiver)?;
    }
    Ok(())
}

/// The items of the party under test: 5 (the peer has 8, from `key-2` on).
pub(crate) const OUR_ITEMS: (usize, usize) = (5, 0);

/// The peer's items.
pub(crate) const PEER_ITEMS: (usize, usize) = (8, 2);

/// A bucketed run's messages up to its bucket sessions, in either role: after a selector byte
/// ([`BucketedCase`]), the peer's frames on lane 0 (the run handshake's hello and verdict, the
/// proposal of B, the distinct count, the finished buckets; [`BucketedCase::lane0_frames`]
/// of them), then the rest on the second lane (its handshake's hello and verdict, the
/// transcript confirmation and final verdict).
pub fn fuzz_bucketed(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = BucketedCase::from_byte(sel);
    let frames = split(rest);
    let (lane0, lane1) = if case.lanes {
        frames.split_at(case.lane0_frames().min(frames.len()))
    } else {
        (&frames[..], &[][..])
    };
    let run = || -> CliResult<()> {
        let (mut ch, peer0) = queued(lane0.iter().copied())?;
        let (l1, peer1) = queued(lane1.iter().copied())?;
        let out = run_bucketed(case, OUR_ITEMS, &mut ch, Some(l1), OURS_SEED);
        drop((peer0, peer1));
        out
    };
    outcome(run())
}

/// The frames the party of `ours` received on lane 0 and on its second lane in a run against
/// a real peer of `peer`, and its result.
fn record(ours: BucketedCase, peer: BucketedCase) -> (CliResult<()>, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let wait = Duration::from_secs(30);
    let (a0, mut b0) = memory_pair(wait);
    let (a1, b1) = memory_pair(wait);
    std::thread::scope(|s| {
        let h = s.spawn(move || {
            // The peer's result does not matter: what it sent is recorded.
            let _ = run_bucketed(peer, PEER_ITEMS, &mut b0, Some(b1), PEER_SEED);
        });
        let mut lane0 = Recorder::new(a0);
        let mut lane1 = Recorder::new(a1);
        let r = run_bucketed(ours, OUR_ITEMS, &mut lane0, Some(&mut lane1), OURS_SEED);
        let frames = (
            std::mem::take(&mut lane0.received),
            std::mem::take(&mut lane1.received),
        );
        // Closing our ends ends a peer still waiting.
        drop((lane0, lane1));
        let _ = h.join();
        (r, frames.0, frames.1)
    })
}

fn seed(name: String, case: BucketedCase, lane0: &[Vec<u8>], lane1: &[Vec<u8>]) -> Seed {
    let mut data = vec![case.to_byte()];
    data.extend(join(lane0));
    data.extend(join(lane1));
    Seed {
        target: "bucketed",
        name,
        data,
    }
}

/// A short name of `case`: the role, `auto`, `resume-<finished>`, `lanes`, `rerun`.
fn case_name(case: BucketedCase) -> String {
    let mut name = String::from(if case.receiver { "receiver" } else { "sender" });
    if case.auto {
        name.push_str("-auto");
    }
    if case.resume {
        name.push_str(&format!("-resume-{:03b}", case.finished));
    }
    if case.lanes {
        name.push_str("-lanes");
    }
    if case.allow_rerun {
        name.push_str("-rerun");
    }
    name
}

/// The seeds of `bucketed`: recorded runs of every combination of role, `--buckets auto`,
/// resume and a second lane (the resumed runs with both parties' records alike, or with a
/// bucket only the sender recorded, with and without its `--allow-rerun`), runs whose parties
/// disagree (another B, resume or lane count: the run handshake refuses), and edits of the
/// recorded frames that the party refuses.
pub(crate) fn seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    let mut push = |ours: BucketedCase, peer: BucketedCase, name: Option<&str>| {
        let (r, lane0, lane1) = record(ours, peer);
        let label = name.map_or_else(|| case_name(ours), str::to_owned);
        let name = format!("{}-{label}", if r.is_ok() { "ok" } else { "err" });
        out.push(seed(name, ours, &lane0, &lane1));
    };
    for receiver in [true, false] {
        for auto in [false, true] {
            for resume in [false, true] {
                for lanes in [false, true] {
                    let ours = BucketedCase {
                        receiver,
                        auto,
                        resume,
                        lanes,
                        allow_rerun: false,
                        finished: if resume { 0b011 } else { 0 },
                    };
                    push(ours, ours.peer(ours.finished), None);
                }
            }
        }
        // Bucket 2 recorded by the sender only: served again only with its --allow-rerun.
        let base = BucketedCase {
            receiver,
            auto: false,
            resume: true,
            lanes: false,
            allow_rerun: false,
            finished: 0,
        };
        let (ours_done, peer_done) = if receiver {
            (0b011, 0b111)
        } else {
            (0b111, 0b011)
        };
        for allow_rerun in [false, true] {
            let ours = BucketedCase {
                allow_rerun,
                finished: ours_done,
                ..base
            };
            push(ours, ours.peer(peer_done), None);
        }
        // The parties disagree: the run handshake refuses.
        let plain = BucketedCase {
            resume: false,
            finished: 0,
            ..base
        };
        for (what, peer) in [
            (
                "auto-differs",
                BucketedCase {
                    auto: true,
                    ..plain
                },
            ),
            (
                "resume-differs",
                BucketedCase {
                    resume: true,
                    ..plain
                },
            ),
            (
                "lanes-differ",
                BucketedCase {
                    lanes: true,
                    ..plain
                },
            ),
        ] {
            let role = if receiver { "receiver" } else { "sender" };
            push(plain, peer.peer(0), Some(&format!("{role}-{what}")));
        }
    }

    // Edits of recorded frames of a resumed auto run with a second lane: lane 0 holds hello,
    // verdict, proposal, count and finished buckets; the second lane hello, verdict and the
    // end's confirmation (a receiver's) or confirmation and final verdict (a sender's).
    for receiver in [true, false] {
        let ours = BucketedCase {
            receiver,
            auto: true,
            resume: true,
            lanes: true,
            allow_rerun: false,
            finished: 0b011,
        };
        let (_, lane0, lane1) = record(ours, ours.peer(0b011));
        let role = if receiver { "receiver" } else { "sender" };
        let at0 = |k: usize, f: Vec<u8>| {
            let mut l = lane0.clone();
            if let Some(x) = l.get_mut(k) {
                *x = f;
            }
            l
        };
        let finished = if receiver {
            enc(MSG_SENDER_FINISHED, &(vec![0b111u8], false))
        } else {
            enc(MSG_RECEIVER_FINISHED, &vec![0b111u8, 0])
        };
        let mut flipped = lane1.clone();
        if let Some(b) = flipped.get_mut(2).and_then(|f| f.last_mut()) {
            *b ^= 1;
        }
        let cases: Vec<(&str, Frames, Frames)> = vec![
            (
                "proposal-0",
                at0(2, enc(MSG_SENDER_BUCKETS, &0u32)),
                lane1.clone(),
            ),
            (
                "proposal-too-many",
                at0(2, enc(MSG_SENDER_BUCKETS, &(MAX_AUTO_BUCKETS + 1))),
                lane1.clone(),
            ),
            ("proposal-garbage", at0(2, vec![0xff; 6]), lane1.clone()),
            ("count-garbage", at0(3, vec![0xff; 12]), lane1.clone()),
            (
                "count-huge",
                at0(3, enc(MSG_SENDER_SIZE, &(1u64 << 40))),
                lane1.clone(),
            ),
            (
                "finished-short",
                at0(4, enc(MSG_SENDER_FINISHED, &(Vec::<u8>::new(), false))),
                lane1.clone(),
            ),
            ("finished-garbage", at0(4, vec![0xff; 3]), lane1.clone()),
            ("finished-other", at0(4, finished), lane1.clone()),
            ("lane-hello-of-the-run", lane0.clone(), {
                let mut l = lane1.clone();
                if let (Some(x), Some(h)) = (l.get_mut(0), lane0.first()) {
                    *x = h.clone();
                }
                l
            }),
            ("lane-confirmation-flipped", lane0.clone(), flipped),
            (
                "lane-silent",
                lane0.clone(),
                lane1[..2.min(lane1.len())].to_vec(),
            ),
            ("silent", Vec::new(), Vec::new()),
        ];
        for (what, l0, l1) in cases {
            out.push(seed(format!("err-{role}-{what}"), ours, &l0, &l1));
        }
    }
    out
}

/// A lane's frames.
type Frames = Vec<Vec<u8>>;

/// The frame of `v` as `send_msg` encodes it for `msg`.
fn enc<T: serde::Serialize>(msg: &'static str, v: &T) -> Vec<u8> {
    let (mut a, mut b) = memory_pair(Duration::from_secs(1));
    if send_msg(&mut a, msg, v).is_err() {
        return Vec::new();
    }
    b.recv(msg, MAX_FRAME_LEN).unwrap_or_default()
}
