"""An HTTP proxy on 127.0.0.1 that sits in front of the moto S3 server and misbehaves on purpose.

Tests point an S3 client at ``proxy.endpoint`` instead of the moto endpoint. Each request is read
whole, then either forwarded to moto and its answer passed back, or met with a fault:

=================  ===================================================================
kind               what the client sees
=================  ===================================================================
``slowdown``       503 with S3's ``SlowDown`` error body; moto never sees the request
``internal``       500 ``InternalError``; moto never sees the request
``bad_gateway``    502 ``BadGateway`` from a "load balancer"; moto never sees it
``conflict``       409 ``ConditionalRequestConflict`` (S3's answer while another conditional
                   write to the key is in flight); moto never sees it. Scripted use only:
                   not in the default random mix
``reset``          the connection is reset (RST) before anything is forwarded
``reset_after``    the request IS forwarded and done by moto, then the connection is reset
                   without an answer: the ambiguous case (did my write land?)
``reset_body``     the answer's status line, headers and half its body, then a reset
``stall_body``     the answer's headers and half its body, then nothing for ``stall``
                   seconds, then the rest: a client whose read timeout is shorter times out,
                   one with a longer timeout gets the whole answer late
``latency``        a delay drawn from ``latency`` seconds, then a normal answer
=================  ===================================================================

Faults come from two sources: a random draw on every request (probability ``rate``, kind
weighted by ``kinds``, reproducible from ``seed``), and scripted faults queued with
:meth:`FaultProxy.inject` that hit chosen requests (by method, path text, and how many matching
requests to let through first). ``strip_conditional=True`` removes ``If-None-Match`` and
``If-Match`` from every forwarded request: a store that accepts conditional writes and ignores
them (a list of header names strips only those).

The proxy speaks HTTP/1.1 with keep-alive to the client, reads ``Content-Length`` and chunked
request bodies, answers ``Expect: 100-continue``, and stops by itself after ``lifetime``
seconds in case a test forgets (its threads are daemons too).

``request_latency`` (seconds, default 0) delays every request before it is answered or
forwarded, in the handler thread of its connection: requests on separate connections overlap as
on a real object store, requests on one connection queue. It may be changed while the proxy
runs. Requests are counted by S3 verb (:attr:`FaultProxy.methods`: GET, PUT, HEAD, LIST,
DELETE, POST) and by S3 operation (:attr:`FaultProxy.operations`: GetObject, ListObjectsV2,
DeleteObjects, ...), both read from the method and target, whatever the client.
"""

from __future__ import annotations

import http.client
import random
import socket
import socketserver
import struct
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from tests.support.s3_operations import s3_operation

__all__ = ["FaultProxy", "FAULT_KINDS", "DEFAULT_WEIGHTS"]

#: every kind of fault the proxy can inject
FAULT_KINDS = ("slowdown", "internal", "bad_gateway", "conflict", "reset", "reset_after",
               "reset_body", "stall_body", "latency")

#: the random mix when ``kinds`` is not given: errors, all three resets, some latency
DEFAULT_WEIGHTS: dict[str, float] = {
    "slowdown": 0.25, "internal": 0.15, "bad_gateway": 0.05, "reset": 0.15,
    "reset_after": 0.15, "reset_body": 0.10, "latency": 0.15,
}

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
               "trailer", "upgrade", "expect"}
_CONDITIONAL = {"if-none-match", "if-match"}

_ERRORS = {
    "slowdown": (503, "Slow Down", "SlowDown", "Please reduce your request rate."),
    "internal": (500, "Internal Server Error", "InternalError",
                 "We encountered an internal error. Please try again."),
    "bad_gateway": (502, "Bad Gateway", "BadGateway", "The upstream did not answer in time."),
    "conflict": (409, "Conflict", "ConditionalRequestConflict",
                 "A conflicting conditional operation is in progress on this resource."),
}


@dataclass
class _Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        low = name.lower()
        for k, v in self.headers:
            if k.lower() == low:
                return v
        return None

    @property
    def keep_alive(self) -> bool:
        conn = (self.header("Connection") or "").lower()
        if self.version == "HTTP/1.0":
            return conn == "keep-alive"
        return conn != "close"


@dataclass
class _Script:
    kind: str
    method: str | None
    path_contains: str | None
    skip: int
    count: int

    def matches(self, req: _Request) -> bool:
        if self.method is not None and req.method != self.method.upper():
            return False
        return self.path_contains is None or self.path_contains in req.target


class _Closed(Exception):
    """The client went away (or we reset it): end this connection's loop."""


def _read_line(rfile: Any) -> bytes:
    line = rfile.readline(65537)
    if len(line) > 65536:
        raise _Closed("header line too long")
    return line


def _read_request(rfile: Any, wfile: Any) -> _Request | None:
    """One request from a keep-alive connection; None at a clean end of stream."""
    line = _read_line(rfile)
    while line in (b"\r\n", b"\n"):  # tolerate stray blank lines between requests
        line = _read_line(rfile)
    if not line:
        return None
    parts = line.decode("latin-1").rstrip("\r\n").split()
    if len(parts) != 3:
        raise _Closed(f"bad request line {line!r}")
    method, target, version = parts
    headers: list[tuple[str, str]] = []
    while True:
        h = _read_line(rfile)
        if h in (b"\r\n", b"\n", b""):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    req = _Request(method.upper(), target, version, headers, b"")
    if (req.header("Expect") or "").lower() == "100-continue":
        wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    if "chunked" in (req.header("Transfer-Encoding") or "").lower():
        req.body = _read_chunked(rfile)
    else:
        length = int(req.header("Content-Length") or 0)
        req.body = rfile.read(length) if length else b""
        if len(req.body) != length:
            raise _Closed("request body cut short")
    return req


def _read_chunked(rfile: Any) -> bytes:
    chunks = []
    while True:
        size_line = _read_line(rfile)
        if not size_line:
            raise _Closed("chunked body cut short")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while _read_line(rfile) not in (b"\r\n", b"\n", b""):  # trailers, dropped
                pass
            return b"".join(chunks)
        chunks.append(rfile.read(size))
        rfile.read(2)  # the CRLF after each chunk


def _error_xml(code: str, message: str, resource: str) -> bytes:
    rid = uuid.uuid4().hex[:16].upper()
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message><Resource>{resource}</Resource>"
            f"<RequestId>{rid}</RequestId><HostId>fault-proxy</HostId></Error>").encode()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy
        super().__init__((proxy.host, 0), _Handler)


class _Handler(socketserver.StreamRequestHandler):
    """One client connection: requests in a loop until the client or a fault ends it."""

    server: _Server

    def setup(self) -> None:
        super().setup()
        self.upstream: http.client.HTTPConnection | None = None

    def handle(self) -> None:
        proxy = self.server.proxy
        proxy._count("connections")
        try:
            while not proxy.stopped:
                req = _read_request(self.rfile, self.wfile)
                if req is None:
                    return
                if not self._serve(proxy, req):
                    return
        except (_Closed, OSError, http.client.HTTPException, ValueError):
            return
        finally:
            if self.upstream is not None:
                self.upstream.close()

    # -- one request ------------------------------------------------------------------------
    def _serve(self, proxy: FaultProxy, req: _Request) -> bool:
        """Answer (or not) one request; False when the connection must end."""
        proxy._count("requests")
        proxy._classify(req)
        delay = proxy.request_latency
        if delay > 0:
            time.sleep(delay)
        kind = proxy._choose(req)
        proxy._record(req, kind)
        if kind in _ERRORS:
            proxy._fault(kind)
            status, reason, code, message = _ERRORS[kind]
            body = b"" if req.method == "HEAD" else _error_xml(code, message, req.target)
            self.wfile.write(self._encode(req, status, reason,
                                          [("Content-Type", "application/xml")], body,
                                          length=len(body)))
            return req.keep_alive
        if kind == "reset":
            proxy._fault(kind)
            self._reset()
            return False
        if kind == "latency":
            proxy._fault(kind)
            time.sleep(proxy._draw_latency())
        status, reason, headers, body = self._forward(proxy, req)
        if kind == "reset_after":
            proxy._fault(kind)
            self._reset()
            return False
        length = self._length(req, status, headers, body)
        if kind in ("reset_body", "stall_body"):
            proxy._fault(kind)
            whole = self._encode(req, status, reason, headers, body, length=length,
                                 keep_alive=False)
            # cut inside the body, or inside the head of an answer without one
            cut = len(whole) - len(body) // 2 if len(body) >= 2 and req.method != "HEAD" \
                else max(1, (len(whole) - len(body)) // 2)
            self.wfile.write(whole[:cut])
            if kind == "reset_body":
                self._reset()  # raises: this connection ends here
            time.sleep(proxy.stall)
            self.wfile.write(whole[cut:])
            return False
        self.wfile.write(self._encode(req, status, reason, headers, body, length=length))
        return req.keep_alive

    def _forward(self, proxy: FaultProxy,
                 req: _Request) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send the request to moto on this connection's own upstream connection (reopened
        once if moto closed it) and read the whole answer."""
        headers = []
        for k, v in req.headers:
            low = k.lower()
            if low in _HOP_BY_HOP or low == "content-length":
                continue
            if low in proxy._stripped_headers() and (proxy.strip_methods is None
                                                      or req.method in proxy.strip_methods):
                proxy._count("stripped")
                continue
            headers.append((k, v))
        for attempt in (1, 2):
            if self.upstream is None:
                self.upstream = http.client.HTTPConnection(proxy.upstream_host,
                                                           proxy.upstream_port, timeout=60)
            try:
                conn = self.upstream
                conn.putrequest(req.method, req.target, skip_host=True,
                                skip_accept_encoding=True)
                for k, v in headers:
                    conn.putheader(k, v)
                if req.body or req.method in ("PUT", "POST"):
                    conn.putheader("Content-Length", str(len(req.body)))
                conn.endheaders(req.body or None)
                resp = conn.getresponse()
                body = resp.read()
                if resp.will_close:
                    conn.close()
                    self.upstream = None
                proxy._count("forwarded")
                return resp.status, resp.reason, resp.getheaders(), body
            except (OSError, http.client.HTTPException):
                self.upstream.close()
                self.upstream = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    @staticmethod
    def _length(req: _Request, status: int, headers: list[tuple[str, str]],
                body: bytes) -> int | None:
        """The Content-Length to announce: HEAD keeps moto's (the object's size, no body);
        204/304 announce none."""
        if req.method == "HEAD":
            for k, v in headers:
                if k.lower() == "content-length":
                    return int(v)
            return None
        if status in (204, 304) or status < 200:
            return None
        return len(body)

    @staticmethod
    def _encode(req: _Request, status: int, reason: str, headers: list[tuple[str, str]],
                body: bytes, *, length: int | None, keep_alive: bool = True) -> bytes:
        """The bytes of an answer (no body after a HEAD)."""
        lines = [f"HTTP/1.1 {status} {reason}"]
        for k, v in headers:
            if k.lower() not in _HOP_BY_HOP and k.lower() != "content-length":
                lines.append(f"{k}: {v}")
        if length is not None:
            lines.append(f"Content-Length: {length}")
        lines.append("Connection: " + ("keep-alive" if keep_alive and req.keep_alive
                                       else "close"))
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head + (b"" if req.method == "HEAD" else body)

    def _reset(self) -> None:
        """Close with RST (linger 0): the client gets 'connection reset', no answer."""
        sock = self.connection
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        sock.close()
        raise _Closed("reset by the fault proxy")


class FaultProxy:
    """A fault-injecting HTTP proxy in front of ``upstream`` (the moto endpoint URL).

    ``rate``: probability that a request gets a random fault (0 = a plain proxy).
    ``kinds``: weights of the random kinds (default :data:`DEFAULT_WEIGHTS`).
    ``seed``: seed of the random draws (None: a random seed).
    ``latency``: (min, max) seconds of a ``latency`` fault.
    ``stall``: seconds a ``stall_body`` fault pauses in the middle of an answer.
    ``strip_conditional``: drop ``If-None-Match`` / ``If-Match`` from forwarded requests
    (``strip_methods``: only from requests of these methods, e.g. ``["DELETE"]``)
    (True), or only the headers named in a list such as ``["If-Match"]``.
    ``request_latency``: seconds every request waits before it is answered or forwarded (one
    round trip of a distant store; 0: none). Not the ``latency`` fault, which is drawn per
    fault from the ``latency`` range.
    ``lifetime``: seconds after which the proxy stops by itself.

    ``rate``, ``kinds``, ``strip_conditional`` and ``request_latency`` may be changed while it
    runs.
    """

    def __init__(self, upstream: str, *, rate: float = 0.0, kinds: dict[str, float] | None = None,
                 seed: int | None = 0, latency: tuple[float, float] = (0.005, 0.05),
                 stall: float = 2.0, strip_conditional: bool | list[str] = False,
                 strip_methods: list[str] | None = None,
                 host: str = "127.0.0.1", request_latency: float = 0.0,
                 lifetime: float = 900.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self.upstream_host: str = parts.hostname
        self.upstream_port: int = parts.port
        self.host = host
        self.rate = rate
        self.kinds = dict(kinds) if kinds is not None else dict(DEFAULT_WEIGHTS)
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {FAULT_KINDS}")
        self.latency = latency
        self.stall = stall
        self.strip_conditional = strip_conditional
        self.strip_methods = None if strip_methods is None else {m.upper() for m in strip_methods}
        if request_latency < 0:
            raise ValueError(f"request_latency must be >= 0, got {request_latency!r}")
        self.request_latency = request_latency
        self.lifetime = lifetime
        self.stopped = False
        self._log: list[tuple[str, str, str | None]] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._faults: Counter[str] = Counter()
        self._methods: Counter[str] = Counter()
        self._operations: Counter[str] = Counter()
        self._scripts: list[_Script] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- life cycle ---------------------------------------------------------------------------
    def start(self) -> str:
        """Listen on a free port of ``host``; returns :attr:`endpoint`."""
        if self._server is None:
            self.stopped = False
            server = _Server(self)
            with self._lock:
                self._server = server
            self._thread = threading.Thread(target=server.serve_forever,
                                            kwargs={"poll_interval": 0.1},
                                            name="fault-proxy", daemon=True)
            self._thread.start()
            self._timer = threading.Timer(self.lifetime, self.stop)
            self._timer.daemon = True
            self._timer.start()
        return self.endpoint

    def stop(self) -> None:
        """Stop listening and end every connection's loop; safe to call twice."""
        self.stopped = True
        with self._lock:
            server = self._server
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._lock:
            if self._server is server:
                self._server = None

    @property
    def running(self) -> bool:
        """True from :meth:`start` until the listening socket is closed."""
        with self._lock:
            return self._server is not None

    def __enter__(self) -> FaultProxy:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fault proxy is not running")
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: give this to the S3 client instead of moto's."""
        return f"http://{self.host}:{self.port}"

    # -- scripted faults ----------------------------------------------------------------------
    def inject(self, kind: str, *, method: str | None = None, path_contains: str | None = None,
               skip: int = 0, count: int = 1) -> None:
        """Queue a fault for the next ``count`` requests that match ``method`` and whose
        request target (path and query) contains ``path_contains``, after letting ``skip``
        matching requests through. Scripted faults come before random ones."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {FAULT_KINDS}")
        with self._lock:
            self._scripts.append(_Script(kind, method, path_contains, skip, count))

    @property
    def pending_scripts(self) -> int:
        """Scripted faults not yet delivered."""
        with self._lock:
            return sum(s.count for s in self._scripts)

    # -- counters -----------------------------------------------------------------------------
    @property
    def faults(self) -> dict[str, int]:
        """Faults injected so far, by kind (kinds never injected are absent)."""
        with self._lock:
            return dict(self._faults)

    @property
    def total_faults(self) -> int:
        with self._lock:
            return sum(self._faults.values())

    @property
    def failed_requests(self) -> int:
        """Faults that left a request unanswered or refused (every kind but ``latency``):
        each must have cost the client one retry."""
        with self._lock:
            return sum(n for k, n in self._faults.items() if k != "latency")

    @property
    def requests(self) -> int:
        """Requests received from clients."""
        return self._counter("requests")

    @property
    def forwarded(self) -> int:
        """Requests passed on to moto (including ``reset_after`` ones moto answered)."""
        return self._counter("forwarded")

    @property
    def stripped(self) -> int:
        """Conditional headers removed in ``strip_conditional`` mode."""
        return self._counter("stripped")

    @property
    def connections(self) -> int:
        """Client connections accepted (fewer than requests when keep-alive works)."""
        return self._counter("connections")

    @property
    def methods(self) -> dict[str, int]:
        """Requests received, by verb: GET (of an object), PUT, HEAD, LIST (a GET of a
        bucket), DELETE, POST (DeleteObjects, multipart uploads)."""
        with self._lock:
            return dict(self._methods)

    @property
    def operations(self) -> dict[str, int]:
        """Requests received, by S3 operation (see :func:`s3_operation`)."""
        with self._lock:
            return dict(self._operations)

    @property
    def seen(self) -> list[tuple[str, str, str | None]]:
        """Every request received, in order: (method, target, fault kind or None). The
        oldest entries are dropped past 100,000."""
        with self._lock:
            return list(self._log)

    def reset_counters(self) -> None:
        with self._lock:
            self._counts.clear()
            self._faults.clear()
            self._methods.clear()
            self._operations.clear()
            self._log.clear()

    def summary(self) -> str:
        """One line for a test's output: requests, faults by kind."""
        faults = ", ".join(f"{k} {n}" for k, n in sorted(self.faults.items())) or "none"
        return (f"{self.requests} requests on {self.connections} connections, "
                f"{self.total_faults} faults injected ({faults})")

    # -- used by the handler threads ----------------------------------------------------------
    def _counter(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def _count(self, name: str) -> None:
        with self._lock:
            self._counts[name] += 1

    def _classify(self, req: _Request) -> None:
        verb, op = s3_operation(req.method, req.target,
                                req.header("x-amz-copy-source") is not None)
        with self._lock:
            self._methods[verb] += 1
            self._operations[op] += 1

    def _record(self, req: _Request, kind: str | None) -> None:
        with self._lock:
            self._log.append((req.method, req.target, kind))
            if len(self._log) > 100_000:
                del self._log[:10_000]

    def _fault(self, kind: str) -> None:
        with self._lock:
            self._faults[kind] += 1

    def _choose(self, req: _Request) -> str | None:
        with self._lock:
            for script in self._scripts:
                if script.matches(req):
                    if script.skip > 0:
                        script.skip -= 1
                        continue
                    script.count -= 1
                    if script.count <= 0:
                        self._scripts.remove(script)
                    return script.kind
            if self.rate <= 0 or self._rng.random() >= self.rate:
                return None
            kinds = [k for k, w in self.kinds.items() if w > 0]
            if not kinds:
                return None
            return self._rng.choices(kinds, weights=[self.kinds[k] for k in kinds])[0]

    def _stripped_headers(self) -> frozenset[str]:
        strip = self.strip_conditional
        if strip is True:
            return frozenset(_CONDITIONAL)
        if not strip:
            return frozenset()
        return frozenset(h.lower() for h in strip)

    def _draw_latency(self) -> float:
        with self._lock:
            return self._rng.uniform(*self.latency)
