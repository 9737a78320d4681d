"""One MiniWoB page in the shared headless Chromium, driven with real input.

:class:`EpisodePage` loads a task page from the installed package (``file://``, the package's ``html/``
folder as the only asset root, through the web floor's :class:`~dvoc_bench.scenes.web.NetworkGuard`: no
packet leaves loopback), starts an episode the way MiniWoB's own environment does (``Math.seedrandom(seed)``
then ``core.startEpisodeReal()``), screenshots the 160x210 CSS px task area at the episode's device scale
factor, and executes actions with Playwright's mouse and keyboard at screenshot points (never by calling the
page's handlers). Every call runs on the browser's thread (:meth:`WebBrowser.run`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.core.pixels import decode_rgb
from dvoc_bench.scenes.miniwob.dom import DOM_JS, HIT_JS, Dom
from dvoc_bench.scenes.miniwob.pages import html_dir, task_page
from dvoc_bench.scenes.sources import SceneError
from dvoc_bench.scenes.web.browser import NetworkGuard, Session, WebBrowser

log = logging.getLogger(__name__)

TASK_CSS = (160, 210)
"""MiniWoB's task area, CSS pixels (``#wrap``)."""

VIEWPORT_CSS = (500, 320)
"""The window MiniWoB's own environment uses (its ``WINDOW_WIDTH`` x ``WINDOW_HEIGHT``)."""

WHEEL_NOTCH_CSS = 40
"""CSS pixels one wheel notch scrolls (Playwright's ``mouse.wheel`` delta per notch of a ``scroll`` step)."""

STILL_JS = "() => !window.jQuery || window.jQuery(':animated').length === 0"
"""True once no jQuery animation runs on the page (MiniWoB's widgets are jQuery UI's)."""

DRAG_MOVES = 12
"""Mouse moves between a drag's press and release (jQuery UI's draggable follows ``mousemove``)."""


def css_point(p: Point, scale: float) -> tuple[float, float]:
    """CSS coordinates of the centre of screenshot pixel ``p``."""
    return (p.x + 0.5) / scale, (p.y + 0.5) / scale


class EpisodePage:
    """A task page, open for the episodes of one task (see the module docstring)."""

    def __init__(self, browser: WebBrowser, task: str, scale: float, root: Path | None = None) -> None:
        self.browser = browser
        """The shared browser."""
        self.task = task
        """MiniWoB task name (``click-checkboxes``)."""
        self.scale = scale
        """Device pixels per CSS pixel (``episode.scale``)."""
        self.root = html_dir() if root is None else root
        """The package's ``html/`` folder: the page's only asset root."""
        self.page_path = task_page(task, self.root)
        self._ctx: Any = None
        self._page: Any = None
        self.guard = NetworkGuard(self.root)
        """The page's request filter (``guard.blocked``: what it tried and was refused)."""
        self.on_close: Any = None
        """Called once when the page is closed (the source counts the pages open per browser)."""

    @property
    def size(self) -> Size:
        """The screenshot's size in pixels."""
        return Size(round(TASK_CSS[0] * self.scale), round(TASK_CSS[1] * self.scale))

    def _run(self, fn: Any) -> Any:
        return self.browser.run(fn)

    def open(self) -> None:
        """Load the page in a fresh context (idempotent)."""
        if self._page is not None:
            return

        def load(s: Session) -> None:
            ctx = s.new_context(VIEWPORT_CSS, self.guard, scale=self.scale)
            try:
                page = ctx.new_page()
                page.goto(self.page_path.as_uri(), wait_until="load")
                page.wait_for_function(
                    "() => typeof core !== 'undefined' && typeof genProblem === 'function'"
                )
            except Exception as e:
                ctx.close()
                raise SceneError(
                    f"miniwob {self.task}: the page did not load: {str(e).splitlines()[0]}"
                ) from e
            self._ctx, self._page = ctx, page

        self._run(load)

    def start(self, seed: int, max_time_s: float) -> Dom:
        """A new episode with the page's random generator seeded by ``seed`` (as MiniWoB's environment
        does); the page's own time limit is set to ``max_time_s`` (its time penalty is never read)."""
        self.open()
        limit_ms = int(max_time_s * 1000)
        js = (
            f"() => {{ Math.seedrandom({json.dumps(int(seed))}); core.EPISODE_MAX_TIME = {limit_ms};"
            " core.startEpisodeReal(); return WOB_TASK_READY; }"
        )

        def go(s: Session) -> Any:
            self._page.evaluate(js)
            self._page.wait_for_function("() => WOB_TASK_READY === true")
            self._page.mouse.move(VIEWPORT_CSS[0] - 1, VIEWPORT_CSS[1] - 1)  # no hover left on the task
            return self._page.evaluate(DOM_JS)

        return Dom.from_js(self._run(go))

    def _still(self) -> None:
        """Wait (on the browser thread, up to 2 s) until no jQuery animation runs: a datepicker or menu that
        is fading out still covers what lies under it, so the page is read, captured and hit-tested only
        once it has settled (the screenshot's ``animations="disabled"`` ends CSS animations, not jQuery's)."""
        self._page.wait_for_function(STILL_JS, timeout=2000)

    def read(self) -> Dom:
        """The page as it is now (once its animations have ended)."""

        def go(s: Session) -> Any:
            self._still()
            return self._page.evaluate(DOM_JS)

        return Dom.from_js(self._run(go))

    def evaluate(self, js: str, arg: Any = None) -> Any:
        """Run a JavaScript function on the page (tests use it to change a page's behaviour)."""
        return self._run(lambda s: self._page.evaluate(js, arg))

    def capture(self) -> np.ndarray:
        """The task area's screenshot, ``H x W x 3`` uint8 at the device scale factor."""
        clip = {"x": 0, "y": 0, "width": TASK_CSS[0], "height": TASK_CSS[1]}

        def shot(s: Session) -> bytes:
            self._still()
            return bytes(
                self._page.screenshot(
                    type="png", clip=clip, scale="device", animations="disabled", caret="hide"
                )
            )

        image = decode_rgb(self._run(shot))
        image.flags.writeable = False
        return image

    def hit(self, p: Point, target: int) -> tuple[str | None, bool]:
        """What lies under screenshot point ``p``, and whether it is element ``target`` or inside it."""
        x, y = css_point(p, self.scale)

        def go(s: Session) -> Any:
            self._still()
            return self._page.evaluate(HIT_JS, [x, y, target])

        out = self._run(go)
        return out[0], bool(out[1])

    def click(self, p: Point, hold: str | None = None) -> None:
        """A real left click at screenshot point ``p``, with key ``hold`` held down (``Control``) if given."""
        x, y = css_point(p, self.scale)

        def go(s: Session) -> None:
            if hold:
                self._page.keyboard.down(hold)
            try:
                self._page.mouse.click(x, y)
            finally:
                if hold:
                    self._page.keyboard.up(hold)

        self._run(go)

    def hover(self, p: Point) -> None:
        """Move the mouse to screenshot point ``p`` (real mouse events: what opens a hover menu)."""
        x, y = css_point(p, self.scale)
        self._run(lambda s: self._page.mouse.move(x, y, steps=4))

    def settle(self, ms: int) -> None:
        """Let the page run its own timers for ``ms`` milliseconds."""
        self._run(lambda s: self._page.wait_for_timeout(ms))

    def type(self, text: str) -> None:
        """Type ``text`` with the keyboard into whatever has the focus."""
        self._run(lambda s: self._page.keyboard.type(text))

    def key(self, name: str, times: int = 1) -> None:
        """Press one key ``times`` times (Playwright's name: ``ArrowRight``, ``Enter``)."""

        def go(s: Session) -> None:
            for _ in range(times):
                self._page.keyboard.press(name)

        self._run(go)

    def drag(self, a: Point, b: Point) -> None:
        """Press at ``a``, move to ``b`` in :data:`DRAG_MOVES` moves, release."""
        (ax, ay), (bx, by) = css_point(a, self.scale), css_point(b, self.scale)

        def go(s: Session) -> None:
            m = self._page.mouse
            m.move(ax, ay)
            m.down()
            m.move(bx, by, steps=DRAG_MOVES)
            m.up()

        self._run(go)

    def scroll(self, p: Point, direction: str, notches: int = 1) -> None:
        """Real wheel input: the pointer moved to screenshot point ``p``, then ``notches`` wheel turns of
        :data:`WHEEL_NOTCH_CSS` each towards ``direction`` (``up | down | left | right``); the browser
        scrolls whatever scrollable element is under the pointer."""
        x, y = css_point(p, self.scale)
        dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}[direction]

        def go(s: Session) -> None:
            m = self._page.mouse
            m.move(x, y)
            for _ in range(notches):
                m.wheel(dx * WHEEL_NOTCH_CSS, dy * WHEEL_NOTCH_CSS)
            self._page.wait_for_timeout(50)  # the scroll is applied on the next frame

        self._run(go)

    def select(self, p: Point, label: str) -> str | None:
        """Choose option ``label`` of the ``<select>`` under screenshot point ``p`` (a click there first,
        as a user opens the list); ``None`` when done, else why the page refused (no list under the point,
        no such option)."""
        x, y = css_point(p, self.scale)

        def go(s: Session) -> str | None:
            self._page.mouse.click(x, y)
            self._page.keyboard.press("Escape")  # the native pop-up is not part of the screenshot
            handle = self._page.evaluate_handle("([x, y]) => document.elementFromPoint(x, y)", [x, y])
            el = handle.as_element()
            if el is None or el.evaluate("e => e.tagName") != "SELECT":
                return "no drop-down list under the point"
            try:
                el.select_option(label=label, timeout=2000)
            except Exception as e:
                return f"the list refused the option: {str(e).splitlines()[0][:120]}"
            return None

        out: str | None = self._run(go)
        return out

    def close(self) -> None:
        """Close the page's context (the browser stays for the next task)."""
        done, self.on_close = self.on_close, None
        if done is not None:
            done()
        if self._ctx is None:
            return
        ctx, self._ctx, self._page = self._ctx, None, None
        try:
            self._run(lambda s: ctx.close())
        except Exception:  # a killed browser took the context with it
            log.debug("closing a miniwob context failed", exc_info=True)
