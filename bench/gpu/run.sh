#!/usr/bin/env bash
# GPU machine entry point: runs the GPU tests and writes a report to OUTDIR. All of tests/gpu/*.cu
# (op tests, paged attention, weight arena) are one binary, gpu_op_test.
# Usage: bench/gpu/run.sh OUTDIR [--model GGUF] [--e2e] [--bench] [--serve] [--synth]
#                          [--types] [--models "PRESET ..."] [--no-tests] [--peer DIR] ...
#
# --model GGUF  the default model (SmolLM2-135M-Instruct Q4_1): the GPU runner tests compare it
#               (and a synth model of its shape) with the CPU at batch 32; without it they skip.
# --e2e         the server's e2e suites (tests/e2e, raw-HTTP mode: no openai package there) against
#               `novaserve serve --device cuda` on that model (e2e_server.log, e2e_malformed.log).
# --bench       synthesizes llama3-8b, qwen2-7b and u15-lite-12b Q4_0 (synth.txt) before the GPU
#               tests, whose SynthPresetsMatchCpu compares them with the CPU, then runs
#               `novaserve bench --device cuda` on each model of --models: decode at batch 1 and
#               32, prefill of a 2048-token prompt (twice: the second is warm) (bench-PRESET.*),
#               and, for the first model, a per-op profile (bench-PRESET-profile.log).
# --serve       `novaserve serve --device cuda` on each model of --models and
#               `novaserve loadgen --workload fin-qa --find-max-qps` under the seed's SLO (TTFT
#               P95 <= 187 ms, P99 <= 238 ms) (serve-PRESET.log, loadgen-PRESET.log).
# --models      synth presets for --bench/--serve (default "llama3-8b"; e.g.
#               "llama3-8b u15-lite-12b").
# --no-tests    skips the GPU test binary (for a second call that only benchmarks or serves).
# --tests-filter PATTERN  runs only the GPU tests gtest's --gtest_filter=PATTERN selects.
# --energy      energy per generated token (bench/gpu/energy.py: NVML's energy counter, read only)
#               on the first model of --models at batch 1 and 32, for novaserve and, with --peer,
#               for llama.cpp: each benchmark run twice with more tokens generated the second
#               time, J/token = the energy difference over the token difference (energy.log).
# --overload QPS  for each model of --models: fin-qa, open loop at QPS for 60 s (QPS "auto": 1.5 x
#               the max QPS that --serve found for that model, so give --serve too), against
#               `novaserve serve --device cuda` with default flags and again with the seed's SLO
#               given to the server (--slo-ttft-p95 187ms --slo-ttft-p99 238ms: SLO-aware
#               admission); goodput under that SLO for both (overload-PRESET-{plain,slo}.*).
# --governor    `novaserve serve --device cuda --telemetry nvml --governor slo` (DRY-RUN: never
#               --governor-actuate here) on the first model of --models (or --model when given),
#               driven by loadgen fin-qa at 2, 8 and 16 req/s for 20 s each: the governor's
#               decision lines (governor-decisions.log), /metrics snapshots with the NVML
#               novaserve_gpu_* series after each load level (governor-metrics-QPS.txt; power
#               against load at default clocks, for the simulator), and read-only nvidia-smi
#               clock/power queries before and after (governor-clocks.txt: must not change).
# --pipeline    GPU pipeline stages on GPU 0 (docs/multi-gpu.md) on the first model of --models:
#               before the GPU tests, synthesizes it for GpuPipelineTest.SynthPresetsThroughTwoStages
#               (and SynthPresetsMatchCpu) when --bench does not; then greedy `generate` through 1,
#               2 and 3 stages (batch 1: one micro-batch, so the same text is expected), `bench`
#               decode at batch 32 and 64 (prompt 1024, 128 generated) for 1 stage and 2 stages
#               with micro-batching (overlapped stages: 2 groups of batch / 2) on and off, and
#               `serve --pipeline-parallel 2` (also with --micro-batching, and with
#               --data-parallel 2: two pipelines on GPU 0) answering a completion; the same
#               generate, bench and serve as two processes on GPU 0 (--nccl-init on 127.0.0.1,
#               --rank 0 and 1, --pipeline-transport tcp: NCCL refuses two ranks on one GPU;
#               pipeline.md, pipeline-*.log).
# --synth       times `novaserve synth` for llama3-8b and u15-lite-12b Q4_0 (synth.txt).
# --types       weight types other than Q4_0 on the first model of --models: synthesizes
#               PRESET-q4_k_m.gguf (`--type q4_k_m`: llama.cpp's Q4_K_M mixture) and
#               PRESET-q4_0-ffn16.gguf (`--type q4_0 --keep-f16 'ffn_(gate|up)'`: the product's
#               mixed policy) in the scratch folder (synth.txt), then for each file
#               `novaserve bench --device cuda` at batch 1 (prompts 16 and 1024, 128 generated)
#               and batch 32 (prompt 1024, 128 generated) (types-PRESET-TAG.log and
#               types-PRESET-TAG-b{1,32}.json) and, with --peer, `run-llamacpp.sh TGZ batched
#               FILE 1,32` (llama-batched-bench; types-peer-batched-PRESET-TAG.log); types.md:
#               generation-phase tok/s of both at batch 1 and 32, the ratios, and novaserve's
#               device weight memory line per file.
# --seqs-sweep "N ..."  for the first model of --models: for each N, serve with --max-num-seqs N
#               --max-num-batched-tokens 8192 and drive fin-qa open loop at --sweep-qps (default
#               120) for 30 s (sweep-PRESET-N.*), then `novaserve bench` at batch N (prompt 512,
#               128 generated; bench-sweep-PRESET-N.*): the data behind the GPU default of
#               --max-num-seqs (docs/benchmarks.md, "GPU batch limits").
# --serve-start QPS  first probe of --serve's --find-max-qps (default 64; 32 for u15-lite-12b).
# --serve-max QPS  highest rate --serve's search probes (loadgen --max-qps; default 400): with
#               --serve-start, a window around the expected answer, so that novaserve's and the
#               peer's searches fit one call.
# --loadgen-timeout S  the time limit of each --find-max-qps run, novaserve's and the peer's
#               (default 480; a probe is 30 s plus its drain, the confirmation 60 s, the warm-up
#               10 s): lower it to fit two searches in one call.
# --peer DIR    also measures the peer, llama.cpp, on the same files in the same call (--bench,
#               --serve, --types, --energy). DIR holds
#               llama.cpp-cuda-sm90.tgz and run-llamacpp.sh (copies of ../shared/peers/, which
#               does not travel: copy them into an ignored folder such as .carry/peers and carry
#               it). With --bench, for each model of --models after novaserve's bench:
#               `run-llamacpp.sh TGZ bench MODEL` (llama-bench pp2048 and tg128,
#               peer-bench-PRESET.md) and the ratios novaserve/llama.cpp in summary.md. With
#               --serve, for each model after novaserve's search: llama-server
#               (`run-llamacpp.sh TGZ server MODEL PORT`; peer-server-PRESET.log) driven by the
#               same loadgen command line, from --peer-serve-start (loadgen-peer-PRESET.*), then
#               stopped; both max QPS and their ratio in summary.md. The peer's stages never
#               change the exit status, and a failed novaserve stage does not skip them.
# --peer-serve-start QPS  first probe of the peer's --find-max-qps (default 2: llama-server
#               holds about 4 req/s of fin-qa).
# --peer-serve-max QPS  the same for the peer's search (default 400).
# --peer-only   with --peer: runs the peer's stages of --bench/--serve/--types but not novaserve's
#               (for a call whose novaserve figures came from the call before; ratios then say
#               missing).
# --ab OLD_BIN  A/B speed of two builds on the first model of --models: OLD_BIN (another
#               novaserve, e.g. build-gpucarry/bin/novaserve-old from the previous commit; or
#               env:NAME=VALUE, the carried binary under that environment variable, e.g.
#               env:NOVASERVE_GPU_WGMMA_MAX_ROWS=0 for the path before the wgmma GEMM) and the
#               carried one, interleaved old, new, old, new, old, new; each run is `bench` at
#               batch 1 (prompt 16,2048,2048: decode tg128 and prefill pp2048, the second 2048
#               point warm: the first one after start-up pays one-time costs and varies by +-4%)
#               and at batch 32 (prompt 1024). ab-{old,new}-RUN-{b1,b32}.json and ab.md: the
#               medians of decode b1, decode b32 and pp2048 per build and new/old
#               (docs/benchmarks.md's A/B tables). AB_RUNS=N in the environment: N runs of each
#               (default 3).
# --scratch DIR  synthesized models go to DIR and stay there (a file already there is used as is), so
#               that several run.sh invocations in one call synthesize each model once; without it
#               they go to a new folder under $TMPDIR that is deleted at the end.
#
# Uses build-gpucarry/bin/gpu_op_test when present (built on the development machine by
# bench/gpu/build_carry.sh and passed with the device tool's `carry`), else builds the cuda preset
# here (which needs the Debian -dev packages the project configures against).
#
# OUTDIR gets: env.txt (GPU, driver, date), ldd.txt, gpu_op_test.log, summary.md, and the logs
# of the stages asked for. Exit status: that of the op tests (0 = all passed). Tests that skip for lack
# of a GPU count as passed on a machine without one, and as a failure where nvidia-smi lists a
# GPU (the runtime could not use it).
set -u
usage() {
  echo "usage: bench/gpu/run.sh OUTDIR [--model GGUF] [--e2e] [--bench] [--serve] [--synth] [--types]" \
    "[--models \"PRESET ...\"] [--no-tests] [--overload QPS] [--seqs-sweep \"N ...\"]" \
    "[--sweep-qps QPS] [--serve-start QPS] [--serve-max QPS] [--governor] [--ab OLD_BIN]" \
    "[--loadgen-timeout S] [--peer DIR] [--peer-serve-start QPS] [--peer-serve-max QPS]" \
    "[--peer-only] [--pipeline] [--tests-filter PATTERN] [--energy] [--scratch DIR]" >&2
  exit 2
}
case "${1:-}" in
  "" | -*) usage ;;  # also -h/--help: OUTDIR comes first
esac
OUT=$1
shift
SYNTH=0
TYPES=0
PIPELINE=0
GOVERNOR=0
E2E=0
BENCH=0
SERVE=0
TESTS=1
TESTS_FILTER=
SCRATCH=
ENERGY=0
OVERLOAD_QPS=
SEQS_SWEEP=
SWEEP_QPS=120
SERVE_START=
SERVE_MAX=400
PEER_SERVE_MAX=400
AB_OLD=
LOADGEN_TIMEOUT=480
PEER_DIR=
PEER_SERVE_START=2
PEER_ONLY=0
BENCH_MODELS=llama3-8b
MODEL=
while [ $# -gt 0 ]; do
  case "$1" in
    --synth) SYNTH=1 ;;
    --types) TYPES=1 ;;
    --governor) GOVERNOR=1 ;;
    --pipeline) PIPELINE=1 ;;
    --e2e) E2E=1 ;;
    --bench) BENCH=1 ;;
    --serve) SERVE=1 ;;
    --no-tests) TESTS=0 ;;
    --energy) ENERGY=1 ;;
    --scratch)
      [ $# -ge 2 ] || usage
      SCRATCH=$2
      shift
      ;;
    --tests-filter)
      [ $# -ge 2 ] || usage
      TESTS_FILTER=$2
      shift
      ;;
    --overload)
      [ $# -ge 2 ] || usage
      OVERLOAD_QPS=$2
      shift
      ;;
    --seqs-sweep)
      [ $# -ge 2 ] || usage
      SEQS_SWEEP=$2
      shift
      ;;
    --sweep-qps)
      [ $# -ge 2 ] || usage
      SWEEP_QPS=$2
      shift
      ;;
    --serve-start)
      [ $# -ge 2 ] || usage
      SERVE_START=$2
      shift
      ;;
    --serve-max | --peer-serve-max)
      [ $# -ge 2 ] || usage
      case $2 in '' | *[!0-9.]*) echo "run.sh: $1 takes a rate in req/s" >&2 && usage ;; esac
      if [ "$1" = --serve-max ]; then SERVE_MAX=$2; else PEER_SERVE_MAX=$2; fi
      shift
      ;;
    --loadgen-timeout)
      [ $# -ge 2 ] || usage
      case $2 in '' | *[!0-9]*) echo "run.sh: --loadgen-timeout takes seconds" >&2 && usage ;; esac
      LOADGEN_TIMEOUT=$2
      shift
      ;;
    --peer)
      [ $# -ge 2 ] || usage
      if [ ! -f "$2/llama.cpp-cuda-sm90.tgz" ] || [ ! -f "$2/run-llamacpp.sh" ]; then
        echo "run.sh: --peer $2 must hold llama.cpp-cuda-sm90.tgz and run-llamacpp.sh" >&2
        usage
      fi
      PEER_DIR=$(cd "$2" && pwd)
      shift
      ;;
    --peer-serve-start)
      [ $# -ge 2 ] || usage
      PEER_SERVE_START=$2
      shift
      ;;
    --peer-only) PEER_ONLY=1 ;;
    --ab)
      [ $# -ge 2 ] || usage
      case $2 in
        env:*=*) AB_OLD=$2 ;;
        *) AB_OLD=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") ;;
      esac
      shift
      ;;
    --models)
      [ $# -ge 2 ] || usage
      BENCH_MODELS=$2
      shift
      ;;
    --model)
      [ $# -ge 2 ] || usage
      MODEL=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
      shift
      ;;
    *)
      echo "run.sh: unknown argument $1" >&2
      exit 2
      ;;
  esac
  shift
done
if [ $PEER_ONLY -eq 1 ] && [ -z "$PEER_DIR" ]; then
  echo "run.sh: --peer-only needs --peer DIR" >&2
  usage
fi
if [ -n "$PEER_DIR" ] && [ $BENCH -eq 0 ] && [ $SERVE -eq 0 ] && [ $TYPES -eq 0 ] &&
  [ $ENERGY -eq 0 ]; then
  echo "run.sh: --peer measures llama.cpp in the --bench, --serve, --types and --energy stages;" \
    "give one" >&2
  usage
fi
[ -n "$MODEL" ] && export NOVASERVE_MODEL=$MODEL
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$ROOT" || exit 1

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
# libnccl.so.2 (the NCCL pipeline transport dlopens it) comes from the image's nvidia-nccl-cu13
# Python package, found the same way.
d=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
[ -n "$d" ] && [ -d "$d" ] && LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Every multi-GPU run keeps NVLink SHARP off (novaserve sets it too, unless it is set).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
# The carried PCRE2 and prometheus-cpp (bench/gpu/build_carry.sh).
LD_LIBRARY_PATH="$ROOT/build-gpucarry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH

BIN=build-gpucarry/bin/gpu_op_test
if [ ! -x "$BIN" ] && [ $TESTS -eq 1 ]; then
  echo "run.sh: $BIN not carried; building the cuda preset" | tee "$OUT/build.log"
  if cmake --preset cuda >>"$OUT/build.log" 2>&1 &&
    cmake --build build-cuda --target gpu_op_test >>"$OUT/build.log" 2>&1; then
    BIN=build-cuda/gpu_op_test
  else
    echo "run.sh: build failed (see $OUT/build.log); build the carry with bench/gpu/build_carry.sh"
    exit 1
  fi
fi
[ -x "$BIN" ] && ldd "$BIN" >"$OUT/ldd.txt" 2>&1

# With --bench, synth models of the big presets for the GPU-vs-CPU test SynthPresetsMatchCpu;
# with --pipeline alone, the first model of --models.
NS=$ROOT/bench/gpu/novaserve-carried.sh
if [ -n "$SCRATCH" ]; then
  mkdir -p "$SCRATCH" && scratch=$(cd "$SCRATCH" && pwd) || exit 1
else
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/synth.XXXXXX")
fi
if [ $TESTS -eq 1 ] && { [ $BENCH -eq 1 ] || [ $PIPELINE -eq 1 ]; }; then
  synth_models=
  presets="llama3-8b qwen2-7b u15-lite-12b"
  [ $BENCH -eq 0 ] && presets=${BENCH_MODELS%% *}
  for preset in $presets; do
    [ -f "$scratch/$preset.gguf" ] ||
      "$NS" synth --preset "$preset" --type q4_0 -o "$scratch/$preset.gguf" 2>&1 |
      tee -a "$OUT/synth.txt"
    synth_models=${synth_models:+$synth_models:}$scratch/$preset.gguf
  done
  export NOVASERVE_GPU_SYNTH_MODELS=$synth_models
fi

start=$(date +%s)
if [ $TESTS -eq 1 ]; then
  timeout 420 "$BIN" ${TESTS_FILTER:+--gtest_filter="$TESTS_FILTER"} >"$OUT/gpu_op_test.log" 2>&1
  rc=$?
else
  echo "--no-tests: the GPU tests were not run" >"$OUT/gpu_op_test.log"
  rc=0
fi
secs=$(($(date +%s) - start))

{
  echo "# GPU op tests"
  echo
  sed 's/^/    /' "$OUT/env.txt"
  echo
  echo "exit status $rc after ${secs} s ($BIN)"
  echo
  grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|^\[==========\]|^\[ lockstep \]' "$OUT/gpu_op_test.log" |
    sed 's/^/    /'
  if grep -q 'Skipped$' "$OUT/gpu_op_test.log"; then
    echo
    echo "first skip reason: $(grep -m1 -A1 'Skipped$' "$OUT/gpu_op_test.log" | tail -1)"
  fi
} >"$OUT/summary.md"
cat "$OUT/summary.md"
if [ $SYNTH -eq 1 ]; then
  for preset in llama3-8b u15-lite-12b; do
    "$NS" synth --preset "$preset" --type q4_0 -o "$scratch/timed-$preset.gguf" 2>&1 |
      tee -a "$OUT/synth.txt"
    rm -f "$scratch/timed-$preset.gguf"
  done
fi

# Server e2e suites against the GPU backend (the suites' raw-HTTP mode: tests that need the
# openai package skip here; they run against the CPU in `make test`).
e2e_rc=0
if [ $E2E -eq 1 ]; then
  if [ -z "$MODEL" ]; then
    echo "run.sh: --e2e needs --model" >&2
    e2e_rc=1
  else
    export NOVASERVE_BIN=$NS NOVASERVE_E2E_SERVER_ARGS="--device cuda"
    export NOVASERVE_E2E_LOG=$OUT/e2e_server_stderr.log
    timeout 300 python3 tests/e2e/test_server_e2e.py -v >"$OUT/e2e_server.log" 2>&1 || e2e_rc=1
    timeout 300 python3 tests/e2e/malformed_http.py --binary "$NOVASERVE_BIN" --model "$MODEL" \
      >"$OUT/e2e_malformed.log" 2>&1 || e2e_rc=1
    unset NOVASERVE_E2E_SERVER_ARGS
    echo "e2e suites with --device cuda: exit $e2e_rc (e2e_server.log, e2e_malformed.log)" |
      tee -a "$OUT/summary.md"
    tail -n 4 "$OUT/e2e_server.log" "$OUT/e2e_malformed.log"
  fi
fi

# Figures per model of BENCH_MODELS, the baseline's shapes (../shared/peer-baselines.md):
# decode at batch 1 after a 16-token prompt (llama-bench's tg128 starts from an empty context) and
# prefill of one 2048-token prompt (pp2048), then batch 32 with prompt 1024 and 128 generated
# (batched-bench npl 32: compare its generation-phase rate). The first model also gets a per-op
# profile (NOVASERVE_GPU_PROFILE=1) at batch 1 and 32. With --serve, each model is served and
# driven by loadgen's fin-qa workload to its largest QPS under the seed's SLO.
wait_healthy() {  # wait_healthy PORT: until the server on PORT answers /health (at most 120 s)
  for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}
ensure_model() {  # ensure_model PRESET: synthesizes $scratch/PRESET.gguf once
  [ -f "$scratch/$1.gguf" ] ||
    "$NS" synth --preset "$1" --type q4_0 -o "$scratch/$1.gguf" >>"$OUT/synth.txt" 2>&1
}
bench_model() {  # bench_model PRESET
  local name=$1 m="$scratch/$1.gguf"
  ensure_model "$name"
  local b1=0 b32=0
  {
    # The second 2048 point is warm (the first after start-up pays one-time costs, +-4%): the
    # one --peer compares with llama-bench's pp2048 (a mean of 3 repetitions).
    timeout 200 "$NS" bench --device cuda --model "$m" --batch 1 --prompt 16,2048,2048 \
      --gen 128 --json "$OUT/bench-$name-b1.json" || b1=$?
    timeout 200 "$NS" bench --device cuda --model "$m" --batch 32 --prompt 1024 --gen 128 \
      --json "$OUT/bench-$name-b32.json" || b32=$?
  } >"$OUT/bench-$name.log" 2>&1
  echo "bench $name Q4_0 --device cuda: exit $b1 (batch 1), $b32 (batch 32) (bench-$name.log)" |
    tee -a "$OUT/summary.md"
  grep -E '^\|' "$OUT/bench-$name.log"
}
# find_max_qps PORT FIRST_QPS MAX_QPS GGUF TAG: the one loadgen command line that both servers
# get (only the search window differs): fin-qa under the seed's SLO, default probes (30 s each,
# after loadgen's 10-s warm-up load) and the confirmation run (60 s) at the rate found; requests
# still running 30 s after a run's end count as failed (an overloaded probe fails either way).
# Writes loadgen-TAG.{log,json}; returns loadgen's exit status (124: it hit --loadgen-timeout).
find_max_qps() {
  timeout "$LOADGEN_TIMEOUT" "$NS" loadgen --url "http://127.0.0.1:$1" --workload fin-qa \
    --find-max-qps --qps "$2" --max-qps "$3" --qps-tolerance 0.1 --warmup-requests 8 \
    --drain-timeout 30s --slo-ttft-p95 187ms --slo-ttft-p99 238ms --tokenizer-model "$4" \
    --json "$OUT/loadgen-$5.json" >"$OUT/loadgen-$5.log" 2>&1
}
serve_model() {  # serve_model PRESET FIRST_QPS
  local name=$1 m="$scratch/$1.gguf" port=18080 lrc=0
  ensure_model "$name"
  "$NS" serve --device cuda --model "$m" --port $port >"$OUT/serve-$name.log" 2>&1 &
  local spid=$!
  wait_healthy "$port"
  find_max_qps "$port" "$2" "$SERVE_MAX" "$m" "$name" || lrc=$?
  echo "loadgen fin-qa $name Q4_0 --device cuda: exit $lrc (loadgen-$name.log)" |
    tee -a "$OUT/summary.md"
  # Engine time split: whole steps vs the forward pass (the rest is scheduling and sampling).
  curl -s "http://127.0.0.1:$port/metrics" |
    grep -E '^novaserve_engine_(steps|step_seconds|forward_seconds)_total' |
    tee -a "$OUT/loadgen-$name.log"
  kill -TERM $spid
  wait $spid
  tail -n 12 "$OUT/loadgen-$name.log"
}
overload_model() {  # overload_model PRESET: plain and SLO-aware servers at $OVERLOAD_QPS
  local name=$1 m="$scratch/$1.gguf" port=18081 qps=$OVERLOAD_QPS
  ensure_model "$name"
  if [ "$qps" = auto ]; then
    qps=$(python3 -c "import json,sys; print(round(1.5 * (json.load(open(sys.argv[1]))['find_max_qps']['max_qps'] or 0), 1))" \
      "$OUT/loadgen-$name.json") || qps=0
    if [ "$qps" = 0 ] || [ "$qps" = 0.0 ]; then
      echo "overload $name: no max QPS from --serve; skipped" | tee -a "$OUT/summary.md"
      return
    fi
  fi
  for mode in plain slo; do
    local flags=""
    [ $mode = slo ] && flags="--slo-ttft-p95 187ms --slo-ttft-p99 238ms"
    # shellcheck disable=SC2086
    "$NS" serve --device cuda --model "$m" --port $port $flags >"$OUT/overload-$name-$mode-serve.log" 2>&1 &
    local spid=$!
    wait_healthy "$port"
    timeout 200 "$NS" loadgen --url "http://127.0.0.1:$port" --workload fin-qa --qps "$qps" \
      --duration 60s --drain-timeout 60s --warmup-requests 4 --slo-ttft-p95 187ms \
      --slo-ttft-p99 238ms --tokenizer-model "$m" --json "$OUT/overload-$name-$mode.json" \
      >"$OUT/overload-$name-$mode.log" 2>&1
    echo "overload fin-qa $name at $qps req/s, $mode server: exit $? (overload-$name-$mode.log)" |
      tee -a "$OUT/summary.md"
    curl -s "http://127.0.0.1:$port/metrics" | grep -E '^novaserve_requests_rejected_total' |
      tee -a "$OUT/overload-$name-$mode.log"
    kill -TERM $spid
    wait $spid
    tail -n 14 "$OUT/overload-$name-$mode.log"
  done
}
# energy_model PRESET: the --energy stage (batch 1: 128 vs 512 generated after a 16-token prompt,
# llama-bench tg-only; batch 32: 128 vs 256 generated after 1024-token prompts, as
# llama-batched-bench npl 32). Model loading, prefill and warm-up are in both runs and cancel.
energy_model() {
  local name=$1 m="$scratch/$1.gguf" log="$OUT/energy.log" e="$ROOT/bench/gpu/energy.py"
  ensure_model "$name"
  for gen in 128 512; do
    python3 "$e" run "$log" "novaserve-b1-$gen" -- timeout 200 "$NS" bench --device cuda \
      --model "$m" --batch 1 --prompt 16 --gen $gen >>"$OUT/energy-runs.log" 2>&1
  done
  for gen in 128 256; do
    python3 "$e" run "$log" "novaserve-b32-$gen" -- timeout 200 "$NS" bench --device cuda \
      --model "$m" --batch 32 --prompt 1024 --gen $gen >>"$OUT/energy-runs.log" 2>&1
  done
  if [ -n "$PEER_DIR" ]; then
    local lb=/tmp/lcpp-bin
    [ -x $lb/llama-bench ] || tar -xzf "$PEER_TGZ" -C /tmp
    for gen in 128 512; do
      LD_LIBRARY_PATH=$lb:$LD_LIBRARY_PATH python3 "$e" run "$log" "llamacpp-b1-$gen" -- \
        timeout 200 $lb/llama-bench -m "$m" -ngl 99 -fa 1 -p 0 -n $gen -r 1 \
        >>"$OUT/energy-runs.log" 2>&1
    done
    for gen in 128 256; do
      LD_LIBRARY_PATH=$lb:$LD_LIBRARY_PATH python3 "$e" run "$log" "llamacpp-b32-$gen" -- \
        timeout 300 $lb/llama-batched-bench -m "$m" -ngl 99 -fa on -c 50000 -b 2048 -ub 512 \
        -npp 1024 -ntg $gen -npl 32 >>"$OUT/energy-runs.log" 2>&1
    done
  fi
  {
    echo "# Energy per generated token, $name Q4_0 (energy.log; NVML energy counter, read only)"
    for who in novaserve llamacpp; do
      grep -q "^$who-b1-512 " "$log" 2>/dev/null || continue
      python3 "$e" diff "$log" "$who-b1-128" "$who-b1-512" 384
      python3 "$e" diff "$log" "$who-b32-128" "$who-b32-256" 4096
    done
  } | tee -a "$OUT/summary.md"
}
# The peer (--peer): llama.cpp on the same file, each stage under a timeout; never fatal.
PEER_SH=${PEER_DIR:+$PEER_DIR/run-llamacpp.sh}
PEER_TGZ=${PEER_DIR:+$PEER_DIR/llama.cpp-cuda-sm90.tgz}
peer_bench_model() {  # peer_bench_model PRESET: llama-bench pp2048 + tg128, then the ratios
  local name=$1 m="$scratch/$1.gguf" prc=0
  ensure_model "$name"
  timeout 300 bash "$PEER_SH" "$PEER_TGZ" bench "$m" >"$OUT/peer-bench-$name.md" \
    2>"$OUT/peer-bench-$name.log" || prc=$?
  local brc=0
  timeout 300 bash "$PEER_SH" "$PEER_TGZ" batched "$m" 32 >"$OUT/peer-batched-$name.log" 2>&1 ||
    brc=$?
  {
    echo "peer llama-bench $name Q4_0: exit $prc (peer-bench-$name.md); llama-batched-bench npl 32: exit $brc"
    echo
    python3 "$ROOT/bench/gpu/peer_summary.py" bench "$OUT" "$name"
    echo
  } | tee -a "$OUT/summary.md"
}
# stop_pid PID: TERM, up to 30 s for it to go, then KILL (the peer server is not our child).
stop_pid() {
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 30); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 1
  done
  kill -KILL "$1" 2>/dev/null
}
peer_serve_model() {  # peer_serve_model PRESET: llama-server under the same loadgen search
  local name=$1 m="$scratch/$1.gguf" port=18083 peer_pid lrc=0 src=0
  ensure_model "$name"
  # The script starts llama-server in the background, prints its PID and waits (<= 180 s) for
  # /health; a timeout here kills the script's process group, llama-server included.
  peer_pid=$(timeout 240 bash "$PEER_SH" "$PEER_TGZ" server "$m" "$port" 2>"$OUT/peer-server-$name.err") ||
    src=$?
  peer_pid=$(echo "$peer_pid" | head -n 1)
  case $peer_pid in '' | *[!0-9]*) peer_pid= ;; esac
  if [ $src -eq 0 ] && [ -n "$peer_pid" ]; then
    find_max_qps "$port" "$PEER_SERVE_START" "$PEER_SERVE_MAX" "$m" "peer-$name" || lrc=$?
    echo "loadgen fin-qa $name Q4_0 llama-server: exit $lrc (loadgen-peer-$name.log)" |
      tee -a "$OUT/summary.md"
  else
    echo "peer llama-server $name: did not start (exit $src; peer-server-$name.*)" |
      tee -a "$OUT/summary.md"
  fi
  [ -n "$peer_pid" ] && stop_pid "$peer_pid"
  cp /tmp/llama-server.log "$OUT/peer-server-$name.log" 2>/dev/null
  tail -n 12 "$OUT/loadgen-peer-$name.log" 2>/dev/null
  {
    echo
    python3 "$ROOT/bench/gpu/peer_summary.py" serve "$OUT" "$name"
    echo
  } | tee -a "$OUT/summary.md"
}
governor_dry_run() {  # governor_dry_run GGUF NAME: never actuates (shared machine)
  local m=$1 name=$2 port=18082 q
  local smi_query=clocks.sm,clocks.max.sm,clocks.applications.graphics,power.draw,power.limit
  nvidia-smi --query-gpu=$smi_query --format=csv >"$OUT/governor-clocks.txt" 2>&1
  "$NS" serve --device cuda --model "$m" --port $port --telemetry nvml --governor slo \
    --governor-interval 5 --slo-ttft-p95 187ms --slo-itl-p95 25ms >"$OUT/governor-serve.log" 2>&1 &
  local spid=$!
  wait_healthy "$port"
  for q in 2 8 16; do
    timeout 60 "$NS" loadgen --url "http://127.0.0.1:$port" --workload fin-qa --qps $q \
      --duration 20s --tokenizer-model "$m" >"$OUT/governor-loadgen-$q.log" 2>&1
    curl -s "http://127.0.0.1:$port/metrics" >"$OUT/governor-metrics-$q.txt"
  done
  kill -TERM $spid
  wait $spid
  echo "after:" >>"$OUT/governor-clocks.txt"
  nvidia-smi --query-gpu=$smi_query --format=csv >>"$OUT/governor-clocks.txt" 2>&1
  grep 'governor\|telemetry' "$OUT/governor-serve.log" >"$OUT/governor-decisions.log"
  echo "governor dry-run on $name --device cuda: $(grep -c 'governor: dry-run' \
    "$OUT/governor-decisions.log") decisions, $(grep -c '^novaserve_gpu_' \
    "$OUT/governor-metrics-16.txt") GPU series (governor-*.txt, governor-decisions.log)" |
    tee -a "$OUT/summary.md"
  grep -E '^novaserve_(gpu|governor)_' "$OUT/governor-metrics-16.txt"
  tail -n 6 "$OUT/governor-decisions.log"
}
if [ $GOVERNOR -eq 1 ]; then
  if [ -n "$MODEL" ]; then
    governor_dry_run "$MODEL" "$(basename "$MODEL")"
  else
    first_model=${BENCH_MODELS%% *}
    ensure_model "$first_model"
    governor_dry_run "$scratch/$first_model.gguf" "$first_model"
  fi
fi
if [ $BENCH -eq 1 ]; then
  first=1
  for name in $BENCH_MODELS; do
    [ $PEER_ONLY -eq 1 ] || bench_model "$name"
    [ -n "$PEER_DIR" ] && peer_bench_model "$name"
    if [ $first -eq 1 ] && [ $PEER_ONLY -eq 0 ]; then
      for b in 1 32; do
        echo "== profile $name: batch $b, prompt 1024, gen 32"
        NOVASERVE_GPU_PROFILE=1 timeout 200 "$NS" bench --device cuda --model "$scratch/$name.gguf" \
          --batch $b --prompt 1024 --gen 32 2>&1 | grep -A14 'gpu profile'
      done >"$OUT/bench-$name-profile.log" 2>&1
      cat "$OUT/bench-$name-profile.log"
      first=0
    fi
  done
fi
# types_model PRESET: the --types stage. Each file: novaserve's bench at llama-batched-bench's
# shapes (batch 1 also after a 16-token prompt, llama-bench's tg128), then the peer's.
types_model() {
  local name=$1 tag m b1 b32 prc
  local -a flags
  for tag in q4_k_m q4_0-ffn16; do
    case $tag in
      q4_k_m) flags=(--type q4_k_m) ;;
      q4_0-ffn16) flags=(--type q4_0 --keep-f16 'ffn_(gate|up)') ;;
    esac
    m="$scratch/$name-$tag.gguf"
    if [ ! -f "$m" ] && ! "$NS" synth --preset "$name" "${flags[@]}" -o "$m" >>"$OUT/synth.txt" 2>&1; then
      echo "synth $name ${flags[*]}: failed (synth.txt)" | tee -a "$OUT/summary.md"
      continue
    fi
    if [ $PEER_ONLY -eq 0 ]; then
      b1=0 b32=0
      {
        timeout 200 "$NS" bench --device cuda --model "$m" --batch 1 --prompt 16,1024 --gen 128 \
          --json "$OUT/types-$name-$tag-b1.json" || b1=$?
        timeout 200 "$NS" bench --device cuda --model "$m" --batch 32 --prompt 1024 --gen 128 \
          --json "$OUT/types-$name-$tag-b32.json" || b32=$?
      } >"$OUT/types-$name-$tag.log" 2>&1
      echo "bench $name $tag (${flags[*]}) --device cuda: exit $b1 (batch 1), $b32 (batch 32)" \
        "(types-$name-$tag.log)" | tee -a "$OUT/summary.md"
      grep -E '^\||device weight memory' "$OUT/types-$name-$tag.log"
    fi
    if [ -n "$PEER_DIR" ]; then
      prc=0
      timeout 300 bash "$PEER_SH" "$PEER_TGZ" batched "$m" 1,32 \
        >"$OUT/types-peer-batched-$name-$tag.log" 2>&1 || prc=$?
      echo "peer llama-batched-bench $name $tag npl 1,32: exit $prc" \
        "(types-peer-batched-$name-$tag.log)" | tee -a "$OUT/summary.md"
    fi
  done
  {
    echo "# Weight types: $name, novaserve --device cuda${PEER_DIR:+ and llama.cpp} on the same files"
    echo
    python3 "$ROOT/bench/gpu/peer_summary.py" types "$OUT" "$name" q4_k_m q4_0-ffn16
  } >"$OUT/types.md"
  tee -a "$OUT/summary.md" <"$OUT/types.md"
}
sweep_model() {  # sweep_model PRESET: fin-qa at SWEEP_QPS and a bench per --max-num-seqs
  local name=$1 m="$scratch/$1.gguf" port=18082
  ensure_model "$name"
  for n in $SEQS_SWEEP; do
    "$NS" serve --device cuda --model "$m" --port $port --max-num-seqs "$n" \
      --max-num-batched-tokens 8192 >"$OUT/sweep-$name-$n-serve.log" 2>&1 &
    local spid=$!
    wait_healthy "$port"
    timeout 100 "$NS" loadgen --url "http://127.0.0.1:$port" --workload fin-qa --qps "$SWEEP_QPS" \
      --duration 30s --drain-timeout 30s --warmup-requests 4 --slo-ttft-p95 187ms \
      --slo-ttft-p99 238ms --tokenizer-model "$m" --json "$OUT/sweep-$name-$n.json" \
      >"$OUT/sweep-$name-$n.log" 2>&1
    echo "sweep $name --max-num-seqs $n: fin-qa at $SWEEP_QPS req/s exit $?" | tee -a "$OUT/summary.md"
    grep -E '^(throughput|goodput|SLO|  TTFT|  ITL)' "$OUT/sweep-$name-$n.log" | tee -a "$OUT/summary.md"
    kill -TERM $spid
    wait $spid
    timeout 120 "$NS" bench --device cuda --model "$m" --batch "$n" --prompt 512 --gen 128 \
      --json "$OUT/bench-sweep-$name-$n.json" >"$OUT/bench-sweep-$name-$n.log" 2>&1
    echo "bench $name batch $n (prompt 512, gen 128): exit $?" | tee -a "$OUT/summary.md"
    grep -E '^\|' "$OUT/bench-sweep-$name-$n.log" | tail -n 2 | tee -a "$OUT/summary.md"
  done
}
ab_model() {  # ab_model PRESET: OLD_BIN and the carried build interleaved, three runs each
  local name=$1 m="$scratch/$1.gguf" run which bin
  ensure_model "$name"
  for run in $(seq "${AB_RUNS:-3}"); do
    for which in old new; do
      bin=("$NS")
      if [ "$which" = old ]; then
        case $AB_OLD in
          env:*) bin=(env "${AB_OLD#env:}" "$NS") ;;  # the carried binary under that variable
          *) bin=("$AB_OLD") ;;
        esac
      fi
      timeout 200 "${bin[@]}" bench --device cuda --model "$m" --batch 1 --prompt 16,2048,2048 \
        --gen 128 --json "$OUT/ab-$which-$run-b1.json" >>"$OUT/ab.log" 2>&1
      timeout 200 "${bin[@]}" bench --device cuda --model "$m" --batch 32 --prompt 1024 --gen 128 \
        --json "$OUT/ab-$which-$run-b32.json" >>"$OUT/ab.log" 2>&1
      echo "ab $name $which run $run: done" | tee -a "$OUT/summary.md"
    done
  done
  python3 "$ROOT/bench/gpu/ab_summary.py" "$OUT" | tee "$OUT/ab.md" | tee -a "$OUT/summary.md"
}
pipeline_model() {  # pipeline_model PRESET: the --pipeline stage
  local name=$1 m="$scratch/$1.gguf" port=18431 pid code
  ensure_model "$name"
  local prompt="The quick brown fox jumps over the lazy dog because"
  {
    echo "# GPU pipeline stages on one device: $name Q4_0"
    echo
    for flags in "" "--pipeline-parallel 2" "--pipeline-parallel 2 --micro-batching" \
      "--pipeline-parallel 3"; do
      # shellcheck disable=SC2086
      timeout 120 "$NS" generate --device cuda --model "$m" --prompt "$prompt" -n 32 -t 0 \
        $flags >"$OUT/pipeline-generate.out" 2>>"$OUT/pipeline-generate.log"
      echo "generate ${flags:-(1 stage)}: exit $?, md5 $(md5sum <"$OUT/pipeline-generate.out" | cut -c1-12)"
    done
    # Two processes on GPU 0 (--nccl-init on 127.0.0.1; hidden states over the TCP star: NCCL
    # refuses two ranks on one GPU, so the transport is named, not left to auto).
    local rdv=tcp://127.0.0.1:18499
    local ranks="--nccl-init $rdv --world-size 2 --pipeline-transport tcp"
    # shellcheck disable=SC2086
    timeout 120 "$NS" generate --device cuda --model "$m" $ranks --rank 1 \
      2>>"$OUT/pipeline-rank1.log" &
    pid=$!
    # shellcheck disable=SC2086
    timeout 120 "$NS" generate --device cuda --model "$m" --prompt "$prompt" -n 32 -t 0 $ranks \
      >"$OUT/pipeline-generate.out" 2>>"$OUT/pipeline-generate.log"
    code=$?
    wait "$pid"
    echo "generate 2 processes ($rdv): exit $code (rank 1: $?), md5 $(md5sum <"$OUT/pipeline-generate.out" | cut -c1-12)"
    echo
    # Overlapped stages run groups of batch / 2: batch 64 overlapped has the steps of batch 32.
    for batch in 32 64; do
      for flags in "" "--pipeline-parallel 2" "--pipeline-parallel 2 --micro-batching"; do
        # shellcheck disable=SC2086
        timeout 200 "$NS" bench --device cuda --model "$m" --batch "$batch" --prompt 1024 \
          --gen 128 $flags >"$OUT/pipeline-bench.out" 2>>"$OUT/pipeline-bench.log"
        echo "bench batch $batch ${flags:-(1 stage)}: exit $?"
        sed 's/^/    /' "$OUT/pipeline-bench.out"
      done
    done
    local half="--gpu-memory-utilization 0.45"
    # shellcheck disable=SC2086
    timeout 200 "$NS" bench --device cuda --model "$m" --batch 32 --prompt 1024 --gen 128 $half \
      $ranks --rank 1 >/dev/null 2>>"$OUT/pipeline-rank1.log" &
    pid=$!
    # shellcheck disable=SC2086
    timeout 200 "$NS" bench --device cuda --model "$m" --batch 32 --prompt 1024 --gen 128 $half \
      $ranks >"$OUT/pipeline-bench.out" 2>>"$OUT/pipeline-bench.log"
    code=$?
    wait "$pid"
    echo "bench batch 32 2 processes: exit $code (rank 1: $?)"
    sed 's/^/    /' "$OUT/pipeline-bench.out"
    echo
    for flags in "--pipeline-parallel 2" "--pipeline-parallel 2 --micro-batching" \
      "--pipeline-parallel 2 --data-parallel 2" "$half $ranks"; do
      local rank_pid=""
      if [[ $flags == *--world-size* ]]; then
        # shellcheck disable=SC2086
        "$NS" serve --device cuda --model "$m" $flags --rank 1 2>>"$OUT/pipeline-rank1.log" &
        rank_pid=$!
      fi
      # shellcheck disable=SC2086
      "$NS" serve --device cuda --model "$m" --port "$port" $flags >"$OUT/pipeline-serve.log" 2>&1 &
      pid=$!
      if wait_healthy "$port"; then
        code=$(curl -s -o "$OUT/pipeline-serve-reply.json" -w '%{http_code}' \
          "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
          -d '{"prompt": "Hello", "max_tokens": 16, "temperature": 0}')
        echo "serve $flags: POST /v1/completions answered HTTP $code; /health: $(curl -s \
          "http://127.0.0.1:$port/health")"
      else
        echo "serve $flags: not healthy within 120 s"
      fi
      kill "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      if [ -n "$rank_pid" ]; then
        wait "$rank_pid"
        echo "serve rank 1: exit $?"
      fi
      grep "novaserve pipeline:" "$OUT/pipeline-serve.log"
    done
  } >"$OUT/pipeline.md" 2>&1
  tee -a "$OUT/summary.md" <"$OUT/pipeline.md"
}
if [ $TYPES -eq 1 ]; then
  types_model "${BENCH_MODELS%% *}"
fi
if [ $PIPELINE -eq 1 ]; then
  pipeline_model "${BENCH_MODELS%% *}"
fi
if [ -n "$AB_OLD" ]; then
  LD_LIBRARY_PATH="$ROOT/build-gpucarry/lib:$LD_LIBRARY_PATH" ab_model "${BENCH_MODELS%% *}"
fi
if [ -n "$SEQS_SWEEP" ]; then
  sweep_model "${BENCH_MODELS%% *}"
fi
if [ $ENERGY -eq 1 ]; then
  energy_model "${BENCH_MODELS%% *}"
fi
if [ $SERVE -eq 1 ]; then
  for name in $BENCH_MODELS; do
    if [ $PEER_ONLY -eq 0 ]; then
      case $name in
        u15-lite-12b) serve_model "$name" "${SERVE_START:-32}" ;;
        *) serve_model "$name" "${SERVE_START:-64}" ;;
      esac
    fi
    [ -n "$PEER_DIR" ] && peer_serve_model "$name"
  done
fi
if [ -n "$OVERLOAD_QPS" ]; then
  for name in $BENCH_MODELS; do overload_model "$name"; done
fi
[ -n "$SCRATCH" ] || rm -rf "$scratch"
[ $e2e_rc -ne 0 ] && rc=1

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
