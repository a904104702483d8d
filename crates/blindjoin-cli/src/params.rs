//! `blindjoin params`: a protocol's predicted bytes, rounds, time and cloud cost at given set
//! sizes on a network, from the cost model ([`crate::costmodel`]).

use crate::cli::parse_count;
use crate::costmodel::{Calibration, Prices, cost, predict};
use crate::error::CliResult;
use crate::netem::{Profile, parse_profile};
use crate::report::human_bytes;
use blindjoin_psi::Protocol;
use blindjoin_psi::protocol::Sizes;
use clap::Args;
use std::path::PathBuf;

/// `blindjoin params` options.
#[derive(Debug, Args)]
pub struct ParamsArgs {
    /// The protocol.
    #[arg(long, short)]
    protocol: &'static Protocol,
    /// The receiver's set size (e.g. 2^20).
    #[arg(long, value_parser = parse_count)]
    n1: u64,
    /// The sender's set size [default: --n1].
    #[arg(long, value_parser = parse_count)]
    n2: Option<u64>,
    /// The network: a profile (see `bench --network`) or RATE/RTT such as 50mbit/80ms
    /// [default: loopback].
    #[arg(long, value_parser = parse_profile)]
    network: Option<Profile>,
    /// κ in bits.
    #[arg(long, default_value_t = 128)]
    kappa: u32,
    /// λ in bits.
    #[arg(long, default_value_t = 40)]
    lambda: u32,
    /// Where `blindjoin bench` wrote its loopback results (`<protocol>-<threads>t.json`), which
    /// give the compute time.
    #[arg(long, value_name = "DIR", default_value = "bench/out")]
    calibration: PathBuf,
    /// Cloud prices (JSON: source, machine_usd_per_hour, egress_usd_per_gb,
    /// inter_region_usd_per_gb, public_ip_usd_per_gb) [default: CM20 §5.2.1's AWS prices].
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// The item length σ of `psz14` and the circuit protocols (as `bench --sigma`)
    /// [default: derived from the sizes and λ].
    #[arg(long)]
    sigma: Option<u32>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `blindjoin params` with `threads` per party.
pub fn run(a: &ParamsArgs, threads: usize) -> CliResult<()> {
    crate::cli::check_two_party(a.protocol)?;
    let n2 = a.n2.unwrap_or(a.n1);
    let sizes = Sizes {
        n_recv: a.n1,
        n_send: n2,
        kappa: a.kappa,
        lambda: a.lambda,
        sigma: a.sigma,
    };
    let prices = match &a.prices {
        Some(p) => Prices::load(p)?,
        None => Prices::default(),
    };
    let cal = Calibration::load(&a.calibration, a.protocol.name, threads)?;
    let compute = cal.seconds(a.n1, n2);
    let p = predict(a.protocol, &sizes, a.network.as_ref(), compute, None)?;
    let c = p.seconds.map(|t| {
        cost(
            &prices,
            t,
            p.bytes_receiver_to_sender,
            p.bytes_sender_to_receiver,
        )
    });
    if a.json {
        let json = serde_json::json!({
            "protocol": a.protocol.name,
            "n1": a.n1,
            "n2": n2,
            "threads": threads,
            "network": a.network,
            "prediction": p,
            "cost_usd_per_run": c,
            "prices": prices,
        });
        println!("{json:#}");
        return Ok(());
    }
    let net = a
        .network
        .as_ref()
        .map_or("loopback".to_owned(), |n| n.describe());
    println!(
        "{} at {} x {} ({threads} thread(s) per party), {net}",
        a.protocol.name, a.n1, n2
    );
    let (rs, sr) = (p.bytes_receiver_to_sender, p.bytes_sender_to_receiver);
    println!(
        "  bytes:    receiver→sender {}, sender→receiver {}, total {} (the traffic formula)",
        human_bytes(rs),
        human_bytes(sr),
        human_bytes(rs + sr)
    );
    println!(
        "  rounds:   {} flights, {:.3} s of one-way delays",
        p.flights, p.latency_seconds
    );
    if a.network.is_some() {
        println!(
            "  transfer: {:.3} s (both directions at the link's rate)",
            p.transfer_seconds
        );
    }
    match (compute, p.seconds) {
        (Some(comp), Some(t)) => {
            println!(
                "  compute:  {comp:.3} s (loopback wall time from {}, scaled by n·log2 n)",
                a.calibration
                    .join(format!("{}-{threads}t.json", a.protocol.name))
                    .display()
            );
            println!("  time:     {t:.3} s = max(compute, transfer) + delays");
        }
        _ => println!(
            "  time:     unknown: no loopback measurement in {}; run `blindjoin --threads \
             {threads} bench --protocol {} --sizes ...` first (at least {:.3} s of transfer \
             and delays)",
            a.calibration.display(),
            a.protocol.name,
            p.transfer_seconds + p.latency_seconds
        ),
    }
    if let Some(c) = c {
        println!(
            "  cost:     {:.4} USD per 1000 runs with both parties in the cloud, {:.4} with one \
             (prices: {})",
            c.b2b_usd * 1000.0,
            c.internet_usd * 1000.0,
            prices.source
        );
    }
    Ok(())
}
