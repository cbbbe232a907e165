#!/usr/bin/env python3
"""CPU serving benchmark of `novaserve serve` (issue 3; results in docs/benchmarks.md).

Starts the real server on a free loopback port and measures, through HTTP with streaming:
  * aggregate decode tok/s with 1, 4 and 16 concurrent greedy streams (sum over streams of
    (tokens - 1) / (last token time - first token time)), plus output tok/s over the wall time;
  * server overhead per engine step as a share of step time: the engine thread's time outside
    the model's forward pass (planning, sampling, output callbacks; from the
    novaserve_engine_{step,forward}_seconds_total counters) plus the CPU time of the HTTP threads
    (JSON, tokenization, detokenization, SSE; from /proc/PID/task/*/schedstat of the threads
    named ns-http and ns-tokenize);
  * TTFT P50/P99 of a short prompt while 16 long greedy streams run.

Usage: tools/bench_serve.py [--binary build/novaserve] [--model M] [--threads 2] [--json OUT]
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from http_client import metric_value  # noqa: E402
from server_launcher import LaunchedServer  # noqa: E402

PROMPTS = ["Hello, my name is", "The capital of France is", "Once upon a time",
           "def fibonacci(n):", "The three primary colours are", "In 1969, humans",
           "Water boils at", "My favourite food is"]


def stream(port, prompt, max_tokens, out):
    """One streaming greedy completion; appends (t_start, [token arrival times]) to out."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "ignore_eos": True, "stream": True})
    t0 = time.monotonic()
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError("HTTP %d: %s" % (resp.status, resp.read()))
    times = []
    while True:
        line = resp.readline()
        if not line:
            break
        if line.startswith(b"data: ") and not line.startswith(b"data: [DONE]"):
            ev = json.loads(line[6:])
            if ev.get("choices") and ev["choices"][0].get("text") is not None:
                times.append(time.monotonic())
    conn.close()
    out.append((t0, times))


def thread_cpu(pid):
    """CPU seconds per thread name (comm) of process pid."""
    by_name = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
            # schedstat's first field is the time on CPU in ns (stat's utime/stime tick at
            # 10 ms, too coarse for the HTTP threads).
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                by_name[name] = by_name.get(name, 0.0) + int(f.read().split()[0]) / 1e9
        except OSError:
            pass
    return by_name


def engine_counters(server):
    m = server.get("/metrics").body.decode()
    return {k: metric_value(m, "novaserve_engine_" + k) or 0.0
            for k in ("steps_total", "step_seconds_total", "forward_seconds_total")}


def run_streams(srv, n, max_tokens):
    before_m, before_cpu = engine_counters(srv.server), thread_cpu(srv.pid)
    results = []
    threads = [threading.Thread(target=stream, args=(srv.port, PROMPTS[i % len(PROMPTS)],
                                                     max_tokens, results)) for i in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    after_m, after_cpu = engine_counters(srv.server), thread_cpu(srv.pid)
    tokens = sum(len(ts) for _, ts in results)
    decode = sum((len(ts) - 1) / (ts[-1] - ts[0]) for _, ts in results if len(ts) > 1)
    d = {k: after_m[k] - before_m[k] for k in after_m}
    http_cpu = sum(after_cpu.get(name, 0) - before_cpu.get(name, 0)
                   for name in ("ns-http", "ns-tokenize"))
    engine_other = d["step_seconds_total"] - d["forward_seconds_total"]
    step = d["step_seconds_total"]
    return {
        "streams": n, "tokens": tokens, "wall_s": wall,
        "output_tok_s": tokens / wall, "decode_tok_s": decode,
        "steps": d["steps_total"], "step_ms": 1000 * step / max(1, d["steps_total"]),
        "engine_outside_forward_share": engine_other / step if step else None,
        "http_cpu_share": http_cpu / step if step else None,
        "overhead_share": (engine_other + http_cpu) / step if step else None,
        "ttft_ms_median": 1000 * statistics.median(ts[0] - t0 for t0, ts in results if ts),
    }


def ttft_under_load(srv, background, samples, max_tokens):
    bg = []
    bg_threads = [threading.Thread(target=stream, args=(srv.port, PROMPTS[i % len(PROMPTS)],
                                                        max_tokens, bg)) for i in range(background)]
    for t in bg_threads:
        t.start()
    time.sleep(2.0)  # let the background streams reach steady decoding
    ttft = []
    for i in range(samples):
        out = []
        stream(srv.port, "Hi! " + PROMPTS[i % len(PROMPTS)], 2, out)
        ttft.append(out[0][1][0] - out[0][0])
        time.sleep(0.05)
    for t in bg_threads:
        t.join()
    ttft.sort()
    return {"background_streams": background, "samples": samples,
            "ttft_ms_p50": 1000 * ttft[len(ttft) // 2],
            "ttft_ms_p99": 1000 * ttft[min(len(ttft) - 1, int(0.99 * len(ttft)))],
            "ttft_ms_max": 1000 * ttft[-1]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", default="build/novaserve")
    p.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tokens", type=int, default=128, help="tokens per stream")
    p.add_argument("--streams", default="1,4,16")
    p.add_argument("--ttft-samples", type=int, default=50)
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    srv = LaunchedServer(args.binary, ["--model", args.model, "--threads", str(args.threads)])
    try:
        run_streams(srv, 1, 8)  # warm-up
        rows = [run_streams(srv, int(n), args.tokens) for n in args.streams.split(",")]
        ttft = ttft_under_load(srv, 16, args.ttft_samples, 4 * args.tokens)
    finally:
        code = srv.stop()
    base = rows[0]["decode_tok_s"]
    print("| streams | decode tok/s (aggregate) | vs 1 stream | output tok/s | step ms | "
          "engine outside forward | HTTP threads CPU | overhead / step |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %d | %.1f | %.2fx | %.1f | %.1f | %.1f%% | %.1f%% | %.1f%% |" % (
            r["streams"], r["decode_tok_s"], r["decode_tok_s"] / base, r["output_tok_s"],
            r["step_ms"], 100 * r["engine_outside_forward_share"], 100 * r["http_cpu_share"],
            100 * r["overhead_share"]))
    print("TTFT of a short prompt under %d greedy streams (%d samples): P50 %.1f ms, P99 %.1f ms, "
          "max %.1f ms" % (ttft["background_streams"], ttft["samples"], ttft["ttft_ms_p50"],
                           ttft["ttft_ms_p99"], ttft["ttft_ms_max"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "ttft": ttft, "exit_code": code}, f, indent=1)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
