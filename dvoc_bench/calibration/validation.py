"""Out-of-sample validation of the profiles: the authors' sweeps simulated through the real
harness (:func:`dvoc_bench.runner.sweep.run_sweep`, ``protocol=paper``) and compared with their trial
outcomes, which the fit never reads.

- :func:`simulate`: one sweep in process, resumable, loaded back as frames;
- :func:`compare_trials`: simulated vs recorded per model x method, matched on task and start point, with
  bootstrap intervals of the differences; :func:`validation_table` formats it;
- :func:`validate`: the main benchmark and the predict-mode ablation with the profiles of a ``conf/model``
  folder, run directories named by a hash of the profiles.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dvoc_bench.analysis.honest import wilson
from dvoc_bench.analysis.schema import Runs
from dvoc_bench.calibration.extract import (
    CALIBRATED_MODELS,
    CalibrationData,
    recorded_name,
    recorded_trials,
    sim_name,
)


def simulate(
    overrides: Sequence[str], run_dir: Path | str, *, models_dir: Path | str | None = None, text: bool = False
) -> Runs:
    """Run a sweep in process through the real harness (plan -> methods -> simulator -> store) and load it.

    ``run_dir`` is resumed: trials already there are not run again (same profiles, same plan = same keys).
    ``models_dir`` points the sweep at another ``conf/model`` folder (e.g. freshly fitted profiles); ``text``
    loads the prompts and replies too (:func:`~dvoc_bench.analysis.loaders.load_runs`).
    """
    from dvoc_bench.analysis.loaders import load_runs
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    ov = list(overrides) + ["run.quiet=true"]
    if models_dir is not None:
        ov.append(f"paths.models={Path(models_dir).resolve()}")
    setup = quick_setup(ov)
    if not all(m.kind == "simulator" for m in setup.models):
        raise ValueError("simulate() runs simulated profiles only (offline)")
    run_sweep(setup, run_dir)
    return load_runs(run_dir, text=text)


def paper_overrides(
    models: Sequence[str],
    tasks: Sequence[str],
    *,
    repeats: int = 3,
    experiment: str = "paper_main",
    seed: int = 0,
) -> list[str]:
    """Overrides for the authors' sweep under the paper protocol with the given simulated profiles."""
    return [
        f"experiment={experiment}",
        f"models=[{','.join(models)}]",
        f"tasks=[{','.join(tasks)}]",
        f"repeats={repeats}",
        f"seed={seed}",
    ]


def _cell_keys(df: pd.DataFrame) -> pd.Series:
    """Matching cell of a trial: DVOC by task and start point, one-shot by task (it ignores the start)."""
    start = df["start_index"].astype("Int64").astype(str)
    return df["task"].astype(str) + "|" + np.where(df["method"] == "dvoc", start, "-")


def compare_trials(
    recorded: pd.DataFrame,
    simulated: pd.DataFrame,
    *,
    by: Sequence[str] = ("model", "method"),
    rule: str = "hit_radius",
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Simulated vs recorded per group, matched on cells (task, and start point for DVOC).

    For each recorded valid trial the simulated value is the mean over the simulated trials of its cell,
    so task and start-point mixes are the authors'. Differences (simulated - recorded) of the success rate
    (``rule``; percentage points), mean final distance (px) and mean iterations carry 95 % intervals from
    a two-level bootstrap (recorded trials resampled; simulated trials resampled within each cell).
    ``sim_rate_all`` is the unmatched simulated rate over the whole simulated grid (Wilson interval).
    """
    rec = recorded[recorded["valid"].astype(bool)].copy()
    sim = simulated[simulated["status"] == "ok"].copy()
    sim["model"] = sim["model"].map(recorded_name)
    for df in (rec, sim):
        df["_cell"] = _cell_keys(df)
        df["_y"] = df[rule].astype(float)
        df["_d"] = df["final_dist_px"].astype(float)
        df["_i"] = df["iterations"].astype(float)
    rng = np.random.default_rng(seed)
    rows = []
    for key, rg in rec.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        mask = np.ones(len(sim), dtype=bool)
        for col, val in zip(by, key, strict=True):
            mask &= (sim[col] == val).to_numpy()
        sg = sim[mask]
        cells = {c: g[["_y", "_d", "_i"]].to_numpy(float) for c, g in sg.groupby("_cell")}
        have = rg["_cell"].isin(list(cells))
        rg = rg[have]
        if len(rg) == 0:
            continue
        rec_vals = rg[["_y", "_d", "_i"]].to_numpy(float)
        cell_of = rg["_cell"].to_numpy()
        sim_means = np.array([cells[c].mean(axis=0) for c in cell_of])
        diffs = []
        for _ in range(n_boot):
            idx = rng.integers(0, len(rg), len(rg))
            s_vals = []
            for j in idx:
                arr = cells[cell_of[j]]
                s_vals.append(arr[rng.integers(0, len(arr), len(arr))].mean(axis=0))
            diffs.append(np.mean(s_vals, axis=0) - rec_vals[idx].mean(axis=0))
        d = np.asarray(diffs)
        lo, hi = np.nanquantile(d, 0.025, axis=0), np.nanquantile(d, 0.975, axis=0)
        k = int(rg["_y"].sum())
        rlo, rhi = wilson(k, len(rg))
        ks, ns = int(sg["_y"].sum()), len(sg)
        slo, shi = wilson(ks, ns)
        rec_m, sim_m = rec_vals.mean(axis=0), sim_means.mean(axis=0)
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "n_rec": len(rg),
                "n_sim": int(sum(len(cells[c]) for c in set(cell_of))),
                "rec_rate": rec_m[0],
                "rec_rate_lo": rlo,
                "rec_rate_hi": rhi,
                "sim_rate": sim_m[0],
                "diff_pp": 100 * (sim_m[0] - rec_m[0]),
                "diff_pp_lo": 100 * lo[0],
                "diff_pp_hi": 100 * hi[0],
                "sim_rate_all": ks / ns if ns else math.nan,
                "sim_rate_all_lo": slo,
                "sim_rate_all_hi": shi,
                "rec_dist": rec_m[1],
                "sim_dist": sim_m[1],
                "diff_dist": sim_m[1] - rec_m[1],
                "diff_dist_lo": lo[1],
                "diff_dist_hi": hi[1],
                "rec_iters": rec_m[2],
                "sim_iters": sim_m[2],
                "diff_iters": sim_m[2] - rec_m[2],
                "diff_iters_lo": lo[2],
                "diff_iters_hi": hi[2],
                "rule": rule,
            }
        )
    out = pd.DataFrame(rows)
    if len(out):
        out["rate_interval_covers_0"] = (out["diff_pp_lo"] <= 0) & (out["diff_pp_hi"] >= 0)
    return out


def validation_table(cmp: pd.DataFrame) -> pd.DataFrame:
    """:func:`compare_trials` formatted for reading: rates in %, differences with their intervals."""

    def pct(v: float) -> str:
        return "-" if not math.isfinite(v) else f"{100 * v:.0f}%"

    def iv(v: float, lo: float, hi: float, nd: int = 1) -> str:
        return f"{v:+.{nd}f} [{lo:+.{nd}f}, {hi:+.{nd}f}]"

    keys = [c for c in cmp.columns if c in ("model", "method", "scene_kind", "predict", "task")]
    rows = []
    for r in cmp.to_dict("records"):
        rows.append(
            {
                **{k: r[k] for k in keys},
                "n rec / sim": f"{r['n_rec']} / {r['n_sim']}",
                "success rec": f"{pct(r['rec_rate'])} [{pct(r['rec_rate_lo'])}, {pct(r['rec_rate_hi'])}]",
                "success sim": pct(r["sim_rate"]),
                "diff pp [95% CI]": iv(r["diff_pp"], r["diff_pp_lo"], r["diff_pp_hi"], 0),
                "dist rec / sim px": f"{r['rec_dist']:.1f} / {r['sim_dist']:.1f}",
                "diff px [95% CI]": iv(r["diff_dist"], r["diff_dist_lo"], r["diff_dist_hi"]),
                "iters rec / sim": f"{r['rec_iters']:.2f} / {r['sim_iters']:.2f}",
                "diff iters [95% CI]": iv(r["diff_iters"], r["diff_iters_lo"], r["diff_iters_hi"], 2),
            }
        )
    return pd.DataFrame(rows)


def profiles_digest(models_dir: Path | str, names: Sequence[str]) -> str:
    """Short hash of the profiles' ``sim:`` blocks (names a validation run directory, so a changed
    behaviour re-runs while comments and the ``fit:`` block do not)."""
    import yaml

    h = hashlib.sha256()
    for n in sorted(names):
        doc = yaml.safe_load((Path(models_dir) / f"{n}.yaml").read_text(encoding="utf-8"))
        h.update(n.encode())
        h.update(json.dumps(doc.get("sim"), sort_keys=True, default=str).encode())
    return h.hexdigest()[:12]


SYNTHETIC_TASKS = ("S1", "S2", "S3", "S4", "S5", "S6")
WEB_TASKS = ("W1", "W2", "W3", "W4", "W5")


def web_available() -> tuple[bool, str]:
    """Whether our web scenes W1-W5 render here (a Chromium is needed); the reason when not."""
    try:
        from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

        reg = SceneRegistry(default_scenes_dir())
        try:
            reg.snapshot("W1")
        finally:
            reg.close()
    except Exception as e:  # any failure to render means: validate on S1-S6 only, and say so
        return False, f"{type(e).__name__}: {e}"[:300]
    return True, "ok"


@dataclass
class Validation:
    """Trial-level validation (out of sample): simulated sweeps vs the authors' records."""

    main: pd.DataFrame
    """:func:`compare_trials` of the main benchmark per model x method x scene kind (``all`` = pooled)."""
    predict: pd.DataFrame | None
    """The same for the predict-mode ablation per predict mode (``None`` without its records)."""
    run_dirs: dict[str, str]
    """Simulated run directories (resumable)."""
    tasks: list[str]
    """Tasks simulated."""
    note: str
    """What was and was not validated, and why."""


def instance_profiles(models_dir: Path | str, names: Sequence[str], instance: int, out_dir: Path) -> Path:
    """A models folder holding ``names`` with ``sim.instance = instance`` (another draw of the same
    model); instance 0 is ``models_dir`` itself."""
    import yaml

    if instance == 0:
        return Path(models_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for n in names:
        doc = yaml.safe_load((Path(models_dir) / f"{n}.yaml").read_text(encoding="utf-8"))
        doc["sim"]["instance"] = int(instance)
        (out_dir / f"{n}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out_dir


def validate(
    data: CalibrationData,
    run_root: Path | str,
    *,
    models_dir: Path | str | None = None,
    models: Sequence[str] = CALIBRATED_MODELS,
    repeats: int = 3,
    instances: int = 1,
    web: bool | None = None,
    seed: int = 0,
    n_boot: int = 2000,
) -> Validation:
    """Simulate the authors' main sweep (paper protocol, their tasks, five start points, ``repeats``) and the
    predict-mode ablation with the profiles in ``models_dir`` (default ``conf/model``), and compare with the
    records. ``instances`` > 1 pools that many simulated instances of each model (``sim.instance``): a
    consistent model shares its situation draws across repeats, so one instance understates the spread.
    Run directories under ``run_root`` are named by a hash of the profiles and the plan, so a second call
    reuses finished trials."""
    from dvoc_bench.models.config import default_conf_dir

    mdir = Path(models_dir) if models_dir is not None else default_conf_dir() / "model"
    names = [sim_name(m) for m in models]
    notes = []
    if web is None:
        web, why = web_available()
        if not web:
            notes.append(f"web scenes unavailable ({why}): validated on S1-S6 only")
    tasks = list(SYNTHETIC_TASKS) + (list(WEB_TASKS) if web else [])
    if web:
        notes.append(
            "W1-W5 are our own pages, not the authors' (same ids, kinds of task and 1280x720 canvas)"
        )
    tag = profiles_digest(mdir, names)
    root = Path(run_root)
    run_dirs: dict[str, str] = {}
    main_parts, pred_parts = [], []
    gem = "gemini-3.1-flash-lite"
    for k in range(max(1, int(instances))):
        kdir = instance_profiles(mdir, names, k, root / f"profiles-{tag}-i{k}")
        sfx = "" if k == 0 else f"-i{k}"
        main_dir = root / f"paper_main-{tag}-{'-'.join(tasks)}-r{repeats}-s{seed}{sfx}"
        ov = paper_overrides(names, tasks, repeats=repeats, seed=seed)
        main_parts.append(simulate(ov, main_dir, models_dir=kdir).trials)
        run_dirs[f"main{sfx}"] = str(main_dir)
        if data.predict is not None and gem in models:
            pdir = root / f"ablation_predict-{tag}-r{repeats}-s{seed}{sfx}"
            ovp = paper_overrides(
                [sim_name(gem)], SYNTHETIC_TASKS, repeats=repeats, experiment="ablation_predict", seed=seed
            )
            pred_parts.append(simulate(ovp, pdir, models_dir=kdir).trials)
            run_dirs[f"predict{sfx}"] = str(pdir)
    sim_main = pd.concat(main_parts, ignore_index=True)
    rec = recorded_trials(data, models)
    rec = rec[rec["task"].isin(tasks)]
    pooled = compare_trials(rec, sim_main, by=("model", "method"), n_boot=n_boot, seed=seed)
    pooled.insert(2, "scene_kind", "all")
    kinds = compare_trials(rec, sim_main, by=("model", "method", "scene_kind"), n_boot=n_boot, seed=seed)
    main = pd.concat([kinds, pooled], ignore_index=True)
    order = {m: i for i, m in enumerate(models)}
    main = main.sort_values(
        ["model", "method", "scene_kind"], key=lambda c: c.map(order) if c.name == "model" else c
    ).reset_index(drop=True)
    predict = None
    if pred_parts:
        rec_p = data.predict.trials if data.predict is not None else None
        assert rec_p is not None
        rec_p = rec_p[rec_p["model"] == gem]
        sim_p = pd.concat(pred_parts, ignore_index=True)
        predict = compare_trials(rec_p, sim_p, by=("model", "predict"), n_boot=n_boot, seed=seed)
    if instances > 1:
        notes.append(f"{instances} simulated instances per model pooled")
    notes.append(
        "fit on step-level records only; trial outcomes are out of sample. Success = hit_radius "
        "(d < max(w/2, h/2, 30)) for both sides; records: valid trials only (errors excluded, as in the "
        "paper)"
    )
    return Validation(main=main, predict=predict, run_dirs=run_dirs, tasks=tasks, note="; ".join(notes))


def default_calibration_runs() -> Path:
    """Where validation sweeps go: ``$DVOC_CALIBRATION_RUNS`` (a relative one read from where the command
    was typed), else ``runs/calibration`` of the repository."""
    import os

    from dvoc_bench.analysis.loaders import user_path

    env = os.environ.get("DVOC_CALIBRATION_RUNS")
    return user_path(env) if env else Path(__file__).resolve().parents[2] / "runs" / "calibration"
