"""Repeats are samples (issue 16 item 2, "done when"): seeds 0 and 1 of the same paper sweep answer their
identical first inputs identically about as often as the records' repeat rate predicts, and end at the
identical point no more often than the authors' repeats did. A simulator that ignores the trial's seed fails
the same check. Needs the authors' records (``tests/support.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dvoc_bench import calibration as cal
from dvoc_bench.calibration.repeats import binomial_band, recorded_final_repeats, repeat_check
from tests.support import needs_upstream

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf" / "model"
REPEATS = 3
"""Repeats per start point of each seed's sweep: 90 pairs per model and method. (Chosen after a 30-pair run
put Gemini DVOC at 2 of 30 below its band, before the band carried the uncertainty of the records' rate;
the 90 pairs of the same sweep gave 22, inside.)"""


def test_binomial_band_edges() -> None:
    assert binomial_band(30, 0.3) == (4, 14)  # scipy.stats.binom.interval(0.95, 30, 0.3)
    assert binomial_band(90, 0.1) == (4, 15)
    assert binomial_band(10, 0.0) == (0, 0) and binomial_band(10, 1.0) == (10, 10)
    assert binomial_band(0, 0.5) == (0, 0) and binomial_band(1, 0.5) == (0, 1)
    lo, hi = binomial_band(1200, 0.3)  # large n: no float overflow (log space)
    assert 325 < lo < 360 < hi < 395 and lo + hi == pytest.approx(720, abs=2)


@pytest.fixture(scope="module")
def check(data: cal.CalibrationData, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    return repeat_check(
        data, cal.CALIBRATED_MODELS, tmp_path_factory.mktemp("rep"), models_dir=CONF, repeats=REPEATS
    )


@needs_upstream
def test_seeds_0_and_1_repeat_at_the_fitted_rate(check: pd.DataFrame) -> None:
    # a pair needs two parsed first answers: a rare prose reply (the fitted no-tool rate) drops one
    assert len(check) == 6 and check["pairs"].between(28 * REPEATS, 30 * REPEATS).all(), check.to_string()
    bad = check[~check["step0_inside"]]
    assert bad.empty, "SIMULATED identical step-0 replies outside the band:\n" + bad.to_string()


@needs_upstream
def test_identical_final_points_are_no_more_frequent_than_recorded(check: pd.DataFrame) -> None:
    bad = check[check["final_not_more_frequent"].eq(False)]
    assert bad.empty, "SIMULATED identical final points above the records':\n" + bad.to_string()
    # only Gemini's records hold repeats of one start point; the Gemma rows have nothing to compare with
    comparable = check[check["final_not_more_frequent"].notna()]
    assert set(comparable["model"]) == {"gemini-3.1-flash-lite"} and len(comparable) == 2
    assert (check.loc[check["final_not_more_frequent"].isna(), "recorded_final_pairs"] == 0).all()


@needs_upstream
def test_recorded_final_repeats_count_pairs_of_one_start(data: cal.CalibrationData) -> None:
    ks, ns = recorded_final_repeats(data, "gemini-3.1-flash-lite", "dvoc")
    assert len(ns) == 30 and set(ns) == {3} and 0 < sum(ks) < 90  # 30 (task, start) cells x 3 pairs
    assert recorded_final_repeats(data, "gemma-4-26b", "dvoc") == ([], [])


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
