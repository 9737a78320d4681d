"""Prompts, tool schemas and the reply parser of ``dvoc_bench.protocol``.

The malformed-reply corpus below is hand-written: every case is a kind of damage a real provider or model
produces (or could), with the status we expect. Real replies are checked in ``test_parse_upstream.py``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dvoc_bench.core.geometry import Frame, Offset, Point, Size
from dvoc_bench.models.base import Reply, ToolCall
from dvoc_bench.protocol import (
    CLICK_AT,
    REPORT_OFFSET,
    SELECT_ELEMENT,
    HistoryEntry,
    Parsed,
    crosshair_line,
    frame_statement,
    get_protocol,
    parse_crosshair_line,
    parse_reply,
    position_label,
    tools_for,
)
from dvoc_bench.protocol.prompts import dvoc_prompt, oneshot_prompt

SYN = Size(800, 600)
WEB = Size(1280, 720)
INSTRUCTION = "Click the green Submit button"

# --------------------------------------------------------------------------------------------- prompts


def _dvoc(**kw: Any) -> str:
    args: dict[str, Any] = dict(
        instruction=INSTRUCTION,
        size=SYN,
        frame=Frame.PIXEL,
        overlay="full",
        predict="relative",
        draft=Point(400, 300),
        iteration=0,
        history=[],
    )
    args.update(kw)
    return dvoc_prompt(**args)


def _oneshot(**kw: Any) -> str:
    args: dict[str, Any] = dict(
        instruction=INSTRUCTION, size=SYN, frame=Frame.PIXEL, attempt=0, previous=None
    )
    args.update(kw)
    return oneshot_prompt(**args)


# (size, draft in pixels, frame, expected crosshair line): numbers worked out by hand from
# x * scale / (W - 1), rounded half away from zero (3 decimals for norm1).
CROSSHAIR_CASES = [
    (SYN, Point(400, 300), Frame.PIXEL, "Crosshair position: (400, 300) px"),
    (SYN, Point(400, 300), Frame.NORM1000, "Crosshair position: (501, 501) in 0-1000 units"),
    (SYN, Point(400, 300), Frame.NORM1, "Crosshair position: (0.501, 0.501) in 0-1 units"),
    (WEB, Point(194, 92), Frame.PIXEL, "Crosshair position: (194, 92) px"),
    (WEB, Point(194, 92), Frame.NORM1000, "Crosshair position: (152, 128) in 0-1000 units"),
    (WEB, Point(194, 92), Frame.NORM1, "Crosshair position: (0.152, 0.128) in 0-1 units"),
    (SYN, Point(10.5, 2.5), Frame.PIXEL, "Crosshair position: (11, 3) px"),
    (SYN, Point(0, 0), Frame.NORM1000, "Crosshair position: (0, 0) in 0-1000 units"),
    (SYN, Point(799, 599), Frame.NORM1000, "Crosshair position: (1000, 1000) in 0-1000 units"),
    (SYN, Point(799, 599), Frame.NORM1, "Crosshair position: (1.000, 1.000) in 0-1 units"),
]


@pytest.mark.parametrize(("size", "draft", "frame", "line"), CROSSHAIR_CASES)
def test_crosshair_line_numbers(size: Size, draft: Point, frame: Frame, line: str) -> None:
    assert crosshair_line(draft, frame, size) == line
    for overlay in ("full", "crosshair", "none"):
        text = _dvoc(size=size, frame=frame, draft=draft, overlay=overlay)
        assert text.splitlines().count(line) == 1
        assert text.count("Crosshair position:") == 1


@pytest.mark.parametrize("frame", list(Frame))
@pytest.mark.parametrize("overlay", ["full", "crosshair", "none"])
@pytest.mark.parametrize("predict", ["relative", "absolute"])
def test_dvoc_prompt_states_task_size_frame(frame: Frame, overlay: str, predict: str) -> None:
    text = _dvoc(frame=frame, overlay=overlay, predict=predict, size=WEB, draft=Point(194, 92))
    assert INSTRUCTION in text
    assert "1280×720 pixels" in text
    assert frame_statement(frame, WEB) in text
    assert crosshair_line(Point(194, 92), frame, WEB) in text
    tool, other = ("report_offset", "click_at") if predict == "relative" else ("click_at", "report_offset")
    assert tool in text and other not in text


def test_frame_statements_name_the_convention() -> None:
    assert "0 at the left edge to 799" in frame_statement(Frame.PIXEL, SYN)
    assert "to 599 at the bottom edge" in frame_statement(Frame.PIXEL, SYN)
    n1000 = frame_statement(Frame.NORM1000, SYN)
    assert "(0, 0) is the top-left corner and (1000, 1000) the bottom-right corner" in n1000
    assert "aspect ratio" in n1000
    assert "(1, 1) the bottom-right corner" in frame_statement(Frame.NORM1, SYN)
    assert "Offsets (dx, dy) use the same units." in _dvoc(frame=Frame.NORM1000)


def test_overlay_descriptions() -> None:
    full = _dvoc(overlay="full", circle_radius=45)
    assert "red crosshair" in full and "blue circle of radius 45 pixels" in full
    assert "top-left" in full and "bottom-right" in full
    assert "about 38 across and 50 down in 0-1000 units" in _dvoc(overlay="full", frame=Frame.NORM1000)
    cross = _dvoc(overlay="crosshair")
    assert "red crosshair" in cross and "circle" not in cross and "bottom-right" in cross
    none = _dvoc(overlay="none")
    assert "Nothing is drawn" in none and "red crosshair" not in none and "circle" not in none


def test_history_shows_where_the_crosshair_went() -> None:
    # step 0: at (194, 92) the model said (+260, +260) px; damping 0.5 moved the crosshair to (324, 222)
    # step 1: an empty reply, the crosshair stayed
    history = [
        HistoryEntry(Point(194, 92), Offset(260, 260), 0.8, Point(324, 222)),
        HistoryEntry(Point(324, 222), None, None, Point(324, 222)),
    ]
    text = _dvoc(iteration=2, history=history, draft=Point(324, 222))
    lines = [ln for ln in text.splitlines() if ln.startswith("- step")]
    assert len(lines) == 2
    assert lines[0].startswith("- step 0: crosshair at (194, 92)")
    assert "dx=260, dy=260, confidence 0.80" in lines[0]
    assert lines[0].endswith("went to (324, 222).")
    assert "(454, 352)" not in text  # draft + reported, the undamped point, is never shown
    assert lines[1].startswith("- step 1: crosshair at (324, 222)")
    assert "no usable answer" in lines[1]
    assert "Earlier steps" not in _dvoc(iteration=0, history=[])


def test_history_in_the_model_frame() -> None:
    # 800x600, norm1000: 1 unit = 0.799 px across, 0.599 px down
    history = [HistoryEntry(Point(400, 300), Offset(79.9, -59.9), None, Point(439.95, 270.05))]
    text = _dvoc(frame=Frame.NORM1000, iteration=1, history=history)
    line = next(ln for ln in text.splitlines() if ln.startswith("- step 0"))
    assert line == (
        "- step 0: crosshair at (501, 501); you reported dx=100, dy=-100, confidence not given; "
        "the crosshair then went to (551, 451)."
    )
    absolute = _dvoc(frame=Frame.NORM1000, iteration=1, history=history, predict="absolute")
    assert "you answered x=601, y=401 (dx=100, dy=-100 from the crosshair)" in absolute


def test_history_numbering_follows_iteration() -> None:
    h = HistoryEntry(Point(1, 1), Offset(1, 1), 1.0, Point(2, 2))
    text = _dvoc(iteration=7, history=[h, h])
    assert "- step 5:" in text and "- step 6:" in text and "This is step 7" in text
    with pytest.raises(ValueError):
        _dvoc(iteration=1, history=[h, h])


def test_oneshot_prompts() -> None:
    first = _oneshot(frame=Frame.NORM1000)
    assert INSTRUCTION in first and "800×600 pixels" in first and "click_at" in first
    assert frame_statement(Frame.NORM1000, SYN) in first
    assert "crosshair" not in first.lower() and "circle" not in first and "previous" not in first
    retry = _oneshot(frame=Frame.NORM1000, attempt=1, previous=Point(400, 300))
    assert INSTRUCTION in retry and frame_statement(Frame.NORM1000, SYN) in retry
    assert "(501, 501) in 0-1000 units" in retry and "missed" in retry and "attempt 2" in retry
    assert "(400, 300) px" in _oneshot(attempt=3, previous=Point(400, 300))
    assert "no usable click_at" in _oneshot(attempt=1, previous=None)
    assert "crosshair" not in retry.lower()
    with pytest.raises(ValueError):
        _oneshot(attempt=-1)


def test_unknown_protocol_raises() -> None:
    for protocol in ("x", "Paper", ""):
        msg = f"protocol '{protocol}' is not available; allowed: v1, paper"
        with pytest.raises(ValueError, match=re.escape(msg)):
            get_protocol(protocol)


def test_bad_knobs_raise() -> None:
    with pytest.raises(ValueError):
        _dvoc(overlay="crosshair-only")
    with pytest.raises(ValueError):
        _dvoc(predict="both")
    with pytest.raises(ValueError):
        _dvoc(frame="norm100")


def test_position_label() -> None:
    p = Point(454, 352)
    assert position_label(p, Frame.PIXEL, SYN) == "(454, 352) px"
    assert position_label(p, Frame.NORM1000, SYN) == "(568, 588) /1000"
    assert position_label(p, Frame.NORM1, SYN) == "(0.568, 0.588) /1"
    assert position_label(Point(0.0001, 0), Frame.NORM1, SYN) == "(0.000, 0.000) /1"


@pytest.mark.parametrize(("size", "draft", "frame", "line"), CROSSHAIR_CASES)
def test_crosshair_line_reads_back(size: Size, draft: Point, frame: Frame, line: str) -> None:
    parsed = parse_crosshair_line(_dvoc(size=size, draft=draft, frame=frame))
    assert parsed is not None
    point, read_frame = parsed
    assert read_frame == frame
    assert crosshair_line(draft, frame, size).endswith(line.split(": ", 1)[1])
    assert abs(point.x - float(line.split("(")[1].split(",")[0])) < 1e-9


def test_prompts_use_our_own_words() -> None:
    """A few distinctive fragments of the authors' prompts must never appear in ours."""
    texts = [
        _dvoc(overlay=o, predict=p, iteration=1, history=[HistoryEntry(Point(1, 1), None, None, Point(1, 1))])
        for o in ("full", "crosshair", "none")
        for p in ("relative", "absolute")
    ] + [_oneshot(attempt=a, previous=Point(5, 5)) for a in (0, 1)]
    banned = [
        "Draft-Verify-Action",
        "verifier",
        "spatial reference",
        "keeps refining",
        "Previous iterations:",
        "You tried to click",
        "within a few pixels",
        "Task:",
        "UI clicking agent",
        "Look at the screenshot again",
    ]
    for text in texts:
        for fragment in banned:
            assert fragment not in text


# ----------------------------------------------------------------------------------------------- tools


def test_tool_schemas() -> None:
    for tool, name, fields in (
        (REPORT_OFFSET, "report_offset", ["dx", "dy", "confidence"]),
        (CLICK_AT, "click_at", ["x", "y", "confidence"]),
        (SELECT_ELEMENT, "select_element", ["id", "confidence"]),
    ):
        fn = tool["function"]
        assert tool["type"] == "function" and fn["name"] == name and fn["description"]
        params = fn["parameters"]
        assert params["type"] == "object" and params["required"] == fields
        assert list(params["properties"]) == fields
        assert all(p["description"] for p in params["properties"].values())
        json.dumps(tool)
    assert SELECT_ELEMENT["function"]["parameters"]["properties"]["id"]["type"] == "integer"
    assert REPORT_OFFSET["function"]["parameters"]["properties"]["dx"]["type"] == "number"


def test_tools_for() -> None:
    assert tools_for("offset") == [REPORT_OFFSET]
    assert tools_for("point") == [CLICK_AT]
    copy = tools_for("offset")
    copy[0]["function"]["name"] = "mutated"
    assert REPORT_OFFSET["function"]["name"] == "report_offset"
    with pytest.raises(ValueError):
        tools_for("element")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- parser


def _call(args: Any, name: str | None = "report_offset") -> ToolCall:
    return ToolCall(name, args)


def _r(*calls: ToolCall, text: str | None = None) -> Reply:
    return Reply(text=text, tool_calls=list(calls))


GOOD = '{"dx": 12, "dy": -3, "confidence": 0.9}'


def _case(
    case_id: str, reply: Any, kind: Any, status: str, tag: str | None = None, values: dict | None = None
) -> Any:
    """One corpus entry: the reply, the kind asked for, the expected status, the expected first tag of
    ``detail`` (``None`` = no detail at all; a bare category matches ``category:<field>``) and, when
    given, the expected values."""
    return pytest.param(reply, kind, status, tag, values, id=case_id)


OK, TEXT, ERR = "ok", "text_fallback", "parse_error"
D12 = {"dx": 12, "dy": -3}

# fmt: off
MALFORMED = [
    # usable calls, however they are written
    _case("clean", _r(_call(GOOD)), "offset", OK, values=D12),
    _case("dict_args", _r(_call({"dx": 1.5, "dy": 2, "confidence": 1})), "offset", OK),
    _case("click_clean", _r(_call('{"x": 5, "y": 6, "confidence": 0.5}', "click_at")), "point", OK),
    _case("str_numbers", _r(_call({"dx": "12", "dy": "-3", "confidence": "0.9"})), "offset", OK,
          "numbers_as_strings", D12),
    _case("px_suffix", _r(_call({"dx": "12.5px", "dy": " -3 pixels", "confidence": 0.9})), "offset", OK,
          "numbers_as_strings", {"dx": 12.5, "dy": -3}),
    _case("unicode_minus", _r(_call({"dx": "\u22127", "dy": "3"})), "offset", OK, "numbers_as_strings",
          {"dx": -7, "dy": 3}),
    _case("extra_keys", _r(_call({"x": 1, "y": 2, "y_min": 0, "note": "hi", "confidence": 1}, "click_at")),
          "point", OK, values={"x": 1, "y": 2}),
    _case("upper_case_keys", _r(_call({"DX": 4, "Dy": 5, "Confidence": 0.5})), "offset", OK,
          values={"dx": 4, "dy": 5}),
    _case("missing_confidence", _r(_call({"dx": 1, "dy": 2})), "offset", OK, "confidence_missing"),
    _case("null_confidence", _r(_call({"dx": 1, "dy": 2, "confidence": None})), "offset", OK,
          "confidence_missing"),
    _case("confidence_word", _r(_call({"dx": 1, "dy": 2, "confidence": "high"})), "offset", OK,
          "confidence_invalid"),
    _case("confidence_nan", _r(_call('{"dx": 1, "dy": 2, "confidence": NaN}')), "offset", OK,
          "confidence_invalid"),
    _case("confidence_90", _r(_call({"dx": 1, "dy": 2, "confidence": 90})), "offset", OK,
          "confidence_clamped"),
    _case("confidence_90_percent", _r(_call({"dx": 1, "dy": 2, "confidence": "90%"})), "offset", OK,
          "confidence_percent"),
    _case("confidence_negative", _r(_call({"dx": 1, "dy": 2, "confidence": -0.2})), "offset", OK,
          "confidence_clamped"),
    _case("confidence_bool", _r(_call({"dx": 1, "dy": 2, "confidence": True})), "offset", OK,
          "confidence_invalid"),
    _case("wrong_tool_right_fields", _r(_call(GOOD, "click_at")), "offset", OK, "wrong_tool:click_at"),
    _case("prefixed_tool_name", _r(_call(GOOD, "functions.report_offset")), "offset", OK),
    _case("no_tool_name", _r(_call(GOOD, None)), "offset", OK, "missing_tool_name"),
    _case("several_calls_first_valid", _r(_call(GOOD), _call('{"dx": 99, "dy": 99}')), "offset", OK,
          "multiple_tool_calls_first_used", D12),
    _case("several_calls_second_valid", _r(_call("{}"), _call(GOOD)), "offset", OK,
          "multiple_tool_calls_later_used", D12),
    _case("nested_arguments", _r(_call({"name": "report_offset", "arguments": {"dx": 3, "dy": 4}})), "offset",
          OK, "nested_arguments", {"dx": 3, "dy": 4}),
    _case("double_encoded", _r(_call(json.dumps(GOOD))), "offset", OK, "double_encoded_json", D12),
    _case("fenced_arguments", _r(_call("```json\n" + GOOD + "\n```")), "offset", OK, "json_in_arguments"),
    _case("python_literal", _r(_call("{'dx': 3, 'dy': 4, 'confidence': 0.5}")), "offset", OK,
          "python_literal_arguments", {"dx": 3, "dy": 4}),
    _case("openai_dict_call", _r({"function": {"name": "click_at", "arguments": '{"x": 7, "y": 8}'}}),
          "point", OK, "confidence_missing", {"x": 7, "y": 8}),
    _case("bytes_arguments", _r(_call(GOOD.encode())), "offset", OK, values=D12),
    # values that make a call unusable
    _case("nan_string", _r(_call({"dx": "NaN", "dy": 1})), "offset", ERR, "non_finite:dx"),
    _case("inf_json", _r(_call('{"dx": Infinity, "dy": 1}')), "offset", ERR, "non_finite"),
    _case("neg_inf_string", _r(_call({"dx": 1, "dy": "-inf"})), "offset", ERR, "non_finite:dy"),
    _case("overflowing_float", _r(_call('{"dx": 1e999, "dy": 1}')), "offset", ERR, "non_finite"),
    _case("huge_number", _r(_call({"dx": 1e7, "dy": 1})), "offset", ERR, "too_large:dx"),
    _case("huge_int", _r(_call({"x": 10**400, "y": 1}, "click_at")), "point", ERR, "too_large:x"),
    _case("bool_field", _r(_call({"dx": True, "dy": 1})), "offset", ERR, "not_a_number:dx"),
    _case("list_field", _r(_call({"dx": [1, 2], "dy": 1})), "offset", ERR, "not_a_number"),
    _case("dict_field", _r(_call({"dx": {"value": 1}, "dy": 1})), "offset", ERR, "not_a_number"),
    _case("word_field", _r(_call({"dx": "left", "dy": 1})), "offset", ERR, "not_a_number"),
    _case("percent_field", _r(_call({"dx": "12%", "dy": 1})), "offset", ERR, "not_a_number"),
    _case("null_field", _r(_call({"dx": None, "dy": 1})), "offset", ERR, "missing_field:dx"),
    _case("missing_dy", _r(_call({"dx": 1, "confidence": 1})), "offset", ERR, "missing_field:dy"),
    _case("point_fields_for_offset", _r(_call('{"x": 1, "y": 2}', "click_at")), "offset", ERR,
          "missing_field"),
    _case("empty_object", _r(_call("{}")), "offset", ERR, "missing_field:dx"),
    _case("broken_json", _r(_call('{"dx": 12, "dy": -3, "confidence": 0.9')), "offset", ERR, "bad_json"),
    _case("garbage_string", _r(_call("move right a bit")), "offset", ERR, "bad_json"),
    _case("list_arguments", _r(_call([12, -3, 0.9])), "offset", ERR, "arguments_not_object"),
    _case("int_arguments", _r(_call(12)), "offset", ERR, "arguments_not_object"),
    _case("json_list_arguments", _r(_call("[12, -3]")), "offset", ERR, "arguments_not_object"),
    _case("json_null_arguments", _r(_call("null")), "offset", ERR, "arguments_not_object"),
    _case("none_arguments", _r(_call(None)), "offset", ERR, "no_arguments"),
    _case("blank_arguments", _r(_call("   ")), "offset", ERR, "empty_arguments"),
    _case("garbage_call_object", Reply(text=None, tool_calls=[42]), "offset", ERR, "arguments_not_object"),
    # no usable call: the text
    _case("json_in_text", _r(text='Here you go: {"dx": 12, "dy": -3, "confidence": 0.9}'), "offset", TEXT,
          "json_in_text", D12),
    _case("fenced_json_in_text", _r(text='```json\n{"x": 100, "y": 200, "confidence": 0.7}\n```'), "point",
          TEXT, "json_in_text", {"x": 100, "y": 200}),
    _case("tool_json_in_text",
          _r(text='<tool_call>{"name": "report_offset", "arguments": {"dx": 5, "dy": 6}}</tool_call>'),
          "offset", TEXT, "json_in_text", {"dx": 5, "dy": 6}),
    _case("call_in_text", _r(text="report_offset(dx=12, dy=-3, confidence=0.9)"), "offset", TEXT,
          "function_call_in_text", D12),
    _case("positional_call_in_text", _r(text="I will call click_at(412, 300, 0.8)."), "point", TEXT,
          "function_call_in_text", {"x": 412, "y": 300}),
    _case("signature_in_text", _r(text="I should call click_at(x, y, confidence) now."), "point", ERR,
          "no_tool_call"),
    _case("named_numbers", _r(text="The button is at x: 494, y: 433."), "point", TEXT, "numbers_in_text",
          {"x": 494, "y": 433}),
    _case("named_offsets", _r(text="dx=70 dy=-30 conf=0.80"), "offset", TEXT, "numbers_in_text",
          {"dx": 70, "dy": -30}),
    _case("arithmetic_in_text", _r(text="dx = 308 - 170 = 138 and dy = 151 - 130 = 21"), "offset", ERR,
          "ambiguous_numbers_in_text"),
    _case("two_different_values", _r(text="first dx=5, dy=5; then dx=9, dy=9"), "offset", ERR,
          "ambiguous_numbers_in_text"),
    _case("two_different_json", _r(text='{"dx": 1, "dy": 1} or maybe {"dx": 2, "dy": 2}'), "offset", ERR,
          "ambiguous_json_in_text"),
    _case("only_one_name", _r(text="x: 494 and the other one is 433"), "point", ERR,
          "incomplete_numbers_in_text"),
    _case("prose_with_numbers", _r(text="the button is 3 of 5"), "offset", ERR, "no_tool_call"),
    _case("tuple_in_prose", _r(text="The offset is (12, -3)."), "offset", ERR, "no_tool_call"),
    _case("nan_in_text_json", _r(text='{"dx": NaN, "dy": 1}'), "offset", ERR, "non_finite:dx"),
    _case("bad_call_good_text", _r(_call("{}"), text='{"dx": 1, "dy": 2, "confidence": 0.5}'), "offset", TEXT,
          "json_in_text", {"dx": 1, "dy": 2}),
    _case("bad_call_no_text", _r(_call('{"dx": "NaN", "dy": 2}'), text="sure"), "offset", ERR, "non_finite"),
    _case("content_parts_text", Reply(text=[{"type": "text", "text": '{"dx": 1, "dy": 2}'}]), "offset", TEXT,
          "json_in_text"),
    # nothing at all, or not even a Reply
    _case("empty_content", _r(text=""), "offset", ERR, "empty_reply"),
    _case("whitespace_content", _r(text="  \n "), "point", ERR, "empty_reply"),
    _case("none_everywhere", Reply(text=None, tool_calls=None), "offset", ERR, "empty_reply"),
    _case("reply_is_none", None, "offset", ERR, "empty_reply"),
    _case("reply_is_string", "dx=1, dy=2", "offset", ERR, "empty_reply"),
    _case("tool_calls_not_a_list", Reply(text=None, tool_calls=5), "offset", ERR, "arguments_not_object"),
    _case("unknown_kind", _r(_call(GOOD)), "element", ERR, "unknown_kind"),
    _case("unhashable_kind", _r(_call(GOOD)), ["offset"], ERR, "unknown_kind"),
]
# fmt: on


def _first_tag(detail: str | None) -> str | None:
    return None if detail is None else detail.split(";")[0]


def _check_invariants(p: Parsed) -> None:
    assert isinstance(p, Parsed)
    assert p.status in {"ok", "text_fallback", "parse_error"}
    assert (p.values is None) == (p.status == "parse_error")
    if p.status == "parse_error":
        assert p.detail and ";" not in p.detail and p.confidence is None
    else:
        assert p.values is not None
        assert all(isinstance(v, float) and math.isfinite(v) and abs(v) <= 1e6 for v in p.values.values())
    assert p.confidence is None or 0.0 <= p.confidence <= 1.0


@pytest.mark.parametrize(("reply", "kind", "status", "tag", "values"), MALFORMED)
def test_malformed_corpus(reply: Any, kind: Any, status: str, tag: str | None, values: dict | None) -> None:
    p = parse_reply(reply, kind)
    _check_invariants(p)
    assert p.status == status
    first = _first_tag(p.detail)
    if tag is None:
        assert p.detail is None, p.detail
    else:
        assert first is not None
        assert first == tag or (":" not in tag and first.split(":")[0] == tag), p.detail
    if values is not None:
        assert p.values == values


def test_malformed_corpus_size_and_mix() -> None:
    assert len(MALFORMED) >= 40
    assert len({c.id for c in MALFORMED}) == len(MALFORMED)
    statuses = Counter(c.values[2] for c in MALFORMED)
    assert statuses == {"ok": 27, "text_fallback": 9, "parse_error": 41}


def test_confidence_rules() -> None:
    def conf(value: Any) -> float | None:
        return parse_reply(_r(_call({"dx": 1, "dy": 1, "confidence": value})), "offset").confidence

    assert conf(0.75) == 0.75
    assert conf(90) == 1.0
    assert conf("90%") == pytest.approx(0.9)
    assert conf(-1) == 0.0
    assert conf(None) is None
    assert conf("sure") is None
    assert parse_reply(_r(_call({"dx": 1, "dy": 1})), "offset").status == "ok"


def test_first_valid_call_wins_over_text() -> None:
    p = parse_reply(_r(_call(GOOD), text='{"dx": 100, "dy": 100}'), "offset")
    assert p.status == "ok" and p.values == {"dx": 12.0, "dy": -3.0} and p.confidence == 0.9


_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["NaN", "inf", "12px", "90%", "-3", "1e999", "{", "dx=1"]),
)
_json_like = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["dx", "dy", "x", "y", "confidence", "arguments", "name", "z"]), inner, max_size=4
        )
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    args=st.one_of(_json_like, _json_like.map(lambda v: json.dumps(v, default=str))),
    name=st.one_of(st.none(), st.sampled_from(["report_offset", "click_at", "x", ""])),
    text=st.one_of(st.none(), st.text(max_size=60), _json_like.map(lambda v: json.dumps(v, default=str))),
    kind=st.sampled_from(["offset", "point"]),
)
def test_parse_never_raises(args: Any, name: str | None, text: str | None, kind: str) -> None:
    _check_invariants(parse_reply(_r(ToolCall(name, args), text=text), kind))  # type: ignore[arg-type]
    _check_invariants(parse_reply(_r(text=text), kind))  # type: ignore[arg-type]


def test_text_fallback_after_unusable_call_is_noted() -> None:
    p = parse_reply(_r(_call("{}"), text='{"dx": 1, "dy": 2, "confidence": 0.5}'), "offset")
    assert p.status == "text_fallback" and p.detail == "json_in_text;tool_call_unusable"
    assert p.confidence == 0.5
