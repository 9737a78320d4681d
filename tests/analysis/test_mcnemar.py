"""McNemar's exact test, the package's one (dvoc_bench.analysis.honest.mcnemar_exact), checked against
scipy's binomial test at known discordant counts, and on the path the comparisons take
(compare.method_pairs, the report's one paired comparison, on hand-built pairs)."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy.stats import binomtest

from dvoc_bench.analysis import compare, honest

COUNTS = [(0, 0), (5, 0), (0, 5), (0, 7), (3, 3), (1, 9), (9, 1), (2, 8), (7, 12), (12, 7), (30, 45), (0, 1)]


@pytest.mark.parametrize(("a_only", "b_only"), COUNTS)
def test_two_sided_p_matches_the_binomial_test(a_only, b_only):
    n = a_only + b_only
    want = 1.0 if n == 0 else binomtest(a_only, n, 0.5, alternative="two-sided").pvalue
    got = honest.mcnemar_exact(a_only, b_only)
    assert got == pytest.approx(want, rel=1e-12)
    assert got == honest.mcnemar_exact(b_only, a_only)  # symmetric: which side won does not matter


def test_known_values_by_hand():
    assert honest.mcnemar_exact(0, 7) == pytest.approx(2 * 0.5**7)  # both tails, not one
    assert honest.mcnemar_exact(1, 9) == pytest.approx(2 * 11 / 1024)  # (C(10,0) + C(10,1)) / 2^10, twice
    assert honest.mcnemar_exact(3, 3) == 1.0


def _pairs(a_only: int, b_only: int, both: int, neither: int) -> pd.DataFrame:
    """Trials of one model, methods ``dvoc`` and ``oneshot`` on the same start points of three samples,
    with the given counts of each kind of pair."""
    kinds = [(1, 0)] * a_only + [(0, 1)] * b_only + [(1, 1)] * both + [(0, 0)] * neither
    rows = []
    for i, (ha, hb) in enumerate(kinds):
        for method, hit in (("dvoc", ha), ("oneshot", hb)):
            rows.append({"model": "m", "method": method, "task": f"S{i % 3}", "start_index": i, "rep": 0,
                         "valid": True, "simulated": True, "hit": bool(hit),
                         "final_dist_px": 5.0 if hit else 80.0})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("a_only", "b_only"), [(0, 7), (7, 0), (2, 9), (11, 4)])
def test_the_comparisons_report_the_two_sided_p(a_only, b_only):
    t = _pairs(a_only, b_only, both=5, neither=3)
    want = binomtest(a_only, a_only + b_only, 0.5).pvalue
    (row,) = compare.method_pairs(t, "hit", split=[]).to_dict("records")
    assert (row["a"], row["b"], row["a_only"], row["b_only"]) == ("dvoc", "oneshot", a_only, b_only)
    assert row["mcnemar_p"] == pytest.approx(want, rel=1e-12)


def test_one_mcnemar_in_the_package():
    names = [n for m in (compare, honest) for n in dir(m) if "mcnemar" in n.lower()]
    assert names == ["mcnemar_exact", "mcnemar_exact"]  # compare imports honest's; no second one
    assert compare.mcnemar_exact is honest.mcnemar_exact
