"""Model-planned episodes (issue #54, ``episode.plan=model``): a real model's client (LiteLLM, HTTP on
loopback) plans MiniWoB tasks with the planning tools and its targets in words are grounded by the method;
the page's own verdict scores the episode. The scripted endpoint knows the pages only from a separate
browser that opened the same seeds (MiniWoB's seeding is deterministic), never from the harness."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.models.base import Reply, ToolCall
from dvoc_bench.protocol.episode_tools import PLAN_TOOL_NAMES, read_plan_call
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes.miniwob.dom import css_box_to_image
from dvoc_bench.scenes.miniwob.driver import EpisodePage
from dvoc_bench.scenes.web.browser import WebBrowser
from tests.support import Answer, chat_completion, fake_openai, miniwob_or_skip

CONFIG = """\
name: planner
kind: litellm
model_id: hosted_vllm/planner-vlm
provider: vllm
api_base: {url}
coord_frame: norm1000
params: {{}}
send_seed: true
"""

SEED = 3
SCALE = 4.0
USAGE = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}


def centres(task: str) -> dict[str, tuple[float, float]]:
    """Where things are on ``task``'s page at seed :data:`SEED`, in norm1000 of the 640x840 screenshot,
    read by a browser of the test's own."""
    b = WebBrowser()
    try:
        page = EpisodePage(b, task, SCALE)
        dom = page.start(SEED, 60)
        out = {}
        for e in dom.visible():
            if e.tag in ("button", "input") and e.box[2] > e.box[0]:
                c = css_box_to_image(e.box, SCALE).centre
                key = e.text or e.id
                out[key] = (c.x / 640 * 1000, c.y / 840 * 1000)
        page.close()
        return out
    finally:
        b.close()


def plan_reply(text: str) -> tuple[str, dict[str, Any]]:
    """The scripted plan: from the task in the prompt and the steps it lists as taken."""
    task = re.search(r"Task: (.*)", text).group(1)  # type: ignore[union-attr]
    taken = len(re.findall(r"^\d+\. ", text, re.M))
    if task.startswith("Click on the"):  # click-button
        label = re.search(r'"(.*)"', task).group(1)  # type: ignore[union-attr]
        return "click", {"target": f'the "{label}" button'}
    if task.startswith("Enter"):  # enter-text
        word = re.search(r'"(.*)"', task).group(1)  # type: ignore[union-attr]
        script = [
            ("click", {"target": "the text field"}),
            ("type", {"text": word}),
            ("click", {"target": 'the "Submit" button'}),
            ("done", {}),
        ]
        return script[taken]
    return "tap", {"where": "the button"}  # click-test: a tool that does not exist


@pytest.mark.e2e
def test_a_model_plans_real_miniwob_tasks_end_to_end(tmp_path: Path) -> None:
    miniwob_or_skip()
    where = {**centres("click-button"), **centres("enter-text")}

    def answer(body: dict[str, Any], headers: Any) -> Answer:
        text = body["messages"][0]["content"][0]["text"]
        tools = [t["function"]["name"] for t in body.get("tools") or []]
        if "done" in tools:
            name, args = plan_reply(text)
            return 200, chat_completion("planner-vlm", tool=(name, json.dumps(args)), usage=USAGE), {}
        if "text field" in text:
            x, y = where["tt"]
        elif '"Submit"' in text:
            x, y = where["Submit"]
        else:
            label = re.search(r'Click the "(.*?)" button', text).group(1)  # type: ignore[union-attr]
            x, y = where[label]
        reply = chat_completion("planner-vlm", tool=("click_at", json.dumps({"x": x, "y": y})), usage=USAGE)
        return 200, reply, {}

    with fake_openai(answer) as (url, server):
        models = tmp_path / "model"
        models.mkdir()
        (models / "planner.yaml").write_text(CONFIG.format(url=url), encoding="utf-8")
        tasks = "miniwob.click-button,miniwob.enter-text,miniwob.click-test"
        setup = quick_setup(["experiment=episodes", "models=[planner]", f"paths.models={models}",
                             f"tasks=[{tasks}]", "methods=[oneshot]", "repeats=1", f"seed={SEED}",
                             "episode.plan=model", "episode.max_steps=6", "cache.enabled=false",
                             "retry.transient_retries=0", "run.quiet=true"])  # fmt: skip
        run_sweep(setup, tmp_path / "run")
    trials = {t["task"]: t for t in read_jsonl(tmp_path / "run" / "trials.jsonl")}
    steps = list(read_jsonl(tmp_path / "run" / "steps.jsonl"))
    assert set(trials) == {"miniwob.click-button", "miniwob.enter-text", "miniwob.click-test"}
    for task in ("miniwob.click-button", "miniwob.enter-text"):
        t = trials[task]
        ep = t["episode"]
        assert t["status"] == "ok" and ep["plan"] == "model" and ep["planner"] == "model", ep
        assert ep["end"] == "verdict" and ep["raw_reward"] > 0 and t["episode_success"] is True, ep
        assert all(s["planned_by"] == "model" and s["plan_call"] for s in ep["steps"])
        grounded = [s for s in ep["steps"] if s["point"] is not None]
        assert grounded and all(s["located"] is True and s["truth"] == "oracle" for s in grounded)
    enter = trials["miniwob.enter-text"]["episode"]["steps"]
    assert [s["action"] for s in enter] == ["click", "type", "click"]
    assert enter[1]["plan_call"].startswith("type(text=")
    # every planning call and every grounding call is a steps.jsonl line of its trial
    plans = [s for s in steps if s["kind"] == "plan"]
    assert len(plans) == 1 + 3 + 1 and all(s["episode_step"] is not None for s in plans)
    assert {s["parse_status"] for s in plans} == {"ok", "parse_error"}
    assert trials["miniwob.enter-text"]["model_calls"] == 3 + 2  # three plans, two groundings
    # a plan with a bad tool call fails that episode in one line; the sweep went on
    bad = trials["miniwob.click-test"]
    assert bad["episode"]["end"] == "plan_error" and not bad["episode_success"]
    err = bad["episode"]["error"]
    assert "\n" not in err and "unknown tool 'tap'" in err and err.startswith("step 0:")
    assert server.requests == 2 + 5 + 1  # nothing asked after a verdict or a bad plan


@pytest.mark.e2e
def test_the_simulator_plans_by_the_oracle_and_every_row_says_so(tmp_path: Path) -> None:
    miniwob_or_skip()
    setup = quick_setup(["experiment=episodes", "tasks=[miniwob.enter-text]", "methods=[oneshot]",
                         "repeats=1", "episode.plan=model", "run.quiet=true"])  # fmt: skip
    run_sweep(setup, tmp_path)
    (t,) = list(read_jsonl(tmp_path / "trials.jsonl"))
    ep = t["episode"]
    assert ep["plan"] == "model" and ep["planner"] == "oracle" and t["episode_success"]
    assert ep["steps"] and all(s["planned_by"] == "oracle" and s["plan_call"] is None for s in ep["steps"])
    assert not [s for s in read_jsonl(tmp_path / "steps.jsonl") if s["kind"] == "plan"]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (ToolCall("click", '{"target": "the OK button"}'), None),
        (ToolCall("functions.done", "{}"), None),
        (ToolCall("tap", "{}"), "unknown tool 'tap'"),
        (ToolCall("click", "{}"), "click: missing target"),
        (ToolCall("drag", '{"from": "a"}'), "drag: missing to"),
        (ToolCall("scroll", '{"direction": "sideways"}'), "scroll: direction"),
        (ToolCall("type", '{"text": 5}'), "type: text: not text"),
        (ToolCall("click", "{not json"), "click: arguments are not JSON"),
    ],
)
def test_read_plan_call_names_what_is_wrong(call: ToolCall, error: str | None) -> None:
    got = read_plan_call(Reply(text=None, tool_calls=[call]))
    if error is None:
        assert got.error is None and got.tool in PLAN_TOOL_NAMES
    else:
        assert got.error is not None and error in got.error and "\n" not in got.error
    assert read_plan_call(Reply(text="click the OK button")).error == "the reply has no tool call"


class _AlwaysClicks:
    """A real (not simulated) model that plans the same click forever and answers no grounding."""

    name = "always"
    simulated = False

    def __init__(self) -> None:
        self.plans = 0

    async def complete(self, req: Any) -> Reply:
        self.plans += 1
        return Reply(text=None, tool_calls=[ToolCall("click", '{"target": "the first checkbox"}')])


@pytest.mark.e2e
def test_the_step_cap_ends_a_model_plan_without_a_further_call(tmp_path: Path) -> None:
    """click-checkboxes planned by a model that never submits: four steps, then ``step_cap``; the model is
    asked exactly four times (never for a step past the cap); every row names the model as its planner."""
    import asyncio
    from types import SimpleNamespace

    import numpy as np

    from dvoc_bench.core.geometry import Box
    from dvoc_bench.core.records import TrialResult
    from dvoc_bench.methods.common import TrialEnv
    from dvoc_bench.runner.episodes import Episode
    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
    from dvoc_bench.scenes.miniwob.settings import Episode as EpisodeSettings
    from dvoc_bench.scenes.miniwob.source import MiniwobSource, step_snapshot
    from tests.support import ShotSink, make_spec

    miniwob_or_skip()
    source = MiniwobSource(EpisodeSettings(max_steps=4, plan="model"))
    model = _AlwaysClicks()
    try:
        registry = SceneRegistry(default_scenes_dir(), sources={"miniwob": source})
        spec = make_spec(task="miniwob.click-checkboxes", method="scripted", rep=0, seed=1)
        blank = step_snapshot("blank", np.zeros((840, 640, 3), np.uint8), "-", "-", Box(0, 0, 1, 1))
        env = TrialEnv(snapshot=blank, model=model, model_identity="t", save_shot=ShotSink())  # type: ignore[arg-type]

        async def ground(spec: Any, env: TrialEnv) -> TrialResult:
            return TrialResult(status="ok", stop_reason="hit", final_point=[5.0, 5.0])

        ep = Episode(spec, env, SimpleNamespace(run=ground), source, registry)  # type: ignore[arg-type]
        result = asyncio.run(ep.run())
    finally:
        source.close()
    rec = result.episode
    assert rec is not None and rec.planner == "model" and rec.end == "step_cap" and not rec.success
    assert len(rec.steps) == 4 and model.plans == 4
    assert all(
        s.planned_by == "model" and s.plan_call == "click(target='the first checkbox')" for s in rec.steps
    )
    assert [s.kind for s in result.steps] == ["plan"] * 4
