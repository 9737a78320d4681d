"""The house rule: doors at the top, packages in floors, each importing only from lower floors and itself.

Every import counts (top level, inside functions, under ``if TYPE_CHECKING``, relative ones resolved); the
rule is read from the source, so a lazy import cannot hide an upward dependency. docs/architecture.md
shows the same table.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dvoc_bench"

FLOOR = {
    "core": 1,
    "detect": 2,
    "draw": 3,
    "scenes": 4,
    "models": 4,
    "protocol": 5,
    "methods": 6,
    "runner": 7,
    "analysis": 8,
    "calibration": 8,
    "app": 9,
    "benchmarks": 9,
    "inspect": 10,
}
"""The floor of each package; a module may import its own package and packages on lower floors."""

ALSO = {"calibration": {"analysis"}}
"""Same-floor imports allowed: the calibration reads records through the analysis layer."""

ONLY = {"analysis": {"core", "draw", "scenes"}}
"""Packages whose imports are narrower than their floor: the analysis reads records, it never runs a sweep."""

DOORS = {"__main__", "bench", "report", "doctor", "serve", "calibrate", "mark", "merge", "coords", "view"}
"""Entry points (``python -m dvoc_bench[.NAME]``): they may import anything, and nothing imports them."""

MAX_TOP = 12
"""At most this many modules directly in ``dvoc_bench/`` (the doors and ``__init__``)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, anywhere in the file, relative imports resolved; ``from pkg import
    name`` also yields ``pkg.name`` (it may be a module)."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((node.lineno, name))
            out += [(node.lineno, f"{name}.{a.name}") for a in node.names]
    return out


def place(name: str) -> str | None:
    """The package (or door) a dotted name lives in; ``None`` outside dvoc_bench or for the root itself."""
    parts = name.split(".")
    if parts[0] != "dvoc_bench" or len(parts) < 2:
        return None
    return parts[1]


def violations(path: Path) -> list[str]:
    """The imports of ``path`` that break the rule, as ``line N: name (why)``."""
    mine = place(module_name(path))
    bad = []
    for line, name in imported_names(path):
        there = place(name)
        if there is None or there == mine or there.startswith("__version__"):
            continue
        if there in DOORS:
            if mine not in DOORS or there != mine:
                bad.append(f"line {line}: {name} (a door; nothing imports a door)")
            continue
        if mine in DOORS or there not in FLOOR:
            continue  # a door imports anything; a name that is not a package (dvoc_bench.__version__)
        if mine in ONLY:
            ok = there in ONLY[mine]
        else:
            ok = FLOOR[there] < FLOOR[mine] or there in ALSO.get(mine, set())
        if not ok:
            why = f"{there} is floor {FLOOR[there]}, {mine} is floor {FLOOR[mine]}"
            bad.append(f"line {line}: {name} ({why})")
    return bad


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_package_has_a_floor_and_the_top_holds_only_doors() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert top <= DOORS, f"modules in dvoc_bench/ that are not doors: {sorted(top - DOORS)}"
    assert len(top) + 1 <= MAX_TOP
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages == set(FLOOR), f"packages without a floor: {sorted(packages - set(FLOOR))}"


@pytest.mark.parametrize("path", MODULES, ids=[module_name(p) for p in MODULES])
def test_module_imports_only_lower_floors(path: Path) -> None:
    bad = violations(path)
    assert not bad, f"{path.relative_to(ROOT)} imports upward: {'; '.join(bad)}"


def test_the_rule_sees_lazy_relative_and_type_checking_imports_and_door_imports(tmp_path: Path) -> None:
    """A planted upward import in each form is caught (the rule can fail)."""
    fake = tmp_path / "dvoc_bench" / "core"
    fake.mkdir(parents=True)
    probe = fake / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "from dvoc_bench.core import geometry\n"
        "def f():\n    from dvoc_bench.runner.sweep import run_sweep\n"
        "from ..draw import render\n"
        "if TYPE_CHECKING:\n    import dvoc_bench.methods.common\n"
        "import dvoc_bench.report\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        bad = violations(probe)
    finally:
        ROOT = saved
    lines = sorted(b.split(":")[0] for b in bad)
    assert lines == ["line 4", "line 4", "line 5", "line 5", "line 7", "line 8"]
    assert any("dvoc_bench.report (a door" in b for b in bad)


def _module_level_graph() -> dict[str, set[str]]:
    """Module -> the dvoc_bench modules it imports at import time (top level and ``if`` blocks, not
    inside functions); ``from pkg import mod`` counts as importing ``pkg.mod`` only."""
    names = {module_name(p) for p in MODULES}
    graph: dict[str, set[str]] = {}
    for p in MODULES:
        mod = module_name(p)
        package = mod if p.name == "__init__.py" else mod.rpartition(".")[0]
        deps: set[str] = set()
        stack: list[ast.AST] = list(ast.parse(p.read_text(encoding="utf-8")).body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.If | ast.Try):
                handlers = [h for t in getattr(node, "handlers", []) for h in t.body]
                stack += [*node.body, *node.orelse, *handlers]
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - (node.level - 1)] + [base])
                subs = {f"{base}.{a.name}" for a in node.names} & names
                deps |= subs or ({base} & names)
        graph[mod] = deps - {mod}
    return graph


def test_no_import_circle() -> None:
    graph = _module_level_graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return path[path.index(d) :] + [d]
            if d not in state and (cycle := visit(d)):
                return cycle
        state[m] = 2
        path.pop()
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            pytest.fail("import circle: " + " -> ".join(cycle))


CONFIG_NAMES = {"cfg", "plain", "config", "conf", "raw"}
"""Names the composed config goes by before it is validated."""


def raw_config_reads(path: Path, keys: set[str]) -> list[str]:
    """``cfg.get("run")`` / ``plain["task"]``-style reads of a top-level setting from a raw config mapping."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        key = obj = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            if node.args and isinstance(node.args[0], ast.Constant):
                key, obj = node.args[0].value, node.func.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key, obj = node.slice.value, node.value
        if key in keys and isinstance(obj, ast.Name) and obj.id in CONFIG_NAMES:
            out.append(f"line {node.lineno}: {ast.unparse(node)}")
    return out


def test_no_module_reads_the_raw_config_after_validation(tmp_path: Path) -> None:
    """Every knob is read from the validated Settings; a raw ``cfg.get("run")`` is a side door."""
    from dvoc_bench.runner.settings import Settings

    keys = set(Settings.model_fields)
    probe = tmp_path / "probe.py"
    probe.write_text('def f(cfg, plain):\n    return cfg.get("run", {}), plain["task"], cfg.hydra.get("x")\n')
    assert raw_config_reads(probe, keys) == ["line 2: cfg.get('run', {})", "line 2: plain['task']"]
    found = {str(p.relative_to(ROOT)): raw_config_reads(p, keys) for p in MODULES}
    assert not {k: v for k, v in found.items() if v}


CHILD_SCRIPTS = {"dvoc_bench.scenes.desktop.runner", "dvoc_bench.detect.helper"}
"""Scripts the harness starts as child processes: they talk to it over their standard output."""


def test_library_code_prints_nothing() -> None:
    """Terminal output belongs to the doors, the app and the benchmarks; the library logs."""
    printing = []
    for path in MODULES:
        mod = module_name(path)
        where = place(mod)
        if where is None or where in DOORS or where in ("app", "benchmarks") or mod in CHILD_SCRIPTS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                printing.append(f"{mod}:{node.lineno}")
    assert not printing, f"print() in library code: {printing}"
