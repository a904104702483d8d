//! The receiver's side of `rsa_blind`, the client (see the module doc for the message flow).

use super::key::{PublicKey, batch_invert, key_msg_len};
use super::{
    Fdh, MSG_BLINDED, MSG_KEY, MSG_SIGNATURES, MSG_TAGS, PAR_ELEMENTS, PROTOCOL, TagHash,
    frame_elements, modulus_bits,
};
use crate::protocols::common::{
    forward_bulk, match_tags, pipelined, queue_closed, queue_frames, tag_from_bytes,
};
use crate::run::Run;
use crate::{ReceiverOutput, RunOptions};
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use crypto_bigint::modular::BoxedMontyForm;
use rand::CryptoRng;
use rayon::prelude::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use zeroize::{Zeroize, Zeroizing};

/// Fresh draws of a piece's blinding factors before a modulus whose factors they keep hitting is
/// refused (an RSA modulus makes even one redraw a 2^-500 event).
const BLIND_ATTEMPTS: usize = 8;

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
    let bits = modulus_bits(run.session.kappa)?;
    let frame = ch.recv(MSG_KEY, key_msg_len(bits))?;
    let key = PublicKey::decode(&frame, bits)?;
    run.lap("key");
    let fdh = Fdh::new(&run.session, bits);
    let tag = TagHash::new(&run.session);
    let (len, per) = (key.len(), frame_elements(bits));

    let (peer_tags, own_tags) = pipelined(
        ch,
        queue_frames(per * len),
        move |rx, queue_tx, aborted: &AtomicBool| {
            // The sender's tags come first, then its answers to our frames.
            let mut reader = BulkReader::new(MSG_TAGS, tag_len, n2);
            let mut set = HashSet::new();
            while !aborted.load(Ordering::Relaxed) {
                match reader.next_frame(rx)? {
                    Some(frame) => set.extend(frame.chunks_exact(tag_len).map(tag_from_bytes)),
                    None => break,
                }
            }
            let mut sigs = BulkReader::new(MSG_SIGNATURES, len, n1);
            forward_bulk(rx, &mut sigs, &queue_tx, aborted)?;
            Ok(set)
        },
        |tx, queue_rx| {
            // μ_i = FDH(x_i)·r_i^e in our own order; r_i^-1 kept for the answers.
            let mut r_inv = Zeroizing::new(Vec::new());
            let mut buf = Vec::new();
            for (done, chunk) in items.chunks(per).enumerate() {
                buf.clear();
                blind(chunk, &fdh, &key, rng, &mut buf, &mut r_inv)?;
                tx.send(MSG_BLINDED, &buf)?;
                run.report("blind", (done * per + chunk.len()) as u64, n1);
            }
            run.lap("blind");

            // σ_i = s_i·r_i^-1, checked, and T(σ_i), as the answers arrive.
            let mut own = Vec::with_capacity(items.len() * tag_len);
            let mut done = 0usize;
            while (done as u64) < n1 {
                let frame = queue_rx
                    .recv()
                    .map_err(|_| queue_closed(MSG_SIGNATURES))?;
                let count = frame.len() / len;
                let (Some(batch), Some(inv)) = (
                    items.get(done..done + count),
                    r_inv.get(done * len..(done + count) * len),
                ) else {
                    return Err(Error::malformed(MSG_SIGNATURES, "more elements than sent"));
                };
                unblind(&frame, done, batch, inv, &fdh, &key, &tag, tag_len, &mut own)?;
                done += count;
                run.report("unblind", done as u64, n1);
            }
            run.lap("unblind");
            Ok(own)
        },
    )?;
    let indices = match_tags(&own_tags, tag_len, &peer_tags);
    run.lap("match");
    Ok(run.receiver_output(indices))
}

/// Blinds `items`: appends μ = FDH(x)·r^e mod N for each to `out` and r^-1 mod N to `r_inv`
/// (parallel over rayon's pool in pieces of [`PAR_ELEMENTS`], each piece with one inversion).
/// The blinding factors are ρ + 128 random bits from `rng` reduced mod N; a piece whose factors
/// are not all invertible is drawn again.
fn blind(
    items: &[Item],
    fdh: &Fdh,
    key: &PublicKey,
    rng: &mut impl CryptoRng,
    out: &mut Vec<u8>,
    r_inv: &mut Zeroizing<Vec<u8>>,
) -> Result<()> {
    let wide = fdh.wide_len();
    let draw = |n: usize, rng: &mut dyn rand::RngCore| {
        let mut bytes = Zeroizing::new(vec![0u8; n * wide]);
        rng.fill_bytes(&mut bytes);
        bytes
    };
    let pieces: Vec<&[Item]> = items.chunks(PAR_ELEMENTS).collect();
    let randomness: Vec<Zeroizing<Vec<u8>>> = pieces.iter().map(|p| draw(p.len(), rng)).collect();
    let mut parts: Vec<Option<Blinded>> = pieces
        .par_iter()
        .zip(&randomness)
        .map(|(piece, r)| blind_piece(piece, r, fdh, key))
        .collect();
    for (part, piece) in parts.iter_mut().zip(&pieces) {
        for _ in 1..BLIND_ATTEMPTS {
            if part.is_some() {
                break;
            }
            *part = blind_piece(piece, &draw(piece.len(), rng), fdh, key);
        }
    }
    out.reserve(items.len() * key.len());
    r_inv.reserve(items.len() * key.len());
    for part in parts {
        let Some(part) = part else {
            return Err(Error::malformed(
                MSG_KEY,
                "random blinding factors keep sharing a factor with the modulus N: it is not an \
                 RSA modulus",
            ));
        };
        out.extend_from_slice(&part.mu);
        r_inv.extend_from_slice(&part.r_inv);
    }
    Ok(())
}

/// A blinded piece: μ for each item and r^-1 for each (ρ/8 bytes each).
struct Blinded {
    mu: Vec<u8>,
    r_inv: Zeroizing<Vec<u8>>,
}

/// [`blind`] on one piece with the random bytes `rand` (ρ/8 + 16 per item); `None` if some r
/// is not invertible mod N.
fn blind_piece(items: &[Item], rand: &[u8], fdh: &Fdh, key: &PublicKey) -> Option<Blinded> {
    let (len, params) = (key.len(), key.params());
    let mut r_bytes = Zeroizing::new(Vec::with_capacity(items.len() * len));
    let mut r = Zeroizing::new(Vec::with_capacity(items.len()));
    for bytes in rand.chunks_exact(fdh.wide_len()) {
        let x = Zeroizing::new(key.reduce(bytes));
        let mut e = key.n.to_element(&x);
        r_bytes.extend_from_slice(&e);
        e.zeroize();
        r.push(BoxedMontyForm::new((*x).clone(), params));
    }
    let inv = Zeroizing::new(batch_invert(&r)?);
    let mut r_e = Zeroizing::new(Vec::with_capacity(r_bytes.len()));
    key.pow_e(&r_bytes, &mut r_e);
    let mut mu = Vec::with_capacity(items.len() * len);
    let mut r_inv = Zeroizing::new(Vec::with_capacity(items.len() * len));
    let mut x = Zeroizing::new(vec![0u8; fdh.wide_len()]);
    for ((item, r_e), inv) in items.iter().zip(r_e.chunks_exact(len)).zip(inv.iter()) {
        fdh.expand(item, &mut x);
        let h = BoxedMontyForm::new(key.reduce(&x), params);
        let r_e = BoxedMontyForm::new(key.n.from_element(r_e)?, params);
        let mut m = Zeroizing::new(h.mul(&r_e));
        mu.extend_from_slice(&key.n.to_element(&m.retrieve()));
        m.zeroize();
        let mut e = key.n.to_element(&inv.retrieve());
        r_inv.extend_from_slice(&e);
        e.zeroize();
    }
    Some(Blinded { mu, r_inv })
}

/// Unblinds a frame of signatures: checks each s < N, computes σ = s·r^-1 mod N, checks
/// σ^e ≡ FDH(x) (mod N), and appends T(σ) for each to `out`. `first` is the index of the
/// frame's first element in the whole message, for errors.
#[allow(clippy::too_many_arguments)]
fn unblind(
    frame: &[u8],
    first: usize,
    items: &[Item],
    r_inv: &[u8],
    fdh: &Fdh,
    key: &PublicKey,
    tag: &TagHash,
    tag_len: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    let len = key.len();
    if let Some(i) = key.n.first_not_below(frame) {
        return Err(Error::malformed(
            MSG_SIGNATURES,
            format!("element {} is not below the modulus N", first + i),
        ));
    }
    let parts: Vec<Vec<u8>> = frame
        .par_chunks(PAR_ELEMENTS * len)
        .zip(items.par_chunks(PAR_ELEMENTS))
        .zip(r_inv.par_chunks(PAR_ELEMENTS * len))
        .enumerate()
        .map(|(c, ((sigs, items), r_inv))| {
            let at = |i: usize| first + c * PAR_ELEMENTS + i;
            let not_below = |i: usize| {
                Error::malformed(
                    MSG_SIGNATURES,
                    format!("element {} is not below the modulus N", at(i)),
                )
            };
            let params = key.params();
            let mut sigma = Zeroizing::new(Vec::with_capacity(sigs.len()));
            for (i, (s, inv)) in sigs.chunks_exact(len).zip(r_inv.chunks_exact(len)).enumerate() {
                let s = BoxedMontyForm::new(key.n.from_element(s).ok_or_else(|| not_below(i))?, params);
                let inv = BoxedMontyForm::new(key.n.from_element(inv).ok_or_else(|| not_below(i))?, params);
                let mut v = Zeroizing::new(s.mul(&inv));
                let mut e = key.n.to_element(&v.retrieve());
                sigma.extend_from_slice(&e);
                e.zeroize();
                v.zeroize();
            }
            let mut check = Zeroizing::new(Vec::with_capacity(sigma.len()));
            key.pow_e(&sigma, &mut check);
            let mut x = Zeroizing::new(vec![0u8; fdh.wide_len()]);
            for (i, (item, c)) in items.iter().zip(check.chunks_exact(len)).enumerate() {
                fdh.expand(item, &mut x);
                let mut h = key.n.to_element(&key.reduce(&x));
                let differ = h.iter().zip(c).fold(0u8, |acc, (a, b)| acc | (a ^ b));
                h.zeroize();
                if differ != 0 {
                    return Err(Error::malformed(
                        MSG_SIGNATURES,
                        format!(
                            "element {} is not a signature of our blinded item (σ^e ≠ FDH(x) \
                             mod N)",
                            at(i)
                        ),
                    ));
                }
            }
            let mut part = Vec::with_capacity(items.len() * tag_len);
            tag.append(&sigma, len, tag_len, &mut part);
            Ok(part)
        })
        .collect::<Result<_>>()?;
    for p in &parts {
        out.extend_from_slice(p);
    }
    Ok(())
}
