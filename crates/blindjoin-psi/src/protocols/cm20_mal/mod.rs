//! `cm20_mal`: PSI from the Chase-Miao multi-point OPRF, secure against a malicious sender.
//!
//! **Paper.** Chase, Miao, *Private Set Intersection in the Internet Setting From Lightweight
//! Oblivious PRF* (CRYPTO 2020): the protocol of §3.1, Fig. 3 with Fig. 4, under Theorem 3.2
//! (security against a malicious P1), with the parameters of §3.3 and §4.1 (Table 1's
//! malicious column) and the implementation note of §4.2. The base OT is Masny, Rindal,
//! *Endemic Oblivious Transfer* (CCS 2019), `blindjoin_ot::base::endemic`.
//!
//! **Security model.** One-sided: the *sender* (CM20's P1, which has no output) may deviate
//! arbitrarily; the *receiver* (P2, which learns the intersection) must be semi-honest. Thm. 3.2
//! needs (a) F a PRF: AES as in `cm20`; (b) H1 and H2 random oracles: SHA-256 under labels
//! that bind the session id, as in `cm20` (CM20 use BLAKE2); (c) an OT secure against a
//! malicious OT receiver, which is the sender here: the w random OTs are Masny-Rindal endemic
//! OTs on Ristretto255 (UC-secure against a malicious receiver in the random-oracle model;
//! `cm20`'s Chou-Orlandi lacks that guarantee); (d) ℓ2 = σ + log2(Q2·n2) with Q2 = 2^64 queries
//! to H2 (§4.1) and n2 the receiver's set size: λ + 64 + ⌈log2 n_R⌉ bits, so that a value the
//! sender did not obtain from H2 matches none of the receiver's, and H2 has no collision
//! between its queries and the receiver's rows; (e) (1/2 + 1/(2m))^w ≤ 2^-λ, which Table 1's
//! m and w satisfy by far (2^-621 at m = 2^20), so m and w are `cm20`'s. What a malicious
//! sender can do is what the simulator of Thm. 3.2 allows: choose its input (the items whose
//! rows it computed, at most n_S of them), or send values that match nothing.
//!
//! A malicious *receiver* is not covered: it chooses k and D, and with D = 0 (so A = B = C) it
//! can evaluate any candidate item offline and test it against the sender's values. Deploy
//! `cm20_mal` where the party that learns the result is trusted to run the protocol honestly and
//! the other is not: CM20 §1.1's example is a large company (the receiver, semi-honest) and a
//! small business or consumer (the sender, possibly malicious). Where both may cheat, neither
//! `cm20` nor `cm20_mal` is the right choice.
//!
//! **Message flow.** `cm20`'s (see its module doc), with two differences: the w random OTs are
//! endemic OTs (the OT sender, our receiver, sends one point A; the OT receiver, our sender,
//! sends w pairs of points), and the OPRF values are ℓ2 bits of the malicious column:
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict                     (handshake: n_R, n_S, κ, λ and the rules)
//! R → S: Setup { m, w, ℓ2 }
//! R → S: endemic-OT point A;  S → R: w pairs (r_j0, r_j1)   R gets (k_j^0, k_j^1), S gets k_j^{s_j}
//! R → S: PRF key k                                     (right after the base OTs, §4.2)
//! R → S: Δ_1 … Δ_w
//! S → R: ψ(x) = H2(C_1[v_1] ‖ … ‖ C_w[v_w]) for every x ∈ X, in random order
//! R: output the y with H2(A_1[v_1] ‖ … ‖ A_w[v_w]) among the ψ
//! ```
//!
//! §4.2 sends k right after the base OTs, before the Δ columns: the sender sends nothing after
//! the base OTs but its values, so it gains nothing from knowing k earlier, and both parties
//! evaluate F meanwhile. The receiver reads exactly n_S values, the size the sender announced
//! in the handshake (the |Ψ| = n1 check the notes on Thm. 3.2 recommend: a frame with more
//! values than remain, or a stream that ends early, is an error).
//!
//! **Parameters** (CM20 Table 1, malicious column; unit test): at n_R = n_S = m = 2^16, 2^18,
//! 2^20, 2^22, 2^24, w = 609, 615, 621, 627, 633 and ℓ2 = 120, 122, 124, 126, 128 bits (15-16
//! bytes on the wire). The values are at most 128 bits, so at λ = 40 the receiver holds at most
//! 2^24 items (a larger set is refused with an error naming the receiver's set size).
//!
//! **Communication.** `cm20`'s plus 32 bytes per base OT and ⌈ℓ2/8⌉ − ⌈ℓ2'/8⌉ bytes per
//! sender item (ℓ2' the semi-honest length): at n = 2^20, 98.2·10^6 bytes against `cm20`'s
//! 91.9·10^6: +6.9 %, as on CM20 Table 2's figures with 16-byte values (87.6 → 93.6 MiB);
//! CM20 §5: "5 − 7% more communication".
//!
//! **Deviations from the paper.** `cm20`'s 1, 2 and 4 (m a power of two, F's output parsed per
//! AES block, m/w/ℓ2 announced in `Setup`, values in random order); the base OTs are endemic
//! OTs instead of libOTe's Naor-Pinkas, which CM20 §4.2 use for both models.

use crate::protocol::{Message, Party, Protocol, Reference, Security, two_party};
use crate::protocols::cm20::{self, Model};
use crate::protocols::common::{CM20, PSI_ROLES};
use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};

/// Protocol id in the handshake.
pub const NAME: &str = "cm20_mal";

/// The descriptor of `cm20_mal`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "cm20 against a malicious sender: endemic base OTs, 120-128-bit OPRF values",
    references: &[
        Reference {
            part: "§3 Fig. 3 with Fig. 4, Thm. 3.2, §3.3, §4.1 Table 1 (malicious ℓ2), §4.2",
            ..CM20
        },
        Reference {
            tag: "MR19",
            authors: "Masny, Rindal",
            title: "Endemic Oblivious Transfer",
            venue: "CCS 2019",
            part: "§5 (the base OTs)",
        },
    ],
    security: Security::OneSidedMalicious {
        malicious: Party::Sender,
    },
    assumptions: "the receiver must be semi-honest (it could dictionary-test the sender's values); \
                  endemic base OTs (CDH, random oracle), AES as a PRF, SHA-256 H1 and H2 as random \
                  oracles, at most 2^64 queries to H2",
    roles: PSI_ROLES,
    kappa: &[80, 128],
    params: |o| cm20::params(o.kappa, o.base_ot, Model::MaliciousSender),
    flights: 6,
    flow: &[
        Message::receiver(cm20::MSG_SETUP),
        Message::receiver(MSG_ENDEMIC_SENDER_POINT),
        Message::sender(MSG_ENDEMIC_RECEIVER_PAIRS),
        Message::receiver(cm20::MSG_KEY),
        Message::receiver(cm20::MSG_DELTA),
        Message::sender(cm20::MSG_TAGS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic: |s| cm20::traffic(s, Model::MaliciousSender),
    queries: crate::protocol::announced,
    entry: two_party!(receive, send),
};

/// Runs the receiver (semi-honest in this model) with `items` (distinct) on `ch`; returns the
/// indices of `items` in the intersection.
pub fn receive<C: blindjoin_core::channel::Channel + ?Sized>(
    ch: &mut C,
    items: &[blindjoin_core::item::Item],
    opts: &crate::RunOptions,
    rng: &mut impl rand::CryptoRng,
) -> blindjoin_core::Result<crate::ReceiverOutput> {
    cm20::receive_as(Model::MaliciousSender, ch, items, opts, rng)
}

/// Runs the sender (the party this model lets deviate) with `items` (distinct) on `ch`.
pub fn send<C: blindjoin_core::channel::Channel + ?Sized>(
    ch: &mut C,
    items: &[blindjoin_core::item::Item],
    opts: &crate::RunOptions,
    rng: &mut impl rand::CryptoRng,
) -> blindjoin_core::Result<crate::SenderOutput> {
    cm20::send_as(Model::MaliciousSender, ch, items, opts, rng)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::protocol::Sizes;
    use crate::protocols::cm20::{Params, width};

    #[test]
    fn parameters_reproduce_table_1_malicious_column() {
        // CM20 Table 1: d = 128, σ = 40, n1 = n2 = m = n; w and the malicious ℓ2.
        for (log_n, w, l2) in [
            (16, 609, 120),
            (18, 615, 122),
            (20, 621, 124),
            (22, 627, 126),
            (24, 633, 128),
        ] {
            let n = 1u64 << log_n;
            let p = Params::with_model(Model::MaliciousSender, 128, 40, n, n).unwrap();
            assert_eq!((p.m as u64, p.w, p.tag_bits), (n, w, l2), "n = 2^{log_n}");
            assert_eq!(p.tag_len, (l2 as usize).div_ceil(8));
            // The semi-honest column at the same sizes: 40 + 2·log2 n.
            let q = Params::new(128, 40, n, n).unwrap();
            assert_eq!((q.w, q.tag_bits), (w, 40 + 2 * log_n), "n = 2^{log_n}");
        }
        // Table 1's rows at n = 2^24 with m = 0.9n, 1.1n, 2n keep ℓ2 = 128.
        let n = 1u64 << 24;
        for (m, w) in [(n * 9 / 10, 717), (n * 11 / 10, 571), (2 * n, 349)] {
            assert_eq!(width(128, 40, m, n, n), Some(w), "m = {m}");
        }
        assert_eq!(cm20::tag_bits_for(Model::MaliciousSender, 40, n, n), 128);
        // §3.3's extra condition (1/2 + 1/(2m))^w ≤ 2^-λ holds with room to spare.
        let p = Params::with_model(Model::MaliciousSender, 128, 40, 1 << 20, 1 << 20).unwrap();
        let log2_bound = p.w as f64 * (0.5 + 0.5 / p.m as f64).log2();
        assert!(log2_bound < -600.0, "{log2_bound}");
    }

    #[test]
    fn values_longer_than_128_bits_are_refused() {
        // 2^24 + 1 receiver items need 40 + 64 + 25 = 129 bits.
        let e = Params::with_model(Model::MaliciousSender, 128, 40, (1 << 24) + 1, 10)
            .unwrap_err();
        match e {
            blindjoin_core::Error::InvalidParam { field, reason } => {
                assert_eq!(field, "receiver set size");
                assert!(reason.contains("129 bits"), "{reason}");
                assert!(reason.contains("2^24"), "{reason}");
            }
            e => panic!("{e}"),
        }
        // The semi-honest protocol takes that size (ℓ2 = 40 + 25 + 4 bits).
        assert!(Params::new(128, 40, (1 << 24) + 1, 10).is_ok());
    }

    #[test]
    fn communication_is_six_point_eight_percent_above_cm20() {
        // CM20 §5: the same computation and 5-7 % more communication, from ℓ2 (Table 1).
        let sizes = Sizes::new(1 << 20, 1 << 20);
        let total = |p: &Protocol| -> u64 { (p.traffic)(&sizes).unwrap().iter().map(|t| t.1).sum() };
        let (semi, mal) = (total(&cm20::PROTOCOL), total(&PROTOCOL));
        let ratio = mal as f64 / semi as f64;
        // 6.87 %: 6 more bytes per sender value (16 instead of 10) and 32 per base OT.
        assert!((1.068..1.069).contains(&ratio), "{semi} {mal} {ratio}");
        assert!((98_100_000..98_300_000).contains(&mal), "{mal}");
        // Every handshake rule of cm20 is there, the base OT and ℓ2 changed.
        let ours = (PROTOCOL.params)(&crate::RunOptions::default());
        let theirs = (cm20::PROTOCOL.params)(&crate::RunOptions::default());
        let changed: Vec<&str> = ours
            .iter()
            .zip(&theirs)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a.0.as_str())
            .collect();
        assert_eq!(ours.len(), theirs.len());
        assert_eq!(changed, ["l2", "base_ot"]);
        assert!(ours.contains(&("base_ot".into(), "endemic-ristretto255".into())));
    }
}
