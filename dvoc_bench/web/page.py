"""A web task in the browser: load, pin fonts, set up, measure the DOM, screenshot, hit-test, click.

Every function taking a :class:`~dvoc_bench.web.browser.Session` runs on the browser thread (pass it to
:meth:`WebBrowser.run <dvoc_bench.web.browser.WebBrowser.run>`).

Points and boxes. A point ``(x, y)`` in screenshot pixels names the pixel in column ``x``, row ``y``; the
page is hit-tested and clicked at that pixel's centre, CSS ``(x + 0.5, y + 0.5)`` (one CSS pixel is one
screenshot pixel: ``device_scale_factor=1``, CSS-scale screenshots). A DOM rectangle ``[left, right)`` x
``[top, bottom)`` becomes the edges-inclusive :class:`~dvoc_bench.geometry.Box` ``(left, top, right - 1,
bottom - 1)``, the pixels it covers, as the synthetic scenes draw theirs; boxes are clipped to the viewport.

Fonts. Before anything is measured the loader injects ``@font-face`` rules naming the font files shipped
with matplotlib by ``file:`` URL: ``"DVOC Sans"`` (DejaVu Sans, regular/bold/oblique), ``"DVOC Mono"``
(DejaVu Sans Mono) and ``"DVOC Fallback"`` (Last Resort, a box for every code point DejaVu lacks). A page
whose CSS uses only these families lays out identically on every machine. The same injected sheet turns off
animations, transitions and the text caret.
"""

from __future__ import annotations

import io
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.geometry import Box, Point, Size
from dvoc_bench.web.browser import NetworkGuard, Session

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
    page: Path
    """The HTML file (resolved, absolute)."""
    instruction: str
    """The task text shown to the model."""
    selector: str
    """CSS selector of the target element (exactly one visible element, fully inside the viewport)."""
    viewport: Size = Size(1280, 720)
    """Browser viewport in CSS pixels (= screenshot pixels)."""
    setup: tuple[SetupAction, ...] = ()
    """Actions performed after loading and before the snapshot, in order."""
    name: str = ""
    """Short name (``login-form``...)."""
    difficulty: str | None = None
    """``easy | medium | hard`` as the authors graded the page kind, if given."""

    @property
    def url(self) -> str:
        return self.page.as_uri()


@dataclass(frozen=True)
class MeasuredElement:
    """One element as the DOM measured it."""

    id: str
    """DOM id, or ``<tag>-<n>`` (document order) when it has none; unique within the page."""
    label: str
    """Accessible text: aria-label, visible text, associated label, value, placeholder or title."""
    box: Box
    """Edges-inclusive box in screenshot pixels, clipped to the viewport."""
    role: str
    """``button | input | link | panel`` (``panel``: a target that is not itself interactive)."""
    description: str
    """Short selector-like description (``button#sign-in``, ``a#card-beta > h3.title``)."""
    is_target: bool
    """True for the element the task's selector names."""


@dataclass(frozen=True)
class PageRender:
    """What one render of a task produced."""

    image: np.ndarray
    """Screenshot, ``HxWx3`` uint8 (CSS scale)."""
    elements: tuple[MeasuredElement, ...]
    """Interactive elements (and the target) in document order."""
    target: MeasuredElement
    """The target element."""
    blocked: tuple[str, ...]
    """URLs the page attempted and the guard blocked (load and set-up)."""
    fonts: tuple[tuple[str, str, str, str], ...]
    """The pinned font faces with their load status (family, weight, style, status)."""
    timings: dict[str, float]
    """Seconds spent: ``load``, ``fonts``, ``setup``, ``measure``, ``screenshot``, ``total``."""


class PageError(ValueError):
    """The page cannot serve as a task (selector matches nothing, target off-screen, set-up failed)."""


# ------------------------------------------------------------------------------------------- fonts


def font_files() -> dict[str, Path]:
    """File name -> path of every pinned font face (all in matplotlib's bundled font directory)."""
    from dvoc_bench.render import dejavu_path

    folder = Path(dejavu_path()).parent
    files = {name: folder / name for _, name, _, _ in _FACES}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"pinned fonts missing (reinstall matplotlib): {', '.join(missing)}")
    return files


def font_css() -> str:
    """The injected ``@font-face`` rules (file URLs of the fonts on this machine) and the freeze rules."""
    files = font_files()
    rules = [
        f'@font-face {{ font-family: "{family}"; src: url("{files[name].as_uri()}"); '
        f"font-weight: {weight}; font-style: {style}; }}"
        for family, name, weight, style in _FACES
    ]
    return "\n".join(rules) + "\n" + _FREEZE_CSS


# --------------------------------------------------------------------------------------- scripts

_DESCRIBE_JS = """
function dvocDescribe(el) {
  const parts = [];
  let e = el;
  for (let depth = 0; e && e.nodeType === 1 && depth < 4; depth++) {
    let s = e.tagName.toLowerCase();
    if (e.id) { parts.unshift(s + '#' + e.id); break; }
    const cls = Array.from(e.classList).slice(0, 2);
    if (cls.length) s += '.' + cls.join('.');
    parts.unshift(s);
    if (s === 'body' || s === 'html') break;
    e = e.parentElement;
  }
  return parts.join(' > ');
}
"""

_SETTLE_JS = """
async () => {
  // Force a layout so the faces the page uses start loading, wait for them, then two frames.
  void document.body.offsetHeight;
  await document.fonts.ready;
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  await document.fonts.ready;
  const ours = Array.from(document.fonts).filter(f => f.family.replace(/["']/g, '').startsWith('DVOC '));
  return ours.map(f => [f.family.replace(/["']/g, ''), String(f.weight), f.style, f.status]);
}
"""

_MEASURE_JS = (
    """
(sel) => {
"""
    + _DESCRIBE_JS
    + """
  const INTERACTIVE = 'a[href], button, input:not([type=hidden]), select, textarea, summary, ' +
    '[role=button], [role=link], [role=menuitem], [role=menuitemcheckbox], [role=menuitemradio], ' +
    '[role=tab], [role=checkbox], [role=radio], [role=option], [role=switch], [role=textbox], ' +
    '[role=combobox], [onclick], [tabindex]:not([tabindex="-1"])';
  let matches;
  try { matches = document.querySelectorAll(sel); } catch (e) { return {error: 'invalid selector'}; }
  if (matches.length !== 1) return {error: 'matches ' + matches.length + ' elements'};
  const target = matches[0];
  const W = window.innerWidth, H = window.innerHeight;
  function roleOf(el) {
    const tag = el.tagName.toLowerCase(), r = (el.getAttribute('role') || '').toLowerCase();
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (r === 'link' || r === 'menuitem' || (tag === 'a' && !r)) return 'link';
    if (['textbox', 'combobox', 'checkbox', 'radio', 'switch'].includes(r)) return 'input';
    if (tag === 'input' && ['button', 'submit', 'reset', 'image'].includes(type)) return 'button';
    if (['input', 'select', 'textarea'].includes(tag)) return 'input';
    return 'button';
  }
  function labelOf(el) {
    const squash = s => (s || '').replace(/\\s+/g, ' ').trim();
    let t = squash(el.getAttribute('aria-label'));
    if (!t) t = squash(el.innerText);
    if (!t && el.labels && el.labels.length) t = squash(el.labels[0].innerText);
    if (!t) t = squash(el.value) || squash(el.getAttribute('placeholder')) ||
                squash(el.getAttribute('title')) || squash(el.getAttribute('alt'));
    return t.slice(0, 80);
  }
  function shown(el) {
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.visibility !== 'collapse' && Number(st.opacity) > 0;
  }
  const list = Array.from(document.querySelectorAll(INTERACTIVE));
  if (!list.includes(target)) list.push(target);
  const wanted = new Set(list);
  const ordered = Array.from(document.querySelectorAll('*')).filter(el => wanted.has(el));
  const out = [];
  ordered.forEach((el, i) => {
    const r = el.getBoundingClientRect();
    const x0 = Math.max(r.left, 0), y0 = Math.max(r.top, 0);
    const x1 = Math.min(r.right, W), y1 = Math.min(r.bottom, H);
    const isTarget = el === target;
    const visible = r.width > 0 && r.height > 0 && x1 > x0 && y1 > y0 && shown(el);
    if (!visible && !isTarget) return;
    out.push({
      dom_id: el.id || '', tag: el.tagName.toLowerCase(), index: i,
      label: labelOf(el), role: isTarget && !el.matches(INTERACTIVE) ? 'panel' : roleOf(el),
      description: dvocDescribe(el), is_target: isTarget, visible: visible,
      rect: [r.left, r.top, r.right, r.bottom], clip: [x0, y0, x1, y1],
    });
  });
  return {elements: out, viewport: [W, H]};
}
"""
)

_HIT_JS = (
    """
([x, y, sel]) => {
"""
    + _DESCRIBE_JS
    + """
  const el = document.elementFromPoint(x, y);
  const target = document.querySelector(sel);
  return {element: el ? dvocDescribe(el) : null,
          hit: Boolean(el && target && (el === target || target.contains(el)))};
}
"""
)

_ARM_CLICK_JS = """
(sel) => {
  window.__dvocTargetClicked = false;
  const target = document.querySelector(sel);
  if (!target) return false;
  // Capture phase on the target: runs for a click on the target or anything inside it, before any
  // handler of the page can stop the event.
  target.addEventListener('click', () => { window.__dvocTargetClicked = true; }, {capture: true});
  // Bubble phase on the window, after the page's own handlers: keep the default action (following a
  // link, submitting a form) from navigating the page away before the flag is read.
  window.addEventListener('click', e => e.preventDefault());
  return true;
}
"""


# ------------------------------------------------------------------------------------------ pages


def new_task_page(session: Session, task: WebTask) -> LivePage:
    """A fresh guarded context and an empty page for ``task`` (the caller closes it)."""
    guard = NetworkGuard(page=task.page, extra_files=frozenset(font_files().values()))
    ctx = session.new_context((task.viewport.width, task.viewport.height), guard)
    try:
        return LivePage(ctx, ctx.new_page(), guard)
    except BaseException:
        ctx.close()
        raise


def prepare(live: LivePage, task: WebTask) -> tuple[dict[str, float], tuple[tuple[str, ...], ...]]:
    """(Re)load the task in ``live``: a fresh document, fonts pinned and loaded, set-up done.

    Returns ``(timings, fonts)``; fonts are the pinned faces with their status (``loaded`` for the faces
    the page uses, ``unloaded`` for the others). A face that failed to load is an error.
    """
    page, timings = live.page, {}
    t = time.perf_counter()
    page.goto(task.url, wait_until="load")
    timings["load"] = time.perf_counter() - t
    t = time.perf_counter()
    page.add_style_tag(content=font_css())
    faces = tuple(tuple(f) for f in page.evaluate(_SETTLE_JS))
    timings["fonts"] = time.perf_counter() - t
    failed = [f for f in faces if f[3] not in ("loaded", "unloaded")]
    if failed or len(faces) != len(_FACES):
        raise PageError(f"{task.id}: pinned fonts did not load: {failed or faces}")
    t = time.perf_counter()
    for i, action in enumerate(task.setup):
        _perform(page, action, f"{task.id}: setup[{i}] {action.kind} {action.selector!r}")
    if task.setup:
        faces = tuple(tuple(f) for f in page.evaluate(_SETTLE_JS))
    timings["setup"] = time.perf_counter() - t
    return timings, faces


def _perform(page: Any, action: SetupAction, where: str) -> None:
    from playwright.sync_api import Error as PlaywrightError

    loc = page.locator(action.selector)
    try:
        n = loc.count()  # fail at once on a static page instead of waiting out the timeout
        if n != 1:
            raise PageError(f"{where}: the selector matches {n} elements (needs exactly one)")
        if action.kind == "click":
            loc.click()
        elif action.kind == "hover":
            loc.hover()
        elif action.kind == "fill":
            loc.fill(action.value or "")
        else:  # validated earlier; kept for a clear message
            raise PageError(f"{where}: unknown action; allowed: {', '.join(SETUP_KINDS)}")
    except PlaywrightError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PageError(f"{where}: {first}") from e


def measure(page: Any, task: WebTask) -> tuple[tuple[MeasuredElement, ...], MeasuredElement]:
    """The interactive elements and the target, measured from the live DOM."""
    raw = page.evaluate(_MEASURE_JS, task.selector)
    if "error" in raw:
        raise PageError(f"{task.id}: selector {task.selector!r} {raw['error']} in {task.page}")
    vw, vh = raw["viewport"]
    if (vw, vh) != (task.viewport.width, task.viewport.height):
        raise PageError(f"{task.id}: viewport is {vw}x{vh}, expected {task.viewport.as_list()}")
    used: set[str] = set()
    elements: list[MeasuredElement] = []
    target: MeasuredElement | None = None
    for e in raw["elements"]:
        if e["is_target"]:
            left, top, right, bottom = e["rect"]
            if not e["visible"]:
                raise PageError(f"{task.id}: target {task.selector!r} is not visible")
            if left < 0 or top < 0 or right > vw or bottom > vh:
                raise PageError(
                    f"{task.id}: target {task.selector!r} at {[left, top, right, bottom]} is not fully "
                    f"inside the {vw}x{vh} viewport"
                )
        eid = e["dom_id"] or f"{e['tag']}-{e['index']}"
        while eid in used:
            eid += "_"
        used.add(eid)
        x0, y0, x1, y1 = e["clip"]
        m = MeasuredElement(
            id=eid,
            label=e["label"],
            box=Box(_r(x0), _r(y0), _r(max(x1 - 1, x0)), _r(max(y1 - 1, y0))),
            role=e["role"],
            description=e["description"],
            is_target=e["is_target"],
        )
        elements.append(m)
        if m.is_target:
            target = m
    assert target is not None
    return tuple(elements), target


def _r(v: float) -> float:
    return round(float(v), 4)


def screenshot(page: Any, size: Size) -> np.ndarray:
    """The viewport as ``HxWx3`` uint8 at CSS scale, animations stopped, caret hidden."""
    from PIL import Image

    png = page.screenshot(type="png", scale="css", animations="disabled", caret="hide")
    with Image.open(io.BytesIO(png)) as img:
        image = np.array(img.convert("RGB"), dtype=np.uint8)
    if image.shape != (size.height, size.width, 3):
        raise PageError(f"screenshot is {image.shape[1]}x{image.shape[0]}, expected {size.as_list()}")
    image.setflags(write=False)
    return image


def render(session: Session, task: WebTask, keep: bool = True) -> tuple[PageRender, LivePage | None]:
    """Load, set up, measure and screenshot ``task`` in a fresh context.

    With ``keep`` the live page is returned too (for hit tests), else it is closed and ``None`` returned.
    """
    t0 = time.perf_counter()
    live = new_task_page(session, task)
    try:
        timings = {"open": time.perf_counter() - t0}
        more, faces = prepare(live, task)
        timings.update(more)
        t = time.perf_counter()
        elements, target = measure(live.page, task)
        timings["measure"] = time.perf_counter() - t
        t = time.perf_counter()
        image = screenshot(live.page, task.viewport)
        timings["screenshot"] = time.perf_counter() - t
        # The DOM must not have moved while the screenshot was taken.
        again, _ = measure(live.page, task)
        if again != elements:
            raise PageError(f"{task.id}: the page layout changed between measuring and the screenshot")
    except BaseException:
        live.close()
        raise
    timings["total"] = time.perf_counter() - t0
    result = PageRender(image, elements, target, tuple(live.guard.blocked), faces, timings)
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

    def close(self) -> None:
        self.context.close()


def css_point(p: Point) -> tuple[float, float]:
    """CSS coordinates of the centre of screenshot pixel ``p``."""
    return p.x + 0.5, p.y + 0.5


def hit_test(live: LivePage, task: WebTask, p: Point) -> tuple[str | None, bool]:
    """``(description of the element under p, whether it is the target or inside it)``."""
    x, y = css_point(p)
    out = live.page.evaluate(_HIT_JS, [x, y, task.selector])
    return out["element"], bool(out["hit"])


def verify_click(live: LivePage, task: WebTask, p: Point) -> tuple[bool, tuple[str, ...]]:
    """Reload the task in ``live`` (a page reserved for clicks), set it up, click ``p``.

    Returns ``(the target's click listener fired, URLs blocked during this reload and click)``.
    """
    before = len(live.guard.blocked)
    prepare(live, task)
    if not live.page.evaluate(_ARM_CLICK_JS, task.selector):
        raise PageError(f"{task.id}: selector {task.selector!r} matches nothing after set-up")
    x, y = css_point(p)
    live.page.mouse.click(x, y)
    fired = bool(live.page.evaluate("() => window.__dvocTargetClicked === true"))
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
