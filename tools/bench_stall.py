#!/usr/bin/env python3
"""Stall benchmark (docs/benchmarks.md): the largest inter-token gap of a live stream while a
long prompt prefills beside it.

Starts `novaserve serve` (extra flags after --), opens one greedy stream, sends a prompt of about
--prompt-tokens tokens (max_tokens 1) once the stream runs, and reports the stream's inter-token
gaps while that prompt was in flight, the prompt's latency and the engine steps it spanned.

Usage: tools/bench_stall.py --binary build/novaserve --model M [--prompt-tokens 6800]
                            [--json OUT] [-- SERVE_FLAGS...]
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from http_client import StreamStamps, metric_value  # noqa: E402
from server_launcher import LaunchedServer  # noqa: E402


def steps(server):
    return metric_value(server.get("/metrics").body.decode(), "novaserve_engine_steps_total")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-tokens", type=int, default=6800)
    ap.add_argument("--json")
    ap.add_argument("serve_flags", nargs="*")
    a = ap.parse_args()

    srv = LaunchedServer(a.binary, ["--model", a.model] + a.serve_flags)
    try:
        # A word of this text is about one token of the default model's vocabulary; the usage
        # reported back gives the exact count.
        words = ["alpha", "river", "stone", "market", "yellow", "garden", "silver", "window"]
        long_prompt = " ".join(words[i % len(words)] + str(i % 13) for i in range(a.prompt_tokens // 2))
        s = srv.server.connect(3600)
        s.sendall(srv.server.request_bytes(
            "POST", "/v1/completions",
            {"prompt": "The river", "max_tokens": 3000, "ignore_eos": True,
             "temperature": 0, "stream": True}))
        stream = StreamStamps(s)
        stream.wait_for(10, 3600)
        stamps = stream.stamps
        before = steps(srv.server)
        t0 = time.monotonic()
        r = srv.server.post("/v1/completions",
                            {"prompt": long_prompt, "max_tokens": 1, "temperature": 0},
                            timeout=3600)
        t1 = time.monotonic()
        after = steps(srv.server)
        stream.stop()
        usage = r.json()["usage"]
        gaps = [b - x for x, b in zip(stamps, stamps[1:]) if t0 <= b <= t1]
        gaps.sort()
        out = {
            "prompt_tokens": usage["prompt_tokens"],
            "prompt_latency_s": round(t1 - t0, 3),
            "engine_steps": int(after - before),
            "stream_tokens_during": len(gaps),
            "max_gap_s": round(gaps[-1], 3) if gaps else None,
            "p99_gap_s": round(gaps[int(0.99 * (len(gaps) - 1))], 3) if gaps else None,
            "median_gap_s": round(gaps[len(gaps) // 2], 3) if gaps else None,
            "serve_flags": a.serve_flags,
        }
        print(json.dumps(out))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
