#!/usr/bin/env bash
# Seeds for fuzz_request_framing: every raw request of the smuggling corpus
# (http_smuggling_corpus.json, shared with tests/e2e/http_smuggling.py), placeholders filled in
# as the e2e suite does. Usage: $0 CORPUS_DIR
set -euo pipefail
dir=${1:?usage: fuzz_request_framing_seeds.sh CORPUS_DIR}
mkdir -p "$dir"
python3 - "$(dirname "$0")/http_smuggling_corpus.json" "$dir" <<'PY'
import json, re, sys
corpus = json.load(open(sys.argv[1]))
for i, case in enumerate(corpus["cases"]):
    text = case["request"].replace("{SMUG}", corpus["smuggled"])
    text = text.replace("{AUTH}", "Authorization: Bearer seed-key\r\n").replace("{KEY}", "seed-key")
    text = re.sub(r"\{(.)\*(\d+)\}", lambda m: m.group(1) * int(m.group(2)), text)
    with open("%s/seed_%03d_%s" % (sys.argv[2], i, case["name"]), "wb") as f:
        f.write(text.encode("latin-1"))
PY
