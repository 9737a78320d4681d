"""Tables under one explicit success rule, with intervals.

Everything here states its rule and never mixes rules:

- ``hit``: the final point lies inside the target element's box (the honest rule);
- ``within_eps``: distance to the target centre < ε (30 px by default);
- ``hit_radius``: distance < max(w/2, h/2, 30) (the rule of the authors' code; generous for wide targets).

Rates are over *valid* trials (status ``ok``), with :func:`~dvoc_bench.analysis.intervals.rate_interval`
clustered by sample (``RATE_INTERVAL``: Wilson 95 % on the effective sample size, exact at 0 % and
100 %; :func:`~dvoc_bench.analysis.clustered.sample_rate_interval`); ``raw_rate`` divides by
every trial that ran (errors count as failures). Mean distances carry percentile-bootstrap intervals from
a ``numpy.random.Generator`` seeded per group from ``seed`` and the group's name, so a table does not
depend on row order. Paired comparisons live in :mod:`dvoc_bench.analysis.compare` (the report's one
per pair of methods). :func:`frame_audit_points` / :func:`frame_audit_offsets` reread every
recorded answer in each coordinate frame. :func:`cost_table` gives calls, tokens, cost and the cost per
successful click (under the rule named in the table) wherever the cost is known.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.clustered import sample_rate_interval
from dvoc_bench.analysis.intervals import PLAIN_INTERVAL, RATE_INTERVAL, Z95, rate_interval, wilson  # noqa: F401

# the one interval function and its names, re-exported (``honest.wilson`` is the plain Wilson interval)
from dvoc_bench.analysis.schema import keep_rows, narrow, record_columns
from dvoc_bench.core import scene_check
from dvoc_bench.core.assumptions import labels_of
from dvoc_bench.core.records import TrialSpec
from dvoc_bench.core.scoring import RULES  # the success rules a table can use (columns of the trials frame)

RULE_TEXT = {
    "hit": "hit = final point inside the target box",
    "within_eps": "within_eps = distance to the target centre < epsilon",
    "hit_radius": "hit_radius = distance < max(w/2, h/2, 30) (the authors' code rule)",
    "paper_success": "paper_success = the authors' stored success (mixed rule)",
}
FRAMES = ("pixel", "norm1000", "norm1")


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; allowed: {', '.join(RULES)}")
    return rule


# ------------------------------------------------------------------------------------------------ intervals


BOOT_CELLS = 1 << 22
"""Resampled values held at once by :func:`bootstrap_ci` (32 MiB of floats): the resamples are drawn in
blocks of whole resamples, in the generator's order, so the interval is the one drawing them all at once
gives."""


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    rng: np.random.Generator,
    stat: Callable[[np.ndarray], np.ndarray] | None = None,
    n_boot: int = 2000,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` (default: the mean over axis 1) of ``values``."""
    x = np.asarray(values, dtype=float)
    x = np.sort(x[np.isfinite(x)])  # sorted: the interval does not depend on the order of the rows
    if len(x) == 0:
        return math.nan, math.nan
    if len(x) == 1:
        return float(x[0]), float(x[0])
    if stat is None:  # the resamples' means, BOOT_CELLS draws at a time: the same draws, bounded memory
        rows = max(1, BOOT_CELLS // len(x))
        stats = np.concatenate(
            [x[rng.integers(0, len(x), size=(min(rows, n_boot - i), len(x)))].mean(axis=1)
             for i in range(0, n_boot, rows)]
        )  # fmt: skip
    else:
        stats = stat(x[rng.integers(0, len(x), size=(n_boot, len(x)))])
    lo, hi = np.quantile(stats, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def group_rng(seed: int, key: Any) -> np.random.Generator:
    """A generator seeded from ``seed`` and a stable hash of the group ``key``."""
    return np.random.default_rng([int(seed), zlib.crc32(repr(key).encode("utf-8"))])


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: twice the smaller binomial tail of the discordant pairs at p = 1/2,
    capped at 1. The package's one McNemar (``compare.method_pairs``)."""
    a_only, b_only = int(a_only), int(b_only)
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


# --------------------------------------------------------------------------------------------- summaries


def _keys(by: Sequence[str] | str) -> list[str]:
    return [by] if isinstance(by, str) else list(by)


CLUSTER_COLUMNS = ("task", "sample_file")
"""The columns :func:`~dvoc_bench.analysis.clustered.cluster_keys` reads (the sample of a trial)."""
ASSUMED_COLUMNS = ("simulated", "simulated_assumptions")
"""The columns :func:`assumed_of` and a table's ``simulated`` flag read."""


_ROWS_COLUMNS = ("status", "valid", "final_dist_px", "model_calls", "cost_usd", "tokens_in", "tokens_out",
                 "iterations", "target_inferred", *ASSUMED_COLUMNS, *CLUSTER_COLUMNS)  # fmt: skip
"""The trial columns :func:`_rows` reads (besides the rule's)."""


def _rows(g: pd.DataFrame, rule: str, rng: np.random.Generator, n_boot: int) -> dict[str, Any]:
    ran = g[g["status"] != "skipped"]
    valid = ran[ran["valid"]]
    k = int(valid[rule].sum())
    n, n_ran = len(valid), len(ran)
    # the clustered interval: the trials of one sample (its start points, its repeats) are not independent
    lo, hi = sample_rate_interval(valid[rule].astype(float), valid)
    rlo, rhi = sample_rate_interval((ran["valid"] & ran[rule]).astype(float), ran)
    dist = valid["final_dist_px"].to_numpy(dtype=float)
    dist = dist[np.isfinite(dist)]
    dlo, dhi = bootstrap_ci(dist, rng, n_boot=n_boot)
    # known when every trial that ran has a recorded cost or made no model call (which costs nothing)
    calls = ran["model_calls"].fillna(0)
    cost_known = len(ran) > 0 and bool((ran["cost_usd"].notna() | (calls == 0)).all())
    cost = float(ran["cost_usd"].fillna(0.0).sum()) if cost_known else math.nan
    return {
        "simulated": bool(g["simulated"].any()),
        "assumed": assumed_of(g),
        "total": len(g),
        "errors": int((g["status"] == "error").sum()),
        "skipped": int((g["status"] == "skipped").sum()),
        "valid": n,
        "success": k,
        "rate": k / n if n else math.nan,
        "rate_lo": lo,
        "rate_hi": hi,
        "raw_rate": k / n_ran if n_ran else math.nan,
        "raw_lo": rlo,
        "raw_hi": rhi,
        "mean_dist": float(dist.mean()) if len(dist) else math.nan,
        "dist_lo": dlo,
        "dist_hi": dhi,
        "median_dist": float(np.median(dist)) if len(dist) else math.nan,
        "mean_iters": float(valid["iterations"].astype(float).mean()) if n else math.nan,
        "calls": int(ran["model_calls"].fillna(0).sum()),
        "tokens_in": int(ran["tokens_in"].fillna(0).sum()) if ran["tokens_in"].notna().any() else pd.NA,
        "tokens_out": int(ran["tokens_out"].fillna(0).sum()) if ran["tokens_out"].notna().any() else pd.NA,
        "cost_usd": cost,
        "cost_per_success": _per_success(cost, k),
        "inferred_boxes": bool(g["target_inferred"].any()) if rule == "hit" else False,
        "rule": rule,
    }


SUMMARY_VALUES = frozenset(
    {
        "simulated",
        "scene_check",
        "assumed",
        "total",
        "errors",
        "skipped",
        "valid",
        "success",
        "rate",
        "rate_lo",
        "rate_hi",
        "raw_rate",
        "raw_lo",
        "raw_hi",
        "mean_dist",
        "dist_lo",
        "dist_hi",
        "median_dist",
        "mean_iters",
        "calls",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "cost_per_success",
        "inferred_boxes",
        "rule",
    }
)
"""The value columns of :func:`summary`; every other column is a grouping key."""


def summary_keys(summary_df: pd.DataFrame) -> list[str]:
    """The grouping columns of a :func:`summary` frame, in order."""
    return [c for c in summary_df.columns if c not in SUMMARY_VALUES]


def _per_success(cost: float, k: int) -> float:
    """Cost / successes; ``inf`` when the cost is known but nothing succeeded; NaN when it is unknown."""
    if not math.isfinite(cost):
        return math.nan
    if k == 0:
        return math.inf
    return cost / k


def summary(
    trials: pd.DataFrame,
    rule: str = "hit",
    by: Sequence[str] | str = ("model", "method"),
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per group: counts, the rate under ``rule`` with its :func:`rate_interval` (``RATE_INTERVAL``:
    Wilson 95 % clustered by sample; over
    valid trials and over all trials that ran), mean distance with a bootstrap interval, median distance,
    mean iterations, calls, tokens, cost and cost per success. ``simulated`` marks simulated groups."""
    check_rule(rule)
    keys = _keys(by)
    rows = []
    t = narrow(trials, *keys, *_ROWS_COLUMNS, rule)
    for name, g in t.groupby(keys, dropna=False, sort=True):
        name = name if isinstance(name, tuple) else (name,)
        row = dict(zip(keys, name, strict=True))
        row.update(_rows(g, rule, group_rng(seed, name), n_boot))
        rows.append(row)
    return pd.DataFrame(rows)


def per_task(
    trials: pd.DataFrame, rule: str = "hit", method: str | None = "dvoc", split: Sequence[str] = (), **kw: Any
) -> pd.DataFrame:
    """:func:`summary` by task and model (for one method, by default DVOC). With simulated rows, a
    ``scene_check`` column carries ``per-scene not validated`` on a simulated model's rows of exactly the
    scenes the simulator's cross-validation rejects (:mod:`dvoc_bench.core.scene_check`)."""
    by = ("task", "model", *split)
    t = trials if method is None else _of_method(trials, method, rule, by)
    out = summary(t, rule, by=by, **kw)
    if len(out) and bool(out["simulated"].any()):
        out["scene_check"] = [
            scene_check.marker(task, simulated=bool(sim))
            for task, sim in zip(out["task"], out["simulated"], strict=True)
        ]
    return out


def varying_knobs(trials: pd.DataFrame, candidates: Sequence[str] | None = None) -> list[str]:
    """The knob columns that take more than one value among one model's DVOC trials (what an ablation
    varied; a knob that only differs between models, like each model's frame, is not an ablation)."""
    cands = candidates or (
        "alpha", "overlay", "predict", "protocol", "coord_frame", "epsilon", "label_placement"
    )  # fmt: skip
    d = keep_rows(narrow(trials, "model", *cands), trials["method"] == "dvoc")
    if d.empty:
        return []
    return [c for c in cands if c in d.columns and int(d.groupby("model")[c].nunique(dropna=True).max()) > 1]


RUN_KNOBS = ("protocol", "detector", "zoom")
"""Knobs that can split a whole run, every method included (``experiment=frames``, several detectors)."""


SETTING_KNOBS = (
    "adaptive",
    "sampling",
    "overlay_style",
    "image",
    "retry_rule",
    "verify_click",
    "model_config",
    "drag_start",
    "episode_knobs",
    "absent",
    "offer_absent",
    "device",
    "variation",
)
"""Spec fields that carry a settings block (:class:`dvoc_bench.core.records.TrialSpec`; ``-`` is the block at
its defaults, or a trial the block does not apply to): two values anywhere in the runs split every table."""


def headline_keys(trials: pd.DataFrame) -> list[str]:
    """The grouping of a headline table or chart: model and method, then every knob the run varied
    (:func:`varying_knobs` within a model's DVOC trials, plus a protocol or detector that differs anywhere
    in the run, plus any settings block of :data:`SETTING_KNOBS` that takes two values), so settings of a
    sweep are never pooled into one number."""
    keys = ["model", "method", *varying_knobs(trials)]
    for k in RUN_KNOBS:
        if k in trials.columns and k not in keys:
            vals = trials[k].dropna()
            if vals[vals != "-"].nunique() > 1:
                keys.append(k)
    for k in SETTING_KNOBS:
        if k in trials.columns and k not in keys and trials[k].nunique(dropna=True) > 1:
            keys.append(k)
    return keys


def duplicate_keys(trials: pd.DataFrame) -> pd.Series:
    """True for a trial whose key (model, scene, method, knobs, start point, repeat, seed) already appeared
    in an earlier source: the same trial run again by another job of a sweep (e.g. the one-shot trials of
    every job of an ``alphas=`` multirun). Counting both would inflate ``n`` with copies."""
    if "trial_key" not in trials.columns or trials.empty:
        return pd.Series(False, index=trials.index)
    return trials["trial_key"].duplicated(keep="first")


class PoolingError(ValueError):
    """Two records of one trial key that are not the same trial: pooling them would drop one (one line)."""


SPEC_COLUMNS: tuple[str, ...] = tuple(
    c
    for c in record_columns(TrialSpec)
    if c not in ("trial_key", "experiment", "seed", "simulated_assumptions")
)
"""The trial columns that come from its spec: two records of one key must agree on every one."""

OUTCOME_COLUMNS = ("status", "stop_reason", "final_x", "final_y", "hit")
"""What a trial's outcome is: tells a true re-run (same outcome, or same settings) from a setting the key
did not see."""


def _differing(a: pd.Series, b: pd.Series, cols: Sequence[str]) -> list[str]:
    """The columns of ``cols`` where two rows hold different known values (an unknown value, from a record
    made before the column existed, differs from nothing)."""
    out = []
    for c in cols:
        if c not in a.index:
            continue
        x, y = a[c], b[c]
        if pd.isna(x) or pd.isna(y):
            continue
        if isinstance(x, float | np.floating) and isinstance(y, float | np.floating):
            if not np.isclose(x, y, rtol=0.0, atol=1e-9):
                out.append(c)
        elif x != y:
            out.append(c)
    return out


def setting_differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[str]:
    """``key: a vs b`` for every setting two runs both recorded and were made with differently (none when
    either run's settings are unknown; a setting only one run recorded, newer than the other, is left out)."""
    if a is None or b is None:
        return []
    out = []
    for k in sorted(set(a) & set(b)):
        if k != "models" and a[k] != b[k]:
            out.append(f"{k}: {json.dumps(a[k], default=str)} vs {json.dumps(b[k], default=str)}")
    return out


def _model_digest(made_with: Mapping[str, Any] | None, model: object) -> str | None:
    """The digest a run recorded for a model config (``name@digest`` in its fingerprint), if any."""
    for entry in (made_with or {}).get("models") or []:
        name, _, digest = str(entry).rpartition("@")
        if name == model:
            return digest
    return None


def _first_finished(trials: pd.DataFrame) -> pd.Series:
    """True for a trial that repeats a key already taken: per key the first record of status ``ok`` is taken,
    else the first (a transient error in one job does not hide the other job's answer)."""
    rank = (trials["status"] != "ok").astype(int) if "status" in trials else pd.Series(0, index=trials.index)
    order = trials.assign(_rank=rank).sort_values("_rank", kind="stable")
    return order["trial_key"].duplicated(keep="first").reindex(trials.index)


def without_repeats(
    trials: pd.DataFrame, steps: pd.DataFrame, settings: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """``trials`` and ``steps`` without the repeats of a key (:func:`duplicate_keys`; their steps too), and
    how many were dropped; of a key's records, the first of status ``ok`` is kept (else the first).

    Only true re-runs are dropped: the records of a key must hold the same spec (every
    :data:`SPEC_COLUMNS`) and the same model config (the digest their runs recorded for it). Records whose key
    saw every setting (``full_key``) are then the same trial, whatever they answered (a model may answer
    anew each time). Older records whose outcomes differ while both ran are the same trial only when
    their runs were made with the same settings (``settings``: run directory -> its settings,
    :attr:`Runs.settings`).
    Anything else raises :class:`PoolingError` naming the key, the two runs and what differs: a setting the
    key did not see would otherwise silently drop half of what was run."""
    if "trial_key" not in trials.columns or trials.empty or not trials["trial_key"].duplicated().any():
        return trials, steps, 0
    dup = _first_finished(trials)
    made_with = settings or {}
    first = trials[~dup].set_index("trial_key", drop=False)
    for _, row in trials[dup].iterrows():
        ref = first.loc[row["trial_key"]]
        a, b = made_with.get(str(ref["run_dir"])), made_with.get(str(row["run_dir"]))
        where = f"trial {row['trial_key']} of {ref['run_dir']} and {row['run_dir']}"
        if cols := _differing(ref, row, SPEC_COLUMNS):
            what = ", ".join(f"{c} ({ref[c]} vs {row[c]})" for c in cols)
            raise PoolingError(f"{where}: one key, two specs ({what}); analyse the runs apart")
        da, db = _model_digest(a, row.get("model")), _model_digest(b, row.get("model"))
        if da is not None and db is not None and da != db:
            raise PoolingError(
                f"{where}: one key, two configs of model {row.get('model')} (digest {da} vs {db}); analyse "
                "the runs apart"
            )
        if bool(ref.get("full_key", False)) and bool(row.get("full_key", False)):
            continue  # the key saw every setting: the same trial run again
        both_ran = ref.get("status") == "ok" and row.get("status") == "ok"
        if both_ran and _differing(ref, row, OUTCOME_COLUMNS) and (knobs := setting_differences(a, b)):
            raise PoolingError(
                f"{where}: one key, two outcomes, and the runs were made with different settings "
                f"({'; '.join(knobs)}): the trial key of these records (made before it saw every setting) "
                "does not tell whether that setting reached the trial; analyse the runs apart"
            )
    kept = trials[~dup]
    keep = pd.MultiIndex.from_frame(kept[["run_dir", "trial_key"]].astype(str))
    sel = pd.MultiIndex.from_frame(steps[["run_dir", "trial_key"]].astype(str)).isin(keep)
    return kept, steps[sel], int(dup.sum())


def ablation(trials: pd.DataFrame, knob: str, rule: str = "hit", **kw: Any) -> pd.DataFrame:
    """:func:`summary` of DVOC trials by model and one knob (alpha, overlay, predict, ...)."""
    return summary(_of_method(trials, "dvoc", rule, ("model", knob)), rule, by=("model", knob), **kw)


def _of_method(trials: pd.DataFrame, method: str, rule: str, keys: Sequence[str]) -> pd.DataFrame:
    """The trials of ``method``, with the columns :func:`summary` by ``keys`` reads."""
    t = narrow(trials, "method", *keys, *_ROWS_COLUMNS, rule)
    return t[t["method"] == method]


def cost_table(
    trials: pd.DataFrame, rule: str = "hit", by: Sequence[str] | str = ("model", "method")
) -> pd.DataFrame:
    """Calls, tokens, cost and cost per successful click (``rule`` names what counts as success), for the
    groups whose cost is known: every trial that ran has a recorded cost or made no model call. A group
    with no success shows ``inf``. Empty when no cost is known (e.g. the authors' records)."""
    s = summary(trials, rule, by=by, n_boot=1)
    s = s[s["cost_usd"].notna()]
    cols = [*_keys(by), "simulated", "valid", "success", "calls", "tokens_in", "tokens_out", "cost_usd"]
    assumed = ["assumed"] if "assumed" in s else []  # the row's assumption markers reach the report
    return s[[*cols, "cost_per_success", "rule", *assumed]].reset_index(drop=True)


# ------------------------------------------------------------------------------------------- frame audit


SPANS = ("W-1", "W")
"""How a normalised unit maps to pixels: ``(W - 1) / scale`` (our geometry) or ``W / scale`` (Gemini's
documentation)."""


def _factors(frame: str, w: np.ndarray, h: np.ndarray, span: str = "W-1") -> tuple[np.ndarray, np.ndarray]:
    """Pixels per unit of ``frame``: ``(W - 1) / scale`` (``span="W-1"``, our geometry) or ``W / scale``."""
    if span not in SPANS:
        raise ValueError(f"unknown span {span!r}; allowed: {', '.join(SPANS)}")
    if frame == "pixel":
        return np.ones_like(w), np.ones_like(h)
    scale = 1000.0 if frame == "norm1000" else 1.0
    k = 1.0 if span == "W-1" else 0.0
    return (w - k) / scale, (h - k) / scale


AUDIT_VALUES = (
    "reading",
    "as_recorded",
    "simulated",
    "n",
    "hit",
    "hit_radius",
    "within_eps",
    "median_err_px",
)
"""Columns of a frame audit besides its grouping keys."""


def frame_audit_points(
    steps: pd.DataFrame,
    by: Sequence[str] | str = ("model", "method", "has_task"),
    epsilon: float = 30.0,
    span: str = "W-1",
) -> pd.DataFrame:
    """Every recorded absolute answer (one-shot clicks, DVOC absolute-mode answers) read as pixels, as
    0–1000 and as 0–1 units: per group and reading, n, the rate of each rule and the median error.

    ``as_recorded`` marks the reading the harness actually used (the step's ``frame``); the authors read
    everything as pixels. The 0–1000 reading uses ``x * (W - 1) / 1000`` (our geometry's rule) or, with
    ``span="W"``, ``x * W / 1000`` (Gemini's documentation): at most 1.3 px
    apart on 1280-wide images, but it moves medians of well-aimed answers (0.7 vs 0.4 px on S1).
    """
    s = keep_rows(steps, steps["raw_x"].notna() & steps["raw_y"].notna() & steps["image_w"].notna())
    keys = _keys(by)
    if s.empty:
        return pd.DataFrame(columns=[*keys, *AUDIT_VALUES])
    w = s["image_w"].to_numpy(dtype=float)
    h = s["image_h"].to_numpy(dtype=float)
    x0, y0 = s["target_x0"].to_numpy(dtype=float), s["target_y0"].to_numpy(dtype=float)
    x1, y1 = s["target_x1"].to_numpy(dtype=float), s["target_y1"].to_numpy(dtype=float)
    cx, cy = s["target_cx"].to_numpy(dtype=float), s["target_cy"].to_numpy(dtype=float)
    radius = np.maximum(np.maximum((x1 - x0) / 2, (y1 - y0) / 2), 30.0)
    parts = []
    for frame in FRAMES:
        fx, fy = _factors(frame, w, h, span)
        px = s["raw_x"].to_numpy(dtype=float) * fx
        py = s["raw_y"].to_numpy(dtype=float) * fy
        d = np.hypot(px - cx, py - cy)
        part = s[[*keys, "simulated", "frame"]].copy()
        part["reading"] = frame
        part["_hit"] = (px >= x0) & (px <= x1) & (py >= y0) & (py <= y1)
        part["_radius"] = d < radius
        part["_eps"] = d < epsilon
        part["_d"] = d
        parts.append(part)
    allp = pd.concat(parts, ignore_index=True)
    rows = []
    for name, g in allp.groupby([*keys, "reading"], dropna=False, sort=False):
        name = name if isinstance(name, tuple) else (name,)
        row = dict(zip([*keys, "reading"], name, strict=True))
        row.update(
            as_recorded=bool((g["frame"] == row["reading"]).all()),
            simulated=bool(g["simulated"].any()),
            n=len(g),
            hit=float(g["_hit"].mean()),
            hit_radius=float(g["_radius"].mean()),
            within_eps=float(g["_eps"].mean()),
            median_err_px=float(g["_d"].median()),
        )
        rows.append(row)
    out = pd.DataFrame(rows)
    order = {f: i for i, f in enumerate(FRAMES)}
    return out.sort_values(
        [*keys, "reading"], key=lambda c: c.map(order) if c.name == "reading" else c
    ).reset_index(drop=True)


def frame_audit_offsets(
    steps: pd.DataFrame, by: Sequence[str] | str = ("model", "image_w", "image_h")
) -> pd.DataFrame:
    """Per group: the gain of the reported offset on the true offset, per axis, against what each frame
    predicts (pixel: 1; 0–1000: 1000/W and 1000/H).

    Uses DVOC steps with a raw offset (relative mode) and a known draft. ``gain0_*`` is the least-squares
    slope through the origin, ``gain_*`` / ``bias_*`` an ordinary fit with intercept, ``g_*`` = 1000/W,
    1000/H. ``frame_x`` / ``frame_y`` name the frame whose gain is nearest (on a log scale).
    ``err_raw_px`` / ``err_norm_px``: median |r - t| with r read as pixels, and as 0–1000 units."""
    s = keep_rows(steps, steps["raw_dx"].notna() & steps["true_dx"].notna() & steps["image_w"].notna())
    keys = _keys(by)
    rows = []
    for name, g in s.groupby(keys, dropna=False, sort=True):
        name = name if isinstance(name, tuple) else (name,)
        row = dict(zip(keys, name, strict=True))
        w, h = float(g["image_w"].iloc[0]), float(g["image_h"].iloc[0])
        row.update(simulated=bool(g["simulated"].any()), n=len(g))
        for ax, size in (("x", w), ("y", h)):
            r = g[f"raw_d{ax}"].to_numpy(dtype=float)
            t = g[f"true_d{ax}"].to_numpy(dtype=float)
            tt = float((t * t).sum())
            row[f"gain0_{ax}"] = float((r * t).sum() / tt) if tt > 0 else math.nan
            if len(g) >= 3 and np.ptp(t) > 0:
                slope, icpt = np.polyfit(t, r, 1)
                row[f"gain_{ax}"], row[f"bias_{ax}"] = float(slope), float(icpt)
            else:
                row[f"gain_{ax}"], row[f"bias_{ax}"] = math.nan, math.nan
            row[f"g_{ax}"] = 1000.0 / size
            row[f"frame_{ax}"] = _nearest_frame(row[f"gain0_{ax}"], size)
        rx, ry = g["raw_dx"].to_numpy(dtype=float), g["raw_dy"].to_numpy(dtype=float)
        tx, ty = g["true_dx"].to_numpy(dtype=float), g["true_dy"].to_numpy(dtype=float)
        row["err_raw_px"] = float(np.median(np.hypot(rx - tx, ry - ty)))
        row["err_norm_px"] = float(np.median(np.hypot(rx * (w - 1) / 1000 - tx, ry * (h - 1) / 1000 - ty)))
        rows.append(row)
    return pd.DataFrame(rows)


def _nearest_frame(gain: float, size: float) -> str:
    if not math.isfinite(gain) or gain <= 0:
        return "unclear"
    cands = {"pixel": 1.0, "norm1000": 1000.0 / size, "norm1": 1.0 / size}
    return min(cands, key=lambda f: abs(math.log(gain / cands[f])))


def assumed_of(g: pd.DataFrame) -> str:
    """The assumption markers of a group of trials (``; ``-joined labels; empty for real models)."""
    cells = g.get("simulated_assumptions", ())
    if isinstance(cells, pd.Series) and cells.dtype == "string":  # each distinct text read once
        cells = cells.dropna().unique()
    return "; ".join(sorted({a for c in cells for a in labels_of(c)}))


def with_assumed(table: pd.DataFrame, trials: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """``table`` (one row per group of ``keys``) with the ``assumed`` markers of each group's trials, so a
    simulated row keeps its ``[SIMULATED; ... assumed]`` label in every table."""
    if table.empty or "assumed" in table or not set(keys) <= set(table.columns):
        return table
    groups = narrow(trials, *keys, *ASSUMED_COLUMNS).groupby(list(keys), dropna=False)
    marks = {k if isinstance(k, tuple) else (k,): assumed_of(g) for k, g in groups}
    out = table.copy()
    out["assumed"] = [marks.get(tuple(r), "") for r in out[list(keys)].itertuples(index=False)]
    return out


def rules_side_by_side(trials: pd.DataFrame, by: Sequence[str] | str = ("model", "method")) -> pd.DataFrame:
    """Rate over valid trials under every rule at once (and the authors' stored ``paper_success`` where the
    records have it): how much of a result is the choice of rule."""
    keys = _keys(by)
    t = narrow(trials, *keys, "valid", "paper_success", *RULES, "target_inferred", *ASSUMED_COLUMNS)
    v = t[t["valid"]]
    rows = []
    for name, g in v.groupby(keys, dropna=False, sort=True):
        name = name if isinstance(name, tuple) else (name,)
        row = dict(zip(keys, name, strict=True))
        row.update(simulated=bool(g["simulated"].any()), valid=len(g))
        if g["paper_success"].notna().any():
            row["paper_success"] = float(g["paper_success"].astype(float).mean())
        for rule in ("hit_radius", "within_eps", "hit"):
            row[rule] = float(g[rule].mean())
        row["inferred_boxes"] = bool(g["target_inferred"].any())
        row["assumed"] = assumed_of(g)
        rows.append(row)
    return pd.DataFrame(rows)
