#!/usr/bin/env python3
"""Request-smuggling suite over raw sockets (stdlib only).

Runs every case of tests/robustness/http_smuggling_corpus.json (CL.TE, TE.CL, TE.TE
obfuscations, Content-Length forms, bare LF/CR, obs-fold, chunk-extension abuse, trailers, Host)
on a fresh connection and checks that the server answers with the case's status, then closes
the connection (EOF within a few seconds), and that no second response ever appears: the
hidden `GET /v1/models` in each case must never be answered. Then checks HEAD against GET.

Usage:
  http_smuggling.py --url http://127.0.0.1:8080 [--api-key K]
  http_smuggling.py --binary build/novaserve --model models/SmolLM2-135M-Instruct.Q4_1.gguf
The second form starts `novaserve serve` on a free port with an API key and checks that SIGTERM
drains it with exit code 0. Exit status: 0 when every case passes.
"""

import argparse
import json
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from case_runner import CaseFailure, check, run_cases  # noqa: E402
from http_client import Server, wait_healthy  # noqa: E402
from server_launcher import LaunchedServer  # noqa: E402

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "robustness", "http_smuggling_corpus.json")
CLOSE_TIMEOUT = 10.0  # seconds for the whole answer and the EOF after it


def expand(text, smuggled, api_key):
    """The corpus text with its placeholders filled in, as bytes (code points < 256)."""
    text = text.replace("{SMUG}", smuggled)
    text = text.replace("{AUTH}", "Authorization: Bearer %s\r\n" % api_key if api_key else "")
    text = text.replace("{KEY}", api_key or "")
    text = re.sub(r"\{(.)\*(\d+)\}", lambda m: m.group(1) * int(m.group(2)), text)
    return text.encode("latin-1")


def read_to_eof(sock, timeout):
    """Everything the server sends until it closes; (bytes, closed)."""
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return data, False
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return data, False
        except ConnectionResetError:
            return data, True  # a reset after the answer is a close too
        if not chunk:
            return data, True
        data += chunk


def split_response(data):
    """(status, headers, body, rest) for the first response in `data`."""
    end = data.find(b"\r\n\r\n")
    check(end >= 0, "no complete response head in %r" % data[:200])
    lines = data[:end].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    check(len(parts) >= 2 and parts[0].startswith("HTTP/1."), "bad status line %r" % lines[0])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    rest = data[end + 4:]
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            eol = rest.find(b"\r\n")
            check(eol >= 0, "truncated chunked body")
            size = int(rest[:eol].split(b";")[0], 16)
            rest = rest[eol + 2:]
            if size == 0:
                check(rest.startswith(b"\r\n"), "chunked body lacks its end")
                rest = rest[2:]
                break
            body += rest[:size]
            rest = rest[size + 2:]
    else:
        n = int(headers.get("content-length", "0"))
        body, rest = rest[:n], rest[n:]
    return int(parts[1]), headers, body, rest


def exchange(server, raw):
    """Sends `raw` (from a thread: the server may answer and close before reading it all) and
    returns (bytes received, closed)."""
    s = server.connect(timeout=CLOSE_TIMEOUT)

    def writer():
        try:
            s.sendall(raw)
        except OSError:
            pass  # answered and closed before reading everything: expected for bad framing

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        data, closed = read_to_eof(s, CLOSE_TIMEOUT)
    finally:
        t.join(CLOSE_TIMEOUT)
        s.close()
    return data, closed


def run_case(server, case, smuggled):
    raw = expand(case["request"], smuggled, server.api_key)
    data, closed = exchange(server, raw)
    check(data, "no response at all")
    status, headers, body, rest = split_response(data)
    check(status == case["status"], "status %d, expected %d: %r" % (status, case["status"], body[:300]))
    if status >= 400:
        try:
            err = json.loads(body.decode("utf-8"))["error"]
        except (ValueError, KeyError, TypeError):
            raise CaseFailure("error body is not an OpenAI error object: %r" % body[:200])
        for k in ("message", "type", "param", "code"):
            check(k in err, "error object lacks %r" % k)
        if "message" in case:
            check(case["message"] in err["message"],
                  "message %r lacks %r" % (err["message"], case["message"]))
    check(closed, "the connection stayed open after the answer")
    check(headers.get("connection", "").lower() == "close", "no Connection: close on %d" % status)
    check(b"HTTP/1." not in rest, "a second response appeared: %r" % rest[:200])
    check(rest == b"", "bytes after the response: %r" % rest[:200])


def case_head_matches_get(server):
    for path in ("/health", "/v1/models"):
        get = server.request("GET", path)
        head_raw = server.request_bytes("HEAD", path)[:-2] + b"Connection: close\r\n\r\n"
        data, closed = exchange(server, head_raw)
        check(closed, "HEAD %s with Connection: close left the connection open" % path)
        end = data.find(b"\r\n\r\n")
        check(end >= 0, "HEAD %s: no response head" % path)
        lines = data[:end].decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = dict((k.strip().lower(), v.strip()) for k, _, v in
                       (line.partition(":") for line in lines[1:]))
        check(status == get.status, "HEAD %s status %d, GET %d" % (path, status, get.status))
        check(headers.get("content-length") == str(len(get.body)),
              "HEAD %s Content-Length %r, GET body %d bytes" % (path, headers.get("content-length"), len(get.body)))
        check(headers.get("content-type") == get.headers.get("content-type"), "Content-Type differs")
        check(data[end + 4:] == b"", "HEAD %s sent a body: %r" % (path, data[end + 4:][:100]))


def case_crlf_flood(server):
    # 256 KiB of empty lines: more than the connection's read buffer. The server must answer
    # 431 and close, not run out of buffer (or crash).
    data, closed = exchange(server, b"\r\n" * (128 * 1024))
    check(data, "no response at all")
    status, headers, _, rest = split_response(data)
    check(status == 431, "status %d, expected 431" % status)
    check(closed, "the connection stayed open after the answer")
    check(rest == b"", "bytes after the response: %r" % rest[:200])


def run_suite(server, only=None):
    with open(CORPUS) as f:
        corpus = json.load(f)
    cases = [(c["name"], lambda s, c=c: run_case(s, c, corpus["smuggled"])) for c in corpus["cases"]
             if server.api_key or not c.get("needs_key")]
    cases.append(("head_matches_get", case_head_matches_get))
    cases.append(("crlf_flood", case_crlf_flood))
    if only:
        cases = [c for c in cases if only in c[0]]
    return run_cases(server, cases)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--url", help="a running server")
    p.add_argument("--binary", help="start BINARY serve on a free port")
    p.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    p.add_argument("--api-key", help="the key the server requires (added to every request)")
    p.add_argument("--only", help="run only cases whose name contains this")
    args = p.parse_args()
    if bool(args.url) == bool(args.binary):
        p.error("give exactly one of --url and --binary")
    if args.url:
        server = Server(args.url, args.api_key)
        if not wait_healthy(server, 60):
            sys.exit("server at %s is not healthy" % args.url)
        return 1 if run_suite(server, args.only) else 0
    launched = LaunchedServer(args.binary, ["--model", args.model],
                              api_key=args.api_key or "smuggling-suite-key")
    failures = run_suite(launched.server, args.only)
    code = launched.stop()
    if code != 0:
        print("FAIL drain: exit code %r after SIGTERM" % code)
        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
