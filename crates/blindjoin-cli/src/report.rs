//! The JSON run report and the human summary of a party's run.

use blindjoin_core::channel::metered::Traffic;
use serde::Serialize;

/// What one party did, for `--json` and the summary.
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// Protocol id.
    pub protocol: &'static str,
    /// Its security model and assumptions.
    pub security: String,
    /// "receiver" or "sender".
    pub role: String,
    /// κ in bits.
    pub kappa: u32,
    /// λ in bits.
    pub lambda: u32,
    /// The session id, hex.
    pub session_id: String,
    /// Input statistics, when the party read a file.
    pub input: Option<InputStats>,
    /// Distinct keys this party contributed.
    pub own_set_size: u64,
    /// Distinct keys the peer announced.
    pub peer_set_size: u64,
    /// What the receiver learned, when it learned the intersection.
    pub intersection: Option<IntersectionStats>,
    /// What the receiver learned instead, when the run computed the intersection's cardinality
    /// or the sum of the sender's values over it (`--result`).
    pub aggregate: Option<blindjoin_psi::Aggregate>,
    /// Traffic of this party, in bytes (framing included).
    pub traffic: Traffic,
    /// Seconds per phase, in order.
    pub phases: Vec<Phase>,
    /// Wall-clock seconds of the whole run, input and output included.
    pub wall_seconds: f64,
    /// CPU seconds (user + system) of the process, when the process ran only this party.
    pub cpu_seconds: Option<f64>,
    /// Peak resident memory of the process in bytes, when the process ran only this party.
    pub peak_rss_bytes: Option<u64>,
    /// Worker threads.
    pub threads: usize,
    /// How the run was split into buckets, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<BucketStats>,
}

/// A bucketed run's split ([`crate::bucketed`]).
#[derive(Debug, Serialize)]
pub struct BucketStats {
    /// Buckets, B.
    pub buckets: u32,
    /// Connections that ran buckets at once, K.
    pub parallel: usize,
    /// Random dummy items this party added so that every bucket holds the public maximum.
    pub dummies: u64,
    /// Buckets kept from the interrupted run this one resumed (`--resume`), not run again.
    pub kept: u64,
    /// Buckets the sender served again on this resume though it had served them before: the
    /// receiver had no record of them and the sender allowed it (`--allow-rerun`).
    pub rerun: Vec<u32>,
}

/// Input statistics.
#[derive(Debug, Serialize)]
pub struct InputStats {
    /// The file read.
    pub path: String,
    /// Data rows.
    pub rows: u64,
    /// Distinct non-empty keys after normalisation.
    pub distinct_keys: u64,
    /// Rows whose key is empty after normalisation (they never match).
    pub empty_keys: u64,
    /// Rows whose key repeats an earlier row's.
    pub duplicate_rows: u64,
}

/// What the receiver learned.
#[derive(Debug, Serialize)]
pub struct IntersectionStats {
    /// Distinct keys in the intersection.
    pub distinct_keys: u64,
    /// Rows of the receiver's input carrying those keys.
    pub rows: u64,
    /// Where the rows were written.
    pub output: Option<String>,
}

/// One timed phase.
#[derive(Debug, Serialize)]
pub struct Phase {
    /// Its name.
    pub name: String,
    /// Seconds.
    pub seconds: f64,
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes in human units (powers of 1000, as network people count).
pub fn human_bytes(b: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// CPU seconds (user + system) this process has used so far.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the zero-initialised struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to a rusage struct.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Peak resident memory of this process in bytes.
pub fn peak_rss_bytes() -> u64 {
    // SAFETY: as in `process_cpu_seconds`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to a rusage struct.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return 0;
    }
    // Linux reports ru_maxrss in kilobytes.
    (usage.ru_maxrss as u64).saturating_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(hex(&[0, 255, 16]), "00ff10");
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1_500), "1.5 kB");
        assert_eq!(human_bytes(4_200_000), "4.2 MB");
    }
}
