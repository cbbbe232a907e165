"""Raw HTTP/1.1 helpers for the e2e suites (stdlib only, so they run on a bare GPU machine).

Malformed requests cannot be sent with http.client or urllib, so everything here speaks HTTP
over a plain socket: requests are bytes, responses are parsed by hand (Content-Length and
chunked bodies).
"""

import json
import re
import select
import socket
import threading
import time
import urllib.parse


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case name -> value
        self.body = body  # bytes (chunked bodies decoded)

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return "Response(%d, %r)" % (self.status, self.body[:300])


class Server:
    """Where the server listens, plus the headers every request carries (API key)."""

    def __init__(self, url, api_key=None):
        u = urllib.parse.urlparse(url)
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or 80
        self.api_key = api_key

    def auth_header(self):
        return b"Authorization: Bearer " + self.api_key.encode() + b"\r\n" if self.api_key else b""

    def connect(self, timeout=30.0):
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def request_bytes(self, method, path, body=None, headers=None, auth=True):
        """A well-formed request. body: bytes, str or a JSON-serializable object."""
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode("utf-8")
        head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\n" % (method, path, self.host, self.port)
        raw = head.encode("latin-1")
        if auth:
            raw += self.auth_header()
        for k, v in (headers or {}).items():
            raw += ("%s: %s\r\n" % (k, v)).encode("latin-1")
        if body is not None:
            raw += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        raw += b"\r\n"
        if body is not None:
            raw += body
        return raw

    def send_raw(self, raw, timeout=60.0):
        """Sends raw bytes on a fresh connection and reads one response (None if closed)."""
        s = self.connect(timeout)
        try:
            try:
                s.sendall(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may answer and close before reading everything
            return read_response(s, timeout)
        finally:
            s.close()

    def request(self, method, path, body=None, headers=None, auth=True, timeout=120.0):
        return self.send_raw(self.request_bytes(method, path, body, headers, auth), timeout)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)


class _Reader:
    def __init__(self, sock, deadline):
        self.sock = sock
        self.buf = b""
        self.deadline = deadline

    def fill(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete response in time")
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def until(self, marker):
        while marker not in self.buf:
            self.fill()
        i = self.buf.index(marker)
        out, self.buf = self.buf[:i], self.buf[i + len(marker):]
        return out

    def exactly(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def read_response(sock, timeout=60.0, reader=None):
    """Reads one response (skipping 100 Continue); None when the connection closed first."""
    r = reader or _Reader(sock, time.monotonic() + timeout)
    try:
        while True:
            head = r.until(b"\r\n\r\n").decode("latin-1")
            lines = head.split("\r\n")
            status = int(lines[0].split(" ")[1])
            headers = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
            if status != 100:
                break
        if "content-length" in headers:
            body = r.exactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            body = b""
            while True:
                n = int(r.until(b"\r\n"), 16)
                body += r.exactly(n)
                r.exactly(2)
                if n == 0:
                    break
        else:
            body = b""
        return Response(status, headers, body)
    except (EOFError, TimeoutError, socket.timeout):
        return None


def wait_readable(sock, timeout=60.0):
    """Blocks until `sock` has bytes to read (a response started arriving) or was closed; False
    after `timeout` seconds."""
    return bool(select.select([sock], [], [], timeout)[0])


class StreamStamps:
    """Reads an SSE response from `sock` on a thread and records the arrival time
    (time.monotonic) of each content chunk, for measuring inter-token gaps. stop() ends it."""

    def __init__(self, sock):
        self.sock = sock
        self.stamps = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read)
        self._thread.start()

    def _read(self):
        while not self._stop.is_set():
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.stamps.extend([time.monotonic()] * data.count(b'"text":"'))

    def wait_for(self, n, timeout):
        """True once n chunks arrived (False after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while len(self.stamps) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        return len(self.stamps) >= n

    def stop(self):
        self._stop.set()
        self.sock.close()
        self._thread.join()


def sse_events(body):
    """JSON payloads of an SSE body, and whether it ended with data: [DONE]."""
    events, done = [], False
    for block in body.decode("utf-8").split("\n\n"):
        if not block.startswith("data: "):
            continue
        payload = block[len("data: "):]
        if payload == "[DONE]":
            done = True
        else:
            events.append(json.loads(payload))
    return events, done


def metric_samples(metrics_text, name):
    """[(labels dict, value)] of the samples of `name` in Prometheus text."""
    out = []
    for line in metrics_text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        rest = line[len(name):]
        labels = {}
        if rest.startswith("{"):
            body, _, rest = rest[1:].partition("}")
            for part in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', body):
                labels[part[0]] = part[1]
        elif not rest.startswith(" "):
            continue  # a longer name with this prefix
        out.append((labels, float(rest.split()[0])))
    return out


def metric_value(metrics_text, name, **labels):
    """The value of the sample `name` whose labels, model_name aside, are exactly `labels`
    (none by default), or None."""
    for have, value in metric_samples(metrics_text, name):
        have = {k: v for k, v in have.items() if k != "model_name"}
        if have == labels:
            return value
    return None


def wait_healthy(server, timeout, alive=lambda: True):
    """Polls /health until 200; False after `timeout` seconds or as soon as `alive()` is false
    (the server process exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        try:
            r = server.get("/health", timeout=5)
            if r is not None and r.status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False
