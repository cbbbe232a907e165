#!/usr/bin/env python3
"""Reference renderer for chat templates: Python jinja2 configured as Hugging Face transformers
configures it in apply_chat_template, used by tests/unit/chat to check novaserve's engine byte
for byte.

Environment (as in transformers' chat template utilities):
  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[<generation tag>, jinja2.ext.loopcontrols])
  filters["tojson"]  = json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)
  globals["raise_exception"] raises TemplateError(message)
  globals["strftime_now"]    formats a pinned time (the job file's "now"), so output is stable

The {% generation %}...{% endgeneration %} tag is Hugging Face's (AssistantTracker): it renders
its body unchanged, in its own scope. This script implements that rendering only (it does not
track assistant token indices, which rendering does not need).

Usage: render_templates.py JOBS.json OUT.json
  JOBS.json: {"now": "YYYY-MM-DDTHH:MM:SS",
              "jobs": [{"id": str, "template": str, "context": {...}}, ...]}
  OUT.json:  {"jinja2_version": str,
              "results": {id: {"ok": true, "text": str} | {"ok": false, "error": str}}}
Every job gets a result; a template that fails to compile or render gets ok=false.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(jinja2.ext.Extension):
    """Hugging Face's {% generation %} block: renders the body as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def make_environment(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    env = make_environment(datetime.datetime.fromisoformat(spec["now"]))
    compiled = {}
    results = {}
    for job in spec["jobs"]:
        source = job["template"]
        try:
            if source not in compiled:
                try:
                    compiled[source] = env.from_string(source)
                except Exception as e:  # keep the compile error for every job of this template
                    compiled[source] = e
            template = compiled[source]
            if isinstance(template, Exception):
                raise template
            results[job["id"]] = {"ok": True, "text": template.render(**job["context"])}
        except Exception as e:
            results[job["id"]] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump({"jinja2_version": jinja2.__version__, "results": results}, f,
                  ensure_ascii=False)


if __name__ == "__main__":
    main()
