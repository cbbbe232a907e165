# Shared set-up for the CLI test scripts in tests/cli (sourced, not run).
# Defines BIN (from $1), SRC, SHARED, MODEL, a TMP dir removed on exit, a failure counter with
# fail(), expect_exit2(), tensor_type(), expect_types(), require_model(), quick_args(),
# free_port(), wait_healthy(), wait_exit() and finish().
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

# tensor_type FILE NAME: the type column of NAME in `inspect FILE`.
tensor_type() {
  "$BIN" inspect "$1" | awk -v n="\"$2\"" '$1 == n { print $2 }'
}

# expect_types FILE NAME=TYPE...: each tensor NAME of FILE has type TYPE (fail() otherwise).
expect_types() {
  local file=$1
  shift
  for pair in "$@"; do
    local got
    got=$(tensor_type "$file" "${pair%%=*}")
    [ "$got" = "${pair#*=}" ] || fail "$(basename "$file"): ${pair%%=*} is '$got', expected ${pair#*=}"
  done
}

# require_model: ends the script with a SKIP line (success) when the default model is absent.
require_model() {
  if [ ! -f "$MODEL" ]; then
    echo "SKIP: default model $MODEL is absent (run tools/fetch_model.sh)"
    finish
  fi
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

# free_port: a TCP port of 127.0.0.1 that was free a moment ago.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_healthy PORT: waits up to 60 s for GET /health on 127.0.0.1:PORT to say ok.
wait_healthy() {
  local _
  for _ in $(seq 1 300); do
    curl -s "http://127.0.0.1:$1/health" | grep -q '"status":"ok"' && return 0
    sleep 0.2
  done
  return 1
}

# wait_exit PID SECONDS: waits up to SECONDS for the background process PID to end and returns
# its exit status, or 124 (after killing it) when it did not end in time.
wait_exit() {
  local pid=$1 tenths=$(($2 * 10)) _
  for _ in $(seq 1 $tenths); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 124
  fi
  wait "$pid"
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
