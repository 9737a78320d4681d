"""The paper's ablation counts the predictive check compares with (``calibration.predictive.PUBLISHED``)
are the authors' records, counted here by plain JSON reading of their ablation files (each trial's
``success``, its condition the last part of its ``trial_id``). Fast tier: a wrong (or zeroed) count fails
here, not only in the end-to-end predictive check. Needs the authors' records (tests/support.py)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from dvoc_bench.calibration.predictive import PUBLISHED, Published
from tests.support import RECORDS, need_upstream

FILES = {"5.1": "predict_ablation.json", "5.2": "ablation_results.json", "5.3": "alpha_ablation.json"}
"""The authors' file of each table."""
SUFFIX = {"decay": "default", "constant": "constant05", "crosshair": "only"}
"""The authors' name of a condition, where it is not ours."""


def _recount(p: Published) -> tuple[int, int]:
    path = need_upstream() / RECORDS / FILES[p.table]
    trials = json.loads(path.read_text(encoding="utf-8"))
    mine = [
        t for t in trials
        if t["model_key"] == "gemini-3.1-flash-lite"
        and t["trial_id"].rsplit("-", 1)[1] == SUFFIX.get(p.condition, p.condition)
    ]  # fmt: skip
    assert {t["task_id"] for t in mine} <= set(p.tasks), p
    hits = Counter(bool(t["success"]) for t in mine)
    return hits[True], len(mine)


@pytest.mark.parametrize("p", PUBLISHED, ids=lambda p: f"{p.table}-{p.condition}")
def test_a_published_ablation_count_is_the_authors_record(p: Published) -> None:
    assert (p.k, p.n) == _recount(p)


def test_every_condition_of_the_ablation_files_is_published() -> None:
    for table, name in FILES.items():
        trials = json.loads((need_upstream() / RECORDS / name).read_text(encoding="utf-8"))
        conds = {t["trial_id"].rsplit("-", 1)[1] for t in trials}
        ours = {SUFFIX.get(p.condition, p.condition) for p in PUBLISHED if p.table == table}
        assert conds == ours, (table, conds, ours)
