# The two commands a newcomer runs: `make run` and `make test`. Everything else is a step of those.
MODEL ?= models/SmolLM2-135M-Instruct.Q4_1.gguf
HOST ?= 127.0.0.1
PORT ?= 8080
BIN := build/novaserve
FUZZ_SECONDS ?= 20
export NOVASERVE_SHARED_DIR ?= $(abspath ../shared)

.PHONY: check-gpu check-gpu-all setup build build-bin run test unit fuzz bench bench-serve format clean

setup:
	tools/setup.sh

build: setup
	cmake --preset cpu >/dev/null
	cmake --build --preset cpu

# Only the server binary: what `make run` needs (the tests build with `make build`).
build-bin: setup
	cmake --preset cpu >/dev/null
	cmake --build --preset cpu --target novaserve

run: build-bin
	@echo "serving $(MODEL) on http://$(HOST):$(PORT) (Ctrl-C drains and stops). Try:"
	@echo "  curl http://$(HOST):$(PORT)/v1/chat/completions -H 'Content-Type: application/json' \\"
	@echo "    -d '{\"messages\":[{\"role\":\"system\",\"content\":\"You are a helpful assistant.\"},{\"role\":\"user\",\"content\":\"What is the capital of France?\"}],\"max_tokens\":64,\"temperature\":0}'"
	$(BIN) serve --model $(MODEL) --host $(HOST) --port $(PORT)

unit: build
	cd build && ctest --output-on-failure -j2

# Only the fuzzers and the layers they link (110 of the preset's 262 compiles).
FUZZERS := $(basename $(notdir $(wildcard tests/robustness/fuzz_*.cpp)))
fuzz: setup
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz --target $(FUZZERS)
	tools/run_fuzzers.sh build-fuzz $(FUZZ_SECONDS)

# Every GPU source compiled by nvcc (sm_90a) and hipcc (gfx90a, -Werror); no GPU needed.
check-gpu: setup
	tools/check_gpu_compile.sh

# The full arch matrix: sm_90a + sm_80, gfx90a + gfx940.
check-gpu-all: setup
	tools/check_gpu_compile.sh --all

test: unit fuzz check-gpu

bench: build
	tools/bench_cpu.sh

bench-serve: build-bin
	.venv/bin/python tools/bench_serve.py --binary $(BIN) --model $(MODEL)

format:
	find src tests bench -name '*.h' -o -name '*.cpp' -o -name '*.cu' | xargs clang-format -i

clean:
	rm -rf build build-fuzz build-asan build-debug
