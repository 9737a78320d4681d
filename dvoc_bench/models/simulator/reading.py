"""What the simulator reads from a request, as a model would: the tools offered, the crosshair drawn in the
pixels, the prompt's ``Crosshair position:``, ``Grounding:`` and ``Element list units:`` lines, and
the scene's ground truth in the pixels of the image sent (steps 1, 4 and 13 of
:mod:`dvoc_bench.models.simulator`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import Box, Frame, Point, Size, point_to_pixels
from dvoc_bench.core.scene import SceneTruth
from dvoc_bench.models.base import ModelRequest

__all__ = [
    "crosshair_position",
    "decode_image",
    "history_position",
    "image_digest",
    "parse_crosshair_line",
    "parse_marks",
    "position_stated",
    "requested_frame",
    "tool_names",
    "truth_in_image",
]

_POS_RE = re.compile(
    r"^[ \t]*crosshair position:[ \t]*\([ \t]*([-+]?\d+(?:\.\d+)?)[ \t]*,[ \t]*([-+]?\d+(?:\.\d+)?)[ \t]*\)"
    r"[ \t]*([^\n]*)",
    re.IGNORECASE | re.MULTILINE,
)
"""A ``Crosshair position: (X, Y) UNIT`` line (at the start of a line, tolerant of spacing and case)."""
_POS_LINE_RE = re.compile(r"^[ \t]*crosshair position:", re.IGNORECASE | re.MULTILINE)
"""Any line stating the crosshair position (even one whose numbers cannot be read)."""


def _unit_frame(unit: str) -> Frame:
    u = unit.strip().lower().replace("\u2013", "-").replace("\u2212", "-")
    if u.startswith("in touch units"):
        return Frame.TOUCH1000
    if re.match(r"in 0\s*-\s*1000\b", u):
        return Frame.NORM1000
    if re.match(r"in 0\s*-\s*999\b", u):
        return Frame.NORM999
    if re.match(r"in 0\s*-\s*1\b", u):
        return Frame.NORM1
    return Frame.PIXEL  # "px" or no unit: the plain reading of a coordinate pair


def parse_crosshair_line(text: str, size: Size) -> Point | None:
    """The crosshair position stated in ``text`` (``Crosshair position: (X, Y) UNIT``), in pixels."""
    m = _POS_RE.search(text)
    if m is None:
        return None
    p = Point(float(m.group(1)), float(m.group(2)))
    return point_to_pixels(p, _unit_frame(m.group(3)), size)


_REQUEST_RES = (
    ("pixel", re.compile(r"\buse pixel coordinates\b", re.IGNORECASE)),
    ("touch1000", re.compile(r"\buse touch coordinates\b", re.IGNORECASE)),
    ("norm1000", re.compile(r"\bnormali[sz]ed to 0\s*-\s*1000\b", re.IGNORECASE)),
    ("norm999", re.compile(r"\bnormali[sz]ed to 0\s*-\s*999\b", re.IGNORECASE)),
    ("norm1", re.compile(r"\bnormali[sz]ed to 0\s*-\s*1\b(?!\d)", re.IGNORECASE)),
)
"""An explicit frame request, as the corrected protocol words it (``prompts.frame_statement``)."""


def requested_frame(text: str) -> str | None:
    """The frame the prompt explicitly asks answers in (``pixel``, ``norm1000``, ``norm1``), ``None`` when
    it states none (the paper's prompt says "pixel offset" without a frame statement or the image size)."""
    for name, rx in _REQUEST_RES:
        if rx.search(text):
            return name
    return None


def position_stated(text: str) -> bool:
    """Whether the text has a ``Crosshair position:`` line (even one whose numbers cannot be read)."""
    return _POS_LINE_RE.search(text) is not None


_HISTORY_RE = re.compile(
    r"position \(\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\)[^\n]*?(?:=>|->|\u2192)\s*"
    r"\(\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\)",
    re.IGNORECASE,
)
"""A history line of the paper's prompt: ``position (x,y), reported ... => (x', y')`` (pixels)."""


def history_position(text: str) -> Point | None:
    """Where the prompt's history says the estimate went last (the point after the arrow of its last line,
    in pixels), as a model reading the history would take it; ``None`` without a history line."""
    last = None
    for m in _HISTORY_RE.finditer(text):
        last = m
    return None if last is None else Point(float(last.group(3)), float(last.group(4)))


def crosshair_position(req: ModelRequest, seen: Point | None = None) -> Point | None:
    """The crosshair in pixels: ``seen`` (what the localiser read in the image,
    :mod:`~dvoc_bench.models.simulator.perception`), else read from the text (a ``Crosshair position:``
    line, else the last history line's arrow); ``None`` when nothing shows it."""
    p = seen
    if p is None:
        p = parse_crosshair_line(req.text, req.image_size)
    return p if p is not None else history_position(req.text)


_MARKS_RE = re.compile(r"^[ \t]*grounding:[ \t]*(\{.*)$", re.IGNORECASE | re.MULTILINE)
"""The ``Grounding: {"grounding": {"error": ..., "elements": [...]}}`` line of a Set-of-Mark prompt."""
_UNITS_RE = re.compile(r"^[ \t]*element list units:[ \t]*([^\n.]*)", re.IGNORECASE | re.MULTILINE)
"""The ``Element list units: ...`` line."""


def parse_marks(text: str, size: Size) -> list[tuple[int, Box]]:
    """The marks listed in a SoM prompt as ``(id, box in pixels)``; empty when there is no readable list.

    Units come from the ``Element list units:`` line (``pixels``, ``0-1000``, ``0-1``; pixels without it).
    """
    m = _MARKS_RE.search(text)
    if m is None:
        return []
    try:
        data, _ = json.JSONDecoder().raw_decode(m.group(1))
    except ValueError:
        return []
    u = _UNITS_RE.search(text)
    unit = u.group(1).strip().lower().replace("\u2013", "-") if u else "pixels"
    frame = Frame.PIXEL
    if "1000" in unit:
        frame = Frame.NORM1000
    elif "999" in unit:
        frame = Frame.NORM999
    elif re.match(r"0\s*-\s*1\b", unit):
        frame = Frame.NORM1
    marks: list[tuple[int, Box]] = []
    if isinstance(data, Mapping) and isinstance(data.get("grounding"), Mapping):
        data = data["grounding"]
    for e in data.get("elements", []) if isinstance(data, Mapping) else []:
        try:
            ident = int(e["id"])
            x0, y0, x1, y1 = (float(v) for v in e["box"])
        except (KeyError, TypeError, ValueError):
            continue
        a = point_to_pixels(Point(x0, y0), frame, size)
        b = point_to_pixels(Point(x1, y1), frame, size)
        marks.append((ident, Box(min(a.x, b.x), min(a.y, b.y), max(a.x, b.x), max(a.y, b.y))))
    return marks


def tool_names(tools: Sequence[Mapping[str, Any]]) -> set[str]:
    """Names of the functions offered (OpenAI tool dicts, or bare function dicts)."""
    names: set[str] = set()
    for t in tools:
        fn = t.get("function", t) if isinstance(t, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            names.add(fn["name"])
    return names


def _map_box(b: Box, ox: float, oy: float, sx: float, sy: float) -> Box:
    return Box((b.x0 - ox) * sx, (b.y0 - oy) * sy, (b.x1 - ox) * sx, (b.y1 - oy) * sy)


def truth_in_image(
    truth: SceneTruth, size: Size, crop: tuple[float, float, float, float] | None = None
) -> SceneTruth:
    """Ground truth in pixels of the image sent: the scene's truth mapped through the request's crop
    (``ModelRequest.crop``; ``None``: the whole screen) and scaled to the size sent, the map of
    :class:`dvoc_bench.draw.sending.View`. Boxes outside the crop keep their (outside) coordinates."""
    if crop is None and size == truth.size:
        return truth
    x0, y0, x1, y1 = crop if crop is not None else (0.0, 0.0, truth.size.width, truth.size.height)
    sx, sy = size.width / (x1 - x0), size.height / (y1 - y0)
    return dataclasses.replace(
        truth,
        size=size,
        target_box=_map_box(truth.target_box, x0, y0, sx, sy),
        target_aim=None
        if truth.target_aim is None
        else Point((truth.target_aim.x - x0) * sx, (truth.target_aim.y - y0) * sy),
        elements=tuple(dataclasses.replace(e, box=_map_box(e.box, x0, y0, sx, sy)) for e in truth.elements),
    )


def decode_image(req: ModelRequest) -> np.ndarray | None:
    """The request's image as an RGB array (``image_rgb`` as is, else the decoded PNG; ``None`` for none)."""
    if req.image_rgb is not None:
        return np.asarray(req.image_rgb)
    if req.image_png is None:
        return None
    from dvoc_bench.core.pixels import decode_rgb

    return decode_rgb(req.image_png)  # at most MAX_PIXELS pixels, checked before decoding


def image_digest(req: ModelRequest) -> bytes:
    """sha256 of the PNG bytes, else of the raw array (with its shape), else of nothing."""
    if req.image_png is not None:
        return hashlib.sha256(req.image_png).digest()
    if req.image_rgb is not None:
        arr = np.ascontiguousarray(req.image_rgb)
        h = hashlib.sha256(str(arr.shape).encode())
        h.update(arr.tobytes())
        return h.digest()
    return hashlib.sha256(b"").digest()
