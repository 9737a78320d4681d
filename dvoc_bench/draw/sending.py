"""What a model is sent: the one place the harness crops and resizes a screenshot, and the exact maps
between the pixels of the screenshot and the pixels of the image sent (docs/zoom.md).

A :class:`View` is a rectangle of the screenshot (``crop``: the whole screen, or a zoom window), and the
size it is sent at (``sent``): the crop downscaled to the model's input limit (``image.max_side`` and
``image.max_pixels`` of its config; never upscaled). Every coordinate a model reads or writes (the prompt's
image size, the drawn crosshair, its labels, the history, the answer in ``pixel`` / ``norm1000`` /
``norm1``) is in the sent image; the harness converts answers with :meth:`View.to_original` before scoring.

The map is the plain affine one of the resize, per axis: ``sent = (x - crop.x0) * sx`` with
``sx = sent.width / crop.w`` (the simulator scales its truth the same way), and exactly its inverse
``x = crop.x0 + sent / sx``. It is the identity for an uncropped screenshot sent as it is, so runs
without a limit keep their records bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.core.geometry import Box, Offset, Point, Size

__all__ = ["View", "model_view", "resize_image", "sent_size", "view_of", "zoom_window"]


def sent_size(size: Size, max_side: int | None = None, max_pixels: int | None = None) -> Size:
    """The size an image of ``size`` is sent at: the largest aspect-keeping downscale with the longer side at
    most ``max_side`` and at most ``max_pixels`` pixels (``None``: no limit); ``size`` itself when it fits
    (never upscaled)."""
    w, h = size.width, size.height
    s = 1.0
    if max_side is not None and max(w, h) > max_side:
        s = max_side / max(w, h)
    if max_pixels is not None and w * h * s * s > max_pixels:
        s = math.sqrt(max_pixels / (w * h))
    if s >= 1.0:
        return size
    sw, sh = max(1, round(w * s)), max(1, round(h * s))
    while max_pixels is not None and sw * sh > max_pixels and max(sw, sh) > 1:  # rounding up overshot
        s *= 1 - 1e-4
        sw, sh = max(1, round(w * s)), max(1, round(h * s))
    return Size(sw, sh)


@dataclass(frozen=True)
class View:
    """A rectangle of the screenshot and the size it is sent at; the maps between the two pixel grids."""

    crop: Box
    """The part of the screenshot shown, in its pixels (integer edges; the whole screen when not zoomed)."""
    sent: Size
    """Pixel size of the image sent."""
    full: Size
    """Size of the whole screenshot."""

    @property
    def sx(self) -> float:
        """Sent pixels per screenshot pixel, horizontally."""
        return self.sent.width / self.crop.w

    @property
    def sy(self) -> float:
        """Sent pixels per screenshot pixel, vertically."""
        return self.sent.height / self.crop.h

    @property
    def cropped(self) -> bool:
        """True when only part of the screenshot is shown."""
        return self.crop != Box(0, 0, self.full.width, self.full.height)

    @property
    def resized(self) -> bool:
        """True when the image sent is not the crop's own pixels."""
        return (self.sent.width, self.sent.height) != (int(self.crop.w), int(self.crop.h))

    @property
    def identity(self) -> bool:
        """True for the whole screenshot sent as it is."""
        return not self.cropped and not self.resized

    def to_sent(self, p: Point) -> Point:
        """A screenshot point in pixels of the image sent."""
        if self.identity:
            return p
        return Point((p.x - self.crop.x0) * self.sx, (p.y - self.crop.y0) * self.sy)

    def to_original(self, q: Point) -> Point:
        """A point of the image sent in screenshot pixels (exact inverse of :meth:`to_sent`)."""
        if self.identity:
            return q
        return Point(self.crop.x0 + q.x / self.sx, self.crop.y0 + q.y / self.sy)

    def box_to_sent(self, b: Box) -> Box:
        """A screenshot box in pixels of the image sent."""
        lo, hi = self.to_sent(Point(b.x0, b.y0)), self.to_sent(Point(b.x1, b.y1))
        return Box(lo.x, lo.y, hi.x, hi.y)

    def offset_to_sent(self, o: Offset) -> Offset:
        """A screenshot offset in pixels of the image sent."""
        return o if self.identity else Offset(o.dx * self.sx, o.dy * self.sy)

    def offset_to_original(self, o: Offset) -> Offset:
        """An offset in the image sent in screenshot pixels."""
        return o if self.identity else Offset(o.dx / self.sx, o.dy / self.sy)

    def crop_list(self) -> list[int] | None:
        """``[x0, y0, x1, y1]`` of the crop for records and requests; ``None`` for the whole screen."""
        return [int(v) for v in self.crop.as_list()] if self.cropped else None


def view_of(
    full: Size, crop: Box | None = None, max_side: int | None = None, max_pixels: int | None = None
) -> View:
    """The view of ``crop`` (default: the whole screenshot) sent within the limits."""
    crop = crop or Box(0, 0, full.width, full.height)
    return View(crop, sent_size(Size(int(crop.w), int(crop.h)), max_side, max_pixels), full)


def model_view(
    full: Size,
    crop: Box | None = None,
    max_side: int | None = None,
    max_pixels: int | None = None,
    rule: FrameRule | None = None,
) -> View:
    """The view of ``crop`` sent at the size the model sees it: within the input limits, then through the
    model's declared resize (``coord_frame.resize``: the processor's ``smart_resize``, which may also
    upscale a little, a provider's downscale cap, or ``downscale_pad``'s area cap, whose padding moves no
    pixel), so that the image sent is the image seen and the
    model's pixels are the pixels of the image sent (docs/frames.md). The sweep, the zoom crops and
    ``python -m dvoc_bench.coords`` all size images here."""
    v = view_of(full, crop, max_side, max_pixels)
    if rule is None or rule.resize == "none":
        return v
    return View(v.crop, rule.seen(v.sent), full)


def resize_image(image: np.ndarray, view: View) -> np.ndarray:
    """The pixels of ``view``: the crop of the screenshot ``image``, resized (Lanczos) to ``view.sent``.
    The screenshot itself (no copy) for an identity view."""
    if view.identity:
        return image
    x0, y0, x1, y1 = (int(v) for v in view.crop.as_list())
    part = image[y0:y1, x0:x1]
    if not view.resized:
        return np.ascontiguousarray(part)
    from PIL import Image

    small = Image.fromarray(np.ascontiguousarray(part)).resize(
        (view.sent.width, view.sent.height), Image.Resampling.LANCZOS
    )
    return np.asarray(small, dtype=np.uint8)


def zoom_window(centre: Point, prev: Box, full: Size, factor: float, min_crop: int) -> Box:
    """The next zoom crop: ``prev``'s size divided by ``factor`` (aspect kept; the shorter side at least
    ``min_crop`` and at most the screen's), centred on ``centre`` and shifted to lie inside the screen.
    Integer edges."""
    w, h = prev.w / factor, prev.h / factor
    short = min(w, h)
    if short < min_crop:
        w, h = w * min_crop / short, h * min_crop / short
    w, h = min(round(w), full.width), min(round(h), full.height)
    x0 = min(max(round(centre.x - w / 2), 0), full.width - w)
    y0 = min(max(round(centre.y - h / 2), 0), full.height - h)
    return Box(x0, y0, x0 + w, y0 + h)
