//! `kmrs_fair`: KMRS14 §2.3, Fig. 3, fair server-aided PSI for two clients: secure against a
//! malicious server (as `kmrs_mal`), and against one malicious client with an honest server,
//! fair: either both clients learn the result or neither does (Thm. 4, 5). KMRS14 did not
//! implement it (§3).
//!
//! The labels carry two layers of keys: F_K1 hides the elements, F_K2 makes the labels. The
//! server intersects as in `kmrs_mal`, commits to each client's result, and only then do the
//! clients open K2 and their first-layer values F_K1(S_i), from which the server checks that
//! each client's labels are well formed (λ copies of each value and the right dummy sets).
//! A client that sent malformed labels (to learn more than the intersection, or to make the
//! other's result wrong) is caught before anyone has a result, and the server then refuses
//! both; otherwise it opens both commitments. The server, committed before the openings, can
//! no longer adapt the result to what they reveal.
//!
//! **Message flow** (Fig. 3 with KMRS's λ = `copies`, t = `dummies`):
//!
//! | step | from → to | content |
//! | --- | --- | --- |
//! | 1-3 | P1 ↔ P2 | the coin toss for K and the set sizes (as `kmrs_mal`); K1, K2 derived from K; D0, D1, D2 derived from K2 |
//! | 4 | each P_i → server | T_i = the labels F_K2 of λ copies of each F_K1(x), x ∈ S_i, and of D0, D_i, ascending, and a key check |
//! | 5-6 | server → each P_i | once both are in: a hash commitment to P_i's bit vector over T_i |
//! | 7 | each P_i → server | K2 and its first-layer values F_K1(S_i), ascending |
//! | 8 | server | recomputes each T_i from K2 and the opened values; refuses both clients unless both match |
//! | 9 | server → each P_i | the bit vector and the commitment's opening |
//! | 10 | each P_i | checks the opening, then the check of `kmrs_mal` (all of D0 marked, none of D_i, every element's λ bits equal) |
//! | 11 | each P_i | the rows whose λ copies are marked |
//!
//! **The paper's gaps, fixed** (spec A3, A7.6):
//! 1. *K2*: the server needs it to check T_i (step 8), as §2.3's text says ("their shared key
//!    K") and the figure omits; each client sends it in its opening.
//! 2. *The result and its padding*: Fig. 3 commits to I padded to |S1| + t elements, which
//!    ignores λ (a true I can hold λ·min(|S1|, |S2|) + t labels). We commit to each client's
//!    bit vector over its own labels instead (the result format of every protocol here, spec
//!    A7.2): it has |T_i| bits whatever the intersection's size, which is what padding I to
//!    a public bound achieves for a set, and a client learns nothing of the other's labels'
//!    order. Each client checks its own opening.
//! 3. *The commitment* (unnamed in the paper): SHA-256("blindjoin/kmrs/fair-result" ‖ run ‖
//!    party ‖ r ‖ bits) with a fresh 256-bit r per client: hiding and binding in the
//!    random-oracle model.
//! 4. *Dummy sets*: as `kmrs_mal` (the §2.2 text variant), under K2, so that opening K2 opens
//!    D0, D1 and D2 (step 7) without a list of 2t values; elements and dummies stay disjoint
//!    by the domain bit. Step 2's check holds by construction.
//! 5. *Layers*: F_K1 is AES-128 under K1 on the 16-byte item, kept whole (a permutation, so
//!    distinct items stay distinct); F_K2 is `kmrs_mal`'s CBC-MAC labels under K2 with the
//!    first-layer value as the element, truncated to [`label_len`] bytes. K1 and K2 are the
//!    first 16 bytes of SHA-256 of a label and the coin-tossed K.
//!
//! **What the server learns**: as `kmrs_mal` (both set sizes, the intersection's size); after
//! its commitment also K2 and F_K1(S_i), from which it can tell dummies and copies apart and
//! see which first-layer values both clients hold, pseudorandom values under K1, which it
//! never sees.

use super::client::{
    AidedLinks, ClientOutput, coin_toss, hash, key_check, next_status, receive_bits, run_params,
    send_labels, send_sorted, unexpected,
};
use super::kmrs_mal::{self, check_result, label_count, mal_labels};
use super::labels::{encode_labels, label_len};
use super::wire::{
    FairOpen, LABELS_PER_FRAME, MSG_BITS, MSG_COMMIT, MSG_FAIR_NONCE, MSG_FAIR_OPEN,
    MSG_FAIR_VALUES, MSG_LABELS, MSG_OPEN, MSG_RECEIVED, MSG_SHARE, Submit,
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
use sha2::{Digest, Sha256};
use std::time::Instant;
use zeroize::Zeroizing;

/// Protocol id.
pub const NAME: &str = "kmrs_fair";

/// The roles of `kmrs_fair`.
const ROLES: &[RoleSpec] = &[
    RoleSpec {
        party: Party::Client,
        count: Count::Exactly(2),
        learns: "the intersection (as its own rows) and the other client's set size, only if \
                 the other client learns it too",
    },
    RoleSpec {
        party: Party::Server,
        count: Count::One,
        learns: "both set sizes and the intersection's size, never an element",
    },
];

/// The descriptor of `kmrs_fair`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Fair server-aided PSI (2 clients): both clients learn the result or neither; \
              a cheating server or client is caught",
    references: &[Reference {
        part: "§2.3 Fig. 3",
        ..KMRS14
    }],
    security: Security::Malicious,
    assumptions: "AES is a PRP and SHA-256 a random oracle; a malicious server that colludes \
                  with no client (caught but with probability (1/t)^(λ-1), 2^-40 by default), \
                  or an honest server and one malicious client, with fairness (Thm. 4, 5)",
    roles: ROLES,
    kappa: &[128],
    params: |o| {
        vec![
            ("copies".into(), o.copies.to_string()),
            ("dummies".into(), o.dummies.to_string()),
        ]
    },
    // hello, verdict, commitment, share, opening (the key toss); submit, status, labels,
    // commitment, opening, bits and nonce, receipt.
    flights: 12,
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
            name: MSG_LABELS,
            from: Party::Client,
        },
        Message {
            name: MSG_FAIR_OPEN,
            from: Party::Client,
        },
        Message {
            name: MSG_FAIR_VALUES,
            from: Party::Client,
        },
        Message {
            name: MSG_BITS,
            from: Party::Server,
        },
        Message {
            name: MSG_FAIR_NONCE,
            from: Party::Server,
        },
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: Entry::ServerAided { client },
};

/// The bulk bytes of a client with `n_recv` items in a run with one other client of `n_send`,
/// at the default copies and dummies: its labels and its first-layer values to the server, its
/// bit vector back.
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
    let len = label_len(&[ours, theirs], s.lambda)?;
    Ok(vec![
        (MSG_LABELS, framed_bytes(ours, len, LABELS_PER_FRAME)),
        (
            MSG_FAIR_VALUES,
            framed_bytes(s.n_recv, 16, LABELS_PER_FRAME),
        ),
        (
            MSG_BITS,
            framed_bytes(ours.div_ceil(8), 1, super::wire::BITS_PER_FRAME),
        ),
    ])
}

/// K1 and K2 from the coin-tossed K (decision 5).
fn layer_keys(key: &[u8; 16]) -> (Zeroizing<[u8; 16]>, Zeroizing<[u8; 16]>) {
    let derive = |label: &[u8]| {
        let mut full = Zeroizing::new(hash(&[label, key]));
        let mut k = Zeroizing::new([0u8; 16]);
        k.copy_from_slice(&full[..16]);
        zeroize::Zeroize::zeroize(&mut *full);
        k
    };
    (
        derive(b"blindjoin/kmrs/fair-k1"),
        derive(b"blindjoin/kmrs/fair-k2"),
    )
}

/// F_K1 of every item, in the items' order.
fn first_layer(k1: &[u8; 16], items: &[Item]) -> Vec<Item> {
    let aes = FixedKeyAes::new(Block::from_bytes(*k1));
    items
        .par_chunks(1 << 12)
        .flat_map_iter(|chunk| {
            let mut blocks: Vec<Block> = chunk.iter().map(|it| Block::from_bytes(it.0)).collect();
            aes.permute(&mut blocks);
            blocks.into_iter().map(|b| Item(b.to_bytes()))
        })
        .collect()
}

/// The commitment to a client's bit vector (decision 3).
pub(crate) fn commit_result(run: &str, party: u32, nonce: &[u8; 32], bits: &[u8]) -> [u8; 32] {
    hash(&[
        b"blindjoin/kmrs/fair-result",
        run.as_bytes(),
        &party.to_le_bytes(),
        nonce,
        bits,
    ])
}

/// SHA-256 of the labels as the client sends them: `len` bytes each, in order.
fn labels_digest(labels: &[(u128, u32)], len: usize) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut buf = Vec::with_capacity(LABELS_PER_FRAME * len);
    for chunk in labels.chunks(LABELS_PER_FRAME) {
        buf.clear();
        encode_labels(chunk.iter().map(|&(l, _)| l), len, &mut buf);
        h.update(&buf);
    }
    h.finalize().into()
}

/// A client's opening as the server received it.
pub(crate) struct Opening {
    key2: Zeroizing<[u8; 16]>,
    values: Vec<Item>,
    copies: u32,
    dummies: u64,
}

/// A parameter of the run from the submit hello.
fn param<T: std::str::FromStr>(s: &Submit, name: &str) -> std::result::Result<T, String> {
    s.params
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
        .ok_or_else(|| format!("no valid `{name}` among the run's parameters"))
}

/// The server's step 7: the client's opening, its element count consistent with the labels it
/// announced, and its first-layer values, strictly ascending.
pub(crate) fn receive_opening(ch: &mut dyn Channel, s: &Submit) -> Result<Opening> {
    let open: FairOpen = recv_msg(ch, MSG_FAIR_OPEN, 64)?;
    let bad = |why: String| Error::malformed(MSG_FAIR_OPEN, why);
    let copies: u32 = param(s, "copies").map_err(bad)?;
    let dummies: u64 = param(s, "dummies").map_err(bad)?;
    if label_count(open.items, copies, dummies, 2).ok() != Some(s.count) {
        return Err(bad(format!(
            "{} elements do not make the {} labels sent",
            open.items, s.count
        )));
    }
    // Grown as the values arrive (the server reserved their bytes when the client joined).
    let mut values = Vec::with_capacity(usize::try_from(open.items).unwrap_or(0).min(1 << 16));
    let mut reader = BulkReader::new(MSG_FAIR_VALUES, 16, open.items);
    let mut last: Option<[u8; 16]> = None;
    while let Some(frame) = reader.next_frame(ch)? {
        if frame.len() > 16 * LABELS_PER_FRAME {
            return Err(Error::malformed(
                MSG_FAIR_VALUES,
                "a frame of more than 2^16 values",
            ));
        }
        for v in frame.chunks_exact(16) {
            let mut b = [0u8; 16];
            b.copy_from_slice(v);
            if last.is_some_and(|p| p >= b) {
                return Err(Error::malformed(
                    MSG_FAIR_VALUES,
                    "the values are not in strictly ascending order",
                ));
            }
            last = Some(b);
            values.push(Item(b));
        }
    }
    Ok(Opening {
        key2: Zeroizing::new(open.key2),
        values,
        copies,
        dummies,
    })
}

/// The server's step 8: the labels that party `s.party`'s opening gives, against the digest of
/// the labels it sent; the reason if they differ.
pub(crate) fn check_opening(
    s: &Submit,
    opening: &Opening,
    digest: &[u8; 32],
) -> std::result::Result<(), String> {
    let labels = mal_labels(
        Block::from_bytes(*opening.key2),
        &opening.values,
        opening.copies,
        opening.dummies,
        (s.party, 2),
        s.label_len as usize,
    )
    .map_err(|e| e.to_string())?;
    if labels_digest(&labels, s.label_len as usize) != *digest {
        return Err(
            "its labels are not λ copies of its opened values and its dummy sets under K2".into(),
        );
    }
    Ok(())
}

/// A client of Fig. 3 (see the module doc).
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
    let len = label_len(&counts, opts.lambda)?;
    let (k1, k2) = layer_keys(&key);
    let mut values = first_layer(&k1, items);
    drop(k1);
    let labels = mal_labels(
        Block::from_bytes(*k2),
        &values,
        copies,
        dummies,
        (links.party, 2),
        len,
    )?;
    let mut params = run_params(p, opts, links);
    params.push(("key check".into(), key_check(&key)));
    drop(key);
    let t = phases.lap("labels", t);
    send_labels(p, links, opts, params, len, &labels)?;
    let ch = &mut *links.server;
    let commitment = match next_status(ch, "the labels")? {
        super::wire::Status::Committed(c) => c,
        other => return Err(unexpected(&other, "the labels")),
    };
    let t = phases.lap("server", t);
    let open = FairOpen {
        key2: *k2,
        items: values.len() as u64,
    };
    send_msg(ch, MSG_FAIR_OPEN, &open)?;
    drop((open, k2));
    values.par_sort_unstable();
    send_sorted(
        ch,
        MSG_FAIR_VALUES,
        values.iter().map(|v| u128::from_be_bytes(v.0)),
        16,
    )?;
    drop(values);
    let matches = match next_status(ch, "the opening")? {
        super::wire::Status::Result { matches } => matches,
        other => return Err(unexpected(&other, "the opening")),
    };
    let bits = receive_bits(ch, MSG_BITS, labels.len(), Some(matches))?;
    let nonce: [u8; 32] = ch
        .recv(MSG_FAIR_NONCE, 32)?
        .try_into()
        .map_err(|_| Error::malformed(MSG_FAIR_NONCE, "not 32 bytes"))?;
    if commit_result(&links.run, links.party, &nonce, &bits) != commitment {
        return Err(Error::ServerCheated(
            "the bit vector it opened is not the one it committed to".into(),
        ));
    }
    ch.send(MSG_RECEIVED, &[])?;
    let t = phases.lap("opening", t);
    let indices = check_result(&labels, &bits, items.len(), copies, dummies)?;
    phases.lap("output", t);
    Ok(ClientOutput {
        indices,
        sizes,
        label_len: len,
        phases,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn submit(party: u32, count: u64, len: u32) -> Submit {
        Submit {
            version: super::super::wire::WIRE_VERSION,
            protocol: NAME.into(),
            run: "r".into(),
            party,
            parties: 2,
            label_len: len,
            count,
            params: vec![
                ("copies".into(), "3".into()),
                ("dummies".into(), "16".into()),
            ],
            sizes: vec![0, 0],
            identities: Vec::new(),
        }
    }

    /// The server's check accepts the labels an honest client sends and refuses labels with
    /// one copy missing, one copy of another value, or the wrong party's dummy set.
    #[test]
    fn the_opening_check_accepts_exactly_well_formed_labels() {
        let (k1, k2) = layer_keys(&[5u8; 16]);
        let items: Vec<Item> = (0..50u8).map(|i| Item([i; 16])).collect();
        let mut values = first_layer(&k1, &items);
        let len = 9;
        let labels = mal_labels(Block::from_bytes(*k2), &values, 3, 16, (1, 2), len).unwrap();
        values.sort_unstable();
        let opening = Opening {
            key2: k2.clone(),
            values: values.clone(),
            copies: 3,
            dummies: 16,
        };
        let s = submit(1, labels.len() as u64, len as u32);
        assert_eq!(
            check_opening(&s, &opening, &labels_digest(&labels, len)),
            Ok(())
        );
        // Party 2's dummy set instead of party 1's.
        assert!(
            check_opening(
                &submit(2, labels.len() as u64, len as u32),
                &opening,
                &labels_digest(&labels, len)
            )
            .is_err()
        );
        // A copy dropped, or replaced by a copy of a value not opened.
        let mut fewer = labels.clone();
        fewer.remove(10);
        assert!(check_opening(&s, &opening, &labels_digest(&fewer, len)).is_err());
        let other = mal_labels(
            Block::from_bytes(*k2),
            &[Item([0xee; 16])],
            3,
            16,
            (1, 2),
            len,
        )
        .unwrap();
        let mut swapped = fewer;
        swapped.push(other[0]);
        swapped.sort_unstable();
        assert!(check_opening(&s, &opening, &labels_digest(&swapped, len)).is_err());
        // Another K2.
        let wrong = Opening {
            key2: Zeroizing::new([6u8; 16]),
            values,
            copies: 3,
            dummies: 16,
        };
        assert!(check_opening(&s, &wrong, &labels_digest(&labels, len)).is_err());
    }

    #[test]
    fn the_commitment_binds_run_party_nonce_and_bits() {
        let c = commit_result("r", 1, &[1; 32], &[0b101]);
        assert_ne!(c, commit_result("r", 2, &[1; 32], &[0b101]));
        assert_ne!(c, commit_result("s", 1, &[1; 32], &[0b101]));
        assert_ne!(c, commit_result("r", 1, &[2; 32], &[0b101]));
        assert_ne!(c, commit_result("r", 1, &[1; 32], &[0b100]));
        assert_eq!(c, commit_result("r", 1, &[1; 32], &[0b101]));
    }
}
