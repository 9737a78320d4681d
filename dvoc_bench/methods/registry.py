"""The method registry: every grounding method declared once, in the module that writes it.

A method registers itself with :func:`method` (the pattern of inspect_ai's ``@solver``)::

    @method("teleport", calls_model=True, knobs=("protocol",))
    async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult: ...

Config validation, planning, the scheduler and the summary read this registry; adding a method is one new
file, imported by :mod:`dvoc_bench.methods` so it registers. The built-in methods are imported on first
lookup.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods.common import TrialEnv

Knob = Literal["protocol", "alpha", "overlay", "predict", "detector", "zoom"]
"""A swept knob a method may use. A knob a method does not use is planned once, recorded as ``-``."""

KNOBS: tuple[str, ...] = get_args(Knob)

MethodFn = Callable[[TrialSpec, TrialEnv], Coroutine[Any, Any, TrialResult]]
"""A method: ``async def run(spec, env) -> TrialResult``."""
MaxCalls = Callable[[TrialSpec], int]
"""The most model calls one trial of a method can make, from its spec (``max_iterations``, ...)."""


@dataclass(frozen=True)
class MethodInfo:
    """A registered method."""

    name: str
    """The name used in ``methods=[...]`` and in records."""
    run: MethodFn
    """``async run(spec, env) -> TrialResult``; never raises for a model-side failure."""
    calls_model: bool
    """False for the non-visual baselines: planned once, with the stand-in model ``none``."""
    knobs: frozenset[str]
    """The swept knobs the method uses (:data:`KNOBS`)."""
    uses_start: bool
    """True when the trial starts from the spec's start point (DVOC); the start index stays a repeat
    counter for the others."""
    description: str
    """One line for ``--help`` and the README."""
    max_calls: MaxCalls | None = None
    """Upper bound of a trial's model calls (retries of one call not counted); ``None``: not declared (the
    plan shows it as unknown and ``run.max_cost_usd`` refuses the method). Model-free methods: 0."""
    per_input: bool = False
    """True when the start point changes nothing the method sends (Set-of-Mark: the marks are drawn on the
    screenshot, wherever a start would be): planned once per task and repeat on every kind of screen, as
    every method without a start point is on a dataset (the input is the unit; ``repeats=N`` asks again).
    False keeps the start index as a repeat counter on scenes (one-shot, zoom: the authors' design)."""

    def call_bound(self, spec: TrialSpec) -> int | None:
        """The most model calls a trial of ``spec`` can make; ``None`` when the method does not say."""
        if not self.calls_model:
            return 0
        return None if self.max_calls is None else int(self.max_calls(spec))

    @property
    def needs_detector(self) -> bool:
        """True for the Set-of-Mark methods (they need ``detector=...``)."""
        return "detector" in self.knobs


_METHODS: dict[str, MethodInfo] = {}


def _load_builtins(package: str) -> None:
    """Import the package whose modules register the built-in entries (once; later calls are free)."""
    importlib.import_module(package)


def method(
    name: str,
    *,
    calls_model: bool = True,
    knobs: Iterable[str] = (),
    uses_start: bool = False,
    description: str = "",
    max_calls: MaxCalls | None = None,
    per_input: bool = False,
) -> Callable[[MethodFn], MethodFn]:
    """Register the decorated ``async run(spec, env)`` as method ``name``; ``max_calls(spec)`` bounds the
    model calls of one trial (the plan and the cost budget use it); ``per_input``: see
    :attr:`MethodInfo.per_input`."""
    bad = set(knobs) - set(KNOBS)
    if bad:
        raise ValueError(f"method {name}: unknown knob(s) {sorted(bad)}; allowed: {', '.join(KNOBS)}")
    if calls_model and "protocol" not in knobs:
        raise ValueError(f"method {name}: a method that calls a model uses the protocol knob")
    if per_input and uses_start:
        raise ValueError(f"method {name}: a method that uses its start point is not planned once per input")

    def register(fn: MethodFn) -> MethodFn:
        if name in _METHODS and _METHODS[name].run is not fn:
            raise ValueError(f"method {name!r} is registered twice")
        _METHODS[name] = MethodInfo(
            name, fn, calls_model, frozenset(knobs), uses_start, description, max_calls, per_input
        )
        return fn

    return register


def unregister_method(name: str) -> None:
    """Remove a method (tests that register their own)."""
    _METHODS.pop(name, None)


def methods() -> dict[str, MethodInfo]:
    """Every registered method, in registration order."""
    _load_builtins("dvoc_bench.methods")
    return dict(_METHODS)


def method_info(name: str) -> MethodInfo:
    """One method (``KeyError`` naming the allowed ones when unknown)."""
    _load_builtins("dvoc_bench.methods")
    if name not in _METHODS:
        raise KeyError(f"unknown method {name!r}; allowed: {', '.join(_METHODS)}")
    return _METHODS[name]
