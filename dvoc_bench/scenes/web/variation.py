"""The ``web:`` variation axes applied to a task (docs/variation.md): browser zoom, device scale factor,
viewport size and orientation, colour scheme and font scale. Pure: a :class:`WebTask` in, a varied one out;
the page is then loaded and measured as any other, so the truth is the varied page's own, never scaled.

Browser zoom is emulated as Chromium's own page zoom behaves (Ctrl-+ in a window): the window keeps its
size in device pixels, the CSS viewport shrinks by the zoom, and ``devicePixelRatio`` grows by it, so media
queries see a narrower page and it reflows. CSS ``zoom`` on the root would leave ``innerWidth`` and the
media queries unchanged and has measured boxes in zoomed or unzoomed units depending on the Chromium
release; Playwright exposes no page-zoom call, and a fixed viewport with a scaled device pixel ratio is
what the browser's zoom amounts to.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from dvoc_bench.core.geometry import Size
from dvoc_bench.scenes.web.page import WebTask

SEARCH = 8
"""How far (CSS px) a zoomed viewport side may move from ``side / zoom`` so that its device pixels are a
whole number (the screenshot's size is then exact)."""


@dataclass(frozen=True)
class WebVariation:
    """The ``web:`` variation knobs, validated (:class:`~dvoc_bench.scenes.web.settings.Web`)."""

    zoom: float = 1.0
    """Browser zoom (1 = 100 %)."""
    device_scale_factor: float | None = None
    """Device pixels per CSS pixel of every page; ``None``: the task's."""
    viewport: tuple[int, int] | None = None
    """CSS viewport ``(width, height)`` of every page; ``None``: the task's."""
    orientation: str = "task"
    """``task | portrait | landscape``."""
    color_scheme: str = "light"
    """``prefers-color-scheme``: ``light | dark``."""
    font_scale: float = 1.0
    """Factor on every computed font size."""


def zoomed_side(side: int, zoom: float, scale: float) -> int:
    """The CSS side of a window ``side`` CSS px wide (at zoom 1) under ``zoom``: nearest ``side / zoom``
    whose device pixels (``css * scale * zoom``) are whole, within :data:`SEARCH` px."""
    want = side / zoom
    best = max(1, round(want))
    for d in sorted(range(-SEARCH, SEARCH + 1), key=abs):
        css = round(want) + d
        dev = css * scale * zoom
        if css >= 1 and abs(dev - round(dev)) < 1e-9:
            return css
    return best


def vary_task(task: WebTask, v: WebVariation) -> WebTask:
    """``task`` under the variation: viewport (and orientation), device scale factor, zoom (a CSS viewport
    ``viewport / zoom`` at ``scale * zoom`` device pixels per CSS pixel), colour scheme, font scale."""
    w, h = v.viewport if v.viewport is not None else (task.viewport.width, task.viewport.height)
    if (v.orientation == "portrait" and w > h) or (v.orientation == "landscape" and h > w):
        w, h = h, w
    scale = v.device_scale_factor if v.device_scale_factor is not None else task.scale
    if v.zoom != 1.0:
        w, h = zoomed_side(w, v.zoom, scale), zoomed_side(h, v.zoom, scale)
    return dataclasses.replace(
        task, viewport=Size(w, h), scale=scale * v.zoom, color_scheme=v.color_scheme, font_scale=v.font_scale
    )
