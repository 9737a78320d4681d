"""Text that can always be written: a lone surrogate (``"\\ud800"`` is valid JSON, yet no UTF-8 encoder
takes it) becomes U+FFFD where text enters the harness (a model's reply, a dataset's field, an imported row),
so records, the cache, steps and the console stay valid UTF-8 JSON downstream.

Python strings cannot hold a valid surrogate pair (JSON's ``"\\ud83d\\ude00"`` decodes to one code point),
so every surrogate code point in a ``str`` is a lone one.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes (the Unicode replacement character)."""

MAX_DEPTH = 64
"""Nesting depth :func:`safe_value` walks; anything deeper becomes its (safe) text."""


def safe_text(s: str) -> str:
    """``s`` with every lone surrogate replaced by U+FFFD (``s`` itself when it has none)."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, s)
    return s


def safe_value(value: Any, depth: int = 0) -> Any:
    """A JSON-like value (strings, lists, mappings) with :func:`safe_text` applied to every string in it,
    keys included; values nested deeper than :data:`MAX_DEPTH` are replaced by their text."""
    if isinstance(value, str):
        return safe_text(value)
    if depth >= MAX_DEPTH and isinstance(value, dict | list | tuple):
        return safe_text(repr(value)[:1000])
    if isinstance(value, dict):
        return {safe_value(k, depth + 1): safe_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_value(v, depth + 1) for v in value]
    return value
