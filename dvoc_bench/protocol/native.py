"""One-shot grounding in a model family's own format: the request each family is trained to answer and
the reader of the answer it writes (docs/frames.md). ``prompt_style: tool_call`` (the default) is the
harness's ``click_at`` tool (:mod:`dvoc_bench.protocol.prompts`); the others send no tool and read text:

- ``qwen25vl``: asks for JSON ``{"point_2d": [x, y]}`` in pixels of the image seen; reads ``point_2d`` /
  ``bbox_2d`` and ``<|box_start|>(x,y)<|box_end|>``;
- ``qwen3vl``: the same JSON in 0–1000, read the same way;
- ``uitars15``: asks for ``click(start_box='(x,y)')`` in pixels of the image seen; reads ``start_box``
  (bare or around box tokens) and ``<point>x y</point>``;
- ``gemini_point``: asks for JSON ``[{"point": [y, x]}]`` in 0–1000; reads ``point`` and ``box_2d``
  (``[ymin, xmin, ymax, xmax]``);
- ``claude``: asks for one line ``pyautogui.click(x=…, y=…)`` in pixels of the image seen; reads
  ``pyautogui.click`` and a ``"coordinate": [x, y]``;
- ``glm``: asks for ``<|begin_of_box|>[x, y]<|end_of_box|>`` in 0–999; reads the box tokens' content;
- ``seeclick``, ``showui``: ask for a bare ``[x, y]`` in 0–1 (two prompts, SeeClick's a question about the
  element's position, ShowUI's a clickable location); read the first ``[x, y]`` or ``(x, y)`` pair or box;
- ``pyautogui``: asks a GUI agent for one ``pyautogui.click(x=…, y=…)`` in the frame's units (Aguvis in
  0–1, OpenCUA in pixels of the image seen); read as ``claude``'s;
- ``openai_cua``: asks for the computer-use click action as JSON, ``{"type": "click", "x": …, "y": …}``, in
  pixels of the display (the image sent); reads the first ``"type": "click"`` object's ``x`` and ``y``;
- ``holo``: asks for structured JSON ``{"x": …, "y": …}`` in the frame's units (Holo1.5 pixels, Holo2
  0–1000); reads the first object with both keys;
- ``osatlas``: asks for ``<|box_start|>(x1,y1),(x2,y2)<|box_end|>`` in 0–1000; reads the box tokens (a box
  as its centre, a point as it is), the same box with its special tokens stripped (``(x1,y1),(x2,y2)``)
  and a bare pair;
- ``free_text``: asks for the point as ``(x, y)`` in the frame's units (GPT-4o asked in plain words);
  reads ``x=…, y=…`` by name, else the first ``(x, y)`` or ``[x, y]`` pair (a box as its centre).

Every style also reads the forms its family writes whatever the prompt asked (:data:`FORMS`): Qwen2.5-VL
and Qwen3-VL answer with their ``computer_use`` tool call (``<tool_call>{"name": "computer_use",
"arguments": {"action": "left_click", "coordinate": [x, y]}}</tool_call>``, or ``"name": "left_click"``),
MAI-UI with its navigation ``<tool_call>``, UI-TARS with ``pyautogui.click``. A tool call the server parsed
(``Reply.tool_calls``) is read like one written in the text. The frame is the config's, never the syntax's:
the same box tokens are 0–1000 for OS-Atlas and pixels for TianXi-Action.

A reply with no answer that declines (``I'm unable to…``, ``I cannot…``, ``Sorry…``) is recorded with status
``refusal`` (:data:`~dvoc_bench.core.records.ParseStatus`), not ``parse_error``.

Every prompt is this project's own wording. Pairs written without names are read in the frame's declared
axis order (``coord_frame.axes``: Gemini writes ``[y, x]``); named ``x=`` / ``y=`` are read by name. A box
is read as its centre. Reading never raises (:class:`~dvoc_bench.protocol.parse.Parsed`, status ``ok`` or
``parse_error``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

from dvoc_bench.core.frames import FORMS, PROMPT_STYLES, FrameRule
from dvoc_bench.core.geometry import Frame, Point, Size
from dvoc_bench.models.base import Reply
from dvoc_bench.protocol.parse import MAX_MAGNITUDE, Parsed, parse_reply

__all__ = [
    "FORMS", "NATIVE_STYLES", "native_prompt", "native_text", "parse_native", "point_parser", "refusal"
]  # fmt: skip

NATIVE_STYLES: tuple[str, ...] = tuple(s for s in PROMPT_STYLES if s != "tool_call")
"""The prompt styles of :func:`native_prompt` (every style but the tool call)."""

_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?![\w.])"
_SEP = r"\s*[,\s]\s*"
_MAX_TEXT = 100_000


NEUTRAL_UNITS = "the coordinates you normally use for this image"
"""The units phrase of a neutral prompt (the frame probe's: no unit, no size, :func:`native_prompt`)."""


def _units_words(rule: FrameRule, seen: Size, neutral: bool = False) -> str:
    """The frame in words, for the prompts (``neutral``: no unit, no size)."""
    if neutral:
        return NEUTRAL_UNITS
    if rule.units == "pixel":
        return (
            f"absolute pixel coordinates of this {seen.width}x{seen.height} image (x from 0 at the left "
            f"edge, y from 0 at the top edge)"
        )
    top = f"{Frame(rule.units).scale:g}"
    return (
        f"coordinates scaled to 0-{top} on each axis (0 at the left and top edges, {top} at the right and "
        f"bottom)"
    )


def _previous(previous: Point | None, rule: FrameRule, seen: Size) -> str:
    """The retry sentence: the last answer (pixels of the image seen) written in the model's frame."""
    if previous is None:
        return ""
    q = rule.from_pixels(previous, seen)
    a, b = (q.x, q.y) if rule.axes == "xy" else (q.y, q.x)
    digits = {"norm1": 3, "touch1000": 1}.get(rule.units, 0)
    return f" Your last answer, ({a:.{digits}f}, {b:.{digits}f}), was not on the element; look again."


def native_prompt(
    style: str,
    *,
    instruction: str,
    seen: Size,
    rule: FrameRule,
    previous: Point | None = None,
    neutral: bool = False,
) -> str:
    """The text of a one-shot grounding request in ``style`` (``previous``: the last usable answer, in
    pixels of the image seen, for a retry). ``neutral``: the family's format with no unit and no image
    size stated (the frame probe asks so, to see the model's own habit)."""
    units = _units_words(rule, seen, neutral)
    again = _previous(previous, rule, seen)
    if style in ("qwen25vl", "qwen3vl"):
        return (
            f"Find the user interface element for this request: {instruction}\n"
            f"Give the centre of that element as {units}. Reply with JSON only, in the form "
            f'{{"point_2d": [x, y], "label": "<element>"}}.{again}'
        )
    if style == "uitars15":
        return (
            f"You operate a computer through its screen. Task: {instruction}\n"
            f"Decide where to click and reply with the action only, written as click(start_box='(x,y)'), "
            f"using {units}.{again}"
        )
    if style == "gemini_point":
        return (
            f"Point to the element the user wants: {instruction}\n"
            f'Answer with JSON only: [{{"point": [y, x], "label": "<element>"}}], the point as [y, x] '
            f"(row first, then column) in {units}.{again}"
        )
    if style == "claude":
        return (
            f"This is a screenshot. Locate the element for this request: {instruction}\n"
            f"Reply with a single line of Python that clicks its centre, pyautogui.click(x=<x>, y=<y>), "
            f"using {units}.{again}"
        )
    if style == "seeclick":
        return (
            f"In this screenshot, where is the element for this command: {instruction}\n"
            f"Answer with its centre only, as [x, y] in {units}, two decimals.{again}"
        )
    if style == "showui":
        return (
            f"Here is a screenshot and a description of an element on it: {instruction}\n"
            f"Give one clickable location of that element as [x, y], {units}. Reply with [x, y] only.{again}"
        )
    if style == "pyautogui":
        return (
            f"You are a GUI agent controlling this computer with pyautogui. Task: {instruction}\n"
            f"Reply with the next action only, one line: pyautogui.click(x=<x>, y=<y>), using {units}.{again}"
        )
    if style == "openai_cua":
        return (
            f"You control a computer whose display is this{'' if neutral else f' {seen.width}x{seen.height}'}"
            f" screenshot. "
            f"Task: {instruction}\n"
            f'Reply with the next action only, as JSON: {{"type": "click", "button": "left", "x": <x>, '
            f'"y": <y>}}, using {units}.{again}'
        )
    if style == "holo":
        return (
            f"Localize the element for this instruction: {instruction}\n"
            f'Reply with JSON only, {{"x": <x>, "y": <y>}}: its centre in {units}.{again}'
        )
    if style == "osatlas":
        return (
            f"In this screenshot, find the element for: {instruction}\n"
            f"Reply with its bounding box as <|box_start|>(x1,y1),(x2,y2)<|box_end|>, in {units}.{again}"
        )
    if style == "glm":
        return (
            f"Where on this screen should I click to do this: {instruction}\n"
            f"Give the centre of the element as [x, y] in {units}, wrapped as "
            f"<|begin_of_box|>[x, y]<|end_of_box|>.{again}"
        )
    if style == "free_text":
        return (
            f"Look at this screenshot and find the element for this request: {instruction}\n"
            f"Tell me where to click: give the centre of that element as (x, y) in {units}.{again}"
        )
    if style == "maiui":
        return (
            f"Locate the user interface element this instruction means: {instruction}\n"
            f"Reason briefly inside <grounding_think></grounding_think>, then give the element's centre as "
            f'<answer>{{"coordinate": [x, y]}}</answer>, in {units}.{again}'
        )
    raise ValueError(f"prompt_style {style!r} is not a native style; allowed: {', '.join(NATIVE_STYLES)}")


def _floats(text: str) -> list[float]:
    return [float(v) for v in re.findall(_NUM, text)]


def _pair_or_box(nums: list[float]) -> tuple[float, float, bool] | None:
    """``(a, b, is_box)`` as written: a point's two numbers, or a box's centre (``[a0, b0, a1, b1]``)."""
    if len(nums) == 2:
        return nums[0], nums[1], False
    if len(nums) == 4:
        return (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2, True
    return None


_BOX_TOKENS = re.compile(r"<\|box_start\|>(.{1,200}?)<\|box_end\|>", re.DOTALL)
_QWEN_JSON = re.compile(r'"(point_2d|bbox_2d)"\s*:\s*\[([^\[\]]{1,200})\]')
_START_BOX = re.compile(r"start_box\s*=\s*['\"](.{1,200}?)['\"]", re.DOTALL)
_POINT_TAG = re.compile(r"<point>(.{1,100}?)</point>", re.DOTALL)
_GEMINI_JSON = re.compile(r'"(point|box_2d)"\s*:\s*\[([^\[\]]{1,200})\]')
_PYAUTOGUI = re.compile(r"pyautogui\.(?:click|doubleClick|rightClick|moveTo)\s*\(([^()]{1,200})\)")
_COORDINATE = re.compile(r'"coordinate"\s*:\s*\[([^\[\]]{1,100})\]')
_GLM_BOX = re.compile(r"<\|begin_of_box\|>(.{1,200}?)<\|end_of_box\|>", re.DOTALL)
_ANSWER_TAG = re.compile(r"<answer>(.{1,400}?)</answer>", re.DOTALL)
_BRACKETS = re.compile(r"[\[(]([^\[\]()]{1,200})[\])]")
_BARE_BOX = re.compile(rf"\(\s*({_NUM}){_SEP}({_NUM})\s*\)\s*,?\s*\(\s*({_NUM}){_SEP}({_NUM})\s*\)")
_PAIR = re.compile(rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*(?:,\s*({_NUM})\s*,\s*({_NUM})\s*)?[\])]")
"""A pair (or box) written with commas, nothing else inside its brackets: ``(512, 304)``, ``[1, 2, 3, 4]``
(not ``(0-1000)``, which is a range)."""
_NAMED_X = re.compile(rf"(?<![\w.])[\"']?x[\"']?\s*[=:]\s*({_NUM})")
_NAMED_Y = re.compile(rf"(?<![\w.])[\"']?y[\"']?\s*[=:]\s*({_NUM})")
_REFUSAL = re.compile(
    r"\b(?:I(?:'|’)?m|I am|I'm)\s+(?:unable|not able|sorry)\b|\bI\s+(?:cannot|can(?:'|’)?t|could not|"
    r"couldn(?:'|’)?t)\b|\b(?:sorry|apologi[sz]e)\b|\bunable to (?:locate|find|identify|determine|help|"
    r"assist|view|see|process)\b",
    re.IGNORECASE,
)
_OBJECT = re.compile(r"\{([^{}]{1,400})\}")
_CLICK_TYPE = re.compile(r'"(?:type|action)"\s*:\s*"(?:left_)?(?:click|double_click)"')

Found = tuple[float, float, bool, bool]
"""``(a, b, is_box, named)``: ``named`` when the pair was read as ``x=``, ``y=`` (no axis order)."""


def _unnamed(pattern: re.Pattern[str], group: int) -> Callable[[str], list[Found]]:
    def read(text: str) -> list[Found]:
        out = []
        for m in pattern.finditer(text):
            got = _pair_or_box(_floats(m.group(group)))
            if got is not None:
                out.append((*got, False))
        return out

    return read


def _pyautogui(text: str) -> list[Found]:
    out: list[Found] = []
    for m in _PYAUTOGUI.finditer(text):
        args = m.group(1)
        x = re.search(rf"\bx\s*=\s*({_NUM})", args)
        y = re.search(rf"\by\s*=\s*({_NUM})", args)
        if x and y:
            out.append((float(x.group(1)), float(y.group(1)), False, True))
        elif "=" not in args and (got := _pair_or_box(_floats(args))) is not None and not got[2]:
            out.append((*got, False))
    return out + _unnamed(_COORDINATE, 1)(text)


def _named_json(*, action: bool) -> Callable[[str], list[Found]]:
    """Objects ``{"x": …, "y": …}`` (``action``: only those with ``"type": "click"``), read by name."""

    def read(text: str) -> list[Found]:
        out: list[Found] = []
        for m in _OBJECT.finditer(text):
            body = m.group(1)
            if action and not _CLICK_TYPE.search(body):
                continue
            x = re.search(rf'"x"\s*:\s*({_NUM})', body)
            y = re.search(rf'"y"\s*:\s*({_NUM})', body)
            if x and y:
                out.append((float(x.group(1)), float(y.group(1)), False, True))
        return out

    return read


def _bare_box(text: str) -> list[Found]:
    """A box written as two bracketed pairs, ``(x1,y1),(x2,y2)`` (box tokens stripped by the decoder), as
    its centre."""
    out: list[Found] = []
    for m in _BARE_BOX.finditer(text):
        a0, b0, a1, b1 = (float(m.group(i)) for i in range(1, 5))
        out.append(((a0 + a1) / 2, (b0 + b1) / 2, True, False))
    return out


def _strict_pairs(text: str) -> list[Found]:
    out: list[Found] = []
    for m in _PAIR.finditer(text):
        nums = [float(g) for g in m.groups() if g is not None]
        got = _pair_or_box(nums)
        if got is not None:
            out.append((*got, False))
    return out


def _named_pair(text: str) -> list[Found]:
    """``x=…, y=…`` or ``"x": …, "y": …`` in free text, read by name (one of each)."""
    xs, ys = _NAMED_X.findall(text), _NAMED_Y.findall(text)
    if len(xs) >= 1 and len(ys) >= 1:
        return [(float(xs[0]), float(ys[0]), False, True)]
    return []


def _maiui_answer(text: str) -> list[Found]:
    """MAI-UI's grounding answer: ``"coordinate": [x, y]`` (or a box) inside ``<answer>…</answer>``."""
    out: list[Found] = []
    for m in _ANSWER_TAG.finditer(text):
        out += _unnamed(_COORDINATE, 1)(m.group(1))
    return out


def _either(*readers: Callable[[str], list[Found]]) -> Callable[[str], list[Found]]:
    def read(text: str) -> list[Found]:
        for r in readers:
            found = r(text)
            if found:
                return found
        return []

    return read


_QWEN = _either(_unnamed(_QWEN_JSON, 2), _unnamed(_COORDINATE, 1), _unnamed(_BOX_TOKENS, 1))
"""Qwen2.5-VL / Qwen3-VL: their grounding JSON, their ``computer_use`` tool call's ``coordinate``, box
tokens."""

_READERS: dict[str, Callable[[str], list[Found]]] = {
    "qwen25vl": _QWEN,
    "qwen3vl": _QWEN,
    "uitars15": _either(
        _unnamed(_START_BOX, 1), _unnamed(_POINT_TAG, 1), _unnamed(_BOX_TOKENS, 1), _pyautogui
    ),
    "gemini_point": _unnamed(_GEMINI_JSON, 2),
    "claude": _pyautogui,
    "glm": _unnamed(_GLM_BOX, 1),
    "seeclick": _unnamed(_BRACKETS, 1),
    "showui": _unnamed(_BRACKETS, 1),
    "pyautogui": _pyautogui,
    "openai_cua": _named_json(action=True),
    "holo": _named_json(action=False),
    "osatlas": _either(_unnamed(_BOX_TOKENS, 1), _bare_box, _unnamed(_BRACKETS, 1)),
    "maiui": _either(_maiui_answer, _unnamed(_COORDINATE, 1)),
    "free_text": _either(_named_pair, _bare_box, _strict_pairs),
}


def refusal(text: str) -> bool:
    """True when ``text`` declines to answer (``I'm unable to…``, ``I cannot…``, ``Sorry…``)."""
    return bool(_REFUSAL.search(text[:_MAX_TEXT]))


def call_text(reply: Reply) -> str:
    """The tool calls a server parsed out of the reply, written back as the JSON text they came from."""
    parts: list[str] = []
    for call in reply.tool_calls or ():
        name, args = getattr(call, "name", None), getattr(call, "arguments", None)
        if not isinstance(args, str):
            try:
                args = json.dumps(args)
            except (TypeError, ValueError):
                continue
        parts.append(f'<tool_call>{{"name": {json.dumps(str(name))}, "arguments": {args}}}</tool_call>')
    return "\n".join(parts)


def native_text(reply: Reply) -> str:
    """The text a family reader reads: the reply's text and its parsed tool calls written back."""
    calls = call_text(reply)
    text = (reply.text or "")[:_MAX_TEXT]
    return f"{text}\n{calls}" if calls else text


def parse_native(reply: Reply, style: str, rule: FrameRule) -> Parsed:
    """The point of a reply written in ``style``'s format: ``values = {"x", "y"}`` in the frame's units
    (unnamed pairs in ``rule.axes`` order, a box as its centre); the first answer when there are several.
    A reply that holds no answer and declines is status ``refusal``. Never raises."""
    try:
        text = (reply.text or "")[:_MAX_TEXT]
        calls = call_text(reply)
        if calls:
            text = f"{text}\n{calls}"
        if style not in _READERS:
            return Parsed("parse_error", f"unknown_style:{style}", None, None)
        if not text.strip():
            return Parsed("parse_error", "empty_reply", None, None)
        found = _READERS[style](text.replace("\\n", "\n"))
        if not found:
            if refusal(text):
                return Parsed("refusal", f"refusal:{style}", None, None)
            return Parsed("parse_error", f"no_native_answer:{style}", None, None)
        a, b, is_box, named = found[0]
        if not all(math.isfinite(v) and abs(v) <= MAX_MAGNITUDE for v in (a, b)):
            return Parsed("parse_error", "too_large:x", None, None)
        x, y = (a, b) if named or rule.axes == "xy" else (b, a)
        notes = [f"native:{style}"]
        if is_box:
            notes.append("box_centre")
        if len(found) > 1:
            notes.append("multiple_answers_first_used")
        return Parsed("ok", ";".join(notes), {"x": x, "y": y}, None)
    except Exception as exc:  # never raise: a reader bug is this reply's parse error
        return Parsed("parse_error", f"internal_error:{type(exc).__name__}", None, None)


def point_parser(style: str, rule: FrameRule) -> Callable[[Reply], Parsed]:
    """The reader of a one-shot reply in ``style``: the tool call's (:func:`~dvoc_bench.protocol.parse.
    parse_reply`, which also reads a ``click_at`` written as text) or the family's own."""
    if style == "tool_call":
        return _tool_call_point
    return lambda reply: parse_native(reply, style, rule)


def _tool_call_point(reply: Reply) -> Parsed:
    """:func:`~dvoc_bench.protocol.parse.parse_reply` for a point; a reply with no call or answer that
    declines is status ``refusal``."""
    parsed = parse_reply(reply, "point")
    text = getattr(reply, "text", None)
    unread = parsed.status == "parse_error" and not getattr(reply, "tool_calls", None)
    if unread and isinstance(text, str) and refusal(text):
        return Parsed("refusal", "refusal:tool_call", None, None)
    return parsed
