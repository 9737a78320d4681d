"""``python -m dvoc_bench.mark``: its JSON is the detector's own output, its ``--draw`` the SoM frame, and
bad input is one line with exit 2 before anything runs. The omniparser case runs on the real weights
(skipped with the reason when they are absent, a failure under ``DVOC_REQUIRE_OMNIPARSER=1``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dvoc_bench import mark
from dvoc_bench.core.geometry import Size
from dvoc_bench.detect.cv import CvDetector
from dvoc_bench.draw.render import encode_png
from dvoc_bench.draw.som_render import box_rect, draw_marks, marks_from_detections
from dvoc_bench.scenes.dataset_fixture import screen
from tests.detect.test_omniparser import _weights

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shot(tmp_path_factory) -> tuple[Path, np.ndarray]:
    """A rendered 1280x720 screen of labelled buttons and square icons, as a PNG file and its pixels."""
    image, _ = screen(1280, 720, 3, 12)
    path = tmp_path_factory.mktemp("mark") / "screen.png"
    path.write_bytes(encode_png(image))
    return path, image


def _check_drawn(png: bytes, image: np.ndarray, boxes: list[list[float]]) -> None:
    """``png`` is a PNG of ``image``'s size holding SoM's marks of ``boxes`` (the detector's output)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    drawn = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    assert drawn.shape == image.shape
    from dvoc_bench.core.geometry import Box
    from dvoc_bench.detect.types import Detection

    dets = [Detection(Box(*b[:4]), b[4]) for b in boxes]
    marks = marks_from_detections(dets, Size(image.shape[1], image.shape[0]))
    assert marks, "nothing to mark: the check would be empty"
    changed = np.any(drawn != image, axis=2)
    for m in marks:  # every mark's outline is drawn: the middle of its left edge changed colour
        x0, y0, _, y1 = box_rect(m)
        assert changed[(y0 + y1) // 2, x0], f"mark {m.id} at {m.box} is not outlined"
    far = np.ones_like(changed)  # nothing changes far from every mark (tags sit within 40 px of a box)
    for m in marks:
        x0, y0, x1, y1 = box_rect(m)
        far[max(y0 - 40, 0) : y1 + 41, max(x0 - 40, 0) : x1 + 41] = False
    assert not changed[far].any()
    assert np.array_equal(drawn, draw_marks(image, marks))  # the frame the som method would send


def test_cv_json_is_the_detector_and_draw_writes_the_marks(shot, tmp_path, capsys) -> None:
    path, image = shot
    out = tmp_path / "marked.png"
    assert mark.main([str(path), "--detector", "cv", "--json", "--draw", str(out)]) == 0
    got = json.loads(capsys.readouterr().out)
    direct = [d.as_list() for d in CvDetector().detect(image)]
    assert list(got) == [str(path)] and got[str(path)] == direct and len(direct) >= 5
    _check_drawn(out.read_bytes(), image, direct)


def test_flags_reach_the_detector(shot, capsys) -> None:
    path, image = shot
    assert mark.main([str(path), "--detector", "cv", "--iou", "0.0", "--set", "max_boxes=3", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)[str(path)]
    from dvoc_bench.detect.cv import CvOptions

    assert got == [d.as_list() for d in CvDetector(CvOptions(nms_iou=0.0, max_boxes=3)).detect(image)]
    assert len(got) == 3


def test_several_images_draw_into_a_folder(shot, tmp_path, capsys) -> None:
    path, image = shot
    other = tmp_path / "other.png"
    other.write_bytes(encode_png(np.ascontiguousarray(image[:, ::-1])))
    out = tmp_path / "frames"
    assert mark.main([str(path), str(other), "--detector", "cv", "--draw", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "boxes" in lines[0] and "marked" in lines[1]
    assert sorted(p.name for p in out.iterdir()) == ["other.png", "screen.png"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--detector", "oracle"], "config error: --detector: oracle reads a scene's ground truth"),
        (["--detector", "yolo"], "config error: --detector: unknown value 'yolo'"),
        (["--detector", "cv", "--imgsz", "640"], "config error: --imgsz: detector cv has no imgsz setting"),
        (["--detector", "cv", "--set", "nms_iou"], "config error: --set: expected KEY=VALUE"),
        (["--detector", "cv", "--set", "edge_threshold=999"], "config error: detector.edge_threshold:"),
        (["--detector", "omniparser"], "config error: detector.model: detector=omniparser needs the weights"),
        (["--detector", "omniparser", "--model", "BAD"], "config error: detector.model: "),
        (["--detector", "omniparser", "--model", "TRUNC"], "not an ultralytics YOLO detection checkpoint"),
        (["--detector", "cv", "MISSING"], "config error: MISSING: file not found"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_run(args, says, shot, tmp_path, capsys, monkeypatch) -> None:
    path, _ = shot
    for var in ("DVOC_OMNIPARSER_WEIGHTS", "DVOC_CACHE_DIR"):  # no weights where omniparser looks by default
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bad = tmp_path / "model.pt"
    bad.write_text("not weights")
    trunc = tmp_path / "trunc.pt"
    trunc.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    subs = {"BAD": str(bad), "TRUNC": str(trunc), "MISSING": str(tmp_path / "nope.png")}
    out = tmp_path / "marked.png"
    argv = [str(path), *(subs.get(a, a) for a in args), "--draw", str(out)]
    assert mark.main(argv) == 2
    cap = capsys.readouterr()
    says = says.replace("MISSING", subs["MISSING"])
    assert cap.out == "" and says in cap.err and len(cap.err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.e2e
def test_omniparser_door_matches_the_detector_called_directly(shot, tmp_path) -> None:
    """The door as a user runs it (a subprocess), on the real weights, with --imgsz and --conf."""
    from dvoc_bench.detect.omniparser import OmniparserDetector

    weights = _weights()
    path, image = shot
    out = tmp_path / "marked.png"
    argv = [sys.executable, "-m", "dvoc_bench.mark", str(path), "--detector", "omniparser"]
    argv += ["--model", str(weights), "--imgsz", "1280", "--conf", "0.1", "--json", "--draw", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout)[str(path)]
    det = OmniparserDetector(weights, imgsz=1280, confidence=0.1)
    direct = [d.as_list() for d in det.detect(image)]
    at_640 = [d.as_list() for d in OmniparserDetector(weights).detect(image)]
    assert got == direct and len(direct) >= 5 and direct != at_640  # the flags reached the detector
    assert all(s > 0.1 for *_, s in got)
    _check_drawn(out.read_bytes(), image, direct)


def test_draw_drops_boxes_over_half_the_screen(tmp_path, capsys) -> None:
    """A panel outlined around most of the screen is boxed by cv (in the JSON) but not marked."""
    img = np.full((480, 640, 3), 240, np.uint8)
    img[10:12, 10:630] = img[468:470, 10:630] = img[10:470, 10:12] = img[10:470, 628:630] = 40
    img[100:140, 300:420] = (70, 110, 200)
    path, out = tmp_path / "panel.png", tmp_path / "marked.png"
    path.write_bytes(encode_png(img))
    assert mark.main([str(path), "--detector", "cv", "--json", "--draw", str(out)]) == 0
    boxes = json.loads(capsys.readouterr().out)[str(path)]
    assert [10.0, 10.0, 630.0, 470.0] in [b[:4] for b in boxes] and len(boxes) == 2
    drawn = np.asarray(Image.open(out).convert("RGB"))
    assert np.array_equal(drawn[200:400, 0:40], img[200:400, 0:40])  # the panel's left edge: no outline
    assert np.any(drawn[120, 296:304] != img[120, 296:304])  # the button's left edge: outlined
