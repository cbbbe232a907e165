#!/usr/bin/env bash
# CLI test of the device flags shared by `serve`, `generate` and `bench` (--device, --gpu,
# --no-graphs, --gpu-memory-utilization, --kv-cache-dtype auto). Usage: device_flags.sh BINARY
# Bad values exit 2 with one line; a GPU backend the binary lacks, or a GPU it cannot use, is a
# one-line exit-2 error too (CI builds the CPU binary and has no GPU); --device cpu still runs.
source "$(dirname "$0")/lib/cli_test_lib.sh"

require_model

for cmd in generate bench serve; do
  quick_args $cmd
  expect_exit2 "$cmd: unknown device" "$BIN" $cmd "${args[@]}" --device tpu &&
    { grep -q "cpu, cuda or hip" "$TMP/err" || fail "$cmd: unknown-device message lists no devices"; }
  expect_exit2 "$cmd: negative --gpu" "$BIN" $cmd "${args[@]}" --device cuda --gpu -1
  expect_exit2 "$cmd: bad --kv-cache-dtype on a GPU" "$BIN" $cmd "${args[@]}" --device cuda \
    --kv-cache-dtype q3 && { grep -q "q8 or q4" "$TMP/err" || fail "$cmd: bad-dtype message"; }
  expect_exit2 "$cmd: bad --kv-cache-dtype" "$BIN" $cmd "${args[@]}" --kv-cache-dtype q3
  # Without a usable GPU (or without the backend compiled in) the error names the reason.
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    expect_exit2 "$cmd: --device cuda without a GPU" "$BIN" $cmd "${args[@]}" --device cuda &&
      { grep -Eq "built without|no usable cuda device" "$TMP/err" ||
        fail "$cmd: no-GPU message names neither the build nor the device"; }
    # q8/q4 caches work on GPUs: the error is the device's, not the cache type's.
    expect_exit2 "$cmd: q8 KV cache, --device cuda without a GPU" "$BIN" $cmd "${args[@]}" \
      --device cuda --kv-cache-dtype q8 &&
      { grep -Eq "built without|no usable cuda device" "$TMP/err" ||
        fail "$cmd: q8 on a GPU refused for its type"; }
  fi
done
for bad in 0 1.5 -0.2 lots; do
  expect_exit2 "serve: --gpu-memory-utilization $bad" "$BIN" serve --model "$MODEL" --port 0 \
    --gpu-memory-utilization "$bad"
done

# GPU-only flags would do nothing on the CPU: refused, naming them.
for flag in "--gpu 1" "--no-graphs" "--gpu-memory-utilization 0.5"; do
  # shellcheck disable=SC2086
  expect_exit2 "bench: $flag with --device cpu" "$BIN" bench --model "$MODEL" --batch 1 \
    --prompt 4 --gen 2 $flag &&
    { grep -q "apply to --device cuda or hip" "$TMP/err" || fail "bench $flag: message"; }
done
expect_exit2 "generate: --no-graphs with --device cpu" "$BIN" generate --model "$MODEL" \
  --prompt hi -n 2 --device cpu --no-graphs

# Data-parallel replicas (docs/multi-gpu.md): one --gpu entry per stage of each replica,
# checked before the device; a list is for pipeline stages and serve --data-parallel only.
expect_exit2 "serve: --data-parallel 2 with one --gpu entry" "$BIN" serve --model "$MODEL" \
  --port 0 --device cuda --data-parallel 2 --gpu 0 &&
  { grep -q "data-parallel 2 x --pipeline-parallel 1 needs 2 --gpu entries, one per stage of each replica (got 1)" \
    "$TMP/err" || fail "serve --data-parallel 2 --gpu 0: message"; }
expect_exit2 "serve: --data-parallel 1 with two --gpu entries" "$BIN" serve --model "$MODEL" \
  --port 0 --device cuda --gpu 0,1
expect_exit2 "serve: a --gpu list entry that is no number" "$BIN" serve --model "$MODEL" \
  --port 0 --device cuda --data-parallel 2 --gpu 0,x &&
  { grep -q "comma-separated list" "$TMP/err" || fail "serve --gpu 0,x: message"; }
expect_exit2 "generate: a --gpu list" "$BIN" generate --model "$MODEL" --prompt hi -n 2 \
  --device cuda --gpu 0,1 &&
  { grep -q "pipeline-parallel 1 takes one per stage" "$TMP/err" || fail "generate --gpu 0,1"; }
expect_exit2 "serve: --data-parallel 2 x --pipeline-parallel 2 with three --gpu entries" "$BIN" \
  serve --model "$MODEL" --port 0 --device cuda --data-parallel 2 --pipeline-parallel 2 \
  --gpu 0,1,0 &&
  { grep -q "data-parallel 2 x --pipeline-parallel 2 needs 4 --gpu entries, one per stage of each replica (got 3)" \
    "$TMP/err" || fail "serve --data-parallel 2 --pipeline-parallel 2 --gpu 0,1,0: message"; }

# --device cpu (and the auto KV type) still generate.
"$BIN" generate --model "$MODEL" --prompt "The capital of France is" -n 4 -t 0 --device cpu \
  --kv-cache-dtype auto >"$TMP/out" 2>"$TMP/err" || fail "generate --device cpu exited $?"
grep -q "cpu, " "$TMP/err" || fail "generate --device cpu did not report the cpu runner"
finish
