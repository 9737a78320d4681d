"""A frozen copy of the overlay drawing as it was before frames were drawn in numpy (the whole frame
through Pillow): the reference ``tests/test_render_reference.py`` holds :func:`draw_overlay` to, pixel for
pixel. Not used by the package."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from dvoc_bench.core.geometry import Point
from dvoc_bench.draw.render import OverlayStyle, crosshair_centre, dejavu, place_labels


def _span(centre: int, width: int) -> tuple[int, int]:
    lo = centre - (width - 1) // 2
    return lo, lo + width - 1


def reference_overlay(
    image: np.ndarray,
    draft: Point,
    *,
    mode: str,
    iteration: int,
    position_label: str | None,
    style: OverlayStyle,
    labels: str = "corner",
) -> np.ndarray:
    if mode == "none":
        return image.copy()
    pil = Image.fromarray(np.ascontiguousarray(image))
    draw = ImageDraw.Draw(pil)
    cx, cy = crosshair_centre(draft)
    if mode == "full":
        r = style.circle_radius
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=style.circle_color, width=style.circle_width)
    texts = [f"iter {iteration}"] + ([position_label] if position_label is not None else [])
    for text, (_, origin, box) in zip(texts, place_labels(image, cx, cy, texts, labels, style), strict=True):
        draw.rectangle(list(box), fill=style.label_bg)
        draw.text(origin, text, fill=style.label_fg, font=dejavu(style.label_font_size))
    arm, color = style.crosshair_arm, style.crosshair_color
    y0, y1 = _span(cy, style.crosshair_width)
    x0, x1 = _span(cx, style.crosshair_width)
    draw.rectangle([cx - arm, y0, cx + arm, y1], fill=color)
    draw.rectangle([x0, cy - arm, x1, cy + arm], fill=color)
    return np.array(pil, dtype=np.uint8)
