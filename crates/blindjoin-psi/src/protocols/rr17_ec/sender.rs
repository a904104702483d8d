//! The sender's side of `rr17_ec` (see the module doc for the message flow).

use super::{
    COMMIT_FRAME, COMMIT_LEN, ENTRY_FRAME, ENTRY_LEN, MSG_COMMIT, MSG_COMMITMENTS, MSG_ENTRIES,
    MSG_OPENING, MSG_SHARE, PROTOCOL, commit, ec_params,
};
use crate::protocols::rr17_de::{bin_key, chunks, commitment, place_in_bins};
use crate::protocols::rr17a::recv_exact;
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::ext::kos::KosBase;
use blindjoin_ot::ext::oos::{OosSender, Wide};
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// Items whose entries one rayon task computes.
const PAR_ITEMS: usize = 1 << 10;

/// Runs the sender with `items` (distinct) on `ch`.
///
/// Errors: the handshake's; `CheckFailed` if the receiver's opening does not match its
/// commitment or its rows fail OOS16's consistency check; `Malformed` for a message of the
/// wrong length.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    send_encoding(ch, items, None, opts, rng)
}

/// [`send`] with each item's entries computed under the encoding of `eval_items[i]` instead of
/// `items[i]` (its commitment still to `items[i]`) where given: a sender that opens its
/// commitments under other items' encodings (the tests' cheating sender; `None` is the
/// protocol).
pub(crate) fn send_encoding<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    eval_items: Option<&[Item]>,
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let sid = run.session.id;
    let (n1, n2) = run.sizes();
    let p = ec_params(run.session.lambda, n1, n2)?;
    let br = p.slots_r;
    run.opts.check_memory(
        "the sender's entries",
        (p.bins as u64) * 4 + n2 * (br * ENTRY_LEN + COMMIT_LEN) as u64,
    )?;

    let commit_r = recv_exact(ch, MSG_COMMIT, 32)?;
    let mut share = Zeroizing::new([0u8; 16]);
    rng.fill_bytes(&mut share[..]);
    ch.send(MSG_SHARE, &share[..])?;
    let opening = recv_exact(ch, MSG_OPENING, 32)?;
    let (theirs, nonce): ([u8; 16], [u8; 16]) = (
        opening[..16]
            .try_into()
            .map_err(|_| Error::malformed(MSG_OPENING, "short"))?,
        opening[16..]
            .try_into()
            .map_err(|_| Error::malformed(MSG_OPENING, "short"))?,
    );
    if commitment(&sid, &theirs, &nonce)[..] != commit_r[..] {
        return Err(Error::CheckFailed(
            "the receiver's bin-key share does not open its commitment".into(),
        ));
    }
    let key = bin_key(&sid, &share, &theirs);

    let mut ot = OosSender::setup(&mut KosBase(run.malicious_base_ot()), ch, &sid, rng)?;
    run.lap("base OT");

    let mut prg = AesPrg::new(Block::random(rng));
    let pl = place_in_bins(items, key, &p);
    // The evaluation input of each item, in the order of the bins.
    let eval_bin: Vec<Block> = match eval_items {
        Some(other) => {
            let other = place_in_bins(other, key, &p).inputs;
            pl.by_bin.iter().map(|&i| other[i as usize]).collect()
        }
        None => pl.bin_inputs.clone(),
    };
    // π: the position of each item on the wire.
    let mut order: Vec<u32> = (0..items.len() as u32).collect();
    let mut random = vec![0u8; 8 * items.len()];
    prg.fill_bytes(&mut random);
    for (k, r) in (1..order.len()).rev().zip(random.chunks_exact(8)) {
        let r = u64::from_le_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]]);
        order.swap(k, (r % (k as u64 + 1)) as usize);
    }
    let mut pos = vec![0u32; items.len()];
    for (k, &i) in order.iter().enumerate() {
        pos[i as usize] = k as u32;
    }
    // The wire position of each item in the order of the bins.
    let pos_bin: Vec<u32> = pl.by_bin.iter().map(|&i| pos[i as usize]).collect();
    run.lap("bins");

    // Entries by wire position, the B_R entries of one item side by side.
    let item_len = br * ENTRY_LEN;
    let mut entries = Zeroizing::new(vec![0u8; items.len() * item_len]);
    let mut commitments = vec![0u8; items.len() * COMMIT_LEN];
    let mut openings: Zeroizing<Vec<[u8; 16]>> = Zeroizing::new(
        (0..items.len())
            .map(|_| {
                let mut r = [0u8; 16];
                prg.fill_bytes(&mut r);
                r
            })
            .collect(),
    );
    let mut local = Zeroizing::new(Vec::new());
    for (b0, b1) in chunks(&p) {
        let keys = ot.send(ch, (b1 - b0) * br)?;
        let (k0, k1) = (pl.bin_start[b0] as usize, pl.bin_start[b1] as usize);
        local.clear();
        local.resize((k1 - k0) * item_len, 0);
        let result: Result<()> = local
            .par_chunks_mut(PAR_ITEMS * item_len)
            .zip(pl.bin_slots[k0..k1].par_chunks(PAR_ITEMS))
            .zip(eval_bin[k0..k1].par_chunks(PAR_ITEMS))
            .zip(openings[k0..k1].par_chunks(PAR_ITEMS))
            .try_for_each(|(((out, bins), xs), rs)| {
                let mut g: Zeroizing<Vec<Wide>> = Zeroizing::new(vec![[Block::ZERO; 2]; br]);
                let each = out.chunks_exact_mut(item_len).zip(bins).zip(xs).zip(rs);
                for (((out, &bin), &x), r) in each {
                    let c = keys.masked_code(x);
                    keys.eval_masked(&c, (bin as usize - b0) * br, &mut g)?;
                    let r = Block::from_bytes(*r);
                    for (e, g) in out.chunks_exact_mut(ENTRY_LEN).zip(g.iter()) {
                        e[..4].copy_from_slice(&(g[1].0 as u32).to_le_bytes());
                        e[4..].copy_from_slice(&(g[0] ^ r).to_bytes());
                    }
                }
                Ok(())
            });
        result?;
        for (&k, e) in pos_bin[k0..k1].iter().zip(local.chunks_exact(item_len)) {
            let at = k as usize * item_len;
            entries[at..at + item_len].copy_from_slice(e);
        }
        ot.recycle(keys);
        run.report("encodings", b1 as u64, p.bins as u64);
    }
    // Openings are in the order of the bins: item by_bin[k] has openings[k].
    let mut at_bin = vec![0u32; items.len()];
    for (k, &i) in pl.by_bin.iter().enumerate() {
        at_bin[i as usize] = k as u32;
    }
    commitments
        .par_chunks_mut(COMMIT_LEN)
        .zip(order.par_iter())
        .for_each(|(c, &i)| {
            let r = &openings[at_bin[i as usize] as usize];
            c.copy_from_slice(&commit(&sid, &items[i as usize], r));
        });
    openings.iter_mut().for_each(|r| r.fill(0));
    run.lap("encodings");

    for frame in commitments.chunks(COMMIT_FRAME * COMMIT_LEN) {
        ch.send(MSG_COMMITMENTS, frame)?;
    }
    let mut frame = Vec::with_capacity(ENTRY_FRAME * ENTRY_LEN);
    for l in 0..br {
        for start in (0..items.len()).step_by(ENTRY_FRAME) {
            frame.clear();
            for k in start..(start + ENTRY_FRAME).min(items.len()) {
                let at = k * item_len + l * ENTRY_LEN;
                frame.extend_from_slice(&entries[at..at + ENTRY_LEN]);
            }
            ch.send(MSG_ENTRIES, &frame)?;
        }
    }
    run.lap("entries");
    Ok(run.sender_output())
}
