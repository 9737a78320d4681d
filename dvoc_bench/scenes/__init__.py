"""Scenes: find scene definitions by folder, render each once, hand out Snapshots (DESIGN §9).

A scenes directory holds one subfolder per kind of scene (``synthetic/``, ``web/``, ``desktop/``). Each
subfolder has a :class:`SceneSource`: a file pattern and a loader turning one file into a :class:`Snapshot`. A
scene id is the file stem (``synthetic/S1.yaml`` -> ``S1``) and must equal the id the loader reports.

Task sources register in :mod:`dvoc_bench.registry` with the scene kind they produce (the built-in ones
below; a new source is one new module imported here). Each registry builds its own sources from its
``options`` (stateful ones, such as the web source with its browser, then belong to it); they may add
scenes defined outside the folder (bring-your-own pages), answer what lies under a point
(:meth:`SceneRegistry.probe`) and hold resources that :meth:`SceneRegistry.close` releases.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dvoc_bench import registry
from dvoc_bench.declare import ConfigError
from dvoc_bench.geometry import Point
from dvoc_bench.records import Probe, SceneKind
from dvoc_bench.scenes.synthetic import DEFAULT_MAX_SIDE, render_synthetic_file
from dvoc_bench.scenes.types import Element, SceneTruth, Snapshot

__all__ = [
    "DEFAULT_MAX_SIDE",
    "Element",
    "Probe",
    "SceneRegistry",
    "SceneSource",
    "SceneTruth",
    "Snapshot",
    "build_sources",
    "default_scenes_dir",
]


@dataclass(frozen=True)
class SceneSource:
    """How the scenes of one subfolder are found and rendered."""

    pattern: str
    """Glob of the definition files inside the subfolder (e.g. ``*.yaml``)."""
    load: Callable[[Path], Snapshot]
    """Renders one definition file into a Snapshot (called once per scene and registry)."""
    probe: Callable[[str, Point], Probe] | None = None
    """Optional: what lies under a point of a loaded scene (web: the DOM element, a real click). Without
    it the registry answers from the element boxes (:func:`box_probe`)."""
    close: Callable[[], None] | None = None
    """Optional: release live resources (the browser); a later call may start them again."""
    extra: Mapping[str, Path] = field(default_factory=dict)
    """Scenes defined outside the subfolder (bring-your-own tasks): scene id -> the path given to ``load``."""
    backend: Any = None
    """The object behind a stateful source (e.g. :class:`dvoc_bench.scenes.web.WebScenes`), for inspection."""
    kind: SceneKind = "synthetic"
    """The kind of scene this source produces (recorded as ``scene_kind``)."""
    limited_load: Callable[[Path, int], Snapshot] | None = None
    """Optional: ``load`` with the registry's ``max_side`` (``scenes.max_side``), refusing a larger canvas
    with a :class:`~dvoc_bench.config.ConfigError` before allocating it. Used instead of ``load`` when set."""


@registry.source("synthetic", kind="synthetic")
def _synthetic_source(options: Any) -> SceneSource:
    return SceneSource("*.yaml", render_synthetic_file, limited_load=render_synthetic_file, kind="synthetic")


@registry.source("web", kind="web")
def _web_source(options: Any) -> SceneSource:
    from dvoc_bench.scenes.web import web_source  # keeps the browser code out of ``import dvoc_bench``

    return web_source(options)


@registry.source("desktop", kind="desktop")
def _desktop_source(options: Any) -> SceneSource:
    from dvoc_bench.scenes.desktop import desktop_source  # no display until a desktop scene is loaded

    return desktop_source(options)


def build_sources(
    options: Mapping[str, Any] | None = None, names: Sequence[str] | None = None
) -> dict[str, SceneSource]:
    """Fresh sources of the registered task sources (``names``: only these), each built from
    ``options[name]``."""
    options = options or {}
    return {
        name: info.build(options.get(name))
        for name, info in registry.sources().items()
        if names is None or name in names
    }


def box_probe(truth: SceneTruth, point: Point) -> Probe:
    """The topmost element (last in drawing order) whose box contains ``point``; the box rule stands."""
    under = [e for e in truth.elements if e.box.contains(point)]
    return Probe(hit_element=under[-1].id if under else None, hit=None)


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

    def __init__(
        self,
        root: Path | str,
        sources: Mapping[str, SceneSource] | None = None,
        options: Mapping[str, Any] | None = None,
        max_side: int = DEFAULT_MAX_SIDE,
    ) -> None:
        """``sources`` replaces the registered ones (:func:`build_sources`); ``options`` maps a source name
        to its options (``{"web": cfg["web"]}``), validated here (``ConfigError``). ``max_side``: the
        largest canvas side a scene may have (``scenes.max_side``), checked before rendering."""
        self.root = Path(root)
        """The scenes directory."""
        options = options or {}
        self.max_side = max_side
        """Largest canvas side a scene may have (``scenes.max_side``); checked before rendering."""
        if sources is None:
            sources = build_sources(options)
        self._sources = dict(sources)
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
                            raise ConfigError(
                                f"scene id {path.stem!r} defined twice: {paths[path.stem][0]} and {path}"
                            )
                        paths[path.stem] = (path, source)
                for folder, source in sorted(self._sources.items()):
                    for sid, path in sorted(source.extra.items()):
                        if sid in paths:
                            raise ConfigError(
                                f"scene id {sid!r} defined twice: {paths[sid][0]} and {path} ({folder})"
                            )
                        paths[sid] = (Path(path), source)
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
            if source.limited_load is not None:
                snap = source.limited_load(path, self.max_side)
            else:
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

    def kind(self, scene_id: str) -> SceneKind:
        """The kind of scene ``scene_id`` is (its source's kind)."""
        return self._index()[scene_id][1].kind

    def source(self, folder: str) -> SceneSource:
        """The source of a subfolder (``KeyError`` if there is none)."""
        return self._sources[folder]

    def probe(self, scene_id: str, point: Point) -> Probe:
        """What lies under ``point`` in the scene: the source's own answer (web: the DOM), else the boxes.

        May block (a browser round trip); from async code use :meth:`aprobe`.
        """
        snap = self.snapshot(scene_id)
        _, source = self._index()[scene_id]
        if source.probe is None:
            return box_probe(snap.truth, point)
        return source.probe(scene_id, point)

    async def aprobe(self, scene_id: str, point: Point) -> Probe:
        """:meth:`probe` for asyncio code: a live source is asked from a worker thread."""
        _, source = self._index()[scene_id]
        if source.probe is None:
            return box_probe(self.snapshot(scene_id).truth, point)
        return await asyncio.to_thread(self.probe, scene_id, point)

    def close(self) -> None:
        """Release the live resources of every source (the browser). Snapshots stay cached; a later probe
        or render starts what it needs again."""
        for source in self._sources.values():
            if source.close is not None:
                source.close()
