#!/usr/bin/env bash
# novaserve loadgen against a live `novaserve serve` (with an API key) on a free port: an
# open-loop and a closed-loop soak run write well-formed reports with no errors, a short
# --find-max-qps search reports its warm-up load, probes and confirmation, and one that
# confirms no rate says so and summarizes no run; bad flags,
# https, an unreachable server and a wrong key exit 2 with one line; the server then drains on
# SIGTERM and exits 0.
source "$(dirname "$0")/lib/cli_test_lib.sh"

# A loopback port with nothing listening on it (bound, then released).
DEAD_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DEAD=http://127.0.0.1:$DEAD_PORT
lg() { "$BIN" loadgen "$@"; }
expect_exit2 "neither --qps nor --concurrency" lg --url "$DEAD" --duration 1s
expect_exit2 "both --qps and --concurrency" lg --url "$DEAD" --qps 1 --concurrency 2 --duration 1s
expect_exit2 "--qps 0" lg --url "$DEAD" --qps 0 --duration 1s
expect_exit2 "an unknown flag" lg --url "$DEAD" --qps 1 --duration 1s --no-such-flag
# Flag syntax errors (CLI11's) carry the command's prefix like the commands' own errors.
grep -q "^novaserve loadgen: error: .*--no-such-flag.* (see novaserve loadgen --help)$" "$TMP/err" ||
  fail "unknown flag message: $(cat "$TMP/err")"
expect_exit2 "negative --seed" lg --url "$DEAD" --qps 1 --duration 1s --seed -1
grep -q "must not be negative, got -1" "$TMP/err" || fail "negative --seed message: $(cat "$TMP/err")"
expect_exit2 "negative --qps" lg --url "$DEAD" --qps -3 --duration 1s
expect_exit2 "duration without a unit" lg --url "$DEAD" --qps 1 --duration 5
expect_exit2 "negative --duration" lg --url "$DEAD" --qps 1 --duration -5s
grep -qx "novaserve loadgen: error: --duration must be positive, got '-5s'" "$TMP/err" ||
  fail "negative --duration message: $(cat "$TMP/err")"
expect_exit2 "negative --slo-ttft-p95" lg --url "$DEAD" --find-max-qps --slo-ttft-p95 -1s
grep -q -- "--slo-ttft-p95 must be positive, got '-1s'" "$TMP/err" ||
  fail "negative --slo-ttft-p95 message: $(cat "$TMP/err")"
expect_exit2 "negative --drain-timeout" lg --url "$DEAD" --qps 1 --duration 1s --drain-timeout -1s
grep -q -- "--drain-timeout must not be negative, got '-1s'" "$TMP/err" ||
  fail "negative --drain-timeout message: $(cat "$TMP/err")"
expect_exit2 "negative --max-qps" lg --url "$DEAD" --find-max-qps --slo-ttft-p95 1s --max-qps -4
grep -q -- "--max-qps must be a positive number, got -4" "$TMP/err" ||
  fail "negative --max-qps message: $(cat "$TMP/err")"
# The help names the search's cap on confirmation runs.
"$BIN" loadgen --help | tr -s ' \n' ' ' | grep -q "makes at most 3 confirmation runs" ||
  fail "loadgen --help does not name the cap of 3 confirmation runs"
expect_exit2 "malformed duration" lg --url "$DEAD" --qps 1 --duration 5parsecs
expect_exit2 "URL without a scheme" lg --url 127.0.0.1:8080 --qps 1 --duration 1s
expect_exit2 "https URL" lg --url https://127.0.0.1:8443 --qps 1 --duration 1s
grep -q "not supported" "$TMP/err" || fail "https message does not say 'not supported'"
expect_exit2 "unreachable server" lg --url "$DEAD" --qps 1 --duration 1s
grep -q "cannot reach" "$TMP/err" || fail "unreachable-server message does not say 'cannot reach'"
expect_exit2 "--find-max-qps without an SLO" lg --url "$DEAD" --find-max-qps --duration 1s
expect_exit2 "--max-qps below --qps" lg --url "$DEAD" --find-max-qps --slo-ttft-p95 1s --qps 5 \
  --max-qps 2 --duration 1s
grep -q "got 2" "$TMP/err" || fail "--max-qps message does not name the value: $(cat "$TMP/err")"
expect_exit2 "--client-threads 99" lg --url "$DEAD" --qps 1 --duration 1s --client-threads 99
grep -q "got 99" "$TMP/err" || fail "--client-threads message does not name the value: $(cat "$TMP/err")"
expect_exit2 "unknown workload" lg --url "$DEAD" --qps 1 --duration 1s --workload sharegpt
expect_exit2 "--prompt-tokens with fin-qa" lg --url "$DEAD" --qps 1 --duration 1s \
  --workload fin-qa --prompt-tokens 5

if [ ! -f "$MODEL" ]; then
  fail "model $MODEL missing (run tools/fetch_model.sh)"
  finish
fi
KEY=sk-loadgen-test
"$BIN" serve --model "$MODEL" --port 0 --max-num-seqs 8 --api-key $KEY 2>"$TMP/serve.err" >/dev/null &
SERVER_PID=$!
PORT=""
for _ in $(seq 1 600); do  # up to 60 s for the bound port and the loaded model
  PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/serve.err")
  if [ -n "$PORT" ] && grep -q "serving '" "$TMP/serve.err"; then break; fi
  kill -0 $SERVER_PID 2>/dev/null || break
  sleep 0.1
done
if [ -z "$PORT" ] || ! grep -q "serving '" "$TMP/serve.err"; then
  fail "server did not start: $(head -c 300 "$TMP/serve.err")"
  kill $SERVER_PID 2>/dev/null
  finish
fi
URL=http://127.0.0.1:$PORT

expect_exit2 "wrong --api-key" lg --url "$URL" --api-key wrong --qps 1 --duration 1s
grep -q "401" "$TMP/err" || fail "wrong-key message does not name the 401"
expect_exit2 "a --model the server does not serve" lg --url "$URL" --api-key $KEY --model nope \
  --qps 1 --duration 1s
grep -q "warm-up request failed: HTTP 404" "$TMP/err" || fail "unknown-model message"

# check_report FILE MIN MAX: the JSON parses, MIN..MAX requests all succeeded with every
# output token asked for, and the summary agrees with the rows.
check_report() {
  python3 - "$@" <<'PY' || fail "report $1: see above"
import json, sys
path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
j = json.load(open(path))
s, rows = j["summary"], j["requests"]
problems = []
if not lo <= s["requests"] <= hi: problems.append("%d requests, expected %d..%d" % (s["requests"], lo, hi))
if s["failed"] != 0 or s["errors"]: problems.append("errors: %s" % s["errors"])
if len(rows) != s["requests"]: problems.append("%d rows for %d requests" % (len(rows), s["requests"]))
for r in rows:
    if r["status"] != 200 or r["output_tokens"] != r["max_tokens"] or r["ttft_s"] is None:
        problems.append("bad row %s" % r); break
for k in ("ttft_s", "itl_s", "e2e_s"):
    p = s[k]
    if not (0 < p["p50"] <= p["p90"] <= p["p95"] <= p["p99"] <= p["max"]): problems.append("%s percentiles %s" % (k, p))
if s["request_rate"] <= 0 or s["output_tok_rate"] <= 0: problems.append("no throughput")
for k in ("config", "date", "samples"):
    if k not in j: problems.append("missing " + k)
if problems:
    print("\n".join(problems)); sys.exit(1)
print("ok: %s: %d requests, TTFT p50 %.0f ms" % (path, s["requests"], s["ttft_s"]["p50"] * 1e3))
PY
}

# Open loop, Poisson 2 req/s for 5 s: 1 + Poisson(10) requests, 3..25 with overwhelming odds.
if lg --url "$URL" --api-key $KEY --workload fixed --prompt-tokens 32 --output-tokens 8 --qps 2 --duration 5s \
  --slo-ttft-p95 60s --json "$TMP/open.json" --svg "$TMP/open.svg" >"$TMP/out" 2>"$TMP/err"; then
  check_report "$TMP/open.json" 3 25
  grep -q "open loop, Poisson 2 req/s" "$TMP/out" || fail "no load line in the summary"
  grep -q "^warm-up       1 request in" "$TMP/out" || fail "no warm-up line in the summary"
  grep -q "^  TTFT " "$TMP/out" || fail "no TTFT row in the summary"
  grep -q "^errors        none" "$TMP/out" || fail "summary reports errors: $(cat "$TMP/out")"
  grep -q '^<svg' "$TMP/open.svg" || fail "SVG missing"
  grep -q '</svg>' "$TMP/open.svg" || fail "SVG not closed"
else
  fail "open-loop run exited non-zero: $(head -c 300 "$TMP/err")"
fi

# Closed loop, 2 in flight for 3 s, sampling /metrics and the server's RSS.
if lg --url "$URL" --api-key $KEY --workload fixed --prompt-tokens 16 --output-tokens 4 --concurrency 2 \
  --duration 3s --soak --sample-interval 500ms --server-pid $SERVER_PID \
  --json "$TMP/closed.json" >"$TMP/out" 2>"$TMP/err"; then
  check_report "$TMP/closed.json" 2 1000
  python3 - "$TMP/closed.json" <<'PY' || fail "closed-loop samples"
import json, sys
samples = json.load(open(sys.argv[1]))["samples"]
assert len(samples) >= 3, "only %d samples" % len(samples)
assert all(s["kv_cache_usage"] is not None and s["rss_bytes"] for s in samples), samples[0]
PY
else
  fail "closed-loop run exited non-zero: $(head -c 300 "$TMP/err")"
fi

# --find-max-qps with an SLO every rate meets: the warm-up load, then probes at 2 and 4 req/s
# (the --max-qps cap), and a confirmation run at 4; no failure, so no re-probe.
if lg --url "$URL" --api-key $KEY --workload fixed --prompt-tokens 16 --output-tokens 4 \
  --find-max-qps --qps 2 --max-qps 4 --duration 1s --warmup-duration 1s --slo-ttft-p95 60s \
  --json "$TMP/max.json" >"$TMP/out" 2>"$TMP/err"; then
  grep -q "^warm-up load  Poisson 2 req/s for 1 s (not counted): " "$TMP/out" ||
    fail "no warm-up load line: $(head -c 400 "$TMP/out")"
  grep -q "^max QPS meeting the SLOs: 4 req/s (the --max-qps cap) (2 probes of 1 s, 0 of them re-probes" \
    "$TMP/out" || fail "max QPS line: $(grep 'max QPS' "$TMP/out")"
  python3 - "$TMP/max.json" <<'PY' || fail "find-max-qps report"
import json, sys
j = json.load(open(sys.argv[1]))
f = j["find_max_qps"]
assert f["max_qps"] == 4 and f["hit_max"] and f["reprobes"] == 0, f
assert [(p["qps"], p["met"], p["reprobe"]) for p in f["probes"]] == [(2, True, False), (4, True, False)], f["probes"]
assert [(c["qps"], c["met"]) for c in f["confirmations"]] == [(4, True)], f["confirmations"]
assert j["config"]["warmup_duration_s"] == 1 and f["warmup_duration_s"] == 1, j["config"]
assert j["warmup_load"]["duration_s"] == 1 and j["warmup_load"]["summary"]["succeeded"] >= 0, j["warmup_load"]
PY
else
  fail "--find-max-qps run exited non-zero: $(head -c 300 "$TMP/err")"
fi

# --find-max-qps under an SLO no rate meets (a 0.1-ms TTFT): the search walks down to its
# lowest rate and says "none confirmed", with no summary of any run (null in the JSON).
if lg --url "$URL" --api-key $KEY --workload fixed --prompt-tokens 16 --output-tokens 4 \
  --find-max-qps --qps 2 --max-qps 2 --duration 1s --warmup-duration 0s --slo-ttft-p95 0.1ms \
  --json "$TMP/none.json" >"$TMP/out" 2>"$TMP/err"; then
  grep -q "^max QPS meeting the SLOs: none confirmed (no probe met the SLOs, down to " "$TMP/out" ||
    fail "no-rate max QPS line: $(grep 'max QPS' "$TMP/out")"
  grep -q "^summary       none: no rate was confirmed" "$TMP/out" ||
    fail "no 'no rate was confirmed' line: $(tail -n 3 "$TMP/out")"
  ! grep -q "^requests      \|^latency (ms)\|not confirmed\|^summary of" "$TMP/out" ||
    fail "a run is summarized although no rate was confirmed: $(tail -n 12 "$TMP/out")"
  python3 - "$TMP/none.json" <<'PY' || fail "no-rate find-max-qps report"
import json, sys
j = json.load(open(sys.argv[1]))
f = j["find_max_qps"]
assert f["max_qps"] is None and f["summary_qps"] is None and not f["hit_max"], f
assert f["confirmations"] == [] and f["max_confirmations"] == 3, f
assert f["probes"] and not any(p["met"] for p in f["probes"]), f["probes"]
assert j["summary"] is None and j["requests"] == [] and j["samples"] == [], j["summary"]
PY
else
  fail "no-rate --find-max-qps run exited non-zero: $(head -c 300 "$TMP/err")"
fi

kill -TERM $SERVER_PID
wait $SERVER_PID
rc=$?
[ $rc -eq 0 ] || fail "server exited $rc after SIGTERM, expected 0"
finish
