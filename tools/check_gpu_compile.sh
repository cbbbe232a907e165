#!/usr/bin/env bash
# Compile-only check of the GPU sources with both vendors' compilers, for `make test` on machines
# without a GPU. Usage: tools/check_gpu_compile.sh [--all]
#
#   default  nvcc -arch=sm_90a and hipcc --offload-arch=gfx90a (one arch each keeps CI fast; sm_90a
#            is the cuda preset's arch and the only one that compiles the wgmma GEMM's device code)
#   --all    the full matrix: nvcc sm_90a + sm_80, hipcc gfx90a + gfx940
#
# Compiles every src/backend/gpu/*/*.cu, src/runtime/gpu/*.cu and tests/gpu/*.cu into
# build-gpucheck/, nvcc and hipcc side by side (one job each), with warnings as errors, and prints
# which files each compiler compiled and which it skipped:
#   - hipcc skips src/backend/gpu/dispatch/gpu_blas.cu: hipBLAS is not packaged in Debian bookworm,
#     so the BLAS interface is CUDA-only here (every other GPU file is BLAS-free by design).
#   - tests/gpu/*.cu hold host code only (their kernels are in src/backend/gpu); hipcc compiles
#     them as C++ with the HIP headers, because clang 15's HIP mode crashes on GoogleTest's
#     headers in C++20.
# Exits 0 when everything compiled, 1 on any compile failure, 2 when a compiler is missing.
set -u
cd "$(dirname "$0")/.."

ALL=0
case "${1:-}" in
  "") ;;
  --all) ALL=1 ;;
  *)
    echo "usage: $0 [--all]" >&2
    exit 2
    ;;
esac

NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
HIPCC=${HIPCC:-$(command -v hipcc || true)}
if [ ! -x "$NVCC" ]; then
  echo "check_gpu_compile: nvcc not found (set NVCC or install the CUDA toolkit)" >&2
  exit 2
fi
if [ -z "$HIPCC" ] || [ ! -x "$HIPCC" ]; then
  echo "check_gpu_compile: hipcc not found (apt-get install hipcc libamdhip64-dev rocm-device-libs)" >&2
  exit 2
fi

if [ $ALL -eq 1 ]; then
  NV_ARCHS=(-gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=sm_80)
  NV_LABEL="sm_90a sm_80"
  HIP_ARCHS=(--offload-arch=gfx90a --offload-arch=gfx940)
  HIP_LABEL="gfx90a gfx940"
else
  NV_ARCHS=(-arch=sm_90a)
  NV_LABEL="sm_90a"
  HIP_ARCHS=(--offload-arch=gfx90a)
  HIP_LABEL="gfx90a"
fi

OUT=build-gpucheck
mkdir -p "$OUT/nvcc" "$OUT/hipcc"
WARN=(-Wall -Wextra -Wno-unused-parameter)
KERNELS=(src/backend/gpu/*/*.cu src/runtime/gpu/*.cu)
TESTS=(tests/gpu/*.cu)
# compile LABEL LOG COMMAND...: runs one compile, keeping its output in LOG; on failure prints it
# and appends LABEL to $OUT/failed (the two compilers run in parallel subshells, so results go
# through files rather than shell variables).
compile() {
  local label=$1 log=$2
  shift 2
  if "$@" >"$log" 2>&1; then
    return 0
  fi
  echo "---- $label failed:"
  head -n 40 "$log"
  echo "$label" >>"$OUT/failed"
  return 1
}

nvcc_all() {
  local f name
  for f in "${KERNELS[@]}" "${TESTS[@]}"; do
    name=$(basename "$f" .cu)
    compile "nvcc $f" "$OUT/nvcc/$name.log" "$NVCC" -std=c++20 "${NV_ARCHS[@]}" -Isrc \
      -DNOVASERVE_GPU_HAS_BLAS=1 -DNOVASERVE_GPU_SM90A=1 -Werror all-warnings \
      -Xcompiler "$(IFS=,; echo "${WARN[*]}"),-Werror" -c "$f" -o "$OUT/nvcc/$name.o" &&
      basename "$f" >>"$OUT/nvcc.done"
  done
}

hipcc_all() {
  local f name
  for f in "${KERNELS[@]}"; do
    name=$(basename "$f" .cu)
    if [ "$name" = gpu_blas ]; then
      basename "$f" >>"$OUT/hipcc.skipped"
      continue
    fi
    compile "hipcc $f" "$OUT/hipcc/$name.log" "$HIPCC" -x hip -std=c++20 -ffp-contract=off \
      "${HIP_ARCHS[@]}" -Isrc -Werror "${WARN[@]}" -c "$f" -o "$OUT/hipcc/$name.o" &&
      basename "$f" >>"$OUT/hipcc.done"
  done
  for f in "${TESTS[@]}"; do
    name=$(basename "$f" .cu)
    compile "hipcc $f" "$OUT/hipcc/$name.log" "$HIPCC" -x c++ -D__HIP_PLATFORM_AMD__ \
      -DNOVASERVE_GPU_HIP=1 -std=c++20 "${HIP_ARCHS[@]}" -Isrc -Werror "${WARN[@]}" \
      -c "$f" -o "$OUT/hipcc/$name.o" && echo "$(basename "$f") (host code)" >>"$OUT/hipcc.done"
  done
}

# The two compilers run side by side: each compile is one single-threaded process, and CI has
# 2 cores.
start=$(date +%s)
rm -f "$OUT/failed" "$OUT/nvcc.done" "$OUT/hipcc.done" "$OUT/hipcc.skipped"
touch "$OUT/failed" "$OUT/nvcc.done" "$OUT/hipcc.done" "$OUT/hipcc.skipped"
nvcc_all &
nv_pid=$!
hipcc_all
wait $nv_pid
mapfile -t nv_done <"$OUT/nvcc.done"
mapfile -t hip_done <"$OUT/hipcc.done"
mapfile -t hip_skipped <"$OUT/hipcc.skipped"
mapfile -t failed_files <"$OUT/failed"
failures=${#failed_files[@]}

echo "nvcc ($NV_LABEL): compiled ${#nv_done[@]}: ${nv_done[*]}"
echo "hipcc ($HIP_LABEL): compiled ${#hip_done[@]}: ${hip_done[*]}"
echo "hipcc ($HIP_LABEL): skipped ${#hip_skipped[@]}: ${hip_skipped[*]} (hipBLAS is not in Debian bookworm)"
echo "check_gpu_compile: $(($(date +%s) - start)) s"
if [ "$failures" -ne 0 ]; then
  echo "check_gpu_compile: $failures failure(s): ${failed_files[*]}"
  exit 1
fi
echo "check_gpu_compile: all GPU sources compiled"
