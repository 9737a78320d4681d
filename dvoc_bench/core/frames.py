"""A model's answer frame, declared in full: the units of its numbers, their axis order and the resize
between the image the harness sends and the image the model answers about (docs/frames.md).

A model config writes it as ``coord_frame:``, either one word (``pixel``, ``norm1000``, ``norm999``,
``norm1``, ``touch1000``: the units, axes x-y, no resize) or a mapping of :class:`FrameRule`. Everything
here is pure.

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
- ``downscale_pad``: an area cap, then padding (TianXi-Action): the image is downscaled as ``downscale``
  does to at most ``max_pixels``, then pasted at the top-left of a canvas whose sides are the next multiple
  of ``factor``. The model's pixels are those of the downscaled image (the padding only adds room at the
  right and bottom), so the image seen is the downscaled one and an answer on the padding is in frame.

Mapping (``mapping``): how a normalised answer ``u`` (0–``top``) becomes a pixel of the image seen:
``edge`` is ``u * W / top`` (``top`` is the right edge: the families' own code and the field's harnesses),
``last_pixel`` is ``u * (W - 1) / top`` (``top`` is the last pixel column: this project's first rule,
kept for the harness's own tool-call prompt, which the authors' records and the simulator's calibration
were read with). ``rounding`` then rounds (or floors) the pixel, as a family's code may.

The harness sends every image already at the size the model sees (:func:`dvoc_bench.draw.sending.model_view`),
so the pixels of an answer are pixels of the image sent and map back to the screenshot through the resize.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

from pydantic import model_validator

from dvoc_bench.core.declare import Declared, PosInt
from dvoc_bench.core.geometry import Frame, FrameName, NormMapping, Offset, Point, Size, frame_factors
from dvoc_bench.core.records import AnswerKind

Axes = Literal["xy", "yx"]
"""Order of the two numbers of a point as the model writes them: ``xy`` (x first) or ``yx`` (Gemini)."""
ResizeRule = Literal["none", "smart_resize", "downscale", "downscale_pad"]
"""How the image sent becomes the image the model sees."""
RESIZE_RULES: tuple[str, ...] = get_args(ResizeRule)
Rounding = Literal["none", "round", "floor"]
"""What a family's code does to the pixel it computes: keep it, round it (half to even, Python's
``round``) or floor it (``int()`` of a positive number)."""

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
    "free_text",
]
"""How a one-shot grounding request is asked and its reply read (:mod:`dvoc_bench.protocol.native`):
``tool_call`` (the harness's ``click_at`` tool, the default) or a family's own format."""
PROMPT_STYLES: tuple[str, ...] = get_args(PromptStyle)

FORMS: dict[str, tuple[str, ...]] = {
    "tool_call": ("`click_at` tool call", "`click_at(x, y)` / JSON `x`, `y` in text"),
    "qwen25vl": (
        "`point_2d` / `bbox_2d` JSON",
        "`computer_use` / `left_click` tool call `coordinate`",
        "box tokens",
    ),
    "qwen3vl": (
        "`point_2d` / `bbox_2d` JSON",
        "`computer_use` / `left_click` tool call `coordinate`",
        "box tokens",
    ),
    "uitars15": ("`click(start_box='(x,y)')`", "`<point>x y</point>`", "box tokens", "`pyautogui.click`"),
    "gemini_point": ('`[{"point": [y, x]}]`', "`box_2d`"),
    "claude": ("`pyautogui.click(x=, y=)`", '`"coordinate": [x, y]`'),
    "glm": ("`<|begin_of_box|>[x, y]<|end_of_box|>`",),
    "seeclick": ("bare `[x, y]` / `(x, y)`", "a box"),
    "showui": ("bare `[x, y]` / `(x, y)`", "a box"),
    "pyautogui": ("`pyautogui.click(x=, y=)`", '`"coordinate": [x, y]`'),
    "openai_cua": ('`{"type": "click", "x", "y"}`',),
    "holo": ('JSON `{"x", "y"}`',),
    "osatlas": (
        "box tokens `<|box_start|>(x1,y1),(x2,y2)<|box_end|>`",
        "`(x1,y1),(x2,y2)` tokens stripped",
        "bare `(x, y)`",
    ),
    "maiui": ('`<answer>{"coordinate": [x, y]}</answer>`', "navigation `<tool_call>` `coordinate`"),
    "free_text": ("`x=…, y=…`", "`(x, y)` / `[x, y]` in prose", "`(x1,y1),(x2,y2)`"),
}
"""The answer forms each prompt style's reader takes (:mod:`dvoc_bench.protocol.native`; docs/frames.md's
table generates from it), a refusal besides."""

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


def pad_to(size: Size, factor: int) -> Size:
    """``size`` with each side raised to the next multiple of ``factor`` (the canvas of ``downscale_pad``)."""
    return Size(math.ceil(size.width / factor) * factor, math.ceil(size.height / factor) * factor)


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
    ``norm1`` (0–1), ``touch1000`` (a phone agent's touch coordinates: ``pixel / (size - 1) * 1000``, one
    decimal)."""
    axes: Axes = "xy"
    """Order of a point's two numbers in the model's own format: ``xy`` or ``yx`` (Gemini's ``[y, x]``).
    Named fields (``x=``, ``"x":``) are read by name whatever this says."""
    resize: ResizeRule = "none"
    """``none``, ``smart_resize`` (the Qwen-VL processor), ``downscale`` (a provider's server-side cap) or
    ``downscale_pad`` (an area cap, then padding to a multiple of ``factor``)."""
    factor: PosInt | None = None
    """``smart_resize``: sides are multiples of this (28 for Qwen2/2.5-VL and UI-TARS, 32 for Qwen3-VL);
    ``downscale_pad``: the canvas's sides are padded to multiples of this."""
    min_pixels: PosInt | None = None
    """``smart_resize``: least area (default ``4 * factor**2``)."""
    max_pixels: PosInt | None = None
    """``smart_resize``: most area (default ``16384 * factor**2``); ``downscale``, ``downscale_pad``: the
    area cap."""
    max_long_edge: PosInt | None = None
    """``downscale``: the long-edge cap, pixels."""
    mapping: NormMapping = "last_pixel"
    """A normalised answer ``u`` as a pixel: ``edge`` = ``u * W / top`` (what the families' code and the
    field's harnesses do), ``last_pixel`` = ``u * (W - 1) / top`` (the harness's own tool-call frame, the
    default). No effect on ``pixel`` units."""
    rounding: Rounding = "none"
    """What the family's code does to the pixel it computes from a normalised answer: ``none``, ``round``
    or ``floor``."""
    source: str = ""
    """Where the rule is published (documentation page, issue, source file)."""
    mapping_source: str = ""
    """Where the ``mapping`` (and ``rounding``) is published: the family's code that turns its numbers into
    pixels."""

    @model_validator(mode="after")
    def _parameters_fit_the_rule(self) -> FrameRule:
        if self.resize in ("smart_resize", "downscale_pad") and self.factor is None:
            raise ValueError(f"factor: required with resize: {self.resize}")
        if self.resize == "downscale_pad" and self.max_pixels is None:
            raise ValueError("max_pixels: required with resize: downscale_pad")
        if self.resize != "smart_resize" and self.min_pixels is not None:
            raise ValueError("min_pixels: only with resize: smart_resize")
        if self.resize not in ("smart_resize", "downscale_pad") and self.factor is not None:
            raise ValueError("factor: only with resize: smart_resize or downscale_pad")
        if self.resize == "none" and self.max_pixels is not None:
            raise ValueError("max_pixels: only with resize: smart_resize or downscale")
        if self.resize == "none" and self.max_long_edge is not None:
            raise ValueError("max_long_edge: only with resize: downscale")
        if self.resize == "downscale" and self.max_pixels is None and self.max_long_edge is None:
            raise ValueError("max_long_edge: downscale needs max_long_edge or max_pixels")
        if self.resize in ("smart_resize", "downscale_pad") and self.max_long_edge is not None:
            raise ValueError("max_long_edge: only with resize: downscale")
        if self.units == "touch1000" and self.mapping != "last_pixel":
            raise ValueError("mapping: touch1000 is pixel / (size - 1) * 1000, mapping last_pixel only")
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            raise ValueError("min_pixels: above max_pixels")
        return self

    def seen(self, sent: Size) -> Size:
        """The size the model sees an image of size ``sent`` at."""
        if self.resize == "smart_resize":
            assert self.factor is not None
            return smart_resize(sent, self.factor, self.min_pixels, self.max_pixels)
        if self.resize in ("downscale", "downscale_pad"):
            return downscale(sent, self.max_long_edge, self.max_pixels)
        return sent

    def canvas(self, seen: Size) -> Size:
        """The size of the canvas the model's pixels range over: ``seen`` itself, or padded to multiples of
        ``factor`` under ``downscale_pad``."""
        if self.resize == "downscale_pad":
            assert self.factor is not None
            return pad_to(seen, self.factor)
        return seen

    def _factors(self, seen: Size) -> tuple[float, float]:
        """Pixels of the image seen per answer unit, along x and y (1 for ``pixel``): the package's one
        conversion, :func:`dvoc_bench.core.geometry.frame_factors`, with this rule's mapping."""
        return frame_factors(self.units, seen, self.mapping)

    def _rounded(self, v: float) -> float:
        if self.rounding == "round":
            return float(round(v))
        if self.rounding == "floor":
            return float(math.floor(v))
        return v

    def to_pixels(self, x: float, y: float, seen: Size) -> Point:
        """An answer point ``(x, y)`` (in :attr:`units`) in pixels of the image seen, by :attr:`mapping` and
        :attr:`rounding` (pixel units are taken as they are)."""
        if Frame(self.units).scale is None:
            return Point(x, y)
        fx, fy = self._factors(seen)
        return Point(self._rounded(x * fx), self._rounded(y * fy))

    def from_pixels(self, p: Point, seen: Size) -> Point:
        """A pixel of the image seen in :attr:`units` (the inverse of :meth:`to_pixels`, unrounded)."""
        fx, fy = self._factors(seen)
        return Point(p.x / fx, p.y / fy)

    def offset_from_pixels(self, o: Offset, seen: Size) -> Offset:
        """A pixel offset of the image seen in :attr:`units` (the inverse of :meth:`offset_to_pixels`)."""
        fx, fy = self._factors(seen)
        return Offset(o.dx / fx, o.dy / fy)

    def offset_to_pixels(self, dx: float, dy: float, seen: Size) -> Offset:
        """An answer offset in pixels of the image seen (the same factor as a point, never rounded)."""
        fx, fy = self._factors(seen)
        return Offset(dx * fx, dy * fy)

    def describe(self) -> str:
        """The rule in one line, as recorded in a step's ``frame_rule``: units, axes, the mapping when it is
        not the default, resize."""
        head = f"{self.units} {self.axes[0]}-{self.axes[1]}"
        if Frame(self.units).scale is not None and (self.mapping, self.rounding) != ("last_pixel", "none"):
            top = "W" if self.mapping == "edge" else "(W-1)"
            head += f", u*{top}/top" + ("" if self.rounding == "none" else f" {self.rounding}ed")
        if self.resize == "smart_resize":
            f = self.factor or 0
            lo = self.min_pixels or SMART_MIN_TOKENS * f * f
            hi = self.max_pixels or SMART_MAX_TOKENS * f * f
            return f"{head}, smart_resize(factor={f}, min_pixels={lo}, max_pixels={hi})"
        if self.resize == "downscale":
            return f"{head}, downscale(max_long_edge={self.max_long_edge}, max_pixels={self.max_pixels})"
        if self.resize == "downscale_pad":
            return f"{head}, downscale_pad(max_pixels={self.max_pixels}, factor={self.factor})"
        return head

    def in_range(self, x: float, y: float, seen: Size) -> bool:
        """True when ``(x, y)`` (in :attr:`units`) lies inside the frame: ``[0, W] × [0, H]`` of the image
        seen (of its padded canvas under ``downscale_pad``) for pixels, ``[0, scale]`` on both axes for the
        normalised units."""
        scale = Frame(self.units).scale
        room = self.canvas(seen)
        xm, ym = (room.width, room.height) if scale is None else (scale, scale)
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
        room = self.canvas(seen)
        return f"{room.width}x{room.height} px" if scale is None else f"0-{scale:g}"


def frame_rule_of(coord_frame: str) -> FrameRule:
    """The rule a one-word ``coord_frame`` means: those units, x-y, no resize."""
    return FrameRule(units=coord_frame)
