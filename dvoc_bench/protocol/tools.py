"""Tool schemas offered to the model (OpenAI function-calling format).

The schemas say nothing about units on purpose: the prompt states the coordinate frame the model must use
(pixels or a normalised scale), and offsets and points are read in that frame.
"""

from __future__ import annotations

import copy
from typing import Any

from dvoc_bench.core.records import AnswerKind

ToolKind = AnswerKind
"""What a DVOC step or a one-shot attempt asks for: a relative offset or an absolute point (the records'
:data:`~dvoc_bench.core.records.AnswerKind`)."""

_CONFIDENCE = {
    "type": "number",
    "description": "How sure you are of this answer, from 0 (a guess) to 1 (certain).",
}


def _function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """One OpenAI-format function tool with every property required."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(properties)},
        },
    }


REPORT_OFFSET: dict[str, Any] = _function(
    "report_offset",
    "Give the displacement from the crosshair to the centre of the target element.",
    {
        "dx": {
            "type": "number",
            "description": "Horizontal displacement; positive when the target is right of the crosshair.",
        },
        "dy": {
            "type": "number",
            "description": "Vertical displacement; positive when the target is below the crosshair.",
        },
        "confidence": _CONFIDENCE,
    },
)
"""``report_offset(dx, dy, confidence)``: the relative answer of a DVOC step."""

CLICK_AT: dict[str, Any] = _function(
    "click_at",
    "Give the absolute position of the centre of the target element.",
    {
        "x": {"type": "number", "description": "Horizontal coordinate, growing to the right."},
        "y": {"type": "number", "description": "Vertical coordinate, growing downward."},
        "confidence": _CONFIDENCE,
    },
)
"""``click_at(x, y, confidence)``: the absolute answer (one-shot, DVOC ``predict=absolute``)."""

SELECT_ELEMENT: dict[str, Any] = _function(
    "select_element",
    "Choose the numbered mark drawn on the element that matches the instruction.",
    {
        "id": {"type": "integer", "description": "The number written on the chosen mark."},
        "confidence": _CONFIDENCE,
    },
)
"""``select_element(id, confidence)``: the Set-of-Mark answer."""

TOOL_NAMES: dict[ToolKind, str] = {"offset": "report_offset", "point": "click_at"}
"""The tool each answer kind expects."""

FIELDS: dict[ToolKind, tuple[str, str]] = {"offset": ("dx", "dy"), "point": ("x", "y")}
"""The two numeric fields each answer kind carries (besides ``confidence``)."""

_BY_KIND: dict[ToolKind, dict[str, Any]] = {"offset": REPORT_OFFSET, "point": CLICK_AT}


def tools_for(kind: ToolKind) -> list[dict[str, Any]]:
    """The tool list to send for ``kind`` (a fresh deep copy: callers may mutate it freely)."""
    if kind not in _BY_KIND:
        raise ValueError(f"unknown tool kind {kind!r}; allowed: {', '.join(_BY_KIND)}")
    return [copy.deepcopy(_BY_KIND[kind])]
