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
