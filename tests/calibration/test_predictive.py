"""A validation that can fail (issue 16 item 5): the recorded success counts under ``protocols=[paper]`` on
S1-S6 (hit radius) must lie inside the simulator's 95 % predictive interval for the recorded number of
trials, and a broken profile must fail the same check. Needs the authors' records (fails without them in
CI, ``tests/support.py``). Out of sample: the fit reads step-level records only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dvoc_bench import calibration as cal
from dvoc_bench.calibration import predictive as pr
from tests.support import need_upstream, needs_upstream

pytestmark = [pytest.mark.e2e, needs_upstream]

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf" / "model"
INSTANCES, REPEATS = 2, 3
"""Simulated instances x repeats per cell (6 simulated trials per recorded cell)."""

KNOWN_GAPS: dict[tuple[str, str], str] = {}
"""(model, method) the committed profiles are known to miss, with the reason (strict xfail: a fix must
remove the entry)."""


@pytest.fixture(scope="module")
def main_check(data: cal.CalibrationData, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    sim = pr.simulate_instances(
        "paper_main",
        cal.CALIBRATED_MODELS,
        cal.SYNTHETIC_TASKS,
        tmp_path_factory.mktemp("pred"),
        repeats=REPEATS,
        instances=INSTANCES,
    )
    return pr.check_recorded(data, sim).set_index(["model", "method"])


CASES = [(m, k) for m in cal.CALIBRATED_MODELS for k in ("dvoc", "oneshot")]


@pytest.mark.parametrize(
    ("model", "method"),
    [
        pytest.param(m, k, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[(m, k)]))
        if (m, k) in KNOWN_GAPS
        else (m, k)
        for m, k in CASES
    ],
)
def test_recorded_count_is_inside_the_predictive_interval(
    main_check: pd.DataFrame, model: str, method: str
) -> None:
    r = main_check.loc[(model, method)]
    assert r["lo"] <= r["k"] <= r["hi"], (
        f"{model} {method}: recorded {r['k']} of {r['n']}, SIMULATED 95 % predictive interval "
        f"[{r['lo']}, {r['hi']}] (mean {r['sim_mean']:.1f})"
    )


@pytest.fixture(scope="module")
def published_check(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    need_upstream()
    root = tmp_path_factory.mktemp("pub")
    sims = {
        exp: pr.simulate_instances(
            exp,
            ["gemini-3.1-flash-lite"],
            cal.SYNTHETIC_TASKS,
            root,
            repeats=REPEATS,
            instances=INSTANCES,
        )
        for exp in ("ablation_predict", "ablation_overlay", "ablation_alpha")
    }
    return pr.check_published(sims)


KNOWN_OUTSIDE: dict[tuple[str, str], str] = {
    ("5.3", "undamped"): "since the simulated stop decision reads only its perception (no truth box), Table "
    "5.3 undamped 29/30 falls outside the simulator's 95 % interval [22, 28]: the simulator is not validated "
    "on that arm (cross-validation, docs/simulator.md, is the out-of-sample test)",
}
"""(table, condition) of the published ablation counts the committed profiles are known to miss, with the
reason: a strict xfail of that row alone (a fix must remove the entry; any other exception still fails)."""


def _published_case(p: pr.Published) -> object:
    key = (p.table, p.condition)
    why = KNOWN_OUTSIDE.get(key)
    marks = [] if why is None else [pytest.mark.xfail(strict=True, raises=AssertionError, reason=why)]
    return pytest.param(key, id=f"{p.table}-{p.condition}", marks=marks)


def test_the_known_outside_rows_are_published_rows() -> None:
    assert set(KNOWN_OUTSIDE) <= {(p.table, p.condition) for p in pr.PUBLISHED}


def test_every_published_ablation_count_is_checked_and_labelled(published_check: pd.DataFrame) -> None:
    """Tables 5.1 and 5.3 (out of sample: never fitting inputs) and 5.2 (in sample: it set the perception
    parameters), Gemini 3.1 FL: one row per published count, each with the count as published."""
    got = published_check
    assert len(got) == len(pr.PUBLISHED) == 8, got.to_string()
    assert set(got["table"]) == {"5.1", "5.2", "5.3"}
    assert set(got.loc[got["table"] == "5.2", "sample"]) == {"in-sample"}
    assert set(got.loc[got["table"] != "5.2", "sample"]) == {"out-of-sample"}
    for p in pr.PUBLISHED:
        (row,) = got[(got["table"] == p.table) & (got["condition"] == p.condition)].to_dict("records")
        assert (row["k"], row["n"]) == (p.k, p.n), row


@pytest.mark.parametrize("key", [_published_case(p) for p in pr.PUBLISHED])
def test_a_published_ablation_count_is_inside_the_predictive_interval(
    published_check: pd.DataFrame, key: tuple[str, str]
) -> None:
    """One published count (table, condition) inside the SIMULATED 95 % predictive interval for the
    published n."""
    table, condition = key
    (r,) = published_check[
        (published_check["table"] == table) & (published_check["condition"] == condition)
    ].to_dict("records")
    assert r["lo"] <= r["k"] <= r["hi"] and r["inside"], (
        f"Table {table} {condition}: published {r['k']} of {r['n']} ({r['sample']}), outside the SIMULATED "
        f"95 % predictive interval [{r['lo']}, {r['hi']}]"
    )


def test_a_broken_gain_fails_the_check(data: cal.CalibrationData, tmp_path: Path) -> None:
    """The mutation test: gain [-1, -1] (the model points away from the target) must fall outside."""
    doc = yaml.safe_load((CONF / "sim-gemma-4-26b.yaml").read_text())
    doc["sim"]["gain"] = [-1.0, -1.0]
    for c in doc["sim"].get("canvas") or []:
        c["gain"] = [-1.0, -1.0]
    models = tmp_path / "models"
    models.mkdir()
    (models / "sim-gemma-4-26b.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    sim = pr.simulate_instances(
        "paper_main",
        ["gemma-4-26b"],
        cal.SYNTHETIC_TASKS,
        tmp_path / "runs",
        repeats=1,
        instances=1,
        models_dir=models,
        extra=["methods=[dvoc]"],
    )
    r = pr.check_recorded(data, sim, models=["gemma-4-26b"]).iloc[0]
    assert not r["inside"] and r["hi"] < r["k"], r.to_dict()


def test_predictive_counts_follow_the_design() -> None:
    """Cells of one instance stay correlated: a model that always repeats itself gives all-or-nothing."""
    sim = pd.DataFrame(
        {
            "_cell": ["a"] * 6 + ["b"] * 6,
            "instance": [0, 0, 0, 1, 1, 1] * 2,
            "hit_radius": [1, 1, 1, 0, 0, 0] * 2,
            "trial_key": [f"k{i:02d}" for i in range(12)],
        }
    )
    counts = pr.predictive_counts(sim, {"a": 3, "b": 3}, n_draw=400, seed=1)
    assert set(np.unique(counts)) <= {0.0, 3.0, 6.0}
    assert 0.1 < (counts == 3.0).mean() < 0.9
