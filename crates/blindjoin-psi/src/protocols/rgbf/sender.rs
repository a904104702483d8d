//! The sender's side of `rgbf` (see the module doc for the message flow).

use super::{MSG_MASKS, MSG_RECEIVER_SETUP, MSG_SENDER_SETUP, PROTOCOL, filter_params};
use crate::hashing::bloom::BloomPairs;
use crate::protocols::common::{CHUNK as MASK_FRAME, put_tag, shuffle_elements};
use crate::protocols::filters::{self, CHUNK, accumulate, chunk_bits, chunk_len};
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::{Channel, send_elements};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Result};
use blindjoin_ot::ext::iknp::IknpSender;
use rand::CryptoRng;
use zeroize::Zeroizing;

/// Runs the sender with `items` (distinct) on `ch`.
///
/// Errors: the handshake's; `ParamMismatch` naming `bloom_bits`, `bloom_hashes` or `ell` if the
/// receiver's filter parameters differ from ours; `InvalidParam` for sizes a filter cannot
/// serve; `Malformed`, `FrameTooLong` or `PeerClosed` when the receiver's u columns are not what
/// the agreed sizes imply.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let p = filter_params(run.session.kappa, run.session.lambda, n1, n2)?;
    p.exchange(ch, MSG_SENDER_SETUP, MSG_RECEIVER_SETUP)?;
    let hasher = filters::hasher(&run.session, "rgbf/bloom", p.k, p.m)?;
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();

    let mut ot = IknpSender::setup(&mut run.base_ot(), ch, &run.session.id, rng)?;
    run.lap("base OT");

    // One accumulator per element: the XOR of G_X at its positions; wiped on drop.
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
            ot.send_ones(ch, Some(&bits), &mut ones[..len])?;
            accumulate(&pairs, c, &ones[..len], &mut acc);
            run.report("ot", (c + 1) as u64, chunks as u64);
        }
    }
    drop(ones);
    run.lap("ot");

    // The masks, ℓ bytes each, in random order (PSZ14 §4.3: otherwise R learns which of our
    // positions matched).
    let mut masks = vec![0u8; items.len() * p.ell];
    for (m, a) in masks.chunks_exact_mut(p.ell).zip(acc.iter()) {
        put_tag(m, a.0);
    }
    drop(acc);
    shuffle_elements(&mut masks, p.ell, rng);
    send_elements(ch, MSG_MASKS, &masks, p.ell, MASK_FRAME)?;
    run.lap("send");
    Ok(run.sender_output())
}
