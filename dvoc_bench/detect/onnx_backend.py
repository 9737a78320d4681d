"""The seed's single-class YOLOv5 through onnxruntime on the CPU (the x86 stand-in for the board's NPU).

The model must be the RKNN-friendly export: one image input ``[1, 3, S, S]`` float32 (RGB, ``/255``) or
``[1, S, S, 3]`` uint8 (RGB), and three sigmoid heads ``[1, 3 (5 + nc), S/8, S/8]``, ``S/16``, ``S/32``.
Pre- and post-processing are :mod:`dvoc_bench.detect.yolo`. onnxruntime is imported when a detector is
built, never at package import.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.detect.types import Detection, DetectorError, DetectorUnavailable, TimedDetector
from dvoc_bench.detect.yolo import (
    DEFAULT_INPUT,
    PostConfig,
    letterbox,
    load_anchors,
    postprocess,
    to_nchw_float,
)


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError as e:
        raise DetectorUnavailable(
            "the onnx detector needs onnxruntime, which is not installed: pip install -e '.[detect]'"
        ) from e
    return onnxruntime


def session_options(ort: Any, threads: int) -> Any:
    """CPU session options: ``threads`` intra-op threads, sequential, no busy-spinning between runs."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads)
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.log_severity_level = 3
    return so


class OnnxDetector(TimedDetector):
    """YOLOv5 heads via onnxruntime; ``inference_ms`` is the ``session.run`` time alone."""

    backend = "onnx"

    def __init__(
        self,
        model: str | Path,
        anchors: str | Path | np.ndarray,
        *,
        threads: int = 2,
        post: PostConfig | None = None,
    ) -> None:
        ort = _import_ort()
        path = Path(model)
        if not path.is_file():
            raise DetectorError(f"onnx model not found: {path}")
        self.anchors = anchors if isinstance(anchors, np.ndarray) else load_anchors(anchors)
        """Anchors ``(3, 3, 2)`` in input pixels."""
        self.post = post or PostConfig()
        """Thresholds."""
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        try:
            self._sess = ort.InferenceSession(
                str(path), sess_options=session_options(ort, threads), providers=["CPUExecutionProvider"]
            )
        except Exception as e:  # onnxruntime raises its own exception types for bad files
            raise DetectorError(f"cannot load onnx model {path}: {type(e).__name__}: {e}") from e
        inp = self._sess.get_inputs()[0]
        self._input_name = inp.name
        self._nhwc_uint8 = inp.type == "tensor(uint8)"
        shape = list(inp.shape)
        side = shape[1] if self._nhwc_uint8 else shape[2]
        self.input_size = int(side) if isinstance(side, int) else DEFAULT_INPUT
        """Square model input side (from the model; 960 when the model's input is dynamic)."""
        outs = self._sess.get_outputs()
        if len(outs) != 3:
            raise DetectorError(
                f"{path}: expected 3 YOLOv5 heads (the RKNN-style export), the model has {len(outs)} outputs"
            )

    def _detect(self, image: np.ndarray) -> tuple[list[Detection], float | None]:
        lb_img, lb = letterbox(image, self.input_size)
        x = lb_img[None] if self._nhwc_uint8 else to_nchw_float(lb_img)
        t0 = time.perf_counter()
        try:
            heads = self._sess.run(None, {self._input_name: x})
        except Exception as e:
            raise DetectorError(f"onnx inference failed: {type(e).__name__}: {e}") from e
        ms = (time.perf_counter() - t0) * 1000.0
        return postprocess(heads, self.anchors, lb, self.post), ms

    def close(self) -> None:
        self._sess = None
