"""Provider gates and call-level retries.

Every model call passes its provider's :class:`RateGate` and is retried, at the *call* level, by
:class:`GatedModel` (tenacity, one layer only):

- ``rate_limit`` (429): the whole provider cools down for the Retry-After the server sent (default
  ``default_wait_s`` = 30 s), then the call is retried, at most ``rate_limit_retries`` times (3, as the
  paper's harness). Unlike that harness, the trial keeps its completed steps and nothing is re-run.
- ``timeout``, ``server`` (5xx), ``connection``: exponential backoff with full jitter (base
  ``backoff_base_s``, cap ``backoff_max_s``), at most ``transient_retries`` times.
- ``auth``, ``quota``, ``bad_request`` and anything else: no retry. ``auth`` and ``quota`` also mark the
  provider dead: its remaining trials are recorded as ``skipped`` with the reason.

The gate is proactive: it never sends a request the configured quota forbids. Requests are spaced at
least ``60 / rpm`` seconds apart (times a 1 % safety margin): a token bucket with a burst of one, which
never exceeds ``rpm`` in any 60 s window and so is safe against fixed-window, sliding-window and
token-bucket servers alike, and whose wall time for ``n`` calls is the lower bound ``n / rate``. The send
times of the trailing 24 h are kept for ``rpd``; reaching it ends the provider as ``quota``. A cap on calls
in flight (``max_concurrent``) and a per-call timeout complete it. One provider = one gate: several keys
of one provider are never rotated to dodge a quota. Trials of different providers interleave by
construction, because only the gate of the waiting provider blocks.

Rates are per process. A Hydra multirun launches one process per job, each with its own gates: split the
provider's rate with ``scheduler.rate_split=N`` (each job gets ``rpm/N`` and ``rpd/N``), or run API sweeps
as one job with list overrides, which interleaves providers in one process.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace

from tenacity import AsyncRetrying, RetryCallState

from dvoc_bench.core.declare import Declared, NonNegFloat, NonNegInt
from dvoc_bench.core.records import ErrorClass
from dvoc_bench.models.base import Model, ModelCallError, ModelRequest, Reply

TRANSIENT = frozenset({"timeout", "server", "connection"})
"""Error classes retried with exponential backoff."""
FATAL_FOR_PROVIDER: frozenset[ErrorClass] = frozenset({"auth", "quota"})
"""Error classes that end the provider for this run."""
SPACING_MARGIN = 1.01
"""Requests are spaced by ``SPACING_MARGIN * 60 / rpm`` seconds (1 % headroom against clock jitter)."""


class RetryPolicy(Declared):
    """Call-level retry knobs (``retry:`` in the config)."""

    rate_limit_retries: NonNegInt = 3
    """Retries after a 429 (the paper's cap)."""
    default_wait_s: NonNegFloat = 30.0
    """Cooldown after a 429 without Retry-After."""
    max_wait_s: NonNegFloat = 600.0
    """Upper bound on any single cooldown (a server may ask for hours)."""
    transient_retries: NonNegInt = 3
    """Retries after a timeout, 5xx or connection error."""
    backoff_base_s: NonNegFloat = 1.0
    """First backoff of the exponential schedule."""
    backoff_max_s: NonNegFloat = 30.0
    """Cap of the exponential schedule."""


@dataclass(frozen=True)
class ProviderLimits:
    """What the gate enforces for one provider."""

    rpm: float | None = None
    """Requests per rolling minute (``None``: no limit)."""
    rpd: float | None = None
    """Requests per rolling day (``None``: no limit); reaching it ends the provider as quota."""
    max_concurrent: int | None = None
    """Calls in flight at once (``None``: no cap)."""
    timeout_s: float | None = None
    """Timeout of one call (``None``: none)."""

    def split(self, n: int) -> ProviderLimits:
        """The share of one of ``n`` processes using the same provider."""
        if n <= 1:
            return self
        return replace(
            self,
            rpm=None if self.rpm is None else self.rpm / n,
            rpd=None if self.rpd is None else self.rpd / n,
        )


@dataclass
class GateStats:
    """Counters of one gate, for progress and benchmarks."""

    sent: int = 0
    """Requests sent (attempts)."""
    rate_limited: int = 0
    """429s received."""
    failed: int = 0
    """Attempts that failed for any reason."""
    waited_s: float = 0.0
    """Time callers spent waiting in the gate (proactive and cooldown)."""


class RateGate:
    """One provider's gate: rolling-window quotas, a concurrency cap, cooldown and a dead flag."""

    def __init__(
        self,
        name: str,
        limits: ProviderLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.name = name
        self.limits = limits
        self.clock = clock
        self.sleep = sleep
        self.dead: str | None = None
        """Why the provider is unusable for the rest of the run (``None`` while alive)."""
        self.dead_class: ErrorClass | None = None
        self.stats = GateStats()
        self._last: float | None = None
        self._day: deque[float] = deque()
        self._cool_until = 0.0
        self._lock = asyncio.Lock()
        self._sem = asyncio.Semaphore(limits.max_concurrent) if limits.max_concurrent else None

    def kill(self, error_class: ErrorClass, reason: str) -> None:
        if self.dead is None:
            self.dead, self.dead_class = reason, error_class

    def cool_down(self, seconds: float) -> None:
        """Hold every request of this provider for ``seconds`` (after a 429)."""
        self._cool_until = max(self._cool_until, self.clock() + seconds)

    async def acquire(self) -> float:
        """Wait until a request may be sent, record it, and return the seconds waited."""
        t0 = self.clock()
        async with self._lock:  # FIFO: one waiter at a time decides its send time
            while True:
                if self.dead is not None:
                    raise ModelCallError("provider_dead", f"provider {self.name} is unusable: {self.dead}")
                now = self.clock()
                wait = self._cool_until - now
                lim = self.limits
                while self._day and self._day[0] <= now - 86400.0:
                    self._day.popleft()
                if lim.rpd is not None and len(self._day) >= lim.rpd:
                    self.kill("quota", f"the configured daily quota of {lim.rpd:g} requests is used up")
                    continue
                if lim.rpm is not None and self._last is not None:
                    wait = max(wait, self._last + SPACING_MARGIN * 60.0 / lim.rpm - now)
                if wait <= 0:
                    self._last = now
                    self._day.append(now)
                    self.stats.sent += 1
                    waited = now - t0
                    self.stats.waited_s += waited
                    return waited
                await self.sleep(wait)

    @asynccontextmanager
    async def slot(self):
        """Hold one of the provider's concurrent-call slots."""
        if self._sem is None:
            yield
            return
        async with self._sem:
            yield


@dataclass
class _CallLog:
    errors: list[ModelCallError] = field(default_factory=list)
    waited_s: float = 0.0


class GatedModel:
    """A :class:`Model` whose calls pass a gate and are retried per :class:`RetryPolicy`."""

    def __init__(self, inner: Model, gate: RateGate, policy: RetryPolicy, *, seed: int = 0):
        self.inner = inner
        self.gate = gate
        self.policy = policy
        self.name = inner.name
        self.simulated = inner.simulated
        self._rng = random.Random(seed)  # jitter only; outcomes never depend on it

    def _should_retry(self, log: _CallLog) -> Callable[[RetryCallState], bool]:
        def check(state: RetryCallState) -> bool:
            exc = state.outcome.exception() if state.outcome else None
            if not isinstance(exc, ModelCallError):
                return False
            n_rate = sum(e.error_class == "rate_limit" for e in log.errors)
            n_tr = sum(e.error_class in TRANSIENT for e in log.errors)
            if exc.error_class == "rate_limit":
                return n_rate <= self.policy.rate_limit_retries
            if exc.error_class in TRANSIENT:
                return n_tr <= self.policy.transient_retries
            return False

        return check

    def _wait(self, log: _CallLog) -> Callable[[RetryCallState], float]:
        def wait(state: RetryCallState) -> float:
            exc = log.errors[-1]
            p = self.policy
            if exc.error_class == "rate_limit":
                # the cooldown is applied to the gate, so every caller of this provider waits it out
                self.gate.cool_down(
                    min(exc.retry_after if exc.retry_after is not None else p.default_wait_s, p.max_wait_s)
                )
                return 0.0
            n = sum(e.error_class in TRANSIENT for e in log.errors)
            w = self._rng.uniform(0, min(p.backoff_max_s, p.backoff_base_s * 2 ** (n - 1)))
            log.waited_s += w
            return w

        return wait

    async def complete(self, request: ModelRequest) -> Reply:
        log = _CallLog()
        timeout = self.gate.limits.timeout_s
        retrying = AsyncRetrying(
            retry=self._should_retry(log),
            wait=self._wait(log),
            sleep=self.gate.sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    log.waited_s += await self.gate.acquire()
                    async with self.gate.slot():
                        try:
                            reply = await asyncio.wait_for(self.inner.complete(request), timeout)
                        except TimeoutError:
                            err = ModelCallError("timeout", f"no reply within {timeout:g} s")
                            self._note(log, err)
                            raise err from None
                        except ModelCallError as err:
                            self._note(log, err)
                            raise
        except ModelCallError as err:
            err.attempts = max(len(log.errors), 1)
            err.attempt_errors = [e.error_class for e in log.errors] or [err.error_class]
            err.retry_wait_s = log.waited_s
            err.answered = sum(e.answered for e in log.errors)
            err.usage_fault = next((e.usage_fault for e in log.errors if e.usage_fault), err.usage_fault)
            raise
        reply.attempts = len(log.errors) + 1
        reply.attempt_errors = [e.error_class for e in log.errors]
        reply.retry_wait_s = log.waited_s
        reply.unread_attempts = sum(e.answered for e in log.errors)
        return reply

    def _note(self, log: _CallLog, err: ModelCallError) -> None:
        log.errors.append(err)
        self.gate.stats.failed += 1
        if err.error_class == "rate_limit":
            self.gate.stats.rate_limited += 1
        if err.error_class in FATAL_FOR_PROVIDER:
            self.gate.kill(err.error_class, str(err))
