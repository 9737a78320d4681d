import contextlib
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

# session-scoped real runs (default, web, alpha multirun, one trial) for the report / notebook / README tests
from tests.real_runs import alpha_multirun, default_run, one_trial_run, web_run  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


def run_cli(
    *args: str, timeout: float = 120, env_extra: dict[str, str] | None = None, **kw
) -> subprocess.CompletedProcess:
    """Run ``python -m dvoc_bench`` with overrides from the repo root."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "dvoc_bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kw,
    )


@pytest.fixture
def cli():
    return run_cli


@contextlib.contextmanager
def served_simulator(*, warm: bool = True, delay_s: float = 0.0, set_env: bool = True):
    """``dvoc_bench.serve`` on localhost over the synthetic scenes (rendered first when ``warm``; the OCR
    model needs none), each reply ``delay_s`` late; ``DVOC_SIM_URL`` points at it while it runs (when
    ``set_env``). Yields ``(url, server)``."""
    from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
    from dvoc_bench.serve import FaultOptions, SimBackend, serve_in_thread

    backend = SimBackend(
        registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
    )
    if warm:
        backend.warm()
    faults = FaultOptions(delay_s=delay_s) if delay_s else None
    old = os.environ.get("DVOC_SIM_URL")
    with serve_in_thread(faults, backend) as (url, server):
        if set_env:
            os.environ["DVOC_SIM_URL"] = url
        try:
            yield url, server
        finally:
            if set_env and old is None:
                os.environ.pop("DVOC_SIM_URL", None)
            elif set_env:
                os.environ["DVOC_SIM_URL"] = old


@pytest.fixture(scope="module")
def sim_url():
    """The simulator behind a real OpenAI-compatible server on localhost; DVOC_SIM_URL points at it."""
    with served_simulator() as served:
        yield served


@pytest.fixture(scope="module")
def slow_sim():
    """The simulator over HTTP with 0.1 s per reply (a sweep takes a few seconds); yields its URL."""
    with served_simulator(delay_s=0.1, set_env=False) as (url, _):
        yield url


def pytest_terminal_summary(terminalreporter):
    """How many README commands ran and were skipped (tests/test_readme.py), by reason."""
    stats = terminalreporter.stats

    def mine(kind):
        return [r for r in stats.get(kind, []) if "test_readme_command_runs" in getattr(r, "nodeid", "")]

    ran, skipped, failed = mine("passed"), mine("skipped"), mine("failed")
    if not (ran or skipped or failed):
        return
    reasons = Counter()
    for r in skipped:
        reason = r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
        reasons[reason.removeprefix("Skipped: ").split(" —")[0]] += 1
    why = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
    terminalreporter.write_line(
        f"README commands: {len(ran)} ran, {len(skipped)} skipped ({why or 'none'}), {len(failed)} failed"
    )


@pytest.fixture
def upstream() -> Path:
    """The authors' records folder; skips without it (fails under ``DVOC_REQUIRE_UPSTREAM=1``)."""
    from tests.upstream import need_upstream

    return need_upstream()
