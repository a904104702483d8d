//! The sender's side of `rr17a` (see the module doc for the message flow).

use super::{
    MSG_CHALLENGE, MSG_COMMIT, MSG_OPENING, MSG_PERMUTATION, MSG_TAGS, OT_BATCH, PROTOCOL,
    ItemPositions, Positions, TAG_LEN, commitment, hash_key, opened, opening_len, recv_exact, run_params,
    open_bitmap, tag_hash, tag_into, take,
};
use crate::protocols::common::CHUNK;
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::{BulkReader, Channel, send_elements};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::kos::KosSender;
use rand::CryptoRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// Runs the sender with `items` (distinct) on `ch`.
///
/// Errors: the handshake's; `InvalidParam` if the receiver's announced size needs more than the
/// memory budget; `CheckFailed` if the receiver's hash-key share does not open its commitment,
/// it opened more choices of 1 than the cut-and-choose allows, or its proof does not match its
/// opened choices; `Malformed` for a message of the wrong length or a map entry that is out of
/// range, names an opened OT or repeats one; the KOS extension's errors.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let sid = run.session.id;
    let p = run_params(run.session.kappa, run.session.lambda, run.session.receiver_size)?;
    // One 1-message per OT, the used-OT bitmap, and per position of an item its entry and
    // its place in the sort by segment of π.
    let entries = items.len() as u64 * u64::from(p.hashes);
    opts.check_memory(
        "rr17a's sender",
        p.ots * 16 + p.ots / 8 + entries * 10 + items.len() as u64 * 32,
    )?;
    if items.len() > u32::MAX as usize {
        return Err(Error::InvalidParam {
            field: "sender set size",
            reason: format!("{} items; at most 2^32 are supported", items.len()),
        });
    }
    let ots = usize::try_from(p.ots).map_err(|_| Error::InvalidParam {
        field: "receiver set size",
        reason: format!("{} OTs do not fit this machine", p.ots),
    })?;

    let commit = take::<32>(&recv_exact(ch, MSG_COMMIT, 32)?, 0, MSG_COMMIT)?;
    let mut ot = KosSender::setup(&mut run.malicious_base_ot(), ch, &sid, rng)?;
    run.lap("base OT");

    // The opened OTs are fixed now and revealed only after every OT: only their 0-messages
    // need keeping.
    let cnc_seed = Block::random(rng);
    let open = opened(cnc_seed, p.ots, p.open_per_mille);
    let mut ones = Zeroizing::new(vec![Block::ZERO; ots]);
    let mut zeros = Zeroizing::new(vec![Block::ZERO; open.len()]);
    let mut buf = Zeroizing::new(vec![[Block::ZERO; 2]; OT_BATCH.min(ots)]);
    let mut next = 0;
    for start in (0..ots).step_by(OT_BATCH) {
        let len = OT_BATCH.min(ots - start);
        ot.send_random(ch, &mut buf[..len])?;
        ones[start..start + len]
            .par_chunks_mut(1 << 16)
            .zip(buf[..len].par_chunks(1 << 16))
            .for_each(|(o, b)| o.iter_mut().zip(b).for_each(|(o, b)| *o = b[1]));
        while let Some(&j) = open.get(next) {
            let j = j as usize;
            if j >= start + len {
                break;
            }
            zeros[next] = buf[j - start][0];
            next += 1;
        }
        run.report("ot", (start + len) as u64, p.ots);
    }
    drop(buf);
    run.lap("ot");

    let mut share = [0u8; 16];
    rng.fill_bytes(&mut share);
    let mut challenge = cnc_seed.to_bytes().to_vec();
    challenge.extend_from_slice(&share);
    ch.send(MSG_CHALLENGE, &challenge)?;

    let want = opening_len(open.len());
    let opening = recv_exact(ch, MSG_OPENING, want)?;
    let packed = open.len().div_ceil(8);
    let proof = Block::from_bytes(take::<16>(&opening, packed, MSG_OPENING)?);
    let theirs = take::<16>(&opening, packed + 16, MSG_OPENING)?;
    let nonce = take::<16>(&opening, packed + 32, MSG_OPENING)?;
    if commitment(&sid, &theirs, &nonce) != commit {
        return Err(Error::CheckFailed(
            "the receiver's hash-key share does not open its commitment".into(),
        ));
    }
    if !open.len().is_multiple_of(8) && opening[packed - 1] >> (open.len() % 8) != 0 {
        return Err(Error::malformed(
            MSG_OPENING,
            "bits set after the last opened choice".to_string(),
        ));
    }
    let (mut count, mut sum) = (0u64, Block::ZERO);
    for (k, &j) in open.iter().enumerate() {
        let c = (opening[k / 8] >> (k % 8)) & 1 == 1;
        count += u64::from(c);
        sum ^= if c { ones[j as usize] } else { zeros[k] };
    }
    drop(zeros);
    if count > p.max_opened_ones {
        return Err(Error::CheckFailed(format!(
            "the receiver opened {count} choices of 1; the cut-and-choose allows at most {}",
            p.max_opened_ones
        )));
    }
    if sum != proof {
        return Err(Error::CheckFailed(
            "the receiver's proof does not match its opened choices".into(),
        ));
    }

    // Hashing the items while the receiver builds π.
    let key = hash_key(&sid, &share, &theirs);
    let plan = Plan::new(&ItemPositions::of(&Positions::new(&key, &p)?, items), p.bits);
    run.lap("cut and choose");
    let sums = read_map(ch, ots, p.bits, &open, &plan, &ones, items.len())?;
    drop((plan, ones));
    run.lap("map");

    let th = tag_hash(&sid);
    let mut own = vec![0u8; items.len() * TAG_LEN];
    own.par_chunks_mut(TAG_LEN)
        .zip(items.par_iter().zip(&sums))
        .for_each(|(t, (x, &mask))| tag_into(&th, x, mask, t));
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.shuffle(rng);
    let mut tags = Vec::with_capacity(own.len());
    for &i in &order {
        tags.extend_from_slice(&own[i * TAG_LEN..][..TAG_LEN]);
    }
    run.lap("tags");
    send_elements(ch, MSG_TAGS, &tags, TAG_LEN, CHUNK)?;
    Ok(run.sender_output())
}

/// Entries of π resolved at once.
const SEGMENT: usize = 1 << 16;

/// The items' positions sorted by segment of π (a counting sort): entry e is position
/// `segment·SEGMENT + offset[e]` of item `item[e]`.
struct Plan {
    start: Vec<usize>,
    item: Vec<u32>,
    offset: Vec<u16>,
}

impl Plan {
    fn new(at: &ItemPositions, bits: u64) -> Plan {
        let segments = usize::try_from(bits.div_ceil(SEGMENT as u64)).unwrap_or(usize::MAX);
        let mut start = vec![0usize; segments + 1];
        for (_, b) in at.entries() {
            start[b as usize / SEGMENT + 1] += 1;
        }
        for s in 0..segments {
            start[s + 1] += start[s];
        }
        let mut next = start.clone();
        let mut item = vec![0u32; start[segments]];
        let mut offset = vec![0u16; start[segments]];
        for (i, b) in at.entries() {
            let s = b as usize / SEGMENT;
            // Fewer than 2^32 items (checked first).
            item[next[s]] = i as u32;
            offset[next[s]] = (b as usize % SEGMENT) as u16;
            next[s] += 1;
        }
        Plan { start, item, offset }
    }
}

/// Reads π (`bits` indices below `ots`, none opened, none repeated) and returns each item's
/// mask ⊕ `ones[π(b)]` over its positions b: each segment of π, once read and checked, adds
/// its messages to the items whose positions it holds.
fn read_map<C: Channel + ?Sized>(
    ch: &mut C,
    ots: usize,
    bits: u64,
    open: &[u32],
    plan: &Plan,
    ones: &[Block],
    n: usize,
) -> Result<Vec<Block>> {
    let mut sums = vec![Block::ZERO; n];
    let mut used = open_bitmap(open, ots);
    let mut seg = Vec::with_capacity(SEGMENT);
    let mut s = 0;
    let mut add = |s: usize, seg: &[u32]| {
        for e in plan.start[s]..plan.start[s + 1] {
            sums[plan.item[e] as usize] ^= ones[seg[usize::from(plan.offset[e])] as usize];
        }
    };
    let mut reader = BulkReader::new(MSG_PERMUTATION, 4, bits);
    let mut frame = Vec::new();
    while reader.next_frame_into(ch, &mut frame)? {
        for w in frame.chunks_exact(4) {
            let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let entry = s * SEGMENT + seg.len();
            if v as usize >= ots {
                return Err(Error::malformed(
                    MSG_PERMUTATION,
                    format!("entry {entry} names OT {v}; there are {ots}"),
                ));
            }
            let (word, bit) = (v as usize / 64, v % 64);
            if used[word] >> bit & 1 == 1 {
                return Err(Error::malformed(
                    MSG_PERMUTATION,
                    format!("entry {entry} names OT {v}, which is opened or named before"),
                ));
            }
            used[word] |= 1 << bit;
            seg.push(v);
            if seg.len() == SEGMENT {
                add(s, &seg);
                seg.clear();
                s += 1;
            }
        }
    }
    if !seg.is_empty() {
        add(s, &seg);
    }
    Ok(sums)
}
