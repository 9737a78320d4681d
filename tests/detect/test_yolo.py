"""YOLOv5 pre/post-processing against hand computations (research/som.md §2)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dvoc_bench.detect.synth_models import plant_box, planted_heads
from dvoc_bench.detect.yolo import (
    DEFAULT_ANCHORS,
    PAD_VALUE,
    PostConfig,
    decode_heads,
    format_anchors,
    heads_as_nchw,
    iou_one,
    letterbox,
    letterbox_geometry,
    nms,
    parse_anchors,
    postprocess,
    resize_bilinear,
    to_nchw_float,
    to_source,
)

ANCHORS = np.asarray(DEFAULT_ANCHORS, dtype=np.float64).reshape(3, 3, 2)


# ------------------------------------------------------------------------------------------ letterbox


@pytest.mark.parametrize(
    ("w", "h", "expected"),
    [
        # som.md §2.1 worked examples (measured with the reference implementation)
        (1920, 1080, (0.5, 960, 540, 0, 210, 0, 210)),
        (800, 600, (1.2, 960, 720, 0, 120, 0, 120)),
        (1280, 721, (0.75, 960, 541, 0, 209, 0, 210)),  # odd padding: the extra row goes to the bottom
        (600, 800, (1.2, 720, 960, 120, 0, 120, 0)),
        (960, 960, (1.0, 960, 960, 0, 0, 0, 0)),
    ],
)
def test_letterbox_geometry_worked_examples(w, h, expected):
    g = letterbox_geometry(w, h, 960)
    assert (g.ratio, g.new_w, g.new_h, g.left, g.top, g.right, g.bottom) == pytest.approx(expected)
    assert g.left + g.new_w + g.right == 960 and g.top + g.new_h + g.bottom == 960


def test_letterbox_rejects_empty_sizes():
    with pytest.raises(ValueError):
        letterbox_geometry(0, 10)


def test_resize_hand_values():
    row = np.array([[[0, 0, 0], [100, 100, 100]]], dtype=np.uint8)  # 1 x 2
    up = resize_bilinear(row, 4, 1)[0, :, 0]
    # x_src = (j + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1)
    assert up.tolist() == [0, 25, 75, 100]
    down = resize_bilinear(np.array([[[0] * 3, [10] * 3, [20] * 3, [30] * 3]], dtype=np.uint8), 2, 1)
    assert down[0, :, 0].tolist() == [5, 25]  # x_src = 0.5 and 2.5: no antialiasing over 4 pixels
    half = resize_bilinear(np.array([[[0] * 3, [1] * 3]], dtype=np.uint8), 1, 1)
    assert half[0, 0, 0] == 1  # exactly 0.5: rounded half up
    quarter = resize_bilinear(np.array([[[0] * 3, [1] * 3]], dtype=np.uint8), 4, 1)
    assert quarter[0, :, 0].tolist() == [0, 0, 1, 1]  # 0, 0.25, 0.75, 1


def _exact_resize(img: np.ndarray, new_w: int, new_h: int) -> np.ndarray:
    """The half-pixel formula in exact rational arithmetic, rounded half up."""
    h, w = img.shape[:2]

    def axis(n_src, n_dst):
        out = []
        for j in range(n_dst):
            x = (Fraction(2 * j + 1, 2) * Fraction(n_src, n_dst)) - Fraction(1, 2)
            x = min(max(x, Fraction(0)), Fraction(n_src - 1))
            i0 = math.floor(x)
            out.append((i0, min(i0 + 1, n_src - 1), x - i0))
        return out

    ys, xs = axis(h, new_h), axis(w, new_w)
    out = np.zeros((new_h, new_w, img.shape[2]), dtype=np.uint8)
    for r, (y0, y1, b) in enumerate(ys):
        for c, (x0, x1, a) in enumerate(xs):
            for k in range(img.shape[2]):
                v = (
                    (1 - a) * (1 - b) * int(img[y0, x0, k])
                    + a * (1 - b) * int(img[y0, x1, k])
                    + (1 - a) * b * int(img[y1, x0, k])
                    + a * b * int(img[y1, x1, k])
                )
                out[r, c, k] = math.floor(v + Fraction(1, 2))
    return out


@pytest.mark.parametrize(("src", "dst"), [((7, 5), (9, 4)), ((5, 3), (12, 8)), ((11, 9), (4, 3))])
def test_resize_matches_exact_rational_reference(src, dst):
    img = np.random.default_rng(sum(src) + sum(dst)).integers(0, 256, (src[1], src[0], 3), dtype=np.uint8)
    assert np.array_equal(resize_bilinear(img, *dst), _exact_resize(img, *dst))


def test_letterbox_places_the_resized_image_and_pads_with_114():
    img = np.random.default_rng(1).integers(0, 256, (30, 40, 3), dtype=np.uint8)
    out, g = letterbox(img, 96)  # r = 2.4, 96 x 72, top 12
    assert (g.new_w, g.new_h, g.top, g.left) == (96, 72, 12, 0)
    assert out.shape == (96, 96, 3) and out.dtype == np.uint8
    assert (out[:12] == PAD_VALUE).all() and (out[84:] == PAD_VALUE).all()
    assert np.array_equal(out[12:84], resize_bilinear(img, 96, 72))
    x = to_nchw_float(out)
    assert x.shape == (1, 3, 96, 96) and x.dtype == np.float32
    assert np.array_equal(x[0, 1], out[:, :, 1].astype(np.float32) / np.float32(255))


# ------------------------------------------------------------------------------------------ anchors


def test_anchor_files_round_trip_and_errors():
    text = format_anchors(DEFAULT_ANCHORS)
    assert len(text.splitlines()) == 18
    assert np.array_equal(parse_anchors(text), ANCHORS)
    assert ANCHORS[2, 2].tolist() == [373.0, 326.0]  # P5, third anchor: w, h
    with pytest.raises(ValueError, match="18 numbers"):
        parse_anchors("1\n2\n3\n")
    with pytest.raises(ValueError, match="not a list of numbers"):
        parse_anchors("10 13 x" + " 1" * 15)
    with pytest.raises(ValueError, match="positive"):
        parse_anchors(" ".join(["-1"] * 18))


# ------------------------------------------------------------------------------------------- decode


def _heads(size: int, cells: dict[tuple[int, int, int, int], list[float]]) -> list[np.ndarray]:
    """Zero heads of a ``size`` input with ``(level, anchor, gy, gx) -> values`` set."""
    heads = [np.zeros((1, 18, size // s, size // s), dtype=np.float32) for s in (8, 16, 32)]
    for (level, a, gy, gx), vals in cells.items():
        heads[level][0, a * 6 : a * 6 + 6, gy, gx] = vals
    return heads


def test_decode_by_hand():
    # level 1 (stride 16), anchor 2 = (59, 119): cx = (2*.75 - .5 + 1) * 16 = 32,
    # cy = (2*.25 - .5 + 2) * 16 = 32, w = (2*.5)^2 * 59 = 59, h = (2*1)^2 * 119 = 476, score = .8 * .5 = .4
    heads = _heads(64, {(1, 2, 2, 1): [0.75, 0.25, 0.5, 1.0, 0.8, 0.5]})
    boxes, scores = decode_heads(heads, ANCHORS, 64, 64, conf=0.3)
    assert boxes.tolist() == [[32 - 29.5, 32 - 238.0, 32 + 29.5, 32 + 238.0]]
    assert scores == pytest.approx([0.4])
    # strict thresholds: a score equal to the threshold is dropped, and so is objectness at the threshold
    assert decode_heads(heads, ANCHORS, 64, 64, conf=np.float32(0.8) * np.float32(0.5))[1].size == 0
    assert decode_heads(heads, ANCHORS, 64, 64, conf=float(np.float32(0.8)))[1].size == 0
    # heads in any order and in NHWC layout decode the same
    shuffled = [heads[2], heads[0], heads[1]]
    assert np.array_equal(decode_heads(shuffled, ANCHORS, 64, 64, 0.3)[0], boxes)
    nhwc = [h.transpose(0, 2, 3, 1) for h in heads]
    assert np.array_equal(decode_heads(nhwc, ANCHORS, 64, 64, 0.3)[0], boxes)
    assert [h.shape for h in heads_as_nchw(nhwc)] == [h.shape for h in heads]


def test_decode_rejects_bad_heads():
    with pytest.raises(ValueError, match="3 heads"):
        decode_heads(_heads(64, {})[:2], ANCHORS, 64, 64, 0.3)
    bad = [np.zeros((1, 15, g, g), dtype=np.float32) for g in (8, 4, 2)]
    with pytest.raises(ValueError, match="5 \\+ classes"):
        decode_heads(bad, ANCHORS, 64, 64, 0.3)


def test_plant_box_inverts_the_decode():
    p = plant_box(300, 600, 139.5, 45, level=1, anchor=1, obj=0.8)
    assert (p.gx, p.gy) == (18, 37) and p.values == (0.625, 0.5, 0.75, 0.5, 0.8, 1.0)
    boxes, scores = decode_heads(planted_heads([p], 960), ANCHORS, 960, 960, 0.3)
    assert boxes.tolist() == [[300 - 69.75, 600 - 22.5, 300 + 69.75, 600 + 22.5]]
    with pytest.raises(ValueError, match="cannot be planted"):
        plant_box(300, 600, 1000, 45, level=1, anchor=1, obj=0.8)  # wider than 4 x the anchor


# -------------------------------------------------------------------------------------- mapping, NMS


def test_to_source_is_the_exact_inverse_and_clips():
    g = letterbox_geometry(1280, 721, 960)  # new 960 x 541, top 209
    src = to_source(np.array([[0.0, 209.0, 960.0, 750.0], [-20.0, 100.0, 480.0, 479.5]]), g)
    assert src[0].tolist() == [0.0, 0.0, 1280.0, 721.0]
    assert src[1].tolist() == pytest.approx([0.0, 0.0, 640.0, (479.5 - 209) * 721 / 541])
    g = letterbox_geometry(1920, 1080, 960)
    assert to_source(np.array([[479.0, 317.5, 489.0, 330.5]]), g).tolist() == [[958.0, 215.0, 978.0, 241.0]]


def test_iou_and_nms_by_hand():
    boxes = np.array(
        [
            [0, 0, 10, 10],  # A 0.9
            [1, 0, 11, 10],  # B 0.8: IoU(A, B) = 90 / 110 = 0.818
            [0, 0, 10, 6],  # C 0.7: IoU(A, C) = 60 / 100 = 0.6 exactly
            [20, 20, 30, 30],  # D 0.6: disjoint
        ],
        dtype=np.float64,
    )
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    assert iou_one(boxes[0], boxes[1:]).tolist() == pytest.approx([90 / 110, 0.6, 0.0])
    assert nms(boxes, scores, 0.6, 50).tolist() == [0, 2, 3]  # suppression needs IoU > 0.6
    assert nms(boxes, scores, 0.59, 50).tolist() == [0, 3]
    assert nms(boxes, scores, 0.85, 50).tolist() == [0, 1, 2, 3]
    assert nms(boxes, scores, 0.6, 2).tolist() == [0, 2]  # the cap counts kept boxes
    ties = nms(boxes[[3, 0]], np.array([0.5, 0.5]), 0.6, 50)
    assert ties.tolist() == [0, 1]  # equal scores keep their order
    zero = np.array([[5, 5, 5, 5], [5, 5, 5, 5]], dtype=np.float64)
    assert nms(zero, np.array([0.9, 0.8]), 0.6, 50).tolist() == [0, 1]  # empty unions are IoU 0


def test_postprocess_order_nms_on_normalised_coordinates_and_padding_boxes():
    # 1920 x 1080: the image sits at rows 210..750 of the letterbox; a box inside the top padding is dropped
    plants = [
        plant_box(484, 324, 10, 13, level=0, anchor=0, obj=0.7),
        plant_box(485, 324, 10, 13, level=0, anchor=1, obj=0.9),  # near-duplicate, higher score
        plant_box(480, 100, 10, 13, level=0, anchor=0, obj=0.95),  # in the padding
        plant_box(700, 400, 373, 81.5, level=2, anchor=2, obj=0.8),
    ]
    heads = planted_heads(plants, 960)
    g = letterbox_geometry(1920, 1080, 960)
    dets = postprocess(heads, ANCHORS, g, PostConfig(0.3, 0.6, 50))
    assert [d.box.as_list() for d in dets] == [
        # anchor 1 of P3 is (16, 30): w = (2 tw)^2 16 with tw = sqrt(10/16)/2 -> 10 (float32 rounding)
        pytest.approx([960.0, 215.0, 980.0, 241.0], abs=1e-4),
        [1027.0, 298.5, 1773.0, 461.5],
    ]
    assert [d.score for d in dets] == pytest.approx([0.9, 0.8])
    assert postprocess(heads, ANCHORS, g, PostConfig(0.3, 0.9, 50))[2].box.as_list() == [
        958.0,
        215.0,
        978.0,
        241.0,
    ]
    assert len(postprocess(heads, ANCHORS, g, PostConfig(0.3, 0.6, 1))) == 1
    assert [d.score for d in postprocess(heads, ANCHORS, g, PostConfig(0.85, 0.6, 50))] == pytest.approx(
        [0.9]
    )
    with pytest.raises(ValueError):
        PostConfig(confidence=1.5)
