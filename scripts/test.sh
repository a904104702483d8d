#!/usr/bin/env bash
# Sets up what the tests need on a fresh machine and runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo is missing; install Rust (https://rustup.rs) first" >&2
  exit 1
fi

# Lints and formatting are part of the test: a warning fails the run.
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
