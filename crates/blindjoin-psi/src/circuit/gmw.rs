//! The GMW protocol as a [`Backend`]: XOR shares of every wire, AND gates from multiplication
//! triples precomputed with random OT, and vector multiplication triples for the ANDs of a
//! multiplexer that share one input wire.
//!
//! **Paper.** Pinkas, Schneider, Zohner, *Scalable Private Set Intersection Based on OT
//! Extension* (USENIX Security 2014, full version): GMW with multiplication triples generated
//! from random OT (§3.1) and vector multiplication triples (§3.2), with the equations of the
//! paper's garbled passages read as in our notes on it (`spec-psz-dcw13.md` §8.2-8.3,
//! including Pitfall 8.A: only party 0 adds d ∧ e, in the vector case too). The triples
//! themselves are made by [`triples`](super::triples).
//!
//! **Security model.** Semi-honest parties, random-oracle model for the random OTs (IKNP/ALSZ,
//! PSZ14 App. B), with the base OTs the caller passes. A party's view of the online phase is
//! the opened d and e of every AND gate, which are its inputs masked by the peer's uniform
//! triple shares, and the peer's shares of the inputs it owns (uniform) and of the outputs
//! revealed to it. Nothing is checked: a cheating peer can flip any output bit (see the tests).
//!
//! **Sharing.** A wire's value is x = x_0 ⊕ x_1, x_i held by party i. A [`Shares`] holds one
//! party's shares of one wire in every lane, packed 64 lanes per `u64` (lane i at bit i%64 of
//! word i/64; the bits past the last lane are zero). XOR is local; NOT and a public constant
//! change party 0's share only; [`Backend::gather`] and [`Backend::concat`] move shares.
//!
//! **AND gate** (§3.1). With a scalar triple (α_i, β_i, γ_i), (α_0⊕α_1)∧(β_0⊕β_1) = γ_0⊕γ_1,
//! party i opens d_i = u_i ⊕ α_i and e_i = v_i ⊕ β_i, both learn d = d_0 ⊕ d_1 and
//! e = e_0 ⊕ e_1, and w_i = \[i = 0\](d∧e) ⊕ (d∧β_i) ⊕ (e∧α_i) ⊕ γ_i, so w_0 ⊕ w_1 = u∧v.
//! **Vector AND** (§3.2): s ∧ v\[j\] for j < σ with one vector triple (α_i one bit, β_i and γ_i
//! σ bits): party i opens d_i = s_i ⊕ α_i (1 bit) and e_i\[j\] = v_i\[j\] ⊕ β_i\[j\] (σ bits), and
//! w_i\[j\] = \[i = 0\](d∧e\[j\]) ⊕ (d∧β_i\[j\]) ⊕ (e\[j\]∧α_i) ⊕ γ_i\[j\]: 1 + σ bits sent per
//! party instead of 2σ. All gates of one [`Backend::and`] or [`Backend::and_vector`] call are
//! opened together: one round per call, bit-sliced over 64 lanes per word.
//!
//! **Message flow** (P0, P1; σ the vector width; n_s, n_v the triple counts):
//!
//! ```text
//! precomputation (Gmw::precompute; nothing if n_s = n_v = 0):
//!   direction A: κ base OTs (P1 the base-OT sender), then IKNP with P0 the OT sender
//!   direction B: κ base OTs (P0 the base-OT sender), then IKNP with P1 the OT sender
//!   per batch of at most 2^16 triples (the n_s scalar ones, then the n_v vector ones):
//!     P1 → P0: u columns of the batch's direction-A OTs     (iknp::MSG_U_COLUMNS)
//!     P0 → P1: u columns of the batch's direction-B OTs     (iknp::MSG_U_COLUMNS)
//! input of the owner O (input_own / input_peer):
//!   O → peer: r, the peer's shares                          (MSG_INPUT_SHARES)
//! one AND layer (and):
//!   P0 ↔ P1: d_i ‖ e_i of every gate                        (MSG_OPEN_AND, lockstep)
//! one vector AND layer (and_vector):
//!   P0 ↔ P1: d_i ‖ e_i[0] ‖ … ‖ e_i[σ'-1] of every item    (MSG_OPEN_VECTOR, lockstep)
//! output (reveal_to_peer / reveal_own, or reveal_both):
//!   P_i → P_j (or P0 ↔ P1): P_i's shares                   (MSG_OUTPUT_SHARES)
//! ```
//!
//! **Wire layout.** Every message is one bit string cut into frames of [`FRAME_BYTES`] (the
//! last one shorter); bit k is bit k%8 of byte k/8, and the bits past the string's end in its
//! last byte are zero. The string's length follows from public sizes only (lane counts, the
//! number of gates, σ), and every frame is received with its exact length as the bound: a
//! short, long or missing frame is an error, never a wait for more.
//! - MSG_OPEN_AND of pairs (u_k, v_k) of L_k lanes: for k in order, d_k (L_k bits) then e_k
//!   (L_k bits); 2·ΣL_k bits. Pair k uses the next L_k scalar triples, lane l triple
//!   t_k + l.
//! - MSG_OPEN_VECTOR of items (s_k, v_k) of L_k lanes: v_k is cut into chunks of at most σ
//!   wires; for each chunk of σ' wires, d (L_k bits) then e\[0\], …, e\[σ'-1\] (L_k bits each):
//!   L_k·(1 + σ') bits. Each chunk uses the next L_k vector triples (a chunk of σ' < σ wires
//!   uses planes 0..σ' of its triples and opens only those).
//! - MSG_INPUT_SHARES and MSG_OUTPUT_SHARES of a σ-wire word of L lanes: wire 0's L bits,
//!   then wire 1's, …
//!
//! The two-way messages go in lockstep: each party sends frame k, then receives the peer's
//! frame k, so at most one frame per direction is ever unread, whatever the transport buffers.
//!
//! **Non-vectorised mode** ([`TripleCounts::vectorised`] false, PSZ14 Tab. 5's plain "GMW"):
//! [`Backend::and_vector`] evaluates each s ∧ v\[j\] as an ordinary AND gate with a scalar
//! triple, in one MSG_OPEN_AND message (as [`Backend::and`] with the pairs (s, v\[j\])).
//!
//! **Triple accounting.** Each layer takes the next triples in order; a layer that needs more
//! than are left fails with [`Error::InvalidParam`] before anything is sent.
//! [`Gmw::remaining`] tells how many of each kind are left, so a caller can check that a
//! circuit used exactly what was precomputed ([`TripleCounts::for_circuit`]).
//!
//! **Deviations from PSZ14.** The random OTs are IKNP with ALSZ's optimisations and the
//! fixed-key AES TCCR hash of `blindjoin_ot` instead of PSZ14's OT-extension code with SHA; a
//! one-bit string is bit 0 of an OT's 128-bit output, a σ-bit one bits 0..σ. A vector triple
//! holds at most 128 bits; an `and_vector` item wider than σ takes one vector triple per lane
//! and per chunk of σ wires. The triples and the OT outputs are wiped when dropped; the wire
//! shares are not (each alone is uniform). After an error the sending half of the channel is
//! closed, so that the peer's next receive fails rather than waits.

use super::Backend;
pub use super::triples::{GmwParty, MAX_WIDTH, TripleCounts};
use super::triples::{
    ScalarTriples, VectorTriples, extract_into, generate, last_mask, words_for, xor_at,
};
use blindjoin_core::channel::{Channel, FrameSender};
use blindjoin_core::prg::AesPrg;
use blindjoin_core::{Block, Error, Result};
use blindjoin_ot::base::{BaseOtReceiver, BaseOtSender};
use rand::{CryptoRng, RngCore};
use zeroize::Zeroizing;

/// Names of the opened d ‖ e of one layer of AND gates (both ways, in lockstep), as party 0
/// and party 1 send them (each message has one sending party: indexed by [`GmwParty::index`]).
pub const MSG_OPEN_AND: [&str; 2] = [
    "party 0's GMW openings of an AND layer",
    "party 1's GMW openings of an AND layer",
];
/// Names of the opened d ‖ e\[0..σ\] of one layer of vector ANDs (both ways, in lockstep),
/// as party 0 and party 1 send them.
pub const MSG_OPEN_VECTOR: [&str; 2] = [
    "party 0's GMW openings of a vector AND layer",
    "party 1's GMW openings of a vector AND layer",
];
/// Names of an input owner's message (the peer's random shares of the owner's input), as
/// party 0 and party 1 send it.
pub const MSG_INPUT_SHARES: [&str; 2] = [
    "party 0's GMW shares of its input",
    "party 1's GMW shares of its input",
];
/// Names of the shares of an output sent to the party that learns it, as party 0 and party 1
/// send them.
pub const MSG_OUTPUT_SHARES: [&str; 2] = [
    "party 0's GMW shares of an output",
    "party 1's GMW shares of an output",
];

/// The largest frame of every GMW message (32 KiB).
pub const FRAME_BYTES: usize = 32 << 10;

/// One party's XOR shares of one wire in each of `lanes` lanes, packed 64 lanes per word
/// (lane i at bit i%64 of word i/64; the bits past the last lane are zero).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shares {
    lanes: usize,
    words: Vec<u64>,
}

impl Shares {
    /// The number of lanes.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// The packed shares (`⌈lanes/64⌉` words).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The share of lane `i` (`false` past the last lane).
    pub fn bit(&self, i: usize) -> bool {
        i < self.lanes && (self.words[i / 64] >> (i % 64)) & 1 == 1
    }

    /// Shares of `lanes` lanes from packed words (at least `⌈lanes/64⌉`; the bits past the
    /// last lane are dropped).
    fn from_words(lanes: usize, mut words: Vec<u64>) -> Shares {
        words.resize(words_for(lanes), 0);
        if let Some(last) = words.last_mut() {
            *last &= last_mask(lanes);
        }
        Shares { lanes, words }
    }

    fn zero(lanes: usize) -> Shares {
        Shares {
            lanes,
            words: vec![0; words_for(lanes)],
        }
    }
}

/// One party of the GMW protocol over channel `ch`, with its precomputed triples (see the
/// [module doc](self)). The triples are wiped when it is dropped.
pub struct Gmw<'a, C: Channel + ?Sized> {
    ch: &'a mut C,
    party: GmwParty,
    vectorised: bool,
    scalar: ScalarTriples,
    vector: VectorTriples,
    /// The random shares this party gives the peer for its own inputs.
    prg: AesPrg,
}

impl<C: Channel + ?Sized> std::fmt::Debug for Gmw<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gmw")
            .field("party", &self.party)
            .field("vectorised", &self.vectorised)
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}

/// Both halves of a party's base OTs: one direction's extension needs it as the base-OT
/// sender, the other as the base-OT receiver.
#[derive(Debug)]
pub struct BaseOts<'b, BS, BR> {
    /// The base-OT sender (for the direction in which this party is the OT receiver).
    pub sender: &'b mut BS,
    /// The base-OT receiver (for the direction in which this party is the OT sender).
    pub receiver: &'b mut BR,
}

impl<'a, C: Channel + ?Sized> Gmw<'a, C> {
    /// The precomputation: generates the triples `counts` asks for with the peer (PSZ14
    /// §3.1-3.2; the flow is in the [module doc](self)) and returns the party ready for the
    /// online phase. `sid` is the session id both parties agreed on; each OT direction uses a
    /// session id derived from it.
    ///
    /// Errors: `InvalidParam` for a width outside 1..=[`MAX_WIDTH`] with vector triples asked
    /// for; the base OTs', the OT extension's and the channel's (a peer's frame of the wrong
    /// length is `Malformed` or `FrameTooLong`).
    pub fn precompute<BS: BaseOtSender, BR: BaseOtReceiver>(
        ch: &'a mut C,
        party: GmwParty,
        sid: &[u8; 32],
        base: BaseOts<'_, BS, BR>,
        counts: &TripleCounts,
        rng: &mut impl CryptoRng,
    ) -> Result<Self> {
        let (scalar, vector) = generate(ch, party, sid, base.sender, base.receiver, counts, rng)?;
        Ok(Gmw {
            ch,
            party,
            vectorised: counts.vectorised,
            scalar,
            vector,
            prg: AesPrg::new(Block::random(rng)),
        })
    }

    /// Which party this is.
    pub fn party(&self) -> GmwParty {
        self.party
    }

    /// The triples not yet used: (scalar, vector). Both are 0 once a circuit has used exactly
    /// what was precomputed.
    pub fn remaining(&self) -> (u64, u64) {
        (
            self.scalar.remaining() as u64,
            self.vector.remaining() as u64,
        )
    }

    /// The channel, for messages of the caller's between GMW steps.
    pub fn channel(&mut self) -> &mut C {
        self.ch
    }

    /// Shares this party's input: `planes[b]` holds bit b of the value of every lane, packed
    /// (lane i at bit i%64 of word i/64; at least ⌈lanes/64⌉ words, the bits past the last
    /// lane ignored). Sends the peer uniform shares r (one [`MSG_INPUT_SHARES`] message) and
    /// returns this party's shares x ⊕ r. The peer calls [`Gmw::input_peer`] with the same
    /// `lanes` and `planes.len()`.
    ///
    /// Errors: `InvalidParam` for a plane shorter than ⌈lanes/64⌉ words; the channel's.
    pub fn input_own(&mut self, lanes: usize, planes: &[Vec<u64>]) -> Result<Vec<Shares>> {
        let nw = words_for(lanes);
        if let Some(p) = planes.iter().find(|p| p.len() < nw) {
            return Err(Error::InvalidParam {
                field: "input planes",
                reason: format!("a plane of {} words for {lanes} lanes", p.len()),
            });
        }
        let total = lanes * planes.len();
        let mut stream = Zeroizing::new(vec![0u64; words_for(total)]);
        let mut mine = Vec::with_capacity(planes.len());
        let mut r = Zeroizing::new(vec![0u64; nw]);
        for (b, plane) in planes.iter().enumerate() {
            r.iter_mut().for_each(|w| *w = self.prg.next_u64());
            if let Some(last) = r.last_mut() {
                *last &= last_mask(lanes);
            }
            xor_at(&mut stream, b * lanes, &r, lanes);
            let own: Vec<u64> = plane[..nw]
                .iter()
                .zip(r.iter())
                .map(|(x, r)| x ^ r)
                .collect();
            mine.push(Shares::from_words(lanes, own));
        }
        let sent = send_stream(
            &mut *self.ch,
            own(self.party, MSG_INPUT_SHARES),
            &stream,
            total,
        );
        close_on_err(&mut *self.ch, sent)?;
        Ok(mine)
    }

    /// Receives this party's shares of the peer's `planes`-bit input in `lanes` lanes (the
    /// counterpart of [`Gmw::input_own`]).
    ///
    /// Errors: the channel's; `Malformed` for a frame of the wrong length.
    pub fn input_peer(&mut self, lanes: usize, planes: usize) -> Result<Vec<Shares>> {
        let total = lanes * planes;
        let got = recv_stream(&mut *self.ch, peer(self.party, MSG_INPUT_SHARES), total);
        let stream = close_on_err(&mut *self.ch, got)?;
        Ok(split_stream(&stream, lanes, planes))
    }

    /// Sends this party's shares of `word` to the peer, which learns its value with
    /// [`Gmw::reveal_own`] (one [`MSG_OUTPUT_SHARES`] message).
    pub fn reveal_to_peer(&mut self, word: &[Shares]) -> Result<()> {
        let (stream, total) = join_stream(word);
        let sent = send_stream(
            &mut *self.ch,
            own(self.party, MSG_OUTPUT_SHARES),
            &stream,
            total,
        );
        close_on_err(&mut *self.ch, sent)
    }

    /// Receives the peer's shares of `word` and returns its value: plane b holds bit b of every
    /// lane, packed as in [`Gmw::input_own`] (the counterpart of [`Gmw::reveal_to_peer`]).
    ///
    /// Errors: the channel's; `Malformed` for a frame of the wrong length.
    pub fn reveal_own(&mut self, word: &[Shares]) -> Result<Vec<Vec<u64>>> {
        let (total, lanes) = word_size(word);
        let got = recv_stream(&mut *self.ch, peer(self.party, MSG_OUTPUT_SHARES), total);
        let peer = close_on_err(&mut *self.ch, got)?;
        Ok(open_word(word, &peer, lanes))
    }

    /// Both parties learn the value of `word`: the shares go both ways in lockstep (one
    /// [`MSG_OUTPUT_SHARES`] message each way); the value is packed as in
    /// [`Gmw::reveal_own`].
    pub fn reveal_both(&mut self, word: &[Shares]) -> Result<Vec<Vec<u64>>> {
        let (stream, total) = join_stream(word);
        let (_, lanes) = word_size(word);
        let got = exchange_stream(
            &mut *self.ch,
            names(self.party, MSG_OUTPUT_SHARES),
            &stream,
            total,
        );
        let opened = close_on_err(&mut *self.ch, got)?;
        Ok(split_stream(&opened, lanes, word.len())
            .into_iter()
            .map(|s| s.words)
            .collect())
    }

    /// One layer of scalar ANDs (see [`Backend::and`]): one MSG_OPEN_AND exchange.
    fn and_layer(&mut self, pairs: &[(&Shares, &Shares)]) -> Result<Vec<Shares>> {
        let n: usize = pairs.iter().map(|(u, _)| u.lanes).sum();
        let first = self.scalar.take(n)?;
        let maxw = pairs
            .iter()
            .map(|(u, _)| words_for(u.lanes))
            .max()
            .unwrap_or(0);
        let mut x = Zeroizing::new(vec![0u64; maxw]);
        let mut y = Zeroizing::new(vec![0u64; maxw]);
        let mut mine = Zeroizing::new(vec![0u64; words_for(2 * n)]);
        let (mut off, mut t) = (0, first);
        for (u, v) in pairs {
            debug_assert_eq!(u.lanes, v.lanes, "AND of operands of different lanes");
            let l = u.lanes;
            let nw = words_for(l);
            extract_into(&self.scalar.a, t, l, &mut x);
            xor_words(&mut x[..nw], &u.words);
            xor_at(&mut mine, off, &x, l);
            extract_into(&self.scalar.b, t, l, &mut y);
            xor_words(&mut y[..nw], &v.words);
            xor_at(&mut mine, off + l, &y, l);
            off += 2 * l;
            t += l;
        }
        let got = exchange_stream(&mut *self.ch, names(self.party, MSG_OPEN_AND), &mine, 2 * n);
        let opened = close_on_err(&mut *self.ch, got)?;

        let p0 = self.party == GmwParty::P0;
        let mut d = Zeroizing::new(vec![0u64; maxw]);
        let mut e = Zeroizing::new(vec![0u64; maxw]);
        let mut out = Vec::with_capacity(pairs.len());
        let (mut off, mut t) = (0, first);
        for (u, _) in pairs {
            let l = u.lanes;
            let nw = words_for(l);
            extract_into(&opened, off, l, &mut d);
            extract_into(&opened, off + l, l, &mut e);
            extract_into(&self.scalar.a, t, l, &mut x);
            extract_into(&self.scalar.b, t, l, &mut y);
            let mut w = vec![0u64; nw];
            extract_into(&self.scalar.c, t, l, &mut w);
            for i in 0..nw {
                let de = if p0 { d[i] & e[i] } else { 0 };
                w[i] ^= de ^ (d[i] & y[i]) ^ (e[i] & x[i]);
            }
            out.push(Shares { lanes: l, words: w });
            off += 2 * l;
            t += l;
        }
        Ok(out)
    }

    /// One layer of vector ANDs with vector triples (see [`Backend::and_vector`]): one
    /// MSG_OPEN_VECTOR exchange.
    fn vector_layer(&mut self, items: &[(&Shares, &[Shares])]) -> Result<Vec<Vec<Shares>>> {
        let width = self.vector.width.max(1);
        let chunks = |v: &[Shares]| v.len().div_ceil(width);
        let n: usize = items.iter().map(|(s, v)| s.lanes * chunks(v)).sum();
        let bits: usize = items
            .iter()
            .map(|(s, v)| s.lanes * (chunks(v) + v.len()))
            .sum();
        let first = self.vector.take(n)?;
        let maxw = items
            .iter()
            .map(|(s, _)| words_for(s.lanes))
            .max()
            .unwrap_or(0);
        let mut x = Zeroizing::new(vec![0u64; maxw]);
        let mut mine = Zeroizing::new(vec![0u64; words_for(bits)]);
        let (mut off, mut t) = (0, first);
        for (s, v) in items {
            let l = s.lanes;
            let nw = words_for(l);
            for chunk in v.chunks(width) {
                extract_into(&self.vector.a, t, l, &mut x);
                xor_words(&mut x[..nw], &s.words);
                xor_at(&mut mine, off, &x, l);
                off += l;
                for (vj, bj) in chunk.iter().zip(&self.vector.b) {
                    debug_assert_eq!(vj.lanes, l, "vector AND of operands of different lanes");
                    extract_into(bj, t, l, &mut x);
                    xor_words(&mut x[..nw], &vj.words);
                    xor_at(&mut mine, off, &x, l);
                    off += l;
                }
                t += l;
            }
        }
        let got = exchange_stream(
            &mut *self.ch,
            names(self.party, MSG_OPEN_VECTOR),
            &mine,
            bits,
        );
        let opened = close_on_err(&mut *self.ch, got)?;

        let p0 = self.party == GmwParty::P0;
        let mut d = Zeroizing::new(vec![0u64; maxw]);
        let mut e = Zeroizing::new(vec![0u64; maxw]);
        let mut beta = Zeroizing::new(vec![0u64; maxw]);
        let mut out = Vec::with_capacity(items.len());
        let (mut off, mut t) = (0, first);
        for (s, v) in items {
            let l = s.lanes;
            let nw = words_for(l);
            let mut outs = Vec::with_capacity(v.len());
            for chunk in v.chunks(width) {
                extract_into(&opened, off, l, &mut d);
                extract_into(&self.vector.a, t, l, &mut x);
                off += l;
                for (bj, cj) in self.vector.b.iter().zip(&self.vector.c).take(chunk.len()) {
                    extract_into(&opened, off, l, &mut e);
                    extract_into(bj, t, l, &mut beta);
                    let mut w = vec![0u64; nw];
                    extract_into(cj, t, l, &mut w);
                    for i in 0..nw {
                        let de = if p0 { d[i] & e[i] } else { 0 };
                        w[i] ^= de ^ (d[i] & beta[i]) ^ (e[i] & x[i]);
                    }
                    outs.push(Shares { lanes: l, words: w });
                    off += l;
                }
                t += l;
            }
            out.push(outs);
        }
        Ok(out)
    }
}

impl<C: Channel + ?Sized> Backend for Gmw<'_, C> {
    type Bits = Shares;

    fn lanes(&self, a: &Shares) -> usize {
        a.lanes
    }

    fn xor(&mut self, a: &Shares, b: &Shares) -> Shares {
        debug_assert_eq!(a.lanes, b.lanes, "XOR of operands of different lanes");
        let words = a.words.iter().zip(&b.words).map(|(x, y)| x ^ y).collect();
        Shares {
            lanes: a.lanes,
            words,
        }
    }

    fn not(&mut self, a: &Shares) -> Shares {
        match self.party {
            GmwParty::P0 => Shares::from_words(a.lanes, a.words.iter().map(|x| !x).collect()),
            GmwParty::P1 => a.clone(),
        }
    }

    fn constant(&mut self, value: bool, lanes: usize) -> Shares {
        match (self.party, value) {
            (GmwParty::P0, true) => Shares::from_words(lanes, vec![u64::MAX; words_for(lanes)]),
            _ => Shares::zero(lanes),
        }
    }

    fn and(&mut self, pairs: &[(&Shares, &Shares)]) -> Result<Vec<Shares>> {
        self.and_layer(pairs)
    }

    fn and_vector(&mut self, items: &[(&Shares, &[Shares])]) -> Result<Vec<Vec<Shares>>> {
        if self.vectorised {
            return self.vector_layer(items);
        }
        let pairs: Vec<(&Shares, &Shares)> = items
            .iter()
            .flat_map(|(s, v)| v.iter().map(move |x| (*s, x)))
            .collect();
        let mut flat = self.and_layer(&pairs)?.into_iter();
        Ok(items
            .iter()
            .map(|(_, v)| flat.by_ref().take(v.len()).collect())
            .collect())
    }

    fn gather(&mut self, a: &Shares, idx: &[usize]) -> Shares {
        debug_assert!(
            idx.iter().all(|&i| i < a.lanes),
            "gather of a lane past {}",
            a.lanes
        );
        let mut words = vec![0u64; words_for(idx.len())];
        gather_bits(&a.words, idx, &mut words);
        Shares {
            lanes: idx.len(),
            words,
        }
    }

    fn concat(&mut self, parts: &[&Shares]) -> Shares {
        let lanes = parts.iter().map(|p| p.lanes).sum();
        let mut words = vec![0u64; words_for(lanes)];
        let mut off = 0;
        for p in parts {
            xor_at(&mut words, off, &p.words, p.lanes);
            off += p.lanes;
        }
        Shares { lanes, words }
    }
}

/// Masks of the lanes l with bit log2(h) of l clear, for h = 1, 2, 4, …, 32: `BLOCKS[k]` keeps
/// the first 2^k of every 2^(k+1) bits of a word.
const BLOCKS: [u64; 6] = [
    0x5555_5555_5555_5555,
    0x3333_3333_3333_3333,
    0x0f0f_0f0f_0f0f_0f0f,
    0x00ff_00ff_00ff_00ff,
    0x0000_ffff_0000_ffff,
    0x0000_0000_ffff_ffff,
];

/// Bits `bit..bit + 64` of the packed `src` (zero past its end).
#[inline]
fn fetch64(src: &[u64], bit: usize) -> u64 {
    let (w, s) = (bit / 64, bit % 64);
    let lo = src.get(w).map_or(0, |&x| x >> s);
    if s == 0 {
        lo
    } else {
        lo | src.get(w + 1).map_or(0, |&x| x << (64 - s))
    }
}

/// The bits of `x` in the first half of every block of 2h (h = 2^k ≤ 32), moved together
/// into the low 32 bits in order.
#[inline]
fn compress_blocks(mut x: u64, k: usize) -> u64 {
    x &= BLOCKS[k];
    for j in k..5 {
        x = (x | (x >> (1 << j))) & BLOCKS[j + 1];
    }
    x
}

/// The low 32 bits of `x` spread into the first half of every block of 2h (h = 2^k ≤ 32), the
/// inverse of [`compress_blocks`].
#[inline]
fn spread_blocks(mut x: u64, k: usize) -> u64 {
    x &= BLOCKS[5];
    for j in (k..5).rev() {
        x = (x | (x << (1 << j))) & BLOCKS[j];
    }
    x
}

/// Whether `idx` takes the first h lanes of every block of 2h from its first index on (h a
/// power of two): `idx[l] = idx[0] + l + (l & !(h − 1))`.
fn strided(idx: &[usize], h: usize) -> bool {
    let (base, m) = (idx[0], !(h - 1));
    idx.iter()
        .enumerate()
        .all(|(l, &i)| i == base + l + (l & m))
}

/// Whether `idx` interleaves blocks of h lanes from two runs starting at `x` and `y`:
/// `idx[l] = (x or y, as bit log2 h of l is 0 or 1) + ((l >> 1) & !(h − 1)) + (l & (h − 1))`.
fn interleaved(idx: &[usize], h: usize, x: usize, y: usize) -> bool {
    let m = h - 1;
    idx.iter().enumerate().all(|(l, &i)| {
        let base = if l & h == 0 { x } else { y };
        i == base + ((l >> 1) & !m) + (l & m)
    })
}

/// Lanes `idx[0], idx[1], …` of the packed `src`, written into `dst` (⌈idx.len()/64⌉ zero
/// words). The strided patterns of the sorting and shuffling networks (every other block of
/// h lanes, or two runs of lanes interleaved in blocks of h, h ≤ 32 a power of two) are moved
/// with word operations; otherwise each 64 lanes are one word of [`gather_word`].
fn gather_bits(src: &[u64], idx: &[usize], dst: &mut [u64]) {
    let n = idx.len();
    if n == 0 {
        return;
    }
    let first = idx[0];
    let run = idx
        .iter()
        .enumerate()
        .take_while(|&(l, &i)| i == first + l)
        .count();
    if run < n && run <= 32 && run.is_power_of_two() {
        let (h, k) = (run, run.trailing_zeros() as usize);
        if strided(idx, h) {
            for (w, d) in dst.iter_mut().enumerate() {
                let at = first + 128 * w;
                *d = compress_blocks(fetch64(src, at), k)
                    | (compress_blocks(fetch64(src, at + 64), k) << 32);
            }
            if let Some(last) = dst.last_mut() {
                *last &= last_mask(n);
            }
            return;
        }
        let y = idx[h];
        if interleaved(idx, h, first, y) {
            for (w, d) in dst.iter_mut().enumerate() {
                *d = spread_blocks(fetch64(src, first + 32 * w), k)
                    | (spread_blocks(fetch64(src, y + 32 * w), k) << h);
            }
            if let Some(last) = dst.last_mut() {
                *last &= last_mask(n);
            }
            return;
        }
    }
    for (chunk, d) in idx.chunks(64).zip(dst.iter_mut()) {
        *d = gather_word(src, chunk);
    }
}

/// The bits of `x` at positions 0, 2^j, 2·2^j, … (j ≤ 5), moved together into the low bits.
#[inline]
fn compress_stride(mut x: u64, j: u32) -> u64 {
    for _ in 0..j {
        x = compress_blocks(x, 0);
    }
    x
}

/// The low 64/2^j bits of `x` (j ≤ 5) moved to positions 0, 2^j, 2·2^j, …, the inverse of
/// [`compress_stride`].
#[inline]
fn spread_stride(mut x: u64, j: u32) -> u64 {
    for _ in 0..j {
        x = spread_blocks(x, 0);
    }
    x
}

/// Lanes `chunk[0], chunk[1], …` (at most 64) of the packed `src`, as one word. A full chunk
/// that is one progression of lanes with a step s ≤ 32 (a power of two; s = 1 is a run), or s
/// runs of consecutive lanes interleaved lane by lane (lane m from run m % s), is moved with
/// word operations; any other chunk lane by lane.
fn gather_word(src: &[u64], chunk: &[usize]) -> u64 {
    let c0 = chunk[0];
    if chunk.len() == 64 {
        let s = chunk[1].wrapping_sub(c0);
        if s.is_power_of_two() && s <= 32 && chunk.iter().enumerate().all(|(m, &i)| i == c0 + s * m)
        {
            let (j, per) = (s.trailing_zeros(), 64 / s);
            return (0..s).fold(0, |acc, q| {
                acc | (compress_stride(fetch64(src, c0 + 64 * q), j) << (q * per))
            });
        }
        for s in [2usize, 4, 8, 16, 32] {
            if chunk[s] == c0.wrapping_add(1) {
                let j = s.trailing_zeros();
                if chunk
                    .iter()
                    .enumerate()
                    .all(|(m, &i)| i == chunk[m & (s - 1)] + (m >> j))
                {
                    let keep = (1u64 << (64 / s)) - 1;
                    return (0..s).fold(0, |acc, q| {
                        acc | (spread_stride(fetch64(src, chunk[q]) & keep, j) << q)
                    });
                }
                break;
            }
        }
    } else if chunk.iter().enumerate().all(|(m, &i)| i == c0 + m) {
        return fetch64(src, c0) & last_mask(chunk.len());
    }
    chunk.iter().enumerate().fold(0, |acc, (m, &i)| {
        acc | (((src[i / 64] >> (i % 64)) & 1) << m)
    })
}

/// `dst ^= src`, word by word.
fn xor_words(dst: &mut [u64], src: &[u64]) {
    dst.iter_mut().zip(src).for_each(|(d, s)| *d ^= s);
}

/// Closes the sending half of `ch` if `result` is an error (so the peer's next receive fails).
fn close_on_err<C: Channel + ?Sized, T>(ch: &mut C, result: Result<T>) -> Result<T> {
    if result.is_err() {
        FrameSender::close(ch);
    }
    result
}

/// The bits and the lanes of a word (every wire has the lanes of the first).
fn word_size(word: &[Shares]) -> (usize, usize) {
    let lanes = word.first().map_or(0, |s| s.lanes);
    (lanes * word.len(), lanes)
}

/// The wires of `word` one after the other as a bit string, and its length in bits.
fn join_stream(word: &[Shares]) -> (Vec<u64>, usize) {
    let (total, lanes) = word_size(word);
    let mut stream = vec![0u64; words_for(total)];
    for (b, s) in word.iter().enumerate() {
        debug_assert_eq!(s.lanes, lanes, "a word of wires of different lanes");
        xor_at(&mut stream, b * lanes, &s.words, lanes);
    }
    (stream, total)
}

/// The `planes` consecutive `lanes`-bit parts of a bit string.
fn split_stream(stream: &[u64], lanes: usize, planes: usize) -> Vec<Shares> {
    (0..planes)
        .map(|b| {
            let mut w = vec![0u64; words_for(lanes)];
            extract_into(stream, b * lanes, lanes, &mut w);
            Shares { lanes, words: w }
        })
        .collect()
}

/// The value of `word` from this party's shares and the peer's bit string of them.
fn open_word(word: &[Shares], peer: &[u64], lanes: usize) -> Vec<Vec<u64>> {
    split_stream(peer, lanes, word.len())
        .into_iter()
        .zip(word)
        .map(|(p, s)| p.words.iter().zip(&s.words).map(|(a, b)| a ^ b).collect())
        .collect()
}

/// The byte range of frame k of an `nbytes`-byte string.
fn frame_range(k: usize, nbytes: usize) -> std::ops::Range<usize> {
    k * FRAME_BYTES..nbytes.min((k + 1) * FRAME_BYTES)
}

/// The first `nbits` bits of `words` as bytes (bit k at byte k/8, position k%8).
fn to_bytes(words: &[u64], nbits: usize) -> Zeroizing<Vec<u8>> {
    let nbytes = nbits.div_ceil(8);
    let mut out = Zeroizing::new(Vec::with_capacity(words.len() * 8));
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.truncate(nbytes);
    out
}

/// XORs the bytes of a frame that starts at byte `at` (a multiple of 8) into `words`.
fn xor_frame(words: &mut [u64], at: usize, frame: &[u8]) {
    for (w, chunk) in words[at / 8..].iter_mut().zip(frame.chunks(8)) {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        *w ^= u64::from_le_bytes(b);
    }
}

/// Receives frame k of an `nbytes`-byte string: exactly its length, or an error.
fn recv_frame<C: Channel + ?Sized>(
    ch: &mut C,
    msg: &'static str,
    k: usize,
    nbytes: usize,
) -> Result<Vec<u8>> {
    let len = frame_range(k, nbytes).len();
    let frame = ch.recv(msg, len)?;
    if frame.len() != len {
        return Err(Error::malformed(
            msg,
            format!("a frame of {} bytes, {len} expected", frame.len()),
        ));
    }
    Ok(frame)
}

/// Sends the `nbits`-bit string `words` in frames.
fn send_stream<C: Channel + ?Sized>(
    ch: &mut C,
    msg: &'static str,
    words: &[u64],
    nbits: usize,
) -> Result<()> {
    let bytes = to_bytes(words, nbits);
    for frame in bytes.chunks(FRAME_BYTES) {
        ch.send(msg, frame)?;
    }
    Ok(())
}

/// Receives an `nbits`-bit string (the padding bits of its last byte cleared).
fn recv_stream<C: Channel + ?Sized>(
    ch: &mut C,
    msg: &'static str,
    nbits: usize,
) -> Result<Zeroizing<Vec<u64>>> {
    let nbytes = nbits.div_ceil(8);
    let mut words = Zeroizing::new(vec![0u64; words_for(nbits)]);
    for k in 0..nbytes.div_ceil(FRAME_BYTES) {
        let frame = Zeroizing::new(recv_frame(ch, msg, k, nbytes)?);
        xor_frame(&mut words, k * FRAME_BYTES, &frame);
    }
    if let Some(last) = words.last_mut() {
        *last &= last_mask(nbits);
    }
    Ok(words)
}

/// The name under which `party` sends a message of `names`.
fn own(party: GmwParty, names: [&'static str; 2]) -> &'static str {
    names[party.index()]
}

/// The name under which the peer of `party` sends a message of `names`.
fn peer(party: GmwParty, names: [&'static str; 2]) -> &'static str {
    names[1 - party.index()]
}

/// (`party`'s name, the peer's name) of a message both send.
fn names(party: GmwParty, names: [&'static str; 2]) -> (&'static str, &'static str) {
    (own(party, names), peer(party, names))
}

/// Sends the `nbits`-bit string `mine` and receives the peer's of the same length in
/// lockstep (frame k out, then frame k in); returns their XOR.
fn exchange_stream<C: Channel + ?Sized>(
    ch: &mut C,
    (msg, peer_msg): (&'static str, &'static str),
    mine: &[u64],
    nbits: usize,
) -> Result<Zeroizing<Vec<u64>>> {
    let bytes = to_bytes(mine, nbits);
    let nbytes = bytes.len();
    let mut words = Zeroizing::new(mine[..words_for(nbits)].to_vec());
    for (k, frame) in bytes.chunks(FRAME_BYTES).enumerate() {
        ch.send(msg, frame)?;
        let peer = Zeroizing::new(recv_frame(ch, peer_msg, k, nbytes)?);
        xor_frame(&mut words, k * FRAME_BYTES, &peer);
    }
    if let Some(last) = words.last_mut() {
        *last &= last_mask(nbits);
    }
    Ok(words)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use blindjoin_core::channel::metered::Metered;
    use blindjoin_ot::base::ideal::{IdealBaseOtReceiver, IdealBaseOtSender};
    use blindjoin_testkit::{Attack, Tamper, Target, rng, run_two_party};
    use rand::Rng;
    use std::time::Instant;

    const SID: [u8; 32] = [7; 32];

    fn setup<C: Channel + ?Sized>(
        ch: &mut C,
        party: GmwParty,
        counts: TripleCounts,
        seed: u64,
    ) -> Result<Gmw<'_, C>> {
        let mut sender = IdealBaseOtSender::default();
        let mut receiver = IdealBaseOtReceiver::default();
        let base = BaseOts {
            sender: &mut sender,
            receiver: &mut receiver,
        };
        Gmw::precompute(ch, party, &SID, base, &counts, &mut rng(seed))
    }

    fn bit(v: &[u64], i: usize) -> bool {
        (v[i / 64] >> (i % 64)) & 1 == 1
    }

    type Scalar = (Vec<u64>, Vec<u64>, Vec<u64>);
    type Vector = (Vec<u64>, Vec<Vec<u64>>, Vec<Vec<u64>>);

    /// Both parties' triples, as generated.
    fn triples_of(counts: TripleCounts) -> [(Scalar, Vector); 2] {
        let take = |g: Gmw<'_, _>| {
            (
                (g.scalar.a.clone(), g.scalar.b.clone(), g.scalar.c.clone()),
                (g.vector.a.clone(), g.vector.b.clone(), g.vector.c.clone()),
            )
        };
        let (t0, t1) = run_two_party(
            |ch| take(setup(ch, GmwParty::P0, counts, 1).unwrap()),
            |ch| take(setup(ch, GmwParty::P1, counts, 2).unwrap()),
        );
        [t0, t1]
    }

    #[test]
    fn triples_are_correct() {
        for (scalar, vector, width) in [(300_001, 5_000, 100), (1_000, 270_000, 8), (65, 1, 1)] {
            let counts = TripleCounts {
                scalar,
                vector,
                width,
                vectorised: true,
            };
            let [(s0, v0), (s1, v1)] = triples_of(counts);
            let n = scalar as usize;
            for i in 0..n {
                let a = bit(&s0.0, i) ^ bit(&s1.0, i);
                let b = bit(&s0.1, i) ^ bit(&s1.1, i);
                assert_eq!(a & b, bit(&s0.2, i) ^ bit(&s1.2, i), "scalar triple {i}");
            }
            // Neither party's α or β is constant (they are random).
            assert!(s0.0.iter().any(|&w| w != 0) && s1.1.iter().any(|&w| w != 0));
            assert_eq!(v0.1.len(), width);
            let n = vector as usize;
            for i in 0..n {
                let a = bit(&v0.0, i) ^ bit(&v1.0, i);
                for j in 0..width {
                    let b = bit(&v0.1[j], i) ^ bit(&v1.1[j], i);
                    let c = bit(&v0.2[j], i) ^ bit(&v1.2[j], i);
                    assert_eq!(a & b, c, "vector triple {i}, bit {j}");
                }
            }
            // The high planes are random too (bits 64.. of the OT outputs).
            assert!(n < 64 || v0.1[width - 1].iter().any(|&w| w != 0));
        }
    }

    #[test]
    fn no_triples_no_messages() {
        let counts = TripleCounts::for_circuit(0, 0, 32, true);
        let (a, b) = run_two_party(
            |ch| {
                let mut m = Metered::new(ch);
                setup(&mut m, GmwParty::P0, counts, 1).unwrap();
                m.traffic()
            },
            |ch| {
                let mut m = Metered::new(ch);
                setup(&mut m, GmwParty::P1, counts, 2).unwrap();
                m.traffic()
            },
        );
        assert_eq!((a.bytes_sent, b.bytes_sent), (0, 0));
    }

    /// Evaluation in the clear, one `bool` per lane.
    struct Clear;

    impl Backend for Clear {
        type Bits = Vec<bool>;
        fn lanes(&self, a: &Vec<bool>) -> usize {
            a.len()
        }
        fn xor(&mut self, a: &Vec<bool>, b: &Vec<bool>) -> Vec<bool> {
            a.iter().zip(b).map(|(x, y)| x ^ y).collect()
        }
        fn not(&mut self, a: &Vec<bool>) -> Vec<bool> {
            a.iter().map(|x| !x).collect()
        }
        fn constant(&mut self, value: bool, lanes: usize) -> Vec<bool> {
            vec![value; lanes]
        }
        fn and(&mut self, pairs: &[(&Vec<bool>, &Vec<bool>)]) -> Result<Vec<Vec<bool>>> {
            Ok(pairs
                .iter()
                .map(|(a, b)| a.iter().zip(b.iter()).map(|(x, y)| x & y).collect())
                .collect())
        }
        fn and_vector(
            &mut self,
            items: &[(&Vec<bool>, &[Vec<bool>])],
        ) -> Result<Vec<Vec<Vec<bool>>>> {
            Ok(items
                .iter()
                .map(|(s, v)| {
                    v.iter()
                        .map(|x| s.iter().zip(x).map(|(a, b)| a & b).collect())
                        .collect()
                })
                .collect())
        }
        fn gather(&mut self, a: &Vec<bool>, idx: &[usize]) -> Vec<bool> {
            idx.iter().map(|&i| a[i]).collect()
        }
        fn concat(&mut self, parts: &[&Vec<bool>]) -> Vec<bool> {
            parts.iter().flat_map(|p| p.iter().copied()).collect()
        }
    }

    /// One step of a test circuit over a growing list of wires, each appending its outputs.
    #[derive(Clone, Debug)]
    enum Op {
        Xor(usize, usize),
        Not(usize),
        Const(bool),
        And(Vec<(usize, usize)>),
        AndVector(Vec<(usize, Vec<usize>)>),
        Gather(usize, Vec<usize>),
        ConcatGather(usize, usize, Vec<usize>),
    }

    const INPUTS: usize = 4;

    /// A random layered circuit on `lanes` lanes over 2·INPUTS input wires.
    fn circuit(seed: u64, lanes: usize, width: usize, steps: usize) -> Vec<Op> {
        let mut r = rng(seed);
        let mut wires = 2 * INPUTS;
        let mut ops = Vec::new();
        for _ in 0..steps {
            let op = match r.random_range(0..7) {
                0 => Op::Xor(r.random_range(0..wires), r.random_range(0..wires)),
                1 => Op::Not(r.random_range(0..wires)),
                2 => Op::Const(r.random()),
                3 | 4 => Op::And(
                    (0..r.random_range(1..=3))
                        .map(|_| (r.random_range(0..wires), r.random_range(0..wires)))
                        .collect(),
                ),
                5 => Op::AndVector(
                    (0..r.random_range(1..=2))
                        .map(|_| {
                            let len = r.random_range(0..=2 * width + 1);
                            let v = (0..len).map(|_| r.random_range(0..wires)).collect();
                            (r.random_range(0..wires), v)
                        })
                        .collect(),
                ),
                _ if r.random() => Op::Gather(
                    r.random_range(0..wires),
                    (0..lanes).map(|_| r.random_range(0..lanes)).collect(),
                ),
                _ => Op::ConcatGather(
                    r.random_range(0..wires),
                    r.random_range(0..wires),
                    (0..lanes).map(|_| r.random_range(0..2 * lanes)).collect(),
                ),
            };
            wires += match &op {
                Op::And(p) => p.len(),
                Op::AndVector(items) => items.iter().map(|(_, v)| v.len()).sum(),
                _ => 1,
            };
            ops.push(op);
        }
        ops
    }

    /// The triples `ops` uses on `lanes` lanes.
    fn counts_of(ops: &[Op], lanes: usize, width: usize, vectorised: bool) -> TripleCounts {
        let (mut ands, mut vector) = (0u64, 0u64);
        for op in ops {
            match op {
                Op::And(p) => ands += (p.len() * lanes) as u64,
                Op::AndVector(items) if vectorised => {
                    vector += items
                        .iter()
                        .map(|(_, v)| (v.len().div_ceil(width) * lanes) as u64)
                        .sum::<u64>();
                }
                Op::AndVector(items) => {
                    ands += items
                        .iter()
                        .map(|(_, v)| (v.len() * lanes) as u64)
                        .sum::<u64>();
                }
                _ => {}
            }
        }
        TripleCounts {
            scalar: ands,
            vector,
            width,
            vectorised,
        }
    }

    fn eval<B: Backend>(b: &mut B, mut wires: Vec<B::Bits>, ops: &[Op]) -> Result<Vec<B::Bits>>
    where
        B::Bits: Clone,
    {
        for op in ops {
            match op {
                Op::Xor(i, j) => {
                    let w = b.xor(&wires[*i], &wires[*j]);
                    wires.push(w);
                }
                Op::Not(i) => {
                    let w = b.not(&wires[*i]);
                    wires.push(w);
                }
                Op::Const(v) => {
                    let l = b.lanes(&wires[0]);
                    let w = b.constant(*v, l);
                    wires.push(w);
                }
                Op::And(p) => {
                    let pairs: Vec<_> = p.iter().map(|(i, j)| (&wires[*i], &wires[*j])).collect();
                    let out = b.and(&pairs)?;
                    wires.extend(out);
                }
                Op::AndVector(items) => {
                    let vs: Vec<Vec<B::Bits>> = items
                        .iter()
                        .map(|(_, v)| v.iter().map(|j| wires[*j].clone()).collect())
                        .collect();
                    let args: Vec<(&B::Bits, &[B::Bits])> = items
                        .iter()
                        .zip(&vs)
                        .map(|((s, _), v)| (&wires[*s], v.as_slice()))
                        .collect();
                    let out = b.and_vector(&args)?;
                    wires.extend(out.into_iter().flatten());
                }
                Op::Gather(i, idx) => {
                    let w = b.gather(&wires[*i], idx);
                    wires.push(w);
                }
                Op::ConcatGather(i, j, idx) => {
                    let c = b.concat(&[&wires[*i], &wires[*j]]);
                    let w = b.gather(&c, idx);
                    wires.push(w);
                }
            }
        }
        Ok(wires)
    }

    fn random_planes(seed: u64, lanes: usize) -> Vec<Vec<u64>> {
        let mut r = rng(seed);
        (0..INPUTS)
            .map(|_| (0..words_for(lanes)).map(|_| r.random()).collect())
            .collect()
    }

    fn unpack(planes: &[Vec<u64>], lanes: usize) -> Vec<Vec<bool>> {
        planes
            .iter()
            .map(|p| (0..lanes).map(|i| bit(p, i)).collect())
            .collect()
    }

    /// One party's run of `ops`: its input, the circuit, the reveals of the last wire; its
    /// shares of every wire, the revealed values and the triples left.
    type PartyRun = (
        Vec<Shares>,
        Vec<Vec<u64>>,
        Option<Vec<Vec<u64>>>,
        (u64, u64),
    );

    fn run_party<C: Channel + ?Sized>(
        ch: &mut C,
        party: GmwParty,
        ops: &[Op],
        lanes: usize,
        counts: TripleCounts,
    ) -> Result<PartyRun> {
        let seed = if party == GmwParty::P0 { 10 } else { 11 };
        let mut g = setup(ch, party, counts, seed)?;
        let mine = random_planes(seed, lanes);
        let inputs = match party {
            GmwParty::P0 => {
                let mut w = g.input_own(lanes, &mine)?;
                w.extend(g.input_peer(lanes, INPUTS)?);
                w
            }
            GmwParty::P1 => {
                let mut w = g.input_peer(lanes, INPUTS)?;
                w.extend(g.input_own(lanes, &mine)?);
                w
            }
        };
        let wires = eval(&mut g, inputs, ops)?;
        let last = &wires[wires.len() - 2..];
        let both = g.reveal_both(last)?;
        let own = match party {
            GmwParty::P0 => Some(g.reveal_own(last)?),
            GmwParty::P1 => {
                g.reveal_to_peer(last)?;
                None
            }
        };
        let left = g.remaining();
        Ok((wires, both, own, left))
    }

    fn check_circuit(lanes: usize, width: usize, seed: u64, vectorised: bool) {
        let ops = circuit(seed, lanes, width, 14);
        let counts = counts_of(&ops, lanes, width, vectorised);
        let (r0, r1) = run_two_party(
            |ch| run_party(ch, GmwParty::P0, &ops, lanes, counts),
            |ch| run_party(ch, GmwParty::P1, &ops, lanes, counts),
        );
        let (w0, both0, own0, left0) = r0.unwrap();
        let (w1, both1, _, left1) = r1.unwrap();
        let mut inputs = unpack(&random_planes(10, lanes), lanes);
        inputs.extend(unpack(&random_planes(11, lanes), lanes));
        let clear = eval(&mut Clear, inputs, &ops).unwrap();
        assert_eq!(w0.len(), clear.len());
        for (k, ((a, b), c)) in w0.iter().zip(&w1).zip(&clear).enumerate() {
            assert_eq!(a.lanes(), c.len(), "wire {k}");
            let got: Vec<bool> = (0..c.len()).map(|i| a.bit(i) ^ b.bit(i)).collect();
            assert_eq!(&got, c, "wire {k} ({lanes} lanes, vectorised {vectorised})");
            for s in [a, b] {
                let last = s.words().last().copied().unwrap_or(0);
                assert_eq!(last & !last_mask(s.lanes()), 0, "padding of wire {k}");
            }
        }
        let last = &clear[clear.len() - 2..];
        for opened in [&both0, &both1, own0.as_ref().unwrap()] {
            assert_eq!(&unpack(opened, lanes), last);
        }
        assert_eq!((left0, left1), ((0, 0), (0, 0)), "every triple used");
    }

    #[test]
    fn random_circuits_match_the_clear() {
        for (k, lanes) in [1, 63, 64, 65, 1000, 70_000].into_iter().enumerate() {
            for width in [5, 64, 100] {
                if lanes == 70_000 && width != 5 {
                    continue;
                }
                for vectorised in [true, false] {
                    check_circuit(lanes, width, 100 + k as u64, vectorised);
                }
            }
        }
    }

    /// Index patterns of the sorting and shuffling networks, and random ones, of `n` lanes
    /// into a source of `lanes` lanes.
    fn gather_patterns(n: usize, lanes: usize, r: &mut impl Rng) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = Vec::new();
        for h in [1usize, 2, 4, 8, 16, 32, 64, 128] {
            for base in [0, h, 1, 7] {
                // Every other block of h lanes.
                out.push((0..n).map(|l| base + l + (l & !(h - 1))).collect());
                // Two runs interleaved in blocks of h.
                let y = base + n.div_ceil(2) + 3;
                out.push(
                    (0..n)
                        .map(|l| {
                            let b = if l & h == 0 { base } else { y };
                            b + ((l >> 1) & !(h - 1)) + (l & (h - 1))
                        })
                        .collect(),
                );
            }
        }
        for s in [1usize, 2, 4, 8, 16, 32, 64] {
            for c in [0usize, 3] {
                // Progressions of step s, one after the other.
                out.push((0..n).map(|l| (c + s * l) % lanes).collect());
                // s runs interleaved lane by lane.
                out.push((0..n).map(|l| c + (l % s) * (n / s) + l / s).collect());
            }
        }
        out.push((0..n).rev().collect());
        out.push((0..n).map(|_| r.random_range(0..lanes)).collect());
        out.into_iter()
            .map(|v| v.into_iter().map(|i| i % lanes).collect())
            .collect()
    }

    #[test]
    fn gather_matches_lane_by_lane() {
        let mut r = rng(5);
        for n in [1usize, 2, 63, 64, 65, 127, 128, 200, 1000, 4096] {
            let lanes = 3 * n + 300;
            let src: Vec<u64> = (0..words_for(lanes)).map(|_| r.random()).collect();
            let src = Shares::from_words(lanes, src);
            for idx in gather_patterns(n, lanes, &mut r) {
                let mut want = vec![0u64; words_for(n)];
                for (k, &i) in idx.iter().enumerate() {
                    want[k / 64] |= u64::from(src.bit(i)) << (k % 64);
                }
                let mut got = vec![0u64; words_for(n)];
                gather_bits(src.words(), &idx, &mut got);
                assert_eq!(got, want, "{n} lanes of {idx:?}");
            }
        }
    }

    #[test]
    fn for_circuit_counts() {
        let v = TripleCounts::for_circuit(10, 3, 32, true);
        assert_eq!((v.scalar, v.vector), (10, 3));
        let p = TripleCounts::for_circuit(10, 3, 32, false);
        assert_eq!((p.scalar, p.vector), (10 + 96, 0));
    }

    /// P0 and P1 evaluate one AND of two inputs (P0's a, P1's b) in `lanes` lanes on
    /// channels wrapped by `wrap0` / `wrap1`; each side's result (P0 learns a ∧ b).
    fn one_and(
        lanes: usize,
        attack: Option<(Target, Attack)>,
        counts: TripleCounts,
    ) -> (Result<Vec<u64>>, Result<()>, Vec<u64>) {
        let a = random_planes(1, lanes).remove(0);
        let b = random_planes(2, lanes).remove(0);
        let mut want: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x & y).collect();
        if let Some(last) = want.last_mut() {
            *last &= last_mask(lanes);
        }
        let p0 = |ch: &mut dyn Channel| -> Result<Vec<u64>> {
            let mut g = setup(ch, GmwParty::P0, counts, 1)?;
            let x = g.input_own(lanes, std::slice::from_ref(&a))?;
            let y = g.input_peer(lanes, 1)?;
            let z = g.and(&[(&x[0], &y[0])])?;
            Ok(g.reveal_own(&z)?.remove(0))
        };
        let p1 = |ch: &mut dyn Channel| -> Result<()> {
            let mut g = setup(ch, GmwParty::P1, counts, 2)?;
            let x = g.input_peer(lanes, 1)?;
            let y = g.input_own(lanes, std::slice::from_ref(&b))?;
            let z = g.and(&[(&x[0], &y[0])])?;
            g.reveal_to_peer(&z)
        };
        let (r0, r1) = run_two_party(
            |ch| match &attack {
                Some((t, at)) => p0(&mut Tamper::new(ch, *t, at.clone())),
                None => p0(ch),
            },
            |ch| p1(ch),
        );
        (r0, r1, want)
    }

    fn counts(scalar: u64) -> TripleCounts {
        TripleCounts::for_circuit(scalar, 0, 1, true)
    }

    #[test]
    fn one_and_is_correct() {
        for lanes in [1, 64, 1000, 200_000] {
            let (r0, r1, want) = one_and(lanes, None, counts(lanes as u64));
            r1.unwrap();
            assert_eq!(r0.unwrap(), want);
        }
    }

    #[test]
    fn tampered_opening_gives_a_wrong_output_without_error() {
        let flip_all: fn(&mut Vec<u8>) = |f| f.iter_mut().for_each(|b| *b ^= 0xff);
        let attack = (Target::first(MSG_OPEN_AND[0]), Attack::Edit(flip_all));
        let (r0, r1, want) = one_and(1000, Some(attack), counts(1000));
        r1.unwrap();
        assert_ne!(r0.unwrap(), want);
        // One flipped bit: no panic, no error, whatever the output.
        let attack = (Target::first(MSG_OPEN_AND[0]), Attack::FlipBit(3));
        let (r0, r1, _) = one_and(1000, Some(attack), counts(1000));
        r0.unwrap();
        r1.unwrap();
    }

    #[test]
    fn bad_frames_are_errors() {
        let lanes = 200_000; // 50 000 bytes of openings: two frames
        let target = Target::first(MSG_OPEN_AND[0]);
        for attack in [
            Attack::Truncate(3),
            Attack::DropTail(1),
            Attack::Extend(vec![0]),
            Attack::Replace(Vec::new()),
            Attack::HangUp,
        ] {
            let (r0, r1, _) = one_and(lanes, Some((target, attack.clone())), counts(200_000));
            assert!(r1.is_err(), "{attack:?}: P1 {r1:?}");
            assert!(r0.is_err(), "{attack:?}: P0 {r0:?}");
        }
        let last = Target::frame(MSG_OPEN_AND[0], 1);
        let (_, r1, _) = one_and(lanes, Some((last, Attack::Truncate(10))), counts(200_000));
        assert!(matches!(r1, Err(Error::Malformed { .. })), "{r1:?}");
        let input = Target::first(MSG_INPUT_SHARES[0]);
        let (_, r1, _) = one_and(lanes, Some((input, Attack::DropTail(1))), counts(200_000));
        assert!(r1.is_err());
        let output = Target::first(MSG_OUTPUT_SHARES[0]);
        let (r0, r1, _) = one_and(lanes, Some((output, Attack::Extend(vec![1]))), counts(1));
        assert!(r0.is_err() && r1.is_err());
    }

    #[test]
    fn a_peer_that_leaves_is_an_error() {
        let c = counts(64);
        // Before the precomputation.
        let (r0, _) = run_two_party(|ch| setup(ch, GmwParty::P0, c, 1).map(|_| ()), |_| ());
        assert!(r0.is_err());
        // After it, before the AND layer.
        let (r0, r1) = run_two_party(
            |ch| {
                let mut g = setup(ch, GmwParty::P0, c, 1)?;
                let x = g.constant(true, 64);
                g.and(&[(&x, &x)]).map(|_| ())
            },
            |ch| setup(ch, GmwParty::P1, c, 2).map(|_| ()),
        );
        r1.unwrap();
        // Whether party 0's openings are refused or its read of the peer's finds the channel
        // closed depends on when the peer's end goes.
        assert!(
            matches!(r0, Err(Error::PeerClosed { .. } | Error::SendFailed { .. })),
            "{r0:?}"
        );
    }

    #[test]
    fn running_out_of_triples_is_an_error() {
        let c = TripleCounts::for_circuit(10, 3, 4, true);
        let run = |ch: &mut dyn Channel, party| -> Result<(bool, bool, (u64, u64))> {
            let mut g = setup(ch, party, c, 1)?;
            let x = g.constant(false, 64);
            let short = g.and(&[(&x, &x)]).is_err();
            let v = [x.clone(), x.clone()];
            let short_vector = g.and_vector(&[(&x, v.as_slice())]).is_err();
            Ok((short, short_vector, g.remaining()))
        };
        let (r0, r1) = run_two_party(|ch| run(ch, GmwParty::P0), |ch| run(ch, GmwParty::P1));
        assert_eq!(r0.unwrap(), (true, true, (10, 3)));
        assert_eq!(r1.unwrap(), (true, true, (10, 3)));
    }

    /// Release-mode throughput: `cargo test --release -p blindjoin-psi --lib circuit::gmw --
    /// --ignored --nocapture`.
    #[test]
    #[ignore = "throughput measurement; run in release mode"]
    fn throughput() {
        const ANDS: u64 = 10_000_000;
        const VECTORS: u64 = 100_000;
        const WIDTH: usize = 32;
        const LAYER: usize = 1 << 20;
        let c = TripleCounts::for_circuit(ANDS, VECTORS, WIDTH, true);
        let run = |ch: &mut dyn Channel, party: GmwParty| -> Result<(f64, f64, f64, u64, u64)> {
            let mut m = Metered::new(ch);
            let t = Instant::now();
            let mut g = setup(&mut m, party, c, 1)?;
            let pre = t.elapsed().as_secs_f64();
            let pre_bytes = g.channel().traffic().bytes_sent;
            let x = g.constant(party == GmwParty::P0, LAYER);
            let y = g.not(&x);
            let t = Instant::now();
            let mut left = ANDS as usize;
            while left > 0 {
                let l = left.min(LAYER);
                let u = Shares::from_words(l, x.words[..words_for(l)].to_vec());
                let v = Shares::from_words(l, y.words[..words_for(l)].to_vec());
                std::hint::black_box(g.and(&[(&u, &v)])?);
                left -= l;
            }
            let and = t.elapsed().as_secs_f64();
            let and_bytes = g.channel().traffic().bytes_sent - pre_bytes;
            let t = Instant::now();
            let v: Vec<Shares> = (0..WIDTH).map(|_| x.clone()).collect();
            let mut left = VECTORS as usize;
            while left > 0 {
                let l = left.min(LAYER);
                let s = Shares::from_words(l, x.words[..words_for(l)].to_vec());
                let vs: Vec<Shares> = v
                    .iter()
                    .map(|w| Shares::from_words(l, w.words[..words_for(l)].to_vec()))
                    .collect();
                std::hint::black_box(g.and_vector(&[(&s, vs.as_slice())])?);
                left -= l;
            }
            let vec = t.elapsed().as_secs_f64();
            assert_eq!(g.remaining(), (0, 0));
            drop(g);
            Ok((pre, and, vec, pre_bytes, and_bytes))
        };
        let (r0, r1) = run_two_party(|ch| run(ch, GmwParty::P0), |ch| run(ch, GmwParty::P1));
        for (p, r) in [(0, r0.unwrap()), (1, r1.unwrap())] {
            let (pre, and, vec, pre_bytes, and_bytes) = r;
            let triples = ANDS + VECTORS;
            println!(
                "P{p}: precompute {pre:.3} s ({:.2e} triples/s, {pre_bytes} B sent, \
                 {:.1} B/triple); {ANDS} ANDs {and:.3} s ({:.2e} AND/s, {and_bytes} B sent, \
                 {:.3} B/AND); {VECTORS} vector ANDs of {WIDTH} bits {vec:.4} s",
                triples as f64 / pre,
                pre_bytes as f64 / triples as f64,
                ANDS as f64 / and,
                and_bytes as f64 / ANDS as f64,
            );
        }
    }
}
