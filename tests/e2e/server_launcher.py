"""Starts `novaserve serve` on a free loopback port for the e2e suites, and stops it with SIGTERM
(checking that the drain exits 0).

NOVASERVE_E2E_SERVER_ARGS (split like a shell line) is appended to every server's flags, e.g.
"--device cuda" to run the suites against the GPU backend (bench/gpu/run.sh)."""

import os
import shlex
import signal
import socket
import subprocess
import sys
import time

from http_client import Server, wait_healthy


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LaunchedServer:
    def __init__(self, binary, args, api_key=None, startup_timeout=300.0):
        self.port = free_port()
        cmd = [binary, "serve", "--host", "127.0.0.1", "--port", str(self.port)] + list(args)
        cmd += shlex.split(os.environ.get("NOVASERVE_E2E_SERVER_ARGS", ""))
        if api_key:
            cmd += ["--api-key", api_key]
        self.log = open(os.environ.get("NOVASERVE_E2E_LOG", os.devnull), "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = "http://127.0.0.1:%d" % self.port
        self.server = Server(self.url, api_key)
        if not wait_healthy(self.server, startup_timeout, lambda: self.proc.poll() is None):
            code = self.proc.poll()
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("server did not become healthy (exit code %r): %s"
                               % (code, " ".join(cmd)))

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, timeout=60.0):
        """SIGTERM, then waits; returns the exit code (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.log.close()


def rss_bytes(pid):
    """Resident set size of `pid` from /proc (None where unavailable)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def shared_dir():
    """NOVASERVE_SHARED_DIR, else ../shared next to the repository."""
    d = os.environ.get("NOVASERVE_SHARED_DIR")
    if d:
        return d
    root = os.environ.get("NOVASERVE_SOURCE_DIR",
                          os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return os.path.join(root, "..", "shared")


if __name__ == "__main__":
    sys.exit("library module; run malformed_http.py or test_server_e2e.py")
