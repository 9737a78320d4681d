"""Episodes (issue #54): the method grounds every step of a MiniWoB task on the live page, the step is made
with real input, and the page's own verdict scores the episode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from dvoc_bench.core.geometry import Box
from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.episodes import Episode
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.miniwob.dom import css_box_to_image
from dvoc_bench.scenes.miniwob.settings import Episode as EpisodeSettings
from dvoc_bench.scenes.miniwob.source import MiniwobSource, step_snapshot
from tests.support import ShotSink, make_spec, miniwob_or_skip

pytestmark = pytest.mark.e2e


def test_oracle_plan_with_sim_ideal_succeeds_by_the_pages_verdict(tmp_path: Path) -> None:
    """The product path (run_sweep, experiment=episodes): every episode ends on the page's verdict with a
    positive raw reward, every grounded step located, every step's intended change made."""
    miniwob_or_skip()
    tasks = "miniwob.click-checkboxes,miniwob.enter-text,miniwob.choose-list,miniwob.drag-box"
    setup = quick_setup(["experiment=episodes", f"tasks=[{tasks}]", "methods=[oneshot,som]", "repeats=2",
                         "run.quiet=true"])  # fmt: skip
    run_sweep(setup, tmp_path)
    trials = [json.loads(x) for x in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert len(trials) == 4 * 2 * 2
    for t in trials:
        ep = t["episode"]
        assert t["scene_kind"] == "miniwob" and t["status"] == "ok", t.get("error")
        assert ep["end"] == "verdict" and ep["done"] and ep["raw_reward"] > 0 and t["episode_success"], ep
        assert ep["size"] == [640, 840] and ep["seed"] == t["rep"]
        grounded = [s for s in ep["steps"] if s["point"] is not None]
        assert grounded and all(s["located"] for s in grounded)
        assert all(s["interacted"] for s in ep["steps"])
        assert all(s["located"] is None for s in ep["steps"] if s["action"] in ("type", "key"))
        assert t["hit"] is True and ep["first_off_target"] is None
        assert all(s["frame_before"] and s["frame_after"] for s in ep["steps"])
    drags = [s for t in trials for s in t["episode"]["steps"] if s["action"] == "drag"]
    assert drags and all(s["drop_located"] for s in drags)
    calls = [json.loads(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert calls and all(c["episode_step"] is not None for c in calls)
    # the same seeds for both methods (paired): one query per task and repeat
    queries = {(t["task"], t["rep"]): set() for t in trials}
    for t in trials:
        queries[(t["task"], t["rep"])].add(t["episode"]["query"])
    assert all(len(q) == 1 for q in queries.values())


# ------------------------------------------------------------------ the episode loop with a scripted method


@pytest.fixture(scope="module")
def source() -> Iterator[MiniwobSource]:
    miniwob_or_skip()
    src = MiniwobSource(EpisodeSettings(max_steps=4))
    yield src
    src.close()


Grounder = Callable[[Episode, TrialEnv], Awaitable[list[float]]]


def run_episode_with(source: MiniwobSource, task: str, seed: int, ground: Grounder) -> TrialResult:
    """One episode of ``task`` whose every grounding is ``ground(episode, env)`` (a point, no model)."""
    registry = SceneRegistry(default_scenes_dir(), sources={"miniwob": source})
    spec: TrialSpec = make_spec(task=f"miniwob.{task}", method="scripted", rep=seed, seed=1)
    blank = step_snapshot("blank", np.zeros((840, 640, 3), np.uint8), "-", "-", Box(0, 0, 1, 1))
    env = TrialEnv(snapshot=blank, model=None, model_identity="t", save_shot=ShotSink())
    holder: dict[str, Episode] = {}

    async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult:
        point = await ground(holder["e"], env)
        return TrialResult(status="ok", stop_reason="hit", final_point=point)

    ep = Episode(spec, env, SimpleNamespace(run=run), source, registry)  # type: ignore[arg-type]
    holder["e"] = ep
    return asyncio.run(ep.run())


async def on_target(ep: Episode, env: TrialEnv) -> list[float]:
    return env.snapshot.truth.target_box.centre.as_list()


def test_a_point_off_the_target_makes_the_pages_own_verdict_fail(source: MiniwobSource) -> None:
    """click-test-2: pointing at button TWO when the step asks for ONE is the page's failure (raw reward -1),
    the step is off target, and the same seed with the target's centre succeeds."""

    async def at_two(ep: Episode, env: TrialEnv) -> list[float]:
        assert ep.page is not None
        dom = await asyncio.to_thread(ep.page.read)
        return css_box_to_image(dom.one(tag="button", text="TWO").box, ep.scale).centre.as_list()

    off = run_episode_with(source, "click-test-2", 5, at_two).episode
    on = run_episode_with(source, "click-test-2", 5, on_target).episode
    assert off is not None and on is not None
    assert off.end == "verdict" and off.done and off.raw_reward == -1.0 and not off.success
    assert off.steps[0].located is False and off.first_off_target == 0
    assert "subbtn2" in (off.steps[0].hit_element or "")
    assert on.success and on.raw_reward == 1.0 and on.steps[0].located


def test_a_step_located_with_no_state_change_is_located_not_interacted(source: MiniwobSource) -> None:
    """click-checkboxes with the checkboxes made inert (their clicks prevented): the click lands on the
    planned checkbox (located) but it stays unchecked (not interacted); the planner asks again until the
    step cap, and the page gives no verdict."""
    inert = "() => document.querySelectorAll('input').forEach(e => e.onclick = ev => ev.preventDefault())"

    async def inert_then_centre(ep: Episode, env: Any) -> list[float]:
        assert ep.page is not None
        await asyncio.to_thread(ep.page.evaluate, inert)
        return await on_target(ep, env)

    for seed in range(6):  # a seed whose task checks at least one box
        rec = run_episode_with(source, "click-checkboxes", seed, inert_then_centre).episode
        assert rec is not None
        if rec.steps and rec.steps[0].action == "click" and rec.steps[0].instruction.startswith("Check"):
            break
    else:
        pytest.fail("no seed asked for a checkbox")
    first = rec.steps[0]
    assert first.located is True and first.interacted is False
    assert rec.end == "step_cap" and not rec.done and not rec.success and len(rec.steps) == 4


def test_a_failing_page_fails_its_own_episode_in_one_line(source: MiniwobSource, monkeypatch) -> None:
    """A page that will not start is this episode's ``scene`` error (one line), not the sweep's."""
    from dvoc_bench.scenes.miniwob import driver
    from dvoc_bench.scenes.sources import SceneError

    def broken(self: driver.EpisodePage, seed: int, max_time_s: float) -> None:
        raise SceneError("miniwob click-test: the page did not load: net::ERR_ABORTED\nat line 2")

    monkeypatch.setattr(driver.EpisodePage, "start", broken)
    result = run_episode_with(source, "click-test", 0, on_target)
    assert result.status == "error" and result.error_class == "scene" and result.episode is not None
    assert result.episode.end == "page_error" and not result.episode.success
    assert result.error == "miniwob click-test: the page did not load: net::ERR_ABORTED"


# ------------------------------------------------------- the widget planners: date, menus, lists, scrolling

WIDGET_TASKS = ["choose-date", "click-menu", "click-menu-2", "use-autocomplete", "drag-items", "scroll-text",
                "scroll-text-2", "click-scroll-list"]  # fmt: skip


@pytest.fixture(scope="module")
def roomy() -> Iterator[MiniwobSource]:
    miniwob_or_skip()
    src = MiniwobSource(EpisodeSettings(max_steps=8))
    yield src
    src.close()


@pytest.mark.parametrize("task", WIDGET_TASKS)
def test_widget_planners_on_target_get_the_pages_verdict(roomy: MiniwobSource, task: str) -> None:
    """Each planner, grounded at its targets' centres through the episode loop, ends its task with the page's
    own positive reward; every grounded point located, every step's change made (seed 1: the scroll tasks
    need their wheel there)."""
    rec = run_episode_with(roomy, task, 1, on_target).episode
    assert rec is not None and rec.end == "verdict" and rec.success and rec.raw_reward == 1.0, rec
    assert all(s.located is not False and s.drop_located is not False for s in rec.steps)
    assert all(s.interacted for s in rec.steps), [(s.action, s.instruction) for s in rec.steps]
    if task.startswith("scroll") or task == "click-scroll-list":
        assert any(s.action == "scroll" for s in rec.steps)
    if task == "drag-items":
        assert rec.steps[0].action == "drag" and rec.steps[0].drop_located is True


def test_a_wheel_off_the_scrolled_area_scrolls_nothing(roomy: MiniwobSource) -> None:
    """scroll-text-2 with every point on the Submit button: the wheel turns over the button, the text area
    does not move (located False, not interacted), the planner asks again, and no verdict comes."""

    async def on_submit(ep: Episode, env: TrialEnv) -> list[float]:
        assert ep.page is not None
        dom = await asyncio.to_thread(ep.page.read)
        return css_box_to_image(dom.one(id="subbtn").box, ep.scale).centre.as_list()

    rec = run_episode_with(roomy, "scroll-text-2", 1, on_submit).episode
    assert rec is not None and not rec.success and not rec.done and rec.end == "step_cap"
    assert rec.steps and all(s.action == "scroll" for s in rec.steps)
    assert all(s.located is False and s.interacted is False for s in rec.steps)
    assert rec.first_off_target == 0


def test_a_drag_is_scored_per_endpoint_and_the_page_judges_the_drop(roomy: MiniwobSource) -> None:
    """drag-items: the grab on the planned row but the drop on the top row (the task wants another place):
    the grab is located, the drop is not, and the page's own verdict is a failure."""

    async def drop_on_top(ep: Episode, env: TrialEnv) -> list[float]:
        if not env.snapshot.truth.instruction.startswith("Drag it to"):
            return await on_target(ep, env)
        assert ep.page is not None
        dom = await asyncio.to_thread(ep.page.read)
        top = next(e for e in dom.find(tag="li") if e.parent == dom.one(id="sortable").idx)
        x0, y0, x1, y1 = css_box_to_image(top.box, ep.scale).as_list()
        return [(x0 + x1) / 2, y0 + 4]

    for seed in range(1, 8):  # a seed whose goal is not the top row
        rec = run_episode_with(roomy, "drag-items", seed, drop_on_top).episode
        assert rec is not None
        if "to the top" not in rec.query and "1st" not in rec.query and "up by one" not in rec.query:
            break
    else:
        pytest.fail("no seed with a goal below the top")
    step = rec.steps[0]
    assert step.located is True and step.drop_located is False
    assert rec.done and rec.raw_reward == -1.0 and not rec.success and rec.first_off_target == 0
