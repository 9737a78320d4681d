"""Scenes: every task source of a run behind one registry that renders each task once and hands out
Snapshots.

A task source implements :class:`~dvoc_bench.scenes.sources.TaskSource` (ids, snapshot, meta, probe,
close). The built-in sources whose tasks are files in a subfolder of a scenes directory (``synthetic/``,
``web/``, ``desktop/``) describe it with a :class:`~dvoc_bench.scenes.sources.SceneFolder`: a file pattern
and a loader turning one file into a :class:`Snapshot`; their task id is the file stem (``synthetic/S1.yaml``
-> ``S1``) and must equal the id the loader reports. Dataset samples are a source of their own
(:mod:`dvoc_bench.scenes.dataset_source`).

Task sources register in :mod:`dvoc_bench.scenes.sources` with the scene kind they produce (the built-in
ones below; a new source is one new module imported here). Each registry builds its own sources from its
``options`` (stateful ones, such as the web source with its browser, then belong to it); they may add
scenes defined outside the folder (bring-your-own pages), answer what lies under a point
(:meth:`SceneRegistry.probe`) and hold resources that :meth:`SceneRegistry.close` releases.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Point
from dvoc_bench.core.records import Probe, SceneKind
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes import sources as registry
from dvoc_bench.scenes.absent import absent_variant
from dvoc_bench.scenes.sources import FolderTasks, SceneFolder, TaskSource, natural_key
from dvoc_bench.scenes.synthetic import DEFAULT_MAX_SIDE, render_synthetic_file, render_without_target_file

__all__ = [
    "DEFAULT_MAX_SIDE",
    "Element",
    "Probe",
    "SceneRegistry",
    "SceneFolder",
    "SceneTruth",
    "TaskSource",
    "Snapshot",
    "build_sources",
    "default_scenes_dir",
]


@registry.source("synthetic", kind="synthetic")
def _synthetic_source(options: Any) -> SceneFolder:
    return SceneFolder("*.yaml", render_synthetic_file, kind="synthetic", remove=render_without_target_file)


@registry.source("web", kind="web")
def _web_source(options: Any) -> SceneFolder:
    from dvoc_bench.scenes.web.source import web_source  # keeps the browser code out of ``import dvoc_bench``

    return web_source(options)


@registry.source("desktop", kind="desktop")
def _desktop_source(options: Any) -> SceneFolder:
    from dvoc_bench.scenes.desktop.source import desktop_source  # no display until a desktop scene is loaded

    return desktop_source(options)


@registry.source("apps", kind="desktop")
def _apps_source(options: Any) -> SceneFolder:
    from dvoc_bench.scenes.desktop.apps import apps_source  # no display until an application task is loaded

    return apps_source(options)


@registry.source("miniwob", kind="miniwob")
def _miniwob_source(options: Any) -> TaskSource:
    from dvoc_bench.scenes.miniwob.source import MiniwobSource  # no browser until an episode runs

    return MiniwobSource(options)


@registry.source("gtk_episodes", kind="desktop")
def _gtk_episodes_source(options: Any) -> TaskSource:
    from dvoc_bench.scenes.desktop.gtk_source import GtkEpisodeSource  # no display until an episode runs

    return GtkEpisodeSource.from_settings(options)


Source = SceneFolder | TaskSource
"""What a registry is given per source name: a folder description or a task source."""


def build_sources(
    options: Mapping[str, Any] | None = None, names: Sequence[str] | None = None
) -> dict[str, Source]:
    """Fresh sources of the registered task sources (``names``: only these), each built from
    ``options[name]``; a source with nothing to offer under these options (a dataset without one) is left
    out."""
    options = options or {}
    built = {
        name: info.build(options.get(name))
        for name, info in registry.sources().items()
        if names is None or name in names
    }
    return {name: src for name, src in built.items() if src is not None}


def box_probe(truth: SceneTruth, point: Point) -> Probe:
    """The topmost element (last in drawing order) whose box contains ``point``; the box rule stands."""
    under = [e for e in truth.elements if e.box.contains(point)]
    return Probe(hit_element=under[-1].id if under else None, hit=None)


def default_scenes_dir() -> Path:
    """The repository's top-level ``scenes/`` directory, located relative to this package."""
    return Path(__file__).resolve().parents[2] / "scenes"


class SceneRegistry:
    """The tasks of a run's sources, each rendered on first use and cached for the registry's lifetime.

    Rendering happens under a lock, so concurrent callers (threads, or asyncio tasks offloading to
    threads) render every task exactly once. Calls are synchronous and fast after the first.
    """

    def __init__(
        self,
        root: Path | str,
        sources: Mapping[str, Source] | None = None,
        options: Mapping[str, Any] | None = None,
        max_side: int = DEFAULT_MAX_SIDE,
        absent: str = "off",
        wording: str = "given",
    ) -> None:
        """``root``: the scenes directory the folder sources glob in. ``sources`` replaces the registered
        ones (:func:`build_sources`); ``options`` maps a source name to its options: its validated settings
        block (``{"web": settings.web}``), or a plain mapping the block's model validates here
        (``ConfigError``). ``max_side``: the largest canvas side a scene may have
        (``scenes.max_side``), checked before rendering. ``wording``: how the drawn, web and desktop tasks
        are asked (``wording``, :mod:`dvoc_bench.scenes.wording`)."""
        self.root = Path(root)
        """The scenes directory."""
        self.max_side = max_side
        """Largest canvas side a scene may have (``scenes.max_side``); checked before rendering."""
        self.absent = absent
        """The absent-target variant every task is rendered as (``absent.variant``; ``off``: as it is)."""
        if sources is None:
            sources = build_sources(options or {})
        self._sources: dict[str, TaskSource] = {
            name: FolderTasks(self.root / name, src, max_side) if isinstance(src, SceneFolder) else src
            for name, src in sources.items()
        }
        self.wording = wording
        """``wording`` of the drawn, web and desktop tasks (``given``: their own words)."""
        self._index: dict[str, TaskSource] | None = None
        self._snapshots: dict[str, Snapshot] = {}
        self._unworded: dict[str, Exception] = {}
        self._held: dict[str, SceneTruth] = {}
        self._lock = threading.RLock()

    def _where(self) -> dict[str, TaskSource]:
        """Task id -> its source (every id once across the sources)."""
        with self._lock:
            if self._index is None:
                if any(isinstance(s, FolderTasks) for s in self._sources.values()) and not self.root.is_dir():
                    raise FileNotFoundError(f"scenes directory not found: {self.root}")
                index: dict[str, TaskSource] = {}
                named: dict[str, str] = {}
                for name, src in sorted(self._sources.items()):
                    for tid in src.ids():
                        if tid in index:
                            twice = f"by {named[tid]} and by {name}"
                            raise ConfigError(f"scene id {tid!r} defined twice: {twice}")
                        index[tid], named[tid] = src, name
                self._index = index
            return self._index

    def ids(self) -> list[str]:
        """All task ids: the folder sources' naturally sorted (``S1`` ... ``S6``, ``S10`` after ``S9``), then
        those of ordered sources (a dataset's samples) in their own order."""
        where = self._where()
        plain = sorted((t for t, s in where.items() if not s.ordered), key=natural_key)
        return plain + [t for t, s in where.items() if s.ordered]

    def snapshot(self, scene_id: str) -> Snapshot:
        """The rendered task; rendered on the first call, then cached. Unknown ids raise ``KeyError``."""
        cached = self._snapshots.get(scene_id)
        if cached is not None:
            return cached
        with self._lock:
            if scene_id in self._snapshots:
                return self._snapshots[scene_id]
            if scene_id in self._unworded:  # no wording of the kind asked: the same reason, not a render
                raise self._unworded[scene_id]
            source = self._source_of(scene_id)
            off = self.absent == "off"
            snap = source.snapshot(scene_id) if off else absent_variant(source, scene_id, self.absent)
            if self.wording != "given" and source.kind in ("synthetic", "web", "desktop"):
                from dvoc_bench.scenes.wording import WordingUnavailable, worded_snapshot

                try:
                    snap = worded_snapshot(snap, self.wording)
                except WordingUnavailable as e:
                    self._unworded[scene_id] = e
                    raise
            self._snapshots[scene_id] = snap
            return snap

    def _source_of(self, scene_id: str) -> TaskSource:
        """The source of a task, or of a point of a two-point task (``<id>:from``, ``<id>:to``: the truth of
        one end, :attr:`SceneTruth.ends`, which the simulator looks up and the end's point is probed in).
        Unknown ids raise ``KeyError``."""
        where = self._where()
        if scene_id in where:
            return where[scene_id]
        base, _, end = scene_id.rpartition(":")
        if base in where and end in ("from", "to"):
            return where[base]
        raise KeyError(f"unknown scene {scene_id!r}; known scenes: {', '.join(self.ids())}")

    def truth(self, scene_id: str) -> SceneTruth:
        """Ground truth of a scene (target box, elements, instruction); a held step's first."""
        held = self._held.get(scene_id)
        return held if held is not None else self.snapshot(scene_id).truth

    def hold(self, truth: SceneTruth) -> None:
        """Make one episode step's truth known by its scene id until :meth:`release` (the screenshots of
        an episode are made as it runs, never rendered by a source)."""
        with self._lock:
            self._held[truth.scene_id] = truth

    def release(self, scene_id: str) -> None:
        """Forget a held step's truth."""
        with self._lock:
            self._held.pop(scene_id, None)

    def kind(self, scene_id: str) -> SceneKind:
        """The kind of scene ``scene_id`` is (its source's kind)."""
        return self._source_of(scene_id).kind

    def meta(self, scene_id: str) -> dict[str, Any] | None:
        """The task's record metadata (dataset samples), ``None`` for the other sources."""
        return self._where()[scene_id].meta(scene_id)

    def source(self, name: str) -> TaskSource:
        """The source registered under ``name`` (``KeyError`` if there is none)."""
        return self._sources[name]

    def probe(self, scene_id: str, point: Point) -> Probe:
        """What lies under ``point`` in the scene: the source's own answer (web: the DOM), else the boxes.

        May block (a browser round trip); from async code use :meth:`aprobe`.
        """
        snap = self.snapshot(scene_id)
        answer = self._source_of(scene_id).probe(scene_id, point)
        return answer if answer is not None else box_probe(snap.truth, point)

    async def aprobe(self, scene_id: str, point: Point) -> Probe:
        """:meth:`probe` for asyncio code: a live source is asked from a worker thread."""
        if not self._source_of(scene_id).live:
            return self.probe(scene_id, point)
        return await asyncio.to_thread(self.probe, scene_id, point)

    def close(self) -> None:
        """Release the live resources of every source (the browser). Snapshots stay cached; a later probe
        or render starts what it needs again."""
        for source in self._sources.values():
            source.close()


from dvoc_bench.scenes import cuactspot as _cuactspot  # noqa: E402,F401  registers dataset=cuactspot
from dvoc_bench.scenes import dataset_source as _dataset_source  # noqa: E402,F401  registers the datasets
from dvoc_bench.scenes import precision_cua as _precision_cua  # noqa: E402,F401  registers dataset=precision_cua
