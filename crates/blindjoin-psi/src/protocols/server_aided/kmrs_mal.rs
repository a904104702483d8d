//! `kmrs_mal`: KMRS14 §2.2, Fig. 2, server-aided PSI for n ≥ 2 clients secure against a
//! malicious server (or, with small parameters, a covert one). The [parent module](super) has
//! the message flow and the deviations; this file has the labels and the result check.
//!
//! **Parameters** (KMRS14's λ and t; this crate's λ is the statistical security parameter, so
//! they are called `copies` and `dummies` here, [`RunOptions::copies`] and
//! [`RunOptions::dummies`]): every element is labelled `copies` times, and each dummy set holds
//! `dummies` labels. To drop (or add) one element undetected, the server must pick exactly the
//! `copies` labels of one element among labels it cannot tell apart, and it escapes with
//! probability at most (1/t)^(λ−1) (§2.2; Thm. 2 asks it to be negligible in s). A run refuses
//! parameters with (1/t)^(λ−1) > 2^-λ (statistical λ, 40 by default) unless
//! [`RunOptions::covert`] accepts covert security with deterrence 1 − (1/t)^(λ−1) (§2.2:
//! t = λ = 2 gives 1/2). Defaults: copies = 3 as in §4.4, dummies = 2^20 (§4.4 takes t = 10^6,
//! "s ≈ 40": (10^6)^2 = 2^39.86, just short of the 2^-40 this crate asks for; 2^20 gives 2^-40
//! exactly, for 5 % more dummy labels).
//!
//! **Labels.** F_K is AES-128 in CBC-MAC mode on two blocks, a PRF on these fixed-length
//! inputs: F_K(b1, b2) = AES_K(AES_K(b1) ⊕ b2). A real element x (its 16-byte item) gives the
//! `copies` labels F_K(x, (0, j)) for j = 1..=copies; dummy m of the dummy set D_A of a set A of
//! clients (a bit mask over 1..=n) is F_K((A, m), (1, 0)). The second block's top bit is the
//! domain bit of §2.2 that keeps dummies out of the element domain, so the dummy sets are
//! disjoint sets of t values outside U by construction, and each client derives them from the
//! coin-tossed K alone: the text variant of §2.2 (dummies from a PRG on a coin-tossed seed, with
//! a domain bit), in which step 2's check of Fig. 2 holds by construction.
//!
//! **Dummy sets for n clients.** Client i sends D_A for every set A of clients that contains i:
//! 2^(n−1) sets. D_A for A = all n clients is Fig. 2's D0 (in the intersection); every other
//! D_A is in no intersection. With n = 2 these are exactly D0 and D_i of Fig. 2. With n > 2 the
//! server sees which clients share each label (the sub-intersection pattern); if only D0 and
//! the D_{i} were sent, the labels shared by some but not all clients would all be copies of
//! real elements, and the server could add such an element to the intersection undetected
//! whenever it could group its copies (with certainty if the pattern holds one element). D_A
//! puts t dummies into every pattern a client's labels can show, so each pattern hides the
//! copies among dummies as D0 and D_{i} do for two clients. The cost grows as 2^(n−1)·t labels
//! per client; runs whose dummies exceed 2^32 labels are refused.
//!
//! Each client sends its copies·|S_i| + 2^(n−1)·t labels sorted, truncated to [`label_len`] of
//! the label counts of all n clients.
//!
//! **Check** (Fig. 2 step 6, as the bit vector over the client's own labels, spec A2): every
//! D0 label marked, no label of another dummy set marked, and for every element all or none of
//! its copies marked; otherwise [`Error::ServerCheated`] says what was seen. The output is the
//! rows whose copies are all marked.

use super::client::{AidedLinks, ClientOutput, coin_toss, key_check, run_params, submit};
use super::labels::{label_len, sort_unique, truncate};
use super::wire::{
    BITS_PER_FRAME, LABELS_PER_FRAME, MSG_BITS, MSG_COMMIT, MSG_LABELS, MSG_OPEN, MSG_SHARE,
};
use super::{KMRS14, SERVER_AIDED_ROLES};
use crate::protocol::{Entry, Message, Party, Protocol, Reference, Security, Sizes, Traffic};
use crate::run::{Phases, RunOptions, check_security};
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::framed_bytes;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::prelude::*;
use std::time::Instant;

/// Protocol id.
pub const NAME: &str = "kmrs_mal";

/// Default copies per element (KMRS14's λ, §4.4).
pub const DEFAULT_COPIES: u32 = 3;
/// Default labels per dummy set (KMRS14's t): 2^20, so that (1/t)^(λ−1) = 2^-40 with the
/// default copies (§4.4's 10^6 gives 2^-39.86).
pub const DEFAULT_DUMMIES: u64 = 1 << 20;
/// The most copies per element.
pub const MAX_COPIES: u32 = 64;
/// The most labels per dummy set.
pub const MAX_DUMMIES: u64 = 1 << 30;
/// The most dummy labels a client sends (2^(n−1) sets of t), the server's default label limit.
pub const MAX_DUMMY_LABELS: u64 = 1 << 32;

/// The tag of a D0 label among a client's labels (an element's label has its row as tag).
const COMMON: u32 = u32::MAX;
/// The tag of a label of a dummy set that not every client sends.
const OWN: u32 = u32::MAX - 1;

/// The descriptor of `kmrs_mal`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Server-aided PSI (n clients) that catches a cheating server: element copies and \
              dummy labels",
    references: &[Reference {
        part: "§2.2 Fig. 2 (MPSI), §3.3, §4.4",
        ..KMRS14
    }],
    security: Security::Malicious,
    assumptions: "AES is a PRP and SHA-256 a random oracle; a malicious server that colludes \
                  with no client (caught but with probability (1/t)^(λ-1), 2^-40 by default; \
                  covert with deterrence 1 - (1/t)^(λ-1) when asked), or an honest server and \
                  malicious clients (Thm. 2, 3)",
    roles: SERVER_AIDED_ROLES,
    kappa: &[128],
    params: |o| {
        vec![
            ("copies".into(), o.copies.to_string()),
            ("dummies".into(), o.dummies.to_string()),
        ]
    },
    // hello ‖ hello, verdict ‖ verdict, commitment, share, opening (clients); submit, status,
    // labels, status and bits, receipt (server).
    flights: 10,
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
            name: MSG_BITS,
            from: Party::Server,
        },
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: Entry::ServerAided { client },
};

/// s of KMRS14 Thm. 2: a cheating server escapes with probability at most (1/t)^(λ−1) =
/// 2^-s, s = (λ − 1)·log2 t, for λ = `copies` and t = `dummies`.
pub fn security_bits(copies: u32, dummies: u64) -> f64 {
    f64::from(copies.saturating_sub(1)) * (dummies as f64).log2()
}

/// Refuses `copies` outside 2..=[`MAX_COPIES`], `dummies` outside 2..=[`MAX_DUMMIES`] (one
/// dummy would let the server escape with probability 1), and, unless [`RunOptions::covert`],
/// parameters with t^(λ−1) < 2^λ (λ the statistical parameter), compared exactly in integers.
pub fn check_params(opts: &RunOptions) -> Result<()> {
    let (c, t) = (opts.copies, opts.dummies);
    if !(2..=MAX_COPIES).contains(&c) {
        return Err(Error::InvalidParam {
            field: "copies",
            reason: format!("{c} copies per element; 2 to {MAX_COPIES} are allowed"),
        });
    }
    if !(2..=MAX_DUMMIES).contains(&t) {
        return Err(Error::InvalidParam {
            field: "dummies",
            reason: format!("{t} labels per dummy set; 2 to 2^30 are allowed"),
        });
    }
    let reach = (1..c).fold(1u128, |acc, _| acc.saturating_mul(u128::from(t)));
    let need = 1u128.checked_shl(opts.lambda).unwrap_or(u128::MAX);
    if reach < need && !opts.covert {
        let s = security_bits(c, t);
        return Err(Error::InvalidParam {
            field: "dummies",
            reason: format!(
                "copies = {c} and dummies = {t} let a cheating server escape with probability \
                 (1/t)^(copies-1) = 2^-{s:.2}, above 2^-{}; raise them (3 and 2^20 give \
                 2^-40) or accept covert security (deterrence 1 - 2^-{s:.2})",
                opts.lambda
            ),
        });
    }
    Ok(())
}

/// The number of labels a client with `size` elements sends in a run of `parties` clients:
/// copies·size + 2^(parties−1)·t. `InvalidParam` (field `parties`) if the dummies exceed
/// [`MAX_DUMMY_LABELS`].
pub fn label_count(size: u64, copies: u32, dummies: u64, parties: u32) -> Result<u64> {
    let dummy_labels = 1u64
        .checked_shl(parties.saturating_sub(1))
        .and_then(|sets| sets.checked_mul(dummies))
        .filter(|&d| d <= MAX_DUMMY_LABELS)
        .ok_or_else(|| Error::InvalidParam {
            field: "parties",
            reason: format!(
                "{parties} clients send 2^{} dummy sets of {dummies} labels each, more than \
                 2^32 labels",
                parties.saturating_sub(1)
            ),
        })?;
    size.checked_mul(u64::from(copies))
        .and_then(|n| n.checked_add(dummy_labels))
        .ok_or_else(|| Error::InvalidParam {
            field: "set size",
            reason: format!("{size} elements × {copies} copies + {dummy_labels} dummies overflow"),
        })
}

/// The second CBC-MAC block of copy `j` of an element: domain bit 0, `j` in the low bits.
fn copy_block(j: u32) -> Block {
    Block(u128::from(j))
}

/// The second CBC-MAC block of every dummy: the domain bit (the top bit) set.
const DUMMY_BLOCK: Block = Block(1 << 127);

/// The first CBC-MAC block of dummy `m` of the dummy set D_A, `set` the bit mask of A (bit
/// i − 1 for client i).
fn dummy_block(set: u64, m: u64) -> Block {
    Block((u128::from(set) << 64) | u128::from(m))
}

/// Items (or dummies) per parallel chunk.
const CHUNK: usize = 1 << 12;

/// The labels of party `party`'s `items` and of its 2^(parties−1) dummy sets under `key` (see
/// the module doc), truncated to `len` bytes and sorted, each with its tag: the item's row for
/// the copies of an element, `COMMON` for D0, `OWN` for the other dummy sets. `InvalidParam`
/// for more labels than [`label_count`] allows, or if two labels agree (probability at most
/// 2^-λ by [`label_len`]).
pub fn mal_labels(
    key: Block,
    items: &[Item],
    copies: u32,
    dummies: u64,
    (party, parties): (u32, u32),
    len: usize,
) -> Result<Vec<(u128, u32)>> {
    let mut out = unsorted_labels(key, items, copies, dummies, (party, parties), len)?;
    sort_unique(&mut out)?;
    Ok(out)
}

/// The labels of [`mal_labels`], in the order they are computed (the copies of each chunk of
/// items, then the dummy sets), for a caller that transforms them before it sorts.
pub(crate) fn unsorted_labels(
    key: Block,
    items: &[Item],
    copies: u32,
    dummies: u64,
    (party, parties): (u32, u32),
    len: usize,
) -> Result<Vec<(u128, u32)>> {
    if items.len() >= OWN as usize {
        return Err(Error::InvalidParam {
            field: "set size",
            reason: format!("{} items; at most 2^32 - 3", items.len()),
        });
    }
    label_count(items.len() as u64, copies, dummies, parties)?;
    if !(1..=parties).contains(&party) {
        return Err(Error::InvalidParam {
            field: "party",
            reason: format!("party {party} of {parties}"),
        });
    }
    let all = u64::MAX >> (64 - parties);
    let me = 1u64 << (party - 1);
    let aes = FixedKeyAes::new(key);
    let aes = &aes;
    let copies_n = copies as usize;
    let total = label_count(items.len() as u64, copies, dummies, parties)? as usize;
    // Written in place, chunk by chunk: the copies of CHUNK items, then every dummy set.
    let mut out = vec![(0u128, 0u32); total];
    let (elements, dummy_part) = out.split_at_mut(items.len() * copies_n);
    elements
        .par_chunks_mut(CHUNK * copies_n)
        .zip(items.par_chunks(CHUNK))
        .enumerate()
        .for_each(|(c, (dst, chunk))| {
            let mut first: Vec<Block> = chunk.iter().map(|it| Block::from_bytes(it.0)).collect();
            aes.permute(&mut first);
            let k = first.len();
            let mut blocks = Vec::with_capacity(k * copies_n);
            for j in 1..=copies {
                blocks.extend(first.iter().map(|&b| b ^ copy_block(j)));
            }
            aes.permute(&mut blocks);
            for (d, (q, b)) in dst.iter_mut().zip(blocks.into_iter().enumerate()) {
                *d = (truncate(b, len), (c * CHUNK + q % k) as u32);
            }
        });
    // The sets of clients that hold this one: the bits of the n − 1 others, with ours put in.
    let sets = (0..1u64 << (parties - 1)).map(|r| (r & (me - 1)) | me | ((r & !(me - 1)) << 1));
    for (set, region) in sets.zip(dummy_part.chunks_mut(dummies as usize)) {
        let tag = if set == all { COMMON } else { OWN };
        region
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, dst)| {
                let lo = (c * CHUNK) as u64;
                let mut blocks: Vec<Block> = (lo..lo + dst.len() as u64)
                    .map(|m| dummy_block(set, m))
                    .collect();
                aes.permute(&mut blocks);
                for b in &mut blocks {
                    *b ^= DUMMY_BLOCK;
                }
                aes.permute(&mut blocks);
                for (d, b) in dst.iter_mut().zip(blocks) {
                    *d = (truncate(b, len), tag);
                }
            });
    }
    Ok(out)
}

/// Step 6 of Fig. 2 on the bit vector over the client's sorted `labels` (tags as
/// [`mal_labels`] gives them) for `n_items` items; then step 7: the sorted rows whose copies
/// are all marked.
pub fn check_result(
    labels: &[(u128, u32)],
    bits: &[u8],
    n_items: usize,
    copies: u32,
    dummies: u64,
) -> Result<Vec<usize>> {
    if bits.len() != labels.len().div_ceil(8) {
        return Err(Error::malformed(
            MSG_BITS,
            format!("{} bytes for {} labels", bits.len(), labels.len()),
        ));
    }
    let mut marked = vec![0u32; n_items];
    let (mut common_missing, mut own_marked, mut own) = (0u64, 0u64, 0u64);
    for (k, &(_, tag)) in labels.iter().enumerate() {
        let bit = bits[k / 8] >> (k % 8) & 1 == 1;
        match tag {
            COMMON => common_missing += u64::from(!bit),
            OWN => {
                own += 1;
                own_marked += u64::from(bit);
            }
            row => {
                if let Some(m) = marked.get_mut(row as usize) {
                    *m += u32::from(bit);
                }
            }
        }
    }
    if common_missing > 0 {
        return Err(Error::ServerCheated(format!(
            "{common_missing} of the {dummies} labels of the dummy set D0, which every client \
             sends, missing from the intersection"
        )));
    }
    if own_marked > 0 {
        return Err(Error::ServerCheated(format!(
            "{own_marked} of the {own} labels of the dummy sets that not every client sends \
             marked in the intersection"
        )));
    }
    let mut partial = marked.iter().filter(|&&m| m != 0 && m != copies);
    if let Some(&m) = partial.next() {
        let more = partial.count();
        let also = if more > 0 {
            format!(" (and {more} more elements partly marked)")
        } else {
            String::new()
        };
        return Err(Error::ServerCheated(format!(
            "{m} of {copies} copies of an element marked in the intersection{also}"
        )));
    }
    Ok(marked
        .iter()
        .enumerate()
        .filter(|&(_, &m)| m == copies)
        .map(|(row, _)| row)
        .collect())
}

/// The bulk bytes of a client with `n_recv` items in a run with one other client of `n_send`,
/// at the default copies and dummies: its copies·n_recv + 2t labels to the server and its bit
/// vector over them back (the coin toss and the control messages are a few dozen bytes each
/// and not listed).
fn traffic(s: &Sizes) -> Result<Traffic> {
    let ours = label_count(s.n_recv, DEFAULT_COPIES, DEFAULT_DUMMIES, 2)?;
    let theirs = label_count(s.n_send, DEFAULT_COPIES, DEFAULT_DUMMIES, 2)?;
    let len = label_len(&[ours, theirs], s.lambda)?;
    Ok(vec![
        (MSG_LABELS, framed_bytes(ours, len, LABELS_PER_FRAME)),
        (MSG_BITS, framed_bytes(ours.div_ceil(8), 1, BITS_PER_FRAME)),
    ])
}

/// A client of Fig. 2: the coin toss for K (step 3), the labels of its copies and dummies to
/// the server (step 4), the bit vector back (step 5), the check (step 6) and its rows (step 7).
fn client(
    links: &mut AidedLinks<'_>,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut dyn CryptoRng,
) -> Result<ClientOutput> {
    let p = &PROTOCOL;
    check_security(p, opts)?;
    check_params(opts)?;
    let (copies, dummies) = (opts.copies, opts.dummies);
    label_count(items.len() as u64, copies, dummies, links.parties)?;
    let mut phases = Phases::default();
    let t = Instant::now();
    let (key, sizes) = coin_toss(p, links, items.len(), opts, rng)?;
    let t = phases.lap("key agreement", t);
    let counts = sizes
        .iter()
        .map(|&n| label_count(n, copies, dummies, links.parties))
        .collect::<Result<Vec<u64>>>()?;
    let len = label_len(&counts, opts.lambda)?;
    let labels = mal_labels(
        Block::from_bytes(*key),
        items,
        copies,
        dummies,
        (links.party, links.parties),
        len,
    )?;
    let mut params = run_params(p, opts, links);
    params.push(("key check".into(), key_check(&key)));
    drop(key);
    let t = phases.lap("labels", t);
    let bits = submit(p, links, opts, params, len, &labels)?;
    let t = phases.lap("server", t);
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

    fn item(i: u32) -> Item {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&i.to_le_bytes());
        Item(b)
    }

    /// KMRS14 §4.4: "λ = 3 and t = 1000000, yielding s ≈ 40"; our default meets 2^-40 exactly.
    #[test]
    fn the_papers_parameters_give_s_of_about_40() {
        let s = security_bits(3, 1_000_000);
        assert!((s - 39.863_137).abs() < 1e-6, "{s}");
        assert_eq!(security_bits(DEFAULT_COPIES, DEFAULT_DUMMIES), 40.0);
        // The covert example of §2.2: t = λ = 2, escape 1/2.
        assert_eq!(security_bits(2, 2), 1.0);
    }

    #[test]
    fn parameters_below_lambda_need_covert() {
        let with = |copies, dummies, covert| RunOptions {
            copies,
            dummies,
            covert,
            ..RunOptions::default()
        };
        assert!(check_params(&RunOptions::default()).is_ok());
        // The paper's t = 10^6 is 0.14 bits short of λ = 40.
        let e = check_params(&with(3, 1_000_000, false)).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidParam { field: "dummies", reason } if reason.contains("2^-39.86")),
            "{e}"
        );
        assert!(check_params(&with(3, 1_000_000, true)).is_ok());
        assert!(check_params(&with(2, 2, true)).is_ok());
        assert!(check_params(&with(2, 2, false)).is_err());
        // Two copies would need t ≥ 2^40; t^(λ−1) = 2^40 exactly is enough.
        assert!(check_params(&with(2, 1 << 30, false)).is_err());
        assert!(check_params(&with(5, 1 << 10, false)).is_ok());
        assert!(check_params(&with(41, 2, false)).is_ok());
        assert!(check_params(&with(40, 2, false)).is_err());
        // λ = 20 (weak, allowed separately) lowers the bar.
        assert!(
            check_params(&RunOptions {
                lambda: 20,
                ..with(3, 1 << 10, false)
            })
            .is_ok()
        );
        for (c, t, field) in [
            (1, 1 << 20, "copies"),
            (MAX_COPIES + 1, 2, "copies"),
            (3, 1, "dummies"),
            (3, MAX_DUMMIES + 1, "dummies"),
        ] {
            let e = check_params(&with(c, t, true)).unwrap_err();
            assert!(
                matches!(e, Error::InvalidParam { field: f, .. } if f == field),
                "{c} {t}"
            );
        }
    }

    /// The labels of party 2 of 3: the copies of each element, and the dummy sets of the sets
    /// of clients that hold party 2 ({2}, {1, 2}, {2, 3} and D0 = {1, 2, 3}), each the CBC-MAC
    /// of its blocks; party 3 shares the element labels, D0 and D_{2,3} with it, no other.
    #[test]
    fn labels_are_the_cbc_mac_of_element_copies_and_dummies() {
        let key = Block(0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100);
        let items: Vec<Item> = (0..5000).map(item).collect();
        let (copies, dummies, len) = (3, 100, 16);
        let l2 = mal_labels(key, &items, copies, dummies, (2, 3), len).unwrap();
        assert_eq!(l2.len(), 3 * 5000 + 4 * 100);
        assert_eq!(l2.len() as u64, label_count(5000, 3, 100, 3).unwrap());
        assert!(l2.windows(2).all(|w| w[0].0 < w[1].0));
        let aes = FixedKeyAes::new(key);
        let mac =
            |b1: Block, b2: Block| truncate(aes.permute_block(aes.permute_block(b1) ^ b2), len);
        let dummy_set = |masks: &[u64]| -> Vec<u128> {
            let mut v: Vec<u128> = masks
                .iter()
                .flat_map(|&a| (0..dummies).map(move |m| (a, m)))
                .map(|(a, m)| mac(dummy_block(a, m), DUMMY_BLOCK))
                .collect();
            v.sort_unstable();
            v
        };
        let mut rows = vec![0u32; items.len()];
        let (mut common, mut own) = (Vec::new(), Vec::new());
        for &(l, tag) in &l2 {
            match tag {
                COMMON => common.push(l),
                OWN => own.push(l),
                row => {
                    let x = Block::from_bytes(items[row as usize].0);
                    assert!((1..=copies).any(|j| mac(x, copy_block(j)) == l));
                    rows[row as usize] += 1;
                }
            }
        }
        assert!(rows.iter().all(|&r| r == copies));
        assert_eq!(common, dummy_set(&[0b111]));
        assert_eq!(own, dummy_set(&[0b010, 0b011, 0b110]));
        let l3 = mal_labels(key, &items, copies, dummies, (3, 3), len).unwrap();
        let pick = |l: &[(u128, u32)], own: bool| -> Vec<u128> {
            l.iter()
                .filter(|&&(_, t)| (t == OWN) == own)
                .map(|&(x, _)| x)
                .collect()
        };
        assert_eq!(pick(&l2, false), pick(&l3, false));
        let own2 = pick(&l2, true);
        let shared: Vec<u128> = pick(&l3, true)
            .into_iter()
            .filter(|x| own2.binary_search(x).is_ok())
            .collect();
        assert_eq!(shared, dummy_set(&[0b110]));
        // Two clients: D0 and D_i, 2t dummies as in Fig. 2.
        let two = mal_labels(key, &items, copies, dummies, (1, 2), len).unwrap();
        assert_eq!(pick(&two, true), dummy_set(&[0b01]));
        assert_eq!(two.iter().filter(|&&(_, t)| t == COMMON).count(), 100);
    }

    #[test]
    fn label_counts_and_their_limits() {
        assert_eq!(label_count(10, 3, 16, 2).unwrap(), 30 + 32);
        assert_eq!(label_count(10, 3, 16, 3).unwrap(), 30 + 64);
        assert_eq!(label_count(0, 3, 1 << 20, 13).unwrap(), 1 << 32);
        for (size, parties, field) in [
            (0, 14, "parties"),
            (0, 64, "parties"),
            (0, 65, "parties"),
            (u64::MAX, 2, "set size"),
        ] {
            assert!(
                matches!(
                    label_count(size, 3, 1 << 20, parties),
                    Err(Error::InvalidParam { field: f, .. }) if f == field
                ),
                "{size} {parties}"
            );
        }
    }

    /// The check on hand-made bit vectors: the honest one passes, each kind of cheating is
    /// named.
    #[test]
    fn the_check_catches_each_kind_of_cheating() {
        let key = Block(7);
        let items: Vec<Item> = (0..10).map(item).collect();
        let labels = mal_labels(key, &items, 3, 4, (1, 2), 8).unwrap();
        // In the intersection: rows 2, 5, 9, and D0.
        let mark = |f: &dyn Fn(usize, u32) -> bool| {
            let mut bits = vec![0u8; labels.len().div_ceil(8)];
            for (k, &(_, tag)) in labels.iter().enumerate() {
                if f(k, tag) {
                    bits[k / 8] |= 1 << (k % 8);
                }
            }
            bits
        };
        let honest = |_: usize, tag: u32| tag == COMMON || [2, 5, 9].contains(&tag);
        let check = |bits: &[u8]| check_result(&labels, bits, 10, 3, 4);
        assert_eq!(check(&mark(&honest)).unwrap(), vec![2, 5, 9]);
        let first = |tag: u32| labels.iter().position(|&(_, t)| t == tag).unwrap();
        type Marks<'a> = Box<dyn Fn(usize, u32) -> bool + 'a>;
        let cheats: [(Marks, &str); 5] = [
            (
                Box::new(|k, t| honest(k, t) && k != first(5)),
                "2 of 3 copies of an element marked",
            ),
            (
                Box::new(|k, t| honest(k, t) || k == first(4)),
                "1 of 3 copies of an element marked",
            ),
            (
                Box::new(|k, t| honest(k, t) && k != first(COMMON)),
                "1 of the 4 labels of the dummy set D0",
            ),
            (
                Box::new(|k, t| honest(k, t) || t == OWN),
                "4 of the 4 labels of the dummy sets that not every client sends",
            ),
            (
                Box::new(|_, _| false),
                "4 of the 4 labels of the dummy set D0",
            ),
        ];
        for (f, want) in cheats {
            let e = check(&mark(&*f)).unwrap_err();
            assert!(matches!(e, Error::ServerCheated(_)), "{e}");
            let text = e.to_string();
            assert!(text.starts_with("the server cheated: "), "{text}");
            assert!(text.contains(want), "{text}");
        }
        // Dropping every copy of row 5 (and nothing else) passes: that is the guess the
        // dummies make unlikely.
        assert_eq!(
            check(&mark(&|k, t| honest(k, t) && t != 5)).unwrap(),
            vec![2, 9]
        );
    }

    #[test]
    fn traffic_counts_copies_and_both_dummy_sets() {
        let t = (PROTOCOL.traffic)(&Sizes::new(1000, 2000)).unwrap();
        let n = 3 * 1000 + 2 * DEFAULT_DUMMIES;
        let len = label_len(&[n, 3 * 2000 + 2 * DEFAULT_DUMMIES], 40).unwrap();
        assert_eq!(t[0], (MSG_LABELS, framed_bytes(n, len, LABELS_PER_FRAME)));
        assert_eq!(t[1].0, MSG_BITS);
    }
}
