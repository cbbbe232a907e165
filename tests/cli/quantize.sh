#!/usr/bin/env bash
# CLI test for `novaserve quantize`. Usage: quantize.sh NOVASERVE_BINARY
# Quantizes the default model to q8_0, to a mixed policy, to q4_k (fallback) and to q4_k_m
# (llama.cpp's mixture), checks the
# tensor types with `inspect`, generates a few greedy tokens from each output, and checks that
# bad arguments exit 2 with one line on stderr and leave no output file behind, and that a
# failure while writing keeps an existing OUT unchanged.
source "$(dirname "$0")/lib/cli_test_lib.sh"

if [ ! -f "$MODEL" ]; then
  echo "SKIP: default model missing ($MODEL); run tools/fetch_model.sh"
  exit 0
fi

# generates FILE: a few greedy tokens come out.
generates() {
  local text
  text=$("$BIN" generate -m "$1" -p "The capital of France is" -n 6 --temperature 0 \
    --threads 2 2>"$TMP/gen.err")
  local rc=$?
  [ $rc -eq 0 ] || fail "generate from $(basename "$1"): exit $rc: $(head -c 300 "$TMP/gen.err")"
  [ -n "$(echo "$text" | tr -d '[:space:]')" ] || fail "generate from $(basename "$1"): no text"
  grep -q "generation: 6 tokens" "$TMP/gen.err" ||
    fail "generate from $(basename "$1"): $(cat "$TMP/gen.err")"
}

# 1. Everything to q8_0 (the embedding is q8_0 already and is copied).
"$BIN" quantize "$MODEL" "$TMP/q8.gguf" --type q8_0 --threads 2 >"$TMP/q8.out" 2>"$TMP/q8.err"
rc=$?
[ $rc -eq 0 ] || fail "q8_0: exit $rc: $(cat "$TMP/q8.err")"
expect_types "$TMP/q8.gguf" blk.0.attn_q.weight=q8_0 blk.29.ffn_down.weight=q8_0 \
  token_embd.weight=q8_0 blk.0.attn_norm.weight=f32
"$BIN" inspect "$TMP/q8.gguf" | grep -q 'general.file_type (uint32) = 7' ||
  fail "q8_0: general.file_type is not 7"
for cls in token_embd attn_q attn_k attn_v attn_output ffn_gate ffn_up ffn_down norm \
  "tensor data"; do
  grep -q "^$cls " "$TMP/q8.out" || fail "q8_0 summary has no '$cls' row"
done
grep -q "^file size: $(stat -L -c %s "$MODEL") -> $(stat -c %s "$TMP/q8.gguf") bytes" "$TMP/q8.out" ||
  fail "q8_0 summary file sizes: $(grep 'file size' "$TMP/q8.out")"
generates "$TMP/q8.gguf"
echo "ok: q8_0"

# 2. The seed's mixed policy plus one more rule; --keep-f16 precedes --tensor-type.
"$BIN" quantize "$MODEL" "$TMP/mixed.gguf" --type q4_0 --tensor-type 'ffn_up=q8_0' \
  --tensor-type 'attn_v=q8_0' --keep-f16 'ffn_(gate|up)' --threads 2 >/dev/null 2>"$TMP/mixed.err"
rc=$?
[ $rc -eq 0 ] || fail "mixed: exit $rc: $(cat "$TMP/mixed.err")"
expect_types "$TMP/mixed.gguf" blk.3.ffn_gate.weight=f16 blk.3.ffn_up.weight=f16 \
  blk.3.attn_v.weight=q8_0 blk.3.attn_q.weight=q4_0 blk.3.ffn_down.weight=q4_0 \
  token_embd.weight=q8_0 output_norm.weight=f32
generates "$TMP/mixed.gguf"
echo "ok: mixed policy"

# 3. K-quants on 576-wide rows fall back with a warning; 1536-wide ffn_down rows keep q4_k.
"$BIN" quantize "$MODEL" "$TMP/q4k.gguf" --type q4_k --threads 2 >/dev/null 2>"$TMP/q4k.err"
rc=$?
[ $rc -eq 0 ] || fail "q4_k: exit $rc: $(cat "$TMP/q4k.err")"
grep -q "warning: .*576.*q4_k.*using q5_0" "$TMP/q4k.err" ||
  fail "q4_k: no fallback warning: $(cat "$TMP/q4k.err")"
expect_types "$TMP/q4k.gguf" blk.0.attn_q.weight=q5_0 blk.0.ffn_down.weight=q4_k
generates "$TMP/q4k.gguf"
echo "ok: q4_k fallback"

# 3b. q4_k_m: llama.cpp's Q4_K_M on 30 layers gives attn_v/ffn_down q6_k in layers 0-2, 5, 8, ...,
# 23 and 26-29 (attn_v's 576-wide rows then fall back to q8_0), q4_k elsewhere (q5_0 on 576).
"$BIN" quantize "$MODEL" "$TMP/q4km.gguf" --type q4_k_m --threads 2 >"$TMP/q4km.out" 2>"$TMP/q4km.err"
rc=$?
[ $rc -eq 0 ] || fail "q4_k_m: exit $rc: $(cat "$TMP/q4km.err")"
grep -q "(type q4_k_m)" "$TMP/q4km.out" || fail "q4_k_m: summary: $(head -1 "$TMP/q4km.out")"
expect_types "$TMP/q4km.gguf" blk.0.ffn_down.weight=q6_k blk.3.ffn_down.weight=q4_k \
  blk.5.ffn_down.weight=q6_k blk.26.ffn_down.weight=q6_k blk.25.ffn_down.weight=q4_k \
  blk.5.attn_v.weight=q8_0 blk.6.attn_v.weight=q5_0 blk.5.attn_q.weight=q5_0 \
  token_embd.weight=q8_0
"$BIN" inspect "$TMP/q4km.gguf" | grep -q 'general.file_type (uint32) = 15' ||
  fail "q4_k_m: general.file_type is not 15 (MOSTLY_Q4_K_M)"
generates "$TMP/q4km.gguf"
echo "ok: q4_k_m"

# 4. Bad input: exit 2, one line, and no OUT (nor temporary file) left behind.
cp "$MODEL" "$TMP/in.gguf"
mkdir "$TMP/errs"
OUT=$TMP/errs/out.gguf
expect_exit2 "missing input" "$BIN" quantize "$TMP/nope.gguf" "$OUT" --type q8_0
expect_exit2 "input is not GGUF" "$BIN" quantize "$TMP/q8.out" "$OUT" --type q8_0
expect_exit2 "unknown type" "$BIN" quantize "$TMP/in.gguf" "$OUT" --type q9_0
expect_exit2 "unknown mixture" "$BIN" quantize "$TMP/in.gguf" "$OUT" --type q4_k_s
grep -q "q4_k_m" "$TMP/err" || fail "unknown mixture: the message does not list q4_k_m"
expect_exit2 "q4_k_m of a missing input" "$BIN" quantize "$TMP/nope.gguf" "$OUT" --type q4_k_m
expect_exit2 "unknown --output-type" "$BIN" quantize "$TMP/in.gguf" "$OUT" --type q8_0 \
  --output-type q3
expect_exit2 "bad regex" "$BIN" quantize "$TMP/in.gguf" "$OUT" --type q8_0 \
  --tensor-type 'ffn_(gate=f16'
grep -q "bad regex" "$TMP/err" || fail "bad regex: message does not say so: $(cat "$TMP/err")"
expect_exit2 "bad --keep-f16 regex" "$BIN" quantize "$TMP/in.gguf" "$OUT" --type q8_0 \
  --keep-f16 '[ffn'
expect_exit2 "rule without =" "$BIN" quantize "$TMP/in.gguf" "$OUT" --type q8_0 \
  --tensor-type 'attn_q'
expect_exit2 "rule with unknown type" "$BIN" quantize "$TMP/in.gguf" "$OUT" --type q8_0 \
  --tensor-type 'attn_q=q7'
expect_exit2 "no --type" "$BIN" quantize "$TMP/in.gguf" "$OUT"
expect_exit2 "negative --threads" "$BIN" quantize "$TMP/in.gguf" "$OUT" --type q8_0 --threads -1
expect_exit2 "unwritable OUT" "$BIN" quantize "$TMP/in.gguf" "$TMP/errs/no/such/dir.gguf" \
  --type q8_0
[ -z "$(ls -A "$TMP/errs")" ] || fail "failed runs left files: $(ls "$TMP/errs")"
sum=$(sha256sum <"$TMP/in.gguf")
expect_exit2 "OUT same as IN" "$BIN" quantize "$TMP/in.gguf" "$TMP/in.gguf" --type q8_0
expect_exit2 "OUT same as IN (other spelling)" "$BIN" quantize "$TMP/in.gguf" "$TMP/./in.gguf" \
  --type q8_0
[ "$(sha256sum <"$TMP/in.gguf")" = "$sum" ] || fail "OUT same as IN: the input changed"
ls "$TMP"/in.gguf.tmp-* >/dev/null 2>&1 && fail "OUT same as IN: a temporary file was left"

# 5. A failure after OUT would be opened keeps an existing OUT byte-identical and leaves no
# OUT.tmp-* behind: a GGUF whose second matrix holds a NaN fails in quantize_row, after the
# header and the first tensor went out (ok.gguf is the same file without the NaN).
python3 - "$TMP/nan.gguf" "$TMP/ok.gguf" <<'PY'
import struct, sys
def gguf_str(s):
    return struct.pack("<Q", len(s)) + s.encode()
rows = 32
good = [((i * 7) % 13 - 6) / 8.0 for i in range(rows * rows)]
bad = list(good)
bad[rows * rows - 5] = float("nan")  # in the last row, so the rows before it convert fine
def write_gguf(path, tensors):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1)
    out += gguf_str("general.architecture") + struct.pack("<I", 8) + gguf_str("llama")
    offset = 0
    for name, values in tensors:
        # 2 dims {32, 32}, type 0 (f32); 4 KiB per tensor keeps every offset 32-aligned.
        out += gguf_str(name) + struct.pack("<IQQIQ", 2, rows, rows, 0, offset)
        offset += 4 * len(values)
    out += b"\0" * (-len(out) % 32)
    for _, values in tensors:
        out += struct.pack(f"<{len(values)}f", *values)
    open(path, "wb").write(out)
write_gguf(sys.argv[1], [("blk.0.attn_q.weight", good), ("blk.0.attn_k.weight", bad)])
write_gguf(sys.argv[2], [("blk.0.attn_q.weight", good), ("blk.0.attn_k.weight", good)])
PY
mkdir "$TMP/keep"
printf 'sentinel: an older model\n\0\377' >"$TMP/keep/out.gguf"
sum=$(sha256sum <"$TMP/keep/out.gguf")
if expect_exit2 "NaN in the second tensor" "$BIN" quantize "$TMP/nan.gguf" "$TMP/keep/out.gguf" \
  --type q8_0 --threads 2; then
  grep -q "blk.0.attn_k.weight" "$TMP/err" || fail "NaN: the error does not name the tensor"
fi
[ "$(sha256sum <"$TMP/keep/out.gguf")" = "$sum" ] || fail "late failure: the existing OUT changed"
ls "$TMP"/keep/out.gguf.tmp-* >/dev/null 2>&1 && fail "late failure: a temporary file was left"
[ "$(ls "$TMP/keep")" = out.gguf ] || fail "late failure: unexpected files: $(ls "$TMP/keep")"
# Without the NaN it quantizes, replacing the sentinel.
"$BIN" quantize "$TMP/ok.gguf" "$TMP/keep/out.gguf" --type q8_0 --threads 2 >/dev/null 2>&1 ||
  fail "quantize over an existing OUT failed"
expect_types "$TMP/keep/out.gguf" blk.0.attn_q.weight=q8_0 blk.0.attn_k.weight=q8_0
[ "$(ls "$TMP/keep")" = out.gguf ] || fail "success: unexpected files: $(ls "$TMP/keep")"
echo "ok: an existing OUT survives a late failure"

finish
