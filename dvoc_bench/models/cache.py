"""Content-addressed response cache: re-runs and re-analysis cost nothing.

The key is sha256 over the model identity (model id + api base), the messages exactly as sent (the image
replaced by the sha256 of its PNG bytes), the tools, ``tool_choice``, the request's parameters and seed,
and the client's own fingerprint (config sampling parameters, image resizing). The API key is never part
of it. Entries live in one folder per model identity, so two models never share an entry even if their
requests are identical:

    <cache dir>/<sha256(identity)[:16]>/<key[:2]>/<key>.json

An entry holds the reply (text, tool calls verbatim, tokens, the original cost and its source, the original
latency) and is written atomically (temporary file + rename). Only successful replies are stored; errors
never are. What is stored is the reply as the client returned it: bounded (``run.max_reply_chars`` of
the text and of each tool call's arguments, with the length and sha256 of the original) and redacted; an
entry is bounded and redacted again when read (entries of older versions were neither).
A reply served from the cache is marked ``cached=True``, costs ``0.0`` with
``cost_source="cache"`` (the original cost stays in the entry), and its latency is the lookup time.
A corrupt entry is ignored (and replaced by the next successful call), never fatal.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from dvoc_bench.core.jsonread import load_file
from dvoc_bench.core.redaction import redact_head, redact_value
from dvoc_bench.models.base import MAX_REPLY_CHARS, Model, ModelRequest, Reply, ToolCall, bound_reply
from dvoc_bench.models.options import CacheOptions

log = logging.getLogger(__name__)

__all__ = ["CacheOptions", "CachedModel", "ResponseCache", "request_key"]

FORMAT = 1
"""Version of the entry layout (part of the key: a new layout never reads old entries)."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def request_key(identity: str, req: ModelRequest, fingerprint: dict[str, Any] | None = None) -> str:
    """The cache key of ``req`` sent to the model ``identity`` (a hex sha256)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": req.text}]
    if req.image_png is not None:
        content.append({"type": "image_sha256", "sha256": _sha(req.image_png)})
    blob = {
        "format": FORMAT,
        "identity": identity,
        "messages": [{"role": "user", "content": content}],
        "tools": req.tools,
        "tool_choice": req.tool_choice,
        "params": req.params,
        "seed": req.seed,
        "client": fingerprint or {},
    }
    return _sha(json.dumps(blob, sort_keys=True, separators=(",", ":"), default=str).encode())


class ResponseCache:
    """Entries on disk under ``root`` (thread- and process-safe writes; last writer wins)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        """The cache directory."""

    def _path(self, identity: str, key: str) -> Path:
        return self.root / _sha(identity.encode())[:16] / key[:2] / f"{key}.json"

    def get(self, identity: str, key: str) -> dict[str, Any] | None:
        """The stored entry, or ``None`` (missing, unreadable, or of another model)."""
        path = self._path(identity, key)
        try:
            entry = load_file(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:  # not JSON, nested too deeply, too large: a miss
            log.warning("ignoring unreadable cache entry %s: %s", path, type(e).__name__)
            return None
        if not isinstance(entry, dict) or entry.get("identity") != identity or entry.get("key") != key:
            return None
        return entry

    def put(self, identity: str, key: str, reply: Reply, max_chars: int = MAX_REPLY_CHARS) -> None:
        """Store a successful reply atomically (bounded to ``max_chars`` per part and redacted)."""
        path = self._path(identity, key)
        # a no-op on what the client bounded already
        reply = bound_reply(reply, max_chars, redact_value, redact_head)
        entry = {
            "format": FORMAT,
            "identity": identity,
            "key": key,
            "stored_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "text": reply.text,
            "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
            "tokens_in": reply.tokens_in,
            "tokens_out": reply.tokens_out,
            "cost_usd": reply.cost_usd,
            "cost_source": reply.cost_source,
            "latency_s": reply.latency_s,
            "full_chars": reply.full_chars,
            "full_sha256": reply.full_sha256,
            "truncated": reply.truncated,
            "served_model": reply.served_model,
            "system_fingerprint": reply.system_fingerprint,
            "engine": reply.engine,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _reply_from(entry: dict[str, Any], lookup_s: float, max_chars: int = MAX_REPLY_CHARS) -> Reply:
    calls = [ToolCall(c.get("name"), c.get("arguments")) for c in entry.get("tool_calls") or []]
    truncated = entry.get("truncated")
    reply = Reply(
        text=entry.get("text"),
        tool_calls=calls,
        tokens_in=entry.get("tokens_in"),
        tokens_out=entry.get("tokens_out"),
        cost_usd=0.0,
        cost_source="cache",
        latency_s=lookup_s,
        cached=True,
        full_chars=entry.get("full_chars"),
        full_sha256=entry.get("full_sha256"),
        truncated=truncated if isinstance(truncated, dict) else None,
        served_model=entry.get("served_model"),  # who answered when the entry was stored
        system_fingerprint=entry.get("system_fingerprint"),
        engine=entry.get("engine"),
    )
    # entries of older versions: unbounded, unredacted
    return bound_reply(reply, max_chars, redact_value, redact_head)


class CachedModel:
    """A :class:`Model` answering from the cache when it can, else from ``inner`` (and storing the reply)."""

    def __init__(self, inner: Model, cache: ResponseCache, identity: str):
        self.inner = inner
        """The model that answers on a miss."""
        self.cache = cache
        """Where replies are stored."""
        self.identity = identity
        """Model id + api base (separates the models' entries)."""
        self.name = inner.name
        """Config name of the model."""
        self.simulated = inner.simulated
        """As the inner model."""
        fp = getattr(inner, "cache_fingerprint", None)
        self._fingerprint: dict[str, Any] = fp() if callable(fp) else {}
        self.max_reply_chars = int(getattr(inner, "max_reply_chars", MAX_REPLY_CHARS))
        """Bound on the replies stored and served (the inner client's)."""

    def key(self, req: ModelRequest) -> str:
        """Cache key of ``req`` for this model."""
        return request_key(self.identity, req, self._fingerprint)

    async def complete(self, request: ModelRequest) -> Reply:
        t0 = time.perf_counter()
        key = self.key(request)
        entry = self.cache.get(self.identity, key)
        if entry is not None:
            try:
                return _reply_from(entry, time.perf_counter() - t0, self.max_reply_chars)
            except Exception as e:  # an entry of the wrong shape is a miss, never a failed trial
                log.warning("ignoring malformed cache entry for %s: %s", self.name, type(e).__name__)
        reply = await self.inner.complete(request)
        try:
            self.cache.put(self.identity, key, reply, self.max_reply_chars)
        except OSError as e:  # a full disk must not fail the call
            log.warning("could not write cache entry for %s: %s", self.name, e)
        return reply
