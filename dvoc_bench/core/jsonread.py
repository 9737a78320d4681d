"""The one JSON reader for everything the harness reads back (records, run files, the response cache, the
OCR cache, imports, the authors' records, dataset annotations): bounded in size and in nesting depth, so no
input can make a reader of ours raise ``RecursionError`` or ``MemoryError``.

- Size: a document is refused above :data:`MAX_DOCUMENT_BYTES` (checked on the file's size, then read at
  most one byte past it); a line of a JSONL file above :data:`MAX_LINE_BYTES` is passed over without being
  held (:func:`bounded_lines` reads it in pieces).
- Depth: the nesting depth is counted before parsing (strings cut out by one regex, then the brackets
  counted), and anything nested deeper than :data:`MAX_DEPTH` is refused; the parser never recurses that
  far, nor does any code walking what it returned.
- Text: a lone surrogate escape (``"\\ud800"``, valid JSON, yet no UTF-8 encoder takes it) comes back as
  U+FFFD (:mod:`dvoc_bench.core.text`), so what was read can always be written again.

What does not pass raises :class:`JsonError`: one line, ``<where>: <why>``. It is a ``ValueError``, so a
reader that treated a torn line or a bad file as unreadable (``except ValueError``) does the same with one
nested too deeply or too large.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from dvoc_bench.core.text import MAX_DEPTH, safe_value

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "MAX_LINE_BYTES",
    "JsonError",
    "array_items",
    "bounded_lines",
    "copy_range",
    "load_file",
    "loads",
    "raw_decode",
    "too_deep",
]

MAX_LINE_BYTES = 16 << 20
"""Largest line of a JSONL file read (16 MiB; a step's line, with replies bounded by ``run.max_reply_chars``,
stays under 1 MiB)."""
MAX_DOCUMENT_BYTES = 256 << 20
"""Largest JSON document read whole (256 MiB; the authors' largest file is 4 MB)."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_STRING_B = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


_DECODER = json.JSONDecoder()


class JsonError(ValueError):
    """JSON we will not read: not JSON, not UTF-8, nested too deeply or too large (one line, naming where)."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind
        """``syntax`` (not JSON), ``encoding`` (not UTF-8), ``depth`` or ``size``."""


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def too_deep(text: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON text nests deeper than ``limit``: the strings are cut out (so brackets inside them do not
    count), then the depth after each bracket is a running sum; linear, in C."""
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= limit:  # cannot nest deeper than it opens
            return False
        bare = _STRING.sub("", text).encode("ascii", "ignore")  # only the brackets matter now
    else:
        if text.count(b"[") + text.count(b"{") <= limit:
            return False
        bare = _STRING_B.sub(b"", text)
    brackets = np.frombuffer(bare.translate(None, _NOT_BRACKET), dtype=np.uint8)
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1).astype(np.int32)
    return bool(steps.size) and int(np.cumsum(steps).max()) > limit


def loads(
    data: str | bytes,
    where: str = "JSON",
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """The value of JSON text, or :class:`JsonError` (``<where>: <why>``, one line). Bytes must be UTF-8."""
    if len(data) > max_bytes:
        raise JsonError(f"{where}: larger than {_mib(max_bytes)} ({len(data)} bytes); not read", "size")
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise JsonError(f"{where}: not UTF-8 text (byte {e.start})", "encoding") from None
    else:
        text = data
    if too_deep(text, max_depth):
        raise JsonError(f"{where}: JSON nested too deeply (more than {max_depth} levels); not read", "depth")
    try:
        value = json.loads(text)
    except RecursionError:  # cannot happen within max_depth; kept so that it never escapes
        raise JsonError(f"{where}: JSON nested too deeply; not read", "depth") from None
    except ValueError as e:
        msg = getattr(e, "msg", None) or str(e)
        pos = ""
        if isinstance(e, json.JSONDecodeError):  # a line read alone is "line 1": say its column only
            pos = f" at line {e.lineno} column {e.colno}" if "\n" in text.strip() else f" at column {e.colno}"
        raise JsonError(f"{where}: not JSON ({msg}{pos})", "syntax") from None
    if _SURROGATE_ESCAPE.search(text):
        value = safe_value(value)
    return value


def raw_decode(text: str, pos: int = 0, *, max_depth: int = MAX_DEPTH) -> tuple[Any, int]:
    """The first JSON value of ``text`` at ``pos`` and where it ends (``json.JSONDecoder.raw_decode``),
    bounded like :func:`loads` (what follows ``pos`` is counted, so nesting deeper than ``max_depth``
    anywhere after it refuses): :class:`JsonError` when there is none."""
    if too_deep(text[pos:], max_depth):
        raise JsonError(f"JSON nested too deeply (more than {max_depth} levels); not read", "depth")
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except RecursionError:
        raise JsonError("JSON nested too deeply; not read", "depth") from None
    except ValueError as e:
        raise JsonError(f"not JSON ({getattr(e, 'msg', e)})", "syntax") from None
    return (safe_value(value) if _SURROGATE_ESCAPE.search(text, pos, end) else value), end


def load_file(path: Path | str, *, max_bytes: int = MAX_DOCUMENT_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """The value of a JSON file, read whole; :class:`JsonError` naming the file when it is not JSON, not
    UTF-8, nested too deeply or larger than ``max_bytes`` (checked before it is read). ``OSError`` (absent,
    unreadable) passes through."""
    path = Path(path)
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise JsonError(f"{path}: larger than {_mib(max_bytes)} ({size} bytes); not read", "size")
        data = f.read(max_bytes + 1)  # a file growing meanwhile (or a special file) is bounded too
    return loads(data, str(path), max_bytes=max_bytes, max_depth=max_depth)


def array_items(
    f: IO[bytes], where: str, *, max_item_bytes: int = MAX_LINE_BYTES, chunk: int = 1 << 16
) -> Iterator[Any]:
    """The elements of the JSON array a binary file holds, one at a time: the file is read ``chunk`` bytes
    at a time (more while one element is cut: each read as large as what is held) and only the element
    being parsed is held (one longer than ``max_item_bytes`` is refused), so
    a long array costs one element's memory. Each element is bounded like :func:`loads`. :class:`JsonError`
    (``<where>: element <i>: <why>``, or ``<where>: <why>`` for the array itself) on what is not one array."""
    import codecs

    decode = codecs.getincrementaldecoder("utf-8")()
    buf, pos, done, read = "", 0, False, 0

    def more(size: int = chunk) -> bool:
        nonlocal buf, pos, done, read
        if done:
            return False
        raw = f.read(size)
        try:
            text = decode.decode(raw, final=not raw)
        except UnicodeDecodeError as e:
            raise JsonError(f"{where}: not UTF-8 text (byte {read + e.start})", "encoding") from None
        read += len(raw)
        done = not raw
        buf, pos = buf[pos:] + text, 0
        return True

    def skip() -> str:  # the next character that is not white space ("" at the end)
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos < len(buf) or not more():
                return buf[pos] if pos < len(buf) else ""

    if skip() != "[":
        raise JsonError(f"{where}: not a JSON array", "syntax")
    pos += 1
    i = 0
    while True:
        c = skip()
        if c == "]" and i == 0:
            return
        if c == "":
            raise JsonError(f"{where}: element {i}: the array is not closed", "syntax")
        value: Any = None
        while True:
            try:
                value, end = raw_decode(buf, pos)
            except JsonError as e:  # cut at the buffer's end (a string cut there may even look deep)
                if len(buf) - pos > max_item_bytes:
                    raise JsonError(f"{where}: element {i}: longer than {_mib(max_item_bytes)}; not read",
                                    "size") from None  # fmt: skip
                if done:
                    raise JsonError(f"{where}: element {i}: {e}", e.kind) from None
                end = -1
            if end - pos > max_item_bytes or (end < 0 and len(buf) - pos > max_item_bytes):
                raise JsonError(f"{where}: element {i}: longer than {_mib(max_item_bytes)}; not read", "size")
            if end >= 0 and (end < len(buf) or done):  # a number cut at the buffer's end is not yet one
                break
            more(max(chunk, len(buf) - pos))  # an element read again at most log(size) times
        pos = end
        yield value
        i += 1
        c = skip()
        if c == "]":
            return
        if c != ",":
            why = "the array is not closed" if c == "" else "expected ',' or ']' after it"
            raise JsonError(f"{where}: element {i - 1}: {why}", "syntax")
        pos += 1


def bounded_lines(f: IO[bytes], max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes, int]]:
    """``(offset, raw, size)`` of every line of a binary file: ``raw`` as on disk (with its newline when it
    has one) and ``size`` its length; a line longer than ``max_bytes`` is never held whole: its ``raw`` is
    its first ``max_bytes`` bytes (``len(raw) < size``) and the rest is read in pieces and passed over."""
    offset = f.tell()
    while True:
        raw = f.readline(max_bytes + 1)
        if not raw:
            return
        size = len(raw)
        if size > max_bytes and not raw.endswith(b"\n"):
            raw = raw[:max_bytes]
            while True:
                piece = f.readline(1 << 20)
                size += len(piece)
                if not piece or piece.endswith(b"\n"):
                    break
        yield offset, raw, size
        offset += size


def copy_range(path: Path | str, offset: int, size: int, out: IO[bytes]) -> None:
    """Copy ``size`` bytes of ``path`` from ``offset`` into ``out`` in pieces (a line too long to hold)."""
    with Path(path).open("rb") as f:
        f.seek(offset)
        left = size
        while left > 0:
            piece = f.read(min(left, 1 << 20))
            if not piece:
                return
            out.write(piece)
            left -= len(piece)
