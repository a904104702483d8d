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
LOG_TAG=run-openmined-psi
CHECK="import sys, private_set_intersection.python as p; sys.exit(p.__version__ != '$PKG_VERSION')"
# shellcheck source=venv.sh
source "$SCRIPT_DIR/venv.sh"

# openmined-psi's native module creates no threads (checked: it imports no
# pthread_create and strace shows no clone); pin the usual pools to 1 anyway so
# nothing else in the process can fan out.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    NUMEXPR_NUM_THREADS=1 RAYON_NUM_THREADS=1

exec "$VENV/bin/python" "$SCRIPT_DIR/openmined_psi.py" "$@"
