"""``bench recall --cuactspot / --precision-cua``: detector recall, centre-in-mark and precision against the
real screens' truth boxes, per set and category (issue 50)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from dvoc_bench.benchmarks.recall_real import (
    TruthScreen,
    cuactspot_screens,
    precision_cua_screens,
    score_screen,
    table_rows,
)
from dvoc_bench.core.geometry import Box
from dvoc_bench.detect.types import Detection, DetectionRun
from tests.support import need_thirdparty


class Fixed:
    """A detector answering the same boxes on every image."""

    backend = "fixed"

    def __init__(self, boxes: list[Box]) -> None:
        self.boxes = boxes

    def run(self, image: np.ndarray) -> DetectionRun:
        return DetectionRun(tuple(Detection(b, 0.9) for b in self.boxes), 5.0, None, self.backend)

    def detect(self, image: np.ndarray) -> list[Detection]:
        return list(self.run(image).detections)

    def close(self) -> None:
        return None


def _screen(tmp_path: Path, name: str, boxes: list[Box], cats: list[str], set_name: str) -> TruthScreen:
    path = tmp_path / f"{name}.png"
    Image.new("RGB", (400, 300), "white").save(path)
    return TruthScreen(set_name, name, path, tuple(boxes), tuple(cats))


def test_recall_marked_and_precision_per_category(tmp_path) -> None:
    """Two screens of one category each: hand-counted matches (IoU >= 0.5 one-to-one; a centre inside a
    mark too big to match still counts as marked)."""
    a = _screen(tmp_path, "a", [Box(10, 10, 50, 30), Box(100, 100, 140, 120)], ["GUI", "GUI"], "cuactspot")
    b = _screen(tmp_path, "b", [Box(200, 200, 240, 220)], ["Text"], "cuactspot")
    det = Fixed([Box(11, 10, 50, 30), Box(60, 60, 300, 250), Box(300, 10, 320, 20)])
    oa, ob = score_screen(a, det), score_screen(b, det)
    assert oa.matched == (True, False) and oa.marked == (True, True)  # the big mark holds the 2nd centre
    assert oa.marks_matched == (True, False, False)
    assert ob.matched == (False,) and ob.marked == (True,)
    rows = {(r[0], r[1]): r for r in table_rows([oa, ob], "fixed")}
    gui, text, both = rows[("cuactspot", "GUI")], rows[("cuactspot", "Text")], rows[("cuactspot", "all")]
    assert gui[3:5] == ["1", "2"] and gui[5].startswith("50.0% [") and gui[6].startswith("100.0% [")
    assert gui[7] == "3" and gui[8].startswith("33.3% [")
    assert text[5].startswith("0.0% [") and text[8].startswith("0.0% [")
    assert both[3:5] == ["2", "3"] and both[5].startswith("33.3% [") and both[7] == "6"
    lo, hi = (float(v) for v in both[5].split("[")[1].rstrip("]").split(","))
    assert 0 < lo < 33.3 < hi < 100  # an interval, clustered by screenshot


def test_mixed_screens_give_precision_per_set_only(tmp_path) -> None:
    s = _screen(
        tmp_path, "m", [Box(10, 10, 50, 30), Box(100, 100, 102, 118)], ["word", "caret"], "precision_cua"
    )
    rows = {r[1]: r for r in table_rows([score_screen(s, Fixed([Box(10, 10, 50, 30)]))], "fixed")}
    assert rows["word"][5].startswith("100.0%") and rows["caret"][5].startswith("0.0%")
    assert rows["word"][8] == "-" and rows["all"][8].startswith("100.0%")


def test_the_sets_truth_boxes() -> None:
    screens = cuactspot_screens(need_thirdparty("phi-ground/cuactspot"))
    assert len(screens) == 158
    assert {c for s in screens for c in s.categories} == {"Canvas", "GUI", "Image", "Table", "Text"}
    pcb = precision_cua_screens(need_thirdparty("precision-cua-bench"))
    assert len(pcb) == 4
    assert all(b.x1 > b.x0 and b.y1 > b.y0 for s in pcb for b in s.boxes)  # the empty rows are left out
