//! The receiver's side of `rr17a` (see the module doc for the message flow).

use super::{
    MSG_CHALLENGE, MSG_COMMIT, MSG_OPENING, MSG_PERMUTATION, MSG_TAGS, OT_BATCH, PERM_FRAME,
    PROTOCOL, Positions, ItemPositions, TAG_LEN, commitment, hash_key, opened, recv_exact,
    open_bitmap, run_params, tag_hash, tag_into, PAR_ITEMS,
};
use crate::protocols::common::{TagTable, tag_from_bytes};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::block::as_words_mut;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::kos::KosReceiver;
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// log2 of the buckets of [`shuffle`].
const LOG_BUCKETS: u32 = 10;

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
///
/// Errors: the handshake's; `HashingFailed` if the cut-and-choose left too few unopened OTs for
/// the filter (probability at most 2^-λ); `Malformed` for a challenge of the wrong length; the
/// KOS extension's errors; the errors of reading the summary values.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    receive_with(ch, items, opts, rng, 1)
}

/// [`receive`] with `ones_factor` times the honest share of choices 1 (1 for an honest
/// receiver; the tests run a cheating receiver with more).
pub(crate) fn receive_with<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
    ones_factor: u64,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let sid = run.session.id;
    let n_send = run.session.sender_size;
    let p = run_params(run.session.kappa, run.session.lambda, items.len() as u64)?;
    let ots = usize::try_from(p.ots).map_err(|_| Error::InvalidParam {
        field: "receiver set size",
        reason: format!("{} OTs do not fit this machine", p.ots),
    })?;

    let (mut share, mut nonce) = (Zeroizing::new([0u8; 16]), Zeroizing::new([0u8; 16]));
    rng.fill_bytes(&mut share[..]);
    rng.fill_bytes(&mut nonce[..]);
    ch.send(MSG_COMMIT, &commitment(&sid, &share, &nonce))?;
    let mut ot = KosReceiver::setup(&mut run.malicious_base_ot(), ch, &sid, rng)?;
    run.lap("base OT");

    // Choice bits i.i.d. with P[1] = N_1 / N_ot: the means of the opened and unopened ones are
    // those of exactly N_1 ones, which is all the Chernoff bounds of the parameters use.
    let bound = ((u128::from(p.ones * ones_factor) << 32) / u128::from(p.ots.max(1))) as u64;
    let mut prg = AesPrg::new(Block::random(rng));
    let mut choices = Zeroizing::new(vec![0u64; ots.div_ceil(64)]);
    let mut msgs = Zeroizing::new(vec![Block::ZERO; ots]);
    let mut batch = Zeroizing::new(Vec::with_capacity(OT_BATCH.min(ots)));
    let mut words = Zeroizing::new(vec![0u8; 4 * OT_BATCH.min(ots)]);
    for start in (0..ots).step_by(OT_BATCH) {
        let len = OT_BATCH.min(ots - start);
        batch.clear();
        prg.fill_bytes(&mut words[..4 * len]);
        for (j, w) in (start..start + len).zip(words.chunks_exact(4)) {
            let c = u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]])) < bound;
            choices[j / 64] |= u64::from(c) << (j % 64);
            batch.push(c);
        }
        ot.receive_random(ch, &batch, &mut msgs[start..start + len])?;
        run.report("ot", (start + len) as u64, p.ots);
    }
    drop(batch);
    run.lap("ot");

    let challenge = recv_exact(ch, MSG_CHALLENGE, 32)?;
    let mut seed = [0u8; 16];
    seed.copy_from_slice(&challenge[..16]);
    let mut theirs = [0u8; 16];
    theirs.copy_from_slice(&challenge[16..]);
    let open = opened(Block::from_bytes(seed), p.ots, p.open_per_mille);
    let bit = |j: usize| choices[j / 64] >> (j % 64) & 1 == 1;
    let mut opening = vec![0u8; open.len().div_ceil(8)];
    let mut proof = Block::ZERO;
    for (k, &j) in open.iter().enumerate() {
        let j = j as usize;
        opening[k / 8] |= u8::from(bit(j)) << (k % 8);
        proof ^= msgs[j];
    }
    opening.extend_from_slice(&proof.to_bytes());
    opening.extend_from_slice(&share[..]);
    opening.extend_from_slice(&nonce[..]);
    ch.send(MSG_OPENING, &opening)?;

    // Only the messages of unopened OTs of choice 1 are needed from here: they move to the
    // front of `msgs` (in order; the q-th is found by its OT's rank among them), and the rest
    // of its memory, already mapped, holds π's sort.
    let live = unopened_words(&open, ots);
    let mut kept = 0;
    unopened(&live, &choices, |j, c| {
        if c {
            msgs[kept] = msgs[j as usize];
            kept += 1;
        }
    });
    let live_ones: Vec<u64> = live.iter().zip(choices.iter()).map(|(l, c)| l & c).collect();
    let mut live_rank = Vec::with_capacity(live_ones.len());
    let mut before = 0u32;
    for w in &live_ones {
        live_rank.push(before);
        before += w.count_ones();
    }
    let (kept_msgs, scratch) = msgs.split_at_mut(kept);
    run.lap("opening");

    let key = hash_key(&sid, &theirs, &share);
    let pos = Positions::new(&key, &p)?;
    let mut at = ItemPositions::of(&pos, items);
    let bits = usize::try_from(p.bits).unwrap_or(usize::MAX);
    let mut filter = vec![0u64; bits.div_ceil(64)];
    for (_, b) in at.entries() {
        filter[b as usize / 64] |= 1 << (b % 64);
    }
    run.lap("filter");
    let mut fresh = Vec::new();
    let map = Map::build(&filter, bits, &live, &choices, as_words_mut(scratch), &mut fresh, rng)?;
    drop(choices);
    run.lap("map");

    // Each position b of an item is a 1 of the filter, mapped to the OT of the 1s' order at
    // b's rank among the 1s. The receiver's own summary values are computed between the
    // frames of π, while the sender checks them.
    let mut rank = Vec::with_capacity(filter.len());
    let mut before = 0u32;
    for w in &filter {
        rank.push(before);
        before += w.count_ones();
    }
    let ones = map.ones_order();
    let th = tag_hash(&sid);
    let mut own = vec![0u8; items.len() * TAG_LEN];
    let per_frame = items.len().div_ceil(bits.div_ceil(PERM_FRAME).max(1)).max(1);
    let mut chunks = own.chunks_mut(per_frame * TAG_LEN).enumerate();
    let mut tags = |chunk: Option<(usize, &mut [u8])>| {
        if let Some((c, out)) = chunk {
            let (first, end) = (c * per_frame, c * per_frame + out.len() / TAG_LEN);
            at.map_items(first, end, |b| {
                let (w, s) = (b as usize / 64, b % 64);
                rank[w] + (filter[w] & ((1u64 << s) - 1)).count_ones()
            });
            at.map_items(first, end, |r| ones[r as usize]);
            at.map_items(first, end, |j| {
                let (w, s) = (j as usize / 64, j % 64);
                live_rank[w] + (live_ones[w] & ((1u64 << s) - 1)).count_ones()
            });
            let at = &at;
            out.par_chunks_mut(PAR_ITEMS * TAG_LEN)
                .enumerate()
                .for_each(|(d, out)| {
                    for (t, i) in out.chunks_exact_mut(TAG_LEN).zip(first + d * PAR_ITEMS..) {
                        let mask = at
                            .item(i)
                            .iter()
                            .fold(Block::ZERO, |m, &q| m ^ kept_msgs[q as usize]);
                        tag_into(&th, &items[i], mask, t);
                    }
                });
        }
    };
    map.send(
        &filter,
        bits,
        |frame| ch.send(MSG_PERMUTATION, frame),
        || tags(chunks.next()),
    )?;
    for chunk in chunks {
        tags(Some(chunk));
    }
    drop(map);
    drop(msgs);
    let mut table = TagTable::with_capacity(items.len());
    for (i, t) in own.chunks_exact(TAG_LEN).enumerate() {
        table.insert(tag_from_bytes(t), i as u32);
    }
    run.lap("tags");

    let mut hit = vec![false; items.len()];
    let mut reader = BulkReader::new(MSG_TAGS, TAG_LEN, n_send);
    while let Some(frame) = reader.next_frame(ch)? {
        for t in frame.chunks_exact(TAG_LEN) {
            let tag = tag_from_bytes(t);
            let mut confirm = |v: u32| own[v as usize * TAG_LEN..][..TAG_LEN] == *t;
            if let Some(v) = table.find(tag, &mut confirm) {
                hit[v as usize] = true;
            }
        }
    }
    let indices = hit
        .iter()
        .enumerate()
        .filter_map(|(i, &h)| h.then_some(i))
        .collect();
    run.lap("match");
    Ok(run.receiver_output(indices))
}

/// π, built by a counting sort: each unopened OT goes to one of 2^10 buckets of its choice
/// uniformly at random, each bucket is shuffled (Fisher-Yates, in cache), and the buckets of
/// each choice follow one another (Rao-Sandelius: a uniformly random order of each choice's
/// OTs). The first `set` OTs of choice 1 take the filter's 1s in order; the others of choice 1
/// are interleaved with those of choice 0 at uniformly random places, a uniformly random
/// order of the rest, whose first `bits − set` take the filter's 0s in order.
struct Map<'a> {
    /// The unopened OTs: those of choice 1 (in their order), then those of choice 0.
    all: &'a mut [u32],
    /// Unopened OTs of choice 1.
    ones: usize,
    /// 1s in the filter.
    set: usize,
    /// Over the order of the rest: bit t set if its t-th entry is an OT of choice 1.
    mixed: Vec<u64>,
}

impl<'a> Map<'a> {
    /// π in `scratch` if it holds the unopened OTs, else in `fresh`. `HashingFailed` if the
    /// cut-and-choose left too few unopened OTs.
    fn build(
        filter: &[u64],
        bits: usize,
        live: &[u64],
        choices: &[u64],
        scratch: &'a mut [u32],
        fresh: &'a mut Vec<u32>,
        rng: &mut impl CryptoRng,
    ) -> Result<Map<'a>> {
        const BUCKETS: usize = 1 << LOG_BUCKETS;
        let seed = Block::random(rng);
        let mut counts = vec![0usize; 2 * BUCKETS];
        let mut draw = Buckets::new(seed);
        unopened(live, choices, |_, c| {
            counts[usize::from(c) * BUCKETS + draw.next()] += 1;
        });
        let ones: usize = counts[BUCKETS..].iter().sum();
        let zeros: usize = counts[..BUCKETS].iter().sum();
        let set: usize = filter.iter().map(|w| w.count_ones() as usize).sum();
        if ones < set || ones + zeros < bits {
            return Err(Error::HashingFailed(format!(
                "the cut-and-choose left {ones} OTs of choice 1 for {set} filter bits and {} OTs \
                 for {bits} (probability at most 2^-λ)",
                ones + zeros
            )));
        }
        // Choice 1's buckets first, then choice 0's.
        let order: Vec<usize> = (BUCKETS..2 * BUCKETS).chain(0..BUCKETS).collect();
        let mut next = vec![0usize; 2 * BUCKETS];
        let mut at = 0;
        for &k in &order {
            next[k] = at;
            at += counts[k];
        }
        let all = if scratch.len() >= ones + zeros {
            &mut scratch[..ones + zeros]
        } else {
            fresh.resize(ones + zeros, 0);
            &mut fresh[..]
        };
        let mut draw = Buckets::new(seed);
        unopened(live, choices, |j, c| {
            let k = usize::from(c) * BUCKETS + draw.next();
            all[next[k]] = j;
            next[k] += 1;
        });
        let mut parts = Vec::with_capacity(order.len());
        let mut tail = &mut all[..];
        for &k in &order {
            let (part, rest) = tail.split_at_mut(counts[k]);
            if part.len() > 1 {
                parts.push((part, Block::random(rng)));
            }
            tail = rest;
        }
        parts.into_par_iter().for_each(|(part, seed)| {
            let mut words = Words::new(seed, 4 * part.len());
            for i in (1..part.len()).rev() {
                // A bucket holds far fewer than 2^32 OTs.
                let j = words.below32(i as u32 + 1) as usize;
                part.swap(i, j);
            }
        });

        // The places of the leftover 1s among the rest: a uniformly random subset of size
        // `ones − set` of `ones − set + zeros` places (or its complement, drawn when smaller).
        let (left, rest) = (ones - set, ones - set + zeros);
        let pick = left.min(rest - left);
        // One word more than the places: `send` reads the word at the place after the last.
        let mut mixed = vec![0u64; rest / 64 + 1];
        let mut words = Words::new(Block::random(rng), 8 * pick);
        let mut got = 0;
        while got < pick {
            let t = words.below(rest as u64) as usize;
            if mixed[t / 64] >> (t % 64) & 1 == 0 {
                mixed[t / 64] |= 1 << (t % 64);
                got += 1;
            }
        }
        if pick < left {
            for w in mixed.iter_mut() {
                *w = !*w;
            }
        }
        Ok(Map { all, ones, set, mixed })
    }

    /// The OTs of the filter's 1s, by rank.
    fn ones_order(&self) -> &[u32] {
        &self.all[..self.set]
    }

    /// Passes π(0) … π(bits − 1) to `sink` in frames of [`PERM_FRAME`] indices (u32,
    /// little-endian), calling `between` after each frame.
    fn send(
        &self,
        filter: &[u64],
        bits: usize,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
        mut between: impl FnMut(),
    ) -> Result<()> {
        // The next entry of each source: the OTs of choice 0, the leftover OTs of choice 1, the
        // OTs of the filter's 1s; chosen without branches (the filter's bits are random).
        let mut next = [self.ones, self.set, 0];
        let mut t = 0;
        let mut frame = Vec::with_capacity(4 * PERM_FRAME);
        for i in 0..bits {
            let one = (filter[i / 64] >> (i % 64) & 1) as usize;
            let mixed = (self.mixed[t / 64] >> (t % 64) & 1) as usize;
            let source = 2 * one + (1 - one) * mixed;
            let v = self.all[next[source]];
            next[source] += 1;
            t += 1 - one;
            frame.extend_from_slice(&v.to_le_bytes());
            if frame.len() == 4 * PERM_FRAME || i + 1 == bits {
                sink(&frame)?;
                frame.clear();
                between();
            }
        }
        Ok(())
    }
}

/// The unopened OTs of `ots` as a bitmap: bit j set if j < `ots` and j is not in `open`.
fn unopened_words(open: &[u32], ots: usize) -> Vec<u64> {
    let mut live = open_bitmap(open, ots);
    for (w, x) in live.iter_mut().enumerate() {
        let left = ots - w * 64;
        let valid = if left >= 64 { u64::MAX } else { (1u64 << left) - 1 };
        *x = valid & !*x;
    }
    live
}

/// Calls `f(j, c_j)` for every unopened OT j (`live`, from [`unopened_words`]), word by word of
/// 64 OTs, in each word those of choice 1 first.
fn unopened(live: &[u64], choices: &[u64], mut f: impl FnMut(u32, bool)) {
    for (w, (&l, &c)) in live.iter().zip(choices).enumerate() {
        for (mut bits, class) in [(l & c, true), (l & !c, false)] {
            while bits != 0 {
                f((w * 64) as u32 + bits.trailing_zeros(), class);
                bits &= bits - 1;
            }
        }
    }
}

/// Uniform bucket indices below 2^[`LOG_BUCKETS`], six per random 64-bit word.
struct Buckets {
    words: Words,
    word: u64,
    left: u32,
}

impl Buckets {
    fn new(seed: Block) -> Buckets {
        Buckets {
            words: Words::new(seed, usize::MAX),
            word: 0,
            left: 0,
        }
    }

    fn next(&mut self) -> usize {
        if self.left == 0 {
            self.word = self.words.next_u64();
            self.left = 64 / LOG_BUCKETS;
        }
        let b = (self.word & ((1 << LOG_BUCKETS) - 1)) as usize;
        self.word >>= LOG_BUCKETS;
        self.left -= 1;
        b
    }
}

/// Random words drawn in blocks of 64 KiB from an AES-CTR PRG.
struct Words {
    prg: AesPrg,
    buf: Vec<u8>,
    at: usize,
}

impl Words {
    /// Words from `seed`, buffered by up to 64 KiB (at least `need` bytes if fewer).
    fn new(seed: Block, need: usize) -> Words {
        let len = need.clamp(64, 1 << 16).next_multiple_of(64);
        Words {
            prg: AesPrg::new(seed),
            buf: vec![0u8; len],
            at: len,
        }
    }

    fn next_u64(&mut self) -> u64 {
        if self.at + 8 > self.buf.len() {
            self.prg.fill_bytes(&mut self.buf);
            self.at = 0;
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.buf[self.at..self.at + 8]);
        self.at += 8;
        u64::from_le_bytes(w)
    }

    fn next_u32(&mut self) -> u32 {
        if self.at + 8 > self.buf.len() {
            self.prg.fill_bytes(&mut self.buf);
            self.at = 0;
        }
        let mut w = [0u8; 4];
        w.copy_from_slice(&self.buf[self.at..self.at + 4]);
        self.at += 4;
        u32::from_le_bytes(w)
    }

    /// A uniform value below `n` (> 0): Lemire's multiply-shift with rejection, exact (the
    /// division only when the low half falls below `n`).
    fn below(&mut self, n: u64) -> u64 {
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// [`Words::below`] on 32-bit words.
    fn below32(&mut self, n: u32) -> u32 {
        let mut m = u64::from(self.next_u32()) * u64::from(n);
        if (m as u32) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u32) < threshold {
                m = u64::from(self.next_u32()) * u64::from(n);
            }
        }
        (m >> 32) as u32
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_testkit::rng;
    use rand::RngCore;
    use std::collections::HashMap;

    /// π of `map` as indices.
    fn pi(map: &Map, filter: &[u64], bits: usize) -> Vec<u32> {
        let mut out = Vec::new();
        map.send(
            filter,
            bits,
            |f| {
                out.extend(f.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())));
                Ok(())
            },
            || {},
        )
        .unwrap();
        out
    }

    #[test]
    fn the_map_sends_each_filter_bit_to_a_distinct_unopened_ot_of_the_right_choice() {
        let mut r = rng(5);
        let (ots, bits) = (5000usize, 4000usize);
        let choices: Vec<u64> = (0..ots.div_ceil(64)).map(|_| r.next_u64() & r.next_u64()).collect();
        let open: Vec<u32> = (0..ots as u32).filter(|j| j % 97 == 3).collect();
        let bit = |v: &[u64], j: usize| v[j / 64] >> (j % 64) & 1 == 1;
        let live_ones = (0..ots).filter(|&j| bit(&choices, j) && j % 97 != 3).count();
        // A filter with as many 1s as the unopened OTs of choice 1 allow, less 20.
        let mut filter = vec![0u64; bits.div_ceil(64)];
        let mut set = 0;
        while set < live_ones - 20 {
            let i = (r.next_u64() % bits as u64) as usize;
            if !bit(&filter, i) {
                filter[i / 64] |= 1 << (i % 64);
                set += 1;
            }
        }
        // In the scratch space, and in a fresh vector when the scratch is too short.
        for room in [ots, 10] {
            let (mut scratch, mut fresh) = (vec![0u32; room], Vec::new());
            let live = unopened_words(&open, ots);
            let map = Map::build(&filter, bits, &live, &choices, &mut scratch, &mut fresh, &mut r)
                .unwrap();
            let p = pi(&map, &filter, bits);
            assert_eq!(p.len(), bits);
            let mut seen = vec![false; ots];
            let mut ones = map.ones_order().iter();
            for (i, &j) in p.iter().enumerate() {
                let j = j as usize;
                assert!(j < ots && j % 97 != 3, "entry {i} names OT {j}");
                assert!(!seen[j], "OT {j} named twice");
                seen[j] = true;
                if bit(&filter, i) {
                    assert!(bit(&choices, j), "1 at {i} mapped to OT {j} of choice 0");
                    assert_eq!(ones.next(), Some(&(j as u32)));
                }
            }
            assert_eq!(ones.next(), None);
            drop(map);
            assert_eq!(fresh.is_empty(), room == ots);
        }
    }

    #[test]
    fn too_few_unopened_ones_is_a_hashing_failure() {
        let choices = vec![0b111u64];
        let filter = vec![0b1111u64];
        let (mut scratch, mut fresh) = (vec![0u32; 64], Vec::new());
        let live = unopened_words(&[], 64);
        match Map::build(&filter, 8, &live, &choices, &mut scratch, &mut fresh, &mut rng(1)) {
            Err(Error::HashingFailed(m)) => assert!(m.contains("3 OTs of choice 1 for 4"), "{m}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("built"),
        }
    }

    #[test]
    fn every_valid_map_is_equally_likely() {
        // OTs 0-2 of choice 1, 3-5 of choice 0, none opened; filter 0b0101 over 4 bits. π(0)
        // and π(2) are two distinct OTs of choice 1 (6 ways), π(1) and π(3) two distinct ones of
        // the other four (12 ways): 72 maps, each drawn with probability 1/72.
        let (choices, filter) = (vec![0b000111u64], vec![0b0101u64]);
        let trials = 72 * 100;
        let mut counts: HashMap<Vec<u32>, u32> = HashMap::new();
        let (mut r, live) = (rng(9), unopened_words(&[], 6));
        for _ in 0..trials {
            let (mut scratch, mut fresh) = (vec![0u32; 6], Vec::new());
            let map = Map::build(&filter, 4, &live, &choices, &mut scratch, &mut fresh, &mut r)
                .unwrap();
            *counts.entry(pi(&map, &filter, 4)).or_default() += 1;
        }
        assert_eq!(counts.len(), 72);
        let expect = f64::from(trials) / 72.0;
        let chi2: f64 = counts
            .values()
            .map(|&c| (f64::from(c) - expect).powi(2) / expect)
            .sum();
        // 71 degrees of freedom: mean 71, standard deviation 11.9; 140 is 5.8 deviations out.
        assert!(chi2 < 140.0, "chi-square {chi2}");
    }
}

