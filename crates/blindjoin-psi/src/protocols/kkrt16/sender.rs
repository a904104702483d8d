//! The sender's side of `kkrt16` (see the module doc for the message flow).

use super::{BIN_CHUNK, HASHES, MSG_SETUP, NAME, Setup, code_width, hash_seed, oprf_input, params};
use crate::hashing::{BinHasher, CuckooParams, SimpleTable};
use crate::params::tag_bytes;
use crate::protocols::common::{CHUNK, check_tag_len, validate_security};
use crate::{Phases, RunOptions, SenderOutput};
use blindjoin_core::channel::{Channel, recv_msg, send_elements};
use blindjoin_core::handshake::{Role, handshake};
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::base::ChouOrlandiReceiver;
use blindjoin_ot::ext::kkrt::KkrtSender;
use rand::CryptoRng;
use rand::seq::SliceRandom;
use std::time::Instant;

/// Runs the sender with `items` (distinct) on `ch`.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    validate_security(opts, NAME)?;
    let start = Instant::now();
    let mut phases = Phases::default();
    let cfg = opts.session_config(NAME, Role::Sender, items.len(), params(opts.lambda));
    let session = handshake(ch, &cfg, rng)?;
    let t = phases.lap("handshake", start);

    let (n1, n2) = (session.receiver_size, items.len() as u64);
    let tag_len = tag_bytes(session.lambda, n1, n2);
    check_tag_len(tag_len)?;
    let n1_usize = usize::try_from(n1).map_err(|_| Error::InvalidParam {
        field: "receiver set size",
        reason: format!("{n1} does not fit this machine"),
    })?;
    let bins = CuckooParams::kkrt(n1_usize, session.lambda)?.num_bins();
    let setup: Setup = recv_msg(ch, MSG_SETUP, 16)?;
    if setup.bins != bins as u64 {
        return Err(Error::ParamMismatch {
            field: "bins".into(),
            ours: bins.to_string(),
            peer: setup.bins.to_string(),
        });
    }
    let blocks: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    let hasher = BinHasher::new(hash_seed(&session), HASHES, bins)?;
    let table = SimpleTable::build(&hasher, &blocks)?;
    // Each set j goes out in its own random order: item y's tag at position perm[j][y].
    let perms: Vec<Vec<u32>> = (0..HASHES)
        .map(|_| {
            let mut p: Vec<u32> = (0..n2 as u32).collect();
            p.shuffle(rng);
            p
        })
        .collect();
    let t = phases.lap("hash", t);

    let mut oprf = KkrtSender::new(ChouOrlandiReceiver::default(), code_width(session.lambda))?;
    oprf.setup(ch, &session.id, rng)?;
    let t = phases.lap("base OT", t);

    let mut tags = vec![vec![0u8; items.len() * tag_len]; HASHES];
    let (mut queries, mut dest, mut out) = (Vec::new(), Vec::new(), Vec::new());
    let mut lo = 0;
    while lo < bins {
        let hi = (lo + BIN_CHUNK).min(bins);
        let keys = oprf.send(ch, hi - lo)?;
        queries.clear();
        dest.clear();
        for b in lo..hi {
            for e in table.bin(b) {
                let (y, j) = (e.item(), e.hash());
                queries.push((b - lo, oprf_input(&items[y as usize].0, j)));
                dest.push((j, perms[usize::from(j)][y as usize]));
            }
        }
        out.resize(queries.len(), Block::ZERO);
        keys.evals(&queries, &mut out)?;
        for (&(j, pos), v) in dest.iter().zip(&out) {
            let at = pos as usize * tag_len;
            tags[usize::from(j)][at..at + tag_len].copy_from_slice(&v.to_bytes()[..tag_len]);
        }
        opts.report("oprf", hi as u64, bins as u64);
        lo = hi;
    }
    let t = phases.lap("oprf", t);
    for set in &tags {
        send_elements(ch, set, tag_len, CHUNK)?;
    }
    phases.lap("send", t);
    Ok(SenderOutput { session, phases })
}
