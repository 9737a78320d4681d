"""Spend is ours to estimate (issue 51, item 6): a provider reporting 1 token per call is priced, and charged
to the budget, by the harness's own estimate of the call (prompt text, tool schemas and the image sent);
the step records the estimate and the reported counts' cost beside it, and the report shows both. Through
the real path: LiteLLM -> HTTP on loopback -> a fake provider."""

from __future__ import annotations

import base64
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from dvoc_bench.analysis.report import build_report
from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.runner.budget import spent_in
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.summary import run_report
from dvoc_bench.runner.sweep import run_sweep
from tests.support import Answer, chat_completion, fake_openai
from tests.test_budget_lies import PRICED

ONE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
HONEST = {"prompt_tokens": 1500, "completion_tokens": 40, "total_tokens": 1540}
RATE = 10.0 / 1e6
"""USD per token, in and out (the ``pricing:`` block of :data:`tests.test_budget_lies.PRICED`)."""


def sweep(tmp_path: Path, usage: dict[str, int], budget: float | None = None, tasks: str = "[S1,S2]"):
    """A one-shot sweep of a provider reporting ``usage``; its steps, the request bodies it got, the run."""

    def answer(body: dict[str, Any], headers: Any) -> Answer:
        return 200, chat_completion("liar-vlm", tool=("click_at", '{"x": 0, "y": 0}'), usage=usage), {}

    with fake_openai(answer) as (url, server):
        models = tmp_path / "model"
        models.mkdir(exist_ok=True)
        (models / "liar.yaml").write_text(PRICED.format(url=url), encoding="utf-8")
        over = [f"run.max_cost_usd={budget}"] if budget is not None else []
        setup = quick_setup(["models=[liar]", f"paths.models={models}", f"tasks={tasks}", "methods=[oneshot]",
                             "cache.enabled=false", "retry.transient_retries=0", "run.max_in_flight=1",
                             *over])  # fmt: skip
        run_dir = tmp_path / "run"
        run_sweep(setup, run_dir)
    return list(read_jsonl(run_dir / "steps.jsonl")), list(server.seen), run_dir


def independent_estimate(body: dict[str, Any], reply_chars: int) -> tuple[int, int]:
    """The estimate recomputed from what the provider received: the text and tool schemas at 4 characters a
    token, the PNG's size by the patch28 rule of the ``local-sim`` provider (one token per 28x28 patch)."""
    parts = body["messages"][0]["content"]
    text = sum(len(p["text"]) for p in parts if p["type"] == "text")
    text += len(json.dumps(body.get("tools"))) if body.get("tools") else 0
    url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
    w, h = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size
    return math.ceil(text / 4) + math.ceil(w / 28) * math.ceil(h / 28), math.ceil(reply_chars / 4)


@pytest.mark.e2e
def test_one_token_per_call_is_priced_by_our_estimate_and_the_record_says_so(tmp_path):
    steps, seen, run_dir = sweep(tmp_path, ONE)
    called = [s for s in steps if s.get("error_class") is None]
    assert called and len(called) == len(seen)
    reply_chars = len('{"x": 0, "y": 0}')  # the reply as received: its text and tool call arguments
    for s, body in zip(called, seen, strict=True):
        est = independent_estimate(body, reply_chars)
        assert (s["tokens_in"], s["tokens_out"]) == (1, 1)  # as reported
        assert (s["est_tokens_in"], s["est_tokens_out"]) == est and est[0] > 500
        assert s["cost_source"] == "estimate"
        assert s["cost_usd"] == pytest.approx((est[0] + est[1]) * RATE)
        assert s["reported_cost_usd"] == pytest.approx(2 * RATE)
    spend = spent_in(run_dir)
    assert spend.total == pytest.approx(sum(s["cost_usd"] for s in called))
    assert spend.estimated == len(called) and spend.reported_usd == pytest.approx(2 * len(called) * RATE)
    line = next(x for x in run_report([], ran=0, spend=spend) if x.startswith("cost:"))
    said = f"{len(called)} calls reported usage far below the harness's estimate: charged by the estimate"
    assert said in line, line
    text, _ = build_report([str(run_dir)], [], "hit", tmp_path / "rep", n_boot=20, figures=False)
    part = text.split("Usage reported far below the harness's own estimate", 1)[1].split("###", 1)[0]
    est_in, est_out = sum(s["est_tokens_in"] for s in called), sum(s["est_tokens_out"] for s in called)
    n = len(called)
    charged = (est_in + est_out) * RATE
    row = f"| liar | {n} | {n}/{n} | {est_in}/{est_out} | ${2 * n * RATE:.4f} | ${charged:.4f} |"
    assert row in part, part


@pytest.mark.e2e
def test_the_budget_binds_on_the_estimate_not_on_the_reported_tokens(tmp_path):
    """Each call is about 900 tokens by our count ($0.009), 2 by the provider's ($0.00002); a trial is
    admitted with a bound of five calls at twice the estimate ($0.12). A $0.3 budget stops the run after a
    few trials, where the reported counts would have let all 20 run (before, the budget never bound)."""
    budget = 0.3
    steps, seen, run_dir = sweep(tmp_path, ONE, budget=budget, tasks="[S1,S2,S3,S4]")
    spend = spent_in(run_dir)
    costs = [s["cost_usd"] for s in steps if s.get("error_class") is None]
    assert costs and spend.total <= budget + max(costs)
    assert len(seen) * 2 * RATE < budget / 100  # by the reported counts, far inside the budget
    trials = list(read_jsonl(run_dir / "trials.jsonl"))
    skipped = [t for t in trials if t["status"] == "skipped" and t["error_class"] == "budget"]
    assert skipped and len(skipped) < len(trials)


@pytest.mark.e2e
def test_honest_usage_records_no_estimate(tmp_path):
    steps, _, run_dir = sweep(tmp_path, HONEST, tasks="[S1]")
    called = [s for s in steps if s.get("error_class") is None]
    assert called and all(s.get("est_tokens_in") is None and s["cost_source"] == "pricing" for s in called)
    assert all(s["cost_usd"] == pytest.approx(1540 * RATE) for s in called)
    text, _ = build_report([str(run_dir)], [], "hit", tmp_path / "rep", n_boot=20, figures=False)
    assert "Usage reported far below" not in text
