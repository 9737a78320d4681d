import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.fixture(scope="module")
def sim_url():
    """The simulator behind a real OpenAI-compatible server on localhost; DVOC_SIM_URL points at it."""
    from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
    from dvoc_bench.serve import SimBackend, serve_in_thread

    backend = SimBackend(
        registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
    )
    backend.warm()
    old = os.environ.get("DVOC_SIM_URL")
    with serve_in_thread(backend=backend) as (url, server):
        os.environ["DVOC_SIM_URL"] = url
        yield url, server
    if old is None:
        os.environ.pop("DVOC_SIM_URL", None)
    else:
        os.environ["DVOC_SIM_URL"] = old


@pytest.fixture(scope="module")
def slow_sim():
    """The simulator over HTTP with 0.1 s per reply (a sweep takes a few seconds); yields its URL."""
    from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
    from dvoc_bench.serve import FaultOptions, SimBackend, serve_in_thread

    backend = SimBackend(
        registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
    )
    backend.warm()
    with serve_in_thread(FaultOptions(delay_s=0.1), backend) as (url, server):
        yield url


@pytest.fixture
def upstream() -> Path:
    """The authors' records folder; skips without it (fails under ``DVOC_REQUIRE_UPSTREAM=1``)."""
    from tests.upstream import need_upstream

    return need_upstream()
