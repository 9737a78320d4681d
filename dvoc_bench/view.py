"""``python -m dvoc_bench.view RUN_DIR... [--upstream PATH] [--out DIR] [--serve [--port N]]``: the run viewer
(docs/viewer.md).

Writes a static, self-contained site (:mod:`dvoc_bench.analysis.viewer`) for run directories, multirun
sweeps, merged shard dirs and the authors' records (``--upstream``: their clone at any depth, read by the
report's loader; each step's frame is their ``iter_<step>.png``): the trials table, one page per trial
(its frames with the target and the points drawn over them, prompts, replies, answers, decisions, a
distance chart), and a side-by-side comparison of the methods on one sample. It opens from ``file://``
(default folder: ``<RUN_DIR>/view``, ``runs/view`` with only ``--upstream``; frames are referenced where
they are, not copied). ``--serve`` serves it on 127.0.0.1 only (the site, the runs' ``frames/`` and the
authors' tree, nothing else), prints the URL at once and runs until Ctrl-C.

Exit codes: 0 written (and served); 2 no run directory (or none of the authors' records) there, or a run the
analysis refuses.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from dvoc_bench.core.rundir import SHOTS, VIEW


def _handler(root: Path, allowed: list[Path]) -> type[http.server.SimpleHTTPRequestHandler]:
    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path: str) -> str:
            p = (root / unquote(urlsplit(path).path).lstrip("/")).resolve()
            if not any(p == a or a in p.parents for a in allowed):
                return str(root / ".dvoc-view-not-served")  # answered 404
            return str(p)

        def log_message(self, format: str, *args: object) -> None:  # quiet: the console shows the URL
            pass

    return Handler


def _hint(paths: Sequence[Path]) -> str:
    """`` (PATH holds the authors' records: pass it as --upstream PATH)`` when a RUN_DIR is their clone."""
    from dvoc_bench.analysis.upstream import discover_upstream

    for path in paths:
        with contextlib.suppress(FileNotFoundError, OSError, ValueError):
            discover_upstream(path)
            return f" ({path} holds the authors' records: pass it as --upstream {path})"
    return ""


def _tree(path: Path) -> Path | None:
    """The authors' per-trial tree under ``path`` (their frames are served from there), if any."""
    from dvoc_bench.analysis.upstream import discover_upstream

    return discover_upstream(path).get("tree")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m dvoc_bench.view",
        description="A browsable site of a run's trials: frames, answers and truth (opens from file://).",
    )
    p.add_argument(
        "runs", nargs="*", type=Path, metavar="RUN_DIR", help="run dirs, multirun sweeps, merged dirs"
    )
    p.add_argument(
        "--upstream", action="append", type=Path, default=[], metavar="PATH",
        help="the authors' records: their repository's clone (any depth) or one of their JSON files",
    )  # fmt: skip
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"site folder (default: <first RUN_DIR>/{VIEW}, or runs/{VIEW})",
    )
    p.add_argument(
        "--serve", action="store_true", help="serve the site on http://127.0.0.1:PORT until Ctrl-C"
    )
    p.add_argument("--port", type=int, default=8765, help="port for --serve (0: any free one; default 8765)")
    args = p.parse_args(argv)
    if not args.runs and not args.upstream:
        p.error("give at least one RUN_DIR or --upstream PATH")

    from dvoc_bench.analysis.loaders import DuplicateTrials, find_run_dirs
    from dvoc_bench.analysis.viewer import build_site, write_site

    try:
        run_dirs = find_run_dirs(args.runs) if args.runs else []
        out = (args.out or (args.runs[0] if args.runs else Path("runs")) / VIEW).resolve()
        files = build_site(run_dirs, out, upstream=args.upstream)
    except (FileNotFoundError, DuplicateTrials) as e:
        print(f"view: {e}{_hint(args.runs)}", file=sys.stderr)
        return 2
    index = write_site(files, out)
    n_trial_files = sum(1 for k in files if k.startswith("data/trials/"))
    print(f"site: {index} ({n_trial_files} trial data files; open it in a browser)", flush=True)
    if not args.serve:
        return 0
    allowed = [out, *((r / SHOTS).resolve() for r in run_dirs)]  # a linked frames/ too
    allowed += [t.resolve() for u in args.upstream if (t := _tree(u))]  # the authors' iter_*.png
    root = Path(os.path.commonpath([str(a) for a in allowed]))
    handler = functools.partial(_handler(root, allowed), directory=str(root))
    with http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler) as httpd:
        port = httpd.server_address[1]
        print(
            f"serving http://127.0.0.1:{port}/{quote(str(index.relative_to(root)))} (Ctrl-C stops)",
            flush=True,
        )
        with contextlib.suppress(KeyboardInterrupt):
            httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
