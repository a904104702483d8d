//! The messages between a client and the server, and between the clients (for the key).
//!
//! Client and server (after the link hello of `blindjoin_core::transport`), `kmrs_semi` and
//! `kmrs_mal`:
//!
//! ```text
//! client                                            server
//!   submit hello {version, protocol, run, party i, parties n,
//!                 label length ℓ, label count, parameters,
//!                 every client's set size, every client's
//!                 certificate fingerprint}           ──▶  checks, joins run `run`
//!                                         ◀──  status: Accepted | Refused(reason)
//!   labels, ascending, in frames of ≤ 2^16            ──▶  checks the order, stores them
//!                                         ◀──  status: Waiting {joined} every 5 s, until
//!                                              all n parties have sent their labels
//!                                         ◀──  status: Result {matches} | Refused(reason)
//!                                         ◀──  bit vector: bit k (byte k/8, bit k%8) = label k
//!                                              is in every party's set; frames of ≤ 2^19 B
//!   received                                          ──▶  forgets this party's part
//! ```
//!
//! `kmrs_fair`: as above until the labels are in, then
//!
//! ```text
//!                                         ◀──  status: Waiting … | Committed(commitment to
//!                                              this client's bit vector)
//!   opening {K2, |S_i|}, then F_K1(S_i) ascending,
//!   16 bytes each, in frames of ≤ 2^16               ──▶  checks the labels against it
//!                                         ◀──  status: Waiting … (until every opening passed)
//!                                              | Result {matches} | Refused(reason)
//!                                         ◀──  bit vector; the commitment's 32-byte nonce
//!   received                                          ──▶
//! ```
//!
//! `kmrs_size`, party 2 (announcing 0 labels), then party 1:
//!
//! ```text
//! P2: submit hello                                    ──▶
//!                                         ◀──  Accepted; Committed(commitment to r_S)
//!     share {party 2, r_2}                            ──▶
//!                                         ◀──  r_S (K2 = H(run, r_S, r_2))
//!     verdict: Approve | Abort(reason)                ──▶  (after P1's bit vector)
//! P1: submit hello, labels T1 ascending               ──▶
//!                                         ◀──  Waiting … | Relabelled; T′1 = F_K2(T1)
//!                                              ascending, frames of ≤ 2^16 labels
//!                                         ◀──  Waiting … | Opened; π3: for each label of T′1
//!                                              its position in T1, 4 bytes LE, frames of
//!                                              ≤ 2^16 | Refused(P2's reason)
//!     received                                        ──▶
//! ```
//!
//! and between P2 and P1 on their direct link after the key: P2 → P1: T′2 ascending; P1 →
//! P2: the bit vector over T′2.
//!
//! Between the clients (a direct link, TLS between organisations, before the server):
//! P1 listens, every P_i (2 ≤ i ≤ n) connects; the handshake of `blindjoin_core::handshake`
//! with P1 as its sender and P_i as its receiver (protocol, set sizes, κ, λ, parameters incl.
//! n and the run id), then
//!
//! - `kmrs_semi`: P_i → P1: its party index; P1 → P_i: the key K and all n set sizes;
//! - `kmrs_mal`, `kmrs_fair`, `kmrs_size` (the coin toss of `client::coin_toss`): P1 → P_i: the commitment to its share
//!   r_1; P_i → P1: its party index and its share r_i; P1 → P_i: r_1, …, r_n and all n set
//!   sizes.

use blindjoin_core::channel::{FrameReceiver, FrameSender, recv_msg, send_msg};
use blindjoin_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// Version of the client-server messages.
pub const WIRE_VERSION: u32 = 2;

/// Name of the client's submit hello.
pub const MSG_SUBMIT: &str = "the client's submit hello";
/// Name of the server's status messages.
pub const MSG_STATUS: &str = "the server's status";
/// Name of the client's labels.
pub const MSG_LABELS: &str = "the client's labels";
/// Name of the server's bit vector.
pub const MSG_BITS: &str = "the server's bit vector";
/// Name of the client's receipt.
pub const MSG_RECEIVED: &str = "the client's receipt";
/// Name of a client's party index (P_i → P1).
pub const MSG_PARTY: &str = "the client's party index";
/// Name of the key and the set sizes (P1 → P_i).
pub const MSG_KEY: &str = "the run key and set sizes";

/// Name of P1's commitment to its key share (P1 → P_i, `kmrs_mal`).
pub const MSG_COMMIT: &str = "the key share commitment";
/// Name of a client's party index and key share (P_i → P1, `kmrs_mal`; P2 → server,
/// `kmrs_size`).
pub const MSG_SHARE: &str = "the client's key share";
/// Name of every key share and the set sizes (P1 → P_i, `kmrs_mal`).
pub const MSG_OPEN: &str = "the opened key shares and set sizes";

/// Name of the server's key share (server → P2, `kmrs_size`).
pub const MSG_SERVER_SHARE: &str = "the server's key share";
/// Name of a client's opening (`kmrs_fair`): K2 and its element count.
pub const MSG_FAIR_OPEN: &str = "the client's opening";
/// Name of a client's first-layer values F_K1(S_i), ascending (`kmrs_fair`).
pub const MSG_FAIR_VALUES: &str = "the client's first-layer values";
/// Name of the server's opening of its commitment to a client's bit vector (`kmrs_fair`).
pub const MSG_FAIR_NONCE: &str = "the server's commitment opening";
/// Name of party 1's labels under K2, ascending (server → P1, `kmrs_size`).
pub const MSG_RELABELLED: &str = "the server's relabelled labels";
/// Name of the permutation π3 (server → P1, `kmrs_size`).
pub const MSG_PERMUTATION: &str = "the server's permutation";
/// Name of party 2's doubly-keyed labels, ascending (P2 → P1, `kmrs_size`).
pub const MSG_SIZE_LABELS: &str = "party 2's labels";
/// Name of the bit vector over party 2's labels (P1 → P2, `kmrs_size`).
pub const MSG_SIZE_BITS: &str = "party 1's bit vector";
/// Name of party 2's verdict on the result (P2 → server, `kmrs_size`).
pub const MSG_VERDICT: &str = "party 2's verdict";

/// Labels per frame of [`MSG_LABELS`].
pub const LABELS_PER_FRAME: usize = 1 << 16;
/// Bytes per frame of [`MSG_BITS`].
pub const BITS_PER_FRAME: usize = 1 << 19;
/// The most parties a run may have.
pub const MAX_PARTIES: u32 = 64;
/// The longest run id, in bytes.
pub const MAX_RUN_ID: usize = 128;
/// The largest submit hello, in bytes.
pub const MAX_SUBMIT_LEN: usize = 4096;

/// The client's first message to the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submit {
    /// [`WIRE_VERSION`].
    pub version: u32,
    /// The protocol's name.
    pub protocol: String,
    /// The run id the clients chose.
    pub run: String,
    /// This client's party index, 1-based.
    pub party: u32,
    /// The number of clients n.
    pub parties: u32,
    /// Bytes per label.
    pub label_len: u32,
    /// How many labels this client sends.
    pub count: u64,
    /// The protocol's parameters (every client of a run must give the same).
    pub params: Vec<(String, String)>,
    /// Every client's set size as the key agreement announced it, party 1 first (every client
    /// of a run must give the same). The server accepts from party i exactly the label count
    /// the protocol derives from `sizes[i − 1]`, so no client submits more guesses than it
    /// announced to the others.
    pub sizes: Vec<u64>,
    /// The certificate fingerprint of every client, party 1 first, as party 1 bound each
    /// party index to the certificate of its link (every client of a run must give the same),
    /// or empty if the clients' links are not authenticated. The server accepts party i only
    /// over a connection authenticated by `identities[i − 1]`.
    pub identities: Vec<[u8; 32]>,
}

/// What the server tells a client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// The run accepted this client; it may send its labels.
    Accepted,
    /// The run is waiting for its other parties (`joined` have sent their labels).
    Waiting {
        /// Parties whose labels are in.
        joined: u32,
    },
    /// The result follows: `matches` of this client's labels are in every set.
    Result {
        /// Set bits in the bit vector that follows.
        matches: u64,
    },
    /// The run cannot go on, and why.
    Refused(String),
    /// `kmrs_fair`: the server's commitment to this client's bit vector; the client's
    /// opening ([`MSG_FAIR_OPEN`]) follows. `kmrs_size`: the server's commitment to its key
    /// share; P2's share follows.
    Committed([u8; 32]),
    /// `kmrs_size`: party 1's labels under K2 follow ([`MSG_RELABELLED`]).
    Relabelled,
    /// `kmrs_size`: party 2 accepted the result; π3 follows ([`MSG_PERMUTATION`]).
    Opened,
}

/// A `kmrs_fair` client's opening (Fig. 3 step 7): the second-layer key and the number of
/// first-layer values that follow in [`MSG_FAIR_VALUES`].
#[derive(Clone, Serialize, Deserialize)]
pub struct FairOpen {
    /// K2.
    pub key2: [u8; 16],
    /// |S_i|.
    pub items: u64,
}

impl Drop for FairOpen {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.key2);
    }
}

/// Party 2's verdict on the `kmrs_size` result (Fig. 4 step 11).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// The result passed the check: the server may send π3 to P1.
    Approve,
    /// The result failed the check, and why: the server must not send π3.
    Abort(String),
}

/// The key P1 sends to the other clients, with every client's set size.
#[derive(Clone, Serialize, Deserialize)]
pub struct KeyMsg {
    /// The PRF key K.
    pub key: [u8; 16],
    /// The set sizes of parties 1..=n.
    pub sizes: Vec<u64>,
    /// The certificate fingerprints of parties 1..=n (empty on unauthenticated links).
    pub identities: Vec<[u8; 32]>,
}

impl Drop for KeyMsg {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.key);
    }
}

/// A client's party index and its share of the coin toss (P_i → P1).
#[derive(Clone, Serialize, Deserialize)]
pub struct ShareMsg {
    /// The sender's party index.
    pub party: u32,
    /// Its share r_i.
    pub share: [u8; 32],
}

impl Drop for ShareMsg {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.share);
    }
}

/// P1's opening of the coin toss: every share, its own first, every set size and every
/// client's certificate fingerprint.
#[derive(Clone, Serialize, Deserialize)]
pub struct OpenMsg {
    /// The shares r_1, …, r_n.
    pub shares: Vec<[u8; 32]>,
    /// The set sizes of parties 1..=n.
    pub sizes: Vec<u64>,
    /// The certificate fingerprints of parties 1..=n (empty on unauthenticated links).
    pub identities: Vec<[u8; 32]>,
}

impl Drop for OpenMsg {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.shares);
    }
}

/// Checks a submit hello's own fields (not against a run): version, run id, party, label
/// length and `max_count`; returns the refusal reason.
pub fn check_submit(s: &Submit, max_count: u64) -> std::result::Result<(), String> {
    if s.version != WIRE_VERSION {
        return Err(format!(
            "wire version {} is not this server's {WIRE_VERSION}",
            s.version
        ));
    }
    if s.run.is_empty() || s.run.len() > MAX_RUN_ID || !s.run.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(format!(
            "the run id must be 1 to {MAX_RUN_ID} printable ASCII characters without spaces"
        ));
    }
    if !(2..=MAX_PARTIES).contains(&s.parties) {
        return Err(format!(
            "parties = {}: a run has 2 to {MAX_PARTIES} clients",
            s.parties
        ));
    }
    if !(1..=s.parties).contains(&s.party) {
        return Err(format!("party {} of {}", s.party, s.parties));
    }
    if !(1..=16).contains(&s.label_len) {
        return Err(format!("label length {} bytes", s.label_len));
    }
    if s.count > max_count {
        return Err(format!(
            "{} labels, more than this server's limit of {max_count}",
            s.count
        ));
    }
    if s.sizes.len() != s.parties as usize {
        return Err(format!(
            "{} set sizes for {} parties",
            s.sizes.len(),
            s.parties
        ));
    }
    if !s.identities.is_empty() {
        if s.identities.len() != s.parties as usize {
            return Err(format!(
                "{} client certificates for {} parties",
                s.identities.len(),
                s.parties
            ));
        }
        if let Some(i) =
            (1..s.identities.len()).find(|&i| s.identities[..i].contains(&s.identities[i]))
        {
            return Err(format!(
                "party {} has the certificate of another party: one certificate, one party",
                i + 1
            ));
        }
    }
    Ok(())
}

/// Sends a status message.
pub fn send_status(tx: &mut (impl FrameSender + ?Sized), s: &Status) -> Result<()> {
    send_msg(tx, MSG_STATUS, s)
}

/// Receives a status message (at most 1 KiB: a refusal's reason is short).
pub fn recv_status(rx: &mut (impl FrameReceiver + ?Sized)) -> Result<Status> {
    recv_msg(rx, MSG_STATUS, 1024)
}

/// The error a client reports for the server's refusal.
pub fn refused(reason: &str) -> Error {
    Error::PeerRefused(format!(
        "the server: {}",
        blindjoin_core::error::peer_text(reason)
    ))
}
