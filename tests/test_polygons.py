"""Polygon geometry (CUActSpot targets): inside/edge/outside on a concave shape, the even-odd reading of a
shape that crosses itself, and which crossings make a polygon self-intersecting."""

from __future__ import annotations

from dvoc_bench.core.geometry import Point
from dvoc_bench.core.polygons import area, bounds, contains, self_intersection

L_SHAPE = [(0.0, 0.0), (100.0, 0.0), (100.0, 40.0), (40.0, 40.0), (40.0, 100.0), (0.0, 100.0)]
"""An L: its bounding box's centre (50, 50) lies outside it."""


def test_a_concave_polygon_contains_its_inside_and_its_edges_but_not_its_notch():
    assert contains(L_SHAPE, Point(20, 80)) and contains(L_SHAPE, (90, 20))
    assert not contains(L_SHAPE, bounds(L_SHAPE).centre)  # the notch
    assert contains(L_SHAPE, (70, 40)) and contains(L_SHAPE, (40, 70)) and contains(L_SHAPE, (0, 0))  # edges
    assert not contains(L_SHAPE, (100.01, 20)) and not contains(L_SHAPE, (-0.01, 50))
    assert not contains(L_SHAPE, (40.5, 40.5))  # just inside the notch's corner
    # a ray through a vertex's height counts that vertex once: (20, 40) and (20, 40.0001) are inside
    assert contains(L_SHAPE, (20, 40)) and contains(L_SHAPE, (20, 40.0001)) and contains(L_SHAPE, (20, 39.99))
    assert not contains([(0, 0), (10, 0)], (5, 0))  # fewer than 3 vertices: nothing is inside
    assert area(L_SHAPE) == 100 * 40 + 40 * 60


def test_a_figure_eight_is_read_even_odd_and_is_self_intersecting():
    bow = [(0.0, 0.0), (100.0, 100.0), (100.0, 0.0), (0.0, 100.0)]  # two triangles meeting at (50, 50)
    assert contains(bow, (90, 50)) and contains(bow, (10, 50)) and not contains(bow, (50, 20))
    assert self_intersection(bow) == (0, 2)
    assert self_intersection(bow, slack=8.0) == (0, 2)  # the crossing is 70 px from every corner
    assert self_intersection(L_SHAPE) is None and self_intersection(L_SHAPE, slack=8.0) is None


def test_a_closing_stroke_overshooting_the_first_corner_passes_within_the_slack_only():
    """The annotator's last vertex lands just past the first edge (CUActSpot's GUI-2103 R1 shape)."""
    over = [(937.43, 396.67), (1210.67, 400.87), (1206.47, 466.03), (933.23, 451.32), (939.53, 392.47)]
    assert self_intersection(over) == (0, 3)
    assert self_intersection(over, slack=8.0) is None  # crossing 1.6 px from vertex 0
    assert self_intersection(over, slack=1.0) == (0, 3)
    closed = [*L_SHAPE, L_SHAPE[0]]  # a repeated first vertex closing the ring is not an edge
    assert self_intersection(closed) is None


def test_inside_point_is_on_the_shape_and_off_what_is_to_be_avoided():
    from dvoc_bench.core.polygons import inside_point

    p = inside_point(L_SHAPE)
    assert p is not None and contains(L_SHAPE, p)  # the box centre (50, 50) is in the notch: not that
    square = [(0.0, 0.0), (100.0, 0.0), (100.0, 100.0), (0.0, 100.0)]
    assert inside_point(square) == Point(50, 50)
    hole = [(30.0, 30.0), (70.0, 30.0), (70.0, 70.0), (30.0, 70.0)]
    q = inside_point(square, [hole])
    assert q is not None and contains(square, q) and not contains(hole, q)
    assert inside_point(hole, [square]) is None  # wholly inside what is to be avoided
