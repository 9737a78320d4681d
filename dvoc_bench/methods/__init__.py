"""Grounding methods. Each is ``async run(spec, env) -> TrialResult`` and never raises for model failures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.records import TrialResult, TrialSpec

MethodFn = Callable[[TrialSpec, TrialEnv], Awaitable[TrialResult]]

METHODS = ("dvoc", "oneshot", "centre", "random", "som", "som_dvoc")
"""Method names accepted in ``methods=[...]``."""

SOM_METHODS = frozenset({"som", "som_dvoc"})
"""Methods that need the Set-of-Mark detector (``detector=...``)."""

MODEL_FREE = frozenset({"centre", "random"})
"""Methods that never call a model."""


def get_method(name: str) -> MethodFn:
    """The run function of a method (imported lazily)."""
    if name == "dvoc":
        from dvoc_bench.methods.dvoc import run
    elif name == "oneshot":
        from dvoc_bench.methods.oneshot import run
    elif name == "centre":
        from dvoc_bench.methods.baselines import run_centre as run
    elif name == "random":
        from dvoc_bench.methods.baselines import run_random as run
    elif name == "som":
        from dvoc_bench.methods.som import run
    elif name == "som_dvoc":
        from dvoc_bench.methods.som_dvoc import run
    else:
        raise ValueError(f"unknown method {name!r}; allowed: {', '.join(METHODS)}")
    return run
