#!/usr/bin/env bash
# novaserve bench: a tiny grid writes the table, CSV, JSON and SVG; bad flags exit 2.
source "$(dirname "$0")/lib/cli_test_lib.sh"

if "$BIN" bench --model "$MODEL" --batch 1,2 --prompt 8 --gen 4 --threads 2 \
  --csv "$TMP/b.csv" --json "$TMP/b.json" --svg "$TMP/b.svg" --slo-itl-ms 100000 \
  >"$TMP/stdout" 2>"$TMP/stderr"; then
  grep -q '^| batch | prompt |' "$TMP/stdout" || fail "no table header"
  [ "$(grep -c '^| [12] | 8 | 4 |' "$TMP/stdout")" = 2 ] || fail "expected 2 table rows"
  grep -q 'prompt 8: largest batch with mean ITL <= 100000.0 ms is 2' "$TMP/stdout" ||
    fail "no batch recommendation"
  [ "$(wc -l <"$TMP/b.csv")" = 3 ] || fail "CSV should have a header and 2 rows"
  grep -q '"results"' "$TMP/b.json" || fail "JSON has no results"
  head -1 "$TMP/b.csv" | grep -q ',decode_phase_tok_s,' || fail "CSV has no decode_phase_tok_s"
  grep -q '"decode_phase_tok_s"' "$TMP/b.json" || fail "JSON has no decode_phase_tok_s"
  head -1 "$TMP/b.csv" | grep -q ',full_batch_tok_s,' || fail "CSV has no full_batch_tok_s"
  grep -q '"full_batch_tok_s"' "$TMP/b.json" || fail "JSON has no full_batch_tok_s"
  grep -q '"activations": "q8"' "$TMP/b.json" || fail "JSON should name the default q8 mode"
  grep -q '^<svg' "$TMP/b.svg" || fail "SVG missing"
else
  fail "bench exited non-zero: $(head -c 300 "$TMP/stderr")"
fi

expect_exit2 "bench with a zero batch" "$BIN" bench --model "$MODEL" --batch 0
expect_exit2 "bench with a negative --kv-cache-memory" "$BIN" bench --model "$MODEL" \
  --kv-cache-memory -5MiB
grep -q "must not be negative, got -5MiB" "$TMP/err" || fail "negative size message: $(cat "$TMP/err")"
expect_exit2 "bench on a GPU device this build lacks" "$BIN" bench --model "$MODEL" --device cuda
expect_exit2 "bench without a model" "$BIN" bench
expect_exit2 "bench of a missing file" "$BIN" bench --model /nonexistent.gguf
expect_exit2 "bench with an unwritable CSV" "$BIN" bench --model "$MODEL" --batch 1 --prompt 4 \
  --gen 2 --csv /nonexistent-dir/b.csv
expect_exit2 "bench with a missing --json-schema" "$BIN" bench --model "$MODEL" --batch 1 \
  --json-schema /nonexistent.json
echo '{"type": "array", "items": {"type": "integer"}, "minItems": 8}' >"$TMP/ints.json"
if "$BIN" bench --model "$MODEL" --batch 1,2 --prompt 8 --gen 6 --threads 2 \
  --json-schema "$TMP/ints.json" >"$TMP/js.out" 2>"$TMP/js.err"; then
  grep -q "structured output" "$TMP/js.out" || fail "no slowdown table: $(cat "$TMP/js.out")"
  [ "$(grep -c '^| [12] | 8 | ' "$TMP/js.out")" -ge 4 ] || fail "missing constrained rows"
else
  fail "bench --json-schema exited $?: $(tail -3 "$TMP/js.err")"
fi
finish
