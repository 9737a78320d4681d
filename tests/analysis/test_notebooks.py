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

from tests.support import RUNS

pytestmark = pytest.mark.e2e

nbformat = pytest.importorskip("nbformat", reason="nbformat is in the dev extra: pip install -e '.[dev]'")
nbclient = pytest.importorskip("nbclient", reason="nbclient is in the dev extra: pip install -e '.[dev]'")
pytest.importorskip("ipykernel", reason="ipykernel is in the dev extra: pip install -e '.[dev]'")

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


def _text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            data = out.get("data", {})
            parts.append(data.get("text/plain", ""))
            parts.append(data.get("text/html", ""))
            parts.append(data.get("text/markdown", ""))
    return "\n".join(parts)


CASES = [(nb, run) for run in RUNS for nb in NOTEBOOKS]


@pytest.mark.parametrize(("path", "run_name"), CASES, ids=[f"{p.stem}-{r}" for p, r in CASES])
def test_notebook_runs_on_a_real_run(path, run_name, request, monkeypatch, tmp_path):
    run = request.getfixturevalue(run_name)
    monkeypatch.setenv("DVOC_RUN_DIR", str(run))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this checkout, not an installed copy
    monkeypatch.setenv("DVOC_CALIBRATION_RUNS", str(tmp_path / "calibration"))  # not the repository's runs/
    monkeypatch.setenv("DVOC_VALIDATION_REPEATS", "1")  # the validation sweeps once: the code path
    if run_name != "default_run":
        monkeypatch.setenv("DVOC_UPSTREAM", str(tmp_path / "no-upstream"))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code)
    text = _text(nb)
    assert str(run) in text  # it read the run it was given
    if path.name == "quickstart.ipynb":
        images = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
        assert len(images) >= 4
        assert "[SIMULATED" in text  # the simulated rows say so (with their assumption markers)
        if run_name == "alpha_multirun":  # the settings of the sweep are split, and repeats counted once
            assert "adaptive" in text and "alpha" in text and "270 repeated trials left out" not in text
            assert "150 repeated trials left out" in text
        if run_name == "web_run":
            assert "W1" in text and "dom" in text  # web trials, hit from the DOM


def test_the_kernel_imports_this_checkout(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import dvoc_bench\nprint(dvoc_bench.__file__)")]
    )
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"].strip() == str(ROOT / "dvoc_bench" / "__init__.py")


def test_nbconvert_re_executes_a_notebook_as_the_readme_shows(default_run, tmp_path, monkeypatch):
    pytest.importorskip("nbconvert", reason="nbconvert is in the dev extra: pip install -e '.[dev]'")
    jupyter = Path(sys.executable).parent / "jupyter"
    if not jupyter.exists():
        pytest.skip(f"no jupyter beside {sys.executable}")
    env = {**os.environ, "DVOC_RUN_DIR": str(default_run), "PYTHONPATH": str(ROOT)}
    env["DVOC_UPSTREAM"] = str(tmp_path / "no-upstream")
    p = subprocess.run(
        [str(jupyter), "nbconvert", "--execute", "--to", "notebook", "--output-dir", str(tmp_path)]
        + [str(ROOT / "analysis" / "quickstart.ipynb")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    nb = nbformat.read(tmp_path / "quickstart.ipynb", as_version=4)
    assert all(c.execution_count for c in nb.cells if c.cell_type == "code")
    assert str(default_run) in _text(nb)
