//! The receiver's side of the DH-PSI flow (see the module doc).

use super::{DhFlow, DhGroup, TAG_LABEL, group_at, tags_of};
use crate::protocols::common::{
    forward_bulk, match_tags, pipelined, queue_closed, queue_frames, tag_from_bytes,
};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::Result;
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use rand::CryptoRng;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

/// Runs the receiver of `flow` on group `G` with `items` (distinct) on `ch`; returns the
/// indices of `items` in the intersection.
pub(crate) fn receive<G: DhGroup, C: Channel + ?Sized>(
    flow: &DhFlow,
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, flow.protocol, Role::Receiver, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let tag_len = run.tag_len()?;
    let group: G = group_at(run.session.kappa)?;
    let key = group.random_key(rng);
    let (len, per_frame) = (group.element_len(), group.frame_elements());
    let (own_msg, peer_msg, tags_msg) = (flow.receiver_elements, flow.sender_elements, flow.tags);

    let (own_tags, peer_tags) = pipelined(
        ch,
        queue_frames(per_frame * len),
        move |rx, queue_tx, aborted: &AtomicBool| {
            let mut elements = BulkReader::new(peer_msg, len, n2);
            forward_bulk(rx, &mut elements, &queue_tx, aborted)?;
            drop(queue_tx);
            let mut reader = BulkReader::new(tags_msg, tag_len, n1);
            let mut tags = Vec::new();
            while !aborted.load(Ordering::Relaxed) {
                match reader.next_frame(rx)? {
                    Some(frame) => tags.extend_from_slice(&frame),
                    None => break,
                }
            }
            Ok(tags)
        },
        |tx, queue_rx| {
            // A_i = H(x_i)^a in our own order.
            let mut buf = Vec::new();
            for (done, chunk) in items.chunks(per_frame).enumerate() {
                buf.clear();
                group.blind_items(&run.session, chunk, &key, &mut buf)?;
                tx.send(own_msg, &buf)?;
                run.report("blind", (done * per_frame + chunk.len()) as u64, n1);
            }
            run.lap("blind");

            // S = { T(B_j^a) }, grown as the sender's elements arrive.
            let tag_base = run.session.hasher(TAG_LABEL);
            let mut set = HashSet::new();
            let mut done = 0u64;
            let (mut elements, mut tags) = (Vec::new(), Vec::new());
            while done < n2 {
                let frame = queue_rx.recv().map_err(|_| queue_closed(peer_msg))?;
                elements.clear();
                group.reblind_frame(&frame, done, peer_msg, &key, &mut elements)?;
                tags.clear();
                tags_of(&tag_base, &elements, len, tag_len, &mut tags);
                set.extend(tags.chunks_exact(tag_len).map(tag_from_bytes));
                done += (frame.len() / len) as u64;
                run.report("re-blind", done, n2);
            }
            run.lap("re-blind");
            Ok(set)
        },
    )?;
    let indices = match_tags(&own_tags, tag_len, &peer_tags);
    run.lap("match");
    Ok(run.receiver_output(indices))
}
