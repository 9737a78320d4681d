"""The one model protocol every backend implements, and its request/reply types."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from dvoc_bench.core.geometry import Size
from dvoc_bench.core.records import ErrorClass
from dvoc_bench.core.text import safe_text, safe_value

MAX_REPLY_CHARS = 64000
"""Default bound on a reply's text and on each tool call's arguments (``run.max_reply_chars``)."""


CROP_FIELD = "dvoc_crop"
"""Request-body field that carries :attr:`ModelRequest.crop` over HTTP to the local simulator
(``dvoc_bench.serve``; sent for ``simulated: true`` configs only, never to a real provider)."""


@dataclass(frozen=True)
class ModelRequest:
    """One call: a single ``user`` turn with text and (optionally) one PNG image, plus tool schemas."""

    text: str
    """The prompt text."""
    image_png: bytes | None
    """The PNG the model sees (already annotated), or ``None`` for a text-only call."""
    image_size: Size
    """Pixel size of the image sent (the frame every answer is in; :mod:`dvoc_bench.draw.sending`)."""
    tools: list[dict[str, Any]]
    """Tool schemas in OpenAI format."""
    scene_id: str
    """Scene the image shows. Metadata only: a real model never sees it; the simulator uses it to look
    up ground truth."""
    seed: int
    """Per-call sampling seed (sent to providers that accept one; seeds the simulator)."""
    tool_choice: str | None = None
    """Optional ``tool_choice`` (``auto``, ``required``, ``none``)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Extra sampling parameters (temperature, max_tokens, ...)."""
    image_rgb: Any = None
    """The same image as an ``HxWx3`` uint8 array when the caller has it (saves a PNG decode in-process)."""
    crop: tuple[float, float, float, float] | None = None
    """The rectangle ``(x0, y0, x1, y1)`` of the scene's screenshot the image shows (scene pixels), ``None``
    for the whole screen. Metadata beside ``scene_id``: never sent to a real model, not part of the
    request hash (the image is); the simulator maps its truth through it."""

    def data_url(self) -> str | None:
        if self.image_png is None:
            return None
        return "data:image/png;base64," + base64.b64encode(self.image_png).decode("ascii")

    def messages(self) -> list[dict[str, Any]]:
        """The OpenAI-format messages: one user turn, text first, then the image."""
        content: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
        url = self.data_url()
        if url is not None:
            content.append({"type": "image_url", "image_url": {"url": url}})
        return [{"role": "user", "content": content}]

    def sha(self, model_identity: str) -> str:
        """Content hash of the request for ``model_identity`` (model id + api base)."""
        h = hashlib.sha256()
        h.update(model_identity.encode())
        h.update(self.text.encode())
        h.update(hashlib.sha256(self.image_png or b"").digest())
        h.update(json.dumps([self.tools, self.tool_choice, self.params, self.seed], sort_keys=True).encode())
        return h.hexdigest()


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the provider returned it."""

    name: str | None
    """Function name (may be missing or wrong in real replies)."""
    arguments: Any
    """Arguments verbatim: usually a JSON string, sometimes an object, sometimes garbage."""


@dataclass
class Reply:
    """What came back from one call."""

    text: str | None
    """Free-text content (``None`` when absent)."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Tool calls in the order received."""
    tokens_in: int | None = None
    """Prompt tokens, when known."""
    tokens_out: int | None = None
    """Completion tokens, when known."""
    cost_usd: float | None = None
    """Cost of the call, ``None`` when unknown."""
    cost_source: str | None = None
    """Where ``cost_usd`` came from (``litellm``, ``simulated``, ``cache``, ``bound``...)."""
    cost_bound_usd: float | None = None
    """The per-call bound the budget admitted the call with (set by the runner's budget; ``None`` without)."""
    usage_fault: str | None = None
    """What was wrong with the reported usage (missing, negative, non-finite), ``None`` when it was fine."""
    est_tokens_in: int | None = None
    """The harness's own estimate of the prompt tokens, set when the reported usage was far below it
    (:func:`dvoc_bench.models.pricing.under_reported`): ``cost_usd`` then prices the larger counts."""
    est_tokens_out: int | None = None
    """The same for the completion tokens (set together with ``est_tokens_in``)."""
    reported_cost_usd: float | None = None
    """What the reported counts would have cost, set when the estimate priced the call instead."""
    unread_attempts: int = 0
    """Earlier attempts of this call the provider answered with a reply that could not be read (set by the
    retry layer; the budget charges each its bound)."""
    latency_s: float = 0.0
    """Wall time of the call (simulated latency for the simulator)."""
    cached: bool = False
    """True when served from the response cache."""
    attempts: int = 1
    """Attempts this reply took (retries after 429s, timeouts or 5xx add to it)."""
    attempt_errors: list[ErrorClass] = field(default_factory=list)
    """Error class of every failed attempt before this reply."""
    retry_wait_s: float = 0.0
    """Seconds spent waiting in the gate and in backoff for this call."""
    finish_reason: str | None = None
    """Provider's finish reason (``stop``, ``tool_calls``, ``length``...), when it gave one."""
    full_chars: int | None = None
    """Characters of the reply as received, before :func:`bound_reply`: the text plus every tool call's
    arguments (JSON text of arguments that came as objects). ``None`` when not measured."""
    full_sha256: str | None = None
    """sha256 of the reply as received (:func:`reply_digest`), before bounding and redaction."""
    truncated: dict[str, dict[str, Any]] | None = None
    """Parts cut to the bound: ``{"text" | "tool_calls[i].arguments" | "tool_calls[i].name": {"chars": n,
    "sha256": h}}`` with the length and hash of the part as received; ``None`` when nothing was cut."""
    served_model: str | None = None
    """The model id the server says answered (the response's ``model``), when it says one."""
    system_fingerprint: str | None = None
    """The response's ``system_fingerprint`` (an OpenAI-compatible server's backend configuration)."""
    engine: str | None = None
    """The serving engine and its version as the server states them (``vllm 0.8.5``: vLLM's ``/version``),
    ``None`` when the server does not say."""


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)


def reply_digest(reply: Reply) -> str:
    """sha256 of ``{"text": ..., "tool_calls": [{"name": ..., "arguments": ...}]}`` as compact JSON with
    sorted keys (``ensure_ascii=False``, UTF-8): one hash for the whole reply as received."""
    blob = {
        "text": reply.text,
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
    }
    text = json.dumps(blob, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(_utf8(text)).hexdigest()


def bound_reply(
    reply: Reply,
    max_chars: int = MAX_REPLY_CHARS,
    clean: Callable[[Any], Any] | None = None,
    head: Callable[[str, int], str] | None = None,
) -> Reply:
    """``reply`` with at most ``max_chars`` characters of its text and of each tool call's name and
    arguments (the head is kept), and the length and sha256 of what was received (``full_chars``,
    ``full_sha256``, ``truncated``). ``clean`` (the redactor) is applied to the kept text, names and
    arguments; ``head(value, max_chars)`` cuts a part that is too long (the redactor's ``redact_head``: no
    piece of a key cut in two at the bound is kept), else the part is sliced. A reply that was bounded
    already keeps its original measurements."""
    measured = reply.full_sha256 is not None
    cut: dict[str, dict[str, Any]] = dict(reply.truncated or {})

    def keep(part: str, value: str) -> str:
        if len(value) <= max_chars:
            return value
        if part not in cut:
            cut[part] = {"chars": len(value), "sha256": hashlib.sha256(_utf8(value)).hexdigest()}
        return head(value, max_chars) if head is not None else value[:max_chars]

    full = reply.full_chars
    if not measured:
        full = len(reply.text or "") + sum(len(_args_text(c.arguments)) for c in reply.tool_calls)
    text = None if reply.text is None else keep("text", reply.text)
    calls = []
    for i, c in enumerate(reply.tool_calls):
        name = None if c.name is None else keep(f"tool_calls[{i}].name", str(c.name))
        args = c.arguments
        if args is not None and not isinstance(args, str | int | float | bool):
            as_text = _args_text(args)
            if len(as_text) > max_chars:
                args = as_text  # an object too large to keep: its head, as text
        if isinstance(args, str):
            args = keep(f"tool_calls[{i}].arguments", args)
        calls.append(ToolCall(name, args))
    if clean is not None:
        text = None if text is None else clean(text)
        calls = [ToolCall(None if c.name is None else clean(c.name), clean(c.arguments)) for c in calls]
    # a lone surrogate (valid JSON, no valid UTF-8) becomes U+FFFD here, where every reply passes, so the
    # cache, the steps and the records can always be written (core/text.py)
    text = None if text is None else safe_text(text)
    calls = [ToolCall(safe_value(c.name), safe_value(c.arguments)) for c in calls]
    return dataclasses.replace(
        reply,
        text=text,
        tool_calls=calls,
        full_chars=full,
        full_sha256=reply.full_sha256 if measured else reply_digest(reply),
        truncated=cut or None,
    )


class ModelCallError(Exception):
    """A call that failed on the transport or provider side. Its message must never contain a key."""

    def __init__(self, error_class: ErrorClass, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.error_class = error_class
        """``rate_limit | timeout | server | connection | auth | quota | bad_request | unknown``."""
        self.retry_after = retry_after
        """Seconds the provider asked us to wait, when it said."""
        self.attempts = 1
        """Attempts made before giving up (set by the retry layer)."""
        self.attempt_errors: list[ErrorClass] = [error_class]
        """Error class of every failed attempt (set by the retry layer)."""
        self.retry_wait_s = 0.0
        """Seconds spent waiting in the gate and in backoff (set by the retry layer)."""
        self.answered = 0
        """Attempts the provider answered with a reply that could not be read (it may have billed them)."""
        self.usage_fault: str | None = None
        """Why such a reply could not be read, when that is what failed."""
        self.cost_usd: float | None = None
        """What the budget charged the failed call (its bound per answered attempt); ``None`` otherwise."""
        self.cost_source: str | None = None
        """``bound`` when ``cost_usd`` is set."""
        self.cost_bound_usd: float | None = None
        """The per-call bound the budget admitted the call with."""


@runtime_checkable
class Model(Protocol):
    """Anything that answers a :class:`ModelRequest`."""

    name: str
    """Config name of the model."""
    simulated: bool
    """True for the simulator."""

    async def complete(self, request: ModelRequest) -> Reply:
        """Answer one request or raise :class:`ModelCallError`."""
        ...
