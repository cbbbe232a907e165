#!/usr/bin/env bash
# CLI test for serve's --numa. Usage: numa.sh NOVASERVE_BINARY
# A malformed value or a node that does not exist exits 2 with one line, before the model is
# opened. (The choice is unit-tested on sysfs fixtures, the binding on this machine.)
source "$(dirname "$0")/lib/cli_test_lib.sh"

expect_exit2 "--numa abc" "$BIN" serve --model "$TMP/none.gguf" --numa abc
grep -q -- '--numa must be auto, off or a NUMA node number' "$TMP/err" || fail "abc: message"
expect_exit2 "--numa -1" "$BIN" serve --model "$TMP/none.gguf" --numa -1
expect_exit2 "--numa 4097" "$BIN" serve --model "$TMP/none.gguf" --numa 4097
expect_exit2 "--numa 4095" "$BIN" serve --model "$TMP/none.gguf" --numa 4095
grep -q 'no such NUMA node' "$TMP/err" || fail "4095: message: $(cat "$TMP/err")"

# A missing model still fails with one line: the choice is logged only once the model opened.
expect_exit2 "--numa 0, missing model" "$BIN" serve --model "$TMP/none.gguf" --numa 0

# serve_log ARGS...: starts serve on the default model on a free port, waits (up to 60 s) until
# it serves, stops it (SIGTERM drains) and leaves its stderr in $TMP/serve.err.
serve_log() {
  "$BIN" serve --model "$MODEL" --port 0 "$@" 2>"$TMP/serve.err" >/dev/null &
  local pid=$!
  for _ in $(seq 1 600); do
    grep -q "serving '" "$TMP/serve.err" && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  kill $pid 2>/dev/null
  wait $pid 2>/dev/null
}

if [ -f "$MODEL" ]; then
  # Node 0 exists on every machine with NUMA support.
  serve_log --numa 0
  grep -q -- '--numa 0 (CPUs .*): threads and memory bound to it' "$TMP/serve.err" ||
    grep -q 'no NUMA support' "$TMP/serve.err" ||
    fail "--numa 0: binding not logged: $(head -c 400 "$TMP/serve.err")"
  # auto on the CPU device: nothing to follow, and it says so.
  serve_log
  grep -q -- '--numa auto: no GPU to follow (--device cpu), not binding' "$TMP/serve.err" ||
    fail "auto/cpu: $(head -c 400 "$TMP/serve.err")"
  serve_log --numa off
  grep -q -- '--numa off' "$TMP/serve.err" || fail "off: $(head -c 400 "$TMP/serve.err")"
  echo "ok: --numa 0, auto and off are logged"
else
  echo "SKIP: default model missing ($MODEL); run tools/fetch_model.sh"
fi

finish
