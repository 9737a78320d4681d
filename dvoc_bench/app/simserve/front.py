"""The simulator server's front: one thread that accepts connections and reads each request whole (line,
headers and ``Content-Length`` body) before a handler thread sees it.

A handler thread is taken only by a request that has fully arrived, so clients that dribble their bytes
(slowloris) cost a socket and a buffer, never a thread: any number of them wait here while complete
requests are served. The front holds each request to deadlines: its line and headers within
``header_timeout_s`` of its first byte, the whole request within ``request_timeout_s``, and a connection
waiting for its next request is closed after ``idle_timeout_s`` (a request that missed a deadline is
answered 408). After an answer, a kept-alive connection comes back here (with any bytes the client sent
past its request) to wait for the next one. At most ``max_open`` connections are open here; beyond that new
ones wait in the listen backlog.

An exception raised while the loop handles one connection (or in a callback) is logged in one line and
closes that connection (answered 500 if a request had begun); the loop keeps serving. At shutdown every
connection is answered or closed: one with a request begun, or waiting in the listen backlog, gets a 503
answer; an idle kept-alive one is closed; one a handler still holds is closed when given back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

MAX_HEAD = 64 * 1024 + 100 * 1024
"""Longest request line plus headers read (the handler's own limits: a 64 KB line, 100 header lines)."""


def _answer(status: int, reason: str, message: str) -> bytes:
    """A whole JSON error answer that closes the connection (sent by the front itself)."""
    body = json.dumps(
        {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": status}}
    )
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nConnection: close\r\n"
    return (head + f"Content-Length: {len(body)}\r\n\r\n{body}").encode()


_TIMEOUT_408 = _answer(408, "Request Timeout", "the request did not arrive in time")
_TOO_LONG_431 = _answer(431, "Request Header Fields Too Large", "the request's headers are too long")
STOPPING_503 = _answer(503, "Service Unavailable", "the server is shutting down")
_FAULT_500 = _answer(500, "Internal Server Error", "the server failed to read this request")
BACKLOG_ANSWERED = 1024
"""At shutdown, at most this many connections still in the listen backlog are accepted to be answered 503."""


class HeadTooLong(ValueError):
    """The request line and headers did not end within :data:`MAX_HEAD` bytes."""


def head_end(buf: bytes | bytearray) -> int | None:
    """Where the request line and headers end (the index after the blank line), or ``None`` if they have
    not all arrived. Bare ``\\n`` line ends are accepted, as the handler accepts them."""
    ends = [i + n for sep, n in ((b"\r\n\r\n", 4), (b"\n\n", 2)) if (i := buf.find(sep)) >= 0]
    if not ends:
        if len(buf) > MAX_HEAD:
            raise HeadTooLong(f"no end of headers in {MAX_HEAD} bytes")
        return None
    return min(ends)


def _has_head(buf: bytes | bytearray) -> bool:
    return b"\r\n\r\n" in buf or b"\n\n" in buf


def request_size(buf: bytes | bytearray, max_body: int) -> tuple[int, bool] | None:
    """``(bytes of the first request in buf, whether it is complete)``, or ``None`` while its headers have
    not all arrived. A body is counted by ``Content-Length``; a missing, malformed or too large one counts
    as no body (the handler answers it 400 or 413 and closes the connection)."""
    end = head_end(buf)
    if end is None:
        return None
    n = 0
    for line in bytes(buf[:end]).split(b"\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"content-length":
            v = value.strip()
            n = int(v) if v.isdigit() and len(v) <= 12 and int(v) <= max_body else 0
            break
    return end + n, len(buf) >= end + n


@dataclass
class Conn:
    """One client connection while it is in the front."""

    sock: socket.socket
    addr: Any
    buf: bytearray = field(default_factory=bytearray)
    """What the client sent that no handler has seen yet."""
    first_byte: float | None = None
    """When the current request's first byte arrived (``None``: waiting for one)."""
    idle_since: float = field(default_factory=time.monotonic)
    """When the connection began waiting for its next request."""
    continued: bool = False
    """``100 Continue`` was sent for the current request."""


@dataclass(frozen=True)
class FrontLimits:
    header_timeout_s: float
    request_timeout_s: float
    idle_timeout_s: float
    max_body: int
    max_open: int


class Front:
    """The accepting and reading loop (:meth:`run`, in its own thread). ``handoff(conn, request_bytes)`` is
    called (on the loop) with each complete request and must not block; a handler gives the connection
    back with :meth:`give_back` (closed, or kept alive for its next request). ``tick`` runs on the loop
    after every wake-up (the server starts waiting requests there); ``on_stop`` runs on the loop as it ends,
    after its own connections are answered (the server answers the requests still waiting there)."""

    def __init__(
        self,
        listener: socket.socket,
        limits: FrontLimits,
        handoff: Callable[[Conn, bytes], None],
        tick: Callable[[], None] = lambda: None,
        on_stop: Callable[[], None] = lambda: None,
    ):
        self.listener, self.limits, self.handoff, self.tick = listener, limits, handoff, tick
        self.on_stop = on_stop
        self.sel = selectors.DefaultSelector()
        self.conns: dict[socket.socket, Conn] = {}
        self.lent = 0
        self._back: deque[Conn] = deque()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stop = threading.Event()
        self.stopped = threading.Event()
        self._listening = False
        self._closed = False
        """The loop has ended: a connection given back is closed."""

    # -- from other threads ---------------------------------------------------------------------------
    def give_back(self, conn: Conn) -> None:
        with self._lock:
            if not self._closed:
                self._back.append(conn)
                conn = None  # type: ignore[assignment]
        if conn is not None:  # the loop has ended: nobody waits for its next request
            _shut(conn.sock)
            return
        self.wake()

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def stop(self) -> None:
        self._stop.set()
        self.wake()

    # -- the loop ---------------------------------------------------------------------------------------
    def run(self) -> None:
        self.listener.setblocking(False)
        self.sel.register(self._wake_r, selectors.EVENT_READ)
        last = 0.0
        try:
            while not self._stop.is_set():
                try:
                    last = self._turn(last)
                except Exception as e:  # a fault outside one connection's handling (select, a callback)
                    self._fault(e, None)
                    self._prune()
        finally:
            self._shutdown()

    def _turn(self, last: float) -> float:
        """One pass of the loop: wait for events, handle them, give back, expire; the time of the last
        expiry pass."""
        self._listen(len(self.conns) + self.lent < self.limits.max_open)
        for key, _ in self.sel.select(timeout=0.1):
            c = None
            try:
                if key.fileobj is self._wake_r:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(4096)
                elif key.fileobj is self.listener:
                    self._accept()
                else:
                    c = self.conns[key.fileobj]  # type: ignore[index]
                    self._read(c)
            except Exception as e:  # one connection's fault: that connection is closed, the rest served
                self._fault(e, c)
        for step in (self._take_back, self.tick):
            try:
                step()
            except Exception as e:
                self._fault(e, None)
        now = time.monotonic()
        if now - last >= 0.05:
            self._expire(now)
            return now
        return last

    def _fault(self, e: Exception, c: Conn | None) -> None:
        """Log an exception of the loop in one line; close the connection it happened on (500 if its
        request had begun)."""
        where = f"the connection from {c.addr} is closed" if c is not None else "no connection closed"
        what = " ".join(str(e).split())[:200]  # one line whatever the exception says
        log.warning("serve: the front met %s: %s (%s; still serving)", type(e).__name__, what, where)
        if c is not None:
            self._close(c, _FAULT_500 if (c.first_byte is not None or c.buf) else b"")

    def _prune(self) -> None:
        """Drop the connections whose socket is closed (after a fault, so that select works again)."""
        for c in list(self.conns.values()):
            if c.sock.fileno() < 0:
                self.conns.pop(c.sock, None)
                with contextlib.suppress(KeyError, ValueError):
                    self.sel.unregister(c.sock)

    def _shutdown(self) -> None:
        """Answer or close every connection the loop holds, the listen backlog's with them."""
        for c in list(self.conns.values()):  # a request begun gets its answer; an idle one is closed
            with contextlib.suppress(Exception):
                self._close(c, STOPPING_503 if (c.first_byte is not None or c.buf) else b"")
        self._answer_backlog()
        with self._lock:
            self._closed = True
            back = list(self._back)
            self._back.clear()
        for c in back:  # answered by their handler, given back after the loop's last pass
            _shut(c.sock)
        try:
            self.on_stop()
        except Exception as e:
            self._fault(e, None)
        with contextlib.suppress(KeyError, ValueError):
            self.sel.unregister(self.listener)
        self.sel.close()
        self._wake_r.close()
        self._wake_w.close()
        self.stopped.set()

    def _answer_backlog(self) -> None:
        """The connections the kernel queued and nobody accepted: each answered 503 and closed."""
        with contextlib.suppress(OSError):
            self.listener.setblocking(False)
        for _ in range(BACKLOG_ANSWERED):
            try:
                sock, _ = self.listener.accept()
            except OSError:  # empty (BlockingIOError), or closed
                return
            with contextlib.suppress(OSError):
                sock.setblocking(False)
                sock.send(STOPPING_503)
            _shut(sock)

    def _listen(self, on: bool) -> None:
        if on != self._listening:
            if on:
                self.sel.register(self.listener, selectors.EVENT_READ)
            else:
                self.sel.unregister(self.listener)
            self._listening = on

    def _accept(self) -> None:
        for _ in range(64):
            if len(self.conns) + self.lent >= self.limits.max_open:
                return
            try:
                sock, addr = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. out of file descriptors: leave the rest in the backlog
                return
            sock.setblocking(False)
            self._add(Conn(sock, addr))

    def _add(self, c: Conn) -> None:
        self.conns[c.sock] = c
        self.sel.register(c.sock, selectors.EVENT_READ)

    def _close(self, c: Conn, answer: bytes = b"") -> None:
        self.conns.pop(c.sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self.sel.unregister(c.sock)
        with contextlib.suppress(OSError):
            if answer:
                c.sock.send(answer)  # small: fits the socket's send buffer, or is dropped
        _shut(c.sock)

    def _read(self, c: Conn) -> None:
        try:
            data = c.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(c)
            return
        if c.first_byte is None:
            c.first_byte = time.monotonic()
        c.buf += data
        self._dispatch(c)

    def _dispatch(self, c: Conn) -> None:
        """Hand the connection's first request to a handler if it has all arrived."""
        try:
            size = request_size(c.buf, self.limits.max_body)
        except HeadTooLong:
            self._close(c, _TOO_LONG_431)
            return
        if size is None:
            return
        n, complete = size
        if not complete:
            if not c.continued and b"100-continue" in bytes(c.buf[: head_end(c.buf)]).lower():
                c.continued = True
                with contextlib.suppress(OSError):
                    c.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            return
        data, c.buf = bytes(c.buf[:n]), c.buf[n:]
        self.conns.pop(c.sock, None)
        self.sel.unregister(c.sock)
        self.lent += 1
        c.first_byte, c.continued = None, False
        try:
            self.handoff(c, data)
        except Exception:
            self.lent -= 1  # not handed: answered 500 and closed, the fault logged by the loop
            self._close(c, _FAULT_500)
            raise

    def _take_back(self) -> None:
        while True:
            with self._lock:
                if not self._back:
                    return
                c = self._back.popleft()
            self.lent -= 1
            if c.sock.fileno() < 0:  # the handler closed it
                continue
            c.sock.setblocking(False)
            c.idle_since = time.monotonic()
            if c.buf:  # the client already sent (part of) its next request
                c.first_byte = c.idle_since
            self._add(c)
            if c.buf:
                self._dispatch(c)

    def _expire(self, now: float) -> None:
        lim = self.limits
        for c in list(self.conns.values()):
            if c.first_byte is None:
                if now - c.idle_since > lim.idle_timeout_s:
                    self._close(c)
                continue
            late = now - c.first_byte
            if late > lim.request_timeout_s or (late > lim.header_timeout_s and not _has_head(c.buf)):
                self._close(c, _TIMEOUT_408)


def _shut(sock: socket.socket) -> None:
    """Close a client socket, telling the client (FIN) first."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
