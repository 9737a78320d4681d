"""The ``detector`` config group: which backend, its settings, validated with errors naming the key.

``detector=<backend>`` picks ``conf/detector/<backend>.yaml``, which starts from the declared defaults
below (registered as ``detector/base_<backend>`` by :func:`dvoc_bench.runner.settings.register_defaults`); its
settings are flat: ``detector=onnx detector.model=m.onnx detector.anchors=RK_anchors.txt``. Every backend
has ``max_area_frac`` (SoM drops boxes covering more of the screen). Required values (a model path, a
command) are checked only when a SoM method runs.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from dvoc_bench.core.declare import ConfigError, Declared, PosFloat, PosInt, Prob, validate
from dvoc_bench.detect.cv import CvOptions
from dvoc_bench.detect.oracle import OracleOptions

BACKENDS = ("oracle", "cv", "onnx", "rknn", "helper", "omniparser")
"""Detector backends accepted in ``detector=...``."""


class YoloOptions(Declared):
    """Settings of the in-process YOLOv5 backends (``onnx`` and ``rknn``)."""

    model: str | None = None
    """Path of the ``.onnx`` / ``.rknn`` model."""
    anchors: str | None = None
    """Path of its ``RK_anchors.txt`` (18 numbers; the anchors ship with the model), or
    ``yolov5-default`` to say that YOLOv5's default anchors are meant; required."""
    threads: PosInt = 2
    """onnxruntime intra-op threads (ignored by rknn)."""
    confidence: Prob = 0.3
    """Confidence threshold (objectness x class)."""
    nms_iou: Prob = 0.6
    """NMS IoU threshold."""
    max_boxes: PosInt = 50
    """At most this many boxes."""


ANCHORS_DEFAULT = "yolov5-default"
"""The value of ``detector.anchors`` that asks for YOLOv5's default anchors explicitly."""


class RknnOptions(YoloOptions):
    """Settings of the ``rknn`` backend: the YOLOv5 ones plus the NPU cores."""

    core_mask: int | None = Field(None, ge=0, le=0xFFFF)
    """``RKNNLite.init_runtime(core_mask=...)``: 0 auto, 1/2/4 one core, 3 cores 0-1, 7 cores 0-2, 65535 all
    (RK3576/RK3588 only); ``null`` leaves the runtime's default."""


class OmniparserOptions(Declared):
    """Settings of ``detector=omniparser``: OmniParser-v2's icon detector (an ultralytics YOLO11m) on
    onnxruntime; the defaults are OmniParser's."""

    model: str | None = None
    """Path of the published ``icon_detect/model.pt`` (converted once to ONNX, cached by its sha256) or of
    an ONNX export of it; required."""
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    """When set, the weights' sha256 must equal it."""
    imgsz: int = Field(640, ge=32, le=4096, multiple_of=32)
    """Letterbox size: the longer side is scaled to it (ultralytics' ``imgsz``; a multiple of 32)."""
    threads: PosInt = 2
    """onnxruntime intra-op threads."""
    confidence: Prob = 0.05
    """Score threshold (a box is kept when its score exceeds it)."""
    nms_iou: Prob = 0.1
    """NMS IoU threshold (a box overlapping a kept one by more is suppressed)."""
    max_boxes: PosInt = 300
    """At most this many boxes after NMS (ultralytics' ``max_det``; SoM then keeps its own 50)."""


class HelperOptions(Declared):
    """Settings of the ``helper`` backend (a process speaking the seed's stdin protocol)."""

    command: tuple[str, ...] = ()
    """The command line, e.g. ``ssh board /usr/lib/aico/ui_grounding_helper --model ...`` (a string is
    split like a shell would, without running one)."""
    startup_timeout_s: PosFloat = 60.0
    """Seconds to wait for ``READY``."""
    request_timeout_s: PosFloat = 60.0
    """Seconds to wait for the reply to one request."""
    on_demand: bool = False
    """``false`` (the seed's default): resident, started at once, restarted in the background after a
    failure, no idle exit; ``true``: started at the first request, stopped after ``idle_exit_s`` without
    one."""
    idle_exit_s: PosFloat = 120.0
    """Idle time after which an on-demand helper is asked to quit."""

    @field_validator("command", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if v is None:
            return ()
        if isinstance(v, str):
            return tuple(shlex.split(v))
        return v


class _Area(Declared):
    if TYPE_CHECKING:  # for the checker only (not a pydantic field): every backend's settings declare it
        backend: str

    max_area_frac: float = Field(0.5, gt=0.0, le=1.0)
    """SoM drops boxes covering more than this share of the screen."""
    tag_layout: Literal["avoid", "spec"] = "avoid"
    """Where SoM tags go: ``avoid`` = the seed's place unless it hides another tag (then the least-covering
    free place around the box, shrinking the tag if needed); ``spec`` = always the seed's place."""


class OracleSettings(_Area, OracleOptions):
    """``detector=oracle``: the scene's own element boxes, with optional error rates."""

    backend: Literal["oracle"] = "oracle"


class CvSettings(_Area, CvOptions):
    """``detector=cv``: a classical edge-and-component detector, no model."""

    backend: Literal["cv"] = "cv"


class _YoloSettings(_Area, YoloOptions):
    @model_validator(mode="after")
    def _files(self) -> _YoloSettings:
        if not self.model:
            raise ValueError(f"model: detector={self.backend} needs a model path")
        if not Path(self.model).is_file():
            raise ValueError(f"model: file not found: {self.model}")
        if not self.anchors:
            raise ValueError(
                f"anchors: detector={self.backend} needs the anchors file shipped with the model "
                f"(RK_anchors.txt), or detector.anchors={ANCHORS_DEFAULT} to use YOLOv5's default anchors"
            )
        if self.anchors != ANCHORS_DEFAULT and not Path(self.anchors).is_file():
            raise ValueError(f"anchors: file not found: {self.anchors}")
        return self


class OnnxSettings(_YoloSettings):
    """``detector=onnx``: a YOLOv5 model through onnxruntime."""

    backend: Literal["onnx"] = "onnx"


class RknnSettings(_YoloSettings, RknnOptions):
    """``detector=rknn``: a YOLOv5 model through rknnlite (aarch64 RK35xx boards)."""

    backend: Literal["rknn"] = "rknn"


class OmniparserSettings(_Area, OmniparserOptions):
    """``detector=omniparser``: OmniParser-v2's icon detector through onnxruntime."""

    backend: Literal["omniparser"] = "omniparser"

    @model_validator(mode="after")
    def _weights(self) -> OmniparserSettings:
        from dvoc_bench.detect.omniparser import WeightsError, find_weights, prepare

        try:  # reads (and converts once) the weights: a bad file stops the sweep before anything runs
            if not self.model:  # where .ci/run and the tests put them (detect/omniparser.weights_candidates)
                object.__setattr__(self, "model", str(find_weights()))
            prepare(str(self.model), self.sha256)
        except WeightsError as e:
            raise ValueError(f"model: {e}") from None
        return self


class HelperSettings(_Area, HelperOptions):
    """``detector=helper``: any process speaking the helper protocol."""

    backend: Literal["helper"] = "helper"

    @model_validator(mode="after")
    def _command(self) -> HelperSettings:
        if not self.command:
            raise ValueError("command: detector=helper needs the command that starts the helper")
        return self


DETECTOR_SETTINGS: dict[str, type[_Area]] = {
    "oracle": OracleSettings,
    "cv": CvSettings,
    "onnx": OnnxSettings,
    "rknn": RknnSettings,
    "helper": HelperSettings,
    "omniparser": OmniparserSettings,
}
"""The settings of each backend (the ``detector`` group's options)."""

_OPTIONS: dict[str, type[Declared]] = {
    "oracle": OracleOptions,
    "cv": CvOptions,
    "onnx": YoloOptions,
    "rknn": RknnOptions,
    "helper": HelperOptions,
    "omniparser": OmniparserOptions,
}


@dataclass(frozen=True)
class DetectorConfig:
    """The whole detector choice of a sweep."""

    backend: str = "oracle"
    """One of :data:`BACKENDS`."""
    max_area_frac: float = 0.5
    """SoM drops boxes covering more than this share of the screen."""
    tag_layout: str = "avoid"
    """Where SoM tags go (``avoid | spec``)."""
    oracle: OracleOptions = field(default_factory=OracleOptions)
    """Oracle error rates."""
    cv: CvOptions = field(default_factory=CvOptions)
    """Classical detector knobs."""
    onnx: YoloOptions = field(default_factory=YoloOptions)
    """onnxruntime backend."""
    rknn: RknnOptions = field(default_factory=RknnOptions)
    """rknnlite backend."""
    helper: HelperOptions = field(default_factory=HelperOptions)
    """Helper-process backend."""
    omniparser: OmniparserOptions = field(default_factory=OmniparserOptions)
    """OmniParser's icon detector on onnxruntime."""

    def digest(self) -> str:
        """Hash of the selected backend's settings (what changes its boxes)."""
        d = {"backend": self.backend, "max_area_frac": self.max_area_frac, "opts": self.selected()}
        if self.tag_layout != "avoid":  # the frame changes, not the boxes; the default keeps old digests
            d["tag_layout"] = self.tag_layout
        blob = json.dumps(
            d,
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def selected(self) -> dict[str, Any]:
        """The selected backend's settings as a plain mapping."""
        return getattr(self, self.backend).model_dump()


def detector_config(node: Mapping[str, Any] | str | None = None) -> DetectorConfig:
    """Validate the ``detector`` node (``{backend: cv, max_area_frac: 0.5, edge_threshold: 24, ...}``; a
    bare backend name takes its defaults); raises :class:`ConfigError` naming ``detector.<key>``."""
    if node is None or isinstance(node, str):
        node = {"backend": node or "oracle"}
    backend = node.get("backend", "oracle")
    if backend not in DETECTOR_SETTINGS:
        raise ConfigError(f"detector: unknown value {backend!r}; allowed: {', '.join(BACKENDS)}")
    s = validate(DETECTOR_SETTINGS[backend], dict(node), "detector.")
    opts: Any = _OPTIONS[backend](**s.model_dump(include=set(_OPTIONS[backend].model_fields)))
    return DetectorConfig(
        backend=backend,
        max_area_frac=s.max_area_frac,
        tag_layout=s.tag_layout,
        **{backend: opts},
    )
