#!/usr/bin/env bash
# The SLO governor on the fake SMI (`serve --telemetry fake`, a test mode): bad flags exit 2 with
# one line; with --governor-actuate it lowers the fake clock cap under light load and restores it
# on SIGTERM (drain) and on a second signal (fast exit); dry-run writes nothing; and
# `governor simulate` on the sample trace. Usage: governor.sh NOVASERVE_BINARY
source "$(dirname "$0")/lib/cli_test_lib.sh"

M=(serve --model "$MODEL")
expect_exit2 "--governor-actuate without --governor slo" "$BIN" "${M[@]}" --governor-actuate
# Unsigned options: "-5" would otherwise wrap to 2^64 - 5.
expect_exit2 "serve with a negative --kv-cache-memory" "$BIN" "${M[@]}" --kv-cache-memory -5
grep -q "must not be negative, got -5" "$TMP/err" || fail "negative size message: $(cat "$TMP/err")"
expect_exit2 "simulate with a negative --seed" "$BIN" governor simulate --seed -3
grep -q "must not be negative, got -3" "$TMP/err" || fail "negative --seed message: $(cat "$TMP/err")"
expect_exit2 "negative --governor-interval" "$BIN" "${M[@]}" --governor slo \
  --slo-itl-p95 50ms --governor-interval -1
expect_exit2 "--governor-interval below 0.1 s" "$BIN" "${M[@]}" --governor slo \
  --slo-itl-p95 50ms --governor-interval 0.001 &&
  { grep -q 'got 0.001$' "$TMP/err" || fail "interval error does not show 0.001: $(cat "$TMP/err")"; }
# The SMI is probed before the model is opened: with no NVML here, a missing model file is not
# what the one line names.
if ! ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1; then
  expect_exit2 "--governor slo without NVML" "$BIN" serve --model "$TMP/absent.gguf" \
    --governor slo --slo-itl-p95 50ms --telemetry nvml &&
    { grep -q -- '--governor slo: NVML' "$TMP/err" || fail "not the SMI error: $(cat "$TMP/err")"; }
fi
expect_exit2 "--governor-headroom 1" "$BIN" "${M[@]}" --governor slo --slo-itl-p95 50ms \
  --governor-headroom 1
expect_exit2 "--governor-headroom 0" "$BIN" "${M[@]}" --governor slo --slo-itl-p95 50ms \
  --governor-headroom 0
expect_exit2 "--governor slo without an SLO" "$BIN" "${M[@]}" --governor slo
expect_exit2 "--governor slo with --telemetry off" "$BIN" "${M[@]}" --governor slo \
  --slo-itl-p95 50ms --telemetry off
expect_exit2 "--telemetry bogus" "$BIN" "${M[@]}" --telemetry bogus
expect_exit2 "simulate a missing trace" "$BIN" governor simulate --trace "$TMP/none.txt"

# run_governed STATE_FILE SIGNALS ARGS...: serves with the fake SMI writing its caps to
# STATE_FILE, drives light load until the governor steps down (at most 60 s), sends SIGNALS (e.g. "TERM" or
# "TERM TERM") and waits for the exit; the server's stderr is left in $TMP/serve.err.
run_governed() {
  local state=$1 signals=$2
  shift 2
  rm -f "$state"
  NOVASERVE_FAKE_SMI_STATE=$state "$BIN" serve --model "$MODEL" --port 0 --telemetry fake \
    --governor slo --governor-interval 0.2 --governor-down-windows 1 --slo-ttft-p95 100s \
    --slo-itl-p95 100s --shutdown-timeout 30 "$@" 2>"$TMP/serve.err" >/dev/null &
  local pid=$! port="" i
  for i in $(seq 1 600); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$TMP/serve.err")
    [ -n "$port" ] && break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    fail "server did not start: $(tail -c 300 "$TMP/serve.err")"
    kill "$pid"
    return
  fi
  # Light load until the governor has stepped down once (or 60 s: the checks below then fail),
  # rather than for a fixed time: on a loaded machine windows can pass without a decision.
  local end=$((SECONDS + 60))
  while [ $SECONDS -lt $end ] && ! grep -q 'governor: [a-z-]* down' "$TMP/serve.err"; do
    curl -s "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
      -d '{"prompt":"Hi","max_tokens":2}' >/dev/null
  done
  curl -s "http://127.0.0.1:$port/metrics" >"$TMP/metrics"
  # A request in flight makes the first signal drain and the second one exit at once.
  curl -s "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":"Count to one hundred:","max_tokens":200,"ignore_eos":true}' >/dev/null &
  local client=$!
  sleep 0.3
  for s in $signals; do
    kill -s "$s" "$pid"
    sleep 0.2
  done
  wait "$pid"
  echo $? >"$TMP/rc"
  wait "$client" 2>/dev/null
}

run_governed "$TMP/caps" TERM --governor-actuate
grep -q 'governor: actuate down' "$TMP/serve.err" || fail "actuating governor never stepped down"
grep -q '^novaserve_governor_target_sm_clock_hertz{model_name=' "$TMP/metrics" ||
  fail "no governor target in /metrics"
grep -q '^novaserve_gpu_power_watts{model_name="SmolLM2-135M-Instruct.Q4_1",gpu="0"}' \
  "$TMP/metrics" || fail "no fake GPU power series: $(grep gpu_ "$TMP/metrics" | head -3)"
[ "$(cat "$TMP/rc")" = 0 ] || fail "drain exit $(cat "$TMP/rc")"
[ "$(cat "$TMP/caps" 2>/dev/null)" = "$(printf 'gpu=0 cap_hz=0\ngpu=1 cap_hz=0')" ] ||
  fail "caps not restored after SIGTERM: $(cat "$TMP/caps" 2>/dev/null)"
grep -q 'clock cap restored' "$TMP/serve.err" || fail "no restore logged after SIGTERM"

run_governed "$TMP/caps2" "TERM TERM" --governor-actuate
grep -q 'second signal' "$TMP/serve.err" || fail "the second signal did not exit at once"
grep -q 'governor: actuate down' "$TMP/serve.err" || fail "no step down before the 2nd signal"
[ "$(cat "$TMP/caps2" 2>/dev/null)" = "$(printf 'gpu=0 cap_hz=0\ngpu=1 cap_hz=0')" ] ||
  fail "caps not restored after a second signal: $(cat "$TMP/caps2" 2>/dev/null)"

run_governed "$TMP/caps3" TERM
grep -q 'governor: dry-run down' "$TMP/serve.err" || fail "dry-run governor logged no decision"
[ -e "$TMP/caps3" ] && fail "dry-run wrote a clock cap: $(cat "$TMP/caps3")"

finish
