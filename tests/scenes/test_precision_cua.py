"""precision-cua-bench as a task source (issue 50), on written lines at its size (1280x1024): boxes and
instructions load exactly, label type / application / theme / size class reach the record, an empty box
or a line that is not JSON fails its own trials with one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes.dataset_source import spec_from_options
from dvoc_bench.scenes.datasets import DatasetSettings
from dvoc_bench.scenes.precision_cua import PrecisionScenes


def line(box, text="Click line 1", label="vscode_extn_line", image="shot.png") -> str:
    conv = [{"from": "human", "value": text}, {"from": "gpt", "value": "(1,1)"}]
    return json.dumps({"image": image, "conversations": conv, "bbox": box, "image_size": [1280, 1024],
                       "label_type": label})  # fmt: skip


def fixture(root: Path) -> Path:
    (root / "dataset" / "images").mkdir(parents=True)
    Image.fromarray(np.full((1024, 1280, 3), 30, np.uint8)).save(root / "dataset" / "images" / "shot.png")
    (root / "dataset" / "vscode_dark").mkdir()
    (root / "dataset" / "cursor_light").mkdir()
    (root / "dataset" / "vscode_dark" / "combined_data.jsonl").write_text(
        "\n".join([
            line([267.1875, 89.84375, 341.40625, 108.3984375]),
            line([309.375, 164.0625, 310.9375, 182.6171875], "Caret before r", "vscode_extn"),
        ])
    )
    (root / "dataset" / "cursor_light" / "combined_data.jsonl").write_text(
        "\n".join([line([331.25, 89.84375, 0.0, 108.3984375]), "{not json"])
    )
    return root


def test_targets_load_exactly_with_their_metadata(tmp_path):
    settings = DatasetSettings(format="precision_cua", root=str(fixture(tmp_path)))
    src = PrecisionScenes(spec_from_options(settings))
    assert src.ids() == ["cursor_light:0", "cursor_light:1", "vscode_dark:0", "vscode_dark:1"]
    snap = src.snapshot("vscode_dark:1")
    assert snap.target_box.as_list() == [309.375, 164.0625, 310.9375, 182.6171875]
    assert snap.instruction == "Caret before r" and snap.size.as_list() == [1280, 1024]
    meta = src.meta("vscode_dark:1")
    assert meta["category"] == "vscode_extn" and meta["application"] == "vscode"
    assert meta["file"] == "vscode_dark"
    assert meta["size_class"] == "<8 px" and src.meta("vscode_dark:0")["size_class"] == "8-24 px"


def test_a_sweep_fails_only_the_unusable_lines(tmp_path):
    root = fixture(tmp_path)
    setup = quick_setup(["dataset=precision_cua", f"dataset.root={root}", "models=[sim-ideal]",
                         "methods=[oneshot]", "run.quiet=true"])  # fmt: skip
    by = {t["task"]: t for t in run_sweep(setup, tmp_path / "run").trials}
    assert by["vscode_dark:0"]["status"] == "ok" and by["vscode_dark:0"]["hit"] is True
    assert by["vscode_dark:1"]["hit"] is True  # a 1.6 px wide caret target, hit by the ideal answer
    empty, broken = by["cursor_light:0"], by["cursor_light:1"]
    assert empty["error_class"] == "scene" and empty["error"] == (
        "sample cursor_light:0 (cursor_light/combined_data.jsonl line 1): bbox [331.25, 89.84375, 0.0, "
        "108.3984375] is empty (x1 <= x0 or y1 <= y0)"
    )
    assert broken["error_class"] == "scene" and "line 2): not valid JSON" in broken["error"]
    assert "line 1" not in broken["error"]  # the file's line only, not json's "line 1" of the line alone
