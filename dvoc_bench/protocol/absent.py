"""The "not present" answer (docs/absent.md): how a request offers it and how a reply gives it.

Offered only on trials with ``offer_absent`` (``absent.offer``; on by default under an absent variant), so
every other request and reading is unchanged. A reply that gives it is read as status ``not_present``
(:data:`~dvoc_bench.core.records.ParseStatus`): the method ends the trial without a click.

Each way of asking has its form, each read only when offered:

- the harness's tools (one-shot's ``click_at``, DVOC's ``report_offset``, zoom): a second tool,
  ``not_present(reason)`` (:data:`NOT_PRESENT`), named in the prompt; a call to it, or
  ``not_present(...)`` written in the text with no usable answer;
- Set-of-Mark: the ``none`` mark, id :data:`NONE_MARK` (0; the marks are numbered from 1), named in the
  prompt and answered through ``select_element``;
- a family's own format (:mod:`dvoc_bench.protocol.native`), where the family documents one:

  * Qwen2.5-VL / Qwen3-VL: the ``computer_use`` tool's ``terminate`` action with ``"status": "failure"``
    (the tool's action list: "``terminate``: Terminate the current task and report its completion
    status", ``status`` one of ``success`` / ``failure``; Qwen's computer-use cookbook function, as
    reproduced in GUI-agent harnesses built on it);
  * UI-TARS-1.5: ``call_user()`` (its action space: "Submit the task and call the user when the task is
    unsolvable");
  * every other style (Claude's and OpenAI's computer use have no "not found" action: the model answers
    in words instead of acting; the grounding-only models document none): the word ``NOT_PRESENT`` alone,
    which the prompt asks for, and a ``[-1, -1]`` point (a pair no frame allows: the convention some
    grounding harnesses use for "no element").

A decline that names no absence (``I'm unable to…``) stays what it was, ``refusal`` or ``parse_error``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from dvoc_bench.models.base import Reply
from dvoc_bench.protocol.parse import Parsed

NOT_PRESENT_TOOL = "not_present"
"""Name of the harness's "not present" tool."""

NOT_PRESENT: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": NOT_PRESENT_TOOL,
        "description": "Say that no element on the screenshot matches the instruction (nothing is clicked).",
        "parameters": {
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "What you looked for and did not see."}
            },
            "required": [],
        },
    },
}
"""``not_present(reason)``: the answer that the target is not on the screen."""

NONE_MARK = 0
"""Set-of-Mark's ``none`` mark: the id that says no mark is the element (marks are numbered from 1)."""

TOOL_SENTENCE = (
    "If no element on the screenshot matches the instruction, do not guess: call not_present instead."
)
"""Added to a tool-call prompt that offers ``not_present``."""

SOM_SENTENCE = (
    f"If no element on the screenshot matches the instruction, call select_element with id {NONE_MARK} "
    "(none): do not pick the nearest mark."
)
"""Added to a Set-of-Mark prompt that offers the ``none`` mark."""

TOKEN = "NOT_PRESENT"
"""The word a family with no documented form is asked to reply with."""

_QWEN_TERMINATE = re.compile(
    r'"action"\s*:\s*"terminate"[^{}]{0,200}?"status"\s*:\s*"failure"'
    r'|"status"\s*:\s*"failure"[^{}]{0,200}?"action"\s*:\s*"terminate"',
    re.DOTALL,
)
_CALL_USER = re.compile(r"(?<![\w.])call_user\s*\(")
_TOKEN = re.compile(rf"(?<![\w]){TOKEN}(?![\w])")
_TOOL_IN_TEXT = re.compile(rf"(?<![\w.]){NOT_PRESENT_TOOL}\s*\(")

FORMS: dict[str, str] = {
    "qwen25vl": 'the computer_use action {"action": "terminate", "status": "failure"}',
    "qwen3vl": 'the computer_use action {"action": "terminate", "status": "failure"}',
    "uitars15": "the action call_user()",
}
"""The family's own "not present" form, as the prompt names it (every other style: :data:`TOKEN`)."""


def native_sentence(style: str) -> str:
    """The sentence added to a native-style prompt that offers the "not present" answer."""
    form = FORMS.get(style, f"the single word {TOKEN}")
    return f"If no element on the screenshot matches the request, do not guess: reply with {form} instead."


def offer_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tools`` with ``not_present`` added (a fresh copy)."""
    return [*tools, copy.deepcopy(NOT_PRESENT)]


def _not_present(detail: str) -> Parsed:
    return Parsed("not_present", f"not_present:{detail}", None, None)


def _call_names(reply: Reply) -> list[str]:
    out = []
    for call in reply.tool_calls or ():
        name = call.get("name") if isinstance(call, dict) else getattr(call, "name", None)
        if isinstance(name, str):
            out.append(re.split(r"[.:]", name.strip())[-1].lower())
    return out


def tool_reader(inner: Callable[[Reply], Parsed]) -> Callable[[Reply], Parsed]:
    """``inner`` (a tool-call reader) that also reads the ``not_present`` tool: a call to it wins over
    nothing usable; written in the text, only when no answer was read."""

    def read(reply: Reply) -> Parsed:
        names = _call_names(reply)
        parsed = inner(reply)
        if NOT_PRESENT_TOOL in names and not (parsed.usable and names and names[0] != NOT_PRESENT_TOOL):
            return _not_present("tool_call")
        if not parsed.usable and _TOOL_IN_TEXT.search(reply.text or ""):
            return _not_present("tool_in_text")
        return parsed

    return read


def native_reader(
    style: str, inner: Callable[[Reply], Parsed], text_of: Callable[[Reply], str]
) -> Callable[[Reply], Parsed]:
    """``inner`` (a family's reader) that also reads the family's "not present" form (module docs);
    ``text_of``: the reply's text with its parsed tool calls written back."""

    def read(reply: Reply) -> Parsed:
        parsed = inner(reply)
        values = parsed.values
        if values is not None and values.get("x") == -1 and values.get("y") == -1:
            return _not_present(f"{style}:minus_one")
        if parsed.usable:
            return parsed
        text = text_of(reply)
        if style in ("qwen25vl", "qwen3vl") and _QWEN_TERMINATE.search(text):
            return _not_present(f"{style}:terminate_failure")
        if style == "uitars15" and _CALL_USER.search(text):
            return _not_present(f"{style}:call_user")
        if _TOKEN.search(text):
            return _not_present(f"{style}:token")
        return parsed

    return read


def som_reader(inner: Callable[[Reply], Parsed]) -> Callable[[Reply], Parsed]:
    """``inner`` (``parse_select`` without the id check) that reads the ``none`` mark as not present."""

    def read(reply: Reply) -> Parsed:
        parsed = inner(reply)
        if parsed.values is not None and int(parsed.values.get("id", -1)) == NONE_MARK:
            return _not_present("none_mark")
        return parsed

    return read
