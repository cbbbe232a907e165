#!/usr/bin/env bash
# Writes a seed corpus for fuzz_gguf into DIR (made at run time; no binaries are committed).
# Usage: fuzz_gguf_seeds.sh DIR
set -euo pipefail
dir=${1:?usage: fuzz_gguf_seeds.sh DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${NOVASERVE_SHARED_DIR:-$root/../shared}
mkdir -p "$dir"

# Small valid files covering every value type, nested arrays, v2/v3, custom alignment and a few
# tensor types. Written with struct so the seeds do not depend on the code under test.
python3 - "$dir" <<'PY'
import struct, sys
out = sys.argv[1]

def s(x):
    b = x.encode()
    return struct.pack('<Q', len(b)) + b

def val(t, v):
    fmt = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: 'B', 10: 'Q', 11: 'q', 12: 'd'}
    if t == 8:
        return s(v)
    if t == 9:
        et, items = v
        return struct.pack('<IQ', et, len(items)) + b''.join(val(et, i) for i in items)
    return struct.pack('<' + fmt[t], v)

def gguf(version, kvs, tensors, align=32):
    head = b'GGUF' + struct.pack('<IQQ', version, len(tensors), len(kvs))
    for k, t, v in kvs:
        head += s(k) + struct.pack('<I', t) + val(t, v)
    data, off = b'', 0
    for name, ttype, dims, nbytes in tensors:
        head += s(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
        head += struct.pack('<IQ', ttype, off)
        data += bytes((i * 7) & 255 for i in range(nbytes))
        data += b'\0' * (-len(data) % align)
        off = len(data)
    head += b'\0' * (-len(head) % align)
    return head + data

kvs = [('general.architecture', 8, 'llama'), ('t.u8', 0, 200), ('t.i8', 1, -3), ('t.u16', 2, 60000),
       ('t.i16', 3, -2), ('t.u32', 4, 7), ('t.i32', 5, -9), ('t.f32', 6, 0.5), ('t.bool', 7, 1),
       ('t.u64', 10, 2**40), ('t.i64', 11, -2**40), ('t.f64', 12, 1e-9),
       ('t.arr', 9, (8, ['a', 'bc', ''])), ('t.nested', 9, (9, [(4, [1, 2]), (4, [])]))]
tensors = [('tok', 0, [4, 2], 32), ('q', 2, [32, 2], 36), ('k', 12, [256], 144), ('h', 1, [3], 6)]
seeds = {
    'v3_full': gguf(3, kvs, tensors),
    'v2_full': gguf(2, kvs, tensors),
    'v3_align64': gguf(3, kvs + [('general.alignment', 4, 64)], tensors, 64),
    'v3_kv_only': gguf(3, kvs, []),
    'v3_empty': gguf(3, [], []),
    'v3_tensor_only': gguf(3, [], tensors[:1]),
}
for name, b in seeds.items():
    open(f'{out}/{name}.gguf', 'wb').write(b)
PY

# Header prefixes of real files (metadata cut off mid-vocabulary: exercises the error paths).
for f in "$shared"/testdata/tokenizers/ggml-vocab-*.gguf "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf"; do
  [ -f "$f" ] && head -c 4096 "$f" >"$dir/prefix-$(basename "$f")"
done
exit 0
