"""A web task in the browser: load, pin fonts, set up, measure the DOM, screenshot, hit-test, click.

Every function taking a :class:`~dvoc_bench.scenes.web.browser.Session` runs on the browser thread (pass it to
:meth:`WebBrowser.run <dvoc_bench.scenes.web.browser.WebBrowser.run>`).

Points and boxes. A point ``(x, y)`` in screenshot pixels names the pixel in column ``x``, row ``y``; the
page is hit-tested and clicked at that pixel's centre, CSS ``(x + 0.5, y + 0.5)`` (one CSS pixel is one
screenshot pixel: ``device_scale_factor=1``, CSS-scale screenshots). A DOM rectangle ``[left, right)`` x
``[top, bottom)`` becomes the edges-inclusive :class:`~dvoc_bench.core.geometry.Box` ``(left, top, right - 1,
bottom - 1)``, the pixels it covers, as the synthetic scenes draw theirs; boxes are clipped to the viewport.

Fonts. Before anything is measured the loader injects ``@font-face`` rules naming the font files shipped
with matplotlib by ``file:`` URL: ``"DVOC Sans"`` (DejaVu Sans, regular/bold/oblique), ``"DVOC Mono"``
(DejaVu Sans Mono) and ``"DVOC Fallback"`` (Last Resort, a box for every code point DejaVu lacks). A page
whose CSS uses only these families lays out identically on every machine. The same injected sheet turns off
animations, transitions and the text caret.
"""

from __future__ import annotations

import io
import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.scenes.web.browser import NetworkGuard, Session, origin_of
from dvoc_bench.scenes.web.devices import Device
from dvoc_bench.scenes.web.page_js import (
    ARM_CLICK_JS,
    CLICKED_JS,
    FONT_SCALE_JS,
    HIT_JS,
    MEASURE_JS,
    SETTLE_JS,
    STYLE_JS,
)

log = logging.getLogger(__name__)

SETUP_KINDS = ("click", "hover", "fill")
"""Set-up actions: ``click``/``hover`` a selector, ``fill`` an input with a value."""

_FACES = (
    ("DVOC Sans", "DejaVuSans.ttf", "normal", "normal"),
    ("DVOC Sans", "DejaVuSans-Bold.ttf", "bold", "normal"),
    ("DVOC Sans", "DejaVuSans-Oblique.ttf", "normal", "italic"),
    ("DVOC Sans", "DejaVuSans-BoldOblique.ttf", "bold", "italic"),
    ("DVOC Mono", "DejaVuSansMono.ttf", "normal", "normal"),
    ("DVOC Mono", "DejaVuSansMono-Bold.ttf", "bold", "normal"),
    ("DVOC Fallback", "LastResortHE-Regular.ttf", "normal", "normal"),
)
"""Family, file in matplotlib's font directory, weight, style."""

_FREEZE_CSS = """
*, *::before, *::after {
  animation: none !important; transition: none !important; caret-color: transparent !important;
  scroll-behavior: auto !important;
}
"""


@dataclass(frozen=True)
class SetupAction:
    """One action performed before the snapshot (e.g. a click that opens a menu)."""

    kind: str
    """One of :data:`SETUP_KINDS`."""
    selector: str
    """CSS selector of the element acted on (must match exactly one element)."""
    value: str | None = None
    """Text typed by ``fill``; ``None`` for the other kinds."""


@dataclass(frozen=True)
class WebTask:
    """A web page task: the page, what to click on it, and how to prepare it."""

    id: str
    """Scene / task id (``W1``..., or the id of a bring-your-own task)."""
    page: Path | None
    """The HTML file (resolved, absolute); ``None`` for a page served by a local server (``remote``)."""
    instruction: str
    """The task text shown to the model."""
    selector: str
    """Playwright selector of the target (CSS, ``text=``, ``role=``, ``>> nth=N``, chains...)."""
    viewport: Size = Size(1280, 720)
    """Browser viewport in CSS pixels."""
    setup: tuple[SetupAction, ...] = ()
    """Actions performed after loading and before the snapshot, in order."""
    name: str = ""
    """Short name (``login-form``...)."""
    difficulty: str | None = None
    """``easy | medium | hard`` as the authors graded the page kind, if given."""
    root: Path | None = None
    """Asset root (resolved): ``file:`` URLs resolving inside it load; ``None``: the page's folder."""
    remote: str | None = None
    """``http://127.0.0.1:PORT/path`` of a page served by a local dev server (its origin is allowed)."""
    scale: float = 1.0
    """Device pixels per CSS pixel: the screenshot is ``viewport * scale`` pixels (2 for high-DPI frames)."""
    wait_for: str | None = None
    """Selector that must be visible before the snapshot (a JavaScript-built control)."""
    scroll_to: str | None = None
    """Selector scrolled into view before the snapshot."""
    origins: tuple[str, ...] = ()
    """Loopback origins the page may load from (``web.allow_origins``, normalised)."""
    hide_target: bool = False
    """The absent-target variant ``remove`` (docs/absent.md): the target is measured, then hidden
    (``visibility: hidden``, so nothing else moves and a point there reaches what lies under it) before the
    screenshot, in the kept page and in the page of verifying clicks."""
    device: Device | None = None
    """The phone the page is shown on (``web.device``; its viewport and scale are ``viewport`` and
    ``scale``); ``None``: a desktop browser window."""
    color_scheme: str = "light"
    """The ``prefers-color-scheme`` the page is shown (``web.color_scheme``)."""
    font_scale: float = 1.0
    """Factor on every element's computed font size, applied before the set-up (``web.font_scale``)."""

    @property
    def touch(self) -> bool:
        """Whether actions on the page are taps (a device with touch)."""
        return self.device is not None and self.device.has_touch

    @property
    def url(self) -> str:
        if self.remote is not None:
            return self.remote
        assert self.page is not None
        return self.page.as_uri()

    @property
    def asset_root(self) -> Path | None:
        """Where local files may come from: ``root``, else the page's folder (``None``: no local files)."""
        if self.root is not None:
            return self.root
        return self.page.parent if self.page is not None else None

    @property
    def image_size(self) -> Size:
        """Screenshot size in pixels (``viewport * scale``)."""
        return Size(round(self.viewport.width * self.scale), round(self.viewport.height * self.scale))

    @property
    def where(self) -> str:
        """The page, for messages."""
        return str(self.page) if self.page is not None else self.url


@dataclass(frozen=True)
class MeasuredElement:
    """One element as the DOM measured it."""

    id: str
    """DOM id, or ``<tag>-<n>`` (document order) when it has none; unique within the page."""
    label: str
    """Accessible text: aria-label, visible text, associated label, value, placeholder or title."""
    box: Box
    """Edges-inclusive box in screenshot pixels, clipped to the viewport (what is scored)."""
    role: str
    """``button | input | link | panel`` (``panel``: a target that is not itself interactive)."""
    description: str
    """Short selector-like description (``button#sign-in``, ``a#card-beta > h3.title``)."""
    is_target: bool
    """True for the element the task's selector names."""
    dom_box: Box | None = None
    """The target's whole DOM box in screenshot pixels, before clipping (may reach outside the image)."""


@dataclass(frozen=True)
class PageRender:
    """What one render of a task produced."""

    image: np.ndarray
    """Screenshot, ``HxWx3`` uint8 (``viewport * scale`` pixels)."""
    elements: tuple[MeasuredElement, ...]
    """Interactive elements (and the target) in document order."""
    target: MeasuredElement
    """The target element."""
    blocked: tuple[str, ...]
    """URLs the page attempted and the guard blocked (load and set-up)."""
    fonts: tuple[tuple[str, str, str, str], ...]
    """The pinned font faces with their load status (family, weight, style, status)."""
    timings: dict[str, float]
    """Seconds spent: ``load``, ``idle``, ``fonts``, ``setup``, ``measure``, ``screenshot``, ``total``."""
    target_index: int = 0
    """Which match of the selector is the target (``>> nth=`` of the chosen one)."""
    idle: bool = True
    """The network went idle within its bound after load."""


class PageError(ValueError):
    """The page cannot serve as a task (it hangs, navigates away, crashes, or has no valid target)."""

    blocked: tuple[str, ...] = ()
    """URLs the guard blocked while the page loaded, said with the failure (set where it is raised)."""


# ------------------------------------------------------------------------------------------- fonts

FONT_PREFIX = "/__dvoc_fonts__/"
"""Path under which a served page (``remote``) gets the pinned fonts; the guard answers it from disk, the
request never reaches the server."""


def font_files() -> dict[str, Path]:
    """File name -> path of every pinned font face (all in matplotlib's bundled font directory)."""
    from dvoc_bench.draw.render import dejavu_path

    folder = Path(dejavu_path()).parent
    files = {name: folder / name for _, name, _, _ in _FACES}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"pinned fonts missing (reinstall matplotlib): {', '.join(missing)}")
    return files


def font_css(origin: str | None = None) -> str:
    """The injected ``@font-face`` rules and the freeze rules. Fonts are ``file:`` URLs of the fonts on
    this machine, or for a page served from ``origin``, ``origin + FONT_PREFIX + name``."""
    files = font_files()
    url = (lambda n: files[n].as_uri()) if origin is None else (lambda n: f"{origin}{FONT_PREFIX}{n}")
    rules = [
        f'@font-face {{ font-family: "{family}"; src: url("{url(name)}"); '
        f"font-weight: {weight}; font-style: {style}; }}"
        for family, name, weight, style in _FACES
    ]
    return "\n".join(rules) + "\n" + _FREEZE_CSS


# --------------------------------------------------------------------------------------- scripts

_PING_MS = 5000
"""Bound of the liveness check before a Playwright call that has no timeout of its own."""

IDLE_S = 5.0
"""Longest wait for the network to go idle after load (a page polling forever is snapshotted anyway)."""


# ------------------------------------------------------------------------------------------ calls


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    line = text.splitlines()[0] if text else type(e).__name__
    return line[:300]


@contextmanager
def _step(task: WebTask, what: str, timeout_s: float) -> Iterator[None]:
    """Turn Playwright failures of one step into a one-line :class:`PageError` naming the step."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        yield
    except PageError:
        raise
    except PlaywrightTimeout as e:
        raise PageError(f"{task.id}: {what}: no answer within {timeout_s:g} s ({task.where})") from e
    except PlaywrightError as e:
        msg = _first_line(e)
        if "crash" in msg.lower():
            msg = "the renderer crashed"
        elif "context was destroyed" in msg or "navigat" in msg.lower():
            msg = f"the page navigated away ({msg})"
        raise PageError(f"{task.id}: {what}: {msg}") from e


def evaluate(page: Any, js: str, arg: Any, timeout_ms: float) -> Any:
    """``page.evaluate`` bounded by ``timeout_ms``: a page spinning in JavaScript raises Playwright's
    ``TimeoutError`` instead of blocking the browser thread. ``js`` must return a truthy value."""
    handle = page.wait_for_function(js, arg=arg, timeout=timeout_ms)
    try:
        return handle.json_value()
    finally:
        handle.dispose()


def _same_document(url: str, expected: str) -> bool:
    return url.split("#", 1)[0] == expected.split("#", 1)[0]


# ------------------------------------------------------------------------------------------ pages


def new_task_page(session: Session, task: WebTask) -> LivePage:
    """A fresh guarded context and an empty page for ``task`` (the caller closes it)."""
    fonts = font_files()
    root = task.asset_root
    guard = NetworkGuard(
        root=Path(os.path.realpath(root)) if root is not None else None,
        extra_files=frozenset(Path(os.path.realpath(p)) for p in fonts.values()),
        origins=task.origins,
        fulfil={f"{o}{FONT_PREFIX}{n}": p for o in task.origins for n, p in fonts.items()},
    )
    extra = task.device.context_options() if task.device is not None else {}
    ctx = session.new_context((task.viewport.width, task.viewport.height), guard, task.scale, **extra)
    try:
        page = ctx.new_page()
        if task.color_scheme != "light":  # the context's own is light
            page.emulate_media(color_scheme=task.color_scheme)
        return LivePage(ctx, page, guard, session.timeout_ms)
    except BaseException:
        ctx.close()
        raise


def _faces(raw: Any) -> tuple[tuple[str, str, str, str], ...]:
    """``SETTLE_JS``'s answer: the pinned faces as ``(family, weight, style, status)``."""
    return tuple((f[0], f[1], f[2], f[3]) for f in raw)


def prepare(live: LivePage, task: WebTask) -> tuple[dict[str, float], tuple[tuple[str, str, str, str], ...]]:
    """(Re)load the task in ``live`` as a user would see it: loaded, network idle (bounded), fonts pinned
    and loaded, ``wait_for`` visible, set-up done, ``scroll_to`` in view. Every call is bounded.

    Returns ``(timings, fonts)``; fonts are the pinned faces with their status (``loaded`` for the faces
    the page uses, ``unloaded`` for the others). A face that failed to load is an error.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page, timings, ms = live.page, {}, live.timeout_ms
    s = ms / 1000
    t = time.perf_counter()
    with _step(task, "loading the page", s):
        page.goto(task.url, wait_until="load", timeout=ms)
    timings["load"] = time.perf_counter() - t
    t = time.perf_counter()
    try:
        page.wait_for_load_state("networkidle", timeout=min(ms, IDLE_S * 1000))
        live.idle = True
    except PlaywrightTimeout:
        live.idle = False
    timings["idle"] = time.perf_counter() - t
    t = time.perf_counter()
    origin = None if task.remote is None else origin_of(task.remote)
    with _step(task, "pinning the fonts", s):
        evaluate(page, STYLE_JS, font_css(origin), ms)
        faces = _faces(evaluate(page, SETTLE_JS, None, ms))
    timings["fonts"] = time.perf_counter() - t
    failed = [f for f in faces if f[3] not in ("loaded", "unloaded")]
    if failed or len(faces) != len(_FACES):
        raise PageError(f"{task.id}: pinned fonts did not load: {failed or faces}")
    if task.font_scale != 1.0:
        with _step(task, "scaling the fonts", s):
            evaluate(page, FONT_SCALE_JS, task.font_scale, ms)
            faces = _faces(evaluate(page, SETTLE_JS, None, ms))
    t = time.perf_counter()
    if task.wait_for:
        with _step(task, f"wait_for {task.wait_for!r}", s):
            _locate(page, task.wait_for, task, "wait_for").first.wait_for(state="visible", timeout=ms)
    for i, action in enumerate(task.setup):
        _perform(page, action, f"{task.id}: setup[{i}] {action.kind} {action.selector!r}", ms)
    if task.scroll_to:
        with _step(task, f"scroll_to {task.scroll_to!r}", s):
            _locate(page, task.scroll_to, task, "scroll_to").first.scroll_into_view_if_needed(timeout=ms)
    if task.setup or task.wait_for or task.scroll_to:
        with _step(task, "settling after set-up", s):
            faces = _faces(evaluate(page, SETTLE_JS, None, ms))
    timings["setup"] = time.perf_counter() - t
    if not _same_document(page.url, task.url):
        raise PageError(f"{task.id}: the page navigated away from {task.url} to {page.url}")
    return timings, faces


def _locate(page: Any, selector: str, task: WebTask, key: str) -> Any:
    """``page.locator(selector)``, an invalid selector being a one-line :class:`PageError`."""
    from playwright.sync_api import Error as PlaywrightError

    evaluate(page, "() => true", None, _PING_MS)  # a spinning page times out here, not below
    try:
        loc = page.locator(selector)
        loc.count()
    except PlaywrightError as e:
        raise PageError(f"{task.id}: {key} {selector!r} is not a valid selector: {_first_line(e)}") from e
    return loc


def _perform(page: Any, action: SetupAction, where: str, timeout_ms: float) -> None:
    from playwright.sync_api import Error as PlaywrightError

    loc = page.locator(action.selector)
    try:
        n = loc.count()  # fail at once on a static page instead of waiting out the timeout
        if n != 1:
            raise PageError(f"{where}: the selector matches {n} elements (needs exactly one)")
        if action.kind == "click":
            loc.click(timeout=timeout_ms)
        elif action.kind == "hover":
            loc.hover(timeout=timeout_ms)
        elif action.kind == "fill":
            loc.fill(action.value or "", timeout=timeout_ms)
        else:  # validated earlier; kept for a clear message
            raise PageError(f"{where}: unknown action; allowed: {', '.join(SETUP_KINDS)}")
    except PlaywrightError as e:
        raise PageError(f"{where}: {_first_line(e)}") from e


def _box(rect: Sequence[float], scale: float) -> Box:
    """A CSS rectangle ``[left, top, right, bottom)`` -> the edges-inclusive box of image pixels."""
    x0, y0, x1, y1 = (float(v) * scale for v in rect)
    return Box(_r(x0), _r(y0), _r(max(x1 - 1, x0)), _r(max(y1 - 1, y0)))


def _fmt_rect(rect: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in (round(float(x), 1) for x in rect)) + "]"


def measure(live: LivePage, task: WebTask) -> tuple[tuple[MeasuredElement, ...], MeasuredElement, int]:
    """The interactive elements and the target, measured from the live DOM; and which match the target is.

    The selector goes through Playwright's engine. Several matches: the one visible with at least half of
    its box inside the viewport, if exactly one is; else a :class:`PageError` listing each match. A target
    sticking out of the viewport is scored on its visible part (``box``; ``dom_box`` keeps the whole).
    """
    page, ms = live.page, live.timeout_ms
    with _step(task, f"selector {task.selector!r}", ms / 1000):
        handles = _locate(page, task.selector, task, "selector").element_handles()
        try:
            raw = evaluate(page, MEASURE_JS, {"matches": handles}, ms)
        finally:
            for h in handles:
                h.dispose()
    vw, vh = raw["viewport"]
    if (vw, vh) != (task.viewport.width, task.viewport.height):
        hint = ""
        if task.device is not None and task.device.is_mobile:
            hint = (
                f' on {task.device.name}: the page lays out wider than the phone (no <meta name="viewport" '
                f'content="width=device-width, initial-scale=1">, or content wider than the screen), so '
                f"the phone shows it zoomed out"
            )
        raise PageError(f"{task.id}: viewport is {vw}x{vh}, expected {task.viewport.as_list()}{hint}")
    matches, chosen = raw["matches"], raw["chosen"]
    sel = task.selector
    if not matches:
        raise PageError(f"{task.id}: selector {sel!r} matches nothing in {task.where}")
    if chosen is None and len(matches) == 1:
        m = matches[0]
        if m["kind"] == "outside":
            raise PageError(
                f"{task.id}: target {sel!r} is outside the viewport: box {_fmt_rect(m['rect'])} "
                f"(CSS px), viewport {vw}x{vh}, {m['fraction']:.0%} inside; scroll_to: <selector> brings "
                f"it into view"
            )
        raise PageError(f"{task.id}: target {sel!r} is not visible: {m['reason']}")
    if chosen is None:
        listed = "; ".join(
            f"[{i}] {m['description']} box {_fmt_rect(m['rect'])} {m['reason'] or 'visible'}"
            for i, m in enumerate(matches[:8])
        )
        more = f"; ... {len(matches) - 8} more" if len(matches) > 8 else ""
        n_ok = sum(m["kind"] is None for m in matches)
        raise PageError(
            f"{task.id}: selector {sel!r} matches {len(matches)} elements, {n_ok} of them visible with half "
            f"their box in the viewport: {listed}{more}; add '>> nth=N' to pick one"
        )
    used: set[str] = set()
    elements: list[MeasuredElement] = []
    target: MeasuredElement | None = None
    for e in raw["elements"]:
        eid = e["dom_id"] or f"{e['tag']}-{e['index']}"
        while eid in used:
            eid += "_"
        used.add(eid)
        m = MeasuredElement(
            id=eid,
            label=e["label"],
            box=_box(e["clip"], task.scale),
            role=e["role"],
            description=e["description"],
            is_target=e["is_target"],
            dom_box=_box(e["rect"], task.scale) if e["is_target"] else None,
        )
        elements.append(m)
        if m.is_target:
            target = m
    assert target is not None
    return tuple(elements), target, int(chosen)


def _r(v: float) -> float:
    return round(float(v), 4)


def screenshot(page: Any, size: Size, timeout_ms: float = 30000) -> np.ndarray:
    """The viewport as ``HxWx3`` uint8 in device pixels (``size``), animations stopped, caret hidden."""
    from PIL import Image

    png = page.screenshot(type="png", scale="device", animations="disabled", caret="hide", timeout=timeout_ms)
    with Image.open(io.BytesIO(png)) as img:
        image = np.array(img.convert("RGB"), dtype=np.uint8)
    if image.shape != (size.height, size.width, 3):
        raise PageError(f"screenshot is {image.shape[1]}x{image.shape[0]}, expected {size.as_list()}")
    image.setflags(write=False)
    return image


@overload
def render(session: Session, task: WebTask, keep: Literal[True] = True) -> tuple[PageRender, LivePage]: ...
@overload
def render(session: Session, task: WebTask, keep: Literal[False]) -> tuple[PageRender, None]: ...


def render(session: Session, task: WebTask, keep: bool = True) -> tuple[PageRender, LivePage | None]:
    """Load, set up, measure and screenshot ``task`` in a fresh context.

    With ``keep`` the live page is returned too (for hit tests), else it is closed and ``None`` returned.
    Any failure closes the context and raises :class:`PageError` (one line).
    """
    t0 = time.perf_counter()
    live = new_task_page(session, task)
    try:
        timings = {"open": time.perf_counter() - t0}
        more, faces = prepare(live, task)
        timings.update(more)
        t = time.perf_counter()
        elements, target, index = measure(live, task)
        timings["measure"] = time.perf_counter() - t
        t = time.perf_counter()
        _hide(live, task, index, True)
        with _step(task, "screenshot", live.timeout_ms / 1000):
            image = screenshot(live.page, task.image_size, live.timeout_ms)
        timings["screenshot"] = time.perf_counter() - t
        _hide(live, task, index, False)  # measured visible, as it was measured before the screenshot
        # The DOM must not have moved while the screenshot was taken.
        again, _, _ = measure(live, task)
        if again != elements:
            raise PageError(f"{task.id}: the page layout changed between measuring and the screenshot")
        _hide(live, task, index, True)
        if not _same_document(live.page.url, task.url):
            raise PageError(f"{task.id}: the page navigated away from {task.url} to {live.page.url}")
        with _step(task, "keeping the target", live.timeout_ms / 1000):
            live.target = (
                _locate(live.page, task.selector, task, "selector")
                .nth(index)
                .element_handle(timeout=live.timeout_ms)
            )
    except PageError as e:
        e.blocked = tuple(live.guard.blocked)
        live.close()
        raise
    except BaseException:
        live.close()
        raise
    timings["total"] = time.perf_counter() - t0
    result = PageRender(image, elements, target, tuple(live.guard.blocked), faces, timings, index, live.idle)
    if keep:
        return result, live
    live.close()
    return result, None


@dataclass
class LivePage:
    """A page in its own guarded context, kept open on the browser thread."""

    context: Any
    """Its browser context."""
    page: Any
    """The page."""
    guard: NetworkGuard
    """Its network guard (``blocked`` accumulates over the page's life)."""
    timeout_ms: float = 30000
    """Bound of every call on the page."""
    target: Any = None
    """Handle of the target element once measured."""
    idle: bool = True
    """The network went idle after the last load."""

    def close(self) -> None:
        try:
            self.context.close()
        except Exception:  # a crashed or killed page: its context is gone anyway
            log.debug("closing a context failed", exc_info=True)


def css_point(p: Point, scale: float = 1.0) -> tuple[float, float]:
    """CSS coordinates of the centre of screenshot pixel ``p`` (``scale`` image pixels per CSS pixel)."""
    return (p.x + 0.5) / scale, (p.y + 0.5) / scale


_HIDE_JS = """([el, hide]) => {
  if (hide) el.style.setProperty('visibility', 'hidden', 'important');
  else el.style.removeProperty('visibility');
  return true;
}"""


def _hide(live: LivePage, task: WebTask, index: int, hide: bool) -> None:
    """Hide (or show again) match ``index`` of the target's selector when ``task.hide_target``; else
    nothing."""
    if not task.hide_target:
        return
    ms = live.timeout_ms
    with _step(task, "hiding the target" if hide else "showing the target", ms / 1000):
        handle = _locate(live.page, task.selector, task, "selector").nth(index).element_handle(timeout=ms)
        try:
            evaluate(live.page, _HIDE_JS, [handle, hide], ms)
        finally:
            handle.dispose()


def hit_test(live: LivePage, task: WebTask, p: Point) -> tuple[str | None, bool]:
    """``(description of the element under p, whether it is the target or inside it)``."""
    x, y = css_point(p, task.scale)
    with _step(task, "hit test", live.timeout_ms / 1000):
        out = evaluate(live.page, HIT_JS, [x, y, live.target], live.timeout_ms)
    return out["element"], bool(out["hit"])


def verify_click(live: LivePage, task: WebTask, p: Point, index: int = 0) -> tuple[bool, tuple[str, ...]]:
    """Reload the task in ``live`` (a page reserved for clicks), set it up, click ``p`` (on a touch
    device: tap it, ``touchscreen.tap``).

    ``index``: which match of the selector is the target. Returns ``(the target's click listener fired,
    URLs blocked during this reload and click)``; a tap counts only when its touch began on the target too.
    """
    before = len(live.guard.blocked)
    prepare(live, task)
    ms = live.timeout_ms
    with _step(task, "verifying click", ms / 1000):
        loc = _locate(live.page, task.selector, task, "selector")
        if loc.count() <= index:
            raise PageError(f"{task.id}: selector {task.selector!r} matches nothing after set-up")
        handle = loc.nth(index).element_handle(timeout=ms)
        evaluate(live.page, ARM_CLICK_JS, handle, ms)
        _hide(live, task, index, True)
        x, y = css_point(p, task.scale)
        if task.touch:
            live.page.touchscreen.tap(x, y)
        else:
            live.page.mouse.click(x, y)
        got = evaluate(live.page, CLICKED_JS, None, ms)
        fired = bool(got["clicked"]) and (bool(got["touched"]) or not task.touch)
    return fired, tuple(live.guard.blocked[before:])


def setup_actions(raw: Sequence[Any], where: str) -> tuple[SetupAction, ...]:
    """Parse ``[{click: sel}, {hover: sel}, {fill: {selector: sel, value: text}}]``; ``ValueError`` names
    the bad item."""
    if raw is None:
        return ()
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
        raise ValueError(f"{where}: must be a list of actions like [{{click: '#menu'}}]")
    out = []
    for i, item in enumerate(raw):
        w = f"{where}[{i}]"
        if not isinstance(item, dict) or len(item) != 1:
            raise ValueError(f"{w}: an action is a one-key mapping; allowed keys: {', '.join(SETUP_KINDS)}")
        ((kind, arg),) = item.items()
        if kind not in SETUP_KINDS:
            raise ValueError(f"{w}: unknown action {kind!r}; allowed: {', '.join(SETUP_KINDS)}")
        if kind == "fill":
            if not isinstance(arg, dict) or set(arg) != {"selector", "value"}:
                raise ValueError(f"{w}: fill takes {{selector: <css>, value: <text>}}")
            sel, value = arg["selector"], str(arg["value"])
        else:
            sel, value = arg, None
        if not isinstance(sel, str) or not sel.strip():
            raise ValueError(f"{w}: {kind} needs a non-empty CSS selector")
        out.append(SetupAction(kind, sel.strip(), value))
    return tuple(out)
