"""The seed's resident-helper protocol: binary requests on stdin, text lines on stdout.

=====================================================  ================================================
request                                                response
=====================================================  ================================================
start-up                                               ``READY <model_width> <model_height>``
``b"D"`` + u32 width + u32 height (little-endian)      ``OK <n> <inference_ms>`` then ``n`` lines
+ ``width * height * 3`` bytes RGB888, row-major       ``<x1> <y1> <x2> <y2> <score>`` (source pixels)
``b"Q"``                                               the helper exits
any failure                                            ``ERR <message>`` (the helper then exits)
=====================================================  ================================================

Byte order: the seed does not state it; little-endian is the byte order of every board involved (ARM and
x86), so both sides here use ``struct`` format ``<II``. The channel must be binary-safe: ``ssh`` without
``-t`` and ``adb shell -T`` (a pseudo-terminal would rewrite ``\\n`` bytes of the image).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from dvoc_bench.core.geometry import Box
from dvoc_bench.detect.types import Detection

REQUEST_DETECT = b"D"
"""Command byte of a detection request."""
REQUEST_QUIT = b"Q"
"""Command byte asking the helper to exit."""
HEADER = struct.Struct("<II")
"""Width and height after the ``D`` byte."""
MAX_SIDE = 16384
"""Largest width or height a helper accepts by default."""


class ProtocolError(ValueError):
    """A line that does not follow the protocol."""


def encode_request(image: np.ndarray) -> bytes:
    """The ``D`` request for an ``HxWx3`` uint8 RGB image."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an HxWx3 uint8 RGB image, got shape {image.shape} dtype {image.dtype}")
    h, w = image.shape[:2]
    return REQUEST_DETECT + HEADER.pack(w, h) + np.ascontiguousarray(image).tobytes()


def _finite(tokens: list[str], line: str) -> list[float]:
    try:
        values = [float(t) for t in tokens]
    except ValueError:
        raise ProtocolError(f"not numbers: {line!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise ProtocolError(f"non-finite number: {line!r}")
    return values


def parse_ready(line: str) -> tuple[int, int]:
    """``READY <w> <h>`` -> the model's input size."""
    parts = line.split()
    if len(parts) != 3 or parts[0] != "READY":
        raise ProtocolError(f"expected 'READY <width> <height>', got {line!r}")
    try:
        w, h = int(parts[1]), int(parts[2])
    except ValueError:
        raise ProtocolError(f"READY sizes are not integers: {line!r}") from None
    if w <= 0 or h <= 0:
        raise ProtocolError(f"READY sizes must be positive: {line!r}")
    return w, h


@dataclass(frozen=True)
class OkHeader:
    """The first line of a successful reply."""

    count: int
    """Number of box lines that follow."""
    inference_ms: float
    """Inference time the helper measured."""


def parse_ok(line: str) -> OkHeader:
    """``OK <n> <ms>`` -> its fields."""
    parts = line.split()
    if len(parts) != 3 or parts[0] != "OK":
        raise ProtocolError(f"expected 'OK <n> <inference_ms>', got {line!r}")
    try:
        n = int(parts[1])
    except ValueError:
        raise ProtocolError(f"OK count is not an integer: {line!r}") from None
    (ms,) = _finite([parts[2]], line)
    if n < 0 or ms < 0:
        raise ProtocolError(f"negative count or time: {line!r}")
    return OkHeader(n, ms)


def parse_box(line: str) -> Detection:
    """``<x1> <y1> <x2> <y2> <score>`` -> a detection in source pixels."""
    parts = line.split()
    if len(parts) != 5:
        raise ProtocolError(f"expected '<x1> <y1> <x2> <y2> <score>', got {line!r}")
    x1, y1, x2, y2, score = _finite(parts, line)
    if x2 < x1 or y2 < y1:
        raise ProtocolError(f"box with negative size: {line!r}")
    return Detection(Box(x1, y1, x2, y2), score)


def format_box(d: Detection) -> str:
    """One box line: coordinates to 0.01 px, score to 1e-5."""
    b = d.box
    return f"{b.x0:.2f} {b.y0:.2f} {b.x1:.2f} {b.y1:.2f} {d.score:.5f}"


def format_ok(dets: list[Detection], inference_ms: float) -> str:
    """The whole successful reply, newline-terminated."""
    lines = [f"OK {len(dets)} {inference_ms:.1f}", *(format_box(d) for d in dets)]
    return "\n".join(lines) + "\n"


def error_line(message: str) -> str:
    """``ERR <message>`` on one line."""
    return "ERR " + " ".join(str(message).split()) + "\n"
