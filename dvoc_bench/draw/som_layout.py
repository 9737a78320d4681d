"""Where Set-of-Mark tags go and which colours the marks get: pure functions, no drawing.

Two placements (``detector.tag_layout``):

- ``spec``: the seed's rule, the number just above the box's top-left corner, inside the corner when the
  box touches the top of the screen (tags may then hide each other and the controls).
- ``avoid`` (default): the spec's position is the first of several candidates around the box (above left,
  above right, inside the corners, left, right, below, and slid along the top and bottom edges). Marks are
  placed in id order; each takes a candidate that overlaps no earlier tag (1 px apart) and covers the
  least of the boxes' interiors (its own included, so a tag sits outside its control when it can); among
  equals, the one over the fewest "ink" pixels (edges in the screenshot: text and controls the detector
  did not box), then the earlier candidate. When no candidate is free, the tag's font shrinks a pixel at
  a time down to :data:`MIN_FONT_PX`; when even that leaves none free, the tag takes the candidate
  overlapping earlier tags least, and the layout counts it (``tag_overlaps``, recorded per trial).

Colours (both placements): a mark starts from its index-keyed palette colour and keeps it when its WCAG
contrast ratio against the pixels under its outline (their median relative luminance) is at least
:data:`OUTLINE_MIN_CONTRAST`; otherwise the next palette colours are tried in order, then black and white,
and failing all of them the one with the best contrast is taken. A tag is filled with its mark's colour
and its text is black or white, whichever contrasts more (always >= 4.58, above WCAG's 4.5).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.draw.render import dejavu

Color = tuple[int, int, int]

PALETTE: tuple[Color, ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
)
"""Mark colours by ``(id - 1) % 10`` (matplotlib's tab10; no pure red, which the DVOC crosshair uses)."""


@dataclass(frozen=True)
class Mark:
    """One numbered element on the marked screenshot."""

    id: int
    """Number drawn on the tag, 1-based, in descending detector score."""
    box: Box
    """Box in harness pixels (pixel centres at integers), within ``[0, W-1] x [0, H-1]``."""
    score: float
    """Detector score."""
    colour: Color
    """Outline and tag colour."""

    @property
    def centre(self) -> tuple[float, float]:
        """Where a click on this mark goes."""
        c = self.box.centre
        return c.x, c.y


@dataclass(frozen=True)
class MarkStyle:
    """Sizes of the marks for one screenshot size."""

    font_px: int
    """Tag font size (DejaVu Sans)."""
    line_px: int
    """Box outline width (drawn inward)."""
    pad_px: int
    """Padding between the tag's text and its rectangle."""


TagLayout = Literal["avoid", "spec"]
"""The values of ``detector.tag_layout``."""

TAG_LAYOUTS: tuple[str, ...] = ("avoid", "spec")

MIN_FONT_PX = 10
"""Smallest tag font the ``avoid`` layout shrinks to (DejaVu Sans digits stay legible)."""

OUTLINE_MIN_CONTRAST = 3.0
"""WCAG's minimum contrast for graphical objects, asked of an outline against the pixels under it."""

Rect = tuple[int, int, int, int]
"""Inclusive pixel rectangle ``(x0, y0, x1, y1)``."""


@dataclass(frozen=True)
class Tag:
    """Where one mark's number is drawn."""

    rect: Rect
    """Inclusive pixel rectangle of the filled tag."""
    font_px: int
    """Font size of its number."""
    pad_px: int
    """Padding between the number and the rectangle's edge."""
    overlaps: bool
    """It overlaps a tag placed before it (no free place was left)."""


@dataclass(frozen=True)
class MarkLayout:
    """The marks with their final colours and tags, ready to draw."""

    marks: tuple[Mark, ...]
    """The marks, with the contrast-checked outline colour."""
    tags: tuple[Tag, ...]
    """One tag per mark, same order."""
    mode: str
    """``avoid | spec``."""

    @property
    def tag_overlaps(self) -> int:
        """Tags that overlap an earlier tag."""
        return sum(t.overlaps for t in self.tags)


# ------------------------------------------------------------------------------------------- colour


def relative_luminance(rgb: Sequence[float] | np.ndarray) -> float | np.ndarray:
    """WCAG 2 relative luminance of sRGB values in 0..255 (works on arrays, last axis = RGB)."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    y = lin[..., 0] * 0.2126 + lin[..., 1] * 0.7152 + lin[..., 2] * 0.0722
    return float(y) if np.ndim(y) == 0 else y


def contrast_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """WCAG contrast ratio ``(L1 + 0.05) / (L2 + 0.05)`` of two sRGB colours (1 to 21)."""
    la, lb = float(relative_luminance(a)), float(relative_luminance(b))
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def _ratio_l(l1: float, l2: float) -> float:
    return (max(l1, l2) + 0.05) / (min(l1, l2) + 0.05)


def tag_text_colour(fill: Color) -> Color:
    """Black or white, whichever contrasts more with ``fill``."""
    return (
        (0, 0, 0)
        if contrast_ratio(fill, (0, 0, 0)) >= contrast_ratio(fill, (255, 255, 255))
        else (255, 255, 255)
    )


def _outline_luminance(lum: np.ndarray, r: Rect, line: int) -> float:
    """Median luminance of the pixels the outline ``r`` (``line`` px wide, inward) covers."""
    x0, y0, x1, y1 = r
    band = [
        lum[y0 : y0 + line, x0 : x1 + 1],
        lum[max(y1 - line + 1, y0) : y1 + 1, x0 : x1 + 1],
        lum[y0 : y1 + 1, x0 : x0 + line],
        lum[y0 : y1 + 1, max(x1 - line + 1, x0) : x1 + 1],
    ]
    vals = np.concatenate([b.ravel() for b in band if b.size])
    return float(np.median(vals)) if vals.size else 0.0


def outline_colour(first: int, palette: Sequence[Color], under_lum: float) -> Color:
    """The first colour from ``palette[first:] + palette[:first] + black, white`` whose contrast against a
    background of luminance ``under_lum`` is at least :data:`OUTLINE_MIN_CONTRAST`, else the best one."""
    order = [*palette[first:], *palette[:first], (0, 0, 0), (255, 255, 255)]
    ratios = [_ratio_l(float(relative_luminance(c)), under_lum) for c in order]
    for c, r in zip(order, ratios, strict=True):
        if r >= OUTLINE_MIN_CONTRAST:
            return c
    return order[int(np.argmax(ratios))]


# ------------------------------------------------------------------------------------------- geometry


def box_rect(mark: Mark) -> Rect:
    """The pixels inside a mark's box edges (what the outline is drawn on)."""
    b = mark.box
    x0, y0 = math.ceil(b.x0), math.ceil(b.y0)
    return x0, y0, max(math.floor(b.x1), x0), max(math.floor(b.y1), y0)


def _inter(a: Rect, b: Rect) -> int:
    w = min(a[2], b[2]) - max(a[0], b[0]) + 1
    h = min(a[3], b[3]) - max(a[1], b[1]) + 1
    return w * h if w > 0 and h > 0 else 0


def rects_overlap(a: Rect, b: Rect) -> bool:
    """The two inclusive rectangles share a pixel."""
    return _inter(a, b) > 0


def _grow(r: Rect, g: int) -> Rect:
    return r[0] - g, r[1] - g, r[2] + g, r[3] + g


def tag_size(text: str, font_px: int) -> tuple[int, int, int]:
    """``(width, height, pad)`` of a tag holding ``text`` at ``font_px``."""
    pad = max(1, round(font_px / 6))
    left, top, right, bottom = dejavu(font_px).getbbox(text)
    return int(right - left) + 2 * pad, int(bottom - top) + 2 * pad, pad  # FreeType's box is in whole pixels


def spec_position(box: Rect, tw: int, th: int, size: Size) -> tuple[int, int]:
    """The seed's place: just above the top-left corner, inside it at the top edge, never off the sides."""
    x = min(max(box[0], 0), max(size.width - tw, 0))
    y = box[1] - th
    if y < 0:
        y = max(box[1], 0)
    return x, y


def candidates(box: Rect, tw: int, th: int, size: Size) -> list[Rect]:
    """Tag rectangles around ``box``, the seed's first, each kept inside the image, duplicates dropped."""
    x0, y0, x1, y1 = box
    pts = [spec_position(box, tw, th, size)]
    pts += [
        (x1 - tw + 1, y0 - th),  # above, right-aligned
        (x0, y0),  # inside the top-left corner
        (x0 - tw, y0),  # left of the box, top-aligned
        (x1 + 1, y0),  # right of the box, top-aligned
        (x0, y1 + 1),  # below the bottom-left corner
        (x1 - tw + 1, y1 + 1),  # below, right-aligned
        (x0 - tw, y1 - th + 1),  # left, bottom-aligned
        (x1 + 1, y1 - th + 1),  # right, bottom-aligned
        (x1 - tw + 1, y0),  # inside the top-right corner
        (x0, y1 - th + 1),  # inside the bottom-left corner
        (x1 - tw + 1, y1 - th + 1),  # inside the bottom-right corner
        (x0 - tw, y0 - th),  # diagonal, above-left
        (x1 + 1, y0 - th),  # diagonal, above-right
    ]
    step = max(tw // 2, 1)
    for k in range(1, 2 * max((x1 - x0 + 1) // tw, 0) + 1):  # slid along the top and bottom edges
        if x0 + k * step + tw - 1 > x1:
            break
        pts += [(x0 + k * step, y0 - th), (x0 + k * step, y1 + 1)]
    out: list[Rect] = []
    seen: set[Rect] = set()
    for x, y in pts:
        x = min(max(x, 0), max(size.width - tw, 0))
        y = min(max(y, 0), max(size.height - th, 0))
        r = (x, y, x + tw - 1, y + th - 1)
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


def ink_integral(lum: np.ndarray) -> np.ndarray:
    """Summed-area table of the screenshot's edge pixels (luminance step > 0.08 to the right or below)."""
    ink = np.zeros(lum.shape, dtype=np.int32)
    ink[:, :-1] |= np.abs(np.diff(lum, axis=1)) > 0.08
    ink[:-1, :] |= np.abs(np.diff(lum, axis=0)) > 0.08
    out = np.zeros((lum.shape[0] + 1, lum.shape[1] + 1), dtype=np.int64)
    out[1:, 1:] = ink.cumsum(axis=0).cumsum(axis=1)
    return out


def _ink(table: np.ndarray, r: Rect) -> int:
    """Ink pixels strictly inside ``r`` (its 1-px rim left out: an edge the tag merely touches, like its
    own box's, is no ink under it)."""
    x0, y0, x1, y1 = r[0] + 1, r[1] + 1, r[2] - 1, r[3] - 1
    if x0 > x1 or y0 > y1:
        return 0
    return int(table[y1 + 1, x1 + 1] - table[y0, x1 + 1] - table[y1 + 1, x0] + table[y0, x0])


def _place(
    box: Rect, tw: int, th: int, size: Size, placed: list[Rect], interiors: list[Rect], ink: np.ndarray
) -> tuple[Rect | None, Rect, int]:
    """``(free candidate or None, least-overlapping candidate, its overlap area)``."""
    best_free: tuple[int, int, int, Rect] | None = None
    best_any: tuple[int, int, int, Rect] | None = None
    for i, r in enumerate(candidates(box, tw, th, size)):
        g = _grow(r, 1)
        clash = sum(_inter(g, p) for p in placed)
        cover = sum(_inter(r, b) for b in interiors)
        key = (cover, _ink(ink, r), i)
        if clash == 0 and (best_free is None or key < best_free[:3]):
            best_free = (*key, r)
        if best_any is None or (clash, cover, i) < best_any[:3]:
            best_any = (clash, cover, i, r)
    assert best_any is not None
    return (best_free[3] if best_free else None), best_any[3], best_any[0]


def layout_marks(
    image: np.ndarray, marks: Sequence[Mark], style: MarkStyle, palette: Sequence[Color], mode: str = "avoid"
) -> MarkLayout:
    """Colours and tag places for ``marks`` on ``image`` (see the module docstring)."""
    if mode not in TAG_LAYOUTS:
        raise ValueError(f"tag layout must be one of {', '.join(TAG_LAYOUTS)}, got {mode!r}")
    h, w = image.shape[:2]
    size = Size(w, h)
    lum = relative_luminance(image)
    assert isinstance(lum, np.ndarray)  # an image's luminance is a map, not one value
    ink = ink_integral(lum)
    boxes = [box_rect(m) for m in marks]
    line = style.line_px
    interiors = [(b[0] + line, b[1] + line, b[2] - line, b[3] - line) for b in boxes]
    interiors = [r for r in interiors if r[0] <= r[2] and r[1] <= r[3]]
    coloured: list[Mark] = []
    for m, b in zip(marks, boxes, strict=True):
        first = palette.index(m.colour) if m.colour in palette else 0
        rect = (min(b[0], w - 1), min(b[1], h - 1), min(b[2], w - 1), min(b[3], h - 1))
        colour = outline_colour(first, palette, _outline_luminance(lum, rect, line))
        coloured.append(dataclasses.replace(m, colour=colour))
    tags: list[Tag] = []
    placed: list[Rect] = []
    for m, b in zip(coloured, boxes, strict=True):
        text = str(m.id)
        font = style.font_px
        tw, th, pad = tag_size(text, font)
        tag: Tag | None
        if mode == "spec":
            x, y = spec_position(b, tw, th, size)
            rect = (x, y, x + tw - 1, y + th - 1)
            tag = Tag(rect, font, pad, any(rects_overlap(rect, p) for p in placed))
        else:
            tag = None
            for f in range(font, min(font, MIN_FONT_PX) - 1, -1):
                tw, th, pad = tag_size(text, f)
                free, least, clash = _place(b, tw, th, size, placed, interiors, ink)
                if free is not None:
                    tag = Tag(free, f, pad, False)
                    break
            if tag is None:  # nowhere free even at the smallest size
                tag = Tag(least, f, pad, any(rects_overlap(least, p) for p in placed))
        tags.append(tag)
        placed.append(tag.rect)
    return MarkLayout(tuple(coloured), tuple(tags), mode)
