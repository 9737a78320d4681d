"""The draws of one simulated answer: the element aimed at, the perceived target, the native frame, the
near-target behaviour and axis dropping, the gain jitter and the rounding (steps 2, 3, 5, 6 and 8 of
:mod:`dvoc_bench.models.simulator`). Each function takes the call's generator; none keeps state."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from dvoc_bench.core.geometry import Box, Frame, Offset, Point, clamp_point
from dvoc_bench.core.scene import Element, SceneTruth
from dvoc_bench.models.simulator.profile import (
    NATIVE_FRAMES,
    AxisDropSpec,
    NearSpec,
    NoiseSpec,
    OutlierSpec,
    SimProfile,
)

__all__ = [
    "AXIS_DROP_MIN_PX",
    "BOX_NEAR_PX",
    "MID_PX",
    "NEAR_PX",
    "aim",
    "aimed_box",
    "frame_of",
    "gain_jitter",
    "near_target",
    "perceived_box_distance",
    "perceive",
    "point_outliers",
    "round_in_frame",
    "sample_frame",
]

NEAR_PX = 30.0
"""Inner near-target threshold (px) of the residual statistics' bins."""
MID_PX = 100.0
"""Outer near-target threshold (px) of the residual statistics' bins."""
BOX_NEAR_PX = 10.0
"""``near.zero_rule: box``: a crosshair at most this far outside the box aimed at is "near" it."""
AXIS_DROP_MIN_PX = 30.0
"""Only an axis further off than this can be dropped (the axis-drop statistic's definition)."""


def _interactive(truth: SceneTruth) -> list[Element]:
    return [e for e in truth.elements if e.interactive]


def _words(s: str) -> str:
    return " ".join(re.findall(r"\w+", s.casefold()))


def task_given(truth: SceneTruth, text: str) -> bool:
    """Whether ``text`` asks for the scene's target: it holds the scene's instruction (exactly, or with
    other spacing, case or punctuation), or it names the target by its label and names no other interactive
    element (``Find the button labeled 'Submit'`` on S3, whose instruction is worded otherwise)."""
    if not truth.instruction:
        return False
    if truth.instruction in text:
        return True
    words = f" {_words(text)} "
    if f" {_words(truth.instruction)} " in words:
        return True
    labels = {e.id: _words(e.label) for e in _interactive(truth) if _words(e.label)}
    mine = labels.get(truth.target_id)
    if not mine or f" {mine} " not in words:
        return False
    others = [lab for eid, lab in labels.items() if eid != truth.target_id and lab != mine]
    return not any(f" {lab} " in words for lab in others)


def _intended(
    truth: SceneTruth, text: str, no_task: str, rng: np.random.Generator
) -> tuple[Point, str | None]:
    """Centre of the element the model aims at, and its id (``None`` for a bare target box)."""
    if task_given(truth, text):
        return truth.aim, truth.target_id
    elems = _interactive(truth)
    if not elems:
        return truth.aim, truth.target_id
    e = elems[0] if no_task == "first_element" else elems[int(rng.integers(len(elems)))]
    return e.box.centre, e.id


def aim(truth: SceneTruth, text: str, prof: SimProfile, rng: np.random.Generator) -> tuple[Point, str | None]:
    """Centre and id of the element aimed at: the target when the task is in the text, else ``no_task``'s
    pick, except that a prompt without the task aims at the target with ``no_task_target`` (no extra draw
    when it is 0, so older profiles keep their random stream)."""
    if prof.no_task_target > 0 and not task_given(truth, text) and rng.random() < prof.no_task_target:
        return truth.aim, truth.target_id
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
    seen = Point(centre.x + ex, centre.y + ey)
    box = aimed_box(truth, aimed_id) if noise.within_target else None
    if box is not None and box.contains(centre):  # an outlier's centre lies off the box: left as it fell
        seen = Point(_within(seen.x, box.x0, box.x1), _within(seen.y, box.y0, box.y1))
    return clamp_point(seen, truth.size)


def _within(v: float, lo: float, hi: float) -> float:
    """``v`` put into ``[lo, hi]`` half a pixel in from each end (the middle when the span is under 1 px)."""
    m = min(0.5, (hi - lo) / 2)
    return min(max(v, lo + m), hi - m)


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


def _zero_rate(d: float, box_px: float | None, near: NearSpec) -> float:
    """Probability of a ``(0, 0)`` report: by the perceived offset's bin (``zero_rule: distance``) or by how
    far the perceived crosshair lies from the perceived target box (``box``; ``box_px`` None = unknown, no
    zero; inside the box by ``d``, the perceived offset's length, when the profile splits the in-box rate)."""
    if near.zero_rule == "box":
        if box_px is None or box_px > BOX_NEAR_PX:
            return 0.0
        if box_px > 0:
            return near.p_zero_box_near
        if d < 15.0 and near.p_zero_in_box_below_15 is not None:
            return near.p_zero_in_box_below_15
        if d < NEAR_PX and near.p_zero_in_box_below_30 is not None:
            return near.p_zero_in_box_below_30
        return near.p_zero_in_box
    if d < NEAR_PX:
        return near.p_zero_below_30
    return near.p_zero_30_100 if d < MID_PX else 0.0


def perceived_box_distance(o: Offset, extent: tuple[float, float] | None) -> tuple[float, float] | None:
    """Per axis, how far the crosshair lies outside the target box *as the model perceives it*: a box of
    ``extent`` (width, height, px) centred on the perceived target, ``o`` away from the crosshair (0 within
    the box's span on that axis; ``None`` when the extent is unknown). The stop decision reads only this and
    ``o``: the target's true position enters through the perceived offset's noise and nothing else."""
    if extent is None:
        return None
    return max(abs(o.dx) - extent[0] / 2.0, 0.0), max(abs(o.dy) - extent[1] / 2.0, 0.0)


def near_target(
    o: Offset,
    near: NearSpec,
    axis_drop: AxisDropSpec,
    rng: np.random.Generator,
    extent: tuple[float, float] | None = None,
) -> Offset:
    """Apply the near-target behaviour and axis dropping to a perceived offset ``o`` (px). ``extent`` is the
    (width, height) of the box aimed at, as seen in the image; ``near.zero_rule: box`` and
    ``axis_drop.p_x_in_span`` / ``p_y_in_span`` compare the crosshair with a box of that extent around the
    *perceived* target (:func:`perceived_box_distance`), never with the true box: a model that stops "on
    the button" stops where it believes the button is."""
    d = o.magnitude
    box_px = perceived_box_distance(o, extent)
    span = (False, False) if box_px is None else (box_px[0] <= BOX_NEAR_PX, box_px[1] <= BOX_NEAR_PX)
    box_d = None if box_px is None else math.hypot(*box_px)
    by_box = near.zero_rule == "box"
    if by_box and rng.random() < _zero_rate(d, box_d, near):
        return Offset(0.0, 0.0)
    if d < NEAR_PX:
        if not by_box and rng.random() < near.p_zero_below_30:
            return Offset(0.0, 0.0)
    elif d < MID_PX:
        if not by_box and rng.random() < near.p_zero_30_100:
            return Offset(0.0, 0.0)
        if rng.random() < near.p_reverse_30_100:
            o = o.scaled(-1.0)
    # the axis test reads the offset as perceived, before the shrink (as the axis-drop statistic
    # reads the truth)
    seen = o
    if d < near.shrink_below_px:
        o = o.scaled(near.shrink_below_100)
    p_x, p_y = axis_drop.per_axis()
    in_x = span[0] and axis_drop.p_x_in_span is not None
    in_y = span[1] and axis_drop.p_y_in_span is not None
    if (p_x > 0 or p_y > 0 or in_x or in_y) and d < axis_drop.max_px:
        reach = axis_drop.max_axis_px
        if in_x:  # aligned with the box on x: "dx = 0" whatever the offset
            drop_x = o.dx != 0 and rng.random() < float(axis_drop.p_x_in_span or 0.0)
        else:
            drop_x = abs(seen.dx) > AXIS_DROP_MIN_PX and rng.random() < p_x and abs(seen.dx) <= reach
        if in_y:
            drop_y = o.dy != 0 and rng.random() < float(axis_drop.p_y_in_span or 0.0)
        else:
            drop_y = abs(seen.dy) > AXIS_DROP_MIN_PX and rng.random() < p_y and abs(seen.dy) <= reach
        if drop_x and drop_y:  # never both: keep the larger component
            drop_x, drop_y = abs(o.dx) < abs(o.dy), abs(o.dx) >= abs(o.dy)
        # a drop never makes a (0, 0) report (the statistic counts non-zero replies; a zero is the
        # zero rule's)
        drop_x = drop_x and abs(o.dy) >= 1.0
        drop_y = drop_y and abs(o.dx) >= 1.0
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
    """Rounding like real models: integers for pixel / norm1000 / mixed, 3 decimals for norm1, one
    decimal for touch1000 (the phone agent's touch coordinates)."""
    if frame == "norm1":
        return round(v, 3)
    if frame == "touch1000":
        return round(v, 1)
    return int(round(v))


def frame_of(name: str) -> Frame:
    """The geometry frame of a native frame name (``mixed`` answers are taken for pixels)."""
    return Frame.PIXEL if name == "mixed" else Frame(name)


def aimed_box(truth: SceneTruth, aimed_id: str | None) -> Box:
    """The box of the element aimed at (the target box when ``aimed_id`` is the target's or ``None``)."""
    if aimed_id is not None and aimed_id != truth.target_id:
        for e in truth.elements:
            if e.id == aimed_id:
                return e.box
    return truth.target_box
