"""Set-of-Mark drawing: which boxes are marked, how they are numbered, where tags go, sizes, purity."""

from __future__ import annotations

import numpy as np
import pytest

from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.detect.types import Detection
from dvoc_bench.draw.render import dejavu
from dvoc_bench.draw.som_render import (
    PALETTE,
    Mark,
    draw_marks,
    mark_style,
    marks_from_detections,
    palette_colour,
    plan_marks,
    text_colour,
)

SIZE = Size(400, 300)


def _det(x0, y0, x1, y1, s=0.9):
    return Detection(Box(x0, y0, x1, y1), s)


def test_marks_drop_big_boxes_keep_order_and_keep_the_detector_numbers():
    dets = [
        _det(0, 0, 400, 151, 0.99),  # 60400 px > half of 120000: a panel, dropped
        _det(100, 50, 180, 90, 0.9),
        _det(0, 0, 400, 150, 0.8),  # exactly half: kept
        _det(390, 290, 450, 320, 0.7),  # hangs off the screen: clipped
        _det(500, 10, 520, 20, 0.6),  # entirely off the screen: dropped
    ]
    marks = marks_from_detections(dets, SIZE)
    assert [m.id for m in marks] == [1, 2, 3]
    assert [m.score for m in marks] == [0.9, 0.8, 0.7]
    assert marks[0].box.as_list() == [100, 50, 180, 90]  # the seed's numbers, unchanged (issue #18)
    assert marks[0].centre == (140, 70)
    assert marks[2].box.as_list() == [390, 290, 399.0, 299.0]
    assert [m.colour for m in marks] == list(PALETTE[:3])
    assert len(marks_from_detections([_det(i, 0, i + 5, 5) for i in range(80)], SIZE)) == 50
    assert len(marks_from_detections(dets, SIZE, max_area_frac=0.9)) == 4


def test_an_oracle_box_centre_is_the_element_centre():
    # an element drawn on pixels 150..230 x 200..240: the oracle reports its first and last pixels
    from dvoc_bench.detect.oracle import _jittered

    det = _jittered(Box(150, 200, 230, 240), 0.0, np.zeros(4), 400, 300)
    (m,) = marks_from_detections([Detection(det, 0.9)], SIZE)
    assert m.centre == (190.0, 220.0) == (Box(150, 200, 230, 240).centre.x, Box(150, 200, 230, 240).centre.y)


def test_style_scales_with_the_screenshot():
    assert mark_style(Size(800, 600)) == mark_style(Size(600, 800))
    assert (mark_style(Size(800, 600)).font_px, mark_style(Size(800, 600)).line_px) == (12, 2)
    assert (mark_style(Size(1280, 720)).font_px, mark_style(Size(1280, 720)).line_px) == (19, 3)
    assert (mark_style(Size(1920, 1080)).font_px, mark_style(Size(1920, 1080)).line_px) == (29, 4)
    assert mark_style(Size(200, 100)).font_px == 11  # a floor keeps tags readable


def test_colours_are_index_keyed_and_text_contrasts():
    assert palette_colour(1) == palette_colour(11) == PALETTE[0]
    assert text_colour((31, 119, 180)) == (255, 255, 255)  # dark blue tag: white text
    assert text_colour((255, 127, 14)) == (0, 0, 0)  # orange tag: black text
    assert text_colour((188, 189, 34)) == (0, 0, 0)


def _colour_at(img, x, y):
    return tuple(int(v) for v in img[y, x])


def _expected_tag(box: Box, text: str, size: Size, font_px: int) -> tuple[int, int, int, int]:
    """The seed's tag rectangle (inclusive), worked out here from the font: the number's ink box plus a
    padding of a sixth of the font on every side, its bottom row on the row above the box's top edge,
    left-aligned with the box; inside the top-left corner when there is no room above; moved left when
    it would leave the screen on the right."""
    left, top, right, bottom = dejavu(font_px).getbbox(text)
    pad = max(1, round(font_px / 6))
    tw, th = right - left + 2 * pad, bottom - top + 2 * pad
    x0 = min(int(box.x0), size.width - tw)
    y0 = int(box.y0) - th if int(box.y0) >= th else int(box.y0)
    return x0, y0, x0 + tw - 1, y0 + th - 1


def _outline(box: Box, line_px: int, size: Size) -> np.ndarray:
    """Pixels of a box's outline (drawn inward from its edges)."""
    m = np.zeros((size.height, size.width), dtype=bool)
    x0, y0, x1, y1 = int(box.x0), int(box.y0), int(box.x1), int(box.y1)
    m[y0 : y1 + 1, x0 : x1 + 1] = True
    m[y0 + line_px : y1 + 1 - line_px, x0 + line_px : x1 + 1 - line_px] = False
    return m


def _drawn_tag_is_at(out: np.ndarray, rect, mark: Mark, line_px: int) -> None:
    """The drawn image shows ``mark``'s tag exactly at ``rect``: its edge rows and columns (padding) are
    the tag colour, it holds the number's text, and no pixel of the ring around it is the tag colour
    except the box's own outline. ``mark`` with the colour the layout gave it (contrast-checked)."""
    size = Size(out.shape[1], out.shape[0])
    x0, y0, x1, y1 = rect
    colour = np.array(mark.colour)
    is_c = (out == colour).all(axis=2)
    assert 0 <= x0 <= x1 < size.width and 0 <= y0 <= y1 < size.height, rect
    rows, cols = is_c[[y0, y1], x0 : x1 + 1], is_c[y0 : y1 + 1, [x0, x1]]
    assert rows.all() and cols.all(), f"mark {mark.id}: the tag's padding is not all at {rect}"
    inner = is_c[y0 + 1 : y1, x0 + 1 : x1]
    assert (~inner).sum() >= 3, f"mark {mark.id}: no text inside the tag at {rect}"
    ring = np.zeros_like(is_c)
    ring[max(y0 - 1, 0) : y1 + 2, max(x0 - 1, 0) : x1 + 2] = True
    ring[y0 : y1 + 1, x0 : x1 + 1] = False
    stray = ring & is_c & ~_outline(mark.box, line_px, size)
    assert not stray.any(), f"mark {mark.id}: tag colour beside {rect} (the tag is not there)"


# the seed's three placements (../shared/seeds/ui-grounding-som.txt): above the top-left corner; inside
# the corner at the top edge of the screen (touching it, or too close for a tag above); kept on the screen
PLACEMENTS = {
    "above the top-left corner": Mark(1, Box(100, 100, 199, 139), 0.9, PALETTE[0]),
    "inside the corner at the top edge": Mark(2, Box(10, 0, 89, 29), 0.8, PALETTE[1]),
    "inside the corner near the top edge": Mark(4, Box(150, 6, 229, 45), 0.6, PALETTE[3]),
    "moved left at the right edge": Mark(13, Box(392, 200, 399, 219), 0.7, PALETTE[2]),
}


OUTSIDE = ("above the top-left corner", "moved left at the right edge")
"""The placements outside the box, which the default ``avoid`` layout takes first when they are free."""


@pytest.mark.parametrize(
    ("where", "layout"), [(w, "spec") for w in PLACEMENTS] + [(w, "avoid") for w in OUTSIDE]
)
def test_a_lone_mark_is_drawn_with_its_tag_where_the_seed_puts_it(where, layout):
    """On the function that draws the frames (draw_marks), one mark at a time: the seed's layout in all
    three placements, and the default ``avoid`` layout where the seed's place covers no box."""
    mark = PLACEMENTS[where]
    img = np.full((SIZE.height, SIZE.width, 3), 40, dtype=np.uint8)
    style = mark_style(SIZE)
    out = draw_marks(img, [mark], style, tag_layout=layout)
    want = _expected_tag(mark.box, str(mark.id), SIZE, style.font_px)
    if where == "moved left at the right edge":
        assert want[2] == SIZE.width - 1 and want[0] < mark.box.x0  # the case really moves the tag
    plan = plan_marks(img, [mark], style, tag_layout=layout)
    _drawn_tag_is_at(out, want, plan.marks[0], style.line_px)
    assert plan.tags[0].rect == want


def test_the_seed_layout_draws_every_tag_in_its_place_together():
    img = np.full((300, 400, 3), 40, dtype=np.uint8)
    marks = list(PLACEMENTS.values())
    style = mark_style(SIZE)
    out = draw_marks(img, marks, style, tag_layout="spec")
    assert np.array_equal(img, np.full((300, 400, 3), 40, dtype=np.uint8))  # the input is untouched
    assert np.array_equal(out, draw_marks(img, marks, style, tag_layout="spec"))  # deterministic
    assert _colour_at(out, 100, 120) == PALETTE[0] and _colour_at(out, 199, 139) == PALETTE[0]  # outline
    assert _colour_at(out, 150, 120) == (40, 40, 40)  # inside stays clear
    for m in plan_marks(img, marks, style, tag_layout="spec").marks:  # with the colours drawn
        _drawn_tag_is_at(out, _expected_tag(m.box, str(m.id), SIZE, style.font_px), m, style.line_px)
    # the number is legible: white text on the dark blue tag
    x0, y0, x1, y1 = _expected_tag(marks[0].box, "1", SIZE, style.font_px)
    assert (out[y0 : y1 + 1, x0 : x1 + 1].astype(int).min(axis=2) > 200).sum() >= 3


def test_tags_are_drawn_over_other_boxes():
    img = np.zeros((300, 400, 3), dtype=np.uint8)
    top = Mark(1, Box(100, 100, 199, 139), 0.9, PALETTE[0])
    under = Mark(2, Box(90, 92, 300, 200), 0.8, PALETTE[1])  # its top edge crosses mark 1's tag
    style = mark_style(SIZE)
    out = draw_marks(img, [top, under], style, tag_layout="spec")
    x0, y0, x1, y1 = _expected_tag(top.box, "1", SIZE, style.font_px)
    assert y0 < 92 < y1
    assert _colour_at(out, x0, 92) == PALETTE[0] and _colour_at(out, x1 + 5, 92) == PALETTE[1]


def test_bad_images_are_rejected():
    with pytest.raises(ValueError):
        draw_marks(np.zeros((10, 10), dtype=np.uint8), [])
