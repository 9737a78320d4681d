"""Episode tables (MiniWoB trials, ``scene_kind=miniwob``; docs/episodes.md): per task family (and per
task) and method, the page's own verdict and where grounding went, and the methods compared paired.

The unit is the **episode**, and episodes that share a task and a page seed (a user sweeping start points
or repeats over one seeded page) are one cluster: every interval here is the project's one interval,
:func:`~dvoc_bench.analysis.clustered.sample_rate_interval`, with the sample = the episode's ``(task,
seed)`` (:func:`cluster_frame`). With one episode per task and seed (the preset) it is the plain Wilson
interval.

Scores, named: **success** = episodes the page ended with a raw reward above 0 / episodes; **locate** =
grounded points on their step's target (a drag's two points count apart) / grounded points; **interact** =
steps whose intended state change happened / steps; **steps to success** = mean steps of the successful
episodes; **calls / success** and **USD / success** = model calls (cost) of all episodes / successes;
**first wrong** = where each failed episode first went wrong: the index of its first step off target, or
``-`` when every grounded point was on target (the action, the plan or the page failed); **harness
s/step** = seconds of captures, page reads, hit tests and actions per step (the floor a step costs without
any model); **ground s/step** = the method's seconds per grounded step.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.clustered import sample_rate_interval
from dvoc_bench.analysis.compare import method_pairs
from dvoc_bench.analysis.intervals import DIFF_INTERVAL, interval_name
from dvoc_bench.core.jsonread import loads

UNIT = "episode (task, seed)"
"""What the episode intervals cluster by."""
SUCCESS_INTERVAL = interval_name(clustered=True, by=UNIT)
"""The interval of every episode rate: the one interval function, clustered by task and page seed."""
LOCATE_INTERVAL = SUCCESS_INTERVAL
"""The interval of the locate and interact rates (points and steps clustered as their episodes)."""
PAIRED_INTERVAL = DIFF_INTERVAL.replace("clustered by sample", f"clustered by {UNIT}")
"""The interval of the paired success difference (the one paired comparison, episodes as clusters)."""


def _episode(v: Any) -> dict[str, Any] | None:
    if isinstance(v, dict):
        return v
    if isinstance(v, str) and v:
        out = loads(v, "episode record")
        return out if isinstance(out, dict) else None
    return None


def _num(v: Any, default: float = 0.0) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(f) else f


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
            "start_index": int(_num(r.get("start_index"))), "rep": int(_num(r.get("rep"))),
            "status": r["status"], "success": bool(ep.get("success")), "end": ep.get("end"),
            "steps": len(steps), "points": len(points), "located": sum(bool(v) for v in points),
            "interacted": sum(bool(s.get("interacted")) for s in steps),
            "calls": int(_num(r.get("model_calls"))), "cost_usd": _num(r.get("cost_usd")),
            "harness_s": sum(_num(s.get("harness_s")) for s in steps),
            "ground_s": sum(_num(s.get("ground_s")) for s in steps),
            "grounded": sum(s.get("point") is not None for s in steps),
            "first_off_target": ep.get("first_off_target"), "error": ep.get("error") or r.get("error"),
            "query": ep.get("query", ""),
        })  # fmt: skip
    return pd.DataFrame(rows)


def cluster_frame(e: pd.DataFrame) -> pd.DataFrame:
    """``e`` with ``task`` = ``<task>#<seed>``: the sample :func:`sample_rate_interval` clusters by is the
    episode's task and page seed."""
    return e.assign(task=e["task"].astype(str) + "#" + e["seed"].astype(str))


def _expand(g: pd.DataFrame, count: str, of: str) -> tuple[np.ndarray, pd.DataFrame]:
    """Per unit (``of`` units per episode, ``count`` of them successes): 1/0, and a frame naming each
    unit's sample (its episode's task and seed)."""
    y = np.concatenate([[1.0] * int(r[count]) + [0.0] * int(r[of] - r[count]) for _, r in g.iterrows()])
    tasks = np.concatenate([[f"{r['task']}#{r['seed']}"] * int(r[of]) for _, r in g.iterrows()])
    return y, pd.DataFrame({"task": tasks})


def _rate(g: pd.DataFrame, count: str, of: str) -> tuple[float, float, float]:
    if int(g[of].sum()) == 0:
        return math.nan, math.nan, math.nan
    y, frame = _expand(g, count, of)
    lo, hi = sample_rate_interval(y, frame)
    return float(y.mean()), lo, hi


def first_wrong(g: pd.DataFrame) -> str:
    """Where the failed episodes of ``g`` first went wrong: ``step k: n`` per first step off target,
    ``none off target: n`` for failures whose every grounded point was on target; ``-`` without failures."""
    bad = g[~g["success"]]
    if bad.empty:
        return "-"
    c = Counter(
        "none off target" if v is None or pd.isna(v) else f"step {int(v)}" for v in bad["first_off_target"]
    )
    return ", ".join(f"{k}: {n}" for k, n in sorted(c.items(), key=lambda kv: (kv[0][0] == "n", kv[0])))


def summarise(e: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The scores of the module docstring per group of :func:`episode_rows`."""
    out = []
    for key, g in e.groupby(by, sort=True, dropna=False):
        n, k = len(g), int(g["success"].sum())
        lo, hi = sample_rate_interval(g["success"].astype(float), cluster_frame(g))
        loc, llo, lhi = _rate(g, "located", "points")
        act, alo, ahi = _rate(g, "interacted", "steps")
        steps = int(g["steps"].sum())
        ok = g[g["success"]]
        out.append({
            **dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
            "episodes": n, "seeds": g["seed"].nunique(), "successes": k, "success": k / n, "lo": lo, "hi": hi,
            "locate": loc, "locate_lo": llo, "locate_hi": lhi,
            "interact": act, "interact_lo": alo, "interact_hi": ahi,
            "steps_to_success": ok["steps"].mean() if len(ok) else math.nan,
            "calls_per_success": g["calls"].sum() / k if k else math.nan,
            "usd_per_success": g["cost_usd"].sum() / k if k else math.nan,
            "first_wrong": first_wrong(g),
            "harness_s_per_step": g["harness_s"].sum() / steps if steps else math.nan,
            "ground_s_per_step": g["ground_s"].sum() / max(int(g["grounded"].sum()), 1),
        })  # fmt: skip
    return pd.DataFrame(out)


def paired(e: pd.DataFrame) -> pd.DataFrame:
    """Every pair of methods run on the same episodes (same model, task, page seed, start point and
    repeat): the project's one paired comparison (:func:`~dvoc_bench.analysis.compare.method_pairs`:
    Newcombe's paired interval, clustered by the episode's task and seed, and McNemar's exact test) on the
    page's verdict. ``samples`` counts the (task, seed) clusters."""
    if e.empty:
        return pd.DataFrame()
    f = cluster_frame(e).assign(valid=True, hit=e["success"].astype(bool))
    out = method_pairs(f, "hit", split=[])
    if out.empty:
        return out
    return out.rename(columns={"samples": "episodes (task, seed)"}).assign(rule="episode_success")


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
