"""Outcome measures of a final point: measured, never a single ambiguous ``success``."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dvoc_bench.core.geometry import Box, Point, Size, paper_hit_radius

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


# ------------------------------------------------------------------------------------ phones

PHONE_RULES = ("ac_box", "ac_grown", "ac_screen14")
"""The three AndroidControl conventions a phone trial is also scored by (:func:`android_control`), named
as the trial columns that hold them."""

AC_GROW = 1.2
"""``ac_grown``: the target box scaled by this about its centre (Qwen2.5-VL's AndroidControl evaluation:
``ANNOTATION_WIDTH/HEIGHT_AUGMENT_FRACTION = 1.2``; the AITW original used 1.4)."""
AC_NEAR = 0.04
"""``ac_grown``: or within this fraction of the screen's longer side of the reference point
(``0.04 * max(width, height)``, the same evaluation's fallback distance)."""
AC_SCREEN = 0.14
"""``ac_screen14``: the distance to the reference point in screen-normalised coordinates (``x / W``,
``y / H``) at most this (AITW's ``_TAP_DISTANCE_THRESHOLD = 0.14``, "fraction of the screen", which
OS-Atlas and UI-TARS used on AndroidControl)."""


@dataclass(frozen=True)
class PhoneScore:
    """A tap under the three AndroidControl conventions (docs/phones.md names their sources). The
    reference point the datasets annotate (the recorded tap) is the target box's centre here."""

    ac_box: bool
    """Inside the target box, edges included."""
    ac_grown: bool
    """Inside the box scaled ×1.2 about its centre, or within ``0.04 * max(W, H)`` px of its centre."""
    ac_screen14: bool
    """``hypot((x - cx) / W, (y - cy) / H) <= 0.14``: within 14 % of the screen, each axis as a fraction of
    its own side (an ellipse on a portrait screen, not a circle)."""


def android_control(final: Point | None, target: Box, screen: Size) -> PhoneScore:
    """Score a final point (screenshot pixels) on a phone screen of ``screen`` pixels by AndroidControl's
    three conventions."""
    if final is None:
        return PhoneScore(False, False, False)
    c = target.centre
    hw, hh = AC_GROW * target.w / 2, AC_GROW * target.h / 2
    grown = abs(final.x - c.x) <= hw and abs(final.y - c.y) <= hh
    near = final.dist(c) <= AC_NEAR * max(screen.width, screen.height)
    screen14 = math.hypot((final.x - c.x) / screen.width, (final.y - c.y) / screen.height) <= AC_SCREEN
    return PhoneScore(target.contains(final), grown or near, screen14)
