"""``dvoc_bench.analysis`` only reads records, transitively: importing every analysis module in a fresh
interpreter loads none of the harness (runner, models, methods) nor the calibration. The direct rule (each
import of an analysis module) is part of the floor test, :mod:`tests.test_layers`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import HANG_S

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS = ROOT / "dvoc_bench" / "analysis"
FORBIDDEN = ("dvoc_bench.runner", "dvoc_bench.models", "dvoc_bench.methods", "dvoc_bench.calibration",
             "dvoc_bench.calibrate", "dvoc_bench.app")  # fmt: skip


def test_importing_analysis_loads_no_harness() -> None:
    mods = ", ".join(repr(f"dvoc_bench.analysis.{p.stem}") for p in sorted(ANALYSIS.glob("*.py")))
    code = (
        f"import importlib, sys\nfor m in [{mods}]:\n"
        "    importlib.import_module(m.removesuffix('.__init__'))\n"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert p.returncode == 0, p.stderr[-2000:]
    loaded = [m for m in p.stdout.split() if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert not loaded, f"importing dvoc_bench.analysis loads {loaded}"
