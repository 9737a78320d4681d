"""An episode trial: a MiniWoB task run step by step on its live page (docs/episodes.md).

For every step the task's oracle planner reads the page and names the action, its words and its target
element; the page's task area is captured; the trial's method grounds the step on that screenshot exactly
as it grounds a single-click trial (same code, same model, the step's truth held in the scene registry for
the simulator); the point is hit-tested against the target's DOM element (``located``); the action is made
with real mouse and keyboard input; the page is read again (``interacted``: the step's intended state
change) and captured again. A drag grounds both of its points. The episode ends on the page's verdict, the
plan's end, the step cap or the wall-clock cap; its success is the page's own (``WOB_RAW_REWARD_GLOBAL`` >
0 once ``WOB_DONE_GLOBAL``). Nothing raises: a failing page or planner fails its own episode in one line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any

from dvoc_bench.core.episode_records import EpisodeEnd, EpisodeRecord, EpisodeStepRecord
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.draw.render import encode_png
from dvoc_bench.methods.common import TrialEnv, finish
from dvoc_bench.methods.registry import MethodInfo
from dvoc_bench.runner.episode_plan import ModelPlanner, uses_model
from dvoc_bench.scenes import SceneRegistry
from dvoc_bench.scenes.miniwob.dom import Dom, css_box_to_image
from dvoc_bench.scenes.miniwob.driver import EpisodePage, css_point
from dvoc_bench.scenes.miniwob.planners import GROUNDED, PLANNERS, PlanError, PlannedStep, family_of
from dvoc_bench.scenes.miniwob.source import MiniwobSource, step_scene_id, step_snapshot, task_name

log = logging.getLogger(__name__)

NO_TRUTH = Box(0, 0, 0, 0)
"""The truth box of a model-planned target the oracle cannot name (never scored: ``located`` is ``None``)."""


def episode_seed(spec: TrialSpec) -> int:
    """The page's seed: the sweep seed plus the repeat index (every method meets the same episodes)."""
    return spec.sweep_seed + spec.rep


@dataclasses.dataclass
class Grounded:
    """One grounding of a step's point."""

    point: Point | None
    result: TrialResult
    seconds: float


class Episode:
    """One episode's state while it runs (see the module docstring)."""

    def __init__(
        self, spec: TrialSpec, env: TrialEnv, info: MethodInfo, source: MiniwobSource, registry: SceneRegistry
    ) -> None:
        self.spec, self.env, self.info, self.source, self.registry = spec, env, info, source, registry
        self.name = task_name(spec.task)
        self.opts = source.options
        self.scale = self.opts.scale
        self.calls: list[Any] = []
        self.harness_s = 0.0
        self.call_failure: TrialResult | None = None
        """The grounding whose model call failed (budget, provider, timeout): the episode did not finish."""
        self.page: EpisodePage | None = None
        """The live page while the episode runs (what a test's method may look at)."""

    async def browser(self, fn: Any, *args: Any) -> Any:
        """A blocking page call from a worker thread, its time counted as the harness's."""
        t = time.perf_counter()
        try:
            return await asyncio.to_thread(fn, *args)
        finally:
            self.harness_s += time.perf_counter() - t

    async def ground(
        self, page_image: Any, k: int, part: str, instruction: str, target: str, box: Box
    ) -> Grounded:
        """The method's point for one target on one screenshot (its calls kept, renumbered)."""
        sid = step_scene_id(self.spec.task, self.spec.trial_key, k, part)
        snap = step_snapshot(sid, page_image, instruction, target, box)
        self.registry.hold(snap.truth)
        env = dataclasses.replace(
            self.env, snapshot=snap, _clean_png=None, _clean=None, _base=None, _crop=None
        )
        t = time.perf_counter()
        try:
            result = await self.info.run(self.spec, env)
        except Exception as e:  # a bug in a method fails this episode only
            log.exception("episode %s: grounding step %d failed inside the method", self.spec.trial_key, k)
            result = TrialResult(
                status="error",
                stop_reason="error",
                final_point=None,
                error_class="internal",
                error=f"{type(e).__name__}: {e}"[:300],
            )
        finally:
            self.registry.release(sid)
        for s in result.steps:
            s.index = len(self.calls)
            s.episode_step = k
            self.calls.append(s)
        point = Point(*result.final_point) if result.final_point is not None else None
        return Grounded(point, result, time.perf_counter() - t)

    def took(self, row: EpisodeStepRecord, g: Grounded) -> bool:
        """Record a step's grounding on its row (calls, how it stopped, its seconds, its point); ``False``
        when it gave no point (a failed model call is kept as the episode's :attr:`call_failure`)."""
        row.calls, row.grounding_stop, row.ground_s = (
            len(g.result.steps),
            g.result.stop_reason,
            round(g.seconds, 4),
        )
        if g.point is None:
            if g.result.status == "error" and g.result.error_class is not None:
                self.call_failure = g.result
            return False
        row.point = g.point.as_list()
        return True

    async def after(self, row: EpisodeStepRecord, capture: Any, h0: float) -> Any:
        """The screen after a step: captured, stored as the row's ``frame_after``, the step's harness
        seconds counted from ``h0``; returned (the next step's screen)."""
        image = await self.browser(capture)
        row.frame_after = self.shot(image)
        row.harness_s = round(self.harness_s - h0, 4)
        return image

    def shot(self, image: Any) -> str:
        """Store a screenshot (content-addressed) and return its sha256."""
        return self.env.save_shot(encode_png(image))

    async def run(self) -> TrialResult:
        seed = episode_seed(self.spec)
        page = self.page = self.source.page(self.spec.task)
        rec = EpisodeRecord(
            task=self.name,
            family=family_of(self.name),
            seed=seed,
            plan=self.opts.plan,
            planner="model" if uses_model(self.env, self.opts.plan) else "oracle",
            scale=self.scale,
            size=page.size.as_list(),
        )
        t0 = time.perf_counter()
        try:
            end = await self.steps(page, rec, seed, t0)
        except Exception as e:  # the page crashed, hung or refused to load: this episode fails in one line
            end = "page_error"
            first = str(e).strip().splitlines()
            rec.error = (first[0] if first else type(e).__name__)[:300]
        finally:
            await self.browser(page.close)
        rec.end = end
        rec.wall_s = round(time.perf_counter() - t0, 4)
        rec.first_off_target = next(
            (s.index for s in rec.steps if s.located is False or s.drop_located is False), None
        )
        return self.result(rec)

    async def steps(self, page: EpisodePage, rec: EpisodeRecord, seed: int, t0: float) -> EpisodeEnd:
        planner = PLANNERS.get(self.name)
        if planner is None:
            rec.error = f"no oracle planner for the miniwob task {self.name!r}"
            return "plan_error"
        model = ModelPlanner(self.spec, self.env, planner) if rec.planner == "model" else None
        dom: Dom = await self.browser(page.start, seed, self.opts.wall_s)
        rec.query = dom.query
        image = await self.browser(page.capture)
        for k in range(self.opts.max_steps + 1):
            if dom.done:
                return self.verdict(rec, dom)
            if time.perf_counter() - t0 > self.opts.wall_s:
                rec.error = f"no verdict after {self.opts.wall_s:g} s"
                return "wall_cap"
            if model is not None and k == self.opts.max_steps:  # no paid planning call past the cap
                rec.error = f"no verdict after {self.opts.max_steps} steps"
                return "step_cap"
            try:
                if model is not None:
                    planned = await self.ask_model(model, rec, dom, image, k)
                    if isinstance(planned, str):
                        return "plan_error"
                    step = planned
                else:
                    step = planner(dom, k)
            except LookupError as e:
                rec.error = f"step {k}: the planner cannot read the page: {e}"[:300]
                return "plan_error"
            if step is None:
                rec.error = "the plan ended without the page's verdict"
                return "plan_over"
            if k == self.opts.max_steps:
                rec.error = f"no verdict after {self.opts.max_steps} steps"
                return "step_cap"
            h0 = self.harness_s
            row, ok = await self.step(page, dom, image, k, step)
            rec.steps.append(row)
            if ok and step.settle_ms:
                await self.browser(page.settle, step.settle_ms)
            if not ok:
                rec.error = f"step {k}: the method gave no point ({row.grounding_stop})"
                return "grounding_failed"
            after: Dom = await self.browser(page.read)
            row.interacted = step.expect(dom, after) if step.expect is not None else dom.changed(after)
            row.done_after = after.done
            image = await self.after(row, page.capture, h0)
            dom = after
        return "step_cap"  # unreachable: the loop returns at k == max_steps

    async def step(
        self, page: EpisodePage, dom: Dom, image: Any, k: int, step: PlannedStep
    ) -> tuple[EpisodeStepRecord, bool]:
        """Ground and execute one step; ``(its row, whether the grounding gave every point)``."""
        text = step.text if step.text is not None else step.hold
        row = EpisodeStepRecord(index=k, action=step.action, instruction=step.instruction, text=text)
        if step.call is not None:  # the model planned it
            row.planned_by, row.plan_call = "model", step.call
        if step.action not in GROUNDED:
            row.frame_before = self.shot(image)
            if step.action == "type":
                await self.browser(page.type, step.text or "")
            else:
                await self.browser(page.key, step.text or "", step.times)
            return row, True
        el = dom.by_idx(step.target) if step.target is not None else None
        if el is None and step.call is None:
            raise LookupError(f"step {k}: the planned target is not on the page")
        box = NO_TRUTH
        if el is not None:
            box = css_box_to_image(el.box, self.scale)
            row.target, row.target_box = f"{el.tag}{'#' + el.id if el.id else ''}@{el.idx}", box.as_list()
            row.truth = "oracle" if step.call is not None else None
        row.frame_before = self.shot(image)
        g = await self.ground(image, k, "", step.instruction, row.target or "-", box)
        if not self.took(row, g):
            return row, False
        assert g.point is not None  # took() saw it
        row.hit_element, row.located = await self.browser(page.hit, g.point, el.idx if el else -1)
        if el is None:
            row.located = None  # a model's target with no truth: not scored
        if step.action == "click":
            await self.browser(page.click, g.point, step.hold)
        elif step.action == "hover":
            await self.browser(page.hover, g.point)
        elif step.action == "scroll":
            await self.browser(page.scroll, g.point, step.text or "down", step.times)
        elif step.action == "select":
            row.refused = await self.browser(page.select, g.point, step.text or "")
        elif step.action == "drag" and step.drop is not None:
            try:
                drop = css_box_to_image(step.drop.box(dom, css_point(g.point, self.scale)), self.scale)
                row.drop_box = drop.as_list()
            except PlanError:  # a model's drop with no truth: grounded, not scored
                drop = NO_TRUTH
            row.drop_instruction = step.drop.instruction
            d = await self.ground(image, k, "to", f"Drag it to {step.drop.instruction}", "drop", drop)
            row.calls += len(d.result.steps)
            row.ground_s = round(row.ground_s + d.seconds, 4)
            if d.point is None:
                if d.result.status == "error" and d.result.error_class is not None:
                    self.call_failure = d.result
                return row, False
            row.drop_point = d.point.as_list()
            row.drop_located = drop.contains(d.point) if row.drop_box is not None else None
            await self.browser(page.drag, g.point, d.point)
        return row, True

    async def ask_model(
        self, model: ModelPlanner, rec: EpisodeRecord, dom: Dom, image: Any, k: int
    ) -> PlannedStep | None | str:
        """The model's next step (``None``: it called ``done``); a one-line error (kept in ``rec.error``)
        when its reply is no usable planning call or the call failed."""
        sid = step_scene_id(self.spec.task, self.spec.trial_key, k, "plan")
        got = await model.next(dom, image, k, sid, self.shot(image))
        if got.record is not None:
            got.record.index = len(self.calls)
            self.calls.append(got.record)
        if got.failed_call is not None:
            err = got.failed_call
            self.call_failure = TrialResult(
                status="error", stop_reason="error", final_point=None, error_class=err.error_class,
                error=str(err)[:300],
            )  # fmt: skip
            rec.error = f"step {k}: the planning call failed"
            return rec.error
        if got.error is not None:
            rec.error = f"step {k}: {got.error}"[:300]
            return rec.error
        return got.step

    def verdict(self, rec: EpisodeRecord, dom: Dom) -> EpisodeEnd:
        rec.done, rec.raw_reward = True, dom.raw_reward
        rec.success = dom.raw_reward > 0
        rec.reason = None if dom.reason in ("null", "undefined", "None") else dom.reason
        return "verdict"

    def result(self, rec: EpisodeRecord) -> TrialResult:
        grounded = [s for s in rec.steps if s.point is not None]
        last = grounded[-1] if grounded else None
        failed = rec.end == "page_error"
        cut = (
            self.call_failure if rec.end in ("grounding_failed", "plan_error") else None
        )  # a call failed, not the model
        out = TrialResult(
            status="error" if failed or cut is not None else "ok",
            stop_reason="error" if failed or cut is not None else "episode",
            final_point=last.point if last is not None else None,
            iterations=len(rec.steps),
            error_class="scene" if failed else (cut.error_class if cut is not None else None),
            error=rec.error if failed else (f"{rec.error}: {cut.error}"[:300] if cut is not None else None),
            steps=self.calls,
            episode=rec,
        )
        return finish(out)


def episode_target(result: TrialResult) -> Box:
    """The box a trial record scores its final point on: the last grounded step's target."""
    rec = result.episode
    boxes = [s.target_box for s in rec.steps if s.target_box is not None] if rec is not None else []
    return Box(*boxes[-1]) if boxes else Box(0, 0, 0, 0)


def all_located(result: TrialResult) -> bool | None:
    """Every grounded step (and drop) landed on its target; ``None`` with no grounded step."""
    rec = result.episode
    if rec is None:
        return None
    checks = [v for s in rec.steps for v in (s.located, s.drop_located) if v is not None]
    return all(checks) if checks else None


async def run_episode(
    spec: TrialSpec, env: TrialEnv, info: MethodInfo, registry: SceneRegistry
) -> TrialResult:
    """The episode of ``spec`` (a ``miniwob.*`` task) with its method grounding every step."""
    source = registry.source("miniwob")
    assert isinstance(source, MiniwobSource)
    return await Episode(spec, env, info, source, registry).run()
