//! Base OT: random 1-out-of-2 OT on Ristretto255, the public-key seed of OT extension.
//!
//! Three implementations of the role traits [`BaseOtSender`] / [`BaseOtReceiver`]:
//! - [`ChouOrlandiSender`] / [`ChouOrlandiReceiver`] (CO15, below): the base OT of every
//!   protocol, secure against semi-honest parties only;
//! - [`endemic::EndemicSender`] / [`endemic::EndemicReceiver`]: Masny-Rindal endemic OT (CCS
//!   2019), UC-secure against malicious parties in the random-oracle model, for the
//!   malicious-secure protocols;
//! - `ideal::{IdealBaseOtSender, IdealBaseOtReceiver}`, **test-only and insecure**: the sender
//!   sends both keys of every OT in the clear. It is compiled only with the `ideal-base-ot`
//!   feature, which only this crate's own tests and benchmarks enable, so that tests of the
//!   extensions and of PSI skip the public-key work; see `base/ideal.rs`.
//!
//! **Protocol.** Chou and Orlandi, *The Simplest Protocol for Oblivious Transfer*, Latincrypt
//! 2015, ePrint 2015/267 ("CO15"), the 1-out-of-2 protocol run as a batch of n random OTs under
//! one sender message, with the mitigations listed below. Implemented by [`ChouOrlandiSender`]
//! and [`ChouOrlandiReceiver`].
//!
//! **Why CO15 and not Masny-Rindal or Naor-Pinkas.** Per OT, CO15 costs the receiver two
//! fixed-base scalar multiplications (`b_i·G`, and `b_i·S` with a table for `S` built once) and
//! the sender one variable-base multiplication; it sends one point per OT and a single flight in
//! each direction, which is the shape the extensions need (one `S`, then the
//! receiver's points, then nothing). Naor-Pinkas (SODA 2001), the base OT of the PSI papers, gives
//! the same semi-honest guarantee at about the same cost, but with two sender points (`C` and
//! `g^r`, which CO15 in effect merges into `S`) and, in its usual form, one more flight.
//! Masny-Rindal endemic OT (ePrint 2019/706) is UC-secure against malicious parties with a
//! programmable random oracle, but needs a hash to the group in both directions and two points
//! per OT from the receiver, and its flow is receiver-first. For the semi-honest PSI protocols
//! the stronger model buys nothing they can use (malicious-secure ones take [`endemic`]); CO15 with the mitigations
//! below is the base OT swanky's KOS is instantiated with and one of libOTe's (`SimplestOT`)
//! for the same reason.
//!
//! **Security model.** Semi-honest sender and receiver, static corruption, random-oracle model
//! for the key derivation `H` (SHA-256), CDH in Ristretto255 (prime order q ≈ 2²⁵², κ = 128).
//! - *Receiver privacy* holds against any sender, even a malicious one: `R_i = c_i·S + b_i·G`
//!   with `b_i` uniform in `Z_q \ {0}` is uniform on all but one group element whatever `S` is,
//!   so it carries no information on `c_i` (statistically, to within 1/q).
//! - *Sender privacy* against a semi-honest receiver: the Diffie-Hellman input of the key it did
//!   not choose is `b_i·S + a²·G` (if `c_i = 1`) or `b_i·S − a²·G` (if `c_i = 0`), and computing
//!   `a²·G` from `S = a·G` is as hard as CDH in a prime-order group. `H` is a random oracle, so
//!   a key whose input the receiver cannot compute is uniform to it.
//!
//! **What is not claimed** (see `AUDIT.md` next to this file for evidence and what would close
//! each item).
//! - *UC security against malicious parties.* CO15 claimed it, but Genç, Iovino and Rial (ePrint
//!   2017/370) show that the simulator for a corrupted sender must tell which random-oracle
//!   queries are Diffie-Hellman values, i.e. needs a DDH oracle, and Hauck and Loss (ePrint
//!   2017/1011) find two further flaws; the proof can be repaired for static corruptions only
//!   under Gap-DH. Ristretto255 has no pairing, so we do not assume Gap-DH and claim
//!   semi-honest security only.
//! - *Uniform outputs against a malicious receiver.* The receiver picks `R_i`, and with it the
//!   inputs of the sender's key derivation, so plain CO15 gives "receiver chosen message"
//!   rather than "uniform message" security (the distinction is Masny and Rindal's, ePrint
//!   2019/706). A coin toss, in which the sender commits to a seed with `S`, opens it after the
//!   `R_i` and hashes it into every key, would close this at the cost of a third message, which
//!   the batch shape here rules out.
//!
//! An OT extension built on these base OTs (KOS, say) is therefore only as strong as a
//! semi-honest base OT allows, whatever its own model.
//!
//! **Message flow** (n random OTs; both parties already agree on n and on the 32-byte session
//! id `sid` from the handshake, `G` is the Ristretto255 base point, `i` runs over 0..n):
//!
//! ```text
//! sender                                              receiver (choices c_i ∈ {0,1})
//!   a ← Z_q \ {0}, fresh for this call
//!   S = a·G                       ── S (32 bytes) ──>  reject S unless it decodes and S ≠ 0
//!                                                      b_i ← Z_q \ {0}
//!                                                      R_i = b_i·G + c_i·S  (constant-time select)
//!   reject R_i unless it decodes,  <── R_0..R_{n-1} ──  (32 bytes each, frames of FRAME_POINTS)
//!   R_i ≠ 0 and R_i ≠ S
//!   T = a·S
//!   k_i⁰ = H(sid, S, i, R_i, a·R_i)                     k_i = H(sid, S, i, R_i, b_i·S)
//!   k_i¹ = H(sid, S, i, R_i, a·R_i − T)
//! ```
//!
//! Correctness: for `c_i = 0`, `a·R_i = a·b_i·G = b_i·S`; for `c_i = 1`,
//! `a·R_i − T = a·(S + b_i·G) − a·S = b_i·S`. Points travel as their canonical 32-byte
//! encodings (RFC 9496 §4.3.2). `H` is [`KDF_DOMAIN`]-separated SHA-256 with every input
//! length-prefixed (`blindjoin_core::item::{domain_hasher, update_prefixed}`, the index as a
//! 64-bit little-endian integer), truncated to 128 bits. The sender's work on a frame overlaps
//! the receiver's work on the next one. With n = 0 neither party sends anything.
//!
//! **Deviations from the paper.**
//! - Random OT: the keys are the output; CO15's encryption of chosen messages under them is
//!   left to the caller (the OT extensions only need the keys).
//! - Ristretto255 instead of the paper's Curve25519 group with cofactor clearing: a prime-order
//!   group with canonical encodings, so a peer's point either decodes into the group or is
//!   rejected, and no multiplication by the cofactor is needed.
//! - The key derivation hashes, besides the paper's `(S, R_i)`, a domain label, the session id
//!   and the OT index. The receiver's exponents `b_i` are drawn from `Z_q \ {0}` instead of
//!   `Z_q`, so an honest receiver never sends `S`, and sends `0` only with probability 1/q.
//! - Only 1-out-of-2 OT (the paper also covers 1-out-of-m).
//!
//! **Caveats handled.**
//! - *Session and index binding.* `sid`, the transcript `(S, R_i)` and `i` enter every key, so
//!   keys of two sessions, or of two OTs of one batch, are independent even if a peer replays
//!   or relates points (e.g. `R_j = R_i + S` would otherwise give `k_j¹ = k_i⁰`).
//! - *Degenerate points.* The receiver rejects `S = 0` (then every `b_i·S` is `0` and every key
//!   public); the sender rejects `R_i = 0` and `R_i = S`, the two values for which one of its
//!   Diffie-Hellman inputs is the identity, so no key is ever derived from the identity. An
//!   encoding that does not decode is [`Error::Malformed`](blindjoin_core::Error::Malformed)
//!   naming the element's index; nothing is unwrapped.
//! - *Fresh secrets.* `a` is drawn from the caller's RNG at every call and never reused across
//!   batches; the types hold no state between calls. `a`, `T`, the `b_i` and the
//!   Diffie-Hellman values are zeroized after use, as far as Rust allows (temporary copies the
//!   compiler makes are out of reach); the output keys belong to the caller, who should zeroize
//!   them in turn.
//! - *Lengths.* The receiver reads exactly one point for `S`; the sender reads the `R_i` with a
//!   [`BulkReader`](blindjoin_core::channel::BulkReader) bounded by its own n, so a peer can
//!   neither make it allocate more nor send a partial point.
//! - *Constant time.* The choice bit selects `R_i` with `subtle`, and the scalar
//!   multiplications by secrets are dalek's constant-time ones; only public data (the peer's
//!   encodings) is compared in variable time.

mod chou_orlandi;
pub mod endemic;
#[cfg(feature = "ideal-base-ot")]
pub mod ideal;
pub mod nist;

pub use chou_orlandi::{ChouOrlandiReceiver, ChouOrlandiSender};

use blindjoin_core::channel::{Channel, FrameSender};
use blindjoin_core::{Error, Result};

/// Bytes of a compressed Ristretto255 point on the wire.
pub const POINT_LEN: usize = 32;

/// Bytes of one output key.
pub const KEY_LEN: usize = 16;

/// Largest batch of base OTs one call accepts (2²⁴; extensions need a few hundred).
pub const MAX_BASE_OTS: usize = 1 << 24;

/// Points per frame of the receiver's message (32 KiB frames).
pub const FRAME_POINTS: usize = 1 << 10;

/// Domain label of the key derivation `H`.
pub const KDF_DOMAIN: &[u8] = b"blindjoin/ot/base/co15/v1";

/// Name of the sender's message in errors.
pub const MSG_SENDER_POINT: &str = "the base-OT sender's point S";

/// Name of the receiver's message in errors.
pub const MSG_RECEIVER_POINTS: &str = "the base-OT receiver's points R_i";

/// Sender of random base OTs: learns n pairs of random 16-byte keys. The keys are returned to
/// the caller, who wipes them after use (the OT extensions do, once their PRGs are keyed).
///
/// Errors: [`Error::InvalidParam`](blindjoin_core::Error::InvalidParam) if `n` exceeds
/// [`MAX_BASE_OTS`]; [`Error::Malformed`](blindjoin_core::Error::Malformed) (naming the element)
/// if a point from the peer does not decode or is rejected;
/// [`Error::FrameTooLong`](blindjoin_core::Error::FrameTooLong) if the peer sends more than n
/// points; [`Error::PeerClosed`](blindjoin_core::Error::PeerClosed),
/// [`Error::Timeout`](blindjoin_core::Error::Timeout) or
/// [`Error::Io`](blindjoin_core::Error::Io) from the channel. After an error the sending half of
/// `ch` is closed, so the peer stops waiting.
pub trait BaseOtSender {
    /// Runs `n` random OTs as the sender under session id `sid`; returns `[k_i⁰, k_i¹]` for each.
    fn send_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        n: usize,
        rng: &mut impl rand::CryptoRng,
    ) -> Result<Vec<[[u8; 16]; 2]>>;
}

/// Receiver of random base OTs: learns the key of its choice for each OT.
///
/// Errors as for [`BaseOtSender`], with `choices.len()` in place of `n`.
pub trait BaseOtReceiver {
    /// Runs `choices.len()` random OTs as the receiver under session id `sid`; returns
    /// `k_i^{choices[i]}` for each.
    fn receive_random<C: Channel + ?Sized>(
        &mut self,
        ch: &mut C,
        sid: &[u8; 32],
        choices: &[bool],
        rng: &mut impl rand::CryptoRng,
    ) -> Result<Vec<[u8; 16]>>;
}

/// Rejects a batch size above `max` (`MAX_BASE_OTS` for CO15).
fn check_count(n: usize, max: usize) -> Result<()> {
    if n > max {
        return Err(Error::InvalidParam {
            field: "base OT count",
            reason: format!("{n} base OTs requested; at most {max} are supported"),
        });
    }
    Ok(())
}

/// Closes the sending half of `ch` if `result` is an error, so that the peer stops waiting.
fn close_on_err<C: Channel + ?Sized, T>(ch: &mut C, result: Result<T>) -> Result<T> {
    if result.is_err() {
        FrameSender::close(ch);
    }
    result
}
