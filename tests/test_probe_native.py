"""The frame probe asks a native-style model in its own format (docs/frames.md): the family's prompt with no
unit and no size, no tool, the reply read by the family's reader in the declared axis order. A model that
answers only in its own format ([y, x] points for Gemini, start_box for UI-TARS) gets the right verdict in
three calls."""

from __future__ import annotations

import asyncio
import json
import re

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.core.geometry import Size
from dvoc_bench.models.base import ModelRequest, Reply
from dvoc_bench.protocol.native import NEUTRAL_UNITS
from dvoc_bench.runner.probe import classify, probe_model
from dvoc_bench.runner.settings import ProbeOptions
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

REG = SceneRegistry(default_scenes_dir())
TASKS = ["S1", "S3", "S5"]


class NativeOnly:
    """Answers the target's centre in one family's own format and frame, worked here from the scene's
    truth; any other request (a tool offered) gets a refusal in plain text."""

    simulated = False

    def __init__(self, name: str, write):
        self.name = name
        self.write = write
        self.requests: list[ModelRequest] = []

    async def complete(self, req: ModelRequest) -> Reply:
        self.requests.append(req)
        if req.tools:
            return Reply(text="I only answer in my own format.")
        snap = REG.snapshot(req.scene_id)
        c, s = snap.target_box.centre, snap.size
        return Reply(text=self.write(c.x / s.width, c.y / s.height, req.image_size))


def _probe(model, rule, style):
    answers = asyncio.run(probe_model(model, REG, TASKS, ProbeOptions(repeats=1), rule=rule, style=style))
    return classify(model.name, rule.units, answers, ProbeOptions(repeats=1))


def test_a_gemini_style_model_is_asked_for_yx_points_and_read_as_norm1000():
    def write(fx: float, fy: float, _: Size) -> str:
        return json.dumps([{"point": [round(fy * 1000), round(fx * 1000)], "label": "it"}])  # [y, x]

    rule = FrameRule(units="norm1000", axes="yx")
    model = NativeOnly("gem", write)
    v = _probe(model, rule, "gemini_point")
    assert v.verdict == "norm1000" and v.usable == 3 and v.telling == 3, v
    for req in model.requests:
        assert req.tools == [] and '"point": [y, x]' in req.text and NEUTRAL_UNITS in req.text
        assert "1000" not in req.text and not re.search(r"\d+x\d+", req.text)  # no unit, no size


def test_a_uitars_style_model_answering_pixels_of_the_resized_image_is_pixel_sent():
    def write(fx: float, fy: float, seen: Size) -> str:
        return f"Action: click(start_box='({round(fx * seen.width)},{round(fy * seen.height)})')"

    rule = FrameRule(units="pixel", resize="smart_resize", factor=28, max_pixels=200_704)
    model = NativeOnly("tars", write)
    v = _probe(model, rule, "uitars15")
    assert v.verdict == "pixel_sent" and v.usable == 3, v  # 800x600 is sent at 504x364 (256 * 28^2)
    assert all(r.image_size == Size(504, 364) and "start_box" in r.text for r in model.requests)


def test_the_tool_call_style_still_asks_with_click_at():
    model = NativeOnly("plain", lambda fx, fy, seen: "")
    v = _probe(model, FrameRule(), "tool_call")
    assert v.usable == 0 and all(r.tools for r in model.requests)
