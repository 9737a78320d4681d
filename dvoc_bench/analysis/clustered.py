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
:func:`dvoc_bench.analysis.intervals.wilson` (``PLAIN_INTERVAL``) stays available for independent trials;
the computation lives in :func:`~dvoc_bench.analysis.intervals.rate_interval` (``clusters=``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dvoc_bench.analysis.intervals import design_effect as _deff
from dvoc_bench.analysis.intervals import rate_interval

__all__ = ["START_METHODS", "cluster_counts", "cluster_keys", "clustered_rate_interval", "design_effect"]

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


def cluster_counts(
    success: Sequence[float] | np.ndarray, clusters: Sequence[object] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(successes, trials)`` per cluster (one label per trial), the ``clusters=`` argument of
    :func:`~dvoc_bench.analysis.intervals.rate_interval`."""
    g = pd.Series(np.asarray(success, dtype=float)).groupby(np.asarray(clusters, dtype=object), sort=True)
    return g.sum().to_numpy(), g.size().to_numpy().astype(float)


def design_effect(success: Sequence[float] | np.ndarray, clusters: Sequence[object] | np.ndarray) -> float:
    """Variance of the clustered ratio estimator over the binomial variance (>= 1; ``nan`` at the edges
    or with a single cluster)."""
    return _deff(*cluster_counts(success, clusters))


def clustered_rate_interval(
    success: Sequence[float] | np.ndarray, clusters: Sequence[object] | np.ndarray
) -> tuple[float, float]:
    """95 % interval of a success rate whose trials fall in ``clusters`` (one label per trial): the one
    interval function, :func:`~dvoc_bench.analysis.intervals.rate_interval`, clustered."""
    y = np.asarray(success, dtype=float)
    if len(y) == 0:
        return math.nan, math.nan
    return rate_interval(float(y.sum()), len(y), clusters=cluster_counts(y, clusters))
