"""Starts `novaserve serve` on a free loopback port for the e2e suites, and stops it with SIGTERM
(checking that the drain exits 0).

NOVASERVE_E2E_SERVER_ARGS (split like a shell line) is appended to every server's flags, e.g.
"--device cuda" to run the suites against the GPU backend (bench/gpu/run.sh).

NOVASERVE_E2E_RANKS=W (W > 1) runs every server as a multi-process pipeline of W processes
(docs/multi-gpu.md, "Several processes"): ranks 1 .. W-1 start first with the same flags and
--rank R, and each must exit 0 once rank 0 has stopped (rank 0 shuts them down)."""

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
        self.ranks = []
        world = int(os.environ.get("NOVASERVE_E2E_RANKS", "1"))
        if world > 1:
            cmd += ["--nccl-init", "tcp://127.0.0.1:%d" % free_port(), "--world-size", str(world)]
            for r in range(1, world):
                self.ranks.append(subprocess.Popen(cmd + ["--rank", str(r)], stdout=self.log,
                                                   stderr=subprocess.STDOUT))
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.url = "http://127.0.0.1:%d" % self.port
        self.server = Server(self.url, api_key)
        if not wait_healthy(self.server, startup_timeout, lambda: self.proc.poll() is None):
            code = self.proc.poll()
            self.proc.kill()
            self.proc.wait()
            self.stop_ranks(0)
            raise RuntimeError("server did not become healthy (exit code %r): %s"
                               % (code, " ".join(cmd)))

    @property
    def pid(self):
        return self.proc.pid

    def stop_ranks(self, timeout):
        """Waits up to `timeout` s for the other ranks, then kills those left; returns their exit
        codes (None for a killed one)."""
        codes = []
        for p in self.ranks:
            try:
                codes.append(p.wait(timeout))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                codes.append(None)
        return codes

    def stop(self, timeout=60.0):
        """SIGTERM, then waits; returns the exit code (None if it had to be killed). With other
        ranks, 1 when one of them did not exit 0 after rank 0 stopped."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
            if any(c != 0 for c in self.stop_ranks(timeout)) and code == 0:
                return 1
            return code
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.stop_ranks(0)
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
