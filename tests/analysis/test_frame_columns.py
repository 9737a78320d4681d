"""The frame a model answered in reaches the analysis: ``seen_w`` / ``seen_h`` / ``frame_rule`` /
``prompt_style`` are typed step columns (dvoc_bench/analysis/schema.py), loaded from a real run and carried
by the per-sample export's ``calls`` in both formats."""

from __future__ import annotations

import json

import pytest

from dvoc_bench.analysis import load_runs
from dvoc_bench.analysis.export import export, load_export
from dvoc_bench.analysis.loaders import flatten_step
from dvoc_bench.analysis.schema import INT, STEP_COLUMNS, STR
from tests.test_frame_families import SCRIPT, sweep


def test_the_frame_fields_are_typed_step_columns():
    assert {k: STEP_COLUMNS[k] for k in ("seen_w", "seen_h", "frame_rule", "prompt_style")} == {
        "seen_w": INT,
        "seen_h": INT,
        "frame_rule": STR,
        "prompt_style": STR,
    }
    row = flatten_step({"trial_key": "k", "seen_size": [1288, 728], "frame_rule": "pixel x-y"})
    assert (row["seen_w"], row["seen_h"], row["frame_rule"]) == (1288, 728, "pixel x-y")
    assert "seen_size" not in row  # flattened, not kept as JSON text


@pytest.mark.e2e
def test_a_runs_frames_reach_the_steps_frame_and_the_export(tmp_path):
    name = "vllm-holo1.5-7b"  # pixels of smart_resize(28, max 2560*1440): 3840x2160 -> 2548x1428 (by hand)
    sweep(tmp_path, {name: SCRIPT[name]})
    runs = load_runs(tmp_path / "run", cache=False)
    s = runs.steps.sort_values("task").reset_index(drop=True)
    assert list(s["task"]) == ["s1280", "s1920", "s3840"]
    assert [(int(w), int(h)) for w, h in zip(s["seen_w"], s["seen_h"], strict=True)] == [
        (1288, 728),
        (1932, 1092),
        (2548, 1428),
    ]
    assert str(s["seen_w"].dtype) == "Int64" and str(s["prompt_style"].dtype) == "string"
    assert set(s["prompt_style"]) == {"holo"}
    assert all(r.startswith("pixel x-y, smart_resize(factor=28") for r in s["frame_rule"])
    for suffix in (".jsonl", ".parquet"):
        path = export(runs, tmp_path / f"export{suffix}")
        if suffix == ".jsonl":
            calls = [json.loads(line)["calls"][0] for line in path.read_text(encoding="utf-8").splitlines()]
            assert {(c["seen_w"], c["seen_h"]) for c in calls} == {(1288, 728), (1932, 1092), (2548, 1428)}
            assert {c["prompt_style"] for c in calls} == {"holo"}
        back = load_export(path).steps.sort_values("task").reset_index(drop=True)
        assert list(back["seen_h"]) == [728, 1092, 1428] and list(back["frame_rule"]) == list(s["frame_rule"])
