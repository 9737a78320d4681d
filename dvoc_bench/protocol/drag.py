"""Two-point (drag) grounding in one call: the request each family is asked in and the reader of its answer.

A drag asks where to press (the thing to drag) and where to release (where to drop it). Each family is asked
in its own action form where it has one, and every reader also accepts the plain JSON form:

- ``claude``: Anthropic's computer-use action ``{"action": "left_click_drag", "start_coordinate": [x1, y1],
  "coordinate": [x2, y2]}`` (pixels of the image seen);
- ``qwen25vl`` / ``qwen3vl``: their ``computer_use`` tool, whose ``left_click_drag`` drags from the cursor to
  ``coordinate``: a ``mouse_move`` to the start, then ``left_click_drag`` to the end, each in a
  ``<tool_call>``; a ``start_coordinate`` in the drag's arguments is read as the start too;
- ``uitars15``: ``drag(start_box='(x1,y1)', end_box='(x2,y2)')`` (also with box tokens, ``[x1,y1,x2,y2]``
  boxes read as their centres, and UI-TARS-1.5's ``start_point='<point>x y</point>'`` / ``end_point=``);
- ``pyautogui``: ``pyautogui.moveTo(x1, y1)`` then ``pyautogui.dragTo(x2, y2, ...)``;
- ``tool_call`` (the harness's own, the simulator's): the ``drag_points`` tool, arguments
  ``{"from": [x1, y1], "to": [x2, y2]}``; every other style is asked for that JSON in text.

The frame is the model config's, as for one point (:mod:`dvoc_bench.protocol.native`): unnamed pairs are
read in ``coord_frame.axes`` order, and the method maps each point through the frame's units and the image
sent exactly as a single point. Reading never raises: a :class:`~dvoc_bench.protocol.parse.Parsed` whose
``values`` are ``{"x", "y", "to_x", "to_y"}`` (start, end) in the frame's units, or ``parse_error`` /
``refusal``.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from typing import Any

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.core.geometry import Frame, Size
from dvoc_bench.models.base import Reply
from dvoc_bench.protocol.native import NATIVE_STYLES, call_text, refusal
from dvoc_bench.protocol.parse import MAX_MAGNITUDE, Parsed

_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?![\w.])"
_MAX_TEXT = 100_000

DRAG_TOOL = "drag_points"
"""The harness's own two-point tool (``tool_call`` style)."""

_PAIR_SCHEMA = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}

DRAG_POINTS: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": DRAG_TOOL,
        "description": "Give where the drag starts (the thing to drag) and where it ends (where to drop it).",
        "parameters": {
            "type": "object",
            "properties": {
                "from": {**_PAIR_SCHEMA, "description": "[x, y] where the mouse button is pressed."},
                "to": {**_PAIR_SCHEMA, "description": "[x, y] where the mouse button is released."},
                "confidence": {"type": "number", "description": "How sure you are, from 0 to 1."},
            },
            "required": ["from", "to", "confidence"],
        },
    },
}
"""``drag_points(from, to, confidence)``: the harness's two-point answer."""

FORM_OF: dict[str, str] = {
    "claude": "anthropic",
    "qwen25vl": "qwen",
    "qwen3vl": "qwen",
    "uitars15": "uitars",
    "pyautogui": "pyautogui",
}
"""Prompt style -> the family's own drag form; every other style (``tool_call`` too) uses ``json``."""


def drag_tools() -> list[dict[str, Any]]:
    """The tool list of a ``tool_call`` drag request (a fresh copy)."""
    return [copy.deepcopy(DRAG_POINTS)]


def _units(rule: FrameRule, seen: Size) -> str:
    if rule.units == "pixel":
        return f"absolute pixel coordinates of this {seen.width}x{seen.height} image (0, 0 at the top left)"
    top = f"{Frame(rule.units).scale:g}"
    edges = f"0 at the left and top edges, {top} at the right and bottom"
    return f"coordinates scaled to 0-{top} on each axis ({edges})"


def _pair_words(rule: FrameRule) -> str:
    return "[y, x] (row first)" if rule.axes == "yx" else "[x, y]"


def drag_prompt(style: str, *, instruction: str, seen: Size, rule: FrameRule) -> str:
    """The text of a one-call drag request in ``style`` (``tool_call``: the ``drag_points`` tool)."""
    units = _units(rule, seen)
    task = f"This task is a drag.\nInstruction: {instruction}"
    form = FORM_OF.get(style, "json")
    if style == "tool_call":
        return (
            f"{task}\nFind where the drag starts (the thing to drag) and where it ends (where to drop it). "
            f"The image is {seen.width}x{seen.height} pixels; give both points in {units}.\n"
            f"Answer by calling {DRAG_TOOL} with from = [x, y] of the start, to = [x, y] of the end, and a "
            "confidence from 0 to 1."
        )
    if form == "anthropic":
        return (
            f"{task}\nReply with the computer action only, as JSON: "
            '{"action": "left_click_drag", "start_coordinate": [x1, y1], "coordinate": [x2, y2]}, the start '
            f"on the thing to drag and the coordinate where to drop it, in {units}."
        )
    if form == "qwen":
        return (
            f"{task}\nUse your computer_use tool: first move the mouse to the thing to drag, then drag it to "
            "where it should be dropped, as two tool calls:\n"
            '<tool_call>{"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": '
            "[x1, y1]}}</tool_call>\n"
            '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click_drag", "coordinate": '
            f"[x2, y2]}}}}</tool_call>\nGive the coordinates in {units}."
        )
    if form == "uitars":
        return (
            f"You operate a computer through its screen. {task}\nReply with the action only, written as "
            f"drag(start_box='(x1,y1)', end_box='(x2,y2)'), using {units}."
        )
    if form == "pyautogui":
        return (
            f"You are a GUI agent controlling this computer with pyautogui. {task}\nReply with two lines "
            "only: pyautogui.moveTo(<x1>, <y1>) on the thing to drag, then pyautogui.dragTo(<x2>, <y2>, "
            f"button='left') where to drop it, using {units}."
        )
    if style not in NATIVE_STYLES:
        raise ValueError(f"prompt_style {style!r} is unknown")
    pair = _pair_words(rule)
    return (
        f"{task}\nReply with JSON only: {{\"from\": {pair}, \"to\": {pair}}}, from = where the drag starts "
        f"(the thing to drag), to = where it ends (where to drop it), in {units}."
    )


Pair = tuple[float, float]
Found = tuple[Pair, Pair, bool]
"""``(start, end, named)``: two pairs as written; ``named`` when read as ``x=``/``y=`` (no axis order)."""

_OBJECT = re.compile(r"\{([^{}]{1,600})\}")
_ACTION = re.compile(r'"action"\s*:\s*"([a-z_]+)"')


def _floats(text: str) -> list[float]:
    return [float(v) for v in re.findall(_NUM, text)]


def _pair_or_centre(nums: list[float]) -> Pair | None:
    if len(nums) == 2:
        return nums[0], nums[1]
    if len(nums) == 4:
        return (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2
    return None


def _array(body: str, key: str) -> Pair | None:
    m = re.search(rf'"{key}"\s*:\s*\[([^\[\]]{{1,120}})\]', body)
    return None if m is None else _pair_or_centre(_floats(m.group(1)))


def _json_form(text: str) -> list[Found]:
    """``{"from": [x, y], "to": [x, y]}`` (the harness's tool's arguments or the plain JSON form)."""
    out: list[Found] = []
    for m in _OBJECT.finditer(text):
        a, b = _array(m.group(1), "from"), _array(m.group(1), "to")
        if a is not None and b is not None:
            out.append((a, b, False))
    return out


def _action_form(text: str) -> list[Found]:
    """Computer-use actions in order: ``left_click_drag`` with ``start_coordinate`` (Anthropic), or after a
    ``mouse_move`` (Qwen's ``computer_use``, whose drag starts at the cursor)."""
    out: list[Found] = []
    cursor: Pair | None = None
    for m in _OBJECT.finditer(text):
        body = m.group(1)
        act = _ACTION.search(body)
        if act is None:
            continue
        end = _array(body, "coordinate")
        if act.group(1) == "mouse_move":
            cursor = end
        elif act.group(1) == "left_click_drag" and end is not None:
            start = _array(body, "start_coordinate") or cursor
            if start is not None:
                out.append((start, end, False))
    return out


_UITARS = re.compile(
    r"drag\(\s*start_(?:box|point)\s*=\s*['\"](.{1,200}?)['\"]\s*,\s*end_(?:box|point)\s*=\s*['\"](.{1,200}?)['\"]",
    re.DOTALL,
)


def _uitars_form(text: str) -> list[Found]:
    """``drag(start_box='…', end_box='…')`` or ``drag(start_point='<point>x y</point>', end_point=…)``."""
    out: list[Found] = []
    for m in _UITARS.finditer(text):
        a, b = _pair_or_centre(_floats(m.group(1))), _pair_or_centre(_floats(m.group(2)))
        if a is not None and b is not None:
            out.append((a, b, False))
    return out


_PYAUTOGUI = re.compile(r"pyautogui\.(moveTo|dragTo)\s*\(([^()]{1,200})\)")


def _pyautogui_args(args: str) -> tuple[Pair, bool] | None:
    x = re.search(rf"\bx\s*=\s*({_NUM})", args)
    y = re.search(rf"\by\s*=\s*({_NUM})", args)
    if x and y:
        return (float(x.group(1)), float(y.group(1))), True
    positional = [a for a in args.split(",") if "=" not in a]
    nums = _floats(",".join(positional[:2]))
    return ((nums[0], nums[1]), False) if len(nums) == 2 else None


def _pyautogui_form(text: str) -> list[Found]:
    """``pyautogui.moveTo(x1, y1)`` then ``pyautogui.dragTo(x2, y2, …)`` (positional or ``x=``/``y=``)."""
    out: list[Found] = []
    cursor: tuple[Pair, bool] | None = None
    for m in _PYAUTOGUI.finditer(text):
        got = _pyautogui_args(m.group(2))
        if got is None:
            continue
        if m.group(1) == "moveTo":
            cursor = got
        elif cursor is not None:
            out.append((cursor[0], got[0], cursor[1] and got[1]))
    return out


READERS: dict[str, Callable[[str], list[Found]]] = {
    "json": _json_form,
    "anthropic": _action_form,
    "qwen": _action_form,
    "uitars": _uitars_form,
    "pyautogui": _pyautogui_form,
}
"""One reader per form."""


def _confidence(text: str) -> float | None:
    m = re.search(rf'"confidence"\s*:\s*({_NUM})', text)
    if m is None:
        return None
    c = float(m.group(1))
    return min(max(c, 0.0), 1.0) if math.isfinite(c) else None


def parse_drag(reply: Reply, style: str, rule: FrameRule) -> Parsed:
    """The two points of a reply asked in ``style``: its family's form first, then the JSON form; values
    ``{"x", "y", "to_x", "to_y"}`` in the frame's units (unnamed pairs in ``rule.axes`` order). Never
    raises."""
    try:
        text = (reply.text or "")[:_MAX_TEXT]
        calls = call_text(reply)
        if calls:
            text = f"{text}\n{calls}"
        text = text.replace("\\n", "\n")
        if not text.strip():
            return Parsed("parse_error", "empty_reply", None, None)
        form = FORM_OF.get(style, "json")
        found = READERS[form](text) or (READERS["json"](text) if form != "json" else [])
        if not found:
            if refusal(text):
                return Parsed("refusal", f"refusal:drag:{style}", None, None)
            return Parsed("parse_error", f"no_drag_answer:{form}", None, None)
        (a0, a1), (b0, b1), named = found[0]
        if not all(math.isfinite(v) and abs(v) <= MAX_MAGNITUDE for v in (a0, a1, b0, b1)):
            return Parsed("parse_error", "too_large:drag", None, None)
        swap = not named and rule.axes == "yx"
        start = (a1, a0) if swap else (a0, a1)
        end = (b1, b0) if swap else (b0, b1)
        notes = [f"drag:{form}"]
        if len(found) > 1:
            notes.append("multiple_answers_first_used")
        values = {"x": start[0], "y": start[1], "to_x": end[0], "to_y": end[1]}
        return Parsed("ok", ";".join(notes), values, _confidence(calls))
    except Exception as exc:  # never raise: a reader bug is this reply's parse error
        return Parsed("parse_error", f"internal_error:{type(exc).__name__}", None, None)


def drag_parser(style: str, rule: FrameRule) -> Callable[[Reply], Parsed]:
    """The reader of a one-call drag reply in ``style``."""
    return lambda reply: parse_drag(reply, style, rule)


def split(parsed: Parsed) -> tuple[Parsed, Parsed]:
    """A two-point answer as two one-point answers (start, end) for the frame mapping of one point."""
    if parsed.values is None:
        return parsed, parsed
    v = parsed.values
    start = Parsed(parsed.status, parsed.detail, {"x": v["x"], "y": v["y"]}, parsed.confidence)
    end = Parsed(parsed.status, parsed.detail, {"x": v["to_x"], "y": v["to_y"]}, parsed.confidence)
    return start, end


