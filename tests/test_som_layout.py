"""Collision-aware SoM tag placement and contrast (issue #18) on crafted layouts, checked on the rendered
pixels as well as on the planned rectangles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.draw.render import dejavu
from dvoc_bench.draw.som_layout import (
    MIN_FONT_PX,
    contrast_ratio,
    rects_overlap,
    relative_luminance,
    tag_text_colour,
)
from dvoc_bench.draw.som_render import PALETTE, Mark, draw_marks, mark_style, palette_colour, plan_marks

W, H = 800, 600


def _marks(boxes: list[tuple[int, int, int, int]]) -> list[Mark]:
    return [Mark(i + 1, Box(*b), 0.9 - i * 0.001, palette_colour(i + 1)) for i, b in enumerate(boxes)]


def _pairs_overlapping(tags) -> int:
    return sum(rects_overlap(a.rect, b.rect) for a, b in itertools.combinations(tags, 2))


def _cover(tags, boxes, line) -> int:
    """Pixels of tags lying inside any box's interior."""
    total = 0
    for t in tags:
        for b in boxes:
            x0, y0 = max(t.rect[0], b[0] + line), max(t.rect[1], b[1] + line)
            x1, y1 = min(t.rect[2], b[2] - line), min(t.rect[3], b[3] - line)
            total += max(0, x1 - x0 + 1) * max(0, y1 - y0 + 1)
    return total


SHARED_CORNERS = [(200, 200, 400, 240), (200, 200, 300, 320), (100, 100, 200, 200), (400, 240, 520, 300)]
"""Two boxes with the same top-left corner, one ending where another starts, one starting at another's end."""
NESTED = [(100, 100, 500, 400), (110, 110, 250, 140), (260, 110, 490, 140), (110, 150, 490, 390)]
"""A card holding two buttons at its top corners and a panel below them (the W4 'Edit' case)."""
DENSE_ROWS = [(100, 120 + 24 * i, 600, 120 + 24 * i + 21) for i in range(12)]
"""Twelve table rows 22 px high, 2 px apart: the seed's tag above a row lands on the row above."""
LAYOUTS = {"shared_corners": SHARED_CORNERS, "nested": NESTED, "dense_rows": DENSE_ROWS}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_avoid_leaves_no_tag_on_a_tag_where_space_allows(name):
    boxes = LAYOUTS[name]
    img = np.full((H, W, 3), 245, dtype=np.uint8)
    marks = _marks(boxes)
    spec = plan_marks(img, marks, tag_layout="spec")
    avoid = plan_marks(img, marks)
    style = mark_style(Size(W, H))
    assert avoid.mode == "avoid" and avoid.tag_overlaps == 0 == _pairs_overlapping(avoid.tags)
    # the crafted layouts really break the seed's placement: tags on tags, or tags on the controls
    assert spec.tag_overlaps > 0 or _cover(spec.tags, boxes, style.line_px) > 0
    assert spec.tag_overlaps == sum(
        any(rects_overlap(t.rect, u.rect) for u in spec.tags[:i]) for i, t in enumerate(spec.tags)
    )
    assert _cover(avoid.tags, boxes, style.line_px) <= _cover(spec.tags, boxes, style.line_px)
    for t in avoid.tags:
        assert 0 <= t.rect[0] <= t.rect[2] < W and 0 <= t.rect[1] <= t.rect[3] < H  # inside the image
        assert t.font_px == style.font_px  # room enough: no tag had to shrink
    out = draw_marks(img, marks, layout=avoid)
    for m, t in zip(avoid.marks, avoid.tags, strict=True):  # every tag's pixels are its own: fill + text
        x0, y0, x1, y1 = t.rect
        patch = out[y0 : y1 + 1, x0 : x1 + 1].reshape(-1, 3)
        fill = (patch == np.array(m.colour)).all(axis=1).mean()
        assert fill > 0.4, f"tag {m.id} is hidden"


def test_shared_corner_tag_4_no_longer_hides_tag_1():
    """The issue's case: two boxes sharing a top-left corner; the seed's tags coincide exactly."""
    img = np.full((H, W, 3), 245, dtype=np.uint8)
    marks = _marks([(300, 300, 420, 340), (50, 50, 90, 70), (600, 50, 700, 90), (300, 300, 360, 400)])
    spec, avoid = plan_marks(img, marks, tag_layout="spec"), plan_marks(img, marks)
    assert spec.tags[3].rect[:2] == spec.tags[0].rect[:2] and spec.tag_overlaps == 1
    assert avoid.tag_overlaps == 0 and avoid.tags[0].rect == spec.tags[0].rect  # the first keeps the seed's


def test_fifty_tiny_boxes_shrink_then_count_the_overlaps():
    boxes = [
        (20 + 14 * (i % 10), 20 + 12 * (i // 10), 20 + 14 * (i % 10) + 10, 20 + 12 * (i // 10) + 8)
        for i in range(50)
    ]
    img = np.full((200, 200, 3), 245, dtype=np.uint8)
    marks = _marks(boxes)
    lay = plan_marks(img, marks)
    assert len(lay.tags) == 50
    assert min(t.font_px for t in lay.tags) == MIN_FONT_PX  # shrunk to the floor before giving up
    assert lay.tag_overlaps > 0
    assert lay.tag_overlaps == sum(
        any(rects_overlap(t.rect, u.rect) for u in lay.tags[:i]) for i, t in enumerate(lay.tags)
    )
    assert lay.tag_overlaps < plan_marks(img, marks, tag_layout="spec").tag_overlaps


def test_tag_text_contrast_is_at_least_4_5_on_every_fill():
    fills = [*PALETTE, (0, 0, 0), (255, 255, 255), (127, 127, 127), (118, 118, 118)]
    for fill in fills:
        assert contrast_ratio(tag_text_colour(fill), fill) >= 4.5, fill
    # measured on the drawn pixels: the text colour found inside each tag against its fill
    img = np.full((H, W, 3), 245, dtype=np.uint8)
    marks = _marks([(40 + 70 * i, 100, 40 + 70 * i + 60, 140) for i in range(10)])
    lay = plan_marks(img, marks)
    out = draw_marks(img, marks, layout=lay)
    for m, t in zip(lay.marks, lay.tags, strict=True):
        x0, y0, x1, y1 = t.rect
        patch = out[y0 : y1 + 1, x0 : x1 + 1].reshape(-1, 3).astype(int)
        text = tag_text_colour(m.colour)
        near = np.abs(patch - np.array(text)).max(axis=1) <= 32
        assert near.sum() >= 3  # the number is drawn (anti-aliased) in the text colour
        strongest = max(contrast_ratio(p, m.colour) for p in patch[near])
        assert strongest >= 4.5 and contrast_ratio(text, m.colour) >= 4.5


def test_outline_colour_is_chosen_for_contrast_with_the_pixels_under_it():
    """Mark 1's blue outline on a blue button was nearly invisible: it now takes a contrasting colour."""
    img = np.full((H, W, 3), 245, dtype=np.uint8)
    img[100:160, 100:300] = PALETTE[0]  # a blue button, boxed exactly
    img[300:360, 100:300] = (250, 250, 250)  # a white one
    marks = _marks([(100, 100, 299, 159), (100, 300, 299, 359)])
    lay = plan_marks(img, marks)
    blue_bg = float(relative_luminance(PALETTE[0]))
    c1 = lay.marks[0].colour
    assert c1 != PALETTE[0] and contrast_ratio(c1, PALETTE[0]) >= 3.0
    assert lay.marks[1].colour == PALETTE[1] or contrast_ratio(lay.marks[1].colour, (250, 250, 250)) >= 3
    out = draw_marks(img, marks, layout=lay)
    assert tuple(out[100, 150]) == c1  # the outline is drawn in it
    assert blue_bg < 0.25


def test_font_floor_is_legible():
    left, top, right, bottom = dejavu(MIN_FONT_PX).getbbox("50")
    assert bottom - top >= 7 and right - left >= 10


def test_free_space_keeps_the_seed_place_even_on_bordered_buttons():
    """Where nothing is in the way, ``avoid`` is the seed's rule: a button's own border under the tag's
    edge is no reason to move it."""
    img = np.full((H, W, 3), 40, dtype=np.uint8)
    boxes = [(100, 200, 220, 240), (300, 200, 420, 240), (200, 350, 320, 390)]
    for x0, y0, x1, y1 in boxes:
        img[y0 : y1 + 1, x0 : x1 + 1] = (200, 200, 200)
        img[y0 + 1 : y1, x0 + 1 : x1] = (82, 125, 204)
    marks = _marks(boxes)
    assert [t.rect for t in plan_marks(img, marks).tags] == [
        t.rect for t in plan_marks(img, marks, tag_layout="spec").tags
    ]
