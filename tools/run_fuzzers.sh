#!/usr/bin/env bash
# Runs every libFuzzer binary BUILD_DIR/fuzz_* for SECONDS seconds each and fails if any finds a
# crash, leak, timeout or out-of-memory input. Usage: tools/run_fuzzers.sh BUILD_DIR SECONDS
#
# Seeds: if tests/robustness/<fuzzer>_seeds.sh exists it is run with a fresh corpus directory
# (seeds are generated at run time; none are committed). Crash inputs are kept in
# BUILD_DIR/fuzz-artifacts/<fuzzer>/ for reproduction: BUILD_DIR/<fuzzer> <artifact>.
set -uo pipefail
build=${1:?usage: run_fuzzers.sh BUILD_DIR SECONDS}
seconds=${2:?usage: run_fuzzers.sh BUILD_DIR SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
export NOVASERVE_SHARED_DIR=${NOVASERVE_SHARED_DIR:-$root/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shopt -s nullglob
fuzzers=()
for f in "$build"/fuzz_*; do
  [ -f "$f" ] && [ -x "$f" ] && fuzzers+=("$f")
done
if [ ${#fuzzers[@]} -eq 0 ]; then
  echo "run_fuzzers: no fuzz_* binaries in $build (configure with: cmake --preset fuzz)" >&2
  exit 1
fi

failed=()
for f in "${fuzzers[@]}"; do
  name=$(basename "$f")
  corpus=$work/$name
  artifacts=$build/fuzz-artifacts/$name
  mkdir -p "$corpus" "$artifacts"
  seeds=$root/tests/robustness/${name}_seeds.sh
  if [ -f "$seeds" ]; then
    bash "$seeds" "$corpus" || { echo "run_fuzzers: $seeds failed" >&2; failed+=("$name"); continue; }
  fi
  echo "run_fuzzers: $name for ${seconds}s ($(ls "$corpus" | wc -l) seeds)"
  log=$work/$name.log
  # -timeout: one input taking over 10 s is a hang; -max_len keeps inputs header-sized.
  "$f" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=8192 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" >"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "run_fuzzers: $name FAILED (exit $rc); last lines of its log:" >&2
    tail -n 40 "$log" >&2
    echo "run_fuzzers: reproduce with: $f $artifacts/<crash-file>" >&2
    failed+=("$name")
  else
    grep -E '^stat::number_of_executed_units|^Done ' "$log" | sed "s/^/  $name: /"
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "run_fuzzers: failures: ${failed[*]}" >&2
  exit 1
fi
echo "run_fuzzers: all ${#fuzzers[@]} fuzzer(s) ran ${seconds}s without finding a crash"
