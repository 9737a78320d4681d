"""Clustered success-rate intervals (issue 16 item 2; the sample is the unit since issue 52 item 9)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dvoc_bench.analysis.clustered import cluster_keys, clustered_rate_interval, design_effect
from dvoc_bench.analysis.honest import wilson


def test_independent_trials_give_about_the_wilson_interval() -> None:
    rng = np.random.default_rng(0)
    y = rng.random(300) < 0.6
    lo, hi = clustered_rate_interval(y, np.arange(300))
    wlo, whi = wilson(int(y.sum()), 300)
    assert lo == pytest.approx(wlo, abs=0.02) and hi == pytest.approx(whi, abs=0.02)


def test_perfectly_repeated_clusters_count_once() -> None:
    """Ten clusters of three identical outcomes carry the information of ten trials, not thirty."""
    y = np.repeat([1, 1, 1, 0, 1, 0, 1, 1, 0, 1], 3)
    clusters = np.repeat(np.arange(10), 3)
    assert design_effect(y, clusters) == pytest.approx(3.0, rel=0.15)
    lo, hi = clustered_rate_interval(y, clusters)
    wlo, whi = wilson(7, 10)
    assert lo == pytest.approx(wlo, abs=0.03) and hi == pytest.approx(whi, abs=0.03)
    plo, phi = wilson(21, 30)
    assert hi - lo > 1.4 * (phi - plo)  # the plain interval over 30 trials is too narrow


def test_exact_edges_use_the_clusters() -> None:
    y = np.ones(30)
    lo, hi = clustered_rate_interval(y, np.repeat(np.arange(10), 3))
    assert hi == 1.0 and lo == pytest.approx(wilson(10, 10)[0])
    lo0, hi0 = clustered_rate_interval(np.zeros(30), np.repeat(np.arange(10), 3))
    assert lo0 == 0.0 and hi0 == pytest.approx(wilson(0, 10)[1])


def test_cluster_keys_are_the_sample() -> None:
    """The sample is the unit (issue 52 item 9): a task's start points and methods are one cluster."""
    t = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "task": ["S1"] * 4,
            "method": ["dvoc", "dvoc", "oneshot", "oneshot"],
            "protocol": ["paper"] * 4,
            "overlay": ["full"] * 4,
            "predict": ["relative"] * 4,
            "start_x": [10.0, 20.0, 10.0, 20.0],
            "start_y": [5.0, 5.0, 5.0, 5.0],
        }
    )
    t.loc[3, "task"] = "S2"
    k = cluster_keys(t)
    assert k[0] == k[1] == k[2]  # another start point, another method: the same sample
    assert k[3] != k[2]
    with pytest.raises(ValueError, match="task"):
        cluster_keys(t.drop(columns=["task"]))
