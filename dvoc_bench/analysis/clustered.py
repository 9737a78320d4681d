"""Success-rate intervals that respect the design: the sample is the unit.

One task (a synthetic scene, a web page, a desktop window, a dataset sample) run from several start points
and repeats gives trials that are not independent: they share the target, its surroundings and its
difficulty, and a model that repeats itself on an identical input adds nothing. Every success rate of the
report, its figures and its equal-cost tables is therefore clustered by **sample** (:func:`cluster_keys`:
the trial's ``task``); a sample's start points and repeats count once toward its sample size when they
agree, and as more when they vary.

:func:`sample_rate_interval` is the one function the tables and figures call for a rate over a frame of
trials: a Wilson interval on the *effective* sample size ``n / deff``, where the design effect ``deff``
comes from the between-cluster variance of the ratio estimator (floored at 1). At the exact edges (every
trial a success, or none) the variance says nothing about the correlation, and the interval is the Wilson
interval over the samples (the worst case: every sample one observation). :data:`INTERVAL` names it.
The computation lives in :func:`~dvoc_bench.analysis.intervals.rate_interval` (``clusters=``);
:func:`clustered_rate_interval` takes explicit cluster labels. A dataset sample asked as several tasks
(CUActSpot's multi-point samples, ``<id>:1`` .. ``<id>:K``) is one sample: ``sample_file``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dvoc_bench.analysis.intervals import RATE_INTERVAL, UNIT, rate_interval
from dvoc_bench.analysis.intervals import design_effect as _deff

__all__ = [
    "INTERVAL",
    "UNIT",
    "cluster_counts",
    "cluster_keys",
    "clustered_rate_interval",
    "design_effect",
    "sample_rate_interval",
]

INTERVAL = RATE_INTERVAL
"""The name of :func:`sample_rate_interval` in text: ``Wilson 95 %, clustered by sample``."""


def cluster_keys(trials: pd.DataFrame) -> pd.Series:
    """The cluster of each trial: its sample (the ``task`` column, as a string; a dataset sample's file,
    ``sample_file``, when it has one: the points of a multi-point sample are one sample)."""
    if "task" not in trials.columns:
        raise ValueError("cluster_keys: the trials have no `task` column (the sample each trial ran on)")
    task = trials["task"].astype(str)
    if "sample_file" in trials.columns:  # a dataset sample asked as several tasks (CUActSpot's K points)
        return trials["sample_file"].astype(object).where(trials["sample_file"].notna(), task).astype(str)
    return task


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


def sample_rate_interval(
    success: Sequence[float] | np.ndarray | pd.Series, trials: pd.DataFrame
) -> tuple[float, float]:
    """:data:`INTERVAL` of the success rate of ``trials`` (``success``: one 0/1 per row of ``trials``, in
    its order): the interval every table and figure of success rates uses."""
    y = np.asarray(success, dtype=float)
    if len(y) != len(trials):
        raise ValueError(f"sample_rate_interval: {len(y)} outcomes for {len(trials)} trials")
    return clustered_rate_interval(y, cluster_keys(trials).to_numpy())
