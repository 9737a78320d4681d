"""A validation that can fail: for each model and method under ``protocols=[paper]`` on
S1-S6 (the authors' radius rule), is the recorded success count inside the simulator's 95 % *predictive*
interval for the recorded number of trials?

The predictive distribution is drawn from many simulated trials of the same design: every recorded trial
gets a simulated trial of its cell (task, and start point for DVOC); the recorded trials of one cell (the
authors' repeats of an identical first input) take distinct repeats of one simulated *instance* (another
draw of the same model, ``sim.instance``), so the correlation of repeats on identical input is carried over
rather than assumed away. The count's 2.5 and 97.5 % quantiles over ``n_draw`` such designs are the
interval. The published ablation counts (Tables 5.1-5.3, as printed) are checked the same way over the
paper's cells. Nothing here is fitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dvoc_bench.calibration.extract import (
    CALIBRATED_MODELS,
    CalibrationData,
    recorded_name,
    recorded_trials,
    sim_name,
)
from dvoc_bench.calibration.validation import (
    SYNTHETIC_TASKS,
    _cell_keys,
    instance_profiles,
    paper_overrides,
    profiles_digest,
    simulate,
)

__all__ = [
    "PUBLISHED",
    "Published",
    "check_published",
    "check_recorded",
    "predictive_counts",
    "simulate_instances",
]


@dataclass(frozen=True)
class Published:
    """A success count the paper publishes for Gemini 3.1 FL under ``protocol=paper`` on S1-S6 (hit radius;
    the authors' ablation files)."""

    table: str
    """The paper's table."""
    experiment: str
    """Our preset that runs its design."""
    knob: str
    """The trial column that holds the condition."""
    condition: str
    """Its value."""
    k: int
    """Published successes."""
    n: int
    """Published trials."""
    tasks: tuple[str, ...] = SYNTHETIC_TASKS
    """Tasks the trials came from (Table 5.2's crosshair-only has no S6)."""
    in_sample: bool = False
    """Whether any simulator parameter was set from this count (then it is no validation)."""


PUBLISHED: tuple[Published, ...] = (
    Published("5.1", "ablation_predict", "predict", "relative", 25, 30),
    Published("5.1", "ablation_predict", "predict", "absolute", 5, 30),
    Published("5.2", "ablation_overlay", "overlay", "none", 6, 17, in_sample=True),
    Published(
        "5.2", "ablation_overlay", "overlay", "crosshair", 12, 12, tasks=SYNTHETIC_TASKS[:5], in_sample=True
    ),
    Published("5.2", "ablation_overlay", "overlay", "full", 14, 17, in_sample=True),
    Published("5.3", "ablation_alpha", "alpha", "decay", 26, 30),
    Published("5.3", "ablation_alpha", "alpha", "constant", 29, 30),
    Published("5.3", "ablation_alpha", "alpha", "undamped", 29, 30),
)
"""The paper's ablation counts (Gemini 3.1 FL). None was used by the fit; Table 5.2 constrained the
hand-set perception parameters (:mod:`dvoc_bench.calibration.overlay`), so it is in sample."""


def simulate_instances(
    experiment: str,
    models: Sequence[str],
    tasks: Sequence[str],
    run_root: Path | str,
    *,
    repeats: int,
    instances: int,
    models_dir: Path | str | None = None,
    seed: int = 0,
    extra: Sequence[str] = (),
) -> pd.DataFrame:
    """``instances`` simulated instances of the profiles (``sim.instance`` = 0..), each running the preset
    with ``repeats`` repeats; the trials of all of them with an ``instance`` column. Run directories under
    ``run_root`` are named by the profiles' digest (resumable)."""
    from dvoc_bench.models.config import default_conf_dir

    mdir = Path(models_dir) if models_dir is not None else default_conf_dir() / "model"
    names = [sim_name(m) if not m.startswith("sim-") else m for m in models]
    tag = profiles_digest(mdir, names)
    root = Path(run_root)
    parts = []
    for k in range(instances):
        kdir = instance_profiles(mdir, names, k, root / f"profiles-{tag}-i{k}")
        ov = paper_overrides(names, tasks, repeats=repeats, experiment=experiment, seed=seed) + list(extra)
        name = (
            f"{experiment}-{tag}-{'-'.join(tasks)}-r{repeats}-s{seed}-{abs(hash(tuple(extra))) % 10**8}-i{k}"
        )
        t = simulate(ov, root / name, models_dir=kdir).trials
        t = t[t["status"] == "ok"].copy()
        t["instance"] = k
        parts.append(t)
    out = pd.concat(parts, ignore_index=True)
    out["model"] = out["model"].map(recorded_name)
    out["_cell"] = _cell_keys(out)
    return out


def _pools(sim: pd.DataFrame, rule: str) -> dict[str, list[np.ndarray]]:
    """Cell -> one outcome array per simulated instance, each in trial-key order: the rows of
    ``trials.jsonl`` follow the asynchronous order trials finished in, and a draw by row position would
    make the interval depend on it (two runs with identical outcomes gave different intervals)."""
    pools: dict[str, list[np.ndarray]] = {}
    order = sim.sort_values(["_cell", "instance", "trial_key"], kind="stable")
    for (cell, _), g in order.groupby(["_cell", "instance"], sort=True):
        pools.setdefault(str(cell), []).append(g[rule].astype(float).to_numpy())
    return pools


def predictive_counts(
    sim: pd.DataFrame,
    cells: Sequence[str] | Mapping[str, int],
    *,
    rule: str = "hit_radius",
    n_draw: int = 2000,
    seed: int = 0,
    choose: int | None = None,
) -> np.ndarray:
    """Simulated success counts of ``n_draw`` designs. ``cells``: the recorded trials' cells (a list, one
    per trial) or ``{cell: trials}``; with ``choose`` each design instead takes ``choose`` distinct cells at
    random, one trial each (a published count whose cells are unknown)."""
    pools = _pools(sim, rule)
    want = dict(pd.Series(list(cells)).value_counts()) if not isinstance(cells, Mapping) else dict(cells)
    missing = [c for c in want if c not in pools]
    if missing:
        raise ValueError(f"no simulated trials for cells {missing[:5]}")
    rng = np.random.default_rng(seed)
    keys = sorted(want)
    counts = np.empty(n_draw)
    for d in range(n_draw):
        if choose is not None:
            picked = rng.choice(len(keys), size=choose, replace=False)
            design = {keys[i]: 1 for i in picked}
        else:
            design = want
        total = 0.0
        for cell, m in sorted(design.items()):  # not the input's order: a pure function of its content
            inst = pools[cell][int(rng.integers(len(pools[cell])))]
            total += rng.choice(inst, size=m, replace=m > len(inst)).sum()
        counts[d] = total
    return counts


def _row(k: int, n: int, counts: np.ndarray) -> dict[str, float | int | bool]:
    lo, hi = np.quantile(counts, [0.025, 0.975])
    return {
        "k": k,
        "n": n,
        "sim_mean": float(counts.mean()),
        "lo": int(np.floor(lo)),
        "hi": int(np.ceil(hi)),
        "inside": bool(np.floor(lo) <= k <= np.ceil(hi)),
    }


def check_recorded(
    data: CalibrationData,
    sim: pd.DataFrame,
    *,
    models: Sequence[str] = CALIBRATED_MODELS,
    tasks: Sequence[str] = SYNTHETIC_TASKS,
    rule: str = "hit_radius",
    n_draw: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per model x method: the recorded count (valid trials on ``tasks``) and the simulator's 95 % predictive
    interval for the recorded number of trials (column ``inside``)."""
    rec = recorded_trials(data, models)
    rec = rec[rec["task"].isin(list(tasks)) & rec["valid"].astype(bool)].copy()
    rec["_cell"] = _cell_keys(rec)
    rows = []
    for (model, method), g in rec.groupby(["model", "method"], sort=True):
        s = sim[(sim["model"] == model) & (sim["method"] == method)]
        if s.empty:
            continue
        counts = predictive_counts(s, list(g["_cell"]), rule=rule, n_draw=n_draw, seed=seed)
        rows.append({"model": model, "method": method, **_row(int(g[rule].sum()), len(g), counts)})
    return pd.DataFrame(rows)


def check_published(
    sims: Mapping[str, pd.DataFrame],
    *,
    published: Sequence[Published] = PUBLISHED,
    rule: str = "hit_radius",
    n_draw: int = 2000,
    seed: int = 0,
    in_sample: Sequence[str] = (),
) -> pd.DataFrame:
    """The paper's ablation counts against the predictive intervals of the simulated presets (``sims``:
    experiment -> :func:`simulate_instances` trials). ``in_sample`` names the tables some parameter was set
    from (labelled so in the result)."""
    rows = []
    for p in published:
        sim = sims.get(p.experiment)
        if sim is None:
            continue
        s = sim[(sim[p.knob].astype(str) == p.condition) & sim["task"].isin(list(p.tasks))]
        cells = sorted(set(s["_cell"]))
        choose = p.n if p.n != len(cells) else None
        counts = predictive_counts(
            s, {c: 1 for c in cells}, rule=rule, n_draw=n_draw, seed=seed, choose=choose
        )
        rows.append(
            {
                "table": p.table,
                "condition": p.condition,
                **_row(p.k, p.n, counts),
                "sample": "in-sample" if (p.in_sample or p.table in in_sample) else "out-of-sample",
            }
        )
    return pd.DataFrame(rows)
