"""The OCR model with the real Tesseract: it reads S3 (800x600, four labelled buttons) and answers each tool
like a model, from the PNG and the prompt only; a missing binary is one line naming the Debian packages."""

from __future__ import annotations

import asyncio
import json

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Frame, Point
from dvoc_bench.draw.render import encode_png
from dvoc_bench.draw.som_render import Mark
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.models.ocr.match import best_match, normalise
from dvoc_bench.models.ocr.model import NO_MATCH_CONFIDENCE, OcrModel, ocr_model_from_config
from dvoc_bench.models.ocr.tesseract import MISSING, OcrEngine, Word, find_tesseract
from dvoc_bench.protocol import paper, prompts
from dvoc_bench.protocol.som import som_prompt, som_tools
from dvoc_bench.protocol.tools import tools_for
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from tests.support import need

try:
    find_tesseract()
except ConfigError as e:  # pragma: no cover - CI installs it (.ci/run)
    need("TESSERACT", str(e), module=True)


@pytest.fixture(scope="module")
def s3():
    reg = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
    return reg.snapshot("S3")


@pytest.fixture(scope="module")
def model():
    return OcrModel("ocr-tesseract", OcrEngine())


def _req(snap, text, tools, scene_id="nothing-to-see"):
    return ModelRequest(
        text=text,
        image_png=encode_png(snap.image),
        image_size=snap.size,
        tools=tools,
        scene_id=scene_id,
        seed=0,
    )


def _args(reply):
    (call,) = reply.tool_calls
    return call.name, json.loads(call.arguments)


def _submit(snap) -> Box:
    return next(e.box for e in snap.truth.elements if e.id == "submit")


def test_click_at_lands_on_the_label_and_the_reply_carries_evidence(s3, model) -> None:
    text = prompts.oneshot_prompt(
        instruction=s3.instruction, size=s3.size, frame=Frame.PIXEL, attempt=0, previous=None
    )
    reply = model.respond(_req(s3, text, tools_for("point")))
    name, a = _args(reply)
    assert name == "click_at" and _submit(s3).contains(Point(a["x"], a["y"]))
    assert a["confidence"] == 1.0
    assert "OCR found 'Submit' for 'Submit'" in reply.text and "OCR confidence" in reply.text
    # truth-blind: the scene id is not used (any id, the same answer)
    assert model.respond(_req(s3, text, tools_for("point"), scene_id="S1")).tool_calls == reply.tool_calls
    # a prompt asking for 0-1000 gets 0-1000
    text_n = prompts.oneshot_prompt(
        instruction=s3.instruction, size=s3.size, frame=Frame.NORM1000, attempt=0, previous=None
    )
    _, n = _args(model.respond(_req(s3, text_n, tools_for("point"))))
    assert abs(n["x"] - a["x"] / 800 * 1000) <= 1 and abs(n["y"] - a["y"] / 600 * 1000) <= 1
    # the phone agent's touch frame: pixel / (size - 1) x 1000, written with one decimal as the seed does
    text_t = prompts.oneshot_prompt(
        instruction=s3.instruction, size=s3.size, frame=Frame.TOUCH1000, attempt=0, previous=None
    )
    _, t = _args(model.respond(_req(s3, text_t, tools_for("point"))))
    assert abs(t["x"] - a["x"] / 799 * 1000) <= 1.3 and abs(t["y"] - a["y"] / 599 * 1000) <= 1.7
    assert {round(t["x"], 1), round(t["y"], 1)} == {t["x"], t["y"]}
    assert t["x"] != round(t["x"]) or t["y"] != round(t["y"])  # a tenth is kept, not rounded away


def test_report_offset_is_measured_from_the_stated_crosshair(s3, model) -> None:
    c = _submit(s3).centre
    for draft in (Point(100, 500), Point(700, 50)):
        text = prompts.dvoc_prompt(
            instruction=s3.instruction, size=s3.size, frame=Frame.PIXEL, overlay="none", predict="relative",
            draft=draft, iteration=0, history=[],
        )  # fmt: skip
        name, a = _args(model.respond(_req(s3, text, tools_for("offset"))))
        assert name == "report_offset"
        assert abs(draft.x + a["dx"] - c.x) < 40 and abs(draft.y + a["dy"] - c.y) < 10, (draft, a)
    # the paper's prompt states no position: the last history line's arrow is where it measures from
    h = prompts.HistoryEntry(Point(50, 60), prompts.Offset(10, 10), 0.5, Point(55, 65))
    text = paper.dvoc_prompt(instruction=s3.instruction, overlay="none", predict="relative", history=[h])
    reply = model.respond(_req(s3, text, tools_for("offset")))
    _, a = _args(reply)
    assert abs(60 + a["dx"] - c.x) < 40 and abs(70 + a["dy"] - c.y) < 10 and "history" in reply.text


def test_select_element_picks_the_mark_containing_the_match(s3, model) -> None:
    boxes = {e.id: e.box for e in s3.truth.elements}
    marks = [
        Mark(i + 1, boxes[k], 0.9, (255, 0, 0)) for i, k in enumerate(["cancel", "save", "submit", "delete"])
    ]
    text = som_prompt(instruction=s3.instruction, size=s3.size, frame=Frame.PIXEL, marks=marks)
    name, a = _args(model.respond(_req(s3, text, som_tools())))
    assert name == "select_element" and a["id"] == 3 and a["confidence"] == 1.0


def test_no_match_guesses_the_centre_with_low_confidence(s3, model) -> None:
    for instr, label in (("Click the Frobnicate button", "Frobnicate"), ("Click the small green button", "")):
        text = prompts.oneshot_prompt(
            instruction=instr, size=s3.size, frame=Frame.PIXEL, attempt=0, previous=None
        )
        reply = model.respond(_req(s3, text, tools_for("point")))
        _, a = _args(reply)
        assert (a["x"], a["y"], a["confidence"]) == (400, 300, NO_MATCH_CONFIDENCE)
        assert f"no match for '{label}'" in reply.text


def test_ocr_is_cached_by_image_and_deterministic(s3) -> None:
    m = OcrModel("ocr", OcrEngine())
    text = prompts.oneshot_prompt(
        instruction=s3.instruction, size=s3.size, frame=Frame.PIXEL, attempt=0, previous=None
    )
    r1 = asyncio.run(m.complete(_req(s3, text, tools_for("point"))))
    runs = m.engine.calls
    assert runs == 2  # the two passes (dark, light) of one image
    r2 = asyncio.run(m.complete(_req(s3, text + "\n", tools_for("point"))))
    assert m.engine.calls == runs and r2.tool_calls == r1.tool_calls and r1.latency_s > 0
    assert r1.cost_usd == 0.0 and not m.simulated
    nocache = OcrModel("ocr", ocr_model_from_config("ocr-tesseract", {"cache_size": 0}).engine)
    asyncio.run(nocache.complete(_req(s3, text, tools_for("point"))))
    asyncio.run(nocache.complete(_req(s3, text, tools_for("point"))))
    assert nocache.engine.calls == 2 * runs  # cache_size 0: every request read anew


def test_matching_is_case_punctuation_and_split_tolerant() -> None:
    def w(text, i, line=(1, 1, 1, 1), x=0.0):
        return Word(text, 90.0, Box(x, 0, x + 10, 10), line, i)

    words = [
        w("Sign", 0, x=0),
        w("in", 1, x=12),
        w("Sign", 2, (1, 2, 1, 1), 100),
        w("In:", 3, (1, 2, 1, 1), 112),
    ]
    m = best_match(words, "Sign In")
    assert m is not None and m.text == "Sign In:" and m.score == 100  # the case-exact one wins the tie
    assert best_match([w("SignIn", 0)], "Sign In").score == 100  # merged by OCR
    assert best_match([w("Submt", 0)], "Submit") is not None  # one letter lost
    assert best_match([w("Cancel", 0)], "Submit") is None
    assert normalise("  CLICK-ME!! ") == "click me"


def test_a_missing_binary_is_one_line_naming_the_packages() -> None:
    with pytest.raises(ConfigError) as e:
        OcrEngine(binary="no-such-tesseract-binary")
    assert str(e.value).count("\n") == 0 and "tesseract-ocr tesseract-ocr-eng" in str(e.value)
    assert MISSING in str(e.value)
    with pytest.raises(ConfigError, match="ocr.psmx: unknown key"):
        ocr_model_from_config("ocr-tesseract", {"psmx": 3})
    with pytest.raises(ConfigError, match="passes"):
        ocr_model_from_config("ocr-tesseract", {"passes": ["bright"]})
    with pytest.raises(ConfigError) as e:
        ocr_model_from_config("ocr-tesseract", {"cache_size": -1})
    assert str(e.value) == "model ocr-tesseract: ocr: cache_size: -1 is not a whole number >= 0"


@pytest.mark.e2e
def test_cli_without_tesseract_exits_2_with_one_line(cli, tmp_path) -> None:
    import shutil
    import sys

    bin_dir = tmp_path / "bin"  # a PATH with python but without tesseract
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    assert shutil.which("tesseract", path=str(bin_dir)) is None
    r = cli("model=ocr-tesseract", "task=S1", "methods=[oneshot]", f"hydra.run.dir={tmp_path / 'run'}",
            env_extra={"PATH": str(bin_dir)})  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if "tesseract" in ln]
    assert len(lines) == 1 and "tesseract-ocr tesseract-ocr-eng" in lines[0], r.stderr[-2000:]
    trials = tmp_path / "run" / "trials.jsonl"
    assert not trials.exists() or trials.read_text() == ""  # no trial ran, none was recorded as an error
    assert not (tmp_path / "run" / "plan.jsonl").exists() and not (tmp_path / "run" / "frames").exists()


def test_a_tesseract_that_hangs_is_said_so_not_missing(tmp_path, monkeypatch) -> None:
    """A binary that does not answer is reported as not answering, within the check's timeout."""
    from dvoc_bench.models.ocr.tesseract import find_tesseract

    fake = tmp_path / "tesseract"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(ConfigError, match="did not answer --list-langs within 0.5 s"):
        find_tesseract(timeout_s=0.5)


def test_a_drag_prompt_gets_both_points_in_one_drag_points_answer(s3, model):
    """A two-point prompt (the harness's drag_points tool): what to drag and where to drop it are read from
    the instruction's two halves (around its last ``to``), each found like a one-point label."""
    from dvoc_bench.core.frames import FrameRule
    from dvoc_bench.core.geometry import Size
    from dvoc_bench.models.ocr.labels import drag_parts
    from dvoc_bench.protocol.drag import drag_prompt, drag_tools

    halves = ("Click the 'Save' button", "Click the Delete button")
    assert drag_parts("Drag the 'Save' button onto the Delete button") == halves
    assert drag_parts("Drag the Save button") is None
    task = "Drag the Submit button to the Save button"
    text = drag_prompt("tool_call", instruction=task, seen=Size(800, 600), rule=FrameRule(units="pixel"))
    reply = asyncio.run(model.complete(_req(s3, text, drag_tools())))
    name, args = _args(reply)
    assert name == "drag_points"
    boxes = {e.id: e.box for e in s3.truth.elements}
    assert boxes["submit"].contains(Point(*args["from"])) and boxes["save"].contains(Point(*args["to"]))
    assert "Submit" in reply.text and "Save" in reply.text
    lone = asyncio.run(model.complete(_req(s3, text.replace(" to the Save button", ""), drag_tools())))
    assert lone.tool_calls == [] and "start and end" in lone.text
