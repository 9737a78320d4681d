"""``detector=omniparser`` on the real OmniParser-v2 weights, and its bad-input errors.

The weights (AGPL, never in the repository) come from ``$DVOC_OMNIPARSER_WEIGHTS`` or the cache path
``.ci/run`` downloads them to (:func:`dvoc_bench.detect.omniparser.default_weights`); without them the
real-model tests skip with the reason, unless ``DVOC_REQUIRE_OMNIPARSER=1`` (CI), where they fail.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import sys
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.detect.config import detector_config
from dvoc_bench.detect.omniparser import (
    OMNIPARSER_SHA256,
    WEIGHTS_ENV,
    OmniparserDetector,
    cache_dir,
    default_weights,
    letterbox_geometry,
    postprocess,
)
from tests.support import need

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "omniparser_reference.json"


def _weights() -> Path:
    p = default_weights()
    need("OMNIPARSER", None if p.is_file() else f"not at {p} (set {WEIGHTS_ENV})")
    return p


def _iou(a: list[float], b: list[float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _matched(ref: list[list[float]], ours: list[list[float]], thr: float = 0.7) -> int:
    """Greedy one-to-one matches at IoU >= thr (reference boxes by descending score)."""
    used: set[int] = set()
    n = 0
    for r in ref:
        best = max(((_iou(r, o), j) for j, o in enumerate(ours) if j not in used), default=(0.0, -1))
        if best[0] >= thr:
            used.add(best[1])
            n += 1
    return n


def test_letterbox_is_ultralytics_rect() -> None:
    lb = letterbox_geometry(1280, 720, 640)  # 640x360 padded to 384: 12 rows on each side
    assert (lb.in_w, lb.in_h, lb.new_w, lb.new_h, lb.left, lb.top) == (640, 384, 640, 360, 0, 12)
    lb = letterbox_geometry(1280, 720, 640, auto=False)
    assert (lb.in_w, lb.in_h, lb.top) == (640, 640, 140)


def test_boxes_map_back_through_the_letterbox_exactly() -> None:
    """A box placed in the model input where the letterbox put a source box comes back as that source box,
    also when the scaled size is not whole (1000x777 at 1280: 1280x994.56 rounded to 995, 29 rows of
    padding split 14 / 15), as ultralytics 8.4's ``scale_boxes`` does (8.3's was up to a pixel off)."""
    for w, h, size in ((1000, 777, 1280), (1111, 850, 640), (1280, 720, 640)):
        lb = letterbox_geometry(w, h, size)
        src = np.array([100.0, 200.0, 300.0, 400.0])
        sx, sy = lb.new_w / w, lb.new_h / h
        x1, y1, x2, y2 = (
            src[0] * sx + lb.left,
            src[1] * sy + lb.top,
            src[2] * sx + lb.left,
            src[3] * sy + lb.top,
        )
        pred = np.array([[[(x1 + x2) / 2], [(y1 + y2) / 2], [x2 - x1], [y2 - y1], [0.9]]])
        (det,) = postprocess(pred, lb, 0.05, 0.1, 300)
        assert det.box.as_list() == pytest.approx(src.tolist(), abs=1e-6), (w, h, size)


@pytest.mark.e2e
def test_matches_ultralytics_and_boxes_the_buttons() -> None:
    """On W1-W5 rendered now, our boxes match ultralytics' committed ones (IoU >= 0.7): recall >= 0.95 /
    precision >= 0.90 at imgsz 1280, >= 0.90 / 0.85 at 640; and the target button of W1-W4 is boxed."""
    from tests.detect.omniparser_reference import render
    from tests.support import chromium_or_skip

    weights = _weights()
    chromium_or_skip()
    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert ref["weights_sha256"] == OMNIPARSER_SHA256
    snaps = render(None)
    for size, (min_recall, min_precision) in {1280: (0.95, 0.90), 640: (0.90, 0.85)}.items():
        det = OmniparserDetector(weights, imgsz=size, sha256=OMNIPARSER_SHA256)
        assert det.converted.architecture.startswith("YOLO11 (C3k2"), det.converted.architecture
        tp = n_ref = n_ours = 0
        for sid, snap in snaps.items():
            run = det.run(snap.image)  # type: ignore[attr-defined]
            ours = [d.box.as_list() for d in run.detections]
            theirs = ref["images"][sid][str(size)]
            tp += _matched(theirs, ours)
            n_ref += len(theirs)
            n_ours += len(ours)
            if size == 640 and sid != "W5":  # W5's target sits in a closed menu: no detector boxes it
                target = snap.truth.target_box.as_list()  # type: ignore[attr-defined]
                assert max(_iou(target, o) for o in ours) >= 0.5, sid
        assert tp / n_ref >= min_recall and tp / n_ours >= min_precision, (size, tp, n_ref, n_ours)
        det.close()


def test_config_builds_the_real_model() -> None:
    weights = _weights()
    cfg = detector_config({"backend": "omniparser", "model": str(weights)})
    assert (cfg.omniparser.imgsz, cfg.omniparser.confidence, cfg.omniparser.nms_iou) == (640, 0.05, 0.1)
    det = OmniparserDetector(weights, imgsz=320)
    run = det.run(np.full((200, 300, 3), 255, np.uint8))
    assert run.backend == "omniparser" and run.inference_ms is not None


def test_without_detector_model_the_weights_are_found_where_ci_puts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 52, item 6: ``detector=omniparser`` with no ``detector.model`` takes
    ``$DVOC_OMNIPARSER_WEIGHTS``, else ``<XDG cache>/dvoc_bench/weights/icon_detect/model.pt`` (where
    ``.ci/run`` extracts them); with neither, one line that lists every place looked."""
    weights = _weights()
    converted = cache_dir()  # the ONNX conversion stays where it is (no second conversion)
    monkeypatch.delenv(WEIGHTS_ENV, raising=False)
    monkeypatch.delenv("DVOC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    with pytest.raises(ConfigError) as e:
        detector_config({"backend": "omniparser"})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("detector.model: ")
    assert str(tmp_path / "empty" / "dvoc_bench" / "weights" / "icon_detect" / "model.pt") in msg
    monkeypatch.setenv("DVOC_CACHE_DIR", str(converted.parent))
    cache = tmp_path / "xdg" / "dvoc_bench" / "weights" / "icon_detect"
    cache.mkdir(parents=True)
    (cache / "model.pt").symlink_to(weights)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert detector_config({"backend": "omniparser"}).omniparser.model == str(cache / "model.pt")
    monkeypatch.setenv(WEIGHTS_ENV, str(weights))
    assert detector_config({"backend": "omniparser"}).omniparser.model == str(weights)


def _bad(tmp_path: Path, name: str, data: bytes, **extra: object) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(ConfigError) as e:
        detector_config({"backend": "omniparser", "model": str(p), **extra})
    msg = str(e.value)
    assert msg.startswith("detector.model: ") and "\n" not in msg, msg
    return msg


def _zip_pickle(obj: object) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(obj, protocol=2))
    return buf.getvalue()


def test_bad_weights_one_line_naming_detector_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DVOC_CACHE_DIR", str(tmp_path / "cache"))
    assert "not a torch zip checkpoint" in _bad(tmp_path, "trunc.pt", _zip_pickle({"model": 1})[:40])
    assert "neither a torch .pt" in _bad(tmp_path, "model.yaml", b"nc: 1\n")
    assert "not an ONNX model" in _bad(tmp_path, "m.onnx", b"\xff\x00garbage")
    # a pickle that would run code: refused before anything is built, naming the global
    msg = _bad(tmp_path, "evil.pt", _zip_pickle({"model": os.getcwd}))
    assert "needs posix.getcwd" in msg or "needs os.getcwd" in msg
    # an ultralytics checkpoint of another architecture (a classifier): says what it found
    mod = types.ModuleType("ultralytics.nn.tasks")

    class ClassificationModel:
        pass

    ClassificationModel.__module__ = "ultralytics.nn.tasks"
    ClassificationModel.__qualname__ = "ClassificationModel"
    mod.ClassificationModel = ClassificationModel  # type: ignore[attr-defined]
    for name in ("ultralytics", "ultralytics.nn"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "ultralytics.nn.tasks", mod)
    msg = _bad(tmp_path, "cls.pt", _zip_pickle({"model": ClassificationModel(), "version": "8.3.0"}))
    assert "ClassificationModel, not a DetectionModel" in msg
    # a pinned sha256 that differs
    assert "expected " + "0" * 64 in _bad(tmp_path, "x.pt", b"PK", sha256="0" * 64)


def test_truncated_real_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _weights().read_bytes()
    monkeypatch.setenv("DVOC_CACHE_DIR", str(tmp_path / "cache"))
    assert "not a torch zip checkpoint" in _bad(tmp_path, "model.pt", data[: len(data) // 2])
