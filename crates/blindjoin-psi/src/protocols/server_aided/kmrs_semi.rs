//! `kmrs_semi`: KMRS14 §2.1, Fig. 1, server-aided PSI for n ≥ 2 clients with a semi-honest
//! server (see the [parent module](super) for the message flow and the deviations).

use super::client::{AidedLinks, ClientOutput, run_client};
use super::wire::{MSG_BITS, MSG_KEY, MSG_LABELS, MSG_PARTY};
use super::{KMRS14, SERVER_AIDED_ROLES};
use crate::protocol::{Entry, Message, Party, Protocol, Reference, Security, Sizes, Traffic};
use crate::run::RunOptions;
use blindjoin_core::Result;
use blindjoin_core::channel::framed_bytes;
use blindjoin_core::item::Item;
use rand::CryptoRng;

/// Protocol id.
pub const NAME: &str = "kmrs_semi";

/// The descriptor of `kmrs_semi`.
pub static PROTOCOL: Protocol = Protocol {
    name: NAME,
    summary: "Server-aided PSI (n clients): keyed-AES labels intersected by an untrusted server",
    references: &[Reference {
        part: "§2.1 Fig. 1 (SHPSI), §3, Tab. 1-4",
        ..KMRS14
    }],
    security: Security::SemiHonest,
    assumptions: "AES is a PRP; a semi-honest server that colludes with no client, or an \
                  honest server and any colluding clients (Thm. 1)",
    roles: SERVER_AIDED_ROLES,
    kappa: &[128],
    params: |_| Vec::new(),
    // hello ‖ hello, verdict ‖ verdict, party index, key (clients); submit, status, labels,
    // status and bits, receipt (server).
    flights: 9,
    flow: &[
        Message {
            name: MSG_PARTY,
            from: Party::Client,
        },
        Message {
            name: MSG_KEY,
            from: Party::Client,
        },
        Message {
            name: MSG_LABELS,
            from: Party::Client,
        },
        Message {
            name: MSG_BITS,
            from: Party::Server,
        },
    ],
    results: crate::protocol::ONLY_INTERSECTION,
    traffic,
    queries: crate::protocol::announced,
    entry: Entry::ServerAided { client },
};

/// The bulk bytes of a client with `n_recv` items in a run with one other client of `n_send`:
/// its labels to the server and its bit vector back (the control messages are a few dozen
/// bytes each and not listed).
fn traffic(s: &Sizes) -> Result<Traffic> {
    let len = super::labels::label_len(&[s.n_recv, s.n_send], s.lambda)?;
    Ok(vec![
        (
            MSG_LABELS,
            framed_bytes(s.n_recv, len, super::wire::LABELS_PER_FRAME),
        ),
        (
            MSG_BITS,
            framed_bytes(s.n_recv.div_ceil(8), 1, super::wire::BITS_PER_FRAME),
        ),
    ])
}

fn client(
    links: &mut AidedLinks<'_>,
    items: &[Item],
    opts: &RunOptions,
    rng: &mut dyn CryptoRng,
) -> Result<ClientOutput> {
    run_client(&PROTOCOL, links, items, opts, rng)
}
