#!/usr/bin/env bash
# Writes a seed corpus for fuzz_safetensors into DIR (made at run time; no binaries are
# committed). Usage: fuzz_safetensors_seeds.sh DIR
set -euo pipefail
dir=${1:?usage: fuzz_safetensors_seeds.sh DIR}
mkdir -p "$dir"

# Small valid files: several dtypes, empty and scalar tensors, __metadata__, padded and unpadded
# headers. Written with struct + json so the seeds do not depend on the code under test.
python3 - "$dir" <<'PY'
import json, struct, sys
out = sys.argv[1]
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2,
         "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}

def safetensors(tensors, metadata=None, pad=True):
    header, blob = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in tensors:
        n = 1
        for d in shape:
            n *= d
        nbytes = n * SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(blob), len(blob) + nbytes]}
        blob += bytes((len(blob) + i) * 13 & 255 for i in range(nbytes))
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + blob

seeds = {
    "empty": safetensors([]),
    "metadata_only": safetensors([], {"format": "pt"}),
    "llama_like": safetensors([("model.embed_tokens.weight", "F16", [4, 8]),
                               ("model.layers.0.self_attn.q_proj.weight", "BF16", [8, 8]),
                               ("model.norm.weight", "F32", [8])], {"format": "pt"}),
    "all_dtypes": safetensors([(f"t_{d.lower()}", d, [3]) for d in SIZES]),
    "empty_and_scalar": safetensors([("e", "F32", [0]), ("s", "F64", []), ("z", "I8", [2, 0, 3])]),
    "unpadded": safetensors([("w", "U8", [5])], pad=False),
    "rank4": safetensors([("conv", "F32", [2, 1, 2, 2])]),
}
for name, data in seeds.items():
    open(f"{out}/{name}.safetensors", "wb").write(data)
PY
exit 0
