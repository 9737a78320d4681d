"""Perceiving the crosshair from the pixels: a localiser that knows no colour.

A model does not match exact RGB values: it sees a thin cross that stands out from what is around it. The
localiser here does the same with pure numpy functions on an ``HxWx3`` uint8 image:

1. :func:`line_maps`: the image is blurred with a 3x3 box (the limited resolution of a vision encoder: a
   1 px line keeps a third of its contrast, a 3 px bar all of it); a pixel is on a *horizontal thin line*
   as much as it differs in colour from **both** pixels ``gap`` rows above and below (``H``: the smaller
   of the two colour distances, in units of 255, capped at 1); ``V`` likewise with columns. A step edge
   (one side the same) or the inside of a filled box gives 0; text strokes, box outlines and the overlay's
   bars give lines.
2. :func:`find_marker`: at each pixel and arm scale ``a`` the cross response is
   ``min(mean of H over the row segment [x-a, x+a], mean of V over the column segment [y-a, y+a])``: high
   only where a horizontal and a vertical line cross at their middles. Its *salience* is the response
   times ``sqrt(2a+1)`` (contrast integrated along the arm, as a matched filter's signal-to-noise grows);
   the best scale and position win, refined to the centroid of the peak's plateau. The evidence also holds
   the marker's *clutter*: the line energy (``max(H, V)``) in a window around it outside the cross's own
   bars (the circle, labels, nearby text, box outlines), relative to the marker's own contrast; and the
   runner-up, the best response further away (a distractor).
3. :func:`localise`: the noisy reading one call makes of that evidence (``sim.perception``). Effective
   salience ``s = salience / (1 + clutter_weight * clutter)``; the marker is seen with probability
   ``1 / (1 + (detect_salience / s) ** detect_slope)`` and, when seen, placed with per-axis Gaussian error
   of sd ``sigma_px / s`` px. Below ``min_salience`` or ``min_contrast`` nothing counts as a marker (an
   image without overlay still has crossing strokes). A missed marker is ``None``: the model then reads
   the position from the prompt text, as with no overlay.

So the error and the miss rate grow as the marker's contrast against its local background falls, as it
shrinks or thins, and as clutter overlaps it; colour enters only through its distance from the background.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dvoc_bench.core.geometry import Point
from dvoc_bench.models.simulator.sparse import half_line_maps, sparse_scan

__all__ = ["ARM_SCALES", "GAP_PX", "MarkerEvidence", "find_marker", "line_maps", "localise"]

GAP_PX = 4
"""Distance (px) of the pixels a line pixel is compared with, on both sides: bars up to 5 px thick."""
ARM_SCALES = (3, 5, 8, 12, 17, 24)
"""Half-lengths (px) of the row and column segments the cross response averages over."""
_FAR = 1e9


@dataclass(frozen=True)
class MarkerEvidence:
    """What the pixels show of the most cross-like thing in the image (deterministic in the image)."""

    point: Point
    """Centre of the best cross response (px)."""
    arm_px: int
    """Arm scale of the best response (px)."""
    contrast: float
    """Cross response at the centre: the weaker arm's mean line contrast (0-1, units of 255)."""
    salience: float
    """``contrast * sqrt(2 * arm_px + 1)``."""
    clutter: float
    """Line energy around the marker outside its bars, relative to its contrast (0 = a clean background)."""
    runner_up: float
    """Salience of the best response at least ``2 * arm_px`` px away, relative to the marker's (0-1)."""


def _blur3(planes: np.ndarray) -> np.ndarray:
    """3x3 box blur of ``C x H x W`` float planes (edges replicated)."""
    p = np.pad(planes, ((0, 0), (1, 1), (1, 1)), mode="edge")
    rows = np.add(p[:, :-2], p[:, 1:-1])
    rows += p[:, 2:]
    out = np.add(rows[:, :, :-2], rows[:, :, 1:-1])
    out += rows[:, :, 2:]
    out *= np.float32(1.0 / 9.0)
    return out


def _dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-pixel colour distance of two ``3 x h x w`` plane stacks (``sqrt(d0*d0 + d1*d1 + d2*d2)``, in
    that order, computed in place: the arrays are large and fresh ones cost page faults)."""
    acc = np.subtract(a[0], b[0])
    acc *= acc
    d = np.subtract(a[1], b[1])
    d *= d
    acc += d
    np.subtract(a[2], b[2], out=d)
    d *= d
    acc += d
    return np.sqrt(acc, out=acc)


def _to_planes(image: np.ndarray) -> np.ndarray:
    """``C x H x W`` float32 planes in units of 255."""
    planes = np.ascontiguousarray(np.moveaxis(np.asarray(image, dtype=np.float32), -1, 0))
    planes *= np.float32(1.0 / 255.0)
    return planes


def line_maps(image: np.ndarray, gap: int = GAP_PX, blur: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(H, V)``: horizontal and vertical thin-line strength per pixel (0-1), see the module docstring.
    ``blur=False`` skips the 3x3 blur (for an image already reduced to half resolution)."""
    return _line_maps(_to_planes(image), gap, blur)


def _line_maps(planes: np.ndarray, gap: int, blur: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`line_maps` of ``C x H x W`` planes in units of 255."""
    img = _blur3(planes) if blur else planes
    h, w = img.shape[1:]
    hmap = np.zeros((h, w), dtype=np.float32)
    vmap = np.zeros((h, w), dtype=np.float32)
    if h > 2 * gap:
        d = _dist(img[:, gap:], img[:, :-gap])  # row i+gap vs row i
        np.minimum(d[:-gap], d[gap:], out=hmap[gap:-gap])
        hmap[:gap], hmap[-gap:] = d[:gap], d[-gap:]  # one side outside: the other decides
    if w > 2 * gap:
        d = _dist(img[:, :, gap:], img[:, :, :-gap])
        np.minimum(d[:, :-gap], d[:, gap:], out=vmap[:, gap:-gap])
        vmap[:, :gap], vmap[:, -gap:] = d[:, :gap], d[:, -gap:]
    return np.minimum(hmap, 1.0, out=hmap), np.minimum(vmap, 1.0, out=vmap)


class _Arms:
    """Means of a line map over the ``a`` pixels before and after each pixel along one axis (the pixel
    itself excluded; zeros outside the image), for any ``a`` up to ``reach``, from one cumulative sum."""

    def __init__(self, m: np.ndarray, axis: int, reach: int):
        self.axis, self.reach, self.n = axis, reach, m.shape[axis]
        pad = [(0, 0), (0, 0)]
        pad[axis] = (reach + 1, reach)
        self.c = np.cumsum(np.pad(m, pad), axis=axis, dtype=np.float32)
        self._i = np.arange(self.n, dtype=np.float32)
        self._last, self._here = self._at(-1), self._at(0)  # the same for every ``a``

    def _at(self, shift: int) -> np.ndarray:
        """``c[i + shift]`` for every original index ``i`` (padded index of ``i`` is ``i + reach + 1``)."""
        lo = self.reach + 1 + shift
        return self.c[:, lo : lo + self.n] if self.axis == 1 else self.c[lo : lo + self.n]

    def means(self, a: int) -> tuple[np.ndarray, np.ndarray]:
        """Means over the in-image part of each side; a side wholly outside the image (at the first or last
        index) is ``inf``, not required: a crosshair clipped at an edge or a corner keeps the arms it has."""
        i = self._i
        n_before = np.maximum(np.minimum(np.float32(a), i), 1.0)
        n_after = np.maximum(np.minimum(np.float32(a), self.n - 1 - i), 1.0)
        shape = (1, self.n) if self.axis == 1 else (self.n, 1)
        before = np.subtract(self._last, self._at(-a - 1))
        before /= n_before.reshape(shape)
        after = np.subtract(self._at(a), self._here)
        after /= n_after.reshape(shape)
        if self.axis == 1:
            before[:, 0], after[:, -1] = np.inf, np.inf
        else:
            before[0], after[-1] = np.inf, np.inf
        return before, after


def _plateau_centre(score: np.ndarray, y: int, x: int) -> Point:
    """Centroid of the pixels within 3 px of ``(x, y)`` scoring at least 95 % of the peak."""
    h, w = score.shape
    y0, y1, x0, x1 = max(y - 3, 0), min(y + 4, h), max(x - 3, 0), min(x + 4, w)
    win = score[y0:y1, x0:x1]
    ys, xs = np.nonzero(win >= 0.95 * score[y, x])
    return Point(float(xs.mean() + x0), float(ys.mean() + y0))


def _scan(
    hmap: np.ndarray, vmap: np.ndarray, arms: tuple[int, ...]
) -> tuple[float, int, int, int, np.ndarray]:
    """Best cross response of the line maps: ``(salience, arm, y, x, response map of that arm)``."""
    rows, cols = _Arms(hmap, 1, max(arms)), _Arms(vmap, 0, max(arms))
    best: tuple[float, int, int, int, np.ndarray] = (0.0, arms[0], 0, 0, np.zeros_like(hmap))
    for a in arms:
        left, right = rows.means(a)
        up, down = cols.means(a)
        resp = np.minimum(left, right, out=left)
        resp = np.minimum(resp, np.minimum(up, down, out=up), out=resp)
        if min(resp.shape) == 1:  # all four sides outside only in a one-pixel-wide image
            resp[~np.isfinite(resp)] = 0.0
        y, x = divmod(int(np.argmax(resp)), resp.shape[1])
        s = float(resp[y, x]) * math.sqrt(2 * a + 1)
        if s > best[0]:
            best = (s, a, y, x, resp)
    return best


def _fast_scan(
    hmap: np.ndarray, vmap: np.ndarray, arms: tuple[int, ...]
) -> tuple[float, int, int, int, np.ndarray]:
    """:func:`_scan`, evaluated only where lines are (:func:`~dvoc_bench.models.simulator.sparse.sparse_scan`,
    the same numbers) unless they are everywhere."""
    out = sparse_scan(hmap, vmap, arms)
    return _scan(hmap, vmap, arms) if out is None else out


def _half_planes(image: np.ndarray) -> np.ndarray:
    """The image at half resolution (means of 2x2 blocks) as ``C x H x W`` float32 planes in units of 255
    (:func:`_to_planes` of the float means). The sums are taken in integers, exact as the float sums of four
    bytes are, so this is the float computation's result at a fraction of its cost."""
    h, w = image.shape[0] // 2 * 2, image.shape[1] // 2 * 2
    chw = np.moveaxis(np.asarray(image), -1, 0)
    rows = chw[:, 0:h:2, :w].astype(np.uint16)
    rows += chw[:, 1:h:2, :w]
    planes = np.add(rows[:, :, 0::2], rows[:, :, 1::2], dtype=np.float32)
    planes *= np.float32(0.25)
    planes *= np.float32(1.0 / 255.0)
    return planes


COARSE_MIN_PIXELS = 120_000
"""In images this large the marker is first searched at half resolution (2x2 means, which blur like the
3x3 box), then refined at full resolution in a window around the coarse peak (several times faster)."""


def find_marker(image: np.ndarray, arms: tuple[int, ...] = ARM_SCALES) -> MarkerEvidence | None:
    """The most cross-like structure of ``image`` and how it stands out; ``None`` for an image with no
    crossing lines at all."""
    img = np.asarray(image)
    h, w = img.shape[:2]
    oy = ox = 0
    runner = None
    if h * w >= COARSE_MIN_PIXELS:
        half = tuple(sorted({max(2, a // 2) for a in arms}))
        sal_c, a_c, y_c, x_c, resp_c = _fast_scan(*half_line_maps(img, GAP_PX // 2), half)
        if sal_c <= 0:
            return None
        masked = resp_c.copy()
        masked[max(y_c - 2 * a_c, 0) : y_c + 2 * a_c + 1, max(x_c - 2 * a_c, 0) : x_c + 2 * a_c + 1] = 0.0
        runner = float(masked.max()) * math.sqrt(2 * a_c + 1) / sal_c  # relative to the best
        r = 2 * max(arms) + 16
        oy, ox = max(2 * y_c - r, 0), max(2 * x_c - r, 0)
        img = img[oy : min(2 * y_c + r + 2, h), ox : min(2 * x_c + r + 2, w)]
    hmap, vmap = line_maps(img)
    sal, a, y, x, resp = _fast_scan(hmap, vmap, arms)
    if sal <= 0:
        return None
    centre = _plateau_centre(resp, y, x)
    contrast = float(resp[y, x])
    hc, wc = resp.shape
    # clutter: line energy in a window around the centre, outside the cross's own bars
    r = 2 * a + 8
    y0, y1, x0, x1 = max(y - r, 0), min(y + r + 1, hc), max(x - r, 0), min(x + r + 1, wc)
    win = np.maximum(hmap[y0:y1, x0:x1], vmap[y0:y1, x0:x1])
    yy, xx = np.ogrid[y0:y1, x0:x1]
    off_bars = (np.abs(yy - y) > 3) & (np.abs(xx - x) > 3)
    clutter = float(win[off_bars].mean() / max(contrast, 1e-6)) if off_bars.any() else 0.0
    if runner is None:
        masked = resp.copy()
        masked[max(y - 2 * a, 0) : y + 2 * a + 1, max(x - 2 * a, 0) : x + 2 * a + 1] = 0.0
        runner = float(masked.max()) * math.sqrt(2 * a + 1) / sal
    return MarkerEvidence(Point(centre.x + ox, centre.y + oy), a, contrast, sal, clutter, runner)


def localise(
    ev: MarkerEvidence | None,
    rng: np.random.Generator,
    *,
    sigma_px: float,
    detect_salience: float,
    detect_slope: float,
    clutter_weight: float,
    min_salience: float,
    min_contrast: float = 0.0,
) -> Point | None:
    """One noisy reading of the marker (see the module docstring); ``None`` when it is not seen. Always
    makes exactly three draws when ``ev`` is given (the stream does not depend on the outcome)."""
    if ev is None:
        return None
    u, zx, zy = float(rng.random()), float(rng.standard_normal()), float(rng.standard_normal())
    if ev.salience < min_salience or ev.contrast < min_contrast:
        return None
    s = ev.salience / (1.0 + clutter_weight * ev.clutter)
    if detect_salience > 0 and u >= 1.0 / (1.0 + (detect_salience / max(s, 1e-9)) ** detect_slope):
        return None
    sd = sigma_px / max(s, 1e-9)
    return Point(ev.point.x + sd * zx, ev.point.y + sd * zy)
