"""methods/dvoc.py against scripted replies: the loop's moves, stops, frames and protocol differences."""

from __future__ import annotations

import pytest

from dvoc_bench.draw.render import decode_png
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.models.base import ModelCallError, Reply
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from tests.support import ScriptedModel, ShotSink, click, make_spec, offset, run_method

REG = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
"""S1: an 800x600 canvas, target box (360, 275)-(440, 325), centre (400, 300)."""


def dvoc_spec(**over):
    fields = dict(
        task="S1", method="dvoc", alpha="decay", overlay="full", predict="relative", start=[100.0, 100.0]
    )
    fields.update(over)
    return make_spec(**fields)


def env_for(model, task="S1"):
    sink = ShotSink()
    return TrialEnv(snapshot=REG.snapshot(task), model=model, model_identity="m@", save_shot=sink), sink


def test_moves_by_alpha_times_the_offset_and_acts_on_two_small_confident_reports():
    model = ScriptedModel(offset(300, 200), offset(2, 1), offset(1, 0))
    env, sink = env_for(model)
    res = run_method(dvoc_spec(), env)
    assert (res.status, res.stop_reason, res.iterations, res.model_calls) == ("ok", "act", 3, 3)
    s0, s1, s2 = res.steps
    assert s0.draft == [100.0, 100.0] and s0.alpha == 1.0 and s0.next_draft == [400.0, 300.0]
    assert s1.draft == [400.0, 300.0] and s1.alpha == 0.5 and s1.next_draft == [401.0, 300.5]
    assert s2.decision == "act" and s2.alpha is None and s2.next_draft == s2.draft == [401.0, 300.5]
    assert res.final_point == [401.0, 300.5]
    assert [s.true_dist_px for s in res.steps] == [pytest.approx(360.555, abs=1e-3), 0.0, 1.118]
    # every frame the model saw is stored, shows the crosshair at the draft, and the text states it
    assert len(sink.frames) == 3 and all(s.frame_sha in sink.frames for s in res.steps)
    img = decode_png(sink.frames[s0.frame_sha])
    assert tuple(img[100, 100]) == (255, 0, 0)  # the red crosshair centre at the start point
    assert "Crosshair position: (100, 100) px" in model.requests[0].text
    assert "Crosshair position: (400, 300) px" in model.requests[1].text


def test_norm1000_offsets_are_converted_to_pixels_before_they_move_the_crosshair():
    # 375 / 1000 * 799 = 299.625 px, 333.3 / 1000 * 599 = 199.65 px
    model = ScriptedModel(offset(375, 333.3), offset(0, 0), offset(0, 0))
    res = run_method(dvoc_spec(frame="norm1000"), env_for(model)[0])
    s0 = res.steps[0]
    assert s0.values_raw == {"dx": 375.0, "dy": 333.3, "confidence": 0.9}
    assert s0.values_px == pytest.approx({"dx": 299.625, "dy": 199.6467})
    assert s0.next_draft == pytest.approx([399.625, 299.6467])
    assert res.stop_reason == "act" and "in 0-1000 units" in model.requests[0].text


def test_three_non_decreasing_reports_abort():
    model = ScriptedModel(offset(100, 0), offset(100, 0), offset(120, 0))
    res = run_method(dvoc_spec(), env_for(model)[0])
    assert (res.stop_reason, res.iterations) == ("abort_oscillation", 3)
    assert [s.next_draft for s in res.steps[:2]] == [[200.0, 100.0], [250.0, 100.0]]
    assert res.final_point == [250.0, 100.0]  # the draft the loop stopped on


def test_two_unusable_replies_stop_as_stuck_under_v1():
    model = ScriptedModel(Reply("I am not sure where that is."))
    res = run_method(dvoc_spec(), env_for(model)[0])
    assert (res.stop_reason, res.iterations, res.parse_errors) == ("abort_stuck", 2, 2)
    assert all(s.reported_offset_px is None for s in res.steps) and res.final_point == [100.0, 100.0]


def test_paper_protocol_reads_a_missing_answer_as_zero_and_truncates_the_drawn_crosshair():
    model = ScriptedModel(offset(0.6, 0.6), Reply("no tool call"), Reply("no tool call"))
    env, sink = env_for(model)
    res = run_method(dvoc_spec(protocol="paper", start=[100.7, 100.7]), env)
    assert res.steps[1].reported_offset_px == [0.0, 0.0]  # the authors' (0, 0) with confidence 0
    assert res.stop_reason == "abort_stuck"
    img = decode_png(sink.frames[res.steps[0].frame_sha])
    red = (img == (255, 0, 0)).all(axis=2)
    assert red[100, 85] and not red[100, 116]  # drawn at int(x), int(y): arms span 85..115, not 86..116
    assert "Crosshair position" not in model.requests[0].text


def test_absolute_answers_become_offsets_from_the_draft():
    model = ScriptedModel(click(400, 300), click(400, 300), click(400, 300))
    res = run_method(dvoc_spec(predict="absolute"), env_for(model)[0])
    assert res.steps[0].values_px == {"x": 400.0, "y": 300.0}
    assert res.steps[0].reported_offset_px == [300.0, 200.0]
    assert res.stop_reason == "act" and res.final_point == [400.0, 300.0]


def test_the_cap_and_the_clamp():
    # off the canvas from the draft, never confident (within the frame's span |dx| <= 800, |dy| <= 600:
    # a larger offset is out_of_frame, tests/test_out_of_frame.py)
    model = ScriptedModel(offset(790, 590, 0.2))
    res = run_method(dvoc_spec(max_iterations=4, alpha="undamped"), env_for(model)[0])
    assert (res.stop_reason, res.iterations) == ("abort_oscillation", 3)
    s0 = res.steps[0]
    assert s0.step_raw == [790.0, 590.0] and s0.next_draft == [799.0, 599.0]  # clamped to the image
    model = ScriptedModel(offset(40, 0, 0.2), offset(30, 0, 0.2), offset(20, 0, 0.2), offset(10, 0, 0.2))
    res = run_method(dvoc_spec(max_iterations=4), env_for(model)[0])
    assert (res.stop_reason, res.iterations, res.model_calls) == ("max_iterations", 4, 4)


def test_a_failed_call_ends_the_trial_as_an_error_with_its_steps():
    model = ScriptedModel(offset(300, 200), ModelCallError("timeout", "took too long"))
    res = run_method(dvoc_spec(), env_for(model)[0])
    assert (res.status, res.stop_reason, res.error_class, res.iterations) == ("error", "error", "timeout", 2)
    assert res.final_point == [400.0, 300.0] and [s.parse_status for s in res.steps] == ["ok", "call_error"]
