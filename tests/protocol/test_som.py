"""The SoM element list in each frame, the prompt, and parsing ``select_element`` replies."""

from __future__ import annotations

import json
import re

import pytest

from dvoc_bench.core.geometry import Box, Frame, Size
from dvoc_bench.detect.types import Detection
from dvoc_bench.draw.som_render import PALETTE, Mark, marks_from_detections
from dvoc_bench.models.base import Reply, ToolCall
from dvoc_bench.protocol.som import (
    ELEMENTS_PREFIX,
    element_list,
    grounding,
    parse_select,
    som_fallback_prompt,
    som_prompt,
    som_tools,
    to_frame_value,
)

SIZE = Size(800, 600)
MARKS = [
    Mark(1, Box(359.5, 274.5, 440.5, 325.5), 0.9, PALETTE[0]),
    Mark(2, Box(0.0, 580.0, 799.0, 599.0), 0.8, PALETTE[1]),
]


def test_frame_values_by_hand():
    assert to_frame_value(400.0, 800, Frame.PIXEL) == 400.0
    assert to_frame_value(0.25, 800, Frame.PIXEL) == 0.3  # half up on the decimal value (round() gives 0.2)
    assert to_frame_value(-3.0, 800, Frame.PIXEL) == 0.0 and to_frame_value(800.0, 800, Frame.PIXEL) == 799.0
    assert to_frame_value(799.0, 800, Frame.NORM1000) == 1000.0
    assert to_frame_value(800.0, 800, Frame.NORM1000) == 1000.0  # clamped to the last pixel first
    assert to_frame_value(400.0, 800, Frame.NORM1000) == 500.6  # 400 / 799 * 1000 = 500.626
    assert to_frame_value(399.5, 800, Frame.NORM1) == 0.5
    assert to_frame_value(100.0, 800, Frame.NORM1) == 0.125  # 100 / 799 = 0.12516 -> three decimals


def test_element_list_in_each_frame():
    px = element_list(MARKS, Frame.PIXEL, SIZE)
    assert px == {
        "elements": [
            {"id": 1, "center": [400.0, 300.0], "box": [359.5, 274.5, 440.5, 325.5]},
            {"id": 2, "center": [399.5, 589.5], "box": [0.0, 580.0, 799.0, 599.0]},
        ]
    }
    norm = element_list(MARKS, Frame.NORM1000, SIZE)["elements"]
    # 400 / 799 * 1000 = 500.63, 300 / 599 * 1000 = 500.83, 359.5 / 799 * 1000 = 449.94, 274.5 / 599 = 458.26
    assert norm[0] == {"id": 1, "center": [500.6, 500.8], "box": [449.9, 458.3, 551.3, 543.4]}
    assert norm[1]["box"] == [0.0, 968.3, 1000.0, 1000.0]
    n1 = element_list(MARKS, Frame.NORM1, SIZE)["elements"][0]
    assert n1["center"] == [0.501, 0.501]


def test_spec_coordinates_on_a_stated_size_1920_wide():
    """Issue #18: ``pixel / (size - 1) x 1000`` with the detector's numbers unchanged: a detection whose
    centre is at pixel 960 of a 1920-wide screenshot is listed at 500.3 (it was 500.0: a -0.5 px shift)."""
    size = Size(1920, 1080)
    (m,) = marks_from_detections([Detection(Box(900.0, 500.0, 1020.0, 580.0), 0.9)], size)
    assert m.centre == (960.0, 540.0)
    g = grounding([m], Frame.NORM1000, size)
    assert g["error"] is None
    assert g["elements"] == [{"id": 1, "center": [500.3, 500.5], "box": [469.0, 463.4, 531.5, 537.5]}]
    # the right edge: a box touching it ends at pixel 1919 = 1000.0, and 960 px stays 960.0 in pixels
    (edge,) = marks_from_detections([Detection(Box(1800.0, 0.0, 1920.0, 40.0), 0.9)], size)
    assert grounding([edge], Frame.NORM1000, size)["elements"][0]["box"][2] == 1000.0
    assert grounding([m], Frame.PIXEL, size)["elements"][0]["center"] == [960.0, 540.0]
    failed = grounding([m], Frame.NORM1000, size, error="the detector failed")
    assert failed == {"error": "the detector failed", "elements": []}


def test_fallback_prompt_states_the_error_with_an_empty_list_and_asks_click_at():
    text = som_fallback_prompt(instruction="Click OK", size=SIZE, frame=Frame.NORM1000, error="no boxes")
    line = next(ln for ln in text.splitlines() if ln.startswith(ELEMENTS_PREFIX))
    assert json.loads(line[len(ELEMENTS_PREFIX) :]) == {"grounding": {"error": "no boxes", "elements": []}}
    assert "Instruction: Click OK" in text and "click_at" in text and "0-1000" in text


def test_prompt_carries_instruction_size_units_and_the_list():
    text = som_prompt(instruction="Click the CLICK ME button", size=SIZE, frame=Frame.NORM1000, marks=MARKS)
    assert "Instruction: Click the CLICK ME button" in text
    assert "800×600 pixels" in text
    assert "Element list units: 0-1000." in text and "/ 799 x 1000" in text
    line = next(ln for ln in text.splitlines() if ln.startswith(ELEMENTS_PREFIX))
    assert json.loads(line[len(ELEMENTS_PREFIX) :]) == {
        "grounding": {"error": None, **element_list(MARKS, Frame.NORM1000, SIZE)}
    }
    assert "Marked elements" not in text and "touch_gesture" not in text  # our wording, not the seed's
    before = text.splitlines()[text.splitlines().index(line) - 1]
    assert "grounding.elements" in before and "grounding.error" in before  # a sentence introduces the list
    assert "select_element" in text
    px = som_prompt(instruction="x", size=SIZE, frame=Frame.PIXEL, marks=MARKS)
    assert "Element list units: pixels." in px and "799 at the right edge" in px
    tools = som_tools()
    assert tools[0]["function"]["name"] == "select_element"
    tools[0]["function"]["name"] = "changed"
    assert som_tools()[0]["function"]["name"] == "select_element"  # a fresh copy each time


def _call(args, name="select_element", text=None):
    return Reply(text=text, tool_calls=[ToolCall(name, args)])


@pytest.mark.parametrize(
    ("reply", "status", "ident", "detail"),
    [
        (_call({"id": 2, "confidence": 0.9}), "ok", 2, None),
        (_call('{"id": 2, "confidence": 0.9}'), "ok", 2, None),
        (_call('"{\\"id\\": 2}"'), "ok", 2, "double_encoded_json;confidence_missing"),
        (_call({"id": "#3", "confidence": 1}), "ok", 3, "numbers_as_strings"),
        (_call({"id": "[3]"}), "ok", 3, "numbers_as_strings;confidence_missing"),
        (_call({"ID": 3.0, "confidence": "90%"}), "ok", 3, "confidence_percent"),
        (_call({"element_id": 1, "confidence": 0.5}, name="functions.select_element"), "ok", 1, None),
        (_call({"id": 1, "confidence": 0.5}, name="click_at"), "ok", 1, "wrong_tool:click_at"),
        (_call({"arguments": {"id": 2, "confidence": 0.5}}), "ok", 2, "nested_arguments"),
        (_call({"id": 2.5}), "parse_error", None, "not_an_integer:id"),
        (_call({"id": "two"}), "parse_error", None, "not_a_number:id"),
        (_call({"id": True}), "parse_error", None, "not_a_number:id"),
        (_call({"confidence": 0.5}), "parse_error", None, "missing_field:id"),
        (_call({"id": 7, "confidence": 0.5}), "parse_error", None, "unknown_id:7"),
        (Reply(text='I pick {"id": 1, "confidence": 0.8}'), "text_fallback", 1, "json_in_text"),
        (Reply(text="select_element(id=2, confidence=0.7)"), "text_fallback", 2, "function_call_in_text"),
        (Reply(text="select_element(2)"), "text_fallback", 2, "function_call_in_text;confidence_missing"),
        (Reply(text="The answer is id: 3"), "text_fallback", 3, "numbers_in_text;confidence_missing"),
        (Reply(text="id: 3, or maybe id: 2"), "parse_error", None, "ambiguous_numbers_in_text"),
        (Reply(text="select_element(id=1) no wait select_element(id=2)"), "parse_error", None, None),
        (Reply(text="The blue button, number three."), "parse_error", None, "no_tool_call"),
        (Reply(text=None), "parse_error", None, "empty_reply"),
    ],
)
def test_parse_select(reply, status, ident, detail):
    p = parse_select(reply, valid_ids={1, 2, 3})
    assert p.status == status
    assert (int(p.values["id"]) if p.values else None) == ident
    if detail is not None:
        assert p.detail == detail
    if status == "ok" and p.confidence is not None:
        assert 0 <= p.confidence <= 1


def test_parse_select_without_valid_ids_and_never_raises():
    assert parse_select(_call({"id": 42}), None).values == {"id": 42.0}
    assert parse_select(object()).status == "parse_error"  # type: ignore[arg-type]
    first = parse_select(
        Reply(text=None, tool_calls=[ToolCall("select_element", "{}"), ToolCall("x", {"id": 1})])
    )
    assert first.status == "ok" and re.match(
        r"multiple_tool_calls_later_used;wrong_tool:x", first.detail or ""
    )
