"""YOLOv5 pre- and post-processing of the seed's detector, in numpy.

Pipeline of one screenshot ``W x H`` for a square model input ``S`` (960):

1. **Letterbox** (:func:`letterbox`): ``r = min(S/H, S/W)`` (may enlarge), ``new_w = round(W r)``,
   ``new_h = round(H r)`` (Python rounding), padding ``dw = (S - new_w) / 2`` split as
   ``left = round(dw - 0.1)``, ``right = round(dw + 0.1)`` (the odd pixel goes right / bottom), fill 114.
   The resize is **half-pixel bilinear without antialiasing** (:func:`resize_bilinear`):
   ``x_src = (j + 0.5) n_src / n_dst - 0.5`` clamped to ``[0, n_src - 1]``, separable, rounded half up to
   uint8 (what the board's runner feeds its NPU). Pillow's bilinear resize antialiases on downscale and is
   not used.
2. **Heads**: three tensors ``[1, 3 (5 + nc), gh, gw]`` (NCHW) with the sigmoid already applied inside the
   model (the RKNN-friendly export). Channel ``a (5 + nc) + k``: ``k`` = tx, ty, tw, th, obj, classes.
   Stride ``s = S / gh``; heads are matched to anchor levels by stride (smallest stride = first level).
3. **Decode** (:func:`decode_heads`): ``cx = (2 p_tx - 0.5 + gx) s``, ``w = (2 p_tw)^2 anchor_w`` (anchors in
   input pixels from an ``RK_anchors.txt``: 18 floats, P3 to P5, ``w, h`` per anchor),
   ``score = obj x max(class)``; a candidate is kept when ``obj > conf`` and ``score > conf`` (strict, as
   ultralytics).
4. **Back to source pixels** (:func:`to_source`), the exact inverse of the resize:
   ``x = (x_lb - left) W / new_w``, ``y = (y_lb - top) H / new_h``, clipped to ``[0, W] x [0, H]``; boxes
   that clip to nothing (entirely in the padding) are dropped.
5. **NMS** (:func:`nms`) on source coordinates normalised by ``W, H``: greedy by descending score (stable),
   continuous IoU (no ``+1``), a box is suppressed when ``IoU > iou`` with a kept one; at most
   ``max_det`` (50) boxes are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dvoc_bench.core.geometry import Box
from dvoc_bench.detect.types import Detection

PAD_VALUE = 114
"""Grey level of the letterbox padding."""

DEFAULT_INPUT = 960
"""Square input side of the seed's model."""

DEFAULT_ANCHORS: tuple[float, ...] = (
    10.0, 13.0, 16.0, 30.0, 33.0, 23.0,
    30.0, 61.0, 62.0, 45.0, 59.0, 119.0,
    116.0, 90.0, 156.0, 198.0, 373.0, 326.0,
)  # fmt: skip
"""YOLOv5's default anchors in input pixels (P3, P4, P5; ``w, h`` per anchor), as an export writes them."""


@dataclass(frozen=True)
class Letterbox:
    """Where the resized screenshot sits inside the square model input."""

    src_w: int
    """Source width."""
    src_h: int
    """Source height."""
    size: int
    """Square input side ``S``."""
    ratio: float
    """Nominal scale ``min(S/H, S/W)``."""
    new_w: int
    """Width of the resized image inside the input."""
    new_h: int
    """Height of the resized image inside the input."""
    left: int
    """Padding columns on the left."""
    top: int
    """Padding rows on top."""
    right: int
    """Padding columns on the right (``left`` or ``left + 1``)."""
    bottom: int
    """Padding rows at the bottom (``top`` or ``top + 1``)."""


def letterbox_geometry(src_w: int, src_h: int, size: int = DEFAULT_INPUT) -> Letterbox:
    """The ultralytics ``letterbox(auto=False, scaleup=True)`` geometry for a ``src_w x src_h`` image."""
    if src_w <= 0 or src_h <= 0 or size <= 0:
        raise ValueError(f"sizes must be positive, got {src_w}x{src_h} -> {size}")
    r = min(size / src_h, size / src_w)
    new_w, new_h = round(src_w * r), round(src_h * r)
    dw, dh = (size - new_w) / 2, (size - new_h) / 2
    left, right = round(dw - 0.1), round(dw + 0.1)
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    return Letterbox(src_w, src_h, size, r, new_w, new_h, left, top, right, bottom)


def _axis_weights(n_src: int, n_dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Half-pixel sampling along one axis: ``(i0, i1, frac)`` per output index."""
    x = (np.arange(n_dst, dtype=np.float64) + 0.5) * (n_src / n_dst) - 0.5
    x = np.clip(x, 0.0, n_src - 1.0)
    i0 = np.floor(x).astype(np.intp)
    i1 = np.minimum(i0 + 1, n_src - 1)
    return i0, i1, x - i0


HALF_EPS = 1e-3
"""Values within this of a half are rounded up (float32 error is below 1e-4 for 0-255 data)."""


def resize_bilinear(image: np.ndarray, new_w: int, new_h: int) -> np.ndarray:
    """Half-pixel bilinear resize of an ``HxWxC`` uint8 image, no antialiasing; uint8 result.

    Equals ``torch.nn.functional.interpolate(mode="bilinear", align_corners=False)`` and ONNX ``Resize``
    with ``half_pixel``, rounded half up (computed in float32: a value within :data:`HALF_EPS` below a half
    counts as the half); matches ``cv2.INTER_LINEAR`` to within one level.
    """
    h, w = image.shape[:2]
    if (new_w, new_h) == (w, h):
        return image.copy()
    y0, y1, fy = _axis_weights(h, new_h)
    x0, x1, fx = _axis_weights(w, new_w)
    f32 = np.float32
    rows = image[y0].astype(f32)  # vertical pass: rows = I[y0] + fy (I[y1] - I[y0])
    d = image[y1].astype(f32)
    d -= rows
    d *= fy.astype(f32)[:, None, None]
    rows += d
    out = rows[:, x0]  # horizontal pass
    d = rows[:, x1]
    d -= out
    d *= fx.astype(f32)[None, :, None]
    out += d
    out += f32(0.5 + HALF_EPS)
    np.floor(out, out=out)
    return np.clip(out, 0, 255).astype(np.uint8)


def letterbox(
    image: np.ndarray, size: int = DEFAULT_INPUT, fill: int = PAD_VALUE
) -> tuple[np.ndarray, Letterbox]:
    """The ``size x size x 3`` uint8 model input for ``image`` and its geometry."""
    h, w = image.shape[:2]
    lb = letterbox_geometry(w, h, size)
    out = np.full((size, size, image.shape[2]), fill, dtype=np.uint8)
    out[lb.top : lb.top + lb.new_h, lb.left : lb.left + lb.new_w] = resize_bilinear(image, lb.new_w, lb.new_h)
    return out, lb


def to_nchw_float(lb_image: np.ndarray) -> np.ndarray:
    """``[1, 3, S, S]`` float32 in [0, 1] (the ONNX export's input: RGB, ``/255``)."""
    h, w, c = lb_image.shape
    x = np.empty((1, c, h, w), dtype=np.float32)
    for i in range(c):  # per channel: no full-size temporaries
        np.divide(lb_image[:, :, i], np.float32(255.0), out=x[0, i], dtype=np.float32)
    return x


# ------------------------------------------------------------------------------------------ anchors


def parse_anchors(text: str, where: str = "anchors") -> np.ndarray:
    """Anchors from ``RK_anchors.txt`` text: 18 numbers (one per line; commas and spaces also accepted)
    -> array ``(3 levels, 3 anchors, 2)`` of ``(w, h)`` in input pixels."""
    tokens = text.replace(",", " ").split()
    try:
        values = [float(t) for t in tokens]
    except ValueError as e:
        raise ValueError(f"{where}: not a list of numbers ({e})") from None
    if len(values) != 18:
        raise ValueError(f"{where}: expected 18 numbers (3 levels x 3 anchors x w,h), got {len(values)}")
    arr = np.asarray(values, dtype=np.float64).reshape(3, 3, 2)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{where}: anchors must be positive finite numbers")
    return arr


def load_anchors(path: str | Path) -> np.ndarray:
    """Read an ``RK_anchors.txt``-style file (see :func:`parse_anchors`)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"anchors file not found: {p}")
    return parse_anchors(p.read_text(encoding="utf-8"), str(p))


def format_anchors(anchors: Sequence[float] | np.ndarray) -> str:
    """The text of an ``RK_anchors.txt`` (one number per line)."""
    return "".join(f"{float(v)!r}\n" for v in np.asarray(anchors, dtype=np.float64).ravel())


# ------------------------------------------------------------------------------------------- decode


def heads_as_nchw(heads: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Heads as ``[1, C, gh, gw]``. The channel axis is the one all heads share (the grids differ), so an
    NHWC set (the RV1106 native layout) is transposed and an NCHW set is returned as is."""
    hs = [np.asarray(h) for h in heads]
    hs = [h[None] if h.ndim == 3 else h for h in hs]
    for h in hs:
        if h.ndim != 4 or h.shape[0] != 1:
            raise ValueError(f"expected heads of shape [1, C, gh, gw], got {h.shape}")
    if len({h.shape[1] for h in hs}) == 1 and (len(hs) == 1 or len({h.shape[2] for h in hs}) > 1):
        return hs
    if len({h.shape[3] for h in hs}) == 1:
        return [h.transpose(0, 3, 1, 2) for h in hs]
    raise ValueError(f"cannot tell the channel axis of heads {[h.shape for h in hs]}")


def decode_heads(
    heads: Sequence[np.ndarray], anchors: np.ndarray, input_w: int, input_h: int, conf: float
) -> tuple[np.ndarray, np.ndarray]:
    """Candidates of the three sigmoid heads: ``(boxes (N, 4) xyxy in input pixels, scores (N,))``.

    Rows come level by level (smallest stride first), then anchor, then grid row, then grid column.
    Only rows with ``obj > conf`` and ``obj * max(class) > conf`` are returned.
    """
    if len(heads) != len(anchors):
        raise ValueError(f"expected {len(anchors)} heads (one per anchor level), got {len(heads)}")
    hs = heads_as_nchw(heads)
    hs.sort(key=lambda h: input_h / h.shape[2])  # by stride: P3 (8) first
    boxes, scores = [], []
    for level, h in enumerate(hs):
        c, gh, gw = h.shape[1:]
        na = anchors.shape[1]
        if c % na or c // na < 6:
            raise ValueError(f"head {level}: {c} channels is not {na} x (5 + classes)")
        p = h[0].reshape(na, c // na, gh, gw).astype(np.float64)
        obj = p[:, 4]
        score = obj * p[:, 5:].max(axis=1)
        a, gy, gx = np.nonzero((obj > conf) & (score > conf))
        if a.size == 0:
            continue
        sx, sy = input_w / gw, input_h / gh
        q = p[a, :, gy, gx]  # (n, 5 + nc)
        cx = (2.0 * q[:, 0] - 0.5 + gx) * sx
        cy = (2.0 * q[:, 1] - 0.5 + gy) * sy
        w = (2.0 * q[:, 2]) ** 2 * anchors[level, a, 0]
        hh = (2.0 * q[:, 3]) ** 2 * anchors[level, a, 1]
        x0, y0 = cx - w / 2.0, cy - hh / 2.0
        boxes.append(np.stack([x0, y0, x0 + w, y0 + hh], axis=1))
        scores.append(score[a, gy, gx])
    if not boxes:
        return np.zeros((0, 4)), np.zeros(0)
    return np.concatenate(boxes), np.concatenate(scores)


def to_source(boxes: np.ndarray, lb: Letterbox) -> np.ndarray:
    """Letterbox-input boxes -> source pixels (exact inverse of the resize), clipped to ``[0,W]x[0,H]``."""
    out = np.empty_like(boxes, dtype=np.float64)
    sx, sy = lb.src_w / lb.new_w, lb.src_h / lb.new_h
    out[:, [0, 2]] = np.clip((boxes[:, [0, 2]] - lb.left) * sx, 0.0, lb.src_w)
    out[:, [1, 3]] = np.clip((boxes[:, [1, 3]] - lb.top) * sy, 0.0, lb.src_h)
    return out


def iou_one(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Continuous IoU of one xyxy box with many (0 where the union is empty)."""
    ix = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0.0, None)
    iy = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0.0, None)
    inter = ix * iy
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def nms(boxes: np.ndarray, scores: np.ndarray, iou: float, max_det: int) -> np.ndarray:
    """Greedy NMS: indices kept, by descending score (stable), suppressing ``IoU > iou``; at most
    ``max_det``."""
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    while order.size and len(keep) < max_det:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        order = rest[iou_one(boxes[i], boxes[rest]) <= iou]
    return np.asarray(keep, dtype=np.intp)


@dataclass(frozen=True)
class PostConfig:
    """Thresholds of the post-processing."""

    confidence: float = 0.3
    """Candidates need ``obj > confidence`` and ``obj * class > confidence`` (the Agent's 0.3; the board
    runner's default is 0)."""
    nms_iou: float = 0.6
    """Suppress a box whose IoU with a kept one exceeds this (the Agent's 0.6; the runner's 0.8)."""
    max_boxes: int = 50
    """At most this many boxes after NMS."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {self.confidence}")
        if not 0.0 <= self.nms_iou <= 1.0:
            raise ValueError(f"nms_iou must be in [0, 1], got {self.nms_iou}")
        if self.max_boxes < 1:
            raise ValueError(f"max_boxes must be >= 1, got {self.max_boxes}")


def postprocess(
    heads: Sequence[np.ndarray], anchors: np.ndarray, lb: Letterbox, post: PostConfig
) -> list[Detection]:
    """Heads of one letterboxed screenshot -> detections in source pixels, by descending score."""
    boxes, scores = decode_heads(heads, anchors, lb.size, lb.size, post.confidence)
    if scores.size == 0:
        return []
    src = to_source(boxes, lb)
    ok = (src[:, 2] > src[:, 0]) & (src[:, 3] > src[:, 1])
    src, scores = src[ok], scores[ok]
    norm = src / np.asarray([lb.src_w, lb.src_h, lb.src_w, lb.src_h], dtype=np.float64)
    keep = nms(norm, scores, post.nms_iou, post.max_boxes)
    return [Detection(Box.from_list(src[i].tolist()), float(scores[i])) for i in keep]
