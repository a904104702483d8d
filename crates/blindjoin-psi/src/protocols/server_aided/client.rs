//! The client's side: the key from P1 over the direct client links, the labels to the server,
//! the bit vector back to rows.

use super::labels::{encode_labels, label_len, sorted_labels};
use super::wire::{
    BITS_PER_FRAME, KeyMsg, LABELS_PER_FRAME, MSG_BITS, MSG_KEY, MSG_LABELS, MSG_PARTY,
    MSG_RECEIVED, MSG_SUBMIT, Status, Submit, WIRE_VERSION, recv_status, refused,
};
use crate::protocol::Protocol;
use crate::run::{Phases, RunOptions, check_security};
use blindjoin_core::channel::{BulkReader, Channel, recv_msg, send_msg};
use blindjoin_core::handshake::{Role, handshake};
use blindjoin_core::item::Item;
use blindjoin_core::{Block, Error, Result};
use rand::CryptoRng;
use std::time::Instant;
use zeroize::Zeroizing;

/// A client's connections to the other clients.
pub enum Peers<'a> {
    /// P1: one link to each other client (any order).
    Leader(Vec<&'a mut dyn Channel>),
    /// P_i, i ≥ 2: the link to P1.
    Member(&'a mut dyn Channel),
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
    let params = run_params(p, opts, links);
    let n = links.parties as usize;
    if links.party == 0 || links.party > links.parties || links.parties < 2 {
        return Err(Error::InvalidParam {
            field: "party",
            reason: format!("party {} of {}", links.party, links.parties),
        });
    }
    let mut rng = rng;
    match &mut links.peers {
        Peers::Leader(chs) => {
            if links.party != 1 || chs.len() != n - 1 {
                return Err(Error::InvalidParam {
                    field: "peers",
                    reason: format!(
                        "party 1 of {n} needs a link to each of the {} others",
                        n - 1
                    ),
                });
            }
            let mut sizes = vec![None; n];
            sizes[0] = Some(own as u64);
            let mut order = Vec::with_capacity(chs.len());
            for ch in chs.iter_mut() {
                let cfg = opts.session_config(p.name, Role::Sender, own, params.clone());
                let session = handshake(&mut **ch, &cfg, &mut rng)?;
                let i: u32 = recv_msg(&mut **ch, MSG_PARTY, 8)?;
                if !(2..=links.parties).contains(&i) || sizes[i as usize - 1].is_some() {
                    return Err(Error::malformed(
                        MSG_PARTY,
                        format!("party {i}: not one of 2..={n} still missing"),
                    ));
                }
                sizes[i as usize - 1] = Some(session.receiver_size);
                order.push(i);
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
            if links.party == 1 {
                return Err(Error::InvalidParam {
                    field: "peers",
                    reason: "party 1 leads: it listens for the other clients".into(),
                });
            }
            let cfg = opts.session_config(p.name, Role::Receiver, own, params);
            let session = handshake(&mut **ch, &cfg, &mut rng)?;
            send_msg(&mut **ch, MSG_PARTY, &links.party)?;
            let msg: KeyMsg = recv_msg(&mut **ch, MSG_KEY, 64 + 10 * n)?;
            if msg.sizes.len() != n
                || msg.sizes[links.party as usize - 1] != own as u64
                || msg.sizes[0] != session.sender_size
            {
                return Err(Error::malformed(
                    MSG_KEY,
                    "the set sizes do not match the parties' announcements",
                ));
            }
            Ok((Zeroizing::new(msg.key), msg.sizes.clone()))
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
    let bits = submit(p, links, opts, len, &labels)?;
    let t = phases.lap("server", t);
    let mut indices: Vec<usize> = labels
        .iter()
        .enumerate()
        .filter(|(k, _)| bits[k / 8] >> (k % 8) & 1 == 1)
        .map(|(_, &(_, i))| i as usize)
        .collect();
    indices.sort_unstable();
    phases.lap("output", t);
    Ok(ClientOutput {
        indices,
        sizes,
        label_len: len,
        phases,
    })
}

/// Sends the sorted labels to the server and returns the bit vector over them.
pub(crate) fn submit(
    p: &Protocol,
    links: &mut AidedLinks<'_>,
    opts: &RunOptions,
    len: usize,
    labels: &[(u128, u32)],
) -> Result<Vec<u8>> {
    let hello = Submit {
        version: WIRE_VERSION,
        protocol: p.name.to_owned(),
        run: links.run.clone(),
        party: links.party,
        parties: links.parties,
        label_len: len as u32,
        count: labels.len() as u64,
        params: run_params(p, opts, links),
    };
    let ch = &mut *links.server;
    send_msg(ch, MSG_SUBMIT, &hello)?;
    match recv_status(ch)? {
        Status::Accepted => {}
        Status::Refused(why) => return Err(refused(&why)),
        other => {
            return Err(Error::malformed(
                super::wire::MSG_STATUS,
                format!("{other:?} before the labels"),
            ));
        }
    }
    let mut frame = Vec::with_capacity(LABELS_PER_FRAME * len);
    for chunk in labels.chunks(LABELS_PER_FRAME) {
        frame.clear();
        encode_labels(chunk.iter().map(|&(l, _)| l), len, &mut frame);
        ch.send(MSG_LABELS, &frame)?;
        opts.report("server labels", 0, 0);
    }
    let matches = loop {
        match recv_status(ch)? {
            Status::Waiting { .. } => continue,
            Status::Result { matches } => break matches,
            Status::Refused(why) => return Err(refused(&why)),
            Status::Accepted => {
                return Err(Error::malformed(
                    super::wire::MSG_STATUS,
                    "a second acceptance",
                ));
            }
        }
    };
    let want = labels.len().div_ceil(8);
    let mut bits = Vec::with_capacity(want);
    let mut reader = BulkReader::new(MSG_BITS, 1, want as u64);
    while let Some(f) = reader.next_frame(ch)? {
        if f.len() > BITS_PER_FRAME {
            return Err(Error::malformed(MSG_BITS, "a frame longer than 512 KiB"));
        }
        bits.extend_from_slice(&f);
    }
    let pad = labels.len() % 8;
    if pad != 0 && bits.last().is_some_and(|b| b >> pad != 0) {
        return Err(Error::malformed(MSG_BITS, "bits set past the last label"));
    }
    let ones: u64 = bits.iter().map(|b| u64::from(b.count_ones())).sum();
    if ones != matches {
        return Err(Error::malformed(
            MSG_BITS,
            format!("{ones} bits set, {matches} announced"),
        ));
    }
    ch.send(MSG_RECEIVED, &[])?;
    Ok(bits)
}
