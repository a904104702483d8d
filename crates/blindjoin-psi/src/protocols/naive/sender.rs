//! The sender's side of `naive`.

use super::{MSG_HASHES, NAME, params, tags};
use crate::params::tag_bytes;
use crate::protocols::common::{CHUNK, check_tag_len, validate_security};
use crate::{Phases, RunOptions, SenderOutput};
use blindjoin_core::Result;
use blindjoin_core::channel::{Channel, send_elements};
use blindjoin_core::handshake::{Role, handshake};
use blindjoin_core::item::Item;
use rand::CryptoRng;
use rand::seq::SliceRandom;
use std::time::Instant;

/// Runs the sender with `items` (distinct) on `ch`. Insecure (see the module doc).
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    validate_security(opts, NAME)?;
    let start = Instant::now();
    let mut phases = Phases::default();
    let cfg = opts.session_config(NAME, Role::Sender, items.len(), params());
    let session = handshake(ch, &cfg, rng)?;
    let t = phases.lap("handshake", start);

    let tag_len = tag_bytes(session.lambda, session.receiver_size, items.len() as u64);
    check_tag_len(tag_len)?;
    let mut shuffled = items.to_vec();
    shuffled.shuffle(rng);
    let mut out = Vec::new();
    tags(&session, &shuffled, tag_len, &mut out);
    send_elements(ch, MSG_HASHES, &out, tag_len, CHUNK)?;
    phases.lap("hash+send", t);
    Ok(SenderOutput { session, phases })
}
