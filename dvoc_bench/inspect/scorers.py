"""Inspect scorers: the verdicts the project's record already holds, named by their rule.

The solver leaves the trial record in the sample's metadata (:data:`dvoc_bench.inspect.solvers.METADATA`);
a scorer reads one of its fields, it never scores again. ``hit`` is the honest rule (inside the target box,
or the page's / toolkit's element under the point), ``hit_radius`` the paper's radius rule, ``within_eps``
the distance under ε; ``distance`` is the final distance in pixels, ``calls`` and ``tokens`` the trial's cost.
Rates carry the project's one interval (Wilson 95 %, clustered by sample:
:func:`dvoc_bench.analysis.clustered.sample_rate_interval`), as ``<rule>_lo`` / ``<rule>_hi``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    mean,
    metric,
    scorer,
)
from inspect_ai.solver import TaskState

from dvoc_bench.analysis.clustered import sample_rate_interval
from dvoc_bench.analysis.loaders import flatten_trial

METADATA = "dvoc"
"""The sample metadata key the solvers write the trial record to."""
CLUSTER_COLUMNS = ("model", "task", "method", "protocol", "overlay", "predict", "start_index")
"""The trial fields a score keeps so that the metric can form the first-input clusters."""


def _record(state: TaskState) -> dict[str, Any]:
    block = state.metadata.get(METADATA)
    if not block:
        raise ValueError("the sample has no dvoc_bench trial record: run it with a dvoc_bench solver")
    record: dict[str, Any] = block["trial"]
    return record


def _cluster_meta(record: dict[str, Any]) -> dict[str, Any]:
    flat = flatten_trial(record)
    keep = {c: flat.get(c) for c in CLUSTER_COLUMNS}
    for c in ("start_x", "start_y"):
        if c in flat:
            keep[c] = flat[c]
    return keep


def _trials(scores: list[SampleScore]) -> pd.DataFrame:
    rows = [dict((s.score.metadata or {}).get("cluster") or {}) for s in scores]
    frame = pd.DataFrame(rows)
    if "task" not in frame.columns:  # a score without its trial's fields: each sample its own cluster
        frame["task"] = [str(s.sample_id) for s in scores]
    return frame


def _bound(side: int) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        if not scores:
            return float("nan")
        success = [float(s.score.as_float()) for s in scores]
        return float(sample_rate_interval(success, _trials(scores))[side])

    return compute


@metric(name="ci_lo")
def ci_lo() -> Metric:
    """Lower bound of the rate's interval (Wilson 95 %, clustered by sample)."""
    return _bound(0)


@metric(name="ci_hi")
def ci_hi() -> Metric:
    """Upper bound of the rate's interval (Wilson 95 %, clustered by sample)."""
    return _bound(1)


def _verdict(field: str) -> Callable[[], Scorer]:
    @scorer(name=field, metrics=[mean(), ci_lo(), ci_hi()])
    def make() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            record = _record(state)
            ok = bool(record.get(field))
            point = record.get("final_point")
            return Score(
                value=1.0 if ok else 0.0,
                answer="" if point is None else f"{point[0]:.2f},{point[1]:.2f}",
                explanation=f"rule {field} ({record.get('hit_rule', 'box')} for hit); status "
                f"{record.get('status')}, stop {record.get('stop_reason')}",
                metadata={"cluster": _cluster_meta(record), "simulated": bool(record.get("simulated"))},
            )

        return score

    return make


hit = _verdict("hit")
"""The honest rule: the final point on the target (box, DOM element, toolkit element or polygon)."""
hit_radius = _verdict("hit_radius")
"""The paper's radius rule."""
within_eps = _verdict("within_eps")
"""The final point within ε of the target's centre."""


def _number(field: str, doc: str) -> Callable[[], Scorer]:
    @scorer(name=field, metrics=[mean()])
    def make() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            v = _record(state).get(field)
            return Score(value=float("nan") if v is None else float(v), explanation=doc)

        return score

    return make


distance = _number("final_dist_px", "distance of the final point to the target's centre, pixels")
"""Final distance in screenshot pixels (NaN without a final point)."""
calls = _number("model_calls", "model calls of the trial")
"""Model calls of the trial."""
tokens_in = _number("tokens_in", "prompt tokens of the trial")
"""Prompt tokens of the trial."""
tokens_out = _number("tokens_out", "completion tokens of the trial")
"""Completion tokens of the trial."""

SCORERS = (hit, hit_radius, within_eps, distance, calls, tokens_in, tokens_out)
"""Every scorer, in the order a task lists them (``hit`` first: Inspect's headline)."""
