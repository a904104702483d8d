//! What the two circuit-based PSI protocols (`circuit_gmw`, `circuit_yao`) share: the
//! short-domain mapping of items to σ-bit values (PSZ14 App. A), the inputs each party gives
//! the sort-compare-shuffle circuit (`crate::circuit::scs`), and how the receiver reads its
//! result back.
//!
//! **Short domain** (PSZ14 App. A). n items mapped at random into a domain of 2^d values
//! collide with probability about n²/2^(d+1), so d = 2·log2 n − 1 + λ keeps the n1 + n2 items
//! of both parties collision-free except with probability 2^-λ ([`derived_sigma`]: 73 bits at
//! n1 = n2 = 2^16 and λ = 40). An item's value is its 128-bit hash reduced into 1..2^σ
//! ([`short_value`]): 0 is kept out of the domain because the circuit's compare stage outputs
//! 0 where a lane holds no match. The map is public and the same in every run: the items are
//! already hashes under the run's key normalisation, and the circuit protocols' security does
//! not rest on it. PSZ14's experiments instead take σ = 32 for any n; a σ below the derived one
//! is the caller's explicit choice ([`crate::RunOptions::sigma`]) and needs
//! [`crate::RunOptions::allow_weak`], since then two items collide, and the receiver reports a
//! false match, with probability up to (n1 + n2)²/2^(σ+1).
//!
//! **Collisions within a set.** Each party gives the circuit its distinct values only, in
//! ascending order (the merger needs each side sorted and the compare stage needs each side's
//! values distinct); the receiver keeps which of its items have each value and reports all of
//! them when the value is matched.

use crate::circuit::count::Count;
use crate::circuit::gadgets::Comparator;
use crate::circuit::scs::{scs_cardinality, scs_intersection, scs_sum, shuffle_lanes};
use crate::circuit::waksman::{waksman_switch_count, waksman_switches};
use crate::circuit::{Backend, Word};
use crate::protocol::Reference;
use crate::protocols::common::set_size;
use crate::run::Run;
use crate::{Aggregate, ReceiverOutput, ResultKind};
use blindjoin_core::channel::{Channel, recv_msg, send_msg};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use rand::Rng;
use rand::seq::SliceRandom;

/// Huang, Evans, Katz (NDSS 2012), the sort-compare-shuffle circuit.
pub(crate) const HEK12: Reference = Reference {
    tag: "HEK12",
    authors: "Huang, Evans, Katz",
    title: "Private Set Intersection: Are Garbled Circuits Better than Custom Protocols?",
    venue: "NDSS 2012",
    part: "the sort-compare-shuffle circuit (bitonic merge, neighbour compare, Waksman shuffle)",
};

/// The sender's message after the handshake: its number of distinct σ-bit values.
pub const MSG_SENDER_SETUP: &str = "the sender's number of distinct σ-bit values";

/// The receiver's message after the handshake: its number of distinct σ-bit values.
pub const MSG_RECEIVER_SETUP: &str = "the receiver's number of distinct σ-bit values";

/// The handshake parameter of σ's rule: the requested σ, or PSZ14 App. A's derivation.
pub(crate) fn sigma_param(requested: Option<u32>) -> String {
    match requested {
        Some(s) => s.to_string(),
        None => "ceil(2*log2(n1+n2)-1+lambda)".into(),
    }
}

/// Sends this party's number of distinct values and receives the peer's, which must lie in
/// 1..=its set size (0 for an empty set). Returns (n_r, n_s): the receiver's and the sender's.
pub(crate) fn exchange_setup<C: Channel + ?Sized>(
    ch: &mut C,
    role: Role,
    mine: usize,
    n1: u64,
    n2: u64,
) -> Result<(usize, usize)> {
    let (own, peer, peer_size) = match role {
        Role::Receiver => (MSG_RECEIVER_SETUP, MSG_SENDER_SETUP, n2),
        Role::Sender => (MSG_SENDER_SETUP, MSG_RECEIVER_SETUP, n1),
    };
    send_msg(ch, own, &(mine as u64))?;
    let theirs: u64 = recv_msg(ch, peer, 10)?;
    let low = u64::from(peer_size > 0);
    if theirs < low || theirs > peer_size {
        return Err(Error::malformed(
            peer,
            format!("{theirs} distinct values for a set of {peer_size}"),
        ));
    }
    let theirs = set_size(theirs)?;
    Ok(match role {
        Role::Receiver => (mine, theirs),
        Role::Sender => (theirs, mine),
    })
}

/// An upper bound on the bytes of the GMW triples of `shape`'s circuit: about (L/2)·log2 L
/// comparators of 3σ scalar AND gates, 3 bits each (L = n_s + n_r), checked against the
/// memory budget before anything is computed.
pub(crate) fn triple_bytes_bound(shape: &Shape) -> u64 {
    let l = (shape.n_s + shape.n_r) as u64;
    let log = u64::from(crate::params::ceil_log2(u128::from(l)).max(1));
    (l * log).saturating_mul(shape.sigma as u64 + VALUE_BITS as u64) * 9 / 16
}

/// An upper bound on the bytes of a garbled circuit's live wire labels for `shape`: 16 bytes
/// per wire, four words of L = n_s + n_r lanes of the sender's planes alive at once (the
/// merger's input, its two operands and its output), checked against the memory budget before
/// anything is computed.
pub(crate) fn label_bytes_bound(shape: &Shape) -> u64 {
    let l = (shape.n_s + shape.n_r) as u64;
    l.saturating_mul(shape.sender_planes() as u64)
        .saturating_mul(64)
}

/// The largest σ: values are held as `u128`.
pub const MAX_SIGMA: u32 = 128;

/// PSZ14 App. A's d = 2·log2 n − 1 + λ for n = n1 + n2 items, rounded up (λ for n ≤ 1, at
/// least 1): the bit length at which no two of the n items collide except with probability
/// 2^-λ.
pub fn derived_sigma(lambda: u32, n1: u64, n2: u64) -> u32 {
    let n = n1 as f64 + n2 as f64;
    if n <= 1.0 {
        return lambda.max(1);
    }
    let d = (2.0 * n.log2() - 1.0 + f64::from(lambda)).ceil();
    // At most 2·65 − 1 + 80 bits for the sizes the handshake admits.
    (d as u32).max(1)
}

/// The σ of a run: the caller's `requested` one, or [`derived_sigma`]; a requested σ below the
/// derived one only with `allow_weak`. Errors name `sigma`.
pub fn run_sigma(
    requested: Option<u32>,
    allow_weak: bool,
    lambda: u32,
    n1: u64,
    n2: u64,
) -> Result<u32> {
    let derived = derived_sigma(lambda, n1, n2);
    let sigma = requested.unwrap_or(derived);
    let bad = |reason: String| {
        Err(Error::InvalidParam {
            field: "sigma",
            reason,
        })
    };
    if !(1..=MAX_SIGMA).contains(&sigma) {
        return bad(format!(
            "σ = {sigma} bits is outside 1..={MAX_SIGMA} (the derived σ for these sizes and λ is \
             {derived})"
        ));
    }
    if sigma < derived && !allow_weak {
        return bad(format!(
            "σ = {sigma} bits is below the {derived} bits that keep {} items collision-free \
             except with probability 2^-λ; allow weak parameters (--allow-weak) to run anyway",
            u128::from(n1) + u128::from(n2)
        ));
    }
    Ok(sigma)
}

/// The σ-bit value of `item`: its first 16 bytes as a little-endian integer x, mapped to
/// x mod (2^σ − 1) + 1, in 1..2^σ (for σ = 128: x, or 1 for x = 0).
pub fn short_value(item: &Item, sigma: u32) -> u128 {
    let x = u128::from_le_bytes(item.0);
    if sigma >= 128 {
        x.max(1)
    } else {
        x % ((1u128 << sigma) - 1) + 1
    }
}

/// A party's circuit input: its distinct σ-bit values in ascending order, and for each the
/// indices of its items that have it.
pub struct ShortSet {
    /// The distinct values, ascending.
    pub values: Vec<u128>,
    /// `owners[k]`: the indices of the items whose value is `values[k]`, ascending.
    pub owners: Vec<Vec<usize>>,
}

impl ShortSet {
    /// Maps `items` to σ bits and groups equal values.
    pub fn new(items: &[Item], sigma: u32) -> ShortSet {
        let mut pairs: Vec<(u128, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, it)| (short_value(it, sigma), i))
            .collect();
        pairs.sort_unstable();
        let mut values: Vec<u128> = Vec::with_capacity(pairs.len());
        let mut owners: Vec<Vec<usize>> = Vec::with_capacity(pairs.len());
        for (v, i) in pairs {
            match values.last() {
                Some(&last) if last == v => {
                    if let Some(o) = owners.last_mut() {
                        o.push(i);
                    }
                }
                _ => {
                    values.push(v);
                    owners.push(vec![i]);
                }
            }
        }
        ShortSet { values, owners }
    }

    /// The sorted indices of the items whose value is among `matched` (values not in the set,
    /// and 0, are ignored).
    pub fn indices_of(&self, matched: &[u128]) -> Vec<usize> {
        let mut out: Vec<usize> = matched
            .iter()
            .filter_map(|v| self.values.binary_search(v).ok())
            .flat_map(|k| self.owners[k].iter().copied())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Bits of each sender value in a [`ResultKind::Sum`] run: values lie in 0..2^32, and the sum
/// over n2 of them has 32 + ⌈log2(n1 + n2 − 1)⌉ bits.
pub const VALUE_BITS: usize = 32;

/// The public shape of a run's circuit: what it computes, σ, and each side's number of
/// distinct values (its lanes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// What the receiver learns.
    pub result: ResultKind,
    /// Bits per value.
    pub sigma: usize,
    /// The sender's distinct values.
    pub n_s: usize,
    /// The receiver's distinct values.
    pub n_r: usize,
}

impl Shape {
    /// The planes of the sender's input word: σ, and [`VALUE_BITS`] of payload in a sum.
    pub fn sender_planes(&self) -> usize {
        match self.result {
            ResultKind::Sum => self.sigma + VALUE_BITS,
            _ => self.sigma,
        }
    }

    /// The sender's Waksman switches (its private permutation of the output lanes): only when
    /// the receiver learns the intersection.
    pub fn switches(&self) -> usize {
        match self.result {
            ResultKind::Intersection => waksman_switch_count(shuffle_lanes(self.n_s, self.n_r)),
            _ => 0,
        }
    }

    /// The shape a traffic formula assumes for `s`: the intersection, σ as given (weak or
    /// not) else derived from the sizes and λ, every item's value distinct.
    pub(crate) fn of_sizes(s: &crate::protocol::Sizes) -> Result<Shape> {
        let sigma = run_sigma(s.sigma, true, s.lambda, s.n_recv, s.n_send)?;
        Ok(Shape {
            result: ResultKind::Intersection,
            sigma: sigma as usize,
            n_s: set_size(s.n_send)?,
            n_r: set_size(s.n_recv)?,
        })
    }

    /// The output's lanes.
    pub fn output_lanes(&self) -> usize {
        match self.result {
            ResultKind::Intersection => shuffle_lanes(self.n_s, self.n_r),
            _ => 1,
        }
    }
}

/// Evaluates the run's circuit on inputs already in the backend: `sender` (σ key planes,
/// then the payload in a sum), `receiver` (σ planes), `switches` (intersection only).
/// Intersection: PSZ14 App. D.1's merge, compare and Waksman shuffle, σ planes in
/// [`Shape::output_lanes`] lanes, 0 in lanes without a match. Cardinality: the compare
/// stage's flags counted. Sum: the merge carries the sender's values (the receiver's payload
/// is the constant 0) and the matched ones are added up.
pub fn evaluate<B: Backend>(
    b: &mut B,
    shape: &Shape,
    cmp: Comparator,
    sender: &[B::Bits],
    receiver: &[B::Bits],
    switches: Option<&B::Bits>,
) -> Result<Word<B>> {
    match shape.result {
        ResultKind::Intersection => {
            let Some(sw) = switches else {
                return Err(Error::InvalidParam {
                    field: "switches",
                    reason: "an intersection circuit needs the sender's switches".into(),
                });
            };
            scs_intersection(b, cmp, sender, receiver, sw)
        }
        ResultKind::Cardinality => scs_cardinality(b, cmp, sender, receiver),
        ResultKind::Sum => {
            let lanes = receiver.first().map_or(shape.n_r, |r| b.lanes(r));
            let mut full: Word<B> = receiver.iter().map(|r| b.concat(&[r])).collect();
            full.extend((0..VALUE_BITS).map(|_| b.constant(false, lanes)));
            scs_sum(b, cmp, sender, &full, shape.sigma)
        }
    }
}

/// The gates of the run's circuit, counted without evaluating it.
pub fn count(shape: &Shape, cmp: Comparator) -> Result<Count> {
    let mut c = Count::new();
    let sender = vec![shape.n_s; shape.sender_planes()];
    let receiver = vec![shape.n_r; shape.sigma];
    let switches = shape.switches();
    evaluate(&mut c, shape, cmp, &sender, &receiver, Some(&switches))?;
    Ok(c)
}

/// The receiver's output from the revealed output planes: the items whose values came out
/// (intersection), or the one output value (cardinality, sum).
pub(crate) fn receiver_output(
    run: Run<'_>,
    set: &ShortSet,
    shape: &Shape,
    planes: &[Vec<u64>],
) -> ReceiverOutput {
    let values = values_of(planes, shape.output_lanes());
    let first = values.first().copied().unwrap_or(0);
    match shape.result {
        ResultKind::Intersection => run.receiver_output(set.indices_of(&values)),
        ResultKind::Cardinality => run.receiver_aggregate(Aggregate::Cardinality(first as u64)),
        ResultKind::Sum => run.receiver_aggregate(Aggregate::Sum(first)),
    }
}

/// Bit b of every value, packed 64 lanes per word (lane i at bit i%64 of word i/64), for the
/// `bits` low bits b.
pub fn planes(values: &[u128], bits: usize) -> Vec<Vec<u64>> {
    let words = values.len().div_ceil(64);
    (0..bits)
        .map(|b| {
            let mut plane = vec![0u64; words];
            for (i, v) in values.iter().enumerate() {
                plane[i / 64] |= (((v >> b) & 1) as u64) << (i % 64);
            }
            plane
        })
        .collect()
}

/// The inverse of [`planes`]: the value of each of `lanes` lanes (planes beyond 128 ignored).
pub fn values_of(planes: &[Vec<u64>], lanes: usize) -> Vec<u128> {
    (0..lanes)
        .map(|i| {
            planes
                .iter()
                .take(128)
                .enumerate()
                .fold(0u128, |v, (b, p)| {
                    let bit = p.get(i / 64).map_or(0, |w| (w >> (i % 64)) & 1);
                    v | (u128::from(bit) << b)
                })
        })
        .collect()
}

/// Packs bits, 64 per word.
pub fn pack(bits: &[bool]) -> Vec<u64> {
    let mut out = vec![0u64; bits.len().div_ceil(64)];
    for (i, &b) in bits.iter().enumerate() {
        out[i / 64] |= u64::from(b) << (i % 64);
    }
    out
}

/// The Waksman switches of a uniformly random permutation of `lanes` lanes (the sender's
/// shuffle, HEK12's third stage).
pub fn random_switches(lanes: usize, rng: &mut impl Rng) -> Result<Vec<bool>> {
    let mut perm: Vec<usize> = (0..lanes).collect();
    perm.shuffle(rng);
    waksman_switches(&perm)
}

/// The sender's input planes: its distinct values (σ planes) and, in a sum, the sum of its
/// items' `values` per distinct value ([`VALUE_BITS`] planes). Errors name `values`: none
/// given for a sum, fewer than the items, or a value (or the sum of the values of items that
/// share a σ-bit value) of 2^32 or more.
pub fn sender_planes(
    set: &ShortSet,
    shape: &Shape,
    values: Option<&[u64]>,
    items: usize,
) -> Result<Vec<Vec<u64>>> {
    let mut out = planes(&set.values, shape.sigma);
    if shape.result == ResultKind::Sum {
        let bad = |reason: String| Error::InvalidParam {
            field: "values",
            reason,
        };
        let values = values.ok_or_else(|| bad("a sum needs the sender's values".into()))?;
        if values.len() < items {
            return Err(bad(format!("{} values for {items} items", values.len())));
        }
        let limit = 1u128 << VALUE_BITS;
        let per_value: Vec<u128> = set
            .owners
            .iter()
            .map(|o| o.iter().map(|&i| u128::from(values[i])).sum::<u128>())
            .collect();
        if let Some(v) = per_value.iter().find(|&&v| v >= limit) {
            return Err(bad(format!(
                "{v} is not below 2^{VALUE_BITS} (the values of items with one σ-bit value \
                 are added)"
            )));
        }
        out.extend(planes(&per_value, VALUE_BITS));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn sigma_follows_psz_appendix_a() {
        // PSZ14 App. A's table: d = 2·log2 n − 1 − log2 p, with n the items mapped.
        assert_eq!(derived_sigma(20, 45, 45), 32);
        assert_eq!(derived_sigma(40, 45, 45), 52);
        assert_eq!(derived_sigma(20, 500_000, 500_000), 59);
        assert_eq!(derived_sigma(40, 500_000, 500_000), 79);
        // n1 = n2 = 2^16 at λ = 40: 2·17 − 1 + 40.
        assert_eq!(derived_sigma(40, 1 << 16, 1 << 16), 73);
        assert_eq!(derived_sigma(40, 0, 0), 40);
    }

    #[test]
    fn a_sigma_below_the_derived_one_needs_consent() {
        let n = 1 << 16;
        assert_eq!(run_sigma(None, false, 40, n, n).unwrap(), 73);
        assert_eq!(run_sigma(Some(80), false, 40, n, n).unwrap(), 80);
        let e = run_sigma(Some(32), false, 40, n, n).unwrap_err();
        assert!(
            matches!(e, Error::InvalidParam { field: "sigma", .. }),
            "{e}"
        );
        assert_eq!(run_sigma(Some(32), true, 40, n, n).unwrap(), 32);
        assert!(run_sigma(Some(0), true, 40, n, n).is_err());
        assert!(run_sigma(Some(129), true, 40, n, n).is_err());
        assert!(run_sigma(None, false, 80, 1 << 32, 1 << 32).is_err());
    }

    #[test]
    fn values_lie_in_one_to_two_to_the_sigma() {
        let zero = Item([0; 16]);
        let ones = Item([0xff; 16]);
        assert_eq!(short_value(&zero, 8), 1);
        assert_eq!(short_value(&ones, 128), u128::MAX);
        assert_eq!(short_value(&zero, 128), 1);
        for s in [1, 2, 7, 32, 73, 127] {
            for it in [zero, ones, Item([0x5a; 16])] {
                let v = short_value(&it, s);
                assert!(v >= 1 && v < (1u128 << s), "σ = {s}: {v}");
            }
        }
    }

    use crate::circuit::plain::{Plain, PlainBits};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn plain_word(planes: &[Vec<u64>], lanes: usize) -> Vec<PlainBits> {
        planes
            .iter()
            .map(|p| {
                let bits: Vec<bool> = (0..lanes)
                    .map(|i| (p[i / 64] >> (i % 64)) & 1 == 1)
                    .collect();
                PlainBits::from_bools(&bits)
            })
            .collect()
    }

    fn plain_planes(word: &[PlainBits]) -> Vec<Vec<u64>> {
        word.iter().map(|b| pack(&b.to_bools())).collect()
    }

    /// Items i < 200 for the receiver, 120 ≤ i < 420 for the sender: 80 in common.
    fn items(range: std::ops::Range<u32>) -> Vec<Item> {
        range
            .map(|i| blindjoin_core::item::items_from_records(&[i.to_le_bytes()])[0])
            .collect()
    }

    #[test]
    fn planes_round_trip() {
        let vals: Vec<u128> = (0..130u128)
            .map(|i| i * 0x1234_5678_9abc_def1 + 7)
            .collect();
        assert_eq!(values_of(&planes(&vals, 128), vals.len()), vals);
        assert_eq!(values_of(&planes(&[5, 6], 2), 2), vec![1, 2]);
    }

    #[test]
    fn every_result_in_the_clear() {
        let (r_items, s_items) = (items(0..200), items(120..420));
        let sigma = 50;
        let (rs, ss) = (
            ShortSet::new(&r_items, sigma),
            ShortSet::new(&s_items, sigma),
        );
        let values: Vec<u64> = (0..300u64).map(|i| i * 1000 + 1).collect();
        let mut rng = StdRng::seed_from_u64(3);
        for result in [
            ResultKind::Intersection,
            ResultKind::Cardinality,
            ResultKind::Sum,
        ] {
            for cmp in [Comparator::Size, Comparator::Depth] {
                let shape = Shape {
                    result,
                    sigma: sigma as usize,
                    n_s: ss.values.len(),
                    n_r: rs.values.len(),
                };
                let sp = sender_planes(&ss, &shape, Some(&values), s_items.len()).unwrap();
                assert_eq!(sp.len(), shape.sender_planes());
                let sender = plain_word(&sp, shape.n_s);
                let receiver = plain_word(&planes(&rs.values, shape.sigma), shape.n_r);
                let sw = PlainBits::from_bools(
                    &random_switches(shape.output_lanes(), &mut rng).unwrap(),
                );
                let sw = (shape.switches() > 0).then_some(&sw);
                let out = evaluate(&mut Plain, &shape, cmp, &sender, &receiver, sw).unwrap();
                let out = values_of(&plain_planes(&out), shape.output_lanes());
                let counted = count(&shape, cmp).unwrap();
                assert!(counted.and_gates > 0);
                match result {
                    ResultKind::Intersection => {
                        assert_eq!(out.len(), 250);
                        assert_eq!(out.iter().filter(|v| **v != 0).count(), 80);
                        assert_eq!(rs.indices_of(&out), (120..200).collect::<Vec<_>>());
                    }
                    ResultKind::Cardinality => assert_eq!(out, vec![80]),
                    // The sender's items 0..80 (records 120..200) are matched.
                    ResultKind::Sum => {
                        assert_eq!(out, vec![(0..80u128).map(|i| i * 1000 + 1).sum::<u128>()]);
                    }
                }
            }
        }
    }

    #[test]
    fn sum_values_are_checked() {
        let s_items = items(0..3);
        let ss = ShortSet::new(&s_items, 40);
        let shape = Shape {
            result: ResultKind::Sum,
            sigma: 40,
            n_s: 3,
            n_r: 1,
        };
        for bad in [None, Some(&[1u64, 2][..]), Some(&[1, 1 << 32, 3][..])] {
            let e = sender_planes(&ss, &shape, bad, 3).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::InvalidParam {
                        field: "values",
                        ..
                    }
                ),
                "{e}"
            );
        }
        assert_eq!(
            sender_planes(&ss, &shape, Some(&[1, 2, 3]), 3)
                .unwrap()
                .len(),
            72
        );
    }

    #[test]
    fn equal_values_are_grouped_and_read_back() {
        // At σ = 1 every item has the value 1.
        let items: Vec<Item> = (0u8..5).map(|i| Item([i; 16])).collect();
        let s = ShortSet::new(&items, 1);
        assert_eq!(s.values, vec![1]);
        assert_eq!(s.owners, vec![vec![0, 1, 2, 3, 4]]);
        assert_eq!(s.indices_of(&[0, 1, 1]), vec![0, 1, 2, 3, 4]);
        let s = ShortSet::new(&items, 64);
        assert_eq!(s.values.len(), 5);
        assert!(s.values.windows(2).all(|w| w[0] < w[1]));
        let v3 = short_value(&items[3], 64);
        assert_eq!(s.indices_of(&[0, v3, 12345]), vec![3]);
    }
}
