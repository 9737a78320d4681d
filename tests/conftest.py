"""Fixtures every test module may use; the helpers behind them live in :mod:`tests.support`."""

import os
from collections import Counter
from pathlib import Path

import pytest

# session-scoped real runs (default, web, alpha multirun, one trial) for the report / notebook / README tests
from tests.support import (  # noqa: F401
    DEPENDENCIES,
    UPSTREAM,
    alpha_multirun,
    ci_dependency_in,
    default_run,
    in_ci,
    one_trial_run,
    run_cli,
    served_simulator,
    web_run,
)

os.environ.setdefault("DVOC_UPSTREAM", str(UPSTREAM))  # the records for the commands and notebooks tests run


@pytest.fixture
def cli():
    return run_cli


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
    from tests.support import need_upstream

    return need_upstream()


# ------------------------------------------------------------- in CI, a skip for a dependency CI has fails


def _skip_reason(rep) -> str:
    lr = rep.longrepr
    return str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else str(lr)


def _fail_ci_skip(rep) -> None:
    """Under ``CI=true``, a skip whose reason names a dependency CI is meant to have
    (:func:`tests.support.ci_dependency_in`) is turned into a failure: a missing ``DVOC_REQUIRE_*`` switch
    or a new skip that bypasses :func:`tests.support.need` cannot hide a test in CI."""
    if not rep.skipped or hasattr(rep, "wasxfail") or not in_ci():
        return
    reason = _skip_reason(rep)
    name = ci_dependency_in(reason)
    if name is None:
        return
    rep.outcome = "failed"
    rep.longrepr = (
        f"skipped in CI (CI=true), which provides {DEPENDENCIES[name].what} (DVOC_REQUIRE_{name}): {reason}"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_ci_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_ci_skip(outcome.get_result())
