//! The receiver's side of `ecdh` (see the module doc for the message flow).

use super::{
    GroupHash, Key, MSG_RECEIVER_POINTS, MSG_SENDER_POINTS, MSG_TAGS, NAME, POINT_LEN, blind_items,
    params, reblind_frame, tags_of,
};
use crate::params::tag_bytes;
use crate::protocols::common::{
    CHUNK, check_tag_len, forward_bulk, match_tags, pipelined, queue_closed, tag_from_bytes,
    validate_security,
};
use crate::{Phases, ReceiverOutput, RunOptions};
use blindjoin_core::Result;
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::{Role, handshake};
use blindjoin_core::item::Item;
use rand::CryptoRng;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
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
    let mut t = phases.lap("handshake", start);

    let (n1, n2) = (items.len() as u64, session.sender_size);
    let tag_len = tag_bytes(session.lambda, n1, n2);
    check_tag_len(tag_len)?;
    let key = Key::random(rng);
    let hash = GroupHash::new(&session);

    let (queue_tx, queue_rx) = mpsc::channel();
    let (own_tags, peer_tags) = pipelined(
        ch,
        move |rx, aborted: &AtomicBool| {
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
        |tx| {
            // A_i = H(x_i)^a in our own order.
            let mut buf = Vec::new();
            for (done, chunk) in items.chunks(CHUNK).enumerate() {
                buf.clear();
                blind_items(chunk, &hash, &key, &mut buf);
                tx.send(MSG_RECEIVER_POINTS, &buf)?;
                opts.report("blind", (done * CHUNK + chunk.len()) as u64, n1);
            }
            t = phases.lap("blind", t);

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
                tags_of(&session, &points, tag_len, &mut tags);
                set.extend(tags.chunks_exact(tag_len).map(tag_from_bytes));
                done += (frame.len() / POINT_LEN) as u64;
                opts.report("re-blind", done, n2);
            }
            t = phases.lap("re-blind", t);
            Ok(set)
        },
    )?;
    let indices = match_tags(&own_tags, tag_len, &peer_tags);
    phases.lap("match", t);
    Ok(ReceiverOutput {
        indices,
        session,
        phases,
    })
}
