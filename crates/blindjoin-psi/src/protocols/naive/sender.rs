//! The sender's side of `naive`.

use super::{MSG_HASHES, PROTOCOL, tags};
use crate::protocols::common::CHUNK;
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::Result;
use blindjoin_core::channel::{Channel, send_elements};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use rand::CryptoRng;
use rand::seq::SliceRandom;

/// Runs the sender with `items` (distinct) on `ch`. Insecure (see the module doc).
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let tag_len = run.tag_len()?;
    let mut shuffled = items.to_vec();
    shuffled.shuffle(rng);
    let mut out = Vec::new();
    tags(&run.session, &shuffled, tag_len, &mut out);
    send_elements(ch, MSG_HASHES, &out, tag_len, CHUNK)?;
    run.lap("hash+send");
    Ok(run.sender_output())
}
