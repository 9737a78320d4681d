"""Accuracy at equal cost, from the step records alone: what each method would have clicked had it been
stopped after ``k`` calls, what its own stop rule, a stop rule that knew the answer and "stop at the first
hit" give, and the cost of a successful click.

**The iterate after k calls.** Every method acts on the last point it produced: DVOC on the draft its
last correction moved to (``next_draft`` of its last verify step; its iteration cap does exactly this),
one-shot with retries, zoom and zoom_dvoc on their last usable answer (``next_draft`` of the last click
step that had one), Set-of-Mark on the chosen mark's centre. So the point after ``k`` calls is the
``next_draft`` of the last of the trial's first ``k`` steps that has one (before any, DVOC's start point),
and from ``k`` = the calls the trial made on, the trial's own final point and verdict. An iterate before
the last is scored by the same geometry as the records (:func:`dvoc_bench.core.scoring.score`: ``hit`` =
inside the target box); web and desktop trials, whose final ``hit`` is the DOM's or the toolkit's verdict,
use the box for the earlier iterates (``hit_box``), which the tables say.

**Stop rules.** ``self``: the trial as it ran (its own rule). ``oracle``: the best of its iterates in
hindsight (success when any iterate after ``k = 1 .. n`` calls succeeds, the smallest distance among
them): no deployed agent can stop there. ``first_hit``: stop at the first iterate that succeeds (the
See-Point-Refine rule, which stops on the ground truth): the same success as the oracle by definition,
reached with fewer calls; its calls are the ones to that first hit (all of them when none hits). One-shot
with retries already stops on the harness's verdict ("the previous answer missed"): its self-stop is a
first-hit rule.

Rates are over valid trials (status ``ok``) with the report's one interval,
:func:`~dvoc_bench.analysis.clustered.sample_rate_interval` (:data:`INTERVAL`, the unit :data:`UNIT`: a
sample's start points and repeats count once toward its sample size when they agree). Tokens and dollars
are summed over the calls made up to ``k``; a simulated model's tokens are placeholders and it costs
nothing, so its rows are compared in calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.clustered import INTERVAL, UNIT, sample_rate_interval
from dvoc_bench.analysis.honest import (
    ASSUMED_COLUMNS,
    BOOT_CELLS,
    RULES,
    assumed_of,
    check_rule,
    group_rng,
)
from dvoc_bench.analysis.schema import narrow, take_column
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.scoring import score

BUDGETS = (1, 2, 3, 5, 8, 15)
"""The call budgets of the matched-budget table."""
BOOT_INTERVAL = "percentile bootstrap 95 % over samples"
"""The interval of the cost per successful click (samples resampled with their trials)."""
__all__ = ["BOOT_INTERVAL", "BUDGETS", "INTERVAL", "UNIT", "at_budget", "cost_per_success", "curve",
           "iterates", "lacking", "matched", "stop_rules"]  # fmt: skip


def _trial_rule(trials: pd.DataFrame, rule: str) -> pd.Series:
    return trials[rule].fillna(False).astype(bool)


def iterates(trials: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """One row per valid trial and call count ``k`` (``0`` for a trial without a model call, else
    ``1 .. n``): the point the method would act on after ``k`` calls (``x``, ``y``; NaN when it had none),
    its distance ``dist`` and verdict under every rule (``hit``, ``within_eps``, ``hit_radius``), the
    cumulative ``tokens_in``, ``tokens_out``, ``cost_usd`` (NaN once a call's cost is unknown) and
    ``latency_s`` up to ``k``, and ``last`` (``k`` is the trial's whole run: the trial's own final point and
    verdict). Keyed by ``run_dir`` and ``trial_key``."""
    cols = ["run_dir", "trial_key", "start_x", "start_y", "final_x", "final_y", "model_calls", "epsilon",
            "hit_radius_min", "target_x0", "target_y0", "target_x1", "target_y1", "final_dist_px",
            *RULES]  # fmt: skip
    t = narrow(trials, *cols, "valid", "tokens_in", "tokens_out", "cost_usd")
    t = t[t["valid"]].reset_index(drop=True)
    s = narrow(steps, "run_dir", "trial_key", "index", "next_x", "next_y", "tokens_in", "tokens_out",
               "latency_s", "cost_usd")  # fmt: skip
    # each call's trial by its place in t (one merge on the text keys; the rest is taken by place)
    places = t[["run_dir", "trial_key"]].assign(_trial=np.arange(len(t)))
    s = s.merge(places, on=["run_dir", "trial_key"], how="inner")
    s = s.sort_values(["run_dir", "trial_key", "index"], kind="stable").reset_index(drop=True)
    g = s.groupby(["run_dir", "trial_key"], sort=False)
    has = s["next_x"].notna() & s["next_y"].notna()
    s["_px"] = s["next_x"].where(has)
    s["_py"] = s["next_y"].where(has)
    s[["_px", "_py"]] = g[["_px", "_py"]].ffill()
    s["k"] = g.cumcount() + 1
    for col in ("tokens_in", "tokens_out", "latency_s"):
        s[f"_{col}"] = pd.to_numeric(s[col], errors="coerce").astype(float).fillna(0.0)
        s[f"_{col}"] = s.groupby(["run_dir", "trial_key"], sort=False)[f"_{col}"].cumsum()
    cost = pd.to_numeric(s["cost_usd"], errors="coerce").astype(float)
    s["_unknown"] = cost.isna().astype(int).groupby([s["run_dir"], s["trial_key"]], sort=False).cumsum()
    s["_cost"] = cost.fillna(0.0).groupby([s["run_dir"], s["trial_key"]], sort=False).cumsum()
    s.loc[s["_unknown"] > 0, "_cost"] = math.nan
    # tokens a source never recorded stay unknown (not 0)
    for col in ("tokens_in", "tokens_out"):
        known = s[col].notna().groupby([s["run_dir"], s["trial_key"]], sort=False).cummin()
        s.loc[~known.astype(bool), f"_{col}"] = math.nan
    keep = ["run_dir", "trial_key", "k", "_px", "_py", "_tokens_in", "_tokens_out", "_cost", "_latency_s"]
    it = s[keep].rename(columns=lambda c: c.lstrip("_") if c.startswith("_") else c)
    it = it.rename(columns={"px": "x", "py": "y", "cost": "cost_usd"})
    of_trial = s["_trial"].to_numpy()
    for c in cols[2:]:  # the trial's columns, by place (what a merge on the keys gave, without its tables)
        it[c] = take_column(t[c], of_trial)
    it["x"] = it["x"].fillna(it["start_x"])
    it["y"] = it["y"].fillna(it["start_y"])
    n = it.groupby(["run_dir", "trial_key"], sort=False)["k"].transform("max")
    it["last"] = it["k"] == n
    # trials without step records: one row, the final point, at k = their calls (baselines: 0; an
    # imported prediction without its calls: what the row says), with the trial's own sums
    called = np.zeros(len(t), dtype=bool)
    called[of_trial] = True
    none = t[~called]
    if len(none):
        z = none[cols].copy()
        calls = none["model_calls"].fillna(0).astype(int).to_numpy()
        z["k"], z["x"], z["y"], z["last"] = calls, z["final_x"], z["final_y"], True
        for c in ("tokens_in", "tokens_out", "cost_usd"):
            z[c] = np.where(calls == 0, 0.0, none[c].astype(float).to_numpy())
        z["latency_s"] = np.where(calls == 0, 0.0, math.nan)
        it = pd.concat([it, z], ignore_index=True)
    _score(it)
    return it.drop(columns=["start_x", "start_y", "final_x", "final_y", "epsilon", "hit_radius_min",
                            "target_x0", "target_y0", "target_x1", "target_y1", "final_dist_px"])  # fmt: skip


def _score(it: pd.DataFrame) -> None:
    """Score every iterate in place (the last one keeps the trial's recorded verdict and distance)."""
    out: dict[str, list[Any]] = {"dist": [], "hit": [], "within_eps": [], "hit_radius": []}
    cols = ["x", "y", "target_x0", "target_y0", "target_x1", "target_y1", "epsilon", "hit_radius_min"]
    for x, y, x0, y0, x1, y1, eps, rmin in it[cols].itertuples(index=False):
        pt = None if (pd.isna(x) or pd.isna(y)) else Point(float(x), float(y))
        sc = score(pt, Box(float(x0), float(y0), float(x1), float(y1)), float(eps), float(rmin))
        out["dist"].append(math.nan if sc.final_dist_px is None else sc.final_dist_px)
        for r in RULES:
            out[r].append(bool(getattr(sc, r)))
    last = it["last"].to_numpy()
    it["dist"] = np.where(last, it["final_dist_px"].astype(float), out["dist"])
    for r in RULES:
        it[r] = np.where(last, it[r].fillna(False).astype(bool), np.asarray(out[r], dtype=bool))


def at_budget(it: pd.DataFrame, k: int) -> pd.DataFrame:
    """Each trial's row at a budget of ``k`` calls: its iterate after ``min(k, n)`` calls (a trial that
    made no call: its only row)."""
    sel = it[(it["k"] <= k)]
    return sel.sort_values("k", kind="stable").groupby(["run_dir", "trial_key"], sort=False).tail(1)


def _groups(trials: pd.DataFrame, by: Sequence[str]) -> list[tuple[tuple[Any, ...], pd.DataFrame]]:
    v = trials[trials["valid"]]
    out = []
    for name, g in v.groupby(list(by), dropna=False, sort=True):
        out.append((name if isinstance(name, tuple) else (name,), g))
    return out


def _rate(success: pd.Series, trials: pd.DataFrame) -> tuple[float, float, float]:
    y = success.astype(float).to_numpy()
    if not len(y):
        return math.nan, math.nan, math.nan
    lo, hi = sample_rate_interval(y, trials)
    return float(y.mean()), lo, hi


def curve(
    trials: pd.DataFrame,
    steps: pd.DataFrame,
    rule: str = "hit",
    by: Sequence[str] = ("model", "method"),
    budgets: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Accuracy at a budget: per group of ``by`` and budget ``k`` (default ``1 .. max calls``), the trials,
    the samples, the rate under ``rule`` had each trial stopped after ``k`` calls with its
    :data:`INTERVAL`, and the mean calls, input and output tokens and dollars spent per trial up to there
    (``cost_usd`` NaN when any call's cost is unknown)."""
    check_rule(rule)
    it = iterates(trials, steps)
    kmax = int(it["k"].max()) if len(it) else 0
    ks = list(budgets) if budgets is not None else sorted({*range(1, max(kmax, 1) + 1), *BUDGETS})
    rows = []
    keys = list(by)
    meta = trials[["run_dir", "trial_key", "task", *keys]]
    flags = narrow(trials, *ASSUMED_COLUMNS)
    for k in ks:
        b = at_budget(it, k).merge(meta, on=["run_dir", "trial_key"], how="left")
        for name, g in b.groupby(keys, dropna=False, sort=True):
            name = name if isinstance(name, tuple) else (name,)
            rate, lo, hi = _rate(g[rule], g)
            row = dict(zip(keys, name, strict=True))
            sel = flags[(trials[keys] == pd.Series(row)).all(axis=1)] if keys else flags
            simulated = bool(sel["simulated"].any())  # placeholder tokens, no cost: compared in calls
            row.update(
                simulated=simulated,
                assumed=assumed_of(sel),
                k=k,
                trials=len(g),
                samples=int(g["task"].nunique()),
                rate=rate,
                lo=lo,
                hi=hi,
                calls=float(g["k"].mean()),
                tokens_in=_mean(g["tokens_in"], simulated),
                tokens_out=_mean(g["tokens_out"], simulated),
                cost_usd=_mean(g["cost_usd"], simulated),
                rule=rule,
            )
            rows.append(row)
    return pd.DataFrame(rows)


def _mean(v: pd.Series, simulated: bool) -> float:
    """The mean of a cost column; NaN when a value is unknown or the model is simulated (placeholders)."""
    return math.nan if simulated or not v.notna().all() else float(v.mean())


def _spend(r: pd.DataFrame) -> str:
    """``calls / tokens / $`` spent per trial, what is known of it."""
    calls, tin, tout, usd = (float(r[c].iloc[0]) for c in ("calls", "tokens_in", "tokens_out", "cost_usd"))
    parts = [f"{calls:.2f} calls"]
    if math.isfinite(tin) and math.isfinite(tout):
        parts.append(f"{tin + tout:,.0f} tok")
    if math.isfinite(usd):
        parts.append(f"${usd:.5f}")
    return ", ".join(parts)


def matched(curve_df: pd.DataFrame, budgets: Sequence[int] = BUDGETS, what: str = "rate") -> pd.DataFrame:
    """The matched-budget table: one row per group, one column per budget ``k`` holding ``rate [lo, hi]``
    (percent) at ``k`` calls, or with ``what="spend"`` the mean calls, tokens (input + output) and dollars
    spent per trial up to ``k`` (tokens and dollars where known; never for a simulated model)."""
    if what not in ("rate", "spend"):
        raise ValueError(f"matched: what must be rate or spend, got {what!r}")
    if curve_df.empty:
        return curve_df
    keys = [c for c in curve_df.columns if c not in _CURVE_VALUES]
    rows = []
    for name, g in curve_df.groupby(keys, dropna=False, sort=True):
        name = name if isinstance(name, tuple) else (name,)
        row = dict(zip(keys, name, strict=True))
        row["simulated"] = bool(g["simulated"].any())
        row["assumed"] = g["assumed"].iloc[0]
        for k in budgets:
            r = g[g["k"] == k]
            if r.empty or pd.isna(r["rate"].iloc[0]):
                row[f"{k} calls"] = "-"
            elif what == "spend":
                row[f"{k} calls"] = _spend(r)
            else:
                rate, lo, hi = (100 * float(r[c].iloc[0]) for c in ("rate", "lo", "hi"))
                row[f"{k} calls"] = f"{rate:.1f}% [{lo:.1f}, {hi:.1f}]"
        row["rule"] = g["rule"].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)


_CURVE_VALUES = frozenset(
    {"simulated", "assumed", "k", "trials", "samples", "rate", "lo", "hi", "calls", "tokens_in",
     "tokens_out", "tokens", "cost_usd", "rule"}
)  # fmt: skip


def stop_rules(
    trials: pd.DataFrame, steps: pd.DataFrame, rule: str = "hit", by: Sequence[str] = ("model", "method")
) -> pd.DataFrame:
    """Self-stop vs oracle-stop vs first-hit for every group whose trials make more than one call: the
    rate of each with its :data:`INTERVAL`, the mean calls each spends, the median distance of the self
    and oracle iterates, and ``gap`` = oracle - self (what a better stop rule could gain)."""
    check_rule(rule)
    it = iterates(trials, steps)
    keys = list(by)
    meta = trials[["run_dir", "trial_key", "task", *keys]]
    it = it.merge(meta, on=["run_dir", "trial_key"], how="left")
    rows = []
    flags = narrow(trials, *ASSUMED_COLUMNS)
    for name, g in it.groupby(keys, dropna=False, sort=True):
        if int(g["k"].max()) <= 1:
            continue
        name = name if isinstance(name, tuple) else (name,)
        per = g.sort_values("k", kind="stable").groupby(["run_dir", "trial_key"], sort=False)
        last = per.tail(1).set_index(["run_dir", "trial_key"])
        ok = g[g[rule] & (g["k"] >= 1)]
        first = ok.sort_values("k", kind="stable").groupby(["run_dir", "trial_key"], sort=False)["k"].first()
        any_hit = per[rule].any()
        oracle_dist = per["dist"].min()
        first_calls = first.reindex(last.index).fillna(last["k"])
        task = last["task"]
        self_r = _rate(last[rule], last)
        orc_r = _rate(any_hit.reindex(last.index), last)
        row = dict(zip(keys, name, strict=True))
        sel = flags[(trials[keys] == pd.Series(row)).all(axis=1)]
        row.update(
            simulated=bool(sel["simulated"].any()),
            assumed=assumed_of(sel),
            trials=len(last),
            samples=int(task.nunique()),
            self_rate=self_r[0],
            self_lo=self_r[1],
            self_hi=self_r[2],
            self_calls=float(last["k"].mean()),
            oracle_rate=orc_r[0],
            oracle_lo=orc_r[1],
            oracle_hi=orc_r[2],
            first_hit_rate=orc_r[0],
            first_hit_calls=float(first_calls.mean()),
            self_median_dist=float(last["dist"].median()),
            oracle_median_dist=float(oracle_dist.reindex(last.index).median()),
            gap=orc_r[0] - self_r[0],
            rule=rule,
        )
        rows.append(row)
    return pd.DataFrame(rows)


def cost_per_success(
    trials: pd.DataFrame,
    rule: str = "hit",
    by: Sequence[str] = ("model", "method"),
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per group: successes, calls / tokens / dollars per successful click, each with a
    :data:`BOOT_INTERVAL` (the group's samples resampled with their trials, ``numpy.random.Generator``
    seeded from ``seed`` and the group); tokens NaN where a trial lacks them, dollars NaN where a call's
    cost is unknown, ``inf`` without a success. Over the trials that ran (an error costs and misses)."""
    check_rule(rule)
    keys = list(by)
    t = narrow(trials, *keys, "status", "valid", rule, "model_calls", "tokens_in", "tokens_out", "cost_usd",
               "task", *ASSUMED_COLUMNS)  # fmt: skip
    ran = t[t["status"] != "skipped"]
    rows = []
    for name, g in ran.groupby(keys, dropna=False, sort=True):
        name = name if isinstance(name, tuple) else (name,)
        succ = (g["valid"] & _trial_rule(g, rule)).astype(float)
        calls = g["model_calls"].fillna(0).astype(float)
        tokens = (g["tokens_in"].astype(float) + g["tokens_out"].astype(float)).where(calls > 0, 0.0)
        cost = g["cost_usd"].astype(float).where(calls > 0, 0.0)
        frame = pd.DataFrame(
            {"task": g["task"].astype(str).to_numpy(), "s": succ.to_numpy(), "calls": calls.to_numpy(),
             "tokens": tokens.to_numpy(), "usd": cost.to_numpy()}
        )  # fmt: skip
        per = frame.groupby("task", sort=True).sum(min_count=1)
        row = dict(zip(keys, name, strict=True))
        row.update(simulated=bool(g["simulated"].any()), assumed=assumed_of(g), trials=len(g),
                   samples=len(per), successes=int(succ.sum()))  # fmt: skip
        s = per["s"].to_numpy(dtype=float)
        booted: dict[str, np.ndarray] = {}
        for col in ("calls", "tokens", "usd"):
            v = per[col].to_numpy(dtype=float)
            known = bool(np.isfinite(v).all()) and (col == "calls" or not row["simulated"])
            row[f"{col}_per_success"] = _ratio(v.sum(), s.sum()) if known else math.nan
            row[f"{col}_lo"] = row[f"{col}_hi"] = math.nan
            if known and s.sum() > 0:
                booted[col] = v
        if booted:
            boot = _ratio_resamples(booted, s, group_rng(seed, ("cost_per_success", *name)), n_boot)
            for col, b in boot.items():
                with np.errstate(invalid="ignore"):  # resamples without a success are inf
                    lo, hi = np.nan_to_num(np.quantile(b, [0.025, 0.975]), nan=np.inf)
                row[f"{col}_lo"], row[f"{col}_hi"] = float(lo), float(hi)
        row["rule"] = rule
        rows.append(row)
    return pd.DataFrame(rows)


def _ratio_resamples(
    values: dict[str, np.ndarray], s: np.ndarray, rng: np.random.Generator, n_boot: int
) -> dict[str, np.ndarray]:
    """Per column of ``values``: the ratio sum(value) / sum(s) of ``n_boot`` resamples of the samples (one
    draw of samples shared by every column; ``inf`` for a resample without a success). The resamples are
    drawn :data:`~dvoc_bench.analysis.honest.BOOT_CELLS` indices at a time, in the generator's order, so
    the ratios are those of drawing all ``n_boot x len(s)`` indices at once, in bounded memory."""
    rows = max(1, BOOT_CELLS // len(s))
    parts: dict[str, list[np.ndarray]] = {col: [] for col in values}
    for i in range(0, n_boot, rows):
        idx = rng.integers(0, len(s), size=(min(rows, n_boot - i), len(s)))
        succ = s[idx].sum(axis=1)
        succ = np.where(succ > 0, succ, np.nan)
        for col, v in values.items():
            ratio = v[idx].sum(axis=1) / succ
            parts[col].append(np.where(np.isnan(ratio), np.inf, ratio))
    return {col: np.concatenate(p) for col, p in parts.items()}


def _ratio(v: float, s: float) -> float:
    return math.inf if s == 0 else float(v / s)


def lacking(trials: pd.DataFrame, steps: pd.DataFrame) -> dict[str, list[str]]:
    """The models whose calls lack token counts (``tokens``) or a known cost (``cost``): every call of
    theirs, or every trial when the steps are absent, has none."""
    out: dict[str, list[str]] = {"tokens": [], "cost": []}
    t = narrow(trials, "model", "model_calls", "tokens_in", "cost_usd")
    called = t[t["model_calls"].fillna(0) > 0]
    calls = narrow(steps, "model", "tokens_in", "cost_usd")
    for model, g in called.groupby("model", sort=True):
        s = calls[calls["model"] == model] if "model" in calls else calls.iloc[0:0]
        if len(s):
            no_tokens = bool(s["tokens_in"].isna().all())
            no_cost = bool(s["cost_usd"].isna().all())
        else:
            no_tokens = bool(g["tokens_in"].isna().all())
            no_cost = bool(g["cost_usd"].isna().all())
        if no_tokens:
            out["tokens"].append(str(model))
        if no_cost:
            out["cost"].append(str(model))
    return out


def under_reported(steps: pd.DataFrame) -> pd.DataFrame:
    """Per model, the calls whose reported usage was far below the harness's own estimate (``est_tokens_in``
    recorded): the reported and estimated tokens (input / output) and the cost of each, the estimate's
    being what the run charged (``cost_usd``). Empty when every reported usage held."""
    cols = ["model", "calls", "reported_tokens", "estimated_tokens", "reported_usd", "charged_usd"]
    if "est_tokens_in" not in steps or not steps["est_tokens_in"].notna().any():
        return pd.DataFrame(columns=cols)
    s = steps[steps["est_tokens_in"].notna()]
    rows = []
    for model, g in s.groupby("model", sort=True):

        def total(col: str, g: pd.DataFrame = g) -> int:
            return int(g[col].fillna(0).sum())

        def usd(col: str, g: pd.DataFrame = g) -> float | None:
            return float(g[col].sum()) if g[col].notna().all() else None

        rows.append({
            "model": model, "calls": len(g),
            "reported_tokens": f"{total('tokens_in')}/{total('tokens_out')}",
            "estimated_tokens": f"{total('est_tokens_in')}/{total('est_tokens_out')}",
            "reported_usd": usd("reported_cost_usd"), "charged_usd": usd("cost_usd"),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=cols)
