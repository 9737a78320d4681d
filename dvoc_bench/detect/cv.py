"""The ``cv`` detector: classical, no weights, numpy only (edges -> connected components -> boxes).

How it sees a screenshot:

1. **Edges.** A pixel is an edge pixel when its colour differs from its right or lower neighbour by more
   than ``edge_threshold`` in some channel (both pixels of the pair are marked, so a box's outline gives a
   closed ring on both sides of the boundary).
2. **Grouping.** The edge mask is dilated by ``gap_x`` px horizontally and ``gap_y`` px vertically (glyphs
   merge into words, words into short phrases) and split into 8-connected components (run-length
   labelling with a vectorised union-find). Each component's box is its extent minus the dilation.
3. **Kinds.** A component whose box border is mostly edge pixels (``border_coverage`` >= ``min_border``)
   is *boxed*: a button, an input, a panel. Others are *text-like*: words and links, also icons.
4. **Filtering.** Boxes smaller than ``min_side`` or with an extreme aspect ratio are dropped; a text-like
   box inside a boxed one at most ``label_area_ratio`` times its area is that box's label and is dropped.
5. **Scores.** Boxed: ``0.55 + 0.45 coverage``; text-like: ``0.3 + 0.2 fill`` (fill: share of edge pixels),
   so controls come first. Greedy NMS at IoU ``nms_iou``, at most ``max_boxes``.

It fails like a real detector: low-contrast controls (below the threshold) are missed; controls closer
than the gap merge into one box; static text is boxed like a link; a control with an outline of a colour
close to the background splits into its label alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvoc_bench.core.declare import Byte, Declared, NonNegInt, PosFloat, PosInt, Prob
from dvoc_bench.core.geometry import Box
from dvoc_bench.detect.types import Detection, TimedDetector
from dvoc_bench.detect.yolo import nms


class CvOptions(Declared):
    """Knobs of the classical detector."""

    edge_threshold: Byte = 24
    """Minimum per-channel difference between neighbours that makes an edge (0-255)."""
    gap_x: NonNegInt = 4
    """Horizontal dilation radius in px (merges glyphs into words and phrases)."""
    gap_y: NonNegInt = 1
    """Vertical dilation radius in px."""
    min_side: PosInt = 6
    """Smallest box side kept, px."""
    max_aspect: PosFloat = 30.0
    """Largest width/height (or height/width) ratio kept."""
    min_border: Prob = 0.8
    """Share of the box border that must be edge pixels for a *boxed* component."""
    label_area_ratio: PosFloat = 12.0
    """A text-like box inside a boxed one with at most this area ratio is its label (dropped)."""
    nms_iou: Prob = 0.6
    """IoU above which the lower-scored of two boxes is dropped."""
    max_boxes: PosInt = 50
    """At most this many boxes."""


def edge_mask(image: np.ndarray, threshold: int) -> np.ndarray:
    """Pixels whose colour differs from the right or lower neighbour (both of the pair are marked)."""
    img = image.astype(np.int16)
    dx = np.abs(img[:, 1:] - img[:, :-1]).max(axis=2) > threshold
    dy = np.abs(img[1:] - img[:-1]).max(axis=2) > threshold
    m = np.zeros(image.shape[:2], dtype=bool)
    m[:, 1:] |= dx
    m[:, :-1] |= dx
    m[1:] |= dy
    m[:-1] |= dy
    return m


def dilate(mask: np.ndarray, rx: int, ry: int) -> np.ndarray:
    """Binary dilation with a ``(2 ry + 1) x (2 rx + 1)`` rectangle (separable running maximum)."""
    out = mask
    for axis, r in ((1, rx), (0, ry)):
        if r <= 0:
            continue
        n = out.shape[axis]
        c = np.cumsum(out, axis=axis, dtype=np.int32)
        c = np.concatenate([np.zeros_like(c.take([0], axis=axis)), c], axis=axis)
        idx = np.arange(n)
        hi = np.minimum(idx + r + 1, n)
        lo = np.maximum(idx - r, 0)
        out = (c.take(hi, axis=axis) - c.take(lo, axis=axis)) > 0
    return out


@dataclass(frozen=True)
class Components:
    """8-connected components of a binary mask: one entry per component."""

    x0: np.ndarray
    """Leftmost column."""
    y0: np.ndarray
    """Top row."""
    x1: np.ndarray
    """Rightmost column (inclusive)."""
    y1: np.ndarray
    """Bottom row (inclusive)."""
    count: np.ndarray
    """Number of mask pixels."""


def components(mask: np.ndarray) -> Components:
    """Connected components (8-connectivity) by run-length labelling and a vectorised union-find."""
    h, w = mask.shape
    padded = np.zeros((h, w + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    d = np.diff(padded, axis=1)
    sy, sx = np.nonzero(d == 1)
    _, ex = np.nonzero(d == -1)  # run end (exclusive); row-major order pairs starts with ends
    n = sy.size
    empty = np.zeros(0, dtype=np.int64)
    if n == 0:
        return Components(empty, empty, empty, empty, empty)
    big = w + 2
    key0 = sy.astype(np.int64) * big + sx
    key1 = sy.astype(np.int64) * big + ex
    # run a (row y) touches run b (row y+1) when b.start <= a.end and b.end >= a.start (8-connectivity)
    lo = np.searchsorted(key1, (sy.astype(np.int64) + 1) * big + sx, side="left")
    hi = np.searchsorted(key0, (sy.astype(np.int64) + 1) * big + ex, side="right")
    cnt = np.maximum(hi - lo, 0)
    a = np.repeat(np.arange(n), cnt)
    b = np.repeat(lo, cnt) + (np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    label = np.arange(n)
    for _ in range(10 * n + 1):  # hook and compress until stable
        la, lb = label[a], label[b]
        m = np.minimum(la, lb)
        new = label.copy()
        np.minimum.at(new, la, m)
        np.minimum.at(new, lb, m)
        new = new[new]
        while True:
            nxt = new[new]
            if np.array_equal(nxt, new):
                break
            new = nxt
        if np.array_equal(new, label):
            break
        label = new
    roots, comp = np.unique(label, return_inverse=True)
    k = roots.size
    x0 = np.full(k, w, dtype=np.int64)
    y0 = np.full(k, h, dtype=np.int64)
    x1 = np.full(k, -1, dtype=np.int64)
    y1 = np.full(k, -1, dtype=np.int64)
    count = np.zeros(k, dtype=np.int64)
    np.minimum.at(x0, comp, sx)
    np.minimum.at(y0, comp, sy)
    np.maximum.at(x1, comp, ex - 1)
    np.maximum.at(y1, comp, sy)
    np.add.at(count, comp, ex - sx)
    return Components(x0, y0, x1, y1, count)


def border_coverage(edges: np.ndarray, x0: int, y0: int, x1: int, y1: int, band: int = 1) -> float:
    """Mean share of the four sides of a box (inclusive) that has an edge pixel within ``band`` px."""
    top = edges[max(y0 - band, 0) : y0 + band + 1, x0 : x1 + 1].any(axis=0).mean()
    bottom = edges[max(y1 - band, 0) : y1 + band + 1, x0 : x1 + 1].any(axis=0).mean()
    left = edges[y0 : y1 + 1, max(x0 - band, 0) : x0 + band + 1].any(axis=1).mean()
    right = edges[y0 : y1 + 1, max(x1 - band, 0) : x1 + band + 1].any(axis=1).mean()
    return float((top + bottom + left + right) / 4.0)


class CvDetector(TimedDetector):
    """Classical edge/component detector (see the module docstring)."""

    backend = "cv"

    def __init__(self, options: CvOptions | None = None) -> None:
        self.options = options or CvOptions()
        """Knobs."""

    def _detect(self, image: np.ndarray) -> tuple[list[Detection], float | None]:
        o = self.options
        h, w = image.shape[:2]
        edges = edge_mask(image, o.edge_threshold)
        comps = components(dilate(edges, o.gap_x, o.gap_y))
        # undo the dilation (and the outer ring of the edge pair) where it did not hit the image border
        x0 = np.where(comps.x0 > 0, comps.x0 + o.gap_x + 1, comps.x0)
        x1 = np.where(comps.x1 < w - 1, comps.x1 - o.gap_x - 1, comps.x1)
        y0 = np.where(comps.y0 > 0, comps.y0 + o.gap_y + 1, comps.y0)
        y1 = np.where(comps.y1 < h - 1, comps.y1 - o.gap_y - 1, comps.y1)
        bw, bh = x1 - x0 + 1, y1 - y0 + 1
        keep = (bw >= o.min_side) & (bh >= o.min_side)
        keep &= (bw <= o.max_aspect * bh) & (bh <= o.max_aspect * bw)
        keep &= (bw < w) | (bh < h)  # the whole screen is not a component
        boxed: list[tuple[int, int, int, int, float]] = []
        texts: list[tuple[int, int, int, int, float]] = []
        for i in np.flatnonzero(keep):
            bx0, by0, bx1, by1 = int(x0[i]), int(y0[i]), int(x1[i]), int(y1[i])
            cov = border_coverage(edges, bx0, by0, bx1, by1)
            if cov >= o.min_border:
                boxed.append((bx0, by0, bx1, by1, 0.55 + 0.45 * cov))
            else:
                fill = float(edges[by0 : by1 + 1, bx0 : bx1 + 1].mean())
                texts.append((bx0, by0, bx1, by1, 0.3 + 0.2 * fill))
        texts = [t for t in texts if not any(_is_label(t, b, o.label_area_ratio) for b in boxed)]
        cands = boxed + texts
        if not cands:
            return [], None
        # continuous edge coordinates: pixel columns x0..x1 cover [x0, x1 + 1)
        arr = np.asarray([[c[0], c[1], c[2] + 1, c[3] + 1] for c in cands], dtype=np.float64)
        scores = np.asarray([c[4] for c in cands])
        kept = nms(arr, scores, o.nms_iou, o.max_boxes)
        return [Detection(Box.from_list(arr[i].tolist()), float(scores[i])) for i in kept], None


def _is_label(t: tuple[int, int, int, int, float], b: tuple[int, int, int, int, float], ratio: float) -> bool:
    """``t`` lies inside ``b`` and ``b`` is at most ``ratio`` times larger: ``t`` is ``b``'s label."""
    inside = b[0] <= t[0] and b[1] <= t[1] and t[2] <= b[2] and t[3] <= b[3]
    area_t = (t[2] - t[0] + 1) * (t[3] - t[1] + 1)
    area_b = (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
    return inside and area_b <= ratio * area_t
