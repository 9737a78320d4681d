"""The ``detector`` / ``detect`` config: which backend, its settings, validated with errors naming the key.

In ``conf/config.yaml``::

    detector: oracle            # oracle | cv | onnx | rknn | helper
    detect:
      max_area_frac: 0.5        # SoM: boxes covering more of the screen are not marked
      oracle: {miss_rate: 0.0, duplicate_rate: 0.0, jitter_px: 0.0, interactive_only: true, seed: 0}
      cv: {edge_threshold: 24, ...}
      onnx: {model: null, anchors: null, threads: 2, confidence: 0.3, nms_iou: 0.6, max_boxes: 50}
      rknn: {model: null, anchors: null, confidence: 0.3, nms_iou: 0.6, max_boxes: 50}
      helper: {command: null, startup_timeout_s: 60, request_timeout_s: 60, on_demand: true, idle_exit_s: 120}

Only the selected backend's block is checked for required values (a model path, a command).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dvoc_bench.config import ConfigError
from dvoc_bench.detect.cv import CvOptions
from dvoc_bench.detect.oracle import OracleOptions

BACKENDS = ("oracle", "cv", "onnx", "rknn", "helper")
"""Detector backends accepted in ``detector=...``."""


@dataclass(frozen=True)
class YoloOptions:
    """Settings of the in-process YOLOv5 backends (``onnx`` and ``rknn``)."""

    model: str | None = None
    """Path of the ``.onnx`` / ``.rknn`` model."""
    anchors: str | None = None
    """Path of its ``RK_anchors.txt`` (18 numbers); ``null`` = YOLOv5's default anchors."""
    threads: int = 2
    """onnxruntime intra-op threads (ignored by rknn)."""
    confidence: float = 0.3
    """Confidence threshold (objectness x class)."""
    nms_iou: float = 0.6
    """NMS IoU threshold."""
    max_boxes: int = 50
    """At most this many boxes."""


@dataclass(frozen=True)
class HelperOptions:
    """Settings of the ``helper`` backend (a process speaking the seed's stdin protocol)."""

    command: tuple[str, ...] = ()
    """The command line, e.g. ``ssh board /usr/lib/aico/ui_grounding_helper --model ...`` (a string is
    split like a shell would, without running one)."""
    startup_timeout_s: float = 60.0
    """Seconds to wait for ``READY``."""
    request_timeout_s: float = 60.0
    """Seconds to wait for the reply to one request."""
    on_demand: bool = True
    """``true``: started at the first request and stopped after ``idle_exit_s`` without one;
    ``false``: resident (started at once, restarted in the background after a failure, no idle exit)."""
    idle_exit_s: float = 120.0
    """Idle time after which an on-demand helper is asked to quit."""


@dataclass(frozen=True)
class DetectorConfig:
    """The whole detector choice of a sweep."""

    backend: str = "oracle"
    """One of :data:`BACKENDS`."""
    max_area_frac: float = 0.5
    """SoM drops boxes covering more than this share of the screen."""
    oracle: OracleOptions = field(default_factory=OracleOptions)
    """Oracle error rates."""
    cv: CvOptions = field(default_factory=CvOptions)
    """Classical detector knobs."""
    onnx: YoloOptions = field(default_factory=YoloOptions)
    """onnxruntime backend."""
    rknn: YoloOptions = field(default_factory=YoloOptions)
    """rknnlite backend."""
    helper: HelperOptions = field(default_factory=HelperOptions)
    """Helper-process backend."""

    def digest(self) -> str:
        """Hash of the selected backend's settings (what changes its boxes)."""
        blob = json.dumps(
            {"backend": self.backend, "max_area_frac": self.max_area_frac, "opts": self.selected()},
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def selected(self) -> dict[str, Any]:
        """The selected backend's settings as a plain mapping."""
        return dataclasses.asdict(getattr(self, self.backend))


def _block(cls: type, raw: Any, where: str) -> Any:
    """Build dataclass ``cls`` from a mapping; unknown keys and bad values raise ConfigError."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {raw!r}")
    names = [f.name for f in dataclasses.fields(cls)]
    for k in raw:
        if k not in names:
            raise ConfigError(f"{where}.{k}: unknown key; allowed: {', '.join(names)}")
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in raw or raw[f.name] is None and f.default is not None:
            continue
        v = raw[f.name]
        default = f.default if f.default is not dataclasses.MISSING else None
        try:
            kw[f.name] = _coerce(v, default, f.name)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where}.{f.name}: {e}") from None
    try:
        return cls(**kw)
    except ValueError as e:
        raise ConfigError(f"{where}: {e}") from None


def _coerce(v: Any, default: Any, name: str) -> Any:
    if name == "command":
        if isinstance(v, str):
            return tuple(shlex.split(v))
        if isinstance(v, Sequence):
            return tuple(str(x) for x in v)
        raise ValueError(f"expected a command string or list, got {v!r}")
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise ValueError(f"expected true or false, got {v!r}")
        return v
    if isinstance(default, int):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"expected a whole number, got {v!r}")
        return v
    if isinstance(default, float):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"expected a number, got {v!r}")
        return float(v)
    if v is not None and not isinstance(v, str):
        raise ValueError(f"expected a string, got {v!r}")
    return v


def detector_config(backend: Any, options: Any = None) -> DetectorConfig:
    """Validate ``detector=<backend>`` and the ``detect:`` block; raises :class:`ConfigError`."""
    if backend not in BACKENDS:
        raise ConfigError(f"detector: unknown value {backend!r}; allowed: {', '.join(BACKENDS)}")
    opts = options or {}
    if not isinstance(opts, Mapping):
        raise ConfigError(f"detect: expected a mapping, got {opts!r}")
    allowed = ("max_area_frac", *BACKENDS)
    for k in opts:
        if k not in allowed:
            raise ConfigError(f"detect.{k}: unknown key; allowed: {', '.join(allowed)}")
    frac = opts.get("max_area_frac", 0.5)
    if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 < frac <= 1:
        raise ConfigError(f"detect.max_area_frac: must be a number in (0, 1], got {frac!r}")
    cfg = DetectorConfig(
        backend=str(backend),
        max_area_frac=float(frac),
        oracle=_block(OracleOptions, opts.get("oracle"), "detect.oracle"),
        cv=_block(CvOptions, opts.get("cv"), "detect.cv"),
        onnx=_block(YoloOptions, opts.get("onnx"), "detect.onnx"),
        rknn=_block(YoloOptions, opts.get("rknn"), "detect.rknn"),
        helper=_block(HelperOptions, opts.get("helper"), "detect.helper"),
    )
    _check_selected(cfg)
    return cfg


def _check_selected(cfg: DetectorConfig) -> None:
    if cfg.backend in ("onnx", "rknn"):
        y: YoloOptions = getattr(cfg, cfg.backend)
        where = f"detect.{cfg.backend}"
        if not y.model:
            raise ConfigError(f"{where}.model: detector={cfg.backend} needs a model path")
        for key in ("model", "anchors"):
            path = getattr(y, key)
            if path and not Path(path).is_file():
                raise ConfigError(f"{where}.{key}: file not found: {path}")
        if y.threads < 1 or y.max_boxes < 1:
            raise ConfigError(f"{where}: threads and max_boxes must be >= 1")
        for key in ("confidence", "nms_iou"):
            if not 0.0 <= getattr(y, key) <= 1.0:
                raise ConfigError(f"{where}.{key}: must be in [0, 1]")
    if cfg.backend == "helper":
        h = cfg.helper
        if not h.command:
            raise ConfigError(
                "detect.helper.command: detector=helper needs the command that starts the helper"
            )
        if h.startup_timeout_s <= 0 or h.request_timeout_s <= 0 or h.idle_exit_s <= 0:
            raise ConfigError("detect.helper: timeouts must be > 0")
