"""Turn a model :class:`~dvoc_bench.models.base.Reply` into numbers, without ever raising.

Rules (checked against the ~2,050 recorded replies of the authors' runs, see
``tests/protocol/test_parse_upstream.py``):

1. **Tool calls first.** Calls are tried in order; the first one that yields both fields wins
   (status ``ok``). Arguments may be a dict, a JSON string, a JSON string inside a string, a JSON object
   embedded in other text, or a Python literal (``{'dx': 3}``). A wrapper such as
   ``{"arguments": {...}}`` or ``{"function": {...}}`` is opened. Key names are compared case-blind;
   extra keys are ignored.
2. **The fields decide, not the tool name.** A call named ``click_at`` that carries ``dx``/``dy`` is
   accepted for an offset and noted ``wrong_tool:click_at``. A provider prefix (``functions.``) is ignored.
3. **Numbers.** ints, floats and numeric strings (``"12"``, ``"12.5px"``, ``" -3 "``) are accepted; booleans,
   lists, dicts, ``null`` and words are not. NaN / infinity (also as strings) give ``non_finite``, magnitudes
   above 1e6 give ``too_large``. Such a value makes that call unusable (the next call or the text may still
   answer).
4. **Confidence** is optional: when it is absent, invalid or ``null`` the answer is still usable and
   ``confidence`` is ``None`` (callers treat ``None`` as 0 for gating). Values outside [0, 1] are clamped,
   so a percentage such as 90 becomes 1.0; an explicit percent string such as ``"90%"`` becomes 0.9.
5. **Text fallback** (status ``text_fallback``), only when no call is usable, in this order:
   a. a JSON object with the fields anywhere in the text (fenced or not);
   b. a call-like expression named ``report_offset`` or ``click_at`` with keyword arguments
      (``report_offset(dx=12, dy=-3, confidence=0.9)``), or with positional arguments when it is the
      expected tool (``click_at(412, 300, 0.8)``);
   c. names bound to numbers (``dx=12``, ``"dx": 12``, ``x: 494``).
   Every reading of a rule must agree, otherwise the reply is ``ambiguous_<rule>`` and no later rule is
   tried. Rule c is deliberately strict: a binding to anything but a plain number (``dx = 308 - 170 = 138``,
   ``x: about 450``) makes the name ambiguous, and numbers not bound to a name are never read ("the button
   is 3 of 5" is a ``parse_error``). Reasoning text is not read: only ``Reply.text``.
6. Anything else is ``parse_error``; ``parse_reply`` catches every exception (``internal_error:<type>``).

``detail`` is ``None`` or a ``;``-separated list of tags, each ``category`` or ``category:argument``:

- ok / text_fallback notes: ``multiple_tool_calls_first_used``, ``multiple_tool_calls_later_used``,
  ``wrong_tool:<name>``, ``missing_tool_name``, ``nested_arguments``, ``double_encoded_json``,
  ``json_in_arguments``, ``python_literal_arguments``, ``numbers_as_strings``, ``confidence_missing``,
  ``confidence_invalid``, ``confidence_percent``, ``confidence_clamped``; for text fallback the first tag
  is the rule, ``json_in_text``, ``function_call_in_text`` or ``numbers_in_text``, and
  ``tool_call_unusable`` is added when a call was present but unusable.
- parse_error reasons (one tag): ``empty_reply``, ``no_tool_call``, ``missing_field:<f>``,
  ``not_a_number:<f>``, ``non_finite:<f>``, ``too_large:<f>``, ``bad_json``, ``empty_arguments``,
  ``no_arguments``, ``arguments_not_object``, ``arguments_too_long``, ``ambiguous_numbers_in_text``,
  ``incomplete_numbers_in_text``, ``ambiguous_json_in_text``, ``ambiguous_function_call_in_text``,
  ``unknown_kind``, ``internal_error:<type>``.
  With a tool call present the reason of the first call is reported.
"""

from __future__ import annotations

import ast
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dvoc_bench.core.jsonread import loads, raw_decode
from dvoc_bench.core.records import ParseStatus
from dvoc_bench.models.base import Reply
from dvoc_bench.protocol.tools import FIELDS, TOOL_NAMES, ToolKind

MAX_MAGNITUDE = 1e6
"""Largest accepted absolute value of a coordinate or offset, in any frame."""

_MAX_TEXT = 100_000
"""Text beyond this many characters is not scanned."""
_MAX_LITERAL = 10_000
"""Longest argument string handed to ``ast.literal_eval``."""
_MAX_JSON_STARTS = 64
"""At most this many ``{`` positions of a text are tried as JSON starts."""

_CONFIDENCE_KEYS = ("confidence", "conf")
_WRAPPER_KEYS = ("arguments", "parameters", "params", "args", "input", "function")

_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_NUM_STRING_RE = re.compile(rf"^({_NUM})\s*(px|pixels?|%)?$", re.IGNORECASE)
_NON_FINITE_WORDS = frozenset(s + w for s in ("", "+", "-") for w in ("nan", "inf", "infinity"))
_CALL_RE = re.compile(r"(?<![\w.])([A-Za-z_][\w.:]*)\s*\(([^()]{1,400})\)")
_KEYWORD_ARG_RE = re.compile(r"""^["']?([A-Za-z_]\w*)["']?\s*[=:]\s*(.+)$""", re.DOTALL)
_KNOWN_TOOLS = frozenset(TOOL_NAMES.values())
"""Names a call-like expression in text must have (rule 5b)."""
_NAME_RE = re.compile(r"[^A-Za-z0-9_.\-]")


@dataclass
class Parsed:
    """The outcome of reading one reply."""

    status: ParseStatus
    """``ok`` (from a tool call), ``text_fallback`` (from the free text), ``parse_error``, or ``refusal``
    (a family reader's: the reply declined to answer, :mod:`dvoc_bench.protocol.native`)."""
    detail: str | None
    """Why / which rule: ``None`` or ``;``-separated tags ``category[:argument]`` (see module docs)."""
    values: dict[str, float] | None
    """``{"dx", "dy"}`` or ``{"x", "y"}``: raw numbers in the model's frame; ``None`` on parse_error."""
    confidence: float | None
    """Confidence clamped to [0, 1]; ``None`` when absent or invalid (the values may still be usable)."""

    @property
    def usable(self) -> bool:
        """True when ``values`` holds an answer."""
        return self.values is not None


@dataclass(frozen=True)
class _Num:
    """A coerced number, or why it could not be."""

    value: float | None = None
    """The number, when valid."""
    failure: str | None = None
    """``missing``, ``not_a_number``, ``non_finite`` or ``too_large``."""
    from_string: bool = False
    """The value was written as a string."""
    percent: bool = False
    """The string ended in ``%``."""


@dataclass(frozen=True)
class _Attempt:
    """The result of one way of reading an answer."""

    values: dict[str, float] | None = None
    """The fields, when every one of them was read."""
    confidence: float | None = None
    """Clamped confidence."""
    notes: tuple[str, ...] = ()
    """Tags describing how the answer was read."""
    failure: str | None = None
    """Why it could not be read (``None`` when nothing relevant was found at all)."""


@dataclass
class _Args:
    """Decoded tool-call arguments."""

    mapping: dict[str, Any] | None
    """The argument object, when one was found."""
    failure: str | None = None
    """Why no object was found."""
    notes: list[str] = field(default_factory=list)
    """How it was decoded."""


# --------------------------------------------------------------------------------------------- numbers


def _number(raw: Any, *, allow_percent: bool = False) -> _Num:
    """Coerce one JSON-ish value to a finite float of sane magnitude."""
    from_string = False
    percent = False
    if raw is None:
        return _Num(failure="missing")
    if isinstance(raw, bool):
        return _Num(failure="not_a_number")
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", "replace")
    if isinstance(raw, str):
        from_string = True
        s = raw.strip().strip("\"'").strip().replace("\u2212", "-")
        if s.lower() in _NON_FINITE_WORDS:
            return _Num(failure="non_finite", from_string=True)
        m = _NUM_STRING_RE.match(s)
        if m is None or (m.group(2) == "%" and not allow_percent):
            return _Num(failure="not_a_number", from_string=True)
        percent = m.group(2) == "%"
        raw = m.group(1)
    elif not isinstance(raw, numbers.Real):
        return _Num(failure="not_a_number")
    try:
        value = float(raw)
    except OverflowError:
        return _Num(failure="too_large", from_string=from_string)
    except (TypeError, ValueError):
        return _Num(failure="not_a_number", from_string=from_string)
    if not math.isfinite(value):
        return _Num(failure="non_finite", from_string=from_string)
    if abs(value) > MAX_MAGNITUDE:
        return _Num(failure="too_large", from_string=from_string)
    return _Num(value=value, from_string=from_string, percent=percent)


def _confidence(mapping: Mapping[str, Any]) -> tuple[float | None, list[str]]:
    """Read and clamp the optional confidence of an argument object."""
    raw = next((mapping[k] for k in _CONFIDENCE_KEYS if mapping.get(k) is not None), None)
    if raw is None:
        return None, ["confidence_missing"]
    num = _number(raw, allow_percent=True)
    if num.value is None:
        return None, ["confidence_invalid"]
    notes: list[str] = []
    value = num.value
    if num.percent:
        value /= 100.0
        notes.append("confidence_percent")
    if not 0.0 <= value <= 1.0:
        value = min(max(value, 0.0), 1.0)
        notes.append("confidence_clamped")
    return value, notes


def _lower_keys(obj: Mapping[Any, Any]) -> dict[str, Any]:
    return {str(k).strip().lower(): v for k, v in obj.items()}


def _from_mapping(obj: Mapping[Any, Any], kind: ToolKind, *, note_strings: bool = True) -> _Attempt:
    """Read the fields of ``kind`` (and the confidence) from an argument object."""
    mapping = _lower_keys(obj)
    values: dict[str, float] = {}
    any_string = False
    for name in FIELDS[kind]:
        if mapping.get(name) is None:
            return _Attempt(failure=f"missing_field:{name}")
        num = _number(mapping[name])
        if num.value is None:
            return _Attempt(failure=f"{num.failure}:{name}")
        values[name] = num.value
        any_string = any_string or num.from_string
    confidence, notes = _confidence(mapping)
    if any_string and note_strings:
        notes.insert(0, "numbers_as_strings")
    return _Attempt(values=values, confidence=confidence, notes=tuple(notes))


def _find_mapping(obj: Any, kind: ToolKind, depth: int = 0) -> tuple[dict[str, Any] | None, bool]:
    """The object holding the fields of ``kind``: ``obj`` itself or one nested in a wrapper key.

    Returns the object and whether it was nested.
    """
    if not isinstance(obj, Mapping):
        return None, False
    mapping = _lower_keys(obj)
    if any(name in mapping for name in FIELDS[kind]):
        return mapping, False
    if depth >= 3:
        return None, False
    for key in _WRAPPER_KEYS:
        inner = mapping.get(key)
        if isinstance(inner, str):
            inner = _loads(inner)
        found, _ = _find_mapping(inner, kind, depth + 1)
        if found is not None:
            return found, True
    return None, False


_INVALID = object()
"""Returned by :func:`_loads` for text that is not JSON."""


def _loads(s: str) -> Any:
    """The bounded reader's value (:func:`dvoc_bench.core.jsonread.loads`), :data:`_INVALID` instead of
    raising."""
    try:
        return loads(s)
    except ValueError:
        return _INVALID


# ------------------------------------------------------------------------------------------ tool calls


def _decode_arguments(raw: Any) -> _Args:
    """Turn the verbatim arguments of a call into an object, tolerating the usual encodings."""
    if isinstance(raw, Mapping):
        return _Args(dict(raw))
    if raw is None:
        return _Args(None, "no_arguments")
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return _Args(None, "arguments_not_object")
    s = raw.strip()
    if not s:
        return _Args(None, "empty_arguments")
    if len(s) > _MAX_TEXT:
        return _Args(None, "arguments_too_long")
    notes: list[str] = []
    obj = _loads(s)
    if isinstance(obj, str):
        obj = _loads(obj)
        notes.append("double_encoded_json")
    if obj is _INVALID:
        embedded = _first_json_object(s)
        if embedded is not None:
            obj = embedded
            notes.append("json_in_arguments")
    if obj is _INVALID and len(s) <= _MAX_LITERAL:
        try:
            obj = ast.literal_eval(s)
            notes.append("python_literal_arguments")
        except Exception:  # literal_eval raises many types (SyntaxError, ValueError, MemoryError...)
            obj = _INVALID
    if obj is _INVALID:
        return _Args(None, "bad_json")
    if not isinstance(obj, Mapping):
        return _Args(None, "arguments_not_object")
    return _Args(dict(obj), None, notes)


def _first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object embedded in ``text`` (e.g. inside a code fence)."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        obj, _ = raw_decode(text, start)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _short_name(name: str) -> str:
    """A tool name without provider prefixes (``functions.report_offset`` -> ``report_offset``)."""
    return re.split(r"[.:]", name.strip())[-1].lower()


def _name_note(name: Any, kind: ToolKind) -> list[str]:
    if not isinstance(name, str) or not name.strip():
        return ["missing_tool_name"]
    if _short_name(name) == TOOL_NAMES[kind]:
        return []
    return [f"wrong_tool:{_NAME_RE.sub('', name)[:40] or '?'}"]


def _call_parts(call: Any) -> tuple[Any, Any]:
    """``(name, arguments)`` of a :class:`ToolCall`, an OpenAI-style dict, or anything else."""
    if isinstance(call, Mapping):
        fn = call.get("function")
        if isinstance(fn, Mapping):
            return fn.get("name"), fn.get("arguments")
        return call.get("name"), call.get("arguments", call.get("args"))
    if hasattr(call, "arguments") or hasattr(call, "name"):
        return getattr(call, "name", None), getattr(call, "arguments", None)
    return None, call


def _from_tool_call(call: Any, kind: ToolKind) -> _Attempt:
    name, raw = _call_parts(call)
    args = _decode_arguments(raw)
    if args.mapping is None:
        return _Attempt(failure=args.failure)
    mapping, nested = _find_mapping(args.mapping, kind)
    if mapping is None:
        return _Attempt(failure=f"missing_field:{FIELDS[kind][0]}")
    att = _from_mapping(mapping, kind)
    if att.values is None:
        return att
    notes = _name_note(name, kind) + (["nested_arguments"] if nested else []) + args.notes
    return _Attempt(att.values, att.confidence, tuple(notes) + att.notes)


# ---------------------------------------------------------------------------------------------- text


def _unique(found: list[_Attempt], rule: str, failure: str | None) -> _Attempt:
    """The answer when every successful reading in the text agrees, else ``ambiguous_<rule>``."""
    if not found:
        return _Attempt(failure=failure)
    if any(att.values != found[0].values for att in found[1:]):
        return _Attempt(failure=f"ambiguous_{rule}")
    att = found[0]
    return _Attempt(att.values, att.confidence, (rule, *att.notes))


def _json_in_text(text: str, kind: ToolKind) -> _Attempt:
    """Rule 5a: a JSON object carrying the fields, anywhere in the text (all such objects must agree)."""
    found: list[_Attempt] = []
    failure: str | None = None
    pos = text.find("{")
    tries = 0
    while pos >= 0 and tries < _MAX_JSON_STARTS:
        tries += 1
        try:
            obj, end = raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        mapping, _ = _find_mapping(obj, kind)
        if mapping is not None:
            att = _from_mapping(mapping, kind)
            if att.values is not None:
                found.append(att)
            failure = failure or att.failure
        pos = text.find("{", max(end, pos + 1))
    return _unique(found, "json_in_text", failure)


def _call_in_text(text: str, kind: ToolKind) -> _Attempt:
    """Rule 5b: ``name(dx=.., dy=.., confidence=..)``, or positional arguments of the expected tool (all
    such calls must agree)."""
    found: list[_Attempt] = []
    failure: str | None = None
    order = (*FIELDS[kind], "confidence")
    for m in _CALL_RE.finditer(text):
        if _short_name(m.group(1)) not in _KNOWN_TOOLS:
            continue
        parts = [p.strip() for p in m.group(2).split(",") if p.strip()]
        keyword = [_KEYWORD_ARG_RE.match(p) for p in parts]
        if all(keyword):
            mapping = {k.group(1): k.group(2).strip() for k in keyword if k is not None}
        elif (
            not any(keyword)
            and _short_name(m.group(1)) == TOOL_NAMES[kind]
            and len(parts) in (2, 3)
            and all(_number(p).value is not None for p in parts)
        ):  # positional: only plain numbers, so a quoted signature ``click_at(x, y, confidence)`` is ignored
            mapping = dict(zip(order, parts, strict=False))
        else:
            continue
        if not any(name in _lower_keys(mapping) for name in FIELDS[kind]):
            continue
        att = _from_mapping(mapping, kind, note_strings=False)
        if att.values is not None:
            found.append(att)
        failure = failure or att.failure
    return _unique(found, "function_call_in_text", failure)


def _binding_re(name: str) -> re.Pattern[str]:
    """``name`` bound to a number by ``=`` or ``:``, the number not followed by arithmetic or more digits."""
    return re.compile(
        rf"""{_binding_prefix(name)}["']?({_NUM})\s*(?:px\b|pixels?\b)?["']?"""
        r"""(?![A-Za-z_]|\.?\d|\s*[-+*/×=]\s*[\d(])""",
        re.IGNORECASE,
    )


def _binding_prefix(name: str) -> str:
    """``name =`` / ``name:`` / ``"name":``, not preceded by a letter, digit or dot."""
    return rf"""(?<![\w.])["']?{name}["']?\s*[:=]\s*"""


_BINDINGS: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    name: (re.compile(_binding_prefix(name), re.IGNORECASE), _binding_re(name))
    for name in ("dx", "dy", "x", "y", "confidence", "conf")
}
"""Per name: (any binding, a binding to a clean number)."""


def _bound_values(text: str, names: tuple[str, ...]) -> set[str] | None:
    """The distinct numbers bound to any of ``names`` in ``text``; ``None`` when one of the bindings is
    not a clean number (``dx = 308 - 170 = 138``, ``x: about 450``)."""
    found: list[str] = []
    bindings = 0
    for name in names:
        any_binding, clean = _BINDINGS[name]
        bindings += sum(1 for _ in any_binding.finditer(text))
        found += [m.group(1) for m in clean.finditer(text)]
    if len(found) < bindings:
        return None
    return {str(float(v)) for v in found}


def _named_in_text(text: str, kind: ToolKind) -> _Attempt:
    """Rule 5c: ``dx=12``, ``"dx": 12``, ``x: 494``; every field bound to exactly one clean number."""
    mapping: dict[str, str] = {}
    for name in FIELDS[kind]:
        values = _bound_values(text, (name,))
        if values is None or len(values) > 1:
            return _Attempt(failure="ambiguous_numbers_in_text")
        if values:
            mapping[name] = values.pop()
    if not mapping:
        return _Attempt()
    if len(mapping) < len(FIELDS[kind]):
        return _Attempt(failure="incomplete_numbers_in_text")
    confidences = _bound_values(text, _CONFIDENCE_KEYS)
    if confidences is not None and len(confidences) == 1:
        mapping["confidence"] = confidences.pop()
    att = _from_mapping(mapping, kind, note_strings=False)
    if att.values is None:
        return att
    return _Attempt(att.values, att.confidence, ("numbers_in_text", *att.notes))


def _from_text(text: str, kind: ToolKind) -> _Attempt:
    text = text[:_MAX_TEXT].replace("\u2212", "-")
    failure: str | None = None
    for rule in (_json_in_text, _call_in_text, _named_in_text):
        att = rule(text, kind)
        if att.values is not None:
            return att
        failure = failure or att.failure
        if (att.failure or "").startswith("ambiguous_"):
            break  # conflicting readings end the search: a later rule would only pick one of them
    return _Attempt(failure=failure)


# ----------------------------------------------------------------------------------------------- reply


def _reply_text(reply: Any) -> str:
    """The free text of a reply, whatever shape it came in (string, content parts, bytes)."""
    raw = (
        reply.get("text", reply.get("content"))
        if isinstance(reply, Mapping)
        else getattr(reply, "text", None)
    )
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", "replace")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (list, tuple)):
        pieces = [p if isinstance(p, str) else p.get("text") if isinstance(p, Mapping) else None for p in raw]
        return "\n".join(p for p in pieces if isinstance(p, str))
    return ""


def _reply_calls(reply: Any) -> list[Any]:
    raw = reply.get("tool_calls") if isinstance(reply, Mapping) else getattr(reply, "tool_calls", None)
    if isinstance(raw, (list, tuple)):
        return list(raw)
    if raw is None:
        return []
    return [raw]


def _join(notes: list[str] | tuple[str, ...]) -> str | None:
    return ";".join(notes) if notes else None


def _parse(reply: Any, kind: Any) -> Parsed:
    if not isinstance(kind, str) or kind not in FIELDS:
        return Parsed("parse_error", "unknown_kind", None, None)
    calls = _reply_calls(reply)
    first_failure: str | None = None
    for i, call in enumerate(calls):
        att = _from_tool_call(call, kind)
        if att.values is not None:
            notes = list(att.notes)
            if len(calls) > 1:
                notes.insert(
                    0, "multiple_tool_calls_first_used" if i == 0 else "multiple_tool_calls_later_used"
                )
            return Parsed("ok", _join(notes), att.values, att.confidence)
        first_failure = first_failure or att.failure or "no_arguments"
    text = _reply_text(reply)
    att = _from_text(text, kind) if text.strip() else _Attempt()
    if att.values is not None:
        notes = list(att.notes) + (["tool_call_unusable"] if calls else [])
        return Parsed("text_fallback", _join(notes), att.values, att.confidence)
    reason = first_failure or att.failure or ("no_tool_call" if text.strip() else "empty_reply")
    return Parsed("parse_error", reason, None, None)


def parse_reply(reply: Reply, kind: ToolKind) -> Parsed:
    """Read the answer of ``kind`` (``offset``: dx, dy; ``point``: x, y) from ``reply``. Never raises."""
    try:
        return _parse(reply, kind)
    except Exception as exc:  # the contract is "never raise": any surprise becomes a parse error
        return Parsed("parse_error", f"internal_error:{type(exc).__name__}", None, None)
