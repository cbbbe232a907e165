# Multi-process serve helpers for tests/cli/multi_process*.sh (sourced after cli_test_lib.sh).

# start_serve NAME FLAGS...: rank 1 then rank 0 of a 2-process serve (pids in rank1_pid and
# rank0_pid, logs in $TMP/NAME.rank1.err and $TMP/NAME.err, HTTP port in http), until healthy.
# FLAGS go to rank 0; the array rank_flags, when set, to both ranks.
start_serve() {
  local name=$1
  shift
  port=$(free_port)
  http=$(free_port)
  "$BIN" serve --model "$MODEL" --threads 1 --nccl-init tcp://127.0.0.1:$port --rank 1 \
    --world-size 2 ${rank_flags[@]+"${rank_flags[@]}"} 2>"$TMP/$name.rank1.err" &
  rank1_pid=$!
  "$BIN" serve --model "$MODEL" --threads 1 --nccl-init tcp://127.0.0.1:$port --world-size 2 \
    --host 127.0.0.1 --port "$http" ${rank_flags[@]+"${rank_flags[@]}"} "$@" 2>"$TMP/$name.err" &
  rank0_pid=$!
  wait_healthy "$http" || fail "$name: not healthy: $(tail -c 300 "$TMP/$name.err")"
}
# completion: POST /v1/completions (greedy, 8 tokens of "The capital of France is") to the
# server of start_serve; prints the HTTP code, the body goes to $TMP/resp.
completion() {
  curl -s -m 60 -o "$TMP/resp" -w "%{http_code}" "http://127.0.0.1:$http/v1/completions" \
    -H 'Content-Type: application/json' \
    -d '{"prompt":"The capital of France is","max_tokens":8,"temperature":0}'
}

# expect_one_process_text WHAT: a completion to the server of start_serve gets HTTP 200 and the
# text of one process ($TMP/one, from generate).
expect_one_process_text() {
  local code
  code=$(completion)
  [ "$code" = 200 ] || fail "$1: HTTP $code: $(head -c 300 "$TMP/resp")"
  python3 -c 'import json, sys
got = json.load(open(sys.argv[1]))["choices"][0]["text"]
sys.exit(0 if got == open(sys.argv[2]).read().rstrip("\n") else 1)' "$TMP/resp" "$TMP/one" ||
    fail "$1: text differs from generate: $(head -c 300 "$TMP/resp")"
}

# expect_failed_replica WHAT MESSAGE: a completion gets HTTP 500 naming MESSAGE, and /health says
# the replica is unhealthy.
expect_failed_replica() {
  local code
  code=$(completion)
  [ "$code" = 500 ] && grep -q "$2" "$TMP/resp" ||
    fail "$1: HTTP $code: $(head -c 300 "$TMP/resp")"
  curl -s "http://127.0.0.1:$http/health" >"$TMP/health"
  grep -q '"healthy":false' "$TMP/health" || fail "$1: health $(cat "$TMP/health")"
}

# run_ranks W FLAGS...: rank 0 generates $prompt greedily (stdout in $TMP/pipe, log in $TMP/err),
# ranks 1..W-1 serve (logs in $TMP/rankR.err), all with FLAGS; every process must exit 0, and
# every rank must log rank 0's shutdown.
run_ranks() {
  local world=$1
  shift
  local port pids=() r
  port=$(free_port)
  for r in $(seq 1 $((world - 1))); do
    "$BIN" generate --model "$MODEL" --threads 1 --nccl-init tcp://127.0.0.1:$port \
      --world-size "$world" --rank "$r" "$@" 2>"$TMP/rank$r.err" &
    pids+=($!)
  done
  "$BIN" generate --model "$MODEL" --threads 1 --prompt "$prompt" -n 8 -t 0 \
    --nccl-init tcp://127.0.0.1:$port --world-size "$world" "$@" >"$TMP/pipe" 2>"$TMP/err" ||
    fail "rank 0 of $world ($*) exited $?: $(tail -c 300 "$TMP/err")"
  for r in $(seq 1 $((world - 1))); do
    wait "${pids[$((r - 1))]}" || fail "rank $r of $world ($*) exited $?: $(cat "$TMP/rank$r.err")"
    grep -q "rank $r: rank 0 shut down" "$TMP/rank$r.err" || fail "rank $r: no shutdown line"
  done
}
