"""Perceiving the crosshair from the pixels (issue 16 item 1): no exact colour, error and misses that grow
as contrast falls, as the marker shrinks and as clutter overlaps it; the prompt text when nothing is seen."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dvoc_bench.calibration.overlay import PERCEPTION
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.scene import Element, SceneTruth
from dvoc_bench.draw.render import OverlayStyle, draw_overlay
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.models.simulator import SimProfile, SimulatedModel
from dvoc_bench.models.simulator.perception import find_marker, localise
from dvoc_bench.scenes import SceneRegistry, build_sources

BG = (40, 43, 48)  # the synthetic scenes' background
SIZE = Size(400, 300)
PER = dict(PERCEPTION)  # the hand-set values the profiles carry (calibration/overlay.py)


def _blank(size: Size = SIZE, colour: tuple[int, int, int] = BG) -> np.ndarray:
    img = np.zeros((size.height, size.width, 3), dtype=np.uint8)
    img[:] = colour
    return img


def _frame(p: Point, mode: str = "crosshair", img: np.ndarray | None = None, **style) -> np.ndarray:
    base = _blank() if img is None else img
    return draw_overlay(base, p, mode=mode, iteration=1, position_label="(1, 2)", style=OverlayStyle(**style))


@pytest.mark.parametrize("colour", [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255), (200, 160, 40)])
def test_any_colour_is_found_at_its_centre(colour: tuple[int, int, int]) -> None:
    ev = find_marker(_frame(Point(173, 121), crosshair_color=colour))
    assert ev is not None and ev.point.dist(Point(173, 121)) <= 1.0


def test_salience_falls_with_contrast_and_size_and_clutter_rises_with_the_circle() -> None:
    p = Point(200, 150)
    sal = [
        find_marker(_frame(p, crosshair_color=c)).salience for c in ((255, 0, 0), (128, 128, 0), (70, 70, 70))
    ]
    assert sal[0] > sal[1] > sal[2]  # pure red, olive, a grey barely off the background
    sizes = [
        find_marker(_frame(p, crosshair_arm=a, crosshair_width=w)).salience
        for a, w in ((5, 1), (10, 2), (20, 4))
    ]
    assert sizes[0] < sizes[1] < sizes[2]
    bare, full = find_marker(_frame(p)), find_marker(_frame(p, mode="full"))
    assert bare.clutter < 0.02 < full.clutter  # the circle overlaps the marker's surroundings


def test_an_image_without_overlay_shows_no_marker() -> None:
    reg = SceneRegistry("scenes", build_sources())
    for sid in ("S1", "S2", "S3", "S4", "S5", "S6"):
        ev = find_marker(reg.snapshot(sid).image)
        assert ev is None or ev.salience < PER["min_salience"] or ev.contrast < PER["min_contrast"], (sid, ev)
        assert localise(ev, np.random.default_rng(0), **PER) is None


def test_a_clipped_crosshair_at_a_corner_is_found() -> None:
    ev = find_marker(_frame(Point(0, 299)))
    assert ev is not None and ev.point.dist(Point(0, 299)) <= 1.5


def _readings(img: np.ndarray, n: int = 400, **per: float) -> tuple[float, float]:
    """(miss rate, median error px) of ``n`` noisy readings."""
    ev = find_marker(img)
    errs, miss = [], 0
    for i in range(n):
        p = localise(ev, np.random.default_rng(i), **{**PER, **per})
        if p is None:
            miss += 1
        else:
            errs.append(p.dist(Point(200, 150)))
    return miss / n, float(np.median(errs)) if errs else float("inf")


def test_error_and_misses_grow_as_the_marker_fades_shrinks_or_is_cluttered() -> None:
    p = Point(200, 150)
    strong = _readings(_frame(p))
    faint = _readings(_frame(p, crosshair_color=(90, 90, 90)))
    tiny = _readings(_frame(p, crosshair_arm=5, crosshair_width=1))
    assert strong[0] < 0.01 and strong[1] < 1.5  # the authors' style: read essentially exactly
    assert faint[0] > strong[0] and faint[1] > strong[1]
    assert tiny[0] > 0.1 and tiny[1] > strong[1]
    # clutter: the same marker under dense crossing text-like strokes around it
    busy = _blank()
    for x in range(150, 251, 6):
        busy[110:190, x] = (230, 230, 230)
    cluttered = _readings(_frame(p, img=busy))
    clean = _readings(_frame(p))
    assert cluttered[1] > clean[1]


def test_a_mutated_localiser_that_ignores_salience_fails_the_checks() -> None:
    """The checks above can fail: with a constant error and no misses, a faint marker reads like a strong
    one."""
    p = Point(200, 150)
    faint = _readings(_frame(p, crosshair_color=(90, 90, 90)), sigma_px=0.0, detect_salience=0.0)
    strong = _readings(_frame(p), sigma_px=0.0, detect_salience=0.0)
    assert not (faint[0] > strong[0] or faint[1] > strong[1])


SAVE = Element("save", "Save", Box(300, 230, 360, 260))
TRUTH = SceneTruth("T1", SIZE, "Click Save", "save", SAVE.box, (SAVE,))
OFFSET = [{"type": "function", "function": {"name": "report_offset", "parameters": {}}}]


def _reply(img: np.ndarray | None, text: str, seed: int = 0, **per: float) -> dict:
    prof = SimProfile.from_mapping({"frames": {"pixel": 1}, "perception": {**PER, **per}})
    model = SimulatedModel("m", prof, lambda _: TRUTH)
    r = model.respond(ModelRequest(text, None, SIZE, OFFSET, "T1", seed, image_rgb=img))
    return json.loads(r.tool_calls[0].arguments)


def test_a_missed_marker_leaves_the_model_to_the_text() -> None:
    text = "Task: Click Save\nposition (100, 100), reported (5, 5) => (120, 80)"
    tiny = _frame(Point(100, 100), crosshair_arm=5, crosshair_width=1)
    answers = {tuple(_reply(tiny, text, s, detect_salience=5.0).values())[:2] for s in range(30)}
    # never seen: the estimate comes from the history's last arrow (120, 80): offset (210, 165)
    assert answers == {(210, 165)}
    seen = _reply(_frame(Point(100, 100)), text)
    assert abs(seen["dx"] - 230) <= 2 and abs(seen["dy"] - 145) <= 2  # seen: from the drawn crosshair


# ------------------------------------------------------------------ the fast paths are the same numbers


def _float_half(image: np.ndarray) -> np.ndarray:
    """The plain float computation of the half-resolution planes (2x2 means, then units of 255)."""
    h, w = image.shape[0] // 2 * 2, image.shape[1] // 2 * 2
    f = image[:h, :w].astype(np.float32)
    half = (f[0::2, 0::2] + f[1::2, 0::2] + f[0::2, 1::2] + f[1::2, 1::2]) * np.float32(0.25)
    planes = np.ascontiguousarray(np.moveaxis(half, -1, 0))
    planes *= np.float32(1.0 / 255.0)
    return planes


@pytest.mark.parametrize("shape", [(600, 800), (301, 457), (7, 5)])
def test_the_integer_half_resolution_is_the_float_one_bit_for_bit(shape: tuple[int, int]) -> None:
    """Issue 34 item 6: the half-resolution planes are summed in integers for speed; the records must not
    move, so the result is the float computation's to the last bit (on random bytes, every value occurs)."""
    from dvoc_bench.models.simulator.perception import _half_planes

    img = np.random.default_rng(7).integers(0, 256, (*shape, 3), dtype=np.uint8)
    fast, slow = _half_planes(img), _float_half(img)
    assert fast.dtype == slow.dtype == np.float32 and fast.shape == slow.shape
    assert np.array_equal(fast, slow)


def test_the_in_place_line_maps_are_the_plain_expressions_bit_for_bit() -> None:
    """The blur, the colour distance and the arm means run in place (fresh large arrays cost page faults);
    each equals its plain numpy expression exactly."""
    from dvoc_bench.models.simulator.perception import _Arms, _blur3, _dist

    rng = np.random.default_rng(3)
    planes = rng.random((3, 61, 83), dtype=np.float32)
    p = np.pad(planes, ((0, 0), (1, 1), (1, 1)), mode="edge")
    rows = p[:, :-2] + p[:, 1:-1] + p[:, 2:]
    blurred = (rows[:, :, :-2] + rows[:, :, 1:-1] + rows[:, :, 2:]) * np.float32(1 / 9)
    assert np.array_equal(_blur3(planes), blurred)
    a, b = planes[:, 4:], planes[:, :-4]
    d0, d1, d2 = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    assert np.array_equal(_dist(a, b), np.sqrt(d0 * d0 + d1 * d1 + d2 * d2))
    m = planes[0]
    arms = _Arms(m, 1, 12)
    for k in (1, 3, 12):
        before, after = arms.means(k)
        c = arms.c
        i = np.arange(m.shape[1], dtype=np.float32)
        nb = np.maximum(np.minimum(np.float32(k), i), 1.0)
        na = np.maximum(np.minimum(np.float32(k), m.shape[1] - 1 - i), 1.0)
        lo = 13
        ref_b = (c[:, lo - 1 : lo - 1 + m.shape[1]] - c[:, lo - k - 1 : lo - k - 1 + m.shape[1]]) / nb
        ref_a = (c[:, lo + k : lo + k + m.shape[1]] - c[:, lo : lo + m.shape[1]]) / na
        ref_b[:, 0], ref_a[:, -1] = np.inf, np.inf
        assert np.array_equal(before, ref_b) and np.array_equal(after, ref_a)
