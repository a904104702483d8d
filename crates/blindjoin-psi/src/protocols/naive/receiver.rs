//! The receiver's side of `naive`.

use super::{MSG_HASHES, NAME, params, tags};
use crate::params::tag_bytes;
use crate::protocols::common::{check_tag_len, match_tags, tag_from_bytes, validate_security};
use crate::{Phases, ReceiverOutput, RunOptions};
use blindjoin_core::Result;
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::{Role, handshake};
use blindjoin_core::item::Item;
use rand::CryptoRng;
use std::collections::HashSet;
use std::time::Instant;

/// Runs the receiver with `items` (distinct) on `ch`. Insecure (see the module doc).
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    validate_security(opts, NAME)?;
    let start = Instant::now();
    let mut phases = Phases::default();
    let cfg = opts.session_config(NAME, Role::Receiver, items.len(), params());
    let session = handshake(ch, &cfg, rng)?;
    let t = phases.lap("handshake", start);

    let tag_len = tag_bytes(session.lambda, items.len() as u64, session.sender_size);
    check_tag_len(tag_len)?;
    let mut own = Vec::new();
    tags(&session, items, tag_len, &mut own);
    let t = phases.lap("hash", t);

    let mut reader = BulkReader::new(MSG_HASHES, tag_len, session.sender_size);
    let mut peer = HashSet::new();
    while let Some(frame) = reader.next_frame(ch)? {
        peer.extend(frame.chunks_exact(tag_len).map(tag_from_bytes));
    }
    let t = phases.lap("receive", t);
    let indices = match_tags(&own, tag_len, &peer);
    phases.lap("match", t);
    Ok(ReceiverOutput {
        indices,
        session,
        phases,
    })
}
