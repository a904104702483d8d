//! The receiver's side of `kkrt16` (see the module doc for the message flow).

use super::{HASHES, MSG_SETUP, MSG_TAGS, PROTOCOL, Setup, code_width, hash_seed, oprf_input};
use crate::hashing::{CuckooParams, CuckooTable};
use crate::protocols::common::{
    TagTable, found_indices, tag_mask,
};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::{BulkReader, Channel, send_msg};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Result};
use blindjoin_ot::ext::kkrt::KkrtReceiver;
use rand::CryptoRng;

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let tag_len = run.tag_len()?;
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    let cuckoo = CuckooParams::kkrt(items.len(), run.session.lambda)?;
    let table = CuckooTable::build(&cuckoo, hash_seed(&run.session), &blocks)?;
    let bins = table.num_bins();
    send_msg(ch, MSG_SETUP, &Setup { bins: bins as u64 })?;
    run.lap("cuckoo");

    let mut oprf = KkrtReceiver::setup(
        &mut run.base_ot(),
        code_width(run.session.kappa, run.session.lambda),
        ch,
        &run.session.id,
        rng,
    )?;
    run.lap("base OT");

    // One OPRF instance per bin: its item XOR its hash index, or a random dummy.
    let inputs: Vec<Block> = table
        .iter()
        .map(|e| match e {
            Some(e) => oprf_input(&items[e.item as usize].0, e.hash),
            None => Block::random(rng),
        })
        .collect();
    let mut outputs = vec![Block::ZERO; bins];
    oprf.receive(ch, &inputs, &mut outputs)?;
    opts.report("oprf", n1, n1);
    run.lap("oprf");

    // Own tags, one table per hash function: tag → item. Tags longer than the table's 96 bits
    // are confirmed against the item's whole tag.
    let mask = tag_mask(tag_len);
    let mut per_hash: [Vec<(u128, u32)>; HASHES] = Default::default();
    let mut full = vec![0u128; if tag_len > 12 { items.len() } else { 0 }];
    for (e, out) in table.iter().zip(&outputs) {
        if let Some(e) = e {
            per_hash[usize::from(e.hash)].push((out.0 & mask, e.item));
            if let Some(f) = full.get_mut(e.item as usize) {
                *f = out.0 & mask;
            }
        }
    }
    let own: Vec<TagTable> = per_hash
        .iter()
        .map(|entries| {
            let mut t = TagTable::with_capacity(entries.len());
            t.insert_all(entries);
            t
        })
        .collect();
    drop(per_hash);
    drop(outputs);
    let mut found = vec![false; items.len()];
    for set in &own {
        let mut reader = BulkReader::new(MSG_TAGS, tag_len, n2);
        while let Some(frame) = reader.next_frame(ch)? {
            set.find_all(
                &frame,
                tag_len,
                |i, tag| full.get(i as usize).is_none_or(|&f| f == tag),
                |i| found[i as usize] = true,
            );
        }
    }
    let indices = found_indices(&found);
    run.lap("match");
    Ok(run.receiver_output(indices))
}
