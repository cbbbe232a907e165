#!/usr/bin/env bash
# Runs the carried novaserve (build-gpucarry/bin, built by bench/gpu/build_carry.sh) with the two
# shared libraries carried beside it, for suites that take one binary path (NOVASERVE_BIN).
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export LD_LIBRARY_PATH="$ROOT/build-gpucarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NOVASERVE_SHARED_DIR=${NOVASERVE_SHARED_DIR:-$ROOT/build-gpucarry/shared}
exec "$ROOT/build-gpucarry/bin/novaserve" "$@"
