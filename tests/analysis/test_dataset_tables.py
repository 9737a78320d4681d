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


def test_category_by_task_kind_gives_a_drags_ends_their_own_rows_counted_by_hand():
    """``kind_rows``: Canvas has a click (hit) and two drags (start and end hit; start hit, end missed);
    Text a drag that ended in an error (a miss at both ends although its fields say hit) and a multi-point
    sample of two points (one hit). Counted by hand: Canvas click 1/1, drag both 1/2, from 2/2, to 1/2;
    Text drag both 0/1, from 0/1, to 0/1, multi 1/2 from one sample."""
    from dvoc_bench.analysis.datasets import kind_rows

    base = {"model": "m", "simulated": False, "method": "som", "scene_kind": "dataset", "status": "ok"}
    rows = [
        {**base, "task": "c0", "sample_file": "c0", "sample_category": "Canvas", "sample_task_kind": "click",
         "hit": True},
        {**base, "task": "c1", "sample_file": "c1", "sample_category": "Canvas", "sample_task_kind": "drag",
         "hit": True, "drag_from_hit": True, "drag_to_hit": True},
        {**base, "task": "c2", "sample_file": "c2", "sample_category": "Canvas", "sample_task_kind": "drag",
         "hit": False, "drag_from_hit": True, "drag_to_hit": False},
        {**base, "status": "error", "task": "t0", "sample_file": "t0", "sample_category": "Text",
         "sample_task_kind": "drag", "hit": True, "drag_from_hit": True, "drag_to_hit": True},
        {**base, "task": "t1:1", "sample_file": "t1", "sample_category": "Text", "sample_task_kind": "multi",
         "hit": True},
        {**base, "task": "t1:2", "sample_file": "t1", "sample_category": "Text", "sample_task_kind": "multi",
         "hit": False},
    ]  # fmt: skip
    got = kind_rows(pd.DataFrame(rows), "hit")
    table = {(r["category"], r["kind"]): (r["samples"], r["trials"], r["hits"]) for _, r in got.iterrows()}
    assert table == {
        ("Canvas", "click"): (1, 1, 1), ("Canvas", "drag: both"): (2, 2, 1),
        ("Canvas", "drag: from"): (2, 2, 2), ("Canvas", "drag: to"): (2, 2, 1),
        ("Text", "drag: both"): (1, 1, 0), ("Text", "drag: from"): (1, 1, 0),
        ("Text", "drag: to"): (1, 1, 0), ("Text", "multi"): (1, 2, 1),
    }  # fmt: skip
    assert list(got["kind"][got["category"] == "Canvas"]) == ["click", "drag: both", "drag: from", "drag: to"]
    to = got[(got["category"] == "Canvas") & (got["kind"] == "drag: to")].iloc[0]
    two_samples = rate_interval(1, 2, clusters=([1.0, 0.0], [1.0, 1.0]))  # c1 hit its drop, c2 did not
    assert (to["lo"], to["hi"]) == pytest.approx(two_samples)
    multi = got[got["kind"] == "multi"].iloc[0]  # two points of one sample: one cluster
    assert (multi["lo"], multi["hi"]) == pytest.approx(rate_interval(1, 2, clusters=([1.0], [2.0])))


def test_set_of_marks_picks_per_end_counted_by_hand():
    """``som_picks``: two SoM drags; the start's pick valid and on its box in both, the end's valid in one
    and on its box in none; a one-point SoM trial (no ``drop_*``, as an old record) is not counted."""
    from dvoc_bench.analysis.datasets import som_picks

    base = {"model": "m", "simulated": False, "method": "som", "scene_kind": "dataset", "status": "ok",
            "som_target_detected": True, "som_chosen_valid": True, "som_hit": True}  # fmt: skip
    rows = [
        {**base, "task": "d0", "sample_file": "d0", "som_drop_target_detected": True,
         "som_drop_chosen_valid": True, "som_drop_hit": False},
        {**base, "task": "d1", "sample_file": "d1", "som_drop_target_detected": False,
         "som_drop_chosen_valid": False, "som_drop_hit": None},
        {**base, "task": "c0", "sample_file": "c0", "som_drop_target_detected": None,
         "som_drop_chosen_valid": None, "som_drop_hit": None},
    ]  # fmt: skip
    (r,) = som_picks(pd.DataFrame(rows)).to_dict("records")
    assert (r["drags"], r["trials"]) == (2, 2)
    assert (r["from_marked"], r["from_valid"], r["from_on_box"]) == (1.0, 1.0, 1.0)
    assert (r["to_marked"], r["to_valid"], r["to_on_box"]) == (0.5, 0.5, 0.0)
