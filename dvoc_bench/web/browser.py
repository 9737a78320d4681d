"""One shared headless Chromium, driven by Playwright's sync API on a dedicated thread.

Why a thread: Playwright's sync objects belong to the thread that created them, and its sync API refuses to
run inside a running asyncio loop, while the sweep is asyncio-based and the scene registry is synchronous.
So every Playwright call runs on one browser thread; callers anywhere (the main thread, a worker thread,
``asyncio.to_thread`` from the sweep) hand it a function with :meth:`WebBrowser.run` and block until it
returns. Calls are serialised, which is what a single page needs anyway.

The browser starts on first use and stops with :meth:`WebBrowser.close` (also registered for interpreter
exit). A call after ``close`` starts a new browser; :attr:`WebBrowser.launches` counts launches, so a sweep
can show it launched exactly once.

Every context gets a :class:`NetworkGuard`: a route handler that lets through only ``file:`` URLs of the page
itself, of the files beside it (its own directory tree) and of the pinned fonts; every other request
(``http``, ``https``, other local paths) is aborted and recorded, and WebSockets are refused.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from dvoc_bench.web.chromium import LAUNCH_ARGS, resolve_chromium

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


def request_allowed(url: str, page: Path, extra_files: Iterable[Path] = ()) -> bool:
    """Whether the guard lets ``url`` through: the page, files under its directory, ``extra_files``.

    Pure: ``page`` and ``extra_files`` are resolved absolute paths. Non-network schemes (``data:``,
    ``blob:``, ``about:``) are allowed; every other scheme (``http``, ``https``, ``ws``, ``ftp``...) is not.
    """
    scheme = urlsplit(url).scheme
    if scheme in _NO_NETWORK_SCHEMES:
        return True
    path = url_to_path(url)
    if path is None:
        return False
    path = Path(*path.parts)  # normalise without touching the file system
    if ".." in path.parts:
        return False
    return path == page or page.parent in path.parents or path in set(extra_files)


@dataclass
class NetworkGuard:
    """The route handler of one browser context: lets local page files through, blocks and logs the rest."""

    page: Path
    """The page file (resolved)."""
    extra_files: frozenset[Path] = frozenset()
    """Other files the harness itself injects (the pinned fonts)."""
    blocked: list[str] = field(default_factory=list)
    """URLs the page tried to fetch that were aborted (in request order; WebSockets as ``ws(s)://``)."""

    def handle(self, route: Any) -> None:
        url = route.request.url
        if request_allowed(url, self.page, self.extra_files):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort("blockedbyclient")

    def handle_websocket(self, ws: Any) -> None:
        self.blocked.append(ws.url)
        ws.close(code=1008, reason="network blocked by dvoc-bench")

    def install(self, context: Any) -> None:
        """Route every request and WebSocket of ``context`` through this guard."""
        context.route("**/*", self.handle)
        context.route_web_socket("**/*", self.handle_websocket)


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
    state: dict[str, Any] = field(default_factory=dict)
    """Per-browser state owned by callers (e.g. the live page of each scene); cleared on close."""

    def new_context(self, viewport: tuple[int, int], guard: NetworkGuard) -> Any:
        """A fresh, isolated context: CSS-pixel screenshots, reduced motion, no service workers, guarded."""
        ctx = self.browser.new_context(
            viewport={"width": viewport[0], "height": viewport[1]},
            device_scale_factor=1,
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

    def __init__(self, chromium: str | None = None, timeout_s: float = 30.0) -> None:
        self.chromium = chromium
        """Explicit binary (``web.chromium``), or ``None`` for the documented search order."""
        self.timeout_s = timeout_s
        """Default timeout of page loads and actions."""
        self.launches = 0
        """How many times a browser was launched by this object."""
        self.executable: str | None = None
        """Binary of the last launch."""
        self.launch_s: float | None = None
        """Wall time of the last launch (driver start + browser start)."""
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[Session], Any], Future[Any]] | None] | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """True while the browser thread is alive (the browser itself starts on the first job)."""
        return self._thread is not None and self._thread.is_alive()

    def run(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn(session)`` on the browser thread and return its result (exceptions propagate)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("WebBrowser.run called from the browser thread itself")
        fut: Future[T] = Future()
        with self._lock:
            if self._jobs is None or not self.running:
                self._start_thread()
            assert self._jobs is not None
            self._jobs.put((fn, fut))
        return fut.result()

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
                args=list(LAUNCH_ARGS),
                timeout=self.timeout_s * 1000,
            )
        except BaseException:
            pw.stop()
            raise
        self.launches += 1
        self.executable = exe
        self.launch_s = time.perf_counter() - t0
        log.info("Chromium %s launched from %s in %.2f s", browser.version, exe, self.launch_s)
        return Session(pw, browser, exe, self.timeout_s * 1000)
