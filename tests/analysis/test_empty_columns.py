"""Issue 51, item 7 (memory bounded by what a row fills): an import's frames hold the ~120 schema columns
its rows leave out as views of one null (no memory), the report filters them without copying them and
never turns them into real columns, and every table reads them as the plain full columns of nulls would
read: the report on the import is the report on the same frames made dense."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dvoc_bench.analysis import report as report_mod
from dvoc_bench.analysis.export import load_rows
from dvoc_bench.analysis.foreign import load_import
from dvoc_bench.analysis.schema import (
    STEP_COLUMNS,
    TRIAL_COLUMNS,
    Runs,
    _is_empty_view,
    empty_column,
    held_bytes,
    keep_rows,
)
from tests.analysis.test_import_columns import ANN, OMNI, _one_call_rows, rows
from tests.support import need_thirdparty


def _filled(frame: pd.DataFrame) -> list[str]:
    """The columns some row fills (a plain boolean column: some row True)."""
    return [c for c, col in frame.items() if (col.any() if col.dtype == bool else col.notna().any())]


def _falses(frame: pd.DataFrame) -> int:
    """Columns that may hold a byte a row though no row fills them: a plain boolean with no row True (a
    row may have given False), a nullable integer or boolean with every value null (its mask)."""
    masked = (pd.Int64Dtype(), pd.BooleanDtype())
    return sum(1 for c, col in frame.items() if (col.dtype == bool and not col.any())
               or (col.dtype in masked and col.isna().all()))  # fmt: skip


def _bytes(frame: pd.DataFrame) -> int:
    """pandas' own count of the frame's column bytes (texts as references)."""
    return int(frame.memory_usage(deep=False, index=False).sum())


@pytest.mark.parametrize("dtype", ["float64", "Int64", "bool", "boolean", "string"])
def test_an_empty_column_is_the_full_column_of_nulls_in_no_memory(dtype):
    n = 1000
    view = pd.Series(empty_column(dtype, n))
    full = pd.Series([None] * n, dtype=object)
    full = pd.Series(False, index=full.index) if dtype == "bool" else full.astype(dtype)
    pd.testing.assert_series_equal(view, full, check_exact=True)
    masked = dtype in ("Int64", "boolean")  # a mask byte a row over values never touched
    assert held_bytes(view.to_frame()) == (n if masked else 0) < _bytes(full.to_frame())
    grouped = pd.DataFrame({"g": np.arange(n) % 3, "c": view}).groupby("g")["c"]
    pd.testing.assert_series_equal(
        grouped.max(), pd.DataFrame({"g": np.arange(n) % 3, "c": full}).groupby("g")["c"].max()
    )
    value = {"float64": 1.5, "Int64": 1, "bool": True, "boolean": True, "string": "x"}[dtype]
    if not masked:
        with pytest.raises(ValueError, match="read-only"):  # a write never lands in the shared null
            view.iloc[0] = value
    assert view.isna().all() or dtype == "bool" and not view.any()


def test_an_import_holds_only_the_columns_its_rows_fill(tmp_path):
    n = 2000
    runs = load_rows(tmp_path / "x.jsonl", _one_call_rows(n))
    for frame, schema in ((runs.trials, TRIAL_COLUMNS), (runs.steps, STEP_COLUMNS)):
        assert list(frame.columns) == list(schema)  # every column of the schema is there ...
        filled = _filled(frame)
        assert 10 < len(filled) < len(schema) // 2
        # ... and what the frame holds is what pandas counts for the filled columns alone
        assert _bytes(frame[filled]) <= held_bytes(frame) <= _bytes(frame[filled]) + n * _falses(frame)
        assert held_bytes(frame) < 0.35 * _bytes(frame)


def _views(frame: pd.DataFrame) -> set[str]:
    """The columns that hold no memory."""
    return {c for c, col in frame.items() if held_bytes(col.to_frame()) == 0}


def _masks(frame: pd.DataFrame) -> list[pd.Series]:
    valid = frame["valid"] if "valid" in frame else frame["kind"] == "click"
    some = pd.Series(np.arange(len(frame)) % 3 == 1, index=frame.index)
    none = pd.Series(False, index=frame.index)
    return [valid, some, none, ~none, frame["has_task" if "has_task" in frame else "hit_box"]]  # last: NAs


def test_keep_rows_is_the_plain_filter_and_keeps_the_empty_columns_empty(tmp_path):
    runs = load_rows(tmp_path / "rows.jsonl", rows())
    for frame in (runs.trials, runs.steps):
        empty = _views(frame)
        assert len(empty) > 40
        for mask in _masks(frame):
            got = keep_rows(frame, mask)
            want = frame[mask.fillna(False).astype(bool)]
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            assert _views(got) >= (empty if len(got) > 1 else set())
            got["new"] = 1  # a frame of its own: setting a column leaves the import's frame alone
        assert "new" not in frame.columns


def test_keep_rows_on_a_real_log_is_the_plain_filter():
    runs = load_import(need_thirdparty(OMNI), "omniparser", need_thirdparty(ANN))
    t = runs.trials
    assert len(t) >= 1581
    for mask in (t["hit"], t["task"].str.contains("excel").fillna(False), t["paper_success"]):
        want = t[mask.fillna(False).astype(bool)]
        pd.testing.assert_frame_equal(keep_rows(t, mask), want, check_exact=True)


def _dense(runs: Runs) -> Runs:
    return Runs(runs.trials.copy(deep=True), runs.steps.copy(deep=True), list(runs.sources))


@pytest.mark.e2e
def test_the_report_on_an_import_is_the_report_on_its_dense_frames(tmp_path, monkeypatch):
    path = tmp_path / "import.jsonl"
    lines = [json.dumps(r) for r in _one_call_rows(300)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded: list[Runs] = []
    real = report_mod.load_all

    def keep(*a, **k):
        loaded.append(real(*a, **k))
        return loaded[-1]

    monkeypatch.setattr(report_mod, "load_all", keep)
    text, _ = report_mod.build_report([], [], out=tmp_path / "views", figures=False, imports=[str(path)])
    runs = loaded[0]
    # no table wrote into the import's frames or made their empty columns real (a consolidation would)
    for frame in (runs.trials, runs.steps):
        assert held_bytes(frame) <= _bytes(frame[_filled(frame)]) + len(frame) * _falses(frame)
    dense = _dense(runs)
    assert not any(_is_empty_view(c) for _, c in dense.trials.items())  # dense: no view of one null
    monkeypatch.setattr(report_mod, "load_all", lambda *a, **k: dense)
    want, _ = report_mod.build_report([], [], out=tmp_path / "dense", figures=False, imports=[str(path)])
    assert text.replace(str(tmp_path / "views"), "OUT") == want.replace(str(tmp_path / "dense"), "OUT")
    assert "| their-model | oneshot |" in text and Path(tmp_path / "views" / "report.md").is_file()


def test_keep_rows_aligns_a_mask_of_another_order_and_refuses_a_short_one():
    frame = pd.DataFrame({"a": range(6), "e": empty_column("float64", 6)}, copy=False)
    mask = pd.Series([True, False, True, False, False, True])[::-1]  # the same labels, reversed
    pd.testing.assert_frame_equal(keep_rows(frame, mask), frame[mask])
    with pytest.raises(ValueError, match="a mask of 1 rows for a frame of 6"):
        keep_rows(frame, np.array([True]))
