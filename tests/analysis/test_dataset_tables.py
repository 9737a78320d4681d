"""The dataset tables (issue 19): the rule decides, errors are misses, skipped trials are not counted, the
interval is the project's one, calls per success is calls over hits."""

import math

import pandas as pd

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
    assert (row["n"], row["hits"], row["rule"]) == (5, 3, "hit")  # the error is a miss, skipped not counted
    lo, hi = rate_interval(3, 5)
    assert math.isclose(row["accuracy"], 0.6) and (row["lo"], row["hi"]) == (lo, hi)
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
    assert by_type.loc["text", "n"] == 4 and by_type.loc["text", "hits"] == 2
    assert by_type.loc["icon", "n"] == 1 and by_type.loc["icon", "hits"] == 1
    no_hit = accuracy(trials().assign(hit=False), "hit")
    assert math.isnan(no_hit["calls_per_success"].iloc[0]) and no_hit["hi"].iloc[0] > 0
