"""``run.plan_only`` counts what a trial grounds (issue 50): a drag is two endpoints' calls for every method
but one-shot (both points in one call per attempt), an episode is its plan's groundings times a
grounding's calls. Every expected number here is counted by hand from the knobs, not by the code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sizing import estimate, plan_lines
from dvoc_bench.runner.sweep import plan, run_sweep
from tests.scenes.test_cuactspot import DROP, TARGET, poly, write
from tests.support import miniwob_or_skip

KNOBS = ["loop.max_iterations=4", "oneshot.max_attempts=3", "zoom.rounds=1", "models=[sim-ideal]",
         "run.quiet=true", "run.frames=none"]  # fmt: skip


def one_click_one_drag(root: Path) -> Path:
    root.mkdir(parents=True)
    write(root, "GUI-click", [poly("R1", TARGET)])
    write(root, "Canvas-drag", [poly("R1", TARGET), poly("R2", DROP, rank="2")])
    return root


def calls(setup) -> tuple[int, float]:
    (p,) = estimate(setup, plan(setup))[0]
    return p.upper, p.expected


@pytest.mark.parametrize(
    ("methods", "starts", "drag_start", "click", "drag"),
    [
        # one-shot: up to 3 attempts, each ONE call whether it asks one point or two
        ("oneshot", "centre", "source", 3, 3),
        # DVOC from the centre: 4 verifier calls per end; a drag is 2 loops = 8
        ("dvoc", "centre", "source", 4, 8),
        # ... the end's loop from the model's own answer: 1 click_at more
        ("dvoc", "centre", "model", 4, 9),
        # starts=oneshot: 1 + 4 per grounding; each end starts from its own one-shot answer: 2 x 5
        ("dvoc", "oneshot", "model", 5, 10),
        # Set-of-Mark: 1 pick per end
        ("som", "centre", "source", 1, 2),
        # zoom: whole screen + 1 crop per end
        ("zoom", "centre", "source", 2, 4),
        # zoom then DVOC: 2 + 4 per end
        ("zoom_dvoc", "centre", "source", 6, 12),
    ],
)
def test_a_drag_costs_two_endpoints_calls_but_one_shots_one_call(
    tmp_path, methods, starts, drag_start, click, drag
):
    root = one_click_one_drag(tmp_path / "ds")
    base = ["dataset=cuactspot", f"dataset.root={root}", f"methods=[{methods}]", f"starts={starts}",
            f"dvoc.drag_start={drag_start}", *KNOBS]  # fmt: skip
    only_click = calls(quick_setup([*base, "tasks=[GUI-click]"]))
    only_drag = calls(quick_setup([*base, "tasks=[Canvas-drag]"]))
    # no record of these methods for sim-ideal: expected = the bound, both counted per grounding
    assert only_click == (click, click) and only_drag == (drag, drag)


def test_an_earlier_runs_one_point_trials_price_each_end_and_its_drags_price_drags(tmp_path):
    """``run.plan_from``: DVOC on sim-ideal ends a click in k calls; a drag is then expected at 2k (its
    one-point mean per end) until the earlier run holds drags, whose own mean is then used."""
    root = one_click_one_drag(tmp_path / "ds")
    base = ["dataset=cuactspot", f"dataset.root={root}", "methods=[dvoc]", "starts=centre", *KNOBS]
    run_sweep(quick_setup([*base, "tasks=[GUI-click]"]), tmp_path / "clicks")
    (click,) = [json.loads(x) for x in (tmp_path / "clicks" / "trials.jsonl").read_text().splitlines()]
    k = click["model_calls"]
    assert 1 <= k <= 4
    drag_plan = quick_setup([*base, "tasks=[Canvas-drag]", f"run.plan_from={tmp_path / 'clicks'}"])
    assert calls(drag_plan) == (8, 2 * k)
    assert "x 2 groundings" in "\n".join(plan_lines(drag_plan, plan(drag_plan)))
    run_sweep(quick_setup([*base, "tasks=[Canvas-drag]"]), tmp_path / "drags")
    (drag,) = [json.loads(x) for x in (tmp_path / "drags" / "trials.jsonl").read_text().splitlines()]
    again = quick_setup([*base, "tasks=[Canvas-drag]", f"run.plan_from={tmp_path / 'drags'}"])
    assert calls(again) == (8, drag["model_calls"])
    assert re.search(r"dvoc \(drag\) [\d.]+/trial in ", "\n".join(plan_lines(again, plan(again))))


@pytest.mark.e2e
def test_an_episode_costs_its_plans_groundings(tmp_path):
    """Groundings of the oracle plans counted by hand from the tasks: enter-password clicks the password
    field, the verify field and Submit (3); drag-box drags (its start and its drop: 2) then Submit (3);
    click-button-sequence clicks ONE then TWO (2); click-checkboxes depends on the page (assumed the step
    cap). The bound is the step cap (a drag step twice). sim-ideal one-shot then spends exactly those
    calls on the live pages (one call per grounding)."""
    miniwob_or_skip()
    hand = {"miniwob.enter-password": 3, "miniwob.drag-box": 3, "miniwob.click-button-sequence": 2}
    tasks = ",".join([*hand, "miniwob.click-checkboxes"])
    over = ["experiment=episodes", f"tasks=[{tasks}]", "repeats=1", "episode.max_steps=6"]
    one = quick_setup([*over, "methods=[oneshot]", "oneshot.max_attempts=3", "run.quiet=true"])
    (p,) = estimate(one, plan(one))[0]
    assert p.expected == (3 + 3 + 2 + 6) * 3  # no record of one-shot on sim-ideal: its bound per grounding
    assert p.upper == (6 + 6 * 2 + 6 + 6) * 3
    text = "\n".join(plan_lines(one, plan(one)))
    assert "assumed 6 groundings (episode.max_steps)" in text and "3 groundings, the oracle plan's" in text
    run = tmp_path / "run"
    only = f"tasks=[{','.join(hand)}]"
    run_sweep(quick_setup([*over, only, "methods=[oneshot]", "run.quiet=true"]), run)
    got = {
        t["task"]: t["model_calls"] for t in map(json.loads, (run / "trials.jsonl").read_text().splitlines())
    }
    assert got == hand
    again = quick_setup([*over, only, "methods=[oneshot]", f"run.plan_from={run}"])
    (q,) = estimate(again, plan(again))[0]
    assert q.expected == pytest.approx(sum(hand.values()))  # the episodes' own mean: 8/3 per episode x 3
