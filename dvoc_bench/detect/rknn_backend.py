"""The same YOLOv5 model compiled to ``.rknn``, run on a Rockchip NPU through ``rknnlite``.

``rknn-toolkit-lite2`` exists only for aarch64 Linux and supports the RK3562/3566/3568/3576/3588 and
RV1126B NPUs; the RV1106 of the seed is reached through its C helper and the
``helper`` backend instead. ``rknnlite`` is imported only when this backend is built; anywhere else the
error says what to use instead. The model takes NHWC uint8 RGB (normalisation is baked in at conversion);
its heads may come back NCHW (float, dequantised) or NHWC, both are accepted.

Model load follows the seed's board helper: when the runtime fails to initialise (on a board short of
contiguous memory the NPU driver cannot get its order-4 block and retrying alone does not help), memory
is compacted (``/proc/sys/vm/compact_memory``, needs root) and the load is retried, three attempts in all.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.detect.types import Detection, DetectorError, DetectorUnavailable, TimedDetector
from dvoc_bench.detect.yolo import DEFAULT_INPUT, PostConfig, letterbox, load_anchors, postprocess

log = logging.getLogger(__name__)

LOAD_ATTEMPTS = 3
"""Model load attempts (memory is compacted between them)."""


def compact_memory() -> bool:
    """Ask the kernel to compact memory; False when not permitted (not root) or not Linux."""
    try:
        with open("/proc/sys/vm/compact_memory", "w") as f:
            f.write("1")
        return True
    except OSError:
        return False


def _import_rknnlite() -> Any:
    try:
        from rknnlite.api import RKNNLite
    except ImportError as e:
        raise DetectorUnavailable(
            "the rknn detector needs rknn-toolkit-lite2 (rknnlite), which runs only on aarch64 Linux boards "
            f"with an RK3562/3566/3568/3576/3588 or RV1126B NPU (this machine: {platform.machine()}); "
            "install it there with pip install -e '.[rknn]'. Elsewhere use detector=onnx (same model as "
            "ONNX) or detector=helper (a helper process on the board, e.g. over ssh or adb)"
        ) from e
    return RKNNLite


class RknnDetector(TimedDetector):
    """YOLOv5 heads from an ``.rknn`` model via ``rknnlite``; ``inference_ms`` is the NPU call alone."""

    backend = "rknn"

    def __init__(
        self,
        model: str | Path,
        anchors: str | Path | np.ndarray,
        *,
        post: PostConfig | None = None,
        input_size: int = DEFAULT_INPUT,
        core_mask: int | None = None,
        compact: Callable[[], bool] = compact_memory,
    ) -> None:
        rknnlite_cls = _import_rknnlite()
        path = Path(model)
        if not path.is_file():
            raise DetectorError(f"rknn model not found: {path}")
        self.anchors = anchors if isinstance(anchors, np.ndarray) else load_anchors(anchors)
        """Anchors ``(3, 3, 2)`` in input pixels."""
        self.post = post or PostConfig()
        """Thresholds."""
        self.input_size = int(input_size)
        """Square model input side."""
        self._rk = None
        for attempt in range(1, LOAD_ATTEMPTS + 1):
            rk = rknnlite_cls(verbose=False)
            if rk.load_rknn(str(path)) != 0:
                rk.release()
                raise DetectorError(f"rknnlite could not load {path}")
            ret = rk.init_runtime() if core_mask is None else rk.init_runtime(core_mask=core_mask)
            if ret == 0:
                self._rk = rk
                break
            rk.release()
            if attempt == LOAD_ATTEMPTS:
                raise DetectorError(
                    f"rknnlite could not initialise the NPU runtime for {path} "
                    f"(code {ret}, {attempt} attempts)"
                )
            compacted = compact()
            log.warning("NPU runtime init failed (code %s); compacted memory: %s; retrying", ret, compacted)

    def _detect(self, image: np.ndarray) -> tuple[list[Detection], float | None]:
        if self._rk is None:
            raise DetectorError("rknn detector is closed")
        lb_img, lb = letterbox(image, self.input_size)
        t0 = time.perf_counter()
        outs = self._rk.inference(inputs=[lb_img[None]], data_format=["nhwc"])
        ms = (time.perf_counter() - t0) * 1000.0
        if outs is None:
            raise DetectorError("rknnlite inference returned no outputs")
        heads = [np.asarray(o, dtype=np.float32) for o in outs]
        return postprocess(heads, self.anchors, lb, self.post), ms

    def close(self) -> None:
        rk, self._rk = getattr(self, "_rk", None), None
        if rk is not None:
            rk.release()
