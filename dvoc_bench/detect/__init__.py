"""UI-element detectors for Set-of-Mark grounding.

One interface, :class:`Detector` (``detect(image) -> list[Detection]``, ``run(image) -> DetectionRun`` with
timing), five backends, chosen with ``detector=`` (:mod:`.config`, built by :mod:`.service`):

- :mod:`.oracle`: the scene's own element boxes, optionally degraded (misses, duplicates, jitter);
- :mod:`.cv`: a classical edge / connected-component detector, no weights;
- :mod:`.onnx_backend`: a single-class YOLOv5 through onnxruntime (pre/post-processing in :mod:`.yolo`);
- :mod:`.rknn_backend`: the same model through ``rknnlite`` on RK35xx boards;
- :mod:`.helper_client`: any process speaking the seed's helper protocol (:mod:`.helper_protocol`), e.g.
  the board's C helper over ssh/adb, or our own server :mod:`.helper`.

:mod:`.synth_models` builds ONNX models for tests and :mod:`.bench` measures latency. This package
imports no optional dependency: onnxruntime, onnx and rknnlite are imported when a backend is built.
"""

from dvoc_bench.detect.types import Detection, DetectionRun, Detector, DetectorError, DetectorUnavailable

__all__ = ["Detection", "DetectionRun", "Detector", "DetectorError", "DetectorUnavailable"]
