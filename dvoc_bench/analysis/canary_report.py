"""The report's canary section: what ``experiment=canary`` found (``canary.json`` in a run directory,
written by :mod:`dvoc_bench.runner.canary`): per model config, whether its answers on the fixed scenes stayed
within the stated tolerance of the stored ones, and every drift."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from dvoc_bench.analysis.markdown import md_table
from dvoc_bench.core.jsonread import load_file

Block = tuple[Any, ...]


def blocks(run_dirs: Iterable[str | Path]) -> list[Block]:
    """The section (nothing when no run directory holds a canary result)."""
    found = [(Path(d), Path(d) / "canary.json") for d in run_dirs]
    found = [(d, p) for d, p in found if p.is_file()]
    if not found:
        return []
    out: list[Block] = [("h", 3, "Canary: the serving stack against the stored answers")]
    out += [("p", "Unit: trial of `experiment=canary` (fixed bundled scenes, one-shot). A drift: a changed "
                  "verdict (`hit`), a point that appeared or vanished, or a final point more than the "
                  "stated tolerance from the stored one (`conf/canary/<model>.json`).")]  # fmt: skip
    rows, drifts = [], []
    for d, path in found:
        for r in load_file(path):
            model = r["model"] + (" [SIMULATED]" if r.get("simulated") else "")
            rows.append({"run": d.name, "model": model, "status": r["status"].upper() if r["status"] ==
                         "drift" else r["status"], "compared": r["compared"], "drifts": len(r["drifts"]),
                         "tolerance_px": r["tolerance_px"]})  # fmt: skip
            drifts += [{"run": d.name, "model": r["model"], **x} for x in r["drifts"]]
    out += [("table", md_table(pd.DataFrame(rows)))]
    if drifts:
        out += [("p", f"**WARNING: {len(drifts)} canary answers drifted**: this run's numbers are not "
                      "comparable with those of the stored run until the cause (engine, version, "
                      "quantisation, processor) is known:")]  # fmt: skip
        view = pd.DataFrame(drifts).astype({"expected": str, "got": str})
        out += [("table", md_table(view))]
    return out
