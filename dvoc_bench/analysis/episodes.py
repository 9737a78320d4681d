"""Episode tables (MiniWoB trials, ``scene_kind=miniwob``; docs/episodes.md): per task family (and per
task) and method, the page's own verdict and where grounding went.

Scores, named: **success** = episodes the page ended with a raw reward above 0 / episodes (the episode is
the unit; every (task, seed) is its own episode, so the plain Wilson 95 % interval); **locate** = grounded
points on their step's target (a drag's two points count apart) / grounded points, interval clustered by
episode (the steps of one episode are not independent); **interact** = steps whose intended state change
happened / steps; **steps to success** = mean steps of the successful episodes; **calls / success** =
model calls of all episodes / successes; **harness s/step** = seconds of captures, page reads, hit tests
and actions per step (the floor a step costs without any model); **ground s/step** = the method's
seconds per grounded step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.clustered import clustered_rate_interval
from dvoc_bench.analysis.intervals import PLAIN_INTERVAL, interval_name, rate_interval
from dvoc_bench.core.jsonread import loads

SUCCESS_INTERVAL = PLAIN_INTERVAL
"""The interval of the success rate (the episode is the unit)."""
LOCATE_INTERVAL = interval_name(clustered=True, by="episode")
"""The interval of the locate rate (points clustered by their episode)."""


def _episode(v: Any) -> dict[str, Any] | None:
    if isinstance(v, dict):
        return v
    if isinstance(v, str) and v:
        out = loads(v, "episode record")
        return out if isinstance(out, dict) else None
    return None


def episode_rows(t: pd.DataFrame) -> pd.DataFrame:
    """One row per episode trial of ``t`` (the trials frame, or ``trials.jsonl`` lines as a frame)."""
    rows = []
    if "episode" not in t:
        return pd.DataFrame()
    for _, r in t.iterrows():
        ep = _episode(r["episode"])
        if ep is None:
            continue
        steps = ep.get("steps") or []
        points = [v for s in steps for v in (s.get("located"), s.get("drop_located")) if v is not None]
        rows.append({
            "trial_key": r["trial_key"], "model": r["model"], "simulated": bool(r.get("simulated", False)),
            "method": r["method"], "planner": ep.get("planner") or "oracle", "task": ep["task"],
            "family": ep["family"], "seed": ep["seed"],
            "status": r["status"], "success": bool(ep.get("success")), "end": ep.get("end"),
            "steps": len(steps), "points": len(points), "located": sum(bool(v) for v in points),
            "interacted": sum(bool(s.get("interacted")) for s in steps),
            "calls": int(r.get("model_calls") or 0),
            "harness_s": sum(float(s.get("harness_s") or 0.0) for s in steps),
            "ground_s": sum(float(s.get("ground_s") or 0.0) for s in steps),
            "grounded": sum(s.get("point") is not None for s in steps),
            "first_off_target": ep.get("first_off_target"), "error": ep.get("error") or r.get("error"),
            "query": ep.get("query", ""),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _located_points(g: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per grounded point: 1/0 on target, and its episode (the cluster)."""
    y = np.concatenate([[1.0] * int(r.located) + [0.0] * int(r.points - r.located) for r in g.itertuples()])
    c = np.concatenate([[r.trial_key] * int(r.points) for r in g.itertuples()])
    return y, c


def summarise(e: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The scores of the module docstring per group of :func:`episode_rows`."""
    out = []
    for key, g in e.groupby(by, sort=True, dropna=False):
        n, k = len(g), int(g["success"].sum())
        lo, hi = rate_interval(k, n)
        y, c = _located_points(g) if int(g["points"].sum()) else (np.array([]), np.array([]))
        llo, lhi = clustered_rate_interval(y, c) if len(y) else (math.nan, math.nan)
        steps = int(g["steps"].sum())
        ok = g[g["success"]]
        out.append({
            **dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
            "episodes": n, "seeds": g["seed"].nunique(), "successes": k, "success": k / n, "lo": lo, "hi": hi,
            "locate": (y.mean() if len(y) else math.nan), "locate_lo": llo, "locate_hi": lhi,
            "interact": g["interacted"].sum() / steps if steps else math.nan,
            "steps_to_success": ok["steps"].mean() if len(ok) else math.nan,
            "calls_per_success": g["calls"].sum() / k if k else math.nan,
            "harness_s_per_step": g["harness_s"].sum() / steps if steps else math.nan,
            "ground_s_per_step": g["ground_s"].sum() / max(int(g["grounded"].sum()), 1),
        })  # fmt: skip
    return pd.DataFrame(out)


def failures(e: pd.DataFrame) -> list[str]:
    """One line per failed episode: which task, seed and method, how it ended, the first step off target,
    and why (its one-line error)."""
    lines = []
    for r in e[~e["success"]].sort_values(["task", "method", "seed"]).itertuples():
        off = (
            ""
            if r.first_off_target is None or pd.isna(r.first_off_target)
            else (f", first step off target: {int(r.first_off_target)}")
        )
        why = f": {r.error}" if isinstance(r.error, str) and r.error else ""
        lines.append(f"- `{r.task}` seed {r.seed}, {r.model} / {r.method}: ended `{r.end}` after {r.steps} "
                     f"steps{off}{why}")  # fmt: skip
    return lines
