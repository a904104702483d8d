//! `dh_ffc`: Diffie-Hellman-based PSI over finite fields (semi-honest).
//!
//! **Paper.** The DH-based protocol of Huberman, Franklin and Hogg (EC'99) and Meadows (S&P'86)
//! in the finite-field setting that Pinkas, Schneider and Zohner measure as "DH-based FFC"
//! (*Scalable Private Set Intersection Based on OT Extension*, §3, §7.1 and Tab. 5-8), with the
//! message flow of the implementation note's §7.2 (PSZ14 gives only the cost: 2n exponentiations
//! per party, 3nρ bits).
//!
//! **Security model.** Semi-honest parties, random-oracle model, DDH in the group of quadratic
//! residues modulo a safe prime. The receiver learns the intersection and the sender's set
//! size; the sender learns only the receiver's set size.
//!
//! **Groups** (`group::LEVELS`; PSZ14 Tab. 2 for κ = 80 and 128, DCW13 Tab. 2 for 192):
//!
//! | κ | asked (ρ) | group | exponent |
//! | --- | --- | --- | --- |
//! | 80 | 1024 | RFC 2409 §6.2 Second Oakley Group, 1024 bits | 160 bits |
//! | 128 | 3072 | RFC 7919 ffdhe3072 | 256 bits |
//! | 192 | 7680 | RFC 7919 ffdhe8192 (no standard group of 7680 bits; the next larger) | 384 bits |
//!
//! κ = 256 asks for 15360 bits, beyond every published standard group (RFC 3526 and RFC 7919
//! end at 8192), so `dh_ffc` refuses it and names the levels it offers. Each group is the
//! subgroup of order q = (p − 1)/2 of Z_p*, written as signed residues (`group`): an element is
//! min(y, p − y), in 1..=q, and a peer's element is in the group exactly when it is in that
//! range.
//!
//! **Message flow** (after the handshake, which fixes n1 = |X| of the receiver, n2 = |Y| of the
//! sender, κ and the session id `sid`; ρ = bytes of p):
//!
//! ```text
//! H(x)   = ±(SHA-256(sid, "dh_ffc/h2g", c, x) for c = 0, 1, … : ρ + 16 bytes) mod p, signed
//! T(e)   = SHA-256(sid, "ecdh/tag", e) truncated to ℓ = λ + ⌈log2(n1·n2)⌉ bits (whole bytes)
//!
//! receiver (X, secret a of 2κ bits)               sender (Y, secret b of 2κ bits)
//!   A_i = H(x_i)^a, in X's order   ── n1 elements ──>
//!                                  <── n2 elements ──  B_j = H(y_π(j))^b, π a random permutation
//!                                  <── n1 tags ──────  T(A_i^b), in the order received
//!   S = { T(B_j^a) }; output { i : T(A_i^b) ∈ S }
//! ```
//!
//! Every element received is checked to be in the group (1 ≤ x ≤ q, ρ bytes) before it is
//! raised to a secret exponent; one that is not ends the run naming its index. Both parties
//! stream their elements while a second thread receives, as `ecdh` does; the exponentiations run
//! eight at a time in AVX-512 IFMA lanes ([`blindjoin_modexp`]), and on `--threads`.
//!
//! **Communication:** ρ·(n1 + n2) bytes of elements plus n1·⌈ℓ/8⌉ bytes of tags (and 4 bytes of
//! framing per frame), against PSZ14 Tab. 6's 3nρ bits.
//!
//! **Deviations from the paper.**
//! - The re-blinded values A_i^b return hashed and truncated to ℓ bits instead of as group
//!   elements (as in `ecdh`; the implementation note's §7.2 tag length).
//! - Standard published groups instead of PSZ14's own 1024- and 3072-bit parameters, and 8192
//!   bits at κ = 192 (see the table).
//! - Signed residues instead of a Legendre-symbol or x^q membership check (same group, same
//!   DDH problem; see `group`).

pub(crate) mod group;
