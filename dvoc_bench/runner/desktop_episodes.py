"""An episode trial on a real GTK program (docs/episodes.md, "Desktop episodes"): the desktop twin of
:mod:`dvoc_bench.runner.episodes`, through the same episode record and the same grounding.

The program is started in a session of its own (Xvfb, private D-Bus and AT-SPI bus); for every step the
task's oracle planner reads the program's state through AT-SPI and names the action, its words and its
target accessible; the screen is grabbed; the trial's method grounds the step on that screenshot exactly as
it grounds a single-click trial; the point is hit-tested by AT-SPI against the target (``located``; a
target the hit test cannot reach, such as a popover's button, or a part of an accessible such as a
slider's knob, by its box); the action is made as real X input (``xdotool``: click, type, key, drag as
press + moves + release); the program is read again (``interacted``) and the screen grabbed again. The
episode ends when the program closes (a zenity dialog: its printed answer is the verdict), when the plan
has nothing left (the program's state read through AT-SPI is the verdict), at the step cap or the
wall-clock cap. A program that exits when it should not, or dies, fails its episode in one line
(``error_class=scene``); the session is always closed.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from typing import Any, cast

from dvoc_bench.core.episode_records import EpisodeEnd, EpisodeRecord, EpisodeStepRecord
from dvoc_bench.core.geometry import Box
from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.methods.registry import MethodInfo
from dvoc_bench.runner.episodes import Episode, episode_seed
from dvoc_bench.scenes import SceneRegistry
from dvoc_bench.scenes.desktop.episodes import DesktopPage, View
from dvoc_bench.scenes.desktop.gtk_source import SOURCE, GtkEpisodeSource, is_desktop_episode, task_name
from dvoc_bench.scenes.desktop.gtk_tasks import GROUNDED, TASKS, GtkTask, Setup, Step, box_of

__all__ = ["DesktopEpisode", "is_desktop_episode", "run_desktop_episode"]


class ProgramExited(RuntimeError):
    """The program exited (or was killed) when the task does not end that way."""


class DesktopEpisode(Episode):
    """One desktop episode while it runs (see the module docstring)."""

    def __init__(
        self,
        spec: TrialSpec,
        env: TrialEnv,
        info: MethodInfo,
        source: GtkEpisodeSource,
        registry: SceneRegistry,
    ) -> None:
        super().__init__(spec, env, info, cast(Any, source), registry)
        self.gsource = source
        self.name = task_name(spec.task)
        self.scale = 1.0
        self.program = "the program"
        """The program's command line (for messages)."""
        self.desk: DesktopPage | None = None
        """The live program while the episode runs (what a test's method may look at)."""

    async def run(self) -> TrialResult:
        seed = episode_seed(self.spec)
        gtask = TASKS[self.name]
        setup = self.gsource.setup(self.spec.task, seed)
        size = setup.size or self.gsource.desktop.size
        rec = EpisodeRecord(
            task=self.name,
            family=gtask.family,
            seed=seed,
            plan=self.opts.plan,
            scale=1.0,
            size=size.as_list(),
            query=setup.query,
            program=shlex.join(setup.command),
        )
        self.program = rec.program or self.program
        t0 = time.perf_counter()
        try:
            t = time.perf_counter()
            self.desk = await asyncio.to_thread(self.gsource.page, self.spec.task, setup)
            rec.start_s = round(time.perf_counter() - t, 4)
            end = await self.desktop_steps(self.desk, rec, gtask, setup, t0)
        except Exception as e:  # the program would not start, died or exited: this episode fails in one line
            end = "page_error"
            first = str(e).strip().splitlines()
            gone = await asyncio.to_thread(self.gone, gtask) if not isinstance(e, ProgramExited) else None
            rec.error = (gone or (first[0] if first else type(e).__name__))[:300]
        finally:
            if self.desk is not None:
                await asyncio.to_thread(self.desk.close)
        rec.end = end
        rec.wall_s = round(time.perf_counter() - t0, 4)
        rec.first_off_target = next(
            (s.index for s in rec.steps if s.located is False or s.drop_located is False), None
        )
        return self.result(rec)

    def closed(self, gtask: GtkTask, view: View) -> bool:
        """The program has closed with its answer (``gtask.exits``); any other exit raises
        :class:`ProgramExited`."""
        if view.alive:
            return False
        code = view.exit_code
        if gtask.exits and code is not None and code >= 0:
            return True
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited (code {code})"
        raise ProgramExited(
            f"{self.spec.task}: {shlex.split(self.program)[0]} {how} in the middle of the episode"
        )

    def gone(self, gtask: GtkTask) -> str | None:
        """Why a step failed when the program is no longer there (the line :meth:`closed` gives), or
        ``None`` while it runs (the failure was something else)."""
        if self.desk is None:
            return None
        try:
            self.closed(gtask, self.desk.read(0))
        except ProgramExited as e:
            return str(e)
        except Exception:  # the session itself is gone
            return f"{self.spec.task}: the program's session ended in the middle of the episode"
        return None

    async def desktop_steps(
        self, page: DesktopPage, rec: EpisodeRecord, gtask: GtkTask, setup: Setup, t0: float
    ) -> EpisodeEnd:
        view: View = await self.browser(page.read, 0)
        image = await self.browser(page.capture)
        for k in range(self.opts.max_steps + 1):
            if self.closed(gtask, view):
                return self.desktop_verdict(rec, gtask, view, setup)
            if time.perf_counter() - t0 > self.opts.wall_s:
                rec.error = f"no verdict after {self.opts.wall_s:g} s"
                return "wall_cap"
            try:
                step = gtask.plan(view, k, setup.goal)
            except LookupError as e:
                rec.error = f"step {k}: the planner cannot read the program: {e}"[:300]
                return "plan_error"
            if step is None:
                if gtask.exits:
                    rec.error = "the plan ended and the program is still open"
                    return "plan_over"
                return self.desktop_verdict(rec, gtask, view, setup)
            if k == self.opts.max_steps:
                rec.error = f"no verdict after {self.opts.max_steps} steps"
                return "step_cap"
            h0 = self.harness_s
            row, ok = await self.desktop_step(page, view, image, k, step)
            rec.steps.append(row)
            if not ok:
                rec.error = f"step {k}: the method gave no point ({row.grounding_stop})"
                return "grounding_failed"
            after: View = await self.browser(page.read)
            try:
                row.interacted = (
                    step.expect(view, after)
                    if step.expect is not None
                    else (view.state_key() != after.state_key())
                )
            except LookupError:  # what the step should have changed is gone
                row.interacted = False
            row.done_after = not after.alive
            image = await self.after(row, page.capture, h0)
            view = after
        return "step_cap"  # unreachable: the loop returns at k == max_steps

    async def desktop_step(
        self, page: DesktopPage, view: View, image: Any, k: int, step: Step
    ) -> tuple[EpisodeStepRecord, bool]:
        """Ground and execute one step; ``(its row, whether the grounding gave every point)``."""
        row = EpisodeStepRecord(index=k, action=step.action, instruction=step.instruction, text=step.text)
        if step.action not in GROUNDED:
            row.frame_before = self.shot(image)
            if step.action == "type":
                await self.browser(page.type, step.text or "")
            else:
                await self.browser(page.key, step.text or "", step.times)
            return row, True
        w = view.get(step.target) if step.target is not None else None
        if w is None:
            raise LookupError(f"step {k}: the planned target {step.target!r} is not showing")
        box = step.box or box_of(w)
        row.target, row.target_box = w.id, box.as_list()
        row.frame_before = self.shot(image)
        g = await self.ground(image, k, "", step.instruction, w.id, box)
        if not self.took(row, g):
            return row, False
        assert g.point is not None  # took() saw it
        row.hit_element, row.located, row.located_by = await self.browser(
            self.locate, page, g.point, w.id, box, step
        )
        if step.action == "click":
            await self.browser(page.click, g.point)
        elif step.action == "drag" and step.drop is not None:
            drop = step.drop.box(view, g.point)
            row.drop_instruction, row.drop_box = step.drop.instruction, drop.as_list()
            d = await self.ground(image, k, "to", f"Drag it to {step.drop.instruction}", "drop", drop)
            row.calls += len(d.result.steps)
            row.ground_s = round(row.ground_s + d.seconds, 4)
            if d.point is None:
                if d.result.status == "error" and d.result.error_class is not None:
                    self.call_failure = d.result
                return row, False
            row.drop_point, row.drop_located = d.point.as_list(), drop.contains(d.point)
            await self.browser(page.drag, g.point, d.point)
        return row, True

    @staticmethod
    def locate(
        page: DesktopPage, point: Any, target: str, box: Box, step: Step
    ) -> tuple[str | None, bool, str]:
        """``(the accessible under the point, located, by what)``: AT-SPI's hit test on the target; by the box
        when the target is a part of its accessible (a knob) or the hit test cannot reach the target at its
        own centre (GTK's popovers are not in the window-level hit test)."""
        element, hit = page.hit(point, target)
        if step.box is not None:
            return element, box.contains(point) and (hit or element is None), "box"
        if hit:
            return element, True, "accessible"
        reachable = page.hit(box.centre, target)[1]
        if reachable:
            return element, False, "accessible"
        return element, box.contains(point), "box"

    def desktop_verdict(self, rec: EpisodeRecord, gtask: GtkTask, view: View, setup: Setup) -> EpisodeEnd:
        rec.done = True
        rec.exit_code = view.exit_code
        rec.stdout = view.stdout or None
        rec.success, rec.reason = gtask.verdict(view, setup.goal)
        return "verdict"


async def run_desktop_episode(
    spec: TrialSpec, env: TrialEnv, info: MethodInfo, registry: SceneRegistry
) -> TrialResult:
    """The episode of ``spec`` (a ``gtk.*`` task) with its method grounding every step."""
    source = registry.source(SOURCE)
    assert isinstance(source, GtkEpisodeSource)
    return await DesktopEpisode(spec, env, info, source, registry).run()
