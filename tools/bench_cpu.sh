#!/usr/bin/env bash
# CPU decode benchmark at batch 1: novaserve vs llama.cpp's CPU build (llama-cpp-python from PyPI)
# on the same GGUF, prompt, thread count and generated-token count, interleaved in one run.
# Usage: tools/bench_cpu.sh [MODEL] [THREADS] [GEN] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
THREADS=${2:-$(nproc)}
GEN=${3:-128}
ROUNDS=${4:-3}
PROMPT="The history of the city of Paris"
BIN=build/novaserve

# llama-cpp-python compiles llama.cpp from source on install (several minutes, once).
if [ ! -x .venv-bench/bin/python ] || ! .venv-bench/bin/python -c "import llama_cpp" 2>/dev/null; then
  python3 -m venv .venv-bench
  .venv-bench/bin/pip install -q numpy llama-cpp-python==0.3.36
fi

echo "# $(date -u +%Y-%m-%dT%H:%MZ)  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)  threads=$THREADS gen=$GEN"
for r in $(seq "$ROUNDS"); do
  for mode in fast exact; do
    flag=""; [ "$mode" = exact ] && flag="--exact"
    line=$("$BIN" generate --model "$MODEL" --prompt "$PROMPT" --temperature 0 --max-tokens "$GEN" \
      --ignore-eos --threads "$THREADS" $flag 2>&1 >/dev/null | grep -E "generation:")
    echo "round $r novaserve-$mode: $line"
  done
  echo "round $r llama.cpp: $(.venv-bench/bin/python bench/peer/llamacpp_decode.py "$MODEL" \
    --threads "$THREADS" --prompt "$PROMPT" --gen "$GEN" --repeats 1)"
done
