"""Leave-one-out cross-validation of the simulator's fit against two naive baselines.

- :func:`load_all_records`: the authors' step- and trial-level records, main benchmark (the per-trial tree)
  and every ablation file, in one :class:`~dvoc_bench.calibration.extract.CalibrationData` (``cv_source``:
  ``main`` / ``predict`` / ``overlay`` / ``alpha``);
- :func:`units`: what is held out, one at a time: each ablation arm, each main-benchmark (model, method)
  cell, each scene S1-S6;
- :func:`cross_validate`: for each unit, the fit sees the training records only (the unit's trials and
  their steps removed), the simulator runs the unit's design with the refitted profiles, and the recorded
  count is scored against the simulated predictive distribution and against two baselines fitted on the
  same training trials: a constant success rate per (model, method), and a constant rate per scene
  (Beta(1, 1) posteriors, beta-binomial predictive);
- :func:`cv_table`: the table printed by ``python -m dvoc_bench.calibrate --cross-validate``;
  :func:`verdict` claims agreement only where the simulated interval has width (:func:`interval_kind`: a
  point or near-point interval tests the frame conversion, not the noise) and the simulator beats the
  baselines fitted on the held-out group's own kind (:func:`pooled_baselines`: not a pooled fallback).

Only the models whose records a unit holds out are refitted; the others keep the fit on every record.
Success is the authors' radius rule (``hit_radius``) on valid trials of S1-S6 on both sides.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.schema import Runs
from dvoc_bench.calibration.extract import (
    CALIBRATED_MODELS,
    CalibrationData,
    click_table,
    input_digests,
    load_calibration_data,
    repeat_pairs,
    replay_truths,
    round_to,
    sim_name,
    verify_table,
)
from dvoc_bench.calibration.validation import SYNTHETIC_TASKS, _cell_keys

ABLATIONS = {"predict": "predict", "overlay": "overlay", "alpha": "alpha"}
"""Ablation file role -> the trial column holding its arm."""
RULE = "hit_radius"
ALPHA_P = 0.05
"""A unit whose two-sided predictive p-value is below this is not reproduced."""


# ---------------------------------------------------------------------------------------------- records


def load_all_records(upstream: Path | str) -> CalibrationData:
    """Every step- and trial-level record of the authors: the per-trial tree (main benchmark) and the three
    ablation files, each trial tagged with ``cv_source``."""
    from dvoc_bench.analysis.upstream import discover_upstream, load_upstream

    main = load_calibration_data(upstream)
    found = discover_upstream(upstream)
    trials = [main.runs.trials.assign(cv_source="main")]
    steps = [main.runs.steps]
    sources = dict(main.sources)
    for role in ABLATIONS:
        if role not in found:
            continue
        r = load_upstream(found[role], text=True)
        s = r.steps.copy()
        s["input_sha"] = input_digests(s)
        steps.append(s.drop(columns=[c for c in ("prompt", "reply_text", "reply_tool_calls") if c in s]))
        trials.append(r.trials.assign(cv_source=role))
        sources[role] = str(found[role])
    t = pd.concat(trials, ignore_index=True)
    s = pd.concat(steps, ignore_index=True).sort_values(["trial_key", "index"], kind="stable")
    if t["trial_key"].duplicated().any():
        raise ValueError("trial keys of the main benchmark and the ablations collide")
    runs = Runs(t.reset_index(drop=True), s.reset_index(drop=True), sorted(sources.values()))
    return CalibrationData(
        runs=runs, predict=main.predict, sources=sources, loaded_at=main.loaded_at, digest=main.digest
    )


def without(data: CalibrationData, keys: set[str]) -> CalibrationData:
    """``data`` with the trials ``keys`` and their steps removed."""
    t, s = data.runs.trials, data.runs.steps
    runs = Runs(
        t[~t["trial_key"].isin(keys)].reset_index(drop=True),
        s[~s["trial_key"].isin(keys)].reset_index(drop=True),
        list(data.runs.sources),
    )
    return CalibrationData(
        runs=runs, predict=None, sources=data.sources, loaded_at=data.loaded_at, digest=data.digest
    )


def borrow(train: CalibrationData, model: str, others: Sequence[str]) -> tuple[CalibrationData, list[str]]:
    """``train`` where ``model`` has no step of a kind left (``verify``: DVOC, ``click``: one-shot; its
    only cell of that method is held out) gets the other models' steps of that kind under its name: the
    held-out cell is then predicted from the other models, the one honest prediction left. Returns the
    kinds borrowed."""
    s = train.runs.steps
    mine = s[s["model"] == model]
    kinds = [k for k in ("verify", "click") if not (mine["kind"] == k).any()]
    if not kinds:
        return train, []
    lent = s[s["model"].isin([o for o in others if o != model]) & s["kind"].isin(kinds)].assign(model=model)
    runs = Runs(train.runs.trials, pd.concat([s, lent], ignore_index=True), list(train.runs.sources))
    return CalibrationData(runs, None, train.sources, train.loaded_at, train.digest), kinds


# ------------------------------------------------------------------------------------------------ units


@dataclass(frozen=True)
class Unit:
    """One held-out condition."""

    kind: str
    """``ablation``, ``cell`` (a main-benchmark model x method) or ``scene``."""
    name: str
    """``alpha=constant``, ``gemma-4-26b/dvoc``, ``S2``."""
    held_out: frozenset[str]
    """Trial keys removed from the training records (every record of the condition, any task)."""
    scored: tuple[str, ...]
    """Trial keys whose count is predicted (valid trials on S1-S6)."""
    experiment: str
    """The preset that runs its design."""
    models: tuple[str, ...]
    """Models whose records it holds out (refitted)."""
    extra: tuple[str, ...] = ()
    """Overrides narrowing the preset to the unit (e.g. ``alphas=[constant]``)."""


def _valid_synthetic(t: pd.DataFrame) -> pd.Series:
    return t["valid"].astype(bool) & t["task"].isin(list(SYNTHETIC_TASKS))


def units(data: CalibrationData, models: Sequence[str] = CALIBRATED_MODELS) -> list[Unit]:
    """Every ablation arm, every main-benchmark (model, method) cell of ``models``, every scene S1-S6."""
    t = data.runs.trials
    t = t[t["model"].isin(list(models))]
    ok = _valid_synthetic(t)
    out: list[Unit] = []
    for role, col in ABLATIONS.items():
        a = t[t["cv_source"] == role]
        for arm in sorted(a[col].astype(str).unique()):
            g = a[a[col].astype(str) == arm]
            out.append(
                Unit(
                    "ablation",
                    f"{col}={arm}",
                    frozenset(g["trial_key"]),
                    tuple(sorted(g[ok.loc[g.index]]["trial_key"])),
                    f"ablation_{role}",
                    tuple(sorted(set(g["model"]))),
                    (f"{col}s=[{arm}]" if col != "predict" else f"predict_modes=[{arm}]",),
                )
            )
    main = t[(t["cv_source"] == "main") & t["method"].isin(["dvoc", "oneshot"])]
    for (model, method), g in main.groupby(["model", "method"], sort=True):
        out.append(
            Unit(
                "cell",
                f"{model}/{method}",
                frozenset(g["trial_key"]),
                tuple(sorted(g[ok.loc[g.index]]["trial_key"])),
                "paper_main",
                (str(model),),
            )
        )
    for task in SYNTHETIC_TASKS:
        g = t[t["task"] == task]
        scored = main[(main["task"] == task) & ok.loc[main.index]]
        out.append(
            Unit(
                "scene",
                task,
                frozenset(g["trial_key"]),
                tuple(sorted(scored["trial_key"])),
                "paper_main",
                tuple(sorted(set(g["model"]))),
                (f"tasks=[{task}]",),
            )
        )
    return out


# --------------------------------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class FitSettings:
    """How a fold refits (the profile's own fit with fewer Monte Carlo replays: the CV needs the ``sim:``
    block, not the goodness-of-fit replays)."""

    refine_rounds: int = 1
    """Rounds of the zero / axis-drop refinement (the profiles: 3)."""
    replay_reps: int = 1
    """Simulated draws per recorded step in the refinement and the chance-repeat replay (the profiles: 4)."""
    seed: int = 0


def fit_profile(train: CalibrationData, model: str, settings: FitSettings = FitSettings()) -> str:
    """The profile text (``sim:`` block) of ``model`` fitted on ``train``: the steps of
    :func:`~dvoc_bench.calibration.profile.calibrate_model` that set the ``sim:`` block (the goodness-of-fit
    replays are left out)."""
    import yaml

    from dvoc_bench.calibration.fit import fit_consistency, fit_model
    from dvoc_bench.calibration.profile import _clean, sim_block, with_perception
    from dvoc_bench.calibration.replay import refine_discrete, replay_clicks, replay_offsets

    fit = fit_model(train, model)
    steps = train.runs.steps
    vt = verify_table(steps, model)
    vt = vt[~vt["no_tool"]].reset_index(drop=True)
    ct = click_table(steps, model)
    truths = replay_truths(sorted(set(vt["task"]) | set(ct["task"])))
    block = sim_block(fit)
    s, reps = settings.seed, settings.replay_reps
    if settings.refine_rounds > 0:
        block, _ = refine_discrete(block, vt, truths, rounds=settings.refine_rounds, reps=reps, seed=s)
    fresh = {**block, "consistency": {"offset": 0.0, "point": 0.0}}
    chance_pairs = repeat_pairs(
        replay_offsets(fresh, vt, truths, seed=s + 3000, reps=reps),
        replay_clicks(fresh, ct, truths, seed=s + 4000, reps=reps),
    )
    chance = {m: k / n if n else 0.0 for m, (k, n) in chance_pairs.items()}
    block["consistency"] = {k: round_to(v) for k, v in fit_consistency(fit.pairs, chance).items()}
    top = {
        "name": sim_name(model),
        "kind": "simulator",
        "model_id": f"sim/{model}",
        "provider": "simulator",
        "api_base": None,
        "coord_frame": "norm1000",
        "description": f"cross-validation fold profile of {model}",
        "sim": with_perception(block),
    }
    return yaml.safe_dump(_clean(top), sort_keys=False, width=110)


FitFn = Callable[[CalibrationData, str], str]
"""(training records, model) -> profile text."""


# ------------------------------------------------------------------------------------------- scoring


def _betabinom_pmf(n: int, k: int, m: int) -> np.ndarray:
    """Predictive pmf of successes in ``n`` trials after ``k`` of ``m`` (Beta(1, 1) prior)."""
    a, b = 1.0 + k, 1.0 + m - k

    def lbeta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    logp = [
        math.lgamma(n + 1)
        - math.lgamma(x + 1)
        - math.lgamma(n - x + 1)
        + lbeta(x + a, n - x + b)
        - lbeta(a, b)
        for x in range(n + 1)
    ]
    return np.exp(np.array(logp))


def _convolve(pmfs: Sequence[np.ndarray]) -> np.ndarray:
    out = np.array([1.0])
    for p in pmfs:
        out = np.convolve(out, p)
    return out


def baseline_pmf(train: pd.DataFrame, test: pd.DataFrame, by: Sequence[str]) -> tuple[np.ndarray, str]:
    """Predictive pmf of the test count under a constant success rate per group ``by`` fitted on ``train``
    (valid S1-S6 trials); a group without training trials takes the pooled training rate (in the note)."""
    tr = train[_valid_synthetic(train)]
    k_all, m_all = int(tr[RULE].astype(bool).sum()), len(tr)
    pmfs, fallback = [], []
    rates = tr.groupby(list(by))[RULE].agg(["sum", "size"])
    for key, g in test.groupby(list(by), sort=True):
        key = key[0] if isinstance(key, tuple) and len(by) == 1 else key  # one column: a scalar index
        if key in rates.index:
            k, m = int(rates.loc[key, "sum"]), int(rates.loc[key, "size"])
        else:
            k, m = k_all, m_all
            fallback.append(str(key if not isinstance(key, tuple) else "/".join(map(str, key))))
        pmfs.append(_betabinom_pmf(len(g), k, m))
    note = f"pooled rate for {', '.join(fallback)}" if fallback else ""
    return _convolve(pmfs), note


def sim_pmf(counts: np.ndarray, n: int, smooth: float = 0.0) -> np.ndarray:
    """The simulated counts as a pmf on 0..n; ``smooth`` draws added to every count (the log score uses
    half a draw, so a count no draw hit has a finite score; interval and p-value use the raw draws)."""
    h = np.bincount(np.clip(np.rint(counts).astype(int), 0, n), minlength=n + 1).astype(float) + smooth
    return h / h.sum()


def sim_score(counts: np.ndarray, n: int, k: int) -> dict[str, float]:
    """:func:`score` of the simulated draws: interval and p-value from the draws, log score smoothed."""
    with np.errstate(divide="ignore"):
        raw = score(sim_pmf(counts, n), k)
    return {**raw, "log_score": float(math.log(sim_pmf(counts, n, 0.5)[k]))}


def score(pmf: np.ndarray, k: int) -> dict[str, float]:
    """95 % central interval, two-sided p-value (2 x the smaller tail, at most 1) and log score of ``k``."""
    cdf = np.cumsum(pmf)
    lo = int(np.searchsorted(cdf, 0.025))
    hi = int(np.searchsorted(cdf, 0.975))
    p = min(1.0, max(0.0, 2 * min(float(cdf[k]), float(1 - (cdf[k - 1] if k > 0 else 0.0)))))
    return {"lo": lo, "hi": min(hi, len(pmf) - 1), "p": p, "log_score": float(np.log(pmf[k]))}


# ------------------------------------------------------------------------------------------ the folds


@dataclass
class Fold:
    """One held-out unit's result."""

    unit: Unit
    n: int
    k: int
    sim: dict[str, float]
    by_method: dict[str, float]
    by_scene: dict[str, float]
    note: str
    fit_s: float
    sim_s: float
    refitted: tuple[str, ...] = field(default_factory=tuple)


def _write_profiles(texts: dict[str, str], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for model, text in texts.items():
        (folder / f"{sim_name(model)}.yaml").write_text(text, encoding="utf-8")
    return folder


def _scored_cells(rec: pd.DataFrame, kind: str) -> pd.Series:
    cell = _cell_keys(rec)
    return (
        rec["model"].astype(str) + "|" + rec["method"].astype(str) + "|" + cell if kind == "scene" else cell
    )


def simulate_unit(
    unit: Unit,
    rec: pd.DataFrame,
    models_dir: Path,
    run_root: Path,
    *,
    instances: int,
    repeats: int,
    n_draw: int,
    seed: int,
) -> np.ndarray:
    """Simulated counts of the unit's recorded design with the profiles in ``models_dir``."""
    from dvoc_bench.calibration.predictive import predictive_counts, simulate_instances

    models = sorted(set(rec["model"]))
    tasks = sorted(set(rec["task"]))
    sim = simulate_instances(
        unit.experiment,
        models,
        tasks,
        run_root,
        repeats=repeats,
        instances=instances,
        models_dir=models_dir,
        seed=seed,
        extra=[e for e in unit.extra if not e.startswith("tasks=")],
    )
    if unit.kind == "cell":
        sim = sim[sim["method"] == rec["method"].iloc[0]]
    elif unit.kind == "ablation":
        col, arm = unit.name.split("=", 1)
        sim = sim[sim[col].astype(str) == arm]
    sim = sim.assign(_cell=_scored_cells(sim, unit.kind))
    want = _scored_cells(rec, unit.kind)
    have = set(sim["_cell"])
    if not set(want) <= have:  # a start point the preset does not run: match on the task alone
        sim = sim.assign(_cell=sim["_cell"].str.rsplit("|", n=1).str[0] + "|*")
        want = want.str.rsplit("|", n=1).str[0] + "|*"
    return predictive_counts(sim, list(want), rule=RULE, n_draw=n_draw, seed=seed)


def cross_validate(
    data: CalibrationData,
    run_root: Path | str,
    *,
    models: Sequence[str] = CALIBRATED_MODELS,
    only: Sequence[str] | None = None,
    fit: FitFn | None = None,
    settings: FitSettings = FitSettings(),
    instances: int = 2,
    repeats: int = 3,
    n_draw: int = 2000,
    seed: int = 0,
    progress: Callable[[Fold], None] | None = None,
) -> tuple[list[Fold], float]:
    """Leave each unit out (``only``: unit names to run), refit the models it holds records of on the rest
    with ``fit`` (default :func:`fit_profile`), simulate its design and score its recorded count; the
    models a unit does not touch keep their fit on every record. Returns the folds and the seconds of the
    fit on every record."""
    fit = fit or (lambda train, m: fit_profile(train, m, settings))
    root = Path(run_root)
    t0 = time.perf_counter()
    full = {m: fit(data, m) for m in models}
    full_s = time.perf_counter() - t0
    trials = data.runs.trials
    folds = []
    for u in units(data, models):
        if only is not None and u.name not in only:
            continue
        train = without(data, set(u.held_out))
        t1 = time.perf_counter()
        texts = dict(full)
        refit = tuple(m for m in models if m in u.models)
        borrowed = []
        for m in refit:
            tm, kinds = borrow(train, m, CALIBRATED_MODELS)
            borrowed += [
                f"{m} {'DVOC' if k == 'verify' else 'one-shot'} steps from the other models" for k in kinds
            ]
            texts[m] = fit(tm, m)
        t2 = time.perf_counter()
        slug = u.name.replace("/", "_").replace("=", "_")
        mdir = _write_profiles(texts, root / "profiles" / slug)
        rec = trials[trials["trial_key"].isin(list(u.scored))].sort_values("trial_key")
        k, n = int(rec[RULE].astype(bool).sum()), len(rec)
        counts = simulate_unit(
            u, rec, mdir, root / "sim", instances=instances, repeats=repeats, n_draw=n_draw, seed=seed
        )
        pm, note_m = baseline_pmf(train.runs.trials, rec, ("model", "method"))
        ps, note_s = baseline_pmf(train.runs.trials, rec, ("task",))
        fold = Fold(
            unit=u,
            n=n,
            k=k,
            sim=sim_score(counts, n, k),
            by_method=score(pm, k),
            by_scene=score(ps, k),
            note="; ".join(
                x
                for x in (*borrowed, note_m and f"model/method: {note_m}", note_s and f"scene: {note_s}")
                if x
            ),
            fit_s=t2 - t1,
            sim_s=time.perf_counter() - t2,
            refitted=refit,
        )
        folds.append(fold)
        if progress is not None:
            progress(fold)
    return folds, full_s


def fold_records(folds: Sequence[Fold]) -> list[dict[str, Any]]:
    """The folds as plain numbers (what ``scene_validation.json`` stores and the README is rendered from)."""
    return [
        {
            "kind": f.unit.kind,
            "unit": f.unit.name,
            "k": f.k,
            "n": f.n,
            "sim": {k: round(v, 4) for k, v in f.sim.items()},
            "rate_model_method": {k: round(v, 4) for k, v in f.by_method.items()},
            "rate_scene": {k: round(v, 4) for k, v in f.by_scene.items()},
            "note": f.note,
            "pooled": [name for name, _, prefix in BASELINES if f"{prefix}: pooled rate for" in f.note],
        }
        for f in folds
    ]


NEAR_POINT_WIDTH = 2
"""A simulated 95 % interval at most this wide (``hi - lo``, in counts) is *near-point*; width 0 is a
*point* interval. Such a prediction is fixed by which trials can hit at all (0–1000 answers read as pixels
hit only a target near the top-left corner; a wide target is hit whatever the noise): it tests the frame
conversion and the target sizes, not the simulator's noise, and is never counted as agreement."""

BASELINES = (
    ("model/method rate", "rate_model_method", "model/method"),
    ("scene rate", "rate_scene", "scene"),
)
"""(name in the verdict, key in a fold record, prefix of its note)."""


def interval_kind(r: Mapping[str, Any]) -> str:
    """``point`` (zero width), ``near-point`` (width <= :data:`NEAR_POINT_WIDTH`) or ``""`` for a fold
    record's simulated interval."""
    width = int(r["sim"]["hi"]) - int(r["sim"]["lo"])
    return "point" if width == 0 else "near-point" if width <= NEAR_POINT_WIDTH else ""


def pooled_baselines(r: Mapping[str, Any]) -> list[str]:
    """The baselines of a fold record that were not fitted on the held-out group's own kind: a group with
    no training trials took the pooled rate (``pooled`` in the record, else read from its note)."""
    if "pooled" in r:
        return list(r["pooled"])
    note = str(r.get("note", ""))
    return [name for name, _, prefix in BASELINES if f"{prefix}: pooled rate for" in note]


def verdict(r: Mapping[str, Any]) -> str:
    """``agrees`` only when the recorded count is inside the simulated interval (p >= 0.05), that interval
    has width (not :func:`interval_kind` point / near-point) and the simulator's log score beats every
    baseline fitted on the held-out group's own kind (at least one; a baseline that fell back to the
    pooled rate is named and not counted); otherwise what fails (``r``: one of :func:`fold_records`)."""
    if r["sim"]["p"] < ALPHA_P:
        return "disagrees (p < 0.05)"
    kind = interval_kind(r)
    if kind:
        return f"no claim: {kind} interval (tests the frame conversion, not the noise)"
    pooled = pooled_baselines(r)
    own = [(name, key) for name, key, _ in BASELINES if name not in pooled]
    if not own:
        return "no claim: both baselines fell back to the pooled rate"
    lost = [name for name, key in own if r["sim"]["log_score"] <= r[key]["log_score"]]
    if lost:
        return f"no claim: not better than {' and '.join(lost)}"
    text = f"agrees (beats the {' and '.join(name for name, _ in own)}"
    return text + (f"; {pooled[0]} pooled, not counted)" if pooled else ")")


def cv_table(folds: Sequence[Fold] | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per held-out unit: recorded count, the simulator's and both baselines' 95 % predictive
    interval, p-value and log score (nats), and the verdict."""
    recs: list[Mapping[str, Any]] = [fold_records([f])[0] if isinstance(f, Fold) else f for f in folds]
    rows = []
    for r in recs:
        row: dict[str, Any] = {"unit": f"{r['kind']} {r['unit']}", "recorded": f"{r['k']}/{r['n']}"}
        for tag, key in (("sim", "sim"), ("rate m/m", "rate_model_method"), ("rate scene", "rate_scene")):
            s = r[key]
            row[f"{tag} 95%"] = f"[{int(s['lo'])}, {int(s['hi'])}]"
            row[f"{tag} p"] = f"{s['p']:.3f}"
            row[f"{tag} log"] = f"{s['log_score']:.2f}"
            if tag == "sim":
                row["sim interval"] = interval_kind(r) or "-"
        row["verdict"] = verdict(r)
        rows.append(row)
    return pd.DataFrame(rows)


def scene_pvalues(folds: Sequence[Fold]) -> dict[str, float]:
    """Scene -> the simulator's cross-validation p-value of its held-out fold."""
    return {f.unit.name: round(f.sim["p"], 4) for f in folds if f.unit.kind == "scene"}
