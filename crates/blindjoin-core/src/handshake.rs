//! The session handshake every protocol run starts with.
//!
//! Both parties send one `Hello` at once (one flight each) and then compare:
//!
//! ```text
//! frame = "BLINDJN\x01" ‖ wire_version (u16 LE) ‖ postcard(Hello)
//! Hello = { protocol, role, set_size, kappa, lambda, params: [(name, value)], nonce: 32 bytes }
//! ```
//!
//! The run continues only if the wire versions, protocol ids, κ, λ and every protocol
//! parameter agree, and the roles are complementary; otherwise both sides end with
//! [`Error::ParamMismatch`] naming the field and both values (the comparison is symmetric, so
//! both report the same field). The peer's set size must lie within the caller's bound (and equal
//! the expected size if one was given): every later length is checked against it.
//!
//! Those size checks are local, so each side then sends a one-frame verdict and waits for the
//! peer's:
//!
//! ```text
//! verdict = postcard({ refusal: Option<String>, confirm: 32 bytes })
//! confirm = SHA-256(len-prefixed "blindjoin/handshake-confirm/v2" ‖ session id)
//! ```
//!
//! A party whose own checks pass but whose peer refused ends with [`Error::PeerRefused`], so no
//! refusal leaves the other side running; a party that refuses sends its verdict and returns at
//! once. If neither refuses, each compares the peer's `confirm` with its own: the two differ
//! when a hello was changed in transit (the two sides then hold different transcripts) or when
//! the parties sit on two different TLS connections joined by a relay, and both sides end with
//! [`Error::CheckFailed`] before any protocol message.
//!
//! The session id is `SHA-256(len-prefixed "blindjoin/session/v2" ‖ receiver's frame ‖ sender's
//! frame ‖ channel binding)`, where the channel binding is the TLS exporter value
//! ([`Channel::binding`]; empty on plain TCP). It binds both nonces, everything negotiated and
//! the connection, and is mixed into the domain of every hash a protocol computes afterwards
//! ([`Session::hasher`]), so values from one session are worthless in another.

use crate::channel::{Channel, FrameReceiver, FrameSender, recv_msg, send_msg};
use crate::error::peer_text;
use crate::item::{domain_hasher, update_prefixed};
use crate::{Block, Error, Result};
use rand::CryptoRng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;

/// Magic bytes at the start of the hello frame.
pub const MAGIC: &[u8; 8] = b"BLINDJN\x01";

/// Version of the wire format; a change of any message's encoding bumps it.
pub const WIRE_VERSION: u16 = 2;

const MAX_HELLO_LEN: usize = 8 << 10;

/// Name of the hello message (one frame each way).
pub const MSG_HELLO: &str = "hello message";

/// Name of the verdict message (one frame each way).
pub const MSG_VERDICT: &str = "handshake verdict";

/// Which side of the protocol a party plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Learns the intersection (P2 in the papers).
    Receiver,
    /// Learns only the receiver's set size.
    Sender,
}

impl Role {
    /// The other role.
    pub fn peer(self) -> Role {
        match self {
            Role::Receiver => Role::Sender,
            Role::Sender => Role::Receiver,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Receiver => "receiver",
            Role::Sender => "sender",
        })
    }
}

/// What this party brings to the handshake.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Protocol id (e.g. `"ecdh"`).
    pub protocol: String,
    /// Our role.
    pub role: Role,
    /// Number of (distinct) items we hold.
    pub set_size: u64,
    /// Computational security parameter κ in bits.
    pub kappa: u32,
    /// Statistical security parameter λ in bits.
    pub lambda: u32,
    /// The protocol's own parameters, by name; both sides must hold the same.
    pub params: Vec<(String, String)>,
    /// The largest set the peer may announce; bounds every allocation driven by the peer.
    pub max_peer_set_size: u64,
    /// If given, the peer must announce exactly this set size.
    pub expected_peer_set_size: Option<u64>,
    /// A sender's bound on what the receiver can test against its set, which for some
    /// protocols is more than it announces; the refusal says so. `None`: only
    /// [`SessionConfig::max_peer_set_size`] bounds the announced size.
    pub peer_queries: Option<PeerQueries>,
}

/// What a receiver announcing n items can test ([`SessionConfig::peer_queries`]).
#[derive(Clone)]
pub struct PeerQueries {
    /// The protocol's name, for the refusal.
    pub protocol: String,
    /// The most guesses the receiver may be able to test.
    pub bound: u64,
    /// n ↦ the guesses such a receiver can test.
    pub of: std::sync::Arc<dyn Fn(u64) -> u64 + Send + Sync>,
}

impl std::fmt::Debug for PeerQueries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PeerQueries({})", self.protocol)
    }
}

impl SessionConfig {
    /// A configuration with κ = 128, λ = 40, no protocol parameters and a peer-size bound of 2³².
    pub fn new(protocol: &str, role: Role, set_size: u64) -> Self {
        SessionConfig {
            protocol: protocol.to_owned(),
            role,
            set_size,
            kappa: 128,
            lambda: 40,
            params: Vec::new(),
            max_peer_set_size: 1 << 32,
            expected_peer_set_size: None,
            peer_queries: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Verdict {
    refusal: Option<String>,
    confirm: [u8; 32],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Hello {
    protocol: String,
    role: Role,
    set_size: u64,
    kappa: u32,
    lambda: u32,
    params: Vec<(String, String)>,
    nonce: [u8; 32],
}

/// The outcome of a successful handshake.
#[derive(Clone, Debug)]
pub struct Session {
    /// The session id (see the module doc).
    pub id: [u8; 32],
    /// Our role.
    pub role: Role,
    /// The receiver's set size.
    pub receiver_size: u64,
    /// The sender's set size.
    pub sender_size: u64,
    /// κ in bits.
    pub kappa: u32,
    /// λ in bits.
    pub lambda: u32,
}

impl Session {
    /// The peer's set size.
    pub fn peer_size(&self) -> u64 {
        match self.role {
            Role::Receiver => self.sender_size,
            Role::Sender => self.receiver_size,
        }
    }

    /// A SHA-256 state bound to this session and to `label`; feed it length-prefixed data
    /// ([`update_prefixed`]).
    pub fn hasher(&self, label: &str) -> Sha256 {
        session_hasher(&self.id, label)
    }

    /// A 128-bit value bound to this session and `label` (a seed of hash functions, a
    /// fixed-key AES key): [`session_block`] of the session id.
    pub fn block(&self, label: &str) -> Block {
        session_block(&self.id, label)
    }
}

/// The SHA-256 state of [`Session::hasher`] for a session id `sid`.
pub fn session_hasher(sid: &[u8; 32], label: &str) -> Sha256 {
    let mut h = domain_hasher(label.as_bytes());
    update_prefixed(&mut h, sid);
    h
}

/// The first 128 bits of `SHA-256(domain(label) ‖ len-prefixed sid)`: a public value that both
/// parties derive from the session id alone, fixed only once both hellos (and their fresh
/// nonces) are.
pub fn session_block(sid: &[u8; 32], label: &str) -> Block {
    let d = session_hasher(sid, label).finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    Block::from_bytes(b)
}

/// Compares parameters that a peer announced after the handshake with our own: `fields` holds
/// `(name, ours, peer)`; the first difference is [`Error::ParamMismatch`] naming the field.
pub fn expect_same(fields: &[(&str, u64, u64)]) -> Result<()> {
    match fields.iter().find(|(_, ours, peer)| ours != peer) {
        Some((field, ours, peer)) => Err(mismatch(field, ours, peer)),
        None => Ok(()),
    }
}

fn encode(hello: &Hello) -> Result<Vec<u8>> {
    let mut frame = MAGIC.to_vec();
    frame.extend_from_slice(&WIRE_VERSION.to_le_bytes());
    let body = postcard::to_stdvec(hello).map_err(|e| Error::InvalidParam {
        field: "params",
        reason: format!("cannot encode the hello message: {e}"),
    })?;
    frame.extend_from_slice(&body);
    Ok(frame)
}

fn decode(frame: &[u8]) -> Result<Hello> {
    const WHAT: &str = MSG_HELLO;
    let head = MAGIC.len();
    if frame.len() < head + 2 || &frame[..head] != MAGIC {
        return Err(Error::malformed(
            WHAT,
            "the peer is not a blindjoin endpoint",
        ));
    }
    let version = u16::from_le_bytes([frame[head], frame[head + 1]]);
    if version != WIRE_VERSION {
        return Err(mismatch("wire_version", WIRE_VERSION, version));
    }
    let (hello, rest) = postcard::take_from_bytes::<Hello>(&frame[head + 2..])
        .map_err(|e| Error::malformed(WHAT, e.to_string()))?;
    if !rest.is_empty() {
        return Err(Error::malformed(WHAT, "trailing bytes"));
    }
    Ok(hello)
}

fn mismatch(field: &str, ours: impl fmt::Display, peer: impl fmt::Display) -> Error {
    Error::ParamMismatch {
        field: field.to_owned(),
        ours: ours.to_string(),
        peer: peer.to_string(),
    }
}

fn compare(cfg: &SessionConfig, ours: &Hello, peer: &Hello) -> Result<()> {
    if ours.protocol != peer.protocol {
        return Err(mismatch(
            "protocol",
            &ours.protocol,
            peer_text(&peer.protocol),
        ));
    }
    if ours.role == peer.role {
        return Err(mismatch(
            "role",
            ours.role,
            format!(
                "{} (one side must be the receiver, the other the sender)",
                peer.role
            ),
        ));
    }
    if ours.kappa != peer.kappa {
        return Err(mismatch("kappa", ours.kappa, peer.kappa));
    }
    if ours.lambda != peer.lambda {
        return Err(mismatch("lambda", ours.lambda, peer.lambda));
    }
    let a: BTreeMap<&str, &str> = ours
        .params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let b: BTreeMap<&str, &str> = peer
        .params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    if a.len() != ours.params.len() || b.len() != peer.params.len() {
        return Err(Error::malformed(MSG_HELLO, "a parameter is named twice"));
    }
    for name in a.keys().chain(b.keys()) {
        let (x, y) = (a.get(name), b.get(name));
        if x != y {
            // The name and the peer's value are the peer's text.
            let show = |v: Option<&&str>| v.map_or("<absent>".to_owned(), |s| peer_text(s));
            return Err(mismatch(&peer_text(name), show(x), show(y)));
        }
    }
    let peer_role = peer.role.to_string();
    if let Some(q) = &cfg.peer_queries
        && cfg.role == Role::Sender
    {
        let tested = (q.of)(peer.set_size);
        if tested > q.bound {
            return Err(mismatch(
                &format!("{peer_role} set size"),
                format!(
                    "a receiver that can test at most {} guessed keys (this one could test \
                     {tested} in a {} run)",
                    q.bound, q.protocol
                ),
                peer.set_size,
            ));
        }
    }
    if peer.set_size > cfg.max_peer_set_size {
        return Err(mismatch(
            &format!("{peer_role} set size"),
            format!("at most {}", cfg.max_peer_set_size),
            peer.set_size,
        ));
    }
    if let Some(expected) = cfg.expected_peer_set_size
        && peer.set_size != expected
    {
        return Err(mismatch(
            &format!("{peer_role} set size"),
            expected,
            peer.set_size,
        ));
    }
    Ok(())
}

/// Runs the handshake on `ch` (see the module doc).
pub fn handshake<C: Channel + ?Sized>(
    ch: &mut C,
    cfg: &SessionConfig,
    rng: &mut impl CryptoRng,
) -> Result<Session> {
    let mut nonce = [0u8; 32];
    rng.fill_bytes(&mut nonce);
    let ours = Hello {
        protocol: cfg.protocol.clone(),
        role: cfg.role,
        set_size: cfg.set_size,
        kappa: cfg.kappa,
        lambda: cfg.lambda,
        params: cfg.params.clone(),
        nonce,
    };
    let our_frame = encode(&ours)?;
    if our_frame.len() > MAX_HELLO_LEN {
        return Err(Error::InvalidParam {
            field: "params",
            reason: "the hello message is too long".into(),
        });
    }
    FrameSender::send(ch, MSG_HELLO, &our_frame)?;
    let peer_frame = FrameReceiver::recv(ch, MSG_HELLO, MAX_HELLO_LEN)?;
    let peer = match decode(&peer_frame).and_then(|p| compare(cfg, &ours, &p).map(|()| p)) {
        Ok(p) => p,
        Err(e) => {
            // Best effort: the peer may already be gone, and our own error is what we report.
            let refusal = Verdict {
                refusal: Some(e.to_string()),
                confirm: [0; 32],
            };
            let _ = send_msg(ch, MSG_VERDICT, &refusal);
            return Err(e);
        }
    };

    let (recv_frame, send_frame, recv_hello, send_hello) = match cfg.role {
        Role::Receiver => (&our_frame, &peer_frame, &ours, &peer),
        Role::Sender => (&peer_frame, &our_frame, &peer, &ours),
    };
    let mut h = domain_hasher(b"blindjoin/session/v2");
    update_prefixed(&mut h, recv_frame);
    update_prefixed(&mut h, send_frame);
    update_prefixed(&mut h, &ch.binding().unwrap_or_default());
    let mut id = [0u8; 32];
    id.copy_from_slice(&h.finalize());
    let mut c = domain_hasher(b"blindjoin/handshake-confirm/v2");
    update_prefixed(&mut c, &id);
    let confirm: [u8; 32] = c.finalize().into();

    // A refusing peer may have hung up before our verdict arrives: its own verdict is then
    // still ours to read, and it is the better explanation than the failed send.
    let sent = send_msg(
        ch,
        MSG_VERDICT,
        &Verdict {
            refusal: None,
            confirm,
        },
    );
    let theirs = recv_msg::<Verdict>(ch, MSG_VERDICT, MAX_HELLO_LEN)?;
    if let Some(reason) = theirs.refusal {
        return Err(Error::PeerRefused(peer_text(&reason)));
    }
    sent?;
    if theirs.confirm != confirm {
        return Err(Error::CheckFailed(
            "the two sides saw different handshakes: the messages were changed in transit, or \
             the connection is relayed between two TLS sessions"
                .into(),
        ));
    }
    Ok(Session {
        id,
        role: cfg.role,
        receiver_size: recv_hello.set_size,
        sender_size: send_hello.set_size,
        kappa: cfg.kappa,
        lambda: cfg.lambda,
    })
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn expect_same_names_the_first_differing_field() {
        assert!(expect_same(&[("a", 1, 1), ("b", 2, 2)]).is_ok());
        assert!(expect_same(&[]).is_ok());
        match expect_same(&[("a", 1, 1), ("b", 2, 3), ("c", 4, 5)]) {
            Err(Error::ParamMismatch { field, ours, peer }) => {
                assert_eq!(
                    (field.as_str(), ours.as_str(), peer.as_str()),
                    ("b", "2", "3")
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn session_blocks_are_the_hashers_first_16_bytes() {
        let sid = [5u8; 32];
        let d = session_hasher(&sid, "x/y").finalize();
        assert_eq!(session_block(&sid, "x/y").to_bytes()[..], d[..16]);
        assert_ne!(session_block(&sid, "x/y"), session_block(&sid, "x/z"));
        assert_ne!(session_block(&sid, "x/y"), session_block(&[6u8; 32], "x/y"));
    }
}
