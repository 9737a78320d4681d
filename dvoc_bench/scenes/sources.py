"""Task sources: the one interface every source of tasks implements, and the registry they declare
themselves in.

A :class:`TaskSource` answers five questions: which task ids it has (:meth:`~TaskSource.ids`), the
rendered task (:meth:`~TaskSource.snapshot`), what a record keeps of it (:meth:`~TaskSource.meta`), what
lies under a point (:meth:`~TaskSource.probe`; ``None``: the element boxes decide) and releasing what it
holds (:meth:`~TaskSource.close`). Datasets implement it directly; the sources whose tasks are definition
files in a folder of ``scenes/`` (synthetic, web, desktop) describe the folder with a :class:`SceneFolder`
and :class:`FolderTasks` implements the interface for them.

A task source registers with :func:`source`, naming the scene kind it produces; :mod:`dvoc_bench.scenes`
registers the built-in ones, and a new source is one new module imported there. Each
:class:`~dvoc_bench.scenes.SceneRegistry` builds its own sources from their options.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.core.records import ErrorClass, Probe, SceneKind
from dvoc_bench.core.scene import Snapshot


class SceneError(ConfigError):
    """A task that cannot be a scene (a page that hangs, navigates away, crashes or has no valid target; a
    desktop program that shows no window; a dataset sample without its image). :meth:`TaskSource.snapshot`
    raises it; the sweep records the task's trials as ``status=error`` with ``error_class``
    :attr:`error_class` and goes on with the rest."""

    error_class: ErrorClass = "scene"
    size: Size | None = None
    """The screen size the scene would have had (plans its start points), when known."""


@runtime_checkable
class TaskSource(Protocol):
    """A source of tasks (scenes, dataset samples, application screens), as the sweep sees it."""

    kind: SceneKind
    """The kind of scene it produces (recorded as ``scene_kind``)."""
    ordered: bool
    """True when :meth:`ids` is the order its tasks run in (a dataset's); else ids are sorted naturally."""
    live: bool
    """True when :meth:`probe` or :meth:`snapshot` may block on a live resource (a browser, a display):
    async callers then ask from a worker thread."""

    def ids(self) -> list[str]:
        """Every task id of the source."""
        ...

    def snapshot(self, task_id: str) -> Snapshot:
        """The rendered task (called once per task and registry; the registry caches it). A task that cannot
        be built raises :class:`SceneError` (or another exception with ``error_class = "scene"``) to fail
        its own trials only."""
        ...

    def meta(self, task_id: str) -> dict[str, Any] | None:
        """What the trial record keeps about the task (a dataset sample's ui type, ...); ``None``: nothing."""
        ...

    def probe(self, task_id: str, point: Point) -> Probe | None:
        """What lies under ``point`` (web: the DOM element, a real click); ``None``: the element boxes."""
        ...

    def close(self) -> None:
        """Release live resources (the browser, the display); a later call may start them again."""
        ...


@dataclass(frozen=True)
class SceneFolder:
    """A task source whose tasks are definition files in one folder of ``scenes/`` (plus bring-your-own
    ones defined elsewhere): the pattern, how one file is rendered, and the live parts, if any."""

    pattern: str
    """Glob of the definition files inside the subfolder (e.g. ``*.yaml``)."""
    load: Callable[[Path, int], Snapshot]
    """Renders one definition file into a Snapshot, refusing a canvas side above the registry's
    ``max_side`` (``scenes.max_side``) with a :class:`~dvoc_bench.core.declare.ConfigError` before
    allocating it."""
    probe: Callable[[str, Point], Probe] | None = None
    """Optional: what lies under a point of a loaded scene (web: the DOM element, a real click). Without
    it the registry answers from the element boxes (:func:`box_probe`)."""
    close: Callable[[], None] | None = None
    """Optional: release live resources (the browser); a later call may start them again."""
    remove: Callable[[Path, int], Snapshot] | None = None
    """Optional: renders one definition file with its target taken off the screen (``absent.variant=
    remove``, :mod:`dvoc_bench.scenes.absent`); ``None``: the source cannot."""
    extra: Mapping[str, Path] = field(default_factory=dict)
    """Scenes defined outside the subfolder (bring-your-own tasks): scene id -> the path given to ``load``."""
    backend: Any = None
    """The object behind a stateful source (e.g. :class:`dvoc_bench.scenes.web.source.WebScenes`), for
    inspection."""
    kind: SceneKind = "synthetic"
    """The kind of scene this source produces (recorded as ``scene_kind``)."""


def natural_key(task_id: str) -> tuple[object, ...]:
    """Sort key putting ``S2`` before ``S10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", task_id))


class FolderTasks:
    """:class:`TaskSource` of a :class:`SceneFolder` under a scenes directory."""

    ordered = False

    def __init__(self, folder: Path, spec: SceneFolder, max_side: int) -> None:
        self.folder = Path(folder)
        """The folder its definition files are globbed in."""
        self.spec = spec
        """What the source declared."""
        self.kind = spec.kind
        self.live = spec.probe is not None
        self.max_side = max_side
        """Largest canvas side a scene may have."""
        self.backend = spec.backend
        """The object behind a stateful source (web, desktop), for inspection."""
        self._paths: dict[str, Path] | None = None

    def paths(self) -> dict[str, Path]:
        """Task id (the file stem) -> its definition file, the folder's and the bring-your-own ones."""
        if self._paths is None:
            paths = {p.stem: p for p in sorted(self.folder.glob(self.spec.pattern))}
            for sid, path in sorted(self.spec.extra.items()):
                if sid in paths:
                    raise ConfigError(f"scene id {sid!r} defined twice: {paths[sid]} and {path}")
                paths[sid] = Path(path)
            self._paths = paths
        return self._paths

    def ids(self) -> list[str]:
        return sorted(self.paths(), key=natural_key)

    def snapshot(self, task_id: str) -> Snapshot:
        path = self.paths()[task_id]
        snap = self.spec.load(path, self.max_side)
        if snap.scene_id != task_id:
            said = snap.scene_id
            raise ValueError(f"{path}: defines scene id {said!r}, expected the file stem {task_id!r}")
        return snap

    def without_target(self, task_id: str) -> Snapshot | None:
        """The task rendered with its target taken off the screen, ``None`` when the folder's source cannot
        (:attr:`SceneFolder.remove`)."""
        if self.spec.remove is None:
            return None
        return self.spec.remove(self.paths()[task_id], self.max_side)

    def meta(self, task_id: str) -> dict[str, Any] | None:
        return None

    def probe(self, task_id: str, point: Point) -> Probe | None:
        return self.spec.probe(task_id, point) if self.spec.probe is not None else None

    def close(self) -> None:
        if self.spec.close is not None:
            self.spec.close()


SourceBuild = Callable[[Any], "SceneFolder | TaskSource | None"]
"""Builds a source from its options (``cfg[name]``, may be ``None``): a folder description, which the
registry turns into :class:`FolderTasks` under its scenes directory, a :class:`TaskSource`, or ``None``
when it has nothing under these options (a dataset source without a dataset)."""


@dataclass(frozen=True)
class SourceInfo:
    """A registered task source: a subfolder of ``scenes/`` (or none) and the scene kind it produces."""

    name: str
    """The subfolder of the scenes directory its definition files live in."""
    kind: SceneKind
    """The kind of scene it produces (recorded as ``scene_kind``)."""
    build: SourceBuild
    """Builds the source for one scene registry from its options (``cfg[name]``, may be ``None``)."""


_SOURCES: dict[str, SourceInfo] = {}


def source(name: str, *, kind: SceneKind) -> Callable[[SourceBuild], SourceBuild]:
    """Register the decorated ``build(options)`` (a :class:`SceneFolder` or a :class:`TaskSource`) as task
    source ``name`` of ``kind``."""

    def register(build: SourceBuild) -> SourceBuild:
        _SOURCES[name] = SourceInfo(name, kind, build)
        return build

    return register


def unregister_source(name: str) -> None:
    """Remove a task source (tests that register their own)."""
    _SOURCES.pop(name, None)


def sources() -> dict[str, SourceInfo]:
    """Every registered task source."""
    importlib.import_module("dvoc_bench.scenes")  # registers the built-in sources
    return dict(_SOURCES)
