#!/usr/bin/env bash
# CLI test of the pipeline flags of `serve`, `generate` and `bench` (--pipeline-parallel,
# --layer-split, --micro-batching). Usage: pipeline_flags.sh BINARY
# Bad values exit 2 with one line: a split that does not sum to the layer count, more stages than
# layers, a malformed list, pipeline flags without a pipeline, GPU stages (not implemented).
# A CPU pipeline generates the single-stage greedy tokens and logs each stage's memory.
source "$(dirname "$0")/lib/cli_test_lib.sh"

require_model

for cmd in generate bench serve; do
  quick_args $cmd
  # The default model has 30 layers.
  expect_exit2 "$cmd: split not summing to the layers" "$BIN" $cmd "${args[@]}" \
    --pipeline-parallel 2 --layer-split 10,10 &&
    { grep -q "sum to the model's 30 layers" "$TMP/err" || fail "$cmd: sum message"; }
  expect_exit2 "$cmd: more stages than layers" "$BIN" $cmd "${args[@]}" --pipeline-parallel 31 &&
    { grep -q "the model has 30 layers" "$TMP/err" || fail "$cmd: stage-count message"; }
  expect_exit2 "$cmd: list of the wrong length" "$BIN" $cmd "${args[@]}" \
    --pipeline-parallel 3 --layer-split 15,15
  expect_exit2 "$cmd: malformed list" "$BIN" $cmd "${args[@]}" --pipeline-parallel 2 \
    --layer-split 15,x
  expect_exit2 "$cmd: zero layers on a stage" "$BIN" $cmd "${args[@]}" --pipeline-parallel 2 \
    --layer-split 30,0
  expect_exit2 "$cmd: --pipeline-parallel 0" "$BIN" $cmd "${args[@]}" --pipeline-parallel 0
  expect_exit2 "$cmd: --layer-split without a pipeline" "$BIN" $cmd "${args[@]}" \
    --layer-split 30
  expect_exit2 "$cmd: a --gpu list longer than the stages" "$BIN" $cmd "${args[@]}" \
    --device cuda --pipeline-parallel 2 --gpu 0,0,0 &&
    { grep -Eq "pipeline-parallel 2 (takes one per stage|needs [0-9]+ --gpu entries)" "$TMP/err" ||
      fail "$cmd: --gpu message"; }
done

prompt="The capital of France is"
"$BIN" generate --model "$MODEL" --prompt "$prompt" -n 8 -t 0 >"$TMP/one" 2>/dev/null ||
  fail "generate (one stage) exited $?"
for flags in "--pipeline-parallel 2" "--pipeline-parallel 3 --layer-split 8,12,10" \
  "--pipeline-parallel 3 --micro-batching" "--pipeline-parallel 2 --no-micro-batching"; do
  # shellcheck disable=SC2086
  "$BIN" generate --model "$MODEL" --prompt "$prompt" -n 8 -t 0 $flags >"$TMP/pipe" \
    2>"$TMP/err" || fail "generate $flags exited $?"
  cmp -s "$TMP/one" "$TMP/pipe" || fail "generate $flags: output differs from one stage"
  grep -q "pipeline: stage 0 layers \[0, " "$TMP/err" || fail "generate $flags: no memory log"
  grep -q "std dev .*% of the mean" "$TMP/err" || fail "generate $flags: no std dev"
done
"$BIN" bench --model "$MODEL" --batch 2 --prompt 8 --gen 4 --pipeline-parallel 2 \
  >"$TMP/out" 2>"$TMP/err" || fail "bench --pipeline-parallel 2 exited $?: $(tail -c 300 "$TMP/err")"
grep -q "pipeline of 2 stages" "$TMP/err" || fail "bench: the engine log names no pipeline"
finish
