"""``bench recall`` beyond W1-W5: the desktop tasks (toolkit truth), a ScreenSpot-format fixture (every
element annotated), omniparser at two letterbox sizes, and the side-by-side table per set."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dvoc_bench import bench
from dvoc_bench.benchmarks.recall import page_set
from dvoc_bench.benchmarks.recall_sets import screenspot_screens
from dvoc_bench.scenes.dataset_fixture import write_fixture

pytestmark = pytest.mark.e2e  # each renders screens and runs a detector


def _rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return {(r["page"], r["detector"]): r for r in csv.DictReader(f)}


def test_screenspot_fixture_screens_carry_every_annotated_box(tmp_path) -> None:
    """Read back through the ScreenSpot loader: one screen per image, its truth and targets every sample
    box the fixture wrote for that image."""
    expected = write_fixture(tmp_path, "screenspot", screens=2, per_screen=12)
    screens = screenspot_screens(2, 12)
    assert [s.scene_id for s, _ in screens] == ["SS1", "SS2"]
    boxes = sorted(e.box.as_list() for e in expected)
    got = sorted(b.as_list() for _, targets in screens for b in targets)
    assert got == boxes and all(len(t) == 12 and len(s.truth.elements) == 12 for s, t in screens)
    assert all(s.image.shape == (720, 1280, 3) for s, _ in screens)


def test_recall_on_desktop_and_screenspot_with_the_oracle(tmp_path, capsys) -> None:
    """The oracle reports the truth's own boxes: every set's plumbing must give it everything, with every
    fixture sample counted as a target and a pooled row per set."""
    out = tmp_path / "r.csv"
    argv = ["recall", "--tasks", "D1", "--screenspot", "1", "--detectors", "oracle,cv", "--csv", str(out)]
    assert bench.main(argv) == 0
    text = capsys.readouterr().out
    assert "| set " in text and "| desktop " in text and "| screenspot " in text
    rows = _rows(out)
    assert set(rows) >= {(p, d) for p in ("D1", "SS1", "all desktop", "all screenspot", "all") for d in
                         ("oracle", "cv")}  # fmt: skip
    ss = rows[("SS1", "oracle")]
    assert (ss["elements"], ss["targets"], ss["targets_boxed"], ss["recall"]) == ("12", "12", "12", "1.0")
    d1 = rows[("D1", "oracle")]
    assert float(d1["recall"]) == 1.0 and int(d1["elements"]) >= 5 and d1["targets_boxed"] == "1"
    assert rows[("all", "oracle")]["elements"] == str(int(d1["elements"]) + 12)
    assert float(rows[("all desktop", "cv")]["precision"]) < 1.0  # measured, not assumed
    assert rows[("all", "cv")]["median_ms"] != ""


def test_omniparser_at_two_sizes_against_an_independent_match(tmp_path) -> None:
    """Each size is its own detector; the matched count is the one a plain greedy IoU >= 0.5 matching of
    the detector's marks against the fixture's boxes gives."""
    from dvoc_bench.core.geometry import Size
    from dvoc_bench.detect.omniparser import OmniparserDetector
    from dvoc_bench.draw.som_render import marks_from_detections
    from tests.detect.test_omniparser import _matched, _weights

    weights = _weights()
    out = tmp_path / "r.csv"
    argv = ["recall", "--tasks", "", "--screenspot", "1", "--detectors", "omniparser", "--imgsz", "640,1280"]
    assert bench.main([*argv, "--omniparser-model", str(weights), "--csv", str(out)]) == 0
    rows = _rows(out)
    ((shot, targets),) = screenspot_screens(1, 12)
    truth = [[b.x0, b.y0, b.x1 + 1, b.y1 + 1] for b in targets]
    for size in (640, 1280):
        dets = OmniparserDetector(weights, imgsz=size).detect(shot.image)
        marks = marks_from_detections(dets, Size(1280, 720))
        r = rows[("SS1", f"omniparser@{size}")]
        assert int(r["marks"]) == len(marks)
        assert int(r["matched"]) == _matched(truth, [m.box.as_list() for m in marks], 0.5)
    assert rows[("SS1", "omniparser@640")]["marks"] != rows[("SS1", "omniparser@1280")]["marks"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--detectors", "omniparser", "--omniparser-model", "/nonexistent/model.pt"], "--omniparser-model:"),
        (["--tasks", "D9"], "--tasks: unknown D9"),
        (["--detectors", "cv", "--imgsz", "big"], "--imgsz: expected a comma list"),
        (["--tasks", "", "--screenspot", "-1"], "--screenspot: must be >= 0"),
    ],
)
def test_bad_arguments_one_line_exit_2(args, says, capsys) -> None:
    assert bench.main(["recall", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("config error: ") and says in err and err.count("\n") == 1


def test_page_sets() -> None:
    assert [page_set(p) for p in ("W3", "DOC5", "D2", "SS10", "controls", "SSH")] == [
        "web", "docs", "desktop", "screenspot", "pages", "pages"]  # fmt: skip
