//! The papers' evaluation tables as suites: each figure with the setting it was measured in.
//!
//! Copied from the notes in `shared/papers/notes/` (`spec-psz-dcw13.md` §6 and §10,
//! `spec-kmrs14-rr17-cm20.md` B3-B5 and C3), checked against the papers' texts. Each suite
//! names its note section and the paper's rows it leaves out, with the reason.

use super::Suite;
use super::{Aided, PaperRow, Store, Unit};

/// A row with n items on both sides (every table here gives one n for both parties).
#[allow(clippy::too_many_arguments)]
const fn row(
    protocol: &'static str,
    label: &'static str,
    log_n: u32,
    network: Option<&'static str>,
    threads: usize,
    kappa: u32,
    sigma: Option<u32>,
    seconds: Option<f64>,
    bytes: Option<f64>,
    unit: Unit,
) -> PaperRow {
    PaperRow {
        protocol,
        label,
        n_recv: 1 << log_n,
        n_send: 1 << log_n,
        network,
        threads,
        kappa,
        sigma,
        seconds,
        bytes,
        unit,
        aided: None,
    }
}

// PSZ14's row names (Tab. 5, 7 and 8 spell them alike).
const FFC: &str = "DH-based FFC [32]";
const ECC: &str = "DH-based ECC [32]";
const RSA: &str = "RSA-based [16]";
const YAO: &str = "Yao [8, 31]";
const GMW: &str = "GMW [1]";
const VMT: &str = "Vector-MT GMW §3.2";
const GBF: &str = "Garbled Bloom Filter [19]";
const RGBF: &str = "Random Garbled Bloom Filter §4.3";
const SI: &str = "Set Inclusion §5 + Hashing §6";

/// PSZ14 Tab. 5 (seconds) with Tab. 6 (MiB): one thread, Gigabit LAN, σ = 32.
const fn t5(
    protocol: &'static str,
    label: &'static str,
    kappa: u32,
    log_n: u32,
    seconds: Option<f64>,
    mib: f64,
) -> PaperRow {
    let lan = Some("lan");
    row(
        protocol,
        label,
        log_n,
        lan,
        1,
        kappa,
        Some(32),
        seconds,
        Some(mib),
        Unit::MiB,
    )
}

/// PSZ14 Tab. 7: one thread, n = 2^16, κ = 128, σ = 32 (the table gives no communication).
const fn t7(
    protocol: &'static str,
    label: &'static str,
    network: &'static str,
    seconds: f64,
) -> PaperRow {
    let net = Some(network);
    row(
        protocol,
        label,
        16,
        net,
        1,
        128,
        Some(32),
        Some(seconds),
        None,
        Unit::MiB,
    )
}

/// PSZ14 Tab. 8: four threads, Gigabit LAN, σ = 32 (the table gives no communication).
const fn t8(
    protocol: &'static str,
    label: &'static str,
    kappa: u32,
    log_n: u32,
    seconds: f64,
) -> PaperRow {
    let lan = Some("lan");
    row(
        protocol,
        label,
        log_n,
        lan,
        4,
        kappa,
        Some(32),
        Some(seconds),
        None,
        Unit::MiB,
    )
}

/// CM20 Tab. 2: one thread, κ = 128, the total communication of both parties in MiB.
const fn cm(
    protocol: &'static str,
    label: &'static str,
    log_n: u32,
    network: Option<&'static str>,
    seconds: f64,
    mib: f64,
) -> PaperRow {
    row(
        protocol,
        label,
        log_n,
        network,
        1,
        128,
        None,
        Some(seconds),
        Some(mib),
        Unit::MiB,
    )
}

/// DCW13 Tab. 3: 1000M Ethernet (the `lan` profile), no communication in the table.
const fn dcw(
    protocol: &'static str,
    label: &'static str,
    threads: usize,
    kappa: u32,
    log_n: u32,
    seconds: f64,
) -> PaperRow {
    let lan = Some("lan");
    row(
        protocol,
        label,
        log_n,
        lan,
        threads,
        kappa,
        None,
        Some(seconds),
        None,
        Unit::MB,
    )
}

/// RR17 Fig. 6-8: κ = 128, communication in MB.
const fn rr(
    protocol: &'static str,
    label: &'static str,
    log_n: u32,
    network: Option<&'static str>,
    threads: usize,
    seconds: Option<f64>,
    mb: Option<f64>,
) -> PaperRow {
    row(
        protocol,
        label,
        log_n,
        network,
        threads,
        128,
        None,
        seconds,
        mb,
        Unit::MB,
    )
}

/// spec-psz-dcw13.md §10.3 (Tab. 5) and §10.4 (Tab. 6). Per protocol: κ = 80 at 2^10 ... 2^18,
/// then κ = 128.
const PSZ_TAB5: &[PaperRow] = &[
    t5("dh_ffc", FFC, 80, 10, Some(0.4), 0.4),
    t5("dh_ffc", FFC, 80, 12, Some(1.6), 1.5),
    t5("dh_ffc", FFC, 80, 14, Some(6.2), 6.0),
    t5("dh_ffc", FFC, 80, 16, Some(24.7), 24.0),
    t5("dh_ffc", FFC, 80, 18, Some(98.8), 96.0),
    t5("dh_ffc", FFC, 128, 10, Some(4.8), 1.1),
    t5("dh_ffc", FFC, 128, 12, Some(19.1), 4.5),
    t5("dh_ffc", FFC, 128, 14, Some(76.5), 18.0),
    t5("dh_ffc", FFC, 128, 16, Some(306.0), 72.0),
    t5("dh_ffc", FFC, 128, 18, Some(1224.1), 288.0),
    // κ = 128 only (PSZ14's K-283; ours P-256). Tab. 6 counts 3nϕ with ϕ = 2κ (Pitfall 7.A).
    t5("ecdh_nist", ECC, 128, 10, Some(1.6), 0.1),
    t5("ecdh_nist", ECC, 128, 12, Some(6.5), 0.4),
    t5("ecdh_nist", ECC, 128, 14, Some(26.1), 1.5),
    t5("ecdh_nist", ECC, 128, 16, Some(104.2), 6.0),
    t5("ecdh_nist", ECC, 128, 18, Some(416.2), 24.0),
    t5("rsa_blind", RSA, 80, 10, Some(0.5), 0.3),
    t5("rsa_blind", RSA, 80, 12, Some(2.0), 1.1),
    t5("rsa_blind", RSA, 80, 14, Some(7.9), 4.3),
    t5("rsa_blind", RSA, 80, 16, Some(31.3), 17.3),
    t5("rsa_blind", RSA, 80, 18, Some(124.9), 69.0),
    t5("rsa_blind", RSA, 128, 10, Some(7.7), 0.8),
    t5("rsa_blind", RSA, 128, 12, Some(31.0), 3.1),
    t5("rsa_blind", RSA, 128, 14, Some(124.3), 12.5),
    t5("rsa_blind", RSA, 128, 16, Some(497.2), 50.0),
    t5("rsa_blind", RSA, 128, 18, Some(1982.1), 200.0),
    // κ = 128 only. "-" at 2^18: PSZ14's implementation ran out of memory.
    t5("circuit_yao", YAO, 128, 10, Some(1.6), 45.0),
    t5("circuit_yao", YAO, 128, 12, Some(6.3), 216.0),
    t5("circuit_yao", YAO, 128, 14, Some(28.4), 1008.0),
    t5("circuit_yao", YAO, 128, 16, Some(129.1), 4608.0),
    t5("circuit_yao", YAO, 128, 18, None, 20736.0),
    // κ = 128 only.
    t5("circuit_gmw_scalar", GMW, 128, 10, Some(2.6), 50.0),
    t5("circuit_gmw_scalar", GMW, 128, 12, Some(12.8), 240.0),
    t5("circuit_gmw_scalar", GMW, 128, 14, Some(58.9), 1120.0),
    t5("circuit_gmw_scalar", GMW, 128, 16, Some(276.4), 5120.0),
    t5("circuit_gmw_scalar", GMW, 128, 18, Some(1304.2), 23040.0),
    // κ = 128 only.
    t5("circuit_gmw", VMT, 128, 10, Some(1.9), 30.0),
    t5("circuit_gmw", VMT, 128, 12, Some(7.8), 144.0),
    t5("circuit_gmw", VMT, 128, 14, Some(36.5), 672.0),
    t5("circuit_gmw", VMT, 128, 16, Some(168.9), 3072.0),
    t5("circuit_gmw", VMT, 128, 18, Some(762.4), 13824.0),
    t5("gbf", GBF, 80, 10, Some(0.3), 3.4),
    t5("gbf", GBF, 80, 12, Some(0.9), 13.5),
    t5("gbf", GBF, 80, 14, Some(3.9), 54.0),
    t5("gbf", GBF, 80, 16, Some(16.1), 216.0),
    t5("gbf", GBF, 80, 18, Some(71.9), 864.0),
    t5("gbf", GBF, 128, 10, Some(0.6), 7.6),
    t5("gbf", GBF, 128, 12, Some(2.0), 30.2),
    t5("gbf", GBF, 128, 14, Some(8.5), 121.0),
    t5("gbf", GBF, 128, 16, Some(37.1), 483.8),
    t5("gbf", GBF, 128, 18, Some(154.4), 1935.4),
    // Tab. 6 names this row "Random GBF §4.3".
    t5("rgbf", RGBF, 80, 10, Some(0.15), 1.1),
    t5("rgbf", RGBF, 80, 12, Some(0.5), 4.5),
    t5("rgbf", RGBF, 80, 14, Some(2.0), 18.1),
    t5("rgbf", RGBF, 80, 16, Some(8.1), 72.6),
    t5("rgbf", RGBF, 80, 18, Some(34.3), 290.4),
    t5("rgbf", RGBF, 128, 10, Some(0.27), 2.9),
    t5("rgbf", RGBF, 128, 12, Some(1.0), 11.6),
    t5("rgbf", RGBF, 128, 14, Some(4.1), 46.2),
    t5("rgbf", RGBF, 128, 16, Some(16.7), 184.9),
    t5("rgbf", RGBF, 128, 18, Some(67.6), 739.7),
    // Tab. 6's formula, 0.5nκσ + 6n(λ + 2 log2 n), not Tab. 4's 89 MB at 2^18 (Pitfall 10.B).
    t5("psz14", SI, 80, 10, Some(0.13), 0.2),
    t5("psz14", SI, 80, 12, Some(0.2), 0.8),
    t5("psz14", SI, 80, 14, Some(0.8), 3.3),
    t5("psz14", SI, 80, 16, Some(3.3), 13.4),
    t5("psz14", SI, 80, 18, Some(13.5), 54.3),
    t5("psz14", SI, 128, 10, Some(0.26), 0.3),
    t5("psz14", SI, 128, 12, Some(0.3), 1.2),
    t5("psz14", SI, 128, 14, Some(0.9), 4.8),
    t5("psz14", SI, 128, 16, Some(3.7), 19.4),
    t5("psz14", SI, 128, 18, Some(13.8), 78.3),
];

/// spec-psz-dcw13.md §10.5 (Tab. 7): per protocol, the five networks from fastest to slowest.
const PSZ_TAB7: &[PaperRow] = &[
    t7("ecdh_nist", ECC, "lan", 104.2),
    t7("ecdh_nist", ECC, "wifi", 104.8),
    t7("ecdh_nist", ECC, "wan-intra", 107.6),
    t7("ecdh_nist", ECC, "wan-inter", 111.8),
    t7("ecdh_nist", ECC, "hsdpa", 115.9),
    t7("circuit_yao", YAO, "lan", 129.1),
    t7("circuit_yao", YAO, "wifi", 779.5),
    t7("circuit_yao", YAO, "wan-intra", 1735.5),
    t7("circuit_yao", YAO, "wan-inter", 4631.8),
    t7("circuit_yao", YAO, "hsdpa", 11658.6),
    // The total time; Tab. 7's online time in parentheses is in each row's comment.
    t7("circuit_gmw", VMT, "lan", 168.9),        // online 11.3
    t7("circuit_gmw", VMT, "wifi", 370.5),       // online 18.1
    t7("circuit_gmw", VMT, "wan-intra", 770.4),  // online 27.5
    t7("circuit_gmw", VMT, "wan-inter", 1936.5), // online 67.2
    t7("circuit_gmw", VMT, "hsdpa", 5310.9),     // online 170.2
    // 16.6 on the LAN here, 16.7 in Tab. 5: the paper's own discrepancy, kept.
    t7("rgbf", RGBF, "lan", 16.6),
    t7("rgbf", RGBF, "wifi", 37.2),
    t7("rgbf", RGBF, "wan-intra", 70.8),
    t7("rgbf", RGBF, "wan-inter", 164.9),
    t7("rgbf", RGBF, "hsdpa", 445.0),
    t7("psz14", SI, "lan", 3.7),
    t7("psz14", SI, "wifi", 5.0),
    t7("psz14", SI, "wan-intra", 8.8),
    t7("psz14", SI, "wan-inter", 22.8),
    t7("psz14", SI, "hsdpa", 77.5),
];

/// spec-psz-dcw13.md §10.6 (Tab. 8). Per protocol: κ = 80 at 2^10 ... 2^18, then κ = 128.
const PSZ_TAB8: &[PaperRow] = &[
    t8("dh_ffc", FFC, 80, 10, 0.1),
    t8("dh_ffc", FFC, 80, 12, 0.5),
    t8("dh_ffc", FFC, 80, 14, 1.8),
    t8("dh_ffc", FFC, 80, 16, 6.7),
    t8("dh_ffc", FFC, 80, 18, 26.9),
    t8("dh_ffc", FFC, 128, 10, 1.3),
    t8("dh_ffc", FFC, 128, 12, 5.2),
    t8("dh_ffc", FFC, 128, 14, 20.8),
    t8("dh_ffc", FFC, 128, 16, 80.1),
    t8("dh_ffc", FFC, 128, 18, 320.1),
    // κ = 128 only.
    t8("circuit_gmw", VMT, 128, 10, 1.1),
    t8("circuit_gmw", VMT, 128, 12, 5.6),
    t8("circuit_gmw", VMT, 128, 14, 23.4),
    t8("circuit_gmw", VMT, 128, 16, 96.1),
    t8("circuit_gmw", VMT, 128, 18, 400.9),
    t8("rgbf", RGBF, 80, 10, 0.08),
    t8("rgbf", RGBF, 80, 12, 0.2),
    t8("rgbf", RGBF, 80, 14, 0.8),
    t8("rgbf", RGBF, 80, 16, 3.2),
    t8("rgbf", RGBF, 80, 18, 13.1),
    t8("rgbf", RGBF, 128, 10, 0.14),
    t8("rgbf", RGBF, 128, 12, 0.5),
    t8("rgbf", RGBF, 128, 14, 1.7),
    t8("rgbf", RGBF, 128, 16, 6.4),
    t8("rgbf", RGBF, 128, 18, 25.9),
    t8("psz14", SI, 80, 10, 0.04),
    t8("psz14", SI, 80, 12, 0.16),
    t8("psz14", SI, 80, 14, 0.4),
    t8("psz14", SI, 80, 16, 1.2),
    t8("psz14", SI, 80, 18, 4.7),
    t8("psz14", SI, 128, 10, 0.04),
    t8("psz14", SI, 128, 12, 0.2),
    t8("psz14", SI, 128, 14, 0.5),
    t8("psz14", SI, 128, 16, 1.4),
    t8("psz14", SI, 128, 18, 4.9),
];

// CM20 Tab. 2's network columns: the 20 Gbps / 0.1 ms RTT LAN (plain loopback), then
// 150 ... 1 Mbit/s at 80 ms RTT.
const LAN20G: Option<&str> = None;
const M150: Option<&str> = Some("cm20-150");
const M100: Option<&str> = Some("cm20-100");
const M80: Option<&str> = Some("cm20-80");
const M50: Option<&str> = Some("cm20-50");
const M30: Option<&str> = Some("cm20-30");
const M10: Option<&str> = Some("cm20-10");
const M1: Option<&str> = Some("cm20-1");

/// spec-kmrs14-rr17-cm20.md C3 (Tab. 2). Per n: KKRT at the eight network columns, then Ours;
/// `bytes` is the Total column (P1 + P2), the same at every network.
const CM20_TAB2: &[PaperRow] = &[
    cm("kkrt16", "KKRT", 16, LAN20G, 0.34, 8.77),
    cm("kkrt16", "KKRT", 16, M150, 1.94, 8.77),
    cm("kkrt16", "KKRT", 16, M100, 2.01, 8.77),
    cm("kkrt16", "KKRT", 16, M80, 2.22, 8.77),
    cm("kkrt16", "KKRT", 16, M50, 2.62, 8.77),
    cm("kkrt16", "KKRT", 16, M30, 3.54, 8.77),
    cm("kkrt16", "KKRT", 16, M10, 8.41, 8.77),
    cm("kkrt16", "KKRT", 16, M1, 77.4, 8.77),
    cm("cm20", "Ours", 16, LAN20G, 0.63, 5.34),
    cm("cm20", "Ours", 16, M150, 1.71, 5.34),
    cm("cm20", "Ours", 16, M100, 1.78, 5.34),
    cm("cm20", "Ours", 16, M80, 1.87, 5.34),
    cm("cm20", "Ours", 16, M50, 2.14, 5.34),
    cm("cm20", "Ours", 16, M30, 2.66, 5.34),
    cm("cm20", "Ours", 16, M10, 5.53, 5.34),
    cm("cm20", "Ours", 16, M1, 47.4, 5.34),
    cm("kkrt16", "KKRT", 18, LAN20G, 1.08, 36.7),
    cm("kkrt16", "KKRT", 18, M150, 3.98, 36.7),
    cm("kkrt16", "KKRT", 18, M100, 4.71, 36.7),
    cm("kkrt16", "KKRT", 18, M80, 5.44, 36.7),
    cm("kkrt16", "KKRT", 18, M50, 7.79, 36.7),
    cm("kkrt16", "KKRT", 18, M30, 12.0, 36.7),
    cm("kkrt16", "KKRT", 18, M10, 33.2, 36.7),
    cm("kkrt16", "KKRT", 18, M1, 323.0, 36.7),
    cm("cm20", "Ours", 18, LAN20G, 2.26, 21.7),
    cm("cm20", "Ours", 18, M150, 3.01, 21.7),
    cm("cm20", "Ours", 18, M100, 3.34, 21.7),
    cm("cm20", "Ours", 18, M80, 3.77, 21.7),
    cm("cm20", "Ours", 18, M50, 5.08, 21.7),
    cm("cm20", "Ours", 18, M30, 7.53, 21.7),
    cm("cm20", "Ours", 18, M10, 20.0, 21.7),
    cm("cm20", "Ours", 18, M1, 192.0, 21.7),
    cm("kkrt16", "KKRT", 20, LAN20G, 4.58, 137.0),
    cm("kkrt16", "KKRT", 20, M150, 10.8, 137.0),
    cm("kkrt16", "KKRT", 20, M100, 14.7, 137.0),
    cm("kkrt16", "KKRT", 20, M80, 17.5, 137.0),
    cm("kkrt16", "KKRT", 20, M50, 26.5, 137.0),
    cm("kkrt16", "KKRT", 20, M30, 42.5, 137.0),
    cm("kkrt16", "KKRT", 20, M10, 122.0, 137.0),
    cm("kkrt16", "KKRT", 20, M1, 1204.0, 137.0),
    cm("cm20", "Ours", 20, LAN20G, 9.44, 87.6),
    cm("cm20", "Ours", 20, M150, 10.4, 87.6),
    cm("cm20", "Ours", 20, M100, 10.8, 87.6),
    cm("cm20", "Ours", 20, M80, 11.5, 87.6),
    cm("cm20", "Ours", 20, M50, 16.9, 87.6),
    cm("cm20", "Ours", 20, M30, 27.1, 87.6),
    cm("cm20", "Ours", 20, M10, 78.2, 87.6),
    cm("cm20", "Ours", 20, M1, 772.0, 87.6),
    cm("kkrt16", "KKRT", 22, LAN20G, 18.4, 571.0),
    cm("kkrt16", "KKRT", 22, M150, 42.3, 571.0),
    cm("kkrt16", "KKRT", 22, M100, 58.8, 571.0),
    cm("kkrt16", "KKRT", 22, M80, 71.2, 571.0),
    cm("kkrt16", "KKRT", 22, M50, 108.0, 571.0),
    cm("kkrt16", "KKRT", 22, M30, 175.0, 571.0),
    cm("kkrt16", "KKRT", 22, M10, 509.0, 571.0),
    cm("kkrt16", "KKRT", 22, M1, 5027.0, 571.0),
    cm("cm20", "Ours", 22, LAN20G, 46.3, 358.0),
    cm("cm20", "Ours", 22, M150, 49.2, 358.0),
    cm("cm20", "Ours", 22, M100, 50.6, 358.0),
    cm("cm20", "Ours", 22, M80, 51.1, 358.0),
    cm("cm20", "Ours", 22, M50, 65.5, 358.0),
    cm("cm20", "Ours", 22, M30, 107.0, 358.0),
    cm("cm20", "Ours", 22, M10, 317.0, 358.0),
    cm("cm20", "Ours", 22, M1, 3152.0, 358.0),
    cm("kkrt16", "KKRT", 24, LAN20G, 67.9, 2109.0),
    cm("kkrt16", "KKRT", 24, M150, 157.0, 2109.0),
    cm("kkrt16", "KKRT", 24, M100, 219.0, 2109.0),
    cm("kkrt16", "KKRT", 24, M80, 264.0, 2109.0),
    cm("kkrt16", "KKRT", 24, M50, 403.0, 2109.0),
    cm("kkrt16", "KKRT", 24, M30, 648.0, 2109.0),
    cm("kkrt16", "KKRT", 24, M10, 1882.0, 2109.0),
    cm("kkrt16", "KKRT", 24, M1, 18562.0, 2109.0),
    cm("cm20", "Ours", 24, LAN20G, 190.0, 1442.0),
    cm("cm20", "Ours", 24, M150, 200.0, 1442.0),
    cm("cm20", "Ours", 24, M100, 216.0, 1442.0),
    cm("cm20", "Ours", 24, M80, 234.0, 1442.0),
    cm("cm20", "Ours", 24, M50, 289.0, 1442.0),
    cm("cm20", "Ours", 24, M30, 431.0, 1442.0),
    cm("cm20", "Ours", 24, M10, 1277.0, 1442.0),
    cm("cm20", "Ours", 24, M1, 12717.0, 1442.0),
];

const DC: &str = "De Cristofaro's (C)";
const PIPE: &str = "Our pipelined (C)";
const PAR: &str = "Our parallel (C)";

/// spec-psz-dcw13.md §6.3 (Tab. 3), the C rows: 80-bit security, then 256-bit, each at
/// 2^10 ... 2^20. De Cristofaro's code ran two threads per side (footnote 4) and its time
/// leaves out the final pairwise comparison (footnote 3); the pipelined mode computes in one
/// thread per side (plus a thread that sends); the parallel mode uses every core: four on the
/// client, twelve on the server, encoded as four per party. De Cristofaro's code signs with
/// e = 3 and RSA 1024 / 15360 (DCW13 Tab. 2); our `rsa_blind` has the same moduli, e = 65537.
const DCW13_TAB3: &[PaperRow] = &[
    dcw("rsa_blind", DC, 2, 80, 10, 0.590),
    dcw("rsa_blind", DC, 2, 80, 12, 2.41),
    dcw("rsa_blind", DC, 2, 80, 14, 9.84),
    dcw("rsa_blind", DC, 2, 80, 16, 41.3),
    dcw("rsa_blind", DC, 2, 80, 18, 159.0),
    dcw("rsa_blind", DC, 2, 80, 20, 641.0),
    dcw("gbf", PIPE, 1, 80, 10, 0.275),
    dcw("gbf", PIPE, 1, 80, 12, 0.863),
    dcw("gbf", PIPE, 1, 80, 14, 3.37),
    dcw("gbf", PIPE, 1, 80, 16, 13.9),
    dcw("gbf", PIPE, 1, 80, 18, 54.0),
    dcw("gbf", PIPE, 1, 80, 20, 237.0),
    dcw("gbf", PAR, 4, 80, 10, 0.075),
    dcw("gbf", PAR, 4, 80, 12, 0.207),
    dcw("gbf", PAR, 4, 80, 14, 0.642),
    dcw("gbf", PAR, 4, 80, 16, 2.49),
    dcw("gbf", PAR, 4, 80, 18, 9.49),
    dcw("gbf", PAR, 4, 80, 20, 40.9),
    dcw("rsa_blind", DC, 2, 256, 10, 462.0),
    dcw("rsa_blind", DC, 2, 256, 12, 1850.0),
    dcw("rsa_blind", DC, 2, 256, 14, 7419.0),
    dcw("rsa_blind", DC, 2, 256, 16, 29654.0),
    dcw("rsa_blind", DC, 2, 256, 18, 118286.0),
    // † in the table: estimated from 2^18 ("131 hours"), not measured.
    dcw("rsa_blind", DC, 2, 256, 20, 473144.0),
    dcw("gbf", PIPE, 1, 256, 10, 4.09),
    dcw("gbf", PIPE, 1, 256, 12, 8.94),
    dcw("gbf", PIPE, 1, 256, 14, 29.8),
    dcw("gbf", PIPE, 1, 256, 16, 113.0),
    dcw("gbf", PIPE, 1, 256, 18, 453.0),
    dcw("gbf", PIPE, 1, 256, 20, 1852.0),
    dcw("gbf", PAR, 4, 256, 10, 0.741),
    dcw("gbf", PAR, 4, 256, 12, 1.53),
    dcw("gbf", PAR, 4, 256, 14, 4.68),
    dcw("gbf", PAR, 4, 256, 16, 17.8),
    dcw("gbf", PAR, 4, 256, 18, 74.2),
    dcw("gbf", PAR, 4, 256, 20, 339.0),
];

// RR17's row names. "[RR17]" in RR17's evaluation is the earlier Bloom-filter protocol
// (Rindal-Rosulek, Eurocrypt 2017, "RR17a"): our `rr17a`.
const KKRT: &str = "[KKRT16]∗";
const DKT: &str = "[DKT10]";
const RR17A: &str = "[RR17]";
const EC: &str = "Ours (EC-ROM)";
const DE: &str = "Ours (DE-ROM)";
const RR_WAN: Option<&str> = Some("rr17-wan");

/// spec-kmrs14-rr17-cm20.md B3 (Fig. 6), B5 (Fig. 8) and B4 (Fig. 7).
///
/// Fig. 6, single-threaded total time, LAN then WAN, per protocol at 2^8 ... 2^24. Its body is
/// lost: the only times are those the §7.1 prose attributes to one protocol, the rest `None`.
/// The WAN rows carry Fig. 8's communication (measured "when configured for the WAN
/// setting"); the LAN rows none.
///
/// Fig. 7, total time on the LAN with 4, 16 and 64 threads per party, without communication.
const RR17_FIGS: &[PaperRow] = &[
    // Fig. 6, LAN (10 Gbps: plain loopback), one thread.
    rr("kkrt16", KKRT, 8, None, 1, None, None),
    rr("kkrt16", KKRT, 12, None, 1, None, None),
    rr("kkrt16", KKRT, 16, None, 1, None, None),
    rr("kkrt16", KKRT, 20, None, 1, None, None),
    rr("kkrt16", KKRT, 24, None, 1, None, None),
    rr("dkt10", DKT, 8, None, 1, Some(1.6), None),
    rr("dkt10", DKT, 12, None, 1, None, None),
    rr("dkt10", DKT, 16, None, 1, None, None),
    // Not printed; the prose implies 12.6 s × 447 ("a 447× improvement over [DKT10]") ≈ 5632 s,
    // and Fig. 7's 16 threads 458 s × 12.3 ≈ 5633 s. Only printed figures are kept.
    rr("dkt10", DKT, 20, None, 1, None, None),
    // "requires over 24 hours".
    rr("dkt10", DKT, 24, None, 1, None, None),
    rr("rr17a", RR17A, 8, None, 1, Some(0.21), None),
    rr("rr17a", RR17A, 12, None, 1, None, None),
    rr("rr17a", RR17A, 16, None, 1, None, None),
    // Not printed; the prose implies 12.6 s × 11.7 ("A 11.7× improvement ... compared to
    // [RR17]") ≈ 147 s. Only printed figures are kept.
    rr("rr17a", RR17A, 20, None, 1, None, None),
    // "[RR17] runs out of memory".
    rr("rr17a", RR17A, 24, None, 1, None, None),
    // The prose's times for "our protocol" name neither EC-ROM nor DE-ROM, so neither row
    // takes them: 0.13 s at 2^8, 12.6 s at 2^20 ("our ROM protocols"), 239 s at 2^24 ("our
    // best protocol").
    rr("rr17_ec", EC, 8, None, 1, None, None),
    rr("rr17_ec", EC, 12, None, 1, None, None),
    rr("rr17_ec", EC, 16, None, 1, None, None),
    rr("rr17_ec", EC, 20, None, 1, None, None),
    rr("rr17_ec", EC, 24, None, 1, None, None),
    rr("rr17_de", DE, 8, None, 1, None, None),
    rr("rr17_de", DE, 12, None, 1, None, None),
    rr("rr17_de", DE, 16, None, 1, None, None),
    rr("rr17_de", DE, 20, None, 1, None, None),
    rr("rr17_de", DE, 24, None, 1, None, None),
    // Fig. 6, WAN (40 Mbit/s, 80 ms RTT), one thread, with Fig. 8's MB. At 2^8 the prose says
    // only that "all protocols require roughly 1 second" (ours 0.9, EC or DE unsaid).
    rr("kkrt16", KKRT, 8, RR_WAN, 1, None, Some(0.04)),
    rr("kkrt16", KKRT, 12, RR_WAN, 1, None, Some(0.53)),
    rr("kkrt16", KKRT, 16, RR_WAN, 1, None, Some(8.0)),
    rr("kkrt16", KKRT, 20, RR_WAN, 1, None, Some(127.0)),
    rr("kkrt16", KKRT, 24, RR_WAN, 1, None, Some(1956.0)),
    rr("dkt10", DKT, 8, RR_WAN, 1, None, Some(0.05)),
    rr("dkt10", DKT, 12, RR_WAN, 1, None, Some(0.8)),
    rr("dkt10", DKT, 16, RR_WAN, 1, None, Some(14.0)),
    rr("dkt10", DKT, 20, RR_WAN, 1, None, Some(213.0)),
    rr("dkt10", DKT, 24, RR_WAN, 1, None, Some(2356.0)),
    rr("rr17a", RR17A, 8, RR_WAN, 1, None, Some(1.9)),
    rr("rr17a", RR17A, 12, RR_WAN, 1, None, Some(23.0)),
    rr("rr17a", RR17A, 16, RR_WAN, 1, None, Some(324.0)),
    rr("rr17a", RR17A, 20, RR_WAN, 1, Some(1080.0), Some(4970.0)),
    // "−" in Fig. 8 (out of memory).
    rr("rr17a", RR17A, 24, RR_WAN, 1, None, None),
    rr("rr17_ec", EC, 8, RR_WAN, 1, None, Some(0.29)),
    rr("rr17_ec", EC, 12, RR_WAN, 1, None, Some(4.8)),
    rr("rr17_ec", EC, 16, RR_WAN, 1, None, Some(79.0)),
    rr("rr17_ec", EC, 20, RR_WAN, 1, None, Some(1322.0)),
    rr("rr17_ec", EC, 24, RR_WAN, 1, None, Some(22038.0)),
    rr("rr17_de", DE, 8, RR_WAN, 1, None, Some(0.25)),
    rr("rr17_de", DE, 12, RR_WAN, 1, None, Some(3.5)),
    rr("rr17_de", DE, 16, RR_WAN, 1, None, Some(61.0)),
    // "Our DE-ROM protocol requires 106 seconds compared to 1080 for [RR17]".
    rr("rr17_de", DE, 20, RR_WAN, 1, Some(106.0), Some(1092.0)),
    rr("rr17_de", DE, 24, RR_WAN, 1, None, Some(17875.0)),
    // Fig. 7, LAN, 4 threads ("−": out of memory).
    rr("dkt10", DKT, 8, None, 4, Some(0.61), None),
    rr("dkt10", DKT, 12, None, 4, Some(6.9), None),
    rr("dkt10", DKT, 16, None, 4, Some(95.0), None),
    rr("dkt10", DKT, 20, None, 4, Some(1539.0), None),
    rr("dkt10", DKT, 24, None, 4, Some(24948.0), None),
    rr("rr17a", RR17A, 8, None, 4, Some(0.15), None),
    rr("rr17a", RR17A, 12, None, 4, Some(0.52), None),
    rr("rr17a", RR17A, 16, None, 4, Some(5.8), None),
    rr("rr17a", RR17A, 20, None, 4, Some(84.0), None),
    rr("rr17a", RR17A, 24, None, 4, None, None),
    rr("rr17_ec", EC, 8, None, 4, Some(0.14), None),
    rr("rr17_ec", EC, 12, None, 4, Some(0.15), None),
    rr("rr17_ec", EC, 16, None, 4, Some(0.4), None),
    rr("rr17_ec", EC, 20, None, 4, Some(4.4), None),
    rr("rr17_ec", EC, 24, None, 4, Some(72.0), None),
    rr("rr17_de", DE, 8, None, 4, Some(0.14), None),
    rr("rr17_de", DE, 12, None, 4, Some(0.17), None),
    rr("rr17_de", DE, 16, None, 4, Some(0.6), None),
    rr("rr17_de", DE, 20, None, 4, Some(7.0), None),
    rr("rr17_de", DE, 24, None, 4, Some(93.0), None),
    // Fig. 7, LAN, 16 threads.
    rr("dkt10", DKT, 8, None, 16, Some(0.33), None),
    rr("dkt10", DKT, 12, None, 16, Some(2.2), None),
    rr("dkt10", DKT, 16, None, 16, Some(29.0), None),
    rr("dkt10", DKT, 20, None, 16, Some(458.0), None),
    rr("dkt10", DKT, 24, None, 16, Some(7265.0), None),
    rr("rr17a", RR17A, 8, None, 16, Some(0.15), None),
    rr("rr17a", RR17A, 12, None, 16, Some(0.44), None),
    rr("rr17a", RR17A, 16, None, 16, Some(4.3), None),
    rr("rr17a", RR17A, 20, None, 16, Some(68.0), None),
    rr("rr17a", RR17A, 24, None, 16, None, None),
    rr("rr17_ec", EC, 8, None, 16, Some(0.14), None),
    rr("rr17_ec", EC, 12, None, 16, Some(0.16), None),
    rr("rr17_ec", EC, 16, None, 16, Some(0.4), None),
    rr("rr17_ec", EC, 20, None, 16, Some(3.0), None),
    rr("rr17_ec", EC, 24, None, 16, Some(42.0), None),
    rr("rr17_de", DE, 8, None, 16, Some(0.14), None),
    rr("rr17_de", DE, 12, None, 16, Some(0.17), None),
    rr("rr17_de", DE, 16, None, 16, Some(0.4), None),
    rr("rr17_de", DE, 20, None, 16, Some(3.5), None),
    rr("rr17_de", DE, 24, None, 16, Some(34.0), None),
    // Fig. 7, LAN, 64 threads.
    rr("dkt10", DKT, 8, None, 64, Some(0.11), None),
    rr("dkt10", DKT, 12, None, 64, Some(1.2), None),
    rr("dkt10", DKT, 16, None, 64, Some(19.0), None),
    rr("dkt10", DKT, 20, None, 64, Some(315.0), None),
    rr("dkt10", DKT, 24, None, 64, Some(5021.0), None),
    rr("rr17a", RR17A, 8, None, 64, Some(0.14), None),
    rr("rr17a", RR17A, 12, None, 64, Some(0.34), None),
    rr("rr17a", RR17A, 16, None, 64, Some(2.1), None),
    rr("rr17a", RR17A, 20, None, 64, Some(32.0), None),
    rr("rr17a", RR17A, 24, None, 64, None, None),
    rr("rr17_ec", EC, 8, None, 64, Some(0.14), None),
    rr("rr17_ec", EC, 12, None, 64, Some(0.15), None),
    rr("rr17_ec", EC, 16, None, 64, Some(0.4), None),
    rr("rr17_ec", EC, 20, None, 64, Some(3.0), None),
    rr("rr17_ec", EC, 24, None, 64, Some(42.0), None),
    rr("rr17_de", DE, 8, None, 64, Some(0.14), None),
    rr("rr17_de", DE, 12, None, 64, Some(0.17), None),
    rr("rr17_de", DE, 16, None, 64, Some(0.4), None),
    rr("rr17_de", DE, 20, None, 64, Some(2.9), None),
    rr("rr17_de", DE, 24, None, 64, Some(25.0), None),
];

/// KMRS14's rows: two clients holding n 16-byte elements each, κ = 128, communication one
/// client's in MB (10^6 bytes, note A5), no network of ours (loopback: Tab. 1 and 3 ran between
/// Azure regions over the Internet at a bandwidth the paper does not give, Tab. 2 on a LAN).
#[allow(clippy::too_many_arguments)]
const fn km(
    protocol: &'static str,
    label: &'static str,
    n: u64,
    threads: usize,
    ms: Option<f64>,
    mb: Option<f64>,
    store: Store,
    plaintext: bool,
) -> PaperRow {
    PaperRow {
        protocol,
        label,
        n_recv: n,
        n_send: n,
        network: None,
        threads,
        kappa: 128,
        sigma: None,
        seconds: match ms {
            Some(ms) => Some(ms / 1000.0),
            None => None,
        },
        bytes: mb,
        unit: Unit::MB,
        aided: Some(Aided { store, plaintext }),
    }
}

const SH: &str = "SHPSI";
const SIZE: &str = "SizePSI";
const PLAIN: &str = "Plain";
const MPSI: &str = "MPSI";
const MEM: Store = Store::Memory;

/// spec-kmrs14-rr17-cm20.md A6, Tab. 1: SHPSI's scalability (per-client MB, total time).
const KMRS14_TAB1: &[PaperRow] = &[
    km(
        "kmrs_semi",
        SH,
        100_000,
        20,
        Some(532.0),
        Some(1.0),
        MEM,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        1_000_000,
        20,
        Some(1652.0),
        Some(10.0),
        MEM,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        10_000_000,
        100,
        Some(7000.0),
        Some(114.0),
        MEM,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        100_000_000,
        100,
        Some(53_000.0),
        Some(1239.0),
        MEM,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        1_000_000_000,
        100,
        Some(580_000.0),
        Some(12_397.0),
        MEM,
        false,
    ),
];

/// spec-kmrs14-rr17-cm20.md A6, Tab. 2: SHPSI and SizePSI on a LAN, 10 threads, times only.
const KMRS14_TAB2: &[PaperRow] = &[
    km("kmrs_semi", SH, 1000, 10, Some(2.0), None, MEM, false),
    km("kmrs_semi", SH, 10_000, 10, Some(12.0), None, MEM, false),
    km("kmrs_semi", SH, 50_000, 10, Some(59.0), None, MEM, false),
    km("kmrs_semi", SH, 100_000, 10, Some(117.0), None, MEM, false),
    km("kmrs_size", SIZE, 1000, 10, Some(13.0), None, MEM, false),
    km("kmrs_size", SIZE, 10_000, 10, Some(112.0), None, MEM, false),
    km("kmrs_size", SIZE, 50_000, 10, Some(488.0), None, MEM, false),
    km(
        "kmrs_size",
        SIZE,
        100_000,
        10,
        Some(996.0),
        None,
        MEM,
        false,
    ),
];

/// spec-kmrs14-rr17-cm20.md A6, Tab. 3: SHPSI and SizePSI against the plaintext server-aided
/// intersection. Threads are not stated; Tab. 1's for the same sizes (20 up to 10^6, 100
/// above). "1.2GB" is 1200 MB.
const KMRS14_TAB3: &[PaperRow] = &[
    km(
        "kmrs_semi",
        PLAIN,
        100_000,
        20,
        Some(530.0),
        None,
        MEM,
        true,
    ),
    km(
        "kmrs_semi",
        PLAIN,
        1_000_000,
        20,
        Some(1600.0),
        None,
        MEM,
        true,
    ),
    km(
        "kmrs_semi",
        PLAIN,
        10_000_000,
        100,
        Some(7102.0),
        None,
        MEM,
        true,
    ),
    km(
        "kmrs_semi",
        PLAIN,
        20_000_000,
        100,
        Some(10_780.0),
        None,
        MEM,
        true,
    ),
    km(
        "kmrs_semi",
        SH,
        100_000,
        20,
        Some(532.0),
        Some(1.0),
        MEM,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        1_000_000,
        20,
        Some(1652.0),
        Some(10.0),
        MEM,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        10_000_000,
        100,
        Some(7717.0),
        Some(114.0),
        MEM,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        20_000_000,
        100,
        Some(11_662.0),
        Some(228.0),
        MEM,
        false,
    ),
    km(
        "kmrs_size",
        SIZE,
        100_000,
        20,
        Some(2000.0),
        Some(7.4),
        MEM,
        false,
    ),
    km(
        "kmrs_size",
        SIZE,
        1_000_000,
        20,
        Some(10_232.0),
        Some(74.3),
        MEM,
        false,
    ),
    km(
        "kmrs_size",
        SIZE,
        10_000_000,
        100,
        Some(82_323.0),
        Some(619.0),
        MEM,
        false,
    ),
    km(
        "kmrs_size",
        SIZE,
        20_000_000,
        100,
        Some(185_123.0),
        Some(1200.0),
        MEM,
        false,
    ),
];

const REDIS: Store = Store::Redis;

/// spec-kmrs14-rr17-cm20.md A6, Tab. 4: the server's store is Redis. Threads are not stated
/// (Tab. 2's 10). MPSI at 10^7 is the paper's "X" (its Windows Redis port could not hold it).
const KMRS14_TAB4: &[PaperRow] = &[
    km("kmrs_semi", PLAIN, 1000, 10, Some(380.3), None, REDIS, true),
    km(
        "kmrs_semi",
        PLAIN,
        10_000,
        10,
        Some(934.0),
        None,
        REDIS,
        true,
    ),
    km(
        "kmrs_semi",
        PLAIN,
        100_000,
        10,
        Some(2170.4),
        None,
        REDIS,
        true,
    ),
    km(
        "kmrs_semi",
        PLAIN,
        1_000_000,
        10,
        Some(5798.9),
        None,
        REDIS,
        true,
    ),
    km(
        "kmrs_semi",
        PLAIN,
        10_000_000,
        10,
        Some(47_041.5),
        None,
        REDIS,
        true,
    ),
    km("kmrs_semi", SH, 1000, 10, Some(381.0), None, REDIS, false),
    km("kmrs_semi", SH, 10_000, 10, Some(939.7), None, REDIS, false),
    km(
        "kmrs_semi",
        SH,
        100_000,
        10,
        Some(2239.8),
        None,
        REDIS,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        1_000_000,
        10,
        Some(6496.3),
        None,
        REDIS,
        false,
    ),
    km(
        "kmrs_semi",
        SH,
        10_000_000,
        10,
        Some(54_020.5),
        None,
        REDIS,
        false,
    ),
    km("kmrs_mal", MPSI, 1000, 10, Some(857.4), None, REDIS, false),
    km(
        "kmrs_mal",
        MPSI,
        10_000,
        10,
        Some(2020.0),
        None,
        REDIS,
        false,
    ),
    km(
        "kmrs_mal",
        MPSI,
        100_000,
        10,
        Some(7368.3),
        None,
        REDIS,
        false,
    ),
    km(
        "kmrs_mal",
        MPSI,
        1_000_000,
        10,
        Some(61_544.9),
        None,
        REDIS,
        false,
    ),
    km("kmrs_mal", MPSI, 10_000_000, 10, None, None, REDIS, false),
];

/// Every suite, by name.
pub const SUITES: &[Suite] = &[
    // spec-psz-dcw13.md §10.3 (Tab. 5) and §10.4 (Tab. 6), environment §10.1.
    // Left out: the κ = 80 columns of "DH-based ECC [32]", "Yao [8, 31]", "GMW [1]" and
    // "Vector-MT GMW §3.2" (ecdh_nist, circuit_yao, circuit_gmw_scalar and circuit_gmw offer
    // no κ = 80; ecdh on Ristretto255 neither). Their figures, 2^10 ... 2^18, seconds / MiB:
    // ECC 0.7 2.8 11.0 44.1 177.5 / 0.1 0.2 1.0 3.8 15.0; Yao 1.2 5.7 27.7 128.2 - /
    // 28.1 135.0 630.0 2,880.0 12,960.0; GMW 1.9 8.6 35.2 161.9 806.5 / 31.3 150.0 700.0
    // 3,200.0 14,400.0; Vector-MT GMW 1.2 5.1 21.2 100.3 462.7 / 18.8 90.0 420.0 1,920.0
    // 8,640.0. "Naive hashing" is not in this version of PSZ14 (the ePrint full version of
    // the USENIX paper, note §0.1), so `naive` has no row.
    Suite {
        name: "psz-tab5",
        source: "PSZ14 Tab. 5 and Tab. 6 (USENIX Security 2014, ePrint full version)",
        setting: "Two Intel Core2Quad desktop PCs (4 GB RAM, no AES-NI) over Gigabit LAN, one \
                  thread per party, both parties holding n elements, σ = 32, λ = 40: runtime \
                  from program start until the client outputs the intersection, averaged over \
                  10 executions (Tab. 5). Communication is Tab. 6's, computed from each \
                  protocol's formula rather than measured, in MB that are MiB.",
        rows: PSZ_TAB5,
    },
    // spec-psz-dcw13.md §10.5 (Tab. 7), environment §10.1. Nothing left out. Tab. 7 gives no
    // communication: Tab. 6's for the same rows is in psz-tab5 at n = 2^16, κ = 128.
    Suite {
        name: "psz-tab7",
        source: "PSZ14 Tab. 7 (USENIX Security 2014, ePrint full version)",
        setting: "The two Core2Quad PCs of Tab. 5, one thread per party, n = 2^16, σ = 32, \
                  κ = 128, on five links simulated with Linux tc (Mbit/s / one-way latency \
                  ms): Gigabit LAN 1,000/0.2, 802.11g WiFi 54/0.2, intra-country WAN 25/10, \
                  inter-country WAN 10/50, HSDPA 3.6/500; total runtime in seconds.",
        rows: PSZ_TAB7,
    },
    // spec-psz-dcw13.md §10.6 (Tab. 8), environment §10.1.
    // Left out: "Vector-MT GMW §3.2" at κ = 80 (circuit_gmw offers no κ = 80): 0.8 3.6 15.9
    // 71.3 288.1 s at 2^10 ... 2^18. Tab. 8's speedup column (Tab. 5 / Tab. 8 at 2^18,
    // κ = 128) is no figure of its own. Tab. 8 gives no communication.
    Suite {
        name: "psz-tab8",
        source: "PSZ14 Tab. 8 (USENIX Security 2014, ePrint full version)",
        setting: "The two Core2Quad PCs of Tab. 5 over Gigabit LAN with four threads per party, \
                  σ = 32, κ = 80 and 128: runtime in seconds.",
        rows: PSZ_TAB8,
    },
    // spec-kmrs14-rr17-cm20.md C3 (Tab. 2). MB: the note derives 2^20 bytes (C4: Tab. 3's
    // costs come out only with $/GB ÷ 1024), and Tab. 2's P1 column agrees: at 2^20, n OPRF
    // values of ⌈(40 + 2·20)/8⌉ = 10 bytes are 10.0 MiB (10.5 MB); so `Unit::MiB`.
    // Left out: "spot-fast" and "spot-low" [PRTY19] at every n (SpOT-Light's polynomial
    // multi-point OPRF; no protocol of ours implements it); the per-party P1 and P2 columns
    // (`bytes` is both directions: the Total column).
    Suite {
        name: "cm20-tab2",
        source: "CM20 Tab. 2 (CRYPTO 2020)",
        setting: "Two Microsoft Azure VMs (Intel Xeon 2.40 GHz, 140 GB RAM), a single thread \
                  per party, semi-honest protocols, each party holding n elements: total \
                  running time on a 20 Gbps / 0.1 ms RTT LAN and on tc-shaped links of 150 to \
                  1 Mbit/s with 80 ms RTT, and the communication of both parties in MB (2^20 \
                  bytes).",
        rows: CM20_TAB2,
    },
    // spec-psz-dcw13.md §6.3 (Tab. 3), settings §6.1, parallel mode §5.2.
    // Left out: "Huang's(Java)" / "Huang's (Java)" (HEK12's sort-compare-shuffle circuit
    // under Yao, in Java: our circuit_yao has that circuit but offers only κ = 128, and the
    // table is at 80 and 256 bits); "Our pipelined (Java)" and "Our parallel (Java)" (the
    // same protocol and modes as the C rows in DCW13's Java port; the C rows are the native
    // implementation ours compares with). No communication: Fig. 5, DCW13's bandwidth plot,
    // is lost from the text.
    Suite {
        name: "dcw13-tab3",
        source: "DCW13 Tab. 3 (CCS 2013, extended version)",
        setting: "Server a Mac Pro (2x 6-core Xeon E5645 2.4 GHz, 32 GB), client a MacBook Pro \
                  (quad-core 2720QM 2.2 GHz, 16 GB), 1000M Ethernet, λ = k = 80 or 256, random \
                  int sets: time from the client's request until it outputs the intersection, \
                  base OTs included. The pipelined mode computes in one thread per side, the \
                  parallel mode on all cores (4 client, 12 server), De Cristofaro's RSA code \
                  with two threads per side and without its final comparison step.",
        rows: DCW13_TAB3,
    },
    // spec-kmrs14-rr17-cm20.md B3 (Fig. 6), B4 (Fig. 7), B5 (Fig. 8), setup B2.
    // Left out: "Ours (SM, σ = 32)" and "Ours (SM, σ = 64)" in every figure (RR17's
    // standard-model dual execution; no protocol of ours implements it); Fig. 6's online
    // times (lost, and the suite compares total time); Fig. 6's eight stray numbers (3.7,
    // 1.3, 367, 13, 15, 5.6, 5.4, 82) that cannot be placed; Fig. 8's offline and online
    // formulas. Communication unit: neither the note nor the paper says whether Fig. 8's
    // "megabytes" are 10^6 or 2^20 bytes, so `Unit::MB`.
    Suite {
        name: "rr17-fig6",
        source: "RR17 Fig. 6, 7 and 8 (CCS 2017)",
        setting: "Both parties on one server (two multi-core Intel Xeons, 256 GB RAM) over \
                  loopback shaped with tc: LAN 10 Gbps with under 1 ms latency, WAN 40 Mbit/s \
                  with 80 ms RTT; κ = 128, λ = 40, n elements each, mean of 10 trials. Total \
                  running time with one thread (Fig. 6, LAN and WAN) and with 4, 16 and 64 \
                  threads (Fig. 7, LAN), and both parties' communication in the WAN \
                  configuration (Fig. 8).",
        rows: RR17_FIGS,
    },
    // spec-kmrs14-rr17-cm20.md A6 (Tab. 1), setup §4.2. Nothing left out.
    Suite {
        name: "kmrs14-tab1",
        source: "KMRS14 Tab. 1 (FC 2014, ePrint 2014/447)",
        setting: "Three Windows Azure VMs over the Internet (server: 8 cores, 14 GB, West US; \
                  each client: 8 cores, 7 GB, East US; more RAM at 10^9): SHPSI with two \
                  clients of n random 16-byte elements, communication per client in MB, total \
                  time. Ours runs both clients and the server on this machine over loopback \
                  with all its cores.",
        rows: KMRS14_TAB1,
    },
    // spec-kmrs14-rr17-cm20.md A6 (Tab. 2), setup §4.3. Left out: the column of [23], a
    // two-party protocol of De Cristofaro and Tsudik whose code the paper got from its
    // authors (the note does not say which of their protocols; ours are in psz-tab5).
    Suite {
        name: "kmrs14-tab2",
        source: "KMRS14 Tab. 2 (FC 2014, ePrint 2014/447)",
        setting: "Three Linux machines (3 GHz Xeon, 16 GB) on a LAN, 10 threads: SHPSI and \
                  SizePSI, time from the clients' start until they output the result, \
                  communication included. Ours runs all three parties on this machine over \
                  loopback with all its cores.",
        rows: KMRS14_TAB2,
    },
    // spec-kmrs14-rr17-cm20.md A6 (Tab. 3), setup §4.4. Nothing left out. The note finds
    // SizePSI's communication unexplained by the paper's t; ours is its formula's.
    Suite {
        name: "kmrs14-tab3",
        source: "KMRS14 Tab. 3 (FC 2014, ePrint 2014/447)",
        setting: "SHPSI and SizePSI (λ = 3, t = 10^6; ours t = 2^20) against the plaintext server-aided \
                  intersection (clients send their elements, the server intersects), machines \
                  probably Tab. 1's Azure WAN: total time and per-client communication. Ours \
                  runs all three parties on this machine over loopback with all its cores.",
        rows: KMRS14_TAB3,
    },
    // spec-kmrs14-rr17-cm20.md A6 (Tab. 4), §4.5. Nothing left out; MPSI's λ and t are not
    // stated, ours are kmrs_mal's defaults.
    Suite {
        name: "kmrs14-tab4",
        source: "KMRS14 Tab. 4 (FC 2014, ePrint 2014/447)",
        setting: "The server's store replaced by Redis (insertions and set-intersection \
                  queries): plaintext, SHPSI and MPSI, total time. Ours starts its own \
                  redis-server (persistence off) on a free loopback port and runs all parties \
                  on this machine with all its cores.",
        rows: KMRS14_TAB4,
    },
];

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::netem::PROFILES;
    use blindjoin_psi::protocols::ALL;
    use std::collections::HashSet;

    fn suite(name: &str) -> &'static Suite {
        SUITES
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no suite {name}"))
    }

    /// The one row of `suite` with this setting.
    fn cell(
        suite_name: &str,
        protocol: &str,
        log_n: u32,
        network: Option<&str>,
        threads: usize,
        kappa: u32,
    ) -> &'static PaperRow {
        let rows: Vec<&PaperRow> = suite(suite_name)
            .rows
            .iter()
            .filter(|r| {
                r.protocol == protocol
                    && r.n_recv == 1 << log_n
                    && r.network == network
                    && r.threads == threads
                    && r.kappa == kappa
            })
            .collect();
        assert_eq!(
            rows.len(),
            1,
            "{suite_name}: {protocol} 2^{log_n} {network:?} {threads}t κ{kappa}"
        );
        rows[0]
    }

    #[test]
    fn every_protocol_exists_and_offers_the_rows_kappa() {
        for s in SUITES {
            for r in s.rows {
                let p = ALL
                    .iter()
                    .find(|p| p.name == r.protocol)
                    .unwrap_or_else(|| panic!("{}: no protocol {}", s.name, r.protocol));
                assert!(
                    p.kappa.contains(&r.kappa),
                    "{}: {} does not offer κ = {}",
                    s.name,
                    r.protocol,
                    r.kappa
                );
            }
        }
    }

    #[test]
    fn every_network_is_a_profile() {
        for s in SUITES {
            for r in s.rows {
                if let Some(net) = r.network {
                    assert!(
                        PROFILES.iter().any(|p| p.0 == net),
                        "{}: no network profile {net}",
                        s.name
                    );
                }
            }
        }
    }

    #[test]
    fn suite_names_are_unique() {
        let names: HashSet<&str> = SUITES.iter().map(|s| s.name).collect();
        assert_eq!(names.len(), SUITES.len());
    }

    #[test]
    fn rows_are_well_formed_and_each_setting_once() {
        for s in SUITES {
            assert!(!s.source.is_empty() && !s.setting.is_empty(), "{}", s.name);
            let mut seen = HashSet::new();
            for r in s.rows {
                assert!(r.n_recv > 0 && r.n_send > 0 && r.threads > 0, "{}", s.name);
                for x in [r.seconds, r.bytes].into_iter().flatten() {
                    assert!(x.is_finite() && x > 0.0, "{}: {x}", s.name);
                }
                let key = (
                    r.series(),
                    r.n_recv,
                    r.n_send,
                    r.network,
                    r.threads,
                    r.kappa,
                    r.sigma,
                );
                assert!(seen.insert(key), "{}: {key:?} twice", s.name);
            }
        }
    }

    #[test]
    fn row_counts() {
        let counts: Vec<(&str, usize)> = SUITES.iter().map(|s| (s.name, s.rows.len())).collect();
        assert_eq!(
            counts,
            [
                ("psz-tab5", 70),
                ("psz-tab7", 25),
                ("psz-tab8", 35),
                ("cm20-tab2", 80),
                ("dcw13-tab3", 36),
                ("rr17-fig6", 110),
                ("kmrs14-tab1", 5),
                ("kmrs14-tab2", 8),
                ("kmrs14-tab3", 12),
                ("kmrs14-tab4", 15),
            ]
        );
    }

    /// KMRS14's tables in seconds and per-client MB, with the note's derived ratios (A6:
    /// SHPSI over plaintext 1.004, 1.03, 1.087, 1.082 in Tab. 3).
    #[test]
    fn kmrs14_figures() {
        let find = |suite_name: &str, series: &str, n: u64| -> &'static PaperRow {
            let rows: Vec<&PaperRow> = suite(suite_name)
                .rows
                .iter()
                .filter(|r| r.series() == series && r.n_recv == n)
                .collect();
            assert_eq!(rows.len(), 1, "{suite_name}: {series} at {n}");
            rows[0]
        };
        let r = find("kmrs14-tab1", "kmrs_semi", 1_000_000_000);
        assert_eq!(
            (r.seconds, r.bytes, r.threads),
            (Some(580.0), Some(12_397.0), 100)
        );
        let r = find("kmrs14-tab2", "kmrs_size", 50_000);
        assert_eq!((r.seconds, r.threads), (Some(0.488), 10));
        let ratios: Vec<f64> = [100_000, 1_000_000, 10_000_000, 20_000_000]
            .into_iter()
            .map(|n| {
                let sh = find("kmrs14-tab3", "kmrs_semi", n).seconds.unwrap();
                let plain = find("kmrs14-tab3", "plaintext", n).seconds.unwrap();
                (sh / plain * 1000.0).round() / 1000.0
            })
            .collect();
        assert_eq!(ratios, [1.004, 1.033, 1.087, 1.082]);
        let r = find("kmrs14-tab4", "kmrs_mal", 10_000_000);
        assert_eq!(
            (r.seconds, r.aided.map(|a| a.store)),
            (None, Some(Store::Redis))
        );
        for name in ["kmrs14-tab1", "kmrs14-tab2", "kmrs14-tab3", "kmrs14-tab4"] {
            for r in suite(name).rows {
                assert!(r.aided.is_some() && r.unit == Unit::MB, "{name}");
            }
        }
    }

    #[test]
    fn psz_rows_use_sigma_32_and_mib() {
        for name in ["psz-tab5", "psz-tab7", "psz-tab8"] {
            for r in suite(name).rows {
                assert_eq!(r.sigma, Some(32), "{name}");
                assert_eq!(r.unit, Unit::MiB, "{name}");
            }
        }
    }

    #[test]
    fn psz_tab5_figures() {
        let lan = Some("lan");
        let r = cell("psz-tab5", "gbf", 18, lan, 1, 128);
        assert_eq!((r.seconds, r.bytes), (Some(154.4), Some(1935.4)));
        let r = cell("psz-tab5", "circuit_yao", 18, lan, 1, 128);
        assert_eq!((r.seconds, r.bytes), (None, Some(20736.0)));
        let r = cell("psz-tab5", "rgbf", 10, lan, 1, 80);
        assert_eq!((r.seconds, r.bytes), (Some(0.15), Some(1.1)));
        assert_eq!(r.label, "Random Garbled Bloom Filter §4.3");
    }

    #[test]
    fn psz_tab7_figures() {
        let r = cell("psz-tab7", "psz14", 16, Some("hsdpa"), 1, 128);
        assert_eq!(r.seconds, Some(77.5));
        let r = cell("psz-tab7", "circuit_gmw", 16, Some("wan-inter"), 1, 128);
        assert_eq!(r.seconds, Some(1936.5));
        let r = cell("psz-tab7", "circuit_yao", 16, Some("wifi"), 1, 128);
        assert_eq!((r.seconds, r.bytes), (Some(779.5), None));
    }

    #[test]
    fn psz_tab8_figures() {
        let lan = Some("lan");
        assert_eq!(
            cell("psz-tab8", "dh_ffc", 18, lan, 4, 128).seconds,
            Some(320.1)
        );
        assert_eq!(
            cell("psz-tab8", "psz14", 12, lan, 4, 80).seconds,
            Some(0.16)
        );
        assert_eq!(
            cell("psz-tab8", "rgbf", 10, lan, 4, 128).seconds,
            Some(0.14)
        );
    }

    #[test]
    fn cm20_tab2_figures() {
        let r = cell("cm20-tab2", "cm20", 20, Some("cm20-50"), 1, 128);
        assert_eq!(
            (r.seconds, r.bytes, r.unit),
            (Some(16.9), Some(87.6), Unit::MiB)
        );
        let r = cell("cm20-tab2", "kkrt16", 24, Some("cm20-1"), 1, 128);
        assert_eq!((r.seconds, r.bytes), (Some(18562.0), Some(2109.0)));
        let r = cell("cm20-tab2", "kkrt16", 16, None, 1, 128);
        assert_eq!((r.seconds, r.bytes), (Some(0.34), Some(8.77)));
    }

    #[test]
    fn dcw13_tab3_figures() {
        let lan = Some("lan");
        assert_eq!(
            cell("dcw13-tab3", "gbf", 20, lan, 4, 80).seconds,
            Some(40.9)
        );
        assert_eq!(
            cell("dcw13-tab3", "gbf", 10, lan, 1, 256).seconds,
            Some(4.09)
        );
        let r = cell("dcw13-tab3", "rsa_blind", 20, lan, 2, 256);
        assert_eq!((r.seconds, r.bytes), (Some(473144.0), None));
    }

    #[test]
    fn rr17_figures() {
        let wan = Some("rr17-wan");
        let r = cell("rr17-fig6", "rr17_de", 20, wan, 1, 128);
        assert_eq!((r.seconds, r.bytes), (Some(106.0), Some(1092.0)));
        let r = cell("rr17-fig6", "rr17a", 24, wan, 1, 128);
        assert_eq!((r.seconds, r.bytes), (None, None));
        assert_eq!(
            cell("rr17-fig6", "dkt10", 20, None, 16, 128).seconds,
            Some(458.0)
        );
        assert_eq!(
            cell("rr17-fig6", "rr17_ec", 24, None, 64, 128).seconds,
            Some(42.0)
        );
    }
}
