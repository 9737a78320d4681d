"""One screenshot through Set-of-Mark's mark pipeline, outside a sweep (``python -m dvoc_bench.mark``).

The same steps as the ``som`` method (:mod:`dvoc_bench.methods.som`): the detector's boxes (descending
score), those covering more than ``max_area_frac`` of the screen dropped, at most
:data:`~dvoc_bench.draw.som_render.MAX_MARKS` numbered by score
(:func:`~dvoc_bench.draw.som_render.marks_from_detections`), tags placed by ``tag_layout`` and drawn
(:func:`~dvoc_bench.draw.som_render.draw_marks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Size
from dvoc_bench.core.pixels import TooManyPixels, decode_rgb
from dvoc_bench.detect.types import DetectionRun, Detector
from dvoc_bench.draw.render import encode_png
from dvoc_bench.draw.som_layout import Mark
from dvoc_bench.draw.som_render import MAX_AREA_FRAC, draw_marks, marks_from_detections, plan_marks


@dataclass(frozen=True)
class Marked:
    """One screenshot's detection and marks."""

    run: DetectionRun
    """The detector's boxes (source pixels, descending score) and timing."""
    marks: tuple[Mark, ...]
    """The boxes SoM numbers (1-based, by score)."""
    tag_overlaps: int | None
    """Tags drawn over another tag (set when the frame was drawn)."""
    png: bytes | None
    """The marked frame as PNG, when asked for."""


def read_image(path: str | Path) -> np.ndarray:
    """An image file as ``HxWx3`` uint8 RGB; a missing or unreadable file, or one of more pixels than the
    decompression-bomb limit (read from its header, nothing decoded), is a ``ConfigError`` naming it."""
    from PIL import UnidentifiedImageError

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: file not found")
    try:
        return decode_rgb(p)
    except TooManyPixels as e:
        raise ConfigError(f"{path}: {e}") from None
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise ConfigError(f"{path}: not a readable image ({type(e).__name__})") from None


def mark_image(
    image: np.ndarray,
    detector: Detector,
    *,
    max_area_frac: float = MAX_AREA_FRAC,
    tag_layout: str = "avoid",
    draw: bool = False,
) -> Marked:
    """Detect, mark and (``draw``) render one screenshot; raises the detector's ``DetectorError``."""
    run = detector.run(image)
    marks = marks_from_detections(
        run.detections, Size(image.shape[1], image.shape[0]), max_area_frac=max_area_frac
    )
    if not draw:
        return Marked(run, tuple(marks), None, None)
    layout = plan_marks(image, marks, tag_layout=tag_layout)
    png = encode_png(draw_marks(image, marks, layout=layout))
    return Marked(run, tuple(marks), layout.tag_overlaps, png)
