#!/usr/bin/env bash
# CLI test of the multi-process pipeline (--nccl-init tcp://HOST:PORT --rank R --world-size W,
# docs/multi-gpu.md "Several processes") on the CPU, all on 127.0.0.1. Usage: multi_process.sh BINARY
# - bad rank flags exit 2 with one line, in serve, generate and bench;
# - a rank whose rank 0 never answers (a closed port) fails after --nccl-init-timeout with one
#   line and exit 1, and so does a rank 0 whose ranks never come; serve's rank 0 stops at once
#   (exit 0) on SIGTERM while it waits for them;
# - 2 and 3 processes generate the one-process greedy text (with and without micro-batching);
# - serve over 2 processes answers; when rank 1 dies, requests get an error, /health says
#   unhealthy, and rank 0 still drains and exits 0.
# The faults (hung ranks, other models, late ranks, stray peers): multi_process_faults.sh.
source "$(dirname "$0")/lib/cli_test_lib.sh"
source "$(dirname "$0")/lib/ranks_lib.sh"

require_model

for cmd in generate bench serve; do
  quick_args $cmd
  url=tcp://127.0.0.1:1
  expect_exit2 "$cmd: rank outside the world size" "$BIN" $cmd "${args[@]}" --nccl-init $url \
    --world-size 2 --rank 2 &&
    { grep -q "rank 2 is outside --world-size 2 (ranks 0..1)" "$TMP/err" || fail "$cmd: rank message"; }
  expect_exit2 "$cmd: negative rank" "$BIN" $cmd "${args[@]}" --nccl-init $url --world-size 2 \
    --rank -1
  expect_exit2 "$cmd: world size without --nccl-init" "$BIN" $cmd "${args[@]}" --world-size 2 &&
    { grep -q "needs --nccl-init" "$TMP/err" || fail "$cmd: --nccl-init message"; }
  expect_exit2 "$cmd: --nccl-init without a world" "$BIN" $cmd "${args[@]}" --nccl-init $url
  expect_exit2 "$cmd: --rank without a world" "$BIN" $cmd "${args[@]}" --rank 1
  for flag in --rank-timeout --nccl-init-timeout; do
    expect_exit2 "$cmd: $flag without a world" "$BIN" $cmd "${args[@]}" $flag 5 &&
      { grep -q -- "--nccl-init-timeout and --rank-timeout apply to a pipeline of several" \
        "$TMP/err" || fail "$cmd: $flag message"; }
  done
  expect_exit2 "$cmd: world size 0" "$BIN" $cmd "${args[@]}" --nccl-init $url --world-size 0
  expect_exit2 "$cmd: not a tcp URL" "$BIN" $cmd "${args[@]}" --nccl-init 127.0.0.1:5 \
    --world-size 2
  expect_exit2 "$cmd: port 0" "$BIN" $cmd "${args[@]}" --nccl-init tcp://127.0.0.1:0 --world-size 2
  expect_exit2 "$cmd: timeout 0" "$BIN" $cmd "${args[@]}" --nccl-init $url --world-size 2 \
    --nccl-init-timeout 0
  expect_exit2 "$cmd: --pipeline-parallel other than the world" "$BIN" $cmd "${args[@]}" \
    --nccl-init $url --world-size 2 --pipeline-parallel 3
  expect_exit2 "$cmd: more ranks than layers" "$BIN" $cmd "${args[@]}" --nccl-init $url \
    --world-size 31 --nccl-init-timeout 1 &&
    { grep -q "the model has 30 layers" "$TMP/err" || fail "$cmd: stage-count message"; }
done
expect_exit2 "serve: --data-parallel with a world" "$BIN" serve --model "$MODEL" --port 0 \
  --nccl-init tcp://127.0.0.1:1 --world-size 2 --data-parallel 2

# A closed port on 127.0.0.1 (bound, then released): rank 1 retries until the timeout.
port=$(free_port)
start=$(date +%s.%N)
"$BIN" generate --model "$MODEL" --nccl-init tcp://127.0.0.1:$port --rank 1 --world-size 2 \
  --nccl-init-timeout 2 >"$TMP/out" 2>"$TMP/err"
rc=$?
took=$(python3 -c "print($(date +%s.%N) - $start)")
[ $rc -eq 1 ] || fail "closed port: exit $rc, expected 1: $(head -c 300 "$TMP/err")"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "closed port: not one line: $(cat "$TMP/err")"
grep -q "nobody answered within 2 s (rank 0 not started?)" "$TMP/err" ||
  fail "closed port: message: $(cat "$TMP/err")"
python3 -c "import sys; sys.exit(0 if 1.9 <= $took < 30 else 1)" ||
  fail "closed port: took $took s, expected the 2 s timeout"
echo "ok (exit $rc after $took s): closed port: $(cat "$TMP/err")"
"$BIN" generate --model "$MODEL" --prompt hi -n 2 --nccl-init tcp://127.0.0.1:$(free_port) \
  --world-size 2 --nccl-init-timeout 1 >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 1 ] || fail "rank 0 alone: exit $rc, expected 1"
grep -q "only 0 of the 1 other ranks joined within 1 s (missing: rank 1)" "$TMP/err" ||
  fail "rank 0 alone: message: $(tail -1 "$TMP/err")"
# serve's rank 0 waiting for its ranks stops at the first SIGTERM (nothing is served yet), not
# after --nccl-init-timeout.
http=$(free_port)
"$BIN" serve --model "$MODEL" --threads 1 --host 127.0.0.1 --port "$http" \
  --nccl-init tcp://127.0.0.1:$(free_port) --world-size 2 --nccl-init-timeout 60 2>"$TMP/err" &
pid=$!
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http/health")" = 503 ] && break
  sleep 0.1
done
start=$(date +%s.%N)
kill -TERM $pid
wait $pid
rc=$?
took=$(python3 -c "print($(date +%s.%N) - $start)")
[ $rc -eq 0 ] || fail "SIGTERM while waiting for ranks: exit $rc, expected 0: $(tail -2 "$TMP/err")"
python3 -c "import sys; sys.exit(0 if $took < 10 else 1)" ||
  fail "SIGTERM while waiting for ranks: took $took s"
grep -q "signal 15 while loading: stopping" "$TMP/err" || fail "SIGTERM while loading: message"
echo "ok (exit 0 after $took s): SIGTERM to serve's rank 0 while it waits for its ranks"

prompt="The capital of France is"
"$BIN" generate --model "$MODEL" --threads 1 --prompt "$prompt" -n 8 -t 0 >"$TMP/one" 2>/dev/null ||
  fail "generate (one process) exited $?"
for flags in "2" "3 --layer-split 8,12,10" "3 --micro-batching"; do
  # shellcheck disable=SC2086
  run_ranks $flags
  cmp -s "$TMP/one" "$TMP/pipe" || fail "$flags processes: output differs from one process"
  grep -q "staged-copy transport" "$TMP/err" || fail "$flags processes: no pipeline in the log"
  grep -q "std dev .*% of the mean" "$TMP/err" || fail "$flags processes: no memory log"
done
# The last run gave every rank rank 0's --micro-batching: the others say they do not use it.
grep -q "rank 2 does not use --micro-batching (rank 0's flags decide them)" "$TMP/rank2.err" ||
  fail "rank 2 did not name the rank-0 flag it ignores: $(cat "$TMP/rank2.err")"
echo "ok: 2 and 3 processes generate the one-process text: $(head -c 60 "$TMP/one")"

# serve over two processes, then rank 1 dies.
start_serve serve
expect_one_process_text "serve over 2 processes"
kill -9 $rank1_pid
wait $rank1_pid 2>/dev/null
expect_failed_replica "after rank 1 died" "rank 1 closed the connection"
kill -TERM $rank0_pid
wait $rank0_pid || fail "rank 0 serve exited $? after rank 1 died"
echo "ok: serve over 2 processes answered, then failed its requests cleanly when rank 1 died"
finish
