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
    match &mut links.peers {
        Peers::Leader(chs) => {
            let mut sizes = vec![None; n];
            sizes[0] = Some(own as u64);
            for ch in chs.iter_mut() {
                let session = link_handshake(p, &mut **ch, Role::Sender, own, opts, &params, rng)?;
                let i: u32 = recv_msg(&mut **ch, MSG_PARTY, 8)?;
                claim_slot(&mut sizes, i, session.receiver_size, MSG_PARTY)?;
            }
            let sizes: Vec<u64> = sizes.into_iter().map(|s| s.unwrap_or(0)).collect();
            let mut key = Zeroizing::new([0u8; 16]);
            rng.fill_bytes(&mut *key);
            let msg = KeyMsg {
                key: *key,
                sizes: sizes.clone(),
            };
            for ch in chs.iter_mut() {
                send_msg(&mut **ch, MSG_KEY, &msg)?;
            }
            Ok((key, sizes))
        }
        Peers::Member(ch) => {
            let session = link_handshake(p, &mut **ch, Role::Receiver, own, opts, &params, rng)?;
            send_msg(&mut **ch, MSG_PARTY, &party)?;
            let msg: KeyMsg = recv_msg(&mut **ch, MSG_KEY, 64 + 10 * n)?;
            check_sizes(&msg.sizes, (party, n), own, &session, MSG_KEY)?;
            Ok((Zeroizing::new(msg.key), msg.sizes.clone()))
        }
    }
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
    match &mut links.peers {
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
                shares[msg.party as usize - 1] = Some(Zeroizing::new(msg.share));
            }
            let open = OpenMsg {
                shares: shares
                    .iter()
                    .map(|s| s.as_deref().copied().unwrap_or_default())
                    .collect(),
                sizes: sizes.into_iter().map(|s| s.unwrap_or(0)).collect(),
            };
            for ch in chs.iter_mut() {
                send_msg(&mut **ch, MSG_OPEN, &open)?;
            }
            Ok((toss_key(&links.run, &open.shares), open.sizes.clone()))
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
            let open: OpenMsg = recv_msg(&mut **ch, MSG_OPEN, 64 + 43 * n)?;
            if open.shares.len() != n {
                return Err(Error::malformed(
                    MSG_OPEN,
                    format!("{} shares for {n} parties", open.shares.len()),
                ));
            }
            check_sizes(&open.sizes, (party, n), own, &session, MSG_OPEN)?;
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
            Ok((toss_key(&links.run, &open.shares), open.sizes.clone()))
        }
    }
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
    drop(key);
    let t = phases.lap("labels", t);
    let params = run_params(p, opts, links);
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
    let mut out = Vec::with_capacity(usize::try_from(count).unwrap_or(0).min(1 << 28));
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
