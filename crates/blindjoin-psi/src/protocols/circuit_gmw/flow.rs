//! Both roles of `circuit_gmw` and `circuit_gmw_scalar` (the [module doc](super) has the
//! flow): the receiver is GMW's party 1, the sender party 0, and apart from who gives which
//! input and who learns the output their steps are the same.

use crate::circuit::gadgets::Comparator;
use crate::circuit::gmw::{self, BaseOts, Gmw, GmwParty, Shares, TripleCounts};
use crate::circuit::triples::{self, MAX_WIDTH};
use crate::protocol::{Message, Protocol};
use crate::protocols::circuit_psi::{self, Shape, ShortSet};
use crate::run::Run;
use crate::{ReceiverOutput, ResultKind, RunOptions, SenderOutput};
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use blindjoin_ot::base::{MSG_RECEIVER_POINTS, MSG_SENDER_POINT};
use blindjoin_ot::ext::iknp::MSG_U_COLUMNS;
use rand::CryptoRng;

/// The comparator of the sort stage: depth-optimised, as PSZ14 ran GMW (App. D.2).
pub(crate) const COMPARATOR: Comparator = Comparator::Depth;

/// How the multiplexers' AND gates are evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Triples {
    /// One vector multiplication triple per multiplexer (PSZ14 §3.2).
    Vector,
    /// One scalar triple per AND gate (plain GMW, PSZ14 Tab. 5 "GMW [1]").
    Scalar,
}

impl Triples {
    /// The name in the handshake parameters.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Triples::Vector => "vector",
            Triples::Scalar => "scalar",
        }
    }
}

/// The messages after the handshake, in order (S = the sender, GMW party 0); `circuit_gmw`'s
/// flow, and `circuit_gmw_scalar`'s without the vector openings.
macro_rules! flow {
    ($($vector:expr),*) => {
        [
            Message::sender(circuit_psi::MSG_SENDER_SETUP),
            Message::receiver(circuit_psi::MSG_RECEIVER_SETUP),
            Message::receiver(MSG_SENDER_POINT),
            Message::sender(MSG_RECEIVER_POINTS),
            Message::sender(triples::MSG_SENDER_POINT_REVERSE),
            Message::receiver(triples::MSG_RECEIVER_POINTS_REVERSE),
            Message::receiver(MSG_U_COLUMNS),
            Message::sender(triples::MSG_U_COLUMNS_REVERSE),
            Message::sender(gmw::MSG_INPUT_SHARES[0]),
            Message::receiver(gmw::MSG_INPUT_SHARES[1]),
            Message::sender(gmw::MSG_OPEN_AND[0]),
            Message::receiver(gmw::MSG_OPEN_AND[1]),
            $($vector,)*
            Message::sender(gmw::MSG_OUTPUT_SHARES[0]),
        ]
    };
}

/// `circuit_gmw`'s messages after the handshake.
pub(crate) const FLOW: [Message; 15] = flow!(
    Message::sender(gmw::MSG_OPEN_VECTOR[0]),
    Message::receiver(gmw::MSG_OPEN_VECTOR[1])
);

/// `circuit_gmw_scalar`'s messages after the handshake: no vector openings.
pub(crate) const FLOW_SCALAR: [Message; 13] = flow!();

/// The triples a run's circuit needs, as [`TripleCounts`]: its scalar AND gates, and one
/// vector triple per multiplexer lane and chunk of at most `width` wires, `width` the widest
/// multiplexer (at most [`MAX_WIDTH`]).
pub(crate) fn triple_counts(shape: &Shape, triples: Triples) -> Result<TripleCounts> {
    let count = circuit_psi::count(shape, COMPARATOR)?;
    let width = count
        .vector_triples
        .keys()
        .max()
        .copied()
        .unwrap_or(1)
        .clamp(1, MAX_WIDTH);
    let (vectors, wires) = count
        .vector_triples
        .iter()
        .fold((0u64, 0u64), |(v, w), (&k, &n)| {
            (v + n * k.div_ceil(width) as u64, w + n * k as u64)
        });
    Ok(match triples {
        Triples::Vector => TripleCounts {
            scalar: count.scalar_ands,
            vector: vectors,
            width,
            vectorised: true,
        },
        Triples::Scalar => TripleCounts {
            scalar: count.scalar_ands + wires,
            vector: 0,
            width,
            vectorised: false,
        },
    })
}

/// What a run holds once the setup messages are exchanged.
struct Prepared {
    set: ShortSet,
    shape: Shape,
    counts: TripleCounts,
}

/// σ, the party's distinct values, the setup exchange and the triple counts.
fn prepare<C: Channel + ?Sized>(
    run: &Run<'_>,
    ch: &mut C,
    items: &[Item],
    role: Role,
    triples: Triples,
) -> Result<Prepared> {
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
    // The triples are the memory the peer's size commits before its data arrives.
    opts.check_memory("the GMW triples", circuit_psi::triple_bytes_bound(&shape))?;
    let counts = triple_counts(&shape, triples)?;
    Ok(Prepared { set, shape, counts })
}

/// The receiver: GMW party 1.
pub(crate) fn receive<C: Channel + ?Sized>(
    p: &'static Protocol,
    triples: Triples,
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, p, Role::Receiver, items.len(), opts, rng)?;
    let Prepared { set, shape, counts } = prepare(&run, ch, items, Role::Receiver, triples)?;
    run.lap("setup");
    let mut g = precompute(&run, ch, GmwParty::P1, &counts, rng)?;
    run.lap("triples");
    let sender = g.input_peer(shape.n_s, shape.sender_planes())?;
    let switches = match shape.result {
        ResultKind::Intersection => g.input_peer(shape.switches(), 1)?.pop(),
        _ => None,
    };
    let mine = g.input_own(shape.n_r, &circuit_psi::planes(&set.values, shape.sigma))?;
    let out = circuit_psi::evaluate(
        &mut g,
        &shape,
        COMPARATOR,
        &sender,
        &mine,
        switches.as_ref(),
    )?;
    let planes = g.reveal_own(&out)?;
    check_used(&g)?;
    run.lap("online");
    Ok(circuit_psi::receiver_output(run, &set, &shape, &planes))
}

/// The sender: GMW party 0.
pub(crate) fn send<C: Channel + ?Sized>(
    p: &'static Protocol,
    triples: Triples,
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, p, Role::Sender, items.len(), opts, rng)?;
    let Prepared { set, shape, counts } = prepare(&run, ch, items, Role::Sender, triples)?;
    let planes = circuit_psi::sender_planes(&set, &shape, opts.values.as_deref(), items.len())?;
    let switches = match shape.result {
        ResultKind::Intersection => Some(circuit_psi::pack(&circuit_psi::random_switches(
            shape.output_lanes(),
            rng,
        )?)),
        _ => None,
    };
    run.lap("setup");
    let mut g = precompute(&run, ch, GmwParty::P0, &counts, rng)?;
    run.lap("triples");
    let mine = g.input_own(shape.n_s, &planes)?;
    let sw: Option<Shares> = match &switches {
        None => None,
        Some(bits) => g
            .input_own(shape.switches(), std::slice::from_ref(bits))?
            .pop(),
    };
    let receiver = g.input_peer(shape.n_r, shape.sigma)?;
    let out = circuit_psi::evaluate(&mut g, &shape, COMPARATOR, &mine, &receiver, sw.as_ref())?;
    g.reveal_to_peer(&out)?;
    check_used(&g)?;
    run.lap("online");
    Ok(run.sender_output())
}

/// The triples of `counts` with the peer, over the run's base OT in both directions.
fn precompute<'c, C: Channel + ?Sized>(
    run: &Run<'_>,
    ch: &'c mut C,
    party: GmwParty,
    counts: &TripleCounts,
    rng: &mut impl CryptoRng,
) -> Result<Gmw<'c, C>> {
    let (mut bs, mut br) = (run.base_ot(), run.base_ot());
    let base = BaseOts {
        sender: &mut bs,
        receiver: &mut br,
    };
    Gmw::precompute(ch, party, &run.session.id, base, counts, rng)
}

/// Every precomputed triple was used: the counting pass and the evaluation agree.
fn check_used<C: Channel + ?Sized>(g: &Gmw<'_, C>) -> Result<()> {
    match g.remaining() {
        (0, 0) => Ok(()),
        (s, v) => Err(Error::InvalidParam {
            field: "triples",
            reason: format!("{s} scalar and {v} vector triples left over after the circuit"),
        }),
    }
}
