"""What every detector backend returns: scored boxes in source pixels, plus timing."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from dvoc_bench.core.geometry import Box


class DetectorError(RuntimeError):
    """A detector could not produce boxes (missing model or runtime, failed inference, dead helper)."""


class DetectorUnavailable(DetectorError):
    """The selected backend cannot run on this machine (its runtime is not installed or not supported)."""


@dataclass(frozen=True, slots=True)
class Detection:
    """One detected interface component."""

    box: Box
    """Box in source-image pixels, continuous coordinates ``[x0, y0, x1, y1]`` within ``[0, W] x [0, H]``;
    its centre is ``((x0 + x1) / 2, (y0 + y1) / 2)``."""
    score: float
    """Detector confidence in [0, 1] (YOLOv5: objectness x class probability)."""

    def as_list(self, ndigits: int = 2) -> list[float]:
        """``[x0, y0, x1, y1, score]`` rounded for records."""
        return [round(v, ndigits) for v in self.box.as_list()] + [round(self.score, 4)]


@dataclass(frozen=True)
class DetectionRun:
    """The boxes of one screenshot and what they cost."""

    detections: tuple[Detection, ...]
    """Boxes ordered by descending score."""
    wall_ms: float
    """Wall time of the whole call (pre-processing, inference, decoding; for the helper the round trip)."""
    inference_ms: float | None
    """Model time alone when the backend knows it (onnxruntime run, the helper's ``OK n ms``), else None."""
    backend: str
    """Backend that produced the boxes (``oracle | cv | onnx | rknn | helper``)."""


@runtime_checkable
class Detector(Protocol):
    """A detector backend: ``detect(image) -> list[Detection]`` and the same with timing."""

    backend: str
    """Backend name."""

    def run(self, image: np.ndarray) -> DetectionRun:
        """Detect on an ``HxWx3`` uint8 RGB image; raises :class:`DetectorError` on failure."""
        ...

    def detect(self, image: np.ndarray) -> list[Detection]:
        """The boxes of :meth:`run`, ordered by descending score."""
        ...

    def close(self) -> None:
        """Release the runtime (sessions, helper processes). Safe to call twice."""
        ...


class TimedDetector:
    """Mixin giving ``run`` (with wall time) and ``detect`` on top of a backend's ``_detect``."""

    backend: str = "?"

    def _detect(self, image: np.ndarray) -> tuple[list[Detection], float | None]:
        """The boxes and the model-only time in ms (or None)."""
        raise NotImplementedError

    def run(self, image: np.ndarray) -> DetectionRun:
        check_image(image)
        t0 = time.perf_counter()
        dets, inference_ms = self._detect(image)
        wall = (time.perf_counter() - t0) * 1000.0
        return DetectionRun(tuple(sort_by_score(dets)), wall, inference_ms, self.backend)

    def detect(self, image: np.ndarray) -> list[Detection]:
        return list(self.run(image).detections)

    def close(self) -> None:
        return None


def check_image(image: np.ndarray) -> None:
    """Raise ``ValueError`` unless ``image`` is a non-empty ``HxWx3`` uint8 array."""
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        shape = getattr(image, "shape", None)
        dtype = getattr(image, "dtype", None)
        raise ValueError(f"expected an HxWx3 uint8 RGB image, got shape {shape} dtype {dtype}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"cannot detect on an empty image of shape {image.shape}")


def sort_by_score(dets: Sequence[Detection]) -> list[Detection]:
    """Descending score, stable (equal scores keep their order)."""
    return sorted(dets, key=lambda d: -d.score)
