"""One trial of the project's own runner per Inspect sample.

A sample names an input of a sweep: the composed config's overrides, the scene (``task``), the start
point's index and the repeat. A solver plans the sweep those overrides describe with its own method and
model config (:func:`plan_for`), finds the sample's trial in that plan, and runs it through the sweep's
:class:`~dvoc_bench.runner.trials.TrialRunner` (environment, budget, method, probe, record) with a model
that answers through Inspect (:class:`~dvoc_bench.inspect.adapter.InspectModel`). The trial is therefore
the one ``python -m dvoc_bench`` runs on the same overrides: same spec, same seed, same scoring.

The runner writes its records and shots into a private run directory that is removed when the process
ends; what Inspect keeps is the record and the steps (the sample's metadata) and each call's frame (the
images of Inspect's model events).
"""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dvoc_bench.core.records import TrialRecord, TrialResult, TrialSpec, to_jsonable
from dvoc_bench.inspect.adapter import InspectModel
from dvoc_bench.models.base import Model
from dvoc_bench.models.config import ModelConfig
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.gates import build_gates
from dvoc_bench.runner.setup import SweepSetup
from dvoc_bench.runner.shots import ShotSaver
from dvoc_bench.runner.store import RunStore
from dvoc_bench.runner.sweep import plan
from dvoc_bench.runner.trials import TrialRunner

SAMPLE_KEYS = ("overrides", "task", "start_index", "rep")
"""What a sample's metadata names of its input (the task functions write them, the solvers read them)."""


def solver_overrides(
    overrides: Sequence[str], method: str, model_config: str, knobs: Sequence[str]
) -> list[str]:
    """The task's overrides with the solver's method, model config and knob overrides (later ones win)."""
    return [*overrides, f"methods=[{method}]", f"models=[{model_config}]", *knobs]


@dataclass
class _Captured:
    steps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


class _Runner(TrialRunner):
    """The sweep's trial runner, keeping each trial's steps for the sample's metadata."""

    captured: _Captured

    def record(self, spec: TrialSpec, result: TrialResult, *args: Any, **kwargs: Any) -> None:
        self.captured.steps[spec.trial_key] = [to_jsonable(s) for s in result.steps]
        super().record(spec, result, *args, **kwargs)


class SolverRun:
    """The planned trials of one (overrides, method, model config, knobs) and the runner that runs them."""

    def __init__(self, overrides: list[str]) -> None:
        self.setup: SweepSetup = quick_setup(overrides)
        """The validated sweep setup (the same path as the command line's)."""
        self.specs: list[TrialSpec] = plan(self.setup)
        """Its plan."""
        self._by_input: dict[tuple[str, int | None, int], list[TrialSpec]] = {}
        for spec in self.specs:
            self._by_input.setdefault((spec.task, spec.start_index, spec.rep), []).append(spec)
        self._locks: dict[str, asyncio.Lock] = {}
        self._dir = Path(tempfile.mkdtemp(prefix="dvoc-inspect-"))
        self._store = RunStore(self._dir)
        self._records: dict[str, dict[str, Any]] = {}
        self._captured = _Captured()
        saver = ShotSaver(self._store.save_shot, self.setup.frames)
        gates = build_gates(self.setup.models, self.setup.settings)
        self._runner = _Runner(self.setup, self._store, self._factory, gates, saver, self._done)
        self._runner.captured = self._captured
        self._closed = False
        atexit.register(self.close)

    def _factory(self, cfg: ModelConfig, gate: Any) -> Model:
        # Inspect schedules, retries and caches its own calls: the sweep's gate is not put around them
        return InspectModel(cfg.name, None, cfg.simulated)

    def _done(self, line: dict[str, Any]) -> None:
        self._records[line["trial_key"]] = line

    def spec_for(self, task: str, start_index: int | None, rep: int) -> TrialSpec:
        """The planned trial of this input (a method that runs one trial per input: its only one)."""
        found = self._by_input.get((task, start_index, rep))
        if found and len(found) > 1:  # the overrides sweep a knob: a sample would not say which trial
            a, b = found[0], found[1]
            differ = [
                f
                for f in ("protocol", "alpha", "overlay", "predict", "model")
                if getattr(a, f) != getattr(b, f)
            ]
            raise LookupError(
                f"the overrides plan {len(found)} trials for {task} start {start_index} rep {rep} (they "
                f"differ in {', '.join(differ) or 'their settings'}): give one value of each swept knob"
            )
        spec = found[0] if found else None
        if spec is None:
            same = sorted(
                (s for s in self.specs if s.task == task and s.rep == rep), key=lambda s: s.start_index or 0
            )
            if not same:
                raise LookupError(f"task {task!r} rep {rep} is not in the plan of these overrides")
            spec = same[0]
        return spec

    async def run(self, spec: TrialSpec) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Run ``spec`` (again, whatever the private store holds) and return its record and steps."""
        lock = self._locks.setdefault(spec.trial_key, asyncio.Lock())
        async with lock:  # samples sharing one trial (a method run once per input) run it one at a time,
            await self._runner.trial(spec)  # each reading back the record of its own run
            return self._records[spec.trial_key], self._captured.steps.get(spec.trial_key, [])

    def close(self) -> None:
        """Release the scenes (browser, Xvfb), the renderer and the lock; remove the private run directory."""
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.renderer.close()
            if self._runner.detector is not None:
                self._runner.detector.close()
            self.setup.registry.close()
        finally:
            self._store.close()
            shutil.rmtree(self._dir, ignore_errors=True)


_RUNS: dict[tuple[str, ...], SolverRun] = {}
_LOCK = threading.Lock()


def solver_run(overrides: list[str]) -> SolverRun:
    """The :class:`SolverRun` of ``overrides``, built once per process."""
    key = tuple(overrides)
    with _LOCK:
        if key not in _RUNS:
            _RUNS[key] = SolverRun(overrides)
        return _RUNS[key]


def close_all() -> None:
    """Close every :class:`SolverRun` of this process."""
    with _LOCK:
        runs = list(_RUNS.values())
        _RUNS.clear()
    for r in runs:
        r.close()


__all__ = ["SAMPLE_KEYS", "SolverRun", "TrialRecord", "close_all", "solver_overrides", "solver_run"]
