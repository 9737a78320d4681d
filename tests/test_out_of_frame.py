"""An answer outside its declared frame is recorded ``parse_status=out_of_frame`` and never used or clamped,
in every method that reads coordinates: DVOC's offsets (and its absolute answers), zoom's rounds and the
Set-of-Mark fallback click (one-shot: tests/test_frame_families.py, tests/test_coords.py).

An offset's range is that of a difference of two points of the frame: ``|dx| <= W``, ``|dy| <= H`` pixels of
the image seen, ``|d| <= 1000`` for 0-1000, ``|d| <= 1`` for 0-1 (docs/frames.md)."""

from __future__ import annotations

import pytest

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.core.geometry import Size
from dvoc_bench.detect.config import detector_config
from dvoc_bench.detect.service import DetectorService
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from tests.support import ScriptedModel, ShotSink, click, make_spec, offset, run_method

REG = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
"""S1: an 800x600 canvas, target centre (400, 300); sent as it is (no input limit)."""


def env_for(model, task="S1", detector=None):
    return TrialEnv(
        snapshot=REG.snapshot(task),
        model=model,
        model_identity="m@",
        save_shot=ShotSink(),
        detector=detector,
    )


def dvoc_spec(**over):
    fields = dict(
        task="S1", method="dvoc", alpha="decay", overlay="full", predict="relative", start=[100.0, 100.0]
    )
    fields.update(over)
    return make_spec(**fields)


def test_an_offset_range_is_a_difference_of_two_points_of_the_frame():
    seen = Size(800, 600)
    assert FrameRule(units="norm1000").offset_in_range(-1000, 1000, seen)
    assert not FrameRule(units="norm1000").offset_in_range(1000.5, 0, seen)
    assert not FrameRule(units="norm999").offset_in_range(0, -999.5, seen)
    norm1 = FrameRule(units="norm1")
    assert norm1.offset_in_range(-1, 1, seen) and not norm1.offset_in_range(1.2, 0, seen)
    assert FrameRule().offset_in_range(-800, 600, seen) and not FrameRule().offset_in_range(0, 601, seen)


@pytest.mark.parametrize(
    ("frame", "bad", "words"),
    [("norm1000", (1200.0, 10.0), "|d| <= 1000"), ("pixel", (5.0, -650.0), "|dx| <= 800, |dy| <= 600 px")],
)
def test_a_dvoc_offset_outside_its_frame_is_out_of_frame_and_does_not_move_the_draft(frame, bad, words):
    model = ScriptedModel(offset(*bad), offset(*bad))
    res = run_method(dvoc_spec(frame=frame), env_for(model))
    assert res.steps and all(s.parse_status == "out_of_frame" for s in res.steps), [
        s.parse_status for s in res.steps
    ]
    s0 = res.steps[0]
    assert words in (s0.parse_detail or "") and s0.values_raw["dx"] == bad[0]  # the numbers kept as written
    assert s0.reported_offset_px is None and s0.values_px is None and s0.next_draft == [100.0, 100.0]
    assert res.stop_reason == "abort_stuck" and res.final_point == [100.0, 100.0]
    assert res.parse_errors == 0  # out_of_frame is its own status, not a parse error


def test_a_dvoc_offset_at_the_edge_of_its_frame_is_used():
    # 1000 / 1000 * 799 = 799 px right, clamped by the loop to the screen, not by the reader
    model = ScriptedModel(offset(1000, 0), offset(0, 0), offset(0, 0))
    res = run_method(dvoc_spec(frame="norm1000"), env_for(model))
    s0 = res.steps[0]
    assert s0.parse_status == "ok" and s0.reported_offset_px == pytest.approx([799.0, 0.0])


def test_an_absolute_dvoc_answer_outside_its_frame_is_out_of_frame():
    model = ScriptedModel(click(900, 100), click(900, 100))  # x beyond the 800-px image
    res = run_method(dvoc_spec(predict="absolute"), env_for(model))
    assert all(s.parse_status == "out_of_frame" for s in res.steps) and res.steps[0].values_px is None
    assert "800x600 px" in res.steps[0].parse_detail and res.final_point == [100.0, 100.0]


def test_a_zoom_answer_outside_its_frame_ends_the_trial_without_a_point():
    model = ScriptedModel(click(1.5, 0.5))
    res = run_method(make_spec(task="S1", method="zoom", frame="norm1", zoom="2/2/256"), env_for(model))
    (step,) = res.steps
    assert step.parse_status == "out_of_frame" and "0-1" in step.parse_detail
    assert res.stop_reason == "abort_stuck" and res.final_point is None  # not clamped to the right edge


def test_a_zoom_answer_inside_its_frame_is_used():
    model = ScriptedModel(click(0.5, 0.5))
    res = run_method(make_spec(task="S1", method="zoom", frame="norm1", zoom="2/1/256"), env_for(model))
    assert [s.parse_status for s in res.steps] == ["ok", "ok"] and res.final_point is not None


def test_the_set_of_mark_fallback_click_outside_its_frame_is_out_of_frame():
    detector = DetectorService(detector_config({"backend": "oracle", "miss_rate": 1.0}))
    env = env_for(ScriptedModel(click(1001, 20)), task="S6", detector=detector)
    res = run_method(make_spec(frame="norm1000"), env)
    (step,) = res.steps
    assert res.stop_reason == "grounding_error" and step.parse_status == "out_of_frame"
    assert res.final_point is None and step.values_raw["x"] == 1001
