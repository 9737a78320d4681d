"""``python -m dvoc_bench.bench recall``: detector recall against the DOM of real rendered pages."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from dvoc_bench import bench
from dvoc_bench.benchmarks.recall import match_count, target_marked_share, truth_boxes
from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.core.geometry import box_iou as iou
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.detect.types import Detection, TimedDetector
from dvoc_bench.draw.render import decode_png
from tests.support import chromium_or_skip, import_or_need

pytestmark = pytest.mark.e2e

PAGE = """<!doctype html><html><body style="margin:0;background:#fff;font:16px sans-serif">
<button style="position:absolute;left:100px;top:100px;width:200px;height:60px;background:#1f6feb;color:#fff;
  border:0">Save</button>
<a href="#x" style="position:absolute;left:400px;top:100px;width:200px;height:60px;display:block;
  background:#222;color:#fff">Open</a>
<input style="position:absolute;left:100px;top:300px;width:400px;height:40px;border:2px solid #333"
  placeholder="Name">
<div style="position:absolute;left:700px;top:400px;width:200px;height:100px;background:#ccc">
  Not a control</div>
</body></html>
"""


def test_iou_and_one_to_one_matching():
    a = Box(0, 0, 10, 10)
    assert iou(a, a) == 1.0 and iou(a, Box(5, 0, 15, 10)) == pytest.approx(50 / 150)
    assert iou(a, Box(10, 0, 20, 10)) == 0.0  # touching edges share no area
    truth = [Box(0, 0, 10, 10), Box(100, 0, 110, 10)]
    # a duplicate box on the first element counts once; a half-overlapping box (IoU 1/3) does not count
    assert match_count(truth, [Box(0, 0, 10, 10), Box(0, 0, 10, 9), Box(105, 0, 115, 10)]) == 1
    assert match_count(truth, [Box(1, 0, 11, 10), Box(100, 1, 110, 11)]) == 2
    assert match_count([], [a]) == 0 and match_count(truth, []) == 0
    nested = [Box(0, 0, 10, 10), Box(0, 0, 10, 12)]  # a link inside a button: one mark fits both
    assert iou(nested[0], Box(0, 0, 10, 11)) > 0.5 and iou(nested[1], Box(0, 0, 10, 11)) > 0.5
    assert match_count(nested, [Box(0, 0, 10, 11)]) == 1  # one mark matches one element


def test_truth_is_the_interactive_dom_elements_as_continuous_boxes():
    els = (
        Element("save", "Save", Box(10, 20, 59, 39), role="button"),
        Element("card", "Card", Box(0, 0, 99, 99), role="panel"),  # a non-interactive target
    )
    truth = SceneTruth("P", Size(200, 100), "x", "card", Box(0, 0, 99, 99), els)
    snap = Snapshot(truth, np.zeros((100, 200, 3), dtype=np.uint8), "0")
    assert truth_boxes(snap) == [Box(10, 20, 60, 40)]  # pixels 10..59 are [10, 60)


class _Fixed(TimedDetector):
    backend = "fixed"

    def __init__(self, boxes):
        self.boxes = boxes

    def _detect(self, image):
        return [Detection(b, 0.9) for b in self.boxes], None


def test_dataset_share_of_targets_marked_from_image_and_box_pairs():
    img = np.zeros((100, 200, 3), dtype=np.uint8)
    det = _Fixed([Box(10, 10, 50, 30), Box(0, 0, 200, 100)])  # the second covers the screen: not a mark
    items = [(img, Box(20, 15, 40, 25)), (img, Box(120, 60, 150, 80)), (img, Box(45, 25, 70, 40))]
    assert target_marked_share(det, items) == (1, 3)  # the third's centre (57.5, 32.5) is outside the mark
    assert target_marked_share(det, []) == (0, 0)
    assert target_marked_share(det, items[1:2], max_area_frac=1.0) == (1, 1)


@pytest.fixture(scope="module")
def chromium():
    chromium_or_skip()


def _rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return {(r["page"], r["detector"]): r for r in csv.DictReader(f)}


def test_recall_on_w_tasks_and_a_given_page(chromium, tmp_path, capsys):
    page = tmp_path / "controls.html"
    page.write_text(PAGE, encoding="utf-8")
    out = tmp_path / "recall.csv"
    frames = tmp_path / "frames"
    argv = ["recall", "--tasks", "W1,W4", "--page", str(page), "--csv", str(out), "--frames", str(frames)]
    assert bench.main(argv) == 0
    text = capsys.readouterr().out
    assert "| page " in text and "IoU >= 0.5" in text and f"csv: {out}" in text
    rows = _rows(out)
    pages = ("W1", "W4", "controls", "all web", "all pages", "all")  # a pooled row per set, then all
    assert set(rows) == {(p, d) for p in pages for d in ("oracle", "cv")}
    # the oracle reports the DOM's own boxes: the plumbing must give it everything
    for p in ("W1", "W4", "controls", "all"):
        r = rows[(p, "oracle")]
        assert (r["recall"], r["precision"]) == ("1.0", "1.0") and r["targets_marked"] == r["targets"], r
        assert r["targets_boxed"] == r["targets"]
    assert rows[("W1", "oracle")]["elements"] == "6" and rows[("W4", "oracle")]["elements"] == "8"
    assert rows[("all", "oracle")]["elements"] == "17" and rows[("all", "oracle")]["targets"] == "3"
    # the crafted page: three controls with clear edges and one grey panel that is no control
    cv = rows[("controls", "cv")]
    assert cv["elements"] == "3" and float(cv["recall"]) == 1.0 and float(cv["precision"]) < 1.0
    # the cv detector is measured, not assumed: on W1/W4 it does not box everything exactly
    assert float(rows[("all", "cv")]["precision"]) < 1.0
    # the SoM frames were written and no tag sits on another one
    assert all(rows[k]["tag_overlaps"] == "0" for k in rows)
    shot = decode_png((frames / "W4-cv.png").read_bytes())
    assert shot.shape == (720, 1280, 3)


def test_recall_bad_arguments_are_one_line_exit_2(capsys):
    assert bench.main(["recall", "--detectors", "yolo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("config error: --detectors: unknown yolo") and err.count("\n") == 1
    assert bench.main(["recall", "--detectors", "onnx"]) == 2
    assert "--onnx-model" in capsys.readouterr().err
    assert bench.main(["recall", "--tasks", "W9"]) == 2
    assert "--tasks: unknown W9" in capsys.readouterr().err


def test_recall_with_an_onnx_model(chromium, tmp_path):
    """The onnx detector joins when a model is given: a planted model boxes exactly the page's Save button
    (CSS [100, 100, 300, 160] -> input pixels x 0.75 + 210 px of top padding at 1280x720)."""
    import_or_need("ONNX", "onnxruntime")
    from dvoc_bench.detect.synth_models import plant_box, planted_model
    from dvoc_bench.detect.yolo import DEFAULT_ANCHORS, format_anchors

    page = tmp_path / "controls.html"
    page.write_text(PAGE, encoding="utf-8")
    model = planted_model(tmp_path / "m.onnx", [plant_box(150, 307.5, 150, 45, level=1, anchor=1, obj=0.9)])
    anchors = tmp_path / "RK_anchors.txt"
    anchors.write_text(format_anchors(DEFAULT_ANCHORS))
    out = tmp_path / "r.csv"
    argv = ["recall", "--tasks", "", "--page", str(page), "--csv", str(out), "--onnx-model", str(model)]
    assert bench.main([*argv, "--detectors", "onnx"]) == 2  # no anchors: the model's must be given
    assert bench.main([*argv, "--onnx-anchors", str(anchors)]) == 0
    r = _rows(out)[("controls", "onnx")]
    assert (r["elements"], r["marks"], r["matched"], r["precision"], r["targets_marked"]) == (
        "3",
        "1",
        "1",
        "1.0",
        "1",
    )
    assert set(_rows(out)) >= {("controls", "oracle"), ("controls", "cv")}  # onnx added to the defaults
