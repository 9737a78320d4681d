"""Calls per trial in the authors' records: what ``run.plan_only`` expects of a method when no earlier run
of ours is given.

:func:`recorded_calls` reduces the authors' main-benchmark trials (valid ones: the trial ran to a stop
reason) to one row per (model, method): trials, mean and largest model calls, and the median seconds per
call (their wall time over their calls, backoff included). The table ships with the package as
``dvoc_bench/runner/recorded_calls.json`` (:data:`dvoc_bench.runner.sizing.RECORDED`; the plan reads it
without importing pandas); ``python -m dvoc_bench.bench recorded-calls --upstream "$DVOC_UPSTREAM"`` rewrites
it, and a test checks it against the records when they are present.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dvoc_bench.runner.sizing import RECORDED

TABLE = RECORDED
"""The shipped table (the plan's)."""


def recorded_calls(upstream: Path | str) -> dict[str, Any]:
    """The table of the authors' records under ``upstream``: ``{"source", "models": {model: {method: {
    "trials", "mean_calls", "max_calls", "median_s_per_call"}}}}``."""
    import numpy as np

    from dvoc_bench.analysis.upstream import discover_upstream, load_upstream

    found = discover_upstream(upstream)
    if "tree" not in found:
        raise FileNotFoundError(f"{upstream}: no per-trial tree of the authors' records")
    t = load_upstream(found["tree"]).trials
    t = t[t["valid"] & t["method"].isin(["dvoc", "oneshot"])]
    models: dict[str, dict[str, Any]] = {}
    for (model, method), g in sorted(t.groupby(["model", "method"])):
        calls = g["model_calls"].astype(float)
        per = (g["wall_s"].astype(float) / calls.where(calls > 0)).dropna()
        models.setdefault(str(model), {})[str(method)] = {
            "trials": len(g),
            "mean_calls": round(float(calls.mean()), 3),
            "max_calls": int(calls.max()),
            "median_s_per_call": round(float(np.median(per)), 2) if len(per) else None,
        }
    return {
        "source": "the DVOC authors' records (the per-trial tree, protocol paper), valid trials only",
        "models": models,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dvoc_bench.bench recorded-calls", description=__doc__)
    p.add_argument("--upstream", required=True, help="folder of the authors' records")
    p.add_argument("--out", default=str(TABLE), help=f"where to write the table (default {TABLE.name})")
    args = p.parse_args(argv)
    try:
        table = recorded_calls(args.upstream)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    Path(args.out).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0
