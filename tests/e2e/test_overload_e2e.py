#!/usr/bin/env python3
"""Overload behaviour of the real server on the default model (issue 12), asserting behaviour
and invariants, never wall-clock speed:

- queue count: a burst of 40 with --max-queued-requests 4 and --max-num-seqs 32 gets at most 4
  refusals (only requests waiting for a slot count);
- stall-free prefill: a long prompt sent beside a live stream is prefilled over several engine
  steps, and the stream gets a token in every one of them (from the engine's step counter);
- overload: open-loop chat-mix far above capacity for 60 s with --max-queue-time 5s ends every
  request (success, 503, or an error event), no success waited longer than the queue time (the
  server's queue-time histogram), RSS stays bounded, and the queue and KV usage return to 0.

Environment: NOVASERVE_BIN (the binary), NOVASERVE_SOURCE_DIR (the repository).
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_client import StreamStamps, metric_samples, metric_value, read_response  # noqa: E402
from server_launcher import LaunchedServer, rss_bytes  # noqa: E402

ROOT = os.environ.get("NOVASERVE_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.environ.get("NOVASERVE_BIN", os.path.join(ROOT, "build", "novaserve"))
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

# RSS the overload run may add over the warmed-up server. Measured on the 2-core dev VM: a
# queued request costs its prompt and output token buffers (a few KiB, docs/api.md), and the
# 32 running sequences their sampler and KV bookkeeping; the bound leaves room for allocator
# fragmentation, not for per-request growth (before the sampler scratch was shared, each queued
# request held 1.2 MiB of sampler buffers, and the probe saw RSS grow by 830 MB).
RSS_GROWTH_BOUND = 64 << 20


def metrics(server):
    r = server.get("/metrics")
    assert r is not None and r.status == 200
    return r.body.decode()


def histogram_buckets(text, name):
    """{le: cumulative count} of a Prometheus histogram (labelled by model_name only)."""
    return {labels["le"]: value for labels, value in metric_samples(text, name + "_bucket")}


def labelled(text, name, label, value):
    return metric_value(text, name, **{label: value})


def wait_idle(server, timeout):
    """Waits until nothing runs or waits and no KV block is referenced; returns the last
    (running, waiting, kv usage)."""
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        m = metrics(server)
        state = (metric_value(m, "novaserve_num_requests_running"),
                 metric_value(m, "novaserve_num_requests_waiting"),
                 metric_value(m, "novaserve_kv_cache_usage_perc"))
        if state == (0.0, 0.0, 0.0):
            return state
        time.sleep(0.5)
    return state


class QueueCountE2E(unittest.TestCase):
    def test_burst_of_40_gets_at_most_4_refusals(self):
        # --max-queue-time 0s: this test counts queue_full refusals only. With the default 30 s,
        # the 4 queued requests end with queue_timeout when the 32 running ones take longer than
        # that to finish (a loaded 2-core machine: seen in CI with the build running beside it).
        srv = LaunchedServer(BIN, ["--model", MODEL, "--max-queued-requests", "4",
                                   "--max-num-seqs", "32", "--max-queue-time", "0s"])
        try:
            body = {"prompt": "Once upon a time", "max_tokens": 48, "ignore_eos": True,
                    "temperature": 0}
            results = [None] * 40
            barrier = threading.Barrier(40)

            def one(i):
                raw = srv.server.request_bytes("POST", "/v1/completions", body)
                s = srv.server.connect(300)
                try:
                    barrier.wait()
                    s.sendall(raw)
                    results[i] = read_response(s, 300)
                finally:
                    s.close()

            threads = [threading.Thread(target=one, args=(i,)) for i in range(40)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            statuses = [r.status if r else None for r in results]
            refused = statuses.count(503)
            print("burst of 40: %d refused" % refused)
            codes = [r.json()["error"]["code"] for r in results if r.status == 503]
            self.assertLessEqual(refused, 4, (statuses, codes))
            self.assertEqual(statuses.count(200) + refused, 40, statuses)
            for r in results:
                if r.status == 503:
                    self.assertEqual(r.json()["error"]["code"], "queue_full")
                    self.assertIn("retry-after", r.headers)
            self.assertEqual(labelled(metrics(srv.server), "novaserve_requests_rejected_total",
                                      "reason", "queue_full"), float(refused))
        finally:
            self.assertEqual(srv.stop(), 0)


class StallFreeE2E(unittest.TestCase):
    def test_stream_gets_a_token_in_every_step_while_a_long_prompt_prefills(self):
        # A step-time target that the long prompt's one-step prefill (over 1 s here) exceeds by
        # far, so that its prefill has to be spread over many steps.
        srv = LaunchedServer(BIN, ["--model", MODEL, "--max-step-ms", "150"])
        try:
            stream_raw = srv.server.request_bytes(
                "POST", "/v1/completions",
                {"prompt": "The river", "max_tokens": 4000, "ignore_eos": True,
                 "temperature": 0, "stream": True})
            s = srv.server.connect(600)
            s.sendall(stream_raw)
            stream = StreamStamps(s)
            self.assertTrue(stream.wait_for(5, 120), "the stream did not start")
            stamps = stream.stamps  # arrival time of each content chunk

            long_prompt = " ".join("word%d" % (i % 97) for i in range(600))
            steps_before = metric_value(metrics(srv.server), "novaserve_engine_steps_total")
            t_send = time.monotonic()
            r = srv.server.post("/v1/completions",
                                {"prompt": long_prompt, "max_tokens": 1, "temperature": 0},
                                timeout=600)
            t_done = time.monotonic()
            steps_after = metric_value(metrics(srv.server), "novaserve_engine_steps_total")
            stream.stop()
            self.assertEqual(r.status, 200, r.body[:300])
            prompt_tokens = r.json()["usage"]["prompt_tokens"]
            self.assertGreater(prompt_tokens, 1000)
            steps = steps_after - steps_before
            during = sum(1 for t in stamps if t_send <= t <= t_done)
            gaps = [b - a for a, b in zip(stamps, stamps[1:]) if t_send <= b <= t_done]
            print("long prompt of %d tokens: %d engine steps, %d stream tokens, largest gap "
                  "%.3f s" % (prompt_tokens, steps, during, max(gaps) if gaps else 0.0))
            # A 2,048-token budget alone takes the prompt in one step (with the stream's decode
            # beside it) and so spans 1-3 steps; cut to the 150 ms target (a prompt token costs
            # several ms here), its prefill spans dozens.
            self.assertGreaterEqual(steps, 10)
            # One token per step, less the steps around the two scrapes.
            self.assertGreaterEqual(during, steps - 3,
                                    "%d stream tokens in %d engine steps" % (during, steps))
        finally:
            self.assertEqual(srv.stop(), 0)


class OverloadE2E(unittest.TestCase):
    def test_open_loop_far_above_capacity_for_60s(self):
        srv = LaunchedServer(BIN, ["--model", MODEL, "--max-queue-time", "5s"])
        try:
            # Warm-up: a few requests through every path, then the baseline RSS.
            for _ in range(3):
                r = srv.server.post("/v1/completions",
                                    {"prompt": "Hello there", "max_tokens": 8, "stream": True})
                self.assertEqual(r.status, 200)
            time.sleep(1)
            rss_before = rss_bytes(srv.pid)
            with tempfile.TemporaryDirectory() as tmp:
                report = os.path.join(tmp, "load.json")
                proc = subprocess.run(
                    [BIN, "loadgen", "--url", srv.url, "--workload", "chat-mix", "--qps", "3",
                     "--duration", "60s", "--drain-timeout", "120s", "--request-timeout", "300s",
                     "--seed", "12", "--json", report],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=400)
                self.assertEqual(proc.returncode, 0, proc.stderr.decode()[-2000:])
                with open(report) as f:
                    rep = json.load(f)
            summary = rep.get("summary", rep)
            errors = summary["errors"]
            # Every request ended: served, refused with 503, or ended by an error event.
            self.assertEqual(set(errors) - {"HTTP 503", "stream"}, set(), errors)
            self.assertEqual(summary["succeeded"] + summary["failed"], summary["requests"])
            if "stream" in errors:
                self.assertIn("--max-queue-time", errors["stream"]["example"])
            self.assertGreater(summary["succeeded"], 0)
            self.assertGreater(summary["failed"], 0, "the load was not over capacity")

            state = wait_idle(srv.server, 120)
            self.assertEqual(state, (0.0, 0.0, 0.0), "running, waiting, KV usage after the run")
            m = metrics(srv.server)
            buckets = histogram_buckets(m, "novaserve_request_queue_time_seconds")
            total = metric_value(m, "novaserve_request_queue_time_seconds_count")
            self.assertGreater(total, 0)
            self.assertEqual(buckets["5"], total,
                             "a request was scheduled after waiting longer than --max-queue-time")
            rejected = sum(labelled(m, "novaserve_requests_rejected_total", "reason", r) or 0
                           for r in ("queue_full", "queue_timeout", "slo_ttft"))
            self.assertEqual(rejected, summary["failed"])
            rss_after = rss_bytes(srv.pid)
            growth = rss_after - rss_before
            print("overload: %d requests, %d served, errors %s, RSS %.1f -> %.1f MiB"
                  % (summary["requests"], summary["succeeded"],
                     {k: v["count"] for k, v in errors.items()},
                     rss_before / 2**20, rss_after / 2**20))
            self.assertLessEqual(growth, RSS_GROWTH_BOUND,
                                 "RSS grew by %.1f MiB" % (growth / 2**20))
        finally:
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    unittest.main()
