"""One shared headless Chromium, driven by Playwright's sync API on a dedicated thread.

Why a thread: Playwright's sync objects belong to the thread that created them, and its sync API refuses to
run inside a running asyncio loop, while the sweep is asyncio-based and the scene registry is synchronous.
So every Playwright call runs on one browser thread; callers anywhere (the main thread, a worker thread,
``asyncio.to_thread`` from the sweep) hand it a function with :meth:`WebBrowser.run` and block until it
returns. Calls are serialised, which is what a single page needs anyway.

The browser starts on first use and stops with :meth:`WebBrowser.close` (also registered for interpreter
exit). A call after ``close`` starts a new browser; :attr:`WebBrowser.launches` counts launches, so a sweep
can show it launched exactly once.

Every context gets a :class:`NetworkGuard`: a route handler that lets through only ``file:`` URLs whose
resolved path (symlinks followed) is inside the task's asset root (default: the page's folder), the pinned
fonts, and the loopback origins of ``web.allow_origins``; every other request (``http``, ``https``, other
local paths, a symlink out of the root) is aborted and recorded, and other WebSockets are refused. Channels
the route handler never sees are closed by the launch switches (:mod:`dvoc_bench.scenes.web.chromium`).

Every Playwright call a page task makes is bounded; :meth:`WebBrowser.run` bounds the whole job too, and a
job that overruns it (a page spinning in JavaScript inside an unbounded call) gets the browser killed, so
one bad page never stalls the others.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from dvoc_bench.scenes.web.chromium import dropped_features, launch_args, resolve_chromium

log = logging.getLogger(__name__)

T = TypeVar("T")

_NO_NETWORK_SCHEMES = ("data", "blob", "about")
"""Schemes that never leave the browser (not requests to any host)."""


def url_to_path(url: str) -> Path | None:
    """The local path of a ``file:`` URL (percent-decoded, no query or fragment); ``None`` otherwise."""
    parts = urlsplit(url)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parts.path))


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an ``http(s)``/``ws(s)`` URL (WebSockets as their HTTP origin, default
    ports explicit); ``None`` for other schemes."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{scheme}://{host}:{port}"


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or root in path.parents


def request_allowed(
    url: str, root: Path | None, extra_files: Iterable[Path] = (), origins: Iterable[str] = ()
) -> bool:
    """Whether the guard lets ``url`` through.

    Allowed: non-network schemes (``data:``, ``blob:``, ``about:``); a ``file:`` URL whose path, with every
    symlink followed (``os.path.realpath``), is inside the asset ``root`` or is one of ``extra_files`` (the
    pinned fonts); an ``http(s)``/``ws(s)`` URL whose origin (:func:`origin_of`) is in ``origins`` (the
    loopback dev servers of ``web.allow_origins``). Everything else (other schemes, other hosts, other
    local paths, a symlink pointing out of the root) is not. ``root`` and ``extra_files`` are resolved.
    """
    scheme = urlsplit(url).scheme
    if scheme in _NO_NETWORK_SCHEMES:
        return True
    if scheme != "file":
        origin = origin_of(url)
        return origin is not None and origin in set(origins)
    path = url_to_path(url)
    if path is None:
        return False
    real = Path(os.path.realpath(path))  # symlinks followed: a link out of the root is outside it
    return (root is not None and inside(real, root)) or real in set(extra_files)


@dataclass
class NetworkGuard:
    """The route handler of one browser context: lets the page's own files (and allowed loopback origins)
    through, blocks and logs the rest."""

    root: Path | None
    """The asset root (resolved): ``file:`` URLs resolving inside it are allowed (``None``: none are)."""
    extra_files: frozenset[Path] = frozenset()
    """Other files the harness itself injects (the pinned fonts), resolved."""
    origins: tuple[str, ...] = ()
    """Allowed loopback origins (``web.allow_origins``), normalised by :func:`origin_of`."""
    fulfil: dict[str, Path] = field(default_factory=dict)
    """URLs answered from these files by the guard itself (the pinned fonts of a served page)."""
    blocked: list[str] = field(default_factory=list)
    """URLs the page tried to fetch that were aborted (in request order; WebSockets as ``ws(s)://``)."""

    def allows(self, url: str) -> bool:
        return request_allowed(url, self.root, self.extra_files, self.origins)

    def handle(self, route: Any) -> None:
        url = route.request.url
        try:
            if url in self.fulfil:
                route.fulfill(path=str(self.fulfil[url]), headers={"Access-Control-Allow-Origin": "*"})
                return
            if self.allows(url):
                route.continue_()
                return
            self.blocked.append(url)
            route.abort("blockedbyclient")
        except Exception:  # the page or its context went away while the request was pending
            log.debug("routing %s failed", url, exc_info=True)

    def handle_websocket(self, ws: Any) -> None:
        if self.allows(ws.url):
            ws.connect_to_server()
            return
        self.blocked.append(ws.url)
        ws.close(code=1008, reason="network blocked by dvoc-bench")

    def install(self, context: Any) -> None:
        """Route every request and WebSocket of ``context`` through this guard."""
        context.route("**/*", self.handle)
        context.route_web_socket("**/*", self.handle_websocket)

    def blocked_files(self) -> list[Path]:
        """The local paths among the blocked URLs (files outside the root)."""
        return [p for p in (url_to_path(u) for u in self.blocked) if p is not None]


@dataclass
class Session:
    """Playwright and the launched browser; lives on the browser thread only."""

    playwright: Any
    """The started ``sync_playwright()`` object."""
    browser: Any
    """The launched Chromium."""
    executable: str
    """Binary that was launched."""
    timeout_ms: float
    """Default timeout of every Playwright action, milliseconds."""
    pid: int | None = None
    """Process id of the browser (killed when a call hangs past its bound); ``None`` if unknown."""
    state: dict[str, Any] = field(default_factory=dict)
    """Per-browser state owned by callers (e.g. the live page of each scene); cleared on close."""

    def new_context(
        self, viewport: tuple[int, int], guard: NetworkGuard, scale: float = 1.0, **device: Any
    ) -> Any:
        """A fresh, isolated context: ``scale`` device pixels per CSS pixel, reduced motion, no service
        workers, guarded; ``device``: a phone's ``is_mobile``, ``has_touch``, ``user_agent``."""
        ctx = self.browser.new_context(
            **device,
            viewport={"width": viewport[0], "height": viewport[1]},
            device_scale_factor=scale,
            reduced_motion="reduce",
            service_workers="block",
            color_scheme="light",
            locale="en-US",
            timezone_id="UTC",
            accept_downloads=False,
        )
        ctx.set_default_timeout(self.timeout_ms)
        guard.install(ctx)
        return ctx

    def shutdown(self) -> None:
        for value in list(self.state.values()):
            closer = getattr(value, "close", None)
            if callable(closer):
                try:
                    closer()
                except Exception:  # closing anyway; the browser goes next
                    log.debug("closing %r failed", value, exc_info=True)
        self.state.clear()
        try:
            self.browser.close()
        finally:
            self.playwright.stop()


class WebBrowser:
    """A lazily launched, shared Chromium (see the module docstring). Thread-safe."""

    def __init__(
        self, chromium: str | None = None, timeout_s: float = 30.0, origins: tuple[str, ...] = ()
    ) -> None:
        self.chromium = chromium
        """Explicit binary (``web.chromium``), or ``None`` for the documented search order."""
        self.timeout_s = timeout_s
        """Default timeout of page loads and actions."""
        self.origins = origins
        """The loopback origins of ``web.allow_origins``: they resolve and bypass the fence proxy."""
        self.launches = 0
        """How many times a browser was launched by this object."""
        self.executable: str | None = None
        """Binary of the last launch."""
        self.launch_s: float | None = None
        """Wall time of the last launch (driver start + browser start)."""
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._jobs: queue.SimpleQueue[tuple[Callable[[Session], Any], Future[Any]] | None] | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """True while the browser thread is alive (the browser itself starts on the first job)."""
        return self._thread is not None and self._thread.is_alive()

    def run(self, fn: Callable[[Session], T], timeout_s: float | None = None) -> T:
        """Run ``fn(session)`` on the browser thread and return its result (exceptions propagate).

        ``timeout_s`` bounds the wait (default: four times the browser's timeout plus 30 s; every Playwright
        call inside ``fn`` is bounded on its own, this is the last resort). A job that overruns it is taken
        to have wedged the browser (a page spinning in JavaScript inside an unbounded call): the browser
        process is killed, the thread abandoned, :class:`BrowserHung` raised; the next call starts afresh.
        """
        if threading.current_thread() is self._thread:
            raise RuntimeError("WebBrowser.run called from the browser thread itself")
        fut: Future[T] = Future()
        with self._lock:
            if self._jobs is None or not self.running:
                self._start_thread()
            assert self._jobs is not None
            self._jobs.put((fn, fut))
            jobs = self._jobs
        limit = self.timeout_s * 4 + 30 if timeout_s is None else timeout_s
        try:
            return fut.result(timeout=limit)
        except FutureTimeout:
            if fut.done():
                return fut.result()
            self._abandon(jobs)
            msg = f"a browser call did not return within {limit:.0f} s; Chromium was killed"
            raise BrowserHung(msg) from None

    def _abandon(self, jobs: queue.SimpleQueue[Any]) -> None:
        """Kill the browser of the thread serving ``jobs`` and forget that thread (it ends when its stuck
        call fails on the dead connection)."""
        with self._lock:
            if self._jobs is not jobs:
                return  # already replaced by another caller
            pid, self._pid = self._pid, None
            self._jobs, self._thread = None, None
        jobs.put(None)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            log.warning("a browser call hung: killed Chromium (pid %d)", pid)

    def close(self) -> None:
        """Close the browser and stop its thread (idempotent)."""
        with self._lock:
            jobs, thread = self._jobs, self._thread
            self._jobs, self._thread = None, None
        if jobs is not None:
            jobs.put(None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(self.timeout_s, 10.0))
        atexit.unregister(self.close)

    # ------------------------------------------------------------------------------ browser thread

    def _start_thread(self) -> None:
        jobs: queue.SimpleQueue[tuple[Callable[[Session], Any], Future[Any]] | None] = queue.SimpleQueue()
        thread = threading.Thread(target=self._serve, args=(jobs,), name="dvoc-chromium", daemon=True)
        self._jobs, self._thread = jobs, thread
        thread.start()
        atexit.register(self.close)

    def _serve(self, jobs: queue.SimpleQueue[tuple[Callable[[Session], Any], Future[Any]] | None]) -> None:
        session: Session | None = None
        try:
            while (item := jobs.get()) is not None:
                fn, fut = item
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    if session is None:
                        session = self._launch()
                    fut.set_result(fn(session))
                except BaseException as e:  # handed to the caller, never lost
                    fut.set_exception(e)
        finally:
            if session is not None:
                try:
                    session.shutdown()
                except Exception:
                    log.warning("closing Chromium failed", exc_info=True)
                else:
                    log.info("Chromium closed")

    def _launch(self) -> Session:
        from playwright.sync_api import sync_playwright

        t0 = time.perf_counter()
        pw = sync_playwright().start()
        try:
            own = pw.chromium.executable_path
            exe = resolve_chromium(self.chromium, own)
            browser = pw.chromium.launch(
                executable_path=None if exe == own else exe,
                headless=True,
                # The browser is ours to close. Playwright's driver sits in our process group and gets a
                # terminal's Ctrl-C too; by default it then closes the browser under us (a run that ignores
                # SIGINT, as a background job does, died in a traceback). tests/scenes/test_web_ctrl_c.py
                handle_sigint=False,
                args=launch_args(self.origins),
                timeout=self.timeout_s * 1000,
            )
        except BaseException:
            pw.stop()
            raise
        self.launches += 1
        self.executable = exe
        self.launch_s = time.perf_counter() - t0
        pid = _browser_pid(browser)
        with self._lock:
            self._pid = pid
        log.info("Chromium %s launched from %s in %.2f s", browser.version, exe, self.launch_s)
        if lost := dropped_features(process_argv(pid)):
            log.warning(
                "Chromium: Playwright's own --disable-features list is overridden by ours and lost %s "
                "(add them to PLAYWRIGHT_DISABLED_FEATURES in dvoc_bench/scenes/web/chromium.py)",
                ",".join(lost),
            )
        return Session(pw, browser, exe, self.timeout_s * 1000, pid)


class BrowserHung(RuntimeError):
    """A browser call overran its bound; the browser was killed (the next call relaunches it)."""


def process_argv(pid: int | None) -> list[str]:
    """The command line of a running process (Linux ``/proc``); empty when unknown."""
    if pid is None:
        return []
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _browser_pid(browser: Any) -> int | None:
    """The browser process id, asked over CDP (``None`` if the browser does not say)."""
    try:
        cdp = browser.new_browser_cdp_session()
        try:
            info = cdp.send("SystemInfo.getProcessInfo")
        finally:
            cdp.detach()
        pids = [int(p["id"]) for p in info.get("processInfo", []) if p.get("type") == "browser"]
        return pids[0] if pids else None
    except Exception:
        log.debug("cannot ask Chromium for its pid", exc_info=True)
        return None
