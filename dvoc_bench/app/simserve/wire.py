"""What the simulator server reads from a request and writes back, OpenAI-style (no sockets here).

Every bad input is an :class:`HTTPError` with a 4xx status and one line saying what is wrong; nothing a
client sends can make these functions raise anything else (a 500 is left for the simulator's own bugs).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from dvoc_bench.core.jsonread import JsonError, loads
from dvoc_bench.core.pixels import MAX_PIXELS, TooManyPixels, decode_rgb
from dvoc_bench.models.base import CROP_FIELD, Reply

MAX_NAME_CHARS = 128
"""Longest model name accepted (a longer one is a 400, never looked up)."""
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a model name looks like: a config's file stem (no path separator, no leading dot)."""
MAX_IMAGE_PIXELS = MAX_PIXELS
"""Largest image decoded (PIL's own decompression-bomb limit, :mod:`dvoc_bench.core.pixels`); a larger one is
a 400."""


class HTTPError(Exception):
    """An error answered as an OpenAI-style JSON error body."""

    def __init__(self, status: int, message: str, kind: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        """HTTP status code."""
        self.kind = kind
        """OpenAI-style ``error.type``."""
        self.headers = dict(headers or {})
        """Extra response headers (``Retry-After``)."""


def bad_request(message: str, status: int = 400) -> HTTPError:
    return HTTPError(status, message, "invalid_request_error")


def shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for an error message, cut to ``limit`` characters (a client's input is not echoed
    whole)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"… ({len(text)} characters)"


def model_name(name: Any) -> str:
    """The registry name a request's ``model`` field asks for (LiteLLM's ``openai/`` or a ``sim/`` prefix
    stripped), or a 400: a name is a config's file stem, never a path."""
    if not isinstance(name, str) or not name:
        raise bad_request("missing 'model'")
    if name.startswith(("openai/", "sim/")):
        name = name.split("/", 1)[1]
    if len(name) > MAX_NAME_CHARS:
        raise bad_request(f"model: a name of {len(name)} characters (at most {MAX_NAME_CHARS})")
    if not NAME_RE.fullmatch(name):
        raise bad_request(
            f"model: {shown(name)} is not a model name (a name from GET /v1/models; paths are not loaded)"
        )
    return name


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body, or a 400 (not JSON, nested too deep, not an object)."""
    try:
        body = loads(raw, "the body")
    except JsonError as e:
        why = "nested too deep" if e.kind == "depth" else "too large" if e.kind == "size" else "not JSON"
        raise bad_request(f"the body is {'JSON ' if e.kind == 'depth' else ''}{why}") from None
    if not isinstance(body, dict):
        raise bad_request("the body must be a JSON object")
    return body


def crop(v: Any) -> tuple[float, float, float, float] | None:
    """The zoom crop the client sent (``dvoc_crop``: ``[x0, y0, x1, y1]``, finite screenshot px), or a 400."""
    nums = isinstance(v, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in v
    )
    if v is not None and not (nums and len(v) == 4 and v[0] < v[2] and v[1] < v[3]):
        raise bad_request(f"'{CROP_FIELD}' must be [x0, y0, x1, y1] with x0 < x1 and y0 < y1")
    return None if v is None else (float(v[0]), float(v[1]), float(v[2]), float(v[3]))


def user_turn(messages: Any) -> tuple[str, bytes | None]:
    """Text and PNG bytes of the last user turn."""
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty list")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise bad_request("no user message")
    content = users[-1].get("content")
    if isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        raise bad_request("user content must be a string or a list of parts")
    texts, png = [], None
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part.get("type") == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            png = data_url_bytes(url)
    return "\n".join(texts), png


def data_url_bytes(url: Any) -> bytes:
    if not isinstance(url, str) or not url.startswith("data:image/") or ";base64," not in url:
        raise bad_request("images must be base64 data URLs")
    try:
        return base64.b64decode(url.split(";base64,", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        raise bad_request("the image data URL is not valid base64") from None


def decode(png: bytes) -> np.ndarray:
    """The RGB pixels of an image, or a 400 (undecodable, or more than :data:`MAX_IMAGE_PIXELS`: a
    decompression bomb is refused from its header, before its pixels are inflated)."""
    from PIL import Image, UnidentifiedImageError

    try:
        return decode_rgb(png)
    except TooManyPixels as e:
        raise bad_request(str(e)) from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise bad_request(f"the image is too large to decode ({e})") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise bad_request("the image cannot be decoded") from None


def completion(model: str, reply: Reply, sha: str) -> dict[str, Any]:
    """The ``chat.completion`` object of a simulator reply."""
    calls = [
        {
            "id": f"call_{sha[:12]}_{i}",
            "type": "function",
            "function": {
                "name": c.name,
                "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments),
            },
        }
        for i, c in enumerate(reply.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if calls:
        message["tool_calls"] = calls
    tin, tout = reply.tokens_in or 0, reply.tokens_out or 0
    return {
        "id": f"chatcmpl-{sha[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
    }


def wants_stream(body: Mapping[str, Any]) -> tuple[bool, bool]:
    """``(stream, include_usage)`` of a request, or a 400 when ``stream`` or ``stream_options`` is not of
    its type."""
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad_request("'stream' must be true or false")
    opts = body.get("stream_options") or {}
    if not isinstance(opts, dict):
        raise bad_request("'stream_options' must be an object")
    return stream, bool(opts.get("include_usage")) and stream


def sse(answer: Mapping[str, Any], include_usage: bool) -> bytes:
    """A ``chat.completion`` as the server-sent events a streaming client reads: a ``chat.completion.chunk``
    with the role and text, one per tool call, one with the finish reason, the usage when asked
    (``stream_options.include_usage``), then ``data: [DONE]``."""
    (choice,) = answer["choices"]
    msg = choice["message"]
    head = {k: answer[k] for k in ("id", "created", "model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out = {**head, "object": "chat.completion.chunk"}
        return {**out, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": msg.get("content") or ""})]
    calls = msg.get("tool_calls") or []
    events += [chunk({"tool_calls": [{"index": i, **call}]}) for i, call in enumerate(calls)]
    events.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": answer["usage"]})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
