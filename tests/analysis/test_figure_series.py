"""Figures readable at their size (issue 52 item 9): no panel draws more lines than can be told apart
(:data:`MAX_SERIES`; more groups go to more panels), every group is drawn once, and the legend shows each
line as it is drawn (a dashed line's dashes visible beside its marker)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from dvoc_bench.analysis import plots
from dvoc_bench.analysis._layout import MAX_SERIES

MODELS = ("sim-a", "sim-b", "sim-c")
METHODS = ("dvoc", "oneshot", "zoom")


def curve() -> pd.DataFrame:
    """Nine groups (three models x three methods) of an accuracy-at-a-budget curve, k = 1..4."""
    rows = []
    for (i, m), (j, meth), k in itertools.product(enumerate(MODELS), enumerate(METHODS), range(1, 5)):
        rate = 0.2 + 0.1 * i + 0.05 * j + 0.02 * k
        rows.append({"model": m, "method": meth, "simulated": True, "assumed": "", "k": k, "trials": 15,
                     "samples": 3, "rate": rate, "lo": rate - 0.1, "hi": rate + 0.1, "calls": float(k),
                     "tokens_in": np.nan, "tokens_out": np.nan, "cost_usd": np.nan,
                     "rule": "hit"})  # fmt: skip
    return pd.DataFrame(rows)


def trials() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [{"model": m, "method": meth, "valid": True, "simulated": True, "final_dist_px": float(d)}
            for m, meth in itertools.product(MODELS, METHODS) for d in rng.gamma(2.0, 10.0, 12)]  # fmt: skip
    return pd.DataFrame(rows)


def check(fig) -> None:
    labelled = []
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        assert len(lines) <= MAX_SERIES, [ln.get_label() for ln in lines]
        labelled += [ln.get_label() for ln in lines]
        leg = ax.get_legend()
        if leg is None:
            continue
        assert leg.handlelength >= 3.5  # a dash, a gap and the marker all show
        drawn = {ln.get_label(): ln.get_linestyle() for ln in lines}
        for handle, text in zip(leg.legend_handles, leg.get_texts(), strict=True):
            if text.get_text() in drawn:  # the panel with the legend drew it: the same style
                assert handle.get_linestyle() == drawn[text.get_text()], text.get_text()
    assert len(set(labelled)) == len(MODELS) * len(METHODS)  # every group drawn, none twice in a legend


def test_the_headline_splits_nine_groups_into_panels_and_keeps_its_styles():
    fig = plots.headline(curve())
    check(fig)
    styles = {ln.get_linestyle() for ax in fig.axes for ln in ax.get_lines() if ln.get_label()[0] != "_"}
    assert len(styles) == 3  # one line style per method, one colour per model


def test_the_distance_cdf_splits_nine_groups_into_panels():
    check(plots.distance_cdf(trials()))


def _exact_share(d: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The empirical CDF of ``d`` at ``x``, counted directly (the share of values at or below)."""
    return np.array([(d <= v).mean() for v in x])


def test_an_ecdf_with_few_distinct_values_is_drawn_exactly():
    d = np.sort(np.array([3.0, 1.0, 1.0, 2.0, 5.0, 5.0, 5.0, 0.0]))
    x, y = plots.ecdf_steps(d)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 5.0]
    assert np.allclose(y, _exact_share(d, x)) and y[-1] == 1.0
    assert all(len(a) == 0 for a in plots.ecdf_steps(np.array([])))  # k = 0: nothing to draw


def test_the_cdf_of_a_million_trials_is_drawn_through_its_quantiles():
    """A curve drew one vertex per trial (1,000,000 for an import of that size); now at most
    ECDF_POINTS, each at an exact share, the curve nowhere off by more than 1/ECDF_POINTS."""
    d = np.sort(np.random.default_rng(1).gamma(2.0, 15.0, 1_000_000))
    x, y = plots.ecdf_steps(d)
    assert len(x) == plots.ECDF_POINTS and x[-1] == d[-1] and y[-1] == 1.0
    some = np.random.default_rng(2).choice(len(x), 200, replace=False)
    assert np.allclose(y[some], _exact_share(d, x[some]))  # every drawn step at its exact share
    grid = np.quantile(d, np.linspace(0, 1, 5001))
    drawn = np.concatenate([[0.0], y])[np.searchsorted(x, grid, side="right")]
    assert np.abs(drawn - np.searchsorted(d, grid, side="right") / len(d)).max() <= 1 / plots.ECDF_POINTS
    t = pd.DataFrame({"model": "m", "method": "oneshot", "valid": True, "simulated": False,
                      "final_dist_px": d[::10]})  # fmt: skip
    (line,) = [ln for ax in plots.distance_cdf(t).axes for ln in ax.get_lines() if ln.get_label()[0] != "_"]
    assert len(line.get_xdata()) == plots.ECDF_POINTS  # not 100,000
