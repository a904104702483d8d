//! The sender's side of the DH-PSI flow (see the module doc).

use super::{DhFlow, DhGroup, TAG_LABEL, group_at, tags_of};
use crate::protocols::common::{forward_bulk, pipelined, queue_closed, queue_frames};
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::Result;
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use rand::CryptoRng;
use rand::seq::SliceRandom;

/// Runs the sender of `flow` on group `G` with `items` (distinct) on `ch`.
pub(crate) fn send<G: DhGroup, C: Channel + ?Sized>(
    flow: &DhFlow,
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, flow.protocol, Role::Sender, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let tag_len = run.tag_len()?;
    let group: G = group_at(run.session.kappa)?;
    let key = group.random_key(rng);
    let (len, per_frame) = (group.element_len(), group.frame_elements());
    let (own_msg, peer_msg, tags_msg) = (flow.sender_elements, flow.receiver_elements, flow.tags);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.shuffle(rng);

    pipelined(
        ch,
        queue_frames(per_frame * len),
        move |rx, queue_tx, aborted| {
            let mut reader = BulkReader::new(peer_msg, len, n1);
            forward_bulk(rx, &mut reader, &queue_tx, aborted)
        },
        |tx, queue_rx| {
            // B_j = H(y_π(j))^b, streamed in random order.
            let mut batch = Vec::with_capacity(per_frame);
            let mut buf = Vec::new();
            for (done, chunk) in order.chunks(per_frame).enumerate() {
                batch.clear();
                batch.extend(chunk.iter().map(|&i| items[i]));
                buf.clear();
                group.blind_items(&run.session, &batch, &key, &mut buf)?;
                tx.send(own_msg, &buf)?;
                run.report("blind", (done * per_frame + chunk.len()) as u64, n2);
            }
            run.lap("blind");

            // T(A_i^b) in the order the receiver sent A_i.
            let tag_base = run.session.hasher(TAG_LABEL);
            let mut done = 0u64;
            let (mut elements, mut tags) = (Vec::new(), Vec::new());
            while done < n1 {
                let frame = queue_rx.recv().map_err(|_| queue_closed(peer_msg))?;
                elements.clear();
                group.reblind_frame(&frame, done, peer_msg, &key, &mut elements)?;
                tags.clear();
                tags_of(&tag_base, &elements, len, tag_len, &mut tags);
                tx.send(tags_msg, &tags)?;
                done += (frame.len() / len) as u64;
                run.report("re-blind", done, n1);
            }
            run.lap("re-blind");
            Ok(())
        },
    )?;
    Ok(run.sender_output())
}
