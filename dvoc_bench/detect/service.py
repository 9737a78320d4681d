"""One detector shared by every trial of a sweep: built lazily, one call at a time, one run per screenshot.

- The backend is built on the first request (an onnxruntime session or a helper process costs time and
  memory; a sweep without SoM trials never builds one).
- Calls run in a worker thread (``asyncio.to_thread``) under a lock: one session or helper process serves
  one screenshot at a time, and the event loop keeps serving the model calls of other trials.
- The pixel backends (``cv``, ``onnx``, ``rknn``, ``helper``) are deterministic in the image, so each
  screenshot is detected once and the result (with its timing) is reused by every trial on it.
- The ``oracle`` reads the scene's element boxes and draws its errors per trial (``call_seed``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import sys
import threading
from collections.abc import Callable

import numpy as np

from dvoc_bench.core.scene import SceneTruth
from dvoc_bench.detect.config import ANCHORS_DEFAULT, DetectorConfig
from dvoc_bench.detect.types import DetectionRun, Detector, DetectorError
from dvoc_bench.detect.yolo import DEFAULT_ANCHORS, PostConfig, load_anchors

log = logging.getLogger(__name__)


def resolve_anchors(path: str | None, key: str = "detector.anchors") -> np.ndarray:
    """The anchors a YOLOv5 backend uses: a file, or YOLOv5's defaults only when said
    (``yolov5-default``); none at all is an error (the anchors ship with the model)."""
    if path == ANCHORS_DEFAULT:
        return np.asarray(DEFAULT_ANCHORS, dtype=np.float64).reshape(3, 3, 2)
    if not path:
        raise DetectorError(
            f"{key}: no anchors given; pass the model's RK_anchors.txt, or {ANCHORS_DEFAULT} to use "
            "YOLOv5's default anchors"
        )
    return load_anchors(path)


def build_detector(cfg: DetectorConfig, truth: SceneTruth | None = None, call_seed: int = 0) -> Detector:
    """The backend ``cfg`` selects. The oracle needs the scene's ``truth`` (and takes ``call_seed``)."""
    b = cfg.backend
    if b == "oracle":
        from dvoc_bench.detect.oracle import OracleDetector

        if truth is None:
            raise ValueError("the oracle detector needs the scene's ground truth")
        return OracleDetector(truth, cfg.oracle, call_seed)
    if b == "cv":
        from dvoc_bench.detect.cv import CvDetector

        return CvDetector(cfg.cv)
    if b in ("onnx", "rknn"):
        y = cfg.onnx if b == "onnx" else cfg.rknn
        if y.model is None:
            raise ValueError(f"detect.{b}.model is not set")
        post = PostConfig(y.confidence, y.nms_iou, y.max_boxes)
        if b == "onnx":
            from dvoc_bench.detect.onnx_backend import OnnxDetector

            return OnnxDetector(y.model, resolve_anchors(y.anchors), threads=y.threads, post=post)
        from dvoc_bench.detect.rknn_backend import RknnDetector

        return RknnDetector(y.model, resolve_anchors(y.anchors), post=post, core_mask=cfg.rknn.core_mask)
    if b == "omniparser":
        from dvoc_bench.detect.omniparser import OmniparserDetector

        o = cfg.omniparser
        if o.model is None:
            raise ValueError("detector.model is not set")
        return OmniparserDetector(
            o.model,
            imgsz=o.imgsz,
            confidence=o.confidence,
            nms_iou=o.nms_iou,
            max_boxes=o.max_boxes,
            threads=o.threads,
            sha256=o.sha256,
        )
    if b == "helper":
        from dvoc_bench.detect.helper_client import HelperDetector

        h = cfg.helper
        return HelperDetector(
            h.command,
            startup_timeout_s=h.startup_timeout_s,
            request_timeout_s=h.request_timeout_s,
            on_demand=h.on_demand,
            idle_exit_s=h.idle_exit_s,
        )
    raise ValueError(f"unknown detector backend {b!r}")


def own_helper_command(
    backend: str, model: str, anchors: str | None, *, confidence: float = 0.3, nms_iou: float = 0.6
) -> list[str]:
    """The command line of our own helper server with this interpreter (``python -m
    dvoc_bench.detect.helper``)."""
    cmd = [sys.executable, "-m", "dvoc_bench.detect.helper", "--backend", backend, "--model", model]
    if anchors:
        cmd += ["--anchors", anchors]
    return cmd + ["--confidence", str(confidence), "--nms-iou", str(nms_iou)]


def _image_key(image: np.ndarray) -> str:
    h = hashlib.sha256(str(image.shape).encode())
    h.update(np.ascontiguousarray(image).tobytes())
    return h.hexdigest()


class DetectorService:
    """The sweep's detector (see the module docstring). ``close()`` stops a helper process."""

    def __init__(
        self, cfg: DetectorConfig, factory: Callable[[DetectorConfig], Detector] | None = None
    ) -> None:
        self.cfg = cfg
        """The validated choice."""
        self._factory = factory or build_detector
        self._backend: Detector | None = None
        self._cache: dict[str, DetectionRun] = {}
        self._lock = threading.Lock()
        self._build_error: DetectorError | None = None

    @property
    def backend(self) -> str:
        return self.cfg.backend

    async def detect(self, image: np.ndarray, truth: SceneTruth, call_seed: int) -> DetectionRun:
        """Boxes of ``image`` (the scene's screenshot); raises ``DetectorError`` when the backend fails."""
        if self.cfg.backend == "oracle":
            return build_detector(self.cfg, truth, call_seed).run(image)
        key = _image_key(image)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        return await asyncio.to_thread(self.detect_sync, image, key)

    def detect_sync(self, image: np.ndarray, key: str | None = None) -> DetectionRun:
        """The pixel backends' path, callable from any thread (one detection at a time)."""
        key = key or _image_key(image)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
            if self._build_error is not None:  # a backend that could not be built fails fast afterwards
                raise self._build_error
            if self._backend is None:
                try:
                    self._backend = self._factory(self.cfg)
                except DetectorError as e:
                    self._build_error = e
                    raise
            run = self._backend.run(image)
            self._cache[key] = run
        log.info(
            "detector %s: %d boxes in %.1f ms on a %dx%d screenshot",
            self.backend,
            len(run.detections),
            run.wall_ms,
            image.shape[1],
            image.shape[0],
        )
        return run

    def close(self) -> None:
        with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()
