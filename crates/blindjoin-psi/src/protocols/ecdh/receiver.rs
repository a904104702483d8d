//! The receiver's side of `ecdh` (see the module doc for the message flow).

use super::{
    GroupHash, Key, MSG_RECEIVER_POINTS, MSG_SENDER_POINTS, MSG_TAGS, POINT_LEN, PROTOCOL,
    blind_items, reblind_frame, tags_of,
};
use crate::protocols::common::{
    CHUNK, forward_bulk, match_tags, pipelined, queue_closed, queue_frames, tag_from_bytes,
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

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let tag_len = run.tag_len()?;
    let key = Key::random(rng);
    let hash = GroupHash::new(&run.session);

    let (own_tags, peer_tags) = pipelined(
        ch,
        queue_frames(CHUNK * POINT_LEN),
        move |rx, queue_tx, aborted: &AtomicBool| {
            let mut points = BulkReader::new(MSG_SENDER_POINTS, POINT_LEN, n2);
            forward_bulk(rx, &mut points, &queue_tx, aborted)?;
            drop(queue_tx);
            let mut reader = BulkReader::new(MSG_TAGS, tag_len, n1);
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
            for (done, chunk) in items.chunks(CHUNK).enumerate() {
                buf.clear();
                blind_items(chunk, &hash, &key, &mut buf);
                tx.send(MSG_RECEIVER_POINTS, &buf)?;
                run.report("blind", (done * CHUNK + chunk.len()) as u64, n1);
            }
            run.lap("blind");

            // S = { T(B_j^a) }, grown as the sender's points arrive.
            let mut set = HashSet::new();
            let mut done = 0u64;
            let (mut points, mut tags) = (Vec::new(), Vec::new());
            while done < n2 {
                let frame = queue_rx
                    .recv()
                    .map_err(|_| queue_closed(MSG_SENDER_POINTS))?;
                points.clear();
                reblind_frame(&frame, done, MSG_SENDER_POINTS, &key, &mut points)?;
                tags.clear();
                tags_of(&run.session, &points, tag_len, &mut tags);
                set.extend(tags.chunks_exact(tag_len).map(tag_from_bytes));
                done += (frame.len() / POINT_LEN) as u64;
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
