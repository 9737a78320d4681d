"""Figures stay readable from 1 to 50 tasks and 1 to 20 models, measured with matplotlib's own extents.

Synthetic trials / steps / audit frames of the extreme sizes go through every chart of the report; after
a draw with the Agg renderer, no two tick labels of an axis overlap, the title, legend, tick and axis
labels lie inside the figure, the title does not run into the legend or the axes, and a legend covers no
bar (it sits outside the axes).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle

from dvoc_bench.analysis import honest, plots
from tests.support import problems

MODEL_NAMES = ["sim-gemini-3.1-flash-lite", "gemma-4-26b-via-or", "claude-sonnet-4-6", "sim-ideal"]


def models(n: int) -> list[str]:
    return [f"{MODEL_NAMES[i % 4]}-{i:02d}" if n > 4 else MODEL_NAMES[i] for i in range(n)]


def tasks(n: int) -> list[str]:
    # real ids are short (S1, W4); a bring-your-own task is named after its file
    return [f"S{i + 1}" if i < 6 else f"checkout-page-{i}" for i in range(n)]


def synthetic(n_tasks: int, n_models: int, alphas: tuple[str, ...] = ("decay",), starts: int = 3):
    rng = np.random.default_rng(n_tasks * 100 + n_models)
    rows, steps = [], []
    for m, task, method, alpha, s in itertools.product(
        models(n_models), tasks(n_tasks), ("dvoc", "oneshot", "centre"), alphas, range(starts)
    ):
        if method != "dvoc" and alpha != alphas[0]:
            continue
        key = f"{m}|{task}|{method}|{alpha}|{s}"
        d = float(rng.lognormal(2, 1.5))
        rows.append(
            {
                "trial_key": key,
                "run_dir": "synthetic",
                "model": m if method != "centre" else "none",
                "simulated": True,
                "task": task,
                "method": method,
                "alpha": alpha if method == "dvoc" else "-",
                "overlay": "full" if method == "dvoc" else "-",
                "predict": "relative" if method == "dvoc" else "-",
                "protocol": "v1" if method != "centre" else "-",
                "detector": "-",
                "coord_frame": "norm1000",
                "epsilon": 30.0,
                "status": "ok",
                "valid": True,
                "final_dist_px": d,
                "hit": d < 12,
                "within_eps": d < 30,
                "hit_radius": d < 40,
                "iterations": 3,
                "model_calls": 3,
                "tokens_in": pd.NA,
                "tokens_out": pd.NA,
                "cost_usd": 0.0,
                "target_inferred": False,
            }
        )
        if method == "dvoc":
            for i in range(4):
                steps.append(
                    {
                        "trial_key": key,
                        "run_dir": "synthetic",
                        "model": m,
                        "simulated": True,
                        "kind": "verify",
                        "index": i,
                        "true_dist_px": 200 * 0.4**i * float(rng.uniform(0.5, 1.5)),
                        "alpha_schedule": alpha,
                        "overlay": "full",
                        "predict": "relative",
                        "protocol": "v1",
                    }
                )
    t = pd.DataFrame(rows)
    t = t.drop_duplicates(subset=["trial_key"]).reset_index(drop=True)  # centre rows are per task
    return t, pd.DataFrame(steps)


def audit(n_models: int) -> pd.DataFrame:
    rows = []
    for m, has_task, reading in itertools.product(models(n_models), (True, False), honest.FRAMES):
        rows.append(
            {
                "model": m,
                "method": "oneshot",
                "has_task": has_task,
                "reading": reading,
                "as_recorded": reading == "norm1000",
                "simulated": True,
                "n": 30,
                "hit": 0.9 if reading == "norm1000" else 0.1,
                "hit_radius": 1.0 if reading == "norm1000" else 0.17,
                "within_eps": 0.9,
                "median_err_px": 3.0,
            }
        )
    return pd.DataFrame(rows)


def figures(n_tasks: int, n_models: int, alphas: tuple[str, ...] = ("decay",)):
    t, s = synthetic(n_tasks, n_models, alphas)
    summ = honest.summary(t, "hit", by=honest.headline_keys(t), n_boot=20)
    return {
        "success": plots.success_bars(summ),
        "heatmap": plots.heatmap(t, "hit"),
        "distance_vs_iteration": plots.distance_vs_iteration(s),
        "distance_cdf": plots.distance_cdf(t),
        "frame_audit": plots.frame_audit_bars(audit(n_models)),
    }, t


SIZES = [(1, 1), (2, 4), (6, 4), (50, 1), (1, 20), (50, 20)]


@pytest.mark.parametrize(("n_tasks", "n_models"), SIZES, ids=[f"{a}tasks-{b}models" for a, b in SIZES])
def test_figures_are_readable_at_the_extremes(n_tasks, n_models):
    figs, _ = figures(n_tasks, n_models)
    found = {name: problems(fig) for name, fig in figs.items()}
    assert not any(found.values()), {k: v for k, v in found.items() if v}


def test_a_sweep_is_split_not_pooled():
    alphas = ("decay", "constant", "undamped", "adaptive")
    figs, t = figures(6, 4, alphas)
    assert not any(problems(f) for f in figs.values())
    assert "alpha" in honest.headline_keys(t)
    # one bar per model x (oneshot, centre, 4 alpha settings of DVOC), labelled by the setting
    ax = figs["success"].axes[0]
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert {f"dvoc / alpha={a}" for a in alphas} <= set(legend) and "oneshot" in legend
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == 4 * (1 + len(alphas)) + 1  # centre has one model ("none")
    rows = [x.get_text() for x in figs["heatmap"].axes[0].get_yticklabels()]
    assert len(rows) == 4 * len(alphas) and all("alpha=" in r for r in rows)
    # sixteen lines, at most five per panel (issue 52 item 9): one panel per alpha setting, its four models
    axes = figs["distance_vs_iteration"].axes
    lines = [x.get_text() for ax in axes for x in ax.get_legend().get_texts()]
    assert len(lines) == len(set(lines)) == 4 * len(alphas) and len(axes) == len(alphas)
    # pooled on request
    assert len(plots.heatmap(t, "hit", split=()).axes[0].get_yticklabels()) == 4


def test_the_check_catches_an_unreadable_figure():
    # the checks can fail: a crowded strip with a long title and a legend on the bars, as before
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2.5, 2), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(range(12), np.ones(12), label="a long legend entry")
    ax.set_xticks(range(12), [f"sim-gemma-4-{i}" for i in range(12)])
    ax.legend(loc="center")
    fig.suptitle("SIMULATED: a title much longer than the figure is wide, clipped at both ends")
    found = problems(fig)
    assert any("overlapping x tick labels" in p for p in found)
    assert any("title" in p and "outside" in p for p in found)
    assert any("covers" in p for p in found)


def test_a_one_trial_run_still_draws_its_line():
    t, s = synthetic(1, 1, starts=1)
    fig = plots.distance_vs_iteration(s)
    (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label().endswith("(n=1)")]
    assert len(line.get_xdata()) == 4  # every iteration of the one trial, not "no iteration reached"
    assert ">= 1 trials" in fig.axes[0].get_xlabel()
    assert not problems(fig)
