#!/usr/bin/env python3
"""End-to-end tests of `novaserve serve --data-parallel 2` on the CPU (docs/multi-gpu.md,
"Data-parallel replicas"): /health reports the replicas; a replica failed through the test hook
--test-fail-replica ends its requests with an error, is reported unhealthy, and the other keeps
serving; bad replica flags exit 2 with one line. (The whole e2e suite also runs against two
replicas: ctest e2e.server_dp2.)

Environment: NOVASERVE_BIN, NOVASERVE_MODEL, NOVASERVE_E2E_STRICT=1 as in test_server_e2e.py.
"""

import concurrent.futures
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_client import metric_value  # noqa: E402
from server_launcher import LaunchedServer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("NOVASERVE_BIN", os.path.join(ROOT, "build", "novaserve"))
MODEL = os.environ.get("NOVASERVE_MODEL",
                       os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
STRICT = os.environ.get("NOVASERVE_E2E_STRICT") == "1"
MISSING = None if os.path.exists(BIN) and os.path.exists(MODEL) else "binary or model missing"

COMMON = ["--model", MODEL, "--threads", "1", "--data-parallel", "2", "--kv-cache-memory",
          "64MiB"]


def complete(server, prompt, max_tokens):
    return server.post("/v1/completions", {"prompt": prompt, "max_tokens": max_tokens,
                                           "temperature": 0, "ignore_eos": True})


@unittest.skipIf(MISSING and not STRICT, MISSING or "")
class ReplicaFailureTest(unittest.TestCase):
    def test_a_failed_replica_errors_its_requests_and_the_other_keeps_serving(self):
        # Replica 0 fails an internal check after 3 model steps; least-loaded routing sends the
        # first two (concurrent) requests to different replicas.
        srv = LaunchedServer(BIN, COMMON + ["--routing", "least-loaded",
                                            "--test-fail-replica", "0:3"])
        try:
            health = srv.server.get("/health").json()
            self.assertEqual(health["status"], "ok")
            self.assertEqual(health["replicas"]["count"], 2)
            self.assertEqual(health["replicas"]["healthy"], [0, 1])

            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                results = list(pool.map(lambda p: complete(srv.server, p, 24),
                                        ["Once upon a time", "The capital of France is"]))
            statuses = sorted(r.status for r in results)
            self.assertEqual(statuses, [200, 500], [r.body for r in results])
            failed = next(r for r in results if r.status == 500).json()
            self.assertIn("the engine failed", failed["error"]["message"])

            health = srv.server.get("/health").json()
            self.assertEqual(health["status"], "ok")
            self.assertEqual(health["replicas"]["healthy"], [1])
            self.assertFalse(health["replicas"]["status"][0]["healthy"])
            self.assertIn("--test-fail-replica", health["replicas"]["status"][0]["error"])

            # Everything now goes to replica 1, and completes.
            for prompt in ["Hello, my name is", "Water boils at", "def fibonacci(n):"]:
                r = complete(srv.server, prompt, 8)
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(r.json()["choices"][0]["finish_reason"], "length")

            text = srv.server.get("/metrics").body.decode()
            self.assertEqual(metric_value(text, "novaserve_replica_healthy", replica="0"), 0)
            self.assertEqual(metric_value(text, "novaserve_replica_healthy", replica="1"), 1)
            self.assertEqual(
                metric_value(text, "novaserve_request_success_total", finished_reason="error"), 1)
        finally:
            self.assertEqual(srv.stop(), 0)


@unittest.skipIf(MISSING and not STRICT, MISSING or "")
class ReplicaFlagsTest(unittest.TestCase):
    def check_bad(self, args, needle):
        r = subprocess.run([BIN, "serve", "--model", MODEL] + args, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn(needle, lines[0])

    def test_bad_replica_flags_exit_2_with_one_line(self):
        self.check_bad(["--data-parallel", "0"], "--data-parallel must be in [1, 64]")
        self.check_bad(["--data-parallel", "2", "--routing", "random"], "--routing must be")
        self.check_bad(["--data-parallel", "2", "--test-fail-replica", "2:1"],
                       "--test-fail-replica must be")
        self.check_bad(["--gpu", "0,x"], "--gpu must be a GPU ordinal")


if __name__ == "__main__":
    unittest.main()
