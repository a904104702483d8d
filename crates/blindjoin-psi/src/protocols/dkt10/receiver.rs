//! The receiver's side of `dkt10` (the client of DKT10; see the module doc for the message
//! flow).

use super::group::{
    ItemHash, POINT_LEN, RECEIVER_PROOF, SCALAR_LEN, SENDER_MESSAGES, Transcript, challenge,
    decode_point, decode_scalar, generators, random_scalar, random_weights, sender_challenge,
    weighted_sum,
};
use super::proof::{SenderProofCheck, receiver_halves, receiver_response};
use super::{
    MSG_RECEIVER_COMMIT, MSG_RECEIVER_POINTS, MSG_RECEIVER_RESPONSE, MSG_RECEIVER_RESPONSES,
    MSG_SENDER_COMMIT, MSG_SENDER_POINTS, MSG_SENDER_RESPONSE, MSG_TAGS, PIECE, PROTOCOL,
    RECEIVER_ITEM_LEN, SENDER_ITEM_LEN,
};
use crate::protocols::common::{
    CHUNK, forward_bulk, match_tags, pipelined, queue_closed, queue_frames, tag_from_bytes,
};
use crate::protocols::rr17a::recv_exact;
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use curve25519_dalek::ristretto::{RistrettoBasepointTable, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, IsIdentity};
use rand::CryptoRng;
use rayon::prelude::*;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use zeroize::Zeroizing;

/// Runs the receiver with `items` (distinct) on `ch`; returns the indices of `items` in the
/// intersection.
///
/// Errors: the handshake's; `Malformed` for a message of the wrong length, a point that is not a
/// canonical Ristretto255 encoding or a scalar that is not below the group order (naming the
/// element); `CheckFailed` if the sender's key commitment is the identity or its proof π_S does
/// not verify.
pub fn receive<C: Channel + ?Sized>(
    ch: &mut C,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut impl CryptoRng,
) -> Result<ReceiverOutput> {
    let mut run = Run::start(ch, &PROTOCOL, Role::Receiver, items.len(), opts, rng)?;
    let (n1, n2) = run.sizes();
    let tag_len = run.tag_len()?;
    let sid = run.session.id;
    let gens = generators();
    let hash = ItemHash::new(&run.session);

    // E(x_i) = H(x_i)/2 and PCH/2 = Σ E(x_i).
    let halves: Zeroizing<Vec<RistrettoPoint>> = Zeroizing::new(
        items
            .par_chunks(PIECE)
            .flat_map_iter(|piece| hash.half_points(piece))
            .collect(),
    );
    let half_sum = Zeroizing::new(halves.par_iter().sum::<RistrettoPoint>());
    run.lap("hash");

    // X = PCH + g·R_c and the commitment A = g·D.
    let r_c = Zeroizing::new(random_scalar(rng));
    let d = Zeroizing::new(random_scalar(rng));
    let x = *half_sum + *half_sum + &gens.g * &*r_c;
    let mut commit = [0u8; 2 * POINT_LEN];
    commit[..POINT_LEN].copy_from_slice(x.compress().as_bytes());
    commit[POINT_LEN..].copy_from_slice((&gens.g * &*d).compress().as_bytes());

    let (peer_tags, own_tags) = pipelined(
        ch,
        queue_frames(CHUNK * SENDER_ITEM_LEN),
        move |rx, queue_tx, aborted| {
            let head = recv_exact(rx, MSG_SENDER_COMMIT, 2 * POINT_LEN)?;
            if queue_tx.send(head).is_err() {
                return Ok(Vec::new());
            }
            let mut answers = BulkReader::new(MSG_SENDER_POINTS, SENDER_ITEM_LEN, n1);
            forward_bulk(rx, &mut answers, &queue_tx, aborted)?;
            if aborted.load(Ordering::Relaxed) || answers.remaining() > 0 {
                return Ok(Vec::new());
            }
            let s = recv_exact(rx, MSG_SENDER_RESPONSE, SCALAR_LEN)?;
            if queue_tx.send(s).is_err() {
                return Ok(Vec::new());
            }
            drop(queue_tx);
            let mut reader = BulkReader::new(MSG_TAGS, tag_len, n2);
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
            let halves = halves;
            tx.send(MSG_RECEIVER_COMMIT, &commit)?;
            let mut transcript = Transcript::new(RECEIVER_PROOF, &sid);
            transcript.absorb(&commit);

            // M_i ‖ N_i ‖ B_i per item, in frames of 2^14; S_M/2 = Σ w_i·M_i/2 for π_S's check.
            let mut r: Zeroizing<Vec<Scalar>> = Zeroizing::new(Vec::with_capacity(items.len()));
            let mut beta: Zeroizing<Vec<Scalar>> = Zeroizing::new(Vec::with_capacity(items.len()));
            let mut weights: Vec<Scalar> = Vec::with_capacity(items.len());
            let mut s_m_half = RistrettoPoint::identity();
            let mut frame = Vec::new();
            for (c, chunk) in halves.chunks(CHUNK).enumerate() {
                let start = c * CHUNK;
                for _ in chunk {
                    r.push(random_scalar(rng));
                    beta.push(random_scalar(rng));
                }
                weights.extend(random_weights(rng, chunk.len()));
                let (rs, bs, ws) = (&r[start..], &beta[start..], &weights[start..]);
                let parts: Vec<(Vec<u8>, RistrettoPoint)> = chunk
                    .par_chunks(PIECE)
                    .enumerate()
                    .map(|(p, piece)| {
                        let at = p * PIECE;
                        let mut points = Vec::with_capacity(3 * piece.len());
                        for (j, e) in piece.iter().enumerate() {
                            points.extend(receiver_halves(e, &half_sum, &rs[at + j], &bs[at + j]));
                        }
                        let mut bytes = Vec::with_capacity(piece.len() * RECEIVER_ITEM_LEN);
                        for enc in RistrettoPoint::double_and_compress_batch(&points) {
                            bytes.extend_from_slice(enc.as_bytes());
                        }
                        let ms: Vec<RistrettoPoint> = points.iter().step_by(3).copied().collect();
                        (bytes, weighted_sum(&ws[at..at + piece.len()], &ms))
                    })
                    .collect();
                frame.clear();
                for (bytes, part) in parts {
                    frame.extend_from_slice(&bytes);
                    s_m_half += part;
                }
                transcript.absorb(&frame);
                tx.send(MSG_RECEIVER_POINTS, &frame)?;
                run.report("blind", (start + chunk.len()) as u64, n1);
            }
            drop(halves);
            run.lap("blind");

            // π_R's responses: φ = D + e·R_c and φ_i = D_i + e·R_i.
            let receiver_digest = transcript.digest();
            let e = challenge(&receiver_digest);
            let phi = *d + e * *r_c;
            tx.send(MSG_RECEIVER_RESPONSE, phi.as_bytes())?;
            for (rs, bs) in r.chunks(CHUNK).zip(beta.chunks(CHUNK)) {
                frame.clear();
                for (ri, bi) in rs.iter().zip(bs) {
                    frame.extend_from_slice(receiver_response(bi, ri, &e).as_bytes());
                }
                tx.send(MSG_RECEIVER_RESPONSES, &frame)?;
            }
            drop(beta);
            run.lap("prove");

            // The sender's Z ‖ A', then its answers: K_i = M'_i − Z·R_i and our tags T(K_i, x_i).
            let head = queue_rx
                .recv()
                .map_err(|_| queue_closed(MSG_SENDER_COMMIT))?;
            let z = decode_point(&head[..POINT_LEN], MSG_SENDER_COMMIT, 0)?;
            let a1 = decode_point(&head[POINT_LEN..], MSG_SENDER_COMMIT, 1)?;
            if z.is_identity() {
                return Err(Error::CheckFailed(
                    "the sender's key commitment Z is the identity (a zero key)".into(),
                ));
            }
            let z_table = RistrettoBasepointTable::create(&z);
            let mut sender_transcript = Transcript::new(SENDER_MESSAGES, &sid);
            sender_transcript.absorb(&head);
            let mut check = SenderProofCheck::new(s_m_half + s_m_half);
            let mut own_tags = Vec::with_capacity(items.len() * tag_len);
            let mut done = 0usize;
            while done < items.len() {
                let frame = queue_rx
                    .recv()
                    .map_err(|_| queue_closed(MSG_SENDER_POINTS))?;
                sender_transcript.absorb(&frame);
                let count = frame.len() / SENDER_ITEM_LEN;
                let parts: Vec<(Vec<u8>, RistrettoPoint, RistrettoPoint)> = frame
                    .par_chunks(PIECE * SENDER_ITEM_LEN)
                    .enumerate()
                    .map(
                        |(p, piece)| -> Result<(Vec<u8>, RistrettoPoint, RistrettoPoint)> {
                            let first = done + p * PIECE;
                            let len = piece.len() / SENDER_ITEM_LEN;
                            let (mut answers, mut commits, mut ks) = (
                                Vec::with_capacity(len),
                                Vec::with_capacity(len),
                                Vec::with_capacity(len),
                            );
                            for (j, el) in piece.chunks_exact(SENDER_ITEM_LEN).enumerate() {
                                let i = first + j;
                                let answer =
                                    decode_point(&el[..POINT_LEN], MSG_SENDER_POINTS, i as u64)?;
                                let commitment =
                                    decode_point(&el[POINT_LEN..], MSG_SENDER_POINTS, i as u64)?;
                                let two_r = Zeroizing::new(r[i] + r[i]);
                                ks.push(answer - &z_table * &*two_r);
                                answers.push(answer);
                                commits.push(commitment);
                            }
                            let mut tags = Vec::with_capacity(len * tag_len);
                            for (j, enc) in RistrettoPoint::double_and_compress_batch(&ks)
                                .iter()
                                .enumerate()
                            {
                                hash.tag(enc.as_bytes(), &items[first + j], tag_len, &mut tags);
                            }
                            let w = &weights[first..first + len];
                            Ok((tags, weighted_sum(w, &commits), weighted_sum(w, &answers)))
                        },
                    )
                    .collect::<Result<_>>()?;
                for (tags, s_a, s_mp) in parts {
                    own_tags.extend_from_slice(&tags);
                    check.add_answers(s_a, s_mp);
                }
                done += count;
                run.report("unblind", done as u64, n1);
            }
            let s_frame = queue_rx
                .recv()
                .map_err(|_| queue_closed(MSG_SENDER_RESPONSE))?;
            let s = decode_scalar(&s_frame, MSG_SENDER_RESPONSE, 0)?;
            let c = sender_challenge(&sid, &receiver_digest, &sender_transcript.digest());
            check.verify(&z, &a1, &s, &c)?;
            run.lap("unblind");
            Ok(own_tags)
        },
    )?;
    let peer: HashSet<u128> = peer_tags
        .chunks_exact(tag_len)
        .map(tag_from_bytes)
        .collect();
    let indices = match_tags(&own_tags, tag_len, &peer);
    run.lap("match");
    Ok(run.receiver_output(indices))
}
