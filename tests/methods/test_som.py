"""The som and som_dvoc methods, the simulator's select_element answers, and a SoM sweep end to end."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from dvoc_bench.core.geometry import Frame, Point, Size
from dvoc_bench.detect.config import detector_config
from dvoc_bench.detect.service import DetectorService
from dvoc_bench.detect.types import DetectorError
from dvoc_bench.draw.render import decode_png
from dvoc_bench.draw.som_render import PALETTE, Mark, marks_from_detections
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.models.base import ModelCallError, ModelRequest, Reply, ToolCall
from dvoc_bench.models.simulator import NOT_SUPPORTED, SimProfile, SimulatedModel, load_profile, parse_marks
from dvoc_bench.protocol.som import som_prompt, som_tools
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from tests.support import ScriptedModel, ShotSink, make_spec, run_method

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"
REG = SceneRegistry(default_scenes_dir())
EXACT = {  # perfect perception, no confusion
    "frames": {"pixel": 1.0},
    "oneshot": {"noise_px": 0.0, "confidence": 0.9},
    "som": {"confusion": 0.0},
}


def _env(task="S6", model=None, backend="oracle", options=None, profile=EXACT) -> tuple[TrialEnv, ShotSink]:
    frames = ShotSink()
    if model is None:
        model = SimulatedModel("sim", SimProfile.from_mapping(profile), REG.truth)
    env = TrialEnv(
        snapshot=REG.snapshot(task),
        model=model,
        model_identity="sim@",
        save_shot=frames,
        detector=DetectorService(detector_config({"backend": backend, **(options or {})})),
    )
    return env, frames


# -------------------------------------------------------------------------------------------- som


@pytest.mark.parametrize("frame", ["pixel", "norm1000", "norm1"])
def test_som_with_the_oracle_clicks_the_target_centre(frame):
    env, frames = _env()
    res = run_method(make_spec(frame=frame), env)
    snap = env.snapshot
    assert (res.status, res.stop_reason, res.model_calls, res.iterations) == ("ok", "selected", 1, 1)
    assert res.final_point == snap.target_box.centre.as_list() == res.som.point and res.som.hit
    assert res.som.backend == "oracle" and res.som.boxes == res.som.marks == 6 and res.som.target_detected
    assert res.som.chosen_valid and res.som.mark_boxes[res.som.chosen_id - 1][:4] == [150, 350, 230, 390]
    assert (res.som.tag_layout, res.som.tag_overlaps) == ("avoid", 0)
    (step,) = res.steps
    assert step.kind == "select" and step.values_raw == {"id": res.som.chosen_id, "confidence": 0.9}
    assert step.values_px == {"x": 190.0, "y": 370.0} and step.true_dist_px == 0.0
    marked = decode_png(frames.frames[step.frame_sha])
    assert not np.array_equal(marked, snap.image)  # the model saw the marked frame, which was stored
    assert tuple(marked[200, 150]) in PALETTE  # a box outline on the first green button
    assert (
        f"Element list units: {dict(pixel='pixels', norm1000='0-1000', norm1='0-1')[frame]}." in step.prompt
    )


def test_som_records_an_invalid_id_and_a_missing_one():
    env, _ = _env(
        model=ScriptedModel(Reply(None, [ToolCall("select_element", '{"id": 99, "confidence": 0.7}')]))
    )
    res = run_method(make_spec(), env)
    assert (res.status, res.stop_reason, res.final_point) == ("ok", "no_valid_id", None)
    assert (res.som.chosen_id, res.som.chosen_valid, res.parse_errors) == (99, False, 1)
    assert res.steps[0].parse_status == "parse_error" and res.steps[0].parse_detail == "unknown_id:99"
    env, _ = _env(model=ScriptedModel(Reply("I cannot tell which one.")))
    res = run_method(make_spec(), env)
    assert (res.stop_reason, res.som.chosen_id, res.som.chosen_valid) == ("no_valid_id", None, False)


def _grounding(prompt: str) -> dict:
    line = next(ln for ln in prompt.splitlines() if ln.startswith("Grounding: "))
    return json.loads(line[len("Grounding: ") :])["grounding"]


def test_som_falls_back_to_a_click_on_the_plain_screenshot_when_nothing_is_marked():
    """The seed's fallback: no marks -> the plain screenshot, an empty element list, grounding.error stated,
    and the model's click is the final point (before issue #18: no call, no point, 'no_marks')."""
    env, frames = _env(options={"miss_rate": 1.0}, profile={**EXACT, "frames": {"norm1000": 1.0}})
    res = run_method(make_spec(frame="norm1000"), env)
    snap = env.snapshot
    assert (res.status, res.stop_reason, res.model_calls, res.som.marks, res.som.boxes) == (
        "ok",
        "grounding_error",
        1,
        0,
        0,
    )
    assert res.som.grounding_error == "the detector found no interface elements on this screenshot"
    (step,) = res.steps
    assert step.kind == "click" and step.reply_tool_calls[0]["name"] == "click_at"
    assert _grounding(step.prompt) == {"error": res.som.grounding_error, "elements": []}
    assert np.array_equal(decode_png(frames.frames[step.frame_sha]), snap.image)  # plain, no marks drawn
    assert snap.target_box.contains(Point(*res.final_point))  # the simulated model found it unaided


def test_som_falls_back_when_the_detector_fails_and_keeps_call_errors_as_errors():
    def broken(cfg):
        raise DetectorError("helper sent no READY within 60 s")

    env, _ = _env(
        backend="cv", model=ScriptedModel(Reply(None, [ToolCall("click_at", '{"x": 10, "y": 20}')]))
    )
    env.detector = DetectorService(detector_config("cv"), broken)
    res = run_method(make_spec(), env)
    assert (res.status, res.stop_reason, res.som.marks, res.final_point) == (
        "ok",
        "grounding_error",
        0,
        [10, 20],
    )
    assert "no READY" in res.som.grounding_error and "no READY" in _grounding(res.steps[0].prompt)["error"]
    env, _ = _env(model=ScriptedModel(ModelCallError("rate_limit", "slow down")))
    res = run_method(make_spec(), env)
    assert (res.status, res.error_class, res.model_calls) == ("error", "rate_limit", 1)
    env, _ = _env(options={"miss_rate": 1.0}, model=ScriptedModel(ModelCallError("timeout", "slow")))
    res = run_method(make_spec(), env)  # a failed fallback call is an error like any failed call
    assert (res.status, res.error_class, res.som.marks) == ("error", "timeout", 0)
    env.detector = None
    assert run_method(make_spec(), env).error_class == "detector"


def test_som_dvoc_falls_back_to_plain_dvoc_and_the_summary_names_it():
    from dvoc_bench.core.records import STOP_REASONS
    from dvoc_bench.runner.summary import run_report

    assert "grounding_error" in STOP_REASONS
    env, _ = _env(options={"miss_rate": 1.0})
    res = run_method(make_spec(method="som_dvoc"), env)
    assert (res.status, res.stop_reason, res.som.marks, res.som.start_source) == (
        "ok",
        "grounding_error",
        0,
        "centre",
    )
    assert res.som.fallback_stop_reason == "act" and {s.kind for s in res.steps} == {"verify"}
    assert res.steps[0].draft == Size(800, 600).centre.as_list()
    assert env.snapshot.target_box.contains(Point(*res.final_point))
    rows = [
        {
            "status": "ok",
            "method": "som_dvoc",
            "stop_reason": "grounding_error",
            "som": dataclasses.asdict(res.som),
        },
        {"status": "ok", "method": "som", "stop_reason": "selected", "som": {}},
    ]
    line = next(ln for ln in run_report(rows, ran=2) if ln.startswith("stop grounding_error"))
    assert "x1 (som_dvoc x1)" in line and "found no interface elements" in line


def test_som_target_not_detected_is_visible_in_the_record():
    env, _ = _env(task="S3", options={"miss_rate": 0.5, "seed": 3})
    results = [run_method(make_spec(task="S3", seed=s), env) for s in range(40)]
    undetected = [r for r in results if r.som.target_detected is False]
    assert undetected and len(undetected) < 40
    assert not any(r.som.hit for r in undetected)  # the model cannot pick what is not marked
    assert all(r.som.hit for r in results if r.som.target_detected)  # exact perception, no confusion


# ---------------------------------------------------------------------------------------- som_dvoc


def test_som_dvoc_starts_dvoc_at_the_chosen_mark():
    env, _ = _env()
    res = run_method(make_spec(method="som_dvoc"), env)
    assert res.som.start_source == "som" and (
        res.som.dvoc_alpha,
        res.som.dvoc_overlay,
        res.som.dvoc_predict,
    ) == (
        "decay",
        "full",
        "relative",
    )
    kinds = [s.kind for s in res.steps]
    assert kinds[0] == "select" and set(kinds[1:]) == {"verify"}
    assert [s.index for s in res.steps] == list(range(len(res.steps)))
    assert res.steps[1].draft == res.som.point == env.snapshot.target_box.centre.as_list()
    assert res.stop_reason == "act" and env.snapshot.target_box.contains(Point(*res.final_point))
    assert res.model_calls == len(res.steps) and res.iterations == len(res.steps) - 1
    knobs = run_method(make_spec(method="som_dvoc", alpha="constant", overlay="crosshair"), env)
    assert (knobs.som.dvoc_alpha, knobs.som.dvoc_overlay) == ("constant", "crosshair")  # set knobs are kept


def test_som_dvoc_without_a_pick_starts_from_the_centre():
    reply_bad = Reply(None, [ToolCall("select_element", '{"id": 42}')])
    reply_offset = Reply(None, [ToolCall("report_offset", '{"dx": 0, "dy": 0, "confidence": 1}')])
    env, _ = _env(model=ScriptedModel(reply_bad, reply_offset))
    res = run_method(make_spec(method="som_dvoc"), env)
    assert res.som.start_source == "centre" and res.som.chosen_valid is False
    assert res.steps[1].draft == Size(800, 600).centre.as_list()
    assert res.stop_reason == "act" and res.final_point == [399.5, 299.5]


# -------------------------------------------------------------------------------------- simulator


def _som_request(task="S6", frame=Frame.NORM1000, marks=None, seed=0):
    snap = REG.snapshot(task)
    if marks is None:
        from dvoc_bench.detect.oracle import OracleDetector

        marks = marks_from_detections(OracleDetector(snap.truth).detect(snap.image), snap.size)
    text = som_prompt(instruction=snap.instruction, size=snap.size, frame=frame, marks=marks)
    return ModelRequest(text, None, snap.size, som_tools(), snap.scene_id, seed, image_rgb=snap.image), marks


def _picked(model, req) -> int | None:
    r = model.respond(req)
    return json.loads(r.tool_calls[0].arguments)["id"] if r.tool_calls else None


@pytest.mark.parametrize("frame", list(Frame))
def test_simulator_reads_the_list_in_any_frame_and_picks_the_target(frame):
    req, marks = _som_request(frame=frame)
    read = [v for _, b in parse_marks(req.text, req.image_size) for v in b.as_list()]
    assert read == pytest.approx([v for m in marks for v in m.box.as_list()], abs=0.6)
    model = SimulatedModel("sim", SimProfile.from_mapping(EXACT), REG.truth)
    target = REG.truth("S6").target_box.centre
    (mark,) = [m for m in marks if m.box.contains(target)]
    assert _picked(model, req) == mark.id


def test_simulator_confusion_and_unmarked_targets():
    req, marks = _som_request()
    target_id = next(m.id for m in marks if m.box.contains(REG.truth("S6").target_box.centre))
    model = SimulatedModel("sim", SimProfile.from_mapping({**EXACT, "som": {"confusion": 0.3}}), REG.truth)
    picks = [_picked(model, dataclasses.replace(req, seed=s)) for s in range(400)]
    wrong = [p for p in picks if p != target_id]
    assert len(wrong) / len(picks) == pytest.approx(0.3, abs=0.07)
    target_centre = next(m for m in marks if m.id == target_id).box.centre
    near = sorted((m.box.centre.dist(target_centre), m.id) for m in marks if m.id != target_id)[:3]
    assert set(wrong) <= {i for _, i in near}  # confusion goes to the nearest marks only
    others = [m for m in marks if m.id != target_id]  # the target is not marked
    req2, _ = _som_request(marks=[Mark(i + 1, m.box, m.score, m.colour) for i, m in enumerate(others)])
    never = SimulatedModel("s", SimProfile.from_mapping({**EXACT, "som": {"guess_unmarked": 0.0}}), REG.truth)
    assert _picked(never, req2) is None
    always = SimulatedModel("s", SimProfile.from_mapping(EXACT), REG.truth)
    assert _picked(always, req2) is not None


def test_simulator_keeps_its_old_behaviour():
    model = SimulatedModel("sim", SimProfile.from_mapping(EXACT), REG.truth)
    snap = REG.snapshot("S6")
    req = ModelRequest("Click the BLUE button", None, snap.size, som_tools(), "S6", 0, image_rgb=snap.image)
    r = model.respond(req)  # select_element offered but no element list in the prompt
    assert r.tool_calls == [] and r.text == NOT_SUPPORTED
    # profiles without a som block keep their digest (so their replies stay the same)
    for path in sorted(CONF.glob("sim-*.yaml")):
        if "som" in (yaml.safe_load(path.read_text()).get("sim") or {}):
            continue  # a profile that sets its own som block has a new digest on purpose
        prof = load_profile(path)
        d = prof.model_dump()
        d.pop("som")
        d.pop("fitted_for")  # issue 16: a label, never part of the digest
        d.pop("refuses_absent")  # issue 55: drawn apart on absent targets only, never in the digest
        if prof.obeys_requested_frame == 0:
            d.pop("obeys_requested_frame")  # the default assumption keeps older digests
        for drop in [d["axis_drop"], *(c["axis_drop"] for c in d["canvas"] if c.get("axis_drop"))]:
            if drop.get("max_axis_px") == float("inf"):
                drop.pop("max_axis_px")  # no per-axis reach: the older digest
            for k in ("p_x_in_span", "p_y_in_span"):  # issue 16: no in-span rule, the older digest
                if drop.get(k, 0) is None:
                    drop.pop(k)
        for near in [d["near"], *(c["near"] for c in d["canvas"] if c.get("near"))]:
            if near.get("zero_rule") == "distance" and not near.get("p_zero_in_box"):
                for k in ("zero_rule", "p_zero_in_box", "p_zero_box_near"):  # the distance rule: older digest
                    near.pop(k, None)
            for k in ("p_zero_in_box_below_15", "p_zero_in_box_below_30"):  # no in-box split: older digest
                if near.get(k, 0) is None:
                    near.pop(k)
            if near.get("shrink_below_px") == 100.0:  # the first edge: older digest
                near.pop("shrink_below_px")
        for noise in [d["noise"], *(c["noise"] for c in d["canvas"] if c.get("noise"))]:
            noise.pop("within_target")  # issue 50: an oracle bound on the same draw, never in the digest
        if not d["perception"].get("knows_crosshair"):  # issue 52: the localiser, as before
            d["perception"].pop("knows_crosshair")
        old = hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]
        assert prof.digest() == old
    assert SimProfile.from_mapping({"som": {"confusion": 0.2}}).digest() != SimProfile().digest()
    with pytest.raises(ValueError, match="sim.som.confusion"):
        SimProfile.from_mapping({"som": {"confusion": 2}})


# ------------------------------------------------------------------------------------------ sweep


def test_som_sweep_end_to_end_with_the_cv_detector(tmp_path):
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    setup = quick_setup(["methods=[som,som_dvoc]", "detector=cv", "models=[sim-ideal]", "tasks=[S3,S5]"])
    res = run_sweep(setup, tmp_path)
    specs, trials = res.specs, res.trials
    # one trial per input (the start point changes nothing a Set-of-Mark call sends): 2 scenes x 2 methods
    assert len(trials) == len(specs) == 4 and all(t["status"] == "ok" for t in trials)
    som = [t for t in trials if t["method"] == "som"]
    assert all(t["detector"].startswith("cv:") and t["som"]["backend"] == "cv" for t in som)
    assert all(t["som"]["target_detected"] and t["som"]["detector_ms"] > 0 for t in som)
    assert {t["som"]["marks"] for t in som if t["task"] == "S3"} == {4}
    assert all(t["hit"] for t in som)  # sim-ideal does not confuse neighbours here
    frames = {
        s["frame_sha"] for s in map(json.loads, (tmp_path / "steps.jsonl").open()) if s["kind"] == "select"
    }
    assert frames and all((tmp_path / "frames" / f"{sha}.png").exists() for sha in frames)
