#!/usr/bin/env bash
# GPU machine entry point: runs the GPU tests and writes a report to OUTDIR. All of tests/gpu/*.cu
# (op tests, paged attention, weight arena) are one binary, gpu_op_test.
# Usage: bench/gpu/run.sh OUTDIR [--synth]
#
# --synth also times `novaserve synth` (carried build-gpucarry/bin/novaserve) for llama3-8b and
# u15-lite-12b Q4_0 on all cores, writing to $TMPDIR and deleting the files (synth.txt).
#
# Uses build-gpucarry/bin/gpu_op_test when present (built on the development machine by
# bench/gpu/build_carry.sh and passed with the device tool's `carry`), else builds the cuda preset
# here (which needs the Debian -dev packages the project configures against).
#
# OUTDIR gets: env.txt (GPU, driver, date), ldd.txt, gpu_op_test.log, gpu_op_test.xml (GoogleTest
# XML), summary.md. Exit status: that of the op tests (0 = all passed). Tests that skip for lack
# of a GPU count as passed on a machine without one, and as a failure where nvidia-smi lists a
# GPU (the runtime could not use it).
set -u
OUT=${1:?usage: bench/gpu/run.sh OUTDIR [--synth]}
SYNTH=0
[ "${2:-}" = --synth ] && SYNTH=1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$ROOT"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), $(nproc) cores"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  else
    echo "nvidia-smi: not available"
  fi
} >"$OUT/env.txt"

# cuBLAS ships with CUDA; its folder is not always on the loader path.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
  $(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null); do
  [ -d "$d" ] && LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
export LD_LIBRARY_PATH

BIN=build-gpucarry/bin/gpu_op_test
if [ ! -x "$BIN" ]; then
  echo "run.sh: $BIN not carried; building the cuda preset" | tee "$OUT/build.log"
  if cmake --preset cuda >>"$OUT/build.log" 2>&1 &&
    cmake --build build-cuda --target gpu_op_test >>"$OUT/build.log" 2>&1; then
    BIN=build-cuda/gpu_op_test
  else
    echo "run.sh: build failed (see $OUT/build.log); build the carry with bench/gpu/build_carry.sh"
    exit 1
  fi
fi
ldd "$BIN" >"$OUT/ldd.txt" 2>&1

start=$(date +%s)
"$BIN" --gtest_output="xml:$OUT/gpu_op_test.xml" >"$OUT/gpu_op_test.log" 2>&1
rc=$?
secs=$(($(date +%s) - start))

{
  echo "# GPU op tests"
  echo
  sed 's/^/    /' "$OUT/env.txt"
  echo
  echo "exit status $rc after ${secs} s ($BIN)"
  echo
  grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|^\[==========\]' "$OUT/gpu_op_test.log" | sed 's/^/    /'
  if grep -q 'Skipped$' "$OUT/gpu_op_test.log"; then
    echo
    echo "first skip reason: $(grep -m1 -A1 'Skipped$' "$OUT/gpu_op_test.log" | tail -1)"
  fi
} >"$OUT/summary.md"
cat "$OUT/summary.md"
if [ $SYNTH -eq 1 ]; then
  NS=build-gpucarry/bin/novaserve
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/synth.XXXXXX")
  for preset in llama3-8b u15-lite-12b; do
    LD_LIBRARY_PATH="$ROOT/build-gpucarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      NOVASERVE_SHARED_DIR="$ROOT/build-gpucarry/shared" \
      "$NS" synth --preset "$preset" --type q4_0 -o "$scratch/$preset.gguf" 2>&1 |
      tee -a "$OUT/synth.txt"
    rm -f "$scratch/$preset.gguf"
  done
  rmdir "$scratch"
fi

if [ $rc -ne 0 ]; then
  echo
  echo "failures:"
  grep -B3 -A12 'Failure$' "$OUT/gpu_op_test.log" | head -80
elif command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU' &&
  grep -q 'Skipped$' "$OUT/gpu_op_test.log"; then
  echo "run.sh: nvidia-smi lists a GPU but the op tests skipped: treating as a failure"
  rc=1
fi
exit $rc
