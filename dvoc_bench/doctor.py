"""``python -m dvoc_bench.doctor RUN_DIR [--repair]``: check a run directory, optionally repair it.

Read-only by default: prints the report of :func:`dvoc_bench.runner.doctor.diagnose` (what is checked is
listed there), exit 0 when clean, 1 when problems were found, 2 for a folder that is missing or holds
no run record (not a run). ``--repair`` runs
:func:`dvoc_bench.runner.doctor.repair`: under the run directory's lock (exit 2 when another process holds
it) it moves what is bad aside, into ``<run_dir>/doctor/<time>/``, never deleting anything; its exit code
is that of a check after it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dvoc_bench.core.rundir import DOCTOR, TRIALS
from dvoc_bench.runner.doctor import diagnose, repair
from dvoc_bench.runner.store import RunDirBusy

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m dvoc_bench.doctor",
        description="Check a run directory (read-only); --repair moves bad lines and files aside.",
    )
    p.add_argument("run_dir", type=Path, help=f"the run directory (holds {TRIALS})")
    p.add_argument(
        "--repair",
        action="store_true",
        help="move torn and duplicate lines, orphan steps, corrupt frames and stray .tmp files into "
        f"<run_dir>/{DOCTOR}/<time>/ (never deletes; keeps the first record of each key)",
    )
    args = p.parse_args(argv)
    try:
        report = repair(args.run_dir) if args.repair else diagnose(args.run_dir)
    except FileNotFoundError as e:
        print(f"doctor: {e}", file=sys.stderr)
        return 2
    except RunDirBusy as e:
        print(f"doctor: cannot repair: {e}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 0 if report.clean else 1


if __name__ == "__main__":
    sys.exit(main())
