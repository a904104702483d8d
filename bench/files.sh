#!/usr/bin/env bash
# End-to-end benchmark on files: blindjoin's two parties as two processes over
# loopback against the plaintext semi-join DuckDB does on the same files.
#
#   bench/files.sh [--sizes 2^16,2^20] [--protocol kkrt16] [--reps 3] [--threads 2]
#                  [--dir DIR] [--keep] [--json OUT.json] [--bin PATH]
#
# For each size n: `blindjoin gen --size n A.csv B.csv`, both converted to Parquet
# once with DuckDB (every column VARCHAR); then, per repetition and alternating,
#   blindjoin send (B, background, listening on 127.0.0.1) + blindjoin receive
#   (A, timed from outside) on the CSV files, DuckDB with 2 and 1 threads on the
#   CSV files, and the same three on the Parquet files.
# The matched rows of blindjoin and of DuckDB must be the same (whole rows), or
# the script fails. A markdown table of medians goes to stdout; every raw number
# to --json. See bench/README.md.
#
# Environment: BLINDJOIN_BIN (the binary, like --bin), BLINDJOIN_DUCKDB_VENV (see
# bench/peers/run-duckdb.sh).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
PEERS="$SCRIPT_DIR/peers"

SIZES="2^16,2^20"
PROTOCOL="kkrt16"
REPS=3
THREADS=2
DIR=""
KEEP=0
JSON_OUT=""
BIN="${BLINDJOIN_BIN:-}"

log() { printf '[files] %s\n' "$*" >&2; }
die() {
    printf '[files] error: %s\n' "$*" >&2
    exit 1
}

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}

need_arg() { [ "$#" -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }

while [ "$#" -gt 0 ]; do
    case "$1" in
        --sizes) need_arg "$@"; SIZES="$2"; shift 2 ;;
        --sizes=*) SIZES="${1#*=}"; shift ;;
        --protocol) need_arg "$@"; PROTOCOL="$2"; shift 2 ;;
        --protocol=*) PROTOCOL="${1#*=}"; shift ;;
        --reps) need_arg "$@"; REPS="$2"; shift 2 ;;
        --reps=*) REPS="${1#*=}"; shift ;;
        --threads) need_arg "$@"; THREADS="$2"; shift 2 ;;
        --threads=*) THREADS="${1#*=}"; shift ;;
        --dir) need_arg "$@"; DIR="$2"; shift 2 ;;
        --dir=*) DIR="${1#*=}"; shift ;;
        --keep) KEEP=1; shift ;;
        --json) need_arg "$@"; JSON_OUT="$2"; shift 2 ;;
        --json=*) JSON_OUT="${1#*=}"; shift ;;
        --bin) need_arg "$@"; BIN="$2"; shift 2 ;;
        --bin=*) BIN="${1#*=}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done

[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"
[[ "$THREADS" =~ ^[1-9][0-9]*$ ]] || die "--threads must be a positive integer"
if [ "${BASH_VERSINFO[0]}" -lt 5 ] ||
    { [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -lt 1 ]; }; then
    die "needs bash 5.1 or newer (wait -n -p)"
fi
case "$JSON_OUT" in
    "" | /*) ;;
    *) JSON_OUT="$PWD/$JSON_OUT" ;;
esac

# --- state and cleanup ------------------------------------------------------

WORK=""
REMOVE=()
PIDS=()

# Is process $1 there and not a zombie?
running() {
    local stat
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    [ "${stat%% *}" != Z ]
}

stop_pid() {
    # Each party runs as the leader of its own process group (setsid): time(1)
    # with blindjoin as its child, or blindjoin alone. Stop blindjoin first so
    # that time(1) reaps it and exits; then whatever is left of the group.
    local pid="$1" kids i
    running "$pid" || { wait "$pid" 2>/dev/null || true; return 0; }
    kids="$(cat "/proc/$pid/task/"*/children 2>/dev/null || true)"
    if [ -n "$kids" ]; then
        # shellcheck disable=SC2086 # a list of pids
        kill -TERM $kids 2>/dev/null || true
    else
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    fi
    for ((i = 0; i < 500; i++)); do
        running "$pid" || break
        sleep 0.01
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local rc=$?
    local pid
    for pid in "${PIDS[@]+"${PIDS[@]}"}"; do
        stop_pid "$pid"
    done
    if [ "$KEEP" -eq 0 ]; then
        local path
        for path in "${REMOVE[@]+"${REMOVE[@]}"}"; do
            rm -rf -- "$path"
        done
    elif [ -n "$WORK" ]; then
        log "files kept in $WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

forget_pid() {
    local keep=() pid
    for pid in "${PIDS[@]+"${PIDS[@]}"}"; do
        [ "$pid" = "$1" ] || keep+=("$pid")
    done
    PIDS=("${keep[@]+"${keep[@]}"}")
}

# --- tools --------------------------------------------------------------------

if [ -z "$BIN" ]; then
    command -v cargo >/dev/null 2>&1 || die "no --bin, no BLINDJOIN_BIN and no cargo to build one"
    log "building blindjoin-cli (cargo build --release -p blindjoin-cli)"
    (cd "$REPO_ROOT" && cargo build --release -p blindjoin-cli >&2)
    BIN="${CARGO_TARGET_DIR:-$REPO_ROOT/target}/release/blindjoin"
fi
[ -x "$BIN" ] || die "blindjoin binary not found or not executable: $BIN"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
BIN_VERSION="$("$BIN" --version 2>&1 | head -n 1)"

log "DuckDB venv"
DUCKPY="$("$PEERS/run-duckdb.sh" --print-python)"
[ -x "$DUCKPY" ] || die "run-duckdb.sh gave no interpreter"
helper() { "$DUCKPY" "$SCRIPT_DIR/files.py" "$@"; }

TIME_BIN=""
if [ ! -x /usr/bin/time ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing Debian's time(1) for peak RSS"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >&2 ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >&2; } ||
        log "could not install time(1); peak RSS comes from the JSON reports if they have it"
fi
if [ -x /usr/bin/time ]; then TIME_BIN=/usr/bin/time; fi

# Options the binary has: pass --quiet only if it exists.
QUIET=()
if "$BIN" send --help 2>&1 | grep -q -- '--quiet'; then QUIET=(--quiet); fi

# --- working directory --------------------------------------------------------

if [ -n "$DIR" ]; then
    mkdir -p "$DIR"
    WORK="$(cd "$DIR" && pwd)/files-bench.$$"
    mkdir "$WORK"
else
    WORK="$(mktemp -d /tmp/blindjoin-files.XXXXXX)"
fi
REMOVE+=("$WORK")
RUNS="$WORK/runs.jsonl"
: >"$RUNS"

# --- one blindjoin run ----------------------------------------------------------

# Is there a listening TCP socket on 127.0.0.1:$1?
listening() {
    local hex
    hex="$(printf '%04X' "$1")"
    grep -q "^ *[0-9]*: 0100007F:$hex 00000000:0000 0A " /proc/net/tcp 2>/dev/null
}

show_tail() {
    local what="$1" file="$2"
    printf '[files] --- last lines of %s (%s) ---\n' "$what" "$file" >&2
    tail -n 20 "$file" >&2 || true
    printf '[files] ---\n' >&2
}

# run_blindjoin DIR FORMAT A B COLUMN
# Sets LAST_WALL (receiver wall seconds, outside) and LAST_ERROR; returns 1 on a
# failure of either party (after stopping the other).
LAST_WALL=""
LAST_ERROR=""
LAST_ERROR_FILE=""
run_blindjoin() {
    local d="$1" fmt="$2" a="$3" b="$4" col="$5"
    local port spid rpid t0 t1 st rst fin=""
    local out="$d/out.$fmt.csv"
    if [ "$fmt" = parquet ]; then out="$d/out.parquet"; fi
    rm -f "$d/R.json" "$d/S.json" "$out"
    local time_s=() time_r=()
    if [ -n "$TIME_BIN" ]; then
        time_s=("$TIME_BIN" -f %M -o "$d/S.time")
        time_r=("$TIME_BIN" -f %M -o "$d/R.time")
    fi
    port="$(helper port)"
    LAST_ERROR=""

    setsid "${time_s[@]+"${time_s[@]}"}" "$BIN" --threads "$THREADS" send \
        -i "$b" -c "$col" --normalize email --protocol "$PROTOCOL" \
        --listen "127.0.0.1:$port" --json "$d/S.json" "${QUIET[@]+"${QUIET[@]}"}" \
        </dev/null >"$d/S.out" 2>"$d/S.err" &
    spid=$!
    PIDS+=("$spid")

    # The sender listens at once (it reads its file while it waits): wait for the port,
    # so the receiver's clock does not include the sender's process start.
    while ! listening "$port"; do
        if ! running "$spid"; then
            st=0
            wait "$spid" || st=$?
            forget_pid "$spid"
            LAST_ERROR="blindjoin send exited with status $st before listening on 127.0.0.1:$port"
            LAST_ERROR_FILE="$d/S.err"
            return 1
        fi
        sleep 0.01
    done

    t0=$EPOCHREALTIME
    setsid "${time_r[@]+"${time_r[@]}"}" "$BIN" --threads "$THREADS" receive \
        -i "$a" -c "$col" --normalize email --protocol "$PROTOCOL" \
        --connect "127.0.0.1:$port" -o "$out" --json "$d/R.json" \
        </dev/null >"$d/R.out" 2>"$d/R.err" &
    rpid=$!
    PIDS+=("$rpid")

    # Whichever ends first: a failed sender stops the run at once.
    rst=""
    st=0
    wait -n -p fin "$spid" "$rpid" || st=$?
    if [ "$fin" = "$rpid" ]; then
        t1=$EPOCHREALTIME
        rst=$st
        forget_pid "$rpid"
        if [ "$rst" -ne 0 ]; then
            stop_pid "$spid"
            forget_pid "$spid"
            LAST_ERROR="blindjoin receive exited with status $rst"
            LAST_ERROR_FILE="$d/R.err"
            return 1
        fi
        # The sender has sent its last message by now; give it a minute to exit.
        local waited=0
        while running "$spid" && [ "$waited" -lt 6000 ]; do
            sleep 0.01
            waited=$((waited + 1))
        done
        st=0
        if running "$spid"; then
            stop_pid "$spid"
            st=124
        else
            wait "$spid" || st=$?
        fi
        forget_pid "$spid"
        if [ "$st" -ne 0 ]; then
            LAST_ERROR="blindjoin send exited with status $st after the receiver finished"
            LAST_ERROR_FILE="$d/S.err"
            return 1
        fi
    else
        forget_pid "$spid"
        if [ "$st" -ne 0 ]; then
            stop_pid "$rpid"
            forget_pid "$rpid"
            LAST_ERROR="blindjoin send exited with status $st"
            LAST_ERROR_FILE="$d/S.err"
            return 1
        fi
        rst=0
        wait "$rpid" || rst=$?
        t1=$EPOCHREALTIME
        forget_pid "$rpid"
        if [ "$rst" -ne 0 ]; then
            LAST_ERROR="blindjoin receive exited with status $rst"
            LAST_ERROR_FILE="$d/R.err"
            return 1
        fi
    fi
    if [ ! -s "$d/R.json" ] || [ ! -s "$d/S.json" ]; then
        LAST_ERROR="a party wrote no JSON report"
        LAST_ERROR_FILE="$d/R.err"
        return 1
    fi
    LAST_WALL="$("$DUCKPY" -c 'import sys; print("%.6f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$t0" "$t1")"
    return 0
}

# Does this failure say that blindjoin cannot read a Parquet file?
parquet_unsupported() {
    local err_file="$1" a="$2" b="$3"
    grep -qiE 'unsupported|not supported|unknown format|parquet' "$err_file" ||
        grep -qF -e "$(basename "$a")" -e "$(basename "$b")" "$err_file"
}

run_duckdb() {
    local d="$1" a="$2" b="$3" col="$4" threads="$5" out="$6" result="$7"
    if ! "$DUCKPY" "$PEERS/duckdb_join.py" "$a" "$b" --column "$col" --threads "$threads" \
        --out "$out" --reps 1 --json "$result" >/dev/null 2>"$d/duckdb.err"; then
        show_tail "DuckDB's stderr" "$d/duckdb.err"
        die "DuckDB failed on $(basename "$a") with $threads threads"
    fi
}

# --- the runs -----------------------------------------------------------------------

PARQUET_STATUS="untested"
PARQUET_REASON=""
IFS=',' read -r -a SIZE_TOKENS <<<"$SIZES"
[ "${#SIZE_TOKENS[@]}" -gt 0 ] || die "--sizes is empty"
SIZE_LIST=()
for tok in "${SIZE_TOKENS[@]}"; do
    SIZE_LIST+=("$(helper parse-size "$tok")")
done
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
log "blindjoin: $BIN ($BIN_VERSION), protocol $PROTOCOL, $THREADS threads per party; reps $REPS; work dir $WORK"

for n in "${SIZE_LIST[@]}"; do
    sd="$WORK/n$n"
    mkdir -p "$sd"
    A="$sd/A.csv"
    B="$sd/B.csv"
    log "n=$n: generating files"
    "$BIN" gen --size "$n" "$A" "$B" >"$sd/gen.out" 2>&1 || {
        show_tail "blindjoin gen's output" "$sd/gen.out"
        die "blindjoin gen failed"
    }
    COL="$(helper pick-column "$A")"
    log "n=$n: key column '$COL'; converting to Parquet"
    helper to-parquet "$A" "$sd/A.parquet"
    helper to-parquet "$B" "$sd/B.parquet"
    A_BYTES="$(stat -c %s "$A")"
    AP_BYTES="$(stat -c %s "$sd/A.parquet")"

    for ((rep = 1; rep <= REPS; rep++)); do
        for fmt in csv parquet; do
            if [ "$fmt" = csv ]; then
                a="$A" b="$B" bytes="$A_BYTES" dext=csv
            else
                a="$sd/A.parquet" b="$sd/B.parquet" bytes="$AP_BYTES" dext=parquet
            fi
            d="$sd/rep$rep/$fmt"
            mkdir -p "$d"

            if [ "$fmt" = csv ] || [ "$PARQUET_STATUS" != "not supported" ]; then
                if run_blindjoin "$d" "$fmt" "$a" "$b" "$COL"; then
                    if [ "$fmt" = parquet ]; then PARQUET_STATUS="supported"; fi
                    helper record-blindjoin --runs "$RUNS" --size "$n" --rep "$rep" \
                        --format "$fmt" --input-bytes "$bytes" --wall "$LAST_WALL" \
                        --r-json "$d/R.json" --s-json "$d/S.json" \
                        --r-time "$d/R.time" --s-time "$d/S.time"
                    log "n=$n rep $rep $fmt: blindjoin receiver ${LAST_WALL}s"
                elif [ "$fmt" = parquet ] && [ "$PARQUET_STATUS" = untested ] &&
                    parquet_unsupported "$LAST_ERROR_FILE" "$a" "$b"; then
                    PARQUET_STATUS="not supported"
                    PARQUET_REASON="$LAST_ERROR: $(grep -v '^Command exited' "$LAST_ERROR_FILE" | tail -n 1)"
                    log "n=$n: blindjoin does not read Parquet: $PARQUET_REASON"
                else
                    show_tail "the party's stderr" "$LAST_ERROR_FILE"
                    die "n=$n rep $rep $fmt: $LAST_ERROR"
                fi
            fi

            for t in 2 1; do
                run_duckdb "$d" "$a" "$b" "$COL" "$t" "$d/duckdb.${t}t.$dext" "$d/duckdb.${t}t.json"
                helper record-duckdb --runs "$RUNS" --size "$n" --rep "$rep" \
                    --result "$d/duckdb.${t}t.json"
            done
        done
    done

    # The same rows from every engine (last repetition; counts of the others are
    # in the runs and checked in the report).
    d="$sd/rep$REPS"
    files=("$d/csv/out.csv.csv" "$d/csv/duckdb.2t.csv" "$d/csv/duckdb.1t.csv"
        "$d/parquet/duckdb.2t.parquet" "$d/parquet/duckdb.1t.parquet")
    if [ "$PARQUET_STATUS" = supported ]; then files+=("$d/parquet/out.parquet"); fi
    if ! helper compare --column "$COL" "${files[@]}"; then
        KEEP=1
        die "n=$n: blindjoin's and DuckDB's matched rows differ (files kept in $WORK)"
    fi
    # Matched row counts must not change between repetitions or engines.
    helper check-counts --runs "$RUNS" --size "$n" ||
        { KEEP=1; die "n=$n: matched row counts differ (files kept in $WORK)"; }

    # Free the disk before the next size, unless asked to keep.
    if [ "$KEEP" -eq 0 ]; then
        rm -f "$A" "$B" "$sd/A.parquet" "$sd/B.parquet"
        find "$sd" -type f \( -name 'out.*' -o -name 'duckdb.*t.csv' -o -name 'duckdb.*t.parquet' \) \
            -exec rm -f {} +
    fi
done

META="$WORK/meta.json"
helper write-meta --out "$META" \
    "binary=$BIN" "binary_version=$BIN_VERSION" "protocol=$PROTOCOL" \
    "threads_per_party=$THREADS" "reps=$REPS" "sizes=$SIZES" \
    "blindjoin_parquet=$PARQUET_STATUS${PARQUET_REASON:+: $PARQUET_REASON}" \
    "loadavg_start=$LOAD_START" "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" \
    "time_rss=${TIME_BIN:-none}" \
    "commit=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$JSON_OUT" ]; then
    helper report --runs "$RUNS" --meta "$META" --json "$JSON_OUT"
    log "raw numbers in $JSON_OUT"
else
    helper report --runs "$RUNS" --meta "$META"
fi
