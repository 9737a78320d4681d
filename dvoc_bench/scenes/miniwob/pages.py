"""Where the MiniWoB++ task pages are: inside the installed ``miniwob`` package (PyPI, MIT), found without
importing it (its ``__init__`` registers Gymnasium environments, which an episode does not need)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from dvoc_bench.scenes.sources import SceneError

HOW_TO_GET = "install the MiniWoB++ pages: pip install 'dvoc-bench[episodes]' (the PyPI package miniwob 1.1)"
"""What a missing package's error says."""


class MiniwobMissing(SceneError):
    """The ``miniwob`` package is not installed (one line saying how to get it)."""


def html_dir() -> Path:
    """The package's ``html/`` folder (the asset root a page may load from: ``core/``, ``common/``,
    ``miniwob/``); raises :class:`MiniwobMissing` without the package."""
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise MiniwobMissing(f"the miniwob package is not installed; {HOW_TO_GET}")
    root = Path(next(iter(spec.submodule_search_locations))) / "html"
    if not (root / "miniwob").is_dir() or not (root / "core" / "core.js").is_file():
        raise MiniwobMissing(f"the miniwob package at {root.parent} has no task pages; {HOW_TO_GET}")
    return root.resolve()


def task_names(root: Path | None = None) -> list[str]:
    """Every MiniWoB task the package ships (the stems of ``html/miniwob/*.html``), sorted."""
    root = html_dir() if root is None else root
    return sorted(p.stem for p in (root / "miniwob").glob("*.html"))


def task_page(name: str, root: Path | None = None) -> Path:
    """The page of task ``name`` (``click-test``); an unknown name is a :class:`SceneError` of one line."""
    root = html_dir() if root is None else root
    page = root / "miniwob" / f"{name}.html"
    if not page.is_file():
        raise SceneError(f"miniwob task {name!r} is not in the installed package ({root})")
    return page
