"""Report CLI::

    python -m dvoc_bench.report RUN_DIR... [--upstream PATH ...] [--rule hit|within_eps|hit_radius]
                                [--out DIR] [--import FILE ...] [--export FILE.{parquet,jsonl}]

Builds every table and figure from the records only (:mod:`dvoc_bench.analysis.report`): for our runs, the
tables under one explicit rule with Wilson / bootstrap intervals, the authors' rule for comparison,
per-task and ablation tables, paired comparisons on the same start points, the coordinate-frame audit, the
cost per successful click and the figures; for the authors' records (``--upstream``: their repository's
clone, its ``artifacts/previous_runs`` folder, the per-trial tree or any of their JSON files), the paper's
tables with every published number checked, the same records re-scored under one rule, and the frame
audit. Prints the markdown and writes ``report.md`` plus ``figures/*.png`` to ``--out``, replacing the
figures of a previous report there (default: ``<RUN_DIR>/report`` for one run; for several, a new folder
beside the first named after them, ``report-<a>+<b>``; ``runs/report`` with only ``--upstream``).

``--export FILE`` also writes the runs' per-trial export (``.parquet`` or ``.jsonl``, the schema of
:mod:`dvoc_bench.analysis.export`); ``--import FILE`` adds the trials of such a file (ours, or another
harness's predictions in that schema, or with ``--format sspro|omniparser|zoom`` another harness's own log,
scored by this project's rules; docs/imports.md) to the report; ``--leaderboard FILE.json`` writes the
ScreenSpot-Pro results schema of the dataset trials.

pandas and matplotlib are imported only once the arguments are parsed.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from dvoc_bench.core.rundir import REPORT
from dvoc_bench.core.scoring import RULES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m dvoc_bench.report",
        description="Tables (markdown) and figures (PNG) from run directories and/or the DVOC authors' "
        "records.",
    )
    p.add_argument(
        "runs", nargs="*", metavar="RUN_DIR", help="run directories, multirun sweeps or runs/ trees"
    )
    p.add_argument(
        "--upstream",
        nargs="+",
        action="extend",
        default=[],
        metavar="PATH",
        help="the authors' records: their repository's clone, artifacts/previous_runs, the per-trial tree, "
        "or a JSON file",
    )
    p.add_argument(
        "--rule", choices=RULES, default="hit", help="success rule of the honest tables (default: hit)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"output folder for report.md and figures/ (default: RUN_DIR/{REPORT} for one run; for several, "
        "report-<a>+<b> beside the first)",
    )
    p.add_argument(
        "--import",
        dest="imports",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE",
        help="per-trial export files (.parquet / .jsonl) to report on, ours or another harness's",
    )
    p.add_argument(
        "--format",
        default="v1",
        help="format of the --import files: v1 (the export schema, "
        "default), sspro (the ScreenSpot-Pro evaluator's log), omniparser, zoom (docs/imports.md), inspect "
        "(an Inspect .eval log of dvoc_bench's tasks, also read as such by its suffix; docs/inspect.md)",
    )
    p.add_argument(
        "--annotations",
        default=None,
        metavar="DIR",
        help="ScreenSpot-Pro annotation files the imported rows join (sample ids, image sizes)",
    )
    p.add_argument(
        "--reread",
        default=None,
        metavar="MODEL",
        help="read each imported raw reply again as this model config's sweep would",
    )
    p.add_argument(
        "--leaderboard",
        type=Path,
        default=None,
        metavar="FILE.json",
        help="also write the ScreenSpot-Pro results schema of the dataset trials",
    )
    p.add_argument(
        "--export",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the per-trial export (FILE.parquet or FILE.jsonl)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--no-figures", action="store_true", help="tables only")
    args = p.parse_args(argv)
    if not args.runs and not args.upstream and not args.imports:
        p.error("give at least one RUN_DIR, --import FILE or --upstream PATH")
    if args.export is not None and (args.upstream or not (args.runs or args.imports)):
        p.error("--export writes our runs' trials: give RUN_DIR (or --import FILE), not --upstream")
    return args


def import_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of the ``--import`` files (``--format``, ``--annotations``, ``--reread``)."""
    opts: dict[str, Any] = {"fmt": args.format, "annotations": args.annotations}
    if args.reread:
        from dvoc_bench.runner.reread import reply_reader

        opts["reader"], line = reply_reader(args.reread)
        opts["model"] = args.reread
        print(f"re-reading replies as {line}", file=sys.stderr)
    return opts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)  # before any pandas import: --help and bad flags stay light
    from dvoc_bench.analysis.export import SchemaError
    from dvoc_bench.analysis.honest import PoolingError
    from dvoc_bench.analysis.loaders import DuplicateTrials
    from dvoc_bench.analysis.report import build_report, export_runs, load_all
    from dvoc_bench.core.declare import ConfigError

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        opts = import_options(args)
        if args.export is not None:  # the export first: a file that cannot be written stops before the report
            print(export_runs(args.runs, args.imports, args.export, opts), file=sys.stderr)
        text, path = build_report(
            args.runs,
            args.upstream,
            args.rule,
            args.out,
            seed=args.seed,
            n_boot=args.n_boot,
            figures=not args.no_figures,
            imports=args.imports,
            import_opts=opts,
        )
        if args.leaderboard is not None:
            from dvoc_bench.analysis.leaderboard import write_leaderboard

            runs = load_all(args.runs, args.imports, opts)
            print(write_leaderboard(runs, args.leaderboard), file=sys.stderr)
    except (FileNotFoundError, DuplicateTrials, SchemaError, PoolingError) as e:
        # a wrong path, a doubled run, a bad file, two runs that disagree on one trial key
        print(f"report: {e}", file=sys.stderr)
        return 2
    except ConfigError as e:  # --reread: an unknown or bad model config
        print(f"config error: {e}", file=sys.stderr)
        return 2
    print(text)
    print(f"report written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
