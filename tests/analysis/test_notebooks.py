"""Every notebook in ``analysis/`` runs top to bottom (nbclient) against real runs of the session: the
full default run, a web run, an alpha multirun and a one-trial run (``tests/support.py``).

The notebooks take the run directory from ``DVOC_RUN_DIR`` and the authors' records from ``DVOC_UPSTREAM``
(:data:`tests.support.UPSTREAM`): only the default run is paired with the records (when present); the
other runs are executed with ``DVOC_UPSTREAM`` pointing nowhere, so the upstream parts are skipped there.
The kernel imports this checkout (``PYTHONPATH``). The notebooks are stored without outputs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import import_or_need, need, notebook_text, run_notebook

pytestmark = pytest.mark.e2e

DEV = "the dev extra: pip install -e '.[dev]'"
nbformat = import_or_need("JUPYTER", "nbformat", DEV, at_module_level=True)
nbclient = import_or_need("JUPYTER", "nbclient", DEV, at_module_level=True)
import_or_need("JUPYTER", "ipykernel", DEV, at_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "analysis").glob("*.ipynb"))


def test_the_notebooks_are_there_and_stored_without_outputs():
    names = {p.name for p in NOTEBOOKS}
    assert {
        "quickstart.ipynb",
        "paper_tables.ipynb",
        "ablations.ipynb",
        "coordinate_frames.ipynb",
        "trajectories.ipynb",
    } <= names
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path.name}: outputs not stripped"
                assert "import dvoc_bench.methods" not in cell.source  # notebooks only call the analysis API


CASES = [(nb, run) for run in ("default_run", "one_trial_run") for nb in NOTEBOOKS]
"""The default and the one-trial run here; the web run and the multirun in test_notebooks_sweeps.py (two
files: the test workers share them)."""


@pytest.mark.parametrize(("path", "run_name"), CASES, ids=[f"{p.stem}-{r}" for p, r in CASES])
def test_notebook_runs_on_a_real_run(path, run_name, request, monkeypatch, tmp_path):
    run_notebook(path, run_name, request, monkeypatch, tmp_path)


def test_the_kernel_imports_this_checkout(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import dvoc_bench\nprint(dvoc_bench.__file__)")]
    )
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"].strip() == str(ROOT / "dvoc_bench" / "__init__.py")


DOC = ROOT / "docs" / "analysis.md"


def documented_nbconvert() -> str:
    """The documentation's nbconvert command, as written (docs/analysis.md; analysis/README.md repeats it)."""
    lines = [
        ln.strip()
        for ln in DOC.read_text(encoding="utf-8").splitlines()
        if "jupyter nbconvert --execute" in ln
    ]
    assert len(lines) == 1, lines
    assert lines[0] in (ROOT / "analysis" / "README.md").read_text(encoding="utf-8")
    return lines[0]


def test_nbconvert_re_executes_a_notebook_as_the_docs_show(default_run, tmp_path):
    """The documented command verbatim (only ``<time>`` filled in), typed in a checkout's root: the kernel
    runs in ``analysis/``, the relative ``DVOC_RUN_DIR`` is read from where the command was typed."""
    import_or_need("JUPYTER", "nbconvert", DEV)
    bin_dir = Path(sys.executable).parent
    need("JUPYTER", None if (bin_dir / "jupyter").exists() else f"no jupyter beside {sys.executable}")
    command = documented_nbconvert()
    assert command.startswith("DVOC_RUN_DIR=runs/quick/<time> jupyter nbconvert") and "--inplace" in command
    checkout = tmp_path / "checkout"  # --inplace rewrites the notebook: a copy, not the repository's
    (checkout / "analysis").mkdir(parents=True)
    for nb in NOTEBOOKS:
        (checkout / "analysis" / nb.name).write_bytes(nb.read_bytes())
    (checkout / "runs" / "quick").mkdir(parents=True)
    (checkout / "runs" / "quick" / "2026-01-01_00-00-00").symlink_to(default_run, target_is_directory=True)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
    }
    env["DVOC_UPSTREAM"] = str(tmp_path / "no-upstream")
    env.pop("DVOC_RUN_DIR", None)
    env.pop("PWD", None)  # the shell sets it to where the command is typed, as a user's does
    p = subprocess.run(["bash", "-c", command.replace("<time>", "2026-01-01_00-00-00")], cwd=checkout,
                       capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    nb = nbformat.read(checkout / "analysis" / "quickstart.ipynb", as_version=4)
    assert all(c.execution_count for c in nb.cells if c.cell_type == "code")
    assert str(checkout / "runs" / "quick" / "2026-01-01_00-00-00") in notebook_text(nb)
