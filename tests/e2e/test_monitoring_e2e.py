#!/usr/bin/env python3
"""The monitoring assets of deploy/ against the real thing.

- `promtool check config` and `promtool check rules` on deploy/prometheus.
- A real Prometheus (Debian `prometheus`) scrapes a real `novaserve serve --telemetry fake
  --governor slo` (dry-run; the fake SMI is a test mode with made-up GPUs) under a little load and
  evaluates deploy/prometheus/alerts.yml; then every PromQL expression of the Grafana dashboard
  (deploy/grafana/novaserve.json) and of the alert rules must return data. An alert's threshold
  comparison is cut off first (a healthy server does not fire), and each side of an `and` is run
  on its own. Every novaserve_* metric an expression names must be in /metrics, so a panel
  naming a metric we do not export fails with its name.

Environment: as test_server_e2e.py (NOVASERVE_BIN, NOVASERVE_MODEL, NOVASERVE_E2E_STRICT=1 turns
a missing binary, model or prometheus package into a failure).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_launcher import LaunchedServer, free_port  # noqa: E402
from test_server_e2e import BIN, MODEL, SKIP, requires  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
RULES = os.path.join(DEPLOY, "prometheus", "alerts.yml")
DASHBOARD = os.path.join(DEPLOY, "grafana", "novaserve.json")
NO_PROM = ("the Debian prometheus package (promtool, prometheus) is not installed"
           if shutil.which("promtool") is None or shutil.which("prometheus") is None else None)


def dashboard_queries():
    """[(panel title, PromQL)] with Grafana's variables replaced by what a user would pick."""
    with open(DASHBOARD) as f:
        dash = json.load(f)
    out = []
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$__rate_interval", "1m").replace("$model_name", ".*")
            out.append((panel["title"], expr))
    return out


def rule_queries():
    """[(alert name, PromQL)]: each side of a top-level `and`, its threshold comparison cut off.
    The rules file is YAML; its `expr` values are read without a YAML library (the e2e Python
    has none): block scalars (|) and plain one-line values, the only two forms alerts.yml uses."""
    out = []
    with open(RULES) as f:
        lines = f.read().splitlines()
    name = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*- alert: (\S+)", line)
        if m:
            name = m.group(1)
        m = re.match(r"(\s*)expr: ?(.*)$", line)
        if m:
            indent, value = len(m.group(1)), m.group(2).strip()
            if value in ("|", ">"):
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or
                                          len(lines[i]) - len(lines[i].lstrip()) > indent):
                    body.append(lines[i].strip())
                    i += 1
                value = " ".join(body)
                i -= 1
            for side in re.split(r"\s+and\s+", value):
                side = re.sub(r"\s*(>|<|>=|<=|==|!=)\s*[0-9.eE+-]+\s*$", "", side.strip())
                out.append((name, side))
        i += 1
    return out


def metric_names(expr):
    names = set()
    for n in re.findall(r"\bnovaserve_\w+", expr):
        names.add(re.sub(r"_(bucket|count|sum)$", "", n))
    return names


class PromtoolChecks(unittest.TestCase):
    @requires(NO_PROM)
    def test_config_and_rules(self):
        for args in (["check", "config", os.path.join(DEPLOY, "prometheus", "prometheus.yml")],
                     ["check", "rules", RULES]):
            r = subprocess.run(["promtool"] + args, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_the_extractors_find_every_panel_and_rule(self):
        self.assertGreaterEqual(len(dashboard_queries()), 15)
        self.assertEqual(len(rule_queries()), 6)  # the burn alert's two windows apart
        names = {n for n, _ in rule_queries()}
        self.assertEqual(names, {"NovaserveTtftSloBurn", "NovaserveKvCacheFull",
                                 "NovaservePreemptionsRising", "NovaserveGpuHot",
                                 "NovaserveGovernorActuating"})


@requires(SKIP)
@requires(NO_PROM)
class RealPrometheusE2E(unittest.TestCase):
    def test_every_dashboard_and_alert_query_returns_data(self):
        srv = LaunchedServer(BIN, ["--model", MODEL, "--telemetry", "fake", "--governor", "slo",
                                   "--governor-interval", "1", "--slo-ttft-p95", "5s",
                                   "--slo-itl-p95", "1s"])
        stop = threading.Event()

        def load():  # a little load: the same prompt, so the prefix cache gets hits too
            while not stop.is_set():
                srv.server.post("/v1/completions", {"prompt": "The capital of France is",
                                                    "max_tokens": 4})

        loader = threading.Thread(target=load)
        loader.start()
        work = tempfile.mkdtemp()
        prom = None
        try:
            port = free_port()
            with open(os.path.join(work, "prometheus.yml"), "w") as f:
                f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                        "rule_files: ['%s']\n"
                        "scrape_configs:\n  - job_name: novaserve\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n" % (RULES, srv.port))
            prom = subprocess.Popen(
                ["prometheus", "--config.file", os.path.join(work, "prometheus.yml"),
                 "--storage.tsdb.path", os.path.join(work, "data"),
                 "--web.listen-address", "127.0.0.1:%d" % port],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            exported = srv.server.get("/metrics").body.decode()
            queries = [("panel " + t, q) for t, q in dashboard_queries()] + \
                      [("alert " + n, q) for n, q in rule_queries()]
            for what, q in queries:
                for name in metric_names(q):
                    self.assertTrue("# TYPE %s " % name in exported,
                                    "%s names %s, which /metrics does not export" % (what, name))
            pending = dict(enumerate(queries))
            deadline = time.monotonic() + 90
            while pending and time.monotonic() < deadline:
                for k, (what, q) in list(pending.items()):
                    url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (
                        port, urllib.parse.quote(q))
                    try:
                        with urllib.request.urlopen(url, timeout=5) as resp:
                            data = json.load(resp)
                    except (OSError, ValueError):
                        continue
                    if data.get("status") == "success" and data["data"]["result"]:
                        del pending[k]
                time.sleep(1)
            self.assertFalse(pending, "queries without data after 90 s: %s" %
                             "; ".join("%s: %s" % v for v in pending.values()))
            rules_url = "http://127.0.0.1:%d/api/v1/rules" % port
            with urllib.request.urlopen(rules_url, timeout=5) as resp:
                groups = json.load(resp)["data"]["groups"]
            for rule in groups[0]["rules"]:
                self.assertEqual(rule["health"], "ok", rule)
        finally:
            stop.set()
            loader.join(60)
            if prom is not None:
                prom.terminate()
                prom.wait(30)
            shutil.rmtree(work, ignore_errors=True)
            self.assertEqual(srv.stop(), 0)


if __name__ == "__main__":
    unittest.main()
