"""The tools a model plans an episode with (``episode.plan=model``), and the reader of its answer.

A planning call shows the model the page and the task and offers six tools; it answers with exactly one
call, the next step: ``click(target)``, ``type(text)``, ``drag(from, to)``, ``scroll(direction, target?)``,
``key(name)`` or ``done()``. A target is a description in words ("the Submit button"), never a point: it is
handed to the trial's grounding method, which grounds it as it grounds every step, so grounding stays
measured in model-planned episodes too.

:func:`read_plan_call` never raises: a reply that is not exactly one usable call of these tools gives a
:class:`PlanCall` with ``error`` set (one line naming the tool and the field).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from dvoc_bench.core.jsonread import JsonError, loads
from dvoc_bench.models.base import Reply


def _tool(
    name: str, description: str, props: dict[str, str], optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    properties = {k: {"type": "string", "description": v} for k, v in props.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": [k for k in props if k not in optional],
            },
        },
    }


SCROLL_DIRECTIONS = ("up", "down", "left", "right")
"""What ``scroll(direction)`` accepts."""

PLAN_TOOLS: tuple[dict[str, Any], ...] = (
    _tool("click", "Click an element of the page.", {"target": "The element to click, described in words."}),
    _tool("type", "Type text into the element that has the keyboard focus.", {"text": "The text to type."}),
    _tool(
        "drag",
        "Press the mouse on one element, move it to another place and release it there.",
        {"from": "The element to drag, in words.", "to": "Where to drop it, in words."},
    ),
    _tool(
        "scroll",
        "Turn the mouse wheel over an element to scroll it.",
        {
            "direction": "One of: up, down, left, right.",
            "target": "The element to scroll, in words (default: the page).",
        },
        optional=("target",),
    ),
    _tool("key", "Press one key.", {"name": "The key's name: Enter, Tab, ArrowDown, Backspace, ..."}),
    _tool("done", "Say that the task is finished.", {}),
)
"""The planning tools in OpenAI function-calling format."""

PLAN_TOOL_NAMES: tuple[str, ...] = tuple(t["function"]["name"] for t in PLAN_TOOLS)

_REQUIRED: dict[str, tuple[str, ...]] = {
    t["function"]["name"]: tuple(t["function"]["parameters"]["required"]) for t in PLAN_TOOLS
}

MAX_ARG_CHARS = 300
"""Longest target description or text accepted from a planning call."""


def plan_tools() -> list[dict[str, Any]]:
    """The tool list to send (a fresh deep copy)."""
    return copy.deepcopy(list(PLAN_TOOLS))


@dataclass(frozen=True)
class PlanCall:
    """The next step as the model chose it (or why its reply gives none)."""

    tool: str | None
    """One of :data:`PLAN_TOOL_NAMES`; ``None`` when the reply gave no usable call."""
    args: dict[str, str]
    """The call's string arguments (``target``, ``text``, ``from``, ``to``, ``direction``, ``name``)."""
    error: str | None = None
    """One line when the reply is not a usable planning call (no call, an unknown tool, a missing or
    non-text field, a bad direction)."""

    def words(self) -> str:
        """The call as one line: ``click(target='the OK button')``."""
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.tool or '?'}({inner})"


def _fail(why: str, tool: str | None = None) -> PlanCall:
    return PlanCall(tool=None, args={}, error=why if tool is None else f"{tool}: {why}")


def read_plan_call(reply: Reply) -> PlanCall:
    """The planning call of ``reply`` (its first tool call; see the module docstring)."""
    if not reply.tool_calls:
        return _fail("the reply has no tool call")
    call = reply.tool_calls[0]
    name = str(call.name or "").strip().rpartition(".")[2]  # a provider prefix (functions.click) is dropped
    if name not in _REQUIRED:
        return _fail(f"unknown tool {name!r} (allowed: {', '.join(PLAN_TOOL_NAMES)})")
    raw: Any = call.arguments
    if isinstance(raw, str):
        try:
            raw = loads(raw) if raw.strip() else {}
        except JsonError as e:
            return _fail(f"arguments are not JSON: {e}", name)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return _fail("arguments are not an object", name)
    args: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(value, str):
            return _fail(f"{key}: not text ({type(value).__name__})", name)
        if value.strip():
            args[str(key)] = value.strip()[:MAX_ARG_CHARS]
    missing = [k for k in _REQUIRED[name] if k not in args]
    if missing:
        return _fail(f"missing {', '.join(missing)}", name)
    if name == "scroll" and args["direction"].lower() not in SCROLL_DIRECTIONS:
        return _fail(f"direction: {args['direction']!r} is not one of {', '.join(SCROLL_DIRECTIONS)}", name)
    fields: tuple[str, ...] = ("target", "text", "from", "to", "direction", "name")
    keep = {k: args[k] for k in fields if k in args}
    return PlanCall(tool=name, args=keep)
