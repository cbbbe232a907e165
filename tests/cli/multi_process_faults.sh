#!/usr/bin/env bash
# CLI test of the faults a new-user trial found in the multi-process pipeline (issue 17,
# docs/multi-gpu.md "Several processes"), on the CPU, all on 127.0.0.1.
# Usage: multi_process_faults.sh BINARY
# - bad --rank-timeout values exit 2 with one line;
# - a world that fails to form exits 1 with one short error line, in generate, bench and serve;
# - idle connections to rank 0's port do not delay a rank;
# - a model of other tensor bytes, or of the same shapes and sizes but other weights, is refused
#   on both sides;
# - serve: a duplicate rank that comes after the world is full is refused and exits 1 with the
#   reason; a stopped rank (SIGSTOP) fails its requests after --rank-timeout, /health turns
#   unhealthy and rank 0 still exits 0 on SIGTERM; the rank, resumed, finds rank 0's shutdown;
# - while rank 0 waits for a stopped rank after its drain deadline, a second SIGTERM ends it at
#   once, and it tells the rank to shut down.
source "$(dirname "$0")/lib/cli_test_lib.sh"
source "$(dirname "$0")/lib/ranks_lib.sh"

require_model

for cmd in generate bench serve; do
  quick_args $cmd
  world=(--nccl-init tcp://127.0.0.1:1 --world-size 2)
  expect_exit2 "$cmd: --rank-timeout 0" "$BIN" $cmd "${args[@]}" "${world[@]}" --rank-timeout 0 &&
    { grep -q -- "--rank-timeout must be in (0, 86400] seconds, got 0" "$TMP/err" ||
      fail "$cmd: --rank-timeout message"; }
  expect_exit2 "$cmd: --rank-timeout 1e9" "$BIN" $cmd "${args[@]}" "${world[@]}" \
    --rank-timeout 1e9
  expect_exit2 "$cmd: --rank-timeout x" "$BIN" $cmd "${args[@]}" "${world[@]}" --rank-timeout x
done

# A world that does not form is a failure at run time: exit 1, and one short error line (no
# model path, no "engine:").
for cmd in generate bench serve; do
  quick_args $cmd
  "$BIN" $cmd "${args[@]}" --nccl-init tcp://127.0.0.1:$(free_port) --world-size 2 \
    --nccl-init-timeout 1 >/dev/null 2>"$TMP/err"
  rc=$?
  line=$(grep ": error: " "$TMP/err")
  [ $rc -eq 1 ] || fail "$cmd: rank 0 alone: exit $rc, expected 1: $line"
  [ "$(grep -c ': error: ' "$TMP/err")" -eq 1 ] || fail "$cmd: rank 0 alone: not one error line"
  [[ $line == "novaserve $cmd: error: --nccl-init tcp://127.0.0.1:"*": only 0 of the 1 other "*"(missing: rank 1)" ]] ||
    fail "$cmd: rank 0 alone: message: $line"
done
echo "ok: a world that does not form exits 1 in generate, bench and serve: $line"

prompt="The capital of France is"
"$BIN" generate --model "$MODEL" --threads 1 --prompt "$prompt" -n 8 -t 0 >"$TMP/one" 2>/dev/null ||
  fail "generate (one process) exited $?"

# Three idle connections reach rank 0 first; rank 1 must still join within its 3-s timeout (read
# one at a time, each idle connection would hold it for the 5-s hello timeout).
port=$(free_port)
"$BIN" generate --model "$MODEL" --threads 1 --prompt "$prompt" -n 8 -t 0 \
  --nccl-init tcp://127.0.0.1:$port --world-size 2 --nccl-init-timeout 30 >"$TMP/pipe" \
  2>"$TMP/err" &
pid0=$!
python3 - "$port" "$TMP/idle.ready" <<'PY' &
import socket, sys, time
port, ready = int(sys.argv[1]), sys.argv[2]
for _ in range(600):
    try:
        first = socket.create_connection(("127.0.0.1", port))
        break
    except OSError:
        time.sleep(0.05)
idle = [first] + [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
open(ready, "w").close()
time.sleep(30)
PY
idle_pid=$!
for _ in $(seq 1 300); do [ -f "$TMP/idle.ready" ] && break; sleep 0.1; done
"$BIN" generate --model "$MODEL" --threads 1 --nccl-init tcp://127.0.0.1:$port --world-size 2 \
  --rank 1 --nccl-init-timeout 3 2>"$TMP/rank1.err"
rc1=$?
wait_exit $pid0 60
rc0=$?
kill $idle_pid 2>/dev/null
wait $idle_pid 2>/dev/null
[ $rc1 -eq 0 ] || fail "idle connections: rank 1 exited $rc1: $(cat "$TMP/rank1.err")"
[ $rc0 -eq 0 ] && cmp -s "$TMP/one" "$TMP/pipe" ||
  fail "idle connections: rank 0 exited $rc0 or printed other text: $(tail -c 300 "$TMP/err")"
echo "ok: 3 idle connections did not keep rank 1 out"

# refused_model NAME RANK0_MODEL RANK1_MODEL WHY: rank 0 refuses rank 1's model; both exit 1 and
# name the reason, which starts with WHY.
refused_model() {
  local port rank1 rc rc1
  port=$(free_port)
  "$BIN" generate --model "$3" --nccl-init tcp://127.0.0.1:$port --rank 1 --world-size 2 \
    >/dev/null 2>"$TMP/rank1.err" &
  rank1=$!
  "$BIN" generate --model "$2" --prompt hi -n 2 --nccl-init tcp://127.0.0.1:$port \
    --world-size 2 >/dev/null 2>"$TMP/err"
  rc=$?
  wait $rank1
  rc1=$?
  [ $rc -eq 1 ] && grep -q "rank 1 loaded another model: $4" "$TMP/err" ||
    fail "$1: rank 0 exit $rc: $(grep error "$TMP/err")"
  [ $rc1 -eq 1 ] && [ "$(wc -l <"$TMP/rank1.err")" -eq 1 ] &&
    grep -q "rank 0 refused this rank: rank 1 loaded another model: $4" "$TMP/rank1.err" ||
    fail "$1: rank 1 exit $rc1: $(cat "$TMP/rank1.err")"
  echo "ok: $1 refused: $(cat "$TMP/rank1.err")"
}
# The same preset with other tensor bytes (q8_0, not Q4_1); the same preset, type and sizes with
# another seed: other weights.
if "$BIN" synth --preset smollm2-135m --type q8_0 --seed 1 -o "$TMP/a.gguf" >/dev/null 2>&1 &&
  "$BIN" synth --preset smollm2-135m --type q8_0 --seed 2 -o "$TMP/b.gguf" >/dev/null 2>&1; then
  refused_model "other tensor bytes" "$MODEL" "$TMP/a.gguf" "tensor_bytes "
  refused_model "other weights" "$TMP/a.gguf" "$TMP/b.gguf" \
    "the same shapes and tensor sizes but other weights or hyper-parameters (fingerprint "
else
  fail "synth of the two models failed"
fi

# resume_rank1 NAME: continues the stopped rank 1 of start_serve NAME, which must then find rank
# 0's shutdown and exit 0.
resume_rank1() {
  kill -CONT $rank1_pid
  wait_exit $rank1_pid 20
  local rc=$?
  [ $rc -eq 0 ] && grep -q "rank 1: rank 0 shut down" "$TMP/$1.rank1.err" ||
    fail "$1: resumed rank 1 exited $rc: $(tail -c 300 "$TMP/$1.rank1.err")"
}

start_serve hung --rank-timeout 2
code=$(completion)
[ "$code" = 200 ] || fail "hung: first completion: HTTP $code: $(head -c 300 "$TMP/resp")"
# A second rank 1 after the world is full: refused with the reason, exit 1, one line.
"$BIN" serve --model "$MODEL" --threads 1 --nccl-init tcp://127.0.0.1:$port --rank 1 \
  --world-size 2 --nccl-init-timeout 10 2>"$TMP/late.err"
rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$TMP/late.err")" -eq 1 ] &&
  grep -q "rank 0 refused this rank: rank 1 has already joined rank 0's world of 2" \
    "$TMP/late.err" || fail "late duplicate: exit $rc: $(cat "$TMP/late.err")"
grep -q "novaserve pipeline: refused a late process: rank 1 has already joined" "$TMP/hung.err" ||
  fail "late duplicate: rank 0 did not log the refusal"
echo "ok (exit $rc): late duplicate: $(cat "$TMP/late.err")"
# Rank 1 stops answering: the request fails after --rank-timeout, the replica is unhealthy.
kill -STOP $rank1_pid
expect_failed_replica "stopped rank" "rank 1 did not answer within 2 s (--rank-timeout)"
kill -TERM $rank0_pid
wait_exit $rank0_pid 20
rc=$?
[ $rc -eq 0 ] || fail "stopped rank: rank 0 exited $rc after SIGTERM: $(tail -c 300 "$TMP/hung.err")"
# Resumed, rank 1 answers the step nobody waits for, then finds rank 0's shutdown.
resume_rank1 hung
echo "ok: a stopped rank failed its request after 2 s, rank 0 exited 0, rank 1 then exited 0"

# Rank 1 stops during a request; after the 1-s drain deadline rank 0 waits for the step (up to
# --rank-timeout 60): a second SIGTERM ends it at once, and rank 1 still gets its shutdown.
start_serve second --rank-timeout 60 --shutdown-timeout 1
kill -STOP $rank1_pid
completion >/dev/null &
curl_pid=$!
sleep 1
kill -TERM $rank0_pid
for _ in $(seq 1 200); do
  grep -q "requests did not end after abort" "$TMP/second.err" && break
  sleep 0.1
done
grep -q "requests did not end after abort" "$TMP/second.err" ||
  fail "second signal: rank 0 did not reach its drain deadline: $(tail -c 300 "$TMP/second.err")"
sleep 0.5
kill -TERM $rank0_pid
wait_exit $rank0_pid 5
rc0=$?
[ $rc0 -eq 143 ] && grep -q "second signal 15: exiting now" "$TMP/second.err" ||
  fail "second signal: rank 0 exit $rc0: $(tail -c 300 "$TMP/second.err")"
kill $curl_pid 2>/dev/null
wait $curl_pid 2>/dev/null
resume_rank1 second
echo "ok: a second SIGTERM ended rank 0 at once (exit $rc0) and rank 1 was told to shut down"
finish
