#!/usr/bin/env bash
# Plaintext baseline: the semi-join a database does, timed with DuckDB.
#
# Makes (once) a venv with duckdb==2.0.0 from PyPI and runs duckdb_join.py in
# it, passing all arguments through, e.g.
#
#   bench/peers/run-duckdb.sh A.csv B.csv --column email --threads 2 \
#       --out matched.csv --reps 3 [--json out.json]
#
#   bench/peers/run-duckdb.sh --print-python
#       only makes the venv and prints its interpreter (used by bench/files.sh)
#
# Environment:
#   BLINDJOIN_DUCKDB_VENV  venv location (default ~/.cache/blindjoin/duckdb-venv)
#   PYTHON                 interpreter used to create the venv (default python3)
set -euo pipefail

PKG_NAME=duckdb
PKG_VERSION=2.0.0
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${BLINDJOIN_DUCKDB_VENV:-$HOME/.cache/blindjoin/duckdb-venv}"
LOG_TAG=run-duckdb
CHECK="import sys, duckdb; sys.exit(duckdb.__version__ != '$PKG_VERSION')"
# shellcheck source=venv.sh
source "$SCRIPT_DIR/venv.sh"

if [ "${1:-}" = "--print-python" ]; then
    printf '%s\n' "$VENV/bin/python"
    exit 0
fi

exec "$VENV/bin/python" "$SCRIPT_DIR/duckdb_join.py" "$@"
