//! The sender's side of `gbf` (see the module doc for the message flow).

use super::{OtSender, MSG_RECEIVER_SETUP, MSG_SENDER_SETUP, MSG_SHARES, PROTOCOL, filter_params, encode, encoder};
use crate::hashing::bloom::GarbledBloomFilter;
use crate::protocols::common::put_tag;
use crate::protocols::filters::{self, CHUNK, chunk_len};
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::Channel;
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use zeroize::Zeroizing;

/// Positions whose strings one rayon task produces.
const PAR_BATCH: usize = 1 << 13;

/// Runs the sender with `items` (distinct) on `ch`.
///
/// Errors: the handshake's; `ParamMismatch` naming `bloom_bits`, `bloom_hashes` or `ell` if the
/// receiver's filter parameters differ from ours; `InvalidParam` for sizes a filter cannot serve
/// or a filter state over the memory budget; `HashingFailed` if the GBF build fails (DCW13
/// Thm 1, probability about 2^-k); `Malformed`, `FrameTooLong` or `PeerClosed` when the
/// receiver's u columns are not what the agreed sizes imply.
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
    // The slot state follows m, which the receiver's announced size decides.
    opts.check_memory("the sender's garbled Bloom filter", p.m / 4)?;
    let hasher = filters::hasher(&run.session, "gbf/bloom", p.k, p.m)?;
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    let mut enc = blocks.clone();
    encode(&encoder(&run.session), &mut enc, p.ell);
    let gbf = GarbledBloomFilter::build(&hasher, &blocks, &enc, 8 * p.ell as u32, Block::random(rng))?;
    drop((blocks, enc));
    run.lap("gbf");

    let mut ot = OtSender::setup(&run, ch, rng)?;
    run.lap("base OT");

    let (ell, chunks) = (p.ell, p.chunks());
    let mut ones = Zeroizing::new(vec![Block::ZERO; CHUNK]);
    let mut values = Zeroizing::new(vec![Block::ZERO; CHUNK]);
    let mut frame = vec![0u8; CHUNK * ell];
    for c in 0..chunks {
        let len = chunk_len(p.m, c);
        let first = (c * CHUNK) as u64;
        ot.send_ones(ch, &mut ones[..len])?;
        // y_i = GBF_S[i] ⊕ x_i^1, ℓ bytes each.
        values[..len]
            .par_chunks_mut(PAR_BATCH)
            .zip(ones[..len].par_chunks(PAR_BATCH))
            .zip(frame[..len * ell].par_chunks_mut(PAR_BATCH * ell))
            .enumerate()
            .for_each(|(b, ((v, o), f))| {
                gbf.fill(first + (b * PAR_BATCH) as u64, v);
                for ((v, o), y) in v.iter().zip(o).zip(f.chunks_exact_mut(ell)) {
                    put_tag(y, (*v ^ *o).0);
                }
            });
        ch.send(MSG_SHARES, &frame[..len * ell])?;
        run.report("ot", (c + 1) as u64, chunks as u64);
    }
    run.lap("ot");
    Ok(run.sender_output())
}
