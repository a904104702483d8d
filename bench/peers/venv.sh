# Sourced by the run-*.sh baselines: makes (once) a venv holding one pinned PyPI package.
#
# Before sourcing, set:
#   PKG_NAME, PKG_VERSION  the package and its pinned version (binary wheels only)
#   VENV                   the venv's location
#   CHECK                  a Python statement that exits 0 when the right version imports
#   LOG_TAG                the prefix of log lines
# PYTHON (default python3) is the interpreter the venv is made with. After sourcing, the venv
# exists and "$VENV/bin/python" imports the package, or the script has exited with a message.
# If $PYTHON lacks venv/ensurepip, python3-venv is installed with apt-get (needs root).

PYTHON="${PYTHON:-python3}"

log() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }

venv_ok() {
    [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$CHECK" >/dev/null 2>&1
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
    # Binary wheels only: building these packages from source needs tools (Bazel) or time
    # this machine does not have.
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
        --only-binary=:all: "$PKG_NAME==$PKG_VERSION" >&2
    if ! venv_ok; then
        log "$PKG_NAME==$PKG_VERSION did not import from $VENV"
        exit 1
    fi
fi
