"""Absent targets (issue 55): the screen without its target, an instruction naming an element the screen
does not have, who refuses (sim-ideal knows the truth; a fitted profile never refuses; the OCR model by its
own matcher), how such a trial is scored and what the report shows."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pandas as pd
import pytest

from dvoc_bench.analysis.absent import absent_table
from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.core.records import TrialRecord, TrialResult
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.models.ocr.model import OcrModel
from dvoc_bench.models.ocr.tesseract import Word
from dvoc_bench.models.simulator import SimulatedModel
from dvoc_bench.protocol import absent as answer
from dvoc_bench.protocol import tools_for
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.absent import MISSING_LABELS, absent_variant
from dvoc_bench.scenes.sources import SceneError
from tests.support import chromium_or_skip, make_spec

PRESENT = SceneRegistry(default_scenes_dir())
REMOVED = SceneRegistry(default_scenes_dir(), absent="remove")
MISSING = SceneRegistry(default_scenes_dir(), absent="ask_missing")
TASKS = ("S1", "S2", "S3", "S4", "S5", "S6")


@pytest.mark.parametrize("task", TASKS)
def test_remove_draws_the_scene_without_its_target(task):
    full, gone = PRESENT.snapshot(task), REMOVED.snapshot(task)
    box = full.target_box
    assert gone.truth.absent == "remove" and gone.truth.target_box == box  # kept: where it was
    assert full.truth.target_id not in {e.id for e in gone.truth.elements}
    assert gone.content_hash != full.content_hash
    x0, y0, x1, y1 = (int(v) for v in box.as_list())
    inside = np.zeros(full.image.shape[:2], bool)
    inside[y0 : y1 + 1, x0 : x1 + 1] = True
    # the target's pixels are gone; nothing outside its box changed
    assert not np.array_equal(full.image[inside], gone.image[inside])
    assert np.array_equal(full.image[~inside], gone.image[~inside])
    bg = np.asarray(gone.image[0, 0])  # the S scenes' top-left pixel is background
    assert (gone.image[inside] == bg).all() or len(gone.truth.elements) > 0


@pytest.mark.parametrize("task", TASKS)
def test_ask_missing_names_a_label_no_element_has(task):
    full, snap = PRESENT.snapshot(task), MISSING.snapshot(task)
    text = snap.instruction
    assert snap.truth.absent == "ask_missing" and np.array_equal(snap.image, full.image)
    assert text != full.instruction and snap.content_hash != full.content_hash
    named = [label for label in MISSING_LABELS if label in text]
    assert len(named) == 1
    for e in full.truth.elements:  # checked against the measured layout, word by word
        assert named[0].lower() not in e.label.lower().split()


def test_remove_on_a_source_that_cannot_fails_its_task_with_the_reason():
    class Plain:
        kind = "dataset"

        def snapshot(self, task_id):
            return PRESENT.snapshot("S3")

    with pytest.raises(SceneError, match=r"S3: absent.variant=remove: dataset scenes cannot take"):
        absent_variant(Plain(), "S3", "remove")
    assert absent_variant(Plain(), "S3", "ask_missing").truth.absent == "ask_missing"


def test_a_click_on_an_absent_target_is_never_a_hit():
    box = PRESENT.snapshot("S3").target_box
    result = TrialResult(status="ok", stop_reason="hit", final_point=box.centre.as_list())
    on = TrialRecord.build(make_spec(task="S3", method="oneshot"), result, box, 0.1, scene_kind="synthetic")
    off = TrialRecord.build(make_spec(task="S3", method="oneshot", absent="remove"), result, box, 0.1,
                            scene_kind="synthetic")  # fmt: skip
    assert (on.hit, on.hit_box, on.hit_radius) == (True, True, True)
    assert (off.hit, off.hit_box, off.hit_radius, off.within_eps) == (False, False, False, False)


def test_the_knobs_enter_the_key_only_off_their_defaults():
    def keys(*o):
        setup = quick_setup(["models=[sim-ideal]", "tasks=[S1]", "methods=[oneshot,centre]", *o])
        from dvoc_bench.runner.plan import build_plan

        return {(p.method, p.trial_key) for p in build_plan(setup, {"S1": ("h", Size(800, 600))})}

    base = keys()
    assert keys("absent.variant=off", "absent.offer=false") == base
    offered = keys("absent.offer=true")
    assert {k for m, k in offered if m == "centre"} == {k for m, k in base if m == "centre"}  # calls no model
    assert {k for m, k in offered if m == "oneshot"}.isdisjoint({k for m, k in base if m == "oneshot"})


def _sim(name: str) -> SimulatedModel:
    from dvoc_bench.core import yamlio
    from dvoc_bench.models.config import default_conf_dir
    from dvoc_bench.models.simulator.profile import load_profile

    cfg = yamlio.safe_load((default_conf_dir() / "model" / f"{name}.yaml").read_text())
    return SimulatedModel(name, load_profile(cfg), MISSING.truth)


def _request(reg: SceneRegistry, task: str, offered: bool) -> ModelRequest:
    from dvoc_bench.draw.render import encode_png

    snap = reg.snapshot(task)
    tools = answer.offer_tools(tools_for("point")) if offered else tools_for("point")
    text = f"Instruction: {snap.instruction}\nAnswer in pixel coordinates."
    return ModelRequest(text=text, image_png=encode_png(snap.image), image_size=snap.size, tools=tools,
                        seed=1, scene_id=task)  # fmt: skip


def _tool(reply) -> str:
    return reply.tool_calls[0].name if reply.tool_calls else "-"


@pytest.mark.parametrize("task", TASKS)
def test_sim_ideal_refuses_an_absent_target_and_a_fitted_profile_never_does(task):
    ideal, fitted = _sim("sim-ideal"), _sim("sim-gemma-4-26b")
    assert _tool(ideal.respond(_request(MISSING, task, True))) == "not_present"
    assert _tool(ideal.respond(_request(MISSING, task, False))) == "click_at"  # not offered: it clicks
    assert _tool(fitted.respond(_request(MISSING, task, True))) == "click_at"


def test_refuses_absent_leaves_the_profile_digest_and_every_present_answer_as_they_were():
    ideal = _sim("sim-ideal")
    p0 = ideal.profile.model_copy(update={"refuses_absent": 0.0})
    assert p0.digest() == ideal.profile.digest()
    plain = SimulatedModel("sim-ideal", p0, PRESENT.truth)
    on = SimulatedModel("sim-ideal", ideal.profile, PRESENT.truth)
    req = _request(PRESENT, "S3", True)
    assert on.respond(req).tool_calls[0].arguments == plain.respond(req).tool_calls[0].arguments


class Words:
    """An OCR engine reading fixed words."""

    def __init__(self, *words: tuple[str, Box]):
        self.list = [Word(t, 95.0, b, (1, 1, 1, i), i) for i, (t, b) in enumerate(words)]

    def words(self, image):
        return self.list


def _ocr_request(instruction: str, offered: bool) -> ModelRequest:
    from dvoc_bench.draw.render import encode_png

    img = np.zeros((100, 200, 3), np.uint8)
    tools = answer.offer_tools(tools_for("point")) if offered else tools_for("point")
    text = f"Instruction: {instruction}"
    return ModelRequest(text=text, image_png=encode_png(img), image_size=Size(200, 100), tools=tools, seed=0,
                        scene_id="x")  # fmt: skip


def test_the_ocr_model_refuses_when_its_matcher_finds_nothing():
    model = OcrModel("ocr", Words(("Submit", Box(10, 10, 60, 30)), ("Cancel", Box(100, 10, 150, 30))))
    no = model.respond(_ocr_request("Click the Export button", True))
    assert (
        _tool(no) == "not_present"
        and "no match for 'Export'" in json.loads(no.tool_calls[0].arguments)["reason"]
    )
    yes = model.respond(_ocr_request("Click the Submit button", True))
    assert _tool(yes) == "click_at" and json.loads(yes.tool_calls[0].arguments)["x"] == 35
    guess = model.respond(_ocr_request("Click the Export button", False))  # not offered: the centre guess
    assert _tool(guess) == "click_at" and json.loads(guess.tool_calls[0].arguments)["x"] == 100


def test_the_table_counts_refusals_and_false_clicks_per_variant():
    base = dict(
        model="m", method="oneshot", scene_kind="synthetic", offer_absent=True, status="ok", simulated=False
    )
    rows = [
        {**base, "absent": "remove", "task": t, "refused": r, "final_x": 1.0 if c else None, "hit": False}
        for t, r, c in [("A", True, False), ("A", True, False), ("B", False, True), ("C", False, False)]
    ]
    rows += [
        {**base, "absent": "off", "task": t, "refused": not h, "final_x": 1.0 if h else None, "hit": h}
        for t, h in [("A", True), ("B", False)]
    ]
    tab = absent_table(pd.DataFrame(rows)).set_index("absent")
    gone, here = tab.loc["remove"], tab.loc["off"]
    assert (gone["trials"], gone["samples"], gone["refusal"], gone["false_click"]) == (4, 3, 0.5, 0.25)
    assert pd.isna(gone["hit"]) and 0.0 <= gone["refusal_lo"] <= 0.5 <= gone["refusal_hi"] <= 1.0
    assert (here["hit"], here["refusal"]) == (0.5, 0.5) and pd.isna(here["false_click"])


def test_a_web_page_hides_its_target_before_the_screenshot():
    chromium_or_skip()
    reg = SceneRegistry(default_scenes_dir(), absent="remove", options={"web": {"verify_click": True}})
    full_reg = SceneRegistry(default_scenes_dir())
    try:
        gone, full = reg.snapshot("W1"), full_reg.snapshot("W1")
        box = full.target_box
        assert gone.truth.absent == "remove" and gone.target_box == box
        assert full.truth.target_id not in {e.id for e in gone.truth.elements}
        x0, y0, x1, y1 = (int(v) for v in box.as_list())
        assert not np.array_equal(full.image[y0 : y1 + 1, x0 : x1 + 1], gone.image[y0 : y1 + 1, x0 : x1 + 1])
        probe = asyncio.run(reg.aprobe("W1", box.centre))
        assert probe.hit is False and probe.clicked_target is False  # the point reaches what lies under it
        assert full_reg.probe("W1", box.centre).hit is True
    finally:
        reg.close()
        full_reg.close()


def test_a_label_on_the_screen_is_never_the_missing_one():
    import dataclasses

    from dvoc_bench.core.scene import Element
    from dvoc_bench.scenes.absent import ask_missing, missing_label

    snap = PRESENT.snapshot("S3")
    on_screen = [Element(f"e{i}", f"{label} now", Box(0, 0, 5, 5)) for i, label in enumerate(MISSING_LABELS)]
    for keep in range(len(MISSING_LABELS)):  # every label but one on the screen: that one is named
        truth = dataclasses.replace(
            snap.truth, elements=(*snap.truth.elements, *on_screen[:keep], *on_screen[keep + 1 :])
        )
        assert missing_label(truth) == MISSING_LABELS[keep]
    full = dataclasses.replace(snap, truth=dataclasses.replace(snap.truth, elements=tuple(on_screen)))
    with pytest.raises(
        SceneError, match="S3: absent.variant=ask_missing: every candidate label is on screen"
    ):
        ask_missing(full)


def test_a_fitted_profile_on_an_absent_target_is_marked_assumed():
    from dvoc_bench.runner.plan import build_plan

    def marks(variant):
        setup = quick_setup(["models=[sim-ideal,sim-gemma-4-26b]", "tasks=[S1]", "methods=[oneshot]",
                             f"absent.variant={variant}"])  # fmt: skip
        return {p.model: p.simulated_assumptions for p in build_plan(setup, {"S1": ("h", Size(800, 600))})}

    assert "absent target assumed" in marks("remove")["sim-gemma-4-26b"]
    assert "absent target assumed" not in marks("off")["sim-gemma-4-26b"]
    assert marks("remove")["sim-ideal"] == []  # hand-set: no fit to rest on


def test_the_report_shows_refusals_and_false_clicks(tmp_path):
    from dvoc_bench.report import main as report
    from dvoc_bench.runner.sweep import run_sweep

    for variant in ("off", "remove"):
        knobs = [f"absent.variant={variant}", "absent.offer=true", "starts=random:1", "methods=[oneshot]"]
        setup = quick_setup(["models=[sim-ideal,sim-gemma-4-26b]", "tasks=[S1,S3]", *knobs])
        run_sweep(setup, tmp_path / variant)
    out = tmp_path / "report"
    assert (
        report([str(tmp_path / "off"), str(tmp_path / "remove"), "--out", str(out), "--n-boot", "200"]) == 0
    )
    text = (out / "report.md").read_text()
    assert "### Absent targets: refusals and false clicks" in text
    rows = [r for r in text.splitlines() if r.startswith("| sim-") and "| oneshot | synthetic |" in r]
    ideal = next(r for r in rows if r.startswith("| sim-ideal") and "| remove |" in r)
    fitted = next(r for r in rows if r.startswith("| sim-gemma-4-26b") and "| remove |" in r)
    cells = [c.strip() for c in ideal.split("|")]
    assert cells[-3].startswith("100.0 % [") and cells[-2].startswith("0.0 % [")  # refusal, false click
    cells = [c.strip() for c in fitted.split("|")]
    assert "absent target assumed" in fitted
    assert cells[-3].startswith("0.0 %") and cells[-2].startswith("100.0 %")  # never refuses
    assert any(p.name.endswith("_absent.png") for p in (out / "figures").iterdir())


@pytest.mark.parametrize("method", ["dvoc", "som", "zoom"])
def test_a_drag_refused_at_its_start_is_refused_whole(monkeypatch, method: str) -> None:
    """A "not present" answer for a drag's start ends the drag: its end is not grounded from the screen's
    centre as if the start had landed there (one run, the refusal's stop reason, no points)."""
    from types import SimpleNamespace

    from dvoc_bench.methods import drag

    monkeypatch.setattr(drag, "end_env", lambda env, i: env)  # the ends' truth does not matter here
    runs: list[object] = []

    async def refuse(spec: object, env: object) -> TrialResult:
        runs.append(spec)
        return TrialResult(status="ok", stop_reason="not_present", final_point=None)

    info = SimpleNamespace(name=method, uses_start=method == "dvoc", run=refuse)
    out = asyncio.run(drag.run_drag(info, make_spec(task="t", method=method), SimpleNamespace()))  # type: ignore[arg-type]
    assert len(runs) == 1 and out.stop_reason == "not_present"
    assert out.final_point is None and out.drop_point is None
