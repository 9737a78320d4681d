"""The OCR model over HTTP: the same sweep in process (``ocr-tesseract``) and through LiteLLM -> HTTP ->
``dvoc_bench.serve`` (``local-ocr``) gives identical answers, and both record ``simulated: false``."""

from __future__ import annotations

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.models.factory import build_model
from dvoc_bench.models.ocr.tesseract import find_tesseract
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from tests.support import need, served_simulator

try:
    find_tesseract()
except ConfigError as e:  # pragma: no cover - CI installs it (.ci/run)
    need("TESSERACT", str(e), module=True)


# what must agree between the two transports, trial by trial (timing and cost bookkeeping may differ)
SAME = (
    "task",
    "method",
    "start_index",
    "status",
    "hit",
    "hit_element",
    "final_point",
    "stop_reason",
    "iterations",
)


@pytest.fixture(scope="module")
def ocr_url():
    """``dvoc_bench.serve`` on localhost (synthetic scenes only, the OCR model needs none), DVOC_SIM_URL."""
    with served_simulator(warm=False) as served:
        yield served


def _run(tmp, model, extra):
    setup = quick_setup(
        [f"model={model}", "tasks=[S1,S3,S6]", "methods=[oneshot,dvoc]", "starts=random:1", *extra]
    )
    res = run_sweep(setup, tmp, lambda m, gate: build_model(m, setup.registry.truth, wrap=gate))
    steps = list(read_jsonl(tmp / "steps.jsonl"))
    return res.trials, steps


@pytest.mark.e2e
def test_the_same_sweep_in_process_and_over_http_gives_identical_answers(ocr_url, tmp_path) -> None:
    url, server = ocr_url
    before = server.faults.counts["ok"]
    local_t, local_s = _run(tmp_path / "local", "ocr-tesseract", [])
    http_t, http_s = _run(tmp_path / "http", "local-ocr", [])
    calls = server.faults.counts["ok"] - before
    assert calls == len(http_s) == len(local_s) > 10  # every step was a real HTTP request
    key = lambda t: (t["task"], t["method"], t["start_index"])  # noqa: E731
    local_t, http_t = sorted(local_t, key=key), sorted(http_t, key=key)
    assert [key(t) for t in local_t] == [key(t) for t in http_t]
    for a, b in zip(local_t, http_t, strict=True):
        assert a["simulated"] is False and b["simulated"] is False
        assert {k: a.get(k) for k in SAME} == {k: b.get(k) for k in SAME}, (a, b)
    order = lambda s: (s["prompt"], s["frame_sha"])  # noqa: E731
    la, hb = sorted(local_s, key=order), sorted(http_s, key=order)
    for a, b in zip(la, hb, strict=True):
        assert a["reply_text"] == b["reply_text"] and a["reply_tool_calls"] == b["reply_tool_calls"]
        assert a["frame_sha"] == b["frame_sha"] and a["values_px"] == b["values_px"]
    # the answers are the OCR model's: S1 and S3 are found (text), S6 is a colour (no label)
    hits = {t["task"]: t["hit"] for t in local_t if t["method"] == "oneshot"}
    assert hits["S1"] and hits["S3"] and not hits["S6"]
    assert any("no match for ''" in s["reply_text"] for s in local_s)
