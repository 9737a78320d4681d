"""The scoring rules at their edges: each rule's comparison is the one its record field documents."""

from __future__ import annotations

import pytest

from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.scoring import score

TARGET = Box(100.0, 100.0, 140.0, 120.0)  # centre (120, 110); the paper's radius max(20, 10, 30) = 30


@pytest.mark.parametrize(
    ("dx", "within_eps", "hit_radius"),
    [(29.999, True, True), (30.0, False, False), (30.001, False, False)],
)
def test_within_eps_and_the_paper_radius_are_strict(dx, within_eps, hit_radius):
    s = score(Point(120.0 + dx, 110.0), TARGET, epsilon=30.0)
    assert s.radius_px == 30.0 and s.final_dist_px == pytest.approx(dx)
    assert (s.within_eps, s.hit_radius) == (within_eps, hit_radius)


def test_the_paper_radius_grows_with_the_box_and_its_edge_is_strict():
    wide = Box(0.0, 0.0, 100.0, 10.0)  # radius max(50, 5, 30) = 50
    assert score(Point(50.0 + 49.99, 5.0), wide, 30.0).hit_radius
    assert not score(Point(50.0 + 50.0, 5.0), wide, 30.0).hit_radius
    assert score(Point(100.0, 5.0), wide, 30.0, radius_min=60.0).hit_radius  # radius_min wins: 60


@pytest.mark.parametrize(
    ("point", "hit"),
    [((100.0, 100.0), True), ((140.0, 120.0), True), ((140.01, 110.0), False), ((120.0, 99.99), False)],
)
def test_the_box_rule_includes_its_edges(point, hit):
    assert score(Point(*point), TARGET, 30.0).hit is hit


def test_no_final_point_scores_nothing():
    s = score(None, TARGET, 30.0)
    assert s.final_dist_px is None and not (s.hit or s.within_eps or s.hit_radius)
