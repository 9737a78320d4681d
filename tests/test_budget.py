"""Before you spend (issue 21): the plan without keys, prices and image tokens, and the cost budget."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from pathlib import Path

import pytest

from dvoc_bench.core.geometry import Size
from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.methods.registry import methods
from dvoc_bench.models.config import ModelConfig, ProviderConfig, default_conf_dir, load_model_config
from dvoc_bench.models.pricing import call_estimate, image_tokens, price_of
from dvoc_bench.runner.budget import Budget, Ticket
from tests.support import need_upstream

PRICED = """\
name: priced-sim
kind: litellm
simulated: true
model_id: openai/sim-gemma-4-26b
provider: local-sim
api_base: ${oc.env:DVOC_SIM_URL,http://127.0.0.1:8765/v1}
coord_frame: norm1000
params: {}
send_seed: true
pricing: {input_per_mtok: 10.0, output_per_mtok: 10.0, per_image: 0.001}
"""
PER_CALL = 1100 * 10 / 1e6 + 40 * 10 / 1e6 + 0.001
"""What one call of the server's sim-gemma-4-26b profile (1100 + 40 placeholder tokens) costs at PRICED."""


def _no_keys() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


@pytest.mark.e2e
def test_plan_only_needs_no_key_calls_nothing_and_writes_nothing(cli, tmp_path):
    run_dir = tmp_path / "plan"
    t0 = time.perf_counter()
    r = cli(
        "run.plan_only=true",
        "experiment=paper_main",
        "models=[gemini-3.1-flash-lite,gemma-4-26b]",
        f"hydra.run.dir={run_dir}",
        env_extra={"GEMINI_API_KEY": ""},
    )
    wall = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "360 trials; nothing run, no model called" in out
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in out.splitlines() if line.startswith("| ")]
    rows = {c[0]: c[1:] for c in cells}
    gem, gemma = rows["gemini-3.1-flash-lite"], rows["gemma-4-26b"]
    # 6 tasks x 2 methods x 5 starts x 3 repeats; upper bound: 90 x 15 (dvoc) + 90 x 5 (oneshot)
    assert gem[:2] == ["180", "1800"] and gemma[:2] == ["180", "1800"]
    # expected from the authors' records: 5.25 dvoc and 4.47 oneshot calls per trial for Gemini
    assert 800 <= int(gem[2]) <= 950
    assert "in the authors' records" in out
    assert gem[3].startswith("$") and gem[4].startswith("$")  # priced by its pricing: block
    assert gemma[3] == "unknown" and gemma[4] == "unknown"  # never shown as $0
    assert "d" in gem[5] or "h" in gem[5]  # 15 rpm, 500 rpd: more than a day
    assert "resume the next day" in out
    assert not run_dir.exists()  # no steps, no plan, not even Hydra's folder
    assert wall < 20  # ~2.6 s on the shared 2-core machine; generous for a loaded CI


def test_image_token_rules_and_price_sources(tmp_path):
    s = Size(800, 600)
    assert image_tokens("gemini", s) == 2 * 258
    assert image_tokens("gemini", Size(300, 200)) == 258
    assert image_tokens("openai", s) == 85 + 170 * 2 * 2  # 800x600 -> 1024x768: 2 x 2 tiles
    assert image_tokens("anthropic", s) == 640
    assert image_tokens("patch28", s) == 29 * 22
    assert image_tokens("none", s) == 0
    models = default_conf_dir() / "model"
    own = price_of(load_model_config("gemini-3.1-flash-lite", models, check_key=False))
    assert own.pricing is not None and own.pricing.input_per_mtok == 0.25 and "pricing: block" in own.source
    lite = price_of(load_model_config("gemini-2.5-flash-lite", models, check_key=False))
    assert lite.pricing is not None and "LiteLLM" in lite.source
    assert lite.pricing.input_per_mtok == pytest.approx(0.1)
    gemma = price_of(load_model_config("gemma-4-26b", models, check_key=False))
    assert gemma.pricing is None and "gemma-4-26b-a4b-it" in gemma.source
    cfg = ModelConfig(name="m", kind="litellm", model_id="openai/x", provider="p", coord_frame="pixel",
                      image={"max_side": 400}, provider_config=ProviderConfig(name="p"))  # fmt: skip
    est = call_estimate(cfg, s)
    assert est.cost_usd is None and "400x300" in est.how  # the sent (downscaled) image is counted


def test_every_method_that_calls_a_model_declares_its_bound():
    for name, info in methods().items():
        if info.calls_model and not name.endswith("_test"):
            assert info.max_calls is not None, name


def test_budget_gate_never_passes_the_budget_under_concurrency():
    rng = random.Random(3)

    async def sweep(limit: float) -> tuple[Budget, int]:
        budget = Budget(limit, spent_usd=0.1)
        sem = asyncio.Semaphore(8)
        ran = 0

        async def one() -> None:
            nonlocal ran
            async with sem:
                per_call = budget.per_call("m", 0.01)  # bound: 0.02 per call
                max_calls = rng.choice([5, 15])
                bound = max_calls * per_call
                if await budget.admit(bound) is not None:
                    return
                ran += 1
                ticket = Ticket(per_call, bound)
                for _ in range(rng.randint(1, max_calls)):  # every call admitted, charged as it ends
                    assert budget.refuse_call(per_call) is None  # calls of admitted trials always fit
                    await asyncio.sleep(rng.random() / 1000)
                    await budget.charge(ticket, rng.uniform(0.005, 0.02), "m")
                    assert budget.spent <= limit + 1e-12
                await budget.release(ticket)

        await asyncio.gather(*(one() for _ in range(200)))
        return budget, ran

    budget, ran = asyncio.run(sweep(2.0))
    assert budget.spent <= 2.0
    assert ran > 0 and budget.skipped > 0 and ran + budget.skipped == 200
    assert budget.reserved == pytest.approx(0.0)
    assert budget.spent > 2.0 - 15 * 0.02 - 1e-9  # it stopped only when a dearest trial could not fit


@pytest.mark.e2e
def test_a_budget_refuses_a_model_without_a_price(cli, tmp_path):
    r = cli("model=local-sim", "smoke=true", "run.max_cost_usd=1", f"hydra.run.dir={tmp_path / 'r'}")
    assert r.returncode == 2
    assert "run.max_cost_usd: the cost of model local-sim is unknown" in r.stderr


def _spent(run_dir: Path) -> float:
    return sum(s["cost_usd"] or 0.0 for s in read_jsonl(run_dir / "steps.jsonl"))


@pytest.mark.e2e
def test_budget_stops_the_sweep_and_a_resume_with_more_completes_it(cli, sim_url, tmp_path):
    models = tmp_path / "model"
    models.mkdir()
    (models / "priced-sim.yaml").write_text(PRICED, encoding="utf-8")
    run_dir = tmp_path / "run"
    args = ["models=[priced-sim]", f"paths.models={models}", "smoke=true", "methods=[dvoc,oneshot]",
            "cache.enabled=false", "run.quiet=true", f"hydra.run.dir={run_dir}"]  # fmt: skip
    env = {"DVOC_SIM_URL": sim_url[0]}
    r = cli(*args, "run.max_cost_usd=0.5", env_extra=env)
    assert r.returncode == 0, r.stderr
    trials = list(read_jsonl(run_dir / "trials.jsonl"))
    held = [t for t in trials if t["status"] == "skipped"]
    assert len(trials) == 8 and held and len(held) < 8
    assert all(t["error_class"] == "budget" and "run.max_cost_usd=0.5" in t["error"] for t in held)
    steps = list(read_jsonl(run_dir / "steps.jsonl"))
    assert steps and all(s["cost_source"] == "pricing" for s in steps)
    assert all(s["cost_usd"] == pytest.approx(PER_CALL) for s in steps)
    spent = _spent(run_dir)
    assert 0 < spent <= 0.5
    m = re.search(r"cost: \$([0-9.]+) spent of the \$0\.5000 budget", r.stdout)
    assert m and float(m.group(1)) == pytest.approx(spent, abs=1e-4), r.stdout
    assert f"{len(held)} trials skipped for the budget" in r.stdout

    # run.* may change on resume: a higher budget runs the held trials, and only them
    r2 = cli(*args, "run.max_cost_usd=5", env_extra=env)
    assert r2.returncode == 0, r2.stderr
    done = list(read_jsonl(run_dir / "trials.jsonl"))
    assert len(done) == 8 and all(t["status"] == "ok" for t in done)
    assert f"{len(held)} run by this call" in r2.stdout
    assert spent < _spent(run_dir) <= 5
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["finished"] == 8


def test_the_shipped_call_table_is_the_authors_records():
    upstream = need_upstream()  # a skip without the records, a failure when CI requires them
    from dvoc_bench.benchmarks.recorded_calls import TABLE, recorded_calls

    assert recorded_calls(upstream) == json.loads(TABLE.read_text(encoding="utf-8"))
