//! The receiver's side of `rgbf` (see the module doc for the message flow).

use super::{MSG_MASKS, MSG_RECEIVER_SETUP, MSG_SENDER_SETUP, PROTOCOL, filter_params};
use crate::hashing::bloom::BloomPairs;
use crate::protocols::common::{TagTable, found_indices};
use crate::protocols::filters::{self, CHUNK, accumulate, chunk_bits, chunk_len, truncate};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Result};
use blindjoin_ot::ext::iknp::IknpReceiver;
use rand::CryptoRng;
use zeroize::Zeroizing;

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
///
/// Errors: the handshake's; `ParamMismatch` naming `bloom_bits`, `bloom_hashes` or `ell` if the
/// sender's filter parameters differ from ours; `InvalidParam` for sizes a filter cannot serve;
/// `Malformed`, `FrameTooLong` or `PeerClosed` when the sender's masks are not what the agreed
/// sizes imply.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let p = filter_params(run.session.kappa, run.session.lambda, n1, n2)?;
    p.exchange(ch, MSG_RECEIVER_SETUP, MSG_SENDER_SETUP)?;
    let hasher = filters::hasher(&run.session, "rgbf/bloom", p.k, p.m)?;
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();

    let mut ot = IknpReceiver::setup(&mut run.base_ot(), ch, &run.session.id, rng)?;
    run.lap("base OT");

    // One accumulator per element: the XOR of G_Y at its positions; wiped on drop.
    let mut acc = Zeroizing::new(vec![Block::ZERO; items.len()]);
    let mut bits = Zeroizing::new(Vec::new());
    let mut ones = Zeroizing::new(vec![Block::ZERO; CHUNK]);
    let chunks = p.chunks();
    let groups = rayon::current_num_threads();
    for pass in filters::passes(p.k, items.len(), p.m, opts) {
        let pairs = BloomPairs::build(&hasher, &blocks, pass.clone(), CHUNK, groups);
        for c in pass {
            let len = chunk_len(p.m, c);
            chunk_bits(&pairs, c, len, &mut bits);
            ot.receive_ones(ch, &bits, &mut ones[..len])?;
            accumulate(&pairs, c, &ones[..len], &mut acc);
            run.report("ot", (c + 1) as u64, chunks as u64);
        }
    }
    drop(ones);
    run.lap("ot");

    // Our masks in a table; the sender's masks looked up as they arrive.
    let own: Vec<(u128, u32)> = acc
        .iter()
        .enumerate()
        .map(|(i, a)| (truncate(*a, p.ell), i as u32))
        .collect();
    let mut table = TagTable::with_capacity(own.len());
    table.insert_all(&own);
    let mut found = vec![false; items.len()];
    let mut reader = BulkReader::new(MSG_MASKS, p.ell, n2);
    while let Some(frame) = reader.next_frame(ch)? {
        table.find_all(
            &frame,
            p.ell,
            |i, tag| own[i as usize].0 == tag,
            |i| found[i as usize] = true,
        );
    }
    let indices = found_indices(&found);
    run.lap("match");
    Ok(run.receiver_output(indices))
}
