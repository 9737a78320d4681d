"""Success-rate intervals that respect the design: trials with an identical first input are correlated.

A model (real or simulated) that repeats itself on an identical input makes the repeats of one cell less
informative than independent trials; the plain Wilson interval then claims more precision than the data
hold. Here the clusters are the trials whose first model input is identical:

- DVOC and every method that starts from a point: ``(model, task, start point)`` plus the knobs that change
  the first frame or prompt (protocol, overlay, predict mode);
- one-shot and the baselines (they ignore the start point): ``(model, task, method, protocol)``.

:func:`clustered_rate_interval` is a Wilson interval on the *effective* sample size ``n / deff``, where the
design effect ``deff`` comes from the between-cluster variance of the ratio estimator (floored at 1). At the
exact edges (every trial a success, or none) the variance says nothing about the correlation, and the
interval is the Wilson interval over clusters (the worst case: every cluster one observation).
:func:`dvoc_bench.analysis.honest.wilson` stays available under its name for independent trials.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dvoc_bench.analysis.honest import wilson

__all__ = ["START_METHODS", "cluster_keys", "clustered_rate_interval", "design_effect"]

START_METHODS = ("dvoc", "som_dvoc", "zoom")
"""Methods whose first input depends on the start point (the first frame shows the crosshair there)."""


def cluster_keys(trials: pd.DataFrame) -> pd.Series:
    """The identical-first-input cluster of each trial (a string per row; see the module docstring)."""

    def col(name: str) -> pd.Series:
        if name in trials.columns:
            return trials[name].astype(str)
        return pd.Series("-", index=trials.index)

    base = col("model") + "|" + col("task") + "|" + col("method") + "|" + col("protocol")
    starts = col("start_x") + "," + col("start_y") if "start_x" in trials.columns else col("start_index")
    knobs = col("overlay") + "|" + col("predict") + "|" + starts
    uses_start = trials["method"].isin(START_METHODS) if "method" in trials.columns else False
    return base + np.where(uses_start, "|" + knobs, "")


def design_effect(success: Sequence[float] | np.ndarray, clusters: Sequence[object] | np.ndarray) -> float:
    """Variance of the clustered ratio estimator over the binomial variance (>= 1; ``nan`` at the edges
    or with a single cluster)."""
    y = np.asarray(success, dtype=float)
    g = pd.Series(y).groupby(np.asarray(clusters, dtype=object), sort=False)
    ys, ms = g.sum().to_numpy(), g.size().to_numpy().astype(float)
    n, c = float(ms.sum()), len(ms)
    p = ys.sum() / n if n else math.nan
    if c < 2 or not (0.0 < p < 1.0):
        return math.nan
    var = c / (c - 1) * float(((ys - p * ms) ** 2).sum()) / n**2
    return max(1.0, var / (p * (1 - p) / n))


def clustered_rate_interval(
    success: Sequence[float] | np.ndarray, clusters: Sequence[object] | np.ndarray
) -> tuple[float, float]:
    """95 % interval of a success rate whose trials fall in ``clusters`` (one label per trial): Wilson on
    the effective sample size; at the exact edges Wilson over the number of clusters."""
    y = np.asarray(success, dtype=float)
    n = len(y)
    if n == 0:
        return math.nan, math.nan
    k = float(y.sum())
    deff = design_effect(y, clusters)
    if math.isnan(deff):
        n_eff = float(len(set(np.asarray(clusters, dtype=object).tolist())))
    else:
        n_eff = n / deff
    lo, hi = wilson(k / n * n_eff, n_eff)  # type: ignore[arg-type]  (an effective count)
    return (0.0 if k == 0 else lo), (1.0 if k == n else hi)
