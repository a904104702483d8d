//! `rr17_de`: malicious-secure PSI by dual execution of OOS16 encodings in the random-oracle
//! model (RR17's DE-ROM).
//!
//! **Paper.** Rindal, Rosulek, *Malicious-Secure Private Set Intersection via Dual Execution*
//! (CCS 2017, ePrint 2017/769, "RR17"): the dual-execution protocol in the random-oracle model
//! (the "DE-ROM" rows of §7's Fig. 6-8). Our copy of the paper holds only its evaluation (§7);
//! the message flow below follows the paper's public description (the abstract and §7's cost
//! columns: 6κn + βn log n bits online, 4n log n random-oracle calls) and the paper's reference
//! implementation, libPSI's `Rr17aMPsiSender` / `Rr17aMPsiReceiver` (read, not copied). The
//! encodings are Orrù-Orsini-Scholl's 1-out-of-N OT (`blindjoin_ot::ext::oos`), as in libPSI.
//!
//! **Security model.** Malicious sender and malicious receiver, random-oracle model, on
//! endemic base OTs and OOS16's consistency check. Each party's input to the intersection is
//! fixed by the encodings it receives as OOS16 receiver (its "commitment"); a comparison value
//! ties that encoding to the party's evaluation of the other's encodings at the same item, so
//! a party that uses one item in one role and another in the other matches nothing. What a
//! cheating party can still do, as in RR17: fill the empty slots of its bins with further
//! items (the receiver's effective set has at most m·B_R items, not n1), and a sender can give
//! an item masks at some of the receiver's slot positions only, which makes the item match
//! with the probability that the receiver's random slot is among them (a sender of at most
//! n2·B_R such masks); `SECURITY.md` states both.
//!
//! **Message flow** (R learns the intersection of X (|X| = n1), S holds Y (|Y| = n2);
//! m = ⌈max(n1, n2)/8⌉ bins (/4 above 2^22 items); B_R, B_S: the largest bin of n1, n2 items
//! in m bins except with probability 2^-λ (`hashing::params::max_bin_size`)):
//!
//! ```text
//! R → S: SHA-256(sid, share_R, nonce)            S → R: share_S          R → S: share_R, nonce
//!        key = SHA-256(sid, share_S, share_R); h(x) = AES_key(x); bin(x) = ⌊hi64(h)·m / 2^64⌋;
//!        e(x) = the low d bits of h, d = λ + ⌈log2(n1·n2)⌉ − ⌊log2 m⌋ ≤ 76
//! base:  128 endemic OTs (S sends A, R the pairs), extended by KOS to 512 random OTs (R the KOS
//!        sender): the base OTs of OOS16 forward (R is the OOS receiver, S the key holder);
//!        its first 512 instances, on R's random bits c, are the reverse OOS16's base OTs
//!        (S holds (F_i(0), F_i(1)), R learns F_i(c_i)): S is the reverse receiver
//! both:  each party puts its items into the m bins and each bin's items into random slots of
//!        its B slots; empty slots hold 0
//! per chunk of bins, both directions at once (each party sends, in this order):
//!   R → S: forward u columns of R's slots      S → R: reverse u columns of S's slots
//!   S → R: forward challenge                   R → S: reverse challenge
//!   R → S: forward proof                       S → R: reverse proof
//!   R gets r_x = F^R_{b,s(x)}(e(x)), S gets r_y = F^S_{b,s(y)}(e(y)) (OOS16 outputs)
//!   S, for y in the chunk's bins and l < B_R:  m_{y,l} = F^R_{b,l}(e(y)) ⊕ r_y
//!   R, for x in the chunk's bins and l < B_S:  v_{x,l} = F^S_{b,l}(e(x)) ⊕ r_x, kept with s(x)
//! S → R: for l = 0, 1, …, B_R − 1: the n2 masks m_{y,l}, β bits each, ordered by their low
//!        k bits and uniformly at random within each of the 2^k buckets (k = ⌈log2(n2/2^12)⌉)
//! R: x ∈ X ∩ Y  iff  some m_{y,l} with l = s(x) mod B_R equals some v_{x,l'}
//! ```
//!
//! If x = y then m_{y,s(x)} = F^R_{b,s(x)}(e(x)) ⊕ F^S_{b,s(y)}(e(y)) = v_{x,s(y)}. R compares
//! each mask at position l only with the values of its items in slot l, so n2 · n1 · B_S
//! comparisons, and β = λ + ⌈log2(n1·n2·B_S)⌉ bits keep a false match below 2^-λ. The masks'
//! order is fixed by their values and fresh randomness, so it tells R nothing that a random
//! permutation would not; R's table for position l keeps each bucket in one region, so its
//! lookups stay in the L2 cache (`engine.rs`).
//!
//! **Deviations from the reference implementation.** (1) Masks of λ + log2(n1·n2·B_S) bits;
//! libPSI sends λ + 2·ln(n·B) − 1 bits (a natural logarithm), which at n = 2^20 is 73 bits and
//! leaves a false match about 2^-22 likely. (2) The reverse direction's base OTs come from the
//! forward OOS16 instead of a second round of public-key and KOS OTs. (3) Items map to bins by
//! multiply-shift of AES under the coin-tossed key, and the OOS input is the low d bits (libPSI
//! takes the low bits modulo the bin count and shifts by log2 n). (4) Eight items per bin on
//! average (libPSI's default is one): fewer, larger bins cost fewer OTs and more comparisons;
//! at n = 2^20 eight were faster than four (with 15 % fewer bytes) and than sixteen
//! (docs/BENCHMARKS.md). Above 2^22 items four, which keep the receiver's values within
//! 10.3 GB at 2^24. (5) The masks go out slot position by slot position in bucket order
//! (libPSI: item by item, in a random order of the items). (6) Both directions of a chunk run
//! at once, each party's frames read by a thread of its own.

pub(crate) mod engine;
mod receiver;
mod sender;

use crate::BaseOt;
use crate::hashing::max_bin_size;
use crate::protocol::{Message, Protocol, Reference, Security, Sizes, Traffic, two_party};
use crate::protocols::common::PSI_ROLES;
use blindjoin_core::aes::FixedKeyAes;
use blindjoin_core::channel::{FRAME_HEADER_LEN, framed_bytes};
use blindjoin_core::item::Item;
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::base::endemic::{MSG_ENDEMIC_RECEIVER_PAIRS, MSG_ENDEMIC_SENDER_POINT};
use blindjoin_ot::ext::KAPPA;
use blindjoin_ot::ext::iknp;
use blindjoin_ot::ext::kos;
use blindjoin_ot::ext::oos::{self, Names};
use blindjoin_ot::traffic;
use sha2::{Digest, Sha256};

/// Protocol id in the handshake.
pub const NAME: &str = "rr17_de";

/// Name of the receiver's commitment to its hash-key share.
pub const MSG_COMMIT: &str = "the receiver's commitment to its bin-key share";
/// Name of the sender's hash-key share.
pub const MSG_SHARE: &str = "the sender's bin-key share";
/// Name of the receiver's opening.
pub const MSG_OPENING: &str = "the receiver's bin-key share and nonce";
/// Name of the sender's masks.
pub const MSG_MASKS: &str = "the sender's masks";

/// The forward OOS16 (the receiver is its receiver).
pub const FORWARD: Names = Names {
    u: "the receiver's OOS16 u columns",
    challenge: "the sender's OOS16 challenge",
    proof: "the receiver's OOS16 proof",
};
/// The reverse OOS16 (the sender is its receiver).
pub const REVERSE: Names = Names {
    u: "the sender's OOS16 u columns",
    challenge: "the receiver's OOS16 challenge",
    proof: "the sender's OOS16 proof",
};

/// Average items per bin of the larger set, up to [`LARGE_SET`] items.
pub(crate) const ITEMS_PER_BIN: u64 = 8;
/// Above this many items, four items per bin: fewer slots per bin, so that the receiver's
/// n1·B_S values (16 bytes each) stay within 10.3 GB at 2^24 (eight per bin would need about
/// 13 GB, and both parties would not fit a 24 GiB machine).
pub(crate) const LARGE_SET: u64 = 1 << 22;
/// Average items per bin above [`LARGE_SET`] items.
pub(crate) const ITEMS_PER_BIN_LARGE: u64 = 4;
/// Base OTs of each OOS16 direction.
pub(crate) const BASE_OTS: usize = 512;
/// Masks per frame of [`MSG_MASKS`].
pub(crate) const MASK_FRAME: usize = 1 << 16;
/// Masks per bucket of the sender's order (about): a bucket of the receiver's table then
/// fits the L2 cache.
const MASKS_PER_BUCKET: u64 = 1 << 12;

/// The descriptor of `rr17_de`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "dual execution of OOS16 encodings over simple hashing: malicious-secure PSI on symmetric-key primitives",
    references: &[
        Reference {
            tag: "RR17",
            authors: "Rindal, Rosulek",
            title: "Malicious-Secure Private Set Intersection via Dual Execution",
            venue: "CCS 2017",
            part: "the dual-execution protocol, random-oracle model (DE-ROM; ePrint 2017/769)",
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
    assumptions: "random oracles (SHA-256), endemic base OTs (CDH), OOS16 OT extension on the BCH [511, 76, 171] code, AES as a PRP",
    roles: PSI_ROLES,
    kappa: &[128],
    params: |o| params(o.base_ot),
    // hello ‖ hello; verdict ‖ verdict; commit; share; opening; base A; pairs; KOS commitment
    // and columns; KOS seed; KOS opening and proof; the reverse base OTs (OOS16: u, challenge,
    // proof); per chunk both OOS16 directions at once (three flights); masks.
    flights: 17,
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
        Message::receiver(FORWARD.u),
        Message::sender(FORWARD.challenge),
        Message::receiver(FORWARD.proof),
        Message::sender(REVERSE.u),
        Message::receiver(REVERSE.challenge),
        Message::sender(REVERSE.proof),
        Message::sender(MSG_MASKS),
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: slot_queries,
    entry: two_party!(receiver::receive, sender::send),
};

/// The handshake parameters.
fn params(base_ot: BaseOt) -> Vec<(String, String)> {
    vec![
        (
            "ot".into(),
            "oos16/bch511/check per batch of 2^17 bins' slots".into(),
        ),
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
    ]
}

/// The parameters of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeParams {
    /// Bins.
    pub bins: usize,
    /// Slots per bin of the receiver's and the sender's items.
    pub slots_r: usize,
    pub slots_s: usize,
    /// Bits of the OOS16 inputs.
    pub input_bits: u32,
    /// Bytes of a mask.
    pub mask_len: usize,
    /// Bins per chunk.
    pub chunk_bins: usize,
    /// The masks of one receiver slot position are ordered by their low `bucket_bits` bits.
    pub bucket_bits: u32,
}

fn log2_ceil(x: u64) -> u32 {
    x.max(1).next_power_of_two().trailing_zeros()
}

/// [`Protocol::queries`] of the dual-execution protocols: a receiver may fill the empty slots
/// of its bins, so it can test m·B_R items, not n1 (module doc).
pub(crate) fn slot_queries(s: &Sizes) -> Result<u64> {
    let p = de_params(s.lambda, s.n_recv, s.n_send)?;
    Ok((p.bins as u64).saturating_mul(p.slots_r as u64))
}

/// The run's parameters for set sizes n1 (receiver) and n2 (sender).
pub(crate) fn de_params(lambda: u32, n1: u64, n2: u64) -> Result<DeParams> {
    let big = n1.max(n2).max(1);
    let per_bin = if big > LARGE_SET {
        ITEMS_PER_BIN_LARGE
    } else {
        ITEMS_PER_BIN
    };
    let bins = big.div_ceil(per_bin);
    let slots = |n: u64| -> Result<usize> {
        if n == 0 {
            return Ok(1);
        }
        max_bin_size(n, bins, lambda).map_err(|e| Error::InvalidParam {
            field: "set size",
            reason: e.to_string(),
        })
    };
    let (slots_r, slots_s) = (slots(n1)?, slots(n2)?);
    let floor_log2_bins = 63 - bins.leading_zeros();
    let input_bits = (lambda + log2_ceil(n1.max(1)) + log2_ceil(n2.max(1)))
        .saturating_sub(floor_log2_bins)
        .max(1);
    if input_bits > oos::INPUT_BITS {
        return Err(Error::InvalidParam {
            field: "set size",
            reason: format!(
                "{input_bits}-bit encoding inputs for n1 = {n1}, n2 = {n2}; OOS16's code takes {}",
                oos::INPUT_BITS
            ),
        });
    }
    let mask_bits =
        lambda + log2_ceil(n1.max(1)) + log2_ceil(n2.max(1)) + log2_ceil(slots_s as u64);
    let mask_len = mask_bits.div_ceil(8) as usize;
    if mask_len > MAX_MASK_LEN {
        return Err(Error::InvalidParam {
            field: "set size",
            reason: format!("{mask_bits}-bit masks exceed {} bits", 8 * MAX_MASK_LEN),
        });
    }
    let bins = usize::try_from(bins).map_err(|_| Error::InvalidParam {
        field: "set size",
        reason: format!("{bins} bins do not fit this machine"),
    })?;
    Ok(DeParams {
        bins,
        slots_r,
        slots_s,
        input_bits,
        mask_len,
        chunk_bins: (oos::ONE_FRAME / slots_r.max(slots_s)).max(1),
        bucket_bits: log2_ceil(n2.div_ceil(MASKS_PER_BUCKET)),
    })
}

/// Longest mask (bytes): a table entry holds 96 bits of it.
const MAX_MASK_LEN: usize = 12;

/// The chunks of bins, in order: `[b0, b1)` of at most `chunk_bins` bins.
pub(crate) fn chunks(p: &DeParams) -> impl Iterator<Item = (usize, usize)> + '_ {
    (0..p.bins)
        .step_by(p.chunk_bins)
        .map(|b0| (b0, (b0 + p.chunk_bins).min(p.bins)))
}

/// The bytes of each message.
fn traffic(s: &Sizes) -> Result<Traffic> {
    let p = de_params(s.lambda, s.n_recv, s.n_send)?;
    let [a, pairs] = traffic::endemic(KAPPA);
    let (mut fwd, mut rev) = ([0u64; 3], [0u64; 3]);
    let add = |acc: &mut [u64; 3], m: usize| {
        for (x, y) in acc.iter_mut().zip(oos::traffic(m)) {
            *x += y;
        }
    };
    add(&mut fwd, BASE_OTS);
    for start in (0..p.bins).step_by(p.chunk_bins) {
        let len = p.chunk_bins.min(p.bins - start);
        add(&mut fwd, len * p.slots_r);
        add(&mut rev, len * p.slots_s);
    }
    let h = FRAME_HEADER_LEN as u64;
    let mut out = vec![
        (MSG_COMMIT, 32 + h),
        (MSG_SHARE, 16 + h),
        (MSG_OPENING, 32 + h),
        a,
        pairs,
    ];
    out.extend(traffic::kos(BASE_OTS));
    out.extend([
        (FORWARD.u, fwd[0]),
        (FORWARD.challenge, fwd[1]),
        (FORWARD.proof, fwd[2]),
        (REVERSE.u, rev[0]),
        (REVERSE.challenge, rev[1]),
        (REVERSE.proof, rev[2]),
        (
            MSG_MASKS,
            p.slots_r as u64 * framed_bytes(s.n_send, p.mask_len, MASK_FRAME),
        ),
    ]);
    Ok(out)
}

/// The commitment to the receiver's key share.
pub(crate) fn commitment(sid: &[u8; 32], share: &[u8; 16], nonce: &[u8; 16]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"blindjoin/psi/rr17_de/commit");
    h.update(sid);
    h.update(share);
    h.update(nonce);
    h.finalize().into()
}

/// The bin key from both shares.
pub(crate) fn bin_key(sid: &[u8; 32], sender: &[u8; 16], receiver: &[u8; 16]) -> Block {
    let mut h = Sha256::new();
    h.update(b"blindjoin/psi/rr17_de/bin-key");
    h.update(sid);
    h.update(sender);
    h.update(receiver);
    let d: [u8; 32] = h.finalize().into();
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    Block::from_bytes(k)
}

/// One party's items in bins and slots.
pub(crate) struct Placement {
    /// The OOS16 input each item puts into its slot, where it is not its own (`inputs`): a
    /// party that encodes other items than it evaluates (the tests' cheating party).
    pub encoded: Option<Vec<Block>>,
    /// The OOS16 input of each item.
    pub inputs: Vec<Block>,
    /// The global slot of each item (its bin, from [`place_in_bins`]).
    pub slot_of: Vec<u32>,
    /// Items ordered by bin, and the start of each bin in that order (bins + 1 entries).
    pub by_bin: Vec<u32>,
    pub bin_start: Vec<u32>,
    /// `inputs` and `slot_of` in the order of `by_bin`, so that a chunk's items are read in
    /// sequence, not at random.
    pub bin_inputs: Vec<Block>,
    pub bin_slots: Vec<u32>,
}

impl Placement {
    /// The OOS16 inputs of the slots of bins `b0..b1` (`slots` per bin) into `out`: each
    /// item's input in its slot, 0 in the empty ones. Built per chunk, so that no party holds
    /// the inputs of all m·B slots at once.
    pub(crate) fn fill_slots(&self, b0: usize, b1: usize, slots: usize, out: &mut Vec<Block>) {
        out.clear();
        out.resize((b1 - b0) * slots, Block::ZERO);
        for k in self.bin_start[b0] as usize..self.bin_start[b1] as usize {
            let v = match &self.encoded {
                Some(e) => e[self.by_bin[k] as usize],
                None => self.bin_inputs[k],
            };
            out[self.bin_slots[k] as usize - b0 * slots] = v;
        }
    }
}

/// Maps `items` to bins and random slots (`slots` per bin) under `key`.
/// `Err(HashingFailed)` if a bin gets more than `slots` items (probability at most 2^-λ for a
/// set of the announced size).
pub(crate) fn place(
    items: &[Item],
    key: Block,
    p: &DeParams,
    slots: usize,
    rng: &mut AesPrg,
) -> Result<Placement> {
    let mut pl = place_in_bins(items, key, p);
    for b in 0..p.bins {
        let load = (pl.bin_start[b + 1] - pl.bin_start[b]) as usize;
        if load > slots {
            return Err(Error::HashingFailed(format!(
                "a bin received {load} items, more than its {slots} slots"
            )));
        }
    }
    let mut perm: Vec<u32> = (0..slots as u32).collect();
    // One random word per item, drawn in bulk.
    let mut random = vec![0u8; 8 * items.len()];
    rng.fill_bytes(&mut random);
    let word = |i: usize| {
        let r = &random[8 * i..8 * i + 8];
        u64::from_le_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]])
    };
    for b in 0..p.bins {
        let first = pl.bin_start[b] as usize;
        let members = &pl.by_bin[first..pl.bin_start[b + 1] as usize];
        // A partial Fisher-Yates shuffle gives the members distinct uniform slots.
        for (k, &i) in members.iter().enumerate() {
            let r = k + (word(first + k) % (slots - k) as u64) as usize;
            perm.swap(k, r);
            let slot = b * slots + perm[k] as usize;
            pl.slot_of[i as usize] = slot as u32;
            pl.bin_slots[first + k] = slot as u32;
        }
    }
    Ok(pl)
}

/// Maps `items` to bins under `key`, without slots: `slot_of` holds each item's bin.
pub(crate) fn place_in_bins(items: &[Item], key: Block, p: &DeParams) -> Placement {
    let aes = FixedKeyAes::new(key);
    let mask = (1u128 << p.input_bits) - 1;
    let mut hashed: Vec<Block> = items.iter().map(|x| Block::from_bytes(x.0)).collect();
    aes.permute(&mut hashed);
    let bins = p.bins as u128;
    let bin_of: Vec<u32> = hashed
        .iter()
        .map(|h| ((((h.0 >> 64) as u64 as u128) * bins) >> 64) as u32)
        .collect();
    let inputs: Vec<Block> = hashed.iter().map(|h| Block(h.0 & mask)).collect();
    let mut bin_start = vec![0u32; p.bins + 1];
    for &b in &bin_of {
        bin_start[b as usize + 1] += 1;
    }
    for b in 0..p.bins {
        bin_start[b + 1] += bin_start[b];
    }
    let mut fill = bin_start.clone();
    let mut by_bin = vec![0u32; items.len()];
    for (i, &b) in bin_of.iter().enumerate() {
        by_bin[fill[b as usize] as usize] = i as u32;
        fill[b as usize] += 1;
    }
    let bin_inputs = by_bin.iter().map(|&i| inputs[i as usize]).collect();
    let bin_slots = by_bin.iter().map(|&i| bin_of[i as usize]).collect();
    Placement {
        encoded: None,
        inputs,
        slot_of: bin_of,
        by_bin,
        bin_start,
        bin_inputs,
        bin_slots,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn parameters_follow_the_bounds() {
        let p = de_params(40, 1 << 20, 1 << 20).unwrap();
        assert_eq!(p.bins, 1 << 17);
        assert_eq!(p.slots_r, max_bin_size(1 << 20, 1 << 17, 40).unwrap());
        // d = 40 + 20 + 20 − 17, β = 40 + 40 + ⌈log2 B⌉ bits.
        assert_eq!(p.input_bits, 63);
        assert_eq!(
            p.mask_len,
            (80 + log2_ceil(p.slots_s as u64)).div_ceil(8) as usize
        );
        // 2^24 fits the 76-bit code, in 2^22 bins (four items per bin above 2^22); 2^40 per
        // side does not.
        let p24 = de_params(40, 1 << 24, 1 << 24).unwrap();
        assert_eq!(p24.bins, 1 << 22);
        assert!(p24.input_bits <= 76);
        assert_eq!(de_params(40, 1 << 22, 1 << 22).unwrap().bins, 1 << 19);
        assert!(de_params(40, 1 << 40, 1 << 40).is_err());
        // Empty sides.
        let p = de_params(40, 0, 5).unwrap();
        assert_eq!((p.bins, p.slots_r), (1, 1));
    }

    /// Distinct items: `i` in the first four bytes.
    pub(crate) fn item(i: u32) -> Item {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&i.to_le_bytes());
        b[4] = 0xa5;
        Item(b)
    }

    fn ideal() -> crate::RunOptions {
        crate::RunOptions {
            base_ot: BaseOt::Ideal,
            ..crate::RunOptions::default()
        }
    }

    /// Receiver items 0..500, sender items 300..900; each side may encode other items in some
    /// of its slots than it evaluates with. Returns the receiver's output.
    fn run_with(x_slots: Option<&[Item]>, y_slots: Option<&[Item]>) -> Vec<usize> {
        let x: Vec<Item> = (0..500).map(item).collect();
        let y: Vec<Item> = (300..900).map(item).collect();
        let opts = ideal();
        let (r, s) = blindjoin_testkit::run_two_party(
            |ch| receiver::receive_encoding(ch, &x, x_slots, &opts, &mut blindjoin_testkit::rng(1)),
            |ch| sender::send_encoding(ch, &y, y_slots, &opts, &mut blindjoin_testkit::rng(2)),
        );
        s.unwrap();
        r.unwrap().indices
    }

    #[test]
    fn a_party_that_encodes_other_items_than_it_evaluates_matches_only_where_they_agree() {
        assert_eq!(run_with(None, None), (300..500).collect::<Vec<_>>());
        // The sender's odd items (300, 302, … are its even ones) encode unrelated items in
        // their slots: they match nothing.
        let y_slots: Vec<Item> = (300..900u32)
            .map(|v| {
                if (v - 300) % 2 == 0 {
                    item(v)
                } else {
                    item(10_000 + v)
                }
            })
            .collect();
        let want: Vec<usize> = (300..500).step_by(2).collect();
        assert_eq!(run_with(None, Some(&y_slots)), want);
        // The receiver's items divisible by 3 encode unrelated items: they match nothing.
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
        // A sender that encodes the receiver's other items in its slots learns nothing and
        // makes nothing match (the receiver's own items 0..300 are not in the sender's set).
        let y_slots: Vec<Item> = (0..600u32).map(|v| item(v % 300)).collect();
        assert_eq!(run_with(None, Some(&y_slots)), Vec::<usize>::new());
    }

    #[test]
    fn placement_puts_every_item_in_its_bin_in_a_distinct_slot() {
        let p = de_params(40, 1000, 1000).unwrap();
        let items: Vec<Item> = (0..1000u32)
            .map(|i| {
                let mut b = [0u8; 16];
                b[..4].copy_from_slice(&i.to_le_bytes());
                Item(b)
            })
            .collect();
        let pl = place(&items, Block(7), &p, p.slots_r, &mut AesPrg::new(Block(1))).unwrap();
        let mut seen = std::collections::HashSet::new();
        let mut all = Vec::new();
        pl.fill_slots(0, p.bins, p.slots_r, &mut all);
        for (i, &s) in pl.slot_of.iter().enumerate() {
            assert!(seen.insert(s));
            assert_eq!(all[s as usize], pl.inputs[i]);
            let b = s as usize / p.slots_r;
            let members = &pl.by_bin[pl.bin_start[b] as usize..pl.bin_start[b + 1] as usize];
            assert!(members.contains(&(i as u32)));
        }
        assert!(pl.inputs.iter().all(|x| x.0 >> p.input_bits == 0));
    }
}
