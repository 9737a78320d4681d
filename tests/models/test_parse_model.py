"""PP-OCR beside Tesseract (``ocr.engine``), the screen parse and the parser model (``omniparser-parse``) on
the real models: RapidOCR's PP-OCR ONNX files (the ``ocr`` extra) and OmniParser-v2's icon detector (the
weights ``.ci/run`` downloads). Without them the real-model tests skip with the reason, unless
``DVOC_REQUIRE_OMNIPARSER=1`` (CI), where they fail."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Frame, Point, Size
from dvoc_bench.detect.omniparser import WEIGHTS_ENV, default_weights
from dvoc_bench.detect.types import Detection
from dvoc_bench.draw.render import encode_png
from dvoc_bench.draw.som_render import Mark
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.models.ocr.model import NO_MATCH_CONFIDENCE, ocr_model_from_config
from dvoc_bench.models.ocr.rapid import MISSING_RAPIDOCR, line_words
from dvoc_bench.models.ocr.screen import elements_from
from dvoc_bench.models.ocr.tesseract import Word
from dvoc_bench.protocol import prompts
from dvoc_bench.protocol.som import som_prompt, som_tools
from dvoc_bench.protocol.tools import tools_for
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from tests.support import import_or_need, need


def _rapidocr() -> None:
    import_or_need("RAPIDOCR", "rapidocr_onnxruntime", "pip install -e '.[ocr]'")


def _weights() -> None:
    p = default_weights()
    need("OMNIPARSER", None if p.is_file() else f"not at {p} (set {WEIGHTS_ENV})")


@pytest.fixture(scope="module")
def s3():
    reg = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
    return reg.snapshot("S3")


@pytest.fixture(scope="module")
def parser_model(tmp_path_factory):
    _rapidocr()
    _weights()
    from dvoc_bench.models.ocr.parser import parse_model_from_config

    m = parse_model_from_config("omniparser-parse", {"disk_cache": False})
    yield m
    m.close()


def _req(snap, text, tools):
    return ModelRequest(text=text, image_png=encode_png(snap.image), image_size=snap.size, tools=tools,
                        scene_id="nothing-to-see", seed=0)  # fmt: skip


def _args(reply):
    (call,) = reply.tool_calls
    return call.name, json.loads(call.arguments)


def _box(snap, ident) -> Box:
    return next(e.box for e in snap.truth.elements if e.id == ident)


def _w(text, i, box, line=(1, 1, 1, 1)):
    return Word(text, 90.0, Box(*box), line, i)


# -- pure parts ------------------------------------------------------------------------------------------


def test_a_rapidocr_line_is_split_into_words_over_its_box() -> None:
    ws = line_words([[10, 20], [110, 20], [110, 40], [10, 40]], "Sign In now", 0.9, 3, 5)
    assert [w.text for w in ws] == ["Sign", "In", "now"]
    assert [round(w.box.x0) for w in ws] == [10, 55, 83] and ws[-1].box.x1 == 110  # 11 chars over 100 px
    assert {w.line for w in ws} == {(2, 3, 0, 0)} and [w.index for w in ws] == [5, 6, 7] and ws[0].conf == 90


def test_each_word_goes_to_the_smallest_box_holding_it_and_loose_lines_are_elements() -> None:
    dets = [
        Detection(Box(0, 0, 400, 100), 0.9),
        Detection(Box(10, 10, 90, 40), 0.5),
        Detection(Box(0, 0, 800, 600), 0.99),
    ]  # fmt: skip  (the last: over half the screen, dropped)
    l2 = (1, 2, 1, 1)
    words = [_w("Save", 0, (20, 15, 50, 30)), _w("draft", 1, (200, 50, 240, 60)),
             _w("Help", 2, (500, 500, 540, 520), l2), _w("me", 3, (545, 500, 560, 520), l2)]  # fmt: skip
    els = elements_from(dets, words, Size(800, 600))
    got = [(e.id, e.text, e.source) for e in els]
    assert got == [(1, "draft", "detector"), (2, "Save", "detector"), (3, "Help me", "ocr")]
    assert els[2].box == Box(500, 500, 560, 520) and els[2].score == pytest.approx(0.9)
    assert els[1].as_dict()["centre"] == [50.0, 25.0]


def test_an_unknown_engine_is_one_line_naming_the_key(monkeypatch) -> None:
    with pytest.raises(ConfigError) as e:
        ocr_model_from_config("ocr-tesseract", {"engine": "easyocr"})
    assert str(e.value) == (
        "model ocr-tesseract: ocr.engine: unknown value 'easyocr'; allowed: tesseract, rapidocr"
    )
    with pytest.raises(ConfigError, match=r"ocr.psm: applies to engine tesseract only \(engine is rapidocr"):
        ocr_model_from_config("ocr-rapidocr", {"engine": "rapidocr", "psm": 11})
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # the wheel is not installed
    with pytest.raises(ConfigError) as e:  # a bad cache size is said before the models would load
        ocr_model_from_config("ocr-rapidocr", {"engine": "rapidocr", "cache_size": 2.5})
    assert str(e.value) == "model ocr-rapidocr: ocr: cache_size: 2.5 is not a whole number >= 0"
    with pytest.raises(ConfigError) as e:
        ocr_model_from_config("ocr-rapidocr", {"engine": "rapidocr"})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("model ocr-rapidocr: ocr.engine: ") and MISSING_RAPIDOCR in msg


def test_the_parser_model_names_its_bad_keys(tmp_path) -> None:
    from dvoc_bench.models.ocr.parser import parse_model_from_config

    with pytest.raises(ConfigError, match=r"^model p: parse.detectr: unknown key"):
        parse_model_from_config("p", {"detectr": {}})
    with pytest.raises(ConfigError, match=r"^model p: parse.detector.backend: 'oracle' is not a detector"):
        parse_model_from_config("p", {"detector": {"backend": "oracle"}})
    with pytest.raises(ConfigError, match=r"^model p: parse.detector.model: file not found"):
        parse_model_from_config("p", {"detector": {"model": str(tmp_path / "none.pt")}})


@pytest.mark.e2e
def test_cli_unknown_engine_exits_2_with_one_line(cli, tmp_path) -> None:
    r = cli("model=ocr-tesseract", "+model.ocr.engine=easyocr", "task=S1", "methods=[oneshot]",
            f"hydra.run.dir={tmp_path / 'run'}")  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if "config error" in ln]
    assert lines == ["config error: model ocr-tesseract: ocr.engine: unknown value 'easyocr'; allowed: "
                     "tesseract, rapidocr"], r.stderr[-2000:]  # fmt: skip
    assert not (tmp_path / "run" / "plan.jsonl").exists()


# -- the real models ---------------------------------------------------------------------------------------


@pytest.mark.e2e
def test_rapidocr_reads_s3s_labels_and_caches_by_image(s3) -> None:
    _rapidocr()
    m = ocr_model_from_config("ocr-rapidocr", {"engine": "rapidocr"})
    for ident, label in (("submit", "Submit"), ("cancel", "Cancel"), ("save", "Save")):
        text = prompts.oneshot_prompt(instruction=f"Click the {label} button", size=s3.size,
                                      frame=Frame.PIXEL, attempt=0, previous=None)  # fmt: skip
        reply = asyncio.run(m.complete(_req(s3, text, tools_for("point"))))
        _, a = _args(reply)
        assert _box(s3, ident).contains(Point(a["x"], a["y"])), (label, a, reply.text)
        assert a["confidence"] >= 0.75 and f"for '{label}'" in reply.text
    assert m.engine.calls == 1  # one image, read once


@pytest.mark.e2e
def test_the_parser_answers_each_tool_from_the_pixels_and_the_prompt(s3, parser_model) -> None:
    submit = _box(s3, "submit")
    text = prompts.oneshot_prompt(instruction=s3.instruction, size=s3.size, frame=Frame.PIXEL,
                                  attempt=0, previous=None)  # fmt: skip
    reply = parser_model.respond(_req(s3, text, tools_for("point")))
    name, a = _args(reply)
    assert name == "click_at" and submit.contains(Point(a["x"], a["y"])) and a["confidence"] == 1.0
    assert "in element" in reply.text and "(detector, text 'Submit'" in reply.text, reply.text
    # report_offset: from the crosshair the prompt states to the element's centre
    c = submit.centre
    for draft in (Point(100, 500), Point(700, 50)):
        text = prompts.dvoc_prompt(
            instruction=s3.instruction, size=s3.size, frame=Frame.PIXEL, overlay="none", predict="relative",
            draft=draft, iteration=0, history=[],
        )  # fmt: skip
        name, a = _args(parser_model.respond(_req(s3, text, tools_for("offset"))))
        assert name == "report_offset"
        assert abs(draft.x + a["dx"] - c.x) < 15 and abs(draft.y + a["dy"] - c.y) < 10, (draft, a)
    # select_element: the listed mark that is the element (the truth's boxes as marks, shuffled ids)
    order = ["cancel", "save", "submit", "delete"]
    marks = [Mark(i + 1, _box(s3, k), 0.9, (255, 0, 0)) for i, k in enumerate(order)]
    text = som_prompt(instruction=s3.instruction, size=s3.size, frame=Frame.PIXEL, marks=marks)
    reply = parser_model.respond(_req(s3, text, som_tools()))
    name, a = _args(reply)
    assert name == "select_element" and a["id"] == 3 and a["confidence"] == 1.0 and "IoU" in reply.text


@pytest.mark.e2e
def test_no_match_falls_back_to_the_best_scoring_element(s3, parser_model) -> None:
    els = parser_model.parser.parse(s3.image)
    best = max((e for e in els if e.source == "detector"), key=lambda e: e.score)
    for instr, label in (("Click the Frobnicate button", "Frobnicate"), ("Click the small green button", "")):
        text = prompts.oneshot_prompt(instruction=instr, size=s3.size, frame=Frame.PIXEL, attempt=0,
                                      previous=None)  # fmt: skip
        reply = parser_model.respond(_req(s3, text, tools_for("point")))
        _, a = _args(reply)
        assert (a["x"], a["y"]) == (round(best.centre.x), round(best.centre.y))
        assert a["confidence"] == NO_MATCH_CONFIDENCE and f"no match for '{label}'" in reply.text
        assert f"highest-scoring element {best.id}" in reply.text


@pytest.mark.e2e
def test_the_parse_is_cached_on_disk_by_image_hash(s3, tmp_path, monkeypatch) -> None:
    _rapidocr()
    _weights()
    import dvoc_bench.models.ocr.screen as screen
    from dvoc_bench.models.ocr.parser import parse_model_from_config

    monkeypatch.setattr(screen, "parse_cache_dir", lambda: tmp_path / "parse")
    a = parse_model_from_config("p", None)
    first = a.parser.parse(s3.image)
    assert a.parser.parses == 1 and len(list((tmp_path / "parse").rglob("*.json"))) == 1
    b = parse_model_from_config("p", None)  # a new model (a new run): read from disk, nothing parsed
    again = b.parser.parse(s3.image)
    assert b.parser.parses == 0 and [e.as_dict() for e in again] == [e.as_dict() for e in first]
    other = parse_model_from_config("p", {"detector": {"imgsz": 1280}})  # other settings: another entry
    other.parser.parse(s3.image)
    assert other.parser.parses == 1 and len(list((tmp_path / "parse").rglob("*.json"))) == 2
    for m in (a, b, other):
        m.close()
