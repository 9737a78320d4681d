"""draw_overlay draws in numpy (the circle and the label text through Pillow on small crops): the same
pixels as drawing the whole frame through Pillow (tests/draw_reference.py), on scene screenshots from
400x300 to 3840x2160, a 20x15 image, every overlay mode and label placement, styles at their edges, and
drafts on, near and beyond every edge."""

from __future__ import annotations

import numpy as np
import pytest

from dvoc_bench.core.geometry import Point
from dvoc_bench.draw.render import LABEL_PLACEMENTS, OVERLAY_MODES, OverlayStyle, draw_overlay
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from tests.draw_reference import reference_overlay

STYLES = [
    OverlayStyle(),
    OverlayStyle(crosshair_width=1, crosshair_arm=5, circle_radius=0, circle_width=1, label_font_size=7),
    OverlayStyle(crosshair_width=4, crosshair_arm=0, circle_radius=3, circle_width=5, label_font_size=20),
    OverlayStyle(
        crosshair_width=2,
        crosshair_arm=40,
        circle_radius=60,
        circle_width=0,
        crosshair_color=(10, 200, 30),
        circle_color=(255, 255, 0),
        label_fg=(1, 2, 3),
        label_bg=(250, 240, 230),
    ),
]


def _drafts(w: int, h: int, rng: np.random.Generator) -> list[Point]:
    edges = [-80.0, -31.0, -1.0, -0.5, 0.0, 0.4, 1.0, 14.6, 29.0, 30.0]
    out = [Point(float(rng.uniform(0, w - 1)), float(rng.uniform(0, h - 1))) for _ in range(6)]
    for e in edges:
        out += [
            Point(e, h / 2),
            Point(w - 1 - e, h / 2),
            Point(w / 2, e),
            Point(w / 2, h - 1 - e),
            Point(e, e),
            Point(w - 1 - e, h - 1 - e),
        ]
    return out


def _images() -> list[tuple[str, np.ndarray]]:
    reg = SceneRegistry(default_scenes_dir())
    s3, s4 = reg.snapshot("S3").image, reg.snapshot("S4").image
    big = np.tile(s3, (4, 5, 1))[:2160, :3840]
    return [("S3", s3), ("S4", s4), ("400x300", s3[:300, :400]), ("20x15", s4[:15, :20]), ("4K", big)]


@pytest.mark.parametrize("name,image", _images(), ids=lambda v: v if isinstance(v, str) else "")
def test_numpy_drawing_equals_pillow_on_the_whole_frame(name: str, image: np.ndarray) -> None:
    rng = np.random.default_rng(len(name))
    h, w = image.shape[:2]
    drafts = _drafts(w, h, rng)
    n = 0
    for k, style in enumerate(STYLES[:2] if name == "4K" else STYLES):
        for mode in OVERLAY_MODES:
            for labels in LABEL_PLACEMENTS:
                for i, p in enumerate(drafts[k::10] if name == "4K" else drafts):
                    label = None if i % 5 == 4 else f"({p.x:.0f}, {p.y:.0f}) +/- 30px"
                    kw = dict(mode=mode, iteration=i % 16, position_label=label, style=style, labels=labels)
                    got = draw_overlay(image, p, **kw)
                    want = reference_overlay(image, p, **kw)
                    assert got.dtype == np.uint8 and got.flags.c_contiguous
                    assert np.array_equal(got, want), (name, style, mode, labels, p)
                    n += 1
    assert n > 80
