"""The paper's tables, rebuilt from trial records with the authors' exact rules.

The rules that reproduce the published numbers:

- Only the four main models count (:data:`~dvoc_bench.analysis.upstream.MAIN_MODELS`); every record of
  ``*-via-or``, nemotron and ``openrouter-free-vision`` is dropped, errors included.
- An error is a trial with an error (their ``final_dist == 999``); ``skipped`` trials of our runs (never
  ran) are left out like the authors' dropped quota trials.
- Success is the record's own ``success`` (``paper_success``). That column mixes two rules in the authors'
  data; for our runs, which have no such column, the authors' code rule ``hit_radius`` is used.
- Raw rate = successes / total (errors included); protocol rate = successes / valid.
- Mean distance and mean iterations are over valid trials only, from the record's ``final_dist``
  (``paper_final_dist``; our ``final_dist_px`` when absent).
- Printed with ``%.0f`` for percentages and ``%.1f`` for distances and iterations (Table 4.2 and 4.4 print
  distances with ``%.0f``); Table 5.1 prints medians *truncated* (22.6 -> 22), Table 5.2 rounded.

Rates are fractions in the returned frames; :func:`formatted` prints them the paper's way, and
:func:`reproduction_check` puts every published number next to the reproduced one.

What the authors' records allow (their repository, ``$DVOC_UPSTREAM``): the final aggregate and the
per-trial tree's main benchmark both reproduce Table 4.1 (all 8 rows, every printed digit), 4.2 and 4.4; 4.5
only partly (see :func:`table_4_5`); ``predict_ablation.json`` reproduces 5.1 and ``alpha_ablation.json``
5.3 exactly; ``ablation_results.json`` reproduces 5.2 but two of its printed medians.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.schema import narrow
from dvoc_bench.analysis.upstream import MAIN_MODELS, is_excluded

PAPER_LABELS = {
    "gemini-3.1-flash-lite": "Gemini 3.1 Flash Lite",
    "gemini-2.5-flash-lite": "Gemini 2.5 Flash Lite",
    "gemma-4-26b": "Gemma 4 26B",
    "gemma-4-31b": "Gemma 4 31B",
}
"""Model key -> the paper's row label."""
METHOD_ORDER = ("dvoc", "oneshot", "som", "som_dvoc", "centre", "random")


# ------------------------------------------------------------------------------------------------ helpers


def paper_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """The rows the authors' tables count: upstream records of the main models, and all of our rows
    (minus never-run ``skipped`` trials). Adds ``success`` (paper rule) and ``dist`` (their distance)."""
    up = trials["source"] == "upstream"
    keep = ~(up & trials["model"].map(lambda m: is_excluded(str(m)) or str(m) not in MAIN_MODELS))
    keep &= trials["status"] != "skipped"
    t = trials[keep.astype(bool)].copy()
    succ = t["paper_success"].astype("boolean")
    t["success"] = succ.fillna(t["hit_radius"].astype("boolean")).astype(bool)
    t["dist"] = t["paper_final_dist"].where(t["paper_final_dist"].notna(), t["final_dist_px"])
    return t


def _order(df: pd.DataFrame) -> pd.DataFrame:
    keys = []
    if "model" in df:
        rank = {m: i for i, m in enumerate(MAIN_MODELS)}
        df = df.assign(_m=df["model"].map(lambda m: (rank.get(m, len(rank)), str(m))))
        keys.append("_m")
    if "method" in df:
        rank2 = {m: i for i, m in enumerate(METHOD_ORDER)}
        df = df.assign(_k=df["method"].map(lambda m: (rank2.get(m, len(rank2)), str(m))))
        keys.append("_k")
    if "task" in df:
        df = df.assign(
            _t=df["task"].map(lambda t: (str(t)[:1], int(str(t)[1:]) if str(t)[1:].isdigit() else 0))
        )
        keys.insert(0, "_t")
    if not keys:
        return df.reset_index(drop=True)
    return df.sort_values(keys).drop(columns=keys).reset_index(drop=True)


def _stats(g: pd.DataFrame) -> dict[str, Any]:
    v = g[g["valid"]]
    return {
        "valid": len(v),
        "success": int(v["success"].sum()),
        "rate": v["success"].mean() if len(v) else math.nan,
        "mean_dist": v["dist"].mean() if len(v) else math.nan,
        "median_dist": v["dist"].median() if len(v) else math.nan,
        "mean_iters": v["iterations"].astype(float).mean() if len(v) else math.nan,
    }


def _simulated(g: pd.DataFrame) -> bool:
    return bool(g["simulated"].any())


# ----------------------------------------------------------------------------------------------- tables


def table_4_1(trials: pd.DataFrame) -> pd.DataFrame:
    """Table 4.1, overall: ``model, method, total, errors, valid, success, raw_rate, proto_rate,
    mean_dist, mean_iters`` (+ ``simulated``). Reproduced exactly (every printed digit of all 8 rows)
    from the authors' per-trial tree and from their final aggregate."""
    cols = ("source", "model", "method", "status", "valid", "paper_success", "hit_radius", "paper_final_dist",
            "final_dist_px", "iterations", "simulated")  # fmt: skip
    t = paper_trials(narrow(trials, *cols))  # what the table reads: a group's copy holds these columns
    rows = []
    for (model, method), g in t.groupby(["model", "method"], sort=False):
        v = g[g["valid"]]
        k = int(v["success"].sum())
        rows.append(
            {
                "model": model,
                "method": method,
                "total": len(g),
                "errors": int((g["status"] == "error").sum()),
                "valid": len(v),
                "success": k,
                "raw_rate": k / len(g),
                "proto_rate": k / len(v) if len(v) else math.nan,
                "mean_dist": v["dist"].mean() if len(v) else math.nan,
                "mean_iters": v["iterations"].astype(float).mean() if len(v) else math.nan,
                "simulated": _simulated(g),
            }
        )
    return _order(pd.DataFrame(rows, columns=_T41))


_T41 = [
    "model",
    "method",
    "total",
    "errors",
    "valid",
    "success",
    "raw_rate",
    "proto_rate",
    "mean_dist",
    "mean_iters",
    "simulated",
]


def table_4_2(trials: pd.DataFrame) -> pd.DataFrame:
    """Table 4.2, per task, DVOC, valid trials only: ``task, model, valid, success, rate, mean_dist``.
    Reproduced exactly from the tree (the cells rest on 1–15 valid trials; see ``valid``)."""
    t = paper_trials(trials)
    t = t[t["method"] == "dvoc"]
    rows = []
    for (task, model), g in t.groupby(["task", "model"], sort=False):
        s = _stats(g)
        rows.append(
            {
                "task": task,
                "model": model,
                **{k: s[k] for k in ("valid", "success", "rate", "mean_dist")},
                "simulated": _simulated(g),
            }
        )
    return _order(
        pd.DataFrame(rows, columns=["task", "model", "valid", "success", "rate", "mean_dist", "simulated"])
    )


def table_4_4(trials: pd.DataFrame) -> pd.DataFrame:
    """Table 4.4, the naive (one-shot) baseline: ``model, valid, success, rate, mean_dist`` (valid only).
    Reproduced from the tree. The paper's "fixation pattern" column is prose; the coordinate-frame audit
    (:func:`dvoc_bench.analysis.honest.frame_audit_points`) shows what the fixed points really are: the
    targets in 0–1000 units."""
    t = paper_trials(trials)
    t = t[t["method"] == "oneshot"]
    rows = []
    for model, g in t.groupby("model", sort=False):
        s = _stats(g)
        rows.append(
            {
                "model": model,
                **{k: s[k] for k in ("valid", "success", "rate", "mean_dist")},
                "simulated": _simulated(g),
            }
        )
    return _order(pd.DataFrame(rows, columns=["model", "valid", "success", "rate", "mean_dist", "simulated"]))


def table_4_5(trials: pd.DataFrame) -> pd.DataFrame:
    """Table 4.5, web DVOC: ``model, valid, success, rate`` and the mean distance and iterations both
    pooled over trials (``mean_dist``, ``mean_iters``) and as the mean of per-task means
    (``mean_dist_task_mean``, ``mean_iters_task_mean``).

    Not fully reproducible. Gemini 3.1 FL's published 90.7 px / 6.6 iterations are the mean of per-task
    means, and its "72 %" is 17/24 = 70.8 % misprinted. **The Gemma 26B (47.0 px, 8.0) and Gemma 31B
    (54.0 px, 7.8) distances and iterations cannot be reproduced from the records under any rule tried**
    (pooled 30.0 / 46.5 px, per-task means 28.1 / 44.0 px, medians, success-only, the earlier aggregate);
    They look like the output of an intermediate run. This function does not fudge them.
    """
    t = paper_trials(trials)
    t = t[(t["method"] == "dvoc") & (t["scene_kind"] == "web")]
    rows = []
    for model, g in t.groupby("model", sort=False):
        s = _stats(g)
        v = g[g["valid"]]
        per = v.groupby("task").agg(d=("dist", "mean"), i=("iterations", lambda x: x.astype(float).mean()))
        rows.append(
            {
                "model": model,
                "valid": s["valid"],
                "success": s["success"],
                "rate": s["rate"],
                "mean_dist": s["mean_dist"],
                "mean_iters": s["mean_iters"],
                "mean_dist_task_mean": per["d"].mean() if len(per) else math.nan,
                "mean_iters_task_mean": per["i"].mean() if len(per) else math.nan,
                "simulated": _simulated(g),
            }
        )
    cols = [
        "model",
        "valid",
        "success",
        "rate",
        "mean_dist",
        "mean_iters",
        "mean_dist_task_mean",
        "mean_iters_task_mean",
        "simulated",
    ]
    return _order(pd.DataFrame(rows, columns=cols))


def _ablation(trials: pd.DataFrame, knob: str, order: Sequence[str]) -> pd.DataFrame:
    t = paper_trials(trials)
    t = t[t["method"] == "dvoc"]
    rows = []
    for val, g in t.groupby(knob, sort=False):
        s = _stats(g)
        rows.append({knob: val, "trials": len(g), **s, "simulated": _simulated(g)})
    cols = [knob, "trials", "valid", "success", "rate", "mean_dist", "median_dist", "mean_iters", "simulated"]
    df = pd.DataFrame(rows, columns=cols)
    rank = {v: i for i, v in enumerate(order)}
    df = df.assign(_r=df[knob].map(lambda v: rank.get(v, len(rank)))).sort_values("_r").drop(columns="_r")
    return df.reset_index(drop=True)


def table_5_1(trials: pd.DataFrame) -> pd.DataFrame:
    """Table 5.1, relative vs absolute prediction (DVOC trials by ``predict``): trials, success, rate, mean,
    median distance, mean iterations. Reproduced exactly from ``predict_ablation.json``; the paper prints
    the medians truncated (22.6 -> "22", 201.9 -> "201"), see :func:`formatted`. The absolute mode's
    low rate is the coordinate-frame artefact: the frame audit shows its answers on target in 0–1000 units.
    """
    return _ablation(trials, "predict", ("relative", "absolute"))


def table_5_2(trials: pd.DataFrame) -> pd.DataFrame:
    """Table 5.2, visual overlay (DVOC trials by ``overlay``). Needs the authors' ``ablation_results.json``
    (not in every copy of the records). Rates and means reproduce, and so does the text-only
    median (102.7 -> 103), but **two published medians do not**: crosshair-only 25.3 (printed 22) and
    full 29.4 (printed 24); the printed values equal the truncated medians of Table 5.1 relative (22.6)
    and 5.3 decay (24.95), a likely copy error. The n are 17 / 12 / 17, not 30 per condition."""
    return _ablation(trials, "overlay", ("none", "crosshair", "full"))


def table_5_3(trials: pd.DataFrame) -> pd.DataFrame:
    """Table 5.3, alpha schedule (DVOC trials by ``alpha``): decay, constant 0.5, undamped. Needs the
    authors' ``alpha_ablation.json`` (not in every copy of the records); it reproduces."""
    return _ablation(trials, "alpha", ("decay", "constant", "undamped", "adaptive"))


TABLES = {
    "4.1": table_4_1,
    "4.2": table_4_2,
    "4.4": table_4_4,
    "4.5": table_4_5,
    "5.1": table_5_1,
    "5.2": table_5_2,
    "5.3": table_5_3,
}
"""Table number -> function."""


# ------------------------------------------------------------------------------------------- formatting


def pct(x: float) -> str:
    """``%.0f%%`` of a fraction (``-`` for NaN)."""
    return "-" if x is None or not np.isfinite(x) else f"{100 * x:.0f}%"


def f1(x: float) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.1f}"


def f0(x: float) -> str:
    return "-" if x is None or not np.isfinite(x) else f"{x:.0f}"


def trunc(x: float) -> str:
    return "-" if x is None or not np.isfinite(x) else str(int(math.floor(x)))


def formatted(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """A table printed the paper's way (strings), simulated rows marked ``[SIMULATED]``."""
    t = table.copy()
    if "model" in t:
        t["model"] = [
            PAPER_LABELS.get(m, m) + (" [SIMULATED]" if s else "")
            for m, s in zip(t["model"], t["simulated"], strict=True)
        ]
    t = t.drop(columns=["simulated"], errors="ignore")
    if name == "4.1":
        t["method"] = t["method"].map(lambda m: {"dvoc": "DVOC", "oneshot": "NAIVE"}.get(m, m))
        for c in ("raw_rate", "proto_rate"):
            t[c] = t[c].map(pct)
        t["mean_dist"] = t["mean_dist"].map(lambda x: f1(x) + "px" if np.isfinite(x) else "-")
        t["mean_iters"] = t["mean_iters"].map(f1)
    elif name in ("4.2", "4.4"):
        t["rate"] = t["rate"].map(pct)
        t["mean_dist"] = t["mean_dist"].map(lambda x: f0(x) + "px" if np.isfinite(x) else "-")
    elif name == "4.5":
        t["rate"] = [
            f"{pct(r)} ({k}/{n})" for r, k, n in zip(t["rate"], t["success"], t["valid"], strict=True)
        ]
        for c in ("mean_dist", "mean_dist_task_mean"):
            t[c] = t[c].map(lambda x: f1(x) + "px" if np.isfinite(x) else "-")
        for c in ("mean_iters", "mean_iters_task_mean"):
            t[c] = t[c].map(f1)
    elif name in ("5.1", "5.2", "5.3"):
        t["rate"] = t["rate"].map(pct)
        t["mean_dist"] = t["mean_dist"].map(lambda x: f1(x) + "px" if np.isfinite(x) else "-")
        med = trunc if name == "5.1" else f0
        t["median_dist"] = t["median_dist"].map(lambda x: med(x) + "px" if np.isfinite(x) else "-")
        t["mean_iters"] = t["mean_iters"].map(f1)
    return t


# ------------------------------------------------------------------------------------ published numbers

PUBLISHED: dict[str, dict[tuple[str, ...], dict[str, str]]] = {
    "4.1": {
        ("gemini-3.1-flash-lite", "dvoc"): dict(
            total="115",
            errors="1",
            valid="114",
            success="72",
            raw_rate="63%",
            proto_rate="63%",
            mean_dist="41.9",
            mean_iters="5.2",
        ),
        ("gemini-3.1-flash-lite", "oneshot"): dict(
            total="115",
            errors="1",
            valid="114",
            success="15",
            raw_rate="13%",
            proto_rate="13%",
            mean_dist="178.9",
            mean_iters="4.5",
        ),
        ("gemini-2.5-flash-lite", "dvoc"): dict(
            total="6",
            errors="0",
            valid="6",
            success="2",
            raw_rate="33%",
            proto_rate="33%",
            mean_dist="114.8",
            mean_iters="3.7",
        ),
        ("gemini-2.5-flash-lite", "oneshot"): dict(
            total="4",
            errors="0",
            valid="4",
            success="0",
            raw_rate="0%",
            proto_rate="0%",
            mean_dist="274.7",
            mean_iters="5.0",
        ),
        ("gemma-4-26b", "dvoc"): dict(
            total="55",
            errors="26",
            valid="29",
            success="29",
            raw_rate="53%",
            proto_rate="100%",
            mean_dist="19.6",
            mean_iters="5.6",
        ),
        ("gemma-4-26b", "oneshot"): dict(
            total="55",
            errors="11",
            valid="44",
            success="6",
            raw_rate="11%",
            proto_rate="14%",
            mean_dist="170.8",
            mean_iters="4.5",
        ),
        ("gemma-4-31b", "dvoc"): dict(
            total="57",
            errors="16",
            valid="41",
            success="38",
            raw_rate="67%",
            proto_rate="93%",
            mean_dist="34.4",
            mean_iters="7.1",
        ),
        ("gemma-4-31b", "oneshot"): dict(
            total="56",
            errors="12",
            valid="44",
            success="8",
            raw_rate="14%",
            proto_rate="18%",
            mean_dist="166.6",
            mean_iters="4.3",
        ),
    },
    "4.2": {
        (task, model): dict(rate=r, mean_dist=d)
        for task, cells in {
            "S1": [("100%", "24"), ("100%", "9"), ("100%", "12")],
            "S2": [("27%", "39"), ("100%", "12"), ("100%", "17")],
            "S3": [("53%", "26"), ("100%", "12"), ("100%", "23")],
            "S4": [("100%", "17"), ("100%", "8"), ("100%", "14")],
            "S5": [("33%", "40"), ("100%", "9"), ("100%", "43")],
            "S6": [("53%", "25"), ("100%", "10"), ("100%", "19")],
            "W1": [("100%", "65"), ("100%", "25"), ("100%", "25")],
            "W2": [("80%", "32"), ("100%", "21"), ("80%", "31")],
            "W3": [("100%", "77"), ("100%", "52"), ("100%", "90")],
            "W4": [("0%", "214"), ("100%", "25"), ("50%", "32")],
            "W5": [("80%", "66"), ("100%", "19"), ("100%", "43")],
        }.items()
        for model, (r, d) in zip(("gemini-3.1-flash-lite", "gemma-4-26b", "gemma-4-31b"), cells, strict=True)
    },
    "4.4": {
        ("gemini-3.1-flash-lite",): dict(valid="114", rate="13%", mean_dist="179"),
        ("gemma-4-26b",): dict(valid="44", rate="14%", mean_dist="171"),
        ("gemma-4-31b",): dict(valid="44", rate="18%", mean_dist="167"),
    },
    "4.5": {
        ("gemini-3.1-flash-lite",): dict(
            rate="72%", success="17", valid="24", mean_dist="90.7", mean_iters="6.6"
        ),
        ("gemma-4-26b",): dict(rate="100%", success="14", valid="14", mean_dist="47.0", mean_iters="8.0"),
        ("gemma-4-31b",): dict(rate="86%", success="18", valid="21", mean_dist="54.0", mean_iters="7.8"),
    },
    "5.1": {
        ("relative",): dict(rate="83%", mean_dist="26.8", median_dist="22", mean_iters="5.0"),
        ("absolute",): dict(rate="17%", mean_dist="175.4", median_dist="201", mean_iters="3.0"),
    },
    "5.2": {
        ("none",): dict(rate="35%", mean_dist="135.2", median_dist="103"),
        ("crosshair",): dict(rate="100%", mean_dist="25.7", median_dist="22"),
        ("full",): dict(rate="82%", mean_dist="27.3", median_dist="24"),
    },
    "5.3": {
        ("decay",): dict(rate="87%", mean_dist="26.1", mean_iters="4.8"),
        ("constant",): dict(rate="97%", mean_dist="23.0", mean_iters="4.8"),
        ("undamped",): dict(rate="97%", mean_dist="29.1", mean_iters="4.5"),
    },
}
"""The numbers as printed in the paper, keyed by table -> row key -> column (strings as printed)."""

_ROW_KEYS = {
    "4.1": ("model", "method"),
    "4.2": ("task", "model"),
    "4.4": ("model",),
    "4.5": ("model",),
    "5.1": ("predict",),
    "5.2": ("overlay",),
    "5.3": ("alpha",),
}

# column -> printer, per table; 4.5 checks the distance and iterations under both averaging rules
_PRINTERS: dict[str, dict[str, Any]] = {
    "4.1": {
        "total": str,
        "errors": str,
        "valid": str,
        "success": str,
        "raw_rate": pct,
        "proto_rate": pct,
        "mean_dist": f1,
        "mean_iters": f1,
    },
    "4.2": {"rate": pct, "mean_dist": f0},
    "4.4": {"valid": str, "rate": pct, "mean_dist": f0},
    "4.5": {
        "rate": pct,
        "success": str,
        "valid": str,
        "mean_dist": f1,
        "mean_dist_task_mean": f1,
        "mean_iters": f1,
        "mean_iters_task_mean": f1,
    },
    "5.1": {"rate": pct, "mean_dist": f1, "median_dist": trunc, "mean_iters": f1},
    "5.2": {"rate": pct, "mean_dist": f1, "median_dist": f0},
    "5.3": {"rate": pct, "mean_dist": f1, "mean_iters": f1},
}
_PUBLISHED_COL = {"mean_dist_task_mean": "mean_dist", "mean_iters_task_mean": "mean_iters"}


def reproduction_check(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """Every published number of table ``name`` next to the reproduced one, printed the paper's way.

    Columns: ``table, row, column, published, reproduced, match``. A published row absent from ``table``
    shows ``reproduced = "(no data)"``. For 4.5 the distance and iterations are checked both pooled and as
    the mean of per-task means (column names say which)."""
    pub = PUBLISHED[name]
    keys = _ROW_KEYS[name]
    printers = _PRINTERS[name]
    index = {tuple(str(r[k]) for k in keys): r for _, r in table.iterrows()} if len(table) else {}
    rows = []
    for rk, cols in pub.items():
        rec = index.get(tuple(rk))
        for col, printer in printers.items():
            pcol = _PUBLISHED_COL.get(col, col)
            if pcol not in cols:
                continue
            if rec is None:
                rep = "(no data)"
            else:
                v = rec[col]
                rep = printer(int(v)) if printer is str else printer(float(v))
            rows.append(
                {
                    "table": name,
                    "row": " / ".join(rk),
                    "column": col,
                    "published": cols[pcol],
                    "reproduced": rep,
                    "match": rep == cols[pcol],
                }
            )
    return pd.DataFrame(rows, columns=["table", "row", "column", "published", "reproduced", "match"])
