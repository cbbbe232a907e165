#!/usr/bin/env python3
"""End-to-end tests of structured outputs and tool calling on the real server and default model.

With the official `openai` client: `chat.completions.parse(response_format=PydanticModel)`,
streamed and not; `json_schema` with strict on 20 schemas of ../shared/testdata/json-schemas,
every finished output validated with Python `jsonschema` (an output cut at max_tokens counts as
cut, not valid); named and required tool_choice (also streamed) return calls whose arguments
validate against the tool's schema; a conversation with a tool result round-trips. With raw HTTP:
unsupported keywords, unsatisfiable schemas, 10,000-deep nesting, a 1 MB schema, a regex with
catastrophic backtracking and left-recursive GBNF each get a 400 or finish in bounded time, and
the server keeps serving.

Environment as in test_server_e2e.py. Run: python3 tests/e2e/test_structured_outputs_e2e.py
"""

import concurrent.futures
import glob
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_launcher import LaunchedServer  # noqa: E402
from test_server_e2e import BIN, MODEL, SKIP, needs_openai, requires  # noqa: E402

try:
    import openai
    import pydantic
except ImportError:
    openai = None
try:
    import jsonschema
except ImportError:
    jsonschema = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("NOVASERVE_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
SCHEMAS = os.path.join(SHARED, "testdata", "json-schemas")
MODEL_NAME = "smol"
N_SCHEMAS = 20

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 40},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Local time in a time zone.",
        "parameters": {"type": "object", "properties": {
            "zone": {"type": "string", "maxLength": 40}},
            "required": ["zone"], "additionalProperties": False}}},
]
TOOL_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What is the weather in Paris right now?"}]


def jsonschema_missing():
    return "the jsonschema package is not installed (tools/setup.sh installs it)" \
        if jsonschema is None else None


def schema_cases():
    """(name, schema) of the shared schemas, smallest first (small models finish small objects),
    every third one so that the pick spans the sources."""
    out = []
    for path in glob.glob(os.path.join(SCHEMAS, "*.json")):
        with open(path) as f:
            doc = json.load(f)
        size = doc.get("meta", {}).get("stripped_size", len(json.dumps(doc["schema"])))
        if size < 2000:
            out.append((size, os.path.basename(path), doc["schema"]))
    out.sort(key=lambda c: (c[0], c[1]))
    return [(name, schema) for _, name, schema in out[::3]]


@requires(SKIP)
class StructuredOutputsE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = LaunchedServer(BIN, ["--model", MODEL, "--served-model-name", MODEL_NAME,
                                       "--max-body-bytes", str(4 << 20)])
        cls.server = cls.srv.server

    @classmethod
    def tearDownClass(cls):
        code = cls.srv.stop()
        assert code == 0, "serve exited %r after SIGTERM" % code

    def client(self):
        return openai.OpenAI(base_url=self.srv.url + "/v1", api_key="unused", max_retries=0,
                             timeout=120)

    def chat(self, **body):
        body.setdefault("model", MODEL_NAME)
        body.setdefault("messages", ASK)
        body.setdefault("temperature", 0)
        return self.server.post("/v1/chat/completions", body, timeout=180)

    def assert_serving(self):
        r = self.chat(max_tokens=4)
        self.assertEqual(r.status, 200, r.body)

    # --- OpenAI structured outputs ---

    @needs_openai
    def test_parse_pydantic_model_plain_and_streamed(self):
        class Weather(pydantic.BaseModel):
            city: str = pydantic.Field(max_length=30)
            temperature_c: int
            sunny: bool

        msgs = [{"role": "user", "content": "Give the weather in Paris as JSON."}]
        c = self.client()
        parse = getattr(c.chat.completions, "parse", None) or c.beta.chat.completions.parse
        r = parse(model=MODEL_NAME, messages=msgs, response_format=Weather, max_tokens=80,
                  temperature=0)
        self.assertEqual(r.choices[0].finish_reason, "stop")
        parsed = r.choices[0].message.parsed
        self.assertIsInstance(parsed, Weather)
        stream = getattr(c.chat.completions, "stream", None) or c.beta.chat.completions.stream
        with stream(model=MODEL_NAME, messages=msgs, response_format=Weather, max_tokens=80,
                    temperature=0) as s:
            pieces = [e for e in s if e.type == "content.delta"]
            final = s.get_final_completion()
        self.assertGreater(len(pieces), 1, "the JSON arrives in several deltas")
        self.assertIsInstance(final.choices[0].message.parsed, Weather)
        self.assertEqual(final.choices[0].message.parsed, parsed, "stream == non-stream (greedy)")

    @requires(jsonschema_missing())
    def test_strict_json_schema_on_20_shared_schemas(self):
        cases = schema_cases()
        self.assertGreaterEqual(len(cases), N_SCHEMAS, "too few shared schemas in " + SCHEMAS)

        def run(case):
            name, schema = case
            r = self.chat(messages=[{"role": "user", "content":
                                     "Reply with JSON for this schema: " + json.dumps(schema)[:800]}],
                          response_format={"type": "json_schema", "json_schema": {
                              "name": "s", "schema": schema, "strict": True}},
                          max_tokens=160)
            return name, schema, r

        outcome = {"valid": [], "cut": [], "refused": [], "invalid": []}
        pending = list(cases)
        tried = 0
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            while tried < N_SCHEMAS and pending:
                batch, pending = pending[:N_SCHEMAS - tried], pending[N_SCHEMAS - tried:]
                for name, schema, r in pool.map(run, batch):
                    if r.status == 400:  # the engine refuses what it cannot enforce: honest
                        self.assertEqual(r.json()["error"]["param"], "response_format")
                        outcome["refused"].append(name)
                        continue
                    self.assertEqual(r.status, 200, "%s: %s" % (name, r.body[:300]))
                    tried += 1
                    choice = r.json()["choices"][0]
                    if choice["finish_reason"] == "length":
                        outcome["cut"].append(name)
                        continue
                    self.assertEqual(choice["finish_reason"], "stop", name)
                    try:
                        jsonschema.validate(json.loads(choice["message"]["content"]), schema)
                        outcome["valid"].append(name)
                    except (ValueError, jsonschema.ValidationError) as e:
                        outcome["invalid"].append("%s: %s: %r" % (name, str(e)[:200],
                                                                 choice["message"]["content"]))
        print("\nstrict json_schema on %d shared schemas: %d valid, %d cut at max_tokens, "
              "%d invalid; %d refused at compile (skipped)" % (
                  tried, len(outcome["valid"]), len(outcome["cut"]), len(outcome["invalid"]),
                  len(outcome["refused"])), file=sys.stderr)
        self.assertEqual(tried, N_SCHEMAS)
        self.assertEqual(outcome["invalid"], [], "finished outputs that break their schema")
        self.assertGreater(len(outcome["valid"]), N_SCHEMAS // 2, "most outputs should finish")

    # --- tools ---

    def check_call(self, call, name=None):
        self.assertEqual(call["type"], "function")
        self.assertTrue(call["id"])
        if name:
            self.assertEqual(call["function"]["name"], name)
        self.assertIn(call["function"]["name"], TOOL_SCHEMAS)
        args = json.loads(call["function"]["arguments"])
        if jsonschema is not None:
            jsonschema.validate(args, TOOL_SCHEMAS[call["function"]["name"]])
        return args

    @needs_openai
    def test_named_and_required_tool_choice_plain_and_streamed(self):
        c = self.client()
        named = {"type": "function", "function": {"name": "get_time"}}
        for choice, name in ((named, "get_time"), ("required", None)):
            r = c.chat.completions.create(model=MODEL_NAME, messages=ASK, tools=TOOLS,
                                          tool_choice=choice, max_tokens=60, temperature=0)
            ch = r.choices[0]
            self.assertEqual(ch.finish_reason, "tool_calls", ch)
            self.assertGreaterEqual(len(ch.message.tool_calls), 1)
            calls = [t.model_dump() for t in ch.message.tool_calls]
            for call in calls:
                self.check_call(call, name)
            # Streamed: delta.tool_calls chunks accumulate to the same calls.
            acc = {}
            finish = None
            for chunk in c.chat.completions.create(model=MODEL_NAME, messages=ASK, tools=TOOLS,
                                                   tool_choice=choice, max_tokens=60,
                                                   temperature=0, stream=True):
                if not chunk.choices:
                    continue
                d = chunk.choices[0].delta
                for t in d.tool_calls or []:
                    a = acc.setdefault(t.index, {"id": "", "type": "function",
                                                 "function": {"name": "", "arguments": ""}})
                    a["id"] = t.id or a["id"]
                    if t.function:
                        a["function"]["name"] += t.function.name or ""
                        a["function"]["arguments"] += t.function.arguments or ""
                finish = chunk.choices[0].finish_reason or finish
            self.assertEqual(finish, "tool_calls")
            streamed = [acc[k] for k in sorted(acc)]
            self.assertEqual([s["function"] for s in streamed], [x["function"] for x in calls])

    @needs_openai
    def test_tool_result_conversation_round_trips(self):
        c = self.client()
        first = c.chat.completions.create(
            model=MODEL_NAME, messages=ASK, tools=TOOLS, max_tokens=60, temperature=0,
            tool_choice={"type": "function", "function": {"name": "get_weather"}})
        call = first.choices[0].message.tool_calls[0]
        msgs = ASK + [first.choices[0].message.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": call.id,
                       "content": json.dumps({"temperature_c": 21, "sky": "clear"})}]
        second = c.chat.completions.create(model=MODEL_NAME, messages=msgs, tools=TOOLS,
                                           tool_choice="none", max_tokens=40, temperature=0)
        self.assertIn(second.choices[0].finish_reason, ("stop", "length"))
        self.assertTrue(second.choices[0].message.content)
        self.assertFalse(second.choices[0].message.tool_calls)
        # tool_choice auto on the same conversation: text or a call, never a 4xx/5xx.
        third = c.chat.completions.create(model=MODEL_NAME, messages=msgs, tools=TOOLS,
                                          max_tokens=40, temperature=0)
        self.assertIn(third.choices[0].finish_reason, ("stop", "length", "tool_calls"))

    def test_tool_validation_errors(self):
        fn = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        bad = [
            ({"tools": [{"type": "function"}]}, "tools[0].function"),
            ({"tools": [fn, fn]}, "tools"),
            ({"tools": [fn], "tool_choice": {"type": "function", "function": {"name": "g"}}},
             "tool_choice"),
            ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
                "type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}}}],
              "tool_choice": "required"}, "tool_choice"),
            ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
                "type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}}}],
              "tool_choice": {"type": "function", "function": {"name": "f"}}},
             "tools[0].function.parameters"),
            ({"tools": [{"type": "function", "function": {"name": "f", "parameters": [1]}}]},
             "tools[0].function.parameters"),
        ]
        for body, param in bad:
            r = self.chat(max_tokens=4, **body)
            self.assertEqual(r.status, 400, (body, r.body))
            self.assertEqual(r.json()["error"]["param"], param, r.body)
            self.assertEqual(r.json()["error"]["type"], "invalid_request_error")

    # --- other dialects ---

    def test_vllm_and_llama_server_fields(self):
        r = self.chat(guided_choice=["yes", "no"], max_tokens=5)
        self.assertIn(r.json()["choices"][0]["message"]["content"], ("yes", "no"))
        r = self.chat(guided_regex="[0-9]{3}-[0-9]{4}", max_tokens=12)
        content = r.json()["choices"][0]["message"]["content"]
        self.assertRegex(content, r"^[0-9]{3}-[0-9]{4}$")
        self.assertEqual(r.json()["choices"][0]["finish_reason"], "stop")
        r = self.chat(grammar='root ::= "A" [0-9] [0-9]', max_tokens=8)
        self.assertRegex(r.json()["choices"][0]["message"]["content"], r"^A[0-9]{2}$")
        r = self.chat(structured_outputs={"json": {"type": "object", "properties": {
            "ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}},
            max_tokens=12)
        self.assertIn(json.loads(r.json()["choices"][0]["message"]["content"]),
                      ({"ok": True}, {"ok": False}))
        r = self.server.post("/v1/completions", {"model": MODEL_NAME, "prompt": "Answer:",
                                                 "max_tokens": 6, "guided_json": {"type": "integer"},
                                                 "temperature": 0})
        self.assertEqual(r.status, 200, r.body)
        int(r.json()["choices"][0]["text"])
        r = self.chat(response_format={"type": "json_object"}, max_tokens=40)
        self.assertEqual(r.status, 200, r.body)
        if r.json()["choices"][0]["finish_reason"] == "stop":
            self.assertIsInstance(json.loads(r.json()["choices"][0]["message"]["content"]), dict)

    # --- malformed input ---

    def rf(self, schema):
        return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema,
                                                       "strict": True}}

    def test_malformed_constraints_get_400_or_bounded_time(self):
        refused = [
            ("unsupported keyword", {"response_format": self.rf(
                {"type": "array", "items": {"type": "integer"}, "uniqueItems": True})},
             "response_format", "uniqueItems"),
            ("unsatisfiable range", {"response_format": self.rf(
                {"type": "integer", "minimum": 5, "maximum": 3})}, "response_format", "unsatisf"),
            ("unsatisfiable allOf", {"response_format": self.rf(
                {"allOf": [{"type": "string"}, {"type": "integer"}]})}, "response_format",
             "unsatisf"),
            ("left-recursive GBNF", {"grammar": 'root ::= root "a" | "a"'}, "grammar",
             "left recursion"),
            ("bad GBNF names the line", {"guided_grammar": 'root ::= "a"\nx ::= ( "b"'},
             "guided_grammar", "line 2"),
            ("two constraints", {"guided_regex": "a", "guided_choice": ["a"]}, "guided_choice",
             "at most one"),
        ]
        for what, body, param, text in refused:
            t0 = time.monotonic()
            r = self.chat(max_tokens=8, **body)
            self.assertEqual(r.status, 400, "%s: %s" % (what, r.body[:300]))
            err = r.json()["error"]
            self.assertEqual(err["param"], param, what)
            self.assertIn(text, err["message"], what)
            self.assertLess(time.monotonic() - t0, 10, what)
        # 10,000-deep nesting: refused by the body's nesting limit.
        deep = '{"items":' * 10000 + "{}" + "}" * 10000
        raw = ('{"model": "%s", "messages": [{"role": "user", "content": "hi"}], '
               '"response_format": {"type": "json_schema", "json_schema": {"name": "x", '
               '"schema": %s}}}' % (MODEL_NAME, deep))
        r = self.server.post("/v1/chat/completions", raw)
        self.assertEqual(r.status, 400, r.body[:300])
        # Bounded: an automaton has no backtracking, so these run like any other grammar.
        bounded = [
            ("catastrophic regex", {"guided_regex": "(a+)+$"}),
            ("catastrophic regex 2", {"guided_regex": "((a|a)*)*b"}),
            ("1 MB enum schema", {"response_format": self.rf(
                {"enum": ["v%07d" % i for i in range(100000)]})}),
            ("1 MB object schema", {"response_format": self.rf({"type": "object", "properties": {
                "p%d" % i: {"type": "string", "description": "x" * 20} for i in range(20000)}})}),
        ]
        for what, body in bounded:
            t0 = time.monotonic()
            r = self.chat(max_tokens=16, **body)
            elapsed = time.monotonic() - t0
            self.assertIn(r.status, (200, 400), "%s: %s" % (what, r.body[:300]))
            self.assertLess(elapsed, 60, what)
            print("\n%s: HTTP %d in %.2f s" % (what, r.status, elapsed), file=sys.stderr)
        self.assert_serving()


if __name__ == "__main__":
    unittest.main()
