#!/usr/bin/env bash
# Sets up what the tests need on a fresh machine and runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo is missing; install Rust (https://rustup.rs) first" >&2
  exit 1
fi

# The server-aided PSI server's Redis store is tested against a real redis-server (each test
# starts its own on a free loopback port); Debian's package is enough.
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: redis-server is missing; install it (Debian: apt-get install redis-server)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server >&2
fi

# The benchmark suites' plots set their text in DejaVu Sans (Debian: fonts-dejavu-core).
if [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] \
  && [ ! -e /usr/share/fonts/dejavu/DejaVuSans.ttf ] \
  && [ ! -e /usr/share/fonts/TTF/DejaVuSans.ttf ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: the DejaVu Sans font is missing; install it (Debian: apt-get install fonts-dejavu-core)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq fonts-dejavu-core >&2
fi

# Lints and formatting are part of the test: a warning fails the run.
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked

# The Python package (crates/blindjoin-py): built into a virtual environment of its own with
# maturin, in the py-test profile (release without fat LTO), and tested with pytest (both
# parties in one process over loopback; the CLI tests above built target/debug/blindjoin, which
# the interoperability tests run; blindjoin.spark's tests run each party on a local Spark of its
# own, the sender in a second process).
PYTHON="${PYTHON:-python3}"
VENV="${BLINDJOIN_PY_VENV:-target/py-venv}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "scripts/test.sh: $PYTHON is missing; install Python 3.11 or newer first" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    # Debian ships the venv module's ensurepip part in python3-venv (python3.X-venv).
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
      echo "scripts/test.sh: $PYTHON cannot make a virtual environment; install python3-venv" >&2
      exit 1
    fi
    pyver="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq python3-venv >&2 || apt-get install -y -qq "python${pyver}-venv" >&2
    if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
      apt-get install -y -qq "python${pyver}-venv" >&2
    fi
  fi
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
fi
# blindjoin.spark's tests run two local Spark instances (pyspark, on a Java 17 runtime).
if ! command -v java >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: java is missing; install a Java 17 runtime (Debian: apt-get install openjdk-17-jre-headless)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq openjdk-17-jre-headless >&2
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  maturin==1.16.0 pytest==9.2.0 pandas==3.1.1 pyarrow==26.0.1 pyspark==4.3.0
(
  cd crates/blindjoin-py
  VIRTUAL_ENV="$(cd "../../$VENV" && pwd)" "../../$VENV/bin/maturin" develop --quiet \
    --profile py-test --locked
)
"$VENV/bin/python" -m pytest crates/blindjoin-py/tests -q
