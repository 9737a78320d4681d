"""Which box convention an annotation file really uses, found from its boxes and image sizes, not assumed
from the format's name (docs/datasets.md).

A ScreenSpot file is published with ``bbox = [x, y, w, h]``, a ScreenSpot-Pro file with ``[x1, y1, x2,
y2]``; a file under one format's name in the other's convention (GUI-Actor's ScreenSpot-v2 release:
official names, corner boxes and ``img_size``) loads without an error and enlarges every truth box. So each
file's boxes are read both ways and checked against their image's size (the annotation's ``img_size``, else
the image file's header): a box *fits* a convention when, read that way, it is not empty and ends inside
its image (a pixel of slack). When the convention the layout names leaves many boxes misfit and the other
fits far better, the file is refused with one line naming the file, the evidence and the override
``dataset.box_format=xyxy|xywh``. An explicit ``dataset.box_format`` is the user's word and is not second
guessed (a box that does not fit still fails its own sample when loaded). Pure apart from reading image
headers (no pixels decoded).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import finite_numbers

BoxFormat = Literal["xyxy", "xywh"]
"""``xyxy``: ``[x1, y1, x2, y2]`` corners; ``xywh``: ``[x, y, w, h]``."""

CHECKED = 400
"""At most this many boxes of a file are checked (the first ones): enough evidence, few header reads."""
SLACK_PX = 1.0
"""A box may end this far past its image's edge and still fit (rounded annotations)."""
MIN_MISFITS = 3
"""A file is refused only when at least this many of its checked boxes misfit the named convention..."""
MIN_SHARE = 0.05
"""...and at least this share of them..."""
BETTER = 10
"""...and the other convention misfits at most one in this many of those."""

_WORDS = {"xyxy": "x1,y1,x2,y2", "xywh": "x,y,w,h"}


@dataclass(frozen=True)
class Evidence:
    """How the checked boxes of one file fit each convention."""

    checked: int
    """Boxes checked (four finite numbers and an image size known)."""
    misfit: dict[str, int]
    """Convention -> boxes that, read so, are empty or end outside their image."""


def corners(nums: Sequence[float], fmt: str) -> tuple[float, float, float, float]:
    """``[x1, y1, x2, y2]`` of a box written in ``fmt``."""
    a, b, c, d = nums
    return (a, b, a + c, b + d) if fmt == "xywh" else (a, b, c, d)


def fits(nums: Sequence[float], fmt: str, size: tuple[float, float]) -> bool:
    """Whether the box ``nums`` read as ``fmt`` is non-empty and inside a ``size`` image (with slack)."""
    x1, y1, x2, y2 = corners(nums, fmt)
    w, h = size
    return -SLACK_PX <= x1 < x2 <= w + SLACK_PX and -SLACK_PX <= y1 < y2 <= h + SLACK_PX




def _two(v: Any) -> tuple[float, float] | None:
    if not isinstance(v, list | tuple) or len(v) != 2:
        return None
    try:
        w, h = float(v[0]), float(v[1])
    except (TypeError, ValueError):
        return None
    return (w, h) if w > 0 and h > 0 and math.isfinite(w) and math.isfinite(h) else None


def image_size(path: Path) -> tuple[float, float] | None:
    """The size in an image file's header, or ``None`` when it is missing or unreadable."""
    if not path.is_file():
        return None
    from PIL import Image

    try:
        with Image.open(path) as im:
            return float(im.size[0]), float(im.size[1])
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


def evidence(
    records: Sequence[Any],
    box_key: str,
    image_of: Callable[[Any], Path | None],
    size_of_image: Callable[[Path], tuple[float, float] | None] = image_size,
) -> Evidence:
    """Read the first :data:`CHECKED` boxes of ``records`` both ways against their image's size (the
    record's ``img_size``, else ``size_of_image(image_of(record))``)."""
    checked = 0
    misfit = {"xyxy": 0, "xywh": 0}
    for rec in records[:CHECKED]:
        if not isinstance(rec, dict):
            continue
        nums = finite_numbers(rec.get(box_key), 4)
        if nums is None:
            continue
        size = _two(rec.get("img_size"))
        if size is None:
            image = image_of(rec)
            size = size_of_image(image) if image is not None else None
        if size is None:
            continue
        checked += 1
        for fmt in misfit:
            misfit[fmt] += not fits(nums, fmt, size)
    return Evidence(checked, misfit)


def convention(named: BoxFormat, override: BoxFormat | None, ev: Evidence, file: str) -> BoxFormat:
    """The convention to read ``file``'s boxes in: the override when given, else the named one, unless the
    evidence shows the other far better: then a :class:`ConfigError` in one line."""
    if override is not None:
        return override
    other: BoxFormat = "xywh" if named == "xyxy" else "xyxy"
    bad, alt = ev.misfit[named], ev.misfit[other]
    if bad >= max(MIN_MISFITS, MIN_SHARE * ev.checked) and alt * BETTER <= bad:
        raise ConfigError(
            f"dataset: {file}: its boxes look like {_WORDS[other]}, not the {_WORDS[named]} this format "
            f"names: read as {_WORDS[named]}, {bad} of {ev.checked} checked boxes are empty or end outside "
            f"their image; read as {_WORDS[other]}, {alt} do. Set dataset.box_format={other} to read them so "
            f"(dataset.box_format={named} keeps the format's)"
        )
    return named
