"""Set-of-Mark runs once per distinct input (issue 52 item 10): the start point changes nothing a Set-of-Mark
call sends, so on every kind of screen it is planned once per task and repeat (as every method without a
start is on a dataset), its one trial keeps the key it had as start index 1, and a run made with the old
plan (one SoM trial per start point) resumes without running anything again."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from dvoc_bench.core.geometry import Size
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.plan import build_plan
from dvoc_bench.runner.sweep import plan, run_sweep

SWEEP = ["models=[sim-ideal]", "methods=[som,som_dvoc,oneshot,dvoc]", "tasks=[S1,S2]", "starts=random:3"]


@pytest.mark.parametrize("kind", ["synthetic", "web", "desktop", "dataset"])
def test_set_of_mark_is_planned_once_per_input_and_repeat(kind):
    setup = quick_setup([*SWEEP, "repeats=2"])
    scenes = {t: (f"hash-{t}", Size(800, 600)) for t in setup.swept.tasks}
    specs = build_plan(setup, scenes, dict.fromkeys(setup.swept.tasks, kind))
    per = Counter((s.method, s.task) for s in specs)
    for task in ("S1", "S2"):
        assert per[("som", task)] == 2 and per[("som_dvoc", task)] == 2  # two repeats, one input
        assert per[("dvoc", task)] == 3 * 2  # DVOC: every start point
        assert per[("oneshot", task)] == (2 if kind == "dataset" else 3 * 2)  # unchanged on scenes
    som = [s for s in specs if s.method.startswith("som")]
    assert {s.start_index for s in som} == {1} and {s.rep for s in som} == {0, 1}
    assert all(s.start is None for s in som)


def test_a_run_with_one_som_trial_per_start_resumes_without_running_again(tmp_path):
    """The old plan's SoM trials at start indexes 2 and 3 are the same input run again: a resume with the
    new plan (a subset of the run's) runs nothing and keeps them in the records."""
    setup = quick_setup(["models=[sim-ideal]", "methods=[som]", "tasks=[S1]", "starts=random:3",
                         "run.frames=none", "run.quiet=true"])  # fmt: skip
    new = plan(setup)
    assert len(new) == 1 and new[0].start_index == 1
    old = [new[0]] + [dataclasses.replace(new[0], start_index=i, trial_key="") for i in (2, 3)]
    old = [o if o.trial_key else dataclasses.replace(o, trial_key=o.key()) for o in old]
    assert len({o.trial_key for o in old}) == 3
    first = run_sweep(setup, tmp_path / "run", specs=old)
    assert first.ran == 3
    again = run_sweep(setup, tmp_path / "run")
    assert again.ran == 0 and [t["trial_key"] for t in again.trials] == [new[0].trial_key]
