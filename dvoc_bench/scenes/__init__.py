"""Scenes: find scene definitions by folder, render each once, hand out Snapshots (DESIGN §9).

A scenes directory holds one subfolder per kind of scene (``synthetic/``; later ``web/``). Each subfolder
has a :class:`SceneSource`: a file pattern and a loader turning one file into a :class:`Snapshot`. A scene
id is the file stem (``synthetic/S1.yaml`` -> ``S1``) and must equal the id the loader reports.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dvoc_bench.scenes.synthetic import render_synthetic_file
from dvoc_bench.scenes.types import Element, SceneTruth, Snapshot

__all__ = [
    "DEFAULT_SOURCES",
    "Element",
    "SceneRegistry",
    "SceneSource",
    "SceneTruth",
    "Snapshot",
    "default_scenes_dir",
]


@dataclass(frozen=True)
class SceneSource:
    """How the scenes of one subfolder are found and rendered."""

    pattern: str
    """Glob of the definition files inside the subfolder (e.g. ``*.yaml``)."""
    load: Callable[[Path], Snapshot]
    """Renders one definition file into a Snapshot (called once per scene and registry)."""


DEFAULT_SOURCES: Mapping[str, SceneSource] = {"synthetic": SceneSource("*.yaml", render_synthetic_file)}
"""Subfolder -> source. Web scenes will add ``"web"`` here."""


def default_scenes_dir() -> Path:
    """The repository's top-level ``scenes/`` directory, located relative to this package."""
    return Path(__file__).resolve().parents[2] / "scenes"


def _natural_key(scene_id: str) -> tuple[object, ...]:
    """Sort key putting ``S2`` before ``S10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", scene_id))


class SceneRegistry:
    """The scenes of one directory, each rendered on first use and cached for the registry's lifetime.

    Rendering happens under a lock, so concurrent callers (threads, or asyncio tasks offloading to
    threads) render every scene exactly once. Calls are synchronous and fast after the first.
    """

    def __init__(self, root: Path | str, sources: Mapping[str, SceneSource] | None = None) -> None:
        self.root = Path(root)
        """The scenes directory."""
        self._sources = dict(DEFAULT_SOURCES if sources is None else sources)
        self._paths: dict[str, tuple[Path, SceneSource]] | None = None
        self._snapshots: dict[str, Snapshot] = {}
        self._lock = threading.RLock()

    def _index(self) -> dict[str, tuple[Path, SceneSource]]:
        with self._lock:
            if self._paths is None:
                if not self.root.is_dir():
                    raise FileNotFoundError(f"scenes directory not found: {self.root}")
                paths: dict[str, tuple[Path, SceneSource]] = {}
                for folder, source in sorted(self._sources.items()):
                    for path in sorted((self.root / folder).glob(source.pattern)):
                        if path.stem in paths:
                            raise ValueError(
                                f"scene id {path.stem!r} defined twice: {paths[path.stem][0]} and {path}"
                            )
                        paths[path.stem] = (path, source)
                self._paths = paths
            return self._paths

    def ids(self) -> list[str]:
        """All scene ids, naturally sorted (``S1`` ... ``S6``, ``S10`` after ``S9``)."""
        return sorted(self._index(), key=_natural_key)

    def snapshot(self, scene_id: str) -> Snapshot:
        """The rendered scene; rendered on the first call, then cached. Unknown ids raise ``KeyError``."""
        cached = self._snapshots.get(scene_id)
        if cached is not None:
            return cached
        with self._lock:
            if scene_id in self._snapshots:
                return self._snapshots[scene_id]
            index = self._index()
            if scene_id not in index:
                raise KeyError(f"unknown scene {scene_id!r}; known scenes: {', '.join(self.ids())}")
            path, source = index[scene_id]
            snap = source.load(path)
            if snap.scene_id != scene_id:
                raise ValueError(
                    f"{path}: defines scene id {snap.scene_id!r}, expected the file stem {scene_id!r}"
                )
            self._snapshots[scene_id] = snap
            return snap

    def truth(self, scene_id: str) -> SceneTruth:
        """Ground truth of a scene (target box, elements, instruction)."""
        return self.snapshot(scene_id).truth
