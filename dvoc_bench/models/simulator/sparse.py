"""The localiser's line maps and cross scan computed only where there are lines: the same numbers as the
dense definitions in :mod:`~dvoc_bench.models.simulator.perception`, bit for bit, in a fraction of the time.

A screenshot is mostly flat: at half resolution under 1 % of the pixels of the synthetic scenes lie on a
thin line, and the cross response is exactly 0 wherever one of its four half-arms sees no line at all.
Both facts are exact, so the work can skip those pixels without changing a single value:

- :func:`half_line_maps`: a pixel's line strength is nonzero only where its 2x2 block differs from those
  ``gap`` rows (columns) away on both sides; that is found by comparing the raw bytes (a superset: blocks
  with different pixels but equal sums get a distance of exactly 0), and the float distance (the dense
  code's operations, in its order) is computed only at those pixels.
- :func:`sparse_scan`: adding 0.0 to a float changes nothing, so the running sums the dense scan takes
  along a row without lines are all 0 and need not be taken; along a row with lines they are taken whole
  (``np.cumsum`` adds in sequence, the same per row whatever other rows the array holds). A pixel can
  respond only when, at the longest arm, each of its four half-arms holds a line pixel (or lies outside the
  image, which counts as no requirement); the arm means are evaluated there alone, with the dense code's
  operations element by element, and scattered into a map of zeros.

``tests/models/test_perception_fast.py`` compares the result with a frozen copy of the dense localiser on
rendered frames of every overlay variant from 400x300 to 3840x2160.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["half_line_maps", "sparse_scan"]

SPARSE_MAX_FRACTION = 0.25
"""Above this share of candidate pixels :func:`sparse_scan` declines (the dense scan is then cheaper)."""


def _block_sums_at(img: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """``n x 3`` integer sums of the 2x2 blocks ``(ys, xs)`` of an ``HxWx3`` uint8 image (the dense half
    resolution's blocks: rows ``2y, 2y+1``, columns ``2x, 2x+1``)."""
    y, x = 2 * ys, 2 * xs
    s = img[y, x].astype(np.uint16)
    s += img[y + 1, x]
    s += img[y, x + 1]
    s += img[y + 1, x + 1]
    return s


def _planes_at(img: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """``3 x n`` float32 plane values of the half-resolution pixels ``(ys, xs)``: the dense half planes'
    operations (the float sum of exact integers, times 0.25, times 1/255), element by element."""
    v = np.ascontiguousarray(_block_sums_at(img, ys, xs).T).astype(np.float32)
    v *= np.float32(0.25)
    v *= np.float32(1.0 / 255.0)
    return v


def _dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The dense colour distance's operations in its order (``perception._dist``) on ``3 x n`` values."""
    acc = np.subtract(a[0], b[0])
    acc *= acc
    d = np.subtract(a[1], b[1])
    d *= d
    acc += d
    np.subtract(a[2], b[2], out=d)
    d *= d
    acc += d
    return np.sqrt(acc, out=acc)


def _blocks_differ(img: np.ndarray, gap: int, axis: int) -> np.ndarray:
    """``ne[i]``: half-resolution line ``i + gap`` has a pixel that differs from line ``i`` in some byte
    of its 2x2 block (a superset of where the block sums differ: equal sums give a distance of exactly 0
    below). Compared as raw bytes: one pass over the image, no sums."""
    s = 2 * gap
    h2 = img.shape[0] // 2
    if axis == 0:
        d = (img[s:] != img[:-s]).view(np.uint8)
        d = np.bitwise_or(d[0::2], d[1::2])  # the block's two rows
    else:
        d = (img[:, s:] != img[:, :-s]).view(np.uint8).reshape(h2, 2, -1)
        d = np.bitwise_or(d[:, 0], d[:, 1])
    d = d.reshape(d.shape[0], -1, 6).view(np.uint16)  # the block's two columns: 6 bytes, three uint16
    out = np.bitwise_or(d[:, :, 0], d[:, :, 1])
    out |= d[:, :, 2]
    ne = out.astype(bool)
    return ne if axis == 0 else ne.T  # lines are columns


def _line_axis(img: np.ndarray, gap: int, axis: int) -> np.ndarray:
    """The line map along ``axis`` (0: horizontal lines, rows compared; 1: vertical lines) of the image
    cut to even sides."""
    h2, w2 = img.shape[0] // 2, img.shape[1] // 2
    out = np.zeros((h2, w2), dtype=np.float32)
    n = h2 if axis == 0 else w2
    if n <= 2 * gap:
        return out
    ne = _blocks_differ(img, gap, axis)  # ne[i]: line i + gap may differ from line i
    on = np.zeros((n, ne.shape[1]), dtype=bool)
    np.logical_and(ne[:-gap], ne[gap:], out=on[gap:-gap])
    on[:gap], on[-gap:] = ne[:gap], ne[-gap:]  # one side outside: the other decides
    some = np.flatnonzero(on.any(axis=1))  # np.nonzero is slow on a large, mostly empty array
    r, j = np.nonzero(on[some])
    i = some[r]
    if i.size == 0:
        return out
    # interior: min(dist(i, i - gap), dist(i + gap, i)); the first and last ``gap`` lines have one of them
    lo = np.where(i >= gap, i - gap, i)  # the pair (i, i - gap), or (i + gap, i) at the top
    hi_a = np.where(i >= gap, i, i + gap)
    inner = (i >= gap) & (i < n - gap)
    ii, jj = i[inner], j[inner]
    # every plane value needed, in one gather: (hi_a, j), (lo, j), (ii + gap, jj), (ii, jj)
    lines = np.concatenate((hi_a, lo, ii + gap, ii))
    across = np.concatenate((j, j, jj, jj))
    v = _planes_at(img, lines, across) if axis == 0 else _planes_at(img, across, lines)
    m, k = i.size, ii.size
    d_up = _dist(v[:, :m], v[:, m : 2 * m])
    d_dn = _dist(v[:, 2 * m : 2 * m + k], v[:, 2 * m + k :])
    val = d_up
    val[inner] = np.minimum(d_up[inner], d_dn)
    np.minimum(val, 1.0, out=val)
    if axis == 0:
        out[i, j] = val
    else:
        out[j, i] = val
    return out


def half_line_maps(image: np.ndarray, gap: int) -> tuple[np.ndarray, np.ndarray]:
    """``perception._line_maps(perception._half_planes(image), gap, blur=False)``, bit for bit."""
    img = np.asarray(image)
    img = img[: img.shape[0] // 2 * 2, : img.shape[1] // 2 * 2]
    return _line_axis(img, gap, 0), _line_axis(img, gap, 1)


def _padded_cumsum(m: np.ndarray, axis: int, reach: int, dtype: type) -> np.ndarray:
    """The dense arms' running sum: ``reach + 1`` zeros before, ``reach`` after, along ``axis``."""
    shape = list(m.shape)
    shape[axis] += 2 * reach + 1
    z: np.ndarray = np.zeros(shape, dtype=dtype)
    if axis == 1:
        z[:, reach + 1 : reach + 1 + m.shape[1]] = m
    else:
        z[reach + 1 : reach + 1 + m.shape[0]] = m
    return np.cumsum(z, axis=axis, dtype=dtype)


def _sides_ok(m: np.ndarray, axis: int, reach: int) -> np.ndarray:
    """Where both half-arms of length ``reach`` along ``axis`` hold a nonzero pixel (or lie outside)."""
    c = _padded_cumsum(m > 0, axis, reach, np.int32)
    n = m.shape[axis]
    at = (
        (lambda s: c[:, reach + 1 + s : reach + 1 + s + n])
        if axis == 1
        else (lambda s: c[reach + 1 + s : reach + 1 + s + n])
    )
    before = at(-1) > at(-reach - 1)
    after = at(reach) > at(0)
    if axis == 1:
        before[:, 0], after[:, -1] = True, True
    else:
        before[0], after[-1] = True, True
    return before & after


def _means(c: np.ndarray, line: np.ndarray, pos: np.ndarray, n: int, arms: np.ndarray, reach: int):
    """The dense ``_Arms.means(a)`` for every arm ``a`` of ``arms`` (a column) at positions ``pos`` along
    lines ``line`` of the running sums ``c`` (``c[line, padded index]``): ``arms x positions`` arrays of
    the same float32 operations, element by element."""
    i = pos.astype(np.float32)
    n_before = np.maximum(np.minimum(arms.astype(np.float32), i), 1.0)
    n_after = np.maximum(np.minimum(arms.astype(np.float32), n - 1 - i), 1.0)
    base = pos + reach + 1
    before = np.subtract(c[line, base - 1], c[line, base - arms - 1])
    before /= n_before
    after = np.subtract(c[line, base + arms], c[line, base])
    after /= n_after
    before[:, pos == 0] = np.inf
    after[:, pos == n - 1] = np.inf
    return before, after


def sparse_scan(
    hmap: np.ndarray, vmap: np.ndarray, arms: tuple[int, ...], max_fraction: float = SPARSE_MAX_FRACTION
) -> tuple[float, int, int, int, np.ndarray] | None:
    """``perception._scan(hmap, vmap, arms)`` bit for bit, or ``None`` when more than ``max_fraction`` of
    the pixels are candidates (or the image is a single row or column): the dense scan is then the way."""
    h, w = hmap.shape
    if min(h, w) < 2:
        return None
    reach = max(arms)
    zero = (0.0, arms[0], 0, 0, np.zeros_like(hmap))
    rows = np.flatnonzero(hmap.any(axis=1))
    cols = np.flatnonzero(vmap.any(axis=0))
    if rows.size == 0 or cols.size == 0:  # a finite 0 on every row or column: the response is 0 everywhere
        return zero
    hsub, vsub = hmap[rows], np.ascontiguousarray(vmap[:, cols])
    cand = _sides_ok(hsub, 1, reach)[:, cols] & _sides_ok(vsub, 0, reach)[rows]
    ri, ci = np.nonzero(cand)  # row-major, as the dense argmax reads the map
    if ri.size == 0:
        return zero
    if ri.size > max_fraction * h * w:
        return None
    ys, xs = rows[ri], cols[ci]
    ch = _padded_cumsum(hsub, 1, reach, np.float32)
    cv = _padded_cumsum(vsub, 0, reach, np.float32).T  # c[column, padded row]
    col = np.asarray(arms).reshape(-1, 1)
    left, right = _means(ch, ri, xs, w, col, reach)
    up, down = _means(cv, ci, ys, h, col, reach)
    resp = np.minimum(left, right, out=left)
    resp = np.minimum(resp, np.minimum(up, down, out=up), out=resp)
    first = np.argmax(resp, axis=1)  # per arm, the first best in row-major order
    best, row = zero, -1
    for r, (a, k) in enumerate(zip(arms, first.tolist(), strict=True)):
        s = float(resp[r, k]) * math.sqrt(2 * a + 1)
        if s > best[0]:
            best, row = (s, a, int(ys[k]), int(xs[k]), zero[4]), r
    if row < 0:
        return zero
    out = np.zeros_like(hmap)
    out[ys, xs] = resp[row]
    return (*best[:4], out)
