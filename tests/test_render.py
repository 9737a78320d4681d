"""Overlay drawing, crosshair detection, PNG encoding and the pinned font."""

from __future__ import annotations

import io
import os
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from dvoc_bench.core.declare import ConfigError, validate
from dvoc_bench.core.geometry import Point
from dvoc_bench.draw import render
from dvoc_bench.draw.render import (
    OverlayStyle,
    crosshair_centre,
    decode_png,
    dejavu,
    draw_overlay,
    encode_png,
    find_crosshair,
    png_sha256,
)
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

STYLE = OverlayStyle()
RED = np.array(STYLE.crosshair_color, dtype=np.uint8)
W, H = 800, 600


@pytest.fixture(scope="module")
def registry() -> SceneRegistry:
    return SceneRegistry(default_scenes_dir())


@pytest.fixture(scope="module")
def scene(registry: SceneRegistry) -> np.ndarray:
    return registry.snapshot("S3").image


def _overlay(image: np.ndarray, p: Point, mode: str = "full", label: str | None = "(1, 2) +/- 30px"):
    return draw_overlay(image, p, mode=mode, iteration=4, position_label=label, style=STYLE)


def _mean_detector(image: np.ndarray) -> Point:
    ys, xs = np.nonzero(np.all(image == RED, axis=-1))
    return Point(float(xs.mean()), float(ys.mean()))


# ------------------------------------------------------------------------------------------- overlay


def test_overlay_does_not_mutate_input_and_returns_new_array(scene: np.ndarray) -> None:
    before = scene.copy()
    out = _overlay(scene, Point(360, 220))
    assert np.array_equal(scene, before)
    assert out is not scene and not np.shares_memory(out, scene)
    assert out.dtype == np.uint8 and out.shape == scene.shape
    assert not np.array_equal(out, scene)


def test_mode_none_is_an_unchanged_copy(scene: np.ndarray) -> None:
    out = _overlay(scene, Point(360, 220), mode="none")
    assert np.array_equal(out, scene)
    assert not np.shares_memory(out, scene)


def test_unknown_mode_rejected(scene: np.ndarray) -> None:
    with pytest.raises(ValueError, match="crosshair-only"):
        _overlay(scene, Point(1, 1), mode="crosshair-only")


def test_crosshair_geometry(scene: np.ndarray) -> None:
    out = _overlay(scene, Point(400.4, 299.6), mode="crosshair")
    cx, cy = 400, 300
    red = np.all(out == RED, axis=-1)
    arm = STYLE.crosshair_arm
    assert red[cy, cx - arm : cx + arm + 1].all() and not red[cy, cx - arm - 1] and not red[cy, cx + arm + 1]
    assert red[cy - arm : cy + arm + 1, cx].all() and not red[cy - arm - 1, cx] and not red[cy + arm + 1, cx]
    assert red[cy - 1 : cy + 2, cx + 10].all() and not red[cy - 2, cx + 10] and not red[cy + 2, cx + 10]
    assert red.sum() == 2 * 3 * (2 * arm + 1) - 9


def test_centre_is_rounded_not_truncated() -> None:
    assert crosshair_centre(Point(10.6, 20.4)) == (11, 20)
    assert crosshair_centre(Point(10.4, 20.6)) == (10, 21)


def test_full_draws_circle_and_crosshair_on_top(scene: np.ndarray) -> None:
    p = Point(360, 220)
    full = _overlay(scene, p, mode="full")
    cross = _overlay(scene, p, mode="crosshair")
    blue = np.array(STYLE.circle_color, dtype=np.uint8)
    assert np.all(full == blue, axis=-1).sum() > 300
    assert not np.all(cross == blue, axis=-1).any()
    # the circle passes through (cx, cy - r), which the vertical arm does not reach: blue there ...
    assert tuple(full[220 - 29, 360]) == STYLE.circle_color
    # ... and the crosshair centre is pure red in both modes
    assert tuple(full[220, 360]) == STYLE.crosshair_color == tuple(cross[220, 360])


def test_labels_drawn(scene: np.ndarray) -> None:
    out = _overlay(scene, Point(400, 300), mode="crosshair", label="(400, 300) +/- 30px")
    top_left = out[8:30, 8:60]
    bottom_right = out[H - 30 : H - 8, W - 120 : W - 8]
    for patch in (top_left, bottom_right):
        assert np.all(patch == 0, axis=-1).any() and np.all(patch == 255, axis=-1).any()
    no_label = _overlay(scene, Point(400, 300), mode="crosshair", label=None)
    assert np.array_equal(no_label[H - 40 :, W - 200 :], scene[H - 40 :, W - 200 :])
    assert not np.array_equal(no_label[:40, :80], scene[:40, :80])


def test_crosshair_over_label_stays_visible(scene: np.ndarray) -> None:
    out = _overlay(scene, Point(20, 15))
    assert tuple(out[15, 20]) == STYLE.crosshair_color
    assert find_crosshair(out, width=3) == Point(20, 15)


def test_mean_detector_exact_when_unclipped(scene: np.ndarray) -> None:
    out = _overlay(scene, Point(123.2, 456.7))
    assert _mean_detector(out) == Point(123, 457)


def test_mean_detector_biased_when_clipped_but_find_crosshair_is_not(scene: np.ndarray) -> None:
    out = _overlay(scene, Point(0, 300))
    assert _mean_detector(out).x > 2  # one arm cut off: the mean is pulled into the image
    found = find_crosshair(out)
    assert found is not None and abs(found.x - 0) <= 1 and found.y == 300
    assert find_crosshair(out, width=3) == Point(0, 300)


def test_find_crosshair_none_without_red(scene: np.ndarray) -> None:
    assert find_crosshair(scene) is None
    assert find_crosshair(_overlay(scene, Point(1, 1), mode="none")) is None


@settings(max_examples=50, deadline=None)
@given(
    x=st.one_of(st.floats(0, W - 1), st.floats(0, 3), st.floats(W - 4, W - 1)),
    y=st.one_of(st.floats(0, H - 1), st.floats(0, 3), st.floats(H - 4, H - 1)),
    mode=st.sampled_from(["full", "crosshair"]),
    scene_id=st.sampled_from(["S1", "S3", "S4", "S6"]),
    labelled=st.booleans(),
)
def test_find_crosshair_recovers_draft(
    registry: SceneRegistry, x: float, y: float, mode: str, scene_id: str, labelled: bool
) -> None:
    image = registry.snapshot(scene_id).image
    label = f"({x:.0f}, {y:.0f}) +/- 30px" if labelled else None
    out = draw_overlay(image, Point(x, y), mode=mode, iteration=7, position_label=label, style=STYLE)
    cx, cy = crosshair_centre(Point(x, y))
    assert tuple(out[cy, cx]) == STYLE.crosshair_color
    found = find_crosshair(out)
    assert found is not None
    assert abs(found.x - x) <= 1 and abs(found.y - y) <= 1
    assert find_crosshair(out, width=STYLE.crosshair_width) == Point(cx, cy)


def test_custom_style_is_used(scene: np.ndarray) -> None:
    style = OverlayStyle(crosshair_color=(0, 255, 0), crosshair_width=5, crosshair_arm=10)
    out = draw_overlay(
        scene, Point(400, 300), mode="crosshair", iteration=1, position_label=None, style=style
    )
    green = np.all(out == np.array([0, 255, 0], dtype=np.uint8), axis=-1)
    assert green.sum() == 2 * 5 * 21 - 25
    assert find_crosshair(out, (0, 255, 0), width=5) == Point(400, 300)


# --------------------------------------------------------------------------------------------- style


def test_style_from_mapping() -> None:
    style = validate(OverlayStyle, {"circle_radius": 20, "crosshair_color": [0, 0, 255]})
    assert style.circle_radius == 20 and style.crosshair_color == (0, 0, 255)
    assert validate(OverlayStyle, {}) == OverlayStyle()


@pytest.mark.parametrize(
    ("mapping", "key"),
    [({"crosshair_colour": [1, 2, 3]}, "crosshair_colour"), ({"radius": 3}, "radius")],
)
def test_style_unknown_key_rejected(mapping: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=f"^overlay_style.{key}: unknown key; allowed: crosshair_color"):
        validate(OverlayStyle, mapping, "overlay_style.")


@pytest.mark.parametrize(
    "mapping",
    [{"circle_color": [1, 2]}, {"label_bg": [0, 0, 300]}, {"circle_width": -1}, {"crosshair_arm": "nine"}],
)
def test_style_bad_value_rejected(mapping: dict) -> None:
    with pytest.raises(ConfigError, match=f"^overlay_style.{next(iter(mapping))}"):
        validate(OverlayStyle, mapping, "overlay_style.")


# ---------------------------------------------------------------------------------------------- PNG


def test_png_round_trip_scene(scene: np.ndarray) -> None:
    out = _overlay(scene, Point(300, 200))
    data = encode_png(out)
    assert np.array_equal(decode_png(data), out)
    with Image.open(io.BytesIO(data)) as img:
        assert img.mode == "RGB" and img.size == (W, H) and not img.info
    assert encode_png(out) == data  # deterministic
    assert encode_png(out.copy()) == data
    assert len(data) < 40_000


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 40), w=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_png_round_trip_random(h: int, w: int, seed: int) -> None:
    image = np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    assert np.array_equal(decode_png(encode_png(image)), image)
    view = np.random.default_rng(seed).integers(0, 256, size=(h, 2 * w, 3), dtype=np.uint8)[:, ::2]
    assert np.array_equal(decode_png(encode_png(view)), view)


def test_png_rejects_bad_arrays() -> None:
    with pytest.raises(ValueError):
        encode_png(np.zeros((4, 4), dtype=np.uint8))
    with pytest.raises(ValueError):
        encode_png(np.zeros((4, 4, 3), dtype=np.float32))


def test_png_sha256() -> None:
    digest = png_sha256(b"abc")
    assert digest == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


# --------------------------------------------------------------------------------------------- font


def test_dejavu_is_cached_and_pinned() -> None:
    assert dejavu(14) is dejavu(14)
    assert os.path.basename(render.dejavu_path()) == "DejaVuSans.ttf"
    assert dejavu(14).getname()[0] == "DejaVu Sans"


def test_dejavu_missing_raises(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(render, "mpl_data_dir", lambda: str(tmp_path))
    render.dejavu_path.cache_clear()
    render.dejavu.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="DejaVu"):
            dejavu(13)
    finally:
        monkeypatch.undo()
        render.dejavu_path.cache_clear()
        render.dejavu.cache_clear()


def test_banded_png_with_a_base_is_byte_identical_and_decodes_exactly() -> None:
    from dvoc_bench.draw.render import BAND_ROWS, _adler32_combine

    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, (3 * BAND_ROWS + 5, 41, 3), dtype=np.uint8)
    base.flags.writeable = False
    img = base.copy()
    img[BAND_ROWS + 3, 10] = (255, 0, 0)  # one band differs
    a, b = encode_png(img), encode_png(img, base=base)
    assert a == b
    assert np.array_equal(decode_png(a), img)
    assert encode_png(base, base=base) == encode_png(base)
    # the combined checksum equals zlib's over the concatenation
    d1, d2 = b"hello, ", b"banded world" * 100
    assert _adler32_combine(zlib.adler32(d1), zlib.adler32(d2), len(d2)) == zlib.adler32(d1 + d2)


def test_two_screenshots_of_one_size_keep_their_own_bands() -> None:
    """The bands of a clean screenshot are cached by that array: another screenshot of the same size (the
    next task's) never borrows them, and the first is still right after the second was cached."""
    from dvoc_bench.draw.render import BAND_ROWS

    rng = np.random.default_rng(11)
    bases = [rng.integers(0, 256, (2 * BAND_ROWS + 3, 37, 3), dtype=np.uint8) for _ in range(2)]
    for _ in range(2):
        for base in bases:
            frame = base.copy()
            frame[BAND_ROWS + 1, 5] = (0, 255, 0)
            assert encode_png(frame, base=base) == encode_png(frame)


def _find_crosshair_reference(image: np.ndarray, color=(255, 0, 0), width=None):
    """The straightforward full-image version find_crosshair must agree with."""
    r, g, b = color
    mask = (image[..., 0] == r) & (image[..., 1] == g) & (image[..., 2] == b)
    if not mask.any():
        return None
    h, w = mask.shape
    return Point(
        render._band_centre(mask.sum(axis=0), w, width), render._band_centre(mask.sum(axis=1), h, width)
    )


def test_find_crosshair_agrees_with_the_full_image_comparison() -> None:
    rng = np.random.default_rng(7)
    style = OverlayStyle()
    base = np.full((120, 160, 3), 255, np.uint8)  # white: every row has red-channel 255 (no shortcut)
    noisy = rng.integers(0, 2, (120, 160, 3), dtype=np.uint8) * 255  # scattered pure red pixels
    for image in (base, noisy, np.zeros((120, 160, 3), np.uint8)):
        for _ in range(30):
            p = Point(float(rng.uniform(-20, 180)), float(rng.uniform(-20, 140)))
            frame = draw_overlay(image, p, mode="crosshair", iteration=0, position_label=None, style=style)
            for width in (None, 3):
                assert find_crosshair(frame, width=width) == _find_crosshair_reference(frame, width=width)
        assert find_crosshair(image) == _find_crosshair_reference(image)


def test_fonts_are_per_thread() -> None:
    import threading

    other: list[object] = []
    t = threading.Thread(target=lambda: other.append(dejavu(14)))
    t.start()
    t.join()
    assert other[0] is not dejavu(14) and dejavu(14) is dejavu(14)
    assert other[0].getname() == dejavu(14).getname()
