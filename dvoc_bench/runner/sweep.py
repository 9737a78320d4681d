"""Run a sweep: setup -> plan -> trials (:mod:`dvoc_bench.runner.trials`) -> the run directory's records,
``summary.md`` and ``run.json``. The only way anything runs a sweep (the CLI, benchmarks, calibration,
tests)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from dvoc_bench.core.geometry import Size
from dvoc_bench.core.records import TrialSpec, to_jsonable
from dvoc_bench.core.rundir import PLAN, SUMMARY, read_jsonl, trial_line_ok, write_run_info
from dvoc_bench.models.base import Model
from dvoc_bench.models.config import ModelConfig
from dvoc_bench.runner.budget import Spend, spent_in
from dvoc_bench.runner.gates import build_gates
from dvoc_bench.runner.plan import build_plan
from dvoc_bench.runner.runmeta import UNRENDERED, ResumeCheck, check_resume
from dvoc_bench.runner.scheduler import RateGate
from dvoc_bench.runner.setup import SweepSetup, model_options, scene_registry, varied
from dvoc_bench.runner.shard import check_shard, plan_digest, select, shard_budget
from dvoc_bench.runner.shots import ShotSaver
from dvoc_bench.runner.trials import ModelFactory, TrialRunner, scene_failure

log = logging.getLogger(__name__)




PLACEHOLDER = Size(800, 600)
"""The size a task is planned at when it is not rendered (a failed scene's without its own, a live scene in a
check: :func:`plan` with ``check``)."""


def plan(setup: SweepSetup, *, check: bool = False) -> list[TrialSpec]:
    """The sweep's trials. A scene that fails to build still gets its trials (they end ``error``/``scene``
    when run); its size is the one it would have had.

    ``check``: the plan a multirun's pre-check makes of a job (:mod:`dvoc_bench.app.prevalidate`), every
    value checked as the job checks it but no browser, display or program started: the drawn tasks are
    rendered (in-process, milliseconds: a definition file's error or a canvas over ``scenes.max_side`` is
    still found before the first job runs), pages, programs and dataset samples are planned unrendered at
    :data:`PLACEHOLDER`, and no unvaried twin is rendered (its hash only seeds the varied
    trials, which the job plans again). The job itself renders its scenes as before."""
    scenes = {}
    drags = set()
    kinds = {t: setup.registry.kind(t) for t in setup.swept.tasks}
    for t in setup.swept.tasks:
        if check and kinds[t] != "synthetic":
            scenes[t] = (UNRENDERED, PLACEHOLDER)
            continue
        try:
            snap = setup.registry.snapshot(t)
            scenes[t] = (snap.content_hash, snap.size)
            if snap.truth.ends:
                drags.add(t)
        except Exception as e:
            if scene_failure(e) is None:
                raise
            log.warning("scene %s failed: %s", t, scene_failure(e))
            scenes[t] = (UNRENDERED, getattr(e, "size", None) or PLACEHOLDER)
    return build_plan(setup, scenes, kinds, drags, {} if check else unvaried_scenes(setup))


def unvaried_scenes(setup: SweepSetup) -> dict[str, tuple[str, Size]]:
    """Task id -> its scene hash and size with every variation axis at its default (rendered once more, in
    a registry of its own that is closed at once), when the sweep varies any: a varied trial is seeded as
    its unvaried twin, started on the twin's screen (docs/variation.md). Empty when nothing is varied or
    the tasks are a dataset's."""
    s = setup.settings
    if not varied(s) or s.dataset.format is not None:
        return {}
    twin = scene_registry(s, setup.registry.root, unvaried=True)
    out = {}
    try:
        for t in setup.swept.tasks:
            try:
                snap = twin.snapshot(t)
                out[t] = (snap.content_hash, snap.size)
            except Exception as e:
                if scene_failure(e) is None:
                    raise
                log.warning("scene %s without variation failed: %s", t, scene_failure(e))
    finally:
        twin.close()
    return out


@dataclass
class RunSummary:
    """What :func:`run_sweep` did."""

    run_dir: Path
    """The run directory."""
    specs: list[TrialSpec]
    """Every planned trial (of this shard, with ``run.shard``)."""
    trials: list[dict[str, Any]]
    """The ``trials.jsonl`` records of the planned trials (including ones finished by earlier runs)."""
    ran: int
    """Trials run by this call (the others were finished before: a resume)."""
    gates: dict[str, RateGate]
    """The providers' gates, with their call counters."""
    resume: ResumeCheck | None = None
    """What the resume check found (items of the run this call skipped, items it added)."""
    spend: Spend = dataclasses.field(default_factory=Spend)
    """What every call of the run directory cost (earlier invocations included): the total, calls of
    unknown cost, calls over their admission bound and the largest excess, usage faults."""
    budget_usd: float | None = None
    """``run.max_cost_usd`` of this call (a shard's part of it with ``run.shard``); ``None`` without a
    budget."""

    @property
    def spent_usd(self) -> float:
        """USD recorded by every call of the run directory (``spend.total``)."""
        return self.spend.total

    @property
    def unknown_cost_calls(self) -> int:
        """Calls of the run directory whose cost is unknown (not in ``spent_usd``)."""
        return self.spend.unknown
    shots_line: str = ""
    """The end-of-run line on the shots this call stored (``run.frames``; :mod:`dvoc_bench.runner.shots`)."""
    shot_bytes: int = 0
    """Bytes of the shots this call stored."""

    @property
    def counts(self) -> dict[str, int]:
        """Trials by status."""
        out: dict[str, int] = {}
        for t in self.trials:
            out[t["status"]] = out.get(t["status"], 0) + 1
        return out


def default_factory(setup: SweepSetup) -> ModelFactory:
    """Models as the config describes them: the simulator, or LiteLLM behind the response cache."""
    from dvoc_bench.models.factory import build_model

    def factory(cfg: ModelConfig, gate: Callable[[Model], Model]) -> Model:
        return build_model(cfg, setup.registry.truth, wrap=gate, **model_options(setup.settings))

    return factory


def run_sweep(
    setup: SweepSetup,
    run_dir: Path | str,
    model_factory: ModelFactory | None = None,
    *,
    specs: list[TrialSpec] | None = None,
    retry_errors: bool = False,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    gates: dict[str, RateGate] | None = None,
) -> RunSummary:
    """Plan the sweep (unless ``specs`` are given), run what ``run_dir`` does not have yet, write
    ``plan.jsonl``, ``trials.jsonl``, ``steps.jsonl``, the frames, ``summary.md`` and ``run.json``.

    The only way anything runs a sweep (the CLI, benchmarks, calibration, tests). ``model_factory``
    defaults to :func:`default_factory`; ``on_done`` sees every finished trial record (progress bars).
    Re-running into the same ``run_dir`` resumes: finished trials are kept; ``skipped`` ones run again,
    ``error`` ones only with ``retry_errors``. A resume must use the run's own settings
    (:mod:`dvoc_bench.runner.runmeta`: a different fingerprint is a :class:`ConfigError` and nothing changes);
    a subset is allowed, more trials only with ``resume.allow_new_trials``, and ``plan.jsonl`` keeps the
    run's whole plan. ``on_start(n)`` is told how many trials this call will run. With ``run.shard=I/N``
    only the shard's trials are run and planned in ``run_dir`` (:mod:`dvoc_bench.runner.shard`).
    """
    from dvoc_bench.runner.store import RunStore, disk_full
    from dvoc_bench.runner.summary import format_table, frame_notes, summarise

    run_dir = Path(run_dir)
    specs = plan(setup) if specs is None else specs
    shard = setup.settings.run.shard_of_sweep
    whole = specs
    specs = select(whole, shard)
    factory = model_factory or default_factory(setup)
    checked: list[ResumeCheck] = []

    fp = setup.fingerprint
    if fp is not None:  # the scenes' content belongs to what the run is made with
        fp = dataclasses.replace(fp, scenes={s.task: s.scene_hash for s in whole})  # a shard: the sweep's

    def on_locked(d: Path) -> None:  # before anything in the run dir changes
        digest = plan_digest(s.trial_key for s in whole)
        fpd = fp.digest if fp else None
        check_shard(d, shard, planned_total=len(whole), planned_shard=len(specs), digest=digest,
                    fingerprint=fpd)
        if fp is not None:
            checked.append(check_resume(d, fp, setup.settings.resume.allow_new_trials))

    try:
        with RunStore(run_dir, retry_errors=retry_errors, on_locked=on_locked) as store:
            old_plan = [p for p in read_jsonl(run_dir / PLAN) if trial_line_ok(p)]
            known = {p["trial_key"] for p in old_plan}
            store.write_plan(old_plan + [to_jsonable(s) for s in specs if s.trial_key not in known])
            todo = sum(s.trial_key not in store.finished for s in specs)
            log.info("%d trials planned, %d to run, run dir %s", len(specs), todo, run_dir)
            if on_start is not None:
                on_start(todo)
            saver = ShotSaver(store.save_shot, setup.frames)
            gates = gates if gates is not None else build_gates(setup.models, setup.settings)
            runner = TrialRunner(setup, store, factory, gates, saver, on_done)
            _run_coroutine(lambda: runner.run(specs))
            store.verify()  # still the directory locked: else stop here, nothing more written by its name
            keys = {s.trial_key for s in specs}
            trials = [t for t in store.trials() if t["trial_key"] in keys]
            spend = spent_in(run_dir)
            notes = frame_notes(trials, setup.models)
            table = format_table(summarise(trials), setup.settings.loop.epsilon, notes)
            (run_dir / SUMMARY).write_text(table + "\n", "utf-8")  # still under the run dir's lock
            write_run_info(
                run_dir,
                {
                    "experiment": setup.experiment,
                    "planned": len(specs),
                    "finished": len(trials),
                    "simulated": any(t.get("simulated") for t in trials),
                    "frames": setup.frames,
                    "fingerprint": fp.digest if fp else None,
                    **({"shard": shard.label, "planned_total": len(whole)} if shard else {}),
                },
            )
    except OSError as e:  # a full disk writing the plan, the summary or run.json: one line, like a trial's
        stop = disk_full(e, e.filename or run_dir)
        if stop is None:
            raise
        raise stop from None
    return RunSummary(
        run_dir,
        specs,
        trials,
        todo,
        gates,
        checked[0] if checked else None,
        spend,
        shard_budget(setup.settings.run.max_cost_usd, shard),
        saver.line(len({s.task for s in specs})),
        saver.bytes,
    )


T = TypeVar("T")


def _loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's handler of an exception no one awaited: one line, never a traceback (a SIGTERM or Ctrl-C
    with calls in flight leaves their tasks failing with connection errors while the loop shuts down: said
    at debug level then; otherwise a warning naming the exception)."""
    exc = context.get("exception")
    what = context.get("message", "unhandled exception in the event loop")
    detail = f"{type(exc).__name__}: {exc}" if exc is not None else ""
    level = logging.DEBUG if "shutdown" in what else logging.WARNING
    log.log(level, "%s: %s", what, str(detail)[:300])


async def _quietly(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    asyncio.get_running_loop().set_exception_handler(_loop_error)
    return await make()


def _run_coroutine(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` to completion, also from inside a running event loop (a notebook):
    then in a worker thread with its own loop. The loop reports a task's unawaited exception in one line
    (:func:`_loop_error`)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_quietly(make))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(_quietly(make))).result()
