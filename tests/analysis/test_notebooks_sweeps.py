"""Every notebook in ``analysis/`` runs top to bottom on the session's web run and alpha multirun (the
default and one-trial runs: test_notebooks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import import_or_need, run_notebook

pytestmark = pytest.mark.e2e

import_or_need("JUPYTER", "nbclient", "the dev extra: pip install -e '.[dev]'", at_module_level=True)
import_or_need("JUPYTER", "ipykernel", "the dev extra: pip install -e '.[dev]'", at_module_level=True)

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "analysis").glob("*.ipynb"))
CASES = [(nb, run) for run in ("web_run", "alpha_multirun") for nb in NOTEBOOKS]


@pytest.mark.parametrize(("path", "run_name"), CASES, ids=[f"{p.stem}-{r}" for p, r in CASES])
def test_notebook_runs_on_a_real_run(path, run_name, request, monkeypatch, tmp_path):
    run_notebook(path, run_name, request, monkeypatch, tmp_path)
