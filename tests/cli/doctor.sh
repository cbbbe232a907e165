#!/usr/bin/env bash
# CLI test for `novaserve doctor`. Usage: doctor.sh NOVASERVE_BINARY
# Exit codes: 0 without an error-level finding, 1 with one, 2 with one line on stderr for bad
# flags; --json must parse. Fixture roots are built here (the unit tests cover each finding).
source "$(dirname "$0")/lib/cli_test_lib.sh"

# json_field FILE PYTHON_EXPR: evaluates EXPR on the parsed JSON `d`.
json_field() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# An empty root: no GPU, the honest top finding, exit 1.
mkdir -p "$TMP/empty"
"$BIN" doctor --root "$TMP/empty" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] || fail "empty root: exit $rc, expected 1: $(cat "$TMP/err")"
grep -q '^1\. \[error\] gpu.none-found' "$TMP/out" || fail "empty root: gpu.none-found not first"
"$BIN" doctor --root "$TMP/empty" --json >"$TMP/out.json" 2>"$TMP/err"
python3 -c 'import json,sys; json.load(sys.stdin)' <"$TMP/out.json" || fail "--json does not parse"
[ "$(json_field "$TMP/out.json" 'd["findings"][0]["id"]')" = gpu.none-found ] ||
  fail "--json: first finding is not gpu.none-found"
[ "$(json_field "$TMP/out.json" 'd["exit_code"]')" = 1 ] || fail "--json: exit_code is not 1"
echo "ok: empty root"

# A healthy NVIDIA-like root without the driver-version check (a CPU build has no CUDA runtime):
# exit 0, only info findings.
R=$TMP/nv
mkdir -p "$R/sys/bus/pci/devices/0000:17:00.0" "$R/sys/module/nvidia" "$R/dev" \
  "$R/usr/lib/x86_64-linux-gnu" "$R/proc/driver/nvidia" "$R/proc/sys/net/core" "$R/proc/self"
echo 0x10de >"$R/sys/bus/pci/devices/0000:17:00.0/vendor"
echo 0x030200 >"$R/sys/bus/pci/devices/0000:17:00.0/class"
echo live >"$R/sys/module/nvidia/initstate"
echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 2025" \
  >"$R/proc/driver/nvidia/version"
for n in nvidiactl nvidia0 nvidia-uvm; do : >"$R/dev/$n" && chmod 0666 "$R/dev/$n"; done
: >"$R/usr/lib/x86_64-linux-gnu/libcuda.so.1"
: >"$R/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"
echo 4096 >"$R/proc/sys/net/core/somaxconn"
"$BIN" doctor --root "$R" --json >"$TMP/nv.json" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] || fail "healthy NVIDIA root: exit $rc, expected 0: $(head -c 600 "$TMP/nv.json")"
[ "$(json_field "$TMP/nv.json" 'd["counts"]["error"]')" = 0 ] || fail "healthy root has errors"
[ "$(json_field "$TMP/nv.json" 'd["gpus"][0]["vendor"]')" = NVIDIA ] || fail "GPU not found"
echo "ok: healthy NVIDIA root exits 0"

# The same root with a low somaxconn against a larger --backlog: a warning, still exit 0.
"$BIN" doctor --root "$R" --backlog 8192 >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] || fail "--backlog 8192: exit $rc, expected 0"
grep -q '\[warning\] os.somaxconn-low' "$TMP/out" || fail "--backlog 8192: no os.somaxconn-low"
# And without /dev/nvidia-uvm: an error, exit 1.
rm "$R/dev/nvidia-uvm"
"$BIN" doctor --root "$R" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] || fail "missing nvidia-uvm: exit $rc, expected 1"
grep -q '^1\. \[error\] nvidia.device-missing' "$TMP/out" || fail "nvidia.device-missing not first"
echo "ok: exit codes follow the findings"

# The real machine: whatever it finds, exit 0 or 1 and parseable JSON.
"$BIN" doctor --json >"$TMP/host.json" 2>"$TMP/err"
rc=$?
{ [ $rc -eq 0 ] || [ $rc -eq 1 ]; } || fail "doctor on this host: exit $rc: $(cat "$TMP/err")"
python3 -c 'import json,sys; json.load(sys.stdin)' <"$TMP/host.json" || fail "host --json"

# Bad flags: exit 2 with one line.
expect_exit2 "--root missing" "$BIN" doctor --root "$TMP/does-not-exist"
grep -q '^novaserve doctor: error: --root' "$TMP/err" || fail "--root error names the command"
expect_exit2 "--root a file" "$BIN" doctor --root "$TMP/nv.json"
expect_exit2 "--backlog 0" "$BIN" doctor --backlog 0
expect_exit2 "--max-num-seqs -1" "$BIN" doctor --max-num-seqs -1
expect_exit2 "--max-queued-requests 0" "$BIN" doctor --max-queued-requests 0
expect_exit2 "--backlog abc" "$BIN" doctor --backlog abc
expect_exit2 "unknown flag" "$BIN" doctor --frobnicate
expect_exit2 "--model missing" "$BIN" doctor --root "$TMP/empty" --model "$TMP/none.gguf"

finish
