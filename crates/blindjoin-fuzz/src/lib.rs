//! Fuzz targets for every decoder of blindjoin that reads peer or file input.
//!
//! Each target is a plain function `fn(&[u8]) -> Outcome` ([`TARGETS`]): the AFL++ harness
//! (`crates/blindjoin-fuzz/afl`, built with `cargo afl`) calls it on the fuzzer's inputs, and
//! this crate's smoke test (`tests/smoke.rs`, part of `cargo test --workspace`) runs it on the
//! committed seed corpus (`corpus/<target>/`) and on deterministic mutations of it
//! ([`mutate`]). An input may make a target return `Ok` or a clean `Err` (whose text is
//! formatted, so error display is exercised too); a panic, a hang or an allocation above
//! [`alloc::CAP`] is a finding. `docs/FUZZING.md` records the campaigns and how to rerun them.
//!
//! The targets drive public entry points only, with a fake peer whose frames come from the
//! input ([`frames`]):
//!
//! | target | the party under test | what the input is |
//! | --- | --- | --- |
//! | `hello` | [`handshake`](blindjoin_core::handshake::handshake) | the peer's hello frame |
//! | `verdict` | the same | the peer's verdict frame, after a valid hello |
//! | `kkrt16`, `cm20`, `cm20_mal`, `psz14`, `gbf`, `rgbf`, `rr17a`, `rr17_de`, `rr17_ec`, `dkt10`, `circuit_gmw`, `circuit_gmw_scalar`, `circuit_yao`, `ecdh`, `dh_ffc`, `ecdh_nist`, `rsa_blind`, `naive` | `Protocol::receive` or `Protocol::send` (`dh_ffc` and `rsa_blind` at κ = 80, the others at 128) over the ideal base OT | a selector byte, then the peer's frames after a valid handshake |
//! | `cm20_mal_endemic`, `rr17a_endemic`, `rr17_de_endemic`, `rr17_ec_endemic` | the same protocols over their real base OT (Masny-Rindal endemic OT) | the same, the first frames the endemic OT's |
//! | `base_ot` | Chou-Orlandi and endemic OT, sender or receiver (and the ideal base OT's receiver) | a selector byte, then the peer's frames |
//! | `ot_ext` | IKNP, KOS, KK13, KKRT and OOS16 in the roles that read | three selector bytes, then the peer's frames |
//! | `csv` | `blindjoin_cli::input::read_input_from`, CSV mode | a selector byte, then the file |
//! | `lines` | the same, one key per line | a selector byte, then the file |
//! | `link` | `blindjoin_core::transport::check_link_hello` | the peer's link hello frame |
//! | `finish` | `blindjoin_core::finish` in either role, over the transcript wrapper | a selector byte, then the peer's frames |
//! | `aided_server` | the server-aided PSI server, [`Server::serve`](blindjoin_psi::protocols::server_aided::server::Server::serve) on a `MemoryStore`, beside honest clients (`kmrs_semi`, `kmrs_mal`, `kmrs_fair`, `kmrs_size`) | a selector byte, then one client's frames |
//! | `aided_client` | a server-aided client (`Protocol::client`) after a replayed key agreement | a selector byte, then the server's frames |
//! | `aided_key` | the same client's exchange with the other clients: key agreement or coin toss, `kmrs_size`'s labels and bit vector | a selector byte, then the other client's frames after a real handshake |
//! | `bucketed` | `blindjoin_cli::bucketed`'s run handshake, proposals, lane handshake, counts, finished buckets and lane end, either role | a selector byte, then the peer's frames on two lanes |
//! | `rundir` | `blindjoin_cli::rundir::RunDir::open` and what a resume reads after it | a selector byte, then the run directory's files |
//!
//! The fake peer's frames are queued on an in-memory channel before the party under test
//! starts, and the peer's sending direction is then closed: the party reads them in order and
//! gets [`Error::PeerClosed`](blindjoin_core::Error::PeerClosed) once they are used up, so no
//! run ever waits. The party's RNG is seeded, and the fake peer's handshake is the real one
//! with a seeded RNG, so a run is a function of its input alone. The server-aided targets
//! (module `aided`) replay a real run of 2 or 3 clients and a server, recorded once per process,
//! for the parties that the input does not play; `aided_server` serves those honest clients on
//! threads of their own and bounds every wait of the server by its run timeout. `bucketed`
//! (module `bucketed`) runs `blindjoin_cli::bucketed`'s steps in the order of its `run` up to
//! where the bucket sessions begin; `rundir` (module `rundir`) writes its input's files to a
//! fresh directory and opens it as a resume does.

mod aided;
pub mod alloc;
mod bucketed;
pub mod frames;
pub mod mutate;
mod peer;
mod rundir;
pub mod seeds;
mod targets;

pub use aided::{fuzz_aided_client, fuzz_aided_key, fuzz_aided_server};
pub use bucketed::fuzz_bucketed;
pub use rundir::fuzz_rundir;
pub use targets::{
    fuzz_base_ot, fuzz_circuit_gmw, fuzz_circuit_gmw_scalar, fuzz_circuit_yao, fuzz_cm20,
    fuzz_cm20_mal, fuzz_cm20_mal_endemic, fuzz_csv, fuzz_dh_ffc, fuzz_dkt10, fuzz_ecdh,
    fuzz_ecdh_nist, fuzz_finish, fuzz_gbf, fuzz_hello, fuzz_kkrt16, fuzz_lines, fuzz_link,
    fuzz_naive, fuzz_ot_ext, fuzz_psz14, fuzz_rgbf, fuzz_rr17_de, fuzz_rr17_de_endemic,
    fuzz_rr17_ec, fuzz_rr17_ec_endemic, fuzz_rr17a, fuzz_rr17a_endemic, fuzz_rsa_blind,
    fuzz_verdict,
};

/// What a target returns: `Ok` or the text of a clean error. Anything else (a panic, a hang, an
/// oversized allocation) is a finding.
pub type Outcome = Result<(), String>;

/// A fuzz target: its name (the corpus directory and the AFL binary's argument) and function.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The name: `corpus/<name>/` holds its seeds.
    pub name: &'static str,
    /// The target.
    pub run: fn(&[u8]) -> Outcome,
}

/// Every target, in the order of the table in the crate doc.
pub static TARGETS: &[Target] = &[
    Target {
        name: "hello",
        run: fuzz_hello,
    },
    Target {
        name: "verdict",
        run: fuzz_verdict,
    },
    Target {
        name: "kkrt16",
        run: fuzz_kkrt16,
    },
    Target {
        name: "cm20",
        run: fuzz_cm20,
    },
    Target {
        name: "cm20_mal",
        run: fuzz_cm20_mal,
    },
    Target {
        name: "psz14",
        run: fuzz_psz14,
    },
    Target {
        name: "gbf",
        run: fuzz_gbf,
    },
    Target {
        name: "rgbf",
        run: fuzz_rgbf,
    },
    Target {
        name: "rr17a",
        run: fuzz_rr17a,
    },
    Target {
        name: "rr17_de",
        run: fuzz_rr17_de,
    },
    Target {
        name: "rr17_ec",
        run: fuzz_rr17_ec,
    },
    Target {
        name: "cm20_mal_endemic",
        run: fuzz_cm20_mal_endemic,
    },
    Target {
        name: "rr17a_endemic",
        run: fuzz_rr17a_endemic,
    },
    Target {
        name: "rr17_de_endemic",
        run: fuzz_rr17_de_endemic,
    },
    Target {
        name: "rr17_ec_endemic",
        run: fuzz_rr17_ec_endemic,
    },
    Target {
        name: "dkt10",
        run: fuzz_dkt10,
    },
    Target {
        name: "circuit_gmw",
        run: fuzz_circuit_gmw,
    },
    Target {
        name: "circuit_gmw_scalar",
        run: fuzz_circuit_gmw_scalar,
    },
    Target {
        name: "circuit_yao",
        run: fuzz_circuit_yao,
    },
    Target {
        name: "ecdh",
        run: fuzz_ecdh,
    },
    Target {
        name: "dh_ffc",
        run: fuzz_dh_ffc,
    },
    Target {
        name: "ecdh_nist",
        run: fuzz_ecdh_nist,
    },
    Target {
        name: "rsa_blind",
        run: fuzz_rsa_blind,
    },
    Target {
        name: "naive",
        run: fuzz_naive,
    },
    Target {
        name: "base_ot",
        run: fuzz_base_ot,
    },
    Target {
        name: "ot_ext",
        run: fuzz_ot_ext,
    },
    Target {
        name: "csv",
        run: fuzz_csv,
    },
    Target {
        name: "lines",
        run: fuzz_lines,
    },
    Target {
        name: "link",
        run: fuzz_link,
    },
    Target {
        name: "finish",
        run: fuzz_finish,
    },
    Target {
        name: "aided_server",
        run: fuzz_aided_server,
    },
    Target {
        name: "aided_client",
        run: fuzz_aided_client,
    },
    Target {
        name: "aided_key",
        run: fuzz_aided_key,
    },
    Target {
        name: "bucketed",
        run: fuzz_bucketed,
    },
    Target {
        name: "rundir",
        run: fuzz_rundir,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
