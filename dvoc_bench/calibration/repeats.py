"""Repeats as samples, checked on whole sweeps: the paper sweep run with seed 0
and with seed 1 gives pairs of trials with an identical first input (model, method, task, start point,
repeat). Two figures per calibrated model and method:

- **step-0 replies**: how many pairs answered their identical first call identically, against a 95 % band
  built from the records alone (not from the profile, so a profile whose ``consistency`` was changed
  fails). The records give a share ``s`` of identical answers over their identical-input pairs, with a
  Wilson interval ``[s_lo, s_hi]``; the calibration reads ``s = c**2 + (1 - c**2) q`` (``c`` the per-call
  repeat rate, ``q`` the chance agreement of fresh draws on the records' inputs, the profile's
  ``fit.repeat_chance``). A first step far from the target agrees by chance hardly ever, so its share lies
  between ``c_lo**2`` (``c`` at ``s_lo``, no chance agreement) and ``s_hi``; the band runs from the 2.5 %
  binomial quantile at the first to the 97.5 % quantile at the second;
- **final points**: the share of pairs that ended at the identical point, against the records' share over
  pairs of recorded repeats of one model, method, task and start point, whose 95 % upper bound (clustered by
  that cell: its pairs share trials) it must not exceed; ``None`` (not applicable) when the records hold no
  such pairs.

Every simulated figure is SIMULATED (the function returns the counts; callers label them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from dvoc_bench.analysis.intervals import rate_interval, wilson
from dvoc_bench.analysis.schema import Runs
from dvoc_bench.calibration.extract import (
    CalibrationData,
    click_table,
    model_repeat_pairs,
    recorded_trials,
    sim_name,
    verify_table,
)
from dvoc_bench.calibration.validation import SYNTHETIC_TASKS, paper_overrides, simulate

__all__ = [
    "MODES",
    "binomial_band",
    "recorded_final_repeats",
    "records_repeat_pairs",
    "repeat_check",
]

MODES = {"dvoc": "offset", "oneshot": "point"}
"""The consistency mode of each method's first call."""
ANSWER_COLUMNS = {"offset": ("raw_dx", "raw_dy"), "point": ("raw_x", "raw_y")}
"""The first answer's values (as the model gave them) two answers must share to count as identical, as the
fit counts them."""


def _pmf(n: int, k: int, p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return float(k == (0 if p <= 0.0 else n))
    log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    return math.exp(log + k * math.log(p) + (n - k) * math.log1p(-p))


def binomial_band(n: int, p: float, level: float = 0.95) -> tuple[int, int]:
    """Equal-tailed band of a Binomial(n, p) count: the smallest ``k`` whose CDF reaches ``(1 - level) / 2``
    and the smallest whose CDF reaches ``(1 + level) / 2`` (``(0, 0)`` at ``n = 0``; log-space, any n)."""
    if n <= 0:
        return 0, 0
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    cdf, lo = 0.0, None
    for k in range(n + 1):
        cdf += _pmf(n, k, p)
        if lo is None and cdf >= lo_q - 1e-12:
            lo = k
        if cdf >= hi_q - 1e-12:
            return int(lo if lo is not None else k), k
    return int(lo if lo is not None else n), n


def recorded_final_repeats(data: CalibrationData, model: str, method: str) -> tuple[list[int], list[int]]:
    """Per (task, start point) cell of the authors' valid repeats on S1-S6 with a final point: identical
    final points and pairs (``sum`` of each list = the totals; empty lists when no cell has two repeats)."""
    rec = recorded_trials(data, [model])
    rec = rec[(rec["method"] == method) & rec["task"].isin(list(SYNTHETIC_TASKS)) & rec["valid"].astype(bool)]
    rec = rec[rec["final_x"].notna() & rec["final_y"].notna()]
    ks, ns = [], []
    for _, g in rec.groupby(["task", "start_index"], dropna=False):
        pts = list(zip(g["final_x"].round(3), g["final_y"].round(3), strict=True))
        pairs = list(combinations(pts, 2))
        if pairs:
            ks.append(sum(int(a == b) for a, b in pairs))
            ns.append(len(pairs))
    return ks, ns


def records_repeat_pairs(data: CalibrationData, model: str) -> dict[str, tuple[int, int]]:
    """``{mode: (identical answers, pairs)}`` over the records' identical-input calls the calibration fits
    ``model``'s ``consistency`` on (:func:`~dvoc_bench.calibration.extract.model_repeat_pairs`)."""
    steps = data.runs.steps
    return model_repeat_pairs(steps, verify_table(steps, model), click_table(steps, model))[0]


def _first_steps(runs: Runs) -> pd.DataFrame:
    """Each trial of a run (status ok) with its first step's frame, prompt and answer."""
    cols = ["trial_key", "frame_sha", "prompt", *(c for pair in ANSWER_COLUMNS.values() for c in pair)]
    first = runs.steps.loc[runs.steps["index"] == 0, cols]
    keep = ["trial_key", "model", "method", "task", "start_index", "rep", "final_x", "final_y"]
    return runs.trials.loc[runs.trials["valid"], keep].merge(first, on="trial_key", how="left")


def _chance(models_dir: Path, model: str, mode: str) -> float:
    doc = yaml.safe_load((models_dir / f"{sim_name(model)}.yaml").read_text())
    return float((doc.get("fit") or {}).get("repeat_chance", {}).get(mode, 0.0))


def _step0_band(n: int, k_rec: int, n_rec: int, q: float) -> tuple[float, float, int, int]:
    """``(p_lo, p_hi, lo, hi)``: the expected share's range and the count band (module docstring)."""
    s_lo, s_hi = (float(v) for v in wilson(k_rec, n_rec))
    q = min(q, 0.99)
    p_lo = max(0.0, (s_lo - q) / (1.0 - q))  # c_lo ** 2
    return p_lo, s_hi, binomial_band(n, p_lo)[0], binomial_band(n, s_hi)[1]


def repeat_check(
    data: CalibrationData,
    models: Sequence[str],
    root: Path | str,
    *,
    models_dir: Path | str,
    repeats: int = 3,
    tasks: Sequence[str] = SYNTHETIC_TASKS,
) -> pd.DataFrame:
    """Run the paper sweep with seeds 0 and 1 (resumable under ``root``) and compare, per model and method,
    the identical step-0 replies with the records' repeat rate and the identical final points with the
    records' (see the module docstring). One row per model x method."""
    root, models_dir = Path(root), Path(models_dir)
    runs = {}
    for seed in (0, 1):
        ov = paper_overrides([sim_name(m) for m in models], tasks, repeats=repeats, seed=seed)
        sweep = simulate(ov, root / f"repeats-seed{seed}", models_dir=models_dir, text=True)
        runs[seed] = _first_steps(sweep)
    keys = ["model", "method", "task", "start_index", "rep"]
    pairs = runs[0].merge(runs[1], on=keys, suffixes=("_0", "_1"))
    rows = []
    for model in models:
        rec_pairs = records_repeat_pairs(data, model)
        for method, mode in MODES.items():
            g = pairs[(pairs["model"] == sim_name(model)) & (pairs["method"] == method)]
            same_input = g[(g["frame_sha_0"] == g["frame_sha_1"]) & (g["prompt_0"] == g["prompt_1"])]
            a0 = same_input[[f"{c}_0" for c in ANSWER_COLUMNS[mode]]].to_numpy(dtype=float)
            a1 = same_input[[f"{c}_1" for c in ANSWER_COLUMNS[mode]]].to_numpy(dtype=float)
            answered = ~(np.isnan(a0).any(axis=1) | np.isnan(a1).any(axis=1))  # a pair needs two answers
            n = int(answered.sum())
            k = int((answered & (a0 == a1).all(axis=1)).sum())
            k_rec, n_rec = rec_pairs[mode]
            p_lo, p_hi, lo, hi = _step0_band(n, k_rec, n_rec, _chance(models_dir, model, mode))
            ended = g[g[["final_x_0", "final_y_0", "final_x_1", "final_y_1"]].notna().all(axis=1)]
            same = (ended["final_x_0"] == ended["final_x_1"]) & (ended["final_y_0"] == ended["final_y_1"])
            fk, fn = int(same.sum()), len(ended)
            rk, rn = recorded_final_repeats(data, model, method)
            rec_hi = float(rate_interval(sum(rk), sum(rn), clusters=(rk, rn))[1]) if rn else None
            rows.append(
                {
                    "model": model,
                    "method": method,
                    "pairs": n,
                    "identical_step0": k,
                    "records_pairs": f"{k_rec} / {n_rec}",
                    "expected_share": f"{p_lo:.3f}-{p_hi:.3f}",
                    "band_lo": lo,
                    "band_hi": hi,
                    "step0_inside": lo <= k <= hi,
                    "final_identical": fk,
                    "final_pairs": fn,
                    "recorded_final_identical": sum(rk),
                    "recorded_final_pairs": sum(rn),
                    "final_not_more_frequent": None if rec_hi is None else (fk / fn if fn else 0.0) <= rec_hi,
                }
            )
    return pd.DataFrame(rows)
