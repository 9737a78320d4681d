"""The ``oracle`` detector: the scene's own element boxes (synthetic spec or DOM), optionally degraded.

It knows the answer, so it bounds what Set-of-Mark can reach with a perfect detector; the error rates
emulate a real detector's failure modes (SoM is capped by the detector's recall):

- ``miss_rate``: each element is left out with this probability;
- ``duplicate_rate``: each kept element is boxed a second time (independent jitter, lower score);
- ``jitter_px``: each box edge moves by a normal draw with this standard deviation (px).

Every draw comes from a generator seeded with ``(seed, call seed)``; the sweep passes the trial's seed,
so repeats sample the error process and the same trial always sees the same boxes. Scores are
``0.5 + 0.49 u`` (u uniform), so the mark order is not the drawing order of the scene.
"""

from __future__ import annotations

import hashlib

import numpy as np

from dvoc_bench.core.declare import Declared, NonNegFloat, Prob
from dvoc_bench.core.geometry import Box
from dvoc_bench.core.scene import SceneTruth
from dvoc_bench.detect.types import Detection, TimedDetector


class OracleOptions(Declared):
    """Error rates of the oracle (all zero: the exact element boxes)."""

    miss_rate: Prob = 0.0
    """Probability that an element gets no box."""
    duplicate_rate: Prob = 0.0
    """Probability that a boxed element gets a second, jittered box."""
    jitter_px: NonNegFloat = 0.0
    """Standard deviation of the per-edge jitter in px (duplicates get at least 2 px)."""
    interactive_only: bool = True
    """Box only interactive elements (buttons, inputs, links); ``false`` boxes text and panels too."""
    seed: int = 0
    """Base seed, mixed with the per-call seed."""


def _rng(base: int, call_seed: int, scene_id: str) -> np.random.Generator:
    h = hashlib.sha256(f"oracle:{base}:{call_seed}:{scene_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:16], "big"))


def _jittered(box: Box, sigma: float, z: np.ndarray, w: int, h: int) -> Box:
    """``box`` (edges inclusive: first and last pixel) as the seed reads a detector's numbers, pixels whose
    centre is the element's centre (:mod:`dvoc_bench.draw.som_render`), each edge moved by ``sigma * z``
    (``z``:
    four standard normal draws), clipped to the image, never thinner than 2 px."""
    x0, y0, x1, y1 = box.x0, box.y0, box.x1, box.y1
    if sigma > 0:
        x0, y0, x1, y1 = x0 + sigma * z[0], y0 + sigma * z[1], x1 + sigma * z[2], y1 + sigma * z[3]
    x0, x1 = sorted((min(max(x0, 0.0), w), min(max(x1, 0.0), w)))
    y0, y1 = sorted((min(max(y0, 0.0), h), min(max(y1, 0.0), h)))
    if x1 - x0 < 2:
        x1 = min(x0 + 2.0, float(w))
        x0 = x1 - 2.0
    if y1 - y0 < 2:
        y1 = min(y0 + 2.0, float(h))
        y0 = y1 - 2.0
    return Box(float(x0), float(y0), float(x1), float(y1))


class OracleDetector(TimedDetector):
    """Boxes of one scene's elements; the image only fixes the scale (boxes follow a resized image)."""

    backend = "oracle"

    def __init__(self, truth: SceneTruth, options: OracleOptions | None = None, call_seed: int = 0) -> None:
        self.truth = truth
        """The scene's ground truth."""
        self.options = options or OracleOptions()
        """Error rates."""
        self.call_seed = int(call_seed)
        """Per-call seed (the trial's seed in a sweep)."""

    def _detect(self, image: np.ndarray) -> tuple[list[Detection], float | None]:
        o = self.options
        h, w = image.shape[:2]
        sx, sy = w / self.truth.size.width, h / self.truth.size.height
        rng = _rng(o.seed, self.call_seed, self.truth.scene_id)
        out: list[Detection] = []
        for e in self.truth.elements:
            if o.interactive_only and not e.interactive:
                continue
            # every element consumes the same draws whatever happens, so one rate does not shift the others
            miss, dup, u, u2 = rng.random(4)
            jitter, jitter2 = rng.normal(0.0, 1.0, 4), rng.normal(0.0, 1.0, 4)
            box = Box(e.box.x0 * sx, e.box.y0 * sy, e.box.x1 * sx, e.box.y1 * sy)
            if miss < o.miss_rate:
                continue
            score = 0.5 + 0.49 * float(u)
            out.append(Detection(_jittered(box, o.jitter_px, jitter, w, h), score))
            if dup < o.duplicate_rate:
                dup_box = _jittered(box, max(o.jitter_px, 2.0), jitter2, w, h)
                out.append(Detection(dup_box, 0.5 + (score - 0.5) * float(u2)))
        return out, None
