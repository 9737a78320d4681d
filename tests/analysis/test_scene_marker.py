"""Issue 34 item 3: a per-task table of a simulated model carries ``per-scene not validated`` on exactly
the scenes whose cross-validation p-value (written by ``calibrate --cross-validate``) is below 0.05, and
never on a real model's rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dvoc_bench.analysis import honest
from dvoc_bench.analysis.markdown import summary_view
from dvoc_bench.core import scene_check


def _trials() -> pd.DataFrame:
    rows = []
    for model, simulated in (("sim-x", True), ("real-y", False)):
        for task in ("S1", "S2", "S3", "S4"):
            for i in range(3):
                rows.append(
                    {
                        "model": model, "method": "dvoc", "task": task, "protocol": "paper",
                        "overlay": "full", "predict": "relative", "start_x": float(i), "start_y": 0.0,
                        "status": "ok",
                        "valid": True, "hit": i % 2 == 0, "within_eps": True, "hit_radius": True,
                        "final_dist_px": 3.0, "iterations": 2, "model_calls": 2, "tokens_in": 0,
                        "tokens_out": 0, "cost_usd": 0.0, "simulated": simulated,
                        "simulated_assumptions": "", "target_inferred": False,
                    }
                )  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture
def pvalues(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "scene_validation.json"
    p = {"S1": 0.4, "S2": 0.0, "S3": 0.05, "S4": 0.012, "S5": 0.9, "S6": 0.2}
    scene_check.write(path, p, records="test")
    monkeypatch.setattr(scene_check, "DATA", path)
    return path


def test_the_marker_sits_on_exactly_the_rejected_scenes_of_simulated_rows(pvalues: Path) -> None:
    view = summary_view(honest.per_task(_trials(), "hit", n_boot=20))
    marked = {(r["task"], r["model"].split(" ")[0]) for r in view.to_dict("records") if r["scene_check"]}
    assert marked == {("S2", "sim-x"), ("S4", "sim-x")}
    assert set(view.loc[view["scene_check"] != "", "scene_check"]) == {scene_check.MARKER}


def test_no_column_without_a_simulated_row(pvalues: Path) -> None:
    t = _trials()
    assert "scene_check" not in honest.per_task(t[~t["simulated"]], "hit", n_boot=20).columns


def test_the_shipped_file_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = scene_check.load()
    if not doc:
        pytest.fail(f"{scene_check.DATA} missing: run python -m dvoc_bench.calibrate --cross-validate")
    want = {s for s, p in doc["scene_p"].items() if p < scene_check.ALPHA}
    assert scene_check.unvalidated() == want
    view = honest.per_task(_trials(), "hit", n_boot=20)
    got = {t for t, m, c in zip(view["task"], view["model"], view["scene_check"], strict=True) if c}
    assert got == want & {"S1", "S2", "S3", "S4"}
