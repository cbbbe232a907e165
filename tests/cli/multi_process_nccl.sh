#!/usr/bin/env bash
# CLI test of --pipeline-transport (docs/multi-gpu.md "The NCCL transport") on the CPU, all on
# 127.0.0.1. Usage: multi_process_nccl.sh BINARY (ctest sets NOVASERVE_FAKE_NCCL).
#
# The NCCL runs here load the test library tests/fakes/fake_nccl.cpp (NOVASERVE_NCCL_LIB), which
# implements NCCL's entry points over local sockets between the processes on host memory. They
# test the wiring of the direct protocol (plans from rank 0, hidden states from rank to rank, the
# last stage's answers), not NCCL itself: the real NCCL run needs two GPUs (issue 18).
# - bad --pipeline-transport values, and `nccl` in one process, exit 2 with one line;
# - `nccl` where the library does not load, or lacks an entry point, exits 2 with one line;
# - 2 and 3 processes over the fake NCCL print the one-process greedy text (3 with
#   micro-batching too), and every process logs the NCCL transport;
# - auto on the CPU chooses the TCP star and says why;
# - ranks that give other transports are refused on both sides (exit 1);
# - serve over 2 processes with NCCL and --micro-batching (steps in flight) answers with the
#   one-process text.
source "$(dirname "$0")/lib/cli_test_lib.sh"
source "$(dirname "$0")/lib/ranks_lib.sh"

require_model
FAKE=${NOVASERVE_FAKE_NCCL:-}
if [ -z "$FAKE" ] || [ ! -f "$FAKE" ]; then
  echo "SKIP: NOVASERVE_FAKE_NCCL does not name the fake NCCL library (ctest sets it, unless the" \
    "build leaves the NCCL transport out: NOVASERVE_NCCL=OFF)"
  finish
fi

for cmd in generate bench serve; do
  quick_args $cmd
  world=(--nccl-init tcp://127.0.0.1:1 --world-size 2)
  expect_exit2 "$cmd: --pipeline-transport x" "$BIN" $cmd "${args[@]}" "${world[@]}" \
    --pipeline-transport x &&
    { grep -q -- "--pipeline-transport must be auto, nccl or tcp (got 'x')" "$TMP/err" ||
      fail "$cmd: bad value message"; }
  expect_exit2 "$cmd: --pipeline-transport nccl in one process" "$BIN" $cmd "${args[@]}" \
    --pipeline-transport nccl &&
    { grep -q -- "--pipeline-transport applies to a pipeline of several processes" "$TMP/err" ||
      fail "$cmd: one-process message"; }
  expect_exit2 "$cmd: real NCCL on the CPU" env -u NOVASERVE_NCCL_LIB "$BIN" $cmd "${args[@]}" \
    "${world[@]}" --pipeline-transport nccl &&
    { grep -q -- "--pipeline-transport nccl needs --device cuda" "$TMP/err" ||
      fail "$cmd: NCCL-on-the-CPU message"; }
  NOVASERVE_NCCL_LIB=$TMP/no-such-libnccl.so expect_exit2 "$cmd: no NCCL library" "$BIN" $cmd \
    "${args[@]}" "${world[@]}" --pipeline-transport nccl &&
    { grep -q -- "--pipeline-transport nccl: cannot load the NCCL library '$TMP/no-such-libnccl.so'" \
      "$TMP/err" || fail "$cmd: missing-library message"; }
done
# A library that is not NCCL: the first entry point it lacks is named. Rank 1 checks too.
NOVASERVE_NCCL_LIB=libc.so.6 expect_exit2 "rank 1: not an NCCL library" "$BIN" generate \
  --model "$MODEL" --nccl-init tcp://127.0.0.1:1 --world-size 2 --rank 1 \
  --pipeline-transport nccl &&
  { grep -q "the NCCL library 'libc.so.6' has no ncclGetVersion" "$TMP/err" ||
    fail "not-NCCL message"; }

prompt="The capital of France is"
"$BIN" generate --model "$MODEL" --threads 1 --prompt "$prompt" -n 8 -t 0 >"$TMP/one" 2>/dev/null ||
  fail "generate (one process) exited $?"
export NOVASERVE_NCCL_LIB=$FAKE NOVASERVE_FAKE_NCCL_TIMEOUT_S=30
for flags in "2" "3 --layer-split 8,12,10" "3 --micro-batching"; do
  # shellcheck disable=SC2086
  run_ranks $flags --pipeline-transport nccl
  cmp -s "$TMP/one" "$TMP/pipe" || fail "$flags processes over NCCL: output differs from one process"
  grep -q "nccl transport" "$TMP/err" || fail "$flags processes: no NCCL pipeline in the log"
  grep -q "novaserve pipeline: NCCL transport: hidden states go from rank to rank" "$TMP/err" ||
    fail "$flags processes: rank 0 did not log the choice: $(cat "$TMP/err")"
  grep -q "novaserve pipeline: rank 1: NCCL transport (NCCL 0.0.0, $FAKE)" "$TMP/rank1.err" ||
    fail "$flags processes: rank 1 did not log its transport: $(cat "$TMP/rank1.err")"
done
echo "ok: 2 and 3 processes over the fake NCCL generate the one-process text: $(head -c 60 "$TMP/one")"

run_ranks 2
cmp -s "$TMP/one" "$TMP/pipe" || fail "auto on the CPU: output differs from one process"
grep -q "TCP star transport: every hidden state goes through rank 0 (--pipeline-transport auto with --device cpu)" \
  "$TMP/err" || fail "auto on the CPU: no TCP star in the log: $(cat "$TMP/err")"
echo "ok: auto on the CPU runs the TCP star"

# Rank 1 gives tcp, rank 0 nccl: both exit 1, with the reason.
port=$(free_port)
"$BIN" generate --model "$MODEL" --threads 1 --nccl-init tcp://127.0.0.1:$port --world-size 2 \
  --rank 1 --pipeline-transport tcp 2>"$TMP/rank1.err" &
pid1=$!
"$BIN" generate --model "$MODEL" --threads 1 --prompt hi -n 2 --nccl-init tcp://127.0.0.1:$port \
  --world-size 2 --pipeline-transport nccl >/dev/null 2>"$TMP/err"
rc=$?
wait_exit $pid1 30
rc1=$?
why="rank 1 runs --pipeline-transport tcp, rank 0 nccl (every rank must give the same)"
[ $rc -eq 1 ] && grep -q "$why" "$TMP/err" || fail "mismatch: rank 0 exit $rc: $(tail -1 "$TMP/err")"
[ $rc1 -eq 1 ] && grep -q "rank 0 refused this rank: $why" "$TMP/rank1.err" ||
  fail "mismatch: rank 1 exit $rc1: $(tail -1 "$TMP/rank1.err")"
echo "ok: ranks of other transports are refused: $(tail -1 "$TMP/rank1.err")"

# With --micro-batching the engine keeps 2 groups' steps in flight (submit, then wait).
rank_flags=(--pipeline-transport nccl --micro-batching)
start_serve serve_nccl
expect_one_process_text "serve over NCCL"
grep -q "ranks overlapped: up to 2 steps in flight" "$TMP/serve_nccl.err" ||
  fail "serve over NCCL: no steps in flight in the log: $(grep pipeline "$TMP/serve_nccl.err")"
kill -TERM $rank0_pid
wait $rank0_pid || fail "serve over NCCL: rank 0 exited $?"
wait_exit $rank1_pid 30 || fail "serve over NCCL: rank 1 exited $?: $(cat "$TMP/serve_nccl.rank1.err")"
echo "ok: serve over 2 processes with NCCL answered with the one-process text"
finish
