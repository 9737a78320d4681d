"""A fault-injecting wrapper around any Model: the provider misbehaviours a sweep must survive.

It plays the *server* side: a rolling-window rate limit answered with 429 + Retry-After, a share of 5xx
errors, calls that hang past any timeout, and an auth failure. Used by the scheduler tests and the
scheduler benchmark; the HTTP server (``dvoc_bench.serve``) offers the same faults over a real transport.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from dataclasses import dataclass

from dvoc_bench.models.base import Model, ModelCallError, ModelRequest, Reply


@dataclass(frozen=True)
class Faults:
    """What to inject."""

    rpm: float | None = None
    """Server-side limit: requests accepted per rolling ``window_s``; beyond it, 429."""
    window_s: float = 60.0
    """Length of the server's rolling window (60 s for a per-minute quota; shorter for bursty tests)."""
    retry_after_s: float | None = 1.0
    """Retry-After sent with a 429 (``None``: the header is missing)."""
    p_server_error: float = 0.0
    """Share of requests answered with a 500."""
    p_hang: float = 0.0
    """Share of requests that never answer (sleep ``hang_s``)."""
    hang_s: float = 3600.0
    """How long a hanging request sleeps."""
    auth_fail: bool = False
    """Every request fails with 401."""
    latency_s: float = 0.0
    """Extra latency of every successful call."""


class FaultyModel:
    """Wraps ``inner``; counts what it injected in ``self.counts``."""

    def __init__(self, inner: Model, faults: Faults, *, seed: int = 0, clock=time.monotonic):
        self.inner = inner
        self.faults = faults
        self.name = inner.name
        self.simulated = inner.simulated
        self.counts = {"requests": 0, "ok": 0, "429": 0, "500": 0, "hang": 0, "401": 0}
        self._rng = random.Random(seed)
        self._clock = clock
        self._window: deque[float] = deque()

    async def complete(self, request: ModelRequest) -> Reply:
        f = self.faults
        self.counts["requests"] += 1
        if f.auth_fail:
            self.counts["401"] += 1
            raise ModelCallError("auth", "401 invalid credentials")
        now = self._clock()
        while self._window and self._window[0] <= now - f.window_s:
            self._window.popleft()
        if f.rpm is not None and len(self._window) >= f.rpm:
            self.counts["429"] += 1
            raise ModelCallError("rate_limit", "429 too many requests", retry_after=f.retry_after_s)
        self._window.append(now)
        u = self._rng.random()
        if u < f.p_server_error:
            self.counts["500"] += 1
            raise ModelCallError("server", "500 internal error")
        if u < f.p_server_error + f.p_hang:
            self.counts["hang"] += 1
            await asyncio.sleep(f.hang_s)
        if f.latency_s:
            await asyncio.sleep(f.latency_s)
        reply = await self.inner.complete(request)
        self.counts["ok"] += 1
        return reply
