"""The harness's one resize and crop (dvoc_bench.draw.sending): sizes, exact maps, nested crops, zoom
windows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from dvoc_bench.core.geometry import Box, Offset, Point, Size
from dvoc_bench.draw.sending import View, resize_image, sent_size, view_of, zoom_window

FOURK = Size(3840, 2160)


def test_sent_size_fits_every_limit_keeps_aspect_and_never_upscales():
    assert sent_size(FOURK, 1568) == Size(1568, 882)
    assert sent_size(FOURK) == FOURK and sent_size(Size(800, 600), 1568) == Size(800, 600)
    s = sent_size(FOURK, None, 1_000_000)
    assert s.width * s.height <= 1_000_000 and abs(s.width / s.height - 16 / 9) < 0.01
    assert s.width * s.height > 990_000  # the largest that fits, not just any
    both = sent_size(FOURK, 1568, 500_000)  # the tighter limit wins
    assert both.width * both.height <= 500_000 and both.width < 1568
    assert sent_size(Size(1568, 882), 1568) == Size(1568, 882)  # exactly at the limit: as it is


def test_identity_view_changes_nothing():
    v = view_of(Size(800, 600))
    assert v.identity and v.crop_list() is None
    p = Point(123.4, 56.7)
    assert (
        v.to_sent(p) is p
        and v.to_original(p) is p
        and v.offset_to_original(Offset(3.3, 1.1)) == Offset(3.3, 1.1)
    )


def _relative(child: View, parent: View) -> View:
    """``child``'s crop expressed in pixels of ``parent``'s sent image (the nested reading of a zoom)."""
    lo, hi = (
        parent.to_sent(Point(child.crop.x0, child.crop.y0)),
        parent.to_sent(Point(child.crop.x1, child.crop.y1)),
    )
    return View(Box(lo.x, lo.y, hi.x, hi.y), child.sent, parent.sent)


def test_mapping_through_three_nested_crops_is_exact():
    """A 4K screen sent at 1024x576, then three nested crops (each inside the last), each sent at its own
    size. Chosen so every scale is a power of two: float arithmetic is then exact, and the direct map of the
    last crop must equal, to the last bit, the chain of maps through every crop's parent."""
    full = View(Box(0, 0, 3840, 2160), Size(960, 540), FOURK)  # scale 1/4
    c1 = View(Box(1920, 1024, 3840, 2104), Size(960, 540), FOURK)  # 1920x1080 crop, scale 1/2
    c2 = View(Box(2880, 1536, 3840, 2076), Size(960, 540), FOURK)  # 960x540, scale 1
    c3 = View(Box(3360, 1792, 3600, 1927), Size(960, 540), FOURK)  # 240x135, scale 4 (upscaled by hand)
    for outer, inner in ((full, c1), (c1, c2), (c2, c3)):
        assert outer.crop.x0 <= inner.crop.x0 < inner.crop.x1 <= outer.crop.x1
    q = Point(413.25, 97.5)  # the model's answer in the last image sent
    direct = c3.to_original(q)
    assert direct == Point(3360 + 413.25 / 4, 1792 + 97.5 / 4) == Point(3463.3125, 1816.375)
    # the chain: last sent -> c2's sent -> c1's sent -> full's sent -> screen
    p = _relative(c3, c2).to_original(q)
    p = _relative(c2, c1).to_original(p)
    p = _relative(c1, full).to_original(p)
    assert full.to_original(p) == direct
    assert c3.to_sent(direct) == q  # and back, exactly
    assert c3.offset_to_original(Offset(8, -4)) == Offset(2, -1)


def test_general_views_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(200):
        x0, y0 = int(rng.integers(0, 3000)), int(rng.integers(0, 1600))
        crop = Box(x0, y0, x0 + int(rng.integers(200, 840)), y0 + int(rng.integers(150, 560)))
        v = view_of(FOURK, crop, int(rng.integers(100, 1600)))
        q = Point(float(rng.uniform(0, v.sent.width)), float(rng.uniform(0, v.sent.height)))
        assert v.to_sent(v.to_original(q)).dist(q) < 1e-9
        b = v.box_to_sent(crop)
        assert (b.x0, b.y0) == (0, 0) and abs(b.x1 - v.sent.width) < 1e-9 and abs(b.y1 - v.sent.height) < 1e-9


def test_resized_pixels_sit_where_the_map_says():
    img = np.zeros((2160, 3840, 3), dtype=np.uint8)
    img[1000:1040, 2000:2040] = 255  # a 40x40 white block centred on (2019.5, 1019.5)
    for crop in (None, Box(1500, 600, 2780, 1320)):
        v = view_of(FOURK, crop, 1024)
        small = resize_image(img, v)
        assert small.shape == (v.sent.height, v.sent.width, 3)
        ys, xs = np.nonzero(small[..., 0] > 127)
        found = Point(float(xs.mean()), float(ys.mean()))
        # the block spans edges 2000..2040; the map takes edges to edges, so its centre pixel sits half a
        # sent pixel before the mapped centre edge (a sub-pixel bias of 0.5/s - 0.5 screen px, < 1 px here)
        want = v.to_sent(Point(2020, 1020))
        assert found.dist(Point(want.x - 0.5, want.y - 0.5)) < 0.3, (crop, found, want)
    assert resize_image(img, view_of(FOURK)) is img


@pytest.mark.parametrize("centre", [Point(10, 10), Point(3830, 2150), Point(1920, 1080)])
def test_zoom_window_halves_keeps_aspect_stays_inside_and_respects_min_crop(centre):
    prev = Box(0, 0, 3840, 2160)
    w1 = zoom_window(centre, prev, FOURK, 2.0, 256)
    assert (w1.w, w1.h) == (1920, 1080) and w1.x0 >= 0 and w1.x1 <= 3840 and w1.y0 >= 0 and w1.y1 <= 2160
    if 960 <= centre.x <= 2880:
        assert w1.centre.dist(centre) < 1
    small = w1
    for _ in range(6):
        small = zoom_window(centre, small, FOURK, 2.0, 256)
    assert small.h == 256 and abs(small.w / small.h - 16 / 9) < 0.01  # the floor, aspect kept
    assert all(float(v).is_integer() for v in small.as_list())


# ------------------------------------------------------------------ sent_size over sizes, under each cap

CAPS = [
    (1568, None),  # sim-ideal-1568
    (1568, 1_150_000),  # Claude: both limits
    (None, 2_073_600),  # openai-computer-use: pixels only
    (1024, None),
    (None, 16_777_216),  # the Qwen-VL processors' cap: nothing a screen reaches
]
"""``(max_side, max_pixels)`` pairs of the configs and a few more."""


def _expected_scale(w: int, h: int, max_side: int | None, max_pixels: int | None) -> float:
    """The downscale the limits ask for, computed apart from :func:`sent_size`: the smallest of 1, the
    side ratio and the square root of the pixel ratio."""
    ratios = [1.0]
    if max_side is not None:
        ratios.append(max_side / max(w, h))
    if max_pixels is not None:
        ratios.append((max_pixels / (w * h)) ** 0.5)
    return min(ratios)


@pytest.mark.parametrize(("max_side", "max_pixels"), CAPS)
@example(w=1920, h=1080)  # a Full HD screen: only the long side exceeds 1568
@example(w=1080, h=1920)  # the same, portrait
@example(w=3840, h=2160)
@example(w=2160, h=3840)
@example(w=1568, h=882)  # exactly at the side limit
@example(w=1569, h=400)
@example(w=12, h=7)  # tiny
@example(w=1, h=1)
@example(w=2560, h=1440)
@given(w=st.integers(1, 8000), h=st.integers(1, 8000))
@settings(max_examples=150, deadline=None)
def test_sent_size_obeys_each_cap_keeps_aspect_and_is_the_largest(w, h, max_side, max_pixels):
    assume(max(w, h) <= 8 * min(w, h))  # screens and windows; a 1 x 8000 strip rounds to nothing sensible
    got = sent_size(Size(w, h), max_side, max_pixels)
    s = _expected_scale(w, h, max_side, max_pixels)
    if s >= 1.0:
        assert got == Size(w, h)  # fits: sent as it is
        return
    assert got.width <= w and got.height <= h  # never upscaled
    if max_side is not None:
        assert max(got.width, got.height) <= max_side
    if max_pixels is not None:
        assert got.width * got.height <= max_pixels
    # the largest that fits, aspect kept: each side within rounding of the exact downscale. Rounding both
    # sides up can overshoot the pixel limit by about (w + h) * s / 2 pixels; taking that back off costs
    # the long side up to about aspect / 4 pixels more.
    tol = 1.0 + max(w, h) / min(w, h) / 4
    assert abs(got.width - w * s) <= tol and abs(got.height - h * s) <= tol, (got, w * s, h * s)
    if max_side is not None and s == max_side / max(w, h):  # the side limit binds: the long side is on it
        assert max(got.width, got.height) == max_side


def test_full_hd_under_the_side_cap_is_downscaled():
    assert sent_size(Size(1920, 1080), 1568) == Size(1568, 882)
    assert sent_size(Size(1080, 1920), 1568) == Size(882, 1568)
    assert sent_size(Size(1920, 1080), 1568, 1_150_000) == Size(1430, 804)  # the pixel limit binds instead
