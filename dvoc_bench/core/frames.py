"""A model's answer frame, declared in full: the units of its numbers, their axis order and the resize
between the image the harness sends and the image the model answers about (docs/frames.md).

A model config writes it as ``coord_frame:``, either one word (``pixel``, ``norm1000``, ``norm999``,
``norm1``: the units, axes x-y, no resize) or a mapping of :class:`FrameRule`. Everything here is pure.

Resize rules (the size the model sees, given the size of the image sent):

- ``none``: the image sent is the image seen.
- ``smart_resize``: the Qwen-VL processor's rule (``qwen_vl_utils.smart_resize``, also in
  ``transformers``' Qwen2-VL image processor): each side rounded to a multiple of ``factor``; when the area
  is above ``max_pixels`` (below ``min_pixels``) both sides are scaled by ``sqrt(area / max_pixels)``
  (``sqrt(min_pixels / area)``) and floored (ceiled) to a multiple of ``factor``. Reproduced here because
  ``qwen-vl-utils`` imports torch and torchvision at import time; checked against the published examples
  in ``tests/test_frames.py``.
- ``downscale``: a provider's server-side cap (Claude): the largest aspect-keeping downscale with the long
  edge at most ``max_long_edge`` and the area at most ``max_pixels``; never upscaled.

The harness sends every image already at the size the model sees (:func:`dvoc_bench.draw.sending.model_view`),
so the pixels of an answer are pixels of the image sent and map back to the screenshot through the resize.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

from pydantic import model_validator

from dvoc_bench.core.declare import Declared, PosInt
from dvoc_bench.core.geometry import Frame, FrameName, Size
from dvoc_bench.core.records import AnswerKind

Axes = Literal["xy", "yx"]
"""Order of the two numbers of a point as the model writes them: ``xy`` (x first) or ``yx`` (Gemini)."""
ResizeRule = Literal["none", "smart_resize", "downscale"]
"""How the image sent becomes the image the model sees."""
RESIZE_RULES: tuple[str, ...] = get_args(ResizeRule)

PromptStyle = Literal[
    "tool_call",
    "qwen25vl",
    "qwen3vl",
    "uitars15",
    "gemini_point",
    "claude",
    "glm",
    "seeclick",
    "showui",
    "pyautogui",
    "openai_cua",
    "holo",
    "osatlas",
    "maiui",
]
"""How a one-shot grounding request is asked and its reply read (:mod:`dvoc_bench.protocol.native`):
``tool_call`` (the harness's ``click_at`` tool, the default) or a family's own format."""
PROMPT_STYLES: tuple[str, ...] = get_args(PromptStyle)

SMART_MIN_TOKENS = 4
"""``qwen_vl_utils`` default ``min_pixels = 4 * factor**2``."""
SMART_MAX_TOKENS = 16384
"""``qwen_vl_utils`` default ``max_pixels = 16384 * factor**2``."""


def smart_resize(
    size: Size, factor: int, min_pixels: int | None = None, max_pixels: int | None = None
) -> Size:
    """The size the Qwen-VL processor resizes an image of ``size`` to (``qwen_vl_utils.smart_resize``;
    defaults ``min_pixels = 4 f²``, ``max_pixels = 16384 f²``). E.g. 1280×720 at factor 28 → 1288×728."""
    lo = SMART_MIN_TOKENS * factor**2 if min_pixels is None else min_pixels
    hi = SMART_MAX_TOKENS * factor**2 if max_pixels is None else max_pixels
    w, h = size.width, size.height
    hb = max(factor, round(h / factor) * factor)
    wb = max(factor, round(w / factor) * factor)
    if hb * wb > hi:
        beta = math.sqrt(h * w / hi)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < lo:
        beta = math.sqrt(lo / (h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    return Size(wb, hb)


def downscale(size: Size, max_long_edge: int | None, max_pixels: int | None) -> Size:
    """The largest aspect-keeping downscale of ``size`` within both caps (``None``: no cap); never up."""
    w, h = size.width, size.height
    s = 1.0
    if max_long_edge is not None and max(w, h) > max_long_edge:
        s = max_long_edge / max(w, h)
    if max_pixels is not None and w * h * s * s > max_pixels:
        s = math.sqrt(max_pixels / (w * h))
    if s >= 1.0:
        return size
    sw, sh = max(1, math.floor(w * s)), max(1, math.floor(h * s))
    return Size(sw, sh)


class FrameRule(Declared):
    """``coord_frame:`` written as a mapping: a model's answer frame in full."""

    units: FrameName = "pixel"
    """``pixel`` (pixels of the image the model sees), ``norm1000`` (0–1000), ``norm999`` (0–999),
    ``norm1`` (0–1)."""
    axes: Axes = "xy"
    """Order of a point's two numbers in the model's own format: ``xy`` or ``yx`` (Gemini's ``[y, x]``).
    Named fields (``x=``, ``"x":``) are read by name whatever this says."""
    resize: ResizeRule = "none"
    """``none``, ``smart_resize`` (the Qwen-VL processor) or ``downscale`` (a provider's server-side cap)."""
    factor: PosInt | None = None
    """``smart_resize``: sides are multiples of this (28 for Qwen2/2.5-VL and UI-TARS, 32 for Qwen3-VL)."""
    min_pixels: PosInt | None = None
    """``smart_resize``: least area (default ``4 * factor**2``)."""
    max_pixels: PosInt | None = None
    """``smart_resize``: most area (default ``16384 * factor**2``); ``downscale``: the area cap."""
    max_long_edge: PosInt | None = None
    """``downscale``: the long-edge cap, pixels."""
    source: str = ""
    """Where the rule is published (documentation page, issue, source file)."""

    @model_validator(mode="after")
    def _parameters_fit_the_rule(self) -> FrameRule:
        if self.resize == "smart_resize" and self.factor is None:
            raise ValueError("factor: required with resize: smart_resize")
        if self.resize != "smart_resize":
            for key in ("factor", "min_pixels"):
                if getattr(self, key) is not None:
                    raise ValueError(f"{key}: only with resize: smart_resize")
        if self.resize == "none" and self.max_pixels is not None:
            raise ValueError("max_pixels: only with resize: smart_resize or downscale")
        if self.resize == "none" and self.max_long_edge is not None:
            raise ValueError("max_long_edge: only with resize: downscale")
        if self.resize == "downscale" and self.max_pixels is None and self.max_long_edge is None:
            raise ValueError("max_long_edge: downscale needs max_long_edge or max_pixels")
        if self.resize == "smart_resize" and self.max_long_edge is not None:
            raise ValueError("max_long_edge: only with resize: downscale")
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            raise ValueError("min_pixels: above max_pixels")
        return self

    def seen(self, sent: Size) -> Size:
        """The size the model sees an image of size ``sent`` at."""
        if self.resize == "smart_resize":
            assert self.factor is not None
            return smart_resize(sent, self.factor, self.min_pixels, self.max_pixels)
        if self.resize == "downscale":
            return downscale(sent, self.max_long_edge, self.max_pixels)
        return sent

    def describe(self) -> str:
        """The rule in one line, as recorded in a step's ``frame_rule``: units, axes, resize."""
        head = f"{self.units} {self.axes[0]}-{self.axes[1]}"
        if self.resize == "smart_resize":
            f = self.factor or 0
            lo = self.min_pixels or SMART_MIN_TOKENS * f * f
            hi = self.max_pixels or SMART_MAX_TOKENS * f * f
            return f"{head}, smart_resize(factor={f}, min_pixels={lo}, max_pixels={hi})"
        if self.resize == "downscale":
            return f"{head}, downscale(max_long_edge={self.max_long_edge}, max_pixels={self.max_pixels})"
        return head

    def in_range(self, x: float, y: float, seen: Size) -> bool:
        """True when ``(x, y)`` (in :attr:`units`) lies inside the frame: ``[0, W] × [0, H]`` of the image
        seen for pixels, ``[0, scale]`` on both axes for the normalised units."""
        scale = Frame(self.units).scale
        xm, ym = (seen.width, seen.height) if scale is None else (scale, scale)
        return 0.0 <= x <= xm and 0.0 <= y <= ym

    def offset_in_range(self, dx: float, dy: float, seen: Size) -> bool:
        """True when the offset ``(dx, dy)`` (in :attr:`units`) can join two points of the frame:
        ``|dx| <= W``, ``|dy| <= H`` pixels of the image seen; ``|d| <= scale`` for the normalised units
        (1000 for ``norm1000``, 1 for ``norm1``). Whether the draft plus the offset stays on the image is the
        loop's business (it clamps its step), not the frame's."""
        scale = Frame(self.units).scale
        xm, ym = (seen.width, seen.height) if scale is None else (scale, scale)
        return abs(dx) <= xm and abs(dy) <= ym

    def range_words(self, seen: Size, kind: AnswerKind = "point") -> str:
        """The declared range in words, for a step's ``parse_detail``: ``0-1000``, ``1288x728 px``; an
        offset's as ``|d| <= 1000``, ``|dx| <= 1288, |dy| <= 728 px``."""
        scale = Frame(self.units).scale
        if kind == "offset":
            return f"|dx| <= {seen.width}, |dy| <= {seen.height} px" if scale is None else f"|d| <= {scale:g}"
        return f"{seen.width}x{seen.height} px" if scale is None else f"0-{scale:g}"


def frame_rule_of(coord_frame: str) -> FrameRule:
    """The rule a one-word ``coord_frame`` means: those units, x-y, no resize."""
    return FrameRule(units=coord_frame)
