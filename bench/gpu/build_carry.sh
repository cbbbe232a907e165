#!/usr/bin/env bash
# Builds, on the development machine, what bench/gpu/run.sh runs on a GPU machine, into
# build-gpucarry/ (git-ignored), for the device tool's `carry`, and the same as one xz archive,
# .carry/gpucarry.tar.xz (about a quarter of the size: with the peer's 26 MB archive beside it
# the call stays under the 64 MiB a call carries; unpack it there with
# `mkdir -p build-gpucarry && tar -xJf .carry/gpucarry.tar.xz -C build-gpucarry`).
# Usage: bench/gpu/build_carry.sh
#
#   bin/gpu_op_test   the GPU tests, all of tests/gpu/*.cu (CUDA, sm_90)
#   bin/novaserve     the CLI with --device cuda (serve/generate/bench on the GPU, and `synth`:
#                     an 8B file is too big to carry),
#   lib/              with the shared libraries it needs that the GPU image may lack
#                     (prometheus-cpp, PCRE2, libnuma for serve's --numa)
#   shared/testdata/tokenizers/   the vocab GGUFs of the synth presets (NOVASERVE_SHARED_DIR)
#
# Why build here: the GPU machines have CUDA 13, cmake and ninja but none of the Debian -dev
# packages the project configures against (nlohmann-json, CLI11, PCRE2, GoogleTest, Boost,
# prometheus-cpp), so the cuda preset cannot configure there. The test binary links GoogleTest
# and the CUDA runtime statically and drops unused shared libraries (--as-needed), so it needs
# only glibc, libstdc++, libgcc, cuBLAS (part of CUDA 13) and the carried PCRE2 (the tokenizer's
# regex engine, for the GPU-vs-CPU tests on the default model) at run time; this script checks
# that.
set -eu
cd "$(dirname "$0")/../.."

cmake --preset cuda >/dev/null
ninja -C build-cuda -j2 gpu_op_test novaserve

CARRY=build-gpucarry
rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib" "$CARRY/shared/testdata/tokenizers"
cp build-cuda/gpu_op_test build-cuda/novaserve "$CARRY/bin/"
strip "$CARRY/bin/gpu_op_test" "$CARRY/bin/novaserve"
for lib in libprometheus-cpp-core.so.1.0 libpcre2-8.so.0 libnuma.so.1; do
  cp -L "$(ldd build-cuda/novaserve | awk -v l="$lib" '$1 == l {print $3}')" "$CARRY/lib/$lib"
done
VOCABS=${NOVASERVE_SHARED_DIR:-../shared}/testdata/tokenizers
cp "$VOCABS/ggml-vocab-llama-bpe.gguf" "$VOCABS/ggml-vocab-qwen2.gguf" \
  "$CARRY/shared/testdata/tokenizers/"

# Every shared library must be one the GPU machine has. NVML (libnvidia-ml.so.1) and ROCm SMI are
# dlopen'ed by src/telemetry at run time, never linked, so they do not appear here.
bad=$(LD_LIBRARY_PATH=$CARRY/lib ldd "$CARRY/bin/gpu_op_test" | awk '{print $1}' |
  grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s)\.so|libcublas(Lt)?\.so\.13|libpcre2-8)' ||
  true)
if [ -n "$bad" ]; then
  echo "build_carry: unexpected shared libraries: $bad" >&2
  exit 1
fi
missing=$(LD_LIBRARY_PATH=$CARRY/lib ldd "$CARRY/bin/novaserve" | awk '{print $1}' |
  grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s)\.so|libcublas(Lt)?\.so\.13|libprometheus-cpp-core|libpcre2-8|libnuma)' ||
  true)
if [ -n "$missing" ]; then
  echo "build_carry: novaserve needs unexpected shared libraries: $missing" >&2
  exit 1
fi
mkdir -p .carry
tar -cJf .carry/gpucarry.tar.xz -C "$CARRY" .
echo "build_carry: $CARRY is $(du -sh "$CARRY" | cut -f1), .carry/gpucarry.tar.xz" \
  "$(du -sh .carry/gpucarry.tar.xz | cut -f1); gpu_op_test needs:"
ldd "$CARRY/bin/gpu_op_test" | awk '{print "  " $1}'
