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
    tag_rect,
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


def test_tags_sit_above_the_top_left_corner_or_inside_at_the_top_edge():
    img = np.full((300, 400, 3), 40, dtype=np.uint8)
    marks = [
        Mark(1, Box(100, 100, 199, 139), 0.9, PALETTE[0]),
        Mark(2, Box(10, 0, 89, 29), 0.8, PALETTE[1]),  # touches the top edge
        Mark(3, Box(380, 200, 399, 219), 0.7, PALETTE[2]),  # at the right edge
    ]
    style = mark_style(SIZE)
    out = draw_marks(img, marks, style, tag_layout="spec")
    assert np.array_equal(img, np.full((300, 400, 3), 40, dtype=np.uint8))  # the input is untouched
    assert np.array_equal(out, draw_marks(img, marks, style, tag_layout="spec"))  # deterministic
    assert _colour_at(out, 100, 120) == PALETTE[0] and _colour_at(out, 199, 139) == PALETTE[0]  # outline
    assert _colour_at(out, 150, 120) == (40, 40, 40)  # inside stays clear
    x0, y0, x1, y1 = tag_rect(marks[0], 8, 10, SIZE, style)
    assert (x0, y1) == (100, 99) and y0 == 99 - (10 + 2 * style.pad_px) + 1  # just above, left-aligned
    assert _colour_at(out, 100, 98) == PALETTE[0]  # tag background above the box
    inside = tag_rect(marks[1], 8, 10, SIZE, style)
    assert inside[:2] == (10, 0)  # no room above: inside the corner
    right = tag_rect(marks[2], 30, 10, SIZE, style)
    assert right[2] == 399  # shifted left to stay on the screen
    # the tag shows its number: the rectangle is the tag colour except for light text pixels
    left, top, right, bottom = dejavu(style.font_px).getbbox("1")
    tx0, ty0, tx1, ty1 = tag_rect(marks[0], right - left, bottom - top, SIZE, style)
    tag = out[ty0 : ty1 + 1, tx0 : tx1 + 1].astype(int)
    is_bg = (tag == np.array(PALETTE[0])).all(axis=2)
    assert is_bg[0].all() and is_bg[-1].all()  # padding rows
    assert (tag.min(axis=2) > 200).sum() >= 3  # white text on the dark blue tag


def test_tags_are_drawn_over_other_boxes():
    img = np.zeros((300, 400, 3), dtype=np.uint8)
    top = Mark(1, Box(100, 100, 199, 139), 0.9, PALETTE[0])
    under = Mark(2, Box(90, 92, 300, 200), 0.8, PALETTE[1])  # its top edge crosses mark 1's tag
    style = mark_style(SIZE)
    out = draw_marks(img, [top, under], style, tag_layout="spec")
    left, t, right, b = dejavu(style.font_px).getbbox("1")
    x0, y0, x1, y1 = tag_rect(top, right - left, b - t, SIZE, style)
    assert y0 < 92 < y1
    assert _colour_at(out, x0, 92) == PALETTE[0] and _colour_at(out, x1 + 5, 92) == PALETTE[1]


def test_bad_images_are_rejected():
    with pytest.raises(ValueError):
        draw_marks(np.zeros((10, 10), dtype=np.uint8), [])
