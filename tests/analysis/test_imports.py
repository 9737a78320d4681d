"""DESIGN §2 / §11: ``dvoc_bench.analysis`` only reads records. It never imports the harness (sweep, store,
scheduler, models, methods, the sweep's config glue) nor the calibration, which drives the simulator and
runs sweeps (``dvoc_bench.calibration`` imports analysis, not the other way round).

Allowed from the rest of the package: ``records``, ``geometry``, ``scoring``, ``control`` (pure math, to
replay the authors' loop), ``scenes`` (scene truth and images) and ``render``/``config`` through them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS = ROOT / "dvoc_bench" / "analysis"
FORBIDDEN = (
    "dvoc_bench.runner.sweep",
    "dvoc_bench.runner.store",
    "dvoc_bench.runner.scheduler",
    "dvoc_bench.models",
    "dvoc_bench.methods",
    "dvoc_bench.runner.compose",
    "dvoc_bench.calibration",
    "dvoc_bench.calibrate",
)
MODULES = sorted(ANALYSIS.glob("*.py"))


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def imported_names(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, anywhere in the file (top level, functions, ``if TYPE_CHECKING``),
    relative imports resolved; ``from pkg import name`` also yields ``pkg.name`` (it may be a module)."""
    package = "dvoc_bench.analysis"
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return out


def test_the_rule_sees_imports_inside_functions_and_relative_ones(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f():\n    from dvoc_bench.runner.sweep import run_sweep\n"
        "from .. import models\nimport dvoc_bench.runner.store as s\nfrom dvoc_bench import methods\n"
    )
    bad = {n for _, n in imported_names(probe) if _forbidden(n)}
    assert bad == {
        "dvoc_bench.runner.sweep",
        "dvoc_bench.runner.sweep.run_sweep",
        "dvoc_bench.models",
        "dvoc_bench.runner.store",
        "dvoc_bench.methods",
    }


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_analysis_module_imports_no_harness(path: Path) -> None:
    bad = [f"line {line}: {name}" for line, name in imported_names(path) if _forbidden(name)]
    assert not bad, f"dvoc_bench/analysis/{path.name} imports {', '.join(bad)} (analysis only reads records)"


def test_importing_analysis_loads_no_harness() -> None:
    """The same rule transitively, at import time: every analysis module imported in a fresh interpreter."""
    mods = ", ".join(repr(f"dvoc_bench.analysis.{p.stem}") for p in MODULES if p.stem != "__init__")
    code = (
        f"import importlib, sys\nfor m in [{mods}]:\n    importlib.import_module(m)\n"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    loaded = [m for m in p.stdout.split() if _forbidden(m)]
    assert not loaded, f"importing dvoc_bench.analysis loads {loaded}"
