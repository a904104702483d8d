//! Writes the seed corpus: `cargo run -p blindjoin-fuzz --example seeds [DIR]` (default: this
//! crate's `corpus/`), one directory per target, one file per seed. Existing files of the same
//! names are replaced; others are left alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus"));
    let seeds = blindjoin_fuzz::seeds::generate();
    for s in &seeds {
        let d = dir.join(s.target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(&s.name), &s.data).unwrap();
    }
    println!("{} seeds written under {}", seeds.len(), dir.display());
}
