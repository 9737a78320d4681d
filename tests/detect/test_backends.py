"""The oracle, the detector config, the shared service, and the rknn backend's wiring and error."""

from __future__ import annotations

import asyncio
import platform
import sys
import types

import numpy as np
import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.core.scene import Element, SceneTruth
from dvoc_bench.detect.config import BACKENDS, detector_config
from dvoc_bench.detect.oracle import OracleDetector, OracleOptions
from dvoc_bench.detect.service import DetectorService, build_detector
from dvoc_bench.detect.synth_models import plant_box, planted_heads
from dvoc_bench.detect.types import Detection, DetectorError, DetectorUnavailable, TimedDetector
from dvoc_bench.detect.yolo import DEFAULT_ANCHORS, format_anchors

ELEMS = (
    Element("title", "Settings", Box(10, 10, 200, 30), role="text", interactive=False),
    Element("ok", "OK", Box(100, 200, 179, 239)),
    Element("cancel", "Cancel", Box(200, 200, 279, 239)),
    Element("name", "Name", Box(100, 100, 399, 131), role="input"),
)
TRUTH = SceneTruth("T", Size(400, 300), "Click OK", "ok", ELEMS[1].box, ELEMS)
IMG = np.zeros((300, 400, 3), dtype=np.uint8)


# ---------------------------------------------------------------------------------------------- oracle


def test_oracle_returns_the_interactive_boxes_exactly():
    run = OracleDetector(TRUTH).run(IMG)
    boxes = sorted(d.box.as_list() for d in run.detections)
    assert boxes == [[100, 100, 399, 131], [100, 200, 179, 239], [200, 200, 279, 239]]  # first + last pixel
    assert all(0.5 <= d.score < 1 for d in run.detections)
    assert [d.score for d in run.detections] == sorted((d.score for d in run.detections), reverse=True)
    everything = OracleDetector(TRUTH, OracleOptions(interactive_only=False)).detect(IMG)
    assert len(everything) == 4
    half = OracleDetector(TRUTH).detect(np.zeros((150, 200, 3), dtype=np.uint8))  # a resized screenshot
    assert sorted(d.box.as_list() for d in half)[1] == [50, 100, 89.5, 119.5]


def test_oracle_errors_are_seeded_and_rated():
    opts = OracleOptions(miss_rate=0.3, duplicate_rate=0.3, jitter_px=3.0, seed=5)
    a = OracleDetector(TRUTH, opts, call_seed=11).detect(IMG)
    assert a == OracleDetector(TRUTH, opts, call_seed=11).detect(IMG)  # same seeds, same boxes
    counts = [len(OracleDetector(TRUTH, opts, call_seed=s).detect(IMG)) for s in range(400)]
    # 3 elements, each kept with 0.7 and then doubled with 0.3: mean 3 * 0.7 * 1.3 = 2.73
    assert np.mean(counts) == pytest.approx(2.73, abs=0.15)
    assert not OracleDetector(TRUTH, OracleOptions(miss_rate=1.0)).detect(IMG)
    dups = OracleDetector(TRUTH, OracleOptions(duplicate_rate=1.0)).detect(IMG)
    assert len(dups) == 6 and len({tuple(d.box.as_list()) for d in dups}) == 6  # duplicates are jittered
    for d in OracleDetector(TRUTH, OracleOptions(jitter_px=50.0), call_seed=3).detect(IMG):
        b = d.box
        assert 0 <= b.x0 < b.x1 <= 400 and 0 <= b.y0 < b.y1 <= 300 and b.w >= 2 and b.h >= 2
    with pytest.raises(ValueError):
        OracleOptions(miss_rate=1.5)


# ---------------------------------------------------------------------------------------------- config


def test_detector_config_validates_naming_the_key(tmp_path):
    assert detector_config("oracle").backend == detector_config(None).backend == "oracle"
    cfg = detector_config({"backend": "cv", "edge_threshold": 10, "max_area_frac": 0.4})
    assert cfg.cv.edge_threshold == 10 and cfg.max_area_frac == 0.4
    assert cfg.digest() != detector_config("cv").digest()
    # the digests that key SoM trials did not change when the settings moved to pydantic
    assert detector_config("oracle").digest() == "febef9c729af"
    assert detector_config("cv").digest() == "6fd79d3e39bb"
    model_file = tmp_path / "there.onnx"
    model_file.write_bytes(b"x")
    said = detector_config({"backend": "onnx", "model": str(model_file), "anchors": "yolov5-default"})
    assert said.onnx.anchors == "yolov5-default" and said.tag_layout == "avoid"
    assert detector_config({"backend": "cv", "tag_layout": "spec"}).tag_layout == "spec"
    assert detector_config({"backend": "cv", "tag_layout": "spec"}).digest() != detector_config("cv").digest()
    assert detector_config({"backend": "helper", "command": "x"}).helper.on_demand is False  # resident
    cases = [
        ({"backend": "teleport"}, "detector: unknown value 'teleport'; allowed: " + ", ".join(BACKENDS)),
        ({"backend": "cv", "edge": 1}, "detector.edge: unknown key; allowed: edge_threshold, gap_x"),
        ({"backend": "cv", "edge_threshold": "high"}, "detector.edge_threshold: must be a whole number"),
        (
            {"backend": "cv", "edge_threshold": 999},
            "detector.edge_threshold: must be less than or equal to 255",
        ),
        ({"backend": "oracle", "miss_rate": 2}, "detector.miss_rate: must be less than or equal to 1"),
        ({"backend": "onnx"}, "detector.model: detector=onnx needs a model path"),
        ({"backend": "onnx", "model": str(tmp_path / "m.onnx")}, "detector.model: file not found"),
        (  # issue #18: no silent default anchors
            {"backend": "onnx", "model": str(model_file)},
            "detector.anchors: detector=onnx needs the anchors file shipped with the model",
        ),
        (
            {"backend": "onnx", "model": str(model_file), "anchors": str(tmp_path / "RK.txt")},
            "detector.anchors: file not found",
        ),
        (
            {"backend": "rknn", "model": str(model_file), "anchors": "yolov5-default", "core_mask": -1},
            "detector.core_mask: must be greater than or equal to 0",
        ),
        ({"backend": "cv", "tag_layout": "nice"}, "detector.tag_layout: "),
        ({"backend": "helper"}, "detector.command: detector=helper needs the command"),
        ({"backend": "cv", "max_area_frac": 0}, "detector.max_area_frac: must be greater than 0"),
        ({"backend": "cv", "max_area_frac": float("nan")}, "detector.max_area_frac: must be a finite number"),
    ]
    for node, message in cases:
        with pytest.raises(ConfigError) as e:
            detector_config(node)
        assert str(e.value).startswith(message), str(e.value)
        assert "\n" not in str(e.value)
    h = detector_config({"backend": "helper", "command": "ssh board '/usr/lib/aico/helper --model m.rknn'"})
    assert h.helper.command == ("ssh", "board", "/usr/lib/aico/helper --model m.rknn")


# --------------------------------------------------------------------------------------------- service


class _Counting(TimedDetector):
    backend = "counting"

    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def _detect(self, image):
        self.calls += 1
        return [Detection(Box(0, 0, 10, 10), 0.9)], 1.0

    def close(self) -> None:
        self.closed = True


def test_service_detects_each_screenshot_once_and_closes_the_backend():
    made: list[_Counting] = []

    def factory(cfg):
        made.append(_Counting())
        return made[-1]

    svc = DetectorService(detector_config("cv"), factory)

    async def many():
        other = IMG.copy()
        other[0, 0] = 1
        runs = await asyncio.gather(
            *(svc.detect(IMG, TRUTH, s) for s in range(20)), svc.detect(other, TRUTH, 0)
        )
        return runs

    runs = asyncio.run(many())
    assert len(made) == 1 and made[0].calls == 2  # built once, one run per distinct screenshot
    assert all(r is runs[0] for r in runs[:20]) and runs[20] is not runs[0]
    svc.close()
    assert made[0].closed


def test_service_oracle_draws_per_trial_and_failed_builds_fail_fast():
    svc = DetectorService(detector_config({"backend": "oracle", "miss_rate": 0.5}))
    runs = [asyncio.run(svc.detect(IMG, TRUTH, s)) for s in range(30)]
    assert len({len(r.detections) for r in runs}) > 1  # the oracle's misses vary with the trial seed
    builds = []

    def broken(cfg):
        builds.append(1)
        raise DetectorUnavailable("no runtime here")

    svc = DetectorService(detector_config("cv"), broken)
    for _ in range(3):
        with pytest.raises(DetectorUnavailable, match="no runtime here"):
            asyncio.run(svc.detect(IMG, TRUTH, 0))
    assert len(builds) == 1
    with pytest.raises(ValueError, match="ground truth"):
        build_detector(detector_config("oracle"))


# ------------------------------------------------------------------------------------------------ rknn


@pytest.mark.skipif(platform.machine() == "aarch64", reason="rknnlite may really be installed on aarch64")
def test_rknn_backend_says_what_to_use_instead(tmp_path):
    (tmp_path / "m.rknn").write_bytes(b"x")
    cfg = detector_config({"backend": "rknn", "model": str(tmp_path / "m.rknn"), "anchors": "yolov5-default"})
    with pytest.raises(DetectorUnavailable, match="aarch64") as e:
        build_detector(cfg)
    assert "detector=onnx" in str(e.value) and "detector=helper" in str(e.value)


def test_rknn_backend_wiring_with_a_scripted_runtime(tmp_path, monkeypatch):
    """A stand-in ``rknnlite`` module returns planted NHWC heads: the backend must feed NHWC uint8 and
    decode them like the onnx path."""
    heads = planted_heads([plant_box(484, 324, 10, 13, level=0, anchor=0, obj=0.95)], 960)
    seen: dict[str, object] = {}

    class FakeRKNNLite:
        def __init__(self, verbose=False):
            pass

        def load_rknn(self, path):
            seen["path"] = path
            return 0

        def init_runtime(self, **kw):
            seen["init"] = kw
            return 0

        def inference(self, inputs, data_format=None):
            seen["input"] = inputs[0]
            seen["format"] = data_format
            return [h.transpose(0, 2, 3, 1) for h in heads]  # the RV1106-style NHWC layout

        def release(self):
            seen["released"] = True

    api = types.ModuleType("rknnlite.api")
    api.RKNNLite = FakeRKNNLite
    monkeypatch.setitem(sys.modules, "rknnlite", types.ModuleType("rknnlite"))
    monkeypatch.setitem(sys.modules, "rknnlite.api", api)
    from dvoc_bench.detect.rknn_backend import RknnDetector

    (tmp_path / "m.rknn").write_bytes(b"x")
    det = RknnDetector(tmp_path / "m.rknn", np.asarray(DEFAULT_ANCHORS).reshape(3, 3, 2))
    run = det.run(np.zeros((1080, 1920, 3), dtype=np.uint8))
    assert [d.box.as_list() for d in run.detections] == [[958.0, 215.0, 978.0, 241.0]]
    x = seen["input"]
    assert x.shape == (1, 960, 960, 3) and x.dtype == np.uint8 and seen["format"] == ["nhwc"]
    assert (x[0, :210] == 114).all() and (x[0, 210:750] == 0).all()
    det.close()
    assert seen["released"] and seen["init"] == {}  # no core mask given: the runtime's default
    # issue #18: detector.core_mask reaches init_runtime through the config and the service
    anchors = tmp_path / "RK_anchors.txt"
    anchors.write_text(format_anchors(DEFAULT_ANCHORS))
    cfg = detector_config(
        {"backend": "rknn", "model": str(tmp_path / "m.rknn"), "anchors": str(anchors), "core_mask": 3}
    )
    built = build_detector(cfg)
    assert (
        seen["init"] == {"core_mask": 3} and len(built.run(np.zeros((600, 800, 3), np.uint8)).detections) == 1
    )
    built.close()


def test_rknn_load_compacts_memory_and_retries_three_times(tmp_path, monkeypatch):
    """The seed's board behaviour: a failed NPU init is followed by a memory compaction and a retry."""
    outcomes: list[int] = []
    codes: list[int] = []

    class FlakyRKNNLite:
        def __init__(self, verbose=False):
            pass

        def load_rknn(self, path):
            return 0

        def init_runtime(self, **kw):
            return codes.pop(0)

        def release(self):
            outcomes.append(1)

    api = types.ModuleType("rknnlite.api")
    api.RKNNLite = FlakyRKNNLite
    monkeypatch.setitem(sys.modules, "rknnlite", types.ModuleType("rknnlite"))
    monkeypatch.setitem(sys.modules, "rknnlite.api", api)
    from dvoc_bench.detect.rknn_backend import RknnDetector

    (tmp_path / "m.rknn").write_bytes(b"x")
    anchors = np.asarray(DEFAULT_ANCHORS).reshape(3, 3, 2)
    compactions: list[int] = []

    def compact():
        compactions.append(1)
        return True

    codes[:] = [-1, -1, 0]  # fails twice, the third load after compaction works
    RknnDetector(tmp_path / "m.rknn", anchors, compact=compact).close()
    assert len(compactions) == 2 and len(outcomes) == 3  # two failed runtimes released, then the good one
    codes[:] = [-1, -1, -1]
    compactions.clear()
    with pytest.raises(DetectorError, match="code -1, 3 attempts"):
        RknnDetector(tmp_path / "m.rknn", anchors, compact=compact)
    assert len(compactions) == 2
