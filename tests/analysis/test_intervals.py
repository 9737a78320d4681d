"""The one rate interval (dvoc_bench.analysis.intervals): exact edges and sane bounds at every (k, n)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dvoc_bench.analysis import honest
from dvoc_bench.analysis.intervals import (
    PLAIN_INTERVAL,
    RATE_INTERVAL,
    error_bars,
    interval_name,
    rate_interval,
    wilson,
)

N_MAX = 500


def all_pairs(n_max: int = N_MAX) -> tuple[np.ndarray, np.ndarray]:
    """Every (k, n) with 0 <= k <= n, 1 <= n <= n_max, as two flat arrays."""
    n = np.repeat(np.arange(1, n_max + 1), np.arange(2, n_max + 2))
    k = np.concatenate([np.arange(m + 1) for m in range(1, n_max + 1)])
    return k, n


def test_every_k_n_up_to_500_has_exact_edges_and_brackets_the_rate():
    k, n = all_pairs()
    assert len(k) == sum(m + 1 for m in range(1, N_MAX + 1))
    lo, hi = rate_interval(k, n)
    p = k / n
    assert np.isfinite(lo).all() and np.isfinite(hi).all()
    assert (lo[k == 0] == 0.0).all() and (hi[k == n] == 1.0).all()  # exactly, not 0.9999999999999999
    assert (lo > 0)[k > 0].all() and (hi < 1)[k < n].all()  # and only there
    assert (lo >= 0.0).all() and (lo <= p).all() and (p <= hi).all() and (hi <= 1.0).all()
    # the error bars a figure draws: rate - lo and hi - rate, computed as the figures compute them
    assert (p - lo >= 0).all() and (hi - p >= 0).all()
    assert (error_bars(p, lo, hi) >= 0).all()
    # width shrinks with n at a fixed rate (k/n = 1/2)
    even = (n % 2 == 0) & (2 * k == n)
    widths = (hi - lo)[even]
    assert (np.diff(widths) < 0).all()


def test_vectorised_equals_scalar_and_the_textbook_formula_inside():
    k, n = all_pairs(60)
    lo, hi = rate_interval(k, n)
    z = 1.959963984540054
    for i in range(0, len(k), 37):
        kk, nn = int(k[i]), int(n[i])
        assert rate_interval(kk, nn) == (lo[i], hi[i])
        if 0 < kk < nn:  # away from the edges the bounds are the plain Wilson formula
            p = kk / nn
            c = (p + z * z / (2 * nn)) / (1 + z * z / nn)
            h = z * math.sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / (1 + z * z / nn)
            assert (lo[i], hi[i]) == pytest.approx((c - h, c + h), abs=1e-12)


def test_the_pairs_that_broke_the_report_now_hold():
    # the textbook formula gives an upper bound of 0.9999999999999999 at k = n for these n
    z = 1.959963984540054
    broken = [
        n
        for n in range(1, 200)
        if (1 + z * z / (2 * n)) / (1 + z * z / n) + z * math.sqrt(z * z / (4 * n * n)) / (1 + z * z / n) < 1
    ]
    assert broken  # the bug was real for the plain formula
    for n in broken:
        assert rate_interval(n, n)[1] == 1.0
        assert wilson(n, n)[1] == 1.0


def test_known_values_empty_and_bad_counts():
    assert rate_interval(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert rate_interval(72, 114) == pytest.approx((0.54009, 0.71449), abs=1e-5)
    assert all(math.isnan(x) for x in rate_interval(0, 0))
    lo, hi = rate_interval(np.array([0, 3]), np.array([0, 4]))
    assert math.isnan(lo[0]) and hi[1] == pytest.approx(wilson(3, 4)[1])
    with pytest.raises(ValueError, match="0 <= k <= n"):
        rate_interval(3, 2)
    with pytest.raises(ValueError, match="method"):
        rate_interval(1, 2, method="clopper")
    with pytest.raises(ValueError, match="clusters hold"):
        rate_interval(3, 4, clusters=([1, 1], [2, 2]))  # the clusters must add up to k and n
    with pytest.raises(ValueError, match="scalar"):
        rate_interval(np.array([1, 2]), np.array([2, 2]), clusters=([1], [2]))
    # another level is wider / narrower, and named so
    assert rate_interval(5, 10, level=0.99)[0] < rate_interval(5, 10)[0] < rate_interval(5, 10, level=0.8)[0]
    assert RATE_INTERVAL == "Wilson 95 %, clustered by sample" and PLAIN_INTERVAL == "Wilson 95 %"
    assert interval_name(0.9) == "Wilson 90 %"


@pytest.mark.parametrize("k_per", [[3, 3, 0, 0], [2, 1, 2, 1]])
def test_the_clustered_interval_widens_with_repeats_that_agree(k_per: list[int]) -> None:
    """Four clusters of three trials, 6 of 12 successes: all-or-nothing clusters carry the information of
    at most four trials (as wide as the Wilson interval over the clusters, or wider with the small-sample
    factor c / (c - 1)), mixed clusters that of twelve."""
    lo, hi = rate_interval(6, 12, clusters=(k_per, [3, 3, 3, 3]))
    plo, phi = rate_interval(6, 12)
    assert lo <= 0.5 <= hi
    if k_per == [3, 3, 0, 0]:
        wlo, whi = wilson(2, 4)
        assert lo <= wlo and hi >= whi
    else:
        assert (lo, hi) == pytest.approx((plo, phi))
    # edges: every trial a success is the Wilson interval over the clusters
    assert rate_interval(12, 12, clusters=([3] * 4, [3] * 4)) == pytest.approx((wilson(4, 4)[0], 1.0))


def test_the_tables_use_it():
    assert honest.rate_interval is rate_interval and honest.wilson is wilson


def test_error_bars_of_missing_bounds_are_zero():
    e = error_bars([0.5, np.nan], [0.2, np.nan], [0.9, np.nan])
    assert e.shape == (2, 2) and e[:, 1].tolist() == [0.0, 0.0] and e[:, 0] == pytest.approx([0.3, 0.4])
