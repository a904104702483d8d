//! Hashing into bins for the OT-based PSI protocols: Cuckoo hashing for the receiver, simple
//! hashing for the sender, on the same hash functions and the same bins.
//!
//! **Why.** Comparing every receiver item with every sender item costs n² comparisons. PSZ14
//! (§6, "Hashing Schemes") instead let the receiver put each of its items into one of b bins
//! by Cuckoo hashing (at most one item per bin, plus a small stash) and the sender put each of
//! its items into *every* bin its hash functions name (simple hashing). An item both parties
//! hold then sits in one bin on both sides (or in the receiver's stash, which is compared with
//! all sender items), so the protocol compares per bin. PSZ14's set-inclusion PSI (§5)
//! compares the receiver's one item with the sender's padded bin; KKRT16's PSI runs one OPRF
//! instance per bin on the receiver's item together with the index j of the hash function that
//! placed it, and the sender evaluates the OPRF of that bin on each (item, j) in it.
//!
//! # Hash functions ([`BinHasher`])
//!
//! One fixed-key AES call per item: `H(x) = π(x) ⊕ x` with π = AES-128 keyed by a seed the
//! caller derives from the session id; hash function j reads the 42-bit slice `42j..42j+42` of
//! `H(x)` and maps it to `[0, b)` by multiply-shift (relative bias at most b/2^42, no modulo).
//! So k ≤ 3 functions, items are 128-bit [`Block`](blindjoin_core::block::Block)s
//! (`Block::from_bytes(item.0)` for an `Item`), and [`BinHasher::hash_items`] computes the bins
//! of many items in AES batches, in parallel for large inputs.
//!
//! Every failure bound below assumes hash functions that are random *and independent of the
//! items*. π is modelled as a random permutation (as for the OT extension, cf.
//! `blindjoin_core::aes`); for distinct items the values π(x) ⊕ x are then uniform and
//! independent up to statistical distance n²/2^128. Independence holds because the seed comes
//! from the session id, which mixes both parties' fresh handshake nonces, while each party's
//! items are fixed before the session starts. A party that chose its items *after* seeing the
//! seed could make its own table fail or overflow; that is outside the semi-honest model, and
//! the result is an error, not a wrong output.
//!
//! # Cuckoo hashing with a stash: PSZ14 ([`CuckooParams::psz`])
//!
//! k = 2 hash functions, b = 2(1+ε)n bins with ε = 0.2, a stash of s = 4 items: the
//! parameters PSZ14 use in their experiments (§7 and App. E, "Cuckoo Hashing"), which they take
//! from Kirsch, Mitzenmacher and Wieder (KMW). PSZ14 (§6.1) state that with a stash of s ≤ ln n
//! items, insertion of n items fails with probability n^-s; with s = 4 that is 2^-40 at
//! n = 2^10, 2^-64 at n = 2^16 and 2^-80 at n = 2^20, and *more* than 2^-40 below 2^10 items
//! (2^-32 at n = 2^8, 2^-16 at n = 16). KMW's bound is asymptotic (a big-O in n with an unstated
//! constant), and PSZ14 support the concrete parameters experimentally ("no rehashing even for
//! sets as small as n = 1,000"). Sets of at most 5 items never fail (the stash takes 4).
//!
//! # Three hash functions, no stash: KKRT16-style ([`CuckooParams::kkrt`])
//!
//! k = 3, s = 0, b = ⌈e·n⌉ bins (at least [`MIN_BINS`]), where e is chosen for failure
//! probability 2^-λ from the fitted bound of Pinkas, Schneider, Weinert and Wieder (PSWW18),
//! who measured stash-less Cuckoo hashing with three hash functions and fitted
//! λ ≈ a_n·e + b_n, with a_n and b_n shaped like the normal CDF in log2 n
//! ([`kkrt_bin_factor`] has the formula). The constants (123.5, 6.3, 2.3; −130, 6.45, 2.18)
//! are those of osu-crypto's cryptoTools, `CuckooIndex::selectParams`, which implements this
//! fit for stash-less three-hash tables; they were checked against that implementation, not
//! against the paper's text. At λ = 40 the fit gives
//!
//! | n | 2^8 | 2^12 | 2^16 | 2^20 | 2^24 |
//! | --- | --- | --- | --- | --- | --- |
//! | e = b/n | 1.546 | 1.478 | 1.506 | 1.538 | 1.571 |
//!
//! This is 20–30% more bins than the factors 1.2–1.27 that appear in the PSI literature for
//! three hash functions (sometimes together with a stash). The fit is an extrapolation of
//! experiments, not a proof, and it is conservative: it lets λ fall with log2 n at fixed e,
//! while the smallest obstruction to a stash-less placement, two items whose six hash values
//! fall into one bin, has probability of order n^-3 below the load threshold. Our own
//! measurement (the ignored `stashless_experiment` test) agrees that it is pessimistic for
//! this insertion procedure, which fails only when no placement exists: at n = 2^12 there were
//! no failures in 20,000 tables at e = 1.15, 1.2 and 1.27, where the fit's λ is −0.2, 5.9 and
//! 14.5 (and 590 failures at e = 1.1, close to the load threshold 1/0.918 = 1.089); at
//! n = 2^16 none in 2,000 tables at e = 1.1 to 1.27. Experiments of this size say nothing about
//! 2^-40, so they do not replace a bound: we follow the published fit rather than a smaller
//! factor we cannot cite, and a protocol that argues its own bound can pass any (k, b, s) to
//! [`CuckooParams::new`]. For tiny n the fit asks for many bins per item (e ≈ 106 at n = 1,
//! 3.1 at n = 16), which costs nothing that matters.
//!
//! # Insertion ([`CuckooTable`])
//!
//! Items go in one at a time. An item takes an empty bin among its k bins if there is one;
//! otherwise it evicts an occupant, which moves to one of its *other* bins (a random walk
//! whose choices come from a fixed-seed SplitMix64 stream, so the table is a deterministic
//! function of seed, items and parameters). The walk is bounded by
//! [`CuckooParams::max_evictions`] (default [`default_max_evictions`]: 64 + 8·⌈log2 b⌉, a few
//! hundred); then a breadth-first search over the bins reachable from the homeless item looks
//! for an augmenting path to an empty bin, visiting each bin at most once. Only if there is
//! none does the item go to the stash, and if the stash is full, [`CuckooTable::build`] returns
//! [`HashingError::CuckooFailed`] — reported, never retried. Nothing loops forever, and the
//! stash holds exactly the number of items that no assignment can place in bins, so failure
//! is exactly the event the bounds above are about, whatever the walk did.
//!
//! Each bin records the item index and the j that placed it ([`CuckooEntry`]); the stash is a
//! list of item indices. When two hash functions of an item name the same bin, Cuckoo hashing
//! places the item once (recording one of the j) while simple hashing records every (item, j)
//! pair — the sender cannot know which j the receiver's table used.
//!
//! # Simple hashing and the maximum bin size ([`SimpleTable`], [`max_bin_size`])
//!
//! The sender puts (y, j) into bin h_j(y) for every item and every j — k·n entries in a flat
//! compressed-sparse-row table, no allocation per bin. PSZ14's set-inclusion protocol pads
//! every bin to a maximum size M that both parties know in advance, so M must be exceeded only
//! with probability 2^-λ. The k·n hash values are independent and uniform on b bins, so a
//! bin's load is Binomial(k·n, 1/b), and [`max_bin_size`] returns the smallest M with
//!
//! ```text
//!   b · Pr[Binomial(k·n, 1/b) > M] ≤ 2^-λ      (union bound over the bins)
//! ```
//!
//! computed in log space (log-gamma for the first term, then the tail summed relative to it
//! with a geometric bound on the rest), so nothing underflows even at 2^-128. At λ = 40 this
//! gives M = 18 for the sender of the PSZ14 table (k = 2, b = 2.4n) and M = 24 for the KKRT
//! table (k = 3, b ≈ 1.54n), both at n = 2^20. [`SimpleTable::check_max_bin_size`] turns an
//! overflow into [`HashingError::BinOverflow`].
//!
//! PSZ14 App. E also analyse simple hashing on its own (one hash function, n = c·b·ln b items
//! into b bins) with the formula of Raab and Steger: the maximum load is (d_c − 1 + α)·ln b
//! where d_c is the root x > c of f(x) = 1 + x(ln c − ln x + 1) − c and α > 1; PSZ take α = 2,
//! so M = (d_c + 1)·ln b and the OTs per element and bit are (d_c + 1)/c. [`psz_dc`],
//! [`psz_simple_bins`] and [`psz_max_bin_size`] implement it, and a unit test reproduces
//! Table 10: its "dc" row is d_c + 1 (2.2, 2.8, 3.7, 5.3, 8.1, 13.3 for c = 0.25 … 8) and its
//! "#OTs" row that value divided by c (8.8, 5.6, 3.7, 2.7, 2.0, 1.7 — the first computed from
//! the rounded 2.2; unrounded it would be 8.97). The formula carries no failure bound (PSZ14
//! measured 0.4% failures at c = 2 and 100% at c = 8), which is why the protocols use
//! [`max_bin_size`].
//!
//! # Bloom filters backed by cut-and-choose OTs ([`cnc_bloom_params`])
//!
//! The filter size, hash count, OT count and cut-and-choose threshold of Rindal-Rosulek's
//! malicious-secure Bloom-filter PSI (Eurocrypt 2017), from Chernoff bounds on the opened and
//! unopened choices (the `cnc` module doc has the six conditions): at n = 2^20, λ = 40, κ = 128,
//! h = 90 hash functions, 2.57·10^8 filter bits and 2.60·10^8 OTs, of which 0.8 % are
//! opened.
//!
//! # Balanced allocations (not implemented)
//!
//! Balanced allocations put each item into the less loaded of its two bins, which keeps the
//! maximum load down to about ln ln n / ln 2. PSZ14 (§6.2, App. E, Table 4) show it loses for
//! PSI: the receiver's choice depends on its other items, so it must stay hidden, and the
//! sender therefore maps every item with both functions by simple hashing, which doubles the
//! sender's bins compared with one-function simple hashing; both sides' bins must still be
//! padded (about 2.9·ln ln b for the receiver), so the OTs grow as n·(ln ln n)² instead of
//! n·ln ln n. At n = 2^18 PSZ14 count 1,298 MB of communication, against 476 MB for simple
//! hashing and 319 MB for Cuckoo hashing (Table 4). Cuckoo hashing keeps the receiver at one
//! item per bin with the same sender-side cost, so it is what the protocols use.
//!
//! # Deviations from the papers
//!
//! - Hash functions: fixed-key AES in the random-permutation model, one call for all k
//!   functions (PSZ14 and KKRT16 assume random hash functions).
//! - Insertion: KMW's procedure stashes the homeless item after a bounded number of
//!   relocations; ours first searches for an augmenting path, so it never stashes more items
//!   than KMW's and fails only when no placement exists.
//! - The stash-less three-hash table is sized by PSWW18's fitted factor (1.48–1.57 at
//!   λ = 40), not by the smaller factors used elsewhere; see above.
//! - Maximum bin size: a proven union bound on the binomial tail instead of PSZ14's formula
//!   with α = 2, which is implemented only to reproduce Table 10.
//!
//! # Performance
//!
//! Measured with the `timing` test (`cargo test -p blindjoin-psi --lib hashing::tests::timing
//! -- --ignored --nocapture`; test profile, 2-core AMD EPYC VM shared with other builds, best
//! of 5), n = 2^20: the PSZ14 table in 70–110 ms and the KKRT table in 90–130 ms, plus 5–10 ms
//! for the AES hashing; simple hashing of 2^20 items under 3 functions in 60–90 ms plus the
//! same hashing. Insertion is bound by cache misses on the bins, so both tables read the bins
//! of the next items ahead of time (`blindjoin_core::cache::prefetch`).
//!
//! # References
//!
//! - PSZ14: Pinkas, Schneider, Zohner, "Scalable Private Set Intersection Based on OT
//!   Extension" (USENIX Security 2014, full version), §6.1, §6.2, §7,
//!   App. E, Tables 4 and 10.
//! - KMW: Kirsch, Mitzenmacher, Wieder, "More Robust Hashing: Cuckoo Hashing with a Stash",
//!   ESA 2008 (PSZ14's \[36\]).
//! - KKRT16: Kolesnikov, Kumaresan, Rosulek, Trieu, "Efficient Batched Oblivious PRF with
//!   Applications to Private Set Intersection", CCS 2016.
//! - PSWW18: Pinkas, Schneider, Weinert, Wieder, "Efficient Circuit-based PSI via Cuckoo
//!   Hashing", Eurocrypt 2018 (ePrint 2018/120).
//! - Raab, Steger, "'Balls into Bins' — A Simple and Tight Analysis", RANDOM 1998 (PSZ14's
//!   \[54\]).

pub mod bloom;
mod cnc;
mod cuckoo;
mod error;
mod hash;
mod params;
mod simple;

pub use cnc::{CncBloomParams, cnc_bloom_params};
pub use cuckoo::{CuckooEntry, CuckooTable, Location};
pub use error::HashingError;
pub use hash::{BinHasher, HashedItems, ItemBins, SLICE_BITS};
pub use params::{
    CuckooParams, FailureBound, MAX_LAMBDA, PSZ_EPSILON, PSZ_STASH, default_max_evictions,
    kkrt_bin_factor, max_bin_size, overflow_log2, psz_dc, psz_max_bin_size, psz_simple_bins,
};
pub use simple::{SimpleEntry, SimpleTable};

/// Most hash functions per table (three 42-bit slices of one AES output).
pub const MAX_HASHES: usize = 3;

/// Most items per table: 2^30, so that a simple-hashing entry packs item and j into 32 bits
/// and k·n fits the `u32` offsets.
pub const MAX_ITEMS: usize = 1 << 30;

/// Fewest bins [`CuckooParams::psz`], [`CuckooParams::kkrt`] and [`psz_simple_bins`] return,
/// so that tiny and empty sets still get a usable table.
pub const MIN_BINS: usize = 8;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;
