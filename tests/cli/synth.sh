#!/usr/bin/env bash
# CLI test for `novaserve synth`. Usage: synth.sh NOVASERVE_BINARY
# A smollm2-135m Q4_0 file is written, inspected and generated from; the same seed gives the same
# bytes; --keep-f16/--tensor-type rules and --type q4_k_m give the tensor types asked; bad flags
# and bad rules exit 2 with one line on stderr; a failure while writing keeps an existing output
# file unchanged.
source "$(dirname "$0")/lib/cli_test_lib.sh"

# with_file_limit KIB COMMAND...: COMMAND with files limited to KIB KiB; SIGXFSZ is ignored, so
# a write past the limit fails with EFBIG (as on a full disk) instead of killing the process.
with_file_limit() {
  local kib=$1
  shift
  (
    trap '' XFSZ
    ulimit -f "$kib"
    exec "$@"
  )
}

expect_error() {
  local what=$1
  shift
  expect_exit2 "$what" "$BIN" synth "$@"
}

expect_error "unknown preset" --preset llama3-70b --type q4_0 -o "$TMP/x.gguf"
grep -q "llama3-8b" "$TMP/err" || fail "unknown-preset message does not list the presets"
expect_error "unsupported type" --preset llama3-8b --type q2_k -o "$TMP/x.gguf"
expect_error "unknown type" --preset llama3-8b --type q4 -o "$TMP/x.gguf"
expect_error "unknown mixture" --preset llama3-8b --type q4_k_s -o "$TMP/x.gguf"
grep -q "q4_k_m" "$TMP/err" || fail "unknown mixture: the message does not list q4_k_m"
expect_error "bad --tensor-type regex" --preset llama3-8b --type q4_0 -o "$TMP/x.gguf" \
  --tensor-type 'ffn_(gate=f16'
grep -q "bad regex" "$TMP/err" || fail "bad regex: the message does not say so: $(cat "$TMP/err")"
expect_error "--tensor-type without =" --preset llama3-8b --type q4_0 -o "$TMP/x.gguf" \
  --tensor-type attn_q
expect_error "--tensor-type with an unknown type" --preset llama3-8b --type q4_0 \
  -o "$TMP/x.gguf" --tensor-type attn_q=q7
expect_error "--tensor-type with a mixture" --preset llama3-8b --type q4_0 -o "$TMP/x.gguf" \
  --tensor-type attn_v=q4_k_m
expect_error "--tensor-type with an empty regex" --preset llama3-8b --type q4_0 \
  -o "$TMP/x.gguf" --tensor-type =f16
expect_error "bad --keep-f16 regex" --preset llama3-8b --type q4_0 -o "$TMP/x.gguf" \
  --keep-f16 '[ffn'
grep -q "keep-f16 rule '\[ffn'" "$TMP/err" || fail "bad --keep-f16: the rule is not named"
expect_error "missing --output" --preset llama3-8b --type q4_0
expect_error "missing --type" --preset llama3-8b -o "$TMP/x.gguf"
expect_error "negative seed" --preset llama3-8b --type q4_0 -o "$TMP/x.gguf" --seed -1
expect_error "negative threads" --preset llama3-8b --type q4_0 -o "$TMP/x.gguf" --threads -3
expect_error "missing tokenizer file" --preset llama3-8b --type q4_0 -o "$TMP/x.gguf" \
  --tokenizer "$TMP/none.gguf"
echo "not a gguf" >"$TMP/text.gguf"
expect_error "tokenizer file that is not GGUF" --preset llama3-8b --type q4_0 -o "$TMP/x.gguf" \
  --tokenizer "$TMP/text.gguf"
[ -e "$TMP/x.gguf" ] && fail "a failed synth left $TMP/x.gguf behind"

if [ ! -f "$MODEL" ]; then
  echo "SKIP: default model $MODEL is absent (run tools/fetch_model.sh); file checks not run"
  finish
fi

OUT=$TMP/smollm2-q4_0.gguf
"$BIN" synth --preset smollm2-135m --type q4_0 -o "$OUT" --seed 3 --threads 2 2>"$TMP/synth.err" ||
  fail "synth exited $?: $(cat "$TMP/synth.err")"
echo "synth: $(cat "$TMP/synth.err")"
"$BIN" inspect "$OUT" >"$TMP/inspect.out" 2>&1 || fail "inspect of the synth file failed"
grep -q '"blk.29.ffn_down.weight"  *q4_0  *\[1536, 576\]' "$TMP/inspect.out" ||
  fail "inspect does not list blk.29.ffn_down.weight as q4_0 [1536, 576]"
grep -q 'general.architecture (string) = "llama"' "$TMP/inspect.out" || fail "architecture"
grep -q 'tokenizer.ggml.pre (string) = "smollm"' "$TMP/inspect.out" || fail "tokenizer not copied"

"$BIN" generate --model "$OUT" --prompt "Hello there" --max-tokens 6 --temperature 0 \
  >"$TMP/gen.out" 2>"$TMP/gen.err" || fail "generate on the synth file exited $?: $(cat "$TMP/gen.err")"
grep -q "6 tokens" "$TMP/gen.err" || fail "generate did not produce 6 tokens: $(cat "$TMP/gen.err")"

# Rules: the product's mixed policy (ffn_gate/ffn_up kept f16) plus a --tensor-type rule, which
# --keep-f16 precedes; the tied head stays q4_0 (synth's plain types cover the head).
"$BIN" synth --preset smollm2-135m --type q4_0 --keep-f16 'ffn_(gate|up)' \
  --tensor-type 'ffn_up=q8_0' --tensor-type 'attn_v=q8_0' -o "$TMP/mixed.gguf" --threads 2 \
  2>"$TMP/mixed.err" || fail "synth with rules exited $?: $(cat "$TMP/mixed.err")"
grep -q "272 tensors (61 f32, 60 f16, 121 q4_0, 30 q8_0)" "$TMP/mixed.err" ||
  fail "synth with rules: $(cat "$TMP/mixed.err")"
expect_types "$TMP/mixed.gguf" blk.0.ffn_gate.weight=f16 blk.29.ffn_up.weight=f16 \
  blk.3.attn_v.weight=q8_0 blk.3.attn_q.weight=q4_0 blk.3.ffn_down.weight=q4_0 \
  token_embd.weight=q4_0 blk.3.ffn_norm.weight=f32
# q4_k_m: layer 5 is a "more bits" layer of 30 (attn_v q6_k falls back to q8_0 on 576-wide rows),
# layer 6 is not; the tied head gets llama.cpp's output type (q8_0 on 576-wide rows).
"$BIN" synth --preset smollm2-135m --type q4_k_m -o "$TMP/q4km.gguf" --threads 2 \
  2>"$TMP/q4km.err" || fail "synth q4_k_m exited $?: $(cat "$TMP/q4km.err")"
expect_types "$TMP/q4km.gguf" blk.5.ffn_down.weight=q6_k blk.6.ffn_down.weight=q4_k \
  blk.5.attn_v.weight=q8_0 blk.6.attn_v.weight=q5_0 blk.6.ffn_up.weight=q5_0 \
  token_embd.weight=q8_0
# One warning per (asked, stored) pair of the block-size fallback, as quantize warns.
grep -qx "novaserve synth: warning: 166 tensor(s) stored as q5_0 instead of q4_k (rows not a multiple of 256 values)" \
  "$TMP/q4km.err" || fail "synth q4_k_m: no q4_k -> q5_0 fallback warning: $(cat "$TMP/q4km.err")"
grep -q "stored as q8_0 instead of q6_k" "$TMP/q4km.err" ||
  fail "synth q4_k_m: no q6_k -> q8_0 fallback warning"
"$BIN" inspect "$TMP/q4km.gguf" | grep -q 'general.file_type (uint32) = 15' ||
  fail "synth q4_k_m: general.file_type is not 15"
echo "ok: synth rules and q4_k_m"

# Same preset/type/seed, different thread count: identical bytes.
"$BIN" synth --preset smollm2-135m --type q4_0 -o "$TMP/again.gguf" --seed 3 --threads 1 \
  2>/dev/null || fail "second synth exited $?"
cmp -s "$OUT" "$TMP/again.gguf" || fail "same seed, different threads: files differ"

# A failure after the output would be opened keeps an existing file byte-identical and leaves no
# OUT.tmp-* behind. Synthetic weights cannot fail to quantize, so the failure is a file-size
# limit (RLIMIT_FSIZE) that lets the header (about 2 MiB of tokenizer) through and stops the
# tensor data part way.
mkdir "$TMP/keep"
printf 'sentinel: an older model\n\0\377' >"$TMP/keep/out.gguf"
sum=$(sha256sum <"$TMP/keep/out.gguf")
# An output that cannot be written is a bad-input error: exit 2.
with_file_limit 8192 "$BIN" synth --preset smollm2-135m --type q4_0 -o "$TMP/keep/out.gguf" \
  --seed 3 --threads 2 2>"$TMP/err"
rc=$?
if [ $rc -ne 2 ]; then
  fail "8 MiB file limit: exit $rc, expected 2: $(head -c 300 "$TMP/err")"
elif [ "$(wc -l <"$TMP/err")" -ne 1 ] || ! grep -q "tmp-[0-9]*: write failed" "$TMP/err"; then
  fail "8 MiB file limit: expected one line naming a failed write: $(head -c 300 "$TMP/err")"
else
  echo "ok (exit 2): write fails while streaming: $(cat "$TMP/err")"
fi
[ "$(sha256sum <"$TMP/keep/out.gguf")" = "$sum" ] || fail "late failure: the existing file changed"
ls "$TMP"/keep/out.gguf.tmp-* >/dev/null 2>&1 && fail "late failure: a temporary file was left"
[ "$(ls "$TMP/keep")" = out.gguf ] || fail "late failure: unexpected files: $(ls "$TMP/keep")"

# Ctrl-C (SIGINT) part way leaves neither the output nor its temporary file.
"$BIN" synth --preset smollm2-135m --type q4_0 -o "$TMP/sig.gguf" --threads 1 2>/dev/null &
pid=$!
sleep 0.5
kill -INT $pid 2>/dev/null
wait $pid
ls "$TMP"/sig.gguf.tmp-* >/dev/null 2>&1 && fail "SIGINT left a temporary file: $(ls "$TMP")"
echo "ok: SIGINT leaves no temporary file"

# An output that is a directory is refused before any generation.
mkdir "$TMP/outdir"
expect_exit2 "output is a directory" "$BIN" synth --preset smollm2-135m --type q4_0 -o "$TMP/outdir"

finish
