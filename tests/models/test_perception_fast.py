"""The fast crosshair search (sparse line maps and cross scan, dvoc_bench/models/simulator/sparse.py) gives
the dense localiser's evidence bit for bit: compared with a frozen copy of the dense code
(tests/models/perception_reference.py) on rendered frames of every overlay variant the project draws
(modes, label placements, the overlay benchmark's colours, arms and bar widths, Set-of-Mark tags, crops
resized as sent), on the synthetic scenes and on screens from 1280x720 to 3840x2160, and on images dense
with lines where the scan falls back to the dense one. The simulator's perceived values therefore did not
move: its replies, and every simulated number, are those of the dense code."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from PIL import Image

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.detect.types import Detection
from dvoc_bench.draw.render import LABEL_PLACEMENTS, OVERLAY_MODES, OverlayStyle, draw_overlay
from dvoc_bench.draw.som_render import draw_marks, marks_from_detections
from dvoc_bench.models.simulator import perception, sparse
from dvoc_bench.scenes import SceneRegistry, build_sources
from dvoc_bench.scenes.dataset_fixture import screen
from tests.models import perception_reference as ref

COLOURS = ((255, 0, 0), (192, 64, 0), (128, 128, 0), (64, 192, 0), (0, 255, 0))
"""The overlay benchmark's crosshair colours, red to green (dvoc_bench/benchmarks/overlay.py)."""
SIZES = ((5, 3), (10, 3), (15, 3), (20, 3), (25, 3), (15, 1), (15, 2), (15, 4), (15, 5), (5, 1), (10, 2))
"""(arm, bar width): its arms, its bar widths and its small corner."""


def _same(a: perception.MarkerEvidence | None, b: ref.MarkerEvidence | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return dataclasses.astuple(a) == dataclasses.astuple(b)


@functools.cache
def _scenes() -> dict[str, np.ndarray]:
    reg = SceneRegistry("scenes", build_sources())
    return {sid: reg.snapshot(sid).image for sid in ("S1", "S2", "S3", "S4", "S5", "S6")}


@functools.cache
def _screen(w: int, h: int) -> np.ndarray:
    return screen(w, h, seed=w, n=12)[0]


def _marked(img: np.ndarray, seed: int) -> np.ndarray:
    """Set-of-Mark boxes and tags over ``img`` (what som and som_dvoc send)."""
    rng = np.random.default_rng(seed)
    h, w = img.shape[:2]
    dets = []
    for _ in range(12):
        x0, y0 = float(rng.uniform(0, w - 80)), float(rng.uniform(0, h - 40))
        dets.append(
            Detection(Box(x0, y0, x0 + float(rng.uniform(20, 80)), y0 + float(rng.uniform(12, 40))), 0.9)
        )
    return draw_marks(img, marks_from_detections(dets, Size(w, h)))


def _frames(base: np.ndarray, seed: int, n: int):
    """``n`` overlay frames on ``base``: every mode and placement, styles and drafts (edges, corners,
    outside the image) drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    h, w = base.shape[:2]
    edges = [Point(0, 0), Point(w - 1, h - 1), Point(w / 2, -3), Point(-40, h / 2), Point(3, h - 2)]
    for i in range(n):
        p = edges[i] if i < len(edges) else Point(float(rng.uniform(0, w - 1)), float(rng.uniform(0, h - 1)))
        arm, width = SIZES[int(rng.integers(len(SIZES)))]
        style = OverlayStyle(
            crosshair_color=COLOURS[int(rng.integers(len(COLOURS)))], crosshair_arm=arm, crosshair_width=width
        )
        mode = OVERLAY_MODES[i % len(OVERLAY_MODES)]
        placement = LABEL_PLACEMENTS[(i // len(OVERLAY_MODES)) % len(LABEL_PLACEMENTS)]
        label = f"({int(p.x)}, {int(p.y)})"
        yield draw_overlay(
            base, p, mode=mode, iteration=i, position_label=label, style=style, labels=placement
        )


def _check(frames) -> int:
    n = 0
    for f in frames:
        new, old = perception.find_marker(f), ref.find_marker(f)
        assert _same(new, old), (f.shape, new, old)
        n += 1
    return n


def test_the_synthetic_scenes_frames_give_the_dense_evidence() -> None:
    n = sum(_check(_frames(img, seed, 6)) for seed, img in enumerate(_scenes().values()))
    n += _check(_scenes().values())  # the screenshots themselves (oneshot): no overlay
    assert n == 42


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_line_maps_and_scan_equal_the_dense_ones_on_sparse_and_dense_images(seed: int) -> None:
    """Random shapes (odd sizes too) from nearly flat to pure noise: the sparse path and its dense
    fallback both give the dense numbers."""
    rng = np.random.default_rng(seed)
    for density in (0.0, 0.001, 0.02, 0.3, 1.0):
        h, w = (int(v) for v in rng.integers(9, 160, 2))
        img = np.full((h, w, 3), 40, dtype=np.uint8)
        mask = rng.random((h, w)) < density
        img[mask] = rng.integers(0, 256, (int(mask.sum()), 3), dtype=np.uint8)
        hm, vm = sparse.half_line_maps(img, 2)
        hr, vr = ref._line_maps(ref._half_planes(img), 2, False)
        assert np.array_equal(hm, hr) and np.array_equal(vm, vr)
        for maps in ((hr, vr), ref.line_maps(img)):
            arms = (2, 3, 4, 6, 8, 12)
            got = sparse.sparse_scan(*maps, arms, max_fraction=1.0)
            want = ref._scan(*maps, arms)
            assert got is not None and got[:4] == want[:4] and np.array_equal(got[4], want[4])
        if density == 1.0:  # lines everywhere: the scan declines and the dense one runs
            assert sparse.sparse_scan(*ref.line_maps(img), perception.ARM_SCALES) is None
        assert _same(perception.find_marker(img), ref.find_marker(img))


@pytest.mark.e2e
@pytest.mark.parametrize("w,h", [(1280, 720), (1281, 721), (1920, 1080), (2560, 1440), (3840, 2160)])
def test_screens_up_to_4k_give_the_dense_evidence(w: int, h: int) -> None:
    base = _screen(w, h)
    n = _check(_frames(base, w, 12))
    n += _check(_frames(_marked(base, w), w + 1, 6))  # Set-of-Mark tags under the crosshair
    sent = np.asarray(Image.fromarray(base).resize((1568, 1568 * h // w), Image.Resampling.LANCZOS))
    n += _check(_frames(sent, w + 2, 6))  # downscaled as sent to a model with an image limit
    crop = np.ascontiguousarray(base[h // 4 : h // 4 + 400, w // 3 : w // 3 + 640])
    n += _check(_frames(crop, w + 3, 4))  # a zoom crop
    assert n == 28


@pytest.mark.e2e
def test_every_style_on_every_scene_gives_the_dense_evidence() -> None:
    n = 0
    for k, img in enumerate(_scenes().values()):
        n += _check(_frames(_marked(img, k), 100 + k, 10))
        for colour in COLOURS:
            for arm, width in SIZES:
                st = OverlayStyle(crosshair_color=colour, crosshair_arm=arm, crosshair_width=width)
                p = Point(float(img.shape[1] * 0.37), float(img.shape[0] * 0.61))
                f = draw_overlay(img, p, mode="full", iteration=k, position_label="x", style=st)
                n += _check([f])
    assert n == 6 * (10 + len(COLOURS) * len(SIZES))
