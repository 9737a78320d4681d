"""The trial runner: every unfinished trial of a plan, concurrently, each one recorded when it ends.

One :class:`TrialRunner` per sweep call. A trial passes through small steps, each a method: its
environment (scene + model, built once per model and task), the cost budget's admission, the method
itself (a bug in it fails that trial only), the provider-death rewrite (a trial cut short by a dead
provider is ``skipped``, so a resume runs it again), the probe of its final point and the record. A scene
that fails to build fails its own trials; a dataset sample's environment is freed after its last trial.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.records import (
    ErrorClass,
    Probe,
    SampleMeta,
    TrialRecord,
    TrialResult,
    TrialSpec,
    to_jsonable,
)
from dvoc_bench.detect.service import DetectorService
from dvoc_bench.draw.workers import FrameRenderer
from dvoc_bench.methods.common import TrialEnv, finish
from dvoc_bench.methods.drag import drag_calls, is_drag, run_drag
from dvoc_bench.methods.registry import MethodInfo, method_info
from dvoc_bench.models.base import Model
from dvoc_bench.models.config import ModelConfig
from dvoc_bench.models.options import ImageOptions, model_image
from dvoc_bench.runner.budget import Budget, BudgetedModel, Ticket, spent_in
from dvoc_bench.runner.desktop_episodes import is_desktop_episode, run_desktop_episode
from dvoc_bench.runner.episodes import all_located, episode_target, run_episode
from dvoc_bench.runner.gates import gate_key
from dvoc_bench.runner.scheduler import FATAL_FOR_PROVIDER, GatedModel, RateGate
from dvoc_bench.runner.setup import SweepSetup
from dvoc_bench.runner.shard import shard_budget
from dvoc_bench.runner.shots import ShotSaver
from dvoc_bench.runner.store import RunStopped, RunStore
from dvoc_bench.scenes import SceneRegistry

log = logging.getLogger(__name__)

ModelFactory = Callable[[ModelConfig, Callable[[Model], Model]], Model]
"""Builds a model from its config. The second argument puts the provider's gate and the call-level
retries around the provider client; the factory applies it inside its response cache (cache hits never
wait): the chain is ``cache -> gate -> client``."""

PROVIDER_FATAL: frozenset[ErrorClass] = FATAL_FOR_PROVIDER | {"provider_dead"}
"""Error classes of a trial whose provider died under it: written as ``skipped``, run again on resume."""


def scene_failure(e: BaseException) -> str | None:
    """The one-line reason when ``e`` is a per-scene failure (an exception with ``error_class == "scene"``,
    e.g. a web page that hangs); ``None`` for anything else (a bad config stops the sweep as before)."""
    return str(e).splitlines()[0][:600] if getattr(e, "error_class", None) == "scene" else None


def skipped_result(reason_class: ErrorClass, reason: str) -> TrialResult:
    """A trial that was never run (or cut short) because its provider became unusable, or never started
    because it could have passed the cost budget (``reason_class="budget"``)."""
    return TrialResult(
        status="skipped", stop_reason="skipped", final_point=None, error_class=reason_class, error=reason
    )


def interleave(specs: list[TrialSpec]) -> list[TrialSpec]:
    """Round-robin the trials over providers (model-free ones first), keeping each provider's order.

    Trials start in this order as in-flight slots free up, so every provider always has work queued and a
    slow provider's waits overlap with the others' calls instead of following them.
    """
    queues: dict[str, list[TrialSpec]] = {}
    for s in specs:
        queues.setdefault(s.provider if method_info(s.method).calls_model else "", []).append(s)
    out = queues.pop("", [])
    lists = list(queues.values())
    for i in range(max((len(q) for q in lists), default=0)):
        out.extend(q[i] for q in lists if i < len(q))
    return out


def sample_meta(registry: SceneRegistry, task: str) -> SampleMeta | None:
    """The trial record's ``sample`` block of a dataset task (``None`` for other scenes)."""
    meta = registry.meta(task)
    if meta is None:
        return None
    known = {f.name for f in dataclasses.fields(SampleMeta)}
    return SampleMeta(**{k: v for k, v in meta.items() if k in known})


def run_order(specs: list[TrialSpec], registry: SceneRegistry) -> list[TrialSpec]:
    """The order trials start in: dataset samples task by task (few screenshots decoded at once, each
    environment freed early), then round-robin over providers."""
    if any(registry.kind(t) == "dataset" for t in {s.task for s in specs}):
        order = {t: i for i, t in enumerate(dict.fromkeys(s.task for s in specs))}
        specs = sorted(specs, key=lambda s: order[s.task])
    return interleave(specs)


class TrialRunner:
    """Runs the unfinished trials of one sweep call into its run store (:meth:`run`)."""

    def __init__(
        self,
        setup: SweepSetup,
        store: RunStore,
        factory: ModelFactory,
        gates: dict[str, RateGate],
        saver: ShotSaver,
        on_done: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        s = setup.settings
        self.setup, self.store, self.factory, self.gates, self.saver = setup, store, factory, gates, saver
        self.on_done = on_done
        self.registry = setup.registry
        self.by_name = {m.name: m for m in setup.models}
        self.detector = DetectorService(setup.detector) if setup.detector is not None else None
        self.renderer = FrameRenderer(s.run.render_workers, in_flight=s.run.max_in_flight)
        cap = shard_budget(s.run.max_cost_usd, s.run.shard_of_sweep)  # a shard's part of the sweep's budget
        self.budget = Budget(cap, spent_in(store.dir).total) if cap is not None else None
        self._models: dict[str, Model] = {}
        self._envs: dict[tuple[str, str], TrialEnv] = {}
        self._left: Counter[tuple[str, str]] = Counter()
        self._estimates: dict[tuple[str, str], float] = {}

    async def run(self, specs: list[TrialSpec]) -> None:
        """Run every spec the store has not finished, at most ``run.max_in_flight`` at once; then release
        the detector and the live scenes (also when interrupted)."""
        pending = run_order([s for s in specs if s.trial_key not in self.store.finished], self.registry)
        lazy = {t for t in {s.task for s in pending} if self.registry.kind(t) == "dataset"}
        self._left = Counter((s.model, s.task) for s in pending if s.task in lazy)
        sem = asyncio.Semaphore(self.setup.settings.run.max_in_flight)

        async def one(spec: TrialSpec) -> None:
            async with sem:
                await self.trial(spec)

        try:
            await asyncio.gather(*(one(s) for s in pending))
        except BaseException:  # stop live scenes (browser, Xvfb and Tk apps) on the way out, too
            self.registry.close()
            raise
        finally:
            self.renderer.close()
        if self.detector is not None:
            await asyncio.to_thread(self.detector.close)  # stops a helper process, releases an onnx session
        await asyncio.to_thread(self.registry.close)  # closes the browser / Xvfb of live scenes, if started

    async def trial(self, spec: TrialSpec) -> None:
        """One trial, from its environment to its record."""
        try:
            env = self.env_for(spec)
        except Exception as e:  # a page that hangs or has no target fails its own trials only
            reason = scene_failure(e)
            if reason is None:
                raise
            failed = TrialResult(
                status="error", stop_reason="error", final_point=None, error_class="scene", error=reason
            )
            skip = getattr(e, "skip_class", None)  # no instruction of the asked wording: skipped, counted
            self.record(spec, skipped_result(skip, reason) if skip else failed, Box(0, 0, 0, 0), 0.0)
            return
        info = method_info(spec.method)
        gate = self.gates.get(gate_key(self.by_name[spec.model])) if info.calls_model else None
        ticket, refused = None, None
        if self.budget is not None and info.calls_model and (gate is None or gate.dead is None):
            per_call = self.budget.per_call(spec.model, self.call_cost(spec, env))
            bound = drag_calls(info, spec, env) * per_call
            refused = await self.budget.admit(bound)
            if refused is None and bound > 0.0 and env.model is not None:  # every call charged as it ends
                ticket = Ticket(per_call, bound)
                budgeted = BudgetedModel(env.model, self.budget, ticket, spec.model)
                env = dataclasses.replace(env, model=budgeted)
        t0 = time.perf_counter()  # the wait for the budget is not the trial's time
        if gate is not None and gate.dead is not None:
            result = skipped_result(gate.dead_class or "provider_dead", gate.dead)
        elif refused is not None:
            result = skipped_result("budget", refused)
        else:
            result = await self.run_method(info, spec, env, gate)
        if self.budget is not None and ticket is not None:  # free what the trial still reserved
            await self.budget.release(ticket)
        wall_s = time.perf_counter() - t0
        if result.episode is not None:  # an episode: scored on its steps' DOM verdicts, not one point
            located = all_located(result)
            probe = Probe(hit_element=None, hit=bool(located)) if located is not None else None
            self.record(spec, result, episode_target(result), wall_s, probe)
            return
        probe = await self.probe(spec, result)
        drop = await self.probe_drop(spec, result, env)
        self.record(
            spec, result, env.snapshot.target_box, wall_s, probe, env.snapshot.truth.target_full_box, drop
        )
        self.free(spec)

    async def run_method(
        self, info: MethodInfo, spec: TrialSpec, env: TrialEnv, gate: RateGate | None
    ) -> TrialResult:
        """The method's result; a bug in it is this trial's ``internal`` error, and a trial whose provider
        died under it is ``skipped`` (its completed steps kept)."""
        try:
            if self.registry.kind(spec.task) == "miniwob":  # an episode: the method grounds every step
                result = await run_episode(spec, env, info, self.registry)
            elif is_desktop_episode(self.registry, spec.task):  # a GTK program driven step by step
                result = await run_desktop_episode(spec, env, info, self.registry)
            else:
                result = await (run_drag(info, spec, env) if is_drag(env) else info.run(spec, env))
        except RunStopped:  # the run directory cannot take this trial's shots: not the trial's failure
            raise
        except Exception as e:  # a bug in a method must not take the sweep down; record it
            reason = scene_failure(e)
            if reason is not None:  # the scene failed under the method (a dataset image that will not decode)
                return TrialResult(
                    status="error", stop_reason="error", final_point=None, error_class="scene", error=reason
                )
            log.exception("trial %s failed inside the harness", spec.trial_key)
            return TrialResult(
                status="error",
                stop_reason="error",
                final_point=None,
                error_class="internal",
                error=f"{type(e).__name__}: {e}"[:300],
            )
        if result.status == "error" and result.error_class == "budget":  # a call was refused: run on resume
            skipped = skipped_result("budget", str(result.error))
            skipped.steps = [s for s in result.steps if s.error_class != "budget"]  # no call was made
            return finish(skipped)
        if gate is None or gate.dead is None:
            return result
        if result.status != "error" or result.error_class not in PROVIDER_FATAL:
            return result
        # the provider died (auth / quota): this trial did not finish; resume runs it again
        skipped = skipped_result(gate.dead_class or "provider_dead", gate.dead or str(result.error))
        skipped.steps = result.steps
        finish(skipped)
        return skipped

    async def probe(self, spec: TrialSpec, result: TrialResult) -> Probe | None:
        """What lies under the final point (web: the DOM element, and a real click); ``None`` without a
        final point or when probing fails (the box rule then stands for this trial)."""
        if result.final_point is None:
            return None
        try:
            return await self.registry.aprobe(spec.task, Point(*result.final_point))
        except Exception:
            log.exception("trial %s: probing the final point failed", spec.trial_key)
            return None

    async def probe_drop(
        self, spec: TrialSpec, result: TrialResult, env: TrialEnv
    ) -> tuple[Box, Probe | None] | None:
        """A two-point task's end: its target box and the probe of ``result.drop_point`` on its own id
        (``<id>:to``); ``None`` for a one-point task."""
        if not is_drag(env):
            return None
        end = env.snapshot.truth.ends[1]
        if result.drop_point is None:
            return end.target_box, None
        try:
            return end.target_box, await self.registry.aprobe(end.scene_id, Point(*result.drop_point))
        except Exception:
            log.exception("trial %s: probing the drop point failed", spec.trial_key)
            return end.target_box, None

    def phone_screen(self, spec: TrialSpec) -> Size | None:
        """A phone trial's screenshot size (its AndroidControl scores need it); ``None`` for other trials
        and for a scene that never rendered (its trial is an error without a point to score)."""
        if spec.device == "-":
            return None
        try:
            return self.registry.snapshot(spec.task).truth.size
        except Exception:
            return None

    def record(
        self,
        spec: TrialSpec,
        result: TrialResult,
        target: Box,
        wall_s: float,
        probe: Probe | None = None,
        target_full: Box | None = None,
        drop: tuple[Box, Probe | None] | None = None,
    ) -> None:
        """Build the trial's record, append it with its steps and tell ``on_done``."""
        record = TrialRecord.build(
            spec,
            result,
            target,
            wall_s,
            scene_kind=self.registry.kind(spec.task),
            probe=probe,
            target_full=target_full,
            sample=sample_meta(self.registry, spec.task),
            drop=drop,
            screen=self.phone_screen(spec),
        )
        line = to_jsonable(record)
        self.store.append_trial(line, result.steps)
        if self.on_done is not None:
            self.on_done(line)

    def gate_for(self, cfg: ModelConfig) -> Callable[[Model], Model]:
        """What puts the model's provider gate (with the call-level retries) around its client."""
        gate = self.gates[gate_key(cfg)]
        s = self.setup.settings
        return lambda client: GatedModel(client, gate, s.retry, seed=s.seed)

    def image_of(self, model: str) -> ImageOptions:
        """The input limits of a model (its own ``image:`` over the global one)."""
        cfg = self.by_name.get(model)
        return model_image(cfg.image if cfg is not None else None, self.setup.settings.image)

    def env_for(self, spec: TrialSpec) -> TrialEnv:
        """The trial environment of the spec's model and task, built on first use."""
        k = (spec.model, spec.task)
        if k in self._envs:
            return self._envs[k]
        model = None
        if method_info(spec.method).calls_model:
            if spec.model not in self._models:
                cfg = self.by_name[spec.model]
                self._models[spec.model] = self.factory(cfg, self.gate_for(cfg))
            model = self._models[spec.model]
        s = self.setup.settings
        own = self.by_name.get(spec.model)
        env = TrialEnv(
            snapshot=self.registry.snapshot(spec.task),
            model=model,
            model_identity=f"{spec.model_id}@{spec.api_base or ''}",
            save_shot=self.saver,
            style=s.overlay_style,
            adaptive=s.adaptive,
            params=dict(s.sampling),
            oneshot_retry_rule=s.oneshot.retry_rule,
            detector=self.detector,
            renderer=self.renderer,
            image=self.image_of(spec.model),
            frame_rule=None if own is None else own.frame,
            prompt_style="tool_call" if own is None else own.prompt_style,
        )
        if self.saver.mode == "all" and not env.view().identity:  # the original beside the sent frames
            self.saver(env.clean_png())
        self._envs[k] = env
        return env

    def free(self, spec: TrialSpec) -> None:
        """After a dataset sample's last trial of this model: free its environment."""
        k = (spec.model, spec.task)
        if k in self._left:
            self._left[k] -= 1
            if self._left[k] == 0:
                self._envs.pop(k, None)

    def call_cost(self, spec: TrialSpec, env: TrialEnv) -> float:
        """Estimated cost of one call of the spec's model on its scene (the budget's per-call basis)."""
        k = (spec.model, spec.task)
        if k not in self._estimates:
            from dvoc_bench.models.pricing import call_estimate

            s = self.setup.settings
            est = call_estimate(self.by_name[spec.model], env.snapshot.size, s.image, dict(s.sampling))
            self._estimates[k] = est.cost_usd or 0.0  # unknown prices are refused when the budget is set up
        return self._estimates[k]
