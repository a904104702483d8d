//! `kmrs_size`: KMRS14 §2.4, Fig. 4, server-aided PSI for two clients that hides the
//! intersection's size from the server, secure against a malicious server; with one element
//! per client, server-aided private equality testing (§1.2: "setting the set size of our
//! intersection size-hiding protocol to 1").
//!
//! The server never intersects. P1 and P2 share K1 (coin-tossed between them, as `kmrs_mal`'s
//! K); P2 and the server share K2 (coin-tossed between them). The server relabels P1's labels
//! under K2 and returns them, P2 sends P1 its labels under both keys, P1 intersects the two,
//! and only once P2 has checked the result does the server tell P1 where its own labels went
//! (π3). The server sees P1's label count and nothing else: not P2's labels, not the
//! intersection (Thm. 6). P1 learns P2's label count, P2 the result as a bit vector over its
//! own labels.
//!
//! **Message flow** (Fig. 4 with KMRS's λ = `copies`, t = `dummies`; [`super::wire`] has the
//! frames):
//!
//! | step | from → to | content |
//! | --- | --- | --- |
//! | 1-3 | P1 ↔ P2 | the coin toss for K1 and the set sizes (as `kmrs_mal`); the dummy sets D0, D1, D2 are derived from K1 (as `kmrs_mal`) |
//! | 4 | server → P2 | a hash commitment to the server's share r_S |
//! | 4 | P2 → server | P2's share r_2 |
//! | 4 | server → P2 | r_S; K2 = H(run, r_S, r_2) |
//! | 5 | P1 → server | T1 = the labels of λ copies of each element and of D0, D1 under K1, ascending |
//! | 6 | server → P1 | T′1 = F_K2(T1), ascending (this order is π3) |
//! | 7 | P2 → P1 | T′2 = F_K2 of P2's labels of λ copies and D0, D2 under K1, ascending |
//! | 8 | P1 → P2 | the bit vector over T′2: which labels are in T′1 |
//! | 10 | P2 | the check of `kmrs_mal` (all of D0 marked, none of D2, every element's λ bits equal) |
//! | 11 | P2 → server | its verdict: approve, or abort with the reason |
//! | 11 | server → P1 | on approval, π3: for each label of T′1, the position in T1 it came from |
//! | 12 | P1 | the same check on T1 through π3 |
//! | 13 | both | the rows whose λ copies are marked |
//!
//! **Deviations and decisions.**
//! 1. *Labels* (as `kmrs_mal`): F_K1 is `kmrs_mal`'s CBC-MAC labels of element copies and
//!    dummies under K1, truncated to ℓ bytes; F_K2 is AES-128 under K2 on the ℓ-byte label
//!    (zero-padded to a block), truncated to ℓ bytes again. Two truncations can each collide,
//!    so ℓ is [`label_len`] at λ + 1 (each ≤ 2^-(λ+1)).
//! 2. *π3* (spec A4): the server returns T′1 in ascending order, which is a uniformly random
//!    permutation of T1 to P1, who does not know K2 (the labels are pseudorandom and
//!    distinct), and lets P1 intersect by merging; π3 is then sent as that sort's index list,
//!    4 bytes per label (the spec's |T1|·log2|T1| bits). KMRS14's own shuffle is biased
//!    (spec A5); none is needed.
//! 3. *Results* (spec A7.2): P1 returns to P2 a bit vector over T′2, not the set I; it says
//!    the same (P2 maps bits to its labels) in |T′2|/8 bytes.
//! 4. *F_CT for K2* (step 4): a hash commitment coin toss in which the server commits first,
//!    K2 = SHA-256("blindjoin/kmrs/size-key2" ‖ run ‖ r_S ‖ r_2), first 16 bytes, uniform if
//!    either side is honest (random-oracle model).
//! 5. *Abort* (step 11): P2 tells the server why it aborts, and the server refuses P1 with that
//!    reason, so both clients end with the same error and P1 never receives π3.
//! 6. *Parameters*: [`RunOptions::copies`] and [`RunOptions::dummies`] as `kmrs_mal` (3 and
//!    2^20 by default, 2^-40; KMRS14 §4.4 ran SizePSI at λ = 3, t = 10^6); n = 2 clients only,
//!    as Fig. 4.
//!
//! **Server-aided PET.** With one element on each side the output says whether the two are
//! equal, and the server learns nothing of it (it never sees the intersection's size); the
//! cost is the 2t dummies on each side.

use super::client::{
    AidedLinks, ClientOutput, Peers, coin_toss, commit, hash, key_check, next_status, receive_bits,
    receive_sorted, run_params, send_bits, send_labels, send_sorted, unexpected,
};
use super::kmrs_mal::{self, check_result, label_count, mal_labels, unsorted_labels};
use super::labels::{label_len, sort_unique, truncate};
use super::wire::{
    LABELS_PER_FRAME, MSG_COMMIT, MSG_LABELS, MSG_OPEN, MSG_PERMUTATION, MSG_RECEIVED,
    MSG_RELABELLED, MSG_SERVER_SHARE, MSG_SHARE, MSG_SIZE_BITS, MSG_SIZE_LABELS, MSG_VERDICT,
    ShareMsg, Status, Verdict, send_status,
};
use super::{KMRS14, two_clients};
use crate::protocol::{
    Count, Entry, Message, Party, Protocol, Reference, RoleSpec, Security, Sizes, Traffic,
};
use crate::run::{Phases, RunOptions, check_security};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::{BulkReader, Channel, framed_bytes, recv_msg, send_msg};
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use std::time::Instant;
use zeroize::Zeroizing;

/// Protocol id.
pub const NAME: &str = "kmrs_size";

/// Indices per frame of [`MSG_PERMUTATION`].
pub const INDICES_PER_FRAME: usize = 1 << 16;

/// The roles of `kmrs_size`.
const ROLES: &[RoleSpec] = &[
    RoleSpec {
        party: Party::Client,
        count: Count::Exactly(2),
        learns: "the intersection (as its own rows) and the other client's set size",
    },
    RoleSpec {
        party: Party::Server,
        count: Count::One,
        learns: "party 1's set size, never the intersection's size or an element",
    },
];

/// The descriptor of `kmrs_size`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Server-aided PSI (2 clients) hiding the intersection's size from the server; \
              server-aided PET with one element each",
    references: &[Reference {
        part: "§2.4 Fig. 4 (SizePSI), §4.4 Tab. 2-3",
        ..KMRS14
    }],
    security: Security::Malicious,
    assumptions: "AES is a PRP and SHA-256 a random oracle; a malicious server that colludes \
                  with no client (caught but with probability (1/t)^(λ-1), 2^-40 by default, \
                  and never learns the intersection's size), or an honest server and one \
                  malicious client (Thm. 6, 7)",
    roles: ROLES,
    kappa: &[128],
    params: |o| {
        vec![
            ("copies".into(), o.copies.to_string()),
            ("dummies".into(), o.dummies.to_string()),
        ]
    },
    // hello, verdict, commitment, share, opening (the K1 toss); submit, commitment, share,
    // opening (the K2 toss); T′2, bits, P2's verdict, π3, receipt. T1 and T′1 overlap with
    // the K2 toss and T′2.
    flights: 14,
    flow: &[
        Message {
            name: MSG_COMMIT,
            from: Party::Client,
        },
        Message {
            name: MSG_SHARE,
            from: Party::Client,
        },
        Message {
            name: MSG_OPEN,
            from: Party::Client,
        },
        Message {
            name: MSG_SERVER_SHARE,
            from: Party::Server,
        },
        Message {
            name: MSG_LABELS,
            from: Party::Client,
        },
        Message {
            name: MSG_RELABELLED,
            from: Party::Server,
        },
        Message {
            name: MSG_SIZE_LABELS,
            from: Party::Client,
        },
        Message {
            name: MSG_SIZE_BITS,
            from: Party::Client,
        },
        Message {
            name: MSG_VERDICT,
            from: Party::Client,
        },
        Message {
            name: MSG_PERMUTATION,
            from: Party::Server,
        },
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: Entry::ServerAided { client },
};

/// The label length of a run whose clients send `counts` labels: [`label_len`] at λ + 1, as
/// two truncations can each collide.
fn size_label_len(counts: &[u64], lambda: u32) -> Result<usize> {
    label_len(counts, lambda.saturating_add(1))
}

/// The bulk bytes around party 1 with `n_recv` items, party 2 holding `n_send`, at the default
/// copies and dummies: T1 to the server, T′1 and π3 back, T′2 from P2 and the bit vector over
/// it to P2.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let ours = label_count(
        s.n_recv,
        kmrs_mal::DEFAULT_COPIES,
        kmrs_mal::DEFAULT_DUMMIES,
        2,
    )?;
    let theirs = label_count(
        s.n_send,
        kmrs_mal::DEFAULT_COPIES,
        kmrs_mal::DEFAULT_DUMMIES,
        2,
    )?;
    let len = size_label_len(&[ours, theirs], s.lambda)?;
    Ok(vec![
        (MSG_LABELS, framed_bytes(ours, len, LABELS_PER_FRAME)),
        (MSG_RELABELLED, framed_bytes(ours, len, LABELS_PER_FRAME)),
        (MSG_PERMUTATION, framed_bytes(ours, 4, INDICES_PER_FRAME)),
        (MSG_SIZE_LABELS, framed_bytes(theirs, len, LABELS_PER_FRAME)),
        (
            MSG_SIZE_BITS,
            framed_bytes(theirs.div_ceil(8), 1, super::wire::BITS_PER_FRAME),
        ),
    ])
}

/// K2 from the server's and P2's shares (see the module doc, decision 4).
fn key2(run: &str, server: &[u8; 32], party2: &[u8; 32]) -> Zeroizing<[u8; 16]> {
    let mut full = Zeroizing::new(hash(&[
        b"blindjoin/kmrs/size-key2",
        run.as_bytes(),
        server,
        party2,
    ]));
    let mut key = Zeroizing::new([0u8; 16]);
    key.copy_from_slice(&full[..16]);
    zeroize::Zeroize::zeroize(&mut *full);
    key
}

/// F_K2 in place on labels of `len` bytes (as [`truncate`] lays them out), each with its tag:
/// AES-128 under K2 of the label zero-padded to a block, truncated to `len` bytes.
fn second_layer(key2: &[u8; 16], labels: &mut [(u128, u32)], len: usize) {
    let aes = FixedKeyAes::new(Block::from_bytes(*key2));
    labels.par_chunks_mut(CHUNK).for_each(|chunk| {
        let mut blocks: Vec<Block> = chunk.iter().map(|&(l, _)| label_block(l)).collect();
        aes.permute(&mut blocks);
        for (d, b) in chunk.iter_mut().zip(blocks) {
            d.0 = truncate(b, len);
        }
    });
}

/// The block of a label laid out as [`truncate`] does.
fn label_block(label: u128) -> Block {
    Block::from_bytes(label.to_be_bytes())
}

/// Labels per parallel chunk.
const CHUNK: usize = 1 << 12;

/// The server's step 6: F_K2 of each of party 1's `len`-byte labels (`labels`, concatenated),
/// with its position, sorted by the new label. `InvalidParam` (field `labels`) if two new
/// labels agree (probability at most 2^-(λ+1)) or there are 2^32 labels or more.
pub(crate) fn relabel(key2: &[u8; 16], labels: &[u8], len: usize) -> Result<Vec<(u128, u32)>> {
    if labels.len() / len.max(1) > u32::MAX as usize {
        return Err(Error::InvalidParam {
            field: "labels",
            reason: "2^32 labels or more".into(),
        });
    }
    let mut out = vec![(0u128, 0u32); labels.len() / len.max(1)];
    out.par_chunks_mut(CHUNK)
        .zip(labels.par_chunks(len * CHUNK))
        .enumerate()
        .for_each(|(c, (dst, src))| {
            for (k, (d, l)) in dst.iter_mut().zip(src.chunks_exact(len)).enumerate() {
                *d = (super::labels::decode_label(l), (c * CHUNK + k) as u32);
            }
        });
    second_layer(key2, &mut out, len);
    sort_unique(&mut out)?;
    Ok(out)
}

/// P2's step 7: F_K2 of each of its labels (in any order), with its tag, sorted by the new
/// label. Two first-layer labels that agree give two second-layer labels that agree, so the
/// one check for repeats after this sort covers both truncations.
fn relabel_own(
    key2: &[u8; 16],
    mut labels: Vec<(u128, u32)>,
    len: usize,
) -> Result<Vec<(u128, u32)>> {
    second_layer(key2, &mut labels, len);
    sort_unique(&mut labels)?;
    Ok(labels)
}

/// The server's side of the coin toss for K2 (step 4) on party 2's connection: commit to its
/// share r_S (`mine`, uniform), take r_2, open r_S.
pub(crate) fn server_toss(
    ch: &mut dyn Channel,
    run: &str,
    mine: Zeroizing<[u8; 32]>,
) -> Result<Zeroizing<[u8; 16]>> {
    send_status(ch, &Status::Committed(commit(&mine)))?;
    let share: ShareMsg = recv_msg(ch, MSG_SHARE, 64)?;
    if share.party != 2 {
        return Err(Error::malformed(
            MSG_SHARE,
            format!("party {} tossing K2", share.party),
        ));
    }
    send_msg(ch, MSG_SERVER_SHARE, &*mine)?;
    Ok(key2(run, &mine, &share.share))
}

/// Sends T′1 (the relabelled labels, sorted) to party 1.
pub(crate) fn send_relabelled(
    ch: &mut dyn Channel,
    relabelled: &[(u128, u32)],
    len: usize,
) -> Result<()> {
    send_sorted(ch, MSG_RELABELLED, relabelled.iter().map(|&(l, _)| l), len)
}

/// Sends π3: the position in T1 of each label of T′1, 4 bytes little-endian each.
pub(crate) fn send_permutation(ch: &mut dyn Channel, relabelled: &[(u128, u32)]) -> Result<()> {
    let mut frame = Vec::with_capacity(4 * INDICES_PER_FRAME);
    for chunk in relabelled.chunks(INDICES_PER_FRAME) {
        frame.clear();
        for &(_, i) in chunk {
            frame.extend_from_slice(&i.to_le_bytes());
        }
        ch.send(MSG_PERMUTATION, &frame)?;
    }
    Ok(())
}

/// Receives π3 over `n` labels: a permutation of 0..n, checked.
fn receive_permutation(ch: &mut dyn Channel, n: usize) -> Result<Vec<u32>> {
    let mut perm = Vec::with_capacity(n);
    let mut seen = vec![0u64; n.div_ceil(64)];
    let mut reader = BulkReader::new(MSG_PERMUTATION, 4, n as u64);
    while let Some(frame) = reader.next_frame(ch)? {
        if frame.len() > 4 * INDICES_PER_FRAME {
            return Err(Error::malformed(
                MSG_PERMUTATION,
                "a frame of more than 2^16 indices",
            ));
        }
        for b in frame.chunks_exact(4) {
            let i = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let k = i as usize;
            if k >= n || seen[k / 64] >> (k % 64) & 1 == 1 {
                return Err(Error::malformed(
                    MSG_PERMUTATION,
                    format!("not a permutation of {n} positions (index {i})"),
                ));
            }
            seen[k / 64] |= 1 << (k % 64);
            perm.push(i);
        }
    }
    Ok(perm)
}

/// P1's step 8: the bit vector over `theirs` (sorted) marking the labels also in `ours`
/// (sorted), and the positions in `ours` of those labels.
fn merge(ours: &[u128], theirs: &[u128]) -> (Vec<u8>, Vec<usize>) {
    let mut bits = vec![0u8; theirs.len().div_ceil(8)];
    let mut matched = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < ours.len() && j < theirs.len() {
        match ours[i].cmp(&theirs[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                bits[j / 8] |= 1 << (j % 8);
                matched.push(i);
                i += 1;
                j += 1;
            }
        }
    }
    (bits, matched)
}

/// A client of Fig. 4 (see the module doc): party 1 or party 2.
fn client(
    links: &mut AidedLinks<'_>,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut dyn CryptoRng,
) -> Result<ClientOutput> {
    let p = &PROTOCOL;
    check_security(p, opts)?;
    kmrs_mal::check_params(opts)?;
    two_clients(p, links)?;
    let (copies, dummies) = (opts.copies, opts.dummies);
    label_count(items.len() as u64, copies, dummies, 2)?;
    let mut phases = Phases::default();
    let t = Instant::now();
    let (key, sizes) = coin_toss(p, links, items.len(), opts, rng)?;
    let t = phases.lap("key agreement", t);
    let counts = sizes
        .iter()
        .map(|&n| label_count(n, copies, dummies, 2))
        .collect::<Result<Vec<u64>>>()?;
    let len = size_label_len(&counts, opts.lambda)?;
    // P1 sends its labels sorted; P2 relabels its own before it sorts them.
    let labelling = if links.party == 1 {
        mal_labels
    } else {
        unsorted_labels
    };
    let labels = labelling(
        Block::from_bytes(*key),
        items,
        copies,
        dummies,
        (links.party, 2),
        len,
    )?;
    let mut params = run_params(p, opts, links);
    params.push(("key check".into(), key_check(&key)));
    drop(key);
    let t = phases.lap("labels", t);
    let indices = if links.party == 1 {
        party1(
            links,
            opts,
            params,
            len,
            &labels,
            counts[1],
            items.len(),
            &mut phases,
            t,
        )?
    } else {
        party2(
            links,
            opts,
            params,
            len,
            labels,
            items.len(),
            rng,
            &mut phases,
            t,
        )?
    };
    Ok(ClientOutput {
        indices,
        sizes,
        label_len: len,
        phases,
    })
}

/// The one link to the other client.
fn peer<'a>(links: &'a mut AidedLinks<'_>) -> Result<&'a mut dyn Channel> {
    match &mut links.peers {
        Peers::Member(ch) => Ok(&mut **ch),
        Peers::Leader(chs) => match chs.first_mut() {
            Some(ch) => Ok(&mut **ch),
            None => Err(Error::InvalidParam {
                field: "peers",
                reason: "party 1 needs its link to party 2".into(),
            }),
        },
    }
}

/// Steps 5, 6, 8, 12 and 13 at P1.
#[allow(clippy::too_many_arguments)]
fn party1(
    links: &mut AidedLinks<'_>,
    opts: &RunOptions,
    params: Vec<(String, String)>,
    len: usize,
    labels: &[(u128, u32)],
    theirs: u64,
    n_items: usize,
    phases: &mut Phases,
    t: Instant,
) -> Result<Vec<usize>> {
    let p = &PROTOCOL;
    send_labels(p, links, opts, params, len, labels)?;
    match next_status(links.server, "the labels")? {
        Status::Relabelled => {}
        other => return Err(unexpected(&other, "the labels")),
    }
    let relabelled = receive_sorted(links.server, MSG_RELABELLED, len, labels.len() as u64)?;
    let t = phases.lap("server", t);
    let from_p2 = receive_sorted(peer(links)?, MSG_SIZE_LABELS, len, theirs)?;
    let (bits, matched) = merge(&relabelled, &from_p2);
    drop((relabelled, from_p2));
    send_bits(peer(links)?, MSG_SIZE_BITS, &bits)?;
    let t = phases.lap("intersection", t);
    match next_status(links.server, "the intersection")? {
        Status::Opened => {}
        other => return Err(unexpected(&other, "the intersection")),
    }
    let perm = receive_permutation(links.server, labels.len())?;
    links.server.send(MSG_RECEIVED, &[])?;
    let mut ours = vec![0u8; labels.len().div_ceil(8)];
    for k in matched {
        let i = perm[k] as usize;
        ours[i / 8] |= 1 << (i % 8);
    }
    let rows = check_result(labels, &ours, n_items, opts.copies, opts.dummies)?;
    phases.lap("output", t);
    Ok(rows)
}

/// Steps 4, 7, 10, 11 and 13 at P2.
#[allow(clippy::too_many_arguments)]
fn party2(
    links: &mut AidedLinks<'_>,
    opts: &RunOptions,
    params: Vec<(String, String)>,
    len: usize,
    labels: Vec<(u128, u32)>,
    n_items: usize,
    rng: &mut dyn CryptoRng,
    phases: &mut Phases,
    t: Instant,
) -> Result<Vec<usize>> {
    let p = &PROTOCOL;
    send_labels(p, links, opts, params, len, &[])?;
    let commitment = match next_status(links.server, "the submit hello")? {
        Status::Committed(c) => c,
        other => return Err(unexpected(&other, "the submit hello")),
    };
    let share = ShareMsg {
        party: 2,
        share: {
            let mut s = [0u8; 32];
            rng.fill_bytes(&mut s);
            s
        },
    };
    send_msg(links.server, MSG_SHARE, &share)?;
    let theirs: [u8; 32] = recv_msg(links.server, MSG_SERVER_SHARE, 64)?;
    if commit(&theirs) != commitment {
        return Err(Error::ServerCheated(
            "its key share does not match its commitment".into(),
        ));
    }
    let k2 = key2(&links.run, &theirs, &share.share);
    drop(share);
    let relabelled = relabel_own(&k2, labels, len)?;
    drop(k2);
    let t = phases.lap("server", t);
    let ch = peer(links)?;
    send_sorted(ch, MSG_SIZE_LABELS, relabelled.iter().map(|&(l, _)| l), len)?;
    let bits = receive_bits(ch, MSG_SIZE_BITS, relabelled.len(), None)?;
    let t = phases.lap("intersection", t);
    match check_result(&relabelled, &bits, n_items, opts.copies, opts.dummies) {
        Ok(rows) => {
            send_msg(links.server, MSG_VERDICT, &Verdict::Approve)?;
            phases.lap("output", t);
            Ok(rows)
        }
        Err(e) => {
            let _ = send_msg(links.server, MSG_VERDICT, &Verdict::Abort(e.to_string()));
            Err(e)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn merge_marks_the_common_labels_on_both_sides() {
        let ours = [1u128, 4, 6, 9, 12];
        let theirs = [2u128, 4, 5, 9, 10, 11, 12, 13, 14];
        let (bits, matched) = merge(&ours, &theirs);
        assert_eq!(matched, vec![1, 3, 4]);
        assert_eq!(bits, vec![0b0100_1010, 0b0000_0000]);
        assert_eq!(merge(&[], &theirs).1, Vec::<usize>::new());
    }

    /// The server's relabelling of party 1's wire bytes and party 2's relabelling of its own
    /// labels are the same function: a label both hold gets the same new label.
    #[test]
    fn both_relabellings_agree() {
        let key = [9u8; 16];
        let len = 9;
        let own: Vec<(u128, u32)> = (0..1000u32)
            .map(|i| {
                (
                    truncate(Block(u128::from(i) * 0x9e37_79b9_7f4a_7c15), len),
                    i,
                )
            })
            .collect();
        let mut wire = Vec::new();
        super::super::labels::encode_labels(own.iter().map(|&(l, _)| l), len, &mut wire);
        let server = relabel(&key, &wire, len).unwrap();
        let p2 = relabel_own(&key, own.clone(), len).unwrap();
        assert_eq!(server.len(), 1000);
        for (a, b) in server.iter().zip(&p2) {
            assert_eq!(a.0, b.0);
            // The server's index is the position in T1; P2's tag is its own, here the same.
            assert_eq!(a.1, b.1);
        }
        assert!(server.windows(2).all(|w| w[0].0 < w[1].0));
        let aes = FixedKeyAes::new(Block::from_bytes(key));
        let direct = truncate(aes.permute_block(label_block(own[7].0)), len);
        assert!(server.iter().any(|&(l, i)| l == direct && i == 7));
    }

    #[test]
    fn traffic_lists_both_directions() {
        let t = (PROTOCOL.traffic)(&Sizes::new(1000, 2000)).unwrap();
        let ours = 3 * 1000 + 2 * kmrs_mal::DEFAULT_DUMMIES;
        let theirs = 3 * 2000 + 2 * kmrs_mal::DEFAULT_DUMMIES;
        let len = label_len(&[ours, theirs], 41).unwrap();
        assert_eq!(
            t[0],
            (MSG_LABELS, framed_bytes(ours, len, LABELS_PER_FRAME))
        );
        assert_eq!(
            t[2],
            (MSG_PERMUTATION, framed_bytes(ours, 4, INDICES_PER_FRAME))
        );
        assert_eq!(
            t[3],
            (MSG_SIZE_LABELS, framed_bytes(theirs, len, LABELS_PER_FRAME))
        );
    }
}
