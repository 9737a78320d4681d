"""Two-point (drag) answers (issue 50): each family's own drag form, written as its documentation shows it,
read by one reader per form; both points mapped through the family's declared frame exactly as one point is;
a one-call drag trial records both points and every call as ``both``."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import numpy as np
import pytest

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.methods.drag import run_drag
from dvoc_bench.methods.registry import method_info
from dvoc_bench.models.base import Reply, ToolCall
from dvoc_bench.protocol.drag import DRAG_TOOL, drag_prompt, parse_drag
from tests.support import ScriptedModel, ShotSink, make_spec, run_method

PX = FrameRule(units="pixel")
K = FrameRule(units="norm1000")
YX = FrameRule(units="norm1000", axes="yx")

# Anthropic computer use: the left_click_drag action's input is start_coordinate and coordinate, "(x, y): x
# pixels from the left edge, y pixels from the top edge" ("Click and drag the cursor from start_coordinate
# to coordinate": the SDK's ComputerLeftClickDragInput / BetaComputerLeftClickDragInput). Claude sends it as
# a tool_use of its "computer" tool.
DRAG_INPUT = {"action": "left_click_drag", "start_coordinate": [512, 300], "coordinate": [880, 610]}
ANTHROPIC = ToolCall("computer", json.dumps(DRAG_INPUT))
# Qwen2.5-VL's computer_use tool (its cookbook's function description): "mouse_move: Move the cursor to a
# specified (x, y) pixel coordinate", "left_click_drag: Click and drag the cursor to a specified (x, y) pixel
# coordinate": the drag starts where the cursor is, so a drag is a mouse_move, then a left_click_drag.
QWEN = (
    '<tool_call>\n{"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [215, 98]}}\n'
    "</tool_call>\n"
    '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click_drag", '
    '"coordinate": [640, 402]}}\n</tool_call>'
)
# UI-TARS's action space (its prompt templates): drag(start_box='<|box_start|>(x1,y1)<|box_end|>',
# end_box='<|box_start|>(x3,y3)<|box_end|>'); UI-TARS-1.5: drag(start_point='<point>x1 y1</point>',
# end_point='<point>x2 y2</point>'); the desktop template writes boxes '[x1, y1, x2, y2]'.
UITARS_BOX = "Thought: move the file.\nAction: drag(start_box='<|box_start|>(120,340)<|box_end|>', " \
    "end_box='<|box_start|>(780,355)<|box_end|>')"  # fmt: skip
UITARS_POINT = "Action: drag(start_point='<point>120 340</point>', end_point='<point>780 355</point>')"
UITARS_RECT = "Action: drag(start_box='[100, 330, 140, 350]', end_box='[770, 345, 790, 365]')"
# pyautogui's documented mouse functions: moveTo(x, y) moves the pointer, dragTo(x, y, duration, button=...)
# drags from where it is to (x, y).
PYAUTOGUI = "pyautogui.moveTo(300, 420)\npyautogui.dragTo(900, 415, duration=0.5, button='left')"
PYAUTOGUI_NAMED = "pyautogui.moveTo(x=300, y=420)\npyautogui.dragTo(x=900, y=415, button='left')"

CASES = [
    ("claude", Reply(None, [ANTHROPIC]), PX, (512, 300), (880, 610), "drag:anthropic"),
    ("qwen25vl", Reply(QWEN), PX, (215, 98), (640, 402), "drag:qwen"),
    ("qwen3vl", Reply(QWEN), K, (215, 98), (640, 402), "drag:qwen"),
    ("uitars15", Reply(UITARS_BOX), PX, (120, 340), (780, 355), "drag:uitars"),
    ("uitars15", Reply(UITARS_POINT), PX, (120, 340), (780, 355), "drag:uitars"),
    ("uitars15", Reply(UITARS_RECT), PX, (120, 340), (780, 355), "drag:uitars"),
    ("pyautogui", Reply(PYAUTOGUI), PX, (300, 420), (900, 415), "drag:pyautogui"),
    ("pyautogui", Reply(PYAUTOGUI_NAMED), PX, (300, 420), (900, 415), "drag:pyautogui"),
    # the harness's own tool call, and the plain JSON every other style is asked for
    ("tool_call", Reply(None, [ToolCall(DRAG_TOOL, '{"from": [10, 20], "to": [30, 40], "confidence": 0.8}')]),
     PX, (10, 20), (30, 40), "drag:json"),  # fmt: skip
    ("holo", Reply('{"from": [10, 20], "to": [30, 40]}'), K, (10, 20), (30, 40), "drag:json"),
    # Gemini writes [y, x]: its config's axes, not the syntax, say which is which
    ("gemini_point", Reply('```json\n{"from": [200, 100], "to": [400, 300]}\n```'), YX, (100, 200),
     (300, 400), "drag:json"),  # fmt: skip
]


@pytest.mark.parametrize(("style", "reply", "rule", "start", "end", "form"), CASES)
def test_each_family_form_of_a_drag_is_read(style, reply, rule, start, end, form):
    p = parse_drag(reply, style, rule)
    assert p.status == "ok", p
    assert p.detail is not None and p.detail.split(";")[0] == form
    assert p.values is not None
    assert (p.values["x"], p.values["y"]) == pytest.approx(start)
    assert (p.values["to_x"], p.values["to_y"]) == pytest.approx(end)


def test_a_drag_without_its_start_or_a_refusal_is_not_an_answer():
    lone = '{"name": "computer_use", "arguments": {"action": "left_click_drag", "coordinate": [5, 6]}}'
    assert parse_drag(Reply(lone), "qwen25vl", PX).status == "parse_error"  # no mouse_move: start unknown
    assert parse_drag(Reply("pyautogui.dragTo(900, 415)"), "pyautogui", PX).status == "parse_error"
    assert parse_drag(Reply("I'm unable to find the node."), "claude", PX).status == "refusal"
    assert parse_drag(Reply("click(start_box='(1,2)')"), "uitars15", PX).status == "parse_error"


STYLES = ["tool_call", "claude", "qwen25vl", "qwen3vl", "uitars15", "pyautogui", "holo"]


@pytest.mark.parametrize("style", STYLES)
def test_every_style_asks_for_the_drag_in_the_form_its_reader_reads(style):
    text = drag_prompt(style, instruction="drag the file to the bin", seen=Size(800, 600), rule=K)
    assert "drag the file to the bin" in text
    want = {"claude": "left_click_drag", "qwen25vl": "mouse_move", "qwen3vl": "left_click_drag",
            "uitars15": "drag(start_box=", "pyautogui": "pyautogui.dragTo", "tool_call": DRAG_TOOL,
            "holo": '"from"'}[style]  # fmt: skip
    assert want in text


W, H = 1000, 600
FROM_BOX, TO_BOX = Box(100, 100, 200, 160), Box(700, 400, 820, 480)


def _truth(sid: str, box: Box, text: str) -> SceneTruth:
    return SceneTruth(sid, Size(W, H), text, "t", box, (Element("t", "t", box),))


def drag_env(model: ScriptedModel, rule: FrameRule, style: str) -> TrialEnv:
    ends = (_truth("D:from", FROM_BOX, "drag it: start"), _truth("D:to", TO_BOX, "drag it: end"))
    truth = SceneTruth("D", Size(W, H), "drag it", "t", FROM_BOX, (Element("t", "t", FROM_BOX),), ends=ends)
    snap = Snapshot(truth, np.full((H, W, 3), 255, np.uint8), "h")
    return TrialEnv(snapshot=snap, model=model, model_identity="m@", save_shot=ShotSink(), frame_rule=rule,
                    prompt_style=style)  # fmt: skip


def test_both_points_are_mapped_through_the_frame_exactly_as_one_point_is():
    """Qwen3-VL in 0-1000 on a 1000x600 screen: the one-call drag's two points equal what the one-point
    one-shot gives for the same numbers in the same family's one-point form."""
    rule = FrameRule(units="norm1000")
    model = ScriptedModel(Reply(QWEN.replace("[215, 98]", "[150, 216]").replace("[640, 402]", "[760, 733]")))
    spec = make_spec(task="D", method="oneshot", frame="norm1000", max_attempts=1)
    env = drag_env(model, rule, "qwen3vl")
    res = asyncio.run(run_drag(method_info("oneshot"), spec, env))
    assert res.status == "ok" and res.stop_reason == "hit"
    assert len(res.steps) == 1 and len(model.requests) == 1  # both points in one call
    assert res.steps[0].drag_end == "both" and res.steps[0].parse_detail == "drag:qwen"
    for numbers, got in (("[150, 216]", res.final_point), ("[760, 733]", res.drop_point)):
        one = ScriptedModel(Reply(f'{{"point_2d": {numbers}}}'))
        single = dataclasses.replace(env, model=one)
        ref = run_method(spec, single)
        assert ref.final_point is not None and got == pytest.approx(ref.final_point)
    assert FROM_BOX.contains(Point(*res.final_point)) and TO_BOX.contains(Point(*res.drop_point))
