#!/usr/bin/env bash
# The CPU overload benchmarks of docs/benchmarks.md ("Overload and soak on the CPU"), in order:
#   1. capacity: closed-loop chat-mix at --concurrency = --max-num-seqs (32) for CAP_MIN minutes;
#   2. soak: open-loop chat-mix at 80% of that capacity for SOAK_MIN minutes (RSS sampled);
#   3. overload: open-loop chat-mix at 3x capacity for OVER_MIN minutes (RSS sampled);
#   4. stall: the largest inter-token gap of a stream while a 6,800-token prompt prefills.
# One server per run: default flags for capacity and soak; for overload also the SLO below, so
# that admission is SLO-aware (in a closed loop, refusals would only be re-sent at once). loadgen
# reports goodput under that SLO in every run. Writes OUTDIR/{capacity,soak,overload}.{json,svg,log} and
# stall.json. Usage: tools/bench_overload_cpu.sh OUTDIR [CAP_MIN SOAK_MIN OVER_MIN]
set -eu
cd "$(dirname "$0")/.."
OUT=${1:?usage: tools/bench_overload_cpu.sh OUTDIR [CAP_MIN SOAK_MIN OVER_MIN]}
CAP_MIN=${2:-5}
SOAK_MIN=${3:-30}
OVER_MIN=${4:-10}
BIN=build/novaserve
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
# The SLO of a 2-core CPU deployment of the default model serving chat-mix (prompts up to 2,048
# tokens): chosen before measuring, not fitted to the results.
SLO_SERVE=(--slo-ttft-p95 10s --slo-ttft-p99 20s --slo-itl-p95 1s)
SLO_LOAD=(--slo-ttft-p95 10s --slo-ttft-p99 20s --slo-itl-p95 1s)
PORT=18090
mkdir -p "$OUT"

start_server() {  # start_server LOG [FLAGS...]: serves on $PORT, sets SPID
  local log=$1
  shift
  "$BIN" serve --model "$MODEL" --port $PORT "$@" >"$log" 2>&1 &
  SPID=$!
  for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "server did not start (see $log)" >&2
  exit 1
}
stop_server() {
  curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^novaserve_(requests_rejected_total|request_success_total|num_preemptions_total)' >>"$1"
  kill -TERM "$SPID"
  wait "$SPID" || true
}
load() {  # load NAME ARGS...: loadgen against the server into OUT/NAME.*
  local name=$1
  shift
  "$BIN" loadgen --url "http://127.0.0.1:$PORT" --workload chat-mix --seed 7 "${SLO_LOAD[@]}" \
    --request-timeout 600s --drain-timeout 600s --json "$OUT/$name.json" --svg "$OUT/$name.svg" \
    "$@" >"$OUT/$name.log" 2>&1
  tail -n 12 "$OUT/$name.log"
}
rate_of() {  # rate_of NAME: completed requests per second of that run
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['request_rate'])" "$OUT/$1.json"
}

echo "== capacity: closed loop, concurrency 32, ${CAP_MIN} min"
start_server "$OUT/capacity-serve.log"
load capacity --concurrency 32 --duration "${CAP_MIN}m" --warmup-requests 2
stop_server "$OUT/capacity.log"
CAP=$(rate_of capacity)
SOAK_QPS=$(python3 -c "print(round(0.8 * $CAP, 4))")
OVER_QPS=$(python3 -c "print(round(3.0 * $CAP, 4))")
echo "capacity $CAP req/s -> soak at $SOAK_QPS, overload at $OVER_QPS" | tee "$OUT/rates.txt"

echo "== soak: open loop at $SOAK_QPS req/s, ${SOAK_MIN} min"
start_server "$OUT/soak-serve.log"
load soak --qps "$SOAK_QPS" --duration "${SOAK_MIN}m" --soak --server-pid "$SPID" \
  --sample-interval 30s --warmup-requests 2
stop_server "$OUT/soak.log"

echo "== overload: open loop at $OVER_QPS req/s, ${OVER_MIN} min"
start_server "$OUT/overload-serve.log" "${SLO_SERVE[@]}"
load overload --qps "$OVER_QPS" --duration "${OVER_MIN}m" --soak --server-pid "$SPID" \
  --sample-interval 30s --warmup-requests 2
stop_server "$OUT/overload.log"

git rev-parse HEAD >"$OUT/commit.txt"
echo "== stall: a 6,800-token prompt beside a stream (default flags)"
.venv/bin/python tools/bench_stall.py --binary "$BIN" --model "$MODEL" --prompt-tokens 6800 \
  --json "$OUT/stall.json"
