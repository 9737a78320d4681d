"""Issue 32 (items 7, 8, "Also") and issue 33 (item 9): the simulator server under a hostile or careless
client. A burst of 200 connections is queued, never reset; silent and dribbling clients are closed; a
model name is never a path; bad input is a 4xx, never a 500; ``stream=True`` is answered as SSE."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import struct
import threading
import time
import zlib
from collections import Counter

import pytest

from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import ServerLimits, SimBackend, serve_in_thread
from tests.support import ROOT, body_for, import_or_need


@pytest.fixture(scope="module")
def backend():
    b = SimBackend(registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"])))
    b.warm()
    return b


def text_body(backend, **extra):
    """A cheap request: the scene is found from its instruction, no image to decode."""
    task = backend.registry.snapshot("S2").instruction
    return {"model": "sim-gemma-4-26b", "messages": [{"role": "user", "content": f"Task: {task}"}], **extra}


def request(body: dict | bytes, headers: str = "") -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(data)}\r\n{headers}Connection: close\r\n\r\n".encode()
        + data
    )


def exchange(port: int, data: bytes, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read the whole answer (the server closes); ``(status, headers, body)``."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), headers, body


def error_of(body: bytes) -> str:
    return json.loads(body)["error"]["message"]


def test_a_burst_of_200_connections_is_answered_never_reset(backend):
    """Before: of 200 simultaneous requests many were reset or timed out (the listen backlog was 5)."""
    with serve_in_thread(backend=backend) as (_, server):
        port = server.server_address[1]
        data = request(text_body(backend))
        results: list[object] = []
        barrier = threading.Barrier(200)

        def client() -> None:
            barrier.wait()
            try:
                status, headers, _ = exchange(port, data)
                results.append(status if status != 503 else ("503", headers.get("Retry-After")))
            except OSError as e:  # ConnectionResetError, TimeoutError, ...
                results.append(repr(e))

        threads = [threading.Thread(target=client) for _ in range(200)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        counts = Counter(map(str, results))
        assert set(counts) <= {"200", "('503', '1')"}, counts
        assert counts["200"] >= 1 and time.monotonic() - t0 < 10


def test_a_busy_simulator_answers_503_with_retry_after(backend):
    class Slow(SimBackend):  # the real backend, each answer 0.5 s late
        def chat(self, body):
            time.sleep(0.5)
            return backend.chat(body)

    limits = ServerLimits(max_busy=1, queue_timeout_s=0.1, retry_after_s=2)
    with serve_in_thread(backend=Slow(registry=backend.registry), limits=limits) as (_, server):
        port = server.server_address[1]
        got: list[tuple[int, dict[str, str], bytes]] = []
        threads = [
            threading.Thread(target=lambda: got.append(exchange(port, request(text_body(backend)))))
            for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(g[0] for g in got) == [200, 503, 503]
        busy = [g for g in got if g[0] == 503]
        assert all(g[1]["Retry-After"] == "2" and "busy" in error_of(g[2]) for g in busy)


def test_silent_and_dribbling_clients_are_closed_and_others_still_served(backend):
    """Before: a connection that sent nothing held its thread for ever (600 held for 40 s)."""
    limits = ServerLimits(idle_timeout_s=0.3, request_timeout_s=0.8, max_connections=20)
    with serve_in_thread(backend=backend, limits=limits) as (_, server):
        port = server.server_address[1]
        silent = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(30)]
        t0 = time.monotonic()
        for s in silent:  # every one is closed by the server (b"" = EOF), none waits out our 5 s
            assert s.recv(100) == b""
        assert time.monotonic() - t0 < 3
        for s in silent:
            s.close()
        dribble = socket.create_connection(("127.0.0.1", port), timeout=5)
        t0, closed = time.monotonic(), False
        try:
            for ch in request(text_body(backend)):  # one byte per 0.1 s: never idle, never done
                dribble.sendall(bytes([ch]))
                time.sleep(0.1)
                if time.monotonic() - t0 > 4:
                    break
        except OSError:
            closed = True
        if not closed:
            dribble.settimeout(0.5)
            try:
                closed = dribble.recv(1000) is not None
            except OSError:
                closed = True
        dribble.close()
        assert closed and time.monotonic() - t0 < 4
        assert exchange(port, request(text_body(backend)))[0] == 200


def test_a_model_name_is_looked_up_in_the_registry_never_loaded_as_a_path(backend, tmp_path):
    """Before: ``"model": "<absolute path>"`` or ``../..`` loaded and served that YAML file (HTTP 200)."""
    outside = tmp_path / "mine.yaml"
    outside.write_text((ROOT / "conf" / "model" / "sim-ideal.yaml").read_text())
    names = [
        str(outside.with_suffix("")),
        str(ROOT / "conf" / "model" / "sim-ideal"),
        "../model/sim-ideal",
        "openai/../model/sim-ideal",
        "sim-ideal/../sim-ideal",
    ]
    with serve_in_thread(backend=backend) as (_, server):
        port = server.server_address[1]
        for name in names:
            status, _, body = exchange(port, request(text_body(backend, model=name)))
            assert status in (400, 404) and "not a model name" in error_of(body), (name, body[:200])
        status, _, body = exchange(port, request(text_body(backend, model="x" * 10_000)))
        assert status == 400 and "10000 characters" in error_of(body) and len(body) < 500
        assert exchange(port, request(text_body(backend, model="openai/sim-ideal")))[0] == 200
        assert server.faults.counts["ok"] == 1


def _bomb_png(width: int, height: int) -> bytes:
    """A valid 1-bit PNG of ``width`` x ``height`` black pixels: a few KB that inflate to gigapixels."""
    raw = zlib.compressobj(9)
    row = b"\0" * (1 + (width + 7) // 8)
    idat = b"".join(raw.compress(row) for _ in range(height)) + raw.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_bad_input_is_a_4xx_never_a_500(backend):
    """Before: JSON nested too deep, ``Content-Length: abc`` and a 10,000-character model name were 500."""
    import base64

    limits = ServerLimits(max_body=3_000_000)
    with serve_in_thread(backend=backend, limits=limits) as (_, server):
        port = server.server_address[1]
        deep = b"[" * 100_000 + b"]" * 100_000
        status, _, body = exchange(port, request(deep))
        assert status == 400 and "nested too deep" in error_of(body)
        for value in ("abc", "-5", "1e3", ""):
            data = f"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {value}\r\n\r\n{{}}".encode()
            status, _, body = exchange(port, data)
            assert status == 400 and "Content-Length" in error_of(body), value
        status, _, body = exchange(port, request(b"x" * 3_000_001))
        assert status == 413 and "at most 3000000" in error_of(body)
        for w, h in ((10_000, 10_000), (20_000, 20_000)):  # PIL's warning, then its error
            bomb = body_for(backend.registry, "S1")
            url = "data:image/png;base64," + base64.b64encode(_bomb_png(w, h)).decode()
            bomb["messages"][0]["content"][1]["image_url"]["url"] = url
            status, _, body = exchange(port, request(bomb))
            assert status == 400 and "image" in error_of(body), (w, body[:200])
        assert server.faults.counts["500"] == 0


def test_stream_true_is_answered_as_server_sent_events(backend):
    """Before: ``stream=True`` got a plain JSON body (a streaming client saw no event)."""
    body = text_body(backend, stream=True, tools=body_for(backend.registry, "S2")["tools"])
    with serve_in_thread(backend=backend) as (_, server):
        status, headers, raw = exchange(server.server_address[1], request(body))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = [e.removeprefix("data: ") for e in raw.decode().split("\n\n") if e]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.e2e
def test_stream_true_is_read_by_the_official_openai_client(backend):
    """Before: ``stream=True`` got a plain JSON body: the official client saw 0 chunks and no error."""
    openai = import_or_need("OPENAI", "openai")
    body = body_for(backend.registry, "S2", seed=7)
    with serve_in_thread(backend=backend) as (url, server):
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0)
        whole = client.chat.completions.create(**body)
        chunks = list(
            client.chat.completions.create(**body, stream=True, stream_options={"include_usage": True})
        )
        port = server.server_address[1]
        status, headers, raw = exchange(port, request({**body, "stream": "yes"}))
        assert status == 400 and "'stream'" in error_of(raw)
    assert chunks and all(c.object == "chat.completion.chunk" for c in chunks)
    calls = [tc for c in chunks for ch in c.choices for tc in (ch.delta.tool_calls or [])]
    (call,) = whole.choices[0].message.tool_calls
    assert [c.function.arguments for c in calls] == [call.function.arguments]
    assert calls[0].function.name == call.function.name == "click_at"
    assert [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason] == ["tool_calls"]
    assert chunks[-1].usage.total_tokens == whole.usage.total_tokens


@pytest.mark.e2e
def test_the_serving_line_reaches_a_pipe_before_the_server_exits(tmp_path):
    """Issue 33 item 9: with stdout a pipe (no PYTHONUNBUFFERED), the serving line is read while the
    server runs, and the door answers on the URL it names."""
    import os
    import subprocess
    import sys

    scenes = tmp_path / "scenes" / "synthetic"
    scenes.mkdir(parents=True)
    (scenes / "S1.yaml").write_text((default_scenes_dir() / "synthetic" / "S1.yaml").read_text())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    cmd = [sys.executable, "-m", "dvoc_bench.serve", "--port", "0", "--scenes", str(tmp_path / "scenes")]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        first = proc.stderr.readline().decode()
        assert first.startswith("serve: rendering the scenes, then serving on http://127.0.0.1:"), first
        line = proc.stdout.readline().decode()
        assert proc.poll() is None and line.startswith("serving the simulator on http://127.0.0.1:"), line
        port = int(re.search(r":(\d+)/v1", line).group(1))
        status, _, _ = exchange(port, b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Slowloris:
    """``n`` loopback clients that send a request line and then one header byte each every ``drip`` seconds,
    from one thread, until :meth:`stop` or ``stop_after`` seconds (they never finish their headers)."""

    def __init__(self, port: int, n: int, drip: float = 0.5, stop_after: float = 20.0):
        self.socks = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\n")
            s.setblocking(False)
            self.socks.append(s)
        self._stop = threading.Event()
        self._end = time.monotonic() + stop_after
        self.thread = threading.Thread(target=self._drip, args=(drip,), daemon=True)
        self.thread.start()

    def _drip(self, drip: float) -> None:
        while not self._stop.wait(drip) and time.monotonic() < self._end:
            for s in self.socks:
                with contextlib.suppress(OSError):
                    s.send(b"X")

    def open_count(self) -> int:
        """Slow connections the server has not closed (nothing to read, no EOF)."""
        n = 0
        for s in self.socks:
            try:
                s.recv(1, socket.MSG_PEEK)  # an answer or EOF: the server closed it
            except BlockingIOError:
                n += 1
            except OSError:
                pass
        return n

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)
        for s in self.socks:
            s.close()


def test_slow_clients_hold_no_thread_and_a_normal_request_is_answered_while_they_wait(backend):
    """Before (issue 51): slow clients held all the connection threads until the request deadline; a
    normal request waited until they were closed. Here 60 slow clients face 8 handler threads."""
    limits = ServerLimits(max_connections=8, header_timeout_s=60, request_timeout_s=60)
    with serve_in_thread(backend=backend, limits=limits) as (_, server):
        port = server.server_address[1]
        slow = Slowloris(port, 60)
        try:
            time.sleep(1.0)  # every slow client has sent bytes since it connected
            for _ in range(3):
                status, _, body = exchange(port, request(text_body(backend)), timeout=30)
                assert status == 200, body
            assert slow.open_count() == 60  # answered while every slow client still waits
        finally:
            slow.stop()


def test_headers_must_arrive_within_the_header_deadline(backend):
    """A client that keeps dribbling header bytes is answered 408 once ``header_timeout_s`` has passed."""
    limits = ServerLimits(header_timeout_s=0.5, request_timeout_s=60, idle_timeout_s=60)
    with serve_in_thread(backend=backend, limits=limits) as (_, server):
        slow = Slowloris(server.server_address[1], 5, drip=0.1, stop_after=30)
        try:
            for s in slow.socks:
                s.setblocking(True)
                s.settimeout(10)
                got = b""
                while chunk := s.recv(4096):
                    got += chunk
                assert got.startswith(b"HTTP/1.1 408"), got
        finally:
            slow.stop()


def test_kept_alive_and_pipelined_requests_come_back_through_the_front(backend):
    """Two requests sent at once on one connection (the second already in the front's buffer when the
    first is answered) and a third after both answers: all answered, in order, on the same connection."""
    with serve_in_thread(backend=backend) as (_, server):
        one = json.dumps(text_body(backend)).encode()
        req = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(one)}\r\n\r\n".encode()
            + one
        )
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=20) as s:
            s.sendall(req + req)
            got = b""
            while got.count(b"HTTP/1.1 200") < 2 or not got.endswith(b"}"):
                got += s.recv(65536)
            s.sendall(req[:40])  # the third dribbles in two parts
            time.sleep(0.2)
            s.sendall(req[40:])
            third = b""
            while not third.endswith(b"}"):
                third += s.recv(65536)
        assert got.count(b"HTTP/1.1 200 ") == 2 and third.startswith(b"HTTP/1.1 200 "), (
            got[:200],
            third[:200],
        )
