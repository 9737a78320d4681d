"""Confidence intervals of success rates and of their paired differences: the one place they are computed
(tables, figures, notebooks).

:func:`rate_interval` is what every table and figure calls; :data:`RATE_INTERVAL` names it in their text
("Wilson 95 %"). Its bounds hold at every ``(k, n)``: exactly 0 at ``k = 0``, exactly 1 at ``k = n``, and
``lo <= k/n <= hi`` in floating point, so ``rate - lo`` and ``hi - rate`` (error bars) are never negative.
(The textbook formula gives 0.9999999999999999 at ``k = n`` for many ``n``; a bar chart then refuses the
negative error.) :func:`error_bars` turns a rate and its bounds into matplotlib's ``yerr``.

:func:`paired_difference_interval` extends it to the difference of two rates measured on the same pairs
(Newcombe's paired Wilson interval, clustered the same way; :data:`DIFF_INTERVAL`).

With ``clusters=(k_per_cluster, n_per_cluster)`` the interval is *clustered*: the trials of one sample
(:func:`dvoc_bench.analysis.clustered.cluster_keys`: a task run from several start points and repeats)
are correlated, real or simulated alike. The interval is then the Wilson interval on the effective sample
size ``n / deff``, the design effect ``deff`` (>= 1) from the between-cluster variance of the ratio
estimator; at the exact edges (``k = 0`` or ``k = n``, where that variance says nothing) it is the Wilson
interval over the number of clusters, the worst case. Tables name the interval they use with
:data:`RATE_INTERVAL` (the clustered interval of every table and figure, :data:`UNIT` the cluster) or
:data:`PLAIN_INTERVAL` (plain Wilson, for independent trials).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Z95 = 1.959963984540054
"""Two-sided 95 % normal quantile."""
METHODS = ("wilson",)


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if abs(level - 0.95) < 1e-12:
        return Z95
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson(k: Any, n: Any, z: float = Z95) -> tuple[Any, Any]:
    """The Wilson score interval for ``k`` successes in ``n`` trials, with exact edges.

    Scalars give a pair of floats, arrays (broadcast) a pair of arrays. ``n == 0`` gives NaN bounds;
    ``k`` outside ``[0, n]`` raises ``ValueError``. ``lo`` is exactly 0 at ``k = 0``, ``hi`` exactly 1 at
    ``k = n``, and ``lo <= k/n <= hi`` always."""
    scalar = np.ndim(k) == 0 and np.ndim(n) == 0
    k_a, n_a = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    bad = (n_a > 0) & ((k_a < 0) | (k_a > n_a))
    if bad.any():
        i = np.flatnonzero(bad.ravel())[0]
        raise ValueError(f"wilson: need 0 <= k <= n, got k={k_a.ravel()[i]:g}, n={n_a.ravel()[i]:g}")
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k_a / n_a
        z2 = z * z
        denom = 1 + z2 / n_a
        centre = (p + z2 / (2 * n_a)) / denom
        half = z * np.sqrt(p * (1 - p) / n_a + z2 / (4 * n_a * n_a)) / denom
        lo = np.where(k_a == 0, 0.0, np.clip(centre - half, 0.0, p))
        hi = np.where(k_a == n_a, 1.0, np.clip(centre + half, p, 1.0))
    empty = n_a <= 0
    lo, hi = np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)
    if scalar:
        return float(lo), float(hi)
    return lo, hi


def design_effect(
    k_per_cluster: Sequence[float] | np.ndarray, n_per_cluster: Sequence[float] | np.ndarray
) -> float:
    """Variance of the clustered ratio estimator over the binomial variance (>= 1; both with the small-sample
    factor of their number of clusters, ``c / (c - 1)`` and ``n / (n - 1)``: one trial per cluster is a
    design effect of 1); ``nan`` with fewer than two clusters or at the edges (rate 0 or 1)."""
    ys = np.asarray(k_per_cluster, dtype=float)
    ms = np.asarray(n_per_cluster, dtype=float)
    n, c = float(ms.sum()), len(ms)
    p = ys.sum() / n if n else math.nan
    if c < 2 or not (0.0 < p < 1.0):
        return math.nan
    var = c / (c - 1) * float(((ys - p * ms) ** 2).sum()) / n**2
    # the reference: the same estimator with every trial its own cluster (its small-sample factor n / (n - 1)
    # included), so a design of one trial per cluster has a design effect of exactly 1 (the plain interval)
    return max(1.0, var / (n / (n - 1) * p * (1 - p) / n))


def _clustered(
    k: float, n: float, kc: Sequence[float] | np.ndarray, nc: Sequence[float] | np.ndarray, z: float
) -> tuple[float, float]:
    if n <= 0:
        return math.nan, math.nan
    if abs(float(np.sum(kc)) - k) > 1e-9 or abs(float(np.sum(nc)) - n) > 1e-9:
        raise ValueError(
            f"rate_interval: the clusters hold {np.sum(kc):g} of {np.sum(nc):g}, not k={k:g} of n={n:g}"
        )
    deff = design_effect(kc, nc)
    n_eff = float(len(nc)) if math.isnan(deff) else n / deff
    lo, hi = wilson(k / n * n_eff, n_eff, z)
    return (0.0 if k == 0 else min(lo, k / n)), (1.0 if k == n else max(hi, k / n))


def rate_interval(
    k: Any,
    n: Any,
    *,
    level: float = 0.95,
    method: str = "wilson",
    clusters: tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray] | None = None,
) -> tuple[Any, Any]:
    """The interval of a success rate ``k / n`` used everywhere (see :func:`interval_name`).

    ``k``, ``n``: counts, scalars or arrays (broadcast; one interval per element). ``level``: coverage.
    ``method``: ``"wilson"`` (the score interval, :func:`wilson`). ``clusters``: ``(k_per_cluster,
    n_per_cluster)`` summing to ``k`` and ``n`` (scalar ``k``, ``n`` only): the clustered interval (module
    docstring), named :data:`RATE_INTERVAL`; without it the plain Wilson interval, named
    :data:`PLAIN_INTERVAL`. Bounds: exactly 0 / 1 at ``k = 0`` / ``k = n``, ``lo <= k/n <= hi``; NaN when
    ``n == 0``."""
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; allowed: {', '.join(METHODS)}")
    if clusters is not None:
        if np.ndim(k) or np.ndim(n):
            raise ValueError("rate_interval(clusters=...) takes one rate (scalar k and n)")
        kc, nc = clusters
        return _clustered(float(k), float(n), kc, nc, _z(level))
    return wilson(k, n, _z(level))


UNIT = "sample"
"""The unit of every clustered interval of the report: a sample (a task; its start points and repeats are
one cluster)."""


def interval_name(
    level: float = 0.95, method: str = "wilson", clustered: bool = False, by: str = UNIT
) -> str:
    """How an interval from :func:`rate_interval` with these arguments is named in text (``by``: what the
    clusters are)."""
    pct = f"{100 * level:g}"
    name = f"{method.capitalize()} {pct} %"
    return f"{name}, clustered by {by}" if clustered else name


RATE_INTERVAL = interval_name(clustered=True)
"""The name of the interval every table and figure of success rates uses: ``Wilson 95 %, clustered by
sample``."""
PLAIN_INTERVAL = interval_name()
"""The name of the plain Wilson interval (independent trials): ``Wilson 95 %``."""


def error_bars(rate: Any, lo: Any, hi: Any) -> np.ndarray:
    """matplotlib ``yerr`` (2 x n: below, above) for rates with interval bounds; never negative, 0 where a
    bound is missing (NaN)."""
    r = np.asarray(rate, dtype=float)
    below = np.nan_to_num(r - np.asarray(lo, dtype=float), nan=0.0)
    above = np.nan_to_num(np.asarray(hi, dtype=float) - r, nan=0.0)
    return np.vstack([np.maximum(below, 0.0), np.maximum(above, 0.0)])


# ------------------------------------------------------------------------------------ paired differences


def _diff_design_effect(d_per_cluster: Sequence[float], n_per_cluster: Sequence[float], d2: float) -> float:
    """Design effect of a mean paired difference (``d`` in {-1, 0, 1} per pair; ``d2`` = the sum of
    ``d**2``): the between-cluster variance of the ratio estimator over the variance of independent pairs
    (>= 1); ``nan`` with fewer than two clusters or when the pairs do not vary."""
    ds = np.asarray(d_per_cluster, dtype=float)
    ms = np.asarray(n_per_cluster, dtype=float)
    n, c = float(ms.sum()), len(ms)
    if c < 2 or n <= 0:
        return math.nan
    mean = ds.sum() / n
    var_iid = (d2 / n - mean * mean) / n
    if var_iid <= 1e-15:
        return math.nan
    var = c / (c - 1) * float(((ds - mean * ms) ** 2).sum()) / n**2
    return max(1.0, var / (n / (n - 1) * var_iid))  # the reference with the same factor (as design_effect)


def paired_difference_interval(
    both: float,
    a_only: float,
    b_only: float,
    neither: float,
    *,
    level: float = 0.95,
    clusters: tuple[Sequence[float], Sequence[float]] | None = None,
) -> tuple[float, float]:
    """95 % interval of the difference ``rate(a) - rate(b)`` of two success rates measured on the same
    pairs: the one interval function (:func:`wilson`, as :func:`rate_interval`) extended to paired
    differences by Newcombe's method 10 (the Wilson intervals of both rates, combined with the pairs'
    correlation ``phi``, whose ``ad - bc`` is lowered by ``n / 2`` when positive, so pairs that all agree
    still leave an interval around 0). ``both`` / ``a_only`` / ``b_only`` / ``neither``: the counts of the
    2 x 2 table of the pairs. ``clusters=(d_per_cluster, n_per_cluster)`` (``d``: the sum of ``a - b``
    over a cluster's pairs; ``n``: its pairs, e.g. one cluster per sample): the pairs are correlated within
    a cluster, and
    the interval runs on the effective number of pairs ``n / deff`` (the design effect of the mean
    difference, floored at 1), or, when the differences do not vary (every pair concordant, say), on the
    number of clusters, the worst case, as :func:`rate_interval` does at its edges. Bounds lie in
    ``[-1, 1]`` and ``lo <= diff <= hi``; NaN without pairs."""
    n = float(both + a_only + b_only + neither)
    if n <= 0:
        return math.nan, math.nan
    z = _z(level)
    diff = (a_only - b_only) / n
    scale = 1.0
    if clusters is not None:
        dc, nc = clusters
        if abs(float(np.sum(dc)) - (a_only - b_only)) > 1e-9 or abs(float(np.sum(nc)) - n) > 1e-9:
            raise ValueError(
                f"paired_difference_interval: the clusters hold a difference of {np.sum(dc):g} over "
                f"{np.sum(nc):g} pairs, not {a_only - b_only:g} over {n:g}"
            )
        deff = _diff_design_effect(dc, nc, float(a_only + b_only))
        scale = (float(len(nc)) / n if math.isnan(deff) else 1.0 / deff) if len(nc) else 1.0
        scale = min(scale, 1.0)
    a, b, c, d = (float(x) * scale for x in (both, a_only, b_only, neither))
    m = n * scale
    p1, p2 = (a + b) / m, (a + c) / m
    l1, u1 = wilson(a + b, m, z)
    l2, u2 = wilson(a + c, m, z)
    den = (a + b) * (c + d) * (a + c) * (b + d)
    # the pairs' correlation, with Newcombe's correction of ad - bc by n/2 when positive: without it, pairs
    # that all agree (b = c = 0) give phi = 1 and an interval of width 0
    cross = a * d - b * c
    cross = max(cross - m / 2, 0.0) if cross > 0 else cross
    phi = cross / math.sqrt(den) if den > 0 else 0.0
    lo = diff - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    hi = diff + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, min(lo, diff)), min(1.0, max(hi, diff))


DIFF_INTERVAL = f"Newcombe (Wilson) 95 %, paired, clustered by {UNIT}"
"""The name of :func:`paired_difference_interval` with one cluster per sample, as tables print it."""
