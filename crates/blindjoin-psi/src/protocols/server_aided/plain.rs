//! The plaintext server-aided intersection that KMRS14 Tables 3 and 4 compare against ("Plain
//! T."): every client sends its raw 16-byte elements, sorted, to the same server and store,
//! and gets the same bit vector back. No key, no PRF, no truncation: the server sees every
//! element. **Insecure**, for benchmarks only (`blindjoin bench-aided` measures it beside
//! `kmrs_semi` in the same run); it is no registry entry and no command offers it.
//!
//! The server tells its runs apart from `kmrs_semi` runs by the run parameter
//! `labels = plaintext`, which every client of the run must give.

use super::client::{AidedLinks, ClientOutput, marked_rows, run_params, submit};
use super::kmrs_semi;
use crate::run::{Phases, RunOptions};
use blindjoin_core::item::Item;
use blindjoin_core::{Error, Result};
use rayon::prelude::*;
use std::time::Instant;

/// Runs one client of the plaintext baseline: `items` (distinct, 16 bytes each) sorted and sent
/// as they are. `links.peers` is not used: there is no key agreement, so the caller gives every
/// client's set size (`sizes`, party 1 first), which the server holds each client to as in a
/// `kmrs_semi` run.
pub fn plaintext_baseline(
    links: &mut AidedLinks<'_>,
    items: &[Item],
    sizes: &[u64],
    opts: &RunOptions,
) -> Result<ClientOutput> {
    if items.len() > u32::MAX as usize {
        return Err(Error::InvalidParam {
            field: "items",
            reason: format!("{} items: at most 2^32 per client", items.len()),
        });
    }
    let mut phases = Phases::default();
    let t = Instant::now();
    let mut labels: Vec<(u128, u32)> = items
        .par_iter()
        .enumerate()
        .map(|(i, it)| (u128::from_be_bytes(it.0), i as u32))
        .collect();
    labels.par_sort_unstable_by_key(|&(l, _)| l);
    let t = phases.lap("sort", t);
    links.agreed = super::client::Agreed {
        sizes: sizes.to_vec(),
        identities: Vec::new(),
    };
    let mut params = run_params(&kmrs_semi::PROTOCOL, opts, links);
    params.push(("labels".into(), "plaintext".into()));
    let bits = submit(&kmrs_semi::PROTOCOL, links, opts, params, 16, &labels)?;
    let t = phases.lap("server", t);
    let indices = marked_rows(&labels, &bits);
    phases.lap("output", t);
    Ok(ClientOutput {
        indices,
        sizes: sizes.to_vec(),
        label_len: 16,
        phases,
    })
}
