"""``python -m dvoc_bench.bench ocr-docs OUT_DIR``: web task files for real documentation pages installed on
this machine (local files only), for the OCR baseline's results (docs/ocr.md).

Pages: rustdoc's ``std::vec::Vec`` and the Rust book (rustup's rust-docs, found with ``rustc --print
sysroot``), Node's ``fs`` API page (Debian ``nodejs-doc``), the Valgrind and libffi manuals (Debian
``valgrind``, ``libffi8``) and Debian's Python policy (``python3``). Each task is marked ``text`` (the target
shows the words the instruction uses) or ``icon`` (an icon, or a target described rather than named). A page
that is absent is left out with its reason on stderr. Prints the overrides that run them:
``web.task_files=[...] tasks=[...]``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

__all__ = ["DOC_TASKS", "SPLIT", "write_tasks"]


def rust_docs() -> Path | None:
    """rustup's HTML docs (``$(rustc --print sysroot)/share/doc/rust/html``), ``None`` when absent."""
    rustc = shutil.which("rustc")
    if rustc is None:
        return None
    out = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, text=True, timeout=60)
    docs = Path(out.stdout.strip()) / "share" / "doc" / "rust" / "html"
    return docs if out.returncode == 0 and docs.is_dir() else None


_RUST = "rust"
_VEC = {"page": "std/vec/struct.Vec.html", "root": ".", "wait_for": "#copy-path"}
_NEXT = 'a[accesskey="n"] >> nth=0'
DOC_TASKS: dict[str, tuple[str, dict[str, str]]] = {
    # id: (base folder, task); "rust" is rustup's docs folder
    "DOC1": (_RUST, {**_VEC, "selector": ".settings-menu > a", "instruction": "Click the Settings button"}),
    "DOC2": (_RUST, {**_VEC, "selector": ".help-menu > a", "instruction": "Click the Help button"}),
    "DOC3": (_RUST, {**_VEC, "selector": "#copy-path",
                   "instruction": "Click the button that copies the item path"}),
    "DOC4": ("/usr/share/doc/nodejs/api", {"page": "fs.html", "instruction": "Open the Buffer documentation",
                                         "selector": '#column2 >> role=link[name="Buffer"]'}),
    "DOC5": ("/usr/share/doc/valgrind/html", {"page": "manual-core.html", "selector": _NEXT,
                                            "instruction": "Click the Next link"}),
    "DOC6": ("/usr/share/doc/libffi8/html", {"page": "Introduction.html", "selector": _NEXT,
                                           "instruction": "Click the link to the next section"}),
    "DOC7": ("/usr/share/doc/python3", {"page": "python-policy.html", "root": "/usr/share",
                                      "selector": "li.nav-item-this > a",
                                      "instruction": "Click the documentation title link"}),
    "DOC9": (_RUST, {**_VEC, "selector": "#toggle-all-docs", "instruction": "Click the Summary button"}),
    "DOC10": ("/usr/share/doc/libffi8/html", {"page": "Introduction.html", "selector": 'a[rel="index"]',
                                            "instruction": "Click the Index link"}),
    "DOC8": (_RUST, {"page": "book/ch01-01-installation.html", "root": "book", "selector": 'a[rel~="next"]',
                   "scroll_to": 'a[rel~="next"] >> nth=0', "instruction": "Go to the next chapter"}),
}  # fmt: skip

SPLIT: dict[str, str] = {
    **{
        t: "text" for t in ("S1", "S3", "W1", "W2", "W3", "W4", "W5", "DOC1", "DOC2", "DOC4", "DOC9", "DOC10")
    },
    **{t: "icon" for t in ("S2", "S4", "S5", "S6", "DOC3", "DOC5", "DOC6", "DOC7", "DOC8")},
}
"""Text vs icon, by inspection of each target: ``text`` when it shows the words the instruction names it by;
``icon`` for an icon or a target described by colour, position or role: S2, S4, S6 (colour, size,
position), S5 (an empty input whose label stands beside it), DOC3 (a copy icon), DOC5 (Valgrind's "next" is
an arrow), DOC6 (libffi's next link reads "Using libffi"; the word "Next:" stands before it), DOC7 (the title
link, described as such), DOC8 (the book's arrow)."""


def write_tasks(out_dir: Path, only: list[str] | None = None) -> tuple[list[Path], list[str]]:
    """Write the task files of the pages present into ``out_dir``; returns them and why others are absent."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rust = rust_docs()
    files, absent = [], []
    for tid, (base, task) in DOC_TASKS.items():
        if only is not None and tid not in only:
            continue
        folder = rust if base == _RUST else Path(base)
        if folder is None or not (folder / task["page"]).is_file():
            absent.append(f"{tid}: {folder or 'rustup docs'}/{task['page']} is not installed")
            continue
        raw = {"id": tid, **task, "page": str(folder / task["page"])}
        if "root" in raw:
            raw["root"] = str((folder / raw["root"]).resolve())
        path = out_dir / f"{tid}.yaml"
        path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
        files.append(path)
    return files, absent


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print("usage: python -m dvoc_bench.bench ocr-docs OUT_DIR [DOC1,DOC2,...]", file=sys.stderr)
        return 2
    files, absent = write_tasks(Path(args[0]), args[1].split(",") if len(args) == 2 else None)
    for a in absent:
        print(a, file=sys.stderr)
    ids = ",".join(p.stem for p in files)
    print(f"web.task_files=[{','.join(str(p) for p in files)}] tasks=[{ids}]")
    return 0
