"""The run directory's contract has one home, :mod:`dvoc_bench.core.rundir`: no other module of the package
spells one of its file or folder names.

Read from the source: every string constant of every module (f-string pieces included; docstrings are
prose and do not count), outside ``core/rundir.py``. A file name (``trials.jsonl``, ``run.json``, ...) may
not appear in any of them; a folder name (``frames``, ``report``, ...), a word too common to ban
everywhere, may not stand where a path is made: beside a ``/`` of a path join, as the argument of
``Path``/``glob``/``rglob``/``joinpath``, or as a path segment inside a string (``frames/<sha>.png``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from dvoc_bench.core import rundir

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dvoc_bench"
HOME = PACKAGE / "core" / "rundir.py"

NOT_SCANNED = {
    rundir.TMP: "the suffix of every atomic write of the package (caches, the response cache), not only of "
    "a run directory's",
    rundir.HYDRA_CONFIG: "also the name of conf/config.yaml, Hydra's primary config",
}
"""Layout names the scan does not look for, each with its reason."""


def layout_names() -> tuple[set[str], set[str]]:
    """The layout's file names (they hold a dot) and folder names, read from ``core/rundir.py``'s
    upper-case string constants."""
    names = {
        v for k, v in vars(rundir).items() if k.isupper() and isinstance(v, str) and v not in NOT_SCANNED
    }
    files = {n for n in names if "." in n}
    return files, names - files


FILES, FOLDERS = layout_names()


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the constants that are docstrings (a module's, a class's, a function's, an attribute's)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            value = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.add(id(value))
    return out


PATH_CALLS = {"Path", "glob", "rglob", "joinpath", "with_name", "PurePath"}


def _path_places(tree: ast.AST) -> set[int]:
    """ids of the string constants that stand where a path is made."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            out |= {id(x) for x in (node.left, node.right) if isinstance(x, ast.Constant)}
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in PATH_CALLS:
                out |= {id(a) for a in node.args if isinstance(a, ast.Constant)}
    return out


def _file_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")


def _segment_pattern(name: str) -> re.Pattern[str]:
    """The folder as a path segment inside a longer string: ``frames/x``, ``a/frames``, ``a/frames/b``,
    ``<RUN_DIR>/report for one run``, ``missing from frames/``."""
    n = re.escape(name)
    return re.compile(rf"((?<![\w.-]){n}/)|(/{n}(?![\w.+-]))")


def literals(path: Path) -> list[str]:
    """``line N: 'text' (name)`` for every run-directory name the module spells outside a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docs, places = _docstrings(tree), _path_places(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docs:
            continue
        text = node.value
        for name in sorted(FILES):
            if _file_pattern(name).search(text):
                found.append(f"line {node.lineno}: {text[:60]!r} ({name})")
        for name in sorted(FOLDERS):
            if (id(node) in places and text == name) or _segment_pattern(name).search(text):
                found.append(f"line {node.lineno}: {text[:60]!r} ({name}/)")
    return sorted(found, key=lambda x: int(x.split(":")[0].split()[1]))


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p != HOME)


def test_the_layout_is_read_from_the_home() -> None:
    """The scan looks for what the run directory is made of (a guard against an empty scan)."""
    assert {"plan.jsonl", "trials.jsonl", "steps.jsonl", "run.json", "summary.md", "shard.json",
            "merge.json", "run_meta.json", ".lock"} <= FILES  # fmt: skip
    assert {"frames", ".hydra", "doctor", "report", "view"} <= FOLDERS | FILES


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_no_run_dir_name_outside_its_home(path: Path) -> None:
    bad = literals(path)
    assert not bad, f"{path.relative_to(ROOT)} spells run-directory names (use dvoc_bench.core.rundir): {bad}"


def test_the_scan_finds_each_form(tmp_path: Path) -> None:
    """A planted literal in each form is found; docstrings, and folder words used as words, are not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""Reads trials.jsonl and frames/."""\n'
        "from pathlib import Path\n"
        "def f(d, sha, cfg):\n"
        '    """Writes run.json."""\n'
        '    a = d / "trials.jsonl"\n'
        '    b = d / "frames" / f"{sha}.png"\n'
        '    c = f"{d}/frames/{sha}.png"\n'
        '    e = Path(d).rglob("**/steps.jsonl")\n'
        '    g = cfg.get("frames"), "report", {"view": 1}\n'
        '    h = d / ".hydra"\n'
        "    return a, b, c, e, g, h\n"
    )
    bad = literals(probe)
    assert [b.split(":")[0] for b in bad] == ["line 5", "line 6", "line 7", "line 8", "line 10"], bad
