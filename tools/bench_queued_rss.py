#!/usr/bin/env python3
"""Memory per queued request (docs/benchmarks.md): starts `novaserve serve` with one sequence
slot and no queue-time limit, occupies the slot with one long stream, queues N completions of
a 300-token prompt (one connection each), and reports the server's RSS growth per queued
request. Usage: tools/bench_queued_rss.py [N] (from the repository root, after make build)."""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from http_client import metric_value  # noqa: E402
from server_launcher import LaunchedServer, rss_bytes  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 400
srv = LaunchedServer(os.path.join(ROOT, "build", "novaserve"),
                     ["--model", os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"),
                      "--max-num-seqs", "1", "--max-num-batched-tokens", "64",
                      "--max-queue-time", "0s", "--max-queued-requests", "100000"])


def m(name):
    return metric_value(srv.server.get("/metrics").body.decode(), name)


hold = srv.server.connect(600)
hold.sendall(srv.server.request_bytes("POST", "/v1/completions", {
    "prompt": "Once", "max_tokens": 4000, "ignore_eos": True, "stream": True}))
time.sleep(3)
base = rss_bytes(srv.pid)
prompt = " ".join("word%d" % (i % 50) for i in range(300))
socks = []
for i in range(N):
    s = srv.server.connect(600)
    s.sendall(srv.server.request_bytes("POST", "/v1/completions", {"prompt": prompt, "max_tokens": 128}))
    socks.append(s)
deadline = time.time() + 120
while time.time() < deadline and (m("novaserve_num_requests_waiting") or 0) < N:
    time.sleep(0.5)
time.sleep(2)
after = rss_bytes(srv.pid)
w = m("novaserve_num_requests_waiting")
print(json.dumps({"queued": w, "rss_before_mib": round(base / 2**20, 1),
                  "rss_after_mib": round(after / 2**20, 1),
                  "per_request_kib": round((after - base) / w / 1024, 1)}))
for s in socks:
    s.close()
hold.close()
srv.stop()
