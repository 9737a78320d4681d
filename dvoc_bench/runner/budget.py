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
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable
from pathlib import Path

from dvoc_bench.core.records import Step, TrialResult, read_jsonl

STEP_FILES = ("steps.jsonl", "superseded_steps.jsonl")
"""The files of a run directory whose calls have been paid for."""


def spent_in(run_dir: Path | str) -> tuple[float, int]:
    """USD recorded by every call of the run directory, and how many calls had no known cost (failed calls
    and cache hits cost nothing and are not counted as unknown)."""
    total, unknown = 0.0, 0
    for name in STEP_FILES:
        for s in read_jsonl(Path(run_dir) / name):
            c = s.get("cost_usd")
            if isinstance(c, (int, float)) and math.isfinite(c):
                total += float(c)
            elif not s.get("error_class") and s.get("kind") != "baseline":
                unknown += 1
    return total, unknown


def step_costs(steps: Iterable[Step], per_call_bound: float) -> tuple[float, float]:
    """What a trial's calls cost (a call that answered with no known cost is charged ``per_call_bound``)
    and the dearest known call."""
    total, dearest = 0.0, 0.0
    for s in steps:
        c = getattr(s, "cost_usd", None)
        if isinstance(c, (int, float)) and math.isfinite(c):
            total += float(c)
            dearest = max(dearest, float(c))
        elif getattr(s, "error_class", None) is None and getattr(s, "kind", None) != "baseline":
            total += per_call_bound
    return total, dearest


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

    async def release(self, bound: float, model: str, result: TrialResult, per_call_bound: float) -> None:
        """A trial admitted with ``bound`` finished: charge what its calls cost, free its reservation."""
        if bound <= 0.0:
            return
        cost, dearest = step_costs(result.steps, per_call_bound)
        async with self._cond:
            self.in_flight -= 1
            self.reserved = max(0.0, self.reserved - bound) if self.in_flight else 0.0
            self.spent += cost
            self.dearest[model] = max(self.dearest.get(model, 0.0), dearest)
            self._cond.notify_all()
