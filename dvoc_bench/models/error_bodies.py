"""Provider error bodies cut where they arrive, before LiteLLM or the OpenAI SDK read them.

A failed call's body is read whole by the SDK, matched by LiteLLM's exception-mapping regexes and carried
into ``traceback.format_exc`` on the event loop: a 30 MB HTML 502 cost minutes there, and a 200 KB gzip
error body inflated to 2.45 GB. Every HTTP transport LiteLLM builds (``AsyncHTTPHandler``'s, which its
OpenAI-compatible clients use too) is wrapped (:func:`install`) so that an answer with status 400 or more
reaches them as at most :data:`ERROR_BODY_BYTES` bytes: the raw body is read only until that much is
decoded (at most :data:`ERROR_RAW_BYTES` of it), ``gzip`` and ``deflate`` are inflated here with a bound on
the output, the rest of the body is never read (the connection is closed), and the answer goes on without
``Content-Encoding``. Successful answers pass untouched.
"""

from __future__ import annotations

import zlib
from typing import Any

import httpx

ERROR_BODY_BYTES = 64 * 1024
"""Most bytes of an error body LiteLLM sees (the client reads 8 KB of the error text it makes)."""
ERROR_RAW_BYTES = 1024 * 1024
"""Most bytes of an error body read from the network."""
_DROP = {"content-encoding", "content-length", "transfer-encoding"}


async def bounded_body(response: httpx.Response, limit: int = ERROR_BODY_BYTES) -> bytes:
    """At most ``limit`` bytes of ``response``'s decoded body, reading its raw stream only that far
    (``gzip``/``deflate`` inflated with a bounded output; other encodings kept as they came); the stream
    is closed after."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    inflate = zlib.decompressobj(32 + zlib.MAX_WBITS) if encoding in ("gzip", "x-gzip", "deflate") else None
    out, raw = bytearray(), 0
    try:
        async for chunk in response.stream:  # type: ignore[union-attr]
            raw += len(chunk)
            if inflate is None:
                out += chunk[: limit - len(out)]
            else:
                try:
                    out += inflate.decompress(chunk, limit - len(out))
                except zlib.error:  # a broken or raw-deflate stream: keep what came undecoded
                    out += chunk[: limit - len(out)]
                    inflate = None
            if len(out) >= limit or raw >= ERROR_RAW_BYTES:
                break
    finally:
        await response.aclose()
    return bytes(out)


class BoundedErrorTransport(httpx.AsyncBaseTransport):
    """A transport whose error answers (status >= 400) carry at most :data:`ERROR_BODY_BYTES` bytes."""

    def __init__(self, inner: httpx.AsyncBaseTransport):
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if response.status_code < 400:
            return response
        body = await bounded_body(response)
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _DROP]
        return httpx.Response(
            response.status_code,
            headers=headers,
            content=body,
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def install(litellm: Any) -> None:
    """Wrap every async transport LiteLLM creates from now on (idempotent)."""
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    create = AsyncHTTPHandler._create_async_transport
    if getattr(create, "dvoc_bounded", False):
        return

    def bounded(*args: Any, **kwargs: Any) -> httpx.AsyncBaseTransport:
        inner = create(*args, **kwargs)
        if inner is None:  # LiteLLM leaves httpx its default transport: the same, made here
            ctx, verify = kwargs.get("ssl_context"), kwargs.get("ssl_verify")
            inner = httpx.AsyncHTTPTransport(
                verify=ctx if ctx is not None else (True if verify is None else verify)
            )
        return BoundedErrorTransport(inner)

    bounded.dvoc_bounded = True  # type: ignore[attr-defined]
    AsyncHTTPHandler._create_async_transport = staticmethod(bounded)  # type: ignore[method-assign,assignment]
