"""The parser model in sweeps: Set-of-Mark with the real detector reads the page, not the truth (a page whose
selector targets ``#alpha`` while the instruction asks for Beta: the parser selects Beta's mark, the
simulator Alpha's); and the same sweep in process (``omniparser-parse``) and over HTTP (``local-parse`` ->
``dvoc_bench.serve``) gives identical answers. Real models: skipped with the reason without them (failed
in CI, ``DVOC_REQUIRE_OMNIPARSER=1``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.detect.omniparser import default_weights
from dvoc_bench.models.factory import build_model
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from tests.models.test_parse_model import _rapidocr, _weights
from tests.support import chromium_or_skip, served_simulator

pytestmark = pytest.mark.e2e

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; font-family: "DVOC Sans"; background: #f8fafc; }
button { font: inherit; font-size: 18px; position: absolute; width: 160px; height: 56px; border: 0;
         border-radius: 8px; background: #2563eb; color: #fff; }
</style></head><body>
<button id="alpha" style="left: 180px; top: 200px">Alpha</button>
<button id="beta" style="left: 520px; top: 330px">Beta</button></body></html>"""


def _no_truth(task: str):
    raise AssertionError(f"the model asked for the truth of {task}")


@pytest.fixture(autouse=True)
def _models_present() -> None:
    _rapidocr()
    _weights()


def _som(tmp_path: Path, name: str, model: str, selector: str) -> list[dict]:
    page = tmp_path / "two.html"
    page.write_text(PAGE, encoding="utf-8")
    setup = quick_setup(
        [f"model={model}", "task=custom", "methods=[som]", "detector=omniparser",
         f"detector.model={default_weights()}", "starts=random:1",
         "web.custom.viewport=[800,500]", f"web.custom.page={page}", f'web.custom.selector="{selector}"',
         "web.custom.instruction='Click the Beta button'"]
    )  # fmt: skip
    truth = _no_truth if model == "omniparser-parse" else setup.registry.truth
    res = run_sweep(setup, tmp_path / name, lambda m, gate: build_model(m, truth, wrap=gate))
    setup.registry.close()
    assert {t["status"] for t in res.trials} == {"ok"}, res.trials
    return res.trials


def test_som_with_the_real_detector_reads_the_page_not_the_truth(tmp_path: Path) -> None:
    chromium_or_skip()
    parse = _som(tmp_path, "parse", "omniparser-parse", "#alpha")
    sim = _som(tmp_path, "sim", "sim-ideal", "#alpha")
    for t in parse:
        assert t["simulated"] is False and t["hit"] is False and t["hit_element"] == "button#beta", t
    for t in sim:
        assert t["simulated"] is True and t["hit"] is True and t["hit_element"] == "button#alpha", t
    steps = (tmp_path / "parse" / "steps.jsonl").read_text(encoding="utf-8")
    assert "OCR found 'Beta' for 'Beta'" in steps and "is the element (IoU" in steps
    for t in _som(tmp_path, "consistent", "omniparser-parse", "#beta"):
        assert t["hit"] is True and t["hit_element"] == "button#beta", t


SAME = ("task", "method", "start_index", "status", "hit", "hit_element", "final_point", "stop_reason")


def test_the_same_sweep_in_process_and_over_http_gives_identical_answers(tmp_path, monkeypatch) -> None:
    import dvoc_bench.models.ocr.screen as screen

    def run(model: str, sub: str):
        monkeypatch.setattr(screen, "parse_cache_dir", lambda: tmp_path / f"cache-{sub}")  # parsed afresh
        setup = quick_setup([f"model={model}", "tasks=[S1,S3,S6]", "methods=[oneshot,som]",
                             "detector=omniparser", f"detector.model={default_weights()}",
                             "starts=random:1"])  # fmt: skip
        res = run_sweep(setup, tmp_path / sub, lambda m, gate: build_model(m, _no_truth, wrap=gate))
        return res.trials, list(read_jsonl(tmp_path / sub / "steps.jsonl"))

    with served_simulator(warm=False) as (_, server):
        before = server.faults.counts["ok"]
        http_t, http_s = run("local-parse", "http")
        calls = server.faults.counts["ok"] - before
    local_t, local_s = run("omniparser-parse", "local")
    assert calls == len(http_s) == len(local_s) >= 6  # every step was a real HTTP request
    key = lambda t: (t["task"], t["method"], t["start_index"])  # noqa: E731
    local_t, http_t = sorted(local_t, key=key), sorted(http_t, key=key)
    assert [key(t) for t in local_t] == [key(t) for t in http_t]
    for a, b in zip(local_t, http_t, strict=True):
        assert a["simulated"] is False and b["simulated"] is False
        assert {k: a.get(k) for k in SAME} == {k: b.get(k) for k in SAME}, (a, b)
    order = lambda s: (s["prompt"], s["frame_sha"])  # noqa: E731
    for a, b in zip(sorted(local_s, key=order), sorted(http_s, key=order), strict=True):
        assert a["reply_text"] == b["reply_text"] and a["reply_tool_calls"] == b["reply_tool_calls"]
    hits = {t["task"]: t["hit"] for t in local_t if t["method"] == "oneshot"}
    assert hits["S1"] and hits["S3"]  # text targets found
    assert any("parsed" in s["reply_text"] and "in element" in s["reply_text"] for s in local_s)


def test_som_on_the_web_scenes_and_docs_pages_never_reads_the_truth(tmp_path: Path) -> None:
    """``methods=[som] detector=omniparser models=[omniparser-parse]`` on W1-W5 and the six local docs pages
    (those installed here): every trial ends ``ok``; the truth lookup raises if it is ever asked."""
    from dvoc_bench.benchmarks.ocr_docs import write_tasks
    from dvoc_bench.benchmarks.recall_sets import DOC_PAGES

    chromium_or_skip()
    files, _absent = write_tasks(tmp_path / "docs", list(DOC_PAGES))
    docs = [p.stem for p in files]
    tasks = ["W1", "W2", "W3", "W4", "W5", *docs]
    setup = quick_setup(
        ["models=[omniparser-parse]", f"tasks=[{','.join(tasks)}]", "methods=[som]", "detector=omniparser",
         f"detector.model={default_weights()}", "starts=random:1",
         f"web.task_files=[{','.join(str(p) for p in files)}]"]
    )  # fmt: skip
    res = run_sweep(setup, tmp_path / "run", lambda m, gate: build_model(m, _no_truth, wrap=gate))
    setup.registry.close()
    assert sorted({t["task"] for t in res.trials}) == sorted(tasks)
    for t in res.trials:
        assert t["status"] == "ok" and t["simulated"] is False and t["model"] == "omniparser-parse", t
