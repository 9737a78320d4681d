"""Set-of-Mark drawing (seed ``ui-grounding-som.txt``): pure functions on ``HxWx3`` arrays.

From detections to marks (:func:`marks_from_detections`):

- boxes covering more than ``max_area_frac`` (half) of the screen are dropped: a page or a panel, not a
  control;
- the remaining boxes keep the detector's order (descending score) and are numbered 1, 2, ... in it;
- coordinates: a mark's box holds the detector's own numbers (source pixels), clipped to
  ``[0, W - 1] x [0, H - 1]``, and the element list writes them as the seed defines its coordinates,
  ``pixel / (size - 1) x 1000`` (:func:`dvoc_bench.protocol.som.to_frame_value`). This is the one place
  the half-pixel question is settled: the seed hands the detector's numbers on unchanged (a detection
  whose centre is at 960 on a 1920-wide screenshot is listed at 500.3 and tapped at pixel 960), so we do
  too. A detection ``[x0, x1)`` in continuous edge coordinates therefore puts its click 0.5 px right of
  (and below) the centre of the pixels it covers, a shift far below any control's size.

Drawing (:func:`draw_marks`): every mark's box outline in its colour (index-keyed, deterministic, replaced
by a better-contrasting one where the outline would vanish into the pixels under it), then every tag on
top: the number on a filled rectangle of the box colour, black or white text, whichever contrasts more.
Where tags go is :mod:`dvoc_bench.draw.som_layout`: the seed's place (just above the box's top-left corner,
inside it at the top edge) under ``tag_layout="spec"``; under ``"avoid"`` (the default) the first place
around the box that hides no other tag and covers the least of the boxes. Tags never leave the image.
Font size, line width and padding scale with ``max(W, H)``
(:func:`mark_style`); the font is the pinned DejaVu Sans.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.detect.types import Detection
from dvoc_bench.draw.render import dejavu
from dvoc_bench.draw.som_layout import (
    PALETTE,
    Color,
    Mark,
    MarkLayout,
    MarkStyle,
    box_rect,
    layout_marks,
    tag_text_colour,
)

MAX_AREA_FRAC = 0.5
"""Boxes covering more than this share of the screen are not marked."""

MAX_MARKS = 50
"""At most this many marks (the detector's own cap)."""


def mark_style(size: Size) -> MarkStyle:
    """Sizes scaled with the screenshot: ``max(W, H) = 800`` gives 12 px text and 2 px lines, 1280 gives
    19 px / 3 px, 1920 gives 29 px / 4 px."""
    s = max(size.width, size.height)
    font = max(11, round(0.015 * s))
    return MarkStyle(font_px=font, line_px=max(1, round(s / 500)), pad_px=max(1, round(font / 6)))


def palette_colour(mark_id: int) -> Color:
    """The deterministic colour of mark ``mark_id`` (1-based)."""
    return PALETTE[(mark_id - 1) % len(PALETTE)]


def text_colour(bg: Color) -> Color:
    """Black or white text on a ``bg`` tag, whichever has the higher WCAG contrast ratio (>= 4.58)."""
    return tag_text_colour(bg)


def _clip(v: float, hi: float) -> float:
    return min(max(v, 0.0), hi)


def marks_from_detections(
    detections: Sequence[Detection],
    size: Size,
    *,
    max_area_frac: float = MAX_AREA_FRAC,
    max_marks: int = MAX_MARKS,
) -> list[Mark]:
    """Number the detections that are marked (see the module docstring), in the order given."""
    w, h = size.width, size.height
    limit = max_area_frac * w * h
    marks: list[Mark] = []
    for d in detections:
        b = d.box
        cw = _clip(b.x1, w) - _clip(b.x0, w)
        ch = _clip(b.y1, h) - _clip(b.y0, h)
        if cw <= 0 or ch <= 0 or cw * ch > limit:
            continue
        box = Box(_clip(b.x0, w - 1), _clip(b.y0, h - 1), _clip(b.x1, w - 1), _clip(b.y1, h - 1))
        n = len(marks) + 1
        marks.append(Mark(n, box, float(d.score), palette_colour(n)))
        if len(marks) >= max_marks:
            break
    return marks


def draw_marks(
    image: np.ndarray,
    marks: Sequence[Mark],
    style: MarkStyle | None = None,
    *,
    layout: MarkLayout | None = None,
    tag_layout: str = "avoid",
) -> np.ndarray:
    """A new marked copy of ``image`` (``image`` is not modified): boxes first, then every tag on top.
    ``layout`` is :func:`plan_marks`'s result for these marks (computed here when not given)."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an HxWx3 uint8 image, got shape {image.shape} dtype {image.dtype}")
    size = Size(image.shape[1], image.shape[0])
    style = style or mark_style(size)
    if layout is None:
        layout = plan_marks(image, marks, style, tag_layout=tag_layout)
    pil = Image.fromarray(np.ascontiguousarray(image))
    draw = ImageDraw.Draw(pil)
    for m in layout.marks:
        draw.rectangle(list(box_rect(m)), outline=m.colour, width=style.line_px)
    for m, tag in zip(layout.marks, layout.tags, strict=True):
        text = str(m.id)
        font = dejavu(tag.font_px)
        left, top, _, _ = font.getbbox(text)
        x0, y0, x1, y1 = tag.rect
        draw.rectangle([x0, y0, x1, y1], fill=m.colour)
        draw.text(
            (x0 + tag.pad_px - left, y0 + tag.pad_px - top), text, fill=text_colour(m.colour), font=font
        )
    return np.array(pil, dtype=np.uint8)


def plan_marks(
    image: np.ndarray, marks: Sequence[Mark], style: MarkStyle | None = None, *, tag_layout: str = "avoid"
) -> MarkLayout:
    """Colours and tag places of ``marks`` on ``image`` (:func:`dvoc_bench.draw.som_layout.layout_marks`)."""
    style = style or mark_style(Size(image.shape[1], image.shape[0]))
    return layout_marks(image, marks, style, PALETTE, tag_layout)
