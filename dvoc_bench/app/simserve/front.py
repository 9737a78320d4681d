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
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    after every wake-up (the server starts waiting requests there)."""

    def __init__(
        self,
        listener: socket.socket,
        limits: FrontLimits,
        handoff: Callable[[Conn, bytes], None],
        tick: Callable[[], None] = lambda: None,
    ):
        self.listener, self.limits, self.handoff, self.tick = listener, limits, handoff, tick
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

    # -- from other threads ---------------------------------------------------------------------------
    def give_back(self, conn: Conn) -> None:
        with self._lock:
            self._back.append(conn)
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
                self._listen(len(self.conns) + self.lent < self.limits.max_open)
                for key, _ in self.sel.select(timeout=0.1):
                    if key.fileobj is self._wake_r:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(4096)
                    elif key.fileobj is self.listener:
                        self._accept()
                    else:
                        self._read(self.conns[key.fileobj])  # type: ignore[index]
                self._take_back()
                self.tick()
                now = time.monotonic()
                if now - last >= 0.05:
                    self._expire(now)
                    last = now
        finally:
            for c in list(self.conns.values()):
                self._close(c)
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(self.listener)
            self.sel.close()
            self._wake_r.close()
            self._wake_w.close()
            self.stopped.set()

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
            c.sock.shutdown(socket.SHUT_RDWR)
        c.sock.close()

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
        self.handoff(c, data)

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
