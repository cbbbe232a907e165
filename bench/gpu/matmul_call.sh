#!/usr/bin/env bash
# One device call that measures the GPU matmul paths (issue 16) the way docs/benchmarks.md's
# section "No fp16 weight copies by default" did, within the device tool's 10-minute limit and
# its 8 returned files: each stage's run.sh folder comes back as a tarball in $OUT.
# Usage, on the GPU machine, with .carry (bench/gpu/build_carry.sh's tarball and .carry/peers,
# copies of ../shared/peers/) carried:
#   bench/gpu/matmul_call.sh [SECONDS]     # SECONDS: the time budget (default 560)
# Stages, each under what is left of the budget, most important first:
#   t   the GPU runner lockstep, wgmma, block GEMV and pipeline tests (run.sh --tests-filter)
#   ab  the default path against the fp16-copy path, 3 interleaved runs (run.sh --ab
#       env:NOVASERVE_GPU_WGMMA_MAX_ROWS=0), then llama-batched-bench npl 1,32 on the same file
#   ty  the Q4_K_M and mixed-F16 files against llama.cpp (run.sh --types --peer)
#   en  energy per token against llama.cpp (run.sh --energy --peer)
# The fin-qa search (run.sh --serve) takes a call of its own.
set -u
budget=${1:-560}
T0=$(date +%s)
# Seconds left of the budget, at least 1 (timeout 0 would mean no limit).
left() {
  local l=$((budget - ($(date +%s) - T0)))
  echo $((l < 1 ? 1 : l))
}
say() { echo "[$(($(date +%s) - T0)) s] $*"; }
: "${OUT:?OUT must name the folder whose files come back}"
mkdir -p build-gpucarry && tar -xJf .carry/gpucarry.tar.xz -C build-gpucarry || exit 1
S=/tmp/matmul-call-models
mkdir -p $S
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv \
  >"$OUT/gpu.csv"
pack() { tar czf "$OUT/$1.tgz" -C /tmp "$1" 2>/dev/null; }

timeout 150 bench/gpu/run.sh /tmp/t \
  --tests-filter '*GpuRunnerLockstep.*:GpuRunnerTest.*:GemmQ4_0WgmmaTest.*:GemvBlocks*:GpuPipelineTest.*' \
  >/tmp/t.log 2>&1
say "tests: exit $?"
cp /tmp/t.log /tmp/t/ 2>/dev/null
pack t
grep -E '^\[ *(FAILED|PASSED) ' /tmp/t/gpu_op_test.log

AB_RUNS=3 timeout "$(left)" bench/gpu/run.sh /tmp/ab --no-tests --scratch $S \
  --ab env:NOVASERVE_GPU_WGMMA_MAX_ROWS=0 >/tmp/ab.log 2>&1
say "A/B: exit $?"
timeout "$(left)" bash .carry/peers/run-llamacpp.sh .carry/peers/llama.cpp-cuda-sm90.tgz batched \
  $S/llama3-8b.gguf >/tmp/ab/peer-batched.log 2>&1
say "llama-batched-bench: exit $?"
cp /tmp/ab.log /tmp/ab/ 2>/dev/null
pack ab
cat /tmp/ab/ab.md
grep -E '^\|' /tmp/ab/peer-batched.log

for stage in ty en; do
  case $stage in
    ty) flags=(--types) ;;
    en) flags=(--energy) ;;
  esac
  if [ "$(left)" -lt 60 ]; then
    say "$stage: skipped, $(left) s left"
    continue
  fi
  timeout "$(left)" bench/gpu/run.sh /tmp/$stage --no-tests --scratch $S --peer .carry/peers \
    "${flags[@]}" >/tmp/$stage.log 2>&1
  say "$stage: exit $?"
  cp /tmp/$stage.log /tmp/$stage/ 2>/dev/null
  pack $stage
done
cat /tmp/ty/types.md 2>/dev/null
grep -A6 'Energy per' /tmp/en/summary.md 2>/dev/null
exit 0
