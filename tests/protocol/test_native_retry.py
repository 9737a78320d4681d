"""The retry sentence of the native one-shot prompts and the two-cap downscale, at OFF-CENTRE points (at
the image centre x and y are both 500 in 0-1000, so a swapped axis or a swapped size goes unseen): the
sentence on its own (dvoc_bench.protocol.native.native_prompt) and on the path a trial takes (the oneshot
method with a scripted model whose images are downscaled under both of Claude's caps). Every expected
number is worked out here from the published rules (docs/frames.md): frame = pixel / (size - 1) * scale."""

from __future__ import annotations

import re

import pytest

from dvoc_bench.core.frames import FrameRule, downscale
from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.draw.sending import model_view
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.models.base import Reply
from dvoc_bench.protocol.native import NATIVE_STYLES, native_prompt
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from tests.support import ScriptedModel, ShotSink, make_spec, run_method

SEEN = Size(1288, 728)
PREV = Point(200.0, 600.0)  # pixels of the image seen: left of centre, below it
SCALE = {"norm1000": 1000, "norm999": 999, "norm1": 1}


def _written(units: str, axes: str) -> str:
    """``PREV`` as the retry sentence must write it, computed from the rule."""
    if units == "pixel":
        x, y, digits = PREV.x, PREV.y, 0
    else:
        x, y = PREV.x / (SEEN.width - 1) * SCALE[units], PREV.y / (SEEN.height - 1) * SCALE[units]
        digits = 3 if units == "norm1" else 0
    a, b = (x, y) if axes == "xy" else (y, x)
    return f"({a:.{digits}f}, {b:.{digits}f})"


def test_the_expected_numbers_are_off_centre():
    assert _written("pixel", "xy") == "(200, 600)" and _written("pixel", "yx") == "(600, 200)"
    assert _written("norm1000", "xy") == "(155, 825)" and _written("norm1000", "yx") == "(825, 155)"
    assert _written("norm1", "xy") == "(0.155, 0.825)"


@pytest.mark.parametrize("axes", ["xy", "yx"])
@pytest.mark.parametrize("units", ["pixel", "norm1000", "norm999", "norm1"])
@pytest.mark.parametrize("style", NATIVE_STYLES)
def test_the_retry_sentence_writes_the_last_answer_in_the_frame_and_its_axis_order(style, units, axes):
    rule = FrameRule(units=units, axes=axes)
    text = native_prompt(style, instruction="open the Save dialog", seen=SEEN, rule=rule, previous=PREV)
    (said,) = re.findall(r"Your last answer, (\([^)]*\)), was not on the element", text)
    assert said == _written(units, axes)
    assert "last answer" not in native_prompt(style, instruction="x", seen=SEEN, rule=rule)


CLAUDE_CAPS = {"max_long_edge": 1568, "max_pixels": 1_150_000}


@pytest.mark.parametrize(
    ("size", "want"),
    [
        # 1920x1080: only the area binds, s = sqrt(1.15e6 / 2073600) = 0.74471 -> 1429.8 x 804.3, floored
        (Size(1920, 1080), Size(1429, 804)),
        (Size(1080, 1920), Size(804, 1429)),  # the same screen, portrait: the axes follow the image
        # 2000x400: only the long edge binds, s = 1568 / 2000 = 0.784 -> 1568 x 313.6
        (Size(2000, 400), Size(1568, 313)),
        (Size(400, 2000), Size(313, 1568)),
    ],
)
def test_the_two_cap_downscale_maps_off_centre_points_per_axis(size, want):
    rule = FrameRule(units="pixel", resize="downscale", **CLAUDE_CAPS)
    assert downscale(size, **CLAUDE_CAPS) == want
    view = model_view(size, rule=rule)
    assert view.sent == want
    p = Point(size.width * 0.1, size.height * 0.85)  # near the left edge, near the bottom
    q = view.to_sent(p)
    assert q.x == pytest.approx(p.x * want.width / size.width)
    assert q.y == pytest.approx(p.y * want.height / size.height)
    back = view.to_original(Point(40.0, want.height - 30.0))  # a model's answer, seen pixels
    assert back.x == pytest.approx(40.0 * size.width / want.width)
    assert back.y == pytest.approx((want.height - 30.0) * size.height / want.height)


REG = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
"""S1: an 800x600 canvas, its target at the centre (400, 300)."""
SMALL_CAPS = {"max_long_edge": 512, "max_pixels": 150_000}
"""Caps that both bind on 800x600: the long edge gives 512x384 (196608 px), then the area
s = sqrt(150000 / 480000) = 0.5590 -> 447.2 x 335.4, floored: 447x335."""


@pytest.mark.parametrize(
    ("style", "units", "axes", "reply", "said", "seen_xy"),
    [
        # pixels of the image seen, x first: (60, 300) is read and written back as it is
        ("claude", "pixel", "xy", "pyautogui.click(x=60, y=300)", "(60, 300)", (60.0, 300.0)),
        # Gemini's [y, x] in 0-1000: x = 100 * 446 / 1000 = 44.6, y = 800 * 334 / 1000 = 267.2
        (
            "gemini_point",
            "norm1000",
            "yx",
            '[{"point": [800, 100], "label": "b"}]',
            "(800, 100)",
            (44.6, 267.2),
        ),
    ],
)
def test_a_oneshot_retry_under_both_caps_repeats_the_answer_in_its_frame(
    style, units, axes, reply, said, seen_xy
):
    rule = FrameRule(units=units, axes=axes, resize="downscale", **SMALL_CAPS)
    model = ScriptedModel(Reply(reply))
    env = TrialEnv(snapshot=REG.snapshot("S1"), model=model, model_identity="m@", save_shot=ShotSink(),
                   frame_rule=rule, prompt_style=style)  # fmt: skip
    res = run_method(make_spec(task="S1", method="oneshot", frame=units, max_attempts=2), env)
    assert [r.image_size for r in model.requests] == [Size(447, 335)] * 2
    assert "last answer" not in model.requests[0].text
    assert f"Your last answer, {said}, was not on the element" in model.requests[1].text
    want = Point(seen_xy[0] * 800 / 447, seen_xy[1] * 600 / 335)  # screenshot pixels, per axis
    step = res.steps[0]
    assert step.values_px is not None
    assert step.values_px["x"] == pytest.approx(want.x) and step.values_px["y"] == pytest.approx(want.y)
    assert res.final_point == pytest.approx([want.x, want.y])
