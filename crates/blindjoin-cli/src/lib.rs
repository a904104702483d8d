//! The library behind the `blindjoin` command: input reading and normalisation, the parties'
//! runs on files, output, reports and benchmarks. The binary (`src/main.rs`) parses the command
//! line and calls [`cli::run`]; the fuzz targets and tests reach the readers through here.

pub mod aided;
pub mod bench;
pub mod bench_aided;
pub mod bench_ot;
pub mod bucket;
pub mod bucketed;
pub mod cli;
pub mod costmodel;
pub mod demo;
pub mod error;
pub mod input;
pub mod keyed;
pub mod keygen;
pub mod link;
pub mod netem;
pub mod normalize;
pub mod output;
pub mod params;
pub mod party;
pub mod progress;
pub mod report;
pub mod rundir;
pub mod serve;
pub mod signals;
pub mod spill;
pub mod suite;
pub mod synth;
pub mod values;
