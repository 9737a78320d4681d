import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """Run ``python -m dvoc_bench`` with overrides from the repo root."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
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
