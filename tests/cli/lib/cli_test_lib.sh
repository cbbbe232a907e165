# Shared set-up for the CLI test scripts in tests/cli (sourced, not run).
# Defines BIN (from $1), SRC, SHARED, MODEL, a TMP dir removed on exit, a failure counter with
# fail(), expect_exit2(), quick_args() and finish().
set -u
BIN=${1:?usage: $(basename "$0") NOVASERVE_BINARY}
SRC=${NOVASERVE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SHARED=${NOVASERVE_SHARED_DIR:-$SRC/../shared}
MODEL=$SRC/models/SmolLM2-135M-Instruct.Q4_1.gguf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_exit2 DESCRIPTION COMMAND...: COMMAND exits 2 with exactly one line on stderr (kept in
# $TMP/err for further checks). Returns 1 when it did not.
expect_exit2() {
  local what=$1
  shift
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ $rc -ne 2 ]; then
    fail "$what: exit $rc, expected 2: $(head -c 300 "$TMP/err")"
    return 1
  fi
  local lines
  lines=$(wc -l <"$TMP/err")
  if [ "$lines" -ne 1 ]; then
    fail "$what: stderr has $lines lines, expected 1: $(head -c 300 "$TMP/err")"
    return 1
  fi
  echo "ok (exit 2): $what: $(cat "$TMP/err")"
}

# quick_args CMD: sets the array `args` to the flags of a short run of CMD (generate, bench or
# serve) on the default model, for the bad-flag checks of the device and pipeline flags.
quick_args() {
  case $1 in
    generate) args=(--model "$MODEL" --prompt hi -n 2) ;;
    bench) args=(--model "$MODEL" --batch 1 --prompt 4 --gen 2) ;;
    serve) args=(--model "$MODEL" --port 0) ;;
  esac
}

# finish: exit status of the script from the failure counter.
finish() {
  if [ $failures -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
  fi
  echo "all checks passed"
  exit 0
}
