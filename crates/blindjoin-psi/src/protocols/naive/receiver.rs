//! The receiver's side of `naive`.

use super::{MSG_HASHES, PROTOCOL, tags};
use crate::protocols::common::{match_tags, tag_from_bytes};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::Result;
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use rand::CryptoRng;
use std::collections::HashSet;

/// Runs the receiver with `items` (distinct) on `ch`. Insecure (see the module doc).
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let tag_len = run.tag_len()?;
    let mut own = Vec::new();
    tags(&run.session, items, tag_len, &mut own);
    run.lap("hash");

    let mut reader = BulkReader::new(MSG_HASHES, tag_len, run.session.sender_size);
    let mut peer = HashSet::new();
    while let Some(frame) = reader.next_frame(ch)? {
        peer.extend(frame.chunks_exact(tag_len).map(tag_from_bytes));
    }
    run.lap("receive");
    let indices = match_tags(&own, tag_len, &peer);
    run.lap("match");
    Ok(run.receiver_output(indices))
}
