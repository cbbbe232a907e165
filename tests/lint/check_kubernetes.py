#!/usr/bin/env python3
"""Parses deploy/kubernetes/*.yaml (python3-yaml; kubeconform is not packaged in Debian 12) and
checks the fields a working deployment needs: a Deployment whose pods ask for a GPU and probe
/health (startup, readiness, liveness) on the serving port, a Service selecting those pods on
that port, and a ServiceMonitor scraping /metrics through the Service's port name.
Usage: check_kubernetes.py [DIR]"""

import glob
import os
import sys

import yaml


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "deploy", "kubernetes")
    docs = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    for key in ("apiVersion", "kind", "metadata"):
                        assert key in doc, "%s: a document without %s" % (path, key)
                    docs[doc["kind"]] = doc
    errors = []

    def need(cond, what):
        if not cond:
            errors.append(what)

    dep, svc, mon = docs.get("Deployment"), docs.get("Service"), docs.get("ServiceMonitor")
    need(dep and svc and mon, "need a Deployment, a Service and a ServiceMonitor, got %s" % list(docs))
    if errors:
        sys.exit("\n".join(errors))
    need(dep["apiVersion"] == "apps/v1", "Deployment apiVersion apps/v1")
    labels = dep["spec"]["selector"]["matchLabels"]
    pod = dep["spec"]["template"]
    need(all(pod["metadata"]["labels"].get(k) == v for k, v in labels.items()),
         "the pod template carries the selector's labels")
    c = pod["spec"]["containers"][0]
    need(c["args"][0] == "serve", "the container runs `novaserve serve`")
    need("--governor-actuate" not in c["args"], "the shipped Deployment must not actuate")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    need("http" in ports, "a container port named http")
    need(int(c["resources"]["limits"].get("nvidia.com/gpu", 0)) >= 1, "a GPU per pod")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = c.get(probe, {}).get("httpGet", {})
        need(p.get("path") == "/health" and p.get("port") in ("http", ports.get("http")),
             "%s on /health at the serving port" % probe)
    need(pod["spec"].get("terminationGracePeriodSeconds", 30) > 30,
         "a grace period longer than --shutdown-timeout 30")
    need(svc["spec"]["selector"] == labels, "the Service selects the Deployment's pods")
    need(any(p["name"] == "http" for p in svc["spec"]["ports"]), "a Service port named http")
    need(mon["apiVersion"] == "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
    need(mon["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(),
         "the ServiceMonitor selects the Service")
    ep = mon["spec"]["endpoints"][0]
    need(ep["port"] == "http" and ep.get("path", "/metrics") == "/metrics",
         "the ServiceMonitor scrapes /metrics on port http")
    if errors:
        sys.exit("deploy/kubernetes: " + "; ".join(errors))
    print("deploy/kubernetes: %d manifests, all required fields present" % len(docs))


if __name__ == "__main__":
    main()
