//! The sender's side of `dkt10` (the server of DKT10; see the module doc for the message
//! flow).

use super::group::{
    ItemHash, POINT_LEN, RECEIVER_PROOF, SCALAR_LEN, SENDER_MESSAGES, Transcript, challenge,
    decode_point, decode_scalar, generators, random_key, random_weights, sender_challenge,
};
use super::proof::ReceiverProofCheck;
use super::{
    MSG_RECEIVER_COMMIT, MSG_RECEIVER_POINTS, MSG_RECEIVER_RESPONSE, MSG_RECEIVER_RESPONSES,
    MSG_SENDER_COMMIT, MSG_SENDER_POINTS, MSG_SENDER_RESPONSE, MSG_TAGS, PIECE, PROTOCOL,
    RECEIVER_ITEM_LEN,
};
use crate::protocols::common::{CHUNK, forward_bulk, pipelined, queue_closed, queue_frames};
use crate::protocols::rr17a::recv_exact;
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::{BulkReader, Channel, send_elements};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use rand::CryptoRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use std::sync::atomic::Ordering;
use zeroize::Zeroizing;

/// Runs the sender with `items` (distinct) on `ch`.
///
/// Errors: the handshake's; `Malformed` for a message of the wrong length, a point that is not a
/// canonical Ristretto255 encoding or a scalar that is not below the group order (naming the
/// element); `CheckFailed` if the receiver's proof π_R does not verify (then no tag is sent).
pub fn send<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<SenderOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Sender, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let tag_len = run.tag_len()?;
    let sid = run.session.id;
    let gens = generators();
    let hash = ItemHash::new(&run.session);

    // The key k ≠ 0, Z = g'·k, and π_S's commitment A' = g'·d.
    let k = random_key(rng);
    let d = random_key(rng);
    let mut head = [0u8; 2 * POINT_LEN];
    head[..POINT_LEN].copy_from_slice((&gens.g1 * &*k).compress().as_bytes());
    head[POINT_LEN..].copy_from_slice((&gens.g1 * &*d).compress().as_bytes());
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.shuffle(rng);

    pipelined(
        ch,
        queue_frames(CHUNK * RECEIVER_ITEM_LEN),
        move |rx, queue_tx, aborted| {
            let commit = recv_exact(rx, MSG_RECEIVER_COMMIT, 2 * POINT_LEN)?;
            if queue_tx.send(commit).is_err() {
                return Ok(());
            }
            let mut points = BulkReader::new(MSG_RECEIVER_POINTS, RECEIVER_ITEM_LEN, n1);
            forward_bulk(rx, &mut points, &queue_tx, aborted)?;
            if aborted.load(Ordering::Relaxed) || points.remaining() > 0 {
                return Ok(());
            }
            let phi = recv_exact(rx, MSG_RECEIVER_RESPONSE, SCALAR_LEN)?;
            if queue_tx.send(phi).is_err() {
                return Ok(());
            }
            let mut responses = BulkReader::new(MSG_RECEIVER_RESPONSES, SCALAR_LEN, n1);
            forward_bulk(rx, &mut responses, &queue_tx, aborted)
        },
        |tx, queue_rx| {
            tx.send(MSG_SENDER_COMMIT, &head)?;
            let mut sender_transcript = Transcript::new(SENDER_MESSAGES, &sid);
            sender_transcript.absorb(&head);

            // Our tags T(k·H(y), y) = T over enc((4k)·E(y)), in a random order, while the
            // receiver blinds its items; they are sent only once its proof has verified.
            let k4 = Zeroizing::new(*k * Scalar::from(4u64));
            let mut tags = Vec::with_capacity(items.len() * tag_len);
            for (c, chunk) in order.chunks(CHUNK).enumerate() {
                let parts: Vec<Vec<u8>> = chunk
                    .par_chunks(PIECE)
                    .map(|piece| {
                        let uniform: Zeroizing<Vec<[u8; 64]>> = Zeroizing::new(
                            piece.iter().map(|&i| hash.uniform(&items[i])).collect(),
                        );
                        let mut enc = Zeroizing::new(Vec::with_capacity(piece.len() * POINT_LEN));
                        blindjoin_ristretto::hash_mul_compress(&uniform, &k4, &mut enc);
                        let mut out = Vec::with_capacity(piece.len() * tag_len);
                        for (e, &i) in enc.chunks_exact(POINT_LEN).zip(piece) {
                            hash.tag(e, &items[i], tag_len, &mut out);
                        }
                        out
                    })
                    .collect();
                for part in &parts {
                    tags.extend_from_slice(part);
                }
                run.report("tags", (c * CHUNK + chunk.len()) as u64, n2);
            }
            run.lap("tags");

            // The receiver's X ‖ A, then its points: answers M'_i ‖ A'_i per frame as it
            // arrives, and π_R's sums.
            let commit = queue_rx
                .recv()
                .map_err(|_| queue_closed(MSG_RECEIVER_COMMIT))?;
            let x = decode_point(&commit[..POINT_LEN], MSG_RECEIVER_COMMIT, 0)?;
            let a = decode_point(&commit[POINT_LEN..], MSG_RECEIVER_COMMIT, 1)?;
            let mut receiver_transcript = Transcript::new(RECEIVER_PROOF, &sid);
            receiver_transcript.absorb(&commit);
            let mut check = ReceiverProofCheck::new();
            let mut weights: Vec<Scalar> = Vec::new();
            let mut out = Vec::new();
            let mut done = 0u64;
            while done < n1 {
                let frame = queue_rx
                    .recv()
                    .map_err(|_| queue_closed(MSG_RECEIVER_POINTS))?;
                receiver_transcript.absorb(&frame);
                let count = frame.len() / RECEIVER_ITEM_LEN;
                let w = random_weights(rng, count);
                let parts: Vec<(Vec<u8>, RistrettoPoint, RistrettoPoint)> = frame
                    .par_chunks(PIECE * RECEIVER_ITEM_LEN)
                    .zip(w.par_chunks(PIECE))
                    .enumerate()
                    .map(
                        |(p, (piece, w))| -> Result<(Vec<u8>, RistrettoPoint, RistrettoPoint)> {
                            let first = done + (p * PIECE) as u64;
                            let len = piece.len() / RECEIVER_ITEM_LEN;
                            let (mut m_plus_n, mut b) =
                                (Vec::with_capacity(len), Vec::with_capacity(len));
                            let mut ms = Vec::with_capacity(len * POINT_LEN);
                            for (j, el) in piece.chunks_exact(RECEIVER_ITEM_LEN).enumerate() {
                                let i = first + j as u64;
                                let m = decode_point(&el[..POINT_LEN], MSG_RECEIVER_POINTS, i)?;
                                let n = decode_point(
                                    &el[POINT_LEN..2 * POINT_LEN],
                                    MSG_RECEIVER_POINTS,
                                    i,
                                )?;
                                b.push(decode_point(&el[2 * POINT_LEN..], MSG_RECEIVER_POINTS, i)?);
                                m_plus_n.push(m + n);
                                ms.extend_from_slice(&el[..POINT_LEN]);
                            }
                            let invalid = |j: usize| {
                                Error::malformed(
                                    MSG_RECEIVER_POINTS,
                                    format!(
                                        "element {} is not a valid Ristretto255 point",
                                        first + j as u64
                                    ),
                                )
                            };
                            let (mut mk, mut md) = (
                                Vec::with_capacity(len * POINT_LEN),
                                Vec::with_capacity(len * POINT_LEN),
                            );
                            blindjoin_ristretto::decompress_mul_compress(&ms, &k, &mut mk)
                                .map_err(invalid)?;
                            blindjoin_ristretto::decompress_mul_compress(&ms, &d, &mut md)
                                .map_err(invalid)?;
                            let mut answers = Vec::with_capacity(2 * len * POINT_LEN);
                            for (mk, md) in
                                mk.chunks_exact(POINT_LEN).zip(md.chunks_exact(POINT_LEN))
                            {
                                answers.extend_from_slice(mk);
                                answers.extend_from_slice(md);
                            }
                            let (s_b, s_mn) = ReceiverProofCheck::piece(w, &b, &m_plus_n);
                            Ok((answers, s_b, s_mn))
                        },
                    )
                    .collect::<Result<_>>()?;
                out.clear();
                let (mut s_b, mut s_mn) = (RistrettoPoint::default(), RistrettoPoint::default());
                for (answers, b, mn) in parts {
                    out.extend_from_slice(&answers);
                    s_b += b;
                    s_mn += mn;
                }
                check.add_points(&w, s_b, s_mn);
                weights.extend(w);
                sender_transcript.absorb(&out);
                tx.send(MSG_SENDER_POINTS, &out)?;
                done += count as u64;
                run.report("answer", done, n1);
            }

            // π_S's response s = d + c·k.
            let receiver_digest = receiver_transcript.digest();
            let e = challenge(&receiver_digest);
            let c = sender_challenge(&sid, &receiver_digest, &sender_transcript.digest());
            let s = *d + c * *k;
            tx.send(MSG_SENDER_RESPONSE, s.as_bytes())?;
            run.lap("answer");

            // The receiver's responses; our tags only if π_R verifies.
            let phi_frame = queue_rx
                .recv()
                .map_err(|_| queue_closed(MSG_RECEIVER_RESPONSE))?;
            let phi = decode_scalar(&phi_frame, MSG_RECEIVER_RESPONSE, 0)?;
            let mut done = 0usize;
            while done < weights.len() {
                let frame = queue_rx
                    .recv()
                    .map_err(|_| queue_closed(MSG_RECEIVER_RESPONSES))?;
                let phis = frame
                    .chunks_exact(SCALAR_LEN)
                    .enumerate()
                    .map(|(j, b)| decode_scalar(b, MSG_RECEIVER_RESPONSES, (done + j) as u64))
                    .collect::<Result<Vec<Scalar>>>()?;
                let w = weights.get(done..done + phis.len()).ok_or_else(|| {
                    Error::malformed(MSG_RECEIVER_RESPONSES, "more responses than items")
                })?;
                check.add_responses(w, &phis);
                done += phis.len();
            }
            check.verify(&x, &a, &phi, &e)?;
            run.lap("verify");
            send_elements(tx, MSG_TAGS, &tags, tag_len, CHUNK)?;
            run.lap("send tags");
            Ok(())
        },
    )?;
    Ok(run.sender_output())
}
