//! The sender's side of `rsa_blind`, the signer (see the module doc for the message flow).

use super::key::{PrivateKey, wide};
use super::{
    Fdh, MSG_BLINDED, MSG_KEY, MSG_SIGNATURES, MSG_TAGS, PAR_ELEMENTS, PROTOCOL, TagHash,
    frame_elements, modulus_bits,
};
use crate::protocols::common::{forward_bulk, pipelined, queue_closed, queue_frames};
use crate::run::Run;
use crate::{RunOptions, SenderOutput};
use blindjoin_core::channel::{BulkReader, Channel};
use blindjoin_core::handshake::Role;
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use crypto_bigint::BoxedUint;
use rand::CryptoRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use zeroize::Zeroizing;

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
    let bits = modulus_bits(run.session.kappa)?;
    let key = PrivateKey::generate(bits, rng)?;
    run.lap("keygen");
    ch.send(MSG_KEY, &key.public.encode())?;
    let fdh = Fdh::new(&run.session, bits);
    let tag = TagHash::new(&run.session);
    let (len, per) = (key.public.len(), frame_elements(bits));
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.shuffle(rng);

    pipelined(
        ch,
        queue_frames(per * len),
        move |rx, queue_tx, aborted| {
            let mut reader = BulkReader::new(MSG_BLINDED, len, n1);
            forward_bulk(rx, &mut reader, &queue_tx, aborted)
        },
        |tx, queue_rx| {
            // T(FDH(y_π(j))^d), streamed in random order while the receiver blinds.
            let mut batch = Vec::with_capacity(per);
            let mut tags = Vec::new();
            for (done, chunk) in order.chunks(per).enumerate() {
                batch.clear();
                batch.extend(chunk.iter().map(|&i| items[i]));
                tags.clear();
                own_tags(&key, &fdh, &tag, &batch, tag_len, &mut tags);
                tx.send(MSG_TAGS, &tags)?;
                run.report("sign own", (done * per + chunk.len()) as u64, n2);
            }
            run.lap("sign own");

            // s_i = μ_i^d, in the order the receiver sent μ_i.
            let mut done = 0u64;
            let mut sigs = Vec::new();
            while done < n1 {
                let frame = queue_rx.recv().map_err(|_| queue_closed(MSG_BLINDED))?;
                sigs.clear();
                sign_blinded(&key, &frame, done, &mut sigs)?;
                tx.send(MSG_SIGNATURES, &sigs)?;
                done += (frame.len() / len) as u64;
                run.report("sign", done, n1);
            }
            run.lap("sign");
            Ok(())
        },
    )?;
    Ok(run.sender_output())
}

/// Appends T(FDH(y)^d mod N) for each of `items` to `out` (parallel over rayon's pool).
fn own_tags(
    key: &PrivateKey,
    fdh: &Fdh,
    tag: &TagHash,
    items: &[Item],
    tag_len: usize,
    out: &mut Vec<u8>,
) {
    let bits = key.public.n.bits();
    let len = key.public.len();
    let parts: Vec<Vec<u8>> = items
        .par_chunks(PAR_ELEMENTS)
        .map(|chunk| {
            let mut x = Zeroizing::new(vec![0u8; fdh.wide_len()]);
            let xs: Vec<Zeroizing<BoxedUint>> = chunk
                .iter()
                .map(|item| {
                    fdh.expand(item, &mut x);
                    // FDH(y) = x mod N, and x mod p = FDH(y) mod p: the CRT halves reduce x.
                    wide(&x, bits)
                })
                .collect();
            let mut s = Zeroizing::new(Vec::with_capacity(chunk.len() * len));
            key.sign(&xs, &mut s);
            let mut part = Vec::with_capacity(chunk.len() * tag_len);
            tag.append(&s, len, tag_len, &mut part);
            part
        })
        .collect();
    for p in &parts {
        out.extend_from_slice(p);
    }
}

/// Checks a frame of the receiver's μ (each below N) and appends μ^d mod N for each to `out`,
/// each verified (s^e ≡ μ) before it is released. `first` is the index of the frame's first
/// element in the whole message, for errors.
fn sign_blinded(key: &PrivateKey, frame: &[u8], first: u64, out: &mut Vec<u8>) -> Result<()> {
    let n = &key.public.n;
    let len = key.public.len();
    if let Some(i) = n.first_not_below(frame) {
        return Err(Error::malformed(
            MSG_BLINDED,
            format!("element {} is not below the modulus N", first + i as u64),
        ));
    }
    let parts: Vec<Vec<u8>> = frame
        .par_chunks(PAR_ELEMENTS * len)
        .enumerate()
        .map(|(c, chunk)| {
            let at = |i: usize| first + (c * PAR_ELEMENTS + i) as u64;
            let xs = chunk
                .chunks_exact(len)
                .enumerate()
                .map(|(i, mu)| {
                    n.from_element(mu).map(Zeroizing::new).ok_or_else(|| {
                        Error::malformed(
                            MSG_BLINDED,
                            format!("element {} is not below the modulus N", at(i)),
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let mut s = Vec::with_capacity(chunk.len());
            key.sign(&xs, &mut s);
            // The fault check: a signature computed with a fault would reveal a factor of N.
            let mut check = Vec::with_capacity(chunk.len());
            key.public.pow_e(&s, &mut check);
            if let Some(i) = check
                .chunks_exact(len)
                .zip(chunk.chunks_exact(len))
                .position(|(a, b)| a != b)
            {
                return Err(Error::io(
                    format!("signing element {} of {MSG_BLINDED}", at(i)),
                    std::io::Error::other(
                        "the RSA signature failed its check s^e = μ mod N (a computation \
                         fault); nothing was sent for it",
                    ),
                ));
            }
            Ok(s)
        })
        .collect::<Result<_>>()?;
    out.reserve(frame.len());
    for p in &parts {
        out.extend_from_slice(p);
    }
    Ok(())
}
