#!/usr/bin/env bash
# Runs the AFL++ campaigns of the fuzz targets (crates/blindjoin-fuzz; docs/FUZZING.md).
#
#   bash scripts/fuzz.sh [TARGET ...]         every target if none is named
#
# FUZZ_EXECS inputs per target (default 1000000), FUZZ_TIMEOUT_MS per input (default 2000);
# FUZZ_SECONDS, if set, also ends each target after that many seconds (a slow target's bound).
# Needs cargo-afl (`cargo install cargo-afl`, which builds AFL++ on first use; a C compiler and
# make). Builds the harness with `cargo afl build --release` into $CARGO_TARGET_DIR/afl (default
# target/afl), writes AFL's output under that directory's out/, and prints one line per target:
# inputs run, time, crashes, hangs. Exits non-zero if any target crashed or hung.
#
# `spark_registry` (the Spark driver's lane registry, crates/blindjoin-py/fuzz/registry.py) is
# Python: atheris (libFuzzer) runs it in the virtual environment that scripts/test.sh builds
# (BLINDJOIN_PY_VENV, default target/py-venv), installing atheris there if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

execs=${FUZZ_EXECS:-1000000}
timeout_ms=${FUZZ_TIMEOUT_MS:-2000}
limit=()
if [ -n "${FUZZ_SECONDS:-}" ]; then
  limit=(-V "$FUZZ_SECONDS")
fi
dir=${CARGO_TARGET_DIR:-target}/afl
mkdir -p "$dir/out"
dir=$(cd "$dir" && pwd)
bin=$dir/release/blindjoin-fuzz-afl

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(spark_registry hello verdict link finish kkrt16 cm20 cm20_mal psz14 gbf rgbf rr17a rr17_de rr17_ec dkt10 circuit_gmw circuit_gmw_scalar circuit_yao ecdh dh_ffc ecdh_nist rsa_blind naive
    cm20_mal_endemic rr17a_endemic rr17_de_endemic rr17_ec_endemic
    base_ot ot_ext csv lines aided_server aided_client aided_key bucketed rundir)
fi

status=0
built=0
for t in "${targets[@]}"; do
  if [ "$t" = spark_registry ]; then
    venv=${BLINDJOIN_PY_VENV:-target/py-venv}
    if ! "$venv/bin/python" -c 'import blindjoin.spark' >/dev/null 2>&1; then
      echo "spark_registry: no blindjoin in $venv; run bash scripts/test.sh once first"
      status=1
      continue
    fi
    "$venv/bin/python" -c 'import atheris' >/dev/null 2>&1 \
      || "$venv/bin/python" -m pip install -q atheris==3.0.0
    out=$dir/out/$t
    rm -rf "$out"
    mkdir -p "$out/queue" "$out/crashes"
    "$venv/bin/python" crates/blindjoin-py/fuzz/registry.py --seeds "$out/queue"
    secs=()
    if [ -n "${FUZZ_SECONDS:-}" ]; then
      secs=("-max_total_time=$FUZZ_SECONDS")
    fi
    start=$(date +%s)
    if "$venv/bin/python" crates/blindjoin-py/fuzz/registry.py "$out/queue" -runs="$execs" \
      -max_len=20000 -timeout=$(((timeout_ms + 999) / 1000)) -artifact_prefix="$out/crashes/" \
      "${secs[@]}" >"$out.log" 2>&1; then
      verdict="crashes 0"
    else
      verdict="a crash or timeout (see $out.log and $out/crashes)"
      status=1
    fi
    runs=$(grep -o 'Done [0-9]* runs' "$out.log" | grep -o '[0-9]*' || echo "?")
    echo "$t: $runs inputs in $(($(date +%s) - start)) s, corpus $(ls "$out/queue" | wc -l), $verdict"
    continue
  fi
  if [ $built = 0 ]; then
    CARGO_TARGET_DIR=$dir cargo afl build --release --quiet \
      --manifest-path crates/blindjoin-fuzz/afl/Cargo.toml
    built=1
  fi
  out=$dir/out/$t
  rm -rf "$out"
  # No CPU binding (the machine is shared), no core_pattern or frequency checks (not root-only
  # settings we may change), no UI.
  AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1 \
    cargo afl fuzz -i "crates/blindjoin-fuzz/corpus/$t" -o "$out" -E "$execs" "${limit[@]}" \
    -t "$timeout_ms" -- "$bin" "$t" >"$out.log" 2>&1 || true
  stats=$out/default/fuzzer_stats
  if [ ! -f "$stats" ]; then
    echo "$t: afl-fuzz did not run (see $out.log)"
    status=1
    continue
  fi
  get() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
  crashes=$(get saved_crashes)
  hangs=$(get saved_hangs)
  echo "$t: $(get execs_done) inputs in $(get run_time) s ($(get execs_per_sec)/s)," \
    "corpus $(get corpus_count), coverage $(get bitmap_cvg), crashes $crashes, hangs $hangs"
  if [ "$crashes" != 0 ] || [ "$hangs" != 0 ]; then
    status=1
  fi
done
exit $status
