"""``python -m dvoc_bench.merge SHARD_DIR... --out RUN_DIR``: bring the shards of a sweep (``run.shard=I/N``)
together into one run directory (:mod:`dvoc_bench.runner.merge`; docs/cli.md).

A ``SHARD_DIR`` is a shard's run directory or a folder above several (a multirun sweep dir). Exit codes: 0
merged, every planned trial present and finished; 1 merged, partially (said); 2 refused (one line naming
the input: other settings, a shard a running process holds, an ordinary run as ``--out`` without
``--into-run``, ...), nothing written; 4 the disk of the output is full (one line naming it; merging again
after freeing space completes the merge).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.redaction import redact
from dvoc_bench.runner.merge import merge_runs
from dvoc_bench.runner.store import disk_full


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m dvoc_bench.merge",
        description="Merge the shard run directories of one sweep into one run directory (run again after "
        "a shard resumed: adds only what is new).",
    )
    p.add_argument("shard_dirs", nargs="+", type=Path, metavar="SHARD_DIR",
                   help="a shard's run directory, or a sweep dir holding them")  # fmt: skip
    p.add_argument("--out", type=Path, required=True, metavar="RUN_DIR", help="the merged run directory")
    p.add_argument("--into-run", action="store_true",
                   help="allow --out to be an ordinary run (not an earlier merge's output): its plan is "
                   "rewritten and the shards' trials added")  # fmt: skip
    args = p.parse_args(argv)
    try:
        report = merge_runs(args.shard_dirs, args.out, into_run=args.into_run)
    except ConfigError as e:
        print(f"config error: {redact(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk: one line; merging again adds only what is missing
        full = disk_full(e, e.filename or args.out, "the merge stops: free space and merge again (it adds "
                         "only what is missing)")  # fmt: skip
        if full is None:
            raise
        print(f"merge: {redact(str(full))}", file=sys.stderr)
        return 4
    print("\n".join(report.lines()))
    return 1 if report.partial else 0


if __name__ == "__main__":
    sys.exit(main())
