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
CARGO_TARGET_DIR=$dir cargo afl build --release --quiet \
  --manifest-path crates/blindjoin-fuzz/afl/Cargo.toml
bin=$dir/release/blindjoin-fuzz-afl

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(hello verdict link finish kkrt16 cm20 cm20_mal psz14 gbf rgbf rr17a rr17_de rr17_ec dkt10 circuit_gmw circuit_gmw_scalar circuit_yao ecdh dh_ffc ecdh_nist rsa_blind naive
    cm20_mal_endemic rr17a_endemic rr17_de_endemic rr17_ec_endemic
    base_ot ot_ext csv lines aided_server aided_client aided_key bucketed rundir)
fi

status=0
for t in "${targets[@]}"; do
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
