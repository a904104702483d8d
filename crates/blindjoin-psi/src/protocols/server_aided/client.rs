//! The client's side: the key over the direct client links (sent by P1 for `kmrs_semi`,
//! coin-tossed for `kmrs_mal`), the labels to the server, the bit vector back.

use super::labels::{decode_label, encode_labels, label_len, sorted_labels};
use super::wire::{
    BITS_PER_FRAME, KeyMsg, LABELS_PER_FRAME, MSG_BITS, MSG_COMMIT, MSG_KEY, MSG_LABELS, MSG_OPEN,
    MSG_PARTY, MSG_RECEIVED, MSG_SHARE, MSG_SUBMIT, OpenMsg, ShareMsg, Status, Submit,
    WIRE_VERSION, recv_status, refused,
};
use crate::protocol::Protocol;
use crate::run::{Phases, RunOptions, check_security};
use blindjoin_core::channel::{BulkReader, Channel, recv_msg, send_msg};
use blindjoin_core::handshake::{Role, Session, handshake};
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use rayon::slice::ParallelSliceMut;
use sha2::{Digest, Sha256};
use std::time::Instant;
use zeroize::Zeroizing;

/// A client's connections to the other clients.
pub enum Peers<'a> {
    /// P1: one link to each other client (any order).
    Leader(Vec<&'a mut dyn Channel>),
    /// P_i, i ≥ 2: the link to P1.
    Member(&'a mut dyn Channel),
}

impl<'a> Peers<'a> {
    /// Party `party`'s links to the other clients: P1 leads on all of them, any other party
    /// has its one link to P1.
    pub fn of<C: Channel>(party: u32, links: &'a mut [C]) -> Peers<'a> {
        let mut all: Vec<&'a mut dyn Channel> =
            links.iter_mut().map(|l| l as &mut dyn Channel).collect();
        match all.pop() {
            Some(one) if party != 1 && all.is_empty() => Peers::Member(one),
            last => {
                all.extend(last);
                Peers::Leader(all)
            }
        }
    }
}

/// The rows of the labels (sorted, each with its row) whose bit is set, ascending.
pub(crate) fn marked_rows(labels: &[(u128, u32)], bits: &[u8]) -> Vec<usize> {
    let mut rows: Vec<usize> = labels
        .iter()
        .enumerate()
        .filter(|(k, _)| bits[k / 8] >> (k % 8) & 1 == 1)
        .map(|(_, &(_, i))| i as usize)
        .collect();
    rows.par_sort_unstable();
    rows
}

/// Everything a client runs on: its run, its party index and its connections.
pub struct AidedLinks<'a> {
    /// The run id every client of the run gives (and the server keys the run by).
    pub run: String,
    /// This client's party index, 1 ..= `parties`; party 1 leads the key agreement.
    pub party: u32,
    /// The number of clients n.
    pub parties: u32,
    /// The direct links to the other clients.
    pub peers: Peers<'a>,
    /// The connection to the server.
    pub server: &'a mut dyn Channel,
    /// The fingerprint of this client's own certificate, if its links are TLS: a member checks
    /// that party 1 bound its slot to it.
    pub identity: Option<[u8; 32]>,
    /// Party 1: the party index each client certificate may play (empty: any authenticated
    /// link may claim any free slot, still one slot per certificate).
    pub slots: Vec<([u8; 32], u32)>,
    /// What the key agreement fixed for the submit hello: every set size and every client's
    /// certificate.
    pub(crate) agreed: Agreed,
}

/// The set sizes and client certificates a run's clients agreed on (see [`Submit`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Agreed {
    pub(crate) sizes: Vec<u64>,
    pub(crate) identities: Vec<[u8; 32]>,
}

impl<'a> AidedLinks<'a> {
    /// The links of party `party` of `parties` in run `run`, without certificates (set
    /// [`AidedLinks::identity`] and, at party 1, [`AidedLinks::slots`] on TLS links).
    pub fn new(
        run: String,
        (party, parties): (u32, u32),
        peers: Peers<'a>,
        server: &'a mut dyn Channel,
    ) -> Self {
        AidedLinks {
            run,
            party,
            parties,
            peers,
            server,
            identity: None,
            slots: Vec::new(),
            agreed: Agreed::default(),
        }
    }
}

/// What a client learns.
#[derive(Clone, Debug)]
pub struct ClientOutput {
    /// Sorted indices of this client's items that are in every client's set.
    pub indices: Vec<usize>,
    /// The set sizes of parties 1..=n.
    pub sizes: Vec<u64>,
    /// Bytes per label.
    pub label_len: usize,
    /// Time per phase.
    pub phases: Phases,
}

/// The parameters every client of a run must share: the protocol's own, n and the run id.
pub(crate) fn run_params(
    p: &Protocol,
    opts: &RunOptions,
    links: &AidedLinks<'_>,
) -> Vec<(String, String)> {
    let mut params = (p.params)(opts);
    params.push(("parties".into(), links.parties.to_string()));
    params.push(("run".into(), links.run.clone()));
    params
}

/// Refuses a party index outside 1..=n (n ≥ 2) and links that do not fit it: P1 leads, with
/// a link to each of the n − 1 others; P_i, i ≥ 2, has its link to P1.
fn check_links(links: &AidedLinks<'_>) -> Result<()> {
    let n = links.parties as usize;
    if links.party == 0 || links.party > links.parties || links.parties < 2 {
        return Err(Error::InvalidParam {
            field: "party",
            reason: format!("party {} of {}", links.party, links.parties),
        });
    }
    match &links.peers {
        Peers::Leader(chs) if links.party != 1 || chs.len() != n - 1 => Err(Error::InvalidParam {
            field: "peers",
            reason: format!(
                "party 1 of {n} needs a link to each of the {} others",
                n - 1
            ),
        }),
        Peers::Member(_) if links.party == 1 => Err(Error::InvalidParam {
            field: "peers",
            reason: "party 1 leads: it listens for the other clients".into(),
        }),
        _ => Ok(()),
    }
}

/// The handshake on a direct client link, P1 as its sender, with the run's parameters.
fn link_handshake(
    p: &Protocol,
    ch: &mut dyn Channel,
    role: Role,
    own: usize,
    opts: &RunOptions,
    params: &[(String, String)],
    rng: &mut dyn CryptoRng,
) -> Result<Session> {
    let cfg = opts.session_config(p.name, role, own, params.to_vec());
    let mut rng = rng;
    handshake(ch, &cfg, &mut rng)
}

/// Records party `i`'s announcement at P1: `i` must be one of 2..=n not yet heard from.
fn claim_slot<T>(slots: &mut [Option<T>], i: u32, value: T, message: &'static str) -> Result<()> {
    let n = slots.len();
    match slots.get_mut((i as usize).wrapping_sub(1)) {
        Some(slot @ None) if i >= 2 => {
            *slot = Some(value);
            Ok(())
        }
        _ => Err(Error::malformed(
            message,
            format!("party {i}: not one of 2..={n} still missing"),
        )),
    }
}

fn fp(id: &[u8; 32]) -> String {
    format!(
        "sha256:{}",
        id.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// P1's record of which certificate plays which party: one certificate, one party, and the
/// party the caller bound to the certificate if it did ([`AidedLinks::slots`]).
struct Bindings {
    /// Per party (1-based index − 1), the certificate of its link (P1's own first).
    ids: Vec<Option<[u8; 32]>>,
    /// Whether every link so far was authenticated.
    all: bool,
}

impl Bindings {
    fn new(links: &AidedLinks<'_>) -> Self {
        let mut ids = vec![None; links.parties as usize];
        ids[0] = links.identity;
        Bindings {
            ids,
            all: links.identity.is_some(),
        }
    }

    /// Party `i` claimed its slot over `ch`: its certificate must be free and, if the caller
    /// bound it, bound to `i`.
    fn claim(&mut self, links_slots: &[([u8; 32], u32)], ch: &dyn Channel, i: u32) -> Result<()> {
        let Some(id) = ch.peer_identity() else {
            self.all = false;
            return Ok(());
        };
        if let Some(&(_, bound)) = links_slots.iter().find(|(f, _)| *f == id)
            && bound != i
        {
            return Err(Error::CheckFailed(format!(
                "the client with certificate {} claimed party {i}'s slot, but it is party {bound}",
                fp(&id)
            )));
        }
        if !links_slots.is_empty() && !links_slots.iter().any(|(f, _)| *f == id) {
            return Err(Error::CheckFailed(format!(
                "the client with certificate {} has no party index (give it one with \
                 --peer-fingerprint I=sha256:…)",
                fp(&id)
            )));
        }
        if let Some(other) = self.ids.iter().position(|x| *x == Some(id)) {
            return Err(Error::CheckFailed(format!(
                "the client with certificate {} claimed party {i}'s slot and already plays \
                 party {}: one certificate, one party",
                fp(&id),
                other + 1
            )));
        }
        if let Some(slot) = self.ids.get_mut(i as usize - 1) {
            *slot = Some(id);
        }
        Ok(())
    }

    /// Every party's certificate if every link was authenticated, else none.
    fn finish(self) -> Vec<[u8; 32]> {
        if self.all {
            self.ids.into_iter().flatten().collect()
        } else {
            Vec::new()
        }
    }
}

/// A member's check of the certificates P1 announces: none if our links are not
/// authenticated, else ours at our index and P1's at index 1, all n of them.
fn check_identities(
    ids: &[[u8; 32]],
    (party, n): (u32, usize),
    own: Option<[u8; 32]>,
    leader: Option<[u8; 32]>,
    message: &'static str,
) -> Result<()> {
    match (own, leader) {
        (Some(own), Some(leader))
            if ids.len() != n || ids[party as usize - 1] != own || ids[0] != leader =>
        {
            return Err(Error::malformed(
                message,
                "the client certificates do not match the parties' links",
            ));
        }
        (Some(_), Some(_)) => {}
        _ if ids.is_empty() => {}
        _ if ids.len() != n => {
            return Err(Error::malformed(
                message,
                format!("{} client certificates for {n} parties", ids.len()),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// P_i's check of the set sizes P1 sends: n of them, its own and P1's as their handshake
/// announced.
fn check_sizes(
    sizes: &[u64],
    (party, n): (u32, usize),
    own: usize,
    session: &Session,
    message: &'static str,
) -> Result<()> {
    if sizes.len() != n
        || sizes[party as usize - 1] != own as u64
        || sizes[0] != session.sender_size
    {
        return Err(Error::malformed(
            message,
            "the set sizes do not match the parties' announcements",
        ));
    }
    Ok(())
}

/// A member's bound on the other members' set sizes, which only party 1 has checked in its
/// handshakes: each may test as many guesses as it announced.
fn check_peer_sizes(sizes: &[u64], party: u32, max: u64) -> Result<()> {
    match sizes
        .iter()
        .enumerate()
        .find(|&(i, &s)| i + 1 != party as usize && s > max)
    {
        Some((i, &s)) => Err(Error::InvalidParam {
            field: "peer set size",
            reason: format!(
                "party {} announced {s} distinct keys, more than the {max} we accept (a client \
                 may test as many guessed keys as it announces; raise --max-peer-size only for \
                 a partner whose set size you know)",
                i + 1
            ),
        }),
        None => Ok(()),
    }
}

/// Step 1 of Fig. 1: P1 samples K and sends it, with every set size, to every other client
/// over their direct links (each opened by the handshake, with the run's parameters). Returns
/// K and the n set sizes.
pub(crate) fn agree_key(
    p: &Protocol,
    links: &mut AidedLinks<'_>,
    own: usize,
    opts: &RunOptions,
    rng: &mut dyn CryptoRng,
) -> Result<(Zeroizing<[u8; 16]>, Vec<u64>)> {
    check_links(links)?;
    let params = run_params(p, opts, links);
    let n = links.parties as usize;
    let party = links.party;
    let mut bindings = Bindings::new(links);
    let (own_id, slots) = (links.identity, links.slots.clone());
    let (key, agreed) = match &mut links.peers {
        Peers::Leader(chs) => {
            let mut sizes = vec![None; n];
            sizes[0] = Some(own as u64);
            for ch in chs.iter_mut() {
                let session = link_handshake(p, &mut **ch, Role::Sender, own, opts, &params, rng)?;
                let i: u32 = recv_msg(&mut **ch, MSG_PARTY, 8)?;
                claim_slot(&mut sizes, i, session.receiver_size, MSG_PARTY)?;
                bindings.claim(&slots, &**ch, i)?;
            }
            let sizes: Vec<u64> = sizes.into_iter().map(|s| s.unwrap_or(0)).collect();
            let identities = bindings.finish();
            let mut key = Zeroizing::new([0u8; 16]);
            rng.fill_bytes(&mut *key);
            let msg = KeyMsg {
                key: *key,
                sizes: sizes.clone(),
                identities: identities.clone(),
            };
            for ch in chs.iter_mut() {
                send_msg(&mut **ch, MSG_KEY, &msg)?;
            }
            (key, Agreed { sizes, identities })
        }
        Peers::Member(ch) => {
            let session = link_handshake(p, &mut **ch, Role::Receiver, own, opts, &params, rng)?;
            send_msg(&mut **ch, MSG_PARTY, &party)?;
            let msg: KeyMsg = recv_msg(&mut **ch, MSG_KEY, 64 + 43 * n)?;
            check_sizes(&msg.sizes, (party, n), own, &session, MSG_KEY)?;
            check_peer_sizes(&msg.sizes, party, opts.max_peer_set_size)?;
            check_identities(
                &msg.identities,
                (party, n),
                own_id,
                ch.peer_identity(),
                MSG_KEY,
            )?;
            let agreed = Agreed {
                sizes: msg.sizes.clone(),
                identities: msg.identities.clone(),
            };
            (Zeroizing::new(msg.key), agreed)
        }
    };
    let sizes = agreed.sizes.clone();
    links.agreed = agreed;
    Ok((key, sizes))
}

/// SHA-256 of `parts`, each preceded by its length (8 bytes, little-endian).
pub(crate) fn hash(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

/// P1's commitment to its share r_1: SHA-256("blindjoin/kmrs/commit" ‖ r_1), hiding because r_1
/// is 256 uniform bits, binding because SHA-256 is collision resistant.
pub(crate) fn commit(share: &[u8; 32]) -> [u8; 32] {
    hash(&[b"blindjoin/kmrs/commit", share])
}

/// The coin toss's output from every share: SHA-256("blindjoin/kmrs/key" ‖ run ‖ r_1 ‖ … ‖
/// r_n), its first 16 bytes.
fn toss_key(run: &str, shares: &[[u8; 32]]) -> Zeroizing<[u8; 16]> {
    let mut parts: Vec<&[u8]> = vec![b"blindjoin/kmrs/key", run.as_bytes()];
    parts.extend(shares.iter().map(|s| &s[..]));
    let mut full = Zeroizing::new(hash(&parts));
    let mut key = Zeroizing::new([0u8; 16]);
    key.copy_from_slice(&full[..16]);
    zeroize::Zeroize::zeroize(&mut *full);
    key
}

/// A key confirmation the clients announce to the server: the first 8 bytes of
/// SHA-256("blindjoin/kmrs/key-check" ‖ K), in hex. The server refuses a run whose clients
/// announce different values, so clients that ended up with different keys (a client that
/// deviated in the coin toss) are told so instead of failing the result check. It says nothing
/// about K or the labels (SHA-256 as a random oracle).
pub(crate) fn key_check(key: &[u8; 16]) -> String {
    hash(&[b"blindjoin/kmrs/key-check", key])[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// F_CT of KMRS14 Fig. 2 step 3 for n clients over the direct links (P1 with each other
/// client): P1 commits to a random 32-byte share r_1 (hash commitment) and sends the
/// commitment to every P_i; each P_i answers with its party index and a random share r_i; P1
/// opens r_1 and sends every share and every set size to every P_i, which checks the opening
/// against the commitment and its own share among them. K = SHA-256("blindjoin/kmrs/key" ‖ run
/// ‖ r_1 ‖ … ‖ r_n), first 16 bytes. P1 fixes r_1 before it sees any other share and every P_i
/// sends r_i after the commitment, so K is uniform as long as one client is honest, in the
/// random-oracle model. Returns K and the n set sizes.
pub(crate) fn coin_toss(
    p: &Protocol,
    links: &mut AidedLinks<'_>,
    own: usize,
    opts: &RunOptions,
    rng: &mut dyn CryptoRng,
) -> Result<(Zeroizing<[u8; 16]>, Vec<u64>)> {
    check_links(links)?;
    let params = run_params(p, opts, links);
    let n = links.parties as usize;
    let party = links.party;
    let mut mine = Zeroizing::new([0u8; 32]);
    rng.fill_bytes(&mut *mine);
    let mut bindings = Bindings::new(links);
    let (own_id, slots) = (links.identity, links.slots.clone());
    let (key, agreed) = match &mut links.peers {
        Peers::Leader(chs) => {
            let commitment = commit(&mine);
            let mut sizes = vec![None; n];
            sizes[0] = Some(own as u64);
            let mut shares: Vec<Option<Zeroizing<[u8; 32]>>> = vec![None; n];
            shares[0] = Some(mine.clone());
            for ch in chs.iter_mut() {
                let session = link_handshake(p, &mut **ch, Role::Sender, own, opts, &params, rng)?;
                send_msg(&mut **ch, MSG_COMMIT, &commitment)?;
                let msg: ShareMsg = recv_msg(&mut **ch, MSG_SHARE, 64)?;
                claim_slot(&mut sizes, msg.party, session.receiver_size, MSG_SHARE)?;
                bindings.claim(&slots, &**ch, msg.party)?;
                shares[msg.party as usize - 1] = Some(Zeroizing::new(msg.share));
            }
            let open = OpenMsg {
                shares: shares
                    .iter()
                    .map(|s| s.as_deref().copied().unwrap_or_default())
                    .collect(),
                sizes: sizes.into_iter().map(|s| s.unwrap_or(0)).collect(),
                identities: bindings.finish(),
            };
            for ch in chs.iter_mut() {
                send_msg(&mut **ch, MSG_OPEN, &open)?;
            }
            let agreed = Agreed {
                sizes: open.sizes.clone(),
                identities: open.identities.clone(),
            };
            (toss_key(&links.run, &open.shares), agreed)
        }
        Peers::Member(ch) => {
            let session = link_handshake(p, &mut **ch, Role::Receiver, own, opts, &params, rng)?;
            let commitment: [u8; 32] = recv_msg(&mut **ch, MSG_COMMIT, 64)?;
            let share = ShareMsg {
                party,
                share: *mine,
            };
            send_msg(&mut **ch, MSG_SHARE, &share)?;
            drop(share);
            let open: OpenMsg = recv_msg(&mut **ch, MSG_OPEN, 64 + 76 * n)?;
            if open.shares.len() != n {
                return Err(Error::malformed(
                    MSG_OPEN,
                    format!("{} shares for {n} parties", open.shares.len()),
                ));
            }
            check_sizes(&open.sizes, (party, n), own, &session, MSG_OPEN)?;
            check_peer_sizes(&open.sizes, party, opts.max_peer_set_size)?;
            if commit(&open.shares[0]) != commitment {
                return Err(Error::CheckFailed(
                    "party 1's opened key share does not match its commitment".into(),
                ));
            }
            if open.shares[party as usize - 1] != *mine {
                return Err(Error::CheckFailed(
                    "party 1 did not pass on our key share unchanged".into(),
                ));
            }
            check_identities(
                &open.identities,
                (party, n),
                own_id,
                ch.peer_identity(),
                MSG_OPEN,
            )?;
            let agreed = Agreed {
                sizes: open.sizes.clone(),
                identities: open.identities.clone(),
            };
            (toss_key(&links.run, &open.shares), agreed)
        }
    };
    let sizes = agreed.sizes.clone();
    links.agreed = agreed;
    Ok((key, sizes))
}

/// Steps 2-4 of Fig. 1 on the client: labels F_K(x) sorted, to the server; the bit vector
/// back; the indices of the items whose label every party has.
pub(crate) fn run_client(
    p: &Protocol,
    links: &mut AidedLinks<'_>,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut dyn CryptoRng,
) -> Result<ClientOutput> {
    check_security(p, opts)?;
    let mut phases = Phases::default();
    let t = Instant::now();
    let (key, sizes) = agree_key(p, links, items.len(), opts, rng)?;
    let t = phases.lap("key agreement", t);
    let len = label_len(&sizes, opts.lambda)?;
    let labels = sorted_labels(Block::from_bytes(*key), items, len)?;
    // The key check binds the submission to the key: a client outside the key agreement
    // cannot submit for this run's parameters (the server keys runs by them).
    let mut params = run_params(p, opts, links);
    params.push(("key check".into(), key_check(&key)));
    drop(key);
    let t = phases.lap("labels", t);
    let bits = submit(p, links, opts, params, len, &labels)?;
    let t = phases.lap("server", t);
    let indices = marked_rows(&labels, &bits);
    phases.lap("output", t);
    Ok(ClientOutput {
        indices,
        sizes,
        label_len: len,
        phases,
    })
}

/// Sends the sorted labels (each with its row, unused here) to the server, announcing
/// `params` (which every client of the run must announce alike), and returns the bit vector
/// over them, bit k (byte k/8, bit k%8) for label k.
pub(crate) fn submit(
    p: &Protocol,
    links: &mut AidedLinks<'_>,
    opts: &RunOptions,
    params: Vec<(String, String)>,
    len: usize,
    labels: &[(u128, u32)],
) -> Result<Vec<u8>> {
    send_labels(p, links, opts, params, len, labels)?;
    let ch = &mut *links.server;
    let bits = match next_status(ch, "the labels")? {
        Status::Result { matches } => receive_bits(ch, MSG_BITS, labels.len(), Some(matches))?,
        other => return Err(unexpected(&other, "the labels")),
    };
    ch.send(MSG_RECEIVED, &[])?;
    Ok(bits)
}

/// Sends the submit hello, announcing `labels.len()` labels of `len` bytes and `params`, and
/// once the server accepts, the labels in ascending order.
pub(crate) fn send_labels(
    p: &Protocol,
    links: &mut AidedLinks<'_>,
    opts: &RunOptions,
    params: Vec<(String, String)>,
    len: usize,
    labels: &[(u128, u32)],
) -> Result<()> {
    send_hello(p, links, params, len, labels.len() as u64)?;
    send_sorted(
        &mut *links.server,
        MSG_LABELS,
        labels.iter().map(|&(l, _)| l),
        len,
    )?;
    opts.report("server labels", 0, 0);
    Ok(())
}

/// Sends the submit hello, announcing `count` labels of `len` bytes and `params`, and waits
/// for the server to accept; the labels follow.
pub(crate) fn send_hello(
    p: &Protocol,
    links: &mut AidedLinks<'_>,
    params: Vec<(String, String)>,
    len: usize,
    count: u64,
) -> Result<()> {
    let hello = Submit {
        version: WIRE_VERSION,
        protocol: p.name.to_owned(),
        run: links.run.clone(),
        party: links.party,
        parties: links.parties,
        label_len: len as u32,
        count,
        params,
        sizes: links.agreed.sizes.clone(),
        identities: links.agreed.identities.clone(),
    };
    let ch = &mut *links.server;
    send_msg(ch, MSG_SUBMIT, &hello)?;
    match recv_status(ch)? {
        Status::Accepted => Ok(()),
        Status::Refused(why) => Err(refused(&why)),
        other => Err(unexpected(&other, "the labels")),
    }
}

/// Sends labels of `len` bytes in frames of [`LABELS_PER_FRAME`].
pub(crate) fn send_sorted(
    ch: &mut dyn Channel,
    message: &'static str,
    labels: impl Iterator<Item = u128>,
    len: usize,
) -> Result<()> {
    let mut frame = Vec::with_capacity(LABELS_PER_FRAME * len);
    let mut labels = labels.peekable();
    while labels.peek().is_some() {
        frame.clear();
        encode_labels(labels.by_ref().take(LABELS_PER_FRAME), len, &mut frame);
        ch.send(message, &frame)?;
    }
    Ok(())
}

/// Receives `count` labels of `len` bytes in frames of at most [`LABELS_PER_FRAME`], which
/// must be strictly ascending.
pub(crate) fn receive_sorted(
    ch: &mut dyn Channel,
    message: &'static str,
    len: usize,
    count: u64,
) -> Result<Vec<u128>> {
    // Grown as the labels arrive: `count` is the peer's claim.
    let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0).min(1 << 16));
    let mut reader = BulkReader::new(message, len, count);
    while let Some(frame) = reader.next_frame(ch)? {
        if frame.len() > LABELS_PER_FRAME * len {
            return Err(Error::malformed(
                message,
                "a frame of more than 2^16 labels",
            ));
        }
        for l in frame.chunks_exact(len) {
            let v = decode_label(l);
            if out.last().is_some_and(|&p| p >= v) {
                return Err(Error::malformed(
                    message,
                    "the labels are not in strictly ascending order",
                ));
            }
            out.push(v);
        }
    }
    Ok(out)
}

/// The next status from the server after its keepalives; a refusal is an error. `after`
/// names what the client waits for, for the error of an unexpected status.
pub(crate) fn next_status(ch: &mut dyn Channel, after: &str) -> Result<Status> {
    loop {
        match recv_status(ch)? {
            Status::Waiting { .. } => continue,
            Status::Refused(why) => return Err(refused(&why)),
            Status::Accepted => return Err(unexpected(&Status::Accepted, after)),
            other => return Ok(other),
        }
    }
}

/// The error for a status the client did not expect.
pub(crate) fn unexpected(status: &Status, after: &str) -> Error {
    Error::malformed(super::wire::MSG_STATUS, format!("{status:?} after {after}"))
}

/// Receives a bit vector over `n` labels in frames of at most [`BITS_PER_FRAME`] bytes: no bit
/// set past the last label, and `matches` bits set if given.
pub(crate) fn receive_bits(
    ch: &mut dyn Channel,
    message: &'static str,
    n: usize,
    matches: Option<u64>,
) -> Result<Vec<u8>> {
    let want = n.div_ceil(8);
    let mut bits = Vec::with_capacity(want);
    let mut reader = BulkReader::new(message, 1, want as u64);
    while let Some(f) = reader.next_frame(ch)? {
        if f.len() > BITS_PER_FRAME {
            return Err(Error::malformed(message, "a frame longer than 512 KiB"));
        }
        bits.extend_from_slice(&f);
    }
    let pad = n % 8;
    if pad != 0 && bits.last().is_some_and(|b| b >> pad != 0) {
        return Err(Error::malformed(message, "bits set past the last label"));
    }
    let ones: u64 = bits.iter().map(|b| u64::from(b.count_ones())).sum();
    if let Some(matches) = matches
        && ones != matches
    {
        return Err(Error::malformed(
            message,
            format!("{ones} bits set, {matches} announced"),
        ));
    }
    Ok(bits)
}

/// Sends a bit vector in frames of [`BITS_PER_FRAME`] bytes.
pub(crate) fn send_bits(ch: &mut dyn Channel, message: &'static str, bits: &[u8]) -> Result<()> {
    for frame in bits.chunks(BITS_PER_FRAME) {
        ch.send(message, frame)?;
    }
    Ok(())
}
