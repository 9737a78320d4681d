"""Providers that lie about usage (issue 32, items 4-6): the budget holds against huge, missing, negative
and non-finite token counts, through the real path (LiteLLM -> HTTP on loopback -> a fake provider)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.runner.budget import spent_in
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.summary import run_report
from dvoc_bench.runner.sweep import run_sweep
from tests.support import Answer, chat_completion, fake_openai

USAGES: dict[str, Any] = {
    "honest": {"prompt_tokens": 1500, "completion_tokens": 40, "total_tokens": 1540},
    "huge": {"prompt_tokens": 2_000_000, "completion_tokens": 40, "total_tokens": 2_000_040},  # $20 a call
    "none": None,  # no `usage` in the reply at all
    "negative": {"prompt_tokens": -5_000_000, "completion_tokens": -40, "total_tokens": -5_000_040},
    "nan": {"prompt_tokens": math.nan, "completion_tokens": math.inf, "total_tokens": math.nan},
}
"""What the fake provider reports as the usage of every reply, by mode."""

PRICED = """\
name: liar
kind: litellm
model_id: openai/liar-vlm
provider: local-sim
api_base: {url}
coord_frame: norm1000
params: {{}}
send_seed: true
pricing: {{input_per_mtok: 10.0, output_per_mtok: 10.0, per_image: 0.0}}
"""


def liar(mode: str):
    """A provider whose every reply is a click at (0, 0) (a miss on every scene, so one-shot trials use all
    their attempts) with the usage of ``mode``."""

    def answer(body: dict[str, Any], headers: Any) -> Answer:
        tool = ("click_at", '{"x": 0, "y": 0}')
        return 200, chat_completion("liar-vlm", tool=tool, usage=USAGES[mode]), {}

    return fake_openai(answer)


def sweep(tmp_path: Path, mode: str, budget: float, in_flight: int = 1, tasks: str = "[S1,S2,S3,S4]"):
    """A one-shot sweep of the lying model under ``budget``; its steps (in the order they were written),
    trials, the spend of its run directory and the requests the provider answered."""
    with liar(mode) as (url, server):
        models = tmp_path / "model"
        models.mkdir(exist_ok=True)
        (models / "liar.yaml").write_text(PRICED.format(url=url), encoding="utf-8")
        setup = quick_setup(
            [
                "models=[liar]",
                f"paths.models={models}",
                f"tasks={tasks}",
                "methods=[oneshot]",
                "cache.enabled=false",
                "retry.transient_retries=0",
                f"run.max_in_flight={in_flight}",
                f"run.max_cost_usd={budget}",
            ]
        )
        run_dir = tmp_path / "run"
        summary = run_sweep(setup, run_dir)
    steps = list(read_jsonl(run_dir / "steps.jsonl"))
    return steps, summary, spent_in(run_dir), server.requests


def _costs(steps: list[dict[str, Any]]) -> list[float]:
    return [s["cost_usd"] for s in steps if isinstance(s.get("cost_usd"), (int, float))]


@pytest.mark.e2e
def test_a_reply_far_over_its_bound_stops_the_calls_at_once(tmp_path):
    budget = 0.5
    steps, summary, spend, requests = sweep(tmp_path, "huge", budget)
    costs = _costs(steps)
    assert costs and max(costs) == pytest.approx(20.0004)  # recorded as reported: the provider billed it
    # spend never passes the budget by more than one call's recorded usage ...
    assert spend.total <= budget + max(costs) + 1e-9
    # ... because no call starts once the recorded spend has passed the budget: one request, then none
    assert requests == 1
    answered = [s for s in steps if s.get("error_class") is None]
    assert len(answered) == 1
    assert all(t["status"] == "skipped" and t["error_class"] == "budget" for t in summary.trials[1:])
    assert spend.over_bound_calls == 1
    bound = answered[0]["cost_bound_usd"]
    assert bound and spend.max_excess == pytest.approx(20.0004 - bound)
    lines = run_report(summary.trials, ran=summary.ran, spend=spend, budget_usd=budget)
    line = next(li for li in lines if li.startswith("cost:"))
    assert f"over the budget by ${spend.total - budget:.4f}" in line, line
    assert f"the largest single-call excess over its admission bound: ${spend.max_excess:.4f}" in line, line


@pytest.mark.e2e
def test_concurrent_trials_stop_calling_once_the_spend_passes_the_budget(tmp_path):
    budget, in_flight = 0.5, 3
    steps, summary, spend, requests = sweep(tmp_path, "huge", budget, in_flight, "[S1,S2,S3,S4,S5,S6]")
    costs = _costs(steps)
    # only the calls already in flight when the first reply came back could pass their bound
    assert spend.total <= budget + in_flight * max(costs) + 1e-9
    assert requests <= in_flight
    assert sum(t["status"] == "skipped" and t["error_class"] == "budget" for t in summary.trials) >= 3


@pytest.mark.e2e
def test_a_reply_without_token_counts_is_charged_its_bound(tmp_path):
    budget = 0.5
    steps, summary, spend, requests = sweep(tmp_path, "none", budget)
    answered = [s for s in steps if s.get("error_class") is None]
    assert answered and requests == len(answered)
    for s in answered:
        assert s["cost_source"] == "bound", s
        assert s["cost_usd"] == pytest.approx(s["cost_bound_usd"]) and s["cost_usd"] > 0
        assert "no token counts" in s["usage_fault"]
    assert spend.total == pytest.approx(sum(_costs(steps)))
    assert 0 < spend.total <= budget  # every call charged exactly its bound: the budget is never passed
    assert any(t["status"] == "skipped" and t["error_class"] == "budget" for t in summary.trials)


@pytest.mark.e2e
def test_negative_token_counts_are_a_fault_not_a_refund(tmp_path):
    budget = 0.5
    steps, summary, spend, _ = sweep(tmp_path, "negative", budget)
    answered = [s for s in steps if s.get("error_class") is None]
    assert answered
    for s in answered:
        assert "negative" in s["usage_fault"] and "-5000000" in s["usage_fault"], s
        assert s["cost_source"] == "bound" and s["cost_bound_usd"] > 0
        assert s["cost_usd"] == pytest.approx(s["cost_bound_usd"])
        assert s["tokens_in"] is None and s["tokens_out"] is None  # not summed into the trial's tokens
    assert all(c >= 0 for c in _costs(steps))
    assert 0 < spend.total <= budget and spend.faults == len(answered)
    assert all((t.get("tokens_in") or 0) >= 0 for t in summary.trials)


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # LiteLLM's, on the NaN it then refuses
def test_non_finite_token_counts_are_a_fault_charged_the_bound(tmp_path):
    budget = 0.5
    steps, _summary, spend, requests = sweep(tmp_path, "nan", budget)
    assert steps and requests == len(steps)
    for s in steps:  # LiteLLM cannot read such a reply: the call failed, and says why
        assert s["error_class"] == "server" and "usage" in s["usage_fault"], s
        assert s["cost_source"] == "bound" and s["cost_bound_usd"] > 0
        assert s["cost_usd"] == pytest.approx(s["cost_bound_usd"])
    assert all(math.isfinite(c) and c >= 0 for c in _costs(steps))
    assert 0 < spend.total <= budget


def test_usage_checks_name_what_is_wrong():
    from dvoc_bench.models.pricing import checked_usage, cost_fault

    assert checked_usage(1500, 40) == (1500, 40, None)
    assert checked_usage(1500, None) == (1500, None, None)  # no completion count alone is fine
    for tin, tout, words in [
        (None, None, "no token counts"),
        (0, 0, "no token counts"),  # what LiteLLM makes of a reply without `usage`
        (-5, 40, "prompt_tokens=-5 is negative"),
        (10, -1, "completion_tokens=-1 is negative"),
        (math.nan, 4, "is not finite"),
        (10, math.inf, "is not finite"),
        (10.5, 4, "not a whole number"),
        ("12", 4, "not a number"),
        (0, 40, "prompt_tokens=0"),
    ]:
        got_in, got_out, fault = checked_usage(tin, tout)
        assert (got_in, got_out) == (None, None) and fault and words in fault, (tin, tout, fault)
    assert cost_fault(0.0) is None and cost_fault(1e-6) is None
    assert "negative" in str(cost_fault(-122.49)) and "not finite" in str(cost_fault(math.nan))
