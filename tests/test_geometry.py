import math

from hypothesis import given
from hypothesis import strategies as st

from dvoc_bench.core.geometry import (
    Box,
    Frame,
    Offset,
    Point,
    Size,
    clamp_point,
    offset_from_pixels,
    offset_to_pixels,
    paper_hit_radius,
    point_from_pixels,
    point_to_pixels,
)

SIZES = st.sampled_from([Size(800, 600), Size(1280, 720), Size(1920, 1080)])
COORD = st.floats(-5000, 5000, allow_nan=False)


def test_norm1000_maps_corners_to_first_and_last_pixel():
    s = Size(800, 600)
    assert point_to_pixels(Point(0, 0), Frame.NORM1000, s) == Point(0, 0)
    assert point_to_pixels(Point(1000, 1000), Frame.NORM1000, s) == Point(799, 599)
    assert point_to_pixels(Point(1, 1), Frame.NORM1, s) == Point(799, 599)
    # The authors' S1 answer (500, 500) is the centre of the canvas, not pixel (500, 500).
    p = point_to_pixels(Point(500, 500), Frame.NORM1000, s)
    assert math.isclose(p.x, 399.5) and math.isclose(p.y, 299.5)


def test_pixel_frame_is_identity():
    s = Size(800, 600)
    assert point_to_pixels(Point(12.5, 7), Frame.PIXEL, s) == Point(12.5, 7)
    assert offset_to_pixels(Offset(-3, 4), "pixel", s) == Offset(-3, 4)


@given(SIZES, COORD, COORD, st.sampled_from(list(Frame)))
def test_round_trip(size, x, y, frame):
    p = point_from_pixels(point_to_pixels(Point(x, y), frame, size), frame, size)
    assert math.isclose(p.x, x, abs_tol=1e-6) and math.isclose(p.y, y, abs_tol=1e-6)
    o = offset_from_pixels(offset_to_pixels(Offset(x, y), frame, size), frame, size)
    assert math.isclose(o.dx, x, abs_tol=1e-6) and math.isclose(o.dy, y, abs_tol=1e-6)


@given(SIZES, COORD, COORD, COORD, COORD, st.sampled_from(list(Frame)))
def test_offset_conversion_equals_difference_of_points(size, x0, y0, x1, y1, frame):
    """Converting an offset is the same as converting both ends (linear, no translation term)."""
    a, b = Point(x0, y0), Point(x1, y1)
    o = offset_to_pixels(b - a, frame, size)
    d = point_to_pixels(b, frame, size) - point_to_pixels(a, frame, size)
    assert math.isclose(o.dx, d.dx, abs_tol=1e-6) and math.isclose(o.dy, d.dy, abs_tol=1e-6)


@given(SIZES, COORD, COORD)
def test_clamp_stays_inside(size, x, y):
    p = clamp_point(Point(x, y), size)
    assert 0 <= p.x <= size.width - 1 and 0 <= p.y <= size.height - 1
    if 0 <= x <= size.width - 1 and 0 <= y <= size.height - 1:
        assert p == Point(x, y)


def test_box_contains_edges_and_centre():
    b = Box(360, 275, 440, 325)
    assert b.centre == Point(400, 300)
    assert b.contains(Point(360, 275)) and b.contains(Point(440, 325))
    assert not b.contains(Point(440.01, 300)) and not b.contains(Point(400, 274.9))


def test_paper_radius_matches_the_authors_values():
    # upstream-facts Appendix A: S1 40, S2 30, S3 60, S5 125
    assert paper_hit_radius(Box(360, 275, 440, 325)) == 40
    assert paper_hit_radius(Box(388, 294, 412, 306)) == 30
    assert paper_hit_radius(Box(300, 200, 420, 240)) == 60
    assert paper_hit_radius(Box(200, 224, 450, 256)) == 125


def test_the_frame_names_are_the_frames():
    from typing import get_args

    from dvoc_bench.core.geometry import Frame, FrameName

    assert list(get_args(FrameName)) == [f.value for f in Frame]
