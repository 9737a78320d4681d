"""The ``helper`` detector: a client for any process speaking the seed's helper protocol.

The process is any command line: our own server (``python -m dvoc_bench.detect.helper ...``), the board's
C helper (``/usr/lib/aico/ui_grounding_helper --model ...``) reached with ``ssh board ...`` or
``adb shell -T ...`` (no pseudo-terminal: the channel must pass bytes unchanged). The protocol is in
:mod:`dvoc_bench.detect.helper_protocol`.

Life cycle (the seed's rules):

- **on demand** (default): started by the first request; asked to quit (``Q``) after ``idle_exit_s``
  without a request; started again by the next one.
- **resident** (``on_demand=False``): started when the client is built; no idle exit; after a failure it
  is started again in the background, so the next request finds it ready.
- **start-up**: lines before ``READY`` that are not ``ERR`` are skipped as runtime log noise; no
  ``READY`` within ``startup_timeout_s`` kills the process.
- **failures**: the process is stopped and the call raises :class:`HelperError`, except a *crash* (the
  process died or closed its pipes during a request), which is retried once on a fresh process. ``ERR``
  (the helper's own verdict on the request), a timeout and a protocol error are not retried. The next
  request starts a new process in any case.

- **bounded output**: a stdout line longer than :data:`MAX_LINE_BYTES` is never buffered: it fails the
  request (or the start-up) as a protocol error and the process is stopped. At most
  :data:`MAX_QUEUED_LINES` lines wait to be read.
- **process group**: the helper runs in a session of its own; stopping it (close, idle exit, failure)
  kills the whole process group, so children it spawned do not outlive it. A helper that exits during a
  request is noticed even when a child keeps its stdout open.

``run`` reports ``wall_ms`` (the host's round trip, including a start-up when one was needed) and
``inference_ms`` (the helper's own figure from its ``OK`` line); ``starts`` counts processes started.
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import cast

import numpy as np

from dvoc_bench.detect.helper_protocol import (
    REQUEST_QUIT,
    ProtocolError,
    encode_request,
    parse_box,
    parse_ok,
    parse_ready,
)
from dvoc_bench.detect.types import Detection, DetectionRun, DetectorError, check_image, sort_by_score

log = logging.getLogger(__name__)


class HelperError(DetectorError):
    """The helper failed: could not start, crashed, answered ``ERR``, timed out or broke the protocol."""


class _Crashed(Exception):
    """The process ended or closed a pipe in the middle of a request."""


class _Timeout(Exception):
    """No line arrived in time."""


_EOF = None

MAX_LINE_BYTES = 64 * 1024
"""Longest stdout line read from a helper (protocol lines are a few dozen bytes; log noise stays short)."""
MAX_QUEUED_LINES = 1024
"""Lines read ahead of the client at most (the reader then waits, and so does the helper's pipe)."""
EXIT_GRACE_S = 0.5
"""After the helper process exits, how long its last lines may take to arrive before it counts as a crash."""


class _TooLong:
    """Queued instead of a line longer than :data:`MAX_LINE_BYTES` (which is skipped, not kept)."""

    def __init__(self, size: int):
        self.size = size


class _Process:
    """One running helper: the Popen plus reader threads for stdout (lines) and stderr (a short tail)."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None, cwd: str | None) -> None:
        self.popen = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            env=None if env is None else dict(env),
            cwd=cwd,
            start_new_session=True,  # its own process group: kill() reaches the children it spawns
        )
        self.lines: queue.Queue[str | _TooLong | None] = queue.Queue(maxsize=MAX_QUEUED_LINES)
        self._stopping = threading.Event()
        self.stderr: collections.deque[str] = collections.deque(maxlen=20)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # The reader threads own their pipes (buffered here, closed when they end): closing a pipe that
    # another thread is reading could block on a helper whose children keep it open.

    def _put(self, item: str | _TooLong | None) -> bool:
        """Queue an item, waiting while the queue is full; False once the process is being stopped."""
        while True:
            try:
                self.lines.put(item, timeout=0.2)
                return True
            except queue.Full:
                if self._stopping.is_set():
                    return False

    @staticmethod
    def _lines(out: io.BufferedReader[io.RawIOBase]) -> Iterator[bytes | int]:
        """Lines of at most ``MAX_LINE_BYTES``; a longer line is read past in bounded pieces and reported
        by its size (an ``int``) instead."""
        while True:
            raw = out.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
                yield raw
                continue
            size = len(raw)
            while True:  # skip the rest of the line without keeping it
                more = out.readline(MAX_LINE_BYTES)
                size += len(more)
                if not more or more.endswith(b"\n"):
                    break
            yield size

    def _read_stdout(self) -> None:
        assert self.popen.stdout is not None
        out = io.BufferedReader(cast(io.RawIOBase, self.popen.stdout))  # bufsize=0: a raw FileIO
        try:
            for raw in self._lines(out):
                item = (
                    _TooLong(raw) if isinstance(raw, int) else raw.decode("utf-8", "replace").rstrip("\r\n")
                )
                if not self._put(item):
                    return
        except (OSError, ValueError):
            pass
        finally:
            self._put(_EOF)
            out.close()

    def _read_stderr(self) -> None:
        assert self.popen.stderr is not None
        err = io.BufferedReader(cast(io.RawIOBase, self.popen.stderr))  # bufsize=0: a raw FileIO
        try:
            for raw in self._lines(err):
                if isinstance(raw, int):
                    line = f"<a line of {raw} bytes, not kept>"
                else:
                    line = raw.decode("utf-8", "replace").rstrip()
                self.stderr.append(line)
                log.debug("helper stderr: %s", line)
        except (OSError, ValueError):
            pass
        finally:
            err.close()

    def readline(self, deadline: float) -> str:
        """The next stdout line. ``_Timeout`` past ``deadline``; ``_Crashed`` at the end of the output or
        when the process has exited (children of it may keep the pipe open: no end-of-file then);
        ``ProtocolError`` for a line longer than :data:`MAX_LINE_BYTES`."""
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            try:
                line = self.lines.get(timeout=max(0.0, min(deadline - now, 0.1)))
                break
            except queue.Empty:
                pass
            now = time.monotonic()
            if self.popen.poll() is not None:
                exited_at = exited_at or now
                if now - exited_at >= EXIT_GRACE_S:  # its last lines had time to arrive
                    raise _Crashed()
            if now >= deadline:
                raise _Timeout()
        if line is _EOF:
            self._put(_EOF)  # later reads see the end too
            raise _Crashed()
        if isinstance(line, _TooLong):
            raise ProtocolError(
                f"helper printed a line longer than {MAX_LINE_BYTES} bytes ({line.size} bytes)"
            )
        return line

    def write(self, data: bytes, deadline: float | None = None) -> None:
        """Send ``data``; a helper that stops reading cannot block past ``deadline`` (it is killed)."""
        error: list[BaseException] = []

        def send() -> None:
            stdin = self.popen.stdin
            assert stdin is not None
            try:
                stdin.write(data)
                stdin.flush()
            except (BrokenPipeError, ConnectionResetError, ValueError, OSError) as e:
                error.append(e)

        if deadline is None:
            send()
        else:
            writer = threading.Thread(target=send, daemon=True)
            writer.start()
            writer.join(max(deadline - time.monotonic(), 0.0))
            if writer.is_alive():  # the helper does not read its input
                self.kill()
                writer.join(5.0)
                raise _Timeout()
        if error:
            raise _Crashed() from error[0]

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def describe_exit(self) -> str:
        """``exit code N`` (waiting briefly for it) plus the stderr tail."""
        try:
            code = self.popen.wait(timeout=2.0)
            what = f"exit code {code}"
        except subprocess.TimeoutExpired:
            what = "still running"
        time.sleep(0.05)  # let the stderr reader catch the last lines
        tail = " | ".join(list(self.stderr)[-5:])
        return f"{what}; stderr: {tail[-500:]}" if tail else what

    def kill(self) -> None:
        """Kill the helper's whole process group (the helper and whatever it spawned), then reap it."""
        self._stopping.set()
        with contextlib.suppress(ProcessLookupError, PermissionError):  # an empty group: nothing to kill
            os.killpg(self.popen.pid, signal.SIGKILL)  # the group id is the helper's pid (own session)
        if self.alive:
            self.popen.kill()
        try:
            self.popen.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            log.warning("helper process %d did not die after SIGKILL", self.popen.pid)
        try:
            if self.popen.stdin is not None:
                self.popen.stdin.close()
        except OSError:
            pass

    def quit(self, timeout: float = 2.0) -> None:
        """Ask politely (``Q``), then kill."""
        try:
            self.write(REQUEST_QUIT)
            self.popen.wait(timeout=timeout)
        except (_Crashed, subprocess.TimeoutExpired):
            pass
        self.kill()


class HelperDetector:
    """Detector backed by a helper process (see the module docstring)."""

    backend = "helper"

    def __init__(
        self,
        command: Sequence[str],
        *,
        startup_timeout_s: float = 60.0,
        request_timeout_s: float = 60.0,
        on_demand: bool = True,
        idle_exit_s: float = 120.0,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        max_noise_lines: int = 200,
    ) -> None:
        if not command:
            raise ValueError("the helper command is empty")
        self.command = [str(c) for c in command]
        """The command line that starts the helper."""
        self.startup_timeout_s = float(startup_timeout_s)
        """Seconds to wait for ``READY``."""
        self.request_timeout_s = float(request_timeout_s)
        """Seconds to wait for a reply."""
        self.on_demand = bool(on_demand)
        """Started by requests and stopped when idle (else resident)."""
        self.idle_exit_s = float(idle_exit_s)
        """Idle time before an on-demand helper is asked to quit."""
        self.model_size: tuple[int, int] | None = None
        """Model input size from the last ``READY``."""
        self.starts = 0
        """Processes started so far."""
        self.idle_exits = 0
        """Times an on-demand helper was stopped for being idle."""
        self.last_startup_ms: float | None = None
        """Time from spawning the last process to its ``READY``."""
        self._env = env
        self._cwd = None if cwd is None else os.fspath(cwd)
        self._max_noise = int(max_noise_lines)
        self._proc: _Process | None = None
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._closed = False
        if not self.on_demand:
            with self._lock:
                self._start()

    # ------------------------------------------------------------------------------------ life cycle

    @property
    def pid(self) -> int | None:
        """Process id of the running helper (``None`` when none runs)."""
        p = self._proc
        return p.popen.pid if p is not None and p.alive else None

    @property
    def running(self) -> bool:
        p = self._proc
        return p is not None and p.alive

    def _start(self) -> None:
        """Spawn the helper and wait for ``READY`` (lock held)."""
        if self._closed:
            raise HelperError("the helper client is closed")
        self._drop()
        t0 = time.monotonic()
        try:
            proc = _Process(self.command, self._env, self._cwd)
        except OSError as e:
            raise HelperError(f"cannot start helper {self.command[0]!r}: {e}") from e
        deadline = t0 + self.startup_timeout_s
        noise = 0
        try:
            while True:
                line = proc.readline(deadline)
                if line.startswith("READY"):
                    self.model_size = parse_ready(line)
                    break
                if line.startswith("ERR"):
                    raise HelperError(f"helper failed to start: {line[3:].strip()}")
                noise += 1
                log.debug("helper start-up output skipped: %s", line)
                if noise > self._max_noise:
                    raise HelperError(f"helper printed {noise} lines without READY")
        except _Timeout:
            proc.kill()
            raise HelperError(f"helper sent no READY within {self.startup_timeout_s:g} s") from None
        except _Crashed:
            why = proc.describe_exit()
            proc.kill()
            raise HelperError(f"helper exited during start-up ({why})") from None
        except ProtocolError as e:
            proc.kill()
            raise HelperError(f"helper start-up: {e}") from None
        except HelperError:
            proc.kill()
            raise
        self._proc = proc
        self.starts += 1
        self.last_startup_ms = (time.monotonic() - t0) * 1000.0
        log.info(
            "helper started (pid %d, model %s, %.0f ms)",
            proc.popen.pid,
            self.model_size,
            self.last_startup_ms,
        )

    def _drop(self) -> None:
        """Kill and forget the current process (lock held)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()

    def _after_failure(self) -> None:
        """Forget the failed process; a resident helper is restarted in the background."""
        self._drop()
        if not self.on_demand and not self._closed:
            threading.Thread(target=self._restart_quietly, daemon=True).start()

    def _restart_quietly(self) -> None:
        with self._lock:
            if self._closed or self.running:
                return
            try:
                self._start()
            except HelperError as e:
                log.warning("background restart of the helper failed: %s", e)

    def _arm_idle(self) -> None:
        if not self.on_demand or self._closed:
            return
        timer = threading.Timer(self.idle_exit_s, self._idle_quit)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _cancel_idle(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _idle_quit(self) -> None:
        with self._lock:
            if self._timer is None or self._timer is not threading.current_thread():
                return  # a request came in meanwhile (and re-armed or cancelled the timer)
            self._timer = None
            proc, self._proc = self._proc, None
            if proc is not None:
                proc.quit()
                self.idle_exits += 1
                log.info("helper idle for %g s: stopped", self.idle_exit_s)

    def close(self) -> None:
        """Stop the helper (``Q``, then kill). Safe to call twice."""
        with self._lock:
            self._closed = True
            self._cancel_idle()
            proc, self._proc = self._proc, None
            if proc is not None:
                proc.quit()

    def __enter__(self) -> HelperDetector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------------------------------- requests

    def run(self, image: np.ndarray) -> DetectionRun:
        check_image(image)
        request = encode_request(image)
        with self._lock:
            self._cancel_idle()
            try:
                t0 = time.perf_counter()
                dets, ms = self._request(request, retry=True)
                wall = (time.perf_counter() - t0) * 1000.0
            finally:
                self._arm_idle()
        return DetectionRun(tuple(sort_by_score(dets)), wall, ms, self.backend)

    def detect(self, image: np.ndarray) -> list[Detection]:
        return list(self.run(image).detections)

    def _request(self, request: bytes, retry: bool) -> tuple[list[Detection], float]:
        if not self.running:
            self._start()
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + self.request_timeout_s
        try:
            proc.write(request, deadline)
            header = None
            noise = 0
            while header is None:
                line = proc.readline(deadline)
                if line.startswith("OK"):
                    header = parse_ok(line)
                elif line.startswith("ERR"):
                    msg = line[3:].strip()
                    self._after_failure()
                    raise HelperError(f"helper reported an error: {msg}")
                else:
                    noise += 1
                    log.debug("helper output skipped: %s", line)
                    if noise > self._max_noise:
                        raise ProtocolError(f"{noise} lines without OK or ERR (last: {line!r})")
            dets = [parse_box(proc.readline(deadline)) for _ in range(header.count)]
        except _Crashed:
            why = proc.describe_exit()
            self._drop()
            if retry:
                log.warning("helper crashed during a request (%s); restarting it and retrying once", why)
                return self._request(request, retry=False)
            self._after_failure()
            raise HelperError(f"helper crashed during a request ({why})") from None
        except _Timeout:
            self._after_failure()
            raise HelperError(f"helper sent no complete reply within {self.request_timeout_s:g} s") from None
        except ProtocolError as e:
            self._after_failure()
            raise HelperError(f"helper protocol error: {e}") from None
        return dets, header.inference_ms
