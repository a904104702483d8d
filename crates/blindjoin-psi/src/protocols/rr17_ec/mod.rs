//! `rr17_ec`: malicious-secure PSI by encode-commit in the random-oracle model (RR17's EC-ROM).
//!
//! **Paper.** Rindal, Rosulek, *Malicious-Secure Private Set Intersection via Dual Execution*
//! (CCS 2017, ePrint 2017/769, "RR17"): the encode-commit protocol in the random-oracle model,
//! the "EC-ROM" rows of §7's Fig. 6-8 (cost column of Fig. 8: 3κn + n(C + D·log n + log² n)
//! bits, C ≈ 2κ a commitment, D ≈ κ a non-interactive decommitment). Our copy of the paper
//! holds only its evaluation (§7); the message flow follows the paper's public description and
//! its reference implementation, libPSI's `Rr17bMPsiSender` / `Rr17bMPsiReceiver` (read, not
//! copied), on the OOS16 encodings of `blindjoin_ot::ext::oos` as there.
//!
//! **Security model.** Malicious sender and malicious receiver, random-oracle model (SHA-256
//! as the commitment, keyed BLAKE3 as OOS16's hash), endemic base OTs, OOS16's consistency check. The
//! receiver R commits to its input through the encodings it receives (its OOS16 inputs, one
//! per slot); the sender S commits to each of its items y with c_y = H(sid, y, r_y) and sends
//! r_y encrypted under y's encoding at each of R's slots of y's bin, so R recovers r_y, and so
//! outputs x = y, only if it holds the encoding of y. S's input is the set its n2 commitments
//! open to (at most n2 items, fixed before R's output is computed); R's is the set of its
//! slots' inputs (at most m·B_R items, which is RR17's bound too: a receiver that fills the
//! empty slots of its bins tests those items as well; `SECURITY.md` states the bound).
//!
//! **Message flow** (R learns the intersection of X (|X| = n1), S holds Y (|Y| = n2);
//! bins, slots and the coin-tossed key are those of [`super::rr17_de`]: m = ⌈max(n1, n2)/8⌉
//! bins (/4 above 2^22 items), B_R slots per bin for R's items except with probability 2^-λ,
//! e(x) the low d bits of AES_key(x), d = λ + ⌈log2(n1·n2)⌉ − ⌊log2 m⌋):
//!
//! ```text
//! R → S: SHA-256(sid, share_R, nonce)          S → R: share_S          R → S: share_R, nonce
//! base:  128 endemic OTs (S sends A, R the pairs) extended by KOS to 512 random OTs (R the KOS
//!        sender); R is the OOS16 receiver, S holds the key
//! R:     its items in random slots of their bins, empty slots 0
//! per chunk of bins: R → S the u columns of the chunk's slots; S → R a challenge; R → S the
//!        proof; S checks it. R learns G_{b,l}(e(x)) for its item x in slot l of bin b
//!        (256 bits: one BLAKE3 compression, `oos::Wide`); S can evaluate G anywhere.
//! S, for each y in bin b: r_y ← {0,1}^128, c_y = SHA-256(sid, y, r_y), and for l < B_R:
//!        E_{y,l} = (t, d) with t the low 32 bits of G_{b,l}(e(y))[128..256] and
//!        d = G_{b,l}(e(y))[0..128] ⊕ r_y
//! S → R: c_y for y in a random order π, then for l = 0, 1, …, B_R − 1 the entries E_{y,l}
//!        in the same order
//! R:     for each entry (t, d) at position l: for each own x in slot l of its bin whose tag
//!        is t: x ∈ X ∩ Y iff SHA-256(sid, x, d ⊕ G_{b,l}(e(x))[0..128]) = c_y
//! ```
//!
//! A 32-bit tag narrows each entry to the receiver's items of that slot position with the
//! same tag: n1·n2/2^32 trial decommitments that fail in all (256 at n = 2^20), each one hash.
//!
//! **Deviations from the reference implementation.** (1) Eight items per bin on average, as
//! in `rr17_de` (libPSI's default is one): fewer OTs, more entries, fewer bytes in all
//! (docs/BENCHMARKS.md). (2) The entries go out position by position (all of S's items at
//! slot position 0, then 1, …) in one random order, instead of item by item: the receiver's
//! lookups for one position then stay in one small table. (3) SHA-256 commitments with the
//! session id, 32 bytes, where libPSI uses SHA-1 (20 bytes). (4) The encodings are 256-bit
//! OOS16 outputs, one BLAKE3 compression each (libPSI: a SHA-1 digest of 160 bits).

mod receiver;
mod sender;

use crate::BaseOt;
use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::PSI_ROLES;
use crate::protocols::rr17_de::{
    DeParams, ITEMS_PER_BIN, ITEMS_PER_BIN_LARGE, LARGE_SET, de_params, slot_queries,
};
use blindjoin_core::Result;
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};
use blindjoin_core::item::Item;
use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};
use blindjoin_ot::ext::KAPPA;
use blindjoin_ot::ext::iknp;
use blindjoin_ot::ext::kos;
use blindjoin_ot::ext::oos;
use blindjoin_ot::traffic;
use sha2::{Digest, Sha256};

/// Protocol id in the handshake.
pub const NAME: &str = "rr17_ec";

/// Name of the receiver's commitment to its bin-key share.
pub const MSG_COMMIT: &str = "the receiver's commitment to its bin-key share";
/// Name of the sender's bin-key share.
pub const MSG_SHARE: &str = "the sender's bin-key share";
/// Name of the receiver's opening.
pub const MSG_OPENING: &str = "the receiver's bin-key share and nonce";
/// Name of the sender's commitments to its items.
pub const MSG_COMMITMENTS: &str = "the sender's commitments to its items";
/// Name of the sender's encrypted openings.
pub const MSG_ENTRIES: &str = "the sender's encrypted openings";

/// Bytes of a commitment.
pub(crate) const COMMIT_LEN: usize = 32;
/// Bytes of an entry: a 4-byte tag and a 16-byte encrypted opening.
pub(crate) const ENTRY_LEN: usize = 20;
/// Commitments per frame.
pub(crate) const COMMIT_FRAME: usize = 1 << 14;
/// Entries per frame.
pub(crate) const ENTRY_FRAME: usize = 1 << 16;

/// The descriptor of `rr17_ec`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "encode-commit over simple hashing: OOS16 encodings of the receiver's bin slots, the sender's items committed and opened under them",
    references: &[
        Reference {
            tag: "RR17",
            authors: "Rindal, Rosulek",
            title: "Malicious-Secure Private Set Intersection via Dual Execution",
            venue: "CCS 2017",
            part: "the encode-commit protocol, random-oracle model (EC-ROM; ePrint 2017/769)",
        },
        Reference {
            tag: "OOS16",
            authors: "Orrù, Orsini, Scholl",
            title: "Actively Secure 1-out-of-N OT Extension with Application to Private Set Intersection",
            venue: "CT-RSA 2017",
            part: "§3-§4 (the OT extension and its consistency check)",
        },
    ],
    security: Security::Malicious,
    assumptions: "random oracles (SHA-256 commitments, keyed BLAKE3 as OOS16's hash), endemic base OTs (CDH), OOS16 OT extension on the BCH [511, 76, 171] code, AES as a PRP",
    roles: PSI_ROLES,
    kappa: &[128],
    params: |o| params(o.base_ot),
    // hello ‖ hello; verdict ‖ verdict; commit; share; opening; base A; pairs; KOS commitment
    // and columns; KOS seed; KOS opening and proof; per chunk u, challenge, proof (counted
    // once); commitments and entries.
    flights: 13,
    flow: &[
        Message::receiver(MSG_COMMIT),
        Message::sender(MSG_SHARE),
        Message::receiver(MSG_OPENING),
        Message::sender(MSG_ENDEMIC_SENDER_POINT),
        Message::receiver(MSG_ENDEMIC_RECEIVER_PAIRS),
        Message::sender(kos::MSG_COMMITMENT),
        Message::sender(iknp::MSG_U_COLUMNS),
        Message::receiver(kos::MSG_SEED),
        Message::sender(kos::MSG_OPENING),
        Message::sender(kos::MSG_PROOF),
        Message::receiver(oos::MSG_U_COLUMNS),
        Message::sender(oos::MSG_CHALLENGE),
        Message::receiver(oos::MSG_PROOF),
        Message::sender(MSG_COMMITMENTS),
        Message::sender(MSG_ENTRIES),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: slot_queries,
    entry: two_party!(receiver::receive, sender::send),
};

/// The handshake parameters.
fn params(base_ot: BaseOt) -> Vec<(String, String)> {
    vec![
        ("ot".into(), "oos16/bch511/check per chunk of bins".into()),
        (
            "base_ot".into(),
            format!("{} x128, kos to 512", base_ot.malicious_name()),
        ),
        (
            "bins".into(),
            format!(
                "ceil(max(n1,n2)/{ITEMS_PER_BIN}) ({ITEMS_PER_BIN_LARGE} above {LARGE_SET}), slots max_bin_size(lambda)"
            ),
        ),
        (
            "items".into(),
            "aes(sha256(sid,shares)) multiply-shift bins, low d bits".into(),
        ),
        (
            "commitment".into(),
            "sha256(sid,item,r), r 128 bits; tags 32 bits".into(),
        ),
    ]
}

/// Bins per chunk: the receiver's slots of a chunk travel in one frame.
pub(crate) fn chunk_bins(p: &DeParams) -> usize {
    (oos::ONE_FRAME / p.slots_r).max(1)
}

/// The parameters of a run (those of `rr17_de`, chunked by the receiver's slots only).
pub(crate) fn ec_params(lambda: u32, n1: u64, n2: u64) -> Result<DeParams> {
    let mut p = de_params(lambda, n1, n2)?;
    p.chunk_bins = chunk_bins(&p);
    Ok(p)
}

/// The bytes of each message.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let p = ec_params(s.lambda, s.n_recv, s.n_send)?;
    let [a, pairs] = traffic::endemic(KAPPA);
    let mut ot = [0u64; 3];
    for (b0, b1) in crate::protocols::rr17_de::chunks(&p) {
        for (x, y) in ot.iter_mut().zip(oos::traffic((b1 - b0) * p.slots_r)) {
            *x += y;
        }
    }
    let h = FRAME_HEADER_LEN as u64;
    let mut out = vec![
        (MSG_COMMIT, 32 + h),
        (MSG_SHARE, 16 + h),
        (MSG_OPENING, 32 + h),
        a,
        pairs,
    ];
    out.extend(traffic::kos(crate::protocols::rr17_de::BASE_OTS));
    out.extend([
        (oos::MSG_U_COLUMNS, ot[0]),
        (oos::MSG_CHALLENGE, ot[1]),
        (oos::MSG_PROOF, ot[2]),
        (
            MSG_COMMITMENTS,
            framed_bytes(s.n_send, COMMIT_LEN, COMMIT_FRAME),
        ),
        (
            MSG_ENTRIES,
            p.slots_r as u64 * framed_bytes(s.n_send, ENTRY_LEN, ENTRY_FRAME),
        ),
    ]);
    Ok(out)
}

/// c = SHA-256(label, sid, item, r): the sender's commitment to `item` with opening `r`.
pub(crate) fn commit(sid: &[u8; 32], item: &Item, r: &[u8; 16]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"blindjoin/psi/rr17_ec/commit/v1");
    h.update(sid);
    h.update(item.0);
    h.update(r);
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn chunks_hold_the_receivers_slots_in_one_frame() {
        let p = ec_params(40, 1 << 20, 1 << 20).unwrap();
        assert!(p.chunk_bins * p.slots_r <= oos::ONE_FRAME);
        assert!((p.chunk_bins + 1) * p.slots_r > oos::ONE_FRAME);
    }

    /// Receiver items 0..500, sender items 300..900, as [`super::super::rr17_de`]'s test.
    fn run_with(x_slots: Option<&[Item]>, y_evals: Option<&[Item]>) -> Vec<usize> {
        use crate::protocols::rr17_de::tests::item;
        let x: Vec<Item> = (0..500).map(item).collect();
        let y: Vec<Item> = (300..900).map(item).collect();
        let opts = crate::RunOptions {
            base_ot: BaseOt::Ideal,
            ..crate::RunOptions::default()
        };
        let (r, s) = blindjoin_testkit::run_two_party(
            |ch| receiver::receive_encoding(ch, &x, x_slots, &opts, &mut blindjoin_testkit::rng(1)),
            |ch| sender::send_encoding(ch, &y, y_evals, &opts, &mut blindjoin_testkit::rng(2)),
        );
        s.unwrap();
        r.unwrap().indices
    }

    #[test]
    fn a_party_that_encodes_or_opens_under_other_items_matches_only_where_they_agree() {
        use crate::protocols::rr17_de::tests::item;
        assert_eq!(run_with(None, None), (300..500).collect::<Vec<_>>());
        // The sender opens the commitments of its odd items under unrelated items' encodings.
        let y_evals: Vec<Item> = (300..900u32)
            .map(|v| {
                if (v - 300) % 2 == 0 {
                    item(v)
                } else {
                    item(10_000 + v)
                }
            })
            .collect();
        let want: Vec<usize> = (300..500).step_by(2).collect();
        assert_eq!(run_with(None, Some(&y_evals)), want);
        // ... or under the encodings of other items of the receiver's: an opening it recovers
        // then opens no commitment to its own item.
        let y_evals: Vec<Item> = (300..900u32).map(|v| item(v - 300)).collect();
        assert_eq!(run_with(None, Some(&y_evals)), Vec::<usize>::new());
        // The receiver's items divisible by 3 encode unrelated items.
        let x_slots: Vec<Item> = (0..500u32)
            .map(|v| {
                if v % 3 == 0 {
                    item(20_000 + v)
                } else {
                    item(v)
                }
            })
            .collect();
        let want: Vec<usize> = (300..500).filter(|i| i % 3 != 0).collect();
        assert_eq!(run_with(Some(&x_slots), None), want);
    }

    #[test]
    fn commitments_bind_the_session_the_item_and_the_opening() {
        let (sid, x, r) = ([1u8; 32], Item([2; 16]), [3u8; 16]);
        let c = commit(&sid, &x, &r);
        assert_ne!(c, commit(&[0; 32], &x, &r));
        assert_ne!(c, commit(&sid, &Item([0; 16]), &r));
        assert_ne!(c, commit(&sid, &x, &[0; 16]));
    }
}
