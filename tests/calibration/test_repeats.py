"""Repeats are samples (issue 16 item 2, "done when"): seeds 0 and 1 of the same paper sweep answer their
identical first inputs identically about as often as the records' repeat rate predicts, and end at the
identical point no more often than the authors' repeats did. A simulator that ignores the trial's seed fails
the same check. Needs the authors' records (``tests/upstream.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dvoc_bench import calibration as cal
from dvoc_bench.calibration.repeats import binomial_band, recorded_final_repeats, repeat_check
from tests.upstream import needs_upstream

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf" / "model"
REPEATS = 3
"""Repeats per start point of each seed's sweep: 90 pairs per model and method (30 leave a band too wide
to tell, and one unlucky draw outside it)."""


def test_binomial_band_edges() -> None:
    assert binomial_band(30, 0.3) == (4, 14)  # scipy.stats.binom.interval(0.95, 30, 0.3)
    assert binomial_band(90, 0.1) == (4, 15)
    assert binomial_band(10, 0.0) == (0, 0) and binomial_band(10, 1.0) == (10, 10)
    assert binomial_band(0, 0.5) == (0, 0) and binomial_band(1, 0.5) == (0, 1)


@pytest.fixture(scope="module")
def check(data: cal.CalibrationData, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    return repeat_check(
        data, cal.CALIBRATED_MODELS, tmp_path_factory.mktemp("rep"), models_dir=CONF, repeats=REPEATS
    )


@needs_upstream
def test_seeds_0_and_1_repeat_at_the_fitted_rate(check: pd.DataFrame) -> None:
    assert len(check) == 6 and (check["pairs"] == 30 * REPEATS).all(), check.to_string()
    bad = check[~check["step0_inside"]]
    assert bad.empty, "SIMULATED identical step-0 replies outside the band:\n" + bad.to_string()


@needs_upstream
def test_identical_final_points_are_no_more_frequent_than_recorded(check: pd.DataFrame) -> None:
    bad = check[~check["final_not_more_frequent"]]
    assert bad.empty, "SIMULATED identical final points above the records':\n" + bad.to_string()


@needs_upstream
def test_recorded_final_repeats_count_pairs_of_one_start(data: cal.CalibrationData) -> None:
    k, n = recorded_final_repeats(data, "gemini-3.1-flash-lite", "dvoc")
    assert n == 90 and 0 < k < n  # 30 (task, start) cells x 3 pairs of 3 repeats


@needs_upstream
def test_a_simulator_that_always_repeats_itself_fails(data: cal.CalibrationData, tmp_path: Path) -> None:
    """The mutation: ``consistency`` 1 (the trial seed never matters) makes every pair identical."""
    models = tmp_path / "models"
    shutil.copytree(CONF, models)
    path = models / "sim-gemini-3.1-flash-lite.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["sim"]["consistency"] = {"offset": 1.0, "point": 1.0}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = repeat_check(data, ["gemini-3.1-flash-lite"], tmp_path / "runs", models_dir=models, repeats=1)
    dvoc = r.set_index("method").loc["dvoc"]
    assert dvoc["identical_step0"] == dvoc["pairs"] and not dvoc["step0_inside"], r.to_string()
