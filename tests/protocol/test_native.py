"""The families' own one-shot formats (dvoc_bench/protocol/native.py): what each reader takes from the
replies those models write, the axis order, boxes read as their centre, and failures that never raise."""

from __future__ import annotations

import pytest

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.models.base import Reply
from dvoc_bench.protocol.native import NATIVE_STYLES, native_prompt, parse_native, point_parser

XY, YX = FrameRule(units="norm1000"), FrameRule(units="norm1000", axes="yx")

CASES = [
    ("qwen25vl", '```json\n[{"point_2d": [412, 300], "label": "Save"}]\n```', XY, (412, 300)),
    ("qwen25vl", '{"bbox_2d": [100, 200, 140, 260], "label": "Save"}', XY, (120, 230)),
    (
        "qwen25vl",
        "<|object_ref_start|>Save<|object_ref_end|><|box_start|>(10,20),(30,40)<|box_end|>",
        XY,
        (20, 30),
    ),
    ("qwen3vl", '[{"point_2d": [500, 250]}]', XY, (500, 250)),
    ("uitars15", "Thought: it is the Save button.\nAction: click(start_box='(197,525)')", XY, (197, 525)),
    ("uitars15", "Action: click(start_box='<|box_start|>(197,525)<|box_end|>')", XY, (197, 525)),
    ("uitars15", "<point>197 525</point>", XY, (197, 525)),
    ("gemini_point", '[{"point": [250, 400], "label": "Save"}]', YX, (400, 250)),
    ("gemini_point", '[{"box_2d": [300, 200, 348, 300], "label": "Save"}]', YX, (250, 324)),
    ("claude", "I will click it.\npyautogui.click(x=640, y=360)", XY, (640, 360)),
    ("claude", "pyautogui.click(y=360, x=640)", YX, (640, 360)),  # named: read by name, not by order
    ("claude", '{"action": "left_click", "coordinate": [640, 360]}', XY, (640, 360)),
    ("glm", "The button is here <|begin_of_box|>[500, 250]<|end_of_box|>", XY, (500, 250)),
    ("glm", "<|begin_of_box|>[[200, 300, 300, 348]]<|end_of_box|>", XY, (250, 324)),
    ("seeclick", "(0.49,0.40)", FrameRule(units="norm1"), (0.49, 0.40)),
    ("seeclick", "The element is at [0.12, 0.9].", FrameRule(units="norm1"), (0.12, 0.9)),
    ("showui", "[[0.25, 0.5]]", FrameRule(units="norm1"), (0.25, 0.5)),
    ("showui", "[0.2, 0.4, 0.4, 0.6]", FrameRule(units="norm1"), (0.3, 0.5)),
    ("pyautogui", "Action: pyautogui.click(x=0.49, y=0.40)", FrameRule(units="norm1"), (0.49, 0.40)),
    ("openai_cua", '{"type": "click", "button": "left", "x": 640, "y": 360}', XY, (640, 360)),
    ("openai_cua", '{"type": "screenshot"} then {"y": 36, "type": "double_click", "x": 64}', XY, (64, 36)),
    ("holo", '```json\n{"x": 412, "y": 300}\n```', XY, (412, 300)),
    ("holo", '{"thought": "the Save icon", "y": 30, "x": 41}', YX, (41, 30)),  # named keys
    ("osatlas", "<|box_start|>(450,200),(550,300)<|box_end|>", XY, (500, 250)),
    ("osatlas", "<|box_start|>(500,250)<|box_end|>", XY, (500, 250)),
]


@pytest.mark.parametrize(("style", "text", "rule", "want"), CASES)
def test_each_family_is_read_from_its_own_format(style, text, rule, want):
    p = parse_native(Reply(text=text), style, rule)
    assert p.status == "ok" and (p.values["x"], p.values["y"]) == pytest.approx(want), (p, text)
    assert p.detail.startswith(f"native:{style}")


def test_the_first_of_several_answers_is_used_and_said():
    p = parse_native(Reply(text='[{"point_2d": [1, 2]}, {"point_2d": [3, 4]}]'), "qwen3vl", XY)
    assert (p.values["x"], p.values["y"]) == (1, 2) and "multiple_answers_first_used" in p.detail


@pytest.mark.parametrize(
    ("style", "text", "detail"),
    [
        ("qwen25vl", "", "empty_reply"),
        ("qwen25vl", "The Save button is at the top left.", "no_native_answer:qwen25vl"),
        ("glm", "[500, 250]", "no_native_answer:glm"),  # not inside the box tokens
        ("gemini_point", '[{"point": [1, 2, 3]}]', "no_native_answer:gemini_point"),
        ("claude", "pyautogui.click(x=1e300000, y=5)", "too_large:x"),  # never read as x=1
        ("qwen3vl", '{"point_2d": [12abc, 5]}', "no_native_answer:qwen3vl"),
        ("llava", "(1, 2)", "unknown_style:llava"),
        ("openai_cua", '{"type": "scroll", "x": 5, "y": 6}', "no_native_answer:openai_cua"),  # not a click
        ("holo", '{"x": 5}', "no_native_answer:holo"),
        ("seeclick", "The element is not visible here.", "no_native_answer:seeclick"),
    ],
)
def test_what_cannot_be_read_is_a_parse_error(style, text, detail):
    p = parse_native(Reply(text=text), style, XY)
    assert p.status == "parse_error" and p.values is None and p.detail == detail, p


def test_the_tool_call_style_reads_the_harness_tool():
    p = point_parser("tool_call", XY)(Reply(text="click_at(x=12, y=34)"))
    assert p.values == {"x": 12.0, "y": 34.0}


@pytest.mark.parametrize("style", NATIVE_STYLES)
def test_every_prompt_names_the_task_the_frame_and_the_format(style):
    rule = FrameRule(units="pixel") if style in ("qwen25vl", "uitars15", "claude") else XY
    text = native_prompt(style, instruction="open the Save dialog", seen=Size(1288, 728), rule=rule)
    assert "open the Save dialog" in text
    assert ("1288x728" in text) if rule.units == "pixel" else ("0-1000" in text)
    again = native_prompt(
        style, instruction="x", seen=Size(1288, 728), rule=rule, previous=Point(200.0, 600.0)
    )  # off-centre: 200 / 1287 * 1000 = 155, 600 / 727 * 1000 = 825 (every frame: test_native_retry.py)
    assert "last answer" in again and ("(200, 600)" if rule.units == "pixel" else "(155, 825)") in again
