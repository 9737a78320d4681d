"""The tables the field reports for a grounding dataset (ScreenSpot, ScreenSpot-v2, ScreenSpot-Pro).

Per model and method: overall accuracy, text vs icon, and by ``group`` and ``application``
(ScreenSpot-Pro) or by ``platform`` and ``data_source`` (ScreenSpot); every rate with the project's one
interval (:func:`dvoc_bench.analysis.intervals.rate_interval`) clustered by sample: the sample is the unit,
so the repeats of one sample (the start points of DVOC, the repeats of one-shot) count once toward the
interval's sample size, and every table says how many samples and how many trials it holds. Also the
model calls spent per successful click. Accuracy counts every trial that ran: a trial that ended in an
error is a miss (the published numbers count a sample without a usable answer as wrong); skipped trials
are left out. The rule is named
in every table (the official one is ``hit``: the predicted point inside the target box).

Pure functions of the trials frame (columns ``sample_*`` from the records' ``sample`` block).
"""

from __future__ import annotations

import pandas as pd

from dvoc_bench.analysis.clustered import cluster_keys, clustered_rate_interval, sample_rate_interval
from dvoc_bench.analysis.intervals import RATE_INTERVAL

SPLITS = {
    "ui_type": "text vs icon",
    "group": "group (ScreenSpot-Pro)",
    "application": "application (ScreenSpot-Pro)",
    "platform": "platform",
    "data_source": "data source (ScreenSpot)",
    "category": "category (CUActSpot; precision-cua-bench: label type)",
    "task_kind": "task kind (click, drag, multi)",
    "lang": "task language",
    "size_class": "target size (shorter side)",
    "endpoint": "drag endpoint (from: what to drag; to: where to drop it); multi-point: point 1 .. K",
}
"""Sample metadata columns (``sample_<key>``) a dataset report splits by, with their titles."""

KEYS = ["model", "simulated", "method"]


def dataset_trials(t: pd.DataFrame) -> pd.DataFrame:
    """The trials of dataset samples that ran (``ok`` or ``error``; skipped ones are not counted)."""
    if "scene_kind" not in t:
        return t.iloc[0:0]
    return t[(t["scene_kind"] == "dataset") & (t["status"] != "skipped")]


def accuracy(t: pd.DataFrame, rule: str = "hit", by: str | None = None) -> pd.DataFrame:
    """Per model x method (x ``sample_<by>``): samples, trials, hits, accuracy (hits / trials) with its
    interval clustered by sample, and model calls per successful click (``-`` without a hit)."""
    d = dataset_trials(t).copy()
    keys = list(KEYS)
    if by is not None:
        col = f"sample_{by}"
        if col not in d or d[col].isna().all():
            return pd.DataFrame()
        d[by] = d[col].astype(object).where(d[col].notna(), "-")
        keys.append(by)
    if d.empty:
        return pd.DataFrame()
    d["_hit"] = d[rule].fillna(False).astype(bool) & (d["status"] == "ok")
    g = d.groupby(keys, sort=True, dropna=False)
    out = g.agg(
        samples=("task", "nunique"),
        trials=("_hit", "size"),
        hits=("_hit", "sum"),
        calls=("model_calls", "sum"),
    ).reset_index()
    bounds = [sample_rate_interval(grp["_hit"], grp) for _, grp in g]
    out["accuracy"] = out["hits"] / out["trials"]
    out["lo"], out["hi"] = [b[0] for b in bounds], [b[1] for b in bounds]
    out["calls_per_success"] = [
        c / h if h else float("nan") for c, h in zip(out["calls"], out["hits"], strict=True)
    ]
    out.insert(len(keys), "rule", rule)
    return out.drop(columns=["calls"])


def drag_success(t: pd.DataFrame, rule: str = "hit", by: str | None = None) -> pd.DataFrame:
    """Per model x method (x ``sample_<by>``, e.g. ``category``): drags (samples), attempts (two-point
    trials: the record's ``drag`` block), the share with both points on target under ``rule`` (the trial's
    own ``rule`` column, which holds when it holds for both points; its interval clustered by sample), and
    each end's own share (``drag_from_<rule>``, ``drag_to_<rule>``). A trial that ended in an error is a
    miss at both ends."""
    d = dataset_trials(t)
    ends = (f"drag_from_{rule}", f"drag_to_{rule}")
    if not set(ends) <= set(d.columns) or d[ends[1]].isna().all():
        return pd.DataFrame()
    d = d[d[ends[1]].notna()].copy()
    ok = d["status"] == "ok"
    d["_both"] = d[rule].fillna(False).astype(bool) & ok
    d["_from"] = d[ends[0]].fillna(False).astype(bool) & ok
    d["_to"] = d[ends[1]].fillna(False).astype(bool) & ok
    split = [by] if by is not None and f"sample_{by}" in d else []
    if split:
        d[by] = d[f"sample_{by}"].astype(object).where(d[f"sample_{by}"].notna(), "-")
    rows = []
    for key, g in d.groupby([*KEYS, *split], sort=True):
        lo, hi = clustered_rate_interval(g["_both"].to_numpy(), g["sample_file"].to_numpy())
        rows.append({
            **dict(zip([*KEYS, *split], key, strict=True)), "rule": rule,
            "drags": g["sample_file"].nunique(), "attempts": len(g), "both": int(g["_both"].sum()),
            "accuracy": g["_both"].mean(), "lo": lo, "hi": hi,
            "from_hit": g["_from"].mean(), "to_hit": g["_to"].mean(),
        })  # fmt: skip
    return pd.DataFrame(rows)


KIND_ROWS = ("click", "drag: both", "drag: from", "drag: to", "multi")
"""The rows of :func:`kind_rows` per category: a drag once for both points, then once per end."""


def kind_rows(t: pd.DataFrame, rule: str = "hit") -> pd.DataFrame:
    """Per model x method x ``sample_category`` x task kind, with a drag's ends as rows of their own
    (:data:`KIND_ROWS`: ``drag: both`` is the trial's ``rule``, ``drag: from`` / ``drag: to`` the drag
    block's ``drag_from_<rule>`` / ``drag_to_<rule>``; a multi-point sample's rows are its point trials):
    samples, trials, hits, accuracy with its interval clustered by sample. An error is a miss."""
    d = dataset_trials(t)
    need = {"sample_category", "sample_task_kind"}
    if not need <= set(d.columns) or d["sample_task_kind"].isna().all():
        return pd.DataFrame()
    ok = d["status"] == "ok"
    parts = []
    for kind in KIND_ROWS:
        base = kind.split(":")[0]
        g = d[d["sample_task_kind"] == base].copy()
        col = rule if ":" not in kind or kind.endswith("both") else f"drag_{kind.split(': ')[1]}_{rule}"
        if g.empty or col not in g:
            continue
        g["_hit"] = g[col].fillna(False).astype(bool) & ok[g.index]
        g["kind"] = kind
        parts.append(g)
    if not parts:
        return pd.DataFrame()
    d = pd.concat(parts)
    d["category"] = d["sample_category"].astype(object).where(d["sample_category"].notna(), "-")
    order = {k: i for i, k in enumerate(KIND_ROWS)}
    rows = []
    for key, g in d.groupby([*KEYS, "category", "kind"], sort=True):
        lo, hi = sample_rate_interval(g["_hit"], g)
        rows.append({
            **dict(zip([*KEYS, "category", "kind"], key, strict=True)), "rule": rule,
            "samples": cluster_keys(g).nunique(), "trials": len(g), "hits": int(g["_hit"].sum()),
            "accuracy": g["_hit"].mean(), "lo": lo, "hi": hi,
        })  # fmt: skip
    out = pd.DataFrame(rows)
    out["_o"] = out["kind"].map(order)
    return out.sort_values([*KEYS, "category", "_o"], kind="stable").drop(columns="_o").reset_index(drop=True)


def som_picks(t: pd.DataFrame) -> pd.DataFrame:
    """Set-of-Mark on drags, each end's pick (the ``som`` block: the start's ``chosen_valid`` / ``hit`` /
    ``target_detected``, the end's ``drop_*``): per model x method, drags, and per end the share of trials
    whose target centre lay in a mark (``marked``), whose pick named a mark (``valid``) and whose picked
    mark's centre lay in the end's target box (``on_box``: the box, not the polygon)."""
    d = dataset_trials(t)
    if "som_drop_chosen_valid" not in d or d["som_drop_chosen_valid"].isna().all():
        return pd.DataFrame()
    d = d[d["som_drop_chosen_valid"].notna()]
    rows = []
    for key, g in d.groupby(KEYS, sort=True):
        row = {**dict(zip(KEYS, key, strict=True)), "drags": g["sample_file"].nunique(), "trials": len(g)}
        for end, pre in (("from", "som_"), ("to", "som_drop_")):
            for name, col in (("marked", "target_detected"), ("valid", "chosen_valid"), ("on_box", "hit")):
                row[f"{end}_{name}"] = g[pre + col].fillna(False).astype(bool).mean()
        rows.append(row)
    return pd.DataFrame(rows)


POINT_KEYS = [
    "protocol", "alpha", "overlay", "predict", "start_index", "rep", "detector", "zoom", "start_from"
]  # fmt: skip
"""Besides model and method, what makes a multi-point sample's point trials one attempt (same settings,
same start, same repeat)."""


def points_success(t: pd.DataFrame, rule: str = "hit") -> pd.DataFrame:
    """Per model x method, CUActSpot's multi-point samples (``sample_task_kind`` ``multi``) under the set's
    own rule: samples, attempts (the ``K`` point trials of one ``sample_file`` under the same
    :data:`POINT_KEYS`; an attempt missing a point is left out), and the share where every point hit and
    the points together lie in at least ``K`` distinct Target polygons (``hit_element`` names every Target
    under a point, ``R2+R3``: ranked, one per rank; unranked, every Target holds a point), with its
    interval clustered by sample; ``points_hit``: the share of single points on target. A point that ended
    in an error is a miss."""
    d = dataset_trials(t)
    need = {"sample_task_kind", "sample_endpoint", "sample_points", "hit_element"}
    if not need <= set(d.columns):
        return pd.DataFrame()
    d = d[(d["sample_task_kind"] == "multi") & d["sample_endpoint"].notna()].copy()
    if d.empty:
        return pd.DataFrame()
    d["_hit"] = d[rule].fillna(False).astype(bool) & (d["status"] == "ok")
    pair = [k for k in POINT_KEYS if k in d]
    for k in pair:
        d[k] = d[k].astype(str)
    attempts = []
    for key, g in d.groupby([*KEYS, "sample_file", *pair], sort=True, dropna=False):
        npoints = int(g["sample_points"].iloc[0])
        if g["sample_endpoint"].nunique() < npoints:
            continue
        hits = g.loc[g["_hit"], "hit_element"]
        covered = {e for el in hits for e in str(el).split("+")}
        ok = bool(g["_hit"].all()) and len(covered) >= npoints
        attempts.append((*key[:4], ok, float(g["_hit"].mean())))
    if not attempts:
        return pd.DataFrame()
    a = pd.DataFrame(attempts, columns=[*KEYS, "sample_file", "ok", "share"])
    rows = []
    for (model, sim, method), g in a.groupby(KEYS, sort=True):
        lo, hi = clustered_rate_interval(g["ok"].to_numpy(), g["sample_file"].to_numpy())
        rows.append({
            "model": model, "simulated": sim, "method": method, "rule": rule,
            "samples": g["sample_file"].nunique(), "attempts": len(g), "all": int(g["ok"].sum()),
            "accuracy": g["ok"].mean(), "lo": lo, "hi": hi, "points_hit": g["share"].mean(),
        })  # fmt: skip
    return pd.DataFrame(rows)


def tables(t: pd.DataFrame, rule: str = "hit") -> list[tuple[str, pd.DataFrame]]:
    """``(title, table)``: overall, then each split the trials carry (empty splits left out), then the
    drags with both points on target."""
    out = [(f"Overall — rule `{rule}`", accuracy(t, rule))]
    for key, title in SPLITS.items():
        tab = accuracy(t, rule, key)
        if not tab.empty:
            out.append((f"By {title} — rule `{rule}`", tab))
    out.append((f"Drags: both points on target (and each endpoint) — rule `{rule}`", drag_success(t, rule)))
    by_cat = drag_success(t, rule, "category")
    if not by_cat.empty and by_cat["category"].nunique() > 1:
        out.append((f"Drags by category: both points and each end — rule `{rule}`", by_cat))
    title = f"By category and task kind (a drag: both points, then each end) — rule `{rule}`"
    out.append((title, kind_rows(t, rule)))
    out.append(("Set-of-Mark on drags: each end's pick (share of trials)", som_picks(t)))
    title = f"Multi-point samples: every point on target, the set's own rule — rule `{rule}`"
    out.append((title, points_success(t, rule)))
    return [(title, tab) for title, tab in out if not tab.empty]


INTERVAL = RATE_INTERVAL
"""How the tables' interval is named in text."""
