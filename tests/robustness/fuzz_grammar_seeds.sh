#!/usr/bin/env bash
# Writes a seed corpus for fuzz_grammar into DIR: JSON schemas from the shared MaskBench sample
# (mode byte 0), GBNF grammars (1), regexes (2) and a choice list (3).
# Usage: fuzz_grammar_seeds.sh DIR
set -euo pipefail
dir=${1:?usage: fuzz_grammar_seeds.sh DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${NOVASERVE_SHARED_DIR:-$root/../shared}
mkdir -p "$dir"
python3 - "$dir" "$shared/testdata/json-schemas" <<'PY'
import glob, json, os, sys
out, schemas = sys.argv[1], sys.argv[2]
for i, f in enumerate(sorted(glob.glob(os.path.join(schemas, '*.json')))[::8]):
    s = json.dumps(json.load(open(f))['schema'], separators=(',', ':'))
    if len(s) < 20000:
        open(os.path.join(out, 'schema%03d' % i), 'wb').write(b'\x00' + s.encode())
gbnf = [
    'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" expr ")"\n',
    'root ::= item ("," item)*\nitem ::= "red" | "green" | [a-z]{2,4}\n',
    'root ::= "{" ws (pair ("," ws pair)*)? "}"\npair ::= "\\"" [^"]* "\\"" ":" ws [0-9]+\nws ::= [ \\t\\n]*\n',
    'root ::= root "a" | "b"\n',
]
for i, g in enumerate(gbnf):
    open(os.path.join(out, 'gbnf%d' % i), 'wb').write(b'\x01' + g.encode())
for i, r in enumerate(['[a-z]+@[a-z]+\\.com', '(a+)+$', '\\d{3}-\\d{4}', '(?:ab|cd){2,5}x?']):
    open(os.path.join(out, 'regex%d' % i), 'wb').write(b'\x02' + r.encode())
open(os.path.join(out, 'choice0'), 'wb').write(b'\x03positive\nnegative\nneutral')
PY
