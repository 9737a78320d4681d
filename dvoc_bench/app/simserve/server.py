"""The simulator server's HTTP side: a bounded threaded server, its limits and its injected faults.

Every connection is first held by the front (:mod:`dvoc_bench.app.simserve.front`: one thread, a
selector), which reads each request whole and only then hands it to a handler thread: a slow client
(slowloris: a byte every few seconds) costs a socket, never a thread, and complete requests are answered
while hundreds of slow ones wait. Limits (:class:`ServerLimits`, all overridable): the listen backlog
holds a burst of connections not accepted yet (queued by the kernel, never reset); at most ``max_open``
connections are open in the front; at most ``max_connections`` handler threads exist (complete requests
beyond wait in the front); at most ``max_busy`` requests are inside the simulator at once, the others wait
up to ``queue_timeout_s`` and are then answered 503 with ``Retry-After``; a request's line and headers
must arrive within ``header_timeout_s`` of its first byte and all of it within ``request_timeout_s`` (else
408, connection closed); a connection that sends nothing for ``idle_timeout_s`` is closed; a body larger
than ``max_body`` is a 413. A bad request is a 4xx with one line saying what is wrong, never a 500.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
import logging
import math
import random
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import _SocketWriter  # type: ignore[attr-defined]
from typing import Any

from dvoc_bench.app.simserve import wire
from dvoc_bench.app.simserve.backend import SimBackend
from dvoc_bench.app.simserve.front import STOPPING_503, Conn, Front, FrontLimits
from dvoc_bench.app.simserve.wire import HTTPError, bad_request

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765


@dataclass(frozen=True)
class ServerLimits:
    """What the server holds at most, and how long it waits for a client."""

    backlog: int = 1024
    """Listen backlog: connections the kernel queues before a handler thread takes them (capped by the
    system's ``net.core.somaxconn``)."""
    max_connections: int = 256
    """Handler threads (one per request being answered); more complete requests wait in the front."""
    max_open: int = 4096
    """Connections open at once in the front (reading requests, or waiting for the next on a kept-alive
    connection); more wait in the listen backlog."""
    max_busy: int = 8
    """Requests inside the simulator at once (it is CPU-bound: more threads would not answer sooner)."""
    queue_timeout_s: float = 30.0
    """Longest wait for a simulator slot; then the request is answered 503 with ``Retry-After``."""
    retry_after_s: int = 1
    """The ``Retry-After`` of a 503."""
    idle_timeout_s: float = 10.0
    """A connection that sends nothing for this long (also between keep-alive requests) is closed."""
    header_timeout_s: float = 5.0
    """A request whose line and headers have not all arrived this long after its first byte is answered
    408 and its connection closed (slowloris)."""
    request_timeout_s: float = 30.0
    """A request whose line, headers and body have not all arrived this long after it began is
    answered 408 and its connection closed. Until then it waits in the front, holding no thread."""
    max_body: int = 64 * 1024 * 1024
    """Largest request body, bytes; a larger ``Content-Length`` is a 413."""


MAX_BODY = ServerLimits().max_body
"""Largest request body accepted (bytes)."""


@dataclass(frozen=True)
class FaultOptions:
    """Faults the server injects (all off by default)."""

    rpm: int | None = None
    """Accepted requests per ``rate_window_s``; more get 429 + Retry-After. ``None``: no limit."""
    rate_window_s: float = 60.0
    """Length of the rate window, seconds."""
    error_rate: float = 0.0
    """Share of requests answered 500."""
    delay_s: float = 0.0
    """Added latency of every reply, seconds."""
    delay_jitter_s: float = 0.0
    """Up to this much more latency, uniform."""
    auth_fail: bool = False
    """Answer every request 401."""
    required_key: str | None = None
    """When set, a request must carry ``Authorization: Bearer <this>``."""
    seed: int = 0
    """Seed of the fault generator (500s, jitter)."""
    pad_chars: int = 0
    """Pad every successful reply with this many characters: appended to the text, and as a ``pad`` field
    inside every tool call's arguments (huge replies; the client must keep its records bounded)."""
    echo_key: bool = False
    """Echo the presented bearer token in every successful reply: in the text, in a ``note`` field of the
    tool calls' arguments and in an ``X-Echo-Authorization`` header (a careless server at its worst)."""


STATUSES = ("requests", "ok", "400", "401", "404", "408", "413", "429", "500", "503")


class _Faults:
    """Mutable fault state shared by the handler threads."""

    def __init__(self, opts: FaultOptions):
        self.opts = opts
        self.lock = threading.Lock()
        self.accepted: deque[float] = deque()
        self.rng = random.Random(opts.seed)
        self.counts = dict.fromkeys(STATUSES, 0)
        """Requests seen and answers given, per status (read by tests and the scheduler's benchmarks)."""

    def check(self, auth_header: str | None) -> float:
        """Raise the injected error for this request, else return the delay to add."""
        o = self.opts
        token = (auth_header or "").removeprefix("Bearer ").strip()
        with self.lock:
            self.counts["requests"] += 1
            if o.auth_fail or (o.required_key is not None and token != o.required_key):
                raise HTTPError(401, f"Incorrect API key provided: {token or '<none>'}", "invalid_api_key")
            if o.rpm is not None:
                now = time.monotonic()
                while self.accepted and self.accepted[0] <= now - o.rate_window_s:
                    self.accepted.popleft()
                if len(self.accepted) >= o.rpm:
                    wait = max(1, math.ceil(self.accepted[0] + o.rate_window_s - now))
                    raise HTTPError(
                        429,
                        f"Rate limit reached: {o.rpm} requests per {o.rate_window_s:g} s. Retry in {wait} s.",
                        "rate_limit_exceeded",
                        {"Retry-After": str(wait)},
                    )
                self.accepted.append(now)
            if o.error_rate > 0 and self.rng.random() < o.error_rate:
                raise HTTPError(500, "The server had an error while processing your request.", "server_error")
            return o.delay_s + (self.rng.uniform(0, o.delay_jitter_s) if o.delay_jitter_s > 0 else 0.0)


@dataclass(frozen=True)
class _Request:
    """A complete request handed from the front to a handler thread."""

    conn: Conn
    data: bytes


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    backend: SimBackend
    faults: _Faults
    limits: ServerLimits

    def __init__(self, address: tuple[str, int], limits: ServerLimits):
        self.limits = limits
        self.request_queue_size = limits.backlog
        self._workers = threading.BoundedSemaphore(limits.max_connections)
        self._ready: deque[_Request] = deque()
        self.busy = threading.BoundedSemaphore(limits.max_busy)
        super().__init__(address, _Handler)
        front = FrontLimits(
            limits.header_timeout_s,
            limits.request_timeout_s,
            limits.idle_timeout_s,
            limits.max_body,
            limits.max_open,
        )
        self.front = Front(
            self.socket, front, self._handoff, tick=self._start_ready, on_stop=self._refuse_ready
        )
        self._inflight = 0
        self._idle = threading.Condition()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Run the front until :meth:`shutdown` (``poll_interval`` is unused: the front wakes itself)."""
        self.front.run()

    def _handoff(self, conn: Conn, data: bytes) -> None:
        """On the front's loop: a complete request gets a handler thread, or waits for one."""
        self._ready.append(_Request(conn, data))
        self._start_ready()

    def _start_ready(self) -> None:
        """On the front's loop: waiting complete requests get the handler threads that are free."""
        while self._ready and self._workers.acquire(blocking=False):
            req = self._ready.popleft()
            with self._idle:
                self._inflight += 1
            try:
                threading.Thread(
                    target=self._answer, args=(req,), name="dvoc-sim-handler", daemon=True
                ).start()
            except RuntimeError:  # no thread to be had: the request waits for the next pass
                self._done()
                self._ready.appendleft(req)
                return

    def _refuse_ready(self) -> None:
        """On the front's loop as it ends: complete requests still waiting for a thread are answered 503."""
        while self._ready:
            req = self._ready.popleft()
            self.front.lent -= 1
            with contextlib.suppress(OSError):
                req.conn.sock.setblocking(False)
                req.conn.sock.send(STOPPING_503)
            with contextlib.suppress(OSError):
                req.conn.sock.shutdown(socket.SHUT_RDWR)
            req.conn.sock.close()

    def _done(self) -> None:
        self._workers.release()
        with self._idle:
            self._inflight -= 1
            self._idle.notify_all()

    def drain(self, timeout: float = 5.0) -> bool:
        """Wait up to ``timeout`` seconds for the requests being answered; whether none is left."""
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout)

    def _answer(self, req: _Request) -> None:
        conn = req.conn
        keep = False
        try:
            conn.sock.setblocking(True)
            handler = _Handler(req, conn.addr, self)  # type: ignore[arg-type]
            keep = not handler.close_connection
        except Exception:
            self.handle_error(conn.sock, conn.addr)
        finally:
            self._done()
            if not keep:
                with contextlib.suppress(OSError):
                    conn.sock.close()
            self.front.give_back(conn)  # also when closed: the front counts it back

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (reset, broken pipe, timeout) is logged at debug level; anything else
        through the log, never a traceback printed to stderr."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            log.debug("client %s went away: %s", client_address, exc)
        else:
            log.exception("request from %s failed", client_address)

    def shutdown(self) -> None:
        """Stop serving: the front answers or closes what it holds (503 to a request begun), the requests
        being answered are waited for (5 s at most)."""
        self.front.stop()
        self.front.stopped.wait(5)
        self.drain()

    def server_close(self) -> None:
        self.drain()
        super().server_close()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: without this, +40 ms per reply

    request: _Request

    def setup(self) -> None:
        """The request was read whole by the front: it is read here from memory; answers go to the
        socket (each write waits at most ``idle_timeout_s``)."""
        self.connection = self.request.conn.sock
        self.connection.settimeout(self.server.limits.idle_timeout_s)
        if self.disable_nagle_algorithm:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.rfile = io.BytesIO(self.request.data)
        self.wfile = _SocketWriter(self.connection)

    def handle(self) -> None:
        """One request: the connection goes back to the front for the next one."""
        self.close_connection = True
        self.handle_one_request()

    def handle_expect_100(self) -> bool:
        return True  # the front sent ``100 Continue`` while it read the body

    def log_message(self, format: str, *args: Any) -> None:  # no headers, never to stderr
        log.debug("%s %s", self.address_string(), format % args)

    def _send(
        self, status: int, data: bytes, headers: Mapping[str, str], ctype: str = "application/json"
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _error(self, e: HTTPError) -> None:
        with self.server.faults.lock:
            key = str(e.status)
            self.server.faults.counts[key] = self.server.faults.counts.get(key, 0) + 1
        body = {"error": {"message": str(e), "type": e.kind, "param": None, "code": e.status}}
        self._send(e.status, json.dumps(body).encode(), e.headers)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The base class's errors (a malformed request line, headers too long, ...) as JSON, connection
        closed."""
        self.close_connection = True
        self._error(HTTPError(int(code), message or explain or "bad request", "invalid_request_error"))

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self._send(200, json.dumps({"status": "ok"}).encode(), {})
        elif path in ("/v1/models", "/models"):
            data = [
                {"id": n, "object": "model", "owned_by": "dvoc-bench-simulator"}
                for n in self.server.backend.profiles()
            ]
            self._send(200, json.dumps({"object": "list", "data": data}).encode(), {})
        else:
            self._error(HTTPError(404, f"no route {path}", "invalid_request_error"))

    def _body(self) -> bytes:
        """The request body (``Content-Length`` bytes), or a 400 / 408 / 413 (connection closed then)."""
        raw_n = self.headers.get("Content-Length")
        try:
            n = int(raw_n) if raw_n is not None and raw_n.strip().isdigit() else -1
        except ValueError:
            n = -1
        if n < 0:
            self.close_connection = True
            got = "missing" if raw_n is None else f"not a byte count: {wire.shown(raw_n, 20)}"
            raise bad_request(f"Content-Length: {got}")
        if n > self.server.limits.max_body:
            self.close_connection = True
            raise bad_request(f"the body is {n} bytes (at most {self.server.limits.max_body})", 413)
        raw = self.rfile.read(n)  # the front read it whole (or it is larger than max_body: 413 above)
        if len(raw) < n:
            self.close_connection = True
            raise bad_request(f"the body ended after {len(raw)} of {n} bytes")
        return raw

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            raw = self._body()
            if path not in ("/v1/chat/completions", "/chat/completions"):
                raise HTTPError(404, f"no route {path}", "invalid_request_error")
            delay = self.server.faults.check(self.headers.get("Authorization"))
            body = wire.parse_body(raw)
            stream, usage = wire.wants_stream(body)
            lim = self.server.limits
            if not self.server.busy.acquire(timeout=lim.queue_timeout_s):
                raise HTTPError(
                    503,
                    f"the simulator is busy ({lim.max_busy} requests at once); "
                    f"retry in {lim.retry_after_s} s",
                    "server_overloaded",
                    {"Retry-After": str(lim.retry_after_s)},
                )
            try:
                answer = self.server.backend.chat(body)
            finally:
                self.server.busy.release()
            if delay > 0:
                time.sleep(delay)
        except HTTPError as e:
            self._error(e)
            self._drain_if_closing()
            return
        except Exception as e:  # a simulator bug answers 500 instead of killing the connection
            log.exception("simulator failed on a request")
            self._error(HTTPError(500, f"simulator error: {type(e).__name__}", "server_error"))
            return
        with self.server.faults.lock:
            self.server.faults.counts["ok"] += 1
        headers = _careless(answer, self.server.faults.opts, self.headers.get("Authorization"))
        if stream:
            sse_headers = {**headers, "Cache-Control": "no-cache"}
            self._send(200, wire.sse(answer, usage), sse_headers, "text/event-stream")
        else:
            self._send(200, json.dumps(answer).encode(), headers)

    def _drain_if_closing(self) -> None:
        """Before closing a connection whose request was not read whole, stop sending and read what the
        client still sends (briefly): closing with unread bytes would reset the connection, and the client
        could lose the answer."""
        if not self.close_connection:
            return
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            end = time.monotonic() + 2.0
            self.connection.settimeout(0.5)
            while time.monotonic() < end and self.connection.recv(65536):
                pass


def _careless(answer: dict[str, Any], o: FaultOptions, auth: str | None) -> dict[str, str]:
    """Apply ``echo_key`` and ``pad_chars`` to a successful answer (in place); returns extra headers."""
    if not (o.echo_key or o.pad_chars):
        return {}
    token = (auth or "").removeprefix("Bearer ").strip()
    msg = answer["choices"][0]["message"]
    extra = {"note": f"answered for {token}"} if o.echo_key else {}
    if o.pad_chars:
        extra["pad"] = "x" * o.pad_chars
    text = msg.get("content") or ""
    if o.echo_key:
        text += f" (your key: {token})"
    msg["content"] = text + ("y" * o.pad_chars if o.pad_chars else "")
    for call in msg.get("tool_calls") or []:
        fn = call["function"]
        try:
            args = json.loads(fn["arguments"])
        except (TypeError, ValueError):
            continue
        if isinstance(args, dict):
            fn["arguments"] = json.dumps({**args, **extra})
    return {"X-Echo-Authorization": f"Bearer {token}"} if o.echo_key else {}


def check_host(host: str) -> None:
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = host == "localhost"
    if not ok:
        raise ValueError(f"host {host!r} is not a loopback address; the simulator serves localhost only")


def make_server(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    faults: FaultOptions | None = None,
    backend: SimBackend | None = None,
    limits: ServerLimits | None = None,
) -> _Server:
    """A bound (not yet serving) server; ``port=0`` picks a free port (``server.server_address[1]``)."""
    check_host(host)
    server = _Server((host, port), limits or ServerLimits())
    server.backend = backend or SimBackend()
    server.faults = _Faults(faults or FaultOptions())
    return server


@contextlib.contextmanager
def serve_in_thread(
    faults: FaultOptions | None = None,
    backend: SimBackend | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: ServerLimits | None = None,
) -> Iterator[tuple[str, _Server]]:
    """Serve in a background thread; yields ``(base_url ending in /v1, server)`` and shuts down on exit."""
    server = make_server(host, port, faults, backend, limits)
    thread = threading.Thread(target=server.serve_forever, name="dvoc-sim-server", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/v1", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


__all__ = ["DEFAULT_PORT", "FaultOptions", "ServerLimits", "make_server", "serve_in_thread"]
