"""What a simulated result rests on (issue 16 item 3): the frame request is obeyed only as an assumption,
each calibrated profile lists the knobs it was fitted for, and trials under any other knob carry a visible
marker in the records and the summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dvoc_bench.core.geometry import Box, Frame, Size
from dvoc_bench.core.scene import Element, SceneTruth
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.models.simulator import SimProfile, SimulatedModel, assumed_knobs
from dvoc_bench.models.simulator.reading import requested_frame
from dvoc_bench.protocol.prompts import frame_statement
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.summary import format_table, summarise
from dvoc_bench.runner.sweep import plan as build_trial_plan

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"
CALIBRATED = ("sim-gemini-3.1-flash-lite", "sim-gemma-4-26b", "sim-gemma-4-31b")
SIZE = Size(400, 300)
SAVE = Element("save", "Save", Box(300, 230, 360, 260))
TRUTH = SceneTruth("T1", SIZE, "Click Save", "save", SAVE.box, (SAVE,))
CLICK = [{"type": "function", "function": {"name": "click_at", "parameters": {}}}]


@pytest.mark.parametrize("frame", ["pixel", "norm1000", "norm1"])
def test_the_corrected_protocols_frame_statement_is_read_as_a_request(frame: str) -> None:
    assert requested_frame("Task: x\n" + frame_statement(Frame(frame), SIZE)) == frame
    assert requested_frame("Call report_offset with the pixel offset to the target.") is None  # paper


def _answers(obeys: float, n: int = 200) -> list[float]:
    prof = SimProfile.from_mapping(
        {"frames": {"norm1000": 1}, "oneshot": {"noise_px": 0}, "obeys_requested_frame": obeys}
    )
    model = SimulatedModel("m", prof, lambda _: TRUTH)
    text = "Task: Click Save\n" + frame_statement(Frame.PIXEL, SIZE)
    xs = []
    for s in range(n):
        reply = model.respond(ModelRequest(text, None, SIZE, CLICK, "T1", s, image_rgb=None))
        xs.append(json.loads(reply.tool_calls[0].arguments)["x"])
    return xs


def test_obeying_the_requested_frame_is_a_probability() -> None:
    # target x = 330 px = 827 in 0-1000 units: 0 obeys never, 1 always, 0.5 about half the time
    assert set(_answers(0.0)) == {827}
    assert set(_answers(1.0)) == {330}
    half = _answers(0.5)
    assert 0.35 < half.count(330) / len(half) < 0.65


def test_the_default_assumption_changes_no_reply() -> None:
    base = SimProfile.from_mapping({"noise": {"scale_px": 3}})
    assert (
        SimProfile.from_mapping({"noise": {"scale_px": 3}, "obeys_requested_frame": 0}).digest()
        == base.digest()
    )
    ff = {"noise": {"scale_px": 3}, "fitted_for": {"protocols": ["paper"], "overlays": ["full"]}}
    assert SimProfile.from_mapping(ff).digest() == base.digest()  # a label, not behaviour


def test_assumed_knobs_name_what_the_fit_never_saw() -> None:
    sim = {"fitted_for": {"protocols": ["paper"], "overlays": ["full"]}}
    assert assumed_knobs(sim, protocol="paper", overlay="full") == []
    assert assumed_knobs(sim, protocol="v1", overlay="full") == ["frame request assumed"]
    assert assumed_knobs(sim, protocol="paper", overlay="none") == ["overlay effect assumed"]
    assert assumed_knobs(sim, protocol="paper", overlay="full", default_style=False) == [
        "overlay style assumed"
    ]
    assert assumed_knobs(sim, protocol="-", overlay="-") == []  # a method without these knobs
    assert assumed_knobs({}, protocol="v1", overlay="none") == []  # a hand-set profile declares nothing


@pytest.mark.parametrize("name", CALIBRATED)
def test_calibrated_profiles_declare_what_they_were_fitted_for(name: str) -> None:
    sim = yaml.safe_load((CONF / f"{name}.yaml").read_text())["sim"]
    assert sim["fitted_for"]["protocols"] == ["paper"] and sim["fitted_for"]["overlays"] == ["full"]
    assert sim["obeys_requested_frame"] == 0.0


def test_plan_records_and_summary_carry_the_marker() -> None:
    setup = quick_setup(
        [
            "models=[sim-gemma-4-26b]",
            "tasks=[S1]",
            "methods=[dvoc,centre]",
            "protocols=[paper,v1]",
            "overlays=[full,none]",
            "repeats=1",
        ]
    )
    plan = build_trial_plan(setup)
    marks = {(t.method, t.protocol, t.overlay): tuple(t.simulated_assumptions) for t in plan}
    assert marks[("dvoc", "paper", "full")] == ()
    assert marks[("dvoc", "v1", "full")] == ("frame request assumed",)
    assert marks[("dvoc", "paper", "none")] == ("overlay effect assumed",)
    assert marks[("centre", "-", "-")] == ()
    done = {"status": "ok", "hit": True, "within_eps": True, "hit_radius": True, "final_dist_px": 1.0}
    trials = [{**t.__dict__, **done, "iterations": 1} for t in plan]
    table = format_table(summarise(trials))
    assert "sim-gemma-4-26b [SIMULATED; overlay effect assumed]" in table
    assert "sim-gemma-4-26b [SIMULATED; frame request assumed]" in table
    assert "sim-gemma-4-26b [SIMULATED] " in table  # paper + full: nothing assumed
    assert "knob the simulated profile was not fitted for" in table


def test_a_two_point_task_of_a_calibrated_profile_is_marked_as_an_assumption() -> None:
    """Issue 50: no profile was fitted on two-point (drag) answers, so a drag's trials of a calibrated
    profile say so; its one-point tasks do not."""
    from dvoc_bench.core.geometry import Size
    from dvoc_bench.runner.plan import build_plan

    setup = quick_setup(["models=[sim-gemma-4-26b]", "tasks=[S1,S2]", "methods=[dvoc,oneshot]",
                         "protocols=[paper]", "overlays=[full]", "starts=centre"])  # fmt: skip
    scenes = {t: (f"h-{t}", Size(800, 600)) for t in ("S1", "S2")}
    plan = build_plan(setup, scenes, {"S1": "synthetic", "S2": "synthetic"}, drags={"S2"})
    marks = {(t.task, t.method): t.simulated_assumptions for t in plan}
    assert all("two-point answers assumed" in marks[("S2", m)] for m in ("dvoc", "oneshot"))
    assert all("two-point answers assumed" not in marks[("S1", m)] for m in ("dvoc", "oneshot"))
