"""Set-of-Mark prompt, element list and answer parsing (seed ``ui-grounding-som.txt``).

The model sees the marked screenshot and one prompt holding the instruction, the image size, the units of
the element list, a sentence introducing it (our wording), and the detector's output as one JSON line
holding the seed's ``grounding`` object: the element list with the spec's fields and an ``error``::

    Grounding: {"grounding":{"error":null,"elements":[{"id":1,"center":[500.0,260.4],"box":[62.5,...]}]}}

ordered as the marks are numbered (by detector score). Numbers are in the **model's coordinate frame**
: pixels with one decimal, 0-1000 units (``pixel / (size - 1) x 1000``, one decimal: on a
1920-wide screenshot pixel 960 is 500.3), touch coordinates (the same numbers, named as the phone agent's
tap takes them) or 0-1 units (three decimals). The pixel values are the mark's
box (the detector's numbers, see :mod:`dvoc_bench.draw.som_render`), clamped to ``[0, size - 1]`` first, so no
value leaves the frame's range; rounding is half up on the decimal value. The model answers
``select_element(id, confidence)``.

When the detector failed or found nothing to mark, :func:`som_fallback_prompt` asks for a point on the plain
screenshot instead (``click_at``), with the same ``grounding`` line carrying an empty element list and the
error in our own words (the seed: "the plain screenshot is returned and grounding.error gives the reason,
with an empty element list").

:func:`parse_select` reads that answer with the same tolerance as ``parse_reply`` (it reuses its
helpers): the id may be an integer, an integral float or a numeric string (``"3"``, ``"#3"``, ``"[3]"``);
text fallbacks are a JSON object with ``id``, ``select_element(id=3)`` / ``select_element(3)``, and
``id: 3``. An id that is not a whole number is ``not_an_integer:id``; with ``valid_ids`` given, an id
outside them is ``unknown_id:<n>`` (a parse error: the reply names no mark).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from dvoc_bench.core.geometry import Frame, Size, round_half_up
from dvoc_bench.core.records import ParseStatus
from dvoc_bench.draw.som_render import Mark
from dvoc_bench.models.base import Reply
from dvoc_bench.protocol.parse import (
    _MAX_TEXT,
    Parsed,
    _confidence,
    _decode_arguments,
    _first_json_object,
    _join,
    _lower_keys,
    _number,
    _reply_calls,
    _reply_text,
    _short_name,
)
from dvoc_bench.protocol.prompts import frame_statement
from dvoc_bench.protocol.tools import SELECT_ELEMENT

TOOL_NAME = "select_element"
"""The tool the model must call."""

ELEMENTS_PREFIX = "Grounding: "
"""Start of the line carrying the ``grounding`` object (element list and error) as JSON."""

UNITS_PREFIX = "Element list units: "
"""Start of the line naming the units of the list."""

_UNIT_WORDS = {
    Frame.PIXEL: "pixels", Frame.NORM1000: "0-1000", Frame.NORM999: "0-999", Frame.NORM1: "0-1",
    Frame.TOUCH1000: "touch coordinates",
}  # fmt: skip
_DECIMALS = {Frame.PIXEL: 1, Frame.NORM1000: 1, Frame.NORM999: 1, Frame.NORM1: 3, Frame.TOUCH1000: 1}


def som_tools() -> list[dict[str, Any]]:
    """The tool list of a SoM request (a fresh copy)."""
    return [json.loads(json.dumps(SELECT_ELEMENT))]


def _round(v: float, decimals: int) -> float:
    return round_half_up(v, decimals)


def to_frame_value(v: float, extent: int, frame: Frame) -> float:
    """A pixel coordinate on an axis of ``extent`` pixels, written in ``frame`` (clamped, rounded)."""
    frame = Frame(frame)
    px = min(max(float(v), 0.0), extent - 1.0)
    scale = frame.scale
    value = px if scale is None else px / (extent - 1) * scale
    return _round(value, _DECIMALS[frame])


def element_list(marks: Sequence[Mark], frame: Frame, size: Size) -> dict[str, list[dict[str, Any]]]:
    """``{"elements": [{"id", "center", "box"}, ...]}`` in ``frame``, in mark order (the one place where
    a mark's pixels become the model's numbers)."""
    w, h = size.width, size.height
    out = []
    for m in marks:
        b = m.box
        cx, cy = b.centre.x, b.centre.y
        out.append(
            {
                "id": m.id,
                "center": [to_frame_value(cx, w, frame), to_frame_value(cy, h, frame)],
                "box": [
                    to_frame_value(b.x0, w, frame),
                    to_frame_value(b.y0, h, frame),
                    to_frame_value(b.x1, w, frame),
                    to_frame_value(b.y1, h, frame),
                ],
            }
        )
    return {"elements": out}


def grounding(marks: Sequence[Mark], frame: Frame, size: Size, error: str | None = None) -> dict[str, Any]:
    """The seed's ``grounding`` object: ``{"error": error, "elements": [...]}`` (``error`` is ``None`` when
    the detector ran and marked something; with an error the element list is empty)."""
    elements = [] if error is not None else element_list(marks, frame, size)["elements"]
    return {"error": error, "elements": elements}


def element_list_json(marks: Sequence[Mark], frame: Frame, size: Size, error: str | None = None) -> str:
    """``{"grounding": {...}}`` as one compact JSON line."""
    return json.dumps({"grounding": grounding(marks, frame, size, error)}, separators=(",", ":"))


INTRO_SENTENCE = (
    "Below, grounding.elements lists the numbered boxes drawn on the screenshot: each entry gives the "
    "element's number (id), the centre of its box and the box as [left, top, right, bottom], in the units "
    "above, most confident detection first; grounding.error is null when the detector ran."
)
"""Our own sentence introducing the element list (the seed's sentence names a tool we do not have)."""


def _units_sentence(frame: Frame, size: Size) -> str:
    w, h = size.width, size.height
    if frame is Frame.PIXEL:
        return (
            f"{UNITS_PREFIX}pixels. x counts from 0 at the left edge to {w - 1} at the right edge, y from 0 "
            f"at the top edge to {h - 1} at the bottom edge."
        )
    if frame is Frame.TOUCH1000:  # the seed's phone agent: the numbers a tap takes
        return (
            f"{UNITS_PREFIX}{_UNIT_WORDS[frame]}, the numbers a tap takes: x = pixel column / {w - 1} "
            f"x 1000, y = pixel row / {h - 1} x 1000, one decimal, so (0.0, 0.0) is the top-left pixel and "
            f"(1000.0, 1000.0) the bottom-right pixel; a center can be tapped as it is."
        )
    top = f"{frame.scale:g}"
    return (
        f"{UNITS_PREFIX}{_UNIT_WORDS[frame]}. Both axes are scaled to 0-{top} whatever the aspect ratio: "
        f"x = pixel column / {w - 1} x {top}, y = pixel row / {h - 1} x {top}, so (0, 0) is the top-left "
        f"corner and ({top}, {top}) the bottom-right corner."
    )


def som_prompt(*, instruction: str, size: Size, frame: Frame, marks: Sequence[Mark]) -> str:
    """Text of a Set-of-Mark request (one wording under every protocol)."""
    frame = Frame(frame)
    parts = [
        "A detector has outlined the user-interface elements it found on this screenshot. Each one has "
        "a coloured box and a number written on a small tag of the same colour just above the box's "
        "top-left corner (inside the corner when the box touches the top of the screenshot). Choose the "
        "numbered element that the instruction below asks for.",
        f"Instruction: {instruction}",
        "\n".join(
            [
                f"The screenshot is {size.width}×{size.height} pixels (width × height).",
                _units_sentence(frame, size),
                INTRO_SENTENCE,
                ELEMENTS_PREFIX + element_list_json(marks, frame, size),
            ]
        ),
        "Look at the screenshot to decide: the detector does not read text and does not know what the "
        "elements are, it may box one element twice or miss one. If two numbers cover the element, give "
        "the one whose box fits it best. If no box covers it, give the nearest one with a low confidence.",
        "Answer by calling select_element with the id of the element and a confidence from 0 to 1 saying "
        "how sure you are.",
    ]
    return "\n\n".join(parts)


def som_fallback_prompt(*, instruction: str, size: Size, frame: Frame, error: str) -> str:
    """Text of the fallback request when grounding failed: the plain screenshot, an empty element list with
    the error, and a ``click_at`` answer in ``frame``."""
    frame = Frame(frame)
    parts = [
        "The element detector could not mark this screenshot, so it is shown plain, without numbered boxes. "
        "Find the user-interface element described by the instruction below yourself, and give the "
        "position of its centre.",
        f"Instruction: {instruction}",
        "\n".join(
            [
                f"The screenshot is {size.width}×{size.height} pixels (width × height).",
                frame_statement(frame, size),
                "The detector's output follows; grounding.error says why there are no elements.",
                ELEMENTS_PREFIX + element_list_json([], frame, size, error),
            ]
        ),
        "Answer by calling click_at with x and y of the element's centre in these units, and a confidence "
        "from 0 to 1 saying how sure you are.",
    ]
    return "\n\n".join(parts)


# --------------------------------------------------------------------------------------------- parsing

_ID_STRING_RE = re.compile(r"^\s*[\[(#]?\s*#?\s*(\d+(?:\.0*)?)\s*[\])]?\s*$")
_CALL_RE = re.compile(r"(?<![\w.])([A-Za-z_][\w.:]*)\s*\(([^()]{0,200})\)")
_KW_RE = re.compile(r"""^["']?([A-Za-z_]\w*)["']?\s*[=:]\s*(.+)$""", re.DOTALL)
_ID_BINDING_RE = re.compile(r"""(?<![\w.])["']?(?:id|element_id|mark)["']?\s*[:=]\s*""", re.IGNORECASE)
_ID_CLEAN_RE = re.compile(
    r"""(?<![\w.])["']?(?:id|element_id|mark)["']?\s*[:=]\s*["']?#?(\d+)["']?(?![\w.]|\s*[-+*/=]\s*\d)""",
    re.IGNORECASE,
)
_ID_KEYS = ("id", "element_id", "mark", "element", "number")


def _id_value(raw: Any) -> tuple[int | None, str | None, bool]:
    """``(id, failure, from_string)`` of one raw id."""
    if isinstance(raw, str):
        m = _ID_STRING_RE.match(raw)
        if m is None:
            num = _number(raw)
            return None, ("not_an_integer:id" if num.value is not None else f"{num.failure}:id"), True
        return int(float(m.group(1))), None, True
    num = _number(raw)
    if num.value is None:
        return None, f"{num.failure}:id", False
    if num.value != int(num.value) or num.value < 0:
        return None, "not_an_integer:id", False
    return int(num.value), None, False


def _from_mapping(obj: Mapping[Any, Any]) -> tuple[dict[str, float] | None, float | None, list[str], str]:
    """``(values, confidence, notes, failure)`` from an argument object."""
    mapping = _lower_keys(obj)
    key = next((k for k in _ID_KEYS if k in mapping), None)
    if key is None:
        for wrap in ("arguments", "parameters", "params", "args", "input", "function"):
            inner = mapping.get(wrap)
            if isinstance(inner, str):
                inner = _decode_arguments(inner).mapping
            if isinstance(inner, Mapping):
                values, conf, notes, failure = _from_mapping(inner)
                return values, conf, (["nested_arguments", *notes] if values else notes), failure
        return None, None, [], "missing_field:id"
    ident, why, from_string = _id_value(mapping[key])
    if ident is None:
        return None, None, [], why or "not_a_number:id"
    confidence, notes = _confidence(mapping)
    if from_string:
        notes.insert(0, "numbers_as_strings")
    return {"id": float(ident)}, confidence, notes, ""


def _name_note(name: Any) -> list[str]:
    if not isinstance(name, str) or not name.strip():
        return ["missing_tool_name"]
    if _short_name(name) == TOOL_NAME:
        return []
    return [f"wrong_tool:{re.sub(r'[^A-Za-z0-9_.-]', '', name)[:40] or '?'}"]


def _call_parts(call: Any) -> tuple[Any, Any]:
    if isinstance(call, Mapping):
        fn = call.get("function")
        if isinstance(fn, Mapping):
            return fn.get("name"), fn.get("arguments")
        return call.get("name"), call.get("arguments", call.get("args"))
    return getattr(call, "name", None), getattr(call, "arguments", None)


def _from_text(text: str) -> tuple[dict[str, float] | None, float | None, list[str], str]:
    text = text[:_MAX_TEXT]
    obj = _first_json_object(text)
    if isinstance(obj, Mapping):
        values, conf, notes, failure = _from_mapping(obj)
        if values is not None:
            return values, conf, ["json_in_text", *notes], ""
    found: list[tuple[dict[str, float], float | None, list[str]]] = []
    for m in _CALL_RE.finditer(text):
        if _short_name(m.group(1)) != TOOL_NAME:
            continue
        parts = [p.strip() for p in m.group(2).split(",") if p.strip()]
        kws = [_KW_RE.match(p) for p in parts]
        if parts and all(kws):
            mapping: dict[str, Any] = {k.group(1): k.group(2).strip() for k in kws if k is not None}
        elif parts and not any(kws) and len(parts) <= 2:
            mapping = dict(zip(("id", "confidence"), parts, strict=False))
        else:
            continue
        values, conf, notes, _ = _from_mapping(mapping)
        if values is not None:  # text arguments are always strings: no note for that
            found.append((values, conf, [n for n in notes if n != "numbers_as_strings"]))
    if found:
        if any(f[0] != found[0][0] for f in found[1:]):
            return None, None, [], "ambiguous_function_call_in_text"
        values, conf, notes = found[0]
        return values, conf, ["function_call_in_text", *notes], ""
    bindings = len(_ID_BINDING_RE.findall(text))
    clean = {int(v) for v in _ID_CLEAN_RE.findall(text)}
    if bindings:
        if len(clean) != 1 or len(_ID_CLEAN_RE.findall(text)) < bindings:
            return None, None, [], "ambiguous_numbers_in_text"
        return {"id": float(clean.pop())}, None, ["numbers_in_text", "confidence_missing"], ""
    return None, None, [], ""


def _parse(reply: Any, valid_ids: Collection[int] | None) -> Parsed:
    calls = _reply_calls(reply)
    first_failure = ""
    result: tuple[ParseStatus, dict[str, float], float | None, list[str]] | None = None
    for i, call in enumerate(calls):
        name, raw = _call_parts(call)
        args = _decode_arguments(raw)
        if args.mapping is None:
            first_failure = first_failure or (args.failure or "no_arguments")
            continue
        values, conf, notes, failure = _from_mapping(args.mapping)
        if values is None:
            first_failure = first_failure or failure
            continue
        notes = _name_note(name) + args.notes + notes
        if len(calls) > 1:
            notes.insert(0, "multiple_tool_calls_first_used" if i == 0 else "multiple_tool_calls_later_used")
        result = ("ok", values, conf, notes)
        break
    if result is None:
        text = _reply_text(reply)
        if text.strip():
            values, conf, notes, failure = _from_text(text)
            if values is not None:
                result = ("text_fallback", values, conf, notes + (["tool_call_unusable"] if calls else []))
            else:
                first_failure = first_failure or failure or "no_tool_call"
        else:
            first_failure = first_failure or "empty_reply"
    if result is None:
        return Parsed("parse_error", first_failure or "parse_error", None, None)
    status, values, conf, notes = result
    ident = int(values["id"])
    if valid_ids is not None and ident not in valid_ids:
        return Parsed("parse_error", f"unknown_id:{ident}", None, conf)
    return Parsed(status, _join(notes), values, conf)


def parse_select(reply: Reply, valid_ids: Collection[int] | None = None) -> Parsed:
    """Read ``select_element(id, confidence)`` from ``reply``; ``values = {"id": n}``. Never raises."""
    try:
        return _parse(reply, valid_ids)
    except Exception as exc:  # the contract is "never raise"
        return Parsed("parse_error", f"internal_error:{type(exc).__name__}", None, None)
