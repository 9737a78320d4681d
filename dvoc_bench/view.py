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

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""``Host`` names ``--serve`` answers (any other is refused: a DNS-rebinding page cannot read the site)."""


def _inside(p: Path, allowed: Sequence[Path]) -> bool:
    return any(p == a or a in p.parents for a in allowed)


def _handler(root: Path, allowed: list[Path]) -> type[http.server.SimpleHTTPRequestHandler]:
    """A handler serving the files under ``allowed`` (resolved: a symlink that leads out of them is not
    followed out), no directory listings, and only to a loopback ``Host``."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path: str) -> str:
            p = (root / unquote(urlsplit(path).path).lstrip("/")).resolve()  # symlinks resolved first
            if not _inside(p, allowed) or not p.is_file():
                return str(root / ".dvoc-view-not-served")  # answered 404
            return str(p)

        def _loopback(self) -> bool:
            host = (self.headers.get("Host") or "").strip().lower()
            name = host[1:].split("]", 1)[0] if host.startswith("[") else host.rsplit(":", 1)[0]
            if name in LOOPBACK_HOSTS:
                return True
            self.send_error(403, "only a loopback Host is served")
            return False

        def do_GET(self) -> None:  # noqa: N802
            if self._loopback():
                super().do_GET()

        def do_HEAD(self) -> None:  # noqa: N802
            if self._loopback():
                super().do_HEAD()

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
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="FILE",
        help="another harness's results, as the report imports them (docs/imports.md)",
    )
    p.add_argument("--format", default="v1", help="format of the --import files: v1, sspro, omniparser, zoom")
    p.add_argument("--annotations", default=None, metavar="DIR", help="annotations the imports join")
    args = p.parse_args(argv)
    if not args.runs and not args.upstream and not args.imports:
        p.error("give at least one RUN_DIR, --upstream PATH or --import FILE")
    if args.serve and not 0 <= args.port <= 65535:
        print(f"view: --port: a port is 0-65535 (0: any free one), got {args.port}", file=sys.stderr)
        return 2

    from dvoc_bench.analysis.export import SchemaError
    from dvoc_bench.analysis.foreign import load_import
    from dvoc_bench.analysis.loaders import DuplicateTrials, find_run_dirs
    from dvoc_bench.analysis.viewer import build_site, write_site

    try:
        run_dirs = find_run_dirs(args.runs) if args.runs else []
        out = (args.out or (args.runs[0] if args.runs else Path("runs")) / VIEW).resolve()
        imported = [load_import(f, args.format, args.annotations) for f in args.imports]
        files = build_site(run_dirs, out, upstream=args.upstream, imported=imported)
    except (FileNotFoundError, DuplicateTrials, SchemaError) as e:
        print(f"view: {e}{_hint(args.runs)}", file=sys.stderr)
        return 2
    index = write_site(files, out)
    n_trial_files = sum(1 for k in files if k.startswith("data/trials/"))
    print(f"site: {index} ({n_trial_files} trial data files; open it in a browser)", flush=True)
    if not args.serve:
        return 0
    # the site and each run's own frames/: a frames/ (or a frame) linked out of its run directory is not
    # served, so a run received from someone else cannot expose the filesystem
    frames = [(r / SHOTS).resolve() for r in run_dirs]
    allowed = [out, *(f for f, r in zip(frames, run_dirs, strict=True) if _inside(f, [r.resolve()]))]
    allowed += [t.resolve() for u in args.upstream if (t := _tree(u))]  # the authors' iter_*.png
    root = Path(os.path.commonpath([str(a) for a in allowed]))
    handler = functools.partial(_handler(root, allowed), directory=str(root))
    try:
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    except OSError as e:  # the port is taken, or not ours to bind
        print(f"view: --port {args.port}: cannot serve there ({e.strerror or e})", file=sys.stderr)
        return 2
    with httpd:
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
