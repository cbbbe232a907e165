#!/usr/bin/env bash
# CLI test for `novaserve convert`. Usage: convert.sh NOVASERVE_BINARY
# Builds a tiny random 2-block Llama checkpoint in Hugging Face layout with the Python standard
# library only (safetensors written with struct + json), converts it as one file and as shards,
# checks the output with `inspect` and `generate`, checks that bad inputs exit 2 with one
# line on stderr and leave no output behind, and that a failure while writing keeps an existing
# OUT unchanged.
source "$(dirname "$0")/lib/cli_test_lib.sh"

# make_checkpoint DIR ARCH SHARDS: config.json, tokenizer files and weights (1 or 2 shards).
make_checkpoint() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, os, random, struct, sys
out, arch, shards = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
E, H, KV, HD, FF, L = 32, 2, 1, 16, 64, 2

# GPT-2's byte-to-unicode table (the byte-level BPE alphabet).
keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
chars, n = {}, 0
for b in range(256):
    if b in keep:
        chars[b] = chr(b)
    else:
        chars[b] = chr(256 + n)
        n += 1
vocab = {chars[b]: i for i, b in enumerate(sorted(chars))}
for t in ["\u0120t", "he"]:
    vocab[t] = len(vocab)
eot = len(vocab)
vocab_size = eot + 4  # the embedding has padding rows, as many real models do
tokenizer = {
    "version": "1.0",
    "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True}],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                      "use_regex": True},
    "post_processor": None,
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False,
              "byte_fallback": False, "vocab": vocab, "merges": ["\u0120 t", "h e"]},
}
json.dump(tokenizer, open(f"{out}/tokenizer.json", "w"))
json.dump({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
           "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"},
          open(f"{out}/tokenizer_config.json", "w"))
json.dump({"architectures": [arch], "model_type": "llama", "hidden_size": E,
           "intermediate_size": FF, "num_hidden_layers": L, "num_attention_heads": H,
           "num_key_value_heads": KV, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "vocab_size": vocab_size, "tie_word_embeddings": False,
           "hidden_act": "silu", "torch_dtype": "float32"}, open(f"{out}/config.json", "w"))

rng = random.Random(1)
tensors = []
def add(name, shape, base=0.0, scale=0.2):
    count = 1
    for d in shape:
        count *= d
    data = struct.pack(f"<{count}f", *[base + rng.uniform(-scale, scale) for _ in range(count)])
    tensors.append((name, shape, data))
add("model.embed_tokens.weight", [vocab_size, E], scale=1.0)
for l in range(L):
    p = f"model.layers.{l}."
    add(p + "input_layernorm.weight", [E], 1.0)
    add(p + "self_attn.q_proj.weight", [H * HD, E])
    add(p + "self_attn.k_proj.weight", [KV * HD, E])
    add(p + "self_attn.v_proj.weight", [KV * HD, E])
    add(p + "self_attn.o_proj.weight", [E, H * HD])
    add(p + "post_attention_layernorm.weight", [E], 1.0)
    add(p + "mlp.gate_proj.weight", [FF, E])
    add(p + "mlp.up_proj.weight", [FF, E])
    add(p + "mlp.down_proj.weight", [E, FF])
add("model.norm.weight", [E], 1.0)
add("lm_head.weight", [vocab_size, E])

def write_safetensors(path, items):
    header, blob = {"__metadata__": {"format": "pt"}}, b""
    for name, shape, data in items:
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob)

if shards == 1:
    write_safetensors(f"{out}/model.safetensors", tensors)
else:
    half = len(tensors) // 2
    parts = {"model-00001-of-00002.safetensors": tensors[:half],
             "model-00002-of-00002.safetensors": tensors[half:]}
    weight_map = {}
    for file, items in parts.items():
        write_safetensors(f"{out}/{file}", items)
        weight_map.update({name: file for name, _, _ in items})
    json.dump({"metadata": {"total_size": sum(len(d) for _, _, d in tensors)},
               "weight_map": weight_map}, open(f"{out}/model.safetensors.index.json", "w"))
PY
}

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

# expect_convert_fails DESCRIPTION NEEDLE ARGS...: exit 2, one line naming NEEDLE, no output.
expect_convert_fails() {
  local what=$1 needle=$2
  shift 2
  rm -f "$TMP/bad.gguf"
  expect_exit2 "$what" "$BIN" convert "$@" || return
  grep -qi -- "$needle" "$TMP/err" || fail "$what: stderr lacks '$needle': $(cat "$TMP/err")"
  [ ! -e "$TMP/bad.gguf" ] || fail "$what: left $TMP/bad.gguf behind"
}

make_checkpoint "$TMP/hf" LlamaForCausalLM 1 || { fail "could not build the checkpoint"; finish; }

# 1. f32 from one model.safetensors: loads and generates.
"$BIN" convert "$TMP/hf" "$TMP/f32.gguf" --type f32 >"$TMP/conv.out" 2>"$TMP/conv.err"
rc=$?
[ $rc -eq 0 ] || fail "convert --type f32: exit $rc: $(cat "$TMP/conv.err")"
grep -q "^converted .*: llama, 21 tensors" "$TMP/conv.out" ||
  fail "convert summary: $(cat "$TMP/conv.out")"
[ ! -s "$TMP/conv.err" ] || fail "convert wrote to stderr (no TTY: no progress bar): $(cat "$TMP/conv.err")"
"$BIN" inspect "$TMP/f32.gguf" >"$TMP/inspect.out" 2>&1 || fail "inspect f32.gguf failed"
for line in 'general.architecture (string) = "llama"' 'tokenizer.ggml.pre (string) = "gpt-2"' \
  'tokenizer.ggml.model (string) = "gpt2"' 'llama.block_count (uint32) = 2' \
  'general.file_type (uint32) = 0' 'tokenizer.ggml.eos_token_id (uint32) = 258'; do
  grep -qF "$line" "$TMP/inspect.out" || fail "f32.gguf lacks: $line"
done
[ "$(tensor_type "$TMP/f32.gguf" blk.1.attn_q.weight)" = f32 ] || fail "attn_q is not f32"
[ "$(tensor_type "$TMP/f32.gguf" output.weight)" = f32 ] || fail "no f32 output.weight"
"$BIN" generate -m "$TMP/f32.gguf" -p "the cat" -n 4 --temperature 0 --ignore-eos --threads 2 \
  >/dev/null 2>"$TMP/gen.err" || fail "generate from f32.gguf: $(cat "$TMP/gen.err")"
grep -q "generation: 4 tokens" "$TMP/gen.err" || fail "generate: $(cat "$TMP/gen.err")"
echo "ok: f32 conversion loads and generates"

# 2. The default type is f16; bf16 on request; norms stay f32.
"$BIN" convert "$TMP/hf" "$TMP/f16.gguf" >/dev/null 2>&1 || fail "convert (default type) failed"
[ "$(tensor_type "$TMP/f16.gguf" blk.0.ffn_up.weight)" = f16 ] || fail "default type is not f16"
[ "$(tensor_type "$TMP/f16.gguf" blk.0.ffn_norm.weight)" = f32 ] || fail "norm is not f32"
"$BIN" convert "$TMP/hf" "$TMP/bf16.gguf" --type bf16 >/dev/null 2>&1 || fail "convert bf16 failed"
[ "$(tensor_type "$TMP/bf16.gguf" token_embd.weight)" = bf16 ] || fail "embedding is not bf16"
echo "ok: f16 default, bf16"

# 3. Sharded weights with model.safetensors.index.json give the same tensors.
make_checkpoint "$TMP/sharded" LlamaForCausalLM 2
"$BIN" convert "$TMP/sharded" "$TMP/sharded.gguf" --type f32 >"$TMP/conv.out" 2>&1 ||
  fail "sharded convert: $(cat "$TMP/conv.out")"
grep -q "2 weight file(s)" "$TMP/conv.out" || fail "sharded summary: $(cat "$TMP/conv.out")"
"$BIN" inspect "$TMP/sharded.gguf" | grep -A100 '^tensors:' >"$TMP/t1"
"$BIN" inspect "$TMP/f32.gguf" | grep -A100 '^tensors:' >"$TMP/t2"
cmp -s "$TMP/t1" "$TMP/t2" || fail "sharded and single-file tensor tables differ"
echo "ok: sharded checkpoint"

# 4. Bad input: exit 2, one line naming the problem, no output file.
# Every file of the checkpoint is an input: none may be the output (they stay byte-identical).
for f in config.json tokenizer.json tokenizer_config.json model.safetensors; do
  sum=$(sha256sum <"$TMP/hf/$f")
  expect_exit2 "output is the checkpoint's $f" "$BIN" convert "$TMP/hf" "$TMP/hf/$f" &&
    { grep -q "checkpoint directory\|input file" "$TMP/err" || fail "$f: message: $(cat "$TMP/err")"; }
  [ "$(sha256sum <"$TMP/hf/$f")" = "$sum" ] || fail "convert changed the checkpoint's $f"
done
sum=$(sha256sum <"$TMP/sharded/model.safetensors.index.json")
expect_exit2 "output is the shard index" "$BIN" convert "$TMP/sharded" \
  "$TMP/sharded/model.safetensors.index.json"
[ "$(sha256sum <"$TMP/sharded/model.safetensors.index.json")" = "$sum" ] ||
  fail "convert changed the shard index"

expect_convert_fails "missing dir" "no such directory" "$TMP/nope" "$TMP/bad.gguf"
expect_convert_fails "bad --type" "--type 'q4_0'" "$TMP/hf" "$TMP/bad.gguf" --type q4_0
cp -r "$TMP/hf" "$TMP/trunc"
head -c -7 "$TMP/hf/model.safetensors" >"$TMP/trunc/model.safetensors"
expect_convert_fails "truncated safetensors" "model.safetensors" "$TMP/trunc" "$TMP/bad.gguf"
cp -r "$TMP/hf" "$TMP/badhdr"
printf '\x0f\x00\x00\x00\x00\x00\x00\x00{"a": broken! }' >"$TMP/badhdr/model.safetensors"
expect_convert_fails "bad safetensors header" "not valid JSON" "$TMP/badhdr" "$TMP/bad.gguf"
printf '\xff\xff\xff\xff\xff\xff\x00\x00{}' >"$TMP/badhdr/model.safetensors"
expect_convert_fails "huge header length" "exceeds the limit" "$TMP/badhdr" "$TMP/bad.gguf"
make_checkpoint "$TMP/neox" GPTNeoXForCausalLM 1
expect_convert_fails "unknown architecture" "GPTNeoXForCausalLM" "$TMP/neox" "$TMP/bad.gguf"
cp -r "$TMP/hf" "$TMP/notok"
rm "$TMP/notok/tokenizer.json"
expect_convert_fails "missing tokenizer.json" "tokenizer.json" "$TMP/notok" "$TMP/bad.gguf"
expect_convert_fails "missing operands" "required" "$TMP/hf"

# 5. A failure after OUT would be opened keeps an existing OUT byte-identical and leaves no
# OUT.tmp-* behind. Every input check happens before the output is created, so no bad checkpoint
# fails late; a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored so write() fails with EFBIG, as on
# a full disk) lets the header through and fails while the tensors stream.
mkdir "$TMP/keep"
printf 'sentinel: an older model\n\0\377' >"$TMP/keep/out.gguf"
sum=$(sha256sum <"$TMP/keep/out.gguf")
[ "$(stat -c %s "$TMP/f32.gguf")" -gt $((64 * 1024)) ] || fail "f32.gguf is too small for the limit"
if expect_exit2 "write fails while streaming (64 KiB file limit)" with_file_limit 64 \
  "$BIN" convert "$TMP/hf" "$TMP/keep/out.gguf" --type f32; then
  grep -q "write failed" "$TMP/err" || fail "late failure: not a write error: $(cat "$TMP/err")"
fi
[ "$(sha256sum <"$TMP/keep/out.gguf")" = "$sum" ] || fail "late failure: the existing OUT changed"
ls "$TMP"/keep/out.gguf.tmp-* >/dev/null 2>&1 && fail "late failure: a temporary file was left"
[ "$(ls "$TMP/keep")" = out.gguf ] || fail "late failure: unexpected files: $(ls "$TMP/keep")"
# And a successful run replaces it.
"$BIN" convert "$TMP/hf" "$TMP/keep/out.gguf" --type f32 >/dev/null 2>&1 ||
  fail "convert over an existing OUT failed"
cmp -s "$TMP/keep/out.gguf" "$TMP/f32.gguf" || fail "convert over an existing OUT: wrong bytes"
echo "ok: an existing OUT survives a late failure"

finish
