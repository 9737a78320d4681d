"""Scheduler faults through a real transport: LiteLLM -> HTTP -> ``dvoc_bench.serve`` on localhost.

Each test starts the simulator server with one kind of fault and runs a small sweep of the ``local-sim``
model; every planned trial must end as ok, error or skipped with the documented cause.
"""

import os

import pytest

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.models.factory import build_model
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.settings import load_settings
from dvoc_bench.runner.setup import model_options
from dvoc_bench.runner.sweep import plan, run_sweep
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import FaultOptions, SimBackend, serve_in_thread

FAST = [
    "retry.default_wait_s=0.2",
    "retry.backoff_base_s=0.01",
    "retry.backoff_max_s=0.05",
    "cache.enabled=false",
    "run.quiet=true",
]


@pytest.fixture(scope="module")
def backend():
    b = SimBackend(registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"])))
    b.warm()
    return b


def sweep(tmp_path, backend, faults, *overrides):
    with serve_in_thread(faults=faults, backend=backend) as (url, server):
        old = os.environ.get("DVOC_SIM_URL")
        os.environ["DVOC_SIM_URL"] = url
        try:
            setup = quick_setup(["model=local-sim", *FAST, *overrides])
            from dvoc_bench.runner.compose import compose

            kw = model_options(load_settings(compose(["model=local-sim", *FAST, *overrides])[0]))
            specs = plan(setup)
            run_sweep(setup, tmp_path, lambda m, gate: build_model(m, setup.registry.truth, wrap=gate, **kw))
        finally:
            if old is None:
                os.environ.pop("DVOC_SIM_URL", None)
            else:
                os.environ["DVOC_SIM_URL"] = old
        counts = dict(server.faults.counts)
    trials = list(read_jsonl(tmp_path / "trials.jsonl"))
    steps = list(read_jsonl(tmp_path / "steps.jsonl"))
    assert len(trials) == len(specs)  # planned = ok + error + skipped
    assert {t["status"] for t in trials} <= {"ok", "error", "skipped"}
    return trials, steps, counts


@pytest.mark.e2e
def test_429_bursts_with_retry_after_are_waited_out(tmp_path, backend):
    trials, steps, counts = sweep(
        tmp_path,
        backend,
        FaultOptions(rpm=3, rate_window_s=1.0),
        "methods=[oneshot]",
        "tasks=[S1,S2]",
        "run.max_in_flight=10",
    )
    assert counts["429"] > 0
    assert all(t["status"] == "ok" for t in trials)
    assert sum(s["attempts"] - 1 for s in steps) == counts["429"]
    assert all(set(s["attempt_errors"]) <= {"rate_limit"} for s in steps)


def test_500s_back_off_and_final_failures_are_errors(tmp_path, backend):
    trials, steps, counts = sweep(
        tmp_path,
        backend,
        FaultOptions(error_rate=0.5, seed=3),
        "methods=[oneshot]",
        "tasks=[S1,S2,S3]",
        "retry.transient_retries=1",
    )
    assert counts["500"] > 0
    errors = [t for t in trials if t["status"] == "error"]
    assert errors and all(t["error_class"] == "server" for t in errors)
    assert any(t["status"] == "ok" for t in trials)
    assert sum(len(s["attempt_errors"]) for s in steps) == counts["500"]


def test_replies_slower_than_the_timeout_are_timeouts(tmp_path, backend):
    trials, steps, _ = sweep(
        tmp_path,
        backend,
        FaultOptions(delay_s=3.0),
        "methods=[oneshot]",
        "tasks=[S1]",
        "starts=random:2",
        "+scheduler.providers.local-sim.timeout_s=0.5",
        "retry.transient_retries=1",
    )
    assert [t["error_class"] for t in trials] == ["timeout", "timeout"]
    assert all(s["attempt_errors"] == ["timeout", "timeout"] for s in steps)


def test_auth_failure_ends_the_provider_and_skips_the_rest(tmp_path, backend):
    trials, steps, counts = sweep(
        tmp_path,
        backend,
        FaultOptions(auth_fail=True),
        "methods=[dvoc]",
        "tasks=[S1,S2]",
        "run.max_in_flight=2",
    )
    assert {t["status"] for t in trials} == {"skipped"}  # the provider died: nothing of it finished
    assert all(t["error_class"] == "auth" for t in trials)
    assert counts["401"] <= 2  # no request after the provider died, no retry of a 401
    assert all("auth" in (t["error"] or "") or "401" in (t["error"] or "") or t["error"] for t in trials)
