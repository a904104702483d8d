//! The sender's side of `ecdh` (see the module doc for the message flow).

use super::{
    GroupHash, Key, MSG_RECEIVER_POINTS, MSG_SENDER_POINTS, MSG_TAGS, POINT_LEN, PROTOCOL,
    blind_items, reblind_frame, tags_of,
};
use crate::protocols::common::{CHUNK, forward_bulk, pipelined, queue_closed, queue_frames};
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::Result;
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use rand::CryptoRng;
use rand::seq::SliceRandom;

/// Runs the sender with `items` (distinct) on `ch`.
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let tag_len = run.tag_len()?;
    let key = Key::random(rng);
    let hash = GroupHash::new(&run.session);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.shuffle(rng);

    pipelined(
        ch,
        queue_frames(CHUNK * POINT_LEN),
        move |rx, queue_tx, aborted| {
            let mut reader = BulkReader::new(MSG_RECEIVER_POINTS, POINT_LEN, n1);
            forward_bulk(rx, &mut reader, &queue_tx, aborted)
        },
        |tx, queue_rx| {
            // B_j = H(y_π(j))^b, streamed in random order.
            let mut batch = Vec::with_capacity(CHUNK);
            let mut buf = Vec::new();
            for (done, chunk) in order.chunks(CHUNK).enumerate() {
                batch.clear();
                batch.extend(chunk.iter().map(|&i| items[i]));
                buf.clear();
                blind_items(&batch, &hash, &key, &mut buf);
                tx.send(MSG_SENDER_POINTS, &buf)?;
                run.report("blind", (done * CHUNK + chunk.len()) as u64, n2);
            }
            run.lap("blind");

            // T(A_i^b) in the order the receiver sent A_i.
            let mut done = 0u64;
            let (mut points, mut tags) = (Vec::new(), Vec::new());
            while done < n1 {
                let frame = queue_rx
                    .recv()
                    .map_err(|_| queue_closed(MSG_RECEIVER_POINTS))?;
                points.clear();
                reblind_frame(&frame, done, MSG_RECEIVER_POINTS, &key, &mut points)?;
                tags.clear();
                tags_of(&run.session, &points, tag_len, &mut tags);
                tx.send(MSG_TAGS, &tags)?;
                done += (frame.len() / POINT_LEN) as u64;
                run.report("re-blind", done, n1);
            }
            run.lap("re-blind");
            Ok(())
        },
    )?;
    Ok(run.sender_output())
}
