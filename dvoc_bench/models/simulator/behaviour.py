"""The draws of one simulated answer: the element aimed at, the perceived target, the native frame, the
near-target behaviour and axis dropping, the gain jitter and the rounding (steps 2, 3, 5, 6 and 8 of
:mod:`dvoc_bench.models.simulator`). Each function takes the call's generator; none keeps state."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dvoc_bench.geometry import Box, Frame, Offset, Point, clamp_point
from dvoc_bench.models.simulator.profile import (
    NATIVE_FRAMES,
    AxisDropSpec,
    NearSpec,
    NoiseSpec,
    OutlierSpec,
    SimProfile,
)
from dvoc_bench.scenes.types import Element, SceneTruth

__all__ = [
    "AXIS_DROP_MIN_PX",
    "MID_PX",
    "NEAR_PX",
    "aim",
    "box_distance",
    "frame_of",
    "gain_jitter",
    "near_target",
    "perceive",
    "point_outliers",
    "round_in_frame",
    "sample_frame",
]

NEAR_PX = 30.0
"""Inner near-target threshold (px) of §9.2's bins."""
MID_PX = 100.0
"""Outer near-target threshold (px) of §9.2's bins."""
AXIS_DROP_MIN_PX = 30.0
"""Only an axis further off than this can be dropped (§9.3's definition)."""


def _interactive(truth: SceneTruth) -> list[Element]:
    return [e for e in truth.elements if e.interactive]


def _intended(
    truth: SceneTruth, text: str, no_task: str, rng: np.random.Generator
) -> tuple[Point, str | None]:
    """Centre of the element the model aims at, and its id (``None`` for a bare target box)."""
    if truth.instruction and truth.instruction in text:
        return truth.target_box.centre, truth.target_id
    elems = _interactive(truth)
    if not elems:
        return truth.target_box.centre, truth.target_id
    e = elems[0] if no_task == "first_element" else elems[int(rng.integers(len(elems)))]
    return e.box.centre, e.id


def aim(truth: SceneTruth, text: str, prof: SimProfile, rng: np.random.Generator) -> tuple[Point, str | None]:
    """Centre and id of the element aimed at: the target when the task is in the text, else ``no_task``'s
    pick, except that a prompt without the task aims at the target with ``no_task_target`` (no extra draw
    when it is 0, so older profiles keep their random stream)."""
    task_given = bool(truth.instruction) and truth.instruction in text
    if prof.no_task_target > 0 and not task_given and rng.random() < prof.no_task_target:
        return truth.target_box.centre, truth.target_id
    return _intended(truth, text, prof.no_task, rng)


def perceive(
    truth: SceneTruth,
    centre: Point,
    aimed_id: str | None,
    noise: NoiseSpec,
    noise_px: float | None,
    outlier: OutlierSpec,
    outlier_p: float,
    rng: np.random.Generator,
) -> Point:
    """Perceived target ``T^`` in px: centre (or an outlier) + inlier noise, clamped to the canvas."""
    if outlier_p > 0 and rng.random() < outlier_p:
        others = [e for e in _interactive(truth) if e.id != aimed_id]
        if others and rng.random() < outlier.wrong_element_share:
            centre = others[int(rng.integers(len(others)))].box.centre
        else:
            mag = float(rng.uniform(outlier.min_px, outlier.max_px))
            ang = float(rng.uniform(0.0, 2.0 * math.pi))
            centre = Point(centre.x + mag * math.cos(ang), centre.y + mag * math.sin(ang))
    ex, ey = noise.sample(rng, noise_px)
    return clamp_point(Point(centre.x + ex, centre.y + ey), truth.size)


def point_outliers(prof: SimProfile, truth: SceneTruth, aimed: str | None) -> tuple[OutlierSpec, float]:
    """Outlier process of a point answer: the profile's, or with ``oneshot.wrong_element_only`` always
    another interactive element (none when the scene has no other)."""
    if not prof.oneshot.wrong_element_only:
        return prof.outlier, prof.oneshot.outlier_p
    others = any(e.id != aimed for e in _interactive(truth))
    return prof.outlier.model_copy(
        update={"wrong_element_share": 1.0}
    ), prof.oneshot.outlier_p if others else 0.0


def sample_frame(weights: Mapping[str, float], rng: np.random.Generator) -> str:
    """One native frame drawn from ``weights`` (renormalised)."""
    names = list(NATIVE_FRAMES)
    p = np.asarray([weights.get(n, 0.0) for n in names], dtype=float)
    return names[int(rng.choice(len(names), p=p / p.sum()))]


def near_target(o: Offset, near: NearSpec, axis_drop: AxisDropSpec, rng: np.random.Generator) -> Offset:
    """Apply §9.2/§9.3 near-target behaviour and axis dropping to a perceived offset (px)."""
    d = o.magnitude
    if d < NEAR_PX:
        if rng.random() < near.p_zero_below_30:
            return Offset(0.0, 0.0)
    elif d < MID_PX:
        if rng.random() < near.p_zero_30_100:
            return Offset(0.0, 0.0)
        if rng.random() < near.p_reverse_30_100:
            o = o.scaled(-1.0)
    if d < MID_PX:
        o = o.scaled(near.shrink_below_100)
    p_x, p_y = axis_drop.per_axis()
    if (p_x > 0 or p_y > 0) and d < axis_drop.max_px:
        reach = axis_drop.max_axis_px
        drop_x = abs(o.dx) > AXIS_DROP_MIN_PX and rng.random() < p_x and abs(o.dx) <= reach
        drop_y = abs(o.dy) > AXIS_DROP_MIN_PX and rng.random() < p_y and abs(o.dy) <= reach
        if drop_x and drop_y:  # never both: keep the larger component
            drop_x, drop_y = abs(o.dx) < abs(o.dy), abs(o.dx) >= abs(o.dy)
        o = Offset(0.0 if drop_x else o.dx, 0.0 if drop_y else o.dy)
    return o


def gain_jitter(o: Offset, noise: NoiseSpec, rng: np.random.Generator) -> Offset:
    """Each axis of ``o`` times ``exp(noise.rel * z)`` (``z`` from the noise family, scale 1, clipped to
    +-2); unchanged, with no draw, when ``rel`` is 0."""
    if noise.rel <= 0:
        return o
    zx, zy = noise.sample(rng, 1.0)
    fx = math.exp(noise.rel * max(-2.0, min(2.0, zx)))
    fy = math.exp(noise.rel * max(-2.0, min(2.0, zy)))
    return Offset(o.dx * fx, o.dy * fy)


def round_in_frame(v: float, frame: str) -> float | int:
    """Rounding like real models: integers for pixel / norm1000 / mixed, 3 decimals for norm1."""
    if frame == "norm1":
        return round(v, 3)
    return int(round(v))


def frame_of(name: str) -> Frame:
    """The geometry frame of a native frame name (``mixed`` answers are taken for pixels)."""
    return Frame.PIXEL if name == "mixed" else Frame(name)


def box_distance(b: Box, p: Point) -> float:
    """Distance from ``p`` to the box (0 inside)."""
    dx = max(b.x0 - p.x, 0.0, p.x - b.x1)
    dy = max(b.y0 - p.y, 0.0, p.y - b.y1)
    return math.hypot(dx, dy)
