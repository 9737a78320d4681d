"""Real runs, built once per test session, for the report, notebook and README tests.

Each is made the way a researcher makes it, ``python -m dvoc_bench ...`` in a subprocess from the
repository root, into a session temporary folder (``hydra.run.dir`` / ``hydra.sweep.dir``):

- ``default_run``: the default command as it is (``experiment=quick``: 270 trials, four simulated models);
- ``web_run``: the same on the web pages W1 and W2 (needs a Chromium; skipped with the reason without);
- ``alpha_multirun``: ``-m alphas=[decay],[adaptive]`` as the README shows it (two jobs of 270 trials);
- ``one_trial_run``: a single trial (one model, one task, one method, one start point).

``RUNS`` names them for ``request.getfixturevalue``. conftest.py imports the fixtures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("default_run", "web_run", "alpha_multirun", "one_trial_run")


def dvoc(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m dvoc_bench *args`` from the repository root (the package of this checkout)."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "dvoc_bench", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _trials(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines() if x.strip()]


def make_run(out: Path, *overrides: str) -> Path:
    p = dvoc(*overrides, f"hydra.run.dir={out}", "run.quiet=true")
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"run dir: {out}" in p.stdout
    return out


@pytest.fixture(scope="session")
def default_run(tmp_path_factory) -> Path:
    run = make_run(tmp_path_factory.mktemp("runs") / "default")
    assert len(_trials(run)) == 270  # 4 models x 6 scenes x {dvoc, oneshot} x 5 starts + centre x 6 x 5
    return run


def chromium_or_skip() -> None:
    from dvoc_bench.scenes.web.chromium import ChromiumNotFoundError, find_chromium

    try:
        find_chromium()
    except ChromiumNotFoundError as e:
        pytest.skip(f"the web run needs a Chromium: {e}")


@pytest.fixture(scope="session")
def web_run(tmp_path_factory) -> Path:
    chromium_or_skip()
    run = make_run(tmp_path_factory.mktemp("runs") / "web", "tasks=[W1,W2]")
    trials = _trials(run)
    assert len(trials) == 90 and {t["task"] for t in trials} == {"W1", "W2"}
    assert all(t.get("hit_rule") == "dom" for t in trials if t["status"] == "ok")
    return run


@pytest.fixture(scope="session")
def alpha_multirun(tmp_path_factory) -> Path:
    sweep = tmp_path_factory.mktemp("runs") / "alpha_sweep"
    p = dvoc("-m", "alphas=[decay],[adaptive]", f"hydra.sweep.dir={sweep}", "run.quiet=true")
    assert p.returncode == 0, p.stderr[-3000:]
    jobs = sorted(d for d in sweep.iterdir() if (d / "trials.jsonl").is_file())
    assert [j.name for j in jobs] == ["0", "1"] and all(len(_trials(j)) == 270 for j in jobs)
    return sweep


@pytest.fixture(scope="session")
def one_trial_run(tmp_path_factory) -> Path:
    run = make_run(
        tmp_path_factory.mktemp("runs") / "one",
        "model=sim-gemma-4-26b",
        "task=S3",
        "methods=[dvoc]",
        "starts=random:1",
    )
    assert len(_trials(run)) == 1
    return run
