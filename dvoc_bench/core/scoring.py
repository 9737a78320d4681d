"""Outcome measures of a final point: measured, never a single ambiguous ``success``."""

from __future__ import annotations

from dataclasses import dataclass

from dvoc_bench.core.geometry import Box, Point, paper_hit_radius

RULES = ("hit", "within_eps", "hit_radius")
"""The success rules: the names of a trial's three measures of its final point (:class:`Score`), which
tables choose from."""


@dataclass(frozen=True)
class Score:
    """Every rule at once; tables pick one explicitly."""

    final_dist_px: float | None
    """Distance from the final point to the target box centre (``None`` without a final point)."""
    hit: bool
    """The honest rule: the final point lies inside the target element's box."""
    within_eps: bool
    """``final_dist_px < epsilon``."""
    hit_radius: bool
    """The paper's rule: ``final_dist_px < max(w/2, h/2, 30)`` (a circle, strict)."""
    radius_px: float
    """The paper's radius for this target."""


def score(final: Point | None, target: Box, epsilon: float, radius_min: float = 30.0) -> Score:
    """Score a final point against the target box under every rule."""
    radius = paper_hit_radius(target, radius_min)
    if final is None:
        return Score(None, False, False, False, radius)
    d = final.dist(target.centre)
    return Score(d, target.contains(final), d < epsilon, d < radius, radius)
