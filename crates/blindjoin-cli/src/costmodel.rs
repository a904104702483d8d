//! The cost model: a run's bytes, rounds and time on a network, and what it costs in a cloud
//! (CM20 §5.2), for `blindjoin params` and the reports of `bench`.
//!
//! **Bytes** come from the protocol's traffic formula (`Protocol::traffic`, exact for every
//! message and checked against metered runs in the protocol tests, at the run's σ where the
//! protocol takes one), split by direction with the flow's senders; the handshake's few hundred
//! bytes are left out. **Rounds** are the descriptor's flights, or the flights a loopback run
//! of the same setting sent at the socket where more (GMW's AND layers, one flight each, which
//! the descriptor counts as one). **Time** on a network of rate r per direction and round-trip
//! time RTT:
//!
//! time = max(compute, transfer) + flights · RTT / 2
//!
//! where compute is the wall time of the same run on loopback: the protocols stream their large
//! messages in chunks, so computing and sending overlap, and each flight waits one one-way
//! delay. The transfer is (b→ + b←) / r for the protocols whose parties take turns (the
//! receiver's OT or OPRF message, then the sender's answer), and max(b→, b←) / r for those in
//! [`CONCURRENT`], whose parties send their bulk at the same time. Compute is taken from a
//! loopback run at the same sizes, or from `bench`'s loopback results at the nearest measured
//! size, scaled by n·log2 n ([`Calibration`]).
//!
//! **Monetary cost** (CM20 §5.2.2, in the exact form that reproduces CM20 Tab. 3, see the
//! note's C4): with the machine price x per second and the transfer prices of [`Prices`],
//! - B2B (both parties in a cloud): T·2x + b→·y + b←·y, y = (inter-region + public IP) per byte;
//! - Internet (one party in a cloud, the one that sends less, as CM20's P1):
//!   T·x + b_min·(egress + public IP) per byte.

use crate::error::{CliError, CliResult};
use crate::netem::Profile;
use blindjoin_psi::Protocol;
use blindjoin_psi::protocol::{Party, Sizes};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Cloud prices in USD (a `--prices` JSON file; the defaults are CM20's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// Where the prices come from, and when.
    pub source: String,
    /// One machine per party, per hour.
    pub machine_usd_per_hour: f64,
    /// Transfer from the cloud to the Internet, per GiB.
    pub egress_usd_per_gb: f64,
    /// Transfer between two regions of the cloud, per GiB.
    pub inter_region_usd_per_gb: f64,
    /// The public IP address's charge, per GiB.
    pub public_ip_usd_per_gb: f64,
}

impl Default for Prices {
    /// CM20 §5.2.1's AWS prices (2020, US regions): m5.large at 0.096 per hour, 0.09 per GB to
    /// the Internet, 0.02 per GB between US regions, 0.01 per GB for a public IP.
    fn default() -> Prices {
        Prices {
            source: "CM20 §5.2.1: AWS EC2 in US regions as quoted in the paper (2020): m5.large \
                     0.096 USD/h; 0.09 USD/GB to the Internet; 0.02 USD/GB between US regions; \
                     0.01 USD/GB for a public IP"
                .to_owned(),
            machine_usd_per_hour: 0.096,
            egress_usd_per_gb: 0.09,
            inter_region_usd_per_gb: 0.02,
            public_ip_usd_per_gb: 0.01,
        }
    }
}

impl Prices {
    /// Reads a prices file (JSON with the fields of [`Prices`]).
    pub fn load(path: &Path) -> CliResult<Prices> {
        let text = std::fs::read(path).map_err(|source| CliError::File {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_slice(&text)
            .map_err(|e| CliError::Usage(format!("{}: not a prices file: {e}", path.display())))
    }
}

/// What a run costs (USD per run).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cost {
    /// Both parties in the cloud, in two regions.
    pub b2b_usd: f64,
    /// One party in the cloud (the one that sends less), the other outside.
    pub internet_usd: f64,
}

/// The cost of a run of `seconds` that sent `to_sender` and `to_receiver` bytes.
pub fn cost(prices: &Prices, seconds: f64, to_sender: u64, to_receiver: u64) -> Cost {
    const GIB: f64 = (1u64 << 30) as f64;
    let x = prices.machine_usd_per_hour / 3600.0;
    let y = (prices.inter_region_usd_per_gb + prices.public_ip_usd_per_gb) / GIB;
    let out = (prices.egress_usd_per_gb + prices.public_ip_usd_per_gb) / GIB;
    Cost {
        b2b_usd: seconds * 2.0 * x + (to_sender + to_receiver) as f64 * y,
        internet_usd: seconds * x + to_sender.min(to_receiver) as f64 * out,
    }
}

/// A predicted run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// Bytes the receiver sends, framing included.
    pub bytes_receiver_to_sender: u64,
    /// Bytes the sender sends.
    pub bytes_sender_to_receiver: u64,
    /// Message flights on the critical path, the handshake included.
    pub flights: u64,
    /// The bulk's bytes at the network's rate: both directions' one after the other, or the
    /// larger direction's for a [`CONCURRENT`] protocol (0 without a network).
    pub transfer_seconds: f64,
    /// flights · RTT / 2.
    pub latency_seconds: f64,
    /// The loopback wall time the time builds on, when known.
    pub compute_seconds: Option<f64>,
    /// The predicted wall time, when the compute time is known.
    pub seconds: Option<f64>,
}

/// The protocols whose parties send their bulk at the same time, so that the two directions of
/// a link carry it at once:
/// - `ecdh`, `ecdh_nist`, `dh_ffc`: each party sends its own blinded set first, the receiver's
///   while the sender's goes the other way; only the sender's re-blinded answer waits;
/// - `circuit_gmw`, `circuit_gmw_scalar`: both parties are OT sender and receiver of the
///   triples at once, and both open every AND layer at once.
pub const CONCURRENT: &[&str] = &[
    "ecdh",
    "ecdh_nist",
    "dh_ffc",
    "circuit_gmw",
    "circuit_gmw_scalar",
];

/// Predicts a run of `p` at `sizes` over `network` (`None`: loopback as it is) from the
/// loopback wall time `compute` and the most flights one party of a loopback run sent,
/// `flights` (see the module doc).
pub fn predict(
    p: &Protocol,
    sizes: &Sizes,
    network: Option<&Profile>,
    compute: Option<f64>,
    flights: Option<u64>,
) -> CliResult<Prediction> {
    let traffic = (p.traffic)(sizes)?;
    let (mut to_sender, mut to_receiver) = (0u64, 0u64);
    for (name, bytes) in traffic {
        let from = p.flow.iter().find(|m| m.name == name).map(|m| m.from);
        match from {
            Some(Party::Sender) => to_receiver += bytes,
            // The handshake's and unnamed messages count for the receiver: both parties send
            // them, and they are small.
            _ => to_sender += bytes,
        }
    }
    let flights = flights.map_or(u64::from(p.flights), |f| f.max(u64::from(p.flights)));
    let bulk = if CONCURRENT.contains(&p.name) {
        to_sender.max(to_receiver)
    } else {
        to_sender + to_receiver
    };
    let (transfer, latency) = match network {
        Some(n) => (
            bulk as f64 / n.rate_bytes(),
            flights as f64 * n.one_way().as_secs_f64(),
        ),
        None => (0.0, 0.0),
    };
    Ok(Prediction {
        bytes_receiver_to_sender: to_sender,
        bytes_sender_to_receiver: to_receiver,
        flights,
        transfer_seconds: transfer,
        latency_seconds: latency,
        compute_seconds: compute,
        seconds: compute.map(|c| c.max(transfer) + latency),
    })
}

/// Loopback wall times of one protocol at one thread count, from `bench`'s result files.
#[derive(Clone, Debug, Default)]
pub struct Calibration {
    /// (n_recv, n_send, wall seconds), loopback rows only.
    points: Vec<(u64, u64, f64)>,
}

/// The fields of a `bench` result row the calibration reads.
#[derive(Deserialize)]
struct BenchRow {
    n_recv: u64,
    n_send: u64,
    wall_seconds: f64,
    #[serde(default)]
    network: Option<serde_json::Value>,
    #[serde(default)]
    transport: Option<String>,
}

impl Calibration {
    /// Reads `<dir>/<protocol>-<threads>t.json` (written by `blindjoin bench`), if present.
    pub fn load(dir: &Path, protocol: &str, threads: usize) -> CliResult<Calibration> {
        let path = dir.join(format!("{protocol}-{threads}t.json"));
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Calibration::default());
            }
            Err(source) => return Err(CliError::File { path, source }),
        };
        let rows: Vec<BenchRow> = serde_json::from_slice(&text)
            .map_err(|e| CliError::Usage(format!("{}: not a bench result: {e}", path.display())))?;
        let mut c = Calibration::default();
        for r in rows {
            if r.network.is_none() && r.transport.as_deref() != Some("tls") {
                c.add(r.n_recv, r.n_send, r.wall_seconds);
            }
        }
        Ok(c)
    }

    /// Adds a loopback measurement.
    pub fn add(&mut self, n_recv: u64, n_send: u64, seconds: f64) {
        self.points.push((n_recv, n_send, seconds));
    }

    /// The loopback wall time at these sizes: the measurement nearest in n1 + n2, scaled by
    /// n·log2 n; `None` without measurements.
    pub fn seconds(&self, n_recv: u64, n_send: u64) -> Option<f64> {
        let n = (n_recv + n_send).max(2) as f64;
        let work = |n: f64| n * n.log2().max(1.0);
        self.points
            .iter()
            .min_by(|a, b| {
                let d = |p: &(u64, u64, f64)| ((p.0 + p.1).max(2) as f64 / n).ln().abs();
                d(a).total_cmp(&d(b))
            })
            .map(|&(r, s, t)| t * work(n) / work((r + s).max(2) as f64))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::netem::parse_profile;
    use blindjoin_psi::protocols;

    /// CM20 Tab. 3's Ohio-Virginia cells (USD per 1000 runs) from CM20 Tab. 2's per-party MB
    /// (2^20 bytes) at n = 2^20 and Tab. 3's runtimes.
    #[test]
    fn reproduces_cm20_table_3_cells() {
        // Both m5.large in US regions at 0.096 USD/h; 0.01 USD/GB from Virginia to Ohio and
        // 0.01 for the public IP (CM20 §5.2.1); 0.09 USD/GB to the Internet.
        let prices = Prices {
            inter_region_usd_per_gb: 0.01,
            ..Prices::default()
        };
        let mib = |m: f64| (m * (1u64 << 20) as f64) as u64;
        // (protocol, runtime s, P1 MB, P2 MB, B2B, Internet)
        for (name, t, p1, p2, b2b, internet) in [
            ("Ours", 8.17, 10.0, 77.6, 2.15, 1.20),
            ("KKRT", 5.15, 60.0, 76.8, 2.95, 6.00),
        ] {
            let c = cost(&prices, t, mib(p1), mib(p2));
            assert!((c.b2b_usd * 1000.0 - b2b).abs() <= 0.01, "{name}: {c:?}");
            assert!(
                (c.internet_usd * 1000.0 - internet).abs() <= 0.01,
                "{name}: {c:?}"
            );
        }
    }

    #[test]
    fn prediction_adds_transfer_and_latency_to_compute() {
        let p = protocols::ALL.iter().find(|p| p.name == "kkrt16").unwrap();
        let sizes = Sizes::new(1 << 16, 1 << 16);
        let net = parse_profile("10mbit/100ms").unwrap();
        let loopback = predict(p, &sizes, None, Some(1.0), None).unwrap();
        let shaped = predict(p, &sizes, Some(&net), Some(1.0), None).unwrap();
        let total: u64 = (p.traffic)(&sizes).unwrap().iter().map(|m| m.1).sum();
        assert_eq!(
            shaped.bytes_receiver_to_sender + shaped.bytes_sender_to_receiver,
            total
        );
        assert_eq!(loopback.seconds, Some(1.0));
        assert!((shaped.transfer_seconds - total as f64 * 8.0 / 10e6).abs() < 1e-9);
        assert!((shaped.latency_seconds - f64::from(p.flights) * 0.05).abs() < 1e-9);
        assert_eq!(
            shaped.seconds,
            Some(shaped.transfer_seconds.max(1.0) + shaped.latency_seconds)
        );
        // More flights measured at the socket than the descriptor's count (GMW's AND layers)
        // take their one-way delays; fewer do not lower it.
        let layered = predict(p, &sizes, Some(&net), Some(1.0), Some(1000)).unwrap();
        assert!((layered.latency_seconds - 1000.0 * 0.05).abs() < 1e-9);
        let fewer = predict(p, &sizes, Some(&net), Some(1.0), Some(1)).unwrap();
        assert_eq!(fewer.latency_seconds, shaped.latency_seconds);
        // A protocol whose parties send at once carries its bulk in the larger direction's
        // time.
        let e = protocols::ALL.iter().find(|p| p.name == "ecdh").unwrap();
        let both = predict(e, &sizes, Some(&net), Some(1.0), None).unwrap();
        let larger = both
            .bytes_receiver_to_sender
            .max(both.bytes_sender_to_receiver);
        assert!((both.transfer_seconds - larger as f64 * 8.0 / 10e6).abs() < 1e-9);
        for name in CONCURRENT {
            assert!(protocols::ALL.iter().any(|p| p.name == *name), "{name}");
        }
    }

    /// A run's σ reaches the traffic formula: psz14 at PSZ14's σ = 32 has 4 OT blocks per bin
    /// instead of the derived σ's 8, about half the OT columns.
    #[test]
    fn the_runs_sigma_sets_the_bytes() {
        let p = protocols::ALL.iter().find(|p| p.name == "psz14").unwrap();
        let derived = Sizes::new(1 << 16, 1 << 16);
        let short = Sizes {
            sigma: Some(32),
            ..derived
        };
        let a = predict(p, &derived, None, None, None).unwrap();
        let b = predict(p, &short, None, None, None).unwrap();
        let ratio = a.bytes_receiver_to_sender as f64 / b.bytes_receiver_to_sender as f64;
        assert!((1.9..2.1).contains(&ratio), "{ratio}");
        assert_eq!(a.bytes_sender_to_receiver, b.bytes_sender_to_receiver);
    }

    #[test]
    fn calibration_scales_the_nearest_size_by_n_log_n() {
        let mut c = Calibration::default();
        assert_eq!(c.seconds(10, 10), None);
        c.add(1 << 10, 1 << 10, 0.5);
        c.add(1 << 16, 1 << 16, 4.0);
        assert_eq!(c.seconds(1 << 16, 1 << 16), Some(4.0));
        let at_2_17 = c.seconds(1 << 17, 1 << 17).unwrap();
        assert!(
            (at_2_17 - 4.0 * 2.0 * 18.0 / 17.0).abs() < 1e-9,
            "{at_2_17}"
        );
        assert_eq!(c.seconds(1 << 11, 1 << 11), Some(0.5 * 2.0 * 12.0 / 11.0));
    }
}
