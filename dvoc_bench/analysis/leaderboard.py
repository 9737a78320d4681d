"""A dataset run in the field's results format (``python -m dvoc_bench.report RUN --leaderboard FILE.json``).

The ScreenSpot-Pro leaderboard takes one JSON object per entry (likaixin2000/ScreenSpot-Pro-GUI-Grounding,
``leaderboard_submission.ipynb``: ``{name: {"link", "description", "results": {"group": {G: {"icon",
"text", "avg"}}, "application": {A: {...}}, "overall": {...}}}}``), each accuracy a fraction of the
samples (``avg``: all samples of the cell, as the evaluator's ``action_acc``; ``text`` and ``icon``: the
samples of that ``ui_type``). An entry here is one model and method variant of the run's dataset trials
(``<model> / <method>``), scored by rule ``hit`` (the official one: the point inside the truth box, edges
included); a trial that ended in an error counts as a miss, as the evaluator counts ``wrong_format``.

Each entry also carries what no board has, under ``dvoc_bench``: the samples and trials, the rule, the
overall accuracy's 95 % interval (the project's one interval function, clustered by sample), calls per
sample, tokens (input and output per sample), dollars per hit, the stop rule (the method and how its
trials ended), the coordinate frame and the sent image size, and the engine and version that served it
(the model id, provider and, where the run recorded them, the serving engine and its version).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from dvoc_bench.analysis.clustered import sample_rate_interval
from dvoc_bench.analysis.compare import variants
from dvoc_bench.analysis.datasets import INTERVAL, dataset_trials
from dvoc_bench.analysis.export import SchemaError
from dvoc_bench.analysis.honest import headline_keys

RULE = "hit"
"""The leaderboard's rule (the official ScreenSpot-Pro metric)."""
GROUPS = ("Dev", "Creative", "CAD", "Scientific", "Office", "OS")
"""ScreenSpot-Pro's groups, in the leaderboard's order."""


def _acc(d: pd.DataFrame) -> dict[str, float]:
    """``icon``, ``text``, ``avg`` of the trials ``d`` (fractions; a cell without trials is left out)."""
    out: dict[str, float] = {}
    ui = d["sample_ui_type"].astype(object)
    for key, part in (("icon", d[ui == "icon"]), ("text", d[ui == "text"]), ("avg", d)):
        if len(part):
            out[key] = round(float(part["_hit"].mean()), 4)
    return out


def _num(v: Any, nd: int = 4) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else round(f, nd)


def _steps_of(s: pd.DataFrame, g: pd.DataFrame) -> pd.DataFrame:
    keys = set(zip(g["run_dir"], g["trial_key"], strict=True))
    sk = pd.Series(list(zip(s["run_dir"], s["trial_key"], strict=True)), index=s.index, dtype=object)
    return s[sk.isin(keys).to_numpy()]


def _first(values: pd.Series) -> Any:
    v = values.dropna()
    return None if v.empty else v.mode().iloc[0] if len(v.unique()) > 1 else v.iloc[0]


def _frame(st: pd.DataFrame, g: pd.DataFrame) -> Any:
    """The answer frame the calls were read in (their one-line rule, else their units), else the trials'."""
    for col in ("frame_rule", "frame"):
        if len(st) and col in st and st[col].notna().any():
            return _first(st[col])
    return _first(g["coord_frame"])


def _extras(g: pd.DataFrame, s: pd.DataFrame) -> dict[str, Any]:
    """The columns no board has, for one entry's trials ``g`` and their steps ``s``."""
    hits = int(g["_hit"].sum())
    lo, hi = sample_rate_interval(g["_hit"], g)
    cost = pd.to_numeric(g["cost_usd"], errors="coerce")
    known = bool(cost.notna().all()) and not bool(g["simulated"].any())
    n_samples = int(g["task"].nunique())
    tin, tout = (
        pd.to_numeric(g["tokens_in"], errors="coerce"),
        pd.to_numeric(g["tokens_out"], errors="coerce"),
    )
    st = _steps_of(s, g)
    sent = st[["sent_w", "sent_h"]].dropna() if len(st) else pd.DataFrame()
    seen = st[["seen_w", "seen_h"]].dropna() if len(st) else pd.DataFrame()
    sizes = sent if len(sent) else seen.rename(columns={"seen_w": "sent_w", "seen_h": "sent_h"})
    engine = {k: _first(g[k]) for k in ("model_id", "provider", "api_base") if k in g}
    for k in ("served_model", "engine", "system_fingerprint"):  # what the server said, per call
        engine[k] = _first(st[k]) if len(st) and k in st else None
    return {
        "rule": f"{RULE}: the predicted point inside the truth box, edges included",
        "simulated": bool(g["simulated"].any()),
        "samples": n_samples,
        "trials": len(g),
        "hits": hits,
        "accuracy": round(hits / len(g), 4) if len(g) else None,
        "interval_95": [_num(lo), _num(hi)],
        "interval": INTERVAL,
        "calls_per_sample": _num(g["model_calls"].astype(float).sum() / n_samples) if n_samples else None,
        "tokens_in_per_sample": _num(tin.sum() / n_samples, 1) if tin.notna().any() else None,
        "tokens_out_per_sample": _num(tout.sum() / n_samples, 1) if tout.notna().any() else None,
        "usd_per_hit": (_num(cost.sum() / hits, 6) if hits else None) if known else None,
        "stop_rule": {
            "method": str(g["method"].iloc[0]),
            "stop_reasons": {str(k): int(v) for k, v in g["stop_reason"].dropna().value_counts().items()},
            "max_iterations": _num(_first(g["max_iterations"])) if "max_iterations" in g else None,
        },
        "frame": _frame(st, g),
        "sent_size": None if sizes.empty else [int(sizes["sent_w"].median()), int(sizes["sent_h"].median())],
        "engine": engine,
    }


def leaderboard(trials: pd.DataFrame, steps: pd.DataFrame) -> dict[str, Any]:
    """The results object: one entry per model and method variant of the dataset trials."""
    d = dataset_trials(trials).copy()
    if d.empty:
        raise SchemaError(
            "--leaderboard: no dataset trials (the ScreenSpot-Pro results schema is per sample)"
        )
    d["_hit"] = d[RULE].fillna(False).astype(bool) & (d["status"] == "ok")
    split = headline_keys(d)[2:]
    d["_variant"] = variants(d, [k for k in split if k != "model"])
    out: dict[str, Any] = {}
    for (model, variant), g in d.groupby(["model", "_variant"], sort=True):
        name = f"{model} / {variant}" + (" [SIMULATED]" if bool(g["simulated"].any()) else "")
        groups = {k: _acc(p) for k, p in g.groupby(g["sample_group"].astype(object).fillna("-"), sort=True)}
        ordered = {k: groups[k] for k in GROUPS if k in groups} | {
            k: v for k, v in groups.items() if k not in GROUPS
        }
        apps = {
            k: _acc(p) for k, p in g.groupby(g["sample_application"].astype(object).fillna("-"), sort=True)
        }
        out[name] = {
            "link": "",
            "description": f"dvoc-bench: model {model}, method {variant}, rule {RULE}",
            "results": {"group": ordered, "application": apps, "overall": _acc(g)},
            "dvoc_bench": _extras(g, steps),
        }
    return out


def write_leaderboard(runs: Any, path: Path | str) -> str:
    """Write the results object of ``runs`` (a :class:`~dvoc_bench.analysis.schema.Runs`) to ``path``;
    returns the line that says what was written."""
    path = Path(path)
    if path.suffix != ".json":
        raise SchemaError(f"--leaderboard: {path}: the results file is JSON (FILE.json)")
    board = leaderboard(runs.trials, runs.steps)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(board, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    return f"leaderboard: {len(board)} entries ({', '.join(board)}) written to {path}"
