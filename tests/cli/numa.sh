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

# Node 0 exists everywhere: the binding is logged, then the missing model fails (exit 2).
"$BIN" serve --model "$TMP/none.gguf" --numa 0 >"$TMP/out" 2>"$TMP/err"
grep -q 'NUMA\|numa' "$TMP/err" || fail "--numa 0: no log line: $(cat "$TMP/err")"
grep -q -- '--numa 0 (CPUs .*): threads and memory bound to it' "$TMP/err" ||
  grep -q 'no NUMA support' "$TMP/err" || fail "--numa 0: binding not logged: $(cat "$TMP/err")"
# auto on the CPU device: nothing to follow, said so.
"$BIN" serve --model "$TMP/none.gguf" >"$TMP/out" 2>"$TMP/err"
grep -q -- '--numa auto: no GPU to follow' "$TMP/err" || fail "auto/cpu: $(cat "$TMP/err")"
echo "ok: --numa 0 and auto are logged"

finish
