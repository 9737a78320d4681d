"""Repeats as samples, checked on whole sweeps (issue 16 item 2, "done when"): the paper sweep run with seed 0
and with seed 1 gives pairs of trials with an identical first input (model, method, task, start point,
repeat). Two figures per calibrated model and method:

- **step-0 replies**: how many pairs answered their identical first call identically, against the binomial
  95 % band of what the fitted repeat rate predicts: between ``c**2`` (both calls gave the modal answer, no
  chance agreement: a first step far from the target answers in a continuum) and ``c**2 + (1 - c**2) q``
  (plus the chance agreement of fresh draws on the records' inputs, many of them next to the target, where
  (0, 0) reports agree by chance); ``c`` fitted from the records' identical-input pairs as the calibration
  does, ``q`` = the profile's ``fit.repeat_chance``;
- **final points**: the share of pairs that ended at the identical point, against the records' share over
  pairs of recorded repeats of one model, method, task and start point (it must be no larger than the
  records' Wilson 95 % upper bound).

Every simulated figure is SIMULATED (the function returns the counts; callers label them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path

import pandas as pd
import yaml

from dvoc_bench.analysis.intervals import wilson
from dvoc_bench.calibration.extract import CalibrationData, recorded_trials, sim_name
from dvoc_bench.calibration.validation import SYNTHETIC_TASKS, paper_overrides, simulate

__all__ = [
    "MODES",
    "binomial_band",
    "recorded_final_repeats",
    "records_repeat_rate",
    "repeat_check",
    "step0_answer",
]

MODES = {"dvoc": "offset", "oneshot": "point"}
"""The consistency mode of each method's first call."""
ANSWER_KEYS = {"offset": ("dx", "dy"), "point": ("x", "y")}
"""The reply values two answers must share to count as identical (as the fit counts them)."""


def binomial_band(n: int, p: float, level: float = 0.95) -> tuple[int, int]:
    """Equal-tailed band of a Binomial(n, p) count: the smallest ``k`` whose CDF reaches ``(1 - level) / 2``
    and the smallest whose CDF reaches ``(1 + level) / 2`` (``(0, 0)`` at ``n = 0``)."""
    if n <= 0:
        return 0, 0
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    cdf, lo = 0.0, None
    for k in range(n + 1):
        cdf += math.comb(n, k) * p**k * (1 - p) ** (n - k)
        if lo is None and cdf >= lo_q - 1e-12:
            lo = k
        if cdf >= hi_q - 1e-12:
            return int(lo if lo is not None else k), k
    return int(lo if lo is not None else n), n


def step0_answer(values_raw: object, mode: str) -> tuple[float, ...] | None:
    """The first call's answer as compared by the fit (``None`` without a parsed answer)."""
    if not isinstance(values_raw, dict):
        return None
    try:
        return tuple(float(values_raw[k]) for k in ANSWER_KEYS[mode])
    except (KeyError, TypeError, ValueError):
        return None


def recorded_final_repeats(data: CalibrationData, model: str, method: str) -> tuple[int, int]:
    """``(identical final points, pairs)`` over pairs of the authors' valid repeats of one task and start
    point (S1-S6)."""
    rec = recorded_trials(data, [model])
    rec = rec[(rec["method"] == method) & rec["task"].isin(list(SYNTHETIC_TASKS)) & rec["valid"].astype(bool)]
    k = n = 0
    for _, g in rec.groupby(["task", "start_index"], dropna=False):
        pts = list(zip(g["final_x"].round(3), g["final_y"].round(3), strict=True))
        for a, b in combinations(pts, 2):
            n += 1
            k += int(a == b)
    return k, n


def records_repeat_rate(data: CalibrationData, model: str, mode: str, chance: float) -> float:
    """The per-call repeat rate the records give (:func:`~dvoc_bench.calibration.fit.fit_consistency` on
    the model's identical-input pairs, every model's when it has none), independent of the profile: a
    profile whose ``consistency`` was changed fails the check."""
    from dvoc_bench.calibration.extract import click_table, repeat_pairs, verify_table
    from dvoc_bench.calibration.fit import fit_consistency

    steps = data.runs.steps
    pairs = repeat_pairs(verify_table(steps, model), click_table(steps, model))
    if pairs[mode][1] == 0:
        pairs = repeat_pairs(verify_table(steps), click_table(steps))
    return fit_consistency({mode: pairs[mode]}, {mode: chance})[mode]


def _first_steps(run_dir: Path) -> pd.DataFrame:
    trials = pd.read_json(run_dir / "trials.jsonl", lines=True)
    steps = pd.read_json(run_dir / "steps.jsonl", lines=True)
    first = steps[steps["index"] == 0][["trial_key", "frame_sha", "prompt", "values_raw"]]
    t = trials[trials["status"] == "ok"]
    return t.merge(first, on="trial_key", how="left")


def _profile(models_dir: Path, model: str) -> dict:
    return yaml.safe_load((models_dir / f"{sim_name(model)}.yaml").read_text())


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
    the identical step-0 replies with the fitted repeat rate and the identical final points with the
    records (see the module docstring). One row per model x method."""
    root, models_dir = Path(root), Path(models_dir)
    runs = {}
    for seed in (0, 1):
        d = root / f"repeats-seed{seed}"
        simulate(
            paper_overrides([sim_name(m) for m in models], tasks, repeats=repeats, seed=seed),
            d,
            models_dir=models_dir,
        )
        runs[seed] = _first_steps(d)
    keys = ["model", "method", "task", "start_index", "rep"]
    pairs = runs[0].merge(runs[1], on=keys, suffixes=("_0", "_1"))
    rows = []
    for model in models:
        prof = _profile(models_dir, model)
        for method, mode in MODES.items():
            g = pairs[(pairs["model"] == sim_name(model)) & (pairs["method"] == method)]
            same_input = g[(g["frame_sha_0"] == g["frame_sha_1"]) & (g["prompt_0"] == g["prompt_1"])]
            a0 = same_input["values_raw_0"].map(lambda v, m=mode: step0_answer(v, m))
            a1 = same_input["values_raw_1"].map(lambda v, m=mode: step0_answer(v, m))
            n = int((a0.notna() & a1.notna()).sum())
            k = int(((a0 == a1) & a0.notna()).sum())
            q = float(prof.get("fit", {}).get("repeat_chance", {}).get(mode, 0.0))
            c = records_repeat_rate(data, model, mode, q)
            p_lo, p_hi = c * c, c * c + (1 - c * c) * q
            lo, hi = binomial_band(n, p_lo)[0], binomial_band(n, p_hi)[1]
            f0 = g["final_point_0"].map(json.dumps)
            f1 = g["final_point_1"].map(json.dumps)
            fk, fn = int((f0 == f1).sum()), len(g)
            rk, rn = recorded_final_repeats(data, model, method)
            rec_hi = float(wilson(rk, rn)[1]) if rn else 1.0
            rows.append(
                {
                    "model": model,
                    "method": method,
                    "pairs": n,
                    "identical_step0": k,
                    "repeat_rate": round(c, 3),
                    "expected_share": f"{p_lo:.3f}-{p_hi:.3f}",
                    "band_lo": lo,
                    "band_hi": hi,
                    "step0_inside": lo <= k <= hi,
                    "final_identical": fk,
                    "final_pairs": fn,
                    "recorded_final_identical": rk,
                    "recorded_final_pairs": rn,
                    "final_not_more_frequent": (fk / fn if fn else 0.0) <= rec_hi,
                }
            )
    return pd.DataFrame(rows)
