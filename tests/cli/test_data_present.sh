#!/usr/bin/env bash
# Fails when the data the other tests need is missing, so that their GTEST_SKIPs (which keep a
# partial checkout usable) cannot turn a CI run green without testing anything.
# $1: novaserve binary (unused). Needs NOVASERVE_SOURCE_DIR; NOVASERVE_SHARED_DIR optional.
set -u
src=${NOVASERVE_SOURCE_DIR:?}
shared=${NOVASERVE_SHARED_DIR:-$src/../shared}
status=0
need() {
  if [ ! -e "$1" ]; then
    echo "missing test data: $1 ($2)" >&2
    status=1
  fi
}
need "$src/models/SmolLM2-135M-Instruct.Q4_1.gguf" "run tools/fetch_model.sh"
need "$src/.venv/bin/python" "run tools/setup.sh"
need "$shared/testdata/tokenizers" "the checkout must sit beside ../shared, or set NOVASERVE_SHARED_DIR"
need "$shared/testdata/chat-templates" "as above"
need "$shared/cases/weights" "as above"
n_vocab=$(ls "$shared"/testdata/tokenizers/*.gguf.inp 2>/dev/null | wc -l)
if [ "$n_vocab" -lt 6 ]; then
  echo "expected >= 6 tokenizer test vectors in $shared/testdata/tokenizers, found $n_vocab" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "test data present: model, .venv, $n_vocab tokenizer vectors, chat templates, cases"
exit "$status"
