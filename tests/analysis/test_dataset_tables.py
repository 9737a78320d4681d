"""The dataset tables (issue 19): the rule decides, errors are misses, skipped trials are not counted, the
interval is the project's one, calls per success is calls over hits."""

import math

import pandas as pd
import pytest

from dvoc_bench.analysis.datasets import accuracy, tables
from dvoc_bench.analysis.intervals import rate_interval

CASES = [  # status, hit, hit_radius, calls, ui type
    ("ok", True, True, 2, "text"),
    ("ok", True, True, 4, "text"),
    ("ok", False, True, 3, "text"),  # only within the paper's radius
    ("error", False, False, 1, "text"),  # an error: a miss
    ("ok", True, True, 5, "icon"),
    ("skipped", False, False, 0, "icon"),  # not counted
]


def trials() -> pd.DataFrame:
    rows = []
    for i, (status, hit, radius, calls, ui) in enumerate(CASES):
        row = dict(task=f"s{i}", scene_kind="dataset", status=status, model="m", simulated=True)
        row.update(method="dvoc", hit=hit, hit_radius=radius, within_eps=hit, model_calls=calls)
        row.update(sample_ui_type=ui, sample_group="CAD" if i < 3 else "Dev", sample_data_source=None)
        rows.append({**row, "sample_application": None, "sample_platform": None})
    rows.append({**rows[0], "task": "S1", "scene_kind": "synthetic"})  # not a dataset trial: left out
    return pd.DataFrame(rows)


def test_rule_errors_and_calls_per_success():
    t = trials()
    (row,) = accuracy(t, "hit").to_dict("records")
    assert (row["samples"], row["trials"], row["hits"], row["rule"]) == (5, 5, 3, "hit")  # error: a miss
    lo, hi = rate_interval(3, 5)  # one trial per sample: at least as wide as the plain interval
    assert math.isclose(row["accuracy"], 0.6) and row["lo"] <= lo <= 0.6 <= hi <= row["hi"]
    assert math.isclose(row["calls_per_success"], (2 + 4 + 3 + 1 + 5) / 3)
    (radius,) = accuracy(t, "hit_radius").to_dict("records")
    assert radius["hits"] == 4 and radius["rule"] == "hit_radius"


def test_splits_present_only_when_the_data_has_them():
    names = [name for name, _ in tables(trials())]
    assert names == [
        "Overall — rule `hit`",
        "By text vs icon — rule `hit`",
        "By group (ScreenSpot-Pro) — rule `hit`",
    ]
    by_type = accuracy(trials(), "hit", "ui_type").set_index("ui_type")
    assert by_type.loc["text", "trials"] == 4 and by_type.loc["text", "hits"] == 2
    assert by_type.loc["icon", "trials"] == 1 and by_type.loc["icon", "hits"] == 1
    no_hit = accuracy(trials().assign(hit=False), "hit")
    assert math.isnan(no_hit["calls_per_success"].iloc[0]) and no_hit["hi"].iloc[0] > 0


def test_repeats_of_a_sample_count_once_toward_the_interval():
    """7 samples run 5 times each (the default start points) give the interval of 7 samples, not of 35
    independent trials: the sample is the unit."""
    one = dict(scene_kind="dataset", status="ok", model="m", simulated=True, method="oneshot", hit=True,
               hit_radius=True, within_eps=True, model_calls=1)  # fmt: skip
    rows = [{**one, "task": f"s{i}"} for i in range(7) for _ in range(5)]
    (row,) = accuracy(pd.DataFrame(rows), "hit").to_dict("records")
    assert (row["samples"], row["trials"], row["hits"]) == (7, 35, 35)
    assert (row["lo"], row["hi"]) == pytest.approx(rate_interval(7, 7))
    assert row["lo"] < rate_interval(35, 35)[0]
    mixed = pd.DataFrame(rows).assign(hit=[i % 5 != 0 for i in range(35)])  # a miss in every sample
    (m,) = accuracy(mixed, "hit").to_dict("records")
    assert m["hi"] - m["lo"] > rate_interval(28, 35)[1] - rate_interval(28, 35)[0] - 1e-9


def test_drags_split_by_category_count_each_end_by_hand():
    """``drag_success(by="category")``: per category the drags, both-ends hits and each end's share, as
    counted by hand from three drags (two Canvas, one Text)."""
    import pandas as pd

    from dvoc_bench.analysis.datasets import drag_success

    rows = []
    for i, (cat, start, end) in enumerate(
        [("Canvas", True, True), ("Canvas", True, False), ("Text", False, True)]
    ):
        rows.append({"model": "m", "simulated": False, "method": "oneshot", "scene_kind": "dataset",
                     "status": "ok", "task": f"s{i}", "sample_file": f"s{i}", "sample_category": cat,
                     "hit": start and end, "drag_from_hit": start, "drag_to_hit": end})  # fmt: skip
    got = drag_success(pd.DataFrame(rows), "hit", "category").set_index("category")
    assert got.loc["Canvas", ["drags", "both"]].tolist() == [2, 1]
    assert got.loc["Canvas", ["from_hit", "to_hit"]].tolist() == [1.0, 0.5]
    assert got.loc["Text", ["drags", "both", "from_hit", "to_hit"]].tolist() == [1, 0, 0.0, 1.0]
