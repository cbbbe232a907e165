#!/usr/bin/env python3
"""Malformed-input suite over raw HTTP (stdlib only).

Every case sends one bad (or borderline) request and checks the status, the OpenAI error object
{"error": {"message", "type", "param", "code"}} and, after each case, that the server still
answers /health. The HTTP cases of $NOVASERVE_SHARED_DIR/cases/*.json run too, with the rules
each one states.

Usage:
  malformed_http.py --url http://127.0.0.1:8080 [--api-key K] [--header-timeout S] [--server-pid P]
  malformed_http.py --binary build/novaserve --model models/SmolLM2-135M-Instruct.Q4_1.gguf
The second form starts `novaserve serve` on a free port (with --header-timeout 2 and an API key)
and checks that SIGTERM drains it with exit code 0. Exit status: 0 when every case passes.
"""

import argparse
import base64
import glob
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from case_runner import CaseFailure, check, run_cases  # noqa: E402
from http_client import Server, metric_value, read_response, sse_events, wait_healthy  # noqa: E402
from server_launcher import LaunchedServer, rss_bytes, shared_dir  # noqa: E402

COMPLETIONS = "/v1/completions"
CHAT = "/v1/chat/completions"
USER_HI = [{"role": "user", "content": "hi"}]


def check_error(r, status, param=None, message=None, etype=None):
    check(r is not None, "no response (connection closed)")
    check(r.status == status, "status %d, expected %d: %r" % (r.status, status, r.body[:300]))
    try:
        j = r.json()
    except ValueError:
        raise CaseFailure("error body is not JSON: %r" % r.body[:200])
    err = j.get("error") if isinstance(j, dict) else None
    check(isinstance(err, dict), "no error object: %r" % j)
    for k in ("message", "type", "param", "code"):
        check(k in err, "error object lacks %r: %r" % (k, err))
    check(isinstance(err["message"], str) and err["message"], "empty error message")
    if param is not None:
        check(err["param"] == param, "param %r, expected %r (%s)" % (err["param"], param, err["message"]))
    if message is not None:
        check(message in err["message"], "message %r lacks %r" % (err["message"], message))
    if etype is not None:
        check(err["type"] == etype, "type %r, expected %r" % (err["type"], etype))


# --- validation rules: (name, path, body, status, param, message substring) -------------------


def completion(**extra):
    body = {"prompt": "hi", "max_tokens": 2}
    body.update(extra)
    return body


def chat(**extra):
    body = {"messages": USER_HI, "max_tokens": 2}
    body.update(extra)
    return body


def raw_body(text):
    return text.encode("utf-8") if isinstance(text, str) else text


RULES = [
    ("invalid_json", COMPLETIONS, raw_body('{"prompt": "hi",'), 400, None, "invalid JSON"),
    ("non_object_body", COMPLETIONS, raw_body("[1, 2, 3]"), 400, None, "must be a JSON object"),
    ("string_body", CHAT, raw_body('"hello"'), 400, None, "must be a JSON object"),
    ("empty_body", COMPLETIONS, raw_body(""), 400, None, "empty"),
    ("nested_too_deep", COMPLETIONS, raw_body('{"prompt": ' + "[" * 100000 + "]" * 100000 + "}"),
     400, None, "nested deeper"),
    ("number_overflow", COMPLETIONS, raw_body('{"prompt": "hi", "temperature": 1e999}'), 400, None,
     "invalid JSON"),
    ("prompt_missing", COMPLETIONS, {"max_tokens": 2}, 400, "prompt", "required"),
    ("prompt_empty_string", COMPLETIONS, completion(prompt=""), 400, "prompt", "must not be empty"),
    ("prompt_empty_array", COMPLETIONS, completion(prompt=[]), 400, "prompt", "must not be empty"),
    ("prompt_wrong_type", COMPLETIONS, completion(prompt={"a": 1}), 400, "prompt", None),
    ("prompt_mixed_array", COMPLETIONS, completion(prompt=["a", 5]), 400, "prompt", None),
    ("prompt_token_out_of_vocab", COMPLETIONS, completion(prompt=[1, 10 ** 9]), 400, "prompt",
     "outside the vocabulary"),
    ("prompt_token_negative", COMPLETIONS, completion(prompt=[-1]), 400, "prompt", None),
    ("prompt_batch_too_large", COMPLETIONS, completion(prompt=["a"] * 65), 400, "prompt", None),
    ("max_tokens_zero", COMPLETIONS, completion(max_tokens=0), 400, "max_tokens", None),
    ("max_tokens_negative", COMPLETIONS, completion(max_tokens=-1), 400, "max_tokens", None),
    ("max_tokens_string", COMPLETIONS, completion(max_tokens="10"), 400, "max_tokens", None),
    ("max_tokens_huge", COMPLETIONS, completion(max_tokens=10 ** 12), 400, "max_tokens",
     "maximum context length"),
    ("max_tokens_beyond_int64", COMPLETIONS, completion(max_tokens=2 ** 64), 400, "max_tokens",
     None),
    ("max_completion_tokens_zero", CHAT, chat(max_completion_tokens=0), 400,
     "max_completion_tokens", None),
    ("min_tokens_above_max", COMPLETIONS, completion(min_tokens=5, max_tokens=2), 400, "min_tokens",
     None),
    ("temperature_negative", COMPLETIONS, completion(temperature=-1), 400, "temperature", None),
    ("temperature_wrong_type", COMPLETIONS, completion(temperature="hot"), 400, "temperature",
     None),
    ("temperature_beyond_float", COMPLETIONS, completion(temperature=1e308), 400, "temperature",
     "32-bit float range"),
    ("top_p_zero", COMPLETIONS, completion(top_p=0), 400, "top_p", None),
    ("top_p_above_one", CHAT, chat(top_p=1.5), 400, "top_p", None),
    ("top_k_below_minus_one", COMPLETIONS, completion(top_k=-5), 400, "top_k", None),
    ("min_p_out_of_range", COMPLETIONS, completion(min_p=2), 400, "min_p", None),
    ("presence_penalty_out_of_range", COMPLETIONS, completion(presence_penalty=3), 400,
     "presence_penalty", None),
    ("frequency_penalty_out_of_range", CHAT, chat(frequency_penalty=-2.5), 400,
     "frequency_penalty", None),
    ("repetition_penalty_zero", COMPLETIONS, completion(repetition_penalty=0), 400,
     "repetition_penalty", None),
    ("seed_wrong_type", COMPLETIONS, completion(seed="x"), 400, "seed", None),
    ("n_zero", COMPLETIONS, completion(n=0), 400, "n", None),
    ("n_huge", CHAT, chat(n=10 ** 12), 400, "n", None),
    ("n_seventeen", CHAT, chat(n=17), 400, "n", None),
    ("logprobs_too_many", COMPLETIONS, completion(logprobs=21), 400, "logprobs", None),
    ("logprobs_wrong_type", CHAT, chat(logprobs="yes"), 400, "logprobs", None),
    ("top_logprobs_too_many", CHAT, chat(logprobs=True, top_logprobs=21), 400, "top_logprobs",
     None),
    ("top_logprobs_without_logprobs", CHAT, chat(top_logprobs=2), 400, "top_logprobs", None),
    ("stop_too_many", COMPLETIONS, completion(stop=["s%d" % i for i in range(17)]), 400, "stop",
     None),
    ("stop_wrong_type", COMPLETIONS, completion(stop=7), 400, "stop", None),
    ("logit_bias_bad_key", COMPLETIONS, completion(logit_bias={"hello": 1}), 400, "logit_bias",
     None),
    ("logit_bias_key_out_of_vocab", COMPLETIONS, completion(logit_bias={"999999999": 1}), 400,
     "logit_bias", None),
    ("logit_bias_value_out_of_range", COMPLETIONS, completion(logit_bias={"5": 1000}), 400,
     "logit_bias.5", None),
    ("stream_wrong_type", COMPLETIONS, completion(stream="yes"), 400, "stream", None),
    ("stream_options_without_stream", CHAT, chat(stream_options={"include_usage": True}), 400,
     "stream_options", None),
    ("echo_wrong_type", COMPLETIONS, completion(echo=1), 400, "echo", None),
    ("ignore_eos_wrong_type", COMPLETIONS, completion(ignore_eos="no"), 400, "ignore_eos", None),
    ("user_wrong_type", CHAT, chat(user=5), 400, "user", None),
    ("priority_wrong_type", COMPLETIONS, completion(priority="high"), 400, "priority", None),
    ("suffix_unsupported", COMPLETIONS, completion(suffix="x"), 400, "suffix", None),
    ("messages_missing", CHAT, {"max_tokens": 2}, 400, "messages", "required"),
    ("messages_empty", CHAT, chat(messages=[]), 400, "messages", "must not be empty"),
    ("messages_not_array", CHAT, chat(messages={"role": "user"}), 400, "messages", None),
    ("message_role_unknown", CHAT, chat(messages=[{"role": "wizard", "content": "x"}]), 400,
     "messages[0].role", None),
    ("message_role_missing", CHAT, chat(messages=[{"content": "x"}]), 400, "messages[0].role",
     None),
    ("user_message_null_content", CHAT, chat(messages=[{"role": "user", "content": None}]), 400,
     "messages[0].content", None),
    ("message_content_number", CHAT, chat(messages=[{"role": "user", "content": 1}]), 400,
     "messages[0].content", None),
    ("content_part_image", CHAT,
     chat(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]),
     400, "messages[0].content[0].type", None),
    ("tools_duplicate_name", CHAT, chat(tools=[{"type": "function", "function": {"name": "f"}},
                                               {"type": "function", "function": {"name": "f"}}]),
     400, "tools", None),
    ("response_format_unknown", CHAT, chat(response_format={"type": "xml"}), 400,
     "response_format.type", None),
    ("unknown_model", CHAT, chat(model="no-such-model"), 404, "model", "does not exist"),
]


def run_rule(server, name, path, body, status, param, message):
    if isinstance(body, bytes):
        r = server.send_raw(server.request_bytes("POST", path, None) [:-2]
                            + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                            % len(body) + body)
    else:
        r = server.post(path, body)
    check_error(r, status, param, message)


# --- invalid UTF-8 --------------------------------------------------------------------------

BAD_UTF8 = [
    ("utf8_truncated_3byte", b"\xe6\xad"),
    ("utf8_truncated_4byte", b"\xf0\x9f\xa6"),
    ("utf8_lone_continuation", b"\x80"),
    ("utf8_invalid_lead_ff", b"\xff"),
    ("utf8_overlong_slash", b"\xc0\xaf"),
    ("utf8_surrogate_d800", b"\xed\xa0\x80"),
    ("utf8_above_10ffff", b"\xf4\x90\x80\x80"),
    ("utf8_cut_by_ascii", b"\xe2\x82A"),
]


def run_bad_utf8(server, raw_text, path):
    if path == CHAT:
        body = b'{"messages": [{"role": "user", "content": "a' + raw_text + b'"}], "max_tokens": 2}'
    else:
        body = b'{"prompt": "a' + raw_text + b'b", "max_tokens": 2}'
    raw = server.request_bytes("POST", path, None)[:-2] + \
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    check_error(server.send_raw(raw), 400, None, "UTF-8")


# --- transport ------------------------------------------------------------------------------


def case_not_found(server):
    check_error(server.get("/v1/nothing"), 404)


def case_method_not_allowed(server):
    r = server.get(COMPLETIONS)
    check_error(r, 405)
    check(r.headers.get("allow") == "POST", "Allow header: %r" % r.headers.get("allow"))


def case_delete_health(server):
    check_error(server.request("DELETE", "/health"), 405)


def case_body_over_limit(server):
    big = json.dumps({"prompt": "x" * (3 * 1024 * 1024)})
    check_error(server.post(COMPLETIONS, big), 413)


def case_ten_thousand_headers(server):
    raw = server.request_bytes("GET", "/health")[:-2]
    raw += b"".join(b"X-Header-%d: v\r\n" % i for i in range(10000)) + b"\r\n"
    check_error(server.send_raw(raw), 431)


def case_huge_header_value(server):
    raw = server.request_bytes("GET", "/health")[:-2] + b"X-Big: " + b"a" * 40000 + b"\r\n\r\n"
    check_error(server.send_raw(raw), 431)


def case_malformed_request_line(server):
    check_error(server.send_raw(b"HELLO\r\n\r\n"), 400)


def case_bad_header_line(server):
    check_error(server.send_raw(b"GET /health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n"), 400)


def case_bad_content_length(server):
    check_error(server.send_raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Length: abc\r\n\r\n{}"), 400)


def case_bad_chunked_body(server):
    raw = server.request_bytes("POST", COMPLETIONS)[:-2]
    raw += b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"
    check_error(server.send_raw(raw), 400)


def case_chunked_with_content_length(server):
    # Both framings at once is the request-smuggling shape (RFC 9112 section 6.3): refuse it.
    raw = server.request_bytes("POST", COMPLETIONS)[:-2]
    raw += b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"
    check_error(server.send_raw(raw), 400)


def case_conflicting_content_lengths(server):
    raw = server.request_bytes("POST", COMPLETIONS)[:-2]
    raw += b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x"
    check_error(server.send_raw(raw), 400)


def case_http10_closes_after_answer(server):
    s = server.connect(timeout=30)
    try:
        s.sendall(b"GET /health HTTP/1.0\r\n" + server.auth_header() + b"\r\n")
        r = read_response(s, timeout=30)
        check(r is not None and r.status == 200, "HTTP/1.0 request: %r" % r)
        s.settimeout(10)
        check(s.recv(1) == b"", "HTTP/1.0 connection left open")
    finally:
        s.close()


def case_slowloris(server, header_timeout):
    s = server.connect(timeout=header_timeout + 30)
    try:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.5)
        s.sendall(b"X-Slow: 1\r\n")  # trickles, never finishes the head
        r = read_response(s, timeout=header_timeout + 30)
        check_error(r, 408)
        s.settimeout(10)
        check(s.recv(1) == b"", "connection not closed after 408")
    finally:
        s.close()


def case_user_null_content_assistant_ok(server):
    r = server.post(CHAT, chat(messages=[{"role": "user", "content": "a"},
                                         {"role": "assistant", "content": None},
                                         {"role": "user", "content": "b"}]))
    check(r is not None and r.status == 200, "assistant null content: %r" % r)


def case_huge_top_k_is_clamped(server):
    r = server.post(COMPLETIONS, completion(top_k=10 ** 12))
    check(r is not None and r.status == 200, "huge top_k must be clamped, got %r" % r)


def case_prompt_longer_than_context(server):
    r = server.post(COMPLETIONS, {"prompt": "hello " * 100000, "max_tokens": 1})
    check_error(r, 400, "prompt", "maximum context length")


def case_lone_surrogate_escape(server):
    check_error(server.post(COMPLETIONS, raw_body('{"prompt": "\\ud800x", "max_tokens": 2}')),
                400, None, "invalid JSON")


def case_escaped_pair_is_fine(server):
    r = server.post(COMPLETIONS, raw_body('{"prompt": "\\ud83e\\udd99", "max_tokens": 2}'))
    check(r is not None and r.status == 200, "escaped surrogate pair: %r" % r)


def case_invalid_utf8_in_path(server):
    # With the key: authentication runs before routing, so without one this is a 401.
    r = server.send_raw(b"GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\n" + server.auth_header() + b"\r\n")
    check_error(r, 404)
    r.body.decode("utf-8")  # the error names the path with U+FFFD, as valid UTF-8


def case_auth(server):
    if not server.api_key:
        return "skipped (no --api-key)"
    check_error(server.get("/v1/models", auth=False), 401)
    check_error(server.get("/v1/models", auth=False,
                           headers={"Authorization": "Bearer wrong-key"}), 401)
    check(server.get("/v1/models").status == 200, "the right key is refused")
    check(server.get("/health", auth=False).status == 200, "/health must be public")
    check(server.get("/metrics", auth=False).status == 200, "/metrics must be public")
    return None


# --- shared cases ---------------------------------------------------------------------------


def shared_request(server, req):
    body = None
    if "body" in req:
        body = req["body"].encode("utf-8")
    elif "body_b64" in req:
        body = base64.b64decode(req["body_b64"])
    return body


def text_of(r, path):
    j = r.json()
    if path == CHAT:
        return [c["message"]["content"] for c in j["choices"]]
    return [c["text"] for c in j["choices"]]


def streamed_text(r, path):
    events, done = sse_events(r.body)
    check(done, "stream did not end with data: [DONE]")
    texts = {}
    for e in events:
        for c in e.get("choices", []):
            piece = c["delta"].get("content") if path == CHAT else c.get("text")
            texts[c["index"]] = texts.get(c["index"], "") + (piece or "")
    return texts


def all_strings_valid(obj):
    if isinstance(obj, str):
        obj.encode("utf-8")  # raises on lone surrogates
    elif isinstance(obj, dict):
        for v in obj.values():
            all_strings_valid(v)
    elif isinstance(obj, list):
        for v in obj:
            all_strings_valid(v)


def run_shared_case(server, case, ctx):
    req, expect = case["request"], case["expect"]
    path, method = req["path"], req.get("method", "POST")
    rules = expect.get("rules", [])
    if "body_generator" in req:
        return run_huge_body_case(server, req, expect, ctx)
    body = shared_request(server, req)
    if any("close the connection after the first chunk" in x for x in rules):
        return run_disconnect_case(server, path, body)
    raw = server.request_bytes(method, path, None, req.get("headers"))[:-2]
    if body is not None and "content-length" not in {k.lower() for k in req.get("headers", {})}:
        raw += b"Content-Length: %d\r\n" % len(body)
    raw += b"\r\n" + (body or b"")
    r = server.send_raw(raw)
    check(r is not None, "no response")
    check(r.status in expect["status"], "status %d not in %r: %r" % (r.status, expect["status"], r.body[:300]))
    try:
        parsed = json.loads(body.decode("utf-8")) if body else {}
    except ValueError:
        parsed = None  # a deliberately broken body; rules that resend it do not apply
    for rule in rules:
        if rule in ("no crash", "server keeps serving"):
            continue  # checked after every case
        if rule.startswith("if 200, every text field is valid UTF-8"):
            if r.status == 200:
                all_strings_valid(r.json())
        elif rule.startswith("if 400, an OpenAI error object naming"):
            name = rule.rsplit(" ", 1)[1]
            if r.status == 400:
                check_error(r, 400)
                err = r.json()["error"]
                check(err["param"] == name or name in err["message"], "error does not name %s" % name)
        elif rule.startswith("OpenAI error object"):
            check_error(r, r.status, param="messages" if "param messages" in rule else None,
                        etype="invalid_request_error" if "invalid_request_error" in rule else None)
        elif rule.startswith("error names"):
            name = rule.split(" ")[2]
            check_error(r, r.status)
            err = r.json()["error"]
            check(err["param"] == name or name in err["message"], "error does not name %s" % name)
        elif rule.startswith("concatenated stream text equals"):
            unstreamed = dict(parsed, stream=False)
            u = server.post(path, unstreamed)
            check(u.status == 200, "unstreamed request failed: %r" % u)
            want = text_of(u, path)[0]
            got = streamed_text(r, path).get(0, "")
            check(got == want, "stream %r != unstreamed %r" % (got, want))
            if "\ufffd" not in want:
                check("\ufffd" not in got, "stream has U+FFFD")
        elif rule.startswith("no U+FFFD"):
            continue  # checked with the rule above
        elif rule.startswith("exactly 3 choices"):
            j = r.json()
            check([c["index"] for c in j["choices"]] == [0, 1, 2], "choices: %r" % j["choices"])
        elif rule.startswith("same with stream true"):
            s = server.post(path, dict(parsed, stream=True))
            check(s.status == 200, "stream failed")
            check(sorted(streamed_text(s, path).keys()) == [0, 1, 2], "stream choice indexes")
        elif rule.startswith("text equals the same request with temperature 1 and top_k 1"):
            other = server.post(path, dict(parsed, temperature=1, top_k=1))
            check(other.status == 200, "top_k 1 request failed")
            check(text_of(r, path) == text_of(other, path),
                  "greedy %r != top_k 1 %r" % (text_of(r, path), text_of(other, path)))
        elif rule.startswith("a unit test shows"):
            continue  # an engine unit test (sampler), not an HTTP property
        else:
            raise CaseFailure("unknown rule %r" % rule)
    return None


def run_huge_body_case(server, req, expect, ctx):
    # "a JSON body whose prompt is 50,000,000 newline characters (about 50 MB)"
    body = b'{"prompt": "' + b"\\n" * 25000000 + b'"}'  # 50 MB of JSON text
    check(len(body) >= 50000000, "generator too small")
    raw_head = server.request_bytes("POST", req["path"], None)[:-2] + \
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    before = rss_bytes(ctx["pid"]) if ctx.get("pid") else None
    s = server.connect(timeout=60)
    try:
        def writer():
            try:
                s.sendall(raw_head)
                s.sendall(body)
            except OSError:
                pass  # the server answered and closed without reading it: that is the point
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        r = read_response(s, timeout=60)
        check_error(r, expect["status"][0])
        t.join(30)
    finally:
        s.close()
    if before is not None:
        after = rss_bytes(ctx["pid"])
        check(after is None or after - before < 64 * 1024 * 1024,
              "RSS grew by %d bytes" % (after - before))
    return None


def run_disconnect_case(server, path, body):
    s = server.connect(timeout=60)
    raw = server.request_bytes("POST", path, None)[:-2] + \
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    s.sendall(raw)
    got = b""
    s.settimeout(60)
    while b"data: " not in got:
        chunk = s.recv(4096)
        check(chunk, "stream closed before the first chunk")
        got += chunk
    s.close()
    # The KV blocks come back within an engine step; allow 1 s (the bound).
    deadline = time.monotonic() + 1.0
    while True:
        m = server.get("/metrics").body.decode()
        usage = metric_value(m, "novaserve_kv_cache_usage_perc")
        running = metric_value(m, "novaserve_num_requests_running")
        if usage == 0 and running == 0:
            break
        check(time.monotonic() < deadline, "KV usage %r, running %r 1 s after disconnect" % (usage, running))
        time.sleep(0.02)
    r = server.post(path, dict(json.loads(body), stream=False, max_tokens=4))
    check(r is not None and r.status == 200, "a new request did not complete: %r" % r)
    return None


# --- driver ---------------------------------------------------------------------------------


def build_cases(args, ctx):
    cases = []
    for name, path, body, status, param, message in RULES:
        cases.append((name, lambda s, a=(path, body, status, param, message): run_rule(s, "", *a)))
    for name, raw in BAD_UTF8:
        cases.append((name + "_completions", lambda s, raw=raw: run_bad_utf8(s, raw, COMPLETIONS)))
        cases.append((name + "_chat", lambda s, raw=raw: run_bad_utf8(s, raw, CHAT)))
    for fn in (case_not_found, case_method_not_allowed, case_delete_health, case_body_over_limit,
               case_ten_thousand_headers, case_huge_header_value, case_malformed_request_line,
               case_bad_header_line, case_bad_content_length, case_bad_chunked_body,
               case_user_null_content_assistant_ok, case_huge_top_k_is_clamped,
               case_prompt_longer_than_context, case_lone_surrogate_escape,
               case_escaped_pair_is_fine, case_invalid_utf8_in_path, case_auth,
               case_chunked_with_content_length, case_conflicting_content_lengths,
               case_http10_closes_after_answer):
        cases.append((fn.__name__[len("case_"):], fn))
    cases.append(("slowloris", lambda s: case_slowloris(s, args.header_timeout)))
    for path in sorted(glob.glob(os.path.join(shared_dir(), "cases", "http-*.json"))):
        with open(path) as f:
            case = json.load(f)
        name = "shared_" + os.path.basename(path)[:-len(".json")]
        cases.append((name, lambda s, c=case: run_shared_case(s, c, ctx)))
    return cases


def run_suite(server, args, ctx):
    cases = build_cases(args, ctx)
    if args.only:
        cases = [c for c in cases if args.only in c[0]]
    return run_cases(server, cases)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--url", help="a running server")
    p.add_argument("--binary", help="start BINARY serve on a free port")
    p.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    p.add_argument("--serve-arg", action="append", default=[], help="extra serve flag (repeatable)")
    p.add_argument("--api-key", help="the key the server requires (added to every request)")
    p.add_argument("--header-timeout", type=float, default=30.0,
                   help="the server's --header-timeout in seconds (the slowloris case waits it)")
    p.add_argument("--server-pid", type=int, help="the server's pid, for the memory check")
    p.add_argument("--only", help="run only cases whose name contains this")
    args = p.parse_args()
    if bool(args.url) == bool(args.binary):
        p.error("give exactly one of --url and --binary")
    if args.url:
        server = Server(args.url, args.api_key)
        if not wait_healthy(server, 60):
            sys.exit("server at %s is not healthy" % args.url)
        return 1 if run_suite(server, args, {"pid": args.server_pid}) else 0
    args.api_key = args.api_key or "malformed-suite-key"
    args.header_timeout = 2.0
    launched = LaunchedServer(args.binary, ["--model", args.model, "--header-timeout", "2"] +
                              args.serve_arg, api_key=args.api_key)
    failures = run_suite(launched.server, args, {"pid": launched.pid})
    code = launched.stop()
    if code != 0:
        print("FAIL drain: exit code %r after SIGTERM" % code)
        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
