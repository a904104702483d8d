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
PYTHON="${PYTHON:-python3}"

log() { printf '[run-duckdb] %s\n' "$*" >&2; }

venv_ok() {
    [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c "import sys, duckdb; sys.exit(duckdb.__version__ != '$PKG_VERSION')" \
            >/dev/null 2>&1
}

ensure_venv_module() {
    # Debian ships the venv module's ensurepip part in python3-venv (python3.X-venv).
    if "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
        return 0
    fi
    log "$PYTHON lacks the venv/ensurepip modules; installing python3-venv with apt-get"
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        log "need root and apt-get to install python3-venv; install it by hand and rerun"
        exit 1
    fi
    local pyver
    pyver="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # python3-venv pulls in the versioned package for Debian's default python3;
    # also ask for the versioned one in case $PYTHON is not the default.
    apt-get install -y -qq python3-venv >&2 ||
        apt-get install -y -qq "python${pyver}-venv" >&2
    if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
        apt-get install -y -qq "python${pyver}-venv" >&2
    fi
}

if ! venv_ok; then
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        log "no $PYTHON on PATH (on Debian: apt-get install python3)"
        exit 1
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        ensure_venv_module
        rm -rf "$VENV"
        mkdir -p "$(dirname "$VENV")"
        log "creating venv at $VENV with $("$PYTHON" --version 2>&1)"
        "$PYTHON" -m venv "$VENV"
    fi
    log "installing $PKG_NAME==$PKG_VERSION into $VENV"
    # Binary wheels only: building DuckDB from the sdist takes far too long here.
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
        --only-binary=:all: "$PKG_NAME==$PKG_VERSION" >&2
    if ! venv_ok; then
        log "$PKG_NAME==$PKG_VERSION did not import from $VENV"
        exit 1
    fi
fi

if [ "${1:-}" = "--print-python" ]; then
    printf '%s\n' "$VENV/bin/python"
    exit 0
fi

exec "$VENV/bin/python" "$SCRIPT_DIR/duckdb_join.py" "$@"
