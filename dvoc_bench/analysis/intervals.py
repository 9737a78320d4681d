"""Confidence intervals of success rates: the one place they are computed (tables, figures, notebooks).

:func:`rate_interval` is what every table and figure calls; :data:`RATE_INTERVAL` names it in their text
("Wilson 95 %"). Its bounds hold at every ``(k, n)``: exactly 0 at ``k = 0``, exactly 1 at ``k = n``, and
``lo <= k/n <= hi`` in floating point, so ``rate - lo`` and ``hi - rate`` (error bars) are never negative.
(The textbook formula gives 0.9999999999999999 at ``k = n`` for many ``n``; a bar chart then refuses the
negative error.) :func:`error_bars` turns a rate and its bounds into matplotlib's ``yerr``.

``clusters=`` is reserved for a cluster-robust interval (trials that share a start point or a scene are not
independent): the signature takes the per-cluster counts already, the computation is not implemented yet.
"""

from __future__ import annotations

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


def rate_interval(
    k: Any,
    n: Any,
    *,
    level: float = 0.95,
    method: str = "wilson",
    clusters: tuple[Sequence[int], Sequence[int]] | None = None,
) -> tuple[Any, Any]:
    """The interval of a success rate ``k / n`` used everywhere (see :data:`RATE_INTERVAL`).

    ``k``, ``n``: counts, scalars or arrays (broadcast; one interval per element). ``level``: coverage.
    ``method``: ``"wilson"`` (the score interval, :func:`wilson`). ``clusters``: reserved for a
    cluster-robust interval, as ``(k_per_cluster, n_per_cluster)`` summing to ``k`` and ``n`` (e.g. per
    scene x start point); not implemented yet, passing it raises ``NotImplementedError``.
    Bounds: exactly 0 / 1 at ``k = 0`` / ``k = n``, ``lo <= k/n <= hi``; NaN when ``n == 0``."""
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; allowed: {', '.join(METHODS)}")
    if clusters is not None:
        raise NotImplementedError("rate_interval(clusters=...): the cluster-robust interval is not built yet")
    return wilson(k, n, _z(level))


def interval_name(level: float = 0.95, method: str = "wilson") -> str:
    """How an interval from :func:`rate_interval` with these arguments is named in text."""
    pct = f"{100 * level:g}"
    return f"{method.capitalize()} {pct} %"


RATE_INTERVAL = interval_name()
"""How :func:`rate_interval` with its defaults is named in tables and figure titles: ``Wilson 95 %``."""


def error_bars(rate: Any, lo: Any, hi: Any) -> np.ndarray:
    """matplotlib ``yerr`` (2 x n: below, above) for rates with interval bounds; never negative, 0 where a
    bound is missing (NaN)."""
    r = np.asarray(rate, dtype=float)
    below = np.nan_to_num(r - np.asarray(lo, dtype=float), nan=0.0)
    above = np.nan_to_num(np.asarray(hi, dtype=float) - r, nan=0.0)
    return np.vstack([np.maximum(below, 0.0), np.maximum(above, 0.0)])
