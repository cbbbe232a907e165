#!/usr/bin/env python3
"""End-to-end test that tokenization runs off the HTTP I/O threads (issue 12, item 5).

Two ~2 MB prompts go to POST /tokenize (which has no context limit, so they really tokenize:
over a million tokens each, a good fraction of a second on the CPU) on a server with the
default --threads-http 2. A GET /health sent after them must be answered before either of them:
when the I/O threads tokenized, both were busy and /health waited. The order in which the
responses start arriving is asserted, never a duration. Both token lists must equal the one
assembled from a small reference request.

Environment: as tests/e2e/test_server_e2e.py. Run: python3 tests/e2e/test_tokenize_offload.py
"""

import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_client import read_response, wait_readable  # noqa: E402
from server_launcher import LaunchedServer  # noqa: E402
from test_server_e2e import BIN, MODEL, SKIP, requires  # noqa: E402

# Under the default --max-body-bytes (2 MiB) with the JSON around it.
PROMPT_BYTES = 1_990_000


def random_words(rng, n):
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10)))
            for _ in range(n)]


@requires(SKIP)
class TokenizeOffloadE2E(unittest.TestCase):
    def setUp(self):
        self.srv = LaunchedServer(BIN, ["--model", MODEL])
        self.server = self.srv.server

    def tearDown(self):
        self.assertEqual(self.srv.stop(), 0, "serve did not drain cleanly after SIGTERM")

    def tokenize(self, text, **extra):
        body = {"prompt": text, "add_special_tokens": False}
        body.update(extra)
        r = self.server.post("/tokenize", body)
        self.assertEqual(r.status, 200, r)
        return r.json()["tokens"]

    def test_health_is_answered_while_two_big_prompts_tokenize(self):
        # Random words rather than a repeated sentence: tokenizers cache repeated words.
        rng = random.Random(12)
        words = random_words(rng, 3000)
        prompts = []
        for _ in range(2):
            parts, size = [], 0
            while size < PROMPT_BYTES:
                parts.append(" " + rng.choice(words))
                size += len(parts[-1])
            prompts.append(parts)

        # Reference: the byte-level BPE pre-tokenizer splits before each " word", so a prompt's
        # tokens are its words' tokens in order. A word's tokens start at a piece with a space.
        groups = []
        for t in self.tokenize("".join(" " + w for w in words), with_pieces=True):
            if t["piece"].startswith(" "):
                groups.append([])
            groups[-1].append(t["id"])
        self.assertEqual(len(groups), len(words))
        word_tokens = {" " + w: g for w, g in zip(words, groups)}
        expected = [[i for p in parts for i in word_tokens[p]] for parts in prompts]

        order, responses, lock = [], {}, threading.Lock()
        sent = [threading.Event() for _ in prompts]

        def exchange(name, raw, sent_event=None):
            sock = self.server.connect(timeout=120)
            try:
                sock.sendall(raw)
                if sent_event:
                    sent_event.set()
                if wait_readable(sock, 120):
                    with lock:
                        order.append(name)
                responses[name] = read_response(sock, 120)
            finally:
                sock.close()

        threads = []
        for i, parts in enumerate(prompts):
            raw = self.server.request_bytes(
                "POST", "/tokenize", {"prompt": "".join(parts), "add_special_tokens": False})
            threads.append(threading.Thread(target=exchange, args=("tokenize%d" % i, raw, sent[i])))
            threads[-1].start()
        for e in sent:
            self.assertTrue(e.wait(60))
        # Not a measurement: it lets the server finish reading both bodies, so that /health
        # really arrives while they tokenize (about half a second each).
        time.sleep(0.1)
        exchange("health", self.server.request_bytes("GET", "/health"))
        for t in threads:
            t.join(180)

        self.assertEqual(order[:1], ["health"], order)
        self.assertEqual(responses["health"].status, 200, responses["health"])
        for i, want in enumerate(expected):
            r = responses["tokenize%d" % i]
            self.assertIsNotNone(r)
            self.assertEqual(r.status, 200, r)
            got = r.json()
            self.assertEqual(got["count"], len(want))
            self.assertGreater(got["count"], 1_000_000)
            self.assertEqual(got["tokens"], want)


if __name__ == "__main__":
    unittest.main()
