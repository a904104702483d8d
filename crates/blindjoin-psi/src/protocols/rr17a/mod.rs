//! `rr17a`: Rindal-Rosulek's Bloom-filter PSI secure against malicious parties.
//!
//! **Paper.** Rindal, Rosulek, *Improved Private Set Intersection against Malicious
//! Adversaries* (Eurocrypt 2017, ePrint 2016/746; "RR17a" in CM20, "\[RR17\]" in RR17's
//! evaluation): oblivious Bloom intersection (DCW13 §4) on random OTs whose choice bits are
//! checked by cut-and-choose, with the receiver's filter mapped onto unopened OTs by a
//! permutation it sends. The paper's full text is not among this project's sources; the flow
//! follows its public description and the authors' reference implementation (libPSI,
//! `AknBfMPsiSender`/`AknBfMPsiReceiver` and libOTe's `AknOtSender`/`AknOtReceiver`, read, not
//! copied). It is the repair of DCW13 §5, whose selective-failure flaw `docs/SECURITY.md`
//! explains.
//!
//! **Security model.** Malicious sender and malicious receiver (static corruption), in the
//! random-oracle model: malicious-secure random OT (KOS with a coin-tossed challenge, on
//! Masny-Rindal endemic base OTs), SHA-256 as the random oracles H (item digests for the Bloom
//! hash functions, the summary values) and the commitment, AES as a PRP/PRG. A malicious
//! receiver is bounded by the cut-and-choose: except with probability 2^-λ it holds at most
//! `max_ones` of the sender's 1-messages, so any item outside the set the simulator extracts
//! from its random-oracle queries has a summary value it cannot compute except with
//! probability 2^-κ (`hashing::cnc_bloom_params`, conditions 1-6). A malicious sender can make
//! the receiver's output only what an ideal sender with some input would give: the receiver
//! never aborts on a value that depends on its own set (the failure DCW13 §5 has); its only
//! output is the comparison of summary values, and a value the sender did not obtain from H
//! matches nothing.
//!
//! **Message flow** (R the receiver with Y, S the sender with X; n = |Y|):
//!
//! ```text
//! hello ‖ hello; verdict ‖ verdict            (handshake: n_R, n_S, κ, λ and the rules)
//! both: (N_ot, N_1, τ, p, h, N_bf) = cnc_bloom_params(n_R, λ, κ)
//! R → S: c = SHA-256(sid ‖ seed_R ‖ nonce)    MSG_COMMIT: R's share of the Bloom hash key
//! endemic base OTs, then KOS random OTs in batches of 2^22 (S = OT sender, R = OT receiver
//!   with random choices c_j, exactly N_1 of them 1); S learns (m_j^0, m_j^1), R m_j^{c_j}
//! S → R: cnc_seed ‖ seed_S                    MSG_CHALLENGE: the opened OTs are ⌊p·N_ot⌋
//!                                             distinct indices drawn by AES-CTR(cnc_seed)
//! R → S: c_j of the opened j (packed) ‖ ⊕_{opened j} m_j^{c_j} ‖ seed_R ‖ nonce    MSG_OPENING
//! S: refuse unless the commitment opens, at most τ opened c_j are 1 and the sum matches
//! both: key = SHA-256(sid ‖ seed_S ‖ seed_R); Bloom positions of x: the distinct values of h
//!   hash functions onto [N_bf] of SHA-256(key ‖ x)
//! R: its filter BF; π maps each 1 of BF to an unopened OT with c_j = 1 and every other bit to
//!   another unopened OT, both uniformly at random (a bucketed shuffle of each choice's OTs,
//!   the leftover 1-OTs interleaved with the 0-OTs at uniformly random places)
//! R → S: π(0) … π(N_bf − 1)                   MSG_PERMUTATION (u32 each)
//! S: refuse an index ≥ N_ot, opened or repeated
//! S → R: for each x ∈ X, in random order:
//!        H(x ‖ ⊕_{i ∈ pos(x)} m^1_{π(i)})     MSG_TAGS (16 bytes each)
//! R: output the y ∈ Y whose H(y ‖ ⊕_{i ∈ pos(y)} m^{1}_{π(i)}) is among them
//! ```
//!
//! **Implementation.** Both sides keep one message per OT (16 bytes: 4.2 GB each at 2^20).
//! After the opening the receiver moves the messages of its unopened 1-OTs to the front of
//! that buffer and sorts π in the rest of it. It computes its own summary values between the
//! frames of π, while the sender checks them; the sender, which hashed its items and sorted
//! their positions by segment of π while the receiver built π, adds each segment's messages to
//! its items' masks as the segment arrives. Every random lookup is a pass of its own, so that
//! the loads of one pass are independent and overlap.
//!
//! **Parameters.** `hashing::cnc_bloom_params`: at n_R = 2^20 h = 90, N_bf = 2.57·10^8,
//! N_ot = 2.60·10^8, p = 0.008 (the reference implementation's table has N_ot within 1 %;
//! unit test there). The filter is sized for the receiver's announced set; the sender's size
//! does not enter.
//!
//! **Deviations.**
//! 1. Positions are the *distinct* values of the h hash functions (the reference XORs repeated
//!    positions, which cancel).
//! 2. The summary values are 128 bits, H(x ‖ mask), as in the paper's description; the
//!    reference sends the 128-bit masks themselves.
//! 3. The Bloom hash key is coin-tossed with a one-sided commitment (R commits, S sends its
//!    share in the clear after R is committed); the reference has both commit.
//! 4. The KOS challenge is coin-tossed per batch (`blindjoin_ot::ext::kos`).

mod receiver;
mod sender;

pub use receiver::receive;
pub use sender::send;

use crate::hashing::bloom::{BloomHasher, PositionScratch};
use crate::hashing::{CncBloomParams, cnc_bloom_params};
use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::{CHUNK, PSI_ROLES};
use crate::BaseOt;
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};
use blindjoin_core::prefix_hash::PrefixHash;
use blindjoin_core::prg::AesPrg;
use rand::RngCore;
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use rayon::prelude::*;
use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};
use blindjoin_ot::ext::{iknp, kos};
use blindjoin_ot::traffic;
use sha2::{Digest, Sha256};

/// Protocol id in the handshake.
pub const NAME: &str = "rr17a";

/// Name of the receiver's commitment to its share of the Bloom hash key.
pub const MSG_COMMIT: &str = "the receiver's commitment to its hash-key share";
/// Name of the sender's cut-and-choose seed and hash-key share.
pub const MSG_CHALLENGE: &str = "the sender's cut-and-choose seed and hash-key share";
/// Name of the receiver's opened choices, their proof and its hash-key share.
pub const MSG_OPENING: &str = "the receiver's opened choices and proof";
/// Name of the receiver's map from filter bits to OTs.
pub const MSG_PERMUTATION: &str = "the receiver's map from filter bits to OTs";
/// Name of the sender's summary values.
pub const MSG_TAGS: &str = "the sender's summary values";

/// OTs per KOS batch.
pub(crate) const OT_BATCH: usize = 1 << 22;

/// Indices of π per frame (1 MiB).
pub(crate) const PERM_FRAME: usize = 1 << 18;

/// Bytes of a summary value.
pub(crate) const TAG_LEN: usize = 16;

/// The descriptor of `rr17a`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Bloom-filter PSI on cut-and-choose random OTs: malicious-secure oblivious Bloom intersection",
    references: &[
        Reference {
            tag: "RR17a",
            authors: "Rindal, Rosulek",
            title: "Improved Private Set Intersection against Malicious Adversaries",
            venue: "Eurocrypt 2017",
            part: "the Bloom-filter PSI with cut-and-choose OTs (ePrint 2016/746)",
        },
        Reference {
            tag: "KOS15",
            authors: "Keller, Orsini, Scholl",
            title: "Actively Secure OT Extension with Optimal Overhead",
            venue: "CRYPTO 2015",
            part: "Fig. 7 (the random OTs)",
        },
    ],
    security: Security::Malicious,
    assumptions: "random oracles (SHA-256), endemic base OTs (CDH), KOS OT extension, AES as a PRP; \
                  the cut-and-choose bounds a malicious receiver's filter except with probability 2^-λ",
    roles: PSI_ROLES,
    kappa: &[128],
    params: |o| params(o.base_ot),
    // hello ‖ hello; verdict ‖ verdict; commit + base-OT A; pairs; per KOS batch three flights
    // (counted once); challenge; opening + π; tags.
    flights: 10,
    flow: &[
        Message::receiver(MSG_COMMIT),
        Message::receiver(MSG_ENDEMIC_SENDER_POINT),
        Message::sender(MSG_ENDEMIC_RECEIVER_PAIRS),
        Message::receiver(kos::MSG_COMMITMENT),
        Message::receiver(iknp::MSG_U_COLUMNS),
        Message::sender(kos::MSG_SEED),
        Message::receiver(kos::MSG_OPENING),
        Message::receiver(kos::MSG_PROOF),
        Message::sender(MSG_CHALLENGE),
        Message::receiver(MSG_OPENING),
        Message::receiver(MSG_PERMUTATION),
        Message::sender(MSG_TAGS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: filter_queries,
    entry: two_party!(receiver::receive, sender::send),
};

/// The handshake parameters.
fn params(base_ot: BaseOt) -> Vec<(String, String)> {
    vec![
        ("ot".into(), "kos/coin-tossed challenge/batches of 2^22".into()),
        ("base_ot".into(), base_ot.malicious_name().into()),
        ("cnc".into(), "chernoff(lambda), h in 1..=256, p in 0.001..=0.2".into()),
        ("bloom".into(), "sha256(key,x) then aes positions, distinct".into()),
        ("tags".into(), "sha256(x,mask)/128".into()),
    ]
}

/// [`Protocol::queries`] of `rr17a`: the cut-and-choose bounds the receiver's unopened ones
/// by `max_ones`, not its items; a filter of N_bf bits with that many ones holds about
/// −(N_bf/h)·ln(1 − max_ones/N_bf) random items (h positions each), about 1.27·n1 at n1 = 2^20.
pub(crate) fn filter_queries(s: &Sizes) -> Result<u64> {
    let p = run_params(s.kappa, s.lambda, s.n_recv)?;
    let (bits, ones) = (p.bits as f64, p.max_ones.min(p.bits) as f64);
    if ones >= bits {
        return Ok(u64::MAX);
    }
    let items = -(bits / f64::from(p.hashes)) * (1.0 - ones / bits).ln();
    Ok((items.ceil() as u64).max(s.n_recv))
}

/// The run's parameters: those of the receiver's announced size at the run's λ and κ.
pub(crate) fn run_params(kappa: u32, lambda: u32, n_recv: u64) -> Result<CncBloomParams> {
    Ok(cnc_bloom_params(n_recv, lambda, kappa)?)
}

/// Bytes of the receiver's opening for `opened` opened OTs: the packed choices, the 16-byte
/// proof and the 32-byte hash-key share and nonce.
pub(crate) fn opening_len(opened: usize) -> usize {
    opened.div_ceil(8) + 16 + 32
}

/// The bytes of each message.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let p = run_params(s.kappa, s.lambda, s.n_recv)?;
    let [a, pairs] = traffic::endemic(blindjoin_ot::ext::KAPPA);
    let kos = kos_batches(p.ots as usize);
    let opened = opened_count(p.ots, p.open_per_mille) as usize;
    let mut t = vec![(MSG_COMMIT, (32 + FRAME_HEADER_LEN) as u64), a, pairs];
    t.extend(kos);
    t.extend([
        (MSG_CHALLENGE, (32 + FRAME_HEADER_LEN) as u64),
        (MSG_OPENING, (opening_len(opened) + FRAME_HEADER_LEN) as u64),
        (MSG_PERMUTATION, framed_bytes(p.bits, 4, PERM_FRAME)),
        (MSG_TAGS, framed_bytes(s.n_send, TAG_LEN, CHUNK)),
    ]);
    Ok(t)
}

/// The KOS messages of `ots` random OTs in batches of [`OT_BATCH`], summed by name.
fn kos_batches(ots: usize) -> Vec<(&'static str, u64)> {
    let mut sum: Vec<(&'static str, u64)> = Vec::new();
    let mut left = ots;
    while left > 0 {
        let m = left.min(OT_BATCH);
        for (name, bytes) in traffic::kos(m) {
            match sum.iter_mut().find(|(n, _)| *n == name) {
                Some(e) => e.1 += bytes,
                None => sum.push((name, bytes)),
            }
        }
        left -= m;
    }
    sum
}

/// The commitment to the receiver's hash-key share.
pub(crate) fn commitment(sid: &[u8; 32], share: &[u8; 16], nonce: &[u8; 16]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"blindjoin/psi/rr17a/commit");
    h.update(sid);
    h.update(share);
    h.update(nonce);
    h.finalize().into()
}

/// The Bloom hash key from both shares.
pub(crate) fn hash_key(sid: &[u8; 32], sender: &[u8; 16], receiver: &[u8; 16]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"blindjoin/psi/rr17a/bloom-key");
    h.update(sid);
    h.update(sender);
    h.update(receiver);
    h.finalize().into()
}

/// The Bloom hash functions under `key`: the item digest SHA-256(key ‖ x) and the positions.
pub(crate) struct Positions {
    digest: PrefixHash,
    hasher: BloomHasher,
}

impl Positions {
    pub(crate) fn new(key: &[u8; 32], p: &CncBloomParams) -> Result<Positions> {
        let mut seed = [0u8; 16];
        seed.copy_from_slice(&key[..16]);
        Ok(Positions {
            digest: PrefixHash::new("blindjoin/psi/rr17a/item", key, 16, 16),
            hasher: BloomHasher::new(Block::from_bytes(seed), p.hashes as usize, p.bits)?,
        })
    }

    /// The distinct positions of item `x` (16 bytes) into `out`.
    pub(crate) fn of(
        &self,
        x: &[u8; 16],
        scratch: &mut crate::hashing::bloom::PositionScratch,
        out: &mut Vec<u32>,
    ) {
        let d = self.digest.digest(x);
        let mut b = [0u8; 16];
        b.copy_from_slice(&d[..16]);
        out.clear();
        out.extend_from_slice(self.hasher.positions(Block::from_bytes(b), scratch));
    }
}

/// Items per rayon task when hashing items and summing masks.
pub(crate) const PAR_ITEMS: usize = 1 << 10;

/// The distinct Bloom positions of every item in strides of h: item i's are
/// `flat[i·h .. i·h + lens[i]]`. Each side later replaces every position b by the OT that π
/// gives it, so that a mask is one random load per position.
pub(crate) struct ItemPositions {
    stride: usize,
    lens: Vec<u16>,
    flat: Vec<u32>,
}

impl ItemPositions {
    /// The positions of `items` under `pos`.
    pub(crate) fn of(pos: &Positions, items: &[Item]) -> ItemPositions {
        let h = pos.hasher.k();
        let mut lens = vec![0u16; items.len()];
        let mut flat = vec![0u32; items.len() * h];
        flat.par_chunks_mut(PAR_ITEMS * h)
            .zip(lens.par_chunks_mut(PAR_ITEMS))
            .zip(items.par_chunks(PAR_ITEMS))
            .for_each(|((f, l), chunk)| {
                let (mut scratch, mut at) = (PositionScratch::default(), Vec::new());
                for ((x, f), l) in chunk.iter().zip(f.chunks_exact_mut(h)).zip(l) {
                    pos.of(&x.0, &mut scratch, &mut at);
                    f[..at.len()].copy_from_slice(&at);
                    *l = at.len() as u16;
                }
            });
        ItemPositions { stride: h, lens, flat }
    }

    /// The entries of item `i`.
    pub(crate) fn item(&self, i: usize) -> &[u32] {
        &self.flat[i * self.stride..][..usize::from(self.lens[i])]
    }

    /// Replaces each entry b of items `first..end` by `f(b)`, in parallel. One pass per level
    /// of a lookup keeps each pass's random loads independent of one another, which the
    /// out-of-order core overlaps; a chain of dependent loads per entry would not be.
    pub(crate) fn map_items(&mut self, first: usize, end: usize, f: impl Fn(u32) -> u32 + Sync) {
        let h = self.stride;
        self.flat[first * h..end * h]
            .par_chunks_mut(PAR_ITEMS * h)
            .zip(self.lens[first..end].par_chunks(PAR_ITEMS))
            .for_each(|(part, lens)| {
                for (s, &l) in part.chunks_exact_mut(h).zip(lens) {
                    s[..usize::from(l)].iter_mut().for_each(|b| *b = f(*b));
                }
            });
    }

    /// Every entry, as (item, value).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        (0..self.lens.len()).flat_map(move |i| self.item(i).iter().map(move |&b| (i, b)))
    }

}

/// H(x ‖ mask) of item x into `out` (16 bytes).
pub(crate) fn tag_into(th: &PrefixHash, x: &Item, mask: Block, out: &mut [u8]) {
    let mut input = [0u8; 32];
    input[..16].copy_from_slice(&x.0);
    input[16..].copy_from_slice(&mask.to_bytes());
    out.copy_from_slice(&th.digest(&input)[..TAG_LEN]);
}

/// H(x ‖ mask) of one session.
pub(crate) fn tag_hash(sid: &[u8; 32]) -> PrefixHash {
    PrefixHash::new("blindjoin/psi/rr17a/tag", sid, 32, 32)
}

/// How many of `count` OTs are opened: ⌊p·count⌋ (p in thousandths).
pub(crate) fn opened_count(count: u64, per_mille: u32) -> u64 {
    (u128::from(count) * u128::from(per_mille) / 1000) as u64
}

/// The opened OTs of `count` OTs under `seed`, ascending: [`opened_count`] distinct indices
/// drawn uniformly from 0..count by AES-CTR(seed) (64-bit words, multiply-shift onto the
/// range, repeats redrawn).
pub(crate) fn opened(seed: Block, count: u64, per_mille: u32) -> Vec<u32> {
    let want = opened_count(count, per_mille);
    let mut prg = AesPrg::new(seed);
    let mut taken = vec![0u64; usize::try_from(count.div_ceil(64)).unwrap_or(0)];
    let mut got = 0u64;
    while got < want {
        let j = ((u128::from(prg.next_u64()) * u128::from(count)) >> 64) as usize;
        let (w, b) = (j / 64, j % 64);
        if taken[w] >> b & 1 == 0 {
            taken[w] |= 1 << b;
            got += 1;
        }
    }
    let mut out = Vec::with_capacity(want as usize);
    for (w, &bits) in taken.iter().enumerate() {
        let mut bits = bits;
        while bits != 0 {
            out.push((w * 64) as u32 + bits.trailing_zeros());
            bits &= bits - 1;
        }
    }
    out
}

/// The opened OTs of `ots` as a bitmap: bit j set if j is in `open`.
pub(crate) fn open_bitmap(open: &[u32], ots: usize) -> Vec<u64> {
    let mut bits = vec![0u64; ots.div_ceil(64)];
    for &j in open {
        bits[j as usize / 64] |= 1 << (j % 64);
    }
    bits
}

/// Receives message `what`, which must be exactly `len` bytes.
pub(crate) fn recv_exact<C: blindjoin_core::channel::FrameReceiver + ?Sized>(
    ch: &mut C,
    what: &'static str,
    len: usize,
) -> Result<Vec<u8>> {
    let m = ch.recv(what, len)?;
    if m.len() != len {
        return Err(Error::malformed(what, format!("{} bytes, {len} expected", m.len())));
    }
    Ok(m)
}

/// A message of `len` bytes from `frame` at `at`, as an array.
pub(crate) fn take<const N: usize>(frame: &[u8], at: usize, what: &'static str) -> Result<[u8; N]> {
    frame
        .get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| Error::malformed(what, format!("{} bytes, at least {} expected", frame.len(), at + N)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_core::channel::memory::MemoryChannel;
    use blindjoin_core::channel::{Channel, FrameReceiver, FrameSender};

    #[test]
    fn a_receiver_with_too_many_ones_is_caught() {
        // Twice and three times the honest share of choices 1: enough 1-messages for a filter
        // that holds far more than n items, and refused by the cut-and-choose.
        use blindjoin_core::item::Item;
        use blindjoin_testkit::{rng, run_two_party};
        let opts = crate::RunOptions {
            base_ot: BaseOt::Ideal,
            ..crate::RunOptions::default()
        };
        let items: Vec<Item> = (0..200u32).map(|i| Item([i as u8; 16])).collect();
        for factor in [2, 3] {
            let (r, s) = run_two_party(
                |ch| receiver::receive_with(ch, &items, &opts, &mut rng(1), factor),
                |ch| sender::send(ch, &items, &opts, &mut rng(2)),
            );
            match s.unwrap_err() {
                Error::CheckFailed(m) => assert!(m.contains("choices of 1"), "{m}"),
                e => panic!("{e}"),
            }
            assert!(r.is_err());
        }
        // The honest receiver with the same items passes.
        let (r, s) = run_two_party(
            |ch| receiver::receive_with(ch, &items, &opts, &mut rng(1), 1),
            |ch| sender::send(ch, &items, &opts, &mut rng(2)),
        );
        s.unwrap();
        assert_eq!(r.unwrap().indices, (0..200).collect::<Vec<_>>());
    }

    /// The receiver's end of the channel with π's entry 0 replaced by the first opened OT,
    /// which it computes from the cut-and-choose seed in the sender's challenge, as a receiver
    /// that maps a filter bit onto an OT whose choice it revealed would.
    struct NamesAnOpenedOt<'a> {
        inner: &'a mut MemoryChannel,
        params: CncBloomParams,
        first_opened: Option<u32>,
        /// The OT π(0) named, once replaced.
        named: Option<u32>,
    }

    impl FrameSender for NamesAnOpenedOt<'_> {
        fn send(&mut self, msg: &'static str, frame: &[u8]) -> Result<()> {
            let mut frame = frame.to_vec();
            if msg == MSG_PERMUTATION
                && self.named.is_none()
                && let Some(j) = self.first_opened
            {
                frame[..4].copy_from_slice(&j.to_le_bytes());
                self.named = Some(j);
            }
            self.inner.send(msg, &frame)
        }

        fn close(&mut self) {
            self.inner.close();
        }
    }

    impl FrameReceiver for NamesAnOpenedOt<'_> {
        fn recv(&mut self, what: &'static str, max_len: usize) -> Result<Vec<u8>> {
            let frame = self.inner.recv(what, max_len)?;
            if what == MSG_CHALLENGE {
                let seed = Block::from_bytes(take::<16>(&frame, 0, what)?);
                self.first_opened = opened(seed, self.params.ots, self.params.open_per_mille)
                    .first()
                    .copied();
            }
            Ok(frame)
        }
    }

    impl Channel for NamesAnOpenedOt<'_> {
        fn split(
            &mut self,
        ) -> (Box<dyn FrameReceiver + '_>, Box<dyn FrameSender + '_>) {
            self.inner.split()
        }
    }

    #[test]
    fn a_map_naming_an_opened_ot_is_refused() {
        // π(0) = the first opened OT. No entry named it before, but the sender seeded its
        // bitmap of used OTs with the opened ones, so entry 0 is refused.
        use blindjoin_core::item::Item;
        use blindjoin_testkit::{rng, run_two_party};
        let opts = crate::RunOptions {
            base_ot: BaseOt::Ideal,
            ..crate::RunOptions::default()
        };
        let items: Vec<Item> = (0..200u32).map(|i| Item([i as u8; 16])).collect();
        let (named, s) = run_two_party(
            |ch| {
                let mut ch = NamesAnOpenedOt {
                    inner: ch,
                    params: run_params(128, 40, 200).unwrap(),
                    first_opened: None,
                    named: None,
                };
                assert!(receiver::receive_with(&mut ch, &items, &opts, &mut rng(1), 1).is_err());
                ch.named
            },
            |ch| sender::send(ch, &items, &opts, &mut rng(2)),
        );
        let j = named.expect("the receiver sent π");
        match s.unwrap_err() {
            Error::Malformed { message, reason } => {
                assert_eq!(message, MSG_PERMUTATION);
                assert_eq!(
                    reason,
                    format!("entry 0 names OT {j}, which is opened or named before")
                );
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn opened_fraction_follows_p() {
        let o = opened(Block(7), 1_000_000, 10);
        assert_eq!(o.len(), 10_000);
        assert!(o.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(opened(Block(7), 1_000_000, 10), o);
        assert_ne!(opened(Block(8), 1_000_000, 10), o);
        assert!(opened(Block(7), 0, 10).is_empty());
    }
}
