#!/usr/bin/env bash
# CLI test for `novaserve perplexity`. Usage: perplexity.sh NOVASERVE_BINARY
# Runs the default model on a short text (the start of data/kjv.txt when tools/fetch_corpus.sh
# has made it, else a fixed paragraph written here) and checks the report's format, that the
# number of scored tokens follows the window rule, and that the PPL is finite and in a broad
# sane range for a small English LM (2..200, not tuned to a measured value). Bad arguments and
# texts too short for one window must exit 2 with one line on stderr.
source "$(dirname "$0")/lib/cli_test_lib.sh"

if [ ! -f "$MODEL" ]; then
  echo "SKIP: default model missing ($MODEL); run tools/fetch_model.sh"
  exit 0
fi

TEXT=$TMP/text.txt
if [ -f "$SRC/data/kjv.txt" ]; then
  head -c 12000 "$SRC/data/kjv.txt" >"$TEXT"
  echo "text: first 12000 bytes of data/kjv.txt"
else
  # Over 256 tokens, so a 256-token window never holds an earlier copy of the same sentence.
  para="The town stood on a low hill above the river, and in the early morning the fog lay so \
thick along the water that the boatmen could not see the far bank. Most of the people who lived \
there worked in the mill or on the farms to the south, where the soil was dark and good for \
barley. On market days the square filled with carts, and children ran between the stalls \
selling apples, bread, cheese and bundles of dry wood. In winter the roads froze and travellers \
were rare, so news from the capital arrived weeks late, usually carried by a merchant who had \
heard it from another merchant. The old priest kept a record of every birth, marriage and death \
in a heavy book bound in leather, and when he grew too weak to hold the pen his niece wrote the \
entries for him in a small, careful hand. Nobody expected the railway to reach them, yet one \
spring a group of surveyors came up the valley with their chains and poles and stayed for a \
month, measuring the fields and asking questions about floods."
  for _ in 1 2 3 4 5 6; do printf '%s\n' "$para"; done >"$TEXT"
  echo "text: a fixed paragraph (data/kjv.txt not present)"
fi

# check_report FILE CTX STRIDE MODE [KV]: the report's lines, the scored-token count and the PPL.
# KV is the KV cache line expected (default f32: SmolLM2 stores 2 * 30 layers * 3 heads * 64
# values per token, 4 bytes each).
check_report() {
  local out=$1 ctx=$2 stride=$3 mode=$4 kv=${5:-"f32, 46080"}
  local used scored ppl lo hi
  used=$(sed -n 's/^file: .* tokens; first \([0-9]*\) used)$/\1/p' "$out")
  [ -n "$used" ] || { fail "no 'file:' line: $(cat "$out")"; return; }
  grep -q "^windows: [0-9]* of $ctx tokens, stride $stride; $mode mode, 2 threads$" "$out" ||
    fail "bad 'windows:' line: $(grep windows "$out")"
  grep -q "^KV cache: $kv bytes/token$" "$out" || fail "bad 'KV cache:' line: $(grep KV "$out")"
  scored=$(sed -n 's/^scored tokens: \([0-9]*\)$/\1/p' "$out")
  # llama.cpp's strided rule: ceil((N - ctx) / stride) windows, each scoring `stride` tokens.
  local want=$((((used - ctx + stride - 1) / stride) * stride))
  [ "$scored" = "$want" ] || fail "scored tokens '$scored', expected $want for $used tokens"
  grep -Eq '^mean NLL: [0-9.]+ nats/token \(standard error [0-9.]+\)$' "$out" ||
    fail "bad 'mean NLL:' line: $(grep NLL "$out")"
  grep -Eq '^time: [0-9.]+ s, [0-9.]+ tokens/s evaluated, [0-9.]+ tokens/s scored$' "$out" ||
    fail "bad 'time:' line: $(grep time "$out")"
  read -r ppl lo hi < <(sed -En \
    's/^PPL: ([0-9.]+) \+\/- [0-9.]+ \(1 s\.e\.\), 95% CI \[([0-9.]+), ([0-9.]+)\]$/\1 \2 \3/p' "$out")
  [ -n "$ppl" ] || { fail "bad 'PPL:' line: $(grep PPL "$out")"; return; }
  awk -v p="$ppl" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(p > 2 && p < 200 && lo < p && p < hi) }' ||
    fail "PPL $ppl (CI $lo..$hi) outside the sane range 2..200 or not inside its CI"
  echo "ok: $mode: PPL $ppl, 95% CI [$lo, $hi], $scored tokens scored"
}

"$BIN" perplexity -m "$MODEL" -f "$TEXT" --ctx 256 --stride 128 --max-tokens 1500 --threads 2 \
  >"$TMP/fast.out" 2>"$TMP/fast.err"
rc=$?
[ $rc -eq 0 ] || fail "fast run: exit $rc: $(cat "$TMP/fast.err")"
[ $rc -eq 0 ] && check_report "$TMP/fast.out" 256 128 "fast (q8 activations)"

"$BIN" perplexity -m "$MODEL" -f "$TEXT" --ctx 128 --stride 64 --max-tokens 400 --threads 2 \
  --exact >"$TMP/exact.out" 2>"$TMP/exact.err"
rc=$?
[ $rc -eq 0 ] || fail "exact run: exit $rc: $(cat "$TMP/exact.err")"
[ $rc -eq 0 ] && check_report "$TMP/exact.out" 128 64 exact

# A q4_0 KV cache: 11520 values per token in 32-value blocks of 18 bytes.
"$BIN" perplexity -m "$MODEL" -f "$TEXT" --ctx 128 --stride 64 --max-tokens 400 --threads 2 \
  --kv-cache-dtype q4 >"$TMP/kvq4.out" 2>"$TMP/kvq4.err"
rc=$?
[ $rc -eq 0 ] || fail "q4 KV run: exit $rc: $(cat "$TMP/kvq4.err")"
[ $rc -eq 0 ] && check_report "$TMP/kvq4.out" 128 64 "fast (q8 activations)" "q4_0, 6480"

# Errors.
printf 'Too short for one window.\n' >"$TMP/short.txt"
p() { expect_exit2 "$1" "$BIN" perplexity "${@:2}"; }
p "missing model" -m "$TMP/nope.gguf" -f "$TEXT"
p "model is not GGUF" -m "$TEXT" -f "$TEXT"
p "missing file" -m "$MODEL" -f "$TMP/nope.txt"
p "file is a directory" -m "$MODEL" -f "$TMP"
p "text too short" -m "$MODEL" -f "$TMP/short.txt" --ctx 64 --stride 32
p "--max-tokens leaves less than one window" -m "$MODEL" -f "$TEXT" --ctx 64 --stride 32 \
  --max-tokens 64
p "ctx < 2" -m "$MODEL" -f "$TEXT" --ctx 1 --stride 1
p "stride 0" -m "$MODEL" -f "$TEXT" --ctx 64 --stride 0
p "stride > ctx" -m "$MODEL" -f "$TEXT" --ctx 64 --stride 65
p "negative --max-tokens" -m "$MODEL" -f "$TEXT" --max-tokens -5
p "ctx beyond the training context" -m "$MODEL" -f "$TEXT" --ctx 9000 --stride 100
grep -q "training context" "$TMP/err" || fail "ctx 9000: message does not say why: $(cat "$TMP/err")"
p "no --file" -m "$MODEL"
p "bad --kv-cache-dtype" -m "$MODEL" -f "$TEXT" --kv-cache-dtype q5
grep -q "kv-cache-dtype" "$TMP/err" || fail "bad --kv-cache-dtype: message does not name the flag"

finish
