//! The receiver's side of `rr17a` (see the module doc for the message flow).

use super::{
    MSG_CHALLENGE, MSG_COMMIT, MSG_OPENING, MSG_PERMUTATION, MSG_TAGS, OT_BATCH, PERM_FRAME,
    PROTOCOL, Positions, TAG_LEN, commitment, hash_key, masks, opened, recv_exact, run_params,
    tag_hash,
};
use crate::hashing::bloom::PositionScratch;
use crate::protocols::common::{TagTable, tag_from_bytes};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::kos::KosReceiver;
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// Items per rayon task when hashing the receiver's items.
const PAR_ITEMS: usize = 1 << 10;

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
    run.lap("opening");

    let key = hash_key(&sid, &theirs, &share);
    let pos = Positions::new(&key, &p)?;
    let (starts, flat) = all_positions(&pos, items);
    let bits = usize::try_from(p.bits).unwrap_or(usize::MAX);
    let mut filter = vec![0u64; bits.div_ceil(64)];
    for &b in &flat {
        filter[b as usize / 64] |= 1 << (b % 64);
    }
    run.lap("filter");
    let perm = map_filter(&filter, bits, &open, &choices, ots, rng)?;
    run.lap("map");
    drop(choices);
    let mut frame = Vec::with_capacity(4 * PERM_FRAME);
    for part in perm.chunks(PERM_FRAME) {
        frame.clear();
        for v in part {
            frame.extend_from_slice(&v.to_le_bytes());
        }
        ch.send(MSG_PERMUTATION, &frame)?;
    }
    run.lap("send map");

    let th = tag_hash(&sid);
    let mut own = vec![0u8; items.len() * TAG_LEN];
    own.par_chunks_mut(PAR_ITEMS * TAG_LEN)
        .enumerate()
        .for_each(|(c, out)| {
            let first = c * PAR_ITEMS;
            let count = out.len() / TAG_LEN;
            let mut sums = vec![Block::ZERO; count];
            masks(&starts[first..=first + count], &flat, &perm, &msgs, &mut sums);
            for ((t, i), mask) in out.chunks_exact_mut(TAG_LEN).zip(first..).zip(sums) {
                let mut input = [0u8; 32];
                input[..16].copy_from_slice(&items[i].0);
                input[16..].copy_from_slice(&mask.to_bytes());
                t.copy_from_slice(&th.digest(&input)[..TAG_LEN]);
            }
        });
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

/// The distinct positions of every item, flat, with item i's at `flat[starts[i]..starts[i+1]]`.
fn all_positions(pos: &Positions, items: &[Item]) -> (Vec<usize>, Vec<u32>) {
    let parts: Vec<Vec<u32>> = items
        .par_chunks(PAR_ITEMS)
        .map(|chunk| {
            let (mut scratch, mut at, mut out) = (PositionScratch::default(), Vec::new(), Vec::new());
            for x in chunk {
                pos.of(&x.0, &mut scratch, &mut at);
                out.push(at.len() as u32);
                out.extend_from_slice(&at);
            }
            out
        })
        .collect();
    let mut starts = Vec::with_capacity(items.len() + 1);
    let mut flat = Vec::new();
    starts.push(0);
    for part in parts {
        let mut k = 0;
        while let Some(&len) = part.get(k) {
            let len = len as usize;
            flat.extend_from_slice(&part[k + 1..k + 1 + len]);
            starts.push(flat.len());
            k += 1 + len;
        }
    }
    (starts, flat)
}

/// π: each 1 of the filter to an unopened OT of choice 1, every other bit to another unopened
/// OT, each uniformly at random; `HashingFailed` if too few unopened OTs are left.
fn map_filter(
    filter: &[u64],
    bits: usize,
    open: &[u32],
    choices: &[u64],
    ots: usize,
    rng: &mut impl CryptoRng,
) -> Result<Vec<u32>> {
    let mut is_open = vec![0u64; ots.div_ceil(64)];
    for &j in open {
        is_open[j as usize / 64] |= 1 << (j % 64);
    }
    let unopened = ots - open.len();
    let (mut ones, mut rest) = (Vec::with_capacity(unopened), Vec::with_capacity(unopened));
    for j in 0..ots {
        if is_open[j / 64] >> (j % 64) & 1 == 0 {
            if choices[j / 64] >> (j % 64) & 1 == 1 {
                ones.push(j as u32);
            } else {
                rest.push(j as u32);
            }
        }
    }
    let set: usize = filter.iter().map(|w| w.count_ones() as usize).sum();
    if ones.len() < set || ones.len() + rest.len() < bits {
        return Err(Error::HashingFailed(format!(
            "the cut-and-choose left {} OTs of choice 1 for {set} filter bits and {} OTs for {bits} \
             (probability at most 2^-λ)",
            ones.len(),
            ones.len() + rest.len()
        )));
    }
    shuffle(&mut ones, rng);
    rest.extend_from_slice(&ones[set..]);
    ones.truncate(set);
    shuffle(&mut rest, rng);
    let (mut a, mut z) = (ones.into_iter(), rest.into_iter());
    let mut perm = Vec::with_capacity(bits);
    for i in 0..bits {
        let next = if filter[i / 64] >> (i % 64) & 1 == 1 {
            a.next()
        } else {
            z.next()
        };
        perm.push(next.ok_or_else(|| Error::HashingFailed("the filter map ran out of OTs".into()))?);
    }
    Ok(perm)
}

/// Random words drawn in blocks of 64 KiB from an AES-CTR PRG.
struct Words {
    prg: AesPrg,
    buf: Vec<u8>,
    at: usize,
}

impl Words {
    fn new(seed: Block) -> Words {
        Words {
            prg: AesPrg::new(seed),
            buf: vec![0u8; 1 << 16],
            at: 1 << 16,
        }
    }

    fn next_u64(&mut self) -> u64 {
        if self.at == self.buf.len() {
            self.prg.fill_bytes(&mut self.buf);
            self.at = 0;
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.buf[self.at..self.at + 8]);
        self.at += 8;
        u64::from_le_bytes(w)
    }

    /// A uniform value below `n` (> 0): Lemire's multiply-shift with rejection, exact.
    fn below(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// A uniformly random permutation of `v` (Rao-Sandelius): each element goes to one of 2^10
/// buckets uniformly at random, each bucket is shuffled (Fisher-Yates, in cache) and the
/// buckets are concatenated.
fn shuffle(v: &mut Vec<u32>, rng: &mut impl CryptoRng) {
    let buckets = 1usize << LOG_BUCKETS;
    let mut words = Words::new(Block::random(rng));
    let mut parts: Vec<Vec<u32>> = (0..buckets)
        .map(|_| Vec::with_capacity(v.len() / buckets + v.len() / buckets / 8 + 64))
        .collect();
    let mut w = 0u64;
    for (k, &x) in v.iter().enumerate() {
        // Six 10-bit bucket indices per 64-bit word.
        if k % 6 == 0 {
            w = words.next_u64();
        }
        parts[(w & (buckets as u64 - 1)) as usize].push(x);
        w >>= LOG_BUCKETS;
    }
    let seeds: Vec<Block> = (0..buckets).map(|_| Block::random(rng)).collect();
    parts.par_iter_mut().zip(seeds).for_each(|(p, s)| {
        let mut words = Words::new(s);
        for i in (1..p.len()).rev() {
            let j = words.below(i as u64 + 1) as usize;
            p.swap(i, j);
        }
    });
    v.clear();
    for p in parts {
        v.extend_from_slice(&p);
    }
}
