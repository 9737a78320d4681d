"""``python -m dvoc_bench.bench help``: the wall time of ``python -m dvoc_bench --help``, as a user waits
for it (a fresh interpreter each time: imports, the page built from ``conf/`` and ``scenes/``, printed).

Each run is a subprocess started from a temporary folder with this checkout on ``PYTHONPATH``; the
median of ``--runs`` runs is reported (target: < 1 s at a 1-minute load < 2). ``--hydra`` also times the
page rendered by Hydra (an override of ``hydra.help`` takes that path: the config composed, the groups
listed through Hydra's config repository), for comparison. Last line:
``median_s=<m> min_s=<a> max_s=<b> runs=<n> [hydra_median_s=<h>] cores=<c> load=<1-min load average>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]


def time_help(runs: int, extra: Sequence[str] = ()) -> list[float]:
    """Wall seconds of ``runs`` fresh ``python -m dvoc_bench --help`` processes (each must exit 0)."""
    env = {**os.environ, "PYTHONPATH": str(_ROOT)}
    out = []
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(runs):
            t0 = time.perf_counter()
            p = subprocess.run(
                [sys.executable, "-m", "dvoc_bench", "--help", *extra],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            out.append(time.perf_counter() - t0)
            if p.returncode != 0 or not p.stdout.startswith("dvoc-bench:"):
                raise RuntimeError(f"--help failed (exit {p.returncode}): {p.stderr.strip()[-500:]}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dvoc_bench.bench help", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--runs", type=int, default=7, help="fresh processes to time (the median is reported)")
    ap.add_argument("--hydra", action="store_true", help="also time the page rendered by Hydra")
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    times = time_help(max(1, args.runs))
    fields = {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "runs": len(times),
    }
    if args.hydra:
        fields["hydra_median_s"] = statistics.median(
            time_help(max(1, args.runs // 2), ["hydra.help.app_name=dvoc-bench"])
        )
    fields |= {"cores": os.cpu_count() or 0, "load": load}
    print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in fields.items()))
    return 0
