"""Points, offsets, boxes and coordinate frames.

Everything the harness stores is in *screenshot pixels* of the image the model saw. Models answer in
their own frame; the functions here convert between the two. All functions are pure.

Conversion rule for the normalised frames: a frame coordinate ``u`` maps to pixels as
``x_px = u * (W - 1) / scale`` (``scale`` = 1000 for ``norm1000``, 999 for ``norm999``, 1 for
``norm1``), so 0 is the first pixel column and ``scale`` the last one. Offsets are differences of two
points, so they use the same factor with no translation term: ``dx_px = du * (W - 1) / scale``.
``touch1000`` is the phone agent's touch frame (the Set-of-Mark seed's ``touch_gesture`` coordinates):
the same ``u * (W - 1) / 1000`` mapping, a pixel first clamped to ``[0, W - 1]``, and every number written
with one decimal (:func:`to_touch1000`), so 1000.0 is the last pixel and one decimal is a tenth of a unit
(at most 0.39 px of a 3840-pixel side).
(Gemini's and Qwen's documentation describe ``u * W / 1000``; the difference is ``u / scale`` pixels, at
most one, and the (W - 1) form keeps ``scale`` on the last pixel instead of one past it.) This is the
harness's own frame; a model config whose family maps ``u * W / scale`` declares ``coord_frame.mapping:
edge``. :func:`frame_factors` is the one conversion, both ways and for both mappings: the four functions
below take ``mapping=`` (``last_pixel`` by default), and :class:`dvoc_bench.core.frames.FrameRule` reads
answers through it, so what the harness writes to a model (its crosshair position, labels, history) and
what it reads back use the config's one rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import Literal, get_args

FrameName = Literal["pixel", "norm1000", "norm999", "norm1", "touch1000"]
"""The values of :class:`Frame`, for settings and model configs."""
NormMapping = Literal["last_pixel", "edge"]
"""How a normalised ``u`` in 0–``top`` becomes a pixel: ``u * (W - 1) / top`` or ``u * W / top``."""
NORM_MAPPINGS: tuple[str, ...] = get_args(NormMapping)


class Frame(StrEnum):
    """The coordinate convention a model answers in."""

    PIXEL = "pixel"
    NORM1000 = "norm1000"
    NORM999 = "norm999"
    NORM1 = "norm1"
    TOUCH1000 = "touch1000"

    @property
    def scale(self) -> float | None:
        """Full-scale value of the normalised frame, ``None`` for pixels."""
        return {
            Frame.PIXEL: None,
            Frame.NORM1000: 1000.0,
            Frame.NORM999: 999.0,
            Frame.NORM1: 1.0,
            Frame.TOUCH1000: 1000.0,
        }[self]


@dataclass(frozen=True, slots=True)
class Point:
    """An absolute position."""

    x: float
    """Horizontal coordinate, growing to the right."""
    y: float
    """Vertical coordinate, growing downward."""

    def __add__(self, other: Offset) -> Point:
        return Point(self.x + other.dx, self.y + other.dy)

    def __sub__(self, other: Point) -> Offset:
        return Offset(self.x - other.x, self.y - other.y)

    def dist(self, other: Point) -> float:
        """Euclidean distance to another point."""
        return math.hypot(self.x - other.x, self.y - other.y)

    def as_list(self) -> list[float]:
        return [self.x, self.y]


@dataclass(frozen=True, slots=True)
class Offset:
    """A displacement between two points."""

    dx: float
    """Horizontal component, positive = right."""
    dy: float
    """Vertical component, positive = down."""

    @property
    def magnitude(self) -> float:
        return math.hypot(self.dx, self.dy)

    def scaled(self, k: float) -> Offset:
        return Offset(self.dx * k, self.dy * k)

    def as_list(self) -> list[float]:
        return [self.dx, self.dy]


@dataclass(frozen=True, slots=True)
class Size:
    """Image size in pixels."""

    width: int
    """Width in pixels."""
    height: int
    """Height in pixels."""

    @property
    def centre(self) -> Point:
        """The pixel centre of the image, ``((W-1)/2, (H-1)/2)``."""
        return Point((self.width - 1) / 2, (self.height - 1) / 2)

    def as_list(self) -> list[int]:
        return [self.width, self.height]


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box in pixels, edges inclusive (a drawn rectangle covers x0..x1)."""

    x0: float
    """Left edge."""
    y0: float
    """Top edge."""
    x1: float
    """Right edge (>= x0)."""
    y1: float
    """Bottom edge (>= y0)."""

    @property
    def w(self) -> float:
        return self.x1 - self.x0

    @property
    def h(self) -> float:
        return self.y1 - self.y0

    @property
    def centre(self) -> Point:
        return Point((self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2)

    @property
    def area(self) -> float:
        return max(self.w, 0.0) * max(self.h, 0.0)

    def contains(self, p: Point) -> bool:
        """True when ``p`` lies inside the box or on its edge."""
        return self.x0 <= p.x <= self.x1 and self.y0 <= p.y <= self.y1

    def as_list(self) -> list[float]:
        return [self.x0, self.y0, self.x1, self.y1]

    @classmethod
    def from_list(cls, v: list[float] | tuple[float, ...]) -> Box:
        x0, y0, x1, y1 = (float(a) for a in v)
        return cls(x0, y0, x1, y1)


def span_distance(b: Box, p: Point) -> tuple[float, float]:
    """Distance from ``p`` to the box's x span and to its y span (0 within)."""
    return max(b.x0 - p.x, 0.0, p.x - b.x1), max(b.y0 - p.y, 0.0, p.y - b.y1)


def box_distance(b: Box, p: Point) -> float:
    """Distance from ``p`` to the box (0 inside)."""
    return math.hypot(*span_distance(b, p))


def box_iou(a: Box, b: Box) -> float:
    """Intersection over union of two continuous boxes (0 when they only touch or either is empty)."""
    iw = min(a.x1, b.x1) - max(a.x0, b.x0)
    ih = min(a.y1, b.y1) - max(a.y0, b.y0)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = a.w * a.h + b.w * b.h - inter
    return inter / union if union > 0 else 0.0


def paper_hit_radius(box: Box, minimum: float = 30.0) -> float:
    """The authors' success radius ``max(w/2, h/2, 30)`` around the box centre."""
    return max(box.w / 2, box.h / 2, minimum)


def frame_factors(frame: Frame | str, size: Size, mapping: NormMapping = "last_pixel") -> tuple[float, float]:
    """Pixels per frame unit along x and y: 1 for pixels; ``(W - 1) / scale`` (``last_pixel``) or
    ``W / scale`` (``edge``) for the normalised frames. The one conversion factor of the package."""
    scale = Frame(frame).scale
    if scale is None:
        return 1.0, 1.0
    if mapping == "edge" and Frame(frame) is Frame.TOUCH1000:
        raise ValueError("touch1000 is pixel / (size - 1) * 1000: its mapping is last_pixel")
    if mapping == "edge":
        return size.width / scale, size.height / scale
    if mapping != "last_pixel":
        raise ValueError(f"unknown mapping {mapping!r}; allowed: {', '.join(NORM_MAPPINGS)}")
    return (size.width - 1) / scale, (size.height - 1) / scale


def point_to_pixels(p: Point, frame: Frame, size: Size, mapping: NormMapping = "last_pixel") -> Point:
    """Convert an absolute point given in ``frame`` to pixels of an image of ``size``."""
    fx, fy = frame_factors(frame, size, mapping)
    return Point(p.x * fx, p.y * fy)


def point_from_pixels(p: Point, frame: Frame, size: Size, mapping: NormMapping = "last_pixel") -> Point:
    """Convert a pixel point to ``frame`` (inverse of :func:`point_to_pixels`)."""
    fx, fy = frame_factors(frame, size, mapping)
    return Point(p.x / fx, p.y / fy)


def offset_to_pixels(o: Offset, frame: Frame, size: Size, mapping: NormMapping = "last_pixel") -> Offset:
    """Convert an offset given in ``frame`` to pixels (same factor as points, no translation)."""
    fx, fy = frame_factors(frame, size, mapping)
    return Offset(o.dx * fx, o.dy * fy)


def offset_from_pixels(o: Offset, frame: Frame, size: Size, mapping: NormMapping = "last_pixel") -> Offset:
    """Convert a pixel offset to ``frame``."""
    fx, fy = frame_factors(frame, size, mapping)
    return Offset(o.dx / fx, o.dy / fy)


TOUCH_DECIMALS = 1
"""Digits after the point of a ``touch1000`` number (the seed's "one decimal")."""


def round_half_up(v: float, decimals: int) -> float:
    """``v`` rounded to ``decimals`` digits, halves away from zero on the decimal value written (Python's
    ``round`` works on the binary float: ``round(0.25, 1) == 0.2``)."""
    q = Decimal(1).scaleb(-decimals)
    return float(Decimal(repr(float(v))).quantize(q, rounding=ROUND_HALF_UP)) + 0.0


def to_touch1000(p: Point, size: Size) -> Point:
    """A pixel point in touch coordinates, as the phone agent reports them: each axis clamped to
    ``[0, size - 1]``, then ``pixel / (size - 1) * 1000``, one decimal (half up)."""
    c = clamp_point(p, size)
    fx, fy = frame_factors(Frame.TOUCH1000, size)
    return Point(round_half_up(c.x / fx, TOUCH_DECIMALS), round_half_up(c.y / fy, TOUCH_DECIMALS))


def from_touch1000(t: Point, size: Size) -> Point:
    """A touch point in pixels, ``t * (size - 1) / 1000`` (the inverse of :func:`to_touch1000` within
    half a tenth of a unit, ``(size - 1) / 20000`` px)."""
    return point_to_pixels(t, Frame.TOUCH1000, size)


def clamp_point(p: Point, size: Size) -> Point:
    """Clamp a point to the image, ``[0, W-1] x [0, H-1]``."""
    return Point(min(max(p.x, 0.0), size.width - 1.0), min(max(p.y, 0.0), size.height - 1.0))


def finite_numbers(v: object, n: int) -> list[float] | None:
    """``v`` as ``n`` finite floats (a box, a size read from a file), or ``None`` when it is anything else."""
    if not isinstance(v, list | tuple) or len(v) != n:
        return None
    try:
        out = [float(x) for x in v]
    except (TypeError, ValueError):
        return None
    return out if all(math.isfinite(x) for x in out) else None
