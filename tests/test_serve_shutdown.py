"""The simulator server's front at its edges, with real sockets (issue 51, the review of item 9): every
connection waiting at shutdown is answered or closed (a request begun, or still in the listen backlog: 503;
one being answered: its answer; an idle one: closed), and an exception escaping the front's handling of one
connection is logged in one line while the server keeps serving."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from dvoc_bench.app.simserve import front as front_mod
from dvoc_bench.app.simserve.server import FaultOptions
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import ServerLimits, SimBackend, serve_in_thread
from tests.support import HANG_S
from tests.test_serve_limits import exchange, request, text_body


@pytest.fixture(scope="module")
def backend():
    b = SimBackend(registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"])))
    b.warm()
    return b


def until(cond, what: str) -> None:
    """Wait on a condition (a hang guard, not a speed check)."""
    end = time.monotonic() + HANG_S
    while not cond():
        assert time.monotonic() < end, f"never: {what}"
        time.sleep(0.01)


def read_all(s: socket.socket) -> bytes:
    """Everything the server sends until it closes (a 20 s read timeout: an unanswered connection)."""
    s.settimeout(20)
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except TimeoutError:
        return out + b"<no answer, not closed>"
    except ConnectionResetError:
        return out + b"<reset>"
    return out


def test_every_connection_waiting_at_shutdown_is_answered_or_closed(backend):
    """One handler thread, each reply 1.5 s: at shutdown A is being answered, B (complete) waits for a
    thread, C has sent half its headers, D sent nothing, E waits in the listen backlog (the front holds
    four, its most). Before: B and E were never answered, C was closed without a word."""
    limits = ServerLimits(max_connections=1, max_open=4, idle_timeout_s=60, header_timeout_s=60)
    with serve_in_thread(backend=backend, limits=limits, faults=FaultOptions(delay_s=1.5)) as (_, server):
        port = server.server_address[1]
        full = request(text_body(backend))
        socks = {k: socket.create_connection(("127.0.0.1", port), timeout=20) for k in "ABCD"}
        socks["A"].sendall(full)
        until(lambda: server.front.lent == 1 and not server._ready, "A is being answered")
        socks["B"].sendall(full)
        socks["C"].sendall(full[:30])
        until(lambda: len(server._ready) == 1 and len(server.front.conns) == 2, "B waits, C and D are held")
        socks["E"] = socket.create_connection(("127.0.0.1", port), timeout=20)
        socks["E"].sendall(full)
        time.sleep(0.2)  # E stays in the backlog: the front holds its most
        assert server.front.lent + len(server.front.conns) == 4
        stopper = threading.Thread(target=server.shutdown)
        stopper.start()
        got = {k: read_all(s) for k, s in socks.items()}
        stopper.join(HANG_S)
        for s in socks.values():
            s.close()
    assert got["A"].startswith(b"HTTP/1.1 200 "), got["A"][:100]
    for k in "BCE":
        assert got[k].startswith(b"HTTP/1.1 503 ") and b"shutting down" in got[k], (k, got[k][:200])
    assert got["D"] == b"", got["D"][:100]  # nothing asked, nothing owed: closed


def test_an_exception_in_the_front_is_one_line_and_the_server_keeps_serving(backend, monkeypatch, caplog):
    real = front_mod.request_size

    def faulty(buf, max_body):
        if b"X-Boom" in buf:
            raise RuntimeError("boom\nsecond line")
        return real(buf, max_body)

    monkeypatch.setattr(front_mod, "request_size", faulty)
    with serve_in_thread(backend=backend) as (_, server):
        port = server.server_address[1]
        caplog.set_level(logging.WARNING, logger=front_mod.__name__)
        status, _, _ = exchange(port, request(text_body(backend), "X-Boom: 1\r\n"), timeout=20)
        assert status == 500
        ticks = iter([RuntimeError("a callback failed")])

        def tick():
            if (e := next(ticks, None)) is not None:
                raise e
            server._start_ready()

        server.front.tick = tick
        for _ in range(3):  # served after both faults
            status, _, body = exchange(port, request(text_body(backend)), timeout=20)
            assert status == 200, body
    lines = [r.getMessage() for r in caplog.records if r.name == front_mod.__name__]
    assert len(lines) == 2 and all("\n" not in x and "still serving" in x for x in lines), lines
    assert "RuntimeError: boom" in lines[0] and "is closed" in lines[0]
    assert "a callback failed" in lines[1]
