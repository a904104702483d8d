#!/usr/bin/env bash
# Baseline benchmark of the PyPI package openmined-psi (ECDH PSI on P-256).
#
# Makes (once) a venv with openmined-psi==2.0.6 from PyPI and runs
# openmined_psi.py in it, passing all arguments through, e.g.
#
#   bench/peers/run-openmined-psi.sh --sizes 2^16,2^18 --reps 3 [--json out.json]
#
# Environment:
#   BLINDJOIN_PEER_VENV  venv location (default ~/.cache/blindjoin/openmined-psi-venv)
#   PYTHON               interpreter used to create the venv (default python3)
set -euo pipefail

PKG_NAME=openmined-psi
PKG_VERSION=2.0.6
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${BLINDJOIN_PEER_VENV:-$HOME/.cache/blindjoin/openmined-psi-venv}"
PYTHON="${PYTHON:-python3}"

log() { printf '[run-openmined-psi] %s\n' "$*" >&2; }

venv_ok() {
    [ -x "$VENV/bin/python" ] &&
        "$VENV/bin/python" -c "import sys, private_set_intersection.python as p; sys.exit(p.__version__ != '$PKG_VERSION')" \
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

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    log "no $PYTHON on PATH (on Debian: apt-get install python3)"
    exit 1
fi

if ! venv_ok; then
    if [ ! -x "$VENV/bin/python" ]; then
        ensure_venv_module
        rm -rf "$VENV"
        mkdir -p "$(dirname "$VENV")"
        log "creating venv at $VENV with $("$PYTHON" --version 2>&1)"
        "$PYTHON" -m venv "$VENV"
    fi
    log "installing $PKG_NAME==$PKG_VERSION into $VENV"
    # Binary wheels only: the sdist needs a Bazel build, which cannot work here.
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
        --only-binary=:all: "$PKG_NAME==$PKG_VERSION" >&2
    if ! venv_ok; then
        log "$PKG_NAME==$PKG_VERSION did not import from $VENV"
        exit 1
    fi
fi

# openmined-psi's native module creates no threads (checked: it imports no
# pthread_create and strace shows no clone); pin the usual pools to 1 anyway so
# nothing else in the process can fan out.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    NUMEXPR_NUM_THREADS=1 RAYON_NUM_THREADS=1

exec "$VENV/bin/python" "$SCRIPT_DIR/openmined_psi.py" "$@"
