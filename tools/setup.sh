#!/usr/bin/env bash
# Installs everything `make build` and `make test` need on a fresh Debian 12 machine.
# Idempotent: each step checks first and does nothing when already satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git unzip python3 python3-venv
  clang libclang-rt-14-dev clang-format
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libpcre2-dev libboost-dev
  prometheus-cpp-dev prometheus bible-kjv-text bible-kjv libnuma-dev
  python3-yaml librocm-smi-dev
  hipcc libamdhip64-dev rocm-device-libs
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing apt packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python tools for tests (never needed by the server itself). Reinstalled whenever
# tools/requirements-test.txt changes (a stamp holds the hash of the last installed version).
req_hash=$(sha256sum tools/requirements-test.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.requirements-hash 2>/dev/null)" != "$req_hash" ]; then
  echo "setup: installing Python test tools into .venv"
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r tools/requirements-test.txt
  echo "$req_hash" > .venv/.requirements-hash
fi

tools/fetch_model.sh
# The perplexity corpus (data/kjv.txt, ignored by git) from the Debian packages above.
tools/fetch_corpus.sh
