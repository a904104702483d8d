//! Both roles of `circuit_yao` (the [module doc](super) has the flow): the receiver
//! evaluates, the sender garbles.

use crate::circuit::gadgets::Comparator;
use crate::circuit::yao::{self, Evaluator, Garbler, Labels};
use crate::protocol::Message;
use crate::protocols::circuit_psi::{self, Shape, ShortSet};
use crate::run::Run;
use crate::{ReceiverOutput, ResultKind, RunOptions, SenderOutput};
use blindjoin_core::Result;
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_ot::base::{MSG_RECEIVER_POINTS, MSG_SENDER_POINT};
use blindjoin_ot::ext::iknp::{MSG_U_COLUMNS, MSG_Y_VALUES};
use rand::CryptoRng;

/// The comparator of the sort stage: size-optimised, as PSZ14 ran Yao (App. D.2).
pub(crate) const COMPARATOR: Comparator = Comparator::Size;

/// The messages after the handshake, in order (S = the sender, the garbler).
pub(crate) const FLOW: [Message; 10] = [
    Message::sender(circuit_psi::MSG_SENDER_SETUP),
    Message::receiver(circuit_psi::MSG_RECEIVER_SETUP),
    Message::sender(yao::MSG_CONSTANT_LABEL),
    Message::receiver(MSG_SENDER_POINT),
    Message::sender(MSG_RECEIVER_POINTS),
    Message::sender(yao::MSG_GARBLER_LABELS),
    Message::receiver(MSG_U_COLUMNS),
    Message::sender(MSG_Y_VALUES),
    Message::sender(yao::MSG_TABLES),
    Message::sender(yao::MSG_DECODING_BITS),
];

/// σ, the party's distinct values, the setup exchange, and the memory check: the labels of the
/// widest words (16 bytes per wire, a few words alive at once) follow the peer's size.
fn prepare<C: Channel + ?Sized>(
    run: &Run<'_>,
    ch: &mut C,
    items: &[Item],
    role: Role,
) -> Result<(ShortSet, Shape)> {
    let opts = run.opts;
    let (n1, n2) = run.sizes();
    let sigma = circuit_psi::run_sigma(opts.sigma, opts.allow_weak, run.session.lambda, n1, n2)?;
    let set = ShortSet::new(items, sigma);
    let (n_r, n_s) = circuit_psi::exchange_setup(ch, role, set.values.len(), n1, n2)?;
    let shape = Shape {
        result: opts.result,
        sigma: sigma as usize,
        n_s,
        n_r,
    };
    opts.check_memory(
        "the garbled circuit's wire labels",
        circuit_psi::label_bytes_bound(&shape),
    )?;
    Ok((set, shape))
}

/// Bit planes as the engine takes them: `out[p][i]` is bit p of lane i.
fn bool_planes(planes: &[Vec<u64>], lanes: usize) -> Vec<Vec<bool>> {
    planes
        .iter()
        .map(|p| {
            (0..lanes)
                .map(|i| (p[i / 64] >> (i % 64)) & 1 == 1)
                .collect()
        })
        .collect()
}

/// The receiver: the evaluator.
pub(crate) fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &super::PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let (set, shape) = prepare(&run, ch, items, Role::Receiver)?;
    run.lap("setup");
    let sid = run.session.id;
    let mut base = run.base_ot();
    let mut e = Evaluator::new(ch, &sid, &mut base, rng)?;
    let sender = e.input_peer(shape.n_s, shape.sender_planes())?;
    let switches: Option<Labels> = match shape.result {
        ResultKind::Intersection => e.input_peer(shape.switches(), 1)?.pop(),
        _ => None,
    };
    let own = circuit_psi::planes(&set.values, shape.sigma);
    let mine = e.input_own(&bool_planes(&own, shape.n_r))?;
    run.lap("inputs");
    let out = circuit_psi::evaluate(
        &mut e,
        &shape,
        COMPARATOR,
        &sender,
        &mine,
        switches.as_ref(),
    )?;
    let bits = e.reveal(&out)?;
    e.finish()?;
    run.lap("circuit");
    let planes: Vec<Vec<u64>> = bits.iter().map(|p| circuit_psi::pack(p)).collect();
    Ok(circuit_psi::receiver_output(run, &set, &shape, &planes))
}

/// The sender: the garbler.
pub(crate) fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &super::PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let (set, shape) = prepare(&run, ch, items, Role::Sender)?;
    let planes = circuit_psi::sender_planes(&set, &shape, opts.values.as_deref(), items.len())?;
    let switches = match shape.result {
        ResultKind::Intersection => Some(circuit_psi::random_switches(shape.output_lanes(), rng)?),
        _ => None,
    };
    run.lap("setup");
    let sid = run.session.id;
    let mut base = run.base_ot();
    let mut g = Garbler::new(ch, &sid, &mut base, rng)?;
    let mine = g.input_own(&bool_planes(&planes, shape.n_s))?;
    let sw: Option<Labels> = match switches {
        None => None,
        Some(bits) => g.input_own(&[bits])?.pop(),
    };
    let receiver = g.input_peer(shape.n_r, shape.sigma)?;
    run.lap("inputs");
    let out = circuit_psi::evaluate(&mut g, &shape, COMPARATOR, &mine, &receiver, sw.as_ref())?;
    g.reveal(&out)?;
    g.finish()?;
    run.lap("circuit");
    Ok(run.sender_output())
}
