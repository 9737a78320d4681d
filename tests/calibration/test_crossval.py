"""Issue 34 items 1, 2 and 5: the leave-one-out cross-validation never lets a fold's fit see the held-out
unit, and running it twice gives the same numbers. Needs the authors' records."""

from __future__ import annotations

from pathlib import Path

import pytest

from dvoc_bench.calibration import crossval as cv
from tests.support import need_upstream, needs_upstream

pytestmark = [pytest.mark.e2e, needs_upstream]

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"


@pytest.fixture(scope="module")
def records() -> cv.CalibrationData:
    # a module-scoped fixture runs before the function-scoped `upstream` one: skip here, before reading
    return cv.load_all_records(need_upstream())


def test_every_record_is_loaded_and_every_unit_is_held_out(records: cv.CalibrationData) -> None:
    t = records.runs.trials
    assert set(t["cv_source"]) == {"main", "predict", "overlay", "alpha"}
    names = [u.name for u in cv.units(records)]
    assert len(names) == 8 + 6 + 6, names
    assert {"alpha=constant", "overlay=none", "predict=absolute", "gemma-4-26b/dvoc", "S2"} <= set(names)
    s2 = next(u for u in cv.units(records) if u.name == "S2")
    assert set(t[t["task"] == "S2"]["trial_key"]) & set(
        t[t["model"].isin(cv.CALIBRATED_MODELS)]["trial_key"]
    ) == set(s2.held_out)


def test_the_fit_never_sees_its_held_out_fold(records: cv.CalibrationData, tmp_path: Path) -> None:
    """The fit receives the training records only: each call made during a fold must hold none of the
    fold's trials, neither as trials nor as steps (passing ``data`` instead of the fold's training records
    fails here)."""
    calls: list[tuple[set[str], set[str]]] = []
    folds_seen: list[tuple[int, cv.Fold]] = []

    def fit(train: cv.CalibrationData, model: str) -> str:
        calls.append((set(train.runs.trials["trial_key"]), set(train.runs.steps["trial_key"])))
        return (CONF / f"{cv.sim_name(model)}.yaml").read_text(encoding="utf-8")

    folds, _ = cv.cross_validate(
        records,
        tmp_path,
        models=("gemma-4-26b",),
        only=["gemma-4-26b/dvoc", "S4"],
        fit=fit,
        instances=1,
        repeats=1,
        n_draw=200,
        progress=lambda f: folds_seen.append((len(calls), f)),
    )
    assert [f.unit.name for f in folds] == ["gemma-4-26b/dvoc", "S4"]
    start = 1  # call 0: the fit on every record (the models a fold does not touch keep it)
    for end, f in folds_seen:
        assert end > start, f"{f.unit.name}: no refit"
        for trial_keys, step_keys in calls[start:end]:
            assert not trial_keys & f.unit.held_out, f"{f.unit.name}: held-out trials reached the fit"
            assert not step_keys & f.unit.held_out, f"{f.unit.name}: held-out steps reached the fit"
        start = end


def test_twice_the_same_numbers(records: cv.CalibrationData, tmp_path: Path) -> None:
    """A fresh run directory each time: the same records, profile settings and seed give the same table."""
    kw = {
        "models": ("gemma-4-26b",),
        "only": ["S2"],
        "settings": cv.FitSettings(refine_rounds=0),
        "instances": 1,
        "repeats": 2,
        "n_draw": 500,
    }
    a, _ = cv.cross_validate(records, tmp_path / "a", **kw)
    b, _ = cv.cross_validate(records, tmp_path / "b", **kw)
    assert cv.cv_table(a).to_dict("records") == cv.cv_table(b).to_dict("records")
    assert a[0].sim == b[0].sim
