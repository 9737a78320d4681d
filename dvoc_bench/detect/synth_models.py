"""ONNX models of our own making, for tests and benchmarks (no weights are downloaded, none are shipped).

- :func:`planted_model`: a YOLOv5-shaped detector whose three sigmoid heads are constants plus
  ``gain x mean(image)`` (gain 0 except where asked, so the graph really reads its input): decoding must
  recover exactly the boxes planted with :func:`plant_box`.
- :func:`yolov5n_like_model`: the YOLOv5n v6 layer graph (fused convolutions with SiLU, C3 blocks, SPPF,
  PANet neck, three 1x1 heads with sigmoid, nc = 1) with random weights: the real compute of the seed's
  model size class, for latency benchmarks. Its boxes mean nothing.

Both need the ``onnx`` package (the ``detect`` and ``dev`` extras), imported when called.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.detect.yolo import DEFAULT_ANCHORS, DEFAULT_INPUT

STRIDES = (8, 16, 32)
"""Strides of the three heads (P3, P4, P5)."""

OPSET = 13
"""ONNX opset of the generated models (read by every onnxruntime of the pinned range)."""
IR_VERSION = 8
"""ONNX IR version of the generated models."""


@dataclass(frozen=True)
class Plant:
    """One planted detection: the raw (already sigmoided) head values at one grid cell and anchor."""

    level: int
    """Head index 0..2 (stride 8, 16, 32)."""
    anchor: int
    """Anchor index 0..2 within the level."""
    gx: int
    """Grid column."""
    gy: int
    """Grid row."""
    values: tuple[float, ...]
    """``tx, ty, tw, th, obj, class...`` in [0, 1]."""


def plant_box(
    cx: float,
    cy: float,
    w: float,
    h: float,
    *,
    level: int,
    anchor: int,
    obj: float,
    cls: float = 1.0,
    anchors: Sequence[float] = DEFAULT_ANCHORS,
) -> Plant:
    """The plant that decodes to the box of centre ``(cx, cy)`` and size ``w x h`` in input pixels.

    Inverts ``cx = (2 p - 0.5 + gx) s`` and ``w = (2 p)^2 a``: needs ``w <= 4 a`` (``h`` likewise).
    """
    s = STRIDES[level]
    aw, ah = np.asarray(anchors, dtype=np.float64).reshape(3, 3, 2)[level, anchor]
    gx, gy = math.floor(cx / s), math.floor(cy / s)
    tx, ty = (cx / s - gx + 0.5) / 2, (cy / s - gy + 0.5) / 2
    tw, th = math.sqrt(w / aw) / 2, math.sqrt(h / ah) / 2
    values = (tx, ty, tw, th, obj, cls)
    if not all(0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"box ({cx}, {cy}, {w}, {h}) cannot be planted at level {level} anchor {anchor}")
    return Plant(level, anchor, gx, gy, values)


def planted_heads(plants: Sequence[Plant], input_size: int = DEFAULT_INPUT, nc: int = 1) -> list[np.ndarray]:
    """The three float32 NCHW heads holding ``plants`` (zeros elsewhere: objectness 0 is never kept)."""
    k = 5 + nc
    heads = [np.zeros((1, 3 * k, input_size // s, input_size // s), dtype=np.float32) for s in STRIDES]
    for p in plants:
        if len(p.values) != k:
            raise ValueError(f"a plant needs {k} values for nc={nc}, got {len(p.values)}")
        for i, v in enumerate(p.values):
            heads[p.level][0, p.anchor * k + i, p.gy, p.gx] = v
    return heads


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:
        raise ImportError("building ONNX models needs the onnx package: pip install -e '.[detect]'") from e
    return onnx


def _save(graph: Any, path: str | Path) -> Path:
    onnx = _onnx()
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    path = Path(path)
    onnx.save(model, str(path))
    return path


def planted_model(
    path: str | Path,
    plants: Sequence[Plant],
    input_size: int = DEFAULT_INPUT,
    nc: int = 1,
    mean_plants: Sequence[Plant] = (),
) -> Path:
    """Write the planted detector to ``path``: input ``images [1, 3, S, S]`` float32, outputs
    ``head0..head2 = planted + gain x mean(images)``. ``gain`` is 0 except at ``mean_plants``, whose values
    multiply the input's mean (a way to check what the model was fed)."""
    onnx = _onnx()
    h = onnx.helper
    tp = onnx.TensorProto
    heads = planted_heads(plants, input_size, nc)
    gains = planted_heads(mean_plants, input_size, nc)
    nodes = [h.make_node("ReduceMean", ["images"], ["mean"], axes=[1, 2, 3], keepdims=1)]
    inits = []
    outputs = []
    for i, (arr, gain) in enumerate(zip(heads, gains, strict=True)):
        inits += [
            onnx.numpy_helper.from_array(arr, f"plant{i}"),
            onnx.numpy_helper.from_array(gain, f"gain{i}"),
        ]
        nodes += [
            h.make_node("Mul", ["mean", f"gain{i}"], [f"from_input{i}"]),
            h.make_node("Add", [f"plant{i}", f"from_input{i}"], [f"head{i}"]),
        ]
        outputs.append(h.make_tensor_value_info(f"head{i}", tp.FLOAT, list(arr.shape)))
    graph = h.make_graph(
        nodes,
        "planted_yolov5",
        [h.make_tensor_value_info("images", tp.FLOAT, [1, 3, input_size, input_size])],
        outputs,
        inits,
    )
    return _save(graph, path)


class _Builder:
    """Accumulates nodes and random initialisers of a fused-conv network."""

    def __init__(self, seed: int) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.rng = np.random.default_rng(seed)
        self.n = 0
        self.params = 0

    def name(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def conv(
        self, x: str, c1: int, c2: int, k: int, s: int = 1, act: bool = True, pad: int | None = None
    ) -> str:
        onnx = _onnx()
        w = (self.rng.standard_normal((c2, c1, k, k)) * math.sqrt(1.0 / (c1 * k * k))).astype(np.float32)
        b = np.zeros(c2, dtype=np.float32)
        wn, bn, y = self.name("w"), self.name("b"), self.name("conv")
        self.inits += [onnx.numpy_helper.from_array(w, wn), onnx.numpy_helper.from_array(b, bn)]
        self.params += w.size + b.size
        p = k // 2 if pad is None else pad
        self.nodes.append(
            onnx.helper.make_node("Conv", [x, wn, bn], [y], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4)
        )
        if not act:
            return y
        sg, out = self.name("sig"), self.name("silu")
        self.nodes += [
            onnx.helper.make_node("Sigmoid", [y], [sg]),
            onnx.helper.make_node("Mul", [y, sg], [out]),
        ]
        return out

    def op(self, kind: str, inputs: list[str], **attrs: Any) -> str:
        out = self.name(kind.lower())
        self.nodes.append(_onnx().helper.make_node(kind, inputs, [out], **attrs))
        return out

    def c3(self, x: str, c1: int, c2: int, n: int, shortcut: bool = True) -> str:
        c_ = c2 // 2
        a = self.conv(x, c1, c_, 1)
        for _ in range(n):
            y = self.conv(self.conv(a, c_, c_, 1), c_, c_, 3)
            a = self.op("Add", [a, y]) if shortcut else y
        b = self.conv(x, c1, c_, 1)
        return self.conv(self.op("Concat", [a, b], axis=1), 2 * c_, c2, 1)

    def sppf(self, x: str, c1: int, c2: int) -> str:
        c_ = c1 // 2
        a = self.conv(x, c1, c_, 1)
        pools = [a]
        for _ in range(3):
            pools.append(self.op("MaxPool", [pools[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2] * 4))
        return self.conv(self.op("Concat", pools, axis=1), 4 * c_, c2, 1)

    def up(self, x: str) -> str:
        onnx = _onnx()
        sn = self.name("scales")
        self.inits.append(onnx.numpy_helper.from_array(np.asarray([1, 1, 2, 2], dtype=np.float32), sn))
        return self.op("Resize", [x, "", sn], mode="nearest")


def yolov5n_like_model(path: str | Path, input_size: int = DEFAULT_INPUT, seed: int = 0, nc: int = 1) -> Path:
    """Write a YOLOv5n-sized random-weight detector (three sigmoid heads) to ``path``."""
    onnx = _onnx()
    b = _Builder(seed)
    x = b.conv("images", 3, 16, 6, 2, pad=2)  # the stem: 6x6, stride 2, padding 2
    x = b.conv(x, 16, 32, 3, 2)
    x = b.c3(x, 32, 32, 1)
    x = b.conv(x, 32, 64, 3, 2)
    p3 = b.c3(x, 64, 64, 2)
    x = b.conv(p3, 64, 128, 3, 2)
    p4 = b.c3(x, 128, 128, 3)
    x = b.conv(p4, 128, 256, 3, 2)
    x = b.c3(x, 256, 256, 1)
    x = b.sppf(x, 256, 256)
    h10 = b.conv(x, 256, 128, 1)
    x = b.c3(b.op("Concat", [b.up(h10), p4], axis=1), 256, 128, 1, shortcut=False)
    h14 = b.conv(x, 128, 64, 1)
    out3 = b.c3(b.op("Concat", [b.up(h14), p3], axis=1), 128, 64, 1, shortcut=False)
    x = b.conv(out3, 64, 64, 3, 2)
    out4 = b.c3(b.op("Concat", [x, h14], axis=1), 128, 128, 1, shortcut=False)
    x = b.conv(out4, 128, 128, 3, 2)
    out5 = b.c3(b.op("Concat", [x, h10], axis=1), 256, 256, 1, shortcut=False)
    outputs = []
    for i, (feat, c) in enumerate(((out3, 64), (out4, 128), (out5, 256))):
        head = b.conv(feat, c, 3 * (5 + nc), 1, act=False)
        b.nodes.append(onnx.helper.make_node("Sigmoid", [head], [f"head{i}"]))
        g = input_size // STRIDES[i]
        outputs.append(
            onnx.helper.make_tensor_value_info(f"head{i}", onnx.TensorProto.FLOAT, [1, 3 * (5 + nc), g, g])
        )
    graph = onnx.helper.make_graph(
        b.nodes,
        "yolov5n_like",
        [
            onnx.helper.make_tensor_value_info(
                "images", onnx.TensorProto.FLOAT, [1, 3, input_size, input_size]
            )
        ],
        outputs,
        b.inits,
    )
    return _save(graph, path)
