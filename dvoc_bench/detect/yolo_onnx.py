"""Build an ultralytics YOLO detection network (YOLO11: ``C3k2``, ``SPPF``, ``C2PSA``; YOLOv8: ``C2f``) as
an ONNX graph straight from the tensors of its checkpoint (:mod:`.pt_reader`), with no torch.

The graph follows each block's ``forward`` in ultralytics (8.3) and ``DetectionModel._predict_once`` (the
layer list with its ``f`` inputs), with every ``Conv`` + ``BatchNorm2d`` folded into one convolution, as
ultralytics' own ``fuse()`` does at predict time. Its input is ``images`` ``[1, 3, H, W]`` float32 RGB
``/255`` (``H, W`` dynamic, multiples of the largest stride), its output ``output0`` ``[1, 4 + nc, N]``:
``cx, cy, w, h`` in input pixels (distribution-focal decoding of ``reg_max`` bins, anchors at cell
centres times the stride) and the sigmoid class scores: the layout of ultralytics' ONNX export, so an
export made with ``yolo export format=onnx`` runs through the same post-processing.

A block this builder does not know raises :class:`~dvoc_bench.detect.pt_reader.PtError` naming it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from dvoc_bench.detect.pt_reader import Module, PtError

OPSET = 17
"""ONNX opset of the built graph."""

INPUT_NAME = "images"
"""Input name (as ultralytics' export)."""

OUTPUT_NAME = "output0"
"""Output name (as ultralytics' export)."""


class _Graph:
    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.h, self.nh = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def name(self, stem: str) -> str:
        self._n += 1
        return f"{stem}_{self._n}"

    def const(self, value: np.ndarray, stem: str = "c") -> str:
        n = self.name(stem)
        self.inits.append(self.nh.from_array(np.asarray(value), n))
        return n

    def op(self, op: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> Any:
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(self.h.make_node(op, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs


def _pair(v: Any) -> list[int]:
    return [int(v), int(v)] if isinstance(v, int | float) else [int(x) for x in v]


def _conv2d(g: _Graph, x: str, conv: Module, bn: Module | None) -> str:
    a = conv.attrs
    if a.get("padding_mode", "zeros") != "zeros" or a.get("transposed"):
        raise PtError(f"unsupported convolution ({a.get('padding_mode')}, transposed={a.get('transposed')})")
    w: np.ndarray = conv.param("weight").astype(np.float32)
    b = conv.params.get("bias")
    b = np.zeros(w.shape[0], np.float32) if b is None else b.astype(np.float32)
    if bn is not None:  # fold: y = gamma (conv - mean) / sqrt(var + eps) + beta
        scale = bn.param("weight") / np.sqrt(bn.param("running_var") + float(bn.attrs.get("eps", 1e-5)))
        w = w * scale[:, None, None, None]
        b = (b - bn.param("running_mean")) * scale + bn.param("bias")
    pad = a.get("padding", 0)
    if isinstance(pad, str):
        raise PtError(f"unsupported convolution padding {pad!r}")
    ph, pw = _pair(pad)
    return g.op(
        "Conv",
        [x, g.const(w.astype(np.float32), "w"), g.const(b.astype(np.float32), "b")],
        kernel_shape=list(w.shape[2:]),
        strides=_pair(a.get("stride", 1)),
        pads=[ph, pw, ph, pw],
        dilations=_pair(a.get("dilation", 1)),
        group=int(a.get("groups", 1)),
    )


def _act(g: _Graph, x: str, act: Module | None) -> str:
    if act is None or act.name == "Identity":
        return x
    if act.name == "SiLU":
        return g.op("Mul", [x, g.op("Sigmoid", [x])])
    if act.name == "ReLU":
        return g.op("Relu", [x])
    if act.name == "Sigmoid":
        return g.op("Sigmoid", [x])
    if act.name == "Hardswish":
        return g.op("HardSwish", [x])
    if act.name == "LeakyReLU":
        return g.op("LeakyRelu", [x], alpha=float(act.attrs.get("negative_slope", 0.01)))
    raise PtError(f"unsupported activation {act.name}")


def _split(g: _Graph, x: str, sizes: list[int], axis: int = 1) -> list[str]:
    outs = g.op("Split", [x, g.const(np.asarray(sizes, np.int64), "split")], n_out=len(sizes), axis=axis)
    return outs if isinstance(outs, list) else [outs]


def _cat(g: _Graph, xs: list[str], axis: int = 1) -> str:
    return g.op("Concat", xs, axis=axis)


class _Builder:
    def __init__(self, g: _Graph) -> None:
        self.g = g
        self.blocks: Counter[str] = Counter()

    def run(self, m: Module, x: str) -> str:
        fn = getattr(self, f"_m_{m.name}", None)
        if fn is None:
            raise PtError(f"unsupported block {m.qual}")
        self.blocks[m.name] += 1
        return fn(m, x)

    def _seq(self, m: Module, x: str) -> str:
        for c in m.children.values():
            x = self.run(c, x)
        return x

    _m_Sequential = _seq

    def _m_Identity(self, m: Module, x: str) -> str:
        return x

    def _m_Conv(self, m: Module, x: str) -> str:
        y = _conv2d(self.g, x, m.child("conv"), m.children.get("bn"))
        return _act(self.g, y, m.children.get("act"))

    _m_DWConv = _m_Conv

    def _m_Conv2d(self, m: Module, x: str) -> str:
        return _conv2d(self.g, x, m, None)

    def _m_Bottleneck(self, m: Module, x: str) -> str:
        y = self.run(m.child("cv2"), self.run(m.child("cv1"), x))
        return self.g.op("Add", [x, y]) if m.attrs.get("add") else y

    def _m_C2f(self, m: Module, x: str) -> str:  # also C3k2: cv1 -> chunk(2) -> each m on the last -> cv2
        c = int(m.attrs["c"])
        ys = _split(self.g, self.run(m.child("cv1"), x), [c, c])
        for b in m.child("m").children.values():
            ys.append(self.run(b, ys[-1]))
        return self.run(m.child("cv2"), _cat(self.g, ys))

    _m_C3k2 = _m_C2f

    def _m_C3(self, m: Module, x: str) -> str:  # also C3k
        a = self.run(m.child("m"), self.run(m.child("cv1"), x))
        return self.run(m.child("cv3"), _cat(self.g, [a, self.run(m.child("cv2"), x)]))

    _m_C3k = _m_C3

    def _m_SPPF(self, m: Module, x: str) -> str:
        pool = m.child("m").attrs
        k, p = int(_pair(pool["kernel_size"])[0]), int(_pair(pool["padding"])[0])
        ys = [self.run(m.child("cv1"), x)]
        for _ in range(3):
            ys.append(self.g.op("MaxPool", [ys[-1]], kernel_shape=[k, k], strides=[1, 1], pads=[p, p, p, p]))
        return self.run(m.child("cv2"), _cat(self.g, ys))

    def _m_C2PSA(self, m: Module, x: str) -> str:
        c = int(m.attrs["c"])
        a, b = _split(self.g, self.run(m.child("cv1"), x), [c, c])
        b = self.run(m.child("m"), b)
        return self.run(m.child("cv2"), _cat(self.g, [a, b]))

    def _m_PSABlock(self, m: Module, x: str) -> str:
        add = bool(m.attrs.get("add"))
        y = self.run(m.child("attn"), x)
        x = self.g.op("Add", [x, y]) if add else y
        y = self.run(m.child("ffn"), x)
        return self.g.op("Add", [x, y]) if add else y

    def _m_Attention(self, m: Module, x: str) -> str:
        g = self.g
        nh, kd, hd = (int(m.attrs[k]) for k in ("num_heads", "key_dim", "head_dim"))
        shape = g.op("Shape", [x])  # B, C, H, W
        qkv = self.run(m.child("qkv"), x)
        qkv = g.op("Reshape", [qkv, g.const(np.asarray([0, nh, 2 * kd + hd, -1], np.int64), "shape")])
        q, k, v = _split(g, qkv, [kd, kd, hd], axis=2)
        attn = g.op("MatMul", [g.op("Transpose", [q], perm=[0, 1, 3, 2]), k])
        attn = g.op("Mul", [attn, g.const(np.asarray(float(m.attrs["scale"]), np.float32), "scale")])
        attn = g.op("Softmax", [attn], axis=-1)
        y = g.op("MatMul", [v, g.op("Transpose", [attn], perm=[0, 1, 3, 2])])
        y = g.op("Reshape", [y, shape])
        pe = self.run(m.child("pe"), g.op("Reshape", [v, shape]))
        return self.run(m.child("proj"), g.op("Add", [y, pe]))

    def _m_Upsample(self, m: Module, x: str) -> str:
        if m.attrs.get("mode") != "nearest" or m.attrs.get("size") is not None:
            raise PtError(f"unsupported Upsample mode={m.attrs.get('mode')} size={m.attrs.get('size')}")
        s = float(
            m.attrs["scale_factor"]
            if not isinstance(m.attrs["scale_factor"], tuple)
            else m.attrs["scale_factor"][0]
        )
        scales = self.g.const(np.asarray([1.0, 1.0, s, s], np.float32), "scales")
        return self.g.op(
            "Resize",
            [x, "", scales],
            mode="nearest",
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
        )

    def detect(self, m: Module, feats: list[str]) -> str:
        """The ``Detect`` head: per level ``cat(cv2(x), cv3(x))``, then DFL and the anchors."""
        self.blocks[m.name] += 1
        g = self.g
        nc, reg_max = int(m.attrs["nc"]), int(m.attrs.get("reg_max", 16))
        strides = [float(s) for s in np.asarray(m.attrs["stride"]).ravel()]
        if len(strides) != len(feats):
            raise PtError(f"Detect has {len(strides)} strides for {len(feats)} inputs")
        cv2, cv3 = list(m.child("cv2").children.values()), list(m.child("cv3").children.values())
        levels, anchors, stride_rows = [], [], []
        for i, f in enumerate(feats):
            y = _cat(g, [self.run(cv2[i], f), self.run(cv3[i], f)])
            levels.append(
                g.op("Reshape", [y, g.const(np.asarray([0, 4 * reg_max + nc, -1], np.int64), "shape")])
            )
            ax, ay = self._grid(f)
            anchors.append(_cat(g, [ax, ay], axis=0))  # [2, h w]
            zero_ax = g.op("Mul", [ax, g.const(np.zeros(1, np.float32))])
            stride_rows.append(
                g.op("Add", [zero_ax, g.const(np.asarray([strides[i]], np.float32), "stride")])
            )
        out = _cat(g, levels, axis=2)  # [1, 4 reg_max + nc, N]
        anc = _cat(g, anchors, axis=1)  # [2, N]
        st = _cat(g, stride_rows, axis=1)  # [1, N]
        box, cls = _split(g, out, [4 * reg_max, nc], axis=1)
        box = g.op("Reshape", [box, g.const(np.asarray([0, 4, reg_max, -1], np.int64), "shape")])
        box = g.op("Softmax", [box], axis=2)
        bins = g.const(np.arange(reg_max, dtype=np.float32).reshape(1, 1, reg_max, 1), "bins")
        dist = g.op(
            "ReduceSum", [g.op("Mul", [box, bins]), g.const(np.asarray([2], np.int64), "axes")], keepdims=0
        )
        lt, rb = _split(g, dist, [2, 2], axis=1)  # [1, 2, N] each
        x1y1 = g.op("Sub", [anc, lt])
        x2y2 = g.op("Add", [anc, rb])
        half = g.const(np.asarray(0.5, np.float32), "half")
        cxy = g.op("Mul", [g.op("Add", [x1y1, x2y2]), half])
        wh = g.op("Sub", [x2y2, x1y1])
        xywh = g.op("Mul", [_cat(g, [cxy, wh], axis=1), st])
        return _cat(g, [xywh, g.op("Sigmoid", [cls])], axis=1)

    def _grid(self, f: str) -> tuple[str, str]:
        """Anchor centres of a feature map ``[1, C, h, w]`` as two ``[1, h w]`` rows (x then y), in cells."""
        g = self.g
        shape = g.op("Shape", [f])
        h = g.op("Gather", [shape, g.const(np.asarray(2, np.int64), "i")], axis=0)
        w = g.op("Gather", [shape, g.const(np.asarray(3, np.int64), "i")], axis=0)
        zero, one = g.const(np.asarray(0, np.int64)), g.const(np.asarray(1, np.int64))
        half = g.const(np.asarray(0.5, np.float32), "half")
        xs = g.op("Add", [g.op("Cast", [g.op("Range", [zero, w, one])], to=1), half])  # [w]
        ys = g.op("Add", [g.op("Cast", [g.op("Range", [zero, h, one])], to=1), half])  # [h]
        hw = g.op(
            "Concat",
            [
                g.op("Unsqueeze", [h, g.const(np.asarray([0], np.int64))]),
                g.op("Unsqueeze", [w, g.const(np.asarray([0], np.int64))]),
            ],
            axis=0,
        )
        gx = g.op("Expand", [g.op("Unsqueeze", [xs, g.const(np.asarray([0], np.int64))]), hw])  # [h, w]
        gy = g.op("Expand", [g.op("Unsqueeze", [ys, g.const(np.asarray([1], np.int64))]), hw])
        flat = g.const(np.asarray([1, -1], np.int64), "shape")
        return g.op("Reshape", [gx, flat]), g.op("Reshape", [gy, flat])


def build_onnx(model: Module) -> tuple[Any, dict[str, int]]:
    """The ONNX ``ModelProto`` of a ``DetectionModel`` stand-in and the count of each block it holds.

    Raises :class:`PtError` for a model that is not a detection model of the known blocks.
    """
    from onnx import TensorProto, checker, helper

    if model.name != "DetectionModel":
        raise PtError(f"the checkpoint's model is a {model.name}, not a DetectionModel")
    layers = list(model.child("model").children.values())
    if not layers or layers[-1].name != "Detect":
        raise PtError(f"the last layer is {layers[-1].name if layers else 'missing'}, not Detect")
    save = {int(i) for i in model.attrs.get("save", [])}
    g = _Graph()
    b = _Builder(g)
    x = INPUT_NAME
    ys: list[str | None] = []
    for idx, layer in enumerate(layers):
        f = layer.attrs.get("f", -1)
        if isinstance(f, int):
            inp: str | list[str] = x if f == -1 else _need(ys, f, idx)
        else:
            inp = [x if j == -1 else _need(ys, j, idx) for j in f]
        if layer.name == "Detect":
            x = b.detect(layer, inp if isinstance(inp, list) else [inp])
        elif layer.name == "Concat":
            b.blocks["Concat"] += 1
            x = _cat(g, inp if isinstance(inp, list) else [inp], axis=int(layer.attrs.get("d", 1)))
        else:
            if isinstance(inp, list):
                raise PtError(f"layer {idx} ({layer.name}) takes {len(inp)} inputs")
            x = b.run(layer, inp)
        ys.append(x if int(layer.attrs.get("i", idx)) in save else None)
    nc = int(layers[-1].attrs["nc"])
    g.nodes.append(g.h.make_node("Identity", [x], [OUTPUT_NAME]))
    graph = helper.make_graph(
        g.nodes,
        "yolo",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [1, 4 + nc, "N"])],
        initializer=g.inits,
    )
    proto = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="dvoc_bench"
    )
    proto.ir_version = 8
    checker.check_model(proto)
    return proto, dict(b.blocks)


def _need(ys: list[str | None], j: int, idx: int) -> str:
    y = ys[j] if -len(ys) <= j < len(ys) else None
    if y is None:
        raise PtError(f"layer {idx} reads layer {j}, which is not saved")
    return y
