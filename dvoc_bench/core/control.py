"""Damped correction and the stop policy. Pure functions, no I/O.

The loop, per iteration ``i`` (0-based): show the draft, get a report ``r_i`` (offset in pixels and a
confidence, or an empty reply), evaluate the policy on all reports so far, and on ``refine`` move the
draft by ``alpha_i * r_i`` (clamped to the image). The policy rules, in order:

1. ``abort_oscillation``: at least three reports and the last three magnitudes are non-decreasing
   (``m[-3] <= m[-2] <= m[-1]``, ties included, confidence ignored). Empty replies count as magnitude 0.
2. ``abort_stuck``: the last ``window`` reports are all empty (no usable answer) or exactly (0, 0) with
   confidence 0 — what the authors' harness made of a missing tool call.
3. ``act``: the last ``window`` reports all have magnitude ``< epsilon`` and confidence ``>= threshold``
   (a missing confidence counts as 0).
4. ``refine`` otherwise. The iteration cap is checked by the loop before each call, not here.

Because rule 1 runs before rule 3, ``[0, 0, 0]`` aborts rather than acts — exactly as upstream.

Final point: on ``act`` and the aborts the draft is not moved, so the final point is the last *verified*
draft (the last reported residual is never applied); on ``max_iterations`` it is the last corrected,
unverified draft.

Alpha schedules (indexed by the iteration of the report just made):

- ``decay``: 1.0, 0.5, then 0.25 (the paper's default).
- ``constant``: a fixed alpha (0.5 in the paper's ablation).
- ``undamped``: 1.0.
- ``adaptive`` (ours): start at 1.0. After each report compare it with the previous non-empty report:
  if the direction flipped (negative dot product) or the magnitude grew, the last step overshot or
  diverged, so alpha halves (floor 0.125); if the direction is consistent and the magnitude fell by at
  least a quarter, the correction is working but not overshooting, so alpha grows by 1.5x (cap 1.0);
  otherwise it stays. Empty reports leave it unchanged. Rationale: a correctly converted model needs no
  damping (decay wastes iterations at 0.25), while one with a unit gain > 1 oscillates and gets damped
  after one flip instead of by a fixed calendar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import Field

from dvoc_bench.core.declare import Declared, PosFloat, PosInt, Prob
from dvoc_bench.core.geometry import Offset, Point, Size, clamp_point

AlphaSchedule = Literal["decay", "constant", "undamped", "adaptive"]
"""The alpha schedules (``alphas=[...]``)."""
ALPHA_SCHEDULES: tuple[str, ...] = get_args(AlphaSchedule)
Decision = Literal["refine", "act", "abort_oscillation", "abort_stuck"]
"""The policy's decision after a report (the rules above; ``decision`` of a DVOC step)."""
DECISIONS: tuple[str, ...] = get_args(Decision)


@dataclass(frozen=True)
class Report:
    """One verifier answer as the policy sees it."""

    offset: Offset | None
    """Reported offset in pixels, ``None`` for an empty / unparseable reply."""
    confidence: float | None
    """Reported confidence in [0, 1], ``None`` when missing."""

    @property
    def empty(self) -> bool:
        return self.offset is None

    @property
    def magnitude(self) -> float:
        return 0.0 if self.offset is None else self.offset.magnitude

    @property
    def conf(self) -> float:
        return 0.0 if self.confidence is None else self.confidence


class LoopConfig(Declared):
    """The DVOC loop's knobs, declared once: the stop policy (``epsilon``, ``threshold``, ``window``), the
    iteration cap, the ``constant`` schedule's alpha and the paper's scoring radius. ``loop:`` in the config
    (:mod:`dvoc_bench.runner.settings`); a trial carries them flat in its spec (:meth:`TrialSpec.loop`)."""

    epsilon: PosFloat = 30.0
    """Pixels; a report below this counts as on target (also the within-eps rule)."""
    threshold: Prob = 0.5
    """Minimum confidence to act."""
    window: PosInt = 2
    """Consecutive small confident reports needed to act (and empty ones to give up)."""
    max_iterations: PosInt = 15
    """DVOC iteration cap."""
    alpha_constant: float = Field(0.5, gt=0.0, le=2.0)
    """Alpha of the ``constant`` schedule."""
    hit_radius_min: float = Field(30.0, ge=0.0)
    """The paper's radius ``max(w/2, h/2, this)``."""


class AdaptiveConfig(Declared):
    """Knobs of the ``adaptive`` schedule (``adaptive:`` in the config)."""

    start: PosFloat = 1.0
    """Alpha at iteration 0."""
    shrink: float = Field(0.5, gt=0.0, lt=1.0)
    """Factor applied after a sign flip or growth."""
    grow: float = Field(1.5, ge=1.0)
    """Factor applied after a consistent, clearly shrinking report."""
    floor: PosFloat = 0.125
    """Smallest alpha."""
    cap: PosFloat = 1.0
    """Largest alpha."""
    progress: float = Field(0.75, gt=0.0, le=1.0)
    """A report counts as clearly shrinking when ``m_k <= progress * m_{k-1}``."""


def decide(reports: Sequence[Report], cfg: LoopConfig) -> Decision:
    """The policy decision after the last report (see the module docstring for the rules)."""
    n = len(reports)
    if n >= 3:
        m3, m2, m1 = (r.magnitude for r in reports[-3:])
        if m3 <= m2 <= m1:
            return "abort_oscillation"
    if n >= cfg.window:
        last = reports[-cfg.window :]
        if all(r.empty or (r.magnitude == 0.0 and r.conf == 0.0) for r in last):
            return "abort_stuck"
        if all(not r.empty and r.magnitude < cfg.epsilon and r.conf >= cfg.threshold for r in last):
            return "act"
    return "refine"


def alpha(
    schedule: str,
    reports: Sequence[Report],
    *,
    constant: float = 0.5,
    adaptive: AdaptiveConfig | None = None,
) -> float:
    """Gain for the last report in ``reports`` (its index is ``len(reports) - 1``)."""
    i = len(reports) - 1
    if i < 0:
        raise ValueError("alpha needs at least one report")
    if schedule == "decay":
        return 1.0 if i == 0 else 0.5 if i == 1 else 0.25
    if schedule == "constant":
        return constant
    if schedule == "undamped":
        return 1.0
    if schedule == "adaptive":
        return _adaptive(reports, adaptive or AdaptiveConfig())
    raise ValueError(f"unknown alpha schedule {schedule!r}; allowed: {', '.join(ALPHA_SCHEDULES)}")


def _adaptive(reports: Sequence[Report], cfg: AdaptiveConfig) -> float:
    a = cfg.start
    prev: Offset | None = None
    for r in reports:
        if r.offset is None:
            continue
        if prev is not None:
            dot = prev.dx * r.offset.dx + prev.dy * r.offset.dy
            m0, m1 = prev.magnitude, r.offset.magnitude
            if dot < 0 or m1 > m0:
                a = max(cfg.floor, a * cfg.shrink)
            elif m1 <= cfg.progress * m0:
                a = min(cfg.cap, a * cfg.grow)
        prev = r.offset
    return a


@dataclass(frozen=True)
class Correction:
    """The move applied after a ``refine`` decision."""

    step_raw: Offset
    """``alpha * offset`` before clamping."""
    step_clamped: Offset
    """The step actually applied (``next - draft``)."""
    next_draft: Point
    """The new draft, inside the image."""


def correct(draft: Point, offset: Offset | None, a: float, size: Size) -> Correction:
    """Move ``draft`` by ``a * offset`` and clamp to the image; an empty report does not move it."""
    raw = Offset(0.0, 0.0) if offset is None else offset.scaled(a)
    nxt = clamp_point(draft + raw, size)
    return Correction(step_raw=raw, step_clamped=nxt - draft, next_draft=nxt)
