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
