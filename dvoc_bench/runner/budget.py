"""The cost budget of a run directory (``run.max_cost_usd``).

Every call the run directory recorded counts (``steps.jsonl`` and ``superseded_steps.jsonl``: a resume
pays for what earlier invocations spent). Before a trial starts, :meth:`Budget.admit` reserves its upper
bound: the method's most calls (``max_calls`` in the registry) times the model's per-call bound, which is
:data:`~dvoc_bench.models.pricing.BOUND_MARGIN` times the estimated cost of a call
(:func:`~dvoc_bench.models.pricing.call_estimate`), raised to the dearest call seen so far in the run.
While the cost spent plus the bounds in flight plus this trial's would pass the budget, the trial waits
for trials in flight to finish (they usually spend less than their bound); when even the cost spent plus
its own bound would pass it, the budget stops: this trial and every later one that costs anything are written
``skipped`` with error class ``budget``. A resume with a higher budget runs them. Free trials (baselines,
the in-process simulator) always run.

**Every call, too** (:class:`BudgetedModel`, around the trial's model): a call starts only while the spend
recorded so far plus its per-call bound stays within the budget, and it is charged the moment its reply
arrives, from its own slot of the trial's reservation. A reply may report far more usage than its bound
(the provider bills it, so it is recorded as reported): then the recorded spend passes the budget and no
further call starts, in any trial; a trial whose call was refused is ``skipped`` (``budget``), its answered
calls kept. So the spend passes the budget only by the excess of the calls already in flight when such a
reply came (with one call in flight: one call's excess over its bound). A reply with no usable usage
(``usage_fault``: no token counts, negative or non-finite ones, a reply that could not be read) is charged
its bound (``cost_source="bound"``), never what it claimed. :func:`spent_in` says by how much calls passed
their bound, for the end-of-run lines.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvoc_bench.core.rundir import PAID_STEP_FILES, read_jsonl
from dvoc_bench.models.base import Model, ModelCallError, ModelRequest, Reply

EXCESS_EPS = 1e-12
"""A call's cost above its bound by less than this is float noise, not an excess."""


@dataclass
class Spend:
    """What the calls of a run directory cost, as recorded (:func:`spent_in`)."""

    total: float = 0.0
    """USD recorded by every call (bounds charged for calls without usable usage included)."""
    unknown: int = 0
    """Calls that answered with no known cost (no budget to charge them a bound; not in ``total``)."""
    over_bound_calls: int = 0
    """Calls that cost more than the per-call bound they were admitted with."""
    max_excess: float = 0.0
    """The largest single-call excess over its admission bound, USD (0 when no call passed its bound)."""
    faults: int = 0
    """Calls whose reported usage was a provider fault or missing (``usage_fault``; never summed)."""
    estimated: int = 0
    """Calls whose reported usage was far below the harness's own estimate (``est_tokens_in`` recorded):
    their ``cost_usd``, in ``total``, prices the estimate."""
    estimated_usd: float = 0.0
    """What those calls cost by the estimate (in ``total``)."""
    reported_usd: float = 0.0
    """What those calls would have cost by the counts their provider reported."""


def spent_in(run_dir: Path | str) -> Spend:
    """What every call of the run directory cost (failed calls and cache hits cost nothing and are not
    counted as unknown, unless the budget charged a failed call its bound)."""
    out = Spend()
    for name in PAID_STEP_FILES:
        for s in read_jsonl(Path(run_dir) / name):
            c = s.get("cost_usd")
            if s.get("usage_fault"):
                out.faults += 1
            if isinstance(c, (int, float)) and math.isfinite(c) and c >= 0:
                out.total += float(c)
                if s.get("est_tokens_in") is not None:
                    r = s.get("reported_cost_usd")
                    out.estimated += 1
                    out.estimated_usd += float(c)
                    out.reported_usd += float(r) if isinstance(r, (int, float)) and math.isfinite(r) else 0.0
                b = s.get("cost_bound_usd")
                if isinstance(b, (int, float)) and c - b > EXCESS_EPS:
                    out.over_bound_calls += 1
                    out.max_excess = max(out.max_excess, float(c) - float(b))
            elif not s.get("error_class") and s.get("kind") != "baseline":
                out.unknown += 1
    return out


@dataclass
class Ticket:
    """One admitted trial's share of the budget."""

    per_call: float
    """The per-call bound of its model when it was admitted."""
    left: float
    """What is still reserved for its calls (its bound, less one ``per_call`` per call made)."""


class BudgetedModel:
    """The trial's model behind the budget's call admission (module docstring): refuses a call once the
    recorded spend leaves no room for its bound, charges every call as its reply arrives."""

    def __init__(self, inner: Model, budget: Budget, ticket: Ticket, model: str):
        self.inner, self.budget, self.ticket, self.model = inner, budget, ticket, model
        self.name, self.simulated = inner.name, inner.simulated

    def __getattr__(self, item: str) -> Any:  # everything else is the model's
        return getattr(self.inner, item)

    async def complete(self, request: ModelRequest) -> Reply:
        bound = self.ticket.per_call
        refused = self.budget.refuse_call(bound)
        if refused is not None:
            raise ModelCallError("budget", refused)
        try:
            reply = await self.inner.complete(request)
        except ModelCallError as err:
            err.cost_bound_usd = bound
            if err.answered:  # the provider answered (and may have billed) replies nobody could read
                err.cost_usd, err.cost_source = err.answered * bound, "bound"
            await self.budget.charge(self.ticket, err.cost_usd or 0.0, self.model)
            raise
        reply.cost_bound_usd = bound
        if reply.cost_usd is None:  # no usable usage: the bound, never what it claimed
            reply.cost_usd, reply.cost_source = bound, "bound"
        if reply.unread_attempts:
            reply.cost_usd += reply.unread_attempts * bound
            note = f"{reply.unread_attempts} earlier attempts answered unreadably, charged the bound each"
            reply.usage_fault = f"{reply.usage_fault}; {note}" if reply.usage_fault else note
        await self.budget.charge(self.ticket, reply.cost_usd, self.model)
        return reply


class Budget:
    """The admission gate of trials under ``run.max_cost_usd`` (module docstring)."""

    def __init__(self, limit_usd: float, spent_usd: float = 0.0):
        self.limit = float(limit_usd)
        """The budget, USD."""
        self.spent = float(spent_usd)
        """USD spent by the run directory so far (earlier invocations included)."""
        self.reserved = 0.0
        """Upper bounds of the trials in flight."""
        self.in_flight = 0
        """Admitted trials not finished yet (a count: float sums of bounds never quite return to 0)."""
        self.stopped: str | None = None
        """Why no trial that costs anything starts any more (``None`` while the budget lasts)."""
        self.skipped = 0
        """Trials refused by this invocation."""
        self.dearest: dict[str, float] = {}
        """The dearest call seen per model in this invocation."""
        self._cond = asyncio.Condition()

    def per_call(self, model: str, estimate: float) -> float:
        """The per-call bound of ``model``: ``BOUND_MARGIN`` times ``estimate`` (one call's estimated cost),
        or the dearest call seen when that is more."""
        from dvoc_bench.models.pricing import BOUND_MARGIN

        return max(BOUND_MARGIN * estimate, self.dearest.get(model, 0.0))

    async def admit(self, bound: float) -> str | None:
        """Reserve ``bound`` for a trial about to start; ``None`` when it may start, else the skip reason."""
        if bound <= 0.0:
            return None
        async with self._cond:
            while self.stopped is None and self.in_flight and self.spent + self.reserved + bound > self.limit:
                await self._cond.wait()
            if self.stopped is None and self.spent + bound > self.limit:
                self.stopped = (
                    f"run.max_cost_usd={self.limit:g} would be passed (${self.spent:.4f} spent when the "
                    "sweep stopped starting trials); resume with a higher budget to run it"
                )
            if self.stopped is not None:
                self.skipped += 1
                return self.stopped
            self.reserved += bound
            self.in_flight += 1
            return None

    def refuse_call(self, bound: float) -> str | None:
        """``None`` when a call with per-call ``bound`` may start: the spend recorded so far plus ``bound``
        stays within the budget (always true for the calls of admitted trials while every call costs at most
        its bound); else why not, and no trial starts any more either."""
        if self.spent + bound <= self.limit + EXCESS_EPS:
            return None
        why = (
            f"run.max_cost_usd={self.limit:g} would be passed (${self.spent:.4f} spent when the sweep "
            "stopped starting calls); resume with a higher budget to run it"
        )
        self.stopped = self.stopped or why
        return why

    async def charge(self, ticket: Ticket, cost: float, model: str) -> None:
        """A call of an admitted trial ended: add what it cost, free its slot of the trial's reservation."""
        async with self._cond:
            self.spent += cost
            take = min(ticket.left, ticket.per_call)
            ticket.left -= take
            self.reserved = max(0.0, self.reserved - take)
            self.dearest[model] = max(self.dearest.get(model, 0.0), cost)
            self._cond.notify_all()

    async def release(self, ticket: Ticket) -> None:
        """An admitted trial finished (its calls were charged as they ended): free what it still reserved."""
        async with self._cond:
            self.in_flight -= 1
            self.reserved = max(0.0, self.reserved - ticket.left) if self.in_flight else 0.0
            ticket.left = 0.0
            self._cond.notify_all()
