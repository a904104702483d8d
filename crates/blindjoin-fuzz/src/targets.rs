//! The targets (see the table in the crate doc) and the selector bytes that configure them.

use crate::Outcome;
use crate::frames::split;
use crate::peer::{OURS_SEED, against, peer_handshake, rng};
use blindjoin_cli::input::{InputSpec, read_input_from};
use blindjoin_cli::normalize::{Normalize, Normalizer};
use blindjoin_core::Block;
use blindjoin_core::handshake::{Role, SessionConfig, handshake};
use blindjoin_core::item::{Item, items_from_records};
use blindjoin_ot::base::endemic::{EndemicReceiver, EndemicSender};
use blindjoin_ot::base::{BaseOtReceiver, BaseOtSender, ChouOrlandiReceiver, ChouOrlandiSender};
use blindjoin_ot::ext::iknp::{IknpReceiver, IknpSender};
use blindjoin_ot::ext::kk13::Kk13Sender;
use blindjoin_ot::ext::kkrt::KkrtSender;
use blindjoin_ot::ext::kos::{KosBase, KosReceiver, KosSender};
use blindjoin_ot::ext::oos::{OosReceiver, OosSender};
use blindjoin_psi::protocols::{
    circuit_gmw, circuit_gmw_scalar, circuit_yao, cm20, cm20_mal, dh_ffc, dkt10, ecdh, ecdh_nist,
    gbf, kkrt16, naive, psz14, rgbf, rr17_de, rr17_ec, rr17a, rsa_blind,
};
use blindjoin_psi::{Protocol, RunOptions};
use std::fmt::Display;
use std::path::Path;
use std::sync::OnceLock;

/// The base OT under the extensions and the protocols: the ideal one with the `ideal-base-ot`
/// feature (so inputs reach the later messages cheaply), Chou-Orlandi without it.
#[cfg(feature = "ideal-base-ot")]
mod base {
    pub(crate) type Sender = blindjoin_ot::base::ideal::IdealBaseOtSender;
    pub(crate) type Receiver = blindjoin_ot::base::ideal::IdealBaseOtReceiver;
    pub(crate) const PSI: blindjoin_psi::BaseOt = blindjoin_psi::BaseOt::Ideal;
}
#[cfg(not(feature = "ideal-base-ot"))]
mod base {
    pub(crate) type Sender = blindjoin_ot::base::ChouOrlandiSender;
    pub(crate) type Receiver = blindjoin_ot::base::ChouOrlandiReceiver;
    pub(crate) const PSI: blindjoin_psi::BaseOt = blindjoin_psi::BaseOt::ChouOrlandi;
}

/// The id (`sid`) the OT targets run under (the OT layer has no handshake of its own).
pub(crate) const OT_SID: [u8; 32] = [9; 32];

pub(crate) fn outcome<T, E: Display>(r: Result<T, E>) -> Outcome {
    r.map(|_| ()).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------------
// Handshake

/// The configuration of the party under test in `hello` and `verdict`.
pub(crate) fn hello_ours() -> SessionConfig {
    let mut c = SessionConfig::new("fuzz", Role::Receiver, 3);
    c.params = vec![
        ("alpha".to_owned(), "1".to_owned()),
        ("beta".to_owned(), "two".to_owned()),
    ];
    c.max_peer_set_size = 1000;
    c
}

/// The configuration of a peer that `hello_ours` accepts.
pub(crate) fn hello_peer() -> SessionConfig {
    let mut c = hello_ours();
    c.role = Role::Sender;
    c.set_size = 5;
    c
}

/// The valid peer's hello and its go-ahead verdict.
fn valid_peer_frames() -> &'static [Vec<u8>] {
    static FRAMES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    FRAMES.get_or_init(|| peer_handshake(&hello_ours(), &hello_peer()))
}

fn run_handshake(frames: &[&[u8]]) -> Outcome {
    outcome(against(frames.iter().copied(), |ch| {
        handshake(ch, &hello_ours(), &mut rng(OURS_SEED))
    }))
}

/// The handshake with `data` as the peer's hello frame, followed by a go-ahead verdict.
pub fn fuzz_hello(data: &[u8]) -> Outcome {
    let go = valid_peer_frames().get(1).map_or(&[][..], Vec::as_slice);
    run_handshake(&[data, go])
}

/// The handshake with a valid peer hello and `data` as the peer's verdict frame.
pub fn fuzz_verdict(data: &[u8]) -> Outcome {
    let hello = valid_peer_frames().first().map_or(&[][..], Vec::as_slice);
    run_handshake(&[hello, data])
}

// ---------------------------------------------------------------------------------------------
// Protocols

/// The set sizes a protocol target's selector byte picks from.
pub const SIZES: [usize; 8] = [0, 1, 2, 3, 5, 8, 13, 21];

/// A protocol target's configuration, from its first input byte: bit 0 the role of the party
/// under test (0: receiver, 1: sender), bits 1-3 its set size and bits 4-6 the peer's (indices
/// into [`SIZES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtocolCase {
    /// Whether the party under test is the receiver.
    pub we_receive: bool,
    /// Index into [`SIZES`] of the party under test's set size.
    pub ours: u8,
    /// Index into [`SIZES`] of the fake peer's set size.
    pub peer: u8,
}

impl ProtocolCase {
    /// The case a selector byte picks.
    pub fn from_byte(b: u8) -> Self {
        ProtocolCase {
            we_receive: b & 1 == 0,
            ours: (b >> 1) & 7,
            peer: (b >> 4) & 7,
        }
    }

    /// The selector byte of this case.
    pub fn to_byte(self) -> u8 {
        u8::from(!self.we_receive) | (self.ours & 7) << 1 | (self.peer & 7) << 4
    }

    /// The same run seen from the peer.
    pub fn flipped(self) -> Self {
        ProtocolCase {
            we_receive: !self.we_receive,
            ours: self.peer,
            peer: self.ours,
        }
    }

    fn sizes(self) -> (usize, usize) {
        (
            SIZES[usize::from(self.ours & 7)],
            SIZES[usize::from(self.peer & 7)],
        )
    }
}

/// The protocols whose targets run at κ = 80: their κ = 128 groups (3072 bits) would cost an
/// input tens of milliseconds, the 1024-bit ones of κ = 80 a few.
const KAPPA_80: [&str; 2] = [dh_ffc::NAME, rsa_blind::NAME];

/// The base OT under a protocol target's OT extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolBase {
    /// The ideal base OT (with the `ideal-base-ot` feature, else the protocol's real one), so
    /// that an input reaches the messages after the base OTs without public-key work.
    Fuzz,
    /// The protocol's own base OT (`BaseOt::ChouOrlandi`: Chou-Orlandi for the semi-honest
    /// protocols, Masny-Rindal endemic OT for the malicious-secure ones), so that the first
    /// frames of an input are the base OT's.
    Real,
}

/// The malicious-secure protocols whose targets also run over their real base OT (endemic
/// OT): the target's name and the protocol.
pub static ENDEMIC_TARGETS: [(&str, &Protocol); 4] = [
    ("cm20_mal_endemic", &cm20_mal::PROTOCOL),
    ("rr17a_endemic", &rr17a::PROTOCOL),
    ("rr17_de_endemic", &rr17_de::PROTOCOL),
    ("rr17_ec_endemic", &rr17_ec::PROTOCOL),
];

/// The options of both parties in `p`'s target: κ = 80 for [`KAPPA_80`], the default κ = 128
/// otherwise, over the base OT `base`.
pub(crate) fn run_options(p: &Protocol, base: ProtocolBase) -> RunOptions {
    let defaults = RunOptions::default();
    RunOptions {
        base_ot: match base {
            ProtocolBase::Fuzz => base::PSI,
            ProtocolBase::Real => blindjoin_psi::BaseOt::ChouOrlandi,
        },
        kappa: if KAPPA_80.contains(&p.name) {
            80
        } else {
            defaults.kappa
        },
        ..defaults
    }
}

/// The items of a party of `n` records, `key-<offset>` on.
pub(crate) fn items(n: usize, offset: usize) -> Vec<Item> {
    let records: Vec<String> = (offset..offset + n).map(|i| format!("key-{i}")).collect();
    items_from_records(&records)
}

/// The handshake configurations of the party under test and of the peer in `case`.
pub(crate) fn protocol_configs(
    p: &Protocol,
    base: ProtocolBase,
    case: ProtocolCase,
) -> (SessionConfig, SessionConfig) {
    let opts = run_options(p, base);
    let (ours, peer) = case.sizes();
    let (our_role, peer_role) = if case.we_receive {
        (Role::Receiver, Role::Sender)
    } else {
        (Role::Sender, Role::Receiver)
    };
    (
        opts.session_config(p.name, our_role, ours, (p.params)(&opts)),
        opts.session_config(p.name, peer_role, peer, (p.params)(&opts)),
    )
}

/// Runs the party under test of `case` on `ch`, with its [`items`] from `offset` on.
pub(crate) fn run_party(
    p: &Protocol,
    base: ProtocolBase,
    case: ProtocolCase,
    ch: &mut dyn blindjoin_core::channel::Channel,
    seed: u64,
    offset: usize,
) -> blindjoin_core::Result<()> {
    let opts = run_options(p, base);
    let items = items(case.sizes().0, offset);
    if case.we_receive {
        p.receive(ch, &items, &opts, &mut rng(seed)).map(|_| ())
    } else {
        p.send(ch, &items, &opts, &mut rng(seed)).map(|_| ())
    }
}

fn fuzz_protocol_over(p: &Protocol, base: ProtocolBase, data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let case = ProtocolCase::from_byte(sel);
    let (ours, peer) = protocol_configs(p, base, case);
    let hs = peer_handshake(&ours, &peer);
    let frames = hs.iter().map(Vec::as_slice).chain(split(rest));
    outcome(against(frames, |ch| {
        run_party(p, base, case, ch, OURS_SEED, 0)
    }))
}

fn fuzz_protocol(p: &Protocol, data: &[u8]) -> Outcome {
    fuzz_protocol_over(p, ProtocolBase::Fuzz, data)
}

/// `kkrt16` in either role against a peer whose frames after the handshake are the input's.
pub fn fuzz_kkrt16(data: &[u8]) -> Outcome {
    fuzz_protocol(&kkrt16::PROTOCOL, data)
}

/// `cm20` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_cm20(data: &[u8]) -> Outcome {
    fuzz_protocol(&cm20::PROTOCOL, data)
}

/// `cm20_mal` in either role (see [`fuzz_kkrt16`]): the receiver against a malicious sender's
/// endemic-OT pairs and values, which is the model it claims.
pub fn fuzz_cm20_mal(data: &[u8]) -> Outcome {
    fuzz_protocol(&cm20_mal::PROTOCOL, data)
}

/// `rr17a` in either role (see [`fuzz_kkrt16`]): against a malicious sender's challenge,
/// KOS seeds and summary values, and a malicious receiver's commitment, KOS columns, opening and
/// map π, the model it claims.
pub fn fuzz_rr17a(data: &[u8]) -> Outcome {
    fuzz_protocol(&rr17a::PROTOCOL, data)
}

/// `rr17_de` in either role (see [`fuzz_kkrt16`]): against a malicious peer's key share or
/// opening, OOS16 columns, challenges and proofs in both directions, and the sender's masks,
/// the model it claims.
pub fn fuzz_rr17_de(data: &[u8]) -> Outcome {
    fuzz_protocol(&rr17_de::PROTOCOL, data)
}

/// `rr17_ec` in either role (see [`fuzz_kkrt16`]): against a malicious receiver's key share,
/// opening, OOS16 columns and proofs, and a malicious sender's challenges, commitments and
/// encrypted openings, the model it claims.
pub fn fuzz_rr17_ec(data: &[u8]) -> Outcome {
    fuzz_protocol(&rr17_ec::PROTOCOL, data)
}

/// `cm20_mal` over its real base OT (see [`fuzz_kkrt16`]): the receiver as the endemic-OT
/// sender against a malicious receiver's pairs, the sender as the endemic-OT receiver against a
/// malicious sender's point A, then the rest of the run as in [`fuzz_cm20_mal`].
pub fn fuzz_cm20_mal_endemic(data: &[u8]) -> Outcome {
    fuzz_protocol_over(&cm20_mal::PROTOCOL, ProtocolBase::Real, data)
}

/// `rr17a` over its real base OT (see [`fuzz_kkrt16`]): the 128 endemic OTs under KOS (the
/// receiver as their sender), then the rest of the run as in [`fuzz_rr17a`].
pub fn fuzz_rr17a_endemic(data: &[u8]) -> Outcome {
    fuzz_protocol_over(&rr17a::PROTOCOL, ProtocolBase::Real, data)
}

/// `rr17_de` over its real base OT (see [`fuzz_kkrt16`]): the 128 endemic OTs that KOS
/// extends to OOS16's 512, then the rest of the run as in [`fuzz_rr17_de`].
pub fn fuzz_rr17_de_endemic(data: &[u8]) -> Outcome {
    fuzz_protocol_over(&rr17_de::PROTOCOL, ProtocolBase::Real, data)
}

/// `rr17_ec` over its real base OT (see [`fuzz_kkrt16`]): the 128 endemic OTs that KOS
/// extends to OOS16's 512, then the rest of the run as in [`fuzz_rr17_ec`].
pub fn fuzz_rr17_ec_endemic(data: &[u8]) -> Outcome {
    fuzz_protocol_over(&rr17_ec::PROTOCOL, ProtocolBase::Real, data)
}

/// `dkt10` in either role (see [`fuzz_kkrt16`]): against a malicious sender's key commitment,
/// answers, proof and tags, and a malicious receiver's X, points, commitments and responses, the
/// model it claims.
pub fn fuzz_dkt10(data: &[u8]) -> Outcome {
    fuzz_protocol(&dkt10::PROTOCOL, data)
}

/// `psz14` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_psz14(data: &[u8]) -> Outcome {
    fuzz_protocol(&psz14::PROTOCOL, data)
}

/// `gbf` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_gbf(data: &[u8]) -> Outcome {
    fuzz_protocol(&gbf::PROTOCOL, data)
}

/// `rgbf` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_rgbf(data: &[u8]) -> Outcome {
    fuzz_protocol(&rgbf::PROTOCOL, data)
}

/// `circuit_gmw` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_circuit_gmw(data: &[u8]) -> Outcome {
    fuzz_protocol(&circuit_gmw::PROTOCOL, data)
}

/// `circuit_gmw_scalar` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_circuit_gmw_scalar(data: &[u8]) -> Outcome {
    fuzz_protocol(&circuit_gmw_scalar::PROTOCOL, data)
}

/// `circuit_yao` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_circuit_yao(data: &[u8]) -> Outcome {
    fuzz_protocol(&circuit_yao::PROTOCOL, data)
}

/// `ecdh` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_ecdh(data: &[u8]) -> Outcome {
    fuzz_protocol(&ecdh::PROTOCOL, data)
}

/// `dh_ffc` in either role, at κ = 80 (the 1024-bit group; see [`fuzz_kkrt16`]).
pub fn fuzz_dh_ffc(data: &[u8]) -> Outcome {
    fuzz_protocol(&dh_ffc::PROTOCOL, data)
}

/// `ecdh_nist` in either role, at κ = 128 (P-256; see [`fuzz_kkrt16`]).
pub fn fuzz_ecdh_nist(data: &[u8]) -> Outcome {
    fuzz_protocol(&ecdh_nist::PROTOCOL, data)
}

/// `rsa_blind` in either role, at κ = 80 (a 1024-bit N, generated by the sender in each run
/// from its seeded RNG; see [`fuzz_kkrt16`]).
pub fn fuzz_rsa_blind(data: &[u8]) -> Outcome {
    fuzz_protocol(&rsa_blind::PROTOCOL, data)
}

/// `naive` in either role (see [`fuzz_kkrt16`]).
pub fn fuzz_naive(data: &[u8]) -> Outcome {
    fuzz_protocol(&naive::PROTOCOL, data)
}

// ---------------------------------------------------------------------------------------------
// Base OT

/// The base-OT target's modes: the party under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseOtMode {
    /// The Chou-Orlandi sender (reads the receiver's points R_i).
    CoSender,
    /// The Chou-Orlandi receiver (reads the sender's point S).
    CoReceiver,
    /// The ideal base OT's receiver (reads the keys; with the `ideal-base-ot` feature, else the
    /// Chou-Orlandi receiver).
    IdealReceiver,
    /// The Masny-Rindal endemic-OT sender (reads the receiver's pairs (r_i0, r_i1)).
    EndemicSender,
    /// The Masny-Rindal endemic-OT receiver (reads the sender's point A).
    EndemicReceiver,
}

/// The base-OT target's modes, by selector byte modulo 5.
pub const BASE_OT_MODES: [BaseOtMode; 5] = [
    BaseOtMode::CoSender,
    BaseOtMode::CoReceiver,
    BaseOtMode::IdealReceiver,
    BaseOtMode::EndemicSender,
    BaseOtMode::EndemicReceiver,
];

/// The base-OT target's configuration, from its first byte: mode `b % 5`
/// ([`BASE_OT_MODES`]), n = `(b / 5) % 5`.
pub fn base_ot_case(b: u8) -> (BaseOtMode, usize) {
    (BASE_OT_MODES[usize::from(b % 5)], usize::from(b / 5) % 5)
}

/// The selector byte of `mode` with `n` (below 5) OTs.
pub fn base_ot_byte(mode: BaseOtMode, n: usize) -> u8 {
    let m = BASE_OT_MODES.iter().position(|&x| x == mode).unwrap_or(0);
    (m + 5 * (n % 5)) as u8
}

/// The choice bits of a base-OT or OT-extension receiver of `n` OTs.
pub(crate) fn choices(n: usize) -> Vec<bool> {
    (0..n).map(|i| i % 3 == 1).collect()
}

/// Runs the base-OT party of `mode` with `n` OTs on `ch`.
pub(crate) fn run_base_ot(
    mode: BaseOtMode,
    n: usize,
    ch: &mut dyn blindjoin_core::channel::Channel,
    seed: u64,
) -> blindjoin_core::Result<()> {
    let mut r = rng(seed);
    match mode {
        BaseOtMode::CoSender => ChouOrlandiSender::default()
            .send_random(ch, &OT_SID, n, &mut r)
            .map(|_| ()),
        BaseOtMode::CoReceiver => ChouOrlandiReceiver::default()
            .receive_random(ch, &OT_SID, &choices(n), &mut r)
            .map(|_| ()),
        BaseOtMode::IdealReceiver => base::Receiver::default()
            .receive_random(ch, &OT_SID, &choices(n), &mut r)
            .map(|_| ()),
        BaseOtMode::EndemicSender => EndemicSender::default()
            .send_random(ch, &OT_SID, n, &mut r)
            .map(|_| ()),
        BaseOtMode::EndemicReceiver => EndemicReceiver::default()
            .receive_random(ch, &OT_SID, &choices(n), &mut r)
            .map(|_| ()),
    }
}

/// The peer's side of [`run_base_ot`] (for recorded seeds).
pub(crate) fn run_base_ot_peer(
    mode: BaseOtMode,
    n: usize,
    ch: &mut dyn blindjoin_core::channel::Channel,
    seed: u64,
) -> blindjoin_core::Result<()> {
    let mut r = rng(seed);
    match mode {
        BaseOtMode::CoSender => ChouOrlandiReceiver::default()
            .receive_random(ch, &OT_SID, &choices(n), &mut r)
            .map(|_| ()),
        BaseOtMode::CoReceiver => ChouOrlandiSender::default()
            .send_random(ch, &OT_SID, n, &mut r)
            .map(|_| ()),
        BaseOtMode::IdealReceiver => base::Sender::default()
            .send_random(ch, &OT_SID, n, &mut r)
            .map(|_| ()),
        BaseOtMode::EndemicSender => EndemicReceiver::default()
            .receive_random(ch, &OT_SID, &choices(n), &mut r)
            .map(|_| ()),
        BaseOtMode::EndemicReceiver => EndemicSender::default()
            .send_random(ch, &OT_SID, n, &mut r)
            .map(|_| ()),
    }
}

/// Chou-Orlandi, Masny-Rindal endemic OT (both in either role) and the ideal base OT's
/// receiver against frames from the input (after a selector byte, [`base_ot_case`]).
pub fn fuzz_base_ot(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    let (mode, n) = base_ot_case(sel);
    outcome(against(split(rest), |ch| {
        run_base_ot(mode, n, ch, OURS_SEED)
    }))
}

// ---------------------------------------------------------------------------------------------
// OT extensions

/// The OT-extension target's modes: an extension in a role that reads the peer's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtExtMode {
    /// IKNP sender, random OTs (reads the u columns).
    IknpSender,
    /// IKNP receiver, correlated OTs (reads the y values).
    IknpCorrelated,
    /// IKNP receiver, chosen-message OTs (reads the y pairs).
    IknpChosen,
    /// KOS sender (reads the commitment to the receiver's challenge seed, the u columns, the
    /// opening and the check values).
    KosSender,
    /// KOS receiver (reads the sender's challenge seed).
    KosReceiver,
    /// KK13 sender (reads the u columns), η from the parameter.
    Kk13Sender,
    /// KKRT sender (reads the u columns), code width from the parameter.
    KkrtSender,
    /// OOS16 sender on 512 base OTs that KOS extends from 128 base OTs (`KosBase`), as
    /// `rr17_de` runs its forward direction (reads the KOS messages of a KOS receiver, the u
    /// columns and the proof).
    OosSender,
    /// OOS16 receiver on KOS-extended base OTs, as `rr17_de`'s forward direction (reads the
    /// KOS sender's messages and the challenge seed).
    OosReceiver,
    /// OOS16 sender on base OTs given by the caller (`from_base`), as `rr17_de` runs its
    /// reverse direction on the forward direction's keys (reads the u columns and the proof).
    OosSenderReverse,
    /// OOS16 receiver on base OTs given by the caller, as `rr17_de`'s reverse direction
    /// (reads the challenge seed).
    OosReceiverReverse,
}

/// The OT-extension target's modes, by first selector byte modulo 11.
pub const OT_EXT_MODES: [OtExtMode; 11] = [
    OtExtMode::IknpSender,
    OtExtMode::IknpCorrelated,
    OtExtMode::IknpChosen,
    OtExtMode::KosSender,
    OtExtMode::KosReceiver,
    OtExtMode::Kk13Sender,
    OtExtMode::KkrtSender,
    OtExtMode::OosSender,
    OtExtMode::OosReceiver,
    OtExtMode::OosSenderReverse,
    OtExtMode::OosReceiverReverse,
];

/// The OT-extension target's configuration, from its first three bytes: the mode is
/// `b0 % 11` ([`OT_EXT_MODES`]) and its parameter `b0 / 11` (KK13: η = parameter % 12, KKRT:
/// width = parameter % 10, both including values the extensions refuse); two batches of `b1`
/// and `b2 % 64` OTs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OtExtCase {
    /// The party under test.
    pub mode: OtExtMode,
    /// η of KK13 or the width of KKRT.
    pub param: u8,
    /// The sizes of the two batches.
    pub batches: [usize; 2],
}

impl OtExtCase {
    /// The case the first three input bytes pick.
    pub fn from_bytes(b: [u8; 3]) -> Self {
        let n = OT_EXT_MODES.len() as u8;
        OtExtCase {
            mode: OT_EXT_MODES[usize::from(b[0] % n)],
            param: b[0] / n,
            batches: [usize::from(b[1]), usize::from(b[2] % 64)],
        }
    }

    /// The selector bytes of this case (`param` below 23).
    pub fn to_bytes(self) -> [u8; 3] {
        let n = OT_EXT_MODES.len() as u8;
        let mode = OT_EXT_MODES
            .iter()
            .position(|&m| m == self.mode)
            .unwrap_or(0) as u8;
        [
            mode + n * self.param.min(22),
            self.batches[0].min(255) as u8,
            self.batches[1].min(63) as u8,
        ]
    }

    fn eta(self) -> u32 {
        u32::from(self.param % 12)
    }

    fn width(self) -> usize {
        usize::from(self.param % 10)
    }
}

/// KK13 choices below 2^η.
fn kk13_choices(n: usize, eta: u32) -> Vec<u32> {
    let mask = (1u64 << eta.min(31)) - 1;
    (0..n as u64).map(|i| ((i * 7 + 3) & mask) as u32).collect()
}

/// KKRT inputs.
fn kkrt_inputs(n: usize) -> Vec<Block> {
    (0..n as u128).map(|i| Block(i * 0x9e37 + 5)).collect()
}

/// Runs the extension party of `case` on `ch`.
pub(crate) fn run_ot_ext(
    case: OtExtCase,
    ch: &mut dyn blindjoin_core::channel::Channel,
    seed: u64,
) -> blindjoin_core::Result<()> {
    let mut r = rng(seed);
    let sid = &OT_SID;
    match case.mode {
        OtExtMode::IknpSender => {
            let mut s = IknpSender::setup(&mut base::Receiver::default(), ch, sid, &mut r)?;
            for m in case.batches {
                s.send_random(ch, &mut vec![[Block::ZERO; 2]; m])?;
            }
        }
        OtExtMode::IknpCorrelated | OtExtMode::IknpChosen => {
            let mut rc = IknpReceiver::setup(&mut base::Sender::default(), ch, sid, &mut r)?;
            for m in case.batches {
                let mut out = vec![Block::ZERO; m];
                if case.mode == OtExtMode::IknpCorrelated {
                    rc.receive_correlated(ch, &choices(m), &mut out)?;
                } else {
                    rc.receive_chosen(ch, &choices(m), &mut out)?;
                }
            }
        }
        OtExtMode::KosSender => {
            let mut s = KosSender::setup(&mut base::Receiver::default(), ch, sid, &mut r)?;
            for m in case.batches {
                s.send_random(ch, &mut vec![[Block::ZERO; 2]; m])?;
            }
        }
        OtExtMode::KosReceiver => {
            let mut rc = KosReceiver::setup(&mut base::Sender::default(), ch, sid, &mut r)?;
            for m in case.batches {
                rc.receive_random(ch, &choices(m), &mut vec![Block::ZERO; m])?;
            }
        }
        OtExtMode::Kk13Sender => {
            let mut s =
                Kk13Sender::setup(&mut base::Receiver::default(), case.eta(), ch, sid, &mut r)?;
            for m in case.batches {
                let out = s.send_random(ch, m)?;
                s.recycle(out);
            }
        }
        OtExtMode::KkrtSender => {
            let mut s = KkrtSender::setup(
                &mut base::Receiver::default(),
                case.width(),
                ch,
                sid,
                &mut r,
            )?;
            for m in case.batches {
                let out = s.send(ch, m)?;
                s.recycle(out);
            }
        }
        OtExtMode::OosSender => {
            let base = &mut KosBase(base::Sender::default());
            let s = OosSender::setup(base, ch, sid, &mut r)?.named(rr17_de::FORWARD);
            oos_send(s, case.batches, ch)?;
        }
        OtExtMode::OosReceiver => {
            let base = &mut KosBase(base::Receiver::default());
            let rc = OosReceiver::setup(base, ch, sid, &mut r)?.named(rr17_de::FORWARD);
            oos_receive(rc, case.batches, ch)?;
        }
        OtExtMode::OosSenderReverse => {
            let (choices, keys) = oos_reverse_choices();
            let s = OosSender::from_base(&choices, &keys, rr17_de::REVERSE, sid, &mut r)?;
            oos_send(s, case.batches, ch)?;
        }
        OtExtMode::OosReceiverReverse => {
            let pairs = oos_reverse_pairs();
            let rc = OosReceiver::from_base(&pairs, rr17_de::REVERSE, sid, &mut r)?;
            oos_receive(rc, case.batches, ch)?;
        }
    }
    Ok(())
}

/// The 512 fixed base-OT key pairs of the OOS16 modes on given base OTs.
fn oos_reverse_pairs() -> Vec<[[u8; 16]; 2]> {
    (0..512u128)
        .map(|j| {
            let key = |b: u128| {
                Block((2 * j + b).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed).to_bytes()
            };
            [key(0), key(1)]
        })
        .collect()
}

/// The OOS16 sender's side of [`oos_reverse_pairs`]: its choices s and the keys it chose.
fn oos_reverse_choices() -> (Vec<bool>, Vec<[u8; 16]>) {
    let s = choices(512);
    let keys = oos_reverse_pairs()
        .into_iter()
        .zip(&s)
        .map(|(pair, &c)| pair[usize::from(c)])
        .collect();
    (s, keys)
}

/// OOS16 inputs (at most 76 bits).
fn oos_inputs(n: usize) -> Vec<Block> {
    (0..n as u128).map(|i| Block(i * 0x9e37 + 5)).collect()
}

/// An OOS16 sender's batches of `batches` instances.
fn oos_send(
    mut s: OosSender,
    batches: [usize; 2],
    ch: &mut dyn blindjoin_core::channel::Channel,
) -> blindjoin_core::Result<()> {
    for m in batches {
        let out = s.send(ch, m)?;
        s.recycle(out);
    }
    Ok(())
}

/// An OOS16 receiver's batches of `batches` instances, every output wanted.
fn oos_receive(
    mut rc: OosReceiver,
    batches: [usize; 2],
    ch: &mut dyn blindjoin_core::channel::Channel,
) -> blindjoin_core::Result<()> {
    for m in batches {
        let wanted: Vec<usize> = (0..m).collect();
        rc.receive(ch, &oos_inputs(m), &wanted, &mut vec![Block::ZERO; m])?;
    }
    Ok(())
}

/// The peer's side of [`run_ot_ext`] (for recorded seeds).
pub(crate) fn run_ot_ext_peer(
    case: OtExtCase,
    ch: &mut dyn blindjoin_core::channel::Channel,
    seed: u64,
) -> blindjoin_core::Result<()> {
    use blindjoin_ot::ext::kk13::Kk13Receiver;
    use blindjoin_ot::ext::kkrt::KkrtReceiver;
    let mut r = rng(seed);
    let sid = &OT_SID;
    match case.mode {
        OtExtMode::IknpSender => {
            let mut rc = IknpReceiver::setup(&mut base::Sender::default(), ch, sid, &mut r)?;
            for m in case.batches {
                rc.receive_random(ch, &choices(m), &mut vec![Block::ZERO; m])?;
            }
        }
        OtExtMode::IknpCorrelated | OtExtMode::IknpChosen => {
            let mut s = IknpSender::setup(&mut base::Receiver::default(), ch, sid, &mut r)?;
            for m in case.batches {
                if case.mode == OtExtMode::IknpCorrelated {
                    s.send_correlated(ch, Block(0x5eed), &mut vec![Block::ZERO; m])?;
                } else {
                    let messages: Vec<[Block; 2]> =
                        (0..m as u128).map(|i| [Block(i), Block(!i)]).collect();
                    s.send_chosen(ch, &messages)?;
                }
            }
        }
        OtExtMode::KosSender => {
            let mut rc = KosReceiver::setup(&mut base::Sender::default(), ch, sid, &mut r)?;
            for m in case.batches {
                rc.receive_random(ch, &choices(m), &mut vec![Block::ZERO; m])?;
            }
        }
        OtExtMode::KosReceiver => {
            let mut s = KosSender::setup(&mut base::Receiver::default(), ch, sid, &mut r)?;
            for m in case.batches {
                s.send_random(ch, &mut vec![[Block::ZERO; 2]; m])?;
            }
        }
        OtExtMode::Kk13Sender => {
            let eta = case.eta();
            let mut rc = Kk13Receiver::setup(&mut base::Sender::default(), eta, ch, sid, &mut r)?;
            for m in case.batches {
                rc.receive_random(ch, &kk13_choices(m, eta), &mut vec![Block::ZERO; m])?;
            }
        }
        OtExtMode::KkrtSender => {
            let w = case.width();
            let mut rc = KkrtReceiver::setup(&mut base::Sender::default(), w, ch, sid, &mut r)?;
            for m in case.batches {
                rc.receive(ch, &kkrt_inputs(m), &mut vec![Block::ZERO; m])?;
            }
        }
        OtExtMode::OosSender => {
            let base = &mut KosBase(base::Receiver::default());
            let rc = OosReceiver::setup(base, ch, sid, &mut r)?.named(rr17_de::FORWARD);
            oos_receive(rc, case.batches, ch)?;
        }
        OtExtMode::OosReceiver => {
            let base = &mut KosBase(base::Sender::default());
            let s = OosSender::setup(base, ch, sid, &mut r)?.named(rr17_de::FORWARD);
            oos_send(s, case.batches, ch)?;
        }
        OtExtMode::OosSenderReverse => {
            let pairs = oos_reverse_pairs();
            let rc = OosReceiver::from_base(&pairs, rr17_de::REVERSE, sid, &mut r)?;
            oos_receive(rc, case.batches, ch)?;
        }
        OtExtMode::OosReceiverReverse => {
            let (choices, keys) = oos_reverse_choices();
            let s = OosSender::from_base(&choices, &keys, rr17_de::REVERSE, sid, &mut r)?;
            oos_send(s, case.batches, ch)?;
        }
    }
    Ok(())
}

/// IKNP, KOS, KK13, KKRT and OOS16 in the roles that read the peer's messages, against frames
/// from the input (after three selector bytes, [`OtExtCase`]).
pub fn fuzz_ot_ext(data: &[u8]) -> Outcome {
    let Some((sel, rest)) = data.split_first_chunk::<3>() else {
        return Ok(());
    };
    let case = OtExtCase::from_bytes(*sel);
    outcome(against(split(rest), |ch| run_ot_ext(case, ch, OURS_SEED)))
}

// ---------------------------------------------------------------------------------------------
// CLI input

/// The normalisations an input target's selector picks from.
const KINDS: [Normalize; 6] = [
    Normalize::None,
    Normalize::Trim,
    Normalize::Nfc,
    Normalize::Lower,
    Normalize::Email,
    Normalize::Phone,
];

/// The columns the CSV target's selector picks from.
const COLUMNS: [&str; 4] = ["email", " email ", "id", "missing"];

/// The normaliser of an input target's selector byte: kind `b % 6`, country code 44 if
/// `(b / 6)` is odd.
fn normalizer(b: u8) -> Normalizer {
    Normalizer {
        kind: KINDS[usize::from(b % 6)],
        country_code: ((b / 6) % 2 == 1).then(|| "44".to_owned()),
    }
}

fn read(column: Option<&str>, sel: u8, content: &[u8]) -> Outcome {
    let normalizer = normalizer(sel);
    let columns: Vec<String> = column
        .map(|c| c.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let spec = InputSpec {
        path: Path::new("fuzz-input"),
        format: None,
        columns: &columns,
        normalizer: &normalizer,
    };
    outcome(read_input_from(&spec, content).map(|t| t.keyed.rows_of_items(&[0, 1, 3])))
}

/// `read_input_from` in CSV mode: the first byte picks the normalisation ([`normalizer`]) and,
/// with `(b / 12) % 4`, the column (from 240: the composite key `id,email`); the rest is the
/// file.
pub fn fuzz_csv(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    // Selectors from 240 read a composite key of two columns.
    let column = if sel >= 240 {
        "id,email"
    } else {
        COLUMNS[usize::from(sel / 12) % 4]
    };
    read(Some(column), sel, rest)
}

/// `read_input_from` in lines mode: the first byte picks the normalisation, the rest is the
/// file.
pub fn fuzz_lines(data: &[u8]) -> Outcome {
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    read(None, sel, rest)
}

// ---------------------------------------------------------------------------------------------
// Link hello and the end-of-run confirmation

/// The link hello check on `data` as the peer's link hello frame.
pub fn fuzz_link(data: &[u8]) -> Outcome {
    outcome(blindjoin_core::transport::check_link_hello(data))
}

/// The end-of-run confirmation (`blindjoin_core::finish`): a selector byte (even: we are the
/// sender, odd: the receiver), then the peer's frames.
pub fn fuzz_finish(data: &[u8]) -> Outcome {
    use blindjoin_core::channel::transcript::Transcript;
    use blindjoin_core::finish;
    let Some((&sel, rest)) = data.split_first() else {
        return Ok(());
    };
    outcome(against(split(rest), |ch| {
        let mut t = Transcript::new(ch);
        if sel % 2 == 0 {
            finish::sender_confirm(&mut t)
        } else {
            finish::receiver_confirm(&mut t, None)?;
            finish::receiver_final(&mut t, None)
        }
    }))
}
