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

expect_error "--system without --chat" --model "$MODEL" --prompt hi --system "Be brief."
expect_error "unreadable --json-schema" --model "$MODEL" --prompt hi --json-schema "$TMP/none.json"
echo '{"type": "object",' >"$TMP/broken.json"
expect_error "--json-schema that is not JSON" --model "$MODEL" --prompt hi \
  --json-schema "$TMP/broken.json"
expect_error "unreadable --grammar" --model "$MODEL" --prompt hi --grammar "$TMP/none.gbnf"
echo 'root ::= ("a" ' >"$TMP/bad.gbnf"
expect_error "GBNF that does not parse" --model "$MODEL" --prompt hi --grammar "$TMP/bad.gbnf"
grep -q "line 1" "$TMP/err" || fail "the GBNF error does not name the line: $(cat "$TMP/err")"
printf 'root ::= "yes" | "no"\n' >"$TMP/yesno.gbnf"
expect_error "both --json-schema and --grammar" --model "$MODEL" --prompt hi \
  --json-schema "$TMP/broken.json" --grammar "$TMP/yesno.gbnf"

# Acceptance: greedy chat answer, twice, byte-identical. The prompt goes through the model's own
# template (SmolLM2's adds a default system turn unless one is given, as serve does).
run_acceptance() {
  "$BIN" generate --model "$MODEL" --prompt "What is the capital of France?" --chat \
    --system "You are a helpful assistant." --temperature 0 --max-tokens 32 "$@"
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

# The CLI builds the prompt serve builds: SmolLM2's template with its default system turn.
"$BIN" generate --model "$MODEL" --prompt "What is the capital of France?" --chat \
  --temperature 0 --max-tokens 1 >/dev/null 2>"$TMP/e3" || fail "default-system run exited $?"
grep -q "prompt: *37 tokens" "$TMP/e3" || fail "--chat prompt is not the template's 37 tokens: $(cat "$TMP/e3")"

# A grammar decides the output: only "yes" or "no" can come out, then the run stops.
"$BIN" generate --model "$MODEL" --prompt "Is the sky blue?" --chat --temperature 0.8 --seed 3 \
  --grammar "$TMP/yesno.gbnf" >"$TMP/g1" 2>"$TMP/ge" || fail "--grammar run exited $?: $(cat "$TMP/ge")"
case "$(cat "$TMP/g1")" in yes | no) ;; *) fail "--grammar output is not yes/no: $(cat "$TMP/g1")" ;; esac
echo '{"type": "object", "properties": {"answer": {"type": "boolean"}}, "required": ["answer"],
  "additionalProperties": false}' >"$TMP/schema.json"
"$BIN" generate --model "$MODEL" --prompt "Is the sky blue? Answer in JSON." --chat \
  --temperature 0 --max-tokens 32 --json-schema "$TMP/schema.json" >"$TMP/j1" 2>"$TMP/je" ||
  fail "--json-schema run exited $?: $(cat "$TMP/je")"
tr -d ' \n' <"$TMP/j1" | grep -Eq '^\{"answer":(true|false)\}$' ||
  fail "--json-schema output does not match the schema: $(cat "$TMP/j1")"

# Seeded sampling is reproducible.
seeded() {
  "$BIN" generate --model "$MODEL" --prompt "Once upon a time" --temperature 0.9 --top-p 0.9 \
    --seed 42 --max-tokens 16 2>/dev/null
}
[ "$(seeded)" = "$(seeded)" ] || fail "same seed gave different text"

finish
