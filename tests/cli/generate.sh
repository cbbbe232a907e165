#!/usr/bin/env bash
# CLI test for `novaserve generate`. Usage: generate.sh NOVASERVE_BINARY
# The acceptance command must answer "Paris" and print the same text when run twice; bad inputs
# (missing/invalid/unsupported model files, bad flag values) must exit 2 with one line on stderr.
source "$(dirname "$0")/lib/cli_test_lib.sh"

# expect_error DESCRIPTION ARGS...: `generate ARGS` exits 2 with exactly one line on stderr.
expect_error() {
  local what=$1
  shift
  expect_exit2 "$what" "$BIN" generate "$@"
}

# Errors that need no model file.
expect_error "missing model file" --model "$TMP/nope.gguf" --prompt hi
echo "not a gguf file" >"$TMP/text.gguf"
expect_error "not a GGUF file" --model "$TMP/text.gguf" --prompt hi
expect_error "missing --prompt" --model "$TMP/text.gguf"
expect_error "non-numeric temperature" --model "$TMP/text.gguf" --prompt hi --temperature warm
if [ -f "$SHARED/cases/weights/gguf-magic-only.gguf" ]; then
  expect_error "truncated GGUF" --model "$SHARED/cases/weights/gguf-magic-only.gguf" --prompt hi
fi
VOCABS=$SHARED/testdata/tokenizers
if [ -d "$VOCABS" ]; then
  expect_error "unsupported architecture (falcon vocab file)" \
    --model "$VOCABS/ggml-vocab-falcon.gguf" --prompt hi
  grep -q "falcon" "$TMP/err" || fail "unsupported-architecture message does not name falcon"
  expect_error "llama vocab-only file (no weights)" --model "$VOCABS/ggml-vocab-llama-spm.gguf" \
    --prompt hi
fi

if [ ! -f "$MODEL" ]; then
  echo "SKIP: default model $MODEL is absent (run tools/fetch_model.sh); model checks not run"
  [ $failures -eq 0 ] || exit 1
  exit 0
fi

expect_error "negative temperature" --model "$MODEL" --prompt hi --temperature -1
expect_error "top-p of 0" --model "$MODEL" --prompt hi --top-p 0
expect_error "negative top-k" --model "$MODEL" --prompt hi --top-k -3
expect_error "zero max tokens" --model "$MODEL" --prompt hi --max-tokens 0
expect_error "negative threads" --model "$MODEL" --prompt hi --threads -2

# Acceptance: greedy chat answer, twice, byte-identical.
run_acceptance() {
  "$BIN" generate --model "$MODEL" --prompt "What is the capital of France?" --chat \
    --temperature 0 --max-tokens 32 "$@"
}
run_acceptance >"$TMP/a1" 2>"$TMP/e1" || fail "acceptance run 1 exited $?: $(cat "$TMP/e1")"
run_acceptance >"$TMP/a2" 2>"$TMP/e2" || fail "acceptance run 2 exited $?: $(cat "$TMP/e2")"
echo "answer: $(cat "$TMP/a1")"
grep -q "Paris" "$TMP/a1" || fail "answer does not mention Paris: $(cat "$TMP/a1")"
cmp -s "$TMP/a1" "$TMP/a2" || fail "two greedy runs printed different text"
grep -q "tok/s" "$TMP/e1" || fail "no tok/s report on stderr: $(cat "$TMP/e1")"
grep -q "tok/s" "$TMP/a1" && fail "timing leaked into stdout"

# Exact mode answers too, and a different thread count gives the same bytes (batch/thread
# invariance of the kernels).
run_acceptance --exact --threads 1 >"$TMP/x1" 2>/dev/null || fail "exact run exited $?"
run_acceptance --exact --threads 2 >"$TMP/x2" 2>/dev/null || fail "exact run exited $?"
grep -q "Paris" "$TMP/x1" || fail "exact-mode answer does not mention Paris: $(cat "$TMP/x1")"
cmp -s "$TMP/x1" "$TMP/x2" || fail "exact mode differs between 1 and 2 threads"

# Seeded sampling is reproducible.
seeded() {
  "$BIN" generate --model "$MODEL" --prompt "Once upon a time" --temperature 0.9 --top-p 0.9 \
    --seed 42 --max-tokens 16 2>/dev/null
}
[ "$(seeded)" = "$(seeded)" ] || fail "same seed gave different text"

finish
